/* ops_hyperbolic.c - ONNX's Tan, Sinh, Cosh, Asinh, Acosh, Atanh, Asin,
 * Acos and Atan on floats: mo.atanh, mo.asin, mo.acos and mo.atan directly,
 * the others from exp, log, sqrt, sin and cos. Asinh and Acosh switch to
 * log(2|x|) past |x| = 1e8, where x * x would overflow in f32 long before
 * the result does (and where the two agree to the last bit). */
#include "ox.h"

kiln_value *ox_float_in(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, int *rc) {
  kiln_value *a = ox_in(x, in, nin, 0, rc);
  if (a && !ir_dtype_is_float(ox_type(a)->dtype)) {
    *rc = ox_unsupported(x, n, "%s operands", ir_dtype_name(ox_type(a)->dtype));
    return NULL;
  }
  return a;
}

/* exp(x) and exp(-x). */
static bool exps(ox *x, kiln_value *a, kiln_value **ep, kiln_value **em) {
  return (*ep = OP1("exp", a)) && (*em = OP1("negate", a)) && (*em = OP1("exp", *em));
}

static int finish(ox *x, ox_val **out, kiln_value *v, int nun0) {
  if (!v) return FAILED();
  out[0]->v = v;
  return 0;
}

int ox_op_Tan(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = ox_float_in(x, n, in, nin, &rc), *s, *c;
  if (!a) return rc;
  return finish(x, out, (s = OP1("sin", a)) && (c = OP1("cos", a)) ? OP2("div", s, c) : NULL,
                nun0);
}

static int sinh_cosh(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                     bool cosh) {
  BEGIN;
  kiln_value *a = ox_float_in(x, n, in, nin, &rc), *ep, *em, *h, *r = NULL;
  if (!a) return rc;
  if (exps(x, a, &ep, &em) && (h = ox_scalar(x, ox_type(a)->dtype, 0.5)) &&
      (r = cosh ? OP2("add", ep, em) : OP2("sub", ep, em)))
    r = OP2("mul", r, h);
  return finish(x, out, r, nun0);
}

int ox_op_Sinh(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return sinh_cosh(x, n, in, nin, out, false);
}

int ox_op_Cosh(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return sinh_cosh(x, n, in, nin, out, true);
}

/* log(m + sqrt(m * m + s)) for m = |x| (asinh, s = 1) or x (acosh, s = -1),
 * log(2 m) past 1e8; asinh takes x's sign back. */
static int inverse_hyperbolic(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin,
                              ox_val **out, bool acosh) {
  BEGIN;
  kiln_value *a = ox_float_in(x, n, in, nin, &rc);
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  kiln_value *m = acosh ? a : OP1("abs", a), *s = ox_scalar(x, dt, acosh ? -1 : 1),
             *big = ox_scalar(x, dt, 1e8), *ln2 = ox_scalar(x, dt, 0.69314718055994530942);
  kiln_value *q, *near, *far, *is_far, *r = NULL;
  if (m && s && big && ln2 && (q = OP2("mul", m, m)) && (q = OP2("add", q, s)) &&
      (q = OP1("sqrt", q)) && (q = OP2("add", m, q)) && (near = OP1("log", q)) &&
      (far = OP1("log", m)) && (far = OP2("add", far, ln2)) &&
      (is_far = OP2("greater", m, big)) &&
      (r = ox_op(x, "where", (kiln_value *[]){is_far, far, near}, 3, NULL, NULL)) && !acosh) {
    /* x's sign: -r where x < 0 */
    kiln_value *z = ox_scalar(x, dt, 0), *neg, *nr;
    r = z && (neg = OP2("greater", z, a)) && (nr = OP1("negate", r))
            ? ox_op(x, "where", (kiln_value *[]){neg, nr, r}, 3, NULL, NULL)
            : NULL;
  }
  return finish(x, out, r, nun0);
}

int ox_op_Asinh(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return inverse_hyperbolic(x, n, in, nin, out, false);
}

int ox_op_Acosh(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return inverse_hyperbolic(x, n, in, nin, out, true);
}

/* kiln's own unary op `op` on a float operand. */
static int direct(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  const char *op) {
  BEGIN;
  kiln_value *a = ox_float_in(x, n, in, nin, &rc);
  if (!a) return rc;
  return finish(x, out, OP1(op, a), nun0);
}

int ox_op_Atanh(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return direct(x, n, in, nin, out, "atanh");
}

int ox_op_Asin(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return direct(x, n, in, nin, out, "asin");
}

int ox_op_Acos(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return direct(x, n, in, nin, out, "acos");
}

int ox_op_Atan(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  return direct(x, n, in, nin, out, "atan");
}
