/* device.c - devices, runtime configs and runtime contexts of kiln's MAX C
 * API layer, and the registry of open accelerators.
 *
 * Accelerators are kiln's devices (kiln/device.h), numbered: the CUDA GPUs
 * kiln finds (cuda:0, cuda:1, ...), then the HIP GPUs (hip:0, ...). When
 * there is none, the environment may ask for kiln's GPU emulator:
 *
 *     KILN_MAX_ACCELERATOR=simt-emu   simt-emu is accelerator 0
 *
 * (read at every call; ignored while a real GPU is found; any other value
 * opts in to nothing and M_newDevice's error says so).
 * M_getAcceleratorCount() counts what is available that way, and
 * M_newDevice(M_ACCELERATOR, id) opens accelerator id or fails naming what
 * kiln found. A runtime context whose config holds an accelerator compiles
 * its models for it (kiln_model_compile_on, model.c); every context also runs
 * on the host (the host is implied). One accelerator per context.
 *
 * The registry: a device model takes only tensors on its own kiln_device
 * handle, and M_copyTensorToDevice names a device without a context, so
 * the layer opens one kiln_device per accelerator id, process-wide, shared
 * by every handle, context, model and tensor that uses that id (each holds
 * a reference; the last one closes it). This list, under its lock, is the
 * layer's only process-wide state. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx.h"

#define MX_ACCEL_ENV "KILN_MAX_ACCELERATOR"

static pthread_mutex_t accel_lock = PTHREAD_MUTEX_INITIALIZER;
static mx_dev *accel_list; /* open accelerators, under accel_lock */

/* Whether the environment asks for simt-emu when there is no GPU. */
static bool emu_opt_in(void) {
  const char *v = getenv(MX_ACCEL_ENV);
  return v && strcmp(v, "simt-emu") == 0;
}

/* The GPUs kiln finds: *ncuda and *nhip; why (when not NULL) says why a
 * kind has none, as kiln_device_count reports it. */
static void gpu_counts(int *ncuda, int *nhip, char *why, size_t cap) {
  kiln_status *ks = kiln_status_new();
  *ncuda = kiln_device_count(KILN_DEVICE_CUDA, ks);
  if (*ncuda < 0) *ncuda = 0;
  if (why) snprintf(why, cap, "cuda: %s", *ncuda ? "ok" : ks ? kiln_status_message(ks) : "?");
  *nhip = kiln_device_count(KILN_DEVICE_HIP, ks);
  if (*nhip < 0) *nhip = 0;
  if (why) {
    size_t k = strlen(why);
    snprintf(why + k, cap - k, "; hip: %s", *nhip ? "ok" : ks ? kiln_status_message(ks) : "?");
  }
  kiln_status_free(ks);
}

MAX_C_API int M_getAcceleratorCount(void) {
  int nc, nh;
  gpu_counts(&nc, &nh, NULL, 0);
  if (nc + nh > 0) return nc + nh;
  return emu_opt_in() ? 1 : 0;
}

/* The kiln device spec of accelerator id, or -1 with st filled. */
static int accel_spec(int id, char *spec, size_t cap, const char *fn, M_Status *st) {
  int nc, nh;
  char why[512];
  gpu_counts(&nc, &nh, why, sizeof why);
  if (nc + nh > 0) {
    if (id >= 0 && id < nc) snprintf(spec, cap, "cuda:%d", id);
    else if (id >= nc && id < nc + nh) snprintf(spec, cap, "hip:%d", id - nc);
    else
      return mx_err(st, "%s(M_ACCELERATOR, %d): there %s %d accelerator%s (%d CUDA, %d HIP): ids "
                        "0 to %d", fn, id, nc + nh == 1 ? "is" : "are", nc + nh,
                    nc + nh == 1 ? "" : "s", nc, nh, nc + nh - 1);
    return 0;
  }
  if (emu_opt_in()) {
    if (id != 0)
      return mx_err(st, "%s(M_ACCELERATOR, %d): there is one accelerator (simt-emu, from "
                        MX_ACCEL_ENV "=simt-emu): id 0", fn, id);
    snprintf(spec, cap, "simt-emu");
    return 0;
  }
  const char *v = getenv(MX_ACCEL_ENV);
  char bad[160] = "";
  if (v && *v) snprintf(bad, sizeof bad, "; " MX_ACCEL_ENV "='%.60s' is not 'simt-emu'", v);
  return mx_err(st, "%s(M_ACCELERATOR, %d): no accelerator: kiln found no GPU (%s)%s; set "
                    MX_ACCEL_ENV "=simt-emu to use kiln's GPU emulator as accelerator 0",
                fn, id, why, bad);
}

mx_dev *mx_dev_acquire(int id, const char *fn, M_Status *st) {
  pthread_mutex_lock(&accel_lock);
  mx_dev *d = accel_list;
  while (d && d->id != id) d = d->next;
  if (d) {
    d->refs++;
    pthread_mutex_unlock(&accel_lock);
    return d;
  }
  char spec[32];
  kiln_status *ks = NULL;
  if (accel_spec(id, spec, sizeof spec, fn, st) != 0) goto out;
  d = calloc(1, sizeof *d);
  ks = kiln_status_new();
  if (!d || !ks) {
    mx_err(st, "%s(M_ACCELERATOR, %d): out of memory", fn, id);
    goto fail;
  }
  d->kd = kiln_device_open(spec, ks);
  if (!d->kd) {
    mx_err(st, "%s(M_ACCELERATOR, %d): cannot open %s: %s", fn, id, spec,
           kiln_status_message(ks));
    goto fail;
  }
  d->id = id;
  d->refs = 1;
  d->next = accel_list;
  accel_list = d;
  goto out;
fail:
  free(d);
  d = NULL;
out:
  kiln_status_free(ks);
  pthread_mutex_unlock(&accel_lock);
  return d;
}

void mx_dev_ref(mx_dev *d) {
  if (!d) return;
  pthread_mutex_lock(&accel_lock);
  d->refs++;
  pthread_mutex_unlock(&accel_lock);
}

void mx_dev_release(mx_dev *d) {
  if (!d) return;
  pthread_mutex_lock(&accel_lock);
  bool last = --d->refs == 0;
  if (last) {
    mx_dev **p = &accel_list;
    while (*p != d) p = &(*p)->next;
    *p = d->next;
  }
  pthread_mutex_unlock(&accel_lock);
  if (!last) return;
  kiln_device_close(d->kd);
  free(d);
}

const char *mx_dev_label(const mx_dev *d) { return d ? kiln_device_label(d->kd) : "the host"; }

/* ---- devices ---- */

MAX_C_API M_Device *M_newDevice(M_DeviceType type, int id, M_Status *status) {
  mx_ok(status);
  if (type != M_HOST && type != M_ACCELERATOR) {
    mx_err(status, "M_newDevice: unknown device type %d (M_HOST = 0, M_ACCELERATOR = 1)",
           (int)type);
    return NULL;
  }
  if (type == M_HOST && id != 0) {
    mx_err(status, "M_newDevice(M_HOST, %d): there is one host device, id 0", id);
    return NULL;
  }
  M_Device *d = calloc(1, sizeof *d);
  if (!d) {
    mx_err(status, "M_newDevice: out of memory");
    return NULL;
  }
  d->type = type;
  d->id = id;
  if (type == M_ACCELERATOR && !(d->dev = mx_dev_acquire(id, "M_newDevice", status))) {
    free(d);
    return NULL;
  }
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
  if (!device) {
    mx_err(status, "M_synchronizeDevice: device is NULL");
    return;
  }
  /* Host work is synchronous: every M_ call has finished its work when it
   * returns (background compiles and inits are waited for explicitly). */
  if (device->type == M_HOST || !device->dev) return;
  kiln_status *ks = kiln_status_new();
  if (kiln_device_synchronize(device->dev->kd, ks) != 0)
    mx_err(status, "M_synchronizeDevice(%s): %s", mx_dev_label(device->dev),
           ks ? kiln_status_message(ks) : "out of memory");
  kiln_status_free(ks);
}

MAX_C_API const char *M_getDeviceLabel(const M_Device *device) {
  if (!device) return NULL;
  return device->type == M_HOST ? "cpu" : "gpu";
}

MAX_C_API void M_freeDevice(M_Device *device) {
  if (!device) return;
  mx_dev_release(device->dev);
  free(device);
}

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
  /* type and id only: M_newRuntimeContext opens the accelerator itself */
  config->devices[config->ndevices++] = (M_Device){device->type, device->id, NULL};
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
  int accel = -1;
  for (int i = 0; i < config->ndevices; i++) {
    const M_Device *d = &config->devices[i];
    if (d->type != M_ACCELERATOR) continue;
    if (accel >= 0 && d->id != accel) {
      mx_err(status, "M_newRuntimeContext: the config holds accelerators %d and %d; a kiln "
                     "context runs its models on one accelerator (make a context per device)",
             accel, d->id);
      return NULL;
    }
    accel = d->id;
  }
  M_RuntimeContext *ctx = calloc(1, sizeof *ctx);
  kiln_status *ks = kiln_status_new();
  if (!ctx || !ks) {
    free(ctx);
    kiln_status_free(ks);
    mx_err(status, "M_newRuntimeContext: out of memory");
    return NULL;
  }
  if (accel >= 0 && !(ctx->accel = mx_dev_acquire(accel, "M_newRuntimeContext", status))) {
    free(ctx);
    kiln_status_free(ks);
    return NULL;
  }
  ctx->kc = kiln_context_new(ks);
  if (!ctx->kc) {
    mx_err(status, "M_newRuntimeContext: %s", kiln_status_message(ks));
    mx_dev_release(ctx->accel);
    free(ctx);
    ctx = NULL;
  }
  kiln_status_free(ks);
  return ctx;
}

MAX_C_API void M_freeRuntimeContext(M_RuntimeContext *context) {
  if (!context) return;
  kiln_context_free(context->kc);
  mx_dev_release(context->accel);
  free(context);
}
