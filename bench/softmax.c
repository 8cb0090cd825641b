/* softmax.c (bench_softmax) - attention-shaped softmax through the public
 * API, on one thread:
 *
 *  - "softmax":        y = softmax(x, axis = -1)
 *  - "scale+mask+softmax": y = softmax(x * 0.125 + mask), the mask
 *    [1, 1, S, S] broadcast onto x (what an attention block does between
 *    q k^T and the product with v)
 *
 * x is [B, H, S, S] f32 (default [1, 12, 384, 384]; --shape B,H,S). Each
 * case is checked against a C reference in double before timing (|d| <=
 * 1e-6 + 1e-5 |ref|), then timed as kiln_model_execute on borrowed,
 * preallocated tensors: min / median / max over the runs. Run with
 * KILN_FUSE=0 to see the unfused kernels.
 *
 * usage: bench_softmax [--runs N] [--shape B,H,S] [--only softmax|masked] [--cpu-time]
 *                      [--tsv]
 *   --only: run one of the two cases (for a profiler);
 *   --cpu-time: time with the calling thread's CPU clock (kiln on one
 *     thread runs its kernels in the caller): steadier on a loaded machine;
 *   --tsv: R <case> kiln <threads> us <runs> <min> <median> <max> lines.
 * Exit status: 0, or 1 when setup or an output check failed. */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool cpu_clock; /* --cpu-time */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_softmax: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

static float *xalloc(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) die("out of memory", NULL);
  return p;
}

typedef struct shape {
  int64_t b, h, s;
} shape;

/* softmax(x [* scale + mask]) as a compiled model; mask NULL: plain. */
static kiln_model *build(kiln_context *ctx, const shape *sh, bool masked, kiln_status *st) {
  char db[24], dh[24], ds[24];
  snprintf(db, sizeof db, "%lld", (long long)sh->b);
  snprintf(dh, sizeof dh, "%lld", (long long)sh->h);
  snprintf(ds, sizeof ds, "%lld", (long long)sh->s);
  const char *dx[4] = {db, dh, ds, ds}, *dm[4] = {"1", "1", ds, ds};
  kiln_graph *g = kiln_graph_new("softmax", st);
  if (!g) die("graph", st);
  kiln_value *v = kiln_graph_add_input(g, "x", KILN_FLOAT32, 4, dx, st);
  if (!v) die("input x", st);
  if (masked) {
    kiln_value *m = kiln_graph_add_input(g, "mask", KILN_FLOAT32, 4, dm, st);
    float c = 0.125f;
    kiln_value *vc = kiln_graph_add_constant(g, KILN_FLOAT32, 0, NULL, &c, st);
    if (!m || !vc) die("mask / scale", st);
    kiln_value *o1[2] = {v, vc};
    if (!(v = kiln_graph_add_op(g, "mo.mul", o1, 2, NULL, NULL, st))) die("mo.mul", st);
    kiln_value *o2[2] = {v, m};
    if (!(v = kiln_graph_add_op(g, "mo.add", o2, 2, NULL, NULL, st))) die("mo.add", st);
  }
  v = kiln_graph_add_op(g, "mo.softmax", &v, 1, "{axis = -1}", NULL, st);
  if (!v || kiln_graph_set_outputs(g, &v, 1, NULL, st) != 0) die("mo.softmax", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile", st);
  kiln_graph_free(g);
  return m;
}

/* The worst |y - ref| / (1e-6 + 1e-5 |ref|) over the tensor (NaN sticks). */
static double check(const float *y, const float *x, const float *mask, const shape *sh) {
  int64_t S = sh->s, rows = sh->b * sh->h * S;
  double worst = 0;
  double *t = malloc((size_t)S * sizeof *t);
  if (!t) die("out of memory", NULL);
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * S;
    const float *mr = mask ? mask + (r % S) * S : NULL;
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < S; j++) {
      t[j] = mr ? (double)(float)((double)(float)(xr[j] * 0.125f) + mr[j]) : xr[j];
      if (t[j] > m) m = t[j];
    }
    for (int64_t j = 0; j < S; j++) s += exp(t[j] - m);
    for (int64_t j = 0; j < S; j++) {
      double ref = exp(t[j] - m) / s;
      double d = fabs((double)y[r * S + j] - ref) / (1e-6 + 1e-5 * fabs(ref));
      if (!(d <= worst)) worst = d;
    }
  }
  free(t);
  return worst;
}

static void report(const char *id, int threads, double *t, int n, bool tsv) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  if (tsv)
    printf("R\t%s\tkiln\t%d\tus\t%d\t%.3f\t%.3f\t%.3f\n", id, threads, n, t[0] * 1e6, med * 1e6,
           t[n - 1] * 1e6);
  else
    printf("%-20s kiln %2d thr %5d runs %10.2f %10.2f %10.2f us (min median max)\n", id, threads,
           n, t[0] * 1e6, med * 1e6, t[n - 1] * 1e6);
  fflush(stdout);
}

static void run_case(kiln_context *ctx, const shape *sh, bool masked, float *x, float *mask,
                     float *y, int runs, bool tsv, kiln_status *st) {
  kiln_model *m = build(ctx, sh, masked, st);
  int64_t xs[4] = {sh->b, sh->h, sh->s, sh->s}, ms[4] = {1, 1, sh->s, sh->s};
  kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 4, xs, x, st),
                        masked ? kiln_tensor_borrow(KILN_FLOAT32, 4, ms, mask, st) : NULL};
  kiln_tensor *out = kiln_tensor_borrow(KILN_FLOAT32, 4, xs, y, st);
  if (!in[0] || (masked && !in[1]) || !out) die("tensor", st);
  int nin = masked ? 2 : 1;
  if (kiln_model_execute(m, in, nin, &out, 1, st) != 0) die("execute", st);
  double worst = check(y, x, masked ? mask : NULL, sh);
  if (!(worst <= 1.0)) {
    fprintf(stderr, "bench_softmax: %s: output check failed (worst %.3g)\n",
            masked ? "scale+mask+softmax" : "softmax", worst);
    exit(1);
  }
  double *t = malloc((size_t)runs * sizeof *t);
  if (!t) die("out of memory", NULL);
  for (int i = 0; i < 3; i++) kiln_model_execute(m, in, nin, &out, 1, st); /* warm up */
  for (int i = 0; i < runs; i++) {
    double t0 = now_s();
    if (kiln_model_execute(m, in, nin, &out, 1, st) != 0) die("execute", st);
    t[i] = now_s() - t0;
  }
  report(masked ? "scale+mask+softmax" : "softmax", 1, t, runs, tsv);
  free(t);
  for (int i = 0; i < nin; i++) kiln_tensor_free(in[i]);
  kiln_tensor_free(out);
  kiln_model_free(m);
}

int main(int argc, char **argv) {
  shape sh = {1, 12, 384};
  int runs = 200;
  bool tsv = false;
  const char *only = "";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tsv")) tsv = true;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--cpu-time")) cpu_clock = true;
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
      long long b, h, s;
      if (sscanf(argv[++i], "%lld,%lld,%lld", &b, &h, &s) != 3 || b < 1 || h < 1 || s < 1) {
        fprintf(stderr, "bench_softmax: --shape B,H,S\n");
        return 2;
      }
      sh = (shape){b, h, s};
    } else {
      fprintf(stderr, "usage: bench_softmax [--runs N] [--shape B,H,S] [--only softmax|masked] "
                      "[--cpu-time] [--tsv]\n");
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx || kiln_context_set_num_threads(ctx, 1, st) != 0) die("context", st);
  size_t nx = (size_t)(sh.b * sh.h * sh.s * sh.s), nm = (size_t)(sh.s * sh.s);
  float *x = xalloc(nx), *mask = xalloc(nm), *y = xalloc(nx);
  uint32_t s = 12345;
  for (size_t i = 0; i < nx; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((double)(s >> 8) / (1 << 24) * 16.0 - 8.0);
  }
  for (size_t i = 0; i < nm; i++) /* causal: 0 on and below the diagonal */
    mask[i] = (int64_t)(i % (size_t)sh.s) > (int64_t)(i / (size_t)sh.s) ? -10000.0f : 0.0f;
  if (strcmp(only, "masked") != 0) run_case(ctx, &sh, false, x, mask, y, runs, tsv, st);
  if (strcmp(only, "softmax") != 0) run_case(ctx, &sh, true, x, mask, y, runs, tsv, st);
  free(x);
  free(mask);
  free(y);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
