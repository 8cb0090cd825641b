/* interp_index.c - the reference interpreter's routines for the indexing
 * classes: gather_nd / gather_elements, the scatter family, tile and range
 * (ops.def documents the operands and attributes). Plain loops in row-major
 * order, the meaning the JIT and the SIMT kernels must match.
 *
 * Assumes a verified node; re-checks every shape it indexes with (the run-
 * time shapes may break a fact the verifier left as a check), so no graph
 * or input makes it read or write out of bounds. An index outside
 * [-d, d) is an error naming the index, the axis and its size; a negative
 * one counts from the end. Scatter applies the updates in row-major order
 * of the indices (a repeated index: the last write wins) and combines with
 * the scalar meaning of mo.add / mul / max / min, so the kernels agree bit
 * for bit. */
#include "interp_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static bool norm_axis(int64_t axis, int rank, int *out) {
  if (axis < -(int64_t)rank || axis >= rank) return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

static void unravel(int64_t e, const int64_t *shape, int rank, int64_t *coord) {
  for (int a = rank - 1; a >= 0; a--) {
    coord[a] = shape[a] > 0 ? e % shape[a] : 0;
    e = shape[a] > 0 ? e / shape[a] : 0;
  }
}

static int64_t ravel(const int64_t *coord, const int64_t *shape, int rank) {
  int64_t e = 0;
  for (int a = 0; a < rank; a++) e = e * shape[a] + coord[a];
  return e;
}

static int64_t span(const int64_t *shape, int from, int to) {
  int64_t p = 1;
  for (int a = from; a < to; a++) p *= shape[a];
  return p;
}

/* Index value v along an axis of size d, wrapped; -1 with msg when out of range. */
static int wrap(int64_t v, int64_t d, int axis, int64_t *out, char *msg, size_t msglen) {
  if (v < -d || v >= d)
    return ir_ref_fail(msg, msglen, "index %" PRId64 " is out of range for axis %d of size %" PRId64,
                       v, axis, d);
  *out = v < 0 ? v + d : v;
  return 0;
}

static int shape_fail(char *msg, size_t msglen) {
  return ir_ref_fail(msg, msglen, "the run-time shapes of the operands and result do not fit");
}

static bool same_shape(const int64_t *a, const int64_t *b, int rank) {
  for (int i = 0; i < rank; i++)
    if (a[i] != b[i]) return false;
  return true;
}

static int gather_nd(const ir_node *n, const ir_tensor *x, const ir_tensor *it, ir_tensor *y,
                     char *msg, size_t msglen) {
  int64_t b = ir_node_attr_int(n, "batch_dims", 0);
  if (it->rank < 1 || b < 0 || b >= it->rank) return shape_fail(msg, msglen);
  int64_t k = it->shape[it->rank - 1];
  int q = it->rank;
  if (b + k > x->rank || y->rank != q - 1 + x->rank - (int)(b + k) ||
      !same_shape(x->shape, it->shape, (int)b) || !same_shape(y->shape, it->shape, q - 1) ||
      !same_shape(y->shape + q - 1, x->shape + b + k, y->rank - (q - 1)))
    return shape_fail(msg, msglen);
  int64_t tuples = span(it->shape, (int)b, q - 1), nb = span(x->shape, 0, (int)b);
  int64_t inner = span(x->shape, (int)(b + k), x->rank);
  int64_t block = span(x->shape, (int)b, x->rank); /* input elements per batch */
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t bi = 0; bi < nb; bi++)
    for (int64_t j = 0; j < tuples; j++) {
      int64_t t = bi * tuples + j, off = 0;
      for (int64_t m = 0; m < k; m++) {
        int64_t v = 0;
        int a = (int)(b + m);
        if (wrap(ir_ref_ld_i(it, t * k + m), x->shape[a], a, &v, msg, msglen)) return -1;
        off = off * x->shape[a] + v;
      }
      if (inner > 0)
        memcpy(ir_ref_elem(y, t * inner), ir_ref_elem(x, bi * block + off * inner),
               (size_t)inner * es);
    }
  return 0;
}

int ir_ref_gather_index(const ir_node *n, const ir_tensor *x, const ir_tensor *it, ir_tensor *y,
                        char *msg, size_t msglen) {
  if (!ir_ref_is_ic(it->dtype) || y->dtype != x->dtype)
    return ir_ref_fail(msg, msglen, "indices must be si32 or si64 and the result of the input's dtype");
  if (n->op == IR_OP_GATHER_ND) return gather_nd(n, x, it, y, msg, msglen);
  int ax;
  if (!norm_axis(ir_node_attr_int(n, "axis", -1), x->rank, &ax))
    return ir_ref_fail(msg, msglen, "axis is out of range for rank %d", x->rank);
  if (it->rank != x->rank || y->rank != it->rank || !same_shape(y->shape, it->shape, y->rank))
    return shape_fail(msg, msglen);
  for (int a = 0; a < x->rank; a++)
    if (a != ax && it->shape[a] > x->shape[a]) return shape_fail(msg, msglen);
  int64_t total = ir_tensor_numel(y), c[IR_MAX_RANK];
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t e = 0; e < total; e++) {
    unravel(e, y->shape, y->rank, c);
    if (wrap(ir_ref_ld_i(it, e), x->shape[ax], ax, &c[ax], msg, msglen)) return -1;
    memcpy(ir_ref_elem(y, e), ir_ref_elem(x, ravel(c, x->shape, x->rank)), es);
  }
  return 0;
}

/* The elementwise op a scatter combines with; IR_OP_SCATTER: none (a write). */
static ir_op combine_op(ir_op op) {
  switch (op) {
  case IR_OP_SCATTER_ADD: case IR_OP_SCATTER_ND_ADD: return IR_OP_ADD;
  case IR_OP_SCATTER_MUL: case IR_OP_SCATTER_ND_MUL: return IR_OP_MUL;
  case IR_OP_SCATTER_MAX: case IR_OP_SCATTER_ND_MAX: return IR_OP_MAX;
  case IR_OP_SCATTER_MIN: case IR_OP_SCATTER_ND_MIN: return IR_OP_MIN;
  default: return IR_OP_SCATTER;
  }
}

/* y[yi] = y[yi] op u[ui] (or u[ui]). */
static int apply(ir_op op, ir_tensor *y, int64_t yi, const ir_tensor *u, int64_t ui, char *msg,
                 size_t msglen) {
  if (op == IR_OP_SCATTER) {
    memcpy(ir_ref_elem(y, yi), ir_ref_elem(u, ui), ir_dtype_size(y->dtype));
    return 0;
  }
  if (y->dtype == IR_DT_F32) {
    float a = (float)ir_ref_ld_f(y, yi), b = (float)ir_ref_ld_f(u, ui), r;
    if (!ir_ref_bin_f32(op, a, b, &r)) return ir_ref_fail(msg, msglen, "no meaning for f32");
    ir_ref_st_f(y, yi, r);
  } else if (y->dtype == IR_DT_F64) {
    double r;
    if (!ir_ref_bin_f64(op, ir_ref_ld_f(y, yi), ir_ref_ld_f(u, ui), &r))
      return ir_ref_fail(msg, msglen, "no meaning for f64");
    ir_ref_st_f(y, yi, r);
  } else if (ir_ref_is_ic(y->dtype)) {
    int64_t r;
    if (ir_ref_bin_int(op, ir_ref_ld_i(y, yi), ir_ref_ld_i(u, ui), &r) != IR_REF_OK)
      return ir_ref_fail(msg, msglen, "no meaning for %s", ir_dtype_name(y->dtype));
    ir_ref_st_i(y, yi, ir_ref_wrap_i(y->dtype, (uint64_t)r));
  } else {
    return ir_ref_fail(msg, msglen, "dtype %s cannot be combined", ir_dtype_name(y->dtype));
  }
  return 0;
}

static int scatter_nd(ir_op op, const ir_tensor *x, const ir_tensor *u, const ir_tensor *it,
                      ir_tensor *y, char *msg, size_t msglen) {
  int q = it->rank;
  if (q < 1) return shape_fail(msg, msglen);
  int64_t k = it->shape[q - 1];
  if (k < 1 || k > x->rank || u->rank != q - 1 + x->rank - (int)k ||
      !same_shape(u->shape, it->shape, q - 1) ||
      !same_shape(u->shape + q - 1, x->shape + k, u->rank - (q - 1)))
    return shape_fail(msg, msglen);
  int64_t tuples = span(it->shape, 0, q - 1), inner = span(x->shape, (int)k, x->rank);
  for (int64_t j = 0; j < tuples; j++) {
    int64_t off = 0;
    for (int64_t m = 0; m < k; m++) {
      int64_t v = 0;
      if (wrap(ir_ref_ld_i(it, j * k + m), x->shape[m], (int)m, &v, msg, msglen)) return -1;
      off = off * x->shape[m] + v;
    }
    for (int64_t i = 0; i < inner; i++)
      if (apply(op, y, off * inner + i, u, j * inner + i, msg, msglen)) return -1;
  }
  return 0;
}

int ir_ref_scatter(const ir_node *n, const ir_tensor *x, const ir_tensor *u, const ir_tensor *it,
                   ir_tensor *y, char *msg, size_t msglen) {
  if (!ir_ref_is_ic(it->dtype) || y->dtype != x->dtype || u->dtype != x->dtype ||
      y->rank != x->rank || !same_shape(y->shape, x->shape, x->rank))
    return ir_ref_fail(msg, msglen, "operands and result do not fit (dtypes or shapes)");
  int64_t total = ir_tensor_numel(x);
  if (total > 0) memcpy(y->data, x->data, (size_t)total * ir_dtype_size(x->dtype));
  ir_op op = combine_op(n->op);
  if (n->op >= IR_OP_SCATTER_ND && n->op <= IR_OP_SCATTER_ND_MIN)
    return scatter_nd(op, x, u, it, y, msg, msglen);
  int ax;
  if (!norm_axis(ir_node_attr_int(n, "axis", -1), x->rank, &ax))
    return ir_ref_fail(msg, msglen, "axis is out of range for rank %d", x->rank);
  if (it->rank != x->rank || u->rank != it->rank || !same_shape(u->shape, it->shape, u->rank))
    return shape_fail(msg, msglen);
  for (int a = 0; a < x->rank; a++)
    if (a != ax && it->shape[a] > x->shape[a]) return shape_fail(msg, msglen);
  int64_t nu = ir_tensor_numel(it), c[IR_MAX_RANK];
  for (int64_t e = 0; e < nu; e++) {
    unravel(e, it->shape, it->rank, c);
    if (wrap(ir_ref_ld_i(it, e), x->shape[ax], ax, &c[ax], msg, msglen)) return -1;
    if (apply(op, y, ravel(c, x->shape, x->rank), u, e, msg, msglen)) return -1;
  }
  return 0;
}

int ir_ref_tile(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen) {
  const ir_attr *a = ir_node_attr(n, "repeats");
  if (!a || a->kind != IR_ATTR_INTS || a->u.ints.n != x->rank || y->rank != x->rank ||
      y->dtype != x->dtype)
    return ir_ref_fail(msg, msglen, "repeats must list one count per axis");
  for (int i = 0; i < x->rank; i++)
    if (y->shape[i] != x->shape[i] * a->u.ints.v[i]) return shape_fail(msg, msglen);
  int64_t total = ir_tensor_numel(y), c[IR_MAX_RANK];
  size_t es = ir_dtype_size(x->dtype);
  for (int64_t e = 0; e < total; e++) {
    unravel(e, y->shape, y->rank, c);
    for (int i = 0; i < x->rank; i++) c[i] %= x->shape[i]; /* x->shape[i] > 0: y has elements */
    memcpy(ir_ref_elem(y, e), ir_ref_elem(x, ravel(c, x->shape, x->rank)), es);
  }
  return 0;
}

int64_t ir_ref_range_len_i(int64_t start, int64_t stop, int64_t step) {
  uint64_t diff = (uint64_t)stop - (uint64_t)start; /* wraps like the kernels */
  int64_t d = (int64_t)diff;
  if (step > 0) return d > 0 ? (d - 1) / step + 1 : 0;
  if (step < 0) return d < 0 ? (int64_t)(((uint64_t)0 - diff - 1) / ((uint64_t)0 - (uint64_t)step)) + 1 : 0;
  return -1;
}

int ir_ref_range(const ir_tensor *start, const ir_tensor *stop, const ir_tensor *step,
                 ir_tensor *y, char *msg, size_t msglen) {
  if (y->rank != 1 || y->dtype != start->dtype || start->rank || stop->rank || step->rank)
    return shape_fail(msg, msglen);
  int64_t len = y->shape[0], want;
  if (ir_ref_is_fc(y->dtype)) {
    double a = ir_ref_ld_f(start, 0), b = ir_ref_ld_f(stop, 0), s = ir_ref_ld_f(step, 0);
    if (s == 0) return ir_ref_fail(msg, msglen, "step is 0");
    double w = ceil((b - a) / s);
    want = w > 0 ? (w < 9.0e18 ? (int64_t)w : INT64_MAX) : 0; /* NaN: 0 */
    if (want == len)
      for (int64_t i = 0; i < len; i++) ir_ref_st_f(y, i, a + (double)i * s);
  } else if (ir_ref_is_ic(y->dtype)) {
    int64_t a = ir_ref_ld_i(start, 0), s = ir_ref_ld_i(step, 0);
    if (s == 0) return ir_ref_fail(msg, msglen, "step is 0");
    want = ir_ref_range_len_i(a, ir_ref_ld_i(stop, 0), s);
    if (want == len)
      for (int64_t i = 0; i < len; i++)
        ir_ref_st_i(y, i, ir_ref_wrap_i(y->dtype, (uint64_t)a + (uint64_t)i * (uint64_t)s));
  } else {
    return ir_ref_fail(msg, msglen, "dtype %s is not supported", ir_dtype_name(y->dtype));
  }
  if (want != len)
    return ir_ref_fail(msg, msglen,
                       "the result is declared with %" PRId64 " elements but start, stop and step "
                       "give %" PRId64, len, want);
  return 0;
}

int64_t ir_ref_nonzero(const ir_tensor *x, ir_tensor *y) {
  int64_t numel = ir_tensor_numel(x), count = 0;
  int rank = x->rank;
  for (int64_t e = 0; e < numel; e++) {
    bool nz = ir_ref_is_fc(x->dtype) ? ir_ref_ld_f(x, e) != 0 : ir_ref_ld_i(x, e) != 0;
    if (!nz) continue; /* NaN != 0 holds: a NaN counts */
    int64_t rest = e;
    for (int a = rank - 1; a >= 0; a--) {
      ir_ref_st_i(y, count * rank + a, rest % x->shape[a]);
      rest /= x->shape[a];
    }
    count++;
  }
  return count;
}

int ir_ref_slice_data(const ir_tensor *const p[4], int rank, int64_t (*v)[3], char *msg,
                      size_t msglen) {
  int64_t k = p[0]->rank == 1 ? p[0]->shape[0] : 0;
  bool seen[IR_MAX_RANK] = {false};
  for (int a = 0; a < rank; a++) {
    v[a][0] = INT64_MIN;
    v[a][1] = INT64_MAX;
    v[a][2] = 1;
  }
  for (int64_t j = 0; j < k; j++) {
    int64_t e[4];
    for (int q = 0; q < 4; q++)
      e[q] = p[q] ? ir_ref_ld_i(p[q], p[q]->rank == 1 && p[q]->shape[0] == 1 ? 0 : j) : j;
    int64_t a = e[3] < 0 ? e[3] + rank : e[3];
    if (a < 0 || a >= rank)
      return ir_ref_fail(msg, msglen, "axes[%lld] is %lld, outside the operand's rank %d",
                         (long long)j, (long long)e[3], rank);
    if (seen[a]) return ir_ref_fail(msg, msglen, "axis %lld is sliced twice", (long long)a);
    if (e[2] == 0) return ir_ref_fail(msg, msglen, "step[%lld] is 0", (long long)j);
    seen[a] = true;
    for (int q = 0; q < 3; q++) v[a][q] = e[q];
  }
  return 0;
}
