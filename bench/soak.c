/* soak.c (bench_soak) - does a long-running service stay bounded? One
 * context runs one small model (exp -> tanh -> mul over [a, b] f32, one
 * fused kernel) over N requests, under the `sync` policy and then, in a fresh
 * context, under `async`. By default every request is a new shape (request i
 * has a = 1 + i mod 100, b = 1 + i / 100, so tensors stay under 100 x 100 and
 * only the code can grow). With --mix, every other request instead repeats
 * one of 16 recurring shapes (a service's common lengths), drawn with a fixed
 * seed. Every K requests (default 1,000) it prints a line: the kernels loaded
 * in the context's memory cache, their code bytes, the kernels unloaded by
 * the code bound so far, the kernels compiled, the live variants, the
 * process's RSS (/proc/self/statm) and the wall time of those K requests. At
 * the end of each policy it prints p50 / p99 latency per shape class
 * (recurring or first-seen, up to 1,024 elements or more).
 *
 * Both curves must level off: the variants are bounded (8 per model), and
 * kernels no variant references are unloaded past the code bound
 * (kiln_context_set_code_limit; 8 MiB by default, KILN_CODE_MAX_BYTES, or
 * --limit). The disk cache is off, so every new shape compiles under sync.
 *
 * --check is the CI form: 3,000 requests with --mix, a 256 KiB code bound
 * (unless --limit), both policies, every output compared with the formula;
 * it fails (exit 1) when an output is wrong, a model holds more variants than
 * its bound, nothing was unloaded, or RSS grew more than 2 MiB over the
 * second half of a policy's requests (the plateau). Timings are printed,
 * never judged.
 *
 * usage: bench_soak [--shapes N] [--every K] [--limit BYTES] [--unbounded]
 *                   [--policy sync|async|both] [--drain] [--mix] [--check]
 *   --unbounded  also run sync with no bound (SIZE_MAX), for comparison
 *   --drain      under async, wait for the compile queue after each execute
 *                (a service with time between requests: every shape gets
 *                its variant on the compile thread; without it executes
 *                outrun the compiles and most requests are dropped)
 *
 * Reads the loaded-kernel count through the internal cache statistics
 * (src/cache_mem.h); everything else goes through the public API. */
#include <kiln/kiln.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/cache_mem.h" /* internal: entries loaded */

#define GRAPH                                                                                \
  "mo.graph @soak<a, b>(%x: !mo.tensor<[a, b], f32>) -> (!mo.tensor<[a, b], f32>) {\n"        \
  "  %e = mo.exp(%x) : !mo.tensor<[a, b], f32>\n"                                            \
  "  %t = mo.tanh(%e) : !mo.tensor<[a, b], f32>\n"                                           \
  "  %y = mo.mul(%t, %x) : !mo.tensor<[a, b], f32>\n"                                        \
  "  mo.output %y : !mo.tensor<[a, b], f32>\n"                                               \
  "}\n"
#define ROWS 100   /* a new shape: a = 1 + k mod ROWS, b = 1 + k / ROWS */
#define HOT 16     /* recurring shapes under --mix */
#define HOT_B0 100 /* recurring shape j: a = 1 + 37 j mod ROWS, b = HOT_B0 + j */
#define CLASSES 4  /* (recurring, first-seen) x (<= 1,024 elements, more) */
#define PLATEAU_MIB 2.0
#define MAX_VARIANTS 8 /* the bound each run sets (the default) */

static const char *const class_names[CLASSES] = {
    "first-seen <=1024", "first-seen >1024", "recurring <=1024", "recurring >1024"};

typedef struct {
  int shapes, every;
  size_t limit;
  bool drain, mix, check;
} soak_opts;

/* Request i's shape (1-based); *hot says whether it is a recurring one. Without
 * mix every request is new; with it, a fixed-seed draw sends about half of them
 * to the HOT recurring shapes. */
static void shape_of(int i, bool mix, uint64_t *rng, int *fresh, int64_t shape[2], bool *hot) {
  *hot = false;
  if (mix) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t r = (uint32_t)(*rng >> 33);
    if (r & 1) {
      int j = (int)((r >> 1) % HOT);
      shape[0] = 1 + (37 * j) % ROWS;
      shape[1] = HOT_B0 + j;
      *hot = true;
      return;
    }
  } else *fresh = i - 1;
  int k = (*fresh)++;
  shape[0] = 1 + k % ROWS;
  shape[1] = 1 + k / ROWS;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile (0..1) of v[0..n) (sorted in place), nearest rank. */
static double quantile(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  int r = (int)ceil(q * n) - 1;
  return v[r < 0 ? 0 : r];
}

/* How many of out[0..n) differ from tanh(exp(x)) * x beyond float rounding. */
static int64_t wrong_outputs(const float *x, const float *out, int64_t n) {
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    double want = tanh(exp((double)x[i])) * (double)x[i];
    if (!(fabs((double)out[i] - want) <= 1e-5 + 1e-5 * fabs(want))) bad++;
  }
  return bad;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_soak: %s: %s\n", what, kiln_status_message(st));
  exit(1);
}

/* Resident set size in MiB, -1 when /proc/self/statm cannot be read. */
static double rss_mib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size = 0, resident = 0;
  int n = fscanf(f, "%ld %ld", &size, &resident);
  fclose(f);
  if (n != 2) return -1;
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

/* One policy's run; returns the number of failed checks (see --check). */
static int soak(const char *label, kiln_specialize_policy policy, size_t limit,
                const soak_opts *o) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  if (kiln_context_set_cache_dir(ctx, NULL, 0, st) != 0) die("disk cache off", st);
  if (kiln_context_set_specialize(ctx, policy, st) != 0) die("policy", st);
  if (kiln_context_set_code_limit(ctx, limit, st) != 0) die("code limit", st);
  if (kiln_context_set_max_variants(ctx, MAX_VARIANTS, st) != 0) die("variant bound", st);
  kiln_graph *g = kiln_graph_parse(GRAPH, strlen(GRAPH), "soak", st);
  if (!g) die("parse", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile", st);
  int64_t most = (int64_t)ROWS * ((o->shapes - 1) / ROWS + 1);
  if (most < (int64_t)ROWS * (HOT_B0 + HOT)) most = (int64_t)ROWS * (HOT_B0 + HOT);
  float *data = calloc((size_t)most, sizeof *data);
  double *lat[CLASSES];
  int nlat[CLASSES] = {0};
  bool ok = data != NULL;
  for (int c = 0; c < CLASSES; c++)
    ok &= (lat[c] = malloc((size_t)o->shapes * sizeof *lat[c])) != NULL;
  if (!ok) {
    fprintf(stderr, "bench_soak: out of memory\n");
    exit(1);
  }
  for (int64_t i = 0; i < most; i++) data[i] = (float)(i % 17) / 8.0f - 1.0f;

  const char *how = o->drain && policy == KILN_SPECIALIZE_ASYNC ? " (queue drained after each)"
                                                                  : "";
  if (limit == SIZE_MAX)
    printf("# %s%s, no code bound\n", label, how);
  else
    printf("# %s%s, code bound %zu bytes\n", label, how, limit);
  printf("%9s %8s %11s %8s %9s %8s %9s %9s\n", "executes", "loaded", "code_KiB", "evicted",
         "compiles", "variants", "rss_MiB", "ms/exec");
  rt_cache_mem *cache = rt_context_cache(ctx);
  uint64_t rng = 0x5eed;
  int fresh = 0, most_variants = 0;
  int64_t wrong = 0;
  double rss_half = -1, t0 = now_s();
  for (int i = 1; i <= o->shapes; i++) {
    int64_t shape[2];
    bool hot;
    shape_of(i, o->mix, &rng, &fresh, shape, &hot);
    kiln_tensor *in = kiln_tensor_borrow(KILN_FLOAT32, 2, shape, data, st);
    kiln_tensor *out[1] = {NULL};
    double r0 = now_s();
    if (!in || kiln_model_execute(m, &in, 1, out, 1, st) != 0) die("execute", st);
    double r1 = now_s();
    int64_t n = shape[0] * shape[1];
    int c = (hot ? 2 : 0) + (n > 1024);
    lat[c][nlat[c]++] = (r1 - r0) * 1e3;
    if (o->check) wrong += wrong_outputs(data, kiln_tensor_data(out[0]), n);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(in);
    if (o->drain && policy == KILN_SPECIALIZE_ASYNC) kiln_context_wait_compiles(ctx, -1, st);
    if (kiln_model_variants(m) > most_variants) most_variants = kiln_model_variants(m);
    if (i == o->shapes / 2) rss_half = rss_mib();
    if (i % o->every == 0 || i == o->shapes) {
      double t1 = now_s();
      int k = i % o->every ? i % o->every : o->every;
      rt_cache_stats s;
      rt_cache_mem_stats(cache, &s);
      printf("%9d %8d %11.1f %8llu %9llu %8d %9.1f %9.3f\n", i, s.entries,
             (double)s.code_bytes / 1024.0, (unsigned long long)s.evicted,
             (unsigned long long)s.compiles, kiln_model_variants(m), rss_mib(),
             (t1 - t0) * 1e3 / k);
      fflush(stdout);
      t0 = now_s();
    }
  }
  double rss_end = rss_mib();
  printf("# latency per shape class (ms): %-18s %8s %8s %8s\n", "class", "requests", "p50",
         "p99");
  for (int c = 0; c < CLASSES; c++)
    if (nlat[c])
      printf("#                               %-18s %8d %8.3f %8.3f\n", class_names[c], nlat[c],
             quantile(lat[c], nlat[c], 0.50), quantile(lat[c], nlat[c], 0.99));
  rt_cache_stats s;
  rt_cache_mem_stats(cache, &s);
  int failed = 0;
  if (o->check) {
    int bound = MAX_VARIANTS;
    if (wrong) printf("# FAIL: %lld output values differ from tanh(exp(x)) * x\n",
                      (long long)wrong), failed++;
    if (most_variants > bound)
      printf("# FAIL: %d live variants, bound %d\n", most_variants, bound), failed++;
    if (policy == KILN_SPECIALIZE_SYNC && limit != SIZE_MAX && s.evicted == 0)
      printf("# FAIL: the code bound never unloaded a kernel\n"), failed++;
    if (rss_half < 0 || rss_end < 0) printf("# FAIL: RSS unreadable\n"), failed++;
    else if (rss_end - rss_half > PLATEAU_MIB)
      printf("# FAIL: RSS grew %.1f MiB over the second half (%.1f -> %.1f; plateau: <= %.1f)\n",
             rss_end - rss_half, rss_half, rss_end, PLATEAU_MIB), failed++;
    if (!failed)
      printf("# check: outputs right, <= %d variants, %llu kernels unloaded, RSS %+.2f MiB "
             "over the second half\n",
             bound, (unsigned long long)s.evicted, rss_end - rss_half);
  }
  if (policy == KILN_SPECIALIZE_ASYNC) {
    kiln_context_wait_compiles(ctx, -1, st);
    rt_cache_mem_stats(cache, &s);
    printf("# after the queue drained: %d loaded, %llu evicted, %llu compiles, %d variants, "
           "%.1f MiB RSS\n",
           s.entries, (unsigned long long)s.evicted, (unsigned long long)s.compiles,
           kiln_model_variants(m), rss_mib());
  }
  kiln_model_free(m);
  rt_cache_mem_stats(cache, &s);
  printf("# model freed: %d kernels loaded (%.1f KiB), %.1f MiB RSS\n\n", s.entries,
         (double)s.code_bytes / 1024.0, rss_mib());
  for (int c = 0; c < CLASSES; c++) free(lat[c]);
  free(data);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return failed;
}

static void usage(void) {
  fprintf(stderr, "usage: bench_soak [--shapes N] [--every K] [--limit BYTES] [--unbounded] "
                  "[--policy sync|async|both] [--drain] [--mix] [--check]\n");
  exit(2);
}

int main(int argc, char **argv) {
  soak_opts o = {.shapes = 10000, .every = 1000, .limit = RT_CODE_LIMIT_DEFAULT};
  bool unbounded = false, sync = true, async = true, limit_given = false;
  bool shapes_given = false, every_given = false;
  const char *env = getenv("KILN_CODE_MAX_BYTES");
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shapes") && i + 1 < argc) o.shapes = atoi(argv[++i]),
                                                     shapes_given = true;
    else if (!strcmp(argv[i], "--every") && i + 1 < argc) o.every = atoi(argv[++i]),
                                                         every_given = true;
    else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
      o.limit = (size_t)strtoull(argv[++i], NULL, 10);
      limit_given = true;
    } else if (!strcmp(argv[i], "--unbounded")) unbounded = true;
    else if (!strcmp(argv[i], "--drain")) o.drain = true;
    else if (!strcmp(argv[i], "--mix")) o.mix = true;
    else if (!strcmp(argv[i], "--check")) o.check = o.mix = true;
    else if (!strcmp(argv[i], "--policy") && i + 1 < argc) {
      const char *p = argv[++i];
      sync = !strcmp(p, "sync") || !strcmp(p, "both");
      async = !strcmp(p, "async") || !strcmp(p, "both");
      if (!sync && !async) usage();
    } else usage();
  }
  if (o.check) {
    if (!shapes_given) o.shapes = 3000;
    if (!every_given) o.every = 500;
    if (!limit_given) o.limit = 256 * 1024, limit_given = true;
  }
  if (o.shapes < 1 || o.every < 1) usage();
  if (!limit_given && env && *env) {
    /* the context read it: take its bound */
    kiln_status *st = kiln_status_new();
    kiln_context *ctx = kiln_context_new(st);
    if (!ctx) die("KILN_CODE_MAX_BYTES", st);
    o.limit = rt_cache_mem_limit(rt_context_cache(ctx));
    kiln_context_free(ctx);
    kiln_status_free(st);
  }
  printf("# bench_soak: %d requests (%s), a line every %d\n", o.shapes,
         o.mix ? "half of them 16 recurring shapes" : "each a new shape", o.every);
  int failed = 0;
  if (sync) failed += soak("sync", KILN_SPECIALIZE_SYNC, o.limit, &o);
  if (async) failed += soak("async", KILN_SPECIALIZE_ASYNC, o.limit, &o);
  if (unbounded) failed += soak("sync", KILN_SPECIALIZE_SYNC, SIZE_MAX, &o);
  if (o.check) printf("bench_soak --check: %s\n", failed ? "FAILED" : "passed");
  return failed ? 1 : 0;
}
