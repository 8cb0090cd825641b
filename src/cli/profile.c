/* profile.c - `kiln run --profile`: the per-kernel table of a model's
 * profile (kiln_model_profile) beside the peaks of where it ran, measured
 * once per run: memory bandwidth as the best of three 64 MiB copies (bytes
 * read plus written: memcpy on the host, a copy within a device's memory
 * for a device model), and compute as the best of three executes of an
 * f32 matmul compiled in the same context for the same target (kiln's own
 * GEMM on the same threads or device: the rate a kernel there could
 * reach; 512^3, or 128^3 on simt-emu, whose emulated threads are slow).
 * A device model's copy rows are rated against the host's memcpy. The
 * context's trace (--trace) is closed before the peaks are measured. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../device.h"
#include "cli.h"
#include "cli_profile.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* GB/s of a copy of n bytes within d (read + write), best of three; 0
 * when it cannot run. */
static double peak_device_bandwidth(kiln_device *d) {
  size_t n = (size_t)64 << 20;
  kiln_devptr a = 0, b = 0;
  double best = 0;
  if (kiln_device_alloc(d, n, &a, NULL) == 0 && kiln_device_alloc(d, n, &b, NULL) == 0) {
    for (int r = 0; r < 4; r++) { /* the first touches the pages */
      double t0 = now_s();
      if (rt_device_copy_dd(d, b, a, n, NULL) < 0 || kiln_device_synchronize(d, NULL) < 0) break;
      double dt = now_s() - t0;
      if (r > 0 && dt > 0 && 2.0 * (double)n / dt / 1e9 > best) best = 2.0 * (double)n / dt / 1e9;
    }
  }
  kiln_device_free(d, a);
  kiln_device_free(d, b);
  return best;
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

/* GFLOP/s of an n^3 f32 matmul in ctx, on d (NULL: the host); 0 when it
 * cannot run. */
static double peak_compute(kiln_context *ctx, kiln_device *d, int n) {
  char text[640];
  snprintf(text, sizeof text,
           "mo.graph @kiln_peak(%%a: !mo.tensor<[%d, %d], f32>, %%b: !mo.tensor<[%d, %d], f32>) "
           "-> (!mo.tensor<[%d, %d], f32>) {\n"
           "  %%c = mo.matmul(%%a, %%b) : !mo.tensor<[%d, %d], f32>\n"
           "  mo.output %%c : !mo.tensor<[%d, %d], f32>\n}\n",
           n, n, n, n, n, n, n, n, n, n);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "<peak>", st);
  kiln_model *m = g ? kiln_model_compile_on(ctx, d, g, st) : NULL;
  int64_t shape[2] = {n, n};
  kiln_tensor *t[3];
  for (int i = 0; i < 3; i++) /* on the device: no copies through the host */
    t[i] = d ? kiln_tensor_new_on(d, KILN_FLOAT32, 2, shape, st)
             : kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
  double best = 0;
  if (m && t[0] && t[1] && t[2]) {
    for (int r = 0; r < 4; r++) { /* the first warms the caches and the pool */
      double t0 = now_s();
      if (kiln_model_execute(m, t, 2, &t[2], 1, st) < 0) break;
      double dt = now_s() - t0;
      double rate = 2.0 * n * n * (double)n / dt / 1e9;
      if (r > 0 && dt > 0 && rate > best) best = rate;
    }
  }
  for (int i = 0; i < 3; i++) kiln_tensor_free(t[i]);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_status_free(st);
  return best;
}

int cli_print_profile(FILE *out, kiln_context *ctx, const kiln_model *m, kiln_status *st) {
  kiln_profile *p = kiln_model_profile(m, st);
  if (!p) return -1;
  /* the run's trace ends here: the peaks' compiles and executes are not the run's */
  if (kiln_context_set_trace(ctx, NULL, st) < 0) {
    kiln_profile_free(p);
    return -1;
  }
  kiln_device *d = kiln_model_device(m);
  bool emu = d && kiln_device_get_kind(d) == KILN_DEVICE_SIMT_EMU;
  int mm = emu ? 128 : 512;
  double host_bw = peak_bandwidth(), bw = d ? peak_device_bandwidth(d) : host_bw;
  double fl = peak_compute(ctx, d, mm);
  int n = kiln_profile_num_rows(p);
  double sum = 0;
  for (int i = 0; i < n; i++)
    if (kiln_profile_row_at(p, i)->node >= 0) sum += kiln_profile_row_at(p, i)->total_ms;
  fprintf(out, "profile: %llu execute%s, %.3f ms in executes, %.3f ms in kernels\n",
          (unsigned long long)kiln_profile_executes(p), kiln_profile_executes(p) == 1 ? "" : "s",
          kiln_profile_execute_ms(p), sum);
  if (d)
    fprintf(out, "peak (measured now on %s): %.1f GB/s copy within the device, %.1f GFLOP/s f32 "
            "matmul %d^3; copies in and out against the host's %.1f GB/s memcpy\n",
            kiln_device_label(d), bw, fl, mm, host_bw);
  else
    fprintf(out, "peak (measured now): %.1f GB/s memcpy, %.1f GFLOP/s f32 matmul %d^3\n", bw, fl,
            mm);
  fprintf(out, "%4s  %-32s %-24s %7s %10s %10s %6s  %s\n", "node", "kernel", "shape", "calls",
          "total ms", "mean ms", "share", "rate (of peak)");
  for (int i = 0; i < n; i++) {
    const kiln_profile_row *r = kiln_profile_row_at(p, i);
    char rate[64] = "-";
    double s = r->total_ms / 1e3;
    if (s > 0 && r->gflop > 0)
      snprintf(rate, sizeof rate, "%.2f GFLOP/s (%.0f%%)", r->gflop / s,
               fl > 0 ? 100.0 * r->gflop / s / fl : 0.0);
    else if (s > 0 && r->gbyte > 0) {
      double peak = r->node < 0 ? host_bw : bw; /* a copy between host and device */
      snprintf(rate, sizeof rate, "%.2f GB/s (%.0f%%)", r->gbyte / s,
               peak > 0 ? 100.0 * r->gbyte / s / peak : 0.0);
    }
    fprintf(out, "%4d  %-32.32s %-24.24s %7llu %10.3f %10.4f %5.1f%%  %s\n", r->node, r->kernel,
            r->shape, (unsigned long long)r->calls, r->total_ms, r->mean_ms, 100.0 * r->share,
            rate);
  }
  kiln_profile_free(p);
  return 0;
}
