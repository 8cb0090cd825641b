/* test_ops_half.c - float ops on f16 and bf16, JIT vs the reference
 * interpreter, on the CPU and on simt-emu.
 *
 * A float op on half floats means its f32 meaning on the operands widened
 * exactly, each result rounded once to nearest even (ir.h:
 * ir_node_computes_narrow). The interpreter runs it so; the compilers rewrite
 * the graph so (widen_narrow.c) and fuse the casts into the kernels around.
 * Both sides round the same f32-or-better value once, so they agree to one
 * unit in the last place of the half dtype where the f32 computation itself
 * agrees (the JIT sums in f32, the interpreter in double): rtol is two ulps
 * (f16 2^-9, bf16 2^-6), atol covers results near zero after cancellation.
 * float8 kinds are only cast (dtype.h says how): both ways vs the
 * interpreter, and hand-worked codes.
 * Also: the rewritten graph keeps its outputs' names and types, an op whose
 * result dtype comes from an attribute is refused with a message, and the
 * ops the table still keeps off half floats say which dtypes they take. */
#include <criterion/criterion.h>
#include <math.h>
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
  cr_assert_eq(ir_graph_widen_narrow(g, &d), 2, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%d:%d %s", d.line, d.col, d.msg);
  cr_assert_str_eq(g->outputs[0]->name, "z");
  cr_assert_eq(g->outputs[0]->type.dtype, IR_DT_F16);
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CAST) continue;
    for (int k = 0; k < n->nin; k++) cr_assert_eq(n->in[k]->type.dtype, IR_DT_F32);
    cr_assert_eq(n->out[0]->type.dtype, IR_DT_F32);
  }
  cr_assert_eq(ir_graph_widen_narrow(g, &d), 0, "a second run finds nothing");
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

/* ---- float8: cast only, both ways ---- */

static const char *const F8[] = {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz"};

/* Every code of each float8 kind out to f32, f16 and back in, and f32 / f64
 * / si32 values over and past each range (saturation), with NaN, +-inf and
 * +-0 among them (gen_naninf), into each kind and back out: JIT and
 * interpreter agree bit for bit (a cast rounds exactly once). */
Test(float8, casts_both_ways_match_the_interpreter) {
  static const char *const OUT[] = {"f32", "f16", "bf16", "f64", "si32", "bool", "f8e4m3fn",
                                    "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz"};
  for (int k = 0; k < 4; k++) { /* random bytes: every code, NaNs and zeros included */
    gt *t = gt_new("f8", NULL);
    int codes = gt_in(t, F8[k], "2048");
    for (int o = 0; o < 10; o++) {
      char attrs[64];
      snprintf(attrs, sizeof attrs, "{dtype = %s}", OUT[o]);
      gt_out(t, gt_op1(t, "mo.cast", attrs, codes, OUT[o], "2048"));
    }
    char label[64];
    snprintf(label, sizeof label, "%s out", F8[k]);
    oracle_case oc = {.label = label, .mlir = gt_finish(t), .seed = 17 + (unsigned)k};
    ORACLE_ASSERT(&oc);
    gt_free(t);
  }
  for (int k = 0; k < 4; k++)
    for (int s = 0; s < 3; s++) {
      static const char *const SRC[] = {"f32", "f64", "f16"};
      char attrs[64];
      snprintf(attrs, sizeof attrs, "{dtype = %s}", F8[k]);
      gt *t = gt_new("f8", NULL);
      int x = gt_in_gen(t, SRC[s], "4, 97", gen_naninf(-1000, 1000));
      int z = gt_in_gen(t, "si32", "50", gen_integers(-70000, 70000));
      int y = gt_in_gen(t, SRC[s], "300", gen_uniform(-1, 1));
      int c = gt_op1(t, "mo.cast", attrs, x, F8[k], "4, 97");
      int d = gt_op1(t, "mo.cast", attrs, y, F8[k], "300");
      snprintf(attrs, sizeof attrs, "{dtype = %s}", SRC[s]);
      gt_out(t, gt_op1(t, "mo.cast", attrs, c, SRC[s], "4, 97"));
      gt_out(t, gt_op1(t, "mo.cast", attrs, d, SRC[s], "300"));
      gt_out(t, gt_op1(t, "mo.cast", "{dtype = si32}", c, "si32", "4, 97"));
      gt_out(t, gt_op1(t, "mo.cast", "{dtype = bf16}", d, "bf16", "300"));
      snprintf(attrs, sizeof attrs, "{dtype = %s}", F8[k]);
      gt_out(t, gt_op1(t, "mo.cast", attrs, z, F8[k], "50"));
      char label[64];
      snprintf(label, sizeof label, "%s <-> %s", F8[k], SRC[s]);
      oracle_case oc = {.label = label, .mlir = gt_finish(t), .seed = 3 + (unsigned)k};
      ORACLE_ASSERT(&oc);
      gt_free(t);
    }
}

/* Hand-worked codes: saturation, ties to even in the subnormals, NaN and
 * signed zeros per kind. Inputs: 1, 448, 500, 1e9, -inf, +inf, 2^-9, 2^-10,
 * 3 * 2^-10, 2^-16, NaN, -0, 57344, 60000, 240. */
Test(float8, known_codes) {
  static const float in[15] = {1.0f, 448.0f, 500.0f, 1e9f, -INFINITY, INFINITY, 0x1p-9f, 0x1p-10f,
                               0x3p-10f, 0x1p-16f, NAN, -0.0f, 57344.0f, 60000.0f, 240.0f};
  static const uint8_t want[4][15] = {
      /* e4m3fn: max 448 = 0x7E, NaN 0x7F, 2^-9 the smallest subnormal */
      {0x38, 0x7E, 0x7E, 0x7E, 0xFE, 0x7E, 0x01, 0x00, 0x02, 0x00, 0x7F, 0x80, 0x7E, 0x7E, 0x77},
      /* e4m3fnuz: max 240 = 0x7F, NaN 0x80, no -0, 2^-10 the smallest subnormal */
      {0x40, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x02, 0x01, 0x03, 0x00, 0x80, 0x00, 0x7F, 0x7F, 0x7F},
      /* e5m2: max 57344 = 0x7B, inf 0x7C, 2^-16 the smallest subnormal */
      {0x3C, 0x5F, 0x60, 0x7B, 0xFC, 0x7C, 0x18, 0x14, 0x1A, 0x01, 0x7F, 0x80, 0x7B, 0x7B, 0x5C},
      /* e5m2fnuz: max 57344 = 0x7F, NaN 0x80, no -0 or inf */
      {0x40, 0x63, 0x64, 0x7F, 0xFF, 0x7F, 0x1C, 0x18, 0x1E, 0x02, 0x80, 0x00, 0x7F, 0x7F, 0x60},
  };
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx);
  for (int k = 0; k < 4; k++) {
    char text[512];
    snprintf(text, sizeof text,
             "mo.graph @g(%%x: !mo.tensor<[15], f32>) -> (!mo.tensor<[15], %s>) {\n"
             "  %%y = mo.cast(%%x) {dtype = %s} : !mo.tensor<[15], %s>\n"
             "  mo.output %%y : !mo.tensor<[15], %s>\n}\n",
             F8[k], F8[k], F8[k], F8[k]);
    kiln_graph *g = kiln_graph_parse(text, strlen(text), "f8.mlir", st);
    cr_assert_not_null(g, "%s", kiln_status_message(st));
    kiln_model *m = kiln_model_compile(ctx, g, st);
    cr_assert_not_null(m, "%s", kiln_status_message(st));
    int64_t shape[1] = {15};
    kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, (void *)in, st), *y = NULL;
    cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
    const uint8_t *got = kiln_tensor_data(y);
    for (int i = 0; i < 15; i++)
      cr_expect_eq(got[i], want[k][i], "%s: %g -> 0x%02x, want 0x%02x", F8[k], (double)in[i],
                   got[i], want[k][i]);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);
    kiln_graph_free(g);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
}
