/* profile.c - `kiln run --profile`: the per-kernel table of a model's
 * profile (kiln_model_profile) beside the machine's peaks, measured once
 * per run: memory bandwidth as the best of three 64 MiB memcpy passes
 * (bytes read plus written), and compute as the best of three executes
 * of a 512 x 512 x 512 f32 matmul compiled in the same context (kiln's
 * own GEMM on the same threads: the rate a kernel here could reach). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_profile.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* GB/s of memcpy (read + write); 0 when memory is short. */
static double peak_bandwidth(void) {
  size_t n = (size_t)64 << 20;
  char *a = malloc(n), *b = malloc(n);
  double best = 0;
  if (a && b) {
    memset(a, 1, n);
    memset(b, 2, n);
    for (int r = 0; r < 3; r++) {
      double t0 = now_s();
      memcpy(b, a, n);
      double dt = now_s() - t0;
      if (dt > 0 && 2.0 * (double)n / dt / 1e9 > best) best = 2.0 * (double)n / dt / 1e9;
      a[r] = b[n - 1 - (size_t)r]; /* keeps the copies observable */
    }
  }
  free(a);
  free(b);
  return best;
}

/* GFLOP/s of a 512^3 f32 matmul in ctx; 0 when it cannot run. */
static double peak_compute(kiln_context *ctx) {
  static const char text[] =
      "mo.graph @kiln_peak(%a: !mo.tensor<[512, 512], f32>, %b: !mo.tensor<[512, 512], f32>) "
      "-> (!mo.tensor<[512, 512], f32>) {\n"
      "  %c = mo.matmul(%a, %b) : (!mo.tensor<[512, 512], f32>, !mo.tensor<[512, 512], f32>) "
      "-> !mo.tensor<[512, 512], f32>\n"
      "  mo.output %c : !mo.tensor<[512, 512], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, sizeof text - 1, "<peak>", st);
  kiln_model *m = g ? kiln_model_compile(ctx, g, st) : NULL;
  int64_t shape[2] = {512, 512};
  kiln_tensor *a = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
  kiln_tensor *b = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
  kiln_tensor *c = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
  double best = 0;
  if (m && a && b && c) {
    for (int r = 0; r < 4; r++) { /* the first warms the caches and the pool */
      double t0 = now_s();
      if (kiln_model_execute(m, (kiln_tensor *[]){a, b}, 2, &c, 1, st) < 0) break;
      double dt = now_s() - t0;
      double rate = 2.0 * 512 * 512 * 512 / dt / 1e9;
      if (r > 0 && dt > 0 && rate > best) best = rate;
    }
  }
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  kiln_tensor_free(c);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_status_free(st);
  return best;
}

int cli_print_profile(FILE *out, kiln_context *ctx, const kiln_model *m, kiln_status *st) {
  kiln_profile *p = kiln_model_profile(m, st);
  if (!p) return -1;
  double bw = peak_bandwidth(), fl = peak_compute(ctx);
  int n = kiln_profile_num_rows(p);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += kiln_profile_row_at(p, i)->total_ms;
  fprintf(out, "profile: %llu execute%s, %.3f ms in executes, %.3f ms in kernels\n",
          (unsigned long long)kiln_profile_executes(p), kiln_profile_executes(p) == 1 ? "" : "s",
          kiln_profile_execute_ms(p), sum);
  fprintf(out, "peak (measured now): %.1f GB/s memcpy, %.1f GFLOP/s f32 matmul 512^3\n", bw, fl);
  fprintf(out, "%4s  %-32s %-24s %7s %10s %10s %6s  %s\n", "node", "kernel", "shape", "calls",
          "total ms", "mean ms", "share", "rate (of peak)");
  for (int i = 0; i < n; i++) {
    const kiln_profile_row *r = kiln_profile_row_at(p, i);
    char rate[64] = "-";
    double s = r->total_ms / 1e3;
    if (s > 0 && r->gflop > 0)
      snprintf(rate, sizeof rate, "%.2f GFLOP/s (%.0f%%)", r->gflop / s,
               fl > 0 ? 100.0 * r->gflop / s / fl : 0.0);
    else if (s > 0 && r->gbyte > 0)
      snprintf(rate, sizeof rate, "%.2f GB/s (%.0f%%)", r->gbyte / s,
               bw > 0 ? 100.0 * r->gbyte / s / bw : 0.0);
    fprintf(out, "%4d  %-32.32s %-24.24s %7llu %10.3f %10.4f %5.1f%%  %s\n", r->node, r->kernel,
            r->shape, (unsigned long long)r->calls, r->total_ms, r->mean_ms, 100.0 * r->share,
            rate);
  }
  kiln_profile_free(p);
  return 0;
}
