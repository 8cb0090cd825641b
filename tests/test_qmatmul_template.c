/* test_qmatmul_template.c - the qmatmul template's entries
 * (kernels-templates/qmatmul.c, compiled natively for this test by clang-19)
 * called directly, so both the generic entries (which the JIT only picks on
 * hosts without AVX2 / F16C) and the _avx2 / _avxvnni ones are checked on
 * any x86-64 host that has them: the generic entry gives ir/qblock.h's
 * terms summed in f32 per chunk of K bit for bit; the x86 ones the same bits
 * for the K-quants (exact terms, same order) and, for q4_0 / q8_0 (lanes
 * scaled one by one), the same within the rounding of the sum; N split between parts changes
 * nothing; an all-zero lhs row gives zeros and a row with an infinity NaN. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ir/qblock.h"

typedef void (*qmm_fn)(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W,
                       float *C, int64_t n_lo, int64_t n_hi);

#define DECL(name)                                                                          \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi);
DECL(q4_0)
DECL(q8_0)
DECL(q4_k)
DECL(q5_k)
DECL(q6_k)
static const qmm_fn GENERIC[QB_COUNT] = {kiln_qmatmul_q4_0, kiln_qmatmul_q8_0, kiln_qmatmul_q4_k,
                                         kiln_qmatmul_q5_k, kiln_qmatmul_q6_k};
#if defined(__x86_64__)
DECL(q4_0_avx2)
DECL(q8_0_avx2)
DECL(q4_k_avx2)
DECL(q5_k_avx2)
DECL(q6_k_avx2)
static const qmm_fn AVX2[QB_COUNT] = {kiln_qmatmul_q4_0_avx2, kiln_qmatmul_q8_0_avx2,
                                      kiln_qmatmul_q4_k_avx2, kiln_qmatmul_q5_k_avx2,
                                      kiln_qmatmul_q6_k_avx2};
DECL(q4_0_avxvnni)
DECL(q8_0_avxvnni)
DECL(q4_k_avxvnni)
DECL(q5_k_avxvnni)
DECL(q6_k_avxvnni)
static const qmm_fn VNNI[QB_COUNT] = {kiln_qmatmul_q4_0_avxvnni, kiln_qmatmul_q8_0_avxvnni,
                                      kiln_qmatmul_q4_k_avxvnni, kiln_qmatmul_q5_k_avxvnni,
                                      kiln_qmatmul_q6_k_avxvnni};
DECL(q4_0_avx512)
DECL(q8_0_avx512)
DECL(q4_k_avx512)
DECL(q5_k_avx512)
DECL(q6_k_avx512)
static const qmm_fn X512[QB_COUNT] = {kiln_qmatmul_q4_0_avx512, kiln_qmatmul_q8_0_avx512,
                                      kiln_qmatmul_q4_k_avx512, kiln_qmatmul_q5_k_avx512,
                                      kiln_qmatmul_q6_k_avx512};
enum { X86_PATHS = 3 };
static const char *const X86_NAMES[X86_PATHS] = {"avx2", "avxvnni", "avx512"};

/* The x86 entries this CPU runs: [0] AVX2 (+F16C), [1] AVX-VNNI (+FMA),
 * [2] AVX512 with VNNI and VBMI (jit/quant.c's conditions). */
static void x86_entries(qb_encoding e, qmm_fn out[X86_PATHS]) {
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  bool fma = avx2 && __builtin_cpu_supports("fma");
  out[0] = avx2 ? AVX2[e] : NULL;
  out[1] = fma && __builtin_cpu_supports("avxvnni") ? VNNI[e] : NULL;
  out[2] = fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                   __builtin_cpu_supports("avx512vbmi")
               ? X512[e]
               : NULL;
}
#endif

/* The entries this CPU runs: [0] generic, then x86_entries' (NULL where
 * absent). */
enum { ENTRIES = 4 };
static void every_entry(qb_encoding e, qmm_fn out[ENTRIES]) {
  for (int i = 0; i < ENTRIES; i++) out[i] = NULL;
  out[0] = GENERIC[e];
#if defined(__x86_64__)
  x86_entries(e, out + 1);
#endif
}

/* the template's columns of A per pass (qmatmul.c's QBUF / rows per pass) */
static int64_t chunk_of(int64_t m) { return m == 1 ? 16384 : 4096; }

static uint64_t rng_state = 88172645463325252ull;
static uint64_t next(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return rng_state;
}

/* Weights: bytes in [0, 40] keep every f16 scale small (exponent field
 * <= 10), as tests/test_ops_quant.c; lhs uniform in [-3, 3]. */
static void fill(int64_t m, int64_t n, int64_t k, qb_encoding e, float *a, uint8_t *w) {
  for (int64_t i = 0; i < m * k; i++) a[i] = (float)(next() % 6001) / 1000.0f - 3.0f;
  for (int64_t i = 0; i < n * (k / QB_ELEMS(e) * QB_BYTES(e)); i++) w[i] = (uint8_t)(next() % 41);
}

/* qblock.h's terms summed in f32 per chunk of K (the chunks added in order),
 * and mag = the sum of |dequantized w * quantized lhs| (the sum's scale). */
static void reference(int64_t m, int64_t n, int64_t k, qb_encoding e, const float *a,
                      const uint8_t *w, float *c, double *mag) {
  int64_t E = QB_ELEMS(e), BB = QB_BYTES(e), nb = k / E, rowbytes = nb * BB;
  int8_t *q = malloc((size_t)k);
  int16_t *bs = malloc(sizeof *bs * (size_t)(k / 16 + 1));
  float *da = malloc(sizeof *da * (size_t)(nb + 1)), deq[256];
  cr_assert(q && bs && da);
  for (int64_t i = 0; i < m; i++) {
    for (int64_t b = 0; b < nb; b++)
      da[b] = qb_quantize_lhs(e, a + i * k + b * E, q + b * E, bs + b * E / 16);
    for (int64_t j = 0; j < n; j++) {
      float total = 0;
      double g = 0;
      for (int64_t k0 = 0, kc = chunk_of(m); k0 < k; k0 += kc) {
        float s = 0;
        for (int64_t b = k0 / E; b < (k0 + kc < k ? k0 + kc : k) / E; b++) {
          const uint8_t *x = w + j * rowbytes + b * BB;
          s += qb_dot(e, x, q + b * E, bs + b * E / 16, da[b]);
          qb_decode(e, x, deq);
          for (int64_t l = 0; l < E; l++) g += fabs((double)deq[l] * q[b * E + l] * da[b]);
        }
        total = k0 ? total + s : s;
      }
      c[i * n + j] = total;
      mag[i * n + j] = g;
    }
  }
  free(q);
  free(bs);
  free(da);
}

/* Every encoding at (m, n, k): generic entry == reference bit for bit
 * (split into three parts), the AVX2 one as the file's header says. */
static void check_shape(int64_t m, int64_t n, int64_t k) {
  for (int ei = 0; ei < QB_COUNT; ei++) {
    qb_encoding e = (qb_encoding)ei;
    if (k % QB_ELEMS(e)) continue;
    int64_t wbytes = n * (k / QB_ELEMS(e) * QB_BYTES(e));
    float *a = malloc(sizeof *a * (size_t)(m * k + 1));
    float *want = malloc(sizeof(float) * (size_t)(m * n + 1));
    float *got = malloc(sizeof(float) * (size_t)(m * n + 1));
    double *mag = malloc(sizeof(double) * (size_t)(m * n + 1));
    uint8_t *w = malloc((size_t)wbytes + 1);
    cr_assert(a && want && got && mag && w);
    fill(m, n, k, e, a, w);
    reference(m, n, k, e, a, w, want, mag);
    int64_t cut1 = n / 3, cut2 = 2 * n / 3;
    GENERIC[e](m, n, k, a, w, got, 0, cut1);
    GENERIC[e](m, n, k, a, w, got, cut1, cut2);
    GENERIC[e](m, n, k, a, w, got, cut2, n);
    for (int64_t i = 0; i < m * n; i++)
      cr_expect(got[i] == want[i] || (isnan(got[i]) && isnan(want[i])),
                "%s generic m=%lld n=%lld k=%lld [%lld]: %.9g, reference %.9g", qb_name(e),
                (long long)m, (long long)n, (long long)k, (long long)i, got[i], want[i]);
#if defined(__x86_64__)
    qmm_fn x86[X86_PATHS];
    x86_entries(e, x86);
    for (int v = 0; v < X86_PATHS; v++) {
      if (!x86[v]) continue;
      memset(got, 0, sizeof(float) * (size_t)(m * n));
      x86[v](m, n, k, a, w, got, 0, cut2);
      x86[v](m, n, k, a, w, got, cut2, n);
      /* f32 sums of k / 32 blocks in two orders: within (blocks + 8) ulps of mag */
      double tol = QB_LHS_IS_K(e) ? 0 : (double)(k / 32 + 8) * 0x1p-24;
      for (int64_t i = 0; i < m * n; i++)
        cr_expect(fabs((double)got[i] - want[i]) <= tol * mag[i] ||
                      (isnan(got[i]) && isnan(want[i])),
                  "%s %s m=%lld n=%lld k=%lld [%lld]: %.9g, reference %.9g", qb_name(e),
                  X86_NAMES[v], (long long)m, (long long)n, (long long)k, (long long)i,
                  got[i], want[i]);
    }
#endif
    free(a);
    free(want);
    free(got);
    free(mag);
    free(w);
  }
}

Test(qmatmul_template, one_block_row_and_odd_shapes) {
  check_shape(1, 1, 256);
  check_shape(3, 7, 256);
  check_shape(5, 9, 96);
}

Test(qmatmul_template, several_blocks_and_rows_of_lhs) {
  check_shape(1, 33, 4096);
  check_shape(6, 5, 1280);
}

/* every count of blocks up to nine: q4_0's x86 entries step over four
 * (512-bit) or two (256-bit) blocks at a time, then a short step */
Test(qmatmul_template, rows_of_one_to_nine_blocks) {
  for (int64_t k = 32; k <= 288; k += 32) {
    check_shape(1, 5, k);
    check_shape(2, 3, k);
  }
}

/* W's last byte just before a page that cannot be read: no entry reads
 * past the end of its rows (a short last step loads only its own bytes) */
Test(qmatmul_template, no_read_past_the_last_row) {
  long page = sysconf(_SC_PAGESIZE);
  for (int ei = 0; ei < QB_COUNT; ei++) {
    qb_encoding e = (qb_encoding)ei;
    for (int64_t nb = 1; nb <= 5; nb++) {
      enum { M = 1, N = 2 };
      int64_t k = nb * QB_ELEMS(e), wbytes = N * nb * QB_BYTES(e);
      size_t span = (size_t)((wbytes + page - 1) / page + 1) * (size_t)page;
      uint8_t *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      cr_assert(map != MAP_FAILED);
      cr_assert(mprotect(map + span - (size_t)page, (size_t)page, PROT_NONE) == 0);
      uint8_t *w = map + span - (size_t)page - (size_t)wbytes;
      float a[M * 5 * 256], want[M * N], got[M * N];
      double mag[M * N];
      fill(M, N, k, e, a, w);
      reference(M, N, k, e, a, w, want, mag);
      qmm_fn fns[ENTRIES];
      every_entry(e, fns);
      for (int f = 0; f < ENTRIES; f++) {
        if (!fns[f]) continue;
        fns[f](M, N, k, a, w, got, 0, N);
        for (int j = 0; j < M * N; j++)
          cr_expect(fabs((double)got[j] - want[j]) <= 1e-5 * mag[j],
                    "%s entry %d nb=%lld [%d]: %g, reference %g", qb_name(e), f, (long long)nb, j,
                    got[j], want[j]);
      }
      munmap(map, span);
    }
  }
}

Test(qmatmul_template, k_across_chunks_of_the_quantized_lhs) {
  check_shape(3, 4, 16384 + 512);
  check_shape(1, 3, 2 * 16384 + 256);
}

/* A prefill quantizes groups of rows of A (as many as its buffer holds
 * for the whole K) once per pass: several MB-row tiles and a row left
 * over in one group (M = 17, K = 4352), one tile a group past the old
 * 4096-column pass (M = 5, K = 16640), and K past the buffer's whole
 * rows (two passes of 32768 columns, the last a tail block) at M = 5. */
Test(qmatmul_template, prefill_groups_and_passes_over_k) {
  check_shape(17, 6, 4096 + 256);
  check_shape(5, 5, 16384 + 256);
  check_shape(17, 3, 16384 + 256);
  check_shape(5, 3, 2 * 16384 + 4096 + 256);
}

/* An all-zero lhs row gives zeros; a row holding an infinity or a NaN gives
 * NaN (its block's scale is NaN); the other rows are untouched. */
Test(qmatmul_template, zero_and_non_finite_lhs_rows) {
  for (int ei = 0; ei < QB_COUNT; ei++) {
    qb_encoding e = (qb_encoding)ei;
    enum { M = 4, N = 3, K = 512 };
    float a[M * K], c[M * N];
    uint8_t w[N * (K / 32) * 34];
    fill(M, N, K, e, a, w);
    for (int i = 0; i < K; i++) a[i] = 0;
    a[K + 300] = INFINITY;
    a[2 * K + 7] = NAN;
    qmm_fn fns[ENTRIES];
    every_entry(e, fns);
    for (int f = 0; f < ENTRIES; f++) {
      if (!fns[f]) continue;
      fns[f](M, N, K, a, w, c, 0, N);
      for (int j = 0; j < N; j++) {
        cr_expect(c[j] == 0, "%s zero row [%d] = %g", qb_name(e), j, c[j]);
        cr_expect(isnan(c[N + j]) && isnan(c[2 * N + j]), "%s non-finite rows [%d]", qb_name(e), j);
        cr_expect(isfinite(c[3 * N + j]), "%s finite row [%d] = %g", qb_name(e), j, c[3 * N + j]);
      }
    }
  }
}
