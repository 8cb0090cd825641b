/* infer.c - the shape and dtype rule of every op (ops.def), and the run-time
 * shape checks they leave behind.
 *
 * ir_infer_node computes the result types of one node from its operand types
 * and attributes into temporaries, then, per result:
 *   - declared rank -1 (built through the API without a type): the inferred
 *     type is stored in n->out[i]->type;
 *   - any other rank (declared in text, given to the builder, or inferred by
 *     an earlier run): it must equal the inferred type (ir_type_equal), else
 *     "result 0 of mo.add is declared as !mo.tensor<[5], f32> but is
 *     !mo.tensor<[4], f32>". The declared type is left as it is (it is equal).
 * So running it twice is harmless, and ir_graph_verify only has to call it.
 * reshape, broadcast_to, constant and constant.external take the declared
 * result type as their target: for them a result of rank -1 is an error
 * (transfer_to, of reshape's class, infers its type from `device`).
 *
 * Assumes: operands are values whose types are set (rank >= 0), with dims in
 * g's arena. A rule reads an attribute by name; its kind, whether it is
 * required and its default come from the op's schema in ops.def ("mo.concat
 * requires attribute 'axis'", "attribute 'axis' of mo.softmax must be an
 * integer"); the rule checks the value. Unknown attributes are rejected by
 * ir_graph_verify.
 * Guarantees: every dim it creates lives in g->arena; on error nothing of the
 * node changes except that checks recorded before the error stay in g->checks
 * (ir_graph_verify rebuilds them on every run anyway).
 *
 * Dtypes: before the class rule, the op's table row (ops.def: dt0, dt1,
 * same) is checked ("operand 0 of mo.exp has dtype si32 but mo.exp takes f32
 * or f64"). "Float" is f16 / bf16 / f32 / f64, "int" si8 to si64 and ui8 to
 * ui32 (the narrow ones computed wider: ir_node_computes_narrow; indices
 * si32 / si64 only), and bool; ui64 and the float8 kinds are storage-only:
 * they are accepted only by ops whose row says ANY: the data movement ops
 * (reshape, transpose, permute, broadcast_to, concat, split, slice_tensor,
 * squeeze, unsqueeze, gather's input), cast (its rule checks castability) and
 * the sources. The shape rules stay code here, one per class.
 *
 * Symbolic dims: a fact the verifier cannot decide (a symbolic dim broadcast
 * against a static one, reshape element counts, matmul K, slice bounds) is
 * recorded with ir_graph_add_check (verify.c); a fact that is provably false (the
 * difference of the two sides is a constant of the wrong sign) is an error.
 * Two different non-static dims never broadcast (we could not name the
 * result's dim).
 *
 * slice_tensor: static dims follow Python's slice.indices exactly (negative
 * indices count from the end, then clamp); with a negative step, start =
 * INT64_MIN means the last element and stop = INT64_MAX means "past the
 * first". Symbolic dims are not clamped: start / stop become expressions
 * (v < 0 -> d + v, INT64_MIN start -> 0, INT64_MAX stop -> d), the length is
 * (stop - start) ceildiv step, and checks make sure 0 <= start <= stop <= d.
 * A negative step on a symbolic dim is an error (not supported).
 *
 * Diagnostics are located at n->loc. A node built through the API has loc
 * 0:0; its messages are prefixed with its position: "op #3: operand 1 of
 * mo.add has ...". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buffer.h"
#include "infer_impl.h"

/* ---- context, messages ---- */

typedef ir_infer_ctx ctx;

static int vfail(ctx *c, const char *fmt, va_list ap) {
  char buf[480];
  vsnprintf(buf, sizeof buf, fmt, ap);
  if (c->n->loc.line > 0) return ir_diag_set(c->d, c->n->loc, "%s", buf);
  return ir_diag_set(c->d, c->n->loc, "op #%d: %s", c->n->id, buf);
}

static int fail(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, fmt, ap);
  va_end(ap);
  return -1;
}

static int oom(ctx *c) { return fail(c, "out of memory"); }

/* A dim constructor returned NULL: int64 overflow in dim arithmetic (or, rarely,
 * out of memory). */
static int dim_fail(ctx *c) {
  return fail(c, "mo.%s: dim arithmetic overflows int64 (or out of memory)", c->op);
}

/* A bounded string builder: appends never overflow, the text stays terminated. */
typedef struct sbuf {
  char *p;
  size_t cap, len;
} sbuf;

static void sb_puts(sbuf *b, const char *s) {
  size_t n = strlen(s);
  if (b->len < b->cap) {
    size_t room = b->cap - b->len - 1;
    memcpy(b->p + b->len, s, n < room ? n : room);
    b->p[b->len + (n < room ? n : room)] = 0;
  }
  b->len += n;
}

static void sb_dim(sbuf *b, const ir_dim *d) {
  char tmp[160];
  ir_dim_print(d, tmp, sizeof tmp);
  sb_puts(b, tmp);
}

/* "[batch, 4]" */
static const char *shape_str(char *buf, size_t cap, const ir_dim *const *dims, int rank) {
  sbuf b = {buf, cap, 0};
  buf[0] = 0;
  sb_puts(&b, "[");
  for (int i = 0; i < rank; i++) {
    if (i) sb_puts(&b, ", ");
    sb_dim(&b, dims[i]);
  }
  sb_puts(&b, "]");
  return buf;
}

static const char *dim_str(char *buf, size_t cap, const ir_dim *d) {
  ir_dim_print(d, buf, cap);
  return buf;
}

static const char *type_str(char *buf, size_t cap, const ir_type *t) {
  ir_type_print(t, buf, cap);
  return buf;
}

/* ---- dtypes ---- */

static const ir_type *opt(ctx *c, int k) { return &c->n->in[k]->type; }

/* Operand k's dtype must be in set (IR_DTS_*). */
static int need_dtype(ctx *c, int k, unsigned set) {
  ir_dtype t = opt(c, k)->dtype;
  if (ir_dtype_in_set(t, set)) return 0;
  if (set & IR_DTS_NAMED_INDICES)
    return fail(c, "operand %d of mo.%s has dtype %s but indices must be %s", k, c->op,
                ir_dtype_name(t), ir_dtype_set_name(set));
  return fail(c, "operand %d of mo.%s has dtype %s but mo.%s takes %s", k, c->op, ir_dtype_name(t),
              c->op, ir_dtype_set_name(set));
}

/* Operands first..last share operand `first`'s dtype. */
static int need_same_dtype(ctx *c, int first, int last) {
  for (int k = first + 1; k <= last; k++)
    if (opt(c, k)->dtype != opt(c, first)->dtype)
      return fail(c, "operand %d of mo.%s has dtype %s but operand %d has %s", k, c->op,
                  ir_dtype_name(opt(c, k)->dtype), first, ir_dtype_name(opt(c, first)->dtype));
  return 0;
}

/* The op's dtype rule from its table row (dts, same), operand by operand:
 * at operand `same` first the dtype it and the operands after it share, then
 * each operand's set. Runs before the class rule. */
static int check_dtypes(ctx *c, const ir_op_info *info) {
  for (int k = 0; k < c->n->nin; k++) {
    if (k == info->same && need_same_dtype(c, k, c->n->nin - 1) != 0) return -1;
    if (k < 2 && need_dtype(c, k, info->dts[k]) != 0) return -1;
  }
  return 0;
}

/* ---- attributes ---- */

static const ir_attr *attr_find(const ir_node *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (n->attrs[i].name && strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

/* Attribute `name` of the node, else its default; kind, requiredness and
 * default come from the op's schema (ops.def), and an INT satisfies a FLOAT.
 * NULL with *rc = -1 on an error (missing and required, wrong kind). */
static const ir_attr *attr_get(ctx *c, const char *name, int *rc) {
  static const char *const words[] = {
      [IR_ATTR_INT] = "an integer",          [IR_ATTR_FLOAT] = "a float",
      [IR_ATTR_BOOL] = "a boolean",          [IR_ATTR_STRING] = "a string",
      [IR_ATTR_INTS] = "a list of integers", [IR_ATTR_STRINGS] = "a list of strings",
      [IR_ATTR_DTYPE] = "a dtype",           [IR_ATTR_DENSE] = "a dense array",
  };
  *rc = -1;
  const ir_attr_spec *spec = ir_op_attr_spec(c->n->op, name);
  if (!spec) {
    fail(c, "mo.%s reads attribute '%s', which its schema (ops.def) lacks", c->op, name);
    return NULL;
  }
  ir_attr_kind kind = spec->a.kind;
  const ir_attr *a = attr_find(c->n, name);
  if (!a) {
    if (spec->required) {
      fail(c, "mo.%s requires attribute '%s'", c->op, name);
      return NULL;
    }
    *rc = 0;
    return &spec->a;
  }
  if (a->kind == kind || (kind == IR_ATTR_FLOAT && a->kind == IR_ATTR_INT)) {
    *rc = 0;
    return a;
  }
  fail(c, "attribute '%s' of mo.%s must be %s", name, c->op, words[kind]);
  return NULL;
}

static int attr_int(ctx *c, const char *name, int64_t *out) {
  int rc;
  const ir_attr *a = attr_get(c, name, &rc);
  *out = a ? a->u.i : 0;
  return rc;
}

static int attr_float(ctx *c, const char *name, double *out) {
  int rc;
  const ir_attr *a = attr_get(c, name, &rc);
  *out = !a ? 0 : a->kind == IR_ATTR_INT ? (double)a->u.i : a->u.f;
  return rc;
}

/* A string attribute; a node's string without text reads as the default. */
static int attr_string(ctx *c, const char *name, const char **out) {
  int rc;
  const ir_attr *a = attr_get(c, name, &rc);
  *out = NULL;
  if (!a) return rc;
  *out = a->u.s ? a->u.s : ir_op_attr_spec(c->n->op, name)->a.u.s;
  return 0;
}

static int attr_ints(ctx *c, const char *name, int *nv, const int64_t **v) {
  int rc;
  const ir_attr *a = attr_get(c, name, &rc);
  *nv = 0;
  *v = NULL;
  if (!a) return rc;
  if (a->u.ints.n < 0 || (a->u.ints.n > 0 && !a->u.ints.v))
    return fail(c, "attribute '%s' of mo.%s is malformed", name, c->op);
  *nv = a->u.ints.n;
  *v = a->u.ints.v;
  return 0;
}

/* Normalize a possibly negative axis against rank (valid: [-rank, rank-1]). */
static int norm_axis(ctx *c, const char *what, int64_t axis, int rank, int *out) {
  *out = 0;
  if (axis < -(int64_t)rank || axis >= rank)
    return fail(c, "mo.%s: %s %" PRId64 " is out of range for rank %d", c->op, what, axis, rank);
  *out = (int)(axis < 0 ? axis + rank : axis);
  return 0;
}

/* ---- results and dims ---- */

/* Enough of a type to read it safely: known dtype, rank in range, dims present. */
static bool type_ok(const ir_type *t) {
  if (t->rank < 0 || t->rank > IR_MAX_RANK || (t->rank > 0 && !t->dims) ||
      (unsigned)t->dtype >= IR_DT_COUNT)
    return false;
  for (int i = 0; i < t->rank; i++)
    if (!t->dims[i]) return false;
  return true;
}

/* r = {dt, rank, copy of dims, device}; dims may be NULL when rank == 0. */
static int res_set(ctx *c, ir_type *r, ir_dtype dt, int rank, const ir_dim *const *dims,
                   ir_device dev) {
  if (rank > IR_MAX_RANK)
    return fail(c, "mo.%s: the result would have rank %d, more than %d", c->op, rank, IR_MAX_RANK);
  r->dtype = dt;
  r->rank = rank;
  r->device = dev;
  r->dims = NULL;
  if (rank > 0 && !(r->dims = ir_arena_alloc(c->g->arena, (size_t)rank * sizeof *r->dims)))
    return oom(c);
  for (int i = 0; i < rank; i++) r->dims[i] = dims[i];
  return 0;
}

static const ir_dim *cst(ctx *c, int64_t v) { return ir_dim_const(c->g->arena, v); }

static bool is_const(const ir_dim *d, int64_t *v) { return ir_dim_is_const(d, v); }

/* Require lhs == rhs (kind EQ) or lhs >= rhs (kind GE): nothing to do when
 * lhs - rhs is a constant that satisfies it, an error with the check's own
 * message when it is a constant that does not, a run-time check otherwise. */
static int need(ctx *c, ir_check_kind kind, const ir_dim *lhs, const ir_dim *rhs, const char *fmt,
                ...) __attribute__((format(printf, 5, 6)));
static int need(ctx *c, ir_check_kind kind, const ir_dim *lhs, const ir_dim *rhs, const char *fmt,
                ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const ir_dim *diff = ir_dim_sub(c->g->arena, lhs, rhs);
  if (!diff) return dim_fail(c);
  int64_t v;
  if (is_const(diff, &v)) {
    bool ok = kind == IR_CHECK_EQ ? v == 0 : v >= 0;
    return ok ? 0 : fail(c, "%s", what);
  }
  if (ir_graph_add_check(c->g, kind, lhs, rhs, c->n, "%s", what) != 0) return oom(c);
  return 0;
}

/* ---- broadcasting ---- */

/* The broadcast of the operands seen so far: per axis the dim and where it
 * came from (operand, axis in that operand), for messages. */
typedef struct bshape {
  int rank;
  const ir_dim *d[IR_MAX_RANK];
  int src[IR_MAX_RANK], srcaxis[IR_MAX_RANK];
} bshape;

static void bs_init(bshape *b, int k, const ir_dim *const *dims, int rank) {
  b->rank = rank;
  for (int i = 0; i < rank; i++) {
    b->d[i] = dims[i];
    b->src[i] = k;
    b->srcaxis[i] = i;
  }
}

/* Broadcast operand k (dims[rank]) into acc. `label` is "shape" or "batch
 * shape" for the message. */
static int bs_step(ctx *c, bshape *acc, int k, const ir_dim *const *dims, int rank,
                   const char *label) {
  bshape out;
  out.rank = acc->rank > rank ? acc->rank : rank;
  for (int i = 0; i < out.rank; i++) {
    int ia = i - (out.rank - acc->rank), ib = i - (out.rank - rank);
    if (ia < 0 || ib < 0) {
      out.d[i] = ia < 0 ? dims[ib] : acc->d[ia];
      out.src[i] = ia < 0 ? k : acc->src[ia];
      out.srcaxis[i] = ia < 0 ? ib : acc->srcaxis[ia];
      continue;
    }
    const ir_dim *a = acc->d[ia], *b = dims[ib];
    int64_t va = 0, vb = 0;
    bool sa = is_const(a, &va), sb = is_const(b, &vb);
    bool take_b;
    char ds[160];
    if (ir_dim_equal(a, b) || (sb && vb == 1)) {
      take_b = false;
    } else if (sa && va == 1) {
      take_b = true;
    } else if (sa && !sb) {
      if (need(c, IR_CHECK_EQ, b, a,
               "operand %d axis %d of mo.%s (%s) must equal %" PRId64 " to broadcast", k, ib, c->op,
               dim_str(ds, sizeof ds, b), va) != 0)
        return -1;
      take_b = false;
    } else if (sb && !sa) {
      if (need(c, IR_CHECK_EQ, a, b,
               "operand %d axis %d of mo.%s (%s) must equal %" PRId64 " to broadcast", acc->src[ia],
               acc->srcaxis[ia], c->op, dim_str(ds, sizeof ds, a), vb) != 0)
        return -1;
      take_b = true;
    } else {
      char s1[256], s2[256];
      return fail(c, "operand %d of mo.%s has %s %s which does not broadcast with %s", k, c->op,
                  label, shape_str(s1, sizeof s1, dims, rank),
                  shape_str(s2, sizeof s2, acc->d, acc->rank));
    }
    out.d[i] = take_b ? b : a;
    out.src[i] = take_b ? k : acc->src[ia];
    out.srcaxis[i] = take_b ? ib : acc->srcaxis[ia];
  }
  *acc = out;
  return 0;
}

/* Broadcast operands first..last (their whole shapes) into r's dims. */
static int bcast_operands(ctx *c, int first, int last, ir_type *r, ir_dtype dt) {
  bshape acc;
  bs_init(&acc, first, opt(c, first)->dims, opt(c, first)->rank);
  for (int k = first + 1; k <= last; k++)
    if (bs_step(c, &acc, k, opt(c, k)->dims, opt(c, k)->rank, "shape") != 0) return -1;
  return res_set(c, r, dt, acc.rank, acc.d, opt(c, first)->device);
}

/* ---- elementwise ---- */

static int infer_unary(ctx *c, ir_type *r, bool to_bool) {
  if (c->n->op == IR_OP_GELU) {
    const char *s;
    if (attr_string(c, "approximate", &s) != 0) return -1;
    if (strcmp(s, "none") != 0 && strcmp(s, "tanh") != 0 && strcmp(s, "quick") != 0)
      return fail(c,
                  "attribute 'approximate' of mo.gelu must be \"none\", \"tanh\" or \"quick\", "
                  "not \"%s\"",
                  s);
  }
  const ir_type *t = opt(c, 0);
  return res_set(c, r, to_bool ? IR_DT_BOOL : t->dtype, t->rank, t->dims, t->device);
}

/* div of integers is true division into f64 (ops.def) */
static int infer_binary(ctx *c, ir_type *r, bool to_bool) {
  ir_dtype dt = opt(c, 0)->dtype;
  if (c->n->op == IR_OP_DIV && ir_dtype_is_int(dt)) dt = IR_DT_F64;
  return bcast_operands(c, 0, 1, r, to_bool ? IR_DT_BOOL : dt);
}

static int infer_where(ctx *c, ir_type *r) {
  return bcast_operands(c, 0, 2, r, opt(c, 1)->dtype);
}

static int infer_cast(ctx *c, ir_type *r) {
  int rc;
  const ir_attr *a = attr_get(c, "dtype", &rc);
  if (!a) return rc;
  const ir_type *t = opt(c, 0);
  if ((unsigned)a->u.dtype >= IR_DT_COUNT)
    return fail(c, "attribute 'dtype' of mo.cast is not a dtype");
  if (!ir_dtype_is_castable(t->dtype))
    return fail(c, "mo.cast cannot convert from %s", ir_dtype_name(t->dtype));
  if (!ir_dtype_is_castable(a->u.dtype))
    return fail(c, "mo.cast cannot convert to %s", ir_dtype_name(a->u.dtype));
  return res_set(c, r, a->u.dtype, t->rank, t->dims, t->device);
}

/* ---- sources ---- */

/* The declared result type, the target of reshape / broadcast_to / constants. */
static int declared(ctx *c, const ir_type **out) {
  const ir_type *t = &c->n->out[0]->type;
  if (t->rank < 0) return fail(c, "mo.%s needs a declared result type (it is the target)", c->op);
  if (!type_ok(t)) return fail(c, "result 0 of mo.%s has a malformed type", c->op);
  for (int i = 0; i < t->rank; i++) {
    int64_t v;
    if (is_const(t->dims[i], &v) && v < 0)
      return fail(c, "result 0 of mo.%s has negative dim %" PRId64 " on axis %d", c->op, v, i);
  }
  *out = t;
  return 0;
}

static int infer_constant(ctx *c, ir_type *r) {
  int rc;
  const ir_attr *a = attr_get(c, "value", &rc);
  if (!a) return rc;
  const ir_type *t;
  if (declared(c, &t) != 0) return -1;
  char ts[256];
  int64_t numel = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t v;
    if (!is_const(t->dims[i], &v))
      return fail(c, "mo.constant: result type %s must be static", type_str(ts, sizeof ts, t));
    if (__builtin_mul_overflow(numel, v, &numel))
      return fail(c, "mo.constant: element count of %s overflows", type_str(ts, sizeof ts, t));
  }
  const ir_dense *v = &a->u.dense;
  /* a one-element value fills the whole type (a splat; ops.def) */
  bool splat = v->dtype == t->dtype && v->numel == 1;
  bool same = splat || (v->dtype == t->dtype && v->rank == t->rank && v->numel == numel);
  for (int i = 0; same && !splat && i < t->rank; i++) {
    int64_t dv;
    is_const(t->dims[i], &dv);
    same = v->shape[i] == dv;
  }
  if (!same) {
    char vs[256];
    sbuf b = {vs, sizeof vs, 0};
    sb_puts(&b, "tensor<");
    for (int i = 0; i < v->rank && i < IR_MAX_RANK; i++) {
      char num[32];
      snprintf(num, sizeof num, "%" PRId64 "x", v->shape[i]);
      sb_puts(&b, num);
    }
    sb_puts(&b, ir_dtype_name(v->dtype));
    sb_puts(&b, ">");
    return fail(c, "mo.constant: value is %s but the result is declared as %s", vs,
                type_str(ts, sizeof ts, t));
  }
  if (numel > 0 && !v->data) return fail(c, "mo.constant: value has no data");
  return res_set(c, r, t->dtype, t->rank, t->dims, t->device);
}

static int infer_constant_external(ctx *c, ir_type *r) {
  int rc;
  const ir_attr *a = attr_get(c, "name", &rc);
  if (!a) return rc;
  if (!a->u.s || !a->u.s[0]) return fail(c, "attribute 'name' of mo.constant.external is empty");
  int64_t align;
  bool placeholder;
  if (attr_int(c, "align", &align) != 0) return -1;
  if (align < 1 || align > ((int64_t)1 << 30) || (align & (align - 1)) != 0)
    return fail(c, "mo.constant.external: align %" PRId64 " must be a power of two in [1, 2^30]",
                align);
  if (ir_infer_attr_bool(c, "is_placeholder", &placeholder) != 0) return -1;
  const ir_type *t;
  if (declared(c, &t) != 0) return -1;
  return res_set(c, r, t->dtype, t->rank, t->dims, t->device);
}

/* ---- matmul, reductions, normalizations ---- */

/* matmul (and matmul.integer's shapes): a 1-D operand is a matrix of one
 * row (a) or one column (b) whose added dim the result drops (seed 002). */
int ir_infer_matmul_shape(ctx *c, ir_type *r) {
  const ir_type *ta = opt(c, 0), *tb_ = opt(c, 1);
  for (int k = 0; k < 2; k++)
    if (opt(c, k)->rank < 1)
      return fail(c, "operand %d of mo.%s has rank 0 but mo.%s needs rank >= 1", k, c->op,
                  c->op);
  /* kiln.transpose_b (fold_transpose.c): operand 1 is [..., N, K] */
  bool tb = ir_node_attr_int(c->n, "kiln.transpose_b", 0) != 0;
  if (tb && tb_->rank < 2)
    return fail(c, "mo.matmul: kiln.transpose_b needs operand 1 of rank >= 2");
  const ir_dim *one = cst(c, 1);
  if (!one) return dim_fail(c);
  /* the operands as matrices: a 1-D a is [1, K], a 1-D b [K, 1] */
  const ir_dim *ad[IR_MAX_RANK + 1] = {0}, *bd[IR_MAX_RANK + 1] = {0};
  int ra = ta->rank, rb = tb_->rank;
  for (int i = 0; i < ra; i++) ad[i] = ta->dims[i];
  for (int i = 0; i < rb; i++) bd[i] = tb_->dims[i];
  if (ra == 1) ad[1] = ad[0], ad[0] = one, ra = 2;
  if (rb == 1) bd[1] = one, rb = 2;
  const ir_dim *ka = ad[ra - 1], *kb = bd[rb - (tb ? 1 : 2)];
  int64_t va, vb;
  char s1[160], s2[160];
  if (is_const(ka, &va) && is_const(kb, &vb)) {
    if (va != vb)
      return fail(c, "mo.%s: operand 0 has K = %" PRId64 " but operand 1 has K = %" PRId64, c->op,
                  va, vb);
  } else if (!ir_dim_equal(ka, kb) &&
             need(c, IR_CHECK_EQ, ka, kb,
                  "mo.%s: K of operand 0 (%s) must equal K of "
                  "operand 1 (%s)",
                  c->op, dim_str(s1, sizeof s1, ka), dim_str(s2, sizeof s2, kb)) != 0) {
    return -1;
  }
  bshape acc;
  bs_init(&acc, 0, ad, ra - 2);
  if (bs_step(c, &acc, 1, bd, rb - 2, "batch shape") != 0) return -1;
  if (acc.rank + 2 > IR_MAX_RANK) return fail(c, "mo.%s: result rank is too large", c->op);
  if (ta->rank > 1) acc.d[acc.rank++] = ad[ra - 2];
  if (tb_->rank > 1) acc.d[acc.rank++] = bd[rb - (tb ? 2 : 1)];
  /* kiln.wide_result (half_gemm.c): half operands, an f32 result */
  ir_dtype dt = ta->dtype;
  if (c->n->op == IR_OP_MATMUL && ir_node_attr_int(c->n, "kiln.wide_result", 0)) {
    if (!ir_dtype_is_half(dt) || tb_->dtype != dt)
      return fail(c, "mo.matmul: kiln.wide_result needs f16 or bf16 operands of one dtype, "
                  "got %s and %s", ir_dtype_name(dt), ir_dtype_name(tb_->dtype));
    dt = IR_DT_F32;
  }
  return res_set(c, r, dt, acc.rank, acc.d, ta->device);
}

/* Reductions and softmax: one `axis`; reductions keep it as 1.
 * force: the result dtype, or -1 for the operand's. */
static int infer_axis_op(ctx *c, ir_type *r, bool keep_as_one, int force) {
  const ir_type *t = opt(c, 0);
  int64_t axis;
  int ax;
  if (attr_int(c, "axis", &axis) != 0 || norm_axis(c, "axis", axis, t->rank, &ax) != 0)
    return -1;
  if (res_set(c, r, force >= 0 ? (ir_dtype)force : t->dtype, t->rank, t->dims, t->device) != 0)
    return -1;
  if (keep_as_one && !(r->dims[ax] = cst(c, 1))) return dim_fail(c);
  return 0;
}

/* cumsum: the operand's type; axis in range, exclusive and reverse booleans. */
static int infer_scan(ctx *c, ir_type *r) {
  int rc;
  for (int k = 0; k < 2; k++)
    if (!attr_get(c, k ? "reverse" : "exclusive", &rc)) return rc;
  return infer_axis_op(c, r, false, -1);
}

/* band_part: the operand's type; rank >= 2; the bounds integers (negative:
 * none), exclude a boolean. */
static int infer_band_part(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int64_t lo, up;
  int rc;
  if (attr_int(c, "num_lower", &lo) != 0 || attr_int(c, "num_upper", &up) != 0) return -1;
  if (!attr_get(c, "exclude", &rc)) return rc;
  if (t->rank < 2)
    return fail(c, "operand 0 of mo.band_part has rank %d but needs rank >= 2", t->rank);
  return res_set(c, r, t->dtype, t->rank, t->dims, t->device);
}

/* ---- vision (pad, pools, conv2d) ---- */

/* A list attribute of 1 or 2 entries (an empty list: dflt) as [h, w], each
 * at least lo. */
static int attr_pair(ctx *c, const char *name, int64_t dflt, int64_t lo, int64_t out[2]) {
  int nv;
  const int64_t *v;
  if (attr_ints(c, name, &nv, &v) != 0) return -1;
  if (nv == 0) {
    out[0] = out[1] = dflt;
    return 0;
  }
  if (nv > 2) return fail(c, "attribute '%s' of mo.%s has %d entries but takes 1 or 2", name, c->op, nv);
  out[0] = v[0];
  out[1] = v[nv - 1];
  for (int i = 0; i < 2; i++)
    if (out[i] < lo)
      return fail(c, "attribute '%s' of mo.%s has %" PRId64 " but needs values >= %" PRId64, name,
                  c->op, out[i], lo);
  return 0;
}

/* padding as [top, bottom, left, right]: empty, [p], [ph, pw] (both sides;
 * pools only, two_ok) or four values, each >= 0. */
static int attr_padding(ctx *c, bool two_ok, int64_t p[4]) {
  int nv;
  const int64_t *v;
  if (attr_ints(c, "padding", &nv, &v) != 0) return -1;
  if (nv == 0) {
    p[0] = p[1] = p[2] = p[3] = 0;
  } else if (two_ok && (nv == 1 || nv == 2)) {
    p[0] = p[1] = v[0];
    p[2] = p[3] = v[nv - 1];
  } else if (nv == 4) {
    for (int i = 0; i < 4; i++) p[i] = v[i];
  } else {
    return fail(c, "attribute 'padding' of mo.%s has %d entries but takes %s4", c->op, nv,
                two_ok ? "1, 2 or " : "");
  }
  for (int i = 0; i < 4; i++)
    if (p[i] < 0) return fail(c, "attribute 'padding' of mo.%s has %" PRId64 " but needs values >= 0", c->op, p[i]);
  return 0;
}

/* The output length of a window of k taps dilated by dil, stepping by
 * stride over an axis of dim d padded with lo and hi (ops.def: pools and
 * conv2d). The padded axis must hold one window (a run-time check when d
 * is symbolic). ceil_mode: rounded up, dropping a window that starts at or
 * past d + lo; on a symbolic d that is refused where the drop depends on d. */
static const ir_dim *window_out(ctx *c, const char *axis, const ir_dim *d, int64_t k, int64_t stride,
                                int64_t dil, int64_t lo, int64_t hi, bool ceil_mode) {
  ir_arena *a = c->g->arena;
  int64_t eff = dil * (k - 1) + 1;
  const ir_dim *span = ir_dim_sub(a, ir_dim_add(a, d, cst(c, lo + hi)), cst(c, eff));
  if (!span) return dim_fail(c), NULL;
  char db[160];
  if (need(c, IR_CHECK_GE, span, cst(c, 0),
           "mo.%s: axis %s of operand 0 is %s, padded by %" PRId64 " it is shorter than the "
           "window (%" PRId64 ")", c->op, axis, dim_str(db, sizeof db, d), lo + hi, eff) != 0)
    return NULL;
  const ir_dim *q = ceil_mode ? ir_dim_ceildiv(a, span, stride, NULL) : ir_dim_floordiv(a, span, stride, NULL);
  const ir_dim *out = q ? ir_dim_add(a, q, cst(c, 1)) : NULL;
  if (!out) return dim_fail(c), NULL;
  if (!ceil_mode || stride == 1) return out;
  int64_t dv;
  if (is_const(d, &dv)) {
    int64_t o;
    is_const(out, &o);
    return (o - 1) * stride >= dv + lo ? cst(c, o - 1) : out;
  }
  /* (out - 1) * stride = span + r with r in [0, stride); the last window
   * starts at or past d + lo exactly when r >= eff - hi */
  if (eff - hi > stride - 1) return out;
  if (eff - hi <= 0) return ir_dim_sub(a, out, cst(c, 1));
  fail(c, "mo.%s: ceil_mode on the symbolic axis %s (%s) needs a static dim here (whether the last "
          "window is dropped depends on its value)", c->op, axis, dim_str(db, sizeof db, d));
  return NULL;
}

static int infer_pad(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int nv;
  const int64_t *v;
  const char *mode;
  double value;
  if (attr_ints(c, "paddings", &nv, &v) != 0 || attr_string(c, "mode", &mode) != 0 ||
      attr_float(c, "value", &value) != 0)
    return -1;
  if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
    return fail(c, "attribute 'mode' of mo.pad is \"%s\" but must be \"constant\", \"reflect\" or "
                   "\"edge\"", mode);
  if (nv != 2 * t->rank)
    return fail(c, "attribute 'paddings' of mo.pad has %d entries but operand 0 has rank %d (needs "
                   "%d: before and after per axis)", nv, t->rank, 2 * t->rank);
  const ir_dim *dims[IR_MAX_RANK];
  for (int i = 0; i < t->rank; i++) {
    dims[i] = ir_dim_add(c->g->arena, t->dims[i], cst(c, v[2 * i] + v[2 * i + 1]));
    if (!dims[i]) return dim_fail(c);
    char db[160];
    if (need(c, IR_CHECK_GE, dims[i], cst(c, 0),
             "mo.pad: axis %d of operand 0 is %s, cropped by %" PRId64 " it would be negative", i,
             dim_str(db, sizeof db, t->dims[i]), -(v[2 * i] + v[2 * i + 1])) != 0)
      return -1;
  }
  return res_set(c, r, t->dtype, t->rank, dims, t->device);
}

static int infer_pool(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int nk, rc;
  const int64_t *k;
  int64_t st[2], dil[2], p[4];
  if (attr_ints(c, "kernel_size", &nk, &k) != 0 || attr_pair(c, "stride", 1, 1, st) != 0 ||
      attr_pair(c, "dilation", 1, 1, dil) != 0 || attr_padding(c, true, p) != 0)
    return -1;
  const ir_attr *cm = attr_get(c, "ceil_mode", &rc);
  if (!cm) return rc;
  if (c->n->op == IR_OP_AVG_POOL2D && !attr_get(c, "count_boundary", &rc)) return rc;
  if (nk != 2 || k[0] < 1 || k[1] < 1)
    return fail(c, "attribute 'kernel_size' of mo.%s must be two values >= 1", c->op);
  if (t->rank != 4)
    return fail(c, "operand 0 of mo.%s has rank %d but needs rank 4 (NHWC)", c->op, t->rank);
  const ir_dim *dims[4] = {t->dims[0], NULL, NULL, t->dims[3]};
  dims[1] = window_out(c, "1 (H)", t->dims[1], k[0], st[0], dil[0], p[0], p[1], cm->u.b);
  if (!dims[1]) return -1;
  dims[2] = window_out(c, "2 (W)", t->dims[2], k[1], st[1], dil[1], p[2], p[3], cm->u.b);
  if (!dims[2]) return -1;
  return res_set(c, r, t->dtype, 4, dims, t->device);
}

/* conv2d_transpose (ops.def): Ho = (H - 1) * sh + dh * (R - 1) + 1 - top -
 * bottom + ph, at least 0 (a run-time check for a symbolic H). */
static int infer_conv_t(ctx *c, ir_type *r) {
  const ir_type *x = opt(c, 0), *w = opt(c, 1);
  int64_t st[2], dil[2], p[4], op[2], k[2], f;
  if (attr_pair(c, "stride", 1, 1, st) != 0 || attr_pair(c, "dilation", 1, 1, dil) != 0 ||
      attr_padding(c, false, p) != 0 || attr_pair(c, "output_paddings", 0, 0, op) != 0)
    return -1;
  if (x->rank != 4) return fail(c, "operand 0 of mo.%s has rank %d but needs rank 4 (NHWC)", c->op, x->rank);
  if (w->rank != 4) return fail(c, "operand 1 of mo.%s has rank %d but needs rank 4 (RSFC)", c->op, w->rank);
  if (!is_const(w->dims[0], &k[0]) || !is_const(w->dims[1], &k[1]) || !is_const(w->dims[2], &f) ||
      k[0] < 1 || k[1] < 1)
    return fail(c, "operand 1 of mo.%s (the filter) needs static R, S >= 1 and a static F", c->op);
  char db[160];
  if (need(c, IR_CHECK_EQ, x->dims[3], w->dims[3],
           "mo.%s: C = %s (axis 3 of operand 0) must equal axis 3 of operand 1", c->op,
           dim_str(db, sizeof db, x->dims[3])) != 0)
    return -1;
  if (c->n->nin == 3) {
    const ir_type *b = opt(c, 2);
    int64_t bf;
    if (b->rank != 1 || !is_const(b->dims[0], &bf) || bf != f)
      return fail(c, "operand 2 of mo.%s (the bias) must have shape [%" PRId64 "]", c->op, f);
  }
  const ir_dim *dims[4] = {x->dims[0], NULL, NULL, w->dims[2]};
  for (int i = 0; i < 2; i++) {
    ir_arena *a = c->g->arena;
    const ir_dim *d = ir_dim_mul(a, ir_dim_sub(a, x->dims[1 + i], cst(c, 1)), cst(c, st[i]));
    d = d ? ir_dim_add(a, d, cst(c, dil[i] * (k[i] - 1) + 1 - p[2 * i] - p[2 * i + 1] + op[i])) : NULL;
    if (!d) return dim_fail(c);
    if (need(c, IR_CHECK_GE, d, cst(c, 0), "mo.%s: axis %d of the result would be negative (%s)",
             c->op, 1 + i, dim_str(db, sizeof db, d)) != 0)
      return -1;
    dims[1 + i] = d;
  }
  return res_set(c, r, x->dtype, 4, dims, x->device);
}

/* An attribute list of n values (one value: all n; empty: dflt), each >= lo. */
static int attr_list(ctx *c, const char *name, int n, int64_t dflt, int64_t lo, int64_t *out) {
  int nv;
  const int64_t *v;
  if (attr_ints(c, name, &nv, &v) != 0) return -1;
  if (nv != 0 && nv != 1 && nv != n)
    return fail(c, "attribute '%s' of mo.%s has %d entries but takes 1 or %d", name, c->op, nv, n);
  for (int i = 0; i < n; i++) {
    out[i] = nv == 0 ? dflt : v[nv == 1 ? 0 : i];
    if (out[i] < lo)
      return fail(c, "attribute '%s' of mo.%s has %" PRId64 " but needs values >= %" PRId64, name,
                  c->op, out[i], lo);
  }
  return 0;
}

/* conv3d (ops.def): conv2d's rule with a depth axis. */
static int infer_conv3d(ctx *c, ir_type *r) {
  const ir_type *x = opt(c, 0), *w = opt(c, 1);
  int64_t st[3], dil[3], p[6], groups, k[3], f, cin;
  if (attr_list(c, "stride", 3, 1, 1, st) != 0 || attr_list(c, "dilation", 3, 1, 1, dil) != 0 ||
      attr_int(c, "groups", &groups) != 0)
    return -1;
  int np;
  const int64_t *pv;
  if (attr_ints(c, "padding", &np, &pv) != 0) return -1;
  if (np != 0 && np != 6)
    return fail(c, "attribute 'padding' of mo.conv3d has %d entries but takes 6", np);
  for (int i = 0; i < 6; i++) {
    p[i] = np ? pv[i] : 0;
    if (p[i] < 0) return fail(c, "attribute 'padding' of mo.conv3d has %" PRId64 " but needs values >= 0", p[i]);
  }
  if (groups < 1) return fail(c, "attribute 'groups' of mo.conv3d is %" PRId64 " but must be >= 1", groups);
  if (x->rank != 5) return fail(c, "operand 0 of mo.conv3d has rank %d but needs rank 5 (NDHWC)", x->rank);
  if (w->rank != 5) return fail(c, "operand 1 of mo.conv3d has rank %d but needs rank 5 (QRSCF)", w->rank);
  for (int i = 0; i < 3; i++)
    if (!is_const(w->dims[i], &k[i]) || k[i] < 1)
      return fail(c, "operand 1 of mo.conv3d (the filter) needs static Q, R, S >= 1 and F");
  if (!is_const(w->dims[4], &f)) return fail(c, "operand 1 of mo.conv3d (the filter) needs a static F");
  if (f % groups != 0)
    return fail(c, "mo.conv3d: F = %" PRId64 " (axis 4 of operand 1) is not divisible by groups = %" PRId64, f, groups);
  if (is_const(x->dims[4], &cin) ? cin % groups != 0 : groups != 1)
    return fail(c, "mo.conv3d: C (axis 4 of operand 0) must be static and divisible by groups = %" PRId64, groups);
  char db[160];
  if (need(c, IR_CHECK_EQ, x->dims[4], ir_dim_mul(c->g->arena, w->dims[3], cst(c, groups)),
           "mo.conv3d: C = %s (axis 4 of operand 0) must be groups (%" PRId64 ") times axis 3 of "
           "operand 1", dim_str(db, sizeof db, x->dims[4]), groups) != 0)
    return -1;
  if (c->n->nin == 3) {
    const ir_type *b = opt(c, 2);
    int64_t bf;
    if (b->rank != 1 || !is_const(b->dims[0], &bf) || bf != f)
      return fail(c, "operand 2 of mo.conv3d (the bias) must have shape [%" PRId64 "]", f);
  }
  static const char *const axes[3] = {"1 (D)", "2 (H)", "3 (W)"};
  const ir_dim *dims[5] = {x->dims[0], NULL, NULL, NULL, w->dims[4]};
  for (int i = 0; i < 3; i++)
    if (!(dims[1 + i] = window_out(c, axes[i], x->dims[1 + i], k[i], st[i], dil[i], p[2 * i], p[2 * i + 1], false)))
      return -1;
  return res_set(c, r, x->dtype, 5, dims, x->device);
}

static int infer_conv(ctx *c, ir_type *r) {
  if (c->n->op == IR_OP_CONV2D_TRANSPOSE) return infer_conv_t(c, r);
  if (c->n->op == IR_OP_CONV3D) return infer_conv3d(c, r);
  const ir_type *x = opt(c, 0), *w = opt(c, 1);
  int64_t st[2], dil[2], p[4], groups;
  if (attr_pair(c, "stride", 1, 1, st) != 0 || attr_pair(c, "dilation", 1, 1, dil) != 0 ||
      attr_padding(c, false, p) != 0 || attr_int(c, "groups", &groups) != 0)
    return -1;
  if (groups < 1) return fail(c, "attribute 'groups' of mo.conv2d is %" PRId64 " but must be >= 1", groups);
  if (x->rank != 4) return fail(c, "operand 0 of mo.conv2d has rank %d but needs rank 4 (NHWC)", x->rank);
  if (w->rank != 4) return fail(c, "operand 1 of mo.conv2d has rank %d but needs rank 4 (RSCF)", w->rank);
  int64_t kh, kw, f, cin;
  if (!is_const(w->dims[0], &kh) || !is_const(w->dims[1], &kw) || !is_const(w->dims[3], &f))
    return fail(c, "operand 1 of mo.conv2d (the filter) needs static R, S and F dims");
  if (kh < 1 || kw < 1) return fail(c, "operand 1 of mo.conv2d has an empty window (%" PRId64 "x%" PRId64 ")", kh, kw);
  if (f % groups != 0)
    return fail(c, "mo.conv2d: F = %" PRId64 " (axis 3 of operand 1) is not divisible by groups = %" PRId64, f, groups);
  char db[160];
  const ir_dim *cg = w->dims[2];
  if (is_const(x->dims[3], &cin)) {
    if (cin % groups != 0)
      return fail(c, "mo.conv2d: C = %" PRId64 " (axis 3 of operand 0) is not divisible by groups = %" PRId64, cin, groups);
  } else if (groups != 1) {
    return fail(c, "mo.conv2d: C (axis 3 of operand 0) must be static when groups > 1");
  }
  if (need(c, IR_CHECK_EQ, x->dims[3], ir_dim_mul(c->g->arena, cg, cst(c, groups)),
           "mo.conv2d: C = %s (axis 3 of operand 0) must be groups (%" PRId64 ") times axis 2 of "
           "operand 1", dim_str(db, sizeof db, x->dims[3]), groups) != 0)
    return -1;
  if (c->n->nin == 3) {
    const ir_type *b = opt(c, 2);
    int64_t bf;
    if (b->rank != 1 || !is_const(b->dims[0], &bf) || bf != f)
      return fail(c, "operand 2 of mo.conv2d (the bias) must have shape [%" PRId64 "]", f);
  }
  const ir_dim *dims[4] = {x->dims[0], NULL, NULL, w->dims[3]};
  dims[1] = window_out(c, "1 (H)", x->dims[1], kh, st[0], dil[0], p[0], p[1], false);
  if (!dims[1]) return -1;
  dims[2] = window_out(c, "2 (W)", x->dims[2], kw, st[1], dil[1], p[2], p[3], false);
  if (!dims[2]) return -1;
  return res_set(c, r, x->dtype, 4, dims, x->device);
}

static int infer_layer_norm(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  if (t->rank < 1) return fail(c, "operand 0 of mo.layer_norm has rank 0 but needs rank >= 1");
  const ir_dim *last = t->dims[t->rank - 1];
  char s1[160], s2[160];
  for (int k = 1; k <= 2; k++) {
    const ir_type *p = opt(c, k);
    if (p->rank != 1)
      return fail(c, "operand %d of mo.layer_norm has rank %d but must have rank 1", k, p->rank);
    int64_t vp, vl;
    if (ir_dim_equal(p->dims[0], last)) continue;
    if (is_const(p->dims[0], &vp) && is_const(last, &vl))
      return fail(c,
                  "operand %d of mo.layer_norm has shape [%" PRId64 "] but the last dim of "
                  "operand 0 is %" PRId64,
                  k, vp, vl);
    if (need(c, IR_CHECK_EQ, p->dims[0], last,
             "operand %d axis 0 of mo.layer_norm (%s) must "
             "equal the last dim of operand 0 (%s)",
             k, dim_str(s1, sizeof s1, p->dims[0]), dim_str(s2, sizeof s2, last)) != 0)
      return -1;
  }
  double eps;
  if (attr_float(c, "epsilon", &eps) != 0) return -1;
  if (!(eps > 0)) return fail(c, "mo.layer_norm: epsilon must be > 0, not %g", eps);
  return res_set(c, r, t->dtype, t->rank, t->dims, t->device);
}

/* ---- data movement ---- */

/* Product of dims as a canonical dim (NULL on out-of-memory). */
static const ir_dim *dims_product(ctx *c, const ir_dim *const *dims, int rank) {
  const ir_dim *p = cst(c, 1);
  for (int i = 0; p && i < rank; i++) p = ir_dim_mul(c->g->arena, p, dims[i]);
  return p;
}

/* Static product into *n; false when a dim is symbolic; *overflow on overflow. */
static bool static_product(const ir_dim *const *dims, int rank, int64_t *n, bool *overflow) {
  int64_t acc = 1;
  *overflow = false;
  for (int i = 0; i < rank; i++) {
    int64_t v;
    if (!is_const(dims[i], &v)) return false;
    if (__builtin_mul_overflow(acc, v, &acc)) *overflow = true;
  }
  *n = acc;
  return true;
}

/* mo.transfer_to: the operand's type on the device the attribute names. */
static int infer_transfer(ctx *c, ir_type *r) {
  const ir_type *in = opt(c, 0);
  const ir_attr *a = ir_node_attr(c->n, "device");
  if (!a) return fail(c, "mo.transfer_to requires attribute 'device' (\"cpu:0\", \"gpu:0\")");
  ir_device dev;
  if (a->kind != IR_ATTR_STRING || !ir_device_parse(a->u.s, &dev))
    return fail(c, "attribute 'device' of mo.transfer_to must be a string \"cpu\", \"cpu:N\", "
                   "\"gpu\" or \"gpu:N\"");
  return res_set(c, r, in->dtype, in->rank, in->dims, dev);
}

int ir_infer_data_operand(ctx *c, int k, const char *what) {
  const ir_value *v = c->n->in[k];
  const char *why = NULL;
  const ir_node *p = ir_value_read_blocker(v, &why);
  if (!p) return 0;
  const ir_op_info *pi = ir_op_get(p->op);
  return fail(c, "mo.%s: %s (%%%s) sets dims, so kiln computes it before the graph runs, but "
              "it depends on mo.%s (%%%s), %s", c->op, what, v->name, pi ? pi->name : "?",
              p->nout > 0 ? p->out[0]->name : "?", why);
}

static int infer_reshape(ctx *c, ir_type *r) {
  const ir_type *in = opt(c, 0), *t;
  if (declared(c, &t) != 0) return -1;
  if (c->n->nin == 2) { /* the target from data (ops.def) */
    const ir_type *sh = opt(c, 1);
    int64_t len;
    if (sh->rank != 1 || !is_const(sh->dims[0], &len) || len != t->rank)
      return fail(c, "mo.reshape: the shape operand must be 1-D with %d elements (the result's "
                  "rank)", t->rank);
    if (ir_infer_data_operand(c, 1, "the shape operand") != 0) return -1;
  }
  int64_t ni = 0, no = 0;
  bool ovi, ovo;
  bool si = static_product(in->dims, in->rank, &ni, &ovi);
  bool so = static_product(t->dims, t->rank, &no, &ovo);
  if (ovi || ovo) return fail(c, "mo.reshape: element count overflows");
  if (si && so) {
    if (ni != no)
      return fail(c, "mo.reshape: cannot reshape %" PRId64 " elements into %" PRId64, ni, no);
  } else {
    const ir_dim *pi = dims_product(c, in->dims, in->rank), *po = dims_product(c, t->dims, t->rank);
    if (!pi || !po) return dim_fail(c);
    char s1[200], s2[200];
    if (need(c, IR_CHECK_EQ, pi, po,
             "mo.reshape: the operand's %s elements must equal the "
             "result's %s",
             dim_str(s1, sizeof s1, pi), dim_str(s2, sizeof s2, po)) != 0)
      return -1;
  }
  return res_set(c, r, in->dtype, t->rank, t->dims, in->device);
}

/* broadcast_to {bidirectional}: the result is numpy's broadcast of operand
 * 0's shape and the shape operand's values (ONNX Expand). Only what can
 * never broadcast is refused here; the dims are checked when the data is
 * read (ir/shape.c bind_from_data), since either side may be the 1. */
static int infer_broadcast_bidir(ctx *c, ir_type *r, const ir_type *in, const ir_type *t) {
  if (c->n->nin != 2)
    return fail(c, "mo.broadcast_to: bidirectional needs the shape operand");
  const ir_type *sh = opt(c, 1);
  char s1[256], s2[256];
  int64_t len;
  int want = in->rank;
  if (sh->rank == 1 && is_const(sh->dims[0], &len) && len > want) want = (int)len;
  if (sh->rank != 1 || !is_const(sh->dims[0], &len) || t->rank != want)
    return fail(c, "mo.broadcast_to: with bidirectional the shape operand must be 1-D of static "
                "length and the result's rank the larger of it and operand 0's rank (%d)",
                in->rank);
  if (ir_infer_data_operand(c, 1, "the shape operand") != 0) return -1;
  for (int i = 0; i < in->rank; i++) {
    const ir_dim *a = in->dims[i], *b = t->dims[i + t->rank - in->rank];
    int64_t va, vb;
    if (is_const(a, &va) && is_const(b, &vb) && va != vb && va != 1)
      return fail(c, "operand 0 of mo.broadcast_to has shape %s which does not broadcast to %s",
                  shape_str(s1, sizeof s1, in->dims, in->rank),
                  shape_str(s2, sizeof s2, t->dims, t->rank));
  }
  return res_set(c, r, in->dtype, t->rank, t->dims, in->device);
}

static int infer_broadcast_to(ctx *c, ir_type *r) {
  const ir_type *in = opt(c, 0), *t;
  if (declared(c, &t) != 0) return -1;
  bool bidir;
  if (ir_infer_attr_bool(c, "bidirectional", &bidir) != 0) return -1;
  if (bidir) return infer_broadcast_bidir(c, r, in, t);
  char s1[256], s2[256];
  bool data = c->n->nin == 2; /* the target from data (ops.def) */
  if (data) {
    const ir_type *sh = opt(c, 1);
    int64_t len;
    if (sh->rank != 1 || !is_const(sh->dims[0], &len) || len != t->rank)
      return fail(c, "mo.broadcast_to: the shape operand must be 1-D with %d elements (the "
                  "result's rank)", t->rank);
    if (ir_infer_data_operand(c, 1, "the shape operand") != 0) return -1;
  }
  if (in->rank > t->rank)
    return fail(c, "operand 0 of mo.broadcast_to has rank %d but the target %s has rank %d",
                in->rank, shape_str(s2, sizeof s2, t->dims, t->rank), t->rank);
  for (int i = 0; i < in->rank; i++) {
    const ir_dim *a = in->dims[i], *b = t->dims[i + t->rank - in->rank];
    int64_t va, vb;
    bool sa = is_const(a, &va), sb = is_const(b, &vb);
    if (ir_dim_equal(a, b) || (sa && va == 1)) continue;
    if (sa != sb || (data && !sa)) {
      if (need(c, IR_CHECK_EQ, a, b, "operand 0 axis %d of mo.broadcast_to (%s) must equal %s", i,
               dim_str(s1, sizeof s1, a), dim_str(s2, sizeof s2, b)) != 0)
        return -1;
      continue;
    }
    return fail(c, "operand 0 of mo.broadcast_to has shape %s which does not broadcast to %s",
                shape_str(s1, sizeof s1, in->dims, in->rank),
                shape_str(s2, sizeof s2, t->dims, t->rank));
  }
  return res_set(c, r, in->dtype, t->rank, t->dims, in->device);
}

static int infer_transpose(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int64_t a1, a2;
  int x, y;
  if (attr_int(c, "axis_1", &a1) != 0 || attr_int(c, "axis_2", &a2) != 0 ||
      norm_axis(c, "axis_1", a1, t->rank, &x) != 0 || norm_axis(c, "axis_2", a2, t->rank, &y) != 0)
    return -1;
  if (res_set(c, r, t->dtype, t->rank, t->dims, t->device) != 0) return -1;
  r->dims[x] = t->dims[y];
  r->dims[y] = t->dims[x];
  return 0;
}

static int infer_permute(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int nv;
  const int64_t *v;
  if (attr_ints(c, "dims", &nv, &v) != 0) return -1;
  if (nv != t->rank)
    return fail(c, "mo.permute: dims has %d entries but the operand has rank %d", nv, t->rank);
  const ir_dim *d[IR_MAX_RANK];
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < nv; i++) {
    int ax;
    if (norm_axis(c, "dims entry", v[i], t->rank, &ax) != 0) return -1;
    if (seen[ax]) return fail(c, "mo.permute: axis %d appears twice in dims", ax);
    seen[ax] = true;
    d[i] = t->dims[ax];
  }
  return res_set(c, r, t->dtype, t->rank, d, t->device);
}

static int infer_concat(ctx *c, ir_type *r) {
  const ir_type *t0 = opt(c, 0);
  int64_t axis;
  int ax;
  if (attr_int(c, "axis", &axis) != 0 || norm_axis(c, "axis", axis, t0->rank, &ax) != 0)
    return -1;
  const ir_dim *d[IR_MAX_RANK];
  for (int i = 0; i < t0->rank; i++) d[i] = t0->dims[i];
  char s1[160], s2[160];
  for (int k = 1; k < c->n->nin; k++) {
    const ir_type *t = opt(c, k);
    if (t->rank != t0->rank)
      return fail(c, "operand %d of mo.concat has rank %d but operand 0 has rank %d", k, t->rank,
                  t0->rank);
    for (int i = 0; i < t->rank; i++) {
      if (i == ax || ir_dim_equal(t->dims[i], t0->dims[i])) continue;
      int64_t va, vb;
      if (is_const(t->dims[i], &va) && is_const(t0->dims[i], &vb))
        return fail(c,
                    "operand %d of mo.concat has %" PRId64 " on axis %d but operand 0 has %" PRId64,
                    k, va, i, vb);
      if (need(c, IR_CHECK_EQ, t->dims[i], t0->dims[i],
               "operand %d axis %d of mo.concat (%s) "
               "must equal operand 0's (%s)",
               k, i, dim_str(s1, sizeof s1, t->dims[i]), dim_str(s2, sizeof s2, t0->dims[i])) != 0)
        return -1;
    }
    if (!(d[ax] = ir_dim_add(c->g->arena, d[ax], t->dims[ax]))) return dim_fail(c);
  }
  return res_set(c, r, t0->dtype, t0->rank, d, t0->device);
}

/* split fills all results itself. A size of -1 (or every size, when
 * split_sizes is empty) is the declared result's dim along the axis. */
static int infer_split(ctx *c, ir_type *res) {
  const ir_type *t = opt(c, 0);
  int nv;
  const int64_t *v;
  int64_t axis;
  int ax;
  if (attr_ints(c, "split_sizes", &nv, &v) != 0 || attr_int(c, "axis", &axis) != 0 ||
      norm_axis(c, "axis", axis, t->rank, &ax) != 0)
    return -1;
  if (nv > 0 && nv != c->n->nout)
    return fail(c, "mo.split has %d results but split_sizes has %d entries", c->n->nout, nv);
  const ir_dim *sum = cst(c, 0);
  if (!sum) return dim_fail(c);
  bool symbolic = false;
  for (int i = 0; i < c->n->nout; i++) {
    int64_t want = nv > 0 ? v[i] : -1;
    if (want < -1)
      return fail(c, "mo.split: split_sizes[%d] = %" PRId64 " is negative (-1: the declared size)",
                  i, want);
    const ir_dim *d;
    if (want >= 0) {
      d = cst(c, want);
    } else {
      const ir_type *decl = &c->n->out[i]->type;
      if (decl->rank < 0)
        return fail(c,
                    "mo.split: result %d has no declared type to take its size from "
                    "(give split_sizes[%d])",
                    i, i);
      if (decl->rank != t->rank)
        return fail(c, "mo.split: result %d is declared with rank %d but the operand has rank %d",
                    i, decl->rank, t->rank);
      if (!type_ok(decl)) return fail(c, "result %d of mo.split has a malformed type", i);
      d = decl->dims[ax];
      int64_t dv;
      if (!is_const(d, &dv))
        symbolic = true;
      else if (dv < 0)
        return fail(c, "result %d of mo.split has negative dim %" PRId64 " on axis %d", i, dv, ax);
    }
    if (!d || !(sum = ir_dim_add(c->g->arena, sum, d))) return dim_fail(c);
    if (res_set(c, &res[i], t->dtype, t->rank, t->dims, t->device) != 0) return -1;
    res[i].dims[ax] = d;
  }
  int64_t dv, sv;
  char s1[160], s2[160];
  if (is_const(t->dims[ax], &dv) && is_const(sum, &sv)) {
    if (dv != sv)
      return fail(c, "mo.split: split_sizes sum to %" PRId64 " but axis %d has size %" PRId64, sv,
                  ax, dv);
    return 0;
  }
  if (need(c, IR_CHECK_EQ, t->dims[ax], sum,
           "mo.split: axis %d (%s) must equal the sum of %s, %s", ax,
           dim_str(s1, sizeof s1, t->dims[ax]), symbolic ? "the sizes" : "split_sizes",
           dim_str(s2, sizeof s2, sum)) != 0)
    return -1;
  return 0;
}

/* Python's slice.indices length for a static dim n. */
static int64_t slice_static_len(int64_t n, int64_t start, int64_t stop, int64_t step) {
  if (step > 0) {
    if (start < 0) start = start + n < 0 ? 0 : start + n;
    if (start > n) start = n;
    if (stop < 0) stop = stop + n < 0 ? 0 : stop + n;
    if (stop > n) stop = n;
    return stop > start ? (stop - start - 1) / step + 1 : 0;
  }
  if (start == INT64_MIN)
    start = n - 1;
  else if (start < 0)
    start = start + n < 0 ? -1 : start + n;
  else if (start >= n)
    start = n - 1;
  if (stop == INT64_MAX)
    stop = -1;
  else if (stop < 0)
    stop = stop + n < 0 ? -1 : stop + n;
  else if (stop >= n)
    stop = n - 1;
  /* step is negative; -(step + 1) avoids negating INT64_MIN */
  return start > stop ? (int64_t)((uint64_t)(start - stop - 1) / ((uint64_t) - (step + 1) + 1)) + 1
                      : 0;
}

/* One symbolic axis: length (stop - start) ceildiv step, plus range checks. */
static int slice_symbolic(ctx *c, int ax, const ir_dim *d, int64_t start, int64_t stop,
                          int64_t step, const ir_dim **out) {
  ir_arena *a = c->g->arena;
  char ds[160];
  dim_str(ds, sizeof ds, d);
  if (step < 0)
    return fail(c, "mo.slice_tensor: negative step on symbolic dim is not supported (axis %d, %s)",
                ax, ds);
  if (stop == INT64_MIN) { /* before any index: empty, as in Python */
    if (!(*out = cst(c, 0))) return dim_fail(c);
    return 0;
  }
  const ir_dim *lo, *hi, *k;
  if (start == INT64_MIN || start == 0) {
    lo = cst(c, 0);
  } else if (start > 0) {
    lo = cst(c, start);
  } else {
    const ir_dim *off = cst(c, start);
    if (!(k = cst(c, -start)) || !off) return dim_fail(c);
    if (need(c, IR_CHECK_GE, d, k,
             "mo.slice_tensor: axis %d (%s) must be >= %" PRId64 " for start %" PRId64, ax, ds,
             -start, start) != 0)
      return -1;
    lo = ir_dim_add(a, d, off);
  }
  if (stop == INT64_MAX) {
    hi = d;
  } else if (stop >= 0) {
    if (!(hi = cst(c, stop))) return dim_fail(c);
    if (need(c, IR_CHECK_GE, d, hi,
             "mo.slice_tensor: axis %d (%s) must be >= %" PRId64 " for stop %" PRId64, ax, ds, stop,
             stop) != 0)
      return -1;
  } else {
    const ir_dim *off = cst(c, stop);
    if (!(k = cst(c, -stop)) || !off) return dim_fail(c);
    if (need(c, IR_CHECK_GE, d, k,
             "mo.slice_tensor: axis %d (%s) must be >= %" PRId64 " for stop %" PRId64, ax, ds,
             -stop, stop) != 0)
      return -1;
    hi = ir_dim_add(a, d, off);
  }
  if (!lo || !hi) return dim_fail(c);
  char s1[160], s2[160];
  if (need(c, IR_CHECK_GE, hi, lo, "mo.slice_tensor: axis %d stop (%s) must be >= start (%s)", ax,
           dim_str(s1, sizeof s1, hi), dim_str(s2, sizeof s2, lo)) != 0)
    return -1;
  const ir_dim *len = ir_dim_sub(a, hi, lo);
  if (len && step > 1) len = ir_dim_ceildiv(a, len, step, NULL);
  if (!len) return dim_fail(c);
  *out = len;
  return 0;
}

static int infer_slice(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int n0, n1, n2;
  const int64_t *start, *stop, *step;
  if (attr_ints(c, "start", &n0, &start) != 0 || attr_ints(c, "stop", &n1, &stop) != 0 ||
      attr_ints(c, "step", &n2, &step) != 0)
    return -1;
  if (n0 != n1 || n1 != n2)
    return fail(c,
                "mo.slice_tensor: start, stop and step have %d, %d and %d entries (they must "
                "be equal)",
                n0, n1, n2);
  if (n0 > t->rank)
    return fail(c, "mo.slice_tensor: %d axes are sliced but the operand has rank %d", n0, t->rank);
  const ir_dim *d[IR_MAX_RANK];
  for (int i = 0; i < t->rank; i++) d[i] = t->dims[i];
  for (int i = 0; i < n0; i++) {
    if (step[i] == 0) return fail(c, "mo.slice_tensor: step of axis %d is 0", i);
    int64_t dv;
    if (is_const(t->dims[i], &dv)) {
      if (!(d[i] = cst(c, slice_static_len(dv, start[i], stop[i], step[i])))) return dim_fail(c);
    } else if (slice_symbolic(c, i, t->dims[i], start[i], stop[i], step[i], &d[i]) != 0) {
      return -1;
    }
  }
  return res_set(c, r, t->dtype, t->rank, d, t->device);
}

static int infer_squeeze(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int64_t axis;
  int ax;
  if (attr_int(c, "axis", &axis) != 0 || norm_axis(c, "axis", axis, t->rank, &ax) != 0)
    return -1;
  int64_t v;
  char s1[160];
  if (is_const(t->dims[ax], &v)) {
    if (v != 1) return fail(c, "mo.squeeze: axis %d has size %" PRId64 ", not 1", ax, v);
  } else {
    const ir_dim *one = cst(c, 1);
    if (!one) return dim_fail(c);
    if (need(c, IR_CHECK_EQ, t->dims[ax], one, "mo.squeeze: axis %d (%s) must be 1", ax,
             dim_str(s1, sizeof s1, t->dims[ax])) != 0)
      return -1;
  }
  const ir_dim *d[IR_MAX_RANK];
  for (int i = 0, j = 0; i < t->rank; i++)
    if (i != ax) d[j++] = t->dims[i];
  return res_set(c, r, t->dtype, t->rank - 1, d, t->device);
}

static int infer_unsqueeze(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0);
  int64_t axis;
  int ax;
  if (attr_int(c, "axis", &axis) != 0 || norm_axis(c, "axis", axis, t->rank + 1, &ax) != 0)
    return -1;
  if (t->rank + 1 > IR_MAX_RANK)
    return fail(c, "mo.unsqueeze: the result would have rank %d, more than %d", t->rank + 1,
                IR_MAX_RANK);
  const ir_dim *d[IR_MAX_RANK];
  for (int i = 0, j = 0; i <= t->rank; i++) d[i] = i == ax ? cst(c, 1) : t->dims[j++];
  if (!d[ax]) return dim_fail(c);
  return res_set(c, r, t->dtype, t->rank + 1, d, t->device);
}

static int infer_gather(ctx *c, ir_type *r) {
  const ir_type *t = opt(c, 0), *idx = opt(c, 1);
  int64_t axis;
  int ax;
  if (attr_int(c, "axis", &axis) != 0 || norm_axis(c, "axis", axis, t->rank, &ax) != 0)
    return -1;
  int rank = t->rank - 1 + idx->rank;
  if (rank > IR_MAX_RANK)
    return fail(c, "mo.gather: the result would have rank %d, more than %d", rank, IR_MAX_RANK);
  const ir_dim *d[IR_MAX_RANK];
  int j = 0;
  for (int i = 0; i < ax; i++) d[j++] = t->dims[i];
  for (int i = 0; i < idx->rank; i++) d[j++] = idx->dims[i];
  for (int i = ax + 1; i < t->rank; i++) d[j++] = t->dims[i];
  return res_set(c, r, t->dtype, rank, d, t->device);
}

/* mo.fused (made by ir_graph_fuse, never written): the body verifies on its
 * own, uses the graph's symbols (same names, same indices), takes operands
 * of the body inputs' types and gives the body outputs' types. The body's
 * run-time checks become the graph's (the graph's verify rebuilt its list),
 * still naming the body's node. */
static int infer_fused(ctx *c, ir_type *res) {
  ir_graph *b = c->n->body;
  if (!b)
    return fail(c, "mo.fused is internal to kiln (the fusion pass makes it); it cannot be written "
                   "in a graph or built");
  if (b->nsyms != c->g->nsyms)
    return fail(c, "mo.fused: the body has %d symbols, the graph %d", b->nsyms, c->g->nsyms);
  for (int i = 0; i < b->nsyms; i++)
    if (strcmp(b->syms[i], c->g->syms[i]) != 0)
      return fail(c, "mo.fused: body symbol %d is '%s', the graph's is '%s'", i, b->syms[i],
                  c->g->syms[i]);
  if (b->ninputs != c->n->nin || b->noutputs != c->n->nout)
    return fail(c, "mo.fused: %d operands and %d results, the body has %d inputs and %d outputs",
                c->n->nin, c->n->nout, b->ninputs, b->noutputs);
  ir_diag bd = {0};
  if (ir_graph_verify(b, &bd) != 0) return fail(c, "mo.fused: body: %s", bd.msg);
  char s1[256], s2[256];
  for (int i = 0; i < b->ninputs; i++)
    if (!ir_type_equal(&b->inputs[i]->type, opt(c, i)))
      return fail(c, "mo.fused: operand %d is %s, the body takes %s", i,
                  type_str(s1, sizeof s1, opt(c, i)), type_str(s2, sizeof s2, &b->inputs[i]->type));
  for (int i = 0; i < b->noutputs; i++) {
    const ir_type *t = &b->outputs[i]->type;
    const ir_dim *dims[IR_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
      if (!(dims[k] = ir_dim_clone(c->g->arena, t->dims[k]))) return oom(c);
    if (res_set(c, &res[i], t->dtype, t->rank, dims, t->device) != 0) return -1;
  }
  for (int i = 0; i < b->nchecks; i++) {
    const ir_check *k = &b->checks[i];
    const ir_dim *l = ir_dim_clone(c->g->arena, k->lhs), *r = ir_dim_clone(c->g->arena, k->rhs);
    if (!l || !r || ir_graph_add_check(c->g, k->kind, l, r, k->node, "%s", k->what) != 0)
      return oom(c);
  }
  return 0;
}

/* ---- custom kernels ---- */

/* 0 when every symbol of d occurs in an operand's type of the node (so the
 * runtime, which solves symbols from the graph's inputs, knows its value). */
static int custom_dim_solvable(ctx *c, const ir_dim *d, int res, int axis) {
  for (int s = 0; s < c->g->nsyms; s++) {
    if (!ir_dim_uses_sym(d, s)) continue;
    bool found = false;
    for (int k = 0; k < c->n->nin && !found; k++)
      for (int a = 0; a < opt(c, k)->rank && !found; a++)
        found = ir_dim_uses_sym(opt(c, k)->dims[a], s);
    if (!found)
      return fail(c, "result %d axis %d of mo.%s uses symbol '%s', which no operand's type "
                     "has (kiln could not know its value)", res, axis, c->op, c->g->syms[s]);
  }
  return 0;
}

/* mo.custom / mo.inplace_custom: `symbol` names the kernel, the other
 * attributes are its parameters (int, float, bool, string); the declared
 * result types are taken as given (mo.inplace_custom's defaults to operand
 * 0's and must equal it). */
static int infer_custom(ctx *c, ir_type *res) {
  const ir_node *n = c->n;
  const ir_attr *sym = ir_node_attr(n, "symbol");
  if (!sym || sym->kind != IR_ATTR_STRING || !sym->u.s[0])
    return fail(c, "mo.%s needs symbol = \"<kernel name>\" (a non-empty string)", c->op);
  for (int i = 0; i < n->nattrs; i++) {
    ir_attr_kind k = n->attrs[i].kind;
    if (k != IR_ATTR_INT && k != IR_ATTR_FLOAT && k != IR_ATTR_BOOL && k != IR_ATTR_STRING)
      return fail(c, "parameter '%s' of mo.%s must be an int, a float, a bool or a string",
                  n->attrs[i].name, c->op);
  }
  bool inplace = n->op == IR_OP_INPLACE_CUSTOM;
  for (int i = 0; i < n->nout; i++) {
    const ir_type *t = &n->out[i]->type;
    if (t->rank < 0) {
      if (!inplace) return fail(c, "mo.%s needs a declared type for result %d", c->op, i);
      t = opt(c, 0);
    }
    if (!type_ok(t)) return fail(c, "result %d of mo.%s has a malformed type", i, c->op);
    if (inplace && !ir_type_equal(t, opt(c, 0))) {
      char s1[256], s2[256];
      return fail(c, "the result of mo.%s is declared as %s but it is operand 0, of type %s",
                  c->op, type_str(s1, sizeof s1, t), type_str(s2, sizeof s2, opt(c, 0)));
    }
    for (int a = 0; a < t->rank; a++) {
      int64_t v;
      if (is_const(t->dims[a], &v) && v < 0)
        return fail(c, "result %d of mo.%s has negative dim %" PRId64 " on axis %d", i, c->op, v,
                    a);
      if (custom_dim_solvable(c, t->dims[a], i, a) != 0) return -1;
    }
    if (res_set(c, &res[i], t->dtype, t->rank, t->dims, t->device) != 0) return -1;
  }
  return 0;
}

/* ---- the helpers other rule files use (infer_impl.h) ---- */

int ir_infer_fail(ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(c, fmt, ap);
  va_end(ap);
  return -1;
}
int ir_infer_dim_fail(ctx *c) { return dim_fail(c); }
int ir_infer_attr_int(ctx *c, const char *name, int64_t *out) { return attr_int(c, name, out); }
int ir_infer_attr_bool(ctx *c, const char *name, bool *out) {
  int rc;
  const ir_attr *a = attr_get(c, name, &rc);
  *out = a ? a->u.b : false;
  return rc;
}
int ir_infer_attr_ints(ctx *c, const char *name, int *nv, const int64_t **v) {
  return attr_ints(c, name, nv, v);
}
int ir_infer_attr_float(ctx *c, const char *name, double *out) { return attr_float(c, name, out); }
int ir_infer_attr_string(ctx *c, const char *name, const char **out) {
  return attr_string(c, name, out);
}
int ir_infer_norm_axis(ctx *c, const char *what, int64_t axis, int rank, int *out) {
  return norm_axis(c, what, axis, rank, out);
}
int ir_infer_res_set(ctx *c, ir_type *r, ir_dtype dt, int rank, const ir_dim *const *dims,
                     ir_device dev) {
  return res_set(c, r, dt, rank, dims, dev);
}
int ir_infer_declared(ctx *c, const ir_type **out) { return declared(c, out); }
int ir_infer_need(ctx *c, ir_check_kind kind, const ir_dim *lhs, const ir_dim *rhs,
                  const char *what) {
  return need(c, kind, lhs, rhs, "%s", what);
}
const char *ir_infer_dim_str(char *buf, size_t cap, const ir_dim *d) {
  return dim_str(buf, cap, d);
}

/* ---- the node ---- */

static int infer_class(ctx *c, ir_type *res) {
  switch (ir_op_get(c->n->op)->cls) {
  case IR_CLS_UNARY:
  case IR_CLS_UNARY_FLOAT:
  case IR_CLS_UNARY_LOGICAL: return infer_unary(c, res, false);
  case IR_CLS_UNARY_PRED: return infer_unary(c, res, true);
  case IR_CLS_BINARY:
  case IR_CLS_BINARY_LOGICAL: return infer_binary(c, res, false);
  case IR_CLS_COMPARE: return infer_binary(c, res, true);
  case IR_CLS_WHERE: return infer_where(c, res);
  case IR_CLS_CAST: return infer_cast(c, res);
  case IR_CLS_CONSTANT: return infer_constant(c, res);
  case IR_CLS_CONSTANT_EXTERNAL: return infer_constant_external(c, res);
  case IR_CLS_MATMUL: return ir_infer_matmul_shape(c, res);
  case IR_CLS_MATMUL_INTEGER: return ir_infer_matmul_integer(c, res);
  case IR_CLS_REDUCE: return infer_axis_op(c, res, true, -1);
  case IR_CLS_REDUCE_ARG: return infer_axis_op(c, res, true, IR_DT_SI64);
  case IR_CLS_SOFTMAX: return infer_axis_op(c, res, false, -1);
  case IR_CLS_LAYER_NORM: return infer_layer_norm(c, res);
  case IR_CLS_RESHAPE:
    return c->n->op == IR_OP_TRANSFER_TO ? infer_transfer(c, res) : infer_reshape(c, res);
  case IR_CLS_TRANSPOSE: return infer_transpose(c, res);
  case IR_CLS_PERMUTE: return infer_permute(c, res);
  case IR_CLS_BROADCAST_TO: return infer_broadcast_to(c, res);
  case IR_CLS_CONCAT: return infer_concat(c, res);
  case IR_CLS_SPLIT: return infer_split(c, res);
  case IR_CLS_SLICE: return infer_slice(c, res);
  case IR_CLS_SQUEEZE: return infer_squeeze(c, res);
  case IR_CLS_UNSQUEEZE: return infer_unsqueeze(c, res);
  case IR_CLS_GATHER: return infer_gather(c, res);
  case IR_CLS_FUSED: return infer_fused(c, res);
  case IR_CLS_CONTROL: return ir_infer_control(c, res);
  case IR_CLS_CUSTOM: return infer_custom(c, res);
  case IR_CLS_SCAN: return infer_scan(c, res);
  case IR_CLS_BAND_PART: return infer_band_part(c, res);
  case IR_CLS_GATHER_INDEX: return ir_infer_gather_index(c, res);
  case IR_CLS_SCATTER: return ir_infer_scatter(c, res);
  case IR_CLS_TILE: return ir_infer_tile(c, res);
  case IR_CLS_RANGE: return ir_infer_range(c, res);
  case IR_CLS_PAD: return infer_pad(c, res);
  case IR_CLS_POOL: return infer_pool(c, res);
  case IR_CLS_CONV: return infer_conv(c, res);
  case IR_CLS_SORT: return ir_infer_sort(c, res);
  case IR_CLS_RESIZE: return ir_infer_resize(c, res);
  case IR_CLS_FOLD: return ir_infer_fold(c, res);
  case IR_CLS_ROI_ALIGN: return ir_infer_roi_align(c, res);
  case IR_CLS_RANDOM: return ir_infer_random(c, res);
  case IR_CLS_PRINT: return ir_infer_print(c, res);
  case IR_CLS_NONZERO: return ir_infer_nonzero(c, res);
  case IR_CLS_NMS: return ir_infer_nms(c, res);
  case IR_CLS_MASKED_SCATTER: return ir_infer_masked_scatter(c, res);
  case IR_CLS_SHAPE_TO_TENSOR: return ir_infer_shape_to_tensor(c, res);
  case IR_CLS_SLICE_DATA: return ir_infer_slice_data(c, res);
  case IR_CLS_REPEAT: return ir_infer_repeat(c, res);
  case IR_CLS_DEQUANTIZE:
  case IR_CLS_QMATMUL: return ir_infer_quant(c, res);
  case IR_CLS_BUFFER: return ir_infer_buffer(c, res);
  case IR_CLS_FFT: return ir_infer_fft(c, res);
  case IR_CLS_COUNT: break;
  }
  return fail(c, "mo.%s has no shape rule", c->op);
}

/* Arity, operand types present and well formed, one device. */
static int check_operands(ctx *c) {
  const ir_op_info *info = ir_op_get(c->n->op);
  ir_node *n = c->n;
  if (n->nin < info->nin_min || (info->nin_max >= 0 && n->nin > info->nin_max)) {
    if (info->nin_min == info->nin_max)
      return fail(c, "mo.%s takes %d operand%s, not %d", c->op, info->nin_min,
                  info->nin_min == 1 ? "" : "s", n->nin);
    return fail(c, "mo.%s takes at least %d operand%s, not %d", c->op, info->nin_min,
                info->nin_min == 1 ? "" : "s", n->nin);
  }
  if (n->nout < 1 || (info->nout >= 0 && n->nout != info->nout))
    return fail(c, "mo.%s must have %d result%s, not %d", c->op, info->nout < 0 ? 1 : info->nout,
                info->nout == 1 || info->nout < 0 ? "" : "s", n->nout);
  if ((n->nin > 0 && !n->in) || !n->out) return fail(c, "mo.%s is malformed", c->op);
  for (int k = 0; k < n->nout; k++)
    if (!n->out[k]) return fail(c, "result %d of mo.%s is missing", k, c->op);
  for (int k = 0; k < n->nin; k++) {
    const ir_value *v = n->in[k];
    if (!v) return fail(c, "operand %d of mo.%s is missing", k, c->op);
    const ir_type *t = &v->type;
    if (t->rank < 0)
      return fail(c, "operand %d of mo.%s (%%%s) has no type yet", k, c->op, v->name);
    if (!type_ok(t))
      return fail(c, "operand %d of mo.%s (%%%s) has a malformed type", k, c->op, v->name);
    const ir_device *d0 = &n->in[0]->type.device;
    if (t->device.kind != d0->kind || t->device.id != d0->id)
      return fail(c, "operand %d of mo.%s is on %s:%d but operand 0 is on %s:%d", k, c->op,
                  t->device.kind == IR_DEV_GPU ? "gpu" : "cpu", t->device.id,
                  d0->kind == IR_DEV_GPU ? "gpu" : "cpu", d0->id);
  }
  return 0;
}

int ir_infer_node(ir_graph *g, ir_node *n, ir_diag *d) {
  if (!g || !n) return ir_diag_set(d, (ir_loc){0, 0}, "ir_infer_node: no graph or node");
  const ir_op_info *info = ir_op_get(n->op);
  if (!info) return ir_diag_set(d, n->loc, "op #%d has an unknown op code %d", n->id, (int)n->op);
  ctx c = {g, n, d, info->name};
  if (check_operands(&c) != 0 || ir_infer_value_kinds(&c) != 0 || check_dtypes(&c, info) != 0)
    return -1;
  ir_type *res = ir_arena_alloc(g->arena, (size_t)n->nout * sizeof *res);
  if (!res) return oom(&c);
  if (infer_class(&c, res) != 0) return -1;
  for (int i = 0; i < n->nout; i++) {
    const ir_type *decl = &n->out[i]->type;
    char s1[256], s2[256];
    if (decl->rank == -1) continue;
    if (!type_ok(decl)) return fail(&c, "result %d of mo.%s has a malformed type", i, c.op);
    if (!ir_type_equal(decl, &res[i]))
      return fail(&c, "result %d of mo.%s is declared as %s but is %s", i, c.op,
                  type_str(s1, sizeof s1, decl), type_str(s2, sizeof s2, &res[i]));
  }
  for (int i = 0; i < n->nout; i++)
    if (n->out[i]->type.rank == -1) n->out[i]->type = res[i];
  return 0;
}
