/* conv.c (bench_conv) - f32 NHWC conv2d GFLOP/s on ResNet-50's 3x3 and 1x1
 * layer shapes: kiln (a one-op mo.conv2d graph with static shapes, RSCF
 * filter, through the public API, its context on 1 thread) against
 * oneDNN's convolution primitive (NHWC source and destination, weights in
 * the layout oneDNN picks, reordered once before timing, as an inference
 * framework does) in the same run, when the build found oneDNN
 * (KILN_BENCH_DNNL). kiln's filter is likewise a weight
 * (mo.constant.external) bound once before timing, so that kiln may also
 * prepare it once; --filter-input makes it a graph input instead (read as
 * it is at every call). oneDNN gets 1 thread: the program sets
 * OMP_NUM_THREADS=1 and re-executes itself when it differs.
 * Per case: oneDNN's result is checked against kiln's (|diff| <= 1e-4 *
 * (1 + |kiln|)), one warm-up each, then R interleaved rounds; min / median
 * / max GFLOP/s (2 * N * Ho * Wo * F * R * S * C flops) and the ratio of
 * medians kiln / oneDNN.
 *
 * usage: bench_conv [--quick] [--tsv] [--filter-input] [--batch N]... [--case TEXT]...
 *   --batch  batch sizes (default 1 and 8)
 *   --case   only the cases whose id contains TEXT (repeatable), ids as
 *            n1_7x7_512-512_3x3 (batch, H x W, C -> F, filter)
 *   --tsv    machine-readable lines (bench/run.sh reads them):
 *            R <case id> <kiln|oneDNN> 1 GFLOP/s <runs> <min> <median> <max>
 * Output otherwise: one line per case:
 *   case  kiln min/med/max  oneDNN min/med/max  ratio
 * Exit status: 0, or 1 when setup failed or oneDNN disagreed with kiln. */
#define _GNU_SOURCE /* setenv, execv */
#include <kiln/kiln.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef KILN_BENCH_DNNL
#include <dnnl.h>

#include "dnnl_util.h"
#endif

typedef struct ccase {
  int64_t h, c, f, k, stride; /* square HxH input, C -> F, k x k filter, padding k / 2 */
} ccase;

/* ResNet-50's bottleneck convolutions (stride-1 blocks) */
static const ccase CASES[] = {
    {56, 64, 64, 3, 1},   {56, 64, 256, 1, 1},  {56, 256, 64, 1, 1},  {28, 128, 128, 3, 1},
    {28, 512, 128, 1, 1}, {14, 256, 256, 3, 1}, {14, 1024, 256, 1, 1}, {7, 512, 512, 3, 1},
    {7, 2048, 512, 1, 1},
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, kiln_status *st) {
  fprintf(stderr, "bench_conv: %s: %s\n", what, st ? kiln_status_message(st) : "");
  exit(1);
}

typedef struct kconv {
  kiln_model *model;
  kiln_tensor *x, *w, *y;
  bool w_input; /* the filter is a graph input, not a bound weight */
} kconv;

static void kiln_setup(kiln_context *ctx, kconv *kc, int64_t n, const ccase *c, int64_t ho,
                       float *x, float *w, float *y, bool w_input, kiln_status *st) {
  char dn[24], dh[24], dc[24], dk[24], df[24], dho[24], attrs[128];
  snprintf(dn, sizeof dn, "%lld", (long long)n);
  snprintf(dh, sizeof dh, "%lld", (long long)c->h);
  snprintf(dc, sizeof dc, "%lld", (long long)c->c);
  snprintf(dk, sizeof dk, "%lld", (long long)c->k);
  snprintf(df, sizeof df, "%lld", (long long)c->f);
  snprintf(dho, sizeof dho, "%lld", (long long)ho);
  int64_t p = c->k / 2;
  snprintf(attrs, sizeof attrs, "{stride = [%lld, %lld], padding = [%lld, %lld, %lld, %lld]}",
           (long long)c->stride, (long long)c->stride, (long long)p, (long long)p, (long long)p,
           (long long)p);
  kiln_graph *g = kiln_graph_new("conv", st);
  if (!g) die("graph", st);
  const char *sx[4] = {dn, dh, dh, dc}, *sw[4] = {dk, dk, dc, df};
  kiln_value *vx = kiln_graph_add_input(g, "x", KILN_FLOAT32, 4, sx, st);
  kiln_value *vw = w_input ? kiln_graph_add_input(g, "w", KILN_FLOAT32, 4, sw, st)
                           : kiln_graph_add_weight(g, "w", KILN_FLOAT32, 4, sw, st);
  if (!vx || !vw) die("inputs", st);
  kiln_value *ops[2] = {vx, vw};
  kiln_value *vy = kiln_graph_add_op(g, "mo.conv2d", ops, 2, attrs, NULL, st);
  if (!vy || kiln_graph_set_outputs(g, &vy, 1, NULL, st) != 0) die("conv2d", st);
  if (!(kc->model = kiln_model_compile(ctx, g, st))) die("compile", st);
  kiln_graph_free(g);
  int64_t shx[4] = {n, c->h, c->h, c->c}, shw[4] = {c->k, c->k, c->c, c->f};
  int64_t shy[4] = {n, ho, ho, c->f};
  kc->x = kiln_tensor_borrow(KILN_FLOAT32, 4, shx, x, st);
  kc->w = kiln_tensor_borrow(KILN_FLOAT32, 4, shw, w, st);
  kc->y = kiln_tensor_borrow(KILN_FLOAT32, 4, shy, y, st);
  if (!kc->x || !kc->w || !kc->y) die("tensors", st);
  kc->w_input = w_input;
  if (!w_input && kiln_model_bind_weight(kc->model, "w", kc->w, st) != 0)
    die("bind the filter", st);
}

static void kiln_run(kconv *kc, kiln_status *st) {
  kiln_tensor *in[2] = {kc->x, kc->w};
  if (kiln_model_execute(kc->model, in, kc->w_input ? 2 : 1, &kc->y, 1, st) != 0)
    die("execute", st);
}

#ifdef KILN_BENCH_DNNL
typedef struct dconv {
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  dnnl_primitive_t prim;
  dnnl_memory_t src, wts, dst;
} dconv;

#define DN(call)                                                       \
  do {                                                                 \
    if ((call) != dnnl_success) {                                      \
      fprintf(stderr, "bench_conv: oneDNN call failed: %s\n", #call); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

/* x NHWC, w RSCF (oneDNN's hwio), y NHWC */
static void dnnl_setup(dconv *d, int64_t n, const ccase *c, int64_t ho, float *x, float *w,
                       float *y) {
  DN(dnnl_engine_create(&d->eng, dnnl_cpu, 0));
  DN(dnnl_stream_create(&d->stream, d->eng, dnnl_stream_default_flags));
  dnnl_dims_t xs = {n, c->c, c->h, c->h}, ws = {c->f, c->c, c->k, c->k}, ys = {n, c->f, ho, ho};
  dnnl_memory_desc_t xmd, wmd_user, wmd_any, ymd;
  DN(dnnl_memory_desc_init_by_tag(&xmd, 4, xs, dnnl_f32, dnnl_nhwc));
  DN(dnnl_memory_desc_init_by_tag(&wmd_user, 4, ws, dnnl_f32, dnnl_hwio));
  DN(dnnl_memory_desc_init_by_tag(&wmd_any, 4, ws, dnnl_f32, dnnl_format_tag_any));
  DN(dnnl_memory_desc_init_by_tag(&ymd, 4, ys, dnnl_f32, dnnl_nhwc));
  int64_t p = c->k / 2;
  dnnl_dims_t st = {c->stride, c->stride}, dil = {0, 0}, pl = {p, p}, pr = {p, p};
  dnnl_convolution_desc_t cd;
  DN(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                dnnl_convolution_direct,
                                                &xmd, &wmd_any, NULL, &ymd, st, dil, pl, pr));
  dnnl_primitive_desc_t pd;
  DN(dnnl_primitive_desc_create(&pd, &cd, NULL, d->eng, NULL));
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  DN(dnnl_primitive_create(&d->prim, pd));
  DN(dnnl_memory_create(&d->src, &xmd, d->eng, x));
  DN(dnnl_memory_create(&d->dst, &ymd, d->eng, y));
  DN(bench_dnnl_weights(d->eng, d->stream, &wmd_user, w, wmd, &d->wts)); /* reorder once */
  dnnl_primitive_desc_destroy(pd);
}

static void dnnl_run(dconv *d) { DN(bench_dnnl_run(d->prim, d->stream, d->src, d->wts, d->dst)); }

static void dnnl_teardown(dconv *d) {
  dnnl_primitive_destroy(d->prim);
  dnnl_memory_destroy(d->src);
  dnnl_memory_destroy(d->wts);
  dnnl_memory_destroy(d->dst);
  dnnl_stream_destroy(d->stream);
  dnnl_engine_destroy(d->eng);
}
#endif

static void fill(float *p, int64_t n, uint64_t *s) {
  for (int64_t i = 0; i < n; i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
}

typedef struct opts {
  bool quick, tsv, w_input;
} opts;

static void run_case(kiln_context *ctx, int64_t n, const ccase *c, const char *id, const opts *o,
                     kiln_status *st) {
  int64_t p = c->k / 2, ho = (c->h + 2 * p - c->k) / c->stride + 1;
  int64_t nx = n * c->h * c->h * c->c, nw = c->k * c->k * c->c * c->f, ny = n * ho * ho * c->f;
  float *x = malloc((size_t)nx * 4), *w = malloc((size_t)nw * 4), *y = malloc((size_t)ny * 4),
        *y2 = malloc((size_t)ny * 4);
  if (!x || !w || !y || !y2) die("out of memory", NULL);
  uint64_t seed = 7;
  fill(x, nx, &seed);
  fill(w, nw, &seed);
  double flops = 2.0 * (double)ny * (double)(c->k * c->k * c->c);
  /* about 60 GFLOP per engine (a few seconds per case): enough rounds for
   * a median on a shared host */
  int rounds = (int)(6e10 / flops);
  rounds = rounds < 15 ? 15 : rounds > 300 ? 300 : rounds;
  if (o->quick) rounds = rounds / 5 < 3 ? 3 : rounds / 5;
  kconv kc;
  kiln_setup(ctx, &kc, n, c, ho, x, w, y, o->w_input, st);
  kiln_run(&kc, st);
  double *tk = calloc((size_t)rounds, sizeof *tk), *td = calloc((size_t)rounds, sizeof *td);
  if (!tk || !td) die("out of memory", NULL);
  bool have_d = false;
#ifdef KILN_BENCH_DNNL
  dconv d;
  dnnl_setup(&d, n, c, ho, x, w, y2);
  dnnl_run(&d);
  for (int64_t i = 0; i < ny; i++)
    if (fabsf(y[i] - y2[i]) > 1e-4f * (1.0f + fabsf(y[i]))) {
      fprintf(stderr, "bench_conv: oneDNN and kiln differ at %lld: %g vs %g\n", (long long)i,
              y2[i], y[i]);
      exit(1);
    }
  have_d = true;
#endif
  for (int r = 0; r < rounds; r++) {
    double t0 = now_s();
    kiln_run(&kc, st);
    tk[r] = now_s() - t0;
#ifdef KILN_BENCH_DNNL
    t0 = now_s();
    dnnl_run(&d);
    td[r] = now_s() - t0;
#endif
  }
  qsort(tk, (size_t)rounds, sizeof *tk, cmp);
  qsort(td, (size_t)rounds, sizeof *td, cmp);
  double km = tk[rounds / 2], dm = td[rounds / 2];
  if (o->tsv) {
    printf("R\t%s\tkiln\t1\tGFLOP/s\t%d\t%.3f\t%.3f\t%.3f\n", id, rounds,
           flops / tk[rounds - 1] / 1e9, flops / km / 1e9, flops / tk[0] / 1e9);
    if (have_d)
      printf("R\t%s\toneDNN\t1\tGFLOP/s\t%d\t%.3f\t%.3f\t%.3f\n", id, rounds,
             flops / td[rounds - 1] / 1e9, flops / dm / 1e9, flops / td[0] / 1e9);
    else
      printf("E\t%s\toneDNN\t1\tnot built with oneDNN (libdnnl-dev)\n", id);
  } else {
    printf("%-28s kiln %6.1f/%6.1f/%6.1f", id, flops / tk[rounds - 1] / 1e9, flops / km / 1e9,
           flops / tk[0] / 1e9);
    if (have_d)
      printf("  oneDNN %6.1f/%6.1f/%6.1f  ratio %.2f\n", flops / td[rounds - 1] / 1e9,
             flops / dm / 1e9, flops / td[0] / 1e9, dm / km);
    else
      printf("  oneDNN n/a (not built with it)\n");
  }
  fflush(stdout);
#ifdef KILN_BENCH_DNNL
  dnnl_teardown(&d);
#endif
  kiln_tensor_free(kc.x);
  kiln_tensor_free(kc.w);
  kiln_tensor_free(kc.y);
  kiln_model_free(kc.model);
  free(tk), free(td), free(x), free(w), free(y), free(y2);
}

int main(int argc, char **argv) {
  opts o = {0};
  int64_t batches[8] = {1, 8};
  const char *only[16];
  int nb = 2, given = 0, nonly = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      o.quick = true;
    } else if (strcmp(argv[i], "--tsv") == 0) {
      o.tsv = true;
    } else if (strcmp(argv[i], "--filter-input") == 0) {
      o.w_input = true;
    } else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc && given < 8) {
      batches[given++] = atoll(argv[++i]);
      nb = given;
    } else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc && nonly < 16) {
      only[nonly++] = argv[++i];
    } else {
      fprintf(stderr, "usage: bench_conv [--quick] [--tsv] [--filter-input] [--batch N]... "
                      "[--case TEXT]...\n");
      return 2;
    }
  }
  const char *omp = getenv("OMP_NUM_THREADS");
  if ((!omp || strcmp(omp, "1") != 0) && !getenv("KILN_BENCH_CONV_REEXEC")) {
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("KILN_BENCH_CONV_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    perror("bench_conv: re-exec with OMP_NUM_THREADS=1"); /* go on */
  }
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx || kiln_context_set_num_threads(ctx, 1, st) != 0) die("context", st);
  if (o.tsv)
    printf("M\tthreads\t1\nM\tfilter\t%s\n", o.w_input ? "input" : "weight");
  else
    printf("conv2d f32 NHWC, 1 thread, filter as a %s; GFLOP/s min/median/max; "
           "ratio = kiln / oneDNN (medians)\n", o.w_input ? "graph input" : "bound weight");
  for (int b = 0; b < nb; b++)
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
      const ccase *c = &CASES[i];
      char id[64];
      snprintf(id, sizeof id, "n%lld_%lldx%lld_%lld-%lld_%lldx%lld", (long long)batches[b],
               (long long)c->h, (long long)c->h, (long long)c->c, (long long)c->f,
               (long long)c->k, (long long)c->k);
      bool want = nonly == 0;
      for (int k = 0; k < nonly && !want; k++) want = strstr(id, only[k]) != NULL;
      if (want) run_case(ctx, batches[b], c, id, &o, st);
    }
  kiln_context_free(ctx);
  kiln_status_free(st);
  return 0;
}
