/* ops_unique.c - ONNX Unique over the flattened input (no axis; an axis is
 * refused by name), from a stable argsort and mo.nonzero:
 *   perm = argsort(x), s = x[perm]            (stable: equal values keep
 *                                              their order of occurrence)
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

int ox_op_Unique(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  if (ox_attr(n, "axis")) return ox_unsupported(x, n, "an axis (unique slices)");
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  const ir_dim *len = ir_dim_const(x->ir->arena, 1);
  for (int d = 0; len && d < t->rank; d++) len = ir_dim_mul(x->ir->arena, len, t->dims[d]);
  if (!len) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  int64_t one = 1, cnt;
  if (ir_dim_is_const(len, &cnt) && cnt == 0)
    return ox_unsupported(x, n, "an empty input");
  kiln_value *flat = t->rank == 1 ? a : ox_reshape(x, a, 1, &len);
  kiln_value *perm = flat ? argsort(x, flat) : NULL, *s = take(x, flat, perm);
  /* s[1:] != s[:-1] */
  kiln_value *rest = s ? tail(x, s) : NULL, *head = NULL;
  if (rest) head = ox_op(x, "slice_tensor", &s, 1, NULL, "{start = [0], step = [1], stop = [-1]}");
  kiln_value *diff = head ? OP2("not_equal", rest, head) : NULL;
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
  kiln_value *total = flat ? OP1("shape_to_tensor", flat) : NULL;
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
  kiln_value *res[4] = {y, idx, inv, counts};
  for (int k = 0; k < nout && k < 4; k++) out[k]->v = res[k];
  return 0;
}
