/* fuse.c - the fusion pass (ir_graph_fuse, ir.h): groups of nodes that one
 * kernel computes in one pass over memory become one mo.fused node whose body
 * graph holds the group.
 *
 * Groups, formed from the last node backwards (so each group grows from its
 * result toward its operands):
 *   - a root: an elementwise node (classes unary*, binary*, compare,
 *     logical, where, cast, broadcast_to, and a mo.custom the runtime
 *     marked kiln.elementwise: a scalar kernel function, kiln/kernel.h)
 *     with one result not yet grouped;
 *   - a producer joins when the value it makes has the root's shape (dims
 *     equal as expressions), is no graph output, and every use of it is by a
 *     member (so it never needs a buffer); elementwise producers join freely,
 *     an f32 / f64 mo.matmul joins once per group as a GEMM epilogue when its
 *     result also has the root's dtype (the epilogue overwrites the GEMM's
 *     result in place). Integer mo.mod never joins (nor roots) a group: it
 *     is the one elementwise op that can fail at run time, and its error
 *     should keep naming it (a GEMM epilogue has no error path either).
 *     A matmul's own operands never join (its producers stay outside, also
 *     when another member reads them too), so the body lists the matmul
 *     first.
 *   - with IR_FUSE_SOFTMAX, a mo.softmax / mo.logsoftmax is a root too:
 *     elementwise producers join it as above (a prologue computing its
 *     operand), a matmul never does;
 *   - with IR_FUSE_SLICE_OPERANDS, slices read in place: a matmul takes
 *     in the slices it reads with step 1 on the last axis that no other
 *     member reads (and is a group root of its own for them), a group
 *     without a matmul the slices its elementwise members read; the body
 *     lists them first. A slice is no member like the others: every group
 *     reading it may take it in (each body gets its own copy, so rotary
 *     halves read by two groups, or a slice read by a GEMM and by an
 *     elementwise group, are read where they lie), and it leaves g only
 *     when groups took in all its uses; otherwise it stays a kernel for
 *     the readers left, and the groups that took it still read its operand
 *     in place;
 *   - a group of one node is left alone; a group stops growing at
 *     IR_FUSE_MAX_NODES nodes (the rest of a longer chain forms groups of
 *     its own), so no kernel, and no LLVM function, grows with the graph;
 *     a producer whose joining would make the group read more than
 *     IR_FUSE_MAX_INPUTS values from outside stays out (the kernels take at
 *     most that many buffers).
 * Every member's result has the root's shape, so the group is one loop nest
 * over that shape (operands from outside may broadcast); a member's result
 * used only inside never leaves registers.
 *
 * The rewrite: the group's nodes are copied into a body graph (own arena,
 * the graph's symbols in the same order, values keep their names, inputs =
 * the values the group reads from outside in order of first use; members
 * keep their attributes, so a custom member's kiln.library, its library's
 * content hash, is part of the fused kernel's text and cache key); the
 * mo.fused node takes the root's place and the root's result value (so its
 * consumers and the graph outputs are untouched); the absorbed nodes and
 * their results leave g->nodes / g->values, which are renumbered. Run-time
 * checks recorded for absorbed nodes now point at their body copies (their
 * messages still name the op that needs them).
 *
 * Assumes: g verified (types inferred). Guarantees: on failure (out of
 * memory) g is unchanged; on success g stays in topological order and
 * verifies again; nothing here depends on the environment. */
#include <stdlib.h>
#include <string.h>

#include "interp_impl.h" /* ir_ref_ld_i */
#include "ir.h"

/* Elementwise and unable to fail: integer mod, floor_div and pow (the
 * elementwise ops with a data error, division by zero: ir_node_ew_can_fail)
 * stay kernels of their own, so their errors still name them. A mo.custom carrying kiln.elementwise (the runtime stamps
 * it on a bound KILN_ELEMENTWISE_KERNEL, a pure scalar function with no
 * error path) is elementwise too. */
static bool ew_node(const ir_node *n) {
  const ir_op_info *o = ir_op_get(n->op);
  if (!o || n->nout != 1) return false;
  if (ir_node_ew_can_fail(n)) return false;
  if (n->op == IR_OP_CUSTOM)
    return ir_node_attr_int(n, "kiln.elementwise", 0) != 0 && n->nin <= IR_EW_MAX_IN;
  /* a broadcast_to with a shape operand stays alone (its operand 1 is no element source) */
  return ir_op_is_elementwise(n->op) || (o->cls == IR_CLS_BROADCAST_TO && n->nin == 1);
}

/* The root of a softmax prologue group (IR_FUSE_SOFTMAX). */
static bool softmax_node(const ir_node *n) {
  return (n->op == IR_OP_SOFTMAX || n->op == IR_OP_LOGSOFTMAX) && n->nin == 1 && n->nout == 1;
}

/* Entry j of an integer mo.constant (the interpreter's loader), false for
 * anything else. */
static bool const_entry(const ir_value *v, int64_t j, int64_t *out) {
  const ir_attr *a = v->def && v->def->op == IR_OP_CONSTANT ? ir_node_attr(v->def, "value") : NULL;
  if (!a || a->kind != IR_ATTR_DENSE || !ir_dtype_is_int(a->u.dense.dtype) || j < 0 ||
      j >= a->u.dense.numel)
    return false;
  ir_tensor t = {.dtype = a->u.dense.dtype, .rank = 1, .shape = {a->u.dense.numel},
                 .data = a->u.dense.data};
  *out = ir_ref_ld_i(&t, j);
  return true;
}

/* Whether slice p takes its last axis with step 1 (so each row of its
 * result is contiguous in its operand): from the step attribute, or, with
 * data bounds, from step and axes operands that are constants. */
static bool slice_rows_contiguous(const ir_node *p) {
  int r = p->in[0]->type.rank;
  if (p->op == IR_OP_SLICE_TENSOR) {
    const ir_attr *st = ir_node_attr(p, "step");
    if (!st) return true;
    return st->kind == IR_ATTR_INTS && (st->u.ints.n < r || st->u.ints.v[r - 1] == 1);
  }
  int64_t k;
  if (p->nin < 4 || !ir_dim_is_const(p->in[1]->type.dims[0], &k)) return false;
  for (int64_t j = 0; j < k; j++) {
    int64_t ax = j, step;
    if (p->nin > 4 && !const_entry(p->in[4], j, &ax)) return false;
    if (ax < 0) ax += r;
    if (ax != r - 1) continue;
    if (!const_entry(p->in[3], j, &step) || step != 1) return false;
  }
  return true;
}

static bool gemm_node(const ir_node *n) {
  if (n->op != IR_OP_MATMUL || n->nout != 1 || n->nin != 2) return false;
  /* a 1-D operand (a vector product) takes no epilogue */
  if (n->in[0]->type.rank < 2 || n->in[1]->type.rank < 2) return false;
  ir_dtype t = n->out[0]->type.dtype;
  return t == IR_DT_F32 || t == IR_DT_F64;
}

/* A slice some group takes in (read in place): one entry per group and slice. */
typedef struct slice_take {
  int gid, node;
} slice_take;

typedef struct fuse_ctx {
  ir_graph *g;
  unsigned flags;
  int *uses;       /* by value id: operand slots that read it */
  bool *is_output; /* by value id */
  int *group;      /* by node id: the one group owning it, -1 when none (a slice has none) */
  int *members;    /* scratch: the group being grown (node ids) */
  int *mark;       /* by node id: the last group that took it in, -1 when none */
  int *taken;      /* by value id: the slots of a slice's result that groups read in place */
  slice_take *takes; /* every group's slices, in group order */
  int ntakes;
} fuse_ctx;

/* Uses of v by the first n members. */
static int member_uses(const fuse_ctx *c, int n, const ir_value *v) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    const ir_node *m = c->g->nodes[c->members[i]];
    for (int j = 0; j < m->nin; j++) k += m->in[j] == v;
  }
  return k;
}

/* Whether the first n members plus node p read at most IR_FUSE_MAX_INPUTS
 * distinct values from outside them. Counted only when the operand slots
 * alone could exceed it. */
static bool inputs_fit(const fuse_ctx *c, int n, const ir_node *p) {
  const ir_graph *g = c->g;
  int slots = p->nin;
  for (int i = 0; i < n; i++) slots += g->nodes[c->members[i]]->nin;
  if (slots <= IR_FUSE_MAX_INPUTS) return true;
  const ir_value *seen[IR_FUSE_MAX_INPUTS + 1];
  int ns = 0;
  for (int i = 0; i <= n; i++) {
    const ir_node *m = i < n ? g->nodes[c->members[i]] : p;
    for (int j = 0; j < m->nin; j++) {
      const ir_value *v = m->in[j];
      const ir_node *d = v->def;
      bool inside = d && (d == p || c->mark[d->id] == c->mark[c->members[0]]);
      for (int k = 0; !inside && k < ns; k++) inside = seen[k] == v;
      if (inside) continue;
      if (ns == IR_FUSE_MAX_INPUTS) return false;
      seen[ns++] = v;
    }
  }
  return true;
}

/* Whether n reads v. */
static bool reads_value(const ir_node *n, const ir_value *v) {
  for (int j = 0; j < n->nin; j++)
    if (n->in[j] == v) return true;
  return false;
}

/* Whether an operand of n is computed by a member of group gid (only
 * slices when slices_only). */
static bool reads_member(const fuse_ctx *c, const ir_node *n, int gid, bool slices_only) {
  for (int j = 0; j < n->nin; j++) {
    const ir_node *d = n->in[j]->def;
    if (d && c->mark[d->id] == gid && (!slices_only || ir_node_is_slice(d))) return true;
  }
  return false;
}

/* A slice that groups may take in (IR_FUSE_SLICE_OPERANDS): one result,
 * no graph output; other groups may take it too. */
static bool slice_takeable(const fuse_ctx *c, const ir_node *p) {
  return (c->flags & IR_FUSE_SLICE_OPERANDS) && p && ir_node_is_slice(p) && p->nout == 1 &&
         !c->is_output[p->out[0]->id];
}

/* The slice producing operand v of a matmul that the matmul may read in
 * place: same dtype, rows contiguous; NULL when there is none. */
static const ir_node *slice_operand(const fuse_ctx *c, const ir_value *v) {
  const ir_node *p = v->def;
  if (!slice_takeable(c, p)) return NULL;
  if (v->type.rank < 2 || p->in[0]->type.dtype != v->type.dtype) return NULL;
  return slice_rows_contiguous(p) ? p : NULL;
}

/* Whether matmul mm's operands have its result's dtype (not a half GEMM,
 * ir/half_gemm.c, which reads its operands as they are). */
static bool gemm_same_dtypes(const ir_node *mm) {
  ir_dtype t = mm->out[0]->type.dtype;
  return mm->in[0]->type.dtype == t && mm->in[1]->type.dtype == t;
}

/* A matmul that reads a slice in place: a group root of its own. */
static bool slice_gemm_root(const fuse_ctx *c, const ir_node *n) {
  if (!gemm_node(n) || !gemm_same_dtypes(n)) return false;
  return slice_operand(c, n->in[0]) || slice_operand(c, n->in[1]);
}

/* Add the slices matmul mm reads in place to the group (n members so far):
 * those no other member reads (the matmul's value is the only one the
 * epilogue sees of them); returns the new count. */
static int add_slice_operands(fuse_ctx *c, int n, const ir_node *mm, int gid) {
  if (!gemm_same_dtypes(mm)) return n;
  for (int j = 0; j < 2 && n < IR_FUSE_MAX_NODES; j++) {
    const ir_value *v = mm->in[j];
    const ir_node *p = slice_operand(c, v);
    int by_mm = (mm->in[0] == v) + (mm->in[1] == v);
    if (!p || c->mark[p->id] == gid || member_uses(c, n, v) != by_mm || !inputs_fit(c, n, p))
      continue;
    c->mark[p->id] = gid;
    c->members[n++] = p->id;
  }
  return n;
}

/* Record the slices among the n members of group gid: the group reads them
 * in place (in node order, so the body is the same however it grew). */
static void record_takes(fuse_ctx *c, int n, int gid) {
  int first = c->ntakes;
  for (int i = 0; i < n; i++) {
    const ir_node *p = c->g->nodes[c->members[i]];
    if (!ir_node_is_slice(p)) continue;
    c->taken[p->out[0]->id] += member_uses(c, n, p->out[0]);
    int k = c->ntakes++;
    for (; k > first && c->takes[k - 1].node > p->id; k--) c->takes[k] = c->takes[k - 1];
    c->takes[k] = (slice_take){gid, p->id};
  }
}

/* Grow the group of root node r (group number gid) into c->members; returns
 * the member count (1: nothing joined). A softmax root (its result has its
 * operand's shape) grows like an elementwise one, without a matmul. Growth
 * stops at IR_FUSE_MAX_NODES members: the producers left out root groups of
 * their own later (ir_graph_fuse walks backwards), and their results get
 * buffers like any value read from outside a group. */
static int grow(fuse_ctx *c, int r, int gid) {
  ir_graph *g = c->g;
  const ir_type *rt = &g->nodes[r]->out[0]->type;
  int n = 0;
  c->members[n++] = r;
  c->group[r] = c->mark[r] = gid;
  int mm = -1;                                  /* the matmul member */
  bool gemm_ok = !softmax_node(g->nodes[r]); /* a softmax takes none */
  if (g->nodes[r]->op == IR_OP_MATMUL) { /* a matmul reading slices in place */
    mm = r;
    n = add_slice_operands(c, n, g->nodes[r], gid);
  }
  for (bool changed = true; changed && n < IR_FUSE_MAX_NODES;) {
    changed = false;
    for (int i = 0; i < n && n < IR_FUSE_MAX_NODES; i++) {
      const ir_node *m = g->nodes[c->members[i]];
      /* a matmul's operands stay outside, and a slice's */
      if (m->op == IR_OP_MATMUL || ir_node_is_slice(m)) continue;
      for (int j = 0; j < m->nin && n < IR_FUSE_MAX_NODES; j++) {
        const ir_value *v = m->in[j];
        const ir_node *p = v->def;
        if (!p || c->group[p->id] >= 0 || c->is_output[v->id] || p->nout != 1) continue;
        if (!ir_type_same_shape(&v->type, rt) || member_uses(c, n, v) != c->uses[v->id]) continue;
        bool join = false;
        if (ew_node(p)) { /* never a producer of the matmul's operands (they stay outside),
                           * nor a reader of the slices it takes in */
          join = mm < 0 || (!reads_value(g->nodes[mm], v) && !reads_member(c, p, gid, true));
        } else if (gemm_ok && gemm_node(p) && mm < 0 && v->type.dtype == rt->dtype &&
                   !reads_member(c, p, gid, false)) {
          join = true;
          mm = p->id;
        }
        if (!join || !inputs_fit(c, n, p)) {
          if (join && p->id == mm) mm = -1; /* the matmul stays out after all */
          continue;
        }
        c->group[p->id] = c->mark[p->id] = gid;
        c->members[n++] = p->id;
        changed = true;
        if (p->id == mm) n = add_slice_operands(c, n, p, gid);
      }
    }
  }
  /* slices the members read (not a matmul's, nor a softmax's own operand):
   * inputs read in place, not kernels of their own */
  for (int i = 0; mm < 0 && i < n; i++) {
    const ir_node *m = g->nodes[c->members[i]];
    if (ir_node_is_slice(m) || softmax_node(m)) continue;
    for (int j = 0; j < m->nin && n < IR_FUSE_MAX_NODES; j++) {
      const ir_node *p = m->in[j]->def;
      if (!slice_takeable(c, p) || c->mark[p->id] == gid || !inputs_fit(c, n, p)) continue;
      c->mark[p->id] = gid;
      c->members[n++] = p->id;
    }
  }
  if (n < 2) {
    c->group[r] = c->mark[r] = -1;
    return n;
  }
  record_takes(c, n, gid);
  return n;
}

/* A copy of type t with its dims in arena a. */
static bool clone_type(ir_arena *a, const ir_type *t, ir_type *out) {
  *out = *t;
  out->dims = NULL;
  if (t->rank <= 0) return true;
  const ir_dim **d = ir_arena_alloc(a, (size_t)t->rank * sizeof *d);
  if (!d) return false;
  for (int i = 0; i < t->rank; i++)
    if (!(d[i] = ir_dim_clone(a, t->dims[i]))) return false;
  out->dims = d;
  return true;
}

/* One group made ready to commit: its body and the mo.fused node (not yet in g). */
typedef struct fused_group {
  int root;
  ir_node *node;
  ir_graph *body;
} fused_group;

/* Build the body and the mo.fused node of the group in members[0..n)
 * (in node order, a matmul first; c->mark is gid for each of them);
 * bnode[member id] receives the body's copy of each member. */
static bool build(fuse_ctx *c, int n, int gid, fused_group *out, ir_node **bnode,
                  ir_value **map) {
  ir_graph *g = c->g;
  const ir_node *root = g->nodes[c->members[n - 1]];
  ir_graph *b = ir_graph_new("fused");
  if (!b) return false;
  out->body = b;
  out->root = root->id;
  for (int i = 0; i < g->nsyms; i++)
    if (ir_graph_symbol(b, g->syms[i], strlen(g->syms[i]), true) != i) return false;
  b->syms_declared = true;
  /* inputs: values read from outside the group, in order of first use */
  int next = 0;
  ir_value **ext = ir_arena_alloc(g->arena, sizeof *ext * (size_t)(n * IR_EW_MAX_IN + 1));
  if (!ext) return false;
  for (int i = 0; i < n; i++) {
    const ir_node *m = g->nodes[c->members[i]];
    for (int j = 0; j < m->nin; j++) {
      ir_value *v = m->in[j];
      if (v->def && c->mark[v->def->id] == gid) continue;
      if (map[v->id]) continue;
      ir_type t;
      if (!clone_type(b->arena, &v->type, &t) || !(map[v->id] = ir_graph_add_input(b, v->name, &t)))
        return false;
      ext[next++] = v;
    }
  }
  ir_loc none = {0, 0};
  for (int i = 0; i < n; i++) {
    const ir_node *m = g->nodes[c->members[i]];
    ir_value *in[IR_EW_MAX_IN];
    ir_type t;
    if (m->nin > IR_EW_MAX_IN || !clone_type(b->arena, &m->out[0]->type, &t)) return false;
    for (int j = 0; j < m->nin; j++) in[j] = map[m->in[j]->id];
    const char *name = m->out[0]->name;
    ir_node *k = ir_graph_add_node(b, m->op, in, m->nin, m->attrs, m->nattrs, 1, &t, &name, m->loc,
                                   NULL);
    if (!k || !ir_node_set_origin(b, k, m->origin)) return false;
    map[m->out[0]->id] = k->out[0];
    bnode[m->id] = k;
  }
  if (ir_graph_set_outputs(b, &map[root->out[0]->id], 1, none) != 0) return false;
  /* the outer node, built by hand: it is placed in g only on commit */
  ir_node *f = ir_arena_alloc(g->arena, sizeof *f);
  ir_value **outs = ir_arena_alloc(g->arena, sizeof *outs);
  ir_attr *attrs = ir_arena_alloc(g->arena, sizeof *attrs);
  if (!f || !outs || !attrs) return false;
  f->op = IR_OP_FUSED;
  f->nin = next;
  f->in = ext;
  f->nout = 1;
  outs[0] = root->out[0];
  f->out = outs;
  f->nattrs = 0;
  f->attrs = attrs;
  f->loc = root->loc;
  f->origin = root->origin; /* same graph */
  f->body = b;
  out->node = f;
  return true;
}

/* Put the groups into g (cannot fail; keep: g->nvalues falses, scratch):
 * the nodes with c->group >= 0 leave it (ngroups: a slice every use of
 * which a group took in), each group's mo.fused takes its root's place. */
static void commit(fuse_ctx *c, fused_group *fg, int ngroups, ir_node **bnode, bool *keep) {
  ir_graph *g = c->g;
  for (int i = 0; i < g->nchecks; i++) {
    const ir_node *k = g->checks[i].node;
    if (k && k->id >= 0 && k->id < g->nnodes && g->nodes[k->id] == k && c->group[k->id] >= 0)
      g->checks[i].node = bnode[k->id];
  }
  int nn = 0, gi = 0;
  int old = g->nnodes;
  for (int i = 0; i < old; i++) {
    ir_node *n = g->nodes[i];
    if (c->group[i] < 0) {
      n->id = nn;
      g->nodes[nn++] = n;
      continue;
    }
    if (gi < ngroups && fg[gi].root == i) {
      ir_node *f = fg[gi++].node;
      f->out[0]->def = f;
      f->out[0]->index = 0;
      f->id = nn;
      g->nodes[nn++] = f;
    }
  }
  g->nnodes = nn;
  /* values: inputs and the results of the nodes left (keep: nvalues zeros) */
  for (int i = 0; i < g->ninputs; i++) keep[g->inputs[i]->id] = true;
  for (int i = 0; i < nn; i++)
    for (int k = 0; k < g->nodes[i]->nout; k++) keep[g->nodes[i]->out[k]->id] = true;
  int nv = 0;
  for (int i = 0; i < g->nvalues; i++) {
    if (!keep[i]) continue;
    ir_value *v = g->values[i];
    v->id = nv;
    g->values[nv++] = v;
  }
  g->nvalues = nv;
}

/* The members of group k into c->members, ordered for its body: the slices
 * it reads in place (c->takes[tk[k]..tk[k+1])), then a matmul, then the
 * rest in node order (the exclusive members order[start[k]..start[k+1])):
 * the matmul's other operands are all from outside, so the body stays in
 * topological order, and every member after it may read its result (the
 * SIMT lowering wants it so). Marks the slices as group k's (build reads
 * c->mark). Returns the member count. */
static int group_members(fuse_ctx *c, int k, const int *order, const int *start, const int *tk) {
  int n = 0;
  for (int t = tk[k]; t < tk[k + 1]; t++) {
    c->members[n++] = c->takes[t].node;
    c->mark[c->takes[t].node] = k;
  }
  int head = n;
  for (int i = start[k]; i < start[k + 1]; i++) c->members[n++] = order[i];
  for (int i = head + 1; i < n; i++)
    if (c->g->nodes[c->members[i]]->op == IR_OP_MATMUL) {
      int mm = c->members[i];
      memmove(c->members + head + 1, c->members + head, (size_t)(i - head) * sizeof(int));
      c->members[head] = mm;
      break;
    }
  return n;
}

/* Bodies and mo.fused nodes of the ngroups groups into fg, in increasing
 * root order (the order commit walks g); false on out of memory (fg's
 * bodies freed). */
static bool build_all(fuse_ctx *c, int ngroups, fused_group *fg, ir_node **bnode,
                      ir_value **map) {
  ir_graph *g = c->g;
  int nn = g->nnodes;
  int *start = calloc((size_t)ngroups + 2, sizeof *start);
  int *cur = calloc((size_t)ngroups + 1, sizeof *cur);
  int *tk = calloc((size_t)ngroups + 2, sizeof *tk);
  int *order = malloc(((size_t)nn + 1) * sizeof *order);
  bool ok = start && cur && tk && order;
  if (ok) { /* exclusive members of each group in node order (counting sort by group) */
    for (int i = 0; i < nn; i++)
      if (c->group[i] >= 0) start[c->group[i] + 1]++;
    for (int k = 0; k < ngroups; k++) start[k + 1] += start[k];
    for (int i = 0; i < nn; i++)
      if (c->group[i] >= 0) order[start[c->group[i]] + cur[c->group[i]]++] = i;
    for (int t = 0; t < c->ntakes; t++) tk[c->takes[t].gid + 1]++; /* takes: in group order */
    for (int k = 0; k < ngroups; k++) tk[k + 1] += tk[k];
  }
  for (int k = ngroups - 1, gi = 0; ok && k >= 0; k--, gi++) {
    int n = group_members(c, k, order, start, tk);
    ok = build(c, n, k, &fg[gi], bnode, map);
    for (int i = 0; i < n; i++) { /* map back to empty for the next group */
      const ir_node *m = g->nodes[c->members[i]];
      for (int j = 0; j < m->nin; j++) map[m->in[j]->id] = NULL;
      map[m->out[0]->id] = NULL;
    }
    if (!ok)
      for (int j = 0; j <= gi; j++) ir_graph_free(fg[j].body);
  }
  free(start);
  free(cur);
  free(tk);
  free(order);
  return ok;
}

int ir_graph_fuse(ir_graph *g, unsigned flags, ir_diag *d) {
  if (!g) return ir_diag_set(d, (ir_loc){0, 0}, "ir_graph_fuse: no graph");
  int nv = g->nvalues, nn = g->nnodes, slots = 0;
  for (int i = 0; i < nn; i++) slots += g->nodes[i]->nin;
  fuse_ctx c = {g, flags, calloc((size_t)nv + 1, sizeof(int)), calloc((size_t)nv + 1, sizeof(bool)),
                malloc(((size_t)nn + 1) * sizeof(int)), malloc(((size_t)nn + 1) * sizeof(int)),
                malloc(((size_t)nn + 1) * sizeof(int)), calloc((size_t)nv + 1, sizeof(int)),
                malloc(((size_t)slots + 1) * sizeof(slice_take)), 0};
  fused_group *fg = calloc((size_t)nn + 1, sizeof *fg);
  ir_node **bnode = calloc((size_t)nn + 1, sizeof *bnode);
  ir_value **map = calloc((size_t)nv + 1, sizeof *map);
  int ngroups = 0, rc = -1;
  if (!c.uses || !c.is_output || !c.group || !c.members || !c.mark || !c.taken || !c.takes ||
      !fg || !bnode || !map)
    goto done;
  for (int i = 0; i < nn; i++) {
    c.group[i] = c.mark[i] = -1;
    for (int j = 0; j < g->nodes[i]->nin; j++) c.uses[g->nodes[i]->in[j]->id]++;
  }
  for (int i = 0; i < g->noutputs; i++) c.is_output[g->outputs[i]->id] = true;

  /* groups, from the last node backwards (group 0 has the last root) */
  for (int i = nn - 1; i >= 0; i--) {
    bool root = ew_node(g->nodes[i]) || ((flags & IR_FUSE_SOFTMAX) && softmax_node(g->nodes[i]));
    if (c.group[i] >= 0) continue;
    if (!root && !slice_gemm_root(&c, g->nodes[i])) continue;
    if (grow(&c, i, ngroups) >= 2) ngroups++;
  }
  if (!build_all(&c, ngroups, fg, bnode, map)) goto done;
  bool *keep = calloc((size_t)nv + 1, sizeof *keep);
  if (!keep) {
    for (int j = 0; j < ngroups; j++) ir_graph_free(fg[j].body);
    goto done;
  }
  /* a slice whose every use a group took in leaves g with the members
   * (its run-time checks then point at one of its body copies) */
  for (int t = 0; t < c.ntakes; t++) {
    const ir_value *v = g->nodes[c.takes[t].node]->out[0];
    if (c.taken[v->id] == c.uses[v->id]) c.group[c.takes[t].node] = ngroups;
  }
  commit(&c, fg, ngroups, bnode, keep);
  free(keep);
  rc = ngroups;
done:
  if (rc < 0)
    ir_diag_set(d, (ir_loc){0, 0}, "out of memory fusing graph @%s", g->name);
  free(c.uses);
  free(c.is_output);
  free(c.group);
  free(c.members);
  free(c.mark);
  free(c.taken);
  free(c.takes);
  free(fg);
  free(bnode);
  free(map);
  return rc;
}
