/* observe.c (bench_observe) - what watching an execute costs (issue 23:
 * "overhead with tracing off: none measurable; with it on, state it").
 *
 * Two graphs: a chain of 4 elementwise kernels on 64 f32 elements (fusion
 * off, so each is a kernel call: the overhead per kernel shows), and a
 * 2-GEMM MLP at batch 64 (a realistic small model). Each is executed in
 * three modes on one model: nothing watching, a trace open
 * (kiln_context_set_trace, to a temporary file), and a profile on
 * (kiln_model_set_profile). The modes alternate in batches of back-to-back
 * executes so that noise on a shared machine hits each alike; each sample
 * is a batch's mean, and the table shows the median per mode, the
 * difference to "off" per execute and per kernel call (a traced GEMM split
 * over the pool also writes an event per part, so it costs more).
 *
 * usage: bench_observe [--quick] */
#define _GNU_SOURCE
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_observe: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

static const char chain_text[] =
    "mo.graph @chain(%x: !mo.tensor<[64], f32>) -> (!mo.tensor<[64], f32>) {\n"
    "  %a = mo.exp(%x) : !mo.tensor<[64], f32>\n"
    "  %b = mo.tanh(%a) : !mo.tensor<[64], f32>\n"
    "  %c = mo.relu(%b) : !mo.tensor<[64], f32>\n"
    "  %d = mo.sqrt(%c) : !mo.tensor<[64], f32>\n"
    "  mo.output %d : !mo.tensor<[64], f32>\n}\n";

static const char mlp_text[] =
    "mo.graph @mlp(%x: !mo.tensor<[64, 256], f32>, %w1: !mo.tensor<[256, 256], f32>, "
    "%w2: !mo.tensor<[256, 64], f32>) -> (!mo.tensor<[64, 64], f32>) {\n"
    "  %h = mo.matmul(%x, %w1) : !mo.tensor<[64, 256], f32>\n"
    "  %r = mo.relu(%h) : !mo.tensor<[64, 256], f32>\n"
    "  %y = mo.matmul(%r, %w2) : !mo.tensor<[64, 64], f32>\n"
    "  mo.output %y : !mo.tensor<[64, 64], f32>\n}\n";

enum { MODES = 3 };
static const char *const mode_names[MODES] = {"off", "trace on", "profile on"};

/* Mean ns per execute of a batch of n executes of m. */
static double batch(kiln_model *m, kiln_tensor **in, int nin, kiln_tensor *out, int n,
                    kiln_status *st) {
  double t0 = bench_now_s();
  for (int i = 0; i < n; i++)
    if (kiln_model_execute(m, in, nin, &out, 1, st) < 0) die("execute", st);
  return (bench_now_s() - t0) * 1e9 / n;
}

static void set_mode(kiln_context *ctx, kiln_model *m, int mode, const char *trace,
                     kiln_status *st) {
  if (kiln_context_set_trace(ctx, mode == 1 ? trace : NULL, st) < 0) die("trace", st);
  if (kiln_model_set_profile(m, mode == 2, st) < 0) die("profile", st);
}

static void run_case(const char *name, const char *text, int nin, const int64_t shapes[][2],
                     const int *ranks, int kernels, int rounds, int per_batch) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), name, st);
  kiln_model *m = g ? kiln_model_compile(ctx, g, st) : NULL;
  if (!m) die("compile", st);
  kiln_tensor *in[3];
  for (int i = 0; i < nin; i++) {
    if (!(in[i] = kiln_tensor_new(KILN_FLOAT32, ranks[i], shapes[i], st))) die("tensor", st);
    float *d = kiln_tensor_data(in[i]);
    for (int64_t k = 0; k < kiln_tensor_numel(in[i]); k++) d[k] = 0.01f * (float)(k % 13);
  }
  kiln_tensor *out = NULL;
  if (kiln_model_execute(m, in, nin, &out, 1, st) < 0) die("execute", st);
  char trace[] = "/tmp/kiln_bench_trace_XXXXXX";
  int fd = mkstemp(trace);
  if (fd < 0) die("mkstemp", NULL);
  close(fd);
  double *samples[MODES];
  for (int k = 0; k < MODES; k++) samples[k] = calloc((size_t)rounds, sizeof(double));
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < MODES; k++) {
      int mode = (k + r) % MODES; /* rotate which mode goes first */
      set_mode(ctx, m, mode, trace, st);
      batch(m, in, nin, out, per_batch / 10 + 1, st); /* settle */
      samples[mode][r] = batch(m, in, nin, out, per_batch, st);
    }
  set_mode(ctx, m, 0, trace, st);
  double med[MODES], stats[MODES][3]; /* min, median, max */
  for (int k = 0; k < MODES; k++) {
    bench_stats(samples[k], rounds, stats[k]);
    med[k] = stats[k][1];
  }
  printf("%-22s %8d kernel%s per execute\n", name, kernels, kernels == 1 ? "" : "s");
  for (int k = 0; k < MODES; k++)
    printf("  %-12s median %10.0f ns/execute (min %.0f, max %.0f)  %+8.0f ns/execute  "
           "%+6.0f ns/kernel\n",
           mode_names[k], med[k], stats[k][0], stats[k][2], med[k] - med[0],
           (med[k] - med[0]) / kernels);
  for (int k = 0; k < MODES; k++) free(samples[k]);
  unlink(trace);
  kiln_tensor_free(out);
  for (int i = 0; i < nin; i++) kiln_tensor_free(in[i]);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

int main(int argc, char **argv) {
  bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  setenv("KILN_FUSE", "0", 1); /* the chain's 4 ops stay 4 kernel calls */
  setenv("KILN_CACHE", "off", 0);
  int rounds = quick ? 5 : 21;
  printf("bench_observe: medians of %d alternating batches per mode (trace to a file in /tmp)\n",
         rounds);
  run_case("chain (4 x 64 f32)", chain_text, 1, (const int64_t[][2]){{64, 0}}, (int[]){1}, 4,
           rounds, quick ? 2000 : 20000);
  run_case("mlp (64x256, 2 GEMMs)", mlp_text, 3,
           (const int64_t[][2]){{64, 256}, {256, 256}, {256, 64}}, (int[]){2, 2, 2}, 3, rounds,
           quick ? 200 : 2000);
  return 0;
}
