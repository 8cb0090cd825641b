/* test_max_device.c - the MAX C API's accelerators (include/max/c/device.h,
 * context.h, tensor.h) over kiln's device models: M_getAcceleratorCount and
 * M_newDevice(M_ACCELERATOR, ...) with and without the simt-emu opt-in
 * (KILN_MAX_ACCELERATOR=simt-emu), the mlp example run by a MAX program on
 * the simt-emu accelerator against the same program on the host, tensors
 * copied to and from the accelerator, capture / replay / verify on it, and
 * the errors. Real GPUs come first in the numbering: where kiln finds one,
 * the tests that need "no GPU" are skipped and the others run on it. Only
 * kiln_device_count (kiln/device.h) is used besides include/max/c/, to know
 * what the machine has. */
#include <stdint.h>

#include "kiln/device.h"
#include "tests/max/max_test.h"

#define MLP_IN 784
#define MLP_HID 512
#define MLP_OUT 10

static int real_gpus(void) {
  int nc = kiln_device_count(KILN_DEVICE_CUDA, NULL);
  int nh = kiln_device_count(KILN_DEVICE_HIP, NULL);
  return (nc > 0 ? nc : 0) + (nh > 0 ? nh : 0);
}

static void opt_in(void) { cr_assert_eq(setenv("KILN_MAX_ACCELERATOR", "simt-emu", 1), 0); }
static void opt_out(void) { cr_assert_eq(unsetenv("KILN_MAX_ACCELERATOR"), 0); }

#define EXPECT_ERROR(st, needle)                                                          \
  do {                                                                                    \
    cr_assert(M_isError(st), "expected an error containing '%s'", needle);               \
    cr_assert(strstr(M_getError(st), needle), "error '%s' lacks '%s'", M_getError(st), \
              needle);                                                                    \
  } while (0)

/* A context on the host and accelerator 0 (simt-emu where there is no
 * GPU): e->host is the host device, accel the accelerator's handle. */
typedef struct accel_env {
  max_env e;
  M_Device *accel;
} accel_env;

static void accel_env_open(accel_env *a) {
  opt_in();
  max_env *e = &a->e;
  e->st = M_newStatus();
  e->cfg = M_newRuntimeConfig();
  cr_assert(e->st && e->cfg);
  e->host = M_newDevice(M_HOST, 0, e->st);
  MAX_OK(e->st);
  a->accel = M_newDevice(M_ACCELERATOR, 0, e->st);
  MAX_OK(e->st);
  cr_assert(a->accel);
  M_runtimeConfigAddDevice(e->cfg, e->host);
  M_runtimeConfigAddDevice(e->cfg, a->accel);
  e->ctx = M_newRuntimeContext(e->cfg, e->st);
  MAX_OK(e->st);
  cr_assert(e->ctx);
}

static void accel_env_close(accel_env *a) {
  M_freeRuntimeContext(a->e.ctx);
  M_freeDevice(a->accel);
  M_freeDevice(a->e.host);
  M_freeRuntimeConfig(a->e.cfg);
  M_freeStatus(a->e.st);
}

/* The mlp example's weights (fixed seeds) and a registry of them. */
typedef struct mlp_weights {
  float w1[MLP_IN * MLP_HID], b1[MLP_HID], w2[MLP_HID * MLP_OUT], b2[MLP_OUT];
} mlp_weights;

static mlp_weights *mlp_weights_new(void) {
  mlp_weights *w = malloc(sizeof *w);
  cr_assert(w);
  max_fill(w->w1, MLP_IN * MLP_HID, 1, 0.05f);
  max_fill(w->b1, MLP_HID, 2, 0.1f);
  max_fill(w->w2, MLP_HID * MLP_OUT, 3, 0.1f);
  max_fill(w->b2, MLP_OUT, 4, 0.1f);
  return w;
}

static M_WeightsRegistry *mlp_registry(max_env *e, const mlp_weights *w) {
  const char *names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  const void *data[4] = {w->w1, w->b1, w->w2, w->b2};
  M_WeightsRegistry *r = M_newWeightsRegistry(names, data, 4, e->st);
  MAX_OK(e->st);
  return r;
}

static void mlp_reference(const mlp_weights *w, const float *x, float *y, int batch) {
  float *h = malloc(sizeof(float) * (size_t)batch * MLP_HID);
  cr_assert(h);
  max_ref_dense(x, w->w1, w->b1, h, batch, MLP_IN, MLP_HID, 1);
  max_ref_dense(h, w->w2, w->b2, y, batch, MLP_HID, MLP_OUT, 0);
  free(h);
}

/* Compile (async), init with the registry and run the mlp on x[batch, 784]
 * in e's context; the logits are copied into y. */
static void mlp_run(max_env *e, const mlp_weights *w, float *x, int batch, float *y) {
  M_AsyncCompiledModel *cm = max_compile(e, MAX_EX("mlp.mlir"), 0);
  M_WeightsRegistry *reg = mlp_registry(e, w);
  M_AsyncModel *m = M_initModel(e->ctx, cm, reg, e->st);
  MAX_OK(e->st);
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e->ctx);
  int64_t shape[2] = {batch, MLP_IN};
  max_borrow_f32(e, in, "pixels", x, shape, 2);
  M_AsyncTensorMap *out = M_executeModelSync(e->ctx, m, in, e->st);
  MAX_OK(e->st);
  M_AsyncTensor *t = M_getTensorByNameFrom(out, "logits", e->st);
  MAX_OK(e->st);
  cr_assert_eq(M_getTensorNumElements(t), (size_t)batch * MLP_OUT);
  M_Device *where = M_getTensorDevice(t);
  cr_assert_eq(M_isHostDevice(where), 1, "outputs come back to the host");
  M_freeDevice(where);
  const float *got = M_getTensorData(t);
  cr_assert(got);
  memcpy(y, got, sizeof(float) * (size_t)batch * MLP_OUT);
  M_freeTensor(t);
  M_freeAsyncTensorMap(out);
  M_freeAsyncTensorMap(in);
  M_freeModel(m);
  M_freeWeightsRegistry(reg);
  M_freeCompiledModel(cm);
}

Test(max_accel, count_without_opt_in_is_the_real_gpus) {
  opt_out();
  cr_assert_eq(M_getAcceleratorCount(), real_gpus());
  cr_assert_eq(setenv("KILN_MAX_ACCELERATOR", "bogus", 1), 0);
  cr_assert_eq(M_getAcceleratorCount(), real_gpus(), "only 'simt-emu' opts in");
}

Test(max_accel, count_with_opt_in_adds_simt_emu_only_without_gpus) {
  opt_in();
  int n = real_gpus();
  cr_assert_eq(M_getAcceleratorCount(), n > 0 ? n : 1);
}

Test(max_accel, no_accelerator_is_a_clear_error) {
  if (real_gpus() > 0) cr_skip_test("this machine has a GPU");
  opt_out();
  M_Status *st = M_newStatus();
  M_Device *d = M_newDevice(M_ACCELERATOR, 0, st);
  cr_assert_null(d);
  EXPECT_ERROR(st, "M_newDevice(M_ACCELERATOR, 0): no accelerator: kiln found no GPU (cuda: ");
  EXPECT_ERROR(st, "set KILN_MAX_ACCELERATOR=simt-emu");
  cr_assert_eq(setenv("KILN_MAX_ACCELERATOR", "gpu", 1), 0);
  cr_assert_null(M_newDevice(M_ACCELERATOR, 0, st));
  EXPECT_ERROR(st, "KILN_MAX_ACCELERATOR='gpu' is not 'simt-emu'");
  M_freeStatus(st);
}

Test(max_accel, simt_emu_is_accelerator_zero_only) {
  if (real_gpus() > 0) cr_skip_test("this machine has a GPU");
  opt_in();
  M_Status *st = M_newStatus();
  M_Device *d = M_newDevice(M_ACCELERATOR, 0, st);
  MAX_OK(st);
  cr_assert_eq(M_getDeviceType(d), M_ACCELERATOR);
  cr_assert_eq(M_getDeviceId(d), 0);
  cr_assert_eq(M_isHostDevice(d), 0);
  cr_assert_str_eq(M_getDeviceLabel(d), "gpu");
  M_synchronizeDevice(d, st);
  MAX_OK(st);
  cr_assert_null(M_newDevice(M_ACCELERATOR, 1, st));
  EXPECT_ERROR(st, "there is one accelerator (simt-emu");
  cr_assert_null(M_newDevice(M_ACCELERATOR, -1, st));
  EXPECT_ERROR(st, "M_newDevice(M_ACCELERATOR, -1)");
  M_freeDevice(d);
  M_freeStatus(st);
}

Test(max_accel, mlp_on_the_accelerator_matches_the_host) {
  const int batch = 3;
  mlp_weights *w = mlp_weights_new();
  float x[3 * MLP_IN], host_y[3 * MLP_OUT], dev_y[3 * MLP_OUT], ref[3 * MLP_OUT];
  max_fill(x, sizeof x / sizeof x[0], 5, 1.0f);
  mlp_reference(w, x, ref, batch);

  max_env h;
  max_env_open(&h);
  mlp_run(&h, w, x, batch, host_y);
  max_env_close(&h);

  accel_env a;
  accel_env_open(&a);
  mlp_run(&a.e, w, x, batch, dev_y);
  accel_env_close(&a);

  for (int i = 0; i < batch * MLP_OUT; i++) {
    float scale = fabsf(host_y[i]) > 1.0f ? fabsf(host_y[i]) : 1.0f;
    cr_assert(fabsf(dev_y[i] - host_y[i]) <= 1e-4f * scale, "logits[%d]: accelerator %.7g, host %.7g",
              i, dev_y[i], host_y[i]);
    cr_assert(fabsf(dev_y[i] - ref[i]) <= 1e-4f * scale, "logits[%d]: accelerator %.7g, C %.7g", i,
              dev_y[i], ref[i]);
  }
  free(w);
}

Test(max_accel, second_init_and_safetensors_weights_on_the_accelerator) {
  accel_env a;
  accel_env_open(&a);
  max_env *e = &a.e;
  /* small_mlp: scores = relu(features[batch, 3] @ fc.weight[3, 2] + fc.bias) */
  float wt[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, bias[2] = {0.1f, -0.2f};
  char dir[] = "/tmp/kiln_max_dev_XXXXXX", path[128];
  cr_assert(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/w.safetensors", dir);
  const char *names[2] = {"fc.weight", "fc.bias"};
  const int ranks[2] = {2, 1};
  const int64_t shapes[2][4] = {{3, 2}, {2}};
  const float *data[2] = {wt, bias};
  max_write_safetensors(path, 2, names, ranks, shapes, data);
  const char *paths[1] = {path};
  M_Safetensors *sf = M_loadSafetensors(paths, 1, a.accel, e->st); /* read to the host */
  MAX_OK(e->st);
  M_WeightsRegistry *reg = M_newWeightsRegistryFromSafetensors(sf, e->st);
  MAX_OK(e->st);
  M_AsyncCompiledModel *cm = max_compile(e, MAX_GRAPH("small_mlp.mlir"), 1);
  for (int round = 0; round < 2; round++) { /* the second init compiles again */
    M_AsyncModel *m = M_initModel(e->ctx, cm, reg, e->st);
    MAX_OK(e->st);
    float x[4 * 3];
    max_fill(x, 12, 7 + (unsigned)round, 2.0f);
    int64_t shape[2] = {4, 3};
    M_AsyncTensorMap *in = M_newAsyncTensorMap(e->ctx);
    max_borrow_f32(e, in, "features", x, shape, 2);
    M_AsyncTensorMap *out = M_executeModelSync(e->ctx, m, in, e->st);
    MAX_OK(e->st);
    float want[8];
    max_ref_dense(x, wt, bias, want, 4, 3, 2, 1);
    max_expect_f32(e, out, "scores", want, 8, 1e-5f);
    M_freeAsyncTensorMap(out);
    M_freeAsyncTensorMap(in);
    M_freeModel(m);
  }
  M_freeCompiledModel(cm);
  M_freeWeightsRegistry(reg);
  M_freeSafetensors(sf);
  unlink(path);
  rmdir(dir);
  accel_env_close(&a);
}

Test(max_accel, tensors_copy_to_the_accelerator_and_back) {
  accel_env a;
  accel_env_open(&a);
  max_env *e = &a.e;
  float x[6] = {1, -2, 3, -4, 5, -6};
  int64_t shape[2] = {2, 3};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e->ctx);
  max_borrow_f32(e, in, "x", x, shape, 2);
  M_AsyncTensor *t = M_getTensorByNameFrom(in, "x", e->st);
  MAX_OK(e->st);
  M_AsyncTensor *d = M_copyTensorToDevice(t, a.accel, e->st);
  MAX_OK(e->st);
  cr_assert(d);
  cr_assert_null(M_getTensorData(d), "device memory has no host pointer");
  cr_assert_eq(M_getTensorNumElements(d), 6);
  cr_assert_eq(M_getTensorType(d), M_FLOAT32);
  M_Device *where = M_getTensorDevice(d);
  cr_assert_eq(M_getDeviceType(where), M_ACCELERATOR);
  cr_assert_eq(M_getDeviceId(where), 0);
  M_TensorSpec *spec = M_getTensorSpec(d);
  cr_assert_eq(M_getDeviceTypeFromSpec(spec), M_ACCELERATOR);
  cr_assert_eq(M_getRank(spec), 2);
  cr_assert_eq(M_getDimAt(spec, 1), 3);
  M_freeTensorSpec(spec);
  /* a device to device copy, then back to the host through the tensor's own device handle */
  M_AsyncTensor *d2 = M_copyTensorToDevice(d, where, e->st);
  MAX_OK(e->st);
  M_AsyncTensor *back = M_copyTensorToDevice(d2, e->host, e->st);
  MAX_OK(e->st);
  const float *got = M_getTensorData(back);
  cr_assert(got);
  for (int i = 0; i < 6; i++) cr_assert_eq(got[i], x[i]);
  M_freeTensor(back);
  M_freeTensor(d2);
  M_freeDevice(where);
  M_freeTensor(t);
  M_freeAsyncTensorMap(in);
  accel_env_close(&a); /* d outlives the context and its device handle */
  M_freeTensor(d);
}

Test(max_accel, capture_replay_verify_on_the_accelerator) {
  accel_env a;
  accel_env_open(&a);
  max_env *e = &a.e;
  M_AsyncCompiledModel *cm = max_compile(e, MAX_GRAPH("add2.mlir"), 1);
  M_AsyncModel *m = M_initModel(e->ctx, cm, NULL, e->st);
  MAX_OK(e->st);
  float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40};
  int64_t shape[2] = {1, 4};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e->ctx);
  max_borrow_f32(e, in, "input0", x, shape, 2);
  max_borrow_f32(e, in, "input1", y, shape, 2);
  M_AsyncTensor *hx = M_getTensorByNameFrom(in, "input0", e->st);
  M_AsyncTensor *hy = M_getTensorByNameFrom(in, "input1", e->st);
  MAX_OK(e->st);
  M_AsyncTensor *dy = M_copyTensorToDevice(hy, a.accel, e->st); /* one input already there */
  MAX_OK(e->st);
  M_AsyncTensor *ins[2] = {hx, dy};
  uint64_t key = 7;
  size_t nout = 0;
  M_AsyncTensor **outs = M_captureModelSync(e->ctx, m, &key, 1, ins, 2, &nout, e->st);
  MAX_OK(e->st);
  cr_assert_eq(nout, 1);
  const float *o = M_getTensorData(outs[0]);
  cr_assert(o, "captured outputs are host tensors");
  for (int i = 0; i < 4; i++) cr_assert_eq(o[i], x[i] + y[i]);
  for (int i = 0; i < 4; i++) x[i] = (float)(100 * i);
  M_replayModelSync(e->ctx, m, &key, 1, ins, 2, e->st);
  MAX_OK(e->st);
  for (int i = 0; i < 4; i++) cr_assert_eq(o[i], x[i] + y[i], "replay wrote in place");
  M_debugVerifyReplayModelSync(e->ctx, m, &key, 1, ins, 2, e->st);
  MAX_OK(e->st);
  uint64_t two[2] = {7, 8};
  M_replayModelSync(e->ctx, m, two, 2, ins, 2, e->st);
  EXPECT_ERROR(e->st, "2 graph keys for 1 device ("); /* simt-emu, or a GPU found first */
  M_releaseCapturedGraphs(e->ctx, m, &key, 1, e->st);
  MAX_OK(e->st);
  M_replayModelSync(e->ctx, m, &key, 1, ins, 2, e->st);
  EXPECT_ERROR(e->st, "no captured graph for key 7");
  /* a capture left for M_freeModel */
  M_AsyncTensor **outs2 = M_captureModelSync(e->ctx, m, &key, 1, ins, 2, &nout, e->st);
  MAX_OK(e->st);
  M_freeTensor(outs2[0]);
  free(outs2);
  M_freeTensor(outs[0]);
  free(outs);
  M_freeTensor(dy);
  M_freeTensor(hy);
  M_freeTensor(hx);
  M_freeAsyncTensorMap(in);
  M_freeModel(m);
  M_freeCompiledModel(cm);
  accel_env_close(&a);
}

Test(max_accel, errors_on_the_accelerator_name_the_input) {
  accel_env a;
  accel_env_open(&a);
  max_env *e = &a.e;
  M_AsyncCompiledModel *cm = max_compile(e, MAX_GRAPH("add2.mlir"), 0);
  M_AsyncModel *m = M_initModel(e->ctx, cm, NULL, e->st);
  MAX_OK(e->st);
  float x[4] = {0}, y[8] = {0};
  int64_t one4[2] = {1, 4}, two4[2] = {2, 4};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(e->ctx);
  max_borrow_f32(e, in, "input0", x, one4, 2);
  max_borrow_f32(e, in, "input1", y, two4, 2);
  cr_assert_null(M_executeModelSync(e->ctx, m, in, e->st));
  EXPECT_ERROR(e->st, "symbolic dimension 'n'");
  /* borrowed data is host memory */
  M_TensorSpec *dspec = M_newTensorSpec(one4, 2, M_FLOAT32, "input0", a.accel);
  M_borrowTensorInto(in, x, dspec, e->st);
  EXPECT_ERROR(e->st, "borrowed data must be host memory");
  M_freeTensorSpec(dspec);
  M_freeAsyncTensorMap(in);
  M_freeModel(m);
  M_freeCompiledModel(cm);
  accel_env_close(&a);
}

Test(max_accel, host_models_refuse_accelerator_tensors) {
  accel_env a;
  accel_env_open(&a);
  max_env h;
  max_env_open(&h); /* a host-only context */
  M_AsyncCompiledModel *cm = max_compile(&h, MAX_GRAPH("add2.mlir"), 1);
  M_AsyncModel *m = M_initModel(h.ctx, cm, NULL, h.st);
  MAX_OK(h.st);
  float x[4] = {1, 2, 3, 4};
  int64_t shape[2] = {1, 4};
  M_AsyncTensorMap *in = M_newAsyncTensorMap(h.ctx);
  max_borrow_f32(&h, in, "input0", x, shape, 2);
  M_AsyncTensor *hx = M_getTensorByNameFrom(in, "input0", h.st);
  M_AsyncTensor *dx = M_copyTensorToDevice(hx, a.accel, h.st);
  MAX_OK(h.st);
  M_AsyncTensor *ins[2] = {hx, dx};
  uint64_t key = 1;
  size_t nout = 0;
  cr_assert_null(M_captureModelSync(h.ctx, m, &key, 1, ins, 2, &nout, h.st));
  EXPECT_ERROR(h.st, "lives on "); /* simt-emu, or the GPU found first */
  M_freeTensor(dx);
  M_freeTensor(hx);
  M_freeAsyncTensorMap(in);
  M_freeModel(m);
  M_freeCompiledModel(cm);
  max_env_close(&h);
  accel_env_close(&a);
}
