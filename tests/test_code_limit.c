/* test_code_limit.c - the bound on loaded code (kiln_context_set_code_limit,
 * KILN_CODE_MAX_BYTES; src/cache_mem.c): kernels no model or variant
 * references are unloaded least recently used first once their code
 * passes the bound; referenced kernels never are; a model over many shapes
 * under sync keeps the loaded entries bounded; an unloaded kernel comes
 * back (recompiled, or reloaded from the disk cache) and gives the same
 * bits; the bound applies at once; the environment variable and its
 * errors; the public counters; and threads that compile, run and free one
 * model at once under a bound of 0 (get racing eviction).
 *
 * Contexts here have no disk cache unless a test gives them a temporary
 * one, so "compiles" counts every production of a kernel. */
#define _GNU_SOURCE /* mkdtemp, nftw */
#include <criterion/criterion.h>
#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/cache_mem.h"

/* One fused kernel (the chain is elementwise); the exp and tanh make the
 * bits depend on the code, not just on a copy. */
#define CHAIN                                                                                \
  "mo.graph @chain<batch>(%x: !mo.tensor<[batch, 8], f32>) -> "                              \
  "(!mo.tensor<[batch, 8], f32>) {\n"                                                        \
  "  %a = mo.exp(%x) : !mo.tensor<[batch, 8], f32>\n"                                        \
  "  %b = mo.tanh(%a) : !mo.tensor<[batch, 8], f32>\n"                                       \
  "  %c = mo.mul(%b, %x) : !mo.tensor<[batch, 8], f32>\n"                                    \
  "  mo.output %c : !mo.tensor<[batch, 8], f32>\n"                                           \
  "}\n"

/* Two unfused kernels: a matmul and a softmax. */
#define TWO                                                                                  \
  "mo.graph @two<n>(%x: !mo.tensor<[n, 8], f32>, %w: !mo.tensor<[8, 8], f32>) -> "           \
  "(!mo.tensor<[n, 8], f32>) {\n"                                                            \
  "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8, 8], f32>) -> "        \
  "!mo.tensor<[n, 8], f32>\n"                                                                \
  "  %s = mo.softmax(%m) {axis = -1} : !mo.tensor<[n, 8], f32>\n"                            \
  "  mo.output %s : !mo.tensor<[n, 8], f32>\n"                                               \
  "}\n"

typedef struct fx {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *g;
} fx;

static void fx_init(fx *f, const char *text, kiln_specialize_policy policy) {
  f->st = kiln_status_new();
  f->ctx = kiln_context_new(f->st);
  cr_assert_not_null(f->ctx, "%s", kiln_status_message(f->st));
  cr_assert_eq(kiln_context_set_cache_dir(f->ctx, NULL, 0, f->st), 0, "%s",
               kiln_status_message(f->st));
  cr_assert_eq(kiln_context_set_specialize(f->ctx, policy, f->st), 0);
  f->g = kiln_graph_parse(text, strlen(text), "test", f->st);
  cr_assert_not_null(f->g, "%s", kiln_status_message(f->st));
}

static void fx_fini(fx *f) {
  kiln_graph_free(f->g);
  kiln_context_free(f->ctx);
  kiln_status_free(f->st);
}

static rt_cache_stats stats(kiln_context *ctx) {
  rt_cache_stats s;
  rt_cache_mem_stats(rt_context_cache(ctx), &s);
  return s;
}

static kiln_model *compile(fx *f) {
  kiln_model *m = kiln_model_compile(f->ctx, f->g, f->st);
  cr_assert_not_null(m, "%s", kiln_status_message(f->st));
  return m;
}

/* Run m on every input filled with a seeded pattern (input i of rank 2 with
 * shapes[i]); the first output is returned (caller frees). */
static kiln_tensor *run(fx *f, kiln_model *m, const int64_t (*shapes)[2], int nin) {
  kiln_tensor *in[2] = {0};
  for (int i = 0; i < nin; i++) {
    in[i] = kiln_tensor_new(KILN_FLOAT32, 2, shapes[i], f->st);
    cr_assert_not_null(in[i]);
    float *v = kiln_tensor_data(in[i]);
    for (int64_t k = 0; k < kiln_tensor_numel(in[i]); k++)
      v[k] = (float)((k * 37 + i * 11) % 23) / 7.0f - 1.5f;
  }
  kiln_tensor *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, in, nin, out, 1, f->st), 0, "%s",
               kiln_status_message(f->st));
  for (int i = 0; i < nin; i++) kiln_tensor_free(in[i]);
  return out[0];
}

static void expect_same_bits(const kiln_tensor *a, const kiln_tensor *b, const char *what) {
  cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b), "%s: sizes", what);
  cr_expect(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)) == 0,
            "%s: results differ", what);
}

/* ---- the bound ---- */

Test(code_limit, limit_zero_keeps_only_referenced_kernels_under_sync) {
  fx f;
  fx_init(&f, CHAIN, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, 2, f.st), 0);
  kiln_model *m = compile(&f);
  for (int64_t b = 1; b <= 40; b++) {
    const int64_t sh[1][2] = {{b, 8}};
    kiln_tensor_free(run(&f, m, sh, 1));
    rt_cache_stats s = stats(f.ctx);
    /* the generic kernel and one per live variant (at most 2) */
    cr_assert_leq(s.entries, 3, "batch %lld: %d entries loaded", (long long)b, s.entries);
    cr_assert_eq(s.idle_entries, 0);
    cr_assert_eq(s.idle_bytes, 0);
  }
  rt_cache_stats s = stats(f.ctx);
  cr_expect_eq(s.compiles, 41, "the generic kernel and one per shape");
  cr_expect_eq(s.evicted, 38, "every shape's kernel but the 2 live variants'");
  cr_expect_gt(s.code_bytes, 0);
  kiln_model_free(m);
  s = stats(f.ctx);
  cr_expect_eq(s.entries, 0, "nothing referenced: nothing loaded");
  cr_expect_eq(s.code_bytes, 0);
  cr_expect_eq(s.evicted, 41);
  fx_fini(&f);
}

Test(code_limit, small_limit_keeps_unreferenced_code_under_it) {
  fx f;
  fx_init(&f, CHAIN, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, 1, f.st), 0);
  kiln_model *m = compile(&f);
  uint64_t one = stats(f.ctx).code_bytes; /* the generic kernel */
  cr_assert_gt(one, 0);
  size_t limit = (size_t)(3 * one);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, limit, f.st), 0);
  int most = 0;
  for (int64_t b = 1; b <= 40; b++) {
    const int64_t sh[1][2] = {{b, 8}};
    kiln_tensor_free(run(&f, m, sh, 1));
    rt_cache_stats s = stats(f.ctx);
    cr_assert_leq(s.idle_bytes, limit, "batch %lld", (long long)b);
    cr_assert_leq(s.entries - s.idle_entries, 2, "the generic kernel and 1 live variant");
    if (s.entries > most) most = s.entries;
  }
  rt_cache_stats s = stats(f.ctx);
  cr_expect_geq(s.idle_entries, 1, "some unreferenced code is kept");
  cr_expect_lt(most, 20, "at most %d entries loaded at once out of 41 compiled", most);
  cr_expect_eq(s.compiles, 41);
  cr_expect_eq(s.evicted, (uint64_t)(41 - s.entries));
  kiln_model_free(m);
  s = stats(f.ctx);
  cr_expect_leq(s.idle_bytes, limit);
  cr_expect_eq(s.entries, s.idle_entries);
  fx_fini(&f);
}

Test(code_limit, least_recently_released_goes_first) {
  fx f;
  fx_init(&f, CHAIN, KILN_SPECIALIZE_AHEAD);
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, 1, f.st), 0);
  kiln_model *m = compile(&f);
  /* under ahead, a variant is made only by kiln_model_specialize: each new
   * one evicts the previous (bound 1), whose kernel becomes unreferenced */
  const char *sym[1] = {"batch"};
  for (int64_t b = 1; b <= 3; b++) cr_assert_eq(kiln_model_specialize(m, sym, &b, 1, f.st), 0);
  rt_cache_stats s = stats(f.ctx);
  cr_assert_eq(s.entries, 4);
  cr_assert_eq(s.idle_entries, 2, "the variants of 1 and 2");
  cr_assert_eq(s.evicted, 0, "the default bound keeps them");
  /* a bound just under the two: the older one (batch 1) goes */
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, (size_t)s.idle_bytes - 1, f.st), 0);
  s = stats(f.ctx);
  cr_assert_eq(s.evicted, 1);
  cr_assert_eq(s.idle_entries, 1);
  uint64_t compiles = s.compiles;
  int64_t two = 2;
  cr_assert_eq(kiln_model_specialize(m, sym, &two, 1, f.st), 0);
  cr_expect_eq(stats(f.ctx).compiles, compiles, "batch 2 was kept: a hit");
  int64_t one = 1;
  cr_assert_eq(kiln_model_specialize(m, sym, &one, 1, f.st), 0);
  cr_expect_eq(stats(f.ctx).compiles, compiles + 1, "batch 1 was unloaded: compiled again");
  kiln_model_free(m);
  fx_fini(&f);
}

Test(code_limit, referenced_kernels_stay_loaded) {
  fx f;
  fx_init(&f, TWO, KILN_SPECIALIZE_OFF);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  kiln_model *a = compile(&f), *b = compile(&f);
  rt_cache_stats s = stats(f.ctx);
  cr_assert_eq(s.entries, 2);
  const int64_t sh[2][2] = {{5, 8}, {8, 8}};
  kiln_tensor *before = run(&f, b, sh, 2);
  kiln_model_free(a); /* b still holds both kernels */
  s = stats(f.ctx);
  cr_expect_eq(s.entries, 2);
  cr_expect_eq(s.evicted, 0);
  kiln_tensor *after = run(&f, b, sh, 2);
  expect_same_bits(before, after, "b after a was freed");
  kiln_model_free(b);
  s = stats(f.ctx);
  cr_expect_eq(s.entries, 0);
  cr_expect_eq(s.evicted, 2);
  kiln_tensor_free(before);
  kiln_tensor_free(after);
  fx_fini(&f);
}

Test(code_limit, set_limit_unloads_at_once) {
  fx f;
  fx_init(&f, TWO, KILN_SPECIALIZE_OFF);
  kiln_model *m = compile(&f);
  kiln_model_free(m);
  rt_cache_stats s = stats(f.ctx);
  cr_assert_eq(s.entries, 2, "kept under the default bound");
  cr_assert_eq(s.idle_entries, 2);
  cr_assert_eq(rt_cache_mem_limit(rt_context_cache(f.ctx)), RT_CODE_LIMIT_DEFAULT);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  s = stats(f.ctx);
  cr_expect_eq(s.entries, 0);
  cr_expect_eq(s.evicted, 2);
  cr_expect_eq(s.code_bytes, 0);
  cr_expect_eq(kiln_context_set_code_limit(NULL, 0, f.st), -1);
  cr_expect_eq(kiln_status_code(f.st), KILN_ERR_INVALID_ARGUMENT);
  fx_fini(&f);
}

/* ---- what comes back is the same code ---- */

Test(code_limit, evicted_kernel_is_recompiled_with_the_same_bits) {
  fx f;
  fx_init(&f, TWO, KILN_SPECIALIZE_OFF);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  const int64_t sh[2][2] = {{7, 8}, {8, 8}};
  kiln_model *m = compile(&f);
  kiln_tensor *first = run(&f, m, sh, 2);
  kiln_model_free(m);
  rt_cache_stats s = stats(f.ctx);
  cr_assert_eq(s.entries, 0);
  cr_assert_eq(s.compiles, 2);
  m = compile(&f);
  s = stats(f.ctx);
  cr_expect_eq(s.compiles, 4, "both kernels compiled again");
  cr_expect_eq(s.hits, 0);
  kiln_tensor *again = run(&f, m, sh, 2);
  expect_same_bits(first, again, "recompiled");
  kiln_model_free(m);
  kiln_tensor_free(first);
  kiln_tensor_free(again);
  fx_fini(&f);
}

Test(code_limit, evicted_variant_kernel_is_recompiled_with_the_same_bits) {
  fx f;
  fx_init(&f, CHAIN, KILN_SPECIALIZE_SYNC);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  cr_assert_eq(kiln_context_set_max_variants(f.ctx, 1, f.st), 0);
  kiln_model *m = compile(&f);
  const int64_t s3[1][2] = {{3, 8}}, s4[1][2] = {{4, 8}};
  kiln_tensor *first = run(&f, m, s3, 1); /* variant batch=3 */
  kiln_tensor_free(run(&f, m, s4, 1));    /* evicts it: its kernel is unloaded */
  rt_cache_stats s = stats(f.ctx);
  cr_assert_eq(s.evicted, 1);
  kiln_tensor *again = run(&f, m, s3, 1); /* batch=3 again: compiled afresh */
  cr_expect_eq(stats(f.ctx).compiles, s.compiles + 1);
  expect_same_bits(first, again, "batch 3 recompiled");
  kiln_model_free(m);
  kiln_tensor_free(first);
  kiln_tensor_free(again);
  fx_fini(&f);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

Test(code_limit, evicted_kernel_reloads_from_disk_with_the_same_bits) {
  fx f;
  fx_init(&f, TWO, KILN_SPECIALIZE_OFF);
  char dir[] = "/tmp/kiln-code-limit-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cr_assert_eq(kiln_context_set_cache_dir(f.ctx, dir, 0, f.st), 0, "%s",
               kiln_status_message(f.st));
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  const int64_t sh[2][2] = {{6, 8}, {8, 8}};
  kiln_model *m = compile(&f);
  kiln_tensor *first = run(&f, m, sh, 2);
  kiln_model_free(m);
  rt_cache_stats s = stats(f.ctx);
  cr_assert_eq(s.entries, 0);
  cr_assert_eq(s.compiles, 2);
  m = compile(&f);
  s = stats(f.ctx);
  cr_expect_eq(s.compiles, 2, "nothing compiled again");
  cr_expect_eq(s.backing_hits, 2, "both kernels loaded from disk");
  kiln_tensor *again = run(&f, m, sh, 2);
  expect_same_bits(first, again, "reloaded");
  kiln_model_free(m);
  kiln_tensor_free(first);
  kiln_tensor_free(again);
  fx_fini(&f);
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* ---- configuration and counters ---- */

Test(code_limit, environment_sets_the_bound) {
  kiln_status *st = kiln_status_new();
  setenv("KILN_CODE_MAX_BYTES", "3K", 1);
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_expect_eq(rt_cache_mem_limit(rt_context_cache(ctx)), 3072);
  kiln_context_free(ctx);
  setenv("KILN_CODE_MAX_BYTES", "0", 1);
  ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_expect_eq(rt_cache_mem_limit(rt_context_cache(ctx)), 0);
  kiln_context_free(ctx);
  setenv("KILN_CODE_MAX_BYTES", "16MiB", 1);
  ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_expect_eq(rt_cache_mem_limit(rt_context_cache(ctx)), (size_t)16 << 20);
  kiln_context_free(ctx);
  unsetenv("KILN_CODE_MAX_BYTES");
  ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_expect_eq(rt_cache_mem_limit(rt_context_cache(ctx)), RT_CODE_LIMIT_DEFAULT);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(code_limit, malformed_environment_is_an_error) {
  const char *bad[] = {"lots", "12Q", "-5", "64 M", "99999999999999999999"};
  kiln_status *st = kiln_status_new();
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("KILN_CODE_MAX_BYTES", bad[i], 1);
    kiln_context *ctx = kiln_context_new(st);
    cr_expect_null(ctx, "'%s' accepted", bad[i]);
    kiln_context_free(ctx);
    cr_expect_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT, "'%s'", bad[i]);
    cr_expect(strstr(kiln_status_message(st), "KILN_CODE_MAX_BYTES") != NULL, "'%s': %s", bad[i],
              kiln_status_message(st));
  }
  unsetenv("KILN_CODE_MAX_BYTES");
  kiln_status_free(st);
}

Test(code_limit, context_counters_report_evictions_and_code_bytes) {
  fx f;
  fx_init(&f, TWO, KILN_SPECIALIZE_OFF);
  kiln_model *m = compile(&f);
  rt_cache_stats s = stats(f.ctx);
  cr_expect_eq(kiln_context_counter(f.ctx, KILN_COUNTER_CODE_BYTES), (double)s.code_bytes);
  cr_expect_gt(kiln_context_counter(f.ctx, KILN_COUNTER_CODE_BYTES), 0);
  cr_expect_eq(kiln_context_counter(f.ctx, KILN_COUNTER_KERNELS_EVICTED), 0);
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_KERNELS_EVICTED), 0, "context only");
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_CODE_BYTES), 0, "context only");
  kiln_model_free(m);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  cr_expect_eq(kiln_context_counter(f.ctx, KILN_COUNTER_KERNELS_EVICTED), 2);
  cr_expect_eq(kiln_context_counter(f.ctx, KILN_COUNTER_CODE_BYTES), 0);
  fx_fini(&f);
}

/* ---- threads ---- */

typedef struct racer {
  fx *f;
  const kiln_tensor *want;
  int rounds;
  int bad; /* results that differed */
} racer;

/* Compile, run and free the model again and again: with a bound of 0 each
 * free unloads the kernels another thread may be getting at that moment. */
static void *race(void *p) {
  racer *r = p;
  kiln_status *st = kiln_status_new();
  const int64_t sh[2][2] = {{9, 8}, {8, 8}};
  fx local = *r->f;
  local.st = st;
  for (int i = 0; i < r->rounds; i++) {
    kiln_model *m = kiln_model_compile(local.ctx, local.g, st);
    if (!m) {
      r->bad++;
      continue;
    }
    kiln_tensor *out = run(&local, m, sh, 2);
    if (memcmp(kiln_tensor_data(out), kiln_tensor_data(r->want), kiln_tensor_nbytes(out)) != 0)
      r->bad++;
    kiln_tensor_free(out);
    kiln_model_free(m);
  }
  kiln_status_free(st);
  return NULL;
}

Test(code_limit, threads_racing_gets_and_evictions_get_working_code) {
  fx f;
  fx_init(&f, TWO, KILN_SPECIALIZE_OFF);
  const int64_t sh[2][2] = {{9, 8}, {8, 8}};
  kiln_model *m = compile(&f);
  kiln_tensor *want = run(&f, m, sh, 2);
  kiln_model_free(m);
  cr_assert_eq(kiln_context_set_code_limit(f.ctx, 0, f.st), 0);
  enum { NT = 4 };
  pthread_t th[NT];
  racer r[NT];
  for (int t = 0; t < NT; t++) {
    r[t] = (racer){&f, want, 25, 0};
    cr_assert_eq(pthread_create(&th[t], NULL, race, &r[t]), 0);
  }
  for (int t = 0; t < NT; t++) {
    pthread_join(th[t], NULL);
    cr_expect_eq(r[t].bad, 0, "thread %d: %d bad rounds", t, r[t].bad);
  }
  rt_cache_stats s = stats(f.ctx);
  cr_expect_eq(s.entries, 0);
  cr_expect_eq(s.code_bytes, 0);
  cr_expect_gt(s.evicted, 2);
  kiln_tensor_free(want);
  fx_fini(&f);
}
