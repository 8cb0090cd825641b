/* test_conv_prebuilt.c - conv2d kernels built at the quick tier call the
 * prebuilt direct conv (jit/conv.c, kernels-templates/conv.c built at
 * x86-64-v4) with their geometry as run-time arguments; the full tier
 * inlines the same template with the sizes folded. Both must give the same
 * bits for every geometry the direct kernel takes (3x3 with padding,
 * strides, dilation and uneven padding, a strided 1x1, channel counts past
 * one channel block and odd filter counts, a bias), and the full kernels
 * match the reference interpreter (test_prepack checks that part in
 * depth; here a tolerance check guards the pair against a shared slip).
 * On hosts without AVX-512 both tiers run im2col + the GEMM: the test then
 * checks the same equalities on that path. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"
#include "src/variants.h"
#include "support/note.h"
#include "support/oracle.h"

#define NB 2 /* batch */

typedef struct geo {
  int h, w, c, f, k;      /* input H x W x C, F filters of k x k */
  int sh, sw, dh, dw;     /* strides, dilations */
  int pt, pb, pl, pr;     /* padding */
  bool bias;
} geo;

static const geo GEOS[] = {
    {9, 11, 8, 40, 3, 1, 1, 1, 1, 1, 1, 1, 1, true},      /* 3x3 same, two panels (40 > 32) */
    {12, 10, 130, 33, 3, 2, 1, 1, 2, 0, 2, 1, 0, false},  /* strides, dilation, uneven pads,
                                                             two channel blocks */
    {10, 10, 16, 64, 1, 2, 2, 1, 1, 0, 0, 0, 0, true},    /* strided 1x1 */
    {7, 7, 64, 17, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},     /* 7x7, odd F */
};
#define NGEO (int)(sizeof GEOS / sizeof GEOS[0])

static int out_dim(int n, int k, int s, int d, int p0, int p1) {
  return (n + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

/* Append a dense f32 constant of `count` deterministic values. */
static void dense(char **p, const char *name, int count, const char *dense_dims,
                  const char *type_dims, unsigned seed) {
  *p += sprintf(*p, "  %%%s = mo.constant {value = #M.dense_array<", name);
  for (int i = 0; i < count; i++)
    *p += sprintf(*p, "%s%.4f", i ? ", " : "", (double)((int)((i * 37u + seed) % 41u) - 20) / 40.0);
  *p += sprintf(*p, "> : tensor<%sf32>} : !mo.tensor<[%s], f32>\n", dense_dims, type_dims);
}

/* One graph per geometry: x input, filter and bias constants (so the
 * runtime prepacks the filter at compile). */
static char *graph_text(const geo *g) {
  char *text = malloc(1 << 22), *p = text;
  cr_assert_not_null(text);
  int ho = out_dim(g->h, g->k, g->sh, g->dh, g->pt, g->pb);
  int wo = out_dim(g->w, g->k, g->sw, g->dw, g->pl, g->pr);
  char xt[64], ft[64], fd[64], yt[64], bt[16], bd[16];
  snprintf(xt, sizeof xt, "%d, %d, %d, %d", NB, g->h, g->w, g->c);
  snprintf(ft, sizeof ft, "%d, %d, %d, %d", g->k, g->k, g->c, g->f);
  snprintf(fd, sizeof fd, "%dx%dx%dx%dx", g->k, g->k, g->c, g->f);
  snprintf(yt, sizeof yt, "%d, %d, %d, %d", NB, ho, wo, g->f);
  snprintf(bt, sizeof bt, "%d", g->f);
  snprintf(bd, sizeof bd, "%dx", g->f);
  p += sprintf(p, "mo.graph @conv(%%x: !mo.tensor<[%s], f32>) -> (!mo.tensor<[%s], f32>) {\n",
               xt, yt);
  dense(&p, "w", g->k * g->k * g->c * g->f, fd, ft, 7);
  if (g->bias) dense(&p, "b", g->f, bd, bt, 3);
  char btype[48] = "";
  if (g->bias) snprintf(btype, sizeof btype, ", !mo.tensor<[%s], f32>", bt);
  p += sprintf(p,
               "  %%y = mo.conv2d(%%x, %%w%s) {stride = [%d, %d], dilation = [%d, %d], "
               "padding = [%d, %d, %d, %d]} : (!mo.tensor<[%s], f32>, !mo.tensor<[%s], f32>%s) "
               "-> !mo.tensor<[%s], f32>\n",
               g->bias ? ", %b" : "", g->sh, g->sw, g->dh, g->dw, g->pt, g->pb, g->pl, g->pr, xt,
               ft, btype, yt);
  p += sprintf(p, "  mo.output %%y : !mo.tensor<[%s], f32>\n}\n", yt);
  return text;
}

/* Run the graph on a context whose tier-up threshold is min_kernels (0:
 * every kernel full); *quick gets the model's quick kernel count. The
 * result is malloc'd. */
static float *run_tier(const char *text, const geo *g, int min_kernels, double *quick,
                       int64_t *count) {
  kiln_status *st = kiln_status_new();
  kiln_graph *gr = kiln_graph_parse(text, strlen(text), "conv", st);
  cr_assert_not_null(gr, "%s", kiln_status_message(st));
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, min_kernels, st), 0);
  rt_spec_set_test_delay(ctx, 60000); /* the quick kernel stays live for the execute */
  kiln_model *m = kiln_model_compile(ctx, gr, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  *quick = kiln_model_counter(m, KILN_COUNTER_QUICK_LIVE);
  int64_t xs[4] = {NB, g->h, g->w, g->c};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 4, xs, st), *y = NULL;
  cr_assert_not_null(x);
  float *xd = kiln_tensor_data(x);
  for (int64_t i = 0; i < (int64_t)NB * g->h * g->w * g->c; i++)
    xd[i] = (float)((int)((i * 29) % 23) - 11) / 11.0f;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  *count = 1;
  for (int i = 0; i < 4; i++) *count *= kiln_tensor_shape(y)[i];
  float *out = malloc((size_t)*count * sizeof *out);
  cr_assert_not_null(out);
  memcpy(out, kiln_tensor_data(y), (size_t)*count * sizeof *out);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  rt_spec_set_test_delay(ctx, 0);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(gr);
  kiln_status_free(st);
  return out;
}

Test(conv_prebuilt, quick_kernels_give_the_full_kernels_bits) {
  for (int i = 0; i < NGEO; i++) {
    char *text = graph_text(&GEOS[i]);
    double quick_q, quick_f;
    int64_t nq, nf;
    float *q = run_tier(text, &GEOS[i], 1, &quick_q, &nq);
    float *f = run_tier(text, &GEOS[i], 0, &quick_f, &nf);
    cr_expect_eq(quick_q, 1, "geometry %d: the conv kernel was not built quick (%g)", i, quick_q);
    cr_expect_eq(quick_f, 0, "geometry %d: tier-up off built a quick kernel", i);
    cr_assert_eq(nq, nf);
    int64_t bad = 0, first = -1;
    for (int64_t e = 0; e < nq; e++)
      if (memcmp(&q[e], &f[e], sizeof *q) != 0 && bad++ == 0) first = e;
    cr_expect_eq(bad, 0, "geometry %d: %lld of %lld elements differ, first %lld: %.9g vs %.9g", i,
                 (long long)bad, (long long)nq, (long long)first,
                 first >= 0 ? (double)q[first] : 0.0, first >= 0 ? (double)f[first] : 0.0);
    free(q);
    free(f);
    /* the full kernel against the reference interpreter */
    oracle_case c = {.label = "conv2d (full kernel)", .mlir = text, .seed = 11, .rtol = 1e-4,
                     .atol = 1e-5};
    ORACLE_ASSERT(&c);
    free(text);
  }
}
