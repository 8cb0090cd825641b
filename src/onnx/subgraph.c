/* subgraph.c - the bodies of ONNX's If, Loop and Scan as kiln regions: a
 * child importer per region (ox.h, "subgraphs"), the free names a subgraph
 * reads from enclosing scopes, and dims carried into a region and back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ox.h"

/* Subgraphs nested deeper than this are refused (a crafted model could
 * otherwise recurse without bound). */
#define OX_MAX_DEPTH 32

static bool has_name(const ox_names *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->v[i], name) == 0) return true;
  return false;
}

static int add_name(ox *x, ox_names *s, const char *name) {
  if (has_name(s, name)) return 0;
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    const char **v = realloc(s->v, (size_t)cap * sizeof *v);
    if (!v) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = name;
  return 0;
}

void ox_names_free(ox_names *names) {
  free(names->v);
  *names = (ox_names){0};
}

static int free_names_of(ox *x, const Onnx__GraphProto *gp, int depth, ox_names *out);

/* A name read where `defined` does not hold it is free. */
static int read_name(ox *x, const ox_names *defined, const char *name, ox_names *out) {
  if (!name || !*name || has_name(defined, name)) return 0;
  return add_name(x, out, name);
}

/* The free names of the subgraphs among n's attributes. */
static int attr_graphs(ox *x, const Onnx__NodeProto *n, const ox_names *defined, int depth,
                       ox_names *out) {
  for (size_t a = 0; a < n->n_attribute; a++) {
    const Onnx__AttributeProto *at = n->attribute[a];
    size_t ng = at->n_graphs + (at->g ? 1 : 0);
    for (size_t k = 0; k < ng; k++) {
      const Onnx__GraphProto *sub = k < at->n_graphs ? at->graphs[k] : at->g;
      ox_names inner = {0};
      int rc = free_names_of(x, sub, depth + 1, &inner);
      for (int i = 0; rc == 0 && i < inner.n; i++) rc = read_name(x, defined, inner.v[i], out);
      ox_names_free(&inner);
      if (rc < 0) return -1;
    }
  }
  return 0;
}

static int free_names_of(ox *x, const Onnx__GraphProto *gp, int depth, ox_names *out) {
  if (depth > OX_MAX_DEPTH)
    return ox_fail(x, KILN_ERR_UNSUPPORTED, "subgraphs nested more than %d deep", OX_MAX_DEPTH);
  ox_names defined = {0};
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < gp->n_input; i++)
    if (gp->input[i]->name) rc = add_name(x, &defined, gp->input[i]->name);
  for (size_t i = 0; rc == 0 && i < gp->n_initializer; i++)
    if (gp->initializer[i]->name) rc = add_name(x, &defined, gp->initializer[i]->name);
  for (size_t i = 0; rc == 0 && i < gp->n_node; i++) {
    const Onnx__NodeProto *n = gp->node[i];
    for (size_t k = 0; rc == 0 && k < n->n_input; k++)
      rc = read_name(x, &defined, n->input[k], out);
    if (rc == 0) rc = attr_graphs(x, n, &defined, depth, out);
    for (size_t k = 0; rc == 0 && k < n->n_output; k++)
      if (n->output[k] && *n->output[k]) rc = add_name(x, &defined, n->output[k]);
  }
  for (size_t i = 0; rc == 0 && i < gp->n_output; i++)
    rc = read_name(x, &defined, gp->output[i]->name, out);
  ox_names_free(&defined);
  return rc;
}

int ox_free_names(ox *x, const Onnx__GraphProto *const *gps, int ngps, ox_names *out) {
  for (int i = 0; i < ngps; i++) {
    ox_names one = {0};
    int rc = free_names_of(x, gps[i], x->depth + 1, &one);
    for (int k = 0; rc == 0 && k < one.n; k++) rc = add_name(x, out, one.v[k]);
    ox_names_free(&one);
    if (rc < 0) return -1;
  }
  return 0;
}

int ox_sub_open(ox *parent, ox_sub *s, const char *name) {
  *s = (ox_sub){.parent = parent};
  s->x = (ox){.ws = parent->ws, .dir = parent->dir, .opset = parent->opset, .st = parent->st,
              .node = parent->node, .depth = parent->depth + 1,
              .counter = parent->counter ? parent->counter : &parent->nsym};
  if (s->x.depth > OX_MAX_DEPTH)
    return ox_fail(parent, KILN_ERR_UNSUPPORTED, "subgraphs nested more than %d deep",
                   OX_MAX_DEPTH);
  if (!(s->x.g = kiln_graph_new(name, parent->st))) return -1;
  s->x.ir = s->x.g->ir;
  return 0;
}

void ox_sub_close(ox_sub *s) {
  if (!s || !s->parent) return;
  ox_unsup_move(s->parent, &s->x);
  ox_free(&s->x);
  kiln_graph_free(s->x.g);
  s->x.g = NULL;
  s->parent = NULL;
}

kiln_value *ox_sub_input(ox_sub *s, const char *onnx_name, const ir_type *t, const bool *fresh) {
  ox *x = &s->x;
  char texts[IR_MAX_RANK][160];
  const char *dims[IR_MAX_RANK];
  for (int d = 0; d < t->rank; d++) {
    const ir_dim *dim = t->dims[d];
    int64_t c;
    if (!(fresh && fresh[d]) && ir_dim_is_const(dim, &c)) {
      snprintf(texts[d], sizeof texts[d], "%lld", (long long)c);
    } else {
      /* a plain symbol keeps its name; anything else is a fresh symbol */
      bool plain = !(fresh && fresh[d]) && ir_dim_is_sym(dim);
      const ir_dim *sd = ox_symbol(x, plain ? dim->name : NULL);
      if (!sd) {
        rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
      }
      ir_dim_print(sd, texts[d], sizeof texts[d]);
    }
    dims[d] = texts[d];
  }
  kiln_value *v = kiln_graph_add_input(x->g, onnx_name, (kiln_dtype)t->dtype, t->rank, dims,
                                       x->st);
  if (!v) {
    ox_fail(s->parent, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
    return NULL;
  }
  if (onnx_name) {
    ox_val *ov = ox_new_val(x, onnx_name);
    if (!ov) return NULL;
    ov->v = v;
  }
  return v;
}

/* Known data of the parent whose elements are all constants, into the region. */
static bool copy_known(ox *x, const ox_val *pv, ox_val *cv) {
  const ir_dim **e = malloc((size_t)(pv->numel ? pv->numel : 1) * sizeof *e);
  if (!e) return false;
  for (int64_t i = 0; i < pv->numel; i++) {
    int64_t c;
    if (!ir_dim_is_const(pv->e[i], &c) || !(e[i] = ir_dim_const(x->ir->arena, c))) {
      free(e);
      return false;
    }
  }
  bool ok = ox_set_known(x, cv, pv->dtype, pv->rank, pv->shape, e) == 0;
  free(e);
  return ok;
}

static bool known_all_const(const ox_val *v) {
  if (!v->known) return false;
  for (int64_t i = 0; i < v->numel; i++)
    if (!ir_dim_is_const(v->e[i], NULL)) return false;
  return true;
}

int ox_sub_captures(ox_sub *s, const ox_names *names, kiln_value **caps, kiln_value **inner,
                    int *ncap) {
  ox *p = s->parent, *x = &s->x;
  *ncap = 0;
  for (int i = 0; i < names->n; i++) {
    ox_val *pv = ox_find(p, names->v[i]);
    if (!pv)
      return ox_fail(p, KILN_ERR_IO, "a subgraph reads '%s', which is not defined before the "
                     "node", names->v[i]);
    if (pv->bad) return 1; /* made by an unsupported node: already reported */
    if (known_all_const(pv) && !pv->v) {
      ox_val *cv = ox_new_val(x, names->v[i]);
      if (!cv) return -1;
      if (!copy_known(x, pv, cv)) return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      continue;
    }
    bool unsup = false;
    kiln_value *v = ox_value(p, pv, &unsup);
    if (!v) return unsup ? 1 : -1;
    ox_val *cv = NULL;
    kiln_value *in = ox_sub_input(s, names->v[i], ox_type(v), NULL);
    if (!in || !(cv = ox_find(x, names->v[i]))) return -1;
    if (known_all_const(pv) && !copy_known(x, pv, cv))
      return rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (caps) caps[*ncap] = v;
    if (inner) inner[*ncap] = in;
    (*ncap)++;
  }
  return 0;
}

int ox_sub_body(ox_sub *s, const Onnx__GraphProto *gp) {
  ox *x = &s->x;
  const Onnx__NodeProto *outer = s->parent->node;
  x->gp = gp;
  if (ox_add_initializers(x, gp) < 0) return -1;
  for (size_t i = 0; i < gp->n_node; i++)
    if (ox_import_node(x, gp->node[i]) < 0) return -1;
  x->node = outer; /* later messages name the control node */
  return x->nunsup > 0 ? 1 : 0;
}

/* kv with the static dims its value info vi declares where kv's dims are
 * not constants (computed from data inside the subgraph: a slice by the
 * iteration count), so the region's result has them; a reshape, which
 * checks at run time that the element counts agree. kv itself when vi
 * declares no shape of kv's rank or nothing changes; NULL on failure. */
static kiln_value *declared_dims(ox *x, const Onnx__ValueInfoProto *vi, kiln_value *kv) {
  const Onnx__TypeProto *tp = vi->type;
  const ir_type *t = ox_type(kv);
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
      !tp->tensor_type->shape || (int)tp->tensor_type->shape->n_dim != t->rank)
    return kv;
  const ir_dim *dims[IR_MAX_RANK];
  bool change = false;
  for (int d = 0; d < t->rank; d++) {
    const Onnx__TensorShapeProto__Dimension *dd = tp->tensor_type->shape->dim[d];
    int64_t c;
    dims[d] = t->dims[d];
    if (ir_dim_is_const(t->dims[d], &c) ||
        dd->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || dd->dim_value < 0)
      continue;
    if (!(dims[d] = ir_dim_const(x->ir->arena, dd->dim_value))) {
      ox_fail(x, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      return NULL;
    }
    change = true;
  }
  return change ? ox_reshape(x, kv, t->rank, dims) : kv;
}

kiln_value *ox_sub_output(ox_sub *s, const Onnx__GraphProto *gp, size_t i, int *rc) {
  ox *x = &s->x;
  const char *nm = i < gp->n_output ? gp->output[i]->name : NULL;
  ox_val *v = nm ? ox_find(x, nm) : NULL;
  *rc = -1;
  if (!v) {
    ox_fail(s->parent, KILN_ERR_IO, "subgraph '%s': output %zu ('%s') is not defined",
            gp->name ? gp->name : "?", i, nm ? nm : "?");
    return NULL;
  }
  if (v->bad) {
    *rc = 1;
    return NULL;
  }
  bool unsup = false;
  kiln_value *kv = ox_value(x, v, &unsup);
  if (!kv && unsup) *rc = 1;
  if (!kv) return NULL;
  /* a reshape to the declared dims names the output when it fails */
  snprintf(x->origin, sizeof x->origin, "ONNX subgraph '%s' output '%s'", gp->name ? gp->name : "?",
           nm);
  x->g->origin = x->origin;
  kv = declared_dims(x, gp->output[i], kv);
  x->g->origin = NULL;
  return kv;
}

const ir_dim *ox_sub_dim_out(ox_sub *s, const ir_dim *d) {
  ir_graph *pg = s->parent->ir;
  int64_t c;
  if (ir_dim_is_const(d, &c)) return ir_dim_const(pg->arena, c);
  if (!ir_dim_is_sym(d)) return NULL;
  int sym = ir_graph_symbol(pg, d->name, strlen(d->name), false);
  return sym >= 0 ? ir_dim_sym(pg->arena, sym, pg->syms[sym]) : NULL;
}
