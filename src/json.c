/* json.c - strict recursive-descent JSON reader (json.h).
 *
 * Depth is bounded (RT_JSON_MAX_DEPTH), so hostile input cannot overflow the
 * stack; every error names the byte offset. On error everything allocated
 * so far is freed. Items of a container are collected on a scratch stack
 * and moved into the arena at its end, in arrays of their exact size. */
#include "json.h"
#include "name_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Everything a parse allocates (strings, arrays) comes from one arena of
 * blocks, freed at once with the tree: a header of 200,000 tensors makes
 * millions of small pieces, and malloc / free one by one cost more than the
 * parse itself. */
typedef struct jblock {
  struct jblock *next;
  size_t used, cap;
  max_align_t data[];
} jblock;

struct rt_json_arena {
  jblock *head;
};

typedef struct jp {
  const char *s;
  size_t len, pos;
  char *err;
  size_t errlen;
  bool failed;
  rt_json_arena *arena;
  /* scratch stack of the items of the containers being parsed (push) */
  rt_json *sitems;
  char **skeys;
  size_t *slens;
  size_t sn, scap;
} jp;

#define JBLOCK_BYTES ((size_t)64 << 10)

/* n bytes from the arena, aligned for anything; NULL when out of memory. */
static void *jalloc(jp *p, size_t n) {
  n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
  jblock *b = p->arena->head;
  if (b && b->cap - b->used >= n) {
    void *r = (char *)b->data + b->used;
    b->used += n;
    return r;
  }
  size_t cap = n > JBLOCK_BYTES / 4 ? n : JBLOCK_BYTES;
  jblock *nb = malloc(sizeof *nb + cap);
  if (!nb) return NULL;
  nb->cap = cap;
  nb->used = n;
  if (b && cap != JBLOCK_BYTES) { /* a large piece: a block of its own, behind the current one */
    nb->next = b->next;
    b->next = nb;
  } else {
    nb->next = b;
    p->arena->head = nb;
  }
  return nb->data;
}

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

void rt_json_free(rt_json *j) {
  if (!j) return;
  for (jblock *b = j->arena ? j->arena->head : NULL, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(j->arena);
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
  char *o = jalloc(p, end - start + 1);
  if (!o) return fail(p, "out of memory");
  size_t n = 0;
  while (p->pos < end) {
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c < 0x20) return fail(p, "control character in a string");
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
  return false; /* o stays in the arena, freed with the tree */
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
  if (j->is_int && !(j->i == 0 && s[start] == '-')) {
    j->num = (double)j->i; /* exact, or rounded to nearest as strtod would */
  } else if (n < sizeof buf) {
    memcpy(buf, s + start, n);
    buf[n] = 0;
    j->num = strtod(buf, NULL);
  } else {
    j->num = s[start] == '-' ? -1e308 : 1e308; /* absurdly long: only magnitude matters */
  }
  return true;
}

static bool parse_value(jp *p, rt_json *j, int depth);

/* Push an item (and its key, for an object) on the parse's scratch stack. */
static bool push(jp *p, const rt_json *item, char *key, size_t keylen) {
  if (p->sn == p->scap) {
    size_t nc = p->scap ? 2 * p->scap : 64;
    rt_json *ni = realloc(p->sitems, nc * sizeof *ni);
    if (ni) p->sitems = ni;
    char **nk = ni ? realloc(p->skeys, nc * sizeof *nk) : NULL;
    if (nk) p->skeys = nk;
    size_t *nl = nk ? realloc(p->slens, nc * sizeof *nl) : NULL;
    if (!nl) return fail(p, "out of memory");
    p->slens = nl;
    p->scap = nc;
  }
  p->sitems[p->sn] = *item;
  p->skeys[p->sn] = key;
  p->slens[p->sn++] = keylen;
  return true;
}

/* Move the items stacked from base on into j, in arrays of their exact size
 * in the arena (a container's size is known only at its end; a nested one
 * stacks above it and is done first). */
static bool pop_into(jp *p, rt_json *j, size_t base) {
  size_t n = p->sn - base;
  p->sn = base;
  if (n > INT32_MAX) return fail(p, "too many items in an array or object");
  j->n = (int)n;
  if (!n) return true;
  if (!(j->items = jalloc(p, n * sizeof *j->items))) return fail(p, "out of memory");
  memcpy(j->items, p->sitems + base, n * sizeof *j->items);
  if (j->kind != RT_JSON_OBJECT) return true;
  if (!(j->keys = jalloc(p, n * sizeof *j->keys)) ||
      !(j->keylens = jalloc(p, n * sizeof *j->keylens)))
    return fail(p, "out of memory");
  memcpy(j->keys, p->skeys + base, n * sizeof *j->keys);
  memcpy(j->keylens, p->slens + base, n * sizeof *j->keylens);
  return true;
}

/* Whether key is already a key of the object whose keys so far are
 * stacked from base on. The first few keys are compared one by one; from
 * JSON_SCAN_KEYS keys on, they are hashed in seen (and key with them), so
 * the check stays linear in the object's size. */
#define JSON_SCAN_KEYS 8
static bool seen_key(const jp *p, size_t base, rt_name_map *seen, const char *key, size_t keylen,
                     bool *oom) {
  size_t n = p->sn - base;
  if (n < JSON_SCAN_KEYS) {
    for (size_t i = base; i < p->sn; i++)
      if (p->slens[i] == keylen && memcmp(p->skeys[i], key, keylen) == 0) return true;
    return false;
  }
  int r = 0;
  for (size_t i = seen->n; i < n && r != -2; i++) /* the keys not hashed yet */
    r = rt_name_map_put(seen, p->skeys[base + i], p->slens[base + i], (int)i);
  if (r != -2) r = rt_name_map_put(seen, key, keylen, (int)n);
  *oom = r == -2;
  return r >= 0;
}

static bool parse_members(jp *p, rt_json *j, int depth, bool object, rt_name_map *seen);

static bool parse_container(jp *p, rt_json *j, int depth, bool object) {
  if (depth >= RT_JSON_MAX_DEPTH) return fail(p, "nesting too deep");
  rt_name_map seen = {0};
  size_t base = p->sn;
  bool ok = parse_members(p, j, depth, object, &seen) && pop_into(p, j, base);
  rt_name_map_clear(&seen);
  return ok;
}

static bool parse_members(jp *p, rt_json *j, int depth, bool object, rt_name_map *seen) {
  j->kind = object ? RT_JSON_OBJECT : RT_JSON_ARRAY;
  p->pos++;
  size_t base = p->sn;
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
      bool oom = false;
      if (seen_key(p, base, seen, key, keylen, &oom) || oom)
        return fail(p, oom ? "out of memory" : "duplicate key in an object");
      skip_ws(p);
      if (p->pos >= p->len || p->s[p->pos] != ':')
        return fail(p, "expected ':' after an object key");
      p->pos++;
    }
    rt_json item = {0};
    if (!parse_value(p, &item, depth + 1) || !push(p, &item, key, keylen)) return false;
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
  jp p = {.s = text, .len = len, .err = err, .errlen = errlen};
  if (err && errlen) err[0] = 0;
  rt_json *j = calloc(1, sizeof *j);
  rt_json_arena *arena = calloc(1, sizeof *arena);
  if (!j || !arena) {
    free(j);
    free(arena);
    fail(&p, "out of memory");
    return NULL;
  }
  p.arena = arena;
  bool ok = parse_value(&p, j, 0);
  j->arena = arena; /* after the parse: parse_value fills *j */
  free(p.sitems);
  free(p.skeys);
  free(p.slens);
  if (!ok) {
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
