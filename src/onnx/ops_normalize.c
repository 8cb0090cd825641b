/* ops_normalize.c - ONNX's MeanVarianceNormalization and LRN (local
 * response normalization across channels), composed from kiln's
 * reductions, pad, slices and elementwise ops.
 *   MVN: y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), E over `axes`
 *        (default 0, 2, 3), as ONNX's function body defines it.
 *   LRN: y = x / (bias + alpha / size * sum of x^2 over the channels
 *        c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2))^beta. */
#include <stdio.h>

#include "ox.h"

int ox_op_MeanVarianceNormalization(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                                    ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = ox_float_in(x, n, in, nin, &rc);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  static const int64_t dflt[3] = {0, 2, 3};
  int na = 0;
  const int64_t *axes = ox_attr_ints(n, "axes", &na);
  if (!axes) axes = dflt, na = 3;
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < na; i++) {
    int ax;
    if (!ox_axis(axes[i], t->rank, &ax) || seen[ax])
      return ox_fail(x, KILN_ERR_VERIFY, "axes[%d] = %lld is out of range or repeated for rank %d",
                     i, (long long)axes[i], t->rank);
    seen[ax] = true;
  }
  kiln_value *m = a, *sq = OP2("mul", a, a), *m2 = sq;
  for (int ax = 0; ax < t->rank; ax++)
    if (seen[ax] && m && m2) {
      m = ox_op(x, "mean", &m, 1, NULL, "{axis = %d}", ax);
      m2 = m ? ox_op(x, "mean", &m2, 1, NULL, "{axis = %d}", ax) : NULL;
    }
  kiln_value *mm = m && m2 ? OP2("mul", m, m) : NULL, *var = mm ? OP2("sub", m2, mm) : NULL;
  kiln_value *sd = var ? OP1("sqrt", var) : NULL, *eps = sd ? ox_scalar(x, t->dtype, 1e-9) : NULL;
  kiln_value *d = eps ? OP2("sub", a, m) : NULL, *den = d ? OP2("add", sd, eps) : NULL;
  kiln_value *y = den ? OP2("div", d, den) : NULL;
  if (!y) return FAILED();
  out[0]->v = y;
  return 0;
}

int ox_op_LRN(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = ox_float_in(x, n, in, nin, &rc);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int64_t size = ox_attr_int(n, "size", 0);
  if (size < 1 || size > 1024)
    return ox_fail(x, KILN_ERR_VERIFY, "size is %lld: it must be 1 to 1024", (long long)size);
  if (t->rank < 3) return ox_fail(x, KILN_ERR_VERIFY, "X must be N x C x D1 ... (rank >= 3)");
  double alpha = ox_attr_float(n, "alpha", 1e-4), beta = ox_attr_float(n, "beta", 0.75);
  double bias = ox_attr_float(n, "bias", 1.0);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  char pads[512]; /* (before, after) per axis: the channel axis only */
  size_t k = 0;
  for (int i = 0; i < 2 * t->rank; i++)
    k += (size_t)snprintf(pads + k, sizeof pads - k, "%s%lld", i ? ", " : "",
                          (long long)(i == 2 ? lo : i == 3 ? hi : 0));
  kiln_value *sq = OP2("mul", a, a), *p = NULL, *sum = NULL;
  if (sq) p = ox_op(x, "pad", &sq, 1, NULL, "{mode = \"constant\", paddings = [%s], value = 0.0}",
                    pads);
  /* the window's channels: slice o of the padded squares, o = 0 .. size - 1 */
  for (int64_t o = 0; p && o < size; o++) {
    int64_t stop = o - size + 1; /* from the end; 0 means to the end */
    kiln_value *s = ox_op(x, "slice_tensor", &p, 1, NULL,
                          "{start = [0, %lld], step = [1, 1], stop = [%lld, %lld]}",
                          (long long)o, (long long)INT64_MAX, (long long)(stop ? stop : INT64_MAX));
    sum = !s ? NULL : sum ? OP2("add", sum, s) : s;
    if (!sum) p = NULL;
  }
  kiln_value *c = sum ? ox_scalar(x, t->dtype, alpha / (double)size) : NULL;
  kiln_value *b = c ? ox_scalar(x, t->dtype, bias) : NULL;
  kiln_value *e = b ? ox_scalar(x, t->dtype, beta) : NULL;
  kiln_value *den = e ? OP2("mul", sum, c) : NULL;
  if (den) den = OP2("add", den, b);
  if (den) den = OP2("pow", den, e);
  kiln_value *y = den ? OP2("div", a, den) : NULL;
  if (!y) return FAILED();
  out[0]->v = y;
  return 0;
}
