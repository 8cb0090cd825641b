/* device_watch.h - internal to src/: a device model's executes while
 * someone watches them (device_watch.c): a trace is open or a profile is
 * on. Each launch is timed (on the device's clock where it has events,
 * CUDA / HIP; by the host's clock on simt-emu, which runs a launch before
 * returning) and becomes a span on the device's own track and a count in
 * the model's profile; copies in and out become spans and profile rows.
 *
 * device_model.c asks rt_dev_watch_begin once per execute: with nothing
 * watching it is one relaxed load and returns NULL, and the launch loop
 * tests that pointer (its one branch). Executes of one device model are
 * serialized (its lock), so one watch per model is kept and reused. */
#ifndef KILN_SRC_DEVICE_WATCH_H
#define KILN_SRC_DEVICE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "observe.h"

typedef struct rt_dev_watch rt_dev_watch;

/* The watch of an execute of m on its device that runs at most nlaunches
 * launches, kept in *slot between executes (made there on first use); NULL
 * when nothing watches m, or when out of memory (the execute then runs
 * unwatched). */
rt_dev_watch *rt_dev_watch_begin(kiln_model *m, rt_dev_watch **slot, int nlaunches);
/* Launch node's kernel fn as rt_device_launch does, timed. */
int rt_dev_watch_launch(rt_dev_watch *w, int node, void *fn, const rt_launch_dims *dims,
                        void **params, kiln_status *st);
/* A copy of value (its name) in or out, bytes long, from t0 to t1
 * (rt_now_ns: copies wait for the device). */
void rt_dev_watch_copy(rt_dev_watch *w, rt_copy_kind kind, const char *value, size_t bytes,
                       int64_t t0, int64_t t1);
/* After the execute's last copy: read the device's clock, write the spans
 * and count the profile; syms are the graph's symbols as the run ended
 * (bytes, flops and shapes follow from them). */
void rt_dev_watch_end(rt_dev_watch *w, const int64_t *syms);
/* Free what *slot holds (its events on m's device); NULL ok. */
void rt_dev_watch_free(kiln_model *m, rt_dev_watch *w);

#endif
