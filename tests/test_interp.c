/* test_interp.c - the reference interpreter (ir/interp.c): hand-checked
 * values for every op class, symbol solving and its error messages, weights,
 * zero-size tensors and output ownership.
 *
 * Graphs are written as MO text and built with ir_parse (which verifies
 * them and fills the run-time checks). Expected numbers are worked out by
 * hand in the comments. Every output the interpreter hands back is freed by
 * the test, so the suite is leak-clean under ASan. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/interp_impl.h"
#include "ir/ir.h"

/* ---- helpers ---- */

static ir_graph *parse(const char *text) {
  ir_diag d;
  memset(&d, 0, sizeof d);
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "parse failed at %d:%d: %s", d.line, d.col, d.msg);
  return g;
}

static ir_tensor tn(ir_dtype dt, void *data, int rank, const int64_t *shape) {
  ir_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  for (int i = 0; i < rank; i++) t.shape[i] = shape[i];
  t.data = data;
  return t;
}
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

typedef struct wbind {
  const char *name;
  ir_tensor t;
} wbind;

static const ir_tensor *lookup(void *ud, const char *name) {
  for (const wbind *w = ud; w && w->name; w++)
    if (strcmp(w->name, name) == 0) return &w->t;
  return NULL;
}

static char MSG[1024];
static ir_tensor OUT[8];

/* Parse and run; outputs in OUT (freed by free_out), message in MSG. */
static int run_w(const char *text, const ir_tensor *in, wbind *w) {
  ir_graph *g = parse(text);
  cr_assert_leq(g->noutputs, 8);
  MSG[0] = '\0';
  int rc = ir_interp_run(g, in, lookup, w, OUT, MSG, sizeof MSG);
  if (rc != 0) {
    for (int i = 0; i < g->noutputs; i++)
      cr_assert_null(OUT[i].data, "output %d left on failure", i);
  }
  ir_graph_free(g);
  return rc;
}
static int run(const char *text, const ir_tensor *in) { return run_w(text, in, NULL); }

static void run_ok(const char *text, const ir_tensor *in) {
  int rc = run(text, in);
  cr_assert_eq(rc, 0, "run failed: %s", MSG);
}

static void run_err(const char *text, const ir_tensor *in, const char *want) {
  int rc = run(text, in);
  cr_assert_neq(rc, 0, "run succeeded, expected: %s", want);
  cr_assert_str_eq(MSG, want);
}

static void free_out(int n) {
  for (int i = 0; i < n; i++) {
    free(OUT[i].data);
    OUT[i].data = NULL;
  }
}

static void expect_shape(const ir_tensor *t, int rank, const int64_t *shape) {
  cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
  for (int i = 0; i < rank; i++)
    cr_assert_eq(t->shape[i], shape[i], "axis %d is %lld, expected %lld", i,
                 (long long)t->shape[i], (long long)shape[i]);
}

static void expect_f32(const ir_tensor *t, const float *want, int n, float tol) {
  cr_assert_eq(t->dtype, IR_DT_F32);
  cr_assert_eq(ir_tensor_numel(t), n);
  const float *v = t->data;
  for (int i = 0; i < n; i++) {
    if (isnan(want[i]))
      cr_assert(isnan(v[i]), "element %d is %g, expected NaN", i, v[i]);
    else if (tol == 0)
      cr_assert(v[i] == want[i] && signbit(v[i]) == signbit(want[i]),
                "element %d is %.9g, expected %.9g", i, v[i], want[i]);
    else
      cr_assert(fabsf(v[i] - want[i]) <= tol, "element %d is %.9g, expected %.9g", i, v[i],
                want[i]);
  }
}

static void expect_i64(const ir_tensor *t, const int64_t *want, int n) {
  cr_assert_eq(t->dtype, IR_DT_SI64);
  cr_assert_eq(ir_tensor_numel(t), n);
  const int64_t *v = t->data;
  for (int i = 0; i < n; i++)
    cr_assert_eq(v[i], want[i], "element %d is %lld, expected %lld", i, (long long)v[i],
                 (long long)want[i]);
}

static void expect_i32(const ir_tensor *t, const int32_t *want, int n) {
  cr_assert_eq(t->dtype, IR_DT_SI32);
  cr_assert_eq(ir_tensor_numel(t), n);
  const int32_t *v = t->data;
  for (int i = 0; i < n; i++)
    cr_assert_eq(v[i], want[i], "element %d is %d, expected %d", i, v[i], want[i]);
}

static void expect_u16(const ir_tensor *t, ir_dtype dt, const uint16_t *want, int n) {
  cr_assert_eq(t->dtype, dt);
  cr_assert_eq(ir_tensor_numel(t), n);
  const uint16_t *v = t->data;
  for (int i = 0; i < n; i++)
    cr_assert_eq(v[i], want[i], "element %d is 0x%04x, expected 0x%04x", i, v[i], want[i]);
}

static void expect_bool(const ir_tensor *t, const uint8_t *want, int n) {
  cr_assert_eq(t->dtype, IR_DT_BOOL);
  cr_assert_eq(ir_tensor_numel(t), n);
  const uint8_t *v = t->data;
  for (int i = 0; i < n; i++) cr_assert_eq(v[i], want[i], "element %d is %d", i, v[i]);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *b = malloc((size_t)n + 1);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  return b;
}

static char *example(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/ir-examples/%s", KILN_SHARED_DIR, name);
  return slurp(path);
}

/* ---- sizes ---- */

Test(interp, numel_counts_zero_and_scalars) {
  ir_tensor t = tn(IR_DT_F32, NULL, 0, NULL);
  cr_assert_eq(ir_tensor_numel(&t), 1);
  t = tn(IR_DT_F32, NULL, 3, SHAPE(2, 0, 5));
  cr_assert_eq(ir_tensor_numel(&t), 0);
  t = tn(IR_DT_F32, NULL, 2, SHAPE(3, -1));
  cr_assert_eq(ir_tensor_numel(&t), -1);
  t = tn(IR_DT_F32, NULL, 2, SHAPE(INT64_MAX, 2));
  cr_assert_eq(ir_tensor_numel(&t), -1);
}

/* ---- elementwise ---- */

Test(interp, relu_clamps_negatives) {
  char *text = example("relu.mlir");
  float x[5] = {-1, 0, 2, -0.5f, NAN};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(5));
  run_ok(text, &in);
  expect_f32(&OUT[0], (const float[]){0, 0, 2, 0, NAN}, 5, 0);
  free_out(1);
  free(text);
}

Test(interp, add_with_dense_constant) {
  char *text = example("add_const.mlir");
  float a[5] = {1, 2, 3, 4, 5};
  ir_tensor in = tn(IR_DT_F32, a, 1, SHAPE(5));
  run_ok(text, &in);
  expect_f32(&OUT[0], (const float[]){4, 3, -3, 6, 10}, 5, 0);
  free_out(1);
  free(text);
}

Test(interp, add_broadcasts_column_and_row) {
  /* [[1],[2]] + [10, 20, 30] = [[11, 21, 31], [12, 22, 32]] */
  const char *g = "mo.graph @g(%a: !mo.tensor<[2, 1], f32>, %b: !mo.tensor<[3], f32>) -> "
                  "(!mo.tensor<[2, 3], f32>) {\n"
                  "  %0 = mo.add(%a, %b) : (!mo.tensor<[2, 1], f32>, !mo.tensor<[3], f32>) -> "
                  "!mo.tensor<[2, 3], f32>\n"
                  "  mo.output %0 : !mo.tensor<[2, 3], f32>\n}\n";
  float a[2] = {1, 2}, b[3] = {10, 20, 30};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 2, SHAPE(2, 1)), tn(IR_DT_F32, b, 1, SHAPE(3))};
  run_ok(g, in);
  expect_shape(&OUT[0], 2, SHAPE(2, 3));
  expect_f32(&OUT[0], (const float[]){11, 21, 31, 12, 22, 32}, 6, 0);
  free_out(1);
}

Test(interp, integer_add_and_negate_wrap) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[3], si32>, %b: !mo.tensor<[3], si32>) -> "
                  "(!mo.tensor<[3], si32>, !mo.tensor<[3], si32>, !mo.tensor<[3], si32>) {\n"
                  "  %0 = mo.add(%a, %b) : !mo.tensor<[3], si32>\n"
                  "  %1 = mo.negate(%a) : !mo.tensor<[3], si32>\n"
                  "  %2 = mo.abs(%a) : !mo.tensor<[3], si32>\n"
                  "  mo.output %0, %1, %2 : !mo.tensor<[3], si32>, !mo.tensor<[3], si32>, "
                  "!mo.tensor<[3], si32>\n}\n";
  int32_t a[3] = {INT32_MAX, INT32_MIN, -5}, b[3] = {1, -1, 2};
  ir_tensor in[2] = {tn(IR_DT_SI32, a, 1, SHAPE(3)), tn(IR_DT_SI32, b, 1, SHAPE(3))};
  run_ok(g, in);
  expect_i32(&OUT[0], (const int32_t[]){INT32_MIN, INT32_MAX, -3}, 3);
  expect_i32(&OUT[1], (const int32_t[]){INT32_MIN + 1, INT32_MIN, 5}, 3);
  expect_i32(&OUT[2], (const int32_t[]){INT32_MAX, INT32_MIN, 5}, 3);
  free_out(3);
}

Test(interp, unary_math_values) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[1], f32>) -> (!mo.tensor<[1], f32>, "
                  "!mo.tensor<[1], f32>, !mo.tensor<[1], f32>, !mo.tensor<[1], f32>, "
                  "!mo.tensor<[1], f32>, !mo.tensor<[1], f32>) {\n"
                  "  %0 = mo.gelu(%x) : !mo.tensor<[1], f32>\n"
                  "  %1 = mo.gelu(%x) {approximate = \"tanh\"} : !mo.tensor<[1], f32>\n"
                  "  %2 = mo.gelu(%x) {approximate = \"quick\"} : !mo.tensor<[1], f32>\n"
                  "  %3 = mo.sigmoid(%x) : !mo.tensor<[1], f32>\n"
                  "  %4 = mo.silu(%x) : !mo.tensor<[1], f32>\n"
                  "  %5 = mo.rsqrt(%x) : !mo.tensor<[1], f32>\n"
                  "  mo.output %0, %1, %2, %3, %4, %5 : !mo.tensor<[1], f32>, !mo.tensor<[1], "
                  "f32>, !mo.tensor<[1], f32>, !mo.tensor<[1], f32>, !mo.tensor<[1], f32>, "
                  "!mo.tensor<[1], f32>\n}\n";
  float x[1] = {1.0f};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(1));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){0.8413447f}, 1, 1e-6f); /* 0.5 (1 + erf(1/sqrt 2)) */
  expect_f32(&OUT[1], (const float[]){0.8411920f}, 1, 1e-6f); /* tanh approximation */
  expect_f32(&OUT[2], (const float[]){0.8457957f}, 1, 1e-6f); /* sigmoid(1.702) */
  expect_f32(&OUT[3], (const float[]){0.7310586f}, 1, 1e-6f);
  expect_f32(&OUT[4], (const float[]){0.7310586f}, 1, 1e-6f);
  expect_f32(&OUT[5], (const float[]){1.0f}, 1, 0);
  free_out(6);
}

Test(interp, round_is_half_to_even) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
                  "  %0 = mo.round(%x) : !mo.tensor<[5], f32>\n"
                  "  mo.output %0 : !mo.tensor<[5], f32>\n}\n";
  float x[5] = {0.5f, 1.5f, 2.5f, -0.5f, -2.7f};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(5));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){0, 2, 2, -0.0f, -3}, 5, 0);
  free_out(1);
}

Test(interp, max_min_propagate_nan) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[3], f32>, %b: !mo.tensor<[3], f32>) -> "
                  "(!mo.tensor<[3], f32>, !mo.tensor<[3], f32>) {\n"
                  "  %0 = mo.max(%a, %b) : !mo.tensor<[3], f32>\n"
                  "  %1 = mo.min(%a, %b) : !mo.tensor<[3], f32>\n"
                  "  mo.output %0, %1 : !mo.tensor<[3], f32>, !mo.tensor<[3], f32>\n}\n";
  float a[3] = {1, NAN, -0.0f}, b[3] = {NAN, 2, 0.0f};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 1, SHAPE(3)), tn(IR_DT_F32, b, 1, SHAPE(3))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){NAN, NAN, 0.0f}, 3, 0);
  expect_f32(&OUT[1], (const float[]){NAN, NAN, -0.0f}, 3, 0);
  free_out(2);
}

Test(interp, mod_follows_divisor_sign_for_ints) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[5], si32>, %b: !mo.tensor<[5], si32>) -> "
                  "(!mo.tensor<[5], si32>) {\n"
                  "  %r = mo.mod(%a, %b) : !mo.tensor<[5], si32>\n"
                  "  mo.output %r : !mo.tensor<[5], si32>\n}\n";
  int32_t a[5] = {7, -7, 7, -7, INT32_MIN}, b[5] = {3, 3, -3, -3, -1};
  ir_tensor in[2] = {tn(IR_DT_SI32, a, 1, SHAPE(5)), tn(IR_DT_SI32, b, 1, SHAPE(5))};
  run_ok(g, in);
  expect_i32(&OUT[0], (const int32_t[]){1, 2, -2, -1, 0}, 5);
  free_out(1);
}

Test(interp, mod_int64_min_by_minus_one_is_zero) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[1], si64>, %b: !mo.tensor<[1], si64>) -> "
                  "(!mo.tensor<[1], si64>) {\n"
                  "  %r = mo.mod(%a, %b) : !mo.tensor<[1], si64>\n"
                  "  mo.output %r : !mo.tensor<[1], si64>\n}\n";
  int64_t a[1] = {INT64_MIN}, b[1] = {-1};
  ir_tensor in[2] = {tn(IR_DT_SI64, a, 1, SHAPE(1)), tn(IR_DT_SI64, b, 1, SHAPE(1))};
  run_ok(g, in);
  expect_i64(&OUT[0], (const int64_t[]){0}, 1);
  free_out(1);
}

Test(interp, mod_follows_divisor_sign_for_floats) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[5], f32>, %b: !mo.tensor<[5], f32>) -> "
                  "(!mo.tensor<[5], f32>) {\n"
                  "  %r = mo.mod(%a, %b) : !mo.tensor<[5], f32>\n"
                  "  mo.output %r : !mo.tensor<[5], f32>\n}\n";
  float a[5] = {7.5f, -7.5f, 7.5f, -7.5f, 4.0f}, b[5] = {2, 2, -2, -2, -2};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 1, SHAPE(5)), tn(IR_DT_F32, b, 1, SHAPE(5))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){1.5f, 0.5f, -0.5f, -1.5f, -0.0f}, 5, 0);
  free_out(1);
}

Test(interp, integer_mod_by_zero_is_an_error) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[2], si64>, %b: !mo.tensor<[2], si64>) -> "
                  "(!mo.tensor<[2], si64>) {\n"
                  "  %r = mo.mod(%a, %b) : !mo.tensor<[2], si64>\n"
                  "  mo.output %r : !mo.tensor<[2], si64>\n}\n";
  int64_t a[2] = {1, 2}, b[2] = {1, 0};
  ir_tensor in[2] = {tn(IR_DT_SI64, a, 1, SHAPE(2)), tn(IR_DT_SI64, b, 1, SHAPE(2))};
  run_err(g, in, "mo.mod (%r): integer division by zero");
}

Test(interp, compare_where_and_logic) {
  /* m = a > b; w = where(m, a, b) is max; n = not m; o = m xor (a == b) */
  const char *g =
      "mo.graph @g(%a: !mo.tensor<[4], f32>, %b: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>, "
      "!mo.tensor<[4], bool>, !mo.tensor<[4], bool>, !mo.tensor<[4], bool>) {\n"
      "  %m = mo.greater(%a, %b) : (!mo.tensor<[4], f32>, !mo.tensor<[4], f32>) -> "
      "!mo.tensor<[4], bool>\n"
      "  %e = mo.equal(%a, %b) : (!mo.tensor<[4], f32>, !mo.tensor<[4], f32>) -> "
      "!mo.tensor<[4], bool>\n"
      "  %w = mo.where(%m, %a, %b) : (!mo.tensor<[4], bool>, !mo.tensor<[4], f32>, "
      "!mo.tensor<[4], f32>) -> !mo.tensor<[4], f32>\n"
      "  %n = mo.logical_not(%m) : !mo.tensor<[4], bool>\n"
      "  %o = mo.logical_xor(%m, %e) : !mo.tensor<[4], bool>\n"
      "  %p = mo.is_nan(%a) : (!mo.tensor<[4], f32>) -> !mo.tensor<[4], bool>\n"
      "  mo.output %w, %n, %o, %p : !mo.tensor<[4], f32>, !mo.tensor<[4], bool>, "
      "!mo.tensor<[4], bool>, !mo.tensor<[4], bool>\n}\n";
  float a[4] = {1, 5, 3, NAN}, b[4] = {2, 4, 3, 0};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 1, SHAPE(4)), tn(IR_DT_F32, b, 1, SHAPE(4))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){2, 5, 3, 0}, 4, 0);
  expect_bool(&OUT[1], (const uint8_t[]){1, 0, 1, 1}, 4);
  expect_bool(&OUT[2], (const uint8_t[]){0, 1, 1, 0}, 4);
  expect_bool(&OUT[3], (const uint8_t[]){0, 0, 0, 1}, 4);
  free_out(4);
}

/* ---- cast ---- */

Test(interp, cast_f32_to_si32_truncates_and_saturates) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[8], f32>) -> (!mo.tensor<[8], si32>) {\n"
                  "  %0 = mo.cast(%x) {dtype = si32} : (!mo.tensor<[8], f32>) -> "
                  "!mo.tensor<[8], si32>\n"
                  "  mo.output %0 : !mo.tensor<[8], si32>\n}\n";
  float x[8] = {1.9f, -1.9f, 3e9f, -3e9f, NAN, INFINITY, -INFINITY, -0.5f};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(8));
  run_ok(g, &in);
  expect_i32(&OUT[0], (const int32_t[]){1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 0},
             8);
  free_out(1);
}

Test(interp, cast_f32_to_si64_saturates_at_int64_range) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], si64>) {\n"
                  "  %0 = mo.cast(%x) {dtype = si64} : (!mo.tensor<[3], f32>) -> "
                  "!mo.tensor<[3], si64>\n"
                  "  mo.output %0 : !mo.tensor<[3], si64>\n}\n";
  float x[3] = {1e19f, -1e19f, -9.2233720e18f}; /* the last is exactly -2^63 */
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(3));
  run_ok(g, &in);
  expect_i64(&OUT[0], (const int64_t[]){INT64_MAX, INT64_MIN, INT64_MIN}, 3);
  free_out(1);
}

Test(interp, cast_f32_to_f16_rounds_to_nearest_even) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[10], f32>) -> (!mo.tensor<[10], f16>) {\n"
                  "  %0 = mo.cast(%x) {dtype = f16} : (!mo.tensor<[10], f32>) -> "
                  "!mo.tensor<[10], f16>\n"
                  "  mo.output %0 : !mo.tensor<[10], f16>\n}\n";
  /* 65520 is halfway between 65504 (max) and 65536: ties to even -> inf.
   * 2^-25 is halfway between 0 and 2^-24: even -> 0; 3 * 2^-26 rounds up.
   * 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even -> 1. */
  float x[10] = {1.0f, 65504.0f, 65520.0f, 0x1p-24f, 0x1p-25f, 0x3p-26f,
                 -2.0f, 1.0f / 3.0f, 1.0f + 0x1p-11f, NAN};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(10));
  run_ok(g, &in);
  expect_u16(&OUT[0], IR_DT_F16,
             (const uint16_t[]){0x3c00, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0001, 0xc000, 0x3555,
                                0x3c00, 0x7e00},
             10);
  free_out(1);
}

Test(interp, cast_f32_to_bf16_rounds_to_nearest_even) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[6], f32>) -> (!mo.tensor<[6], bf16>) {\n"
                  "  %0 = mo.cast(%x) {dtype = bf16} : (!mo.tensor<[6], f32>) -> "
                  "!mo.tensor<[6], bf16>\n"
                  "  mo.output %0 : !mo.tensor<[6], bf16>\n}\n";
  /* 1 + 2^-8 is a tie -> 1.0; 1 + 3 * 2^-8 is a tie -> 1 + 2^-6 (even mantissa) */
  float x[6] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, -INFINITY, 3.0f, 0x1.fffffep127f};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(6));
  run_ok(g, &in);
  expect_u16(&OUT[0], IR_DT_BF16,
             (const uint16_t[]){0x3f80, 0x3f80, 0x3f82, 0xff80, 0x4040, 0x7f80}, 6);
  free_out(1);
}

Test(interp, cast_f16_to_f32_is_exact) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[5], f16>) -> (!mo.tensor<[5], f32>) {\n"
                  "  %0 = mo.cast(%x) {dtype = f32} : (!mo.tensor<[5], f16>) -> "
                  "!mo.tensor<[5], f32>\n"
                  "  mo.output %0 : !mo.tensor<[5], f32>\n}\n";
  uint16_t x[5] = {0x3c00, 0x0001, 0x7bff, 0xfc00, 0x3555};
  ir_tensor in = tn(IR_DT_F16, x, 1, SHAPE(5));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){1.0f, 0x1p-24f, 65504.0f, -INFINITY, 0.333251953125f}, 5,
             0);
  free_out(1);
}

Test(interp, cast_int_to_bool_and_bool_to_float) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[3], si64>) -> (!mo.tensor<[3], f32>) {\n"
                  "  %b = mo.cast(%x) {dtype = bool} : (!mo.tensor<[3], si64>) -> "
                  "!mo.tensor<[3], bool>\n"
                  "  %f = mo.cast(%b) {dtype = f32} : (!mo.tensor<[3], bool>) -> "
                  "!mo.tensor<[3], f32>\n"
                  "  mo.output %f : !mo.tensor<[3], f32>\n}\n";
  int64_t x[3] = {0, -7, 256};
  ir_tensor in = tn(IR_DT_SI64, x, 1, SHAPE(3));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){0, 1, 1}, 3, 0);
  free_out(1);
}

Test(interp, cast_int64_rounds_once_to_bf16_and_f16) {
  /* 2^40 + 2^32 + 1 is just above the midpoint of bf16 neighbours 2^40 and
   * 2^40 + 2^33: it must round up (via f32 it would tie and round down). */
  const char *g = "mo.graph @g(%x: !mo.tensor<[3], si64>) -> (!mo.tensor<[3], bf16>, "
                  "!mo.tensor<[3], f16>, !mo.tensor<[3], ui8>) {\n"
                  "  %b = mo.cast(%x) {dtype = bf16} : (!mo.tensor<[3], si64>) -> "
                  "!mo.tensor<[3], bf16>\n"
                  "  %h = mo.cast(%x) {dtype = f16} : (!mo.tensor<[3], si64>) -> "
                  "!mo.tensor<[3], f16>\n"
                  "  %u = mo.cast(%x) {dtype = ui8} : (!mo.tensor<[3], si64>) -> "
                  "!mo.tensor<[3], ui8>\n"
                  "  mo.output %b, %h, %u : !mo.tensor<[3], bf16>, !mo.tensor<[3], f16>, "
                  "!mo.tensor<[3], ui8>\n}\n";
  int64_t x[3] = {(1LL << 40) + (1LL << 32) + 1, -70000, 300};
  ir_tensor in = tn(IR_DT_SI64, x, 1, SHAPE(3));
  run_ok(g, &in);
  expect_u16(&OUT[0], IR_DT_BF16, (const uint16_t[]){0x5381, 0xc789, 0x4396}, 3);
  expect_u16(&OUT[1], IR_DT_F16, (const uint16_t[]){0x7c00, 0xfc00, 0x5cb0}, 3);
  const uint8_t *u = OUT[2].data;
  cr_assert_eq(u[0], 1);   /* low byte of 2^40 + 2^32 + 1 */
  cr_assert_eq(u[1], 144); /* -70000 mod 256 */
  cr_assert_eq(u[2], 44);
  free_out(3);
}

Test(interp, f64_ops_compute_in_double) {
  const char *g = "mo.graph @g(%a: !mo.tensor<[2, 2], f64>, %b: !mo.tensor<[2, 2], f64>) -> "
                  "(!mo.tensor<[2, 2], f64>, !mo.tensor<[2, 1], f64>, "
                  "!mo.tensor<[2, 2], f64>) {\n"
                  "  %m = mo.matmul(%a, %b) : (!mo.tensor<[2, 2], f64>, "
                  "!mo.tensor<[2, 2], f64>) -> !mo.tensor<[2, 2], f64>\n"
                  "  %s = mo.sum(%a) : (!mo.tensor<[2, 2], f64>) -> !mo.tensor<[2, 1], f64>\n"
                  "  %d = mo.div(%a, %b) : !mo.tensor<[2, 2], f64>\n"
                  "  mo.output %m, %s, %d : !mo.tensor<[2, 2], f64>, !mo.tensor<[2, 1], f64>, "
                  "!mo.tensor<[2, 2], f64>\n}\n";
  double a[4] = {1, 0.25, 2, 3}, b[4] = {1, 0, 0, 3};
  ir_tensor in[2] = {tn(IR_DT_F64, a, 2, SHAPE(2, 2)), tn(IR_DT_F64, b, 2, SHAPE(2, 2))};
  run_ok(g, in);
  const double *m = OUT[0].data, *s = OUT[1].data, *d = OUT[2].data;
  cr_assert_eq(OUT[0].dtype, IR_DT_F64);
  cr_assert(m[0] == 1 && m[1] == 0.75 && m[2] == 2 && m[3] == 9);
  cr_assert(s[0] == 1.25 && s[1] == 5);
  cr_assert(d[0] == 1 && isinf(d[1]) && isinf(d[2]) && d[3] == 1);
  free_out(3);
}

/* ---- matmul ---- */

Test(interp, matmul_2x3_by_3x2) {
  /* [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]] */
  const char *g = "mo.graph @g(%a: !mo.tensor<[2, 3], f32>, %b: !mo.tensor<[3, 2], f32>) -> "
                  "(!mo.tensor<[2, 2], f32>) {\n"
                  "  %0 = mo.matmul(%a, %b) : (!mo.tensor<[2, 3], f32>, !mo.tensor<[3, 2], f32>) "
                  "-> !mo.tensor<[2, 2], f32>\n"
                  "  mo.output %0 : !mo.tensor<[2, 2], f32>\n}\n";
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 2, SHAPE(2, 3)), tn(IR_DT_F32, b, 2, SHAPE(3, 2))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){58, 64, 139, 154}, 4, 0);
  free_out(1);
}

Test(interp, matmul_broadcasts_batch_dims) {
  /* batch 0 is I, batch 1 is 2I; b is shared: results b and 2b */
  const char *g = "mo.graph @g(%a: !mo.tensor<[2, 2, 2], f32>, %b: !mo.tensor<[2, 2], f32>) -> "
                  "(!mo.tensor<[2, 2, 2], f32>) {\n"
                  "  %0 = mo.matmul(%a, %b) : (!mo.tensor<[2, 2, 2], f32>, !mo.tensor<[2, 2], "
                  "f32>) -> !mo.tensor<[2, 2, 2], f32>\n"
                  "  mo.output %0 : !mo.tensor<[2, 2, 2], f32>\n}\n";
  float a[8] = {1, 0, 0, 1, 2, 0, 0, 2}, b[4] = {1, 2, 3, 4};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 3, SHAPE(2, 2, 2)), tn(IR_DT_F32, b, 2, SHAPE(2, 2))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){1, 2, 3, 4, 2, 4, 6, 8}, 8, 0);
  free_out(1);
}

/* ---- reductions ---- */

Test(interp, sum_mean_max_along_axes) {
  const char *g =
      "mo.graph @g(%x: !mo.tensor<[2, 3], f32>) -> (!mo.tensor<[1, 3], f32>, "
      "!mo.tensor<[2, 1], f32>, !mo.tensor<[2, 1], f32>, !mo.tensor<[1, 3], f32>) {\n"
      "  %s = mo.sum(%x) {axis = 0} : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[1, 3], f32>\n"
      "  %m = mo.mean(%x) {axis = -1} : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[2, 1], f32>\n"
      "  %x1 = mo.max(%x) {axis = 1} : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[2, 1], f32>\n"
      "  %n0 = mo.min(%x) {axis = 0} : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[1, 3], f32>\n"
      "  mo.output %s, %m, %x1, %n0 : !mo.tensor<[1, 3], f32>, !mo.tensor<[2, 1], f32>, "
      "!mo.tensor<[2, 1], f32>, !mo.tensor<[1, 3], f32>\n}\n";
  float x[6] = {1, 2, 3, 4, 5, NAN};
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(2, 3));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){5, 7, NAN}, 3, 0);
  expect_f32(&OUT[1], (const float[]){2, NAN}, 2, 0);
  expect_f32(&OUT[2], (const float[]){3, NAN}, 2, 0);
  expect_f32(&OUT[3], (const float[]){1, 2, NAN}, 3, 0);
  free_out(4);
}

Test(interp, integer_sum_wraps) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[3], si32>) -> (!mo.tensor<[1], si32>) {\n"
                  "  %s = mo.sum(%x) : (!mo.tensor<[3], si32>) -> !mo.tensor<[1], si32>\n"
                  "  mo.output %s : !mo.tensor<[1], si32>\n}\n";
  int32_t x[3] = {INT32_MAX, 1, 5};
  ir_tensor in = tn(IR_DT_SI32, x, 1, SHAPE(3));
  run_ok(g, &in);
  expect_i32(&OUT[0], (const int32_t[]){INT32_MIN + 5}, 1);
  free_out(1);
}

Test(interp, argmax_ties_choose_first) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[2, 3], f32>) -> (!mo.tensor<[2, 1], si64>, "
                  "!mo.tensor<[2, 1], si64>) {\n"
                  "  %a = mo.argmax(%x) : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[2, 1], si64>\n"
                  "  %b = mo.argmin(%x) {axis = 1} : (!mo.tensor<[2, 3], f32>) -> "
                  "!mo.tensor<[2, 1], si64>\n"
                  "  mo.output %a, %b : !mo.tensor<[2, 1], si64>, !mo.tensor<[2, 1], si64>\n}\n";
  float x[6] = {1, 3, 3, 5, 5, 5};
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(2, 3));
  run_ok(g, &in);
  expect_i64(&OUT[0], (const int64_t[]){1, 0}, 2);
  expect_i64(&OUT[1], (const int64_t[]){0, 0}, 2);
  free_out(2);
}

Test(interp, argmax_and_argmin_pick_the_first_nan) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[1], si64>, "
                  "!mo.tensor<[1], si64>) {\n"
                  "  %a = mo.argmax(%x) : (!mo.tensor<[4], f32>) -> !mo.tensor<[1], si64>\n"
                  "  %b = mo.argmin(%x) : (!mo.tensor<[4], f32>) -> !mo.tensor<[1], si64>\n"
                  "  mo.output %a, %b : !mo.tensor<[1], si64>, !mo.tensor<[1], si64>\n}\n";
  float x[4] = {1, NAN, 5, NAN};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(4));
  run_ok(g, &in);
  expect_i64(&OUT[0], (const int64_t[]){1}, 1);
  expect_i64(&OUT[1], (const int64_t[]){1}, 1);
  free_out(2);
}

Test(interp, reductions_over_an_empty_axis) {
  const char *g = "mo.graph @g<n>(%x: !mo.tensor<[2, n], f32>) -> (!mo.tensor<[2, 1], f32>, "
                  "!mo.tensor<[2, 1], f32>, !mo.tensor<[2, 1], f32>, !mo.tensor<[2, 1], si64>) {\n"
                  "  %a = mo.max(%x) : (!mo.tensor<[2, n], f32>) -> !mo.tensor<[2, 1], f32>\n"
                  "  %b = mo.sum(%x) : (!mo.tensor<[2, n], f32>) -> !mo.tensor<[2, 1], f32>\n"
                  "  %c = mo.mean(%x) : (!mo.tensor<[2, n], f32>) -> !mo.tensor<[2, 1], f32>\n"
                  "  %d = mo.argmax(%x) : (!mo.tensor<[2, n], f32>) -> !mo.tensor<[2, 1], si64>\n"
                  "  mo.output %a, %b, %c, %d : !mo.tensor<[2, 1], f32>, !mo.tensor<[2, 1], f32>, "
                  "!mo.tensor<[2, 1], f32>, !mo.tensor<[2, 1], si64>\n}\n";
  float dummy;
  ir_tensor in = tn(IR_DT_F32, &dummy, 2, SHAPE(2, 0));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){-INFINITY, -INFINITY}, 2, 0);
  expect_f32(&OUT[1], (const float[]){0, 0}, 2, 0);
  expect_f32(&OUT[2], (const float[]){NAN, NAN}, 2, 0);
  expect_i64(&OUT[3], (const int64_t[]){0, 0}, 2);
  free_out(4);
}

/* ---- normalizations ---- */

Test(interp, softmax_and_logsoftmax_values) {
  /* softmax([1, 2, 3]) = [0.09003057, 0.24472847, 0.66524096] */
  const char *g = "mo.graph @g(%x: !mo.tensor<[2, 3], f32>) -> (!mo.tensor<[2, 3], f32>, "
                  "!mo.tensor<[2, 3], f32>) {\n"
                  "  %s = mo.softmax(%x) : !mo.tensor<[2, 3], f32>\n"
                  "  %l = mo.logsoftmax(%x) {axis = -1} : !mo.tensor<[2, 3], f32>\n"
                  "  mo.output %s, %l : !mo.tensor<[2, 3], f32>, !mo.tensor<[2, 3], f32>\n}\n";
  float x[6] = {1, 2, 3, 1000, 1000, 1000}; /* the second row needs the max subtracted */
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(2, 3));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f,
                                      1 / 3.0f},
             6, 1e-7f);
  const float *s = OUT[0].data;
  cr_assert_float_eq(s[0] + s[1] + s[2], 1.0f, 1e-6f);
  expect_f32(&OUT[1], (const float[]){-2.40760596f, -1.40760596f, -0.40760596f, -1.09861229f,
                                      -1.09861229f, -1.09861229f},
             6, 1e-6f);
  free_out(2);
}

Test(interp, softmax_along_axis_zero) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[2, 2], f32>) -> (!mo.tensor<[2, 2], f32>) {\n"
                  "  %s = mo.softmax(%x) {axis = 0} : !mo.tensor<[2, 2], f32>\n"
                  "  mo.output %s : !mo.tensor<[2, 2], f32>\n}\n";
  float x[4] = {0, 5, 0, 5};
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(2, 2));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){0.5f, 0.5f, 0.5f, 0.5f}, 4, 0);
  free_out(1);
}

Test(interp, layer_norm_values) {
  /* x = [1, 2, 3, 4]: mean 2.5, biased variance 1.25, (x - mean) / sqrt(1.25 + 1e-5)
   * = [-1.3416355, -0.4472118, 0.4472118, 1.3416355]; gamma [1, 1, 2, 2], beta
   * [0, 0, 1, -1] */
  const char *g = "mo.graph @g(%x: !mo.tensor<[1, 4], f32>, %ga: !mo.tensor<[4], f32>, "
                  "%be: !mo.tensor<[4], f32>) -> (!mo.tensor<[1, 4], f32>) {\n"
                  "  %n = mo.layer_norm(%x, %ga, %be) {epsilon = 1.0e-5} : (!mo.tensor<[1, 4], "
                  "f32>, !mo.tensor<[4], f32>, !mo.tensor<[4], f32>) -> !mo.tensor<[1, 4], f32>\n"
                  "  mo.output %n : !mo.tensor<[1, 4], f32>\n}\n";
  float x[4] = {1, 2, 3, 4}, ga[4] = {1, 1, 2, 2}, be[4] = {0, 0, 1, -1};
  ir_tensor in[3] = {tn(IR_DT_F32, x, 2, SHAPE(1, 4)), tn(IR_DT_F32, ga, 1, SHAPE(4)),
                     tn(IR_DT_F32, be, 1, SHAPE(4))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){-1.3416355f, -0.4472118f, 1.8944236f, 1.6832710f}, 4, 2e-6f);
  free_out(1);
}

/* ---- data movement ---- */

Test(interp, transpose_and_permute) {
  const char *g =
      "mo.graph @g(%x: !mo.tensor<[2, 3, 4], si32>) -> (!mo.tensor<[2, 4, 3], si32>, "
      "!mo.tensor<[4, 2, 3], si32>) {\n"
      "  %t = mo.transpose(%x) {axis_1 = -1, axis_2 = 1} : (!mo.tensor<[2, 3, 4], si32>) -> "
      "!mo.tensor<[2, 4, 3], si32>\n"
      "  %p = mo.permute(%x) {dims = [2, 0, 1]} : (!mo.tensor<[2, 3, 4], si32>) -> "
      "!mo.tensor<[4, 2, 3], si32>\n"
      "  mo.output %t, %p : !mo.tensor<[2, 4, 3], si32>, !mo.tensor<[4, 2, 3], si32>\n}\n";
  int32_t x[24];
  for (int i = 0; i < 24; i++) x[i] = i;
  ir_tensor in = tn(IR_DT_SI32, x, 3, SHAPE(2, 3, 4));
  run_ok(g, &in);
  const int32_t *t = OUT[0].data, *p = OUT[1].data;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++) {
        cr_assert_eq(t[(i * 4 + k) * 3 + j], x[(i * 3 + j) * 4 + k]);
        cr_assert_eq(p[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
      }
  free_out(2);
}

Test(interp, broadcast_to_reshape_squeeze_unsqueeze) {
  const char *g =
      "mo.graph @g(%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[2, 3], f32>, "
      "!mo.tensor<[3, 2], f32>, !mo.tensor<[1, 3], f32>, !mo.tensor<[3], f32>) {\n"
      "  %b = mo.broadcast_to(%x) : (!mo.tensor<[3], f32>) -> !mo.tensor<[2, 3], f32>\n"
      "  %r = mo.reshape(%b) : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[3, 2], f32>\n"
      "  %u = mo.unsqueeze(%x) {axis = 0} : (!mo.tensor<[3], f32>) -> !mo.tensor<[1, 3], f32>\n"
      "  %s = mo.squeeze(%u) {axis = 0} : (!mo.tensor<[1, 3], f32>) -> !mo.tensor<[3], f32>\n"
      "  mo.output %b, %r, %u, %s : !mo.tensor<[2, 3], f32>, !mo.tensor<[3, 2], f32>, "
      "!mo.tensor<[1, 3], f32>, !mo.tensor<[3], f32>\n}\n";
  float x[3] = {1, 2, 3};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(3));
  run_ok(g, &in);
  expect_f32(&OUT[0], (const float[]){1, 2, 3, 1, 2, 3}, 6, 0);
  expect_shape(&OUT[1], 2, SHAPE(3, 2));
  expect_f32(&OUT[1], (const float[]){1, 2, 3, 1, 2, 3}, 6, 0);
  expect_shape(&OUT[2], 2, SHAPE(1, 3));
  expect_f32(&OUT[3], (const float[]){1, 2, 3}, 3, 0);
  free_out(4);
}

Test(interp, split_concat_round_trip) {
  char *text = example("split_concat.mlir");
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(2, 6));
  run_ok(text, &in);
  /* a = columns 0..1, b = columns 2..5; y = concat(b, a); i = cast(b) */
  expect_shape(&OUT[0], 2, SHAPE(2, 6));
  expect_f32(&OUT[0], (const float[]){2, 3, 4, 5, 0, 1, 8, 9, 10, 11, 6, 7}, 12, 0);
  expect_i64(&OUT[1], (const int64_t[]){2, 3, 4, 5, 8, 9, 10, 11}, 8);
  free_out(2);
  free(text);
}

Test(interp, split_then_concat_in_order_is_identity) {
  const char *g =
      "mo.graph @g(%x: !mo.tensor<[5, 2], si64>) -> (!mo.tensor<[5, 2], si64>) {\n"
      "  %a, %b, %c = mo.split(%x) {split_sizes = [1, 0, 4]} : (!mo.tensor<[5, 2], si64>) -> "
      "(!mo.tensor<[1, 2], si64>, !mo.tensor<[0, 2], si64>, !mo.tensor<[4, 2], si64>)\n"
      "  %y = mo.concat(%a, %b, %c) {axis = 0} : (!mo.tensor<[1, 2], si64>, "
      "!mo.tensor<[0, 2], si64>, !mo.tensor<[4, 2], si64>) -> !mo.tensor<[5, 2], si64>\n"
      "  mo.output %y : !mo.tensor<[5, 2], si64>\n}\n";
  int64_t x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ir_tensor in = tn(IR_DT_SI64, x, 2, SHAPE(5, 2));
  run_ok(g, &in);
  expect_i64(&OUT[0], x, 10);
  free_out(1);
}

Test(interp, slice_with_steps) {
  /* x = 0..5: [1:6:2] = [1, 3, 5]; [4:0:-2] = [4, 2]; [::-1] reversed;
   * [-2:] = [4, 5] */
  const char *g =
      "mo.graph @g(%x: !mo.tensor<[6], si32>) -> (!mo.tensor<[3], si32>, !mo.tensor<[2], si32>, "
      "!mo.tensor<[6], si32>, !mo.tensor<[2], si32>) {\n"
      "  %a = mo.slice_tensor(%x) {start = [1], step = [2], stop = [6]} : (!mo.tensor<[6], si32>) "
      "-> !mo.tensor<[3], si32>\n"
      "  %b = mo.slice_tensor(%x) {start = [4], step = [-2], stop = [0]} : "
      "(!mo.tensor<[6], si32>) -> !mo.tensor<[2], si32>\n"
      "  %c = mo.slice_tensor(%x) {start = [-9223372036854775808], step = [-1], "
      "stop = [9223372036854775807]} : (!mo.tensor<[6], si32>) -> !mo.tensor<[6], si32>\n"
      "  %d = mo.slice_tensor(%x) {start = [-2], step = [1], stop = [9223372036854775807]} : "
      "(!mo.tensor<[6], si32>) -> !mo.tensor<[2], si32>\n"
      "  mo.output %a, %b, %c, %d : !mo.tensor<[3], si32>, !mo.tensor<[2], si32>, "
      "!mo.tensor<[6], si32>, !mo.tensor<[2], si32>\n}\n";
  int32_t x[6] = {0, 1, 2, 3, 4, 5};
  ir_tensor in = tn(IR_DT_SI32, x, 1, SHAPE(6));
  run_ok(g, &in);
  expect_i32(&OUT[0], (const int32_t[]){1, 3, 5}, 3);
  expect_i32(&OUT[1], (const int32_t[]){4, 2}, 2);
  expect_i32(&OUT[2], (const int32_t[]){5, 4, 3, 2, 1, 0}, 6);
  expect_i32(&OUT[3], (const int32_t[]){4, 5}, 2);
  free_out(4);
}

Test(interp, slice_two_axes_leaves_the_rest_whole) {
  /* x = arange(24) as [3, 4, 2]: rows 0 and 2, columns 1 and 3, all of axis 2 */
  const char *g = "mo.graph @g(%x: !mo.tensor<[3, 4, 2], si32>) -> "
                  "(!mo.tensor<[2, 2, 2], si32>) {\n"
                  "  %a = mo.slice_tensor(%x) {start = [0, 1], step = [2, 2], stop = [3, 4]} : "
                  "(!mo.tensor<[3, 4, 2], si32>) -> !mo.tensor<[2, 2, 2], si32>\n"
                  "  mo.output %a : !mo.tensor<[2, 2, 2], si32>\n}\n";
  int32_t x[24];
  for (int i = 0; i < 24; i++) x[i] = i;
  ir_tensor in = tn(IR_DT_SI32, x, 3, SHAPE(3, 4, 2));
  run_ok(g, &in);
  expect_i32(&OUT[0], (const int32_t[]){2, 3, 6, 7, 18, 19, 22, 23}, 8);
  free_out(1);
}

Test(interp, slice_of_a_symbolic_dim) {
  /* x[1:-1:2] on n elements: (n - 2) ceildiv 2 results; n = 6 gives [1, 3] */
  const char *g = "mo.graph @g<n>(%x: !mo.tensor<[n], si64>) -> "
                  "(!mo.tensor<[(n - 2) ceildiv 2], si64>) {\n"
                  "  %a = mo.slice_tensor(%x) {start = [1], step = [2], stop = [-1]} : "
                  "(!mo.tensor<[n], si64>) -> !mo.tensor<[(n - 2) ceildiv 2], si64>\n"
                  "  mo.output %a : !mo.tensor<[(n - 2) ceildiv 2], si64>\n}\n";
  int64_t x[7] = {0, 1, 2, 3, 4, 5, 6};
  ir_tensor in = tn(IR_DT_SI64, x, 1, SHAPE(6));
  run_ok(g, &in);
  expect_i64(&OUT[0], (const int64_t[]){1, 3}, 2);
  free_out(1);
  in.shape[0] = 7; /* [1, 3, 5] */
  run_ok(g, &in);
  expect_i64(&OUT[0], (const int64_t[]){1, 3, 5}, 3);
  free_out(1);
  in.shape[0] = 1; /* stop 0 < start 1: a run-time check fails */
  cr_assert_neq(run(g, &in), 0);
  cr_assert(strncmp(MSG, "mo.slice_tensor (line 2): ", 26) == 0, "message: %s", MSG);
}

Test(interp, gather_with_negative_index) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[3, 2], f32>, %i: !mo.tensor<[2], si64>) -> "
                  "(!mo.tensor<[2, 2], f32>) {\n"
                  "  %g = mo.gather(%x, %i) {axis = 0} : (!mo.tensor<[3, 2], f32>, "
                  "!mo.tensor<[2], si64>) -> !mo.tensor<[2, 2], f32>\n"
                  "  mo.output %g : !mo.tensor<[2, 2], f32>\n}\n";
  float x[6] = {10, 11, 20, 21, 30, 31};
  int64_t idx[2] = {-1, 0};
  ir_tensor in[2] = {tn(IR_DT_F32, x, 2, SHAPE(3, 2)), tn(IR_DT_SI64, idx, 1, SHAPE(2))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){30, 31, 10, 11}, 4, 0);
  free_out(1);
}

Test(interp, gather_along_last_axis_with_si32_indices) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[2, 3], f32>, %i: !mo.tensor<[2, 2], si32>) -> "
                  "(!mo.tensor<[2, 2, 2], f32>) {\n"
                  "  %g = mo.gather(%x, %i) : (!mo.tensor<[2, 3], f32>, !mo.tensor<[2, 2], si32>) "
                  "-> !mo.tensor<[2, 2, 2], f32>\n"
                  "  mo.output %g : !mo.tensor<[2, 2, 2], f32>\n}\n";
  float x[6] = {0, 1, 2, 10, 11, 12};
  int32_t idx[4] = {2, 0, -2, 1};
  ir_tensor in[2] = {tn(IR_DT_F32, x, 2, SHAPE(2, 3)), tn(IR_DT_SI32, idx, 2, SHAPE(2, 2))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){2, 0, 1, 1, 12, 10, 11, 11}, 8, 0);
  free_out(1);
}

Test(interp, gather_index_out_of_range_is_an_error) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[5], f32>, %i: !mo.tensor<[2], si64>) -> "
                  "(!mo.tensor<[2], f32>) {\n"
                  "  %e = mo.exp(%x) : !mo.tensor<[5], f32>\n"
                  "  %g = mo.gather(%e, %i) {axis = 0} : (!mo.tensor<[5], f32>, "
                  "!mo.tensor<[2], si64>) -> !mo.tensor<[2], f32>\n"
                  "  mo.output %g : !mo.tensor<[2], f32>\n}\n";
  float x[5] = {0};
  int64_t idx[2] = {1, 7};
  ir_tensor in[2] = {tn(IR_DT_F32, x, 1, SHAPE(5)), tn(IR_DT_SI64, idx, 1, SHAPE(2))};
  run_err(g, in, "mo.gather (%g): index 7 out of range for axis 0 of size 5");
  idx[1] = -6;
  run_err(g, in, "mo.gather (%g): index -6 out of range for axis 0 of size 5");
}

/* ---- symbols, inputs and weights ---- */

typedef struct mlp_weights {
  float w1[784 * 512], b1[512], w2[512 * 10], b2[10];
  wbind bind[5];
} mlp_weights;

static mlp_weights *mlp_new(void) {
  mlp_weights *m = calloc(1, sizeof *m);
  cr_assert_not_null(m);
  for (int i = 0; i < 784 * 512; i++) m->w1[i] = 0.001f;
  for (int i = 0; i < 512 * 10; i++) m->w2[i] = 0.01f;
  for (int i = 0; i < 10; i++) m->b2[i] = 0.5f;
  m->bind[0] = (wbind){"fc1.weight", tn(IR_DT_F32, m->w1, 2, SHAPE(784, 512))};
  m->bind[1] = (wbind){"fc1.bias", tn(IR_DT_F32, m->b1, 1, SHAPE(512))};
  m->bind[2] = (wbind){"fc2.weight", tn(IR_DT_F32, m->w2, 2, SHAPE(512, 10))};
  m->bind[3] = (wbind){"fc2.bias", tn(IR_DT_F32, m->b2, 1, SHAPE(10))};
  return m;
}

Test(interp, mlp_solves_batch_from_the_input) {
  char *text = example("mlp.mlir");
  mlp_weights *m = mlp_new();
  float *x = malloc(3 * 784 * sizeof *x);
  for (int i = 0; i < 3 * 784; i++) x[i] = 1.0f;
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(3, 784));
  int rc = run_w(text, &in, m->bind);
  cr_assert_eq(rc, 0, "%s", MSG);
  expect_shape(&OUT[0], 2, SHAPE(3, 10));
  /* hidden = 784 * 0.001 = 0.784; out = 512 * 0.784 * 0.01 + 0.5 = 4.51408 */
  float want[30];
  for (int i = 0; i < 30; i++) want[i] = 4.51408f;
  expect_f32(&OUT[0], want, 30, 1e-5f);
  free_out(1);
  free(x);
  free(m);
  free(text);
}

/* the interpreter refuses a weight whose data is not at a multiple of its
 * align, as kiln_model_bind_weight does */
Test(interp, weight_align_is_checked) {
  const char *text = "mo.graph @g() -> (!mo.tensor<[2], f32>) {\n"
                     "  %w = mo.constant.external {align = 16, name = \"w\"} : "
                     "!mo.tensor<[2], f32>\n  %y = mo.negate(%w) : !mo.tensor<[2], f32>\n"
                     "  mo.output %y : !mo.tensor<[2], f32>\n}\n";
  float *buf = aligned_alloc(16, 64);
  cr_assert(buf);
  buf[1] = buf[2] = 3.0f;
  wbind w[2] = {{"w", tn(IR_DT_F32, buf + 1, 1, SHAPE(2))}};
  cr_assert_neq(run_w(text, NULL, w), 0);
  cr_assert(strstr(MSG, "weight 'w': its data at ") &&
                strstr(MSG, " is not aligned to 16 bytes (its align)"),
            "%s", MSG);
  w[0].t.data = buf + 4;
  buf[4] = buf[5] = 2.0f;
  cr_assert_eq(run_w(text, NULL, w), 0, "%s", MSG);
  expect_f32(&OUT[0], (const float[]){-2, -2}, 2, 0);
  free_out(1);
  free(buf);
}

Test(interp, mlp_runs_with_batch_zero) {
  char *text = example("mlp.mlir");
  mlp_weights *m = mlp_new();
  ir_tensor in = tn(IR_DT_F32, NULL, 2, SHAPE(0, 784));
  int rc = run_w(text, &in, m->bind);
  cr_assert_eq(rc, 0, "%s", MSG);
  expect_shape(&OUT[0], 2, SHAPE(0, 10));
  cr_assert_not_null(OUT[0].data);
  free_out(1);
  free(m);
  free(text);
}

Test(interp, wrong_static_dim_names_input_and_axis) {
  char *text = example("mlp.mlir");
  float x[1];
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(3, 783));
  run_err(text, &in, "input 0 (pixels): axis 1 expected 784, got 783");
  free(text);
}

Test(interp, wrong_dtype_is_an_error) {
  char *text = example("mlp.mlir");
  int32_t x[1];
  ir_tensor in = tn(IR_DT_SI32, x, 2, SHAPE(3, 784));
  run_err(text, &in, "input 0 (pixels): expected dtype f32, got si32");
  free(text);
}

Test(interp, wrong_rank_is_an_error) {
  char *text = example("mlp.mlir");
  float x[1];
  ir_tensor in = tn(IR_DT_F32, x, 3, SHAPE(3, 784, 1));
  run_err(text, &in, "input 0 (pixels): expected rank 2, got 3");
  free(text);
}

Test(interp, negative_input_dim_is_an_error) {
  char *text = example("mlp.mlir");
  float x[1];
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(-3, 784));
  run_err(text, &in, "input 0 (pixels): axis 0 has negative size -3");
  free(text);
}

Test(interp, inputs_disagreeing_on_a_symbol) {
  char *text = example("attention_block.mlir");
  float q[1], k[1];
  ir_tensor in[2] = {tn(IR_DT_F32, q, 3, SHAPE(2, 7, 64)), tn(IR_DT_F32, k, 3, SHAPE(2, 5, 64))};
  run_err(text, in, "input 1 (k): axis 1 is seq = 7 from input 0, got 5");
  free(text);
}

Test(interp, solve_symbols_works_on_shapes_alone) {
  char *text = example("attention_block.mlir");
  ir_graph *g = parse(text);
  ir_tensor in[2] = {tn(IR_DT_F32, NULL, 3, SHAPE(2, 7, 64)),
                     tn(IR_DT_F32, NULL, 3, SHAPE(2, 7, 64))};
  int64_t syms[2] = {-1, -1};
  cr_assert_eq(g->nsyms, 2);
  int rc = ir_solve_symbols(g, in, 2, syms, MSG, sizeof MSG);
  cr_assert_eq(rc, 0, "%s", MSG);
  for (int s = 0; s < 2; s++)
    cr_assert_eq(syms[s], strcmp(g->syms[s], "batch") == 0 ? 2 : 7, "%s = %lld", g->syms[s],
                 (long long)syms[s]);
  /* batch * seq evaluates to 14 */
  int64_t shape[IR_MAX_RANK];
  rc = ir_eval_shape(&g->outputs[1]->type, syms, shape, MSG, sizeof MSG);
  cr_assert_eq(rc, 0, "%s", MSG);
  cr_assert_eq(shape[0], 14);
  cr_assert_eq(shape[1], 64);
  rc = ir_solve_symbols(g, in, 1, syms, MSG, sizeof MSG);
  cr_assert_neq(rc, 0);
  cr_assert_str_eq(MSG, "expected 2 inputs, got 1");
  ir_graph_free(g);
  free(text);
}

Test(interp, attention_block_runs) {
  char *text = example("attention_block.mlir");
  float *q = calloc(2 * 3 * 64, sizeof *q), *k = calloc(2 * 3 * 64, sizeof *k);
  float gamma[64], beta[64];
  for (int i = 0; i < 64; i++) {
    gamma[i] = 1.0f;
    beta[i] = 0.25f;
  }
  wbind w[3] = {{"ln.gamma", tn(IR_DT_F32, gamma, 1, SHAPE(64))},
                {"ln.beta", tn(IR_DT_F32, beta, 1, SHAPE(64))},
                {NULL, tn(IR_DT_F32, NULL, 0, NULL)}};
  ir_tensor in[2] = {tn(IR_DT_F32, q, 3, SHAPE(2, 3, 64)), tn(IR_DT_F32, k, 3, SHAPE(2, 3, 64))};
  int rc = run_w(text, in, w);
  cr_assert_eq(rc, 0, "%s", MSG);
  /* all-zero q and k: uniform attention 1/3; constant rows normalize to beta */
  expect_shape(&OUT[0], 3, SHAPE(2, 3, 3));
  expect_shape(&OUT[1], 2, SHAPE(6, 64));
  const float *p = OUT[0].data, *n = OUT[1].data;
  for (int i = 0; i < 18; i++) cr_assert_float_eq(p[i], 1 / 3.0f, 1e-7f);
  for (int i = 0; i < 6 * 64; i++) cr_assert_float_eq(n[i], 0.25f, 1e-7f);
  free_out(2);
  free(q);
  free(k);
  free(text);
}

Test(interp, missing_weight_is_named) {
  char *text = example("mlp.mlir");
  float x[784];
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(1, 784));
  cr_assert_neq(run_w(text, &in, NULL), 0);
  cr_assert_str_eq(MSG, "weight 'fc1.weight' is not bound");
  free(text);
}

Test(interp, weight_with_wrong_shape_or_dtype) {
  char *text = example("mlp.mlir");
  mlp_weights *m = mlp_new();
  float x[784] = {0};
  ir_tensor in = tn(IR_DT_F32, x, 2, SHAPE(1, 784));
  m->bind[0].t.shape[1] = 511;
  cr_assert_neq(run_w(text, &in, m->bind), 0);
  cr_assert_str_eq(MSG, "weight 'fc1.weight': expected shape [784, 512], got [784, 511]");
  m->bind[0].t.shape[1] = 512;
  m->bind[3].t.dtype = IR_DT_F64;
  cr_assert_neq(run_w(text, &in, m->bind), 0);
  cr_assert_str_eq(MSG, "weight 'fc2.bias': expected dtype f32, got f64");
  free(m);
  free(text);
}

Test(interp, algebraic_input_dim_needs_its_symbol_elsewhere) {
  const char *g = "mo.graph @g<n>(%x: !mo.tensor<[n floordiv 2], f32>) -> "
                  "(!mo.tensor<[n floordiv 2], f32>) {\n"
                  "  %0 = mo.relu(%x) : !mo.tensor<[n floordiv 2], f32>\n"
                  "  mo.output %0 : !mo.tensor<[n floordiv 2], f32>\n}\n";
  float x[3];
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(3));
  run_err(g, &in, "input 0 (x): cannot solve symbolic dim 'n floordiv 2' from the input shapes");
}

Test(interp, algebraic_input_dim_is_checked_once_solved) {
  /* n from %y, then %x must have n + 1 elements */
  const char *g = "mo.graph @g<n>(%x: !mo.tensor<[n + 1], f32>, %y: !mo.tensor<[n], f32>) -> "
                  "(!mo.tensor<[n + 1], f32>) {\n"
                  "  mo.output %x : !mo.tensor<[n + 1], f32>\n}\n";
  float x[4] = {1, 2, 3, 4}, y[3] = {0};
  ir_tensor in[2] = {tn(IR_DT_F32, x, 1, SHAPE(4)), tn(IR_DT_F32, y, 1, SHAPE(3))};
  run_ok(g, in);
  expect_f32(&OUT[0], x, 4, 0);
  cr_assert_neq(OUT[0].data, (void *)x, "an input handed back must be a copy");
  free_out(1);
  in[1].shape[0] = 2;
  run_err(g, in, "input 0 (x): axis 0 expected n + 1 = 3, got 4");
}

Test(interp, failed_runtime_check_names_op_and_values) {
  const char *g = "mo.graph @g<n>(%a: !mo.tensor<[n], f32>, %b: !mo.tensor<[5], f32>) -> "
                  "(!mo.tensor<[5], f32>) {\n"
                  "  %0 = mo.add(%a, %b) : (!mo.tensor<[n], f32>, !mo.tensor<[5], f32>) -> "
                  "!mo.tensor<[5], f32>\n"
                  "  mo.output %0 : !mo.tensor<[5], f32>\n}\n";
  ir_graph *gr = parse(g);
  cr_assert_geq(gr->nchecks, 1, "the verifier recorded no run-time check");
  ir_graph_free(gr);
  float a[5] = {1, 2, 3, 4, 5}, b[5] = {1, 1, 1, 1, 1};
  ir_tensor in[2] = {tn(IR_DT_F32, a, 1, SHAPE(4)), tn(IR_DT_F32, b, 1, SHAPE(5))};
  int rc = run(g, in);
  cr_assert_neq(rc, 0);
  cr_assert(strncmp(MSG, "mo.add (line 2): ", 17) == 0, "message: %s", MSG);
  cr_assert_not_null(strstr(MSG, "n = 4 but needs to equal 5"), "message: %s", MSG);
  in[0].shape[0] = 5;
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){2, 3, 4, 5, 6}, 5, 0);
  free_out(1);
}

Test(interp, outputs_are_independently_owned) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>, "
                  "!mo.tensor<[2], f32>, !mo.tensor<[2], f32>) {\n"
                  "  %0 = mo.negate(%x) : !mo.tensor<[2], f32>\n"
                  "  mo.output %0, %0, %x : !mo.tensor<[2], f32>, !mo.tensor<[2], f32>, "
                  "!mo.tensor<[2], f32>\n}\n";
  float x[2] = {1, -2};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(2));
  run_ok(g, &in);
  cr_assert_neq(OUT[0].data, OUT[1].data);
  cr_assert_neq(OUT[2].data, (void *)x);
  expect_f32(&OUT[0], (const float[]){-1, 2}, 2, 0);
  expect_f32(&OUT[1], (const float[]){-1, 2}, 2, 0);
  expect_f32(&OUT[2], x, 2, 0);
  free_out(3); /* ASan reports a double free if two outputs shared a buffer */
}

Test(interp, zero_size_elementwise_and_matmul) {
  const char *g = "mo.graph @g<n>(%a: !mo.tensor<[n, 3], f32>, %b: !mo.tensor<[3, 2], f32>) -> "
                  "(!mo.tensor<[n, 2], f32>) {\n"
                  "  %e = mo.exp(%a) : !mo.tensor<[n, 3], f32>\n"
                  "  %m = mo.matmul(%e, %b) : (!mo.tensor<[n, 3], f32>, !mo.tensor<[3, 2], f32>) "
                  "-> !mo.tensor<[n, 2], f32>\n"
                  "  mo.output %m : !mo.tensor<[n, 2], f32>\n}\n";
  float b[6] = {0};
  ir_tensor in[2] = {tn(IR_DT_F32, NULL, 2, SHAPE(0, 3)), tn(IR_DT_F32, b, 2, SHAPE(3, 2))};
  run_ok(g, in);
  expect_shape(&OUT[0], 2, SHAPE(0, 2));
  free_out(1);
}

Test(interp, matmul_with_zero_k_gives_zeros) {
  const char *g = "mo.graph @g<k>(%a: !mo.tensor<[2, k], f32>, %b: !mo.tensor<[k, 2], f32>) -> "
                  "(!mo.tensor<[2, 2], f32>) {\n"
                  "  %m = mo.matmul(%a, %b) : (!mo.tensor<[2, k], f32>, !mo.tensor<[k, 2], f32>) "
                  "-> !mo.tensor<[2, 2], f32>\n"
                  "  mo.output %m : !mo.tensor<[2, 2], f32>\n}\n";
  ir_tensor in[2] = {tn(IR_DT_F32, NULL, 2, SHAPE(2, 0)), tn(IR_DT_F32, NULL, 2, SHAPE(0, 2))};
  run_ok(g, in);
  expect_f32(&OUT[0], (const float[]){0, 0, 0, 0}, 4, 0);
  free_out(1);
}

Test(interp, null_data_for_a_nonempty_input_is_an_error) {
  char *text = example("relu.mlir");
  ir_tensor in = tn(IR_DT_F32, NULL, 1, SHAPE(5));
  run_err(text, &in, "input 0 (x): data is NULL");
  free(text);
}

/* ---- ops the interpreter cannot run: errors, never made-up values ---- */

Test(interp, custom_kernel_is_an_error_naming_the_op) {
  const char *g = "mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>) {\n"
                  "  %y = mo.custom(%x) {symbol = \"my_kernel\"} : (!mo.tensor<[2], f32>) -> "
                  "!mo.tensor<[2], f32>\n"
                  "  mo.output %y : !mo.tensor<[2], f32>\n}\n";
  float x[2] = {1, 2};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(2));
  run_err(g, &in,
          "mo.custom (%y): the kernel \"my_kernel\" needs its kernel library: the reference "
          "interpreter cannot run custom kernels");
}

/* A node whose op code is not in the table (a corrupted graph) is refused
 * with its position, not run. */
Test(interp, unknown_op_code_is_an_error) {
  char *text = example("relu.mlir");
  ir_graph *g = parse(text);
  free(text);
  g->nodes[0]->op = IR_OP_COUNT;
  float x[5] = {1, -2, 3, -4, 5};
  ir_tensor in = tn(IR_DT_F32, x, 1, SHAPE(5));
  MSG[0] = '\0';
  cr_assert_neq(ir_interp_run(g, &in, NULL, NULL, OUT, MSG, sizeof MSG), 0);
  char want[64];
  snprintf(want, sizeof want, "op #0 has an unknown op code %d", (int)IR_OP_COUNT);
  cr_assert_str_eq(MSG, want);
  cr_assert_null(OUT[0].data);
  ir_graph_free(g);
}

/* The scalar meanings answer "none" for an op they do not define (what an
 * elementwise op added to ops.def without one gets), at every dtype. */
Test(interp, scalar_meaning_of_an_op_without_one_is_refused) {
  float f = 1;
  double d = 1;
  int64_t i = 1;
  bool b = true;
  cr_assert_not(ir_ref_un_f32(IR_OP_ADD, IR_REF_GELU_NONE, 1.0f, &f));
  cr_assert_not(ir_ref_un_f64(IR_OP_MATMUL, IR_REF_GELU_NONE, 1.0, &d));
  cr_assert_not(ir_ref_un_int(IR_OP_EXP, 1, &i));
  cr_assert_not(ir_ref_pred(IR_OP_ABS, 1.0, &b));
  cr_assert_not(ir_ref_logic(IR_OP_ADD, true, false, &b));
  cr_assert_not(ir_ref_bin_f32(IR_OP_EQUAL, 1.0f, 2.0f, &f));
  cr_assert_not(ir_ref_bin_f64(IR_OP_EXP, 1.0, 2.0, &d));
  cr_assert_eq(ir_ref_bin_int(IR_OP_DIV, 1, 2, &i), IR_REF_NO_MEANING);
  cr_assert_eq(ir_ref_bin_int(IR_OP_MOD, 1, 0, &i), IR_REF_DIV_ZERO);
  cr_assert_not(ir_ref_cmp_f(IR_OP_ADD, 1.0, 2.0, &b));
  cr_assert_not(ir_ref_cmp_i(IR_OP_ADD, 1, 2, &b));
  cr_assert(ir_ref_logic(IR_OP_LOGICAL_XOR, true, false, &b) && b);
  cr_assert(ir_ref_un_int(IR_OP_NEGATE, 3, &i) && i == -3);
}
