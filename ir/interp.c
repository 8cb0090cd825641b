/* interp.c - the reference interpreter (interp.h): solves symbolic dims from
 * the input shapes, checks the graph's run-time shape facts, then runs the
 * nodes one at a time with plain row-major loops.
 *
 * Assumes: a graph that passed ir_graph_verify (every value typed, operands
 * of the dtypes each op allows); a little-endian host (dense attributes and
 * tensors are little-endian).
 * Guarantees: no crash and no out-of-bounds access whatever the graph and
 * inputs: besides trusting the verifier, every op re-checks the run-time
 * shapes it indexes with and reports a mismatch as an error, and so do
 * data-dependent faults (gather index, integer mod by zero). An op it cannot
 * run (a custom kernel, an op without a scalar meaning in interp_scalar.c)
 * is an error naming the op, never a made-up value; every op class has a
 * routine in run_class, whose size the compiler checks. On failure
 * everything it allocated is freed and the outputs are zeroed.
 *
 * Semantics the JIT must match (beyond seed 002 and ops.def):
 *  - integer add/sub/mul/negate/abs/sum wrap (two's complement); mod is
 *    Python's floor mod (result has the divisor's sign); x mod 0 is an error
 *    for integers, NaN for floats; INT_MIN mod -1 is 0. Integer floor_div
 *    rounds toward -inf, x floor_div 0 is an error, INT_MIN floor_div -1
 *    wraps; integer div is (double)x / (double)y into f64; integer pow
 *    wraps, 0 to a negative power is an error.
 *  - float max/min (elementwise and reductions) propagate NaN and order
 *    -0 < +0 (LLVM's llvm.maximum / llvm.minimum); relu(x) = max(x, +0), so
 *    relu(NaN) = NaN and relu(-0) = +0.
 *  - argmax / argmin: first index of the extreme; a NaN counts as the
 *    extreme for both (the first NaN wins); an empty axis gives 0.
 *    Reducing max / min over an empty axis gives -inf / +inf (INT_MIN /
 *    INT_MAX of the dtype for integers); mean of an empty float axis is NaN;
 *    prod of an empty axis is 1 (floats multiply in double, ints wrap).
 *  - integer mean: the wrapped sum divided by the count, truncated toward 0;
 *    an empty axis is an error.
 *  - f32 sums, matmuls, softmax and layer_norm are computed in double and
 *    rounded once; f32 elementwise math is computed in float with libm.
 *  - narrow dtypes (ir_node_computes_narrow): f16 / bf16 in a float op mean
 *    the op's f32 meaning on the operands widened exactly, each result
 *    rounded once to nearest even (ties to even) into its half dtype; si8,
 *    si16, ui8, ui16 mean the si32 op on the exact values (ui32: si64), each
 *    result wrapped back to its low bits (so sums and products wrap as in
 *    the narrow type; a narrow mean is the exact mean truncated).
 *  - cast float -> int: truncate toward zero, saturate to the target range,
 *    NaN -> 0 (LLVM's fptosi.sat / fptoui.sat); int -> int: truncate or
 *    extend the two's-complement bits; -> bool: x != 0 (NaN is true);
 *    -> f16 / bf16: one rounding, to nearest with ties to even, from the
 *    exact source value (overflow -> inf; NaN keeps its sign and top payload
 *    bits and is made quiet).
 *  - a dense constant with one element fills a result of any size (splat). */
#include "control.h"
#include "interp_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- sizes ---- */

int64_t ir_tensor_numel(const ir_tensor *t) {
  if (!t || t->rank < 0 || t->rank > IR_MAX_RANK) return -1;
  bool zero = false;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0) return -1;
    if (t->shape[i] == 0) zero = true;
  }
  if (zero) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(n, t->shape[i], &n)) return -1;
  return n;
}

/* Product of shape[from..to). Only used on validated shapes (no overflow). */
static int64_t span(const ir_tensor *t, int from, int to) {
  int64_t n = 1;
  for (int i = from; i < to; i++) n *= t->shape[i];
  return n;
}

static const char *shape_text(const int64_t *shape, int rank, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  len += (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)shape[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

/* ---- the run ---- */

typedef struct run {
  const ir_graph *g;
  int64_t *syms; /* mo.nonzero sets its count (ir_data_sym_bind) */
  ir_tensor *vals; /* by value id */
  bool *owned;     /* vals[i].data was malloc'd by the run */
  bool *ready;     /* vals[i] holds its data */
  ir_weight_fn weights;
  void *ud;
  char *msg;
  size_t msglen;
} run;

static int op_fail(run *r, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int op_fail(run *r, const ir_node *n, const char *fmt, ...) {
  char detail[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  const ir_op_info *info = ir_op_get(n->op);
  ir_ref_fail(r->msg, r->msglen, "mo.%s (%%%s): %s", info ? info->name : "?",
              n->nout > 0 ? n->out[0]->name : "?", detail);
  return ir_node_origin_msg(n, r->msg, r->msglen);
}

/* The per-value arrays of a run over nv values (r->vals, owned, ready);
 * false on out-of-memory (run_release frees what was made). */
static bool run_alloc(run *r, size_t nv) {
  r->vals = calloc(nv, sizeof *r->vals);
  r->owned = calloc(nv, sizeof *r->owned);
  r->ready = calloc(nv, sizeof *r->ready);
  return r->vals && r->owned && r->ready;
}

static void run_release(run *r, size_t nv) {
  if (r->vals && r->owned)
    for (size_t i = 0; i < nv; i++)
      if (r->owned[i]) free(r->vals[i].data);
  free(r->vals);
  free(r->owned);
  free(r->ready);
}

/* Value v's tensor into *out, its data handed over when the run owns it,
 * else copied (an input, a weight, a value given once already); 0, or -1
 * on out-of-memory (*out's data NULL). */
static int run_hand_over(run *r, const ir_value *v, ir_tensor *out) {
  const ir_tensor *t = &r->vals[v->id];
  *out = *t;
  if (r->owned[v->id]) {
    r->owned[v->id] = false;
    return 0;
  }
  size_t bytes = (size_t)ir_tensor_numel(t) * ir_dtype_size(t->dtype);
  if (!(out->data = malloc(bytes ? bytes : 1))) return -1;
  if (bytes) memcpy(out->data, t->data, bytes);
  return 0;
}

/* Integer attribute `name` of n, else its default from the op's schema
 * (ops.def); INT64_MIN when it has neither or is not an integer (the
 * verifier refuses both; the axis checks then fail). */
static int64_t attr_int(const ir_node *n, const char *name) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  return a && a->kind == IR_ATTR_INT ? a->u.i : INT64_MIN;
}

static const ir_tensor *IN(run *r, const ir_node *n, int k) { return &r->vals[n->in[k]->id]; }
static ir_tensor *OUT(run *r, const ir_node *n, int k) { return &r->vals[n->out[k]->id]; }

/* Normalize an axis attribute against rank; false when out of range. */
static bool norm_axis(int64_t axis, int rank, int *out) {
  if (axis < -(int64_t)rank || axis >= rank) return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

/* Strides (in elements) of `in` along the output's axes under numpy
 * broadcasting: trailing axes align; a size-1 axis repeats (stride 0).
 * False when the shapes do not broadcast. */
static bool bcast_strides(const ir_tensor *in, const ir_tensor *out, int64_t *st) {
  if (in->rank > out->rank) return false;
  int lead = out->rank - in->rank;
  int64_t s = 1;
  for (int a = out->rank - 1; a >= 0; a--) {
    if (a < lead) {
      st[a] = 0;
      continue;
    }
    int64_t d = in->shape[a - lead];
    if (d == 1)
      st[a] = 0;
    else if (d == out->shape[a])
      st[a] = s;
    else
      return false;
    s *= d;
  }
  return true;
}

/* Offset in a tensor with strides st (over out's axes) of out's element i. */
static int64_t bcast_offset(const ir_tensor *out, const int64_t *st, int64_t i) {
  int64_t off = 0;
  for (int a = out->rank - 1; a >= 0; a--) {
    int64_t d = out->shape[a];
    off += (i % d) * st[a];
    i /= d;
  }
  return off;
}

static bool same_shape(const ir_tensor *a, const ir_tensor *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

static int dtype_fail(run *r, const ir_node *n, ir_dtype dt) {
  return op_fail(r, n, "dtype %s is not supported here", ir_dtype_name(dt));
}

static int run_elementwise(run *r, const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  ir_tensor *y = OUT(r, n, 0);
  const ir_tensor *x[3];
  int64_t st[3][IR_MAX_RANK];
  char s1[256], s2[256];
  if (n->nin < 1 || n->nin > 3) return op_fail(r, n, "unexpected operand count %d", n->nin);
  for (int k = 0; k < n->nin; k++) {
    x[k] = IN(r, n, k);
    if (!bcast_strides(x[k], y, st[k]))
      return op_fail(r, n, "operand %d has shape %s which does not broadcast to %s", k,
                     shape_text(x[k]->shape, x[k]->rank, s1, sizeof s1),
                     shape_text(y->shape, y->rank, s2, sizeof s2));
  }
  ir_dtype dt = x[0]->dtype;
  int gelu = IR_REF_GELU_NONE;
  if (n->op == IR_OP_GELU) {
    const ir_attr *a = ir_node_attr_or_default(n, "approximate");
    const char *ap = a && a->kind == IR_ATTR_STRING && a->u.s ? a->u.s : "none";
    if (strcmp(ap, "tanh") == 0)
      gelu = IR_REF_GELU_TANH;
    else if (strcmp(ap, "quick") == 0)
      gelu = IR_REF_GELU_QUICK;
    else if (strcmp(ap, "none") != 0)
      return op_fail(r, n, "unknown approximate = \"%s\"", ap);
  }
  /* the dtypes each class computes on */
  /* div of ints is true division into f64 (ops.def) */
  bool int_div = n->op == IR_OP_DIV && ir_ref_is_ic(dt);
  switch (info->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_BINARY:
    if (!ir_ref_is_fc(dt) && !ir_ref_is_ic(dt)) return dtype_fail(r, n, dt);
    if (y->dtype != (int_div ? IR_DT_F64 : dt) || (n->nin == 2 && x[1]->dtype != dt))
      return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_UNARY_FLOAT:
    if (!ir_ref_is_fc(dt)) return dtype_fail(r, n, dt);
    if (y->dtype != dt || (n->nin == 2 && x[1]->dtype != dt)) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_UNARY_PRED:
    if (!ir_ref_is_fc(dt)) return dtype_fail(r, n, dt);
    if (y->dtype != IR_DT_BOOL) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_UNARY_LOGICAL:
  case IR_CLS_BINARY_LOGICAL:
    for (int k = 0; k < n->nin; k++)
      if (x[k]->dtype != IR_DT_BOOL) return dtype_fail(r, n, x[k]->dtype);
    if (y->dtype != IR_DT_BOOL) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_COMPARE:
    if (!ir_dtype_is_compute(dt) || x[1]->dtype != dt) return dtype_fail(r, n, x[1]->dtype);
    if (y->dtype != IR_DT_BOOL) return dtype_fail(r, n, y->dtype);
    break;
  case IR_CLS_WHERE:
    if (dt != IR_DT_BOOL) return dtype_fail(r, n, dt);
    if (x[1]->dtype != y->dtype || x[2]->dtype != y->dtype) return dtype_fail(r, n, x[2]->dtype);
    break;
  case IR_CLS_CAST:
    if (!ir_dtype_is_castable(dt)) return dtype_fail(r, n, dt);
    if (!ir_dtype_is_castable(y->dtype)) return dtype_fail(r, n, y->dtype);
    break;
  default:
    return op_fail(r, n, "not an elementwise op");
  }
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  for (int64_t i = 0; i < total; i++) {
    int64_t o[3] = {0, 0, 0};
    for (int k = 0; k < n->nin; k++) o[k] = bcast_offset(y, st[k], i);
    bool known = true;
    switch (info->cls) {
    case IR_CLS_UNARY:
    case IR_CLS_UNARY_FLOAT:
      if (dt == IR_DT_F32) {
        float v = 0;
        known = ir_ref_un_f32(n->op, gelu, (float)ir_ref_ld_f(x[0], o[0]), &v);
        ir_ref_st_f(y, i, v);
      } else if (dt == IR_DT_F64) {
        double v = 0;
        known = ir_ref_un_f64(n->op, gelu, ir_ref_ld_f(x[0], o[0]), &v);
        ir_ref_st_f(y, i, v);
      } else {
        int64_t v = 0;
        known = ir_ref_un_int(n->op, ir_ref_ld_i(x[0], o[0]), &v);
        ir_ref_st_i(y, i, v);
      }
      break;
    case IR_CLS_UNARY_PRED: {
      bool v = false;
      known = ir_ref_pred(n->op, ir_ref_ld_f(x[0], o[0]), &v);
      ir_ref_st_i(y, i, v);
      break;
    }
    case IR_CLS_UNARY_LOGICAL:
    case IR_CLS_BINARY_LOGICAL: {
      bool a = ir_ref_ld_i(x[0], o[0]) != 0, v = false;
      bool b = n->nin > 1 && ir_ref_ld_i(x[1], o[1]) != 0;
      known = ir_ref_logic(n->op, a, b, &v);
      ir_ref_st_i(y, i, v);
      break;
    }
    case IR_CLS_BINARY:
      if (dt == IR_DT_F32) {
        float v = 0;
        known = ir_ref_bin_f32(n->op, (float)ir_ref_ld_f(x[0], o[0]),
                               (float)ir_ref_ld_f(x[1], o[1]), &v);
        ir_ref_st_f(y, i, v);
      } else if (dt == IR_DT_F64) {
        double v = 0;
        known = ir_ref_bin_f64(n->op, ir_ref_ld_f(x[0], o[0]), ir_ref_ld_f(x[1], o[1]), &v);
        ir_ref_st_f(y, i, v);
      } else if (int_div) {
        ir_ref_st_f(y, i, (double)ir_ref_ld_i(x[0], o[0]) / (double)ir_ref_ld_i(x[1], o[1]));
      } else {
        int64_t v = 0;
        int rc = ir_ref_bin_int(n->op, ir_ref_ld_i(x[0], o[0]), ir_ref_ld_i(x[1], o[1]), &v);
        if (rc == IR_REF_DIV_ZERO) return op_fail(r, n, "integer division by zero");
        known = rc == IR_REF_OK;
        ir_ref_st_i(y, i, v);
      }
      break;
    case IR_CLS_COMPARE: {
      bool v = false;
      if (ir_ref_is_fc(dt))
        known = ir_ref_cmp_f(n->op, ir_ref_ld_f(x[0], o[0]), ir_ref_ld_f(x[1], o[1]), &v);
      else
        known = ir_ref_cmp_i(n->op, ir_ref_ld_i(x[0], o[0]), ir_ref_ld_i(x[1], o[1]), &v);
      ir_ref_st_i(y, i, v);
      break;
    }
    case IR_CLS_WHERE:
      if (ir_ref_ld_i(x[0], o[0]))
        memcpy(ir_ref_elem(y, i), ir_ref_elem(x[1], o[1]), es);
      else
        memcpy(ir_ref_elem(y, i), ir_ref_elem(x[2], o[2]), es);
      break;
    case IR_CLS_CAST:
      ir_ref_cast_elem(x[0], o[0], y, i);
      break;
    default:
      known = false;
      break;
    }
    if (!known)
      return op_fail(r, n, "the reference interpreter has no meaning for it on %s "
                           "(ir/interp_scalar.c)", ir_dtype_name(dt));
  }
  return 0;
}

/* t viewed with a dim of 1 inserted before axis `at` (same data). */
static ir_tensor view_with_one(const ir_tensor *t, int at) {
  ir_tensor v = *t;
  if (t->rank >= IR_MAX_RANK || at < 0 || at > t->rank) return v;
  v.rank = t->rank + 1;
  for (int i = 0, j = 0; i < v.rank; i++) v.shape[i] = i == at ? 1 : t->shape[j++];
  return v;
}

static int run_matmul(run *r, const ir_node *n) {
  ir_tensor av = *IN(r, n, 0), bv = *IN(r, n, 1), yv = *OUT(r, n, 0);
  /* a 1-D operand is [1, K] (a) or [K, 1] (b), the dim dropped from y (ops.def) */
  if (av.rank == 1 && bv.rank >= 1) {
    yv = view_with_one(&yv, yv.rank - (bv.rank == 1 ? 0 : 1));
    av = view_with_one(&av, 0);
  }
  if (bv.rank == 1 && av.rank >= 2) {
    yv = view_with_one(&yv, yv.rank);
    bv = view_with_one(&bv, 1);
  }
  const ir_tensor *a = &av, *b = &bv;
  ir_tensor *y = &yv;
  int ra = a->rank, rb = b->rank, ry = y->rank;
  char s1[256], s2[256], s3[256];
  if (ra < 2 || rb < 2 || ry != (ra > rb ? ra : rb))
    return op_fail(r, n, "ranks %d x %d -> %d are not a matmul", ra, rb, ry);
  /* kiln.transpose_b (fold_transpose.c): b is [..., N, K], element (k, j) at
   * j * K + k */
  bool tb = ir_node_attr_int(n, "kiln.transpose_b", 0) != 0;
  int64_t M = a->shape[ra - 2], K = a->shape[ra - 1], N = b->shape[rb - (tb ? 2 : 1)];
  int64_t bks = tb ? 1 : N, bjs = tb ? K : 1; /* b's strides along k and j */
  if (b->shape[rb - (tb ? 1 : 2)] != K || y->shape[ry - 2] != M || y->shape[ry - 1] != N)
    return op_fail(r, n, "shapes %s x %s do not give %s", shape_text(a->shape, ra, s1, sizeof s1),
                   shape_text(b->shape, rb, s2, sizeof s2),
                   shape_text(y->shape, ry, s3, sizeof s3));
  /* matmul.integer: 8-bit a and b, si32 sums of (a - a_zp) * (b - b_zp) */
  bool integer = n->op == IR_OP_MATMUL_INTEGER;
  if (integer ? y->dtype != IR_DT_SI32
              : a->dtype != y->dtype || b->dtype != y->dtype ||
                    !(ir_ref_is_fc(y->dtype) || ir_ref_is_ic(y->dtype)))
    return dtype_fail(r, n, y->dtype);
  const ir_tensor *za = integer && n->nin > 2 ? IN(r, n, 2) : NULL;
  const ir_tensor *zb = integer && n->nin > 3 ? IN(r, n, 3) : NULL;
  int64_t nza = za ? ir_tensor_numel(za) : 1, nzb = zb ? ir_tensor_numel(zb) : 1;
  if ((nza != 1 && nza != M) || (nzb != 1 && nzb != N))
    return op_fail(r, n, "zero points of %lld and %lld entries for M = %lld, N = %lld",
                   (long long)nza, (long long)nzb, (long long)M, (long long)N);
  /* batch dims: broadcast like elementwise, counting whole matrices */
  ir_tensor ab = {.rank = ra - 2}, bb = {.rank = rb - 2}, yb = {.rank = ry - 2};
  memcpy(ab.shape, a->shape, sizeof(int64_t) * (size_t)(ra - 2));
  memcpy(bb.shape, b->shape, sizeof(int64_t) * (size_t)(rb - 2));
  memcpy(yb.shape, y->shape, sizeof(int64_t) * (size_t)(ry - 2));
  int64_t sa[IR_MAX_RANK], sb[IR_MAX_RANK];
  if (!bcast_strides(&ab, &yb, sa) || !bcast_strides(&bb, &yb, sb))
    return op_fail(r, n, "batch dims of %s and %s do not broadcast",
                   shape_text(a->shape, ra, s1, sizeof s1),
                   shape_text(b->shape, rb, s2, sizeof s2));
  int64_t nbatch = span(&yb, 0, yb.rank);
  bool fl = ir_ref_is_fc(y->dtype);
  for (int64_t bi = 0; bi < nbatch; bi++) {
    int64_t ao = bcast_offset(&yb, sa, bi) * M * K, bo = bcast_offset(&yb, sb, bi) * K * N;
    int64_t yo = bi * M * N;
    for (int64_t i = 0; i < M; i++) {
      for (int64_t j = 0; j < N; j++) {
        if (integer) {
          int64_t zi = za ? ir_ref_ld_i(za, nza == 1 ? 0 : i) : 0;
          int64_t zj = zb ? ir_ref_ld_i(zb, nzb == 1 ? 0 : j) : 0;
          int64_t acc = 0; /* |terms| < 2^16: K < 2^47 cannot overflow */
          for (int64_t k = 0; k < K; k++)
            acc += (ir_ref_ld_i(a, ao + i * K + k) - zi) *
                   (ir_ref_ld_i(b, bo + k * bks + j * bjs) - zj);
          ir_ref_st_i(y, yo + i * N + j, (int64_t)(int32_t)(uint32_t)(uint64_t)acc);
        } else if (fl) {
          double acc = 0.0;
          for (int64_t k = 0; k < K; k++)
            acc += ir_ref_ld_f(a, ao + i * K + k) * ir_ref_ld_f(b, bo + k * bks + j * bjs);
          ir_ref_st_f(y, yo + i * N + j, acc);
        } else {
          uint64_t acc = 0;
          for (int64_t k = 0; k < K; k++)
            acc += (uint64_t)ir_ref_ld_i(a, ao + i * K + k) *
                   (uint64_t)ir_ref_ld_i(b, bo + k * bks + j * bjs);
          ir_ref_st_i(y, yo + i * N + j, (int64_t)acc);
        }
      }
    }
  }
  return 0;
}

/* Split x's shape around `axis` into outer * len * inner; check that y is x
 * with that axis of size `ylen`. */
static int axis_split(run *r, const ir_node *n, const ir_tensor *x, const ir_tensor *y,
                      int64_t ylen, int *axis, int64_t *outer, int64_t *len, int64_t *inner) {
  int64_t attr = attr_int(n, "axis");
  if (!norm_axis(attr, x->rank, axis))
    return op_fail(r, n, "axis %lld is out of range for rank %d", (long long)attr, x->rank);
  bool ok = y->rank == x->rank;
  for (int i = 0; ok && i < x->rank; i++)
    ok = y->shape[i] == (i == *axis && ylen >= 0 ? ylen : x->shape[i]);
  if (!ok) {
    char s1[256], s2[256];
    return op_fail(r, n, "result shape %s does not fit input shape %s",
                   shape_text(y->shape, y->rank, s1, sizeof s1),
                   shape_text(x->shape, x->rank, s2, sizeof s2));
  }
  *outer = span(x, 0, *axis);
  *len = x->shape[*axis];
  *inner = span(x, *axis + 1, x->rank);
  return 0;
}

static int run_reduce(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int axis;
  int64_t outer, len, inner;
  if (axis_split(r, n, x, y, 1, &axis, &outer, &len, &inner)) return -1;
  ir_dtype dt = x->dtype;
  bool arg = n->op == IR_OP_ARGMAX || n->op == IR_OP_ARGMIN;
  if (!ir_ref_is_fc(dt) && !ir_ref_is_ic(dt)) return dtype_fail(r, n, dt);
  if (arg ? !ir_dtype_is_int(y->dtype) : y->dtype != dt) return dtype_fail(r, n, y->dtype);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      int64_t yi = o * inner + in, base = o * len * inner + in;
      if (arg) {
        bool mx = n->op == IR_OP_ARGMAX;
        int64_t best = 0;
        if (ir_ref_is_fc(dt)) {
          double bv = len > 0 ? ir_ref_ld_f(x, base) : 0.0;
          for (int64_t j = 1; j < len && !isnan(bv); j++) {
            double v = ir_ref_ld_f(x, base + j * inner);
            if (isnan(v) || (mx ? v > bv : v < bv)) {
              bv = v;
              best = j;
            }
          }
        } else {
          int64_t bv = len > 0 ? ir_ref_ld_i(x, base) : 0;
          for (int64_t j = 1; j < len; j++) {
            int64_t v = ir_ref_ld_i(x, base + j * inner);
            if (mx ? v > bv : v < bv) {
              bv = v;
              best = j;
            }
          }
        }
        ir_ref_st_i(y, yi, best);
      } else if (ir_ref_is_fc(dt)) {
        double acc;
        if (n->op == IR_OP_REDUCE_PROD) {
          acc = 1.0;
          for (int64_t j = 0; j < len; j++) acc *= ir_ref_ld_f(x, base + j * inner);
        } else if (n->op == IR_OP_REDUCE_SUM || n->op == IR_OP_REDUCE_MEAN) {
          acc = 0.0;
          for (int64_t j = 0; j < len; j++) acc += ir_ref_ld_f(x, base + j * inner);
          if (n->op == IR_OP_REDUCE_MEAN) acc /= (double)len; /* 0 / 0 = NaN */
        } else {
          bool mx = n->op == IR_OP_REDUCE_MAX;
          acc = mx ? -INFINITY : INFINITY;
          for (int64_t j = 0; j < len; j++) {
            double v = ir_ref_ld_f(x, base + j * inner);
            acc = mx ? ir_ref_max_f(acc, v) : ir_ref_min_f(acc, v);
          }
        }
        ir_ref_st_f(y, yi, acc);
      } else {
        if (n->op == IR_OP_REDUCE_PROD) {
          uint64_t acc = 1;
          for (int64_t j = 0; j < len; j++) acc *= (uint64_t)ir_ref_ld_i(x, base + j * inner);
          ir_ref_st_i(y, yi, (int64_t)acc);
        } else if (n->op == IR_OP_REDUCE_SUM || n->op == IR_OP_REDUCE_MEAN) {
          uint64_t acc = 0;
          for (int64_t j = 0; j < len; j++) acc += (uint64_t)ir_ref_ld_i(x, base + j * inner);
          int64_t s = ir_ref_wrap_i(dt, acc);
          /* integer mean: truncating; 0 over an empty axis (ops.def) */
          ir_ref_st_i(y, yi, n->op != IR_OP_REDUCE_MEAN ? s : len > 0 ? s / len : 0);
        } else {
          bool mx = n->op == IR_OP_REDUCE_MAX;
          int64_t acc = mx ? ir_ref_int_min(dt) : ir_ref_int_max(dt);
          for (int64_t j = 0; j < len; j++) {
            int64_t v = ir_ref_ld_i(x, base + j * inner);
            if (mx ? v > acc : v < acc) acc = v;
          }
          ir_ref_st_i(y, yi, acc);
        }
      }
    }
  }
  return 0;
}

static int run_softmax(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int axis;
  int64_t outer, len, inner;
  if (axis_split(r, n, x, y, -1, &axis, &outer, &len, &inner)) return -1;
  if (!ir_ref_is_fc(x->dtype) || y->dtype != x->dtype) return dtype_fail(r, n, x->dtype);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t in = 0; in < inner; in++) {
      int64_t base = o * len * inner + in;
      double m = -INFINITY, s = 0.0;
      for (int64_t j = 0; j < len; j++) m = ir_ref_max_f(m, ir_ref_ld_f(x, base + j * inner));
      for (int64_t j = 0; j < len; j++) s += exp(ir_ref_ld_f(x, base + j * inner) - m);
      for (int64_t j = 0; j < len; j++) {
        int64_t k = base + j * inner;
        double v = ir_ref_ld_f(x, k) - m;
        ir_ref_st_f(y, k, n->op == IR_OP_SOFTMAX ? exp(v) / s : v - log(s));
      }
    }
  }
  return 0;
}

static int run_layer_norm(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0), *gm = IN(r, n, 1), *bt = IN(r, n, 2);
  ir_tensor *y = OUT(r, n, 0);
  if (x->rank < 1 || !same_shape(x, y)) return op_fail(r, n, "result shape differs from input");
  int64_t len = x->shape[x->rank - 1];
  if (ir_tensor_numel(gm) != len || ir_tensor_numel(bt) != len)
    return op_fail(r, n, "gamma and beta need %lld elements, have %lld and %lld", (long long)len,
                   (long long)ir_tensor_numel(gm), (long long)ir_tensor_numel(bt));
  if (!ir_ref_is_fc(x->dtype) || y->dtype != x->dtype || gm->dtype != x->dtype || bt->dtype != x->dtype)
    return dtype_fail(r, n, x->dtype);
  const ir_attr *ea = ir_node_attr_or_default(n, "epsilon");
  if (!ea) return op_fail(r, n, "no epsilon");
  double eps = ea->kind == IR_ATTR_INT ? (double)ea->u.i : ea->u.f;
  int64_t rows = span(x, 0, x->rank - 1);
  for (int64_t row = 0; row < rows && len > 0; row++) {
    int64_t base = row * len;
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < len; j++) mean += ir_ref_ld_f(x, base + j);
    mean /= (double)len;
    for (int64_t j = 0; j < len; j++) {
      double d = ir_ref_ld_f(x, base + j) - mean;
      var += d * d;
    }
    var /= (double)len;
    double den = sqrt(var + eps);
    for (int64_t j = 0; j < len; j++)
      ir_ref_st_f(y, base + j, (ir_ref_ld_f(x, base + j) - mean) / den * ir_ref_ld_f(gm, j) + ir_ref_ld_f(bt, j));
  }
  return 0;
}

/* ---- data movement (any dtype, by element size) ---- */

static int run_copy(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int64_t cnt = ir_tensor_numel(x);
  if (cnt != ir_tensor_numel(y) || x->dtype != y->dtype)
    return op_fail(r, n, "%lld elements of %s cannot become %lld elements of %s", (long long)cnt,
                   ir_dtype_name(x->dtype), (long long)ir_tensor_numel(y),
                   ir_dtype_name(y->dtype));
  if (cnt > 0) memcpy(y->data, x->data, (size_t)cnt * ir_dtype_size(x->dtype));
  return 0;
}

/* y axis i = x axis perm[i]. */
static int permute_copy(run *r, const ir_node *n, const int *perm) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  bool ok = x->rank == y->rank && x->dtype == y->dtype;
  for (int i = 0; ok && i < y->rank; i++) ok = y->shape[i] == x->shape[perm[i]];
  if (!ok) {
    char s1[256], s2[256];
    return op_fail(r, n, "result shape %s is not a permutation of %s",
                   shape_text(y->shape, y->rank, s1, sizeof s1),
                   shape_text(x->shape, x->rank, s2, sizeof s2));
  }
  int64_t xs[IR_MAX_RANK], st[IR_MAX_RANK], s = 1;
  for (int a = x->rank - 1; a >= 0; a--) {
    xs[a] = s;
    s *= x->shape[a];
  }
  for (int i = 0; i < y->rank; i++) st[i] = xs[perm[i]];
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  for (int64_t i = 0; i < total; i++) memcpy(ir_ref_elem(y, i), ir_ref_elem(x, bcast_offset(y, st, i)), es);
  return 0;
}

static int run_transpose(run *r, const ir_node *n) {
  int rank = IN(r, n, 0)->rank, a1, a2, perm[IR_MAX_RANK];
  int64_t x1 = attr_int(n, "axis_1"), x2 = attr_int(n, "axis_2");
  if (!norm_axis(x1, rank, &a1) || !norm_axis(x2, rank, &a2))
    return op_fail(r, n, "axes %lld, %lld are out of range for rank %d", (long long)x1,
                   (long long)x2, rank);
  for (int i = 0; i < rank; i++) perm[i] = i;
  perm[a1] = a2;
  perm[a2] = a1;
  return permute_copy(r, n, perm);
}

static int run_permute(run *r, const ir_node *n) {
  int rank = IN(r, n, 0)->rank, perm[IR_MAX_RANK];
  bool seen[IR_MAX_RANK] = {false};
  const ir_attr *a = ir_node_attr(n, "dims");
  if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n != rank)
    return op_fail(r, n, "dims must list %d axes", rank);
  for (int i = 0; i < rank; i++) {
    if (!norm_axis(a->u.ints.v[i], rank, &perm[i]) || seen[perm[i]])
      return op_fail(r, n, "dims is not a permutation of %d axes", rank);
    seen[perm[i]] = true;
  }
  return permute_copy(r, n, perm);
}

static int run_broadcast_to(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  ir_tensor *y = OUT(r, n, 0);
  int64_t st[IR_MAX_RANK];
  char s1[256], s2[256];
  if (!bcast_strides(x, y, st) || x->dtype != y->dtype)
    return op_fail(r, n, "shape %s does not broadcast to %s",
                   shape_text(x->shape, x->rank, s1, sizeof s1),
                   shape_text(y->shape, y->rank, s2, sizeof s2));
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  for (int64_t i = 0; i < total; i++) memcpy(ir_ref_elem(y, i), ir_ref_elem(x, bcast_offset(y, st, i)), es);
  return 0;
}

/* Shared by concat (pieces = inputs) and split (pieces = results): the
 * pieces laid side by side along `axis` make up `whole`. */
static int check_pieces(run *r, const ir_node *n, const ir_tensor *whole,
                        const ir_tensor *const *pieces, int np, int axis) {
  int64_t sum = 0;
  for (int k = 0; k < np; k++) {
    const ir_tensor *p = pieces[k];
    bool ok = p->rank == whole->rank && p->dtype == whole->dtype;
    for (int i = 0; ok && i < p->rank; i++) ok = i == axis || p->shape[i] == whole->shape[i];
    if (!ok) {
      char s1[256], s2[256];
      return op_fail(r, n, "piece %d of shape %s does not fit %s along axis %d", k,
                     shape_text(p->shape, p->rank, s1, sizeof s1),
                     shape_text(whole->shape, whole->rank, s2, sizeof s2), axis);
    }
    sum += p->shape[axis];
  }
  if (sum != whole->shape[axis])
    return op_fail(r, n, "pieces sum to %lld along axis %d, expected %lld", (long long)sum, axis,
                   (long long)whole->shape[axis]);
  return 0;
}

static int run_concat_split(run *r, const ir_node *n) {
  bool concat = n->op == IR_OP_CONCAT;
  const ir_tensor *whole = concat ? OUT(r, n, 0) : IN(r, n, 0);
  int np = concat ? n->nin : n->nout, axis;
  const ir_tensor **pieces = calloc((size_t)(np ? np : 1), sizeof *pieces);
  if (!pieces) return op_fail(r, n, "out of memory");
  for (int k = 0; k < np; k++) pieces[k] = concat ? IN(r, n, k) : OUT(r, n, k);
  int64_t attr = attr_int(n, "axis");
  int rc = -1;
  if (!norm_axis(attr, whole->rank, &axis)) {
    op_fail(r, n, "axis %lld is out of range for rank %d", (long long)attr, whole->rank);
    goto out;
  }
  if (check_pieces(r, n, whole, pieces, np, axis)) goto out;
  int64_t outer = span(whole, 0, axis), inner = span(whole, axis + 1, whole->rank);
  size_t es = ir_dtype_size(whole->dtype);
  for (int64_t o = 0; o < outer; o++) {
    int64_t woff = o * whole->shape[axis] * inner;
    for (int k = 0; k < np; k++) {
      int64_t cnt = pieces[k]->shape[axis] * inner;
      char *w = ir_ref_elem(whole, woff), *p = ir_ref_elem(pieces[k], o * cnt);
      if (cnt > 0) {
        if (concat)
          memcpy(w, p, (size_t)cnt * es);
        else
          memcpy(p, w, (size_t)cnt * es);
      }
      woff += cnt;
    }
  }
  rc = 0;
out:
  free(pieces);
  return rc;
}

int64_t ir_ref_slice_axis(int64_t d, int64_t start, int64_t stop, int64_t step, int64_t *first) {
  int64_t len;
  if (step > 0) {
    if (start == INT64_MIN) start = 0;
    else if (start < 0) start = start + d < 0 ? 0 : start + d;
    else if (start > d) start = d;
    if (stop == INT64_MAX) stop = d;
    else if (stop < 0) stop = stop + d < 0 ? 0 : stop + d;
    else if (stop > d) stop = d;
    len = start < stop ? (int64_t)((uint64_t)(stop - start - 1) / (uint64_t)step) + 1 : 0;
  } else {
    if (start == INT64_MIN) start = d - 1;
    else if (start < 0) start = start + d < 0 ? -1 : start + d;
    else if (start >= d) start = d - 1;
    if (stop == INT64_MAX) stop = -1;
    else if (stop < 0) stop = stop + d < 0 ? -1 : stop + d;
    else if (stop >= d) stop = d - 1;
    uint64_t ustep = 0 - (uint64_t)step;
    len = stop < start ? (int64_t)((uint64_t)(start - stop - 1) / ustep) + 1 : 0;
  }
  *first = start;
  return len;
}

/* y = x sliced with (start, stop, step) per axis in v (ir_ref_slice_axis). */
static int slice_copy(run *r, const ir_node *n, const ir_tensor *x, ir_tensor *y,
                      int64_t (*v)[3]) {
  int64_t first[IR_MAX_RANK], xs[IR_MAX_RANK], st[IR_MAX_RANK], s = 1;
  if (x->rank != y->rank || x->dtype != y->dtype)
    return op_fail(r, n, "result rank or dtype differs from the input");
  for (int a = x->rank - 1; a >= 0; a--) {
    xs[a] = s;
    s *= x->shape[a];
  }
  for (int a = 0; a < x->rank; a++) {
    if (v[a][2] == 0) return op_fail(r, n, "step of axis %d is 0", a);
    int64_t len = ir_ref_slice_axis(x->shape[a], v[a][0], v[a][1], v[a][2], &first[a]);
    if (len != y->shape[a])
      return op_fail(r, n, "axis %d: slice %lld:%lld:%lld of size %lld has %lld elements, the "
                     "result type says %lld", a, (long long)v[a][0], (long long)v[a][1],
                     (long long)v[a][2], (long long)x->shape[a], (long long)len,
                     (long long)y->shape[a]);
    /* with two or more elements |step| < dim, so the product fits */
    st[a] = y->shape[a] > 1 ? v[a][2] * xs[a] : 0;
  }
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  if (total == 0) return 0;
  int64_t base = 0; /* every first[a] is a valid index once no axis is empty */
  for (int a = 0; a < x->rank; a++) base += first[a] * xs[a];
  for (int64_t i = 0; i < total; i++)
    memcpy(ir_ref_elem(y, i), ir_ref_elem(x, base + bcast_offset(y, st, i)), es);
  return 0;
}

static int run_slice(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0);
  const ir_attr *lists[3] = {ir_node_attr(n, "start"), ir_node_attr(n, "stop"),
                             ir_node_attr(n, "step")};
  const int64_t dflt[3] = {INT64_MIN, INT64_MAX, 1};
  for (int k = 0; k < 3; k++)
    if (lists[k] && (lists[k]->kind != IR_ATTR_INTS || lists[k]->u.ints.n > x->rank))
      return op_fail(r, n, "start / stop / step must be lists of at most %d ints", x->rank);
  int64_t v[IR_MAX_RANK][3];
  for (int a = 0; a < x->rank; a++)
    for (int k = 0; k < 3; k++)
      v[a][k] = lists[k] && a < lists[k]->u.ints.n ? lists[k]->u.ints.v[a] : dflt[k];
  return slice_copy(r, n, x, OUT(r, n, 0), v);
}

static int run_slice_data(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0), *p[4] = {IN(r, n, 1), IN(r, n, 2), IN(r, n, 3), NULL};
  if (n->nin > 4) p[3] = IN(r, n, 4);
  int64_t v[IR_MAX_RANK][3];
  char detail[300];
  if (ir_ref_slice_data(p, x->rank, v, detail, sizeof detail) < 0)
    return op_fail(r, n, "%s", detail);
  return slice_copy(r, n, x, OUT(r, n, 0), v);
}

static int run_gather(run *r, const ir_node *n) {
  const ir_tensor *x = IN(r, n, 0), *idx = IN(r, n, 1);
  ir_tensor *y = OUT(r, n, 0);
  int axis;
  int64_t attr = attr_int(n, "axis");
  if (!norm_axis(attr, x->rank, &axis))
    return op_fail(r, n, "axis %lld is out of range for rank %d", (long long)attr, x->rank);
  if (!ir_ref_is_ic(idx->dtype)) return dtype_fail(r, n, idx->dtype);
  /* y = x[:axis] + idx + x[axis+1:] */
  bool ok = y->rank == x->rank - 1 + idx->rank && y->dtype == x->dtype;
  for (int i = 0; ok && i < y->rank; i++) {
    int64_t want = i < axis ? x->shape[i]
                   : i < axis + idx->rank ? idx->shape[i - axis]
                                          : x->shape[i - idx->rank + 1];
    ok = y->shape[i] == want;
  }
  if (!ok) {
    char s1[256], s2[256], s3[256];
    return op_fail(r, n, "result shape %s does not fit input %s with indices %s",
                   shape_text(y->shape, y->rank, s1, sizeof s1),
                   shape_text(x->shape, x->rank, s2, sizeof s2),
                   shape_text(idx->shape, idx->rank, s3, sizeof s3));
  }
  int64_t outer = span(x, 0, axis), d = x->shape[axis], inner = span(x, axis + 1, x->rank);
  int64_t ni = ir_tensor_numel(idx);
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t j = 0; j < ni; j++) {
      int64_t iv = ir_ref_ld_i(idx, j);
      if (iv < -d || iv >= d)
        return op_fail(r, n, "index %lld out of range for axis %d of size %lld", (long long)iv,
                       axis, (long long)d);
      if (iv < 0) iv += d;
      if (inner > 0)
        memcpy(ir_ref_elem(y, (o * ni + j) * inner), ir_ref_elem(x, (o * d + iv) * inner), (size_t)inner * es);
    }
  }
  return 0;
}

static int run_constant(run *r, const ir_node *n) {
  ir_tensor *y = OUT(r, n, 0);
  const ir_attr *a = ir_node_attr(n, "value");
  if (!a || a->kind != IR_ATTR_DENSE) return op_fail(r, n, "missing dense attribute 'value'");
  const ir_dense *v = &a->u.dense;
  int64_t total = ir_tensor_numel(y);
  size_t es = ir_dtype_size(y->dtype);
  if (v->dtype != y->dtype)
    return op_fail(r, n, "value has dtype %s, the result %s", ir_dtype_name(v->dtype),
                   ir_dtype_name(y->dtype));
  if (v->numel == total) {
    if (total > 0) memcpy(y->data, v->data, (size_t)total * es);
  } else if (v->numel == 1) {
    for (int64_t i = 0; i < total; i++) memcpy(ir_ref_elem(y, i), v->data, es);
  } else {
    return op_fail(r, n, "value has %lld elements, the result type needs %lld",
                   (long long)v->numel, (long long)total);
  }
  return 0;
}

/* constant.external: the result aliases the caller's weight (read only). */
static int run_external(run *r, const ir_node *n) {
  ir_tensor *y = OUT(r, n, 0);
  const char *name = ir_node_attr_string(n, "name", NULL);
  char s1[256], s2[256];
  if (!name) return op_fail(r, n, "missing attribute 'name'");
  const ir_tensor *w = r->weights ? r->weights(r->ud, name) : NULL;
  if (!w) return ir_ref_fail(r->msg, r->msglen, "weight '%s' is not bound", name);
  if (w->dtype != y->dtype)
    return ir_ref_fail(r->msg, r->msglen, "weight '%s': expected dtype %s, got %s", name,
                ir_dtype_name(y->dtype), ir_dtype_name(w->dtype));
  if (w->rank < 0 || w->rank > IR_MAX_RANK)
    return ir_ref_fail(r->msg, r->msglen, "weight '%s': expected shape %s, got rank %d", name,
                shape_text(y->shape, y->rank, s1, sizeof s1), w->rank);
  if (!same_shape(w, y))
    return ir_ref_fail(r->msg, r->msglen, "weight '%s': expected shape %s, got %s", name,
                shape_text(y->shape, y->rank, s1, sizeof s1),
                shape_text(w->shape, w->rank, s2, sizeof s2));
  if (!w->data && ir_tensor_numel(w) > 0)
    return ir_ref_fail(r->msg, r->msglen, "weight '%s' has no data", name);
  int64_t align = attr_int(n, "align");
  if (align > 1 && w->data && (uintptr_t)w->data % (uint64_t)align != 0)
    return ir_ref_fail(r->msg, r->msglen,
                       "weight '%s': its data at %p is not aligned to %lld bytes (its align)",
                       name, w->data, (long long)align);
  y->data = w->data;
  return 0;
}

static int run_node(run *r, const ir_node *n);

/* mo.fused: its body run node by node on the operands with the graph's
 * symbol values (the body shares them), its outputs copied into the node's
 * results. The body's own run-time checks were checked with the graph's. */
static int run_fused(run *r, const ir_node *n) {
  const ir_graph *b = n->body;
  if (!b || b->ninputs != n->nin || b->noutputs != n->nout)
    return op_fail(r, n, "mo.fused without a matching body");
  size_t nv = (size_t)(b->nvalues ? b->nvalues : 1);
  run sub = {.g = b, .syms = r->syms, .weights = r->weights, .ud = r->ud, .msg = r->msg,
             .msglen = r->msglen};
  int rc = -1;
  if (!run_alloc(&sub, nv)) {
    op_fail(r, n, "out of memory");
    goto out;
  }
  for (int i = 0; i < b->ninputs; i++) {
    sub.vals[b->inputs[i]->id] = *IN(r, n, i);
    sub.ready[b->inputs[i]->id] = true;
  }
  for (int i = 0; i < b->nnodes; i++)
    if (run_node(&sub, b->nodes[i])) goto out;
  for (int i = 0; i < b->noutputs; i++) {
    const ir_tensor *t = &sub.vals[b->outputs[i]->id];
    ir_tensor *y = OUT(r, n, i);
    if (!sub.ready[b->outputs[i]->id] || !same_shape(t, y) || t->dtype != y->dtype) {
      op_fail(r, n, "body output %d does not match result %d", i, i);
      goto out;
    }
    size_t bytes = (size_t)ir_tensor_numel(t) * ir_dtype_size(t->dtype);
    if (bytes) memcpy(y->data, t->data, bytes);
  }
  rc = 0;
out:
  run_release(&sub, nv);
  return rc;
}

static int run_custom(run *r, const ir_node *n) {
  return op_fail(r, n, "the kernel \"%s\" needs its kernel library: the reference interpreter "
                       "cannot run custom kernels", ir_node_attr_string(n, "symbol", "?"));
}

/* The routine of each op class (ops.def's CLS rows); the size is checked, so
 * a class added without one fails the build. */
typedef int (*run_fn)(run *r, const ir_node *n);
/* The classes whose routines live in interp_ops.c: their message gets the
 * op's prefix here. */
static int run_scan(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_scan(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_sort(run *r, const ir_node *n) {
  char detail[400] = "";
  bool arg = n->op == IR_OP_ARGSORT;
  if (ir_ref_sort(n, IN(r, n, 0), arg ? NULL : OUT(r, n, 0), OUT(r, n, arg ? 0 : 1), detail,
                  sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_fft(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_fft(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_band_part(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_band_part(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

/* The indexing classes (interp_index.c). */
static int run_gather_index(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_gather_index(n, IN(r, n, 0), IN(r, n, 1), OUT(r, n, 0), detail, sizeof detail))
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_pad(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_pad(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_resize(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_resize(n, IN(r, n, 0), n->nin == 3 ? IN(r, n, 2) : NULL, OUT(r, n, 0), detail,
                    sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_scatter(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_scatter(n, IN(r, n, 0), IN(r, n, 1), IN(r, n, 2), OUT(r, n, 0), detail,
                     sizeof detail))
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_pool(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_pool(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_tile(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_tile(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail))
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_range(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_range(IN(r, n, 0), IN(r, n, 1), IN(r, n, 2), OUT(r, n, 0), detail, sizeof detail))
    return op_fail(r, n, "%s", detail);
  return 0;
}

/* The indices go into the result planned with the bound; the count then
 * becomes the symbol's value (ir_data_sym_bind) and the result's dim 0. */
static int run_nonzero(run *r, const ir_node *n) {
  int64_t count = ir_ref_nonzero(IN(r, n, 0), OUT(r, n, 0));
  if (ir_data_sym_bind(r->g, n, r->syms, count, r->msg, r->msglen) < 0) return -1;
  OUT(r, n, 0)->shape[0] = count;
  return 0;
}

static int run_nms(run *r, const ir_node *n) {
  int64_t count = ir_ref_nms(n, IN(r, n, 0), IN(r, n, 1), IN(r, n, 2), IN(r, n, 3),
                             n->nin > 4 ? IN(r, n, 4) : NULL, OUT(r, n, 0));
  if (ir_data_sym_bind(r->g, n, r->syms, count, r->msg, r->msglen) < 0) return -1;
  OUT(r, n, 0)->shape[0] = count;
  return 0;
}

static int run_conv(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_conv(n, IN(r, n, 0), IN(r, n, 1), n->nin > 2 ? IN(r, n, 2) : NULL, OUT(r, n, 0),
                  detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_fold(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_fold(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_roi_align(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_roi_align(n, IN(r, n, 0), IN(r, n, 1), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_random(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_random(n, OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_print(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_print(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_masked_scatter(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_masked_scatter(n, IN(r, n, 0), IN(r, n, 1), IN(r, n, 2), OUT(r, n, 0), detail,
                            sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_shape_to_tensor(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_shape_to_tensor(IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_repeat(run *r, const ir_node *n) {
  char detail[400] = "";
  if (ir_ref_repeat_interleave(n, IN(r, n, 0), n->nin == 2 ? IN(r, n, 1) : NULL, OUT(r, n, 0),
                               detail, sizeof detail) != 0)
    return op_fail(r, n, "%s", detail);
  return 0;
}

static int run_quant(run *r, const ir_node *n) {
  char detail[400] = "";
  int rc = n->op == IR_OP_QMATMUL
               ? ir_ref_qmatmul(n, IN(r, n, 0), IN(r, n, 1), OUT(r, n, 0), detail, sizeof detail)
               : ir_ref_dequantize(n, IN(r, n, 0), OUT(r, n, 0), detail, sizeof detail);
  return rc ? op_fail(r, n, "%s", detail) : 0;
}

static int run_buffer(run *r, const ir_node *n) {
  const ir_tensor *in[4] = {0};
  ir_tensor *out[2] = {0};
  for (int k = 0; k < n->nin && k < 4; k++) in[k] = IN(r, n, k);
  for (int k = 0; k < n->nout && k < 2; k++) out[k] = OUT(r, n, k);
  char detail[400] = "";
  if (ir_ref_buffer(n, in, out, detail, sizeof detail) != 0) return op_fail(r, n, "%s", detail);
  return 0;
}

static const run_fn run_class[] = {
    [IR_CLS_UNARY] = run_elementwise,
    [IR_CLS_UNARY_FLOAT] = run_elementwise,
    [IR_CLS_UNARY_PRED] = run_elementwise,
    [IR_CLS_UNARY_LOGICAL] = run_elementwise,
    [IR_CLS_BINARY] = run_elementwise,
    [IR_CLS_COMPARE] = run_elementwise,
    [IR_CLS_BINARY_LOGICAL] = run_elementwise,
    [IR_CLS_WHERE] = run_elementwise,
    [IR_CLS_CAST] = run_elementwise,
    [IR_CLS_CONSTANT] = run_constant,
    [IR_CLS_CONSTANT_EXTERNAL] = run_external,
    [IR_CLS_MATMUL] = run_matmul,
    [IR_CLS_REDUCE] = run_reduce,
    [IR_CLS_REDUCE_ARG] = run_reduce,
    [IR_CLS_SOFTMAX] = run_softmax,
    [IR_CLS_LAYER_NORM] = run_layer_norm,
    [IR_CLS_RESHAPE] = run_copy,
    [IR_CLS_TRANSPOSE] = run_transpose,
    [IR_CLS_PERMUTE] = run_permute,
    [IR_CLS_BROADCAST_TO] = run_broadcast_to,
    [IR_CLS_CONCAT] = run_concat_split,
    [IR_CLS_SPLIT] = run_concat_split,
    [IR_CLS_SLICE] = run_slice,
    [IR_CLS_SQUEEZE] = run_copy,
    [IR_CLS_UNSQUEEZE] = run_copy,
    [IR_CLS_GATHER] = run_gather,
    [IR_CLS_FUSED] = run_fused,
    [IR_CLS_CUSTOM] = run_custom,
    [IR_CLS_SCAN] = run_scan,
    [IR_CLS_BAND_PART] = run_band_part,
    [IR_CLS_GATHER_INDEX] = run_gather_index,
    [IR_CLS_SCATTER] = run_scatter,
    [IR_CLS_TILE] = run_tile,
    [IR_CLS_RANGE] = run_range,
    [IR_CLS_PAD] = run_pad,
    [IR_CLS_POOL] = run_pool,
    [IR_CLS_CONV] = run_conv,
    [IR_CLS_SORT] = run_sort,
    [IR_CLS_RESIZE] = run_resize,
    [IR_CLS_FOLD] = run_fold,
    [IR_CLS_ROI_ALIGN] = run_roi_align,
    [IR_CLS_RANDOM] = run_random,
    [IR_CLS_PRINT] = run_print,
    [IR_CLS_NONZERO] = run_nonzero,
    [IR_CLS_NMS] = run_nms,
    [IR_CLS_MASKED_SCATTER] = run_masked_scatter,
    [IR_CLS_SHAPE_TO_TENSOR] = run_shape_to_tensor,
    [IR_CLS_SLICE_DATA] = run_slice_data,
    [IR_CLS_REPEAT] = run_repeat,
    [IR_CLS_DEQUANTIZE] = run_quant,
    [IR_CLS_QMATMUL] = run_quant,
    [IR_CLS_BUFFER] = run_buffer,
    [IR_CLS_CONTROL] = NULL, /* ir_interp_run hands such graphs to ir_interp_flow */
    [IR_CLS_MATMUL_INTEGER] = run_matmul,
    [IR_CLS_FFT] = run_fft,
};
_Static_assert(sizeof run_class / sizeof run_class[0] == IR_CLS_COUNT,
               "every op class of ir/ops.def needs a routine in ir/interp.c");

/* Swap value v's tensor for a copy in its widened dtype (ir_dtype_widened;
 * exact when `load`); the original goes to *was. false on out of memory. */
static bool widen_value(run *r, const ir_value *v, bool load, ir_tensor *was) {
  ir_tensor *t = &r->vals[v->id];
  *was = *t;
  int64_t cnt = ir_tensor_numel(t);
  ir_dtype wide = ir_dtype_widened(t->dtype);
  void *w = malloc((size_t)(cnt > 0 ? cnt : 1) * ir_dtype_size(wide));
  if (!w) return false;
  t->dtype = wide;
  t->data = w;
  for (int64_t e = 0; load && e < cnt; e++) {
    if (ir_dtype_is_float(wide))
      ir_ref_st_f(t, e, ir_ref_ld_f(was, e));
    else
      ir_ref_st_i(t, e, ir_ref_ld_i(was, e));
  }
  return true;
}

/* Bring the wide result t back into narrow `to`: rounded once to nearest
 * even (floats) or wrapped (integers). */
static void narrow_back(const ir_tensor *t, const ir_tensor *to) {
  int64_t cnt = ir_tensor_numel(t);
  for (int64_t e = 0; e < cnt; e++) {
    if (ir_dtype_is_float(to->dtype))
      ir_ref_st_f(to, e, ir_ref_ld_f(t, e));
    else
      ir_ref_st_i(to, e, ir_ref_ld_i(t, e));
  }
}

/* n on narrow dtypes (ir_node_computes_narrow, ir.h): fn, n's meaning on
 * the operands it widens (ir_node_widens_operand) widened exactly, each
 * narrow result brought back once from the wide one fn wrote. */
static int run_narrow(run *r, const ir_node *n, run_fn fn) {
  int nv = n->nin + n->nout;
  ir_tensor *was = calloc((size_t)nv, sizeof *was);
  bool *wide = calloc((size_t)nv, sizeof *wide);
  int rc = -1;
  if (!was || !wide) {
    op_fail(r, n, "out of memory");
    goto out;
  }
  for (int k = 0; k < nv; k++) {
    const ir_value *v = k < n->nin ? n->in[k] : n->out[k - n->nin];
    bool seen = false; /* the same operand twice: widened once */
    for (int j = 0; j < k && j < n->nin; j++) seen = seen || n->in[j] == v;
    bool widens = k < n->nin ? ir_node_widens_operand(n, k)
                             : ir_dtype_is_narrow(r->vals[v->id].dtype);
    if (seen || !widens) continue;
    if (!widen_value(r, v, k < n->nin, &was[k])) {
      op_fail(r, n, "out of memory");
      goto out;
    }
    wide[k] = true;
  }
  rc = fn(r, n);
out:
  for (int k = 0; wide && k < nv; k++) {
    if (!wide[k]) continue;
    const ir_value *v = k < n->nin ? n->in[k] : n->out[k - n->nin];
    ir_tensor *t = &r->vals[v->id];
    if (rc == 0 && k >= n->nin) narrow_back(t, &was[k]);
    free(t->data);
    *t = was[k];
  }
  free(was);
  free(wide);
  return rc;
}

static int run_node(run *r, const ir_node *n) {
  const ir_op_info *info = ir_op_get(n->op);
  if (!info)
    return ir_ref_fail(r->msg, r->msglen, "op #%d has an unknown op code %d", n->id, (int)n->op);
  for (int k = 0; k < n->nin; k++)
    if (!r->ready[n->in[k]->id])
      return op_fail(r, n, "operand %d (%%%s) is used before it is computed", k, n->in[k]->name);
  for (int k = 0; k < n->nout; k++) {
    const ir_value *v = n->out[k];
    ir_tensor *t = &r->vals[v->id];
    char m[400];
    if (ir_eval_shape(&v->type, r->syms, t->shape, m, sizeof m))
      return op_fail(r, n, "result %d (%%%s): %s", k, v->name, m);
    t->dtype = v->type.dtype;
    t->rank = v->type.rank;
    if (n->op == IR_OP_CONSTANT_EXTERNAL) continue;
    int64_t cnt = ir_tensor_numel(t);
    size_t es = ir_dtype_size(t->dtype);
    if (es == 0) return op_fail(r, n, "result %d has unknown dtype", k);
    if (cnt < 0 || (uint64_t)cnt > SIZE_MAX / es)
      return op_fail(r, n, "result %d (%%%s) is too large", k, v->name);
    size_t bytes = (size_t)cnt * es;
    t->data = malloc(bytes ? bytes : 1);
    if (!t->data) return op_fail(r, n, "out of memory for %zu bytes", bytes);
    r->owned[v->id] = true;
  }
  run_fn fn = run_class[info->cls];
  if (!fn) return op_fail(r, n, "the reference interpreter has no routine for its op class");
  int rc = !n->body && ir_node_computes_narrow(n) ? run_narrow(r, n, fn) : fn(r, n);
  if (rc) return rc;
  for (int k = 0; k < n->nout; k++) r->ready[n->out[k]->id] = true;
  return 0;
}

int ir_interp_value(const ir_graph *g, const ir_tensor *inputs, int64_t *syms,
                    ir_interp_node_check check, void *cud, const ir_value *want, ir_tensor *out,
                    char *msg, size_t msglen) {
  memset(out, 0, sizeof *out);
  int nn = g->nnodes, rc = -1;
  size_t nv = (size_t)(g->nvalues ? g->nvalues : 1);
  run r = {.g = g, .syms = syms, .msg = msg, .msglen = msglen};
  bool *needed = calloc((size_t)(nn ? nn : 1), sizeof *needed);
  if (!run_alloc(&r, nv) || !needed) {
    ir_ref_fail(msg, msglen, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->ninputs; i++) {
    r.vals[g->inputs[i]->id] = inputs[i];
    r.ready[g->inputs[i]->id] = inputs[i].data || ir_tensor_numel(&inputs[i]) == 0;
  }
  /* the nodes `want` depends on: marked backwards from its producer (node
   * ids are in topological order) */
  if (want->def) needed[want->def->id] = true;
  for (int i = nn - 1; i >= 0; i--) {
    const ir_node *n = g->nodes[i];
    if (!needed[n->id]) continue;
    for (int k = 0; k < n->nin; k++)
      if (n->in[k]->def) needed[n->in[k]->def->id] = true;
  }
  for (int i = 0; i < nn; i++) {
    const ir_node *n = g->nodes[i];
    if (!needed[n->id]) continue;
    if (check && check(cud, n, msg, msglen) < 0) goto out;
    if (run_node(&r, n) < 0) goto out;
  }
  if (!r.ready[want->id]) {
    ir_ref_fail(msg, msglen, "%%%s has no data to read", want->name);
    goto out;
  }
  if (run_hand_over(&r, want, out) < 0) {
    ir_ref_fail(msg, msglen, "out of memory");
    goto out;
  }
  rc = 0;
out:
  run_release(&r, nv);
  free(needed);
  return rc;
}

int ir_interp_run(const ir_graph *g, const ir_tensor *inputs, ir_weight_fn weights, void *ud,
                  ir_tensor *outputs, char *msg, size_t msglen) {
  if (!g) return ir_ref_fail(msg, msglen, "no graph");
  if (g->noutputs > 0 && !outputs) return ir_ref_fail(msg, msglen, "outputs is NULL");
  if (ir_graph_has_control(g)) /* run step by step (interp_control.c) */
    return ir_interp_flow(g, g, inputs, weights, ud, outputs, msg, msglen);
  for (int i = 0; i < g->noutputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  run r = {.g = g, .weights = weights, .ud = ud, .msg = msg, .msglen = msglen};
  int64_t *syms = calloc((size_t)(g->nsyms ? g->nsyms : 1), sizeof *syms);
  size_t nv = (size_t)(g->nvalues ? g->nvalues : 1);
  r.syms = syms;
  int rc = -1, nout_done = 0;
  if (!run_alloc(&r, nv) || !syms) {
    ir_ref_fail(msg, msglen, "out of memory");
    goto out;
  }
  if (ir_solve_symbols(g, inputs, g->ninputs, syms, msg, msglen)) goto out;
  for (int i = 0; i < g->ninputs; i++) {
    const ir_value *v = g->inputs[i];
    r.vals[v->id] = inputs[i];
    if (!inputs[i].data && ir_tensor_numel(&inputs[i]) != 0) {
      ir_ref_fail(msg, msglen, "input %d (%s): data is NULL", i, ir_ref_input_name(g, i));
      goto out;
    }
    r.ready[v->id] = true;
  }
  for (int i = 0; i < g->nnodes; i++)
    if (run_node(&r, g->nodes[i])) goto out;
  /* Hand over results; a value that is not ours to give (an input, a
   * weight) or that was already given (output twice) is copied. */
  for (int i = 0; i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    if (!r.ready[v->id]) {
      ir_ref_fail(msg, msglen, "output %d (%%%s) is never computed", i, v->name);
      goto out;
    }
    if (run_hand_over(&r, v, &outputs[i]) < 0) {
      ir_ref_fail(msg, msglen, "out of memory");
      goto out;
    }
    nout_done = i + 1;
  }
  rc = 0;
out:
  if (rc) {
    for (int i = 0; i < nout_done; i++) free(outputs[i].data);
    for (int i = 0; i < g->noutputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  }
  run_release(&r, nv);
  free(syms);
  return rc;
}
