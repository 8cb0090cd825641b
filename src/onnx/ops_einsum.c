/* ops_einsum.c - ONNX's Einsum on one or two operands, as kiln's sum,
 * permute, reshape and matmul.
 *
 * The equation's letters are sorted by where they occur: a letter of one
 * operand only and not of the output is summed out first; a letter of both
 * operands and the output is a batch axis, of both but not the output a
 * contracted one, of one operand and the output a free one. Two operands
 * become one batched matmul, A permuted to [batch, freeA, contracted] and B
 * to [batch, contracted, freeB], each group flattened to one axis; the
 * product is unflattened and permuted to the output's order. An implicit
 * output ("ij,jk") is the letters that occur once, in alphabetical order.
 * Not built (refused by name): a letter repeated within one term (a
 * diagonal), an ellipsis, more than two operands, and batch axes whose
 * sizes differ (broadcasting). */
#include <stdio.h>
#include <string.h>

#include "ox.h"

#define MAXL 16 /* letters per term: kiln's rank bound */

typedef struct term {
  char l[MAXL + 1];
  int n;
} term;

/* Parse one term (letters only) from s[0..len); false when it is not one. */
static bool parse_term(const char *s, size_t len, term *t, const char **why) {
  t->n = 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == ' ') continue;
    if (c == '.') return *why = "an ellipsis (...)", false;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return *why = "a character that is not a letter", false;
    if (memchr(t->l, c, (size_t)t->n))
      return *why = "a letter repeated within one term (a diagonal)", false;
    if (t->n == MAXL) return *why = "more letters than kiln's rank bound", false;
    t->l[t->n++] = c;
    t->l[t->n] = 0;
  }
  return true;
}

static int pos_of(const term *t, char c) {
  for (int i = 0; i < t->n; i++)
    if (t->l[i] == c) return i;
  return -1;
}

/* Sum v over the axes of t whose letters keep() rejects; t follows v. */
static kiln_value *sum_out(ox *x, kiln_value *v, term *t, const term *a, const term *b) {
  for (int i = t->n - 1; v && i >= 0; i--) {
    char c = t->l[i];
    if (pos_of(a, c) >= 0 || (b && pos_of(b, c) >= 0)) continue;
    if (!(v = ox_op(x, "sum", &v, 1, NULL, "{axis = %d}", i)) ||
        !(v = ox_op(x, "squeeze", &v, 1, NULL, "{axis = %d}", i)))
      return NULL;
    memmove(t->l + i, t->l + i + 1, (size_t)(t->n - i));
    t->n--;
  }
  return v;
}

/* v (letters `from`) permuted to the order of `to` (the same letters). */
static kiln_value *permute_to(ox *x, kiln_value *v, const term *from, const term *to) {
  char dims[128];
  int at = 0;
  bool same = true;
  for (int i = 0; i < to->n; i++) {
    int p = pos_of(from, to->l[i]);
    same = same && p == i;
    at += snprintf(dims + at, sizeof dims - (size_t)at, "%s%d", i ? ", " : "", p);
  }
  if (same || to->n < 2) return v;
  return ox_op(x, "permute", &v, 1, NULL, "{dims = [%s]}", dims);
}

/* The product of v's dims at the letters of g (in v's order `t`). */
static const ir_dim *group_size(ox *x, const kiln_value *v, const term *t, const term *g) {
  const ir_dim *p = ir_dim_const(x->ir->arena, 1);
  for (int i = 0; p && i < g->n; i++)
    p = ir_dim_mul(x->ir->arena, p, ox_dim(v, pos_of(t, g->l[i])));
  return p;
}

static void append(term *t, char c) {
  t->l[t->n++] = c;
  t->l[t->n] = 0;
}

/* A x B over the letter groups (see the top of the file); *res gets the
 * result's letters. */
static kiln_value *contract(ox *x, kiln_value *a, const term *ta, kiln_value *b, const term *tb,
                            const term *out, term *res) {
  term batch = {{0}, 0}, fa = {{0}, 0}, fb = {{0}, 0}, con = {{0}, 0};
  for (int i = 0; i < ta->n; i++) {
    char c = ta->l[i];
    bool in_b = pos_of(tb, c) >= 0, in_out = pos_of(out, c) >= 0;
    append(in_b ? (in_out ? &batch : &con) : &fa, c);
  }
  for (int i = 0; i < tb->n; i++)
    if (pos_of(ta, tb->l[i]) < 0) append(&fb, tb->l[i]);
  for (int i = 0; i < batch.n; i++)
    if (!ir_dim_equal(ox_dim(a, pos_of(ta, batch.l[i])), ox_dim(b, pos_of(tb, batch.l[i])))) {
      ox_unsupported(x, x->node, "batch axis '%c' of different sizes (broadcasting)", batch.l[i]);
      return NULL;
    }
  term oa = batch, ob = batch;
  for (int i = 0; i < fa.n; i++) append(&oa, fa.l[i]);
  for (int i = 0; i < con.n; i++) append(&oa, con.l[i]), append(&ob, con.l[i]);
  for (int i = 0; i < fb.n; i++) append(&ob, fb.l[i]);
  const ir_dim *sa = group_size(x, a, ta, &fa), *sc = group_size(x, a, ta, &con),
               *sb = group_size(x, b, tb, &fb);
  const ir_dim *da[MAXL + 2], *db[MAXL + 2], *dr[2 * MAXL];
  int nb = batch.n;
  for (int i = 0; i < nb; i++) da[i] = db[i] = ox_dim(a, pos_of(ta, batch.l[i]));
  da[nb] = sa, da[nb + 1] = sc, db[nb] = sc, db[nb + 1] = sb;
  *res = batch;
  for (int i = 0; i < fa.n; i++) append(res, fa.l[i]);
  for (int i = 0; i < fb.n; i++) append(res, fb.l[i]);
  for (int i = 0; i < res->n; i++) {
    char c = res->l[i];
    dr[i] = pos_of(ta, c) >= 0 ? ox_dim(a, pos_of(ta, c)) : ox_dim(b, pos_of(tb, c));
  }
  kiln_value *r;
  if (!sa || !sb || !sc || !(a = permute_to(x, a, ta, &oa)) || !(b = permute_to(x, b, tb, &ob)) ||
      !(a = ox_reshape(x, a, nb + 2, da)) || !(b = ox_reshape(x, b, nb + 2, db)) ||
      !(r = OP2("matmul", a, b)))
    return NULL;
  return ox_reshape(x, r, res->n, dr);
}

int ox_op_Einsum(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout) {
  char buf[256];
  const char *eq = ox_attr_string(n, "equation", "", buf, sizeof buf), *why = NULL;
  const char *arrow = strstr(eq, "->"), *comma = strchr(eq, ',');
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  if (comma && strchr(comma + 1, ',') && (!arrow || strchr(comma + 1, ',') < arrow))
    return ox_unsupported(x, n, "more than two operands");
  int nterms = comma && (!arrow || comma < arrow) ? 2 : 1;
  if (nterms != nin) return ox_fail(x, KILN_ERR_VERIFY, "equation \"%s\" names %d operands, not %d",
                                    eq, nterms, nin);
  term t[2] = {{{0}, 0}, {{0}, 0}}, o = {{0}, 0};
  size_t len0 = nterms == 2 ? (size_t)(comma - eq) : lhs_len;
  if (!parse_term(eq, len0, &t[0], &why) ||
      (nterms == 2 && !parse_term(comma + 1, lhs_len - len0 - 1, &t[1], &why)) ||
      (arrow && !parse_term(arrow + 2, strlen(arrow + 2), &o, &why)))
    return ox_unsupported(x, n, "equation \"%s\": %s", eq, why);
  if (!arrow) /* implicit: the letters that occur once, sorted */
    for (char c = 'A'; c <= 'z'; c++) {
      int k = (pos_of(&t[0], c) >= 0) + (nterms == 2 && pos_of(&t[1], c) >= 0);
      if (k == 1) append(&o, c);
    }
  BEGIN;
  kiln_value *v[2] = {IN(0), NULL}, *r;
  if (!v[0] || (nterms == 2 && !(v[1] = IN(1)))) return rc;
  for (int k = 0; k < nterms; k++)
    if (ox_type(v[k])->rank != t[k].n)
      return ox_fail(x, KILN_ERR_VERIFY, "operand %d has rank %d but \"%s\" gives it %d letters",
                     k, ox_type(v[k])->rank, eq, t[k].n);
  for (int i = 0; i < o.n; i++)
    if (pos_of(&t[0], o.l[i]) < 0 && (nterms == 1 || pos_of(&t[1], o.l[i]) < 0))
      return ox_fail(x, KILN_ERR_VERIFY, "output letter '%c' of \"%s\" is in no operand",
                     o.l[i], eq);
  term res;
  if (nterms == 1) {
    if (!(r = sum_out(x, v[0], &t[0], &o, NULL))) return FAILED();
    res = t[0];
  } else {
    if (!(v[0] = sum_out(x, v[0], &t[0], &o, &t[1])) ||
        !(v[1] = sum_out(x, v[1], &t[1], &o, &t[0])) ||
        !(r = contract(x, v[0], &t[0], v[1], &t[1], &o, &res)))
      return FAILED();
  }
  if (!(out[0]->v = permute_to(x, r, &res, &o))) return FAILED();
  return 0;
}
