/* dim.c - canonical dim expressions: construction, order, hash, eval, print, parse.
 *
 * Assumes: the operands given to a constructor are canonical dims (built by
 * this file) living in the same arena or in one that outlives the result;
 * results share immutable sub-dims with their operands.
 *
 * Guarantees (the canonical form of dim.h):
 *   - every constructor works on a polynomial view (a list of terms
 *     coefficient * monomial plus a constant), sorts the terms by monomial,
 *     merges like terms, drops zeros, and rebuilds: a lone term, a CONST, or
 *     an ADD whose constant (if any) is last. Products are distributed, so a
 *     MUL never holds a sum; its atoms (SYM / FLOORDIV / CEILDIV / MOD) are
 *     sorted and may repeat (n * n).
 *   - a MUL has coefficient != 0, and coefficient != 1 when it has one atom
 *     (a lone atom with coefficient 1 is the atom itself).
 *   - floordiv / ceildiv / mod simplify only where exact for every integer
 *     value of the symbols: constant folding, divisor 1, an operand whose
 *     coefficients and constant are all multiples of the divisor
 *     ((4 * n + 8) floordiv 4 = n + 2, (4 * n) mod 4 = 0), nested
 *     (x floordiv a) floordiv b = x floordiv (a * b) (same for ceildiv), and
 *     (x mod a) mod b = x mod b when b divides a, = x mod a when b >= a.
 *   - coefficients and constants are int64: a fold that overflows fails
 *     (NULL) rather than wrapping; intermediate sums use 128-bit integers so
 *     the result does not depend on the order of the terms.
 *   - sizes are bounded (DIM_MAX_TERMS terms per sum, DIM_MAX_ATOMS atoms per
 *     monomial, DIM_MAX_DEPTH nesting when parsing) so that hostile text such
 *     as a product of many sums fails with a message instead of exhausting
 *     memory or the stack.
 * Printing: a negative term after the first prints as ` - |term|`; a leading
 * coefficient -1 prints as `-` (`-n`, `-batch * seq`, `-(n floordiv 2)`);
 * every FLOORDIV / CEILDIV / MOD inside a product and every non-symbol operand
 * of floordiv / ceildiv / mod is parenthesized. ir_dim_parse accepts all of it.
 * No global mutable state; scratch memory is malloc'd and freed per call. */
#include "dim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM_MAX_TERMS 1024
#define DIM_MAX_ATOMS 64
#define DIM_MAX_DEPTH 200

typedef __int128 i128;

/* Why an internal constructor failed. */
enum { ST_OK, ST_OOM, ST_OVF, ST_BIG };

static const char *status_msg(int st) {
  switch (st) {
  case ST_OVF: return "dim arithmetic overflows int64";
  case ST_BIG: return "dim expression too large";
  default: return "out of memory";
  }
}

static void set_err(ir_dim_err *err, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(ir_dim_err *err, size_t pos, const char *fmt, ...) {
  if (!err) return;
  err->pos = pos;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

/* ---------------------------------------------------------------- order */

static int cmp_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

/* CONST < terms (SYM, MUL, FLOORDIV, CEILDIV, MOD) < ADD */
static int dim_class(const ir_dim *d) {
  return d->kind == IR_DIM_CONST ? 0 : d->kind == IR_DIM_ADD ? 2 : 1;
}

static int atom_rank(ir_dim_kind k) {
  switch (k) {
  case IR_DIM_SYM: return 0;
  case IR_DIM_FLOORDIV: return 1;
  case IR_DIM_CEILDIV: return 2;
  case IR_DIM_MOD: return 3;
  default: return 4;
  }
}

static int atom_cmp(const ir_dim *x, const ir_dim *y) {
  if (x == y) return 0;
  int rx = atom_rank(x->kind), ry = atom_rank(y->kind);
  if (rx != ry) return rx < ry ? -1 : 1;
  if (x->kind == IR_DIM_SYM) {
    if (x->sym != y->sym) return x->sym < y->sym ? -1 : 1;
    int r = strcmp(x->name ? x->name : "", y->name ? y->name : "");
    return (r > 0) - (r < 0);
  }
  int r = ir_dim_cmp(x->ops[0], y->ops[0]);
  return r ? r : cmp_i64(x->value, y->value);
}

/* Lexicographic on sorted atom lists; a prefix comes first. */
static int mono_cmp(const ir_dim *const *a, int na, const ir_dim *const *b, int nb) {
  int n = na < nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int r = atom_cmp(a[i], b[i]);
    if (r) return r;
  }
  return (na > nb) - (na < nb);
}

/* A term-like dim (SYM, MUL, FLOORDIV, CEILDIV, MOD) as coefficient * atoms.
 * `slot` holds the atom for non-MUL dims. */
static void term_view(const ir_dim *d, int64_t *coef, const ir_dim *const **atoms, int *n,
                      const ir_dim **slot) {
  if (d->kind == IR_DIM_MUL) {
    *coef = d->value;
    *atoms = d->ops;
    *n = d->n;
  } else {
    *slot = d;
    *coef = 1;
    *atoms = slot;
    *n = 1;
  }
}

int ir_dim_cmp(const ir_dim *x, const ir_dim *y) {
  if (x == y) return 0;
  if (!x) return -1;
  if (!y) return 1;
  int cx = dim_class(x), cy = dim_class(y);
  if (cx != cy) return cx < cy ? -1 : 1;
  if (cx == 0) return cmp_i64(x->value, y->value);
  if (cx == 2) {
    int n = x->n < y->n ? x->n : y->n;
    for (int i = 0; i < n; i++) {
      int r = ir_dim_cmp(x->ops[i], y->ops[i]);
      if (r) return r;
    }
    return (x->n > y->n) - (x->n < y->n);
  }
  int64_t kx, ky;
  const ir_dim *const *ax, *const *ay;
  const ir_dim *sx, *sy;
  int nx, ny;
  term_view(x, &kx, &ax, &nx, &sx);
  term_view(y, &ky, &ay, &ny, &sy);
  int r = mono_cmp(ax, nx, ay, ny);
  return r ? r : cmp_i64(kx, ky);
}

bool ir_dim_equal(const ir_dim *x, const ir_dim *y) {
  if (x == y) return true;
  if (!x || !y || x->hash != y->hash) return false;
  return ir_dim_cmp(x, y) == 0;
}

uint64_t ir_dim_hash(const ir_dim *d) { return d ? d->hash : 0; }

/* ----------------------------------------------------------------- nodes */

static uint64_t hmix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x100000001b3ull;
  return h ^ (h >> 31);
}

/* Structural: kind, constants, symbol ids and the children's hashes (names
 * are not hashed: equal dims have equal ids, and that suffices). */
static void node_seal(ir_dim *d) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = hmix(h, (uint64_t)d->kind + 1);
  h = hmix(h, (uint64_t)d->value);
  h = hmix(h, (uint64_t)(int64_t)d->sym);
  h = hmix(h, (uint64_t)d->n);
  for (int i = 0; i < d->n; i++) h = hmix(h, d->ops[i]->hash);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  d->hash = h;
}

static ir_dim *node_new(ir_arena *a, ir_dim_kind k, int n) {
  ir_dim *d = ir_arena_alloc(a, sizeof *d);
  if (!d) return NULL;
  d->kind = k;
  d->n = n;
  if (n > 0) {
    d->ops = ir_arena_alloc(a, sizeof *d->ops * (size_t)n);
    if (!d->ops) return NULL;
  }
  return d;
}

const ir_dim *ir_dim_const(ir_arena *a, int64_t v) {
  ir_dim *d = node_new(a, IR_DIM_CONST, 0);
  if (!d) return NULL;
  d->value = v;
  node_seal(d);
  return d;
}

const ir_dim *ir_dim_sym(ir_arena *a, int sym, const char *name) {
  if (sym < 0) return NULL;
  ir_dim *d = node_new(a, IR_DIM_SYM, 0);
  if (!d) return NULL;
  d->sym = sym;
  if (name && !(d->name = ir_arena_strdup(a, name))) return NULL;
  node_seal(d);
  return d;
}

/* ------------------------------------------------------------ polynomials */

typedef struct term {
  i128 coef;
  const ir_dim **atoms; /* sorted, arena-owned; NULL: the one atom is `one` */
  const ir_dim *one;
  int n;
  const ir_dim *orig; /* an existing dim equal to this term, or NULL */
} term;

typedef struct poly {
  term *t;
  int n, cap;
  i128 c;
  int st;
} poly;

static const ir_dim *const *term_atoms(const term *t) {
  return t->atoms ? (const ir_dim *const *)t->atoms : &t->one;
}

static void poly_free(poly *p) { free(p->t); }

static void poly_push(poly *p, const term *t) {
  if (p->st) return;
  if (p->n == p->cap) {
    int cap = p->cap ? p->cap * 2 : 8;
    term *nt = realloc(p->t, sizeof *nt * (size_t)cap);
    if (!nt) {
      p->st = ST_OOM;
      return;
    }
    p->t = nt;
    p->cap = cap;
  }
  p->t[p->n++] = *t;
}

/* p += scale * d */
static void poly_add_dim(poly *p, const ir_dim *d, int64_t scale) {
  if (p->st) return;
  if (!d) {
    p->st = ST_OOM; /* a NULL operand is an earlier failure */
    return;
  }
  if (d->kind == IR_DIM_CONST) {
    p->c += (i128)d->value * scale;
  } else if (d->kind == IR_DIM_ADD) {
    for (int i = 0; i < d->n; i++) poly_add_dim(p, d->ops[i], scale);
  } else {
    term t = {0};
    if (d->kind == IR_DIM_MUL) {
      t.coef = (i128)d->value * scale;
      t.atoms = d->ops;
      t.n = d->n;
    } else {
      t.coef = scale;
      t.one = d;
      t.n = 1;
    }
    t.orig = scale == 1 ? d : NULL;
    poly_push(p, &t);
  }
}

static int term_qcmp(const void *x, const void *y) {
  const term *a = x, *b = y;
  return mono_cmp(term_atoms(a), a->n, term_atoms(b), b->n);
}

static bool fits64(i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

/* Sort, merge like terms, drop zeros; check every coefficient and the
 * constant fit int64 and the size bound. */
static void poly_normalize(poly *p) {
  if (p->st) return;
  if (p->n > 1) qsort(p->t, (size_t)p->n, sizeof *p->t, term_qcmp);
  int w = 0;
  for (int i = 0; i < p->n;) {
    term t = p->t[i];
    int j = i + 1;
    for (; j < p->n && term_qcmp(&t, &p->t[j]) == 0; j++) {
      t.coef += p->t[j].coef;
      t.orig = NULL;
    }
    i = j;
    if (t.coef == 0) continue;
    if (!fits64(t.coef)) {
      p->st = ST_OVF;
      return;
    }
    p->t[w++] = t;
  }
  p->n = w;
  if (!fits64(p->c)) p->st = ST_OVF;
  else if (p->n > DIM_MAX_TERMS) p->st = ST_BIG;
}

static const ir_dim *term_build(ir_arena *a, const term *t) {
  if (t->orig) return t->orig;
  if (t->n == 1 && t->coef == 1) return term_atoms(t)[0];
  ir_dim *d = node_new(a, IR_DIM_MUL, 0);
  if (!d) return NULL;
  d->value = (int64_t)t->coef;
  d->n = t->n;
  if (t->atoms) {
    d->ops = t->atoms;
  } else {
    if (!(d->ops = ir_arena_alloc(a, sizeof *d->ops))) return NULL;
    d->ops[0] = t->one;
  }
  node_seal(d);
  return d;
}

/* Normalize p and build its canonical dim; NULL with *st set on failure. */
static const ir_dim *poly_build(ir_arena *a, poly *p, int *st) {
  poly_normalize(p);
  if (p->st) {
    *st = p->st;
    return NULL;
  }
  const ir_dim *r = NULL;
  int64_t c = (int64_t)p->c;
  if (p->n == 0) {
    r = ir_dim_const(a, c);
  } else if (p->n == 1 && c == 0) {
    r = term_build(a, &p->t[0]);
  } else {
    ir_dim *d = node_new(a, IR_DIM_ADD, p->n + (c != 0));
    if (!d) goto oom;
    for (int i = 0; i < p->n; i++)
      if (!(d->ops[i] = term_build(a, &p->t[i]))) goto oom;
    if (c != 0 && !(d->ops[p->n] = ir_dim_const(a, c))) goto oom;
    node_seal(d);
    r = d;
  }
  if (r) return r;
oom:
  *st = ST_OOM;
  return NULL;
}

/* Merge two sorted atom lists into a new arena array. */
static const ir_dim **atoms_merge(ir_arena *a, const ir_dim *const *x, int nx,
                                  const ir_dim *const *y, int ny) {
  const ir_dim **r = ir_arena_alloc(a, sizeof *r * (size_t)(nx + ny));
  if (!r) return NULL;
  int i = 0, j = 0, k = 0;
  while (i < nx && j < ny) r[k++] = atom_cmp(x[i], y[j]) <= 0 ? x[i++] : y[j++];
  while (i < nx) r[k++] = x[i++];
  while (j < ny) r[k++] = y[j++];
  return r;
}

/* r = x * y; x and y normalized (so their coefficients fit int64). */
static void poly_mul(ir_arena *a, const poly *x, const poly *y, poly *r) {
  for (int i = 0; i < x->n && !r->st; i++) {
    const term *tx = &x->t[i];
    for (int j = 0; j < y->n && !r->st; j++) {
      const term *ty = &y->t[j];
      term t = {0};
      t.coef = tx->coef * ty->coef;
      t.n = tx->n + ty->n;
      if (t.n > DIM_MAX_ATOMS) {
        r->st = ST_BIG;
        return;
      }
      t.atoms = atoms_merge(a, term_atoms(tx), tx->n, term_atoms(ty), ty->n);
      if (!t.atoms) {
        r->st = ST_OOM;
        return;
      }
      poly_push(r, &t);
    }
    if (y->c != 0) {
      term t = *tx;
      t.coef *= y->c;
      if (y->c != 1) t.orig = NULL;
      poly_push(r, &t);
    }
  }
  if (x->c != 0) {
    for (int j = 0; j < y->n; j++) {
      term t = y->t[j];
      t.coef *= x->c;
      if (x->c != 1) t.orig = NULL;
      poly_push(r, &t);
    }
  }
  r->c = x->c * y->c;
}

/* ---------------------------------------------------------- constructors */

/* x + ys * y */
static const ir_dim *lin_st(ir_arena *a, const ir_dim *x, const ir_dim *y, int64_t ys,
                            int *st) {
  poly p = {0};
  if (x) poly_add_dim(&p, x, 1);
  poly_add_dim(&p, y, ys);
  const ir_dim *r = poly_build(a, &p, st);
  poly_free(&p);
  return r;
}

static const ir_dim *mul_st(ir_arena *a, const ir_dim *x, const ir_dim *y, int *st) {
  if (!x || !y) {
    *st = ST_OOM;
    return NULL;
  }
  int64_t cx, cy, v;
  if (ir_dim_is_const(x, &cx) && ir_dim_is_const(y, &cy)) {
    if (__builtin_mul_overflow(cx, cy, &v)) {
      *st = ST_OVF;
      return NULL;
    }
    return ir_dim_const(a, v);
  }
  poly px = {0}, py = {0}, pr = {0};
  poly_add_dim(&px, x, 1);
  poly_add_dim(&py, y, 1);
  poly_normalize(&px);
  poly_normalize(&py);
  const ir_dim *r = NULL;
  if (px.st || py.st) {
    *st = px.st ? px.st : py.st;
  } else {
    poly_mul(a, &px, &py, &pr);
    r = poly_build(a, &pr, st);
  }
  poly_free(&px);
  poly_free(&py);
  poly_free(&pr);
  return r;
}

static int64_t floor_div(int64_t v, int64_t c) { /* c > 0 */
  int64_t q = v / c;
  return (v % c != 0 && v < 0) ? q - 1 : q;
}

static int64_t ceil_div(int64_t v, int64_t c) { /* c > 0 */
  int64_t q = v / c;
  return (v % c != 0 && v > 0) ? q + 1 : q;
}

static int64_t floor_mod(int64_t v, int64_t c) { /* c > 0 */
  int64_t r = v % c;
  return r < 0 ? r + c : r;
}

/* x floordiv / ceildiv / mod c, with c > 0. */
static const ir_dim *div_st(ir_arena *a, ir_dim_kind k, const ir_dim *x, int64_t c, int *st) {
  if (!x) {
    *st = ST_OOM;
    return NULL;
  }
  int64_t v;
  const ir_dim *r;
  if (ir_dim_is_const(x, &v)) {
    r = ir_dim_const(a, k == IR_DIM_FLOORDIV  ? floor_div(v, c)
                        : k == IR_DIM_CEILDIV ? ceil_div(v, c)
                                              : floor_mod(v, c));
    goto done;
  }
  if (c == 1) {
    r = k == IR_DIM_MOD ? ir_dim_const(a, 0) : x;
    goto done;
  }
  if (x->kind == k && k != IR_DIM_MOD) {
    int64_t cc;
    if (!__builtin_mul_overflow(x->value, c, &cc)) return div_st(a, k, x->ops[0], cc, st);
  }
  if (k == IR_DIM_MOD && x->kind == IR_DIM_MOD) {
    if (x->value % c == 0) return div_st(a, k, x->ops[0], c, st);
    if (c >= x->value) return x;
  }
  /* every coefficient and the constant a multiple of c: divide exactly */
  poly p = {0};
  poly_add_dim(&p, x, 1);
  bool exact = p.st == ST_OK && p.c % c == 0;
  for (int i = 0; exact && i < p.n; i++) exact = p.t[i].coef % c == 0;
  if (exact) {
    if (k == IR_DIM_MOD) {
      r = ir_dim_const(a, 0);
    } else {
      for (int i = 0; i < p.n; i++) {
        p.t[i].coef /= c;
        p.t[i].orig = NULL;
      }
      p.c /= c;
      r = poly_build(a, &p, st);
      poly_free(&p);
      return r;
    }
  } else {
    ir_dim *d = node_new(a, k, 1);
    if (d) {
      d->value = c;
      d->ops[0] = x;
      node_seal(d);
    }
    r = d;
  }
  poly_free(&p);
done:
  if (!r) *st = ST_OOM;
  return r;
}

const ir_dim *ir_dim_add(ir_arena *a, const ir_dim *x, const ir_dim *y) {
  int st = ST_OK;
  return x ? lin_st(a, x, y, 1, &st) : NULL;
}

const ir_dim *ir_dim_sub(ir_arena *a, const ir_dim *x, const ir_dim *y) {
  int st = ST_OK;
  return x ? lin_st(a, x, y, -1, &st) : NULL;
}

const ir_dim *ir_dim_mul(ir_arena *a, const ir_dim *x, const ir_dim *y) {
  int st = ST_OK;
  return mul_st(a, x, y, &st);
}

static const char *div_name(ir_dim_kind k) {
  return k == IR_DIM_FLOORDIV ? "floordiv" : k == IR_DIM_CEILDIV ? "ceildiv" : "mod";
}

static const ir_dim *div_pub(ir_arena *a, ir_dim_kind k, const ir_dim *x, int64_t c,
                             ir_dim_err *err) {
  if (c <= 0) {
    set_err(err, 0, "%s needs a positive integer constant on the right (got %lld)",
            div_name(k), (long long)c);
    return NULL;
  }
  int st = ST_OK;
  const ir_dim *r = div_st(a, k, x, c, &st);
  if (!r) set_err(err, 0, "%s", status_msg(st));
  return r;
}

const ir_dim *ir_dim_floordiv(ir_arena *a, const ir_dim *x, int64_t c, ir_dim_err *err) {
  return div_pub(a, IR_DIM_FLOORDIV, x, c, err);
}

const ir_dim *ir_dim_ceildiv(ir_arena *a, const ir_dim *x, int64_t c, ir_dim_err *err) {
  return div_pub(a, IR_DIM_CEILDIV, x, c, err);
}

const ir_dim *ir_dim_mod(ir_arena *a, const ir_dim *x, int64_t c, ir_dim_err *err) {
  return div_pub(a, IR_DIM_MOD, x, c, err);
}

const ir_dim *ir_dim_clone(ir_arena *a, const ir_dim *d) {
  if (!d) return NULL;
  ir_dim *r = node_new(a, d->kind, d->n);
  if (!r) return NULL;
  r->value = d->value;
  r->sym = d->sym;
  if (d->name && !(r->name = ir_arena_strdup(a, d->name))) return NULL;
  for (int i = 0; i < d->n; i++)
    if (!(r->ops[i] = ir_dim_clone(a, d->ops[i]))) return NULL;
  node_seal(r);
  return r;
}

bool ir_dim_is_const(const ir_dim *d, int64_t *value) {
  if (!d || d->kind != IR_DIM_CONST) return false;
  if (value) *value = d->value;
  return true;
}

bool ir_dim_is_sym(const ir_dim *d) { return d && d->kind == IR_DIM_SYM; }

bool ir_dim_uses_sym(const ir_dim *d, int sym) {
  if (!d) return false;
  if (d->kind == IR_DIM_SYM) return d->sym == sym;
  for (int i = 0; i < d->n; i++)
    if (ir_dim_uses_sym(d->ops[i], sym)) return true;
  return false;
}

/* ------------------------------------------------------------------ eval */

enum { EV_OK, EV_OVF, EV_NOVAL };

static int eval_rec(const ir_dim *d, const int64_t *sv, int64_t *out) {
  int64_t v, x;
  int r;
  switch (d->kind) {
  case IR_DIM_CONST: *out = d->value; return EV_OK;
  case IR_DIM_SYM:
    if (!sv) return EV_NOVAL;
    *out = sv[d->sym];
    return EV_OK;
  case IR_DIM_ADD:
  case IR_DIM_MUL:
    v = d->kind == IR_DIM_ADD ? 0 : d->value;
    for (int i = 0; i < d->n; i++) {
      if ((r = eval_rec(d->ops[i], sv, &x))) return r;
      if (d->kind == IR_DIM_ADD ? __builtin_add_overflow(v, x, &v)
                                : __builtin_mul_overflow(v, x, &v))
        return EV_OVF;
    }
    *out = v;
    return EV_OK;
  case IR_DIM_FLOORDIV:
  case IR_DIM_CEILDIV:
  case IR_DIM_MOD:
    if ((r = eval_rec(d->ops[0], sv, &x))) return r;
    *out = d->kind == IR_DIM_FLOORDIV  ? floor_div(x, d->value)
           : d->kind == IR_DIM_CEILDIV ? ceil_div(x, d->value)
                                       : floor_mod(x, d->value);
    return EV_OK;
  }
  return EV_OVF; /* not reached for dims built here */
}

bool ir_dim_eval(const ir_dim *d, const int64_t *sym_values, int64_t *out, ir_dim_err *err) {
  if (!d) {
    set_err(err, 0, "no dim to evaluate");
    return false;
  }
  int64_t v = 0;
  int r = eval_rec(d, sym_values, &v);
  if (r == EV_OK) {
    if (out) *out = v;
    return true;
  }
  char text[200];
  ir_dim_print(d, text, sizeof text);
  if (r == EV_NOVAL) set_err(err, 0, "dim `%s` needs symbol values to evaluate", text);
  else set_err(err, 0, "int64 overflow evaluating dim `%s`", text);
  return false;
}

/* ----------------------------------------------------------------- print */

typedef struct writer {
  char *buf;
  size_t cap, len;
} writer;

static void put(writer *w, const char *s, size_t n) {
  if (w->len < w->cap) {
    size_t room = w->cap - 1 - w->len, k = n < room ? n : room;
    memcpy(w->buf + w->len, s, k);
    w->buf[w->len + k] = 0;
  }
  w->len += n;
}

static void puts_(writer *w, const char *s) { put(w, s, strlen(s)); }

static void put_i64(writer *w, int64_t v) {
  char t[32];
  int n = snprintf(t, sizeof t, "%lld", (long long)v);
  put(w, t, (size_t)n);
}

static void print_dim(writer *w, const ir_dim *d);

/* coef * atoms; a product's FLOORDIV / CEILDIV / MOD atoms get parentheses. */
static void print_term(writer *w, int64_t coef, const ir_dim *const *atoms, int n) {
  if (coef == 1 && n == 1) {
    print_dim(w, atoms[0]);
    return;
  }
  if (coef == -1) {
    puts_(w, "-");
  } else if (coef != 1) {
    put_i64(w, coef);
    puts_(w, " * ");
  }
  for (int i = 0; i < n; i++) {
    if (i) puts_(w, " * ");
    bool paren = atoms[i]->kind != IR_DIM_SYM;
    if (paren) puts_(w, "(");
    print_dim(w, atoms[i]);
    if (paren) puts_(w, ")");
  }
}

static void print_dim(writer *w, const ir_dim *d) {
  int64_t coef;
  const ir_dim *const *atoms;
  const ir_dim *slot;
  int n;
  switch (d->kind) {
  case IR_DIM_CONST: put_i64(w, d->value); return;
  case IR_DIM_SYM:
    if (d->name) {
      puts_(w, d->name);
    } else {
      puts_(w, "sym");
      put_i64(w, d->sym);
    }
    return;
  case IR_DIM_ADD:
    for (int i = 0; i < d->n; i++) {
      const ir_dim *t = d->ops[i];
      if (t->kind == IR_DIM_CONST) {
        coef = t->value;
        if (i && coef < 0 && coef != INT64_MIN) {
          puts_(w, " - ");
          put_i64(w, -coef);
        } else {
          if (i) puts_(w, " + ");
          put_i64(w, coef);
        }
        continue;
      }
      term_view(t, &coef, &atoms, &n, &slot);
      if (i && coef < 0 && coef != INT64_MIN) {
        puts_(w, " - ");
        coef = -coef;
      } else if (i) {
        puts_(w, " + ");
      }
      print_term(w, coef, atoms, n);
    }
    return;
  case IR_DIM_MUL: print_term(w, d->value, d->ops, d->n); return;
  case IR_DIM_FLOORDIV:
  case IR_DIM_CEILDIV:
  case IR_DIM_MOD: {
    bool paren = d->ops[0]->kind != IR_DIM_SYM;
    if (paren) puts_(w, "(");
    print_dim(w, d->ops[0]);
    if (paren) puts_(w, ")");
    puts_(w, " ");
    puts_(w, div_name(d->kind));
    puts_(w, " ");
    put_i64(w, d->value);
    return;
  }
  }
}

size_t ir_dim_print(const ir_dim *d, char *buf, size_t cap) {
  writer w = {buf, cap, 0};
  if (buf && cap) buf[0] = 0;
  else w.cap = 0;
  if (!d) puts_(&w, "<null>");
  else print_dim(&w, d);
  return w.len;
}

/* ----------------------------------------------------------------- parse */

typedef struct parser {
  ir_arena *a;
  const char *s;
  size_t len, pos;
  ir_sym_resolver resolve;
  void *ud;
  ir_dim_err *err;
  int depth;
} parser;

static const char EXPECTED_DIM[] = "expected a dim (integer, symbol or parenthesized expression)";

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return is_id0(c) || is_digit(c); }

static void skip_ws(parser *p) {
  while (p->pos < p->len && is_space(p->s[p->pos])) p->pos++;
}

static size_t ident_len(const parser *p, size_t at) {
  if (at >= p->len || !is_id0(p->s[at])) return 0;
  size_t n = 1;
  while (at + n < p->len && is_id(p->s[at + n])) n++;
  return n;
}

/* The keyword (floordiv / ceildiv / mod) spelled by the identifier at `at`,
 * or IR_DIM_CONST when there is none. */
static ir_dim_kind keyword_at(const parser *p, size_t at, size_t *n) {
  *n = ident_len(p, at);
  const char *s = p->s + at;
  if (*n == 8 && !memcmp(s, "floordiv", 8)) return IR_DIM_FLOORDIV;
  if (*n == 7 && !memcmp(s, "ceildiv", 7)) return IR_DIM_CEILDIV;
  if (*n == 3 && !memcmp(s, "mod", 3)) return IR_DIM_MOD;
  return IR_DIM_CONST;
}

static const ir_dim *fail_st(parser *p, size_t pos, int st) {
  set_err(p->err, pos, "%s", status_msg(st));
  return NULL;
}

static const ir_dim *parse_expr(parser *p);
static const ir_dim *parse_factor(parser *p);

/* Digits at p->pos, negated when neg (so -9223372036854775808 parses). */
static const ir_dim *parse_int(parser *p, bool neg, size_t start) {
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  while (p->pos < p->len && is_digit(p->s[p->pos])) {
    uint64_t d = (uint64_t)(p->s[p->pos] - '0');
    if (v > (lim - d) / 10) {
      set_err(p->err, start, "integer too large");
      return NULL;
    }
    v = v * 10 + d;
    p->pos++;
  }
  int64_t x = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  const ir_dim *r = ir_dim_const(p->a, x);
  return r ? r : fail_st(p, start, ST_OOM);
}

/* Whether '(' follows at `at` (spaces skipped): a function form. */
static bool call_follows(const parser *p, size_t at) {
  while (at < p->len && is_space(p->s[at])) at++;
  return at < p->len && p->s[at] == '(';
}

/* The function forms MAX prints (add(s, -1), mul(s, 2), mul_no_wrap(b, s,
 * 4)): add / mul of two or more dims, and floordiv / ceildiv / mod (x, c)
 * with a positive constant c, the same as the infix forms. */
static const ir_dim *parse_call(parser *p, size_t start, size_t n, ir_dim_kind kw) {
  const char *s = p->s + start;
  bool add = n == 3 && !memcmp(s, "add", 3);
  bool mul = (n == 3 && !memcmp(s, "mul", 3)) || (n == 11 && !memcmp(s, "mul_no_wrap", 11));
  if (!add && !mul && kw == IR_DIM_CONST) {
    set_err(p->err, start,
            "unknown dim function '%.*s' (expected add, mul, mul_no_wrap, floordiv, ceildiv or "
            "mod)",
            (int)(n > 32 ? 32 : n), s);
    return NULL;
  }
  while (p->s[p->pos] != '(') p->pos++; /* call_follows saw it */
  p->pos++;
  const ir_dim *acc = NULL;
  int nargs = 0;
  for (;;) {
    skip_ws(p);
    size_t at = p->pos;
    const ir_dim *x = parse_expr(p);
    if (!x) return NULL;
    int st = ST_OK;
    if (!acc) {
      acc = x;
    } else if (add) {
      if (!(acc = lin_st(p->a, acc, x, 1, &st))) return fail_st(p, at, st);
    } else if (mul) {
      if (!(acc = mul_st(p->a, acc, x, &st))) return fail_st(p, at, st);
    } else {
      int64_t v = 0;
      if (nargs != 1 || !ir_dim_is_const(x, &v) || v <= 0) {
        set_err(p->err, at, "%s needs a positive integer constant as its second argument",
                div_name(kw));
        return NULL;
      }
      if (!(acc = div_st(p->a, kw, acc, v, &st))) return fail_st(p, at, st);
    }
    nargs++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == ',') {
      p->pos++;
      continue;
    }
    if (p->pos < p->len && p->s[p->pos] == ')') {
      p->pos++;
      break;
    }
    set_err(p->err, p->pos, "expected ',' or ')' in '%.*s(...)'", (int)(n > 32 ? 32 : n), s);
    return NULL;
  }
  if (nargs < 2) {
    set_err(p->err, start, "'%.*s(...)' needs two arguments or more", (int)(n > 32 ? 32 : n), s);
    return NULL;
  }
  return acc;
}

static const ir_dim *parse_factor_inner(parser *p) {
  skip_ws(p);
  size_t start = p->pos;
  if (p->pos >= p->len) {
    set_err(p->err, start, "%s", EXPECTED_DIM);
    return NULL;
  }
  char c = p->s[p->pos];
  if (is_digit(c)) return parse_int(p, false, start);
  if (c == '-') {
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && is_digit(p->s[p->pos])) return parse_int(p, true, start);
    const ir_dim *f = parse_factor(p);
    if (!f) return NULL;
    int st = ST_OK;
    const ir_dim *r = lin_st(p->a, NULL, f, -1, &st);
    return r ? r : fail_st(p, start, st);
  }
  if (c == '(') {
    p->pos++;
    const ir_dim *e = parse_expr(p);
    if (!e) return NULL;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != ')') {
      set_err(p->err, p->pos, "expected ')' to close the '(' at offset %zu", start);
      return NULL;
    }
    p->pos++;
    return e;
  }
  size_t n;
  ir_dim_kind kw = keyword_at(p, start, &n);
  if (n > 0 && call_follows(p, start + n)) return parse_call(p, start, n, kw);
  if (kw != IR_DIM_CONST || n == 0) {
    set_err(p->err, start, "%s", EXPECTED_DIM);
    return NULL;
  }
  if (!p->resolve) {
    set_err(p->err, start, "symbol '%.*s' is not allowed here", (int)n, p->s + start);
    return NULL;
  }
  if (p->err) p->err->msg[0] = 0;
  int sym = p->resolve(p->ud, p->s + start, n, p->err);
  if (sym < 0) {
    if (p->err) {
      p->err->pos = start;
      if (!p->err->msg[0])
        set_err(p->err, start, "unknown symbol '%.*s'", (int)n, p->s + start);
    }
    return NULL;
  }
  p->pos += n;
  ir_dim *d = node_new(p->a, IR_DIM_SYM, 0);
  if (!d || !(d->name = ir_arena_strndup(p->a, p->s + start, n))) return fail_st(p, start, ST_OOM);
  d->sym = sym;
  node_seal(d);
  return d;
}

/* Depth counts parentheses and unary minus, the only recursion on text. */
static const ir_dim *parse_factor(parser *p) {
  if (++p->depth > DIM_MAX_DEPTH) {
    set_err(p->err, p->pos, "dim expression nested too deeply (more than %d levels)",
            DIM_MAX_DEPTH);
    return NULL;
  }
  const ir_dim *r = parse_factor_inner(p);
  p->depth--;
  return r;
}

static const ir_dim *parse_term(parser *p) {
  const ir_dim *f = parse_factor(p);
  while (f) {
    size_t save = p->pos, n;
    int st = ST_OK;
    skip_ws(p);
    size_t op = p->pos;
    ir_dim_kind k;
    if (op < p->len && p->s[op] == '*') {
      p->pos++;
      const ir_dim *g = parse_factor(p);
      if (!g) return NULL;
      if (!(f = mul_st(p->a, f, g, &st))) return fail_st(p, op, st);
    } else if ((k = keyword_at(p, op, &n)) != IR_DIM_CONST) {
      p->pos += n;
      skip_ws(p);
      size_t rpos = p->pos;
      char c = rpos < p->len ? p->s[rpos] : 0;
      int64_t v = 0;
      const ir_dim *g = NULL;
      if (is_digit(c) || c == '(' || c == '-') {
        if (!(g = parse_factor(p))) return NULL;
      }
      if (!ir_dim_is_const(g, &v) || v <= 0) {
        set_err(p->err, rpos, "%s needs a positive integer constant on the right", div_name(k));
        return NULL;
      }
      if (!(f = div_st(p->a, k, f, v, &st))) return fail_st(p, op, st);
    } else {
      p->pos = save; /* trailing spaces are not consumed */
      break;
    }
  }
  return f;
}

static const ir_dim *parse_expr(parser *p) {
  skip_ws(p);
  size_t start = p->pos;
  const ir_dim *t = parse_term(p);
  if (!t) return NULL;
  poly acc = {0};
  bool more = false;
  for (;;) {
    size_t save = p->pos;
    skip_ws(p);
    char c = p->pos < p->len ? p->s[p->pos] : 0;
    if (c != '+' && c != '-') {
      p->pos = save;
      break;
    }
    size_t op = p->pos++;
    if (!more) poly_add_dim(&acc, t, 1);
    more = true;
    if (!(t = parse_term(p))) goto fail;
    poly_add_dim(&acc, t, c == '-' ? -1 : 1);
    if (acc.n > 2 * DIM_MAX_TERMS) poly_normalize(&acc);
    if (acc.st) {
      fail_st(p, op, acc.st);
      goto fail;
    }
  }
  if (more) {
    int st = ST_OK;
    if (!(t = poly_build(p->a, &acc, &st))) fail_st(p, start, st);
  }
  poly_free(&acc);
  return t;
fail:
  poly_free(&acc);
  return NULL;
}

const ir_dim *ir_dim_parse(ir_arena *a, const char *text, size_t len, size_t *consumed,
                           ir_sym_resolver resolve, void *ud, ir_dim_err *err) {
  ir_dim_err local;
  if (!err) err = &local;
  err->pos = 0;
  err->msg[0] = 0;
  parser p = {a, text ? text : "", text ? len : 0, 0, resolve, ud, err, 0};
  const ir_dim *r = parse_expr(&p);
  if (consumed) *consumed = r ? p.pos : err->pos;
  return r;
}
