/* cache_remote_conn.c - connections to the remote cache's server and the
 * breaker in front of them (cache_remote.h).
 *
 * A command takes an idle connection from the pool, or opens one (connect,
 * the TLS handshake for rediss://, then AUTH and SELECT as the URL asks:
 * cache_remote_link.c), and gives it back after a clean reply; a
 * connection that failed is closed, never reused (its stream may hold half
 * a reply). The pool keeps at most KR_POOL_MAX idle connections. Assumes
 * nothing of the server: it may be gone, slow, restarted or full at any
 * point; opening a connection and each command are bounded by the timeout.
 *
 * OpenSSL writes with write(2): a server that closed the connection would
 * raise SIGPIPE and kill the process. A command therefore runs with
 * SIGPIPE blocked in its thread and a SIGPIPE it caused is consumed before
 * the mask is restored; a SIGPIPE already pending is left alone. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_backing.h"
#include "cache_remote_impl.h"

#define KR_POOL_MAX 8

int64_t kr_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A checked reply to a setup command: 0, or -1 with why (*server_error
 * when the server answered with an error). */
static int setup_cmd(kr_link *c, int timeout_ms, int argc, const char **argv, const char *what,
                     bool *server_error, char *why, size_t whylen) {
  char e[384];
  redisReply *rep = kr_link_command(c, argc, argv, NULL, kr_now_ms() + timeout_ms, e, sizeof e);
  if (!rep) {
    snprintf(why, whylen, "%s: %.300s", what, e);
    return -1;
  }
  int rc = 0;
  if (rep->type == REDIS_REPLY_ERROR) {
    snprintf(why, whylen, "%s refused: %.200s", what, rep->str ? rep->str : "");
    *server_error = true;
    rc = -1;
  }
  freeReplyObject(rep);
  return rc;
}

/* A new connection, set up. NULL with why; *reached when the server was
 * reached (TCP connected) but the TLS handshake or the setup failed. */
static kr_link *open_conn(kr_remote *r, int timeout_ms, bool *server_error, bool *reached,
                          char *why, size_t whylen) {
  kr_link *c = kr_link_open(&r->url, r->tls, kr_now_ms() + timeout_ms, reached, why, whylen);
  if (!c) return NULL;
  if (r->url.password[0]) {
    const char *a[3] = {"AUTH", r->url.user, r->url.password};
    int n = r->url.user[0] ? 3 : 2;
    if (n == 2) a[1] = r->url.password;
    if (setup_cmd(c, timeout_ms, n, a, "AUTH", server_error, why, whylen) != 0) {
      kr_link_free(c);
      return NULL;
    }
  }
  if (r->url.db != 0) {
    char db[16];
    snprintf(db, sizeof db, "%d", r->url.db);
    const char *a[2] = {"SELECT", db};
    if (setup_cmd(c, timeout_ms, 2, a, "SELECT", server_error, why, whylen) != 0) {
      kr_link_free(c);
      return NULL;
    }
  }
  return c;
}

/* ---- the breaker (under r->mu) ---- */

/* A failure; returns the breaker's new open time in ms when this one
 * opened it, else 0. */
static int64_t note_failure_locked(kr_remote *r) {
  r->fails++;
  if (r->fails < KR_BREAKER_FAILURES) return 0;
  int64_t open_ms = r->backoff_ms;
  r->open_until_ms = kr_now_ms() + open_ms;
  r->backoff_ms = r->backoff_ms * 2 > KR_BREAKER_MAX_MS ? KR_BREAKER_MAX_MS : r->backoff_ms * 2;
  atomic_fetch_add(&r->opens, 1);
  return open_ms;
}

static void note_success_locked(kr_remote *r) {
  r->fails = 0;
  r->open_until_ms = 0;
  r->backoff_ms = r->breaker_base_ms;
}

redisReply *kr_command(kr_remote *r, int argc, const char **argv, const size_t *lens,
                       bool *server_error, char *why, size_t whylen) {
  return kr_command_t(r, r->timeout_ms, argc, argv, lens, server_error, why, whylen);
}

redisReply *kr_command_t(kr_remote *r, int timeout_ms, int argc, const char **argv,
                         const size_t *lens, bool *server_error, char *why, size_t whylen) {
  *server_error = false;
  pthread_mutex_lock(&r->mu);
  int64_t left = r->open_until_ms - kr_now_ms();
  if (left > 0) {
    pthread_mutex_unlock(&r->mu);
    atomic_fetch_add(&r->skips, 1);
    snprintf(why, whylen, "not asked: the breaker is open for %lld ms more after %d failures",
             (long long)left, r->fails);
    return NULL;
  }
  kr_link *c = r->nidle ? r->idle[--r->nidle] : NULL;
  pthread_mutex_unlock(&r->mu);

  sigset_t pipe_set, old, pend;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  sigpending(&pend);
  bool was_pending = sigismember(&pend, SIGPIPE) == 1;

  char e[384] = "";
  redisReply *rep = NULL;
  bool fresh = !c, reached = false;
  if (!c) c = open_conn(r, timeout_ms, server_error, &reached, e, sizeof e);
  if (c) rep = kr_link_command(c, argc, argv, lens, kr_now_ms() + timeout_ms, e, sizeof e);

  if (!was_pending) {
    sigpending(&pend);
    if (sigismember(&pend, SIGPIPE) == 1) {
      struct timespec zero = {0, 0};
      while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);

  bool keep = c && rep;
  int64_t opened_ms = 0;
  int fails = 0;
  pthread_mutex_lock(&r->mu);
  if (rep || *server_error) note_success_locked(r); /* the server answered */
  else opened_ms = note_failure_locked(r);
  fails = r->fails;
  pthread_mutex_unlock(&r->mu);
  /* Tell the operator, rarely: when the breaker opens (at most once per
   * opening, and openings grow apart) and the first time the server refuses
   * the connection's setup (a wrong password would otherwise only show as
   * misses). */
  char m[700];
  if (opened_ms) {
    snprintf(m, sizeof m, "remote kernel cache %.200s: %d failures in a row (last: %.300s); "
             "not asked for %lld ms, kernels compile locally meanwhile",
             r->desc, fails, e, (long long)opened_ms);
    rt_cache_backing_warn(r->log, m);
  } else if (*server_error && !c && !atomic_exchange(&r->warned_setup, true)) {
    snprintf(m, sizeof m, "remote kernel cache %.200s: %.300s", r->desc, e);
    rt_cache_backing_warn(r->log, m);
  } else if (!rep && !*server_error && fresh && reached &&
             !(c && kr_link_heard(c)) && !atomic_exchange(&r->warned_link, true)) {
    /* the server is there but a new connection never worked (TLS settings,
     * TLS on one side only, a server too slow to answer at all): said at
     * once, not only when the breaker opens, since it is likely a setting */
    snprintf(m, sizeof m, "remote kernel cache %.200s: %.300s; kernels compile locally",
             r->desc, e);
    rt_cache_backing_warn(r->log, m);
  }
  pthread_mutex_lock(&r->mu);
  if (keep && r->nidle < KR_POOL_MAX) {
    if (r->nidle == r->capidle) {
      int cap = r->capidle ? r->capidle * 2 : 4;
      kr_link **p = realloc(r->idle, (size_t)cap * sizeof *p);
      if (p) {
        r->idle = p;
        r->capidle = cap;
      }
    }
    if (r->nidle < r->capidle) {
      r->idle[r->nidle++] = c;
      c = NULL;
    }
  }
  pthread_mutex_unlock(&r->mu);
  kr_link_free(c);

  if (rep && rep->type == REDIS_REPLY_ERROR) {
    snprintf(e, sizeof e, "server error: %.300s", rep->str ? rep->str : "");
    freeReplyObject(rep);
    rep = NULL;
    *server_error = true;
  }
  if (!rep) {
    atomic_fetch_add(&r->errors, 1);
    snprintf(why, whylen, "%s: %s", r->desc, e);
  }
  return rep;
}

void kr_conn_close_all(kr_remote *r) {
  pthread_mutex_lock(&r->mu);
  for (int i = 0; i < r->nidle; i++) kr_link_free(r->idle[i]);
  r->nidle = 0;
  free(r->idle);
  r->idle = NULL;
  r->capidle = 0;
  pthread_mutex_unlock(&r->mu);
}
