/* cache_remote_impl.h - internal to the remote cache (cache_remote*.c): the
 * tier's struct, its connection pool and breaker (cache_remote_conn.c), one
 * connection (cache_remote_link.c) and its TLS (cache_remote_tls.c). See
 * cache_remote.h for the design. */
#ifndef KILN_SRC_CACHE_REMOTE_IMPL_H
#define KILN_SRC_CACHE_REMOTE_IMPL_H

#include <hiredis/hiredis.h>
#include <openssl/ssl.h>
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

typedef struct kr_link kr_link;

struct kr_remote {
  kr_url url;
  SSL_CTX *tls; /* rediss://: made once from the URL's settings; NULL: plain */
  char ns[KR_MAX_NS + 1];
  char prefix[KR_MAX_NS + 16]; /* "<ns>:kc<format>:" */
  char desc[512];
  int timeout_ms, breaker_base_ms;
  struct rt_log *log; /* warnings (kr_options.log) */
  /* ---- connections and breaker (cache_remote_conn.c), guarded by mu ---- */
  pthread_mutex_t mu;
  kr_link **idle; /* connected, ready for a command */
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
  struct rt_bg_place *place; /* the publisher registers there (kr_options.place) */
  /* ---- counters ---- */
  _Atomic uint64_t hits, misses, errors, published, corrupt, dropped, skips, opens;
  atomic_bool warned_setup; /* a refused AUTH / SELECT was warned about */
  atomic_bool warned_link;  /* a failed TLS handshake or a connection the server
                               closed unanswered (TLS / plain mismatch) was warned about */
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

/* ---- one connection (cache_remote_link.c) ---- */

/* Connect to u's server before deadline_ms (kr_now_ms time), then, when tls
 * is not NULL, do the TLS handshake. NULL with why on failure; *connected
 * says whether the TCP connection was made (a failure after it is one of
 * TLS, not of a server that is down). */
kr_link *kr_link_open(const kr_url *u, SSL_CTX *tls, int64_t deadline_ms, bool *connected,
                      char *why, size_t whylen);
/* Send one command and read its reply before deadline_ms. The reply (free
 * with freeReplyObject; an error reply is a reply), or NULL with why (the
 * link is then unusable: its stream may hold half a reply). */
redisReply *kr_link_command(kr_link *l, int argc, const char **argv, const size_t *lens,
                            int64_t deadline_ms, char *why, size_t whylen);
/* Whether the server ever sent a byte on l. */
bool kr_link_heard(const kr_link *l);
void kr_link_free(kr_link *l); /* NULL ok */

/* ---- TLS (cache_remote_tls.c) ---- */

/* The client context for u's TLS settings. NULL with why (a file that
 * cannot be read or is not PEM, a key that does not match its cert). */
SSL_CTX *kr_tls_context(const kr_url *u, char *why, size_t whylen);
void kr_tls_context_free(SSL_CTX *ctx); /* NULL ok */
/* A session on fd that checks the server's certificate names u->host. */
SSL *kr_tls_session(SSL_CTX *ctx, const kr_url *u, int fd, char *why, size_t whylen);
/* Why the SSL call that returned ret on ssl failed, in words, while doing
 * ("handshake", "send", "receive"). */
void kr_tls_explain(SSL *ssl, int ret, const kr_url *u, const char *doing, char *why,
                    size_t whylen);

#endif
