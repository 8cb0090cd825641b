/* spec_prep.c - the context's prepare thread (spec_prep.h): plans a
 * model's intermediates for a binding ahead of need and faults its arena
 * in, off the request path and apart from the compile thread.
 *
 * A FIFO of jobs under `mu`; the thread takes the head, runs it without the
 * lock and marks it running meanwhile, so rt_prep_cancel can wait for it. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "spec_prep.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan.h"
#include "pool.h"

typedef struct prep_job {
  kiln_model *m;
  int64_t *syms;
  struct prep_job *next;
} prep_job;

struct rt_prep {
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the thread waits for jobs */
  pthread_cond_t done_cv; /* a job finished (monotonic clock: rt_prep_wait) */
  prep_job *head, *tail;
  int queued;
  prep_job *running;
  bool started, stop;
  pthread_t thread;
};

rt_prep *rt_prep_new(void) {
  rt_prep *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  pthread_condattr_t ca;
  bool attr = pthread_condattr_init(&ca) == 0;
  if (attr) (void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (!attr || pthread_mutex_init(&p->mu, NULL) != 0) goto fail0;
  if (pthread_cond_init(&p->work_cv, NULL) != 0) goto fail1;
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

static void job_free(prep_job *j) {
  if (!j) return;
  free(j->syms);
  free(j);
}

static void run_job(const prep_job *j) {
  size_t total = 0;
  /* a failure (out of memory, a shape error) leaves the plan to the execute,
   * which reports it */
  if (rt_plan_prepare(j->m, j->syms, &total, NULL) == 0 && total > 0)
    rt_arena_reserve(j->m, total);
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
  rt_thread_batch(); /* the execute that queues a job is not preempted by this thread */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && !p->head) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop) break;
    prep_job *j = p->head;
    p->head = j->next;
    if (!p->head) p->tail = NULL;
    p->queued--;
    p->running = j;
    pthread_mutex_unlock(&p->mu);
    run_job(j); /* j->m is valid: its free waits for this job (rt_prep_cancel) */
    pthread_mutex_lock(&p->mu);
    p->running = NULL;
    pthread_cond_broadcast(&p->done_cv);
    job_free(j);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

void rt_prep_free(rt_prep *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  bool started = p->started;
  pthread_mutex_unlock(&p->mu);
  if (started) pthread_join(p->thread, NULL);
  for (prep_job *j = p->head, *next; j; j = next) {
    next = j->next;
    job_free(j);
  }
  pthread_cond_destroy(&p->done_cv);
  pthread_cond_destroy(&p->work_cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

static bool same_job(const prep_job *j, const kiln_model *m, const int64_t *syms, size_t bytes) {
  return j && j->m == m && memcmp(j->syms, syms, bytes) == 0;
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

bool rt_prep_plan(rt_prep *p, kiln_model *m, const int64_t *syms) {
  if (!p) return false;
  size_t bytes = (size_t)m->g->nsyms * sizeof *syms;
  prep_job *j = calloc(1, sizeof *j);
  if (!j || !(j->syms = malloc(bytes ? bytes : 1))) {
    job_free(j);
    return false;
  }
  if (bytes) memcpy(j->syms, syms, bytes);
  j->m = m;
  if (!rt_lock_briefly(&p->mu)) { /* never wait on the thread: the next execute asks again */
    job_free(j);
    return false;
  }
  bool dup = same_job(p->running, m, syms, bytes);
  for (prep_job *q = p->head; q && !dup; q = q->next) dup = same_job(q, m, syms, bytes);
  bool queued = dup;
  if (!dup && !p->stop && p->queued < RT_PREP_QUEUE_MAX) {
    if (start_locked(p)) {
      if (p->tail) p->tail->next = j;
      else p->head = j;
      p->tail = j;
      p->queued++;
      j = NULL;
      queued = true;
      pthread_cond_signal(&p->work_cv);
    }
  }
  pthread_mutex_unlock(&p->mu);
  job_free(j);
  return queued;
}

void rt_prep_cancel(rt_prep *p, kiln_model *m) {
  if (!p) return;
  prep_job *dead = NULL;
  pthread_mutex_lock(&p->mu);
  for (prep_job **q = &p->head, *prev = NULL; *q;) {
    prep_job *j = *q;
    if (j->m == m) {
      *q = j->next;
      if (p->tail == j) p->tail = prev;
      p->queued--;
      j->next = dead;
      dead = j;
    } else {
      prev = j;
      q = &j->next;
    }
  }
  while (p->running && p->running->m == m) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  for (prep_job *next; dead; dead = next) {
    next = dead->next;
    job_free(dead);
  }
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
