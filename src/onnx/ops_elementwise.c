/* ops_elementwise.c - ONNX elementwise ops: unary math, binary arithmetic
 * and comparisons with multidirectional (numpy) broadcasting, logicals,
 * variadic Max / Min / Sum / Mean, Clip, Where, Cast, and the activations
 * kiln has no single op for, composed exactly as ONNX defines them
 * (LeakyRelu = max(x, 0) + alpha * min(x, 0), ...). Integer ops over data
 * known at import fold there (ops_fold.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ox.h"

#define OP3(name, a, b, c) ox_op(x, name, (kiln_value *[]){a, b, c}, 3, NULL, NULL)
#define K(v) ox_scalar(x, dt, (v))
/* rc after a NULL from the builder: -1 unless an unsupported node was recorded */
#define DONE(val)                                                                                 \
  do {                                                                                            \
    kiln_value *r_ = (val);                                                                       \
    if (!r_) return rc ? rc : FAILED();                                                           \
    out[0]->v = r_;                                                                               \
    return 0;                                                                                     \
  } while (0)

static bool is_float(const kiln_value *v) { return ir_dtype_is_float(ox_type(v)->dtype); }

static int unary(ox *x, ox_val **in, int nin, ox_val **out, const char *op) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  DONE(OP1(op, a));
}

static int binary(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  const char *op, bool swap) {
  BEGIN;
  int f = ox_fold_elementwise(x, n, in, nin, out[0]);
  if (f != 2) return f;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  DONE(swap ? OP2(op, b, a) : OP2(op, a, b));
}

#define UNARY(Name, op)                                                                           \
  int ox_op_##Name(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,           \
                   int nout) {                                                                    \
    int f = ox_fold_elementwise(x, n, in, nin, out[0]);                                           \
    return f != 2 ? f : unary(x, in, nin, out, op);                                               \
  }
#define BINARY(Name, op, swap)                                                                    \
  int ox_op_##Name(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,           \
                   int nout) {                                                                    \
    return binary(x, n, in, nin, out, op, swap);                                                  \
  }

UNARY(Neg, "negate")
UNARY(Abs, "abs")
UNARY(Exp, "exp")
UNARY(Log, "log")
UNARY(Sqrt, "sqrt")
UNARY(Tanh, "tanh")
UNARY(Sigmoid, "sigmoid")
UNARY(Relu, "relu")
UNARY(Erf, "erf")
UNARY(Sin, "sin")
UNARY(Cos, "cos")
UNARY(Floor, "floor")
UNARY(Round, "round")
UNARY(IsNaN, "is_nan")
UNARY(Not, "logical_not")
BINARY(Add, "add", false)
BINARY(Sub, "sub", false)
BINARY(Mul, "mul", false)
BINARY(And, "logical_and", false)
BINARY(Or, "logical_or", false)
BINARY(Xor, "logical_xor", false)
BINARY(Equal, "equal", false)
BINARY(Greater, "greater", false)
BINARY(Less, "greater", true)
BINARY(GreaterOrEqual, "greater_equal", false)
BINARY(LessOrEqual, "greater_equal", true)

/* v cast to dt; NULL when v is (a failed op's) NULL. */
static kiln_value *as_dtype(ox *x, kiln_value *v, ir_dtype dt) {
  return v ? ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(dt)) : NULL;
}

/* 1 where a and b differ in sign (a < 0 xor b < 0), as a's dtype. */
static kiln_value *signs_differ(ox *x, kiln_value *a, kiln_value *b) {
  kiln_value *z = as_dtype(x, ox_scalar(x, IR_DT_SI32, 0), ox_type(a)->dtype), *na, *nb;
  if (!z || !(na = OP2("greater", z, a)) || !(nb = OP2("greater", z, b))) return NULL;
  return as_dtype(x, OP2("not_equal", na, nb), ox_type(a)->dtype);
}

/* 1 where r (a remainder) is nonzero and a and b differ in sign, as a's
 * dtype: where a truncating division or remainder differs from the floored
 * one kiln has. */
static kiln_value *floor_differs(ox *x, kiln_value *r, kiln_value *a, kiln_value *b) {
  ir_dtype dt = ox_type(a)->dtype;
  kiln_value *z = r ? as_dtype(x, ox_scalar(x, IR_DT_SI32, 0), dt) : NULL, *nz, *s;
  if (!z || !(nz = as_dtype(x, OP2("not_equal", r, z), dt)) || !(s = signs_differ(x, a, b)))
    return NULL;
  return OP2("mul", s, nz);
}

/* Integer a / b truncated toward zero (ONNX's and C's): kiln's floor_div,
 * plus one where floor_differs. */
static kiln_value *trunc_div(ox *x, kiln_value *a, kiln_value *b) {
  kiln_value *q = OP2("floor_div", a, b), *fix;
  if (!q || !ir_dtype_is_signed(ox_type(a)->dtype)) return q;
  if (!(fix = floor_differs(x, OP2("mod", a, b), a, b))) return NULL;
  return OP2("add", q, fix);
}

/* Integer C fmod (the result has a's sign): kiln's floor mod (b's sign),
 * less b where floor_differs. */
static kiln_value *int_fmod(ox *x, kiln_value *a, kiln_value *b) {
  kiln_value *r = OP2("mod", a, b), *fix;
  if (!r || !ir_dtype_is_signed(ox_type(a)->dtype)) return r;
  if (!(fix = floor_differs(x, r, a, b)) || !(fix = OP2("mul", fix, b))) return NULL;
  return OP2("sub", r, fix);
}

/* Float C fmod, exactly: kiln's floor mod of |a| and |b| (no sign fix-up
 * there, so it is fmod's magnitude), negated where a < 0. */
static kiln_value *float_fmod(ox *x, kiln_value *a, kiln_value *b) {
  kiln_value *aa = OP1("abs", a), *ab = OP1("abs", b), *m, *neg, *z, *lt;
  if (!aa || !ab || !(m = OP2("mod", aa, ab)) || !(neg = OP1("negate", m))) return NULL;
  if (!(z = as_dtype(x, ox_scalar(x, IR_DT_SI32, 0), ox_type(a)->dtype)) ||
      !(lt = OP2("greater", z, a)))
    return NULL;
  return ox_op(x, "where", (kiln_value *[]){lt, neg, m}, 3, NULL, NULL);
}

int ox_op_Div(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int f = ox_fold_elementwise(x, n, in, nin, out[0]);
  if (f != 2) return f;
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  if (!is_float(a)) DONE(trunc_div(x, a, b));
  DONE(OP2("div", a, b));
}

int ox_op_Mod(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  bool fmod = ox_attr_int(n, "fmod", 0) != 0;
  int f = fmod ? 2 : ox_fold_elementwise(x, n, in, nin, out[0]);
  if (f != 2) return f;
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  if (ox_type(a)->dtype == IR_DT_UI64) DONE(ox_uint64_mod(x, in, nin, &rc)); /* fmod: the same */
  if (is_float(a) && !fmod) return ox_unsupported(x, n, "float Mod needs fmod = 1");
  DONE(!fmod ? OP2("mod", a, b) : is_float(a) ? float_fmod(x, a, b) : int_fmod(x, a, b));
}

/* BitShift on unsigned integers: x * 2^y or x floor-divided by 2^y (the
 * product wraps to the dtype's low bits as a left shift does). */
int ox_op_BitShift(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL, *two, *p;
  if (!b) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  char buf[16];
  const char *dir = ox_attr_string(n, "direction", "", buf, sizeof buf);
  bool left = strcmp(dir, "LEFT") == 0;
  if (!left && strcmp(dir, "RIGHT") != 0)
    return ox_fail(x, KILN_ERR_VERIFY,
                   "BitShift direction must be \"LEFT\" or \"RIGHT\", not \"%s\"", dir);
  if (dt == IR_DT_UI64) DONE(ox_uint64_shift(x, in, nin, left, &rc));
  if (!(two = ox_scalar(x, IR_DT_SI32, 2)) ||
      !(two = ox_op(x, "cast", &two, 1, NULL, "{dtype = %s}", ir_dtype_name(dt))) ||
      !(p = OP2("pow", two, b)))
    return FAILED();
  DONE(left ? OP2("mul", a, p) : OP2("floor_div", a, p));
}

int ox_op_Pow(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!is_float(a) && is_float(b)) {
    /* an integer base to a float power: computed in f64, truncated back to
     * the base's dtype (the result has the base's type) */
    kiln_value *r;
    if (!(a = ox_op(x, "cast", &a, 1, NULL, "{dtype = f64}")) ||
        (ox_type(b)->dtype != IR_DT_F64 && !(b = ox_op(x, "cast", &b, 1, NULL, "{dtype = f64}"))) ||
        !(r = OP2("pow", a, b)))
      return FAILED();
    DONE(ox_op(x, "cast", &r, 1, NULL, "{dtype = %s}", ir_dtype_name(dt)));
  }
  if (ox_type(b)->dtype != dt && !(b = ox_op(x, "cast", (kiln_value *[]){b}, 1, NULL,
                                             "{dtype = %s}", ir_dtype_name(dt))))
    return FAILED();
  DONE(OP2("pow", a, b));
}

int ox_op_Ceil(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *t;
  if (!a) return rc;
  if (!(t = OP1("negate", a)) || !(t = OP1("floor", t))) return FAILED();
  DONE(OP1("negate", t));
}

int ox_op_Reciprocal(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                     int nout) {
  BEGIN;
  kiln_value *a = IN(0), *one;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(one = K(1))) return FAILED();
  DONE(OP2("div", one, a));
}

int ox_op_Sign(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *z, *p, *m, *gt, *lt, *t;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(z = K(0)) || !(p = K(1)) || !(m = K(-1))) return FAILED();
  if (!(gt = OP2("greater", a, z)) || !(lt = OP2("greater", z, a))) return FAILED();
  if (!(t = OP3("where", lt, m, z))) return FAILED();
  DONE(OP3("where", gt, p, t));
}

int ox_op_IsInf(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *inf, *z, *s;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  bool neg = ox_attr_int(n, "detect_negative", 1) != 0, pos = ox_attr_int(n, "detect_positive", 1) != 0;
  if (!(inf = OP1("is_inf", a))) return FAILED();
  if (neg && pos) DONE(inf);
  if (!(z = K(0))) return FAILED();
  if (!neg && !pos) {
    kiln_value *f = OP2("greater", z, z);
    if (!f) return FAILED();
    DONE(OP2("logical_and", inf, f));
  }
  if (!(s = pos ? OP2("greater", a, z) : OP2("greater", z, a))) return FAILED();
  DONE(OP2("logical_and", inf, s));
}

/* Fold in[0..nin) with op, left to right (Max, Min, Sum). */
static kiln_value *chain(ox *x, ox_val **in, int nin, const char *op, int *rc) {
  kiln_value *acc = ox_in(x, in, nin, 0, rc);
  for (int i = 1; acc && i < nin; i++) {
    kiln_value *b = ox_in(x, in, nin, i, rc);
    if (!b) return NULL;
    acc = ox_op(x, op, (kiln_value *[]){acc, b}, 2, NULL, NULL);
  }
  return acc;
}

int ox_op_Max(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  int f = ox_fold_elementwise(x, n, in, nin, out[0]);
  if (f != 2) return f;
  kiln_value *a0 = IN(0);
  if (!a0) return rc;
  if (ox_type(a0)->dtype == IR_DT_UI64) DONE(ox_uint64_minmax(x, in, nin, true, &rc));
  DONE(chain(x, in, nin, "max", &rc));
}
int ox_op_Min(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  int f = ox_fold_elementwise(x, n, in, nin, out[0]);
  if (f != 2) return f;
  kiln_value *a0 = IN(0);
  if (!a0) return rc;
  if (ox_type(a0)->dtype == IR_DT_UI64) DONE(ox_uint64_minmax(x, in, nin, false, &rc));
  DONE(chain(x, in, nin, "min", &rc));
}
int ox_op_Sum(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  DONE(chain(x, in, nin, "add", &rc));
}
int ox_op_Mean(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *s = chain(x, in, nin, "add", &rc), *k;
  if (!s) return rc ? rc : FAILED();
  if (nin == 1) DONE(s);
  ir_dtype dt = ox_type(s)->dtype;
  if (!(k = K(nin))) return FAILED();
  DONE(OP2("div", s, k));
}

int ox_op_Clip(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *lo = NULL, *hi = NULL;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (x->opset < 11) {
    if (ox_attr(n, "min") && !(lo = K(ox_attr_float(n, "min", 0)))) return FAILED();
    if (ox_attr(n, "max") && !(hi = K(ox_attr_float(n, "max", 0)))) return FAILED();
  } else {
    if (nin > 1 && in[1] && !(lo = IN(1))) return rc;
    if (nin > 2 && in[2] && !(hi = IN(2))) return rc;
  }
  if (lo && !(a = OP2("max", a, lo))) return FAILED();
  if (hi && !(a = OP2("min", a, hi))) return FAILED();
  DONE(a);
}

int ox_op_Where(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  int f = ox_fold_elementwise(x, n, in, nin, out[0]);
  if (f != 2) return f;
  kiln_value *c = IN(0), *a = c ? IN(1) : NULL, *b = a ? IN(2) : NULL;
  if (!b) return rc;
  DONE(OP3("where", c, a, b));
}

/* Gelu (opset 20): approximate "none" (erf) or "tanh", as mo.gelu has them. */
int ox_op_Gelu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  char buf[16];
  const char *ap = ox_attr_string(n, "approximate", "none", buf, sizeof buf);
  if (strcmp(ap, "none") != 0 && strcmp(ap, "tanh") != 0)
    return ox_fail(x, KILN_ERR_VERIFY, "approximate '%s': expected \"none\" or \"tanh\"", ap);
  if (!(out[0]->v = ox_op(x, "gelu", &a, 1, NULL, "{approximate = \"%s\"}", ap))) return FAILED();
  return 0;
}

int ox_op_LeakyRelu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *z, *al, *p, *m;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(z = K(0)) || !(al = K(ox_attr_float(n, "alpha", 0.01)))) return FAILED();
  if (!(p = OP2("max", a, z)) || !(m = OP2("min", a, z)) || !(m = OP2("mul", al, m)))
    return FAILED();
  DONE(OP2("add", p, m));
}

int ox_op_PRelu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *s = a ? IN(1) : NULL, *z, *neg, *m;
  if (!s) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(z = K(0)) || !(neg = OP2("greater", z, a)) || !(m = OP2("mul", s, a))) return FAILED();
  DONE(OP3("where", neg, m, a));
}

int ox_op_Elu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *z, *one, *al, *neg, *e;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(z = K(0)) || !(one = K(1)) || !(al = K(ox_attr_float(n, "alpha", 1.0)))) return FAILED();
  if (!(neg = OP2("greater", z, a)) || !(e = OP1("exp", a)) || !(e = OP2("sub", e, one)) ||
      !(e = OP2("mul", al, e)))
    return FAILED();
  DONE(OP3("where", neg, e, a));
}

int ox_op_Selu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *z, *al, *ga, *pos, *e, *p;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(z = K(0)) || !(al = K(ox_attr_float(n, "alpha", 1.67326319217681884765625))) ||
      !(ga = K(ox_attr_float(n, "gamma", 1.05070102214813232421875))))
    return FAILED();
  if (!(pos = OP2("greater", a, z)) || !(p = OP2("mul", ga, a)) || !(e = OP1("exp", a)) ||
      !(e = OP2("mul", al, e)) || !(e = OP2("sub", e, al)) || !(e = OP2("mul", ga, e)))
    return FAILED();
  DONE(OP3("where", pos, p, e));
}

int ox_op_Celu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *z, *one, *al, *p, *e;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(z = K(0)) || !(one = K(1)) || !(al = K(ox_attr_float(n, "alpha", 1.0)))) return FAILED();
  if (!(p = OP2("max", a, z)) || !(e = OP2("div", a, al)) || !(e = OP1("exp", e)) ||
      !(e = OP2("sub", e, one)) || !(e = OP2("mul", al, e)) || !(e = OP2("min", e, z)))
    return FAILED();
  DONE(OP2("add", p, e));
}

/* max(0, min(1, alpha * x + beta)) */
static kiln_value *hard_sigmoid(ox *x, kiln_value *a, double alpha, double beta) {
  ir_dtype dt = ox_type(a)->dtype;
  kiln_value *z, *one, *al, *be, *t;
  if (!(z = K(0)) || !(one = K(1)) || !(al = K(alpha)) || !(be = K(beta))) return NULL;
  if (!(t = OP2("mul", al, a)) || !(t = OP2("add", t, be)) || !(t = OP2("min", t, one)))
    return NULL;
  return OP2("max", t, z);
}

int ox_op_HardSigmoid(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                      int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  DONE(hard_sigmoid(x, a, ox_attr_float(n, "alpha", 0.2), ox_attr_float(n, "beta", 0.5)));
}

int ox_op_HardSwish(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    int nout) {
  BEGIN;
  kiln_value *a = IN(0), *h;
  if (!a) return rc;
  if (!(h = hard_sigmoid(x, a, (float)(1.0 / 6.0), 0.5))) return FAILED();
  DONE(OP2("mul", a, h));
}

/* log(exp(x) + 1) */
static kiln_value *softplus(ox *x, kiln_value *a) {
  ir_dtype dt = ox_type(a)->dtype;
  kiln_value *one, *e;
  if (!(one = K(1)) || !(e = OP1("exp", a)) || !(e = OP2("add", e, one))) return NULL;
  return OP1("log", e);
}

int ox_op_Softplus(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  DONE(softplus(x, a));
}

int ox_op_Mish(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *s;
  if (!a) return rc;
  if (!(s = softplus(x, a)) || !(s = OP1("tanh", s))) return FAILED();
  DONE(OP2("mul", a, s));
}

int ox_op_Softsign(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *one, *d;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(one = K(1)) || !(d = OP1("abs", a)) || !(d = OP2("add", one, d))) return FAILED();
  DONE(OP2("div", a, d));
}

int ox_op_ThresholdedRelu(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                          int nout) {
  BEGIN;
  kiln_value *a = IN(0), *al, *z, *c;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  if (!(al = K(ox_attr_float(n, "alpha", 1.0))) || !(z = K(0)) || !(c = OP2("greater", a, al)))
    return FAILED();
  DONE(OP3("where", c, a, z));
}

int ox_op_Shrink(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0), *l, *nl, *b, *z, *lo, *hi, *t, *u;
  if (!a) return rc;
  ir_dtype dt = ox_type(a)->dtype;
  double lambd = ox_attr_float(n, "lambd", 0.5), bias = ox_attr_float(n, "bias", 0.0);
  if (!(l = K(lambd)) || !(nl = K(-lambd)) || !(b = K(bias)) || !(z = K(0))) return FAILED();
  if (!(lo = OP2("greater", nl, a)) || !(hi = OP2("greater", a, l)) || !(t = OP2("add", a, b)) ||
      !(u = OP2("sub", a, b)) || !(u = OP3("where", hi, u, z)))
    return FAILED();
  DONE(OP3("where", lo, t, u));
}

static int cast_to(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   ir_dtype to) {
  BEGIN;
  ox_val *s = nin > 0 ? in[0] : NULL;
  if (s && s->known && ox_dtype_is_known_kind(to)) { /* integer data stays known */
    const ir_dim **e = s->e;
    if (to == IR_DT_BOOL) {
      int64_t c;
      for (int64_t i = 0; i < s->numel; i++)
        if (!ir_dim_is_const(s->e[i], &c)) goto build;
    }
    if (to == IR_DT_BOOL) {
      const ir_dim *tmp[OX_KNOWN_MAX];
      for (int64_t i = 0; i < s->numel; i++) {
        int64_t c = 0;
        ir_dim_is_const(s->e[i], &c);
        tmp[i] = ir_dim_const(x->ir->arena, c != 0);
        if (!tmp[i]) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      }
      return ox_set_known(x, out[0], to, s->rank, s->shape, tmp) < 0 ? -1 : 0;
    }
    return ox_set_known(x, out[0], to, s->rank, s->shape, e) < 0 ? -1 : 0;
  }
build:;
  kiln_value *a = IN(0);
  if (!a) return rc;
  if (ox_type(a)->dtype == to) DONE(a);
  DONE(ox_op(x, "cast", (kiln_value *[]){a}, 1, NULL, "{dtype = %s}", ir_dtype_name(to)));
}

int ox_op_Cast(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  ir_dtype to;
  int32_t t = (int32_t)ox_attr_int(n, "to", 0);
  if (!ox_dtype(t, &to)) return ox_unsupported(x, n, "cast to ONNX type %d", (int)t);
  return cast_to(x, n, in, nin, out, to);
}

int ox_op_CastLike(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int rc = 0;
  kiln_value *like = ox_in(x, in, nin, 1, &rc);
  if (!like) return rc;
  return cast_to(x, n, in, nin, out, ox_type(like)->dtype);
}

int ox_op_Identity(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  if (nin < 1 || !in[0]) return ox_fail(x, KILN_ERR_IO, "input 0 is required");
  return ox_alias(x, out[0], in[0]);
}
