/* cache_remote_link.c - one connection to the remote cache's server
 * (cache_remote_impl.h): a non-blocking TCP socket, plain or carrying TLS
 * (rediss://, cache_remote_tls.c), with one I/O path for both. hiredis
 * formats the commands (redisFormatCommandArgv) and parses the replies
 * (redisReader), which work on bytes; the socket is kiln's, because
 * Debian 12's hiredis 0.14 has no TLS. Every wait is a poll bounded by the
 * caller's deadline, so a slow or silent server costs at most that.
 *
 * Plain sends use MSG_NOSIGNAL; OpenSSL writes with write(2), so the
 * caller (kr_command_t) keeps SIGPIPE blocked around every call here. */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cache_remote_impl.h"

struct kr_link {
  int fd;
  SSL *ssl;           /* NULL: plain */
  const kr_url *url;  /* the kr_remote's, which outlives its links */
  redisReader *reader;
  bool heard;         /* the server has sent at least one byte */
};

/* Wait until fd is ready for events or the deadline passes: 1 ready (or
 * in error: the next call says which), 0 deadline, -1 poll failed. */
static int wait_fd(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    int64_t left = deadline_ms - kr_now_ms();
    if (left <= 0) return 0;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    if (n > 0) return 1;
    if (n == 0) return 0;
    if (errno != EINTR) return -1;
  }
}

/* A connected non-blocking socket to u's host and port (every address the
 * name has, in order, within the deadline), or -1 with why. The name
 * lookup itself (getaddrinfo) is not bounded by the deadline: a slow
 * resolver is the system's; an IP address or /etc/hosts avoids it. */
static int connect_tcp(const kr_url *u, int64_t deadline_ms, char *why, size_t whylen) {
  char port[8];
  snprintf(port, sizeof port, "%d", u->port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  int g = getaddrinfo(u->host, port, &hints, &res);
  if (g != 0) {
    snprintf(why, whylen, "cannot resolve %.200s: %s", u->host, gai_strerror(g));
    return -1;
  }
  int fd = -1;
  const char *last = "no address";
  for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                   ai->ai_protocol);
    if (s < 0) {
      last = strerror(errno);
      continue;
    }
    if (connect(s, ai->ai_addr, ai->ai_addrlen) != 0) {
      int err = errno;
      if (err == EINPROGRESS) {
        int w = wait_fd(s, POLLOUT, deadline_ms);
        socklen_t len = sizeof err;
        if (w == 0) err = ETIMEDOUT;
        else if (w < 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
      if (err) {
        last = err == ETIMEDOUT ? "timed out" : strerror(err);
        close(s);
        if (err == ETIMEDOUT) break; /* the deadline is spent */
        continue;
      }
    }
    fd = s;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(why, whylen, "connect to %.200s:%d: %s", u->host, u->port, last);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static int handshake(kr_link *l, int64_t deadline_ms, char *why, size_t whylen) {
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int r = SSL_connect(l->ssl);
    if (r == 1) return 0;
    int k = SSL_get_error(l->ssl, r);
    if (k != SSL_ERROR_WANT_READ && k != SSL_ERROR_WANT_WRITE) {
      kr_tls_explain(l->ssl, r, l->url, "handshake", why, whylen);
      return -1;
    }
    int w = wait_fd(l->fd, k == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms);
    if (w <= 0) {
      snprintf(why, whylen, "TLS handshake %s (a slow server, or one that does not speak TLS "
               "on this port? then use redis://)", w == 0 ? "timed out" : strerror(errno));
      return -1;
    }
  }
}

kr_link *kr_link_open(const kr_url *u, SSL_CTX *tls, int64_t deadline_ms, bool *connected,
                      char *why, size_t whylen) {
  *connected = false;
  kr_link *l = calloc(1, sizeof *l);
  if (!l || !(l->reader = redisReaderCreate())) {
    snprintf(why, whylen, "out of memory for a connection");
    free(l);
    return NULL;
  }
  l->url = u;
  l->fd = connect_tcp(u, deadline_ms, why, whylen);
  if (l->fd < 0) goto fail;
  *connected = true;
  if (tls) {
    if (!(l->ssl = kr_tls_session(tls, u, l->fd, why, whylen))) goto fail;
    if (handshake(l, deadline_ms, why, whylen) != 0) goto fail;
  }
  return l;
fail:
  kr_link_free(l);
  return NULL;
}

void kr_link_free(kr_link *l) {
  if (!l) return;
  /* no TLS close_notify: the server treats a closed socket alike, and it
   * would be one more write to a peer that may be gone */
  SSL_free(l->ssl);
  if (l->fd >= 0) close(l->fd);
  redisReaderFree(l->reader);
  free(l);
}

/* What to wait for after an SSL call that did not complete: POLLIN or
 * POLLOUT, or 0 with why when it failed. */
static short ssl_wait_for(kr_link *l, int r, const char *doing, char *why, size_t whylen) {
  int k = SSL_get_error(l->ssl, r);
  if (k == SSL_ERROR_WANT_READ) return POLLIN;
  if (k == SSL_ERROR_WANT_WRITE) return POLLOUT;
  kr_tls_explain(l->ssl, r, l->url, doing, why, whylen);
  return 0;
}

static int timed_out(int w, const char *doing, char *why, size_t whylen) {
  snprintf(why, whylen, "%s: %s", doing, w == 0 ? "timed out" : strerror(errno));
  return -1;
}

/* Send buf[n] whole. 0, or -1 with why. */
static int send_all(kr_link *l, const char *buf, size_t n, int64_t deadline_ms, char *why,
                    size_t whylen) {
  size_t done = 0;
  while (done < n) {
    short wait_for = POLLOUT;
    if (l->ssl) { /* a retry after WANT_* repeats the same buffer and length */
      int chunk = n - done > INT_MAX ? INT_MAX : (int)(n - done);
      ERR_clear_error();
      errno = 0;
      int r = SSL_write(l->ssl, buf + done, chunk);
      if (r > 0) {
        done += (size_t)r;
        continue;
      }
      if (!(wait_for = ssl_wait_for(l, r, "send", why, whylen))) return -1;
    } else {
      ssize_t r = send(l->fd, buf + done, n - done, MSG_NOSIGNAL);
      if (r >= 0) {
        done += (size_t)r;
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        snprintf(why, whylen, "send: %s", strerror(errno));
        return -1;
      }
    }
    int w = wait_fd(l->fd, wait_for, deadline_ms);
    if (w <= 0) return timed_out(w, "send", why, whylen);
  }
  return 0;
}

/* Receive what the server has sent (at least one byte) into the reader.
 * 0, or -1 with why. */
static int recv_some(kr_link *l, int64_t deadline_ms, char *why, size_t whylen) {
  char buf[16384];
  for (;;) {
    short wait_for = POLLIN;
    ssize_t got = -1;
    if (l->ssl) {
      ERR_clear_error();
      errno = 0;
      int r = SSL_read(l->ssl, buf, (int)sizeof buf);
      if (r > 0) got = r;
      else if (!(wait_for = ssl_wait_for(l, r, "receive", why, whylen))) return -1;
    } else {
      got = recv(l->fd, buf, sizeof buf, 0);
      if (got == 0 || (got < 0 && errno == ECONNRESET)) {
        snprintf(why, whylen, "%s%s", got == 0 ? "the server closed the connection"
                                               : "the server reset the connection",
                 l->heard ? "" : " without answering (a TLS port? then use rediss://)");
        return -1;
      }
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        snprintf(why, whylen, "receive: %s", strerror(errno));
        return -1;
      }
    }
    if (got > 0) {
      l->heard = true;
      if (redisReaderFeed(l->reader, buf, (size_t)got) != REDIS_OK) {
        snprintf(why, whylen, "reading the reply: %s", l->reader->errstr);
        return -1;
      }
      return 0;
    }
    int w = wait_fd(l->fd, wait_for, deadline_ms);
    if (w <= 0) return timed_out(w, "waiting for the reply", why, whylen);
  }
}

redisReply *kr_link_command(kr_link *l, int argc, const char **argv, const size_t *lens,
                            int64_t deadline_ms, char *why, size_t whylen) {
  char *cmd = NULL;
  int n = redisFormatCommandArgv(&cmd, argc, argv, lens);
  if (n < 0) {
    snprintf(why, whylen, "out of memory formatting a command");
    return NULL;
  }
  int rc = send_all(l, cmd, (size_t)n, deadline_ms, why, whylen);
  redisFreeCommand(cmd);
  if (rc != 0) return NULL;
  for (;;) {
    void *rep = NULL;
    if (redisReaderGetReply(l->reader, &rep) != REDIS_OK) {
      snprintf(why, whylen, "a malformed reply: %s", l->reader->errstr);
      return NULL;
    }
    if (rep) return rep;
    if (recv_some(l, deadline_ms, why, whylen) != 0) return NULL;
  }
}

bool kr_link_heard(const kr_link *l) { return l && l->heard; }
