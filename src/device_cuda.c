/* device_cuda.c - NVIDIA GPUs through the CUDA driver API (device.h), opened
 * at run time: libcuda.so.1 is dlopen'ed once per process, the entry points
 * are fetched with cuGetProcAddress for the CUDA version kiln was written
 * against (so CUDA 13's renamed / versioned symbols resolve to the right
 * ones), and nothing of CUDA is linked or included at build time (the few
 * types used are declared here as the driver API documents them).
 *
 * What CUDA shares with HIP (streams, copies, modules, launches, recording
 * through stream capture into CUDA graphs) is device_gpu.c; this file holds
 * what is CUDA's own: loading the driver, the primary context each device
 * keeps retained while open (made current on the calling thread by every
 * entry), its non-blocking stream, and the entry points whose signatures
 * differ from HIP's (memory and copies).
 *
 * Guarantees: where libcuda.so.1 is missing, the driver is too old, cuInit
 * fails or there is no device, every entry returns an error naming which
 * (never a crash). The graph entry points are optional: a driver without
 * them opens as usual and cannot record. The tests cover only the paths
 * where the driver is absent (tests/test_device.c). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_gpu.h"

/* ---- the slice of the driver API kiln uses (cuda.h spells them so) ---- */
typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define KILN_CUDA_API_VERSION 12000 /* the driver API version the entries below follow */
#define CU_ATTR_CC_MAJOR 75         /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CU_ATTR_CC_MINOR 76
#define CU_STREAM_NON_BLOCKING 1

typedef struct cuda_api {
  rt_gpu_api gpu; /* the entries HIP declares alike */
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*GetErrorString)(CUresult, const char **);
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t *, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  /* every copy is ordered on the device's stream (device_gpu.c waits for it) */
  CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
} cuda_api;

static struct {
  cuda_api api;
  rt_gpu_state state;
} cuda = {.state = {PTHREAD_ONCE_INIT, 0, ""}};

typedef CUresult (*get_proc_fn)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, unsigned long long);

typedef struct get_proc {
  get_proc_fn v2;
  get_proc_v1_fn v1; /* when the driver has no cuGetProcAddress_v2 */
} get_proc;

static void *cuda_lookup(void *ud, const char *name, rt_gpu_result *r) {
  const get_proc *gp = ud;
  void *p = NULL;
  int status = 0;
  *r = gp->v2 ? gp->v2(name, &p, KILN_CUDA_API_VERSION, 0, &status)
              : gp->v1(name, &p, KILN_CUDA_API_VERSION, 0);
  return *r == 0 ? p : NULL;
}

static const char *cu_name(rt_gpu_result r) {
  const char *s = NULL;
  if (cuda.api.GetErrorName && cuda.api.GetErrorName(r, &s) == 0 && s) return s;
  return "CUDA error";
}

static const char *cu_text(rt_gpu_result r) {
  const char *s = NULL;
  if (cuda.api.GetErrorString && cuda.api.GetErrorString(r, &s) == 0 && s) return s;
  return "no description";
}

#define E(f) {"cu" #f, offsetof(cuda_api, f)}
#define G(f) {"cu" #f, offsetof(cuda_api, gpu.f)}
static const rt_gpu_sym required[] = {
    E(GetErrorName), E(GetErrorString), E(Init), E(DriverGetVersion), E(DeviceGetCount),
    E(DeviceGet), E(DeviceGetName), E(DeviceGetAttribute), E(DeviceTotalMem),
    E(DevicePrimaryCtxRetain), E(DevicePrimaryCtxRelease), E(CtxSetCurrent), E(MemAlloc),
    E(MemFree), E(MemcpyHtoDAsync), E(MemcpyDtoHAsync), E(MemcpyDtoDAsync), E(StreamCreate),
    G(StreamDestroy),
    G(StreamSynchronize), G(ModuleLoadData), G(ModuleUnload), G(ModuleGetFunction),
    G(LaunchKernel),
};
static const rt_gpu_sym graph_entries[] = {
    G(StreamBeginCapture), G(StreamEndCapture), G(GraphInstantiateWithFlags), G(GraphLaunch),
    G(GraphExecDestroy), G(GraphDestroy),
};
static const rt_gpu_sym event_entries[] = {
    G(EventCreate), G(EventRecord), G(EventSynchronize), G(EventElapsedTime), G(EventDestroy),
};
#undef E
#undef G

static void cuda_load(void) {
  static const char *const names[] = {"libcuda.so.1"};
  void *lib = rt_gpu_dlopen(names, 1, "no CUDA driver", cuda.state.why, sizeof cuda.state.why);
  if (!lib) return;
  get_proc gp = {(get_proc_fn)(uintptr_t)dlsym(lib, "cuGetProcAddress_v2"), NULL};
  if (!gp.v2) gp.v1 = (get_proc_v1_fn)(uintptr_t)dlsym(lib, "cuGetProcAddress");
  if (!gp.v2 && !gp.v1) {
    snprintf(cuda.state.why, sizeof cuda.state.why,
             "CUDA driver too old: libcuda.so.1 has no cuGetProcAddress (kiln needs CUDA 12.0+)");
    return;
  }
  rt_gpu_result r = 0;
  int missing = rt_gpu_bind(&cuda.api, required, sizeof required / sizeof required[0],
                            cuda_lookup, &gp, &r);
  if (missing >= 0) {
    snprintf(cuda.state.why, sizeof cuda.state.why,
             "CUDA driver too old or incomplete: no %s for CUDA %d.%d (error %d)",
             required[missing].name, KILN_CUDA_API_VERSION / 1000,
             KILN_CUDA_API_VERSION % 1000 / 10, r);
    return;
  }
  /* all or none: a driver without graphs opens and cannot record */
  rt_gpu_bind(&cuda.api, graph_entries, sizeof graph_entries / sizeof graph_entries[0],
              cuda_lookup, &gp, &r);
  /* the same for events: without them launches are timed by the host clock */
  rt_gpu_bind(&cuda.api, event_entries, sizeof event_entries / sizeof event_entries[0],
              cuda_lookup, &gp, &r);
  if ((r = cuda.api.Init(0)) != 0) {
    snprintf(cuda.state.why, sizeof cuda.state.why,
             "the CUDA driver does not start: cuInit: %s (%s)", cu_name(r), cu_text(r));
    return;
  }
  int version = 0;
  if (cuda.api.DriverGetVersion(&version) == 0 && version < KILN_CUDA_API_VERSION) {
    snprintf(cuda.state.why, sizeof cuda.state.why,
             "CUDA driver too old: it supports CUDA %d.%d, kiln needs %d.%d", version / 1000,
             version % 1000 / 10, KILN_CUDA_API_VERSION / 1000, KILN_CUDA_API_VERSION % 1000 / 10);
    return;
  }
  if ((r = cuda.api.DeviceGetCount(&cuda.state.ndevices)) != 0) {
    cuda.state.ndevices = 0;
    snprintf(cuda.state.why, sizeof cuda.state.why, "cuDeviceGetCount: %s (%s)", cu_name(r),
             cu_text(r));
    return;
  }
  if (cuda.state.ndevices == 0)
    snprintf(cuda.state.why, sizeof cuda.state.why, "no CUDA device: the driver reports none");
}

/* Make d's context current on this thread (the driver's current context is
 * per thread). */
static int cuda_enter(kiln_device *d, const char *what, kiln_status *st) {
  const rt_gpu_dev *g = d->impl;
  CUresult r = cuda.api.CtxSetCurrent((CUcontext)g->ctx);
  if (r != 0)
    return rt_err(st, KILN_ERR_RUNTIME, "%s: %s: cuCtxSetCurrent: %s (%s)", d->label, what,
                  cu_name(r), cu_text(r));
  return 0;
}

static int cuda_attach(kiln_device *d, rt_gpu_dev *g, kiln_status *st) {
  CUdevice dev = 0;
  CUcontext ctx = NULL;
  CUresult r = cuda.api.DeviceGet(&dev, d->ordinal);
  if (r == 0) r = cuda.api.DevicePrimaryCtxRetain(&ctx, dev);
  if (r != 0)
    return rt_err(st, KILN_ERR_RUNTIME, "%s: cannot open: %s (%s)", d->label, cu_name(r),
                  cu_text(r));
  g->dev = dev;
  g->ctx = ctx;
  CUstream stream = NULL;
  if (cuda_enter(d, "open", st) < 0 ||
      (r = cuda.api.StreamCreate(&stream, CU_STREAM_NON_BLOCKING)) != 0) {
    if (r != 0)
      rt_err(st, KILN_ERR_RUNTIME, "%s: cuStreamCreate: %s (%s)", d->label, cu_name(r),
             cu_text(r));
    cuda.api.DevicePrimaryCtxRelease(dev);
    return -1;
  }
  g->stream = stream;
  char name[160] = "NVIDIA GPU";
  int major = 0, minor = 0;
  size_t mem = 0;
  cuda.api.DeviceGetName(name, (int)sizeof name - 1, dev);
  cuda.api.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, dev);
  cuda.api.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, dev);
  cuda.api.DeviceTotalMem(&mem, dev);
  snprintf(d->desc, sizeof d->desc, "%s (sm_%d%d, %zu MiB)", name, major, minor, mem >> 20);
  return 0;
}

static void cuda_detach(rt_gpu_dev *g) { cuda.api.DevicePrimaryCtxRelease(g->dev); }

static rt_gpu_result cuda_alloc(kiln_devptr *out, size_t bytes) {
  CUdeviceptr p = 0;
  CUresult r = cuda.api.MemAlloc(&p, bytes);
  *out = (kiln_devptr)p;
  return r;
}

static rt_gpu_result cuda_free(kiln_devptr p) { return cuda.api.MemFree((CUdeviceptr)p); }

static rt_gpu_result cuda_copy(rt_gpu_copy_kind kind, uint64_t dst, uint64_t src, size_t n,
                               void *stream) {
  /* On the stream, not the legacy one: kiln's stream is non-blocking, so a
   * copy elsewhere is not ordered with its launches (a pageable host-to-
   * device copy returns before its DMA ends; a kernel could read the old
   * bytes). */
  CUstream s = stream;
  switch (kind) {
  case RT_GPU_COPY_TO: return cuda.api.MemcpyHtoDAsync(dst, (const void *)(uintptr_t)src, n, s);
  case RT_GPU_COPY_FROM: return cuda.api.MemcpyDtoHAsync((void *)(uintptr_t)dst, src, n, s);
  case RT_GPU_COPY_DD:
  case RT_GPU_COPY_DD_ASYNC: return cuda.api.MemcpyDtoDAsync(dst, src, n, s);
  case RT_GPU_COPY_KINDS: break;
  }
  return 1; /* CUDA_ERROR_INVALID_VALUE: not a copy kind */
}

static const rt_gpu_vendor cuda_vendor = {
    .prefix = "cu",
    .reporter = "driver",
    .no_graphs = "the driver has no CUDA graph entry points",
    .alloc_call = "MemAlloc",
    .launch_call = "LaunchKernel",
    .copy_call = {"MemcpyHtoDAsync", "MemcpyDtoHAsync", "MemcpyDtoDAsync", "MemcpyDtoDAsync"},
    .state = &cuda.state,
    .load = cuda_load,
    .api = &cuda.api.gpu,
    .error_name = cu_name,
    .error_text = cu_text,
    .enter = cuda_enter,
    .attach = cuda_attach,
    .detach = cuda_detach,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy = cuda_copy,
};

static int cuda_count(kiln_status *st) { return rt_gpu_count(&cuda_vendor, st); }

static int cuda_open(kiln_device *d, kiln_status *st) { return rt_gpu_open(&cuda_vendor, d, st); }

const rt_device_ops rt_device_cuda_ops = RT_GPU_DEVICE_OPS(cuda_count, cuda_open);
