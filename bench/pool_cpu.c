/* pool_cpu.c (bench_pool_cpu) - what a second thread costs per request:
 * CPU time (getrusage RUSAGE_SELF, user + sys, every thread of the
 * process) and wall time per kiln_model_execute, on a 1-thread and a
 * 2-thread context, for requests back to back and for requests separated
 * by a service gap (sleeps of 1 to 5 ms, seeded), where a pool whose idle
 * threads spin burns CPU that the 1-thread context does not.
 *
 * Cases: relu [16] (the execute overhead: nothing splits), examples/mlp.mlir
 * at batch 64 (one split GEMM per request), examples/attention.mlir and
 * ../shared/ir-examples/attention_block.mlir at batch 4, seq 128 (several
 * split kernels with serial ones between: back-to-back jobs within one
 * execute). Weights and inputs are seeded random; each model runs on its
 * shape's specialized variant (compiled while warming up). Each case runs in rounds
 * that alternate the two contexts (the order swaps every round), each block
 * after a 20 ms settle so that nothing the other context's pool still does
 * is billed to it. Per case and gap: the median and 90th percentile of the
 * execute's wall time, the mean CPU time per request, and the ratios
 * 2 threads / 1 thread: of the CPU means, the median of the per-round
 * ratios (paired: each round's two blocks ran next to each other, so load
 * from other processes that drifts between rounds cancels), and of the
 * wall medians.
 *
 * usage: bench_pool_cpu [--quick] [--rounds N] [--requests N] [--case TEXT]
 *                       [--gap none|ms] [--shared DIR]
 * (--case: only the cases whose name contains TEXT; --gap: only that gap;
 * --shared: where ir-examples/ lives, default the checkout's ../shared;
 * a case whose file is missing is skipped with a note). */
#define _GNU_SOURCE /* nanosleep */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

#define MAX_INPUTS 3

typedef struct bench_case {
  const char *name;
  const char *file; /* NULL: text */
  const char *text;
  int ninputs;
  int rank;
  int64_t shape[3]; /* every input has this shape */
} bench_case;

static const char RELU16[] =
    "mo.graph @relu(%x: !mo.tensor<[16], f32>) -> (!mo.tensor<[16], f32>) {\n"
    "  %y = mo.relu(%x) : !mo.tensor<[16], f32>\n"
    "  mo.output %y : !mo.tensor<[16], f32>\n}\n";

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cpu_us(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void sleep_us(double us) {
  struct timespec ts = {(time_t)(us / 1e6), (long)((us - (double)(time_t)(us / 1e6) * 1e6) * 1e3)};
  nanosleep(&ts, NULL);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double quantile(double *t, int n, double q) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return t[(int)(q * (n - 1) + 0.5)];
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_pool_cpu: %s: %s\n", what, st ? kiln_status_message(st) : "failed");
  exit(1);
}

static uint64_t next_rand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 11;
}

static kiln_tensor *random_f32(int rank, const int64_t *shape, uint64_t *s) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  if (!t) die("out of memory", NULL);
  float *v = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++)
    v[i] = (float)((double)next_rand(s) / 9007199254740992.0 * 2 - 1) * 0.1f;
  return t;
}

/* One context at a thread count, the case's model compiled and bound in
 * it, its inputs and a preallocated output set. */
typedef struct runner {
  kiln_context *ctx;
  kiln_model *m;
  kiln_tensor *in[MAX_INPUTS];
  kiln_tensor **out;
  kiln_tensor **w;
  int nw;
} runner;

static kiln_graph *case_graph(const bench_case *c, const char *path, kiln_status *st) {
  return c->file ? kiln_graph_load(path, st)
                 : kiln_graph_parse(c->text, strlen(c->text), c->name, st);
}

static void bind_weights(runner *r, uint64_t *seed, kiln_status *st) {
  r->nw = kiln_model_num_weights(r->m);
  r->w = calloc((size_t)r->nw + 1, sizeof *r->w);
  for (int i = 0; i < r->nw; i++) {
    int64_t shape[8];
    int rank = kiln_model_weight_rank(r->m, i);
    for (int a = 0; a < rank && a < 8; a++) /* the cases' weights are static */
      shape[a] = atoll(kiln_model_weight_dim(r->m, i, a));
    r->w[i] = random_f32(rank, shape, seed);
    if (kiln_model_bind_weight(r->m, kiln_model_weight_name(r->m, i), r->w[i], st) != 0)
      die("bind weight", st);
  }
}

static void runner_init(runner *r, const bench_case *c, const char *path, int threads,
                        kiln_status *st) {
  memset(r, 0, sizeof *r);
  uint64_t seed = 42; /* both contexts get the same weights and inputs */
  if (!(r->ctx = kiln_context_new(st))) die("context", st);
  if (kiln_context_set_num_threads(r->ctx, threads, st) != 0) die("threads", st);
  kiln_graph *g = case_graph(c, path, st);
  if (!g) die(c->name, st);
  r->m = kiln_model_compile(r->ctx, g, st);
  kiln_graph_free(g);
  if (!r->m) die("compile", st);
  bind_weights(r, &seed, st);
  /* the steady state of a service: the shape's specialized variant, compiled
   * by the first warm-up execute rather than by a compile thread that would
   * bill its CPU to the measured requests */
  if (kiln_model_set_specialize(r->m, KILN_SPECIALIZE_SYNC, st) != 0) die("specialize", st);
  for (int i = 0; i < c->ninputs; i++) r->in[i] = random_f32(c->rank, c->shape, &seed);
  r->out = calloc((size_t)kiln_model_num_outputs(r->m), sizeof *r->out);
  for (int i = 0; i < 20; i++) /* warm: kernels, plan, arena, workers */
    if (kiln_model_execute(r->m, r->in, c->ninputs, r->out, kiln_model_num_outputs(r->m), st) != 0)
      die("execute", st);
}

static void runner_free(runner *r, const bench_case *c) {
  for (int i = 0; i < kiln_model_num_outputs(r->m); i++) kiln_tensor_free(r->out[i]);
  for (int i = 0; i < c->ninputs; i++) kiln_tensor_free(r->in[i]);
  for (int i = 0; i < r->nw; i++) kiln_tensor_free(r->w[i]);
  free(r->out);
  free(r->w);
  kiln_model_free(r->m);
  kiln_context_free(r->ctx);
}

/* One block of n requests on r: wall time of each execute into t, the
 * block's CPU time added to *cpu. gap: sleep 1-5 ms (seeded) after each. */
static void run_block(runner *r, const bench_case *c, int n, bool gap, uint64_t *seed, double *t,
                      double *cpu, kiln_status *st) {
  int nout = kiln_model_num_outputs(r->m);
  sleep_us(20000); /* settle */
  double c0 = cpu_us();
  for (int i = 0; i < n; i++) {
    double t0 = now_us();
    int rc = kiln_model_execute(r->m, r->in, c->ninputs, r->out, nout, st);
    t[i] = now_us() - t0;
    if (rc != 0) die("execute", st);
    if (gap) sleep_us(1000 + (double)(next_rand(seed) % 4001));
  }
  *cpu += cpu_us() - c0;
}

typedef struct result {
  double p50, p90, cpu; /* us per request */
} result;

static void measure(const bench_case *c, const char *path, bool gap, int rounds, int n,
                    kiln_status *st) {
  runner r[2];
  runner_init(&r[0], c, path, 1, st);
  runner_init(&r[1], c, path, 2, st);
  double *t[2], *ratio = malloc((size_t)rounds * sizeof *ratio);
  double cpu[2] = {0, 0};
  for (int k = 0; k < 2; k++) t[k] = malloc((size_t)rounds * (size_t)n * sizeof *t[k]);
  uint64_t seed = 7;
  for (int round = 0; round < rounds; round++) {
    double block[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
      int k = (j + round) % 2;
      run_block(&r[k], c, n, gap, &seed, t[k] + (size_t)round * (size_t)n, &block[k], st);
      cpu[k] += block[k];
    }
    ratio[round] = block[1] / block[0];
  }
  result res[2];
  for (int k = 0; k < 2; k++) {
    res[k].p50 = quantile(t[k], rounds * n, 0.5);
    res[k].p90 = quantile(t[k], rounds * n, 0.9);
    res[k].cpu = cpu[k] / (rounds * n);
    free(t[k]);
  }
  printf("%-26s %-7s %8.1f %8.1f %8.1f  %8.1f %8.1f %8.1f  %6.3f %6.3f %6.3f\n", c->name,
         gap ? "1-5 ms" : "none", res[0].p50, res[0].p90, res[0].cpu, res[1].p50, res[1].p90,
         res[1].cpu, res[1].cpu / res[0].cpu, quantile(ratio, rounds, 0.5),
         res[1].p50 / res[0].p50);
  free(ratio);
  fflush(stdout);
  runner_free(&r[0], c);
  runner_free(&r[1], c);
}

int main(int argc, char **argv) {
  int rounds = 6, n = 100;
  const char *shared = KILN_SOURCE_DIR "/../shared", *only = NULL, *gaps = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) rounds = 2, n = 30;
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--requests") && i + 1 < argc) n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--shared") && i + 1 < argc) shared = argv[++i];
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--gap") && i + 1 < argc) gaps = argv[++i];
    else {
      fprintf(stderr, "usage: bench_pool_cpu [--quick] [--rounds N] [--requests N] [--case TEXT] "
                      "[--gap none|ms] [--shared DIR]\n");
      return 2;
    }
  }
  if (rounds < 1 || n < 1) return 2;
  const bench_case cases[] = {
      {"relu [16] (overhead)", NULL, RELU16, 1, 1, {16}},
      {"mlp batch=64", "examples/mlp.mlir", NULL, 1, 2, {64, 784}},
      {"attention b=4 s=128", "examples/attention.mlir", NULL, 3, 3, {4, 128, 64}},
      {"attention_block b=4 s=128", "ir-examples/attention_block.mlir", NULL, 2, 3, {4, 128, 64}},
  };
  kiln_status *st = kiln_status_new();
  printf("%d rounds x %d requests per context; wall = one execute (us), cpu = user+sys of the "
         "process per request (us)\n",
         rounds, n);
  printf("%-26s %-7s %8s %8s %8s  %8s %8s %8s  %6s %6s %6s\n", "case", "gap", "1t p50", "1t p90",
         "1t cpu", "2t p50", "2t p90", "2t cpu", "cpu2/1", "paired", "p50 2/1");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && !strstr(cases[i].name, only)) continue;
    char path[4096] = "";
    if (cases[i].file) {
      bool in_shared = !strncmp(cases[i].file, "ir-", 3);
      snprintf(path, sizeof path, "%s/%s", in_shared ? shared : KILN_SOURCE_DIR, cases[i].file);
      FILE *f = fopen(path, "r");
      if (!f) {
        printf("%-26s skipped: %s not found\n", cases[i].name, path);
        continue;
      }
      fclose(f);
    }
    if (!gaps || !strcmp(gaps, "none")) measure(&cases[i], path, false, rounds, n, st);
    if (!gaps || !strcmp(gaps, "ms")) measure(&cases[i], path, true, rounds, n, st);
  }
  kiln_status_free(st);
  return 0;
}
