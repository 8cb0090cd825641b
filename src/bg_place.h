/* bg_place.h - internal to src/: keeps a context's background threads (the
 * compile thread, the prepare thread, the remote cache's publisher, the MAX
 * layer's compile and init threads) off the CPUs where its models execute
 * (bg_place.c says how and why).
 *
 * A background thread calls rt_bg_enter at its start and rt_bg_leave before
 * it returns, with an rt_bg_thread that lives as long as the thread (its
 * own stack frame serves); the execute path calls rt_bg_note_caller. Every
 * function takes a NULL place and then does nothing. */
#ifndef KILN_SRC_BG_PLACE_H
#define KILN_SRC_BG_PLACE_H

#include <pthread.h>
#include <stdbool.h>

typedef struct rt_bg_place rt_bg_place;

/* One registered thread: the caller's storage, untouched between enter and
 * leave. */
typedef struct rt_bg_thread {
  pthread_t self;
  struct rt_bg_thread *prev, *next;
} rt_bg_thread;

/* A place for one context's threads. The CPUs they may use are the calling
 * thread's (its affinity mask); placement is off when that is one CPU or
 * KILN_PIN_THREADS=0. Owned: rt_bg_place_free. NULL when out of memory. */
rt_bg_place *rt_bg_place_new(void);
/* Free p; every thread must have left. NULL ok. */
void rt_bg_place_free(rt_bg_place *p);

/* The calling thread joins p's threads (bound off the callers' CPUs at
 * once when some caller executed lately) / leaves them. */
void rt_bg_enter(rt_bg_place *p, rt_bg_thread *t);
void rt_bg_leave(rt_bg_place *p, rt_bg_thread *t);

/* The calling thread is about to execute a model: note its CPU, and move
 * p's threads off it when it is not a CPU they avoid already. Costs
 * sched_getcpu, a clock read and a load when nothing changed; never blocks
 * (a busy lock: the next execute tries again). */
void rt_bg_note_caller(rt_bg_place *p);

/* Whether placement is on for p (more than one CPU, not turned off). */
bool rt_bg_place_on(const rt_bg_place *p);
/* Threads registered now (tests). */
int rt_bg_place_count(rt_bg_place *p);

#endif
