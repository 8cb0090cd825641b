/* pad.c - lowering of mo.pad (constant, reflect and edge modes), for the
 * host and for SIMT targets.
 *
 * Result element o of an axis padded with `before` reads operand element
 * i = o - before when 0 <= i < n; outside, "constant" stores the value,
 * "edge" reads the nearest end, "reflect" folds i into [0, n) with period
 * 2 (n - 1) (numpy's reflect, repeated); an axis of n = 0 stores the value
 * in every mode (ops.def). The paddings are attributes, so only the axis
 * sizes are run-time values.
 * Host: the rows (every axis but the last) are split between the parts
 * (jit_split_range); a row's outer coordinates are unravelled once, its
 * last axis is one loop. SIMT: a grid-stride loop over the result elements.
 * The value is stored first and overwritten by a load where the source
 * exists, so no load is ever made outside the operand (also when it is
 * empty). Assumes a verified node (2 * rank paddings, the result's dims
 * the operand's plus the paddings). */
#include <string.h>

#include "lower.h"
#include "simt.h"

typedef struct padp {
  const int64_t *p; /* 2 * rank: before, after per axis */
  int mode;         /* 0 constant, 1 reflect, 2 edge */
  ir_dtype dt;
  int rank;
} padp;

static int pad_setup(jit_fn *f, padp *q) {
  const ir_node *n = f->node;
  const ir_attr *pa = ir_node_attr(n, "paddings");
  const ir_attr *ma = ir_node_attr_or_default(n, "mode");
  q->rank = n->in[0]->type.rank;
  if (!pa || pa->kind != IR_ATTR_INTS || pa->u.ints.n != 2 * q->rank || !ma ||
      ma->kind != IR_ATTR_STRING)
    return jit_fn_error(f, "mo.pad: paddings must have 2 entries per axis");
  const char *m = ma->u.s ? ma->u.s : "constant";
  q->mode = strcmp(m, "reflect") == 0 ? 1 : strcmp(m, "edge") == 0 ? 2 : 0;
  q->p = pa->u.ints.v;
  q->dt = n->in[0]->type.dtype;
  return 0;
}

/* The padding value in dt's register type. */
static LLVMValueRef pad_value(jit_fn *f, ir_dtype dt) {
  double v = ir_node_attr_float(f->node, "value", 0.0);
  if (ir_dtype_is_float(dt)) return jit_fconst(f, dt, v);
  if (dt == IR_DT_BOOL) return LLVMConstInt(f->t_i1, v != 0.0, 0);
  return LLVMConstInt(jit_type(f, dt), (unsigned long long)ir_pad_int_value(dt, v), 1);
}

/* Where result coordinate o of an axis of n operand elements reads; *ok is
 * false where it reads nothing (the value). The index is in [0, n) when ok. */
static LLVMValueRef pad_src(jit_fn *f, int mode, LLVMValueRef o, int64_t before, LLVMValueRef n,
                            LLVMValueRef *ok) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef zero = jit_i64(f, 0), one = jit_i64(f, 1);
  LLVMValueRef i = LLVMBuildSub(b, o, jit_i64(f, before), "");
  LLVMValueRef in = LLVMBuildICmp(b, LLVMIntULT, i, n, ""); /* 0 <= i < n */
  if (mode == 0) {
    *ok = in;
    return i;
  }
  *ok = LLVMBuildICmp(b, LLVMIntSGT, n, zero, "");
  LLVMValueRef last = LLVMBuildSub(b, n, one, "");
  if (mode == 2) {
    LLVMValueRef lo = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, i, zero, ""), zero, i, "");
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, lo, last, ""), last, lo, "");
  }
  /* reflect: m = i mod p (p = 2 (n - 1), at least 1), then m or p - m */
  LLVMValueRef p = LLVMBuildShl(b, last, one, "");
  p = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, p, one, ""), one, p, "");
  LLVMValueRef m = LLVMBuildSRem(b, i, p, "");
  m = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, m, zero, ""), LLVMBuildAdd(b, m, p, ""), m, "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, m, n, ""), m,
                                   LLVMBuildSub(b, p, m, ""), "");
  return LLVMBuildSelect(b, in, i, r, "");
}

/* Store result element oidx at coordinates coord (axes from..rank-1 read
 * from coord; axes before from contribute src0 and ok0). */
static void pad_store(jit_fn *f, const padp *q, const LLVMValueRef *coord, const LLVMValueRef *xd,
                      int from, LLVMValueRef src0, LLVMValueRef ok0, LLVMValueRef oidx,
                      LLVMValueRef value) {
  LLVMValueRef src = src0, ok = ok0;
  for (int a = from; a < q->rank; a++) {
    LLVMValueRef oka, i = pad_src(f, q->mode, coord[a], q->p[2 * a], xd[a], &oka);
    src = jit_add(f, LLVMBuildMul(f->b, src, xd[a], ""), i);
    ok = LLVMBuildAnd(f->b, ok, oka, "");
  }
  jit_store(f, q->dt, jit_out(f, 0), oidx, value);
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, ok);
  jit_store(f, q->dt, jit_out(f, 0), oidx, jit_load(f, q->dt, jit_in(f, 0), src));
  jit_simt_if_end(f, &ib);
}

int jit_lower_pad(jit_fn *f) {
  padp q;
  if (pad_setup(f, &q) != 0) return -1;
  const ir_type *xt = &f->node->in[0]->type, *yt = &f->node->out[0]->type;
  LLVMValueRef xd[IR_MAX_RANK], yd[IR_MAX_RANK], coord[IR_MAX_RANK];
  jit_shape(f, xt, xd);
  jit_shape(f, yt, yd);
  LLVMValueRef value = pad_value(f, q.dt);
  if (q.rank == 0) {
    jit_store(f, q.dt, jit_out(f, 0), jit_i64(f, 0), jit_load(f, q.dt, jit_in(f, 0), jit_i64(f, 0)));
    return f->failed ? -1 : 0;
  }
  LLVMValueRef rows = jit_numel_range(f, yt, 0, q.rank - 1), lo, hi;
  jit_split_range(f, rows, &lo, &hi);
  jit_loop R, C;
  LLVMValueRef row = jit_loop_begin(f, &R, lo, hi, "row");
  jit_simt_unravel(f, row, yd, q.rank - 1, coord);
  LLVMValueRef src = jit_i64(f, 0), ok = LLVMConstInt(f->t_i1, 1, 0);
  for (int a = 0; a < q.rank - 1; a++) {
    LLVMValueRef oka, i = pad_src(f, q.mode, coord[a], q.p[2 * a], xd[a], &oka);
    src = jit_add(f, LLVMBuildMul(f->b, src, xd[a], ""), i);
    ok = LLVMBuildAnd(f->b, ok, oka, "");
  }
  LLVMValueRef base = jit_mul(f, row, yd[q.rank - 1]);
  coord[q.rank - 1] = jit_loop_begin(f, &C, jit_i64(f, 0), yd[q.rank - 1], "c");
  pad_store(f, &q, coord, xd, q.rank - 1, src, ok, jit_add(f, base, coord[q.rank - 1]), value);
  jit_loop_end(f, &C);
  jit_loop_end(f, &R);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_pad(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  padp q;
  if (pad_setup(f, &q) != 0) return -1;
  const ir_type *xt = &f->node->in[0]->type, *yt = &f->node->out[0]->type;
  LLVMValueRef xd[IR_MAX_RANK], yd[IR_MAX_RANK], coord[IR_MAX_RANK];
  jit_shape(f, xt, xd);
  jit_shape(f, yt, yd);
  LLVMValueRef value = pad_value(f, q.dt);
  jit_simt_loop l;
  LLVMValueRef e = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, yt, 0, q.rank));
  jit_simt_unravel(f, e, yd, q.rank, coord);
  pad_store(f, &q, coord, xd, 0, jit_i64(f, 0), LLVMConstInt(f->t_i1, 1, 0), e, value);
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
