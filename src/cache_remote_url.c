/* cache_remote_url.c - the remote cache's URL and namespace rules
 * (cache_remote.h): redis://[[user]:password@]host[:port][/db]. Strict: a
 * part that is present must be well formed (a typo must not turn into a
 * silently different server), and messages never repeat the password. */
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

int kr_url_parse(const char *url, kr_url *out, char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  out->port = KR_DEFAULT_PORT;
  if (!url || !*url) {
    snprintf(why, whylen, "empty URL (expected redis://[user:password@]host[:port][/db])");
    return -1;
  }
  if (strncmp(url, "rediss://", 9) == 0) {
    snprintf(why, whylen,
             "rediss:// (TLS) is not supported: this kiln is built on Debian 12's hiredis 0.14, "
             "which has no TLS; reach the server over a TLS tunnel (stunnel, spiped) and use "
             "redis://");
    return -1;
  }
  if (strncmp(url, "redis://", 8) != 0) {
    snprintf(why, whylen, "'%.40s': expected a URL starting with redis:// "
             "(redis://[user:password@]host[:port][/db])", url);
    return -1;
  }
  const char *p = url + 8;
  const char *end = p + strlen(p);
  const char *at = memchr(p, '@', (size_t)(end - p));
  if (at) { /* the password may hold '@': the last one separates */
    for (const char *q = at; q < end; q++)
      if (*q == '@') at = q;
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
    snprintf(why, whylen, "database '%.20s' is not a non-negative number", slash + 1);
    return -1;
  }
  return 0;
host_bad:
  snprintf(why, whylen, "missing or malformed host (expected redis://host[:port][/db])");
  return -1;
}

void kr_url_redact(const char *url, char *buf, size_t cap) {
  const char *at = url ? strrchr(url, '@') : NULL;
  const char *p = url && strncmp(url, "redis://", 8) == 0 ? url + 8 : NULL;
  if (!at || !p || at < p) {
    snprintf(buf, cap, "%s", url ? url : "");
    return;
  }
  const char *colon = memchr(p, ':', (size_t)(at - p));
  if (!colon) colon = at;
  snprintf(buf, cap, "redis://%.*s:***%s", (int)(colon - p), p, at);
}
