/* test_spec_policy.c - what the async policy specializes (spec_policy.h,
 * variants.c): bindings only once hot, variants dropped after a trial
 * that shows no gain, pow2 buckets for symbols that vary widely, GEMMs
 * never specialized on the host; and the bookkeeping itself (windows,
 * slots, tickets). Trial outcomes are forced through the test hook where a
 * count depends on them, so nothing here depends on timing. */
#include <criterion/criterion.h>
#include <string.h>

#include "kiln/kiln.h"
#include "src/rt.h"
#include "src/spec_policy.h"
#include "src/spec_prep.h"
#include "src/variants.h"

/* tanh fuses into nothing it could share with softmax: two kernels that
 * read n, both worth specializing */
static const char *SOFT =
    "mo.graph @s<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
    "  %y = mo.tanh(%x) : !mo.tensor<[n, 8], f32>\n"
    "  %z = mo.softmax(%y) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  mo.output %z : !mo.tensor<[n, 8], f32>\n}\n";

/* two softmaxes: two kernels, and an intermediate (%y) the planner places */
static const char *TWO_SOFT =
    "mo.graph @t<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
    "  %y = mo.softmax(%x) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  %z = mo.softmax(%y) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  mo.output %z : !mo.tensor<[n, 8], f32>\n}\n";

static const char *GEMM =
    "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f32>, %w: !mo.tensor<[8, 4], f32>) -> "
    "(!mo.tensor<[n, 4], f32>) {\n"
    "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8, 4], f32>) -> "
    "!mo.tensor<[n, 4], f32>\n"
    "  %r = mo.relu(%m) : !mo.tensor<[n, 4], f32>\n"
    "  mo.output %r : !mo.tensor<[n, 4], f32>\n}\n";

static kiln_status *st;
static kiln_context *ctx;

static void setup(void) {
  st = kiln_status_new();
  ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
}

static void teardown(void) {
  kiln_context_free(ctx);
  kiln_status_free(st);
}

TestSuite(spec_policy, .init = setup, .fini = teardown);

static kiln_model *model(const char *text, kiln_specialize_policy p) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, p, st), 0);
  return m;
}

/* Execute m (one or two inputs: x [n, 8], w [8, 4]) with n rows. */
static void exec_n(kiln_model *m, int64_t n) {
  int64_t xs[2] = {n, 8}, ws[2] = {8, 4};
  kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, st),
                        kiln_tensor_new(KILN_FLOAT32, 2, ws, st)};
  float *x = kiln_tensor_data(in[0]);
  for (int64_t i = 0; i < n * 8; i++) x[i] = (float)(i % 5) - 2.0f;
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, in, kiln_model_num_inputs(m), &out, 1, st), 0, "%s",
               kiln_status_message(st));
  kiln_tensor_free(out);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
}

static double counter(kiln_model *m, kiln_counter c) { return kiln_model_counter(m, c); }

Test(spec_policy, a_binding_is_specialized_once_hot) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  exec_n(m, 4);
  exec_n(m, 4);
  cr_expect_eq(counter(m, KILN_COUNTER_COLD), 2);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 0);
  exec_n(m, 4); /* the third: hot */
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 1);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(kiln_model_variants(m), 1);
  exec_n(m, 4);
  cr_expect_eq(counter(m, KILN_COUNTER_HITS), 1);
  exec_n(m, 5); /* another binding: cold again */
  cr_expect_eq(counter(m, KILN_COUNTER_COLD), 3);
  kiln_model_free(m);
}

Test(spec_policy, a_variant_that_does_not_pay_is_dropped_for_good) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_DROP);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  exec_n(m, 6);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(kiln_model_variants(m), 1);
  for (int i = 0; i < RT_SPEC_TRIAL; i++) exec_n(m, 6); /* the trial */
  cr_expect_eq(counter(m, KILN_COUNTER_DROPPED), 1);
  cr_expect_eq(kiln_model_variants(m), 0);
  for (int i = 0; i < 5; i++) exec_n(m, 6);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 1); /* never again */
  cr_expect_eq(kiln_model_variants(m), 0);
  kiln_model_free(m);
}

/* A dropped variant is handed to the prepare thread to free (its code's
 * removal waits for the JIT's lock), where the thread runs (from round 2: a
 * bucket set starts it; before, the execute frees it): a model freed right
 * after the drop, its reap still queued or running, frees it itself exactly
 * once (the sanitizer builds see a leak or a double free), and one whose
 * reap ran has nothing left. */
Test(spec_policy, a_dropped_variant_is_freed_once_whether_its_reap_ran_or_not) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_DROP);
  for (int round = 0; round < 6; round++) {
    kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
    if (round >= 2) cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_EXACT, 0, st), 0);
    exec_n(m, 6);
    cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
    for (int i = 0; i < RT_SPEC_TRIAL; i++) exec_n(m, 6); /* dropped at the last */
    cr_expect_eq(counter(m, KILN_COUNTER_DROPPED), 1);
    if (round % 2) cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0); /* reaped */
    exec_n(m, 6); /* the generic kernels still serve */
    kiln_model_free(m);
  }
}

Test(spec_policy, a_variant_that_pays_stays) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  exec_n(m, 6);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  for (int i = 0; i < 2 * RT_SPEC_TRIAL; i++) exec_n(m, 6);
  cr_expect_eq(counter(m, KILN_COUNTER_DROPPED), 0);
  cr_expect_eq(kiln_model_variants(m), 1);
  kiln_model_free(m);
}

Test(spec_policy, measured_trials_end_one_way_or_the_other) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  for (int i = 0; i < 4; i++) exec_n(m, 64);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  for (int i = 0; i < RT_SPEC_TRIAL + 2; i++) exec_n(m, 64);
  /* kept (a live variant) or dropped (counted), never both, never neither */
  cr_expect_eq(kiln_model_variants(m) + counter(m, KILN_COUNTER_DROPPED), 1);
  kiln_model_free(m);
}

Test(spec_policy, a_widely_varying_symbol_gets_pow2_buckets) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  for (int64_t n = 1; n <= RT_SPEC_AUTO_BUCKET; n++) exec_n(m, n);
  cr_expect_eq(counter(m, KILN_COUNTER_AUTO_BUCKETS), 0);
  exec_n(m, RT_SPEC_AUTO_BUCKET + 1);
  cr_expect_eq(counter(m, KILN_COUNTER_AUTO_BUCKETS), 1);
  /* 9..16 share bucket 16 now: three of them make it hot */
  exec_n(m, 10);
  exec_n(m, 11);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 1);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  exec_n(m, 13);
  cr_expect_eq(counter(m, KILN_COUNTER_HITS), 1);
  kiln_model_free(m);
  /* a bucket the caller chose is never replaced */
  m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_EXACT, 0, st), 0);
  for (int64_t n = 1; n <= RT_SPEC_AUTO_BUCKET + 4; n++) exec_n(m, n);
  cr_expect_eq(counter(m, KILN_COUNTER_AUTO_BUCKETS), 0);
  kiln_model_free(m);
}

/* A dim the caller bucketed, growing by one per execute (a decoder): once
 * it grew RT_SPEC_AHEAD_RUN times in a row and its bucket is hot, the next
 * bucket is queued too, so the first execute there finds its variant. */
Test(spec_policy, a_growing_bucketed_dim_gets_its_next_bucket_ahead) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0);
  for (int64_t n = 1; n <= 10; n++) exec_n(m, n);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 0); /* bucket 16 (9..16) not hot yet */
  /* hot: bucket 16 queued, and bucket 32 ahead: at n = 11, unless the
   * compile thread, just woken for bucket 16, held the variants' lock
   * longer than an execute waits for it (rt_lock_briefly: a loaded host
   * preempts it, nice +10); a later execute of the bucket claims it then */
  exec_n(m, 11);
  cr_expect_leq(counter(m, KILN_COUNTER_SPEC_AHEAD), 1);
  for (int64_t n = 12; n <= 16; n++) exec_n(m, n);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 1); /* once per bucket */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  double hits = counter(m, KILN_COUNTER_HITS);
  exec_n(m, 17); /* the first execute in bucket 32 */
  cr_expect_eq(counter(m, KILN_COUNTER_HITS), hits + 1, "bucket 32's variant was not ready");
  kiln_model_free(m);
}

/* Under async, a growing bucketed dim's next two buckets are planned ahead
 * (the prepare thread: their ends' plans and arena), so no execute in that bucket
 * places its intermediates or allocates its arena; before that, the
 * executes of the first buckets did (the counters count what they say). */
Test(spec_policy, a_growing_bucketed_dim_is_planned_ahead) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(TWO_SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0);
  for (int64_t n = 1; n <= 16; n++) exec_n(m, n); /* bucket 32 claimed at n = 11 */
  cr_expect_gt(counter(m, KILN_COUNTER_PLANS), 0);
  cr_expect_gt(counter(m, KILN_COUNTER_ARENA_GROWS), 0);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0); /* the plans too */
  /* bucket 32's end and bucket 64's, both queued at the claim at n = 11 */
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), 2);
  double plans = counter(m, KILN_COUNTER_PLANS), grows = counter(m, KILN_COUNTER_ARENA_GROWS);
  for (int64_t n = 17; n <= 32; n++) exec_n(m, n); /* all of bucket 32 */
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS), plans, "an execute in bucket 32 planned");
  cr_expect_eq(counter(m, KILN_COUNTER_ARENA_GROWS), grows, "an execute in bucket 32 grew");
  /* a second sequence finds those plans (bucket 32's, and 64's made from
   * bucket 32): none is made again, ahead or by an execute */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  double ahead = counter(m, KILN_COUNTER_PLANS_AHEAD);
  double queued_ahead = counter(m, KILN_COUNTER_SPEC_AHEAD);
  for (int64_t n = 1; n <= 32; n++) exec_n(m, n);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), ahead);
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS), plans);
  /* nor is a live variant queued ahead again (its compile would compete with the
   * executes) */
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), queued_ahead);
  kiln_model_free(m);
}

/* total cuts a slice of %c [20, 8] read from data (a decoder's cache[:, :total]):
 * it can never exceed 20 */
#define C20 "!mo.tensor<[20, 8], f32>"
#define I1 "!mo.tensor<[1], si64>"
#define TT "!mo.tensor<[total, 8], f32>"
static const char *SLICED =
    "mo.graph @w<total>(%c: " C20 ", %stop: " I1 ") -> (" TT ") {\n"
    "  %z = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : " I1 "\n"
    "  %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : " I1 "\n"
    "  %s = mo.slice_tensor(%c, %z, %stop, %one, %z) : (" C20 ", " I1 ", " I1 ", " I1 ", " I1
    ") -> " TT "\n"
    "  %y = mo.tanh(%s) : " TT "\n"
    "  %o = mo.softmax(%y) {axis = -1} : " TT "\n"
    "  mo.output %o : " TT "\n}\n";

/* a tensor [n, 8] stored into a buffer's slice: n can never exceed 20 */
static const char *STORED =
    "mo.graph @b<n>(%buf: !mo.buffer<[20, 8], f32>, %x: !mo.tensor<[n, 8], f32>, "
    "%at: !mo.tensor<[2], si64>) -> (!mo.tensor<[n, 8], f32>) {\n"
    "  %c0 = mo.chain.create() : !mo.chain\n"
    "  %y = mo.tanh(%x) : !mo.tensor<[n, 8], f32>\n"
    "  %c1 = mo.mutable.store.slice(%buf, %y, %at, %c0) : (!mo.buffer<[20, 8], f32>, "
    "!mo.tensor<[n, 8], f32>, !mo.tensor<[2], si64>, !mo.chain) -> !mo.chain\n"
    "  mo.output %y : !mo.tensor<[n, 8], f32>\n}\n";

/* Execute SLICED with total = n. */
static void exec_sliced(kiln_model *m, int64_t n) {
  int64_t cs[2] = {20, 8}, one[1] = {1};
  kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, cs, st),
                        kiln_tensor_new(KILN_INT64, 1, one, st)};
  float *c = kiln_tensor_data(in[0]);
  for (int i = 0; i < 160; i++) c[i] = (float)(i % 7) - 3.0f;
  *(int64_t *)kiln_tensor_data(in[1]) = n;
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, in, 2, &out, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_shape(out)[0], n);
  kiln_tensor_free(out);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
}

Test(spec_policy, a_symbols_bound_comes_from_its_slices_and_checks) {
  int64_t max[2];
  kiln_model *m = model(SLICED, KILN_SPECIALIZE_OFF);
  rt_spec_sym_max(m->g, max);
  cr_expect_eq(max[0], 20, "total <= the axis its slice cuts: %lld", (long long)max[0]);
  kiln_model_free(m);
  m = model(STORED, KILN_SPECIALIZE_OFF);
  rt_spec_sym_max(m->g, max);
  cr_expect_eq(max[0], 20, "n <= the buffer's axis it is stored into: %lld", (long long)max[0]);
  kiln_model_free(m);
  m = model(SOFT, KILN_SPECIALIZE_OFF);
  rt_spec_sym_max(m->g, max);
  cr_expect_eq(max[0], INT64_MAX, "nothing bounds SOFT's n");
  kiln_model_free(m);
}

/* A growing dim bounded at 20 with pow2 buckets: its last bucket is 17..20
 * (not 17..32), specialized ahead from bucket 16 like any other, and
 * nothing is planned or specialized past it: no bucket 64 queued, nor
 * planned, from the last bucket. */
Test(spec_policy, nothing_is_planned_or_specialized_past_a_symbols_bound) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(SLICED, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "total", KILN_BUCKET_POW2, 0, st), 0);
  for (int64_t n = 1; n <= 16; n++) exec_sliced(m, n); /* the last bucket claimed at 11 */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 1);
  double ahead = counter(m, KILN_COUNTER_PLANS_AHEAD); /* 20's end, unless a plan covers it */
  cr_expect_leq(ahead, 1, "a bucket past 20 was planned ahead: %g plans", ahead);
  double hits = counter(m, KILN_COUNTER_HITS), plans = counter(m, KILN_COUNTER_PLANS);
  for (int64_t n = 17; n <= 20; n++) exec_sliced(m, n);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_HITS), hits + 4, "the last bucket's variant was not ready");
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS), plans, "an execute in the last bucket planned");
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 1, "a bucket past 20 was queued ahead");
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), ahead, "a bucket past 20 was planned ahead");
  kiln_model_free(m);
}

/* rt_prep_plans queues several plans under one lock and one wake: each is
 * made once, and a job that carries the compile thread's wake (kick) says
 * so; plans already made are found, not made again. The execute that
 * claims a bucket queues its compile unwoken and lets the prepare thread
 * wake the compile thread (a lost wake would leave the next test's
 * wait_compiles waiting). */
Test(spec_policy, plans_queued_together_are_made_once_each) {
  kiln_model *m = model(TWO_SOFT, KILN_SPECIALIZE_ASYNC);
  rt_prep *p = rt_prep_new();
  cr_assert_not_null(p);
  int64_t a[1] = {32}, b[1] = {64};
  const int64_t *both[2] = {a, b};
  bool kicked = true;
  cr_expect_eq(rt_prep_plans(p, m, both, 2, false, &kicked), 2);
  cr_expect_not(kicked, "no kick was asked for");
  cr_assert_eq(rt_prep_wait(p, -1), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), 2);
  cr_expect_eq(rt_prep_plans(p, m, both, 2, true, &kicked), 2);
  cr_assert_eq(rt_prep_wait(p, -1), 0);
  cr_expect(kicked, "the queued job carries the wake");
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), 2, "a plan made ahead was made again");
  cr_expect_eq(rt_prep_plans(p, m, both, 0, true, &kicked), 0);
  cr_expect_not(kicked);
  /* after a plan the thread polls its queue: a job queued without a wake
   * still runs (a thread that slept instead would leave it queued) */
  cr_expect(rt_prep_polling(p));
  int64_t c[1] = {128};
  const int64_t *third[1] = {c};
  cr_expect_eq(rt_prep_plans(p, m, third, 1, false, NULL), 1);
  cr_expect_eq(rt_prep_wait(p, rt_now_ns() + 10 * 1000000000LL), 0, "the job was not seen");
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), 3);
  rt_prep_cancel(p, m);
  rt_prep_free(p);
  kiln_model_free(m);
}

Test(spec_policy, a_compile_queued_ahead_is_woken_by_the_prepare_thread) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(TWO_SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0);
  for (int64_t n = 1; n <= 10; n++) exec_n(m, n);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0); /* the compile thread sleeps */
  double done = counter(m, KILN_COUNTER_ASYNC_DONE);
  /* n = 11: bucket 16 hot (its compile) and bucket 32 claimed (its compile and
   * plans): both compiles queued unwoken, the plan job carries the wake */
  exec_n(m, 11);
  cr_expect_eq(kiln_context_wait_compiles(ctx, 20000, st), 0, "the compile thread was not woken");
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_DONE), done + 2);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 1);
  kiln_model_free(m);
}

/* Off (and for shapes that do not grow) every new size beyond the room of
 * the cached plans is planned by the execute that meets it. */
Test(spec_policy, plans_are_counted_where_they_are_made) {
  kiln_model *m = model(TWO_SOFT, KILN_SPECIALIZE_OFF);
  exec_n(m, 4);
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS), 1);
  cr_expect_eq(counter(m, KILN_COUNTER_ARENA_GROWS), 1);
  exec_n(m, 4); /* cached: neither */
  exec_n(m, 3); /* fits the room of n = 4 */
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS), 1);
  cr_expect_eq(counter(m, KILN_COUNTER_ARENA_GROWS), 1);
  exec_n(m, 64); /* too large: planned, and a larger block */
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS), 2);
  cr_expect_eq(counter(m, KILN_COUNTER_ARENA_GROWS), 2);
  cr_expect_eq(counter(m, KILN_COUNTER_PLANS_AHEAD), 0);
  kiln_model_free(m);
}

/* Shapes that vary without growing (a service, issue 15) never look ahead,
 * nor does a symbol whose buckets kiln chose itself. */
Test(spec_policy, varied_shapes_never_look_ahead) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  kiln_model *m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0);
  const int64_t varied[] = {5, 3, 9, 2, 17, 4, 33, 6, 12, 7, 40, 8, 20, 9, 3, 30, 2, 60};
  for (size_t i = 0; i < sizeof varied / sizeof *varied; i++) exec_n(m, varied[i]);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 0);
  kiln_model_free(m);
  m = model(SOFT, KILN_SPECIALIZE_ASYNC); /* automatic buckets: growth is not looked at */
  for (int64_t n = 1; n <= 40; n++) exec_n(m, n);
  cr_expect_gt(counter(m, KILN_COUNTER_AUTO_BUCKETS), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_AHEAD), 0);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  kiln_model_free(m);
}

Test(spec_policy, host_gemms_are_never_specialized) {
  kiln_model *m = model(GEMM, KILN_SPECIALIZE_SYNC);
  cr_expect_not(rt_model_spec_useful(m));
  for (int64_t n = 1; n <= 3; n++) exec_n(m, n);
  cr_expect_eq(kiln_model_variants(m), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_COMPILES), 0);
  const char *sym = "n";
  int64_t v = 2;
  cr_expect_eq(kiln_model_specialize(m, &sym, &v, 1, st), 0); /* nothing to do */
  kiln_model_free(m);
  m = model(SOFT, KILN_SPECIALIZE_SYNC);
  cr_expect(rt_model_spec_useful(m));
  kiln_model_free(m);
}

/* A GEMM of 2048-long dot products whose 64 columns go through a softmax:
 * the softmax (the one kernel a variant would rebuild) is ~2% of the
 * estimated time, so a hot binding is queued, weighed on the compile thread
 * and left generic (never queued again); SOFT alone is all softmax and
 * tanh, so it is compiled. */
static const char *GEMM_SOFT =
    "mo.graph @gs<n>(%x: !mo.tensor<[n, 2048], f32>, %w: !mo.tensor<[2048, 64], f32>) -> "
    "(!mo.tensor<[n, 64], f32>) {\n"
    "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 2048], f32>, !mo.tensor<[2048, 64], f32>) -> "
    "!mo.tensor<[n, 64], f32>\n"
    "  %s = mo.softmax(%m) {axis = -1} : !mo.tensor<[n, 64], f32>\n"
    "  mo.output %s : !mo.tensor<[n, 64], f32>\n}\n";

static void exec_gemm_soft(kiln_model *m, int64_t n) {
  int64_t xs[2] = {n, 2048}, ws[2] = {2048, 64};
  kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, st),
                        kiln_tensor_new(KILN_FLOAT32, 2, ws, st)};
  memset(kiln_tensor_data(in[0]), 0, (size_t)(n * 2048) * sizeof(float));
  memset(kiln_tensor_data(in[1]), 0, 2048 * 64 * sizeof(float));
  kiln_tensor *out = NULL;
  cr_assert_eq(kiln_model_execute(m, in, 2, &out, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor_free(out);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
}

Test(spec_policy, a_binding_whose_gemms_dominate_is_not_compiled) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 2, st), 0);
  kiln_model *m = model(GEMM_SOFT, KILN_SPECIALIZE_ASYNC);
  cr_expect(rt_model_spec_useful(m)); /* the softmax reads n */
  cr_expect_lt(rt_spec_share(m, (int64_t[]){16}), RT_SPEC_MIN_SHARE);
  for (int i = 0; i < 2; i++) exec_gemm_soft(m, 16);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 1); /* hot: queued, not weighed here */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_SKIPPED), 1); /* weighed by the compile thread */
  cr_expect_eq(counter(m, KILN_COUNTER_COMPILES), 0);
  for (int i = 0; i < 4; i++) exec_gemm_soft(m, 16);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 1); /* dropped for good */
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_SKIPPED), 1);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(kiln_model_variants(m), 0);
  kiln_model_free(m);
  m = model(SOFT, KILN_SPECIALIZE_ASYNC);
  cr_expect_gt(rt_spec_share(m, (int64_t[]){16}), 0.99);
  for (int i = 0; i < 3; i++) exec_n(m, 16);
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_SKIPPED), 0);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), 1);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  kiln_model_free(m);
}

/* The prepare thread weighs each bucket it plans ahead (rt_spec_share at
 * its end), and the execute that meets the bucket hot decides on that
 * share (a GEMM-dominated model's bucket is skipped). */
Test(spec_policy, a_bucket_planned_ahead_is_weighed_ahead) {
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = model(TWO_SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0);
  cr_expect_lt(rt_variant_weighed(m, (int64_t[]){20}), 0);
  for (int64_t n = 1; n <= 11; n++) exec_n(m, n); /* bucket 32 claimed at n = 11 */
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  double share = rt_variant_weighed(m, (int64_t[]){20});
  cr_expect_float_eq(share, rt_spec_share(m, (int64_t[]){32}), 1e-12);
  cr_expect_float_eq(rt_variant_weighed(m, (int64_t[]){64}), rt_spec_share(m, (int64_t[]){64}),
                     1e-12); /* the bucket after it too */
  kiln_model_free(m);

  /* a GEMM-dominated model never claims ahead (its buckets are dropped when
   * weighed): its bucket 32 weighed as the prepare thread would */
  m = model(GEMM_SOFT, KILN_SPECIALIZE_ASYNC);
  cr_assert_eq(kiln_model_set_bucket(m, "n", KILN_BUCKET_POW2, 0, st), 0);
  for (int64_t n = 1; n <= 16; n += 5) exec_gemm_soft(m, n);
  rt_variant_weigh_ahead(m, (int64_t[]){32});
  cr_expect_lt(rt_variant_weighed(m, (int64_t[]){20}), RT_SPEC_MIN_SHARE);
  double skipped = counter(m, KILN_COUNTER_SPEC_SKIPPED);
  double queued = counter(m, KILN_COUNTER_ASYNC_QUEUED);
  for (int64_t n = 17; n <= 19; n++) exec_gemm_soft(m, n); /* bucket 32 hot at n = 19 */
  cr_expect_eq(counter(m, KILN_COUNTER_SPEC_SKIPPED), skipped + 1);
  cr_expect_eq(counter(m, KILN_COUNTER_ASYNC_QUEUED), queued);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  kiln_model_free(m);
}

Test(spec_policy, hot_setting_is_checked) {
  cr_expect_eq(kiln_context_set_specialize_hot(ctx, -1, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_expect_eq(kiln_context_set_specialize_hot(NULL, 2, st), -1);
  cr_expect_eq(kiln_context_set_specialize_hot(ctx, 0, st), 0);
  cr_expect_eq(rt_spec_hot(ctx), RT_SPEC_HOT);
}

/* ---- the bookkeeping alone ---- */

Test(spec_policy, counts_run_over_a_window) {
  rt_spec_policy *p = rt_spec_policy_new(1);
  rt_spec_ticket t;
  int64_t a = 7, b = 8;
  cr_expect_eq(rt_spec_policy_seen(p, &a, false, 2, false, &t), RT_SPEC_COLD);
  for (int i = 0; i < RT_SPEC_WINDOW + 1; i++) rt_spec_policy_seen(p, &b, false, 2, false, &t);
  /* a's first execute is out of the window: cold again */
  cr_expect_eq(rt_spec_policy_seen(p, &a, false, 2, false, &t), RT_SPEC_COLD);
  cr_expect_eq(rt_spec_policy_seen(p, &a, false, 2, false, &t), RT_SPEC_WEIGH); /* hot: weigh once */
  cr_expect_eq(rt_spec_policy_seen(p, &a, false, 2, false, &t), RT_SPEC_QUEUE);
  rt_spec_policy_drop(p, &a); /* weighed and found not worth it */
  cr_expect_eq(rt_spec_policy_seen(p, &a, false, 2, false, &t), RT_SPEC_DROPPED);
  rt_spec_policy_free(p);
}

Test(spec_policy, a_trial_compares_the_fastest_runs) {
  rt_spec_policy *p = rt_spec_policy_new(1);
  rt_spec_ticket t;
  int64_t k = 3;
  cr_assert_eq(rt_spec_policy_seen(p, &k, false, 1, false, &t), RT_SPEC_WEIGH);
  cr_assert_geq(t.slot, 0);
  cr_expect_not(rt_spec_policy_timed(p, &t, 1000, RT_SPEC_TRIAL_MEASURE)); /* generic 1000 */
  for (int i = 0; i < RT_SPEC_TRIAL; i++) {
    cr_assert_eq(rt_spec_policy_seen(p, &k, true, 1, false, &t), RT_SPEC_RUN);
    /* the variant's fastest run 990: not 3% faster */
    bool drop = rt_spec_policy_timed(p, &t, i == 2 ? 990 : 5000, RT_SPEC_TRIAL_MEASURE);
    cr_expect_eq(drop, i == RT_SPEC_TRIAL - 1);
  }
  cr_expect_eq(rt_spec_policy_seen(p, &k, false, 1, false, &t), RT_SPEC_DROPPED);
  cr_expect_eq(t.slot, -1);
  /* another key: 900 against 1000 stays */
  int64_t k2 = 4;
  rt_spec_policy_seen(p, &k2, false, 1, false, &t);
  rt_spec_policy_timed(p, &t, 1000, RT_SPEC_TRIAL_MEASURE);
  for (int i = 0; i < RT_SPEC_TRIAL; i++) {
    rt_spec_policy_seen(p, &k2, true, 1, false, &t);
    cr_expect_not(rt_spec_policy_timed(p, &t, 900, RT_SPEC_TRIAL_MEASURE));
  }
  cr_expect_eq(rt_spec_policy_seen(p, &k2, true, 1, false, &t), RT_SPEC_RUN);
  cr_expect_eq(t.slot, -1); /* kept: no more timing */
  rt_spec_policy_free(p);
}

/* One paired trial of key k (its generic executes before the trial ran in
 * `before` ns): generic turns take gen(i) ns, variant turns var(i) ns (i the
 * turn's pair); true when the variant stays. The verdicts alternate. */
static bool paired_trial(rt_spec_policy *p, int64_t k, int64_t before, int64_t gen0,
                         int64_t var0) {
  rt_spec_ticket t;
  cr_assert_eq(rt_spec_policy_seen(p, &k, false, 1, true, &t), RT_SPEC_WEIGH);
  rt_spec_policy_timed(p, &t, before, RT_SPEC_TRIAL_MEASURE);
  bool dropped = false;
  for (int i = 0; i < RT_SPEC_TRIAL; i++) {
    /* the shapes grow with every pair: both sets see the same ones */
    cr_assert_eq(rt_spec_policy_seen(p, &k, true, 1, true, &t), RT_SPEC_PAIR, "pair %d", i);
    cr_assert_geq(t.slot, 0);
    cr_expect_not(t.variant);
    cr_expect_not(rt_spec_policy_timed(p, &t, gen0 + 10 * i, RT_SPEC_TRIAL_MEASURE));
    cr_assert_eq(rt_spec_policy_seen(p, &k, true, 1, true, &t), RT_SPEC_RUN, "pair %d", i);
    cr_expect(t.variant);
    dropped = rt_spec_policy_timed(p, &t, var0 + 10 * i, RT_SPEC_TRIAL_MEASURE);
    cr_expect(!dropped || i == RT_SPEC_TRIAL - 1, "dropped at pair %d", i);
  }
  rt_spec_verdict after = rt_spec_policy_seen(p, &k, !dropped, 1, true, &t);
  cr_expect_eq(after, dropped ? RT_SPEC_DROPPED : RT_SPEC_RUN);
  cr_expect_eq(t.slot, -1, "the trial is over: nothing more is timed");
  return !dropped;
}

/* A paired trial compares the variant with the generic kernels on the same
 * shapes only: a variant 10% faster stays although the bucket's generic
 * executes before it ran shorter shapes (800 ns, which a plain trial would
 * have compared with); a variant no faster is dropped, also when its
 * bucket ran nothing generic before it (a plain trial keeps it unmeasured). */
Test(spec_policy, a_paired_trial_compares_at_the_same_shapes) {
  rt_spec_policy *p = rt_spec_policy_new(1);
  cr_expect(paired_trial(p, 1, 800, 1000, 900), "a variant 10%% faster was dropped");
  cr_expect_not(paired_trial(p, 2, 800, 1000, 995), "a variant 0.5%% faster was kept");
  cr_expect_not(paired_trial(p, 3, 2000, 1000, 1000), "a variant no faster was kept");
  /* the same variant 10% faster, but a plain trial against the shorter shapes: dropped */
  rt_spec_ticket t;
  int64_t k = 4;
  rt_spec_policy_seen(p, &k, false, 1, false, &t);
  rt_spec_policy_timed(p, &t, 800, RT_SPEC_TRIAL_MEASURE);
  bool dropped = false;
  for (int i = 0; i < RT_SPEC_TRIAL; i++) {
    cr_assert_eq(rt_spec_policy_seen(p, &k, true, 1, false, &t), RT_SPEC_RUN);
    dropped = rt_spec_policy_timed(p, &t, 900 + 10 * i, RT_SPEC_TRIAL_MEASURE);
  }
  cr_expect(dropped, "the plain trial's rule changed");
  rt_spec_policy_free(p);
}

Test(spec_policy, growth_is_counted_in_runs) {
  rt_spec_policy *p = rt_spec_policy_new(2);
  int64_t v[2] = {4, 9};
  rt_spec_policy_values(p, v, NULL);
  cr_expect_eq(rt_spec_policy_rising(p, 0), 0); /* a first value is no growth */
  for (int i = 1; i <= RT_SPEC_AHEAD_RUN + 3; i++) {
    v[0] = 4 + i; /* grows */
    v[1] = 9 - (i % 2); /* goes up and down */
    rt_spec_policy_values(p, v, NULL);
    cr_expect_eq(rt_spec_policy_rising(p, 0), i < RT_SPEC_AHEAD_RUN ? i : RT_SPEC_AHEAD_RUN);
    cr_expect_leq(rt_spec_policy_rising(p, 1), 1);
  }
  v[0] = 1; /* a new sequence */
  rt_spec_policy_values(p, v, NULL);
  cr_expect_eq(rt_spec_policy_rising(p, 0), 0);
  cr_expect_eq(rt_spec_policy_rising(p, 2), 0); /* no such symbol */
  rt_spec_policy_free(p);
}

Test(spec_policy, a_reused_slot_ignores_old_tickets) {
  rt_spec_policy *p = rt_spec_policy_new(1);
  rt_spec_ticket old, t;
  int64_t k = 0;
  rt_spec_policy_seen(p, &k, false, 1, false, &old);
  for (int64_t i = 1; i <= RT_SPEC_SEEN; i++) rt_spec_policy_seen(p, &i, false, 1, false, &t);
  cr_expect_not(rt_spec_policy_timed(p, &old, 1, RT_SPEC_TRIAL_DROP)); /* slot given away */
  rt_spec_policy_free(p);
}
