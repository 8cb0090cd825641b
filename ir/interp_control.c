/* interp_control.c - the reference interpreter of graphs with control flow
 * (control.h, ir_interp_flow): one step of ir_flow_split at a time, each
 * segment through ir_interp_run, each control node by running its regions
 * or callee the same way (so control flow nests to any depth).
 *
 * Semantics: mo.if runs the region its predicate picks; mo.while runs @cond
 * and @body until @cond gives false (no iteration limit, as in MAX); mo.call
 * runs the subgraph with `prefix` put before its weights' names. A result's
 * constant dims are checked against what the region gave; symbolic dims are
 * whatever it gave (the next step solves its symbols from them).
 * Guarantees: on failure nothing stays allocated, msg names the node (op,
 * line, result) and the region. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "interp.h"

typedef struct prefixed { /* weights seen through a mo.call's prefix */
  ir_weight_fn fn;
  void *ud;
  const char *prefix;
} prefixed;

static const ir_tensor *prefixed_weight(void *ud, const char *name) {
  const prefixed *p = ud;
  if (!p->fn) return NULL;
  size_t a = strlen(p->prefix), b = strlen(name);
  char *full = malloc(a + b + 1);
  if (!full) return NULL;
  memcpy(full, p->prefix, a);
  memcpy(full + a, name, b + 1);
  const ir_tensor *t = p->fn(p->ud, full);
  free(full);
  return t;
}

typedef struct frun {
  const ir_graph *main; /* the module: mo.call's subgraphs */
  ir_weight_fn weights;
  void *ud;
  char *msg;
  size_t msglen;
} frun;

static int run_any(const frun *r, const ir_graph *g, const ir_tensor *in, ir_tensor *out);

static void free_all(ir_tensor *t, int n) {
  for (int i = 0; i < n; i++) {
    free(t[i].data);
    t[i].data = NULL;
  }
}

static int node_fail(const frun *r, const ir_node *n, const char *fmt, const char *inner) {
  char what[512];
  snprintf(what, sizeof what, fmt, inner);
  if (n->loc.line > 0)
    return ir_ref_fail(r->msg, r->msglen, "mo.%s at line %d (%%%s): %s", ir_op_get(n->op)->name,
                       n->loc.line, n->nout ? n->out[0]->name : "", what);
  return ir_ref_fail(r->msg, r->msglen, "mo.%s (%%%s): %s", ir_op_get(n->op)->name,
                     n->nout ? n->out[0]->name : "", what);
}

/* Region g of node n on in into out, with the region named in errors. */
static int run_region(const frun *r, const ir_node *n, const ir_graph *g, const ir_tensor *in,
                      ir_tensor *out) {
  if (run_any(r, g, in, out) == 0) return 0;
  char inner[1024];
  snprintf(inner, sizeof inner, "%s", r->msg ? r->msg : "");
  char fmt[160];
  snprintf(fmt, sizeof fmt, "region @%.100s: %%s", g->name);
  return node_fail(r, n, fmt, inner);
}

/* The results fit the node's declared types (constant dims). */
static int check_results(const frun *r, const ir_node *n, const ir_tensor *out) {
  for (int i = 0; i < n->nout; i++) {
    const ir_type *t = &n->out[i]->type;
    for (int a = 0; a < t->rank; a++) {
      int64_t c;
      if (ir_dim_is_const(t->dims[a], &c) && out[i].shape[a] != c) {
        char what[200];
        snprintf(what, sizeof what, "result %d axis %d: expected %lld, the region gave %lld", i,
                 a, (long long)c, (long long)out[i].shape[a]);
        return node_fail(r, n, "%s", what);
      }
    }
  }
  return 0;
}

static bool truth(const ir_tensor *t) { return t->data && ((const unsigned char *)t->data)[0]; }

static int run_while(const frun *r, const ir_node *n, const ir_tensor *in, ir_tensor *out) {
  int nc = n->nin;
  ir_tensor *cur = calloc((size_t)nc + 1, sizeof *cur);
  ir_tensor *next = calloc((size_t)nc + 1, sizeof *next);
  int rc = -1;
  bool owned = false; /* cur holds the inputs until the first iteration */
  if (!cur || !next) {
    ir_ref_fail(r->msg, r->msglen, "out of memory");
    goto out;
  }
  memcpy(cur, in, (size_t)nc * sizeof *cur);
  for (;;) {
    ir_tensor pred;
    if (run_region(r, n, n->regions[0], cur, &pred)) goto out;
    bool go = truth(&pred);
    free(pred.data);
    if (!go) break;
    if (run_region(r, n, n->regions[1], cur, next)) goto out;
    if (owned) free_all(cur, nc);
    memcpy(cur, next, (size_t)nc * sizeof *cur);
    owned = true;
  }
  for (int i = 0; i < nc; i++) { /* the last carried values (copied when still the inputs) */
    out[i] = cur[i];
    if (owned) continue;
    size_t bytes = (size_t)ir_tensor_numel(&cur[i]) * ir_dtype_size(cur[i].dtype);
    if (!(out[i].data = malloc(bytes ? bytes : 1))) {
      free_all(out, i);
      ir_ref_fail(r->msg, r->msglen, "out of memory");
      goto out;
    }
    if (bytes) memcpy(out[i].data, cur[i].data, bytes);
  }
  owned = false;
  rc = 0;
out:
  if (owned && cur) free_all(cur, nc);
  free(cur);
  free(next);
  return rc;
}

static int run_control(const frun *r, const ir_node *n, const ir_tensor *in, ir_tensor *out) {
  int rc;
  if (n->op == IR_OP_IF) {
    rc = run_region(r, n, n->regions[truth(&in[0]) ? 0 : 1], in + 1, out);
  } else if (n->op == IR_OP_WHILE) {
    rc = run_while(r, n, in, out);
  } else {
    const ir_graph *s = ir_module_find(r->main, ir_node_attr_string(n, "callee", ""));
    if (!s) return node_fail(r, n, "%s", "the called subgraph is not in the module");
    prefixed p = {r->weights, r->ud, ir_node_attr_string(n, "prefix", "")};
    frun sub = *r;
    sub.weights = prefixed_weight;
    sub.ud = &p;
    rc = run_region(&sub, n, s, in, out);
  }
  if (rc == 0 && check_results(r, n, out) != 0) {
    free_all(out, n->nout);
    return -1;
  }
  return rc;
}

static int run_flow(const frun *r, const ir_graph *g, const ir_tensor *in, ir_tensor *out) {
  for (int i = 0; i < g->ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    if (in[i].dtype != t->dtype || in[i].rank != t->rank)
      return ir_ref_fail(r->msg, r->msglen, "input %d (%s): expected %s of rank %d, got %s of "
                         "rank %d", i, ir_ref_input_name(g, i), ir_dtype_name(t->dtype), t->rank,
                         ir_dtype_name(in[i].dtype), in[i].rank);
  }
  ir_diag d = {0};
  ir_flow *f = ir_flow_split(g, &d);
  if (!f) return ir_ref_fail(r->msg, r->msglen, "%s", d.msg);
  size_t nv = (size_t)g->nvalues + 1;
  ir_tensor *vals = calloc(nv, sizeof *vals);
  bool *owned = calloc(nv, sizeof *owned);
  int rc = -1, ndone = 0;
  if (!vals || !owned) {
    ir_ref_fail(r->msg, r->msglen, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->ninputs; i++) vals[g->inputs[i]->id] = in[i];
  for (int s = 0; s < f->nsteps; s++) {
    const ir_flow_step *st = &f->steps[s];
    ir_tensor sin[st->nin + 1], sout[st->nout + 1];
    for (int k = 0; k < st->nin; k++) sin[k] = vals[st->in[k]];
    int src = st->node ? run_control(r, st->node, sin, sout)
                       : ir_interp_run(st->seg, sin, r->weights, r->ud, sout, r->msg, r->msglen);
    if (src) goto out;
    for (int k = 0; k < st->nout; k++) {
      vals[st->out[k]] = sout[k];
      owned[st->out[k]] = true;
    }
  }
  for (int i = 0; i < g->noutputs; i++) { /* copies: a value may be an input or twice an output */
    const ir_tensor *t = &vals[g->outputs[i]->id];
    size_t bytes = (size_t)ir_tensor_numel(t) * ir_dtype_size(t->dtype);
    out[i] = *t;
    if (!(out[i].data = malloc(bytes ? bytes : 1))) {
      ir_ref_fail(r->msg, r->msglen, "out of memory");
      goto out;
    }
    if (bytes) memcpy(out[i].data, t->data, bytes);
    ndone = i + 1;
  }
  rc = 0;
out:
  if (rc) free_all(out, ndone);
  for (size_t i = 0; vals && owned && i < nv; i++)
    if (owned[i]) free(vals[i].data);
  free(vals);
  free(owned);
  ir_flow_free(f);
  return rc;
}

static int run_any(const frun *r, const ir_graph *g, const ir_tensor *in, ir_tensor *out) {
  if (ir_graph_has_control(g)) return run_flow(r, g, in, out);
  return ir_interp_run(g, in, r->weights, r->ud, out, r->msg, r->msglen);
}

int ir_interp_flow(const ir_graph *main, const ir_graph *g, const ir_tensor *inputs,
                   ir_flow_weight_fn weights, void *ud, ir_tensor *outputs, char *msg,
                   size_t msglen) {
  frun r = {main, weights, ud, msg, msglen};
  for (int i = 0; i < g->noutputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  return run_flow(&r, g, inputs, outputs);
}
