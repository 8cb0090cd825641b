/* ops_training.c - the optimizers of ONNX domain ai.onnx.preview.training
 * (Adagrad, Adam, Momentum in "standard" and "nesterov" mode) as
 * elementwise kiln ops, with ONNX's formulas.
 *
 * A node reads the learning rate R and the step count T (rank-0; R a
 * float, T si64) and n groups of tensors laid out by kind: X1..Xn,
 * G1..Gn, then one or two state groups (Adagrad H; Momentum V; Adam V,
 * H). It returns the new X1..Xn and then each state group, in the same
 * order. Each group is updated on its own, with the scalars shared.
 * The scalar arithmetic on R and T (the decayed or bias-corrected rate,
 * the T > 0 choice) is done in f64, as ONNX's reference computes it, and
 * the rate is then cast to the group's dtype; the per-element arithmetic
 * is in the group's dtype with the attributes rounded to it. Absent
 * attributes take the schema's defaults (f32 values: epsilon 1e-6f, Adam's
 * alpha 0.9f and beta 0.999f); Momentum's are all required. */
#include <math.h>
#include <string.h>

#include "ox.h"

#define K(v) ox_scalar(x, dt, (v))
#define OP3(name, a, b, c) ox_op(x, name, (kiln_value *[]){a, b, c}, 3, NULL, NULL)

/* v cast to dt (v itself when it has it); NULL when v is NULL. */
static kiln_value *as(ox *x, kiln_value *v, ir_dtype dt) {
  if (!v || ox_type(v)->dtype == dt) return v;
  return ox_op(x, "cast", &v, 1, NULL, "{dtype = %s}", ir_dtype_name(dt));
}

/* The shared scalars: R as f64, T as f64, and the bool T > 0. */
typedef struct scalars {
  kiln_value *r, *t, *t_pos;
} scalars;

/* Check the node's layout (2 + groups * kinds inputs, groups * (kinds - 1)
 * outputs, every input present, R and T rank-0 of their dtypes) and read
 * R and T. 0, -1 or 1 (unsupported dtype, recorded). */
static int read_scalars(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, int nout,
                        int kinds, scalars *s, int *groups) {
  if (nin < 2 + kinds || (nin - 2) % kinds)
    return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "%d inputs: expected R, T and %d tensors per "
                   "optimized group", nin, kinds);
  *groups = (nin - 2) / kinds;
  if (nout != *groups * (kinds - 1))
    return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "%d outputs for %d optimized group(s): expected "
                   "%d", nout, *groups, *groups * (kinds - 1));
  int rc = 0, nun0 = x->nunsup;
  kiln_value *r = ox_in(x, in, nin, 0, &rc), *t = r ? ox_in(x, in, nin, 1, &rc) : NULL;
  if (!t) return rc ? rc : ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "inputs R and T are required");
  if (ox_type(r)->rank != 0 || !ir_dtype_is_float(ox_type(r)->dtype))
    return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "input 0 (R) must be a float scalar, got rank "
                   "%d %s", ox_type(r)->rank, ir_dtype_name(ox_type(r)->dtype));
  if (ox_type(t)->rank != 0 || ox_type(t)->dtype != IR_DT_SI64)
    return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "input 1 (T) must be an int64 scalar, got rank "
                   "%d %s", ox_type(t)->rank, ir_dtype_name(ox_type(t)->dtype));
  kiln_value *zero = ox_scalar(x, IR_DT_SI64, 0);
  if (!zero || !(s->t_pos = OP2("greater", t, zero)) || !(s->r = as(x, r, IR_DT_F64)) ||
      !(s->t = as(x, t, IR_DT_F64)))
    return FAILED();
  return 0;
}

/* One optimized group's tensors: in[2 + k * groups + i] for kind k. */
static int group_inputs(ox *x, ox_val **in, int nin, int groups, int i, int kinds,
                        kiln_value **v) {
  int rc = 0;
  for (int k = 0; k < kinds; k++) {
    if (!(v[k] = ox_in(x, in, nin, 2 + k * groups + i, &rc)))
      return rc ? rc : ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "input %d is required",
                               2 + k * groups + i);
    if (!ir_dtype_is_float(ox_type(v[k])->dtype))
      return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "input %d must be a float tensor, got %s",
                     2 + k * groups + i, ir_dtype_name(ox_type(v[k])->dtype));
  }
  return 0;
}

/* norm * xv + g: the gradient with the L2 regularization term. */
static kiln_value *regularized(ox *x, kiln_value *xv, kiln_value *g, double norm) {
  ir_dtype dt = ox_type(xv)->dtype;
  kiln_value *k = K(norm), *t;
  if (!k || !(t = OP2("mul", k, xv)) || !(g = as(x, g, dt))) return NULL;
  return OP2("add", t, g);
}

/* The attribute's value; a required one that is absent is an error. */
static bool attr_f(ox *x, const Onnx__NodeProto *n, const char *name, bool required, double dflt,
                   double *out) {
  if (required && !ox_attr(n, name)) {
    ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "attribute '%s' is required", name);
    return false;
  }
  *out = ox_attr_float(n, name, dflt);
  return true;
}

int ox_op_Adagrad(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                  int nout) {
  int nun0 = x->nunsup, groups, rc;
  scalars s;
  if ((rc = read_scalars(x, n, in, nin, nout, 3, &s, &groups))) return rc;
  double decay = ox_attr_float(n, "decay_factor", 0), eps = ox_attr_float(n, "epsilon", 1e-6f),
         norm = ox_attr_float(n, "norm_coefficient", 0);
  /* r / (1 + t * decay_factor), in f64 */
  kiln_value *one = ox_scalar(x, IR_DT_F64, 1), *dk = ox_scalar(x, IR_DT_F64, decay), *rate;
  if (!one || !dk || !(rate = OP2("mul", s.t, dk)) || !(rate = OP2("add", one, rate)) ||
      !(rate = OP2("div", s.r, rate)))
    return FAILED();
  for (int i = 0; i < groups; i++) {
    kiln_value *v[3], *g, *h, *d, *e, *r;
    if ((rc = group_inputs(x, in, nin, groups, i, 3, v))) return rc;
    ir_dtype dt = ox_type(v[0])->dtype;
    if (!(g = regularized(x, v[0], v[1], norm)) || !(h = as(x, v[2], dt)) ||
        !(d = OP2("mul", g, g)) || !(h = OP2("add", h, d)) || !(e = K(eps)) ||
        !(d = OP1("sqrt", h)) || !(d = OP2("add", d, e)) || !(r = as(x, rate, dt)) ||
        !(g = OP2("mul", r, g)) || !(g = OP2("div", g, d)) || !(out[i]->v = OP2("sub", v[0], g)))
      return FAILED();
    if (!(out[groups + i]->v = as(x, h, ox_type(v[2])->dtype))) return FAILED();
  }
  return 0;
}

int ox_op_Momentum(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                   int nout) {
  int nun0 = x->nunsup, groups, rc;
  double alpha, beta, norm;
  if (!attr_f(x, n, "alpha", true, 0, &alpha) || !attr_f(x, n, "beta", true, 0, &beta) ||
      !attr_f(x, n, "norm_coefficient", true, 0, &norm))
    return -1;
  char buf[32];
  const char *mode = ox_attr(n, "mode") ? ox_attr_string(n, "mode", "", buf, sizeof buf) : NULL;
  if (!mode) return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "attribute 'mode' is required");
  bool nesterov = strcmp(mode, "nesterov") == 0;
  if (!nesterov && strcmp(mode, "standard") != 0)
    return ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "mode '%s': expected 'standard' or 'nesterov'",
                   mode);
  scalars s;
  if ((rc = read_scalars(x, n, in, nin, nout, 3, &s, &groups))) return rc;
  for (int i = 0; i < groups; i++) {
    kiln_value *v[3], *g, *b, *one, *al, *m, *t, *r;
    if ((rc = group_inputs(x, in, nin, groups, i, 3, v))) return rc;
    ir_dtype dt = ox_type(v[0])->dtype;
    /* the gradient's coefficient is 1 at the first step (T == 0) */
    if (!(g = regularized(x, v[0], v[1], norm)) || !(b = K(beta)) || !(one = K(1)) ||
        !(b = OP3("where", s.t_pos, b, one)) || !(al = K(alpha)) || !(m = as(x, v[2], dt)) ||
        !(m = OP2("mul", al, m)) || !(t = OP2("mul", b, g)) || !(m = OP2("add", m, t)) ||
        !(r = as(x, s.r, dt)))
      return FAILED();
    if (nesterov) { /* x - r * (g + alpha * v_new) */
      if (!(t = OP2("mul", al, m)) || !(t = OP2("add", g, t))) return FAILED();
    } else {
      t = m; /* x - r * v_new */
    }
    if (!(t = OP2("mul", r, t)) || !(out[i]->v = OP2("sub", v[0], t)) ||
        !(out[groups + i]->v = as(x, m, ox_type(v[2])->dtype)))
      return FAILED();
  }
  return 0;
}

/* Adam's rate: r * sqrt(1 - beta^t) / (1 - alpha^t) where T > 0, else r
 * (f64). */
static kiln_value *adam_rate(ox *x, const scalars *s, double alpha, double beta) {
  ir_dtype dt = IR_DT_F64;
  kiln_value *one = K(1), *a = K(alpha), *b = K(beta), *num, *den, *q;
  if (!one || !a || !b || !(num = OP2("pow", b, s->t)) || !(num = OP2("sub", one, num)) ||
      !(num = OP1("sqrt", num)) || !(den = OP2("pow", a, s->t)) || !(den = OP2("sub", one, den)) ||
      !(q = OP2("mul", s->r, num)) || !(q = OP2("div", q, den)))
    return NULL;
  return OP3("where", s->t_pos, q, s->r);
}

int ox_op_Adam(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int nun0 = x->nunsup, groups, rc;
  scalars s;
  if ((rc = read_scalars(x, n, in, nin, nout, 4, &s, &groups))) return rc;
  double alpha = ox_attr_float(n, "alpha", 0.9f), beta = ox_attr_float(n, "beta", 0.999f),
         eps = ox_attr_float(n, "epsilon", 1e-6f), norm = ox_attr_float(n, "norm_coefficient", 0),
         post = ox_attr_float(n, "norm_coefficient_post", 0);
  kiln_value *rate = adam_rate(x, &s, alpha, beta);
  if (!rate) return FAILED();
  for (int i = 0; i < groups; i++) {
    kiln_value *v[4], *g, *m, *h, *t, *d, *r;
    if ((rc = group_inputs(x, in, nin, groups, i, 4, v))) return rc;
    ir_dtype dt = ox_type(v[0])->dtype;
    /* v_new = alpha v + (1 - alpha) g; h_new = beta h + (1 - beta) g^2 */
    if (!(g = regularized(x, v[0], v[1], norm)) || !(m = as(x, v[2], dt)) ||
        !(t = K(alpha)) || !(m = OP2("mul", t, m)) || !(t = K(1 - alpha)) ||
        !(t = OP2("mul", t, g)) || !(m = OP2("add", m, t)) || !(h = as(x, v[3], dt)) ||
        !(t = K(beta)) || !(h = OP2("mul", t, h)) || !(t = OP2("mul", g, g)) ||
        !(d = K(1 - beta)) || !(t = OP2("mul", d, t)) || !(h = OP2("add", h, t)))
      return FAILED();
    /* x_new = (1 - post) * (x - rate * v_new / (sqrt(h_new) + eps)) */
    if (!(d = OP1("sqrt", h)) || !(t = K(eps)) || !(d = OP2("add", d, t)) ||
        !(t = OP2("div", m, d)) || !(r = as(x, rate, dt)) || !(t = OP2("mul", r, t)) ||
        !(t = OP2("sub", v[0], t)) || !(d = K(1 - post)) || !(out[i]->v = OP2("mul", d, t)) ||
        !(out[groups + i]->v = as(x, m, ox_type(v[2])->dtype)) ||
        !(out[2 * groups + i]->v = as(x, h, ox_type(v[3])->dtype)))
      return FAILED();
  }
  return 0;
}
