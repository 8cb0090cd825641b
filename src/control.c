/* control.c - CPU models of graphs with control flow (ir/control.h): mo.if,
 * mo.while and mo.call run by the host, their regions as prepared models.
 *
 * kiln_model_compile hands a graph with control nodes here (rt_flow_compile).
 * The graph is split into steps (ir_flow_split): every segment of ordinary
 * nodes, every region of a mo.if / mo.while and every subgraph a mo.call
 * names becomes a region: a plain CPU model (kiln_model_compile: fusion,
 * planner, variants, the context's caches) when it has no control nodes,
 * else a flow of its own, recursively. Everything is compiled here, at model
 * compile; an execute never compiles. A subgraph called N times is N
 * models, but their kernel texts are equal, so the context's memory cache
 * compiles each kernel once (KILN_COUNTER_COMPILES) and hits after.
 *
 * Execute walks the steps with host tensors: each region's model solves
 * its own symbols from the shapes it is given, so a loop's carried values
 * may change shape per iteration and a trip count may depend on data.
 * mo.while has no iteration limit (MAX has none): it runs until @cond gives
 * false. A result's constant dims are checked against what the region gave.
 * On a SIMT device (kiln_model_compile_on) every region model is a device
 * model of that device: the host drives the steps (reading a predicate
 * copies one bool back), each region's kernels launch on the device, and
 * values move between host and device at region boundaries. On simt-emu,
 * whose symbol namespace is one per device and whose kernel names are
 * node positions, each region model gets an emulator device of its own,
 * so that two regions' different kernels at one position do not clash.
 * Weights (mo.constant.external) of every region are the model's weights:
 * binding one binds it in each region model that reads it (a mo.call's
 * prefix is part of the names). Not supported on such models (clear
 * errors): capture / replay and specialization of the model itself (each
 * region model specializes on its own). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "ir/control.h"
#include "rt.h"

typedef struct rt_region rt_region;

typedef struct rt_step {
  rt_region *sub[2]; /* segment: [0]; mo.if: then, else; mo.while: cond, body; mo.call: [0] */
  int nsub;
} rt_step;

typedef struct rt_flow_target { /* where region models run */
  kiln_device *device;      /* NULL: the host */
  kiln_context *target_ctx; /* a device model's caches (rt_model_compile_device) */
} rt_flow_target;

struct rt_region {
  const ir_graph *g; /* the graph it runs (borrowed from its owner) */
  kiln_model *model; /* no control nodes: a model of g */
  kiln_device *own_device; /* the simt-emu device opened for model, or NULL */
  ir_flow *flow;     /* else g's steps */
  rt_step *steps;
};

static void region_free(rt_region *r) {
  if (!r) return;
  kiln_model_free(r->model);
  kiln_device_close(r->own_device);
  for (int i = 0; r->flow && r->steps && i < r->flow->nsteps; i++)
    for (int k = 0; k < r->steps[i].nsub; k++) region_free(r->steps[i].sub[k]);
  free(r->steps);
  ir_flow_free(r->flow);
  free(r);
}

/* A plain model of g; a mo.call's prefix goes before its weights' names. */
static kiln_model *compile_plain(kiln_context *ctx, const rt_flow_target *t, rt_region *r,
                                 const ir_graph *g, const char *prefix, kiln_status *st) {
  kiln_graph kg = {.ir = (ir_graph *)g, .wsrc = NULL};
  ir_graph *copy = NULL;
  if (prefix && prefix[0]) {
    if (!(copy = ir_graph_clone(g))) {
      rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      return NULL;
    }
    for (int i = 0; i < copy->nnodes; i++) {
      ir_node *n = copy->nodes[i];
      if (n->op != IR_OP_CONSTANT_EXTERNAL) continue;
      const char *nm = ir_node_attr_string(n, "name", "");
      size_t a = strlen(prefix), b = strlen(nm);
      char *full = malloc(a + b + 1);
      if (!full || (memcpy(full, prefix, a), memcpy(full + a, nm, b + 1),
                    ir_node_set_attr_string(copy, n, "name", full))) {
        free(full);
        ir_graph_free(copy);
        rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
      }
      free(full);
    }
    kg.ir = copy;
  }
  kiln_device *d = t->device;
  if (d && kiln_device_get_kind(d) == KILN_DEVICE_SIMT_EMU) {
    if (!(r->own_device = kiln_device_open("simt-emu", st))) {
      ir_graph_free(copy);
      return NULL;
    }
    d = r->own_device;
  }
  kiln_model *m = d ? rt_model_compile_device(ctx, NULL, d, t->target_ctx, &kg, st)
                    : kiln_model_compile(ctx, &kg, st);
  ir_graph_free(copy);
  return m;
}

static rt_region *region_compile(kiln_context *ctx, const rt_flow_target *t,
                                 const ir_graph *main, const ir_graph *g, const char *prefix,
                                 kiln_status *st);

static int step_compile(kiln_context *ctx, const rt_flow_target *t, const ir_graph *main,
                        rt_region *r, int i, const char *prefix, kiln_status *st) {
  const ir_flow_step *fs = &r->flow->steps[i];
  rt_step *s = &r->steps[i];
  const ir_node *n = fs->node;
  if (!n) {
    s->nsub = 1;
    return (s->sub[0] = region_compile(ctx, t, main, fs->seg, prefix, st)) ? 0 : -1;
  }
  if (n->op == IR_OP_CALL) {
    const char *callee = ir_node_attr_string(n, "callee", "");
    const ir_graph *sg = ir_module_find(main, callee);
    if (!sg) return rt_err(st, KILN_ERR_VERIFY, "mo.call: unknown subgraph @%s", callee);
    const char *own = ir_node_attr_string(n, "prefix", "");
    size_t a = prefix ? strlen(prefix) : 0, b = strlen(own);
    char *full = malloc(a + b + 1);
    if (!full) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    if (a) memcpy(full, prefix, a);
    memcpy(full + a, own, b + 1);
    s->nsub = 1;
    s->sub[0] = region_compile(ctx, t, main, sg, full, st);
    free(full);
    return s->sub[0] ? 0 : -1;
  }
  for (int k = 0; k < n->nregions && k < 2; k++) {
    s->nsub = k + 1;
    if (!(s->sub[k] = region_compile(ctx, t, main, n->regions[k], prefix, st))) return -1;
  }
  return 0;
}

static rt_region *region_compile(kiln_context *ctx, const rt_flow_target *t,
                                 const ir_graph *main, const ir_graph *g, const char *prefix,
                                 kiln_status *st) {
  rt_region *r = calloc(1, sizeof *r);
  if (!r) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  r->g = g;
  if (!ir_graph_has_control(g)) {
    if (!(r->model = compile_plain(ctx, t, r, g, prefix, st))) goto fail;
    return r;
  }
  ir_diag d = {0};
  if (!(r->flow = ir_flow_split(g, &d))) {
    rt_err(st, KILN_ERR_VERIFY, "graph @%s: %s", g->name, d.msg);
    goto fail;
  }
  if (!(r->steps = calloc((size_t)r->flow->nsteps + 1, sizeof *r->steps))) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto fail;
  }
  for (int i = 0; i < r->flow->nsteps; i++)
    if (step_compile(ctx, t, main, r, i, prefix, st) < 0) goto fail;
  return r;
fail:
  region_free(r);
  return NULL;
}

/* ---- execute ---- */
static int region_run(rt_region *r, kiln_tensor **in, kiln_tensor **out, kiln_status *st);

static int node_err(const ir_node *n, kiln_status *st, const char *what) {
  const char *op = ir_op_get(n->op)->name, *res = n->nout ? n->out[0]->name : "";
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", what);
  if (n->loc.line > 0)
    return rt_err(st, kiln_status_code(st) ? kiln_status_code(st) : KILN_ERR_RUNTIME,
                  "mo.%s at line %d (%%%s): %s", op, n->loc.line, res, msg);
  return rt_err(st, kiln_status_code(st) ? kiln_status_code(st) : KILN_ERR_RUNTIME,
                "%s%smo.%s (%%%s): %s", n->origin ? n->origin : "", n->origin ? ": " : "", op,
                res, msg);
}

/* Region k of step s of node n, its errors prefixed with the node and region. */
static int sub_run(const ir_node *n, rt_region *sub, kiln_tensor **in, kiln_tensor **out,
                   kiln_status *st) {
  if (region_run(sub, in, out, st) == 0) return 0;
  char what[1024];
  snprintf(what, sizeof what, "region @%s: %s", sub->g->name, kiln_status_message(st));
  return node_err(n, st, what);
}

static void free_tensors(kiln_tensor **t, int n) {
  for (int i = 0; i < n; i++) {
    kiln_tensor_free(t[i]);
    t[i] = NULL;
  }
}

/* A host copy of t (on the host or a device). */
static kiln_tensor *tensor_copy(const kiln_tensor *t, kiln_status *st) {
  return kiln_tensor_copy_to(t, NULL, st);
}

/* A predicate's value (copied back when it lives on a device; a failed
 * copy reads as false and leaves its error in st for the caller). */
static bool truth(const kiln_tensor *t, kiln_status *st) {
  if (!t->device) return t->nbytes && ((const unsigned char *)t->data)[0];
  kiln_tensor *h = tensor_copy(t, st);
  bool v = h && truth(h, st);
  kiln_tensor_free(h);
  return v;
}

static int run_while(const ir_node *n, rt_step *s, kiln_tensor **in, kiln_tensor **out,
                     kiln_status *st) {
  int nc = n->nin, rc = -1;
  kiln_tensor **cur = calloc((size_t)nc + 1, sizeof *cur);
  kiln_tensor **next = calloc((size_t)nc + 1, sizeof *next);
  bool owned = false; /* cur holds the operands until the first iteration */
  if (!cur || !next) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto out;
  }
  memcpy(cur, in, (size_t)nc * sizeof *cur);
  for (;;) {
    kiln_tensor *pred = NULL;
    if (sub_run(n, s->sub[0], cur, &pred, st) < 0) goto out;
    bool go = truth(pred, st);
    kiln_tensor_free(pred);
    if (!go) break;
    if (sub_run(n, s->sub[1], cur, next, st) < 0) goto out;
    if (owned) free_tensors(cur, nc);
    memcpy(cur, next, (size_t)nc * sizeof *cur);
    memset(next, 0, (size_t)nc * sizeof *next);
    owned = true;
  }
  for (int i = 0; i < nc; i++) {
    if (owned) {
      out[i] = cur[i];
      cur[i] = NULL;
    } else if (!(out[i] = tensor_copy(cur[i], st))) {
      free_tensors(out, i);
      goto out;
    }
  }
  rc = 0;
out:
  if (owned && cur) free_tensors(cur, nc);
  free(cur);
  free(next);
  return rc;
}

static int check_results(const ir_node *n, kiln_tensor **out, kiln_status *st) {
  for (int i = 0; i < n->nout; i++) {
    const ir_type *t = &n->out[i]->type;
    for (int a = 0; a < t->rank; a++) {
      int64_t c;
      if (ir_dim_is_const(t->dims[a], &c) && out[i]->shape[a] != c) {
        char what[200];
        snprintf(what, sizeof what, "result %d axis %d: expected %lld, the region gave %lld", i,
                 a, (long long)c, (long long)out[i]->shape[a]);
        rt_err(st, KILN_ERR_SHAPE, "%s", "");
        return node_err(n, st, what);
      }
    }
  }
  return 0;
}

static int run_control(const ir_node *n, rt_step *s, kiln_tensor **in, kiln_tensor **out,
                       kiln_status *st) {
  int rc;
  if (n->op == IR_OP_IF)
    rc = sub_run(n, s->sub[truth(in[0], st) ? 0 : 1], in + 1, out, st);
  else if (n->op == IR_OP_WHILE)
    rc = run_while(n, s, in, out, st);
  else
    rc = sub_run(n, s->sub[0], in, out, st);
  if (rc == 0 && check_results(n, out, st) < 0) {
    free_tensors(out, n->nout);
    return -1;
  }
  return rc;
}

static int run_model(kiln_model *m, kiln_tensor **in, kiln_tensor **out, kiln_status *st) {
  for (int i = 0; i < m->noutputs; i++) out[i] = NULL;
  return kiln_model_execute(m, in, m->ninputs, out, m->noutputs, st);
}

static int region_run(rt_region *r, kiln_tensor **in, kiln_tensor **out, kiln_status *st) {
  if (r->model) return run_model(r->model, in, out, st);
  const ir_graph *g = r->g;
  for (int i = 0; i < g->ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    if ((ir_dtype)in[i]->dtype != t->dtype || in[i]->rank != t->rank)
      return rt_err(st, KILN_ERR_SHAPE, "input %d (%s): expected %s of rank %d, got %s of rank %d",
                    i, ir_ref_input_name(g, i), ir_dtype_name(t->dtype), t->rank,
                    kiln_dtype_name(in[i]->dtype), in[i]->rank);
  }
  size_t nv = (size_t)g->nvalues + 1;
  kiln_tensor **vals = calloc(nv, sizeof *vals);
  bool *owned = calloc(nv, sizeof *owned);
  int rc = -1, ndone = 0;
  if (!vals || !owned) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto out;
  }
  for (int i = 0; i < g->ninputs; i++) vals[g->inputs[i]->id] = in[i];
  for (int s = 0; s < r->flow->nsteps; s++) {
    const ir_flow_step *fs = &r->flow->steps[s];
    kiln_tensor *sin[fs->nin + 1], *sout[fs->nout + 1];
    for (int k = 0; k < fs->nin; k++) sin[k] = vals[fs->in[k]];
    memset(sout, 0, sizeof sout);
    int src = fs->node ? run_control(fs->node, &r->steps[s], sin, sout, st)
                       : region_run(r->steps[s].sub[0], sin, sout, st);
    if (src < 0) goto out;
    for (int k = 0; k < fs->nout; k++) {
      vals[fs->out[k]] = sout[k];
      owned[fs->out[k]] = true;
    }
  }
  for (int i = 0; i < g->noutputs; i++) { /* copies: an output may be an input, or repeated */
    if (!(out[i] = tensor_copy(vals[g->outputs[i]->id], st))) goto out;
    ndone = i + 1;
  }
  rc = 0;
out:
  if (rc < 0) free_tensors(out, ndone);
  for (size_t i = 0; vals && owned && i < nv; i++)
    if (owned[i]) kiln_tensor_free(vals[i]);
  free(vals);
  free(owned);
  return rc;
}

/* ---- the flow backend (backend.h) ---- */
static int flow_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                        kiln_tensor **outputs, int noutputs, kiln_status *st) {
  if (noutputs != m->noutputs || !outputs)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the model has %d output%s, got room for %d",
                  m->noutputs, m->noutputs == 1 ? "" : "s", outputs ? noutputs : 0);
  if (ninputs != m->ninputs || (ninputs && !inputs))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "the model takes %d input%s, got %d",
                  m->ninputs, m->ninputs == 1 ? "" : "s", ninputs);
  for (int i = 0; i < ninputs; i++) {
    if (!inputs[i])
      return rt_err(st, KILN_ERR_NOT_FOUND, "input %d (%s) is missing (NULL)", i,
                    m->inputs[i].name);
    if (inputs[i]->device)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                    "input %d (%s) lives on a device: kiln_model_execute takes host tensors", i,
                    m->inputs[i].name);
  }
  kiln_tensor *res[noutputs + 1];
  memset(res, 0, sizeof res);
  if (region_run(m->flow, (kiln_tensor **)inputs, res, st) < 0) return -1;
  int rc = 0;
  for (int i = 0; i < noutputs && rc == 0; i++) {
    kiln_tensor *t = outputs[i];
    if (!t) continue;
    bool same = t->dtype == res[i]->dtype && t->rank == res[i]->rank && !t->device;
    for (int a = 0; same && a < t->rank; a++) same = t->shape[a] == res[i]->shape[a];
    if (!same)
      rc = rt_err(st, KILN_ERR_SHAPE,
                  "output %d (%s): the caller's tensor does not have the result's dtype and "
                  "shape (pass NULL to get a fresh tensor)", i, m->outputs[i].name);
    else if (t->nbytes)
      memcpy(t->data, res[i]->data, t->nbytes);
  }
  for (int i = 0; i < noutputs; i++) {
    if (rc == 0 && !outputs[i]) {
      outputs[i] = res[i];
      res[i] = NULL;
    }
    kiln_tensor_free(res[i]);
  }
  if (rc == 0) rt_ok(st);
  return rc;
}

static int flow_unsupported(const kiln_model *m, const char *what, kiln_status *st) {
  return rt_err(st, KILN_ERR_UNSUPPORTED,
                "graph @%s has control flow (mo.if, mo.while, mo.call): %s is not supported on "
                "it; execute it instead", m->g->name, what);
}

static int flow_node_syms(const kiln_model *m, int node) {
  (void)m;
  (void)node;
  return -1;
}
static int flow_compile_bound(kiln_model *m, int node, const rt_binding *b, rt_code *c,
                              kiln_counter *counter, double *ms, kiln_status *st) {
  (void)node, (void)b, (void)c, (void)counter, (void)ms;
  return flow_unsupported(m, "specialization", st);
}
static void flow_code_free(kiln_model *m, rt_code *c) {
  (void)m;
  (void)c;
}
/* Call fn on every region model under r. */
static int each_model(rt_region *r, int (*fn)(kiln_model *sm, void *ud, kiln_status *st),
                      void *ud, kiln_status *st) {
  if (r->model) return fn(r->model, ud, st);
  for (int i = 0; i < r->flow->nsteps; i++)
    for (int k = 0; k < r->steps[i].nsub; k++)
      if (each_model(r->steps[i].sub[k], fn, ud, st) < 0) return -1;
  return 0;
}

typedef struct bind_req {
  const char *name;
  const kiln_tensor *t;
} bind_req;

static int bind_in(kiln_model *sm, void *ud, kiln_status *st) {
  const bind_req *b = ud;
  for (int w = 0; w < sm->nweights; w++)
    if (strcmp(sm->weights[w].port.name, b->name) == 0)
      return kiln_model_bind_weight(sm, b->name, b->t, st);
  return 0;
}

static int flow_bind_weight(kiln_model *m, int w, const kiln_tensor *t, kiln_status *st) {
  bind_req b = {m->weights[w].port.name, t};
  if (each_model(m->flow, bind_in, &b, st) < 0) return -1;
  m->weights[w].bound = t;
  return 0;
}

/* The weights of region model sm become m's (once per name, one type). */
static int gather_weights(kiln_model *sm, void *ud, kiln_status *st) {
  kiln_model *m = ud;
  for (int i = 0; i < sm->nweights; i++) {
    const rt_port *p = &sm->weights[i].port;
    int w = -1;
    for (int k = 0; k < m->nweights && w < 0; k++)
      if (strcmp(m->weights[k].port.name, p->name) == 0) w = k;
    if (w < 0) {
      if (rt_model_add_weight(m, p->name, &p->type, sm->weights[i].align, st) < 0) return -1;
    } else if (!ir_type_equal(&m->weights[w].port.type, &p->type)) {
      return rt_err(st, KILN_ERR_VERIFY, "weight '%s' is declared with two types in the "
                    "regions of graph @%s", p->name, m->g->name);
    }
  }
  return 0;
}
static int flow_capture(kiln_model *m, uint64_t key, kiln_tensor *const *inputs, int ninputs,
                        kiln_tensor **outputs, int noutputs, kiln_status *st) {
  (void)key, (void)inputs, (void)ninputs, (void)outputs, (void)noutputs;
  return flow_unsupported(m, "capture", st);
}
static int flow_verify_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                              int ninputs, kiln_status *st) {
  (void)key, (void)inputs, (void)ninputs;
  return flow_unsupported(m, "replay", st);
}
static int flow_release(kiln_model *m, uint64_t key, kiln_status *st) {
  (void)key;
  return flow_unsupported(m, "release", st);
}
static void flow_free(kiln_model *m) {
  region_free(m->flow);
  m->flow = NULL;
}

static const rt_backend rt_backend_flow = {
    .node_syms = flow_node_syms,
    .compile_bound = flow_compile_bound,
    .code_free = flow_code_free,
    .bind_weight = flow_bind_weight,
    .execute = flow_execute,
    .capture = flow_capture,
    .replay = flow_capture,
    .verify_replay = flow_verify_replay,
    .release = flow_release,
    .free = flow_free,
};

bool rt_flow_wanted(const ir_graph *g) { return ir_graph_has_control(g); }

int rt_flow_compile(kiln_model *m, kiln_context *target_ctx, kiln_status *st) {
  rt_flow_target t = {m->device, target_ctx};
  m->be = &rt_backend_flow;
  if (!(m->flow = region_compile(m->ctx, &t, m->g, m->g, "", st))) return -1;
  return each_model(m->flow, gather_weights, m, st);
}
