/* test_ops_reduce.c - reductions along one axis (sum, mean, prod, max, min,
 * argmax, argmin), JIT vs the reference interpreter.
 *
 * The reduced axis is kept with size 1 (seed 002). Dtypes (ir/infer.c): sum
 * max min argmax argmin on f32 f64 si32 si64, mean on floats only; argmax /
 * argmin give si64 and, on ties, the first index (seed 002: "on CPU this
 * will return the first element index").
 * One graph per (op, dtype) holds one node per (shape, axis): every axis of
 * a rank-3 shape by positive and negative index, the default axis, size-1
 * axes, a size-0 outer dim, a 67-long axis, and symbolic shapes reduced
 * along a symbolic axis and along a static one.
 * prod accumulates like sum, from 1.
 * Tolerances: max / min / argmax / argmin pick an element: exact. A sum of
 * L values of magnitude <= 3 in f32 has a rounding error that grows like
 * eps * L * 1.7 for a sequential sum (random walk over partial sums of size
 * sqrt(L)); atol = 1e-6 * L is ten times that, while a missing or repeated
 * element changes the sum by about 1.5. f64: 2e-15 * L. mean: the same
 * divided by L. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct rcase {
  const char *in;
  const char *attrs; /* NULL: default axis (-1) */
  const char *out;
} rcase;

static const rcase CASES[] = {
    {"2, 3, 5", "{axis = 0}", "1, 3, 5"},
    {"2, 3, 5", "{axis = 1}", "2, 1, 5"},
    {"2, 3, 5", "{axis = 2}", "2, 3, 1"},
    {"2, 3, 5", "{axis = -1}", "2, 3, 1"},
    {"2, 3, 5", "{axis = -3}", "1, 3, 5"},
    {"2, 3, 5", NULL, "2, 3, 1"},
    {"7", "{axis = 0}", "1"},
    {"1, 4", "{axis = 0}", "1, 4"},
    {"4, 1", "{axis = 1}", "4, 1"},
    {"0, 4", "{axis = 1}", "0, 1"},
    {"3, 67", "{axis = 1}", "3, 1"},
    {"67, 3", "{axis = 0}", "1, 3"},
    {"n, m", "{axis = 1}", "n, 1"},
    {"n, m", "{axis = 0}", "1, m"},
    {"n, 3, m", "{axis = 1}", "n, 1, m"},
};
#define NCASES (int)(sizeof CASES / sizeof CASES[0])
/* m >= 1: reductions over an empty axis are tested on their own below */
#define BINDINGS "n=1,m=1;n=3,m=5;n=0,m=4;n=2,m=9"
#define LMAX 67

static void check_reduce_cases(const char *op, const char *dt, const char *out_dt, oracle_gen g,
                               double rtol, double atol, const rcase *cases, int ncases,
                               const char *bindings, unsigned seed) {
  gt *t = gt_new("reduce", bindings && bindings[0] ? "n, m" : NULL);
  for (int i = 0; i < ncases; i++) {
    int x = gt_in(t, dt, cases[i].in);
    gt_out(t, gt_op1(t, op, cases[i].attrs, x, out_dt ? out_dt : dt, cases[i].out));
  }
  char label[128];
  snprintf(label, sizeof label, "%s %s", op, dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = seed,
                   .rtol = rtol, .atol = atol, .gen_default = g};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static void check_reduce(const char *op, const char *dt, const char *out_dt, oracle_gen g,
                         double rtol, double atol) {
  check_reduce_cases(op, dt, out_dt, g, rtol, atol, CASES, NCASES, BINDINGS, 31);
}

static const char *const NUMERIC[] = {"f32", "f64", "si32", "si64"};
static const oracle_gen DFLT = {0};

Test(reduce, sum) {
  check_reduce("mo.sum", "f32", NULL, DFLT, 0, 1e-6 * LMAX);
  check_reduce("mo.sum", "f64", NULL, DFLT, 0, 2e-15 * LMAX);
  check_reduce("mo.sum", "si32", NULL, DFLT, 0, 0);
  check_reduce("mo.sum", "si64", NULL, DFLT, 0, 0);
}

Test(reduce, mean) {
  /* the sum's error divided by L, plus the division's rounding */
  check_reduce("mo.mean", "f32", NULL, DFLT, TOL_F32_ARITH, 1e-6);
  check_reduce("mo.mean", "f64", NULL, DFLT, TOL_F64_ARITH, 2e-15);
}

/* prod: floats multiply in double and round once (factors near 1 keep
 * 67-long products in range); ints wrap, bit for bit */
Test(reduce, prod) {
  check_reduce("mo.prod", "f32", NULL, gen_uniform(0.5, 1.5), TOL_F32_ARITH, 0);
  check_reduce("mo.prod", "f64", NULL, gen_uniform(-1.5, 1.5), TOL_F64_ARITH, 0);
  check_reduce("mo.prod", "si32", NULL, DFLT, 0, 0);
  check_reduce("mo.prod", "si64", NULL, DFLT, 0, 0);
}

Test(reduce, max) {
  for (int d = 0; d < 4; d++) check_reduce("mo.max", NUMERIC[d], NULL, DFLT, 0, 0);
}

Test(reduce, min) {
  for (int d = 0; d < 4; d++) check_reduce("mo.min", NUMERIC[d], NULL, DFLT, 0, 0);
}

/* narrow value sets so that ties are frequent: the first index must win */
Test(reduce, argmax_ties_first_index) {
  for (int d = 0; d < 4; d++)
    check_reduce("mo.argmax", NUMERIC[d], "si64", d < 2 ? gen_quant(-0.5, 0.5) : gen_uniform(-2, 2),
                 0, 0);
}

Test(reduce, argmin_ties_first_index) {
  for (int d = 0; d < 4; d++)
    check_reduce("mo.argmin", NUMERIC[d], "si64", d < 2 ? gen_quant(-0.5, 0.5) : gen_uniform(-2, 2),
                 0, 0);
}

Test(reduce, argmax_argmin_distinct_values) {
  for (int d = 0; d < 4; d++) {
    oracle_gen g = d < 2 ? DFLT : gen_uniform(-1000000, 1000000);
    check_reduce("mo.argmax", NUMERIC[d], "si64", g, 0, 0);
    check_reduce("mo.argmin", NUMERIC[d], "si64", g, 0, 0);
  }
}

/* si64 sums and extremes beyond 2^53 (no overflow: 67 * 2^56 < 2^63) */
Test(reduce, si64_wide_values) {
  oracle_gen w = gen_uniform(-72057594037927936.0, 72057594037927936.0); /* 2^56 */
  check_reduce_cases("mo.sum", "si64", NULL, w, 0, 0, CASES, 12, "", 32);
  check_reduce_cases("mo.max", "si64", NULL, gen_uniform(-9.2e18, 9.2e18), 0, 0, CASES, 12, "", 32);
  check_reduce_cases("mo.argmin", "si64", "si64", gen_uniform(-9.2e18, 9.2e18), 0, 0, CASES, 12,
                     "", 32);
}

/* Long axes, contiguous and strided, static and symbolic (L = 1000). */
static const rcase LONG[] = {
    {"3, 1000", "{axis = 1}", "3, 1"},
    {"1000, 3", "{axis = 0}", "1, 3"},
    {"n, 1000", "{axis = -1}", "n, 1"},
    {"2, m, 2", "{axis = 1}", "2, 1, 2"},
};

Test(reduce, long_axis) {
  const char *b = "n=2,m=1000";
  check_reduce_cases("mo.sum", "f32", NULL, DFLT, 0, 1e-6 * 1000, LONG, 4, b, 33);
  check_reduce_cases("mo.sum", "f64", NULL, DFLT, 0, 2e-15 * 1000, LONG, 4, b, 33);
  check_reduce_cases("mo.mean", "f32", NULL, DFLT, TOL_F32_ARITH, 1e-6, LONG, 4, b, 33);
  check_reduce_cases("mo.mean", "f64", NULL, DFLT, TOL_F64_ARITH, 2e-15, LONG, 4, b, 33);
  check_reduce_cases("mo.max", "f32", NULL, DFLT, 0, 0, LONG, 4, b, 33);
  check_reduce_cases("mo.argmin", "f64", "si64", DFLT, 0, 0, LONG, 4, b, 33);
  check_reduce_cases("mo.sum", "si32", NULL, DFLT, 0, 0, LONG, 4, b, 33);
  check_reduce_cases("mo.prod", "si64", NULL, DFLT, 0, 0, LONG, 4, b, 33);
  check_reduce_cases("mo.prod", "f64", NULL, gen_uniform(0.9, 1.1), TOL_F64_ARITH, 0, LONG, 4, b,
                     33);
}

/* NaN and inf inside the reduced axis: JIT and oracle must agree (a NaN in
 * a sum gives NaN; +inf + -inf gives NaN). Sums get NaN / inf only (huge
 * finite values would measure the oracle's double accumulator, not the JIT);
 * max / min / arg* get every special value. */
Test(reduce, special_values) {
  static const rcase sp[] = {{"8, 16", "{axis = 1}", "8, 1"}, {"16, 8", "{axis = 0}", "1, 8"}};
  static const char *const ops[] = {"mo.sum", "mo.mean", "mo.prod", "mo.max", "mo.min",
                                    "mo.argmax", "mo.argmin"};
  for (int o = 0; o < 7; o++) {
    for (int d = 0; d < 2; d++) {
      bool arg = o >= 5, acc = o < 3;
      double atol = d == 0 ? 1e-6 * 16 : 2e-15 * 16;
      oracle_gen g = acc ? gen_naninf(-3, 3) : gen_special(-3, 3);
      check_reduce_cases(ops[o], NUMERIC[d], arg ? "si64" : NULL, g,
                         acc ? TOL_F32_ARITH : 0, acc ? atol : 0, sp, 2, "", 34);
    }
  }
}

/* ---- reductions over an empty axis ([3, 0] along axis 1) ----
 * sum is 0 and mean is 0 / 0 = NaN in numpy; max / min / argmax / argmin of
 * nothing have no value (numpy raises). Whatever kiln decides, the JIT and
 * the interpreter must decide the same: equal outputs, or an error from
 * both. */
static void check_empty_axis(const char *op, const char *dt, const char *out_dt) {
  gt *t = gt_new("empty", "n, m");
  int x = gt_in(t, dt, "3, 0");
  gt_out(t, gt_op1(t, op, "{axis = 1}", x, out_dt ? out_dt : dt, "3, 1"));
  int y = gt_in(t, dt, "n, m");
  gt_out(t, gt_op1(t, op, "{axis = 1}", y, out_dt ? out_dt : dt, "n, 1"));
  char label[128];
  snprintf(label, sizeof label, "%s %s over an empty axis", op, dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=2,m=0", .seed = 35};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(&c, r);
  bool both_failed = rc != 0 && r->jit_failed && r->oracle_failed && r->compiles;
  cr_expect(rc == 0 || both_failed, "%s", r->msg);
  if (both_failed)
    cr_expect(r->jit_code == KILN_ERR_RUNTIME || r->jit_code == KILN_ERR_SHAPE ||
                  r->jit_code == KILN_ERR_INVALID_ARGUMENT,
              "%s: both fail, but the JIT's error has code %s: %s", label,
              kiln_code_name(r->jit_code), r->jit_msg);
  free(r);
  gt_free(t);
}

Test(reduce_empty, sum) {
  for (int d = 0; d < 4; d++) check_empty_axis("mo.sum", NUMERIC[d], NULL);
}
/* prod of nothing is 1 (numpy) */
Test(reduce_empty, prod) {
  for (int d = 0; d < 4; d++) check_empty_axis("mo.prod", NUMERIC[d], NULL);
}
Test(reduce_empty, mean) {
  for (int d = 0; d < 2; d++) check_empty_axis("mo.mean", NUMERIC[d], NULL);
}
Test(reduce_empty, max) {
  for (int d = 0; d < 4; d++) check_empty_axis("mo.max", NUMERIC[d], NULL);
}
Test(reduce_empty, min) {
  for (int d = 0; d < 4; d++) check_empty_axis("mo.min", NUMERIC[d], NULL);
}
Test(reduce_empty, argmax) {
  for (int d = 0; d < 4; d++) check_empty_axis("mo.argmax", NUMERIC[d], "si64");
}
Test(reduce_empty, argmin) {
  for (int d = 0; d < 4; d++) check_empty_axis("mo.argmin", NUMERIC[d], "si64");
}

/* ---- by design: no reduction of a scalar, no mean of bools ---- */

Test(reduce, scalar_operand_is_rejected) {
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[], f32>) -> (!mo.tensor<[], f32>) {\n"
                  "  %y = mo.sum(%x) : (!mo.tensor<[], f32>) -> !mo.tensor<[], f32>\n"
                  "  mo.output %y : !mo.tensor<[], f32>\n}\n",
                  "out of range for rank 0");
}

Test(reduce, mean_of_bools_is_rejected) {
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[4], bool>) -> (!mo.tensor<[1], bool>) {\n"
                  "  %y = mo.mean(%x) : (!mo.tensor<[4], bool>) -> !mo.tensor<[1], bool>\n"
                  "  mo.output %y : !mo.tensor<[1], bool>\n}\n",
                  "f32, f64 or an integer");
}
