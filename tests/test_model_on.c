/* test_model_on.c - one kiln_model over every backend: kiln_model_compile_on
 * a SIMT device (simt-emu here) gives a kiln_model whose metadata, weights,
 * executes, captures, specialization policies (sync, async, ahead, off),
 * buckets and counters work as on the CPU, with the CPU model's answers;
 * the kiln_device_model_* names are the same object. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../src/device.h"
#include "../src/rt.h"
#include "../src/variants.h"
#include "kiln/kiln.h"

/* y = relu(x @ w + b), batch symbolic: a GEMM with an epilogue, a weight. */
static const char *MLP =
    "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 4], f32>) "
    "attributes {argument_names = [\"x\"], result_names = [\"y\"]} {\n"
    "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[8, 4], f32>\n"
    "  %b = mo.constant {value = #M.dense_array<0.5, -0.5, 0.25, 0.0> : tensor<4xf32>} "
    ": !mo.tensor<[4], f32>\n"
    "  %m = mo.matmul(%x, %w) : !mo.tensor<[batch, 4], f32>\n"
    "  %a = mo.add(%m, %b) : !mo.tensor<[batch, 4], f32>\n"
    "  %y = mo.relu(%a) : !mo.tensor<[batch, 4], f32>\n"
    "  mo.output %y : !mo.tensor<[batch, 4], f32>\n}\n";

static kiln_status *st;
static kiln_context *ctx;
static kiln_device *emu;
static kiln_graph *g;
static kiln_tensor *w;

static void setup(void) {
  st = kiln_status_new();
  ctx = kiln_context_new(st);
  emu = kiln_device_open("simt-emu", st);
  g = kiln_graph_parse(MLP, strlen(MLP), NULL, st);
  cr_assert(ctx && emu && g, "%s", kiln_status_message(st));
  int64_t ws[2] = {8, 4};
  w = kiln_tensor_new(KILN_FLOAT32, 2, ws, st);
  float *wd = kiln_tensor_data(w);
  for (int i = 0; i < 32; i++) wd[i] = (float)((i * 7) % 11) * 0.1f - 0.5f;
}

static void teardown(void) {
  kiln_tensor_free(w);
  kiln_graph_free(g);
  kiln_device_close(emu);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

TestSuite(model_on, .init = setup, .fini = teardown);

static kiln_tensor *input(int64_t batch) {
  int64_t s[2] = {batch, 8};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, s, st);
  float *d = kiln_tensor_data(x);
  for (int64_t i = 0; i < batch * 8; i++) d[i] = (float)(i % 13) * 0.2f - 1.0f;
  return x;
}

static kiln_model *on_emu(kiln_specialize_policy p) {
  kiln_model *m = kiln_model_compile_on(ctx, emu, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, p, st), 0);
  cr_assert_eq(kiln_model_bind_weight(m, "w", w, st), 0, "%s", kiln_status_message(st));
  return m;
}

/* m's output for x, checked against the CPU model's. */
static void check_against_cpu(kiln_model *m, kiln_model *cpu, int64_t batch) {
  kiln_tensor *x = input(batch), *a = NULL, *b = NULL;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &a, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(cpu, &x, 1, &b, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_null(kiln_tensor_device(a)); /* the graph does not place y on the GPU */
  const float *p = kiln_tensor_data(a), *q = kiln_tensor_data(b);
  for (int64_t i = 0; i < batch * 4; i++)
    cr_assert(fabsf(p[i] - q[i]) <= 1e-5f * (1 + fabsf(q[i])), "batch %lld, %lld: %g vs %g",
              (long long)batch, (long long)i, p[i], q[i]);
  kiln_tensor_free(x);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
}

static kiln_model *cpu_model(void) {
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, KILN_SPECIALIZE_OFF, st), 0);
  cr_assert_eq(kiln_model_bind_weight(m, "w", w, st), 0);
  return m;
}

Test(model_on, a_device_model_is_a_kiln_model) {
  kiln_model *m = on_emu(KILN_SPECIALIZE_OFF);
  cr_expect_eq(kiln_model_device(m), emu);
  cr_expect_eq(kiln_model_num_inputs(m), 1);
  cr_expect_str_eq(kiln_model_input_name(m, 0), "x");
  cr_expect_str_eq(kiln_model_output_name(m, 0), "y");
  cr_expect_str_eq(kiln_model_input_dim(m, 0, 0), "batch");
  cr_expect_eq(kiln_model_input_dim_static(m, 0, 1), 8);
  cr_expect_eq(kiln_model_num_weights(m), 1);
  cr_expect_str_eq(kiln_model_weight_name(m, 0), "w");
  cr_expect_gt(kiln_model_compile_ms(m), 0.0);
  /* the old names take it as it is */
  kiln_device_model *dm = m;
  cr_expect_eq(kiln_device_model_compile_ms(dm), kiln_model_compile_ms(m));
  kiln_model *cpu = cpu_model();
  cr_expect_null(kiln_model_device(cpu));
  for (int64_t b = 1; b <= 3; b++) check_against_cpu(m, cpu, b);
  /* matmul + add + relu fuse into one kernel on the device too */
  cr_expect_eq(rt_device_model_kernels(m), 1);
  kiln_model_free(cpu);
  kiln_model_free(m);
  /* the cpu device, or none, is the CPU model */
  kiln_device *cpud = kiln_device_open("cpu", st);
  kiln_model *c2 = kiln_model_compile_on(ctx, cpud, g, st);
  cr_assert_not_null(c2, "%s", kiln_status_message(st));
  cr_expect_null(kiln_model_device(c2));
  kiln_model_free(c2);
  kiln_device_close(cpud);
}

Test(model_on, sync_specializes_each_binding_and_keeps_its_plan) {
  kiln_model *m = on_emu(KILN_SPECIALIZE_SYNC), *cpu = cpu_model();
  for (int rep = 0; rep < 3; rep++) check_against_cpu(m, cpu, 5);
  cr_expect_eq(kiln_model_variants(m), 1);
  cr_expect_eq(rt_device_model_plan_builds(m), 1); /* one binding, one plan */
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_MISSES), 1);
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_HITS), 2);
  cr_expect_geq(kiln_model_counter(m, KILN_COUNTER_COMPILES), 1);
  check_against_cpu(m, cpu, 6);
  cr_expect_eq(kiln_model_variants(m), 2);
  /* the bound applies: one variant at most */
  cr_assert_eq(kiln_model_set_max_variants(m, 1, st), 0);
  cr_expect_eq(kiln_model_variants(m), 1);
  check_against_cpu(m, cpu, 7);
  cr_expect_eq(kiln_model_variants(m), 1);
  cr_expect_geq(kiln_model_counter(m, KILN_COUNTER_VARIANTS_EVICTED), 2);
  kiln_model_free(cpu);
  kiln_model_free(m);
}

Test(model_on, async_compiles_in_the_background_then_runs_the_variant) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0); /* first sight */
  rt_spec_set_test_trial(ctx, RT_SPEC_TRIAL_KEEP);
  kiln_model *m = on_emu(KILN_SPECIALIZE_ASYNC), *cpu = cpu_model();
  check_against_cpu(m, cpu, 3); /* generic, the variant queued */
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_HITS), 0);
  cr_assert_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  cr_expect_eq(kiln_model_variants(m), 1);
  check_against_cpu(m, cpu, 3); /* on the variant now: a new plan for it */
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_HITS), 1);
  cr_expect_eq(rt_device_model_plan_builds(m), 2);
  kiln_model_free(cpu);
  kiln_model_free(m);
}

Test(model_on, ahead_uses_declared_bindings_and_buckets_group_them) {
  kiln_model *m = on_emu(KILN_SPECIALIZE_AHEAD), *cpu = cpu_model();
  cr_assert_eq(kiln_model_set_bucket(m, "batch", KILN_BUCKET_POW2, 0, st), 0);
  const char *sym = "batch";
  int64_t four = 4;
  cr_assert_eq(kiln_model_specialize(m, &sym, &four, 1, st), 0, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_model_variants(m), 1);
  for (int64_t b = 3; b <= 4; b++) check_against_cpu(m, cpu, b); /* bucket 4 serves both */
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_HITS), 2);
  check_against_cpu(m, cpu, 5); /* bucket 8: not declared, generic */
  cr_expect_eq(kiln_model_counter(m, KILN_COUNTER_MISSES), 1);
  cr_expect_eq(kiln_model_variants(m), 1);
  kiln_model_free(cpu);
  kiln_model_free(m);
}

Test(model_on, capture_and_replay_through_kiln_model) {
  kiln_model *m = on_emu(KILN_SPECIALIZE_SYNC);
  kiln_tensor *x = input(2), *y = NULL, *r = NULL;
  cr_assert_eq(kiln_model_capture(m, 7, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  float *xd = kiln_tensor_data(x);
  for (int i = 0; i < 16; i++) xd[i] = -xd[i];
  cr_assert_eq(kiln_model_replay(m, 7, &x, 1, &r, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_verify_replay(m, 7, &x, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *e = NULL;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &e, 1, st), 0);
  cr_expect_eq(memcmp(kiln_tensor_data(r), kiln_tensor_data(e), kiln_tensor_nbytes(e)), 0);
  kiln_tensor *x3 = input(3);
  cr_expect_neq(kiln_model_replay(m, 7, &x3, 1, &r, 1, st), 0); /* another shape */
  cr_assert_eq(kiln_model_release(m, 7, st), 0);
  cr_expect_neq(kiln_model_release(m, 7, st), 0);
  kiln_tensor_free(x3);
  kiln_tensor_free(e);
  kiln_tensor_free(r);
  kiln_tensor_free(y);
  kiln_tensor_free(x);
  kiln_model_free(m);
}

/* Freeing a model while its background compile is queued or running
 * cancels it; nothing of the model is touched afterwards (ASan). */
Test(model_on, free_cancels_background_compiles) {
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  rt_spec_set_test_delay(ctx, 50);
  for (int k = 0; k < 3; k++) {
    kiln_model *m = on_emu(KILN_SPECIALIZE_ASYNC);
    for (int64_t b = 1; b <= 3; b++) {
      kiln_tensor *x = input(b), *y = NULL;
      cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
      kiln_tensor_free(x);
      kiln_tensor_free(y);
    }
    kiln_model_free(m);
  }
  rt_spec_set_test_delay(ctx, 0);
  cr_expect_eq(kiln_context_wait_compiles(ctx, 60000, st), 0);
}

Test(model_on, weights_on_a_device_model) {
  kiln_model *m = kiln_model_compile_on(ctx, emu, g, st);
  cr_assert_not_null(m);
  kiln_tensor *x = input(1), *y = NULL;
  cr_expect_neq(kiln_model_execute(m, &x, 1, &y, 1, st), 0);
  cr_expect(strstr(kiln_status_message(st), "weight 'w' is not bound"), "%s",
            kiln_status_message(st));
  /* the tensor is copied at bind: freeing it afterwards is fine */
  int64_t ws[2] = {8, 4};
  kiln_tensor *tmp = kiln_tensor_copy_to(w, NULL, st);
  cr_assert_eq(kiln_model_bind_weight(m, "w", tmp, st), 0);
  kiln_tensor_free(tmp);
  kiln_model *cpu = cpu_model();
  check_against_cpu(m, cpu, 2);
  kiln_tensor *bad = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){4, 8}, st);
  cr_expect_neq(kiln_model_bind_weight(m, "w", bad, st), 0);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_SHAPE);
  (void)ws;
  kiln_tensor_free(bad);
  kiln_tensor_free(x);
  kiln_model_free(cpu);
  kiln_model_free(m);
}

Test(model_on, device_weights_need_no_host_data) {
  kiln_model *m = on_emu(KILN_SPECIALIZE_OFF);
  cr_expect_eq(kiln_model_weight_needs_data(m, "w"), 0); /* copied to the device */
  cr_expect_eq(kiln_model_weight_needs_data(m, "b"), -1);
  kiln_model_free(m);
}
