/* overhead.c (bench_overhead) - what an execute costs beyond its kernels,
 * and what threads buy on the kernels the pool splits.
 *
 * 1. Per-call overhead (issue 4 part 5): relu on a 5-element f32 tensor;
 *    the kernel called directly (fn(args, syms, 0, 1), as the runtime calls
 *    it) against kiln_model_execute into a preallocated output. Each sample
 *    is the mean of a batch of calls; the table shows min / median / max of
 *    the samples and the median difference; once on a fresh context, once
 *    after a split kernel started the pool's workers (a multi-threaded
 *    process: malloc and friends take their slower paths).
 * 2. Threads: reduce (sum over the last and over the first axis), softmax,
 *    layer_norm, transpose and concat on a few MiB, each timed on a context
 *    running 1 thread and on one running 2 (kiln_context_set_num_threads),
 *    in alternating batches of back-to-back executes so that noise hits both
 *    alike; medians and the ratio.
 * 3. With --sweep: a reduce-sum over rows of growing size with 1 and 2
 *    threads, to see where splitting starts to pay (the pool's grain).
 *
 * usage: bench_overhead [--quick] [--sweep]
 * Uses the runtime's internal headers (src/rt.h) to reach the kernel. */
#define _GNU_SOURCE
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/rt.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_overhead: %s: %s\n", what, st ? kiln_status_message(st) : "failed");
  exit(1);
}

static kiln_model *compile(kiln_context *ctx, const char *text, kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "bench", st);
  if (!g) die("parse", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  if (!m) die("compile", st);
  return m;
}

static kiln_tensor *tensor(int rank, const int64_t *shape, unsigned seed) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  if (!t) die("out of memory", NULL);
  float *v = kiln_tensor_data(t);
  uint64_t s = seed * 2654435761u + 1;
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 4 - 2);
  }
  return t;
}

/* ---- 1. per-call overhead ---- */

/* with_pool: first run a kernel that splits on the same context, so the
 * pool's workers exist (the process is multi-threaded) while relu runs. */
static void overhead(int samples, int batch, bool with_pool) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  if (with_pool) {
    if (kiln_context_set_num_threads(ctx, 2, st) != 0) die("threads", st);
    kiln_model *big = compile(
        ctx,
        "mo.graph @g(%x: !mo.tensor<[1024, 1024], f32>) -> (!mo.tensor<[1024, 1024], f32>) {\n"
        "  %y = mo.softmax(%x) : !mo.tensor<[1024, 1024], f32>\n"
        "  mo.output %y : !mo.tensor<[1024, 1024], f32>\n}\n",
        st);
    int64_t bs[2] = {1024, 1024};
    kiln_tensor *bi = tensor(2, bs, 2), *bo = NULL;
    if (kiln_model_execute(big, &bi, 1, &bo, 1, st) != 0) die("execute", st);
    kiln_tensor_free(bi);
    kiln_tensor_free(bo);
    kiln_model_free(big);
  }
  kiln_model *m = compile(ctx,
                          "mo.graph @relu(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
                          "  %y = mo.relu(%x) : !mo.tensor<[5], f32>\n"
                          "  mo.output %y : !mo.tensor<[5], f32>\n}\n",
                          st);
  int64_t shape[1] = {5};
  kiln_tensor *in = tensor(1, shape, 1), *out = kiln_tensor_new(KILN_FLOAT32, 1, shape, st);
  int node = m->g->nnodes - 1;
  jit_kernel_fn fn = m->kernels[node];
  void *args[2] = {kiln_tensor_data(in), kiln_tensor_data(out)};
  int64_t syms[1] = {0};
  double *tk = malloc((size_t)samples * sizeof *tk), *te = malloc((size_t)samples * sizeof *te);
  for (int i = 0; i < 1000; i++) /* warm up */
    if (fn(args, syms, 0, 1) != 0 || kiln_model_execute(m, &in, 1, &out, 1, st) != 0)
      die("execute", st);
  for (int s = 0; s < samples; s++) {
    double t0 = now_ns();
    for (int i = 0; i < batch; i++) fn(args, syms, 0, 1);
    double t1 = now_ns();
    for (int i = 0; i < batch; i++) kiln_model_execute(m, &in, 1, &out, 1, st);
    double t2 = now_ns();
    tk[s] = (t1 - t0) / batch;
    te[s] = (t2 - t1) / batch;
  }
  double d[3];
  qsort(tk, (size_t)samples, sizeof *tk, cmp);
  qsort(te, (size_t)samples, sizeof *te, cmp);
  double mk = median(tk, samples), me = median(te, samples);
  d[0] = tk[0], d[1] = mk, d[2] = tk[samples - 1];
  printf("relu [5] f32, %d samples of %d calls (ns per call)%s\n", samples, batch,
         with_pool ? ", pool workers running" : "");
  printf("  %-28s min %8.1f  median %8.1f  max %8.1f\n", "kernel alone", d[0], d[1], d[2]);
  printf("  %-28s min %8.1f  median %8.1f  max %8.1f\n", "kiln_model_execute", te[0], me,
         te[samples - 1]);
  printf("  %-28s median %8.1f ns\n\n", "overhead (execute - kernel)", me - mk);
  free(tk);
  free(te);
  kiln_tensor_free(in);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- 2. / 3. threads ---- */

typedef struct tcase {
  const char *label;
  const char *text;
  int ninputs;
  int rank;
  int64_t shape[3]; /* of every input */
} tcase;

/* Median ns of one execute with 1 thread (out[0]) and 2 threads (out[1]):
 * m[k] is compiled in a context running k + 1 threads. Each sample is the
 * mean of a batch of back-to-back executes; batches alternate between the
 * two contexts so that noise hits both alike. */
static void time_threads(kiln_model *const *m, kiln_tensor **in, int nin, int reps, double out[2],
                         kiln_status *st) {
  enum { BATCH = 4 };
  kiln_tensor *o = NULL;
  if (kiln_model_execute(m[0], in, nin, &o, 1, st) != 0) die("execute", st);
  double *t[2];
  for (int k = 0; k < 2; k++) t[k] = malloc((size_t)reps * sizeof *t[k]);
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) {
      kiln_model_execute(m[k], in, nin, &o, 1, st); /* warm: wakes the workers */
      double t0 = now_ns();
      for (int b = 0; b < BATCH; b++)
        if (kiln_model_execute(m[k], in, nin, &o, 1, st) != 0) die("execute", st);
      t[k][r] = (now_ns() - t0) / BATCH;
    }
  for (int k = 0; k < 2; k++) {
    out[k] = median(t[k], reps);
    free(t[k]);
  }
  kiln_tensor_free(o);
}

/* Two contexts, running 1 and 2 threads. */
static void contexts(kiln_context **ctx, kiln_status *st) {
  for (int k = 0; k < 2; k++) {
    if (!(ctx[k] = kiln_context_new(st))) die("context", st);
    if (kiln_context_set_num_threads(ctx[k], k + 1, st) != 0) die("threads", st);
  }
}

static void threads(int reps) {
  static const tcase cases[] = {
      {"sum last axis [2048, 2048]",
       "mo.graph @g(%x: !mo.tensor<[2048, 2048], f32>) -> (!mo.tensor<[2048, 1], f32>) {\n"
       "  %y = mo.sum(%x) {axis = -1} : (!mo.tensor<[2048, 2048], f32>) -> "
       "!mo.tensor<[2048, 1], f32>\n  mo.output %y : !mo.tensor<[2048, 1], f32>\n}\n",
       1, 2, {2048, 2048}},
      {"sum axis 0 [2048, 2048]",
       "mo.graph @g(%x: !mo.tensor<[2048, 2048], f32>) -> (!mo.tensor<[1, 2048], f32>) {\n"
       "  %y = mo.sum(%x) {axis = 0} : (!mo.tensor<[2048, 2048], f32>) -> "
       "!mo.tensor<[1, 2048], f32>\n  mo.output %y : !mo.tensor<[1, 2048], f32>\n}\n",
       1, 2, {2048, 2048}},
      {"softmax [1024, 1024]",
       "mo.graph @g(%x: !mo.tensor<[1024, 1024], f32>) -> (!mo.tensor<[1024, 1024], f32>) {\n"
       "  %y = mo.softmax(%x) : !mo.tensor<[1024, 1024], f32>\n"
       "  mo.output %y : !mo.tensor<[1024, 1024], f32>\n}\n",
       1, 2, {1024, 1024}},
      {"layer_norm [2048, 512]",
       "mo.graph @g(%x: !mo.tensor<[2048, 512], f32>, %gm: !mo.tensor<[512], f32>, "
       "%bt: !mo.tensor<[512], f32>) -> (!mo.tensor<[2048, 512], f32>) {\n"
       "  %y = mo.layer_norm(%x, %gm, %bt) : (!mo.tensor<[2048, 512], f32>, "
       "!mo.tensor<[512], f32>, !mo.tensor<[512], f32>) -> !mo.tensor<[2048, 512], f32>\n"
       "  mo.output %y : !mo.tensor<[2048, 512], f32>\n}\n",
       3, 2, {2048, 512}},
      {"transpose [2048, 2048]",
       "mo.graph @g(%x: !mo.tensor<[2048, 2048], f32>) -> (!mo.tensor<[2048, 2048], f32>) {\n"
       "  %y = mo.transpose(%x) {axis_1 = 0, axis_2 = 1} : !mo.tensor<[2048, 2048], f32>\n"
       "  mo.output %y : !mo.tensor<[2048, 2048], f32>\n}\n",
       1, 2, {2048, 2048}},
      {"concat axis 1 2 x [1024, 1024]",
       "mo.graph @g(%x: !mo.tensor<[1024, 1024], f32>, %z: !mo.tensor<[1024, 1024], f32>) -> "
       "(!mo.tensor<[1024, 2048], f32>) {\n"
       "  %y = mo.concat(%x, %z) {axis = 1} : (!mo.tensor<[1024, 1024], f32>, "
       "!mo.tensor<[1024, 1024], f32>) -> !mo.tensor<[1024, 2048], f32>\n"
       "  mo.output %y : !mo.tensor<[1024, 2048], f32>\n}\n",
       2, 2, {1024, 1024}},
  };
  kiln_status *st = kiln_status_new();
  kiln_context *ctx[2];
  contexts(ctx, st);
  printf("threads: median ns of one execute, %d samples each, 1 and 2 threads interleaved\n",
         reps);
  printf("  %-34s %12s %12s %8s\n", "case", "1 thread", "2 threads", "speedup");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    kiln_model *m[2] = {compile(ctx[0], cases[c].text, st), compile(ctx[1], cases[c].text, st)};
    kiln_tensor *in[3] = {NULL, NULL, NULL};
    for (int i = 0; i < cases[c].ninputs; i++) {
      int64_t s1[1] = {cases[c].shape[1]};
      in[i] = i > 0 && cases[c].ninputs == 3 ? tensor(1, s1, (unsigned)i)
                                             : tensor(cases[c].rank, cases[c].shape, (unsigned)i);
    }
    double t[2];
    time_threads(m, in, cases[c].ninputs, reps, t, st);
    printf("  %-34s %12.0f %12.0f %7.2fx\n", cases[c].label, t[0], t[1], t[0] / t[1]);
    for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
    for (int k = 0; k < 2; k++) kiln_model_free(m[k]);
  }
  printf("\n");
  for (int k = 0; k < 2; k++) kiln_context_free(ctx[k]);
  kiln_status_free(st);
}

static void sweep(int reps) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx[2];
  contexts(ctx, st);
  printf("sweep: sum over the last axis of [rows, 256] f32 (median ns per execute)\n");
  printf("  %8s %10s %12s %12s %8s\n", "rows", "elements", "1 thread", "2 threads", "speedup");
  for (int64_t rows = 64; rows <= 4096; rows *= 2) {
    char text[1024];
    snprintf(text, sizeof text,
             "mo.graph @g(%%x: !mo.tensor<[%lld, 256], f32>) -> (!mo.tensor<[%lld, 1], f32>) {\n"
             "  %%y = mo.sum(%%x) {axis = -1} : (!mo.tensor<[%lld, 256], f32>) -> "
             "!mo.tensor<[%lld, 1], f32>\n  mo.output %%y : !mo.tensor<[%lld, 1], f32>\n}\n",
             (long long)rows, (long long)rows, (long long)rows, (long long)rows, (long long)rows);
    kiln_model *m[2] = {compile(ctx[0], text, st), compile(ctx[1], text, st)};
    int64_t shape[2] = {rows, 256};
    kiln_tensor *in = tensor(2, shape, 3);
    double t[2];
    time_threads(m, &in, 1, reps, t, st);
    printf("  %8lld %10lld %12.0f %12.0f %7.2fx\n", (long long)rows, (long long)rows * 256, t[0],
           t[1], t[0] / t[1]);
    kiln_tensor_free(in);
    for (int k = 0; k < 2; k++) kiln_model_free(m[k]);
  }
  printf("\n");
  for (int k = 0; k < 2; k++) kiln_context_free(ctx[k]);
  kiln_status_free(st);
}

int main(int argc, char **argv) {
  bool quick = false, do_sweep = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--sweep") == 0) do_sweep = true;
    else {
      fprintf(stderr, "usage: bench_overhead [--quick] [--sweep]\n");
      return 2;
    }
  }
  overhead(quick ? 21 : 201, quick ? 200 : 2000, false);
  overhead(quick ? 21 : 201, quick ? 200 : 2000, true);
  threads(quick ? 5 : 41);
  if (do_sweep) sweep(quick ? 5 : 41);
  return 0;
}
