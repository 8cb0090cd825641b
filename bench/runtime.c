/* runtime.c (bench_runtime) - the numbers issue 2 asks for, through the
 * public API only: compile time of examples/mlp.mlir cold (a fresh context
 * per run, KILN_CACHE=off) and warm (fresh contexts loading every kernel
 * from a disk cache filled by a first run, in a temporary KILN_CACHE_DIR
 * removed at the end), each as the compile call alone and from creating
 * the context and reading the text; and the time of one
 * kiln_model_execute for examples/relu.mlir (per-call overhead) and for
 * mlp.mlir at batch 1 and 64, with seeded random weights and inputs.
 * Each row: warm-up, then many timed runs; min / median / max.
 * Specialization (issue 3): the MLP specialized vs generic at batch 1, 8
 * and 64; the first call of a new shape under async vs the same call on the
 * generic variant (paired, interleaved; the background compile of the
 * earlier shapes runs meanwhile, as in a service); the variant lookup of an
 * already specialized shape (rt_variant_acquire + release, internal, with
 * 8 live variants: the worst linear scan) and the execute of a tiny graph
 * with a live variant vs on the generic variant; and relu's execute again
 * after the compile thread exists (glibc malloc takes its multi-threaded
 * path from then on).
 *
 * usage: bench_runtime [EXAMPLES_DIR] [--quick]
 * (default EXAMPLES_DIR: the source tree's examples/; --quick runs a tenth
 * of the iterations, for smoke tests). */
#define _GNU_SOURCE /* nftw, setenv */
#include <ftw.h>
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "src/rt.h"       /* internal: the lookup microbenchmark */
#include "src/variants.h"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void row(const char *what, double *t, int n, const char *unit, double scale) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
  printf("%-34s %7d %11.3f %11.3f %11.3f  %s\n", what, n, t[0] * scale, med * scale,
         t[n - 1] * scale, unit);
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_runtime: %s: %s\n", what, kiln_status_message(st));
  exit(1);
}

static void fill(kiln_tensor *t, uint64_t *s) {
  float *v = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1) * 0.05f;
  }
}

static kiln_tensor *random_f32(int rank, const int64_t *shape, uint64_t *s) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  if (!t) {
    fprintf(stderr, "bench_runtime: out of memory\n");
    exit(1);
  }
  fill(t, s);
  return t;
}

/* Time n executes of m on `in` into a preallocated output. */
static void time_execute(const char *what, kiln_model *m, kiln_tensor *in, int n, int warm,
                         kiln_status *st) {
  kiln_tensor *out = NULL;
  if (kiln_model_execute(m, &in, 1, &out, 1, st) != 0) die(what, st);
  for (int i = 0; i < warm; i++)
    if (kiln_model_execute(m, &in, 1, &out, 1, st) != 0) die(what, st);
  double *t = malloc((size_t)n * sizeof *t);
  for (int i = 0; i < n; i++) {
    double t0 = now_us();
    int rc = kiln_model_execute(m, &in, 1, &out, 1, st);
    t[i] = now_us() - t0;
    if (rc != 0) die(what, st);
  }
  row(what, t, n, "us", 1.0);
  free(t);
  kiln_tensor_free(out);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

/* In a fresh context (whose kernel cache starts empty; the disk cache is
 * whatever the environment says): *compile_us for kiln_model_compile of the
 * graph at path, *total_us from creating the context and reading the text
 * to ready to execute. */
static void time_fresh(const char *path, kiln_status *st, double *compile_us, double *total_us) {
  double t0 = now_us();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  kiln_graph *g = kiln_graph_load(path, st);
  if (!g) die(path, st);
  double t1 = now_us();
  kiln_model *m = kiln_model_compile(ctx, g, st);
  double t2 = now_us();
  if (!m) die("compile", st);
  *compile_us = t2 - t1;
  *total_us = t2 - t0;
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static double exec_us(kiln_model *m, kiln_tensor *in, kiln_status *st) {
  kiln_tensor *out = NULL;
  double t0 = now_us();
  if (kiln_model_execute(m, &in, 1, &out, 1, st) != 0) die("execute", st);
  double t = now_us() - t0;
  kiln_tensor_free(out);
  return t;
}

#define TINY                                                                                  \
  "mo.graph @tiny<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"          \
  "  %y = mo.relu(%x) : !mo.tensor<[n, 8], f32>\n"                                           \
  "  mo.output %y : !mo.tensor<[n, 8], f32>\n"                                               \
  "}\n"

static kiln_model *compile_bound(kiln_context *ctx, const kiln_graph *g, kiln_tensor **w, int nw,
                                 kiln_specialize_policy p, kiln_status *st) {
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile", st);
  for (int i = 0; i < nw; i++)
    if (kiln_model_bind_weight(m, kiln_model_weight_name(m, i), w[i], st) != 0) die("bind", st);
  if (kiln_model_set_specialize(m, p, st) != 0) die("policy", st);
  return m;
}

static void specialization_rows(kiln_context *ctx, const kiln_graph *mlp, kiln_model *gen,
                                 kiln_tensor **w, int nw, kiln_tensor *x5, kiln_model *mr,
                                 int div, uint64_t *seed, kiln_status *st) {
  printf("-- specialization --\n");
  /* specialized (sync, compiled before timing) vs generic, MLP */
  kiln_model *spec = compile_bound(ctx, mlp, w, nw, KILN_SPECIALIZE_SYNC, st);
  int64_t batches[3] = {1, 8, 64};
  for (int k = 0; k < 3; k++) {
    int64_t sh[2] = {batches[k], 784};
    kiln_tensor *x = random_f32(2, sh, seed);
    int n = (k == 2 ? 1000 : 5000) / div;
    char what[64];
    snprintf(what, sizeof what, "mlp batch=%lld generic", (long long)batches[k]);
    time_execute(what, gen, x, n, n / 10, st);
    snprintf(what, sizeof what, "mlp batch=%lld specialized", (long long)batches[k]);
    time_execute(what, spec, x, n, n / 10, st); /* the first call compiles (sync) */
    kiln_tensor_free(x);
  }
  kiln_model_free(spec);

  /* first call of a new shape: async vs generic, paired */
  kiln_model *as = compile_bound(ctx, mlp, w, nw, KILN_SPECIALIZE_ASYNC, st);
  int nf = 60 / (div > 1 ? 3 : 1);
  double *ta = malloc((size_t)nf * sizeof *ta), *tg = malloc((size_t)nf * sizeof *tg);
  double *tw = malloc((size_t)nf * sizeof *tw);
  double thread_start = 0;
  for (int i = 0; i < nf; i++) {
    int64_t sh[2] = {2 + i, 784}; /* a batch no call has used */
    kiln_tensor *x = random_f32(2, sh, seed);
    /* both calls are the first of this shape on their model (both pay the
     * planner's first plan for it); the order alternates */
    if (i % 2) {
      ta[i] = exec_us(as, x, st);
      tg[i] = exec_us(gen, x, st);
    } else {
      tg[i] = exec_us(gen, x, st);
      ta[i] = exec_us(as, x, st);
    }
    tw[i] = exec_us(gen, x, st); /* generic again: warm for this shape */
    if (i == 0) thread_start = ta[i]; /* also starts the compile thread */
    kiln_tensor_free(x);
  }
  printf("%-34s %7d %11.3f  us (starts the compile thread)\n", "async first call, very first", 1,
         thread_start);
  row("async first call of a new shape", ta + 1, nf - 1, "us", 1.0);
  row("  generic, first call of the shape", tg + 1, nf - 1, "us", 1.0);
  row("  generic, second call", tw + 1, nf - 1, "us", 1.0);
  free(tw);
  double ma = median(ta + 1, nf - 1), mg = median(tg + 1, nf - 1);
  printf("%-34s %7s %11.2f  x (target <= 1.2)\n", "  async / generic (medians)", "", ma / mg);
  printf("%-34s %7.0f queued, %.0f done, %.0f dropped\n", "  background jobs",
         kiln_model_counter(as, KILN_COUNTER_ASYNC_QUEUED),
         kiln_model_counter(as, KILN_COUNTER_ASYNC_DONE),
         kiln_model_counter(as, KILN_COUNTER_ASYNC_DROPPED));
  free(ta);
  free(tg);
  kiln_model_free(as); /* cancels what is still queued */

  /* lookup of an already specialized shape */
  kiln_graph *tg2 = kiln_graph_parse(TINY, strlen(TINY), "tiny", st);
  if (!tg2) die("tiny", st);
  kiln_model *tl = compile_bound(ctx, tg2, NULL, 0, KILN_SPECIALIZE_SYNC, st);
  kiln_model *tgen = compile_bound(ctx, tg2, NULL, 0, KILN_SPECIALIZE_OFF, st);
  for (int64_t b = 1; b <= 8; b++) {
    const char *nm[1] = {"n"};
    if (kiln_model_specialize(tl, nm, &b, 1, st) != 0) die("specialize", st);
  }
  int nl = 200000 / div;
  double *tlk = malloc((size_t)nl * sizeof *tlk);
  int64_t syms[1] = {1}; /* the least recently used of the 8: found last or first, either way */
  for (int i = 0; i < nl; i++) {
    double t0 = now_us();
    for (int r = 0; r < 10; r++) rt_variant_release(tl, rt_variant_acquire(tl, syms, NULL));
    tlk[i] = (now_us() - t0) / 10;
  }
  row("variant lookup (acquire+release)", tlk, nl, "us", 1.0);
  free(tlk);
  int64_t sh4[2] = {4, 8};
  kiln_tensor *x4 = random_f32(2, sh4, seed);
  time_execute("tiny n=4, live variant", tl, x4, 100000 / div, 1000, st);
  time_execute("tiny n=4, generic variant", tgen, x4, 100000 / div, 1000, st);
  kiln_tensor_free(x4);
  kiln_model_free(tl);
  kiln_model_free(tgen);
  kiln_graph_free(tg2);
  time_execute("execute relu.mlir (2nd thread up)", mr, x5, 200000 / div, 1000, st);
}

int main(int argc, char **argv) {
  /* one thread, as the header line says (the context default is one per
   * core); KILN_NUM_THREADS set by the caller wins */
  setenv("KILN_NUM_THREADS", "1", 0);
  const char *dir = KILN_SOURCE_DIR "/examples";
  int div = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) div = 10;
    else dir = argv[i];
  }
  char mlp_path[4096], relu_path[4096];
  snprintf(mlp_path, sizeof mlp_path, "%s/mlp.mlir", dir);
  snprintf(relu_path, sizeof relu_path, "%s/relu.mlir", dir);

  setenv("KILN_CACHE", "off", 1); /* ctx compiles for real and leaves no files */
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  kiln_graph *mlp = kiln_graph_load(mlp_path, st);
  if (!mlp) die(mlp_path, st);
  kiln_graph *relu = kiln_graph_load(relu_path, st);
  if (!relu) die(relu_path, st);

  const char *target = kiln_context_target(ctx);
  const char *sp = strchr(target, ' ');
  int tl = sp && strchr(sp + 1, ' ') ? (int)(strchr(sp + 1, ' ') - target) : (int)strlen(target);
  printf("kiln %s on %.*s, %s thread(s) (KILN_NUM_THREADS)\n", kiln_version(), tl, target,
         getenv("KILN_NUM_THREADS"));
  printf("%-34s %7s %11s %11s %11s\n", "what", "runs", "min", "median", "max");

  /* compile: the first one in the process pays LLVM's one-time set-up
   * (ctx has no disk cache: KILN_CACHE=off was set before it was made) */
  double t0 = now_us();
  kiln_model *m = kiln_model_compile(ctx, mlp, st);
  double first = now_us() - t0;
  if (!m) die("compile mlp", st);
  kiln_model_free(m);
  row("compile mlp.mlir (first in process)", &first, 1, "ms", 1e-3);
  int nc = 20 / div > 3 ? 20 / div : 3;
  double *tc = malloc((size_t)nc * sizeof *tc), *tt = malloc((size_t)nc * sizeof *tt);
  /* (a) cold: a fresh context per run (its memory cache is empty), no disk cache */
  for (int i = 0; i < nc; i++) time_fresh(mlp_path, st, &tc[i], &tt[i]);
  row("cold compile mlp.mlir", tc, nc, "ms", 1e-3);
  row("  + context, read, parse", tt, nc, "ms", 1e-3);
  /* (b) warm: the first run fills a temporary disk cache, fresh contexts load from it */
  char cache_dir[] = "/tmp/kiln-bench-cache-XXXXXX";
  if (!mkdtemp(cache_dir)) {
    perror("bench_runtime: mkdtemp");
    return 1;
  }
  setenv("KILN_CACHE_DIR", cache_dir, 1);
  unsetenv("KILN_CACHE");
  double fill, fill_total;
  time_fresh(mlp_path, st, &fill, &fill_total);
  for (int i = 0; i < nc; i++) time_fresh(mlp_path, st, &tc[i], &tt[i]);
  row("warm load mlp.mlir from disk cache", tc, nc, "ms", 1e-3);
  row("  + context, read, parse", tt, nc, "ms", 1e-3);
  setenv("KILN_CACHE", "off", 1);
  unsetenv("KILN_CACHE_DIR");
  nftw(cache_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(tc);
  free(tt);

  uint64_t seed = 42;
  kiln_model *mr = kiln_model_compile(ctx, relu, st);
  if (!mr) die("compile relu", st);
  int64_t s5[] = {5};
  kiln_tensor *x5 = random_f32(1, s5, &seed);
  time_execute("execute relu.mlir", mr, x5, 200000 / div, 1000, st);

  kiln_model *mm = kiln_model_compile(ctx, mlp, st);
  if (!mm) die("compile mlp", st);
  kiln_tensor *w[8] = {0};
  int nw = kiln_model_num_weights(mm);
  for (int i = 0; i < nw && i < 8; i++) {
    int64_t shape[8];
    int rank = kiln_model_weight_rank(mm, i);
    for (int a = 0; a < rank && a < 8; a++) /* mlp's weights are static */
      shape[a] = atoll(kiln_model_weight_dim(mm, i, a));
    w[i] = random_f32(rank, shape, &seed);
    if (kiln_model_bind_weight(mm, kiln_model_weight_name(mm, i), w[i], st) != 0)
      die("bind weight", st);
  }
  int64_t b1[] = {1, 784}, b64[] = {64, 784};
  kiln_tensor *x1 = random_f32(2, b1, &seed), *x64 = random_f32(2, b64, &seed);
  if (kiln_model_set_specialize(mm, KILN_SPECIALIZE_OFF, st) != 0) die("policy", st);
  time_execute("execute mlp.mlir batch=1", mm, x1, 5000 / div, 100, st);
  time_execute("execute mlp.mlir batch=64", mm, x64, 1000 / div, 20, st);

  specialization_rows(ctx, mlp, mm, w, nw, x5, mr, div, &seed, st);

  for (int i = 0; i < 8; i++) kiln_tensor_free(w[i]);
  kiln_tensor_free(x5);
  kiln_tensor_free(x1);
  kiln_tensor_free(x64);
  kiln_model_free(mr);
  kiln_model_free(mm);
  kiln_graph_free(mlp);
  kiln_graph_free(relu);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
