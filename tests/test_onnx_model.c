/* test_onnx_model.c - a whole transformer through the ONNX importer: a
 * shrunk paraphrase-MiniLM-L3-v2 (tests/onnx/minilm_tiny/model.onnx, every
 * node of PyTorch's export kept, sizes cut by tools/onnx_minilm_tiny.py) is
 * imported once, compiled once, and run at several batch and sequence
 * lengths; its token and sentence embeddings are compared with ONNX
 * Runtime's (committed .npy files), within 1e-4 of the largest magnitude.
 * KILN_TEST_DEVICE=cuda:0 runs it there (tests/support/under_test.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/onnx.h"
#include "src/io.h"
#include "src/rt.h"
#include "support/under_test.h"

#define DIR KILN_SOURCE_DIR "/tests/onnx/minilm_tiny"

static kiln_tensor *load(const char *cas, const char *what) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s.npy", DIR, cas, what);
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = rt_npy_read(path, st);
  cr_assert(t, "%s: %s", path, kiln_status_message(st));
  kiln_status_free(st);
  return t;
}

static void expect_same_shape(const kiln_tensor *got, const kiln_tensor *want, const char *what) {
  cr_assert_eq(got->rank, want->rank, "%s: rank %d, expected %d", what, got->rank, want->rank);
  for (int i = 0; i < got->rank; i++)
    cr_assert_eq(got->shape[i], want->shape[i], "%s: dim %d is %lld, expected %lld", what, i,
                 (long long)got->shape[i], (long long)want->shape[i]);
}

/* max |got - want| <= 1e-4 * max |want| */
static void expect_close(const kiln_tensor *got, const kiln_tensor *want, const char *what) {
  cr_assert_eq(got->dtype, KILN_FLOAT32, "%s: not f32", what);
  expect_same_shape(got, want, what);
  const float *a = got->data, *b = want->data;
  double scale = 0, diff = 0;
  for (int64_t i = 0; i < want->numel; i++) {
    scale = fmax(scale, fabs(b[i]));
    diff = fmax(diff, fabs((double)a[i] - b[i]));
    cr_assert(!isnan(a[i]), "%s: NaN at %lld", what, (long long)i);
  }
  cr_assert(diff <= 1e-4 * scale, "%s: max abs diff %g, allowed %g", what, diff, 1e-4 * scale);
}

static kiln_model *compile_tiny(kiln_context *ctx, kiln_status *st) {
  kiln_graph *g = kiln_graph_from_onnx_file(DIR "/model.onnx", st);
  cr_assert(g, "import: %s", kiln_status_message(st));
  kiln_model *m = under_test_compile(ctx, g, st);
  cr_assert(m, "compile: %s", kiln_status_message(st));
  kiln_graph_free(g);
  cr_assert_eq(kiln_model_num_inputs(m), 2);
  cr_assert_eq(kiln_model_num_outputs(m), 4);
  return m;
}

Test(onnx_model, minilm_tiny_one_import_serves_every_shape_and_matches_ort, .timeout = 300) {
  static const char *cases[] = {"b2s5", "b1s12", "b3s1"};
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  kiln_model *m = compile_tiny(ctx, st);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    kiln_tensor *ins[2] = {load(cases[c], "input_ids"), load(cases[c], "attention_mask")};
    kiln_tensor *outs[4] = {0};
    cr_assert(kiln_model_execute(m, ins, 2, outs, 4, st) == 0, "%s: %s", cases[c],
              kiln_status_message(st));
    /* outputs 0 and 1 echo the inputs; 2 is the token, 3 the sentence embeddings */
    for (int i = 0; i < 2; i++) {
      expect_same_shape(outs[i], ins[i], cases[c]);
      cr_assert(!memcmp(outs[i]->data, ins[i]->data, ins[i]->nbytes), "%s: output %d", cases[c], i);
    }
    for (int i = 2; i < 4; i++) {
      char what[64], name[16];
      snprintf(what, sizeof what, "%s output %d", cases[c], i);
      snprintf(name, sizeof name, "out%d", i);
      kiln_tensor *want = load(cases[c], name);
      expect_close(outs[i], want, what);
      kiln_tensor_free(want);
    }
    for (int i = 0; i < 4; i++) kiln_tensor_free(outs[i]);
    kiln_tensor_free(ins[0]);
    kiln_tensor_free(ins[1]);
  }
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* The position ids are sliced from a [1, 512] buffer up to the sequence
 * length: a longer sequence is a data error at run time, not a crash. */
Test(onnx_model, minilm_tiny_sequence_past_the_position_table_is_a_data_error, .timeout = 300) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  kiln_model *m = compile_tiny(ctx, st);
  int64_t shape[2] = {1, 513};
  kiln_tensor *ins[2];
  for (int i = 0; i < 2; i++) {
    ins[i] = kiln_tensor_new(KILN_INT64, 2, shape, st);
    cr_assert(ins[i], "%s", kiln_status_message(st));
    for (int64_t j = 0; j < ins[i]->numel; j++) ((int64_t *)ins[i]->data)[j] = 1;
  }
  kiln_tensor *outs[4] = {0};
  cr_assert(kiln_model_execute(m, ins, 2, outs, 4, st) < 0, "a sequence of 513 ran");
  cr_assert(strstr(kiln_status_message(st), "out of range"), "%s", kiln_status_message(st));
  for (int i = 0; i < 4; i++) kiln_tensor_free(outs[i]);
  kiln_tensor_free(ins[0]);
  kiln_tensor_free(ins[1]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}
