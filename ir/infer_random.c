/* infer_random.c - the shape rules of the random-number class and of the
 * debugging op mo.print (its operand's type). The random class:
 * mo.random.uniform and mo.random.normal (ops.def documents them).
 *
 * They have no operands: the result is the declared type, whose dtype must
 * be f32 or f64; its dims may be symbols of the graph's inputs
 * (ir_solve_symbols says so at execute when one is not). The attributes
 * must be finite, low <= high and std >= 0. The result lives on the device
 * its type names. */
#include <math.h>

#include "infer_impl.h"

int ir_infer_random(ir_infer_ctx *c, ir_type *r) {
  const ir_type *t;
  int64_t seed;
  double a, b;
  bool uni = c->n->op == IR_OP_RANDOM_UNIFORM;
  const char *na = uni ? "low" : "mean", *nb = uni ? "high" : "std";
  if (ir_infer_attr_int(c, "seed", &seed) != 0 || ir_infer_attr_float(c, na, &a) != 0 ||
      ir_infer_attr_float(c, nb, &b) != 0 || ir_infer_declared(c, &t) != 0)
    return -1;
  if (!isfinite(a) || !isfinite(b))
    return ir_infer_fail(c, "mo.%s: %s and %s must be finite, not %g and %g", c->op, na, nb, a, b);
  if (uni && a > b)
    return ir_infer_fail(c, "mo.%s: low (%g) must not exceed high (%g)", c->op, a, b);
  if (!uni && b < 0)
    return ir_infer_fail(c, "mo.%s: std is %g but must be >= 0", c->op, b);
  if (t->dtype != IR_DT_F32 && t->dtype != IR_DT_F64)
    return ir_infer_fail(c, "mo.%s: the result is declared %s but must be f32 or f64", c->op,
                         ir_dtype_name(t->dtype));
  return ir_infer_res_set(c, r, t->dtype, t->rank, t->dims, t->device);
}

/* mo.print passes its operand through: the result is its type. */
int ir_infer_print(ir_infer_ctx *c, ir_type *r) {
  const ir_type *x = &c->n->in[0]->type;
  const char *label;
  if (ir_infer_attr_string(c, "label", &label) != 0)
    return -1;
  return ir_infer_res_set(c, r, x->dtype, x->rank, x->dims, x->device);
}
