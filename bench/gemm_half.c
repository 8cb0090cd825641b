/* gemm_half.c (bench_gemm_half) - bf16 GEMM GFLOP/s, bf16 x bf16 -> f32, one
 * thread: kiln (a graph through the public API, static shapes: a and b
 * cast to f32 and multiplied, which kiln runs as one half GEMM reading the
 * bf16 values, ir/half_gemm.c) beside oneDNN's bf16 matmul primitive (bf16
 * src and weights, f32 dst, one OpenMP thread) and kiln's own f32 GEMM on
 * the same values widened, in the same run. Columns: kiln bf16 with b a
 * weight (prepacked at bind) and with b a graph input (packed inside every
 * call), oneDNN with its weights reordered once into the layout it prefers
 * (format any: its best case) and with them row-major as given, kiln f32
 * with b a weight (prepacked). The goal (issue 21, hosts with AVX512-BF16):
 * kiln bf16 prepacked >= 0.9x oneDNN prepacked and >= 1.6x kiln f32.
 * Cases: bench/gemm.c's (256^3, 512^3, 1024^3, 2048^3, 1x4096x4096) and
 * decode-like rows M = 4 and 8 of 4096 x 4096 (--case MxNxK replaces them).
 * Each column's result is checked against kiln bf16's before timing (the
 * same exact products summed in f32 in another order: within 1e-3 of the
 * largest |c|). Per case: a warm-up each, then R rounds that time every
 * column once, interleaved, so machine noise hits all alike; median GFLOP/s
 * per column, min and max, and the ratios of medians.
 *
 * --two-threads adds a column: kiln bf16 prepacked on a context of 2 threads
 * (the half GEMM splits C between them: rows, or panels of columns for
 * few rows), with its speed-up over 1 thread.
 *
 * usage: bench_gemm_half [--case MxNxK]... [--rounds R] [--tsv] [--two-threads]
 *   --tsv  machine-readable lines instead of the table (bench/run.sh reads
 *          them): "R case engine 1 GFLOP/s rounds min median max", tabs
 *          between, case MxNxK, engine the column's name
 * Exit status: 0, or 1 when setup failed or a result disagreed. */
#define _GNU_SOURCE /* setenv, execv */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef KILN_BENCH_DNNL
#include <dnnl.h>

#include "dnnl_util.h"
#endif

#include "bench_util.h"

#pragma weak kiln_context_set_num_threads

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_gemm_half: %s: %s\n", what, why ? why : "");
  exit(1);
}

typedef struct gcase {
  int64_t m, n, k;
} gcase;

typedef struct kiln_mm {
  kiln_model *model;
  kiln_tensor *a, *b, *c;
  bool weight;
} kiln_mm;

/* half: a, b bf16 cast to f32 (the half GEMM), else f32 operands; weight: b
 * a weight bound once (prepacked at bind), else a graph input */
static void kiln_setup(kiln_context *ctx, kiln_mm *g, gcase c, void *a, void *b, float *out,
                       bool half, bool weight, kiln_status *st) {
  char dm[32], dn[32], dk[32];
  snprintf(dm, sizeof dm, "%lld", (long long)c.m);
  snprintf(dn, sizeof dn, "%lld", (long long)c.n);
  snprintf(dk, sizeof dk, "%lld", (long long)c.k);
  kiln_graph *gr = kiln_graph_new("gemm_half", st);
  if (!gr) die("graph", kiln_status_message(st));
  const char *da[2] = {dm, dk}, *db[2] = {dk, dn};
  kiln_dtype dt = half ? KILN_BFLOAT16 : KILN_FLOAT32;
  kiln_value *ops[2] = {kiln_graph_add_input(gr, "a", dt, 2, da, st),
                        weight ? kiln_graph_add_weight(gr, "b", dt, 2, db, st)
                               : kiln_graph_add_input(gr, "b", dt, 2, db, st)};
  if (!ops[0] || !ops[1]) die("inputs", kiln_status_message(st));
  for (int i = 0; half && i < 2; i++)
    if (!(ops[i] = kiln_graph_add_op(gr, "mo.cast", &ops[i], 1, "{dtype = f32}", NULL, st)))
      die("cast", kiln_status_message(st));
  kiln_value *vc = kiln_graph_add_op(gr, "mo.matmul", ops, 2, NULL, NULL, st);
  if (!vc || kiln_graph_set_outputs(gr, &vc, 1, NULL, st) != 0)
    die("matmul", kiln_status_message(st));
  g->model = kiln_model_compile(ctx, gr, st);
  if (!g->model) die("compile", kiln_status_message(st));
  kiln_graph_free(gr);
  int64_t sa[2] = {c.m, c.k}, sb[2] = {c.k, c.n}, sc[2] = {c.m, c.n};
  g->a = kiln_tensor_borrow(dt, 2, sa, a, st);
  g->b = kiln_tensor_borrow(dt, 2, sb, b, st);
  g->c = kiln_tensor_borrow(KILN_FLOAT32, 2, sc, out, st);
  if (!g->a || !g->b || !g->c) die("tensors", kiln_status_message(st));
  if (weight && kiln_model_bind_weight(g->model, "b", g->b, st) != 0)
    die("bind", kiln_status_message(st));
  g->weight = weight;
}

static void kiln_run(kiln_mm *g, kiln_status *st) {
  kiln_tensor *in[2] = {g->a, g->b};
  if (kiln_model_execute(g->model, in, g->weight ? 1 : 2, &g->c, 1, st) != 0)
    die("execute", kiln_status_message(st));
}

static void kiln_teardown(kiln_mm *g) {
  kiln_tensor_free(g->a);
  kiln_tensor_free(g->b);
  kiln_tensor_free(g->c);
  kiln_model_free(g->model);
}

#ifdef KILN_BENCH_DNNL
/* oneDNN's bf16 matmul, f32 dst: weights row-major or reordered once */
static void dnnl_setup(bench_dnnl_mm *d, gcase c, void *a, void *b, float *out, bool prepack) {
  if (bench_dnnl_mm_init(d, c.m, c.n, c.k, dnnl_bf16, dnnl_bf16, dnnl_f32, a, b, out, prepack) !=
      dnnl_success)
    die("oneDNN", "setting up the bf16 matmul failed");
}
#endif

enum { BF16_PACKED = 0, BF16_INPUT, F32_PACKED, BF16_PACKED_2T, DNNL_PACKED, DNNL_PLAIN, NCOL };
static const char *NAMES[NCOL] = {"kiln bf16 prepacked", "kiln bf16", "kiln f32 prepacked",
                                  "kiln bf16 prepacked 2 thr", "oneDNN bf16 prepacked",
                                  "oneDNN bf16"};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
/* a bf16 in [-1, 1) and its value */
static uint16_t rnd_bf16(float *value) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  float x = (float)((int64_t)(rng >> 40) - (1 << 23)) / (float)(1 << 23);
  uint32_t u;
  memcpy(&u, &x, 4);
  uint16_t h = (uint16_t)(u >> 16); /* truncated: any bf16 will do */
  u = (uint32_t)h << 16;
  memcpy(value, &u, 4);
  return h;
}

/* out within 1e-3 of the largest |ref| of ref, element by element */
static bool close_to(const float *out, const float *ref, size_t n) {
  float big = 0;
  for (size_t i = 0; i < n; i++) big = fabsf(ref[i]) > big ? fabsf(ref[i]) : big;
  for (size_t i = 0; i < n; i++)
    if (!(fabsf(out[i] - ref[i]) <= 1e-3f * big + 1e-6f)) return false;
  return true;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ctx2: a context of 2 threads for the BF16_PACKED_2T column, or NULL */
static void run_case(kiln_context *ctx, kiln_context *ctx2, gcase c, int rounds, bool tsv) {
  size_t na = (size_t)(c.m * c.k), nb = (size_t)(c.k * c.n), nc = (size_t)(c.m * c.n);
  uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
  float *af = malloc(na * 4), *bf = malloc(nb * 4), *out[NCOL];
  if (!a || !b || !af || !bf) die("memory", "out of memory");
  for (int i = 0; i < NCOL; i++)
    if (!(out[i] = calloc(nc, sizeof(float)))) die("memory", "out of memory");
  for (size_t i = 0; i < na; i++) a[i] = rnd_bf16(&af[i]);
  for (size_t i = 0; i < nb; i++) b[i] = rnd_bf16(&bf[i]);
  kiln_status *st = kiln_status_new();
  kiln_mm km[4];
  kiln_setup(ctx, &km[BF16_PACKED], c, a, b, out[BF16_PACKED], true, true, st);
  kiln_setup(ctx, &km[BF16_INPUT], c, a, b, out[BF16_INPUT], true, false, st);
  kiln_setup(ctx, &km[F32_PACKED], c, af, bf, out[F32_PACKED], false, true, st);
  if (ctx2) kiln_setup(ctx2, &km[BF16_PACKED_2T], c, a, b, out[BF16_PACKED_2T], true, true, st);
  bool have[NCOL] = {true, true, true, ctx2 != NULL, false, false};
#ifdef KILN_BENCH_DNNL
  bench_dnnl_mm dm[2];
  for (int p = 0; p < 2; p++) {
    dnnl_setup(&dm[p], c, a, b, out[DNNL_PACKED + p], p == 0);
    have[DNNL_PACKED + p] = true;
  }
#endif
  double *secs[NCOL];
  for (int i = 0; i < NCOL; i++)
    if (!(secs[i] = malloc(sizeof(double) * (size_t)rounds))) die("memory", "out of memory");
  for (int r = -1; r < rounds; r++) /* r = -1: warm-up, then the check */
    for (int col = 0; col < NCOL; col++) {
      if (!have[col]) continue;
      double t0 = bench_now_s();
      if (col <= BF16_PACKED_2T) kiln_run(&km[col], st);
#ifdef KILN_BENCH_DNNL
      else if (bench_dnnl_mm_run(&dm[col - DNNL_PACKED]) != dnnl_success)
        die("oneDNN", "the bf16 matmul failed");
#endif
      double t = bench_now_s() - t0;
      if (r >= 0) secs[col][r] = t;
      if (r == -1 && col != BF16_PACKED && !close_to(out[col], out[BF16_PACKED], nc))
        die(NAMES[col], "result differs from kiln bf16's");
    }
  double flop = 2.0 * (double)c.m * (double)c.n * (double)c.k, med[NCOL] = {0};
  char label[64];
  snprintf(label, sizeof label, "%lldx%lldx%lld", (long long)c.m, (long long)c.n,
           (long long)c.k);
  for (int col = 0; col < NCOL; col++) {
    if (!have[col]) {
      if (!tsv && col >= DNNL_PACKED)
        printf("  %-22s n/a (oneDNN not found at build time)\n", NAMES[col]);
      continue;
    }
    med[col] = median(secs[col], rounds);
    if (tsv) {
      printf("R\t%s\t%s\t%d\tGFLOP/s\t%d\t%.2f\t%.2f\t%.2f\n", label, NAMES[col],
             col == BF16_PACKED_2T ? 2 : 1, rounds,
             flop / secs[col][rounds - 1] / 1e9, flop / med[col] / 1e9, flop / secs[col][0] / 1e9);
      continue;
    }
    printf("%-15s %-22s median %7.1f GFLOP/s (min %7.1f, max %7.1f, %d rounds)", label,
           NAMES[col], flop / med[col] / 1e9, flop / secs[col][rounds - 1] / 1e9,
           flop / secs[col][0] / 1e9, rounds);
    if (col == F32_PACKED) printf("  kiln bf16 prepacked / this = %.2fx", med[col] / med[0]);
    if (col == BF16_PACKED_2T) printf("  this / 1 thread = %.2fx", med[0] / med[col]);
    if (col == DNNL_PACKED) printf("  kiln bf16 prepacked / this = %.2fx", med[col] / med[0]);
    if (col == DNNL_PLAIN)
      printf("  kiln bf16 / this = %.2fx", med[col] / med[BF16_INPUT]);
    printf("\n");
  }
#ifdef KILN_BENCH_DNNL
  bench_dnnl_mm_free(&dm[0]);
  bench_dnnl_mm_free(&dm[1]);
#endif
  for (int i = 0; i < (ctx2 ? 4 : 3); i++) kiln_teardown(&km[i]);
  kiln_status_free(st);
  for (int i = 0; i < NCOL; i++) free(secs[i]), free(out[i]);
  free(a), free(b), free(af), free(bf);
}

int main(int argc, char **argv) {
  /* oneDNN's OpenMP reads its thread count when loaded: one thread */
  const char *omp = getenv("OMP_NUM_THREADS");
  if (!omp || strcmp(omp, "1") != 0) {
    setenv("OMP_NUM_THREADS", "1", 1);
    execv("/proc/self/exe", argv);
    die("re-exec with OMP_NUM_THREADS=1", "execv failed");
  }
  gcase cases[16];
  int ncases = 0, rounds = 9;
  bool tsv = false, two = false;
  for (int i = 1; i < argc; i++) {
    long long m, n, k;
    if (strcmp(argv[i], "--case") == 0 && i + 1 < argc && ncases < 16 &&
        sscanf(argv[i + 1], "%lldx%lldx%lld", &m, &n, &k) == 3 && m > 0 && n > 0 && k > 0) {
      cases[ncases++] = (gcase){m, n, k};
      i++;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      rounds = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--tsv") == 0) {
      tsv = true;
    } else if (strcmp(argv[i], "--two-threads") == 0) {
      two = true;
    } else {
      fprintf(stderr, "usage: bench_gemm_half [--case MxNxK]... [--rounds R] [--tsv] "
                      "[--two-threads]\n");
      return 2;
    }
  }
  if (!ncases) {
    const gcase dflt[] = {{256, 256, 256},    {512, 512, 512},   {1024, 1024, 1024},
                          {2048, 2048, 2048}, {1, 4096, 4096},   {4, 4096, 4096},
                          {8, 4096, 4096}};
    memcpy(cases, dflt, sizeof dflt);
    ncases = (int)(sizeof dflt / sizeof *dflt);
  }
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", kiln_status_message(st));
  if (!kiln_context_set_num_threads || kiln_context_set_num_threads(ctx, 1, st) != 0)
    fprintf(stderr, "note: kiln runs with its default thread count (could not set 1)\n");
  kiln_context *ctx2 = NULL;
  if (two && (!(ctx2 = kiln_context_new(st)) || !kiln_context_set_num_threads ||
              kiln_context_set_num_threads(ctx2, 2, st) != 0))
    die("a context of 2 threads", kiln_status_message(st));
  if (!tsv)
    printf("bf16 x bf16 -> f32 (kiln f32: the same values as f32), 1 thread each (MxNxK)\n");
  for (int i = 0; i < ncases; i++) run_case(ctx, ctx2, cases[i], rounds, tsv);
  kiln_context_free(ctx2);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
