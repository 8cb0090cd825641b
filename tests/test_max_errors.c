/* test_max_errors.c - the MAX C API's error paths: a missing model file
 * (sync and async, surfacing at every later wait), a config without a path,
 * bad input shapes and dtypes, symbolic dims that disagree, unknown and
 * missing tensor names, missing weights, malformed safetensors use, bad
 * specs, and every free on NULL. Each failing call leaves NULL (where it
 * returns a pointer) and a message saying what went wrong. Only
 * include/max/c/ is used. */
#include <stdint.h>

#include "tests/max/max_test.h"

#define EXPECT_ERROR(st, needle)                                                           \
  do {                                                                                     \
    cr_assert(M_isError(st), "expected an error containing \"%s\"", needle);               \
    cr_assert(strstr(M_getError(st), needle), "error \"%s\" lacks \"%s\"", M_getError(st), \
              needle);                                                                     \
  } while (0)

Test(max_errors, frees_accept_null) {
  M_freeStatus(NULL);
  M_freeRuntimeConfig(NULL);
  M_freeRuntimeContext(NULL);
  M_freeDevice(NULL);
  M_freeCompileConfig(NULL);
  M_freeCompiledModel(NULL);
  M_freeModel(NULL);
  M_freeTensor(NULL);
  M_freeTensorSpec(NULL);
  M_freeAsyncTensorMap(NULL);
  M_freeWeightsRegistry(NULL);
  M_freeSafetensors(NULL);
  cr_assert_null(M_getDeviceLabel(NULL));
  cr_assert_null(M_getTensorData(NULL));
  cr_assert_eq(M_getTensorNumElements(NULL), 0);
}

Test(max_errors, missing_model_file_sync) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, "/nonexistent/kiln/model.mlir");
  M_AsyncCompiledModel *cm = M_compileModelSync(e.ctx, &cc, e.st);
  cr_assert_null(cm);
  cr_assert_null(cc, "the config is taken even on failure");
  EXPECT_ERROR(e.st, "/nonexistent/kiln/model.mlir");
  max_env_close(&e);
}

Test(max_errors, missing_model_file_async_surfaces_at_every_wait) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, "/nonexistent/kiln/model.mlir");
  M_AsyncCompiledModel *cm = M_compileModel(e.ctx, &cc, e.st);
  MAX_OK(e.st); /* asynchronous: the error comes at the wait */
  cr_assert(cm);
  cr_assert_null(cc);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  MAX_OK(e.st);
  cr_assert(model);
  M_waitForCompilation(cm, e.st);
  EXPECT_ERROR(e.st, "/nonexistent/kiln/model.mlir");
  M_waitForModel(model, e.st);
  EXPECT_ERROR(e.st, "model compilation failed");
  M_AsyncTensorMap *inputs = M_newAsyncTensorMap(e.ctx);
  M_AsyncTensorMap *outputs = M_executeModelSync(e.ctx, model, inputs, e.st);
  cr_assert_null(outputs);
  EXPECT_ERROR(e.st, "/nonexistent/kiln/model.mlir");
  M_freeAsyncTensorMap(inputs);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, malformed_model_file) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, MAX_EX("bad/undefined_value.mlir"));
  cr_assert_null(M_compileModelSync(e.ctx, &cc, e.st));
  EXPECT_ERROR(e.st, "undefined_value.mlir:");
  max_env_close(&e);
}

Test(max_errors, compile_config_without_path) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  cr_assert_null(M_compileModel(e.ctx, &cc, e.st));
  cr_assert_null(cc);
  EXPECT_ERROR(e.st, "M_setModelPath");
  M_CompileConfig *none = NULL;
  cr_assert_null(M_compileModelSync(e.ctx, &none, e.st));
  EXPECT_ERROR(e.st, "compile config is NULL");
  max_env_close(&e);
}

/* relu.mlir (x [5] -> y), compiled and initialized. */
static M_AsyncModel *relu_model(max_env *e, M_AsyncCompiledModel **cm) {
  *cm = max_compile(e, MAX_EX("relu.mlir"), 1);
  M_AsyncModel *m = M_initModel(e->ctx, *cm, NULL, e->st);
  MAX_OK(e->st);
  return m;
}

Test(max_errors, bad_input_shape_dtype_and_rank) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm;
  M_AsyncModel *model = relu_model(&e, &cm);
  float x[6] = {0};
  int32_t xi[5] = {0};
  int64_t four[1] = {4}, five[1] = {5}, two_by_three[2] = {2, 3};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);

  max_borrow_f32(&e, in, "x", x, four, 1);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "input 'x' (0): axis 0 expected 5, got 4");

  max_borrow_f32(&e, in, "x", x, two_by_three, 2); /* replaces x */
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "expected rank 1, got 2");

  M_TensorSpec *spec = M_newTensorSpec(five, 1, M_INT32, "x", e.host);
  M_borrowTensorInto(in, xi, spec, e.st);
  MAX_OK(e.st);
  M_freeTensorSpec(spec);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "expected dtype f32, got si32");

  max_borrow_f32(&e, in, "x", x, five, 1); /* and the model still runs */
  M_AsyncTensorMap *out = M_executeModelSync(e.ctx, model, in, e.st);
  MAX_OK(e.st);
  M_freeAsyncTensorMap(out);
  M_freeAsyncTensorMap(in);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, symbolic_dimension_mismatch) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_GRAPH("add2.mlir"), 1);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  float a[8] = {0}, b[12] = {0};
  int64_t sa[2] = {2, 4}, sb[2] = {3, 4};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, in, "input0", a, sa, 2);
  max_borrow_f32(&e, in, "input1", b, sb, 2);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "symbolic dimension");
  EXPECT_ERROR(e.st, "'n'");
  M_freeAsyncTensorMap(in);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, symbolic_dimension_mismatch_in_attention_block) {
  /* attention_block.mlir: q, k [batch, seq, 64]; k with another seq. */
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_EX("attention_block.mlir"), 1);
  float gamma[64], beta[64];
  for (int i = 0; i < 64; i++) gamma[i] = 1.0f, beta[i] = 0.0f;
  const char *names[2] = {"ln.gamma", "ln.beta"};
  const void *data[2] = {gamma, beta};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 2, e.st);
  M_AsyncModel *model = M_initModel(e.ctx, cm, reg, e.st);
  MAX_OK(e.st);
  static float q[2 * 3 * 64], k[2 * 4 * 64];
  int64_t sq[3] = {2, 3, 64}, sk[3] = {2, 4, 64};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, in, "input0", q, sq, 3);
  max_borrow_f32(&e, in, "input1", k, sk, 3);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "symbolic dimension");
  EXPECT_ERROR(e.st, "'seq'");
  max_borrow_f32(&e, in, "input1", k, sq, 3); /* agreeing shapes run */
  M_AsyncTensorMap *out = M_executeModelSync(e.ctx, model, in, e.st);
  MAX_OK(e.st);
  M_AsyncTensor *t = M_getTensorByNameFrom(out, "output1", e.st);
  MAX_OK(e.st);
  cr_assert_eq(M_getTensorNumElements(t), 2 * 3 * 64);
  M_freeTensor(t);
  M_freeAsyncTensorMap(out);
  M_freeAsyncTensorMap(in);
  M_freeModel(model);
  M_freeWeightsRegistry(reg);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, symbolic_dimension_mismatch_in_an_expression) {
  /* shifted.mlir: a [n, 2], b [n + 1, 2] */
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_GRAPH("shifted.mlir"), 1);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  float a[4] = {1, -1, 2, -2}, b[6] = {-3, 3, 4, -4, 5, -5};
  int64_t s22[2] = {2, 2}, s32[2] = {3, 2};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, in, "input0", a, s22, 2);
  max_borrow_f32(&e, in, "input1", b, s22, 2);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "symbolic dimension");
  max_borrow_f32(&e, in, "input1", b, s32, 2);
  M_AsyncTensorMap *out = M_executeModelSync(e.ctx, model, in, e.st);
  MAX_OK(e.st);
  const float want0[4] = {1, 0, 2, 0}, want1[6] = {0, 3, 4, 0, 5, 0};
  max_expect_f32(&e, out, "output0", want0, 4, 0.0f);
  max_expect_f32(&e, out, "output1", want1, 6, 0.0f);
  M_freeAsyncTensorMap(out);
  M_freeAsyncTensorMap(in);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, unknown_and_missing_tensor_names) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm;
  M_AsyncModel *model = relu_model(&e, &cm);
  float x[5] = {0};
  int64_t five[1] = {5};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "input 'x' (0 of 1) is missing from the input map");
  max_borrow_f32(&e, in, "x", x, five, 1);
  max_borrow_f32(&e, in, "bogus", x, five, 1);
  cr_assert_null(M_executeModelSync(e.ctx, model, in, e.st));
  EXPECT_ERROR(e.st, "tensor 'bogus' of the input map is not an input of the model");
  M_freeAsyncTensorMap(in);

  in = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, in, "x", x, five, 1);
  M_AsyncTensorMap *out = M_executeModelSync(e.ctx, model, in, e.st);
  MAX_OK(e.st);
  cr_assert_null(M_getTensorByNameFrom(out, "nope", e.st));
  EXPECT_ERROR(e.st, "no tensor named 'nope'");
  EXPECT_ERROR(e.st, "'y'"); /* says what the map holds */
  cr_assert_null(M_getTensorByNameFrom(NULL, "y", e.st));
  EXPECT_ERROR(e.st, "tensor map is NULL");
  M_freeAsyncTensorMap(out);
  M_freeAsyncTensorMap(in);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, bad_specs_are_refused_by_borrow) {
  max_env e;
  max_env_open(&e);
  float x[4] = {0};
  int64_t dyn[2] = {M_DYNAMIC_DIMENSION_VALUE, 4}, ok[1] = {4};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);
  M_TensorSpec *s = M_newTensorSpec(dyn, 2, M_FLOAT32, "x", e.host);
  M_borrowTensorInto(in, x, s, e.st);
  EXPECT_ERROR(e.st, "axis 0 is dynamic");
  M_freeTensorSpec(s);
  s = M_newTensorSpec(NULL, M_DYNAMIC_RANK_VALUE, M_FLOAT32, "x", e.host);
  M_borrowTensorInto(in, x, s, e.st);
  EXPECT_ERROR(e.st, "dynamic rank");
  M_freeTensorSpec(s);
  s = M_newTensorSpec(ok, 1, M_UNKNOWN, "x", e.host);
  M_borrowTensorInto(in, x, s, e.st);
  EXPECT_ERROR(e.st, "unknown dtype");
  M_freeTensorSpec(s);
  s = M_newTensorSpec(ok, 1, M_FLOAT32, "x", e.host);
  M_borrowTensorInto(in, NULL, s, e.st);
  EXPECT_ERROR(e.st, "NULL");
  M_freeTensorSpec(s);
  cr_assert_null(M_newTensorSpec(NULL, 2, M_FLOAT32, "x", e.host), "rank 2 with no shape");
  M_freeAsyncTensorMap(in);
  max_env_close(&e);
}

Test(max_errors, missing_weights) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_GRAPH("small_mlp.mlir"), 1);
  M_AsyncModel *none = M_initModel(e.ctx, cm, NULL, e.st);
  MAX_OK(e.st); /* surfaces at the wait */
  M_waitForModel(none, e.st);
  EXPECT_ERROR(e.st, "no weights registry");
  float w[6] = {0};
  const char *names[1] = {"fc.weight"};
  const void *data[1] = {w};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 1, e.st);
  MAX_OK(e.st);
  M_AsyncModel *partial = M_initModel(e.ctx, cm, reg, e.st);
  M_waitForModel(partial, e.st);
  EXPECT_ERROR(e.st, "weight 'fc.bias' of the model is not in the weights registry");
  const char *twice[2] = {"a", "a"};
  const void *d2[2] = {w, w};
  cr_assert_null(M_newWeightsRegistry(twice, d2, 2, e.st));
  EXPECT_ERROR(e.st, "given twice");
  M_freeModel(partial);
  M_freeWeightsRegistry(reg);
  M_freeModel(none);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_errors, safetensors_errors) {
  max_env e;
  max_env_open(&e);
  const char *missing[1] = {"/nonexistent/kiln/w.safetensors"};
  cr_assert_null(M_loadSafetensors(missing, 1, e.host, e.st));
  EXPECT_ERROR(e.st, "/nonexistent/kiln/w.safetensors");

  char dir[] = "/tmp/kiln_max_ste_XXXXXX";
  cr_assert(mkdtemp(dir));
  char p1[256], p2[256], p3[256];
  snprintf(p1, sizeof p1, "%s/a.safetensors", dir);
  snprintf(p2, sizeof p2, "%s/b.safetensors", dir);
  snprintf(p3, sizeof p3, "%s/bad.safetensors", dir);
  float v[2] = {1, 2};
  const char *names[1] = {"w"};
  const int ranks[1] = {1};
  const int64_t shapes[1][4] = {{2}};
  const float *data[1] = {v};
  max_write_safetensors(p1, 1, names, ranks, shapes, data);
  max_write_safetensors(p2, 1, names, ranks, shapes, data);
  FILE *f = fopen(p3, "wb");
  cr_assert(f);
  fputs("not a safetensors file", f);
  fclose(f);

  const char *both[2] = {p1, p2};
  cr_assert_null(M_loadSafetensors(both, 2, e.host, e.st));
  EXPECT_ERROR(e.st, "tensor 'w'");
  const char *bad[1] = {p3};
  cr_assert_null(M_loadSafetensors(bad, 1, e.host, e.st));
  EXPECT_ERROR(e.st, "bad.safetensors");

  const char *one[1] = {p1};
  M_Safetensors *sf = M_loadSafetensors(one, 1, NULL, e.st);
  MAX_OK(e.st);
  cr_assert_null(M_getSafetensorData(sf, "nope", e.st));
  EXPECT_ERROR(e.st, "no tensor named 'nope'");
  cr_assert_eq(M_getSafetensorNumBytes(sf, "nope", e.st), 0);
  cr_assert_eq(M_getSafetensorDtype(sf, "nope", e.st), M_UNKNOWN);
  EXPECT_ERROR(e.st, "nope");
  cr_assert_eq(M_getSafetensorNumBytes(sf, "w", e.st), 8);
  MAX_OK(e.st);
  M_freeSafetensors(sf);
  unlink(p1);
  unlink(p2);
  unlink(p3);
  rmdir(dir);
  max_env_close(&e);
}

Test(max_errors, accelerator_requests_fail_clearly) {
  max_env e;
  max_env_open(&e);
  /* one past the accelerators there are (none without a GPU or the opt-in) */
  M_Device *gpu = M_newDevice(M_ACCELERATOR, M_getAcceleratorCount(), e.st);
  cr_assert_null(gpu);
  EXPECT_ERROR(e.st, "accelerator");
  float x[1] = {0};
  int64_t one[1] = {1};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, in, "x", x, one, 1);
  M_AsyncTensor *t = M_getTensorByNameFrom(in, "x", e.st);
  MAX_OK(e.st);
  cr_assert_null(M_copyTensorToDevice(t, NULL, e.st));
  EXPECT_ERROR(e.st, "device is NULL");
  M_freeTensor(t);
  M_freeAsyncTensorMap(in);
  max_env_close(&e);
}
