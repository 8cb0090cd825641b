/* observe.h - internal to src/: what happens when someone watches a
 * model's kernels (observe.c): per-node profile counters and trace spans
 * around kernel calls and executes. rt_kernel_call (pool.c) and
 * kiln_model_execute (model.c) test ctx->watch, one relaxed load, and call
 * here only when it is set. */
#ifndef KILN_SRC_OBSERVE_H
#define KILN_SRC_OBSERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "rt.h"

/* The per-node counters of m (its graph's nnodes), made at compile;
 * freeing them stops m's profiling (ctx->watch). 0, or -1 with st. */
int rt_profile_init(kiln_model *m, kiln_status *st);
void rt_profile_free(kiln_model *m);

/* Whether m counts its calls now (it or its context profiles). */
bool rt_profile_on(const kiln_model *m);
/* One call of node's kernel that took ns, under the graph's symbols gsyms
 * (bytes and flops follow from them). Only while rt_profile_on. */
void rt_profile_add(const kiln_model *m, int node, int64_t ns, const int64_t *gsyms);
/* A device model's copies of inputs in and outputs out: their own rows. */
typedef enum rt_copy_kind { RT_COPY_IN, RT_COPY_OUT, RT_COPY_KINDS } rt_copy_kind;
void rt_profile_add_copy(const kiln_model *m, rt_copy_kind kind, int64_t ns, uint64_t bytes);
/* "[4, 128] f32": t with its dims evaluated under gsyms (-1 where one
 * does not evaluate). */
const char *rt_obs_shape_now(const ir_type *t, const int64_t *gsyms, char *buf, size_t cap);

/* Run node's kernel as rt_kernel_call does, timing it into m's profile
 * (when it profiles) and the context's trace (when open). */
int32_t rt_observe_kernel(const kiln_model *m, int node, jit_kernel_fn fn, void *const *args,
                          const int64_t *ksyms, const int64_t *gsyms);
/* m was compiled (kiln_model_compile began at t0_ms, rt_now_ms): a
 * trace span and an info line. */
void rt_observe_compiled(const kiln_model *m, double t0_ms);
/* An execute of m (what: "execute", or "replay" of a capture) ran from t0
 * to t1 (rt_now_ns), returning rc: counted in its profile, a trace span. */
void rt_observe_execute(const kiln_model *m, const char *what, int64_t t0, int64_t t1, int rc);

#endif
