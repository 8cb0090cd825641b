/* cache_remote_tls.c - the TLS side of the remote cache's connections
 * (rediss://, cache_remote.h) on OpenSSL: the client context made once per
 * kr_remote from the URL's settings (TLS 1.2 or later, the server's
 * certificate verified against cacert or the system's trust store, the
 * client's certificate for mutual TLS), a session per connection that
 * checks the certificate names the URL's host, and OpenSSL's failures put
 * in words an operator can act on (which check failed, and the likely
 * cause: a server without TLS, a missing client certificate). */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cache_remote_impl.h"

/* The last OpenSSL error of this thread in words ("" when none). */
static const char *ssl_reason(unsigned long e) {
  const char *r = e ? ERR_reason_error_string(e) : NULL;
  return r ? r : "";
}

/* A PEM file setting that cannot be read: -1 with why naming it. */
static int file_bad(const char *what, const char *path, char *why, size_t whylen) {
  if (access(path, R_OK) != 0)
    snprintf(why, whylen, "%s=%.300s: %s", what, path, strerror(errno));
  else
    snprintf(why, whylen, "%s=%.300s: not a usable PEM file (%s)", what, path,
             ssl_reason(ERR_peek_last_error()));
  ERR_clear_error();
  return -1;
}

SSL_CTX *kr_tls_context(const kr_url *u, char *why, size_t whylen) {
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    snprintf(why, whylen, "TLS: no OpenSSL context (%s)", ssl_reason(ERR_get_error()));
    return NULL;
  }
  int bad = 0;
  if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION)) {
    snprintf(why, whylen, "TLS: cannot require TLS 1.2 or later");
    bad = 1;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (!bad && u->cacert[0]) {
    if (SSL_CTX_load_verify_locations(ctx, u->cacert, NULL) != 1)
      bad = file_bad("cacert", u->cacert, why, whylen);
  } else if (!bad && SSL_CTX_set_default_verify_paths(ctx) != 1) {
    snprintf(why, whylen, "TLS: the system's trust store cannot be loaded (%s); name a CA file "
             "with ?cacert=", ssl_reason(ERR_peek_last_error()));
    bad = 1;
  }
  if (!bad && u->cert[0]) {
    if (SSL_CTX_use_certificate_chain_file(ctx, u->cert) != 1)
      bad = file_bad("cert", u->cert, why, whylen);
    else if (SSL_CTX_use_PrivateKey_file(ctx, u->key, SSL_FILETYPE_PEM) != 1 &&
             ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH)
      bad = file_bad("key", u->key, why, whylen);
    else if (SSL_CTX_check_private_key(ctx) != 1) {
      snprintf(why, whylen, "key=%.300s is not the key of cert=%.300s", u->key, u->cert);
      bad = 1;
    }
  }
  ERR_clear_error();
  if (bad) {
    SSL_CTX_free(ctx);
    return NULL;
  }
  return ctx;
}

void kr_tls_context_free(SSL_CTX *ctx) { SSL_CTX_free(ctx); }

SSL *kr_tls_session(SSL_CTX *ctx, const kr_url *u, int fd, char *why, size_t whylen) {
  ERR_clear_error();
  SSL *ssl = SSL_new(ctx);
  if (!ssl || SSL_set_fd(ssl, fd) != 1) {
    snprintf(why, whylen, "TLS: no session (%s)", ssl_reason(ERR_get_error()));
    SSL_free(ssl);
    return NULL;
  }
  X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  int ok;
  if (X509_VERIFY_PARAM_set1_ip_asc(param, u->host) == 1) { /* an IP address: no SNI */
    ok = 1;
  } else {
    ERR_clear_error();
    ok = SSL_set_tlsext_host_name(ssl, u->host) == 1 && SSL_set1_host(ssl, u->host) == 1;
  }
  if (!ok) {
    snprintf(why, whylen, "TLS: cannot check the host name %.200s (%s)", u->host,
             ssl_reason(ERR_get_error()));
    SSL_free(ssl);
    return NULL;
  }
  return ssl;
}

/* Whether e is OpenSSL's sign of bytes that are not TLS records. */
static bool not_tls(unsigned long e) {
  if (ERR_GET_LIB(e) != ERR_LIB_SSL) return false;
  int r = ERR_GET_REASON(e);
  return r == SSL_R_WRONG_VERSION_NUMBER || r == SSL_R_PACKET_LENGTH_TOO_LONG ||
         r == SSL_R_UNEXPECTED_RECORD ||
         r == SSL_R_HTTP_REQUEST || r == SSL_R_HTTPS_PROXY_REQUEST;
}

/* Whether e is an alert by which the server refuses or asks for the
 * client's certificate. */
static bool client_cert_alert(unsigned long e) {
  if (ERR_GET_LIB(e) != ERR_LIB_SSL) return false;
  int r = ERR_GET_REASON(e);
  return r == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
         r == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE || r == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
         r == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE;
}

void kr_tls_explain(SSL *ssl, int ret, const kr_url *u, const char *doing, char *why,
                    size_t whylen) {
  int sys_errno = errno;
  int kind = SSL_get_error(ssl, ret);
  unsigned long e = ERR_peek_last_error();
  long v = SSL_get_verify_result(ssl);
  if (kind == SSL_ERROR_SSL && v != X509_V_OK) {
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
      snprintf(why, whylen, "TLS: the server's certificate does not name %.200s (%s)", u->host,
               X509_verify_cert_error_string(v));
    else
      snprintf(why, whylen, "TLS: the server's certificate is not trusted: %s (checked against "
               "%.300s)", X509_verify_cert_error_string(v),
               u->cacert[0] ? u->cacert : "the system's trust store");
  } else if (kind == SSL_ERROR_SSL) {
    const char *hint = not_tls(e) ? " (the server does not speak TLS on this port? then use "
                                    "redis://)"
                       : client_cert_alert(e) && !u->cert[0]
                           ? " (the server wants a client certificate: add ?cert=...&key=...)"
                       : client_cert_alert(e) ? " (the server refused the client certificate)"
                                              : "";
    snprintf(why, whylen, "TLS %s failed: %s%s", doing, e ? ssl_reason(e) : "protocol error",
             hint);
  } else if (kind == SSL_ERROR_ZERO_RETURN) {
    snprintf(why, whylen, "the server closed the TLS connection during %s", doing);
  } else { /* SSL_ERROR_SYSCALL: the socket */
    snprintf(why, whylen, "the connection ended during TLS %s (%s)%s", doing,
             sys_errno ? strerror(sys_errno) : "closed by the server",
             u->cert[0] ? "" : "; a server that wants a client certificate does this: "
                               "?cert=...&key=...");
  }
  ERR_clear_error();
}
