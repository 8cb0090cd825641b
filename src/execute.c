/* execute.c - kiln_model_execute: bind inputs, solve symbolic dims, check
 * weights and outputs, place intermediates in one arena, call the kernels in
 * node order.
 *
 * Shape errors come from ir_solve_symbols, the very function the reference
 * interpreter uses, so both report the same messages. The intermediates
 * share one 64-byte aligned arena per execute (one block, which the model
 * keeps for the next execute: between executes it holds at most its peak
 * arena, freed with it), at offsets
 * the memory planner (plan.c) computes by lifetime and caches per symbol
 * binding; with KILN_POISON_ARENA=1 (read at a model's first execute) the
 * arena is filled with a NaN pattern first, so a kernel reading memory
 * nobody wrote shows. An output produced by a kernel is written straight
 * into the output tensor; an output that is a graph input, a constant, a
 * weight or a repeat of an earlier output is copied at the end. A
 * reshape-like node whose result is an alias (plan.h) runs no kernel: its
 * result points at its operand's buffer. A matmul
 * operand the model keeps packed (prepack.c: a constant or weight B) is
 * passed as its packed copy instead of the data. The model is
 * only read here (except the planner's cache, under its own lock, and the
 * cached scratch and arena blocks, taken and given back with atomic
 * exchanges),
 * so executes may run concurrently. A replay (capture.c) skips solving and
 * the variant lookup: the captured shapes, symbols and variant serve.
 * A dim a node sets from data (mo.nonzero's count, ir/shape.h) holds its
 * bound while the arena is planned and the outputs allocated; the node's
 * kernel stores the real value, which is bound (checked) before the next
 * node runs, and an output whose shape uses it is trimmed (or checked
 * against the caller's tensor) at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "bg_place.h"
#include "buffers.h"
#include "capture.h"
#include "plan.h"
#include "pool.h"
#include "prepack.h"
#include "rt.h"
#include "variants.h"

static void shape_text(char *buf, size_t cap, int rank, const int64_t *shape) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "[");
  for (int i = 0; i < rank; i++)
    n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%lld", i ? ", " : "",
                          (long long)shape[i]);
  snprintf(buf + n, n < cap ? cap - n : 0, "]");
}

/* Scratch for one execute, in one allocation. */
typedef struct exec_state {
  ir_tensor *ins;
  int64_t *syms;
  void **bufs;      /* per value id */
  size_t *offs;     /* per intermediate: offset in the arena */
  void *arena;      /* the intermediates' memory (or NULL): in arena_blk */
  char *arena_blk;  /* the arena's block (arena_take), or NULL */
  bool *direct;     /* per output: the kernel writes into the output tensor */
  kiln_tensor **fresh; /* per output: tensors allocated here */
  void **args;      /* one node's buffers */
} exec_state;

/* Every weight bound, and each of its symbolic axes equal to its value
 * under syms (kiln_model_bind_weight checked the rank, dtype and static
 * axes once: a decode step no longer evaluates ~25 weight shapes). */
static int check_weights(const kiln_model *m, const int64_t *syms, kiln_status *st) {
  int64_t shape[IR_MAX_RANK];
  char msg[512];
  for (int w = 0; w < m->nweights; w++) {
    const rt_weight *wt = &m->weights[w];
    if (!wt->bound)
      return rt_err(st, KILN_ERR_NOT_FOUND, "weight '%s' is not bound (kiln_model_bind_weight)",
                    wt->port.name);
    bool symbolic = false; /* kiln_model_bind_weight checked every static axis */
    for (int a = 0; a < wt->port.type.rank; a++) symbolic |= wt->port.dim_static[a] < 0;
    if (!symbolic) continue;
    if (ir_eval_shape(&wt->port.type, syms, shape, msg, sizeof msg) < 0)
      return rt_err(st, KILN_ERR_SHAPE, "weight '%s': %s", wt->port.name, msg);
    for (int a = 0; a < wt->port.type.rank; a++)
      if (wt->bound->shape[a] != shape[a])
        return rt_err(st, KILN_ERR_SHAPE, "weight '%s': axis %d is %s = %lld, got %lld",
                      wt->port.name, a, wt->port.dim_text[a], (long long)shape[a],
                      (long long)wt->bound->shape[a]);
  }
  return 0;
}

static int check_output(const kiln_model *m, int i, const kiln_tensor *t, const int64_t *shape,
                        kiln_status *st) {
  const rt_port *p = &m->outputs[i];
  if (t->device)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "output %d (%s) lives on %s: kiln_model_execute runs on the CPU and writes "
                  "host tensors",
                  i, p->name, rt_tensor_device_label(t));
  if ((ir_dtype)t->dtype != p->type.dtype)
    return rt_err(st, KILN_ERR_SHAPE, "output %d (%s): expected dtype %s, got %s", i, p->name,
                  ir_dtype_name(p->type.dtype), kiln_dtype_name(t->dtype));
  bool same = t->rank == p->type.rank;
  for (int a = 0; same && a < t->rank; a++) same = t->shape[a] == shape[a];
  if (!same) {
    char want[256], got[256];
    shape_text(want, sizeof want, p->type.rank, shape);
    shape_text(got, sizeof got, t->rank, t->shape);
    return rt_err(st, KILN_ERR_SHAPE, "output %d (%s): expected shape %s, got %s", i, p->name,
                  want, got);
  }
  if (t->nbytes && !t->data)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "output %d (%s): tensor data is NULL", i, p->name);
  return 0;
}

static int bind_inputs(const kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                       const rt_capture *cap, exec_state *x, kiln_status *st) {
  if (ninputs < 0 || (ninputs > 0 && !inputs))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "bad input list (%d inputs)", ninputs);
  if (ninputs < m->ninputs)
    return rt_err(st, KILN_ERR_NOT_FOUND,
                  "missing input: the model takes %d input%s, got %d; first missing: %d (%s)",
                  m->ninputs, m->ninputs == 1 ? "" : "s", ninputs, ninputs,
                  m->inputs[ninputs].name);
  if (ninputs > m->ninputs)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the model takes %d input%s, got %d",
                  m->ninputs, m->ninputs == 1 ? "" : "s", ninputs);
  for (int i = 0; i < m->ninputs; i++) {
    const kiln_tensor *t = inputs[i];
    if (!t)
      return rt_err(st, KILN_ERR_NOT_FOUND, "input %d (%s) is missing (NULL)", i,
                    m->inputs[i].name);
    if (t->rank > IR_MAX_RANK || t->rank != m->inputs[i].type.rank)
      return rt_err(st, KILN_ERR_SHAPE, "input %d (%s): expected rank %d, got %d", i,
                    m->inputs[i].name, m->inputs[i].type.rank, t->rank);
    if (t->device)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                    "input %d (%s) lives on %s: kiln_model_execute runs on the CPU and takes "
                    "host tensors (kiln_tensor_copy_to(t, NULL, st) copies it to the host)",
                    i, m->inputs[i].name, rt_tensor_device_label(t));
    if (t->nbytes && !t->data)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "input %d (%s): tensor data is NULL", i,
                    m->inputs[i].name);
    x->ins[i].dtype = (ir_dtype)t->dtype;
    x->ins[i].rank = t->rank;
    for (int a = 0; a < t->rank; a++) x->ins[i].shape[a] = t->shape[a];
    x->ins[i].data = t->data;
  }
  if (cap) { /* a replay: the captured shapes, hence the captured symbols */
    if (rt_capture_check_inputs(m, cap, x->ins, x->syms, st) < 0) return -1;
  } else {
    char msg[1024];
    if (ir_solve_symbols_at(m->g, x->ins, m->ninputs, x->syms, m->solve_nodes, m->nsolve, msg,
                            sizeof msg) < 0)
      return rt_err(st, KILN_ERR_SHAPE, "%s", msg);
  }
  for (int i = 0; i < m->ninputs; i++) x->bufs[m->g->inputs[i]->id] = inputs[i]->data;
  return 0;
}

/* Whether t uses a symbol some node of g sets from data. */
static bool uses_data_sym(const ir_graph *g, const ir_type *t) {
  for (int i = 0; i < g->nnodes; i++) {
    int s = ir_node_data_sym(g->nodes[i]);
    for (int a = 0; s >= 0 && a < t->rank; a++)
      if (ir_dim_uses_sym(t->dims[a], s)) return true;
  }
  return false;
}

static int prepare_outputs(const kiln_model *m, kiln_tensor **outputs, exec_state *x,
                           kiln_status *st) {
  const ir_graph *g = m->g;
  int64_t shape[IR_MAX_RANK];
  char msg[512];
  for (int i = 0; i < m->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    if (ir_eval_shape(&v->type, x->syms, shape, msg, sizeof msg) < 0)
      return rt_err(st, KILN_ERR_SHAPE, "output %d (%s): %s", i, m->outputs[i].name, msg);
    kiln_tensor *t = outputs[i];
    if (m->data_dims && uses_data_sym(g, &v->type)) {
      /* its shape is known at the end: a tensor of the bound shape, trimmed
       * (finish_data_outputs) or copied into the caller's then */
      t = x->fresh[i] = rt_tensor_alloc((kiln_dtype)v->type.dtype, v->type.rank, shape, st);
      if (!t) return -1;
      if (outputs[i] && v->def && !ir_node_is_source(v->def) && !x->bufs[v->id]) {
        x->bufs[v->id] = t->data; /* copied at the end */
        continue;
      }
    } else if (t) {
      if (check_output(m, i, t, shape, st) < 0) return -1;
    } else {
      t = x->fresh[i] = rt_tensor_alloc((kiln_dtype)v->type.dtype, v->type.rank, shape, st);
      if (!t) return -1;
    }
    if (v->def && !ir_node_is_source(v->def) && !x->bufs[v->id]) {
      x->bufs[v->id] = t->data;
      x->direct[i] = true;
    }
  }
  return 0;
}

/* An arena block: RT_ALIGN bytes of header (its capacity, a size_t) then
 * the arena. The model keeps the block of the last execute that gave one
 * back (exec_arena, taken and given back with atomic exchanges like the
 * scratch block): a fresh malloc + free of a block this size each execute
 * could make glibc grow and trim its heap every time (brk, then page
 * faults on the fresh pages: ~40 us of mlp batch 64's ~530, measured). */
static char *arena_take(kiln_model *m, size_t total) {
  char *blk = atomic_exchange_explicit(&m->exec_arena, NULL, memory_order_acquire);
  if (!blk || *(size_t *)blk < total) {
    /* a block outgrown (the shapes grow: a decoder's sequence) is replaced
     * by one half as large again, as plans are (plan.c), so a dim growing
     * by one each execute allocates, and faults in pages, every ~50% of
     * growth instead of at every plan */
    size_t cap = total;
    if (blk && total <= (SIZE_MAX - RT_ALIGN) / 3 * 2) cap = total + total / 2;
    free(blk);
    if (cap > SIZE_MAX - RT_ALIGN) return NULL;
    if ((blk = rt_aligned_alloc(cap + RT_ALIGN))) *(size_t *)blk = cap;
    rt_model_count(m, KILN_COUNTER_ARENA_GROWS);
  }
  if (blk) atomic_store_explicit(&m->exec_arena_taken, *(size_t *)blk, memory_order_relaxed);
  return blk;
}

/* A block of `bytes` for the next executes, allocated and faulted in here
 * (the prepare thread) unless the block kept, or the one an execute holds
 * now (it comes back after it), is large enough already: a block allocated
 * while an execute held a larger one would replace it (arena_give keeps the
 * first block given back) and cost a memset for nothing. */
void rt_arena_reserve(kiln_model *m, size_t bytes) {
  char *kept = atomic_load_explicit(&m->exec_arena, memory_order_acquire);
  size_t have = kept ? *(size_t *)kept
                     : atomic_load_explicit(&m->exec_arena_taken, memory_order_relaxed);
  if (have >= bytes || bytes == 0 || bytes > SIZE_MAX - RT_ALIGN) return;
  char *blk = rt_aligned_alloc(bytes + RT_ALIGN);
  if (!blk) return; /* the execute allocates it then */
  memset(blk + RT_ALIGN, 0, bytes); /* the pages faulted in here */
  *(size_t *)blk = bytes;
  char *old = atomic_exchange_explicit(&m->exec_arena, blk, memory_order_acq_rel);
  if (old && *(size_t *)old > bytes) { /* grew meanwhile: keep the larger */
    old = atomic_exchange_explicit(&m->exec_arena, old, memory_order_acq_rel);
  }
  free(old);
}

static void arena_give(kiln_model *m, char *blk) {
  char *none = NULL;
  if (blk && !atomic_compare_exchange_strong_explicit(&m->exec_arena, &none, blk,
                                                      memory_order_release, memory_order_relaxed))
    rt_model_discard_arena(m, blk); /* another execute, or a reserve, kept its block first */
}

static int alloc_intermediates(kiln_model *m, exec_state *x, kiln_status *st) {
  rt_plan_view v;
  if (rt_plan_lookup(m, x->syms, &v, x->offs, st) < 0) return -1;
  if (v.n == 0) return 0;
  if (!(x->arena_blk = arena_take(m, v.total)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY,
                  "out of memory: %zu bytes for the arena of %d intermediates", v.total, v.n);
  x->arena = x->arena_blk + RT_ALIGN;
  if (v.poison) rt_plan_poison(x->arena, v.total);
  for (int k = 0; k < v.n; k++) x->bufs[v.ids[k]] = (char *)x->arena + x->offs[k];
  return 0;
}

/* Node n's kernel stored `value` for the symbol it sets from data: bound
 * and checked (ir_data_sym_bind) before the next node runs. */
static int bind_data_sym(const kiln_model *m, const ir_node *n, int64_t value, exec_state *x,
                         kiln_status *st) {
  char msg[1024];
  if (ir_data_sym_bind(m->g, n, x->syms, value, msg, sizeof msg) < 0)
    return rt_err(st, KILN_ERR_SHAPE, "%s", msg);
  return 0;
}

/* The outputs whose shapes use a symbol set from data: their tensors were
 * allocated with the bound; now the shape is known. */
static int finish_data_outputs(const kiln_model *m, kiln_tensor **outputs, exec_state *x,
                               kiln_status *st) {
  int64_t shape[IR_MAX_RANK];
  char msg[512];
  for (int i = 0; i < m->noutputs; i++) {
    const ir_value *v = m->g->outputs[i];
    if (!uses_data_sym(m->g, &v->type)) continue;
    if (ir_eval_shape(&v->type, x->syms, shape, msg, sizeof msg) < 0)
      return rt_err(st, KILN_ERR_SHAPE, "output %d (%s): %s", i, m->outputs[i].name, msg);
    if (outputs[i] && check_output(m, i, outputs[i], shape, st) < 0) return -1;
    kiln_tensor *t = x->fresh[i];
    int64_t numel = 1;
    for (int a = 0; a < t->rank; a++) numel *= (t->shape[a] = shape[a]);
    t->numel = numel;
    t->nbytes = (size_t)numel * ir_dtype_size(v->type.dtype);
  }
  return 0;
}

static int run_kernels(const kiln_model *m, const rt_variant *var, exec_state *x,
                       kiln_status *st) {
  const ir_graph *g = m->g;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CONSTANT) {
      x->bufs[n->out[0]->id] = m->const_data[i];
      continue;
    }
    if (n->op == IR_OP_CONSTANT_EXTERNAL) {
      x->bufs[n->out[0]->id] = m->weights[m->weight_of_node[i]].bound->data;
      continue;
    }
    bool in_place = n->op == IR_OP_INPLACE_CUSTOM || rt_node_is_buffer_op(n);
    /* reshape-like: no kernel (plan.h) */
    if (m->alias && n->nout == 1 && m->alias[n->out[0]->id] >= 0 && !in_place) {
      x->bufs[n->out[0]->id] = x->bufs[n->in[0]->id];
      continue;
    }
    for (int j = 0; m->alias && in_place && j < n->nout; j++) /* a buffer's own memory */
      if (m->alias[n->out[j]->id] >= 0) x->bufs[n->out[j]->id] = x->bufs[m->alias[n->out[j]->id]];
    if (rt_node_is_buffer_op(n)) { /* copies in node order (buffers.h) */
      if (rt_buffer_run(g, n, x->bufs, x->syms, st) < 0) return -1;
      continue;
    }
    int k = 0;
    int64_t data_value = -1; /* the symbol a node sets from data (jit.h's last buffer) */
    for (int j = 0; j < n->nin; j++) x->args[k++] = x->bufs[n->in[j]->id];
    for (int j = 0; j < n->nout; j++) x->args[k++] = x->bufs[n->out[j]->id];
    bool data = m->data_dims && ir_node_data_sym(n) >= 0;
    if (data) x->args[k++] = &data_value;
    if (m->prepack_use && m->prepack_use[i].operand >= 0) /* B packed once (prepack.c) */
      x->args[m->prepack_use[i].operand] = m->prepack[m->prepack_use[i].src].data;
    int32_t rc = rt_variant_has_kernel(var, i) ? rt_variant_run(m, var, i, x->args, x->syms)
                                               : rt_model_run_kernel(m, i, x->args, x->syms);
    if (rc != 0) {
      const char *opn = ir_op_get(n->op)->name;
      if (n->loc.line > 0)
        return rt_err(st, KILN_ERR_RUNTIME, "mo.%s at line %d (%%%s): %s", opn, n->loc.line,
                      n->out[0]->name, jit_kernel_error(rc));
      return rt_err(st, KILN_ERR_RUNTIME, "%s%smo.%s (%%%s): %s", n->origin ? n->origin : "",
                    n->origin ? ": " : "", opn, n->out[0]->name, jit_kernel_error(rc));
    }
    if (data && bind_data_sym(m, n, data_value, x, st) < 0) return -1;
  }
  return 0;
}

/* Bytes of one execute's scratch block (exec_state), fixed per model. */
static size_t scratch_bytes(const kiln_model *m) {
  size_t nv = (size_t)m->g->nvalues, no = (size_t)m->noutputs;
  return (size_t)(m->ninputs + 1) * sizeof(ir_tensor) + (size_t)(m->g->nsyms + 1) * 8 +
         nv * sizeof(void *) + no * sizeof(kiln_tensor *) +
         (size_t)(m->max_node_bufs + 1) * sizeof(void *) + nv * sizeof(size_t) + no + 16;
}

int rt_model_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                     kiln_tensor **outputs, int noutputs, const rt_capture *cap,
                     rt_capture *record, kiln_status *st) {
  if (noutputs != m->noutputs || !outputs)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "the model has %d output%s, got room for %d", m->noutputs,
                  m->noutputs == 1 ? "" : "s", outputs ? noutputs : 0);
  rt_bg_note_caller(m->ctx->place); /* the context's background threads: off this CPU */
  const ir_graph *g = m->g;
  size_t nv = (size_t)g->nvalues, no = (size_t)m->noutputs;
  size_t sz = scratch_bytes(m);
  /* The scratch block of the last execute, when no other execute holds it:
   * glibc's calloc bypasses its thread cache, and was ~40% of a 1-op
   * execute (perf, relu [5]). */
  char *mem = atomic_exchange_explicit(&m->exec_scratch, NULL, memory_order_acquire);
  if (!mem && !(mem = malloc(sz)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory starting an execute");
  memset(mem, 0, sz);
  exec_state x;
  char *p = mem;
  x.ins = (ir_tensor *)p;
  p += (size_t)(m->ninputs + 1) * sizeof(ir_tensor);
  x.syms = (int64_t *)p;
  p += (size_t)(g->nsyms + 1) * 8;
  x.bufs = (void **)p;
  p += nv * sizeof(void *);
  x.fresh = (kiln_tensor **)p;
  p += no * sizeof(kiln_tensor *);
  x.args = (void **)p;
  p += (size_t)(m->max_node_bufs + 1) * sizeof(void *);
  x.offs = (size_t *)p;
  p += nv * sizeof(size_t);
  x.direct = (bool *)p;
  x.arena = NULL;
  x.arena_blk = NULL;
  rt_variant *var = NULL; /* variants.c: the specialized variant in use, if any */

  int rc = -1;
  if (bind_inputs(m, inputs, ninputs, cap, &x, st) < 0) goto done;
  if (check_weights(m, x.syms, st) < 0) goto done;
  if (prepare_outputs(m, outputs, &x, st) < 0) goto done;
  if (alloc_intermediates(m, &x, st) < 0) goto done;
  rt_spec_ticket ticket = {.slot = -1};
  var = cap ? rt_capture_variant(cap) : rt_variant_acquire(m, x.syms, &ticket);
  int64_t t0 = ticket.slot >= 0 ? rt_now_ns() : 0; /* the async policy's trial (variants.h) */
  if (run_kernels(m, var, &x, st) < 0) goto done;
  if (ticket.slot >= 0) rt_variant_timed(m, var, &ticket, rt_now_ns() - t0);
  if (m->data_dims && finish_data_outputs(m, outputs, &x, st) < 0) goto done;
  for (int i = 0; i < m->noutputs; i++) {
    if (x.direct[i]) continue;
    kiln_tensor *t = outputs[i] ? outputs[i] : x.fresh[i];
    const void *src = x.bufs[g->outputs[i]->id];
    if (t->nbytes && src != t->data) memmove(t->data, src, t->nbytes);
  }
  for (int i = 0; i < m->noutputs; i++)
    if (!outputs[i]) {
      outputs[i] = x.fresh[i];
      x.fresh[i] = NULL;
    }
  if (record && rt_capture_record(m, record, x.ins, x.syms, var, st) < 0) goto done;
  rc = 0;
  rt_ok(st);
done:
  rt_pool_quiet(m->ctx); /* this execute publishes no more jobs (pool.h) */
  if (!cap) rt_variant_release(m, var);
  arena_give(m, x.arena_blk);
  for (size_t i = 0; i < no; i++) kiln_tensor_free(x.fresh[i]);
  void *none = NULL;
  if (!atomic_compare_exchange_strong_explicit(&m->exec_scratch, &none, mem, memory_order_release,
                                               memory_order_relaxed))
    free(mem); /* another execute kept its block first */
  return rc;
}

int rt_host_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                    kiln_tensor **outputs, int noutputs, kiln_status *st) {
  return rt_model_execute(m, inputs, ninputs, outputs, noutputs, NULL, NULL, st);
}
