/* test_ops_norm.c - softmax, logsoftmax and layer_norm, JIT vs the
 * reference interpreter (f32 and f64; ir/infer.c allows floats only).
 *
 * softmax / logsoftmax: every axis of a rank-3 shape, the default axis
 * (-1), a size-1 axis (softmax 1, logsoftmax 0), size-0 dims, a 67-long
 * axis (vector remainders), symbolic shapes along a symbolic and a static
 * axis, a 1000-long axis, and inputs large enough that exp overflows unless
 * the maximum is subtracted first (require_finite).
 * layer_norm: normalizes the last axis; gamma and beta have shape [last].
 * Rows static, symbolic and empty; last dim 1 (variance 0: the result is
 * beta), 5, 64, 67, 300, symbolic; rank 1, 2, 3; epsilon default and given;
 * data with a large offset (a one-pass E[x^2] - E[x]^2 variance in f32 loses
 * most of its digits there).
 * Tolerances (reasons next to each). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct scase {
  const char *shape;
  const char *attrs;
} scase;

static const scase SOFTMAX_CASES[] = {
    {"2, 3, 5", "{axis = -1}"}, {"2, 3, 5", "{axis = 0}"}, {"2, 3, 5", "{axis = 1}"},
    {"2, 3, 5", NULL},          {"7", NULL},               {"1, 4", "{axis = 0}"},
    {"4, 1", "{axis = 1}"},     {"0, 4", "{axis = -1}"},   {"4, 0", "{axis = 0}"},
    {"3, 67", "{axis = 1}"},    {"67, 3", "{axis = 0}"},   {"n, m", "{axis = -1}"},
    {"n, m", "{axis = 0}"},     {"2, n, 3", "{axis = 1}"},
};
#define NSOFT (int)(sizeof SOFTMAX_CASES / sizeof SOFTMAX_CASES[0])
#define SOFT_BINDINGS "n=1,m=1;n=3,m=6;n=0,m=2;n=5,m=0"

static void check_softmax_cases(const char *op, const char *dt, oracle_gen g, double rtol,
                                double atol, const scase *cases, int ncases, const char *bindings,
                                bool finite) {
  gt *t = gt_new("softmax", bindings && bindings[0] ? "n, m" : NULL);
  for (int i = 0; i < ncases; i++) {
    int x = gt_in(t, dt, cases[i].shape);
    gt_out(t, gt_op1(t, op, cases[i].attrs, x, dt, cases[i].shape));
  }
  char label[128];
  snprintf(label, sizeof label, "%s %s", op, dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 41,
                   .rtol = rtol, .atol = atol, .gen_default = g, .require_finite = finite};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* softmax: exp (a few ulp), a sum of L <= 67 positive terms (relative error
 * <= L eps in the worst case, ~sqrt(L) eps typically) and one division:
 * rtol 1e-5 in f32 (~80 ulp), 1e-12 in f64; atol only for results that
 * underflow towards 0. */
Test(softmax, softmax) {
  check_softmax_cases("mo.softmax", "f32", gen_uniform(-5, 5), 1e-5, 1e-9, SOFTMAX_CASES, NSOFT,
                      SOFT_BINDINGS, false);
  check_softmax_cases("mo.softmax", "f64", gen_uniform(-5, 5), 1e-12, 1e-18, SOFTMAX_CASES, NSOFT,
                      SOFT_BINDINGS, false);
}

/* logsoftmax = x - max - log(sum exp(x - max)): absolute error ~ eps * |x -
 * max| (<= 10 here) plus log of the sum's relative error: atol 2e-6 (f32),
 * 1e-13 (f64); rtol as softmax. */
Test(softmax, logsoftmax) {
  check_softmax_cases("mo.logsoftmax", "f32", gen_uniform(-5, 5), 1e-5, 2e-6, SOFTMAX_CASES, NSOFT,
                      SOFT_BINDINGS, false);
  check_softmax_cases("mo.logsoftmax", "f64", gen_uniform(-5, 5), 1e-12, 1e-13, SOFTMAX_CASES,
                      NSOFT, SOFT_BINDINGS, false);
}

/* exp(100) overflows f32 and exp(1000) f64: a softmax that does not
 * subtract the row maximum first gives inf / inf = NaN. Both sides must be
 * finite (and agree). */
static const scase BIG[] = {{"4, 16", "{axis = -1}"}, {"16, 4", "{axis = 0}"}};

Test(softmax, large_inputs_stay_finite) {
  check_softmax_cases("mo.softmax", "f32", gen_uniform(80, 120), 1e-5, 1e-9, BIG, 2, "", true);
  check_softmax_cases("mo.softmax", "f32", gen_uniform(-1000, 1000), 1e-5, 1e-9, BIG, 2, "", true);
  check_softmax_cases("mo.softmax", "f64", gen_uniform(700, 1000), 1e-12, 1e-18, BIG, 2, "", true);
  /* logsoftmax at |x - max| ~ 40: atol eps * 40 * 4 */
  check_softmax_cases("mo.logsoftmax", "f32", gen_uniform(80, 120), 1e-5, 1e-5, BIG, 2, "", true);
  check_softmax_cases("mo.logsoftmax", "f64", gen_uniform(700, 1000), 1e-12, 1e-12, BIG, 2, "",
                      true);
}

/* 1000-long rows: the sum's relative error grows like sqrt(L) eps (~2e-6 in
 * f32); rtol 2e-5 leaves a factor of ten. */
Test(softmax, long_axis) {
  static const scase lc[] = {{"3, 1000", "{axis = 1}"}, {"1000, 2", "{axis = 0}"},
                             {"n, 1000", NULL}};
  check_softmax_cases("mo.softmax", "f32", gen_uniform(-5, 5), 2e-5, 1e-10, lc, 3, "n=2,m=1",
                      false);
  check_softmax_cases("mo.logsoftmax", "f32", gen_uniform(-5, 5), 2e-5, 4e-6, lc, 3, "n=2,m=1",
                      false);
  check_softmax_cases("mo.softmax", "f64", gen_uniform(-5, 5), 1e-12, 1e-18, lc, 3, "n=2,m=1",
                      false);
}

/* NaN / inf in a row: both sides must agree (a NaN row stays NaN). Rows
 * of 37 and 64 reach the f32 row maximum's 16-wide part (and its tail). */
Test(softmax, special_values) {
  static const scase sc[] = {{"8, 8", "{axis = -1}"}, {"5, 37", "{axis = -1}"},
                             {"3, 64", "{axis = -1}"}};
  for (int k = 0; k < 2; k++) {
    const char *op = k ? "mo.logsoftmax" : "mo.softmax";
    check_softmax_cases(op, "f32", gen_naninf(-5, 5), 1e-5, 2e-6, sc, 3, "", false);
    check_softmax_cases(op, "f64", gen_naninf(-5, 5), 1e-12, 1e-13, sc, 3, "", false);
  }
}

/* ---- layer_norm ---- */

typedef struct lcase {
  const char *shape, *last, *attrs;
} lcase;

static const lcase LN_CASES[] = {
    {"4, 64", "64", NULL},
    {"n, 5", "5", NULL},
    {"2, n, 8", "8", "{epsilon = 1.0e-3}"},
    {"3, 1", "1", NULL},
    {"0, 7", "7", NULL},
    {"7", "7", NULL},
    {"3, 67", "67", "{epsilon = 0.5}"},
    {"2, 300", "300", NULL},
    {"2, m", "m", NULL},
};
#define NLN (int)(sizeof LN_CASES / sizeof LN_CASES[0])

static void check_layer_norm_cases(const char *dt, oracle_gen gx, double rtol, double atol,
                                   const lcase *cases, int ncases, const char *bindings,
                                   const char *label_extra) {
  gt *t = gt_new("layer_norm", bindings && bindings[0] ? "n, m" : NULL);
  for (int i = 0; i < ncases; i++) {
    int ins[3] = {gt_in_gen(t, dt, cases[i].shape, gx),
                  gt_in_gen(t, dt, cases[i].last, gen_uniform(0.5, 1.5)),
                  gt_in_gen(t, dt, cases[i].last, gen_uniform(-1, 1))};
    gt_out(t, gt_op(t, "mo.layer_norm", cases[i].attrs, ins, 3, dt, cases[i].shape));
  }
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[128];
  snprintf(label, sizeof label, "mo.layer_norm %s%s", dt, label_extra);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 43,
                   .rtol = rtol, .atol = atol, .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

/* (x - mean) / sqrt(var + eps) * gamma + beta with x in [-3, 3]: the mean's
 * error is ~eps |x|, the variance's relative error ~sqrt(D) eps, so the
 * result (magnitude <= ~3) is off by ~1e-6 in f32: rtol = atol = 1e-5.
 * f64: 1e-12. */
Test(layer_norm, shapes_and_epsilon) {
  check_layer_norm_cases("f32", gen_uniform(-3, 3), 1e-5, 1e-5, LN_CASES, NLN,
                         "n=1,m=1;n=3,m=16;n=0,m=0;n=6,m=3", "");
  check_layer_norm_cases("f64", gen_uniform(-3, 3), 1e-12, 1e-12, LN_CASES, NLN,
                         "n=1,m=1;n=3,m=16;n=0,m=0;n=6,m=3", "");
}

/* Rows whose mean (1000) is large against their spread (3): a two-pass or
 * Welford f32 layer norm is within ~1e-3 of the exact result here (the
 * mean itself carries eps * 1000 * sqrt(D) / D of error), while the
 * one-pass E[x^2] - E[x]^2 loses about 30% of the variance. atol 1e-2. */
Test(layer_norm, large_mean_f32) {
  static const lcase lc[] = {{"8, 64", "64", NULL}, {"2, 300", "300", NULL}};
  check_layer_norm_cases("f32", gen_uniform(1000, 1003), 1e-2, 1e-2, lc, 2, "", " offset 1000");
}

/* rows of one repeated value: variance exactly 0, result beta */
Test(layer_norm, constant_rows) {
  static const lcase lc[] = {{"4, 16", "16", NULL}, {"2, 67", "67", "{epsilon = 1.0e-12}"}};
  check_layer_norm_cases("f32", gen_const(2.5), 1e-5, 1e-5, lc, 2, "", " constant rows");
  check_layer_norm_cases("f64", gen_const(-7.25), 1e-12, 1e-12, lc, 2, "", " constant rows");
}
