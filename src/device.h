/* device.h - internal to src/: the device layer, one table of functions per
 * kind of device (device.c holds the public kiln_device_* API and picks the
 * table; device_cpu.c, device_cuda.c, device_hip.c, device_emu.c fill them;
 * CUDA and HIP share their entries through device_gpu.h).
 *
 * A backend fills `desc` at open and keeps what it needs in `impl`. Every
 * entry returns 0 or -1 with st filled by a message that names the device
 * ("cuda:0: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"). Kernel
 * launch: `fn` is what module_function returned; params[i] points at the
 * value of kernel parameter i (the CUDA convention). */
#ifndef KILN_SRC_DEVICE_H
#define KILN_SRC_DEVICE_H

#include "kiln/device.h"
#include "rt.h"

typedef struct rt_device_ops rt_device_ops;

struct kiln_device {
  const rt_device_ops *ops;
  kiln_device_kind kind;
  int ordinal;
  char label[32];  /* "cuda:0" */
  char desc[256];  /* filled by open */
  void *impl;      /* the backend's */
};

typedef struct rt_launch_dims {
  uint32_t grid[3], block[3];
  uint32_t shared_bytes; /* dynamic shared memory per block */
} rt_launch_dims;

struct rt_device_ops {
  /* Count devices (0 with st saying why when none). */
  int (*count)(kiln_status *st);
  int (*open)(kiln_device *d, kiln_status *st);
  void (*close)(kiln_device *d);
  int (*alloc)(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st);
  void (*free)(kiln_device *d, kiln_devptr p);
  int (*copy_to)(kiln_device *d, kiln_devptr dst, const void *src, size_t n, kiln_status *st);
  int (*copy_from)(kiln_device *d, void *dst, kiln_devptr src, size_t n, kiln_status *st);
  /* Device to device, within d (n > 0, both pointers d's). */
  int (*copy_dd)(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n, kiln_status *st);
  int (*synchronize)(kiln_device *d, kiln_status *st);
  /* Code: load an image (PTX text, a code object, ...), find a kernel in it,
   * launch it. NULL entries: the kind cannot run code yet. */
  int (*module_load)(kiln_device *d, const void *image, size_t len, void **mod, kiln_status *st);
  void (*module_unload)(kiln_device *d, void *mod);
  int (*module_function)(kiln_device *d, void *mod, const char *name, void **fn,
                         kiln_status *st);
  int (*launch)(kiln_device *d, void *fn, const rt_launch_dims *dims, void **params,
                kiln_status *st);
  /* Recorded launch sequences (CUDA: a CUDA graph from stream capture;
   * simt-emu: a list). Between graph_begin and graph_end, the launches and
   * copy_dd calls the calling thread makes on d are recorded, not run; the
   * values params point at must stay put until the graph is freed (CUDA
   * reads them when recording, simt-emu when the graph runs). graph_end
   * always ends the recording and gives the graph, ready to run, or -1.
   * graph_launch runs it and waits for it. On CUDA, other threads must not
   * use d while it records (capture takes whatever reaches its stream).
   * NULL entries: the kind cannot record (callers keep their own list). */
  int (*graph_begin)(kiln_device *d, kiln_status *st);
  int (*graph_end)(kiln_device *d, void **graph, kiln_status *st);
  int (*graph_launch)(kiln_device *d, void *graph, kiln_status *st);
  void (*graph_free)(kiln_device *d, void *graph);
  /* Timing on the device's own clock (CUDA / HIP events): an event is
   * recorded in order with the launches and copies; event_elapsed waits
   * for b and gives the milliseconds from a to b. NULL entries: the kind
   * has none (simt-emu runs each launch before returning, so the host's
   * clock times it). */
  int (*event_create)(kiln_device *d, void **ev, kiln_status *st);
  int (*event_record)(kiln_device *d, void *ev, kiln_status *st);
  int (*event_elapsed)(kiln_device *d, void *a, void *b, float *ms, kiln_status *st);
  void (*event_destroy)(kiln_device *d, void *ev);
};

/* Host memory entries (device_cpu.c), shared by cpu and simt-emu. */
int rt_host_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st);
void rt_host_free(kiln_device *d, kiln_devptr p);
int rt_host_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t n, kiln_status *st);
int rt_host_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t n, kiln_status *st);
int rt_host_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n, kiln_status *st);
int rt_host_synchronize(kiln_device *d, kiln_status *st);

extern const rt_device_ops rt_device_cpu_ops;
extern const rt_device_ops rt_device_cuda_ops;
extern const rt_device_ops rt_device_hip_ops;
extern const rt_device_ops rt_device_emu_ops;

/* Launch fn on d (module_load / module_function / launch, for tests and the
 * runtime); -1 with a clear error when d's kind cannot run code. */
/* Copy n bytes within d (device to device); n == 0 is a no-op. */
int rt_device_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                      kiln_status *st);
int rt_device_launch(kiln_device *d, void *fn, const rt_launch_dims *dims, void **params,
                     kiln_status *st);
/* Kernels a device model (kiln_model on a device) loaded from the disk
 * cache (hits) and compiled (misses) when it was compiled (device_model.c);
 * 0 for a host model. */
void rt_device_model_cache_counts(const kiln_model *m, int *hits, int *misses);
/* Kernels a device model loaded (after fusion), and the execute plans it
 * built so far (an execute of a binding seen last reuses its plan). */
int rt_device_model_kernels(const kiln_model *m);
int rt_device_model_plan_builds(const kiln_model *m);
int rt_device_module_load(kiln_device *d, const void *image, size_t len, void **mod,
                          kiln_status *st);
void rt_device_module_unload(kiln_device *d, void *mod);
/* Recording (the graph_* entries above); rt_device_can_record is false
 * where the kind has none, and the others then fail saying so. */
bool rt_device_can_record(const kiln_device *d);
int rt_device_graph_begin(kiln_device *d, kiln_status *st);
int rt_device_graph_end(kiln_device *d, void **graph, kiln_status *st);
int rt_device_graph_launch(kiln_device *d, void *graph, kiln_status *st);
void rt_device_graph_free(kiln_device *d, void *graph); /* NULL graph ok */
int rt_device_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                              kiln_status *st);
/* Device-clock timing (the event_* entries above): rt_device_can_time is
 * false where the kind has none, and the others then fail saying so (as
 * event_create does where the driver lacks the entry points). */
bool rt_device_can_time(const kiln_device *d);
int rt_device_event_create(kiln_device *d, void **ev, kiln_status *st);
int rt_device_event_record(kiln_device *d, void *ev, kiln_status *st);
int rt_device_event_elapsed(kiln_device *d, void *a, void *b, float *ms, kiln_status *st);
void rt_device_event_destroy(kiln_device *d, void *ev); /* NULL ev ok */

#endif
