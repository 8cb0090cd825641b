/* device_gpu.h - internal to src/: what the CUDA and HIP backends
 * (device_cuda.c, device_hip.c) share, implemented once in device_gpu.c.
 *
 * Both drive a GPU the same way: a vendor library dlopen'ed once per process
 * (nothing of it is linked or included at build time), one stream per open
 * device, copies that wait for the stream, modules and kernels loaded from
 * images, launches on the stream, and recording (device.h graph_*) through
 * stream capture into a graph, and events that time launches on the device's
 * clock. device_gpu.c implements those rt_device_ops
 * entries over a rt_gpu_vendor: the few things that differ (entry points whose
 * signatures differ, how a device is made current and opened, how errors are
 * named). Messages name the device and the vendor's entry point:
 * "cuda:0: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
 *
 * Assumes: a vendor's load runs once (pthread_once) before any other entry;
 * every entry but count / open gets a device its vendor opened. */
#ifndef KILN_SRC_DEVICE_GPU_H
#define KILN_SRC_DEVICE_GPU_H

#include <pthread.h>

#include "device.h"

typedef int rt_gpu_result; /* CUresult, hipError_t: 0 is success */

/* Stream capture mode "thread local" (cudaStreamCaptureModeThreadLocal and
 * hipStreamCaptureModeThreadLocal are both 1): only the capturing thread's
 * calls are recorded. */
#define RT_GPU_CAPTURE_THREAD_LOCAL 1

/* The entry points CUDA's driver API and HIP declare alike, handles opaque
 * (CUstream / hipStream_t, CUmodule / hipModule_t, ...). */
typedef struct rt_gpu_api {
  rt_gpu_result (*StreamSynchronize)(void *stream);
  rt_gpu_result (*StreamDestroy)(void *stream);
  rt_gpu_result (*ModuleLoadData)(void **mod, const void *image);
  rt_gpu_result (*ModuleUnload)(void *mod);
  rt_gpu_result (*ModuleGetFunction)(void **fn, void *mod, const char *name);
  rt_gpu_result (*LaunchKernel)(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared_bytes, void *stream,
                             void **params, void **extra);
  /* optional: graphs (all NULL when the library lacks any of them) */
  rt_gpu_result (*StreamBeginCapture)(void *stream, int mode);
  rt_gpu_result (*StreamEndCapture)(void *stream, void **graph);
  rt_gpu_result (*GraphInstantiateWithFlags)(void **exec, void *graph, unsigned long long flags);
  rt_gpu_result (*GraphLaunch)(void *exec, void *stream);
  rt_gpu_result (*GraphExecDestroy)(void *exec);
  rt_gpu_result (*GraphDestroy)(void *graph);
  /* optional: events, for timing launches on the device's clock (all NULL
   * when the library lacks any of them; CUDA's cuEventCreate and HIP's
   * hipEventCreateWithFlags take the same (event, flags)) */
  rt_gpu_result (*EventCreate)(void **ev, unsigned flags);
  rt_gpu_result (*EventRecord)(void *ev, void *stream);
  rt_gpu_result (*EventSynchronize)(void *ev);
  rt_gpu_result (*EventElapsedTime)(float *ms, void *start, void *end);
  rt_gpu_result (*EventDestroy)(void *ev);
} rt_gpu_api;

/* A vendor's process-wide state, written once by its load function. */
typedef struct rt_gpu_state {
  pthread_once_t once;
  int ndevices;
  char why[512]; /* why the library is unusable; "" when it is usable */
} rt_gpu_state;

typedef enum rt_gpu_copy_kind {
  RT_GPU_COPY_TO,       /* host to device */
  RT_GPU_COPY_FROM,     /* device to host */
  RT_GPU_COPY_DD,       /* device to device */
  RT_GPU_COPY_DD_ASYNC, /* device to device, ordered on the stream (while capturing) */
  RT_GPU_COPY_KINDS
} rt_gpu_copy_kind;

typedef struct rt_gpu_vendor rt_gpu_vendor;

/* An open device (kiln_device.impl). */
typedef struct rt_gpu_dev {
  const rt_gpu_vendor *v;
  void *stream;
  bool capturing; /* between graph_begin and graph_end */
  int dev;        /* the vendor's device handle (CUdevice; unused by HIP) */
  void *ctx;      /* the vendor's context (CUDA's retained primary context) */
} rt_gpu_dev;

/* What differs between vendors. Call names are written prefix + suffix
 * ("cu" "MemAlloc", "hip" "Malloc"). */
struct rt_gpu_vendor {
  const char *prefix;   /* "cu", "hip" */
  const char *reporter; /* "driver", "runtime": "no such device (the driver reports 1)" */
  const char *no_graphs; /* graph_begin's error when the graph entry points are missing */
  const char *alloc_call, *launch_call, *copy_call[RT_GPU_COPY_KINDS];
  rt_gpu_state *state;
  void (*load)(void); /* run once: fills state and the vendor's entry points */
  const rt_gpu_api *api;
  const char *(*error_name)(rt_gpu_result r); /* never NULL */
  const char *(*error_text)(rt_gpu_result r);
  /* Make d current on the calling thread; what names the operation in the
   * message. 0, or -1 with st (may be NULL) filled. */
  int (*enter)(kiln_device *d, const char *what, kiln_status *st);
  /* Open: the device handle and context, g->stream, d->desc (d->impl is g
   * already). 0, or -1 with st filled and nothing left held. */
  int (*attach)(kiln_device *d, rt_gpu_dev *g, kiln_status *st);
  /* Close, after the stream is gone: release what attach took (NULL: nothing). */
  void (*detach)(rt_gpu_dev *g);
  rt_gpu_result (*alloc)(kiln_devptr *out, size_t bytes);
  rt_gpu_result (*free)(kiln_devptr p);
  /* Copy n bytes; dst / src are host pointers or device addresses as the
   * kind says; stream is g->stream. The copy must be ordered with the
   * stream's launches both ways (CUDA: on it; HIP: its blocking stream
   * waits for the null stream's copies). */
  rt_gpu_result (*copy)(rt_gpu_copy_kind kind, uint64_t dst, uint64_t src, size_t n, void *stream);
};

/* ---- loading (for a vendor's load function) ---- */

/* dlopen the first of names[0..] that opens (RTLD_NOW | RTLD_LOCAL), kept
 * open for the life of the process. NULL with why = "<missing>: <names[0]>
 * cannot be opened (<dlerror>)" when none does. */
void *rt_gpu_dlopen(const char *const *names, size_t nnames, const char *missing, char *why,
                 size_t whylen);

typedef struct rt_gpu_sym {
  const char *name;
  size_t off; /* where the pointer goes: offsetof(the vendor's table, entry) */
} rt_gpu_sym;
/* Find `name`; NULL when absent, with *r the library's answer (0 if none). */
typedef void *(*rt_gpu_lookup_fn)(void *ud, const char *name, rt_gpu_result *r);

/* Store every syms[i] at (char *)table + syms[i].off, or none of them:
 * returns -1 when all were found, else the index of the first one missing
 * (*r: what its lookup said) and table is left as it was. */
int rt_gpu_bind(void *table, const rt_gpu_sym *syms, size_t n, rt_gpu_lookup_fn lookup, void *ud,
             rt_gpu_result *r);

/* ---- the device entries ---- */

/* count and open for v (a vendor wraps them into its rt_device_ops). */
int rt_gpu_count(const rt_gpu_vendor *v, kiln_status *st);
int rt_gpu_open(const rt_gpu_vendor *v, kiln_device *d, kiln_status *st);

/* rt_device_ops entries for every vendor (d->impl is a rt_gpu_dev). */
void rt_gpu_close(kiln_device *d);
int rt_gpu_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st);
void rt_gpu_free(kiln_device *d, kiln_devptr p);
int rt_gpu_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t n, kiln_status *st);
int rt_gpu_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t n, kiln_status *st);
int rt_gpu_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n, kiln_status *st);
int rt_gpu_synchronize(kiln_device *d, kiln_status *st);
int rt_gpu_module_load(kiln_device *d, const void *image, size_t len, void **mod, kiln_status *st);
void rt_gpu_module_unload(kiln_device *d, void *mod);
int rt_gpu_module_function(kiln_device *d, void *mod, const char *name, void **fn, kiln_status *st);
int rt_gpu_launch(kiln_device *d, void *fn, const rt_launch_dims *dims, void **params,
               kiln_status *st);
int rt_gpu_graph_begin(kiln_device *d, kiln_status *st);
int rt_gpu_graph_end(kiln_device *d, void **graph, kiln_status *st);
int rt_gpu_graph_launch(kiln_device *d, void *graph, kiln_status *st);
void rt_gpu_graph_free(kiln_device *d, void *graph);
int rt_gpu_event_create(kiln_device *d, void **ev, kiln_status *st);
int rt_gpu_event_record(kiln_device *d, void *ev, kiln_status *st);
int rt_gpu_event_elapsed(kiln_device *d, void *a, void *b, float *ms, kiln_status *st);
void rt_gpu_event_destroy(kiln_device *d, void *ev);

/* A vendor's rt_device_ops: its own count and open, the rest the entries
 * above. */
#define RT_GPU_DEVICE_OPS(count_fn, open_fn)                                                    \
  {                                                                                             \
    .count = (count_fn), .open = (open_fn), .close = rt_gpu_close, .alloc = rt_gpu_alloc,       \
    .free = rt_gpu_free, .copy_to = rt_gpu_copy_to, .copy_from = rt_gpu_copy_from,             \
    .copy_dd = rt_gpu_copy_dd, .synchronize = rt_gpu_synchronize,                               \
    .module_load = rt_gpu_module_load, .module_unload = rt_gpu_module_unload,                   \
    .module_function = rt_gpu_module_function, .launch = rt_gpu_launch,                        \
    .graph_begin = rt_gpu_graph_begin, .graph_end = rt_gpu_graph_end,                           \
    .graph_launch = rt_gpu_graph_launch, .graph_free = rt_gpu_graph_free,                       \
    .event_create = rt_gpu_event_create, .event_record = rt_gpu_event_record,                   \
    .event_elapsed = rt_gpu_event_elapsed, .event_destroy = rt_gpu_event_destroy,               \
  }

#endif
