/* variants.h - internal to src/: shape-specialized variants of a model and
 * the context's background compile queue (variants.c).
 *
 * A model's generic variant (model.c, compiled at load) reads symbolic dims
 * at run time. A specialized variant is, for one key (below), every kernel
 * node's kernel text with the key's exact symbols bound to constants
 * (ir_kernel_text_bound when all are, ir_kernel_text_partial otherwise),
 * whose code the model's backend gets (backend.h: compile_bound; the host
 * through the context's memory cache, a device through the disk cache),
 * for every backend alike. A
 * model keeps at most its bound of them (kiln_model_set_max_variants, else
 * the context's, else RT_VARIANTS_MAX); adding one more evicts the least
 * recently used. A graph with no symbols never gets one.
 *
 * Key of a binding: one int64 per graph symbol; an exact symbol keeps its
 * value (>= 0), a bucketed one becomes -1 - (the bucket's upper end), so a
 * negative entry means "this symbol stays a run-time dim in the variant".
 * Bucketing thus only groups compiles: results are always exact (see
 * runtime.h for why nothing is padded).
 *
 * Async: one compile thread per context (rt_spec_ctx), started on the first
 * job, joined by rt_spec_ctx_free. Executes only queue (deduplicated,
 * bounded) and never wait. A dim the caller bucketed that grows at every
 * execute gets its next bucket queued ahead (variants.c specialize_ahead):
 * the job compiles that bucket's variant, then plans and reserves its arena
 * (plan.h rt_plan_prepare, rt_arena_reserve), so no step waits at the
 * crossing. rt_variants_free cancels the model's queued jobs
 * and waits for its running one, which checks for cancellation between
 * kernels, so a model free waits at most for one kernel compile.
 *
 * Thread safety: the table is guarded by a mutex; rt_variant_acquire hands
 * out a counted reference, so an evicted variant stays valid until its last
 * user releases it (its cache entries are released then). */
#ifndef KILN_SRC_VARIANTS_H
#define KILN_SRC_VARIANTS_H

#include "bg_place.h"
#include "rt.h"
#include "spec_policy.h"

#define RT_VARIANTS_MAX 8        /* default bound per model */
#define RT_VARIANTS_LIMIT 4096   /* largest bound the API accepts */
#define RT_SPEC_QUEUE_MAX 64     /* jobs queued per context at most */

typedef struct rt_variant rt_variant;
typedef struct rt_variants rt_variants;
typedef struct rt_spec_ctx rt_spec_ctx;

/* ---- per context (context.c creates and frees it) ---- */
/* Queue, counters and defaults of a context; no thread yet. NULL on OOM. */
/* Its threads (compile, prepare) register with place (bg_place.h; NULL ok). */
rt_spec_ctx *rt_spec_ctx_new(rt_bg_place *place);
/* Stop and join the compile thread (no model may be left). NULL ok. */
void rt_spec_ctx_free(rt_spec_ctx *s);
/* For tests: every background job sleeps ms first (in slices, cancellable),
 * standing in for a slow compile. 0 turns it off. */
void rt_spec_set_test_delay(kiln_context *ctx, int ms);
/* For tests: how async trials end (rt_spec_trial_mode: measure, keep every
 * variant, drop every variant), so counts do not depend on timing. */
void rt_spec_set_test_trial(kiln_context *ctx, int mode);
/* For tests: count `delta` executes as running on ctx (ctx->busy), as a
 * service's requests would, so that background work that waits for idle
 * CPUs waits (tier_up.c) whatever the machine's timing. */
void rt_spec_hold_busy(kiln_context *ctx, int delta);

/* Weigh, on the prepare thread, the bucket of syms that an execute
 * planned ahead (rt_spec_share at syms, the bucket's end): the execute
 * that meets the bucket hot then reads the share instead of computing it
 * (5-12 us of a decoder's step, issue 20). The last WEIGHED_KEYS buckets
 * are kept. No-op unless m is under the async policy. */
void rt_variant_weigh_ahead(kiln_model *m, const int64_t *syms);
/* For tests: the share weighed ahead for the bucket of syms, or -1. */
double rt_variant_weighed(kiln_model *m, const int64_t *syms);

/* Wake the compile thread for jobs queued without a wake (the prepare
 * thread does it for an execute: one wake of a sleeping thread per bucket on
 * the request path, issue 20). NULL ok. */
void rt_spec_wake(rt_spec_ctx *s);

/* Queue m's rebuild of its QUICK kernels (tier_up.c) ahead of every
 * specialization job; never dropped (one per model). */
void rt_tier_up_enqueue(kiln_model *m);

/* ---- per model ---- */
/* The variant table of a model (nothing compiled yet); NULL on OOM. */
rt_variants *rt_variants_new(void);
/* Cancel the model's queued background jobs and wait for its running one
 * (kiln_model_free, before the backend's state goes). NULL table ok. */
void rt_variants_cancel(kiln_model *m);
/* Cancel the model's queued background jobs, wait for its running one, free
 * the table and every variant in it (no execute may be running). NULL ok. */
void rt_variants_free(kiln_model *m, rt_variants *vs);

/* The variant to run an execute with the solved symbol values syms under
 * the model's effective policy: NULL means the generic variant (policy off,
 * no symbols, ahead and not declared, async and not live yet, or a
 * specialized compile failed). Under sync a missing variant is compiled
 * here; under async it is queued. Release a non-NULL result with
 * rt_variant_release. */
rt_variant *rt_variant_acquire(kiln_model *m, const int64_t *syms, rt_spec_ticket *t);
/* Under async, an execute whose ticket (from rt_variant_acquire; NULL ok)
 * asks for it reports its time here, with the variant it ran (NULL: the
 * generic); a variant whose trial ends without paying is dropped. */
void rt_variant_timed(kiln_model *m, rt_variant *v, const rt_spec_ticket *t, int64_t ns);
/* Whether m has a kernel a specialization can speed up (false: no variant
 * is ever made; --stats says so). */
bool rt_model_spec_useful(kiln_model *m);
/* Under async, when a dim the caller bucketed has grown at each of the
 * last RT_SPEC_AHEAD_RUN executes: ends = syms with each such dim at the
 * end of its bucket (the planner gives the intermediates room for the
 * whole bucket, plan.c), and true; else false. */
bool rt_variant_growth_room(kiln_model *m, const int64_t *syms, int64_t *ends);
/* Executes before the async policy specializes a binding (the context's). */
int rt_spec_hot(const kiln_context *ctx);
/* Drop a reference to v (NULL ok); the last one of a variant no longer in
 * the table (dropped by its trial, evicted) hands it to the prepare thread
 * to free (rt_variants_reap), or frees it here where there is none. */
void rt_variant_release(kiln_model *m, rt_variant *v);
/* Free m's dropped variants handed over so far (the prepare thread's reap
 * job, spec_prep.h). */
void rt_variants_reap(kiln_model *m);
/* One more reference to v (NULL ok), released with rt_variant_release. */
void rt_variant_retain(kiln_model *m, rt_variant *v);

/* Whether variant v (NULL: none) has a kernel of its own for node `node`;
 * where it has not (a static node, no variant), the generic kernel runs
 * (rt_model_run_kernel, model.c). */
bool rt_variant_has_kernel(const rt_variant *v, int node);
/* Variant v's code of node `node` (backend.h), or NULL where the generic
 * kernel serves (v NULL too). */
const struct rt_code *rt_variant_code(const rt_variant *v, int node);
/* Run node `node`'s kernel from variant v (rt_variant_has_kernel true; host). */
int32_t rt_variant_run(const kiln_model *m, const rt_variant *v, int node, void *const *args,
                       const int64_t *syms);

/* Count one event k (a kiln_counter kept with the variants: plan.c's plans,
 * execute.c's arena grows) for m and its context. */
void rt_model_count(const kiln_model *m, kiln_counter k);

/* Free an arena block an execute no longer needs, off the request path
 * where the context has a prepare thread (spec_prep.h: rt_prep_discard). */
void rt_model_discard_arena(kiln_model *m, void *blk);

/* Specialized variants compiled for m so far (the CLI's "S specialized"). */
int rt_model_num_specialized(const kiln_model *m);

#endif
