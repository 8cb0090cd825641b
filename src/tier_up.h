/* tier_up.h - internal to src/: a model's kernels built quickly first and
 * rebuilt fully in the background (tier_up.c; the public side is
 * kiln_context_set_tier_up in kiln/runtime.h). */
#ifndef KILN_SRC_TIER_UP_H
#define KILN_SRC_TIER_UP_H

#include "rt.h"

#define RT_TIER_UP_MIN_DEFAULT 4 /* kernels a compile must build before it goes quick */
/* Milliseconds without an execute holding the CPUs before the compile
 * thread rebuilds a kernel whose quick code is as fast (tier_up.c). */
#define RT_TIER_QUIET_MS 20
/* Its rest after finding an execute holding them. */
#define RT_TIER_BUSY_REST_MS 10

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
 * most: norms and softmax, then the other non-GEMM kernels, then GEMMs
 * whose quick code does more than call the prebuilt GEMM and conv2d; the
 * first m->quick_urgent are rebuilt at once. The rest, about as fast as
 * their FULL kernels (GEMMs whose quick kernel is the prebuilt GEMM with a
 * cheap epilogue: adds, a bias, a relu; softmax and layer_norm rows in the
 * prebuilt routine; copies of data: permute, reshape),
 * the compile thread rebuilds only while no execute holds the CPUs
 * (variants.c), for the disk cache and the next process. */
int rt_tier_up_node(kiln_model *m, int k);

/* Release the FULL kernels built (the host backend's free, after the job
 * was cancelled). */
void rt_tier_up_free(kiln_model *m);

#endif
