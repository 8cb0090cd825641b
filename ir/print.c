/* print.c - ir_graph -> canonical MO text (ir_print, ir_type_print).
 *
 * Canonical form (what ir_parse reads back to an identical printing):
 *   mo.graph @name<sym, ...>(%x: T, ...) -> (T, ...) attributes {argument_names = [...],
 *   result_names = [...]} {
 *     %r = mo.op(%a, %b) {attr = v, ...} : T                    one result, every operand of type T
 *     %c = mo.constant {value = ...} : T                          no operands
 *     %a, %b = mo.split(%x) {...} : (T1) -> (T2, T3)             otherwise
 *     mo.output %r, ... : T, ...
 *   }
 * The symbol list is printed whenever the graph has symbols (in index order,
 * so reparsing gives the same indices); `attributes` only for a list with at
 * least one name (a missing name prints as ""). Two-space indent, attributes in
 * the nodes' (sorted) order, dims through ir_dim_print.
 * Numbers: ints in decimal; floats in the shortest decimal that reads back to
 * the same bits (always with a '.' or an exponent: 3.0, 1.0e-5), nan, inf,
 * -inf; dense f32 / f64 NaNs other than the default quiet NaN as hex bit
 * patterns (0xFFC00000); dense f16, bf16 and f8 values always as hex bit
 * patterns (0x3C00); bool as true / false.
 *
 * A mo.fused node (internal, made by ir_graph_fuse) prints its body after it
 * as `//` comment lines; such text does not load (the verifier rejects
 * mo.fused in text), it is for reading.
 * Assumes: a well-formed graph (types with rank >= 0; a rank -1 type, not yet
 * inferred, prints as `!mo.tensor<?, f32>`, which does not parse).
 * Guarantees: output does not depend on memory addresses; NULL only on OOM. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* A text sink: grows a malloc'd buffer, or fills a fixed one (dropping what
 * does not fit). len always counts the full text. */
typedef struct sink {
  char *buf;
  size_t len, cap;
  bool fixed, oom;
} sink;

static void put(sink *o, const char *s, size_t n) {
  if (!o->fixed && !o->oom && o->len + n + 1 > o->cap) {
    size_t ncap = o->cap ? o->cap : 256;
    while (ncap < o->len + n + 1) ncap *= 2;
    char *nb = realloc(o->buf, ncap);
    if (!nb) {
      o->oom = true;
    } else {
      o->buf = nb;
      o->cap = ncap;
    }
  }
  if (o->cap > o->len) {
    size_t room = o->cap - o->len - 1;
    memcpy(o->buf + o->len, s, n < room ? n : room);
  }
  o->len += n;
  if (o->cap) o->buf[o->len < o->cap ? o->len : o->cap - 1] = 0;
}

static void puts_(sink *o, const char *s) { put(o, s, strlen(s)); }

static void putf(sink *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(sink *o, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    put(o, tmp, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    o->oom = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  put(o, big, (size_t)n);
  free(big);
}

static void put_dim(sink *o, const ir_dim *d) {
  char tmp[128];
  size_t n = ir_dim_print(d, tmp, sizeof tmp);
  if (n < sizeof tmp) {
    put(o, tmp, n);
    return;
  }
  char *big = malloc(n + 1);
  if (!big) {
    o->oom = true;
    return;
  }
  ir_dim_print(d, big, n + 1);
  put(o, big, n);
  free(big);
}

static void put_type(sink *o, const ir_type *t) {
  if (t->kind == IR_TYPE_CHAIN) {
    puts_(o, "!mo.chain");
    return;
  }
  puts_(o, t->kind == IR_TYPE_BUFFER ? "!mo.buffer<" : "!mo.tensor<");
  if (t->rank < 0) {
    puts_(o, "?");
  } else {
    puts_(o, "[");
    for (int i = 0; i < t->rank; i++) {
      if (i) puts_(o, ", ");
      put_dim(o, t->dims[i]);
    }
    puts_(o, "]");
  }
  putf(o, ", %s", ir_dtype_name(t->dtype));
  if (t->device.kind != IR_DEV_CPU || t->device.id != 0)
    putf(o, ", %s:%d", t->device.kind == IR_DEV_GPU ? "gpu" : "cpu", t->device.id);
  puts_(o, ">");
}

size_t ir_type_print(const ir_type *t, char *buf, size_t cap) {
  sink o = {buf, 0, cap, true, false};
  if (cap) buf[0] = 0;
  put_type(&o, t);
  return o.len;
}

/* Shortest "%.*g" text that reads back to v (as a float when single), then
 * made to look like a float: "3" -> "3.0", "1e-05" -> "1.0e-5". */
static void fmt_real(char *out, size_t cap, double v, bool single) {
  if (isnan(v)) {
    snprintf(out, cap, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(out, cap, v < 0 ? "-inf" : "inf");
    return;
  }
  char tmp[48];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v) break;
  }
  char *e = strchr(tmp, 'e');
  char mant[48], ex[16] = "";
  size_t ml = e ? (size_t)(e - tmp) : strlen(tmp);
  memcpy(mant, tmp, ml);
  mant[ml] = 0;
  if (!strchr(mant, '.')) strcat(mant, ".0");
  if (e) { /* e-05 -> e-5, e+20 -> e20 */
    const char *q = e + 1;
    bool neg = *q == '-';
    if (*q == '-' || *q == '+') q++;
    while (*q == '0' && q[1]) q++;
    snprintf(ex, sizeof ex, "e%s%s", neg ? "-" : "", q);
  }
  snprintf(out, cap, "%s%s", mant, ex);
}

static void put_string(sink *o, const char *s) {
  puts_(o, "\"");
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '"' || *c == '\\') {
      char esc[2] = {'\\', (char)*c};
      put(o, esc, 2);
    } else if (*c == '\n') {
      puts_(o, "\\n");
    } else if (*c == '\t') {
      puts_(o, "\\t");
    } else if (*c < 0x20 || *c == 0x7f) {
      putf(o, "\\%02X", *c);
    } else {
      put(o, (const char *)c, 1);
    }
  }
  puts_(o, "\"");
}

static uint64_t get_le(const unsigned char *p, size_t size) {
  uint64_t v = 0;
  for (size_t k = 0; k < size; k++) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

static void put_dense_elem(sink *o, ir_dtype dt, const unsigned char *p) {
  size_t size = ir_dtype_size(dt);
  uint64_t b = get_le(p, size);
  char tmp[48];
  if (dt == IR_DT_BOOL) {
    puts_(o, b ? "true" : "false");
  } else if (ir_dtype_is_int(dt)) {
    if (ir_dtype_is_signed(dt)) {
      unsigned sh = 64 - 8 * (unsigned)size;
      putf(o, "%lld", (long long)((int64_t)(b << sh) >> sh));
    } else {
      putf(o, "%llu", (unsigned long long)b);
    }
  } else if (dt == IR_DT_F32) {
    float f;
    uint32_t u = (uint32_t)b;
    memcpy(&f, &u, 4);
    if (isnan(f) && u != 0x7FC00000u) {
      putf(o, "0x%08X", (unsigned)u);
    } else {
      fmt_real(tmp, sizeof tmp, f, true);
      puts_(o, tmp);
    }
  } else if (dt == IR_DT_F64) {
    double d;
    memcpy(&d, &b, 8);
    if (isnan(d) && b != 0x7FF8000000000000ull) {
      putf(o, "0x%016llX", (unsigned long long)b);
    } else {
      fmt_real(tmp, sizeof tmp, d, false);
      puts_(o, tmp);
    }
  } else {
    putf(o, "0x%0*llX", (int)size * 2, (unsigned long long)b);
  }
}

static void put_dense(sink *o, const ir_dense *d) {
  puts_(o, "#M.dense_array<");
  size_t esz = ir_dtype_size(d->dtype);
  for (int64_t i = 0; i < d->numel && d->data; i++) {
    if (i) puts_(o, ", ");
    put_dense_elem(o, d->dtype, (const unsigned char *)d->data + (size_t)i * esz);
  }
  puts_(o, "> : tensor<");
  for (int i = 0; i < d->rank; i++) putf(o, "%lldx", (long long)d->shape[i]);
  putf(o, "%s>", ir_dtype_name(d->dtype));
}

static void put_attr_value(sink *o, const ir_attr *a) {
  char tmp[48];
  switch (a->kind) {
  case IR_ATTR_INT: putf(o, "%lld", (long long)a->u.i); break;
  case IR_ATTR_FLOAT:
    fmt_real(tmp, sizeof tmp, a->u.f, false);
    puts_(o, tmp);
    break;
  case IR_ATTR_BOOL: puts_(o, a->u.b ? "true" : "false"); break;
  case IR_ATTR_STRING: put_string(o, a->u.s); break;
  case IR_ATTR_INTS:
    puts_(o, "[");
    for (int i = 0; i < a->u.ints.n; i++)
      putf(o, "%s%lld", i ? ", " : "", (long long)a->u.ints.v[i]);
    puts_(o, "]");
    break;
  case IR_ATTR_STRINGS:
    puts_(o, "[");
    for (int i = 0; i < a->u.strings.n; i++) {
      if (i) puts_(o, ", ");
      put_string(o, a->u.strings.v[i]);
    }
    puts_(o, "]");
    break;
  case IR_ATTR_DTYPE: puts_(o, ir_dtype_name(a->u.dtype)); break;
  case IR_ATTR_DENSE: put_dense(o, &a->u.dense); break;
  }
}

static void put_value(sink *o, const ir_value *v) {
  if (v->name)
    putf(o, "%%%s", v->name);
  else
    putf(o, "%%%d", v->id);
}

static bool any_name(const char *const *names, int n) {
  for (int i = 0; names && i < n; i++)
    if (names[i] && names[i][0]) return true;
  return false;
}

static void put_names(sink *o, const char *key, const char *const *names, int n) {
  putf(o, "%s = [", key);
  for (int i = 0; i < n; i++) {
    if (i) puts_(o, ", ");
    put_string(o, names[i] ? names[i] : "");
  }
  puts_(o, "]");
}

static void put_graph(sink *o, const ir_graph *g, int ind);

static void put_indent(sink *o, int ind) {
  for (int i = 0; i < ind; i++) puts_(o, " ");
}

/* A node at indent ind + 2 (its graph's header is at ind). */
static void put_node(sink *o, const ir_node *n, int ind) {
  put_indent(o, ind);
  puts_(o, "  ");
  for (int i = 0; i < n->nout; i++) {
    if (i) puts_(o, ", ");
    put_value(o, n->out[i]);
  }
  const ir_op_info *info = ir_op_get(n->op);
  putf(o, " = mo.%s", info ? info->name : "?");
  const char *callee = n->op == IR_OP_CALL ? ir_node_attr_string(n, "callee", NULL) : NULL;
  if (callee) putf(o, " @%s", callee);
  if (n->nin || callee) {
    puts_(o, "(");
    for (int i = 0; i < n->nin; i++) {
      if (i) puts_(o, ", ");
      put_value(o, n->in[i]);
    }
    puts_(o, ")");
  }
  if (n->nattrs > (callee ? 1 : 0)) {
    puts_(o, " {");
    for (int i = 0, k = 0; i < n->nattrs; i++) {
      if (callee && strcmp(n->attrs[i].name, "callee") == 0) continue;
      putf(o, "%s%s = ", k++ ? ", " : "", n->attrs[i].name);
      put_attr_value(o, &n->attrs[i]);
    }
    puts_(o, "}");
  }
  puts_(o, " : ");
  bool short_form = n->nout == 1;
  for (int i = 0; short_form && i < n->nin; i++)
    short_form = ir_type_equal(&n->in[i]->type, &n->out[0]->type);
  if (short_form) {
    put_type(o, &n->out[0]->type);
  } else {
    puts_(o, "(");
    for (int i = 0; i < n->nin; i++) {
      if (i) puts_(o, ", ");
      put_type(o, &n->in[i]->type);
    }
    puts_(o, ") -> ");
    if (n->nout != 1) puts_(o, "(");
    for (int i = 0; i < n->nout; i++) {
      if (i) puts_(o, ", ");
      put_type(o, &n->out[i]->type);
    }
    if (n->nout != 1) puts_(o, ")");
  }
  if (n->op == IR_OP_IF || n->op == IR_OP_WHILE) { /* regions (control.h) */
    puts_(o, " {\n");
    for (int i = 0; i < n->nregions; i++) put_graph(o, n->regions[i], ind + 4);
    put_indent(o, ind + 2);
    puts_(o, "}");
  }
  puts_(o, "\n");
  /* mo.fused (internal, never parsed back): its body as comment lines */
  if (n->body) {
    for (int i = 0; i < n->body->ninputs; i++) {
      putf(o, "  //   body input %d: ", i);
      put_value(o, n->body->inputs[i]);
      puts_(o, "\n");
    }
    for (int i = 0; i < n->body->nnodes; i++) {
      puts_(o, "  // ");
      put_node(o, n->body->nodes[i], 0);
    }
  }
}

/* Graph g with its header at indent ind. */
static void put_graph(sink *o, const ir_graph *g, int ind) {
  put_indent(o, ind);
  putf(o, "mo.graph @%s", g->name ? g->name : "graph");
  if (g->nsyms > 0) {
    puts_(o, "<");
    for (int i = 0; i < g->nsyms; i++) putf(o, "%s%s", i ? ", " : "", g->syms[i]);
    puts_(o, ">");
  }
  puts_(o, "(");
  for (int i = 0; i < g->ninputs; i++) {
    if (i) puts_(o, ", ");
    put_value(o, g->inputs[i]);
    puts_(o, ": ");
    put_type(o, &g->inputs[i]->type);
  }
  puts_(o, ") -> (");
  for (int i = 0; i < g->noutputs; i++) {
    if (i) puts_(o, ", ");
    put_type(o, &g->outputs[i]->type);
  }
  puts_(o, ")");
  bool in_names = any_name(g->input_names, g->ninputs);
  bool out_names = any_name(g->output_names, g->noutputs);
  if (in_names || out_names) {
    puts_(o, " attributes {");
    if (in_names) put_names(o, "argument_names", g->input_names, g->ninputs);
    if (in_names && out_names) puts_(o, ", ");
    if (out_names) put_names(o, "result_names", g->output_names, g->noutputs);
    puts_(o, "}");
  }
  puts_(o, " {\n");
  for (int i = 0; i < g->nnodes; i++) put_node(o, g->nodes[i], ind);
  put_indent(o, ind);
  puts_(o, "  mo.output");
  for (int i = 0; i < g->noutputs; i++) {
    puts_(o, i ? ", " : " ");
    put_value(o, g->outputs[i]);
  }
  for (int i = 0; i < g->noutputs; i++) {
    puts_(o, i ? ", " : " : ");
    put_type(o, &g->outputs[i]->type);
  }
  puts_(o, "\n");
  put_indent(o, ind);
  puts_(o, "}\n");
}

char *ir_print(const ir_graph *g) {
  sink o = {0};
  if (!g) return NULL;
  put_graph(&o, g, 0);
  for (int i = 0; i < g->nsubgraphs; i++) { /* the module's subgraphs (control.h) */
    puts_(&o, "\n");
    put_graph(&o, g->subgraphs[i], 0);
  }
  if (o.oom) {
    free(o.buf);
    return NULL;
  }
  return o.buf;
}
