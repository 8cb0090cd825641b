/* shape.c - symbolic dims solved from input shapes, input checks, the
 * graph's run-time shape checks and shapes evaluated under solved symbols
 * (shape.h).
 *
 * Assumes: a verified graph (every value typed; checks name their node).
 * Guarantees: every mismatch is an error naming the input, its axis and both
 * sizes (or the check's node and place in the text), never a crash; the
 * interpreter and the runtimes call these same functions, so they report the
 * same messages for the same mistakes. */
#include "shape.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_impl.h" /* ir_ref_range_len_i */

/* ---- messages ---- */

int ir_ref_fail(char *msg, size_t msglen, const char *fmt, ...) {
  if (msg && msglen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msglen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

const char *ir_ref_dim_text(const ir_dim *d, char *buf, size_t cap) {
  ir_dim_print(d, buf, cap);
  return buf;
}

const char *ir_ref_input_name(const ir_graph *g, int i) {
  if (g->input_names && g->input_names[i]) return g->input_names[i];
  return g->inputs[i]->name ? g->inputs[i]->name : "?";
}

/* ---- symbols and run-time checks ---- */

/* Does d need a symbol that is not bound yet? */
static bool needs_unbound(const ir_dim *d, int nsyms, const bool *bound) {
  for (int s = 0; s < nsyms; s++)
    if (!bound[s] && ir_dim_uses_sym(d, s)) return true;
  return false;
}

/* Check axis a of input i against its declared dim d (all symbols bound). */
static int check_axis(const ir_graph *g, int i, int a, const ir_dim *d, int64_t got,
                      const int64_t *syms, const int *from, char *msg, size_t msglen) {
  int64_t want;
  ir_dim_err err;
  char dt[128];
  err.msg[0] = '\0';
  if (!ir_dim_eval(d, syms, &want, &err))
    return ir_ref_fail(msg, msglen, "input %d (%s): axis %d (%s): %s", i, ir_ref_input_name(g, i), a,
                ir_ref_dim_text(d, dt, sizeof dt), err.msg);
  if (want == got) return 0;
  if (ir_dim_is_const(d, NULL))
    return ir_ref_fail(msg, msglen, "input %d (%s): axis %d expected %lld, got %lld", i,
                ir_ref_input_name(g, i), a, (long long)want, (long long)got);
  if (ir_dim_is_sym(d))
    return ir_ref_fail(msg, msglen, "input %d (%s): axis %d is %s = %lld from input %d, got %lld", i,
                ir_ref_input_name(g, i), a, d->name, (long long)want, from[d->sym], (long long)got);
  return ir_ref_fail(msg, msglen, "input %d (%s): axis %d expected %s = %lld, got %lld", i,
              ir_ref_input_name(g, i), a, ir_ref_dim_text(d, dt, sizeof dt), (long long)want, (long long)got);
}

/* "mo.add (line 3)", or "mo.add (%r)" for a graph built through the API. */
static const char *node_where(const ir_node *n, char *buf, size_t cap) {
  const ir_op_info *info = ir_op_get(n->op);
  const char *op = info ? info->name : "?";
  if (n->loc.line > 0)
    snprintf(buf, cap, "mo.%s (line %d)", op, n->loc.line);
  else
    snprintf(buf, cap, "mo.%s (%%%s)", op, n->nout > 0 ? n->out[0]->name : "?");
  return buf;
}

/* "batch = 4", or just "4" for a constant dim. */
static const char *dim_value_text(const ir_dim *d, int64_t v, char *buf, size_t cap) {
  char dt[128];
  if (ir_dim_is_const(d, NULL))
    snprintf(buf, cap, "%lld", (long long)v);
  else
    snprintf(buf, cap, "%s = %lld", ir_ref_dim_text(d, dt, sizeof dt), (long long)v);
  return buf;
}

/* Whether check c can run once node `after` has run (NULL: at the start):
 * every symbol it uses that a node defines from data is defined by `after`
 * or an earlier node, and (after != NULL) it uses after's own symbol, so
 * each check runs exactly once. */
static bool check_due(const ir_graph *g, const ir_check *c, const ir_node *after) {
  bool uses_after = false;
  for (int i = 0; i < g->nnodes; i++) {
    int s = ir_node_data_sym(g->nodes[i]);
    if (s < 0 || (!ir_dim_uses_sym(c->lhs, s) && !ir_dim_uses_sym(c->rhs, s))) continue;
    if (!after || g->nodes[i]->id > after->id) return false;
    if (g->nodes[i] == after) uses_after = true;
  }
  return !after || uses_after;
}

/* The run-time checks due once node `after` has run (NULL: at the start);
 * data: whether a node of g sets a symbol from data (ir_graph_has_data_syms). */
static int run_checks(const ir_graph *g, const int64_t *syms, const ir_node *after, bool data,
                      char *msg, size_t msglen) {
  for (int i = 0; i < g->nchecks; i++) {
    const ir_check *c = &g->checks[i];
    if (data && !check_due(g, c, after)) continue;
    char where[160] = "", node[150], lt[200], rt[200];
    int64_t l, r;
    ir_dim_err err;
    err.msg[0] = '\0';
    bool evaluated = ir_dim_eval(c->lhs, syms, &l, &err) && ir_dim_eval(c->rhs, syms, &r, &err);
    if (evaluated && (c->kind == IR_CHECK_EQ ? l == r : l >= r)) continue;
    /* failed: the message (formatted only now: every execute runs the checks) */
    const char *what = c->what ? c->what : "";
    if (c->node) {
      /* A `what` that names its op ("mo.reshape: ...") drops that prefix:
       * node_where names the op and its place. */
      char prefix[64];
      snprintf(prefix, sizeof prefix, "mo.%s: ", ir_op_get(c->node->op)->name);
      if (strncmp(what, prefix, strlen(prefix)) == 0) what += strlen(prefix);
      snprintf(where, sizeof where, "%s: ", node_where(c->node, node, sizeof node));
    }
    if (!evaluated) ir_ref_fail(msg, msglen, "%s%s: %s", where, what, err.msg);
    else
      ir_ref_fail(msg, msglen, "%s%s: %s but needs to %s %s", where, what,
                  dim_value_text(c->lhs, l, lt, sizeof lt),
                  c->kind == IR_CHECK_EQ ? "equal" : "be at least",
                  dim_value_text(c->rhs, r, rt, sizeof rt));
    if (c->node) ir_node_origin_msg(c->node, msg, msglen);
    return -1;
  }
  return 0;
}

/* A value (or, failing that, a check) that mentions symbol s; NULL if none. */
static const char *symbol_user(const ir_graph *g, int s, bool *in_check) {
  *in_check = false;
  for (int v = 0; v < g->nvalues; v++) {
    const ir_type *t = &g->values[v]->type;
    for (int a = 0; a < t->rank; a++)
      if (ir_dim_uses_sym(t->dims[a], s)) return g->values[v]->name;
  }
  for (int i = 0; i < g->nchecks; i++) {
    const ir_check *c = &g->checks[i];
    if (ir_dim_uses_sym(c->lhs, s) || ir_dim_uses_sym(c->rhs, s)) {
      *in_check = true;
      return c->node && c->node->nout > 0 ? c->node->out[0]->name : "?";
    }
  }
  return NULL;
}

/* ---- dims read from operand data before the graph runs ---- */

/* An operand's data as read: dtype, elements, bytes. */
typedef struct opnd_data {
  ir_dtype dt;
  int64_t numel;
  const void *data;
} opnd_data;

/* What the reads of one node need; computed operands are freed after it. */
typedef struct data_reader {
  const ir_graph *g;
  const ir_tensor *inputs;
  int64_t *syms;
  const bool *bound;
  const ir_node *reader; /* the node whose dims are read */
  int k;                 /* its operand */
  void *computed[5];     /* computed operands' data, by operand */
} data_reader;

static void reader_done(data_reader *rd) {
  for (int k = 0; k < 5; k++) {
    free(rd->computed[k]);
    rd->computed[k] = NULL;
  }
}

/* "mo.R (%r): operand k (%v) sets its dims, but it is computed from mo.P
 * (%p), <why>": -1 with msg. */
static int refuse_computing_node(const data_reader *rd, const ir_node *p, char *msg,
                                 size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int refuse_computing_node(const data_reader *rd, const ir_node *p, char *msg,
                                 size_t msglen, const char *fmt, ...) {
  const ir_node *n = rd->reader;
  const ir_op_info *pi = ir_op_get(p->op);
  char why[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  return ir_ref_fail(msg, msglen, "mo.%s (%%%s): operand %d (%%%s) sets its dims, but it is "
                     "computed from mo.%s (%%%s), %s", ir_op_get(n->op)->name, n->out[0]->name,
                     rd->k, n->in[rd->k]->name, pi ? pi->name : "?",
                     p->nout > 0 ? p->out[0]->name : "?", why);
}

/* A node the interpreter would run to compute a read operand: it must
 * compute from the host data of the inputs and constants alone, now
 * (ir_interp_node_check). */
static int check_computing_node(void *ud, const ir_node *p, char *msg, size_t msglen) {
  const data_reader *rd = ud;
  const char *why = ir_node_not_before_run(p); /* the verifier refuses these too */
  if (why) return refuse_computing_node(rd, p, msg, msglen, "%s", why);
  for (int j = 0; j < p->nin; j++) {
    int i = ir_graph_input_index(rd->g, p->in[j]);
    if (i >= 0 && !rd->inputs[i].data && ir_tensor_numel(&rd->inputs[i]) > 0)
      return refuse_computing_node(rd, p, msg, msglen, "which reads input %d (%s), whose data "
                                   "is not on the host", i, ir_ref_input_name(rd->g, i));
  }
  for (int j = 0; j < p->nout; j++)
    for (int a = 0; a < p->out[j]->type.rank; a++)
      if (needs_unbound(p->out[j]->type.dims[a], rd->g->nsyms, rd->bound)) {
        char dt[128];
        return refuse_computing_node(rd, p, msg, msglen, "whose result %%%s has dim '%s', not "
                                     "known before mo.%s runs", p->out[j]->name,
                                     ir_ref_dim_text(p->out[j]->type.dims[a], dt, sizeof dt),
                                     ir_op_get(rd->reader->op)->name);
      }
  return 0;
}

/* Operand k of n as data: a graph input's, a mo.constant's (whose one
 * element may fill it), or, for a value computed by other nodes of the
 * graph, the value the reference interpreter computes from the inputs
 * (ir_interp_value: only the nodes it depends on run, under the symbols
 * bound so far; the graph's own kernels compute it again when it runs, with
 * the same result), kept in rd until the node's reads are done. */
static int operand_data(const ir_graph *g, const ir_node *n, int k, data_reader *rd,
                        opnd_data *o, char *msg, size_t msglen) {
  const ir_tensor *inputs = rd->inputs;
  const ir_value *v = n->in[k];
  int i = ir_graph_input_index(g, v);
  if (i >= 0) {
    if (!inputs[i].data && ir_tensor_numel(&inputs[i]) > 0)
      return ir_ref_fail(msg, msglen, "input %d (%s) sets dims of mo.%s (%%%s), but its data "
                         "is not on the host", i, ir_ref_input_name(g, i),
                         ir_op_get(n->op)->name, n->out[0]->name);
    *o = (opnd_data){inputs[i].dtype, ir_tensor_numel(&inputs[i]), inputs[i].data};
    return 0;
  }
  const ir_attr *a = v->def && v->def->op == IR_OP_CONSTANT ? ir_node_attr(v->def, "value") : NULL;
  if (a && a->kind == IR_ATTR_DENSE) {
    *o = (opnd_data){a->u.dense.dtype, a->u.dense.numel, a->u.dense.data};
    return 0;
  }
  ir_tensor t;
  if (k >= (int)(sizeof rd->computed / sizeof *rd->computed))
    return ir_ref_fail(msg, msglen, "mo.%s (%%%s): operand %d cannot set dims",
                       ir_op_get(n->op)->name, n->out[0]->name, k);
  rd->reader = n;
  rd->k = k;
  if (ir_interp_value(g, inputs, rd->syms, check_computing_node, rd, v, &t, msg, msglen) < 0)
    return -1;
  free(rd->computed[k]);
  rd->computed[k] = t.data;
  *o = (opnd_data){t.dtype, ir_tensor_numel(&t), t.data};
  return 0;
}

/* Element e of o (a one-element operand fills its type), any dtype. */
static ir_tensor data_view(const opnd_data *o) {
  return (ir_tensor){.dtype = o->dt, .rank = 1, .shape = {o->numel}, .data = (void *)o->data};
}

static int64_t data_int(const opnd_data *o, int64_t e) {
  ir_tensor t = data_view(o);
  return ir_ref_ld_i(&t, o->numel == 1 ? 0 : e);
}

static double data_double(const opnd_data *o) {
  ir_tensor t = data_view(o);
  return ir_dtype_is_float(o->dt) ? ir_ref_ld_f(&t, 0) : (double)ir_ref_ld_i(&t, 0);
}

/* mo.reshape's target from its shape operand (ops.def's rule) into dims. */
static int reshape_target(const ir_graph *g, const ir_node *n, data_reader *rd,
                          const int64_t *syms, int64_t *dims, char *msg, size_t msglen) {
  const ir_type *t = &n->out[0]->type;
  opnd_data o;
  int64_t in[IR_MAX_RANK], numel = 1, known = 1;
  char m[256];
  if (operand_data(g, n, 1, rd, &o, msg, msglen) < 0) return -1;
  if (ir_eval_shape(&n->in[0]->type, syms, in, m, sizeof m) < 0)
    return ir_ref_fail(msg, msglen, "mo.reshape (%%%s): operand 0: %s", n->out[0]->name, m);
  for (int a = 0; a < n->in[0]->type.rank; a++) numel *= in[a];
  bool allowzero = ir_node_attr_bool(n, "allowzero", true);
  int infer = -1;
  for (int a = 0; a < t->rank; a++) {
    int64_t v = data_int(&o, a);
    if (v == 0 && !allowzero) {
      if (a >= n->in[0]->type.rank)
        return ir_ref_fail(msg, msglen, "mo.reshape (%%%s): shape[%d] is 0 (copy) but operand 0 "
                           "has rank %d", n->out[0]->name, a, n->in[0]->type.rank);
      v = in[a];
    }
    if (v == -1 && infer < 0) {
      infer = a;
      continue;
    }
    if (v < 0)
      return ir_ref_fail(msg, msglen, "mo.reshape (%%%s): shape[%d] is %lld", n->out[0]->name, a,
                         (long long)v);
    if (__builtin_mul_overflow(known, v, &known))
      return ir_ref_fail(msg, msglen, "mo.reshape (%%%s): the shape overflows", n->out[0]->name);
    dims[a] = v;
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      return ir_ref_fail(msg, msglen, "mo.reshape (%%%s): cannot infer the -1 of shape[%d]: %lld "
                         "elements into parts of %lld", n->out[0]->name, infer,
                         (long long)numel, (long long)known);
    dims[infer] = numel / known;
  }
  return 0;
}

/* mo.slice_tensor's result dims from its (start, stop, step[, axes]) data. */
static int slice_lengths(const ir_graph *g, const ir_node *n, data_reader *rd,
                         const int64_t *syms, int64_t *dims, char *msg, size_t msglen) {
  const ir_type *xt = &n->in[0]->type;
  ir_tensor p[4];
  const ir_tensor *pp[4] = {NULL, NULL, NULL, NULL};
  int64_t xd[IR_MAX_RANK], v[IR_MAX_RANK][3], first;
  char m[256];
  for (int j = 1; j < n->nin && j <= 4; j++) {
    opnd_data o;
    if (operand_data(g, n, j, rd, &o, msg, msglen) < 0) return -1;
    p[j - 1] = (ir_tensor){.dtype = o.dt, .rank = 1, .shape = {o.numel}, .data = (void *)o.data};
    pp[j - 1] = &p[j - 1];
  }
  if (ir_eval_shape(xt, syms, xd, m, sizeof m) < 0 ||
      ir_ref_slice_data(pp, xt->rank, v, m, sizeof m) < 0)
    return ir_ref_fail(msg, msglen, "mo.slice_tensor (%%%s): %s", n->out[0]->name, m);
  for (int a = 0; a < xt->rank; a++)
    dims[a] = ir_ref_slice_axis(xd[a], v[a][0], v[a][1], v[a][2], &first);
  return 0;
}

/* mo.repeat_interleave's result dims with a repeats operand: operand 0's
 * (flattened when axis is absent) with the axis' dim = sum(repeats). */
static int repeat_dims(const ir_graph *g, const ir_node *n, data_reader *rd,
                       const int64_t *syms, int64_t *dims, char *msg, size_t msglen) {
  const ir_type *x = &n->in[0]->type;
  const char *y = n->out[0]->name;
  int64_t in[IR_MAX_RANK], rl, numel = 1, axis = ir_node_attr_int(n, "axis", INT64_MIN);
  opnd_data o;
  char m[256];
  if (operand_data(g, n, 1, rd, &o, msg, msglen) < 0) return -1;
  if (ir_eval_shape(x, syms, in, m, sizeof m) < 0 ||
      ir_eval_shape(&n->in[1]->type, syms, &rl, m, sizeof m) < 0)
    return ir_ref_fail(msg, msglen, "mo.repeat_interleave (%%%s): %s", y, m);
  for (int a = 0; a < x->rank; a++) numel *= in[a];
  int ax = 0;
  if (axis == INT64_MIN) {
    in[0] = numel;
  } else {
    ax = (int)(axis < 0 ? axis + x->rank : axis);
  }
  for (int a = 0; a < n->out[0]->type.rank; a++) dims[a] = in[a];
  if (rl != in[ax] && rl != 1)
    return ir_ref_fail(msg, msglen, "mo.repeat_interleave (%%%s): repeats has %lld elements but "
                       "the axis has %lld (repeats must have its length or 1)", y,
                       (long long)rl, (long long)in[ax]);
  int64_t sum = 0;
  for (int64_t i = 0; i < in[ax] && rl > 0; i++) {
    int64_t v = data_int(&o, rl == 1 ? 0 : i);
    if (v < 0)
      return ir_ref_fail(msg, msglen, "mo.repeat_interleave (%%%s): repeats[%lld] is %lld but "
                         "must be >= 0", y, (long long)(rl == 1 ? 0 : i), (long long)v);
    if (__builtin_add_overflow(sum, v, &sum))
      return ir_ref_fail(msg, msglen, "mo.repeat_interleave (%%%s): the repeats overflow", y);
  }
  dims[ax] = sum;
  return 0;
}

/* mo.broadcast_to {bidirectional}'s result dims: numpy's broadcast of
 * operand 0's dims and the shape operand's values, both right-aligned. */
static int bidir_dims(const ir_graph *g, const ir_node *n, data_reader *rd,
                      const int64_t *syms, int64_t *dims, char *msg, size_t msglen) {
  const ir_type *x = &n->in[0]->type;
  const char *y = n->out[0]->name;
  int r = n->out[0]->type.rank;
  int64_t in[IR_MAX_RANK], len;
  opnd_data o;
  char m[256];
  if (operand_data(g, n, 1, rd, &o, msg, msglen) < 0) return -1;
  if (ir_eval_shape(x, syms, in, m, sizeof m) < 0 ||
      ir_eval_shape(&n->in[1]->type, syms, &len, m, sizeof m) < 0)
    return ir_ref_fail(msg, msglen, "mo.broadcast_to (%%%s): %s", y, m);
  for (int a = 0; a < r; a++) {
    int ia = a - (r - x->rank), is = a - (r - (int)len);
    int64_t d = ia >= 0 ? in[ia] : 1, v = is >= 0 ? data_int(&o, is) : 1;
    if (v < 0)
      return ir_ref_fail(msg, msglen, "mo.broadcast_to (%%%s): shape[%d] is %lld", y, is,
                         (long long)v);
    if (d != v && d != 1 && v != 1)
      return ir_ref_fail(msg, msglen, "mo.broadcast_to (%%%s): operand 0's axis %d (%lld) does "
                         "not broadcast with shape[%d] = %lld", y, ia, (long long)d, is,
                         (long long)v);
    dims[a] = d == 1 ? v : d;
  }
  return 0;
}

/* mo.fold's result dims with an output_size operand: N and C as inferred
 * (bound by the input shapes), H and W from the data. */
static int fold_size(const ir_graph *g, const ir_node *n, data_reader *rd,
                     const int64_t *syms, const bool *bound, int64_t *dims, char *msg,
                     size_t msglen) {
  const ir_type *t = &n->out[0]->type;
  const char *y = n->out[0]->name;
  opnd_data o;
  char dt[200];
  if (operand_data(g, n, 1, rd, &o, msg, msglen) < 0) return -1;
  for (int a = 0; a < 2; a++) {
    ir_dim_err err;
    err.msg[0] = '\0';
    if (needs_unbound(t->dims[a], g->nsyms, bound) ||
        !ir_dim_eval(t->dims[a], syms, &dims[a], &err))
      return ir_ref_fail(msg, msglen, "mo.fold (%%%s): axis %d (%s) %s", y, a,
                         ir_ref_dim_text(t->dims[a], dt, sizeof dt),
                         err.msg[0] ? err.msg : "uses a symbol nothing binds");
  }
  for (int a = 0; a < 2; a++)
    if ((dims[2 + a] = data_int(&o, a)) < 0)
      return ir_ref_fail(msg, msglen, "mo.fold (%%%s): output_size[%d] is %lld", y, a,
                         (long long)dims[2 + a]);
  return 0;
}

/* The dims nodes read from operand data: a plain symbol not bound yet takes
 * the value, any other dim must equal it. mo.range's length is bound only
 * (its kernel checks a given one). */
static int node_dims_from_data(const ir_graph *g, const ir_node *n, data_reader *rd,
                               int64_t *syms, bool *bound, char *msg, size_t msglen) {
  const ir_type *t = &n->out[0]->type;
  int64_t dims[IR_MAX_RANK];
  if (n->op == IR_OP_RESHAPE && n->nin == 2) {
    if (reshape_target(g, n, rd, syms, dims, msg, msglen) < 0) return -1;
  } else if (n->op == IR_OP_SLICE_DATA) {
    if (slice_lengths(g, n, rd, syms, dims, msg, msglen) < 0) return -1;
  } else if (n->op == IR_OP_REPEAT_INTERLEAVE && n->nin == 2) {
    if (repeat_dims(g, n, rd, syms, dims, msg, msglen) < 0) return -1;
  } else if (n->op == IR_OP_FOLD && n->nin == 2) {
    if (fold_size(g, n, rd, syms, bound, dims, msg, msglen) < 0) return -1;
  } else if (n->op == IR_OP_BROADCAST_TO && n->nin == 2 &&
             ir_node_attr_bool(n, "bidirectional", false)) {
    if (bidir_dims(g, n, rd, syms, dims, msg, msglen) < 0) return -1;
  } else if ((n->op == IR_OP_BROADCAST_TO && n->nin == 2) ||
             ((n->op == IR_OP_RESIZE || n->op == IR_OP_RESIZE_NEAREST ||
               n->op == IR_OP_RESIZE_LINEAR || n->op == IR_OP_RESIZE_BICUBIC) && n->nin >= 2)) {
    opnd_data o;
    if (operand_data(g, n, 1, rd, &o, msg, msglen) < 0) return -1;
    for (int a = 0; a < t->rank; a++)
      if ((dims[a] = data_int(&o, a)) < 0)
        return ir_ref_fail(msg, msglen, "mo.%s (%%%s): %s[%d] is %lld", ir_op_get(n->op)->name,
                           n->out[0]->name, n->op == IR_OP_BROADCAST_TO ? "shape" : "sizes", a,
                           (long long)dims[a]);
  } else if (n->op == IR_OP_RANGE && ir_dim_is_sym(t->dims[0]) && !bound[t->dims[0]->sym]) {
    opnd_data o[3];
    for (int k = 0; k < 3; k++)
      if (operand_data(g, n, k, rd, &o[k], msg, msglen) < 0) return -1;
    if (ir_ref_is_fc(t->dtype)) {
      double a = data_double(&o[0]), b = data_double(&o[1]), s = data_double(&o[2]);
      double w = s != 0 ? ceil((b - a) / s) : 0;
      dims[0] = w > 0 ? (w < 9.0e18 ? (int64_t)w : INT64_MAX) : 0; /* NaN: 0 */
    } else {
      int64_t len = ir_ref_range_len_i(data_int(&o[0], 0), data_int(&o[1], 0),
                                       data_int(&o[2], 0));
      dims[0] = len < 0 ? 0 : len; /* step 0: the kernel's error */
    }
  } else {
    return 0;
  }
  for (int a = 0; a < t->rank; a++) {
    const ir_dim *d = t->dims[a];
    if (ir_dim_is_sym(d) && !bound[d->sym]) {
      bound[d->sym] = true;
      syms[d->sym] = dims[a];
      continue;
    }
    int64_t want;
    ir_dim_err err;
    char dt[200]; /* dim_value_text's text: a dim's (128) and its value */
    err.msg[0] = '\0';
    if (needs_unbound(d, g->nsyms, bound) || !ir_dim_eval(d, syms, &want, &err))
      return ir_ref_fail(msg, msglen, "mo.%s (%%%s): axis %d (%s) %s", ir_op_get(n->op)->name,
                         n->out[0]->name, a, ir_ref_dim_text(d, dt, sizeof dt),
                         err.msg[0] ? err.msg : "uses a symbol nothing binds");
    if (want != dims[a])
      return ir_ref_fail(msg, msglen, "mo.%s (%%%s): axis %d is %s but the data gives %lld",
                         ir_op_get(n->op)->name, n->out[0]->name, a,
                         dim_value_text(d, want, dt, sizeof dt), (long long)dims[a]);
  }
  return 0;
}

/* A mo.fused node's data slices (a GEMM reading them in place, fuse.c):
 * each read as if it were in g, its operands the fused node's (a body
 * input q is the node's operand q). */
static int fused_dims_from_data(const ir_graph *g, const ir_node *n, data_reader *rd,
                                int64_t *syms, bool *bound, char *msg, size_t msglen) {
  const ir_graph *b = n->body;
  for (int i = 0; i < b->nnodes; i++) {
    const ir_node *bn = b->nodes[i];
    if (bn->op != IR_OP_SLICE_DATA) continue;
    ir_value *outer[IR_EW_MAX_IN];
    if (bn->nin > IR_EW_MAX_IN) return ir_ref_fail(msg, msglen, "malformed fused slice");
    for (int j = 0; j < bn->nin; j++) {
      int q = ir_graph_input_index(b, bn->in[j]);
      if (q < 0 || q >= n->nin)
        return ir_ref_fail(msg, msglen, "mo.slice_tensor (%%%s): operand %d is computed in its "
                           "group", bn->out[0]->name, j);
      outer[j] = n->in[q];
    }
    ir_node as_top = *bn;
    as_top.in = outer;
    int rc = node_dims_from_data(g, &as_top, rd, syms, bound, msg, msglen);
    reader_done(rd);
    if (rc < 0) return -1;
  }
  return 0;
}

/* The dims every node reads from operand data, in node order (a read may
 * use the symbols earlier reads bound): the nodes listed (all when nodes is
 * NULL). */
static int bind_from_data(const ir_graph *g, const ir_tensor *inputs, const int *nodes,
                          int nnodes, int64_t *syms, bool *bound, char *msg, size_t msglen) {
  data_reader rd = {.g = g, .inputs = inputs, .syms = syms, .bound = bound};
  for (int k = 0; k < nnodes; k++) {
    const ir_node *n = g->nodes[nodes ? nodes[k] : k];
    int rc = n->op == IR_OP_FUSED && n->body
                 ? fused_dims_from_data(g, n, &rd, syms, bound, msg, msglen)
                 : node_dims_from_data(g, n, &rd, syms, bound, msg, msglen);
    reader_done(&rd);
    if (rc < 0) return ir_node_origin_msg(n, msg, msglen);
  }
  return 0;
}

int ir_solve_nodes(const ir_graph *g, int *nodes) {
  int n = 0;
  for (int i = 0; g && i < g->nnodes; i++)
    if (ir_node_reads_dims(g->nodes[i]) || ir_node_data_sym(g->nodes[i]) >= 0) {
      if (nodes) nodes[n] = i;
      n++;
    }
  return n;
}

int ir_solve_symbols(const ir_graph *g, const ir_tensor *inputs, int ninputs, int64_t *sym_values,
                     char *msg, size_t msglen) {
  return ir_solve_symbols_at(g, inputs, ninputs, sym_values, NULL, g ? g->nnodes : 0, msg, msglen);
}

int ir_solve_symbols_at(const ir_graph *g, const ir_tensor *inputs, int ninputs,
                        int64_t *sym_values, const int *nodes, int nnodes, char *msg,
                        size_t msglen) {
  if (!g) return ir_ref_fail(msg, msglen, "no graph");
  if (ninputs != g->ninputs)
    return ir_ref_fail(msg, msglen, "expected %d inputs, got %d", g->ninputs, ninputs);
  if (ninputs > 0 && !inputs) return ir_ref_fail(msg, msglen, "inputs are NULL");
  if (g->nsyms > 0 && !sym_values) return ir_ref_fail(msg, msglen, "sym_values is NULL");
  int nsyms = g->nsyms, rc = -1;
  bool *bound = calloc((size_t)(nsyms ? nsyms : 1), sizeof *bound);
  int *from = calloc((size_t)(nsyms ? nsyms : 1), sizeof *from);
  if (!bound || !from) {
    rc = ir_ref_fail(msg, msglen, "out of memory");
    goto out;
  }
  for (int s = 0; s < nsyms; s++) sym_values[s] = 0;
  /* Pass 1: types, then bind each plain symbol at its first occurrence and
   * check every axis whose dim is computable now. */
  for (int i = 0; i < ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    const ir_tensor *x = &inputs[i];
    if (x->dtype != t->dtype) {
      ir_ref_fail(msg, msglen, "input %d (%s): expected dtype %s, got %s", i, ir_ref_input_name(g, i),
           ir_dtype_name(t->dtype), ir_dtype_name(x->dtype));
      goto out;
    }
    if (x->rank != t->rank) {
      ir_ref_fail(msg, msglen, "input %d (%s): expected rank %d, got %d", i, ir_ref_input_name(g, i), t->rank,
           x->rank);
      goto out;
    }
    for (int a = 0; a < x->rank; a++) {
      if (x->shape[a] < 0) {
        ir_ref_fail(msg, msglen, "input %d (%s): axis %d has negative size %lld", i, ir_ref_input_name(g, i), a,
             (long long)x->shape[a]);
        goto out;
      }
    }
    for (int a = 0; a < x->rank; a++) {
      const ir_dim *d = t->dims[a];
      if (ir_dim_is_sym(d) && d->sym >= 0 && d->sym < nsyms && !bound[d->sym]) {
        bound[d->sym] = true;
        from[d->sym] = i;
        sym_values[d->sym] = x->shape[a];
        continue;
      }
      if (needs_unbound(d, nsyms, bound)) continue; /* deferred to pass 2 */
      if (check_axis(g, i, a, d, x->shape[a], sym_values, from, msg, msglen)) goto out;
    }
  }
  /* Pass 2: every symbol a plain dim can bind is bound now; check the
   * deferred algebraic dims (re-checking the others is harmless). */
  for (int i = 0; i < ninputs; i++) {
    const ir_type *t = &g->inputs[i]->type;
    for (int a = 0; a < t->rank; a++) {
      const ir_dim *d = t->dims[a];
      if (needs_unbound(d, nsyms, bound)) {
        char dt[128];
        ir_ref_fail(msg, msglen, "input %d (%s): cannot solve symbolic dim '%s' from the input shapes", i,
             ir_ref_input_name(g, i), ir_ref_dim_text(d, dt, sizeof dt));
        goto out;
      }
      if (check_axis(g, i, a, d, inputs[i].shape[a], sym_values, from, msg, msglen)) goto out;
    }
  }
  if (bind_from_data(g, inputs, nodes, nnodes, sym_values, bound, msg, msglen) < 0) goto out;
  /* Symbols nodes define from data take their bound, in node order (the
   * buffers are planned with it); each node sets the real value when it has
   * run (ir_data_sym_bind). */
  bool data = false; /* the list holds every node that sets a symbol from data */
  for (int k = 0; k < nnodes; k++) {
    const ir_node *n = g->nodes[nodes ? nodes[k] : k];
    int s = ir_node_data_sym(n);
    data = data || s >= 0;
    if (s < 0 || s >= nsyms) continue;
    if (ir_data_sym_bound(n, sym_values, &sym_values[s], msg, msglen) < 0) {
      ir_node_origin_msg(n, msg, msglen);
      goto out;
    }
    bound[s] = true;
  }
  for (int s = 0; s < nsyms; s++) {
    if (bound[s]) continue;
    bool in_check;
    const char *user = symbol_user(g, s, &in_check);
    if (!user) continue; /* declared but never used: its value does not matter */
    ir_ref_fail(msg, msglen, "symbolic dim '%s' is not determined by the input shapes (used by %s%%%s)",
         g->syms[s], in_check ? "a run-time check of " : "", user);
    goto out;
  }
  rc = run_checks(g, sym_values, NULL, data, msg, msglen);
out:
  free(bound);
  free(from);
  return rc;
}

int ir_eval_shape(const ir_type *t, const int64_t *sym_values, int64_t *shape, char *msg,
                  size_t msglen) {
  if (!t || t->rank < 0) return ir_ref_fail(msg, msglen, "type has no inferred shape");
  if (t->rank > IR_MAX_RANK)
    return ir_ref_fail(msg, msglen, "rank %d exceeds the maximum %d", t->rank, IR_MAX_RANK);
  for (int a = 0; a < t->rank; a++) {
    char dt[128];
    ir_dim_err err;
    err.msg[0] = '\0';
    if (!ir_dim_eval(t->dims[a], sym_values, &shape[a], &err))
      return ir_ref_fail(msg, msglen, "dim '%s': %s", ir_ref_dim_text(t->dims[a], dt, sizeof dt), err.msg);
    if (shape[a] < 0)
      return ir_ref_fail(msg, msglen, "dim '%s' evaluates to %lld, which is negative",
                  ir_ref_dim_text(t->dims[a], dt, sizeof dt), (long long)shape[a]);
  }
  return 0;
}


/* ---- symbols defined from data ---- */

int ir_data_sym_bound(const ir_node *n, const int64_t *sym_values, int64_t *bound, char *msg,
                      size_t msglen) {
  int64_t shape[IR_MAX_RANK];
  char m[256];
  /* nonzero: operand 0's elements; non_maximum_suppression: one row per
   * score (operand 1) at most */
  const ir_type *x = &n->in[n->op == IR_OP_NON_MAXIMUM_SUPPRESSION ? 1 : 0]->type;
  if (ir_eval_shape(x, sym_values, shape, m, sizeof m) < 0)
    return ir_ref_fail(msg, msglen, "mo.%s (%%%s): %s", ir_op_get(n->op)->name,
                       n->out[0]->name, m);
  int64_t numel = 1;
  for (int a = 0; a < x->rank; a++)
    if (__builtin_mul_overflow(numel, shape[a], &numel))
      return ir_ref_fail(msg, msglen, "mo.%s (%%%s): the bound of its count overflows",
                         ir_op_get(n->op)->name, n->out[0]->name);
  *bound = numel;
  return 0;
}

/* No value of g planned with s at its bound may need more elements with s
 * at `value` (a dim such as 8 - n would outgrow its buffer). */
static int check_no_growth(const ir_graph *g, const ir_node *n, int s, int64_t *syms,
                           int64_t value, char *msg, size_t msglen) {
  int64_t was = syms[s], shape[IR_MAX_RANK];
  char m[256];
  for (int k = 0; k < g->nvalues; k++) {
    const ir_type *t = &g->values[k]->type;
    bool uses = false;
    for (int a = 0; a < t->rank; a++) uses |= ir_dim_uses_sym(t->dims[a], s);
    if (!uses) continue;
    int64_t size[2] = {1, 1};
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
      syms[s] = pass ? value : was;
      rc = ir_eval_shape(t, syms, shape, m, sizeof m);
      for (int a = 0; rc == 0 && a < t->rank; a++)
        if (__builtin_mul_overflow(size[pass], shape[a], &size[pass])) rc = -1;
    }
    syms[s] = was;
    if (rc < 0 || size[1] > size[0])
      return ir_ref_fail(msg, msglen, "mo.%s (%%%s): %%%s would outgrow the buffer planned for "
                         "'%s' = %lld when '%s' is %lld", ir_op_get(n->op)->name,
                         n->out[0]->name, g->values[k]->name, g->syms[s], (long long)was,
                         g->syms[s], (long long)value);
  }
  return 0;
}

int ir_data_sym_bind(const ir_graph *g, const ir_node *n, int64_t *sym_values, int64_t value,
                     char *msg, size_t msglen) {
  int s = ir_node_data_sym(n);
  if (s < 0) return 0;
  int64_t bound;
  if (ir_data_sym_bound(n, sym_values, &bound, msg, msglen) < 0)
    return ir_node_origin_msg(n, msg, msglen);
  if (value < 0 || value > bound) {
    ir_ref_fail(msg, msglen, "mo.%s (%%%s): '%s' came out as %lld, outside 0..%lld",
                ir_op_get(n->op)->name, n->out[0]->name, g->syms[s], (long long)value,
                (long long)bound);
    return ir_node_origin_msg(n, msg, msglen);
  }
  if (check_no_growth(g, n, s, sym_values, value, msg, msglen) < 0)
    return ir_node_origin_msg(n, msg, msglen);
  sym_values[s] = value;
  return run_checks(g, sym_values, n, true, msg, msglen);
}
