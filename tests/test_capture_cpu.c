/* test_capture_cpu.c - capture / replay / verify on CPU models
 * (kiln_model_capture and friends): a replay gives the bits of an execute,
 * refuses inputs of other shapes, verify says whether the captured binding
 * still holds, keys are unique until released, and a captured variant
 * survives eviction by other bindings. */
#include <criterion/criterion.h>
#include <string.h>

#include "kiln/kiln.h"

static const char *G =
    "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"
    "  %a = mo.exp(%x) : !mo.tensor<[n, 8], f32>\n"
    "  %b = mo.softmax(%a) {axis = -1} : !mo.tensor<[n, 8], f32>\n"
    "  mo.output %b : !mo.tensor<[n, 8], f32>\n}\n";

static kiln_tensor *input(int n, float seed) {
  int64_t shape[2] = {n, 8};
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL);
  cr_assert_not_null(t);
  float *d = (float *)kiln_tensor_data(t);
  for (int i = 0; i < n * 8; i++) d[i] = seed + 0.01f * (float)i;
  return t;
}

static void same_bits(const kiln_tensor *a, const kiln_tensor *b) {
  cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b));
  cr_expect_eq(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)), 0);
}

Test(capture_cpu, replay_gives_the_bits_of_an_execute) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(G, strlen(G), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, KILN_SPECIALIZE_SYNC, st), 0);
  kiln_tensor *x = input(3, 0.5f), *y0 = NULL, *y1 = NULL, *y2 = NULL;
  cr_assert_eq(kiln_model_capture(m, 7, &x, 1, &y0, 1, st), 0, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_model_capture(m, 7, &x, 1, &y1, 1, st), -1);
  cr_expect(strstr(kiln_status_message(st), "already captured"));
  /* new data, same shapes */
  float *d = (float *)kiln_tensor_data(x);
  d[5] = -2.0f;
  cr_assert_eq(kiln_model_replay(m, 7, &x, 1, &y1, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y2, 1, st), 0, "%s", kiln_status_message(st));
  same_bits(y1, y2);
  cr_expect_eq(kiln_model_verify_replay(m, 7, &x, 1, st), 0, "%s", kiln_status_message(st));
  /* other shapes: refused by replay, and verify says the binding differs */
  kiln_tensor *z = input(4, 0.5f), *yz = NULL;
  cr_expect_eq(kiln_model_replay(m, 7, &z, 1, &yz, 1, st), -1);
  cr_expect(strstr(kiln_status_message(st), "captured dtype and shape"), "%s",
            kiln_status_message(st));
  cr_expect_eq(kiln_model_verify_replay(m, 7, &z, 1, st), -1);
  cr_expect_eq(kiln_model_replay(m, 8, &x, 1, &yz, 1, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_NOT_FOUND);
  cr_expect_eq(kiln_model_release(m, 7, st), 0);
  cr_expect_eq(kiln_model_release(m, 7, st), -1);
  kiln_tensor_free(x);
  kiln_tensor_free(z);
  kiln_tensor_free(y0);
  kiln_tensor_free(y1);
  kiln_tensor_free(y2);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(capture_cpu, captured_variant_outlives_eviction) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(G, strlen(G), NULL, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_specialize(m, KILN_SPECIALIZE_SYNC, st), 0);
  cr_assert_eq(kiln_model_set_max_variants(m, 1, st), 0);
  kiln_tensor *x = input(2, 0.25f), *y0 = NULL, *y1 = NULL, *y2 = NULL;
  cr_assert_eq(kiln_model_capture(m, 1, &x, 1, &y0, 1, st), 0, "%s", kiln_status_message(st));
  for (int n = 3; n < 6; n++) { /* other bindings evict the captured one from the table */
    kiln_tensor *o = input(n, 1.0f), *yo = NULL;
    cr_assert_eq(kiln_model_execute(m, &o, 1, &yo, 1, st), 0, "%s", kiln_status_message(st));
    kiln_tensor_free(o);
    kiln_tensor_free(yo);
  }
  cr_assert_eq(kiln_model_replay(m, 1, &x, 1, &y1, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y2, 1, st), 0, "%s", kiln_status_message(st));
  same_bits(y0, y1);
  same_bits(y1, y2);
  kiln_tensor_free(x);
  kiln_tensor_free(y0);
  kiln_tensor_free(y1);
  kiln_tensor_free(y2);
  kiln_model_free(m); /* frees the capture and its variant */
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}
