/* ops_fold.c - what the importer computes itself: Constant, Shape, Size,
 * ConstantOfShape, Range, ReduceProd over known data (else mo.prod), and integer
 * elementwise ops whose inputs are all known (with broadcasting). Known
 * elements are dims, so Shape(x)[0] * Shape(x)[1] is the dim `batch * seq`
 * and a Reshape reading it gets a symbolic target. Where a value cannot be
 * folded (a symbolic element divided by a symbol, ...) the op is built as
 * kiln ops instead (return 2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

static int oom(ox *x) { return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory"); }

/* One scalar step on dims; NULL when it does not fold (or out of memory: *err). */
static const ir_dim *fold2(ox *x, const char *op, const ir_dim *a, const ir_dim *b, bool *err) {
  ir_arena *ar = x->ir->arena;
  int64_t ca, cb;
  bool ka = ir_dim_is_const(a, &ca), kb = b && ir_dim_is_const(b, &cb);
  const ir_dim *r = NULL;
  if (!strcmp(op, "Add")) r = ir_dim_add(ar, a, b);
  else if (!strcmp(op, "Sub")) r = ir_dim_sub(ar, a, b);
  else if (!strcmp(op, "Mul")) r = ir_dim_mul(ar, a, b);
  else if (!strcmp(op, "Neg")) r = ir_dim_mul(ar, a, ir_dim_const(ar, -1));
  else if (!strcmp(op, "Div")) {
    if (ka && kb) {
      if (cb == 0) return NULL;
      r = ir_dim_const(ar, ca / cb); /* C division: ONNX truncates */
    } else if (kb && cb > 0) {
      r = ir_dim_floordiv(ar, a, cb, NULL); /* dims are never negative */
    } else {
      return NULL;
    }
  } else if (!strcmp(op, "Mod")) {
    if (!(ka && kb) || cb == 0) return NULL;
    int64_t m = ca % cb;
    if (m != 0 && ((m < 0) != (cb < 0))) m += cb;
    r = ir_dim_const(ar, m);
  } else if (!strcmp(op, "Equal")) {
    if (ir_dim_equal(a, b)) r = ir_dim_const(ar, 1);
    else if (ka && kb) r = ir_dim_const(ar, 0);
    else if ((ka && ca < 0 && ir_dim_is_sym(b)) || (kb && cb < 0 && ir_dim_is_sym(a)))
      r = ir_dim_const(ar, 0); /* a symbol is a dim, never negative */
    else return NULL;
  } else if (!strcmp(op, "Less") || !strcmp(op, "Greater") || !strcmp(op, "Max") ||
             !strcmp(op, "Min") || !strcmp(op, "And") || !strcmp(op, "Or") ||
             !strcmp(op, "Abs") || !strcmp(op, "Not") || !strcmp(op, "GreaterOrEqual") ||
             !strcmp(op, "LessOrEqual")) {
    if (!ka || (b && !kb)) {
      if (!strcmp(op, "Abs")) return a; /* dims are never negative */
      return NULL;
    }
    int64_t v = 0;
    switch (op[0]) {
    case 'L': v = op[4] == 'O' ? ca <= cb : ca < cb; break;
    case 'G': v = op[7] == 'O' ? ca >= cb : ca > cb; break;
    case 'M': v = op[1] == 'a' ? (ca > cb ? ca : cb) : (ca < cb ? ca : cb); break;
    case 'A': v = op[1] == 'n' ? (ca && cb) : ca < 0 ? -ca : ca; break;
    case 'O': v = ca || cb; break;
    case 'N': v = !ca; break;
    }
    r = ir_dim_const(ar, v);
  } else {
    return NULL;
  }
  if (!r) *err = true;
  return r;
}

static bool is_compare(const char *op) {
  return !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
         !strcmp(op, "GreaterOrEqual") || !strcmp(op, "LessOrEqual");
}

int ox_fold_elementwise(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val *out) {
  const char *op = n->op_type;
  bool where = !strcmp(op, "Where");
  if (nin < 1 || nin > 3) return 2;
  for (int i = 0; i < nin; i++)
    if (!in[i] || !in[i]->known) return 2;
  /* broadcast shape */
  int rank = 0;
  for (int i = 0; i < nin; i++) rank = in[i]->rank > rank ? in[i]->rank : rank;
  int64_t shape[IR_MAX_RANK], numel = 1;
  for (int d = 0; d < rank; d++) {
    shape[d] = 1;
    for (int i = 0; i < nin; i++) {
      int k = d - (rank - in[i]->rank);
      if (k < 0) continue;
      int64_t s = in[i]->shape[k];
      if (s != 1 && shape[d] != 1 && s != shape[d]) return 2; /* the builder will say why */
      if (s != 1) shape[d] = s;
    }
    numel *= shape[d];
  }
  if (numel > OX_KNOWN_MAX) return 2;
  const ir_dim **e = malloc((size_t)(numel ? numel : 1) * sizeof *e);
  if (!e) return oom(x);
  bool err = false;
  for (int64_t j = 0; j < numel; j++) {
    const ir_dim *a[3] = {0};
    for (int i = 0; i < nin; i++) { /* the element of input i that j reads */
      int64_t rem = j, off = 0, stride = 1;
      for (int d = rank - 1; d >= 0; d--) {
        int64_t idx = rem % shape[d];
        rem /= shape[d];
        int k = d - (rank - in[i]->rank);
        if (k < 0) continue;
        if (in[i]->shape[k] != 1) off += idx * stride;
        stride *= in[i]->shape[k];
      }
      a[i] = in[i]->e[off];
    }
    const ir_dim *r;
    if (where) {
      int64_t c;
      r = ir_dim_is_const(a[0], &c) ? (c ? a[1] : a[2]) : NULL;
    } else {
      r = fold2(x, op, a[0], nin > 1 ? a[1] : NULL, &err);
    }
    if (!r) {
      free(e);
      return err ? oom(x) : 2;
    }
    e[j] = r;
  }
  ir_dtype dt = is_compare(op) ? IR_DT_BOOL : in[where ? 1 : 0]->dtype;
  int rc = ox_set_known(x, out, dt, rank, shape, e);
  free(e);
  return rc < 0 ? -1 : 0;
}

int ox_op_Constant(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  const Onnx__AttributeProto *a;
  kiln_tensor *t = NULL;
  char what[512];
  snprintf(what, sizeof what, "ONNX Constant '%s'", out[0]->name);
  if ((a = ox_attr(n, "value")) && a->t) {
    t = ox_tensor_decode(a->t, x->dir, x->ws, what, x->st);
    if (!t) return kiln_status_code(x->st) == KILN_ERR_UNSUPPORTED
                      ? ox_unsupported(x, n, "%s", kiln_status_message(x->st)) : -1;
  } else if ((a = ox_attr(n, "value_float")) || (a = ox_attr(n, "value_floats"))) {
    bool one = a->has_f;
    int64_t len = one ? 1 : (int64_t)a->n_floats;
    if (!(t = rt_tensor_alloc(KILN_FLOAT32, one ? 0 : 1, &len, x->st))) return -1;
    if (one) ((float *)t->data)[0] = a->f;
    else if (len) memcpy(t->data, a->floats, (size_t)len * sizeof(float));
  } else if ((a = ox_attr(n, "value_int")) || (a = ox_attr(n, "value_ints"))) {
    bool one = a->has_i;
    int64_t len = one ? 1 : (int64_t)a->n_ints;
    if (!(t = rt_tensor_alloc(KILN_INT64, one ? 0 : 1, &len, x->st))) return -1;
    if (one) ((int64_t *)t->data)[0] = a->i;
    else if (len) memcpy(t->data, a->ints, (size_t)len * sizeof(int64_t));
  } else {
    return ox_unsupported(x, n, "a Constant without a numeric value (sparse or string)");
  }
  return ox_set_init(x, out[0], t) < 0 ? -1 : 0;
}

int ox_op_Shape(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int rc = 0;
  const ir_dim *kd[IR_MAX_RANK];
  ir_type kt = {.rank = 0};
  const ir_type *t = &kt;
  if (nin > 0 && in[0] && in[0]->known && !in[0]->v) { /* known data: its shape, unbuilt */
    kt.rank = in[0]->rank;
    for (int i = 0; i < kt.rank; i++)
      if (!(kd[i] = ir_dim_const(x->ir->arena, in[0]->shape[i]))) return oom(x);
  } else {
    kiln_value *a = ox_in(x, in, nin, 0, &rc);
    if (!a) return rc;
    t = ox_type(a);
    for (int i = 0; i < t->rank; i++) kd[i] = t->dims[i];
  }
  int64_t r = t->rank, start = ox_attr_int(n, "start", 0), end = ox_attr_int(n, "end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  int64_t len = end > start ? end - start : 0;
  return ox_set_known(x, out[0], IR_DT_SI64, 1, &len, kd + start) < 0 ? -1 : 0;
}

int ox_op_Size(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int rc = 0;
  kiln_value *a = ox_in(x, in, nin, 0, &rc);
  if (!a) return rc;
  const ir_type *t = ox_type(a);
  const ir_dim *s = ir_dim_const(x->ir->arena, 1);
  for (int i = 0; s && i < t->rank; i++) s = ir_dim_mul(x->ir->arena, s, t->dims[i]);
  if (!s) return oom(x);
  return ox_set_known(x, out[0], IR_DT_SI64, 0, NULL, &s) < 0 ? -1 : 0;
}

int ox_op_ReduceProd(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                     int nout) {
  ox_val *s = nin > 0 ? in[0] : NULL;
  int na = 0;
  ox_attr_ints(n, "axes", &na);
  if (!s || !s->known || s->rank != 1 || na > 1 || nin > 1) /* data: mo.prod */
    return ox_reduce_plain(x, n, in, nin, out, "prod", 18);
  const ir_dim *p = ir_dim_const(x->ir->arena, 1);
  for (int64_t i = 0; p && i < s->numel; i++) p = ir_dim_mul(x->ir->arena, p, s->e[i]);
  if (!p) return oom(x);
  int64_t one = 1;
  bool keep = ox_attr_int(n, "keepdims", 1) != 0;
  return ox_set_known(x, out[0], s->dtype, keep ? 1 : 0, &one, &p) < 0 ? -1 : 0;
}

/* ConstantOfShape's value attribute (f32 0 when absent) as a rank-0 constant. */
static kiln_value *fill_value(ox *x, const Onnx__NodeProto *n) {
  const Onnx__AttributeProto *a = ox_attr(n, "value");
  if (!a || !a->t) return ox_scalar(x, IR_DT_F32, 0);
  kiln_tensor *v = ox_tensor_decode(a->t, x->dir, x->ws, "ConstantOfShape value", x->st);
  if (!v) return NULL;
  kiln_value *k = v->numel == 1 ? kiln_graph_add_constant(x->g, v->dtype, 0, NULL, v->data, x->st)
                                : NULL;
  if (!k && v->numel != 1)
    ox_fail(x, KILN_ERR_VERIFY, "value must hold one element, not %lld", (long long)v->numel);
  else if (!k)
    ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
  kiln_tensor_free(v);
  return k;
}

/* ConstantOfShape whose shape is a graph input or computed from one:
 * broadcast_to reads it before the graph runs, each result dim a symbol of its own. */
static int fill_from_shape_input(ox *x, const Onnx__NodeProto *n, ox_val *s, ox_val **out) {
  const ir_type *st = ox_type(s->v);
  int64_t rank;
  if (st->rank != 1 || !ir_dim_is_const(st->dims[0], &rank) || rank > IR_MAX_RANK)
    return ox_fail(x, KILN_ERR_VERIFY, "the shape input must be 1-D of a static length up to %d",
                   IR_MAX_RANK);
  if (st->dtype != IR_DT_SI64)
    return ox_fail(x, KILN_ERR_VERIFY, "the shape input is %s, not int64",
                   ir_dtype_name(st->dtype));
  const ir_dim *dims[IR_MAX_RANK];
  for (int64_t i = 0; i < rank; i++)
    if (!(dims[i] = ox_symbol(x, NULL)))
      return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  kiln_value *k = fill_value(x, n);
  if (!k) return x->nunsup ? 1 : -1;
  char ty[2048];
  ox_type_text(ty, sizeof ty, ox_type(k)->dtype, (int)rank, dims);
  if (!(out[0]->v = ox_op(x, "broadcast_to", (kiln_value *[]){k, s->v}, 2, ty, NULL)))
    return x->nunsup ? 1 : -1;
  return 0;
}

int ox_op_ConstantOfShape(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                          int nout) {
  ox_val *s = nin > 0 ? in[0] : NULL;
  if (ox_run_time_data(s)) return fill_from_shape_input(x, n, s, out);
  if (!s || !s->known || s->rank != 1 || s->numel > IR_MAX_RANK)
    return ox_unsupported(x, n, "the shape is not known at import");
  const Onnx__AttributeProto *a = ox_attr(n, "value");
  kiln_tensor *v = NULL;
  if (a && a->t) {
    if (!(v = ox_tensor_decode(a->t, x->dir, x->ws, "ConstantOfShape value", x->st))) return -1;
  } else {
    int64_t one = 1;
    if (!(v = rt_tensor_alloc(KILN_FLOAT32, 1, &one, x->st))) return -1;
    ((float *)v->data)[0] = 0.0f;
  }
  int rank = (int)s->numel;
  bool all_const = true;
  int64_t shape[IR_MAX_RANK], numel = 1;
  for (int i = 0; i < rank; i++) {
    if (!ir_dim_is_const(s->e[i], &shape[i])) all_const = false;
    else numel *= shape[i];
  }
  int rc;
  size_t es = kiln_dtype_size(v->dtype);
  if (all_const && numel <= OX_KNOWN_MAX * 16) { /* a filled tensor, as an initializer */
    kiln_tensor *t = rt_tensor_alloc(v->dtype, rank, shape, x->st);
    if (!t) {
      kiln_tensor_free(v);
      return -1;
    }
    for (int64_t i = 0; i < numel; i++) memcpy((char *)t->data + i * (int64_t)es, v->data, es);
    kiln_tensor_free(v);
    return ox_set_init(x, out[0], t) < 0 ? -1 : 0;
  }
  /* symbolic: broadcast a scalar constant */
  kiln_value *k = kiln_graph_add_constant(x->g, v->dtype, 0, NULL, v->data, x->st);
  kiln_dtype dt = v->dtype;
  kiln_tensor_free(v);
  if (!k) return ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
  char ty[2048];
  ox_type_text(ty, sizeof ty, (ir_dtype)dt, rank, s->e);
  rc = 0;
  if (!(out[0]->v = ox_op(x, "broadcast_to", &k, 1, ty, NULL))) rc = x->nunsup ? 1 : -1;
  return rc;
}

/* A scalar known at import: known integer data or a one-element float /
 * integer initializer. */
static bool scalar_known(const ox_val *v, double *out) {
  int64_t i;
  int cnt;
  if (v && ox_known_consts(v, &i, 1, &cnt) && cnt == 1) {
    *out = (double)i;
    return true;
  }
  if (!v || !v->init || v->init->numel != 1 || !v->init->data) return false;
  switch ((ir_dtype)v->init->dtype) {
  case IR_DT_F32: *out = *(const float *)v->init->data; return true;
  case IR_DT_F64: *out = *(const double *)v->init->data; return true;
  case IR_DT_SI32: *out = *(const int32_t *)v->init->data; return true;
  case IR_DT_SI64: *out = (double)*(const int64_t *)v->init->data; return true;
  default: return false;
  }
}

/* Range: integers known at import fold into known data; other constant
 * operands give a mo.range of the length they imply. Operands that are
 * graph inputs, or computed from them by other nodes, give a mo.range whose
 * length is a symbol of its own, which kiln reads from their data before
 * the graph runs (ir/shape.h: computed ones through the reference
 * interpreter). */
int ox_op_Range(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  int64_t v[3];
  double f[3];
  int cnt;
  bool ints = nin >= 3;
  for (int i = 0; i < 3 && ints; i++)
    ints = in[i] && ox_known_consts(in[i], &v[i], 1, &cnt) && cnt == 1;
  int64_t len = 0;
  if (ints) {
    if (v[2] == 0) return ox_fail(x, KILN_ERR_VERIFY, "delta is 0");
    len = (v[1] - v[0] + v[2] + (v[2] > 0 ? -1 : 1)) / v[2];
    if (len < 0) len = 0;
  }
  if (ints && len <= OX_KNOWN_MAX) {
    const ir_dim **e = malloc((size_t)(len + 1) * sizeof *e);
    if (!e) return oom(x);
    for (int64_t i = 0; i < len; i++)
      if (!(e[i] = ir_dim_const(x->ir->arena, v[0] + i * v[2]))) {
        free(e);
        return oom(x);
      }
    int rc = ox_set_known(x, out[0], in[0]->dtype, 1, &len, e);
    free(e);
    return rc < 0 ? -1 : 0;
  }
  bool from_inputs = false;
  if (!ints) {
    for (int i = 0; i < 3 && !from_inputs; i++)
      if (nin <= i || !scalar_known(in[i], &f[i])) from_inputs = true;
    for (int i = 0; i < 3 && from_inputs; i++) {
      const ir_value *iv = nin > i && in[i] ? (const ir_value *)in[i]->v : NULL;
      if (in[i] && (in[i]->known || in[i]->init)) continue;
      if (!iv || iv->type.rank != 0)
        return ox_unsupported(x, n, "start, limit and delta must be scalars");
      if (!ox_run_time_data(in[i]))
        return ox_unsupported(x, n, "'%s' depends on a weight, control flow or a count known "
                              "only as the graph runs", in[i]->name);
    }
  }
  if (!ints && !from_inputs) {
    if (f[2] == 0) return ox_fail(x, KILN_ERR_VERIFY, "delta is 0");
    double w = ceil((f[1] - f[0]) / f[2]);
    len = w > 0 ? (int64_t)w : 0;
  }
  int rc = 0, nun0 = x->nunsup;
  kiln_value *a = ox_in(x, in, nin, 0, &rc), *b = a ? ox_in(x, in, nin, 1, &rc) : NULL;
  kiln_value *c = b ? ox_in(x, in, nin, 2, &rc) : NULL;
  if (!c) return rc;
  char ty[128];
  const ir_dim *d = from_inputs ? ox_symbol(x, NULL) : ir_dim_const(x->ir->arena, len);
  if (!d) return oom(x);
  if (!(out[0]->v = ox_op(x, "range", (kiln_value *[]){a, b, c}, 3,
                          ox_type_text(ty, sizeof ty, ox_type(a)->dtype, 1, &d), NULL)))
    return x->nunsup > nun0 ? 1 : -1;
  return 0;
}
