/* test_tier_up.c - quick kernels first (src/tier_up.c,
 * kiln_context_set_tier_up): a compile that must build at least the
 * threshold of kernels runs them at the quick tier at once, with the same
 * results as full kernels; the full builds replace them on the compile
 * thread (QUICK_LIVE drops to 0) and only they reach the disk cache, so a
 * second context loads every kernel from disk and builds nothing quick; a
 * compile below the threshold, or with tier-up off, builds nothing quick;
 * a model freed while its rebuild is queued or running is safe (ASan in
 * CI); a negative threshold is refused. Rebuilds that pay run while
 * executes hold the CPUs; a GEMM whose quick kernel is the prebuilt GEMM
 * with a cheap epilogue waits until they leave them. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/rt.h"
#include "src/variants.h"

/* Five kernels that stay apart: matmul (+ softmax, fused or not),
 * permute, cumsum, exp, sum. */
#define CHAIN                                                                                   \
  "mo.graph @chain<n>(%x: !mo.tensor<[n, 32], f32>, %w: !mo.tensor<[32, 32], f32>) -> "         \
  "(!mo.tensor<[1, n], f32>) {\n"                                                               \
  "  %0 = mo.matmul(%x, %w) : (!mo.tensor<[n, 32], f32>, !mo.tensor<[32, 32], f32>) -> "        \
  "!mo.tensor<[n, 32], f32>\n"                                                                  \
  "  %1 = mo.softmax(%0) {axis = -1} : !mo.tensor<[n, 32], f32>\n"                              \
  "  %2 = mo.permute(%1) {dims = [1, 0]} : !mo.tensor<[32, n], f32>\n"                          \
  "  %3 = mo.cumsum(%2) {axis = 0} : !mo.tensor<[32, n], f32>\n"                                \
  "  %4 = mo.exp(%3) : !mo.tensor<[32, n], f32>\n"                                              \
  "  %5 = mo.sum(%4) {axis = 0} : !mo.tensor<[1, n], f32>\n"                                    \
  "  mo.output %5 : !mo.tensor<[1, n], f32>\n"                                                  \
  "}\n"

#define N 6

typedef struct fx {
  kiln_status *st;
  kiln_graph *g;
  kiln_tensor *x, *w;
  char dir[64];
} fx;

static void fx_init(fx *f) {
  f->st = kiln_status_new();
  f->g = kiln_graph_parse(CHAIN, strlen(CHAIN), "chain", f->st);
  cr_assert_not_null(f->g, "%s", kiln_status_message(f->st));
  int64_t xs[2] = {N, 32}, ws[2] = {32, 32};
  f->x = kiln_tensor_new(KILN_FLOAT32, 2, xs, f->st);
  f->w = kiln_tensor_new(KILN_FLOAT32, 2, ws, f->st);
  cr_assert(f->x && f->w);
  float *x = kiln_tensor_data(f->x), *w = kiln_tensor_data(f->w);
  for (int i = 0; i < N * 32; i++) x[i] = (float)((i * 37 % 17) - 8) / 8.0f;
  for (int i = 0; i < 32 * 32; i++) w[i] = (float)((i * 11 % 13) - 6) / 16.0f;
  snprintf(f->dir, sizeof f->dir, "/tmp/kiln-tier-XXXXXX");
  cr_assert_not_null(mkdtemp(f->dir));
}

static void fx_free(fx *f) {
  kiln_tensor_free(f->x);
  kiln_tensor_free(f->w);
  kiln_graph_free(f->g);
  kiln_status_free(f->st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
  cr_assert_eq(system(cmd), 0);
}

/* A context on the fixture's cache dir with the given threshold. */
static kiln_context *context(fx *f, int min_kernels) {
  kiln_context *ctx = kiln_context_new(f->st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(f->st));
  cr_assert_eq(kiln_context_set_cache_dir(ctx, f->dir, 0, f->st), 0, "%s",
               kiln_status_message(f->st));
  cr_assert_eq(kiln_context_set_tier_up(ctx, min_kernels, f->st), 0);
  return ctx;
}

static kiln_model *compile(fx *f, kiln_context *ctx) {
  kiln_model *m = kiln_model_compile(ctx, f->g, f->st);
  cr_assert_not_null(m, "%s", kiln_status_message(f->st));
  return m;
}

static void run(fx *f, kiln_model *m, float out[N]) {
  kiln_tensor *o = NULL, *in[2] = {f->x, f->w};
  cr_assert_eq(kiln_model_execute(m, in, 2, &o, 1, f->st), 0, "%s",
               kiln_status_message(f->st));
  memcpy(out, kiln_tensor_data(o), N * sizeof *out);
  kiln_tensor_free(o);
}

static void same(const float *a, const float *b) {
  for (int i = 0; i < N; i++)
    cr_assert(fabsf(a[i] - b[i]) <= 1e-5f * fabsf(b[i]) + 1e-6f, "out[%d]: %.9g vs %.9g", i,
              (double)a[i], (double)b[i]);
}

/* The reference: every kernel full (tier-up off), no disk cache shared. */
static void reference(fx *f, float out[N]) {
  kiln_context *ctx = kiln_context_new(f->st);
  cr_assert_not_null(ctx);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, f->st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, 0, f->st), 0);
  kiln_model *m = compile(f, ctx);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS), 0);
  run(f, m, out);
  kiln_model_free(m);
  kiln_context_free(ctx);
}

Test(tier_up, quick_first_then_full_and_only_full_on_disk) {
  fx f;
  fx_init(&f);
  float want[N], got[N];
  reference(&f, want);

  kiln_context *ctx = context(&f, 1);
  rt_spec_set_test_delay(ctx, 300); /* the rebuild waits: the quick kernels run first */
  kiln_model *m = compile(&f, ctx);
  double quick = kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS);
  cr_assert_geq(quick, 4, "quick kernels: %g", quick);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE), quick);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_QUICK_KERNELS), quick);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_DISK_HITS), 0);
  run(&f, m, got);
  same(got, want);

  rt_spec_set_test_delay(ctx, 0);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, f.st), 0);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE), 0);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_QUICK_LIVE), 0);
  /* quick + full builds of each kernel */
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_COMPILES), 2 * quick);
  run(&f, m, got);
  same(got, want);
  kiln_model_free(m);
  kiln_context_free(ctx);

  /* a later process: every kernel from disk, at full, nothing quick */
  ctx = context(&f, 1);
  m = compile(&f, ctx);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS), 0);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_COMPILES), 0);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_DISK_HITS), quick);
  run(&f, m, got);
  same(got, want);
  kiln_model_free(m);
  kiln_context_free(ctx);
  fx_free(&f);
}

Test(tier_up, below_threshold_or_off_builds_full) {
  fx f;
  fx_init(&f);
  kiln_context *ctx = context(&f, 1000);
  kiln_model *m = compile(&f, ctx);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS), 0);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_QUICK_KERNELS), 0);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 0, f.st), 0); /* nothing queued */
  kiln_model_free(m);
  kiln_context_free(ctx);

  ctx = kiln_context_new(f.st);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, f.st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, 0, f.st), 0);
  m = compile(&f, ctx);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS), 0);
  kiln_model_free(m);
  kiln_context_free(ctx);
  fx_free(&f);
}

Test(tier_up, model_freed_while_rebuild_pending) {
  fx f;
  fx_init(&f);
  kiln_context *ctx = context(&f, 1);
  rt_spec_set_test_delay(ctx, 2000);
  kiln_model *m = compile(&f, ctx);
  cr_assert_geq(kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE), 4);
  usleep(20000); /* the job has started (its delay runs) */
  kiln_model_free(m);                      /* cancels it: returns well before 2 s */
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_QUICK_LIVE), 0);
  m = compile(&f, ctx);                    /* quick kernels now hit the memory cache */
  kiln_model_free(m);                      /* its job still queued */
  kiln_context_free(ctx);
  fx_free(&f);
}

Test(tier_up, bad_threshold) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_tier_up(ctx, -1, st), -1);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_assert_not_null(strstr(kiln_status_message(st), "negative"));
  cr_assert_eq(kiln_context_set_tier_up(NULL, 1, st), -1);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* Four kernels: the prebuilt GEMM with a bias add and the softmax (the
 * prebuilt rows), as fast quick: rebuilt only while idle; the prebuilt
 * GEMM with a bias and a gelu, and a GEMM of static sizes (the template at
 * the quick tier): rebuilt at once. */
#define T32 "!mo.tensor<[n, 32], f32>"
#define GEMMS                                                                                   \
  "mo.graph @gemms<n>(%x: " T32 ", %w: !mo.tensor<[32, 32], f32>, %b: !mo.tensor<[32], f32>, "   \
  "%y: !mo.tensor<[4, 32], f32>) -> (" T32 ", " T32 ", !mo.tensor<[4, 32], f32>) {\n"           \
  "  %0 = mo.matmul(%x, %w) : (" T32 ", !mo.tensor<[32, 32], f32>) -> " T32 "\n"                 \
  "  %1 = mo.add(%0, %b) : (" T32 ", !mo.tensor<[32], f32>) -> " T32 "\n"                        \
  "  %2 = mo.matmul(%1, %w) : (" T32 ", !mo.tensor<[32, 32], f32>) -> " T32 "\n"                 \
  "  %3 = mo.add(%2, %b) : (" T32 ", !mo.tensor<[32], f32>) -> " T32 "\n"                        \
  "  %4 = mo.gelu(%3) : " T32 "\n"                                                               \
  "  %5 = mo.softmax(%1) {axis = -1} : " T32 "\n"                                                \
  "  %6 = mo.matmul(%y, %w) : (!mo.tensor<[4, 32], f32>, !mo.tensor<[32, 32], f32>) -> "        \
  "!mo.tensor<[4, 32], f32>\n"                                                                  \
  "  mo.output %4, %5, %6 : " T32 ", " T32 ", !mo.tensor<[4, 32], f32>\n"                        \
  "}\n"
#define OUTS ((2 * N + 4) * 32)

static void run_gemms(kiln_model *m, kiln_tensor *const *in, float *out, kiln_status *st) {
  kiln_tensor *o[3] = {NULL, NULL, NULL};
  cr_assert_eq(kiln_model_execute(m, in, 4, o, 3, st), 0, "%s", kiln_status_message(st));
  memcpy(out, kiln_tensor_data(o[0]), N * 32 * sizeof *out);
  memcpy(out + N * 32, kiln_tensor_data(o[1]), N * 32 * sizeof *out);
  memcpy(out + 2 * N * 32, kiln_tensor_data(o[2]), 4 * 32 * sizeof *out);
  for (int i = 0; i < 3; i++) kiln_tensor_free(o[i]);
}

static double process_cpu_ms(void) {
  struct rusage ru;
  cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* The voluntary context switches of this process's thread named name
 * (/proc/self/task/<tid>/status): its sleeps; -1 when there is none. */
static long thread_sleeps(const char *name) {
  DIR *d = opendir("/proc/self/task");
  cr_assert_not_null(d);
  long n = -1;
  for (struct dirent *e; n < 0 && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[300], buf[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    bool match = fgets(buf, sizeof buf, f) && strncmp(buf, name, strlen(name)) == 0 &&
                 (buf[strlen(name)] == '\n' || buf[strlen(name)] == 0);
    fclose(f);
    if (!match) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    char line[128];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1) break;
    fclose(f);
  }
  closedir(d);
  return n;
}

static double wait_quick_live(kiln_model *m, double want) {
  double live = kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE);
  for (int t = 0; t < 6000 && live > want; t++) {
    usleep(10000);
    live = kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE);
  }
  return live;
}

Test(tier_up, gemm_as_fast_quick_waits_for_idle_cpus) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(GEMMS, strlen(GEMMS), "gemms", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  int64_t xs[2] = {N, 32}, ws[2] = {32, 32}, bs[1] = {32}, ys[2] = {4, 32};
  kiln_tensor *in[4] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, st),
                        kiln_tensor_new(KILN_FLOAT32, 2, ws, st),
                        kiln_tensor_new(KILN_FLOAT32, 1, bs, st),
                        kiln_tensor_new(KILN_FLOAT32, 2, ys, st)};
  for (int t = 0; t < 4; t++) {
    cr_assert_not_null(in[t]);
    float *d = kiln_tensor_data(in[t]);
    for (int64_t i = 0; i < kiln_tensor_numel(in[t]); i++)
      d[i] = (float)((i * (7 + 4 * t) % 17) - 8) / 16.0f;
  }
  float want[OUTS], got[OUTS];
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, 0, st), 0);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  run_gemms(m, in, want, st);
  kiln_model_free(m);
  kiln_context_free(ctx);

  ctx = kiln_context_new(st);
  cr_assert_not_null(ctx);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, 1, st), 0);
  /* as many threads as CPUs: an execute running holds them all */
  cr_assert_eq(kiln_context_set_num_threads(ctx, (int)sysconf(_SC_NPROCESSORS_ONLN), st), 0);
  rt_spec_hold_busy(ctx, 1); /* a request running all along */
  m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS), 4);
  /* without the prebuilt GEMM or rows in the engine their rebuilds pay */
  double idle_ones = (jit_engine_prebuilt(ctx->jit) ? 1 : 0) +
                     (jit_engine_has_prebuilt_rows(ctx->jit) ? 1 : 0);
  cr_assert_eq(wait_quick_live(m, idle_ones), idle_ones);
  double cpu0 = process_cpu_ms();
  long sleeps0 = thread_sleeps("kiln-compile");
  usleep(300000);
  double waiting_cpu = process_cpu_ms() - cpu0;
  long sleeps = thread_sleeps("kiln-compile") - sleeps0;
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE), idle_ones,
               "a kernel as fast quick was rebuilt while an execute held the CPUs");
  /* the wait for idle CPUs costs (almost) none of them */
  cr_assert_lt(waiting_cpu, 60.0, "%.1f ms of CPU in 300 ms of waiting", waiting_cpu);
  /* nor wakes the compile thread more than ~100 times a second (one rest
   * of RT_TIER_BUSY_REST_MS per check; 1 ms sleeps woke it ~300 times
   * here), each wake-up a preemption of a request where those hold every CPU */
  if (idle_ones > 0)
    cr_assert_lt(sleeps, 100, "the compile thread slept %ld times in 300 ms of waiting", sleeps);
  if (idle_ones > 0)
    cr_assert_eq(kiln_context_wait_compiles(ctx, 100, st), 1); /* still pending */
  run_gemms(m, in, got, st);
  for (int i = 0; i < OUTS; i++)
    cr_assert(fabsf(got[i] - want[i]) <= 1e-5f * fabsf(want[i]) + 1e-6f, "out[%d]: %.9g vs %.9g",
              i, (double)got[i], (double)want[i]);

  rt_spec_hold_busy(ctx, -1); /* the CPUs are free: the last rebuild runs */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE), 0);
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_COMPILES), 8);
  run_gemms(m, in, got, st);
  for (int i = 0; i < OUTS; i++)
    cr_assert(fabsf(got[i] - want[i]) <= 1e-5f * fabsf(want[i]) + 1e-6f, "out[%d]: %.9g vs %.9g",
              i, (double)got[i], (double)want[i]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  for (int t = 0; t < 4; t++) kiln_tensor_free(in[t]);
  kiln_graph_free(g);
  kiln_status_free(st);
}
