/* observe.c - per-kernel profiles and trace spans of executes (observe.h;
 * the public contract is kiln_model_profile's in kiln/runtime.h).
 *
 * Counters are per node of the compiled graph, relaxed atomics (several
 * executes of one model may run at once); a snapshot reads them without
 * stopping anyone, so a row may be one call ahead of another. Bytes are
 * the node's operands and results under the execute's symbols; floating-
 * point operations are counted for matmuls (2 M N K), alone or inside a
 * fused group, and left 0 for every other op (its row reports bytes). */
#include "observe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dim.h"
#include "backend.h"
#include "obs_label.h"
#include "pool.h"

typedef struct rt_prof_node {
  _Atomic uint64_t calls, ns, bytes, flops;
} rt_prof_node;

struct rt_profile {
  atomic_int on;
  _Atomic uint64_t executes, exec_ns;
  rt_prof_node copies[RT_COPY_KINDS]; /* a device model's copies (flops unused) */
  int n;
  rt_prof_node nodes[];
};

struct kiln_profile {
  int n;
  uint64_t executes;
  double execute_ms;
  kiln_profile_row *rows;
  char *strings; /* the rows' kernel and shape texts */
};

int rt_profile_init(kiln_model *m, kiln_status *st) {
  int n = m->g->nnodes;
  m->prof = calloc(1, sizeof *m->prof + (size_t)n * sizeof(rt_prof_node));
  if (!m->prof) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  m->prof->n = n;
  return 0;
}

void rt_profile_free(kiln_model *m) {
  if (!m->prof) return;
  if (atomic_exchange(&m->prof->on, 0)) atomic_fetch_sub(&m->ctx->watch, 1);
  free(m->prof);
  m->prof = NULL;
}

/* Elements of t under gsyms (0 when a dim does not evaluate). */
static int64_t elements(const ir_type *t, const int64_t *gsyms) {
  int64_t n = 1;
  for (int a = 0; a < t->rank; a++) {
    int64_t d;
    ir_dim_err err;
    if (!ir_dim_is_const(t->dims[a], &d) && (!gsyms || !ir_dim_eval(t->dims[a], gsyms, &d, &err)))
      return 0;
    if (d <= 0) return 0;
    n *= d;
  }
  return n;
}

static uint64_t node_bytes(const ir_node *n, const int64_t *gsyms) {
  uint64_t b = 0;
  for (int j = 0; j < n->nin; j++)
    b += (uint64_t)elements(&n->in[j]->type, gsyms) * ir_dtype_size(n->in[j]->type.dtype);
  for (int j = 0; j < n->nout; j++)
    b += (uint64_t)elements(&n->out[j]->type, gsyms) * ir_dtype_size(n->out[j]->type.dtype);
  return b;
}

static uint64_t matmul_flops(const ir_node *n, const int64_t *gsyms) {
  if (n->op != IR_OP_MATMUL || n->nin < 1 || n->in[0]->type.rank < 1) return 0;
  const ir_type *a = &n->in[0]->type;
  int64_t k;
  ir_dim_err err;
  const ir_dim *kd = a->dims[a->rank - 1];
  if (!ir_dim_is_const(kd, &k) && (!gsyms || !ir_dim_eval(kd, gsyms, &k, &err))) return 0;
  return 2 * (uint64_t)elements(&n->out[0]->type, gsyms) * (uint64_t)(k > 0 ? k : 0);
}

static uint64_t node_flops(const ir_node *n, const int64_t *gsyms) {
  if (!n->body) return matmul_flops(n, gsyms);
  uint64_t f = 0;
  for (int j = 0; j < n->body->nnodes; j++) f += matmul_flops(n->body->nodes[j], gsyms);
  return f;
}

/* "[4, 128] f32": t with its dims evaluated under gsyms. */
static const char *shape_now(const ir_type *t, const int64_t *gsyms, char *buf, size_t cap) {
  size_t k = 0;
  k += (size_t)snprintf(buf, cap, "[");
  for (int a = 0; a < t->rank && k < cap; a++) {
    int64_t d = -1;
    ir_dim_err err;
    if (!ir_dim_is_const(t->dims[a], &d) && (!gsyms || !ir_dim_eval(t->dims[a], gsyms, &d, &err)))
      d = -1;
    k += (size_t)snprintf(buf + k, cap - k, "%s%lld", a ? ", " : "", (long long)d);
  }
  if (k < cap) snprintf(buf + k, cap - k, "] %s", ir_dtype_name(t->dtype));
  return buf;
}

bool rt_profile_on(const kiln_model *m) {
  const struct rt_profile *pf = m->prof;
  return pf && (atomic_load_explicit(&pf->on, memory_order_relaxed) ||
                atomic_load_explicit(&m->ctx->profile_all, memory_order_relaxed));
}

void rt_profile_add(const kiln_model *m, int node, int64_t ns, const int64_t *gsyms) {
  const ir_node *n = m->g->nodes[node];
  rt_prof_node *c = &m->prof->nodes[node];
  atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->ns, (uint64_t)(ns > 0 ? ns : 0), memory_order_relaxed);
  atomic_fetch_add_explicit(&c->bytes, node_bytes(n, gsyms), memory_order_relaxed);
  atomic_fetch_add_explicit(&c->flops, node_flops(n, gsyms), memory_order_relaxed);
}

void rt_profile_add_copy(const kiln_model *m, rt_copy_kind kind, int64_t ns, uint64_t bytes) {
  rt_prof_node *c = &m->prof->copies[kind];
  atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->ns, (uint64_t)(ns > 0 ? ns : 0), memory_order_relaxed);
  atomic_fetch_add_explicit(&c->bytes, bytes, memory_order_relaxed);
}

const char *rt_obs_shape_now(const ir_type *t, const int64_t *gsyms, char *buf, size_t cap) {
  return shape_now(t, gsyms, buf, cap);
}

int32_t rt_observe_kernel(const kiln_model *m, int node, jit_kernel_fn fn, void *const *args,
                          const int64_t *ksyms, const int64_t *gsyms) {
  bool prof = rt_profile_on(m);
  bool tr = rt_trace_on(m->ctx->trace);
  if (!prof && !tr) return rt_kernel_call_labeled(m, node, fn, args, ksyms, gsyms, NULL);
  char label[256];
  if (tr) rt_obs_node_ops(m->g, node, label, sizeof label);
  int64_t t0 = rt_now_ns();
  int32_t rc = rt_kernel_call_labeled(m, node, fn, args, ksyms, gsyms, tr ? label : NULL);
  int64_t t1 = rt_now_ns();
  const ir_node *n = m->g->nodes[node];
  if (prof) rt_profile_add(m, node, t1 - t0, gsyms);
  if (tr) {
    char shape[256], esc[300], a[400];
    shape_now(&n->out[0]->type, gsyms, shape, sizeof shape);
    snprintf(a, sizeof a, "\"node\":%d,\"shape\":\"%s\",\"status\":%d", node,
             rt_trace_escape(shape, esc, sizeof esc), (int)rc);
    rt_trace_span(m->ctx->trace, "kernel", label, t0, t1, a);
  }
  return rc;
}

void rt_observe_execute(const kiln_model *m, const char *what, int64_t t0, int64_t t1, int rc) {
  struct rt_profile *pf = m->prof;
  if (rt_profile_on(m)) {
    atomic_fetch_add_explicit(&pf->executes, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pf->exec_ns, (uint64_t)(t1 - t0), memory_order_relaxed);
  }
  if (rt_trace_on(m->ctx->trace)) {
    char name[200], esc[220], a[300];
    snprintf(name, sizeof name, "%s @%s", what, m->g->name ? m->g->name : "?");
    snprintf(a, sizeof a, "\"graph\":\"%s\",\"ok\":%s",
             rt_trace_escape(m->g->name ? m->g->name : "?", esc, sizeof esc),
             rc == 0 ? "true" : "false");
    rt_trace_span(m->ctx->trace, "execute", name, t0, t1, a);
  }
}

/* Whether node i of m has a kernel (either backend: backend.h). */
static bool has_kernel(const kiln_model *m, int i) { return m->be->node_syms(m, i) >= 0; }

void rt_observe_compiled(const kiln_model *m, double t0_ms) {
  const char *name = m->g->name ? m->g->name : "?";
  int nk = 0;
  for (int i = 0; i < m->g->nnodes; i++) nk += has_kernel(m, i);
  const char *where = m->device ? kiln_device_label(m->device) : NULL;
  rt_logf(&m->ctx->log, KILN_LOG_INFO, "compiled model @%s%s%s: %d kernel%s in %.1f ms", name,
          where ? " for " : "", where ? where : "", nk, nk == 1 ? "" : "s", m->compile_ms);
  if (rt_trace_on(m->ctx->trace)) {
    char ev[200], esc[160], a[300];
    snprintf(ev, sizeof ev, "compile model @%s", name);
    snprintf(a, sizeof a, "\"graph\":\"%s\",\"kernels\":%d,\"target\":\"%s\"",
             rt_trace_escape(name, esc, sizeof esc), nk, where ? where : "cpu");
    rt_trace_span(m->ctx->trace, "compile", ev, (int64_t)(t0_ms * 1e6), rt_now_ns(), a);
  }
}

/* ---- public ---- */

static int no_profile(const kiln_model *m, const char *fn, kiln_status *st) {
  return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: graph @%s runs control flow (mo.if, mo.while, "
                "mo.call) on the host: its regions are models of their own and it has no "
                "per-kernel profile", fn, m->g->name);
}

static void zero(rt_prof_node *c) {
  atomic_store(&c->calls, 0);
  atomic_store(&c->ns, 0);
  atomic_store(&c->bytes, 0);
  atomic_store(&c->flops, 0);
}

KILN_API int kiln_model_set_profile(kiln_model *m, int on, kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_set_profile: model is NULL");
  if (!m->prof) return no_profile(m, "kiln_model_set_profile", st);
  if (on) {
    for (int i = 0; i < m->prof->n; i++) zero(&m->prof->nodes[i]);
    for (int k = 0; k < RT_COPY_KINDS; k++) zero(&m->prof->copies[k]);
    atomic_store(&m->prof->executes, 0);
    atomic_store(&m->prof->exec_ns, 0);
  }
  int was = atomic_exchange(&m->prof->on, on ? 1 : 0);
  atomic_fetch_add(&m->ctx->watch, (on ? 1 : 0) - was);
  rt_ok(st);
  return 0;
}

KILN_API int kiln_context_set_profile(kiln_context *ctx, int on, kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_profile: context is NULL");
  int was = atomic_exchange(&ctx->profile_all, on ? 1 : 0);
  atomic_fetch_add(&ctx->watch, (on ? 1 : 0) - was);
  rt_ok(st);
  return 0;
}

static void fill_counts(kiln_profile_row *row, const rt_prof_node *c) {
  row->calls = atomic_load_explicit(&c->calls, memory_order_relaxed);
  row->total_ms = (double)atomic_load_explicit(&c->ns, memory_order_relaxed) / 1e6;
  row->mean_ms = row->calls ? row->total_ms / (double)row->calls : 0;
  row->gflop = (double)atomic_load_explicit(&c->flops, memory_order_relaxed) / 1e9;
  row->gbyte = (double)atomic_load_explicit(&c->bytes, memory_order_relaxed) / 1e9;
}

KILN_API kiln_profile *kiln_model_profile(const kiln_model *m, kiln_status *st) {
  if (!m) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_model_profile: model is NULL");
    return NULL;
  }
  if (!m->prof) {
    no_profile(m, "kiln_model_profile", st);
    return NULL;
  }
  const ir_graph *g = m->g;
  int nk = 0;
  for (int i = 0; i < g->nnodes; i++) nk += has_kernel(m, i);
  /* a device model's copies too, and the rest of its executes' time */
  int nrows = nk + (m->device ? RT_COPY_KINDS + 1 : 0);
  enum { TEXT = 512 };
  kiln_profile *p = calloc(1, sizeof *p);
  if (p) p->rows = calloc((size_t)(nrows ? nrows : 1), sizeof *p->rows);
  if (p) p->strings = malloc((size_t)(nk ? nk : 1) * 2 * TEXT);
  if (!p || !p->rows || !p->strings) {
    kiln_profile_free(p);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  double sum = 0;
  int r = 0;
  for (int i = 0; i < g->nnodes; i++) {
    if (!has_kernel(m, i)) continue;
    kiln_profile_row *row = &p->rows[r];
    char *kt = p->strings + (size_t)r * 2 * TEXT, *sh = kt + TEXT;
    row->node = i;
    row->kernel = rt_obs_node_ops(g, i, kt, TEXT);
    row->shape = rt_obs_type_text(&g->nodes[i]->out[0]->type, sh, TEXT);
    fill_counts(row, &m->prof->nodes[i]);
    sum += row->total_ms;
    r++;
  }
  static const char *const copy_names[RT_COPY_KINDS] = {"copy in", "copy out"};
  static const char *const copy_what[RT_COPY_KINDS] = {"inputs to the device",
                                                        "outputs from the device"};
  for (int k = 0; m->device && k < RT_COPY_KINDS; k++, r++) {
    kiln_profile_row *row = &p->rows[r];
    row->node = -1;
    row->kernel = copy_names[k];
    row->shape = copy_what[k];
    fill_counts(row, &m->prof->copies[k]);
    sum += row->total_ms;
  }
  p->executes = atomic_load(&m->prof->executes);
  p->execute_ms = (double)atomic_load(&m->prof->exec_ns) / 1e6;
  if (m->device) { /* kernels run on the device's clock: launch and wait costs are the rest */
    kiln_profile_row *row = &p->rows[r++];
    row->node = -1;
    row->kernel = "launches and waits";
    row->shape = "host time outside kernels and copies";
    row->calls = p->executes;
    row->total_ms = p->execute_ms > sum ? p->execute_ms - sum : 0;
    row->mean_ms = row->calls ? row->total_ms / (double)row->calls : 0;
    sum += row->total_ms;
  }
  p->n = r;
  for (int i = 0; i < r; i++) p->rows[i].share = sum > 0 ? p->rows[i].total_ms / sum : 0;
  rt_ok(st);
  return p;
}

KILN_API void kiln_profile_free(kiln_profile *p) {
  if (!p) return;
  free(p->rows);
  free(p->strings);
  free(p);
}

KILN_API int kiln_profile_num_rows(const kiln_profile *p) { return p ? p->n : -1; }

KILN_API const kiln_profile_row *kiln_profile_row_at(const kiln_profile *p, int i) {
  return p && i >= 0 && i < p->n ? &p->rows[i] : NULL;
}

KILN_API uint64_t kiln_profile_executes(const kiln_profile *p) { return p ? p->executes : 0; }
KILN_API double kiln_profile_execute_ms(const kiln_profile *p) { return p ? p->execute_ms : 0; }
