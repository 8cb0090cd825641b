/* device_watch.c - timing, tracing and profiling a device model's launches
 * and copies while someone watches (device_watch.h).
 *
 * Clocks. Where the device has events (CUDA, HIP), an event is recorded
 * before and after each launch and one at the start of the execute (the
 * base); they are read at the end, after the execute's last copy has
 * waited for the device, so watching adds no wait between launches. A
 * launch's span is placed on the host's timeline at the base's host time
 * plus its device time from the base: exact in length, and off in place by
 * at most the delay between recording the base and the device reaching it
 * (the stream is idle then, since the copies before it wait). Elsewhere
 * (simt-emu, or a driver without events) a launch is followed by a
 * synchronize (a no-op on simt-emu, which runs launches before returning)
 * and timed by the host's clock. Copies always wait for the device, so
 * the host's clock times them.
 *
 * Spans go on the device's own track (trace.h: rt_trace_span_on), named
 * as the host's kernel spans are (the op, or a fused group's ops joined by
 * '+'), with the node, the shape as run, the grid, the block and which
 * clock timed it as args. */
#include "device_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs_label.h"
#include "trace.h"

typedef struct watch_launch {
  int node;
  rt_launch_dims dims;
  int64_t t0, t1; /* host clock; with events, filled at the end */
} watch_launch;

struct rt_dev_watch {
  kiln_model *m;
  bool prof, trace;
  bool events;    /* this execute is timed on the device's clock */
  bool no_events; /* creating events failed once: the host's clock from then on */
  void **ev;      /* nev events: the base, then two per launch */
  int nev;
  watch_launch *launches;
  int n, cap;
  int64_t t_base; /* host time when the base was recorded */
  int track;
};

/* Events for the base and n launches (created once, kept); false when the
 * device cannot make them. */
static bool ensure_events(rt_dev_watch *w, int n) {
  int want = 1 + 2 * n;
  if (w->nev >= want) return true;
  void **grown = realloc(w->ev, (size_t)want * sizeof *grown);
  if (!grown) return false;
  w->ev = grown;
  while (w->nev < want) {
    if (rt_device_event_create(w->m->device, &w->ev[w->nev], NULL) < 0) return false;
    w->nev++;
  }
  return true;
}

rt_dev_watch *rt_dev_watch_begin(kiln_model *m, rt_dev_watch **slot, int nlaunches) {
  if (__builtin_expect(atomic_load_explicit(&m->ctx->watch, memory_order_relaxed) == 0, 1))
    return NULL;
  bool prof = rt_profile_on(m), tr = rt_trace_on(m->ctx->trace);
  if (!prof && !tr) return NULL; /* another model or a closed trace is watched */
  rt_dev_watch *w = *slot;
  if (!w) {
    if (!(w = calloc(1, sizeof *w))) return NULL;
    w->m = m;
    w->track = RT_TRACE_TRACK_BASE + (int)m->device->kind * 1024 + m->device->ordinal;
    *slot = w;
  }
  if (nlaunches > w->cap) {
    watch_launch *grown = realloc(w->launches, (size_t)nlaunches * sizeof *grown);
    if (!grown) return NULL;
    w->launches = grown;
    w->cap = nlaunches;
  }
  w->prof = prof;
  w->trace = tr;
  w->n = 0;
  w->events = false;
  if (!w->no_events && rt_device_can_time(m->device)) {
    if (!ensure_events(w, nlaunches)) w->no_events = true;
    else w->events = rt_device_event_record(m->device, w->ev[0], NULL) == 0;
  }
  w->t_base = rt_now_ns();
  return w;
}

int rt_dev_watch_launch(rt_dev_watch *w, int node, void *fn, const rt_launch_dims *dims,
                        void **params, kiln_status *st) {
  kiln_device *d = w->m->device;
  if (w->n >= w->cap) return rt_device_launch(d, fn, dims, params, st); /* not planned: unseen */
  watch_launch *l = &w->launches[w->n];
  if (w->events) {
    void *a = w->ev[1 + 2 * w->n], *b = w->ev[2 + 2 * w->n];
    if (rt_device_event_record(d, a, st) < 0 || rt_device_launch(d, fn, dims, params, st) < 0 ||
        rt_device_event_record(d, b, st) < 0)
      return -1;
  } else {
    l->t0 = rt_now_ns();
    if (rt_device_launch(d, fn, dims, params, st) < 0 || d->ops->synchronize(d, st) < 0)
      return -1;
    l->t1 = rt_now_ns();
  }
  l->node = node;
  l->dims = *dims;
  w->n++;
  return 0;
}

void rt_dev_watch_copy(rt_dev_watch *w, rt_copy_kind kind, const char *value, size_t bytes,
                       int64_t t0, int64_t t1) {
  if (w->prof) rt_profile_add_copy(w->m, kind, t1 - t0, bytes);
  if (!w->trace) return;
  char name[160], esc[160], a[240];
  snprintf(name, sizeof name, "copy %s %%%s", kind == RT_COPY_IN ? "in" : "out", value);
  snprintf(a, sizeof a, "\"value\":\"%s\",\"bytes\":%zu,\"direction\":\"%s\"",
           rt_trace_escape(value, esc, sizeof esc), bytes,
           kind == RT_COPY_IN ? "to device" : "from device");
  rt_trace_span_on(w->m->ctx->trace, w->track, kiln_device_label(w->m->device), "copy", name,
                   t0, t1, a);
}

/* Launch l's times on the host timeline from its events; false when the
 * device cannot say (the launch is then left out). */
static bool device_times(rt_dev_watch *w, int i, watch_launch *l) {
  float a = 0, b = 0;
  kiln_device *d = w->m->device;
  if (rt_device_event_elapsed(d, w->ev[0], w->ev[1 + 2 * i], &a, NULL) < 0 ||
      rt_device_event_elapsed(d, w->ev[0], w->ev[2 + 2 * i], &b, NULL) < 0)
    return false;
  l->t0 = w->t_base + (int64_t)((double)a * 1e6);
  l->t1 = w->t_base + (int64_t)((double)b * 1e6);
  return true;
}

static void trace_launch(rt_dev_watch *w, const watch_launch *l, const int64_t *syms) {
  const kiln_model *m = w->m;
  char label[256], shape[256], esc[300], a[600];
  rt_obs_node_ops(m->g, l->node, label, sizeof label);
  rt_obs_shape_now(&m->g->nodes[l->node]->out[0]->type, syms, shape, sizeof shape);
  const rt_launch_dims *g = &l->dims;
  snprintf(a, sizeof a,
           "\"node\":%d,\"shape\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
           "\"clock\":\"%s\"",
           l->node, rt_trace_escape(shape, esc, sizeof esc), g->grid[0], g->grid[1], g->grid[2],
           g->block[0], g->block[1], g->block[2], w->events ? "device" : "host");
  rt_trace_span_on(m->ctx->trace, w->track, kiln_device_label(m->device), "kernel", label, l->t0,
                   l->t1, a);
}

void rt_dev_watch_end(rt_dev_watch *w, const int64_t *syms) {
  if (!w) return;
  for (int i = 0; i < w->n; i++) {
    watch_launch *l = &w->launches[i];
    if (w->events && !device_times(w, i, l)) continue;
    if (w->prof) rt_profile_add(w->m, l->node, l->t1 - l->t0, syms);
    if (w->trace) trace_launch(w, l, syms);
  }
  w->n = 0;
}

void rt_dev_watch_free(kiln_model *m, rt_dev_watch *w) {
  if (!w) return;
  for (int i = 0; i < w->nev; i++) rt_device_event_destroy(m->device, w->ev[i]);
  free(w->ev);
  free(w->launches);
  free(w);
}
