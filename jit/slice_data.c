/* slice_data.c - lowering of mo.slice_tensor with (start, stop, step[,
 * axes]) operands (ops.def) for the host and for SIMT targets.
 *
 * The result's dims (the lengths) were read from the same data before the
 * graph ran (ir/shape.c), so the kernel needs only each axis's first index
 * and step: it reads the k entries once, picks the one whose axis is a
 * (numpy's start rules, as ir_ref_slice_axis: clamped into the axis, from
 * the end when negative, INT64_MIN the beginning for either sign of step),
 * then copies the result. On the host it goes row by row: a row's
 * position is unravelled once (divisions by run-time dims are the costly
 * part: per element they made a decoder's KV-cache slice ~7 ns an element)
 * and the last axis is a strided loop LLVM vectorizes (versioned for step
 * 1); SIMT targets copy one element per thread (jit_simt_each_element). A
 * step of 0 never reaches the kernel (the read refuses it). Assumes a
 * verified node. */
#include "lower.h"
#include "simt.h"

typedef struct slice_data {
  int rank;
  ir_dtype dt;
  LLVMValueRef odims[IR_MAX_RANK], first[IR_MAX_RANK], step[IR_MAX_RANK], xs[IR_MAX_RANK];
} slice_data;

static LLVMValueRef entry(jit_fn *f, const ir_node *n, const LLVMValueRef *bufs, int buf,
                          int64_t j) {
  ir_dtype dt = n->in[buf]->type.dtype;
  return LLVMBuildSExt(f->b, jit_load(f, dt, bufs[buf], jit_i64(f, j)), f->t_i64, "");
}

static LLVMValueRef sel(jit_fn *f, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(f->b, c, a, b, "");
}

static LLVMValueRef icmp(jit_fn *f, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(f->b, p, a, b, "");
}

/* Axis a's first index from its start (ir_ref_slice_axis). */
static LLVMValueRef first_index(jit_fn *f, LLVMValueRef d, LLVMValueRef start,
                                LLVMValueRef step) {
  LLVMValueRef zero = jit_i64(f, 0), m1 = jit_i64(f, -1);
  LLVMValueRef dm1 = LLVMBuildSub(f->b, d, jit_i64(f, 1), "");
  LLVMValueRef is_min = icmp(f, LLVMIntEQ, start, jit_i64(f, INT64_MIN));
  LLVMValueRef neg = icmp(f, LLVMIntSLT, start, zero);
  LLVMValueRef wrapped = LLVMBuildAdd(f->b, start, d, "");
  LLVMValueRef under = icmp(f, LLVMIntSLT, wrapped, zero);
  /* step > 0: [0, d]; step < 0: [-1, d - 1] */
  LLVMValueRef up = sel(f, is_min, zero,
                        sel(f, neg, sel(f, under, zero, wrapped),
                            sel(f, icmp(f, LLVMIntSGT, start, d), d, start)));
  LLVMValueRef down = sel(f, is_min, dm1,
                          sel(f, neg, sel(f, under, m1, wrapped),
                              sel(f, icmp(f, LLVMIntSGE, start, d), dm1, start)));
  return sel(f, icmp(f, LLVMIntSGT, step, zero), up, down);
}

static void copy_elem(jit_fn *f, void *ud, LLVMValueRef e) {
  slice_data *s = ud;
  LLVMValueRef c[IR_MAX_RANK], off = jit_i64(f, 0);
  jit_simt_unravel(f, e, s->odims, s->rank, c);
  for (int a = 0; a < s->rank; a++) {
    LLVMValueRef at =
        LLVMBuildAdd(f->b, s->first[a], LLVMBuildMul(f->b, c[a], s->step[a], ""), "");
    off = LLVMBuildAdd(f->b, off, LLVMBuildMul(f->b, at, s->xs[a], ""), "");
  }
  jit_store(f, s->dt, jit_out(f, 0), e, jit_load(f, s->dt, jit_in(f, 0), off));
}

/* Each axis's first index and step, x's strides and the result's dims;
 * bufs[j] holds operand j. */
static int setup(jit_fn *f, const ir_node *n, const LLVMValueRef *bufs, slice_data *s) {
  const ir_type *xt = &n->in[0]->type, *ot = &n->out[0]->type;
  int64_t k;
  if (n->nin < 4 || !ir_dim_is_const(n->in[1]->type.dims[0], &k) || k > xt->rank)
    return jit_fn_error(f, "mo.slice_tensor: malformed node");
  s->rank = xt->rank;
  s->dt = xt->dtype;
  jit_shape(f, ot, s->odims);
  LLVMValueRef stride = jit_i64(f, 1);
  for (int a = xt->rank - 1; a >= 0; a--) {
    s->xs[a] = stride;
    stride = jit_mul(f, stride, jit_dim(f, xt->dims[a]));
  }
  for (int a = 0; a < xt->rank; a++) {
    LLVMValueRef start = jit_i64(f, INT64_MIN), step = jit_i64(f, 1);
    for (int64_t j = 0; j < k; j++) {
      LLVMValueRef ax = n->nin > 4 ? entry(f, n, bufs, 4, j) : jit_i64(f, j);
      ax = sel(f, icmp(f, LLVMIntSLT, ax, jit_i64(f, 0)),
               LLVMBuildAdd(f->b, ax, jit_i64(f, xt->rank), ""), ax);
      LLVMValueRef hit = icmp(f, LLVMIntEQ, ax, jit_i64(f, a));
      start = sel(f, hit, entry(f, n, bufs, 1, j), start);
      step = sel(f, hit, entry(f, n, bufs, 3, j), step);
    }
    s->first[a] = first_index(f, jit_dim(f, xt->dims[a]), start, step);
    s->step[a] = step;
  }
  return f->failed ? -1 : 0;
}

/* The host loop: this call's share of the result's rows (every axis but the
 * last), each row's source offset from its unravelled position, then the
 * last axis. */
static int copy_rows(jit_fn *f, const slice_data *s) {
  int last = s->rank - 1;
  LLVMValueRef rows = jit_i64(f, 1), lo, hi, c[IR_MAX_RANK];
  for (int a = 0; a < last; a++) rows = jit_mul(f, rows, s->odims[a]);
  jit_split_range(f, rows, &lo, &hi);
  jit_loop R;
  LLVMValueRef r = jit_loop_begin(f, &R, lo, hi, "row");
  jit_simt_unravel(f, r, s->odims, last, c);
  LLVMValueRef src = jit_mul(f, s->first[last], s->xs[last]);
  for (int a = 0; a < last; a++) {
    LLVMValueRef at =
        LLVMBuildAdd(f->b, s->first[a], LLVMBuildMul(f->b, c[a], s->step[a], ""), "");
    src = LLVMBuildAdd(f->b, src, LLVMBuildMul(f->b, at, s->xs[a], ""), "");
  }
  LLVMValueRef dst = jit_mul(f, r, s->odims[last]);
  LLVMValueRef stride = LLVMBuildMul(f->b, s->step[last], s->xs[last], "");
  jit_loop E;
  LLVMValueRef j = jit_loop_begin(f, &E, jit_i64(f, 0), s->odims[last], "j");
  LLVMValueRef from = LLVMBuildAdd(f->b, src, LLVMBuildMul(f->b, j, stride, ""), "");
  jit_store(f, s->dt, jit_out(f, 0), jit_add(f, dst, j),
            jit_load(f, s->dt, jit_in(f, 0), from));
  jit_loop_end(f, &E);
  jit_loop_end(f, &R);
  return f->failed ? -1 : 0;
}

/* The kernel's own operand buffers, as setup reads them. */
static void own_bufs(jit_fn *f, LLVMValueRef *bufs) {
  for (int j = 0; j < f->node->nin && j < 5; j++) bufs[j] = jit_in(f, j);
}

int jit_slice_data_layout(jit_fn *f, const ir_node *n, const LLVMValueRef *bufs,
                          LLVMValueRef *base, LLVMValueRef *strides) {
  slice_data s;
  if (setup(f, n, bufs, &s) < 0) return -1;
  *base = jit_i64(f, 0);
  for (int a = 0; a < s.rank; a++) {
    *base = LLVMBuildAdd(f->b, *base, LLVMBuildMul(f->b, s.first[a], s.xs[a], ""), "");
    strides[a] = LLVMBuildMul(f->b, s.step[a], s.xs[a], "");
  }
  return 0;
}

int jit_lower_slice_data(jit_fn *f) {
  slice_data s;
  LLVMValueRef bufs[5];
  own_bufs(f, bufs);
  if (setup(f, f->node, bufs, &s) < 0) return -1;
  if (s.rank == 0) return jit_each_element(f, copy_elem, &s);
  return copy_rows(f, &s);
}

int jit_simt_lower_slice_data(jit_simt_fn *sf) {
  slice_data s;
  LLVMValueRef bufs[5];
  own_bufs(&sf->f, bufs);
  if (setup(&sf->f, sf->f.node, bufs, &s) < 0) return -1;
  return jit_simt_each_element(sf, copy_elem, &s);
}
