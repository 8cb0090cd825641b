/* ops_unique.c - ONNX Unique over the flattened input, or over the slices
 * along `axis` (each slice a row of a [len, m] matrix, m static; the
 * flattened input is m = 1), from stable argsorts and mo.nonzero:
 *   perm = the rows' lexicographic order      (a stable argsort per column,
 *                                              last column first: equal
 *                                              rows keep their order of
 *                                              occurrence)
 *   s = rows[perm]
 *   first[i] = i == 0 or s[i] != s[i - 1];    pos = nonzero(first)  [n]
 *   Y = s[pos], indices = perm[pos]           (a group's first occurrence)
 *   group[i] = cumsum(first)[i] - 1;          inverse = group[argsort(perm)]
 *   counts = (pos[1:] ++ [len]) - pos
 * sorted = 0 orders the groups by first occurrence: order = argsort(indices)
 * permutes Y, indices and counts, and the inverse maps through its inverse. */
#include <stdio.h>

#include "ox.h"

static kiln_value *argsort(ox *x, kiln_value *v) {
  return ox_op(x, "argsort", &v, 1, NULL, "{ascending = true, axis = 0}");
}

static kiln_value *take(ox *x, kiln_value *v, kiln_value *idx) {
  return v && idx ? ox_op(x, "gather", (kiln_value *[]){v, idx}, 2, NULL, "{axis = 0}") : NULL;
}

/* v[1:] of a rank-1 value. */
static kiln_value *tail(ox *x, kiln_value *v) {
  return ox_op(x, "slice_tensor", &v, 1, NULL, "{start = [1], step = [1], stop = [%lld]}",
               (long long)INT64_MAX);
}

/* The stable lexicographic order of the rows of r ([n, m], m static):
 * stable argsorts from the last column to the first (LSD), each of the
 * column as the rows stand so far. */
static kiln_value *row_order(ox *x, kiln_value *r, int64_t m) {
  kiln_value *perm = NULL;
  for (int64_t j = m - 1; j >= 0; j--) {
    kiln_value *k = ox_scalar(x, IR_DT_SI64, (double)j), *col, *p;
    if (!k || !(col = ox_op(x, "gather", (kiln_value *[]){r, k}, 2, NULL, "{axis = 1}")) ||
        (perm && !(col = take(x, col, perm))) || !(p = argsort(x, col)))
      return NULL;
    perm = perm ? take(x, perm, p) : p;
    if (!perm) return NULL;
  }
  return perm;
}

/* 1 where row i of s ([n, m]) differs from row i - 1 ([n - 1], bool) */
static kiln_value *rows_differ(ox *x, kiln_value *s, int64_t m) {
  kiln_value *rest, *head, *d;
  if (!(rest = ox_op(x, "slice_tensor", &s, 1, NULL,
                     "{start = [1, 0], step = [1, 1], stop = [%lld, %lld]}", (long long)INT64_MAX,
                     (long long)INT64_MAX)) ||
      !(head = ox_op(x, "slice_tensor", &s, 1, NULL,
                              "{start = [0, 0], step = [1, 1], stop = [-1, %lld]}",
                              (long long)INT64_MAX)) ||
      !(d = OP2("not_equal", rest, head)))
    return NULL;
  if (m == 1) return ox_op(x, "squeeze", &d, 1, NULL, "{axis = 1}");
  kiln_value *z = ox_scalar(x, IR_DT_SI32, 0);
  if (!z || !(d = ox_op(x, "cast", &d, 1, NULL, "{dtype = si32}")) ||
      !(d = ox_op(x, "max", &d, 1, NULL, "{axis = 1}")) ||
      !(d = ox_op(x, "squeeze", &d, 1, NULL, "{axis = 1}")))
    return NULL;
  return OP2("greater", d, z);
}

int ox_op_Unique(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int ax = -1;
  if (ox_attr(n, "axis") && !ox_axis(ox_attr_int(n, "axis", 0), t->rank, &ax))
    return ox_fail(x, KILN_ERR_VERIFY, "axis %lld is out of range for rank %d",
                   (long long)ox_attr_int(n, "axis", 0), t->rank);
  /* the slices as the rows of a [len, m] matrix: m = 1 without an axis */
  ir_arena *ar = x->ir->arena;
  const ir_dim *len = ir_dim_const(ar, 1), *width = ir_dim_const(ar, 1), *moved[IR_MAX_RANK];
  int64_t m = 1, cnt;
  kiln_value *src = a;
  if (ax >= 0) {
    char dims[IR_MAX_RANK * 4];
    size_t at = (size_t)snprintf(dims, sizeof dims, "%d", ax);
    moved[0] = len = t->dims[ax];
    for (int d = 0, k = 1; d < t->rank; d++)
      if (d != ax) {
        at += (size_t)snprintf(dims + at, sizeof dims - at, ", %d", d);
        moved[k++] = t->dims[d];
        width = ir_dim_mul(ar, width, t->dims[d]);
      }
    if (!width || !ir_dim_is_const(width, &m))
      return ox_unsupported(x, n, "slices of a symbolic size");
    if (m == 0) return ox_unsupported(x, n, "empty slices");
    if (ax != 0 && !(src = ox_op(x, "permute", &src, 1, NULL, "{dims = [%s]}", dims)))
      return FAILED();
  } else {
    for (int d = 0; len && d < t->rank; d++) len = ir_dim_mul(ar, len, t->dims[d]);
  }
  if (!len) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (ir_dim_is_const(len, &cnt) && cnt == 0)
    return ox_unsupported(x, n, "an empty input");
  const ir_dim *rd[2] = {len, width};
  kiln_value *flat = ox_reshape(x, src, 2, rd);
  kiln_value *perm = flat ? row_order(x, flat, m) : NULL, *s = take(x, flat, perm);
  kiln_value *diff = s ? rows_differ(x, s, m) : NULL;
  int64_t one = 1;
  uint8_t yes = 1;
  kiln_value *t1 = diff ? kiln_graph_add_constant(x->g, KILN_BOOL, 1, &one, &yes, x->st) : NULL;
  kiln_value *first = t1 ? ox_op(x, "concat", (kiln_value *[]){t1, diff}, 2, NULL, "{axis = 0}")
                         : NULL;
  kiln_value *rows = first ? ox_nonzero_rows(x, first) : NULL;
  const ir_dim *nu = rows ? ox_dim(rows, 0) : NULL;
  kiln_value *pos = rows ? ox_reshape(x, rows, 1, &nu) : NULL;
  kiln_value *y = take(x, s, pos), *idx = take(x, perm, pos);
  kiln_value *f64 = first ? ox_op(x, "cast", &first, 1, NULL, "{dtype = si64}") : NULL;
  kiln_value *grp = f64 ? ox_op(x, "cumsum", &f64, 1, NULL, "{axis = 0, exclusive = false, "
                                "reverse = false}") : NULL;
  kiln_value *k1 = grp ? ox_scalar(x, IR_DT_SI64, 1) : NULL;
  if (k1) grp = OP2("sub", grp, k1);
  kiln_value *inv = take(x, grp, perm ? argsort(x, perm) : NULL);
  kiln_value *total = perm ? OP1("shape_to_tensor", perm) : NULL;
  kiln_value *nxt = pos && total ? ox_op(x, "concat", (kiln_value *[]){tail(x, pos), total}, 2,
                                         NULL, "{axis = 0}") : NULL;
  kiln_value *counts = nxt ? OP2("sub", nxt, pos) : NULL;
  if (!y || !idx || !inv || !counts) return FAILED();
  if (ox_attr_int(n, "sorted", 1) == 0) { /* groups in order of first occurrence */
    kiln_value *order = argsort(x, idx), *rank = order ? argsort(x, order) : NULL;
    y = take(x, y, order);
    idx = take(x, idx, order);
    counts = take(x, counts, order);
    inv = take(x, rank, inv);
    if (!y || !idx || !counts || !inv) return FAILED();
  }
  /* Y: the rows back in the input's layout, [unique, ...] or [unique] */
  const ir_dim *nu_dim = ox_dim(y, 0);
  if (ax < 0) {
    y = ox_reshape(x, y, 1, &nu_dim);
  } else {
    moved[0] = nu_dim;
    char dims[IR_MAX_RANK * 4] = "";
    size_t at = 0;
    for (int d = 0; d < t->rank; d++) /* axis 0 back to ax */
      at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%d", d ? ", " : "",
                             d < ax ? d + 1 : d == ax ? 0 : d);
    if ((y = ox_reshape(x, y, t->rank, moved)) && ax != 0)
      y = ox_op(x, "permute", &y, 1, NULL, "{dims = [%s]}", dims);
  }
  if (!y) return FAILED();
  kiln_value *res[4] = {y, idx, inv, counts};
  for (int k = 0; k < nout && k < 4; k++) out[k]->v = res[k];
  return 0;
}
