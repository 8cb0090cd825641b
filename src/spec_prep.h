/* spec_prep.h - internal to src/: a context's prepare thread, which plans a
 * model's intermediates for a binding ahead of need and faults the arena
 * in (plan.h: rt_plan_prepare, rt_arena_reserve), so that the first execute
 * of a growing dim's next bucket neither places its intermediates nor
 * touches fresh pages (issue 20: those were the decode steps' stalls).
 *
 * Why a thread of its own, not a job of the compile thread (variants.c): a
 * compile job runs for tens of ms to seconds (a model's tier-up, a
 * variant's kernels), while a plan is wanted within a few executes (the
 * next bucket of a decode comes 8 to a few hundred steps of ~50 us later)
 * and costs ~20 us plus the arena's page faults. The thread runs at nice 0
 * (its jobs are short and late ones are useless), SCHED_BATCH (it never
 * preempts the execute that woke it: rt_thread_batch), and sleeps on a
 * condition variable between jobs (polling it every 1 ms for a while after
 * a plan: RT_PREP_POLL_NS); it starts when a caller buckets a
 * host model's dim (rt_prep_start), else with the first job.
 *
 * Jobs: (model, symbol values) plans (and the weigh of that bucket:
 * rt_variant_weigh_ahead; and, for the execute that queued them, the wake
 * of the compile thread: rt_prep_plans' kick), and (model) reaps of dropped
 * variants, at most RT_PREP_QUEUE_MAX queued (a fixed
 * table: queueing allocates nothing), a job
 * equal to a queued or running one not queued twice. A model being freed
 * cancels its jobs (rt_prep_cancel: removed when queued, waited for when
 * running), so the thread never touches a freed model. Lock order: the
 * prep lock is never held while planning; plan.c's and execute.c's own
 * locks (the plan cache's spin lock, the arena's atomic exchange) are taken
 * inside a job, never with the prep lock held. */
#ifndef KILN_SRC_SPEC_PREP_H
#define KILN_SRC_SPEC_PREP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bg_place.h"
#include "rt.h"

#define RT_PREP_QUEUE_MAX 16
/* After a plan job the thread looks at its queue every RT_PREP_POLL_NS for
 * RT_PREP_POLL_FOR_NS instead of sleeping until woken: a growing decode
 * queues its next plans every few ms (a bucket's claim), and each wake of
 * the sleeping thread cost the execute that queued them 2-10 us, up to
 * 47 us (a futex wake of an idle vCPU, issue 20); a plan wanted two buckets
 * ahead can wait 1 ms. */
#define RT_PREP_POLL_NS 1000000
#define RT_PREP_POLL_FOR_NS 200000000
#define RT_PREP_MAX_SYMS 16 /* models with more symbols get no plan ahead */

typedef struct rt_prep rt_prep;

/* Make the calling thread SCHED_BATCH (best effort; its nice value stays):
 * Linux's fair scheduler lets a waking thread preempt the running one, so
 * an execute that woke a background thread (a job queued) could wait for
 * it on its own CPU for a tick (~4 ms; measured on decode steps, issue 20).
 * A batch thread never preempts on wakeup: it runs on an idle CPU, or
 * takes its fair share at the next tick. The prepare and compile threads
 * call it. */
void rt_thread_batch(void);

/* Lock mu if it is free or freed within RT_LOCK_BRIEF_NS, else give up
 * (false): for an execute that takes a lock a background thread also takes.
 * Such a thread holds it for a microsecond or so, unless it lost its CPU
 * while holding it (nice +10 on a busy host: milliseconds), and the
 * execute must not wait for that; it spins instead of sleeping so that the
 * short case costs no wakeup. */
#define RT_LOCK_BRIEF_NS 20000
bool rt_lock_briefly(pthread_mutex_t *mu);

/* A prepare queue, no thread yet; NULL on OOM. */
rt_prep *rt_prep_new(void);
/* Where its thread registers (bg_place.h; NULL: nowhere); before the thread starts. */
void rt_prep_set_place(rt_prep *p, rt_bg_place *place);
/* Stop and join the thread; queued jobs are dropped. NULL ok. Every model
 * with jobs must have cancelled them first (rt_prep_cancel). */
void rt_prep_free(rt_prep *p);
/* Start the thread now (best effort; the first job starts it otherwise):
 * kiln_model_set_bucket, so that no execute pays for pthread_create. */
void rt_prep_start(rt_prep *p);
/* Queue a plan of m's intermediates for the symbol values syms
 * (m->g->nsyms entries, copied) and the reserve of its arena. Never blocks
 * (an execute calls it: a queue lock held by the thread, which may be
 * waiting for a CPU, means "not now"). Returns whether it is queued or
 * running now (false: the lock was held, the queue is full, m has more than
 * RT_PREP_MAX_SYMS symbols, or the thread could not start). Allocates
 * nothing. */
bool rt_prep_plan(rt_prep *p, kiln_model *m, const int64_t *syms);
/* rt_prep_plan of n plans (syms[0..n)) under one lock and one wake. Returns
 * how many of them, from the first, are queued or running now (it stops at
 * the first refused). With kick, the thread wakes the compile thread
 * (rt_spec_wake) before the first of them it runs: *kicked says whether
 * that was arranged (false: nothing queued, or only a running job matched;
 * the caller wakes it). */
int rt_prep_plans(rt_prep *p, kiln_model *m, const int64_t *const *syms, int n, bool kick,
                  bool *kicked);
/* Queue a job that frees m's dropped variants (rt_variants_reap): their
 * code's removal from the JIT waits for the context's lock, which a compile
 * may hold, and must not wait on an execute (issue 20: a variant its trial
 * dropped, freed by the execute that ran the trial, cost 12-35 us). Never
 * blocks, allocates nothing, never starts the thread; false when it could
 * not be queued (the caller frees them itself). rt_prep_cancel drops a queued one: the model's free
 * frees what is left. */
bool rt_prep_reap(rt_prep *p, kiln_model *m);
/* Free blk (an arena block an execute gave back after a larger one was
 * reserved: rt_arena_reserve, or another execute kept its block first) on
 * the thread, woken for it, instead of now: a large block's free is an
 * munmap, which waits for the mmap lock that the thread's own page faults
 * may hold. Freed now where the thread is not running (NULL p, no bucketed
 * model started it) or its lock stays held (rt_lock_briefly). */
void rt_prep_discard(rt_prep *p, void *blk);
/* Drop m's queued jobs and wait until none of its jobs runs. NULL p ok. */
void rt_prep_cancel(rt_prep *p, kiln_model *m);
/* For tests: whether the thread is polling its queue (no wake needed). */
bool rt_prep_polling(rt_prep *p);
/* Wait until no job is queued or running (kiln_context_wait_compiles);
 * returns 0, or 1 when deadline_ns (rt_now_ns's clock; < 0: none) passed
 * first. NULL p ok. */
int rt_prep_wait(rt_prep *p, int64_t deadline_ns);

#endif
