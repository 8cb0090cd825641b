/* infer_index.c - the shape and dtype rules of the indexing classes:
 * gather_nd / gather_elements, the scatter family, tile, range, nonzero,
 * non_maximum_suppression and slice_tensor with data bounds (ops.def
 * documents their operands and attributes).
 *
 * Assumes ir_infer_node has checked the operand counts and the table's dtype
 * sets (operands 0 and 1); the rules here check the rest: indices are si32
 * or si64, updates share the input's dtype, the ranks fit together. A dim
 * fact that is not decided now (a symbolic dim) becomes a run-time check.
 * Index values are data: out-of-range ones are the kernels' data errors. */
#include <inttypes.h>
#include <stdio.h>

#include "infer_impl.h"

typedef ir_infer_ctx ctx;

static const ir_type *opnd(ctx *c, int k) { return &c->n->in[k]->type; }

static int need_indices(ctx *c, int k) {
  ir_dtype t = opnd(c, k)->dtype;
  if (t == IR_DT_SI32 || t == IR_DT_SI64) return 0;
  return ir_infer_fail(c, "operand %d of mo.%s has dtype %s but indices must be si32 or si64", k, c->op,
              ir_dtype_name(t));
}

/* dims a[ia] and b[ib] equal (kind EQ) or a >= b (GE); names for messages. */
static int need_dim(ctx *c, ir_check_kind kind, const ir_type *a, int ia, const char *an,
                    const ir_type *b, int ib, const char *bn) {
  char s1[96], s2[96], what[400];
  snprintf(what, sizeof what, "mo.%s: dim %d of the %s (%s) must %s dim %d of the %s (%s)", c->op,
           ia, an, ir_infer_dim_str(s1, sizeof s1, a->dims[ia]),
           kind == IR_CHECK_EQ ? "equal" : "be at least", ib, bn,
           ir_infer_dim_str(s2, sizeof s2, b->dims[ib]));
  return ir_infer_need(c, kind, a->dims[ia], b->dims[ib], what);
}

/* The static length k of the index vectors (the last dim of `indices`). */
static int index_depth(ctx *c, const ir_type *it, int rank_in, int64_t *k) {
  if (it->rank < 1) return ir_infer_fail(c, "mo.%s: indices have rank 0 but need rank >= 1", c->op);
  if (!ir_dim_is_const(it->dims[it->rank - 1], k))
    return ir_infer_fail(c, "mo.%s: the last dim of the indices must be static", c->op);
  if (*k < 1 || *k > rank_in)
    return ir_infer_fail(c, "mo.%s: index vectors of length %" PRId64 " do not fit an input of rank %d",
                c->op, *k, rank_in);
  return 0;
}

static int infer_gather_nd(ctx *c, ir_type *r) {
  const ir_type *x = opnd(c, 0), *it = opnd(c, 1);
  int64_t b, k;
  if (ir_infer_attr_int(c, "batch_dims", &b) != 0) return -1;
  if (b < 0 || b >= it->rank || b >= x->rank)
    return ir_infer_fail(c, "mo.gather_nd: batch_dims %" PRId64 " must be in [0, %d)", b,
                it->rank < x->rank ? it->rank : x->rank);
  if (index_depth(c, it, x->rank - (int)b, &k) != 0) return -1;
  for (int i = 0; i < b; i++)
    if (need_dim(c, IR_CHECK_EQ, it, i, "indices", x, i, "input") != 0) return -1;
  const ir_dim *d[IR_MAX_RANK];
  int rank = it->rank - 1 + x->rank - (int)(b + k), j = 0;
  if (rank > IR_MAX_RANK)
    return ir_infer_fail(c, "mo.gather_nd: the result would have rank %d, more than %d", rank, IR_MAX_RANK);
  for (int i = 0; i < it->rank - 1; i++) d[j++] = it->dims[i];
  for (int i = (int)(b + k); i < x->rank; i++) d[j++] = x->dims[i];
  return ir_infer_res_set(c, r, x->dtype, rank, d, x->device);
}

/* gather_elements / scatter: indices of input's rank, no larger off the axis. */
static int axis_indices(ctx *c, const ir_type *x, const ir_type *it, int *ax) {
  int64_t axis;
  if (ir_infer_attr_int(c, "axis", &axis) != 0 ||
      ir_infer_norm_axis(c, "axis", axis, x->rank, ax) != 0)
    return -1;
  if (it->rank != x->rank)
    return ir_infer_fail(c, "mo.%s: indices have rank %d but the input has rank %d", c->op, it->rank,
                x->rank);
  for (int a = 0; a < x->rank; a++)
    if (a != *ax && need_dim(c, IR_CHECK_GE, x, a, "input", it, a, "indices") != 0) return -1;
  return 0;
}

int ir_infer_gather_index(ctx *c, ir_type *r) {
  if (c->n->op == IR_OP_GATHER_ND) return infer_gather_nd(c, r);
  const ir_type *x = opnd(c, 0), *it = opnd(c, 1);
  int ax;
  if (axis_indices(c, x, it, &ax) != 0) return -1;
  return ir_infer_res_set(c, r, x->dtype, it->rank, it->dims, x->device);
}

int ir_infer_scatter(ctx *c, ir_type *r) {
  const ir_type *x = opnd(c, 0), *u = opnd(c, 1), *it = opnd(c, 2);
  if (need_indices(c, 2) != 0) return -1;
  if (u->dtype != x->dtype)
    return ir_infer_fail(c, "operand 1 of mo.%s (updates) has dtype %s but the input has %s", c->op,
                ir_dtype_name(u->dtype), ir_dtype_name(x->dtype));
  bool nd = c->n->op >= IR_OP_SCATTER_ND && c->n->op <= IR_OP_SCATTER_ND_MIN;
  if (!nd) {
    int ax;
    if (x->rank < 1) return ir_infer_fail(c, "mo.%s: the input has rank 0 but needs rank >= 1", c->op);
    if (axis_indices(c, x, it, &ax) != 0) return -1;
    if (u->rank != it->rank)
      return ir_infer_fail(c, "mo.%s: updates have rank %d but the indices have rank %d", c->op, u->rank,
                  it->rank);
    for (int a = 0; a < u->rank; a++)
      if (need_dim(c, IR_CHECK_EQ, u, a, "updates", it, a, "indices") != 0) return -1;
  } else {
    int64_t k;
    if (index_depth(c, it, x->rank, &k) != 0) return -1;
    int want = it->rank - 1 + x->rank - (int)k;
    if (u->rank != want)
      return ir_infer_fail(c, "mo.%s: updates have rank %d but need rank %d (indices' leading dims, then "
                     "the input's dims after the first %" PRId64 ")",
                  c->op, u->rank, want, k);
    for (int a = 0; a < it->rank - 1; a++)
      if (need_dim(c, IR_CHECK_EQ, u, a, "updates", it, a, "indices") != 0) return -1;
    for (int a = it->rank - 1; a < u->rank; a++)
      if (need_dim(c, IR_CHECK_EQ, u, a, "updates", x, a - (it->rank - 1) + (int)k, "input") != 0)
        return -1;
  }
  return ir_infer_res_set(c, r, x->dtype, x->rank, x->dims, x->device);
}

int ir_infer_tile(ctx *c, ir_type *r) {
  const ir_type *x = opnd(c, 0);
  int nv;
  const int64_t *v;
  if (ir_infer_attr_ints(c, "repeats", &nv, &v) != 0) return -1;
  if (nv != x->rank)
    return ir_infer_fail(c, "mo.tile: repeats has %d entries but the input has rank %d", nv, x->rank);
  const ir_dim *d[IR_MAX_RANK];
  for (int i = 0; i < nv; i++) {
    if (v[i] < 0)
      return ir_infer_fail(c, "mo.tile: repeats[%d] is %" PRId64 " but must be >= 0", i, v[i]);
    const ir_dim *m = ir_dim_const(c->g->arena, v[i]);
    if (!m || !(d[i] = ir_dim_mul(c->g->arena, x->dims[i], m))) return ir_infer_dim_fail(c);
  }
  return ir_infer_res_set(c, r, x->dtype, x->rank, d, x->device);
}

int ir_infer_range(ctx *c, ir_type *r) {
  for (int k = 0; k < 3; k++)
    if (opnd(c, k)->rank != 0)
      return ir_infer_fail(c, "operand %d of mo.range has rank %d but must be a scalar (rank 0)", k,
                  opnd(c, k)->rank);
  const ir_type *t;
  if (ir_infer_declared(c, &t) != 0) return -1;
  if (t->rank != 1 || t->dtype != opnd(c, 0)->dtype)
    return ir_infer_fail(c, "mo.range: the result must be declared 1-D of the operands' dtype %s",
                ir_dtype_name(opnd(c, 0)->dtype));
  /* a symbolic length no input shape binds is read from the operands'
   * data before the graph runs (ir/shape.c) */
  if (ir_dim_is_sym(t->dims[0])) {
    bool from_shapes = false;
    for (int i = 0; i < c->g->ninputs && !from_shapes; i++)
      for (int a = 0; a < c->g->inputs[i]->type.rank; a++)
        from_shapes |= ir_dim_uses_sym(c->g->inputs[i]->type.dims[a], t->dims[0]->sym);
    static const char *const what[] = {"start", "stop", "step"};
    for (int k = 0; k < 3 && !from_shapes; k++)
      if (ir_infer_data_operand(c, k, what[k]) != 0) return -1;
  }
  return ir_infer_res_set(c, r, t->dtype, 1, t->dims, opnd(c, 0)->device);
}

/* Dim 0 of the declared result t: a plain symbol that no graph input and no
 * earlier value uses, which the node defines from data (ir/shape.h). */
static int new_count_dim(ctx *c, const ir_type *t) {
  const ir_dim *n = t->dims[0];
  if (!ir_dim_is_sym(n))
    return ir_infer_fail(c, "mo.%s: dim 0 of the result must be a new symbol (the count is "
                         "known only when the op runs)", c->op);
  const ir_graph *g = c->g;
  const ir_value *res = c->n->out[0];
  for (int v = 0; v < g->nvalues && g->values[v] != res; v++) {
    const ir_value *val = g->values[v];
    for (int a = 0; a < val->type.rank; a++)
      if (val->type.dims && ir_dim_uses_sym(val->type.dims[a], n->sym))
        return ir_infer_fail(c, "mo.%s: symbol '%s' is already used by %%%s; the count needs a "
                             "symbol of its own", c->op, g->syms[n->sym], val->name);
  }
  return 0;
}

/* The declared result: [n, cols] si64 with n a new symbol. */
static int count_rows_result(ctx *c, int64_t cols, const char *cols_what, const ir_type **t) {
  int64_t k;
  if (ir_infer_declared(c, t) != 0) return -1;
  if ((*t)->rank != 2 || (*t)->dtype != IR_DT_SI64 || !ir_dim_is_const((*t)->dims[1], &k) ||
      k != cols)
    return ir_infer_fail(c, "mo.%s: the result must be declared [n, %" PRId64 "] si64 (n: a new "
                         "symbol for the count, %" PRId64 ": %s)", c->op, cols, cols, cols_what);
  return new_count_dim(c, *t);
}

/* mo.nonzero: result [n, rank] si64. */
int ir_infer_nonzero(ctx *c, ir_type *r) {
  const ir_type *x = opnd(c, 0), *t;
  if (count_rows_result(c, x->rank, "the operand's rank", &t) != 0) return -1;
  return ir_infer_res_set(c, r, IR_DT_SI64, 2, t->dims, x->device);
}

/* mo.non_maximum_suppression: boxes [B, N, 4], scores [B, C, N] of one
 * float dtype, a rank-0 integer box limit, rank-0 thresholds of that dtype;
 * result [n, 3] si64 rows (batch, class, box). */
int ir_infer_nms(ctx *c, ir_type *r) {
  const ir_type *bx = opnd(c, 0), *sc = opnd(c, 1), *t;
  int64_t four, center;
  if (bx->rank != 3 || !ir_dim_is_const(bx->dims[2], &four) || four != 4)
    return ir_infer_fail(c, "mo.%s: the boxes must be [batch, boxes, 4]", c->op);
  if (sc->rank != 3 || sc->dtype != bx->dtype)
    return ir_infer_fail(c, "mo.%s: the scores must be [batch, classes, boxes] of the boxes' "
                         "dtype %s", c->op, ir_dtype_name(bx->dtype));
  if (need_dim(c, IR_CHECK_EQ, sc, 0, "scores", bx, 0, "boxes") != 0 ||
      need_dim(c, IR_CHECK_EQ, sc, 2, "scores", bx, 1, "boxes") != 0)
    return -1;
  const ir_type *lim = opnd(c, 2);
  if (lim->rank != 0 || (lim->dtype != IR_DT_SI32 && lim->dtype != IR_DT_SI64))
    return ir_infer_fail(c, "mo.%s: operand 2 (the boxes per class) must be a rank-0 si32 or "
                         "si64", c->op);
  for (int k = 3; k < c->n->nin; k++)
    if (opnd(c, k)->rank != 0 || opnd(c, k)->dtype != bx->dtype)
      return ir_infer_fail(c, "mo.%s: operand %d (a threshold) must be a rank-0 %s", c->op, k,
                           ir_dtype_name(bx->dtype));
  if (ir_infer_attr_int(c, "center_point_box", &center) != 0) return -1;
  if (center != 0 && center != 1)
    return ir_infer_fail(c, "mo.%s: center_point_box is %" PRId64 " but must be 0 or 1", c->op,
                         center);
  if (count_rows_result(c, 3, "batch, class and box", &t) != 0) return -1;
  return ir_infer_res_set(c, r, IR_DT_SI64, 2, t->dims, bx->device);
}

/* mo.slice_tensor with (start, stop, step[, axes]) operands: 1-D integer
 * operands of one static length k <= rank, each a graph input or a
 * constant; the declared result has the operand's rank and dtype (its dims
 * come from the data, ir/shape.c). */
int ir_infer_slice_data(ctx *c, ir_type *r) {
  const ir_type *x = opnd(c, 0), *t;
  static const char *const what[] = {"", "start", "stop", "step", "axes"};
  int64_t k = -1;
  for (int j = 1; j < c->n->nin; j++) {
    const ir_type *o = opnd(c, j);
    int64_t len;
    if (o->rank != 1 || !ir_dim_is_const(o->dims[0], &len) || (k >= 0 && len != k) ||
        (o->dtype != IR_DT_SI32 && o->dtype != IR_DT_SI64))
      return ir_infer_fail(c, "mo.slice_tensor: %s must be 1-D si32 or si64 with as many "
                           "elements as start", what[j]);
    k = len;
    if (ir_infer_data_operand(c, j, what[j]) != 0) return -1;
  }
  if (k > x->rank)
    return ir_infer_fail(c, "mo.slice_tensor: %" PRId64 " entries but the operand has rank %d", k,
                         x->rank);
  if (ir_infer_declared(c, &t) != 0) return -1;
  if (t->rank != x->rank || t->dtype != x->dtype)
    return ir_infer_fail(c, "mo.slice_tensor: the result must be declared with the operand's "
                         "rank %d and dtype %s", x->rank, ir_dtype_name(x->dtype));
  return ir_infer_res_set(c, r, x->dtype, x->rank, t->dims, x->device);
}
