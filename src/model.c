/* model.c - compiling a graph into a kiln_model, the model's input / output /
 * weight metadata, binding weights, and calling a kernel.
 *
 * Compile clones the caller's graph (the model never points into it),
 * prepares the clone for the host (pipeline.c: verify, which also rebuilds
 * its run-time shape checks; bind custom ops; fold transposes; fuse; mark
 * prepacked operands), then gets each kernel node's code through the
 * pipeline: its canonical text -> the context's memory cache, which
 * returns the loaded kernel of that text's key, compiling it on a miss
 * (cache_mem.h: thread-safe, the JIT lock is taken there). Kernels equal up
 * to symbol names share one entry across nodes, models and graphs. After
 * compile the model is read-only except for weight bindings, so executes may
 * run concurrently. Matmuls whose B is a constant or a weight read a copy
 * packed once (prepack.c): at compile for constants, at each bind for
 * weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "backend.h"
#include "cache_mem.h"
#include "capture.h"
#include "compile_order.h"
#include "device.h"
#include "pipeline.h"
#include "observe.h"
#include "placement.h"
#include "plan.h"
#include "prepack.h"
#include "rt.h"
#include "weight_source.h"
#include "pool.h"
#include "spread.h"
#include "tier_up.h"
#include "variants.h"


static void port_free(rt_port *p) {
  if (p->dim_text)
    for (int i = 0; i < p->type.rank; i++) free(p->dim_text[i]);
  free(p->dim_text);
  free(p->dim_static);
}

static int port_init(rt_port *p, const char *name, const ir_type *t, kiln_status *st) {
  p->name = name;
  p->type = *t;
  int r = t->rank > 0 ? t->rank : 0;
  p->dim_text = calloc((size_t)(r ? r : 1), sizeof *p->dim_text);
  p->dim_static = calloc((size_t)(r ? r : 1), sizeof *p->dim_static);
  if (!p->dim_text || !p->dim_static) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < r; i++) {
    size_t n = ir_dim_print(t->dims[i], NULL, 0);
    if (!(p->dim_text[i] = malloc(n + 1)))
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    ir_dim_print(t->dims[i], p->dim_text[i], n + 1);
    if (!ir_dim_is_const(t->dims[i], &p->dim_static[i])) p->dim_static[i] = -1;
  }
  return 0;
}

static char *type_text(const ir_type *t) {
  size_t n = ir_type_print(t, NULL, 0);
  char *s = malloc(n + 1);
  if (s) ir_type_print(t, s, n + 1);
  return s;
}

/* Weights (one entry per distinct name) and constants' data. */
static int collect_sources(kiln_model *m, kiln_status *st) {
  ir_graph *g = m->g;
  int nn = g->nnodes ? g->nnodes : 1;
  m->weight_of_node = malloc((size_t)nn * sizeof *m->weight_of_node);
  m->const_data = calloc((size_t)nn, sizeof *m->const_data);
  m->const_owned = calloc((size_t)nn, sizeof *m->const_owned);
  m->weights = calloc((size_t)nn, sizeof *m->weights);
  if (!m->weight_of_node || !m->const_data || !m->const_owned || !m->weights)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    m->weight_of_node[i] = -1;
    int nb = n->nin + n->nout + (ir_node_data_sym(n) >= 0); /* + the data symbol's slot */
    if (nb > m->max_node_bufs) m->max_node_bufs = nb;
    if (n->op == IR_OP_CONSTANT_EXTERNAL) {
      const char *name = ir_node_attr_string(n, "name", NULL);
      if (!name)
        return rt_err(st, KILN_ERR_VERIFY, "mo.constant.external (%%%s) has no name",
                      n->out[0]->name);
      int w = rt_name_map_get(&m->weight_index, name, strlen(name));
      if (w < 0) {
        w = m->nweights++; /* counted first so a half-built port is freed */
        if (port_init(&m->weights[w].port, name, &n->out[0]->type, st) < 0) return -1;
        const char *key = m->weights[w].port.name;
        if (rt_name_map_put(&m->weight_index, key, strlen(key), w) == -2)
          return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      } else if (!ir_type_equal(&m->weights[w].port.type, &n->out[0]->type)) {
        char *a = type_text(&m->weights[w].port.type), *b = type_text(&n->out[0]->type);
        rt_err(st, KILN_ERR_VERIFY, "weight '%s' is declared with two types: %s and %s", name,
               a ? a : "?", b ? b : "?");
        free(a);
        free(b);
        return -1;
      }
      int64_t align = ir_node_attr_int(n, "align", 1);
      if (align > m->weights[w].align) m->weights[w].align = align;
      m->weight_of_node[i] = w;
    } else if (n->op == IR_OP_CONSTANT) {
      const ir_attr *a = ir_node_attr(n, "value");
      const ir_type *t = &n->out[0]->type;
      int64_t numel;
      if (!a || a->kind != IR_ATTR_DENSE || !ir_type_static_numel(t, &numel) ||
          (ir_dtype)a->u.dense.dtype != t->dtype)
        return rt_err(st, KILN_ERR_VERIFY, "mo.constant (%%%s): value does not match its type",
                      n->out[0]->name);
      size_t es = ir_dtype_size(t->dtype);
      if (a->u.dense.numel == numel) {
        m->const_data[i] = a->u.dense.data;
      } else if (a->u.dense.numel == 1) { /* splat: expand once */
        char *p = rt_aligned_alloc((size_t)numel * es);
        if (!p) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory expanding a constant");
        for (int64_t k = 0; k < numel; k++) memcpy(p + (size_t)k * es, a->u.dense.data, es);
        m->const_data[i] = p;
        m->const_owned[i] = true;
      } else {
        return rt_err(st, KILN_ERR_VERIFY,
                      "mo.constant (%%%s): value has %lld elements, its type %lld",
                      n->out[0]->name, (long long)a->u.dense.numel, (long long)numel);
      }
    }
  }
  return 0;
}

int rt_model_add_weight(kiln_model *m, const char *name, const ir_type *t, int64_t align,
                        kiln_status *st) {
  rt_weight *v = realloc(m->weights, (size_t)(m->nweights + 1) * sizeof *v);
  if (!v) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  m->weights = v;
  rt_weight *w = &m->weights[m->nweights++];
  memset(w, 0, sizeof *w);
  w->align = align;
  if (port_init(&w->port, name, t, st) < 0) return -1;
  if (rt_name_map_put(&m->weight_index, name, strlen(name), m->nweights - 1) == -2)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  return 0;
}

static int collect_ports(kiln_model *m, kiln_status *st) {
  ir_graph *g = m->g;
  m->inputs = calloc((size_t)(g->ninputs ? g->ninputs : 1), sizeof *m->inputs);
  m->outputs = calloc((size_t)(g->noutputs ? g->noutputs : 1), sizeof *m->outputs);
  if (!m->inputs || !m->outputs) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < g->ninputs; i++) {
    const char *nm = g->input_names && g->input_names[i] ? g->input_names[i] : g->inputs[i]->name;
    m->ninputs = i + 1;
    if (port_init(&m->inputs[i], nm, &g->inputs[i]->type, st) < 0) return -1;
  }
  for (int i = 0; i < g->noutputs; i++) {
    const char *nm =
        g->output_names && g->output_names[i] ? g->output_names[i] : g->outputs[i]->name;
    m->noutputs = i + 1;
    if (port_init(&m->outputs[i], nm, &g->outputs[i]->type, st) < 0) return -1;
  }
  return 0;
}

/* Kernel of node i through the pipeline (the context's caches) at `mode`
 * (cache_mem.h: RT_GET_FULL_CACHED leaves m->kernels[i] NULL on a miss);
 * 0 or -1 with st filled. Safe to run for different nodes of m at once
 * (the cache compiles in parallel, test_cache_mem). */
static int compile_kernel(kiln_model *m, int i, rt_get_mode mode, kiln_status *st) {
  rt_target t;
  rt_target_host(&t, m->ctx);
  rt_host_kernel k;
  int rc = rt_pipeline_compile_host_mode(&t, m->g, i, NULL, mode, &k, st);
  if (rc < 0 && mode == RT_GET_QUICK) { /* the full pipeline may still build it */
    mode = RT_GET_FULL;
    rc = rt_pipeline_compile_host_mode(&t, m->g, i, NULL, mode, &k, st);
  }
  if (rc < 0) return -1;
  m->kentries[i] = k.entry;
  m->kernels[i] = k.fn;
  m->ksym_map[i] = k.sym_map;
  m->knsyms[i] = k.nsyms;
  m->kquick[i] = k.fn && mode == RT_GET_QUICK;
  return 0;
}

/* The model's kernels, compiled as one job split like a kernel
 * (rt_pool_run): part p of P compiles entries [n p / P, n (p + 1) / P) of
 * nodes, each into its own status, all of them even after an error (so the
 * error reported does not depend on how the job was split). */
typedef struct compile_job {
  kiln_model *m;
  const int *nodes; /* the nodes that get a kernel, GEMMs first */
  int n;
  rt_get_mode mode;
  kiln_status *sts; /* n statuses, one per entry of nodes */
} compile_job;

static int compile_item(void *arg, int k) {
  compile_job *j = arg;
  return compile_kernel(j->m, j->nodes[k], j->mode, &j->sts[k]);
}

static int32_t compile_part(void *const *args, const int64_t *syms, int64_t part,
                            int64_t nparts) {
  (void)syms;
  compile_job *j = args[0];
  int lo = (int)(part * j->n / nparts), hi = (int)((part + 1) * j->n / nparts);
  if (lo >= hi) return 0;
  int32_t rc = 0;
  for (int k = lo; k < hi; k++)
    if (compile_kernel(j->m, j->nodes[k], j->mode, &j->sts[k]) < 0) rc = 1;
  return rc;
}

/* Every node's kernel but the sources' and the aliases'. First, when the
 * context builds quick kernels first (tier_up.c), the ones its caches hold
 * at FULL; then the rest: at QUICK when there are enough of them (their
 * FULL rebuild is queued), else at FULL. With a GEMM among several to
 * compile (a static GEMM inlines the template at O3: most of a cold
 * compile) and a context of several threads, they compile on its pool,
 * GEMMs first. That starts the pool's workers, which a model with a GEMM
 * would start at its first split execute anyway; a model without one
 * compiles in the calling thread and starts none (once a process has a
 * second thread, glibc's malloc takes its slower multi-threaded path: relu
 * execute 80 -> 185 ns, measured). The compile holds the pool: another
 * thread's execute on the context meanwhile runs its kernels unsplit.
 * Quick kernels, on a context of fewer threads than the CPUs (a service's
 * one thread per model): every CPU compiles, on threads that end with the
 * compile (rt_spread_run); the quick tier starts the compile thread for its
 * rebuild anyway, so no process that would stay single-threaded gets a
 * second thread from this. Quick kernels, on either path, are claimed
 * longest first with the nodes that share another's kernel last
 * (compile_order.h). The error reported is that of the first node in
 * graph order that failed. */
static int compile_kernels(kiln_model *m, kiln_status *st) {
  const ir_graph *g = m->g;
  size_t nn = (size_t)(g->nnodes ? g->nnodes : 1);
  m->kentries = calloc(nn, sizeof *m->kentries);
  m->ksym_map = calloc(nn, sizeof *m->ksym_map);
  m->knsyms = calloc(nn, sizeof *m->knsyms);
  m->kquick = calloc(nn, sizeof *m->kquick);
  int *nodes = malloc(nn * sizeof *nodes);
  kiln_status *sts = calloc(nn, sizeof *sts);
  if (!m->kentries || !m->ksym_map || !m->knsyms || !m->kquick || !nodes || !sts) {
    free(nodes);
    free(sts);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  int n = 0, ngemm = 0;
  for (int pass = 0; pass < 2; pass++) { /* GEMMs, then the rest, each in graph order */
    for (int i = 0; i < g->nnodes; i++) {
      const ir_node *nd = g->nodes[i];
      if (!rt_pipeline_has_kernel(g, nd)) continue;
      if ((ir_node_matmul(nd) != NULL) == (pass == 0)) nodes[n++] = i;
    }
    if (pass == 0) ngemm = n;
  }
  rt_get_mode mode = RT_GET_FULL;
  int todo = n; /* nodes[0 .. todo): still without a kernel */
  if (rt_tier_up_wanted(m, n)) {
    compile_job look = {m, nodes, n, RT_GET_FULL_CACHED, sts};
    void *args[1] = {&look};
    (void)compile_part(args, NULL, 0, 1);
    todo = 0;
    for (int k = 0; k < n; k++) { /* failed ones too: the compile below reports them */
      if (!m->kernels[nodes[k]]) nodes[todo++] = nodes[k];
      free(sts[k].msg);
    }
    memset(sts, 0, nn * sizeof *sts);
    ngemm = 0;
    for (int k = 0; k < todo; k++) ngemm += ir_node_matmul(g->nodes[nodes[k]]) != NULL;
    if (rt_tier_up_wanted(m, todo)) mode = RT_GET_QUICK;
  }
  compile_job job = {m, nodes, todo, mode, sts};
  void *args[1] = {&job};
  int cpus = mode == RT_GET_QUICK ? rt_spread_cpus() : 0, rc;
  if (mode == RT_GET_QUICK) /* items are claimed in order: the long ones first, duplicates last */
    rt_compile_order(g, nodes, todo);
  if (cpus > kiln_context_num_threads(m->ctx))
    rc = rt_spread_run(compile_item, &job, todo, cpus);
  else
    rc = (ngemm > 0 ? rt_pool_run(m->ctx, compile_part, args, todo)
                    : compile_part(args, NULL, 0, 1)) != 0 ? -1 : 0;
  int first = -1; /* the failed entry of the lowest node */
  for (int k = 0; k < todo; k++)
    if (sts[k].code != KILN_OK && (first < 0 || nodes[k] < nodes[first])) first = k;
  if (first >= 0) rt_err(st, sts[first].code, "%s", sts[first].msg ? sts[first].msg : "?");
  else if (rc < 0) rt_err(st, KILN_ERR_COMPILE, "graph @%s: compiling its kernels failed", g->name);
  for (int k = 0; k < todo; k++) free(sts[k].msg);
  free(sts);
  free(nodes);
  if (rc < 0 || first >= 0) return -1;
  return mode == RT_GET_QUICK ? rt_tier_up_start(m, st) : 0;
}

/* A model of g for ctx with nothing prepared yet: the clone only. */
static kiln_model *model_new(kiln_context *ctx, const kiln_graph *g, kiln_status *st) {
  kiln_model *m = calloc(1, sizeof *m);
  if (!m) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory compiling a model");
    return NULL;
  }
  m->ctx = ctx;
  m->be = &rt_backend_host;
  if (!(m->g = ir_graph_clone(g->ir))) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory copying graph @%s", g->ir->name);
    free(m);
    return NULL;
  }
  pthread_mutex_init(&m->life_lock, NULL);
  pthread_cond_init(&m->life_cv, NULL);
  atomic_fetch_add(&ctx->models, 1); /* kiln_model_free takes it back */
  return m;
}

/* What every model of a prepared graph has: ports, weights, constants'
 * data, the variant table. */
static int model_describe(kiln_model *m, kiln_status *st) {
  if (m->g->noutputs < 1)
    return rt_err(st, KILN_ERR_VERIFY, "graph @%s has no outputs", m->g->name);
  if (collect_ports(m, st) < 0 || collect_sources(m, st) < 0) return -1;
  /* a dim set from data has its bound until its node runs: no variant may
   * fold it (nor the symbols around it), so such a model never specializes */
  m->data_dims = ir_graph_has_data_syms(m->g);
  m->reads_dims = ir_graph_reads_dims(m->g);
  m->nsolve = ir_solve_nodes(m->g, NULL);
  if (m->nsolve > 0 && !(m->solve_nodes = malloc((size_t)m->nsolve * sizeof *m->solve_nodes)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory compiling the model");
  ir_solve_nodes(m->g, m->solve_nodes);
  if (m->g->nsyms > 0 && !m->data_dims &&
      !(m->variants = rt_variants_new())) /* variants.c */
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  return 0;
}

KILN_API kiln_model *kiln_model_compile(kiln_context *ctx, const kiln_graph *g, kiln_status *st) {
  if (!ctx || !g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_compile: %s is NULL",
           ctx ? "graph" : "context");
    return NULL;
  }
  double t0 = rt_now_ms();
  kiln_model *m = model_new(ctx, g, st);
  if (!m) return NULL;
  if (rt_flow_wanted(m->g)) { /* mo.if, mo.while, mo.call: regions run by the host */
    if (collect_ports(m, st) < 0 || rt_flow_compile(m, NULL, st) < 0) goto fail;
    m->compile_ms = rt_now_ms() - t0;
    rt_ok(st);
    return m;
  }
  /* custom kernels: their library's hash goes into the kernel text (keys) */
  rt_target target;
  rt_target_host(&target, ctx);
  if (rt_pipeline_prepare(m->g, &target, NULL, st) < 0) goto fail;
  if (rt_place_check_host(m->g, st) < 0) goto fail; /* values on a GPU: a device model's */
  if (model_describe(m, st) < 0 || rt_prepack_init(m, st) < 0 || rt_plan_aliases(m, st) < 0)
    goto fail;
  m->kernels = calloc((size_t)(m->g->nnodes ? m->g->nnodes : 1), sizeof *m->kernels);
  if (!m->kernels) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  if (compile_kernels(m, st) < 0) goto fail;
  if (!(m->work = malloc((size_t)(m->g->nnodes ? m->g->nnodes : 1) * sizeof *m->work))) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  for (int i = 0; i < m->g->nnodes; i++) /* pool.c: -1 when it depends on symbols */
    m->work[i] = rt_node_work(m->g, m->g->nodes[i], NULL);
  /* weights the graph carries (ONNX import): bound by name, the model holding
   * a reference to their memory; kiln_model_bind_weight later overrides */
  if (rt_wsrc_bind(m, g->wsrc, st) < 0) goto fail;
  if (rt_profile_init(m, st) < 0) goto fail;
  m->compile_ms = rt_now_ms() - t0;
  rt_observe_compiled(m, t0);
  rt_ok(st);
  return m;
fail:
  kiln_model_free(m);
  return NULL;
}

kiln_model *rt_model_compile_device(kiln_context *ctx, kiln_context *own_ctx, kiln_device *d,
                                    kiln_context *target_ctx, const kiln_graph *g,
                                    kiln_status *st) {
  double t0 = rt_now_ms();
  kiln_model *m = model_new(ctx, g, st);
  if (!m) {
    kiln_context_free(own_ctx);
    return NULL;
  }
  m->own_ctx = own_ctx;
  m->device = d;
  m->be = &rt_backend_simt;
  if (rt_flow_wanted(m->g)) { /* the host drives the regions, each a model on d (control.c) */
    if (collect_ports(m, st) < 0 || rt_flow_compile(m, target_ctx, st) < 0) {
      kiln_model_free(m);
      return NULL;
    }
    m->compile_ms = rt_now_ms() - t0;
    rt_ok(st);
    return m;
  }
  if (rt_dm_prepare(m, d, target_ctx, st) < 0 || model_describe(m, st) < 0 ||
      rt_dm_load(m, st) < 0 || rt_wsrc_bind(m, g->wsrc, st) < 0 ||
      rt_profile_init(m, st) < 0) {
    kiln_model_free(m);
    return NULL;
  }
  m->compile_ms = rt_now_ms() - t0;
  rt_observe_compiled(m, t0);
  rt_ok(st);
  return m;
}

KILN_API kiln_model *kiln_model_compile_on(kiln_context *ctx, kiln_device *d, const kiln_graph *g,
                                           kiln_status *st) {
  if (!ctx || !g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_compile_on: %s is NULL",
           ctx ? "graph" : "context");
    return NULL;
  }
  if (!d || kiln_device_get_kind(d) == KILN_DEVICE_CPU) return kiln_model_compile(ctx, g, st);
  return rt_model_compile_device(ctx, NULL, d, ctx, g, st);
}

KILN_API kiln_device *kiln_model_device(const kiln_model *m) { return m ? m->device : NULL; }

/* The host backend's state. */
static void host_free(kiln_model *m) {
  rt_captures_free(m); /* their variant references first */
  rt_prepack_free(m);
  rt_tier_up_free(m);
  if (m->kentries)
    for (int i = 0; i < m->g->nnodes; i++) rt_cache_mem_release(m->ctx->kcache, m->kentries[i]);
  if (m->ksym_map)
    for (int i = 0; i < m->g->nnodes; i++) free(m->ksym_map[i]);
  free(m->kentries);
  free(m->kquick);
  free(m->ksym_map);
  free(m->knsyms);
  free(m->kernels);
  free(m->work);
  rt_profile_free(m);
  free(atomic_load(&m->exec_scratch));
  free(atomic_load(&m->exec_arena));
  free(m->alias);
}

/* ---- lifetime ----
 * An execute enters by adding one to m->life and leaves by taking it back;
 * kiln_model_free sets RT_LIFE_FREEING, then waits until the executes that
 * were in flight have left. */

static void life_leave(kiln_model *m) {
  unsigned was = atomic_fetch_sub(&m->life, 1);
  if (was != (RT_LIFE_FREEING | 1u)) return;
  /* the last execute the free waits for: after the unlock, m is the free's */
  pthread_mutex_lock(&m->life_lock);
  m->drained = true;
  pthread_cond_signal(&m->life_cv);
  pthread_mutex_unlock(&m->life_lock);
}

/* 0, or -1 with st filled when m is being freed (the execute must not run). */
static int life_enter(kiln_model *m, const char *fn, kiln_status *st) {
  unsigned was = atomic_fetch_add(&m->life, 1);
  if (!(was & RT_LIFE_FREEING)) return 0;
  /* the free is still waiting for executes that entered before it (this
   * one counted while they ran, so the last to leave wakes it), unless the
   * caller started this execute after the free stopped waiting, which the
   * API forbids (runtime.h: m may be gone already) */
  life_leave(m);
  return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                "%s: the model is being freed (kiln_model_free has begun; no execute may start "
                "after it)", fn);
}

/* Wait until no execute runs on m; none starts afterwards (life_enter). */
static void life_drain(kiln_model *m) {
  unsigned was = atomic_fetch_or(&m->life, RT_LIFE_FREEING);
  if ((was & ~RT_LIFE_FREEING) == 0) return;
  pthread_mutex_lock(&m->life_lock);
  while (!m->drained) pthread_cond_wait(&m->life_cv, &m->life_lock);
  pthread_mutex_unlock(&m->life_lock);
}

KILN_API void kiln_model_free(kiln_model *m) {
  if (!m) return;
  life_drain(m);
  rt_variants_cancel(m); /* no background compile may run on a half-freed model */
  m->be->free(m); /* captures and plans hold variant references */
  rt_variants_free(m, m->variants);
  for (int i = 0; i < m->ninputs; i++) port_free(&m->inputs[i]);
  for (int i = 0; i < m->noutputs; i++) port_free(&m->outputs[i]);
  for (int i = 0; i < m->nweights; i++) {
    port_free(&m->weights[i].port);
    kiln_tensor_free(m->weights[i].owned);
  }
  if (m->const_owned)
    for (int i = 0; i < m->g->nnodes; i++)
      if (m->const_owned[i]) free(m->const_data[i]);
  free(m->inputs);
  free(m->outputs);
  free(m->weights);
  free(m->weight_of_node);
  free(m->solve_nodes);
  free(m->const_data);
  free(m->const_owned);
  ir_graph_free(m->g);
  rt_wsrc_release(m->wsrc); /* after everything that read the weights */
  rt_name_map_clear(&m->weight_index);
  pthread_mutex_destroy(&m->life_lock);
  pthread_cond_destroy(&m->life_cv);
  atomic_fetch_sub(&m->ctx->models, 1);
  kiln_context *own = m->own_ctx;
  free(m);
  kiln_context_free(own);
}

KILN_API double kiln_model_compile_ms(const kiln_model *m) { return m ? m->compile_ms : 0.0; }

/* ---- metadata ---- */
static const rt_port *in_port(const kiln_model *m, int i) {
  return m && i >= 0 && i < m->ninputs ? &m->inputs[i] : NULL;
}
static const rt_port *out_port(const kiln_model *m, int i) {
  return m && i >= 0 && i < m->noutputs ? &m->outputs[i] : NULL;
}
static const rt_port *w_port(const kiln_model *m, int i) {
  return m && i >= 0 && i < m->nweights ? &m->weights[i].port : NULL;
}
static const char *port_dim(const rt_port *p, int axis) {
  return p && axis >= 0 && axis < p->type.rank ? p->dim_text[axis] : NULL;
}
static int64_t port_dim_static(const rt_port *p, int axis) {
  return p && axis >= 0 && axis < p->type.rank ? p->dim_static[axis] : -1;
}

KILN_API int kiln_model_num_inputs(const kiln_model *m) { return m ? m->ninputs : -1; }
KILN_API int kiln_model_num_outputs(const kiln_model *m) { return m ? m->noutputs : -1; }
KILN_API int kiln_model_num_weights(const kiln_model *m) { return m ? m->nweights : -1; }

KILN_API const char *kiln_model_input_name(const kiln_model *m, int i) {
  const rt_port *p = in_port(m, i);
  return p ? p->name : NULL;
}
KILN_API const char *kiln_model_output_name(const kiln_model *m, int i) {
  const rt_port *p = out_port(m, i);
  return p ? p->name : NULL;
}
KILN_API const char *kiln_model_weight_name(const kiln_model *m, int i) {
  const rt_port *p = w_port(m, i);
  return p ? p->name : NULL;
}
KILN_API kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i) {
  const rt_port *p = in_port(m, i);
  return p ? (kiln_dtype)p->type.dtype : KILN_DTYPE_COUNT;
}
KILN_API kiln_dtype kiln_model_output_dtype(const kiln_model *m, int i) {
  const rt_port *p = out_port(m, i);
  return p ? (kiln_dtype)p->type.dtype : KILN_DTYPE_COUNT;
}
KILN_API kiln_dtype kiln_model_weight_dtype(const kiln_model *m, int i) {
  const rt_port *p = w_port(m, i);
  return p ? (kiln_dtype)p->type.dtype : KILN_DTYPE_COUNT;
}
KILN_API int kiln_model_input_rank(const kiln_model *m, int i) {
  const rt_port *p = in_port(m, i);
  return p ? p->type.rank : -1;
}
KILN_API int kiln_model_input_is_buffer(const kiln_model *m, int i) {
  const rt_port *p = in_port(m, i);
  return p ? p->type.kind == IR_TYPE_BUFFER : -1;
}
KILN_API int kiln_model_output_rank(const kiln_model *m, int i) {
  const rt_port *p = out_port(m, i);
  return p ? p->type.rank : -1;
}
KILN_API int kiln_model_weight_rank(const kiln_model *m, int i) {
  const rt_port *p = w_port(m, i);
  return p ? p->type.rank : -1;
}
KILN_API const char *kiln_model_input_dim(const kiln_model *m, int i, int axis) {
  return port_dim(in_port(m, i), axis);
}
KILN_API const char *kiln_model_output_dim(const kiln_model *m, int i, int axis) {
  return port_dim(out_port(m, i), axis);
}
KILN_API const char *kiln_model_weight_dim(const kiln_model *m, int i, int axis) {
  return port_dim(w_port(m, i), axis);
}
KILN_API int64_t kiln_model_input_dim_static(const kiln_model *m, int i, int axis) {
  return port_dim_static(in_port(m, i), axis);
}
KILN_API int64_t kiln_model_output_dim_static(const kiln_model *m, int i, int axis) {
  return port_dim_static(out_port(m, i), axis);
}

KILN_API int kiln_model_input_index(const kiln_model *m, const char *name) {
  for (int i = 0; m && name && i < m->ninputs; i++)
    if (strcmp(m->inputs[i].name, name) == 0) return i;
  return -1;
}
KILN_API int kiln_model_output_index(const kiln_model *m, const char *name) {
  for (int i = 0; m && name && i < m->noutputs; i++)
    if (strcmp(m->outputs[i].name, name) == 0) return i;
  return -1;
}

/* Index of weight `name`, or -1. */
static int weight_index(const kiln_model *m, const char *name) {
  return m && name ? rt_name_map_get(&m->weight_index, name, strlen(name)) : -1;
}

/* "a, b, c" of the weight names into a malloc'd string (NULL on OOM). */
static char *weight_list(const kiln_model *m) {
  size_t n = 1;
  for (int i = 0; i < m->nweights; i++) n += strlen(m->weights[i].port.name) + 2;
  char *s = malloc(n + 8);
  if (!s) return NULL;
  s[0] = 0;
  if (m->nweights == 0) strcpy(s, "none");
  for (int i = 0; i < m->nweights; i++) {
    if (i) strcat(s, ", ");
    strcat(s, m->weights[i].port.name);
  }
  return s;
}

KILN_API int kiln_model_bind_weight(kiln_model *m, const char *name, const kiln_tensor *t,
                                    kiln_status *st) {
  if (!m || !name || !t)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_bind_weight: %s is NULL",
                  !m ? "model" : !name ? "name" : "tensor");
  int w = weight_index(m, name);
  if (w < 0) {
    char *list = weight_list(m);
    rt_err(st, KILN_ERR_NOT_FOUND, "model has no weight '%s' (weights: %s)", name,
           list ? list : "?");
    free(list);
    return -1;
  }
  const rt_port *p = &m->weights[w].port;
  if ((ir_dtype)t->dtype != p->type.dtype)
    return rt_err(st, KILN_ERR_SHAPE, "weight '%s': expected dtype %s, got %s", name,
                  ir_dtype_name(p->type.dtype), kiln_dtype_name(t->dtype));
  if (t->rank != p->type.rank)
    return rt_err(st, KILN_ERR_SHAPE, "weight '%s': expected rank %d, got %d", name, p->type.rank,
                  t->rank);
  for (int a = 0; a < t->rank; a++)
    if (p->dim_static[a] >= 0 && p->dim_static[a] != t->shape[a])
      return rt_err(st, KILN_ERR_SHAPE, "weight '%s': axis %d expected %lld, got %lld", name, a,
                    (long long)p->dim_static[a], (long long)t->shape[a]);
  const void *data = kiln_tensor_data(t);
  int64_t align = m->weights[w].align;
  if (align > 1 && data && (uintptr_t)data % (uint64_t)align != 0)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "weight '%s': its data at %p is not aligned to %lld bytes (its align)", name,
                  data, (long long)align);
  if (m->be->bind_weight(m, w, t, st) < 0) return -1;
  kiln_tensor_free(m->weights[w].owned); /* a tensor taken before */
  m->weights[w].owned = NULL;
  rt_ok(st);
  return 0;
}

KILN_API int kiln_model_weight_needs_data(const kiln_model *m, const char *name) {
  int w = weight_index(m, name);
  if (w < 0) return -1;
  if (m->device) return 0;
  return rt_prepack_covers(m, w) ? 0 : 1;
}

KILN_API int kiln_model_take_weight(kiln_model *m, const char *name, kiln_tensor *t,
                                    kiln_status *st) {
  if (kiln_model_bind_weight(m, name, t, st) < 0) return -1; /* t is still the caller's */
  int w = weight_index(m, name); /* bound: it exists */
  if (m->device) { /* copied to the device at bind: no host copy is needed */
    kiln_tensor_free(t);
    return 0;
  }
  kiln_tensor *keep = t;
  if (rt_prepack_covers(m, w)) { /* the packed copy is all the model reads */
    kiln_tensor *h = rt_tensor_header(t->dtype, t->rank, t->shape, NULL);
    if (h) {
      kiln_tensor_free(t);
      keep = h;
    }
  }
  m->weights[w].bound = keep;
  m->weights[w].owned = keep;
  return 0;
}

int rt_model_bind_weight_transient(kiln_model *m, const char *name, const kiln_tensor *t,
                                   kiln_status *st) {
  int w = weight_index(m, name);
  if (w < 0 || m->device || !rt_prepack_covers(m, w)) { /* the model keeps a copy of t */
    kiln_tensor *c = rt_tensor_alloc(t->dtype, t->rank, t->shape, st);
    if (!c) return -1;
    if (c->nbytes) memcpy(c->data, t->data, c->nbytes);
    if (kiln_model_take_weight(m, name, c, st) < 0) {
      kiln_tensor_free(c); /* still ours on failure */
      return -1;
    }
    return 0;
  }
  kiln_tensor *h = rt_tensor_header(t->dtype, t->rank, t->shape, st);
  if (!h) return -1;
  if (kiln_model_bind_weight(m, name, t, st) < 0) {
    kiln_tensor_free(h);
    return -1;
  }
  m->weights[w].bound = h; /* the packed copy is all the model reads: t may go */
  m->weights[w].owned = h;
  return 0;
}

int64_t rt_model_weight_align(const kiln_model *m, const char *name) {
  int w = weight_index(m, name);
  return w < 0 ? -1 : m->weights[w].align;
}

static int host_bind_weight(kiln_model *m, int w, const kiln_tensor *t, kiln_status *st) {
  if (t->device)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "weight '%s' lives on %s: a CPU model binds host tensors (kiln_tensor_copy_to "
                  "copies it to the host)",
                  m->weights[w].port.name, rt_tensor_device_label(t));
  if (rt_prepack_bind(m, w, t, st) < 0) return -1; /* a packed copy for the GEMMs */
  m->weights[w].bound = t;
  return 0;
}

/* ---- executes: the backend's ----
 * ctx->busy counts the executes running (capture and replay execute too)
 * and ctx->execs those started: the background compile waits while they
 * hold the CPUs, or keep coming (variants.c). */
static void busy_enter(kiln_context *ctx) {
  atomic_fetch_add_explicit(&ctx->busy, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&ctx->execs, 1, memory_order_relaxed);
}

static void busy_leave(kiln_context *ctx) {
  atomic_fetch_sub_explicit(&ctx->busy, 1, memory_order_relaxed);
}

KILN_API int kiln_model_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                                kiln_tensor **outputs, int noutputs, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_execute: model is NULL");
  if (life_enter(m, "kiln_model_execute", st) < 0) return -1;
  busy_enter(m->ctx);
  bool watch = atomic_load_explicit(&m->ctx->watch, memory_order_relaxed) != 0;
  int64_t t0 = watch ? rt_now_ns() : 0;
  int rc = m->be->execute(m, inputs, ninputs, outputs, noutputs, st);
  if (watch) rt_observe_execute(m, "execute", t0, rt_now_ns(), rc); /* observe.c */
  busy_leave(m->ctx);
  life_leave(m);
  return rc;
}

KILN_API int kiln_model_capture(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                                int ninputs, kiln_tensor **outputs, int noutputs,
                                kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_capture: model is NULL");
  if (m->data_dims || m->reads_dims) /* a replay reuses the captured shapes; data decides them */
    return rt_err(st, KILN_ERR_UNSUPPORTED,
                  "graph @%s takes dims from data (mo.nonzero, mo.reshape with a shape operand, "
                  "...): a replay could not reuse its shapes, so it cannot be captured; execute "
                  "it instead", m->g->name);
  if (life_enter(m, "kiln_model_capture", st) < 0) return -1;
  busy_enter(m->ctx);
  int rc = m->be->capture(m, key, inputs, ninputs, outputs, noutputs, st);
  busy_leave(m->ctx);
  life_leave(m);
  return rc;
}

KILN_API int kiln_model_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                               int ninputs, kiln_tensor **outputs, int noutputs,
                               kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_replay: model is NULL");
  if (life_enter(m, "kiln_model_replay", st) < 0) return -1;
  busy_enter(m->ctx);
  bool watch = atomic_load_explicit(&m->ctx->watch, memory_order_relaxed) != 0;
  int64_t t0 = watch ? rt_now_ns() : 0;
  int rc = m->be->replay(m, key, inputs, ninputs, outputs, noutputs, st);
  if (watch) rt_observe_execute(m, "replay", t0, rt_now_ns(), rc); /* counted as an execute */
  busy_leave(m->ctx);
  life_leave(m);
  return rc;
}

KILN_API int kiln_model_verify_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                                      int ninputs, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_verify_replay: model is NULL");
  if (life_enter(m, "kiln_model_verify_replay", st) < 0) return -1;
  int rc = m->be->verify_replay(m, key, inputs, ninputs, st);
  life_leave(m);
  return rc;
}

KILN_API int kiln_model_release(kiln_model *m, uint64_t key, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_release: model is NULL");
  if (life_enter(m, "kiln_model_release", st) < 0) return -1;
  int rc = m->be->release(m, key, st);
  life_leave(m);
  return rc;
}

/* ---- for the CLI ---- */
int rt_model_num_symbols(const kiln_model *m) { return m ? m->g->nsyms : 0; }

const char *rt_model_symbol_name(const kiln_model *m, int i) {
  return m && i >= 0 && i < m->g->nsyms ? m->g->syms[i] : NULL;
}

int rt_model_port_shape(const kiln_model *m, bool is_weight, int i, const int64_t *syms,
                        const bool *known, int64_t *shape, int *missing, kiln_status *st) {
  const rt_port *p = is_weight ? w_port(m, i) : in_port(m, i);
  if (!p)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "no %s %d", is_weight ? "weight" : "input", i);
  char what[160];
  if (is_weight) snprintf(what, sizeof what, "weight '%.100s'", p->name);
  else snprintf(what, sizeof what, "input %d (%.100s)", i, p->name);
  for (int a = 0; a < p->type.rank; a++) {
    for (int s = 0; s < m->g->nsyms; s++)
      if (!known[s] && ir_dim_uses_sym(p->type.dims[a], s)) {
        if (missing) *missing = s;
        return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                      "%s: symbolic dim '%s' has no value (axis %d is %s)",
                      what, m->g->syms[s], a, p->dim_text[a]);
      }
    ir_dim_err err = {0};
    if (!ir_dim_eval(p->type.dims[a], syms, &shape[a], &err))
      return rt_err(st, KILN_ERR_SHAPE, "%s: axis %d (%s): %s", what, a, p->dim_text[a], err.msg);
    if (shape[a] < 0)
      return rt_err(st, KILN_ERR_SHAPE, "%s: axis %d (%s) evaluates to %lld", what, a,
                    p->dim_text[a], (long long)shape[a]);
  }
  rt_ok(st);
  return 0;
}

int32_t rt_model_run_kernel(const kiln_model *m, int node, void *const *args, const int64_t *syms) {
  const int *map = m->ksym_map[node];
  /* acquire: a FULL kernel swapped in by the compile thread (tier_up.c) */
  jit_kernel_fn fn = __atomic_load_n(&m->kernels[node], __ATOMIC_ACQUIRE);
  if (!map) return rt_kernel_call(m, node, fn, args, syms, syms);
  int64_t ks[RT_KERNEL_MAX_SYMS];
  for (int j = 0, n = m->knsyms[node]; j < n; j++) ks[j] = syms[map[j]];
  return rt_kernel_call(m, node, fn, args, ks, syms);
}

/* ---- the host backend (backend.h) ---- */
/* A kernel a bound shape cannot speed up (a GEMM: pipeline.h) serves
 * every variant as it is. */
static int host_node_syms(const kiln_model *m, int node) {
  if (!m->kentries[node]) return -1;
  return rt_pipeline_host_specializes(m->g, node) ? m->knsyms[node] : 0;
}

static int host_compile_bound(kiln_model *m, int node, const rt_binding *b, rt_code *c,
                              kiln_counter *counter, double *ms, kiln_status *st) {
  rt_target target;
  rt_target_host(&target, m->ctx);
  rt_host_kernel k;
  if (rt_pipeline_compile_host(&target, m->g, node, b, &k, st) < 0) return -1;
  *c = (rt_code){(void *)k.fn, k.entry, k.sym_map, k.nsyms};
  *counter = k.outcome == RT_CACHE_COMPILED      ? KILN_COUNTER_COMPILES
             : k.outcome == RT_CACHE_BACKING_HIT ? KILN_COUNTER_DISK_HITS
                                                 : KILN_COUNTER_KERNEL_HITS;
  *ms = k.ms;
  return 0;
}

static void host_code_free(kiln_model *m, rt_code *c) {
  rt_cache_mem_release(m->ctx->kcache, c->handle);
  free(c->sym_map);
  *c = (rt_code){0};
}

const rt_backend rt_backend_host = {
    .node_syms = host_node_syms,
    .compile_bound = host_compile_bound,
    .code_free = host_code_free,
    .bind_weight = host_bind_weight,
    .execute = rt_host_execute,
    .capture = rt_host_capture,
    .replay = rt_host_replay,
    .verify_replay = rt_host_verify_replay,
    .release = rt_host_release,
    .free = host_free,
};
