/* test_dim.c - dims (ir/dim.c): canonical form, printing, parsing, eval,
 * hashing and cloning.
 *
 * Symbols come from a small static table (batch=0, seq=1, n=2, m=3, a=4,
 * b=5, c=6); names s<k> resolve to 10 + k so a test can use many symbols.
 * Every dim lives in an arena created per test and freed at its end. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ir/arena.h"
#include "ir/dim.h"

static const char *const SYMS[] = {"batch", "seq", "n", "m", "a", "b", "c"};
#define NSYMS ((int)(sizeof SYMS / sizeof SYMS[0]))

static int resolve(void *ud, const char *name, size_t len, ir_dim_err *err) {
  (void)ud;
  for (int i = 0; i < NSYMS; i++)
    if (strlen(SYMS[i]) == len && !memcmp(SYMS[i], name, len)) return i;
  if (len >= 2 && len <= 4 && name[0] == 's') {
    int k = 0;
    for (size_t i = 1; i < len; i++) {
      if (name[i] < '0' || name[i] > '9') goto unknown;
      k = k * 10 + (name[i] - '0');
    }
    return 10 + k;
  }
unknown:
  snprintf(err->msg, sizeof err->msg, "unknown symbol '%.*s'", (int)len, name);
  return -1;
}

static ir_arena *A;

static void setup(void) { A = ir_arena_new(); }
static void teardown(void) { ir_arena_free(A); }

TestSuite(dim, .init = setup, .fini = teardown);

/* Parse all of text (fails the test otherwise). */
static const ir_dim *P(const char *text) {
  size_t used = 0;
  ir_dim_err err = {0};
  const ir_dim *d = ir_dim_parse(A, text, strlen(text), &used, resolve, NULL, &err);
  cr_assert_not_null(d, "parse '%s': %s at %zu", text, err.msg, err.pos);
  cr_assert_eq(used, strlen(text), "parse '%s' consumed %zu", text, used);
  return d;
}

static const char *S(const ir_dim *d) {
  static char buf[8][512];
  static int k;
  char *b = buf[k++ % 8];
  ir_dim_print(d, b, 512);
  return b;
}

static void assert_same(const ir_dim *x, const ir_dim *y) {
  cr_assert(ir_dim_equal(x, y), "'%s' != '%s'", S(x), S(y));
  cr_assert_eq(ir_dim_cmp(x, y), 0);
  cr_assert_eq(ir_dim_hash(x), ir_dim_hash(y), "hash of '%s'", S(x));
  cr_assert_str_eq(S(x), S(y));
}

static void assert_parses_same(const char *x, const char *y) { assert_same(P(x), P(y)); }

static void assert_prints(const char *in, const char *out) {
  cr_assert_str_eq(S(P(in)), out, "'%s' printed '%s', expected '%s'", in, S(P(in)), out);
}

/* Parse text expecting an error at pos whose message contains msg. */
static void assert_parse_error(const char *text, size_t pos, const char *msg) {
  ir_dim_err err = {0};
  size_t used = 12345;
  const ir_dim *d = ir_dim_parse(A, text, strlen(text), &used, resolve, NULL, &err);
  cr_assert_null(d, "'%s' parsed as '%s'", text, d ? S(d) : "");
  cr_assert_eq(err.pos, pos, "'%s': error at %zu (%s), expected %zu", text, err.pos, err.msg,
               pos);
  cr_assert(strstr(err.msg, msg), "'%s': message '%s' lacks '%s'", text, err.msg, msg);
}

static int64_t E(const char *text, const int64_t *vals) {
  int64_t v = 0;
  ir_dim_err err = {0};
  cr_assert(ir_dim_eval(P(text), vals, &v, &err), "eval '%s': %s", text, err.msg);
  return v;
}

/* ------------------------------------------------------------ canonical */

Test(dim, sum_is_commutative) {
  assert_parses_same("seq + 1", "1 + seq");
  assert_parses_same("a + b + c", "c + b + a");
  assert_parses_same("a + (b + c)", "(a + b) + c");
}

Test(dim, product_is_commutative) {
  assert_parses_same("batch * seq", "seq * batch");
  assert_parses_same("a * (b * c)", "c * a * b");
}

Test(dim, like_terms_merge) {
  const ir_dim *d = P("2 * n - n");
  assert_same(d, P("n"));
  cr_assert(ir_dim_is_sym(d));
  assert_parses_same("n + n + n", "3 * n");
  assert_parses_same("a * b + b * a", "2 * a * b");
}

Test(dim, cancelling_terms_give_a_constant) {
  int64_t v = -1;
  cr_assert(ir_dim_is_const(P("n - n"), &v));
  cr_assert_eq(v, 0);
  cr_assert(ir_dim_is_const(P("(a + 3) - (a - 4)"), &v));
  cr_assert_eq(v, 7);
}

Test(dim, multiplication_distributes_over_sums) {
  assert_parses_same("(a + b) * 2", "2 * a + 2 * b");
  assert_parses_same("(a + 1) * (a - 1)", "a * a - 1");
  assert_parses_same("(batch + 1) * seq", "batch * seq + seq");
  assert_parses_same("-(a - b)", "b - a");
}

Test(dim, constructors_fold_identities) {
  const ir_dim *n = ir_dim_sym(A, 2, "n");
  const ir_dim *zero = ir_dim_const(A, 0), *one = ir_dim_const(A, 1);
  int64_t v = -1;
  assert_same(ir_dim_add(A, n, zero), n);
  assert_same(ir_dim_mul(A, one, n), n);
  cr_assert(ir_dim_is_const(ir_dim_mul(A, n, zero), &v) && v == 0);
  assert_same(ir_dim_floordiv(A, n, 1, NULL), n);
  assert_same(ir_dim_ceildiv(A, n, 1, NULL), n);
  cr_assert(ir_dim_is_const(ir_dim_mod(A, n, 1, NULL), &v) && v == 0);
  cr_assert(ir_dim_is_const(ir_dim_sub(A, ir_dim_const(A, 3), ir_dim_const(A, 5)), &v) &&
            v == -2);
}

Test(dim, constant_division_folds_with_floor_semantics) {
  int64_t v = 0;
  cr_assert(ir_dim_is_const(P("7 floordiv 2"), &v) && v == 3);
  cr_assert(ir_dim_is_const(P("-7 floordiv 2"), &v) && v == -4);
  cr_assert(ir_dim_is_const(P("-7 ceildiv 2"), &v) && v == -3);
  cr_assert(ir_dim_is_const(P("7 ceildiv 2"), &v) && v == 4);
  cr_assert(ir_dim_is_const(P("-7 mod 3"), &v) && v == 2);
}

Test(dim, exact_division_of_multiples_simplifies) {
  assert_parses_same("(4 * n + 8) floordiv 4", "n + 2");
  assert_parses_same("(4 * n + 8) ceildiv 4", "n + 2");
  assert_parses_same("(6 * a * b - 3) floordiv 3", "2 * a * b - 1");
  int64_t v = -1;
  cr_assert(ir_dim_is_const(P("(4 * n + 8) mod 4"), &v) && v == 0);
  cr_assert(ir_dim_is_const(P("(n * 6) mod 3"), &v) && v == 0);
}

Test(dim, inexact_division_is_kept) {
  cr_assert_eq(P("(4 * n + 9) floordiv 4")->kind, IR_DIM_FLOORDIV);
  cr_assert_eq(P("n floordiv 4")->kind, IR_DIM_FLOORDIV);
  cr_assert_eq(P("(2 * n) ceildiv 4")->kind, IR_DIM_CEILDIV);
  cr_assert_eq(P("(n + 2) mod 4")->kind, IR_DIM_MOD);
  cr_assert_not(ir_dim_equal(P("n floordiv 2 * 2"), P("n")));
  cr_assert_not(ir_dim_equal(P("n floordiv 2"), P("n ceildiv 2")));
}

Test(dim, nested_division_merges) {
  assert_parses_same("n floordiv 2 floordiv 3", "n floordiv 6");
  assert_parses_same("(n ceildiv 4) ceildiv 2", "n ceildiv 8");
  assert_parses_same("n mod 6 mod 3", "n mod 3");
  assert_parses_same("n mod 3 mod 5", "n mod 3");
  cr_assert_eq(P("n floordiv 2 ceildiv 3")->kind, IR_DIM_CEILDIV);
}

Test(dim, every_order_of_three_terms_is_equal) {
  const ir_dim *s[3] = {ir_dim_sym(A, 4, "a"), ir_dim_sym(A, 5, "b"),
                        ir_dim_mul(A, ir_dim_const(A, 3), ir_dim_sym(A, 6, "c"))};
  const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  const ir_dim *first = NULL;
  for (int i = 0; i < 6; i++) {
    const ir_dim *d = ir_dim_add(A, ir_dim_add(A, s[perm[i][0]], s[perm[i][1]]), s[perm[i][2]]);
    if (!first) first = d;
    assert_same(first, d);
  }
  cr_assert_str_eq(S(first), "a + b + 3 * c");
}

Test(dim, canonical_sum_is_flat_with_constant_last) {
  const ir_dim *d = P("1 + (a + (2 + b))");
  cr_assert_eq(d->kind, IR_DIM_ADD);
  cr_assert_eq(d->n, 3);
  for (int i = 0; i < d->n; i++) cr_assert_neq(d->ops[i]->kind, IR_DIM_ADD);
  cr_assert(ir_dim_is_const(d->ops[2], NULL));
  cr_assert_eq(d->ops[2]->value, 3);
}

Test(dim, canonical_product_is_flat_with_coefficient) {
  const ir_dim *d = P("(2 * b) * (3 * a)");
  cr_assert_eq(d->kind, IR_DIM_MUL);
  cr_assert_eq(d->value, 6);
  cr_assert_eq(d->n, 2);
  cr_assert_eq(d->ops[0]->sym, 4);
  cr_assert_eq(d->ops[1]->sym, 5);
}

/* -------------------------------------------------------------- printing */

Test(dim, prints_canonical_text) {
  assert_prints("1 + n", "n + 1");
  assert_prints("n*2+1", "2 * n + 1");
  assert_prints("n - 1", "n - 1");
  assert_prints("seq*batch", "batch * seq");
  assert_prints("(n+1) floordiv 2", "(n + 1) floordiv 2");
  assert_prints("n floordiv 4", "n floordiv 4");
  assert_prints("n ceildiv 8", "n ceildiv 8");
  assert_prints("n mod 2", "n mod 2");
  assert_prints("-n", "-n");
  assert_prints("1 - n", "-n + 1");
  assert_prints("n - 2*m", "n - 2 * m");
  assert_prints("-3 * seq * batch", "-3 * batch * seq");
  assert_prints("batch * seq floordiv 4", "(batch * seq) floordiv 4");
  assert_prints("2 * (n floordiv 4)", "2 * (n floordiv 4)");
  assert_prints("m - n floordiv 4", "m - n floordiv 4");
  assert_prints("-(n floordiv 2)", "-(n floordiv 2)");
  assert_prints("(-n) floordiv 2", "(-n) floordiv 2");
  assert_prints("n floordiv 2 mod 3", "(n floordiv 2) mod 3");
  assert_prints("n * n", "n * n");
  assert_prints("-5", "-5");
  assert_prints("0", "0");
  assert_prints("a * 0 + 10", "10");
}

Test(dim, print_truncates_like_snprintf) {
  char buf[6];
  size_t need = ir_dim_print(P("batch * seq"), buf, sizeof buf);
  cr_assert_eq(need, strlen("batch * seq"));
  cr_assert_str_eq(buf, "batch");
  cr_assert_eq(ir_dim_print(P("n + 1"), NULL, 0), 5);
}

Test(dim, parse_print_parse_round_trips) {
  static const char *const texts[] = {
      "7", "-7", "n", "batch * seq", "seq + 1", "2 * n - 3", "n floordiv 4", "n ceildiv 8",
      "n mod 2", "-n", "-batch * seq + n - 1", "(a + b) * (a - b)", "(n + 1) floordiv 2",
      "2 * (n floordiv 4) - (m mod 3) * n", "((a * b + 1) ceildiv 3) mod 7 + a",
      "-(n floordiv 2) - 1", "(-n) mod 4", "-9223372036854775807 * n",
      "n - 9223372036854775807", "-9223372036854775808", "n + -9223372036854775808",
      "-9223372036854775808 * n + 1", "s0 * s1 * s2 - s3 floordiv 2"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    const ir_dim *d = P(texts[i]);
    const char *once = S(d);
    const ir_dim *e = P(once);
    assert_same(d, e);
    cr_assert_str_eq(S(e), once, "'%s' reprinted differently", texts[i]);
  }
}

/* --------------------------------------------------------------- parsing */

Test(dim, max_function_forms_equal_the_infix_forms) {
  assert_parses_same("add(n, -1)", "n - 1");
  assert_parses_same("add(batch, seq, 2)", "batch + seq + 2");
  assert_parses_same("mul(n, 2)", "2 * n");
  assert_parses_same("mul_no_wrap(batch, seq)", "batch * seq");
  assert_parses_same("mul_no_wrap(b, add(n, 1), 4)", "4 * b * (n + 1)");
  assert_parses_same("floordiv(n, 4)", "n floordiv 4");
  assert_parses_same("ceildiv(add(n, 3), 2)", "(n + 3) ceildiv 2");
  assert_parses_same("mod(n, 3)", "n mod 3");
  assert_parses_same("add (n , 1)", "n + 1");
  assert_parses_same("2 * add(n, 1) - m", "2 * n + 2 - m");
}

Test(dim, max_function_form_errors_say_what_and_where) {
  assert_parse_error("add(n)", 0, "'add(...)' needs two arguments or more");
  assert_parse_error("frob(n, 1)", 0, "unknown dim function 'frob'");
  assert_parse_error("floordiv(n, m)", 12,
                     "floordiv needs a positive integer constant as its second argument");
  assert_parse_error("mod(n, 0)", 7, "mod needs a positive integer constant");
  assert_parse_error("mod(n, 2, 3)", 10, "mod needs a positive integer constant");
  assert_parse_error("add(n, 1", 8, "expected ',' or ')' in 'add(...)'");
  assert_parse_error("mul(n, )", 7, "expected a dim");
  assert_parse_error("mul(9223372036854775807, 2)", 25, "overflow");
}

Test(dim, parse_stops_before_what_cannot_continue) {
  size_t used = 0;
  ir_dim_err err = {0};
  const char *t = "batch, seq";
  cr_assert_not_null(ir_dim_parse(A, t, strlen(t), &used, resolve, NULL, &err));
  cr_assert_eq(used, 5);
  t = "  n + 1 ]";
  const ir_dim *d = ir_dim_parse(A, t, strlen(t), &used, resolve, NULL, &err);
  cr_assert_str_eq(S(d), "n + 1");
  cr_assert_eq(used, 7, "trailing spaces are not consumed");
  t = "n modx";
  cr_assert_not_null(ir_dim_parse(A, t, strlen(t), &used, resolve, NULL, &err));
  cr_assert_eq(used, 1);
  t = "n + 1xyz";
  cr_assert_not_null(ir_dim_parse(A, t, 5, &used, resolve, NULL, &err));
  cr_assert_eq(used, 5, "len bounds the text");
}

Test(dim, parse_errors_say_what_and_where) {
  const char *expected = "expected a dim (integer, symbol or parenthesized expression)";
  assert_parse_error("", 0, expected);
  assert_parse_error("n +", 3, expected);
  assert_parse_error("n + )", 4, expected);
  assert_parse_error("n + floordiv", 4, expected);
  assert_parse_error("*n", 0, expected);
  assert_parse_error("(n + 1", 6, "expected ')'");
  assert_parse_error("n floordiv 0", 11, "floordiv needs a positive integer constant on the right");
  assert_parse_error("n floordiv m", 11, "floordiv needs a positive integer constant on the right");
  assert_parse_error("n ceildiv -2", 10, "ceildiv needs a positive integer constant");
  assert_parse_error("n mod", 5, "mod needs a positive integer constant");
  assert_parse_error("n mod (m + 1)", 6, "mod needs a positive integer constant");
}

Test(dim, parse_reports_unknown_symbols_at_their_offset) {
  assert_parse_error("x + 1", 0, "unknown symbol 'x'");
  assert_parse_error("n * (seq + zz)", 11, "unknown symbol 'zz'");
  ir_dim_err err = {0};
  cr_assert_null(ir_dim_parse(A, "n", 1, NULL, NULL, NULL, &err));
  cr_assert(strstr(err.msg, "not allowed"), "%s", err.msg);
}

Test(dim, parse_accepts_constant_expression_divisors) {
  assert_parses_same("n floordiv (2 * 2)", "n floordiv 4");
  assert_parses_same("n mod (7 - 4)", "n mod 3");
}

Test(dim, parse_rejects_integers_too_large) {
  assert_parse_error("99999999999999999999", 0, "integer too large");
  assert_parse_error("n + 9223372036854775808", 4, "integer too large");
  int64_t v = 0;
  cr_assert(ir_dim_is_const(P("-9223372036854775808"), &v) && v == INT64_MIN);
  cr_assert(ir_dim_is_const(P("9223372036854775807"), &v) && v == INT64_MAX);
}

Test(dim, parse_rejects_arithmetic_overflow) {
  assert_parse_error("9223372036854775807 + 1", 0, "overflow");
  assert_parse_error("n * 4611686018427387904 * 2", 24, "overflow");
  assert_parse_error("-(-9223372036854775808)", 0, "overflow");
  /* intermediate sums do not depend on the order of the terms */
  assert_parses_same("9223372036854775807 + 1 - 1", "9223372036854775807");
}

Test(dim, parse_bounds_nesting_and_size) {
  char deep[2100];
  memset(deep, '(', 1000);
  strcpy(deep + 1000, "n");
  memset(deep + 1001, ')', 1000);
  deep[2001] = 0;
  ir_dim_err err = {0};
  cr_assert_null(ir_dim_parse(A, deep, strlen(deep), NULL, resolve, NULL, &err));
  cr_assert(strstr(err.msg, "nested too deeply"), "%s", err.msg);

  char big[512] = "1";
  for (int i = 0; i < 12; i++) snprintf(big + strlen(big), 32, " * (s%d + 1)", i);
  cr_assert_null(ir_dim_parse(A, big, strlen(big), NULL, resolve, NULL, &err));
  cr_assert(strstr(err.msg, "too large"), "%s", err.msg);
}

/* ------------------------------------------------------------------ eval */

Test(dim, eval_substitutes_symbols) {
  int64_t vals[7] = {2, 3, 5, 7, 0, 0, 0};
  cr_assert_eq(E("2 * n + 1", vals), 11);
  cr_assert_eq(E("batch * seq - m", vals), -1);
  cr_assert_eq(E("(n + 1) floordiv 2", vals), 3);
  cr_assert_eq(E("42", NULL), 42);
}

Test(dim, eval_floordiv_mod_ceildiv_use_floor_semantics) {
  int64_t vals[7] = {0, 0, -7, 0, 0, 0, 0};
  cr_assert_eq(E("n floordiv 2", vals), -4);
  cr_assert_eq(E("n ceildiv 2", vals), -3);
  cr_assert_eq(E("n mod 2", vals), 1);
  cr_assert_eq(E("n mod 7", vals), 0);
  vals[2] = 7;
  cr_assert_eq(E("n floordiv 2", vals), 3);
  cr_assert_eq(E("n ceildiv 2", vals), 4);
  cr_assert_eq(E("n mod 3", vals), 1);
  vals[2] = INT64_MIN;
  cr_assert_eq(E("n floordiv 2", vals), INT64_MIN / 2);
  cr_assert_eq(E("n ceildiv 3", vals), INT64_MIN / 3);
  cr_assert_eq(E("n mod 3", vals), 1);
}

Test(dim, eval_reports_overflow) {
  int64_t vals[7] = {0, 0, INT64_C(1) << 32, INT64_MAX, 0, 0, 0};
  int64_t v = 0;
  ir_dim_err err = {0};
  cr_assert_not(ir_dim_eval(P("n * n"), vals, &v, &err));
  cr_assert(strstr(err.msg, "overflow") && strstr(err.msg, "n * n"), "%s", err.msg);
  cr_assert_not(ir_dim_eval(P("m + 1"), vals, &v, &err));
  cr_assert_not(ir_dim_eval(P("-2 * m"), vals, &v, &err));
  cr_assert_not(ir_dim_eval(P("n"), NULL, &v, &err));
  cr_assert(strstr(err.msg, "symbol values"), "%s", err.msg);
}

/* ------------------------------------------------------------ hash, misc */

Test(dim, equal_dims_hash_equal_across_arenas) {
  ir_arena *b = ir_arena_new();
  ir_dim_err err = {0};
  const char *t = "seq * batch + 2 * (n floordiv 3) - 1";
  const ir_dim *x = P("(batch * seq) - 1 + (n floordiv 3) * 2");
  const ir_dim *y = ir_dim_parse(b, t, strlen(t), NULL, resolve, NULL, &err);
  cr_assert_not_null(y);
  cr_assert_eq(ir_dim_hash(x), ir_dim_hash(y));
  cr_assert(ir_dim_equal(x, y));
  ir_arena_free(b);
}

Test(dim, different_dims_hash_differently) {
  static const char *const texts[] = {"n + 1",       "n + 2",       "n",          "m",
                                      "2 * n",       "n floordiv 2", "n mod 2",   "n ceildiv 2",
                                      "batch * seq", "batch + seq",  "n * n",     "1",
                                      "-n",          "n floordiv 3"};
  size_t k = sizeof texts / sizeof texts[0];
  for (size_t i = 0; i < k; i++)
    for (size_t j = i + 1; j < k; j++) {
      const ir_dim *x = P(texts[i]), *y = P(texts[j]);
      cr_assert_not(ir_dim_equal(x, y), "'%s' == '%s'", texts[i], texts[j]);
      cr_assert_neq(ir_dim_cmp(x, y), 0);
      cr_assert_eq(ir_dim_cmp(x, y), -ir_dim_cmp(y, x));
      cr_assert_neq(ir_dim_hash(x), ir_dim_hash(y), "'%s' and '%s'", texts[i], texts[j]);
    }
}

Test(dim, order_puts_constants_first) {
  cr_assert_lt(ir_dim_cmp(P("100"), P("n")), 0);
  cr_assert_lt(ir_dim_cmp(P("-3"), P("2")), 0);
  cr_assert_lt(ir_dim_cmp(P("batch"), P("seq")), 0);
}

Test(dim, clone_survives_its_source_arena) {
  ir_arena *src = ir_arena_new();
  const char *t = "-(a + b) * (seq ceildiv 4) + batch * batch mod 5 - 9";
  ir_dim_err err = {0};
  const ir_dim *d = ir_dim_parse(src, t, strlen(t), NULL, resolve, NULL, &err);
  cr_assert_not_null(d, "%s", err.msg);
  const ir_dim *c = ir_dim_clone(A, d);
  cr_assert(ir_dim_equal(c, d));
  cr_assert_eq(ir_dim_hash(c), ir_dim_hash(d));
  char before[256];
  ir_dim_print(d, before, sizeof before);
  ir_arena_free(src);
  cr_assert_str_eq(S(c), before);
  assert_same(c, P(t));
}

Test(dim, uses_sym_finds_symbols_anywhere) {
  const ir_dim *d = P("2 * (n floordiv 4) + batch * seq");
  cr_assert(ir_dim_uses_sym(d, 2));
  cr_assert(ir_dim_uses_sym(d, 0));
  cr_assert(ir_dim_uses_sym(d, 1));
  cr_assert_not(ir_dim_uses_sym(d, 3));
  cr_assert_not(ir_dim_uses_sym(P("5"), 2));
}

Test(dim, division_constructors_reject_nonpositive_divisors) {
  ir_dim_err err = {0};
  const ir_dim *n = ir_dim_sym(A, 2, "n");
  cr_assert_null(ir_dim_floordiv(A, n, 0, &err));
  cr_assert(strstr(err.msg, "floordiv needs a positive integer constant"), "%s", err.msg);
  cr_assert_null(ir_dim_mod(A, n, -3, &err));
  cr_assert(strstr(err.msg, "mod"), "%s", err.msg);
  cr_assert_null(ir_dim_ceildiv(A, n, -1, NULL));
}

Test(dim, constructors_fail_on_overflow_and_null) {
  const ir_dim *big = ir_dim_const(A, INT64_MAX);
  cr_assert_null(ir_dim_add(A, big, ir_dim_const(A, 1)));
  cr_assert_null(ir_dim_mul(A, big, ir_dim_const(A, 2)));
  cr_assert_null(ir_dim_sub(A, ir_dim_const(A, INT64_MIN), ir_dim_const(A, 1)));
  cr_assert_null(ir_dim_add(A, NULL, big));
  cr_assert_null(ir_dim_mul(A, big, NULL));
  cr_assert_null(ir_dim_floordiv(A, NULL, 2, NULL));
}
