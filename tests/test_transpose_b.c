/* test_transpose_b.c - matmul(a, transpose(b)) read as one GEMM with a
 * transposed B (ir/fold_transpose.c, kiln.transpose_b): the rewrite itself
 * (which transposes fold and which stay), and the numbers against the
 * reference interpreter, which runs the graph as written (an explicit
 * transpose): every path of the GEMM template's _tex entry (few rows: dot
 * products; packed: 8 x 8 register transposes, partial panels, K not a
 * multiple of 8, several K blocks, the caller's workspace), f32 and f64,
 * batched and broadcast, symbolic dims, two threads (a column split offsets
 * B by rows), a weight or a constant B packed once from its transposed
 * layout (prepack.c), with a fused epilogue, mo.permute; and the attribute
 * written by hand in graph text, which is refused (only the runtime sets it). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/rt.h"
#include "support/oracle.h"

#define T(dims, dt) "!mo.tensor<[" dims "], " dt ">"

/* ---- the rewrite ---- */

static ir_graph *parse_verified(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%s", d.msg);
  return g;
}

static int count_op(const ir_graph *g, ir_op op) {
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) k += g->nodes[i]->op == op;
  return k;
}

Test(fold, transpose_of_the_last_two_axes_folds) {
  ir_graph *g = parse_verified(
      "mo.graph @f<m>(%a: " T("2, m, 8", "f32") ", %b: " T("2, 5, 8", "f32") ") -> (" T("2, m, 5", "f32") ") {\n"
      "  %bt = mo.transpose(%b) {axis_1 = -1, axis_2 = 1} : (" T("2, 5, 8", "f32") ") -> " T("2, 8, 5", "f32") "\n"
      "  %c = mo.matmul(%a, %bt) : (" T("2, m, 8", "f32") ", " T("2, 8, 5", "f32") ") -> " T("2, m, 5", "f32") "\n"
      "  mo.output %c : " T("2, m, 5", "f32") "\n}\n");
  ir_diag d = {0};
  cr_assert_eq(ir_graph_fold_transpose_b(g, &d), 1);
  cr_assert_eq(g->nnodes, 1);
  const ir_node *mm = g->nodes[0];
  cr_assert_eq(mm->op, IR_OP_MATMUL);
  cr_assert_eq(mm->id, 0);
  cr_assert_eq(ir_node_attr_int(mm, "kiln.transpose_b", 0), 1);
  cr_assert_eq(mm->in[1], g->inputs[1], "the matmul reads b itself");
  for (int i = 0; i < g->nvalues; i++) cr_assert_eq(g->values[i]->id, i);
  cr_assert_eq(g->nvalues, 3, "a, b, c remain");
  /* still a valid graph: re-verifying infers the same result type */
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%s", d.msg);
  cr_assert_eq(ir_graph_fold_transpose_b(g, &d), 0, "folding twice changes nothing");
  ir_graph_free(g);
}

Test(fold, permute_swapping_the_last_two_axes_folds) {
  ir_graph *g = parse_verified(
      "mo.graph @f(%a: " T("3, 4, 8", "f64") ", %b: " T("3, 5, 8", "f64") ") -> (" T("3, 4, 5", "f64") ") {\n"
      "  %bt = mo.permute(%b) {dims = [0, 2, 1]} : (" T("3, 5, 8", "f64") ") -> " T("3, 8, 5", "f64") "\n"
      "  %c = mo.matmul(%a, %bt) : (" T("3, 4, 8", "f64") ", " T("3, 8, 5", "f64") ") -> " T("3, 4, 5", "f64") "\n"
      "  mo.output %c : " T("3, 4, 5", "f64") "\n}\n");
  ir_diag d = {0};
  cr_assert_eq(ir_graph_fold_transpose_b(g, &d), 1);
  cr_assert_eq(count_op(g, IR_OP_PERMUTE), 0);
  ir_graph_free(g);
}

/* A transpose with another use, one that is a graph output, one of other
 * axes, and one feeding operand 0 all stay. */
Test(fold, other_transposes_stay) {
  ir_graph *g = parse_verified(
      "mo.graph @f(%a: " T("4, 8", "f32") ", %b: " T("5, 8", "f32") ", %x: " T("2, 8, 4", "f32") ", %y: " T("2, 4, 8", "f32") ") -> ("
      T("4, 5", "f32") ", " T("8, 5", "f32") ", " T("2, 4, 4", "f32") ", " T("8, 8", "f32") ") {\n"
      "  %bt = mo.transpose(%b) {axis_1 = 0, axis_2 = 1} : (" T("5, 8", "f32") ") -> " T("8, 5", "f32") "\n"
      "  %c = mo.matmul(%a, %bt) : (" T("4, 8", "f32") ", " T("8, 5", "f32") ") -> " T("4, 5", "f32") "\n"
      "  %xt = mo.transpose(%x) {axis_1 = 0, axis_2 = 2} : (" T("2, 8, 4", "f32") ") -> " T("4, 8, 2", "f32") "\n"
      "  %xr = mo.reshape(%xt) : (" T("4, 8, 2", "f32") ") -> " T("2, 8, 4", "f32") "\n"
      "  %d = mo.matmul(%y, %xr) : (" T("2, 4, 8", "f32") ", " T("2, 8, 4", "f32") ") -> " T("2, 4, 4", "f32") "\n"
      "  %at = mo.transpose(%a) {axis_1 = 0, axis_2 = 1} : (" T("4, 8", "f32") ") -> " T("8, 4", "f32") "\n"
      "  %e = mo.matmul(%at, %a) : (" T("8, 4", "f32") ", " T("4, 8", "f32") ") -> " T("8, 8", "f32") "\n"
      "  mo.output %c, %bt, %d, %e : " T("4, 5", "f32") ", " T("8, 5", "f32") ", " T("2, 4, 4", "f32") ", " T("8, 8", "f32") "\n}\n");
  ir_diag d = {0};
  cr_assert_eq(ir_graph_fold_transpose_b(g, &d), 0);
  cr_assert_eq(count_op(g, IR_OP_TRANSPOSE), 3);
  ir_graph_free(g);
}

/* ---- numbers against the interpreter ---- */

static void check(const char *label, const char *text, const char *bindings, double atol) {
  oracle_case c = {.label = label, .mlir = text, .bindings = bindings, .seed = 7,
                   .rtol = 1e-5, .atol = atol, .gen_default = gen_uniform(-1, 1),
                   .wgen = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
}

/* q k^T with symbolic m, n, k: rows 1 and 3 take the dot-product path,
 * 37 and 70 the packed one (partial panels, k % 8 != 0, k = 300: two K
 * blocks; n = 300: the caller's workspace). */
static const char *const SYM_F32 =
    "mo.graph @qk<b, m, n, k>(%q: " T("b, m, k", "f32") ", %kk: " T("b, n, k", "f32") ") -> (" T("b, m, n", "f32") ") {\n"
    "  %kt = mo.transpose(%kk) {axis_1 = 1, axis_2 = 2} : (" T("b, n, k", "f32") ") -> " T("b, k, n", "f32") "\n"
    "  %s = mo.matmul(%q, %kt) : (" T("b, m, k", "f32") ", " T("b, k, n", "f32") ") -> " T("b, m, n", "f32") "\n"
    "  mo.output %s : " T("b, m, n", "f32") "\n}\n";

static const char *const SIZES =
    "b=1,m=1,n=7,k=5;b=2,m=3,n=33,k=64;b=1,m=2,n=70,k=17;b=3,m=37,n=75,k=70;"
    "b=1,m=70,n=64,k=64;b=1,m=64,n=300,k=300;b=2,m=6,n=32,k=8;b=1,m=0,n=5,k=3;b=1,m=4,n=9,k=0";

Test(numbers, f32_every_path) {
  check("qk f32", SYM_F32, SIZES, 1e-5);
  /* the model runs one kernel: the transpose went into the matmul */
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *kg = kiln_graph_parse(SYM_F32, strlen(SYM_F32), "qk", st);
  cr_assert_not_null(kg, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, kg, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(m->g->nnodes, 1);
  cr_assert_eq(ir_node_attr_int(m->g->nodes[0], "kiln.transpose_b", 0), 1);
  kiln_model_free(m);
  kiln_graph_free(kg);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(numbers, f64_every_path) {
  char *t = strdup(SYM_F32);
  cr_assert_not_null(t);
  for (char *p = strstr(t, "f32"); p; p = strstr(p, "f32")) memcpy(p, "f64", 3);
  check("qk f64", t, SIZES, 1e-12);
  free(t);
}

Test(numbers, two_threads_split_columns_and_rows) {
  setenv("KILN_NUM_THREADS", "2", 1);
  check("qk f32, 2 threads", SYM_F32,
        "b=1,m=2,n=300,k=40;b=1,m=8,n=600,k=33;b=1,m=300,n=64,k=20;b=1,m=1,n=999,k=64", 1e-5);
  unsetenv("KILN_NUM_THREADS");
}

/* a rank-3 a times a rank-2 transposed b (broadcast over the batch) */
Test(numbers, broadcast_batch) {
  check("broadcast",
        "mo.graph @bc<m>(%a: " T("3, m, 24", "f32") ", %b: " T("19, 24", "f32") ") -> (" T("3, m, 19", "f32") ") {\n"
        "  %bt = mo.transpose(%b) {axis_1 = 0, axis_2 = 1} : (" T("19, 24", "f32") ") -> " T("24, 19", "f32") "\n"
        "  %c = mo.matmul(%a, %bt) : (" T("3, m, 24", "f32") ", " T("24, 19", "f32") ") -> " T("3, m, 19", "f32") "\n"
        "  mo.output %c : " T("3, m, 19", "f32") "\n}\n",
        "m=1;m=5;m=40", 1e-5);
}

/* x W^T + bias, relu, with W a weight stored [out, in] as PyTorch exports
 * it: packed once from that layout at bind, the epilogue fused. */
Test(numbers, weight_stored_out_in_with_epilogue) {
  check("linear",
        "mo.graph @lin<batch>(%x: " T("batch, 100", "f32") ") -> (" T("batch, 45", "f32") ") {\n"
        "  %w = mo.constant.external {name = \"fc.weight\"} : " T("45, 100", "f32") "\n"
        "  %bias = mo.constant.external {name = \"fc.bias\"} : " T("45", "f32") "\n"
        "  %wt = mo.transpose(%w) {axis_1 = 0, axis_2 = 1} : (" T("45, 100", "f32") ") -> " T("100, 45", "f32") "\n"
        "  %h = mo.matmul(%x, %wt) : (" T("batch, 100", "f32") ", " T("100, 45", "f32") ") -> " T("batch, 45", "f32") "\n"
        "  %hb = mo.add(%h, %bias) : (" T("batch, 45", "f32") ", " T("45", "f32") ") -> " T("batch, 45", "f32") "\n"
        "  %y = mo.relu(%hb) : " T("batch, 45", "f32") "\n"
        "  mo.output %y : " T("batch, 45", "f32") "\n}\n",
        "batch=1;batch=3;batch=64", 1e-5);
}

/* a mo.constant B, packed at compile from its transposed layout */
Test(numbers, constant_b) {
  check("constant",
        "mo.graph @cst<m>(%a: " T("m, 3", "f64") ") -> (" T("m, 2", "f64") ") {\n"
        "  %w = mo.constant {value = #M.dense_array<1.0, 2.0, 3.0, -4.0, 0.5, 0.25> : tensor<2x3xf64>} : " T("2, 3", "f64") "\n"
        "  %wt = mo.transpose(%w) {axis_1 = 0, axis_2 = 1} : (" T("2, 3", "f64") ") -> " T("3, 2", "f64") "\n"
        "  %c = mo.matmul(%a, %wt) : (" T("m, 3", "f64") ", " T("3, 2", "f64") ") -> " T("m, 2", "f64") "\n"
        "  mo.output %c : " T("m, 2", "f64") "\n}\n",
        "m=1;m=7", 1e-12);
}

/* The attribute written by hand would make the matmul read operand 1 as
 * [..., N, K]: graph text cannot claim it, only the fold sets it. */
Test(fold, attribute_written_in_the_graph_is_refused) {
  const char *text =
      "mo.graph @hand<m>(%a: " T("m, 12", "f32") ", %b: " T("9, 12", "f32") ") -> (" T("m, 9", "f32") ") {\n"
      "  %c = mo.matmul(%a, %b) {kiln.transpose_b = 1} : (" T("m, 12", "f32") ", " T("9, 12", "f32") ") -> " T("m, 9", "f32") "\n"
      "  mo.output %c : " T("m, 9", "f32") "\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *kg = kiln_graph_parse(text, strlen(text), "hand.mlir", st);
  cr_assert_null(kg, "graph text set kiln.transpose_b");
  cr_assert_eq(kiln_status_code(st), KILN_ERR_PARSE);
  cr_assert_str_eq(kiln_status_message(st),
                   "hand.mlir:2:27: attribute 'kiln.transpose_b' is set by the runtime, not by "
                   "graph text");
  kiln_status_free(st);
}

/* A transpose that stays (also an output) next to one that folds. */
Test(numbers, folded_and_kept_side_by_side) {
  check("mixed",
        "mo.graph @mix<m>(%a: " T("m, 16", "f32") ", %b: " T("10, 16", "f32") ", %c: " T("11, 16", "f32") ") -> ("
        T("m, 10", "f32") ", " T("16, 10", "f32") ", " T("m, 11", "f32") ") {\n"
        "  %bt = mo.transpose(%b) {axis_1 = 0, axis_2 = 1} : (" T("10, 16", "f32") ") -> " T("16, 10", "f32") "\n"
        "  %x = mo.matmul(%a, %bt) : (" T("m, 16", "f32") ", " T("16, 10", "f32") ") -> " T("m, 10", "f32") "\n"
        "  %ct = mo.transpose(%c) {axis_1 = 0, axis_2 = 1} : (" T("11, 16", "f32") ") -> " T("16, 11", "f32") "\n"
        "  %y = mo.matmul(%a, %ct) : (" T("m, 16", "f32") ", " T("16, 11", "f32") ") -> " T("m, 11", "f32") "\n"
        "  mo.output %x, %bt, %y : " T("m, 10", "f32") ", " T("16, 10", "f32") ", " T("m, 11", "f32") "\n}\n",
        "m=2;m=9", 1e-5);
}
