/* loop.c - ONNX Loop and Scan as one mo.while (the layout is in loop.h):
 * the body imported once to learn which state dims change and what the
 * scan outputs' slices are, then again as the while's @body, and @cond. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"

/* A carried value in the parent's terms: where fresh[d], dim d is a fresh
 * symbol in the regions and the result (dims[d] is then the initial size). */
typedef struct carried {
  ir_dtype dtype;
  int rank;
  const ir_dim *dims[IR_MAX_RANK];
  bool fresh[IR_MAX_RANK];
  kiln_value *init;
} carried;

typedef struct build {
  ox *x;
  ox_loop *l;
  ox_names names;            /* the body's free names */
  int ncap;
  kiln_value **caps;         /* parent values of the free names passed in */
  bool final;                /* the second import: accumulators carried */
  int i_at, trip_at, cond_at, state_at, acc_at, seq_at, cap_at, n;
  carried *c;                /* n entries */
  carried *accs;             /* nacc entries, learned by the first import */
} build;

static void layout(build *b) {
  ox_loop *l = b->l;
  b->i_at = 0;
  b->trip_at = l->scan ? -1 : 1;
  b->cond_at = l->scan ? -1 : 2;
  b->state_at = l->scan ? 1 : 3;
  b->acc_at = b->state_at + l->nstate;
  b->seq_at = b->acc_at + (b->final ? l->nacc : 0);
  b->cap_at = b->seq_at + l->nseq;
  b->n = b->cap_at + b->ncap;
}

static void carried_of(carried *c, kiln_value *v) {
  const ir_type *t = ox_type(v);
  *c = (carried){.dtype = t->dtype, .rank = t->rank, .init = v};
  for (int d = 0; d < t->rank; d++) c->dims[d] = t->dims[d];
}

static kiln_value *region_input(ox_sub *s, const carried *c, const char *name) {
  ir_type t = {.dtype = c->dtype, .rank = c->rank, .dims = (const ir_dim **)c->dims};
  return ox_sub_input(s, name, &t, c->fresh);
}

kiln_value *ox_scalar_of(ox *x, kiln_value *v, const char *what) {
  const ir_type *t = ox_type(v);
  for (int d = 0; d < t->rank; d++) {
    int64_t k;
    if (!ir_dim_is_const(t->dims[d], &k) || k != 1) {
      ox_fail(x, KILN_ERR_VERIFY, "%s must hold one element (its dim %d is not 1)", what, d);
      return NULL;
    }
  }
  return t->rank == 0 ? v : ox_reshape(x, v, 0, NULL);
}

kiln_value *ox_scalar_input(ox *x, ox_val **in, int nin, int i, ir_dtype want,
                            const char *what, int *rc) {
  kiln_value *v = ox_in(x, in, nin, i, rc);
  if (!v) return NULL;
  if (ox_type(v)->dtype != want) {
    *rc = ox_fail(x, KILN_ERR_VERIFY, "%s is %s, not %s", what, ir_dtype_name(ox_type(v)->dtype),
                  ir_dtype_name(want));
    return NULL;
  }
  if (!(v = ox_scalar_of(x, v, what))) *rc = -1;
  return v;
}

/* The length of seq along axis as a si64 scalar of the region. */
static kiln_value *seq_len(ox *x, kiln_value *seq, int axis) {
  int64_t k;
  if (ir_dim_is_const(ox_dim(seq, axis), &k)) return ox_scalar(x, IR_DT_SI64, (double)k);
  kiln_value *shape = OP1("shape_to_tensor", seq), *at = ox_scalar(x, IR_DT_SI64, axis);
  if (!shape || !at) return NULL;
  return ox_op(x, "gather", (kiln_value *[]){shape, at}, 2, NULL, "{axis = 0}");
}

static const char *input_name(const Onnx__GraphProto *g, size_t i) {
  return i < g->n_input && g->input[i]->name && *g->input[i]->name ? g->input[i]->name : NULL;
}

/* Import the body into s with b's layout; bo[body->n_output] get the ONNX
 * body's outputs and in[b->n] the region's inputs. 0, -1 or 1. */
static int import_body(build *b, ox_sub *s, kiln_value **bo, kiln_value **in) {
  ox_loop *l = b->l;
  const Onnx__GraphProto *g = l->body;
  if (ox_sub_open(b->x, s, "body") < 0) return -1;
  ox *cx = &s->x;
  int rc = 0;
  for (int k = 0; k < b->cap_at; k++) {
    const char *name = NULL;
    if (k == b->i_at && !l->scan) name = input_name(g, 0);
    else if (k == b->cond_at) name = input_name(g, 1);
    else if (k >= b->state_at && k < b->acc_at)
      name = input_name(g, (size_t)(k - b->state_at + (l->scan ? 0 : 2)));
    if (!(in[k] = region_input(s, &b->c[k], name))) return -1;
  }
  int ncap = 0;
  if ((rc = ox_sub_captures(s, &b->names, NULL, in + b->cap_at, &ncap))) return rc;
  if (ncap != b->ncap) return ox_fail(b->x, KILN_ERR_VERIFY, "the captures changed");
  for (int m = 0; m < l->nseq; m++) { /* slice i (or L - 1 - i) of each scan input */
    kiln_value *seq = in[b->seq_at + m], *idx = in[b->i_at];
    if (l->seq_reverse[m]) {
      kiln_value *len = seq_len(cx, seq, l->seq_axis[m]), *one = ox_scalar(cx, IR_DT_SI64, 1);
      kiln_value *last = len && one ? ox_op(cx, "sub", (kiln_value *[]){len, one}, 2, NULL, NULL)
                                    : NULL;
      if (!last || !(idx = ox_op(cx, "sub", (kiln_value *[]){last, idx}, 2, NULL, NULL)))
        return -1;
    }
    ox_val *v = ox_new_val(cx, input_name(g, (size_t)(l->nstate + m)) ?
                                   input_name(g, (size_t)(l->nstate + m)) : "");
    if (!v || !(v->v = ox_op(cx, "gather", (kiln_value *[]){seq, idx}, 2, NULL, "{axis = %d}",
                             l->seq_axis[m])))
      return -1;
  }
  if ((rc = ox_sub_body(s, g))) return rc;
  for (size_t k = 0; k < g->n_output; k++)
    if (!(bo[k] = ox_sub_output(s, g, k, &rc))) return rc;
  return 0;
}

/* After the first import: which state dims change, and each scan output's
 * slice type (as the accumulator's carried entry). 0, -1 or 1. */
static int learn(build *b, ox_sub *s, kiln_value **bo, kiln_value **in) {
  ox_loop *l = b->l;
  int out0 = l->scan ? 0 : 1;
  for (int k = 0; k < l->nstate; k++) {
    const ir_type *ti = ox_type(in[b->state_at + k]), *to = ox_type(bo[out0 + k]);
    if (ti->dtype != to->dtype || ti->rank != to->rank)
      return ox_fail(b->x, KILN_ERR_VERIFY, "loop-carried value %d enters the body as %s of "
                     "rank %d and leaves it as %s of rank %d", k, ir_dtype_name(ti->dtype),
                     ti->rank, ir_dtype_name(to->dtype), to->rank);
    for (int d = 0; d < ti->rank; d++)
      b->c[b->state_at + k].fresh[d] |= !ir_dim_equal(ti->dims[d], to->dims[d]);
  }
  for (int j = 0; j < l->nacc; j++) {
    const ir_type *te = ox_type(bo[out0 + l->nstate + j]);
    if (te->rank + 1 > IR_MAX_RANK)
      return ox_unsupported(b->x, b->x->node, "scan output %d has rank %d: stacked, over %d", j,
                            te->rank, IR_MAX_RANK);
    int axis = 0;
    if (l->scan && !ox_axis(l->acc_axis_attr[j], te->rank + 1, &axis))
      return ox_fail(b->x, KILN_ERR_VERIFY, "scan_output_axes[%d] = %lld is out of range for "
                     "rank %d", j, (long long)l->acc_axis_attr[j], te->rank + 1);
    l->acc_axis[j] = axis;
    carried *c = &b->accs[j];
    *c = (carried){.dtype = te->dtype, .rank = te->rank + 1};
    for (int d = 0, e = 0; d < c->rank; d++) {
      if (d == axis) {
        c->dims[d] = ir_dim_const(b->x->ir->arena, 0);
        c->fresh[d] = true;
        continue;
      }
      const ir_dim *pd = ox_sub_dim_out(s, te->dims[e++]);
      if (!pd) {
        char t[128];
        ir_dim_print(te->dims[e - 1], t, sizeof t);
        return ox_unsupported(b->x, b->x->node, "scan output %d's dim %d (%s) is set inside "
                              "the body: kiln needs it in terms of the loop's inputs", j, e - 1,
                              t);
      }
      c->dims[d] = pd;
    }
  }
  return 0;
}

/* The second import's outputs: the next carried values. */
static int next_values(build *b, ox_sub *s, kiln_value **bo, kiln_value **in, kiln_value **nx) {
  ox_loop *l = b->l;
  ox *cx = &s->x;
  int out0 = l->scan ? 0 : 1;
  kiln_value *one = ox_scalar(cx, IR_DT_SI64, 1);
  if (!one || !(nx[b->i_at] = ox_op(cx, "add", (kiln_value *[]){in[b->i_at], one}, 2, NULL, NULL)))
    return -1;
  if (!l->scan) {
    nx[b->trip_at] = in[b->trip_at];
    if (ox_type(bo[0])->dtype != IR_DT_BOOL)
      return ox_fail(b->x, KILN_ERR_VERIFY, "the body's first output (the condition) is %s, not "
                     "bool", ir_dtype_name(ox_type(bo[0])->dtype));
    if (!(nx[b->cond_at] = ox_scalar_of(cx, bo[0], "the body's condition output"))) return -1;
  }
  for (int k = 0; k < l->nstate; k++) nx[b->state_at + k] = bo[out0 + k];
  for (int j = 0; j < l->nacc; j++) {
    kiln_value *acc = in[b->acc_at + j], *e = bo[out0 + l->nstate + j];
    const ir_type *ta = ox_type(acc), *te = ox_type(e);
    int a = l->acc_axis[j];
    bool same = te->dtype == ta->dtype && te->rank + 1 == ta->rank;
    for (int d = 0, k = 0; same && d < ta->rank; d++)
      if (d != a) same = ir_dim_equal(ta->dims[d], te->dims[k++]);
    if (!same)
      return ox_unsupported(b->x, b->x->node, "scan output %d's slices change shape from one "
                            "iteration to the next", j);
    kiln_value *u = ox_op(cx, "unsqueeze", &e, 1, NULL, "{axis = %d}", a);
    if (!u) return -1;
    kiln_value *pair[2] = {l->acc_reverse[j] ? u : acc, l->acc_reverse[j] ? acc : u};
    if (!(nx[b->acc_at + j] = ox_op(cx, "concat", pair, 2, NULL, "{axis = %d}", a))) return -1;
  }
  for (int k = b->seq_at; k < b->n; k++) nx[k] = in[k];
  return 0;
}

/* @cond on the carried values. */
static int import_cond(build *b, ox_sub *s) {
  ox_loop *l = b->l;
  if (ox_sub_open(b->x, s, "cond") < 0) return -1;
  ox *cx = &s->x;
  kiln_value *in[3 * OX_LOOP_MAX + 3] = {0};
  for (int k = 0; k < b->n; k++) {
    kiln_value *v = region_input(s, &b->c[k], NULL);
    if (!v) return -1;
    if (k < b->cap_at) in[k] = v;
  }
  kiln_value *lim = l->scan ? seq_len(cx, in[b->seq_at], l->seq_axis[0]) : in[b->trip_at];
  kiln_value *go = lim ? ox_op(cx, "greater", (kiln_value *[]){lim, in[b->i_at]}, 2, NULL, NULL)
                       : NULL;
  if (go && !l->scan && l->cond)
    go = ox_op(cx, "logical_and", (kiln_value *[]){go, in[b->cond_at]}, 2, NULL, NULL);
  if (!go) return -1;
  if (kiln_graph_set_outputs(cx->g, &go, 1, NULL, cx->st) < 0)
    return ox_fail(b->x, kiln_status_code(cx->st), "%s", kiln_status_message(cx->st));
  return 0;
}

static int add_while(build *b, ox_sub *cond, ox_sub *body, ox_val **out) {
  ox *x = b->x;
  ox_loop *l = b->l;
  kiln_value **ops = calloc((size_t)b->n, sizeof *ops);
  char (*types)[1024] = calloc((size_t)b->n, sizeof *types);
  const char **tp = calloc((size_t)b->n, sizeof *tp);
  int rc = -1;
  if (!ops || !types || !tp) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int k = 0; k < b->n; k++) {
    carried *c = &b->c[k];
    if (!(ops[k] = c->init)) { /* an accumulator: empty along its axis */
      kiln_value *zero = ox_scalar(x, c->dtype, 0);
      char ty[1024];
      if (!zero || !(ops[k] = ox_op(x, "broadcast_to", &zero, 1,
                                    ox_type_text(ty, sizeof ty, c->dtype, c->rank, c->dims), NULL)))
        goto done;
    }
    const ir_dim *dims[IR_MAX_RANK];
    for (int d = 0; d < c->rank; d++)
      if (!(dims[d] = c->fresh[d] ? ox_symbol(x, NULL) : c->dims[d])) goto done;
    tp[k] = ox_type_text(types[k], sizeof types[k], c->dtype, c->rank, dims);
  }
  kiln_graph *regions[2] = {cond->x.g, body->x.g};
  kiln_value *w = kiln_graph_add_region_op(x->g, "mo.while", ops, b->n, regions, 2, tp, b->n,
                                           x->st);
  if (!w) {
    ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
    goto done;
  }
  for (int k = 0; k < l->nstate; k++) out[k]->v = kiln_value_result(w, b->state_at + k);
  for (int j = 0; j < l->nacc; j++) out[l->nstate + j]->v = kiln_value_result(w, b->acc_at + j);
  rc = 0;
done:
  free(ops);
  free(types);
  free(tp);
  return rc;
}

static int build_loop(build *b, ox_val **out) {
  ox *x = b->x;
  ox_loop *l = b->l;
  size_t nbo = l->body->n_output;
  kiln_value **bo = calloc(nbo + 1, sizeof *bo);
  kiln_value **in = calloc((size_t)b->n + (size_t)l->nacc + 1, sizeof *in);
  kiln_value **nx = calloc((size_t)b->n + (size_t)l->nacc + 1, sizeof *nx);
  ox_sub first = {0}, body = {0}, cond = {0};
  int rc = -1;
  if (!bo || !in || !nx) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if ((rc = import_body(b, &first, bo, in)) || (rc = learn(b, &first, bo, in))) goto done;
  ox_sub_close(&first);
  /* the accumulators join the layout after the states */
  b->final = true;
  for (int k = l->nseq + b->ncap - 1; k >= 0; k--)
    b->c[b->seq_at + l->nacc + k] = b->c[b->seq_at + k];
  for (int j = 0; j < l->nacc; j++) b->c[b->acc_at + j] = b->accs[j];
  layout(b);
  if ((rc = import_body(b, &body, bo, in)) || (rc = next_values(b, &body, bo, in, nx))) goto done;
  if (kiln_graph_set_outputs(body.x.g, nx, b->n, NULL, x->st) < 0) {
    rc = ox_fail(x, kiln_status_code(x->st), "%s", kiln_status_message(x->st));
    goto done;
  }
  if ((rc = import_cond(b, &cond))) goto done;
  rc = add_while(b, &cond, &body, out);
done:
  ox_sub_close(&first);
  ox_sub_close(&body);
  ox_sub_close(&cond);
  free(bo);
  free(in);
  free(nx);
  return rc;
}

int ox_loop_build(ox *x, const Onnx__NodeProto *n, ox_loop *l, ox_val **out) {
  (void)n;
  build b = {.x = x, .l = l};
  const Onnx__GraphProto *g = l->body;
  if (ox_free_names(x, &g, 1, &b.names) < 0) return -1;
  int total = 3 + l->nstate + l->nacc + l->nseq + b.names.n;
  b.c = calloc((size_t)total, sizeof *b.c);
  int rc = -1;
  if (!b.c) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  b.ncap = 0;
  layout(&b);
  kiln_value *i0 = ox_scalar(x, IR_DT_SI64, 0);
  if (!i0) goto done;
  carried_of(&b.c[b.i_at], i0);
  if (!l->scan) {
    kiln_value *trip = l->trip ? l->trip : ox_scalar(x, IR_DT_SI64, 9223372036854774784.0);
    kiln_value *cond = l->cond ? l->cond : ox_scalar(x, IR_DT_BOOL, 1);
    if (!trip || !cond) goto done;
    carried_of(&b.c[b.trip_at], trip);
    carried_of(&b.c[b.cond_at], cond);
  }
  for (int k = 0; k < l->nstate; k++) carried_of(&b.c[b.state_at + k], l->state[k]);
  for (int m = 0; m < l->nseq; m++) carried_of(&b.c[b.seq_at + m], l->seq[m]);
  /* the captures' entries: the parent values the body's free names pass in */
  ox_sub probe = {0};
  b.caps = calloc((size_t)b.names.n + 1, sizeof *b.caps);
  b.accs = calloc((size_t)l->nacc + 1, sizeof *b.accs);
  if (!b.caps || !b.accs) {
    rt_err(x->st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (ox_sub_open(x, &probe, "captures") < 0) goto done;
  rc = ox_sub_captures(&probe, &b.names, b.caps, NULL, &b.ncap);
  ox_sub_close(&probe);
  if (rc) goto done;
  layout(&b);
  for (int k = 0; k < b.ncap; k++) carried_of(&b.c[b.cap_at + k], b.caps[k]);
  rc = build_loop(&b, out);
done:
  free(b.c);
  free(b.caps);
  free(b.accs);
  ox_names_free(&b.names);
  return rc;
}
