/* graph.c - the op table, tensor types, and building / copying graphs.
 *
 * The op table is ops.def expanded once: op_table (one ir_op_info per OP
 * row), class_table (one ir_class_info per CLS row) and an attribute schema
 * array per ATTRS row; everything else reads them through ir_op_get,
 * ir_class_get and ir_op_attr_spec.
 *
 * The builder only appends, so nodes stay in topological order. Every object
 * lives in the graph's arena; growable arrays (nodes, values, symbols,
 * inputs) are re-allocated in the arena when they fill up (the old copy is
 * simply abandoned until the arena dies). Value names are unique: a NULL
 * name gets a fresh number. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "ir.h"

/* ---- the op table (ops.def) ---- */

/* One array of ir_attr_spec per ATTRS row, attrs_<SET>, ended by a row
 * without a name (so an empty schema is still an array). */
#define REQ(nm, k) {{.name = nm, .kind = IR_ATTR_##k}, true, false},
#define OPT(nm, k, dflt) {{.name = nm, .kind = IR_ATTR_##k, .u = {dflt}}, false, false},
#define RUN(nm, k, dflt) {{.name = nm, .kind = IR_ATTR_##k, .u = {dflt}}, false, true},
#define ATTRS(set, rows) static const ir_attr_spec attrs_##set[] = {rows{{.name = NULL}, 0, 0}};
#include "ops.def"
#undef REQ
#undef OPT
#undef RUN

#define NATTRS(set) ((int)(sizeof attrs_##set / sizeof attrs_##set[0]) - 1)
static const ir_op_info op_table[IR_OP_COUNT] = {
#define OP(id, nm, cls, nin_min, nin_max, nout, dt0, dt1, same, aset, flags) \
  {nm, IR_CLS_##cls, nin_min, nin_max, nout, {IR_DTS_##dt0, IR_DTS_##dt1}, same, \
   attrs_##aset, NATTRS(aset), flags},
#include "ops.def"
};
#undef NATTRS

static const ir_class_info class_table[IR_CLS_COUNT] = {
#define CLS(id, work, mul, div, streams) {#id, IR_WORK_##work, mul, div, streams},
#include "ops.def"
};

const ir_op_info *ir_op_get(ir_op op) {
  return (unsigned)op < IR_OP_COUNT ? &op_table[op] : NULL;
}

const ir_class_info *ir_class_get(ir_op_class c) {
  return (unsigned)c < IR_CLS_COUNT ? &class_table[c] : NULL;
}

int ir_op_lookup(const char *name, size_t len, int noperands, bool *name_known) {
  if (name_known) *name_known = false;
  for (int i = 0; i < IR_OP_COUNT; i++) {
    const ir_op_info *o = &op_table[i];
    if (strlen(o->name) != len || memcmp(o->name, name, len) != 0) continue;
    if (name_known) *name_known = true;
    if (noperands < o->nin_min) continue;
    if (o->nin_max >= 0 && noperands > o->nin_max) continue;
    return i;
  }
  return -1;
}

bool ir_op_has_flag(ir_op op, unsigned flag) {
  const ir_op_info *o = ir_op_get(op);
  return o && (o->flags & flag) == flag;
}

bool ir_op_is_elementwise(ir_op op) { return ir_op_has_flag(op, IR_OPF_EW); }

bool ir_node_is_slice(const ir_node *n) {
  return n->op == IR_OP_SLICE_TENSOR || n->op == IR_OP_SLICE_DATA;
}

bool ir_node_ew_can_fail(const ir_node *n) {
  if (!n || n->nout < 1 || !n->out || !n->out[0]) return false;
  if (n->op != IR_OP_MOD && n->op != IR_OP_FLOOR_DIV && n->op != IR_OP_POW) return false;
  return !ir_dtype_is_float(n->out[0]->type.dtype);
}

const ir_attr_spec *ir_op_attr_spec(ir_op op, const char *name) {
  const ir_op_info *o = ir_op_get(op);
  for (int i = 0; o && name && i < o->nattrs; i++)
    if (strcmp(o->attrs[i].a.name, name) == 0) return &o->attrs[i];
  return NULL;
}

/* ---- dtype sets ---- */

bool ir_dtype_in_set(ir_dtype t, unsigned dts) {
  if ((dts & IR_DTS_FIB) == 0) return true;
  /* narrow ints compute as si32 / si64, but indices and shapes are read as
   * si32 / si64 only */
  if (ir_dtype_is_int(t) && ir_dtype_is_narrow(t) && (dts & IR_DTS_NAMED_INDICES)) return false;
  ir_dtype w = ir_dtype_widened(t);
  if (!ir_dtype_is_compute(w)) return false;
  unsigned cls = ir_dtype_is_float(w) ? IR_DTS_F : w == IR_DT_BOOL ? IR_DTS_B : IR_DTS_I;
  return (cls & dts) != 0;
}

bool ir_node_widens_operand(const ir_node *n, int k) {
  const ir_op_info *o = n ? ir_op_get(n->op) : NULL;
  if (!o || k < 0 || k >= n->nin) return false;
  /* the set that rules operand k: its own, else that of the operand whose
   * dtype it shares (mo.add's operand 1 is operand 0's dtype) */
  unsigned set = k < 2 ? o->dts[k] : 0;
  if (!(set & IR_DTS_FIB) && o->same >= 0 && k > o->same) set = o->dts[o->same < 2 ? o->same : 1];
  ir_dtype t = n->in[k]->type.dtype;
  return ir_dtype_is_narrow(t) && (set & IR_DTS_FIB) && ir_dtype_in_set(t, set);
}

bool ir_node_computes_narrow(const ir_node *n) {
  const ir_op_info *o = n ? ir_op_get(n->op) : NULL;
  if (!o || !((o->dts[0] | o->dts[1]) & (IR_DTS_F | IR_DTS_I))) return false;
  for (int k = 0; k < n->nin; k++)
    if (ir_node_widens_operand(n, k)) return true;
  /* a half result of a float op typed by an attribute: widening reports it */
  for (int k = 0; (o->dts[0] | o->dts[1]) & IR_DTS_F && k < n->nout; k++)
    if (ir_dtype_is_half(n->out[k]->type.dtype)) return true;
  return false;
}

const char *ir_dtype_set_name(unsigned dts) {
  static const char *const words[8] = {
      [0] = "any dtype",
      [IR_DTS_F] = "f16, bf16, f32 or f64",
      [IR_DTS_I] = "an integer (si8 to si64, ui8 to ui32)",
      [IR_DTS_FI] = "f16, bf16, f32, f64 or an integer (si8 to si64, ui8 to ui32)",
      [IR_DTS_B] = "bool",
      [IR_DTS_F | IR_DTS_B] = "bool, f16, bf16, f32 or f64",
      [IR_DTS_I | IR_DTS_B] = "bool or an integer (si8 to si64, ui8 to ui32)",
      [IR_DTS_FIB] = "bool, f16, bf16, f32, f64 or an integer (si8 to si64, ui8 to ui32)",
  };
  if ((dts & IR_DTS_NAMED_INDICES) && (dts & IR_DTS_FIB) == IR_DTS_I) return "si32 or si64";
  return words[dts & IR_DTS_FIB];
}

bool ir_node_is_source(const ir_node *n) { return n && ir_op_has_flag(n->op, IR_OPF_SRC); }

int ir_node_data_sym(const ir_node *n) {
  if (!n || !ir_op_has_flag(n->op, IR_OPF_DATA_DIM) || n->nout < 1) return -1;
  const ir_type *t = &n->out[0]->type;
  if (t->rank < 1 || !t->dims || !ir_dim_is_sym(t->dims[0])) return -1;
  return t->dims[0]->sym;
}

bool ir_node_reads_dims(const ir_node *n) {
  /* a data slice a GEMM reads in place (ir_graph_fuse) */
  for (int j = 0; n->op == IR_OP_FUSED && n->body && j < n->body->nnodes; j++)
    if (n->body->nodes[j]->op == IR_OP_SLICE_DATA) return true;
  if ((n->op == IR_OP_RESHAPE || n->op == IR_OP_BROADCAST_TO ||
       n->op == IR_OP_REPEAT_INTERLEAVE || n->op == IR_OP_FOLD || n->op == IR_OP_RESIZE ||
       n->op == IR_OP_RESIZE_NEAREST || n->op == IR_OP_RESIZE_LINEAR ||
       n->op == IR_OP_RESIZE_BICUBIC) &&
      n->nin >= 2)
    return true;
  return n->op == IR_OP_SLICE_DATA ||
         (n->op == IR_OP_RANGE && n->nout > 0 && ir_dim_is_sym(n->out[0]->type.dims[0]));
}

bool ir_graph_reads_dims(const ir_graph *g) {
  for (int i = 0; g && i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (!ir_node_reads_dims(n)) continue;
    if (n->op != IR_OP_RANGE) return true;
    bool from_shapes = false; /* a range whose length an input shape binds reads nothing */
    for (int k = 0; k < g->ninputs && !from_shapes; k++)
      for (int a = 0; a < g->inputs[k]->type.rank; a++)
        from_shapes |= ir_dim_uses_sym(g->inputs[k]->type.dims[a], n->out[0]->type.dims[0]->sym);
    if (!from_shapes) return true;
  }
  return false;
}

const char *ir_node_not_before_run(const ir_node *p) {
  const ir_op_info *info = ir_op_get(p->op);
  if (!info) return "an op kiln does not know";
  if (p->op == IR_OP_CONSTANT_EXTERNAL) return "a weight";
  if (ir_op_has_flag(p->op, IR_OPF_DATA_DIM)) return "an op whose count is known only as it runs";
  if (info->cls == IR_CLS_CONTROL) return "control flow";
  if (info->cls == IR_CLS_CUSTOM || info->cls == IR_CLS_BUFFER || info->cls == IR_CLS_PRINT ||
      ir_op_has_flag(p->op, IR_OPF_EFFECTS))
    return "an op with effects";
  return NULL;
}

const ir_node *ir_value_read_blocker(const ir_value *v, const char **why) {
  if (!v || !v->def || v->def->op == IR_OP_CONSTANT) return NULL;
  int nn = v->def->id + 1; /* its producers come before it */
  const ir_node **stack = malloc((size_t)nn * sizeof *stack);
  bool *seen = calloc((size_t)nn, sizeof *seen);
  const ir_node *found = NULL;
  if (!stack || !seen) {
    *why = "out of memory";
    found = v->def;
  }
  int top = 0;
  if (!found) {
    stack[top++] = v->def;
    seen[v->def->id] = true;
  }
  while (top > 0 && !found) {
    const ir_node *p = stack[--top];
    if ((*why = ir_node_not_before_run(p))) {
      found = p;
      break;
    }
    for (int j = 0; j < p->nin; j++) {
      const ir_node *q = p->in[j]->def;
      if (q && q->id >= 0 && q->id < nn && !seen[q->id]) {
        seen[q->id] = true;
        stack[top++] = q;
      }
    }
  }
  free(stack);
  free(seen);
  return found;
}

bool ir_graph_has_data_syms(const ir_graph *g) {
  for (int i = 0; g && i < g->nnodes; i++)
    if (ir_node_data_sym(g->nodes[i]) >= 0) return true;
  return false;
}

const ir_node *ir_node_matmul(const ir_node *n) {
  if (!n) return NULL;
  if (ir_op_get(n->op)->cls == IR_CLS_MATMUL) return n;
  for (int i = 0; n->body && i < n->body->nnodes; i++)
    if (ir_op_get(n->body->nodes[i]->op)->cls == IR_CLS_MATMUL) return n->body->nodes[i];
  return NULL;
}

int ir_value_uses(const ir_graph *g, const ir_value *v) {
  int k = 0;
  for (int i = 0; i < g->nnodes; i++)
    for (int j = 0; j < g->nodes[i]->nin; j++) k += g->nodes[i]->in[j] == v;
  for (int o = 0; o < g->noutputs; o++) k += g->outputs[o] == v;
  return k;
}


/* ---- types ---- */
bool ir_device_parse(const char *s, ir_device *d) {
  if (!s) return false;
  ir_device_kind k;
  if (strncmp(s, "cpu", 3) == 0) k = IR_DEV_CPU;
  else if (strncmp(s, "gpu", 3) == 0) k = IR_DEV_GPU;
  else return false;
  s += 3;
  long id = 0;
  if (*s == ':') {
    s++;
    if (*s < '0' || *s > '9') return false;
    for (; *s >= '0' && *s <= '9'; s++)
      if ((id = id * 10 + (*s - '0')) > 1000000) return false;
  }
  if (*s) return false;
  d->kind = k;
  d->id = (int)id;
  return true;
}

bool ir_type_equal(const ir_type *a, const ir_type *b) {
  if (a->dtype != b->dtype || a->kind != b->kind) return false;
  if (a->device.kind != b->device.kind || a->device.id != b->device.id) return false;
  return ir_type_same_shape(a, b);
}

int ir_graph_input_index(const ir_graph *g, const ir_value *v) {
  for (int i = 0; i < g->ninputs; i++)
    if (g->inputs[i] == v) return i;
  return -1;
}

bool ir_type_same_shape(const ir_type *a, const ir_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (!ir_dim_equal(a->dims[i], b->dims[i])) return false;
  return true;
}

bool ir_type_static_numel(const ir_type *t, int64_t *n) {
  int64_t acc = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t v;
    if (!ir_dim_is_const(t->dims[i], &v)) return false;
    if (__builtin_mul_overflow(acc, v, &acc)) return false;
  }
  if (n) *n = acc;
  return true;
}

/* ---- diagnostics ---- */
int ir_diag_set(ir_diag *d, ir_loc loc, const char *fmt, ...) {
  if (!d) return -1;
  d->line = loc.line;
  d->col = loc.col;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d->msg, sizeof d->msg, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- growable arrays in the arena ---- */
static bool grow(ir_arena *a, void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int ncap = *cap ? *cap * 2 : 8;
  while (ncap < need) ncap *= 2;
  void *n = ir_arena_alloc(a, (size_t)ncap * elem);
  if (!n) return false;
  if (*arr && *cap) memcpy(n, *arr, (size_t)*cap * elem);
  *arr = n;
  *cap = ncap;
  return true;
}

/* ---- graphs ---- */
ir_graph *ir_graph_new(const char *name) {
  ir_arena *a = ir_arena_new();
  if (!a) return NULL;
  ir_graph *g = ir_arena_alloc(a, sizeof *g);
  if (!g) {
    ir_arena_free(a);
    return NULL;
  }
  g->arena = a;
  g->name = ir_arena_strdup(a, name ? name : "graph");
  if (!g->name) {
    ir_arena_free(a);
    return NULL;
  }
  return g;
}

void ir_graph_free(ir_graph *g) {
  if (!g) return;
  /* mo.fused bodies have arenas of their own (fuse.c) */
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i] && g->nodes[i]->body) ir_graph_free(g->nodes[i]->body);
  ir_control_free(g); /* regions and subgraphs (control.h) */
  ir_arena_free(g->arena); /* g itself lives in its arena */
}

int ir_graph_symbol(ir_graph *g, const char *name, size_t len, bool create) {
  for (int i = 0; i < g->nsyms; i++)
    if (strlen(g->syms[i]) == len && memcmp(g->syms[i], name, len) == 0) return i;
  if (!create) return -1;
  if (!grow(g->arena, (void **)&g->syms, &g->cap_syms, g->nsyms + 1, sizeof *g->syms)) return -1;
  const char *s = ir_arena_strndup(g->arena, name, len);
  if (!s) return -1;
  g->syms[g->nsyms] = s;
  return g->nsyms++;
}

/* ---- the name index: linear probing over a power-of-two table ---- */
static uint64_t name_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603u; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h;
}

static bool live_value(const ir_graph *g, const ir_value *v) {
  return v->id < g->nvalues && g->values[v->id] == v;
}

ir_value *ir_graph_find_value(const ir_graph *g, const char *name, size_t len) {
  if (!g->cap_index) return NULL;
  size_t mask = (size_t)g->cap_index - 1;
  for (size_t i = name_hash(name, len) & mask;; i = (i + 1) & mask) {
    ir_value *v = g->name_index[i];
    if (!v) return NULL;
    if (live_value(g, v) && strlen(v->name) == len && memcmp(v->name, name, len) == 0) return v;
  }
}

static void index_put(ir_value **tab, int cap, ir_value *v) {
  size_t mask = (size_t)cap - 1;
  size_t i = name_hash(v->name, strlen(v->name)) & mask;
  while (tab[i]) i = (i + 1) & mask;
  tab[i] = v;
}

/* Add v (already in g->values) to the index, growing it to stay half empty. */
static bool index_add(ir_graph *g, ir_value *v) {
  if (2 * (g->nvalues + 1) > g->cap_index) {
    int cap = g->cap_index ? g->cap_index * 2 : 64;
    while (2 * (g->nvalues + 1) > cap) cap *= 2;
    ir_value **tab = ir_arena_alloc(g->arena, (size_t)cap * sizeof *tab);
    if (!tab) return false;
    for (int i = 0; i < g->nvalues; i++) index_put(tab, cap, g->values[i]); /* live ones only */
    g->name_index = tab;
    g->cap_index = cap;
  }
  index_put(g->name_index, g->cap_index, v);
  return true;
}

/* A new value named `name` (or a fresh number); NULL if taken or OOM. */
static ir_value *new_value(ir_graph *g, const char *name) {
  char buf[32];
  if (!name) {
    for (int k = g->nvalues;; k++) {
      snprintf(buf, sizeof buf, "%d", k);
      if (!ir_graph_find_value(g, buf, strlen(buf))) break;
    }
    name = buf;
  } else if (ir_graph_find_value(g, name, strlen(name))) {
    return NULL;
  }
  if (!grow(g->arena, (void **)&g->values, &g->cap_values, g->nvalues + 1, sizeof *g->values))
    return NULL;
  ir_value *v = ir_arena_alloc(g->arena, sizeof *v);
  if (!v || !(v->name = ir_arena_strdup(g->arena, name))) return NULL;
  v->id = g->nvalues;
  v->type.rank = -1;
  g->values[g->nvalues] = v;
  if (!index_add(g, v)) return NULL;
  g->nvalues++;
  return v;
}

static bool copy_type(ir_arena *a, ir_type *dst, const ir_type *src) {
  *dst = *src;
  dst->dims = NULL;
  if (src->rank <= 0) return true;
  dst->dims = ir_arena_alloc(a, (size_t)src->rank * sizeof *dst->dims);
  if (!dst->dims) return false;
  memcpy(dst->dims, src->dims, (size_t)src->rank * sizeof *dst->dims);
  return true;
}

ir_value *ir_graph_add_input(ir_graph *g, const char *name, const ir_type *t) {
  if (!grow(g->arena, (void **)&g->inputs, &g->cap_inputs, g->ninputs + 1, sizeof *g->inputs))
    return NULL;
  /* input_names grows with inputs: same capacity. */
  const char **names = ir_arena_alloc(g->arena, (size_t)g->cap_inputs * sizeof *names);
  if (!names) return NULL;
  if (g->input_names) memcpy(names, g->input_names, (size_t)g->ninputs * sizeof *names);
  g->input_names = names;
  ir_value *v = new_value(g, name);
  if (!v || !copy_type(g->arena, &v->type, t)) return NULL;
  v->index = g->ninputs;
  g->inputs[g->ninputs++] = v;
  return v;
}

/* Deep copy of one attribute's payload into arena a. */
static bool copy_attr(ir_arena *a, ir_attr *dst, const ir_attr *src) {
  *dst = *src;
  if (!(dst->name = ir_arena_strdup(a, src->name))) return false;
  switch (src->kind) {
  case IR_ATTR_STRING:
    return (dst->u.s = ir_arena_strdup(a, src->u.s ? src->u.s : "")) != NULL;
  case IR_ATTR_INTS:
    dst->u.ints.v = ir_arena_memdup(a, src->u.ints.v, (size_t)src->u.ints.n * sizeof(int64_t));
    return dst->u.ints.v != NULL;
  case IR_ATTR_STRINGS: {
    const char **v = ir_arena_alloc(a, (size_t)(src->u.strings.n ? src->u.strings.n : 1) * sizeof *v);
    if (!v) return false;
    for (int i = 0; i < src->u.strings.n; i++)
      if (!(v[i] = ir_arena_strdup(a, src->u.strings.v[i]))) return false;
    dst->u.strings.v = v;
    return true;
  }
  case IR_ATTR_DENSE: {
    size_t bytes = (size_t)src->u.dense.numel * ir_dtype_size(src->u.dense.dtype);
    dst->u.dense.data = ir_arena_memdup(a, src->u.dense.data, bytes);
    return dst->u.dense.data != NULL;
  }
  default:
    return true;
  }
}

bool ir_node_set_origin(ir_graph *g, ir_node *n, const char *origin) {
  n->origin = NULL;
  if (!origin) return true;
  /* an importer's source node usually makes several nodes in a row */
  for (int i = g->nnodes - 1; i >= 0 && i >= g->nnodes - 3; i--) {
    const char *o = g->nodes[i]->origin;
    if (o && strcmp(o, origin) == 0) {
      n->origin = o;
      return true;
    }
  }
  n->origin = ir_arena_strdup(g->arena, origin);
  return n->origin != NULL;
}

int ir_node_origin_msg(const ir_node *n, char *msg, size_t msglen) {
  if (!n || !n->origin || !msg || msglen == 0) return -1;
  size_t lo = strlen(n->origin), lm = strnlen(msg, msglen - 1);
  if (lo + 2 >= msglen) return -1;
  if (lo + 2 + lm >= msglen) lm = msglen - lo - 3; /* cut the end of the message */
  memmove(msg + lo + 2, msg, lm);
  memcpy(msg, n->origin, lo);
  msg[lo] = ':';
  msg[lo + 1] = ' ';
  msg[lo + 2 + lm] = '\0';
  return -1;
}

ir_node *ir_graph_add_node(ir_graph *g, ir_op op, ir_value *const *in, int nin,
                           const ir_attr *attrs, int nattrs, int nout,
                           const ir_type *out_types, const char *const *result_names,
                           ir_loc loc, ir_diag *d) {
  if ((unsigned)op >= IR_OP_COUNT || nin < 0 || nout < 0 || nattrs < 0) {
    ir_diag_set(d, loc, "invalid node");
    return NULL;
  }
  if (!grow(g->arena, (void **)&g->nodes, &g->cap_nodes, g->nnodes + 1, sizeof *g->nodes))
    goto oom;
  ir_node *n = ir_arena_alloc(g->arena, sizeof *n);
  if (!n) goto oom;
  n->op = op;
  n->loc = loc;
  n->origin = NULL;
  n->nin = nin;
  n->in = ir_arena_alloc(g->arena, (size_t)(nin ? nin : 1) * sizeof *n->in);
  n->out = ir_arena_alloc(g->arena, (size_t)(nout ? nout : 1) * sizeof *n->out);
  n->attrs = ir_arena_alloc(g->arena, (size_t)(nattrs ? nattrs : 1) * sizeof *n->attrs);
  if (!n->in || !n->out || !n->attrs) goto oom;
  if (nin) memcpy(n->in, in, (size_t)nin * sizeof *in);
  /* attributes: copy, then insertion-sort by name; a repeated name is an error */
  for (int i = 0; i < nattrs; i++) {
    if (!copy_attr(g->arena, &n->attrs[i], &attrs[i])) goto oom;
    for (int j = i; j > 0; j--) {
      int c = strcmp(n->attrs[j - 1].name, n->attrs[j].name);
      if (c == 0) {
        ir_diag_set(d, loc, "attribute '%s' is given twice", n->attrs[j].name);
        return NULL;
      }
      if (c < 0) break;
      ir_attr t = n->attrs[j - 1];
      n->attrs[j - 1] = n->attrs[j];
      n->attrs[j] = t;
    }
  }
  n->nattrs = nattrs;
  for (int i = 0; i < nout; i++) {
    const char *rn = result_names ? result_names[i] : NULL;
    if (rn && ir_graph_find_value(g, rn, strlen(rn))) {
      ir_diag_set(d, loc, "redefinition of value %%%s", rn);
      return NULL;
    }
    ir_value *v = new_value(g, rn);
    if (!v) goto oom;
    if (out_types && !copy_type(g->arena, &v->type, &out_types[i])) goto oom;
    v->def = n;
    v->index = i;
    n->out[i] = v;
  }
  n->nout = nout;
  n->id = g->nnodes;
  g->nodes[g->nnodes++] = n;
  return n;
oom:
  ir_diag_set(d, loc, "out of memory");
  return NULL;
}

int ir_graph_set_outputs(ir_graph *g, ir_value *const *v, int n, ir_loc loc) {
  ir_value **outs = ir_arena_alloc(g->arena, (size_t)(n ? n : 1) * sizeof *outs);
  const char **names = ir_arena_alloc(g->arena, (size_t)(n ? n : 1) * sizeof *names);
  if (!outs || !names) return -1;
  if (n) memcpy(outs, v, (size_t)n * sizeof *v);
  /* keep result names already set for the same positions */
  for (int i = 0; i < n && g->output_names && i < g->noutputs; i++) names[i] = g->output_names[i];
  g->outputs = outs;
  g->output_names = names;
  g->noutputs = n;
  g->output_loc = loc;
  return 0;
}

/* ---- attributes ---- */
const ir_attr *ir_node_attr(const ir_node *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

int64_t ir_node_attr_int(const ir_node *n, const char *name, int64_t dflt) {
  const ir_attr *a = ir_node_attr(n, name);
  return a && a->kind == IR_ATTR_INT ? a->u.i : dflt;
}

bool ir_node_attr_bool(const ir_node *n, const char *name, bool dflt) {
  const ir_attr *a = ir_node_attr_or_default(n, name);
  if (a && a->kind == IR_ATTR_BOOL) return a->u.b;
  if (a && a->kind == IR_ATTR_INT) return a->u.i != 0;
  return dflt;
}

double ir_node_attr_float(const ir_node *n, const char *name, double dflt) {
  const ir_attr *a = ir_node_attr(n, name);
  if (!a) return dflt;
  if (a->kind == IR_ATTR_FLOAT) return a->u.f;
  if (a->kind == IR_ATTR_INT) return (double)a->u.i;
  return dflt;
}

const char *ir_node_attr_string(const ir_node *n, const char *name, const char *dflt) {
  const ir_attr *a = ir_node_attr(n, name);
  return a && a->kind == IR_ATTR_STRING ? a->u.s : dflt;
}

const ir_attr *ir_node_attr_or_default(const ir_node *n, const char *name) {
  const ir_attr *a = ir_node_attr(n, name);
  if (a) return a;
  const ir_attr_spec *sp = ir_op_attr_spec(n->op, name);
  return sp && !sp->required ? &sp->a : NULL;
}

/* Replace (or add, keeping the name order) attribute `name` of n with val
 * (whose name is ignored); name is copied into g's arena. 0, or -1 on
 * out-of-memory (n unchanged). */
static int set_attr(ir_graph *g, ir_node *n, const char *name, ir_attr val) {
  for (int i = 0; i < n->nattrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) {
      val.name = n->attrs[i].name;
      n->attrs[i] = val;
      return 0;
    }
  const char *nm = ir_arena_strdup(g->arena, name);
  ir_attr *a = ir_arena_alloc(g->arena, (size_t)(n->nattrs + 1) * sizeof *a);
  if (!nm || !a) return -1;
  int k = 0;
  while (k < n->nattrs && strcmp(n->attrs[k].name, name) < 0) k++;
  if (k) memcpy(a, n->attrs, (size_t)k * sizeof *a);
  val.name = nm;
  a[k] = val;
  if (n->nattrs > k) memcpy(a + k + 1, n->attrs + k, (size_t)(n->nattrs - k) * sizeof *a);
  n->attrs = a;
  n->nattrs++;
  return 0;
}

/* The string is copied into g's arena. */
int ir_node_set_attr_string(ir_graph *g, ir_node *n, const char *name, const char *value) {
  const char *v = ir_arena_strdup(g->arena, value);
  if (!v) return -1;
  return set_attr(g, n, name, (ir_attr){.kind = IR_ATTR_STRING, .u.s = v});
}

int ir_node_set_attr_int(ir_graph *g, ir_node *n, const char *name, int64_t value) {
  return set_attr(g, n, name, (ir_attr){.kind = IR_ATTR_INT, .u.i = value});
}

/* ---- clone ---- */
/* The node of c that stands for node k of g: g->nodes[k->id] maps by
 * position; a node absorbed into a mo.fused body (run-time checks keep
 * pointing at those) maps to the same position in the cloned body. */
static ir_node *map_node(const ir_graph *g, const ir_graph *c, const ir_node *k) {
  if (k->id >= 0 && k->id < g->nnodes && g->nodes[k->id] == k) return c->nodes[k->id];
  for (int i = 0; i < g->nnodes; i++) {
    const ir_graph *b = g->nodes[i]->body;
    if (!b || !c->nodes[i]->body) continue;
    ir_node *m = map_node(b, c->nodes[i]->body, k);
    if (m) return m;
  }
  return NULL;
}

static bool clone_type(ir_arena *a, ir_type *dst, const ir_type *src) {
  *dst = *src;
  dst->dims = NULL;
  if (src->rank <= 0) return true;
  dst->dims = ir_arena_alloc(a, (size_t)src->rank * sizeof *dst->dims);
  if (!dst->dims) return false;
  for (int i = 0; i < src->rank; i++)
    if (!(dst->dims[i] = ir_dim_clone(a, src->dims[i]))) return false;
  return true;
}

static const char **clone_names(ir_arena *a, const char *const *src, int n) {
  const char **v = ir_arena_alloc(a, (size_t)(n ? n : 1) * sizeof *v);
  if (!v) return NULL;
  for (int i = 0; src && i < n; i++)
    if (src[i] && !(v[i] = ir_arena_strdup(a, src[i]))) return NULL;
  return v;
}

ir_graph *ir_graph_clone(const ir_graph *g) {
  ir_graph *c = ir_graph_new(g->name);
  if (!c) return NULL;
  ir_arena *a = c->arena;
  ir_value **map = calloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof *map);
  ir_type *types = NULL;
  if (!map) goto fail;
  for (int i = 0; i < g->nsyms; i++)
    if (ir_graph_symbol(c, g->syms[i], strlen(g->syms[i]), true) != i) goto fail;
  c->syms_declared = g->syms_declared;
  for (int i = 0; i < g->ninputs; i++) {
    ir_type t;
    if (!clone_type(a, &t, &g->inputs[i]->type)) goto fail;
    ir_value *v = ir_graph_add_input(c, g->inputs[i]->name, &t);
    if (!v) goto fail;
    map[g->inputs[i]->id] = v;
  }
  if (g->input_names)
    for (int i = 0; i < g->ninputs; i++)
      if (g->input_names[i] && !(c->input_names[i] = ir_arena_strdup(a, g->input_names[i])))
        goto fail;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    ir_value *in[n->nin ? n->nin : 1];
    const char *names[n->nout ? n->nout : 1];
    types = calloc((size_t)(n->nout ? n->nout : 1), sizeof *types);
    if (!types) goto fail;
    for (int j = 0; j < n->nin; j++) in[j] = map[n->in[j]->id];
    for (int j = 0; j < n->nout; j++) {
      names[j] = n->out[j]->name;
      if (!clone_type(a, &types[j], &n->out[j]->type)) goto fail;
    }
    ir_node *m = ir_graph_add_node(c, n->op, in, n->nin, n->attrs, n->nattrs, n->nout, types, names,
                                   n->loc, NULL);
    free(types);
    types = NULL;
    if (m && !ir_node_set_origin(c, m, n->origin)) m = NULL;
    if (!m) goto fail;
    if (n->body && !(m->body = ir_graph_clone(n->body))) goto fail;
    for (int j = 0; j < n->nout; j++) map[n->out[j]->id] = m->out[j];
  }
  if (g->noutputs) {
    ir_value *outs[g->noutputs];
    for (int i = 0; i < g->noutputs; i++) outs[i] = map[g->outputs[i]->id];
    if (ir_graph_set_outputs(c, outs, g->noutputs, g->output_loc) != 0) goto fail;
    if (!(c->output_names = clone_names(a, g->output_names, g->noutputs))) goto fail;
  }
  if (ir_control_clone(g, c) != 0) goto fail; /* regions and subgraphs (control.h) */
  if (g->nchecks) {
    c->checks = ir_arena_alloc(a, (size_t)g->nchecks * sizeof *c->checks);
    if (!c->checks) goto fail;
    for (int i = 0; i < g->nchecks; i++) {
      const ir_check *k = &g->checks[i];
      ir_check *m = &c->checks[i];
      m->kind = k->kind;
      m->lhs = ir_dim_clone(a, k->lhs);
      m->rhs = ir_dim_clone(a, k->rhs);
      m->node = k->node ? map_node(g, c, k->node) : NULL;
      m->what = ir_arena_strdup(a, k->what ? k->what : "");
      if (!m->lhs || !m->rhs || !m->what) goto fail;
    }
    c->nchecks = c->cap_checks = g->nchecks;
  }
  free(map);
  return c;
fail:
  free(types);
  free(map);
  ir_graph_free(c);
  return NULL;
}

void ir_graph_drop_nodes(ir_graph *g, const bool *drop) {
  int nn = 0, nv = 0;
  for (int i = 0; i < g->nvalues; i++) { /* a dropped node's results go with it */
    ir_value *v = g->values[i];
    if (v->def && drop[v->def->id]) continue;
    v->id = nv;
    g->values[nv++] = v;
  }
  for (int i = 0; i < g->nnodes; i++) {
    ir_node *n = g->nodes[i];
    if (drop[i]) continue;
    n->id = nn;
    g->nodes[nn++] = n;
  }
  g->nvalues = nv;
  g->nnodes = nn;
}
