/* placement.c - checks that a graph's placement (the devices of its value
 * types) is one the runtime asked to run it can honour (placement.h).
 *
 * The rules: values typed cpu:N are host memory, values typed gpu:N device
 * memory, and mo.transfer_to moves a tensor between the two (the verifier
 * already requires an op's operands to share a device). The CPU model runs
 * host values only. A device model runs one device: its GPU values must
 * name one gpu:N, and in a placed graph nothing but constants, weights and
 * transfers makes a host value (no op is run on the CPU behind the user's
 * back, and none silently moves to the GPU either).
 * Guarantees: reads the graph only; every refusal names the value or op,
 * with its line when the graph came from text. */
#include <stdio.h>

#include "placement.h"

static const char *dev_kind(const ir_device *d) { return d->kind == IR_DEV_GPU ? "gpu" : "cpu"; }

static void where(const ir_value *v, char *buf, size_t cap) {
  if (v->def && v->def->loc.line > 0)
    snprintf(buf, cap, " (line %d, mo.%s)", v->def->loc.line, ir_op_get(v->def->op)->name);
  else if (v->def)
    snprintf(buf, cap, " (mo.%s)", ir_op_get(v->def->op)->name);
  else
    snprintf(buf, cap, " (a graph input)");
}

int rt_place_check_host(const ir_graph *g, kiln_status *st) {
  for (int i = 0; i < g->nvalues; i++) {
    const ir_value *v = g->values[i];
    if (v->type.device.kind != IR_DEV_GPU) continue;
    char at[96];
    where(v, at, sizeof at);
    return rt_err(st, KILN_ERR_UNSUPPORTED,
                  "%%%s%s is on gpu:%d: a CPU model (kiln_model_compile) runs graphs whose values "
                  "are on the host; run it on a device with kiln_model_compile_on (kiln run "
                  "--device cuda:0|hip:0|simt-emu)",
                  v->name, at, v->type.device.id);
  }
  return 0;
}

static bool is_place_free(const ir_node *n) {
  return n->op == IR_OP_CONSTANT || n->op == IR_OP_CONSTANT_EXTERNAL ||
         n->op == IR_OP_TRANSFER_TO;
}

int rt_place_check_device(const ir_graph *g, const char *label, bool *placed, kiln_status *st) {
  const ir_value *gpu = NULL; /* the first value on a GPU */
  for (int i = 0; i < g->nvalues; i++) {
    const ir_value *v = g->values[i];
    if (v->type.device.kind != IR_DEV_GPU) continue;
    if (!gpu) {
      gpu = v;
      continue;
    }
    if (v->type.device.id == gpu->type.device.id) continue;
    char a1[96], a2[96];
    where(gpu, a1, sizeof a1);
    where(v, a2, sizeof a2);
    return rt_err(st, KILN_ERR_UNSUPPORTED,
                  "%%%s%s is on gpu:%d but %%%s%s is on gpu:%d: a device model runs on one "
                  "device (%s)",
                  gpu->name, a1, gpu->type.device.id, v->name, a2, v->type.device.id, label);
  }
  *placed = gpu != NULL;
  if (!gpu) return 0;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (is_place_free(n)) continue;
    for (int k = 0; k < n->nout; k++) {
      const ir_value *v = n->out[k];
      if (v->type.device.kind == IR_DEV_GPU) continue;
      char at[96];
      where(v, at, sizeof at);
      return rt_err(st, KILN_ERR_UNSUPPORTED,
                    "%%%s%s is computed on %s:%d in a graph placed on gpu:%d (%s): a device "
                    "model runs every op on its device; move its operands there with "
                    "mo.transfer_to",
                    v->name, at, dev_kind(&v->type.device), v->type.device.id,
                    gpu->type.device.id, label);
    }
  }
  return 0;
}
