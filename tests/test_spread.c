/* test_spread.c - rt_spread_run (src/spread.h): every item runs exactly
 * once whatever the thread count, a failing item is reported while the
 * others still run, and a model's quick kernels compiled that way (a
 * 1-thread context) give the results of a full compile. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kiln/kiln.h"
#include "src/spread.h"

#define ITEMS 1000

typedef struct counts {
  atomic_int runs[ITEMS];
  int fail_at; /* -1: none */
} counts;

static int count_item(void *arg, int k) {
  counts *c = arg;
  atomic_fetch_add(&c->runs[k], 1);
  return k == c->fail_at ? -1 : 0;
}

Test(spread, every_item_once_at_any_thread_count) {
  int threads[] = {1, 2, 3, 8, RT_SPREAD_MAX + 5};
  for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
    static counts c;
    memset(&c, 0, sizeof c);
    c.fail_at = -1;
    cr_assert_eq(rt_spread_run(count_item, &c, ITEMS, threads[t]), 0);
    for (int k = 0; k < ITEMS; k++)
      cr_assert_eq(atomic_load(&c.runs[k]), 1, "item %d ran %d times on %d threads", k,
                   atomic_load(&c.runs[k]), threads[t]);
  }
  static counts none;
  cr_assert_eq(rt_spread_run(count_item, &none, 0, 4), 0); /* nothing to do */
}

Test(spread, a_failure_is_reported_and_the_rest_still_run) {
  static counts c;
  memset(&c, 0, sizeof c);
  c.fail_at = 17;
  cr_assert_eq(rt_spread_run(count_item, &c, ITEMS, 4), -1);
  for (int k = 0; k < ITEMS; k++) cr_assert_eq(atomic_load(&c.runs[k]), 1);
  cr_assert_geq(rt_spread_cpus(), 1);
}

/* Eight kernels (tanh, exp, softmax... over [n, 8]), compiled quick on a
 * context of one thread, then run against the same graph compiled at
 * full on another context. */
static const char *CHAIN =
    "mo.graph @c<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
    "  %a = mo.tanh(%x) : !mo.tensor<[n, 8], f32>\n"
    "  %b = mo.softmax(%a) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  %c = mo.exp(%b) : !mo.tensor<[n, 8], f32>\n"
    "  %d = mo.softmax(%c) {axis = 0} : !mo.tensor<[n, 8], f32>\n"
    "  %e = mo.sin(%d) : !mo.tensor<[n, 8], f32>\n"
    "  %f = mo.logsoftmax(%e) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  %g = mo.cos(%f) : !mo.tensor<[n, 8], f32>\n"
    "  %h = mo.softmax(%g) {axis = 0} : !mo.tensor<[n, 8], f32>\n"
    "  mo.output %h : !mo.tensor<[n, 8], f32>\n}\n";

static void run_chain(int threads, int tier_up, float out[40], double *quick) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, st), 0);
  cr_assert_eq(kiln_context_set_num_threads(ctx, threads, st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, tier_up, st), 0);
  kiln_graph *g = kiln_graph_parse(CHAIN, strlen(CHAIN), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  *quick = kiln_model_counter(m, KILN_COUNTER_QUICK_KERNELS);
  int64_t shape[2] = {5, 8};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, shape, st), *y = NULL;
  float *xd = kiln_tensor_data(x);
  for (int i = 0; i < 40; i++) xd[i] = (float)(i % 7) * 0.3f - 1.0f;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  memcpy(out, kiln_tensor_data(y), 40 * sizeof *out);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(spread, quick_kernels_compiled_on_every_cpu_match_full_ones) {
  float quick_out[40], full_out[40];
  double quick = 0, none = 0;
  run_chain(1, 4, quick_out, &quick);
  run_chain(1, 0, full_out, &none);
  cr_expect_geq(quick, 4, "quick kernels: %g", quick);
  cr_expect_eq(none, 0);
  for (int i = 0; i < 40; i++)
    cr_expect(fabsf(quick_out[i] - full_out[i]) <= 1e-5f * fabsf(full_out[i]) + 1e-6f,
              "out[%d]: %.9g vs %.9g", i, (double)quick_out[i], (double)full_out[i]);
}
