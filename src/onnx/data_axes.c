/* data_axes.c - ONNX ops whose axes, sizes or counts are run-time data (a
 * graph input, or a value computed from inputs and constants:
 * ox_run_time_data): Squeeze / Unsqueeze / Reduce* with run-time axes, Split
 * with run-time sizes, CumSum with a run-time axis, TopK with a run-time K.
 *
 * The small integer tensors that give the result's dims are computed in the
 * graph from the data (shape_to_tensor, cumsum, compares, where), and kiln
 * reads them before the graph runs (ir_solve_symbols, ir/shape.h) as the
 * shape operand of mo.reshape or the bounds of mo.slice_tensor, so each
 * result dim set by the data is a symbol bound from it. The result's rank
 * must follow from static facts: the axes input's static length (a
 * Squeeze / keepdims = 0 reduction loses that many axes, an Unsqueeze gains
 * them), else the rank the model declares for the output (a graph output or
 * value_info), else the node is reported unsupported naming the input.
 *
 * Data ONNX forbids never gives an answer: an axis out of range or repeated,
 * a squeezed dim other than 1, split sizes that are negative or do not add
 * up, a K outside [1, dim] or a CumSum axis out of range sets the shape
 * entries kiln reads to -2 (mo.reshape) or the slice step to 0
 * (mo.slice_tensor), so the run stops with that op's data error. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* A 1-D si64 constant of n values. */
static kiln_value *i64s(ox *x, int64_t n, const int64_t *v) {
  int64_t one = 0;
  kiln_value *c = kiln_graph_add_constant(x->g, KILN_INT64, 1, &n, n ? v : &one, x->st);
  if (!c) ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
  return c;
}

static kiln_value *i64_1(ox *x, int64_t v) { return i64s(x, 1, &v); }

/* 0, 1, ..., n - 1 as a constant of dims [n] (or [1, n] when row). */
static kiln_value *iota_const(ox *x, int n, bool row) {
  int64_t v[IR_MAX_RANK + 1];
  for (int i = 0; i < n; i++) v[i] = i;
  kiln_value *c = i64s(x, n, v);
  if (!c || !row) return c;
  const ir_dim *d[2] = {ir_dim_const(x->ir->arena, 1), ir_dim_const(x->ir->arena, n)};
  return ox_reshape(x, c, 2, d);
}

/* v (any integer dtype, rank 0 or 1) as 1-D si64; *len its static length
 * or -1. NULL with *len -2 when v has a rank over 1, else on an error. */
static kiln_value *as_i64_list(ox *x, kiln_value *v, int64_t *len) {
  const ir_type *t = ox_type(v);
  *len = -1;
  if (t->rank > 1) {
    *len = -2;
    return NULL;
  }
  if (t->rank == 0) *len = 1;
  else if (!ir_dim_is_const(t->dims[0], len)) *len = -1;
  if (t->dtype != IR_DT_SI64 && !(v = ox_op(x, "cast", &v, 1, NULL, "{dtype = si64}")))
    return NULL;
  if (t->rank == 0) {
    const ir_dim *d = ir_dim_const(x->ir->arena, 1);
    v = d ? ox_reshape(x, v, 1, &d) : NULL;
  }
  return v;
}

/* The number of axes in the run-time list ax (1-D si64) that name each of
 * `rank` axes, negative ones counted from the end: si64 [rank]. An axis out
 * of range names none. */
static kiln_value *axis_hits(ox *x, kiln_value *ax, int rank) {
  ir_arena *ar = x->ir->arena;
  const ir_dim *col[2] = {ox_dim(ax, 0), ir_dim_const(ar, 1)};
  kiln_value *z = ox_scalar(x, IR_DT_SI64, 0), *rk = ox_scalar(x, IR_DT_SI64, rank), *neg, *up;
  kiln_value *row = iota_const(x, rank, true), *eq;
  if (!z || !rk || !row || !(neg = OP2("greater", z, ax)) || !(up = OP2("add", ax, rk)) ||
      !(ax = ox_op(x, "where", (kiln_value *[]){neg, up, ax}, 3, NULL, NULL)) ||
      !(ax = ox_reshape(x, ax, 2, col)) || !(eq = OP2("equal", ax, row)) ||
      !(eq = ox_op(x, "cast", &eq, 1, NULL, "{dtype = si64}")) ||
      !(eq = ox_op(x, "sum", &eq, 1, NULL, "{axis = 0}")))
    return NULL;
  const ir_dim *d = ir_dim_const(ar, rank);
  return ox_reshape(x, eq, 1, &d);
}

/* [1] bool: some entry of the 1-D si64 v is > lim. */
static kiln_value *any_over(ox *x, kiln_value *v, int64_t lim) {
  kiln_value *m = ox_op(x, "max", &v, 1, NULL, "{axis = 0}"), *l = ox_scalar(x, IR_DT_SI64, lim);
  return m && l ? OP2("greater", m, l) : NULL;
}

/* [1] bool: the hits do not name as many distinct axes as the list ax
 * holds (one out of range or repeated), or the list does not hold k (when
 * k >= 0: a count taken from the model's declared rank). */
static kiln_value *bad_axes(ox *x, kiln_value *hits, kiln_value *ax, int64_t k) {
  kiln_value *rep = any_over(x, hits, 1), *s = rep ? ox_op(x, "sum", &hits, 1, NULL, "{axis = 0}")
                                                   : NULL, *kv, *miss, *kk;
  if (!s || !(kv = ox_op(x, "shape_to_tensor", &ax, 1, NULL, NULL)) ||
      !(miss = OP2("not_equal", s, kv)) || !(rep = OP2("logical_or", rep, miss)))
    return NULL;
  if (k < 0 || ir_dim_is_const(ox_dim(ax, 0), &(int64_t){0})) return rep;
  return (kk = ox_scalar(x, IR_DT_SI64, k)) && (miss = OP2("not_equal", kv, kk))
             ? OP2("logical_or", rep, miss)
             : NULL;
}

/* shape with every entry -2 where bad (mo.reshape then refuses it). */
static kiln_value *poison(ox *x, kiln_value *bad, kiln_value *shape) {
  kiln_value *m2 = ox_scalar(x, IR_DT_SI64, -2);
  return m2 ? ox_op(x, "where", (kiln_value *[]){bad, m2, shape}, 3, NULL, NULL) : NULL;
}

/* A slice step: [1], or [0] where bad (mo.slice_tensor then refuses it). */
static kiln_value *step_unless(ox *x, kiln_value *bad) {
  kiln_value *z = ox_scalar(x, IR_DT_SI64, 0), *one = i64_1(x, 1);
  return z && one ? ox_op(x, "where", (kiln_value *[]){bad, z, one}, 3, NULL, NULL) : NULL;
}

/* a reshaped to the run-time shape (1-D si64 of `rank` entries), each
 * result dim a symbol bound from the data. */
static kiln_value *reshape_to_data(ox *x, kiln_value *a, kiln_value *shape, int rank) {
  const ir_dim *dims[IR_MAX_RANK];
  for (int i = 0; i < rank; i++)
    if (!(dims[i] = ox_symbol(x, NULL))) return NULL;
  char ty[1024];
  ox_type_text(ty, sizeof ty, ox_type(a)->dtype, rank, dims);
  return ox_op(x, "reshape", (kiln_value *[]){a, shape}, 2, ty, NULL);
}

/* a sliced along `axis` from start to stop ([1] si64 each) by step ([1]),
 * the result's dim there `len` (a fresh symbol when NULL). */
static kiln_value *slice_axis(ox *x, kiln_value *a, int axis, kiln_value *start,
                              kiln_value *stop, kiln_value *step, const ir_dim *len) {
  const ir_type *t = ox_type(a);
  const ir_dim *dims[IR_MAX_RANK];
  for (int i = 0; i < t->rank; i++) dims[i] = t->dims[i];
  if (!len && !(len = ox_symbol(x, NULL))) return NULL;
  dims[axis] = len;
  kiln_value *ax = i64_1(x, axis);
  char ty[1024];
  ox_type_text(ty, sizeof ty, t->dtype, t->rank, dims);
  return ax ? ox_op(x, "slice_tensor", (kiln_value *[]){a, start, stop, step, ax}, 5, ty, NULL)
            : NULL;
}

/* The run-time axes input as 1-D si64 (*ax) and their count *k: the
 * static length, else (when need_k) the count the rank the model declares
 * for the node's output implies (rank + sign * k), else -1. 1 after
 * recording the node unsupported when the count is needed and neither
 * tells it. */
static int axes_list(ox *x, const Onnx__NodeProto *n, ox_val *axes, int rank, int sign,
                     bool need_k, kiln_value **ax, int64_t *k) {
  if (!(*ax = as_i64_list(x, axes->v, k)))
    return *k == -2 ? ox_unsupported(x, n, "input '%s' (axes) must be 1-D", axes->name) : -1;
  if (*k >= 0 || !need_k) return 0;
  const char *out = n->n_output ? n->output[0] : "";
  int decl = ox_declared_rank(x, out);
  if (decl < 0)
    return ox_unsupported(x, n, "input '%s' (axes) is run-time data of a length not known at "
                          "import and the model declares no rank for output '%s', so the "
                          "result's rank is unknown", axes->name, out);
  *k = sign > 0 ? decl - rank : rank - decl;
  if (*k < 0 || decl > IR_MAX_RANK)
    return ox_fail(x, KILN_ERR_VERIFY, "output '%s' is declared of rank %d, which an input of "
                   "rank %d and a list of axes cannot give", out, decl, rank);
  return 0;
}

/* The dims of a [rank] shape xs that hits leaves (hits == 0), in order:
 * 1-D si64 [rank - k]. */
static kiln_value *kept_dims(ox *x, kiln_value *xs, kiln_value *hits, int rank, int keep) {
  ir_arena *ar = x->ir->arena;
  const ir_dim *col[2] = {ir_dim_const(ar, rank), ir_dim_const(ar, 1)},
               *flat = ir_dim_const(ar, keep);
  kiln_value *z = ox_scalar(x, IR_DT_SI64, 0), *row = iota_const(x, keep, true);
  kiln_value *before, *pos, *kept, *m, *c;
  if (!z || !row ||
      !(before = ox_op(x, "cumsum", &hits, 1, NULL,
                       "{axis = 0, exclusive = true, reverse = false}")) ||
      !(pos = iota_const(x, rank, false)) || !(pos = OP2("sub", pos, before)) ||
      !(kept = OP2("equal", hits, z)) || !(pos = ox_reshape(x, pos, 2, col)) ||
      !(kept = ox_reshape(x, kept, 2, col)) || !(m = OP2("equal", pos, row)) ||
      !(m = OP2("logical_and", m, kept)) ||
      !(m = ox_op(x, "cast", &m, 1, NULL, "{dtype = si64}")) ||
      !(c = ox_reshape(x, xs, 2, col)) || !(m = OP2("mul", m, c)) ||
      !(m = ox_op(x, "sum", &m, 1, NULL, "{axis = 0}")))
    return NULL;
  return ox_reshape(x, m, 1, &flat);
}

int ox_squeeze_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *axes, ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  int rank = ox_type(a)->rank;
  int64_t k;
  kiln_value *ax, *hits, *xs, *bad, *sq, *shape, *one;
  int r = axes_list(x, n, axes, rank, -1, true, &ax, &k);
  if (r) return r;
  if (k > rank) return ox_fail(x, KILN_ERR_VERIFY, "%lld axes for rank %d", (long long)k, rank);
  /* bad: the axes repeat or leave the range, or a squeezed dim is not 1 */
  if (!(hits = axis_hits(x, ax, rank)) || !(bad = bad_axes(x, hits, ax, k)) ||
      !(xs = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) ||
      !(one = ox_scalar(x, IR_DT_SI64, 1)) || !(sq = OP2("not_equal", xs, one)) ||
      !(sq = ox_op(x, "cast", &sq, 1, NULL, "{dtype = si64}")) || !(sq = OP2("mul", sq, hits)) ||
      !(sq = any_over(x, sq, 0)) || !(bad = OP2("logical_or", bad, sq)) ||
      !(shape = kept_dims(x, xs, hits, rank, rank - (int)k)) ||
      !(shape = poison(x, bad, shape)) ||
      !(out->v = reshape_to_data(x, a, shape, rank - (int)k)))
    return FAILED();
  return 0;
}

int ox_unsqueeze_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *axes,
                      ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  int rank = ox_type(a)->rank;
  int64_t k;
  kiln_value *ax, *hits, *bad, *xs, *before, *idx, *lim, *isax, *one, *shape;
  int r = axes_list(x, n, axes, rank, 1, true, &ax, &k);
  if (r) return r;
  if (rank + k > IR_MAX_RANK) return ox_unsupported(x, n, "rank %lld", (long long)(rank + k));
  int orank = rank + (int)k;
  /* result dim j: 1 where an axis names j, else input dim j - (axes before j);
   * the index is clamped to `rank`, which reads the 1 appended to x's shape */
  if (!(hits = axis_hits(x, ax, orank)) || !(bad = bad_axes(x, hits, ax, k)) ||
      !(xs = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) || !(one = i64_1(x, 1)) ||
      !(xs = ox_op(x, "concat", (kiln_value *[]){xs, one}, 2, NULL, "{axis = 0}")) ||
      !(before = ox_op(x, "cumsum", &hits, 1, NULL,
                       "{axis = 0, exclusive = true, reverse = false}")) ||
      !(idx = iota_const(x, orank, false)) || !(idx = OP2("sub", idx, before)) ||
      !(lim = ox_scalar(x, IR_DT_SI64, rank)) || !(idx = OP2("min", idx, lim)) ||
      !(shape = ox_op(x, "gather", (kiln_value *[]){xs, idx}, 2, NULL, "{axis = 0}")) ||
      !(one = ox_scalar(x, IR_DT_SI64, 0)) || !(isax = OP2("greater", hits, one)) ||
      !(one = ox_scalar(x, IR_DT_SI64, 1)) ||
      !(shape = ox_op(x, "where", (kiln_value *[]){isax, one, shape}, 3, NULL, NULL)) ||
      !(shape = poison(x, bad, shape)) || !(out->v = reshape_to_data(x, a, shape, orank)))
    return FAILED();
  return 0;
}

/* The reduction `op` of a along each axis the run-time list names (an
 * empty list, when its length is not static: every axis unless noop).
 * Axis i at a time: [reduced, a] concatenated along i, then sliced to the
 * reduced part (start 0, stop 1) or to a (start 1, stop d + 1): an empty
 * axis reduces to its one identity element as ONNX says. keepdims = 0 then
 * reshapes to the dims left. */
int ox_reduce_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, const char *op, ox_val *axes,
                   bool keep, bool noop, kiln_value **res) {
  int nun0 = x->nunsup; /* for FAILED() */
  int rank = ox_type(a)->rank;
  int64_t k;
  kiln_value *ax, *hits, *bad, *step, *xs, *on, *one, *z, *kv, *all;
  int r = axes_list(x, n, axes, rank, -1, !keep, &ax, &k);
  if (r) return r;
  if (k > rank) return ox_fail(x, KILN_ERR_VERIFY, "%lld axes for rank %d", (long long)k, rank);
  bool maybe_empty = !ir_dim_is_const(ox_dim(ax, 0), &(int64_t){0}) && !noop;
  if (!(hits = axis_hits(x, ax, rank)) || !(bad = bad_axes(x, hits, ax, maybe_empty ? -1 : k)) ||
      !(z = ox_scalar(x, IR_DT_SI64, 0)) || !(on = OP2("greater", hits, z)) ||
      !(one = ox_scalar(x, IR_DT_SI64, 1)) ||
      !(xs = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) || !(xs = OP2("add", xs, one)))
    return FAILED();
  if (maybe_empty) { /* an empty list reduces every axis; the count then is the rank */
    kiln_value *cnt, *rk, *kk, *miss;
    if (!(kv = ox_op(x, "shape_to_tensor", &ax, 1, NULL, NULL)) || !(all = OP2("equal", kv, z)) ||
        !(on = OP2("logical_or", on, all)) || !(rk = ox_scalar(x, IR_DT_SI64, rank)) ||
        !(cnt = ox_op(x, "where", (kiln_value *[]){all, rk, kv}, 3, NULL, NULL)))
      return FAILED();
    if (k >= 0 && (!(kk = ox_scalar(x, IR_DT_SI64, k)) || !(miss = OP2("not_equal", cnt, kk)) ||
                   !(bad = OP2("logical_or", bad, miss))))
      return FAILED();
  }
  if (!(step = step_unless(x, bad))) return FAILED();
  kiln_value *start_of = NULL, *stop_of = NULL, *zeros = i64s(x, rank, (int64_t[IR_MAX_RANK]){0});
  kiln_value *ones = NULL;
  if (!zeros || !(ones = OP2("add", zeros, one)) ||
      !(start_of = ox_op(x, "where", (kiln_value *[]){on, zeros, ones}, 3, NULL, NULL)) ||
      !(stop_of = ox_op(x, "where", (kiln_value *[]){on, ones, xs}, 3, NULL, NULL)))
    return FAILED();
  kiln_value *v = a;
  for (int i = 0; i < rank; i++) {
    kiln_value *red, *cat, *idx = i64_1(x, i), *start, *stop;
    if (!idx || !(red = ox_op(x, op, &v, 1, NULL, "{axis = %d}", i)) ||
        !(cat = ox_op(x, "concat", (kiln_value *[]){red, v}, 2, NULL, "{axis = %d}", i)) ||
        !(start = ox_op(x, "gather", (kiln_value *[]){start_of, idx}, 2, NULL, "{axis = 0}")) ||
        !(stop = ox_op(x, "gather", (kiln_value *[]){stop_of, idx}, 2, NULL, "{axis = 0}")) ||
        !(v = slice_axis(x, cat, i, start, stop, step, NULL)))
      return FAILED();
  }
  if (!keep) {
    kiln_value *shape, *on64 = ox_op(x, "cast", &on, 1, NULL, "{dtype = si64}");
    if (!on64 || !(xs = ox_op(x, "shape_to_tensor", &v, 1, NULL, NULL)) ||
        !(shape = kept_dims(x, xs, on64, rank, rank - (int)k)) ||
        !(v = reshape_to_data(x, v, shape, rank - (int)k)))
      return FAILED();
  }
  *res = v;
  return 0;
}

int ox_split_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, int axis, ox_val *sizes,
                  ox_val **out, int nout) {
  int nun0 = x->nunsup; /* for FAILED() */
  int64_t k;
  kiln_value *s = as_i64_list(x, sizes->v, &k), *incl, *excl, *d, *tot, *bad, *neg, *step, *ax;
  if (!s && k == -1) return -1;
  if (k < 0)
    return ox_unsupported(x, n, "input '%s' (split) is run-time data of a length not known at "
                          "import", sizes->name);
  if (k != nout)
    return ox_fail(x, KILN_ERR_VERIFY, "%lld split sizes for %d outputs", (long long)k, nout);
  /* bad: a negative size, or sizes that do not add up to the axis */
  if (!(incl = ox_op(x, "cumsum", &s, 1, NULL, "{axis = 0, exclusive = false, reverse = false}"))
      || !(excl = ox_op(x, "cumsum", &s, 1, NULL,
                        "{axis = 0, exclusive = true, reverse = false}")) ||
      !(d = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) || !(ax = i64_1(x, axis)) ||
      !(d = ox_op(x, "gather", (kiln_value *[]){d, ax}, 2, NULL, "{axis = 0}")) ||
      !(tot = ox_op(x, "sum", &s, 1, NULL, "{axis = 0}")) ||
      !(bad = OP2("not_equal", tot, d)) || !(neg = OP2("sub", ox_scalar(x, IR_DT_SI64, 0), s)) ||
      !(neg = any_over(x, neg, 0)) || !(bad = OP2("logical_or", bad, neg)) ||
      !(step = step_unless(x, bad)))
    return FAILED();
  for (int i = 0; i < nout; i++) {
    kiln_value *idx = i64_1(x, i), *start, *stop;
    if (!idx || !(start = ox_op(x, "gather", (kiln_value *[]){excl, idx}, 2, NULL, "{axis = 0}"))
        || !(stop = ox_op(x, "gather", (kiln_value *[]){incl, idx}, 2, NULL, "{axis = 0}")) ||
        !(out[i]->v = slice_axis(x, a, axis, start, stop, step, NULL)))
      return FAILED();
  }
  return 0;
}

int ox_cumsum_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *axis_v, bool ex,
                   bool rev, ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_type *t = ox_type(a);
  int rank = t->rank;
  int64_t k;
  kiln_value *ax = as_i64_list(x, axis_v->v, &k), *hits, *bad, *xs, *v = NULL;
  if (!ax && k == -1) return -1;
  if (k != 1)
    return ox_unsupported(x, n, "input '%s' (axis) must hold one element", axis_v->name);
  if (rank < 1) return ox_fail(x, KILN_ERR_VERIFY, "CumSum of a rank-0 tensor");
  /* each axis's sum, the one the data names picked */
  if (!(hits = axis_hits(x, ax, rank)) || !(bad = bad_axes(x, hits, ax, 1))) return FAILED();
  for (int i = 0; i < rank; i++) {
    kiln_value *c = ox_op(x, "cumsum", &a, 1, NULL, "{axis = %d, exclusive = %s, reverse = %s}",
                          i, ex ? "true" : "false", rev ? "true" : "false");
    kiln_value *idx = c ? ox_scalar(x, IR_DT_SI64, i) : NULL, *h, *z;
    if (!idx) return FAILED();
    if (i == 0) {
      v = c;
      continue;
    }
    if (!(h = ox_op(x, "gather", (kiln_value *[]){hits, idx}, 2, NULL, "{axis = 0}")) ||
        !(z = ox_scalar(x, IR_DT_SI64, 0)) || !(h = OP2("greater", h, z)) ||
        !(v = ox_op(x, "where", (kiln_value *[]){h, c, v}, 3, NULL, NULL)))
      return FAILED();
  }
  /* an axis out of range: the shape read before the run is refused */
  char ty[1024];
  ox_type_text(ty, sizeof ty, t->dtype, rank, (const ir_dim *const *)t->dims);
  if (!(xs = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) || !(xs = poison(x, bad, xs)) ||
      !(out->v = ox_op(x, "reshape", (kiln_value *[]){v, xs}, 2, ty, NULL)))
    return FAILED();
  return 0;
}

int ox_topk_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, int axis, bool largest,
                 ox_val *k_v, ox_val **out, int nout) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_type *t = ox_type(a);
  int64_t len, d;
  kiln_value *kk = as_i64_list(x, k_v->v, &len), *lo, *hi, *bad, *step, *start, *all;
  if (!kk && len == -1) return -1;
  if (len != 1)
    return ox_unsupported(x, n, "input '%s' (K) must hold one element", k_v->name);
  if (!ir_dim_is_const(t->dims[axis], &d))
    return ox_unsupported(x, n, "a run-time K on the symbolic axis %d", axis);
  /* the whole axis sorted (ties keep the lower index first, so its first K
   * are TopK's), then sliced to K; bad: K outside [1, dim] */
  const ir_dim *len_k = ox_symbol(x, NULL);
  if (!len_k) return -1;
  if (!(all = ox_op(x, largest ? "top_k" : "bottom_k", &a, 1, NULL, "{axis = %d, k = %lld}",
                    axis, (long long)d)) ||
      !(lo = ox_scalar(x, IR_DT_SI64, 1)) || !(lo = OP2("greater", lo, kk)) ||
      !(hi = ox_scalar(x, IR_DT_SI64, d)) || !(hi = OP2("greater", kk, hi)) ||
      !(bad = OP2("logical_or", lo, hi)) || !(step = step_unless(x, bad)) ||
      !(start = i64_1(x, 0)) ||
      !(out[0]->v = slice_axis(x, all, axis, start, kk, step, len_k)))
    return FAILED();
  if (nout > 1 &&
      !(out[1]->v = slice_axis(x, kiln_value_result(all, 1), axis, start, kk, step, len_k)))
    return FAILED();
  return 0;
}
