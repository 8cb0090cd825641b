/* device_model.c - graphs on a device (kiln/device.h: kiln_device_model_*).
 *
 * Compile: verify a clone of the graph, pick the SIMT target of the device
 * (simt-emu: host code; cuda: PTX for the device's SM, sm_80 at least;
 * hip: a gfx90a code object), compile each kernel node on its own
 * (jit_simt_compile_graph with only_node), load it as a device module and
 * look its kernel up; keep each kernel's symbol map (ir_kernel_text) since
 * a kernel reads its own symbols; copy the constants to the device.
 * Execute: solve the symbols from the input shapes (ir_solve_symbols, the
 * interpreter's messages), allocate one device buffer per value (no
 * planner yet), copy inputs in, launch each kernel with jit_simt_geometry's
 * grid, read the error word after each kernel (a data error names the op),
 * copy the outputs back, free the buffers.
 * Guarantees: every failure frees what the call allocated and says what and
 * where; executes on one model are serialized by its lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../jit/simt.h"
#include "device.h"
#include "gpu_link.h"

typedef struct dm_kernel {
  void *module;
  void *fn;
  int *sym_map; /* kernel symbol j = graph symbol sym_map[j] */
  int nsyms;
} dm_kernel;

struct kiln_device_model {
  kiln_device *dev;
  ir_graph *g;         /* verified clone, owned */
  jit_simt_target target;
  dm_kernel *kernels;  /* g->nnodes, zeroed for source nodes */
  kiln_devptr *consts; /* g->nnodes: device copy of a mo.constant's data, or 0 */
  kiln_devptr *weights;/* g->nnodes: device copy of a bound mo.constant.external, or 0 */
  size_t *weight_bytes;
  double compile_ms;
  pthread_mutex_t lock;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

KILN_API void kiln_device_model_free(kiln_device_model *m) {
  if (!m) return;
  for (int i = 0; m->g && i < m->g->nnodes; i++) {
    if (m->kernels) {
      rt_device_module_unload(m->dev, m->kernels[i].module);
      free(m->kernels[i].sym_map);
    }
    if (m->consts) kiln_device_free(m->dev, m->consts[i]);
    if (m->weights) kiln_device_free(m->dev, m->weights[i]);
  }
  free(m->kernels);
  free(m->consts);
  free(m->weights);
  free(m->weight_bytes);
  ir_graph_free(m->g);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

static int pick_target(kiln_device *d, jit_simt_target *t, kiln_status *st) {
  char err[256];
  const char *name = NULL;
  switch (kiln_device_get_kind(d)) {
  case KILN_DEVICE_SIMT_EMU: name = "simt-emu"; break;
  case KILN_DEVICE_CUDA:
    /* the description says "(sm_XY, ...)": sm_90 and up get sm_90 code */
    name = strstr(kiln_device_description(d), "(sm_9") ? "sm_90" : "sm_80";
    break;
  case KILN_DEVICE_HIP:
    name = strstr(kiln_device_description(d), "gfx942") ? "gfx942" : "gfx90a";
    break;
  case KILN_DEVICE_CPU:
    return rt_err(st, KILN_ERR_UNSUPPORTED,
                  "cpu: graphs run on the CPU through kiln_model_compile, not a device model");
  }
  if (!name || jit_simt_target_parse(name, t, err, sizeof err) < 0)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: no SIMT target", kiln_device_label(d));
  return 0;
}

/* Compile and load node i's kernel. */
static int load_kernel(kiln_device_model *m, int i, kiln_status *st) {
  const ir_graph *g = m->g;
  const ir_node *n = g->nodes[i];
  dm_kernel *k = &m->kernels[i];
  k->sym_map = calloc((size_t)g->nsyms + 1, sizeof *k->sym_map);
  if (!k->sym_map) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  char *text = ir_kernel_text(g, n, k->sym_map, &k->nsyms);
  if (!text) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  free(text);
  char err[2048] = "", name[64];
  void *image = NULL, *linked = NULL;
  size_t len = 0;
  if (jit_simt_compile_graph(g, &m->target, NULL, NULL, i, false, &image, &len, err,
                             sizeof err) < 0)
    return rt_err(st, KILN_ERR_COMPILE, "%s: %s", kiln_device_label(m->dev), err);
  int rc = 0;
  if (m->target.kind == JIT_SIMT_AMDGPU) {
    size_t llen = 0;
    rc = rt_link_amdgpu(image, len, &linked, &llen, st);
    len = llen;
  }
  if (rc == 0)
    rc = rt_device_module_load(m->dev, linked ? linked : image, len, &k->module, st);
  free(image);
  free(linked);
  if (rc < 0) return -1;
  jit_simt_kernel_name(g, i, name, sizeof name);
  return rt_device_module_function(m->dev, k->module, name, &k->fn, st);
}

static int upload_constant(kiln_device_model *m, int i, kiln_status *st) {
  const ir_node *n = m->g->nodes[i];
  const ir_attr *a = ir_node_attr(n, "value");
  const ir_type *t = &n->out[0]->type;
  int64_t numel = -1;
  if (!a || a->kind != IR_ATTR_DENSE || !ir_type_static_numel(t, &numel) || numel < 0)
    return rt_err(st, KILN_ERR_VERIFY, "mo.constant at line %d: no dense value of static shape",
                  n->loc.line);
  size_t es = ir_dtype_size(t->dtype), bytes = (size_t)numel * es;
  char *host = malloc(bytes ? bytes : 1);
  if (!host) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  if (a->u.dense.numel == numel)
    memcpy(host, a->u.dense.data, bytes);
  else
    for (int64_t k = 0; k < numel; k++) memcpy(host + (size_t)k * es, a->u.dense.data, es);
  int rc = kiln_device_alloc(m->dev, bytes, &m->consts[i], st);
  if (rc == 0) rc = kiln_device_copy_to(m->dev, m->consts[i], host, bytes, st);
  free(host);
  return rc;
}

KILN_API kiln_device_model *kiln_device_model_compile(kiln_device *d, const kiln_graph *kg,
                                                      kiln_status *st) {
  if (!d || !kg) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_model_compile: NULL argument");
    return NULL;
  }
  double t0 = now_ms();
  kiln_device_model *m = calloc(1, sizeof *m);
  if (!m || pthread_mutex_init(&m->lock, NULL) != 0) {
    free(m);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  m->dev = d;
  ir_diag diag = {0};
  if (pick_target(d, &m->target, st) < 0) goto fail;
  if (!(m->g = ir_graph_clone(kg->ir))) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  if (ir_graph_verify(m->g, &diag) < 0) {
    rt_err_diag(st, KILN_ERR_VERIFY, NULL, &diag);
    goto fail;
  }
  size_t nn = (size_t)m->g->nnodes + 1;
  m->kernels = calloc(nn, sizeof *m->kernels);
  m->consts = calloc(nn, sizeof *m->consts);
  m->weights = calloc(nn, sizeof *m->weights);
  m->weight_bytes = calloc(nn, sizeof *m->weight_bytes);
  if (!m->kernels || !m->consts || !m->weights || !m->weight_bytes) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  for (int i = 0; i < m->g->nnodes; i++) {
    const ir_node *n = m->g->nodes[i];
    int rc = n->op == IR_OP_CONSTANT            ? upload_constant(m, i, st)
             : n->op == IR_OP_CONSTANT_EXTERNAL ? 0
                                                : load_kernel(m, i, st);
    if (rc < 0) goto fail;
  }
  m->compile_ms = now_ms() - t0;
  rt_ok(st);
  return m;
fail:
  kiln_device_model_free(m);
  return NULL;
}

KILN_API double kiln_device_model_compile_ms(const kiln_device_model *m) {
  return m ? m->compile_ms : 0;
}

KILN_API int kiln_device_model_bind_weight(kiln_device_model *m, const char *name,
                                           const kiln_tensor *t, kiln_status *st) {
  if (!m || !name || !t)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_model_bind_weight: NULL argument");
  for (int i = 0; i < m->g->nnodes; i++) {
    const ir_node *n = m->g->nodes[i];
    if (n->op != IR_OP_CONSTANT_EXTERNAL || strcmp(ir_node_attr_string(n, "name", ""), name))
      continue;
    const ir_type *ty = &n->out[0]->type;
    bool same = (ir_dtype)t->dtype == ty->dtype && t->rank == ty->rank;
    for (int a = 0; same && a < t->rank; a++) {
      int64_t v;
      same = ir_dim_is_const(ty->dims[a], &v) && v == t->shape[a];
    }
    if (!same)
      return rt_err(st, KILN_ERR_SHAPE, "weight '%s': the tensor's dtype or shape differs from "
                    "the graph's", name);
    pthread_mutex_lock(&m->lock);
    kiln_device_free(m->dev, m->weights[i]);
    m->weights[i] = 0;
    int rc = kiln_device_alloc(m->dev, t->nbytes, &m->weights[i], st);
    if (rc == 0) rc = kiln_device_copy_to(m->dev, m->weights[i], t->data, t->nbytes, st);
    m->weight_bytes[i] = t->nbytes;
    pthread_mutex_unlock(&m->lock);
    return rc;
  }
  return rt_err(st, KILN_ERR_NOT_FOUND, "the graph has no weight named '%s'", name);
}

/* Scratch of one execute. */
typedef struct dm_exec {
  kiln_devptr *buf;  /* per value */
  bool *owned;       /* buf allocated by this execute */
  int64_t *syms;
  kiln_devptr errword;
} dm_exec;

static int run_kernel(kiln_device_model *m, int i, dm_exec *x, kiln_status *st) {
  const ir_graph *g = m->g;
  const ir_node *n = g->nodes[i];
  const dm_kernel *k = &m->kernels[i];
  char err[512];
  jit_simt_dims dims;
  if (jit_simt_geometry(n, x->syms, &dims, err, sizeof err) < 0)
    return rt_err(st, KILN_ERR_SHAPE, "mo.%s at line %d: %s", ir_op_get(n->op)->name,
                  n->loc.line, err);
  if (!dims.grid[0] || !dims.grid[1] || !dims.grid[2]) return 0; /* nothing to compute */
  int nb = n->nin + n->nout, np = nb + k->nsyms + 1;
  kiln_devptr *bufs = calloc((size_t)nb + 1, sizeof *bufs);
  int64_t *ks = calloc((size_t)k->nsyms + 1, sizeof *ks);
  void **params = calloc((size_t)np, sizeof *params);
  int rc = -1;
  if (!bufs || !ks || !params) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int j = 0; j < n->nin; j++) bufs[j] = x->buf[n->in[j]->id];
  for (int j = 0; j < n->nout; j++) bufs[n->nin + j] = x->buf[n->out[j]->id];
  for (int j = 0; j < nb; j++) params[j] = &bufs[j];
  for (int j = 0; j < k->nsyms; j++) {
    ks[j] = x->syms[k->sym_map[j]];
    params[nb + j] = &ks[j];
  }
  params[nb + k->nsyms] = &x->errword;
  rt_launch_dims ld = {{dims.grid[0], dims.grid[1], dims.grid[2]},
                       {dims.block[0], dims.block[1], dims.block[2]},
                       /* static shared memory: a global on GPUs, given by the launch on emu */
                       kiln_device_get_kind(m->dev) == KILN_DEVICE_SIMT_EMU ? dims.shared_bytes
                                                                              : 0};
  if (rt_device_launch(m->dev, k->fn, &ld, params, st) < 0) goto done;
  int32_t code = 0;
  if (kiln_device_copy_from(m->dev, &code, x->errword, sizeof code, st) < 0) goto done;
  if (code != 0) {
    rt_err(st, KILN_ERR_RUNTIME, "mo.%s at line %d (%%%s): %s", ir_op_get(n->op)->name,
           n->loc.line, n->out[0]->name, jit_kernel_error(code));
    goto done;
  }
  rc = 0;
done:
  free(bufs);
  free(ks);
  free(params);
  return rc;
}

/* Device buffer for value v of `bytes` bytes. */
static int alloc_value(kiln_device_model *m, dm_exec *x, const ir_value *v, kiln_status *st) {
  int64_t shape[IR_MAX_RANK];
  char msg[512];
  if (ir_eval_shape(&v->type, x->syms, shape, msg, sizeof msg) < 0)
    return rt_err(st, KILN_ERR_SHAPE, "%%%s: %s", v->name, msg);
  int64_t numel = 1;
  for (int a = 0; a < v->type.rank; a++)
    if (__builtin_mul_overflow(numel, shape[a], &numel))
      return rt_err(st, KILN_ERR_SHAPE, "%%%s: element count overflows", v->name);
  if (kiln_device_alloc(m->dev, (size_t)numel * ir_dtype_size(v->type.dtype), &x->buf[v->id],
                        st) < 0)
    return -1;
  x->owned[v->id] = true;
  return 0;
}

KILN_API int kiln_device_model_execute(kiln_device_model *m, kiln_tensor *const *inputs,
                                       int ninputs, kiln_tensor **outputs, int noutputs,
                                       kiln_status *st) {
  if (!m) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_device_model_execute: model is NULL");
  const ir_graph *g = m->g;
  if (ninputs != g->ninputs || (ninputs && !inputs))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the graph takes %d inputs, got %d",
                  g->ninputs, ninputs);
  if (noutputs != g->noutputs || !outputs)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the graph has %d outputs, got room for %d",
                  g->noutputs, noutputs);
  ir_tensor *ins = calloc((size_t)g->ninputs + 1, sizeof *ins);
  dm_exec x = {0};
  x.buf = calloc((size_t)g->nvalues + 1, sizeof *x.buf);
  x.owned = calloc((size_t)g->nvalues + 1, sizeof *x.owned);
  x.syms = calloc((size_t)g->nsyms + 1, sizeof *x.syms);
  kiln_tensor **fresh = calloc((size_t)g->noutputs + 1, sizeof *fresh);
  int rc = -1;
  char msg[1024];
  pthread_mutex_lock(&m->lock);
  if (!ins || !x.buf || !x.owned || !x.syms || !fresh) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory starting an execute");
    goto done;
  }
  for (int i = 0; i < g->ninputs; i++) {
    const kiln_tensor *t = inputs[i];
    if (!t || t->rank != g->inputs[i]->type.rank) {
      rt_err(st, KILN_ERR_SHAPE, "input %d (%s): expected rank %d", i, g->inputs[i]->name,
             g->inputs[i]->type.rank);
      goto done;
    }
    ins[i].dtype = (ir_dtype)t->dtype;
    ins[i].rank = t->rank;
    memcpy(ins[i].shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
    ins[i].data = t->data;
  }
  if (ir_solve_symbols(g, ins, g->ninputs, x.syms, msg, sizeof msg) < 0) {
    rt_err(st, KILN_ERR_SHAPE, "%s", msg);
    goto done;
  }
  if (kiln_device_alloc(m->dev, sizeof(int32_t), &x.errword, st) < 0) goto done;
  int32_t zero = 0;
  if (kiln_device_copy_to(m->dev, x.errword, &zero, sizeof zero, st) < 0) goto done;
  for (int i = 0; i < g->ninputs; i++) {
    if (alloc_value(m, &x, g->inputs[i], st) < 0 ||
        kiln_device_copy_to(m->dev, x.buf[g->inputs[i]->id], inputs[i]->data, inputs[i]->nbytes,
                            st) < 0)
      goto done;
  }
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (n->op == IR_OP_CONSTANT) {
      x.buf[n->out[0]->id] = m->consts[i];
      continue;
    }
    if (n->op == IR_OP_CONSTANT_EXTERNAL) {
      if (!m->weights[i]) {
        rt_err(st, KILN_ERR_NOT_FOUND, "weight '%s' is not bound (kiln_device_model_bind_weight)",
               ir_node_attr_string(n, "name", "?"));
        goto done;
      }
      x.buf[n->out[0]->id] = m->weights[i];
      continue;
    }
    for (int j = 0; j < n->nout; j++)
      if (alloc_value(m, &x, n->out[j], st) < 0) goto done;
    if (run_kernel(m, i, &x, st) < 0) goto done;
  }
  for (int i = 0; i < g->noutputs; i++) {
    const ir_value *v = g->outputs[i];
    int64_t shape[IR_MAX_RANK];
    if (ir_eval_shape(&v->type, x.syms, shape, msg, sizeof msg) < 0) {
      rt_err(st, KILN_ERR_SHAPE, "output %d: %s", i, msg);
      goto done;
    }
    kiln_tensor *t = outputs[i];
    if (!t) {
      t = fresh[i] = rt_tensor_alloc((kiln_dtype)v->type.dtype, v->type.rank, shape, st);
      if (!t) goto done;
    } else {
      bool same = (ir_dtype)t->dtype == v->type.dtype && t->rank == v->type.rank;
      for (int a = 0; same && a < t->rank; a++) same = t->shape[a] == shape[a];
      if (!same) {
        rt_err(st, KILN_ERR_SHAPE, "output %d (%s): the tensor's dtype or shape differs", i,
               v->name);
        goto done;
      }
    }
    if (kiln_device_copy_from(m->dev, t->data, x.buf[v->id], t->nbytes, st) < 0) goto done;
  }
  for (int i = 0; i < g->noutputs; i++)
    if (!outputs[i]) {
      outputs[i] = fresh[i];
      fresh[i] = NULL;
    }
  rc = 0;
  rt_ok(st);
done:
  pthread_mutex_unlock(&m->lock);
  for (int v = 0; x.owned && v < g->nvalues; v++)
    if (x.owned[v]) kiln_device_free(m->dev, x.buf[v]);
  kiln_device_free(m->dev, x.errword);
  for (int i = 0; fresh && i < g->noutputs; i++) kiln_tensor_free(fresh[i]);
  free(fresh);
  free(ins);
  free(x.buf);
  free(x.owned);
  free(x.syms);
  return rc;
}
