/* chain.c (bench_chain) - elementwise speed through the public API, beside
 * memory bandwidth measured in the same run:
 *
 *  - chain: y = gelu(x * a + b) over N = 16M f32 (mo.mul, mo.add, mo.gelu
 *    with the default approximate = "none", i.e. erf). Two variants:
 *    "full": a and b are full [N] inputs (the fused loop reads x, a, b and
 *    writes y: 16 bytes per element); "scalar": a and b are rank-0
 *    constants broadcast (reads x, writes y: 8 bytes per element). Reported
 *    as effective GB/s = those bytes / time, i.e. as if the chain were one
 *    loop, whatever kiln really does. Run with KILN_FUSE=0 in the
 *    environment (fusion off) the engine is named "kiln KILN_FUSE=0";
 *    bench/run.sh runs it so in a second process, with its own triad.
 *  - triad: a STREAM-like a[i] = b[i] + s * c[i] over arrays of N floats,
 *    12 bytes per element (STREAM's count: no write-allocate traffic, the
 *    same convention as the chain's bytes). bench/run.sh compiles this file
 *    with -O3 -march=native (KILN_BENCH_NATIVE); the CMake build does not.
 *  - overhead: kiln_model_execute of a one-op graph, relu on 16 f32, input
 *    and output tensors preallocated and borrowed; per-call time (each
 *    sample is the mean of 32 back-to-back calls; min / median / max over
 *    samples).
 *
 * kiln runs on one thread (kiln_context_set_num_threads(ctx, 1), while
 * libkiln lacks it: the default, and the metadata says so); the overhead
 * is also measured on a default-threads context. Each chain/triad round
 * times every column once, interleaved; min / median / max over rounds.
 * kiln's chain output is checked against a C reference (erff) before
 * timing: |d| <= 1e-5 + 1e-5 |ref|.
 *
 * usage: bench_chain [--quick] [--tsv] [--no-overhead] [--n ELEMENTS]
 *   --tsv: M <key> <value> / R <case> <engine> <threads> <unit> <runs> <min>
 *          <median> <max> / E <case> <engine> <threads> <reason> lines
 *          (GB/s: min = slowest run; us: min = fastest; threads 0: kiln's
 *          default, count unknown because libkiln lacks
 *          kiln_context_num_threads).
 * Exit status: 0, or 1 when setup failed or an output check failed. */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Weak until libkiln implements the thread-count API (issue 4, "threads"):
 * NULL when the library does not define them. */
#pragma weak kiln_context_set_num_threads
#pragma weak kiln_context_num_threads

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
  fprintf(stderr, "bench_chain: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

static void *xalloc(size_t bytes) {
  void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) die("out of memory", NULL);
  return p;
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static bool tsv;

/* One result line; t holds seconds per run. bytes > 0: GB/s, else us. */
static void report(const char *id, const char *engine, int threads, double *t, int n,
                   double bytes, const char *note) {
  double med = median(t, n);
  if (bytes > 0) {
    double lo = bytes / t[n - 1] / 1e9, mid = bytes / med / 1e9, hi = bytes / t[0] / 1e9;
    if (tsv)
      printf("R\t%s\t%s\t%d\tGB/s\t%d\t%.3f\t%.3f\t%.3f\n", id, engine, threads, n, lo, mid, hi);
    else
      printf("%-24s %-18s %3d %6d %9.2f %9.2f %9.2f GB/s %s\n", id, engine, threads, n, lo, mid,
             hi, note);
  } else {
    if (tsv)
      printf("R\t%s\t%s\t%d\tus\t%d\t%.4f\t%.4f\t%.4f\n", id, engine, threads, n, t[0] * 1e6,
             med * 1e6, t[n - 1] * 1e6);
    else
      printf("%-24s %-18s %3d %6d %9.3f %9.3f %9.3f us   %s\n", id, engine, threads, n,
             t[0] * 1e6, med * 1e6, t[n - 1] * 1e6, note);
  }
  fflush(stdout);
}

static void meta(const char *key, const char *val) {
  if (tsv) printf("M\t%s\t%s\n", key, val);
  else printf("%s: %s\n", key, val);
}

/* A context on one thread (or the default when want1 is false); *why says
 * why one thread could not be set. */
static kiln_context *new_context(bool want1, char *why, size_t cap, kiln_status *st) {
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  why[0] = 0;
  if (!want1) return ctx;
  if (!kiln_context_set_num_threads)
    snprintf(why, cap, "default (kiln_context_set_num_threads is not in this libkiln)");
  else if (kiln_context_set_num_threads(ctx, 1, st) != 0)
    snprintf(why, cap, "default (kiln_context_set_num_threads(1): %s)", kiln_status_message(st));
  kiln_status_clear(st);
  return ctx;
}

/* ---- the chain ---- */

typedef struct chain {
  kiln_model *model;
  kiln_tensor *in[3], *out;
  int nin;
} chain;

/* gelu(x * a + b); full: a, b are [n] inputs, else rank-0 constants. */
static void chain_setup(kiln_context *ctx, chain *c, bool full, int64_t n, float *x, float *a,
                        float *b, float sa, float sb, float *y, kiln_status *st) {
  char dn[32];
  snprintf(dn, sizeof dn, "%lld", (long long)n);
  const char *dims[1] = {dn};
  kiln_graph *g = kiln_graph_new("chain", st);
  if (!g) die("graph", st);
  kiln_value *vx = kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, dims, st), *va, *vb;
  if (full) {
    va = kiln_graph_add_input(g, "a", KILN_FLOAT32, 1, dims, st);
    vb = kiln_graph_add_input(g, "b", KILN_FLOAT32, 1, dims, st);
  } else {
    va = kiln_graph_add_constant(g, KILN_FLOAT32, 0, NULL, &sa, st);
    vb = kiln_graph_add_constant(g, KILN_FLOAT32, 0, NULL, &sb, st);
  }
  if (!vx || !va || !vb) die("chain inputs", st);
  kiln_value *o1[2] = {vx, va};
  kiln_value *m = kiln_graph_add_op(g, "mo.mul", o1, 2, NULL, NULL, st);
  if (!m) die("mo.mul", st);
  kiln_value *o2[2] = {m, vb};
  kiln_value *s = kiln_graph_add_op(g, "mo.add", o2, 2, NULL, NULL, st);
  if (!s) die("mo.add", st);
  kiln_value *ge = kiln_graph_add_op(g, "mo.gelu", &s, 1, NULL, NULL, st);
  if (!ge || kiln_graph_set_outputs(g, &ge, 1, NULL, st) != 0) die("mo.gelu", st);
  c->model = kiln_model_compile(ctx, g, st);
  if (!c->model) die("compile chain", st);
  kiln_graph_free(g);
  int64_t shape[1] = {n};
  c->nin = full ? 3 : 1;
  float *bufs[3] = {x, a, b};
  for (int i = 0; i < c->nin; i++)
    if (!(c->in[i] = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, bufs[i], st)))
      die("tensor", st);
  if (!(c->out = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, y, st))) die("tensor", st);
}

static void chain_run(chain *c, kiln_status *st) {
  if (kiln_model_execute(c->model, c->in, c->nin, &c->out, 1, st) != 0) die("execute chain", st);
}

static void chain_free(chain *c) {
  for (int i = 0; i < c->nin; i++) kiln_tensor_free(c->in[i]);
  kiln_tensor_free(c->out);
  kiln_model_free(c->model);
}

/* y against gelu(x * a + b) in double with erf; NULL a / b: the scalars. */
static bool chain_check(const float *y, const float *x, const float *a, const float *b, float sa,
                        float sb, int64_t n, double *worst) {
  *worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = (double)(float)((double)x[i] * (a ? a[i] : sa)) + (b ? b[i] : sb);
    v = (double)(float)v;
    double ref = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    double d = fabs((double)y[i] - ref) / (1e-5 + 1e-5 * fabs(ref));
    if (!(d <= *worst)) *worst = d; /* NaN sticks */
  }
  return *worst <= 1.0;
}

/* ---- the triad ---- */

/* noinline: one call per timed run, the loop compiled as written */
__attribute__((noinline)) static void triad(float *restrict a, const float *restrict b,
                                            const float *restrict c, float s, int64_t n) {
  for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

static const char *triad_isa(void) {
#if defined(__AVX512F__)
  return "avx512f";
#elif defined(__AVX2__)
  return "avx2";
#else
  return "baseline x86-64 (sse2)";
#endif
}

/* ---- overhead ---- */

static void overhead(kiln_context *ctx, const char *engine, int threads, int calls,
                     kiln_status *st) {
  static const char *dims[1] = {"16"};
  kiln_graph *g = kiln_graph_new("relu16", st);
  if (!g) die("graph", st);
  kiln_value *x = kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, dims, st);
  kiln_value *y = x ? kiln_graph_add_op(g, "mo.relu", &x, 1, NULL, NULL, st) : NULL;
  if (!y || kiln_graph_set_outputs(g, &y, 1, NULL, st) != 0) die("relu graph", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile relu", st);
  kiln_graph_free(g);
  float xin[16], yout[16];
  for (int i = 0; i < 16; i++) xin[i] = (float)(i - 8);
  int64_t shape[1] = {16};
  kiln_tensor *tx = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, xin, st);
  kiln_tensor *ty = kiln_tensor_borrow(KILN_FLOAT32, 1, shape, yout, st);
  if (!tx || !ty) die("tensor", st);
  for (int i = 0; i < 1000; i++)
    if (kiln_model_execute(m, &tx, 1, &ty, 1, st) != 0) die("execute relu", st);
  for (int i = 0; i < 16; i++)
    if (yout[i] != (xin[i] > 0 ? xin[i] : 0)) die("relu output is wrong", NULL);
  /* samples of BATCH calls (the clock ticks in ~10-30 ns steps here, too
   * coarse for one ~100 ns call); a sample is the mean of its batch */
  enum { BATCH = 32 };
  int samples = calls / BATCH;
  double *t = malloc((size_t)samples * sizeof *t);
  if (!t) die("out of memory", NULL);
  for (int i = 0; i < samples; i++) {
    int rc = 0;
    double t0 = now_s();
    for (int j = 0; j < BATCH; j++) rc |= kiln_model_execute(m, &tx, 1, &ty, 1, st);
    t[i] = (now_s() - t0) / BATCH;
    if (rc != 0) die("execute relu", st);
  }
  report("overhead_relu16", engine, threads, t, samples, 0,
         "per kiln_model_execute (mean of 32 calls per sample)");
  free(t);
  kiln_tensor_free(tx);
  kiln_tensor_free(ty);
  kiln_model_free(m);
}

int main(int argc, char **argv) {
  bool quick = false, with_overhead = true;
  int64_t n = 16 << 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--tsv") == 0) tsv = true;
    else if (strcmp(argv[i], "--no-overhead") == 0) with_overhead = false;
    else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
      n = atoll(argv[++i]);
      if (n < 1 || n > ((int64_t)1 << 32)) {
        fprintf(stderr, "bench_chain: bad --n\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: bench_chain [--quick] [--tsv] [--no-overhead] [--n ELEMENTS]\n");
      return 2;
    }
  }
  int rounds = quick ? 5 : 25;
  kiln_status *st = kiln_status_new();
  char why[512], buf[64];
  kiln_context *ctx = new_context(true, why, sizeof why, st);
  meta("kiln_version", kiln_version());
  meta("kiln_threads", why[0] ? why : "1 (set)");
#ifdef KILN_BENCH_NATIVE
  meta("triad_build", "-O3 -march=native");
#else
  meta("triad_build", "as the CMake build (no -march=native)");
#endif
  meta("triad_isa", triad_isa());
  snprintf(buf, sizeof buf, "%lld", (long long)n);
  meta("chain_elements", buf);
  meta("KILN_FUSE", getenv("KILN_FUSE") ? getenv("KILN_FUSE") : "(unset)");
  if (!tsv)
    printf("%-24s %-18s %3s %6s %9s %9s %9s\n", "case", "engine", "thr", "runs", "min", "median",
           "max");

  /* data: x U(-2, 2), a U(0.5, 1.5), b U(-0.5, 0.5); triad arrays the same size */
  size_t bytes = (size_t)n * sizeof(float);
  float *x = xalloc(bytes), *a = xalloc(bytes), *b = xalloc(bytes), *y = xalloc(bytes);
  float *ta = xalloc(bytes), *tb = xalloc(bytes), *tc = xalloc(bytes);
  uint64_t s = 7;
  for (int64_t i = 0; i < n; i++) {
    double u[3];
    for (int k = 0; k < 3; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      u[k] = (double)(s >> 11) / 9007199254740992.0;
    }
    x[i] = (float)(u[0] * 4 - 2), a[i] = (float)(u[1] + 0.5), b[i] = (float)(u[2] - 0.5);
    ta[i] = 0, tb[i] = (float)u[0], tc[i] = (float)u[1];
  }
  const float sa = 1.25f, sb = -0.25f, ts = 3.0f;

  /* columns: triad, the chain with a, b full, with a, b scalars */
  enum { NCOL = 3 };
  chain ch[NCOL - 1];
  const char *ids[NCOL] = {"triad", "chain_full", "chain_scalar"};
  char kengine[64];
  const char *fuse = getenv("KILN_FUSE");
  snprintf(kengine, sizeof kengine, "kiln%s%.40s", fuse ? " KILN_FUSE=" : "", fuse ? fuse : "");
  const char *engines[NCOL] = {"triad", kengine, kengine};
  double perbyte[NCOL] = {12.0, 16.0, 8.0};
  int ncol = NCOL;
  chain_setup(ctx, &ch[0], true, n, x, a, b, 0, 0, y, st);
  chain_setup(ctx, &ch[1], false, n, x, NULL, NULL, sa, sb, y, st);
  int rc = 0;
  bool ok[NCOL] = {true, true, true};
  for (int col = 1; col < ncol; col++) {
    memset(y, 0, bytes);
    chain_run(&ch[col - 1], st);
    bool full = col % 2 == 1;
    double worst;
    if (!chain_check(y, x, full ? a : NULL, full ? b : NULL, sa, sb, n, &worst)) {
      fprintf(stderr, "bench_chain: %s (%s) output is off: worst |d| / tol = %g\n", ids[col],
              engines[col], worst);
      if (tsv)
        printf("E\t%s\t%s\t1\toutput check failed (worst |d|/tol %g)\n", ids[col], engines[col],
               worst);
      ok[col] = false;
      rc = 1;
    }
  }
  triad(ta, tb, tc, ts, n); /* warm-up (pages touched) */
  double *t[NCOL];
  for (int col = 0; col < NCOL; col++) {
    t[col] = malloc((size_t)rounds * sizeof **t);
    if (!t[col]) die("out of memory", NULL);
  }
  for (int r = 0; r < rounds; r++)
    for (int col = 0; col < ncol; col++) {
      if (!ok[col]) continue;
      double t0 = now_s();
      if (col == 0) triad(ta, tb, tc, ts, n);
      else chain_run(&ch[col - 1], st);
      t[col][r] = now_s() - t0;
    }
  for (int col = 0; col < ncol; col++) {
    if (!ok[col]) continue;
    const char *note = col == 0 ? "a = b + s*c, 12 B/elem"
                                : (col % 2 ? "a, b full [N] inputs, 16 B/elem"
                                           : "a, b rank-0 constants, 8 B/elem");
    report(ids[col], engines[col], 1, t[col], rounds, perbyte[col] * (double)n, note);
  }
  for (int col = 0; col < NCOL; col++) free(t[col]);
  for (int i = 0; i < ncol - 1; i++) chain_free(&ch[i]);
  free(x), free(a), free(b), free(y), free(ta), free(tb), free(tc);

  /* overhead: the 1-thread context, then one with the default threads */
  if (with_overhead) {
    overhead(ctx, "kiln", 1, quick ? 20000 : 200000, st);
    kiln_context *ctxd = new_context(false, why, sizeof why, st);
    overhead(ctxd, "kiln default threads",
             kiln_context_num_threads ? kiln_context_num_threads(ctxd) : 0,
             quick ? 20000 : 200000, st);
    kiln_context_free(ctxd);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
  return rc;
}
