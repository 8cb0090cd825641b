/* infer_sort.c - the shape and dtype rules of the sorting class: top_k,
 * bottom_k (values and si64 indices, the axis cut to k) and argsort (si64
 * indices of the operand's shape); ops.def documents the attributes.
 *
 * Assumes ir_infer_node has checked the operand and result counts and the
 * operand's dtype set. k must be at least 1 and at most the axis size: a
 * static axis decides it now, a symbolic one leaves a run-time check, so
 * the kernels never see k > the axis. */
#include <inttypes.h>
#include <stdio.h>

#include "infer_impl.h"

typedef ir_infer_ctx ctx;

static int infer_top_k(ctx *c, ir_type *r) {
  const ir_type *t = &c->n->in[0]->type;
  int64_t k, axis;
  int ax;
  if (ir_infer_attr_int(c, "k", &k) != 0 || ir_infer_attr_int(c, "axis", &axis) != 0 ||
      ir_infer_norm_axis(c, "axis", axis, t->rank, &ax) != 0)
    return -1;
  if (k < 1) return ir_infer_fail(c, "mo.%s: k = %" PRId64 " must be at least 1", c->op, k);
  const ir_dim *kd = ir_dim_const(c->g->arena, k);
  if (!kd) return ir_infer_dim_fail(c);
  char s1[96], what[300];
  snprintf(what, sizeof what, "mo.%s: k = %" PRId64 " exceeds the size of axis %d (%s)", c->op, k,
           ax, ir_infer_dim_str(s1, sizeof s1, t->dims[ax]));
  if (ir_infer_need(c, IR_CHECK_GE, t->dims[ax], kd, what) != 0) return -1;
  for (int i = 0; i < 2; i++) {
    if (ir_infer_res_set(c, &r[i], i ? IR_DT_SI64 : t->dtype, t->rank, t->dims, t->device) != 0)
      return -1;
    r[i].dims[ax] = kd;
  }
  return 0;
}

static int infer_argsort(ctx *c, ir_type *r) {
  const ir_type *t = &c->n->in[0]->type;
  int64_t axis;
  int ax;
  bool asc;
  if (ir_infer_attr_int(c, "axis", &axis) != 0 || ir_infer_attr_bool(c, "ascending", &asc) != 0 ||
      ir_infer_norm_axis(c, "axis", axis, t->rank, &ax) != 0)
    return -1;
  return ir_infer_res_set(c, r, IR_DT_SI64, t->rank, t->dims, t->device);
}

int ir_infer_sort(ctx *c, ir_type *r) {
  return c->n->op == IR_OP_ARGSORT ? infer_argsort(c, r) : infer_top_k(c, r);
}
