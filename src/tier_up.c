/* tier_up.c - quick kernels first, full ones swapped in from the background.
 *
 * kiln_model_compile (model.c) takes every kernel the caches hold at the
 * FULL tier. When at least the context's threshold of the others must be
 * compiled (kiln_context_set_tier_up), it builds them at the QUICK tier
 * (jit.h: about a fifth of the compile time) and calls rt_tier_up_start,
 * which queues one job on the context's compile thread (variants.c). That
 * job rebuilds the kernels at FULL one by one (those the quick tier slows
 * most first, rank() below), at the compile thread's low priority but
 * without the rests of specialization compiles, and swaps each in. Only
 * the rebuilds that pay run at once; a GEMM whose quick kernel is the
 * prebuilt GEMM with a cheap epilogue (no faster at FULL), or a copy, is
 * rebuilt only while no execute holds the CPUs (variants.c, tier_up), so
 * that on a machine the requests fill its compile takes no CPU time from
 * them. Each swap:
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

/* The rebuild classes, in rebuild order (rt_tier_up_node). Measured per
 * kernel on a BERT-style encoder (1 thread, seq 230, quick / full time):
 * mul+softmax 1.51x and layer_norm 1.94x in emitted code (the same with
 * the prebuilt rows), a GEMM with a gelu epilogue 1.016x, a GEMM with adds
 * or nothing after it 1.00x (the GEMM is the same prebuilt code at both
 * tiers), permute 1.11x and reshape 1.03x (0.1% of a request); the
 * rebuilds of the last three kinds were ~60% of the ~400 ms the tier-up
 * took. */
enum {
  TIER_NORM,  /* softmax, layer_norm, alone or fused, in emitted code: 1.5-2x */
  TIER_OTHER, /* every other kernel that computes, but GEMMs */
  TIER_GEMM,  /* a GEMM whose quick code does more than call the prebuilt one (static
                 sizes inline the template; an epilogue with transcendental math), and
                 conv2d (the prebuilt direct conv, 2-8% below its inlined form) */
  TIER_IDLE,  /* the prebuilt GEMM or rows with cheap members or none, copies of
                 data: rebuilt when idle */
  TIER_CLASSES
};

/* A member whose quick code is about as fast as its O3 code: a copy or
 * view of data, one instruction per element, or rows normalized by the
 * engine's prebuilt routine (jit.h: the same code at both tiers). */
static bool cheap_member(const kiln_model *m, const ir_node *n) {
  if (ir_node_is_source(n)) return true;
  if (jit_node_calls_rows(n)) return jit_engine_has_prebuilt_rows(m->ctx->jit);
  switch (ir_op_get(n->op)->cls) {
  case IR_CLS_MATMUL:
  case IR_CLS_SLICE:
  case IR_CLS_RESHAPE:
  case IR_CLS_TRANSPOSE:
  case IR_CLS_PERMUTE:
  case IR_CLS_BROADCAST_TO:
  case IR_CLS_CONCAT:
  case IR_CLS_SPLIT:
  case IR_CLS_SQUEEZE:
  case IR_CLS_UNSQUEEZE:
  case IR_CLS_TILE:
  case IR_CLS_COMPARE:
  case IR_CLS_WHERE:
  case IR_CLS_CAST:
    return true;
  default:
    break;
  }
  switch (n->op) {
  case IR_OP_ADD:
  case IR_OP_SUB:
  case IR_OP_MUL:
  case IR_OP_DIV:
  case IR_OP_MAX:
  case IR_OP_MIN:
  case IR_OP_NEGATE:
  case IR_OP_ABS:
  case IR_OP_RELU:
    return true;
  default:
    return false;
  }
}

static bool is_norm(const ir_node *n) {
  ir_op_class c = ir_op_get(n->op)->cls;
  if (c == IR_CLS_SOFTMAX || c == IR_CLS_LAYER_NORM) return true;
  for (int k = 0; n->body && k < n->body->nnodes; k++)
    if (is_norm(n->body->nodes[k])) return true;
  return false;
}

/* Whether every member of n (n itself, or its body's nodes) is cheap. */
static bool all_cheap(const kiln_model *m, const ir_node *n) {
  if (!n->body) return cheap_member(m, n);
  for (int k = 0; k < n->body->nnodes; k++)
    if (!cheap_member(m, n->body->nodes[k])) return false;
  return true;
}

/* The rebuild class of node i. */
static int rank(const kiln_model *m, int i) {
  const ir_node *n = m->g->nodes[i];
  if (n->op == IR_OP_CONV2D) return TIER_GEMM;
  const ir_node *mm = ir_node_matmul(n);
  if (!mm) return all_cheap(m, n) ? TIER_IDLE : is_norm(n) ? TIER_NORM : TIER_OTHER;
  bool prebuilt = jit_engine_prebuilt(m->ctx->jit) && jit_node_calls_prebuilt_gemm(mm);
  return prebuilt && all_cheap(m, n) ? TIER_IDLE : TIER_GEMM;
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
  for (int r = 0; r < TIER_CLASSES; r++) {
    if (r == TIER_IDLE) m->quick_urgent = k;
    for (int i = 0; i < g->nnodes; i++)
      if (m->kquick[i] && rank(m, i) == r) m->korder[k++] = i;
  }
  m->quick_next = 0;
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
