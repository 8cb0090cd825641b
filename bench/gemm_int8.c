/* gemm_int8.c (bench_gemm_int8) - 8-bit GEMM GOP/s, u8 x s8 -> s32: kiln (a
 * one-op mo.matmul.integer graph with static shapes, through the public API,
 * one thread) beside oneDNN's int8 matmul primitive (u8 src, s8 weights, s32
 * dst, one OpenMP thread) in the same run, when the build found oneDNN
 * (KILN_BENCH_DNNL). kiln runs twice too: b a graph input (packed inside
 * every call) and b a weight bound once (prepacked at bind where the host
 * has AVX512-VNNI). oneDNN runs twice: with the weights row-major as given
 * (what kiln gets: an input, packed inside every call) and with the weights
 * in the layout its primitive prefers (format "any"), reordered once before
 * timing (prepacked, oneDNN's best case). Cases: M = N = K = 256, 512, 1024
 * and an LLM-like layer M = 128, N = K = 4096 (--case MxNxK replaces them).
 * --kernel NAME (repeatable: generic, avx2, avxvnni, avx512vnni) adds kiln
 * columns of a context whose 8-bit GEMM is capped at that kernel
 * (KILN_INT8_GEMM), e.g. the AVX2 kernel an AVX2-only CI host runs, beside
 * the host's own in the same rounds. Where the build has it (x86-64), the
 * template's generic loops compiled for x86-64-v3 ("generic v3", called
 * directly, B row-major) run too: what an AVX2-only host's JIT makes of
 * the generic kernel, the anchor of the avx2 / avxvnni columns.
 * Decode shapes (M <= 4) are memory-bound: for them every column is also
 * given in GB/s of weight bytes (N K) beside the triad (bench_util.h),
 * timed once per round in the same rounds.
 * Each anchor's result is checked equal to kiln's before timing. Per case: a
 * warm-up each, then R rounds that time every column once, interleaved, so
 * machine noise hits all alike; median GOP/s (2 M N K operations) per
 * column, min and max, and the ratios of medians kiln / oneDNN and kiln
 * prepacked / oneDNN prepacked.
 *
 * usage: bench_gemm_int8 [--case MxNxK]... [--decode] [--rounds R] [--kernel NAME]...
 * --decode (replaces the cases): the decode steps M = 1 and 4 of N x K = 4096 x 4096 and
 * 4096 x 14336 (a projection and an FFN down projection of an 8B-class LLM).
 * Exit status: 0, or 1 when setup failed or an anchor disagreed with kiln. */
#define _GNU_SOURCE /* setenv, execv */
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef KILN_BENCH_DNNL
#include <dnnl.h>

#include "dnnl_util.h"
#endif

#include "bench_util.h"

#ifdef KILN_BENCH_MMI_V3
/* kernels-templates/gemm_int8.c's generic u8 x s8 entry, built for x86-64-v3 */
void kiln_mmi_u8s8(int64_t M, int64_t N, int64_t K, const void *A, const void *B, int32_t *C,
                   const void *ZA, int64_t nza, const void *ZB, int64_t nzb, int64_t part,
                   int64_t nparts);
#endif

#define TRIAD_N (16 * 1024 * 1024)
#define DECODE_MAX_M 4 /* cases with this many rows or fewer: GB/s beside the triad */

#pragma weak kiln_context_set_num_threads

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_gemm_int8: %s: %s\n", what, why ? why : "");
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

/* weight: b a weight bound once (prepacked at bind), else a graph input */
static void kiln_setup(kiln_context *ctx, kiln_mm *g, gcase c, uint8_t *a, int8_t *b,
                       int32_t *out, bool weight, kiln_status *st) {
  char dm[32], dn[32], dk[32];
  snprintf(dm, sizeof dm, "%lld", (long long)c.m);
  snprintf(dn, sizeof dn, "%lld", (long long)c.n);
  snprintf(dk, sizeof dk, "%lld", (long long)c.k);
  kiln_graph *gr = kiln_graph_new("gemm_int8", st);
  if (!gr) die("graph", kiln_status_message(st));
  const char *da[2] = {dm, dk}, *db[2] = {dk, dn};
  kiln_value *va = kiln_graph_add_input(gr, "a", KILN_UINT8, 2, da, st);
  kiln_value *vb = weight ? kiln_graph_add_weight(gr, "b", KILN_INT8, 2, db, st)
                          : kiln_graph_add_input(gr, "b", KILN_INT8, 2, db, st);
  if (!va || !vb) die("inputs", kiln_status_message(st));
  kiln_value *ops[2] = {va, vb};
  kiln_value *vc = kiln_graph_add_op(gr, "mo.matmul.integer", ops, 2, NULL, NULL, st);
  if (!vc || kiln_graph_set_outputs(gr, &vc, 1, NULL, st) != 0)
    die("matmul.integer", kiln_status_message(st));
  g->model = kiln_model_compile(ctx, gr, st);
  if (!g->model) die("compile", kiln_status_message(st));
  kiln_graph_free(gr);
  int64_t sa[2] = {c.m, c.k}, sb[2] = {c.k, c.n}, sc[2] = {c.m, c.n};
  g->a = kiln_tensor_borrow(KILN_UINT8, 2, sa, a, st);
  g->b = kiln_tensor_borrow(KILN_INT8, 2, sb, b, st);
  g->c = kiln_tensor_borrow(KILN_INT32, 2, sc, out, st);
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

#ifdef KILN_BENCH_DNNL
/* oneDNN's matmul: plain (weights row-major) or prepacked (format any,
 * reordered once) */
static void dnnl_setup(bench_dnnl_mm *d, gcase c, uint8_t *a, int8_t *b, int32_t *out,
                       bool prepack) {
  if (bench_dnnl_mm_init(d, c.m, c.n, c.k, dnnl_u8, dnnl_s8, dnnl_s32, a, b, out, prepack) !=
      dnnl_success)
    die("oneDNN", "setting up the int8 matmul failed");
}
#endif

/* columns: per kiln context (the host's kernel, then each --kernel) b as
 * an input and b prepacked, then the generic loops at x86-64-v3, oneDNN
 * plain and prepacked */
enum { MAXCTX = 5, GENERIC_V3 = 2 * MAXCTX, DNNL_PLAIN, DNNL_PACKED, NCOL };
static char names[NCOL][40];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint8_t rnd8(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint8_t)rng;
}

static float *triad_a, *triad_b, *triad_c;

static void run_case(kiln_context *const *ctxs, int nctx, gcase c, int rounds) {
  size_t na = (size_t)(c.m * c.k), nb = (size_t)(c.k * c.n), nc = (size_t)(c.m * c.n);
  uint8_t *a = malloc(na);
  int8_t *b = malloc(nb);
  int32_t *out[NCOL];
  for (int i = 0; i < NCOL; i++) out[i] = calloc(nc, sizeof(int32_t));
  for (int i = 0; i < NCOL; i++)
    if (!out[i]) die("memory", "out of memory");
  if (!a || !b) die("memory", "out of memory");
  for (size_t i = 0; i < na; i++) a[i] = rnd8();
  for (size_t i = 0; i < nb; i++) b[i] = (int8_t)rnd8();
  kiln_status *st = kiln_status_new();
  kiln_mm km[2 * MAXCTX];
  bool have[NCOL] = {false};
  for (int col = 0; col < 2 * nctx; col++) {
    kiln_setup(ctxs[col / 2], &km[col], c, a, b, out[col], col % 2 == 1, st);
    have[col] = true;
  }
#ifdef KILN_BENCH_MMI_V3
  have[GENERIC_V3] = true;
#endif
#ifdef KILN_BENCH_DNNL
  bench_dnnl_mm dm[2];
  for (int p = 0; p < 2; p++) {
    dnnl_setup(&dm[p], c, a, b, out[DNNL_PLAIN + p], p == 1);
    have[DNNL_PLAIN + p] = true;
  }
#endif
  double *secs[NCOL];
  for (int i = 0; i < NCOL; i++) secs[i] = malloc(sizeof(double) * (size_t)rounds);
  bool decode = c.m <= DECODE_MAX_M;
  double *triad_s = malloc(sizeof(double) * (size_t)rounds);
  for (int r = -1; r < rounds; r++) { /* r = -1: warm-up, then the check */
    for (int col = 0; col < NCOL; col++) {
      if (!have[col]) continue;
      double t0 = bench_now_s();
      if (col < GENERIC_V3) kiln_run(&km[col], st);
#ifdef KILN_BENCH_MMI_V3
      else if (col == GENERIC_V3)
        kiln_mmi_u8s8(c.m, c.n, c.k, a, b, out[col], NULL, 0, NULL, 0, 0, 1);
#endif
#ifdef KILN_BENCH_DNNL
      else if (bench_dnnl_mm_run(&dm[col - DNNL_PLAIN]) != dnnl_success)
        die("oneDNN", "the int8 matmul failed");
#endif
      double t = bench_now_s() - t0;
      if (r >= 0) secs[col][r] = t;
      if (r == -1 && col != 0 && memcmp(out[col], out[0], nc * sizeof(int32_t)) != 0)
        die(names[col], "result differs from kiln's");
    }
    if (decode) {
      double t0 = bench_now_s();
      bench_triad(triad_a, triad_b, triad_c, 3.0f, TRIAD_N);
      if (r >= 0) triad_s[r] = bench_now_s() - t0;
    }
  }
  double ops = 2.0 * (double)c.m * (double)c.n * (double)c.k, med[NCOL] = {0}, triad_gbs = 0;
  if (decode) {
    double ts[3];
    bench_stats(triad_s, rounds, ts);
    triad_gbs = 12.0 * TRIAD_N / ts[1] / 1e9;
    printf("%lldx%lldx%lld %-28s median %7.2f GB/s (min %7.2f, max %7.2f)\n", (long long)c.m,
           (long long)c.n, (long long)c.k, "triad", triad_gbs, 12.0 * TRIAD_N / ts[2] / 1e9,
           12.0 * TRIAD_N / ts[0] / 1e9);
  }
  free(triad_s);
  for (int col = 0; col < NCOL; col++) {
    if (!have[col]) {
      if (col >= DNNL_PLAIN) printf("  %-28s n/a (oneDNN not found at build time)\n", names[col]);
      continue;
    }
    qsort(secs[col], (size_t)rounds, sizeof(double), bench_cmp_double);
    med[col] = rounds % 2 ? secs[col][rounds / 2]
                          : (secs[col][rounds / 2 - 1] + secs[col][rounds / 2]) / 2;
  }
  for (int col = 0; col < NCOL; col++) {
    if (!have[col]) continue;
    printf("%lldx%lldx%lld %-28s median %7.1f GOP/s (min %7.1f, max %7.1f, %d rounds)",
           (long long)c.m, (long long)c.n, (long long)c.k, names[col], ops / med[col] / 1e9,
           ops / secs[col][rounds - 1] / 1e9, ops / secs[col][0] / 1e9, rounds);
    /* like against like: b packed per call, or b packed once */
    int anchor = col % 2 ? DNNL_PACKED : DNNL_PLAIN;
    if (col < GENERIC_V3 && have[anchor])
      printf("  this / %s = %.2fx", names[anchor], med[anchor] / med[col]);
    if (col < GENERIC_V3 && have[GENERIC_V3])
      printf("  this / %s = %.2fx", names[GENERIC_V3], med[GENERIC_V3] / med[col]);
    if (decode) /* the weight's bytes per second beside the same rounds' triad */
      printf("  %.2f GB/s = %.2fx triad", (double)c.n * (double)c.k / med[col] / 1e9,
             (double)c.n * (double)c.k / med[col] / 1e9 / triad_gbs);
    printf("\n");
  }
#ifdef KILN_BENCH_DNNL
  bench_dnnl_mm_free(&dm[0]);
  bench_dnnl_mm_free(&dm[1]);
#endif
  for (int col = 0; col < 2 * nctx; col++) {
    kiln_tensor_free(km[col].a);
    kiln_tensor_free(km[col].b);
    kiln_tensor_free(km[col].c);
    kiln_model_free(km[col].model);
  }
  kiln_status_free(st);
  for (int i = 0; i < NCOL; i++) free(secs[i]), free(out[i]);
  free(a);
  free(b);
}

/* a context of one thread, its 8-bit GEMM capped at kernel (NULL: none) */
static kiln_context *new_context(const char *kernel, kiln_status *st) {
  if (kernel) setenv("KILN_INT8_GEMM", kernel, 1);
  else unsetenv("KILN_INT8_GEMM");
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) die("context", kiln_status_message(st));
  unsetenv("KILN_INT8_GEMM");
  if (!kiln_context_set_num_threads || kiln_context_set_num_threads(ctx, 1, st) != 0)
    printf("note: kiln runs with its default thread count (could not set 1)\n");
  return ctx;
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
  const char *kernels[MAXCTX] = {NULL};
  int ncases = 0, rounds = 15, nctx = 1;
  bool decode_cases = false;
  for (int i = 1; i < argc; i++) {
    long long m, n, k;
    if (strcmp(argv[i], "--case") == 0 && i + 1 < argc && ncases < 16 &&
        sscanf(argv[i + 1], "%lldx%lldx%lld", &m, &n, &k) == 3 && m > 0 && n > 0 && k > 0) {
      cases[ncases++] = (gcase){m, n, k};
      i++;
    } else if (strcmp(argv[i], "--decode") == 0) {
      decode_cases = true;
    } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
      rounds = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc && nctx < MAXCTX) {
      kernels[nctx++] = argv[++i];
    } else {
      fprintf(stderr,
              "usage: bench_gemm_int8 [--case MxNxK]... [--decode] [--rounds R] "
              "[--kernel NAME]...\n");
      return 2;
    }
  }
  if (!ncases && !decode_cases) {
    const gcase dflt[] = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024},
                          {128, 4096, 4096}};
    memcpy(cases, dflt, sizeof dflt);
    ncases = 4;
  }
  if (decode_cases) {
    const gcase dec[] = {{1, 4096, 4096}, {4, 4096, 4096}, {1, 4096, 14336}, {4, 4096, 14336}};
    memcpy(cases, dec, sizeof dec);
    ncases = 4;
  }
  for (int i = 0; i < nctx; i++) {
    snprintf(names[2 * i], sizeof names[0], "kiln%s%s", kernels[i] ? " " : "",
             kernels[i] ? kernels[i] : "");
    snprintf(names[2 * i + 1], sizeof names[0], "kiln%s%s prepacked", kernels[i] ? " " : "",
             kernels[i] ? kernels[i] : "");
  }
  snprintf(names[GENERIC_V3], sizeof names[0], "generic v3");
  snprintf(names[DNNL_PLAIN], sizeof names[0], "oneDNN");
  triad_a = malloc(sizeof(float) * TRIAD_N);
  triad_b = malloc(sizeof(float) * TRIAD_N);
  triad_c = malloc(sizeof(float) * TRIAD_N);
  if (!triad_a || !triad_b || !triad_c) die("memory", "out of memory");
  for (int64_t i = 0; i < TRIAD_N; i++) triad_a[i] = 0, triad_b[i] = 1, triad_c[i] = 2;
  snprintf(names[DNNL_PACKED], sizeof names[0], "oneDNN prepacked");
  kiln_status *st = kiln_status_new();
  kiln_context *ctxs[MAXCTX];
  for (int i = 0; i < nctx; i++) ctxs[i] = new_context(kernels[i], st);
  printf("u8 x s8 -> s32, 1 thread each (MxNxK)\n");
  for (int i = 0; i < ncases; i++) run_case(ctxs, nctx, cases[i], rounds);
  for (int i = 0; i < nctx; i++) kiln_context_free(ctxs[i]);
  kiln_status_free(st);
  free(triad_a), free(triad_b), free(triad_c);
  return 0;
}
