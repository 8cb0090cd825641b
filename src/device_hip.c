/* device_hip.c - AMD GPUs through the HIP runtime (device.h), opened at run
 * time: libamdhip64.so is dlopen'ed once per process and its entry points
 * looked up by name; nothing of ROCm is linked or included at build time
 * (the few types used are declared here as the HIP API documents them).
 *
 * Guarantees: where the runtime is missing, hipInit fails or there is no
 * device, every entry returns an error naming which (never a crash). The HIP
 * runtime's current device is per thread: every entry selects the device
 * first. One stream per open device.
 * Recording (device.h graph_*) is HIP graphs through stream capture, as on
 * CUDA (device_cuda.c): device-to-device copies are async while capturing;
 * the graph entry points are optional (a runtime without them cannot
 * record). Not yet run on an AMD GPU here. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

typedef int hipError_t; /* hipSuccess = 0 */
typedef int hipDevice_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphExec *hipGraphExec_t;

#define HIP_CAPTURE_MODE_THREAD_LOCAL 1 /* hipStreamCaptureModeThreadLocal */

#define HIP_MEMCPY_H2D 1 /* hipMemcpyHostToDevice */
#define HIP_MEMCPY_D2H 2 /* hipMemcpyDeviceToHost */
#define HIP_MEMCPY_D2D 3 /* hipMemcpyDeviceToDevice */

typedef struct hip_api {
  const char *(*GetErrorName)(hipError_t);
  const char *(*GetErrorString)(hipError_t);
  hipError_t (*Init)(unsigned);
  hipError_t (*GetDeviceCount)(int *);
  hipError_t (*SetDevice)(int);
  hipError_t (*DeviceGet)(hipDevice_t *, int);
  hipError_t (*DeviceGetName)(char *, int, hipDevice_t);
  hipError_t (*DeviceTotalMem)(size_t *, hipDevice_t);
  hipError_t (*Malloc)(void **, size_t);
  hipError_t (*Free)(void *);
  hipError_t (*Memcpy)(void *, const void *, size_t, int);
  hipError_t (*StreamCreate)(hipStream_t *);
  hipError_t (*StreamDestroy)(hipStream_t);
  hipError_t (*StreamSynchronize)(hipStream_t);
  hipError_t (*ModuleLoadData)(hipModule_t *, const void *);
  hipError_t (*ModuleUnload)(hipModule_t);
  hipError_t (*ModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  hipError_t (*ModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, unsigned, unsigned, hipStream_t, void **, void **);
  /* optional: HIP graphs (NULL when the runtime lacks them) */
  hipError_t (*StreamBeginCapture)(hipStream_t, int);
  hipError_t (*StreamEndCapture)(hipStream_t, hipGraph_t *);
  hipError_t (*GraphInstantiateWithFlags)(hipGraphExec_t *, hipGraph_t, unsigned long long);
  hipError_t (*GraphLaunch)(hipGraphExec_t, hipStream_t);
  hipError_t (*GraphExecDestroy)(hipGraphExec_t);
  hipError_t (*GraphDestroy)(hipGraph_t);
  hipError_t (*MemcpyAsync)(void *, const void *, size_t, int, hipStream_t);
} hip_api;

static struct {
  pthread_once_t once;
  hip_api api;
  int ndevices;
  char why[512];
} hip = {PTHREAD_ONCE_INIT, {0}, 0, ""};

static const char *hip_name(hipError_t r) {
  const char *s = hip.api.GetErrorName ? hip.api.GetErrorName(r) : NULL;
  return s ? s : "HIP error";
}

static const char *hip_text(hipError_t r) {
  const char *s = hip.api.GetErrorString ? hip.api.GetErrorString(r) : NULL;
  return s ? s : "no description";
}

static void hip_load(void) {
  void *lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(hip.why, sizeof hip.why, "no HIP runtime: libamdhip64.so cannot be opened (%s)",
             e ? e : "not found");
    return;
  }
  static const struct {
    const char *name;
    size_t off;
  } syms[] = {
#define E(f) {"hip" #f, offsetof(hip_api, f)}
      E(GetErrorName), E(GetErrorString), E(Init), E(GetDeviceCount), E(SetDevice), E(DeviceGet),
      E(DeviceGetName), E(DeviceTotalMem), E(Malloc), E(Free), E(Memcpy), E(StreamCreate),
      E(StreamDestroy), E(StreamSynchronize), E(ModuleLoadData), E(ModuleUnload),
      E(ModuleGetFunction), E(ModuleLaunchKernel),
#undef E
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(lib, syms[i].name);
    if (!p) {
      snprintf(hip.why, sizeof hip.why, "HIP runtime too old or incomplete: no %s",
               syms[i].name);
      memset(&hip.api, 0, sizeof hip.api);
      return;
    }
    memcpy((char *)&hip.api + syms[i].off, &p, sizeof p);
  }
  static const struct {
    const char *name;
    size_t off;
  } graph_syms[] = {
#define E(f) {"hip" #f, offsetof(hip_api, f)}
      E(StreamBeginCapture), E(StreamEndCapture), E(GraphInstantiateWithFlags), E(GraphLaunch),
      E(GraphExecDestroy), E(GraphDestroy), E(MemcpyAsync),
#undef E
  };
  void *gfn[sizeof graph_syms / sizeof graph_syms[0]];
  bool graphs = true;
  for (size_t i = 0; i < sizeof graph_syms / sizeof graph_syms[0] && graphs; i++)
    graphs = (gfn[i] = dlsym(lib, graph_syms[i].name)) != NULL;
  for (size_t i = 0; graphs && i < sizeof graph_syms / sizeof graph_syms[0]; i++)
    memcpy((char *)&hip.api + graph_syms[i].off, &gfn[i], sizeof gfn[i]);
  hipError_t r = hip.api.Init(0);
  if (r != 0) {
    snprintf(hip.why, sizeof hip.why, "the HIP runtime does not start: hipInit: %s (%s)",
             hip_name(r), hip_text(r));
    return;
  }
  if ((r = hip.api.GetDeviceCount(&hip.ndevices)) != 0 || hip.ndevices == 0) {
    hip.ndevices = 0;
    snprintf(hip.why, sizeof hip.why, "no HIP device: %s",
             r ? hip_text(r) : "the runtime reports none");
  }
}

static int hip_ready(kiln_status *st) {
  pthread_once(&hip.once, hip_load);
  if (hip.why[0]) return rt_err(st, KILN_ERR_NOT_FOUND, "%s", hip.why);
  return 0;
}

static int hip_count(kiln_status *st) { return hip_ready(st) < 0 ? 0 : hip.ndevices; }

typedef struct hip_dev {
  hipStream_t stream;
  bool capturing; /* between graph_begin and graph_end */
} hip_dev;

typedef struct hip_graph {
  hipGraph_t graph;
  hipGraphExec_t exec;
} hip_graph;

#define HIP_CHECK(d, st, call, what)                                                          \
  do {                                                                                        \
    hipError_t r_ = (call);                                                                   \
    if (r_ != 0)                                                                              \
      return rt_err(st, KILN_ERR_RUNTIME, "%s: %s: %s (%s)", (d)->label, what, hip_name(r_), \
                    hip_text(r_));                                                            \
  } while (0)

static int hip_enter(kiln_device *d, kiln_status *st) {
  HIP_CHECK(d, st, hip.api.SetDevice(d->ordinal), "hipSetDevice");
  return 0;
}

static int hip_open(kiln_device *d, kiln_status *st) {
  if (hip_ready(st) < 0) return rt_err(st, KILN_ERR_NOT_FOUND, "%s: %s", d->label, hip.why);
  if (d->ordinal >= hip.ndevices)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: no such device (the runtime reports %d)",
                  d->label, hip.ndevices);
  hip_dev *h = calloc(1, sizeof *h);
  if (!h) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  hipError_t r = hip.api.SetDevice(d->ordinal);
  if (r == 0) r = hip.api.StreamCreate(&h->stream);
  if (r != 0) {
    free(h);
    return rt_err(st, KILN_ERR_RUNTIME, "%s: cannot open: %s (%s)", d->label, hip_name(r),
                  hip_text(r));
  }
  d->impl = h;
  hipDevice_t dev = 0;
  char name[160] = "AMD GPU";
  size_t mem = 0;
  if (hip.api.DeviceGet(&dev, d->ordinal) == 0) {
    hip.api.DeviceGetName(name, (int)sizeof name - 1, dev);
    hip.api.DeviceTotalMem(&mem, dev);
  }
  snprintf(d->desc, sizeof d->desc, "%s (%zu MiB)", name, mem >> 20);
  return 0;
}

static void hip_close(kiln_device *d) {
  hip_dev *h = d->impl;
  if (!h) return;
  if (hip_enter(d, NULL) == 0) {
    hip.api.StreamSynchronize(h->stream);
    hip.api.StreamDestroy(h->stream);
  }
  free(h);
  d->impl = NULL;
}

static int hip_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st) {
  if (hip_enter(d, st) < 0) return -1;
  void *p = NULL;
  HIP_CHECK(d, st, hip.api.Malloc(&p, bytes), "hipMalloc");
  *out = (kiln_devptr)(uintptr_t)p;
  return 0;
}

static void hip_free(kiln_device *d, kiln_devptr p) {
  if (hip_enter(d, NULL) == 0) hip.api.Free((void *)(uintptr_t)p);
}

static int hip_copy(kiln_device *d, void *dst, const void *src, size_t n, int kind,
                    kiln_status *st) {
  if (hip_enter(d, st) < 0) return -1;
  hip_dev *h = d->impl;
  HIP_CHECK(d, st, hip.api.StreamSynchronize(h->stream), "hipStreamSynchronize");
  HIP_CHECK(d, st, hip.api.Memcpy(dst, src, n, kind), "hipMemcpy");
  return 0;
}

static int hip_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t n,
                       kiln_status *st) {
  return hip_copy(d, (void *)(uintptr_t)dst, src, n, HIP_MEMCPY_H2D, st);
}

static int hip_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t n, kiln_status *st) {
  return hip_copy(d, dst, (const void *)(uintptr_t)src, n, HIP_MEMCPY_D2H, st);
}

static int hip_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                       kiln_status *st) {
  hip_dev *h = d->impl;
  if (h->capturing) { /* a graph node, ordered on the stream */
    if (hip_enter(d, st) < 0) return -1;
    HIP_CHECK(d, st,
              hip.api.MemcpyAsync((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n,
                                  HIP_MEMCPY_D2D, h->stream),
              "hipMemcpyAsync");
    return 0;
  }
  return hip_copy(d, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, HIP_MEMCPY_D2D, st);
}

static int hip_sync(kiln_device *d, kiln_status *st) {
  if (hip_enter(d, st) < 0) return -1;
  hip_dev *h = d->impl;
  HIP_CHECK(d, st, hip.api.StreamSynchronize(h->stream), "hipStreamSynchronize");
  return 0;
}

static int hip_module_load(kiln_device *d, const void *image, size_t len, void **mod,
                           kiln_status *st) {
  (void)len; /* code objects are ELF: they carry their size */
  if (hip_enter(d, st) < 0) return -1;
  hipModule_t m = NULL;
  HIP_CHECK(d, st, hip.api.ModuleLoadData(&m, image), "hipModuleLoadData");
  *mod = m;
  return 0;
}

static void hip_module_unload(kiln_device *d, void *mod) {
  if (hip_enter(d, NULL) == 0) hip.api.ModuleUnload((hipModule_t)mod);
}

static int hip_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                               kiln_status *st) {
  if (hip_enter(d, st) < 0) return -1;
  hipFunction_t f = NULL;
  hipError_t r = hip.api.ModuleGetFunction(&f, (hipModule_t)mod, name);
  if (r != 0)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': hipModuleGetFunction: %s (%s)",
                  d->label, name, hip_name(r), hip_text(r));
  *fn = f;
  return 0;
}

static int hip_launch(kiln_device *d, void *fn, const rt_launch_dims *g, void **params,
                      kiln_status *st) {
  if (hip_enter(d, st) < 0) return -1;
  hip_dev *h = d->impl;
  HIP_CHECK(d, st,
            hip.api.ModuleLaunchKernel((hipFunction_t)fn, g->grid[0], g->grid[1], g->grid[2],
                                       g->block[0], g->block[1], g->block[2], g->shared_bytes,
                                       h->stream, params, NULL),
            "hipModuleLaunchKernel");
  return 0;
}

/* ---- recording: HIP graphs ---- */

static int hip_graph_begin(kiln_device *d, kiln_status *st) {
  if (!hip.api.StreamBeginCapture)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: the HIP runtime has no graph entry points",
                  d->label);
  if (hip_enter(d, st) < 0) return -1;
  hip_dev *h = d->impl;
  HIP_CHECK(d, st, hip.api.StreamSynchronize(h->stream), "hipStreamSynchronize");
  HIP_CHECK(d, st, hip.api.StreamBeginCapture(h->stream, HIP_CAPTURE_MODE_THREAD_LOCAL),
            "hipStreamBeginCapture");
  h->capturing = true;
  return 0;
}

static void hip_graph_free(kiln_device *d, void *graph) {
  hip_graph *g = graph;
  if (!g) return;
  if (hip_enter(d, NULL) == 0) {
    if (g->exec) hip.api.GraphExecDestroy(g->exec);
    if (g->graph) hip.api.GraphDestroy(g->graph);
  }
  free(g);
}

static int hip_graph_end(kiln_device *d, void **graph, kiln_status *st) {
  hip_dev *h = d->impl;
  if (!h->capturing)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: graph end without a graph begin",
                  d->label);
  if (hip_enter(d, st) < 0) return -1;
  h->capturing = false;
  hip_graph *g = calloc(1, sizeof *g);
  hipGraph_t raw = NULL;
  hipError_t r = hip.api.StreamEndCapture(h->stream, &raw); /* ends the capture in any case */
  if (!g || r != 0) {
    if (raw) hip.api.GraphDestroy(raw);
    free(g);
    if (r != 0)
      return rt_err(st, KILN_ERR_RUNTIME, "%s: hipStreamEndCapture: %s (%s)", d->label,
                    hip_name(r), hip_text(r));
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  }
  g->graph = raw;
  if ((r = hip.api.GraphInstantiateWithFlags(&g->exec, raw, 0)) != 0) {
    g->exec = NULL;
    hip_graph_free(d, g);
    return rt_err(st, KILN_ERR_RUNTIME, "%s: hipGraphInstantiateWithFlags: %s (%s)", d->label,
                  hip_name(r), hip_text(r));
  }
  *graph = g;
  return 0;
}

static int hip_graph_launch(kiln_device *d, void *graph, kiln_status *st) {
  if (hip_enter(d, st) < 0) return -1;
  hip_dev *h = d->impl;
  const hip_graph *g = graph;
  HIP_CHECK(d, st, hip.api.GraphLaunch(g->exec, h->stream), "hipGraphLaunch");
  HIP_CHECK(d, st, hip.api.StreamSynchronize(h->stream), "hipStreamSynchronize");
  return 0;
}

const rt_device_ops rt_device_hip_ops = {
    .count = hip_count,
    .open = hip_open,
    .close = hip_close,
    .alloc = hip_alloc,
    .free = hip_free,
    .copy_to = hip_copy_to,
    .copy_from = hip_copy_from,
    .copy_dd = hip_copy_dd,
    .synchronize = hip_sync,
    .module_load = hip_module_load,
    .module_unload = hip_module_unload,
    .module_function = hip_module_function,
    .launch = hip_launch,
    .graph_begin = hip_graph_begin,
    .graph_end = hip_graph_end,
    .graph_launch = hip_graph_launch,
    .graph_free = hip_graph_free,
};
