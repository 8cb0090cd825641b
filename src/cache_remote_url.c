/* cache_remote_url.c - the remote cache's URL and namespace rules
 * (cache_remote.h): redis[s]://[[user]:password@]host[:port][/db][?query].
 * Strict: a part that is present must be well formed (a typo must not turn
 * into a silently different server or an unchecked certificate), and
 * messages never repeat the password. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_remote.h"

bool kr_ns_ok(const char *ns) {
  size_t n = ns ? strlen(ns) : 0;
  if (n == 0 || n > KR_MAX_NS) return false;
  for (const char *s = ns; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '_' || *s == '.' || *s == '-'))
      return false;
  return true;
}

/* A decimal in [lo, hi] from s[0, n). */
static bool parse_int(const char *s, size_t n, long lo, long hi, int *out) {
  if (n == 0 || n > 9) return false;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  if (v < lo || v > hi) return false;
  *out = (int)v;
  return true;
}

static bool copy_part(char *dst, size_t cap, const char *s, size_t n) {
  if (n >= cap) return false;
  memcpy(dst, s, n);
  dst[n] = 0;
  return true;
}

#define KR_URL_FORM "redis[s]://[user:password@]host[:port][/db][?cacert=F&cert=F&key=F]"

/* One name=value of the query into out. 0, or -1 with why. */
static int query_param(const char *s, size_t n, kr_url *out, char *why, size_t whylen) {
  const char *eq = memchr(s, '=', n);
  if (!eq || eq == s) {
    snprintf(why, whylen, "query part '%.*s' is not name=value", (int)(n > 80 ? 80 : n), s);
    return -1;
  }
  size_t nl = (size_t)(eq - s), vl = n - nl - 1;
  struct {
    const char *name;
    char *dst;
  } known[] = {{"cacert", out->cacert}, {"cert", out->cert}, {"key", out->key}};
  for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
    if (strlen(known[i].name) != nl || strncmp(s, known[i].name, nl) != 0) continue;
    if (!out->tls) {
      snprintf(why, whylen, "%s= is a TLS setting: use rediss://", known[i].name);
      return -1;
    }
    if (vl == 0 || !copy_part(known[i].dst, KR_MAX_PATH, eq + 1, vl)) {
      snprintf(why, whylen, "%s= needs a file path of 1 to %d bytes", known[i].name,
               KR_MAX_PATH - 1);
      return -1;
    }
    return 0;
  }
  snprintf(why, whylen, "unknown query parameter '%.*s' (known: cacert, cert, key)",
           (int)(nl > 40 ? 40 : nl), s);
  return -1;
}

int kr_url_parse(const char *url, kr_url *out, char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  out->port = KR_DEFAULT_PORT;
  if (!url || !*url) {
    snprintf(why, whylen, "empty URL (expected " KR_URL_FORM ")");
    return -1;
  }
  const char *p;
  if (strncmp(url, "rediss://", 9) == 0) {
    out->tls = true;
    p = url + 9;
  } else if (strncmp(url, "redis://", 8) == 0) {
    p = url + 8;
  } else {
    snprintf(why, whylen, "'%.40s': expected a URL starting with redis:// or rediss:// (TLS) "
             "(" KR_URL_FORM ")", url);
    return -1;
  }
  const char *end = p + strlen(p);
  const char *at = NULL; /* the password may hold '@': the last one separates */
  for (const char *q = p; q < end; q++)
    if (*q == '@') at = q;
  /* the query starts at the first '?' after the credentials */
  const char *query = strchr(at ? at : p, '?');
  if (query) end = query;
  if (at) {
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (!colon) {
      snprintf(why, whylen, "credentials before '@' must be [user]:password");
      return -1;
    }
    if (!copy_part(out->user, sizeof out->user, p, (size_t)(colon - p)) ||
        !copy_part(out->password, sizeof out->password, colon + 1, (size_t)(at - colon - 1))) {
      snprintf(why, whylen, "user or password too long");
      return -1;
    }
    if (!out->password[0]) {
      snprintf(why, whylen, "empty password before '@'");
      return -1;
    }
    p = at + 1;
  }
  const char *slash = memchr(p, '/', (size_t)(end - p));
  const char *hend = slash ? slash : end;
  const char *colon = NULL;
  if (*p == '[') { /* [v6 address] */
    const char *rb = memchr(p, ']', (size_t)(hend - p));
    if (!rb) {
      snprintf(why, whylen, "unterminated '[' in the host");
      return -1;
    }
    if (!copy_part(out->host, sizeof out->host, p + 1, (size_t)(rb - p - 1))) goto host_bad;
    if (rb + 1 < hend) {
      if (rb[1] != ':') goto host_bad;
      colon = rb + 1;
    }
  } else {
    colon = memchr(p, ':', (size_t)(hend - p));
    if (!copy_part(out->host, sizeof out->host, p, (size_t)((colon ? colon : hend) - p)))
      goto host_bad;
  }
  if (!out->host[0]) goto host_bad;
  if (colon && !parse_int(colon + 1, (size_t)(hend - colon - 1), 1, 65535, &out->port)) {
    snprintf(why, whylen, "port '%.*s' is not a number in 1..65535", (int)(hend - colon - 1),
             colon + 1);
    return -1;
  }
  if (slash && slash + 1 < end && !parse_int(slash + 1, (size_t)(end - slash - 1), 0, 1 << 20,
                                             &out->db)) {
    snprintf(why, whylen, "database '%.*s' is not a non-negative number",
             (int)(end - slash - 1 > 20 ? 20 : end - slash - 1), slash + 1);
    return -1;
  }
  for (const char *q = query ? query + 1 : NULL; q && *q;) {
    const char *amp = strchr(q, '&');
    size_t n = amp ? (size_t)(amp - q) : strlen(q);
    if (query_param(q, n, out, why, whylen) != 0) return -1;
    q = amp ? amp + 1 : NULL;
  }
  if (!out->cert[0] != !out->key[0]) {
    snprintf(why, whylen, "cert= and key= (the client's certificate and its key) go together");
    return -1;
  }
  return 0;
host_bad:
  snprintf(why, whylen, "missing or malformed host (expected " KR_URL_FORM ")");
  return -1;
}

void kr_url_redact(const char *url, char *buf, size_t cap) {
  const char *at = url ? strrchr(url, '@') : NULL;
  size_t skip = !url                                ? 0
                : strncmp(url, "redis://", 8) == 0  ? 8
                : strncmp(url, "rediss://", 9) == 0 ? 9
                                                    : 0;
  const char *p = skip ? url + skip : NULL;
  if (!at || !p || at < p) {
    snprintf(buf, cap, "%s", url ? url : "");
    return;
  }
  const char *colon = memchr(p, ':', (size_t)(at - p));
  if (!colon) colon = at;
  snprintf(buf, cap, "%.*s%.*s:***%s", (int)skip, url, (int)(colon - p), p, at);
}
