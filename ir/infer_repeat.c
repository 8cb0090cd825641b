/* infer_repeat.c - the shape rule of mo.repeat_interleave (ops.def documents
 * its operands and attributes).
 *
 * The axis' dim before repeating is x's dim there, or x's element count when
 * axis is absent (x flattened: the result is 1-D). With the attribute repeats
 * (>= 0, refused at line:col when negative) the result's dim is that dim times
 * repeats, an expression that works for symbolic dims. With a repeats operand
 * (1-D si32 / si64) the dim is the declared result's, whose value comes from
 * repeats' data: the operand must be a graph input or a mo.constant (read by
 * ir_solve_symbols before the run, ir/shape.c), a length other than the axis'
 * or 1 is refused here when both are static, and the declared dims off the
 * axis must equal x's (decided now, or a run-time check). out_dim is read (a
 * string) and not used.
 * Assumes the operand counts and the table's dtype sets were checked. */
#include <inttypes.h>
#include <stdio.h>

#include "infer_impl.h"

int ir_infer_repeat(ir_infer_ctx *c, ir_type *r) {
  const ir_type *x = &c->n->in[0]->type;
  int64_t rep, axis;
  const char *out_dim;
  if (ir_infer_attr_int(c, "repeats", &rep) != 0 || ir_infer_attr_int(c, "axis", &axis) != 0 ||
      ir_infer_attr_string(c, "out_dim", &out_dim) != 0)
    return -1;
  const ir_dim *d[IR_MAX_RANK];
  int rank = x->rank, ax = 0;
  if (axis == INT64_MIN) { /* no axis: x flattened */
    if (!(d[0] = ir_dim_const(c->g->arena, 1))) return ir_infer_dim_fail(c);
    for (int a = 0; a < x->rank; a++)
      if (!(d[0] = ir_dim_mul(c->g->arena, d[0], x->dims[a]))) return ir_infer_dim_fail(c);
    rank = 1;
  } else {
    if (ir_infer_norm_axis(c, "axis", axis, x->rank, &ax) != 0) return -1;
    for (int a = 0; a < x->rank; a++) d[a] = x->dims[a];
  }
  if (c->n->nin == 1) {
    if (rep < 0)
      return ir_infer_fail(c, "mo.repeat_interleave: repeats is %" PRId64 " but must be >= 0",
                           rep);
    const ir_dim *m = ir_dim_const(c->g->arena, rep);
    if (!m || !(d[ax] = ir_dim_mul(c->g->arena, d[ax], m))) return ir_infer_dim_fail(c);
    return ir_infer_res_set(c, r, x->dtype, rank, d, x->device);
  }
  if (ir_node_attr(c->n, "repeats"))
    return ir_infer_fail(c, "mo.repeat_interleave: repeats is given both as an attribute and as "
                            "an operand");
  const ir_type *rt = &c->n->in[1]->type, *t;
  int64_t len, dim;
  if (rt->rank != 1)
    return ir_infer_fail(c, "mo.repeat_interleave: the repeats operand has rank %d but must be "
                            "1-D", rt->rank);
  if (ir_dim_is_const(rt->dims[0], &len) && ir_dim_is_const(d[ax], &dim) && len != 1 &&
      len != dim)
    return ir_infer_fail(c, "mo.repeat_interleave: repeats has %" PRId64 " elements but the "
                            "axis has %" PRId64 " (repeats must have its length or 1)", len, dim);
  if (ir_infer_data_operand(c, 1, "the repeats operand") != 0) return -1;
  if (ir_infer_declared(c, &t) != 0) return -1;
  if (t->rank != rank || t->dtype != x->dtype)
    return ir_infer_fail(c, "mo.repeat_interleave: the result must be declared with rank %d and "
                            "dtype %s", rank, ir_dtype_name(x->dtype));
  for (int a = 0; a < rank; a++) {
    if (a == ax) continue;
    char s1[160], s2[160], what[400];
    snprintf(what, sizeof what, "mo.repeat_interleave: the result's axis %d (%s) must equal the "
             "input's (%s)", a, ir_infer_dim_str(s1, sizeof s1, t->dims[a]),
             ir_infer_dim_str(s2, sizeof s2, d[a]));
    if (ir_infer_need(c, IR_CHECK_EQ, t->dims[a], d[a], what) != 0) return -1;
  }
  d[ax] = t->dims[ax];
  return ir_infer_res_set(c, r, x->dtype, rank, d, x->device);
}
