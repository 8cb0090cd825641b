/* gtext.c - the MO text builder of gtext.h.
 *
 * Keeps every value's dtype and shape text so op lines can spell their
 * operand types; prints the graph in the explicit "(operands) -> results"
 * form, which the parser accepts for every op. A failed allocation or an
 * invalid value index marks the builder broken: gt_finish then returns NULL
 * (the test reports it), nothing aborts. */
#include "gtext.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gt_value {
  char *name;  /* with '%' */
  char *dtype;
  char *shape;
} gt_value;

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool oom;
} sbuf;

struct gt {
  char *name;
  char *syms;
  gt_value *vals;
  int nvals, capvals;
  int *inputs; /* value indices */
  int ninputs, capinputs;
  oracle_gen gens[ORACLE_MAX_INPUTS];
  int *outputs;
  int noutputs, capoutputs;
  sbuf body;
  char *text;
  bool broken;
  int nextv;
};

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap) {
  if (b->oom) return;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) {
    b->oom = true;
    return;
  }
  if (b->len + (size_t)n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + (size_t)n + 1) nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

gt *gt_new(const char *name, const char *syms) {
  gt *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->name = xstrdup(name ? name : "t");
  t->syms = xstrdup(syms ? syms : "");
  if (!t->name || !t->syms) t->broken = true;
  return t;
}

void gt_free(gt *t) {
  if (!t) return;
  for (int i = 0; i < t->nvals; i++) {
    free(t->vals[i].name);
    free(t->vals[i].dtype);
    free(t->vals[i].shape);
  }
  free(t->vals);
  free(t->inputs);
  free(t->outputs);
  free(t->body.p);
  free(t->text);
  free(t->name);
  free(t->syms);
  free(t);
}

static bool grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int nc = *cap ? *cap * 2 : 8;
  while (nc < need) nc *= 2;
  void *np = realloc(*p, (size_t)nc * elem);
  if (!np) return false;
  *p = np;
  *cap = nc;
  return true;
}

static int new_value(gt *t, const char *name, const char *dtype, const char *shape) {
  if (t->broken) return -1;
  if (!grow((void **)&t->vals, &t->capvals, t->nvals + 1, sizeof(gt_value))) {
    t->broken = true;
    return -1;
  }
  gt_value *v = &t->vals[t->nvals];
  v->name = xstrdup(name);
  v->dtype = xstrdup(dtype);
  v->shape = xstrdup(shape ? shape : "");
  if (!v->name || !v->dtype || !v->shape) {
    free(v->name);
    free(v->dtype);
    free(v->shape);
    t->broken = true;
    return -1;
  }
  return t->nvals++;
}

static bool valid(gt *t, int v) {
  if (v < 0 || v >= t->nvals) {
    t->broken = true;
    return false;
  }
  return true;
}

static void print_type(sbuf *b, const char *dtype, const char *shape) {
  sb_printf(b, "!mo.tensor<[%s], %s>", shape, dtype);
}

int gt_in_gen(gt *t, const char *dtype, const char *shape, oracle_gen g) {
  if (!t || t->broken) return -1;
  if (t->ninputs >= ORACLE_MAX_INPUTS) {
    t->broken = true;
    return -1;
  }
  char name[32];
  snprintf(name, sizeof name, "%%x%d", t->ninputs);
  int v = new_value(t, name, dtype, shape);
  if (v < 0) return -1;
  if (!grow((void **)&t->inputs, &t->capinputs, t->ninputs + 1, sizeof(int))) {
    t->broken = true;
    return -1;
  }
  t->gens[t->ninputs] = g;
  t->inputs[t->ninputs++] = v;
  return v;
}

int gt_in(gt *t, const char *dtype, const char *shape) {
  oracle_gen g = {0};
  return gt_in_gen(t, dtype, shape, g);
}

static int fresh(gt *t, const char *dtype, const char *shape) {
  char name[32];
  snprintf(name, sizeof name, "%%v%d", t->nextv++);
  return new_value(t, name, dtype, shape);
}

int gt_weight(gt *t, const char *name, const char *dtype, const char *shape) {
  if (!t || t->broken) return -1;
  int v = fresh(t, dtype, shape);
  if (v < 0) return -1;
  sb_printf(&t->body, "  %s = mo.constant.external {name = \"%s\"} : ", t->vals[v].name, name);
  print_type(&t->body, dtype, shape);
  sb_printf(&t->body, "\n");
  return v;
}

int gt_const(gt *t, const char *dtype, const char *shape, const char *values) {
  if (!t || t->broken) return -1;
  int v = fresh(t, dtype, shape);
  if (v < 0) return -1;
  /* dense type: "2, 3" -> tensor<2x3xf32>; "" -> tensor<f32> */
  sb_printf(&t->body, "  %s = mo.constant {value = #M.dense_array<%s> : tensor<", t->vals[v].name,
            values);
  for (const char *p = shape; *p; p++) {
    if (*p == ' ') continue;
    sb_printf(&t->body, "%c", *p == ',' ? 'x' : *p);
  }
  sb_printf(&t->body, "%s%s>} : ", shape[0] ? "x" : "", dtype);
  print_type(&t->body, dtype, shape);
  sb_printf(&t->body, "\n");
  return v;
}

int gt_opn(gt *t, const char *op, const char *attrs, const int *ins, int nin, int nres,
           const char *const *dtypes, const char *const *shapes) {
  if (!t || t->broken || nres < 1) return -1;
  for (int i = 0; i < nin; i++)
    if (!valid(t, ins[i])) return -1;
  int first = -1;
  for (int r = 0; r < nres; r++) {
    int v = fresh(t, dtypes[r], shapes[r]);
    if (v < 0) return -1;
    if (r == 0) first = v;
  }
  sb_printf(&t->body, "  ");
  for (int r = 0; r < nres; r++) sb_printf(&t->body, "%s%s", r ? ", " : "", t->vals[first + r].name);
  sb_printf(&t->body, " = %s(", op);
  for (int i = 0; i < nin; i++) sb_printf(&t->body, "%s%s", i ? ", " : "", t->vals[ins[i]].name);
  sb_printf(&t->body, ")");
  if (attrs && attrs[0]) sb_printf(&t->body, " %s", attrs);
  sb_printf(&t->body, " : (");
  for (int i = 0; i < nin; i++) {
    if (i) sb_printf(&t->body, ", ");
    print_type(&t->body, t->vals[ins[i]].dtype, t->vals[ins[i]].shape);
  }
  sb_printf(&t->body, ") -> ");
  if (nres > 1) sb_printf(&t->body, "(");
  for (int r = 0; r < nres; r++) {
    if (r) sb_printf(&t->body, ", ");
    print_type(&t->body, dtypes[r], shapes[r]);
  }
  if (nres > 1) sb_printf(&t->body, ")");
  sb_printf(&t->body, "\n");
  return first;
}

int gt_op(gt *t, const char *op, const char *attrs, const int *ins, int nin, const char *dtype,
          const char *shape) {
  const char *d[1] = {dtype};
  const char *s[1] = {shape};
  return gt_opn(t, op, attrs, ins, nin, 1, d, s);
}

int gt_op1(gt *t, const char *op, const char *attrs, int a, const char *dtype, const char *shape) {
  int ins[1] = {a};
  return gt_op(t, op, attrs, ins, 1, dtype, shape);
}

int gt_op2(gt *t, const char *op, const char *attrs, int a, int b, const char *dtype,
           const char *shape) {
  int ins[2] = {a, b};
  return gt_op(t, op, attrs, ins, 2, dtype, shape);
}

void gt_out(gt *t, int v) {
  if (!t || t->broken || !valid(t, v)) return;
  if (!grow((void **)&t->outputs, &t->capoutputs, t->noutputs + 1, sizeof(int))) {
    t->broken = true;
    return;
  }
  t->outputs[t->noutputs++] = v;
}

const char *gt_dtype(const gt *t, int v) {
  return t && v >= 0 && v < t->nvals ? t->vals[v].dtype : "?";
}

const char *gt_shape(const gt *t, int v) {
  return t && v >= 0 && v < t->nvals ? t->vals[v].shape : "?";
}

const char *gt_finish(gt *t) {
  if (!t || t->broken || t->body.oom || t->noutputs == 0) return NULL;
  if (t->text) return t->text;
  sbuf b = {0};
  sb_printf(&b, "mo.graph @%s", t->name);
  if (t->syms[0]) sb_printf(&b, "<%s>", t->syms);
  sb_printf(&b, "(");
  for (int i = 0; i < t->ninputs; i++) {
    gt_value *v = &t->vals[t->inputs[i]];
    sb_printf(&b, "%s%s: ", i ? ", " : "", v->name);
    print_type(&b, v->dtype, v->shape);
  }
  sb_printf(&b, ") -> (");
  for (int i = 0; i < t->noutputs; i++) {
    gt_value *v = &t->vals[t->outputs[i]];
    if (i) sb_printf(&b, ", ");
    print_type(&b, v->dtype, v->shape);
  }
  sb_printf(&b, ") {\n%s  mo.output ", t->body.p ? t->body.p : "");
  for (int i = 0; i < t->noutputs; i++)
    sb_printf(&b, "%s%s", i ? ", " : "", t->vals[t->outputs[i]].name);
  sb_printf(&b, " : ");
  for (int i = 0; i < t->noutputs; i++) {
    gt_value *v = &t->vals[t->outputs[i]];
    if (i) sb_printf(&b, ", ");
    print_type(&b, v->dtype, v->shape);
  }
  sb_printf(&b, "\n}\n");
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  t->text = b.p;
  return t->text;
}

const oracle_gen *gt_gens(const gt *t, int *n) {
  *n = t ? t->ninputs : 0;
  return t ? t->gens : NULL;
}
