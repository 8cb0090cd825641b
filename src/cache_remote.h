/* cache_remote.h - internal to src/: the fleet tier of the kernel cache, a
 * Redis server shared by many machines (cache_remote*.c). Looked up after
 * the memory cache and the local disk, before compiling (cache_backing.c
 * chains them).
 *
 * URL: redis[s]://[[user]:password@]host[:port][/db][?cacert=F&cert=F&key=F]
 * (port 6379, db 0 by default; AUTH with the user and password when given,
 * SELECT db when not 0). rediss:// speaks TLS (1.2 or later, OpenSSL;
 * cache_remote_tls.c): the server's certificate must chain to cacert (a PEM
 * file; default: the system's trust store) and name the host (DNS name or
 * IP address); cert and key (PEM files, both or neither) are the client's
 * for servers that ask (mutual TLS). The query is only for rediss://, its
 * values are taken literally (no %-decoding) and may not hold '&' or '@'.
 * Connections are kiln's own (cache_remote_link.c): hiredis 0.14, which
 * has no TLS, only formats commands and parses replies.
 *
 * Keys: "<ns>:kc<format>:<32 hex>", ns from KILN_CACHE_REMOTE_NS (default
 * "kiln"), format the disk entry format (KC_DISK_FORMAT), the hex the
 * kernel key's. Values: the exact bytes of the disk entry file (header with
 * its checksums, then the object), so a value is checked by the disk
 * format's own code (kc_entry_check); a value that fails is a miss, logged,
 * deleted from the server and counted. No TTL is set: expiry and
 * maxmemory eviction are the operator's policy (README).
 *
 * Faults never fail a compile: every connect and command has a timeout
 * (default 50 ms, KILN_CACHE_REMOTE_TIMEOUT_MS; a SET, off the request path
 * and carrying a whole object, gets ten times that, at least 1 s); after
 * KR_BREAKER_FAILURES consecutive failures (no connection, timeouts, broken
 * replies) the breaker opens and the server is not asked for a while (5 s,
 * KILN_CACHE_REMOTE_BREAKER_MS; doubled each time a probe after it fails, up
 * to 5 minutes; a success closes it). A server error reply (OOM when full,
 * a refused AUTH) is an error but not a sign of a dead server.
 *
 * Publishing is asynchronous: kr_remote_publish copies the entry into a
 * bounded queue (KR_QUEUE_MAX entries, KR_QUEUE_MAX_BYTES) that one
 * background thread, started on first use, sends; a full queue or an open
 * breaker drops the entry (counted). kr_remote_free drains the queue for
 * at most KR_DRAIN_MS first.
 *
 * Thread safety: every function may be called from any thread at once; a
 * command takes a connection from a small pool (made on demand) and gives
 * it back, so concurrent gets do not wait on each other. A kr_remote's URL
 * never changes: kiln_context_set_remote_cache makes a new one. */
#ifndef KILN_SRC_CACHE_REMOTE_H
#define KILN_SRC_CACHE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/common.h"

#include "cache_disk.h"

#define KR_DEFAULT_PORT 6379
#define KR_DEFAULT_TIMEOUT_MS 50
#define KR_DEFAULT_NS "kiln"
#define KR_BREAKER_FAILURES 3
#define KR_BREAKER_BASE_MS 5000
#define KR_BREAKER_MAX_MS 300000
#define KR_QUEUE_MAX 256
#define KR_QUEUE_MAX_BYTES ((size_t)256 << 20)
#define KR_DRAIN_MS 2000
#define KR_MAX_NS 64

#define KR_MAX_PATH 512

/* A parsed URL. */
typedef struct kr_url {
  char host[256];
  int port;
  int db;
  char user[128];     /* "" when none */
  char password[256]; /* "" when none */
  bool tls;           /* rediss:// */
  char cacert[KR_MAX_PATH]; /* "" when none: the system's trust store */
  char cert[KR_MAX_PATH];   /* client certificate, "" when none */
  char key[KR_MAX_PATH];    /* its private key, "" when none */
} kr_url;

/* Parse url into out. 0, or -1 with why (which part is wrong and what is
 * expected). The password is never copied into why. */
int kr_url_parse(const char *url, kr_url *out, char *why, size_t whylen);
/* url with its password replaced by "***" into buf (for messages). */
void kr_url_redact(const char *url, char *buf, size_t cap);
/* Check a namespace: 1 to KR_MAX_NS bytes of [A-Za-z0-9_.-]. */
bool kr_ns_ok(const char *ns);

typedef struct kr_remote kr_remote;

typedef struct kr_options {
  const char *ns;       /* NULL: KILN_CACHE_REMOTE_NS, else "kiln" */
  int timeout_ms;       /* 0: KILN_CACHE_REMOTE_TIMEOUT_MS, else 50 */
  int breaker_ms;       /* 0: KILN_CACHE_REMOTE_BREAKER_MS, else 5000 */
  struct rt_log *log;   /* where warnings go (the context's log); NULL: stderr */
  struct rt_bg_place *place; /* where the publisher thread registers (bg_place.h); NULL: nowhere */
} kr_options;

/* A remote tier for url (nothing is connected yet: the first command
 * connects). Owned; free with kr_remote_free. NULL with st filled for a bad
 * URL, namespace or setting (KILN_ERR_INVALID_ARGUMENT, saying which), for
 * a build without hiredis, or out of memory. o may be NULL. */
kr_remote *kr_remote_new(const char *url, const kr_options *o, kiln_status *st);
/* Drain the publish queue (at most KR_DRAIN_MS), stop the thread, close
 * every connection. NULL ok. */
void kr_remote_free(kr_remote *r);
/* "redis://host:port/db ns kiln" (password redacted), owned by r. */
const char *kr_remote_describe(const kr_remote *r);
const char *kr_remote_ns(const kr_remote *r);
int kr_remote_timeout_ms(const kr_remote *r);
/* key's name on the server into buf ("kiln:kc1:<hex>"). */
void kr_remote_key_name(const kr_remote *r, kc_key key, char *buf, size_t cap);

/* kr_remote_get results */
enum { KR_MISS = 0, KR_HIT = 1 };
/* Fetch and check key's entry. KR_HIT: *entry (malloc'd, caller frees)
 * holds the whole entry (*len bytes), its payload at *payload_off,
 * *payload_len bytes. KR_MISS otherwise (absent, bad: deleted and warned
 * about, server unreachable or slow, breaker open); never blocks longer
 * than the timeout per command. */
int kr_remote_get(kr_remote *r, kc_key key, void **entry, size_t *len, size_t *payload_off,
                  size_t *payload_len);
/* Queue entry[len] (a whole entry's bytes, copied) for publishing under
 * key; returns at once. */
void kr_remote_publish(kr_remote *r, kc_key key, const void *entry, size_t len);
/* Store entry[len] under key now (the CLI's push). 0, or -1 with st. */
int kr_remote_put_now(kr_remote *r, kc_key key, const void *entry, size_t len, kiln_status *st);
/* Whether the server holds key's entry: 1 yes, 0 no, -1 with st (no
 * answer). */
int kr_remote_exists(kr_remote *r, kc_key key, kiln_status *st);
/* Remove key's entry now. 0 (also when absent), or -1 with st. */
int kr_remote_del(kr_remote *r, kc_key key, kiln_status *st);
/* Wait until the publish queue is empty and idle, at most timeout_ms
 * (< 0: no limit). 0 when idle, 1 on timeout. */
int kr_remote_flush(kr_remote *r, int64_t timeout_ms);

/* One entry of the namespace, for kr_remote_list. */
typedef struct kr_entry_info {
  kc_key key;
  uint64_t bytes; /* the value's length */
} kr_entry_info;
/* Every key of r's namespace and format (SCAN, so the server is never
 * blocked), with its size: *out malloc'd (caller frees, also when *n is 0).
 * 0, or -1 with st (server unreachable, out of memory). */
int kr_remote_list(kr_remote *r, kr_entry_info **out, size_t *n, kiln_status *st);
/* The server's INFO fields name (used_memory_human, maxmemory_policy,
 * redis_version, ...) into buf; "" when absent. 0, or -1 with st. */
int kr_remote_info(kr_remote *r, const char *const *names, int nnames, char (*bufs)[128],
                   kiln_status *st);

typedef struct kr_stats {
  uint64_t hits, misses, errors, published;
  uint64_t corrupt;        /* values that failed a check (deleted), counted in misses too */
  uint64_t dropped;        /* entries not published: queue full, breaker open, or at free */
  uint64_t breaker_skips;  /* commands not sent because the breaker was open */
  uint64_t breaker_opens;  /* times the breaker opened */
  bool breaker_open;       /* now */
  int queued;              /* entries waiting to be published now */
} kr_stats;
void kr_remote_stats(kr_remote *r, kr_stats *out); /* zeros for NULL */

#endif
