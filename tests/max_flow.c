/* max_flow.c - one MAX C API program without a test framework, for the
 * valgrind leak check (tests/max_valgrind.sh builds it against libkiln.so
 * and runs it under valgrind). It walks MAX's flow end to end with only
 * include/max/c/: status -> config -> device -> context -> compile (async
 * and sync) -> init (no registry; a registry of pointers; a registry from a
 * .safetensors file) -> borrow -> execute at two batch sizes -> read outputs
 * by name -> capture / replay / verify / release -> the error paths -> free
 * everything in reverse order; then the same model on accelerator 0
 * (simt-emu through KILN_MAX_ACCELERATOR=simt-emu where there is no GPU):
 * execute, tensors copied there and back, capture / replay / verify with
 * an input on the accelerator. Outputs are checked against C references.
 * Usage: max_flow SOURCE_DIR. Exit status 0 when every check passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "max/c/common.h"
#include "max/c/context.h"
#include "max/c/device.h"
#include "max/c/model.h"
#include "max/c/safetensors.h"
#include "max/c/tensor.h"
#include "max/c/weights.h"

static int failures;

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "max_flow:%d: FAILED: ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);                      \
      fputc('\n', stderr);                               \
      failures++;                                        \
    }                                                    \
  } while (0)
#define CHECK_OK(st) CHECK(!M_isError(st), "unexpected error: %s", M_getError(st))
#define CHECK_ERR(st, needle)                                                          \
  CHECK(M_isError(st) && strstr(M_getError(st), needle), "expected an error with '%s', got '%s'", \
        needle, M_getError(st))

static const float W[6] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
static const float B[2] = {0.1f, -0.2f};

/* scores = relu(x[batch, 3] @ W[3, 2] + B) */
static void ref_small_mlp(const float *x, float *y, int batch) {
  for (int b = 0; b < batch; b++)
    for (int o = 0; o < 2; o++) {
      float s = B[o];
      for (int i = 0; i < 3; i++) s += x[b * 3 + i] * W[i * 2 + o];
      y[b * 2 + o] = s > 0 ? s : 0;
    }
}

static void check_scores(const M_AsyncTensor *t, const float *x, int batch) {
  float want[16];
  ref_small_mlp(x, want, batch);
  CHECK(M_getTensorNumElements(t) == (size_t)batch * 2, "scores: %zu elements",
        M_getTensorNumElements(t));
  const float *got = M_getTensorData(t);
  for (int i = 0; got && i < batch * 2; i++)
    CHECK(fabsf(got[i] - want[i]) <= 1e-5f, "scores[%d] = %g, expected %g", i, got[i], want[i]);
}

static M_AsyncCompiledModel *compile(M_RuntimeContext *ctx, const char *path, int sync,
                                     M_Status *st) {
  M_CompileConfig *cc = M_newCompileConfig();
  M_setModelPath(cc, path);
  M_AsyncCompiledModel *cm = sync ? M_compileModelSync(ctx, &cc, st) : M_compileModel(ctx, &cc, st);
  CHECK(cc == NULL, "the config must be taken");
  return cm;
}

/* Executes the model on x[batch, 3] and checks "scores". */
static void run_batch(M_RuntimeContext *ctx, M_AsyncModel *model, M_Device *host, int batch,
                      M_Status *st) {
  float x[8 * 3];
  for (int i = 0; i < batch * 3; i++) x[i] = (float)((i * 7) % 11) / 3.0f - 1.5f;
  int64_t shape[2] = {batch, 3};
  M_TensorSpec *spec = M_newTensorSpec(shape, 2, M_FLOAT32, "features", host);
  M_AsyncTensorMap *in = M_newAsyncTensorMap(ctx);
  M_borrowTensorInto(in, x, spec, st);
  CHECK_OK(st);
  M_AsyncTensorMap *out = M_executeModelSync(ctx, model, in, st);
  CHECK_OK(st);
  M_AsyncTensor *scores = out ? M_getTensorByNameFrom(out, "scores", st) : NULL;
  CHECK_OK(st);
  if (scores) check_scores(scores, x, batch);
  M_AsyncTensor *none = out ? M_getTensorByNameFrom(out, "nope", st) : NULL;
  CHECK(!none, "unknown name gave a tensor");
  CHECK_ERR(st, "no tensor named 'nope'");
  M_freeTensor(scores);
  M_freeAsyncTensorMap(out);
  M_freeAsyncTensorMap(in);
  M_freeTensorSpec(spec);
}

static void capture_flow(M_RuntimeContext *ctx, M_AsyncModel *model, M_Device *host,
                         M_Status *st) {
  float x[2 * 3] = {1, 2, 3, -1, -2, -3};
  int64_t shape[2] = {2, 3};
  M_TensorSpec *spec = M_newTensorSpec(shape, 2, M_FLOAT32, "features", host);
  M_AsyncTensorMap *in = M_newAsyncTensorMap(ctx);
  M_borrowTensorInto(in, x, spec, st);
  M_AsyncTensor *xt = M_getTensorByNameFrom(in, "features", st);
  CHECK_OK(st);
  uint64_t key = 42;
  size_t nout = 0;
  M_AsyncTensor **outs = M_captureModelSync(ctx, model, &key, 1, &xt, 1, &nout, st);
  CHECK_OK(st);
  CHECK(outs && nout == 1, "capture: %zu outputs", nout);
  if (outs) check_scores(outs[0], x, 2);
  for (int i = 0; i < 6; i++) x[i] = 0.5f * (float)i - 1.0f;
  M_replayModelSync(ctx, model, &key, 1, &xt, 1, st);
  CHECK_OK(st);
  if (outs) check_scores(outs[0], x, 2);
  M_debugVerifyReplayModelSync(ctx, model, &key, 1, &xt, 1, st);
  CHECK_OK(st);
  M_releaseCapturedGraphs(ctx, model, &key, 1, st);
  CHECK_OK(st);
  M_replayModelSync(ctx, model, &key, 1, &xt, 1, st);
  CHECK_ERR(st, "no captured graph for key 42");
  /* a capture left for M_freeModel to release */
  uint64_t key2 = 43;
  M_AsyncTensor **outs2 = M_captureModelSync(ctx, model, &key2, 1, &xt, 1, &nout, st);
  CHECK_OK(st);
  for (size_t i = 0; outs && i < nout; i++) M_freeTensor(outs[i]);
  for (size_t i = 0; outs2 && i < nout; i++) M_freeTensor(outs2[i]);
  free(outs);
  free(outs2);
  M_freeTensor(xt);
  M_freeAsyncTensorMap(in);
  M_freeTensorSpec(spec);
}

/* small_mlp on accelerator 0: execute at two batch sizes, a tensor copied
 * there and back, capture / replay / verify with the input on it. */
static void accelerator_flow(const char *mlp, M_Device *host, M_Status *st) {
  setenv("KILN_MAX_ACCELERATOR", "simt-emu", 1);
  CHECK(M_getAcceleratorCount() >= 1, "accelerators with the simt-emu opt-in");
  M_Device *acc = M_newDevice(M_ACCELERATOR, 0, st);
  CHECK_OK(st);
  if (!acc) return;
  M_RuntimeConfig *cfg = M_newRuntimeConfig();
  M_runtimeConfigAddDevice(cfg, host);
  M_runtimeConfigAddDevice(cfg, acc);
  M_RuntimeContext *ctx = M_newRuntimeContext(cfg, st);
  CHECK_OK(st);
  M_AsyncCompiledModel *cm = ctx ? compile(ctx, mlp, 0, st) : NULL;
  CHECK_OK(st);
  const char *names[2] = {"fc.weight", "fc.bias"};
  const void *data[2] = {W, B};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 2, st);
  M_AsyncModel *model = cm ? M_initModel(ctx, cm, reg, st) : NULL;
  CHECK_OK(st);
  if (model) {
    run_batch(ctx, model, host, 2, st);
    run_batch(ctx, model, host, 5, st);
    capture_flow(ctx, model, host, st);
    /* the input on the accelerator */
    float x[2 * 3] = {1, -2, 3, -4, 5, -6};
    int64_t shape[2] = {2, 3};
    M_TensorSpec *spec = M_newTensorSpec(shape, 2, M_FLOAT32, "features", host);
    M_AsyncTensorMap *in = M_newAsyncTensorMap(ctx);
    M_borrowTensorInto(in, x, spec, st);
    M_AsyncTensor *hx = M_getTensorByNameFrom(in, "features", st);
    M_AsyncTensor *dx = hx ? M_copyTensorToDevice(hx, acc, st) : NULL;
    CHECK_OK(st);
    CHECK(dx && !M_getTensorData(dx), "a tensor on the accelerator has no host data");
    M_AsyncTensor *back = dx ? M_copyTensorToDevice(dx, host, st) : NULL;
    CHECK_OK(st);
    const float *bx = back ? M_getTensorData(back) : NULL;
    for (int i = 0; bx && i < 6; i++) CHECK(bx[i] == x[i], "copied back [%d] = %g", i, bx[i]);
    uint64_t key = 5;
    size_t nout = 0;
    M_AsyncTensor **outs = dx ? M_captureModelSync(ctx, model, &key, 1, &dx, 1, &nout, st) : NULL;
    CHECK_OK(st);
    if (outs) check_scores(outs[0], x, 2);
    M_replayModelSync(ctx, model, &key, 1, &dx, 1, st);
    CHECK_OK(st);
    M_debugVerifyReplayModelSync(ctx, model, &key, 1, &dx, 1, st);
    CHECK_OK(st);
    for (size_t i = 0; outs && i < nout; i++) M_freeTensor(outs[i]);
    free(outs);
    M_freeTensor(back);
    M_freeTensor(dx);
    M_freeTensor(hx);
    M_freeAsyncTensorMap(in);
    M_freeTensorSpec(spec);
  }
  M_freeModel(model);
  M_freeWeightsRegistry(reg);
  M_freeCompiledModel(cm);
  M_freeRuntimeContext(ctx);
  M_freeRuntimeConfig(cfg);
  M_freeDevice(acc);
  unsetenv("KILN_MAX_ACCELERATOR");
}

static int write_weights(const char *path) {
  /* header: {"fc.bias":..., "fc.weight":...} padded to 8 bytes */
  char hdr[256];
  int n = snprintf(hdr, sizeof hdr,
                   "{\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                   "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[8,32]}}");
  while (n % 8) hdr[n++] = ' ';
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  unsigned char len[8] = {(unsigned char)n, 0, 0, 0, 0, 0, 0, 0};
  int ok = fwrite(len, 1, 8, f) == 8 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n &&
           fwrite(B, 4, 2, f) == 2 && fwrite(W, 4, 6, f) == 6;
  return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: max_flow SOURCE_DIR\n");
    return 2;
  }
  char mlp[1024], relu[1024], tmpl[] = "/tmp/kiln_max_flow_XXXXXX", st_path[1100];
  snprintf(mlp, sizeof mlp, "%s/tests/max/small_mlp.mlir", argv[1]);
  snprintf(relu, sizeof relu, "%s/tests/shared/ir-examples/relu.mlir", argv[1]);
  if (!mkdtemp(tmpl)) return 2;
  snprintf(st_path, sizeof st_path, "%s/w.safetensors", tmpl);
  if (write_weights(st_path) != 0) return 2;

  M_Status *st = M_newStatus();
  M_RuntimeConfig *cfg = M_newRuntimeConfig();
  M_Device *host = M_newDevice(M_HOST, 0, st);
  CHECK_OK(st);
  M_runtimeConfigAddDevice(cfg, host);
  M_RuntimeContext *ctx = M_newRuntimeContext(cfg, st);
  CHECK_OK(st);
  if (!ctx) return 1;
  unsetenv("KILN_MAX_ACCELERATOR");
  int ngpus = M_getAcceleratorCount();
  M_Device *gpu = M_newDevice(M_ACCELERATOR, ngpus, st);
  CHECK(!gpu, "an accelerator device past the last one");
  CHECK_ERR(st, ngpus ? "accelerator" : "no accelerator");

  /* async compile, registry of pointers, two batch sizes */
  M_AsyncCompiledModel *cm = compile(ctx, mlp, 0, st);
  CHECK_OK(st);
  const char *names[2] = {"fc.weight", "fc.bias"};
  const void *data[2] = {W, B};
  M_WeightsRegistry *reg = M_newWeightsRegistry(names, data, 2, st);
  M_AsyncModel *model = M_initModel(ctx, cm, reg, st);
  CHECK_OK(st);
  M_waitForCompilation(cm, st);
  CHECK_OK(st);
  M_waitForModel(model, st);
  CHECK_OK(st);
  run_batch(ctx, model, host, 2, st);
  run_batch(ctx, model, host, 5, st);
  capture_flow(ctx, model, host, st);

  /* the same compiled model again, weights from a .safetensors file */
  const char *paths[1] = {st_path};
  M_Safetensors *sf = M_loadSafetensors(paths, 1, host, st);
  CHECK_OK(st);
  M_WeightsRegistry *sreg = M_newWeightsRegistryFromSafetensors(sf, st);
  CHECK_OK(st);
  M_AsyncModel *model2 = M_initModel(ctx, cm, sreg, st);
  run_batch(ctx, model2, host, 3, st);

  /* error paths */
  M_AsyncCompiledModel *missing = compile(ctx, "/nonexistent/model.mlir", 1, st);
  CHECK(!missing, "a model from a missing file");
  CHECK_ERR(st, "/nonexistent/model.mlir");
  M_AsyncCompiledModel *amissing = compile(ctx, "/nonexistent/model.mlir", 0, st);
  M_AsyncModel *amodel = M_initModel(ctx, amissing, NULL, st);
  M_waitForModel(amodel, st);
  CHECK_ERR(st, "model compilation failed");
  M_AsyncModel *noweights = M_initModel(ctx, cm, NULL, st);
  M_waitForModel(noweights, st);
  CHECK_ERR(st, "no weights registry");
  M_AsyncCompiledModel *rcm = compile(ctx, relu, 1, st);
  CHECK_OK(st);
  M_AsyncModel *rmodel = M_initModel(ctx, rcm, NULL, st);
  float x4[4] = {0};
  int64_t four[1] = {4};
  M_TensorSpec *bad = M_newTensorSpec(four, 1, M_FLOAT32, "x", host);
  M_AsyncTensorMap *bin = M_newAsyncTensorMap(ctx);
  M_borrowTensorInto(bin, x4, bad, st);
  M_AsyncTensorMap *bout = M_executeModelSync(ctx, rmodel, bin, st);
  CHECK(!bout, "outputs for a bad shape");
  CHECK_ERR(st, "axis 0 expected 5, got 4");
  M_freeStatus(NULL);
  M_freeModel(NULL);
  M_freeCompiledModel(NULL);
  M_freeAsyncTensorMap(NULL);
  M_freeTensor(NULL);

  /* free in reverse order */
  M_freeAsyncTensorMap(bin);
  M_freeTensorSpec(bad);
  M_freeModel(rmodel);
  M_freeCompiledModel(rcm);
  M_freeModel(noweights);
  M_freeModel(amodel);
  M_freeCompiledModel(amissing);
  M_freeModel(model2);
  M_freeWeightsRegistry(sreg);
  M_freeSafetensors(sf);
  M_freeModel(model);
  M_freeWeightsRegistry(reg);
  M_freeCompiledModel(cm);
  M_freeRuntimeContext(ctx);

  accelerator_flow(mlp, host, st);

  M_freeDevice(host);
  M_freeRuntimeConfig(cfg);
  M_freeStatus(st);
  unlink(st_path);
  rmdir(tmpl);
  if (failures) fprintf(stderr, "max_flow: %d check(s) failed\n", failures);
  else printf("max_flow: ok\n");
  return failures ? 1 : 0;
}
