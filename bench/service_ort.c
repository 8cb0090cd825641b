/* service_ort.c - ONNX Runtime's C API for bench/service.c (service_ort.h).
 *
 * Assumes onnxruntime_c_api.h from a packaged ONNX Runtime (bench/service.sh
 * takes it from Debian's libonnxruntime-dev) and a library at least that
 * version (the PyPI wheel's libonnxruntime.so.*). Every OrtStatus is
 * consumed here: its message goes to err and the status is released. */
#include "service_ort.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <onnxruntime_c_api.h>

struct svc_ort {
  void *lib;
  const OrtApi *api;
  const char *version;
  OrtEnv *env;
  OrtMemoryInfo *cpu;
};

struct svc_ort_session {
  svc_ort *o;
  OrtSession *session;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* 0 when st is NULL (success); else the message into err, st released, -1. */
static int consume(const OrtApi *api, OrtStatus *st, const char *what, char *err, size_t cap) {
  if (!st) return 0;
  snprintf(err, cap, "onnxruntime: %s: %s", what, api->GetErrorMessage(st));
  api->ReleaseStatus(st);
  return -1;
}

svc_ort *svc_ort_open(const char *path, char *err, size_t cap) {
  svc_ort *o = calloc(1, sizeof *o);
  if (!o) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  o->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!o->lib) {
    snprintf(err, cap, "dlopen %s: %s", path, dlerror());
    goto fail;
  }
  const OrtApiBase *(*get_base)(void) = (const OrtApiBase *(*)(void))dlsym(o->lib, "OrtGetApiBase");
  if (!get_base) {
    snprintf(err, cap, "%s does not export OrtGetApiBase", path);
    goto fail;
  }
  const OrtApiBase *base = get_base();
  o->version = base->GetVersionString();
  o->api = base->GetApi(ORT_API_VERSION);
  if (!o->api) {
    snprintf(err, cap, "%s (onnxruntime %s) does not serve C API version %d (the header's)", path,
             o->version, ORT_API_VERSION);
    goto fail;
  }
  if (consume(o->api, o->api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "kiln-service", &o->env),
              "CreateEnv", err, cap) ||
      consume(o->api, o->api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &o->cpu),
              "CreateCpuMemoryInfo", err, cap))
    goto fail;
  return o;
fail:
  svc_ort_close(o);
  return NULL;
}

void svc_ort_close(svc_ort *o) {
  if (!o) return;
  if (o->api) {
    if (o->cpu) o->api->ReleaseMemoryInfo(o->cpu);
    if (o->env) o->api->ReleaseEnv(o->env);
  }
  if (o->lib) dlclose(o->lib);
  free(o);
}

const char *svc_ort_version(const svc_ort *o) { return o && o->version ? o->version : "?"; }

svc_ort_session *svc_ort_session_new(svc_ort *o, const char *model_path, int threads,
                                     double *load_ms, char *err, size_t cap) {
  const OrtApi *api = o->api;
  svc_ort_session *s = calloc(1, sizeof *s);
  OrtSessionOptions *so = NULL;
  if (!s) {
    snprintf(err, cap, "out of memory");
    return NULL;
  }
  s->o = o;
  double t0 = now_ms();
  if (consume(api, api->CreateSessionOptions(&so), "CreateSessionOptions", err, cap) ||
      consume(api, api->SetIntraOpNumThreads(so, threads), "SetIntraOpNumThreads", err, cap) ||
      consume(api, api->SetInterOpNumThreads(so, 1), "SetInterOpNumThreads", err, cap) ||
      consume(api, api->SetSessionExecutionMode(so, ORT_SEQUENTIAL), "SetSessionExecutionMode",
              err, cap) ||
      consume(api, api->SetSessionGraphOptimizationLevel(so, ORT_ENABLE_ALL),
              "SetSessionGraphOptimizationLevel", err, cap) ||
      consume(api, api->CreateSession(o->env, model_path, so, &s->session), model_path, err, cap)) {
    if (so) api->ReleaseSessionOptions(so);
    svc_ort_session_free(s);
    return NULL;
  }
  api->ReleaseSessionOptions(so);
  if (load_ms) *load_ms = now_ms() - t0;
  return s;
}

void svc_ort_session_free(svc_ort_session *s) {
  if (!s) return;
  if (s->session) s->o->api->ReleaseSession(s->session);
  free(s);
}

int svc_ort_session_run(svc_ort_session *s, float *in, float *out, int64_t batch, int64_t seq,
                        int64_t hidden, char *err, size_t cap) {
  const OrtApi *api = s->o->api;
  const int64_t shape[3] = {batch, seq, hidden};
  size_t bytes = (size_t)(batch * seq * hidden) * sizeof(float);
  OrtValue *x = NULL, *y = NULL;
  static const char *const in_names[] = {"hidden"};
  static const char *const out_names[] = {"out"};
  int rc = -1;
  if (consume(api,
              api->CreateTensorWithDataAsOrtValue(s->o->cpu, in, bytes, shape, 3,
                                                  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &x),
              "input tensor", err, cap) ||
      consume(api,
              api->CreateTensorWithDataAsOrtValue(s->o->cpu, out, bytes, shape, 3,
                                                  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &y),
              "output tensor", err, cap))
    goto done;
  const OrtValue *const ins[] = {x};
  rc = consume(api, api->Run(s->session, NULL, in_names, ins, 1, out_names, 1, &y), "Run", err,
               cap);
done:
  if (x) api->ReleaseValue(x);
  if (y) api->ReleaseValue(y);
  return rc;
}

int svc_ort_session_run_encoder(svc_ort_session *s, int64_t *ids, int64_t *mask, int64_t batch,
                                int64_t seq, float *out, int64_t out_numel, char *err, size_t cap) {
  const OrtApi *api = s->o->api;
  const int64_t shape[2] = {batch, seq};
  size_t bytes = (size_t)(batch * seq) * sizeof(int64_t), nout = 0, count = 0;
  OrtValue *x[2] = {NULL, NULL}, *y = NULL;
  OrtAllocator *alloc = NULL;
  OrtTensorTypeAndShapeInfo *info = NULL;
  char *name = NULL;
  void *data = NULL;
  static const char *const in_names[] = {"input_ids", "attention_mask"};
  const char *out_names[1] = {NULL};
  const OrtValue *ins[2];
  int rc = -1;
  if (consume(api, api->GetAllocatorWithDefaultOptions(&alloc), "allocator", err, cap) ||
      consume(api, api->SessionGetOutputCount(s->session, &nout), "output count", err, cap) ||
      nout == 0 ||
      consume(api, api->SessionGetOutputName(s->session, nout - 1, alloc, &name), "output name",
              err, cap))
    goto done;
  for (int i = 0; i < 2; i++)
    if (consume(api,
                api->CreateTensorWithDataAsOrtValue(s->o->cpu, i ? mask : ids, bytes, shape, 2,
                                                    ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &x[i]),
                in_names[i], err, cap))
      goto done;
  out_names[0] = name;
  ins[0] = x[0];
  ins[1] = x[1];
  if (consume(api, api->Run(s->session, NULL, in_names, ins, 2, out_names, 1, &y), "Run", err,
              cap) ||
      consume(api, api->GetTensorTypeAndShape(y, &info), "output shape", err, cap) ||
      consume(api, api->GetTensorShapeElementCount(info, &count), "output size", err, cap) ||
      consume(api, api->GetTensorMutableData(y, &data), "output data", err, cap))
    goto done;
  if ((int64_t)count != out_numel) {
    snprintf(err, cap, "onnxruntime: output '%s' has %zu elements, expected %lld", name, count,
             (long long)out_numel);
    goto done;
  }
  memcpy(out, data, count * sizeof(float));
  rc = 0;
done:
  if (info) api->ReleaseTensorTypeAndShapeInfo(info);
  if (name) consume(api, api->AllocatorFree(alloc, name), "free", err, cap);
  for (int i = 0; i < 2; i++)
    if (x[i]) api->ReleaseValue(x[i]);
  if (y) api->ReleaseValue(y);
  return rc;
}
