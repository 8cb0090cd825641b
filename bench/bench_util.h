/* bench_util.h - what the bench drivers share: a monotonic clock, min /
 * median / max of a sample, and the STREAM-like triad every bandwidth
 * figure is compared with (header-only; each driver is one program). */
#ifndef KILN_BENCH_UTIL_H
#define KILN_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* t[n] sorted in place; min, median and max into out[3]. */
static inline void bench_stats(double *t, int n, double out[3]) {
  qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
  out[0] = t[0];
  out[1] = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  out[2] = t[n - 1];
}

/* a[i] = b[i] + s * c[i]: 12 bytes per element by STREAM's count. noinline:
 * one call per timed run, the loop compiled as written; unused: not every
 * driver compares with it. */
__attribute__((noinline, unused)) static void bench_triad(float *restrict a,
                                                          const float *restrict b,
                                                          const float *restrict c, float s,
                                                          int64_t n) {
  for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

#endif
