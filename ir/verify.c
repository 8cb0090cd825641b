/* verify.c - whole-graph verification (ir_graph_verify).
 *
 * Walks the graph once, in node order, and checks what no single op rule can:
 *   - symbols: every symbol has a name; every symbolic dim of every type
 *     refers to a symbol of the graph by index and name;
 *   - types: dtype known, 0 <= rank <= IR_MAX_RANK, dims present, static dims
 *     >= 0 (graph inputs, declared results, inferred results);
 *   - values: every value is in g->values at its id; inputs are defined
 *     first; an operand must be defined earlier (a graph input or a result
 *     of an earlier node); results belong to their node;
 *   - attributes: names outside the op's schema (ops.def) are rejected
 *     ("mo.relu has no attribute 'axis'"), a name given twice too; required
 *     attributes and kinds (also from the schema) are checked by the op's
 *     rule in infer.c when it reads them;
 *   - each node's rule (ir_infer_node): operand dtypes and shapes, result
 *     types inferred, or compared when declared;
 *   - outputs: at least one, each a defined value of the graph.
 * g->checks is rebuilt from scratch: on success it holds every run-time shape
 * check of the graph, in node order. ir_graph_add_check, which the op rules
 * call to append to it, lives here too.
 *
 * Diagnostics are located at the node (n->loc) or at mo.output (g->output_loc)
 * or, for graph inputs, 0:0. Where the location is 0:0 (API-built graphs) the
 * message starts with the position: "op #3: ...", "input 0 (%x): ...",
 * "mo.output: output 1 ...". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer.h"
#include "control.h"
#include "ir.h"

typedef struct vctx {
  ir_graph *g;
  ir_diag *d;
  bool *defined; /* by value id */
} vctx;

/* ---- symbols and types ---- */

/* The graph's symbol list as "<batch, seq>" into buf. */
static const char *sym_list(const ir_graph *g, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i <= g->nsyms && len < cap; i++) {
    const char *s = i == g->nsyms ? ">" : g->syms[i] ? g->syms[i] : "?";
    int w = snprintf(buf + len, cap - len, "%s%s", i == 0 ? "<" : i == g->nsyms ? "" : ", ", s);
    if (w < 0) break;
    len += (size_t)w;
  }
  if (g->nsyms == 0) snprintf(buf, cap, "<>");
  return buf;
}

/* 0, or -1 with msg filled: a symbol of d is not one of g's. */
static int check_dim_syms(const ir_graph *g, const ir_dim *d, char *msg, size_t cap) {
  if (!d) return snprintf(msg, cap, "a dim is missing"), -1;
  switch (d->kind) {
  case IR_DIM_CONST: return 0;
  case IR_DIM_SYM: {
    const char *nm = d->name ? d->name : "?";
    if (d->sym < 0 || d->sym >= g->nsyms || !g->syms[d->sym] || strcmp(g->syms[d->sym], nm) != 0) {
      char list[256];
      if (g->syms_declared)
        snprintf(msg, cap, "symbolic dim '%s' is not declared in the graph's parameter list %s", nm,
                 sym_list(g, list, sizeof list));
      else
        snprintf(msg, cap, "symbolic dim '%s' is not a symbol of the graph", nm);
      return -1;
    }
    return 0;
  }
  case IR_DIM_ADD:
  case IR_DIM_MUL:
  case IR_DIM_FLOORDIV:
  case IR_DIM_CEILDIV:
  case IR_DIM_MOD: {
    int n = d->kind == IR_DIM_ADD || d->kind == IR_DIM_MUL ? d->n : 1;
    if (n > 0 && !d->ops) return snprintf(msg, cap, "a dim is malformed"), -1;
    for (int i = 0; i < n; i++)
      if (check_dim_syms(g, d->ops[i], msg, cap) != 0) return -1;
    return 0;
  }
  }
  snprintf(msg, cap, "a dim is malformed");
  return -1;
}

/* 0, or -1 with msg filled: t is not a well-formed type of g. */
static int check_type(const ir_graph *g, const ir_type *t, char *msg, size_t cap) {
  if ((unsigned)t->dtype >= IR_DT_COUNT)
    return snprintf(msg, cap, "its dtype %d is not a dtype", (int)t->dtype), -1;
  if (t->rank < 0) return snprintf(msg, cap, "it has no type"), -1;
  if (t->rank > IR_MAX_RANK)
    return snprintf(msg, cap, "its rank %d is more than %d", t->rank, IR_MAX_RANK), -1;
  if (t->rank > 0 && !t->dims) return snprintf(msg, cap, "its dims are missing"), -1;
  for (int i = 0; i < t->rank; i++) {
    int64_t v;
    if (!t->dims[i]) return snprintf(msg, cap, "dim %d is missing", i), -1;
    if (ir_dim_is_const(t->dims[i], &v) && v < 0)
      return snprintf(msg, cap, "dim %d is %" PRId64 ", dims must be >= 0", i, v), -1;
    if (check_dim_syms(g, t->dims[i], msg, cap) != 0) return -1;
  }
  return 0;
}

/* ---- values ---- */

static bool in_graph(const ir_graph *g, const ir_value *v) {
  return v && v->id >= 0 && v->id < g->nvalues && g->values[v->id] == v;
}

static const char *op_name(const ir_node *n) {
  const ir_op_info *o = ir_op_get(n->op);
  return o ? o->name : "?";
}

/* A node-located error with the "op #k: " prefix when the node has no place. */
static int node_fail(vctx *c, const ir_node *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int node_fail(vctx *c, const ir_node *n, const char *fmt, ...) {
  char buf[480];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n->loc.line > 0) return ir_diag_set(c->d, n->loc, "%s", buf);
  return ir_diag_set(c->d, n->loc, "op #%d: %s", n->id, buf);
}

static int verify_inputs(vctx *c) {
  ir_graph *g = c->g;
  char msg[400];
  for (int i = 0; i < g->ninputs; i++) {
    ir_value *v = g->inputs[i];
    if (!in_graph(g, v) || v->def || v->index != i)
      return ir_diag_set(c->d, (ir_loc){0, 0}, "input %d is not a well-formed graph input", i);
    if (check_type(g, &v->type, msg, sizeof msg) != 0)
      return ir_diag_set(c->d, (ir_loc){0, 0}, "input %d (%%%s): %s", i, v->name, msg);
    c->defined[v->id] = true;
  }
  return 0;
}

/* ---- attributes ---- */

/* Names come from the op's schema (ops.def's ATTRS rows, runtime-stamped
 * kiln.* facts included); an op with IR_OPF_PARAMS takes any other name as a
 * kernel parameter. */
static int verify_attr_names(vctx *c, const ir_node *n) {
  if (n->nattrs > 0 && !n->attrs)
    return node_fail(c, n, "mo.%s has malformed attributes", op_name(n));
  bool any_name = ir_op_has_flag(n->op, IR_OPF_PARAMS);
  for (int i = 0; i < n->nattrs; i++) {
    const char *a = n->attrs[i].name;
    if (!a) return node_fail(c, n, "mo.%s has an attribute without a name", op_name(n));
    if (!any_name && !ir_op_attr_spec(n->op, a))
      return node_fail(c, n, "mo.%s has no attribute '%s'", op_name(n), a);
    for (int j = 0; j < i; j++)
      if (strcmp(n->attrs[j].name, a) == 0)
        return node_fail(c, n, "attribute '%s' of mo.%s is given twice", a, op_name(n));
  }
  return 0;
}

/* ---- nodes ---- */

static int verify_node(vctx *c, int idx) {
  ir_graph *g = c->g;
  ir_node *n = g->nodes[idx];
  char msg[400];
  if (!n) return ir_diag_set(c->d, (ir_loc){0, 0}, "op #%d is missing", idx);
  if (n->id != idx) return node_fail(c, n, "op #%d records position %d", idx, n->id);
  if (!ir_op_get(n->op)) return node_fail(c, n, "unknown op code %d", (int)n->op);
  const char *nm = op_name(n);
  if ((n->nin > 0 && !n->in) || n->nin < 0 || n->nout < 0 || (n->nout > 0 && !n->out))
    return node_fail(c, n, "mo.%s is malformed", nm);
  for (int k = 0; k < n->nin; k++) {
    const ir_value *v = n->in[k];
    if (!in_graph(g, v))
      return node_fail(c, n, "operand %d of mo.%s is not a value of the graph", k, nm);
    if (!c->defined[v->id])
      return node_fail(c, n, "operand %d of mo.%s (%%%s) is used before it is defined", k, nm,
                       v->name);
  }
  for (int k = 0; k < n->nout; k++) {
    ir_value *v = n->out[k];
    if (!in_graph(g, v) || v->def != n || v->index != k || c->defined[v->id])
      return node_fail(c, n, "result %d of mo.%s is not a well-formed result", k, nm);
    if (v->type.rank != -1 && check_type(g, &v->type, msg, sizeof msg) != 0)
      return node_fail(c, n, "result %d of mo.%s (%%%s): %s", k, nm, v->name, msg);
  }
  if (verify_attr_names(c, n) != 0) return -1;
  if (ir_infer_node(g, n, c->d) != 0) return -1;
  for (int k = 0; k < n->nout; k++) {
    ir_value *v = n->out[k];
    if (check_type(g, &v->type, msg, sizeof msg) != 0)
      return node_fail(c, n, "result %d of mo.%s (%%%s): %s", k, nm, v->name, msg);
    c->defined[v->id] = true;
  }
  return 0;
}

static int verify_outputs(vctx *c) {
  ir_graph *g = c->g;
  if (g->noutputs < 1 || !g->outputs)
    return ir_diag_set(c->d, g->output_loc, "the graph has no outputs");
  const char *pre = g->output_loc.line > 0 ? "" : "mo.output: ";
  for (int i = 0; i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    if (!in_graph(g, v))
      return ir_diag_set(c->d, g->output_loc, "%soutput %d is not a value of the graph", pre, i);
    if (!c->defined[v->id])
      return ir_diag_set(c->d, g->output_loc, "%soutput %d (%%%s) is not defined", pre, i, v->name);
  }
  return 0;
}

/* Inputs and outputs are bound and reported by name (argument_names /
 * result_names, else the SSA name), so two may not share one: a second input
 * named like the first could never be given, a second output would shadow
 * the first. The same value returned twice without result names is fine. */
static const char *input_label(const ir_graph *g, int i) {
  return g->input_names && g->input_names[i] ? g->input_names[i] : g->inputs[i]->name;
}

static const char *output_label(const ir_graph *g, int i) {
  return g->output_names && g->output_names[i] ? g->output_names[i] : g->outputs[i]->name;
}

static int verify_names(vctx *c) {
  const ir_graph *g = c->g;
  for (int i = 0; i < g->ninputs; i++)
    for (int j = i + 1; j < g->ninputs; j++)
      if (strcmp(input_label(g, i), input_label(g, j)) == 0)
        return ir_diag_set(c->d, (ir_loc){0, 0}, "inputs %d and %d are both named '%s'", i, j,
                           input_label(g, i));
  for (int i = 0; i < g->noutputs; i++)
    for (int j = i + 1; j < g->noutputs; j++) {
      bool named = g->output_names && (g->output_names[i] || g->output_names[j]);
      if (named && strcmp(output_label(g, i), output_label(g, j)) == 0)
        return ir_diag_set(c->d, g->output_loc, "outputs %d and %d are both named '%s'", i, j,
                           output_label(g, i));
    }
  return 0;
}

int ir_graph_verify(ir_graph *g, ir_diag *d) {
  if (!g) return ir_diag_set(d, (ir_loc){0, 0}, "no graph");
  g->nchecks = 0;
  for (int i = 0; i < g->nsyms; i++)
    if (!g->syms || !g->syms[i]) return ir_diag_set(d, (ir_loc){0, 0}, "symbol #%d has no name", i);
  if ((g->nvalues > 0 && !g->values) || (g->nnodes > 0 && !g->nodes) ||
      (g->ninputs > 0 && !g->inputs))
    return ir_diag_set(d, (ir_loc){0, 0}, "the graph is malformed");
  vctx c = {g, d, calloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof(bool))};
  if (!c.defined) return ir_diag_set(d, (ir_loc){0, 0}, "out of memory");
  int rc = verify_inputs(&c);
  for (int i = 0; rc == 0 && i < g->nnodes; i++) rc = verify_node(&c, i);
  if (rc == 0) rc = verify_outputs(&c);
  if (rc == 0) rc = verify_names(&c);
  if (rc == 0) rc = ir_buffer_verify(g, d); /* chains and buffers (buffer.h) */
  /* calls (control.h): checked in a module's main graph; a graph being built
   * as a region or subgraph (no subgraphs of its own) is checked with it */
  if (rc == 0 && !g->nested && g->nsubgraphs > 0) rc = ir_module_verify(g, d);
  free(c.defined);
  return rc;
}

/* ---- run-time checks ---- */

/* Declared in ir.h next to the checks; here because verify owns g->checks:
 * it empties the list, the op rules in infer.c append to it. The array and
 * the messages live in g's arena (ir_graph_clone copies them). */

int ir_graph_add_check(ir_graph *g, ir_check_kind kind, const ir_dim *lhs, const ir_dim *rhs,
                       const ir_node *node, const char *fmt, ...) {
  if (!g || !lhs || !rhs) return -1;
  if (g->nchecks >= g->cap_checks) {
    int ncap = g->cap_checks ? g->cap_checks * 2 : 8;
    ir_check *nc = ir_arena_alloc(g->arena, (size_t)ncap * sizeof *nc);
    if (!nc) return -1;
    if (g->nchecks) memcpy(nc, g->checks, (size_t)g->nchecks * sizeof *nc);
    g->checks = nc;
    g->cap_checks = ncap;
  }
  char buf[400];
  va_list ap;
  va_start(ap, fmt);
  buf[0] = 0;
  if (fmt) vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  const char *what = ir_arena_strdup(g->arena, buf);
  if (!what) return -1;
  ir_check *k = &g->checks[g->nchecks++];
  k->kind = kind;
  k->lhs = lhs;
  k->rhs = rhs;
  k->node = node;
  k->what = what;
  return 0;
}
