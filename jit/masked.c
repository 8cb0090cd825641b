/* masked.c - lowering of mo.masked_scatter and mo.shape_to_tensor (ops.def)
 * for the host and for SIMT targets.
 *
 * masked_scatter is one walk over the result in row-major order with a
 * running count k of the mask's true elements (a stack slot): a true
 * element takes updates[k] after checking k < numel(updates), else returns
 * JIT_KERR_MASKED (a SIMT thread sets the error word) before reading there;
 * a false one takes the input's element. The count makes it serial: the
 * host runs it whole in part 0 (no jit_split_range) and SIMT in the first
 * thread of one block (the serial launch, like scatter's).
 * shape_to_tensor stores the operand's dims (jit_dim: symbols from %syms)
 * and reads none of its data; on SIMT one thread per element.
 * Assumes a verified node whose run-time shape checks have passed. */
#include "jit.h"
#include "lower.h"
#include "simt.h"

static int masked_body(jit_fn *f) {
  const ir_node *n = f->node;
  const ir_type *x = &n->in[0]->type, *m = &n->in[1]->type, *u = &n->in[2]->type;
  ir_dtype dt = x->dtype;
  if (m->rank > x->rank || u->dtype != dt)
    return jit_fn_error(f, "mo.masked_scatter: malformed node");
  LLVMValueRef dims[IR_MAX_RANK], c[IR_MAX_RANK];
  jit_shape(f, x, dims);
  LLVMValueRef nu = jit_numel_range(f, u, 0, u->rank);
  LLVMValueRef kslot = jit_alloca(f, f->t_i64, "k");
  LLVMBuildStore(f->b, jit_i64(f, 0), kslot);
  jit_loop E;
  LLVMValueRef e =
      jit_loop_begin(f, &E, jit_i64(f, 0), jit_numel_range(f, x, 0, x->rank), "e");
  jit_simt_unravel(f, e, dims, x->rank, c);
  LLVMValueRef take =
      jit_load(f, IR_DT_BOOL, jit_in(f, 1), jit_simt_bcast_index(f, m, x, x->rank, c));
  jit_simt_if yes, no;
  jit_simt_if_begin(f, &yes, take);
  LLVMValueRef k = LLVMBuildLoad2(f->b, f->t_i64, kslot, "");
  jit_fail_if(f, LLVMBuildICmp(f->b, LLVMIntSGE, k, nu, ""), JIT_KERR_MASKED);
  jit_store(f, dt, jit_out(f, 0), e, jit_load(f, dt, jit_in(f, 2), k));
  LLVMBuildStore(f->b, LLVMBuildAdd(f->b, k, jit_i64(f, 1), ""), kslot);
  jit_simt_if_end(f, &yes);
  jit_simt_if_begin(f, &no, LLVMBuildNot(f->b, take, ""));
  jit_store(f, dt, jit_out(f, 0), e, jit_load(f, dt, jit_in(f, 0), e));
  jit_simt_if_end(f, &no);
  jit_loop_end_rolled(f, &E);
  return f->failed ? -1 : 0;
}

int jit_lower_masked_scatter(jit_fn *f) { return masked_body(f); }

int jit_simt_lower_masked_scatter(jit_simt_fn *sf) { return jit_simt_serial(sf, masked_body); }

/* Dim i of the operand, for an i64 i in [0, rank). */
static LLVMValueRef dim_at(jit_fn *f, LLVMValueRef i) {
  const ir_type *x = &f->node->in[0]->type;
  LLVMValueRef v = jit_i64(f, 0);
  for (int a = 0; a < x->rank; a++)
    v = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, i, jit_i64(f, a), ""),
                        jit_dim(f, x->dims[a]), v, "");
  return v;
}

int jit_lower_shape_to_tensor(jit_fn *f) {
  const ir_type *x = &f->node->in[0]->type;
  for (int a = 0; a < x->rank; a++)
    jit_store(f, IR_DT_SI64, jit_out(f, 0), jit_i64(f, a), jit_dim(f, x->dims[a]));
  return f->failed ? -1 : 0;
}

int jit_simt_lower_shape_to_tensor(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  jit_simt_loop l;
  LLVMValueRef i = jit_simt_grid_loop_begin(sf, &l, jit_i64(f, f->node->in[0]->type.rank));
  jit_store(f, IR_DT_SI64, jit_out(f, 0), i, dim_at(f, i));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
