/* trace.h - internal to src/: a context's Chrome trace-event writer
 * (trace.c; the contract is kiln_context_set_trace's in kiln/runtime.h).
 *
 * Events are formatted at once into one buffer (under the trace's mutex)
 * and written to the file when the buffer passes RT_TRACE_BUFFER_BYTES,
 * on rt_trace_flush and on close. The file always holds a whole JSON array
 * after a write: the closing "]" is rewritten after the new events. Each
 * thread is a track (its kernel thread id), named from its thread name
 * (pthread_setname_np: "kiln-pool-3", "kiln-compile") on its first event.
 * rt_trace_on is one relaxed load: callers test it before reading clocks
 * or formatting. */
#ifndef KILN_SRC_TRACE_H
#define KILN_SRC_TRACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/runtime.h"

#define RT_TRACE_BUFFER_BYTES ((size_t)1 << 20)

typedef struct rt_trace {
  atomic_int on;      /* a file is open: events are recorded */
  pthread_mutex_t mu; /* guards everything below */
  FILE *f;
  char *path;         /* malloc'd, while f is open */
  long body_end;      /* file offset of the closing "]" */
  char *buf;          /* formatted events not written yet, len bytes */
  size_t len, cap;
  int64_t t0_ns;      /* time 0 of the file's timestamps */
  int pid;            /* getpid() at open (a system call each time otherwise) */
  int *named;         /* thread ids whose track was named, nnamed of them */
  int nnamed, named_cap;
  bool write_failed;  /* a write failed: logged once, tracing stopped */
} rt_trace;

/* A trace that is off; NULL on out-of-memory. Freeing closes it (flush). */
rt_trace *rt_trace_new(void);
void rt_trace_free(rt_trace *t);
/* Start writing to path (closing the current file first), or with NULL
 * stop. 0, or -1 with st (the file cannot be created). */
int rt_trace_open(rt_trace *t, const char *path, kiln_status *st);
int rt_trace_flush(rt_trace *t, kiln_status *st);
/* The file being written, or NULL (borrowed; valid until the next open). */
const char *rt_trace_path(rt_trace *t);

static inline bool rt_trace_on(const rt_trace *t) {
  return t && __builtin_expect(atomic_load_explicit(&t->on, memory_order_relaxed), 0);
}

/* A span from t0 to t1 (rt_now_ns) on the calling thread's track: name and
 * category are escaped; args is NULL or the inside of a JSON object
 * ("\"node\":3,\"shape\":\"[4] f32\""), written as it is. */
void rt_trace_span(rt_trace *t, const char *cat, const char *name, int64_t t0_ns, int64_t t1_ns,
                   const char *args);
/* The same on a track of its own (a device's: its launches and copies),
 * numbered track (RT_TRACE_TRACK_BASE and up, never a thread id) and named
 * track_name on its first event. */
#define RT_TRACE_TRACK_BASE (1 << 30) /* above any Linux thread id (pid_max <= 2^22) */
void rt_trace_span_on(rt_trace *t, int track, const char *track_name, const char *cat,
                      const char *name, int64_t t0_ns, int64_t t1_ns, const char *args);
/* An instant event now, on the calling thread's track. */
void rt_trace_instant(rt_trace *t, const char *cat, const char *name, const char *args);
/* A jit_phase_hook's fn (jit.h) for ud = an rt_trace: a "compile" span
 * named for the phase, its kernel's function name in args. */
void rt_trace_jit_phase(void *ud, const char *phase, const char *fn_name, int64_t t0_ns,
                        int64_t t1_ns);
/* Escape s for a JSON string into buf (cut to cap, always terminated). */
const char *rt_trace_escape(const char *s, char *buf, size_t cap);

#endif
