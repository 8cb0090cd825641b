/* test_max_flow.c - the MAX C API (include/max/c/) along MAX's documented
 * flows: status -> config -> devices -> context -> compile (sync, async) ->
 * init (no registry, a registry of raw pointers, a registry from a
 * .safetensors file) -> borrow inputs -> execute -> outputs by name -> free
 * in reverse order. Outputs are checked against references computed here in
 * C. Only include/max/c/ is used. */
#include <pthread.h>
#include <stdint.h>

#include "tests/max/max_test.h"

Test(max_common, version_and_fresh_status) {
  cr_assert(M_version() && M_version()[0]);
  M_Status *st = M_newStatus();
  cr_assert(st);
  cr_assert_eq(M_isError(st), 0);
  cr_assert_str_eq(M_getError(st), "");
  cr_assert_eq(M_isError(NULL), 0);
  M_freeStatus(st);
}

Test(max_types, dtype_values_follow_max_bit_encoding) {
  /* integers: 0x80 | log2(bits) << 1 | signed */
  cr_assert_eq(M_INT8, 0x80 | 3 << 1 | 1);
  cr_assert_eq(M_UINT8, 0x86);
  cr_assert_eq(M_INT16, 0x89);
  cr_assert_eq(M_UINT16, 0x88);
  cr_assert_eq(M_INT32, 0x8B);
  cr_assert_eq(M_UINT32, 0x8A);
  cr_assert_eq(M_INT64, 0x8D);
  cr_assert_eq(M_UINT64, 0x8C);
  cr_assert_eq(M_FLOAT16, 0x4F);
  cr_assert_eq(M_BFLOAT16, 0x50);
  cr_assert_eq(M_FLOAT32, 0x51);
  cr_assert_eq(M_FLOAT64, 0x52);
  cr_assert_eq(M_FLOAT8_E4M3FN, 0x4B);
  cr_assert_eq(M_FLOAT8_E4M3FNUZ, 0x4C);
  cr_assert_eq(M_FLOAT8_E5M2, 0x4D);
  cr_assert_eq(M_FLOAT8_E5M2FNUZ, 0x4E);
  cr_assert_eq(M_BOOL, 1);
  cr_assert_eq(M_UNKNOWN, 0);
  cr_assert_eq(M_HOST, 0);
  cr_assert_eq(M_ACCELERATOR, 1);
}

Test(max_device, host_device_and_accelerators_past_the_last) {
  M_Status *st = M_newStatus();
  M_Device *host = M_newDevice(M_HOST, 0, st);
  MAX_OK(st);
  cr_assert_eq(M_getDeviceType(host), M_HOST);
  cr_assert_eq(M_getDeviceId(host), 0);
  cr_assert_eq(M_isHostDevice(host), 1);
  cr_assert_str_eq(M_getDeviceLabel(host), "cpu");
  M_synchronizeDevice(host, st);
  MAX_OK(st);
  /* without the simt-emu opt-in the accelerators are the GPUs kiln finds
   * (test_max_device.c covers the opt-in): one past them is an error */
  cr_assert_eq(unsetenv("KILN_MAX_ACCELERATOR"), 0);
  int n = M_getAcceleratorCount();
  M_Device *gpu = M_newDevice(M_ACCELERATOR, n, st);
  cr_assert_null(gpu);
  cr_assert(M_isError(st));
  cr_assert(strstr(M_getError(st), n ? "accelerator" : "no accelerator: kiln found no GPU"),
            "got: %s", M_getError(st));
  M_Device *bad = M_newDevice(M_HOST, 3, st);
  cr_assert_null(bad);
  cr_assert(M_isError(st));
  M_freeDevice(host);
  M_freeStatus(st);
}

Test(max_tensor, spec_accessors) {
  M_Status *st = M_newStatus();
  M_Device *host = M_newDevice(M_HOST, 0, st);
  int64_t shape[3] = {2, M_DYNAMIC_DIMENSION_VALUE, 7};
  M_TensorSpec *s = M_newTensorSpec(shape, 3, M_INT32, "ids", host);
  cr_assert(s);
  cr_assert_eq(M_getRank(s), 3);
  cr_assert_eq(M_getDimAt(s, 0), 2);
  cr_assert_eq(M_getDimAt(s, 1), M_DYNAMIC_DIMENSION_VALUE);
  cr_assert_eq(M_getDimAt(s, 2), 7);
  cr_assert_eq(M_getDimAt(s, 3), 0, "out of range axis gives 0");
  cr_assert_eq(M_getDtype(s), M_INT32);
  cr_assert_str_eq(M_getName(s), "ids");
  cr_assert_eq(M_isDynamicRanked(s), 0);
  cr_assert_eq(M_getDeviceTypeFromSpec(s), M_HOST);
  cr_assert_eq(M_getDeviceIdFromSpec(s), 0);
  M_TensorSpec *d = M_newTensorSpec(NULL, M_DYNAMIC_RANK_VALUE, M_FLOAT32, "any", NULL);
  cr_assert(d);
  cr_assert_eq(M_isDynamicRanked(d), 1);
  cr_assert_eq(M_getRank(d), M_DYNAMIC_RANK_VALUE);
  M_freeTensorSpec(d);
  M_freeTensorSpec(s);
  M_freeDevice(host);
  M_freeStatus(st);
}

/* relu.mlir: x [5] -> y [5], argument / result names x and y. */
static void run_relu(max_env *e, M_AsyncModel *model) {
  float x[5] = {-2.0f, -0.5f, 0.0f, 1.5f, 3.0f}, want[5];
  for (int i = 0; i < 5; i++) want[i] = x[i] > 0 ? x[i] : 0.0f;
  int64_t shape[1] = {5};
  M_AsyncTensorMap *inputs = M_newAsyncTensorMap(e->ctx);
  cr_assert(inputs);
  max_borrow_f32(e, inputs, "x", x, shape, 1);
  M_AsyncTensorMap *outputs = M_executeModelSync(e->ctx, model, inputs, e->st);
  MAX_OK(e->st);
  cr_assert(outputs);
  max_expect_f32(e, outputs, "y", want, 5, 0.0f);
  M_freeAsyncTensorMap(outputs);
  M_freeAsyncTensorMap(inputs);
}

Test(max_flow, relu_compiled_sync) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_EX("relu.mlir"), 1);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  MAX_OK(e.st);
  cr_assert(model);
  M_waitForModel(model, e.st);
  MAX_OK(e.st);
  run_relu(&e, model);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_flow, relu_compiled_async_executed_without_waiting) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, MAX_EX("relu.mlir"));
  M_AsyncCompiledModel *cm = M_compileModel(e.ctx, &cc, e.st);
  MAX_OK(e.st);
  cr_assert(cm);
  cr_assert_null(cc);
  /* no M_waitForCompilation / M_waitForModel: the execute waits */
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  MAX_OK(e.st);
  cr_assert(model);
  run_relu(&e, model);
  run_relu(&e, model); /* a second execute on the same model */
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_flow, compiled_model_freed_before_its_model) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, MAX_EX("relu.mlir"));
  M_AsyncCompiledModel *cm = M_compileModel(e.ctx, &cc, e.st);
  MAX_OK(e.st);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  MAX_OK(e.st);
  M_freeCompiledModel(cm); /* while compile and init may still run */
  run_relu(&e, model);
  M_freeModel(model);
  max_env_close(&e);
}

/* small_mlp.mlir: features [batch, 3] -> scores [batch, 2] =
 * relu(features @ fc.weight + fc.bias). */
static const float W[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
static const float B[2] = {0.1f, -0.2f};

static void run_small_mlp(max_env *e, M_AsyncModel *model, int batch, const float *w,
                          const float *bias) {
  float x[8 * 3], want[8 * 2];
  cr_assert(batch <= 8);
  max_fill(x, (size_t)batch * 3, (unsigned)batch, 2.0f);
  max_ref_dense(x, w, bias, want, batch, 3, 2, 1);
  int64_t shape[2] = {batch, 3};
  M_AsyncTensorMap *inputs = M_newAsyncTensorMap(e->ctx);
  max_borrow_f32(e, inputs, "features", x, shape, 2);
  M_AsyncTensorMap *outputs = M_executeModelSync(e->ctx, model, inputs, e->st);
  MAX_OK(e->st);
  M_AsyncTensor *scores = M_getTensorByNameFrom(outputs, "scores", e->st);
  MAX_OK(e->st);
  M_TensorSpec *spec = M_getTensorSpec(scores);
  cr_assert_eq(M_getRank(spec), 2);
  cr_assert_eq(M_getDimAt(spec, 0), batch);
  cr_assert_eq(M_getDimAt(spec, 1), 2);
  cr_assert_str_eq(M_getName(spec), "scores");
  M_freeTensorSpec(spec);
  M_freeTensor(scores);
  max_expect_f32(e, outputs, "scores", want, (size_t)batch * 2, 1e-5f);
  M_freeAsyncTensorMap(outputs);
  M_freeAsyncTensorMap(inputs);
}

Test(max_flow, weights_registry_and_symbolic_batch_at_two_sizes) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_GRAPH("small_mlp.mlir"), 0);
  const char *names[2] = {"fc.weight", "fc.bias"};
  const void *data[2] = {W, B};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 2, e.st);
  MAX_OK(e.st);
  M_AsyncModel *model = M_initModel(e.ctx, cm, reg, e.st);
  MAX_OK(e.st);
  M_freeWeightsRegistry(reg); /* the model copied the entries; the data stays ours */
  M_waitForModel(model, e.st);
  MAX_OK(e.st);
  run_small_mlp(&e, model, 2, W, B);
  run_small_mlp(&e, model, 5, W, B); /* same compile, another batch */
  run_small_mlp(&e, model, 1, W, B);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_flow, two_models_from_one_compile_with_different_weights) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_GRAPH("small_mlp.mlir"), 1);
  const char *names[2] = {"fc.bias", "fc.weight"};
  float w2[6], b2[2] = {1.0f, 2.0f};
  for (int i = 0; i < 6; i++) w2[i] = -W[i];
  const void *d1[2] = {B, W}, *d2[2] = {b2, w2};
  M_WeightsRegistry *r1 = M_newWeightsRegistry(names, d1, 2, e.st);
  M_WeightsRegistry *r2 = M_newWeightsRegistry(names, d2, 2, e.st);
  MAX_OK(e.st);
  M_AsyncModel *m1 = M_initModel(e.ctx, cm, r1, e.st);
  M_AsyncModel *m2 = M_initModel(e.ctx, cm, r2, e.st);
  MAX_OK(e.st);
  run_small_mlp(&e, m1, 3, W, B);
  run_small_mlp(&e, m2, 3, w2, b2);
  run_small_mlp(&e, m1, 4, W, B);
  M_freeModel(m2);
  M_freeModel(m1);
  M_freeWeightsRegistry(r2);
  M_freeWeightsRegistry(r1);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_flow, default_input_and_output_names) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_GRAPH("add2.mlir"), 1);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  MAX_OK(e.st);
  float a[8], b[8], want[8];
  max_fill(a, 8, 1, 3.0f);
  max_fill(b, 8, 2, 3.0f);
  for (int i = 0; i < 8; i++) want[i] = a[i] + b[i];
  int64_t shape[2] = {2, 4};
  M_AsyncTensorMap *inputs = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, inputs, "input1", b, shape, 2);
  max_borrow_f32(&e, inputs, "input0", a, shape, 2);
  M_AsyncTensorMap *outputs = M_executeModelSync(e.ctx, model, inputs, e.st);
  MAX_OK(e.st);
  max_expect_f32(&e, outputs, "output0", want, 8, 0.0f);
  M_freeAsyncTensorMap(outputs);
  M_freeAsyncTensorMap(inputs);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

Test(max_flow, output_tensor_outlives_its_map_and_copies_to_host) {
  max_env e;
  max_env_open(&e);
  M_AsyncCompiledModel *cm = max_compile(&e, MAX_EX("relu.mlir"), 1);
  M_AsyncModel *model = M_initModel(e.ctx, cm, NULL, e.st);
  float x[5] = {1, -1, 2, -2, 3};
  int64_t shape[1] = {5};
  M_AsyncTensorMap *inputs = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, inputs, "x", x, shape, 1);
  M_AsyncTensorMap *outputs = M_executeModelSync(e.ctx, model, inputs, e.st);
  MAX_OK(e.st);
  M_AsyncTensor *y = M_getTensorByNameFrom(outputs, "y", e.st);
  MAX_OK(e.st);
  M_freeAsyncTensorMap(outputs);
  M_freeAsyncTensorMap(inputs);
  const float *v = M_getTensorData(y);
  cr_assert_eq(v[0], 1.0f);
  cr_assert_eq(v[1], 0.0f);
  cr_assert_eq(v[4], 3.0f);
  M_Device *dev = M_getTensorDevice(y);
  cr_assert_eq(M_isHostDevice(dev), 1);
  M_AsyncTensor *copy = M_copyTensorToDevice(y, e.host, e.st);
  MAX_OK(e.st);
  cr_assert_neq(M_getTensorData(copy), M_getTensorData(y));
  cr_assert_eq(memcmp(M_getTensorData(copy), v, 5 * sizeof(float)), 0);
  M_freeTensor(copy);
  M_freeDevice(dev);
  M_freeTensor(y);
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}

/* mlp.mlir with weights from a .safetensors file written here. */
Test(max_flow, mlp_with_weights_from_safetensors) {
  max_env e;
  max_env_open(&e);
  char dir[] = "/tmp/kiln_max_st_XXXXXX";
  cr_assert(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/mlp.safetensors", dir);
  enum { IN = 784, HID = 512, OUT = 10, BATCH = 3 };
  float *w1 = malloc(sizeof(float) * IN * HID), *b1 = malloc(sizeof(float) * HID);
  float *w2 = malloc(sizeof(float) * HID * OUT), *b2 = malloc(sizeof(float) * OUT);
  cr_assert(w1 && b1 && w2 && b2);
  max_fill(w1, IN * HID, 11, 0.05f);
  max_fill(b1, HID, 12, 0.1f);
  max_fill(w2, HID * OUT, 13, 0.05f);
  max_fill(b2, OUT, 14, 0.1f);
  const char *names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  const int ranks[4] = {2, 1, 2, 1};
  const int64_t shapes[4][4] = {{IN, HID}, {HID}, {HID, OUT}, {OUT}};
  const float *data[4] = {w1, b1, w2, b2};
  max_write_safetensors(path, 4, names, ranks, shapes, data);

  M_AsyncCompiledModel *cm = max_compile(&e, MAX_EX("mlp.mlir"), 0);
  const char *paths[1] = {path};
  M_Safetensors *sf = M_loadSafetensors(paths, 1, e.host, e.st);
  MAX_OK(e.st);
  cr_assert_eq(M_getSafetensorCount(sf), 4);
  cr_assert_null(M_getSafetensorName(sf, 4));
  for (size_t i = 0; i < 4; i++) {
    const char *nm = M_getSafetensorName(sf, i);
    int k = 0;
    while (k < 4 && strcmp(names[k], nm) != 0) k++;
    cr_assert(k < 4, "unexpected tensor %s", nm);
    cr_assert_eq(M_getSafetensorDtype(sf, nm, e.st), M_FLOAT32);
    cr_assert_eq(M_getSafetensorRank(sf, nm, e.st), (size_t)ranks[k]);
    int64_t shp[4] = {0};
    M_getSafetensorShape(sf, nm, shp, e.st);
    MAX_OK(e.st);
    size_t numel = 1;
    for (int a = 0; a < ranks[k]; a++) {
      cr_assert_eq(shp[a], shapes[k][a]);
      numel *= (size_t)shp[a];
    }
    cr_assert_eq(M_getSafetensorNumBytes(sf, nm, e.st), numel * 4);
    cr_assert_eq(memcmp(M_getSafetensorData(sf, nm, e.st), data[k], numel * 4), 0);
  }
  M_WeightsRegistry *reg = M_newWeightsRegistryFromSafetensors(sf, e.st);
  MAX_OK(e.st);
  M_AsyncModel *model = M_initModel(e.ctx, cm, reg, e.st);
  MAX_OK(e.st);
  M_waitForModel(model, e.st);
  MAX_OK(e.st);

  float x[BATCH * IN], h[BATCH * HID], want[BATCH * OUT];
  max_fill(x, BATCH * IN, 15, 1.0f);
  max_ref_dense(x, w1, b1, h, BATCH, IN, HID, 1);
  max_ref_dense(h, w2, b2, want, BATCH, HID, OUT, 0);
  int64_t shape[2] = {BATCH, IN};
  M_AsyncTensorMap *inputs = M_newAsyncTensorMap(e.ctx);
  max_borrow_f32(&e, inputs, "pixels", x, shape, 2);
  M_AsyncTensorMap *outputs = M_executeModelSync(e.ctx, model, inputs, e.st);
  MAX_OK(e.st);
  max_expect_f32(&e, outputs, "logits", want, BATCH * OUT, 1e-4f);

  M_freeAsyncTensorMap(outputs);
  M_freeAsyncTensorMap(inputs);
  M_freeModel(model);
  M_freeWeightsRegistry(reg);
  M_freeSafetensors(sf);
  M_freeCompiledModel(cm);
  max_env_close(&e);
  free(w1);
  free(b1);
  free(w2);
  free(b2);
  unlink(path);
  rmdir(dir);
}

/* Several threads execute one model at once, right after the asynchronous
 * compile and init (no waits: every thread's first execute waits). */
typedef struct exec_job {
  max_env *e;
  M_AsyncModel *model;
  int batch, bad;
} exec_job;

static void *exec_worker(void *arg) {
  exec_job *j = arg;
  M_Status *st = M_newStatus();
  for (int r = 0; r < 10 && st; r++) {
    float x[8 * 3], want[8 * 2];
    max_fill(x, (size_t)j->batch * 3, (unsigned)(j->batch + r), 2.0f);
    max_ref_dense(x, W, B, want, j->batch, 3, 2, 1);
    int64_t shape[2] = {j->batch, 3};
    M_TensorSpec *spec = M_newTensorSpec(shape, 2, M_FLOAT32, "features", j->e->host);
    M_AsyncTensorMap *in = M_newAsyncTensorMap(j->e->ctx);
    M_borrowTensorInto(in, x, spec, st);
    M_AsyncTensorMap *out = M_executeModelSync(j->e->ctx, j->model, in, st);
    M_AsyncTensor *t = out ? M_getTensorByNameFrom(out, "scores", st) : NULL;
    const float *got = t ? M_getTensorData(t) : NULL;
    if (!got || M_getTensorNumElements(t) != (size_t)j->batch * 2) j->bad++;
    for (int i = 0; got && i < j->batch * 2; i++)
      if (fabsf(got[i] - want[i]) > 1e-5f) j->bad++;
    M_freeTensor(t);
    M_freeAsyncTensorMap(out);
    M_freeAsyncTensorMap(in);
    M_freeTensorSpec(spec);
  }
  if (!st) j->bad++;
  M_freeStatus(st);
  return NULL;
}

Test(max_flow, concurrent_executes_on_one_model) {
  max_env e;
  max_env_open(&e);
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, MAX_GRAPH("small_mlp.mlir"));
  M_AsyncCompiledModel *cm = M_compileModel(e.ctx, &cc, e.st);
  MAX_OK(e.st);
  const char *names[2] = {"fc.weight", "fc.bias"};
  const void *data[2] = {W, B};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 2, e.st);
  M_AsyncModel *model = M_initModel(e.ctx, cm, reg, e.st);
  MAX_OK(e.st);
  M_freeWeightsRegistry(reg);
  enum { N = 4 };
  pthread_t th[N];
  exec_job jobs[N];
  for (int i = 0; i < N; i++) {
    jobs[i] = (exec_job){&e, model, i + 1, 0};
    cr_assert_eq(pthread_create(&th[i], NULL, exec_worker, &jobs[i]), 0);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(jobs[i].bad, 0, "thread %d (batch %d) saw %d wrong results", i, jobs[i].batch,
                 jobs[i].bad);
  }
  M_freeModel(model);
  M_freeCompiledModel(cm);
  max_env_close(&e);
}
