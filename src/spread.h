/* spread.h - internal to src/: a short burst of independent items run on
 * threads of their own (spread.c), for work that should use idle CPUs the
 * context's pool does not cover (a model's quick kernel compiles when the
 * context runs kernels on fewer threads than the machine has CPUs). */
#ifndef KILN_SRC_SPREAD_H
#define KILN_SRC_SPREAD_H

#define RT_SPREAD_MAX 64 /* threads at most, the caller's included */

/* CPUs the calling thread may run on (its affinity mask), at least 1. */
int rt_spread_cpus(void);

/* Run item(arg, k) for k in [0, n), each exactly once, on the calling thread
 * and up to threads - 1 more started here (fewer if they cannot be
 * started; all joined before it returns), each taking the next k not yet
 * taken. item returns 0 or -1; every item runs whatever the others return.
 * Returns -1 when some item did, else 0. */
int rt_spread_run(int (*item)(void *arg, int k), void *arg, int n, int threads);

#endif
