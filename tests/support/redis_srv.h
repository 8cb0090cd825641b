/* redis_srv.h - a real redis-server for tests, on a free loopback port in a
 * temporary directory (no persistence), plain or TLS only (certificates
 * made there at test time with the openssl CLI), and a forwarding proxy
 * that delays every request by a fixed time (a slow network). */
#ifndef KILN_TESTS_REDIS_SRV_H
#define KILN_TESTS_REDIS_SRV_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct redis_srv {
  pid_t pid; /* 0 when not running */
  int port;  /* plain port; 0 for a TLS-only server */
  int tls_port;
  bool tls_client_auth; /* the server asks for a client certificate */
  char dir[64];
} redis_srv;

/* Path of redis-server (REDIS_SERVER, else on PATH), or NULL when absent. */
const char *redis_srv_binary(void);
/* Start a server on a free port in a new temporary directory and wait until
 * it answers PING (asserts on failure). Call redis_srv_binary first and
 * skip when it is NULL. */
void redis_srv_start(redis_srv *s);
/* Start a TLS-only server (--port 0 --tls-port P) whose certificate, in
 * DIR/server.pem, is issued by DIR/ca.pem for cert_names (an openssl
 * subjectAltName list: "DNS:localhost,IP:127.0.0.1"); DIR also gets
 * client.pem / client.key (issued by the same CA) and other-ca.pem (a CA
 * that issued nothing). client_auth: --tls-auth-clients yes. Waits until
 * the TLS port accepts connections. Skip when redis_srv_binary or
 * openssl_binary is NULL. */
void redis_srv_start_tls(redis_srv *s, const char *cert_names, bool client_auth);
/* Path of the openssl CLI, or NULL. */
const char *openssl_binary(void);
/* Start it again on the same port (after redis_srv_kill). */
void redis_srv_restart(redis_srv *s);
/* SIGKILL the server and reap it (the port then refuses connections). */
void redis_srv_kill(redis_srv *s);
/* Stop it (if running) and remove its directory. */
void redis_srv_stop(redis_srv *s);
/* "redis://127.0.0.1:PORT/0" into buf. */
void redis_srv_url(const redis_srv *s, char *buf, size_t cap);
/* A loopback port nothing listens on (bound then closed). */
int redis_free_port(void);

typedef struct delay_proxy delay_proxy;
/* Listen on a free loopback port (*port) and relay every connection to
 * 127.0.0.1:target, sleeping delay_ms before forwarding each chunk the
 * client sends. */
delay_proxy *delay_proxy_start(int target, int delay_ms, int *port);
void delay_proxy_stop(delay_proxy *p);

#endif
