/* test_gemm_half_template.c - the half GEMM template's entries
 * (kernels-templates/gemm_half.c, compiled natively for this test by
 * clang-19) called directly, so the generic entries (which the JIT picks
 * only on hosts without AVX512-BF16 / AVX-512), the _avx512 ones and bf16's
 * _avx512dp ones (where this host has them) are all checked against a
 * double-precision sum of the
 * exactly widened values: bf16 and f16, B row-major, transposed and
 * prepacked (packed here from the layout gemm_half.c documents), shapes
 * across the 6-row tiles, 64-column panels, K blocks (odd K for the pair
 * layout), M = 0 / 1 and decode-like M = 1..8, C split into parts (rows,
 * or 64-column panels for few rows: each part's result bit for bit the
 * one-part result), and the epilogue called once per element. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*epi_fn)(void *ctx, int64_t i0, int64_t j0, int64_t m, int64_t n, float *C,
                       int64_t ldc);
#define ARGS                                                                                  \
  int64_t M, int64_t N, int64_t K, const void *A, const void *B, float *C, int64_t part,     \
      int64_t nparts, epi_fn epi, void *epi_ctx
typedef void (*hg_fn)(ARGS);
#define DECL(T)                                                                               \
  void kiln_hgemm_##T##_ex(ARGS);                                                             \
  void kiln_hgemm_##T##_tex(ARGS);                                                            \
  void kiln_hgemm_##T##_pex(ARGS);                                                            \
  void kiln_hgemm_##T##_ex_avx512(ARGS);                                                      \
  void kiln_hgemm_##T##_tex_avx512(ARGS);                                                     \
  void kiln_hgemm_##T##_pex_avx512(ARGS);
DECL(bf16)
DECL(f16)
void kiln_hgemm_bf16_ex_avx512dp(ARGS);
void kiln_hgemm_bf16_tex_avx512dp(ARGS);
void kiln_hgemm_bf16_pex_avx512dp(ARGS);
/* [f16][layout: ex tex pex][generic, avx512, avx512dp (bf16 only)] */
static const hg_fn FNS[2][3][3] = {
    {{kiln_hgemm_bf16_ex, kiln_hgemm_bf16_ex_avx512, kiln_hgemm_bf16_ex_avx512dp},
     {kiln_hgemm_bf16_tex, kiln_hgemm_bf16_tex_avx512, kiln_hgemm_bf16_tex_avx512dp},
     {kiln_hgemm_bf16_pex, kiln_hgemm_bf16_pex_avx512, kiln_hgemm_bf16_pex_avx512dp}},
    {{kiln_hgemm_f16_ex, kiln_hgemm_f16_ex_avx512, NULL},
     {kiln_hgemm_f16_tex, kiln_hgemm_f16_tex_avx512, NULL},
     {kiln_hgemm_f16_pex, kiln_hgemm_f16_pex_avx512, NULL}}};
static const char *const VARIANT[3] = {"generic", "avx512", "avx512dp"};

static bool have_avx512(bool f16) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         (f16 ? __builtin_cpu_supports("f16c") : __builtin_cpu_supports("avx512bf16"));
}

static uint64_t rng = 88172645463325252ull;
/* uniform in [-1, 1) */
static float rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((int64_t)(rng >> 40) - (1 << 23)) / (float)(1 << 23);
}

static uint16_t to_half(float x, bool f16) {
  if (f16) {
    _Float16 h = (_Float16)x;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
  }
  uint32_t u;
  memcpy(&u, &x, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16); /* nearest even (no NaN here) */
}
static double wide(uint16_t b, bool f16) {
  if (f16) {
    _Float16 h;
    memcpy(&h, &b, 2);
    return (double)h;
  }
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* B (K x N row-major) in the prepacked layout of gemm_half.c's top: bf16
 * in K blocks of 256 rows (the last rounded up to even), each block's
 * panels of 64 columns as k pairs; f16 as f32 panels [k][64] */
static void *pack(const uint16_t *B, int64_t K, int64_t N, bool f16) {
  int64_t np = (N + 63) / 64 * 64, k2 = (K + 1) / 2 * 2;
  size_t bytes = f16 ? (size_t)(np * K) * 4 : (size_t)(np * k2) * 2;
  void *out = calloc(1, bytes + 4);
  cr_assert(out != NULL);
  for (int64_t k = 0; k < K; k++)
    for (int64_t j = 0; j < N; j++) {
      int64_t p = j / 64, c = j % 64, k0 = k / 256 * 256;
      int64_t kb = K - k0 < 256 ? K - k0 : 256, kb2 = (kb + 1) / 2 * 2;
      if (f16)
        ((float *)out)[(p * K + k) * 64 + c] = (float)wide(B[k * N + j], true);
      else
        ((uint16_t *)out)[k0 * np + p * kb2 * 64 + (k - k0) / 2 * 128 + c * 2 + k % 2] =
            B[k * N + j];
    }
  return out;
}

/* the epilogue: counts how often each element is passed, adds 0.5 */
typedef struct epi_seen {
  int64_t N;
  unsigned char *count;
  float *C;
} epi_seen;
static void epi_count(void *ctx, int64_t i0, int64_t j0, int64_t m, int64_t n, float *C,
                      int64_t ldc) {
  epi_seen *s = ctx;
  cr_assert_eq(C, s->C + i0 * s->N + j0);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      s->count[(i0 + i) * s->N + j0 + j]++;
      C[i * ldc + j] += 0.5f;
    }
}

/* every entry of layout `layout` available here against the double sum,
 * rows in `parts` calls; with_epi adds the epilogue */
static void check(bool f16, int layout, int64_t M, int64_t N, int64_t K, int parts,
                  bool with_epi) {
  uint16_t *A = malloc(sizeof(uint16_t) * (size_t)(M * K + 1));
  uint16_t *B = malloc(sizeof(uint16_t) * (size_t)(K * N + 1));
  uint16_t *Bt = malloc(sizeof(uint16_t) * (size_t)(K * N + 1));
  double *want = malloc(sizeof(double) * (size_t)(M * N + 1));
  double *mag = malloc(sizeof(double) * (size_t)(M * N + 1));
  float *got = malloc(sizeof(float) * (size_t)(M * N + 1));
  float *whole = malloc(sizeof(float) * (size_t)(M * N + 1));
  unsigned char *count = malloc((size_t)(M * N + 1));
  cr_assert(A && B && Bt && want && mag && got && whole && count);
  for (int64_t i = 0; i < M * K; i++) A[i] = to_half(rnd() * 4, f16);
  for (int64_t i = 0; i < K * N; i++) B[i] = to_half(rnd(), f16);
  for (int64_t k = 0; k < K; k++)
    for (int64_t j = 0; j < N; j++) Bt[j * K + k] = B[k * N + j];
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0, a = 0;
      for (int64_t k = 0; k < K; k++) {
        double p = wide(A[i * K + k], f16) * wide(B[k * N + j], f16);
        s += p, a += fabs(p);
      }
      want[i * N + j] = s + (with_epi ? 0.5 : 0);
      mag[i * N + j] = a;
    }
  void *Bp = layout == 2 ? pack(B, K, N, f16) : NULL;
  const void *b = layout == 0 ? (const void *)B : layout == 1 ? (const void *)Bt : Bp;
  for (int v = 0; v < 3; v++) {
    if (!FNS[f16][layout][v] || (v > 0 && !have_avx512(f16))) continue;
    memset(got, 0x7f, sizeof(float) * (size_t)(M * N + 1)); /* NaN-free garbage */
    memset(count, 0, (size_t)(M * N + 1));
    epi_seen seen = {N, count, got};
    for (int p = 0; p < parts; p++)
      FNS[f16][layout][v](M, N, K, A, b, got, p, parts, with_epi ? epi_count : NULL, &seen);
    for (int64_t i = 0; i < M * N; i++) {
      /* f32 sums of exact products: K roundings of at most 2^-24 each */
      double tol = (double)(K + 2) * 0x1p-23 * mag[i] + 1e-30;
      cr_assert(fabs((double)got[i] - want[i]) <= tol,
                "%s %s layout %d M=%lld N=%lld K=%lld parts %d: element %lld is %.9g, not %.9g",
                f16 ? "f16" : "bf16", VARIANT[v], layout, (long long)M,
                (long long)N, (long long)K, parts, (long long)i, got[i], want[i]);
      if (with_epi)
        cr_assert_eq(count[i], 1, "element %lld passed to the epilogue %d times", (long long)i,
                     count[i]);
    }
    if (parts > 1) { /* how an element is summed does not depend on the parts */
      memset(whole, 0x7f, sizeof(float) * (size_t)(M * N + 1));
      memset(count, 0, (size_t)(M * N + 1));
      epi_seen one = {N, count, whole};
      FNS[f16][layout][v](M, N, K, A, b, whole, 0, 1, with_epi ? epi_count : NULL, &one);
      cr_assert(memcmp(got, whole, sizeof(float) * (size_t)(M * N)) == 0,
                "%s %s layout %d M=%lld N=%lld K=%lld: %d parts differ from one",
                f16 ? "f16" : "bf16", VARIANT[v], layout, (long long)M,
                (long long)N, (long long)K, parts);
    }
  }
  free(Bp), free(A), free(B), free(Bt), free(want), free(mag), free(got), free(whole), free(count);
}

static const int64_t SHAPES[][3] = {
    {1, 1, 1},    {1, 64, 2},   {2, 65, 3},     {8, 32, 4},   {9, 33, 5},   {17, 64, 257},
    {3, 7, 2},    {16, 31, 511}, {0, 5, 3},     {5, 0, 3},    {4, 3, 0},    {40, 100, 64},
    {7, 130, 129}, {13, 130, 517}, {6, 192, 256}, {1, 300, 1000}};

Test(gemm_half_template, bf16_every_layout_and_shape_against_double) {
  for (int layout = 0; layout < 3; layout++)
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++)
      check(false, layout, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2], 1, false);
}

Test(gemm_half_template, f16_every_layout_and_shape_against_double) {
  for (int layout = 0; layout < 3; layout++)
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++)
      check(true, layout, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2], 1, false);
}

Test(gemm_half_template, decode_rows_one_to_eight) {
  for (int f16 = 0; f16 < 2; f16++)
    for (int64_t m = 1; m <= 8; m++) {
      check(f16, 2, m, 200, 301, 1, false);
      check(f16, 0, m, 70, 64, 1, false);
    }
}

Test(gemm_half_template, rows_split_into_parts_and_the_epilogue_sees_each_element_once) {
  for (int f16 = 0; f16 < 2; f16++)
    for (int layout = 0; layout < 3; layout++) {
      check(f16, layout, 37, 70, 300, 3, true);
      check(f16, layout, 1100, 20, 9, 2, true); /* more rows than one chunk */
      check(f16, layout, 4, 3000, 33, 1, true); /* more columns than one chunk */
    }
}

/* A decode step (M = 1..16) in 2 or 3 parts: 64-column panel ranges (the
 * last partial, a part with none), every element once, bit for bit the
 * one-part result */
Test(gemm_half_template, few_rows_split_by_panels) {
  for (int f16 = 0; f16 < 2; f16++)
    for (int layout = 0; layout < 3; layout++)
      for (int64_t m = 1; m <= 16; m += 3) {
        check(f16, layout, m, 300, 257, 2, true);
        check(f16, layout, m, 130, 64, 3, true);
        check(f16, layout, m, 64, 9, 2, true); /* one panel: rows */
        check(f16, layout, m, 4100, 17, 2, true);
      }
}
