/* spec_prep.c - the context's prepare thread (spec_prep.h): plans a
 * model's intermediates for a binding ahead of need and faults its arena
 * in, off the request path and apart from the compile thread.
 *
 * A FIFO of jobs under `mu`; the thread takes the head, runs it without the
 * lock and marks it running meanwhile, so rt_prep_cancel can wait for it.
 * Jobs live in a fixed table (a free list of RT_PREP_QUEUE_MAX + 1 slots,
 * symbol values inline): queueing one allocates nothing, since the
 * execute that queues it must not meet a malloc lock or an mmap_lock a
 * background thread holds. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "spec_prep.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bg_place.h"
#include "plan.h"
#include "pool.h"
#include "variants.h"

typedef struct prep_job {
  kiln_model *m;
  bool reap; /* free m's dropped variants (rt_variants_reap), else plan syms */
  bool kick; /* wake the compile thread first (rt_prep_plans) */
  int64_t syms[RT_PREP_MAX_SYMS];
  struct prep_job *next;
} prep_job;

struct rt_prep {
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the thread waits for jobs */
  pthread_cond_t done_cv; /* a job finished (monotonic clock: rt_prep_wait) */
  prep_job *head, *tail;
  prep_job *free_jobs;
  prep_job *running;
  bool started, stop;
  bool polling;         /* the thread looks at the queue every RT_PREP_POLL_NS: no wake needed */
  int64_t last_plan_ns; /* when it took its last plan job */
  pthread_t thread;
  rt_bg_place *place;                  /* where the thread registers, or NULL */
  _Atomic(void *) discard;              /* a block to free off the request path */
  prep_job jobs[RT_PREP_QUEUE_MAX + 1]; /* queued, running, free */
};

rt_prep *rt_prep_new(void) {
  rt_prep *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  for (int i = 0; i < RT_PREP_QUEUE_MAX + 1; i++) {
    p->jobs[i].next = p->free_jobs;
    p->free_jobs = &p->jobs[i];
  }
  pthread_condattr_t ca;
  bool attr = pthread_condattr_init(&ca) == 0;
  if (attr) (void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (!attr || pthread_mutex_init(&p->mu, NULL) != 0) goto fail0;
  if (pthread_cond_init(&p->work_cv, &ca) != 0) goto fail1; /* rt_now_ns's clock */
  if (pthread_cond_init(&p->done_cv, &ca) != 0) goto fail2;
  pthread_condattr_destroy(&ca);
  return p;
fail2:
  pthread_cond_destroy(&p->work_cv);
fail1:
  pthread_mutex_destroy(&p->mu);
fail0:
  if (attr) pthread_condattr_destroy(&ca);
  free(p);
  return NULL;
}

/* Give job j back to the free list; mu held. */
static void job_free_locked(rt_prep *p, prep_job *j) {
  j->m = NULL;
  j->next = p->free_jobs;
  p->free_jobs = j;
}

static void run_job(const prep_job *j) {
  if (j->reap) {
    rt_variants_reap(j->m);
    return;
  }
  size_t total = 0;
  /* a failure (out of memory, a shape error) leaves the plan to the execute,
   * which reports it */
  if (rt_plan_prepare(j->m, j->syms, &total, NULL) == 0 && total > 0)
    rt_arena_reserve(j->m, total);
  rt_variant_weigh_ahead(j->m, j->syms); /* the bucket's share, for its first hot execute */
}

bool rt_lock_briefly(pthread_mutex_t *mu) {
  if (pthread_mutex_trylock(mu) == 0) return true;
  int64_t end = rt_now_ns() + RT_LOCK_BRIEF_NS;
  do {
    for (int i = 0; i < 64; i++) rt_cpu_relax();
    if (pthread_mutex_trylock(mu) == 0) return true;
  } while (rt_now_ns() < end);
  return false;
}

void rt_thread_batch(void) {
#ifdef SCHED_BATCH
  struct sched_param sp = {0};
  (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp); /* best effort */
#endif
}

static void *prep_thread(void *arg) {
  rt_prep *p = arg;
  pthread_setname_np(pthread_self(), "kiln-prepare");
  rt_bg_thread me;
  rt_bg_enter(p->place, &me); /* off the executing CPUs: it polls every ms after a plan */
  rt_thread_batch(); /* the execute that queues a job is not preempted by this thread */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && !p->head && !atomic_load(&p->discard)) {
      int64_t now = rt_now_ns();
      p->polling = p->last_plan_ns && now - p->last_plan_ns < RT_PREP_POLL_FOR_NS;
      if (!p->polling) {
        pthread_cond_wait(&p->work_cv, &p->mu);
        continue;
      }
      int64_t at = now + RT_PREP_POLL_NS;
      struct timespec dl = {(time_t)(at / 1000000000), (long)(at % 1000000000)};
      (void)pthread_cond_timedwait(&p->work_cv, &p->mu, &dl);
    }
    if (p->stop) break;
    if (!p->head) { /* only a block to free */
      pthread_mutex_unlock(&p->mu);
      free(atomic_exchange(&p->discard, NULL));
      pthread_mutex_lock(&p->mu);
      continue;
    }
    prep_job *j = p->head;
    p->head = j->next;
    if (!p->head) p->tail = NULL;
    p->running = j;
    if (!j->reap) p->last_plan_ns = rt_now_ns();
    bool kick = j->kick;
    pthread_mutex_unlock(&p->mu);
    if (kick) rt_spec_wake(j->m->ctx->spec); /* the compile an execute queued unwoken */
    free(atomic_exchange(&p->discard, NULL));
    run_job(j); /* j->m is valid: its free waits for this job (rt_prep_cancel) */
    pthread_mutex_lock(&p->mu);
    p->running = NULL;
    pthread_cond_broadcast(&p->done_cv);
    job_free_locked(p, j);
  }
  pthread_mutex_unlock(&p->mu);
  rt_bg_leave(p->place, &me);
  return NULL;
}

void rt_prep_set_place(rt_prep *p, rt_bg_place *place) {
  if (p) p->place = place;
}

void rt_prep_free(rt_prep *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  bool started = p->started;
  pthread_mutex_unlock(&p->mu);
  if (started) pthread_join(p->thread, NULL); /* queued jobs: in p->jobs, nothing to free */
  free(atomic_exchange(&p->discard, NULL));
  pthread_cond_destroy(&p->done_cv);
  pthread_cond_destroy(&p->work_cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static bool same_job(const prep_job *j, const kiln_model *m, bool reap, const int64_t *syms,
                     size_t bytes) {
  return j && j->m == m && j->reap == reap && (reap || memcmp(j->syms, syms, bytes) == 0);
}

/* Start the thread if it is not running; mu held. Whether it runs. */
static bool start_locked(rt_prep *p) {
  if (!p->started && !p->stop && pthread_create(&p->thread, NULL, prep_thread, p) == 0)
    p->started = true;
  return p->started;
}

void rt_prep_start(rt_prep *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  (void)start_locked(p);
  pthread_mutex_unlock(&p->mu);
}

/* Queue job(s) of m (plans of syms[0..n), or one reap) unless an equal one
 * is queued, or, for a plan, running (a running reap may have taken its
 * list already), with one wake of the thread. Never blocks; allocates
 * nothing. How many, from the first, are queued or running now; *kicked:
 * whether a queued job carries the compile thread's wake (kick). */
static int queue_jobs(rt_prep *p, kiln_model *m, bool reap, const int64_t *const *syms, int n,
                      bool kick, bool *kicked) {
  int ns = reap ? 0 : m->g->nsyms;
  if (kicked) *kicked = false;
  if (!p || ns > RT_PREP_MAX_SYMS || n < 1) return 0;
  size_t bytes = (size_t)ns * sizeof(int64_t);
  if (!rt_lock_briefly(&p->mu)) return 0; /* never wait on the thread: the next execute */
  int done = 0;
  bool wake = false;
  for (; done < n; done++) {
    const int64_t *sy = reap ? NULL : syms[done];
    prep_job *have = NULL;
    for (prep_job *q = p->head; q && !have; q = q->next)
      if (same_job(q, m, reap, sy, bytes)) have = q;
    if (!have && !reap && same_job(p->running, m, reap, sy, bytes)) continue; /* running */
    /* a reap never starts the thread: pthread_create on the request path
     * would cost more than the free it saves */
    if (!have && !p->stop && p->free_jobs && (reap ? p->started : start_locked(p))) {
      have = p->free_jobs;
      p->free_jobs = have->next;
      have->m = m;
      have->reap = reap;
      have->kick = false;
      if (bytes) memcpy(have->syms, sy, bytes);
      have->next = NULL;
      if (p->tail) p->tail->next = have;
      else p->head = have;
      p->tail = have;
      wake = true;
    }
    if (!have) break;
    if (kick && kicked && !*kicked) *kicked = have->kick = true; /* queued: not taken yet */
  }
  if (wake && !p->polling) pthread_cond_signal(&p->work_cv); /* else seen within 1 ms */
  pthread_mutex_unlock(&p->mu);
  return done;
}

bool rt_prep_plan(rt_prep *p, kiln_model *m, const int64_t *syms) {
  return queue_jobs(p, m, false, &syms, 1, false, NULL) == 1;
}

int rt_prep_plans(rt_prep *p, kiln_model *m, const int64_t *const *syms, int n, bool kick,
                  bool *kicked) {
  return queue_jobs(p, m, false, syms, n, kick, kicked);
}

bool rt_prep_reap(rt_prep *p, kiln_model *m) {
  return queue_jobs(p, m, true, NULL, 1, false, NULL) == 1;
}

void rt_prep_cancel(rt_prep *p, kiln_model *m) {
  if (!p) return;
  bool kick = false; /* a dropped job owed the compile thread its wake */
  pthread_mutex_lock(&p->mu);
  for (prep_job **q = &p->head, *prev = NULL; *q;) {
    prep_job *j = *q;
    if (j->m == m) {
      *q = j->next;
      if (p->tail == j) p->tail = prev;
      kick = kick || j->kick;
      job_free_locked(p, j);
    } else {
      prev = j;
      q = &j->next;
    }
  }
  while (p->running && p->running->m == m) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  if (kick) rt_spec_wake(m->ctx->spec);
}

void rt_prep_discard(rt_prep *p, void *blk) {
  /* the lock held (the thread busy starting, or queueing): free it here */
  if (!p || !rt_lock_briefly(&p->mu)) {
    free(blk);
    return;
  }
  void *old = NULL;
  bool handed = p->started && !p->stop;
  if (handed) {
    old = atomic_exchange(&p->discard, blk); /* a second one before the thread woke: rare */
    pthread_cond_signal(&p->work_cv);
  }
  pthread_mutex_unlock(&p->mu);
  free(handed ? old : blk); /* no thread (no bucketed model): freed now, not kept */
}

bool rt_prep_polling(rt_prep *p) {
  if (!p) return false;
  pthread_mutex_lock(&p->mu);
  bool polling = p->polling;
  pthread_mutex_unlock(&p->mu);
  return polling;
}

int rt_prep_wait(rt_prep *p, int64_t deadline_ns) {
  if (!p) return 0;
  struct timespec dl = {(time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000)};
  int rc = 0;
  pthread_mutex_lock(&p->mu);
  while ((p->head || p->running) && rc == 0) {
    if (deadline_ns < 0) pthread_cond_wait(&p->done_cv, &p->mu);
    else if (pthread_cond_timedwait(&p->done_cv, &p->mu, &dl) == ETIMEDOUT)
      rc = p->head || p->running ? 1 : 0;
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}
