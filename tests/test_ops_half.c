/* test_ops_half.c - float ops on f16 and bf16, JIT vs the reference
 * interpreter, on the CPU and on simt-emu.
 *
 * A float op on half floats means its f32 meaning on the operands widened
 * exactly, each result rounded once to nearest even (ir.h:
 * ir_node_computes_half). The interpreter runs it so; the compilers rewrite
 * the graph so (widen_half.c) and fuse the casts into the kernels around.
 * Both sides round the same f32-or-better value once, so they agree to one
 * unit in the last place of the half dtype where the f32 computation itself
 * agrees (the JIT sums in f32, the interpreter in double): rtol is two ulps
 * (f16 2^-9, bf16 2^-6), atol covers results near zero after cancellation.
 * Also: the rewritten graph keeps its outputs' names and types, an op whose
 * result dtype comes from an attribute is refused with a message, and the
 * ops the table still keeps off half floats say which dtypes they take. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/parse.h"
#include "support/gtext.h"
#include "support/oracle.h"

static const char *const HALF[] = {"f16", "bf16"};
static const double RTOL[] = {2e-3, 1.6e-2};
static const double ATOL[] = {2e-3, 1.6e-2};

static const char *const SHAPES[] = {"", "7", "3, 1, 4", "0, 5", "2, 67", "n, 3"};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define BINDINGS "n=0;n=1;n=5"

static void run_case(const char *label, const char *mlir, const char *bindings, int h,
                     oracle_gen g, double scale) {
  oracle_case c = {.label = label, .mlir = mlir, .bindings = bindings, .seed = 5,
                   .rtol = RTOL[h] * scale, .atol = ATOL[h] * scale, .gen_default = g};
  ORACLE_ASSERT(&c);
}

static void unary(const char *op, oracle_gen g, double scale) {
  for (int h = 0; h < 2; h++) {
    gt *t = gt_new("unary", "n");
    for (int i = 0; i < NSHAPES; i++)
      gt_out(t, gt_op1(t, op, NULL, gt_in(t, HALF[h], SHAPES[i]), HALF[h], SHAPES[i]));
    char label[96];
    snprintf(label, sizeof label, "%s %s", op, HALF[h]);
    run_case(label, gt_finish(t), BINDINGS, h, g, scale);
    gt_free(t);
  }
}

static void binary(const char *op, const char *out_dt, oracle_gen g) {
  for (int h = 0; h < 2; h++) {
    gt *t = gt_new("binary", "n");
    for (int i = 0; i < NSHAPES; i++) {
      int a = gt_in(t, HALF[h], SHAPES[i]), b = gt_in(t, HALF[h], SHAPES[i]);
      gt_out(t, gt_op2(t, op, NULL, a, b, out_dt ? out_dt : HALF[h], SHAPES[i]));
    }
    int a = gt_in(t, HALF[h], "4, 1"), b = gt_in(t, HALF[h], "1, 6"); /* broadcast */
    gt_out(t, gt_op2(t, op, NULL, a, b, out_dt ? out_dt : HALF[h], "4, 6"));
    char label[96];
    snprintf(label, sizeof label, "%s %s", op, HALF[h]);
    run_case(label, gt_finish(t), BINDINGS, h, g, 1);
    gt_free(t);
  }
}

Test(half, unary_float_ops) {
  static const char *const ops[] = {"mo.abs",  "mo.negate", "mo.relu", "mo.exp",  "mo.tanh",
                                    "mo.sigmoid", "mo.gelu", "mo.silu", "mo.erf", "mo.sin",
                                    "mo.cos",  "mo.floor",  "mo.round", "mo.ceil"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) unary(ops[i], gen_uniform(-3, 3), 1);
  unary("mo.sqrt", gen_uniform(0, 9), 1);
  unary("mo.rsqrt", gen_uniform(0.25, 9), 1);
  unary("mo.log", gen_uniform(0.1, 9), 1);
}

Test(half, binary_and_compare_ops) {
  static const char *const ops[] = {"mo.add", "mo.sub", "mo.mul", "mo.max", "mo.min"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) binary(ops[i], NULL, gen_uniform(-4, 4));
  binary("mo.div", NULL, gen_nonzero(-4, 4, 0.25));
  binary("mo.pow", NULL, gen_uniform(0.5, 2));
  binary("mo.greater", "bool", gen_quant(-2, 2));
  binary("mo.equal", "bool", gen_quant(-2, 2));
}

Test(half, reductions) {
  static const char *const ops[] = {"mo.sum", "mo.mean", "mo.max", "mo.min", "mo.prod"};
  for (int h = 0; h < 2; h++)
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
      gt *t = gt_new("reduce", "n");
      int x = gt_in(t, HALF[h], "n, 67"), y = gt_in(t, HALF[h], "3, 5, 2");
      gt_out(t, gt_op1(t, ops[o], "{axis = 1}", x, HALF[h], "n, 1"));
      gt_out(t, gt_op1(t, ops[o], "{axis = 0}", y, HALF[h], "1, 5, 2"));
      char label[96];
      snprintf(label, sizeof label, "%s %s", ops[o], HALF[h]);
      bool prod = !strcmp(ops[o], "mo.prod");
      run_case(label, gt_finish(t), "n=1;n=4", h,
               prod ? gen_uniform(0.9, 1.1) : gen_uniform(-2, 2), prod ? 1 : 8);
      gt_free(t);
    }
  for (int h = 0; h < 2; h++) { /* argmax of half values: si64 indices */
    gt *t = gt_new("argmax", NULL);
    int x = gt_in(t, HALF[h], "4, 33");
    gt_out(t, gt_op1(t, "mo.argmax", "{axis = 1}", x, "si64", "4, 1"));
    run_case("mo.argmax half", gt_finish(t), NULL, h, gen_uniform(-8, 8), 1);
    gt_free(t);
  }
}

Test(half, softmax_and_layer_norm) {
  for (int h = 0; h < 2; h++) {
    gt *t = gt_new("norm", "n");
    int x = gt_in(t, HALF[h], "n, 40");
    gt_out(t, gt_op1(t, "mo.softmax", NULL, x, HALF[h], "n, 40"));
    gt_out(t, gt_op1(t, "mo.logsoftmax", NULL, x, HALF[h], "n, 40"));
    int ins[3] = {gt_in(t, HALF[h], "n, 40"), gt_in(t, HALF[h], "40"), gt_in(t, HALF[h], "40")};
    gt_out(t, gt_op(t, "mo.layer_norm", NULL, ins, 3, HALF[h], "n, 40"));
    run_case("softmax / layer_norm half", gt_finish(t), "n=1;n=3", h, gen_uniform(-3, 3), 2);
    gt_free(t);
  }
}

/* matmul accumulates in f32; with a bias add and gelu after it the chain
 * fuses into the GEMM's epilogue between the casts. K = 96 products of
 * values in [-1, 1]: results up to ~10, so atol scales with them. */
Test(half, matmul_with_epilogue) {
  for (int h = 0; h < 2; h++) {
    gt *t = gt_new("mm", "n");
    int a = gt_in(t, HALF[h], "n, 96"), b = gt_in(t, HALF[h], "96, 24");
    int bias = gt_in(t, HALF[h], "24");
    int m = gt_op2(t, "mo.matmul", NULL, a, b, HALF[h], "n, 24");
    int s = gt_op2(t, "mo.add", NULL, m, bias, HALF[h], "n, 24");
    gt_out(t, gt_op1(t, "mo.gelu", NULL, s, HALF[h], "n, 24"));
    gt_out(t, m);
    int a3 = gt_in(t, HALF[h], "2, 5, 17"), b3 = gt_in(t, HALF[h], "2, 17, 3");
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a3, b3, HALF[h], "2, 5, 3"));
    run_case("matmul half", gt_finish(t), "n=1;n=7", h, gen_uniform(-1, 1), 8);
    gt_free(t);
  }
}

/* Device models get the rewritten graph too: the suite's oracle compiles on
 * simt-emu (under_test.h) for this test. */
Test(half, on_simt_emu) {
  setenv("KILN_TEST_DEVICE", "simt-emu", 1);
  for (int h = 0; h < 2; h++) {
    gt *t = gt_new("emu", NULL);
    int x = gt_in(t, HALF[h], "5, 33"), y = gt_in(t, HALF[h], "5, 33");
    int s = gt_op2(t, "mo.add", NULL, x, y, HALF[h], "5, 33");
    int e = gt_op1(t, "mo.tanh", NULL, s, HALF[h], "5, 33");
    gt_out(t, e);
    gt_out(t, gt_op1(t, "mo.sum", "{axis = 1}", e, HALF[h], "5, 1"));
    gt_out(t, gt_op1(t, "mo.softmax", NULL, x, HALF[h], "5, 33"));
    int b = gt_in(t, HALF[h], "33, 4");
    gt_out(t, gt_op2(t, "mo.matmul", NULL, x, b, HALF[h], "5, 4"));
    run_case(HALF[h], gt_finish(t), NULL, h, gen_uniform(-2, 2), 4);
    gt_free(t);
  }
}

/* The rewrite keeps the graph's interface: outputs keep their values'
 * names and half dtypes; every kernel that computes sees f32. */
Test(half, rewrite_keeps_outputs) {
  const char *text = "mo.graph @g(%x: !mo.tensor<[4], f16>) -> (!mo.tensor<[4], f16>) {\n"
                     "  %y = mo.exp(%x) : !mo.tensor<[4], f16>\n"
                     "  %z = mo.add(%y, %y) : !mo.tensor<[4], f16>\n"
                     "  mo.output %z : !mo.tensor<[4], f16>\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d %s", d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_widen_half(g, &d), 2, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%d:%d %s", d.line, d.col, d.msg);
  cr_assert_str_eq(g->outputs[0]->name, "z");
  cr_assert_eq(g->outputs[0]->type.dtype, IR_DT_F16);
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CAST) continue;
    for (int k = 0; k < n->nin; k++) cr_assert_eq(n->in[k]->type.dtype, IR_DT_F32);
    cr_assert_eq(n->out[0]->type.dtype, IR_DT_F32);
  }
  cr_assert_eq(ir_graph_widen_half(g, &d), 0, "a second run finds nothing");
  ir_graph_free(g);
}

/* Ops the table keeps to f32 / f64 on some operand still say what they take
 * (random values come from a dtype attribute: f32 / f64 only). */
Test(half, refused_ops_name_their_dtypes) {
  const char *text = "mo.graph @g(%x: !mo.tensor<[4], si16>) -> (!mo.tensor<[4], si16>) {\n"
                     "  %y = mo.exp(%x) : !mo.tensor<[4], si16>\n"
                     "  mo.output %y : !mo.tensor<[4], si16>\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_null(g);
  cr_assert(strstr(d.msg, "f16, bf16, f32 or f64"), "%s", d.msg);
}
