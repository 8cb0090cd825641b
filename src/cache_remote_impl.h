/* cache_remote_impl.h - internal to the remote cache (cache_remote*.c): the
 * tier's struct, its connection pool and breaker (cache_remote_conn.c). See
 * cache_remote.h for the design. */
#ifndef KILN_SRC_CACHE_REMOTE_IMPL_H
#define KILN_SRC_CACHE_REMOTE_IMPL_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cache_remote.h"

/* One entry waiting to be published. */
typedef struct kr_item {
  struct kr_item *next;
  kc_key key;
  void *bytes;
  size_t len;
} kr_item;

struct kr_remote {
  kr_url url;
  char ns[KR_MAX_NS + 1];
  char prefix[KR_MAX_NS + 16]; /* "<ns>:kc<format>:" */
  char desc[512];
  int timeout_ms, breaker_base_ms;
  struct rt_log *log; /* warnings (kr_options.log) */
  /* ---- connections and breaker (cache_remote_conn.c), guarded by mu ---- */
  pthread_mutex_t mu;
  redisContext **idle; /* connected, ready for a command */
  int nidle, capidle;
  int fails;            /* consecutive failures */
  int64_t open_until_ms; /* breaker open before this (monotonic ms) */
  int64_t backoff_ms;    /* the next opening's length */
  /* ---- publishing (cache_remote.c), guarded by qmu ---- */
  pthread_mutex_t qmu;
  pthread_cond_t qcv, idle_cv;
  kr_item *head, *tail;
  int qlen;
  size_t qbytes;
  bool busy, stop, thread_started;
  pthread_t thread;
  /* ---- counters ---- */
  _Atomic uint64_t hits, misses, errors, published, corrupt, dropped, skips, opens;
  atomic_bool warned_setup; /* a refused AUTH / SELECT was warned about */
};

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t kr_now_ms(void);

/* Run one command (argv[argc] with lengths) on a pooled connection, with
 * r's timeout and the breaker. Returns the reply (free with
 * freeReplyObject), or NULL with why filled: breaker open, no connection,
 * I/O error or timeout (a failure: counted towards the breaker), or an
 * error reply from the server (*server_error true: not a failure of the
 * connection). Every NULL counts in r->errors, except a skip by the
 * breaker (counted in r->skips). SIGPIPE is blocked during the command. */
redisReply *kr_command(kr_remote *r, int argc, const char **argv, const size_t *lens,
                       bool *server_error, char *why, size_t whylen);
/* kr_command with its own timeout (ms) for the connect and the command. */
redisReply *kr_command_t(kr_remote *r, int timeout_ms, int argc, const char **argv,
                         const size_t *lens, bool *server_error, char *why, size_t whylen);
/* Close every pooled connection (at free). */
void kr_conn_close_all(kr_remote *r);

#endif
