/* cache_disk_format.c - the text header of a disk cache entry: encoding
 * (with escaped component values) and a strict parser that checks the
 * magic, the format version, every field's syntax and the header checksum.
 *
 * Assumes nothing about its input when parsing: buf may be any bytes, of any
 * length, from any file; the parser never reads past buf[n] and never
 * allocates according to a length it read. Guarantees: a header that parses
 * was written by kcd_header_encode for format KC_DISK_FORMAT (up to an
 * XXH3-64 collision). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "cache_disk_impl.h"
#include "rt.h"

/* ---- a growable byte buffer ---- */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  bool oom;
} sbuf;

static void sb_put(sbuf *b, const void *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_fmt(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_fmt(sbuf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (k > 0) sb_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

static bool name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '.' || ch == '-';
}

static void escape_value(sbuf *b, const char *v) {
  static const char hex[] = "0123456789abcdef";
  const char *run = v;
  for (const char *s = v;; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch >= 0x20 && ch < 0x7f && ch != '\\') continue;
    sb_put(b, run, (size_t)(s - run));
    if (!ch) return;
    run = s + 1;
    if (ch == '\\') sb_put(b, "\\\\", 2);
    else if (ch == '\n') sb_put(b, "\\n", 2);
    else if (ch == '\t') sb_put(b, "\\t", 2);
    else {
      char e[4] = {'\\', 'x', hex[ch >> 4], hex[ch & 15]};
      sb_put(b, e, 4);
    }
  }
}

int kcd_header_encode(kc_key key, const kc_component *c, int n, const void *payload, size_t len,
                      char **out, size_t *outlen, kiln_status *st) {
  *out = NULL;
  *outlen = 0;
  if (n < 0 || (n > 0 && !c))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache put: %d components at %p", n, (void *)c);
  for (int i = 0; i < n; i++) {
    const char *nm = c[i].name;
    if (!nm || !*nm)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache put: component %d has no name", i);
    for (const char *s = nm; *s; s++)
      if (!name_char(*s))
        return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                      "cache put: component name '%s' has a character outside [A-Za-z0-9_.-]", nm);
    if (!c[i].value)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache put: component '%s' has no value", nm);
  }
  char hex[33];
  kc_key_hex(key, hex);
  sbuf b = {0};
  sb_fmt(&b, KCD_MAGIC "\nformat %d\nkey %s\n", KC_DISK_FORMAT, hex);
  for (int i = 0; i < n; i++) {
    sb_str(&b, "component ");
    sb_str(&b, c[i].name);
    sb_put(&b, "=", 1);
    escape_value(&b, c[i].value);
    sb_put(&b, "\n", 1);
  }
  sb_fmt(&b, "payload-bytes %llu\npayload-xxh3-64 %016llx\n", (unsigned long long)len,
         (unsigned long long)XXH3_64bits(len ? payload : "", len));
  if (!b.oom) {
    uint64_t hh = XXH3_64bits(b.p, b.n);
    sb_fmt(&b, "header-xxh3-64 %016llx\n", (unsigned long long)hh);
  }
  if (b.oom) {
    free(b.p);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "cache put: out of memory building an entry header");
  }
  if (b.n > KC_DISK_MAX_HEADER) {
    free(b.p);
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "cache put: the key components take %zu bytes (at most %u)", b.n,
                  KC_DISK_MAX_HEADER);
  }
  *out = b.p;
  *outlen = b.n;
  return 0;
}

/* ---- parsing ---- */

typedef struct cursor {
  const char *buf;
  size_t n, pos;
} cursor;

/* The next line (without '\n') into *s, *len; false when buf ends first. */
static bool next_line(cursor *cu, const char **s, size_t *len) {
  const char *nl = memchr(cu->buf + cu->pos, '\n', cu->n - cu->pos);
  if (!nl) return false;
  *s = cu->buf + cu->pos;
  *len = (size_t)(nl - *s);
  cu->pos += *len + 1;
  return true;
}

static bool has_prefix(const char *s, size_t len, const char *pre) {
  size_t k = strlen(pre);
  return len >= k && memcmp(s, pre, k) == 0;
}

static bool parse_u64(const char *s, size_t len, uint64_t *v) {
  if (len == 0 || len > 20) return false;
  uint64_t x = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    unsigned dgt = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - dgt) / 10) return false;
    x = x * 10 + dgt;
  }
  *v = x;
  return true;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

static bool parse_hex64(const char *s, size_t len, uint64_t *v) {
  if (len != 16) return false;
  uint64_t x = 0;
  for (size_t i = 0; i < 16; i++) {
    int h = hexval(s[i]);
    if (h < 0) return false;
    x = x << 4 | (uint64_t)h;
  }
  *v = x;
  return true;
}

/* Unescape s[len] into a malloc'd string; *bad when the escapes are wrong. */
static char *unescape(const char *s, size_t len, bool *bad) {
  char *o = malloc(len + 1), *p = o;
  if (!o) return NULL;
  for (size_t i = 0; i < len; i++) {
    if (s[i] != '\\') {
      *p++ = s[i];
      continue;
    }
    if (i + 1 >= len) goto bad_escape;
    char e = s[++i];
    if (e == '\\') *p++ = '\\';
    else if (e == 'n') *p++ = '\n';
    else if (e == 't') *p++ = '\t';
    else if (e == 'x' && i + 2 < len && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
      int v = hexval(s[i + 1]) << 4 | hexval(s[i + 2]);
      if (v == 0) goto bad_escape;
      *p++ = (char)v;
      i += 2;
    } else goto bad_escape;
  }
  *p = '\0';
  return o;
bad_escape:
  free(o);
  *bad = true;
  return NULL;
}

void kcd_header_free(kcd_header *h) {
  for (int i = 0; i < h->ncomponents; i++) {
    free((char *)h->components[i].name);
    free((char *)h->components[i].value);
  }
  free(h->components);
  h->components = NULL;
  h->ncomponents = 0;
}

/* Decode "NAME=VALUE" and append it to h. KCD_OK, KCD_BAD or KCD_NOMEM. */
static int add_component(kcd_header *h, const char *s, size_t len, int *cap) {
  const char *eq = memchr(s, '=', len);
  if (!eq || eq == s) return KCD_BAD;
  for (const char *q = s; q < eq; q++)
    if (!name_char(*q)) return KCD_BAD;
  if (h->ncomponents == *cap) {
    int nc = *cap ? *cap * 2 : 8;
    kc_component *c = realloc(h->components, (size_t)nc * sizeof *c);
    if (!c) return KCD_NOMEM;
    h->components = c;
    *cap = nc;
  }
  bool bad = false;
  char *name = strndup(s, (size_t)(eq - s));
  char *value = unescape(eq + 1, len - (size_t)(eq + 1 - s), &bad);
  if (!name || !value) {
    free(name);
    free(value);
    return bad ? KCD_BAD : KCD_NOMEM;
  }
  h->components[h->ncomponents].name = name;
  h->components[h->ncomponents].value = value;
  h->ncomponents++;
  return KCD_OK;
}

#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), rc = KCD_BAD)

int kcd_header_parse(const char *buf, size_t n, bool want_components, kcd_header *h, char *why,
                     size_t whylen) {
  memset(h, 0, sizeof *h);
  if (whylen) why[0] = '\0';
  static const char magic[] = KCD_MAGIC "\n";
  size_t mlen = sizeof magic - 1;
  if (memcmp(buf, magic, n < mlen ? n : mlen) != 0) {
    snprintf(why, whylen, "bad magic (not a kiln cache entry)");
    return KCD_BAD;
  }
  cursor cu = {buf, n, mlen};
  if (n < mlen) return KCD_INCOMPLETE;
  int rc = KCD_OK, cap = 0;
  const char *s;
  size_t len;
  uint64_t v;
  if (!next_line(&cu, &s, &len)) return KCD_INCOMPLETE;
  if (!has_prefix(s, len, "format ") || !parse_u64(s + 7, len - 7, &v))
    return BAD("bad format line");
  if (v != KC_DISK_FORMAT)
    return BAD("format version %llu (this kiln reads format %d)", (unsigned long long)v,
               KC_DISK_FORMAT);
  if (!next_line(&cu, &s, &len)) return KCD_INCOMPLETE;
  char hex[33];
  if (!has_prefix(s, len, "key ") || len != 4 + 32) return BAD("bad key line");
  memcpy(hex, s + 4, 32);
  hex[32] = '\0';
  if (!kc_key_parse(hex, &h->key)) return BAD("bad key line");
  for (;;) {
    if (!next_line(&cu, &s, &len)) {
      rc = KCD_INCOMPLETE;
      goto fail;
    }
    if (!has_prefix(s, len, "component ")) break;
    if (want_components) {
      int r = add_component(h, s + 10, len - 10, &cap);
      if (r == KCD_NOMEM) {
        rc = KCD_NOMEM;
        goto fail;
      }
      if (r == KCD_BAD) {
        BAD("bad component line");
        goto fail;
      }
    }
  }
  if (!has_prefix(s, len, "payload-bytes ") || !parse_u64(s + 14, len - 14, &h->payload_bytes)) {
    BAD("bad payload-bytes line");
    goto fail;
  }
  if (!next_line(&cu, &s, &len)) {
    rc = KCD_INCOMPLETE;
    goto fail;
  }
  if (!has_prefix(s, len, "payload-xxh3-64 ") ||
      !parse_hex64(s + 16, len - 16, &h->payload_hash)) {
    BAD("bad payload-xxh3-64 line");
    goto fail;
  }
  size_t hashed = cu.pos;
  if (!next_line(&cu, &s, &len)) {
    rc = KCD_INCOMPLETE;
    goto fail;
  }
  if (!has_prefix(s, len, "header-xxh3-64 ") || !parse_hex64(s + 15, len - 15, &v)) {
    BAD("bad header-xxh3-64 line");
    goto fail;
  }
  if (XXH3_64bits(buf, hashed) != v) {
    BAD("header checksum mismatch");
    goto fail;
  }
  h->header_bytes = cu.pos;
  return KCD_OK;
fail:
  kcd_header_free(h);
  return rc;
}

int kc_entry_parse(const void *buf, size_t len, kc_key *key, kc_component **comps, int *ncomps,
                   char *why, size_t whylen) {
  *comps = NULL;
  *ncomps = 0;
  kcd_header h;
  int rc = kcd_header_parse(buf, len, true, &h, why, whylen);
  if (rc == KCD_INCOMPLETE) snprintf(why, whylen, "the entry ends inside its header");
  else if (rc == KCD_NOMEM) snprintf(why, whylen, "out of memory");
  if (rc != KCD_OK) return -1;
  *key = h.key;
  *comps = h.components;
  *ncomps = h.ncomponents;
  return 0;
}

int kc_entry_encode(kc_key key, const kc_component *c, int n, const void *payload, size_t len,
                    void **out, size_t *outlen, kiln_status *st) {
  *out = NULL;
  *outlen = 0;
  if (len && !payload)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache entry: NULL payload of %zu bytes", len);
  char *hdr = NULL;
  size_t hlen = 0;
  if (kcd_header_encode(key, c, n, payload, len, &hdr, &hlen, st) != 0) return -1;
  if (len > SIZE_MAX - hlen) {
    free(hdr);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "cache entry: %zu payload bytes is too large", len);
  }
  char *buf = realloc(hdr, hlen + len + 1);
  if (!buf) {
    free(hdr);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "cache entry: out of memory for %zu bytes",
                  hlen + len);
  }
  if (len) memcpy(buf + hlen, payload, len);
  *out = buf;
  *outlen = hlen + len;
  return 0;
}

int kc_entry_check(const void *buf, size_t len, kc_key key, size_t *payload_off,
                   size_t *payload_len, char *why, size_t whylen) {
  kcd_header h;
  int rc = kcd_header_parse(buf, len, false, &h, why, whylen);
  if (rc == KCD_INCOMPLETE) snprintf(why, whylen, "the entry ends inside its header");
  else if (rc == KCD_NOMEM) snprintf(why, whylen, "out of memory");
  if (rc != KCD_OK) return -1;
  size_t held = len - h.header_bytes;
  int bad = 0;
  if (h.key.lo != key.lo || h.key.hi != key.hi) {
    snprintf(why, whylen, "holds another key");
    bad = 1;
  } else if (h.payload_bytes != held) {
    snprintf(why, whylen, "%s: the header says %llu payload bytes, the entry holds %zu",
             h.payload_bytes > held ? "truncated" : "wrong length",
             (unsigned long long)h.payload_bytes, held);
    bad = 1;
  } else if (XXH3_64bits((const char *)buf + h.header_bytes, held) != h.payload_hash) {
    snprintf(why, whylen, "payload checksum mismatch");
    bad = 1;
  }
  *payload_off = h.header_bytes;
  *payload_len = held;
  kcd_header_free(&h);
  return bad ? -1 : 0;
}

void kc_components_free(kc_component *c, int n) {
  kcd_header h = {.components = c, .ncomponents = n};
  kcd_header_free(&h);
}
