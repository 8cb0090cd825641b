/* parse_capture.c - mo.if branches that name values of the graphs enclosing
 * them (MAX writes cond branches as closures, without inputs), lifted while
 * parsing (control.h): each value a branch names becomes an input of it, with
 * its dims re-read in the branch's symbols, and, once every branch is
 * parsed, an operand of the mo.if; every branch then takes all of them, in
 * the order the branches first named them. A branch nested in a branch
 * captures through the one around it. Assumes the parser's value table
 * (parse.c) and a mo.if whose regions are not yet given to the node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_lex.h"

/* Symbols of a captured value's dims: the branch's own, by name (made when
 * the branch has none of that name, even with a declared list). */
static int capture_sym(void *ud, const char *name, size_t len, ir_dim_err *err) {
  parser *p = ud;
  int idx = ir_graph_symbol(p->g, name, len, true);
  if (idx < 0) snprintf(err->msg, sizeof err->msg, "out of memory");
  return idx;
}

/* ov (a value of the graph enclosing branch p) as an input of the branch,
 * named like it: its dims re-read with the branch's symbols. NULL on out of
 * memory. */
static ir_value *capture_value(parser *p, ir_value *ov) {
  ir_type t = ov->type;
  const ir_dim *dims[IR_MAX_RANK]; /* ov's own dims stay untouched */
  t.dims = t.rank > 0 ? dims : NULL;
  for (int a = 0; a < t.rank && a < IR_MAX_RANK; a++) {
    char buf[256];
    size_t len = ir_dim_print(ov->type.dims[a], buf, sizeof buf), used = 0;
    ir_dim_err err = {0};
    if (len >= sizeof buf) return NULL;
    t.dims[a] = ir_dim_parse(p->g->arena, buf, len, &used, capture_sym, p, &err);
    if (!t.dims[a]) return NULL;
  }
  ir_value *v = ir_graph_add_input(p->g, ov->name, &t);
  ir_value **slot = ir_lex_push(&p->captures, sizeof *slot);
  if (!v || !slot || ir_parse_add_value(p, v)) return NULL;
  *slot = ov;
  return v;
}

ir_value *ir_parse_capture(parser *p, const char *s, size_t len, size_t where) {
  ir_value *ov = ir_parse_find_value(p->outer, s, len);
  if (!ov && p->outer->outer) ov = ir_parse_capture(p->outer, s, len, where);
  if (!ov) return NULL;
  if (ov->type.kind != IR_TYPE_TENSOR) {
    ir_lex_error(p, where, "a mo.if branch reads %%%s, a %s of the enclosing graph: a branch "
                 "takes tensors only (load the buffer outside the mo.if)", ov->name,
                 ov->type.kind == IR_TYPE_CHAIN ? "!mo.chain" : "!mo.buffer");
    return NULL;
  }
  ir_value *v = capture_value(p, ov);
  if (!v) ir_lex_oom(p);
  return v;
}

int ir_parse_lift_captures(parser *p, ir_node *n, ir_graph **r, vec *caps, int nr) {
  vec all = {0};
  int rc = -1;
  for (int k = 0; k < nr; k++)
    for (size_t i = 0; i < caps[k].n; i++) {
      ir_value *v = ((ir_value **)caps[k].p)[i];
      size_t j = 0;
      while (j < all.n && ((ir_value **)all.p)[j] != v) j++;
      ir_value **slot = j == all.n ? ir_lex_push(&all, sizeof *slot) : &((ir_value **)all.p)[j];
      if (!slot) goto done;
      *slot = v;
    }
  if (all.n == 0) return 0;
  ir_value **in = ir_arena_alloc(p->g->arena, ((size_t)n->nin + all.n) * sizeof *in);
  if (!in) goto done;
  memcpy(in, n->in, (size_t)n->nin * sizeof *in);
  memcpy(in + n->nin, all.p, all.n * sizeof *in);
  for (int k = 0; k < nr; k++) {
    parser sub = {.g = r[k]}; /* for capture_value only: the branch's arena and symbols */
    int declared = r[k]->ninputs - (int)caps[k].n;
    ir_value **own = malloc((caps[k].n + 1) * sizeof *own);
    if (!own) goto done;
    memcpy(own, r[k]->inputs + declared, caps[k].n * sizeof *own);
    r[k]->ninputs = declared;
    for (size_t j = 0; j < all.n; j++) { /* the common order: own inputs, or new ones */
      ir_value *ov = ((ir_value **)all.p)[j], *v = NULL;
      for (size_t i = 0; i < caps[k].n && !v; i++)
        if (((ir_value **)caps[k].p)[i] == ov) v = own[i];
      if (v) {
        v->index = r[k]->ninputs;
        r[k]->inputs[r[k]->ninputs++] = v;
      } else if (!capture_value(&sub, ov)) {
        free(own);
        ir_parse_free_parser(&sub);
        goto done;
      }
    }
    free(own);
    ir_parse_free_parser(&sub);
  }
  n->in = in;
  n->nin += (int)all.n;
  rc = 0;
done:
  free(all.p);
  return rc;
}
