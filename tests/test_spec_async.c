/* test_spec_async.c - the async specialization policy (src/variants.c):
 * it is a new context's default; an execute with a new binding runs on the
 * generic variant at once and queues one background compile (deduplicated);
 * later executes use the variant once it is live, with the generic
 * variant's results; an artificially slow compile (rt_spec_set_test_delay)
 * delays no execute; a model freed while its compile is queued or running
 * is safe (jobs cancelled, no leak: run under ASan in CI); counters and
 * kiln_context_wait_compiles. Timing is checked loosely (seconds of slack)
 * or through counters, never tightly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/rt.h"
#include "src/variants.h"

#define MLP                                                                                     \
  "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 24], f32>, %w1: !mo.tensor<[24, 16], f32>) -> "  \
  "(!mo.tensor<[batch, 16], f32>) {\n"                                                          \
  "  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 24], f32>, !mo.tensor<[24, 16], f32>) -> "   \
  "!mo.tensor<[batch, 16], f32>\n"                                                              \
  "  %1 = mo.relu(%0) : !mo.tensor<[batch, 16], f32>\n"                                         \
  "  %2 = mo.softmax(%1) {axis = -1} : !mo.tensor<[batch, 16], f32>\n"                          \
  "  mo.output %2 : !mo.tensor<[batch, 16], f32>\n"                                             \
  "}\n"

#define RELU                                                                                  \
  "mo.graph @a<batch>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 8], f32>) {\n" \
  "  %y = mo.relu(%x) : !mo.tensor<[batch, 8], f32>\n"                                       \
  "  mo.output %y : !mo.tensor<[batch, 8], f32>\n"                                           \
  "}\n"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static float frand(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

typedef struct fx {
  kiln_status *st;
  kiln_context *ctx;
  kiln_graph *g;
} fx;

static void fx_init(fx *f, const char *text) {
  unsetenv("KILN_SPECIALIZE"); /* the built-in default */
  f->st = kiln_status_new();
  f->ctx = kiln_context_new(f->st);
  cr_assert_not_null(f->ctx, "%s", kiln_status_message(f->st));
  /* queue on first sight and keep every variant: counts that do not depend
   * on timing (test_spec_policy.c tests hotness and trials) */
  cr_assert_eq(kiln_context_set_specialize_hot(f->ctx, 1, f->st), 0);
  rt_spec_set_test_trial(f->ctx, RT_SPEC_TRIAL_KEEP);
  f->g = kiln_graph_parse(text, strlen(text), "test", f->st);
  cr_assert_not_null(f->g, "%s", kiln_status_message(f->st));
}

static void fx_free(fx *f) {
  kiln_graph_free(f->g);
  kiln_context_free(f->ctx);
  kiln_status_free(f->st);
}

static kiln_model *model(fx *f, int policy) {
  kiln_model *m = kiln_model_compile(f->ctx, f->g, f->st);
  cr_assert_not_null(m, "%s", kiln_status_message(f->st));
  if (policy >= 0) cr_assert_eq(kiln_model_set_specialize(m, (kiln_specialize_policy)policy, f->st), 0);
  return m;
}

/* Random inputs of the graph for batch b (every input: [b, k] or [k, n]). */
static int make_inputs(kiln_model *m, int64_t b, uint64_t seed, kiln_tensor **ins) {
  int n = kiln_model_num_inputs(m);
  for (int i = 0; i < n; i++) {
    int64_t shape[2];
    for (int a = 0; a < 2; a++) {
      int64_t d = kiln_model_input_dim_static(m, i, a);
      shape[a] = d >= 0 ? d : b;
    }
    ins[i] = kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL);
    float *v = kiln_tensor_data(ins[i]);
    for (int64_t e = 0; e < kiln_tensor_numel(ins[i]); e++) v[e] = frand(&seed);
  }
  return n;
}

static kiln_tensor *exec1(fx *f, kiln_model *m, kiln_tensor **ins, int nin) {
  kiln_tensor *out[1] = {0};
  cr_assert_eq(kiln_model_execute(m, ins, nin, out, 1, f->st), 0, "%s",
               kiln_status_message(f->st));
  return out[0];
}

static void assert_close(const kiln_tensor *a, const kiln_tensor *b) {
  cr_assert_eq(kiln_tensor_numel(a), kiln_tensor_numel(b));
  const float *x = kiln_tensor_data(a), *y = kiln_tensor_data(b);
  for (int64_t e = 0; e < kiln_tensor_numel(a); e++)
    cr_assert(fabsf(x[e] - y[e]) <= 1e-5f * (1 + fabsf(y[e])), "[%lld]: %g vs %g", (long long)e,
              x[e], y[e]);
}

Test(spec_async, is_the_default_of_a_new_context) {
  fx f;
  fx_init(&f, RELU);
  cr_assert_eq(kiln_context_specialize_policy(f.ctx), KILN_SPECIALIZE_ASYNC);
  setenv("KILN_SPECIALIZE", "sync", 1);
  kiln_context *c2 = kiln_context_new(f.st);
  cr_assert_eq(kiln_context_specialize_policy(c2), KILN_SPECIALIZE_SYNC);
  kiln_context_free(c2);
  unsetenv("KILN_SPECIALIZE");
  fx_free(&f);
}

Test(spec_async, serves_on_generic_until_the_variant_is_live) {
  fx f;
  fx_init(&f, MLP);
  kiln_model *gen = model(&f, KILN_SPECIALIZE_OFF);
  kiln_model *m = model(&f, -1); /* the context's: async */
  kiln_tensor *ins[2];
  int nin = make_inputs(m, 5, 11, ins);
  kiln_tensor *want = exec1(&f, gen, ins, nin);
  double deadline = now_ms() + 60000;
  int on_generic = 0;
  while (kiln_model_counter(m, KILN_COUNTER_HITS) < 1) {
    cr_assert(now_ms() < deadline, "the variant never became live");
    kiln_tensor *got = exec1(&f, m, ins, nin);
    assert_close(got, want); /* each run, generic or specialized */
    kiln_tensor_free(got);
    on_generic++;
    sleep_ms(2);
  }
  cr_assert_geq(on_generic, 1);
  kiln_tensor *got = exec1(&f, m, ins, nin);
  assert_close(got, want);
  kiln_tensor_free(got);
  cr_assert_eq(kiln_model_variants(m), 1);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_ASYNC_QUEUED), 1, "queued once (deduplicated)");
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_ASYNC_DONE), 1);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_ASYNC_PENDING), 0);
  cr_assert_geq(kiln_model_counter(m, KILN_COUNTER_MISSES), 1);
  cr_assert_geq(kiln_model_counter(m, KILN_COUNTER_HITS), 2);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT), 1);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_LIVE), 1);
  cr_assert_geq(kiln_model_counter(m, KILN_COUNTER_COMPILES), 1);
  cr_assert_gt(kiln_model_counter(m, KILN_COUNTER_COMPILE_MS), 0);
  cr_assert_eq(kiln_model_counter(gen, KILN_COUNTER_ASYNC_QUEUED), 0);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_DONE), 1);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_VARIANTS_LIVE), 1);
  cr_assert_eq(kiln_context_wait_compiles(f.ctx, 0, f.st), 0);
  for (int i = 0; i < nin; i++) kiln_tensor_free(ins[i]);
  kiln_tensor_free(want);
  kiln_model_free(m);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_VARIANTS_LIVE), 0);
  kiln_model_free(gen);
  fx_free(&f);
}

Test(spec_async, a_slow_compile_delays_no_execute) {
  fx f;
  fx_init(&f, RELU);
  rt_spec_set_test_delay(f.ctx, 4000); /* every background job takes >= 4 s */
  kiln_model *m = model(&f, KILN_SPECIALIZE_ASYNC);
  kiln_tensor *ins[1];
  make_inputs(m, 3, 5, ins);
  double t0 = now_ms();
  for (int r = 0; r < 20; r++) kiln_tensor_free(exec1(&f, m, ins, 1));
  double took = now_ms() - t0;
  /* had any execute waited for the compile, 20 of them would take >= 4 s */
  cr_assert_lt(took, 3000, "20 executes took %.0f ms", took);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_HITS), 0);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_MISSES), 20);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_ASYNC_QUEUED), 1);
  cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_ASYNC_PENDING), 1);
  cr_assert_eq(kiln_model_variants(m), 0);
  cr_assert_eq(kiln_context_wait_compiles(f.ctx, 10, f.st), 1, "still busy: a timeout");
  /* freed while its compile runs (in the delay): cancelled, returns promptly */
  t0 = now_ms();
  kiln_model_free(m);
  cr_assert_lt(now_ms() - t0, 3000);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_DROPPED), 1);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_PENDING), 0);
  cr_assert_eq(kiln_context_wait_compiles(f.ctx, -1, f.st), 0);
  kiln_tensor_free(ins[0]);
  fx_free(&f);
}

/* Kernels m got from anywhere: compiled, or found in a cache. */
static int64_t kernels_made(kiln_model *m) {
  return kiln_model_counter(m, KILN_COUNTER_COMPILES) +
         kiln_model_counter(m, KILN_COUNTER_KERNEL_HITS) +
         kiln_model_counter(m, KILN_COUNTER_DISK_HITS);
}

/* 60 ms of executes of m, each followed by a 20 us gap: the longest time
 * between two of them starting, in ms (over 1.5: the stream itself was
 * preempted, so the CPUs did look idle). */
static double stream(fx *f, kiln_model *m, kiln_tensor **ins, int nin) {
  double t0 = now_ms(), last = t0, worst_gap = 0;
  while (now_ms() - t0 < 60) {
    double t = now_ms();
    if (t - last > worst_gap) worst_gap = t - last;
    last = t;
    kiln_tensor_free(exec1(f, m, ins, nin));
    for (double g = now_ms(); now_ms() - g < 0.02;) {
    }
  }
  return worst_gap;
}

Test(spec_async, a_steady_stream_of_executes_holds_the_compile_back) {
  /* A decode's steps come back to back with microseconds between them: the
   * background compile waits while they keep coming, not only while one
   * runs at the instant it looks (variants.c, wait_quiet), and compiles
   * once they pause. The context's threads cover the CPUs, so the CPUs
   * count as taken on any machine. A stream preempted for a whole check
   * (a loaded machine) proves nothing: up to 5 tries, a fresh model each. */
  fx f;
  fx_init(&f, MLP);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cr_assert_eq(kiln_context_set_num_threads(f.ctx, (int)(ncpu < 64 ? ncpu : 64), f.st), 0);
  bool checked = false;
  for (int attempt = 0; attempt < 5 && !checked; attempt++) {
    kiln_model *m = model(&f, KILN_SPECIALIZE_ASYNC);
    kiln_tensor *ins[2];
    int nin = make_inputs(m, 5, 7, ins);
    int64_t before = kernels_made(m);
    double worst_gap = stream(&f, m, ins, nin);
    int64_t during = kernels_made(m) - before;
    cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_ASYNC_QUEUED), 1);
    if (worst_gap < 1.5) {
      cr_expect_eq(during, 0, "%lld kernels made while executes kept coming",
                   (long long)during);
      checked = true;
    } else {
      fprintf(stderr, "the stream paused %.1f ms (a loaded machine): tried again\n", worst_gap);
    }
    cr_assert_eq(kiln_context_wait_compiles(f.ctx, -1, f.st), 0); /* now quiet: it compiles */
    cr_assert_gt(kernels_made(m), before);
    cr_assert_eq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT), 1);
    for (int i = 0; i < nin; i++) kiln_tensor_free(ins[i]);
    kiln_model_free(m);
  }
  if (!checked) fprintf(stderr, "every stream was preempted: the wait was not checked\n");
  fx_free(&f);
}

Test(spec_async, model_freed_while_its_jobs_are_queued) {
  fx f;
  fx_init(&f, RELU);
  rt_spec_set_test_delay(f.ctx, 1500);
  kiln_model *a = model(&f, KILN_SPECIALIZE_ASYNC), *b = model(&f, KILN_SPECIALIZE_ASYNC);
  kiln_tensor *in[1];
  make_inputs(a, 2, 1, in);
  kiln_tensor_free(exec1(&f, a, in, 1)); /* a's job: taken by the thread */
  kiln_tensor_free(in[0]);
  sleep_ms(100);
  for (int64_t bb = 3; bb <= 5; bb++) { /* b's three jobs wait behind it */
    make_inputs(b, bb, 2, in);
    kiln_tensor_free(exec1(&f, b, in, 1));
    kiln_tensor_free(exec1(&f, b, in, 1)); /* the same binding again: not queued twice */
    kiln_tensor_free(in[0]);
  }
  cr_assert_eq(kiln_model_counter(b, KILN_COUNTER_ASYNC_QUEUED), 3);
  kiln_model_free(b); /* its queued jobs are cancelled */
  cr_assert_geq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_DROPPED), 3);
  kiln_model_free(a); /* its running job is cancelled */
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_PENDING), 0);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_DROPPED) +
                   kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_DONE),
               4);
  fx_free(&f); /* joins the thread */
}

Test(spec_async, model_freed_right_after_queueing_and_context_freed_at_once) {
  /* no delay: the free races with a real compile; ASan checks the rest */
  fx f;
  fx_init(&f, MLP);
  for (int round = 0; round < 3; round++) {
    kiln_model *m = model(&f, KILN_SPECIALIZE_ASYNC);
    kiln_tensor *ins[2];
    int nin = make_inputs(m, 2 + round, 3, ins);
    kiln_tensor_free(exec1(&f, m, ins, nin));
    for (int i = 0; i < nin; i++) kiln_tensor_free(ins[i]);
    kiln_model_free(m);
  }
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_PENDING), 0);
  cr_assert_eq(kiln_context_counter(f.ctx, KILN_COUNTER_ASYNC_QUEUED), 3);
  fx_free(&f);
}

Test(spec_async, counters_and_wait_reject_null) {
  cr_assert_eq(kiln_model_counter(NULL, KILN_COUNTER_HITS), -1);
  cr_assert_eq(kiln_context_counter(NULL, KILN_COUNTER_HITS), -1);
  fx f;
  fx_init(&f, RELU);
  cr_assert_eq(kiln_context_counter(f.ctx, (kiln_counter)99), -1);
  cr_assert_eq(kiln_context_wait_compiles(NULL, 0, f.st), -1);
  cr_assert_eq(kiln_context_wait_compiles(f.ctx, 0, f.st), 0, "idle: no thread yet");
  cr_assert_eq(kiln_context_set_specialize(f.ctx, KILN_SPECIALIZE_ASYNC, f.st), 0);
  cr_assert_eq(kiln_context_set_specialize(f.ctx, (kiln_specialize_policy)4, f.st), -1);
  cr_assert_not_null(strstr(kiln_status_message(f.st), "async 3"));
  fx_free(&f);
}
