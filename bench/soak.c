/* soak.c (bench_soak) - does a long-running service stay bounded? One
 * context runs one small model (exp -> tanh -> mul over [a, b] f32, one
 * fused kernel) over N distinct shapes (default 10,000: execute i has
 * a = 1 + i mod 100, b = 1 + i / 100, so tensors stay under 100 x 100 and
 * only the code can grow),
 * one execute each, under the `sync` policy and then, in a fresh context,
 * under `async`; every K executes (default 1,000) it prints a line: the
 * kernels loaded in the context's memory cache, their code bytes, the
 * kernels unloaded by the code bound so far, the kernels compiled, the live
 * variants, the process's RSS (/proc/self/statm) and the wall time of those
 * K executes. Both curves must level off: the variants are bounded (8 per
 * model), and kernels no variant references are unloaded past the code
 * bound (kiln_context_set_code_limit; 8 MiB by default, KILN_CODE_MAX_BYTES,
 * or --limit). The disk cache is off, so every new shape compiles. Not a
 * timed test: a measurement to read (bench/README.md).
 *
 * usage: bench_soak [--shapes N] [--every K] [--limit BYTES] [--unbounded]
 *                   [--policy sync|async|both] [--drain]
 *   --unbounded  also run sync with no bound (SIZE_MAX), for comparison
 *   --drain      under async, wait for the compile queue after each execute
 *                (a service with time between requests: every shape gets
 *                its variant on the compile thread; without it executes
 *                outrun the compiles and most requests are dropped)
 *
 * Reads the loaded-kernel count through the internal cache statistics
 * (src/cache_mem.h); everything else goes through the public API. */
#include <kiln/kiln.h>
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
#define ROWS 100 /* a = 1 + i mod ROWS */

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

static void soak(const char *label, kiln_specialize_policy policy, size_t limit, int shapes,
                 int every, bool drain) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  if (kiln_context_set_cache_dir(ctx, NULL, 0, st) != 0) die("disk cache off", st);
  if (kiln_context_set_specialize(ctx, policy, st) != 0) die("policy", st);
  if (kiln_context_set_code_limit(ctx, limit, st) != 0) die("code limit", st);
  kiln_graph *g = kiln_graph_parse(GRAPH, strlen(GRAPH), "soak", st);
  if (!g) die("parse", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile", st);
  int64_t most = (int64_t)ROWS * ((shapes - 1) / ROWS + 1);
  float *data = calloc((size_t)most, sizeof *data);
  if (!data) {
    fprintf(stderr, "bench_soak: out of memory\n");
    exit(1);
  }
  for (int64_t i = 0; i < most; i++) data[i] = (float)(i % 17) / 8.0f - 1.0f;

  const char *how = drain && policy == KILN_SPECIALIZE_ASYNC ? " (queue drained after each)" : "";
  if (limit == SIZE_MAX)
    printf("# %s%s, no code bound\n", label, how);
  else
    printf("# %s%s, code bound %zu bytes\n", label, how, limit);
  printf("%9s %8s %11s %8s %9s %8s %9s %9s\n", "executes", "loaded", "code_KiB", "evicted",
         "compiles", "variants", "rss_MiB", "ms/exec");
  rt_cache_mem *cache = rt_context_cache(ctx);
  double t0 = now_s();
  for (int i = 1; i <= shapes; i++) {
    int64_t shape[2] = {1 + (i - 1) % ROWS, 1 + (i - 1) / ROWS};
    kiln_tensor *in = kiln_tensor_borrow(KILN_FLOAT32, 2, shape, data, st);
    kiln_tensor *out[1] = {NULL};
    if (!in || kiln_model_execute(m, &in, 1, out, 1, st) != 0) die("execute", st);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(in);
    if (drain && policy == KILN_SPECIALIZE_ASYNC) kiln_context_wait_compiles(ctx, -1, st);
    if (i % every == 0 || i == shapes) {
      double t1 = now_s();
      int n = i % every ? i % every : every;
      rt_cache_stats s;
      rt_cache_mem_stats(cache, &s);
      printf("%9d %8d %11.1f %8llu %9llu %8d %9.1f %9.3f\n", i, s.entries,
             (double)s.code_bytes / 1024.0, (unsigned long long)s.evicted,
             (unsigned long long)s.compiles, kiln_model_variants(m), rss_mib(),
             (t1 - t0) * 1e3 / n);
      fflush(stdout);
      t0 = now_s();
    }
  }
  if (policy == KILN_SPECIALIZE_ASYNC) {
    kiln_context_wait_compiles(ctx, -1, st);
    rt_cache_stats s;
    rt_cache_mem_stats(cache, &s);
    printf("# after the queue drained: %d loaded, %llu evicted, %llu compiles, %d variants, "
           "%.1f MiB RSS\n",
           s.entries, (unsigned long long)s.evicted, (unsigned long long)s.compiles,
           kiln_model_variants(m), rss_mib());
  }
  kiln_model_free(m);
  rt_cache_stats s;
  rt_cache_mem_stats(cache, &s);
  printf("# model freed: %d kernels loaded (%.1f KiB), %.1f MiB RSS\n\n", s.entries,
         (double)s.code_bytes / 1024.0, rss_mib());
  free(data);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

static void usage(void) {
  fprintf(stderr, "usage: bench_soak [--shapes N] [--every K] [--limit BYTES] [--unbounded] "
                  "[--policy sync|async|both]\n");
  exit(2);
}

int main(int argc, char **argv) {
  int shapes = 10000, every = 1000;
  bool unbounded = false, sync = true, async = true, drain = false;
  size_t limit = RT_CODE_LIMIT_DEFAULT;
  const char *env = getenv("KILN_CODE_MAX_BYTES");
  bool limit_given = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--every") && i + 1 < argc) every = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
      limit = (size_t)strtoull(argv[++i], NULL, 10);
      limit_given = true;
    } else if (!strcmp(argv[i], "--unbounded")) unbounded = true;
    else if (!strcmp(argv[i], "--drain")) drain = true;
    else if (!strcmp(argv[i], "--policy") && i + 1 < argc) {
      const char *p = argv[++i];
      sync = !strcmp(p, "sync") || !strcmp(p, "both");
      async = !strcmp(p, "async") || !strcmp(p, "both");
      if (!sync && !async) usage();
    } else usage();
  }
  if (shapes < 1 || every < 1) usage();
  if (!limit_given && env && *env) {
    /* the context read it: take its bound */
    kiln_status *st = kiln_status_new();
    kiln_context *ctx = kiln_context_new(st);
    if (!ctx) die("KILN_CODE_MAX_BYTES", st);
    limit = rt_cache_mem_limit(rt_context_cache(ctx));
    kiln_context_free(ctx);
    kiln_status_free(st);
  }
  printf("# bench_soak: %d distinct shapes, one execute each, a line every %d\n", shapes, every);
  if (sync) soak("sync", KILN_SPECIALIZE_SYNC, limit, shapes, every, drain);
  if (async) soak("async", KILN_SPECIALIZE_ASYNC, limit, shapes, every, drain);
  if (unbounded) soak("sync", KILN_SPECIALIZE_SYNC, SIZE_MAX, shapes, every, drain);
  return 0;
}
