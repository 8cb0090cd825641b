/* ops_index.c - ONNX indexing and mask ops: GatherElements, GatherND,
 * ScatterElements (and the older Scatter), ScatterND, CumSum, Trilu,
 * NonZero, Compress and ReverseSequence.
 *
 * The gathers and scatters map one to one onto mo.gather_elements,
 * mo.gather_nd and the mo.scatter / mo.scatter_nd families (ONNX's operand
 * order data, indices, updates becomes kiln's input, updates, indices; the
 * reduction attribute picks the op). CumSum's axis is an input: it must be
 * known at import, except for a 1-D operand, whose only axis is 0. Trilu
 * with a k known at import (or none) is one mo.band_part; with k only known
 * at run time it is a mask built from the coordinates (two exclusive
 * cumsums of ones give the row and column numbers) and a mo.where.
 * NonZero and Compress use mo.nonzero, whose count is a fresh symbol set
 * from data when the node runs. */
#include <stdio.h>
#include <string.h>

#include "ox.h"

/* One int64 known at import from input i (absent: dflt). false: not known. */
static bool known_scalar(ox_val **in, int nin, int i, int64_t dflt, int64_t *v) {
  *v = dflt;
  if (nin <= i || !in[i]) return true;
  int cnt;
  return ox_known_consts(in[i], v, 1, &cnt) && cnt == 1;
}

int ox_op_GatherElements(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                         int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  if (!(out[0]->v = ox_op(x, "gather_elements", (kiln_value *[]){a, b}, 2, NULL, "{axis = %lld}",
                          (long long)ox_attr_int(n, "axis", 0))))
    return FAILED();
  return 0;
}

int ox_op_GatherND(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  if (!(out[0]->v = ox_op(x, "gather_nd", (kiln_value *[]){a, b}, 2, NULL, "{batch_dims = %lld}",
                          (long long)ox_attr_int(n, "batch_dims", 0))))
    return FAILED();
  return 0;
}

/* ScatterElements / Scatter / ScatterND: op base "scatter" or "scatter_nd". */
static int scatter(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   const char *base) {
  BEGIN;
  char buf[32], op[48];
  const char *red = ox_attr_string(n, "reduction", "none", buf, sizeof buf);
  static const char *const kinds[] = {"add", "mul", "max", "min"};
  snprintf(op, sizeof op, "%s", base);
  if (strcmp(red, "none") != 0) {
    size_t k = 0;
    while (k < 4 && strcmp(red, kinds[k]) != 0) k++;
    if (k == 4) return ox_unsupported(x, n, "reduction \"%s\"", red);
    snprintf(op, sizeof op, "%s_%s", base, kinds[k]);
  }
  kiln_value *d = IN(0), *i = d ? IN(1) : NULL, *u = i ? IN(2) : NULL;
  if (!u) return rc;
  bool nd = strcmp(base, "scatter_nd") == 0;
  if (nd) out[0]->v = ox_op(x, op, (kiln_value *[]){d, u, i}, 3, NULL, NULL);
  else
    out[0]->v = ox_op(x, op, (kiln_value *[]){d, u, i}, 3, NULL, "{axis = %lld}",
                      (long long)ox_attr_int(n, "axis", 0));
  return out[0]->v ? 0 : FAILED();
}

int ox_op_ScatterElements(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                          int nout) {
  return scatter(x, n, in, nin, out, "scatter");
}

int ox_op_Scatter(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return scatter(x, n, in, nin, out, "scatter");
}

int ox_op_ScatterND(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    int nout) {
  return scatter(x, n, in, nin, out, "scatter_nd");
}

int ox_op_CumSum(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int64_t axis;
  if (nin < 2 || !in[1]) return ox_fail(x, KILN_ERR_VERIFY, "CumSum needs its axis input");
  bool ex = ox_attr_int(n, "exclusive", 0) != 0, rev = ox_attr_int(n, "reverse", 0) != 0;
  if (!known_scalar(in, nin, 1, 0, &axis)) {
    if (ox_type(a)->rank != 1 && ox_run_time_data(in[1]))
      return ox_cumsum_data(x, n, a, in[1], ex, rev, out[0]);
    if (ox_type(a)->rank != 1)
      return ox_unsupported(x, n, "the axis input is neither known at import nor computed "
                            "from the inputs");
    axis = 0; /* the only axis */
  }
  if (!(out[0]->v = ox_op(x, "cumsum", &a, 1, NULL, "{axis = %lld, exclusive = %s, reverse = %s}",
                          (long long)axis, ex ? "true" : "false", rev ? "true" : "false")))
    return FAILED();
  return 0;
}

/* 0, 1, ..., len - 1 (si64) as a tensor of dims: `len` at axis `at`, 1 elsewhere. */
static kiln_value *coords(ox *x, const ir_dim *len, int at) {
  const ir_dim *one = ir_dim_const(x->ir->arena, 1), *d[2];
  kiln_value *c = one ? ox_iota(x, len) : NULL;
  if (!c) return NULL;
  d[at] = len;
  d[1 - at] = one;
  return ox_reshape(x, c, 2, d);
}

/* Trilu with k known only at run time: keep where col - row >= k (upper)
 * or k >= col - row (lower). */
static int trilu_dynamic(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                         kiln_value *a, bool upper) {
  BEGIN;
  kiln_value *k = IN(1);
  if (!k) return rc;
  const ir_type *t = ox_type(a);
  if (ox_type(k)->dtype != IR_DT_SI64 || ox_type(k)->rank > 1)
    return ox_unsupported(x, n, "k of dtype %s and rank %d", ir_dtype_name(ox_type(k)->dtype),
                          ox_type(k)->rank);
  kiln_value *rows = coords(x, t->dims[t->rank - 2], 0), *cols = rows ? coords(x, t->dims[t->rank - 1], 1) : NULL;
  kiln_value *diff = cols ? OP2("sub", cols, rows) : NULL;
  kiln_value *mask = diff ? (upper ? OP2("greater_equal", diff, k) : OP2("greater_equal", k, diff)) : NULL;
  kiln_value *zero = mask ? ox_scalar(x, t->dtype, 0) : NULL;
  if (!zero || !(out[0]->v = ox_op(x, "where", (kiln_value *[]){mask, a, zero}, 3, NULL, NULL)))
    return FAILED();
  return 0;
}

int ox_op_Trilu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  if (ox_type(a)->rank < 2) return ox_fail(x, KILN_ERR_VERIFY, "Trilu needs rank >= 2");
  bool upper = ox_attr_int(n, "upper", 1) != 0;
  int64_t k;
  if (!known_scalar(in, nin, 1, 0, &k)) return trilu_dynamic(x, n, in, nin, out, a, upper);
  /* band_part keeps m - n <= lower and n - m <= upper (negative: no bound);
   * exclude keeps the rest */
  int64_t lo = -1, up = -1;
  bool ex = false;
  if (upper && k <= 0) lo = -k;                  /* n - m >= k */
  else if (upper) up = k - 1, ex = true;         /* not n - m <= k - 1 */
  else if (k >= 0) up = k;                       /* n - m <= k */
  else lo = -k - 1, ex = true;                   /* not m - n <= -k - 1 */
  if (!(out[0]->v = ox_op(x, "band_part", &a, 1, NULL,
                          "{exclude = %s, num_lower = %lld, num_upper = %lld}",
                          ex ? "true" : "false", (long long)lo, (long long)up)))
    return FAILED();
  return 0;
}

kiln_value *ox_nonzero_rows(ox *x, kiln_value *a) {
  char ty[256];
  if (!ox_count_rows_type(x, ox_type(a)->rank, ty, sizeof ty)) return NULL;
  return ox_op(x, "nonzero", &a, 1, ty, NULL);
}

/* NonZero: ONNX's [rank, n] is mo.nonzero's [n, rank] transposed. */
int ox_op_NonZero(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  int nout) {
  BEGIN;
  (void)n;
  kiln_value *a = IN(0), *rows = a ? ox_nonzero_rows(x, a) : NULL;
  if (!a) return rc;
  if (!rows || !(out[0]->v = ox_op(x, "transpose", &rows, 1, NULL, "{axis_1 = 0, axis_2 = 1}")))
    return FAILED();
  return 0;
}

/* Compress: the slices along axis (the elements of the flattened input
 * without one) whose condition is true: a gather of the condition's
 * nonzero indices (a shorter condition drops the rest, as ONNX says). */
int ox_op_Compress(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   int nout) {
  BEGIN;
  kiln_value *a = IN(0), *c = a ? IN(1) : NULL;
  if (!c) return rc;
  const ir_type *t = ox_type(a);
  int axis = 0;
  if (ox_attr(n, "axis")) {
    if (!ox_axis(ox_attr_int(n, "axis", 0), t->rank, &axis))
      return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
  } else if (t->rank != 1) {
    const ir_dim *numel = ir_dim_const(x->ir->arena, 1);
    for (int d = 0; numel && d < t->rank; d++) numel = ir_dim_mul(x->ir->arena, numel, t->dims[d]);
    if (!numel || !(a = ox_reshape(x, a, 1, &numel))) return numel ? FAILED() : -1;
  }
  if (ox_type(c)->rank != 1) return ox_fail(x, KILN_ERR_VERIFY, "the condition must be 1-D");
  kiln_value *rows = ox_nonzero_rows(x, c);
  const ir_dim *count = rows ? ox_dim(rows, 0) : NULL;
  kiln_value *idx = rows ? ox_reshape(x, rows, 1, &count) : NULL;
  if (!idx || !(out[0]->v = ox_op(x, "gather", (kiln_value *[]){a, idx}, 2, NULL, "{axis = %d}",
                                  axis)))
    return FAILED();
  return 0;
}

/* ReverseSequence: along time_axis, the first sequence_lens[b] elements of
 * each batch entry b reversed, the rest kept: one gather_elements with
 * index t' = t < len ? len - 1 - t : t. */
int ox_op_ReverseSequence(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                          int nout) {
  BEGIN;
  kiln_value *a = IN(0), *lens = a ? IN(1) : NULL;
  if (!lens) return rc;
  const ir_type *t = ox_type(a);
  int64_t ta = ox_attr_int(n, "time_axis", 0), ba = ox_attr_int(n, "batch_axis", 1);
  if (t->rank < 2 || !((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    return ox_fail(x, KILN_ERR_VERIFY, "time_axis %lld and batch_axis %lld must be 0 and 1 (in "
                   "either order) of an input of rank >= 2", (long long)ta, (long long)ba);
  const ir_type *lt = ox_type(lens);
  if (lt->rank != 1 || (lt->dtype != IR_DT_SI64 && lt->dtype != IR_DT_SI32))
    return ox_fail(x, KILN_ERR_VERIFY, "sequence_lens must be 1-D int64 or int32");
  const ir_dim *dims[IR_MAX_RANK];
  for (int d = 0; d < t->rank; d++)
    dims[d] = d == ba ? t->dims[ba] : ir_dim_const(x->ir->arena, 1);
  kiln_value *len = lt->dtype == IR_DT_SI64 ? lens
                                            : ox_op(x, "cast", &lens, 1, NULL, "{dtype = si64}");
  kiln_value *tt = len ? ox_iota_along(x, t->dims[ta], (int)ta, t->rank) : NULL;
  kiln_value *one = tt ? ox_scalar(x, IR_DT_SI64, 1) : NULL, *rev = NULL, *inside = NULL, *idx;
  if (one && (len = ox_reshape(x, len, t->rank, dims)) && (rev = OP2("sub", len, one)))
    rev = OP2("sub", rev, tt);
  if (rev) inside = OP2("greater", len, tt);
  idx = inside ? ox_op(x, "where", (kiln_value *[]){inside, rev, tt}, 3, NULL, NULL) : NULL;
  char ty[1024];
  if (idx) idx = ox_op(x, "broadcast_to", &idx, 1,
                       ox_type_text(ty, sizeof ty, IR_DT_SI64, t->rank, t->dims), NULL);
  if (!idx || !(out[0]->v = ox_op(x, "gather_elements", (kiln_value *[]){a, idx}, 2, NULL,
                                  "{axis = %lld}", (long long)ta)))
    return FAILED();
  return 0;
}
