/* device_model.c - the simt backend of kiln_model (backend.h): graphs on a
 * kiln_device (simt-emu, cuda:N, hip:N).
 *
 * Compile (rt_dm_prepare, rt_dm_load): prepare the model's clone for the
 * device's SIMT target (pipeline.c: verify, custom kernels built for the
 * target, transposes folded into matmuls, fusion where the SIMT lowering
 * takes it; simt-emu: host code; cuda: PTX for the device's SM, sm_80 at
 * least; hip: a gfx90a code object), then get each kernel node's code
 * through the pipeline (the target context's disk cache, else compiled) and
 * load it as a device module; keep each kernel's symbol map (a kernel reads
 * its own symbols); copy the constants to the device. Reshape-like nodes
 * whose result is not an output run no kernel: their result shares the
 * operand's buffer.
 * Execute: solve the symbols from the input shapes (ir_solve_symbols, the
 * interpreter's messages); take the specialized variant of the binding
 * under the model's policy (variants.c: the same policies, buckets, bounds
 * and background compiles as on the host; a variant's kernels come from
 * compile_bound below); for a binding or variant other than the last
 * one's, build a plan: one device arena holding the inputs and every
 * computed value, placed by lifetime (plan.c: rt_plan_place), and the
 * resolved launch of every kernel (jit_simt_geometry's grid, parameters).
 * The plan is kept, so executes of one binding allocate nothing. Run: copy
 * the inputs in, launch the kernels back to back, each writing an error
 * word of its own, read the words once (the first failed kernel names its
 * op; a print's or a count's result is read after the words before it),
 * copy the outputs back. While watched (a trace
 * open, a profile on: device_watch.h) each launch and copy is timed and
 * reported, and a recorded capture replays launch by launch.
 * A dim set from data (mo.nonzero's count, ir/shape.h) is planned at its
 * bound; its node's kernel stores the count in a device slot of the plan,
 * which is read back after the launch and bound (checked) before the later
 * launches take their symbol values and grids from the run's symbols; the
 * outputs take their shapes from those too. Such a model is not captured.
 * Buffers (ir/buffer.h; buffers.h has the CPU runtime's meaning): the
 * caller's buffer is updated in place, as on the CPU and in MAX. A buffer
 * tensor on the model's device is used where it lives (the plan's launches
 * are pointed at it: plan_bind_buffers); a host tensor, or any buffer of a
 * capture (whose recorded launches keep fixed addresses), has a place in
 * the arena: copied in like any input and, when the graph stores to it,
 * copied back after the launches. A mo.buffer.create buffer lives in the
 * arena.
 * mo.buffer.create (zeroes copied from the plan's zeros), mo.mutable.load
 * and mo.mutable.store are launches that are one device copy each, in node
 * order; mo.mutable.store.slice is a kernel (device_buffers.c) whose bad
 * start sets its error word. A failed execute copies nothing back (a
 * buffer used in place keeps the stores before the failure, as on the CPU).
 * Custom ops (mo.custom / mo.inplace_custom): only with a target context,
 * which holds the kernel libraries: the kernels must be KILN_SIMT_KERNELs,
 * built for the device's target and linked into the node's kernel; the
 * launch follows jit_simt_geometry (kiln/kernel.h: simt_grid); for
 * mo.inplace_custom the launch first copies operand 0 into result 0 on the
 * device.
 * Guarantees: every failure frees what the call allocated and says what and
 * where; executes on one model are serialized by its lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ir/interp.h"
#include "ir/print_op.h"
#include "backend.h"
#include "buffers.h"
#include "device.h"
#include "device_watch.h"
#include "pipeline.h"
#include "placement.h"
#include "plan.h"
#include "variants.h"

typedef struct dm_plan dm_plan;       /* one binding's resolved launches */
typedef struct dm_capture dm_capture; /* a plan kept under a key */

struct rt_dm {
  kiln_device *dev;
  rt_target target;    /* the device's SIMT target; its ctx (the caller's, or NULL) */
  rt_code *kernels;    /* g->nnodes generic kernels (handle: the module), zeroed for none */
  kiln_devptr *consts; /* g->nnodes: device copy of a mo.constant's data, or 0 */
  kiln_devptr *weights;/* g->nnodes: device copy of a bound mo.constant.external, or 0 */
  pthread_mutex_t lock;
  bool lock_ok;
  dm_plan *recent;      /* the last execute's plan, reused while the binding repeats */
  dm_capture *captures; /* capture, by key */
  int ncaptures;
  int cache_hits, cache_misses; /* kernels loaded from the disk cache / compiled */
  int nkernels;         /* kernels loaded (nodes with a kernel after fusion) */
  int plan_builds;      /* plans built (for tests: executes of one binding build one) */
  bool placed;          /* the graph puts values on a GPU (placement.h) */
  bool *buffer_back;    /* g->ninputs: a buffer input the graph stores to (copied back) */
  rt_dev_watch *watch;  /* timing and tracing launches while watched (device_watch.h) */
};

/* The SIMT target name of d's code. */
static const char *target_name(kiln_device *d, kiln_status *st) {
  switch (kiln_device_get_kind(d)) {
  case KILN_DEVICE_SIMT_EMU: return "simt-emu";
  case KILN_DEVICE_CUDA:
    /* the description says "(sm_XY, ...)": sm_90 and up get sm_90 code */
    return strstr(kiln_device_description(d), "(sm_9") ? "sm_90" : "sm_80";
  case KILN_DEVICE_HIP:
    return strstr(kiln_device_description(d), "gfx942") ? "gfx942" : "gfx90a";
  case KILN_DEVICE_CPU: break;
  }
  rt_err(st, KILN_ERR_UNSUPPORTED,
         "cpu: graphs run on the CPU through kiln_model_compile, not a device model");
  return NULL;
}

/* Node i's code under binding b (NULL: generic), loaded on the device:
 * c->handle is the module. *cached: it came from the disk cache. */
static int load_code(kiln_model *m, int i, const rt_binding *b, rt_code *c, bool *cached,
                     kiln_status *st) {
  rt_simt_code sc;
  *c = (rt_code){0};
  if (rt_pipeline_compile_simt(&m->dm->target, m->g, i, b, &sc, st) < 0) return -1;
  *cached = sc.cached;
  rt_trace *tr = m->dm->target.ctx ? m->dm->target.ctx->trace : NULL;
  int64_t t0 = rt_trace_on(tr) ? rt_now_ns() : 0;
  int rc = rt_device_module_load(m->device, sc.image, sc.len, &c->handle, st);
  if (rc == 0) rc = rt_device_module_function(m->device, c->handle, sc.name, &c->fn, st);
  if (rt_trace_on(tr)) { /* the last step of a kernel's compile, as on the host */
    char esc[200], a[300];
    snprintf(a, sizeof a, "\"fn\":\"%s\",\"target\":\"%s\"",
             rt_trace_escape(sc.name, esc, sizeof esc), kiln_device_label(m->device));
    rt_trace_span(tr, "compile", "load", t0, rt_now_ns(), a);
  }
  c->sym_map = sc.sym_map;
  c->nsyms = sc.nsyms;
  sc.sym_map = NULL;
  rt_simt_code_free(&sc);
  if (rc < 0) {
    rt_device_module_unload(m->device, c->handle);
    free(c->sym_map);
    *c = (rt_code){0};
  }
  return rc;
}

/* Node i's generic kernel (pipeline.c), compiled or from the cache. */
static int load_kernel(kiln_model *m, int i, kiln_status *st) {
  bool cached = false;
  if (load_code(m, i, NULL, &m->dm->kernels[i], &cached, st) < 0) return -1;
  if (cached) m->dm->cache_hits++;
  else m->dm->cache_misses++;
  m->dm->nkernels++;
  return 0;
}

/* A mo.constant's data (model.c made it whole: m->const_data) to the device. */
static int upload_constant(kiln_model *m, int i, kiln_status *st) {
  const ir_type *t = &m->g->nodes[i]->out[0]->type;
  int64_t numel = -1;
  if (!m->const_data[i] || !ir_type_static_numel(t, &numel) || numel < 0)
    return rt_err(st, KILN_ERR_VERIFY, "mo.constant at line %d: no dense value of static shape",
                  m->g->nodes[i]->loc.line);
  size_t bytes = (size_t)numel * ir_dtype_size(t->dtype);
  if (kiln_device_alloc(m->device, bytes, &m->dm->consts[i], st) < 0) return -1;
  return kiln_device_copy_to(m->device, m->dm->consts[i], m->const_data[i], bytes, st);
}

int rt_dm_prepare(kiln_model *m, kiln_device *d, kiln_context *target_ctx, kiln_status *st) {
  rt_dm *dm = calloc(1, sizeof *dm);
  if (!dm) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  m->dm = dm;
  dm->dev = d;
  if (pthread_mutex_init(&dm->lock, NULL) != 0)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  dm->lock_ok = true;
  const char *tname = target_name(d, st);
  if (!tname || rt_target_simt(&dm->target, target_ctx, tname, kiln_device_label(d), st) < 0)
    return -1;
  /* verify, custom kernels for the target, transposes folded, fusion */
  if (rt_pipeline_prepare(m->g, &dm->target, NULL, st) < 0) return -1;
  return rt_place_check_device(m->g, kiln_device_label(d), &dm->placed, st);
}

int rt_dm_load(kiln_model *m, kiln_status *st) {
  rt_dm *dm = m->dm;
  size_t nn = (size_t)m->g->nnodes + 1;
  dm->kernels = calloc(nn, sizeof *dm->kernels);
  dm->consts = calloc(nn, sizeof *dm->consts);
  dm->weights = calloc(nn, sizeof *dm->weights);
  dm->buffer_back = calloc((size_t)m->g->ninputs + 1, sizeof *dm->buffer_back);
  if (!dm->kernels || !dm->consts || !dm->weights || !dm->buffer_back)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < m->g->ninputs; i++)
    dm->buffer_back[i] = m->g->inputs[i]->type.kind == IR_TYPE_BUFFER &&
                         rt_buffer_stored(m->g, m->g->inputs[i]);
  for (int i = 0; i < m->g->nnodes; i++) {
    const ir_node *n = m->g->nodes[i];
    int rc = n->op == IR_OP_CONSTANT ? upload_constant(m, i, st)
             : n->op == IR_OP_MUTABLE_STORE_SLICE
                 ? rt_dm_store_slice_load(m->device, &dm->target.simt, m->g, i, &dm->kernels[i], st)
             : rt_pipeline_has_kernel(m->g, n) ? load_kernel(m, i, st)
                                               : 0; /* a weight, an alias, a buffer copy */
    if (rc < 0) return -1;
  }
  return 0;
}

void rt_device_model_cache_counts(const kiln_model *m, int *hits, int *misses) {
  *hits = m && m->dm ? m->dm->cache_hits : 0;
  *misses = m && m->dm ? m->dm->cache_misses : 0;
}

int rt_device_model_kernels(const kiln_model *m) { return m && m->dm ? m->dm->nkernels : 0; }
int rt_device_model_plan_builds(const kiln_model *m) {
  return m && m->dm ? m->dm->plan_builds : 0;
}

/* 0 when t is on the host or on m's device; else -1 naming both. what:
 * "input", "output" or "weight"; i < 0 for a weight. */
static int check_place(const kiln_model *m, const kiln_tensor *t, const char *what, int i,
                       const char *name, kiln_status *st) {
  if (!t->device || t->device == m->device) return 0;
  char at[32] = "";
  if (i >= 0) snprintf(at, sizeof at, " %d", i);
  return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                "%s%s (%s) lives on %s (another device handle), not on this model's %s; copy it "
                "with kiln_tensor_copy_to",
                what, at, name, rt_tensor_device_label(t), kiln_device_label(m->device));
}

/* Copy t (host, or on m's device) into m's device buffer dst. */
static int copy_in(kiln_model *m, kiln_devptr dst, const kiln_tensor *t, kiln_status *st) {
  if (t->device) return rt_device_copy_dd(m->device, dst, t->devptr, t->nbytes, st);
  return kiln_device_copy_to(m->device, dst, t->data, t->nbytes, st);
}

/* Weight w to every node that reads it: a device buffer per node,
 * allocated at the first bind; a rebind copies into the same buffer (plans
 * and captures point at it). */
static int dm_bind_weight(kiln_model *m, int w, const kiln_tensor *t, kiln_status *st) {
  const char *name = m->weights[w].port.name;
  for (int a = 0; a < t->rank; a++)
    if (m->weights[w].port.dim_static[a] < 0)
      return rt_err(st, KILN_ERR_SHAPE, "weight '%s': a device model needs its static shape "
                    "(axis %d is %s)", name, a, m->weights[w].port.dim_text[a]);
  if (check_place(m, t, "weight", -1, name, st) < 0) return -1;
  pthread_mutex_lock(&m->dm->lock);
  int rc = 0;
  for (int i = 0; rc == 0 && i < m->g->nnodes; i++) {
    if (m->weight_of_node[i] != w) continue;
    if (!m->dm->weights[i]) rc = kiln_device_alloc(m->device, t->nbytes, &m->dm->weights[i], st);
    if (rc == 0) rc = copy_in(m, m->dm->weights[i], t, st);
  }
  pthread_mutex_unlock(&m->dm->lock);
  return rc;
}

/* ---- execution: a plan of launches ----
 * Tensors in and out may be host tensors or tensors on the model's device
 * (copied within the device); check_place refuses any other.
 * An execute builds a plan (symbols solved, one device buffer per value,
 * the resolved launch of every kernel: grid, parameters), runs it, copies
 * the outputs out and frees it. Capture keeps the plan under a key; replay
 * copies new input data into the plan's buffers and runs its launches again
 * with no solving, allocation or geometry work. */
typedef struct dm_launch {
  int node;
  /* mo.inplace_custom: operand 0 into result 0 first; a buffer op other
   * than store.slice is this copy alone (fn NULL: resolve_copy) */
  kiln_devptr copy_dst, copy_src;
  size_t copy_bytes;
  const rt_code *code; /* its kernel's symbol map */
  rt_launch_dims dims;
  void *fn;          /* the kernel: the generic one or the plan's variant's */
  int np;
  kiln_devptr *bufs; /* the kernel's buffers (params point here) */
  kiln_devptr err;   /* its error word: its own slot of the plan's errwords */
  int64_t *ks;       /* the kernel's symbol values */
  void **params;
} dm_launch;

struct dm_plan {
  kiln_devptr *buf;  /* per value: into the arena, an alias's operand's, a constant's */
  kiln_devptr arena; /* every input and computed value, placed by lifetime (plan.c) */
  int64_t *syms;
  int64_t (*in_shape)[IR_MAX_RANK]; /* per input, for replay checks */
  kiln_devptr *home;  /* per input: its place in the arena (a rebound buffer's too) */
  bool pinned;        /* a capture: its buffers stay in the arena (plan_bind_buffers) */
  kiln_devptr errwords; /* one int32_t per launch, read once per execute (errors_read) */
  int32_t *codes;       /* the host's copy of them */
  kiln_devptr counts; /* one int64_t per node that sets a dim from data, or 0 */
  kiln_devptr zeros;  /* zero bytes that mo.buffer.create copies from, or 0 */
  int64_t *run_syms;  /* the run's symbols: syms, then each count as it is read */
  dm_launch *launches;
  int nlaunches;
  void *graph; /* a capture's launches recorded on the device (plan_record), or NULL */
  rt_variant *var; /* the specialized variant its launches use (a reference), or NULL */
};

struct dm_capture {
  uint64_t key;
  dm_plan *plan;
};

static void plan_free(kiln_model *m, dm_plan *x) {
  if (!x) return;
  rt_device_graph_free(m->device, x->graph);
  rt_variant_release(m, x->var);
  kiln_device_free(m->device, x->arena);
  kiln_device_free(m->device, x->errwords);
  free(x->codes);
  kiln_device_free(m->device, x->counts);
  kiln_device_free(m->device, x->zeros);
  free(x->run_syms);
  for (int i = 0; x->launches && i < x->nlaunches; i++) {
    free(x->launches[i].bufs);
    free(x->launches[i].ks);
    free(x->launches[i].params);
  }
  free(x->launches);
  free(x->in_shape);
  free(x->home);
  free(x->buf);
  free(x->syms);
  free(x);
}

/* Bytes of value v under the symbols syms. */
static int value_bytes(const ir_value *v, const int64_t *syms, size_t *bytes, kiln_status *st) {
  int64_t shape[IR_MAX_RANK];
  char msg[512];
  if (ir_eval_shape(&v->type, syms, shape, msg, sizeof msg) < 0)
    return rt_err(st, KILN_ERR_SHAPE, "%%%s: %s", v->name, msg);
  int64_t numel = 1;
  for (int a = 0; a < v->type.rank; a++)
    if (__builtin_mul_overflow(numel, shape[a], &numel))
      return rt_err(st, KILN_ERR_SHAPE, "%%%s: element count overflows", v->name);
  if (__builtin_mul_overflow((size_t)numel, ir_dtype_size(v->type.dtype), bytes))
    return rt_err(st, KILN_ERR_SHAPE, "%%%s: byte count overflows", v->name);
  return 0;
}

/* One device arena for the inputs and every value a kernel computes, each
 * placed by its lifetime (rt_plan_place: from its definition to its last
 * use, through aliases; graph outputs to the end); an alias's buffer is
 * its operand's. */
static int plan_memory(kiln_model *m, dm_plan *x, kiln_status *st) {
  const ir_graph *g = m->g;
  int nv = g->nvalues, nn = g->nnodes;
  int *owner = malloc((size_t)(nv + 1) * sizeof *owner); /* the value whose buffer v uses */
  int *first = malloc((size_t)(nv + 1) * sizeof *first), *last = malloc((size_t)(nv + 1) * sizeof *last);
  int *ids = malloc((size_t)(nv + 1) * sizeof *ids);
  size_t *size = malloc((size_t)(nv + 1) * sizeof *size), *off = malloc((size_t)(nv + 1) * sizeof *off);
  int rc = -1, n = 0;
  if (!owner || !first || !last || !ids || !size || !off) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory planning device memory");
    goto done;
  }
  for (int v = 0; v < nv; v++) owner[v] = v, first[v] = -1, last[v] = -1;
  for (int i = 0; i < g->ninputs; i++) first[g->inputs[i]->id] = 0;
  for (int i = 0; i < nn; i++) {
    const ir_node *nd = g->nodes[i];
    if (ir_node_is_source(nd)) continue; /* constants and weights have buffers of their own */
    if (rt_node_is_alias(g, nd)) owner[nd->out[0]->id] = owner[nd->in[0]->id];
    else
      for (int j = 0; j < nd->nout; j++) first[nd->out[j]->id] = i;
    for (int j = 0; j < nd->nin; j++) last[owner[nd->in[j]->id]] = i;
  }
  for (int o = 0; o < g->noutputs; o++) last[owner[g->outputs[o]->id]] = nn;
  for (int i = 0; i < g->ninputs; i++) /* a buffer is copied back after the last launch */
    if (g->inputs[i]->type.kind == IR_TYPE_BUFFER) last[g->inputs[i]->id] = nn;
  for (int i = 0; i < nn; i++) /* a bad store.slice start is read back at the end */
    if (g->nodes[i]->op == IR_OP_MUTABLE_STORE_SLICE) last[owner[g->nodes[i]->in[2]->id]] = nn;
  for (int v = 0; v < nv; v++) {
    if (first[v] < 0 || owner[v] != v) continue;
    if (value_bytes(g->values[v], x->syms, &size[n], st) < 0) goto done;
    ids[n] = v;
    first[n] = first[v]; /* compacted in place: index n <= v */
    last[n] = last[v] < first[v] ? first[v] : last[v];
    n++;
  }
  size_t total = 0;
  if (rt_plan_place(n, size, first, last, off, &total) < 0) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "device memory plan: out of memory or too large");
    goto done;
  }
  if (kiln_device_alloc(m->device, total ? total : RT_PLAN_ALIGN, &x->arena, st) < 0) goto done;
  for (int k = 0; k < n; k++) x->buf[ids[k]] = x->arena + off[k];
  for (int v = 0; v < nv; v++)
    if (owner[v] != v) x->buf[v] = x->buf[owner[v]];
  rc = 0;
done:
  free(owner);
  free(first);
  free(last);
  free(ids);
  free(size);
  free(off);
  return rc;
}

/* Buffers of node i's kernel (operands, results, a count's slot). */
static int n_bufs(const kiln_model *m, int i) {
  const ir_node *n = m->g->nodes[i];
  return n->nin + n->nout + (ir_node_data_sym(n) >= 0);
}

/* Node i's place among the nodes that set a dim from data. */
static int data_index(const ir_graph *g, int i) {
  int k = 0;
  for (int j = 0; j < i; j++) k += ir_node_data_sym(g->nodes[j]) >= 0;
  return k;
}

/* A buffer op the device runs as one copy (buffers.h gives the meaning):
 * mo.buffer.create zeroes its buffer (l->copy_src: the plan's zeros),
 * mo.mutable.load copies the buffer into its tensor, mo.mutable.store the
 * tensor into the buffer; none where source and destination are one. */
static int resolve_copy(kiln_model *m, dm_launch *l, const int64_t *syms, bool *work,
                        kiln_status *st) {
  const ir_node *n = m->g->nodes[l->node];
  size_t bytes;
  if (value_bytes(n->op == IR_OP_BUFFER_CREATE ? n->out[0] : n->in[0], syms, &bytes, st) < 0)
    return -1;
  l->copy_dst = n->op == IR_OP_MUTABLE_STORE ? l->bufs[0] : l->bufs[n->nin];
  if (n->op != IR_OP_BUFFER_CREATE) l->copy_src = l->bufs[n->op == IR_OP_MUTABLE_STORE ? 1 : 0];
  l->copy_bytes = l->copy_dst == l->copy_src ? 0 : bytes;
  rt_launch_dims one = {{1, 1, 1}, {1, 1, 1}, 0}; /* no kernel: the copy is the work */
  l->dims = one;
  *work = true;
  return 0;
}

/* l's symbol values, grid and inplace copy under syms; *work false when the
 * grid is empty (nothing to compute). */
static int resolve_launch(kiln_model *m, dm_launch *l, const int64_t *syms, bool *work,
                          kiln_status *st) {
  const ir_node *n = m->g->nodes[l->node];
  if (rt_node_is_buffer_op(n) && n->op != IR_OP_MUTABLE_STORE_SLICE)
    return resolve_copy(m, l, syms, work, st);
  char err[512];
  jit_simt_dims dims;
  if (jit_simt_geometry(n, syms, &dims, err, sizeof err) < 0)
    return rt_err(st, KILN_ERR_SHAPE, "mo.%s at line %d: %s", ir_op_get(n->op)->name,
                  n->loc.line, err);
  *work = dims.grid[0] && dims.grid[1] && dims.grid[2];
  for (int j = 0; j < l->code->nsyms; j++) l->ks[j] = syms[l->code->sym_map[j]];
  if (n->op == IR_OP_INPLACE_CUSTOM) {
    int64_t shape[IR_MAX_RANK], numel = 1;
    if (ir_eval_shape(&n->in[0]->type, syms, shape, err, sizeof err) < 0)
      return rt_err(st, KILN_ERR_SHAPE, "mo.%s at line %d: %s", ir_op_get(n->op)->name,
                    n->loc.line, err);
    for (int a = 0; a < n->in[0]->type.rank; a++) numel *= shape[a];
    l->copy_dst = l->bufs[n->nin];
    l->copy_src = l->bufs[0];
    l->copy_bytes = (size_t)numel * ir_dtype_size(n->in[0]->type.dtype);
  }
  rt_launch_dims ld = {{dims.grid[0], dims.grid[1], dims.grid[2]},
                       {dims.block[0], dims.block[1], dims.block[2]},
                       /* static shared memory: a global on GPUs, given by the launch on emu */
                       kiln_device_get_kind(m->device) == KILN_DEVICE_SIMT_EMU ? dims.shared_bytes
                                                                              : 0};
  l->dims = ld;
  return 0;
}

/* The launch of node i into x->launches (when it has work). */
static int plan_launch(kiln_model *m, dm_plan *x, int i, kiln_status *st) {
  const ir_node *n = m->g->nodes[i];
  const rt_code *k = rt_variant_code(x->var, i);
  if (!k) k = &m->dm->kernels[i];
  dm_launch *l = &x->launches[x->nlaunches];
  int nb = n_bufs(m, i);
  l->node = i;
  l->code = k;
  l->fn = k->fn;
  l->np = nb + k->nsyms + 1;
  l->bufs = calloc((size_t)nb + 1, sizeof *l->bufs);
  l->ks = calloc((size_t)k->nsyms + 1, sizeof *l->ks);
  l->params = calloc((size_t)l->np, sizeof *l->params);
  x->nlaunches++; /* freed with the plan even if incomplete */
  if (!l->bufs || !l->ks || !l->params) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int j = 0; j < n->nin; j++) l->bufs[j] = x->buf[n->in[j]->id];
  for (int j = 0; j < n->nout; j++) l->bufs[n->nin + j] = x->buf[n->out[j]->id];
  if (nb > n->nin + n->nout) /* its count's slot (jit.h) */
    l->bufs[nb - 1] = x->counts + sizeof(int64_t) * (size_t)data_index(m->g, i);
  for (int j = 0; j < nb; j++) l->params[j] = &l->bufs[j];
  for (int j = 0; j < k->nsyms; j++) l->params[nb + j] = &l->ks[j];
  l->err = x->errwords + sizeof(int32_t) * (size_t)(x->nlaunches - 1);
  l->params[nb + k->nsyms] = &l->err;
  if (n->op == IR_OP_BUFFER_CREATE) l->copy_src = x->zeros;
  bool work;
  if (resolve_launch(m, l, x->syms, &work, st) < 0) return -1;
  if (!work && n->op != IR_OP_PRINT) { /* nothing to compute: no launch (a count only
                                        * shrinks the grid); a print still writes its line */
    free(l->bufs);
    free(l->ks);
    free(l->params);
    memset(l, 0, sizeof *l);
    x->nlaunches--;
  }
  return 0;
}

/* The zero bytes mo.buffer.create copies from: as many as its largest
 * buffer under x's symbols (none without a mo.buffer.create). */
static int plan_zeros(kiln_model *m, dm_plan *x, kiln_status *st) {
  size_t most = 0, bytes;
  for (int i = 0; i < m->g->nnodes; i++) {
    const ir_node *n = m->g->nodes[i];
    if (n->op != IR_OP_BUFFER_CREATE) continue;
    if (value_bytes(n->out[0], x->syms, &bytes, st) < 0) return -1;
    if (bytes > most) most = bytes;
  }
  if (most == 0) return 0;
  void *host = calloc(1, most);
  if (!host) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  int rc = kiln_device_alloc(m->device, most, &x->zeros, st);
  if (rc == 0) rc = kiln_device_copy_to(m->device, x->zeros, host, most, st);
  free(host);
  return rc;
}

/* Solve, allocate and resolve every launch for these inputs. */

static dm_plan *plan_build(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                           dm_plan *reuse, rt_spec_ticket *ticket, kiln_status *st) {
  const ir_graph *g = m->g;
  if (ninputs != g->ninputs || (ninputs && !inputs)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the graph takes %d inputs, got %d", g->ninputs,
           ninputs);
    return NULL;
  }
  dm_plan *x = calloc(1, sizeof *x);
  ir_tensor *ins = calloc((size_t)g->ninputs + 1, sizeof *ins);
  if (x) {
    x->buf = calloc((size_t)g->nvalues + 1, sizeof *x->buf);
    x->syms = calloc((size_t)g->nsyms + 1, sizeof *x->syms);
    x->in_shape = calloc((size_t)g->ninputs + 1, sizeof *x->in_shape);
    x->home = calloc((size_t)g->ninputs + 1, sizeof *x->home);
    x->launches = calloc((size_t)g->nnodes + 1, sizeof *x->launches);
  }
  char msg[1024];
  if (!x || !ins || !x->buf || !x->syms || !x->in_shape || !x->home || !x->launches) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory starting an execute");
    goto fail;
  }
  for (int i = 0; i < g->ninputs; i++) {
    const kiln_tensor *t = inputs[i];
    if (!t || t->rank != g->inputs[i]->type.rank) {
      rt_err(st, KILN_ERR_SHAPE, "input %d (%s): expected rank %d", i, g->inputs[i]->name,
             g->inputs[i]->type.rank);
      goto fail;
    }
    if (check_place(m, t, "input", i, g->inputs[i]->name, st) < 0) goto fail;
    ins[i].dtype = (ir_dtype)t->dtype;
    ins[i].rank = t->rank;
    ins[i].data = t->data; /* host data: dims some graphs read from it (ir_solve_symbols) */
    memcpy(ins[i].shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
    memcpy(x->in_shape[i], t->shape, sizeof(int64_t) * (size_t)t->rank);
    ins[i].data = t->data;
  }
  if (ir_solve_symbols(g, ins, g->ninputs, x->syms, msg, sizeof msg) < 0) {
    rt_err(st, KILN_ERR_SHAPE, "%s", msg);
    goto fail;
  }
  /* the variant under the model's policy (variants.c; a reference) */
  x->var = rt_variant_acquire(m, x->syms, ticket);
  if (reuse && reuse->var == x->var &&
      memcmp(reuse->syms, x->syms, (size_t)g->nsyms * sizeof *x->syms) == 0) {
    free(ins);
    plan_free(m, x);
    return reuse; /* the same binding and code: its buffers and launches serve as they are */
  }
  x->codes = calloc((size_t)g->nnodes + 1, sizeof *x->codes);
  if (!x->codes) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory starting an execute");
    goto fail;
  }
  if (kiln_device_alloc(m->device, sizeof(int32_t) * ((size_t)g->nnodes + 1), &x->errwords,
                        st) < 0)
    goto fail;
  if (m->data_dims) {
    if (!(x->run_syms = calloc((size_t)g->nsyms + 1, sizeof *x->run_syms))) {
      rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory starting an execute");
      goto fail;
    }
    size_t bytes = sizeof(int64_t) * (size_t)(data_index(g, g->nnodes) + 1);
    if (kiln_device_alloc(m->device, bytes, &x->counts, st) < 0) goto fail;
  }
  /* the sources' buffers first: plan_memory gives an alias of one (a
   * reshaped constant) its operand's buffer */
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CONSTANT) x->buf[n->out[0]->id] = m->dm->consts[i];
    if (n->op != IR_OP_CONSTANT_EXTERNAL) continue;
    if (!m->dm->weights[i]) {
      rt_err(st, KILN_ERR_NOT_FOUND, "weight '%s' is not bound (kiln_model_bind_weight)",
             ir_node_attr_string(n, "name", "?"));
      goto fail;
    }
    x->buf[n->out[0]->id] = m->dm->weights[i];
  }
  if (plan_memory(m, x, st) < 0 || plan_zeros(m, x, st) < 0) goto fail;
  for (int i = 0; i < g->ninputs; i++) x->home[i] = x->buf[g->inputs[i]->id];
  m->dm->plan_builds++;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    bool runs = rt_node_is_buffer_op(n) ? n->op != IR_OP_CHAIN_CREATE /* a copy or a kernel */
                                        : !ir_node_is_source(n) && rt_pipeline_has_kernel(g, n);
    if (runs && plan_launch(m, x, i, st) < 0) goto fail;
  }
  free(ins);
  return x;
fail:
  free(ins);
  plan_free(m, x);
  return NULL;
}

/* l's inplace copy and launch (timed when watched: w); its error word is
 * read later (errors_read). */
static int launch(kiln_model *m, const dm_launch *l, rt_dev_watch *w, kiln_status *st) {
  if (l->copy_bytes &&
      rt_device_copy_dd(m->device, l->copy_dst, l->copy_src, l->copy_bytes, st) < 0)
    return -1;
  if (!l->fn) return 0; /* a buffer op's copy (resolve_copy) */
  return w ? rt_dev_watch_launch(w, l->node, l->fn, &l->dims, l->params, st)
           : rt_device_launch(m->device, l->fn, &l->dims, l->params, st);
}

/* A store.slice's bad start, said as the CPU says it (buffers.h): its start
 * read back. */
static int slice_error(kiln_model *m, dm_plan *x, const dm_launch *l, kiln_status *st) {
  const ir_node *n = m->g->nodes[l->node];
  int64_t start[IR_MAX_RANK], host[IR_MAX_RANK]; /* si32 or si64 entries */
  size_t bytes = (size_t)n->in[0]->type.rank * ir_dtype_size(n->in[2]->type.dtype);
  if (bytes && kiln_device_copy_from(m->device, host, l->bufs[2], bytes, st) < 0) return -1;
  if (rt_buffer_slice_check(n, host, x->run_syms ? x->run_syms : x->syms, start, st) < 0)
    return -1;
  return rt_err(st, KILN_ERR_RUNTIME, "mo.%s at line %d: %s", ir_op_get(n->op)->name, n->loc.line,
                jit_kernel_error(JIT_KERR_SLICE));
}

/* The error words of launches 0..n-1, read in one copy (which waits for
 * them): the first that failed names its op. Reading once per execute, not
 * after every launch, keeps a GPU's launches back to back; a launch after
 * a failed one may compute on garbage, but every kernel checks its own
 * indices and writes nothing out of bounds. */
static int errors_read(kiln_model *m, dm_plan *x, int n, kiln_status *st) {
  if (n <= 0) return 0;
  if (kiln_device_copy_from(m->device, x->codes, x->errwords, sizeof(int32_t) * (size_t)n, st) <
      0)
    return -1;
  for (int li = 0; li < n; li++) {
    if (x->codes[li] == 0) continue;
    const ir_node *node = m->g->nodes[x->launches[li].node];
    if (node->op == IR_OP_MUTABLE_STORE_SLICE && x->codes[li] == JIT_KERR_SLICE)
      return slice_error(m, x, &x->launches[li], st);
    return rt_err(st, KILN_ERR_RUNTIME, "%s%smo.%s at line %d (%%%s): %s",
                  node->origin ? node->origin : "", node->origin ? ": " : "",
                  ir_op_get(node->op)->name, node->loc.line, node->out[0]->name,
                  jit_kernel_error(x->codes[li]));
  }
  return 0;
}

/* mo.print's line, from its result (the operand's copy) read back once its
 * kernel has run: the first IR_PRINT_MAX_ELEMS elements are all the line
 * shows (ir/print_op.h), so no more are copied. */
static int print_line(kiln_model *m, const dm_launch *l, const int64_t *syms, kiln_status *st) {
  const ir_node *n = m->g->nodes[l->node];
  ir_tensor x = {.dtype = n->in[0]->type.dtype, .rank = n->in[0]->type.rank};
  char msg[512];
  if (ir_eval_shape(&n->in[0]->type, syms, x.shape, msg, sizeof msg) < 0)
    return rt_err(st, KILN_ERR_SHAPE, "mo.print at line %d: %s", n->loc.line, msg);
  int64_t total = ir_tensor_numel(&x);
  uint64_t first[IR_PRINT_MAX_ELEMS]; /* the widest element is 8 bytes */
  size_t bytes = (size_t)(total < IR_PRINT_MAX_ELEMS ? total : IR_PRINT_MAX_ELEMS) *
                 ir_dtype_size(x.dtype);
  if (bytes && kiln_device_copy_from(m->device, first, l->bufs[n->nin], bytes, st) < 0)
    return -1;
  x.data = first;
  ir_print_line(n, &x);
  return 0;
}

/* Whether input i is a buffer that x's launches use where it lives: a
 * tensor on the model's device, outside a capture (whose recorded launches
 * keep the arena's addresses). */
static bool in_place(const kiln_model *m, const dm_plan *x, kiln_tensor *const *inputs, int i) {
  return !x->pinned && m->g->inputs[i]->type.kind == IR_TYPE_BUFFER && inputs[i]->device;
}

/* Point x's launches at each buffer input's memory: the caller's device
 * tensor where in_place (no copy in or back: the graph updates it where it
 * is, as MAX does), else the buffer's place in the arena. Only buffer ops
 * take buffers: their operand slots and copy ends are what change. */
static void plan_bind_buffers(kiln_model *m, dm_plan *x, kiln_tensor *const *inputs) {
  const ir_graph *g = m->g;
  for (int i = 0; i < g->ninputs; i++) {
    const ir_value *v = g->inputs[i];
    if (v->type.kind != IR_TYPE_BUFFER) continue;
    kiln_devptr from = x->buf[v->id], to = in_place(m, x, inputs, i) ? inputs[i]->devptr
                                                                      : x->home[i];
    if (from == to) continue;
    x->buf[v->id] = to;
    for (int li = 0; li < x->nlaunches; li++) {
      dm_launch *l = &x->launches[li];
      const ir_node *n = g->nodes[l->node];
      for (int j = 0; j < n->nin; j++)
        if (n->in[j] == v) l->bufs[j] = to; /* params point at the slots */
      if (!l->fn && l->copy_dst == from) l->copy_dst = to;
      if (!l->fn && l->copy_src == from) l->copy_src = to;
    }
  }
}

/* Copy inputs in, run the launches (their error words read at the end),
 * copy the outputs out (allocating those that are NULL). Watched (w), each
 * copy and launch is timed, and a recorded capture runs launch by launch
 * so that every kernel is seen. */
static int run_plan(kiln_model *m, dm_plan *x, kiln_tensor *const *inputs,
                    kiln_tensor **outputs, int noutputs, rt_dev_watch *w, kiln_status *st) {
  const ir_graph *g = m->g;
  if (noutputs != g->noutputs || !outputs)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the graph has %d outputs, got room for %d",
                  g->noutputs, noutputs);
  if (x->nlaunches) { /* every error word cleared in one copy */
    memset(x->codes, 0, sizeof(int32_t) * (size_t)x->nlaunches);
    if (kiln_device_copy_to(m->device, x->errwords, x->codes,
                            sizeof(int32_t) * (size_t)x->nlaunches, st) < 0)
      return -1;
  }
  plan_bind_buffers(m, x, inputs);
  for (int i = 0; i < g->ninputs; i++) {
    if (in_place(m, x, inputs, i)) continue;
    int64_t t0 = w ? rt_now_ns() : 0;
    if (copy_in(m, x->buf[g->inputs[i]->id], inputs[i], st) < 0) return -1;
    if (w)
      rt_dev_watch_copy(w, RT_COPY_IN, g->inputs[i]->name, inputs[i]->nbytes, t0, rt_now_ns());
  }
  bool graph = x->graph && !w;
  if (graph && rt_device_graph_launch(m->device, x->graph, st) < 0) return -1; /* a capture */
  const int64_t *syms = x->syms; /* x->run_syms once a count is read */
  if (x->run_syms) memcpy(x->run_syms, x->syms, sizeof *x->syms * (size_t)g->nsyms);
  bool counted = false;
  for (int li = 0; !graph && li < x->nlaunches; li++) {
    dm_launch *l = &x->launches[li];
    bool work = l->dims.grid[0] && l->dims.grid[1] && l->dims.grid[2]; /* a print's may be 0 */
    if (counted && resolve_launch(m, l, syms, &work, st) < 0) return -1;
    if (work && launch(m, l, w, st) < 0) return -1;
    bool reads = g->nodes[l->node]->op == IR_OP_PRINT ||
                 (work && n_bufs(m, l->node) > g->nodes[l->node]->nin + g->nodes[l->node]->nout);
    if (reads && errors_read(m, x, li + 1, st) < 0) return -1; /* its result must be sound */
    if (g->nodes[l->node]->op == IR_OP_PRINT && print_line(m, l, syms, st) < 0) return -1;
    if (!work) continue;
    if (n_bufs(m, l->node) > g->nodes[l->node]->nin + g->nodes[l->node]->nout) {
      int64_t value;
      char msg[1024];
      if (kiln_device_copy_from(m->device, &value, l->bufs[n_bufs(m, l->node) - 1],
                                sizeof value, st) < 0)
        return -1;
      if (ir_data_sym_bind(g, g->nodes[l->node], x->run_syms, value, msg, sizeof msg) < 0)
        return rt_err(st, KILN_ERR_SHAPE, "%s", msg);
      syms = x->run_syms;
      counted = true;
    }
  }
  if (errors_read(m, x, x->nlaunches, st) < 0) return -1;
  for (int i = 0; i < g->ninputs; i++) { /* the caller's buffers, updated in place */
    if (!m->dm->buffer_back[i] || in_place(m, x, inputs, i)) continue;
    kiln_tensor *t = inputs[i];
    int64_t t0 = w ? rt_now_ns() : 0;
    kiln_devptr at = x->buf[g->inputs[i]->id];
    if ((t->device ? rt_device_copy_dd(m->device, t->devptr, at, t->nbytes, st)
                   : kiln_device_copy_from(m->device, t->data, at, t->nbytes, st)) < 0)
      return -1;
    if (w) rt_dev_watch_copy(w, RT_COPY_OUT, g->inputs[i]->name, t->nbytes, t0, rt_now_ns());
  }
  kiln_tensor *fresh[64] = {0};
  if (g->noutputs > 64) return rt_err(st, KILN_ERR_UNSUPPORTED, "more than 64 outputs");
  int rc = 0;
  for (int i = 0; rc == 0 && i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    int64_t shape[IR_MAX_RANK];
    char msg[512];
    if (ir_eval_shape(&v->type, syms, shape, msg, sizeof msg) < 0) {
      rc = rt_err(st, KILN_ERR_SHAPE, "output %d: %s", i, msg);
      break;
    }
    kiln_tensor *t = outputs[i];
    if (!t) { /* where the graph puts it: on the device only when it says gpu */
      kiln_device *home = m->dm->placed && v->type.device.kind == IR_DEV_GPU ? m->device : NULL;
      kiln_dtype dt = (kiln_dtype)v->type.dtype;
      t = fresh[i] = home ? kiln_tensor_new_on(home, dt, v->type.rank, shape, st)
                          : rt_tensor_alloc(dt, v->type.rank, shape, st);
      if (!t) {
        rc = -1;
        break;
      }
    } else {
      if ((rc = check_place(m, t, "output", i, v->name, st)) < 0) break;
      bool same = (ir_dtype)t->dtype == v->type.dtype && t->rank == v->type.rank;
      for (int a = 0; same && a < t->rank; a++) same = t->shape[a] == shape[a];
      if (!same) {
        rc = rt_err(st, KILN_ERR_SHAPE, "output %d (%s): the tensor's dtype or shape differs", i,
                    v->name);
        break;
      }
    }
    int64_t t0 = w ? rt_now_ns() : 0;
    rc = t->device ? rt_device_copy_dd(m->device, t->devptr, x->buf[v->id], t->nbytes, st)
                   : kiln_device_copy_from(m->device, t->data, x->buf[v->id], t->nbytes, st);
    if (w && rc == 0) rt_dev_watch_copy(w, RT_COPY_OUT, v->name, t->nbytes, t0, rt_now_ns());
  }
  for (int i = 0; i < g->noutputs; i++) {
    if (rc == 0 && !outputs[i]) {
      outputs[i] = fresh[i];
      fresh[i] = NULL;
    }
    kiln_tensor_free(fresh[i]);
  }
  return rc;
}

static int plan_run(kiln_model *m, dm_plan *x, kiln_tensor *const *inputs,
                    kiln_tensor **outputs, int noutputs, kiln_status *st) {
  rt_dev_watch *w = rt_dev_watch_begin(m, &m->dm->watch, x->nlaunches); /* NULL: unwatched */
  int rc = run_plan(m, x, inputs, outputs, noutputs, w, st);
  rt_dev_watch_end(w, x->run_syms ? x->run_syms : x->syms);
  return rc;
}

static int dm_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                      kiln_tensor **outputs, int noutputs, kiln_status *st) {
  pthread_mutex_lock(&m->dm->lock);
  rt_spec_ticket ticket = {.slot = -1};
  dm_plan *x = plan_build(m, inputs, ninputs, m->dm->recent, &ticket, st);
  if (x && x != m->dm->recent) { /* a new binding: its plan is kept for the next execute */
    plan_free(m, m->dm->recent);
    m->dm->recent = x;
  }
  int64_t t0 = rt_now_ns();
  int rc = x ? plan_run(m, x, inputs, outputs, noutputs, st) : -1;
  if (rc == 0 && ticket.slot >= 0) /* the async policy's trial (variants.h) */
    rt_variant_timed(m, x->var, &ticket, rt_now_ns() - t0);
  pthread_mutex_unlock(&m->dm->lock);
  if (rc == 0) rt_ok(st);
  return rc;
}

/* ---- capture / replay ---- */

/* Record x's launches as one graph on the device (a CUDA graph on cuda, a
 * list on simt-emu), so a replay runs them in one call. Best effort: where
 * the device cannot record or recording fails, x keeps its launch list and
 * replays launch it one by one (always when the graph prints). */
static void plan_record(kiln_model *m, dm_plan *x) {
  if (!rt_device_can_record(m->device) || x->nlaunches == 0) return;
  for (int li = 0; li < x->nlaunches; li++) /* a print writes its line between launches */
    if (m->g->nodes[x->launches[li].node]->op == IR_OP_PRINT) return;
  if (rt_device_graph_begin(m->device, NULL) < 0) return;
  bool ok = true;
  for (int li = 0; li < x->nlaunches && ok; li++) {
    dm_launch *l = &x->launches[li];
    ok = rt_device_copy_dd(m->device, l->copy_dst, l->copy_src, l->copy_bytes, NULL) == 0 &&
         (!l->fn || rt_device_launch(m->device, l->fn, &l->dims, l->params, NULL) == 0);
  }
  void *graph = NULL;
  if (rt_device_graph_end(m->device, &graph, NULL) < 0) return; /* always ends the recording */
  if (ok) x->graph = graph;
  else rt_device_graph_free(m->device, graph);
}

static dm_capture *find_capture(kiln_model *m, uint64_t key) {
  for (int i = 0; i < m->dm->ncaptures; i++)
    if (m->dm->captures[i].key == key) return &m->dm->captures[i];
  return NULL;
}

static int dm_capture_run(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                          int ninputs, kiln_tensor **outputs, int noutputs, kiln_status *st) {
  pthread_mutex_lock(&m->dm->lock);
  int rc = -1;
  dm_plan *x = NULL;
  if (find_capture(m, key)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "key %llu is already captured (release it first)", (unsigned long long)key);
    goto done;
  }
  dm_capture *grown = realloc(m->dm->captures, sizeof *grown * (size_t)(m->dm->ncaptures + 1));
  if (!grown) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  m->dm->captures = grown;
  if (!(x = plan_build(m, inputs, ninputs, NULL, NULL, st))) goto done;
  x->pinned = true;
  if (plan_run(m, x, inputs, outputs, noutputs, st) < 0) goto done;
  plan_record(m, x);
  m->dm->captures[m->dm->ncaptures].key = key;
  m->dm->captures[m->dm->ncaptures].plan = x;
  m->dm->ncaptures++;
  x = NULL;
  rc = 0;
  rt_ok(st);
done:
  plan_free(m, x);
  pthread_mutex_unlock(&m->dm->lock);
  return rc;
}

static int check_replay_inputs(kiln_model *m, const dm_plan *x, uint64_t key,
                               kiln_tensor *const *inputs, int ninputs, kiln_status *st) {
  const ir_graph *g = m->g;
  if (ninputs != g->ninputs || (ninputs && !inputs))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the graph takes %d inputs, got %d",
                  g->ninputs, ninputs);
  for (int i = 0; i < g->ninputs; i++) {
    const kiln_tensor *t = inputs[i];
    bool same = t && (ir_dtype)t->dtype == g->inputs[i]->type.dtype &&
                t->rank == g->inputs[i]->type.rank;
    for (int a = 0; same && a < t->rank; a++) same = t->shape[a] == x->in_shape[i][a];
    if (!same)
      return rt_err(st, KILN_ERR_SHAPE,
                    "replay of key %llu: input %d (%s) must have the captured dtype and shape",
                    (unsigned long long)key, i, g->inputs[i]->name);
  }
  return 0;
}

static int dm_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                     kiln_tensor **outputs, int noutputs, kiln_status *st) {
  pthread_mutex_lock(&m->dm->lock);
  dm_capture *c = find_capture(m, key);
  int rc = -1;
  if (!c)
    rt_err(st, KILN_ERR_NOT_FOUND, "no capture under key %llu", (unsigned long long)key);
  else if (check_replay_inputs(m, c->plan, key, inputs, ninputs, st) == 0)
    rc = plan_run(m, c->plan, inputs, outputs, noutputs, st);
  pthread_mutex_unlock(&m->dm->lock);
  if (rc == 0) rt_ok(st);
  return rc;
}

static int dm_verify_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                            int ninputs, kiln_status *st) {
  pthread_mutex_lock(&m->dm->lock);
  dm_capture *c = find_capture(m, key);
  dm_plan *x = NULL;
  int rc = -1;
  if (!c) {
    rt_err(st, KILN_ERR_NOT_FOUND, "no capture under key %llu", (unsigned long long)key);
    goto done;
  }
  if (check_replay_inputs(m, c->plan, key, inputs, ninputs, st) < 0) goto done;
  if (!(x = plan_build(m, inputs, ninputs, NULL, NULL, st))) goto done;
  /* the eager launch trace must be the captured one: same kernels in the
   * same order, same geometry, same symbol values */
  const dm_plan *cp = c->plan;
  if (x->nlaunches != cp->nlaunches) {
    rt_err(st, KILN_ERR_RUNTIME, "verify replay of key %llu: %d launches now, %d captured",
           (unsigned long long)key, x->nlaunches, cp->nlaunches);
    goto done;
  }
  for (int i = 0; i < x->nlaunches; i++) {
    const dm_launch *a = &x->launches[i], *b = &cp->launches[i];
    bool same = a->node == b->node && a->fn == b->fn && a->np == b->np &&
                memcmp(&a->dims, &b->dims, sizeof a->dims) == 0 &&
                memcmp(a->ks, b->ks, sizeof *a->ks * (size_t)(a->np - 1 - n_bufs(m, a->node))) == 0;
    if (!same) {
      const ir_node *n = m->g->nodes[a->node];
      rt_err(st, KILN_ERR_RUNTIME, "verify replay of key %llu: launch %d (mo.%s at line %d) "
             "differs from the captured one", (unsigned long long)key, i,
             ir_op_get(n->op)->name, n->loc.line);
      goto done;
    }
  }
  rc = 0;
  rt_ok(st);
done:
  plan_free(m, x);
  pthread_mutex_unlock(&m->dm->lock);
  return rc;
}

static int dm_release(kiln_model *m, uint64_t key, kiln_status *st) {
  pthread_mutex_lock(&m->dm->lock);
  dm_capture *c = find_capture(m, key);
  if (c) {
    plan_free(m, c->plan);
    *c = m->dm->captures[--m->dm->ncaptures];
  }
  pthread_mutex_unlock(&m->dm->lock);
  if (!c) return rt_err(st, KILN_ERR_NOT_FOUND, "no capture under key %llu", (unsigned long long)key);
  rt_ok(st);
  return 0;
}

static void dm_free(kiln_model *m) {
  rt_dm *dm = m->dm;
  if (!dm) return;
  if (dm->lock_ok) {
    plan_free(m, dm->recent);
    for (int i = 0; i < dm->ncaptures; i++) plan_free(m, dm->captures[i].plan);
  }
  free(dm->captures);
  rt_dev_watch_free(m, dm->watch);
  rt_profile_free(m);
  for (int i = 0; i < m->g->nnodes; i++) {
    if (dm->kernels) {
      rt_device_module_unload(m->device, dm->kernels[i].handle);
      free(dm->kernels[i].sym_map);
    }
    if (dm->consts) kiln_device_free(m->device, dm->consts[i]);
    if (dm->weights) kiln_device_free(m->device, dm->weights[i]);
  }
  free(dm->kernels);
  free(dm->buffer_back);
  free(dm->consts);
  free(dm->weights);
  if (dm->lock_ok) pthread_mutex_destroy(&dm->lock);
  free(dm);
  m->dm = NULL;
}

/* ---- the simt backend (backend.h) ---- */
static int dm_node_syms(const kiln_model *m, int node) { /* store.slice: no variants */
  if (rt_node_is_buffer_op(m->g->nodes[node])) return -1;
  return m->dm->kernels[node].fn ? m->dm->kernels[node].nsyms : -1;
}

static int dm_compile_bound(kiln_model *m, int node, const rt_binding *b, rt_code *c,
                            kiln_counter *counter, double *ms, kiln_status *st) {
  double t0 = rt_now_ms();
  bool cached = false;
  if (load_code(m, node, b, c, &cached, st) < 0) return -1;
  *counter = cached ? KILN_COUNTER_DISK_HITS : KILN_COUNTER_COMPILES;
  *ms = rt_now_ms() - t0;
  return 0;
}

static void dm_code_free(kiln_model *m, rt_code *c) {
  rt_device_module_unload(m->device, c->handle);
  free(c->sym_map);
  *c = (rt_code){0};
}

const rt_backend rt_backend_simt = {
    .node_syms = dm_node_syms,
    .compile_bound = dm_compile_bound,
    .code_free = dm_code_free,
    .bind_weight = dm_bind_weight,
    .execute = dm_execute,
    .capture = dm_capture_run,
    .replay = dm_replay,
    .verify_replay = dm_verify_replay,
    .release = dm_release,
    .free = dm_free,
};
