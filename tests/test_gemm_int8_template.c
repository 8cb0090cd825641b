/* test_gemm_int8_template.c - the 8-bit GEMM template's entries
 * (kernels-templates/gemm_int8.c, compiled natively for this test by
 * clang-19) called directly, so the generic entries, the _avx2 ones, the
 * _avxvnni ones and the _avx512vnni ones (each where this host has its
 * instructions: the JIT picks one per host) are all checked against a plain
 * int64 sum here: every
 * signedness pair, every zero-point form, shapes across the VNNI kernel's
 * 6-row blocks, 64-column panels, 512-byte K blocks, 2048-row chunks and K not a multiple of
 * 4, extreme values (255 / -128 everywhere), and C split into parts (rows,
 * or 64-column panels for few rows). */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ARGS                                                                                 \
  int64_t M, int64_t N, int64_t K, const void *A, const void *B, int32_t *C, const void *ZA, \
      int64_t nza, const void *ZB, int64_t nzb, int64_t part, int64_t nparts
typedef void (*mmi_fn)(ARGS);
void kiln_mmi_u8u8(ARGS);
void kiln_mmi_u8s8(ARGS);
void kiln_mmi_s8u8(ARGS);
void kiln_mmi_s8s8(ARGS);
static const mmi_fn GENERIC[4] = {kiln_mmi_u8u8, kiln_mmi_u8s8, kiln_mmi_s8u8, kiln_mmi_s8s8};
#if defined(__x86_64__)
void kiln_mmi_u8u8_avx512vnni(ARGS);
void kiln_mmi_u8s8_avx512vnni(ARGS);
void kiln_mmi_s8u8_avx512vnni(ARGS);
void kiln_mmi_s8s8_avx512vnni(ARGS);
static const mmi_fn VNNI[4] = {kiln_mmi_u8u8_avx512vnni, kiln_mmi_u8s8_avx512vnni,
                               kiln_mmi_s8u8_avx512vnni, kiln_mmi_s8s8_avx512vnni};
static bool have_vnni(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vnni");
}
void kiln_mmi_u8u8_avxvnni(ARGS);
void kiln_mmi_u8s8_avxvnni(ARGS);
void kiln_mmi_s8u8_avxvnni(ARGS);
void kiln_mmi_s8s8_avxvnni(ARGS);
static const mmi_fn AVXVNNI[4] = {kiln_mmi_u8u8_avxvnni, kiln_mmi_u8s8_avxvnni,
                                  kiln_mmi_s8u8_avxvnni, kiln_mmi_s8s8_avxvnni};
void kiln_mmi_u8u8_avx2(ARGS);
void kiln_mmi_u8s8_avx2(ARGS);
void kiln_mmi_s8u8_avx2(ARGS);
void kiln_mmi_s8s8_avx2(ARGS);
static const mmi_fn AVX2[4] = {kiln_mmi_u8u8_avx2, kiln_mmi_u8s8_avx2, kiln_mmi_s8u8_avx2,
                               kiln_mmi_s8s8_avx2};
#endif
static const char *const FN_NAMES[4] = {"generic", "avx2", "avxvnni", "avx512vnni"};

/* element i of an 8-bit buffer of signedness s */
static int64_t ld(const uint8_t *p, int64_t i, bool s) { return s ? (int8_t)p[i] : p[i]; }

static uint64_t rng = 88172645463325252ull;
static uint8_t rnd8(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint8_t)rng;
}

typedef struct mm_case {
  int64_t M, N, K, nza, nzb;
  int pair;     /* 0 u8u8, 1 u8s8, 2 s8u8, 3 s8s8 */
  int fill;     /* 0 random, 1 extremes: a 255 / -128, b -128 / 255 */
} mm_case;

/* every entry available on this host against the int64 reference; the
 * rows in `parts` calls of near-equal ranges */
static void check(const mm_case *c, int parts) {
  bool sa = c->pair >= 2, sb = c->pair & 1;
  int64_t M = c->M, N = c->N, K = c->K;
  uint8_t *A = malloc((size_t)(M * K + 1)), *B = malloc((size_t)(K * N + 1));
  int32_t *want = malloc(sizeof(int32_t) * (size_t)(M * N + 1));
  int32_t *got = malloc(sizeof(int32_t) * (size_t)(M * N + 1));
  cr_assert(A && B && want && got && N <= 512);
  uint8_t *za = malloc((size_t)M + 1), zb[512];
  cr_assert(za != NULL);
  for (int64_t i = 0; i < M * K; i++) A[i] = c->fill ? (sa ? 0x80 : 0xff) : rnd8();
  for (int64_t i = 0; i < K * N; i++) B[i] = c->fill ? (sb ? 0x80 : 0xff) : rnd8();
  for (int64_t i = 0; i < M; i++) za[i] = rnd8();
  for (int i = 0; i < 512; i++) zb[i] = rnd8();
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      int64_t zi = c->nza ? ld(za, c->nza == 1 ? 0 : i, sa) : 0;
      int64_t zj = c->nzb ? ld(zb, c->nzb == 1 ? 0 : j, sb) : 0, s = 0;
      for (int64_t k = 0; k < K; k++)
        s += (ld(A, i * K + k, sa) - zi) * (ld(B, k * N + j, sb) - zj);
      want[i * N + j] = (int32_t)(uint32_t)(uint64_t)s;
    }
  mmi_fn fns[4] = {GENERIC[c->pair], NULL, NULL, NULL};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) fns[1] = AVX2[c->pair];
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni"))
    fns[2] = AVXVNNI[c->pair];
  if (have_vnni()) fns[3] = VNNI[c->pair];
#endif
  for (int f = 0; f < 4; f++) {
    if (!fns[f]) continue;
    memset(got, 0x5a, sizeof(int32_t) * (size_t)(M * N + 1));
    for (int p = 0; p < parts; p++)
      fns[f](M, N, K, A, B, got, za, c->nza, zb, c->nzb, p, parts);
    for (int64_t i = 0; i < M * N; i++)
      cr_assert_eq(got[i], want[i],
                   "%s pair %d M=%lld N=%lld K=%lld zps %lld/%lld fill %d: element %lld is %d, "
                   "not %d",
                   FN_NAMES[f], c->pair, (long long)M, (long long)N,
                   (long long)K, (long long)c->nza, (long long)c->nzb, c->fill, (long long)i,
                   got[i], want[i]);
  }
  free(A), free(B), free(want), free(got), free(za);
}

static const int64_t SHAPES[][3] = {
    {1, 1, 1},    {8, 32, 4},   {9, 33, 5},   {17, 64, 1027}, {3, 7, 2},     {16, 31, 2051},
    {0, 5, 3},    {5, 0, 3},    {4, 3, 0},    {40, 100, 64},  {260, 40, 9},  {13, 130, 517},
    {2050, 3, 5}, {12, 192, 512}, {1, 200, 1027}, {1, 64, 3}, {7, 65, 513}};

Test(gemm_int8_template, every_pair_shape_and_zero_point_form_against_int64) {
  for (int pair = 0; pair < 4; pair++)
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++)
      for (int z = 0; z < 3; z++) {
        int64_t M = SHAPES[s][0], N = SHAPES[s][1];
        mm_case c = {M, N, SHAPES[s][2], z == 0 ? 0 : z == 1 ? 1 : M,
                     z == 0 ? 0 : z == 1 ? 1 : N, pair, 0};
        if (z == 2 && (M == 0 || N == 0)) continue;
        check(&c, 1);
      }
}

Test(gemm_int8_template, extreme_values_sum_exactly) {
  for (int pair = 0; pair < 4; pair++) {
    mm_case c = {9, 35, 1030, 1, 35, pair, 1};
    check(&c, 1);
  }
}

Test(gemm_int8_template, rows_split_into_parts_give_the_same_result) {
  for (int pair = 0; pair < 4; pair++) {
    mm_case c = {37, 70, 300, 37, 1, pair, 0};
    check(&c, 3);
    check(&c, 7);
  }
}

/* few rows (a decode step): the parts take ranges of 64-column panels (the
 * last partial, some with none), each element written once */
Test(gemm_int8_template, few_rows_split_by_panels) {
  for (int pair = 0; pair < 4; pair++)
    for (int64_t m = 1; m <= 16; m += 5) {
      mm_case c = {m, 300, 517, m, 300, pair, 0};
      check(&c, 2);
      check(&c, 3);
      mm_case one_panel = {m, 64, 9, 1, 1, pair, 0};
      check(&one_panel, 2);
    }
}
