/* pool.h - internal to src/: the context's thread pool and the one place
 * kernels are called (pool.c).
 *
 * Every kernel call of an execute goes through rt_kernel_call, which decides
 * how many parts (kernel ABI part / nparts, jit.h) the call is split into
 * from the node's work under the solved symbols, and runs the parts on the
 * context's persistent workers plus the calling thread. A call whose work is
 * below the grain runs as (0, 1) on the calling thread and touches no pool
 * state at all. */
#ifndef KILN_SRC_POOL_H
#define KILN_SRC_POOL_H

#include "rt.h"

/* One spin-wait hint to the CPU (pause / yield), for busy-wait loops. */
static inline void rt_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

typedef struct rt_pool rt_pool;

/* Most threads a context runs kernels on (the caller included). */
#define RT_POOL_MAX_THREADS 1024

/* Free a context's pool (joins its workers). NULL ok. */
void rt_pool_free(rt_pool *p);

/* futex(2) on a 32-bit word, process-private: sleep while *word ==
 * expected, ns nanoseconds at most (ns < 0: no limit); returns at once
 * when it differs, and on a wake, a signal, the timeout or spuriously
 * (callers recheck what they wait for). rt_futex_wake wakes n sleepers. */
void rt_futex_wait(void *word, unsigned expected, int64_t ns);
void rt_futex_wake(void *word, int n);

/* Run kernel fn of node `node` of m on args: ksyms are the symbol values the
 * kernel reads (its own numbering), gsyms the graph's solved symbol values
 * (for the work estimate). Returns the first nonzero status of the parts,
 * else 0. */
int32_t rt_kernel_call(const kiln_model *m, int node, jit_kernel_fn fn, void *const *args,
                       const int64_t *ksyms, const int64_t *gsyms);
/* rt_kernel_call without the watch test (observe.c calls it): label, when
 * not NULL, names the kernel in the trace's per-part spans (borrowed for
 * the call). */
int32_t rt_kernel_call_labeled(const kiln_model *m, int node, jit_kernel_fn fn,
                               void *const *args, const int64_t *ksyms, const int64_t *gsyms,
                               const char *label);

/* Work that is not a kernel but splits like one (the kernel ABI, jit.h:
 * the parts 0..nparts-1 of fn together do what fn(args, NULL, 0, 1) does)
 * on ctx's pool, the calling thread included, parts claimed in order by
 * whichever thread is free; as fn(args, NULL, 0, 1) in the calling thread
 * when the context runs one thread, nparts is 1 or above 65535, or the pool
 * is busy (another thread's job). kiln_model_compile compiles its kernels
 * this way. Returns the first nonzero status of the parts, in time order. */
int32_t rt_pool_run(kiln_context *ctx, jit_kernel_fn fn, void *const *args, int nparts);

/* The execute that published ctx's latest job has ended (rt_model_execute
 * calls this at its end, rt_pool_run after its job): no job is likely
 * soon, so workers spinning for one go to sleep now. A few loads when the
 * context has no pool or nothing changed. */
void rt_pool_quiet(const kiln_context *ctx);

/* Work estimate of node n of g (cost units of about a nanosecond of one
 * core) with the graph's symbol values gsyms. gsyms NULL: the estimate when
 * every dim n reads is static, else -1 (it must be computed per call).
 * The formula is the class's, from ops.def's CLS rows: elementwise and
 * movement: elements of the result; reduce: of the operand (softmax x4,
 * layer_norm x2); matmul: M*N*K / 16; 0 for nodes that never split
 * (sources, gather, custom kernels other than elementwise ones). */
int64_t rt_node_work(const ir_graph *g, const ir_node *n, const int64_t *gsyms);

/* Worker threads the context's pool has running now (0 when it never
 * split a kernel or runs on one thread); for tests and --stats. */
int rt_pool_workers(const kiln_context *ctx);

/* Workers of ctx's pool asleep (or about to be) waiting for a job; for
 * tests. */
int rt_pool_sleeping(const kiln_context *ctx);

/* The pool's worker placement, for tests: 1 when it binds workers to CPUs
 * (then *caller_cpu is the caller's CPU at the last job, -2 before any), 0
 * when it does not, -1 when the context has no pool. worker_cpus[i] (i < n
 * and below the workers started) gets the one CPU worker i is bound to, -1
 * when its affinity is not a single CPU. */
int rt_pool_placement(const kiln_context *ctx, int *caller_cpu, int *worker_cpus, int n);

#endif
