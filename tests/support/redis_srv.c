/* redis_srv.c - redis_srv.h: a throwaway redis-server and a delaying proxy
 * for the remote cache tests. */
#include "redis_srv.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *redis_srv_binary(void) {
  static char path[512];
  const char *env = getenv("REDIS_SERVER");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  const char *dirs[] = {"/usr/bin", "/usr/local/bin", "/usr/sbin"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(path, sizeof path, "%s/redis-server", dirs[i]);
    if (access(path, X_OK) == 0) return path;
  }
  return NULL;
}

static int listen_loopback(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  cr_assert(fd >= 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t n = sizeof a;
  cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &n), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

int redis_free_port(void) {
  int port;
  close(listen_loopback(&port));
  return port;
}

static bool answers(int port) {
  struct timeval tv = {0, 200000};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
  bool ok = false;
  if (c && !c->err) {
    redisReply *r = redisCommand(c, "PING");
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (r) freeReplyObject(r);
  }
  if (c) redisFree(c);
  return ok;
}

/* Whether a TCP connection to the loopback port is accepted. */
static bool accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bool ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0) close(fd);
  return ok;
}

static void spawn(redis_srv *s) {
  const char *bin = redis_srv_binary();
  cr_assert_not_null(bin, "redis-server not installed");
  char port[16], tls_port[16], log[128], cert[128], key[128], ca[128];
  snprintf(port, sizeof port, "%d", s->port);
  snprintf(tls_port, sizeof tls_port, "%d", s->tls_port);
  snprintf(log, sizeof log, "%s/redis.log", s->dir);
  snprintf(cert, sizeof cert, "%s/server.pem", s->dir);
  snprintf(key, sizeof key, "%s/server.key", s->dir);
  snprintf(ca, sizeof ca, "%s/ca.pem", s->dir);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    if (s->tls_port)
      execl(bin, bin, "--port", "0", "--tls-port", tls_port, "--tls-cert-file", cert,
            "--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients",
            s->tls_client_auth ? "yes" : "no", "--bind", "127.0.0.1", "--dir", s->dir,
            "--save", "", "--appendonly", "no", "--logfile", log, "--daemonize", "no",
            (char *)NULL);
    else
      execl(bin, bin, "--port", port, "--bind", "127.0.0.1", "--dir", s->dir, "--save", "",
            "--appendonly", "no", "--logfile", log, "--daemonize", "no", (char *)NULL);
    _exit(127);
  }
  s->pid = pid;
  for (int i = 0; i < 250; i++) { /* 5 s */
    if (s->tls_port ? accepts(s->tls_port) : answers(s->port)) return;
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      s->pid = 0;
      cr_assert_fail("redis-server exited at start (see %s)", log);
    }
    usleep(20000);
  }
  cr_assert_fail("redis-server on port %d did not answer within 5 s", s->port);
}

void redis_srv_start(redis_srv *s) {
  memset(s, 0, sizeof *s);
  strcpy(s->dir, "/tmp/kiln-redis-XXXXXX");
  cr_assert_not_null(mkdtemp(s->dir));
  s->port = redis_free_port();
  spawn(s);
}

const char *openssl_binary(void) {
  return access("/usr/bin/openssl", X_OK) == 0 ? "/usr/bin/openssl" : NULL;
}

/* Run an openssl command line in dir (asserts it succeeds). */
static void openssl_in(const char *dir, const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s %s >>openssl.log 2>&1", dir, openssl_binary(), args);
  cr_assert_eq(system(cmd), 0, "openssl %s failed (see %s/openssl.log)", args, dir);
}

/* A P-256 key NAME.key and a certificate NAME.pem for CN with the
 * subjectAltName list san, issued by ca (NULL: self-signed, a CA). */
static void make_cert(const char *dir, const char *name, const char *cn, const char *san,
                      const char *ca) {
  char args[768];
  if (!ca) {
    snprintf(args, sizeof args, "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
             "-nodes -keyout %s.key -out %s.pem -days 2 -subj /CN=%s", name, name, cn);
    openssl_in(dir, args);
    return;
  }
  snprintf(args, sizeof args, "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
           "-keyout %s.key -out %s.csr -subj /CN=%s", name, name, cn);
  openssl_in(dir, args);
  char path[160];
  snprintf(path, sizeof path, "%s/%s.ext", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f, "subjectAltName=%s\n", san);
  fclose(f);
  snprintf(args, sizeof args, "x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial "
           "-out %s.pem -days 2 -extfile %s.ext", name, ca, ca, name, name);
  openssl_in(dir, args);
}

void redis_srv_start_tls(redis_srv *s, const char *cert_names, bool client_auth) {
  memset(s, 0, sizeof *s);
  strcpy(s->dir, "/tmp/kiln-redis-XXXXXX");
  cr_assert_not_null(mkdtemp(s->dir));
  cr_assert_not_null(openssl_binary(), "openssl not installed");
  make_cert(s->dir, "ca", "kiln-test-ca", NULL, NULL);
  make_cert(s->dir, "other-ca", "kiln-other-ca", NULL, NULL);
  make_cert(s->dir, "server", "kiln-test-server", cert_names, "ca");
  make_cert(s->dir, "client", "kiln-test-client", "DNS:kiln-client", "ca");
  s->tls_port = redis_free_port();
  s->tls_client_auth = client_auth;
  spawn(s);
}

void redis_srv_restart(redis_srv *s) { spawn(s); }

void redis_srv_kill(redis_srv *s) {
  if (!s->pid) return;
  kill(s->pid, SIGKILL);
  waitpid(s->pid, NULL, 0);
  s->pid = 0;
}

void redis_srv_stop(redis_srv *s) {
  if (s->pid) {
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
  }
  if (s->dir[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", s->dir);
    s->dir[0] = 0;
  }
}

void redis_srv_url(const redis_srv *s, char *buf, size_t cap) {
  snprintf(buf, cap, "redis://127.0.0.1:%d/0", s->port);
}

/* ---- the delaying proxy ---- */

#define PROXY_MAX_CONNS 64

typedef struct relay {
  int client, server, delay_ms;
  atomic_int *stop;
  pthread_t thread;
} relay;

struct delay_proxy {
  int lfd, target, delay_ms;
  atomic_int stop;
  pthread_t thread;
  relay conns[PROXY_MAX_CONNS];
  int nconns;
};

static bool forward(int from, int to, int delay_ms) {
  char buf[65536];
  ssize_t n = read(from, buf, sizeof buf);
  if (n <= 0) return false;
  if (delay_ms) {
    struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
  }
  for (ssize_t off = 0; off < n;) {
    ssize_t w = send(to, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
    if (w <= 0) return false;
    off += w;
  }
  return true;
}

static void *relay_main(void *arg) {
  relay *r = arg;
  while (!*r->stop) {
    struct pollfd p[2] = {{r->client, POLLIN, 0}, {r->server, POLLIN, 0}};
    int k = poll(p, 2, 50);
    if (k < 0 && errno != EINTR) break;
    if (k <= 0) continue;
    if (p[0].revents && !forward(r->client, r->server, r->delay_ms)) break;
    if (p[1].revents && !forward(r->server, r->client, 0)) break;
  }
  close(r->client);
  close(r->server);
  return NULL;
}

static void *accept_main(void *arg) {
  delay_proxy *p = arg;
  while (!p->stop) {
    struct pollfd pf = {p->lfd, POLLIN, 0};
    if (poll(&pf, 1, 50) <= 0) continue;
    int c = accept(p->lfd, NULL, NULL);
    if (c < 0) continue;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->target),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        p->nconns == PROXY_MAX_CONNS) {
      close(c);
      if (s >= 0) close(s);
      continue;
    }
    relay *r = &p->conns[p->nconns];
    *r = (relay){c, s, p->delay_ms, &p->stop, 0};
    if (pthread_create(&r->thread, NULL, relay_main, r) == 0) p->nconns++;
    else {
      close(c);
      close(s);
    }
  }
  return NULL;
}

delay_proxy *delay_proxy_start(int target, int delay_ms, int *port) {
  delay_proxy *p = calloc(1, sizeof *p);
  cr_assert_not_null(p);
  p->lfd = listen_loopback(port);
  cr_assert_eq(listen(p->lfd, 16), 0);
  p->target = target;
  p->delay_ms = delay_ms;
  cr_assert_eq(pthread_create(&p->thread, NULL, accept_main, p), 0);
  return p;
}

void delay_proxy_stop(delay_proxy *p) {
  if (!p) return;
  p->stop = 1;
  pthread_join(p->thread, NULL);
  for (int i = 0; i < p->nconns; i++) pthread_join(p->conns[i].thread, NULL);
  close(p->lfd);
  free(p);
}
