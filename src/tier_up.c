/* tier_up.c - quick kernels first, full ones swapped in from the background.
 *
 * kiln_model_compile (model.c) takes every kernel the caches hold at the
 * FULL tier. When at least the context's threshold of the others must be
 * compiled (kiln_context_set_tier_up), it builds them at the QUICK tier
 * (jit.h: about a fifth of the compile time) and calls rt_tier_up_start,
 * which queues one job on the context's compile thread (variants.c). That
 * job rebuilds the kernels at FULL one by one (those the quick tier slows
 * most first), at the compile thread's low priority but without the rests
 * of specialization compiles (each rebuild pays), and swaps each in:
 *   - m->kernels[node] is stored with release order here and read with
 *     acquire order by rt_model_run_kernel, so an execute runs one kernel or
 *     the other, both correct (their kernel text, hence symbol map, is the
 *     same);
 *   - the quick kernel stays loaded (its entry, m->kentries[node], stays
 *     referenced) until the model is freed: an execute that read the old
 *     pointer may still be running it. So a model holds at most two kernels
 *     per node, and the quick ones never reach the disk cache.
 * kiln_model_free cancels the job first (variants.c), then the host backend
 * releases both entries of each node. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cache_mem.h"
#include "pipeline.h"
#include "tier_up.h"
#include "variants.h"

int rt_tier_up_env(void) {
  const char *v = getenv("KILN_TIER_UP");
  if (!v || !*v) return RT_TIER_UP_MIN_DEFAULT;
  if (!strcasecmp(v, "off") || !strcasecmp(v, "no") || !strcasecmp(v, "false")) return 0;
  char *end;
  long n = strtol(v, &end, 10);
  if (*end || n < 0 || n > 1000000) return RT_TIER_UP_MIN_DEFAULT;
  return (int)n;
}

bool rt_tier_up_wanted(const kiln_model *m, int misses) {
  int min = atomic_load_explicit(&m->ctx->tier_up_min, memory_order_relaxed);
  return min > 0 && misses >= min;
}

/* Rank of node i in the rebuild order (rt_tier_up_node). A conv2d's quick
 * kernel runs prebuilt code (the direct conv or the GEMM), within a few
 * percent of its full kernel: it goes last, with the plain GEMMs. */
static int rank(const ir_graph *g, int i) {
  const ir_node *n = g->nodes[i];
  if (n->op == IR_OP_CONV2D) return 2;
  if (!ir_node_matmul(n)) return 0;
  return n->op == IR_OP_FUSED ? 1 : 2;
}

int rt_tier_up_start(kiln_model *m, kiln_status *st) {
  const ir_graph *g = m->g;
  int n = 0;
  for (int i = 0; i < g->nnodes; i++) n += m->kquick[i];
  if (n == 0) return 0;
  if (!(m->kfull = calloc((size_t)g->nnodes, sizeof *m->kfull)) ||
      !(m->korder = malloc((size_t)n * sizeof *m->korder)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  int k = 0;
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < g->nnodes; i++)
      if (m->kquick[i] && rank(g, i) == r) m->korder[k++] = i;
  m->quick_built = n;
  atomic_store(&m->quick_live, n);
  atomic_fetch_add(&m->ctx->quick_live, n);
  rt_tier_up_enqueue(m);
  return 0;
}

int rt_tier_up_node(kiln_model *m, int k) {
  if (k < 0 || k >= m->quick_built) return -1;
  int node = m->korder[k];
  rt_target t;
  rt_target_host(&t, m->ctx);
  rt_host_kernel kern;
  if (rt_pipeline_compile_host(&t, m->g, node, NULL, &kern, NULL) < 0) return -1;
  free(kern.sym_map); /* the same kernel text as the quick kernel's: the same map */
  m->kfull[node] = kern.entry;
  __atomic_store_n(&m->kernels[node], kern.fn, __ATOMIC_RELEASE);
  atomic_fetch_sub(&m->quick_live, 1);
  atomic_fetch_sub(&m->ctx->quick_live, 1);
  return 0;
}

void rt_tier_up_free(kiln_model *m) {
  if (!m->kfull) return;
  for (int i = 0; i < m->g->nnodes; i++)
    if (m->kfull[i]) rt_cache_mem_release(m->ctx->kcache, m->kfull[i]);
  atomic_fetch_sub(&m->ctx->quick_live, atomic_load(&m->quick_live));
  free(m->kfull);
  free(m->korder);
  m->kfull = NULL;
  m->korder = NULL;
}

KILN_API int kiln_context_set_tier_up(kiln_context *ctx, int min_kernels, kiln_status *st) {
  if (!ctx) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_tier_up: context is NULL");
  if (min_kernels < 0)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_tier_up: min_kernels %d is negative (0 turns it off)",
                  min_kernels);
  atomic_store(&ctx->tier_up_min, min_kernels);
  rt_ok(st);
  return 0;
}
