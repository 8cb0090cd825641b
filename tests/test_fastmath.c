/* test_fastmath.c - the host JIT's call-free float erf, tanh and exp
 * (jit_erf_f32 and jit_tanh_f32 in jit/fastmath.c, jit_exp_f32 in jit/emit.c) and the f32
 * gelu built on erf, through the public API: one-op graphs [n] f32,
 * kiln_model_execute on a dense sample of floats.
 *
 * Reference: libm's double erf / exp rounded to float, i.e. the correctly
 * rounded result (but where the double result lies within its own error of
 * a float tie, which the dense sample does not hit on glibc). Distances are
 * counted in units in the last place: the number of floats between the two
 * results (a monotone order of the bit patterns, -0 next to +0).
 *
 * Sample: every 2^8-th bit pattern of the 2^32 (all signs, subnormals,
 * infinities and NaNs included), plus every float in windows of 2^14
 * patterns either side of the edges: 0 (subnormals), the smallest normal,
 * erf's switch between its two formulas (|x| = 1), its worst case near
 * 0.998, where it becomes 1 in float (3.92) and its clamp (4); exp's
 * overflow (88.72), its smallest subnormal result (-103.28) and the
 * underflow to 0 (-103.97), the subnormal edge (-87.34), 0, and the
 * reduction's switch from k = 0 to 1 (ln 2 / 2).
 *
 * Bounds (measured over every float, for the comments in the sources):
 * erf and exp are at most 1 ulp from the correctly rounded result
 * (exp's infinities and zeros exactly where the correctly rounded result
 * has them). gelu's f32 formula, 0.5 x (1 + erf(x / sqrt 2)) in the
 * interpreter's order, must be computed exactly as written from the
 * kernel's own erf: bit for bit equal to that formula evaluated here from
 * the JIT's erf of x / sqrt 2. (A bound in ulps of gelu itself would be
 * meaningless for x < -1: 1 + erf cancels, in the interpreter's erff too.)
 * For x >= -1, gelu is also checked against the exact gelu (double, erfc
 * for x < 0) within GELU_ULP ulps. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

#define ERF_ULP 1
#define EXP_ULP 1
#define TANH_ULP 2
#define GELU_ULP 3

static float bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* the float's position in the ordered line of floats (-0 and +0 both 0) */
static int64_t ord(float f) {
  uint32_t u = f_bits(f);
  return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static int64_t ulp_dist(float a, float b) {
  int64_t d = ord(a) - ord(b);
  return d < 0 ? -d : d;
}

/* ---- the sample ---- */

typedef struct {
  float *x;
  size_t n, cap;
} sample;

static void push(sample *s, float v) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 1 << 20;
    s->x = realloc(s->x, s->cap * sizeof *s->x);
    cr_assert_not_null(s->x);
  }
  s->x[s->n++] = v;
}

/* every float within 2^14 patterns of v, both signs */
static void window(sample *s, float v) {
  int64_t c = (int64_t)(f_bits(fabsf(v)));
  for (int64_t u = c - (1 << 14); u <= c + (1 << 14); u++) {
    if (u < 0 || u > 0x7f800000) continue;
    push(s, bits_f((uint32_t)u));
    push(s, -bits_f((uint32_t)u));
  }
}

static sample make_sample(const float *edges, int nedges) {
  sample s = {0};
  for (uint64_t u = 0; u < (1ull << 32); u += 1u << 8) push(&s, bits_f((uint32_t)u));
  for (int i = 0; i < nedges; i++) window(&s, edges[i]);
  return s;
}

/* ---- running a one-op graph over an array ---- */

static void run_op(const char *op, const float *x, float *y, size_t n) {
  char text[512];
  snprintf(text, sizeof text,
           "mo.graph @fm<n>(%%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
           "  %%y = %s(%%x) : !mo.tensor<[n], f32>\n"
           "  mo.output %%y : !mo.tensor<[n], f32>\n}\n",
           op);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "fastmath.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s: %s", op, kiln_status_message(st));
  int64_t shape[1] = {(int64_t)n};
  kiln_tensor *tx = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, (void *)x, st);
  kiln_tensor *ty = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, y, st);
  cr_assert(tx && ty, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(m, &tx, 1, &ty, 1, st), 0, "%s: %s", op,
               kiln_status_message(st));
  kiln_tensor_free(tx);
  kiln_tensor_free(ty);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* y against the correctly rounded f(x) for every x: NaN in, NaN out; zeros
 * keep their sign where the reference does; infinities exactly; else within
 * bound ulps. Returns the largest distance seen. */
static int64_t check_cr(const char *name, double (*f)(double), const float *x, const float *y,
                        size_t n, int64_t bound) {
  int64_t worst = 0;
  for (size_t i = 0; i < n; i++) {
    float want = (float)f((double)x[i]);
    if (isnan(x[i]) || isnan(want)) {
      cr_assert(isnan(y[i]) && isnan(want), "%s(%a) = %a, want %a", name, (double)x[i],
                (double)y[i], (double)want);
      continue;
    }
    if (isinf(want) || isinf(y[i]) || (want == 0.0f && y[i] == 0.0f))
      cr_assert(y[i] == want && signbit(y[i]) == signbit(want), "%s(%a) = %a, want %a", name,
                (double)x[i], (double)y[i], (double)want);
    int64_t d = ulp_dist(y[i], want);
    cr_assert(d <= bound, "%s(%a = %.9g) = %.9g, correctly rounded %.9g: %lld ulps", name,
              (double)x[i], (double)x[i], (double)y[i], (double)want, (long long)d);
    if (d > worst) worst = d;
  }
  return worst;
}

/* op over the dense sample with windows at edges, checked against the
 * correctly rounded f within bound ulps (check_cr). */
static void check_dense(const char *op, const char *name, double (*f)(double),
                        const float *edges, int nedges, int64_t bound) {
  sample s = make_sample(edges, nedges);
  float *y = malloc(s.n * sizeof *y);
  cr_assert_not_null(y);
  run_op(op, s.x, y, s.n);
  int64_t worst = check_cr(name, f, s.x, y, s.n, bound);
  cr_log_info("%s: %zu floats, at most %lld ulp from correctly rounded", name, s.n,
              (long long)worst);
  free(y);
  free(s.x);
}

/* ---- erf ---- */

Test(fastmath, erf_within_an_ulp_of_correctly_rounded) {
  static const float edges[] = {0.0f, 0x1p-126f, 1.0f, 0x1.ff23a4p-1f, 3.92f, 4.0f};
  check_dense("mo.erf", "erf", erf, edges, (int)(sizeof edges / sizeof edges[0]), ERF_ULP);
}

Test(fastmath, erf_special_values) {
  const float x[] = {0.0f,  -0.0f,  INFINITY,   -INFINITY,  NAN,   -NAN,
                     10.0f, -10.0f, 3e38f,      -3e38f,     3.92f, -3.92f,
                     0x1p-149f, -0x1p-149f};
  /* erf(+-2^-149) = +-1.128 2^-149 rounds to +-2^-149; erf(3.92) rounds to 1 */
  const float want[] = {0.0f,  -0.0f,  1.0f,       -1.0f,      NAN,   NAN,
                        1.0f,  -1.0f,  1.0f,       -1.0f,      1.0f,  -1.0f,
                        0x1p-149f, -0x1p-149f};
  enum { N = sizeof x / sizeof x[0] };
  float y[N];
  run_op("mo.erf", x, y, N);
  for (int i = 0; i < N; i++) {
    if (isnan(want[i])) {
      cr_assert(isnan(y[i]), "erf(%a) = %a", (double)x[i], (double)y[i]);
      continue;
    }
    cr_assert(y[i] == want[i] && signbit(y[i]) == signbit(want[i]), "erf(%a) = %a, want %a",
              (double)x[i], (double)y[i], (double)want[i]);
  }
}

/* ---- tanh ---- */

Test(fastmath, tanh_within_two_ulp_of_correctly_rounded) {
  /* 0 (subnormals), the smallest normal, the switch of formulas (0.875),
   * where tanh rounds to 1 in float (9.01) and exp(2 |x|) overflows (44.4) */
  static const float edges[] = {0.0f, 0x1p-126f, 0.875f, 9.0109f, 44.36f};
  check_dense("mo.tanh", "tanh", tanh, edges, (int)(sizeof edges / sizeof edges[0]), TANH_ULP);
}

Test(fastmath, tanh_special_values) {
  const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f,
                     20.0f, -20.0f, 3e38f, -3e38f, 0.875f, -0.875f};
  enum { N = sizeof x / sizeof x[0] };
  float y[N];
  run_op("mo.tanh", x, y, N);
  for (int i = 0; i < N; i++) {
    float want = (float)tanh((double)x[i]);
    if (isnan(want)) {
      cr_assert(isnan(y[i]), "tanh(%a) = %a", (double)x[i], (double)y[i]);
      continue;
    }
    cr_assert(ulp_dist(y[i], want) <= TANH_ULP && signbit(y[i]) == signbit(want),
              "tanh(%a) = %a, want %a", (double)x[i], (double)y[i], (double)want);
  }
  cr_assert(y[0] == 0.0f && signbit(y[1]) && y[2] == 1.0f && y[3] == -1.0f &&
            y[5] == 0x1p-149f && y[7] == 1.0f && y[10] == -1.0f);
}

/* ---- exp ---- */

Test(fastmath, exp_within_an_ulp_of_correctly_rounded) {
  static const float edges[] = {0.0f,     0x1p-126f,     88.72284f,     -103.27893f,
                                -103.97208f, -87.336548f, 0.34657359f, 0x1.62e42ep+6f};
  check_dense("mo.exp", "exp", exp, edges, (int)(sizeof edges / sizeof edges[0]), EXP_ULP);
}

Test(fastmath, exp_special_values) {
  const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f,
                     /* the last finite result, the first overflowing input */
                     0x1.62e42ep+6f, 0x1.62e430p+6f, 1000.0f, 3e38f,
                     /* exp(x) < 2^-150 gives +0; -103.28 the smallest subnormal */
                     -103.98f, -1000.0f, -3e38f, -103.28f};
  enum { N = sizeof x / sizeof x[0] };
  float y[N];
  run_op("mo.exp", x, y, N);
  for (int i = 0; i < N; i++) {
    float want = (float)exp((double)x[i]);
    if (isnan(want)) {
      cr_assert(isnan(y[i]), "exp(%a) = %a", (double)x[i], (double)y[i]);
      continue;
    }
    cr_assert(y[i] == want && !signbit(y[i]), "exp(%a) = %a, want %a", (double)x[i],
              (double)y[i], (double)want);
  }
  cr_assert(isinf(y[8]) && !isinf(y[7]) && y[11] == 0.0f && y[14] == 0x1p-149f);
}

/* ---- gelu (approximate = "none") ---- */

static double gelu_exact(double x) {
  return x < 0 ? 0.5 * x * erfc(-x / sqrt(2.0)) : 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double ulp_of(double v) { /* a float's ulp at |v| (subnormal: 2^-149) */
  int e;
  frexp(fabs(v), &e);
  return v == 0 ? 0x1p-149 : fmax(ldexp(1.0, e - 24), 0x1p-149);
}

Test(fastmath, gelu_is_the_formula_on_the_kernels_erf) {
  static const float edges[] = {0.0f, 0x1p-126f, 1.4142135f, 5.5437f};
  sample s = make_sample(edges, (int)(sizeof edges / sizeof edges[0]));
  size_t n = s.n;
  float *y = malloc(n * sizeof *y), *q = malloc(n * sizeof *q), *e = malloc(n * sizeof *e);
  cr_assert(y && q && e);
  run_op("mo.gelu", s.x, y, n);
  /* the JIT's erf of the same x / sqrt 2 (the interpreter's float constant) */
  for (size_t i = 0; i < n; i++) q[i] = s.x[i] / 1.4142135623730951f;
  run_op("mo.erf", q, e, n);
  check_cr("erf", erf, q, e, n, ERF_ULP);
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    float x = s.x[i];
    float h = 0.5f * x, one_e = 1.0f + e[i];
    float want = h * one_e;
    if (isnan(want)) {
      cr_assert(isnan(y[i]), "gelu(%a) = %a, want NaN", (double)x, (double)y[i]);
      continue;
    }
    cr_assert(f_bits(y[i]) == f_bits(want), "gelu(%a) = %a, formula on the kernel's erf %a",
              (double)x, (double)y[i], (double)want);
    if (x >= -1.0f && !isinf(x)) {
      double g = gelu_exact(x), err = fabs((double)y[i] - g) / ulp_of(g);
      cr_assert(err <= GELU_ULP, "gelu(%a = %.9g) = %.9g, exact %.12g: %.2f ulps", (double)x,
                (double)x, (double)y[i], g, err);
      if (err > worst) worst = err;
    }
  }
  cr_log_info("gelu: %zu floats, the formula exactly; x >= -1: within %.3f ulp of exact", n,
              worst);
  free(y);
  free(q);
  free(e);
  free(s.x);
}

Test(fastmath, gelu_special_values) {
  /* the interpreter's formula: gelu(-inf) = -inf * (1 + erf(-inf)) = NaN */
  const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 0x1p-149f, -0x1p-149f, 10.0f, -10.0f};
  enum { N = sizeof x / sizeof x[0] };
  float y[N];
  run_op("mo.gelu", x, y, N);
  for (int i = 0; i < N; i++) {
    float want = 0.5f * x[i] * (1.0f + (float)erf((double)(x[i] / 1.4142135623730951f)));
    if (isnan(want)) {
      cr_assert(isnan(y[i]), "gelu(%a) = %a, want NaN", (double)x[i], (double)y[i]);
      continue;
    }
    cr_assert(y[i] == want && signbit(y[i]) == signbit(want), "gelu(%a) = %a, want %a",
              (double)x[i], (double)y[i], (double)want);
  }
}
