/* nonzero.c - lowering of mo.nonzero (ops.def) for the host and for SIMT
 * targets.
 *
 * One pass over the operand in row-major order, in one part (host) or in
 * the first thread of one block (SIMT): each nonzero element's coordinates
 * go into the next row of the result, then the count goes into the node's
 * last buffer, the int64_t that defines the count symbol (jit.h). The result
 * is planned for the bound (every element nonzero), so the rows always fit.
 * Floats compare unordered-not-equal with 0, so NaN counts and -0.0 does not.
 * Assumes a verified node (result [n, rank] si64). */
#include "lower.h"
#include "simt.h"

static int nonzero_body(jit_fn *f) {
  const ir_node *n = f->node;
  const ir_type *x = &n->in[0]->type;
  int rank = x->rank;
  if (f->nbufs != n->nin + n->nout + 1)
    return jit_fn_error(f, "mo.nonzero: the kernel has no buffer for its count");
  LLVMValueRef count = jit_alloca(f, f->t_i64, "count");
  LLVMBuildStore(f->b, jit_i64(f, 0), count);
  LLVMValueRef dims[IR_MAX_RANK], c[IR_MAX_RANK];
  jit_shape(f, x, dims);
  jit_loop L;
  LLVMValueRef e = jit_loop_begin(f, &L, jit_i64(f, 0), jit_numel_range(f, x, 0, rank), "e");
  LLVMValueRef v = jit_load(f, x->dtype, jit_in(f, 0), e), nz;
  if (x->dtype == IR_DT_F32 || x->dtype == IR_DT_F64)
    nz = LLVMBuildFCmp(f->b, LLVMRealUNE, v, jit_fconst(f, x->dtype, 0.0), "nz");
  else if (x->dtype == IR_DT_BOOL)
    nz = v;
  else
    nz = LLVMBuildICmp(f->b, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0), "nz");
  jit_simt_if take;
  jit_simt_if_begin(f, &take, nz);
  LLVMValueRef k = LLVMBuildLoad2(f->b, f->t_i64, count, "k");
  jit_simt_unravel(f, e, dims, rank, c);
  for (int a = 0; a < rank; a++)
    jit_store(f, IR_DT_SI64, jit_out(f, 0), jit_add(f, jit_mul(f, k, jit_i64(f, rank)),
                                                    jit_i64(f, a)), c[a]);
  LLVMBuildStore(f->b, jit_add(f, k, jit_i64(f, 1)), count);
  jit_simt_if_end(f, &take);
  jit_loop_end(f, &L);
  LLVMValueRef total = LLVMBuildLoad2(f->b, f->t_i64, count, "total");
  LLVMValueRef st = LLVMBuildStore(f->b, total, f->bufs[f->nbufs - 1]);
  LLVMSetAlignment(st, 8);
  return f->failed ? -1 : 0;
}

int jit_lower_nonzero(jit_fn *f) { return nonzero_body(f); }

int jit_simt_lower_nonzero(jit_simt_fn *sf) { return jit_simt_serial(sf, nonzero_body); }
