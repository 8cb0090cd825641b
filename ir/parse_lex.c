/* parse_lex.c - the lexer of the MO text parser and the grammar of attribute
 * values (parse_lex.h).
 *
 * Tokens are separated by spaces, tabs, newlines and `//` comments.
 * Attribute values:
 *   int | float | 'true' | 'false' | string | '[' ints ']' | '[' strings ']' | dtype
 *   | '#M.dense_array<' [v {',' v}] '>' ':' 'tensor<' {N 'x'} dtype '>'
 * Numbers: -?digits are ints, with '.' or an exponent floats (read with
 * strtod, correctly rounded); `nan`, `inf`, `-inf`; 0x.. hex (an int, or for
 * float dense values a bit pattern). Strings: \" \\ \n \t and \XX (two hex
 * digits, not 00) escapes, no raw newline.
 * MAX's printed forms (ir_lex_max_dict): '[' or '{' dicts whose values may
 * carry a ': type' suffix (`axis = -1 : index`, `counter = 7 : i64`), and
 * whose values may be '#dialect<...>' attributes other than dense arrays
 * (`#mosh<ape[b, 4]>`, `#M.device_ref<"cpu", 0>`), kept as their raw text
 * (a string) for parse_max.c to read from where they start.
 * A dense array's tensor type may say i1 (MLIR's bool, as MAX prints it).
 * Dense values are stored as raw little-endian bytes of the dtype: ints and
 * bools (true/false, 0/1) by value, range-checked; f32 / f64 from decimals
 * (correctly rounded; overflow is an error), `nan` (the default quiet NaN,
 * `-nan` with the sign set), `inf`, `-inf`, or a hex bit pattern
 * (0x7FC00001); f16 / bf16 from decimals (rounded to nearest even) or a hex
 * bit pattern (0x3C00, the form the printer writes); f8 kinds from hex bit
 * patterns only.
 *
 * Assumes: text[0..n) need not be NUL-terminated; nothing past n is read.
 * Guarantees: every failure leaves a message at a line:col; no crash on any
 * input. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_lex.h"

void *ir_lex_push(vec *v, size_t elem) {
  if (v->n == v->cap) {
    size_t ncap = v->cap ? v->cap * 2 : 16;
    void *np = realloc(v->p, ncap * elem);
    if (!np) return NULL;
    v->p = np;
    v->cap = ncap;
  }
  void *slot = (char *)v->p + v->n++ * elem;
  memset(slot, 0, elem);
  return slot;
}

/* ---- errors ---- */
/* 1-based line and column (in bytes) of offset pos. Scans on from the last
 * offset asked for when it can, so locating every node stays linear. */
ir_loc ir_lex_loc(parser *p, size_t pos) {
  if (pos > p->n) pos = p->n;
  if (pos < p->loc_pos || p->loc.line == 0) {
    p->loc_pos = 0;
    p->loc = (ir_loc){1, 1};
  }
  ir_loc l = p->loc;
  for (size_t i = p->loc_pos; i < pos; i++) {
    if (p->s[i] == '\n') {
      l.line++;
      l.col = 1;
    } else {
      l.col++;
    }
  }
  p->loc_pos = pos;
  p->loc = l;
  return l;
}

int ir_lex_error(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ir_lex_error(parser *p, size_t pos, const char *fmt, ...) {
  if (p->failed) return -1;
  p->failed = true;
  ir_loc l = ir_lex_loc(p, pos);
  p->d->line = l.line;
  p->d->col = l.col;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->d->msg, sizeof p->d->msg, fmt, ap);
  va_end(ap);
  return -1;
}

int ir_lex_oom(parser *p) { return ir_lex_error(p, p->pos, "out of memory"); }

/* ---- lexing ---- */
void ir_lex_skip(parser *p) {
  while (p->pos < p->n) {
    char c = p->s[p->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      p->pos++;
    } else if (c == '/' && lex_at(p, p->pos + 1) == '/') {
      while (p->pos < p->n && p->s[p->pos] != '\n') p->pos++;
    } else {
      break;
    }
  }
}

int ir_lex_peek(parser *p) {
  ir_lex_skip(p);
  return lex_at(p, p->pos);
}

bool ir_lex_accept(parser *p, char c) {
  if (ir_lex_peek(p) != (unsigned char)c) return false;
  p->pos++;
  return true;
}

/* A literal such as "->" or "!mo.tensor" (a word must not run on). */
bool ir_lex_accept_lit(parser *p, const char *lit) {
  size_t l = strlen(lit);
  ir_lex_skip(p);
  if (p->n - p->pos < l || memcmp(p->s + p->pos, lit, l) != 0) return false;
  if (is_id_char((unsigned char)lit[l - 1]) && is_id_char(lex_at(p, p->pos + l))) return false;
  p->pos += l;
  return true;
}

/* "expected X, found 'tok'" or "unexpected end of input, expected X". */
int ir_lex_expected(parser *p, const char *what) {
  ir_lex_skip(p);
  if (p->pos >= p->n) return ir_lex_error(p, p->pos, "unexpected end of input, expected %s", what);
  size_t i = p->pos, e = i + 1;
  int c = lex_at(p, i);
  if (c == '%' || c == '@' || c == '!' || c == '#') {
    while (is_value_char(lex_at(p, e))) e++;
  } else if (is_id_char(c) || c == '-') {
    while (is_id_char(lex_at(p, e))) e++;
  } else if (c < 0x20 || c >= 0x7f) {
    return ir_lex_error(p, i, "expected %s, found byte 0x%02x", what, (unsigned)c);
  }
  if (e - i > 40) e = i + 40;
  return ir_lex_error(p, i, "expected %s, found '%.*s'", what, (int)(e - i), p->s + i);
}

int ir_lex_expect(parser *p, char c) {
  if (ir_lex_accept(p, c)) return 0;
  char what[8];
  snprintf(what, sizeof what, "'%c'", c);
  return ir_lex_expected(p, what);
}

/* Identifier [A-Za-z_][A-Za-z0-9_.$]* at the current position. */
bool ir_lex_ident(parser *p, const char **s, size_t *len, size_t *where) {
  ir_lex_skip(p);
  if (!is_alpha(lex_at(p, p->pos))) return false;
  size_t b = p->pos;
  while (is_id_char(lex_at(p, p->pos))) p->pos++;
  *s = p->s + b;
  *len = p->pos - b;
  if (where) *where = b;
  return true;
}

/* Number-like literal at the current position (not consumed when absent). */
bool ir_lex_number(parser *p, numtok *t) {
  ir_lex_skip(p);
  size_t i = p->pos;
  t->at = i;
  t->neg = false;
  if (lex_at(p, i) == '-') {
    t->neg = true;
    i++;
  }
  if (lex_at(p, i) == 'i' && lex_at(p, i + 1) == 'n' && lex_at(p, i + 2) == 'f' &&
      !is_id_char(lex_at(p, i + 3))) {
    t->kind = T_INF;
    i += 3;
  } else if (lex_at(p, i) == 'n' && lex_at(p, i + 1) == 'a' && lex_at(p, i + 2) == 'n' &&
             !is_id_char(lex_at(p, i + 3))) {
    t->kind = T_NAN;
    i += 3;
  } else if (lex_at(p, i) == '0' && (lex_at(p, i + 1) == 'x' || lex_at(p, i + 1) == 'X') &&
             is_hex(lex_at(p, i + 2))) {
    t->kind = T_HEX;
    i += 2;
    while (is_hex(lex_at(p, i))) i++;
  } else if (is_digit(lex_at(p, i))) {
    t->kind = T_INT;
    while (is_digit(lex_at(p, i))) i++;
    if (lex_at(p, i) == '.') {
      t->kind = T_FLOAT;
      i++;
      while (is_digit(lex_at(p, i))) i++;
    }
    if (lex_at(p, i) == 'e' || lex_at(p, i) == 'E') {
      size_t j = i + 1;
      if (lex_at(p, j) == '-' || lex_at(p, j) == '+') j++;
      if (is_digit(lex_at(p, j))) {
        t->kind = T_FLOAT;
        i = j;
        while (is_digit(lex_at(p, i))) i++;
      }
    }
  } else {
    return false;
  }
  t->len = i - t->at;
  p->pos = i;
  return true;
}

/* Magnitude of an INT or HEX token; false on overflow. */
static bool tok_magnitude(const parser *p, const numtok *t, uint64_t *out) {
  size_t i = t->at + (t->neg ? 1 : 0), e = t->at + t->len;
  uint64_t v = 0;
  if (t->kind == T_HEX) {
    for (i += 2; i < e; i++) {
      int c = p->s[i];
      int dgt = is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
      if (v >> 60) return false;
      v = v << 4 | (uint64_t)dgt;
    }
  } else {
    for (; i < e; i++) {
      uint64_t dgt = (uint64_t)(p->s[i] - '0');
      if (v > (UINT64_MAX - dgt) / 10) return false;
      v = v * 10 + dgt;
    }
  }
  *out = v;
  return true;
}

int ir_lex_int64(parser *p, const numtok *t, int64_t *out) {
  uint64_t m;
  if (!tok_magnitude(p, t, &m) || m > (t->neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
    return ir_lex_error(p, t->at, "integer %.*s is out of range", (int)t->len, p->s + t->at);
  *out = t->neg ? (int64_t)(0 - m) : (int64_t)m;
  return 0;
}

/* Decimal token -> float (for f32) or double (else) through strtof / strtod,
 * correctly rounded; overflow is an error naming dt. */
static int tok_real(parser *p, const numtok *t, ir_dtype dt, double *d, float *f) {
  char buf[400];
  if (t->len >= sizeof buf) return ir_lex_error(p, t->at, "number literal is too long");
  memcpy(buf, p->s + t->at, t->len);
  buf[t->len] = 0;
  errno = 0;
  bool inf;
  if (dt == IR_DT_F32) {
    *f = strtof(buf, NULL);
    inf = isinf(*f);
  } else {
    *d = strtod(buf, NULL);
    inf = isinf(*d);
  }
  if (errno == ERANGE && inf)
    return ir_lex_error(p, t->at, "%s is out of range for %s", buf, ir_dtype_name(dt));
  return 0;
}

/* String literal with \" \\ \n \t and \XX (two hex digits) escapes, into the
 * graph's arena. */
int ir_lex_string(parser *p, const char **out) {
  if (ir_lex_peek(p) != '"') return ir_lex_expected(p, "a string");
  size_t b = p->pos++;
  vec *v = &p->list; /* reused as a byte buffer */
  size_t save = v->n;
  for (;;) {
    int c = lex_at(p, p->pos);
    if (c < 0 || c == '\n') return ir_lex_error(p, b, "unterminated string");
    p->pos++;
    if (c == '"') break;
    if (c == '\\') {
      int e = lex_at(p, p->pos);
      if (e == '"' || e == '\\') {
        c = e;
        p->pos++;
      } else if (e == 'n') {
        c = '\n';
        p->pos++;
      } else if (e == 't') {
        c = '\t';
        p->pos++;
      } else if (is_hex(e) && is_hex(lex_at(p, p->pos + 1))) {
        int h = lex_at(p, p->pos + 1);
        c = (is_digit(e) ? e - '0' : (e | 0x20) - 'a' + 10) * 16 +
            (is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
        if (c == 0) return ir_lex_error(p, p->pos - 1, "a string cannot contain a NUL byte");
        p->pos += 2;
      } else {
        return ir_lex_error(p, p->pos - 1, "unknown escape sequence in string");
      }
    }
    char *slot = ir_lex_push(v, 1);
    if (!slot) return ir_lex_oom(p);
    *slot = (char)c;
  }
  char *s = ir_arena_strndup(p->g->arena, v->n > save ? (char *)v->p + save : "", v->n - save);
  v->n = save;
  if (!s) return ir_lex_oom(p);
  *out = s;
  return 0;
}

/* ---- attribute values ---- */
/* Little-endian store of the low `size` bytes of v. */
static void put_le(unsigned char *dst, uint64_t v, size_t size) {
  for (size_t k = 0; k < size; k++) dst[k] = (unsigned char)(v >> (8 * k));
}

/* Round a finite double to a binary float with `eb` exponent bits and `mb`
 * mantissa bits (IEEE layout with inf/nan), to nearest even. False on overflow. */
static bool to_small_float(double x, int eb, int mb, uint64_t *bits) {
  uint64_t sign = signbit(x) ? (uint64_t)1 << (eb + mb) : 0;
  double a = fabs(x);
  if (a == 0) {
    *bits = sign;
    return true;
  }
  int bias = (1 << (eb - 1)) - 1, e;
  frexp(a, &e);
  e -= 1; /* a = 1.f * 2^e */
  int emin = 1 - bias;
  int qexp = (e < emin ? emin : e) - mb; /* value of one unit in the last place */
  double r = nearbyint(ldexp(a, -qexp));
  uint64_t m = (uint64_t)r, one = (uint64_t)1 << mb;
  if (e < emin) { /* subnormal; r == one rounds up to the smallest normal */
    *bits = sign | m;
    return true;
  }
  if (m == one << 1) {
    m = one;
    e++;
  }
  if (e + bias >= (1 << eb) - 1) return false;
  *bits = sign | (uint64_t)(e + bias) << mb | (m - one);
  return true;
}

/* Convert dense token t to one element of dtype dt at dst. */
static int dense_elem(parser *p, const numtok *t, ir_dtype dt, unsigned char *dst) {
  size_t size = ir_dtype_size(dt);
  const char *txt = p->s + t->at;
  int tl = (int)(t->len > 64 ? 64 : t->len);
  if (dt == IR_DT_BOOL) {
    uint64_t m = 2;
    if (t->kind == T_TRUE || t->kind == T_FALSE)
      m = t->kind == T_TRUE;
    else if (t->kind == T_INT && !t->neg && !tok_magnitude(p, t, &m))
      m = 2;
    if (m > 1)
      return ir_lex_error(p, t->at, "expected true or false for a bool value, found '%.*s'", tl,
                          txt);
    dst[0] = (unsigned char)m;
    return 0;
  }
  if (ir_dtype_is_int(dt)) {
    uint64_t m;
    if (t->kind != T_INT && t->kind != T_HEX)
      return ir_lex_error(p, t->at, "expected an integer for %s, found '%.*s'", ir_dtype_name(dt),
                          tl, txt);
    unsigned bitsz = (unsigned)size * 8;
    uint64_t umax = bitsz == 64 ? UINT64_MAX : ((uint64_t)1 << bitsz) - 1;
    bool fits = tok_magnitude(p, t, &m);
    if (fits && ir_dtype_is_signed(dt))
      fits = m <= (t->neg ? (umax >> 1) + 1 : umax >> 1);
    else if (fits)
      fits = m <= umax && (!t->neg || m == 0);
    if (!fits)
      return ir_lex_error(p, t->at, "value %.*s does not fit in %s", tl, txt, ir_dtype_name(dt));
    put_le(dst, t->neg ? 0 - m : m, size);
    return 0;
  }
  if (!ir_dtype_is_float(dt))
    return ir_lex_error(p, t->at, "dense values of %s are not supported", ir_dtype_name(dt));
  if (t->kind == T_TRUE || t->kind == T_FALSE)
    return ir_lex_error(p, t->at, "expected a number for %s, found '%.*s'", ir_dtype_name(dt), tl,
                        txt);
  if (t->kind == T_HEX) { /* a bit pattern */
    uint64_t m;
    if (t->neg || !tok_magnitude(p, t, &m) || (size < 8 && m >> (size * 8)))
      return ir_lex_error(p, t->at, "bit pattern %.*s does not fit in %s", tl, txt,
                          ir_dtype_name(dt));
    put_le(dst, m, size);
    return 0;
  }
  int eb, mb;
  switch (dt) {
  case IR_DT_F16: eb = 5, mb = 10; break;
  case IR_DT_BF16: eb = 8, mb = 7; break;
  case IR_DT_F32: eb = 8, mb = 23; break;
  case IR_DT_F64: eb = 11, mb = 52; break;
  default:
    return ir_lex_error(p, t->at, "%s values must be written as hex bit patterns (0x..)",
                        ir_dtype_name(dt));
  }
  uint64_t sign = t->neg ? (uint64_t)1 << (eb + mb) : 0;
  uint64_t expall = (((uint64_t)1 << eb) - 1) << mb;
  if (t->kind == T_INF) {
    put_le(dst, sign | expall, size);
    return 0;
  }
  if (t->kind == T_NAN) {
    put_le(dst, sign | expall | (uint64_t)1 << (mb - 1), size);
    return 0;
  }
  double dv = 0;
  if (dt == IR_DT_F32) {
    float fv = 0;
    uint32_t b;
    if (tok_real(p, t, dt, &dv, &fv)) return -1;
    memcpy(&b, &fv, 4);
    put_le(dst, b, 4);
    return 0;
  }
  if (tok_real(p, t, dt, &dv, NULL)) return -1;
  uint64_t b;
  if (dt == IR_DT_F64) {
    memcpy(&b, &dv, 8);
  } else if (!to_small_float(dv, eb, mb, &b)) {
    return ir_lex_error(p, t->at, "%.*s is out of range for %s", tl, txt, ir_dtype_name(dt));
  }
  put_le(dst, b, size);
  return 0;
}

/* '#M.dense_array<' values '>' ':' 'tensor<' {N 'x'} dtype '>' */
static int parse_dense(parser *p, ir_dense *out) {
  ir_lex_skip(p);
  size_t b = p->pos;
  if (!ir_lex_accept_lit(p, "#M.dense_array")) return ir_lex_expected(p, "'#M.dense_array<...>'");
  if (ir_lex_expect(p, '<')) return -1;
  vec *toks = &p->toks;
  toks->n = 0;
  if (!ir_lex_accept(p, '>')) {
    for (;;) {
      numtok t;
      const char *s;
      size_t len, w = p->pos;
      if (!ir_lex_number(p, &t)) {
        if (!ir_lex_ident(p, &s, &len, &w) ||
            !(lit_eq(s, len, "true") || lit_eq(s, len, "false"))) {
          p->pos = w;
          return ir_lex_expected(p, "a number, true or false");
        }
        t.at = w;
        t.len = len;
        t.neg = false;
        t.kind = lit_eq(s, len, "true") ? T_TRUE : T_FALSE;
      }
      numtok *slot = ir_lex_push(toks, sizeof *slot);
      if (!slot) return ir_lex_oom(p);
      *slot = t;
      if (ir_lex_accept(p, ',')) continue;
      if (ir_lex_expect(p, '>')) return -1;
      break;
    }
  }
  if (ir_lex_expect(p, ':')) return -1;
  if (!ir_lex_accept_lit(p, "tensor")) return ir_lex_expected(p, "'tensor<...>'");
  if (ir_lex_expect(p, '<')) return -1;
  memset(out, 0, sizeof *out);
  int64_t numel = 1;
  ir_lex_skip(p);
  while (is_digit(lex_at(p, p->pos))) { /* digits by hand: "0xf32" is 0 x f32, not hex */
    numtok t = {p->pos, 0, T_INT, false};
    int64_t v = 0;
    while (is_digit(lex_at(p, p->pos))) p->pos++;
    t.len = p->pos - t.at;
    if (ir_lex_int64(p, &t, &v)) return -1;
    if (out->rank == IR_MAX_RANK)
      return ir_lex_error(p, t.at, "a tensor has at most %d dims", IR_MAX_RANK);
    out->shape[out->rank++] = v;
    if (__builtin_mul_overflow(numel, v, &numel) || numel > ((int64_t)1 << 40))
      return ir_lex_error(p, t.at, "dense constant is too large");
    if (lex_at(p, p->pos) != 'x') return ir_lex_expected(p, "'x'");
    p->pos++;
  }
  const char *s;
  size_t len, w;
  if (!ir_lex_ident(p, &s, &len, &w)) return ir_lex_expected(p, "a dtype");
  if (lit_eq(s, len, "i1")) { /* MLIR's bool, as MAX prints it */
    out->dtype = IR_DT_BOOL;
  } else if (!ir_dtype_from_name(s, len, &out->dtype)) {
    return ir_lex_error(p, w, "unknown dtype '%.*s'", (int)(len > 64 ? 64 : len), s);
  }
  if (ir_lex_expect(p, '>')) return -1;
  if ((int64_t)toks->n != numel)
    return ir_lex_error(p, b, "dense constant has %zu value%s but its type holds %lld", toks->n,
                        toks->n == 1 ? "" : "s", (long long)numel);
  size_t esz = ir_dtype_size(out->dtype);
  unsigned char *data = ir_arena_alloc(p->g->arena, (size_t)numel * esz + 1);
  if (!data) return ir_lex_oom(p);
  for (size_t i = 0; i < toks->n; i++)
    if (dense_elem(p, (numtok *)toks->p + i, out->dtype, data + i * esz)) return -1;
  out->numel = numel;
  out->data = data;
  return 0;
}

/* '[' ']' | '[' int {',' int} ']' | '[' string {',' string} ']' */
static int parse_list(parser *p, ir_attr *a) {
  if (ir_lex_expect(p, '[')) return -1;
  a->kind = IR_ATTR_INTS;
  if (ir_lex_accept(p, ']')) {
    a->u.ints.v = ir_arena_alloc(p->g->arena, sizeof(int64_t));
    return a->u.ints.v ? 0 : ir_lex_oom(p);
  }
  bool strs = ir_lex_peek(p) == '"';
  vec items = {0}; /* own vector: string_lit uses p->list */
  int rc = -1;
  for (;;) {
    if (strs) {
      const char **slot = ir_lex_push(&items, sizeof *slot);
      if (!slot) {
        ir_lex_oom(p);
        goto done;
      }
      if (ir_lex_peek(p) != '"') {
        ir_lex_expected(p, "a string (the list holds strings)");
        goto done;
      }
      if (ir_lex_string(p, slot)) goto done;
    } else {
      numtok t;
      int64_t *slot = ir_lex_push(&items, sizeof *slot);
      if (!slot) {
        ir_lex_oom(p);
        goto done;
      }
      size_t b = (ir_lex_skip(p), p->pos);
      if (!ir_lex_number(p, &t) || (t.kind != T_INT && t.kind != T_HEX)) {
        p->pos = b;
        ir_lex_expected(p, "an integer (a list holds integers or strings)");
        goto done;
      }
      if (ir_lex_int64(p, &t, slot)) goto done;
    }
    if (items.n > (1u << 24)) {
      ir_lex_error(p, p->pos, "list is too long");
      goto done;
    }
    if (ir_lex_accept(p, ',')) continue;
    if (ir_lex_expect(p, ']')) goto done;
    break;
  }
  size_t bytes = items.n * (strs ? sizeof(const char *) : sizeof(int64_t));
  void *v = ir_arena_memdup(p->g->arena, items.p, bytes);
  if (!v) {
    ir_lex_oom(p);
    goto done;
  }
  if (strs) {
    a->kind = IR_ATTR_STRINGS;
    a->u.strings.n = (int)items.n;
    a->u.strings.v = v;
  } else {
    a->u.ints.n = (int)items.n;
    a->u.ints.v = v;
  }
  rc = 0;
done:
  free(items.p);
  return rc;
}

/* After '#' in a MAX dict: '#' name '<' ... '>' with nested <>, [] and ()
 * and strings, on one line (as MAX prints it), kept as its raw text. */
static int raw_hash_attr(parser *p, ir_attr *a) {
  size_t b = p->pos, i = p->pos + 1;
  while (is_id_char(lex_at(p, i))) i++;
  if (i == b + 1 || lex_at(p, i) != '<') return ir_lex_expected(p, "an attribute value");
  char open[64]; /* the brackets open at i */
  int depth = 0;
  for (; i < p->n && p->s[i] != '\n'; i++) {
    char c = p->s[i];
    if (c == '"') {
      for (i++; i < p->n && p->s[i] != '"' && p->s[i] != '\n'; i++)
        if (p->s[i] == '\\') i++;
      if (i >= p->n || p->s[i] != '"') return ir_lex_error(p, b, "unterminated string");
    } else if (c == '<' || c == '[' || c == '(') {
      if (depth == (int)sizeof open) return ir_lex_error(p, b, "attribute nested too deeply");
      open[depth++] = c == '<' ? '>' : c == '[' ? ']' : ')';
    } else if (c == '>' || c == ']' || c == ')') {
      if (c != open[--depth])
        return ir_lex_error(p, i, "expected '%c' to close the attribute's '%c', found '%c'",
                            open[depth], open[depth] == '>' ? '<' : open[depth] == ']' ? '[' : '(',
                            c);
      if (depth == 0) break;
    }
  }
  if (i >= p->n || p->s[i] == '\n')
    return ir_lex_error(p, b, "unterminated attribute '%.*s'", (int)(i - b > 40 ? 40 : i - b),
                        p->s + b);
  p->pos = i + 1;
  a->kind = IR_ATTR_STRING;
  a->u.s = ir_arena_strndup(p->g->arena, p->s + b, p->pos - b);
  return a->u.s ? 0 : ir_lex_oom(p);
}

/* A type after ':' in a MAX dict (index, i64, !mosh.ape, !M.x<...>): skipped. */
static int skip_type_suffix(parser *p) {
  ir_lex_skip(p);
  size_t b = p->pos, i = p->pos;
  if (lex_at(p, i) == '!') i++;
  if (!is_alpha(lex_at(p, i))) return ir_lex_expected(p, "a type after ':'");
  while (is_id_char(lex_at(p, i))) i++;
  if (lex_at(p, i) == '<') {
    int depth = 0;
    for (; i < p->n; i++) {
      if (p->s[i] == '<') depth++;
      if (p->s[i] == '>' && --depth == 0) break;
      if (depth > 64) return ir_lex_error(p, b, "type nested too deeply");
    }
    if (i >= p->n) return ir_lex_error(p, b, "unterminated type");
    i++;
  }
  p->pos = i;
  return 0;
}

static int parse_attr_value(parser *p, ir_attr *a, bool max) {
  int c = ir_lex_peek(p);
  size_t b = p->pos;
  numtok t;
  if (c == '"') {
    a->kind = IR_ATTR_STRING;
    return ir_lex_string(p, &a->u.s);
  }
  if (c == '[') return parse_list(p, a);
  if (c == '#') {
    if (max && !(p->n - p->pos >= 14 && memcmp(p->s + p->pos, "#M.dense_array", 14) == 0))
      return raw_hash_attr(p, a);
    a->kind = IR_ATTR_DENSE;
    return parse_dense(p, &a->u.dense);
  }
  if (ir_lex_number(p, &t)) {
    if (t.kind == T_INT || t.kind == T_HEX) {
      a->kind = IR_ATTR_INT;
      return ir_lex_int64(p, &t, &a->u.i);
    }
    a->kind = IR_ATTR_FLOAT;
    if (t.kind == T_INF) {
      a->u.f = t.neg ? -INFINITY : INFINITY;
    } else if (t.kind == T_NAN) {
      a->u.f = t.neg ? -NAN : NAN;
    } else {
      if (tok_real(p, &t, IR_DT_F64, &a->u.f, NULL)) return -1;
    }
    return 0;
  }
  const char *s;
  size_t len, w;
  if (ir_lex_ident(p, &s, &len, &w)) {
    if (lit_eq(s, len, "true") || lit_eq(s, len, "false")) {
      a->kind = IR_ATTR_BOOL;
      a->u.b = s[0] == 't';
      return 0;
    }
    if (ir_dtype_from_name(s, len, &a->u.dtype)) {
      a->kind = IR_ATTR_DTYPE;
      return 0;
    }
    if (a->name && strcmp(a->name, "dtype") == 0)
      return ir_lex_error(p, w, "unknown dtype '%.*s'", (int)(len > 64 ? 64 : len), s);
    p->pos = b;
  }
  return ir_lex_expected(p, "an attribute value");
}

int ir_lex_attr_value(parser *p, ir_attr *a) { return parse_attr_value(p, a, false); }

/* open [name '=' value [':' type] {',' ...}] close into p->attrs (cleared
 * first). The kiln.* names are facts the runtime stamps (kiln.transpose_b
 * changes what a matmul computes, kiln.packed_b how it reads B): only kernel
 * texts, which the runtime prints itself, may carry them. */
static int dict(parser *p, char open, bool max) {
  char close = open == '[' ? ']' : '}';
  vec *v = &p->attrs;
  v->n = 0;
  if (ir_lex_expect(p, open)) return -1;
  if (ir_lex_accept(p, close)) return 0;
  for (;;) {
    const char *s;
    size_t len, w;
    if (!ir_lex_ident(p, &s, &len, &w)) return ir_lex_expected(p, "an attribute name");
    if (!p->runtime_attrs && len >= 5 && memcmp(s, "kiln.", 5) == 0)
      return ir_lex_error(p, w, "attribute '%.*s' is set by the runtime, not by graph text",
                          (int)(len > 64 ? 64 : len), s);
    for (size_t i = 0; i < v->n; i++) {
      const ir_attr *o = &((attr_at *)v->p)[i].a;
      if (lit_eq(s, len, o->name))
        return ir_lex_error(p, w, "attribute '%s' is given twice", o->name);
    }
    attr_at *slot = ir_lex_push(v, sizeof *slot);
    if (!slot) return ir_lex_oom(p);
    slot->at = w;
    if (!(slot->a.name = ir_arena_strndup(p->g->arena, s, len))) return ir_lex_oom(p);
    if (ir_lex_expect(p, '=')) return -1;
    /* slot may move if the vector grows while parsing the value: use an index */
    ir_attr tmp = slot->a;
    size_t vat = (ir_lex_skip(p), p->pos);
    if (parse_attr_value(p, &tmp, max)) return -1;
    if (max && ir_lex_accept(p, ':') && skip_type_suffix(p)) return -1;
    ((attr_at *)v->p)[v->n - 1].a = tmp;
    ((attr_at *)v->p)[v->n - 1].vat = vat;
    if (ir_lex_accept(p, ',')) continue;
    return ir_lex_expect(p, close);
  }
}

int ir_lex_attr_dict(parser *p) { return dict(p, '{', false); }

int ir_lex_max_dict(parser *p, char open) { return dict(p, open, true); }
