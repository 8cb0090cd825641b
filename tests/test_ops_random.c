/* test_ops_random.c - mo.random.uniform and mo.random.normal: the JIT
 * against the reference interpreter (which defines the generator) over f32
 * and f64, every attribute, size-0, size-1 and scalar results, symbolic
 * dims; uniform values bit for bit, normal ones within a few ulps (log and
 * cos); hand-worked values of the generator; the distribution's moments;
 * bad attributes and result types refused at line:col. The JIT splits the
 * elements between threads, so agreement also shows the values do not
 * depend on the split. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/parse.h"
#include "support/gtext.h"
#include "support/oracle.h"

typedef struct rcase {
  const char *attrs, *shape;
} rcase;

static const rcase UNIFORM[] = {
    {NULL, "n, 3"},
    {"{high = 3.0, low = -2.0, seed = 7}", "n, 3"},
    {"{high = 3.0, low = -2.0, seed = 8}", "n, 3"},
    {"{seed = -1}", "2, n, 33"},
    {"{high = 1.5, low = 1.5}", "4"},
    {"{seed = 9223372036854775807}", ""},
    {NULL, "1"},
    {NULL, "0, n"},
};
static const rcase NORMAL[] = {
    {NULL, "n, 5"},       {"{mean = 1.5, seed = -4, std = 0.5}", "2, n, 3"},
    {"{std = 0.0}", "7"}, {"{seed = 3}", ""},
    {NULL, "1"},          {NULL, "n, 0"},
};

static void check_random(const char *op, const rcase *cs, int n, const char *dt, double rtol,
                         double atol) {
  gt *t = gt_new("rnd", "n");
  int x = gt_in(t, dt, "n");
  gt_out(t, gt_op1(t, "mo.abs", NULL, x, dt, "n"));
  for (int i = 0; i < n; i++)
    gt_out(t, gt_op(t, op, cs[i].attrs, NULL, 0, dt, cs[i].shape));
  char label[64];
  snprintf(label, sizeof label, "%s %s", op, dt);
  oracle_case c = {.label = label,
                   .mlir = gt_finish(t),
                   .bindings = "n=1;n=5;n=0;n=1000",
                   .seed = 1,
                   .rtol = rtol,
                   .atol = atol};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(random, uniform_is_bit_exact) {
  check_random("mo.random.uniform", UNIFORM, 8, "f32", 0, 0);
  check_random("mo.random.uniform", UNIFORM, 8, "f64", 0, 0);
}

Test(random, normal_within_ulps) {
  check_random("mo.random.normal", NORMAL, 6, "f32", 1e-6, 1e-6);
  check_random("mo.random.normal", NORMAL, 6, "f64", 1e-12, 1e-12);
}

/* ---- hand-worked values of the generator (ir/interp_random.c) ---- */

#define F64(...) ((const double[]){__VA_ARGS__})

static void known(const char *label, const char *op, const char *attrs, const char *dt,
                  oracle_expect e, double tol) {
  char mlir[1024];
  snprintf(mlir, sizeof mlir,
           "mo.graph @k() -> (!mo.tensor<[%lld], %s>) {\n  %%y = mo.%s %s : () -> "
           "!mo.tensor<[%lld], %s>\n  mo.output %%y : !mo.tensor<[%lld], %s>\n}\n",
           (long long)e.shape[0], dt, op, attrs, (long long)e.shape[0], dt, (long long)e.shape[0],
           dt);
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_known(label, mlir, &e, 1, tol, tol, r), 0, "%s", r->msg);
  free(r);
}

Test(known_random, generator_values) {
  known("uniform f64 seed 0", "random.uniform()", "", "f64",
        (oracle_expect){
            KILN_FLOAT64, 1, {3}, F64(0.6524484863740322, 0.7012121095215252, 0.3871241409757855)},
        0);
  known("uniform f32 seed 5", "random.uniform()", "{high = 1.0, low = -1.0, seed = 5}", "f32",
        (oracle_expect){KILN_FLOAT32,
                        1,
                        {3},
                        ORACLE_F32(0.9596827030181885f, -0.7882622480392456f, 0.7277262210845947f)},
        0);
  known("normal f64 seed 42", "random.normal()", "{seed = 42}", "f64",
        (oracle_expect){KILN_FLOAT64, 1, {2}, F64(1.4061449625634999, 1.0947531324548505)}, 1e-12);
}

/* ---- the distribution (the interpreter's values, which the kernels match) ---- */

static double *sample(const char *op, const char *attrs, int64_t n) {
  char text[512];
  snprintf(text, sizeof text,
           "mo.graph @s() -> (!mo.tensor<[%lld], f64>) {\n  %%y = mo.%s() %s : () -> "
           "!mo.tensor<[%lld], f64>\n  mo.output %%y : !mo.tensor<[%lld], f64>\n}\n",
           (long long)n, op, attrs, (long long)n, (long long)n);
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%s", d.msg);
  ir_tensor out;
  char msg[512];
  cr_assert_eq(ir_interp_run(g, NULL, NULL, NULL, &out, msg, sizeof msg), 0, "%s", msg);
  ir_graph_free(g);
  return out.data;
}

Test(random, moments_and_bounds) {
  enum { N = 200000 };
  double *u = sample("random.uniform", "{high = 5.0, low = 1.0, seed = 11}", N);
  double s = 0, s2 = 0, lo = INFINITY, hi = -INFINITY;
  for (int i = 0; i < N; i++) {
    s += u[i];
    s2 += u[i] * u[i];
    lo = fmin(lo, u[i]);
    hi = fmax(hi, u[i]);
  }
  double m = s / N, var = s2 / N - m * m;
  cr_expect(lo >= 1.0 && hi < 5.0, "uniform outside [1, 5): %g %g", lo, hi);
  cr_expect(fabs(m - 3.0) < 0.02 && fabs(var - 16.0 / 12) < 0.02, "uniform mean %g var %g", m, var);
  free(u);
  double *z = sample("random.normal", "{mean = -1.0, seed = 12, std = 2.0}", N);
  s = s2 = 0;
  for (int i = 0; i < N; i++) {
    s += z[i];
    s2 += z[i] * z[i];
  }
  m = s / N;
  var = s2 / N - m * m;
  cr_expect(fabs(m + 1.0) < 0.03 && fabs(var - 4.0) < 0.06, "normal mean %g var %g", m, var);
  /* different seeds give different streams */
  double *a = sample("random.normal", "{seed = 1}", 4),
         *b = sample("random.normal", "{seed = 2}", 4);
  cr_expect(memcmp(a, b, 4 * sizeof *a) != 0);
  free(a);
  free(b);
  free(z);
}

/* ---- bad attributes and result types: refused where they are written ---- */

static void expect_rejected(const char *op, const char *attrs, const char *ty, const char *what) {
  char mlir[1024], msg[1024];
  snprintf(mlir, sizeof mlir,
           "mo.graph @g() -> (!mo.tensor<[3], %s>) {\n  %%y = mo.%s() %s : () -> "
           "!mo.tensor<[3], %s>\n  mo.output %%y : !mo.tensor<[3], %s>\n}\n",
           ty, op, attrs, ty, ty);
  cr_expect_neq(oracle_ir_parse_only(mlir, msg, sizeof msg), 0, "ir_parse accepted %s", what);
  cr_expect(strstr(msg, what) != NULL, "message '%s' does not mention '%s'", msg, what);
}

Test(random_verify, bad_attributes_and_types_are_refused) {
  expect_rejected("random.uniform", "{high = 0.0, low = 1.0}", "f32",
                  "2:3: mo.random.uniform: low (1) must not exceed high (0)");
  expect_rejected("random.normal", "{std = -1.0}", "f32",
                  "2:3: mo.random.normal: std is -1 but must be >= 0");
  expect_rejected("random.uniform", "", "si32",
                  "mo.random.uniform: the result is declared si32 but must be f32 or f64");
  expect_rejected("random.normal", "", "bool", "must be f32 or f64");
  expect_rejected("random.uniform", "{seed = 1.5}", "f32",
                  "attribute 'seed' of mo.random.uniform must be an integer");
  expect_rejected("random.uniform", "{mean = 1.0}", "f32",
                  "mo.random.uniform has no attribute 'mean'");
  expect_rejected("random.normal", "{high = 1.0}", "f64",
                  "mo.random.normal has no attribute 'high'");
}
