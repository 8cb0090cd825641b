/* infer_masked.c - the shape rules of mo.masked_scatter and
 * mo.shape_to_tensor (ops.def documents both).
 *
 * masked_scatter: the result is the input's type; the mask broadcasts to the
 * input's shape one way (its axes align right, each 1 or the input's dim; a
 * symbolic dim against another dim becomes a run-time check); the updates
 * share the input's dtype and may have any shape, since how many of their
 * elements are read depends on the mask's data (the kernels check that at
 * run time). out_dim is read (a string) and not used.
 * shape_to_tensor: si64 [rank] on the operand's device.
 * Assumes the operand counts and the table's dtype sets were checked. */
#include <inttypes.h>
#include <stdio.h>

#include "infer_impl.h"

int ir_infer_masked_scatter(ir_infer_ctx *c, ir_type *r) {
  const ir_type *x = &c->n->in[0]->type, *m = &c->n->in[1]->type, *u = &c->n->in[2]->type;
  const char *out_dim;
  if (ir_infer_attr_string(c, "out_dim", &out_dim) != 0) return -1;
  if (u->dtype != x->dtype)
    return ir_infer_fail(c, "mo.masked_scatter: the updates have dtype %s but the input has %s",
                         ir_dtype_name(u->dtype), ir_dtype_name(x->dtype));
  if (m->rank > x->rank)
    return ir_infer_fail(c, "mo.masked_scatter: the mask has rank %d but the input has rank %d "
                            "(the mask must broadcast to the input's shape)",
                         m->rank, x->rank);
  for (int i = 0; i < m->rank; i++) {
    int ax = i + x->rank - m->rank;
    const ir_dim *a = m->dims[i], *b = x->dims[ax];
    int64_t va, vb;
    bool sa = ir_dim_is_const(a, &va), sb = ir_dim_is_const(b, &vb);
    if (ir_dim_equal(a, b) || (sa && va == 1)) continue;
    char s1[160], s2[160], what[400];
    if (sa && sb)
      return ir_infer_fail(c, "mo.masked_scatter: mask axis %d has %" PRId64
                              " but the input's axis %d has %" PRId64 " (the mask must "
                              "broadcast to the input's shape)",
                           i, va, ax, vb);
    snprintf(what, sizeof what, "mo.masked_scatter: mask axis %d (%s) must equal the input's "
                                "axis %d (%s)",
             i, ir_infer_dim_str(s1, sizeof s1, a), ax, ir_infer_dim_str(s2, sizeof s2, b));
    if (ir_infer_need(c, IR_CHECK_EQ, a, b, what) != 0) return -1;
  }
  return ir_infer_res_set(c, r, x->dtype, x->rank, x->dims, x->device);
}

int ir_infer_shape_to_tensor(ir_infer_ctx *c, ir_type *r) {
  const ir_type *x = &c->n->in[0]->type;
  const ir_dim *d = ir_dim_const(c->g->arena, x->rank);
  if (!d) return ir_infer_dim_fail(c);
  return ir_infer_res_set(c, r, IR_DT_SI64, 1, &d, x->device);
}
