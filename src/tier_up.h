/* tier_up.h - internal to src/: a model's kernels built quickly first and
 * rebuilt fully in the background (tier_up.c; the public side is
 * kiln_context_set_tier_up in kiln/runtime.h). */
#ifndef KILN_SRC_TIER_UP_H
#define KILN_SRC_TIER_UP_H

#include "rt.h"

#define RT_TIER_UP_MIN_DEFAULT 4 /* kernels a compile must build before it goes quick */

/* The context's threshold from KILN_TIER_UP ("off" or "0": 0, a number:
 * that many kernels; unset or anything else: the default). */
int rt_tier_up_env(void);

/* Whether a compile of m that must build `misses` kernels builds them at
 * the QUICK tier. */
bool rt_tier_up_wanted(const kiln_model *m, int misses);

/* After kiln_model_compile built some kernels at the QUICK tier (m->kquick):
 * allocate what the rebuild needs and queue it (variants.c's compile
 * thread). 0, or -1 with st (out of memory). */
int rt_tier_up_start(kiln_model *m, kiln_status *st);

/* On the compile thread: build the k-th (0 <= k < m->quick_built) FULL
 * kernel and swap it in: 0, or -1 when the build failed (the quick kernel
 * keeps serving). The order puts first the kernels the quick tier slows
 * most: norms, softmax and other non-GEMM kernels, then GEMMs with a fused
 * epilogue, then plain GEMMs and conv2d (whose work is prebuilt code either
 * way: the GEMM, or the direct conv at 2-8% below its inlined form). */
int rt_tier_up_node(kiln_model *m, int k);

/* Release the FULL kernels built (the host backend's free, after the job
 * was cancelled). */
void rt_tier_up_free(kiln_model *m);

#endif
