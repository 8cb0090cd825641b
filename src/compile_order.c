/* compile_order.c - the order a model's kernels are handed to threads that
 * each take the next one (model.c's quick compiles: rt_spread_run, or the
 * pool's parts, claimed in order; compile_order.h).
 *
 * Two rules. Longest first: on a few CPUs the compile ends when its
 * longest kernel does, so that one must start at once, not after a queue
 * of permutes (the "longest processing time" rule: within 4/3 of the best
 * schedule). Duplicates last: nodes whose kernel text is the same compile
 * once (the memory cache makes the second caller wait on the first), so a
 * thread that took a duplicate early would sit idle; taken last, the first
 * copy is done or nothing else is left to do.
 *
 * The cost is an estimate of LLVM's time per kernel, from its op classes
 * (measured on the quick tier: a softmax or a GEMM with a transcendental
 * epilogue ~5x a permute), not of the kernel's run time. Guarantees: nodes
 * is a permutation of what it was; an error in making a text (reported
 * again by the compile itself) leaves that node where the rules put a
 * text-less node: after the others of its cost, never dropped. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "compile_order.h"
#include "pipeline.h"

/* LLVM's work for one op of a kernel, in rough units of a permute's. */
static int op_cost(const ir_node *n) {
  switch (ir_op_get(n->op)->cls) {
  case IR_CLS_SOFTMAX: return 8;
  case IR_CLS_LAYER_NORM: return 4;
  case IR_CLS_UNARY_FLOAT: return 3; /* exp, tanh, erf, gelu: polynomial expansions */
  case IR_CLS_MATMUL: return 3;
  case IR_CLS_REDUCE:
  case IR_CLS_REDUCE_ARG:
  case IR_CLS_SCAN: return 2;
  default: return 1;
  }
}

int rt_compile_cost(const ir_node *n) {
  if (!n->body) return op_cost(n);
  int c = 0;
  for (int i = 0; i < n->body->nnodes; i++) c += rt_compile_cost(n->body->nodes[i]);
  return c > 0 ? c : 1;
}

typedef struct order_item {
  int node, cost, dup, pos;
  uint64_t hash;
  char *text;
} order_item;

static int by_rules(const void *a, const void *b) {
  const order_item *x = a, *y = b;
  if (x->dup != y->dup) return x->dup - y->dup;
  if (x->cost != y->cost) return y->cost - x->cost;
  return x->pos - y->pos;
}

void rt_compile_order(const ir_graph *g, int *nodes, int n) {
  if (n < 2) return;
  order_item *it = calloc((size_t)n, sizeof *it);
  int *map = malloc(((size_t)g->nsyms + 1) * sizeof *map);
  if (!it || !map) { /* the order is only a speed-up: keep the given one */
    free(it);
    free(map);
    return;
  }
  for (int k = 0; k < n; k++) {
    order_item *o = &it[k];
    int nks = 0;
    o->node = nodes[k];
    o->pos = k;
    o->cost = rt_compile_cost(g->nodes[nodes[k]]);
    o->text = rt_pipeline_kernel_text(g, nodes[k], NULL, map, &nks, NULL);
    if (!o->text) continue;
    o->hash = XXH3_64bits(o->text, strlen(o->text));
    for (int j = 0; j < k && !o->dup; j++)
      o->dup = it[j].text && !it[j].dup && it[j].hash == o->hash && !strcmp(it[j].text, o->text);
  }
  qsort(it, (size_t)n, sizeof *it, by_rules);
  for (int k = 0; k < n; k++) {
    nodes[k] = it[k].node;
    free(it[k].text);
  }
  free(it);
  free(map);
}
