/* test_ops_repeat.c - mo.repeat_interleave: the JIT (and the device under
 * test) against the reference interpreter over dtypes, axes (none, first,
 * last, negative), size-0 and size-1 dims, symbolic dims and repeats 0;
 * tensor repeats from a graph input and from a constant (the axis dim read
 * from their data before the run, a length-1 repeats broadcast); seed 002's
 * worked examples as known answers; bad repeats refused at verify (line:col)
 * or, when they are data, by both sides naming the op. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/kiln.h>

#include "support/gtext.h"
#include "support/oracle.h"

static void run_case(gt *t, const char *label, const char *bindings) {
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 17,
                   .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
}

/* ---- integer repeats ---- */

typedef struct rcase {
  const char *x, *attrs, *y;
} rcase;

static const rcase INT_CASES[] = {
    {"3, 4", "{repeats = 2, axis = 0}", "6, 4"},
    {"3, 4", "{repeats = 3, axis = 1}", "3, 12"},
    {"3, 4", "{repeats = 2, axis = -1}", "3, 8"},
    {"2, 3, 5", "{repeats = 2, axis = -2}", "2, 6, 5"},
    {"3, 4", "{repeats = 2}", "24"},
    {"2, 3, 5", "{repeats = 0, axis = 1}", "2, 0, 5"},
    {"2, 3", "{repeats = 0}", "0"},
    {"0, 4", "{repeats = 3, axis = 0}", "0, 4"},
    {"3, 0", "{repeats = 2, axis = 0}", "6, 0"},
    {"3, 0", "{repeats = 2}", "0"},
    {"1", "{repeats = 5, axis = 0}", "5"},
    {"1, 1", "{repeats = 1, axis = -2}", "1, 1"},
    {"", "{repeats = 3}", "3"},
    {"4, 2", "{axis = 1}", "4, 2"},
    {"4, 2", NULL, "8"},
    {"2, 3", "{repeats = 2, axis = 1, out_dim = \"d\"}", "2, 6"},
};

Test(repeat_interleave, int_repeats_over_dtypes_axes_and_edge_shapes) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool", "f16", "si8", "ui16"};
  for (int d = 0; d < 8; d++) {
    gt *t = gt_new("rep", NULL);
    for (size_t i = 0; i < sizeof INT_CASES / sizeof *INT_CASES; i++)
      gt_out(t, gt_op1(t, "mo.repeat_interleave", INT_CASES[i].attrs,
                       gt_in(t, dts[d], INT_CASES[i].x), dts[d], INT_CASES[i].y));
    char label[64];
    snprintf(label, sizeof label, "repeat_interleave %s", dts[d]);
    run_case(t, label, NULL);
    gt_free(t);
  }
}

Test(repeat_interleave, int_repeats_with_symbolic_dims) {
  gt *t = gt_new("rep", "n, m");
  gt_out(t, gt_op1(t, "mo.repeat_interleave", "{repeats = 3, axis = 0}", gt_in(t, "f32", "n, m"),
                   "f32", "3 * n, m"));
  gt_out(t, gt_op1(t, "mo.repeat_interleave", "{repeats = 2, axis = -1}",
                   gt_in(t, "si64", "n, 2, m"), "si64", "n, 2, 2 * m"));
  gt_out(t, gt_op1(t, "mo.repeat_interleave", "{repeats = 0, axis = 1}", gt_in(t, "f64", "m, n"),
                   "f64", "m, 0"));
  gt_out(t, gt_op1(t, "mo.repeat_interleave", "{repeats = 2}", gt_in(t, "si32", "n"), "si32",
                   "2 * n"));
  gt_out(t, gt_op1(t, "mo.repeat_interleave", "{repeats = 2}", gt_in(t, "f16", "n, m"), "f16",
                   "2 * n * m"));
  run_case(t, "repeat_interleave symbolic", "n=0,m=2;n=1,m=1;n=5,m=3;n=4,m=0");
  gt_free(t);
}

/* ---- tensor repeats ---- */

/* x [n, 3] f32 and repeats [n] of dtype rdt from the generator g, along axis
 * 0; the result's axis dim is k (read from the data). */
static void check_tensor_input(const char *rdt, oracle_gen g, const char *bindings) {
  gt *t = gt_new("rep", "n, k");
  int x = gt_in(t, "f32", "n, 3"), r = gt_in_gen(t, rdt, "n", g);
  gt_out(t, gt_op2(t, "mo.repeat_interleave", "{axis = 0}", x, r, "f32", "k, 3"));
  char label[64];
  snprintf(label, sizeof label, "repeat_interleave repeats input %s", rdt);
  run_case(t, label, bindings);
  gt_free(t);
}

Test(repeat_interleave_tensor, repeats_from_a_graph_input) {
  check_tensor_input("si32", gen_integers(0, 3), "n=0;n=1;n=6");
  check_tensor_input("si64", gen_integers(0, 4), "n=1;n=9");
  check_tensor_input("si64", gen_const(0), "n=3"); /* all zero: an empty result */
  check_tensor_input("si32", gen_const(1), "n=4");
}

Test(repeat_interleave_tensor, axes_flattening_and_broadcast_repeats) {
  static const struct {
    const char *x, *attrs, *r, *y;
  } CASES[] = {
      {"2, 5", "{axis = 1}", "5", "2, k"},
      {"2, 5, 3", "{axis = -2}", "5", "2, k, 3"},
      {"2, 3", NULL, "6", "k"},
      {"4, 3", "{axis = 0}", "1", "k, 3"},    /* one count for every element */
      {"2, 3", "{out_dim = \"k\"}", "1", "k"}, /* flattened, broadcast */
      {"1, 1", "{axis = -1}", "1", "1, k"},
      {"0, 2", "{axis = 0}", "0", "k, 2"},
      {"0, 2", "{axis = 0}", "1", "k, 2"},
      {"3, 0", "{axis = 0}", "3", "k, 0"},
  };
  static const char *const dts[] = {"f64", "si32", "bool", "f16"};
  for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++)
    for (int d = 0; d < 4; d++) {
      gt *t = gt_new("rep", "k");
      int x = gt_in(t, dts[d], CASES[i].x);
      int r = gt_in_gen(t, d % 2 ? "si32" : "si64", CASES[i].r, gen_integers(0, 3));
      gt_out(t, gt_op2(t, "mo.repeat_interleave", CASES[i].attrs, x, r, dts[d], CASES[i].y));
      char label[96];
      snprintf(label, sizeof label, "repeat_interleave tensor case %zu %s", i, dts[d]);
      run_case(t, label, NULL);
      gt_free(t);
    }
}

/* a constant repeats operand; a result dim declared static (checked against
 * the sum) and one a later node shares */
Test(repeat_interleave_tensor, repeats_from_a_constant) {
  gt *t = gt_new("rep", "n, k");
  int x = gt_in(t, "si64", "4, n"), r = gt_const(t, "si32", "4", "2, 0, 1, 3");
  int y = gt_op2(t, "mo.repeat_interleave", "{axis = 0}", x, r, "si64", "k, n");
  gt_out(t, gt_op2(t, "mo.add", NULL, y, y, "si64", "k, n"));
  int s = gt_const(t, "si64", "4", "1, 1, 1, 1");
  gt_out(t, gt_op2(t, "mo.repeat_interleave", "{axis = 0}", x, s, "si64", "4, n"));
  run_case(t, "repeat_interleave constant repeats", "n=0;n=1;n=3");
  gt_free(t);
}

Test(repeat_interleave_tensor, a_declared_dim_must_equal_the_sum) {
  gt *t = gt_new("rep", NULL);
  int x = gt_in(t, "f32", "2, 2"), r = gt_const(t, "si64", "2", "2, 3");
  gt_out(t, gt_op2(t, "mo.repeat_interleave", "{axis = 0}", x, r, "f32", "4, 2"));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "repeat_interleave declared 4, sum 5", .mlir = gt_finish(t),
                   .gens = gens, .ngens = ng};
  oracle_expect_both_fail(&c, "mo.repeat_interleave");
  oracle_case c2 = c;
  oracle_expect_both_fail(&c2, "the data gives 5");
  gt_free(t);
}

Test(repeat_interleave_tensor, negative_repeats_and_a_wrong_length_are_data_errors) {
  gt *t = gt_new("rep", "n, k");
  int x = gt_in(t, "f32", "3, 2"), r = gt_in_gen(t, "si32", "n", gen_const(-1));
  gt_out(t, gt_op2(t, "mo.repeat_interleave", "{axis = 0}", x, r, "f32", "k, 2"));
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "repeat_interleave negative", .mlir = gt_finish(t), .bindings = "n=3",
                   .gens = gens, .ngens = ng};
  oracle_expect_both_fail(&c, "mo.repeat_interleave");
  oracle_case c2 = c;
  oracle_expect_both_fail(&c2, "repeats[0] is -1 but must be >= 0");
  oracle_case c3 = c;
  c3.label = "repeat_interleave length 2 for an axis of 3";
  c3.bindings = "n=2";
  oracle_expect_both_fail(&c3, "repeats has 2 elements but the axis has 3");
  gt_free(t);
}

/* One compiled model, the same input shapes, other repeats each call: the
 * result's dim follows the data every time; capture is refused (a replay
 * would reuse the first call's dims). */
static const char *REP_INPUT =
    "mo.graph @rep<n, k>(%x: !mo.tensor<[n, 2], f32>, %r: !mo.tensor<[n], si64>) -> "
    "(!mo.tensor<[k, 2], f32>) {\n"
    "  %y = mo.repeat_interleave(%x, %r) {axis = 0} : !mo.tensor<[k, 2], f32>\n"
    "  mo.output %y : !mo.tensor<[k, 2], f32>\n}\n";

Test(repeat_interleave_tensor, each_execute_reads_its_repeats) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(REP_INPUT, strlen(REP_INPUT), "rep.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float xs[6] = {1, 2, 3, 4, 5, 6};
  int64_t xsh[2] = {3, 2}, three = 3;
  static const int64_t REPS[][3] = {{1, 2, 0}, {0, 0, 4}, {3, 1, 1}, {0, 0, 0}};
  static const int64_t ROWS[][5] = {{0, 1, 1}, {2, 2, 2, 2}, {0, 0, 0, 1, 2}, {0}};
  static const int64_t K[] = {3, 4, 5, 0};
  for (int c = 0; c < 4; c++) {
    int64_t r[3] = {REPS[c][0], REPS[c][1], REPS[c][2]};
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 2, xsh, xs, st),
                          kiln_tensor_borrow(KILN_INT64, 1, &three, r, st)};
    kiln_tensor *out = NULL;
    cr_assert_eq(kiln_model_execute(m, in, 2, &out, 1, st), 0, "case %d: %s", c,
                 kiln_status_message(st));
    cr_expect_eq(kiln_tensor_shape(out)[0], K[c], "case %d: %lld rows", c,
                 (long long)kiln_tensor_shape(out)[0]);
    const float *y = kiln_tensor_data(out);
    for (int64_t i = 0; i < K[c] && kiln_tensor_shape(out)[0] == K[c]; i++)
      for (int j = 0; j < 2; j++)
        cr_expect_eq(y[i * 2 + j], xs[ROWS[c][i] * 2 + j], "case %d [%lld, %d]", c, (long long)i,
                     j);
    kiln_tensor_free(out);
    if (c == 0) {
      kiln_tensor *cap = NULL;
      cr_expect_neq(kiln_model_capture(m, 1, in, 2, &cap, 1, st), 0);
      cr_expect_eq(kiln_status_code(st), KILN_ERR_UNSUPPORTED);
      kiln_tensor_free(cap);
    }
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- seed 002's examples ---- */

#define X22                                                                                   \
  "  %x = mo.constant {value = #M.dense_array<1.0, 2.0, 3.0, 4.0> : tensor<2x2xf32>} : "      \
  "!mo.tensor<[2, 2], f32>\n"
#define KNOWN(out, body)                                                                      \
  "mo.graph @k() -> (!mo.tensor<[" out "], f32>) {\n" X22 body                                \
  "  mo.output %y : !mo.tensor<[" out "], f32>\n}\n"

Test(known_repeat, seed_002_examples) {
  oracle_expect_known("repeats=2 axis=0",
        KNOWN("4, 2", "  %y = mo.repeat_interleave(%x) {repeats = 2, axis = 0} : "
                      "!mo.tensor<[4, 2], f32>\n"),
        (oracle_expect){KILN_FLOAT32, 2, {4, 2}, ORACLE_F32(1, 2, 1, 2, 3, 4, 3, 4)});
  oracle_expect_known("repeats=2 axis=1",
        KNOWN("2, 4", "  %y = mo.repeat_interleave(%x) {repeats = 2, axis = 1} : "
                      "!mo.tensor<[2, 4], f32>\n"),
        (oracle_expect){KILN_FLOAT32, 2, {2, 4}, ORACLE_F32(1, 1, 2, 2, 3, 3, 4, 4)});
  oracle_expect_known("repeats=2 axis=None",
        KNOWN("8", "  %y = mo.repeat_interleave(%x) {repeats = 2} : !mo.tensor<[8], f32>\n"),
        (oracle_expect){KILN_FLOAT32, 1, {8}, ORACLE_F32(1, 1, 2, 2, 3, 3, 4, 4)});
  oracle_expect_known("repeats=[2, 3] axis=0",
        KNOWN("5, 2", "  %r = mo.constant {value = #M.dense_array<2, 3> : tensor<2xsi64>} : "
                      "!mo.tensor<[2], si64>\n"
                      "  %y = mo.repeat_interleave(%x, %r) {axis = 0} : "
                      "!mo.tensor<[5, 2], f32>\n"),
        (oracle_expect){KILN_FLOAT32, 2, {5, 2}, ORACLE_F32(1, 2, 1, 2, 3, 4, 3, 4, 3, 4)});
}

/* ---- refused at verify ---- */

#define G1(x, attrs, y)                                                                        \
  "mo.graph @g(%x: !mo.tensor<[" x "], f32>) -> (!mo.tensor<[" y "], f32>) {\n"                \
  "  %y = mo.repeat_interleave(%x) " attrs " : !mo.tensor<[" y "], f32>\n"                     \
  "  mo.output %y : !mo.tensor<[" y "], f32>\n}\n"
#define G2(x, r, rdt, attrs, y)                                                                \
  "mo.graph @g(%x: !mo.tensor<[" x "], f32>, %r: !mo.tensor<[" r "], " rdt ">) -> "           \
  "(!mo.tensor<[" y "], f32>) {\n"                                                             \
  "  %y = mo.repeat_interleave(%x, %r) " attrs " : !mo.tensor<[" y "], f32>\n"                 \
  "  mo.output %y : !mo.tensor<[" y "], f32>\n}\n"

Test(repeat_verify, bad_repeats_and_axes_are_refused_at_line_col) {
  EXPECT_REJECTED(G1("3, 4", "{repeats = -1, axis = 0}", "3, 4"),
                  "2:3: mo.repeat_interleave: repeats is -1 but must be >= 0");
  EXPECT_REJECTED(G1("3, 4", "{repeats = 2, axis = 2}", "6, 4"),
                  "2:3: mo.repeat_interleave: axis 2 is out of range for rank 2");
  EXPECT_REJECTED(G1("", "{repeats = 2, axis = 0}", "2"),
                  "2:3: mo.repeat_interleave: axis 0 is out of range for rank 0");
  EXPECT_REJECTED(G1("3, 4", "{repeats = 2, axis = 0}", "3, 4"), "2:3: result 0 of "
                  "mo.repeat_interleave is declared as !mo.tensor<[3, 4], f32> but is "
                  "!mo.tensor<[6, 4], f32>");
  EXPECT_REJECTED(G1("3, 4", "{repeats = 2, out_dim = 3}", "24"),
                  "attribute 'out_dim' of mo.repeat_interleave must be a string");
  EXPECT_REJECTED(G2("3, 4", "3", "si64", "{repeats = 2, axis = 0}", "k, 4"),
                  "2:3: mo.repeat_interleave: repeats is given both as an attribute and as an "
                  "operand");
  EXPECT_REJECTED(G2("3, 4", "2", "si64", "{axis = 0}", "k, 4"),
                  "2:3: mo.repeat_interleave: repeats has 2 elements but the axis has 3");
  EXPECT_REJECTED(G2("3, 4", "3, 1", "si64", "{axis = 0}", "k, 4"),
                  "2:3: mo.repeat_interleave: the repeats operand has rank 2 but must be 1-D");
  EXPECT_REJECTED(G2("3, 4", "3", "f32", "{axis = 0}", "k, 4"),
                  "2:3: operand 1 of mo.repeat_interleave has dtype f32 but indices must be");
  EXPECT_REJECTED(G2("3, 4", "3", "si64", "{axis = 0}", "k"),
                  "2:3: mo.repeat_interleave: the result must be declared with rank 2");
  EXPECT_REJECTED(G2("3, 4", "3", "si64", "{axis = 0}", "k, 5"),
                  "mo.repeat_interleave: the result's axis 1 (5) must equal the input's (4)");
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[k], f32>) {\n"
                  "  %r = mo.constant.external {name = \"r\"} : !mo.tensor<[3], si64>\n"
                  "  %t = mo.abs(%r) : !mo.tensor<[3], si64>\n"
                  "  %y = mo.repeat_interleave(%x, %t) {axis = 0} : !mo.tensor<[k], f32>\n"
                  "  mo.output %y : !mo.tensor<[k], f32>\n}\n",
                  "4:3: mo.repeat_interleave: the repeats operand (%t) sets dims, so kiln "
                  "computes it before the graph runs, but it depends on mo.constant.external "
                  "(%r), a weight");
}
