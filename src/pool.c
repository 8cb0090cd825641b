/* pool.c - the context's thread pool and rt_kernel_call (pool.h).
 * For now every kernel runs as one part on the calling thread. */
#include "pool.h"

void rt_pool_free(rt_pool *p) { (void)p; }

int32_t rt_kernel_call(const kiln_model *m, int node, jit_kernel_fn fn, void *const *args,
                       const int64_t *ksyms, const int64_t *gsyms) {
  (void)m;
  (void)node;
  (void)gsyms;
  return fn(args, ksyms, 0, 1);
}
