/* pool.h - internal to src/: the context's thread pool and the one place
 * kernels are called (pool.c).
 *
 * Every kernel call of an execute goes through rt_kernel_call, which decides
 * how many parts (kernel ABI part / nparts, jit.h) the call is split into
 * from the node's work under the solved symbols, and runs the parts on the
 * context's persistent workers plus the calling thread. */
#ifndef KILN_SRC_POOL_H
#define KILN_SRC_POOL_H

#include "rt.h"

typedef struct rt_pool rt_pool;

/* Free a context's pool (joins its workers). NULL ok. */
void rt_pool_free(rt_pool *p);

/* Run kernel fn of node `node` of m on args: ksyms are the symbol values the
 * kernel reads (its own numbering), gsyms the graph's solved symbol values
 * (for the work estimate). Returns the first nonzero status of the parts,
 * else 0. */
int32_t rt_kernel_call(const kiln_model *m, int node, jit_kernel_fn fn, void *const *args,
                       const int64_t *ksyms, const int64_t *gsyms);

#endif
