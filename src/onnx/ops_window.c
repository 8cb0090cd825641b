/* ops_window.c - ONNX's window functions (opset 17): HannWindow,
 * HammingWindow and BlackmanWindow of length `size`, each a sum of cosines
 *   w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),  n = 0 .. size - 1
 * with N = size (periodic, the default) or size - 1 (symmetric), computed
 * in f64 and cast to output_datatype. size is known at import, or a scalar
 * graph input or computed value (mo.range then takes its length from the
 * data, ir/shape.h). */
#include <stdio.h>

#include "ox.h"

#define TWO_PI 6.283185307179586476925286766559

static int window(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  const double a[3]) {
  BEGIN;
  if (nin < 1 || !in[0]) return ox_fail(x, KILN_ERR_VERIFY, "the size input is absent");
  int64_t len = -1;
  int cnt;
  if (!ox_known_consts(in[0], &len, 1, &cnt) || cnt != 1) len = -1;
  kiln_value *size = IN(0);
  if (!size) return rc;
  const ir_type *st = ox_type(size);
  if (st->dtype != IR_DT_SI32 && st->dtype != IR_DT_SI64)
    return ox_fail(x, KILN_ERR_VERIFY, "size is %s, not int32 or int64", ir_dtype_name(st->dtype));
  if (st->rank != 0)
    return ox_fail(x, KILN_ERR_VERIFY, "size must be a scalar (rank 0), not of rank %d",
                   st->rank);
  ir_dtype odt;
  int64_t onnx_dt = ox_attr_int(n, "output_datatype", 1);
  if (!ox_dtype((int32_t)onnx_dt, &odt))
    return ox_fail(x, KILN_ERR_VERIFY, "output_datatype %lld is not a tensor element type",
                   (long long)onnx_dt);
  bool periodic = ox_attr_int(n, "periodic", 1) != 0;
  const ir_dim *d = len >= 0 ? ir_dim_const(x->ir->arena, len) : ox_symbol(x, NULL);
  kiln_value *zero = ox_scalar(x, st->dtype, 0), *one = ox_scalar(x, st->dtype, 1);
  if (!d || !zero || !one) return FAILED();
  char ty[256];
  kiln_value *idx = ox_op(x, "range", (kiln_value *[]){zero, size, one}, 3,
                          ox_type_text(ty, sizeof ty, st->dtype, 1, &d), NULL);
  kiln_value *nf = idx ? ox_op(x, "cast", &idx, 1, NULL, "{dtype = f64}") : NULL;
  kiln_value *big = nf ? ox_op(x, "cast", &size, 1, NULL, "{dtype = f64}") : NULL;
  if (big && !periodic) {
    kiln_value *k1 = ox_scalar(x, IR_DT_F64, 1);
    big = k1 ? OP2("sub", big, k1) : NULL;
  }
  kiln_value *turn = ox_scalar(x, IR_DT_F64, TWO_PI), *t = big && turn ? OP2("div", nf, big) : NULL;
  if (t) t = OP2("mul", t, turn);
  kiln_value *c1 = t ? OP1("cos", t) : NULL, *w = NULL;
  kiln_value *k0 = ox_scalar(x, IR_DT_F64, a[0]), *k1 = ox_scalar(x, IR_DT_F64, a[1]);
  if (c1 && k0 && k1 && (c1 = OP2("mul", c1, k1))) w = OP2("sub", k0, c1);
  if (w && a[2] != 0) {
    kiln_value *two = ox_scalar(x, IR_DT_F64, 2), *k2 = ox_scalar(x, IR_DT_F64, a[2]);
    kiln_value *t2 = two && k2 ? OP2("mul", t, two) : NULL;
    kiln_value *c2 = t2 ? OP1("cos", t2) : NULL;
    w = c2 && (c2 = OP2("mul", c2, k2)) ? OP2("add", w, c2) : NULL;
  }
  if (w && odt != IR_DT_F64)
    w = ox_op(x, "cast", &w, 1, NULL, "{dtype = %s}", ir_dtype_name(odt));
  if (!w) return FAILED();
  out[0]->v = w;
  return 0;
}

int ox_op_HannWindow(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                     int nout) {
  static const double a[3] = {0.5, 0.5, 0};
  return window(x, n, in, nin, out, a);
}

int ox_op_HammingWindow(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout) {
  static const double a[3] = {25.0 / 46.0, 21.0 / 46.0, 0};
  return window(x, n, in, nin, out, a);
}

int ox_op_BlackmanWindow(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                         int nout) {
  static const double a[3] = {0.42, 0.5, 0.08};
  return window(x, n, in, nin, out, a);
}
