/* test_compile_order.c - the order a model's kernels are spread over
 * threads in (src/compile_order.h): distinct kernels by estimated cost,
 * highest first, ties in graph order; a node whose kernel text an earlier
 * node has goes last; the result is a permutation of the input; fused
 * bodies count their ops. And a model whose quick kernels compile in this
 * order computes what the interpreter does, on either path (threads
 * spread for the compile on a context of fewer threads than CPUs, or the
 * context's pool). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/compile_order.h"
#include "src/pipeline.h"
#include "support/oracle.h"

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "ir_parse: %d:%d: %s", d.line, d.col, d.msg);
  return g;
}

/* The nodes with a kernel, in graph order; their count. */
static int kernel_nodes(const ir_graph *g, int *nodes) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (rt_pipeline_has_kernel(g, g->nodes[i])) nodes[n++] = i;
  return n;
}

static const char *op_name(const ir_graph *g, int node) {
  return ir_op_get(g->nodes[node]->op)->name;
}

/* Two permutes with one text, a softmax, a relu, then the same relu
 * again: softmax, relu, permute (cost 8, 1, 1; ties in graph order: the
 * permute came first), then the repeated permute and relu. */
static const char GRAPH[] =
    "mo.graph @g<n>(%x: !mo.tensor<[n, 4, 8], f32>) -> (!mo.tensor<[n, 8, 4], f32>, "
    "!mo.tensor<[n, 8, 4], f32>, !mo.tensor<[n, 4, 8], f32>, !mo.tensor<[n, 4, 8], f32>, "
    "!mo.tensor<[n, 4, 8], f32>) {\n"
    "  %a = mo.permute(%x) {dims = [0, 2, 1]} : (!mo.tensor<[n, 4, 8], f32>) -> "
    "!mo.tensor<[n, 8, 4], f32>\n"
    "  %s = mo.softmax(%x) {axis = -1} : !mo.tensor<[n, 4, 8], f32>\n"
    "  %b = mo.permute(%x) {dims = [0, 2, 1]} : (!mo.tensor<[n, 4, 8], f32>) -> "
    "!mo.tensor<[n, 8, 4], f32>\n"
    "  %r = mo.relu(%x) : !mo.tensor<[n, 4, 8], f32>\n"
    "  %r2 = mo.relu(%x) : !mo.tensor<[n, 4, 8], f32>\n"
    "  mo.output %a, %b, %s, %r, %r2 : !mo.tensor<[n, 8, 4], f32>, !mo.tensor<[n, 8, 4], f32>, "
    "!mo.tensor<[n, 4, 8], f32>, !mo.tensor<[n, 4, 8], f32>, !mo.tensor<[n, 4, 8], f32>\n"
    "}\n";

Test(compile_order, longest_first_duplicates_last) {
  ir_graph *g = parse(GRAPH);
  int nodes[16];
  int n = kernel_nodes(g, nodes);
  cr_assert_eq(n, 5);
  int a = nodes[0], s = nodes[1], b = nodes[2], r = nodes[3], r2 = nodes[4];
  cr_assert_str_eq(op_name(g, a), "permute");
  cr_assert_str_eq(op_name(g, s), "softmax");
  rt_compile_order(g, nodes, n);
  int want[5] = {s, a, r, b, r2};
  for (int k = 0; k < n; k++)
    cr_expect_eq(nodes[k], want[k], "position %d: node %d (mo.%s), expected node %d (mo.%s)", k,
                 nodes[k], op_name(g, nodes[k]), want[k], op_name(g, want[k]));
  ir_graph_free(g);
}

Test(compile_order, permutation_of_the_input) {
  ir_graph *g = parse(GRAPH);
  int nodes[16];
  int n = kernel_nodes(g, nodes);
  /* start from a reversed order: still every node exactly once */
  for (int k = 0; k < n / 2; k++) {
    int t = nodes[k];
    nodes[k] = nodes[n - 1 - k];
    nodes[n - 1 - k] = t;
  }
  rt_compile_order(g, nodes, n);
  bool seen[64] = {false};
  for (int k = 0; k < n; k++) {
    cr_assert(!seen[nodes[k]], "node %d twice", nodes[k]);
    seen[nodes[k]] = true;
  }
  int again[16];
  cr_assert_eq(kernel_nodes(g, again), n);
  for (int k = 0; k < n; k++) cr_expect(seen[again[k]], "node %d dropped", again[k]);
  rt_compile_order(g, nodes, 0); /* nothing to order: no effect, no crash */
  rt_compile_order(g, nodes, 1);
  ir_graph_free(g);
}

Test(compile_order, costs) {
  ir_graph *g = parse(GRAPH);
  int nodes[16];
  kernel_nodes(g, nodes);
  cr_expect_gt(rt_compile_cost(g->nodes[nodes[1]]), rt_compile_cost(g->nodes[nodes[0]]),
               "a softmax costs more than a permute");
  cr_expect_geq(rt_compile_cost(g->nodes[nodes[0]]), 1);
  ir_graph_free(g);
}

/* The model of GRAPH on a context of `threads` threads (KILN_NUM_THREADS)
 * that builds quick kernels from the first one (KILN_TIER_UP=1) matches
 * the interpreter at every binding, duplicated kernels included.
 * Criterion runs each test in its own process, so the environment stays
 * the test's. */
static void check_model(const char *threads, const char *bindings) {
  setenv("KILN_NUM_THREADS", threads, 1);
  setenv("KILN_TIER_UP", "1", 1);
  oracle_case c = {.label = threads, .mlir = GRAPH, .bindings = bindings, .seed = 7,
                   .rtol = 1e-6, .atol = 1e-6};
  oracle_report r;
  cr_expect_eq(oracle_run(&c, &r), 0, "%s", r.msg);
}

/* One thread on a machine of several CPUs: the quick kernels compile on
 * threads spread for the compile. */
Test(compile_order, spread_model_matches_the_interpreter) { check_model("1", "n=3;n=0;n=17"); }

/* As many threads as CPUs or more: they compile as the pool's parts. */
Test(compile_order, pool_model_matches_the_interpreter) { check_model("4", "n=5;n=0;n=2"); }
