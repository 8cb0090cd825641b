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
 * An ellipsis stands for the operand's axes no letter names, given
 * letters of their own (right-aligned across operands, as numpy); an
 * implicit output puts them first, an explicit one must say where ("...").
 * A letter repeated within one term takes that diagonal first: the two
 * axes moved last, flattened, sliced with step n + 1 (a static n).
 * Not built (refused by name): more than two operands, and batch axes
 * whose sizes differ (broadcasting). */
#include <stdio.h>
#include <string.h>

#include "ox.h"

#define MAXL 16 /* letters per term: kiln's rank bound */

typedef struct term {
  char l[MAXL + 1];
  int n;
  int ell; /* where "..." stands among l, or -1 */
} term;

/* the letters the ellipsis axes get: no ONNX letter is one of them */
static const char ELL_LETTERS[] = "0123456789!#$%&*";

/* Parse one term (letters and at most one "...") from s[0..len); false
 * when it is not one. */
static bool parse_term(const char *s, size_t len, term *t, const char **why) {
  t->n = 0;
  t->ell = -1;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
        return *why = "a '.' that is not part of \"...\"", false;
      if (t->ell >= 0) return *why = "two ellipses in one term", false;
      t->ell = t->n;
      i += 2;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
      return *why = "a character that is not a letter", false;
    if (t->n == MAXL) return *why = "more letters than kiln's rank bound", false;
    t->l[t->n++] = c;
    t->l[t->n] = 0;
  }
  return true;
}

/* t with its ellipsis replaced by the last e of the emax ellipsis letters */
static void expand(term *t, int e, int emax) {
  if (t->ell < 0) return;
  memmove(t->l + t->ell + e, t->l + t->ell, (size_t)(t->n - t->ell + 1));
  for (int i = 0; i < e; i++) t->l[t->ell + i] = ELL_LETTERS[emax - e + i];
  t->n += e;
  t->ell = -1;
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
  term batch = {{0}, 0, -1}, fa = {{0}, 0, -1}, fb = {{0}, 0, -1}, con = {{0}, 0, -1};
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

/* v (letters t) with every letter repeated within t reduced to its
 * diagonal; t loses the repeats. NULL on failure (unsupported recorded). */
static kiln_value *diagonals(ox *x, kiln_value *v, term *t) {
  for (int p = 0; v && p < t->n; p++)
    for (int q = p + 1; v && q < t->n; q++) {
      if (t->l[p] != t->l[q]) continue;
      int64_t np, nq;
      if (!ir_dim_is_const(ox_dim(v, p), &np) || !ir_dim_is_const(ox_dim(v, q), &nq)) {
        ox_unsupported(x, x->node, "a diagonal ('%c' twice) over a symbolic dim", t->l[p]);
        return NULL;
      }
      if (np != nq) {
        ox_fail(x, KILN_ERR_VERIFY, "letter '%c' names axes of %lld and %lld", t->l[p],
                (long long)np, (long long)nq);
        return NULL;
      }
      /* p and q last, flattened, every (n + 1)-th element */
      term moved = {{0}, 0, -1};
      char perm[4 * MAXL] = "", start[4 * MAXL] = "", stop[8 * MAXL] = "", step[4 * MAXL] = "";
      const ir_dim *dims[MAXL];
      int at = 0, nd = 0;
      for (int i = 0; i < t->n; i++)
        if (i != p && i != q) {
          at += snprintf(perm + at, sizeof perm - (size_t)at, "%d, ", i);
          dims[nd++] = ox_dim(v, i);
          append(&moved, t->l[i]);
        }
      snprintf(perm + at, sizeof perm - (size_t)at, "%d, %d", p, q);
      dims[nd] = ir_dim_const(x->ir->arena, np * np);
      size_t a1 = 0, a2 = 0, a3 = 0;
      for (int i = 0; i <= nd; i++) {
        bool last = i == nd;
        a1 += (size_t)snprintf(start + a1, sizeof start - a1, "%s0", i ? ", " : "");
        a2 += (size_t)snprintf(stop + a2, sizeof stop - a2, "%s%lld", i ? ", " : "",
                               last ? (long long)(np * np) : (long long)INT64_MAX);
        a3 += (size_t)snprintf(step + a3, sizeof step - a3, "%s%lld", i ? ", " : "",
                               last ? (long long)(np + 1) : 1LL);
      }
      if (!(v = ox_op(x, "permute", &v, 1, NULL, "{dims = [%s]}", perm)) ||
          !(v = ox_reshape(x, v, nd + 1, dims)) ||
          !(v = ox_op(x, "slice_tensor", &v, 1, NULL, "{start = [%s], step = [%s], stop = [%s]}",
                      start, step, stop)))
        return NULL;
      append(&moved, t->l[p]);
      *t = moved;
      p = -1; /* start over: the letters moved */
      break;
    }
  return v;
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
  term t[2] = {{{0}, 0, -1}, {{0}, 0, -1}}, o = {{0}, 0, -1};
  size_t len0 = nterms == 2 ? (size_t)(comma - eq) : lhs_len;
  if (!parse_term(eq, len0, &t[0], &why) ||
      (nterms == 2 && !parse_term(comma + 1, lhs_len - len0 - 1, &t[1], &why)) ||
      (arrow && !parse_term(arrow + 2, strlen(arrow + 2), &o, &why)))
    return ox_unsupported(x, n, "equation \"%s\": %s", eq, why);
  BEGIN;
  kiln_value *v[2] = {IN(0), NULL}, *r;
  if (!v[0] || (nterms == 2 && !(v[1] = IN(1)))) return rc;
  int e[2] = {0, 0}, emax = 0;
  for (int k = 0; k < nterms; k++) {
    int rank = ox_type(v[k])->rank;
    e[k] = rank - t[k].n;
    if (t[k].ell < 0 ? e[k] != 0 : e[k] < 0)
      return ox_fail(x, KILN_ERR_VERIFY, "operand %d has rank %d but \"%s\" gives it %d letters",
                     k, rank, eq, t[k].n);
    if (t[k].n + e[k] > MAXL || e[k] > (int)sizeof ELL_LETTERS - 1)
      return ox_unsupported(x, n, "more axes than kiln's rank bound");
    if (e[k] > emax) emax = e[k];
  }
  if (arrow && o.ell < 0 && emax > 0)
    return ox_fail(x, KILN_ERR_VERIFY, "equation \"%s\": the output has no \"...\" for the "
                   "%d axes the ellipsis stands for", eq, emax);
  for (int k = 0; k < nterms; k++) expand(&t[k], e[k], emax);
  if (arrow) {
    expand(&o, emax, emax);
  } else { /* implicit: the ellipsis axes, then the letters that occur once, sorted */
    for (int i = 0; i < emax; i++) append(&o, ELL_LETTERS[i]);
    for (char c = 'A'; c <= 'z'; c++) {
      int k = 0;
      for (int j = 0; j < nterms; j++)
        for (int i = 0; i < t[j].n; i++) k += t[j].l[i] == c;
      if (k == 1) append(&o, c);
    }
  }
  for (int i = 0; i < o.n; i++)
    if (pos_of(&t[0], o.l[i]) < 0 && (nterms == 1 || pos_of(&t[1], o.l[i]) < 0))
      return ox_fail(x, KILN_ERR_VERIFY, "output letter '%c' of \"%s\" is in no operand",
                     o.l[i], eq);
  for (int k = 0; k < nterms; k++)
    if (!(v[k] = diagonals(x, v[k], &t[k]))) return FAILED();
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
