/* control.c - the rules of mo.if, mo.while and mo.call (control.h): type
 * fitting, the nodes' shape rule (called from infer.c), the module's call
 * checks, and ownership of regions and subgraphs (free, clone).
 *
 * Assumes: regions and subgraphs were verified on their own (the parser and
 * the builder do it as each is finished); infer re-verifies regions so a
 * graph edited after parsing is still checked. Guarantees: errors name the
 * node's op, operand or result index and region, at the node's line:col. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "infer_impl.h"

bool ir_type_fits(const ir_type *want, const ir_type *got) {
  if (want->dtype != got->dtype || want->rank != got->rank) return false;
  if (want->device.kind != got->device.kind || want->device.id != got->device.id) return false;
  for (int i = 0; i < want->rank; i++) {
    int64_t a, b;
    if (ir_dim_is_const(want->dims[i], &a) && ir_dim_is_const(got->dims[i], &b) && a != b)
      return false;
  }
  return true;
}

bool ir_node_is_control(const ir_node *n) {
  return n && ir_op_get(n->op) && ir_op_get(n->op)->cls == IR_CLS_CONTROL;
}

bool ir_graph_has_control(const ir_graph *g) {
  for (int i = 0; g && i < g->nnodes; i++)
    if (ir_node_is_control(g->nodes[i])) return true;
  return false;
}

ir_graph *ir_module_find(const ir_graph *main, const char *name) {
  for (int i = 0; main && name && i < main->nsubgraphs; i++)
    if (strcmp(main->subgraphs[i]->name, name) == 0) return main->subgraphs[i];
  return NULL;
}

int ir_module_add_subgraph(ir_graph *main, ir_graph *sub, ir_diag *d) {
  sub->nested = true;
  if (strcmp(sub->name, main->name) == 0 || ir_module_find(main, sub->name)) {
    ir_diag_set(d, (ir_loc){0, 0}, "the module already has a graph named @%s", sub->name);
    ir_graph_free(sub);
    return -1;
  }
  ir_graph **v = ir_arena_alloc(main->arena, (size_t)(main->nsubgraphs + 1) * sizeof *v);
  if (!v) {
    ir_diag_set(d, (ir_loc){0, 0}, "out of memory");
    ir_graph_free(sub);
    return -1;
  }
  if (main->nsubgraphs) memcpy(v, main->subgraphs, (size_t)main->nsubgraphs * sizeof *v);
  v[main->nsubgraphs++] = sub;
  main->subgraphs = v;
  return 0;
}

int ir_node_set_regions(ir_graph *g, ir_node *n, ir_graph *const *regions, int nregions) {
  ir_graph **v = ir_arena_alloc(g->arena, (size_t)(nregions ? nregions : 1) * sizeof *v);
  if (!v) {
    for (int i = 0; i < nregions; i++) ir_graph_free(regions[i]);
    return -1;
  }
  for (int i = 0; i < nregions; i++) {
    v[i] = regions[i];
    v[i]->nested = true;
  }
  for (int i = 0; i < n->nregions; i++) ir_graph_free(n->regions[i]);
  n->regions = v;
  n->nregions = nregions;
  return 0;
}

void ir_control_free(ir_graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    for (int r = 0; g->nodes[i] && r < g->nodes[i]->nregions; r++)
      ir_graph_free(g->nodes[i]->regions[r]);
  for (int i = 0; i < g->nsubgraphs; i++) ir_graph_free(g->subgraphs[i]);
}

int ir_control_clone(const ir_graph *g, ir_graph *c) {
  c->nested = g->nested;
  for (int i = 0; i < g->nnodes && i < c->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (!n->nregions) continue;
    ir_graph *r[n->nregions];
    int k = 0;
    for (; k < n->nregions; k++)
      if (!(r[k] = ir_graph_clone(n->regions[k]))) break;
    if (k < n->nregions) {
      while (k-- > 0) ir_graph_free(r[k]);
      return -1;
    }
    if (ir_node_set_regions(c, c->nodes[i], r, n->nregions)) return -1;
  }
  for (int i = 0; i < g->nsubgraphs; i++) {
    ir_graph *s = ir_graph_clone(g->subgraphs[i]);
    if (!s || ir_module_add_subgraph(c, s, NULL)) return -1;
  }
  return 0;
}

/* ---- the shape rule (infer.c) ---- */
static const char *tstr(char *buf, size_t cap, const ir_type *t) {
  size_t need = ir_type_print(t, buf, cap);
  if (need >= cap && cap > 4) strcpy(buf + cap - 4, "...");
  return buf;
}

/* Region r verifies on its own; its signature is nin inputs, nout outputs. */
static int region_ok(ir_infer_ctx *c, const ir_graph *r, int nin, int nout) {
  ir_diag bd = {0};
  if (ir_graph_verify((ir_graph *)r, &bd) != 0)
    return ir_infer_fail(c, "region @%s of mo.%s: %s%s%d:%d)", r->name, c->op, bd.msg,
                         bd.line ? " (at " : " (", bd.line, bd.col);
  if (r->ninputs != nin)
    return ir_infer_fail(c, "region @%s of mo.%s takes %d %s, expected %d", r->name, c->op,
                         r->ninputs, r->ninputs == 1 ? "value" : "values", nin);
  if (nout >= 0 && r->noutputs != nout)
    return ir_infer_fail(c, "region @%s of mo.%s returns %d %s, expected %d", r->name, c->op,
                         r->noutputs, r->noutputs == 1 ? "value" : "values", nout);
  return 0;
}

/* The node's results are its declared types. */
static int declared_results(ir_infer_ctx *c, ir_type *res) {
  for (int i = 0; i < c->n->nout; i++) {
    const ir_type *t = &c->n->out[i]->type;
    if (t->rank < 0)
      return ir_infer_fail(c, "result %d of mo.%s needs a declared type", i, c->op);
    if (ir_infer_res_set(c, &res[i], t->dtype, t->rank, t->dims, t->device)) return -1;
  }
  return 0;
}

static int infer_if(ir_infer_ctx *c, ir_type *res) {
  ir_node *n = c->n;
  char a[200], b[200];
  if (n->in[0]->type.rank != 0)
    return ir_infer_fail(c, "operand 0 of mo.if (the predicate) must be a bool scalar, got %s",
                         tstr(a, sizeof a, &n->in[0]->type));
  if (n->nregions != 2)
    return ir_infer_fail(c, "mo.if needs two regions (then, else), got %d", n->nregions);
  if (declared_results(c, res)) return -1;
  for (int r = 0; r < 2; r++) {
    const ir_graph *g = n->regions[r];
    if (region_ok(c, g, n->nin - 1, n->nout)) return -1;
    for (int i = 0; i < g->ninputs; i++)
      if (!ir_type_fits(&g->inputs[i]->type, &n->in[i + 1]->type))
        return ir_infer_fail(c, "operand %d of mo.if is %s but region @%s takes %s", i + 1,
                             tstr(a, sizeof a, &n->in[i + 1]->type), g->name,
                             tstr(b, sizeof b, &g->inputs[i]->type));
    for (int i = 0; i < g->noutputs; i++)
      if (!ir_type_fits(&res[i], &g->outputs[i]->type))
        return ir_infer_fail(c, "result %d of mo.if is %s but region @%s returns %s", i,
                             tstr(a, sizeof a, &res[i]), g->name,
                             tstr(b, sizeof b, &g->outputs[i]->type));
  }
  return 0;
}

static int infer_while(ir_infer_ctx *c, ir_type *res) {
  ir_node *n = c->n;
  char a[200], b[200];
  if (n->nregions != 2)
    return ir_infer_fail(c, "mo.while needs two regions (cond, body), got %d", n->nregions);
  if (n->nout != n->nin)
    return ir_infer_fail(c, "mo.while carries %d %s but has %d %s", n->nin,
                         n->nin == 1 ? "value" : "values", n->nout,
                         n->nout == 1 ? "result" : "results");
  if (declared_results(c, res)) return -1;
  const ir_graph *cond = n->regions[0], *body = n->regions[1];
  if (region_ok(c, cond, n->nin, 1) || region_ok(c, body, n->nin, n->nin)) return -1;
  const ir_type *p = &cond->outputs[0]->type;
  if (p->dtype != IR_DT_BOOL || p->rank != 0)
    return ir_infer_fail(c, "region @%s of mo.while must return a bool scalar, returns %s",
                         cond->name, tstr(a, sizeof a, p));
  for (int i = 0; i < n->nin; i++) {
    const ir_type *carried = &body->inputs[i]->type;
    if (!ir_type_fits(carried, &n->in[i]->type))
      return ir_infer_fail(c, "operand %d of mo.while is %s but region @%s carries %s", i,
                           tstr(a, sizeof a, &n->in[i]->type), body->name,
                           tstr(b, sizeof b, carried));
    if (!ir_type_fits(carried, &cond->inputs[i]->type))
      return ir_infer_fail(c, "region @%s of mo.while takes %s as value %d but @%s carries %s",
                           cond->name, tstr(a, sizeof a, &cond->inputs[i]->type), i, body->name,
                           tstr(b, sizeof b, carried));
    if (!ir_type_fits(carried, &body->outputs[i]->type))
      return ir_infer_fail(c, "region @%s of mo.while returns %s as value %d but carries %s",
                           body->name, tstr(a, sizeof a, &body->outputs[i]->type), i,
                           tstr(b, sizeof b, carried));
    if (!ir_type_fits(carried, &res[i]))
      return ir_infer_fail(c, "result %d of mo.while is %s but region @%s carries %s", i,
                           tstr(a, sizeof a, &res[i]), body->name, tstr(b, sizeof b, carried));
  }
  return 0;
}

int ir_infer_control(ir_infer_ctx *c, ir_type *res) {
  switch (c->n->op) {
  case IR_OP_IF: return infer_if(c, res);
  case IR_OP_WHILE: return infer_while(c, res);
  default: /* mo.call: checked against the callee by ir_module_verify */
    if (c->n->nregions) return ir_infer_fail(c, "mo.call has no regions");
    return declared_results(c, res);
  }
}

/* ---- the module's calls ---- */
typedef struct mod_ctx {
  const ir_graph *main;
  ir_diag *d;
  int *state; /* per subgraph: 0 unvisited, 1 on the path, 2 done */
  const ir_graph **path;
  int npath;
} mod_ctx;

static int visit_graph(mod_ctx *m, const ir_graph *g);

static int sub_index(const mod_ctx *m, const ir_graph *s) {
  for (int i = 0; i < m->main->nsubgraphs; i++)
    if (m->main->subgraphs[i] == s) return i;
  return -1;
}

static int check_call(mod_ctx *m, const ir_node *n) {
  char a[200], b[200];
  const char *name = ir_node_attr_string(n, "callee", "");
  ir_graph *s = ir_module_find(m->main, name);
  if (!s) return ir_diag_set(m->d, n->loc, "mo.call: unknown subgraph @%s", name);
  if (n->nin != s->ninputs)
    return ir_diag_set(m->d, n->loc, "mo.call @%s passes %d %s but @%s takes %d", name, n->nin,
                       n->nin == 1 ? "operand" : "operands", name, s->ninputs);
  if (n->nout != s->noutputs)
    return ir_diag_set(m->d, n->loc, "mo.call @%s has %d %s but @%s returns %d", name, n->nout,
                       n->nout == 1 ? "result" : "results", name, s->noutputs);
  for (int i = 0; i < n->nin; i++)
    if (!ir_type_fits(&s->inputs[i]->type, &n->in[i]->type))
      return ir_diag_set(m->d, n->loc, "operand %d of mo.call @%s is %s but @%s takes %s", i,
                         name, tstr(a, sizeof a, &n->in[i]->type), name,
                         tstr(b, sizeof b, &s->inputs[i]->type));
  for (int i = 0; i < n->nout; i++)
    if (!ir_type_fits(&n->out[i]->type, &s->outputs[i]->type))
      return ir_diag_set(m->d, n->loc, "result %d of mo.call @%s is %s but @%s returns %s", i,
                         name, tstr(a, sizeof a, &n->out[i]->type), name,
                         tstr(b, sizeof b, &s->outputs[i]->type));
  int k = sub_index(m, s);
  if (m->state[k] == 1) {
    char chain[256];
    size_t w = 0;
    chain[0] = 0;
    for (int i = 0; i < m->npath && w < sizeof chain; i++)
      w += (size_t)snprintf(chain + w, sizeof chain - w, "@%s -> ", m->path[i]->name);
    if (w < sizeof chain) snprintf(chain + w, sizeof chain - w, "@%s", name);
    return ir_diag_set(m->d, n->loc, "mo.call @%s is recursive (%s): subgraphs cannot call "
                                     "themselves", name, chain);
  }
  if (m->state[k] == 2) return 0;
  m->state[k] = 1;
  m->path[m->npath++] = s;
  if (visit_graph(m, s)) return -1;
  m->npath--;
  m->state[k] = 2;
  return 0;
}

static int visit_graph(mod_ctx *m, const ir_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CALL && check_call(m, n)) return -1;
    for (int r = 0; r < n->nregions; r++)
      if (visit_graph(m, n->regions[r])) return -1;
  }
  return 0;
}

int ir_module_verify(const ir_graph *main, ir_diag *d) {
  int ns = main->nsubgraphs;
  mod_ctx m = {main, d, calloc((size_t)ns + 1, sizeof(int)),
               calloc((size_t)ns + 2, sizeof(ir_graph *)), 0};
  int rc = -1;
  if (!m.state || !m.path) {
    ir_diag_set(d, (ir_loc){0, 0}, "out of memory");
    goto out;
  }
  m.path[m.npath++] = main;
  if (visit_graph(&m, main)) goto out;
  for (int i = 0; i < ns; i++) { /* subgraphs no one calls are checked too */
    if (m.state[i]) continue;
    m.state[i] = 1;
    m.path[0] = main->subgraphs[i];
    if (visit_graph(&m, main->subgraphs[i])) goto out;
    m.state[i] = 2;
  }
  rc = 0;
out:
  free(m.state);
  free(m.path);
  return rc;
}
