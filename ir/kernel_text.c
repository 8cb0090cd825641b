/* kernel_text.c - the canonical text of one kernel (ir_kernel_text): a graph
 * with one node, printed by ir_print, that names nothing of the graph it
 * came from, so the same op on the same types prints the same text in any
 * graph (the text is what the kernel cache hashes and what the JIT compiles).
 *
 * The kernel graph: `mo.graph @kernel<d0, d1, ...>(%a0: T, %a1: T, ...) ->
 * (...)` with one input per operand (an operand used twice is two inputs:
 * the kernel ABI passes one buffer per operand), one node with the node's op
 * and attributes, results %r0, %r1, ..., outputs = the results in order.
 * Symbols are renamed d0, d1, ... in order of first use, walking the operand
 * types, then the result types, axis by axis, each dim in its canonical
 * structure; the dims are rebuilt with the constructors of dim.h, so they are
 * canonical for the new symbol numbering. sym_map[j] is the index in the
 * source graph of kernel symbol j: a kernel called with
 * kernel_syms[j] = graph_syms[sym_map[j]] computes what the node computes.
 * No locations, no argument / result names.
 * A mo.fused node (fuse.c) prints its body instead: inputs %a0, ... (the
 * node's operands), the body's nodes in order with results %r<k> for output
 * k and %t0, %t1, ... for the others, symbols numbered over the input types,
 * then every node's result types. The JIT compiles such a multi-node kernel
 * graph as one fused kernel (jit/fused.c).
 * ir_kernel_text_partial: the symbols marked in `bind` are replaced by their
 * values (dims rebuilt, so they fold), the others are renamed as above.
 * ir_kernel_text_bound: the same text with every dim replaced by its value
 * under a binding of all of g's symbols (a static kernel, no symbols: a
 * shape-specialized variant's kernel). NULL as above, or when a dim does not
 * evaluate to a non-negative value.
 *
 * Assumes: n is a node of g and g was verified (types inferred).
 * Guarantees: the text parses (ir_parse_kernel_text, parse.h: it may carry
 * the runtime's kiln.* attributes) into a graph that prints to the same text; equal texts mean equal kernels up to the symbol renaming (the
 * converse is best effort: a dim mixing several symbols may number them in
 * an order that leaks the source graph's symbol order, so two isomorphic
 * nodes can, rarely, print differently: a cache miss, never a wrong hit).
 * NULL only on out-of-memory or a node that is not g's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

typedef struct sym_renamer {
  const ir_graph *src;
  ir_graph *dst;
  int *map;     /* src symbol -> dst symbol, -1 before first use (src->nsyms) */
  int *sym_map; /* dst symbol -> src symbol (caller's array, may be NULL) */
  bool oom;
  const int64_t *bound; /* src symbol values: every dim becomes a constant (or NULL) */
  const bool *bind;     /* with bound: only the symbols s with bind[s] are replaced by
                         * their value, the others stay symbols (NULL: all replaced) */
} sym_renamer;

static bool sym_bound(const sym_renamer *r, int s) {
  return r->bound && (!r->bind || (s >= 0 && s < r->src->nsyms && r->bind[s]));
}

/* Number the symbols of d in first-use order. */
static void number_syms(sym_renamer *r, const ir_dim *d) {
  if (!d || r->oom) return;
  if (d->kind == IR_DIM_SYM) {
    if (sym_bound(r, d->sym)) return;
    if (d->sym < 0 || d->sym >= r->src->nsyms || r->map[d->sym] >= 0) return;
    char name[24];
    int j = r->dst->nsyms;
    int len = snprintf(name, sizeof name, "d%d", j);
    if (ir_graph_symbol(r->dst, name, (size_t)len, true) != j) {
      r->oom = true;
      return;
    }
    r->map[d->sym] = j;
    if (r->sym_map) r->sym_map[j] = d->sym;
    return;
  }
  for (int i = 0; i < d->n && d->ops; i++) number_syms(r, d->ops[i]);
}

/* d rebuilt in dst's arena with renamed symbols; NULL on OOM. */
static const ir_dim *rename_dim(sym_renamer *r, const ir_dim *d) {
  ir_arena *a = r->dst->arena;
  if (r->bound && !r->bind) { /* a bound kernel: the dim's value under the binding */
    int64_t v;
    ir_dim_err err = {0};
    if (!ir_dim_eval(d, r->bound, &v, &err) || v < 0) return NULL;
    return ir_dim_const(a, v);
  }
  switch (d->kind) {
  case IR_DIM_CONST: return ir_dim_const(a, d->value);
  case IR_DIM_SYM: {
    if (sym_bound(r, d->sym)) return r->bound[d->sym] < 0 ? NULL : ir_dim_const(a, r->bound[d->sym]);
    int j = d->sym >= 0 && d->sym < r->src->nsyms ? r->map[d->sym] : -1;
    if (j < 0) return NULL;
    return ir_dim_sym(a, j, r->dst->syms[j]);
  }
  case IR_DIM_ADD: {
    const ir_dim *acc = ir_dim_const(a, 0);
    for (int i = 0; acc && i < d->n; i++) {
      const ir_dim *t = rename_dim(r, d->ops[i]);
      acc = t ? ir_dim_add(a, acc, t) : NULL;
    }
    return acc;
  }
  case IR_DIM_MUL: {
    const ir_dim *acc = ir_dim_const(a, d->value);
    for (int i = 0; acc && i < d->n; i++) {
      const ir_dim *t = rename_dim(r, d->ops[i]);
      acc = t ? ir_dim_mul(a, acc, t) : NULL;
    }
    return acc;
  }
  case IR_DIM_FLOORDIV:
  case IR_DIM_CEILDIV:
  case IR_DIM_MOD: {
    const ir_dim *x = d->n >= 1 ? rename_dim(r, d->ops[0]) : NULL;
    if (!x) return NULL;
    if (d->kind == IR_DIM_FLOORDIV) return ir_dim_floordiv(a, x, d->value, NULL);
    if (d->kind == IR_DIM_CEILDIV) return ir_dim_ceildiv(a, x, d->value, NULL);
    return ir_dim_mod(a, x, d->value, NULL);
  }
  }
  return NULL;
}

static bool rename_type(sym_renamer *r, ir_type *dst, const ir_type *src) {
  *dst = *src;
  dst->dims = NULL;
  if (src->rank <= 0) return true;
  const ir_dim **dims = ir_arena_alloc(r->dst->arena, (size_t)src->rank * sizeof *dims);
  if (!dims) return false;
  for (int i = 0; i < src->rank; i++) {
    if (!(dims[i] = rename_dim(r, src->dims[i]))) return false;
    if (dims[i]->kind == IR_DIM_CONST && dims[i]->value < 0) return false;
  }
  dst->dims = dims;
  return true;
}

static bool node_of(const ir_graph *g, const ir_node *n) {
  return g && n && n->id >= 0 && n->id < g->nnodes && g->nodes[n->id] == n;
}

/* The kernel graph of mo.fused node n (its body, renamed) built into k;
 * false on OOM or a malformed body. */
static bool fused_kernel(sym_renamer *r, ir_graph *k, const ir_graph *g, const ir_node *n) {
  const ir_graph *b = n->body;
  bool all_bound = r->bound && !r->bind;
  if (b->nsyms != g->nsyms || b->ninputs != n->nin || b->noutputs < 1) return false;
  for (int i = 0; !all_bound && i < b->ninputs; i++)
    for (int a = 0; a < b->inputs[i]->type.rank; a++) number_syms(r, b->inputs[i]->type.dims[a]);
  for (int i = 0; !all_bound && i < b->nnodes; i++)
    for (int o = 0; o < b->nodes[i]->nout; o++)
      for (int a = 0; a < b->nodes[i]->out[o]->type.rank; a++)
        number_syms(r, b->nodes[i]->out[o]->type.dims[a]);
  if (r->oom) return false;
  k->syms_declared = true;
  ir_value **map = calloc((size_t)b->nvalues + 1, sizeof *map);
  ir_value **outs = calloc((size_t)b->noutputs + 1, sizeof *outs);
  bool ok = map && outs;
  char name[24];
  for (int i = 0; ok && i < b->ninputs; i++) {
    ir_type t;
    snprintf(name, sizeof name, "a%d", i);
    ok = rename_type(r, &t, &b->inputs[i]->type) &&
         (map[b->inputs[i]->id] = ir_graph_add_input(k, name, &t)) != NULL;
  }
  int ntmp = 0;
  ir_loc none = {0, 0};
  for (int i = 0; ok && i < b->nnodes; i++) {
    const ir_node *m = b->nodes[i];
    ir_value *in[IR_EW_MAX_IN];
    ir_type ot[4];
    char names[4][24];
    const char *np[4];
    if (m->nin > IR_EW_MAX_IN || m->nout > 4) {
      ok = false;
      break;
    }
    for (int j = 0; j < m->nin; j++) ok = ok && (in[j] = map[m->in[j]->id]) != NULL;
    for (int o = 0; ok && o < m->nout; o++) {
      int out = -1;
      for (int q = 0; q < b->noutputs && out < 0; q++)
        if (b->outputs[q] == m->out[o]) out = q;
      if (out >= 0) snprintf(names[o], sizeof names[o], "r%d", out);
      else snprintf(names[o], sizeof names[o], "t%d", ntmp++);
      np[o] = names[o];
      ok = rename_type(r, &ot[o], &m->out[o]->type);
    }
    if (!ok) break;
    ir_node *kn = ir_graph_add_node(k, m->op, in, m->nin, m->attrs, m->nattrs, m->nout, ot, np,
                                    none, NULL);
    ok = kn != NULL;
    for (int o = 0; ok && o < m->nout; o++) map[m->out[o]->id] = kn->out[o];
  }
  for (int q = 0; ok && q < b->noutputs; q++) ok = (outs[q] = map[b->outputs[q]->id]) != NULL;
  ok = ok && ir_graph_set_outputs(k, outs, b->noutputs, none) == 0;
  free(map);
  free(outs);
  return ok;
}

static char *kernel_text(const ir_graph *g, const ir_node *n, int *sym_map, int *nsyms,
                         const int64_t *bound, const bool *bind) {
  if (nsyms) *nsyms = 0;
  if (!node_of(g, n)) return NULL;
  ir_graph *k = ir_graph_new("kernel");
  int *map = malloc(sizeof *map * (size_t)(g->nsyms + 1));
  ir_value **ins = calloc((size_t)n->nin + 1, sizeof *ins);
  ir_type *outs = calloc((size_t)n->nout + 1, sizeof *outs);
  char **rnames = calloc((size_t)n->nout + 1, sizeof *rnames);
  char *text = NULL;
  if (!k || !map || !ins || !outs || !rnames) goto done;
  for (int i = 0; i < g->nsyms; i++) map[i] = -1;
  sym_renamer r = {g, k, map, sym_map, false, bound, bind};
  if (n->body) { /* mo.fused: the body is the kernel */
    if (fused_kernel(&r, k, g, n) && (text = ir_print(k)) && nsyms) *nsyms = k->nsyms;
    goto done;
  }
  bool all_bound = bound && !bind;
  for (int i = 0; !all_bound && i < n->nin; i++)
    for (int a = 0; a < n->in[i]->type.rank; a++) number_syms(&r, n->in[i]->type.dims[a]);
  for (int i = 0; !all_bound && i < n->nout; i++)
    for (int a = 0; a < n->out[i]->type.rank; a++) number_syms(&r, n->out[i]->type.dims[a]);
  if (r.oom) goto done;
  k->syms_declared = true;

  char name[24];
  for (int i = 0; i < n->nin; i++) {
    ir_type t;
    snprintf(name, sizeof name, "a%d", i);
    if (!rename_type(&r, &t, &n->in[i]->type) || !(ins[i] = ir_graph_add_input(k, name, &t)))
      goto done;
  }
  for (int i = 0; i < n->nout; i++) {
    snprintf(name, sizeof name, "r%d", i);
    if (!rename_type(&r, &outs[i], &n->out[i]->type) || !(rnames[i] = strdup(name))) goto done;
  }
  ir_loc none = {0, 0};
  ir_node *kn = ir_graph_add_node(k, n->op, ins, n->nin, n->attrs, n->nattrs, n->nout, outs,
                                  (const char *const *)rnames, none, NULL);
  if (!kn || ir_graph_set_outputs(k, kn->out, kn->nout, none) < 0) goto done;
  text = ir_print(k);
  if (text && nsyms) *nsyms = k->nsyms;
done:
  if (rnames)
    for (int i = 0; i < n->nout; i++) free(rnames[i]);
  free(rnames);
  free(outs);
  free(ins);
  free(map);
  ir_graph_free(k);
  return text;
}

char *ir_kernel_text(const ir_graph *g, const ir_node *n, int *sym_map, int *nsyms) {
  return kernel_text(g, n, sym_map, nsyms, NULL, NULL);
}

char *ir_kernel_text_bound(const ir_graph *g, const ir_node *n, const int64_t *sym_values) {
  if (!sym_values) return NULL;
  return kernel_text(g, n, NULL, NULL, sym_values, NULL);
}

char *ir_kernel_text_partial(const ir_graph *g, const ir_node *n, const int64_t *sym_values,
                             const bool *bind, int *sym_map, int *nsyms) {
  if (!sym_values || !bind) return NULL;
  return kernel_text(g, n, sym_map, nsyms, sym_values, bind);
}
