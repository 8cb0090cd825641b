/* device_compat.c - kiln_device_model_*: the earlier device-model names,
 * thin wrappers over kiln_model on a SIMT device (kiln/device.h). */
#include "backend.h"
#include "device.h"

static bool on_simt(kiln_device *d, const char *fn, kiln_status *st) {
  if (d && kiln_device_get_kind(d) != KILN_DEVICE_CPU) return true;
  if (!d) rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: device is NULL", fn);
  else
    rt_err(st, KILN_ERR_UNSUPPORTED,
           "cpu: graphs run on the CPU through kiln_model_compile, not a device model");
  return false;
}

KILN_API kiln_device_model *kiln_device_model_compile(kiln_device *d, const kiln_graph *g,
                                                      kiln_status *st) {
  if (!g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_model_compile: graph is NULL");
    return NULL;
  }
  if (!on_simt(d, "kiln_device_model_compile", st)) return NULL;
  /* a context of its own, as this call always behaved: no disk cache, no
   * kernel libraries (the target has no context), generic kernels only
   * (policy off; kiln_model_set_specialize on the model changes that) */
  kiln_context *own = kiln_context_new(st);
  if (!own) return NULL;
  if (kiln_context_set_cache_dir(own, NULL, 0, st) < 0 ||
      kiln_context_set_specialize(own, KILN_SPECIALIZE_OFF, st) < 0) {
    kiln_context_free(own);
    return NULL;
  }
  return rt_model_compile_device(own, own, d, NULL, g, st);
}

KILN_API kiln_device_model *kiln_device_model_compile_with(kiln_context *ctx, kiln_device *d,
                                                           const kiln_graph *g,
                                                           kiln_status *st) {
  if (!ctx || !g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_model_compile_with: %s is NULL",
           ctx ? "graph" : "context");
    return NULL;
  }
  if (!on_simt(d, "kiln_device_model_compile_with", st)) return NULL;
  return kiln_model_compile_on(ctx, d, g, st);
}

KILN_API void kiln_device_model_free(kiln_device_model *m) { kiln_model_free(m); }

KILN_API int kiln_device_model_bind_weight(kiln_device_model *m, const char *name,
                                           const kiln_tensor *t, kiln_status *st) {
  return kiln_model_bind_weight(m, name, t, st);
}

KILN_API int kiln_device_model_execute(kiln_device_model *m, kiln_tensor *const *inputs,
                                       int ninputs, kiln_tensor **outputs, int noutputs,
                                       kiln_status *st) {
  return kiln_model_execute(m, inputs, ninputs, outputs, noutputs, st);
}

KILN_API int kiln_device_model_capture(kiln_device_model *m, uint64_t key,
                                       kiln_tensor *const *inputs, int ninputs,
                                       kiln_tensor **outputs, int noutputs, kiln_status *st) {
  return kiln_model_capture(m, key, inputs, ninputs, outputs, noutputs, st);
}

KILN_API int kiln_device_model_replay(kiln_device_model *m, uint64_t key,
                                      kiln_tensor *const *inputs, int ninputs,
                                      kiln_tensor **outputs, int noutputs, kiln_status *st) {
  return kiln_model_replay(m, key, inputs, ninputs, outputs, noutputs, st);
}

KILN_API int kiln_device_model_verify_replay(kiln_device_model *m, uint64_t key,
                                             kiln_tensor *const *inputs, int ninputs,
                                             kiln_status *st) {
  return kiln_model_verify_replay(m, key, inputs, ninputs, st);
}

KILN_API int kiln_device_model_release(kiln_device_model *m, uint64_t key, kiln_status *st) {
  return kiln_model_release(m, key, st);
}

KILN_API double kiln_device_model_compile_ms(const kiln_device_model *m) {
  return kiln_model_compile_ms(m);
}
