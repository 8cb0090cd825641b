/* device_hip.c - AMD GPUs through the HIP runtime (device.h), opened at run
 * time: libamdhip64.so is dlopen'ed once per process and its entry points
 * looked up by name; nothing of ROCm is linked or included at build time
 * (the few types used are declared here as the HIP API documents them).
 *
 * What HIP shares with CUDA (streams, copies, modules, launches, recording
 * through stream capture into HIP graphs) is device_gpu.c; this file holds
 * what is HIP's own: loading the runtime, selecting the device (the HIP
 * runtime's current device is per thread, so every entry selects it first),
 * and the entry points whose signatures differ from CUDA's (memory, copies).
 *
 * Guarantees: where the runtime is missing, hipInit fails or there is no
 * device, every entry returns an error naming which (never a crash). The
 * graph entry points are optional: a runtime without them cannot record.
 * The tests cover only the paths where the runtime is absent
 * (tests/test_device.c). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_gpu.h"

typedef int hipError_t; /* hipSuccess = 0 */
typedef int hipDevice_t;
typedef struct ihipStream_t *hipStream_t;

#define HIP_MEMCPY_H2D 1 /* hipMemcpyHostToDevice */
#define HIP_MEMCPY_D2H 2 /* hipMemcpyDeviceToHost */
#define HIP_MEMCPY_D2D 3 /* hipMemcpyDeviceToDevice */

typedef struct hip_api {
  rt_gpu_api gpu; /* the entries CUDA declares alike */
  const char *(*GetErrorName)(hipError_t);
  const char *(*GetErrorString)(hipError_t);
  hipError_t (*Init)(unsigned);
  hipError_t (*GetDeviceCount)(int *);
  hipError_t (*SetDevice)(int);
  hipError_t (*DeviceGet)(hipDevice_t *, int);
  hipError_t (*DeviceGetName)(char *, int, hipDevice_t);
  hipError_t (*DeviceTotalMem)(size_t *, hipDevice_t);
  hipError_t (*StreamCreate)(hipStream_t *);
  hipError_t (*Malloc)(void **, size_t);
  hipError_t (*Free)(void *);
  hipError_t (*Memcpy)(void *, const void *, size_t, int);
  hipError_t (*MemcpyAsync)(void *, const void *, size_t, int, hipStream_t); /* with graphs */
} hip_api;

static struct {
  hip_api api;
  rt_gpu_state state;
} hip = {.state = {PTHREAD_ONCE_INIT, 0, ""}};

static void *hip_lookup(void *lib, const char *name, rt_gpu_result *r) {
  *r = 0;
  return dlsym(lib, name);
}

static const char *hip_name(rt_gpu_result r) {
  const char *s = hip.api.GetErrorName ? hip.api.GetErrorName(r) : NULL;
  return s ? s : "HIP error";
}

static const char *hip_text(rt_gpu_result r) {
  const char *s = hip.api.GetErrorString ? hip.api.GetErrorString(r) : NULL;
  return s ? s : "no description";
}

#define E(f) {"hip" #f, offsetof(hip_api, f)}
#define G(f) {"hip" #f, offsetof(hip_api, gpu.f)}
static const rt_gpu_sym required[] = {
    E(GetErrorName), E(GetErrorString), E(Init), E(GetDeviceCount), E(SetDevice), E(DeviceGet),
    E(DeviceGetName), E(DeviceTotalMem), E(Malloc), E(Free), E(Memcpy), E(StreamCreate),
    G(StreamDestroy), G(StreamSynchronize), G(ModuleLoadData), G(ModuleUnload),
    G(ModuleGetFunction), {"hipModuleLaunchKernel", offsetof(hip_api, gpu.LaunchKernel)},
};
static const rt_gpu_sym graph_entries[] = {
    G(StreamBeginCapture), G(StreamEndCapture), G(GraphInstantiateWithFlags), G(GraphLaunch),
    G(GraphExecDestroy), G(GraphDestroy), E(MemcpyAsync),
};
static const rt_gpu_sym event_entries[] = {
    {"hipEventCreateWithFlags", offsetof(hip_api, gpu.EventCreate)}, G(EventRecord),
    G(EventSynchronize), G(EventElapsedTime), G(EventDestroy),
};
#undef E
#undef G

static void hip_load(void) {
  static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6"};
  void *lib = rt_gpu_dlopen(names, 2, "no HIP runtime", hip.state.why, sizeof hip.state.why);
  if (!lib) return;
  rt_gpu_result r = 0;
  int missing =
      rt_gpu_bind(&hip.api, required, sizeof required / sizeof required[0], hip_lookup, lib, &r);
  if (missing >= 0) {
    snprintf(hip.state.why, sizeof hip.state.why, "HIP runtime too old or incomplete: no %s",
             required[missing].name);
    return;
  }
  /* all or none: a runtime without graphs opens and cannot record */
  rt_gpu_bind(&hip.api, graph_entries, sizeof graph_entries / sizeof graph_entries[0], hip_lookup,
              lib, &r);
  /* the same for events: without them launches are timed by the host clock */
  rt_gpu_bind(&hip.api, event_entries, sizeof event_entries / sizeof event_entries[0], hip_lookup,
              lib, &r);
  if ((r = hip.api.Init(0)) != 0) {
    snprintf(hip.state.why, sizeof hip.state.why,
             "the HIP runtime does not start: hipInit: %s (%s)", hip_name(r), hip_text(r));
    return;
  }
  if ((r = hip.api.GetDeviceCount(&hip.state.ndevices)) != 0 || hip.state.ndevices == 0) {
    hip.state.ndevices = 0;
    snprintf(hip.state.why, sizeof hip.state.why, "no HIP device: %s",
             r ? hip_text(r) : "the runtime reports none");
  }
}

static int hip_enter(kiln_device *d, const char *what, kiln_status *st) {
  (void)what; /* hipSetDevice names the failure well enough */
  hipError_t r = hip.api.SetDevice(d->ordinal);
  if (r != 0)
    return rt_err(st, KILN_ERR_RUNTIME, "%s: hipSetDevice: %s (%s)", d->label, hip_name(r),
                  hip_text(r));
  return 0;
}

static int hip_attach(kiln_device *d, rt_gpu_dev *g, kiln_status *st) {
  hipStream_t stream = NULL;
  hipError_t r = hip.api.SetDevice(d->ordinal);
  if (r == 0) r = hip.api.StreamCreate(&stream);
  if (r != 0)
    return rt_err(st, KILN_ERR_RUNTIME, "%s: cannot open: %s (%s)", d->label, hip_name(r),
                  hip_text(r));
  g->stream = stream;
  hipDevice_t dev = 0;
  char name[160] = "AMD GPU";
  size_t mem = 0;
  if (hip.api.DeviceGet(&dev, d->ordinal) == 0) {
    hip.api.DeviceGetName(name, (int)sizeof name - 1, dev);
    hip.api.DeviceTotalMem(&mem, dev);
  }
  g->dev = dev;
  snprintf(d->desc, sizeof d->desc, "%s (%zu MiB)", name, mem >> 20);
  return 0;
}

static rt_gpu_result hip_alloc(kiln_devptr *out, size_t bytes) {
  void *p = NULL;
  hipError_t r = hip.api.Malloc(&p, bytes);
  *out = (kiln_devptr)(uintptr_t)p;
  return r;
}

static rt_gpu_result hip_free(kiln_devptr p) { return hip.api.Free((void *)(uintptr_t)p); }

static rt_gpu_result hip_copy(rt_gpu_copy_kind kind, uint64_t dst, uint64_t src, size_t n,
                              void *stream) {
  void *to = (void *)(uintptr_t)dst;
  const void *from = (const void *)(uintptr_t)src;
  switch (kind) {
  case RT_GPU_COPY_TO: return hip.api.Memcpy(to, from, n, HIP_MEMCPY_H2D);
  case RT_GPU_COPY_FROM: return hip.api.Memcpy(to, from, n, HIP_MEMCPY_D2H);
  case RT_GPU_COPY_DD: return hip.api.Memcpy(to, from, n, HIP_MEMCPY_D2D);
  case RT_GPU_COPY_DD_ASYNC:
    return hip.api.MemcpyAsync(to, from, n, HIP_MEMCPY_D2D, (hipStream_t)stream);
  case RT_GPU_COPY_KINDS: break;
  }
  return 1; /* hipErrorInvalidValue: not a copy kind */
}

static const rt_gpu_vendor hip_vendor = {
    .prefix = "hip",
    .reporter = "runtime",
    .no_graphs = "the HIP runtime has no graph entry points",
    .alloc_call = "Malloc",
    .launch_call = "ModuleLaunchKernel",
    .copy_call = {"Memcpy", "Memcpy", "Memcpy", "MemcpyAsync"},
    .state = &hip.state,
    .load = hip_load,
    .api = &hip.api.gpu,
    .error_name = hip_name,
    .error_text = hip_text,
    .enter = hip_enter,
    .attach = hip_attach,
    .detach = NULL,
    .alloc = hip_alloc,
    .free = hip_free,
    .copy = hip_copy,
};

static int hip_count(kiln_status *st) { return rt_gpu_count(&hip_vendor, st); }

static int hip_open(kiln_device *d, kiln_status *st) { return rt_gpu_open(&hip_vendor, d, st); }

const rt_device_ops rt_device_hip_ops = RT_GPU_DEVICE_OPS(hip_count, hip_open);
