/* ops_shape.c - ONNX data movement: Reshape (0 and -1, allowzero), Flatten,
 * Transpose, Concat, Split (attribute, input or num_outputs), Slice (attrs
 * before opset 10, inputs after; steps, negative and clamped bounds, made
 * exact for static dims), Gather, Squeeze / Unsqueeze (axes attribute or
 * input), Expand and Tile. Over known integer data (shape computations)
 * Reshape, Concat, Gather, Slice, Squeeze and Unsqueeze fold at import. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"



/* Integer list from an attribute (before `opset`) or known input i. */
static int int_list(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, int i, int opset,
                    const char *attr, int64_t *v, int max, int *cnt, bool *given) {
  *cnt = 0;
  *given = false;
  if (x->opset < opset) {
    const int64_t *a = ox_attr_ints(n, attr, cnt);
    if (*cnt > max) return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries", attr, *cnt);
    if (a) memcpy(v, a, (size_t)*cnt * sizeof *v);
    *given = ox_attr(n, attr) != NULL;
    return 0;
  }
  if (nin <= i || !in[i]) return 0;
  *given = true;
  if (!ox_known_consts(in[i], v, max, cnt))
    return ox_unsupported(x, n, "input '%s' (%s) is not known at import", in[i]->name, attr);
  return 0;
}

int ox_op_Reshape(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  if (nin < 2 || !in[0] || !in[1]) return ox_fail(x, KILN_ERR_IO, "Reshape needs data and shape");
  bool allowzero = ox_attr_int(n, "allowzero", 0) != 0;
  if (in[0]->known && !in[0]->init) { /* known data keeps its elements */
    int64_t sh[IR_MAX_RANK];
    int k;
    if (ox_known_consts(in[1], sh, IR_MAX_RANK, &k)) {
      int64_t prodk = 1, inf = -1;
      for (int i = 0; i < k; i++) {
        if (sh[i] == 0 && !allowzero) sh[i] = i < in[0]->rank ? in[0]->shape[i] : 0;
        if (sh[i] == -1) inf = i;
        else prodk *= sh[i];
      }
      if (inf >= 0 && prodk) sh[inf] = in[0]->numel / prodk;
      return ox_set_known(x, out[0], in[0]->dtype, k, sh, in[0]->e) < 0 ? -1 : 0;
    }
  }
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_dim *dims[IR_MAX_RANK];
  int nd;
  const ir_value *sv = (const ir_value *)in[1]->v;
  int64_t len;
  if (ox_run_time_data(in[1]) && sv->type.rank == 1 &&
      ir_dim_is_const(sv->type.dims[0], &len) && len <= IR_MAX_RANK) {
    /* a graph input or a value computed from inputs: kiln reads the target
     * from its data (mo.reshape's shape operand), each dim a symbol of its
     * own */
    for (int i = 0; i < len; i++)
      if (!(dims[i] = ox_symbol(x, NULL))) return -1;
    char ty[1024];
    ox_type_text(ty, sizeof ty, ox_type(a)->dtype, (int)len, dims);
    if (!(out[0]->v = ox_op(x, "reshape", (kiln_value *[]){a, in[1]->v}, 2, ty,
                            "{allowzero = %s}", allowzero ? "true" : "false")))
      return FAILED();
    return 0;
  }
  int r = ox_reshape_dims(x, a, in[1], allowzero, dims, &nd);
  if (r) return r;
  if (!(out[0]->v = ox_reshape(x, a, nd, dims))) return FAILED();
  return 0;
}

int ox_op_Flatten(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int64_t ax = ox_attr_int(n, "axis", 1);
  if (ax < 0) ax += t->rank;
  if (ax < 0 || ax > t->rank) return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
  ir_arena *ar = x->ir->arena;
  const ir_dim *d[2] = {ir_dim_const(ar, 1), ir_dim_const(ar, 1)};
  for (int i = 0; i < t->rank && d[0] && d[1]; i++)
    d[i >= ax] = ir_dim_mul(ar, d[i >= ax], t->dims[i]);
  if (!d[0] || !d[1]) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (!(out[0]->v = ox_reshape(x, a, 2, d))) return FAILED();
  return 0;
}

int ox_op_Transpose(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int rank = ox_type(a)->rank, np;
  const int64_t *p = ox_attr_ints(n, "perm", &np);
  if (p && np != rank) return ox_fail(x, KILN_ERR_VERIFY, "perm has %d entries for rank %d", np, rank);
  char buf[512];
  size_t k = (size_t)snprintf(buf, sizeof buf, "{dims = [");
  for (int i = 0; i < rank; i++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? ", " : "",
                          (long long)(p ? p[i] : rank - 1 - i));
  snprintf(buf + k, sizeof buf - k, "]}");
  if (rank < 2) return ox_alias(x, out[0], in[0]);
  if (!(out[0]->v = ox_op(x, "permute", &a, 1, NULL, "%s", buf))) return FAILED();
  return 0;
}

int ox_op_Concat(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  int64_t axis = ox_attr_int(n, "axis", 0);
  bool known = nin > 0;
  for (int i = 0; i < nin; i++) known = known && in[i] && in[i]->known && in[i]->rank == 1;
  if (known) { /* shape data: 1-D known pieces */
    const ir_dim *e[OX_KNOWN_MAX];
    int64_t len = 0;
    for (int i = 0; i < nin; i++) {
      if (len + in[i]->numel > OX_KNOWN_MAX) goto build;
      memcpy(e + len, in[i]->e, (size_t)in[i]->numel * sizeof *e);
      len += in[i]->numel;
    }
    return ox_set_known(x, out[0], in[0]->dtype, 1, &len, e) < 0 ? -1 : 0;
  }
build:;
  kiln_value *v[64];
  int k = 0;
  for (int i = 0; i < nin && k < 64; i++) {
    if (!in[i]) continue;
    if (!(v[k] = IN(i))) return rc;
    k++;
  }
  if (!(out[0]->v = ox_op(x, "concat", v, k, NULL, "{axis = %lld}", (long long)axis)))
    return FAILED();
  return 0;
}

int ox_op_Split(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  int axis;
  if (!ox_axis(ox_attr_int(n, "axis", 0), t->rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
  int64_t sizes[64];
  int ns = 0;
  bool given;
  if (nout > 64) return ox_unsupported(x, n, "%d outputs", nout);
  if (x->opset >= 13 && nin > 1 && ox_run_time_data(in[1]))
    return ox_split_data(x, n, a, axis, in[1], out, nout);
  int r = int_list(x, n, in, nin, 1, 13, "split", sizes, 64, &ns, &given);
  if (r) return r;
  if (!given || ns == 0) {
    int64_t d;
    if (!ir_dim_is_const(t->dims[axis], &d))
      return ox_unsupported(x, n, "an even split of a symbolic dim");
    int parts = (int)ox_attr_int(n, "num_outputs", nout);
    if (parts < 1) return ox_fail(x, KILN_ERR_VERIFY, "num_outputs %d", parts);
    int64_t chunk = (d + parts - 1) / parts;
    ns = parts;
    for (int i = 0; i < parts; i++) {
      int64_t left = d - chunk * i;
      sizes[i] = left < 0 ? 0 : left < chunk ? left : chunk;
    }
  }
  if (ns != nout) return ox_fail(x, KILN_ERR_VERIFY, "%d split sizes for %d outputs", ns, nout);
  char buf[1024];
  size_t k = (size_t)snprintf(buf, sizeof buf, "{axis = %d, split_sizes = [", axis);
  for (int i = 0; i < ns; i++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? ", " : "", (long long)sizes[i]);
  snprintf(buf + k, sizeof buf - k, "]}");
  kiln_value *r0 = ox_op(x, "split", &a, 1, NULL, "%s", buf);
  if (!r0) return FAILED();
  for (int i = 0; i < nout; i++) out[i]->v = kiln_value_result(r0, i);
  return 0;
}

/* ONNX's clamping of one axis for a static dim d, as exact kiln bounds. */
static void slice_static(int64_t d, int64_t *start, int64_t *end, int64_t step) {
  int64_t s = *start, e = *end;
  if (s < 0) s = s + d < 0 ? 0 : s + d;
  if (e < 0) e = e + d < 0 ? (step > 0 ? 0 : -1) : e + d;
  if (step > 0) {
    s = s > d ? d : s;
    e = e > d ? d : e;
  } else {
    s = s > d - 1 ? d - 1 : s;
    e = e > d - 1 ? d - 1 : e;
  }
  *start = s;
  *end = step < 0 && e < 0 ? INT64_MAX : e; /* kiln: INT64_MAX stop = past the first */
}

/* Slice whose starts / ends / axes / steps include graph inputs or values
 * computed from them (ox_run_time_data): a mo.slice_tensor with data
 * bounds, every result dim a symbol of its own. */
static int slice_from_inputs(ox *x, ox_val **in, int nin, ox_val **out) {
  BEGIN;
  kiln_value *ops[5] = {IN(0), NULL, NULL, NULL, NULL};
  if (!ops[0]) return rc;
  int nops = 4;
  for (int i = 1; i <= 2; i++)
    if (!(ops[i] = IN(i))) return rc;
  const ir_type *st = ox_type(ops[1]);
  int64_t k;
  if (st->rank != 1 || !ir_dim_is_const(st->dims[0], &k) || k > IR_MAX_RANK)
    return ox_unsupported(x, x->node, "starts is not 1-D of a static length");
  if (nin > 4 && in[4]) {
    if (!(ops[3] = IN(4))) return rc;
  } else { /* steps of 1 */
    int64_t ones[IR_MAX_RANK];
    for (int64_t j = 0; j < k; j++) ones[j] = 1;
    if (!(ops[3] = kiln_graph_add_constant(x->g, KILN_INT64, 1, &k, ones, x->st)))
      return ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
  }
  if (nin > 3 && in[3]) {
    if (!(ops[4] = IN(3))) return rc;
    nops = 5;
  }
  const ir_type *xt = ox_type(ops[0]);
  const ir_dim *dims[IR_MAX_RANK];
  for (int a = 0; a < xt->rank; a++)
    if (!(dims[a] = ox_symbol(x, NULL))) return -1;
  char ty[1024];
  ox_type_text(ty, sizeof ty, xt->dtype, xt->rank, dims);
  if (!(out[0]->v = ox_op(x, "slice_tensor", ops, nops, ty, NULL))) return FAILED();
  return 0;
}

int ox_op_Slice(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  bool from_inputs = false;
  for (int i = 1; i < nin && i <= 4 && x->opset >= 10; i++) from_inputs |= ox_run_time_data(in[i]);
  if (from_inputs) return slice_from_inputs(x, in, nin, out);
  int64_t st[IR_MAX_RANK], en[IR_MAX_RANK], ax[IR_MAX_RANK], sp[IR_MAX_RANK];
  int ns, ne, na, nsp;
  bool g1, g2, g3, g4;
  int r;
  if (x->opset >= 10 && ox_slice_is_dynamic((const ox_val *const *)in, nin))
    return ox_slice_dynamic(x, n, in, nin, out);
  if ((r = int_list(x, n, in, nin, 1, 10, "starts", st, IR_MAX_RANK, &ns, &g1)) ||
      (r = int_list(x, n, in, nin, 2, 10, "ends", en, IR_MAX_RANK, &ne, &g2)) ||
      (r = int_list(x, n, in, nin, 3, 10, "axes", ax, IR_MAX_RANK, &na, &g3)) ||
      (r = int_list(x, n, in, nin, 4, 10, "steps", sp, IR_MAX_RANK, &nsp, &g4)))
    return r;
  if (ns != ne || (g3 && na != ns) || (g4 && nsp != ns))
    return ox_fail(x, KILN_ERR_VERIFY, "starts, ends, axes and steps differ in length");
  int rank = nin > 0 && in[0] && in[0]->known ? in[0]->rank : -1;
  kiln_value *a = NULL;
  if (rank < 0) {
    if (!(a = IN(0))) return rc;
    rank = ox_type(a)->rank;
  }
  int64_t S[IR_MAX_RANK], E[IR_MAX_RANK], P[IR_MAX_RANK];
  int used = 0;
  for (int i = 0; i < rank; i++) S[i] = 0, E[i] = INT64_MAX, P[i] = 1;
  for (int i = 0; i < ns; i++) {
    int axis;
    if (!ox_axis(g3 ? ax[i] : i, rank, &axis)) return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
    int64_t step = g4 ? sp[i] : 1;
    if (step == 0) return ox_fail(x, KILN_ERR_VERIFY, "step 0");
    S[axis] = st[i], E[axis] = en[i], P[axis] = step;
    if (axis + 1 > used) used = axis + 1;
    int64_t d;
    bool stat = a ? ir_dim_is_const(ox_type(a)->dims[axis], &d) : (d = in[0]->shape[axis], true);
    if (stat) {
      slice_static(d, &S[axis], &E[axis], step);
    } else {
      if (step < 0) return ox_unsupported(x, n, "a negative step on a symbolic dim");
      if (S[axis] < -(INT64_C(1) << 62)) S[axis] = 0;
      if (E[axis] > (INT64_C(1) << 62)) E[axis] = INT64_MAX;
    }
  }
  if (!a) { /* known 1-D data (shape computations) */
    if (rank != 1) goto build;
    const ir_dim *e[OX_KNOWN_MAX];
    int64_t len = 0, d = in[0]->shape[0];
    int64_t s = S[0], stop = E[0] == INT64_MAX ? (P[0] > 0 ? d : -1) : E[0];
    for (int64_t i = s; P[0] > 0 ? i < stop : i > stop; i += P[0]) e[len++] = in[0]->e[i];
    return ox_set_known(x, out[0], in[0]->dtype, 1, &len, e) < 0 ? -1 : 0;
  }
build:
  if (!a && !(a = IN(0))) return rc;
  if (used == 0) used = 1;
  char buf[2048];
  size_t k = 0;
  const char *names[3] = {"start", "step", "stop"};
  const int64_t *lists[3] = {S, P, E};
  k += (size_t)snprintf(buf + k, sizeof buf - k, "{");
  for (int l = 0; l < 3; l++) {
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s = [", l ? ", " : "", names[l]);
    for (int i = 0; i < used; i++)
      k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? ", " : "", (long long)lists[l][i]);
    k += (size_t)snprintf(buf + k, sizeof buf - k, "]");
  }
  snprintf(buf + k, sizeof buf - k, "}");
  if (!(out[0]->v = ox_op(x, "slice_tensor", &a, 1, NULL, "%s", buf))) return FAILED();
  return 0;
}

int ox_op_Gather(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  if (nin < 2 || !in[0] || !in[1]) return ox_fail(x, KILN_ERR_IO, "Gather needs data and indices");
  int64_t idx[OX_KNOWN_MAX];
  int ni;
  if (in[0]->known && in[0]->rank == 1 && ox_known_consts(in[1], idx, OX_KNOWN_MAX, &ni)) {
    const ir_dim *e[OX_KNOWN_MAX];
    int64_t d = in[0]->shape[0];
    for (int i = 0; i < ni; i++) {
      int64_t j = idx[i] < 0 ? idx[i] + d : idx[i];
      if (j < 0 || j >= d) return ox_fail(x, KILN_ERR_VERIFY, "index %lld out of range", (long long)idx[i]);
      e[i] = in[0]->e[j];
    }
    return ox_set_known(x, out[0], in[0]->dtype, in[1]->rank, in[1]->shape, e) < 0 ? -1 : 0;
  }
  kiln_value *a = IN(0), *b = a ? IN(1) : NULL;
  if (!b) return rc;
  int axis;
  if (!ox_axis(ox_attr_int(n, "axis", 0), ox_type(a)->rank, &axis))
    return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
  if (!(out[0]->v = ox_op(x, "gather", (kiln_value *[]){a, b}, 2, NULL, "{axis = %d}", axis)))
    return FAILED();
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Squeeze / Unsqueeze: the axes (attribute before opset 13, input 1
 * after), and operand 0 as known data (*known) or as a kiln value *a, with
 * its rank. 0, -1 (error) or 1 (unsupported). */
static int squeeze_operands(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, int64_t *axes,
                            int *na, bool *known, kiln_value **a, int *rank) {
  BEGIN;
  bool given;
  int r = int_list(x, n, in, nin, 1, 13, "axes", axes, IR_MAX_RANK, na, &given);
  if (r) return r;
  *known = in[0] && in[0]->known && !in[0]->init;
  *a = NULL;
  *rank = *known ? in[0]->rank : -1;
  if (!*known) {
    if (!(*a = IN(0))) return rc;
    *rank = ox_type(*a)->rank;
  }
  return 0;
}

/* Input 1 (axes, opset 13 on) is run-time data: the op goes to data_axes.c. */
static bool axes_from_data(ox *x, ox_val **in, int nin) {
  return x->opset >= 13 && nin > 1 && ox_run_time_data(in[1]);
}

int ox_op_Squeeze(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int nun0 = x->nunsup; /* for FAILED() */
  if (axes_from_data(x, in, nin)) {
    int rc = 0;
    kiln_value *a = IN(0);
    return a ? ox_squeeze_data(x, n, a, in[1], out[0]) : rc;
  }
  int64_t axes[IR_MAX_RANK];
  int na, rank;
  bool known;
  kiln_value *a;
  int r = squeeze_operands(x, n, in, nin, axes, &na, &known, &a, &rank);
  if (r) return r;
  bool sq[IR_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int ax;
    if (!ox_axis(axes[i], rank, &ax)) return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
    sq[ax] = true;
  }
  if (na == 0)
    for (int i = 0; i < rank; i++) {
      int64_t d;
      if (known ? in[0]->shape[i] == 1 : ir_dim_is_const(ox_type(a)->dims[i], &d) && d == 1)
        sq[i] = true;
      else if (!known && !ir_dim_is_const(ox_type(a)->dims[i], &d))
        return ox_unsupported(x, n, "squeezing every 1-dim of a symbolic shape");
    }
  if (known) {
    int64_t sh[IR_MAX_RANK];
    int k = 0;
    for (int i = 0; i < rank; i++)
      if (!sq[i]) sh[k++] = in[0]->shape[i];
    return ox_set_known(x, out[0], in[0]->dtype, k, sh, in[0]->e) < 0 ? -1 : 0;
  }
  for (int i = rank - 1; i >= 0; i--)
    if (sq[i] && !(a = ox_op(x, "squeeze", &a, 1, NULL, "{axis = %d}", i))) return FAILED();
  out[0]->v = a;
  return 0;
}

int ox_op_Unsqueeze(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    int nout) {
  int nun0 = x->nunsup; /* for FAILED() */
  if (axes_from_data(x, in, nin)) {
    int rc = 0;
    kiln_value *a = IN(0);
    return a ? ox_unsqueeze_data(x, n, a, in[1], out[0]) : rc;
  }
  int64_t axes[IR_MAX_RANK];
  int na, rank;
  bool known;
  kiln_value *a;
  int r = squeeze_operands(x, n, in, nin, axes, &na, &known, &a, &rank);
  if (r) return r;
  int orank = rank + na;
  if (orank > IR_MAX_RANK) return ox_unsupported(x, n, "rank %d", orank);
  for (int i = 0; i < na; i++) {
    int ax;
    if (!ox_axis(axes[i], orank, &ax)) return ox_fail(x, KILN_ERR_VERIFY, "axis out of range");
    axes[i] = ax;
  }
  qsort(axes, (size_t)na, sizeof *axes, cmp_i64);
  if (known) {
    int64_t sh[IR_MAX_RANK];
    for (int i = 0, k = 0, j = 0; i < orank; i++)
      sh[i] = j < na && axes[j] == i ? (j++, 1) : in[0]->shape[k++];
    return ox_set_known(x, out[0], in[0]->dtype, orank, sh, in[0]->e) < 0 ? -1 : 0;
  }
  for (int i = 0; i < na; i++)
    if (!(a = ox_op(x, "unsqueeze", &a, 1, NULL, "{axis = %lld}", (long long)axes[i])))
      return FAILED();
  out[0]->v = a;
  return 0;
}

/* Expand whose shape is a graph input, a constant or computed from them:
 * kiln reads it before the run (mo.broadcast_to {bidirectional}). A result dim is operand 0's
 * where the shape has no entry for it or operand 0's dim is a static one
 * other than 1 (numpy's rule leaves no choice); else a symbol of its own,
 * bound from the data. */
static int expand_from_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *sh,
                            ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_value *sv = (const ir_value *)sh->v;
  int64_t len, c;
  if (!sv || (sv->def && sv->def->op != IR_OP_CONSTANT && !ox_run_time_data(sh)) ||
      sv->type.rank != 1 || !ir_dim_is_const(sv->type.dims[0], &len) || len > IR_MAX_RANK)
    return ox_unsupported(x, n, "the shape is neither known at import nor 1-D run-time data "
                          "of static length computed from the inputs");
  const ir_type *t = ox_type(a);
  int rank = (int)len > t->rank ? (int)len : t->rank;
  const ir_dim *d[IR_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    int ia = i - (rank - t->rank), is = i - (rank - (int)len);
    const ir_dim *da = ia >= 0 ? t->dims[ia] : NULL;
    if (da && (is < 0 || (ir_dim_is_const(da, &c) && c != 1)))
      d[i] = da;
    else if (!(d[i] = ox_symbol(x, NULL)))
      return -1;
  }
  char ty[4096];
  ox_type_text(ty, sizeof ty, t->dtype, rank, d);
  if (!(out->v = ox_op(x, "broadcast_to", (kiln_value *[]){a, sh->v}, 2, ty,
                       "{bidirectional = true}")))
    return FAILED();
  return 0;
}

int ox_op_Expand(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  if (nin >= 2 && in[1] && !in[1]->known) return expand_from_data(x, n, a, in[1], out[0]);
  if (nin < 2 || !in[1] || !in[1]->known || in[1]->rank != 1 || in[1]->numel > IR_MAX_RANK)
    return ox_unsupported(x, n, "the shape is not known at import");
  const ir_type *t = ox_type(a);
  int sr = (int)in[1]->numel, rank = sr > t->rank ? sr : t->rank;
  const ir_dim *d[IR_MAX_RANK];
  bool same = rank == t->rank;
  for (int i = 0; i < rank; i++) {
    int ia = i - (rank - t->rank), is = i - (rank - sr);
    const ir_dim *da = ia >= 0 ? t->dims[ia] : NULL, *ds = is >= 0 ? in[1]->e[is] : NULL;
    int64_t c;
    if (!da) d[i] = ds;
    else if (!ds || (ir_dim_is_const(ds, &c) && c == 1)) d[i] = da;
    else if ((ir_dim_is_const(da, &c) && c == 1) || ir_dim_equal(da, ds)) d[i] = ds;
    else if (ir_dim_is_const(da, &c)) d[i] = da; /* the builder checks ds against it */
    else return ox_unsupported(x, n, "cannot tell which of two symbolic dims broadcasts");
    if (!da || !ir_dim_equal(d[i], da)) same = false;
  }
  if (same) {
    out[0]->v = a;
    return 0;
  }
  char ty[4096];
  ox_type_text(ty, sizeof ty, t->dtype, rank, d);
  if (!(out[0]->v = ox_op(x, "broadcast_to", &a, 1, ty, NULL))) return FAILED();
  return 0;
}

/* Tile whose repeats are run-time data (ox_run_time_data): x [d0, d1, ...]
 * viewed as [1, d0, 1, d1, ...], broadcast to [r0, d0, r1, d1, ...] (the
 * shape operand interleaves the repeats with x's shape) and reshaped to
 * [r0 * d0, r1 * d1, ...]; kiln reads both shapes from the data before the
 * graph runs (ir/shape.h), so a negative repeat is an error naming
 * mo.broadcast_to. */
static int tile_from_data(ox *x, kiln_value *a, ox_val *reps, ox_val *out) {
  int nun0 = x->nunsup; /* for FAILED() */
  const ir_type *t = ox_type(a), *rt = ox_type(reps->v);
  int r = t->rank;
  int64_t len;
  if (rt->rank != 1 || !ir_dim_is_const(rt->dims[0], &len) || len != r || 2 * r > IR_MAX_RANK)
    return ox_unsupported(x, x->node, "repeats must be 1-D with one entry per axis of a rank "
                          "up to %d", IR_MAX_RANK / 2);
  if (r == 0) {
    out->v = a;
    return 0;
  }
  kiln_value *rep = reps->v;
  if (rt->dtype != IR_DT_SI64 && !(rep = ox_op(x, "cast", &rep, 1, NULL, "{dtype = si64}")))
    return FAILED();
  kiln_value *shp = ox_op(x, "shape_to_tensor", &a, 1, NULL, NULL);
  kiln_value *ru = shp ? ox_op(x, "unsqueeze", &rep, 1, NULL, "{axis = 1}") : NULL;
  kiln_value *su = ru ? ox_op(x, "unsqueeze", &shp, 1, NULL, "{axis = 1}") : NULL;
  kiln_value *pairs = su ? ox_op(x, "concat", (kiln_value *[]){ru, su}, 2, NULL, "{axis = 1}")
                         : NULL; /* [[r0, d0], [r1, d1], ...] */
  if (!pairs) return FAILED();
  ir_arena *ar = x->ir->arena;
  const ir_dim *d2[1] = {ir_dim_const(ar, 2 * r)}, *wide[IR_MAX_RANK], *flat[IR_MAX_RANK];
  kiln_value *inter = ox_reshape(x, pairs, 1, d2);
  for (int i = 0; i < r; i++) {
    wide[2 * i] = ir_dim_const(ar, 1);
    wide[2 * i + 1] = t->dims[i];
  }
  kiln_value *xu = inter ? ox_reshape(x, a, 2 * r, wide) : NULL;
  if (!xu) return FAILED();
  for (int i = 0; i < r; i++) {
    if (!(wide[2 * i] = ox_symbol(x, NULL)) || !(flat[i] = ox_symbol(x, NULL))) return -1;
  }
  char ty[2048];
  kiln_value *bc = ox_op(x, "broadcast_to", (kiln_value *[]){xu, inter}, 2,
                         ox_type_text(ty, sizeof ty, t->dtype, 2 * r, wide), NULL);
  kiln_value *prod = bc ? ox_op(x, "mul", (kiln_value *[]){rep, shp}, 2, NULL, NULL) : NULL;
  if (!prod || !(out->v = ox_op(x, "reshape", (kiln_value *[]){bc, prod}, 2,
                                ox_type_text(ty, sizeof ty, t->dtype, r, flat), NULL)))
    return FAILED();
  return 0;
}

int ox_op_Tile(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  BEGIN;
  kiln_value *a = IN(0);
  if (!a) return rc;
  int64_t rep[IR_MAX_RANK];
  int nr;
  if (nin >= 2 && ox_run_time_data(in[1])) return tile_from_data(x, a, in[1], out[0]);
  if (nin < 2 || !ox_known_consts(in[1], rep, IR_MAX_RANK, &nr))
    return ox_unsupported(x, n, "repeats not known at import");
  if (nr != ox_type(a)->rank) return ox_fail(x, KILN_ERR_VERIFY, "%d repeats for rank %d", nr, ox_type(a)->rank);
  char list[IR_MAX_RANK * 24 + 4];
  size_t len = 0;
  for (int i = 0; i < nr; i++) {
    if (rep[i] < 0) return ox_fail(x, KILN_ERR_VERIFY, "repeat %lld is negative", (long long)rep[i]);
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? ", " : "", (long long)rep[i]);
  }
  if (!(a = ox_op(x, "tile", &a, 1, NULL, "{repeats = [%s]}", list))) return FAILED();
  out[0]->v = a;
  return 0;
}
