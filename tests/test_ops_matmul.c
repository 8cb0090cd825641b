/* test_ops_matmul.c - mo.matmul, JIT vs the reference interpreter.
 *
 * a [..., M, K] x b [..., K, N] -> [..., M, N] with the batch dims broadcast
 * (seed 002); floats only (ir/infer.c). Shapes: 1 x 1, vectors as 1 x K and
 * K x 1, M = 0, N = 0, K = 0 (a sum of nothing: zeros), a size that is not a
 * multiple of any vector width (67 x 129 x 33), batched, batch dims
 * broadcast both ways with size-1 and missing batch dims, a batch of 0,
 * symbolic M / K / N and a symbolic batch, and a weight operand
 * (mo.constant.external).
 * Tolerance: each output is a dot product of K terms with |a|, |b| <= 1;
 * the JIT may block and reorder the sum, the oracle sums in index order
 * (f32 in double). A reordered f32 sum is off by ~eps * sqrt(K) * sqrt(K) /
 * 3 (random walk); atol = 1e-6 * K is ten times that, while one wrong or
 * missing term changes the result by ~0.25 on average. f64: 1e-15 * K. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct mcase {
  const char *a, *b, *o;
} mcase;

static const mcase CASES[] = {
    {"1, 1", "1, 1", "1, 1"},
    {"3, 4", "4, 5", "3, 5"},
    {"1, 7", "7, 1", "1, 1"},
    {"7, 1", "1, 6", "7, 6"},
    {"0, 4", "4, 5", "0, 5"},
    {"3, 4", "4, 0", "3, 0"},
    {"3, 0", "0, 5", "3, 5"},
    {"67, 129", "129, 33", "67, 33"},
    {"2, 3, 4", "2, 4, 5", "2, 3, 5"},
    {"2, 3, 4", "4, 5", "2, 3, 5"},
    {"3, 4", "2, 4, 5", "2, 3, 5"},
    {"1, 3, 4", "5, 4, 2", "5, 3, 2"},
    {"2, 1, 3, 4", "3, 4, 5", "2, 3, 3, 5"},
    {"0, 3, 4", "4, 5", "0, 3, 5"},
    {"n, k", "k, 6", "n, 6"},
    {"b, n, 8", "b, 8, n", "b, n, n"},
    {"b, 1, n, k", "3, k, 2", "b, 3, n, 2"},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])
#define BINDINGS "b=1,n=1,k=1;b=2,n=5,k=17;b=0,n=3,k=0;b=3,n=0,k=4"
#define KMAX 129

static void check_matmul_cases(const char *dt, const mcase *cases, int ncases, const char *bindings,
                               double atol, const char *syms) {
  gt *t = gt_new("matmul", syms);
  for (int i = 0; i < ncases; i++) {
    int a = gt_in(t, dt, cases[i].a), b = gt_in(t, dt, cases[i].b);
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, dt, cases[i].o));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.matmul %s", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 51,
                   .rtol = 0, .atol = atol, .gen_default = gen_uniform(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(matmul, f32_shapes) {
  check_matmul_cases("f32", CASES, NCASES, BINDINGS, 1e-6 * KMAX, "b, n, k");
}

Test(matmul, f64_shapes) {
  check_matmul_cases("f64", CASES, NCASES, BINDINGS, 1e-15 * KMAX, "b, n, k");
}

/* K = 1000 and a square 128 x 256 x 128 (several cache blocks) */
Test(matmul, long_k_and_blocked_sizes) {
  static const mcase big[] = {{"2, 1000", "1000, 3", "2, 3"}, {"128, 256", "256, 128", "128, 128"}};
  check_matmul_cases("f32", big, 2, "", 1e-6 * 1000, NULL);
  check_matmul_cases("f64", big, 2, "", 1e-15 * 1000, NULL);
}

/* symbolic M and N bound to sizes around vector widths (1..33) */
Test(matmul, symbolic_sizes_around_vector_widths) {
  static const mcase sc[] = {{"n, k", "k, n", "n, n"}};
  check_matmul_cases("f32", sc, 1, "n=1,k=1;n=7,k=3;n=8,k=8;n=9,k=16;n=15,k=17;n=16,k=31;n=17,k=33;n=33,k=5",
                     1e-6 * 33, "n, k");
}

/* the right operand a weight, the left symbolic (the shape of mlp.mlir) */
Test(matmul, weight_operand) {
  for (int d = 0; d < 2; d++) {
    const char *dt = d ? "f64" : "f32";
    gt *t = gt_new("mm_weight", "batch");
    int x = gt_in(t, dt, "batch, 40");
    int w = gt_weight(t, "w", dt, "40, 24");
    gt_out(t, gt_op2(t, "mo.matmul", NULL, x, w, dt, "batch, 24"));
    oracle_case c = {.label = dt, .mlir = gt_finish(t), .bindings = "batch=1;batch=5;batch=0",
                     .seed = 52, .atol = d ? 1e-15 * 40 : 1e-6 * 40,
                     .gen_default = gen_uniform(-1, 1)};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

/* NaN / inf in an operand: the rows and columns they touch become NaN / inf
 * alike on both sides (0 * inf = NaN included). */
Test(matmul, special_values) {
  static const mcase sc[] = {{"6, 5", "5, 7", "6, 7"}};
  gt *t = gt_new("mm_special", NULL);
  int a = gt_in(t, "f32", sc[0].a), b = gt_in(t, "f32", sc[0].b);
  gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, "f32", sc[0].o));
  oracle_case c = {.label = "mo.matmul f32 NaN / inf", .mlir = gt_finish(t), .seed = 53,
                   .atol = 1e-6 * 5, .gen_default = gen_naninf(-1, 1)};
  ORACLE_ASSERT(&c);
  gt_free(t);
}
