/* simt_buffer.c - mo.mutable.store.slice as a SIMT kernel (simt.h:
 * jit_simt_compile_store_slice), for device models: the other buffer ops
 * are plain device copies the runtime makes (src/device_model.c).
 *
 * The kernel is lowered from the model's own graph, not from a kernel text
 * (a buffer op's text would have a chain operand and a chain result, which a
 * graph may not have), so its symbol parameters are the graph's symbols, in
 * order. Its buffers are the node's: the buffer, the stored tensor, the
 * start indices, the chain operand, the chain result (the last two unused).
 * Every thread first checks start against the buffer (JIT_KERR_SLICE: the
 * CPU runtime's check, src/buffers.c), then the grid walks the stored
 * tensor's elements, each written at start + its coordinates. */
#include <stdio.h>
#include <string.h>

#include "jit.h"
#include "simt.h"

static int lower_store_slice(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  const ir_type *bt = &n->in[0]->type, *st = &n->in[1]->type;
  ir_dtype sdt = n->in[2]->type.dtype, dt = bt->dtype;
  int rank = bt->rank;
  LLVMValueRef bdim[IR_MAX_RANK], sdim[IR_MAX_RANK], start[IR_MAX_RANK];
  jit_shape(f, bt, bdim);
  jit_shape(f, st, sdim);
  for (int a = 0; a < rank; a++) { /* start[a] in [0, bdim - sdim], as the CPU checks it */
    LLVMValueRef s = jit_load(f, sdt, jit_in(f, 2), jit_i64(f, a));
    if (sdt != IR_DT_SI64) s = LLVMBuildSExt(f->b, s, f->t_i64, "");
    start[a] = s;
    LLVMValueRef room = LLVMBuildSub(f->b, bdim[a], sdim[a], "");
    LLVMValueRef bad = LLVMBuildOr(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, s, jit_i64(f, 0), ""),
                                   LLVMBuildICmp(f->b, LLVMIntSGT, s, room, ""), "");
    jit_fail_if(f, bad, JIT_KERR_SLICE);
  }
  jit_simt_loop l;
  LLVMValueRef e = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, st, 0, rank));
  LLVMValueRef co[IR_MAX_RANK];
  jit_simt_unravel(f, e, sdim, rank, co);
  LLVMValueRef off = jit_i64(f, 0);
  for (int a = 0; a < rank; a++)
    off = jit_add(f, jit_mul(f, off, bdim[a]), jit_add(f, start[a], co[a]));
  jit_store(f, dt, jit_in(f, 0), off, jit_load(f, dt, jit_in(f, 1), e));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

int jit_simt_store_slice_into(LLVMContextRef ctx, LLVMModuleRef mod, const ir_graph *g,
                              int node, const jit_simt_target *t, const char *fn_name, char *err,
                              size_t errlen) {
  const ir_node *n = node >= 0 && node < g->nnodes ? g->nodes[node] : NULL;
  if (!n || n->op != IR_OP_MUTABLE_STORE_SLICE) {
    snprintf(err, errlen, "node %d of graph @%s is not a mo.mutable.store.slice", node,
             g->name ? g->name : "?");
    return -1;
  }
  char msg[1024] = "";
  jit_simt_fn sf;
  jit_simt_begin(&sf, t, ctx, mod, g, n, fn_name, JIT_SIMT_BLOCK, msg, sizeof msg);
  if (!sf.f.failed && lower_store_slice(&sf) == 0) jit_simt_finish(&sf);
  int rc = 0;
  if (sf.f.failed) {
    snprintf(err, errlen, "mo.mutable.store.slice at line %d: %s", n->loc.line, msg);
    rc = -1;
  }
  jit_simt_dispose(&sf);
  return rc;
}

int jit_simt_compile_store_slice(const ir_graph *g, const jit_simt_target *t, int node,
                                 const char *fn_name, void **out, size_t *len, char *err,
                                 size_t errlen) {
  *out = NULL;
  *len = 0;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, t, "store_slice", err, errlen);
  int rc = mod ? jit_simt_store_slice_into(ctx, mod, g, node, t, fn_name, err, errlen) : -1;
  if (rc == 0) rc = jit_simt_emit(mod, t, out, len, err, errlen);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return rc;
}
