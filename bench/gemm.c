/* gemm.c (bench_gemm) - single-precision GEMM GFLOP/s: kiln (a one-op
 * mo.matmul graph with static shapes, through the public API) against
 * oneDNN's dnnl_sgemm and OpenBLAS's cblas_sgemm in the same run, when the
 * build found them (KILN_BENCH_DNNL / KILN_BENCH_OPENBLAS; CMake block
 * "kernel templates"). Cases: M = N = K = 256, 512, 1024, 2048 and the
 * batch-1 linear layer M = 1, K = N = 4096. Row-major C = A B, seeded
 * uniform [-1, 1] inputs; each anchor's result is checked against kiln's
 * before timing (|diff| <= 1e-5 * K). Per case: one warm-up each, then R
 * rounds (R from the case size, 9 to 300) that time kiln and every anchor
 * once, interleaved, so machine noise hits all columns alike; min / median /
 * max GFLOP/s and the ratio of medians kiln / anchor.
 *
 * Fairness (../shared/ANCHORS.md): run with one thread on every side, e.g.
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=1 \
 *       OPENBLAS_NUM_THREADS=1 bench_gemm
 * (kiln runs the GEMM on the calling thread). usage: bench_gemm [--quick] */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef KILN_BENCH_DNNL
#include <dnnl.h>
#endif
#ifdef KILN_BENCH_OPENBLAS
#include <cblas.h>
#endif

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
  fprintf(stderr, "bench_gemm: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

typedef struct stats {
  double min, med, max; /* GFLOP/s */
} stats;

static stats summarize(double *secs, int n, double flops) {
  qsort(secs, (size_t)n, sizeof *secs, cmp);
  double med = n % 2 ? secs[n / 2] : (secs[n / 2 - 1] + secs[n / 2]) / 2;
  stats s = {flops / secs[n - 1] / 1e9, flops / med / 1e9, flops / secs[0] / 1e9};
  return s;
}

typedef struct gcase {
  int64_t m, n, k;
} gcase;

typedef struct kiln_gemm {
  kiln_model *model;
  kiln_tensor *a, *b, *c;
} kiln_gemm;

static void kiln_setup(kiln_context *ctx, kiln_gemm *g, gcase c, float *a, float *b, float *out,
                       kiln_status *st) {
  char dm[32], dn[32], dk[32];
  snprintf(dm, sizeof dm, "%lld", (long long)c.m);
  snprintf(dn, sizeof dn, "%lld", (long long)c.n);
  snprintf(dk, sizeof dk, "%lld", (long long)c.k);
  kiln_graph *gr = kiln_graph_new("gemm", st);
  if (!gr) die("graph", st);
  const char *da[2] = {dm, dk}, *db[2] = {dk, dn};
  kiln_value *va = kiln_graph_add_input(gr, "a", KILN_FLOAT32, 2, da, st);
  kiln_value *vb = kiln_graph_add_input(gr, "b", KILN_FLOAT32, 2, db, st);
  if (!va || !vb) die("inputs", st);
  kiln_value *ops[2] = {va, vb};
  kiln_value *vc = kiln_graph_add_op(gr, "mo.matmul", ops, 2, NULL, NULL, st);
  if (!vc || kiln_graph_set_outputs(gr, &vc, 1, NULL, st) != 0) die("matmul", st);
  g->model = kiln_model_compile(ctx, gr, st);
  if (!g->model) die("compile", st);
  kiln_graph_free(gr);
  int64_t sa[2] = {c.m, c.k}, sb[2] = {c.k, c.n}, sc[2] = {c.m, c.n};
  g->a = kiln_tensor_borrow(KILN_FLOAT32, 2, sa, a, st);
  g->b = kiln_tensor_borrow(KILN_FLOAT32, 2, sb, b, st);
  g->c = kiln_tensor_borrow(KILN_FLOAT32, 2, sc, out, st);
  if (!g->a || !g->b || !g->c) die("tensors", st);
}

static void kiln_run(kiln_gemm *g, kiln_status *st) {
  kiln_tensor *in[2] = {g->a, g->b};
  if (kiln_model_execute(g->model, in, 2, &g->c, 1, st) != 0) die("execute", st);
}

static void kiln_teardown(kiln_gemm *g) {
  kiln_tensor_free(g->a);
  kiln_tensor_free(g->b);
  kiln_tensor_free(g->c);
  kiln_model_free(g->model);
}

enum { KILN = 0, DNNL, OPENBLAS, NIMPL };
static const char *IMPL_NAMES[NIMPL] = {"kiln", "oneDNN", "OpenBLAS"};

static bool impl_available(int impl) {
  switch (impl) {
  case KILN: return true;
#ifdef KILN_BENCH_DNNL
  case DNNL: return true;
#endif
#ifdef KILN_BENCH_OPENBLAS
  case OPENBLAS: return true;
#endif
  default: return false;
  }
}

static void run_impl(int impl, kiln_gemm *g, gcase c, const float *a, const float *b, float *out,
                     kiln_status *st) {
  (void)a;
  (void)b;
  (void)out;
  (void)c;
  switch (impl) {
  case KILN: kiln_run(g, st); break;
#ifdef KILN_BENCH_DNNL
  case DNNL:
    if (dnnl_sgemm('N', 'N', c.m, c.n, c.k, 1.0f, a, c.k, b, c.n, 0.0f, out, c.n) != dnnl_success) {
      fprintf(stderr, "bench_gemm: dnnl_sgemm failed\n");
      exit(1);
    }
    break;
#endif
#ifdef KILN_BENCH_OPENBLAS
  case OPENBLAS:
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)c.m, (int)c.n, (int)c.k, 1.0f, a,
                (int)c.k, b, (int)c.n, 0.0f, out, (int)c.n);
    break;
#endif
  default: break;
  }
}

int main(int argc, char **argv) {
  bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  static const gcase cases[] = {
      {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {1, 4096, 4096}};
  int ncases = (int)(sizeof cases / sizeof cases[0]);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  printf("target: %s\n", kiln_context_target(ctx));
  printf("threads: kiln 1 (calling thread); OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s\n",
         getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "(unset)",
         getenv("OPENBLAS_NUM_THREADS") ? getenv("OPENBLAS_NUM_THREADS") : "(unset)");
  printf("GFLOP/s per run (min = slowest run, max = fastest)\n");
  printf("%-22s %-9s %5s %9s %9s %9s %12s\n", "case", "impl", "runs", "min", "median", "max",
         "kiln/impl");
  for (int ci = 0; ci < ncases; ci++) {
    gcase c = cases[ci];
    double flops = 2.0 * (double)c.m * (double)c.n * (double)c.k;
    size_t na = (size_t)(c.m * c.k), nb = (size_t)(c.k * c.n), nc = (size_t)(c.m * c.n);
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    float *ref = malloc(nc * sizeof *ref), *out = malloc(nc * sizeof *out);
    if (!a || !b || !ref || !out) die("out of memory", NULL);
    uint64_t s = 12345 + (uint64_t)ci;
    for (size_t i = 0; i < na + nb; i++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      float v = (float)((double)(s >> 11) / 9007199254740992.0 * 2 - 1);
      if (i < na) a[i] = v;
      else b[i - na] = v;
    }
    kiln_gemm g;
    kiln_setup(ctx, &g, c, a, b, ref, st);
    int runs = (int)(1.5e10 / flops);
    if (runs < 9) runs = 9;
    if (runs > 300) runs = 300;
    if (quick) runs = runs / 10 < 3 ? 3 : runs / 10;
    double *secs[NIMPL];
    for (int impl = 0; impl < NIMPL; impl++) {
      secs[impl] = malloc(sizeof **secs * (size_t)runs);
      if (!secs[impl]) die("out of memory", NULL);
    }
    char label[64];
    snprintf(label, sizeof label, "M=%lld N=%lld K=%lld", (long long)c.m, (long long)c.n,
             (long long)c.k);
    /* warm-up; kiln's result into ref, each anchor's checked against it */
    for (int impl = 0; impl < NIMPL; impl++) {
      if (!impl_available(impl)) continue;
      run_impl(impl, &g, c, a, b, impl == KILN ? ref : out, st);
      if (impl == KILN) continue;
      double worst = 0;
      for (size_t i = 0; i < nc; i++) {
        double d = fabs((double)out[i] - (double)ref[i]);
        if (!(d <= worst)) worst = d; /* NaN sticks */
      }
      if (!(worst <= 1e-5 * (double)c.k)) {
        fprintf(stderr, "bench_gemm: %s and kiln disagree on %s (max |diff| %g)\n",
                IMPL_NAMES[impl], label, worst);
        return 1;
      }
    }
    /* timed runs, interleaved (kiln, oneDNN, OpenBLAS, kiln, ...) so that
     * the machine's noise hits every column alike */
    for (int r = 0; r < runs; r++)
      for (int impl = 0; impl < NIMPL; impl++) {
        if (!impl_available(impl)) continue;
        double t0 = now_s();
        run_impl(impl, &g, c, a, b, impl == KILN ? ref : out, st);
        secs[impl][r] = now_s() - t0;
      }
    double kiln_med = 0;
    for (int impl = 0; impl < NIMPL; impl++) {
      if (!impl_available(impl)) continue;
      stats sm = summarize(secs[impl], runs, flops);
      if (impl == KILN) kiln_med = sm.med;
      char ratio[32] = "";
      if (impl != KILN) snprintf(ratio, sizeof ratio, "%.2fx", kiln_med / sm.med);
      else snprintf(ratio, sizeof ratio, "(compile %.0f ms)", kiln_model_compile_ms(g.model));
      printf("%-22s %-9s %5d %9.1f %9.1f %9.1f %12s\n", label, IMPL_NAMES[impl], runs, sm.min,
             sm.med, sm.max, ratio);
      fflush(stdout);
    }
    for (int impl = 0; impl < NIMPL; impl++) free(secs[impl]);
    kiln_teardown(&g);
    free(a);
    free(b);
    free(ref);
    free(out);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
