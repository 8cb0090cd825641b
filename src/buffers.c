/* buffers.c - the CPU runtime's buffer ops (buffers.h): contiguous copies,
 * row runs for a slice store, the bounds check a slice needs, the in-place
 * custom kernel pattern (rt_buffer_alias_in_place), and loads that read the
 * buffer's own memory (rt_buffer_alias_loads). */
#include <stdio.h>
#include <string.h>

#include "buffers.h"

bool rt_node_is_buffer_op(const ir_node *n) {
  const ir_op_info *o = n ? ir_op_get(n->op) : NULL;
  return o && o->cls == IR_CLS_BUFFER;
}

static int fail(const ir_node *n, kiln_status *st, const char *why) {
  const char *opn = ir_op_get(n->op)->name;
  const char *buf = n->nin > 0 ? n->in[0]->name : n->out[0]->name;
  if (n->loc.line > 0)
    return rt_err(st, KILN_ERR_RUNTIME, "mo.%s at line %d:%d (buffer %%%s): %s", opn, n->loc.line,
                  n->loc.col, buf, why);
  return rt_err(st, KILN_ERR_RUNTIME, "mo.%s (op #%d, buffer %%%s): %s", opn, n->id, buf, why);
}

/* v's shape under syms into shape; its byte count into *bytes. */
static int shape_of(const ir_node *n, const ir_value *v, const int64_t *syms, int64_t *shape,
                    size_t *bytes, kiln_status *st) {
  char msg[400];
  if (ir_eval_shape(&v->type, syms, shape, msg, sizeof msg) < 0) return fail(n, st, msg);
  size_t count = 1;
  for (int a = 0; a < v->type.rank; a++) count *= (size_t)shape[a];
  *bytes = count * ir_dtype_size(v->type.dtype);
  return 0;
}

static int64_t start_at(const ir_value *v, const void *data, int a) {
  if (v->type.dtype == IR_DT_SI32) return ((const int32_t *)data)[a];
  return ((const int64_t *)data)[a];
}

int rt_buffer_slice_check(const ir_node *n, const void *start_data, const int64_t *syms,
                          int64_t *start, kiln_status *st) {
  int64_t bshape[IR_MAX_RANK], sshape[IR_MAX_RANK];
  size_t bbytes, sbytes;
  if (shape_of(n, n->in[0], syms, bshape, &bbytes, st) < 0 ||
      shape_of(n, n->in[1], syms, sshape, &sbytes, st) < 0)
    return -1;
  for (int a = 0; a < n->in[0]->type.rank; a++) {
    start[a] = start_at(n->in[2], start_data, a);
    if (start[a] < 0 || start[a] > bshape[a] - sshape[a]) {
      char why[200];
      snprintf(why, sizeof why, "the slice [%lld, %lld) of axis %d is outside the buffer's %lld",
               (long long)start[a], (long long)(start[a] + sshape[a]), a, (long long)bshape[a]);
      return fail(n, st, why);
    }
  }
  return 0;
}

/* buf[start ...] = src: the innermost axis is a run of contiguous bytes,
 * walked over the outer axes of src. */
static int store_slice(const ir_node *n, void *const *bufs, const int64_t *syms,
                       kiln_status *st) {
  const ir_value *bv = n->in[0], *sv = n->in[1];
  int64_t bshape[IR_MAX_RANK], sshape[IR_MAX_RANK], start[IR_MAX_RANK];
  size_t bbytes = 0, sbytes = 0;
  if (rt_buffer_slice_check(n, bufs[n->in[2]->id], syms, start, st) < 0 ||
      shape_of(n, bv, syms, bshape, &bbytes, st) < 0 ||
      shape_of(n, sv, syms, sshape, &sbytes, st) < 0)
    return -1;
  int rank = bv->type.rank;
  if (sbytes == 0) return 0;
  size_t es = ir_dtype_size(bv->type.dtype);
  if (rank == 0) {
    memmove(bufs[bv->id], bufs[sv->id], es);
    return 0;
  }
  size_t run = (size_t)sshape[rank - 1] * es;
  int64_t rows = 1, idx[IR_MAX_RANK] = {0};
  for (int a = 0; a < rank - 1; a++) rows *= sshape[a];
  char *dst = bufs[bv->id];
  const char *src = bufs[sv->id];
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = 0;
    for (int a = 0; a < rank; a++) off = off * bshape[a] + start[a] + (a < rank - 1 ? idx[a] : 0);
    memmove(dst + (size_t)off * es, src + (size_t)r * run, run);
    for (int a = rank - 2; a >= 0; a--) {
      if (++idx[a] < sshape[a]) break;
      idx[a] = 0;
    }
  }
  return 0;
}

int rt_buffer_run(const ir_graph *g, const ir_node *n, void *const *bufs, const int64_t *syms,
                  kiln_status *st) {
  (void)g;
  int64_t shape[IR_MAX_RANK];
  size_t bytes = 0;
  switch (n->op) {
  case IR_OP_CHAIN_CREATE: return 0;
  case IR_OP_BUFFER_CREATE:
    if (shape_of(n, n->out[0], syms, shape, &bytes, st) < 0) return -1;
    if (bytes) memset(bufs[n->out[0]->id], 0, bytes);
    return 0;
  case IR_OP_MUTABLE_LOAD: /* the same memory: an alias of the buffer (plan.h) */
    if (bufs[n->out[0]->id] == bufs[n->in[0]->id]) return 0;
    if (shape_of(n, n->in[0], syms, shape, &bytes, st) < 0) return -1;
    if (bytes) memmove(bufs[n->out[0]->id], bufs[n->in[0]->id], bytes);
    return 0;
  case IR_OP_MUTABLE_STORE: /* the same memory: an in-place kernel's result */
    if (shape_of(n, n->in[0], syms, shape, &bytes, st) < 0) return -1;
    if (bytes && bufs[n->in[0]->id] != bufs[n->in[1]->id])
      memmove(bufs[n->in[0]->id], bufs[n->in[1]->id], bytes);
    return 0;
  case IR_OP_MUTABLE_STORE_SLICE: return store_slice(n, bufs, syms, st);
  default: break;
  }
  return fail(n, st, "not a buffer op the CPU runtime runs");
}

/* The one node that uses v (as an operand; a graph output counts as a use
 * of no node), or NULL when v has another use. */
static const ir_node *only_user(const ir_graph *g, const ir_value *v) {
  if (ir_value_uses(g, v) != 1) return NULL;
  for (int i = v->def ? v->def->id + 1 : 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i]->nin; j++)
      if (g->nodes[i]->in[j] == v) return g->nodes[i];
  return NULL;
}

int rt_buffer_alias_in_place(const ir_graph *g, int *alias) {
  int found = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *k = g->nodes[i];
    if (k->op != IR_OP_INPLACE_CUSTOM) continue;
    const ir_value *t = k->in[0], *y = k->out[0];
    const ir_node *load = t->def, *store = only_user(g, y);
    if (!load || load->op != IR_OP_MUTABLE_LOAD || t->index != 0 || only_user(g, t) != k ||
        !store || store->op != IR_OP_MUTABLE_STORE || store->in[0] != load->in[0] ||
        store->in[1] != y || store->in[2] != load->out[1])
      continue;
    /* store's chain is load's: no other access to the buffer comes between */
    alias[t->id] = alias[y->id] = load->in[0]->id;
    found++;
  }
  return found;
}

/* Whether node n writes the memory of buffer value b: a store into b, or a
 * kernel whose result is b's own memory (an in-place kernel, aliased above). */
static bool writes_buffer(const ir_node *n, int b, const int *alias) {
  if (n->op == IR_OP_MUTABLE_LOAD) return false; /* its results are read-only views */
  if ((n->op == IR_OP_MUTABLE_STORE || n->op == IR_OP_MUTABLE_STORE_SLICE) && n->nin > 0 &&
      (n->in[0]->id == b || alias[n->in[0]->id] == b))
    return true;
  for (int j = 0; j < n->nout; j++)
    if (alias[n->out[j]->id] == b) return true;
  return false;
}

static bool is_graph_output(const ir_graph *g, const ir_value *v) {
  for (int o = 0; o < g->noutputs; o++)
    if (g->outputs[o] == v) return true;
  return false;
}

int rt_buffer_alias_loads(const ir_graph *g, int *alias) {
  int found = 0;
  for (int l = 0; l < g->nnodes; l++) {
    const ir_node *load = g->nodes[l];
    if (load->op != IR_OP_MUTABLE_LOAD || load->nout < 1 || load->nin < 1) continue;
    const ir_value *t = load->out[0];
    int tid = t->id, b = alias[load->in[0]->id] >= 0 ? alias[load->in[0]->id] : load->in[0]->id;
    if (alias[tid] >= 0 || is_graph_output(g, t)) continue; /* in place already; a copy out */
    int last = -1; /* the last node reading t, or an alias of it (a reshape's result) */
    for (int i = l + 1; i < g->nnodes; i++)
      for (int j = 0; j < g->nodes[i]->nin; j++) {
        int v = g->nodes[i]->in[j]->id;
        if (v == tid || alias[v] == tid) last = i;
      }
    bool written = false; /* between the load and the last read, at that read included */
    for (int i = l + 1; i <= last && !written; i++) written = writes_buffer(g->nodes[i], b, alias);
    if (written) continue;
    alias[tid] = b;
    for (int v = 0; v < g->nvalues; v++)
      if (alias[v] == tid) alias[v] = b;
    found++;
  }
  return found;
}
