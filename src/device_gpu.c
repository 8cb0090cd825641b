/* device_gpu.c - the device entries the CUDA and HIP backends share
 * (device_gpu.h): loading a vendor library, opening and closing a device
 * with one stream, memory, copies, modules, launches and recording through
 * stream capture, over the vendor's rt_gpu_vendor table.
 *
 * Assumes: the vendor's load has run (rt_gpu_count / rt_gpu_open run it)
 * before any other entry, and d->impl is the rt_gpu_dev rt_gpu_open made.
 * Guarantees: every failure is an error naming the device, the operation and
 * the vendor's entry point with its error name and text, never a crash.
 * Copies are ordered on the stream (the vendor's copy) and waited for, so
 * they see every launch before them and every launch after sees them;
 * launches are asynchronous until synchronize (or a copy). While recording,
 * device-to-device copies are ordered on the stream so that they become
 * graph nodes; graph_end ends the capture whatever happens. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_gpu.h"

/* ---- loading ---- */

void *rt_gpu_dlopen(const char *const *names, size_t nnames, const char *missing, char *why,
                    size_t whylen) {
  for (size_t i = 0; i < nnames; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib; /* kept open: driver libraries do not unload */
  }
  const char *e = dlerror();
  snprintf(why, whylen, "%s: %s cannot be opened (%s)", missing, nnames ? names[0] : "?",
           e ? e : "not found");
  return NULL;
}

int rt_gpu_bind(void *table, const rt_gpu_sym *syms, size_t n, rt_gpu_lookup_fn lookup,
                void *ud, rt_gpu_result *r) {
  /* Look everything up first, so that a missing entry leaves table as it was. */
  for (size_t i = 0; i < n; i++) {
    *r = 0;
    if (!lookup(ud, syms[i].name, r)) return (int)i;
  }
  for (size_t i = 0; i < n; i++) {
    rt_gpu_result ignored = 0;
    void *p = lookup(ud, syms[i].name, &ignored);
    memcpy((char *)table + syms[i].off, &p, sizeof p);
  }
  return -1;
}

/* ---- messages ---- */

/* "cuda:0: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" */
static int fail(kiln_device *d, kiln_status *st, kiln_code code, const char *call,
                rt_gpu_result r) {
  const rt_gpu_vendor *v = ((const rt_gpu_dev *)d->impl)->v;
  return rt_err(st, code, "%s: %s%s: %s (%s)", d->label, v->prefix, call, v->error_name(r),
                v->error_text(r));
}

/* 0 when r is success, else -1 with st filled (fail). */
static int check(kiln_device *d, kiln_status *st, rt_gpu_result r, const char *call) {
  return r == 0 ? 0 : fail(d, st, KILN_ERR_RUNTIME, call, r);
}

static rt_gpu_dev *dev_of(kiln_device *d) { return d->impl; }

/* ---- devices ---- */

static int ready(const rt_gpu_vendor *v, kiln_status *st) {
  pthread_once(&v->state->once, v->load);
  if (v->state->why[0]) return rt_err(st, KILN_ERR_NOT_FOUND, "%s", v->state->why);
  return 0;
}

int rt_gpu_count(const rt_gpu_vendor *v, kiln_status *st) {
  return ready(v, st) < 0 ? 0 : v->state->ndevices;
}

int rt_gpu_open(const rt_gpu_vendor *v, kiln_device *d, kiln_status *st) {
  if (ready(v, st) < 0) return rt_err(st, KILN_ERR_NOT_FOUND, "%s: %s", d->label, v->state->why);
  if (d->ordinal >= v->state->ndevices)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: no such device (the %s reports %d)", d->label,
                  v->reporter, v->state->ndevices);
  rt_gpu_dev *g = calloc(1, sizeof *g);
  if (!g) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  g->v = v;
  d->impl = g;
  if (v->attach(d, g, st) < 0) {
    free(g);
    d->impl = NULL;
    return -1;
  }
  return 0;
}

void rt_gpu_close(kiln_device *d) {
  rt_gpu_dev *g = dev_of(d);
  if (!g) return;
  const rt_gpu_vendor *v = g->v;
  if (v->enter(d, "close", NULL) == 0) {
    v->api->StreamSynchronize(g->stream);
    v->api->StreamDestroy(g->stream);
  }
  if (v->detach) v->detach(g);
  free(g);
  d->impl = NULL;
}

/* ---- memory ---- */

int rt_gpu_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "alloc", st) < 0) return -1;
  kiln_devptr p = 0;
  if (check(d, st, v->alloc(&p, bytes), v->alloc_call) < 0) return -1;
  *out = p;
  return 0;
}

void rt_gpu_free(kiln_device *d, kiln_devptr p) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "free", NULL) == 0) v->free(p);
}

/* A copy ordered after every launch before it, finished on return. */
static int copy_sync(kiln_device *d, rt_gpu_copy_kind kind, uint64_t dst, uint64_t src, size_t n,
                     kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (v->enter(d, "copy", st) < 0) return -1;
  if (check(d, st, v->copy(kind, dst, src, n, g->stream), v->copy_call[kind]) < 0) return -1;
  return check(d, st, v->api->StreamSynchronize(g->stream), "StreamSynchronize");
}

int rt_gpu_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t n,
                   kiln_status *st) {
  return copy_sync(d, RT_GPU_COPY_TO, dst, (uint64_t)(uintptr_t)src, n, st);
}

int rt_gpu_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t n, kiln_status *st) {
  return copy_sync(d, RT_GPU_COPY_FROM, (uint64_t)(uintptr_t)dst, src, n, st);
}

int rt_gpu_copy_dd(kiln_device *d, kiln_devptr dst, kiln_devptr src, size_t n,
                   kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (!g->capturing) return copy_sync(d, RT_GPU_COPY_DD, dst, src, n, st);
  /* a graph node, ordered on the stream */
  if (v->enter(d, "copy", st) < 0) return -1;
  rt_gpu_result r = v->copy(RT_GPU_COPY_DD_ASYNC, dst, src, n, g->stream);
  return check(d, st, r, v->copy_call[RT_GPU_COPY_DD_ASYNC]);
}

int rt_gpu_synchronize(kiln_device *d, kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  if (g->v->enter(d, "synchronize", st) < 0) return -1;
  return check(d, st, g->v->api->StreamSynchronize(g->stream), "StreamSynchronize");
}

/* ---- code ---- */

int rt_gpu_module_load(kiln_device *d, const void *image, size_t len, void **mod,
                       kiln_status *st) {
  (void)len; /* PTX is NUL-terminated text; cubins and code objects carry their size */
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "module load", st) < 0) return -1;
  void *m = NULL;
  if (check(d, st, v->api->ModuleLoadData(&m, image), "ModuleLoadData") < 0) return -1;
  *mod = m;
  return 0;
}

void rt_gpu_module_unload(kiln_device *d, void *mod) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "module unload", NULL) == 0) v->api->ModuleUnload(mod);
}

int rt_gpu_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                           kiln_status *st) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "module function", st) < 0) return -1;
  void *f = NULL;
  rt_gpu_result r = v->api->ModuleGetFunction(&f, mod, name);
  if (r != 0)
    return rt_err(st, KILN_ERR_NOT_FOUND, "%s: kernel '%s': %sModuleGetFunction: %s (%s)",
                  d->label, name, v->prefix, v->error_name(r), v->error_text(r));
  *fn = f;
  return 0;
}

int rt_gpu_launch(kiln_device *d, void *fn, const rt_launch_dims *l, void **params,
                  kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (v->enter(d, "launch", st) < 0) return -1;
  rt_gpu_result r = v->api->LaunchKernel(fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                         l->block[1], l->block[2], l->shared_bytes, g->stream,
                                         params, NULL);
  return check(d, st, r, v->launch_call);
}

/* ---- recording: graphs from stream capture ---- */

typedef struct gpu_graph {
  void *graph; /* CUgraph / hipGraph_t */
  void *exec;  /* CUgraphExec / hipGraphExec_t */
} gpu_graph;

int rt_gpu_graph_begin(kiln_device *d, kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (!v->api->StreamBeginCapture)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: %s", d->label, v->no_graphs);
  if (v->enter(d, "capture", st) < 0) return -1;
  if (check(d, st, v->api->StreamSynchronize(g->stream), "StreamSynchronize") < 0) return -1;
  rt_gpu_result r = v->api->StreamBeginCapture(g->stream, RT_GPU_CAPTURE_THREAD_LOCAL);
  if (check(d, st, r, "StreamBeginCapture") < 0) return -1;
  g->capturing = true;
  return 0;
}

void rt_gpu_graph_free(kiln_device *d, void *graph) {
  gpu_graph *gr = graph;
  if (!gr) return;
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "graph free", NULL) == 0) {
    if (gr->exec) v->api->GraphExecDestroy(gr->exec);
    if (gr->graph) v->api->GraphDestroy(gr->graph);
  }
  free(gr);
}

int rt_gpu_graph_end(kiln_device *d, void **graph, kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (!g->capturing)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: graph end without a graph begin",
                  d->label);
  if (v->enter(d, "capture", st) < 0) return -1;
  g->capturing = false;
  gpu_graph *gr = calloc(1, sizeof *gr);
  void *raw = NULL;
  rt_gpu_result r = v->api->StreamEndCapture(g->stream, &raw); /* ends the capture in any case */
  if (!gr || r != 0) {
    if (raw) v->api->GraphDestroy(raw);
    free(gr);
    if (r != 0) return fail(d, st, KILN_ERR_RUNTIME, "StreamEndCapture", r);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", d->label);
  }
  gr->graph = raw;
  if ((r = v->api->GraphInstantiateWithFlags(&gr->exec, raw, 0)) != 0) {
    gr->exec = NULL;
    rt_gpu_graph_free(d, gr);
    return fail(d, st, KILN_ERR_RUNTIME, "GraphInstantiateWithFlags", r);
  }
  *graph = gr;
  return 0;
}

int rt_gpu_graph_launch(kiln_device *d, void *graph, kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (v->enter(d, "graph launch", st) < 0) return -1;
  const gpu_graph *gr = graph;
  if (check(d, st, v->api->GraphLaunch(gr->exec, g->stream), "GraphLaunch") < 0) return -1;
  return check(d, st, v->api->StreamSynchronize(g->stream), "StreamSynchronize");
}

/* ---- events: launches timed on the device's clock ---- */

int rt_gpu_event_create(kiln_device *d, void **ev, kiln_status *st) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (!v->api->EventCreate)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: the %s has no event entry points", d->label,
                  v->reporter);
  if (v->enter(d, "event", st) < 0) return -1;
  void *e = NULL;
  if (check(d, st, v->api->EventCreate(&e, 0), "EventCreate") < 0) return -1; /* timed */
  *ev = e;
  return 0;
}

int rt_gpu_event_record(kiln_device *d, void *ev, kiln_status *st) {
  rt_gpu_dev *g = dev_of(d);
  const rt_gpu_vendor *v = g->v;
  if (v->enter(d, "event", st) < 0) return -1;
  return check(d, st, v->api->EventRecord(ev, g->stream), "EventRecord");
}

int rt_gpu_event_elapsed(kiln_device *d, void *a, void *b, float *ms, kiln_status *st) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (v->enter(d, "event", st) < 0) return -1;
  if (check(d, st, v->api->EventSynchronize(b), "EventSynchronize") < 0) return -1;
  return check(d, st, v->api->EventElapsedTime(ms, a, b), "EventElapsedTime");
}

void rt_gpu_event_destroy(kiln_device *d, void *ev) {
  const rt_gpu_vendor *v = dev_of(d)->v;
  if (ev && v->api->EventDestroy && v->enter(d, "event", NULL) == 0) v->api->EventDestroy(ev);
}
