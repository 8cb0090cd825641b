/* parse.c - MO graph text -> ir_graph (ir_parse, ir_parse_type, ir_parse_attrs;
 * ir_parse_kernel_text, parse.h).
 *
 * Grammar (tokens may be separated by whitespace and `//` comments; attribute
 * values, numbers and strings are in parse_lex.c):
 *   graph   := 'mo.graph' '@' id ['<' [id {',' id}] '>'] '(' [arg {',' arg}] ')'
 *              ['->' (type | '(' [type {',' type}] ')')] ['attributes' attrs]
 *              '{' {op} output '}'
 *   arg     := '%' name ':' type
 *   op      := results '=' (mo-name | '"' mo-name '"') ['(' [use {',' use}] ')'] [attrs]
 *              ':' (type | '(' [types] ')' '->' (type | '(' [types] ')'))
 *   results := result {',' result};  result := '%' name | '%' name ':' N (names name#0..)
 *   output  := 'mo.output' [use {',' use} ':' type {',' type}]
 *   type    := ('!mo.tensor' | '!mo.buffer') '<[' [dim {',' dim}] '],' dtype
 *              [',' ('cpu'|'gpu') ':' N] '>'  |  '!mo.chain'
 *   attrs   := '{' [id '=' value {',' id '=' value}] '}'
 * Dims are parsed by ir_dim_parse. The short op form `: T` gives the result
 * type only; the functional form also declares the operand types, which must
 * equal the operands' types. Without a `<...>` list symbols are declared by
 * first use; with one, an undeclared symbol is an error. The graph attributes
 * are argument_names and result_names (lists of strings, "" for no name).
 * Graphs as MAX prints them parse too: an op whose name only MAX prints
 * (rmo.*, mo.negative, ...) or written in MAX's syntax (properties '[...]'
 * before or after the operands, a constant's value in '<...>', no types on
 * mo.chain.create, mo.cast without dtype, mo.split / mo.transpose with a
 * constant operand) is read into the same vectors and turned into kiln's op
 * by ir_max_rewrite (parse_max.c); the graph may carry an empty
 * _kernel_library_paths and be followed by an attribute dict. A mo.if
 * branch may name values of the graphs enclosing it (closures, as MAX
 * writes them): parse_capture.c makes them operands and branch inputs.
 *
 * Assumes: the text need not be NUL-terminated; nothing is read past len.
 * Guarantees: returns a graph that passed ir_graph_verify, or NULL with d
 * filled: the first error, at a 1-based line:col (bytes), never a crash.
 * Checked here: syntax, undefined and redefined names, op names and operand
 * counts, symbol declarations, declared operand types, result counts; after
 * ir_graph_verify (so that a node's wrong result type is reported at the node
 * first): mo.output against the graph's declared result types.
 * Attribute names in the runtime's namespace (kiln.transpose_b, kiln.packed_b,
 * kiln.library, ...) are refused, at their line:col, everywhere but in
 * ir_parse_kernel_text: they are facts the runtime establishes, and a graph
 * that claimed one would change what a kernel computes or how it reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "parse.h"
#include "parse_lex.h"

typedef struct name_ref { /* a result name being defined */
  const char *s;
  size_t len, at;
} name_ref;

/* ---- types ---- */
static int resolve_sym(void *ud, const char *name, size_t len, ir_dim_err *err) {
  parser *p = ud;
  ir_graph *g = p->g;
  int idx = ir_graph_symbol(g, name, len, !g->syms_declared);
  if (idx >= 0) return idx;
  p->sym_failed = true;
  p->sym_pos = name >= p->s && name <= p->s + p->n ? (size_t)(name - p->s) : p->pos;
  if (!g->syms_declared) {
    snprintf(err->msg, sizeof err->msg, "out of memory");
    return -1;
  }
  char list[160];
  size_t k = 0;
  list[0] = 0;
  for (int i = 0; i < g->nsyms && k < sizeof list; i++)
    k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", g->syms[i]);
  snprintf(err->msg, sizeof err->msg,
           "symbolic dim '%.*s' is not declared in the graph's parameter list <%s>",
           (int)(len > 64 ? 64 : len), name, list);
  return -1;
}

int ir_parse_dims(parser *p, const ir_dim **dims, int *rank, bool negative_ok) {
  *rank = 0;
  if (ir_lex_expect(p, '[')) return -1;
  if (ir_lex_accept(p, ']')) return 0;
  for (;;) {
    size_t b = p->pos, used = 0;
    if (*rank == IR_MAX_RANK)
      return ir_lex_error(p, b, "a tensor has at most %d dims", IR_MAX_RANK);
    ir_dim_err err;
    memset(&err, 0, sizeof err);
    p->sym_failed = false;
    const ir_dim *dm = ir_dim_parse(p->g->arena, p->s + b, p->n - b, &used, resolve_sym, p, &err);
    if (!dm) {
      size_t epos = p->sym_failed ? p->sym_pos : b + (err.pos <= p->n - b ? err.pos : 0);
      return ir_lex_error(p, epos, "%s", err.msg[0] ? err.msg : "malformed dim");
    }
    if (used == 0 || used > p->n - b) return ir_lex_error(p, b, "malformed dim");
    int64_t cv;
    if (!negative_ok && ir_dim_is_const(dm, &cv) && cv < 0)
      return ir_lex_error(p, b, "dim %lld is negative", (long long)cv);
    p->pos = b + used;
    dims[(*rank)++] = dm;
    if (ir_lex_accept(p, ',')) continue;
    return ir_lex_expect(p, ']');
  }
}

static int parse_type(parser *p, ir_type *t) {
  memset(t, 0, sizeof *t);
  if (ir_lex_accept_lit(p, "!mo.chain")) {
    t->kind = IR_TYPE_CHAIN;
    t->dtype = IR_DT_BOOL;
    return 0;
  }
  if (ir_lex_accept_lit(p, "!mo.buffer")) t->kind = IR_TYPE_BUFFER;
  else if (!ir_lex_accept_lit(p, "!mo.tensor"))
    return ir_lex_expected(p, "a type '!mo.tensor<...>'");
  if (ir_lex_expect(p, '<')) return -1;
  const ir_dim *dims[IR_MAX_RANK];
  int rank = 0;
  if (ir_parse_dims(p, dims, &rank, false)) return -1;
  if (ir_lex_expect(p, ',')) return -1;
  const char *s;
  size_t len, w;
  if (!ir_lex_ident(p, &s, &len, &w)) return ir_lex_expected(p, "a dtype");
  if (!ir_dtype_from_name(s, len, &t->dtype))
    return ir_lex_error(p, w, "unknown dtype '%.*s'", (int)(len > 64 ? 64 : len), s);
  if (ir_lex_accept(p, ',')) {
    if (!ir_lex_ident(p, &s, &len, &w)) return ir_lex_expected(p, "a device ('cpu:0', 'gpu:0')");
    if (lit_eq(s, len, "cpu")) {
      t->device.kind = IR_DEV_CPU;
    } else if (lit_eq(s, len, "gpu")) {
      t->device.kind = IR_DEV_GPU;
    } else {
      return ir_lex_error(p, w, "unknown device '%.*s' (expected cpu or gpu)",
                          (int)(len > 64 ? 64 : len), s);
    }
    if (ir_lex_expect(p, ':')) return -1;
    numtok nt;
    int64_t id;
    if (!ir_lex_number(p, &nt) || nt.kind != T_INT || nt.neg)
      return ir_lex_expected(p, "a device number");
    if (ir_lex_int64(p, &nt, &id)) return -1;
    if (id > 1000000)
      return ir_lex_error(p, nt.at, "device number %lld is too large", (long long)id);
    t->device.id = (int)id;
  }
  if (ir_lex_expect(p, '>')) return -1;
  t->rank = rank;
  if (rank) {
    t->dims = ir_arena_memdup(p->g->arena, dims, (size_t)rank * sizeof *dims);
    if (!t->dims) return ir_lex_oom(p);
  }
  return 0;
}

/* '(' [type {',' type}] ')' or one type, appended to v. */
static int parse_type_list(parser *p, vec *v, bool parens) {
  if (parens) {
    if (ir_lex_expect(p, '(')) return -1;
    if (ir_lex_accept(p, ')')) return 0;
  }
  for (;;) {
    ir_lex_skip(p);
    ir_type *t = ir_lex_push(v, sizeof *t);
    if (!t) return ir_lex_oom(p);
    if (parse_type(p, t)) return -1;
    if (!parens || !ir_lex_accept(p, ',')) break;
  }
  return parens ? ir_lex_expect(p, ')') : 0;
}

/* Type text for messages. */
static const char *type_str(const ir_type *t, char *buf, size_t cap) {
  size_t need = ir_type_print(t, buf, cap);
  if (need >= cap && cap > 4) strcpy(buf + cap - 4, "...");
  return buf;
}

static const char *kind_word(int n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

/* ---- values ---- */
/* '%' name; returns its span (without '%') and where the '%' is. */
static int value_name(parser *p, const char **s, size_t *len, size_t *where) {
  if (ir_lex_peek(p) != '%') return ir_lex_expected(p, "a value name '%...'");
  *where = p->pos++;
  size_t b = p->pos;
  while (is_value_char(lex_at(p, p->pos))) p->pos++;
  if (p->pos == b) return ir_lex_error(p, *where, "expected a value name after '%%'");
  *s = p->s + b;
  *len = p->pos - b;
  return 0;
}

/* The parser's name table (ir_graph_find_value is a linear scan). */
static uint64_t name_hash(const char *s, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

static ir_value *find_value(const parser *p, const char *s, size_t len) {
  if (!p->tab_cap) return NULL;
  for (size_t i = name_hash(s, len) & (p->tab_cap - 1);; i = (i + 1) & (p->tab_cap - 1)) {
    ir_value *v = p->tab[i];
    if (!v) return NULL;
    if (strlen(v->name) == len && memcmp(v->name, s, len) == 0) return v;
  }
}

static int add_value(parser *p, ir_value *v) {
  if (2 * (p->tab_n + 1) > p->tab_cap) {
    size_t ncap = p->tab_cap ? 2 * p->tab_cap : 64;
    ir_value **nt = calloc(ncap, sizeof *nt);
    if (!nt) return ir_lex_oom(p);
    for (size_t k = 0; k < p->tab_cap; k++) {
      ir_value *o = p->tab[k];
      if (!o) continue;
      size_t i = name_hash(o->name, strlen(o->name)) & (ncap - 1);
      while (nt[i]) i = (i + 1) & (ncap - 1);
      nt[i] = o;
    }
    free(p->tab);
    p->tab = nt;
    p->tab_cap = ncap;
  }
  size_t i = name_hash(v->name, strlen(v->name)) & (p->tab_cap - 1);
  while (p->tab[i]) i = (i + 1) & (p->tab_cap - 1);
  p->tab[i] = v;
  p->tab_n++;
  return 0;
}

ir_value *ir_parse_find_value(const parser *p, const char *s, size_t len) {
  return find_value(p, s, len);
}

int ir_parse_add_value(parser *p, ir_value *v) { return add_value(p, v); }

static int value_use(parser *p, ir_value **out, size_t *where) {
  const char *s = NULL;
  size_t len = 0;
  if (value_name(p, &s, &len, where)) return -1;
  *out = find_value(p, s, len);
  if (!*out && p->outer) {
    *out = ir_parse_capture(p, s, len, *where);
    if (p->failed) return -1;
  }
  if (!*out)
    return ir_lex_error(p, *where, "use of undefined value %%%.*s", (int)(len > 64 ? 64 : len), s);
  return 0;
}

/* A new name: not defined in the graph, not among the names of this statement. */
static int define_name(parser *p, const char *s, size_t len, size_t where) {
  int pl = (int)(len > 64 ? 64 : len);
  if (find_value(p, s, len)) return ir_lex_error(p, where, "redefinition of value %%%.*s", pl, s);
  for (size_t i = 0; i < p->names.n; i++) {
    const name_ref *r = (name_ref *)p->names.p + i;
    if (r->len == len && memcmp(r->s, s, len) == 0)
      return ir_lex_error(p, where, "redefinition of value %%%.*s", pl, s);
  }
  name_ref *r = ir_lex_push(&p->names, sizeof *r);
  if (!r) return ir_lex_oom(p);
  if (!(r->s = ir_arena_strndup(p->g->arena, s, len))) return ir_lex_oom(p);
  r->len = len;
  r->at = where;
  return 0;
}

/* "takes 2 operands" / "takes 1 or 2 operands" / "takes at least 1 operand" */
static void arity_text(const char *name, size_t len, char *buf, size_t cap) {
  const ir_op_info *ops[8];
  int nfound = 0;
  for (int i = 0; i < IR_OP_COUNT && nfound < 8; i++) { /* the variants, fewest operands first */
    const ir_op_info *o = ir_op_get((ir_op)i);
    if (!lit_eq(name, len, o->name)) continue;
    int j = nfound++;
    for (; j > 0 && ops[j - 1]->nin_min > o->nin_min; j--) ops[j] = ops[j - 1];
    ops[j] = o;
  }
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < nfound && k < cap; i++) {
    const ir_op_info *o = ops[i];
    const char *sep = i == 0 ? "" : " or ";
    if (o->nin_max < 0)
      k += (size_t)snprintf(buf + k, cap - k, "%sat least %d", sep, o->nin_min);
    else if (o->nin_min == o->nin_max)
      k += (size_t)snprintf(buf + k, cap - k, "%s%d", sep, o->nin_min);
    else
      k += (size_t)snprintf(buf + k, cap - k, "%s%d to %d", sep, o->nin_min, o->nin_max);
  }
  bool one = nfound == 1 && ops[0]->nin_max == 1;
  if (k < cap) snprintf(buf + k, cap - k, " %s", one ? "operand" : "operands");
}

static ir_graph *parse_graph(parser *p);
static int check_signature(parser *p);
static void parser_free(parser *p);

/* A graph nested in p's text (a region or a subgraph, control.h): parsed
 * with a parser of its own from p's position, verified on its own (its calls
 * are checked with the module). With captures (a mo.if branch), it may read
 * p's values (and those of the graphs enclosing p): each becomes an input
 * of the branch, after its declared ones, and is pushed to *captures
 * (ir_value *, p's). NULL with p's diagnostic filled. */
static ir_graph *parse_nested(parser *p, vec *captures) {
  parser sub;
  memset(&sub, 0, sizeof sub);
  sub.s = p->s;
  sub.n = p->n;
  sub.pos = p->pos;
  sub.d = p->d;
  sub.runtime_attrs = p->runtime_attrs;
  sub.outer = captures ? p : NULL;
  ir_graph *g = parse_graph(&sub);
  for (size_t k = 0; g && captures && k < sub.captures.n; k++) {
    ir_value **c = ir_lex_push(captures, sizeof *c);
    if (!c) {
      ir_lex_oom(&sub);
      g = NULL;
      break;
    }
    *c = ((ir_value **)sub.captures.p)[k];
  }
  if (g) {
    g->nested = true;
    if (ir_graph_verify(g, sub.d) != 0 || check_signature(&sub) != 0) {
      sub.d->rule = true;
      g = NULL;
    }
  }
  if (!g) ir_graph_free(sub.g);
  p->pos = sub.pos;
  p->failed = p->failed || !g;
  parser_free(&sub);
  return g;
}

/* '{' graph {graph} '}': the regions of a mo.if / mo.while, given to n. A
 * mo.if's branches may read the enclosing graphs' values (parse_capture.c). */
static int parse_regions(parser *p, ir_node *n) {
  ir_graph *r[8];
  vec caps[8] = {{0}};
  int nr = 0, rc = -1;
  if (ir_lex_expect(p, '{')) return -1;
  while (!ir_lex_accept(p, '}')) {
    size_t at = (ir_lex_skip(p), p->pos);
    if (nr == 8) {
      ir_lex_error(p, at, "too many regions");
      break;
    }
    if (!(r[nr] = parse_nested(p, n->op == IR_OP_IF ? &caps[nr] : NULL))) break;
    nr++;
  }
  if (p->failed) {
    while (nr-- > 0) ir_graph_free(r[nr]);
  } else if (ir_parse_lift_captures(p, n, r, caps, nr)) {
    while (nr-- > 0) ir_graph_free(r[nr]);
    ir_lex_oom(p);
  } else if (ir_node_set_regions(p->g, n, r, nr)) { /* frees them on failure */
    ir_lex_oom(p);
  } else {
    rc = 0;
  }
  for (int k = 0; k < 8; k++) free(caps[k].p);
  return rc;
}

/* %r {, %r} '=' op ... */
static int parse_op(parser *p) {
  vec *names = &p->names;
  names->n = 0;
  size_t stmt_at = p->pos;
  for (;;) {
    const char *s;
    size_t len, where;
    if (value_name(p, &s, &len, &where)) return -1;
    if (lex_at(p, p->pos) == ':' && is_digit(lex_at(p, p->pos + 1))) { /* %name:N group */
      p->pos++;
      numtok t;
      int64_t cnt;
      ir_lex_number(p, &t);
      if (t.kind != T_INT || ir_lex_int64(p, &t, &cnt) || cnt < 1 || cnt > 4096)
        return ir_lex_error(p, t.at, "bad result group size");
      for (int64_t i = 0; i < cnt; i++) {
        char nm[128];
        int k = snprintf(nm, sizeof nm, "%.*s#%lld", (int)(len > 100 ? 100 : len), s, (long long)i);
        if (define_name(p, nm, (size_t)k, where)) return -1;
      }
    } else if (define_name(p, s, len, where)) {
      return -1;
    }
    if (!ir_lex_accept(p, ',')) break;
  }
  if (ir_lex_expect(p, '=')) return -1;
  /* op name */
  ir_lex_skip(p);
  size_t op_at = p->pos;
  const char *nm;
  size_t nlen;
  bool generic = false;
  if (ir_lex_peek(p) == '"') {
    generic = true;
    if (ir_lex_string(p, &nm)) return -1;
    nlen = strlen(nm);
  } else if (!ir_lex_ident(p, &nm, &nlen, NULL)) {
    return ir_lex_expected(p, "an op name 'mo.<op>'");
  }
  int pl = (int)(nlen > 64 ? 64 : nlen);
  bool known = false;
  if (nlen > 3 && memcmp(nm, "mo.", 3) == 0) ir_op_lookup(nm + 3, nlen - 3, -1000, &known);
  /* a MAX form: a name only MAX prints, or (below) kiln's name in MAX's syntax */
  const max_op *row = NULL;
  bool max = false;
  if (!known) {
    if (!(row = ir_max_op_find(nm, nlen))) {
      if (nlen > 4 && memcmp(nm, "rmo.", 4) == 0)
        return ir_lex_error(p, op_at, "unsupported MAX op '%.*s'", pl, nm);
      return ir_lex_error(p, op_at, "unknown op '%.*s'", pl, nm);
    }
    max = true;
  }
  /* mo.call @name: the callee (control.h) */
  const char *callee = NULL;
  size_t callee_at = 0;
  if (lit_eq(nm, nlen, "mo.call")) {
    ir_lex_skip(p);
    callee_at = p->pos;
    if (lex_at(p, p->pos) != '@') return ir_lex_expected(p, "the called graph '@name'");
    size_t b = ++p->pos;
    while (is_value_char(lex_at(p, p->pos))) p->pos++;
    if (p->pos == b) return ir_lex_error(p, callee_at, "expected a graph name after '@'");
    if (!(callee = ir_arena_strndup(p->g->arena, p->s + b, p->pos - b))) return ir_lex_oom(p);
  }
  /* MAX prints mo.custom's properties before its operands */
  p->attrs.n = 0;
  bool props_first = ir_lex_peek(p) == '[';
  if (props_first) {
    max = true;
    if (ir_lex_max_dict(p, '[')) return -1;
  }
  /* operands */
  vec *uses = &p->uses, *use_at = &p->use_at;
  uses->n = use_at->n = 0;
  if (ir_lex_accept(p, '(')) {
    if (!ir_lex_accept(p, ')')) {
      for (;;) {
        ir_value **u = ir_lex_push(uses, sizeof *u);
        size_t *w = ir_lex_push(use_at, sizeof *w);
        if (!u || !w) return ir_lex_oom(p);
        if (value_use(p, u, w)) return -1;
        if (ir_lex_accept(p, ',')) continue;
        if (ir_lex_expect(p, ')')) return -1;
        break;
      }
    }
  } else if (generic) {
    return ir_lex_expect(p, '(');
  }
  int nin = (int)uses->n;
  if (!max) max = ir_max_kiln_form(nm, nlen, nin, &row);
  int op = -1;
  if (!max) {
    op = ir_op_lookup(nm + 3, nlen - 3, nin, &known);
    if (op < 0) {
      char ar[96];
      arity_text(nm + 3, nlen - 3, ar, sizeof ar);
      return ir_lex_error(p, op_at, "%.*s takes %s, got %d", pl, nm, ar, nin);
    }
  }
  /* attributes: kiln's '{...}', MAX's properties '[...]' or MAX's '<value>' */
  int c = props_first ? 0 : ir_lex_peek(p);
  if (c == '{' && ir_lex_attr_dict(p)) return -1;
  if (c == '[') {
    max = true;
    if (ir_lex_max_dict(p, '[')) return -1;
  } else if (c == '<') {
    max = true;
    p->pos++;
    attr_at *slot = ir_lex_push(&p->attrs, sizeof *slot);
    if (!slot) return ir_lex_oom(p);
    slot->at = slot->vat = (ir_lex_skip(p), p->pos);
    slot->a.name = "value";
    ir_attr tmp = slot->a;
    if (ir_lex_attr_value(p, &tmp) || ir_lex_expect(p, '>')) return -1;
    ((attr_at *)p->attrs.p)[0].a = tmp;
  }
  if (!max && op == IR_OP_CHAIN_CREATE && ir_lex_peek(p) != ':') {
    max = true; /* MAX's untyped mo.chain.create: skipped as before (parse_max.c) */
    row = ir_max_op_find(nm, nlen);
  }
  /* types (MAX prints none on mo.chain.create) */
  vec *in_t = &p->in_types, *out_t = &p->out_types;
  in_t->n = out_t->n = 0;
  bool functional = false;
  size_t in_types_at = p->pos, out_types_at = p->pos;
  if (!max || ir_lex_peek(p) == ':') {
    if (ir_lex_expect(p, ':')) return -1;
    functional = ir_lex_peek(p) == '(';
    in_types_at = p->pos;
    if (functional) {
      if (parse_type_list(p, in_t, true)) return -1;
      if (!ir_lex_accept_lit(p, "->")) return ir_lex_expected(p, "'->'");
    }
    out_types_at = (ir_lex_skip(p), p->pos);
    if (parse_type_list(p, out_t, ir_lex_peek(p) == '(')) return -1;
  }
  if (!max && op == IR_OP_CAST && p->attrs.n == 0) max = true; /* MAX's cast: dtype from the type */
  if (callee) {
    attr_at *slot = ir_lex_push(&p->attrs, sizeof *slot);
    if (!slot) return ir_lex_oom(p);
    slot->at = slot->vat = callee_at;
    slot->a.name = "callee";
    slot->a.kind = IR_ATTR_STRING;
    slot->a.u.s = callee;
  }
  if (max) { /* into kiln's form, then kiln's op by name and operand count */
    const char *kn = NULL;
    if (!functional) in_t->n = 0;
    if (ir_max_rewrite(p, row, nm, nlen, op_at, &kn)) return -1;
    if (!kn) return 0; /* nothing kiln needs (mo.chain.create) */
    nin = (int)uses->n;
    op = ir_op_lookup(kn, strlen(kn), nin, &known);
    if (op < 0) {
      char ar[96];
      arity_text(kn, strlen(kn), ar, sizeof ar);
      return ir_lex_error(p, op_at, "%.*s (kiln's mo.%s) takes %s, got %d", pl, nm, kn, ar, nin);
    }
  }
  const ir_op_info *info = ir_op_get((ir_op)op);
  /* result count */
  int nout = info->nout;
  if (op == IR_OP_CUSTOM || info->cls == IR_CLS_CONTROL) {
    nout = (int)names->n; /* one result per name, each with its declared type */
  } else if (nout < 0) { /* split: one result per split_sizes entry, else per name */
    nout = (int)names->n;
    for (size_t i = 0; i < p->attrs.n; i++) {
      const ir_attr *a = &((attr_at *)p->attrs.p)[i].a;
      if (strcmp(a->name, "split_sizes") == 0 && a->kind == IR_ATTR_INTS && a->u.ints.n > 0)
        nout = a->u.ints.n;
    }
  }
  if ((int)names->n != nout)
    return ir_lex_error(p, stmt_at, "%.*s produces %d %s but %zu %s given", pl, nm, nout,
                        kind_word(nout, "result", "results"), names->n,
                        names->n == 1 ? "name was" : "names were");
  if ((int)out_t->n != nout)
    return ir_lex_error(p, out_types_at, "%.*s produces %d %s but %zu result %s declared", pl, nm,
                        nout, kind_word(nout, "result", "results"), out_t->n,
                        out_t->n == 1 ? "type was" : "types were");
  if (functional) {
    if ((int)in_t->n != nin)
      return ir_lex_error(p, in_types_at, "%.*s has %d %s but %zu operand %s declared", pl, nm, nin,
                          kind_word(nin, "operand", "operands"), in_t->n,
                          in_t->n == 1 ? "type was" : "types were");
    for (int i = 0; i < nin; i++) {
      const ir_type *dt = (ir_type *)in_t->p + i;
      const ir_value *v = ((ir_value **)uses->p)[i];
      if (!ir_type_equal(dt, &v->type)) {
        char a[200], b[200];
        return ir_lex_error(p, ((size_t *)use_at->p)[i],
                            "operand %d of %.*s is declared as %s but %%%s has type %s", i, pl, nm,
                            type_str(dt, a, sizeof a), v->name, type_str(&v->type, b, sizeof b));
      }
    }
  }
  /* build */
  int nattrs = (int)p->attrs.n;
  vec *fa = &p->flat_attrs, *rns = &p->result_names; /* ir_graph_add_node copies both */
  fa->n = rns->n = 0;
  for (int i = 0; i < nattrs; i++) {
    ir_attr *a = ir_lex_push(fa, sizeof *a);
    if (!a) return ir_lex_oom(p);
    *a = ((attr_at *)p->attrs.p)[i].a;
  }
  for (int i = 0; i < nout; i++) {
    const char **r = ir_lex_push(rns, sizeof *r);
    if (!r) return ir_lex_oom(p);
    *r = ((name_ref *)names->p)[i].s;
  }
  const ir_attr *attrs = fa->p;
  const char *const *rn = rns->p;
  ir_loc loc = ir_lex_loc(p, stmt_at);
  p->d->msg[0] = 0;
  ir_node *node = ir_graph_add_node(p->g, (ir_op)op, (ir_value **)uses->p, nin, attrs, nattrs, nout,
                                    (ir_type *)out_t->p, rn, loc, p->d);
  if (!node) {
    p->failed = true;
    if (!p->d->msg[0]) {
      p->failed = false;
      return ir_lex_error(p, stmt_at, "out of memory");
    }
    return -1;
  }
  for (int i = 0; i < nout; i++)
    if (add_value(p, node->out[i])) return -1;
  if ((op == IR_OP_IF || op == IR_OP_WHILE) && parse_regions(p, node)) return -1;
  return 0;
}

/* 'mo.output' [%v {, %v} ':' type {, type}] */
static int parse_output(parser *p, size_t out_at) {
  vec *uses = &p->uses, *use_at = &p->use_at, *tys = &p->in_types;
  uses->n = use_at->n = tys->n = 0;
  if (ir_lex_peek(p) == '%') {
    for (;;) {
      ir_value **u = ir_lex_push(uses, sizeof *u);
      size_t *w = ir_lex_push(use_at, sizeof *w);
      if (!u || !w) return ir_lex_oom(p);
      if (value_use(p, u, w)) return -1;
      if (!ir_lex_accept(p, ',')) break;
    }
    if (ir_lex_expect(p, ':')) return -1;
    size_t tat = (ir_lex_skip(p), p->pos);
    for (;;) {
      ir_type *t = ir_lex_push(tys, sizeof *t);
      if (!t) return ir_lex_oom(p);
      if (parse_type(p, t)) return -1;
      if (!ir_lex_accept(p, ',')) break;
    }
    if (tys->n != uses->n)
      return ir_lex_error(p, tat, "mo.output has %zu %s but %zu %s declared", uses->n,
                          kind_word((int)uses->n, "operand", "operands"), tys->n,
                          tys->n == 1 ? "type was" : "types were");
  }
  int n = (int)uses->n;
  ir_value **vals = uses->p;
  char a[200], b[200];
  for (int i = 0; i < n; i++) {
    const ir_type *t = (ir_type *)tys->p + i;
    if (!ir_type_equal(t, &vals[i]->type))
      return ir_lex_error(p, ((size_t *)use_at->p)[i],
                          "operand %d of mo.output is declared as %s but %%%s has type %s", i,
                          type_str(t, a, sizeof a), vals[i]->name,
                          type_str(&vals[i]->type, b, sizeof b));
  }
  p->out_at = out_at;
  p->out_pos = ir_arena_memdup(p->g->arena, use_at->p, (size_t)n * sizeof(size_t));
  if (!p->out_pos || ir_graph_set_outputs(p->g, vals, n, ir_lex_loc(p, out_at)))
    return ir_lex_oom(p);
  return 0;
}

/* After verification (so that a wrong result type declared on a node is
 * reported at that node first): mo.output against the graph's signature. */
static int check_signature(parser *p) {
  const ir_graph *g = p->g;
  int n = g->noutputs;
  char a[200], b[200];
  if (n != p->nres)
    return ir_lex_error(p, p->out_at, "mo.output returns %d %s but the graph declares %d %s", n,
                        kind_word(n, "value", "values"), p->nres,
                        kind_word(p->nres, "result", "results"));
  for (int i = 0; i < n; i++) {
    const ir_value *v = g->outputs[i];
    if (!ir_type_equal(&p->res[i], &v->type))
      return ir_lex_error(
          p, p->out_pos[i],
          "result %d of the graph is declared as %s but mo.output returns %%%s of type %s", i,
          type_str(&p->res[i], a, sizeof a), v->name, type_str(&v->type, b, sizeof b));
  }
  return 0;
}

/* argument_names / result_names from the graph's attribute dictionary. */
static int graph_names(parser *p, const attr_at *aa, int count, const char *what,
                       const char **dst) {
  const ir_attr *a = &aa->a;
  int n = a->kind == IR_ATTR_STRINGS                    ? a->u.strings.n
          : a->kind == IR_ATTR_INTS && a->u.ints.n == 0 ? 0
                                                        : -1;
  if (n < 0) return ir_lex_error(p, aa->at, "%s must be a list of strings", a->name);
  if (n != count)
    return ir_lex_error(p, aa->at, "%s has %d %s but the graph has %d %s", a->name, n,
                        kind_word(n, "entry", "entries"), count, what);
  for (int i = 0; i < n; i++) dst[i] = a->u.strings.v[i][0] ? a->u.strings.v[i] : NULL;
  return 0;
}

static ir_graph *parse_graph(parser *p) {
  if (!ir_lex_accept_lit(p, "mo.graph")) {
    ir_lex_expected(p, "'mo.graph'");
    return NULL;
  }
  ir_lex_skip(p);
  if (lex_at(p, p->pos) != '@') {
    ir_lex_expected(p, "a graph name '@...'");
    return NULL;
  }
  size_t nb = ++p->pos;
  while (is_value_char(lex_at(p, p->pos))) p->pos++;
  if (p->pos == nb) {
    ir_lex_error(p, nb - 1, "expected a graph name after '@'");
    return NULL;
  }
  char *gname = malloc(p->pos - nb + 1);
  if (!gname) {
    ir_lex_oom(p);
    return NULL;
  }
  memcpy(gname, p->s + nb, p->pos - nb);
  gname[p->pos - nb] = 0;
  p->g = ir_graph_new(gname);
  free(gname);
  if (!p->g) {
    ir_lex_oom(p);
    return NULL;
  }
  ir_graph *g = p->g;
  /* symbols */
  if (ir_lex_accept(p, '<')) {
    g->syms_declared = true;
    if (!ir_lex_accept(p, '>')) {
      for (;;) {
        const char *s;
        size_t len, w = (ir_lex_skip(p), p->pos);
        if (!ir_lex_ident(p, &s, &len, &w) || memchr(s, '.', len) || memchr(s, '$', len)) {
          p->pos = w;
          ir_lex_expected(p, "a symbol name");
          return NULL;
        }
        int pl = (int)(len > 64 ? 64 : len);
        if (lit_eq(s, len, "floordiv") || lit_eq(s, len, "ceildiv") || lit_eq(s, len, "mod")) {
          ir_lex_error(p, w, "'%.*s' is a reserved word, not a symbol name", pl, s);
          return NULL;
        }
        if (ir_graph_symbol(g, s, len, false) >= 0) {
          ir_lex_error(p, w, "symbol '%.*s' is declared twice", pl, s);
          return NULL;
        }
        if (ir_graph_symbol(g, s, len, true) < 0) {
          ir_lex_oom(p);
          return NULL;
        }
        if (ir_lex_accept(p, ',')) continue;
        if (ir_lex_expect(p, '>')) return NULL;
        break;
      }
    }
  }
  /* arguments */
  if (ir_lex_expect(p, '(')) return NULL;
  if (!ir_lex_accept(p, ')')) {
    for (;;) {
      const char *s;
      size_t len, where;
      ir_type t;
      if (value_name(p, &s, &len, &where)) return NULL;
      p->names.n = 0;
      if (define_name(p, s, len, where)) return NULL;
      if (ir_lex_expect(p, ':') || parse_type(p, &t)) return NULL;
      ir_value *v = ir_graph_add_input(g, ((name_ref *)p->names.p)[0].s, &t);
      if (!v) {
        ir_lex_oom(p);
        return NULL;
      }
      if (add_value(p, v)) return NULL;
      if (ir_lex_accept(p, ',')) continue;
      if (ir_lex_expect(p, ')')) return NULL;
      break;
    }
  }
  /* results */
  if (ir_lex_accept_lit(p, "->")) {
    vec *v = &p->out_types;
    v->n = 0;
    if (parse_type_list(p, v, ir_lex_peek(p) == '(')) return NULL;
    p->nres = (int)v->n;
    p->res = ir_arena_memdup(g->arena, v->p, v->n * sizeof(ir_type));
    if (!p->res) {
      ir_lex_oom(p);
      return NULL;
    }
  }
  /* graph attributes: kept until the outputs exist */
  attr_at *gattrs = NULL;
  int ngattrs = 0;
  if (ir_lex_accept_lit(p, "attributes")) {
    if (ir_lex_attr_dict(p)) return NULL;
    ngattrs = (int)p->attrs.n;
    gattrs = ir_arena_memdup(g->arena, p->attrs.p, p->attrs.n * sizeof *gattrs);
    if (!gattrs) {
      ir_lex_oom(p);
      return NULL;
    }
    for (int i = 0; i < ngattrs; i++) {
      const char *an = gattrs[i].a.name;
      if (strcmp(an, "argument_names") == 0) {
        if (graph_names(p, &gattrs[i], g->ninputs, kind_word(g->ninputs, "argument", "arguments"),
                        g->input_names))
          return NULL;
      } else if (strcmp(an, "_kernel_library_paths") == 0) { /* MAX prints it */
        const ir_attr *a = &gattrs[i].a;
        if (a->kind != IR_ATTR_INTS || a->u.ints.n != 0) {
          ir_lex_error(p, gattrs[i].vat,
                       "_kernel_library_paths must be empty: kiln does not load MAX kernel "
                       "libraries (custom ops come from kiln kernel libraries, mo.custom)");
          return NULL;
        }
      } else if (strcmp(an, "result_names") != 0) {
        ir_lex_error(p, gattrs[i].at,
                     "unknown graph attribute '%s' (expected argument_names or result_names)", an);
        return NULL;
      }
    }
  }
  /* body */
  if (ir_lex_expect(p, '{')) return NULL;
  bool have_output = false;
  for (;;) {
    int c = ir_lex_peek(p);
    if (c < 0) {
      ir_lex_expected(p, "'}'");
      return NULL;
    }
    if (c == '}') {
      if (!have_output) {
        ir_lex_error(p, p->pos, "graph @%s has no mo.output", g->name);
        return NULL;
      }
      p->pos++;
      break;
    }
    if (have_output) {
      ir_lex_error(p, p->pos, "mo.output must be the last operation of the graph");
      return NULL;
    }
    size_t w = p->pos;
    if (c == '%') {
      if (parse_op(p)) return NULL;
    } else if (ir_lex_accept_lit(p, "mo.output")) {
      if (parse_output(p, w)) return NULL;
      have_output = true;
    } else {
      ir_lex_expected(p, "an operation '%... = mo.<op>', 'mo.output' or '}'");
      return NULL;
    }
  }
  /* MAX prints the module's attributes after the graph ({counter = 104 : i64}) */
  if (ir_lex_peek(p) == '{' && ir_lex_max_dict(p, '{')) return NULL;
  if (p->absorbed.n && ir_max_drop_absorbed(p)) return NULL;
  for (int i = 0; i < ngattrs; i++)
    if (strcmp(gattrs[i].a.name, "result_names") == 0 &&
        graph_names(p, &gattrs[i], g->noutputs, kind_word(g->noutputs, "result", "results"),
                    g->output_names))
      return NULL;
  return g;
}

static void parser_free(parser *p) {
  vec *vs[] = {&p->names, &p->uses,       &p->use_at,       &p->in_types,
               &p->out_types, &p->attrs, &p->list, &p->toks,
               &p->flat_attrs, &p->result_names, &p->absorbed, &p->captures};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) free(vs[i]->p);
  free(p->tab);
}

void ir_parse_free_parser(parser *p) { parser_free(p); }

static void parser_init(parser *p, ir_graph *g, const char *text, size_t len, ir_diag *d,
                        ir_diag *local) {
  memset(p, 0, sizeof *p);
  p->g = g;
  p->d = d ? d : local;
  memset(p->d, 0, sizeof *p->d);
  p->s = text ? text : "";
  p->n = text ? len : 0;
}

int ir_parse_attrs(ir_graph *g, const char *text, size_t len, ir_attr **out, int *n, ir_diag *d) {
  ir_diag local;
  parser p;
  parser_init(&p, g, text, len, d, &local);
  *out = NULL;
  *n = 0;
  int rc = -1;
  if (ir_lex_peek(&p) >= 0 && ir_lex_attr_dict(&p)) goto done;
  if (ir_lex_peek(&p) >= 0) {
    ir_lex_expected(&p, "end of the attributes");
    goto done;
  }
  *out = ir_arena_alloc(g->arena, (p.attrs.n ? p.attrs.n : 1) * sizeof **out);
  if (!*out) {
    ir_lex_oom(&p);
    goto done;
  }
  for (size_t i = 0; i < p.attrs.n; i++) (*out)[i] = ((attr_at *)p.attrs.p)[i].a;
  *n = (int)p.attrs.n;
  rc = 0;
done:
  parser_free(&p);
  return rc;
}

int ir_parse_type(ir_graph *g, const char *text, size_t len, ir_type *out, ir_diag *d) {
  ir_diag local;
  parser p;
  parser_init(&p, g, text, len, d, &local);
  int rc = parse_type(&p, out);
  if (rc == 0 && ir_lex_peek(&p) >= 0) rc = ir_lex_expected(&p, "end of the type");
  parser_free(&p);
  return rc;
}

static ir_graph *parse_text(const char *text, size_t len, ir_diag *d, bool runtime_attrs) {
  ir_diag local;
  parser p;
  parser_init(&p, NULL, text, len, d, &local);
  p.runtime_attrs = runtime_attrs;
  p.d->rule = false;
  ir_graph *g = parse_graph(&p);
  /* the module's subgraphs follow its main graph (control.h) */
  while (g && (ir_lex_skip(&p), ir_lex_peek(&p) == 'm')) {
    size_t at = p.pos;
    ir_graph *s = parse_nested(&p, NULL);
    if (!s) {
      g = NULL;
      break;
    }
    if (strcmp(s->name, g->name) == 0 || ir_module_find(g, s->name)) {
      p.failed = false;
      ir_lex_error(&p, at, "the module already has a graph named @%s", s->name);
      ir_graph_free(s);
      g = NULL;
      break;
    }
    if (ir_module_add_subgraph(g, s, p.d)) g = NULL;
  }
  if (g && (ir_lex_skip(&p), p.pos < p.n)) {
    ir_lex_expected(&p, "end of input after the graph");
    g = NULL;
  }
  if (g && (ir_graph_verify(g, p.d) != 0 || check_signature(&p) != 0 ||
            ir_module_verify(g, p.d) != 0)) {
    if (p.d) p.d->rule = true;
    g = NULL;
  }
  if (!g) ir_graph_free(p.g);
  parser_free(&p);
  return g;
}

ir_graph *ir_parse(const char *text, size_t len, ir_diag *d) {
  return parse_text(text, len, d, false);
}

ir_graph *ir_parse_kernel_text(const char *text, size_t len, ir_diag *d) {
  return parse_text(text, len, d, true);
}
