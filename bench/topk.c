/* topk.c (bench_topk) - mo.top_k over LLM-sampling logits through the public
 * API, on one thread, beside a plain C partial selection:
 *
 *  - shapes [1, 32000] and [8, 128256] f32, k = 1, 8, 50, along the last
 *    axis (--shape R,N for one other shape, --k K for one k);
 *  - the C anchor keeps, per row, the k best so far sorted in a small array
 *    and tests each element against the last kept one (what a hand-written
 *    sampler does; no full sort);
 *  - kiln's values and indices are checked against the anchor's before
 *    timing (equal values keep the lower index first on both sides).
 *
 * Times are min / median / max over the runs; ratio = anchor time / kiln
 * time (>= 1: kiln is as fast). usage: bench_topk [--runs N] [--shape R,N]
 * [--k K] [--tsv]; --tsv: R <case> <who> 1 us <runs> <min> <median> <max>.
 * Exit status: 0, or 1 when setup or an output check failed. */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_topk: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

/* The anchor: row by row, a sorted array of the k largest so far. */
static void c_topk(const float *x, int64_t rows, int64_t n, int64_t k, float *v, int64_t *ix) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    float *vr = v + r * k;
    int64_t *ir = ix + r * k, cnt = 0;
    for (int64_t i = 0; i < n; i++) {
      float e = xr[i];
      if (cnt == k && !(e > vr[k - 1])) continue;
      int64_t p = cnt < k ? cnt++ : k - 1;
      while (p > 0 && e > vr[p - 1]) {
        vr[p] = vr[p - 1];
        ir[p] = ir[p - 1];
        p--;
      }
      vr[p] = e;
      ir[p] = i;
    }
  }
}

static kiln_model *build(kiln_context *ctx, int64_t rows, int64_t n, int64_t k, kiln_status *st) {
  char dr[24], dn[24], attrs[64];
  snprintf(dr, sizeof dr, "%lld", (long long)rows);
  snprintf(dn, sizeof dn, "%lld", (long long)n);
  snprintf(attrs, sizeof attrs, "{k = %lld}", (long long)k);
  const char *dx[2] = {dr, dn};
  kiln_graph *g = kiln_graph_new("topk", st);
  if (!g) die("graph", st);
  kiln_value *v = kiln_graph_add_input(g, "x", KILN_FLOAT32, 2, dx, st);
  if (!v || !(v = kiln_graph_add_op(g, "mo.top_k", &v, 1, attrs, NULL, st))) die("mo.top_k", st);
  kiln_value *outs[2] = {v, kiln_value_result(v, 1)};
  if (!outs[1] || kiln_graph_set_outputs(g, outs, 2, NULL, st) != 0) die("outputs", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile", st);
  kiln_graph_free(g);
  return m;
}

static double report(const char *id, const char *who, double *t, int n, bool tsv) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  if (tsv)
    printf("R\t%s\t%s\t1\tus\t%d\t%.3f\t%.3f\t%.3f\n", id, who, n, t[0] * 1e6, med * 1e6,
           t[n - 1] * 1e6);
  else
    printf("%-22s %-6s %5d runs %10.2f %10.2f %10.2f us (min median max)\n", id, who, n,
           t[0] * 1e6, med * 1e6, t[n - 1] * 1e6);
  return med;
}

static void run_case(kiln_context *ctx, const float *x, int64_t rows, int64_t n, int64_t k,
                     int runs, bool tsv, kiln_status *st) {
  char id[64];
  snprintf(id, sizeof id, "top_k[%lld,%lld] k=%lld", (long long)rows, (long long)n, (long long)k);
  kiln_model *m = build(ctx, rows, n, k, st);
  int64_t xs[2] = {rows, n}, os[2] = {rows, k};
  float *v = malloc((size_t)(rows * k) * sizeof *v), *cv = malloc((size_t)(rows * k) * sizeof *cv);
  int64_t *ix = malloc((size_t)(rows * k) * sizeof *ix), *cix = malloc((size_t)(rows * k) * sizeof *cix);
  double *t = malloc((size_t)runs * sizeof *t);
  if (!v || !cv || !ix || !cix || !t) die("out of memory", NULL);
  kiln_tensor *in = kiln_tensor_borrow(KILN_FLOAT32, 2, xs, (void *)x, st);
  kiln_tensor *out[2] = {kiln_tensor_borrow(KILN_FLOAT32, 2, os, v, st),
                         kiln_tensor_borrow(KILN_INT64, 2, os, ix, st)};
  if (!in || !out[0] || !out[1]) die("tensor", st);
  if (kiln_model_execute(m, &in, 1, out, 2, st) != 0) die("execute", st);
  c_topk(x, rows, n, k, cv, cix);
  if (memcmp(v, cv, (size_t)(rows * k) * sizeof *v) || memcmp(ix, cix, (size_t)(rows * k) * sizeof *ix)) {
    fprintf(stderr, "bench_topk: %s: kiln and the C selection differ\n", id);
    exit(1);
  }
  for (int i = 0; i < 3; i++) kiln_model_execute(m, &in, 1, out, 2, st); /* warm up */
  for (int i = 0; i < runs; i++) {
    double t0 = now_s();
    if (kiln_model_execute(m, &in, 1, out, 2, st) != 0) die("execute", st);
    t[i] = now_s() - t0;
  }
  double tk = report(id, "kiln", t, runs, tsv);
  for (int i = 0; i < runs; i++) {
    double t0 = now_s();
    c_topk(x, rows, n, k, cv, cix);
    t[i] = now_s() - t0;
  }
  double tc = report(id, "C", t, runs, tsv);
  if (!tsv) printf("%-22s ratio  %.2f (C time / kiln time)\n", id, tc / tk);
  free(v), free(cv), free(ix), free(cix), free(t);
  kiln_tensor_free(in);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  kiln_model_free(m);
}

int main(int argc, char **argv) {
  int runs = 100;
  bool tsv = false;
  int64_t one_rows = 0, one_n = 0, one_k = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tsv")) tsv = true;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--k") && i + 1 < argc) one_k = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
      long long r, n;
      if (sscanf(argv[++i], "%lld,%lld", &r, &n) != 2 || r < 1 || n < 1) {
        fprintf(stderr, "bench_topk: --shape R,N\n");
        return 2;
      }
      one_rows = r, one_n = n;
    } else {
      fprintf(stderr, "usage: bench_topk [--runs N] [--shape R,N] [--k K] [--tsv]\n");
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx || kiln_context_set_num_threads(ctx, 1, st) != 0) die("context", st);
  int64_t shapes[2][2] = {{1, 32000}, {8, 128256}}, ks[3] = {1, 8, 50};
  int nshapes = 2, nks = 3;
  if (one_rows) shapes[0][0] = one_rows, shapes[0][1] = one_n, nshapes = 1;
  if (one_k) ks[0] = one_k, nks = 1;
  for (int s = 0; s < nshapes; s++) {
    int64_t rows = shapes[s][0], n = shapes[s][1];
    float *x = malloc((size_t)(rows * n) * sizeof *x);
    if (!x) die("out of memory", NULL);
    uint32_t r = 12345;
    for (int64_t i = 0; i < rows * n; i++) {
      r = r * 1664525u + 1013904223u;
      x[i] = (float)((double)(r >> 8) / (1 << 24) * 16.0 - 8.0);
    }
    for (int j = 0; j < nks; j++)
      if (ks[j] <= n) run_case(ctx, x, rows, n, ks[j], runs, tsv, st);
    free(x);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
