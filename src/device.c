/* device.c - the public kiln_device_* API (kiln/device.h): parse a device
 * spec ("cuda:1"), pick the backend's table (device.h) and forward to it.
 *
 * Guarantees: a bad spec, an ordinal out of range or a missing driver is a
 * status error that names the device and the reason; no backend entry is
 * called with a NULL device; sizes of 0 are no-ops. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"

static const struct {
  const char *name;
  kiln_device_kind kind;
  const rt_device_ops *ops;
} kinds[] = {
    {"cpu", KILN_DEVICE_CPU, &rt_device_cpu_ops},
    {"cuda", KILN_DEVICE_CUDA, &rt_device_cuda_ops},
    {"hip", KILN_DEVICE_HIP, &rt_device_hip_ops},
    {"simt-emu", KILN_DEVICE_SIMT_EMU, &rt_device_emu_ops},
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

KILN_API const char *kiln_device_kind_name(kiln_device_kind kind) {
  for (int i = 0; i < NKINDS; i++)
    if (kinds[i].kind == kind) return kinds[i].name;
  return NULL;
}

static int kind_index(kiln_device_kind kind) {
  for (int i = 0; i < NKINDS; i++)
    if (kinds[i].kind == kind) return i;
  return -1;
}

KILN_API int kiln_device_count(kiln_device_kind kind, kiln_status *st) {
  int k = kind_index(kind);
  if (k < 0) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "unknown device kind %d", (int)kind);
    return -1;
  }
  rt_ok(st);
  return kinds[k].ops->count(st);
}

/* "kind" or "kind:N" -> table index and ordinal; -1 with st on bad text. */
static int parse_spec(const char *spec, int *kind, int *ordinal, kiln_status *st) {
  if (!spec || !*spec)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "empty device name (expected cpu, cuda:N, hip:N or simt-emu)");
  const char *colon = strchr(spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  *kind = -1;
  for (int i = 0; i < NKINDS; i++)
    if (strlen(kinds[i].name) == len && strncmp(kinds[i].name, spec, len) == 0) *kind = i;
  if (*kind < 0)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "unknown device '%s' (expected cpu, cuda:N, hip:N or simt-emu)", spec);
  *ordinal = 0;
  if (colon) {
    const char *num = colon + 1;
    char *end = NULL;
    errno = 0;
    long v = isdigit((unsigned char)*num) ? strtol(num, &end, 10) : -1;
    if (v < 0 || errno || !end || *end || v > 1 << 20)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                    "device '%s': the ordinal after ':' must be a number >= 0", spec);
    *ordinal = (int)v;
  }
  return 0;
}

KILN_API kiln_device *kiln_device_open(const char *spec, kiln_status *st) {
  int k = -1, ordinal = 0;
  if (parse_spec(spec, &k, &ordinal, st) < 0) return NULL;
  kiln_device *d = calloc(1, sizeof *d);
  if (!d) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory opening device %s", spec);
    return NULL;
  }
  d->ops = kinds[k].ops;
  d->kind = kinds[k].kind;
  d->ordinal = ordinal;
  snprintf(d->label, sizeof d->label, "%s:%d", kinds[k].name, ordinal);
  if (d->kind == KILN_DEVICE_CPU || d->kind == KILN_DEVICE_SIMT_EMU) {
    if (ordinal != 0) {
      rt_err(st, KILN_ERR_NOT_FOUND, "%s: there is one %s device (ordinal 0)", d->label,
             kinds[k].name);
      free(d);
      return NULL;
    }
    snprintf(d->label, sizeof d->label, "%s", kinds[k].name);
  }
  if (d->ops->open(d, st) < 0) {
    free(d);
    return NULL;
  }
  rt_ok(st);
  return d;
}

KILN_API void kiln_device_close(kiln_device *d) {
  if (!d) return;
  d->ops->close(d);
  free(d);
}

KILN_API kiln_device_kind kiln_device_get_kind(const kiln_device *d) {
  return d ? d->kind : KILN_DEVICE_CPU;
}
KILN_API int kiln_device_ordinal(const kiln_device *d) { return d ? d->ordinal : -1; }
KILN_API const char *kiln_device_label(const kiln_device *d) { return d ? d->label : ""; }
KILN_API const char *kiln_device_description(const kiln_device *d) { return d ? d->desc : ""; }

KILN_API int kiln_device_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st) {
  if (!d || !out) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_alloc: NULL argument");
  *out = 0;
  return d->ops->alloc(d, bytes ? bytes : 1, out, st) < 0 ? -1 : (rt_ok(st), 0);
}

KILN_API void kiln_device_free(kiln_device *d, kiln_devptr p) {
  if (d && p) d->ops->free(d, p);
}

KILN_API int kiln_device_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t bytes,
                                 kiln_status *st) {
  if (!d) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_copy_to: device is NULL");
  if (!bytes) return (rt_ok(st), 0);
  if (!dst || !src)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: copy of %zu bytes with a NULL pointer",
                  d->label, bytes);
  return d->ops->copy_to(d, dst, src, bytes, st) < 0 ? -1 : (rt_ok(st), 0);
}

KILN_API int kiln_device_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t bytes,
                                   kiln_status *st) {
  if (!d) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_copy_from: device is NULL");
  if (!bytes) return (rt_ok(st), 0);
  if (!dst || !src)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: copy of %zu bytes with a NULL pointer",
                  d->label, bytes);
  return d->ops->copy_from(d, dst, src, bytes, st) < 0 ? -1 : (rt_ok(st), 0);
}

KILN_API int kiln_device_synchronize(kiln_device *d, kiln_status *st) {
  if (!d) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_synchronize: device is NULL");
  return d->ops->synchronize(d, st) < 0 ? -1 : (rt_ok(st), 0);
}

static int no_code(kiln_device *d, kiln_status *st) {
  return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: this kind of device does not load kernels",
                d->label);
}

int rt_device_module_load(kiln_device *d, const void *image, size_t len, void **mod,
                          kiln_status *st) {
  if (!d || !image || !mod)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "module load: NULL argument");
  *mod = NULL;
  if (!d->ops->module_load) return no_code(d, st);
  return d->ops->module_load(d, image, len, mod, st);
}

void rt_device_module_unload(kiln_device *d, void *mod) {
  if (d && mod && d->ops->module_unload) d->ops->module_unload(d, mod);
}

int rt_device_module_function(kiln_device *d, void *mod, const char *name, void **fn,
                              kiln_status *st) {
  if (!d || !mod || !name || !fn)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "module function: NULL argument");
  *fn = NULL;
  if (!d->ops->module_function) return no_code(d, st);
  return d->ops->module_function(d, mod, name, fn, st);
}

int rt_device_launch(kiln_device *d, void *fn, const rt_launch_dims *dims, void **params,
                     kiln_status *st) {
  if (!d || !fn || !dims) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "launch: NULL argument");
  for (int i = 0; i < 3; i++)
    if (!dims->grid[i] || !dims->block[i])
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                    "%s: launch with an empty grid or block (%ux%ux%u blocks of %ux%ux%u)",
                    d->label, dims->grid[0], dims->grid[1], dims->grid[2], dims->block[0],
                    dims->block[1], dims->block[2]);
  if (!d->ops->launch) return no_code(d, st);
  return d->ops->launch(d, fn, dims, params, st);
}

/* ---- recording ---- */

bool rt_device_can_record(const kiln_device *d) {
  return d && d->ops->graph_begin && d->ops->graph_end && d->ops->graph_launch &&
         d->ops->graph_free;
}

static int no_record(kiln_device *d, kiln_status *st) {
  return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: this kind of device cannot record launches",
                d ? d->label : "device");
}

int rt_device_graph_begin(kiln_device *d, kiln_status *st) {
  return rt_device_can_record(d) ? d->ops->graph_begin(d, st) : no_record(d, st);
}

int rt_device_graph_end(kiln_device *d, void **graph, kiln_status *st) {
  if (graph) *graph = NULL;
  if (!graph) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "graph end: NULL argument");
  return rt_device_can_record(d) ? d->ops->graph_end(d, graph, st) : no_record(d, st);
}

int rt_device_graph_launch(kiln_device *d, void *graph, kiln_status *st) {
  if (!graph) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "graph launch: no graph");
  return rt_device_can_record(d) ? d->ops->graph_launch(d, graph, st) : no_record(d, st);
}

void rt_device_graph_free(kiln_device *d, void *graph) {
  if (graph && rt_device_can_record(d)) d->ops->graph_free(d, graph);
}

bool rt_device_can_time(const kiln_device *d) {
  return d && d->ops->event_create && d->ops->event_record && d->ops->event_elapsed &&
         d->ops->event_destroy;
}

static int no_time(kiln_device *d, kiln_status *st) {
  return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: this kind of device has no event timing",
                d ? d->label : "device");
}

int rt_device_event_create(kiln_device *d, void **ev, kiln_status *st) {
  if (!ev) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "event create: NULL argument");
  *ev = NULL;
  return rt_device_can_time(d) ? d->ops->event_create(d, ev, st) : no_time(d, st);
}

int rt_device_event_record(kiln_device *d, void *ev, kiln_status *st) {
  if (!ev) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "event record: no event");
  return rt_device_can_time(d) ? d->ops->event_record(d, ev, st) : no_time(d, st);
}

int rt_device_event_elapsed(kiln_device *d, void *a, void *b, float *ms, kiln_status *st) {
  if (!a || !b || !ms) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "event elapsed: NULL argument");
  return rt_device_can_time(d) ? d->ops->event_elapsed(d, a, b, ms, st) : no_time(d, st);
}

void rt_device_event_destroy(kiln_device *d, void *ev) {
  if (ev && rt_device_can_time(d)) d->ops->event_destroy(d, ev);
}
