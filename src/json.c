/* json.c - strict recursive-descent JSON reader (json.h).
 *
 * Depth is bounded (RT_JSON_MAX_DEPTH), so hostile input cannot overflow the
 * stack; every error names the byte offset. On error everything allocated
 * so far is freed. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jp {
  const char *s;
  size_t len, pos;
  char *err;
  size_t errlen;
  bool failed;
} jp;

static bool fail(jp *p, const char *what) {
  if (!p->failed) {
    p->failed = true;
    if (p->err && p->errlen)
      snprintf(p->err, p->errlen, "byte %zu: %s", p->pos, what);
  }
  return false;
}

static void skip_ws(jp *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static bool lit(jp *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return false;
  p->pos += n;
  return true;
}

static void free_inner(rt_json *j) {
  if (j->kind == RT_JSON_STRING) free(j->s);
  if (j->kind == RT_JSON_ARRAY || j->kind == RT_JSON_OBJECT) {
    for (int i = 0; i < j->n; i++) {
      free_inner(&j->items[i]);
      if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
    free(j->keylens);
  }
}

void rt_json_free(rt_json *j) {
  if (!j) return;
  free_inner(j);
  free(j);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool hex4(jp *p, unsigned *out) {
  if (p->len - p->pos < 4) return fail(p, "truncated \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p->s[p->pos + (size_t)i]);
    if (h < 0) return fail(p, "bad hex digit in \\u escape");
    v = v * 16 + (unsigned)h;
  }
  p->pos += 4;
  *out = v;
  return true;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* At the opening quote. The decoded string is never longer than the text. */
static bool parse_string(jp *p, char **out, size_t *outlen) {
  p->pos++;
  size_t start = p->pos, end = start;
  while (end < p->len && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
  if (end >= p->len) return fail(p, "unterminated string");
  char *o = malloc(end - start + 1);
  if (!o) return fail(p, "out of memory");
  size_t n = 0;
  while (p->pos < end) {
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c < 0x20) {
      free(o);
      return fail(p, "control character in a string");
    }
    if (c != '\\') {
      o[n++] = (char)c;
      p->pos++;
      continue;
    }
    p->pos++;
    char e = p->s[p->pos++];
    switch (e) {
    case '"': o[n++] = '"'; break;
    case '\\': o[n++] = '\\'; break;
    case '/': o[n++] = '/'; break;
    case 'b': o[n++] = '\b'; break;
    case 'f': o[n++] = '\f'; break;
    case 'n': o[n++] = '\n'; break;
    case 'r': o[n++] = '\r'; break;
    case 't': o[n++] = '\t'; break;
    case 'u': {
      unsigned cp;
      if (!hex4(p, &cp)) goto bad;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned lo;
        if (!lit(p, "\\u") || !hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
          fail(p, "unpaired surrogate in \\u escape");
          goto bad;
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        fail(p, "unpaired surrogate in \\u escape");
        goto bad;
      }
      /* \uXXXX is 6 text bytes and at most 3 UTF-8 bytes; a pair is 12 and 4 */
      n += put_utf8(o + n, cp);
      break;
    }
    default:
      p->pos--;
      fail(p, "invalid escape in a string");
      goto bad;
    }
  }
  if (p->pos != end) { /* an escape ran past the closing quote */
    fail(p, "unterminated string");
    goto bad;
  }
  p->pos = end + 1;
  o[n] = 0;
  *out = o;
  *outlen = n;
  return true;
bad:
  free(o);
  return false;
}

static bool parse_number(jp *p, rt_json *j) {
  size_t start = p->pos;
  const char *s = p->s;
  if (p->pos < p->len && s[p->pos] == '-') p->pos++;
  if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9') return fail(p, "expected a digit");
  if (s[p->pos] == '0') {
    p->pos++;
    if (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9')
      return fail(p, "leading zero in a number");
  } else {
    while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
  }
  bool integer = true;
  if (p->pos < p->len && s[p->pos] == '.') {
    integer = false;
    p->pos++;
    if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9')
      return fail(p, "expected a digit after '.'");
    while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
  }
  if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
    integer = false;
    p->pos++;
    if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
    if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9')
      return fail(p, "expected a digit in the exponent");
    while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
  }
  size_t n = p->pos - start;
  char buf[64];
  j->kind = RT_JSON_NUMBER;
  if (n < sizeof buf) {
    memcpy(buf, s + start, n);
    buf[n] = 0;
    j->num = strtod(buf, NULL);
  } else {
    j->num = s[start] == '-' ? -1e308 : 1e308; /* absurdly long: only magnitude matters */
  }
  if (integer) {
    bool neg = s[start] == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    j->is_int = true;
    for (size_t k = start + (neg ? 1 : 0); k < p->pos; k++) {
      unsigned d = (unsigned)(s[k] - '0');
      if (v > (lim - d) / 10) {
        j->is_int = false;
        break;
      }
      v = v * 10 + d;
    }
    if (j->is_int) j->i = neg ? (int64_t)(0 - v) : (int64_t)v;
  }
  return true;
}

static bool parse_value(jp *p, rt_json *j, int depth);

static bool push(jp *p, rt_json *j, int *cap, const rt_json *item, char *key, size_t keylen) {
  if (j->n == *cap) {
    int nc = *cap ? *cap * 2 : 4;
    rt_json *ni = realloc(j->items, (size_t)nc * sizeof *ni);
    if (!ni) return fail(p, "out of memory");
    j->items = ni;
    if (j->kind == RT_JSON_OBJECT) {
      char **nk = realloc(j->keys, (size_t)nc * sizeof *nk);
      if (!nk) return fail(p, "out of memory");
      j->keys = nk;
      size_t *nl = realloc(j->keylens, (size_t)nc * sizeof *nl);
      if (!nl) return fail(p, "out of memory");
      j->keylens = nl;
    }
    *cap = nc;
  }
  j->items[j->n] = *item;
  if (j->kind == RT_JSON_OBJECT) {
    j->keys[j->n] = key;
    j->keylens[j->n] = keylen;
  }
  j->n++;
  return true;
}

static bool parse_container(jp *p, rt_json *j, int depth, bool object) {
  if (depth >= RT_JSON_MAX_DEPTH) return fail(p, "nesting too deep");
  j->kind = object ? RT_JSON_OBJECT : RT_JSON_ARRAY;
  p->pos++;
  int cap = 0;
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == (object ? '}' : ']')) {
    p->pos++;
    return true;
  }
  for (;;) {
    char *key = NULL;
    size_t keylen = 0;
    skip_ws(p);
    if (object) {
      if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "expected a string key");
      if (!parse_string(p, &key, &keylen)) return false;
      for (int i = 0; i < j->n; i++)
        if (j->keylens[i] == keylen && memcmp(j->keys[i], key, keylen) == 0) {
          free(key);
          return fail(p, "duplicate key in an object");
        }
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':') {
        free(key);
        return fail(p, "expected ':' after an object key");
      }
      p->pos++;
    }
    rt_json item = {0};
    if (!parse_value(p, &item, depth + 1)) {
      free_inner(&item);
      free(key);
      return false;
    }
    if (!push(p, j, &cap, &item, key, keylen)) {
      free_inner(&item);
      free(key);
      return false;
    }
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    char c = p->s[p->pos++];
    if (c == (object ? '}' : ']')) return true;
    if (c != ',') {
      p->pos--;
      return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
}

static bool parse_value(jp *p, rt_json *j, int depth) {
  skip_ws(p);
  j->pos = p->pos;
  if (p->pos >= p->len) return fail(p, "unexpected end of input");
  char c = p->s[p->pos];
  switch (c) {
  case '{': return parse_container(p, j, depth, true);
  case '[': return parse_container(p, j, depth, false);
  case '"':
    j->kind = RT_JSON_STRING;
    return parse_string(p, &j->s, &j->len);
  case 't':
  case 'f':
  case 'n':
    if (lit(p, "true")) j->kind = RT_JSON_BOOL, j->b = true;
    else if (lit(p, "false")) j->kind = RT_JSON_BOOL, j->b = false;
    else if (lit(p, "null")) j->kind = RT_JSON_NULL;
    else return fail(p, "unexpected character");
    return true;
  default:
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, j);
    return fail(p, "unexpected character");
  }
}

rt_json *rt_json_parse(const char *text, size_t len, char *err, size_t errlen) {
  jp p = {text, len, 0, err, errlen, false};
  if (err && errlen) err[0] = 0;
  rt_json *j = calloc(1, sizeof *j);
  if (!j) {
    fail(&p, "out of memory");
    return NULL;
  }
  if (!parse_value(&p, j, 0)) {
    rt_json_free(j);
    return NULL;
  }
  skip_ws(&p);
  if (p.pos != p.len) {
    fail(&p, "unexpected text after the JSON value");
    rt_json_free(j);
    return NULL;
  }
  return j;
}

const rt_json *rt_json_get(const rt_json *j, const char *key) {
  if (!j || j->kind != RT_JSON_OBJECT) return NULL;
  size_t n = strlen(key);
  for (int i = 0; i < j->n; i++)
    if (j->keylens[i] == n && memcmp(j->keys[i], key, n) == 0) return &j->items[i];
  return NULL;
}
