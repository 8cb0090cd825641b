/* parse_max.c - graphs as MAX prints them (str(graph) in MAX's Python API),
 * translated statement by statement into kiln's ops (parse_lex.h).
 *
 * MAX prints its MO dialect with `rmo.X` / `rmo.mo.X` op names, some names
 * of its own, properties in `[name = value : type]`, constant operands where
 * kiln has attributes, and shapes as `#mosh<ape[...]>`. parse.c reads such a
 * statement with MAX's syntax into its vectors (operands, attributes, types);
 * ir_max_rewrite turns it into the kiln op with kiln's operands and
 * attributes, and parse.c then builds it as any other node, with every check
 * kiln text gets. What it does per op:
 *   names      rmo.X, rmo.mo.X -> mo.X for every X kiln has; MAX's own names
 *              (the table below: mo.negative -> negate, reduce.add -> sum, ...)
 *   operands   constant operands become attributes: the permutation of
 *              transpose (-> permute {dims}), split's sizes, layer_norm's
 *              epsilon, a reduction's axis
 *   properties axis / name (and constant.external's align) pass on; align
 *              elsewhere and a CPU device are dropped;
 *              newShape is dropped after checking it is the result's shape;
 *              starts / stops / steps become slice_tensor's start / stop /
 *              step (a bound equal to the operand's dim plus k is k when k < 0,
 *              "to the end" otherwise)
 *              (band_part's bounds and exclude too); shape_to_tensor's shape
 *              (no operands) is a si64 constant when static, else kiln's
 *              shape_to_tensor of the first value defined before it whose
 *              type has exactly that shape (none: refused); cumsum's 0 / 1 flags are
 *              bools; mo.custom [symbol = "mo.X"] (MAX runs some of its ops
 *              as kernels named so) is kiln's mo.X
 *   implied    mo.cast's dtype is its result's; gelu_tanh is gelu {approximate
 *              = "tanh"}; mo.chain.create (it orders side effects, and kiln's
 *              graphs have none to order) is skipped
 * Anything else is refused by name ("unsupported MAX op 'rmo.foo'", or the
 * property's name) at its line:col; nothing is guessed.
 *
 * Assumes: the parser's vectors hold the statement as read; constant operands
 * are mo.constant nodes already built. Guarantees: on success the vectors
 * hold a kiln statement; on failure one error at a line:col. Constants that
 * became attributes leave the graph once it is read, unless something else
 * uses them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_lex.h"

typedef enum max_fix {
  FIX_NONE,       /* kiln's operands and attributes */
  FIX_SKIP,       /* nothing kiln needs */
  FIX_AXIS,       /* a reduction: [axis] or (x, axis constant) */
  FIX_GELU_TANH,  /* gelu {approximate = "tanh"} */
  FIX_PERM,       /* (x, permutation constant) -> permute {dims} */
  FIX_SPLIT,      /* (x, sizes constant) [axis] -> split {split_sizes, axis} */
  FIX_LAYER_NORM, /* (x, gamma, beta, epsilon constant) -> layer_norm {epsilon} */
  FIX_SHAPE,      /* [newShape]: the result's type says it */
  FIX_SLICE,      /* [starts, stops, steps] -> slice_tensor {start, stop, step} */
  FIX_SCAN,       /* cumsum [axis, exclusive = 0|1, reverse = 0|1] */
  FIX_BAND,       /* (x, num_lower, num_upper, exclude constants) -> band_part */
  FIX_SHAPE_TENSOR, /* [shape] -> constant, or shape_to_tensor of a value of that shape */
} max_fix;

struct max_op {
  const char *max;  /* the name after rmo.mo. / rmo. / mo. */
  const char *kiln; /* kiln's name without "mo."; NULL: the same as max */
  max_fix fix;
};

static const max_op MAX_OPS[] = {
    {"chain.create", NULL, FIX_SKIP},
    {"negative", "negate", FIX_NONE},
    {"reduce.add", "sum", FIX_AXIS},
    {"reduce.mul", "prod", FIX_AXIS},
    {"reduce.mean", "mean", FIX_AXIS},
    {"reduce.max", "max", FIX_AXIS},
    {"reduce.min", "min", FIX_AXIS},
    {"reduce.arg_max", "argmax", FIX_AXIS},
    {"reduce.arg_min", "argmin", FIX_AXIS},
    {"reduce.softmax", "softmax", FIX_AXIS},
    {"reduce.logsoftmax", "logsoftmax", FIX_AXIS},
    {"reduce.layer_norm", "layer_norm", FIX_LAYER_NORM},
    {"select", "where", FIX_NONE},
    {"and", "logical_and", FIX_NONE},
    {"or", "logical_or", FIX_NONE},
    {"xor", "logical_xor", FIX_NONE},
    {"not", "logical_not", FIX_NONE},
    {"gelu_tanh", "gelu", FIX_GELU_TANH},
    {"transpose", "permute", FIX_PERM},
    {"split", NULL, FIX_SPLIT},
    {"reshape", NULL, FIX_SHAPE},
    {"broadcast_to", NULL, FIX_SHAPE},
    {"slice", "slice_tensor", FIX_SLICE},
    {"cumsum", NULL, FIX_SCAN},
    {"linalg.band_part", "band_part", FIX_BAND},
    {"arg_nonzero", "nonzero", FIX_NONE},
    {"shape_to_tensor", NULL, FIX_SHAPE_TENSOR},
};
static const max_op SAME = {NULL, NULL, FIX_NONE}; /* rmo.X for kiln's X */

/* name without its prefix (rmo.mo., rmo. or mo.); *rmo when it was rmo. */
static const char *strip(const char *name, size_t len, size_t *rest, bool *rmo) {
  static const char *const pre[] = {"rmo.mo.", "rmo.", "mo."};
  for (int i = 0; i < 3; i++) {
    size_t k = strlen(pre[i]);
    if (len > k && memcmp(name, pre[i], k) == 0) {
      *rest = len - k;
      *rmo = i < 2;
      return name + k;
    }
  }
  return NULL;
}

const max_op *ir_max_op_find(const char *name, size_t len) {
  size_t n;
  bool rmo;
  const char *s = strip(name, len, &n, &rmo);
  if (!s) return NULL;
  for (size_t i = 0; i < sizeof MAX_OPS / sizeof MAX_OPS[0]; i++)
    if (lit_eq(s, n, MAX_OPS[i].max)) return &MAX_OPS[i];
  bool known = false;
  if (rmo) ir_op_lookup(s, n, -1000, &known);
  return known ? &SAME : NULL;
}

bool ir_max_kiln_form(const char *name, size_t len, int nin, const max_op **row) {
  if (nin != 2 || !(lit_eq(name, len, "mo.split") || lit_eq(name, len, "mo.transpose")))
    return false;
  *row = ir_max_op_find(name, len);
  return *row != NULL;
}

/* ---- the statement's vectors ---- */
static ir_value *operand(const parser *p, int i) { return ((ir_value **)p->uses.p)[i]; }
static size_t operand_at(const parser *p, int i) { return ((size_t *)p->use_at.p)[i]; }
static attr_at *attrs(const parser *p) { return p->attrs.p; }

static void drop_operand(parser *p, int i) {
  ir_node *def = operand(p, i)->def;
  ir_node **slot = def ? ir_lex_push(&p->absorbed, sizeof *slot) : NULL;
  if (slot) *slot = def; /* out of memory: the constant stays, unused */
  vec *vs[] = {&p->uses, &p->use_at, &p->in_types};
  size_t sz[] = {sizeof(ir_value *), sizeof(size_t), sizeof(ir_type)};
  for (int k = 0; k < 3; k++) {
    vec *v = vs[k];
    if ((size_t)i >= v->n) continue;
    char *b = v->p;
    memmove(b + (size_t)i * sz[k], b + (size_t)(i + 1) * sz[k], (v->n - (size_t)i - 1) * sz[k]);
    v->n--;
  }
}

static int add_attr(parser *p, size_t at, const ir_attr *a) {
  attr_at *slot = ir_lex_push(&p->attrs, sizeof *slot);
  if (!slot) return ir_lex_oom(p);
  slot->a = *a;
  slot->at = slot->vat = at;
  return 0;
}

static const attr_at *find_attr(const parser *p, const char *name) {
  for (size_t i = 0; i < p->attrs.n; i++)
    if (strcmp(attrs(p)[i].a.name, name) == 0) return &attrs(p)[i];
  return NULL;
}

/* ---- constant operands ---- */
/* The value of operand i when it is a mo.constant, else an error naming what. */
static const ir_dense *const_operand(parser *p, int i, const char *nm, int pl, const char *what) {
  const ir_value *v = operand(p, i);
  const ir_attr *a = v->def && v->def->op == IR_OP_CONSTANT ? ir_node_attr(v->def, "value") : NULL;
  if (!a || a->kind != IR_ATTR_DENSE) {
    ir_lex_error(p, operand_at(p, i), "%s of %.*s (operand %d) must be a mo.constant", what, pl,
                 nm, i);
    return NULL;
  }
  return &a->u.dense;
}

static bool dense_int(const ir_dense *d, int64_t k, int64_t *out) {
  if (d->dtype == IR_DT_SI64) {
    memcpy(out, (const char *)d->data + k * 8, 8);
  } else if (d->dtype == IR_DT_SI32) {
    int32_t v;
    memcpy(&v, (const char *)d->data + k * 4, 4);
    *out = v;
  } else {
    return false;
  }
  return true;
}

/* Operand i, an integer constant of rank <= 1, as an INTS (or, scalar, an
 * INT) attribute named name; the operand is then dropped. */
static int const_ints(parser *p, int i, const char *nm, int pl, const char *name, bool scalar) {
  const ir_dense *d = const_operand(p, i, nm, pl, name);
  if (!d) return -1;
  if (d->rank > 1 || (scalar && d->numel != 1) || d->numel > (1 << 20) ||
      (d->dtype != IR_DT_SI64 && d->dtype != IR_DT_SI32))
    return ir_lex_error(p, operand_at(p, i), "%s of %.*s must be %s of si64 or si32", name, pl,
                        nm, scalar ? "a scalar" : "a list");
  ir_attr a = {.name = name};
  if (scalar) {
    a.kind = IR_ATTR_INT;
    dense_int(d, 0, &a.u.i);
  } else {
    int64_t *v = ir_arena_alloc(p->g->arena, (size_t)(d->numel ? d->numel : 1) * sizeof *v);
    if (!v) return ir_lex_oom(p);
    for (int64_t k = 0; k < d->numel; k++) dense_int(d, k, &v[k]);
    a.kind = IR_ATTR_INTS;
    a.u.ints.n = (int)d->numel;
    a.u.ints.v = v;
  }
  size_t at = operand_at(p, i);
  drop_operand(p, i);
  return add_attr(p, at, &a);
}

/* Operand i, a scalar bool constant, as a BOOL attribute; then dropped. */
static int const_bool(parser *p, int i, const char *nm, int pl, const char *name) {
  const ir_dense *d = const_operand(p, i, nm, pl, name);
  if (!d) return -1;
  if (d->numel != 1 || d->dtype != IR_DT_BOOL)
    return ir_lex_error(p, operand_at(p, i), "%s of %.*s must be a scalar bool", name, pl, nm);
  ir_attr a = {.name = name, .kind = IR_ATTR_BOOL, .u.b = *(const unsigned char *)d->data != 0};
  size_t at = operand_at(p, i);
  drop_operand(p, i);
  return add_attr(p, at, &a);
}

/* Operand i, a scalar float constant, as a FLOAT attribute; then dropped. */
static int const_float(parser *p, int i, const char *nm, int pl, const char *name) {
  const ir_dense *d = const_operand(p, i, nm, pl, name);
  if (!d) return -1;
  ir_attr a = {.name = name, .kind = IR_ATTR_FLOAT};
  if (d->numel == 1 && d->dtype == IR_DT_F32) {
    float f;
    memcpy(&f, d->data, 4);
    a.u.f = f;
  } else if (d->numel == 1 && d->dtype == IR_DT_F64) {
    memcpy(&a.u.f, d->data, 8);
  } else {
    return ir_lex_error(p, operand_at(p, i), "%s of %.*s must be a scalar f32 or f64", name, pl,
                        nm);
  }
  size_t at = operand_at(p, i);
  drop_operand(p, i);
  return add_attr(p, at, &a);
}

/* ---- shapes (#mosh<ape[...]>) ---- */
/* The dims of property pa, read again from where its value is. */
static int ape_dims(parser *p, const attr_at *pa, const ir_dim **dims, int *rank, bool neg_ok) {
  size_t save = p->pos;
  p->pos = pa->vat;
  int rc = -1;
  if (!ir_lex_accept_lit(p, "#mosh") || !ir_lex_accept(p, '<') || !ir_lex_accept_lit(p, "ape")) {
    ir_lex_error(p, pa->vat, "%s must be a shape '#mosh<ape[...]>'", pa->a.name);
  } else if (ir_parse_dims(p, dims, rank, neg_ok) == 0 && ir_lex_expect(p, '>') == 0) {
    rc = 0;
  }
  p->pos = save;
  return rc;
}

/* newShape must be what the result's type says. */
static int check_shape(parser *p, const attr_at *pa, const char *nm, int pl) {
  const ir_dim *dims[IR_MAX_RANK];
  int rank = 0;
  if (ape_dims(p, pa, dims, &rank, false)) return -1;
  if (p->out_types.n != 1) return 0; /* parse.c reports the result count */
  const ir_type *t = p->out_types.p;
  bool same = t->rank == rank;
  for (int i = 0; same && i < rank; i++) same = ir_dim_equal(t->dims[i], dims[i]);
  if (!same)
    return ir_lex_error(p, pa->vat, "newShape of %.*s is not the shape of its result type", pl,
                        nm);
  return 0;
}

/* A bound of axis ax: a constant, or the axis' dim plus k (k when k < 0,
 * else INT64_MAX: "to the end"). */
static int slice_bound(parser *p, const attr_at *pa, const ir_dim *v, const ir_dim *dim, int ax,
                       int64_t *out) {
  int64_t c;
  if (ir_dim_is_const(v, &c)) {
    *out = c;
    return 0;
  }
  const ir_dim *k = ir_dim_sub(p->g->arena, v, dim);
  if (k && ir_dim_is_const(k, &c)) {
    *out = c < 0 ? c : INT64_MAX;
    return 0;
  }
  char buf[96];
  ir_dim_print(v, buf, sizeof buf);
  return ir_lex_error(p, pa->vat,
                      "%s[%d] = %s is neither a constant nor the operand's dim plus a constant",
                      pa->a.name, ax, buf);
}

static int slice(parser *p, const char *nm, int pl, size_t op_at) {
  static const char *const from[] = {"starts", "stops", "steps"};
  static const char *const to[] = {"start", "stop", "step"};
  if (p->uses.n != 1)
    return ir_lex_error(p, op_at, "%.*s takes 1 operand, got %zu", pl, nm, p->uses.n);
  const ir_type *t = &operand(p, 0)->type;
  for (int w = 0; w < 3; w++) {
    const attr_at *pa = find_attr(p, from[w]);
    if (!pa) return ir_lex_error(p, op_at, "%.*s needs property '%s'", pl, nm, from[w]);
    const ir_dim *dims[IR_MAX_RANK];
    int rank = 0;
    if (ape_dims(p, pa, dims, &rank, true)) return -1;
    if (rank != t->rank)
      return ir_lex_error(p, pa->vat, "%s of %.*s has %d entries but the operand has rank %d",
                          from[w], pl, nm, rank, t->rank);
    int64_t *v = ir_arena_alloc(p->g->arena, (size_t)(rank ? rank : 1) * sizeof *v);
    if (!v) return ir_lex_oom(p);
    for (int i = 0; i < rank; i++) {
      if (w == 2 ? !ir_dim_is_const(dims[i], &v[i])
                 : slice_bound(p, pa, dims[i], t->dims[i], i, &v[i]) != 0) {
        if (w == 2) ir_lex_error(p, pa->vat, "steps[%d] of %.*s must be a constant", i, pl, nm);
        return -1;
      }
    }
    ir_attr a = {.name = to[w], .kind = IR_ATTR_INTS, .u.ints = {rank, v}};
    if (add_attr(p, pa->vat, &a)) return -1;
  }
  return 0;
}

/* shape_to_tensor [shape]: MAX gives the shape as a property, kiln's op
 * reads a tensor's shape. A static shape is a si64 constant; a symbolic one
 * is the shape of the first value (inputs, then results in order) of
 * exactly that shape. Without such a value it is refused: kiln would need
 * the dims' symbols as data. */
static int shape_tensor(parser *p, const char *nm, int pl, size_t op_at, const char **kn) {
  const attr_at *pa = find_attr(p, "shape");
  if (!pa) {
    if (p->uses.n == 1) return 0; /* kiln's form: the shape of its operand */
    return ir_lex_error(p, op_at, "%.*s needs property 'shape'", pl, nm);
  }
  if (p->uses.n != 0)
    return ir_lex_error(p, op_at, "%.*s takes a shape property and no operands, got %zu", pl, nm,
                        p->uses.n);
  const ir_dim *dims[IR_MAX_RANK];
  int rank = 0;
  if (ape_dims(p, pa, dims, &rank, false)) return -1;
  size_t at = pa->vat, n = 0;
  const ir_type *rt = p->out_types.n == 1 ? p->out_types.p : NULL; /* else parse.c says */
  int64_t rl;
  if (rt && (rt->rank != 1 || !ir_dim_is_const(rt->dims[0], &rl) || rl != rank ||
             rt->dtype != IR_DT_SI64))
    return ir_lex_error(p, op_at, "%.*s of a rank-%d shape gives !mo.tensor<[%d], si64>, not "
                        "its declared result type", pl, nm, rank, rank);
  for (size_t i = 0; i < p->attrs.n; i++) /* drop shape */
    if (strcmp(attrs(p)[i].a.name, "shape") != 0) attrs(p)[n++] = attrs(p)[i];
  p->attrs.n = n;
  bool fixed = true;
  int64_t *v = ir_arena_alloc(p->g->arena, (size_t)(rank ? rank : 1) * sizeof *v);
  if (!v) return ir_lex_oom(p);
  for (int i = 0; i < rank; i++) fixed = fixed && ir_dim_is_const(dims[i], &v[i]);
  if (fixed) {
    ir_attr a = {.name = "value", .kind = IR_ATTR_DENSE};
    a.u.dense = (ir_dense){.dtype = IR_DT_SI64, .rank = 1, .shape = {rank}, .numel = rank,
                           .data = v};
    *kn = "constant";
    return add_attr(p, at, &a);
  }
  ir_graph *g = p->g;
  for (int k = 0; k < g->nvalues; k++) {
    ir_value *x = g->values[k];
    bool same = x && x->type.rank == rank;
    for (int i = 0; same && i < rank; i++) same = ir_dim_equal(x->type.dims[i], dims[i]);
    if (!same) continue;
    ir_value **u = ir_lex_push(&p->uses, sizeof *u);
    size_t *w = ir_lex_push(&p->use_at, sizeof *w);
    ir_type *t = ir_lex_push(&p->in_types, sizeof *t);
    if (!u || !w || !t) return ir_lex_oom(p);
    *u = x;
    *w = at;
    *t = x->type;
    return 0;
  }
  char buf[256] = "";
  size_t len = 0;
  for (int i = 0; i < rank && len < sizeof buf; i++) {
    if (i) len += (size_t)snprintf(buf + len, sizeof buf - len, ", ");
    if (len < sizeof buf) len += ir_dim_print(dims[i], buf + len, sizeof buf - len);
  }
  return ir_lex_error(p, at, "shape [%s] of %.*s is symbolic and no value before it has that "
                      "shape (kiln's shape_to_tensor reads the shape of a tensor)", buf, pl, nm);
}

/* ---- properties ---- */
/* Keep what kiln reads, drop what it need not, refuse MAX-only values. */
static int properties(parser *p, max_fix fix, const char *nm, int pl) {
  size_t n = 0;
  bool external = pl >= 17 && memcmp(nm + pl - 17, "constant.external", 17) == 0;
  for (size_t i = 0; i < p->attrs.n; i++) {
    attr_at pa = attrs(p)[i];
    const char *an = pa.a.name;
    bool raw = pa.a.kind == IR_ATTR_STRING && pa.a.u.s[0] == '#'; /* '"#..."' has no '#' first */
    if (raw && p->s[pa.vat] != '#') raw = false;
    if (strcmp(an, "align") == 0 && !external) continue;
    if (strcmp(an, "device") == 0 && raw) {
      if (strncmp(pa.a.u.s, "#M.device_ref<\"cpu\"", 19) != 0)
        return ir_lex_error(p, pa.vat, "device %s: kiln runs MAX graphs on the CPU", pa.a.u.s);
      continue;
    }
    if (fix == FIX_SHAPE && strcmp(an, "newShape") == 0) {
      if (check_shape(p, &pa, nm, pl)) return -1;
      continue;
    }
    if (fix == FIX_SLICE &&
        (strcmp(an, "starts") == 0 || strcmp(an, "stops") == 0 || strcmp(an, "steps") == 0)) {
      attrs(p)[n++] = pa; /* read by slice(), then dropped */
      continue;
    }
    if (fix == FIX_SHAPE_TENSOR && strcmp(an, "shape") == 0) {
      attrs(p)[n++] = pa; /* read by shape_tensor(), then dropped */
      continue;
    }
    if (raw)
      return ir_lex_error(p, pa.at, "property '%s' of %.*s is not supported", an, pl, nm);
    attrs(p)[n++] = pa;
  }
  p->attrs.n = n;
  return 0;
}

int ir_max_drop_absorbed(parser *p) {
  ir_graph *g = p->g;
  bool *used = calloc((size_t)g->nvalues + 1, sizeof *used);
  bool *drop = calloc((size_t)g->nnodes + 1, sizeof *drop);
  if (!used || !drop) {
    free(used);
    free(drop);
    return 0; /* they stay, unused */
  }
  for (int i = 0; i < g->nnodes; i++)
    for (int k = 0; k < g->nodes[i]->nin; k++) used[g->nodes[i]->in[k]->id] = true;
  for (int i = 0; i < g->noutputs; i++) used[g->outputs[i]->id] = true;
  for (size_t i = 0; i < p->absorbed.n; i++) {
    const ir_node *n = ((ir_node **)p->absorbed.p)[i];
    if (n->op == IR_OP_CONSTANT && !used[n->out[0]->id]) drop[n->id] = true;
  }
  for (int i = 0; i < g->nchecks; i++) drop[g->checks[i].node->id] = false;
  ir_graph_drop_nodes(g, drop);
  free(used);
  free(drop);
  return 0;
}

/* MAX runs some of its own ops as custom kernels named after them
 * (mo.custom [symbol = "mo.acos"]): kiln's op of that name. Any other MAX
 * custom kernel is refused. */
static int custom_builtin(parser *p, const char *nm, int pl, size_t op_at, const char **kn) {
  size_t n = 0;
  const char *sym = NULL;
  for (size_t i = 0; i < p->attrs.n; i++) {
    const ir_attr *a = &attrs(p)[i].a;
    if (strcmp(a->name, "symbol") == 0 && a->kind == IR_ATTR_STRING)
      sym = a->u.s;
    else
      attrs(p)[n++] = attrs(p)[i];
  }
  bool known = false;
  if (sym && strncmp(sym, "mo.", 3) == 0) ir_op_lookup(sym + 3, strlen(sym + 3), -1000, &known);
  if (!known)
    return ir_lex_error(p, op_at, "%.*s [symbol = \"%s\"]: MAX's custom kernels are not supported",
                        pl, nm, sym ? sym : "");
  p->attrs.n = n;
  *kn = sym + 3;
  return 0;
}

int ir_max_rewrite(parser *p, const max_op *row, const char *nm, size_t nlen, size_t op_at,
                   const char **kiln_name) {
  int pl = (int)(nlen > 64 ? 64 : nlen);
  size_t rest = 0;
  bool rmo = false;
  const char *base = strip(nm, nlen, &rest, &rmo);
  max_fix fix = row ? row->fix : FIX_NONE;
  const char *kn = row && row->kiln ? row->kiln : NULL;
  if (!kn) {
    kn = base ? ir_arena_strndup(p->g->arena, base, rest) : NULL;
    if (!kn) return ir_lex_oom(p);
  }
  *kiln_name = NULL;
  if (fix == FIX_SKIP) return 0;
  if (properties(p, fix, nm, pl)) return -1;
  int nin = (int)p->uses.n;
  switch (fix) {
  case FIX_AXIS:
    if (nin == 2 && !find_attr(p, "axis") && const_ints(p, 1, nm, pl, "axis", true)) return -1;
    break;
  case FIX_GELU_TANH: {
    ir_attr a = {.name = "approximate", .kind = IR_ATTR_STRING, .u.s = "tanh"};
    if (add_attr(p, op_at, &a)) return -1;
    break;
  }
  case FIX_PERM:
    if (nin != 2)
      return ir_lex_error(p, op_at, "%.*s takes 2 operands (x, permutation), got %d", pl, nm, nin);
    if (const_ints(p, 1, nm, pl, "dims", false)) return -1;
    break;
  case FIX_SPLIT:
    if (nin == 2 && const_ints(p, 1, nm, pl, "split_sizes", false)) return -1;
    break;
  case FIX_LAYER_NORM:
    if (nin == 4 && const_float(p, 3, nm, pl, "epsilon")) return -1;
    break;
  case FIX_SLICE: {
    if (slice(p, nm, pl, op_at)) return -1;
    size_t n = 0; /* drop starts / stops / steps */
    for (size_t i = 0; i < p->attrs.n; i++)
      if (strcmp(attrs(p)[i].a.name, "starts") && strcmp(attrs(p)[i].a.name, "stops") &&
          strcmp(attrs(p)[i].a.name, "steps"))
        attrs(p)[n++] = attrs(p)[i];
    p->attrs.n = n;
    break;
  }
  case FIX_SHAPE_TENSOR:
    if (shape_tensor(p, nm, pl, op_at, &kn)) return -1;
    break;
  case FIX_SCAN: /* MAX prints the flags as integers */
    for (size_t i = 0; i < p->attrs.n; i++) {
      ir_attr *a = &attrs(p)[i].a;
      if ((strcmp(a->name, "exclusive") == 0 || strcmp(a->name, "reverse") == 0) &&
          a->kind == IR_ATTR_INT) {
        if (a->u.i != 0 && a->u.i != 1)
          return ir_lex_error(p, attrs(p)[i].vat, "%s of %.*s must be 0 or 1", a->name, pl, nm);
        a->kind = IR_ATTR_BOOL;
        a->u.b = a->u.i != 0;
      }
    }
    break;
  case FIX_BAND: /* operands last to first, so that each index still holds */
    if (nin == 4 && (const_bool(p, 3, nm, pl, "exclude") ||
                     const_ints(p, 2, nm, pl, "num_upper", true) ||
                     const_ints(p, 1, nm, pl, "num_lower", true)))
      return -1;
    break;
  default:
    break;
  }
  if (strcmp(kn, "custom") == 0 && custom_builtin(p, nm, pl, op_at, &kn)) return -1;
  if (strcmp(kn, "cast") == 0 && !find_attr(p, "dtype")) { /* MAX's cast: to its result's dtype */
    if (p->out_types.n != 1)
      return ir_lex_error(p, op_at, "%.*s needs one result type", pl, nm);
    ir_attr a = {.name = "dtype", .kind = IR_ATTR_DTYPE,
                 .u.dtype = ((const ir_type *)p->out_types.p)->dtype};
    if (add_attr(p, op_at, &a)) return -1;
  }
  *kiln_name = kn;
  return 0;
}
