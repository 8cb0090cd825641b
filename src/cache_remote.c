/* cache_remote.c - the remote kernel cache tier on Redis (cache_remote.h):
 * settings, fetch and check, the asynchronous publisher, listing and
 * counters. Connections and the breaker: cache_remote_conn.c.
 *
 * Guarantees: a get returns only bytes that passed kc_entry_check (the disk
 * format's own checks); a value that fails is deleted from the server (best
 * effort) and warned about on stderr (unless KILN_QUIET). Publishing never
 * runs on the caller's thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bg_place.h"
#include "cache_backing.h"
#include "cache_remote_impl.h"
#include "rt.h"

/* A positive int from the environment variable name (unset or empty: def). */
static int env_ms(const char *name, int def, int *out, kiln_status *st) {
  const char *v = getenv(name);
  *out = def;
  if (!v || !*v) return 0;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (*end || errno || x < 1 || x > 3600000)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "%s='%s' is not a number of milliseconds in 1..3600000", name, v);
  *out = (int)x;
  return 0;
}

kr_remote *kr_remote_new(const char *url, const kr_options *o, kiln_status *st) {
  kr_options none = {0};
  if (!o) o = &none;
  kr_url u;
  char why[512], shown[600];
  kr_url_redact(url, shown, sizeof shown);
  if (kr_url_parse(url, &u, why, sizeof why) != 0) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "remote kernel cache '%s': %s", shown, why);
    return NULL;
  }
  const char *ns = o->ns ? o->ns : getenv("KILN_CACHE_REMOTE_NS");
  if (!ns || !*ns) ns = KR_DEFAULT_NS;
  if (!kr_ns_ok(ns)) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "remote kernel cache namespace '%.80s': expected 1 to %d characters of "
           "[A-Za-z0-9_.-] (KILN_CACHE_REMOTE_NS)",
           ns, KR_MAX_NS);
    return NULL;
  }
  int timeout = o->timeout_ms, breaker = o->breaker_ms;
  if (timeout < 0 || breaker < 0) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "remote kernel cache: negative timeout (%d ms) or breaker time (%d ms)", timeout,
           breaker);
    return NULL;
  }
  if (!timeout && env_ms("KILN_CACHE_REMOTE_TIMEOUT_MS", KR_DEFAULT_TIMEOUT_MS, &timeout, st))
    return NULL;
  if (!breaker && env_ms("KILN_CACHE_REMOTE_BREAKER_MS", KR_BREAKER_BASE_MS, &breaker, st))
    return NULL;
  kr_remote *r = calloc(1, sizeof *r);
  if (!r) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory for the remote kernel cache");
    return NULL;
  }
  r->url = u;
  if (u.tls && !(r->tls = kr_tls_context(&u, why, sizeof why))) {
    free(r);
    rt_err(st, KILN_ERR_INVALID_ARGUMENT, "remote kernel cache '%s': %s", shown, why);
    return NULL;
  }
  snprintf(r->ns, sizeof r->ns, "%s", ns);
  snprintf(r->prefix, sizeof r->prefix, "%s:kc%d:", ns, KC_DISK_FORMAT);
  r->timeout_ms = timeout;
  r->breaker_base_ms = breaker;
  r->log = o->log;
  r->place = o->place;
  r->backoff_ms = breaker;
  bool v6 = strchr(u.host, ':') != NULL;
  snprintf(r->desc, sizeof r->desc, "%s://%s%s%s%s%s:%d/%d (namespace %s)",
           u.tls ? "rediss" : "redis", u.user[0] || u.password[0] ? u.user : "",
           u.password[0] ? ":***@" : "",
           v6 ? "[" : "", u.host, v6 ? "]" : "", u.port, u.db, ns);
  pthread_mutex_init(&r->mu, NULL);
  pthread_mutex_init(&r->qmu, NULL);
  pthread_cond_init(&r->qcv, NULL);
  pthread_cond_init(&r->idle_cv, NULL);
  rt_ok(st);
  return r;
}

static void items_free(kr_item *it) {
  while (it) {
    kr_item *n = it->next;
    free(it->bytes);
    free(it);
    it = n;
  }
}

void kr_remote_free(kr_remote *r) {
  if (!r) return;
  kr_remote_flush(r, KR_DRAIN_MS);
  pthread_mutex_lock(&r->qmu);
  r->stop = true;
  kr_item *left = r->head;
  r->head = r->tail = NULL;
  atomic_fetch_add(&r->dropped, (uint64_t)r->qlen);
  r->qlen = 0;
  pthread_cond_broadcast(&r->qcv);
  bool started = r->thread_started;
  pthread_mutex_unlock(&r->qmu);
  if (started) pthread_join(r->thread, NULL);
  items_free(left);
  kr_conn_close_all(r);
  kr_tls_context_free(r->tls);
  pthread_cond_destroy(&r->qcv);
  pthread_cond_destroy(&r->idle_cv);
  pthread_mutex_destroy(&r->qmu);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

const char *kr_remote_describe(const kr_remote *r) { return r ? r->desc : ""; }
const char *kr_remote_ns(const kr_remote *r) { return r ? r->ns : ""; }
int kr_remote_timeout_ms(const kr_remote *r) { return r ? r->timeout_ms : 0; }

void kr_remote_key_name(const kr_remote *r, kc_key key, char *buf, size_t cap) {
  char hex[33];
  kc_key_hex(key, hex);
  snprintf(buf, cap, "%s%s", r->prefix, hex);
}

static void warn(const char *fmt, const char *a, const char *b) {
  char m[1024];
  snprintf(m, sizeof m, fmt, a, b);
  rt_cache_backing_warn(NULL, m);
}

int kr_remote_get(kr_remote *r, kc_key key, void **entry, size_t *len, size_t *payload_off,
                  size_t *payload_len) {
  *entry = NULL;
  *len = *payload_off = *payload_len = 0;
  if (!r) return KR_MISS;
  char name[160], why[768];
  kr_remote_key_name(r, key, name, sizeof name);
  const char *argv[2] = {"GET", name};
  bool server_error;
  redisReply *rep = kr_command(r, 2, argv, NULL, &server_error, why, sizeof why);
  if (!rep) {
    atomic_fetch_add(&r->misses, 1);
    return KR_MISS;
  }
  if (rep->type != REDIS_REPLY_STRING) {
    if (rep->type != REDIS_REPLY_NIL) atomic_fetch_add(&r->errors, 1);
    freeReplyObject(rep);
    atomic_fetch_add(&r->misses, 1);
    return KR_MISS;
  }
  char bad[512] = "";
  if (kc_entry_check(rep->str, rep->len, key, payload_off, payload_len, bad, sizeof bad) != 0) {
    freeReplyObject(rep);
    atomic_fetch_add(&r->corrupt, 1);
    atomic_fetch_add(&r->misses, 1);
    kiln_status *st = kiln_status_new();
    int d = kr_remote_del(r, key, st);
    warn(d == 0 ? "remote kernel cache: entry %s was bad (%s); removed from the server"
                : "remote kernel cache: entry %s was bad (%s); removing it failed",
         name, bad);
    kiln_status_free(st);
    return KR_MISS;
  }
  void *copy = malloc(rep->len ? rep->len : 1);
  if (!copy) {
    freeReplyObject(rep);
    atomic_fetch_add(&r->misses, 1);
    return KR_MISS;
  }
  memcpy(copy, rep->str, rep->len);
  *entry = copy;
  *len = rep->len;
  freeReplyObject(rep);
  atomic_fetch_add(&r->hits, 1);
  return KR_HIT;
}

/* How long a SET may take: an upload of a large object over a real network
 * takes longer than a lookup's budget, and a slow upload must not open the
 * breaker that protects lookups. Off the request path, so generous. */
static int set_timeout_ms(const kr_remote *r) {
  int t = r->timeout_ms * 10;
  return t < 1000 ? 1000 : t;
}

/* SET key bytes: 0, or -1 with why. */
static int set_entry(kr_remote *r, kc_key key, const void *bytes, size_t len, char *why,
                     size_t whylen) {
  char name[160];
  kr_remote_key_name(r, key, name, sizeof name);
  const char *argv[3] = {"SET", name, bytes};
  size_t lens[3] = {3, strlen(name), len};
  bool server_error;
  redisReply *rep = kr_command_t(r, set_timeout_ms(r), 3, argv, lens, &server_error, why, whylen);
  if (!rep) return -1;
  freeReplyObject(rep);
  atomic_fetch_add(&r->published, 1);
  return 0;
}

int kr_remote_put_now(kr_remote *r, kc_key key, const void *entry, size_t len, kiln_status *st) {
  char why[768];
  if (set_entry(r, key, entry, len, why, sizeof why) != 0)
    return rt_err(st, KILN_ERR_IO, "publishing a kernel: %s", why);
  rt_ok(st);
  return 0;
}

int kr_remote_exists(kr_remote *r, kc_key key, kiln_status *st) {
  char name[160], why[768];
  kr_remote_key_name(r, key, name, sizeof name);
  const char *argv[2] = {"EXISTS", name};
  bool server_error;
  redisReply *rep = kr_command(r, 2, argv, NULL, &server_error, why, sizeof why);
  if (!rep) return rt_err(st, KILN_ERR_IO, "looking up %s: %s", name, why);
  int yes = rep->type == REDIS_REPLY_INTEGER && rep->integer > 0;
  freeReplyObject(rep);
  rt_ok(st);
  return yes;
}

int kr_remote_del(kr_remote *r, kc_key key, kiln_status *st) {
  char name[160], why[768];
  kr_remote_key_name(r, key, name, sizeof name);
  const char *argv[2] = {"DEL", name};
  bool server_error;
  redisReply *rep = kr_command(r, 2, argv, NULL, &server_error, why, sizeof why);
  if (!rep) return rt_err(st, KILN_ERR_IO, "removing %s: %s", name, why);
  freeReplyObject(rep);
  rt_ok(st);
  return 0;
}

/* ---- the publisher ---- */

static void *publisher(void *arg) {
  kr_remote *r = arg;
  rt_bg_thread me;
  rt_bg_enter(r->place, &me); /* off the CPUs where models execute */
  pthread_mutex_lock(&r->qmu);
  for (;;) {
    while (!r->head && !r->stop) pthread_cond_wait(&r->qcv, &r->qmu);
    if (!r->head) break; /* stop with nothing left */
    kr_item *it = r->head;
    r->head = it->next;
    if (!r->head) r->tail = NULL;
    r->qlen--;
    r->qbytes -= it->len;
    r->busy = true;
    pthread_mutex_unlock(&r->qmu);
    char why[768];
    if (set_entry(r, it->key, it->bytes, it->len, why, sizeof why) != 0)
      atomic_fetch_add(&r->dropped, 1);
    free(it->bytes);
    free(it);
    pthread_mutex_lock(&r->qmu);
    r->busy = false;
    if (!r->head) pthread_cond_broadcast(&r->idle_cv);
  }
  r->busy = false;
  pthread_cond_broadcast(&r->idle_cv);
  pthread_mutex_unlock(&r->qmu);
  rt_bg_leave(r->place, &me);
  return NULL;
}

void kr_remote_publish(kr_remote *r, kc_key key, const void *entry, size_t len) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  bool open = r->open_until_ms > kr_now_ms();
  pthread_mutex_unlock(&r->mu);
  kr_item *it = NULL;
  if (!open && (it = calloc(1, sizeof *it)) && (it->bytes = malloc(len ? len : 1))) {
    memcpy(it->bytes, entry, len);
    it->len = len;
    it->key = key;
  } else if (it) {
    free(it);
    it = NULL;
  }
  pthread_mutex_lock(&r->qmu);
  bool fits = it && !r->stop && r->qlen < KR_QUEUE_MAX && r->qbytes + len <= KR_QUEUE_MAX_BYTES;
  if (fits && !r->thread_started) {
    if (pthread_create(&r->thread, NULL, publisher, r) == 0) r->thread_started = true;
    else fits = false;
  }
  if (fits) {
    if (r->tail) r->tail->next = it;
    else r->head = it;
    r->tail = it;
    r->qlen++;
    r->qbytes += len;
    pthread_cond_signal(&r->qcv);
    it = NULL;
  }
  pthread_mutex_unlock(&r->qmu);
  if (!fits) {
    atomic_fetch_add(&r->dropped, 1);
    items_free(it);
  }
}

int kr_remote_flush(kr_remote *r, int64_t timeout_ms) {
  if (!r) return 0;
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  if (timeout_ms > 0) {
    int64_t ns = dl.tv_nsec + (timeout_ms % 1000) * 1000000;
    dl.tv_sec += (time_t)(timeout_ms / 1000 + ns / 1000000000);
    dl.tv_nsec = (long)(ns % 1000000000);
  }
  int rc = 0;
  pthread_mutex_lock(&r->qmu);
  while ((r->head || r->busy) && r->thread_started) {
    if (timeout_ms == 0) {
      rc = 1;
      break;
    }
    if (timeout_ms < 0) pthread_cond_wait(&r->idle_cv, &r->qmu);
    else if (pthread_cond_timedwait(&r->idle_cv, &r->qmu, &dl) == ETIMEDOUT) {
      rc = (r->head || r->busy) ? 1 : 0;
      break;
    }
  }
  pthread_mutex_unlock(&r->qmu);
  return rc;
}

/* ---- listing and server facts ---- */

int kr_remote_list(kr_remote *r, kr_entry_info **out, size_t *n, kiln_status *st) {
  *out = NULL;
  *n = 0;
  size_t cap = 0;
  char cursor[32] = "0", match[KR_MAX_NS + 24], why[768];
  snprintf(match, sizeof match, "%s*", r->prefix);
  size_t plen = strlen(r->prefix);
  do {
    const char *argv[6] = {"SCAN", cursor, "MATCH", match, "COUNT", "1000"};
    bool server_error;
    redisReply *rep = kr_command(r, 6, argv, NULL, &server_error, why, sizeof why);
    if (!rep) return rt_err(st, KILN_ERR_IO, "listing the remote cache: %s", why);
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
        rep->element[0]->type != REDIS_REPLY_STRING ||
        rep->element[1]->type != REDIS_REPLY_ARRAY) {
      freeReplyObject(rep);
      return rt_err(st, KILN_ERR_IO, "listing the remote cache: unexpected SCAN reply");
    }
    snprintf(cursor, sizeof cursor, "%.*s", (int)rep->element[0]->len, rep->element[0]->str);
    redisReply *keys = rep->element[1];
    for (size_t i = 0; i < keys->elements; i++) {
      redisReply *k = keys->element[i];
      kc_key key;
      if (k->type != REDIS_REPLY_STRING || k->len != plen + 32 ||
          !kc_key_parse(k->str + plen, &key))
        continue; /* someone else's key under our prefix */
      if (*n == cap) {
        cap = cap ? cap * 2 : 64;
        kr_entry_info *p = realloc(*out, cap * sizeof *p);
        if (!p) {
          freeReplyObject(rep);
          return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory listing the remote cache");
        }
        *out = p;
      }
      (*out)[(*n)++] = (kr_entry_info){key, 0};
    }
    freeReplyObject(rep);
  } while (strcmp(cursor, "0") != 0);
  for (size_t i = 0; i < *n; i++) {
    char name[160];
    kr_remote_key_name(r, (*out)[i].key, name, sizeof name);
    const char *argv[2] = {"STRLEN", name};
    bool server_error;
    redisReply *rep = kr_command(r, 2, argv, NULL, &server_error, why, sizeof why);
    if (!rep) return rt_err(st, KILN_ERR_IO, "listing the remote cache: %s", why);
    if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0)
      (*out)[i].bytes = (uint64_t)rep->integer;
    freeReplyObject(rep);
  }
  rt_ok(st);
  return 0;
}

int kr_remote_info(kr_remote *r, const char *const *names, int nnames, char (*bufs)[128],
                   kiln_status *st) {
  for (int i = 0; i < nnames; i++) bufs[i][0] = 0;
  const char *argv[1] = {"INFO"};
  char why[768];
  bool server_error;
  redisReply *rep = kr_command(r, 1, argv, NULL, &server_error, why, sizeof why);
  if (!rep) return rt_err(st, KILN_ERR_IO, "asking the remote cache's server: %s", why);
  if (rep->type == REDIS_REPLY_STRING) {
    for (int i = 0; i < nnames; i++) {
      size_t nl = strlen(names[i]);
      for (const char *p = rep->str; p && p < rep->str + rep->len;) {
        const char *eol = memchr(p, '\n', (size_t)(rep->str + rep->len - p));
        size_t ll = eol ? (size_t)(eol - p) : (size_t)(rep->str + rep->len - p);
        if (ll > nl && strncmp(p, names[i], nl) == 0 && p[nl] == ':') {
          size_t vl = ll - nl - 1;
          while (vl && (p[nl + vl] == '\r')) vl--;
          snprintf(bufs[i], 128, "%.*s", (int)vl, p + nl + 1);
          break;
        }
        p = eol ? eol + 1 : NULL;
      }
    }
  }
  freeReplyObject(rep);
  rt_ok(st);
  return 0;
}

void kr_remote_stats(kr_remote *r, kr_stats *out) {
  memset(out, 0, sizeof *out);
  if (!r) return;
  out->hits = atomic_load(&r->hits);
  out->misses = atomic_load(&r->misses);
  out->errors = atomic_load(&r->errors);
  out->published = atomic_load(&r->published);
  out->corrupt = atomic_load(&r->corrupt);
  out->dropped = atomic_load(&r->dropped);
  out->breaker_skips = atomic_load(&r->skips);
  out->breaker_opens = atomic_load(&r->opens);
  pthread_mutex_lock(&r->mu);
  out->breaker_open = r->open_until_ms > kr_now_ms();
  pthread_mutex_unlock(&r->mu);
  pthread_mutex_lock(&r->qmu);
  out->queued = r->qlen;
  pthread_mutex_unlock(&r->qmu);
}
