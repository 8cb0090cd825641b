/* graph_api.c - the public graph API (kiln/graph.h) over ir/.
 *
 * A kiln_graph owns one ir_graph. A kiln_value is an ir_value of that graph
 * (the pointer is simply cast); every call that takes values checks they
 * belong to the graph, so a value of another graph is an error, not a crash.
 * Building appends one node at a time and infers its result types at once
 * (ir_infer_node): a node that fails is rolled back (node, values and shape
 * checks are dropped), so the graph stays valid and building can go on.
 * Errors: parse errors are KILN_ERR_PARSE (a well-formed text breaking an op's
 * rules is KILN_ERR_VERIFY) ("FILE:LINE:COL: message"), rule
 * violations while building or verifying are KILN_ERR_VERIFY.
 * Attributes in the runtime's kiln.* namespace are refused both in parsed
 * text (ir_parse) and in kiln_graph_add_op's dictionary (ir_parse_attrs), at
 * their line:col, with KILN_ERR_PARSE: only the runtime stamps them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"
#include "weight_source.h"

static ir_value *as_ir(kiln_value *v) { return (ir_value *)v; }
static kiln_value *as_kv(ir_value *v) { return (kiln_value *)v; }

static bool owns_value(const kiln_graph *g, const kiln_value *kv) {
  const ir_value *v = (const ir_value *)kv;
  return v && v->id >= 0 && v->id < g->ir->nvalues && g->ir->values[v->id] == v;
}

static bool is_ident(const char *s) {
  if (!s || !*s) return false;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char *p = s + 1; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return false;
  return true;
}

static kiln_graph *wrap(ir_graph *ir, kiln_status *st) {
  kiln_graph *g = malloc(sizeof *g);
  if (!g) {
    ir_graph_free(ir);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating a graph");
    return NULL;
  }
  g->ir = ir;
  g->wsrc = NULL;
  g->origin = NULL;
  return g;
}

KILN_API kiln_graph *kiln_graph_parse(const char *text, size_t len, const char *filename,
                                      kiln_status *st) {
  if (!text && len) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_parse: text is NULL");
    return NULL;
  }
  ir_diag d = {0};
  ir_graph *ir = ir_parse(text ? text : "", len, &d);
  if (!ir) {
    rt_err_diag(st, d.rule ? KILN_ERR_VERIFY : KILN_ERR_PARSE, filename, &d);
    return NULL;
  }
  kiln_graph *g = wrap(ir, st);
  if (g) rt_ok(st);
  return g;
}

KILN_API kiln_graph *kiln_graph_load(const char *path, kiln_status *st) {
  if (!path) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_load: path is NULL");
    return NULL;
  }
  size_t len = 0;
  char *buf = rt_read_file(path, NULL, &len, st);
  if (!buf) return NULL;
  kiln_graph *g = kiln_graph_parse(buf, len, path, st);
  free(buf);
  return g;
}

KILN_API void kiln_graph_free(kiln_graph *g) {
  if (!g) return;
  ir_graph_free(g->ir);
  rt_wsrc_release(g->wsrc); /* models compiled from g keep their own reference */
  free(g);
}

KILN_API char *kiln_graph_print(const kiln_graph *g, kiln_status *st) {
  if (!g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_print: graph is NULL");
    return NULL;
  }
  char *s = ir_print(g->ir);
  if (!s) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory printing graph @%s", g->ir->name);
    return NULL;
  }
  rt_ok(st);
  return s;
}

/* ---- building ---- */
KILN_API kiln_graph *kiln_graph_new(const char *name, kiln_status *st) {
  if (name && !is_ident(name)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "graph name '%s' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", name);
    return NULL;
  }
  ir_graph *ir = ir_graph_new(name ? name : "graph");
  if (!ir) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating a graph");
    return NULL;
  }
  kiln_graph *g = wrap(ir, st);
  if (g) rt_ok(st);
  return g;
}

KILN_API int kiln_graph_declare_symbol(kiln_graph *g, const char *name, kiln_status *st) {
  if (!g) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_declare_symbol: graph is NULL");
  if (!is_ident(name))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "symbol name '%s' is not an identifier",
                  name ? name : "(null)");
  if (ir_graph_symbol(g->ir, name, strlen(name), true) < 0)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory declaring symbol '%s'", name);
  g->ir->syms_declared = true;
  rt_ok(st);
  return 0;
}

typedef struct resolve_ctx {
  ir_graph *g;
} resolve_ctx;

static int resolve_sym(void *ud, const char *name, size_t len, ir_dim_err *err) {
  resolve_ctx *r = ud;
  int s = ir_graph_symbol(r->g, name, len, !r->g->syms_declared);
  if (s < 0) {
    if (r->g->syms_declared)
      snprintf(err->msg, sizeof err->msg,
               "symbolic dim '%.*s' is not declared (kiln_graph_declare_symbol)", (int)len, name);
    else
      snprintf(err->msg, sizeof err->msg, "out of memory adding symbol '%.*s'", (int)len, name);
  }
  return s;
}

/* Build a type from dim texts into g's arena. `what` names the value in errors. */
static int make_type(kiln_graph *g, kiln_dtype dtype, int rank, const char *const *dims,
                     const char *what, ir_type *t, kiln_status *st) {
  if ((unsigned)dtype >= KILN_DTYPE_COUNT)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: invalid dtype %d", what, (int)dtype);
  if (rank < 0 || rank > IR_MAX_RANK)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: rank %d is out of range [0, %d]", what, rank,
                  IR_MAX_RANK);
  if (rank > 0 && !dims)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: dims is NULL for rank %d", what, rank);
  memset(t, 0, sizeof *t);
  t->dtype = (ir_dtype)dtype;
  t->rank = rank;
  t->device.kind = IR_DEV_CPU;
  if (rank == 0) return 0;
  const ir_dim **d = ir_arena_alloc(g->ir->arena, (size_t)rank * sizeof *d);
  if (!d) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  resolve_ctx rc = {g->ir};
  for (int i = 0; i < rank; i++) {
    const char *txt = dims[i];
    if (!txt) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: dim %d is NULL", what, i);
    size_t len = strlen(txt), used = 0;
    ir_dim_err err = {0};
    d[i] = ir_dim_parse(g->ir->arena, txt, len, &used, resolve_sym, &rc, &err);
    if (!d[i])
      return rt_err(st, KILN_ERR_PARSE, "%s: dim %d '%s': at offset %zu: %s", what, i, txt,
                    err.pos, err.msg);
    while (used < len && (txt[used] == ' ' || txt[used] == '\t')) used++;
    if (used != len)
      return rt_err(st, KILN_ERR_PARSE, "%s: dim %d '%s': unexpected '%c' at offset %zu", what, i,
                    txt, txt[used], used);
  }
  t->dims = d;
  return 0;
}

KILN_API kiln_value *kiln_graph_add_input(kiln_graph *g, const char *name, kiln_dtype dtype,
                                          int rank, const char *const *dims, kiln_status *st) {
  return kiln_graph_add_input_on(g, name, dtype, rank, dims, -1, st);
}

static kiln_value *add_input(kiln_graph *g, const char *name, kiln_dtype dtype, int rank,
                             const char *const *dims, int gpu, ir_type_kind kind,
                             kiln_status *st);

KILN_API kiln_value *kiln_graph_add_input_on(kiln_graph *g, const char *name, kiln_dtype dtype,
                                             int rank, const char *const *dims, int gpu,
                                             kiln_status *st) {
  return add_input(g, name, dtype, rank, dims, gpu, IR_TYPE_TENSOR, st);
}

KILN_API kiln_value *kiln_graph_add_buffer_input(kiln_graph *g, const char *name,
                                                 kiln_dtype dtype, int rank,
                                                 const char *const *dims, kiln_status *st) {
  return add_input(g, name, dtype, rank, dims, -1, IR_TYPE_BUFFER, st);
}

KILN_API kiln_value_kind kiln_value_kind_of(const kiln_value *v) {
  if (!v) return KILN_VALUE_TENSOR;
  ir_type_kind k = ((const ir_value *)(const void *)v)->type.kind;
  return k == IR_TYPE_BUFFER ? KILN_VALUE_BUFFER
         : k == IR_TYPE_CHAIN ? KILN_VALUE_CHAIN
                              : KILN_VALUE_TENSOR;
}

static kiln_value *add_input(kiln_graph *g, const char *name, kiln_dtype dtype, int rank,
                             const char *const *dims, int gpu, ir_type_kind kind,
                             kiln_status *st) {
  if (!g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_add_input: graph is NULL");
    return NULL;
  }
  char what[96];
  snprintf(what, sizeof what, "input %d%s%.64s%s", g->ir->ninputs, name ? " (" : "",
           name ? name : "", name ? ")" : "");
  if (gpu < -1 || gpu > 1000000) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: gpu %d is out of range (-1 for the host)", what,
           gpu);
    return NULL;
  }
  ir_type t;
  if (make_type(g, dtype, rank, dims, what, &t, st) < 0) return NULL;
  if (gpu >= 0) t.device = (ir_device){IR_DEV_GPU, gpu};
  t.kind = kind;
  /* An identifier becomes the SSA name; any other name is kept as the
   * argument name only (the SSA name is then a fresh number). */
  bool ssa = name && is_ident(name);
  if (ssa && ir_graph_find_value(g->ir, name, strlen(name))) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "%s: the name is already used by another value", what);
    return NULL;
  }
  ir_value *v = ir_graph_add_input(g->ir, ssa ? name : NULL, &t);
  if (!v) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding %s", what);
    return NULL;
  }
  if (name && !ssa) {
    g->ir->input_names[v->index] = ir_arena_strdup(g->ir->arena, name);
    if (!g->ir->input_names[v->index]) {
      rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding %s", what);
      return NULL;
    }
  }
  rt_ok(st);
  return as_kv(v);
}

/* Append node and infer its types; on failure drop it again. */
static kiln_value *add_node(kiln_graph *g, ir_op op, ir_value *const *in, int nin,
                            const ir_attr *attrs, int nattrs, int nout, const ir_type *declared,
                            kiln_status *st) {
  ir_graph *ir = g->ir;
  int nnodes = ir->nnodes, nvalues = ir->nvalues, nchecks = ir->nchecks;
  const char *opname = ir_op_get(op)->name;
  ir_diag d = {0};
  /* a declared type goes in as text gives it: the target of the ops whose
   * rule reads it (also those that need it only in some forms, such as
   * mo.repeat_interleave with a repeats tensor), checked by the others */
  ir_node *n = ir_graph_add_node(ir, op, in, nin, attrs, nattrs, nout, declared, NULL,
                                 (ir_loc){0, 0}, &d);
  if (!n) {
    rt_err(st, KILN_ERR_VERIFY, "mo.%s: %s", opname, d.msg);
    goto rollback;
  }
  if (!ir_node_set_origin(ir, n, g->origin)) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding mo.%s", opname);
    goto rollback;
  }
  if (ir_infer_node(ir, n, &d) < 0) {
    rt_err_diag(st, KILN_ERR_VERIFY, NULL, &d);
    goto rollback;
  }
  rt_ok(st);
  return as_kv(n->out[0]);
rollback:
  ir->nnodes = nnodes;
  ir->nvalues = nvalues;
  ir->nchecks = nchecks;
  return NULL;
}

KILN_API kiln_value *kiln_graph_add_op(kiln_graph *g, const char *op, kiln_value *const *operands,
                                       int noperands, const char *attrs, const char *result_type,
                                       kiln_status *st) {
  return kiln_graph_add_op_typed(g, op, operands, noperands, attrs,
                                 result_type ? &result_type : NULL, result_type ? 1 : 0, st);
}

KILN_API kiln_value *kiln_graph_add_op_typed(kiln_graph *g, const char *op,
                                             kiln_value *const *operands, int noperands,
                                             const char *attrs, const char *const *result_types,
                                             int nresults, kiln_status *st) {
  if (!g || !op) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_add_op: %s is NULL", g ? "op" : "graph");
    return NULL;
  }
  const char *nm = strncmp(op, "mo.", 3) == 0 ? op + 3 : op;
  if (noperands < 0 || (noperands > 0 && !operands)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "mo.%s: bad operand list (%d operands)", nm, noperands);
    return NULL;
  }
  bool known = false;
  int id = ir_op_lookup(nm, strlen(nm), noperands, &known);
  if (id < 0) {
    if (known)
      rt_err(st, KILN_ERR_VERIFY, "mo.%s does not take %d operand%s", nm, noperands,
             noperands == 1 ? "" : "s");
    else
      rt_err(st, KILN_ERR_INVALID_ARGUMENT, "unknown op '%s'", op);
    return NULL;
  }
  const ir_op_info *info = ir_op_get((ir_op)id);
  if (nresults < 0 || (nresults > 0 && !result_types)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "mo.%s: bad result type list (%d types)", nm, nresults);
    return NULL;
  }
  ir_value **in = calloc((size_t)(noperands ? noperands : 1), sizeof *in);
  ir_type *decl = calloc((size_t)(nresults ? nresults : 1), sizeof *decl);
  if (!in || !decl) {
    free(in);
    free(decl);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  kiln_value *res = NULL;
  for (int i = 0; i < noperands; i++) {
    if (!owns_value(g, operands[i])) {
      rt_err(st, KILN_ERR_INVALID_ARGUMENT, "mo.%s: operand %d is %s", nm, i,
             operands[i] ? "a value of another graph" : "NULL");
      goto done;
    }
    in[i] = as_ir(operands[i]);
  }
  ir_attr *av = NULL;
  int na = 0;
  ir_diag d = {0};
  if (attrs && ir_parse_attrs(g->ir, attrs, strlen(attrs), &av, &na, &d) < 0) {
    rt_err(st, KILN_ERR_PARSE, "attributes of mo.%s: %d:%d: %s", nm, d.line, d.col, d.msg);
    goto done;
  }
  int nout = info->nout;
  if (id == IR_OP_CUSTOM || info->cls == IR_CLS_CONTROL) {
    nout = nresults ? nresults : 1; /* one result per declared type */
  } else if (nout < 0) { /* split: one result per size */
    nout = -1;
    for (int i = 0; i < na; i++)
      if (strcmp(av[i].name, "split_sizes") == 0 && av[i].kind == IR_ATTR_INTS)
        nout = av[i].u.ints.n;
    if (nout < 1) {
      rt_err(st, KILN_ERR_VERIFY, "mo.%s needs a non-empty split_sizes attribute (ints)", nm);
      goto done;
    }
  }
  bool have_decl = nresults > 0;
  if (have_decl && nresults != nout) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "mo.%s has %d result%s but %d result types were given",
           nm, nout, nout == 1 ? "" : "s", nresults);
    goto done;
  }
  for (int i = 0; i < nresults; i++) {
    if (!result_types[i] ||
        ir_parse_type(g->ir, result_types[i], strlen(result_types[i]), &decl[i], &d) < 0) {
      rt_err(st, KILN_ERR_PARSE, "result type %d of mo.%s: %d:%d: %s", i, nm, d.line, d.col,
             result_types[i] ? d.msg : "NULL");
      goto done;
    }
  }
  bool target = (info->cls == IR_CLS_RESHAPE && id != IR_OP_TRANSFER_TO) ||
                info->cls == IR_CLS_BROADCAST_TO || info->cls == IR_CLS_RANGE ||
                info->cls == IR_CLS_RESIZE || info->cls == IR_CLS_CONSTANT ||
                info->cls == IR_CLS_CONSTANT_EXTERNAL || id == IR_OP_CUSTOM ||
                info->cls == IR_CLS_SLICE_DATA || info->cls == IR_CLS_RANDOM ||
                info->cls == IR_CLS_CONTROL || /* mo.call: typed by its callee */
                (info->flags & IR_OPF_DATA_DIM); /* the count's new symbol */
  if (target && !have_decl) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "mo.%s needs result_type (its target shape)", nm);
    goto done;
  }
  res = add_node(g, (ir_op)id, in, noperands, av, na, nout, have_decl ? decl : NULL, st);
done:
  free(in);
  free(decl);
  return res;
}

KILN_API kiln_value *kiln_value_result(kiln_value *v, int i) {
  ir_value *x = as_ir(v);
  if (!x) return NULL;
  if (i == 0) return v;
  if (!x->def || i < 0 || i >= x->def->nout) return NULL;
  return as_kv(x->def->out[i]);
}

KILN_API kiln_value *kiln_graph_add_constant(kiln_graph *g, kiln_dtype dtype, int rank,
                                             const int64_t *shape, const void *data,
                                             kiln_status *st) {
  if (!g) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_add_constant: graph is NULL");
    return NULL;
  }
  if (rank < 0 || rank > IR_MAX_RANK) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "constant: rank %d is out of range [0, %d]", rank,
           IR_MAX_RANK);
    return NULL;
  }
  int64_t numel;
  size_t nbytes;
  if (rt_shape_bytes(dtype, rank, shape, &numel, &nbytes, st) < 0) return NULL;
  if (!data && nbytes) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "constant: data is NULL");
    return NULL;
  }
  ir_arena *a = g->ir->arena;
  ir_type t = {.dtype = (ir_dtype)dtype, .rank = rank, .device = {IR_DEV_CPU, 0}};
  if (rank > 0) {
    const ir_dim **d = ir_arena_alloc(a, (size_t)rank * sizeof *d);
    if (!d) goto oom;
    for (int i = 0; i < rank; i++)
      if (!(d[i] = ir_dim_const(a, shape[i]))) goto oom;
    t.dims = d;
  }
  ir_attr at = {.name = "value", .kind = IR_ATTR_DENSE};
  at.u.dense.dtype = (ir_dtype)dtype;
  at.u.dense.rank = rank;
  for (int i = 0; i < rank; i++) at.u.dense.shape[i] = shape[i];
  at.u.dense.numel = numel;
  at.u.dense.data = (void *)data; /* copied by ir_graph_add_node */
  static const char empty = 0;
  if (!nbytes) at.u.dense.data = (void *)&empty;
  return add_node(g, IR_OP_CONSTANT, NULL, 0, &at, 1, 1, &t, st);
oom:
  rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding a constant");
  return NULL;
}

KILN_API kiln_value *kiln_graph_add_weight(kiln_graph *g, const char *name, kiln_dtype dtype,
                                           int rank, const char *const *dims, kiln_status *st) {
  if (!g || !name || !*name) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_add_weight: %s",
           g ? "the weight needs a name" : "graph is NULL");
    return NULL;
  }
  char what[96];
  snprintf(what, sizeof what, "weight '%.64s'", name);
  ir_type t;
  if (make_type(g, dtype, rank, dims, what, &t, st) < 0) return NULL;
  ir_attr at = {.name = "name", .kind = IR_ATTR_STRING};
  at.u.s = name;
  return add_node(g, IR_OP_CONSTANT_EXTERNAL, NULL, 0, &at, 1, 1, &t, st);
}

KILN_API int kiln_graph_set_outputs(kiln_graph *g, kiln_value *const *values, int n,
                                    const char *const *names, kiln_status *st) {
  if (!g) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_set_outputs: graph is NULL");
  if (n < 1 || !values)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "a graph needs at least one output (got %d)", n);
  ir_value **v = calloc((size_t)n, sizeof *v);
  if (!v) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < n; i++) {
    if (!owns_value(g, values[i])) {
      free(v);
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "output %d is %s", i,
                    values[i] ? "a value of another graph" : "NULL");
    }
    v[i] = as_ir(values[i]);
  }
  int rc = ir_graph_set_outputs(g->ir, v, n, (ir_loc){0, 0});
  free(v);
  if (rc < 0) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory setting outputs");
  for (int i = 0; i < n; i++) {
    g->ir->output_names[i] = NULL;
    if (names && names[i] && !(g->ir->output_names[i] = ir_arena_strdup(g->ir->arena, names[i])))
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory setting outputs");
  }
  return kiln_graph_verify(g, st);
}

KILN_API int kiln_graph_verify(kiln_graph *g, kiln_status *st) {
  if (!g) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_graph_verify: graph is NULL");
  ir_diag d = {0};
  if (ir_graph_verify(g->ir, &d) < 0) return rt_err_diag(st, KILN_ERR_VERIFY, NULL, &d);
  rt_ok(st);
  return 0;
}

KILN_API kiln_dtype kiln_value_dtype(const kiln_value *v) {
  const ir_value *x = (const ir_value *)v;
  return x && x->type.rank >= 0 ? (kiln_dtype)x->type.dtype : KILN_DTYPE_COUNT;
}

KILN_API int kiln_value_rank(const kiln_value *v) {
  const ir_value *x = (const ir_value *)v;
  return x ? x->type.rank : -1;
}

KILN_API int kiln_value_gpu(const kiln_value *v) {
  const ir_value *x = (const ir_value *)v;
  if (!x) return -2;
  return x->type.device.kind == IR_DEV_GPU ? (int)x->type.device.id : -1;
}

KILN_API size_t kiln_value_dim(const kiln_value *v, int i, char *buf, size_t cap) {
  const ir_value *x = (const ir_value *)v;
  if (!x || i < 0 || i >= x->type.rank) {
    if (buf && cap) buf[0] = 0;
    return 0;
  }
  return ir_dim_print(x->type.dims[i], buf, cap);
}
