/* movement.c (bench_movement) - the memory-bound indexing ops through the
 * public API, one thread, beside the triad (bench_util.h) in the same run
 * (issue 17: >= 0.7x of the triad's bandwidth on large tensors):
 *
 *  - cumsum along the last axis and along axis 0 of [4096, 4096] f32;
 *  - gather_nd of 65536 random rows of [65536, 256] f32, beside the same
 *    rows copied by a C loop of memcpy (row "gather_nd C": what this machine
 *    reaches for random 1 KiB rows);
 *  - scatter of [4M] updates to every fourth place of [16M] f32, in order
 *    (random places would measure DRAM latency, one line per update, not
 *    the op);
 *  - max_pool2d and avg_pool2d (count_boundary) 3x3, stride 1, padding 1
 *    over [1, 1024, 1024, 16] NHWC.
 *
 * Effective GB/s = the bytes each op must read and write once (operands and
 * result; scatter: the input copied, the updates and indices read) / time;
 * the triad counts 12 bytes per element (STREAM's convention). Each round
 * times every case once, then the C gather, then the triad; min / median /
 * max over rounds
 * (GB/s: min = the slowest run). Each op's output is spot-checked against a
 * C computation first.
 *
 * usage: bench_movement [--runs N] [--tsv]; --tsv: R <case> <who> 1 GB/s
 * <runs> <min> <median> <max>. Exit status: 0, or 1 when setup or a check
 * failed. */
#include <kiln/kiln.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define N (16 * 1024 * 1024) /* elements of the big arrays */

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_movement: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

typedef struct bcase {
  const char *id, *mlir;
  int nin;
  kiln_tensor *in[3], *out;
  double bytes;
  kiln_model *m;
  double *gbs;
} bcase;

static kiln_model *compile(kiln_context *ctx, const char *mlir, kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(mlir, strlen(mlir), "bench", st);
  if (!g) die("parse", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  if (!m) die("compile", st);
  kiln_graph_free(g);
  return m;
}

static kiln_tensor *tensor(kiln_dtype dt, int rank, const int64_t *shape, kiln_status *st) {
  kiln_tensor *t = kiln_tensor_new(dt, rank, shape, st);
  if (!t) die("tensor", st);
  return t;
}

static float *f32(kiln_tensor *t) { return kiln_tensor_data(t); }

/* Spot checks of each case's output against C. */
static void check(const bcase *c) {
  const float *y = f32(c->out), *x = f32(c->in[0]);
  bool ok = true;
  if (!strcmp(c->id, "cumsum_last") || !strcmp(c->id, "cumsum_first")) {
    bool last = !strcmp(c->id, "cumsum_last");
    for (int r = 0; r < 4096 && ok; r += 511) { /* line r's last element */
      double s = 0;
      for (int i = 0; i < 4096; i++) s += x[last ? r * 4096 + i : i * 4096 + r];
      float got = y[last ? r * 4096 + 4095 : 4095 * 4096 + r];
      ok = fabs(got - s) <= 1e-2 * (1 + fabs(s));
    }
  } else if (!strcmp(c->id, "gather_nd")) {
    const int64_t *ix = kiln_tensor_data(c->in[1]);
    for (int r = 0; r < 65536 && ok; r += 4099)
      ok = !memcmp(y + (size_t)r * 256, x + (size_t)ix[r] * 256, 256 * sizeof *y);
  } else if (!strcmp(c->id, "scatter")) {
    const float *u = f32(c->in[1]);
    const int64_t *ix = kiln_tensor_data(c->in[2]);
    for (int i = 0; i < N / 4 && ok; i += 9973) ok = y[ix[i]] == u[i];
    ok = ok && y[1] == x[1]; /* the other places keep the input (below) */
  } else { /* max_pool2d / avg_pool2d: interior windows */
    bool avg = !strcmp(c->id, "avg_pool2d");
    for (int p = 1025; p < 1024 * 1023 && ok; p += 70001) {
      int h = p / 1024, w = p % 1024;
      if (w == 0 || w == 1023) continue;
      for (int ch = 0; ch < 16 && ok; ch++) {
        float mx = -INFINITY;
        double sum = 0;
        for (int dh = -1; dh <= 1; dh++)
          for (int dw = -1; dw <= 1; dw++) {
            float v = x[((h + dh) * 1024 + (w + dw)) * 16 + ch];
            mx = fmaxf(mx, v);
            sum += v;
          }
        ok = avg ? fabs(y[p * 16 + ch] - sum / 9) <= 1e-5 : y[p * 16 + ch] == mx;
      }
    }
  }
  if (!ok) {
    fprintf(stderr, "bench_movement: %s: kiln's output differs from C's\n", c->id);
    exit(1);
  }
}

static void report(const char *id, const char *who, double *gbs, int n, bool tsv) {
  double s[3];
  bench_stats(gbs, n, s);
  if (tsv) printf("R\t%s\t%s\t1\tGB/s\t%d\t%.3f\t%.3f\t%.3f\n", id, who, n, s[0], s[1], s[2]);
  else printf("%-14s %-6s %4d runs %8.2f %8.2f %8.2f GB/s (min median max)\n", id, who, n, s[0],
              s[1], s[2]);
}

int main(int argc, char **argv) {
  int runs = 15;
  bool tsv = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tsv")) tsv = true;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_movement [--runs N] [--tsv]\n");
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx || kiln_context_set_num_threads(ctx, 1, st) != 0) die("context", st);
  int64_t sq[2] = {4096, 4096}, rows[2] = {65536, 256}, idx[2] = {65536, 1}, flat = N,
          quarter = N / 4, img[4] = {1, 1024, 1024, 16};
  bcase cs[] = {
      {"cumsum_last",
       "mo.graph @c(%x: !mo.tensor<[4096, 4096], f32>) -> (!mo.tensor<[4096, 4096], f32>) {\n"
       "  %y = mo.cumsum(%x) {axis = 1} : !mo.tensor<[4096, 4096], f32>\n"
       "  mo.output %y : !mo.tensor<[4096, 4096], f32>\n}\n",
       1, {tensor(KILN_FLOAT32, 2, sq, st)}, tensor(KILN_FLOAT32, 2, sq, st), 8.0 * N, 0, 0},
      {"cumsum_first",
       "mo.graph @c(%x: !mo.tensor<[4096, 4096], f32>) -> (!mo.tensor<[4096, 4096], f32>) {\n"
       "  %y = mo.cumsum(%x) {axis = 0} : !mo.tensor<[4096, 4096], f32>\n"
       "  mo.output %y : !mo.tensor<[4096, 4096], f32>\n}\n",
       1, {tensor(KILN_FLOAT32, 2, sq, st)}, tensor(KILN_FLOAT32, 2, sq, st), 8.0 * N, 0, 0},
      {"gather_nd",
       "mo.graph @g(%x: !mo.tensor<[65536, 256], f32>, %i: !mo.tensor<[65536, 1], si64>) -> "
       "(!mo.tensor<[65536, 256], f32>) {\n"
       "  %y = mo.gather_nd(%x, %i) : !mo.tensor<[65536, 256], f32>\n"
       "  mo.output %y : !mo.tensor<[65536, 256], f32>\n}\n",
       2, {tensor(KILN_FLOAT32, 2, rows, st), tensor(KILN_INT64, 2, idx, st)},
       tensor(KILN_FLOAT32, 2, rows, st), 8.0 * N + 8.0 * 65536, 0, 0},
      {"scatter",
       "mo.graph @s(%x: !mo.tensor<[16777216], f32>, %u: !mo.tensor<[4194304], f32>, "
       "%i: !mo.tensor<[4194304], si64>) -> (!mo.tensor<[16777216], f32>) {\n"
       "  %y = mo.scatter(%x, %u, %i) {axis = 0} : !mo.tensor<[16777216], f32>\n"
       "  mo.output %y : !mo.tensor<[16777216], f32>\n}\n",
       3,
       {tensor(KILN_FLOAT32, 1, &flat, st), tensor(KILN_FLOAT32, 1, &quarter, st),
        tensor(KILN_INT64, 1, &quarter, st)},
       tensor(KILN_FLOAT32, 1, &flat, st), 8.0 * N + 12.0 * (N / 4), 0, 0},
      {"max_pool2d",
       "mo.graph @p(%x: !mo.tensor<[1, 1024, 1024, 16], f32>) -> "
       "(!mo.tensor<[1, 1024, 1024, 16], f32>) {\n"
       "  %y = mo.max_pool2d(%x) {kernel_size = [3, 3], padding = [1]} : "
       "!mo.tensor<[1, 1024, 1024, 16], f32>\n"
       "  mo.output %y : !mo.tensor<[1, 1024, 1024, 16], f32>\n}\n",
       1, {tensor(KILN_FLOAT32, 4, img, st)}, tensor(KILN_FLOAT32, 4, img, st), 8.0 * N, 0, 0},
      {"avg_pool2d",
       "mo.graph @p(%x: !mo.tensor<[1, 1024, 1024, 16], f32>) -> "
       "(!mo.tensor<[1, 1024, 1024, 16], f32>) {\n"
       "  %y = mo.avg_pool2d(%x) {kernel_size = [3, 3], padding = [1], count_boundary = true} : "
       "!mo.tensor<[1, 1024, 1024, 16], f32>\n"
       "  mo.output %y : !mo.tensor<[1, 1024, 1024, 16], f32>\n}\n",
       1, {tensor(KILN_FLOAT32, 4, img, st)}, tensor(KILN_FLOAT32, 4, img, st), 8.0 * N, 0, 0},
  };
  int nc = (int)(sizeof cs / sizeof cs[0]);
  for (int c = 0; c < nc; c++) {
    for (int k = 0; k < cs[c].nin; k++) {
      kiln_tensor *t = cs[c].in[k];
      size_t n = kiln_tensor_nbytes(t);
      if (kiln_tensor_dtype(t) == KILN_FLOAT32) {
        float *p = kiln_tensor_data(t);
        for (size_t e = 0; e < n / 4; e++) p[e] = (float)(next() % 2001) / 1000.0f - 1.0f;
      }
    }
    if (!strcmp(cs[c].id, "gather_nd")) {
      int64_t *p = kiln_tensor_data(cs[c].in[1]);
      for (int r = 0; r < 65536; r++) p[r] = (int64_t)(next() % 65536);
    }
    if (!strcmp(cs[c].id, "scatter")) { /* every fourth place, in order */
      int64_t *p = kiln_tensor_data(cs[c].in[2]);
      for (int64_t i = 0; i < N / 4; i++) p[i] = 4 * i;
    }
    cs[c].m = compile(ctx, cs[c].mlir, st);
    if (!(cs[c].gbs = malloc((size_t)runs * sizeof(double)))) die("out of memory", NULL);
    if (kiln_model_execute(cs[c].m, cs[c].in, cs[c].nin, &cs[c].out, 1, st) != 0)
      die(cs[c].id, st);
    check(&cs[c]);
  }
  float *ta = malloc((size_t)N * 4), *tb = malloc((size_t)N * 4), *tc = malloc((size_t)N * 4);
  double *tgbs = malloc((size_t)runs * sizeof(double));
  double *ggbs = malloc((size_t)runs * sizeof(double));
  float *gy = malloc((size_t)N * 4);
  if (!ta || !tb || !tc || !tgbs || !ggbs || !gy) die("out of memory", NULL);
  const bcase *gc = NULL;
  for (int c = 0; c < nc; c++)
    if (!strcmp(cs[c].id, "gather_nd")) gc = &cs[c];
  const float *gx = f32(gc->in[0]);
  const int64_t *gix = kiln_tensor_data(gc->in[1]);
  for (int64_t i = 0; i < N; i++) ta[i] = 0, tb[i] = (float)i, tc[i] = 1;
  for (int r = 0; r < runs; r++) {
    for (int c = 0; c < nc; c++) {
      double t0 = bench_now_s();
      if (kiln_model_execute(cs[c].m, cs[c].in, cs[c].nin, &cs[c].out, 1, st) != 0)
        die(cs[c].id, st);
      cs[c].gbs[r] = cs[c].bytes / (bench_now_s() - t0) / 1e9;
    }
    double t0 = bench_now_s();
    for (int i = 0; i < 65536; i++)
      memcpy(gy + (size_t)i * 256, gx + (size_t)gix[i] * 256, 256 * sizeof *gy);
    ggbs[r] = gc->bytes / (bench_now_s() - t0) / 1e9;
    t0 = bench_now_s();
    bench_triad(ta, tb, tc, 3.0f, N);
    tgbs[r] = 12.0 * N / (bench_now_s() - t0) / 1e9;
  }
  if (tsv) printf("M\tthreads\t1\nM\telements\t%d\n", N);
  for (int c = 0; c < nc; c++) report(cs[c].id, "kiln", cs[c].gbs, runs, tsv);
  if (memcmp(gy, f32(gc->out), (size_t)N * 4)) {
    fprintf(stderr, "bench_movement: gather_nd: C's rows differ from kiln's\n");
    return 1;
  }
  report("gather_nd", "C", ggbs, runs, tsv);
  report("triad", "triad", tgbs, runs, tsv);
  for (int c = 0; c < nc; c++) {
    for (int k = 0; k < cs[c].nin; k++) kiln_tensor_free(cs[c].in[k]);
    kiln_tensor_free(cs[c].out);
    kiln_model_free(cs[c].m);
    free(cs[c].gbs);
  }
  free(ta), free(tb), free(tc), free(tgbs), free(ggbs), free(gy);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
