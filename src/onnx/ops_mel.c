/* ops_mel.c - ONNX's MelWeightMatrix: the [dft_length / 2 + 1, num_mel_bins]
 * matrix of triangular mel filters, computed in the graph from its five
 * scalar inputs (known at import or run-time data: the dims are then
 * symbols mo.range reads from the data before the graph runs).
 *
 * As ONNX's reference computes it: the edges in mel, 2595 log10(1 + f /
 * 700), and the step (high - low) / (num_mel_bins + 2) in the edges' float
 * type; the num_mel_bins + 2 band points k step + low back in hertz,
 * 700 (10^(m / 2595) - 1), and to spectrogram bins floor((dft_length + 1)
 * hz / sample_rate) in f64. Filter i rises from bin l = b[i] to c = b[i + 1]
 * ((j - l) / (c - l), 1 at c) and falls to h = b[i + 2] ((h - j) / (h - c));
 * elsewhere 0. Cast to output_datatype (f32 by default). Bins past the
 * matrix (an upper edge above the Nyquist frequency) fall outside it,
 * where ONNX's reference fails with an index error. */
#include <math.h>
#include <stdio.h>

#include "ox.h"

#define OP3(name, a, b, c) ox_op(x, name, (kiln_value *[]){a, b, c}, 3, NULL, NULL)

/* input i as a rank-0 value of dtype dt; *known its value when known at
 * import (else -1, integers only) */
static kiln_value *scalar(ox *x, ox_val **in, int nin, int i, ir_dtype dt, int64_t *known,
                          int *rc) {
  int cnt;
  if (known) *known = -1;
  if (known && i < nin && in[i] && ox_known_consts(in[i], known, 1, &cnt) && cnt == 1)
    return ox_scalar(x, dt, (double)*known);
  if (known) *known = -1;
  kiln_value *v = ox_in(x, in, nin, i, rc);
  if (!v) return NULL;
  if (ox_type(v)->rank != 0 && !(v = ox_reshape(x, v, 0, NULL))) return NULL;
  return ox_type(v)->dtype == dt ? v
                                 : ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(dt));
}

/* 2595 log10(1 + hz / 700) in ft (the log in f64, rounded once) */
static kiln_value *to_mel(ox *x, kiln_value *hz, ir_dtype ft) {
  kiln_value *k700 = ox_scalar(x, ft, 700), *one = ox_scalar(x, ft, 1), *v, *l10;
  if (!k700 || !one || !(v = OP2("div", hz, k700)) || !(v = OP2("add", v, one)) ||
      !(v = ox_op(x, "cast", &v, 1, NULL, "{dtype = f64}")) || !(v = OP1("log", v)) ||
      !(l10 = ox_scalar(x, IR_DT_F64, log(10.0))) || !(v = OP2("div", v, l10)) ||
      !(v = ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(ft))))
    return NULL;
  kiln_value *k = ox_scalar(x, ft, 2595);
  return k ? OP2("mul", k, v) : NULL;
}

/* b[i + off] for i in [0, m) as f64 [1, m] */
static kiln_value *band(ox *x, kiln_value *b, kiln_value *im, int off, const ir_dim *md) {
  kiln_value *k = ox_scalar(x, IR_DT_SI64, off), *i, *v;
  const ir_dim *row[2] = {ir_dim_const(x->ir->arena, 1), md};
  if (!k || !(i = OP2("add", im, k)) ||
      !(v = ox_op(x, "gather", (kiln_value *[]){b, i}, 2, NULL, "{axis = 0}")) ||
      !(v = ox_op(x, "cast", &v, 1, NULL, "{dtype = f64}")))
    return NULL;
  return ox_reshape(x, v, 2, row);
}

int ox_op_MelWeightMatrix(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                          int nout) {
  BEGIN;
  (void)nout;
  if (nin < 5) return ox_fail(x, KILN_ERR_VERIFY, "MelWeightMatrix takes 5 inputs, not %d", nin);
  kiln_value *lo0 = IN(3);
  if (!lo0) return rc;
  ir_dtype ft = ox_type(lo0)->dtype, odt;
  if (!ir_dtype_is_float(ft))
    return ox_fail(x, KILN_ERR_VERIFY, "lower_edge_hertz is %s, not a float", ir_dtype_name(ft));
  if (!ox_dtype((int32_t)ox_attr_int(n, "output_datatype", 1), &odt))
    return ox_fail(x, KILN_ERR_VERIFY, "output_datatype %lld is not a tensor element type",
                   (long long)ox_attr_int(n, "output_datatype", 1));
  int64_t km, kd;
  kiln_value *m = scalar(x, in, nin, 0, IR_DT_SI64, &km, &rc);
  kiln_value *d = m ? scalar(x, in, nin, 1, IR_DT_SI64, &kd, &rc) : NULL;
  kiln_value *sr = d ? scalar(x, in, nin, 2, IR_DT_F64, NULL, &rc) : NULL;
  kiln_value *lo = sr ? scalar(x, in, nin, 3, ft, NULL, &rc) : NULL;
  kiln_value *hi = lo ? scalar(x, in, nin, 4, ft, NULL, &rc) : NULL;
  if (!hi) return rc ? rc : FAILED();
  if ((km >= 0 && km < 1) || (kd >= 0 && kd < 1))
    return ox_fail(x, KILN_ERR_VERIFY, "num_mel_bins and dft_length must be >= 1");
  ir_arena *ar = x->ir->arena;
  const ir_dim *md = km >= 0 ? ir_dim_const(ar, km) : ox_symbol(x, NULL);
  const ir_dim *pd = km >= 0 ? ir_dim_const(ar, km + 2) : ox_symbol(x, NULL);
  const ir_dim *sd = kd >= 0 ? ir_dim_const(ar, kd / 2 + 1) : ox_symbol(x, NULL);
  kiln_value *two = ox_scalar(x, IR_DT_SI64, 2), *one = ox_scalar(x, IR_DT_SI64, 1);
  kiln_value *p, *s, *lm, *hm, *step, *pf, *b, *t, *j, *im, *l, *c, *h, *v;
  if (!md || !pd || !sd || !two || !one || !(p = OP2("add", m, two)) ||
      !(s = OP2("floor_div", d, two)) || !(s = OP2("add", s, one)) ||
      !(lm = to_mel(x, lo, ft)) || !(hm = to_mel(x, hi, ft)) || !(step = OP2("sub", hm, lm)) ||
      !(pf = ox_op(x, "cast", &p, 1, NULL, "{dtype = %s}", ir_dtype_name(ft))) ||
      !(step = OP2("div", step, pf)))
    return FAILED();
  /* band points in hertz, then in bins (f64) */
  kiln_value *k2595 = ox_scalar(x, IR_DT_F64, 2595), *k10 = ox_scalar(x, IR_DT_F64, 10);
  kiln_value *k700 = ox_scalar(x, IR_DT_F64, 700), *f1 = ox_scalar(x, IR_DT_F64, 1);
  if (!k2595 || !k10 || !k700 || !f1 || !(b = ox_range_to(x, p, pd)) ||
      !(b = ox_op(x, "cast", &b, 1, NULL, "{dtype = f64}")) ||
      !(t = ox_op(x, "cast", &step, 1, NULL, "{dtype = f64}")) || !(b = OP2("mul", b, t)) ||
      !(t = ox_op(x, "cast", &lm, 1, NULL, "{dtype = f64}")) || !(b = OP2("add", b, t)) ||
      !(b = OP2("div", b, k2595)) || !(b = OP2("pow", k10, b)) || !(b = OP2("sub", b, f1)) ||
      !(b = OP2("mul", k700, b)) || !(t = ox_op(x, "cast", &d, 1, NULL, "{dtype = f64}")) ||
      !(t = OP2("add", t, f1)) || !(b = OP2("mul", t, b)) || !(b = OP2("floor_div", b, sr)) ||
      !(b = ox_op(x, "cast", &b, 1, NULL, "{dtype = si64}")))
    return FAILED();
  /* the filters: j [S, 1] against l, c, h [1, M] */
  const ir_dim *col[2] = {sd, ir_dim_const(ar, 1)};
  if (!(im = ox_range_to(x, m, md)) || !(l = band(x, b, im, 0, md)) ||
      !(c = band(x, b, im, 1, md)) || !(h = band(x, b, im, 2, md)) ||
      !(j = ox_range_to(x, s, sd)) || !(j = ox_reshape(x, j, 2, col)) ||
      !(j = ox_op(x, "cast", &j, 1, NULL, "{dtype = f64}")))
    return FAILED();
  kiln_value *up, *upv, *dn, *dnv, *den, *z, *g1, *g2;
  if (!(z = ox_scalar(x, IR_DT_F64, 0)) ||
      /* rising: l <= j <= c, (j - l) / max(c - l, 1) (c == l: only j == c, 1) */
      !(g1 = OP2("greater_equal", j, l)) || !(g2 = OP2("greater_equal", c, j)) ||
      !(up = OP2("logical_and", g1, g2)) || !(den = OP2("sub", c, l)) ||
      !(den = OP2("max", den, f1)) || !(upv = OP2("sub", j, l)) || !(upv = OP2("div", upv, den)) ||
      !(g1 = OP2("equal", c, l)) || !(upv = OP3("where", g1, f1, upv)) ||
      /* falling: c < j < h, (h - j) / (h - c) */
      !(g1 = OP2("greater", j, c)) || !(g2 = OP2("greater", h, j)) ||
      !(dn = OP2("logical_and", g1, g2)) || !(den = OP2("sub", h, c)) ||
      !(den = OP2("max", den, f1)) || !(dnv = OP2("sub", h, j)) || !(dnv = OP2("div", dnv, den)) ||
      !(v = OP3("where", dn, dnv, z)) || !(v = OP3("where", up, upv, v)) ||
      (odt != IR_DT_F64 &&
       !(v = ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(odt)))))
    return FAILED();
  out[0]->v = v;
  return 0;
}
