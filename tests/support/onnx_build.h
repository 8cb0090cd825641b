/* onnx_build.h - small ONNX models built with protobuf-c for the importer's
 * tests (test_onnx_errors.c, test_onnx_ops2.c): a model of up to 16 nodes,
 * value infos, initializers, attributes, packed and imported or compiled.
 * Header-only (static functions, each test its own copy): what a test's
 * model is built from is kept and freed by free_kept(), which the test's
 * suites run as their .fini. */
#ifndef KILN_TESTS_SUPPORT_ONNX_BUILD_H
#define KILN_TESTS_SUPPORT_ONNX_BUILD_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/kiln.h>
#include <kiln/onnx.h>

#include "onnx.pb-c.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"

/* Everything a test's model is built from, freed after each test. */
static void *kept[4096];
static int nkept;
static void *keep(void *p) {
  if (p && nkept < 4096) kept[nkept++] = p;
  return p;
}
static void free_kept(void) {
  while (nkept > 0) free(kept[--nkept]);
}

typedef struct mb {
  Onnx__ModelProto m;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto op;
  Onnx__OperatorSetIdProto *ops[1];
  Onnx__NodeProto *nodes[16];
  Onnx__TensorProto *inits[8];
  Onnx__ValueInfoProto *ins[12], *outs[4];
} mb;

static mb *mb_new(void) {
  mb *b = keep(calloc(1, sizeof *b));
  onnx__model_proto__init(&b->m);
  onnx__graph_proto__init(&b->g);
  onnx__operator_set_id_proto__init(&b->op);
  b->op.domain = "";
  b->op.has_version = 1;
  b->op.version = 17;
  b->ops[0] = &b->op;
  b->m.n_opset_import = 1;
  b->m.opset_import = b->ops;
  b->m.has_ir_version = 1;
  b->m.ir_version = 8;
  b->m.graph = &b->g;
  b->g.name = "t";
  b->g.node = b->nodes;
  b->g.initializer = b->inits;
  b->g.input = b->ins;
  b->g.output = b->outs;
  return b;
}

/* A value info: ONNX element type elem (1 f32, 7 int64, 9 bool) with dims
 * (numbers, or names for dim_param). */
static Onnx__ValueInfoProto *vinfo_of(const char *name, int elem, int rank,
                                      const char *const *dims) {
  Onnx__ValueInfoProto *v = keep(calloc(1, sizeof *v));
  onnx__value_info_proto__init(v);
  v->name = (char *)name;
  Onnx__TypeProto *tp = keep(calloc(1, sizeof *tp));
  onnx__type_proto__init(tp);
  Onnx__TypeProto__Tensor *tt = keep(calloc(1, sizeof *tt));
  onnx__type_proto__tensor__init(tt);
  tt->has_elem_type = 1;
  tt->elem_type = elem;
  Onnx__TensorShapeProto *sh = keep(calloc(1, sizeof *sh));
  onnx__tensor_shape_proto__init(sh);
  sh->n_dim = (size_t)rank;
  sh->dim = keep(calloc((size_t)rank + 1, sizeof *sh->dim));
  for (int i = 0; i < rank; i++) {
    Onnx__TensorShapeProto__Dimension *d = keep(calloc(1, sizeof *d));
    onnx__tensor_shape_proto__dimension__init(d);
    if (dims[i][0] >= '0' && dims[i][0] <= '9') {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = atoll(dims[i]);
    } else {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = (char *)dims[i];
    }
    sh->dim[i] = d;
  }
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->type = tp;
  return v;
}

static Onnx__ValueInfoProto *vinfo(const char *name, int rank, const char *const *dims) {
  return vinfo_of(name, 1, rank, dims);
}

static Onnx__NodeProto *node(mb *b, const char *op, const char *name, int nin,
                             const char *const *in, const char *out) {
  Onnx__NodeProto *n = keep(calloc(1, sizeof *n));
  onnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->name = (char *)name;
  n->n_input = (size_t)nin;
  n->input = (char **)in;
  n->n_output = 1;
  n->output = keep(calloc(1, sizeof *n->output));
  n->output[0] = (char *)out;
  b->nodes[b->g.n_node++] = n;
  return n;
}

/* An f32 initializer of n elements 0, 1, ... in raw_data (nbytes may lie). */
static Onnx__TensorProto *init_f32(mb *b, const char *name, int64_t n, size_t nbytes) {
  Onnx__TensorProto *t = keep(calloc(1, sizeof *t));
  onnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = 1;
  t->n_dims = 1;
  t->dims = keep(calloc(1, sizeof *t->dims));
  t->dims[0] = n;
  float *v = keep(calloc((size_t)n + 8, sizeof *v));
  for (int64_t i = 0; i < n; i++) v[i] = (float)i;
  t->has_raw_data = 1;
  t->raw_data.data = (uint8_t *)v;
  t->raw_data.len = nbytes;
  b->inits[b->g.n_initializer++] = t;
  return t;
}

static Onnx__TensorProto *init_i64(mb *b, const char *name, int64_t n, const int64_t *v) {
  Onnx__TensorProto *t = keep(calloc(1, sizeof *t));
  onnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = 7;
  t->n_dims = 1;
  t->dims = keep(calloc(1, sizeof *t->dims));
  t->dims[0] = n;
  t->n_int64_data = (size_t)n;
  t->int64_data = (int64_t *)v;
  b->inits[b->g.n_initializer++] = t;
  return t;
}

static void external(Onnx__TensorProto *t, const char *loc, const char *offset,
                     const char *length) {
  t->has_raw_data = 0;
  t->has_data_location = 1;
  t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  Onnx__StringStringEntryProto **e = keep(calloc(3, sizeof *e));
  const char *k[3] = {"location", "offset", "length"}, *v[3] = {loc, offset, length};
  int n = 0;
  for (int i = 0; i < 3; i++) {
    if (!v[i]) continue;
    e[n] = keep(calloc(1, sizeof **e));
    onnx__string_string_entry_proto__init(e[n]);
    e[n]->key = (char *)k[i];
    e[n]->value = (char *)v[i];
    n++;
  }
  t->n_external_data = (size_t)n;
  t->external_data = e;
}

static uint8_t *pack(mb *b, size_t *len) {
  *len = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *buf = malloc(*len + 1);
  onnx__model_proto__pack(&b->m, buf);
  return buf;
}

/* b packed and imported (the graph keeps what it needs of the bytes). */
static kiln_graph *import_built(mb *b, kiln_status *st) {
  size_t len;
  uint8_t *buf = pack(b, &len);
  kiln_graph *g = kiln_graph_from_onnx_memory(buf, len, st);
  free(buf);
  cr_assert(g, "%s", kiln_status_message(st));
  return g;
}

/* A built model imported and compiled, with what it needs freed together. */
typedef struct built {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *g;
  kiln_model *m;
} built;

static built compile_built(mb *b) {
  built r = {.st = kiln_status_new()};
  r.g = import_built(b, r.st);
  r.ctx = kiln_context_new(r.st);
  r.m = kiln_model_compile(r.ctx, r.g, r.st);
  cr_assert(r.m, "%s", kiln_status_message(r.st));
  return r;
}

static void built_free(built *r) {
  kiln_model_free(r->m);
  kiln_context_free(r->ctx);
  kiln_graph_free(r->g);
  kiln_status_free(r->st);
}

/* The import of b fails with code and a message holding `has`. */
static void import_fails(mb *b, kiln_code code, const char *has) {
  size_t len;
  uint8_t *buf = pack(b, &len);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_memory(buf, len, st);
  free(buf);
  cr_expect_null(g);
  cr_expect_eq(kiln_status_code(st), code, "code %d: %s", kiln_status_code(st),
               kiln_status_message(st));
  cr_expect(strstr(kiln_status_message(st), has), "'%s' lacks '%s'", kiln_status_message(st),
            has);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* An attribute named name of type type; its value is the caller's to set. */
static Onnx__AttributeProto *attr_of(const char *name, Onnx__AttributeProto__AttributeType type) {
  Onnx__AttributeProto *a = keep(calloc(1, sizeof *a));
  onnx__attribute_proto__init(a);
  a->name = (char *)name;
  a->has_type = 1;
  a->type = type;
  return a;
}

static Onnx__AttributeProto *attr_int(const char *name, int64_t v) {
  Onnx__AttributeProto *a = attr_of(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1;
  a->i = v;
  return a;
}

static Onnx__AttributeProto *attr_float(const char *name, float v) {
  Onnx__AttributeProto *a = attr_of(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1;
  a->f = v;
  return a;
}

static Onnx__AttributeProto *attr_str(const char *name, const char *v) {
  Onnx__AttributeProto *a = attr_of(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1;
  a->s.data = (uint8_t *)v;
  a->s.len = strlen(v);
  return a;
}

static Onnx__AttributeProto *attr_ints(const char *name, int n, const int64_t *v) {
  Onnx__AttributeProto *a = attr_of(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = (size_t)n;
  a->ints = (int64_t *)v;
  return a;
}

/* n's attributes: count of them, each made by attr_int / attr_ints / ... */
static void node_attrs(Onnx__NodeProto *n, int count, ...) {
  va_list ap;
  va_start(ap, count);
  n->n_attribute = (size_t)count;
  n->attribute = keep(calloc((size_t)count, sizeof *n->attribute));
  for (int i = 0; i < count; i++) n->attribute[i] = va_arg(ap, Onnx__AttributeProto *);
  va_end(ap);
}

/* n's outputs named by count strings (node() gave it one). */
static void node_outputs(Onnx__NodeProto *n, int count, ...) {
  va_list ap;
  va_start(ap, count);
  n->n_output = (size_t)count;
  n->output = keep(calloc((size_t)count, sizeof *n->output));
  for (int i = 0; i < count; i++) n->output[i] = va_arg(ap, char *);
  va_end(ap);
}

#pragma GCC diagnostic pop

#endif
