/* test_ops_sort.c - mo.top_k, mo.bottom_k (k, axis) and mo.argsort (axis,
 * ascending), JIT vs the reference interpreter, on every dtype they take
 * (f32 f64 si32 si64): the last axis and others, k = 1, k = the axis size,
 * size-1 and size-0 dims, symbolic dims (the selected axis too), an
 * argsort line of 1000 (many merge passes), ties
 * (small integers, where the lower index must come first) and NaN / inf
 * (a NaN is the largest). Values and indices are compared exactly: both
 * sides select, they compute nothing. Bad k and axes are refused with
 * line:col; k beyond a symbolic axis fails at run time on both sides. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct kcase {
  const char *shape, *out; /* operand shape, result shape (axis cut to k) */
  int axis;                /* -99: the default */
  int k;
} kcase;

static const kcase KCASES[] = {
    {"2, 3, 37", "2, 3, 1", -99, 1}, {"2, 3, 37", "2, 3, 5", -1, 5},
    {"2, 3, 37", "2, 3, 37", 2, 37}, {"2, 37, 3", "2, 4, 3", 1, 4},
    {"37, 2, 3", "37, 2, 3", 0, 37}, {"1", "1", 0, 1},
    {"4, 1", "4, 1", 1, 1},          {"1, 6", "1, 6", 0, 1},
    {"0, 5", "0, 2", 1, 2},          {"n, m", "n, 3", 1, 3},
    {"m, 4", "2, 4", 0, 2},          {"n, 3, m", "n, 3, 1", 2, 1},
    {"300", "50", 0, 50},
};
#define NK (int)(sizeof KCASES / sizeof KCASES[0])
#define KBIND "n=1,m=3;n=3,m=5;n=0,m=4;n=2,m=70"

static const char *const NUMERIC[] = {"f32", "f64", "si32", "si64"};

static void add_topk(gt *t, const char *op, const char *dt, const kcase *c) {
  char attrs[96];
  if (c->axis == -99) snprintf(attrs, sizeof attrs, "{k = %d}", c->k);
  else snprintf(attrs, sizeof attrs, "{axis = %d, k = %d}", c->axis, c->k);
  int x = gt_in(t, dt, c->shape);
  const char *dts[2] = {dt, "si64"}, *shapes[2] = {c->out, c->out};
  int v = gt_opn(t, op, attrs, &x, 1, 2, dts, shapes);
  gt_out(t, v);
  gt_out(t, v + 1);
}

static void check_topk(const char *op, const char *dt, oracle_gen g) {
  gt *t = gt_new("topk", "n, m");
  for (int i = 0; i < NK; i++) add_topk(t, op, dt, &KCASES[i]);
  char label[96];
  snprintf(label, sizeof label, "%s %s", op, dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = KBIND, .seed = 47,
                   .gen_default = g};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

typedef struct acase {
  const char *shape;
  int axis; /* -99: the default (0) */
} acase;

static const acase ACASES[] = {
    {"37", -99}, {"5, 9", 0}, {"5, 9", 1}, {"5, 9", -1}, {"4, 1", 1}, {"1, 4", 0},
    {"0, 4", 1}, {"4, 0", 1}, {"n, m", 1}, {"n, m", 0},  {"2, n, 3", 1}, {"3, 1000", 1},
};
#define NA (int)(sizeof ACASES / sizeof ACASES[0])

static void check_argsort(const char *dt, int asc, oracle_gen g) {
  gt *t = gt_new("argsort", "n, m");
  for (int i = 0; i < NA; i++) {
    char attrs[96] = "";
    int n = 0;
    if (ACASES[i].axis != -99) n += snprintf(attrs + n, sizeof attrs - n, "axis = %d", ACASES[i].axis);
    if (asc >= 0)
      n += snprintf(attrs + n, sizeof attrs - n, "%sascending = %s", n ? ", " : "",
                    asc ? "true" : "false");
    char braced[100];
    snprintf(braced, sizeof braced, "{%s}", attrs);
    int x = gt_in(t, dt, ACASES[i].shape);
    gt_out(t, gt_op1(t, "mo.argsort", n ? braced : NULL, x, "si64", ACASES[i].shape));
  }
  char label[96];
  snprintf(label, sizeof label, "mo.argsort %s ascending=%d", dt, asc);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = KBIND, .seed = 53,
                   .gen_default = g};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(sort, top_k_every_dtype) {
  for (int d = 0; d < 4; d++) check_topk("mo.top_k", NUMERIC[d], (oracle_gen){0});
}
Test(sort, bottom_k_every_dtype) {
  for (int d = 0; d < 4; d++) check_topk("mo.bottom_k", NUMERIC[d], (oracle_gen){0});
}
/* many equal values: the lower index comes first, on both sides */
Test(sort, ties_keep_the_lower_index_first) {
  for (int d = 0; d < 4; d++) {
    check_topk("mo.top_k", NUMERIC[d], gen_integers(-3, 3));
    check_topk("mo.bottom_k", NUMERIC[d], gen_integers(-3, 3));
    check_argsort(NUMERIC[d], 1, gen_integers(-3, 3));
    check_argsort(NUMERIC[d], 0, gen_integers(-3, 3));
  }
}
/* NaN is the largest: first in top_k, last in bottom_k and ascending argsort */
Test(sort, nan_sorts_as_the_largest) {
  for (int d = 0; d < 2; d++) {
    check_topk("mo.top_k", NUMERIC[d], gen_naninf(-3, 3));
    check_topk("mo.bottom_k", NUMERIC[d], gen_naninf(-3, 3));
    check_argsort(NUMERIC[d], 1, gen_naninf(-3, 3));
    check_argsort(NUMERIC[d], 0, gen_naninf(-3, 3));
  }
}
Test(sort, argsort_every_dtype_and_order) {
  for (int d = 0; d < 4; d++)
    for (int a = -1; a < 2; a++) check_argsort(NUMERIC[d], a, (oracle_gen){0});
}

/* A hand-worked answer: x = [3, 1, NaN, 3, -2] */
Test(sort, known_answers) {
  gt *t = gt_new("known", NULL);
  int x = gt_const(t, "f32", "5", "3.0, 1.0, nan, 3.0, -2.0");
  const char *dts[2] = {"f32", "si64"}, *s3[2] = {"3", "3"}, *s2[2] = {"2", "2"};
  int v = gt_opn(t, "mo.top_k", "{k = 3}", &x, 1, 2, dts, s3);
  int bv = gt_opn(t, "mo.bottom_k", "{k = 2}", &x, 1, 2, dts, s2);
  int a = gt_op1(t, "mo.argsort", NULL, x, "si64", "5");
  int d = gt_op1(t, "mo.argsort", "{ascending = false}", x, "si64", "5");
  gt_out(t, v);
  gt_out(t, v + 1);
  gt_out(t, bv);
  gt_out(t, bv + 1);
  gt_out(t, a);
  gt_out(t, d);
  static const float ev[3] = {__builtin_nanf(""), 3, 3}, ebv[2] = {-2, 1};
  static const int64_t ei[3] = {2, 0, 3}, ebi[2] = {4, 1}, ea[5] = {4, 1, 0, 3, 2},
                       ed[5] = {2, 0, 3, 1, 4};
  oracle_expect exp[6] = {{KILN_FLOAT32, 1, {3}, ev}, {KILN_INT64, 1, {3}, ei},
                          {KILN_FLOAT32, 1, {2}, ebv}, {KILN_INT64, 1, {2}, ebi},
                          {KILN_INT64, 1, {5}, ea},    {KILN_INT64, 1, {5}, ed}};
  oracle_report *r = malloc(sizeof *r);
  cr_assert(r != NULL);
  cr_expect(oracle_known("sort known", gt_finish(t), exp, 6, 0, 0, r) == 0, "%s", r->msg);
  free(r);
  gt_free(t);
}

/* k beyond a symbolic axis: a run-time error on both sides */
Test(sort, k_beyond_a_symbolic_axis_fails_at_run_time) {
  gt *t = gt_new("topk", "n");
  kcase c = {"n", "4", 0, 4};
  add_topk(t, "mo.top_k", "f32", &c);
  oracle_case oc = {.label = "top_k k > n", .mlir = gt_finish(t), .bindings = "n=3",
                    .seed = 1, .expect_error = true};
  ORACLE_ASSERT(&oc);
  gt_free(t);
}

#define TOPK_GRAPH(attrs, in, out)                                                          \
  "mo.graph @g(%x: !mo.tensor<[" in "], f32>) -> (!mo.tensor<[" out "], si64>) {\n"         \
  "  %v, %i = mo.top_k(%x) " attrs " : (!mo.tensor<[" in "], f32>) -> (!mo.tensor<[" out    \
  "], f32>, !mo.tensor<[" out "], si64>)\n  mo.output %i : !mo.tensor<[" out "], si64>\n}\n"
#define ARGSORT_GRAPH(attrs, in, out)                                                      \
  "mo.graph @g(%x: !mo.tensor<[" in "], f32>) -> (!mo.tensor<[" out "], si64>) {\n"        \
  "  %i = mo.argsort(%x) " attrs " : (!mo.tensor<[" in "], f32>) -> !mo.tensor<[" out      \
  "], si64>\n  mo.output %i : !mo.tensor<[" out "], si64>\n}\n"

Test(sort, bad_k_axis_and_shapes_are_refused) {
  EXPECT_REJECTED(TOPK_GRAPH("{k = 0}", "3, 4", "3, 0"), "2:3: mo.top_k: k = 0 must be at least 1");
  EXPECT_REJECTED(TOPK_GRAPH("{k = 5}", "3, 4", "3, 5"),
                  "2:3: mo.top_k: k = 5 exceeds the size of axis 1 (4)");
  EXPECT_REJECTED(TOPK_GRAPH("{axis = 2, k = 1}", "3, 4", "3, 1"), "out of range for rank 2");
  EXPECT_REJECTED(TOPK_GRAPH("{axis = 0}", "3, 4", "1, 4"), "requires attribute 'k'");
  EXPECT_REJECTED(TOPK_GRAPH("{k = 2}", "3, 4", "3, 3"), "declared as");
  EXPECT_REJECTED(TOPK_GRAPH("{k = 1.5}", "3, 4", "3, 1"), "attribute 'k' of mo.top_k must be an integer");
  EXPECT_REJECTED(ARGSORT_GRAPH("{ascending = 1}", "3", "3"),
                  "attribute 'ascending' of mo.argsort must be a boolean");
  EXPECT_REJECTED(ARGSORT_GRAPH("{axis = 1}", "3", "3"), "out of range for rank 1");
  EXPECT_REJECTED(ARGSORT_GRAPH("{k = 1}", "3", "3"), "no attribute 'k'");
}
