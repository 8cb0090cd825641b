/* variants.c - shape-specialized variants of a model (see variants.h) and
 * the specialization policy API of kiln/runtime.h.
 *
 * Table: up to RT_VARIANTS_MAX variants, each with its binding (all graph
 * symbols), per-node kernels and cache entries, a last-use tick and a
 * reference count (the table's own reference plus one per execute using
 * it). Lookup compares the binding against the few entries under the mutex.
 * Compiles run outside the mutex; two threads compiling the same binding
 * both fetch through the memory cache (which compiles a key once) and the
 * second to insert drops its copy for the first's. Cache entries are
 * released outside the mutex (the cache has its own lock). */
#include <stdlib.h>
#include <string.h>

#include "cache_mem.h"
#include "pool.h"
#include "variants.h"

struct rt_variant {
  int64_t *binding;      /* g->nsyms values */
  jit_kernel_fn *kernels;/* g->nnodes; NULL for source nodes */
  rt_kentry **kentries;  /* g->nnodes; NULL where the generic kernel is reused */
  uint64_t last_use;
  int refs;              /* guarded by the table's lock */
};

struct rt_variants {
  pthread_mutex_t lock;
  rt_variant *v[RT_VARIANTS_MAX];
  int n;
  uint64_t tick;
  int specialized; /* variants compiled and inserted, ever */
};

rt_variants *rt_variants_new(void) {
  rt_variants *vs = calloc(1, sizeof *vs);
  if (vs && pthread_mutex_init(&vs->lock, NULL) != 0) {
    free(vs);
    return NULL;
  }
  return vs;
}

static void variant_free(kiln_model *m, rt_variant *v) {
  if (!v) return;
  if (v->kentries)
    for (int i = 0; i < m->g->nnodes; i++) rt_cache_mem_release(m->ctx->kcache, v->kentries[i]);
  free(v->kentries);
  free(v->kernels);
  free(v->binding);
  free(v);
}

void rt_variants_free(kiln_model *m, rt_variants *vs) {
  if (!vs) return;
  for (int i = 0; i < vs->n; i++) variant_free(m, vs->v[i]);
  pthread_mutex_destroy(&vs->lock);
  free(vs);
}

static bool is_source(const ir_node *n) {
  return n->op == IR_OP_CONSTANT || n->op == IR_OP_CONSTANT_EXTERNAL;
}

/* Compile the variant of binding syms; NULL with st filled on failure. */
static rt_variant *variant_compile(kiln_model *m, const int64_t *syms, kiln_status *st) {
  const ir_graph *g = m->g;
  size_t nn = (size_t)(g->nnodes ? g->nnodes : 1);
  rt_variant *v = calloc(1, sizeof *v);
  if (!v || !(v->binding = malloc((size_t)g->nsyms * sizeof *syms)) ||
      !(v->kernels = calloc(nn, sizeof *v->kernels)) ||
      !(v->kentries = calloc(nn, sizeof *v->kentries))) {
    variant_free(m, v);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory specializing graph @%s", g->name);
    return NULL;
  }
  memcpy(v->binding, syms, (size_t)g->nsyms * sizeof *syms);
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (is_source(n)) continue;
    if (m->knsyms[i] == 0) { /* already static: the generic kernel is the specialized one */
      v->kernels[i] = m->kernels[i];
      continue;
    }
    const char *op = ir_op_get(n->op)->name;
    const char *vname = n->nout > 0 ? n->out[0]->name : "?";
    char *text = ir_kernel_text_bound(g, n, syms);
    if (!text) {
      rt_err(st, KILN_ERR_SHAPE,
             "graph @%s, node %d (mo.%s -> %%%s): a dim has no non-negative value under the "
             "binding (or out of memory)",
             g->name, i, op, vname);
      variant_free(m, v);
      return NULL;
    }
    char err[1024] = "";
    int rc = rt_cache_mem_get(m->ctx->kcache, text, &v->kentries[i], &v->kernels[i], err,
                              sizeof err);
    free(text);
    if (rc < 0 || !v->kernels[i]) {
      rt_err(st, KILN_ERR_COMPILE, "graph @%s, node %d (mo.%s -> %%%s), specialized: %s",
             g->name, i, op, vname, err[0] ? err : "the JIT produced no kernel");
      variant_free(m, v);
      return NULL;
    }
  }
  return v;
}

/* The variant of syms in the table, with a reference taken, or NULL. Lock held. */
static rt_variant *find_locked(kiln_model *m, rt_variants *vs, const int64_t *syms) {
  size_t bytes = (size_t)m->g->nsyms * sizeof *syms;
  for (int i = 0; i < vs->n; i++)
    if (memcmp(vs->v[i]->binding, syms, bytes) == 0) {
      vs->v[i]->last_use = ++vs->tick;
      vs->v[i]->refs++;
      return vs->v[i];
    }
  return NULL;
}

/* Insert fresh v (or find the one another thread inserted meanwhile), take a
 * reference for the caller when `ref`. Returns the variant in the table. */
static rt_variant *insert(kiln_model *m, rt_variant *v, bool ref) {
  rt_variants *vs = m->variants;
  rt_variant *drop = NULL, *got;
  pthread_mutex_lock(&vs->lock);
  got = find_locked(m, vs, v->binding);
  if (got) {
    if (!ref) got->refs--;
    drop = v;
  } else {
    if (vs->n == RT_VARIANTS_MAX) { /* evict the least recently used */
      int lru = 0;
      for (int i = 1; i < vs->n; i++)
        if (vs->v[i]->last_use < vs->v[lru]->last_use) lru = i;
      rt_variant *old = vs->v[lru];
      vs->v[lru] = vs->v[--vs->n];
      if (--old->refs == 0) drop = old; /* else its last user frees it */
    }
    v->refs = ref ? 2 : 1;
    v->last_use = ++vs->tick;
    vs->v[vs->n++] = v;
    vs->specialized++;
    got = v;
  }
  pthread_mutex_unlock(&vs->lock);
  variant_free(m, drop);
  return got;
}

static int policy_of(const kiln_model *m) {
  int p = atomic_load_explicit(&m->specialize, memory_order_relaxed);
  return p ? p - 1 : atomic_load_explicit(&m->ctx->specialize, memory_order_relaxed);
}

rt_variant *rt_variant_acquire(kiln_model *m, const int64_t *syms) {
  if (m->g->nsyms == 0 || !m->variants) return NULL;
  int p = policy_of(m);
  if (p == KILN_SPECIALIZE_OFF) return NULL;
  rt_variants *vs = m->variants;
  pthread_mutex_lock(&vs->lock);
  rt_variant *v = find_locked(m, vs, syms);
  pthread_mutex_unlock(&vs->lock);
  if (v || p != KILN_SPECIALIZE_SYNC) return v;
  /* sync: compile now; on failure the generic variant serves */
  rt_variant *fresh = variant_compile(m, syms, NULL);
  return fresh ? insert(m, fresh, true) : NULL;
}

void rt_variant_release(kiln_model *m, rt_variant *v) {
  if (!v) return;
  rt_variants *vs = m->variants;
  pthread_mutex_lock(&vs->lock);
  bool last = --v->refs == 0;
  pthread_mutex_unlock(&vs->lock);
  if (last) variant_free(m, v);
}

int32_t rt_variant_run(const kiln_model *m, const rt_variant *v, int node, void *const *args,
                       const int64_t *syms) {
  if (!v) return rt_model_run_kernel(m, node, args, syms);
  if (!v->kentries[node]) return rt_model_run_kernel(m, node, args, syms); /* static node */
  return rt_kernel_call(m, node, v->kernels[node], args, NULL, syms); /* reads no dims */
}

int rt_model_num_specialized(const kiln_model *m) {
  if (!m || !m->variants) return 0;
  pthread_mutex_lock(&m->variants->lock);
  int n = m->variants->specialized;
  pthread_mutex_unlock(&m->variants->lock);
  return n;
}

/* ---- API ---- */
static bool policy_ok(kiln_specialize_policy p) {
  return p == KILN_SPECIALIZE_OFF || p == KILN_SPECIALIZE_SYNC || p == KILN_SPECIALIZE_AHEAD;
}

KILN_API int kiln_context_set_specialize(kiln_context *ctx, kiln_specialize_policy p,
                                         kiln_status *st) {
  if (!ctx) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_specialize: context is NULL");
  if (!policy_ok(p))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_specialize: unknown policy %d (off 0, sync 1, ahead 2)", (int)p);
  atomic_store(&ctx->specialize, (int)p);
  rt_ok(st);
  return 0;
}

KILN_API int kiln_model_set_specialize(kiln_model *m, kiln_specialize_policy p, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_set_specialize: model is NULL");
  if (!policy_ok(p))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_model_set_specialize: unknown policy %d (off 0, sync 1, ahead 2)", (int)p);
  atomic_store(&m->specialize, (int)p + 1);
  rt_ok(st);
  return 0;
}

KILN_API int kiln_model_specialize(kiln_model *m, const char *const *syms, const int64_t *values,
                                   int n, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_specialize: model is NULL");
  if (n < 0 || (n > 0 && (!syms || !values)))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_specialize: bad binding list (%d)", n);
  const ir_graph *g = m->g;
  if (g->nsyms == 0 || !m->variants) { /* static graph: the generic variant is specialized */
    rt_ok(st);
    return 0;
  }
  int64_t *b = malloc((size_t)g->nsyms * sizeof *b);
  bool *set = calloc((size_t)g->nsyms, sizeof *set);
  if (!b || !set) {
    free(b);
    free(set);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  int rc = 0;
  for (int i = 0; rc == 0 && i < n; i++) {
    int k = 0;
    while (k < g->nsyms && (!syms[i] || strcmp(g->syms[k], syms[i]) != 0)) k++;
    if (k == g->nsyms)
      rc = rt_err(st, KILN_ERR_NOT_FOUND, "kiln_model_specialize: graph @%s has no symbolic dim '%s'",
                  g->name, syms[i] ? syms[i] : "(null)");
    else if (values[i] < 0)
      rc = rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_specialize: %s = %lld is negative",
                  syms[i], (long long)values[i]);
    else {
      b[k] = values[i];
      set[k] = true;
    }
  }
  for (int k = 0; rc == 0 && k < g->nsyms; k++)
    if (!set[k])
      rc = rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_model_specialize: symbolic dim '%s' of graph @%s has no value", g->syms[k],
                  g->name);
  if (rc == 0) {
    rt_variants *vs = m->variants;
    pthread_mutex_lock(&vs->lock);
    rt_variant *v = find_locked(m, vs, b);
    if (v) v->refs--; /* present: only marked used */
    pthread_mutex_unlock(&vs->lock);
    if (!v) {
      rt_variant *fresh = variant_compile(m, b, st);
      if (!fresh) rc = -1;
      else insert(m, fresh, false);
    }
  }
  free(b);
  free(set);
  if (rc == 0) rt_ok(st);
  return rc;
}

KILN_API int kiln_model_variants(const kiln_model *m) {
  if (!m) return -1;
  if (!m->variants) return 0;
  pthread_mutex_lock(&m->variants->lock);
  int n = m->variants->n;
  pthread_mutex_unlock(&m->variants->lock);
  return n;
}
