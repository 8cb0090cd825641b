/* test_ops_masked.c - mo.masked_scatter and mo.shape_to_tensor: the JIT
 * against the reference interpreter over dtypes, broadcast masks, size-0 and
 * size-1 dims and symbolic dims; a mask selecting more elements than the
 * updates have as a data error from both, naming the op; hand-worked
 * answers (seed 002's shape_to_tensor example); bad operands and attributes
 * refused at line:col. Masks are random (about half true) and the updates
 * have at least as many elements as the input unless a case says otherwise,
 * so every true element has its update. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

static void run_case(gt *t, const char *label, const char *bindings) {
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 61,
                   .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
}

/* ---- masked_scatter ---- */

typedef struct mcase {
  const char *x, *mask, *upd;
} mcase;

static const mcase MS[] = {
    {"3, 4", "3, 4", "12"},          {"3, 4", "4", "3, 4"},    {"3, 4", "3, 1", "20"},
    {"2, 3, 5", "3, 5", "2, 3, 5"},  {"2, 3, 5", "1", "30"},   {"", "", "1"},
    {"1", "1", "1"},                 {"1, 1", "1", "1, 1"},    {"0, 4", "4", "0"},
    {"3, 0", "3, 0", "5"},           {"4, 5", "4, 5", "7, 3"}, {"6", "6", "100"},
};
static const mcase MS_SYM[] = {
    {"n, m", "n, m", "n, m"}, {"n, 4", "4", "n, 4"}, {"n, m", "n, 1", "m, n"},
    {"3, m", "m", "3, m"},
};

static void check_masked(const char *dt, const mcase *cs, int n, const char *bindings) {
  gt *t = gt_new("masked", bindings ? "n, m" : NULL);
  for (int i = 0; i < n; i++) {
    int x = gt_in(t, dt, cs[i].x), m = gt_in(t, "bool", cs[i].mask), u = gt_in(t, dt, cs[i].upd);
    gt_out(t, gt_op(t, "mo.masked_scatter", NULL, (int[]){x, m, u}, 3, dt, cs[i].x));
  }
  char label[96];
  snprintf(label, sizeof label, "mo.masked_scatter %s", dt);
  run_case(t, label, bindings);
  gt_free(t);
}

Test(masked_scatter, dtypes_broadcast_masks_and_edge_shapes) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool", "f16", "si8", "ui16"};
  for (int d = 0; d < 8; d++) check_masked(dts[d], MS, (int)(sizeof MS / sizeof MS[0]), NULL);
}

Test(masked_scatter, symbolic_dims) {
  check_masked("f32", MS_SYM, (int)(sizeof MS_SYM / sizeof MS_SYM[0]),
               "n=1,m=1;n=3,m=4;n=0,m=2;n=5,m=0");
  check_masked("si64", MS_SYM, 2, "n=7,m=3");
}

/* every mask element true: the updates are read in order to their end */
Test(masked_scatter, all_true_reads_every_update) {
  gt *t = gt_new("all", "n");
  int x = gt_in(t, "f32", "n, 3"), m = gt_in_gen(t, "bool", "n, 3", gen_const(1));
  int u = gt_in(t, "f32", "n, 3");
  gt_out(t, gt_op(t, "mo.masked_scatter", "{out_dim = \"k\"}", (int[]){x, m, u}, 3, "f32",
                  "n, 3"));
  run_case(t, "masked_scatter all true", "n=0;n=1;n=9");
  gt_free(t);
}

Test(masked_scatter, too_few_updates_is_an_error_naming_the_op) {
  static const char *const cases[][3] = {
      {"2, 3", "2, 3", "5"}, {"4", "1", "0"}, {"n, 2", "2", "n"}};
  for (int i = 0; i < 3; i++) {
    gt *t = gt_new("few", i == 2 ? "n" : NULL);
    int x = gt_in(t, "si32", cases[i][0]);
    int m = gt_in_gen(t, "bool", cases[i][1], gen_const(1));
    int u = gt_in(t, "si32", cases[i][2]);
    gt_out(t, gt_op(t, "mo.masked_scatter", NULL, (int[]){x, m, u}, 3, "si32", cases[i][0]));
    int ng;
    const oracle_gen *gens = gt_gens(t, &ng);
    oracle_case c = {.label = "masked_scatter too few updates", .mlir = gt_finish(t),
                     .bindings = i == 2 ? "n=1;n=3" : NULL, .seed = 5, .gens = gens,
                     .ngens = ng};
    oracle_expect_both_fail(&c, "mo.masked_scatter");
    oracle_case c2 = c;
    oracle_expect_both_fail(&c2, "the mask selects more elements than the updates have");
    gt_free(t);
  }
}

/* a row mask [true, false, true] over [2, 3]: the true elements, in order,
 * take the updates 10, 20, 30, 40; the fifth update is unused */
Test(known_masked, row_mask_takes_updates_in_order) {
  oracle_expect_known("masked_scatter row mask",
        "mo.graph @k() -> (!mo.tensor<[2, 3], f32>) {\n"
        ORACLE_CONST("x", "f32", "2, 3", "2x3x", "1.0, 2.0, 3.0, 4.0, 5.0, 6.0")
        ORACLE_CONST("m", "bool", "3", "3x", "true, false, true")
        ORACLE_CONST("u", "f32", "5", "5x", "10.0, 20.0, 30.0, 40.0, 50.0")
        "  %y = mo.masked_scatter(%x, %m, %u) : (!mo.tensor<[2, 3], f32>, !mo.tensor<[3], bool>, "
        "!mo.tensor<[5], f32>) -> !mo.tensor<[2, 3], f32>\n"
        "  mo.output %y : !mo.tensor<[2, 3], f32>\n}\n",
        (oracle_expect){KILN_FLOAT32, 2, {2, 3}, ORACLE_F32(10, 2, 20, 30, 5, 40)});
}

/* ---- shape_to_tensor ---- */

Test(shape_to_tensor, dims_at_run_time) {
  static const char *const shapes[] = {"n, m", "", "0", "1, 1", "n, 3, m", "2 * n + 1, m", "7"};
  static const char *const dts[] = {"f32", "si64", "bool", "f16", "si32", "f64", "ui8"};
  gt *t = gt_new("shape", "n, m");
  for (int i = 0; i < 7; i++) {
    char out[16];
    int rank = 0;
    for (const char *s = shapes[i]; *s; s++) rank += *s == ',';
    rank += shapes[i][0] != 0;
    snprintf(out, sizeof out, "%d", rank);
    gt_out(t, gt_op1(t, "mo.shape_to_tensor", NULL, gt_in(t, dts[i], shapes[i]), "si64", out));
  }
  run_case(t, "mo.shape_to_tensor", "n=0,m=0;n=1,m=5;n=4,m=2");
  gt_free(t);
}

/* seed 002's example: x = constant zeros((1,)) int64; shape_to_tensor(x.shape)
 * is [1] (stacked under x it gives [[0], [1]]) */
Test(known_masked, shape_to_tensor_seed_example) {
  oracle_expect_known("shape_to_tensor seed example",
        "mo.graph @k() -> (!mo.tensor<[1], si64>) {\n" ORACLE_CONST("x", "si64", "1", "1x", "0")
        "  %s = mo.shape_to_tensor(%x) : (!mo.tensor<[1], si64>) -> !mo.tensor<[1], si64>\n"
        "  mo.output %s : !mo.tensor<[1], si64>\n}\n",
        (oracle_expect){KILN_INT64, 1, {1}, ORACLE_I64(1)});
  oracle_expect_known("shape_to_tensor of [2, 0, 3]",
        "mo.graph @k() -> (!mo.tensor<[3], si64>) {\n"
        "  %x = mo.constant {value = #M.dense_array<> : tensor<2x0x3xf32>} : "
        "!mo.tensor<[2, 0, 3], f32>\n"
        "  %s = mo.shape_to_tensor(%x) : (!mo.tensor<[2, 0, 3], f32>) -> !mo.tensor<[3], si64>\n"
        "  mo.output %s : !mo.tensor<[3], si64>\n}\n",
        (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(2, 0, 3)});
}

/* ---- refused at verify ---- */

#define MSG(x, xdt, m, mdt, u, udt, attrs)                                                      \
  "mo.graph @g(%x: !mo.tensor<[" x "], " xdt ">, %m: !mo.tensor<[" m "], " mdt ">, %u: "       \
  "!mo.tensor<[" u "], " udt ">) -> (!mo.tensor<[" x "], " xdt ">) {\n"                         \
  "  %y = mo.masked_scatter(%x, %m, %u) " attrs " : (!mo.tensor<[" x "], " xdt ">, "            \
  "!mo.tensor<[" m "], " mdt ">, !mo.tensor<[" u "], " udt ">) -> !mo.tensor<[" x "], " xdt    \
  ">\n  mo.output %y : !mo.tensor<[" x "], " xdt ">\n}\n"

Test(masked_verify, bad_operands_and_attributes_are_refused) {
  EXPECT_REJECTED(MSG("3, 4", "f32", "3, 4", "si32", "12", "f32", ""),
                  "2:3: operand 1 of mo.masked_scatter has dtype si32 but mo.masked_scatter takes "
                  "bool");
  EXPECT_REJECTED(MSG("3, 4", "f32", "3, 4", "bool", "12", "f64", ""),
                  "2:3: mo.masked_scatter: the updates have dtype f64 but the input has f32");
  EXPECT_REJECTED(MSG("4", "f32", "2, 4", "bool", "8", "f32", ""),
                  "2:3: mo.masked_scatter: the mask has rank 2 but the input has rank 1");
  EXPECT_REJECTED(MSG("3, 4", "f32", "3, 2", "bool", "12", "f32", ""),
                  "2:3: mo.masked_scatter: mask axis 1 has 2 but the input's axis 1 has 4");
  EXPECT_REJECTED(MSG("3, 4", "f32", "3, 4", "bool", "12", "f32", "{out_dim = 3}"),
                  "attribute 'out_dim' of mo.masked_scatter must be a string");
  EXPECT_REJECTED(MSG("3, 4", "f32", "3, 4", "bool", "12", "f32", "{axis = 0}"),
                  "mo.masked_scatter has no attribute 'axis'");
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[3, 4], f32>) -> (!mo.tensor<[2], si32>) {\n"
                  "  %s = mo.shape_to_tensor(%x) : (!mo.tensor<[3, 4], f32>) -> "
                  "!mo.tensor<[2], si32>\n  mo.output %s : !mo.tensor<[2], si32>\n}\n",
                  "2:3: result 0 of mo.shape_to_tensor is declared as !mo.tensor<[2], si32> but "
                  "is !mo.tensor<[2], si64>");
}

/* a symbolic mask dim against the input's static one is a run-time check */
Test(masked_verify, symbolic_mask_dim_is_checked_at_run_time) {
  gt *t = gt_new("chk", "n");
  int x = gt_in(t, "f32", "3, 4"), m = gt_in(t, "bool", "n"), u = gt_in(t, "f32", "12");
  gt_out(t, gt_op(t, "mo.masked_scatter", NULL, (int[]){x, m, u}, 3, "f32", "3, 4"));
  run_case(t, "masked_scatter mask [n] = [4]", "n=4");
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = "masked_scatter mask [n] != [4]", .mlir = gt_finish(t),
                   .bindings = "n=3", .seed = 3, .gens = gens, .ngens = ng};
  oracle_expect_both_fail(&c, "mo.masked_scatter");
  oracle_case c2 = c;
  oracle_expect_both_fail(&c2, "mask axis 0 (n) must equal the input's axis 1 (4)");
  gt_free(t);
}
