/* ops_dft.c - ONNX's DFT (opset 17: axis an attribute; 20: an input) as two
 * matrix products with the DFT matrix, computed in f64; STFT as frames
 * gathered from the signal, windowed, and the same DFT.
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

/* A signal length: a constant (n >= 0) or run-time data (nv, rank-0 si64). */
typedef struct dft_len {
  int64_t n;
  kiln_value *nv;
} dft_len;

static kiln_value *len_value(ox *x, const dft_len *l) {
  return l->n >= 0 ? ox_scalar(x, IR_DT_SI64, (double)l->n) : l->nv;
}

/* C and S ([L, K] f64) for l samples (the axis dim ld), period n, k outputs
 * (dim kd); rows past n zeroed when cut. */
static int dft_matrices(ox *x, kiln_value *lv, const ir_dim *ld, kiln_value *nv, kiln_value *kv,
                        const ir_dim *kd, bool cut, bool inverse, kiln_value **c,
                        kiln_value **s) {
  ir_arena *ar = x->ir->arena;
  const ir_dim *col[2] = {ld, ir_dim_const(ar, 1)}, *row[2] = {ir_dim_const(ar, 1), kd};
  kiln_value *ni = ox_range_to(x, lv, ld), *ki = ox_range_to(x, kv, kd), *p, *ang, *nf, *turn;
  kiln_value *sign;
  if (!ni || !ki || !(ni = ox_reshape(x, ni, 2, col)) || !(ki = ox_reshape(x, ki, 2, row)) ||
      !(p = OP2("mul", ni, ki)) || !(p = OP2("mod", p, nv)) ||
      !(ang = ox_op(x, "cast", &p, 1, NULL, "{dtype = f64}")) ||
      !(turn = ox_scalar(x, IR_DT_F64, TWO_PI)) || !(ang = OP2("mul", ang, turn)) ||
      !(nf = ox_op(x, "cast", &nv, 1, NULL, "{dtype = f64}")) || !(ang = OP2("div", ang, nf)) ||
      !(*c = OP1("cos", ang)) || !(*s = OP1("sin", ang)) ||
      !(sign = ox_scalar(x, IR_DT_F64, inverse ? 1 : -1)) || !(*s = OP2("mul", *s, sign)))
    return -1;
  if (cut) { /* samples past N are cut off */
    kiln_value *keep;
    if (!(keep = OP2("greater", nv, ni)) ||
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

kiln_value *ox_dft(ox *x, kiln_value *a, int ax, int64_t len, kiln_value *len_data,
                   bool inverse, bool onesided) {
  const ir_type *t = ox_type(a);
  int r = t->rank;
  int64_t c, l = -1;
  if (!ir_dim_is_const(t->dims[r - 1], &c)) return NULL;
  ir_dim_is_const(t->dims[ax], &l);
  /* L (the axis), N (len or L) and K as constants or run-time values */
  dft_len L = {l, NULL}, N = {len, len_data};
  if (l < 0) {
    kiln_value *shp = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL);
    kiln_value *k = ox_scalar(x, IR_DT_SI64, ax);
    if (!shp || !k || !(L.nv = ox_op(x, "gather", (kiln_value *[]){shp, k}, 2, NULL,
                                     "{axis = 0}")))
      return NULL;
  }
  if (len < 0 && !len_data) N = L;
  kiln_value *lv = len_value(x, &L), *nv = len_value(x, &N), *kv = nv, *two, *one;
  const ir_dim *kd = N.n >= 0 ? ir_dim_const(x->ir->arena, onesided ? N.n / 2 + 1 : N.n)
                              : onesided ? ox_symbol(x, NULL)
                                         : (N.nv == L.nv ? t->dims[ax] : ox_symbol(x, NULL));
  if (!lv || !nv || !kd) return NULL;
  if (onesided && (!(two = ox_scalar(x, IR_DT_SI64, 2)) || !(one = ox_scalar(x, IR_DT_SI64, 1)) ||
                   !(kv = OP2("floor_div", nv, two)) || !(kv = OP2("add", kv, one))))
    return NULL;
  bool cut = N.n >= 0 && L.n >= 0 && N.n < L.n;
  if (N.n < 0 && N.nv != L.nv) cut = true; /* unknown until run time: mask anyway */
  kiln_value *cm, *sm, *xr, *xi = NULL, *yr, *yi, *u, *y;
  if (dft_matrices(x, lv, t->dims[ax], nv, kv, kd, cut, inverse, &cm, &sm) != 0 ||
      !(xr = part(x, a, 0, ax)) ||
      (c == 2 && !(xi = part(x, a, 1, ax))) || !(yr = OP2("matmul", xr, cm)) ||
      !(yi = OP2("matmul", xr, sm)))
    return NULL;
  if (xi && (!(u = OP2("matmul", xi, sm)) || !(yr = OP2("sub", yr, u)) ||
             !(u = OP2("matmul", xi, cm)) || !(yi = OP2("add", yi, u))))
    return NULL;
  if (inverse && (!(u = ox_op(x, "cast", &nv, 1, NULL, "{dtype = f64}")) ||
                  !(yr = OP2("div", yr, u)) || !(yi = OP2("div", yi, u))))
    return NULL;
  if (!(yr = ox_op(x, "unsqueeze", &yr, 1, NULL, "{axis = -1}")) ||
      !(yi = ox_op(x, "unsqueeze", &yi, 1, NULL, "{axis = -1}")) ||
      !(y = ox_op(x, "concat", (kiln_value *[]){yr, yi}, 2, NULL, "{axis = -1}")) ||
      (t->dtype != IR_DT_F64 &&
       !(y = ox_op(x, "cast", &y, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype)))))
    return NULL;
  if (ax != r - 2) { /* the transformed axis (now r - 2) back to ax */
    char dims[IR_MAX_RANK * 4] = "";
    size_t at = 0;
    for (int d = 0; d < r; d++) {
      int from = d < ax ? d : d == ax ? r - 2 : d < r - 1 ? d - 1 : r - 1;
      at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%d", d ? ", " : "", from);
    }
    if (!(y = ox_op(x, "permute", &y, 1, NULL, "{dims = [%s]}", dims))) return NULL;
  }
  return y;
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
  kiln_value *y = ox_dft(x, a, ax, len, NULL, inverse, onesided);
  if (!y) return FAILED();
  out[0]->v = y;
  return 0;
}

/* rank-0 si64 of optional input i (known: *k set too, else -1) */
static kiln_value *scalar_in(ox *x, ox_val **in, int nin, int i, int64_t *k, int *rc) {
  int cnt;
  *k = -1;
  if (nin <= i || !in[i]) return NULL;
  if (ox_known_consts(in[i], k, 1, &cnt) && cnt == 1) return ox_scalar(x, IR_DT_SI64, (double)*k);
  *k = -1;
  kiln_value *v = ox_in(x, in, nin, i, rc);
  if (!v) return NULL;
  if (ox_type(v)->rank != 0 && !(v = ox_reshape(x, v, 0, NULL))) return NULL;
  return ox_type(v)->dtype == IR_DT_SI64 ? v : ox_op(x, "cast", &v, 1, NULL, "{dtype = si64}");
}

/* STFT: frames of the signal [B, T, c] (frame f is samples f step ..
 * f step + L - 1: one mo.gather of an index matrix), times the window,
 * then the DFT of each frame: [B, F, K, 2], F = (T - L) / step + 1. L is
 * the window's length, else frame_length; frame_step and frame_length may
 * be run-time data (F, L and K are then symbols read before the graph
 * runs). */
int ox_op_STFT(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  (void)nout;
  kiln_value *a = IN(0), *w = NULL, *idx, *fi, *ti, *y, *step, *flv = NULL, *tv, *fv, *one;
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int64_t c, tl = -1, ks, flen = -1, wl;
  if (!ir_dtype_is_float(t->dtype) || t->rank != 3 || !ir_dim_is_const(t->dims[2], &c) ||
      (c != 1 && c != 2))
    return ox_fail(x, KILN_ERR_VERIFY, "STFT's signal must be floats [batch, length, 1 or 2]");
  if (!(step = scalar_in(x, in, nin, 1, &ks, &rc)))
    return rc ? rc : nin < 2 || !in[1] ? ox_fail(x, KILN_ERR_VERIFY, "STFT needs a frame_step")
                                       : FAILED();
  if (nin > 2 && in[2]) {
    if (!(w = IN(2))) return rc;
    if (ox_type(w)->rank != 1 || !ir_dim_is_const(ox_dim(w, 0), &wl))
      return ox_fail(x, KILN_ERR_VERIFY, "STFT's window must be a 1-D tensor of static length");
    flen = wl;
  } else if (!(flv = scalar_in(x, in, nin, 3, &flen, &rc))) {
    return rc ? rc : nin < 4 || !in[3]
                         ? ox_fail(x, KILN_ERR_VERIFY, "STFT needs a window or a frame_length")
                         : FAILED();
  }
  if (flen >= 0) flv = NULL;
  bool onesided = ox_attr_int(n, "onesided", 1) != 0;
  if (onesided && c == 2)
    return ox_fail(x, KILN_ERR_VERIFY, "STFT onesided = 1 needs a real signal ([..., 1])");
  ir_dim_is_const(t->dims[1], &tl);
  ir_arena *ar = x->ir->arena;
  bool fixed = tl >= 0 && flen >= 0 && ks >= 0;
  if (fixed && (flen < 1 || ks < 1 || flen > tl))
    return ox_fail(x, KILN_ERR_VERIFY, "STFT needs 1 <= frame_length (%lld) <= the signal's "
                   "length (%lld) and frame_step (%lld) >= 1", (long long)flen, (long long)tl,
                   (long long)ks);
  const ir_dim *fd = fixed ? ir_dim_const(ar, (tl - flen) / ks + 1) : ox_symbol(x, NULL);
  const ir_dim *ld = flen >= 0 ? ir_dim_const(ar, flen) : ox_symbol(x, NULL);
  kiln_value *lv = flv ? flv : ox_scalar(x, IR_DT_SI64, (double)flen), *shp, *k1;
  if (!fd || !ld || !lv || !(one = ox_scalar(x, IR_DT_SI64, 1))) return FAILED();
  if (tl >= 0) {
    tv = ox_scalar(x, IR_DT_SI64, (double)tl);
  } else {
    tv = (shp = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL)) && (k1 = one)
             ? ox_op(x, "gather", (kiln_value *[]){shp, k1}, 2, NULL, "{axis = 0}")
             : NULL;
  }
  const ir_dim *col[2] = {fd, ir_dim_const(ar, 1)}, *row[2] = {ir_dim_const(ar, 1), ld};
  if (!tv || !(fv = OP2("sub", tv, lv)) || !(fv = OP2("floor_div", fv, step)) ||
      !(fv = OP2("add", fv, one)) || !(fi = ox_range_to(x, fv, fd)) ||
      !(fi = ox_reshape(x, fi, 2, col)) || !(fi = OP2("mul", fi, step)) ||
      !(ti = ox_range_to(x, lv, ld)) || !(ti = ox_reshape(x, ti, 2, row)) ||
      !(idx = OP2("add", fi, ti)) ||
      !(a = ox_op(x, "gather", (kiln_value *[]){a, idx}, 2, NULL, "{axis = 1}")))
    return FAILED();
  if (w) {
    const ir_dim *wd[4] = {row[0], row[0], ld, row[0]};
    if ((ox_type(w)->dtype != t->dtype &&
         !(w = ox_op(x, "cast", &w, 1, NULL, "{dtype = %s}", ir_dtype_name(t->dtype)))) ||
        !(w = ox_reshape(x, w, 4, wd)) || !(a = OP2("mul", a, w)))
      return FAILED();
  }
  if (!(y = ox_dft(x, a, 2, flen, flv, false, onesided))) return FAILED();
  out[0]->v = y;
  return 0;
}
