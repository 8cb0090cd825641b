/* test_ops_fold.c - mo.fold (col2im): the JIT against the reference
 * interpreter over f32, f64, si32, si64, every window attribute (kernel,
 * stride one value or two, dilation, padding, strides wider than the kernel
 * that leave gaps), size-1 and size-0 dims, a symbolic batch and channel
 * dim, a symbolic output size (from the result type, or read from data) with
 * its run-time checks; hand-worked answers; bad attributes and shapes
 * refused at line:col.
 * Both sides add the taps in one order in the dtype: exact. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct fcase {
  const char *in, *attrs, *out;
} fcase;

static const fcase FOLDS[] = {
    {"2, 12, 12", "{kernel_size = [2, 2], output_size = [4, 5]}", "2, 3, 4, 5"},
    {"1, 18, 16", "{kernel_size = [3, 3], output_size = [7, 7], padding = [1], stride = [2]}",
     "1, 2, 7, 7"},
    {"3, 6, 9",
     "{dilation = [2, 1], kernel_size = [2, 3], output_size = [5, 6], padding = [0, 1], "
     "stride = [1, 2]}",
     "3, 1, 5, 6"},
    {"1, 2, 9", "{kernel_size = [1, 1], output_size = [7, 7], stride = [3]}", "1, 2, 7, 7"},
    {"2, 8, 70", "{dilation = [2], kernel_size = [2, 2], output_size = [7, 8], padding = [1, 2]}",
     "2, 2, 7, 8"},
    {"1, 1, 1", "{kernel_size = [1, 1], output_size = [1, 1]}", "1, 1, 1, 1"},
    {"0, 12, 12", "{kernel_size = [2, 2], output_size = [4, 5]}", "0, 3, 4, 5"},
    {"2, 0, 12", "{kernel_size = [2, 2], output_size = [4, 5]}", "2, 0, 4, 5"},
    {"n, 12, 12", "{kernel_size = [2, 2], output_size = [4, 5]}", "n, 3, 4, 5"},
    {"n, c, 12", "{kernel_size = [2, 2], output_size = [4, 5]}", "n, c floordiv 4, 4, 5"},
};
#define NFOLDS (int)(sizeof FOLDS / sizeof FOLDS[0])

static void check_fold(const char *dt) {
  gt *t = gt_new("fold", "n, c");
  for (int i = 0; i < NFOLDS; i++) {
    int x = gt_in(t, dt, FOLDS[i].in);
    gt_out(t, gt_op1(t, "mo.fold", FOLDS[i].attrs, x, dt, FOLDS[i].out));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.fold %s", dt);
  oracle_case c = {
      .label = label, .mlir = gt_finish(t), .bindings = "n=1,c=4;n=3,c=12;n=0,c=0", .seed = 17};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(fold, every_dtype_and_attribute) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64"};
  for (int d = 0; d < 4; d++)
    check_fold(dts[d]);
}

/* ---- a symbolic output size ---- */

/* output_size entries -1: H and W are the declared result's symbols, bound
 * here by a second input's shape (MAX's Dim); the block counts are then
 * expressions the kernel computes at run time. */
static const char *sym_graph(char *buf, size_t cap, const char *attrs, const char *res,
                             const char *dt) {
  snprintf(buf, cap,
           "mo.graph @fs<n, l, h, w>(%%x: !mo.tensor<[n, 12, l], %s>, %%r: !mo.tensor<[h, w], "
           "f32>) -> (!mo.tensor<[%s], %s>) {\n"
           "  %%y = mo.fold(%%x) %s : (!mo.tensor<[n, 12, l], %s>) -> !mo.tensor<[%s], %s>\n"
           "  mo.output %%y : !mo.tensor<[%s], %s>\n}\n",
           dt, res, dt, attrs, dt, res, dt, res, dt);
  return buf;
}

Test(fold_symbolic, output_size_from_the_result_type) {
  static const struct {
    const char *attrs, *res, *bindings;
  } CASES[] = {
      {"{kernel_size = [2, 2], output_size = [-1, -1]}", "n, 3, h, w",
       "n=2,l=12,h=4,w=5;n=1,l=1,h=2,w=2;n=0,l=4,h=3,w=3;n=2,l=8,h=3,w=5"},
      {"{kernel_size = [1, 4], output_size = [-1, 7], padding = [1], stride = [2]}",
       "n, 3, h, 7", "n=1,l=15,h=7,w=1;n=2,l=15,h=8,w=1;n=1,l=6,h=1,w=1"},
      {"{dilation = [2, 1], kernel_size = [2, 3], output_size = [-1, -1], padding = [0, 1], "
       "stride = [1, 2]}",
       "n, 2, h, w", "n=1,l=9,h=5,w=6;n=3,l=3,h=3,w=5"},
  };
  static const char *const dts[] = {"f32", "si64"};
  for (int d = 0; d < 2; d++)
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
      char buf[2048], label[64];
      snprintf(label, sizeof label, "mo.fold symbolic %s case %zu", dts[d], i);
      oracle_case c = {.label = label,
                       .mlir = sym_graph(buf, sizeof buf, CASES[i].attrs, CASES[i].res, dts[d]),
                       .bindings = CASES[i].bindings, .seed = 5};
      ORACLE_ASSERT(&c);
    }
}

Test(fold_symbolic, run_time_checks_name_the_op) {
  char buf[2048];
  const char *k22 = "{kernel_size = [2, 2], output_size = [-1, -1]}";
  oracle_case c = {.label = "fold blocks", .mlir = sym_graph(buf, sizeof buf, k22, "n, 3, h, w",
                                                             "f32"),
                   .bindings = "n=1,l=11,h=4,w=5", .seed = 5};
  oracle_expect_both_fail(&c, "dim 2 of operand 0 (l) must be the number of blocks, (h - 1) x");
  c.bindings = "n=1,l=0,h=0,w=5"; /* no 2 x 2 block fits in 0 rows */
  oracle_expect_both_fail(&c, "must be at least the dilated kernel (2)");
}

/* A second operand gives [H, W] as data (read before the run, as reshape's
 * shape): the declared symbols take its values. */
static const char *data_graph(char *buf, size_t cap, const char *vals, const char *attrs,
                              const char *res) {
  snprintf(buf, cap,
           "mo.graph @fd<n, l, h, w>(%%x: !mo.tensor<[n, 12, l], f32>) -> "
           "(!mo.tensor<[%s], f32>) {\n"
           "  %%s = mo.constant {value = #M.dense_array<%s> : tensor<2xsi64>} : "
           "!mo.tensor<[2], si64>\n"
           "  %%y = mo.fold(%%x, %%s) %s : (!mo.tensor<[n, 12, l], f32>, !mo.tensor<[2], si64>) "
           "-> !mo.tensor<[%s], f32>\n"
           "  mo.output %%y : !mo.tensor<[%s], f32>\n}\n",
           res, vals, attrs, res, res);
  return buf;
}

Test(fold_symbolic, output_size_read_from_data) {
  char buf[2048];
  const char *a = "{kernel_size = [2, 2], output_size = [-1, -1]}";
  oracle_case c = {.label = "fold data", .mlir = data_graph(buf, sizeof buf, "4, 5", a,
                                                            "n, 3, h, w"),
                   .bindings = "n=2,l=12;n=0,l=12", .seed = 9};
  ORACLE_ASSERT(&c);
  c.mlir = data_graph(buf, sizeof buf, "4, 5", a, "n, 3, 4, w"); /* a static H must agree */
  ORACLE_ASSERT(&c);
  c.mlir = data_graph(buf, sizeof buf, "4, 5", a, "n, 3, 3, w");
  oracle_expect_both_fail(&c, "mo.fold (%y): axis 2 is 3 but the data gives 4");
  c.mlir = data_graph(buf, sizeof buf, "4, 4", a, "n, 3, h, w");
  oracle_expect_both_fail(&c, "must be the number of blocks");
  c.mlir = data_graph(buf, sizeof buf, "-3, 4", a, "n, 3, h, w");
  oracle_expect_both_fail(&c, "mo.fold (%y): output_size[0] is -3");
  EXPECT_REJECTED(data_graph(buf, sizeof buf, "4, 5", "{kernel_size = [2, 2], output_size = "
                             "[4, 5]}", "n, 3, 4, 5"),
                  "with an output_size operand the attribute output_size must be [-1, -1]");
  EXPECT_REJECTED(
      "mo.graph @fd<n, l, h, w>(%x: !mo.tensor<[n, 12, l], f32>) -> "
      "(!mo.tensor<[n, 3, h, w], f32>) {\n"
      "  %s = mo.constant.external {name = \"s\"} : !mo.tensor<[2], si64>\n"
      "  %t = mo.negate(%s) : !mo.tensor<[2], si64>\n"
      "  %y = mo.fold(%x, %t) {kernel_size = [2, 2], output_size = [-1, -1]} : "
      "!mo.tensor<[n, 3, h, w], f32>\n"
      "  mo.output %y : !mo.tensor<[n, 3, h, w], f32>\n}\n",
      "depends on mo.constant.external (%s), a weight");
  EXPECT_REJECTED(sym_graph(buf, sizeof buf, "{kernel_size = [2, 2], output_size = [-2, 4]}",
                            "n, 3, h, 4", "f32"),
                  "attribute 'output_size' of mo.fold has -2 but needs values >= -1");
  EXPECT_REJECTED(sym_graph(buf, sizeof buf, "{kernel_size = [2, 6], output_size = [-1, 6]}",
                            "n, 1, 1, 6", "f32"), /* a static declared size is checked now */
                  "the output size 1 with padding 0 is smaller than the dilated kernel (2)");
}

/* ---- hand-worked answers ---- */

/* Folding ones counts how many blocks cover each pixel; a 1 x 2 kernel
 * over a row of 3 adds the two taps that meet in the middle. */
Test(known_fold, overlap_counts_and_sums) {
  oracle_expect_known("fold of ones",
        "mo.graph @k() -> (!mo.tensor<[1, 1, 3, 3], f32>) {\n" ORACLE_CONST(
            "x", "f32", "1, 4, 4", "1x4x4x",
            "1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, "
            "1.0, 1.0, 1.0, 1.0") "  %y = mo.fold(%x) {kernel_size = [2, 2], output_size = [3, 3]} "
                                  ": (!mo.tensor<[1, 4, 4], f32>) "
                                  "-> !mo.tensor<[1, 1, 3, 3], f32>\n  mo.output %y : "
                                  "!mo.tensor<[1, 1, 3, 3], f32>\n}\n",
        (oracle_expect){KILN_FLOAT32, 4, {1, 1, 3, 3}, ORACLE_F32(1, 2, 1, 2, 4, 2, 1, 2, 1)});
  oracle_expect_known("fold of a row",
        "mo.graph @k() -> (!mo.tensor<[1, 1, 1, 3], si64>) {\n" ORACLE_CONST(
            "x", "si64", "1, 2, 2", "1x2x2x",
            "1, 2, 10, 20") "  %y = mo.fold(%x) {kernel_size = [1, 2], output_size = [1, 3]} : "
                            "(!mo.tensor<[1, 2, 2], si64>) "
                            "-> !mo.tensor<[1, 1, 1, 3], si64>\n  mo.output %y : !mo.tensor<[1, 1, "
                            "1, 3], si64>\n}\n",
        (oracle_expect){KILN_INT64, 4, {1, 1, 1, 3}, ORACLE_I64(1, 12, 20)});
  oracle_expect_known("fold with stride and padding",
        "mo.graph @k() -> (!mo.tensor<[1, 1, 2, 2], si64>) {\n" ORACLE_CONST(
            "x", "si64", "1, 4, 1", "1x4x1x",
            "1, 2, 3, 4") "  %y = mo.fold(%x) {kernel_size = [2, 2], output_size = [2, 2], padding "
                          "= [1], stride = [3]} : "
                          "(!mo.tensor<[1, 4, 1], si64>) -> !mo.tensor<[1, 1, 2, 2], si64>\n"
                          "  mo.output %y : !mo.tensor<[1, 1, 2, 2], si64>\n}\n",
        (oracle_expect){KILN_INT64, 4, {1, 1, 2, 2}, ORACLE_I64(4, 0, 0, 0)});
}

/* ---- bad attributes and shapes: refused where they are written ---- */

#define G1(attrs, dt, tx, ty)                                                                      \
  "mo.graph @g(%x: !mo.tensor<[" tx "], " dt ">) -> (!mo.tensor<[" ty "], " dt ">) {\n"            \
  "  %y = mo.fold(%x) " attrs " : (!mo.tensor<[" tx "], " dt ">) -> !mo.tensor<[" ty "], " dt      \
  ">\n  mo.output %y : !mo.tensor<[" ty "], " dt ">\n}\n"
#define K22 "kernel_size = [2, 2], output_size = [4, 5]"

Test(fold_verify, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(G1("{kernel_size = [2], output_size = [4, 5]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "2:3: attribute 'kernel_size' of mo.fold has 1 entries but takes 2");
  EXPECT_REJECTED(G1("{kernel_size = [2, 2], output_size = [4]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "attribute 'output_size' of mo.fold has 1 entries but takes 2");
  EXPECT_REJECTED(
      G1("{kernel_size = [0, 2], output_size = [4, 5]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
      "attribute 'kernel_size' of mo.fold has 0 but needs values >= 1");
  EXPECT_REJECTED(G1("{" K22 ", stride = [0]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "attribute 'stride' of mo.fold has 0 but needs values >= 1");
  EXPECT_REJECTED(G1("{" K22 ", dilation = [1, 1, 1]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "attribute 'dilation' of mo.fold has 3 entries but takes 0, 1 or 2");
  EXPECT_REJECTED(G1("{" K22 ", padding = [-1]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "attribute 'padding' of mo.fold has -1 but needs values >= 0");
  EXPECT_REJECTED(
      G1("{kernel_size = [3, 3], output_size = [1, 1]}", "f32", "2, 9, 1", "2, 1, 1, 1"),
      "is smaller than the dilated kernel (3): no block fits");
  EXPECT_REJECTED(G1("{kernel_size = [1, 1], output_size = [2147483647, 2147483647], padding = "
                     "[2147483647]}",
                     "f32", "2, 1, 1", "2, 1, 2147483647, 2147483647"),
                  "blocks do not fit in 64 bits");
  EXPECT_REJECTED(G1("{" K22 "}", "f32", "2, 13, 12", "2, 3, 4, 5"),
                  "mo.fold: dim 1 of operand 0 (13) is not a multiple of kh * kw = 4");
  EXPECT_REJECTED(G1("{" K22 "}", "f32", "2, 12, 11", "2, 3, 4, 5"),
                  "mo.fold: dim 2 of operand 0 (11) must be the number of blocks, 3 x 4");
  EXPECT_REJECTED(G1("{" K22 "}", "f32", "12, 12", "2, 3, 4, 5"),
                  "operand 0 of mo.fold has rank 2 but needs rank 3");
  EXPECT_REJECTED(G1("{" K22 "}", "f32", "2, 12, 12", "2, 3, 4, 4"), "declared as");
  EXPECT_REJECTED(G1("{kernel_size = [2, 2]}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "mo.fold requires attribute 'output_size'");
  EXPECT_REJECTED(G1("{" K22 "}", "bool", "2, 12, 12", "2, 3, 4, 5"), "mo.fold");
  EXPECT_REJECTED(G1("{" K22 ", mode = 1}", "f32", "2, 12, 12", "2, 3, 4, 5"),
                  "mo.fold has no attribute 'mode'");
}

/* a symbolic channel dim that is not a multiple of the kernel: a run-time
 * error from both sides */
Test(fold_verify, channels_not_a_multiple_at_run_time) {
  gt *t = gt_new("fold", "n, c");
  int x = gt_in(t, "f32", "n, c, 12");
  gt_out(t, gt_op1(t, "mo.fold", "{" K22 "}", x, "f32", "n, c floordiv 4, 4, 5"));
  oracle_case c = {.label = "fold channels",
                   .mlir = gt_finish(t),
                   .bindings = "n=1,c=5",
                   .seed = 3,
                   .expect_error = true};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_run(&c, r), 0, "%s", r->msg);
  cr_expect(strstr(r->jit_msg, "multiple of kh * kw") != NULL, "JIT: %s", r->jit_msg);
  cr_expect(strstr(r->oracle_msg, "multiple of kh * kw") != NULL, "oracle: %s", r->oracle_msg);
  free(r);
  gt_free(t);
}
