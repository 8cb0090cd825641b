/* values.c - the importer's value table (ONNX name -> ox_val, hashed), the
 * step from known data or an initializer to a kiln value (constant or
 * weight), the builder wrapper that names the ONNX node in errors, and
 * attribute access. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int *slot(ox *x, const char *name) {
  size_t mask = (size_t)x->capindex - 1, i = (size_t)hash_str(name) & mask;
  while (x->index[i] >= 0 && strcmp(x->vals[x->index[i]]->name, name) != 0) i = (i + 1) & mask;
  return &x->index[i];
}

ox_val *ox_find(ox *x, const char *name) {
  if (!x->capindex) return NULL;
  int k = *slot(x, name);
  return k >= 0 ? x->vals[k] : NULL;
}

static int grow_index(ox *x) {
  int cap = x->capindex ? 2 * x->capindex : 256;
  int *idx = malloc((size_t)cap * sizeof *idx);
  if (!idx) return -1;
  for (int i = 0; i < cap; i++) idx[i] = -1;
  free(x->index);
  x->index = idx;
  x->capindex = cap;
  for (int k = 0; k < x->nvals; k++) *slot(x, x->vals[k]->name) = k;
  return 0;
}

ox_val *ox_new_val(ox *x, const char *name) {
  if (2 * (x->nvals + 1) > x->capindex && grow_index(x) < 0) goto oom;
  if (x->nvals == x->capvals) {
    int cap = x->capvals ? 2 * x->capvals : 256;
    ox_val **v = realloc(x->vals, (size_t)cap * sizeof *v);
    if (!v) goto oom;
    x->vals = v;
    x->capvals = cap;
  }
  ox_val *v = calloc(1, sizeof *v);
  if (!v) goto oom;
  v->name = name;
  int *s = slot(x, name);
  if (*s >= 0) { /* a name defined again (SSA is required, but be safe): the new one wins */
    x->vals[*s]->name = "";
  }
  x->vals[x->nvals] = v;
  *s = x->nvals++;
  return v;
oom:
  rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory importing the ONNX graph");
  return NULL;
}

const char *ox_type_text(char *buf, size_t cap, ir_dtype dt, int rank, const ir_dim *const *dims) {
  size_t k = (size_t)snprintf(buf, cap, "!mo.tensor<[");
  for (int i = 0; i < rank && k < cap; i++) {
    if (i) k += (size_t)snprintf(buf + k, cap - k, ", ");
    if (k < cap) k += ir_dim_print(dims[i], buf + k, cap - k);
  }
  if (k < cap) snprintf(buf + k, cap - k, "], %s>", ir_dtype_name(dt));
  return buf;
}

kiln_value *ox_op(ox *x, const char *op, kiln_value *const *in, int nin, const char *result_type,
                  const char *attr_fmt, ...) {
  char attrs[4096];
  if (attr_fmt) {
    va_list ap;
    va_start(ap, attr_fmt);
    vsnprintf(attrs, sizeof attrs, attr_fmt, ap);
    va_end(ap);
  }
  for (int i = 0; i < nin; i++)
    if (!in[i]) {
      ox_fail(x, KILN_ERR_INVALID_ARGUMENT, "operand %d of mo.%s is missing", i, op);
      return NULL;
    }
  kiln_value *v = kiln_graph_add_op(x->g, op, in, nin, attr_fmt ? attrs : NULL, result_type, x->st);
  if (!v) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kiln_status_message(x->st));
    /* an operand of a dtype kiln does not compute on: unsupported, not a bug */
    for (int i = 0; i < nin; i++)
      if (!ir_dtype_is_compute(ox_type(in[i])->dtype) && x->node) {
        ox_unsupported(x, x->node, "dtype %s: %s", ir_dtype_name(ox_type(in[i])->dtype), msg);
        kiln_status_clear(x->st);
        return NULL;
      }
    ox_fail(x, kiln_status_code(x->st), "%s", msg);
  }
  return v;
}

/* v rounded toward zero into [lo, hi] (NaN: 0): an attribute's value out of
 * an integer operand's range saturates instead of being undefined. */
static double clamp_int(double v, double lo, double hi) {
  return v != v ? 0 : v <= lo ? lo : v >= hi ? hi : v;
}

kiln_value *ox_scalar(ox *x, ir_dtype dt, double v) {
  union { float f; double d; int32_t i; int64_t l; uint8_t b; } u;
  switch (dt) {
  case IR_DT_F32: u.f = (float)v; break;
  case IR_DT_F64: u.d = v; break;
  case IR_DT_SI32: u.i = (int32_t)clamp_int(v, -2147483648.0, 2147483647.0); break;
  case IR_DT_SI64: /* the largest double below 2^63 */
    u.l = (int64_t)clamp_int(v, -9223372036854775808.0, 9223372036854774784.0);
    break;
  case IR_DT_BOOL: u.b = v != 0; break;
  default: { /* half floats and narrow integers: an f64 / si64 constant cast */
    ir_dtype wide = ir_dtype_is_float(dt) ? IR_DT_F64 : IR_DT_SI64;
    kiln_value *k = ir_dtype_is_castable(dt) && dt != IR_DT_UI64 ? ox_scalar(x, wide, v) : NULL;
    if (!k) {
      ox_unsupported(x, x->node, "a %s scalar operand", ir_dtype_name(dt));
      return NULL;
    }
    return ox_op(x, "cast", &k, 1, NULL, "{dtype = %s}", ir_dtype_name(dt));
  }
  }
  kiln_value *k = kiln_graph_add_constant(x->g, (kiln_dtype)dt, 0, NULL, &u, x->st);
  if (!k) ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
  return k;
}

/* Known data as a dense constant (every element constant). */
static kiln_value *known_constant(ox *x, ox_val *v, bool *unsup) {
  size_t es = ir_dtype_size(v->dtype);
  void *buf = malloc((size_t)(v->numel ? v->numel : 1) * es);
  if (!buf) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  for (int64_t i = 0; i < v->numel; i++) {
    int64_t c;
    if (!ir_dim_is_const(v->e[i], &c)) {
      free(buf);
      char d[128];
      ir_dim_print(v->e[i], d, sizeof d);
      *unsup = true;
      ox_unsupported(x, x->node,
                     "value '%s' holds the symbolic dim %s and is used as tensor data", v->name, d);
      return NULL;
    }
    switch (v->dtype) {
    case IR_DT_SI64: ((int64_t *)buf)[i] = c; break;
    case IR_DT_SI32: ((int32_t *)buf)[i] = (int32_t)c; break;
    case IR_DT_SI16: ((int16_t *)buf)[i] = (int16_t)c; break;
    case IR_DT_UI16: ((uint16_t *)buf)[i] = (uint16_t)c; break;
    case IR_DT_UI32: ((uint32_t *)buf)[i] = (uint32_t)c; break;
    case IR_DT_UI64: ((uint64_t *)buf)[i] = (uint64_t)c; break;
    default: ((uint8_t *)buf)[i] = (uint8_t)c; break;
    }
  }
  kiln_value *k = kiln_graph_add_constant(x->g, (kiln_dtype)v->dtype, v->rank, v->shape, buf, x->st);
  free(buf);
  return k;
}

kiln_value *ox_value(ox *x, ox_val *v, bool *unsup) {
  *unsup = false;
  if (v->v) return v->v;
  if (v->init && v->init->numel > OX_CONST_MAX) { /* a weight, bound by name */
    kiln_tensor *t = v->init;
    char dims[IR_MAX_RANK][24];
    const char *dp[IR_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
      snprintf(dims[i], sizeof dims[i], "%lld", (long long)t->shape[i]);
      dp[i] = dims[i];
    }
    v->v = kiln_graph_add_weight(x->g, v->name, t->dtype, t->rank, dp, x->st);
    if (!v->v) return NULL;
    v->init = NULL;
    v->weight = true;
    if (rt_wsrc_add_mapped(x->ws, v->name, t, v->in_file, t->nbytes, x->st) < 0) return NULL;
    return v->v;
  }
  if (v->init) {
    v->v = kiln_graph_add_constant(x->g, v->init->dtype, v->init->rank, v->init->shape,
                                   v->init->data, x->st);
    return v->v;
  }
  if (v->known) return v->v = known_constant(x, v, unsup);
  rt_err(x->st, KILN_ERR_INVALID_ARGUMENT, "ONNX value '%s' has no definition", v->name);
  return NULL;
}

/* ---- attributes ---- */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
  return NULL;
}

int ox_attr_ints3(ox *x, const Onnx__NodeProto *n, const char *name, int64_t dflt, int64_t *out) {
  int cnt;
  const int64_t *v = ox_attr_ints(n, name, &cnt);
  for (int i = 0; i < 3; i++) out[i] = dflt;
  if (!v) return 0;
  if (cnt != 3)
    return ox_fail(x, KILN_ERR_VERIFY, "%s has %d entries for 3 spatial axes", name, cnt);
  memcpy(out, v, 3 * sizeof *v);
  return 0;
}

int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a && a->has_i ? a->i : dflt;
}

double ox_attr_float(const Onnx__NodeProto *n, const char *name, double dflt) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  return a && a->has_f ? a->f : dflt;
}

const int64_t *ox_attr_ints(const Onnx__NodeProto *n, const char *name, int *count) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  *count = a ? (int)a->n_ints : 0;
  return a ? a->ints : NULL;
}

const char *ox_attr_string(const Onnx__NodeProto *n, const char *name, const char *dflt,
                           char *buf, size_t cap) {
  const Onnx__AttributeProto *a = ox_attr(n, name);
  if (!a || !a->has_s) return dflt;
  size_t len = a->s.len < cap - 1 ? a->s.len : cap - 1;
  if (len) memcpy(buf, a->s.data, len); /* an empty string may have no data */
  buf[len] = 0;
  return buf;
}

kiln_value *ox_in(ox *x, ox_val **in, int nin, int i, int *rc) {
  if (i >= nin || !in[i]) {
    *rc = ox_fail(x, KILN_ERR_IO, "input %d is required", i);
    return NULL;
  }
  bool unsup = false;
  kiln_value *v = ox_value(x, in[i], &unsup);
  if (!v) *rc = unsup ? 1 : ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
  return v;
}

int ox_alias(ox *x, ox_val *dst, ox_val *src) {
  if (src->known && !src->init) {
    dst->v = src->v;
  } else {
    int rc = 0;
    ox_val *one[1] = {src};
    if (!(dst->v = ox_in(x, one, 1, 0, &rc))) return rc;
  }
  if (src->known) { /* known data, an initializer's included, stays known */
    dst->known = true;
    dst->dtype = src->dtype;
    dst->rank = src->rank;
    memcpy(dst->shape, src->shape, sizeof dst->shape);
    dst->numel = src->numel;
    dst->e = src->e;
  }
  return 0;
}

int ox_set_init(ox *x, ox_val *v, kiln_tensor *t) {
  v->init = t;
  ir_dtype dt = (ir_dtype)t->dtype;
  v->dtype = dt;
  if (!ox_dtype_is_known_kind(dt) || t->numel > OX_KNOWN_MAX) return 0;
  const ir_dim **e = malloc((size_t)(t->numel + 1) * sizeof *e);
  if (!e) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int64_t k = 0; k < t->numel; k++) {
    int64_t c;
    const void *d = t->data;
    switch (dt) {
    case IR_DT_SI64: c = ((const int64_t *)d)[k]; break;
    case IR_DT_SI32: c = ((const int32_t *)d)[k]; break;
    case IR_DT_SI16: c = ((const int16_t *)d)[k]; break;
    case IR_DT_SI8: c = ((const int8_t *)d)[k]; break;
    case IR_DT_UI16: c = ((const uint16_t *)d)[k]; break;
    case IR_DT_UI32: c = ((const uint32_t *)d)[k]; break;
    case IR_DT_UI64: c = (int64_t)((const uint64_t *)d)[k]; break;
    default: c = ((const uint8_t *)d)[k]; break;
    }
    if (!(e[k] = ir_dim_const(x->ir->arena, c))) {
      free(e);
      return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    }
  }
  int rc = ox_set_known(x, v, dt, t->rank, t->shape, e);
  free(e);
  return rc;
}

kiln_value *ox_reshape(ox *x, kiln_value *a, int rank, const ir_dim *const *dims) {
  char ty[4096];
  ox_type_text(ty, sizeof ty, ox_type(a)->dtype, rank, dims);
  return ox_op(x, "reshape", &a, 1, ty, NULL);
}

/* The rank of a value info's tensor type, or -1 without a shape. */
static int vi_rank(const Onnx__ValueInfoProto *vi) {
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
      !tp->tensor_type->shape || tp->tensor_type->shape->n_dim > IR_MAX_RANK)
    return -1;
  return (int)tp->tensor_type->shape->n_dim;
}

int ox_declared_rank(const ox *x, const char *name) {
  const Onnx__GraphProto *gp = x->gp;
  if (!gp || !name || !*name) return -1;
  for (size_t i = 0; i < gp->n_output; i++)
    if (gp->output[i]->name && strcmp(gp->output[i]->name, name) == 0)
      return vi_rank(gp->output[i]);
  for (size_t i = 0; i < gp->n_value_info; i++)
    if (gp->value_info[i]->name && strcmp(gp->value_info[i]->name, name) == 0)
      return vi_rank(gp->value_info[i]);
  return -1;
}

kiln_value *ox_entry(ox *x, kiln_value *v, int64_t i) {
  kiln_value *k = ox_scalar(x, IR_DT_SI64, (double)i);
  return k ? ox_op(x, "gather", (kiln_value *[]){v, k}, 2, NULL, "{axis = 0}") : NULL;
}

kiln_value *ox_range_to(ox *x, kiln_value *end, const ir_dim *d) {
  kiln_value *z = ox_scalar(x, IR_DT_SI64, 0), *one = ox_scalar(x, IR_DT_SI64, 1);
  char ty[128];
  if (!z || !one || !end || !d) return NULL;
  return ox_op(x, "range", (kiln_value *[]){z, end, one}, 3,
               ox_type_text(ty, sizeof ty, IR_DT_SI64, 1, &d), NULL);
}
