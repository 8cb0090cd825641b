/* infer_resize.c - the shape rule of the resizing class (mo.resize,
 * resize_nearest, resize_linear, resize_bicubic; ops.def documents them):
 * the result is the declared type, of the operand's rank and dtype, with
 * every axis whose dims differ (or that a scale attribute names) resized,
 * at most IR_RESIZE_MAX_TAPS taps per element, and an empty resized axis
 * only resized to empty.
 *
 * Assumes ir_infer_node has checked the counts and the operand's dtype set.
 * Guarantees the kernels a well-formed node: every mode name known, the
 * scales finite and >= 0, and (decided now, or a run-time check on
 * symbolic dims) no resized axis read when it is empty. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "infer_impl.h"
#include "resize.h"

typedef ir_infer_ctx ctx;

/* A string attribute that must name an entry of list l. */
static int name_attr(ctx *c, const char *name, ir_resize_list l, int *out) {
  const char *s;
  if (ir_infer_attr_string(c, name, &s) != 0) return -1;
  *out = ir_resize_lookup(l, s);
  if (*out < 0)
    return ir_infer_fail(c, "attribute '%s' of mo.%s is \"%s\" but must be %s", name, c->op, s,
                         ir_resize_names(l));
  return 0;
}

static int check_attrs(ctx *c, ir_dtype dt) {
  int mode = IR_RESIZE_NEAREST, v;
  ir_op op = c->n->op;
  if (op == IR_OP_RESIZE && name_attr(c, "mode", IR_RESIZE_LIST_MODE, &mode) != 0) return -1;
  if (op == IR_OP_RESIZE_LINEAR) mode = IR_RESIZE_LINEAR;
  if (op == IR_OP_RESIZE_BICUBIC) mode = IR_RESIZE_CUBIC;
  if (name_attr(c, "coordinate_transformation_mode", IR_RESIZE_LIST_COORD, &v) != 0) return -1;
  if (ir_op_attr_spec(op, "nearest_mode") &&
      name_attr(c, "nearest_mode", IR_RESIZE_LIST_ROUND, &v) != 0)
    return -1;
  if (ir_op_attr_spec(op, "cubic_coeff_a")) {
    double a;
    bool ex;
    if (ir_infer_attr_float(c, "cubic_coeff_a", &a) != 0 ||
        ir_infer_attr_bool(c, "exclude_outside", &ex) != 0)
      return -1;
    if (!isfinite(a))
      return ir_infer_fail(c, "attribute 'cubic_coeff_a' of mo.%s must be finite", c->op);
  }
  static const char *const scales[2] = {"scale_h", "scale_w"};
  for (int i = 0; i < 2; i++) {
    double s;
    if (ir_infer_attr_float(c, scales[i], &s) != 0) return -1;
    if (!(s >= 0.0) || !isfinite(s))
      return ir_infer_fail(c,
                           "attribute '%s' of mo.%s is %g but must be > 0 (or 0: the result's "
                           "dim over the operand's)",
                           scales[i], c->op, s);
  }
  if (mode != IR_RESIZE_NEAREST && !ir_dtype_is_float(dt))
    return ir_infer_fail(c,
                         "mo.%s: %s interpolation needs f32 or f64 (only \"nearest\" takes "
                         "integers)",
                         c->op, mode == IR_RESIZE_LINEAR ? "linear" : "cubic");
  return 0;
}

/* The taps an element reads: at most IR_RESIZE_MAX_TAPS (the kernels unroll
 * them). */
static int check_taps(ctx *c, const ir_resize *p, int naxes) {
  int per = ir_resize_ntaps(p);
  int64_t taps = 1;
  for (int i = 0; i < naxes && taps <= IR_RESIZE_MAX_TAPS; i++) taps *= per;
  if (taps > IR_RESIZE_MAX_TAPS)
    return ir_infer_fail(c,
                         "mo.%s: %s interpolation over %d axes reads more than %d elements per "
                         "result element (at most 8 axes linear, 4 cubic)",
                         c->op, per == 2 ? "linear" : "cubic", naxes, IR_RESIZE_MAX_TAPS);
  return 0;
}

int ir_infer_resize(ctx *c, ir_type *r) {
  const ir_type *t = &c->n->in[0]->type, *d;
  if (check_attrs(c, t->dtype) != 0 || ir_infer_declared(c, &d) != 0) return -1;
  if (t->rank < 1)
    return ir_infer_fail(c, "operand 0 of mo.%s has rank 0 but needs rank >= 1", c->op);
  if (d->rank != t->rank)
    return ir_infer_fail(c,
                         "mo.%s: the result has rank %d but operand 0 has rank %d (resizing "
                         "keeps the rank)",
                         c->op, d->rank, t->rank);
  if (c->n->nin == 3) { /* run-time scales, one per axis (ops.def) */
    const ir_type *sc = &c->n->in[2]->type;
    int64_t len;
    if (sc->rank != 1 || !ir_dim_is_const(sc->dims[0], &len) || len != t->rank ||
        (sc->dtype != IR_DT_F32 && sc->dtype != IR_DT_F64))
      return ir_infer_fail(c, "mo.%s: the scales operand must be 1-D f32 or f64 with %d "
                           "elements (the operand's rank)", c->op, t->rank);
  }
  if (c->n->nin >= 2) { /* the result's dims from data (ops.def) */
    const ir_type *sz = &c->n->in[1]->type;
    int64_t len;
    if (sz->rank != 1 || !ir_dim_is_const(sz->dims[0], &len) || len != t->rank)
      return ir_infer_fail(c, "mo.%s: the sizes operand must be 1-D with %d elements (the "
                           "operand's rank)", c->op, t->rank);
    if (ir_infer_data_operand(c, 1, "the sizes operand") != 0) return -1;
  }
  ir_resize p;
  if (!ir_resize_read(c->n, &p)) return ir_infer_fail(c, "mo.%s: malformed attributes", c->op);
  if (t->rank == 1 && p.scale[0] > 0)
    return ir_infer_fail(c, "attribute 'scale_h' of mo.%s names axis -2 but operand 0 has rank 1",
                         c->op);
  bool resized[IR_MAX_RANK];
  if (check_taps(c, &p, ir_resize_axes(c->n, &p, resized)) != 0) return -1;
  char s1[96], s2[96], what[400];
  for (int i = 0; i < t->rank; i++) {
    if (!resized[i]) continue;
    ir_infer_dim_str(s1, sizeof s1, t->dims[i]);
    ir_infer_dim_str(s2, sizeof s2, d->dims[i]);
    int64_t n, m;
    bool sn = ir_dim_is_const(t->dims[i], &n), sm = ir_dim_is_const(d->dims[i], &m);
    if (sm && m == 0) continue;
    snprintf(what, sizeof what,
             "mo.%s: axis %d of operand 0 is empty (%s) but the result's is %s "
             "(nothing to resize from)",
             c->op, i, s1, s2);
    if (sn && n == 0) return ir_infer_fail(c, "%s", what);
    const ir_dim *one = ir_dim_const(c->g->arena, 1);
    if (!one) return ir_infer_dim_fail(c);
    if (!sn && ir_infer_need(c, IR_CHECK_GE, t->dims[i], one, what) != 0) return -1;
  }
  return ir_infer_res_set(c, r, t->dtype, d->rank, d->dims, t->device);
}
