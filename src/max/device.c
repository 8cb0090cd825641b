/* device.c - devices, runtime configs and runtime contexts of kiln's MAX C
 * API layer. Only the host is wired to the M_ functions (kiln's device
 * models, kiln/device.h, are not yet):
 * M_getAcceleratorCount() is 0, an accelerator device cannot be made, and a
 * config cannot hold one. A context is one kiln_context. */
#include <stdlib.h>

#include "mx.h"

#define MX_NO_ACCELERATOR                                                                    \
  "no accelerator: kiln's MAX layer runs models on the host only (GPU models run through "  \
  "kiln_device_model, not wired to M_ yet)"

MAX_C_API M_Device *M_newDevice(M_DeviceType type, int id, M_Status *status) {
  mx_ok(status);
  if (type == M_ACCELERATOR) {
    mx_err(status, "M_newDevice(M_ACCELERATOR, %d): " MX_NO_ACCELERATOR, id);
    return NULL;
  }
  if (type != M_HOST) {
    mx_err(status, "M_newDevice: unknown device type %d (M_HOST = 0, M_ACCELERATOR = 1)",
           (int)type);
    return NULL;
  }
  if (id != 0) {
    mx_err(status, "M_newDevice(M_HOST, %d): there is one host device, id 0", id);
    return NULL;
  }
  M_Device *d = malloc(sizeof *d);
  if (!d) {
    mx_err(status, "M_newDevice: out of memory");
    return NULL;
  }
  d->type = type;
  d->id = id;
  return d;
}

MAX_C_API M_DeviceType M_getDeviceType(const M_Device *device) {
  return device ? device->type : M_HOST;
}

MAX_C_API int M_getDeviceId(const M_Device *device) { return device ? device->id : 0; }

MAX_C_API int M_isHostDevice(const M_Device *device) {
  return device && device->type == M_HOST ? 1 : 0;
}

MAX_C_API void M_synchronizeDevice(M_Device *device, M_Status *status) {
  mx_ok(status);
  if (!device) mx_err(status, "M_synchronizeDevice: device is NULL");
  /* Host work is synchronous: every M_ call has finished its work when it
   * returns (background compiles and inits are waited for explicitly). */
}

MAX_C_API const char *M_getDeviceLabel(const M_Device *device) {
  if (!device) return NULL;
  return device->type == M_HOST ? "cpu" : "gpu";
}

MAX_C_API void M_freeDevice(M_Device *device) { free(device); }

MAX_C_API int M_getAcceleratorCount(void) { return 0; }

/* ---- configs and contexts ---- */

MAX_C_API M_RuntimeConfig *M_newRuntimeConfig(void) { return calloc(1, sizeof(M_RuntimeConfig)); }

MAX_C_API void M_freeRuntimeConfig(M_RuntimeConfig *config) {
  if (!config) return;
  free(config->devices);
  free(config);
}

MAX_C_API void M_runtimeConfigAddDevice(M_RuntimeConfig *config, M_Device *device) {
  if (!config || !device) return;
  if (config->ndevices == config->cap) {
    int cap = config->cap ? 2 * config->cap : 4;
    M_Device *d = realloc(config->devices, (size_t)cap * sizeof *d);
    if (!d) {
      /* No status to report through: M_newRuntimeContext sees the count. */
      config->cap = -1;
      return;
    }
    config->devices = d;
    config->cap = cap;
  }
  if (config->cap < 0) return;
  config->devices[config->ndevices++] = *device;
}

MAX_C_API M_RuntimeContext *M_newRuntimeContext(const M_RuntimeConfig *config,
                                                M_Status *status) {
  mx_ok(status);
  if (!config) {
    mx_err(status, "M_newRuntimeContext: config is NULL (M_newRuntimeConfig)");
    return NULL;
  }
  if (config->cap < 0) {
    mx_err(status, "M_newRuntimeContext: out of memory adding a device to the config");
    return NULL;
  }
  for (int i = 0; i < config->ndevices; i++)
    if (config->devices[i].type != M_HOST) {
      mx_err(status, "M_newRuntimeContext: device %d of the config: " MX_NO_ACCELERATOR, i);
      return NULL;
    }
  M_RuntimeContext *ctx = calloc(1, sizeof *ctx);
  kiln_status *ks = kiln_status_new();
  if (!ctx || !ks) {
    free(ctx);
    kiln_status_free(ks);
    mx_err(status, "M_newRuntimeContext: out of memory");
    return NULL;
  }
  ctx->kc = kiln_context_new(ks);
  if (!ctx->kc) {
    mx_err(status, "M_newRuntimeContext: %s", kiln_status_message(ks));
    free(ctx);
    ctx = NULL;
  }
  kiln_status_free(ks);
  return ctx;
}

MAX_C_API void M_freeRuntimeContext(M_RuntimeContext *context) {
  if (!context) return;
  kiln_context_free(context->kc);
  free(context);
}
