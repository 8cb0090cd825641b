/* quant.c (bench_quant) - mo.qmatmul as a decode step (GEMV, M = 1) from
 * GGUF blocks, through the public API, beside the triad (bench_util.h) in
 * the same run (issue 21: >= 0.8x of the triad's bandwidth, counted on the
 * weight bytes read):
 *
 *  - q4_0, q4_k, q8_0, q5_k, q6_k weights of N x K = 4096 x 4096 and
 *    4096 x 14336 (a projection and an FFN down projection of an 8B-class
 *    model).
 *  - with --m M > 1 (a prefill of M tokens), each case also runs the same
 *    product as mo.dequantize then an f32 mo.matmul with the weight
 *    transposed ("deq+gemm"), in the same round, so the two can be
 *    compared per M (--no-deq leaves it out).
 *  - with --ggml DIR (the directory of llama.cpp's libggml-base.so and
 *    libggml-cpu.so: bench/run.sh takes them from the bench venv's
 *    llama-cpp-python), each case also runs ggml's own mul_mat on the same
 *    weight bytes and lhs (ggml_anchor.h), on as many threads as kiln: the
 *    weight in a plain CPU buffer ("ggml") and, where this CPU has kernels
 *    for the type, repacked as llama.cpp loads weights ("ggml_repack").
 *    Case by case, kiln and the two run back to back, the order rotating
 *    every round. ggml's results are checked like kiln's: it quantizes the
 *    lhs to the same q8_0 / q8_K blocks, so the work is equal. With
 *    --threads > 1, OMP_WAIT_POLICY=passive unless set (see main).
 *
 * GB/s = the weight's bytes / time (the activations and results are a few
 * KB). The weight bytes are random with the f16 scales kept small, so sums
 * stay finite; the output is spot-checked against a C computation (the
 * lhs quantized and the blocks dotted by ir/qblock.h, summed in double)
 * first, on every row. One thread by default (--threads N: the pool's
 * size; the triad stays one thread). Each round times every case once,
 * then the triad; min / median / max over rounds (GB/s: min = the slowest
 * run).
 *
 * usage: bench_quant [--runs N] [--threads N] [--m M] [--no-deq] [--ggml DIR] [--tsv];
 * --tsv: R <case> <who> <threads> GB/s <runs> <min> <median> <max>, and
 * M ggml <version> or M ggml_missing <reason> with --ggml. Exit status: 0
 * (also when ggml cannot be loaded: kiln's rows are still measured), or 1
 * when setup or a check failed. */
#include <kiln/kiln.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/qblock.h"
#include "bench_util.h"
#include "ggml_anchor.h"

#define TRIAD_N (16 * 1024 * 1024)

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_quant: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

typedef struct qcase {
  char id[48];
  int enc;
  int64_t m_rows, n, k, bytes;
  int runs;
  bool with_deq; /* M > 1 and no --no-deq */
  kiln_model *m, *deq; /* deq: dequantize + matmul (M > 1 only) */
  kiln_tensor *in[2], *out, *deq_out;
  /* --ggml: ggml's mul_mat on the same bytes, plain [0] and repacked [1] */
  anchor_ggml_gemv *ggml[2];
  float *ggml_out[2];
  double *gbs, *deq_gbs, *ggml_gbs[2];
} qcase;

static void report(const char *id, const char *who, int threads, double *gbs, int n, bool tsv) {
  double s[3];
  bench_stats(gbs, n, s);
  if (tsv)
    printf("R\t%s\t%s\t%d\tGB/s\t%d\t%.3f\t%.3f\t%.3f\n", id, who, threads, n, s[0], s[1], s[2]);
  else
    printf("%-20s %-8s %2dT %4d runs %8.2f %8.2f %8.2f GB/s (min median max)\n", id, who, threads,
           n, s[0], s[1], s[2]);
}

static kiln_model *compile_text(const char *text, const char *id, kiln_context *ctx,
                                kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), id, st);
  kiln_model *m = g ? kiln_model_compile(ctx, g, st) : NULL;
  if (!m) die(id, st);
  kiln_graph_free(g);
  return m;
}

static void setup(qcase *c, kiln_context *ctx, kiln_status *st) {
  int64_t e = QB_ELEMS(c->enc), bb = QB_BYTES(c->enc);
  long long M = c->m_rows, N = c->n, K = c->k, B;
  c->bytes = B = c->k / e * bb;
  const char *enc = qb_name((qb_encoding)c->enc);
  char text[2048];
  snprintf(text, sizeof text,
           "mo.graph @q(%%a: !mo.tensor<[%lld, %lld], f32>, %%w: !mo.tensor<[%lld, %lld], ui8>) -> "
           "(!mo.tensor<[%lld, %lld], f32>) {\n"
           "  %%y = mo.qmatmul(%%a, %%w) {encoding = \"%s\"} : (!mo.tensor<[%lld, %lld], f32>, "
           "!mo.tensor<[%lld, %lld], ui8>) -> !mo.tensor<[%lld, %lld], f32>\n"
           "  mo.output %%y : !mo.tensor<[%lld, %lld], f32>\n}\n",
           M, K, N, B, M, N, enc, M, K, N, B, M, N, M, N);
  c->m = compile_text(text, c->id, ctx, st);
  if (c->with_deq) {
    snprintf(text, sizeof text,
             "mo.graph @d(%%a: !mo.tensor<[%lld, %lld], f32>, %%w: !mo.tensor<[%lld, %lld], ui8>)"
             " -> (!mo.tensor<[%lld, %lld], f32>) {\n"
             "  %%f = mo.dequantize(%%w) {encoding = \"%s\"} : (!mo.tensor<[%lld, %lld], ui8>) -> "
             "!mo.tensor<[%lld, %lld], f32>\n"
             "  %%t = mo.transpose(%%f) {axis_1 = 0, axis_2 = 1} : (!mo.tensor<[%lld, %lld], f32>) "
             "-> !mo.tensor<[%lld, %lld], f32>\n"
             "  %%y = mo.matmul(%%a, %%t) : (!mo.tensor<[%lld, %lld], f32>, "
             "!mo.tensor<[%lld, %lld], f32>) -> !mo.tensor<[%lld, %lld], f32>\n"
             "  mo.output %%y : !mo.tensor<[%lld, %lld], f32>\n}\n",
             M, K, N, B, M, N, enc, N, B, N, K, N, K, K, N, M, K, K, N, M, N, M, N);
    c->deq = compile_text(text, c->id, ctx, st);
  }
  int64_t as[2] = {c->m_rows, c->k}, ws[2] = {c->n, c->bytes};
  if (!(c->in[0] = kiln_tensor_new(KILN_FLOAT32, 2, as, st)) ||
      !(c->in[1] = kiln_tensor_new(KILN_UINT8, 2, ws, st)))
    die("tensors", st);
  float *a = kiln_tensor_data(c->in[0]);
  for (int64_t i = 0; i < c->m_rows * c->k; i++) a[i] = (float)(next() % 2001) / 1000.0f - 1.0f;
  uint8_t *w = kiln_tensor_data(c->in[1]);
  for (int64_t i = 0; i < c->n * c->bytes; i++) w[i] = (uint8_t)(next() % 41);
}

static const char *const ggml_names[2] = {"ggml", "ggml_repack"};

/* The lhs elements whose scaled value x / d lies within 1e-4 of a rounding
 * tie (k + 1/2): there a quantizer that computes 1 / d another way (ggml's
 * vector code multiplies by 127 / amax) may round the other way, one step
 * of the block's scale. tie[i] = 1 for those, 0 otherwise. */
static void lhs_ties(qb_encoding enc, const float *a, int64_t k, uint8_t *tie) {
  int64_t e = QB_ELEMS(enc);
  for (int64_t b = 0; b < k; b += e) {
    float amax = 0, xmax = 0;
    for (int64_t i = b; i < b + e; i++)
      if (fabsf(a[i]) > amax) amax = fabsf(a[i]), xmax = a[i];
    float scale = amax == 0 ? 0 : e == 32 ? 1.0f / (amax / 127.0f) : -127.0f / xmax;
    for (int64_t i = b; i < b + e; i++) {
      double v = fabs((double)(a[i] * scale));
      tie[i] = fabs(v - floor(v) - 0.5) < 1e-4;
    }
  }
}

/* Eight results of each row against qblock.h's reference (the lhs
 * quantized, the block terms summed in double), within the rounding of f32
 * sums; with deq+gemm, its results against qmatmul's within a few 1e-3 of
 * the terms' magnitude (it multiplies by the lhs unquantized). ggml's
 * within the same rounding plus, for each lhs element on a rounding tie
 * (lhs_ties), one quantization step times its weight: equal work, up to
 * how a tie is broken. */
static void check_result(const qcase *c, const char *who, const float *y, int64_t row,
                         int64_t n, double s, double tol) {
  float v = y[row * c->n + n];
  if (fabs(v - s) > tol) {
    fprintf(stderr, "bench_quant: %s: %s y[%lld, %lld] = %g, C %g (tolerance %g)\n", c->id, who,
            (long long)row, (long long)n, (double)v, s, tol);
    exit(1);
  }
}

static void check(const qcase *c) {
  const float *y = kiln_tensor_data(c->out);
  const float *yd = c->deq_out ? kiln_tensor_data(c->deq_out) : NULL;
  const uint8_t *w = kiln_tensor_data(c->in[1]);
  qb_encoding enc = (qb_encoding)c->enc;
  int64_t e = QB_ELEMS(enc), bb = QB_BYTES(enc), nb = c->k / e;
  int8_t *q = malloc((size_t)c->k);
  int16_t *bs = malloc(sizeof *bs * (size_t)(c->k / 16));
  float *da = malloc(sizeof *da * (size_t)nb), wf[256];
  uint8_t *tie = malloc((size_t)c->k);
  if (!q || !bs || !da || !tie) die("out of memory", NULL);
  for (int64_t row = 0; row < c->m_rows; row++) {
    const float *a = (const float *)kiln_tensor_data(c->in[0]) + row * c->k;
    for (int64_t b = 0; b < nb; b++)
      da[b] = qb_quantize_lhs(enc, a + b * e, q + b * e, bs + b * e / 16);
    lhs_ties(enc, a, c->k, tie);
    for (int t = 0; t < 8; t++) {
      int64_t n = (int64_t)(next() % (uint64_t)c->n);
      double s = 0, mag = 0, slack = 0;
      for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + n * c->bytes + b * bb;
        float term = qb_dot(enc, blk, q + b * e, bs + b * e / 16, da[b]);
        s += term;
        mag += fabs(term);
        qb_decode(enc, blk, wf);
        for (int64_t i = 0; i < e; i++)
          if (tie[b * e + i]) slack += fabs((double)wf[i] * da[b]);
      }
      check_result(c, "kiln", y, row, n, s, 1e-5 * mag + 1e-6);
      if (yd) check_result(c, "deq+gemm", yd, row, n, s, 2e-2 * mag + 1e-6);
      for (int v = 0; v < 2; v++)
        if (c->ggml_out[v])
          check_result(c, ggml_names[v], c->ggml_out[v], row, n, s,
                       1e-5 * mag + 1.01 * slack + 1e-6);
    }
  }
  free(q), free(bs), free(da), free(tie);
}

static double time_execute(kiln_model *m, kiln_tensor **in, kiln_tensor **out, const char *id,
                           kiln_status *st) {
  double t0 = bench_now_s();
  if (kiln_model_execute(m, in, 2, out, 1, st) != 0) die(id, st);
  return bench_now_s() - t0;
}

/* ggml's twins of case c: the same weight bytes, plain and repacked, run
 * once (check compares their results too). A twin ggml cannot make (no
 * repacked kernel for the type on this CPU) is left out with a note. */
static void setup_ggml(qcase *c, anchor_ggml *ggml, int threads, bool tsv) {
  for (int v = 0; v < 2; v++) {
    char err[512];
    double s;
    c->ggml[v] = anchor_ggml_gemv_new(ggml, c->enc, c->m_rows, c->n, c->k,
                                      kiln_tensor_data(c->in[1]), v == 1, threads, err, sizeof err);
    if (!c->ggml[v]) {
      fprintf(stderr, "bench_quant: %s: no %s column: %s\n", c->id, ggml_names[v], err);
      if (tsv) printf("E\t%s\t%s\t%d\t%s\n", c->id, ggml_names[v], threads, err);
      continue;
    }
    if (!(c->ggml_out[v] = malloc(sizeof(float) * (size_t)(c->m_rows * c->n))) ||
        !(c->ggml_gbs[v] = malloc(sizeof(double) * (size_t)c->runs)))
      die("out of memory", NULL);
    if (anchor_ggml_gemv_run(c->ggml[v], kiln_tensor_data(c->in[0]), c->ggml_out[v], &s) != 0)
      die(c->id, NULL);
  }
}

static double time_ggml(qcase *c, int v) {
  double s;
  if (anchor_ggml_gemv_run(c->ggml[v], kiln_tensor_data(c->in[0]), c->ggml_out[v], &s) != 0)
    die(c->id, NULL);
  return s;
}

int main(int argc, char **argv) {
  int runs = 20, threads = 1, m_rows = 1;
  bool tsv = false, no_deq = false;
  const char *ggml_dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tsv")) tsv = true;
    else if (!strcmp(argv[i], "--no-deq")) no_deq = true;
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--m") && i + 1 < argc) m_rows = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ggml") && i + 1 < argc) ggml_dir = argv[++i];
    else {
      fprintf(stderr,
              "usage: bench_quant [--runs N] [--threads N] [--m M] [--no-deq] [--ggml DIR] "
              "[--tsv]\n");
      return 1;
    }
  }
  if (runs < 1 || threads < 1 || m_rows < 1) die("--runs, --threads and --m must be >= 1", NULL);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx || kiln_context_set_num_threads(ctx, threads, st) != 0) die("context", st);
  anchor_ggml *ggml = NULL;
  char err[512];
  /* ggml's CPU backend runs its threads with OpenMP; libgomp's workers spin
   * after each parallel region by default, taking the cores from kiln's
   * pool in the next case (and kiln's spinning workers from them). Read
   * once when libgomp loads, so before the dlopen; a user's value stays. */
  if (ggml_dir && threads > 1) setenv("OMP_WAIT_POLICY", "passive", 0);
  if (ggml_dir && !(ggml = anchor_ggml_open(ggml_dir, err, sizeof err))) {
    fprintf(stderr, "bench_quant: no ggml column: %s\n", err);
    if (tsv) printf("M\tggml_missing\t%s\n", err);
  } else if (ggml && tsv) {
    printf("M\tggml\t%s\n", anchor_ggml_version(ggml));
  }
  static const int encs[] = {QB_Q4_0, QB_Q4_K, QB_Q8_0, QB_Q5_K, QB_Q6_K};
  static const int64_t ks[] = {4096, 14336};
  enum { ENCS = sizeof encs / sizeof encs[0] };
  qcase cs[2 * ENCS];
  int nc = 0;
  for (int e = 0; e < ENCS; e++)
    for (int s = 0; s < 2; s++) {
      qcase *c = &cs[nc++];
      memset(c, 0, sizeof *c);
      c->enc = encs[e];
      c->m_rows = m_rows;
      c->with_deq = m_rows > 1 && !no_deq;
      c->n = 4096;
      c->k = ks[s];
      if (m_rows > 1)
        snprintf(c->id, sizeof c->id, "%s_%dx4096x%lld", qb_name((qb_encoding)c->enc), m_rows,
                 (long long)c->k);
      else
        snprintf(c->id, sizeof c->id, "%s_4096x%lld", qb_name((qb_encoding)c->enc),
                 (long long)c->k);
      setup(c, ctx, st);
      if (!(c->gbs = malloc((size_t)runs * sizeof(double))) ||
          !(c->deq_gbs = malloc((size_t)runs * sizeof(double))))
        die("out of memory", NULL);
      c->runs = runs;
      if (kiln_model_execute(c->m, c->in, 2, &c->out, 1, st) != 0) die(c->id, st);
      if (c->deq && kiln_model_execute(c->deq, c->in, 2, &c->deq_out, 1, st) != 0)
        die(c->id, st);
      if (ggml) setup_ggml(c, ggml, threads, tsv);
      check(c);
    }
  float *ta = malloc((size_t)TRIAD_N * 4), *tb = malloc((size_t)TRIAD_N * 4),
        *tc = malloc((size_t)TRIAD_N * 4);
  double *tgbs = malloc((size_t)runs * sizeof(double));
  if (!ta || !tb || !tc || !tgbs) die("out of memory", NULL);
  for (int64_t i = 0; i < TRIAD_N; i++) tb[i] = 1.0f, tc[i] = 2.0f, ta[i] = 0;
  for (int r = 0; r < runs; r++) {
    for (int c = 0; c < nc; c++) {
      double wb = (double)(cs[c].n * cs[c].bytes);
      for (int j = 0; j < 3; j++) { /* kiln, ggml, ggml_repack, rotated by round */
        int who = (j + r) % 3;
        if (who == 0)
          cs[c].gbs[r] = wb / time_execute(cs[c].m, cs[c].in, &cs[c].out, cs[c].id, st) / 1e9;
        else if (cs[c].ggml[who - 1])
          cs[c].ggml_gbs[who - 1][r] = wb / time_ggml(&cs[c], who - 1) / 1e9;
      }
      if (cs[c].deq)
        cs[c].deq_gbs[r] =
            wb / time_execute(cs[c].deq, cs[c].in, &cs[c].deq_out, cs[c].id, st) / 1e9;
    }
    double t0 = bench_now_s();
    bench_triad(ta, tb, tc, 3.0f, TRIAD_N);
    tgbs[r] = 12.0 * TRIAD_N / (bench_now_s() - t0) / 1e9;
  }
  if (tsv) printf("M\tthreads\t%d\n", threads);
  for (int c = 0; c < nc; c++) {
    report(cs[c].id, "kiln", threads, cs[c].gbs, runs, tsv);
    if (cs[c].deq) report(cs[c].id, "deq+gemm", threads, cs[c].deq_gbs, runs, tsv);
    for (int v = 0; v < 2; v++)
      if (cs[c].ggml[v]) report(cs[c].id, ggml_names[v], threads, cs[c].ggml_gbs[v], runs, tsv);
  }
  report("triad", "triad", 1, tgbs, runs, tsv);
  for (int c = 0; c < nc; c++) {
    kiln_tensor_free(cs[c].in[0]);
    kiln_tensor_free(cs[c].in[1]);
    kiln_tensor_free(cs[c].out);
    kiln_tensor_free(cs[c].deq_out);
    kiln_model_free(cs[c].m);
    kiln_model_free(cs[c].deq);
    free(cs[c].gbs);
    free(cs[c].deq_gbs);
    for (int v = 0; v < 2; v++) {
      free(cs[c].ggml_gbs[v]);
      free(cs[c].ggml_out[v]);
      anchor_ggml_gemv_free(cs[c].ggml[v]);
    }
  }
  anchor_ggml_close(ggml);
  free(ta), free(tb), free(tc), free(tgbs);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
