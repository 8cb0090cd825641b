/* qmatmul_entries.c (bench_qmatmul_entries) - the qmatmul template's x86
 * entries for q4_0 and q8_0 called directly (kernels-templates/qmatmul.c
 * compiled natively, as test_qmatmul_template does), one thread, beside the
 * triad (bench_util.h) in the same rounds: the JIT runs only the host's best
 * entry, so on an AVX-512 host bench_quant never shows the _avx2 (AMD Zen
 * 3 class) or _avxvnni (Alder Lake class) ones this does.
 *
 * A decode step (M = 1) of N x K = 4096 x 4096 and 4096 x 14336; GB/s =
 * the weight's bytes / time. Each entry's result is checked against the
 * host's best entry first (within 1e-4 relative: the entries differ only in
 * the order of their f32 sums). Each round times every entry once, then the
 * triad; medians over rounds.
 *
 * usage: bench_qmatmul_entries [--runs N]
 * Exit status: 0, or 1 when setup or a check failed. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/qblock.h"
#include "bench_util.h"

#if !defined(__x86_64__)
int main(void) {
  fprintf(stderr, "bench_qmatmul_entries: the entries it times are x86-64's\n");
  return 1;
}
#else

typedef void (*qmm_fn)(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W,
                       float *C, int64_t n_lo, int64_t n_hi);
#define DECL(name)                                                                          \
  void kiln_qmatmul_##name(int64_t M, int64_t N, int64_t K, const float *A, const uint8_t *W, \
                           float *C, int64_t n_lo, int64_t n_hi);
DECL(q4_0_avx2)
DECL(q4_0_avxvnni)
DECL(q4_0_avx512)
DECL(q8_0_avx2)
DECL(q8_0_avxvnni)
DECL(q8_0_avx512)

#define TRIAD_N (16 * 1024 * 1024)
enum { ENTRIES = 3, ENCS = 2, SHAPES = 2 };
static const char *const ENTRY_NAMES[ENTRIES] = {"avx2", "avxvnni", "avx512"};
static const qmm_fn FNS[ENCS][ENTRIES] = {
    {kiln_qmatmul_q4_0_avx2, kiln_qmatmul_q4_0_avxvnni, kiln_qmatmul_q4_0_avx512},
    {kiln_qmatmul_q8_0_avx2, kiln_qmatmul_q8_0_avxvnni, kiln_qmatmul_q8_0_avx512}};
static const qb_encoding ENC[ENCS] = {QB_Q4_0, QB_Q8_0};
static const int64_t NK[SHAPES][2] = {{4096, 4096}, {4096, 14336}};

/* the entries this CPU runs (jit/quant.c's conditions) */
static bool runs(int e) {
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  bool fma = avx2 && __builtin_cpu_supports("fma");
  if (e == 0) return avx2;
  if (e == 1) return fma && __builtin_cpu_supports("avxvnni");
  return fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512vbmi");
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static void die(const char *what) {
  fprintf(stderr, "bench_qmatmul_entries: %s\n", what);
  exit(1);
}

int main(int argc, char **argv) {
  int rounds = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      rounds = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench_qmatmul_entries [--runs N]\n");
      return 2;
    }
  }
  int best = -1;
  for (int e = 0; e < ENTRIES; e++)
    if (runs(e)) best = e;
  if (best < 0) die("this CPU has none of the x86 entries (no AVX2 + F16C)");
  float *ta = malloc(sizeof(float) * TRIAD_N), *tb = malloc(sizeof(float) * TRIAD_N);
  float *tc = malloc(sizeof(float) * TRIAD_N);
  double *secs = malloc(sizeof(double) * (size_t)rounds * (ENCS * SHAPES * ENTRIES + 1));
  if (!ta || !tb || !tc || !secs) die("out of memory");
  for (int64_t i = 0; i < TRIAD_N; i++) ta[i] = 0, tb[i] = 1, tc[i] = 2;
  /* the weights of every case, random bytes with small f16 scales */
  uint8_t *w[ENCS][SHAPES];
  float *a[SHAPES], *c[ENTRIES];
  int64_t bytes[ENCS][SHAPES];
  for (int s = 0; s < SHAPES; s++) {
    if (!(a[s] = malloc(sizeof(float) * (size_t)NK[s][1]))) die("out of memory");
    for (int64_t k = 0; k < NK[s][1]; k++) a[s][k] = (float)(next() % 2001) / 1000.0f - 1.0f;
    for (int q = 0; q < ENCS; q++) {
      int64_t bb = QB_BYTES(ENC[q]), nb = NK[s][1] / QB_ELEMS(ENC[q]);
      bytes[q][s] = NK[s][0] * nb * bb;
      if (!(w[q][s] = malloc((size_t)bytes[q][s]))) die("out of memory");
      for (int64_t i = 0; i < bytes[q][s]; i++) w[q][s][i] = (uint8_t)next();
      for (int64_t b = 0; b < NK[s][0] * nb; b++) w[q][s][b * bb + 1] = 0x1c; /* d ~ 2^-8 */
    }
  }
  for (int e = 0; e < ENTRIES; e++)
    if (!(c[e] = malloc(sizeof(float) * 4096))) die("out of memory");
  /* the check: every entry against the host's best */
  for (int q = 0; q < ENCS; q++)
    for (int s = 0; s < SHAPES; s++) {
      int64_t N = NK[s][0], K = NK[s][1];
      for (int e = 0; e < ENTRIES; e++)
        if (runs(e)) FNS[q][e](1, N, K, a[s], w[q][s], c[e], 0, N);
      for (int e = 0; e < ENTRIES; e++)
        for (int64_t n = 0; runs(e) && n < N; n++)
          if (fabsf(c[e][n] - c[best][n]) > 1e-4f * (fabsf(c[best][n]) + 1.0f)) {
            fprintf(stderr, "bench_qmatmul_entries: %s %s %lldx%lld [%lld]: %g, %s %g\n",
                    qb_name(ENC[q]), ENTRY_NAMES[e], (long long)N, (long long)K, (long long)n,
                    (double)c[e][n], ENTRY_NAMES[best], (double)c[best][n]);
            return 1;
          }
    }
  /* rounds: every entry over every (encoding, shape), entry by entry, so
   * that the weights read by one call (up to 62 MB) are never the last
   * call's (which the L3 cache could still hold), then the triad */
  const int ncols = ENCS * SHAPES * ENTRIES;
  for (int r = 0; r < rounds; r++) {
    for (int e = 0; e < ENTRIES; e++)
      for (int q = 0; q < ENCS; q++)
        for (int s = 0; s < SHAPES; s++) {
          if (!runs(e)) continue;
          int col = (q * SHAPES + s) * ENTRIES + e;
          double t0 = bench_now_s();
          FNS[q][e](1, NK[s][0], NK[s][1], a[s], w[q][s], c[e], 0, NK[s][0]);
          secs[col * rounds + r] = bench_now_s() - t0;
        }
    double t0 = bench_now_s();
    bench_triad(ta, tb, tc, 3.0f, TRIAD_N);
    secs[ncols * rounds + r] = bench_now_s() - t0;
  }
  double tri[3];
  bench_stats(secs + (size_t)ncols * rounds, rounds, tri);
  double triad_gbs = 12.0 * TRIAD_N / tri[1] / 1e9;
  printf("triad %.2f GB/s median (%d rounds; min %.2f, max %.2f)\n", triad_gbs, rounds,
         12.0 * TRIAD_N / tri[2] / 1e9, 12.0 * TRIAD_N / tri[0] / 1e9);
  int col = 0;
  for (int q = 0; q < ENCS; q++)
    for (int s = 0; s < SHAPES; s++)
      for (int e = 0; e < ENTRIES; e++, col++) {
        if (!runs(e)) continue;
        double st[3];
        bench_stats(secs + (size_t)col * rounds, rounds, st);
        double gbs = (double)bytes[q][s] / st[1] / 1e9;
        printf("%s_%lldx%lld %-8s median %6.2f GB/s = %.2fx triad (min %6.2f, max %6.2f)\n",
               qb_name(ENC[q]), (long long)NK[s][0], (long long)NK[s][1], ENTRY_NAMES[e], gbs,
               gbs / triad_gbs, (double)bytes[q][s] / st[2] / 1e9,
               (double)bytes[q][s] / st[0] / 1e9);
      }
  return 0;
}
#endif
