/* device_cuda.c - NVIDIA GPUs through the CUDA driver API (device.h),
 * opened at run time: libcuda.so.1 is dlopen'ed once per process, the entry
 * points are fetched with cuGetProcAddress for the CUDA version kiln was
 * written against (so CUDA 13's renamed / versioned symbols resolve to the
 * right ones), and nothing of CUDA is linked or included at build time (the
 * few types used are declared here as the driver API documents them).
 *
 * Guarantees: where libcuda.so.1 is missing, the driver is too old, cuInit
 * fails or there is no device, every entry returns an error naming which
 * (never a crash). A device keeps its primary context retained while open
 * and one stream; copies and launches are synchronous with respect to the
 * caller's view (copies wait; kiln_device_synchronize waits for launches).
 * Recording (device.h graph_*) is CUDA graphs through stream capture of the
 * device's stream (thread-local capture mode): launches and device-to-
 * device copies (async while capturing) become graph nodes, cuStreamEndCapture
 * gives the graph, cuGraphInstantiateWithFlags the executable one, and
 * cuGraphLaunch on the stream plus a stream wait runs it. Those entry points
 * are optional: a driver without them opens as before and cannot record.
 * Not yet run on a GPU here (no session has had one since it was written). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

/* ---- the slice of the driver API kiln uses (cuda.h spells them so) ---- */
typedef int CUresult; /* CUDA_SUCCESS = 0 */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

#define KILN_CUDA_API_VERSION 12000 /* the driver API version the entries below follow */
#define CU_ATTR_CC_MAJOR 75         /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CU_ATTR_CC_MINOR 76
#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1

typedef struct cuda_api {
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
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void **, void **);
  /* optional: CUDA graphs (NULL when the driver lacks them) */
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
  CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
} cuda_api;

static struct {
  pthread_once_t once;
  cuda_api api;
  int driver_version;
  int ndevices;
  char why[512]; /* set when the driver is unusable: why */
} cuda = {PTHREAD_ONCE_INIT, {0}, 0, 0, ""};

typedef CUresult (*get_proc_fn)(const char *, void **, int, unsigned long long, int *);
typedef CUresult (*get_proc_v1_fn)(const char *, void **, int, unsigned long long);

static const char *cu_name(CUresult r) {
  const char *s = NULL;
  if (cuda.api.GetErrorName && cuda.api.GetErrorName(r, &s) == 0 && s) return s;
  return "CUDA error";
}

static const char *cu_text(CUresult r) {
  const char *s = NULL;
  if (cuda.api.GetErrorString && cuda.api.GetErrorString(r, &s) == 0 && s) return s;
  return "no description";
}

static void cuda_load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(cuda.why, sizeof cuda.why, "no CUDA driver: libcuda.so.1 cannot be opened (%s)",
             e ? e : "not found");
    return;
  }
  /* Kept open for the life of the process: driver libraries do not unload. */
  get_proc_fn gp = (get_proc_fn)(uintptr_t)dlsym(lib, "cuGetProcAddress_v2");
  get_proc_v1_fn gp1 = gp ? NULL : (get_proc_v1_fn)(uintptr_t)dlsym(lib, "cuGetProcAddress");
  if (!gp && !gp1) {
    snprintf(cuda.why, sizeof cuda.why,
             "CUDA driver too old: libcuda.so.1 has no cuGetProcAddress (kiln needs CUDA 12.0+)");
    return;
  }
  static const struct {
    const char *name;
    size_t off;
  } syms[] = {
#define E(f) {"cu" #f, offsetof(cuda_api, f)}
      E(GetErrorName), E(GetErrorString), E(Init), E(DriverGetVersion), E(DeviceGetCount),
      E(DeviceGet), E(DeviceGetName), E(DeviceGetAttribute), E(DeviceTotalMem),
      E(DevicePrimaryCtxRetain), E(DevicePrimaryCtxRelease), E(CtxSetCurrent), E(MemAlloc),
      E(MemFree), E(MemcpyHtoD), E(MemcpyDtoH), E(MemcpyDtoD), E(StreamCreate), E(StreamDestroy),
      E(StreamSynchronize), E(ModuleLoadData), E(ModuleUnload), E(ModuleGetFunction),
      E(LaunchKernel),
#undef E
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = NULL;
    int status = 0;
    CUresult r = gp ? gp(syms[i].name, &p, KILN_CUDA_API_VERSION, 0, &status)
                    : gp1(syms[i].name, &p, KILN_CUDA_API_VERSION, 0);
    if (r != 0 || !p) {
      snprintf(cuda.why, sizeof cuda.why,
               "CUDA driver too old or incomplete: no %s for CUDA %d.%d (error %d)", syms[i].name,
               KILN_CUDA_API_VERSION / 1000, KILN_CUDA_API_VERSION % 1000 / 10, r);
      memset(&cuda.api, 0, sizeof cuda.api);
      return;
    }
    memcpy((char *)&cuda.api + syms[i].off, &p, sizeof p);
  }
  static const struct {
    const char *name;
    size_t off;
  } graph_syms[] = {
#define E(f) {"cu" #f, offsetof(cuda_api, f)}
      E(StreamBeginCapture), E(StreamEndCapture), E(GraphInstantiateWithFlags), E(GraphLaunch),
      E(GraphExecDestroy), E(GraphDestroy), E(MemcpyDtoDAsync),
#undef E
  };
  void *gfn[sizeof graph_syms / sizeof graph_syms[0]] = {0};
  bool graphs = true;
  for (size_t i = 0; i < sizeof graph_syms / sizeof graph_syms[0] && graphs; i++) {
    int status = 0;
    CUresult r = gp ? gp(graph_syms[i].name, &gfn[i], KILN_CUDA_API_VERSION, 0, &status)
                    : gp1(graph_syms[i].name, &gfn[i], KILN_CUDA_API_VERSION, 0);
    graphs = r == 0 && gfn[i];
  }
  for (size_t i = 0; graphs && i < sizeof graph_syms / sizeof graph_syms[0]; i++)
    memcpy((char *)&cuda.api + graph_syms[i].off, &gfn[i], sizeof gfn[i]);
  CUresult r = cuda.api.Init(0);
  if (r != 0) {
    snprintf(cuda.why, sizeof cuda.why, "the CUDA driver does not start: cuInit: %s (%s)",
             cu_name(r), cu_text(r));
    return;
  }
  if (cuda.api.DriverGetVersion(&cuda.driver_version) == 0 &&
      cuda.driver_version < KILN_CUDA_API_VERSION) {
    snprintf(cuda.why, sizeof cuda.why,
             "CUDA driver too old: it supports CUDA %d.%d, kiln needs %d.%d",
             cuda.driver_version / 1000, cuda.driver_version % 1000 / 10,
             KILN_CUDA_API_VERSION / 1000, KILN_CUDA_API_VERSION % 1000 / 10);
    return;
  }
  r = cuda.api.DeviceGetCount(&cuda.ndevices);
  if (r != 0) {
    cuda.ndevices = 0;
    snprintf(cuda.why, sizeof cuda.why, "cuDeviceGetCount: %s (%s)", cu_name(r), cu_text(r));
    return;
  }
  if (cuda.ndevices == 0)
    snprintf(cuda.why, sizeof cuda.why, "no CUDA device: the driver reports none");
}

static int cuda_ready(kiln_status *st) {
  pthread_once(&cuda.once, cuda_load);
  if (cuda.why[0]) return rt_err(st, KILN_ERR_NOT_FOUND, "%s", cuda.why);
  return 0;
}

static int cuda_count(kiln_status *st) {
  if (cuda_ready(st) < 0) return 0;
  return cuda.ndevices;
}

typedef struct cuda_dev {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  bool capturing; /* between graph_begin and graph_end */
} cuda_dev;

typedef struct cuda_graph {
  CUgraph graph;
  CUgraphExec exec;
} cuda_graph;

/* Make d's context current on this thread (the driver's current context is
 * per thread); -1 with st filled. */
static int cuda_enter(kiln_device *d, const char *what, kiln_status *st) {
  cuda_dev *c = d->impl;
  CUresult r = cuda.api.CtxSetCurrent(c->ctx);
  if (r != 0)
    return rt_err(st, KILN_ERR_RUNTIME, "%s: %s: cuCtxSetCurrent: %s (%s)", d->label, what,
                  cu_name(r), cu_text(r));
  return 0;
}

#define CU_CHECK(d, st, call, what)                                                          \
  do {                                                                                       \
    CUresult r_ = (call);                                                                    \
    if (r_ != 0)                                                                             \
      return rt_err(st, KILN_ERR_RUNTIME, "%s: %s: %s (%s)", (d)->label, what, cu_name(r_), \
                    cu_text(r_));                                                            \
  } while (0)

static int cuda_open(kiln_device *d, kiln_status *st) {
  if (cuda_ready(st) < 0) {
    rt_err(st, KILN_ERR_NOT_FOUND, "%s: %s", d->label, cuda.why);
    return -1;
  }
  if (d->ordinal >= cuda.ndevices)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: no such device (the driver reports %d)", d->label,
                  cuda.ndevices);
  cuda_dev *c = calloc(1, sizeof *c);
  if (!c) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  d->impl = c;
  CUresult r = cuda.api.DeviceGet(&c->dev, d->ordinal);
  if (r == 0) r = cuda.api.DevicePrimaryCtxRetain(&c->ctx, c->dev);
  if (r != 0) {
    rt_err(st, KILN_ERR_RUNTIME, "%s: cannot open: %s (%s)", d->label, cu_name(r), cu_text(r));
    free(c);
    d->impl = NULL;
    return -1;
  }
  if (cuda_enter(d, "open", st) < 0 ||
      (r = cuda.api.StreamCreate(&c->stream, CU_STREAM_NON_BLOCKING)) != 0) {
    if (r != 0)
      rt_err(st, KILN_ERR_RUNTIME, "%s: cuStreamCreate: %s (%s)", d->label, cu_name(r),
             cu_text(r));
    cuda.api.DevicePrimaryCtxRelease(c->dev);
    free(c);
    d->impl = NULL;
    return -1;
  }
  char name[160] = "NVIDIA GPU";
  int major = 0, minor = 0;
  size_t mem = 0;
  cuda.api.DeviceGetName(name, (int)sizeof name - 1, c->dev);
  cuda.api.DeviceGetAttribute(&major, CU_ATTR_CC_MAJOR, c->dev);
  cuda.api.DeviceGetAttribute(&minor, CU_ATTR_CC_MINOR, c->dev);
  cuda.api.DeviceTotalMem(&mem, c->dev);
  snprintf(d->desc, sizeof d->desc, "%s (sm_%d%d, %zu MiB)", name, major, minor, mem >> 20);
  return 0;
}

static void cuda_close(kiln_device *d) {
  cuda_dev *c = d->impl;
  if (!c) return;
  if (cuda.api.CtxSetCurrent(c->ctx) == 0) {
    cuda.api.StreamSynchronize(c->stream);
    cuda.api.StreamDestroy(c->stream);
  }
  cuda.api.DevicePrimaryCtxRelease(c->dev);
  free(c);
  d->impl = NULL;
}

static int cuda_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st) {
  if (cuda_enter(d, "alloc", st) < 0) return -1;
  CUdeviceptr p = 0;
  CU_CHECK(d, st, cuda.api.MemAlloc(&p, bytes), "cuMemAlloc");
  *out = (kiln_devptr)p;
  return 0;
}

static void cuda_free(kiln_device *d, kiln_devptr p) {
  if (cuda_enter(d, "free", NULL) == 0) cuda.api.MemFree((CUdeviceptr)p);
}

static int cuda_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t n,
                        kiln_status *st) {
  if (cuda_enter(d, "copy", st) < 0) return -1;
  cuda_dev *c = d->impl;
  CU_CHECK(d, st, cuda.api.StreamSynchronize(c->stream), "cuStreamSynchronize");
  CU_CHECK(d, st, cuda.api.MemcpyHtoD((CUdeviceptr)dst, src, n), "cuMemcpyHtoD");
  return 0;
}

static int cuda_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t n,
                          kiln_status *st) {
  if (cuda_enter(d, "copy", st) < 0) return -1;
  cuda_dev *c = d->impl;
  CU_CHECK(d, st, cuda.api.StreamSynchronize(c->stream), "cuStreamSynchronize");
  CU_CHECK(d, st, cuda.api.MemcpyDtoH(dst, (CUdeviceptr)src, n), "cuMemcpyDtoH");
  return 0;
}

static int cuda_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                        kiln_status *st) {
  if (cuda_enter(d, "copy", st) < 0) return -1;
  cuda_dev *c = d->impl;
  if (c->capturing) { /* a graph node, ordered on the stream */
    CU_CHECK(d, st, cuda.api.MemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, c->stream),
             "cuMemcpyDtoDAsync");
    return 0;
  }
  CU_CHECK(d, st, cuda.api.StreamSynchronize(c->stream), "cuStreamSynchronize");
  CU_CHECK(d, st, cuda.api.MemcpyDtoD((CUdeviceptr)dst, (CUdeviceptr)src, n), "cuMemcpyDtoD");
  return 0;
}

static int cuda_sync(kiln_device *d, kiln_status *st) {
  if (cuda_enter(d, "synchronize", st) < 0) return -1;
  cuda_dev *c = d->impl;
  CU_CHECK(d, st, cuda.api.StreamSynchronize(c->stream), "cuStreamSynchronize");
  return 0;
}

static int cuda_module_load(kiln_device *d, const void *image, size_t len, void **mod,
                            kiln_status *st) {
  (void)len; /* PTX is NUL-terminated text; cubins carry their size */
  if (cuda_enter(d, "module load", st) < 0) return -1;
  CUmodule m = NULL;
  CU_CHECK(d, st, cuda.api.ModuleLoadData(&m, image), "cuModuleLoadData");
  *mod = m;
  return 0;
}

static void cuda_module_unload(kiln_device *d, void *mod) {
  if (cuda_enter(d, "module unload", NULL) == 0) cuda.api.ModuleUnload((CUmodule)mod);
}

static int cuda_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                                kiln_status *st) {
  if (cuda_enter(d, "module function", st) < 0) return -1;
  CUfunction f = NULL;
  CUresult r = cuda.api.ModuleGetFunction(&f, (CUmodule)mod, name);
  if (r != 0)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': cuModuleGetFunction: %s (%s)",
                  d->label, name, cu_name(r), cu_text(r));
  *fn = f;
  return 0;
}

static int cuda_launch(kiln_device *d, void *fn, const rt_launch_dims *g, void **params,
                       kiln_status *st) {
  if (cuda_enter(d, "launch", st) < 0) return -1;
  cuda_dev *c = d->impl;
  CU_CHECK(d, st,
           cuda.api.LaunchKernel((CUfunction)fn, g->grid[0], g->grid[1], g->grid[2], g->block[0],
                                 g->block[1], g->block[2], g->shared_bytes, c->stream, params,
                                 NULL),
           "cuLaunchKernel");
  return 0;
}

/* ---- recording: CUDA graphs ---- */

static int cuda_graph_begin(kiln_device *d, kiln_status *st) {
  if (!cuda.api.StreamBeginCapture)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: the driver has no CUDA graph entry points",
                  d->label);
  if (cuda_enter(d, "capture", st) < 0) return -1;
  cuda_dev *c = d->impl;
  CU_CHECK(d, st, cuda.api.StreamSynchronize(c->stream), "cuStreamSynchronize");
  CU_CHECK(d, st, cuda.api.StreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
           "cuStreamBeginCapture");
  c->capturing = true;
  return 0;
}

static void cuda_graph_free(kiln_device *d, void *graph) {
  cuda_graph *g = graph;
  if (!g) return;
  if (cuda_enter(d, "graph free", NULL) == 0) {
    if (g->exec) cuda.api.GraphExecDestroy(g->exec);
    if (g->graph) cuda.api.GraphDestroy(g->graph);
  }
  free(g);
}

static int cuda_graph_end(kiln_device *d, void **graph, kiln_status *st) {
  cuda_dev *c = d->impl;
  if (!c->capturing)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: graph end without a graph begin",
                  d->label);
  if (cuda_enter(d, "capture", st) < 0) return -1;
  c->capturing = false;
  cuda_graph *g = calloc(1, sizeof *g);
  CUgraph raw = NULL;
  CUresult r = cuda.api.StreamEndCapture(c->stream, &raw); /* ends the capture in any case */
  if (!g || r != 0) {
    if (raw) cuda.api.GraphDestroy(raw);
    free(g);
    if (r != 0)
      return rt_err(st, KILN_ERR_RUNTIME, "%s: cuStreamEndCapture: %s (%s)", d->label,
                    cu_name(r), cu_text(r));
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  }
  g->graph = raw;
  if ((r = cuda.api.GraphInstantiateWithFlags(&g->exec, raw, 0)) != 0) {
    g->exec = NULL;
    cuda_graph_free(d, g);
    return rt_err(st, KILN_ERR_RUNTIME, "%s: cuGraphInstantiateWithFlags: %s (%s)", d->label,
                  cu_name(r), cu_text(r));
  }
  *graph = g;
  return 0;
}

static int cuda_graph_launch(kiln_device *d, void *graph, kiln_status *st) {
  if (cuda_enter(d, "graph launch", st) < 0) return -1;
  cuda_dev *c = d->impl;
  const cuda_graph *g = graph;
  CU_CHECK(d, st, cuda.api.GraphLaunch(g->exec, c->stream), "cuGraphLaunch");
  CU_CHECK(d, st, cuda.api.StreamSynchronize(c->stream), "cuStreamSynchronize");
  return 0;
}

const rt_device_ops rt_device_cuda_ops = {
    .count = cuda_count,
    .open = cuda_open,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy_to = cuda_copy_to,
    .copy_from = cuda_copy_from,
    .copy_dd = cuda_copy_dd,
    .synchronize = cuda_sync,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .module_function = cuda_module_function,
    .launch = cuda_launch,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
};
