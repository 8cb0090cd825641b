/* bg_place.c - a context's background threads kept off the CPUs where its
 * models execute (bg_place.h).
 *
 * Why: a background thread woken by an execute (a queued compile, a plan
 * ahead) or waking on its own (the prepare thread polls every ms for a
 * while after a plan) is put by Linux on the waker's CPU or wherever it
 * last ran, and preempts the thread executing there: issue 20 measured
 * whole decode runs whose p99 step was 1.4x the median on a 2-CPU host,
 * gone when every other thread was kept on the other CPU.
 *
 * How: the execute path notes its CPU (rt_bg_note_caller). A CPU noted
 * within BG_RECENT_NS is a caller's CPU; the registered threads are bound
 * to the allowed CPUs (those of the thread that made the place) minus the
 * callers' CPUs, or to every allowed CPU when callers hold them all (two
 * threads executing on a 2-CPU host: nowhere else to go). A thread is
 * re-bound only when that set changes, so a caller that stays on its CPU
 * costs one pthread_setaffinity_np per thread once; a caller that moves
 * leaves its old CPU avoided for up to BG_RECENT_NS more (a caller hopping
 * between CPUs thus unbinds the threads rather than chasing it). A CPU
 * already noted is noted again only after BG_REFRESH_NS (one clock read and
 * one load per execute otherwise). The lock is only tried from the execute
 * path: a thread that finds it held (a thread entering or leaving, another
 * caller re-binding) leaves the noting to a later execute.
 *
 * Off with one allowed CPU and with KILN_PIN_THREADS=0 (as the pool's
 * placement, pool.c): then nothing is ever bound. Threads that register
 * before any execute are left where they are until one comes. The pool's
 * workers are not registered: pool.c places them, one per CPU. */
#define _GNU_SOURCE /* sched_getcpu, CPU_*, pthread_setaffinity_np */
#include "bg_place.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A CPU a caller was noted on within this long is kept free of the threads. */
#define BG_RECENT_NS ((int64_t)100000000)
/* A caller's CPU is noted again (its time refreshed) after this long. */
#define BG_REFRESH_NS (BG_RECENT_NS / 4)

struct rt_bg_place {
  bool on;               /* more than one allowed CPU, KILN_PIN_THREADS not 0 */
  int ncpus;             /* entries of seen: the highest allowed CPU + 1 */
  cpu_set_t allowed;     /* the CPUs the threads may use */
  pthread_mutex_t mu;
  rt_bg_thread *threads; /* registered (under mu) */
  bool bound;            /* the threads are bound to target (under mu) */
  cpu_set_t target;      /* (under mu) */
  _Atomic int64_t seen[]; /* per CPU: when a caller was last noted on it, 0: never */
};

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

rt_bg_place *rt_bg_place_new(void) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  int n = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed)) n = c + 1;
  rt_bg_place *p = calloc(1, sizeof *p + (size_t)n * sizeof p->seen[0]);
  if (!p) return NULL;
  if (pthread_mutex_init(&p->mu, NULL) != 0) {
    free(p);
    return NULL;
  }
  const char *e = getenv("KILN_PIN_THREADS");
  p->on = CPU_COUNT(&allowed) > 1 && !(e && strcmp(e, "0") == 0);
  p->ncpus = n;
  p->allowed = allowed;
  for (int c = 0; c < n; c++) atomic_init(&p->seen[c], 0);
  return p;
}

void rt_bg_place_free(rt_bg_place *p) {
  if (!p) return;
  pthread_mutex_destroy(&p->mu);
  free(p);
}

bool rt_bg_place_on(const rt_bg_place *p) { return p && p->on; }

int rt_bg_place_count(rt_bg_place *p) {
  if (!p) return 0;
  int n = 0;
  pthread_mutex_lock(&p->mu);
  for (const rt_bg_thread *t = p->threads; t; t = t->next) n++;
  pthread_mutex_unlock(&p->mu);
  return n;
}

/* The CPUs the threads belong on at `now` into *set; false when no caller
 * was noted lately (nothing to keep them off). */
static bool target_at(rt_bg_place *p, int64_t now, cpu_set_t *set) {
  CPU_ZERO(set);
  int callers = 0;
  for (int c = 0; c < p->ncpus; c++) {
    if (!CPU_ISSET(c, &p->allowed)) continue;
    int64_t t = atomic_load_explicit(&p->seen[c], memory_order_relaxed);
    if (t && now - t < BG_RECENT_NS) callers++;
    else CPU_SET(c, set);
  }
  if (callers == 0) return false;
  if (CPU_COUNT(set) == 0) *set = p->allowed; /* callers everywhere: anywhere */
  return true;
}

static void bind(const rt_bg_thread *t, const cpu_set_t *set) {
  (void)pthread_setaffinity_np(t->self, sizeof *set, set); /* failure: left where it is */
}

/* Bind every thread to the target at `now` if it changed (mu held). */
static void place_locked(rt_bg_place *p, int64_t now) {
  cpu_set_t set;
  if (!target_at(p, now, &set)) return;
  if (p->bound && CPU_EQUAL(&set, &p->target)) return;
  for (rt_bg_thread *t = p->threads; t; t = t->next) bind(t, &set);
  p->target = set;
  p->bound = true;
}

void rt_bg_enter(rt_bg_place *p, rt_bg_thread *t) {
  if (!p) return;
  t->self = pthread_self();
  t->prev = NULL;
  pthread_mutex_lock(&p->mu);
  t->next = p->threads;
  if (p->threads) p->threads->prev = t;
  p->threads = t;
  if (p->on) {
    if (p->bound) bind(t, &p->target);
    else place_locked(p, now_ns());
  }
  pthread_mutex_unlock(&p->mu);
}

void rt_bg_leave(rt_bg_place *p, rt_bg_thread *t) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  if (t->prev) t->prev->next = t->next;
  else p->threads = t->next;
  if (t->next) t->next->prev = t->prev;
  t->prev = t->next = NULL;
  pthread_mutex_unlock(&p->mu);
}

void rt_bg_note_caller(rt_bg_place *p) {
  if (!p || !p->on) return;
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= p->ncpus || !CPU_ISSET(cpu, &p->allowed)) return;
  int64_t now = now_ns();
  int64_t last = atomic_load_explicit(&p->seen[cpu], memory_order_relaxed);
  if (last && now - last < BG_REFRESH_NS) return;
  if (pthread_mutex_trylock(&p->mu) != 0) return;
  atomic_store_explicit(&p->seen[cpu], now, memory_order_relaxed);
  place_locked(p, now);
  pthread_mutex_unlock(&p->mu);
}
