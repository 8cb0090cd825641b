/* ops_dft.c - ONNX's DFT (opset 17: axis an attribute; 20: an input) as two
 * matrix products with the DFT matrix, computed in f64.
 *
 * Input [..., L, ..., c]: c = 1 (real) or 2 (real, imaginary); the signal
 * axis L is moved last and multiplied by C[n, k] = cos(2 pi (n k mod N) / N)
 * and S[n, k] = s sin(...), s = -1 forward and +1 inverse:
 *   Yr = Xr C - Xi S,  Yi = Xr S + Xi C   (then / N when inverse)
 * for k in [0, K): K = N, or N / 2 + 1 with onesided (real input only).
 * N is dft_length (known at import) or L: rows n >= N of C and S are zero,
 * which truncates the signal, and a longer N reads the missing samples as
 * the zeros ONNX pads with. The matrices are built in the graph (mo.range,
 * integer n k mod N, then cos / sin of an angle below 2 pi), so they cost
 * nothing at import and stay exact to f64 rounding; the sums run in f64
 * (an f32 sum of a few hundred terms misses ONNX's atol near zero) and are
 * cast back to the input's dtype. L must be static. */
#include <stdio.h>

#include "ox.h"

#define TWO_PI 6.283185307179586476925286766559

/* mo.range(0, len) as si64 [len] */
static kiln_value *iota(ox *x, int64_t len) {
  kiln_value *z = ox_scalar(x, IR_DT_SI64, 0), *e = ox_scalar(x, IR_DT_SI64, (double)len);
  kiln_value *one = ox_scalar(x, IR_DT_SI64, 1);
  const ir_dim *d = ir_dim_const(x->ir->arena, len);
  char ty[128];
  if (!z || !e || !one) return NULL;
  return ox_op(x, "range", (kiln_value *[]){z, e, one}, 3,
               ox_type_text(ty, sizeof ty, IR_DT_SI64, 1, &d), NULL);
}

/* C and S ([L, K] f64) for a signal of l samples, period n, k outputs */
static int dft_matrices(ox *x, int64_t l, int64_t n, int64_t k, bool inverse, kiln_value **c,
                        kiln_value **s) {
  ir_arena *ar = x->ir->arena;
  const ir_dim *col[2] = {ir_dim_const(ar, l), ir_dim_const(ar, 1)};
  const ir_dim *row[2] = {ir_dim_const(ar, 1), ir_dim_const(ar, k)};
  kiln_value *ni = iota(x, l), *ki = iota(x, k), *p, *mod, *ang, *step, *sign;
  if (!ni || !ki || !(ni = ox_reshape(x, ni, 2, col)) || !(ki = ox_reshape(x, ki, 2, row)) ||
      !(p = OP2("mul", ni, ki)) || !(mod = ox_scalar(x, IR_DT_SI64, (double)n)) ||
      !(p = OP2("mod", p, mod)) || !(ang = ox_op(x, "cast", &p, 1, NULL, "{dtype = f64}")) ||
      !(step = ox_scalar(x, IR_DT_F64, TWO_PI / (double)n)) || !(ang = OP2("mul", ang, step)) ||
      !(*c = OP1("cos", ang)) || !(*s = OP1("sin", ang)) ||
      !(sign = ox_scalar(x, IR_DT_F64, inverse ? 1 : -1)) || !(*s = OP2("mul", *s, sign)))
    return -1;
  if (n < l) { /* samples past N are cut off */
    kiln_value *keep;
    if (!(keep = OP2("greater", mod, ni)) ||
        !(keep = ox_op(x, "cast", &keep, 1, NULL, "{dtype = f64}")) ||
        !(*c = OP2("mul", *c, keep)) || !(*s = OP2("mul", *s, keep)))
      return -1;
  }
  return 0;
}

/* part `i` (0 real, 1 imaginary) of a [..., c] as f64, signal axis ax last */
static kiln_value *part(ox *x, kiln_value *a, int i, int ax) {
  int r = ox_type(a)->rank;
  kiln_value *k = ox_scalar(x, IR_DT_SI64, i), *p;
  if (!k || !(p = ox_op(x, "gather", (kiln_value *[]){a, k}, 2, NULL, "{axis = %d}", r - 1)) ||
      !(p = ox_op(x, "cast", &p, 1, NULL, "{dtype = f64}")))
    return NULL;
  if (ax == r - 2) return p;
  char dims[IR_MAX_RANK * 4] = "";
  size_t at = 0;
  for (int d = 0; d < r - 1; d++)
    if (d != ax) at += (size_t)snprintf(dims + at, sizeof dims - at, "%d, ", d);
  snprintf(dims + at, sizeof dims - at, "%d", ax);
  return ox_op(x, "permute", &p, 1, NULL, "{dims = [%s]}", dims);
}

/* The signal axis from the attribute (opset < 20) or input 2. */
static int dft_axis(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, int rank, int *ax) {
  int64_t a = 1;
  if (x->opset >= 20) {
    int cnt;
    a = -2;
    if (nin > 2 && in[2] && (!ox_known_consts(in[2], &a, 1, &cnt) || cnt != 1))
      return ox_unsupported(x, n, "an axis computed at run time");
  } else {
    a = ox_attr_int(n, "axis", 1);
  }
  if (a < 0) a += rank;
  if (a < 0 || a > rank - 2)
    return ox_fail(x, KILN_ERR_VERIFY, "DFT axis %lld is out of range for a rank-%d input "
                   "(its last axis holds the real and imaginary parts)", (long long)a, rank);
  *ax = (int)a;
  return 0;
}

int ox_op_DFT(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int r = t->rank, ax = 0;
  int64_t c, l, len;
  if (!ir_dtype_is_float(t->dtype))
    return ox_fail(x, KILN_ERR_VERIFY, "DFT of %s: it takes floats", ir_dtype_name(t->dtype));
  if (r < 2 || !ir_dim_is_const(t->dims[r - 1], &c) || (c != 1 && c != 2))
    return ox_fail(x, KILN_ERR_VERIFY, "DFT input must be [..., 1] (real) or [..., 2] (complex)");
  if ((rc = dft_axis(x, n, in, nin, r, &ax)) != 0) return rc;
  if (!ir_dim_is_const(t->dims[ax], &l)) return ox_unsupported(x, n, "a symbolic signal length");
  len = l;
  if (nin > 1 && in[1]) {
    int cnt;
    if (!ox_known_consts(in[1], &len, 1, &cnt) || cnt != 1)
      return ox_unsupported(x, n, "a dft_length computed at run time");
    if (len < 1) return ox_fail(x, KILN_ERR_VERIFY, "dft_length %lld must be >= 1", (long long)len);
  }
  bool inverse = ox_attr_int(n, "inverse", 0) != 0, onesided = ox_attr_int(n, "onesided", 0) != 0;
  if (onesided && c == 2)
    return ox_fail(x, KILN_ERR_VERIFY, "DFT onesided = 1 needs a real input ([..., 1])");
  if (onesided && inverse) return ox_unsupported(x, n, "an inverse onesided DFT");
  int64_t k = onesided ? len / 2 + 1 : len;
  kiln_value *cm, *sm, *xr, *xi = NULL, *yr, *yi, *u;
  if (dft_matrices(x, l, len, k, inverse, &cm, &sm) != 0 || !(xr = part(x, a, 0, ax)) ||
      (c == 2 && !(xi = part(x, a, 1, ax))) || !(yr = OP2("matmul", xr, cm)) ||
      !(yi = OP2("matmul", xr, sm)))
    return FAILED();
  if (xi && (!(u = OP2("matmul", xi, sm)) || !(yr = OP2("sub", yr, u)) ||
             !(u = OP2("matmul", xi, cm)) || !(yi = OP2("add", yi, u))))
    return FAILED();
  if (inverse && (!(u = ox_scalar(x, IR_DT_F64, (double)len)) || !(yr = OP2("div", yr, u)) ||
                  !(yi = OP2("div", yi, u))))
    return FAILED();
  kiln_value *y;
  if (!(yr = ox_op(x, "unsqueeze", &yr, 1, NULL, "{axis = -1}")) ||
      !(yi = ox_op(x, "unsqueeze", &yi, 1, NULL, "{axis = -1}")) ||
      !(y = ox_op(x, "concat", (kiln_value *[]){yr, yi}, 2, NULL, "{axis = -1}")) ||
      (t->dtype != IR_DT_F64 &&
       !(y = ox_op(x, "cast", &y, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype)))))
    return FAILED();
  if (ax != r - 2) { /* the transformed axis (now r - 2) back to ax */
    char dims[IR_MAX_RANK * 4] = "";
    size_t at = 0;
    for (int d = 0; d < r; d++) {
      int from = d < ax ? d : d == ax ? r - 2 : d < r - 1 ? d - 1 : r - 1;
      at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%d", d ? ", " : "", from);
    }
    if (!(y = ox_op(x, "permute", &y, 1, NULL, "{dims = [%s]}", dims))) return FAILED();
  }
  out[0]->v = y;
  return 0;
}
