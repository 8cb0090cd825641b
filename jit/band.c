/* band.c - lowering of mo.band_part (keep a diagonal band of the last two
 * axes, zero the rest, or the reverse with `exclude`), for the host and for
 * SIMT targets.
 *
 * Element [..., m, n] of the [..., M, N] operand is kept when
 * (num_lower < 0 || m - n <= num_lower) && (num_upper < 0 || n - m <=
 * num_upper), the test negated with exclude; a dropped element is the
 * dtype's zero (+0, 0, false). The bounds are attributes, so the test is
 * two compares of the coordinates against constants.
 * Host: the rows (every axis but the last) are split between the parts
 * (jit_split_range), each row one loop over n, which LLVM vectorizes.
 * SIMT: a grid-stride loop over the elements.
 * Assumes a verified node (rank >= 2, the result of the operand's type). */
#include "lower.h"
#include "simt.h"

typedef struct band {
  int64_t lo, up;
  bool excl;
  ir_dtype dt;
} band;

static int band_setup(jit_fn *f, band *b) {
  const ir_node *n = f->node;
  if (n->nin != 1 || n->nout != 1 || n->in[0]->type.rank < 2)
    return jit_fn_error(f, "mo.band_part: expected one operand of rank >= 2 and one result");
  b->lo = ir_node_attr_int(n, "num_lower", -1);
  b->up = ir_node_attr_int(n, "num_upper", -1);
  b->excl = ir_node_attr_bool(n, "exclude", false);
  b->dt = n->in[0]->type.dtype;
  return 0;
}

/* Copy or zero element e at coordinates (m, c). */
static void band_elem(jit_fn *f, const band *b, LLVMValueRef m, LLVMValueRef c, LLVMValueRef e) {
  LLVMValueRef in = LLVMConstInt(f->t_i1, 1, 0);
  if (b->lo >= 0)
    in = LLVMBuildAnd(f->b, in, LLVMBuildICmp(f->b, LLVMIntSLE, LLVMBuildSub(f->b, m, c, ""),
                                              jit_i64(f, b->lo), ""), "");
  if (b->up >= 0)
    in = LLVMBuildAnd(f->b, in, LLVMBuildICmp(f->b, LLVMIntSLE, LLVMBuildSub(f->b, c, m, ""),
                                              jit_i64(f, b->up), ""), "");
  if (b->excl) in = LLVMBuildNot(f->b, in, "");
  LLVMValueRef v = jit_load(f, b->dt, jit_in(f, 0), e);
  jit_store(f, b->dt, jit_out(f, 0), e,
            LLVMBuildSelect(f->b, in, v, LLVMConstNull(LLVMTypeOf(v)), ""));
}

int jit_lower_band_part(jit_fn *f) {
  band b;
  if (band_setup(f, &b) != 0) return -1;
  const ir_type *t = &f->node->in[0]->type;
  LLVMValueRef M = jit_dim(f, t->dims[t->rank - 2]), N = jit_dim(f, t->dims[t->rank - 1]);
  LLVMValueRef rows = jit_numel_range(f, t, 0, t->rank - 1), lo, hi;
  jit_split_range(f, rows, &lo, &hi);
  jit_loop R, C;
  LLVMValueRef row = jit_loop_begin(f, &R, lo, hi, "row");
  LLVMValueRef m = LLVMBuildURem(f->b, row, M, "m"); /* M > 0 inside the loop */
  LLVMValueRef base = jit_mul(f, row, N);
  LLVMValueRef c = jit_loop_begin(f, &C, jit_i64(f, 0), N, "n");
  band_elem(f, &b, m, c, jit_add(f, base, c));
  jit_loop_end(f, &C);
  jit_loop_end(f, &R);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_band_part(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  band b;
  if (band_setup(f, &b) != 0) return -1;
  const ir_type *t = &f->node->in[0]->type;
  LLVMValueRef M = jit_dim(f, t->dims[t->rank - 2]), N = jit_dim(f, t->dims[t->rank - 1]);
  jit_simt_loop l;
  LLVMValueRef e = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, t, 0, t->rank));
  /* M, N > 0 inside the loop (there is an element) */
  LLVMValueRef c = LLVMBuildURem(f->b, e, N, "");
  LLVMValueRef m = LLVMBuildURem(f->b, LLVMBuildUDiv(f->b, e, N, ""), M, "");
  band_elem(f, &b, m, c, e);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
