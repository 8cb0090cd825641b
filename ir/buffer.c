/* buffer.c - the rules of mutable buffers and chains (buffer.h): value kinds
 * for every op, the BUFFER class's shape rule, and the whole-graph chain
 * rules (linear chains, no two chains on one stored buffer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"

static const char *kind_name(ir_type_kind k) {
  return k == IR_TYPE_BUFFER ? "!mo.buffer" : k == IR_TYPE_CHAIN ? "!mo.chain" : "!mo.tensor";
}

static bool is_buffer_op(ir_op op) {
  const ir_op_info *o = ir_op_get(op);
  return o && o->cls == IR_CLS_BUFFER;
}

int ir_infer_value_kinds(ir_infer_ctx *c) {
  const ir_node *n = c->n;
  if (is_buffer_op(n->op)) return 0;
  for (int k = 0; k < n->nin; k++) {
    const ir_value *v = n->in[k];
    if (v->type.kind == IR_TYPE_BUFFER)
      return ir_infer_fail(c, "operand %d of mo.%s (%%%s) is a !mo.buffer: load it into a tensor "
                              "with mo.mutable.load first", k, c->op, v->name);
    if (v->type.kind == IR_TYPE_CHAIN)
      return ir_infer_fail(c, "operand %d of mo.%s (%%%s) is a !mo.chain: only the buffer ops "
                              "(mo.mutable.*) take chains", k, c->op, v->name);
  }
  for (int k = 0; k < n->nout; k++) {
    const ir_type *t = &n->out[k]->type;
    if (t->rank >= 0 && t->kind != IR_TYPE_TENSOR)
      return ir_infer_fail(c, "result %d of mo.%s (%%%s) is declared as a %s: only the buffer "
                              "ops make buffers and chains", k, c->op, n->out[k]->name,
                           kind_name(t->kind));
  }
  return 0;
}

/* Operand k is of kind `want`. */
static int want_kind(ir_infer_ctx *c, int k, ir_type_kind want, const char *role) {
  const ir_value *v = c->n->in[k];
  if (v->type.kind == want) return 0;
  return ir_infer_fail(c, "operand %d of mo.%s (%%%s, %s) must be a %s, not a %s", k, c->op,
                       v->name, role, kind_name(want), kind_name(v->type.kind));
}

static int set_chain(ir_infer_ctx *c, ir_type *r, ir_device dev) {
  if (ir_infer_res_set(c, r, IR_DT_BOOL, 0, NULL, dev) != 0) return -1;
  r->kind = IR_TYPE_CHAIN;
  return 0;
}

/* The stored tensor (operand 1) against the buffer (operand 0): same dtype
 * and rank; each dim equal (store) or at most the buffer's (store.slice). */
static int check_source(ir_infer_ctx *c, bool slice) {
  const ir_type *b = &c->n->in[0]->type, *s = &c->n->in[1]->type;
  if (s->dtype != b->dtype)
    return ir_infer_fail(c, "mo.%s: the stored tensor is %s but the buffer is %s", c->op,
                         ir_dtype_name(s->dtype), ir_dtype_name(b->dtype));
  if (s->rank != b->rank)
    return ir_infer_fail(c, "mo.%s: the stored tensor has rank %d but the buffer has rank %d",
                         c->op, s->rank, b->rank);
  for (int a = 0; a < b->rank; a++) {
    char what[200], d1[64], d2[64];
    snprintf(what, sizeof what, "axis %d of the tensor stored by mo.%s (%s) %s the buffer's (%s)",
             a, c->op, ir_infer_dim_str(d1, sizeof d1, s->dims[a]), slice ? "fits" : "equals",
             ir_infer_dim_str(d2, sizeof d2, b->dims[a]));
    if (ir_infer_need(c, slice ? IR_CHECK_GE : IR_CHECK_EQ, b->dims[a], s->dims[a], what) != 0)
      return -1;
  }
  return 0;
}

int ir_infer_buffer(ir_infer_ctx *c, ir_type *r) {
  const ir_node *n = c->n;
  ir_device dev = n->nin > 0 ? n->in[0]->type.device : (ir_device){IR_DEV_CPU, 0};
  switch (n->op) {
  case IR_OP_CHAIN_CREATE: return set_chain(c, r, dev);
  case IR_OP_BUFFER_CREATE: {
    const ir_type *t = &n->out[0]->type;
    if (t->rank < 0 || t->kind != IR_TYPE_BUFFER)
      return ir_infer_fail(c, "mo.buffer.create needs a declared !mo.buffer result type");
    if (ir_infer_declared(c, &t) != 0) return -1;
    if (ir_infer_res_set(c, r, t->dtype, t->rank, t->dims, t->device) != 0) return -1;
    r->kind = IR_TYPE_BUFFER;
    return 0;
  }
  case IR_OP_MUTABLE_LOAD: {
    if (want_kind(c, 0, IR_TYPE_BUFFER, "the buffer") ||
        want_kind(c, 1, IR_TYPE_CHAIN, "the chain"))
      return -1;
    const ir_type *b = &n->in[0]->type;
    if (ir_infer_res_set(c, &r[0], b->dtype, b->rank, b->dims, b->device) != 0) return -1;
    return set_chain(c, &r[1], dev);
  }
  case IR_OP_MUTABLE_STORE:
  case IR_OP_MUTABLE_STORE_SLICE: {
    bool slice = n->op == IR_OP_MUTABLE_STORE_SLICE;
    int ch = slice ? 3 : 2;
    if (want_kind(c, 0, IR_TYPE_BUFFER, "the buffer") ||
        want_kind(c, 1, IR_TYPE_TENSOR, "the stored tensor") ||
        want_kind(c, ch, IR_TYPE_CHAIN, "the chain") || check_source(c, slice) != 0)
      return -1;
    if (slice) {
      const ir_value *st = n->in[2];
      if (want_kind(c, 2, IR_TYPE_TENSOR, "the start indices")) return -1;
      if (!ir_dtype_in_set(st->type.dtype, IR_DTS_I) || st->type.rank != 1)
        return ir_infer_fail(c, "mo.mutable.store.slice: the start indices (%%%s) must be a "
                                "si32 or si64 tensor of rank 1, one entry per buffer axis",
                             st->name);
      int64_t len;
      int rank = n->in[0]->type.rank;
      if (ir_dim_is_const(st->type.dims[0], &len) && len != rank)
        return ir_infer_fail(c, "mo.mutable.store.slice: %lld start indices for a buffer of "
                                "rank %d", (long long)len, rank);
      if (!ir_dim_is_const(st->type.dims[0], &len))
        return ir_infer_fail(c, "mo.mutable.store.slice: the start indices need a static "
                                "length (%d, the buffer's rank)", rank);
    }
    return set_chain(c, r, dev);
  }
  default: break;
  }
  return ir_infer_fail(c, "mo.%s has no buffer rule", c->op);
}

/* ---- the whole graph ---- */

static int at_node(ir_diag *d, const ir_node *n, const char *fmt, const char *a, const char *b) {
  char buf[440];
  snprintf(buf, sizeof buf, fmt, a, b);
  if (n->loc.line > 0) return ir_diag_set(d, n->loc, "%s", buf);
  return ir_diag_set(d, n->loc, "op #%d: %s", n->id, buf);
}

static const char *where(const ir_node *n, char *buf, size_t cap) {
  if (n->loc.line > 0) snprintf(buf, cap, "mo.%s at %d:%d", ir_op_get(n->op)->name, n->loc.line,
                                n->loc.col);
  else snprintf(buf, cap, "mo.%s (op #%d)", ir_op_get(n->op)->name, n->id);
  return buf;
}

/* The chain operand of a buffer op that takes one, else -1. */
static int chain_operand(const ir_node *n) {
  switch (n->op) {
  case IR_OP_MUTABLE_LOAD: return 1;
  case IR_OP_MUTABLE_STORE: return 2;
  case IR_OP_MUTABLE_STORE_SLICE: return 3;
  default: return -1;
  }
}

typedef struct access {
  const ir_node *first, *other, *store; /* first access; first on another chain; first store */
  int first_root, store_root;
} access;

static int check_access(const ir_graph *g, const ir_node *n, int root, access *acc, ir_diag *d) {
  access *a = &acc[n->in[0]->id];
  bool store = n->op != IR_OP_MUTABLE_LOAD;
  const ir_node *race = NULL;
  if (store && a->first && a->first_root != root) race = a->first;
  else if (store && a->other) race = a->other;
  else if (!store && a->store && a->store_root != root) race = a->store;
  if (race) {
    char w[120], buf[200];
    snprintf(buf, sizeof buf, "%%%s", n->in[0]->name);
    return at_node(d, n, "it races with %s on buffer %s: they are on different chains (two "
                         "mo.chain.create), so nothing orders them; thread both through one chain",
                   where(race, w, sizeof w), buf);
  }
  (void)g;
  if (!a->first) {
    a->first = n;
    a->first_root = root;
  } else if (root != a->first_root && !a->other) {
    a->other = n;
  }
  if (store && !a->store) {
    a->store = n;
    a->store_root = root;
  }
  return 0;
}

int ir_buffer_verify(const ir_graph *g, ir_diag *d) {
  for (int i = 0; i < g->ninputs; i++)
    if (g->inputs[i]->type.kind == IR_TYPE_CHAIN)
      return ir_diag_set(d, (ir_loc){0, 0}, "input %d (%%%s) is a !mo.chain: start a chain in "
                         "the graph with mo.chain.create", i, g->inputs[i]->name);
  const char *pre = g->output_loc.line > 0 ? "" : "mo.output: ";
  for (int i = 0; i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    if (v->type.kind == IR_TYPE_BUFFER)
      return ir_diag_set(d, g->output_loc, "%soutput %d (%%%s) is a !mo.buffer: a buffer is "
                         "changed in place, not returned (return a mo.mutable.load of it)",
                         pre, i, v->name);
    if (v->type.kind == IR_TYPE_CHAIN)
      return ir_diag_set(d, g->output_loc, "%soutput %d (%%%s) is a !mo.chain, which has no "
                         "data", pre, i, v->name);
  }
  bool any = false;
  for (int i = 0; i < g->nnodes && !any; i++)
    any = ir_op_get(g->nodes[i]->op)->cls == IR_CLS_BUFFER;
  if (!any) return 0;
  size_t nv = (size_t)(g->nvalues ? g->nvalues : 1);
  int *root = malloc(nv * sizeof *root);
  const ir_node **user = calloc(nv, sizeof *user);
  access *acc = calloc(nv, sizeof *acc);
  int rc = -1;
  if (!root || !user || !acc) {
    ir_diag_set(d, (ir_loc){0, 0}, "out of memory");
    goto done;
  }
  for (size_t v = 0; v < nv; v++) root[v] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CHAIN_CREATE) root[n->out[0]->id] = i;
    int ch = chain_operand(n);
    if (ch < 0) continue;
    const ir_value *c = n->in[ch];
    if (user[c->id]) {
      char w[120], buf[200];
      snprintf(buf, sizeof buf, "%%%s", c->name);
      at_node(d, n, "chain %s is used a second time (first by %s): a chain is used once; "
                    "take the chain the earlier op returned", buf, where(user[c->id], w, sizeof w));
      goto done;
    }
    user[c->id] = n;
    root[n->out[n->nout - 1]->id] = root[c->id];
    if (check_access(g, n, root[c->id], acc, d) != 0) goto done;
  }
  rc = 0;
done:
  free(root);
  free(user);
  free(acc);
  return rc;
}
