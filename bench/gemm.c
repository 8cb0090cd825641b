/* gemm.c (bench_gemm) - single-precision GEMM GFLOP/s: kiln (a one-op
 * mo.matmul graph with static shapes, through the public API) against
 * oneDNN's dnnl_sgemm and OpenBLAS's cblas_sgemm in the same run, when the
 * build found them (KILN_BENCH_DNNL / KILN_BENCH_OPENBLAS; CMake block
 * "kernel templates"). Default cases: M = N = K = 256, 512, 1024, 2048 and
 * the batch-1 linear layer M = 1, K = N = 4096. Row-major C = A B, seeded
 * uniform [-1, 1] inputs; each anchor's result is checked against kiln's
 * before timing (|diff| <= 1e-5 * K). Per case: one warm-up each, then R
 * rounds (R from the case size, 9 to 300) that time every column once,
 * interleaved, so machine noise hits all columns alike; min / median / max
 * GFLOP/s and the ratio of medians kiln / anchor.
 *
 * A second kiln column on one thread, "kiln-weight", runs the GEMM as a
 * served model does: B a weight bound once (kiln_model_bind_weight packs
 * it, so the kernel reads the packed copy) and M symbolic (the generic
 * kernel calls the prebuilt GEMM, as for a request of any length); the
 * first column (B an input, static shapes) never reads a packed B. Its
 * ratio is kiln's first column over it.
 *
 * Threads: kiln's context is set to 1 thread (kiln_context_set_num_threads);
 * with --threads N a second kiln context runs with N threads beside it (the
 * 1-thread column stays, for the scaling ratio) and the anchors get N.
 * oneDNN (OpenMP) and OpenBLAS read their thread counts from the
 * environment when they are loaded, so the program sets OMP_NUM_THREADS and
 * OPENBLAS_NUM_THREADS to the anchors' count and re-executes itself when
 * they differ. Nothing is pinned (../shared/ANCHORS.md asks only for equal
 * thread counts). With --threads, each timed call follows a 150 ms pause and
 * an untimed call of its own column, so that the previous column's idle
 * workers have stopped spinning. Until libkiln defines
 * kiln_context_set_num_threads (issue 4, "threads"), kiln runs with its
 * default and the rows say so; the N-thread column is then "n/a" with the
 * reason.
 *
 * usage: bench_gemm [--quick] [--tsv] [--threads N] [--no-anchors] [--case MxNxK]...
 *   --no-anchors  kiln's columns only (a process without the anchors'
 *            thread pools: with two cores, OpenBLAS's and OpenMP's workers
 *            in the same process were measured to cost kiln's 2-thread
 *            column 10-30%, and kiln's workers the anchors' likewise)
 *   --tsv    machine-readable lines (bench/run.sh reads them):
 *            M <key> <value>            metadata
 *            R <case> <engine> <threads> GFLOP/s <runs> <min> <median> <max>
 *            E <case> <engine> <reason>  a column that could not be measured
 *   --case   replaces the default cases (repeatable)
 * Exit status: 0, or 1 when setup failed or an anchor disagreed with kiln. */
#define _GNU_SOURCE /* setenv, execv */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef KILN_BENCH_DNNL
#include <dnnl.h>
#endif
#ifdef KILN_BENCH_OPENBLAS
#include <cblas.h>
#endif

/* Weak until the thread-count API is implemented in libkiln: NULL when the
 * library does not define it (the header declares it). */
#pragma weak kiln_context_set_num_threads

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
  kiln_tensor *a, *b, *c; /* b NULL: B is the model's weight "b" */
  kiln_tensor *w;         /* the tensor bound to that weight, or NULL */
} kiln_gemm;

/* A context with n threads; *why gets the reason when n cannot be set
 * (the context then runs with its default). */
static kiln_context *context_with(int n, char *why, size_t cap, kiln_status *st) {
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  why[0] = 0;
  if (!kiln_context_set_num_threads)
    snprintf(why, cap, "default threads (kiln_context_set_num_threads is not in this libkiln)");
  else if (kiln_context_set_num_threads(ctx, n, st) != 0)
    snprintf(why, cap, "default threads (kiln_context_set_num_threads(%d): %s)", n,
             kiln_status_message(st));
  return ctx;
}

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
  g->w = NULL;
  if (!g->a || !g->b || !g->c) die("tensors", st);
}

/* The kiln-weight column: a [m, K] (m symbolic) times the weight b [K, N],
 * bound once (packed by the model). */
static void kiln_setup_weight(kiln_context *ctx, kiln_gemm *g, gcase c, float *a, float *b,
                              float *out, kiln_status *st) {
  char dn[32], dk[32];
  snprintf(dn, sizeof dn, "%lld", (long long)c.n);
  snprintf(dk, sizeof dk, "%lld", (long long)c.k);
  kiln_graph *gr = kiln_graph_new("gemm_weight", st);
  if (!gr) die("graph", st);
  const char *da[2] = {"m", dk}, *db[2] = {dk, dn};
  kiln_value *va = kiln_graph_add_input(gr, "a", KILN_FLOAT32, 2, da, st);
  kiln_value *vb = kiln_graph_add_weight(gr, "b", KILN_FLOAT32, 2, db, st);
  if (!va || !vb) die("input and weight", st);
  kiln_value *ops[2] = {va, vb};
  kiln_value *vc = kiln_graph_add_op(gr, "mo.matmul", ops, 2, NULL, NULL, st);
  if (!vc || kiln_graph_set_outputs(gr, &vc, 1, NULL, st) != 0) die("matmul", st);
  g->model = kiln_model_compile(ctx, gr, st);
  if (!g->model) die("compile", st);
  kiln_graph_free(gr);
  int64_t sa[2] = {c.m, c.k}, sb[2] = {c.k, c.n}, sc[2] = {c.m, c.n};
  g->w = kiln_tensor_borrow(KILN_FLOAT32, 2, sb, b, st);
  if (!g->w || kiln_model_bind_weight(g->model, "b", g->w, st) != 0) die("bind weight b", st);
  g->a = kiln_tensor_borrow(KILN_FLOAT32, 2, sa, a, st);
  g->b = NULL;
  g->c = kiln_tensor_borrow(KILN_FLOAT32, 2, sc, out, st);
  if (!g->a || !g->c) die("tensors", st);
}

static void kiln_run(kiln_gemm *g, kiln_status *st) {
  kiln_tensor *in[2] = {g->a, g->b};
  if (kiln_model_execute(g->model, in, g->b ? 2 : 1, &g->c, 1, st) != 0) die("execute", st);
}

static void kiln_teardown(kiln_gemm *g) {
  kiln_tensor_free(g->a);
  kiln_tensor_free(g->b);
  kiln_tensor_free(g->c);
  kiln_model_free(g->model);
  kiln_tensor_free(g->w);
}

/* Columns: kiln on 1 thread, kiln on N threads (--threads only), kiln with
 * B a packed weight (1 thread, without --threads), anchors. */
enum { KILN1 = 0, KILNN, KILNW, DNNL, OPENBLAS, NIMPL };
static const char *IMPL_NAMES[NIMPL] = {"kiln", "kiln", "kiln-weight", "oneDNN", "OpenBLAS"};

static bool anchor_built(int impl) {
  switch (impl) {
#ifdef KILN_BENCH_DNNL
  case DNNL: return true;
#endif
#ifdef KILN_BENCH_OPENBLAS
  case OPENBLAS: return true;
#endif
  default: return false;
  }
}

static void run_anchor(int impl, gcase c, const float *a, const float *b, float *out) {
  (void)a, (void)b, (void)out, (void)c;
  switch (impl) {
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

/* oneDNN's OpenMP runtime and OpenBLAS size their pools from the
 * environment when loaded (before main): set it and start again. Their
 * idle threads are told not to spin (OMP_WAIT_POLICY=passive,
 * OPENBLAS_THREAD_TIMEOUT=4, unless already set): on a 2-core machine a
 * spinning anchor thread takes a core from kiln's pool in the same process
 * (measured: kiln 2T 1.68x of 1T with them passive, lower without). */
static void ensure_anchor_threads(int n, char **argv) {
  char want[16];
  snprintf(want, sizeof want, "%d", n);
  const char *omp = getenv("OMP_NUM_THREADS"), *ob = getenv("OPENBLAS_NUM_THREADS");
  if (omp && ob && strcmp(omp, want) == 0 && strcmp(ob, want) == 0) return;
  if (getenv("KILN_BENCH_GEMM_REEXEC")) return; /* tried once: go on, the header says */
  setenv("OMP_NUM_THREADS", want, 1);
  setenv("OPENBLAS_NUM_THREADS", want, 1);
  setenv("OMP_WAIT_POLICY", "passive", 0);
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
  setenv("KILN_BENCH_GEMM_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  perror("bench_gemm: re-exec with the anchors' thread counts"); /* go on without */
}

static bool parse_case(const char *s, gcase *c) {
  long long m, n, k;
  char tail;
  if (sscanf(s, "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1 ||
      m > 65536 || n > 65536 || k > 65536)
    return false;
  c->m = m, c->n = n, c->k = k;
  return true;
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_gemm [--quick] [--tsv] [--threads N] [--no-anchors] [--case MxNxK]...\n");
}

int main(int argc, char **argv) {
  bool quick = false, tsv = false, anchors = true;
  int nthreads = 1;
  gcase cases[16] = {
      {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}, {1, 4096, 4096}};
  int ncases = 5, nuser = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--tsv") == 0) tsv = true;
    else if (strcmp(argv[i], "--no-anchors") == 0) anchors = false;
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      nthreads = atoi(argv[++i]);
      if (nthreads < 1 || nthreads > 1024) {
        usage();
        return 2;
      }
    } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc && nuser < 16) {
      if (!parse_case(argv[++i], &cases[nuser++])) {
        fprintf(stderr, "bench_gemm: bad --case %s (want MxNxK)\n", argv[i]);
        return 2;
      }
      ncases = nuser;
    } else {
      usage();
      return 2;
    }
  }
  ensure_anchor_threads(nthreads, argv);
  bool scaling = nthreads > 1;

  kiln_status *st = kiln_status_new();
  char why1[512], whyn[512] = "";
  kiln_context *ctx1 = context_with(1, why1, sizeof why1, st);
  kiln_context *ctxn = scaling ? context_with(nthreads, whyn, sizeof whyn, st) : NULL;
  kiln_status_clear(st);
  const char *omp = getenv("OMP_NUM_THREADS"), *ob = getenv("OPENBLAS_NUM_THREADS");
  if (tsv) {
    printf("M\ttarget\t%s\n", kiln_context_target(ctx1));
    printf("M\tkiln_version\t%s\n", kiln_version());
    printf("M\tkiln_threads_1\t%s\n", why1[0] ? why1 : "1 (set)");
    if (scaling) printf("M\tkiln_threads_%d\t%s\n", nthreads, whyn[0] ? whyn : "set");
    printf("M\tOMP_NUM_THREADS\t%s\n", omp ? omp : "(unset)");
    printf("M\tOPENBLAS_NUM_THREADS\t%s\n", ob ? ob : "(unset)");
    printf("M\tOPENBLAS_CORETYPE\t%s\n",
           getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
  } else {
    printf("target: %s\n", kiln_context_target(ctx1));
    printf("threads: kiln %s; OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s\n",
           why1[0] ? why1 : "1", omp ? omp : "(unset)", ob ? ob : "(unset)");
    if (scaling)
      printf("second kiln column: %d threads%s%s\n", nthreads, whyn[0] ? ": n/a, " : "", whyn);
    printf("GFLOP/s per run (min = slowest run, max = fastest)\n");
    printf("%-22s %-12s %5s %9s %9s %9s %12s\n", "case", "impl", "runs", "min", "median", "max",
           "kiln/impl");
  }
  bool used[NIMPL] = {true, scaling && !whyn[0], !scaling, anchors && anchor_built(DNNL),
                      anchors && anchor_built(OPENBLAS)};
  int impl_threads[NIMPL] = {1, nthreads, 1, nthreads, nthreads};
  int rc = 0;
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
    kiln_gemm g1 = {0}, gn = {0}, gw = {0};
    kiln_setup(ctx1, &g1, c, a, b, ref, st);
    if (used[KILNN]) kiln_setup(ctxn, &gn, c, a, b, out, st);
    if (used[KILNW]) kiln_setup_weight(ctx1, &gw, c, a, b, out, st);
    int runs = (int)(1.5e10 / flops);
    if (runs < 9) runs = 9;
    if (runs > 300) runs = 300;
    if (quick) runs = runs / 10 < 3 ? 3 : runs / 10;
    double *secs[NIMPL];
    for (int impl = 0; impl < NIMPL; impl++) {
      secs[impl] = malloc(sizeof **secs * (size_t)runs);
      if (!secs[impl]) die("out of memory", NULL);
    }
    char label[64], id[64];
    snprintf(label, sizeof label, "M=%lld N=%lld K=%lld", (long long)c.m, (long long)c.n,
             (long long)c.k);
    snprintf(id, sizeof id, "gemm_%lldx%lldx%lld", (long long)c.m, (long long)c.n,
             (long long)c.k);
    /* warm-up; kiln's 1-thread result into ref, every other column's
     * checked against it */
    kiln_run(&g1, st);
    bool agree = true;
    for (int impl = KILNN; impl < NIMPL && agree; impl++) {
      if (!used[impl]) continue;
      memset(out, 0, nc * sizeof *out);
      if (impl == KILNN) kiln_run(&gn, st);
      else if (impl == KILNW) kiln_run(&gw, st);
      else run_anchor(impl, c, a, b, out);
      double worst = 0;
      for (size_t i = 0; i < nc; i++) {
        double d = fabs((double)out[i] - (double)ref[i]);
        if (!(d <= worst)) worst = d; /* NaN sticks */
      }
      if (!(worst <= 1e-5 * (double)c.k)) {
        fprintf(stderr, "bench_gemm: %s (%d threads) and kiln disagree on %s (max |diff| %g)\n",
                IMPL_NAMES[impl], impl_threads[impl], label, worst);
        if (tsv)
          printf("E\t%s\t%s\t%d\tdisagrees with kiln (max |diff| %g)\n", id, IMPL_NAMES[impl],
                 impl_threads[impl], worst);
        agree = false;
        rc = 1;
      }
    }
    /* timed runs, interleaved (kiln, [kiln N], oneDNN, OpenBLAS, kiln, ...)
     * so that the machine's noise hits every column alike. With several
     * threads each library's idle workers spin a while after a call (kiln
     * 2 ms, OpenMP milliseconds, OpenBLAS's pthread server 2^28 cycles:
     * ~70 ms at 4 GHz, measured to halve the next column's 2-thread figure
     * after a 30 ms pause) and would steal cores from the next column:
     * there, each timed call follows a 150 ms pause and an untimed call of
     * its own column. */
    for (int r = 0; r < runs && agree; r++)
      for (int impl = 0; impl < NIMPL; impl++) {
        if (!used[impl]) continue;
        if (scaling) {
          struct timespec pause = {0, 150 * 1000 * 1000};
          nanosleep(&pause, NULL);
          if (impl == KILN1) kiln_run(&g1, st);
          else if (impl == KILNN) kiln_run(&gn, st);
          else if (impl == KILNW) kiln_run(&gw, st);
          else run_anchor(impl, c, a, b, out);
        }
        double t0 = now_s();
        if (impl == KILN1) kiln_run(&g1, st);
        else if (impl == KILNN) kiln_run(&gn, st);
        else if (impl == KILNW) kiln_run(&gw, st);
        else run_anchor(impl, c, a, b, out);
        secs[impl][r] = now_s() - t0;
      }
    double kiln_med = 0;
    for (int impl = 0; impl < NIMPL && agree; impl++) {
      if (!used[impl]) {
        if (tsv && impl == KILNN && scaling)
          printf("E\t%s\tkiln\t%d\tn/a: %d threads cannot be set: %s\n", id, nthreads, nthreads,
                 whyn);
        continue;
      }
      stats sm = summarize(secs[impl], runs, flops);
      if (impl == KILN1) kiln_med = sm.med;
      if (tsv) {
        printf("R\t%s\t%s\t%d\tGFLOP/s\t%d\t%.3f\t%.3f\t%.3f\n", id, IMPL_NAMES[impl],
               impl_threads[impl], runs, sm.min, sm.med, sm.max);
      } else {
        char ratio[32], name[32];
        if (impl != KILN1) snprintf(ratio, sizeof ratio, "%.2fx", kiln_med / sm.med);
        else snprintf(ratio, sizeof ratio, "(compile %.0f ms)", kiln_model_compile_ms(g1.model));
        snprintf(name, sizeof name, "%s%s", IMPL_NAMES[impl],
                 scaling ? (impl == KILN1 ? " 1T" : " NT") : "");
        printf("%-22s %-12s %5d %9.1f %9.1f %9.1f %12s\n", label, name, runs, sm.min, sm.med,
               sm.max, ratio);
      }
      fflush(stdout);
    }
    for (int impl = 0; impl < NIMPL; impl++) free(secs[impl]);
    kiln_teardown(&g1);
    if (used[KILNN]) kiln_teardown(&gn);
    if (used[KILNW]) kiln_teardown(&gw);
    free(a);
    free(b);
    free(ref);
    free(out);
  }
  kiln_context_free(ctxn);
  kiln_context_free(ctx1);
  kiln_status_free(st);
  return rc;
}
