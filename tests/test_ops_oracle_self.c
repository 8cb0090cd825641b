/* test_ops_oracle_self.c - the oracle runner itself can fail: its comparison
 * flags every kind of difference the op tests rely on it to see, and
 * oracle_run reports test bugs and unexpected successes instead of passing.
 * (A comparison that always agreed would make every test_ops_* file pass.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

static int cmp(kiln_dtype dt, const void *a, const void *b, int n, double rtol, double atol) {
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int64_t shape[1] = {n};
  int rc = oracle_compare(r, "self", dt, 1, shape, a, b, rtol, atol);
  if (rc != 0) cr_assert(strstr(r->msg, "differ") != NULL, "message: %s", r->msg);
  free(r);
  return rc;
}

Test(oracle_self, f32_one_ulp_is_a_difference_at_zero_tolerance) {
  float a[2] = {1.0f, 2.0f}, b[2] = {1.0f, nextafterf(2.0f, 3.0f)};
  cr_expect_eq(cmp(KILN_FLOAT32, a, b, 2, 0, 0), -1);
  cr_expect_eq(cmp(KILN_FLOAT32, a, b, 2, 1e-6, 0), 0);
}

Test(oracle_self, nan_matches_only_nan) {
  double a[2] = {NAN, 1.0}, b[2] = {NAN, 1.0}, c[2] = {1.0, NAN};
  cr_expect_eq(cmp(KILN_FLOAT64, a, b, 2, 0, 0), 0);
  cr_expect_eq(cmp(KILN_FLOAT64, a, c, 2, 1e9, 1e9), -1);
}

Test(oracle_self, inf_matches_only_the_same_inf) {
  float a[1] = {INFINITY}, b[1] = {-INFINITY}, c[1] = {3e38f};
  cr_expect_eq(cmp(KILN_FLOAT32, a, a, 1, 0, 0), 0);
  cr_expect_eq(cmp(KILN_FLOAT32, a, b, 1, 1e9, 1e9), -1);
  cr_expect_eq(cmp(KILN_FLOAT32, a, c, 1, 1e9, 1e9), -1);
}

Test(oracle_self, ints_and_bools_bit_exact) {
  int64_t a[1] = {(int64_t)1 << 60}, b[1] = {((int64_t)1 << 60) + 1};
  uint8_t t[1] = {1}, u[1] = {2};
  cr_expect_eq(cmp(KILN_INT64, a, b, 1, 1, 1), -1);
  cr_expect_eq(cmp(KILN_BOOL, t, u, 1, 1, 1), -1);
  cr_expect_eq(cmp(KILN_BOOL, t, t, 1, 0, 0), 0);
}

Test(oracle_self, expect_error_fails_when_both_succeed) {
  gt *t = gt_new("ok", NULL);
  gt_out(t, gt_op1(t, "mo.relu", NULL, gt_in(t, "f32", "3"), "f32", "3"));
  oracle_case c = {.label = "relu", .mlir = gt_finish(t), .seed = 1, .expect_error = true};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_run(&c, r), -1);
  cr_expect(strstr(r->msg, "expected an error") != NULL, "message: %s", r->msg);
  free(r);
  gt_free(t);
}

Test(oracle_self, wrong_declared_type_is_reported_not_passed) {
  gt *t = gt_new("bad", NULL);
  gt_out(t, gt_op1(t, "mo.relu", NULL, gt_in(t, "f32", "3"), "f32", "4"));
  oracle_case c = {.label = "relu", .mlir = gt_finish(t), .seed = 1};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_run(&c, r), -1);
  cr_expect(strstr(r->msg, "ir_parse failed") != NULL, "message: %s", r->msg);
  free(r);
  gt_free(t);
}

Test(oracle_self, unbound_symbol_is_a_test_bug) {
  gt *t = gt_new("sym", "n");
  gt_out(t, gt_op1(t, "mo.relu", NULL, gt_in(t, "f32", "n"), "f32", "n"));
  oracle_case c = {.label = "relu", .mlir = gt_finish(t), .bindings = "", .seed = 1};
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  cr_expect_eq(oracle_run(&c, r), -1);
  cr_expect(strstr(r->msg, "unbound") != NULL, "message: %s", r->msg);
  free(r);
  gt_free(t);
}

Test(oracle_self, sign_of_zero_counts_in_exact_mode_only) {
  double a[1] = {0.0}, b[1] = {-0.0};
  cr_expect_eq(cmp(KILN_FLOAT64, a, b, 1, 0, 0), -1);
  cr_expect_eq(cmp(KILN_FLOAT64, a, b, 1, 1e-12, 0), 0);
}
