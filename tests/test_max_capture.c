/* test_max_capture.c - capture / replay / verify / release of the MAX C API
 * on the host: a capture returns outputs that every replay rewrites in
 * place (with new input data of the captured shapes), a replay with other
 * shapes or an unknown key is an error naming the key, a verify agrees with
 * an eager run, released keys are gone, and captured outputs outlive the
 * release and the model. Only include/max/c/ is used. */
#include <stdint.h>

#include "tests/max/max_test.h"

#define EXPECT_ERROR(st, needle)                                                           \
  do {                                                                                     \
    cr_assert(M_isError(st), "expected an error containing \"%s\"", needle);               \
    cr_assert(strstr(M_getError(st), needle), "error \"%s\" lacks \"%s\"", M_getError(st), \
              needle);                                                                     \
  } while (0)

static const float W[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
static const float B[2] = {0.1f, -0.2f};

typedef struct cap_fx {
  max_env e;
  M_AsyncCompiledModel *cm;
  M_AsyncModel *model;
  M_AsyncTensorMap *in;
  M_AsyncTensor *x;
} cap_fx;

/* small_mlp with weights W, B; input "features" borrowed from x[batch * 3]. */
static void cap_open(cap_fx *f, float *x, int batch) {
  max_env_open(&f->e);
  f->cm = max_compile(&f->e, MAX_GRAPH("small_mlp.mlir"), 1);
  const char *names[2] = {"fc.weight", "fc.bias"};
  const void *data[2] = {W, B};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 2, f->e.st);
  f->model = M_initModel(f->e.ctx, f->cm, reg, f->e.st);
  MAX_OK(f->e.st);
  M_freeWeightsRegistry(reg);
  int64_t shape[2] = {batch, 3};
  f->in = M_newAsyncTensorMap(f->e.ctx);
  max_borrow_f32(&f->e, f->in, "features", x, shape, 2);
  f->x = M_getTensorByNameFrom(f->in, "features", f->e.st);
  MAX_OK(f->e.st);
}

static void cap_close(cap_fx *f) {
  M_freeTensor(f->x);
  M_freeAsyncTensorMap(f->in);
  M_freeModel(f->model);
  M_freeCompiledModel(f->cm);
  max_env_close(&f->e);
}

static void expect_scores(const M_AsyncTensor *t, const float *x, int batch) {
  float want[8 * 2];
  max_ref_dense(x, W, B, want, batch, 3, 2, 1);
  cr_assert_eq(M_getTensorNumElements(t), (size_t)batch * 2);
  const float *got = M_getTensorData(t);
  for (int i = 0; i < batch * 2; i++)
    cr_assert(fabsf(got[i] - want[i]) <= 1e-5f, "scores[%d] = %g, expected %g", i, got[i],
              want[i]);
}

Test(max_capture, replay_rewrites_the_captured_outputs_in_place) {
  float x[4 * 3];
  max_fill(x, 12, 1, 2.0f);
  cap_fx f;
  cap_open(&f, x, 4);
  uint64_t key = 7;
  size_t nout = 0;
  M_AsyncTensor **outs = M_captureModelSync(f.e.ctx, f.model, &key, 1, &f.x, 1, &nout, f.e.st);
  MAX_OK(f.e.st);
  cr_assert(outs);
  cr_assert_eq(nout, 1);
  expect_scores(outs[0], x, 4);
  const void *where = M_getTensorData(outs[0]);

  max_fill(x, 12, 2, 2.0f); /* new data in the same buffer */
  M_replayModelSync(f.e.ctx, f.model, &key, 1, &f.x, 1, f.e.st);
  MAX_OK(f.e.st);
  cr_assert_eq(M_getTensorData(outs[0]), where);
  expect_scores(outs[0], x, 4);

  float x2[4 * 3]; /* new data in another buffer of the same shape */
  max_fill(x2, 12, 3, 2.0f);
  int64_t shape[2] = {4, 3};
  M_AsyncTensorMap *in2 = M_newAsyncTensorMap(f.e.ctx);
  max_borrow_f32(&f.e, in2, "features", x2, shape, 2);
  M_AsyncTensor *t2 = M_getTensorByNameFrom(in2, "features", f.e.st);
  M_replayModelSync(f.e.ctx, f.model, &key, 1, &t2, 1, f.e.st);
  MAX_OK(f.e.st);
  expect_scores(outs[0], x2, 4);

  M_debugVerifyReplayModelSync(f.e.ctx, f.model, &key, 1, &t2, 1, f.e.st);
  MAX_OK(f.e.st);

  M_releaseCapturedGraphs(f.e.ctx, f.model, &key, 1, f.e.st);
  MAX_OK(f.e.st);
  M_replayModelSync(f.e.ctx, f.model, &key, 1, &t2, 1, f.e.st);
  EXPECT_ERROR(f.e.st, "no captured graph for key 7");
  M_releaseCapturedGraphs(f.e.ctx, f.model, &key, 1, f.e.st); /* released twice: no-op */
  MAX_OK(f.e.st);
  expect_scores(outs[0], x2, 4); /* the output outlives the release */

  M_freeTensor(t2);
  M_freeAsyncTensorMap(in2);
  M_freeTensor(outs[0]);
  free(outs);
  cap_close(&f);
}

Test(max_capture, replay_with_other_shapes_names_the_key) {
  float x[4 * 3] = {0}, y[2 * 3] = {0};
  cap_fx f;
  cap_open(&f, x, 4);
  uint64_t key = 0xabcdef;
  size_t nout = 0;
  M_AsyncTensor **outs = M_captureModelSync(f.e.ctx, f.model, &key, 1, &f.x, 1, &nout, f.e.st);
  MAX_OK(f.e.st);
  int64_t shape[2] = {2, 3};
  M_AsyncTensorMap *in2 = M_newAsyncTensorMap(f.e.ctx);
  max_borrow_f32(&f.e, in2, "features", y, shape, 2);
  M_AsyncTensor *t2 = M_getTensorByNameFrom(in2, "features", f.e.st);
  M_replayModelSync(f.e.ctx, f.model, &key, 1, &t2, 1, f.e.st);
  EXPECT_ERROR(f.e.st, "graph key 11259375");
  EXPECT_ERROR(f.e.st, "input 0 ('features') f32 [4, 3], got f32 [2, 3]");
  M_debugVerifyReplayModelSync(f.e.ctx, f.model, &key, 1, &t2, 1, f.e.st);
  EXPECT_ERROR(f.e.st, "graph key 11259375");
  uint64_t other = 1;
  M_replayModelSync(f.e.ctx, f.model, &other, 1, &f.x, 1, f.e.st);
  EXPECT_ERROR(f.e.st, "no captured graph for key 1");
  M_freeTensor(t2);
  M_freeAsyncTensorMap(in2);
  M_freeTensor(outs[0]);
  free(outs);
  cap_close(&f);
}

Test(max_capture, capture_argument_errors) {
  float x[4 * 3] = {0};
  cap_fx f;
  cap_open(&f, x, 4);
  uint64_t keys[2] = {1, 2};
  size_t nout = 99;
  cr_assert_null(M_captureModelSync(f.e.ctx, f.model, keys, 2, &f.x, 1, &nout, f.e.st));
  EXPECT_ERROR(f.e.st, "2 graph keys for 1 device");
  cr_assert_eq(nout, 0);
  cr_assert_null(M_captureModelSync(f.e.ctx, f.model, keys, 0, &f.x, 1, &nout, f.e.st));
  EXPECT_ERROR(f.e.st, "no graph key");
  cr_assert_null(M_captureModelSync(f.e.ctx, f.model, keys, 1, &f.x, 0, &nout, f.e.st));
  EXPECT_ERROR(f.e.st, "the model takes 1 input, got 0");
  M_AsyncTensor **outs = M_captureModelSync(f.e.ctx, f.model, keys, 1, &f.x, 1, &nout, f.e.st);
  MAX_OK(f.e.st);
  cr_assert_null(M_captureModelSync(f.e.ctx, f.model, keys, 1, &f.x, 1, &nout, f.e.st));
  EXPECT_ERROR(f.e.st, "graph key 1 is already captured");
  /* a second key captures alongside */
  M_AsyncTensor **outs2 =
      M_captureModelSync(f.e.ctx, f.model, &keys[1], 1, &f.x, 1, &nout, f.e.st);
  MAX_OK(f.e.st);
  M_freeTensor(outs2[0]);
  free(outs2);
  M_freeTensor(outs[0]);
  free(outs);
  cap_close(&f); /* frees the model with both keys still captured */
}

Test(max_capture, captured_outputs_outlive_the_model) {
  float x[2 * 3];
  max_fill(x, 6, 9, 1.0f);
  cap_fx f;
  cap_open(&f, x, 2);
  uint64_t key = 3;
  size_t nout = 0;
  M_AsyncTensor **outs = M_captureModelSync(f.e.ctx, f.model, &key, 1, &f.x, 1, &nout, f.e.st);
  MAX_OK(f.e.st);
  M_freeModel(f.model);
  f.model = NULL;
  expect_scores(outs[0], x, 2);
  M_freeTensor(outs[0]);
  free(outs);
  cap_close(&f);
}
