/* half_gemm.c - half GEMM operands read as they are (ir_graph_half_gemm, ir.h).
 *
 * After ir_graph_widen_narrow a matmul on f16 / bf16 operands reads them
 * through mo.cast nodes to f32, which convert both matrices on every
 * execute (a weight too) before the f32 GEMM reads them again. The exactly
 * widened values are what the half GEMM template reads itself
 * (kernels-templates/gemm_half.c: vdpbf16ps where the host has it), so
 * here a mo.matmul with an f32 result whose two operands are both mo.cast
 * from the same half dtype to f32 reads the casts' operands directly and
 * carries kiln.wide_result = 1 (infer.c: half operands, an f32 result; the
 * interpreter widens them exactly, ir_node_computes_narrow). The sums are
 * the same exact products in f32, so the meaning is unchanged. A cast left
 * without uses (and no graph output, no run-time check names it) leaves g;
 * a half B that is a constant or weight can then be prepacked once
 * (src/prepack.c). The cast of the result back to the half dtype stays.
 *
 * Only the host pipeline runs it (src/pipeline.c), and only for the half
 * dtypes whose native kernel the host has (jit_engine_half_gemm): elsewhere
 * the casts and the f32 GEMM (AVX2 or wider) outrun the template's generic
 * loops. SIMT lowerings read matmul operands of the result's dtype.
 * Assumes a verified graph without mo.fused nodes (before fusion) and
 * before ir_graph_fold_transpose_b (so a transpose under a cast folds
 * afterwards); keeps it verified. */
#include <stdlib.h>

#include "ir.h"

/* n is a mo.cast of a value of half dtype h (one `which` takes) to f32; *h
 * set from the first */
static bool cast_from_half(const ir_node *n, unsigned which, ir_dtype *h) {
  if (!n || n->op != IR_OP_CAST || n->nin != 1 || n->nout != 1) return false;
  ir_dtype from = n->in[0]->type.dtype;
  if (!ir_dtype_is_half(from) || n->out[0]->type.dtype != IR_DT_F32) return false;
  if (!(which & (from == IR_DT_BF16 ? IR_HALF_GEMM_BF16 : IR_HALF_GEMM_F16))) return false;
  if (*h != IR_DT_F32 && *h != from) return false; /* both operands alike */
  *h = from;
  return true;
}

static bool checked(const ir_graph *g, const ir_node *n) {
  for (int i = 0; i < g->nchecks; i++)
    if (g->checks[i].node == n) return true;
  return false;
}

int ir_graph_half_gemm(ir_graph *g, unsigned which, ir_diag *d) {
  if (!g) return ir_diag_set(d, (ir_loc){0, 0}, "ir_graph_half_gemm: no graph");
  bool *drop = calloc((size_t)g->nnodes + 1, sizeof *drop); /* by node id */
  if (!drop) return ir_diag_set(d, (ir_loc){0, 0}, "out of memory reading half GEMM operands");
  int rewritten = 0;
  for (int i = 0; i < g->nnodes; i++) {
    ir_node *mm = g->nodes[i];
    if (mm->op != IR_OP_MATMUL || mm->nin != 2 || mm->nout != 1 ||
        mm->out[0]->type.dtype != IR_DT_F32 || ir_node_attr_int(mm, "kiln.wide_result", 0) ||
        ir_node_attr_int(mm, "kiln.transpose_b", 0))
      continue;
    ir_dtype h = IR_DT_F32;
    ir_node *ca = mm->in[0]->def, *cb = mm->in[1]->def;
    if (!cast_from_half(ca, which, &h) || !cast_from_half(cb, which, &h)) continue;
    if (ir_node_set_attr_int(g, mm, "kiln.wide_result", 1) < 0) {
      rewritten = ir_diag_set(d, mm->loc, "out of memory reading half GEMM operands");
      break; /* the matmuls rewritten so far are whole */
    }
    mm->in[0] = ca->in[0];
    mm->in[1] = cb->in[0];
    for (int k = 0; k < 2; k++) {
      ir_node *c = k ? cb : ca;
      if (ir_value_uses(g, c->out[0]) == 0 && !checked(g, c)) drop[c->id] = true;
    }
    rewritten++;
  }
  ir_graph_drop_nodes(g, drop);
  free(drop);
  return rewritten;
}
