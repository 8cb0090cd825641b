/* test_cache_remote_tls.c - the remote kernel cache over TLS (rediss://)
 * on a real TLS-only redis-server, its CA and certificates made by the
 * openssl CLI at test time (tests/support/redis_srv.c): a second process
 * with an empty disk cache compiles nothing after a first one published,
 * by IP address and by host name; AUTH over TLS; mutual TLS; a server
 * killed under pooled TLS connections, then restarted; a slow network
 * (handshakes time out, the compile goes on). Each failure
 * (a certificate from another CA or for another host, a plain server on a
 * rediss:// URL, a TLS server on a redis:// URL, a missing client
 * certificate) still gives a correct run, a log line saying what failed,
 * and failures the breaker counts. Skipped, saying so, without
 * redis-server or openssl. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/cache_remote.h"
#include "src/cache_remote_impl.h"
#include "src/rt.h"
#include "support/redis_srv.h"
#include "support/remote_run.h"

#define TLS_TIMEOUT_MS 3000 /* a TLS handshake on a loaded, sanitized build */
#define ALL_NAMES "DNS:localhost,IP:127.0.0.1"

static redis_srv srv;

static void need_tools(void) {
  if (!redis_srv_binary()) cr_skip_test("skipped: redis-server not installed");
  if (!openssl_binary()) cr_skip_test("skipped: the openssl CLI is not installed");
}

static void setup(void) {
  need_tools();
  redis_srv_start_tls(&srv, ALL_NAMES, false);
  remote_fresh_disk();
}

static void setup_mutual(void) {
  need_tools();
  redis_srv_start_tls(&srv, ALL_NAMES, true);
  remote_fresh_disk();
}

static void setup_other_name(void) {
  need_tools();
  redis_srv_start_tls(&srv, "DNS:other.example", false);
  remote_fresh_disk();
}

static void teardown(void) {
  redis_srv_stop(&srv);
  if (remote_disk[0]) remote_remove_disk();
  remote_disk[0] = 0;
}

/* rediss://host:TLS_PORT/0?cacert=DIR/ca.pem then query (e.g. "&cert=..."). */
static void tls_url(char *buf, size_t cap, const char *host, const char *query) {
  snprintf(buf, cap, "rediss://%s:%d/0?cacert=%s/ca.pem%s", host, srv.tls_port, srv.dir, query);
}

/* ---- the log of a context ---- */

static char logged[16384];

static void keep_line(void *user, kiln_log_level level, const char *line) {
  size_t n = strlen(logged);
  snprintf(logged + n, sizeof logged - n, "%s\n", line);
}

/* remote_ctx with its warnings kept in logged (read them after the
 * context is freed: its threads may still log until then). */
static kiln_context *logged_ctx(const char *url, int timeout_ms) {
  logged[0] = 0;
  kiln_context *ctx = remote_ctx(url, timeout_ms);
  kiln_status *st = kiln_status_new();
  cr_assert_eq(kiln_context_set_log(ctx, keep_line, NULL, KILN_LOG_WARN, st), 0);
  kiln_status_free(st);
  return ctx;
}

/* One command on url's server through kiln's own connection; asserts it
 * is answered without an error. */
static void server_cmd(const char *url, int argc, const char **argv) {
  kiln_status *st = kiln_status_new();
  kr_options o = {.ns = "test", .timeout_ms = TLS_TIMEOUT_MS};
  kr_remote *r = kr_remote_new(url, &o, st);
  cr_assert_not_null(r, "%s", kiln_status_message(st));
  bool server_error;
  char why[768];
  redisReply *rep = kr_command(r, argc, argv, NULL, &server_error, why, sizeof why);
  cr_assert_not_null(rep, "%s: %s", argv[0], why);
  freeReplyObject(rep);
  kr_remote_free(r);
  kiln_status_free(st);
}

/* A context warms url's server with GRAPH; then a second process (its own
 * empty disk cache) on url2 compiles nothing. */
static void warm_then_fetch(const char *url, const char *url2) {
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    kiln_context *ctx = logged_ctx(url, TLS_TIMEOUT_MS);
    remote_compile_and_run(ctx, GRAPH, 16, NULL);
    int flushed = kiln_context_flush_remote_cache(ctx, 10000, NULL);
    run_counts c = remote_counts(ctx);
    kiln_context_free(ctx);
    if (logged[0]) fprintf(stderr, "the warming process logged:\n%s", logged);
    _exit(flushed == 0 && c.compiles == NKERNELS && c.published == NKERNELS ? 0 : 3);
  }
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the warming process failed");
  cr_assert_eq(remote_keys(url), NKERNELS);
  remote_remove_disk();
  remote_fresh_disk();
  pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    kiln_context *ctx = remote_ctx(url2, TLS_TIMEOUT_MS);
    remote_compile_and_run(ctx, GRAPH, 16, NULL);
    run_counts c = remote_counts(ctx);
    kiln_context_free(ctx);
    _exit(c.compiles == 0 && c.remote_hits == NKERNELS && c.remote_errors == 0 ? 0 : 4);
  }
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
            "the second process compiled kernels or missed the server");
}

/* A run on url, which cannot use the server: every kernel compiles here,
 * the result is the one of a run without a remote cache, the log holds
 * expect, and the failures open the breaker. */
static void fails_with(const char *url, int timeout_ms, const char *expect) {
  kiln_context *ctx = logged_ctx(url, timeout_ms);
  float got = 0, want = 1;
  remote_compile_and_run(ctx, GRAPH, 16, &got);
  kiln_context_flush_remote_cache(ctx, 10000, NULL);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, NKERNELS);
  cr_expect_eq(c.remote_hits, 0);
  cr_expect_geq(c.remote_errors, 1);
  cr_expect_eq(c.published, 0);
  kiln_context_free(ctx);
  cr_expect(strstr(logged, expect), "expected '%s' in the log, which holds:\n%s", expect, logged);
  remote_remove_disk();
  remote_fresh_disk();
  ctx = remote_ctx(NULL, 0);
  remote_compile_and_run(ctx, GRAPH, 16, &want);
  kiln_context_free(ctx);
  cr_expect_eq(got, want);
  remote_remove_disk();
  remote_fresh_disk();

  kiln_status *st = kiln_status_new();
  kr_options o = {.ns = "test", .timeout_ms = timeout_ms, .breaker_ms = 60000};
  kr_remote *r = kr_remote_new(url, &o, st);
  cr_assert_not_null(r, "%s", kiln_status_message(st));
  void *entry;
  size_t len, off, plen;
  for (int i = 0; i < KR_BREAKER_FAILURES + 2; i++)
    cr_expect_eq(kr_remote_get(r, (kc_key){.lo = 1, .hi = 2}, &entry, &len, &off, &plen),
                 KR_MISS);
  kr_stats s;
  kr_remote_stats(r, &s);
  cr_expect(s.breaker_open, "%llu failures did not open the breaker",
            (unsigned long long)s.errors);
  cr_expect_eq(s.errors, KR_BREAKER_FAILURES);
  cr_expect_eq(s.breaker_skips, 2);
  kr_remote_free(r);
  kiln_status_free(st);
}

/* ---- over TLS ---- */

Test(cache_remote_tls, second_process_compiles_nothing, .init = setup, .fini = teardown) {
  char by_ip[700], by_name[700];
  tls_url(by_ip, sizeof by_ip, "127.0.0.1", "");
  tls_url(by_name, sizeof by_name, "localhost", "");
  warm_then_fetch(by_ip, by_name);
}

Test(cache_remote_tls, auth_over_tls, .init = setup, .fini = teardown) {
  char url[700], creds[64];
  tls_url(url, sizeof url, "127.0.0.1", "");
  const char *acl[] = {"ACL", "SETUSER", "kiln", "on", ">s3cret", "~test:*", "+get", "+set",
                       "+del", "+exists", "+scan", "+strlen", "+info"};
  server_cmd(url, 13, acl);
  snprintf(creds, sizeof creds, "kiln:wrong@127.0.0.1");
  tls_url(url, sizeof url, creds, "");
  kiln_context *ctx = logged_ctx(url, TLS_TIMEOUT_MS);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 10000, NULL), 0);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, 1);
  cr_expect_eq(c.published, 0);
  kiln_context_free(ctx);
  cr_expect(strstr(logged, "AUTH refused") && !strstr(logged, "wrong"), "%s", logged);
  snprintf(creds, sizeof creds, "kiln:s3cret@localhost");
  tls_url(url, sizeof url, creds, "");
  remote_publish_one(url, TLS_TIMEOUT_MS);
}

Test(cache_remote_tls, mutual_tls_with_a_client_certificate, .init = setup_mutual,
     .fini = teardown) {
  char url[700], query[400];
  tls_url(url, sizeof url, "127.0.0.1", "");
  fails_with(url, 1000, "client certificate");
  snprintf(query, sizeof query, "&cert=%s/client.pem&key=%s/client.key", srv.dir, srv.dir);
  tls_url(url, sizeof url, "127.0.0.1", query);
  warm_then_fetch(url, url);
}

/* Pooled TLS connections to a killed server: writing to them must not
 * kill the process (SIGPIPE), the compile goes on; a restarted server is
 * used again. A slow network over TLS times out the same way. */
Test(cache_remote_tls, server_killed_then_restarted_and_a_slow_network, .init = setup,
     .fini = teardown) {
  char url[700];
  tls_url(url, sizeof url, "127.0.0.1", "");
  kiln_context *ctx = remote_ctx(url, TLS_TIMEOUT_MS);
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 10000, NULL), 0);
  redis_srv_kill(&srv);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, NKERNELS + 1);
  cr_expect_geq(c.remote_errors, 1);
  kiln_context_free(ctx);
  redis_srv_restart(&srv);
  remote_remove_disk();
  remote_fresh_disk();
  ctx = remote_ctx(url, TLS_TIMEOUT_MS);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 10000, NULL), 0);
  cr_expect_eq(remote_counts(ctx).published, 1);
  kiln_context_free(ctx);

  int port;
  delay_proxy *p = delay_proxy_start(srv.tls_port, 60, &port);
  char slow[700];
  snprintf(slow, sizeof slow, "rediss://127.0.0.1:%d/0?cacert=%s/ca.pem", port, srv.dir);
  remote_remove_disk();
  remote_fresh_disk();
  ctx = logged_ctx(slow, 30); /* below the proxy's delay: every handshake times out */
  double t0 = rt_now_ms();
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  double ms = rt_now_ms() - t0;
  c = remote_counts(ctx);
  cr_expect_eq(c.compiles, NKERNELS);
  cr_expect_eq(c.remote_hits, 0);
  cr_expect_geq(c.remote_errors, 1);
  cr_expect_lt(ms, 5000, "a slow TLS server held the compile for %.0f ms", ms);
  kiln_context_free(ctx);
  cr_expect(strstr(logged, "TLS handshake timed out"), "%s", logged);
  delay_proxy_stop(p);
}

/* ---- failures ---- */

Test(cache_remote_tls, certificate_from_another_ca, .init = setup, .fini = teardown) {
  char url[700];
  snprintf(url, sizeof url, "rediss://127.0.0.1:%d/0?cacert=%s/other-ca.pem", srv.tls_port,
           srv.dir);
  fails_with(url, 1000, "the server's certificate is not trusted");
}

Test(cache_remote_tls, certificate_for_another_host, .init = setup_other_name,
     .fini = teardown) {
  char url[700];
  tls_url(url, sizeof url, "127.0.0.1", "");
  fails_with(url, 1000, "certificate does not name 127.0.0.1");
  tls_url(url, sizeof url, "localhost", "");
  fails_with(url, 1000, "certificate does not name localhost");
}

Test(cache_remote_tls, plain_server_on_a_tls_url) {
  need_tools();
  redis_srv_start(&srv);
  remote_fresh_disk();
  char url[128];
  snprintf(url, sizeof url, "rediss://127.0.0.1:%d/0", srv.port);
  fails_with(url, 500, "TLS handshake");
  teardown();
}

Test(cache_remote_tls, tls_server_on_a_plain_url, .init = setup, .fini = teardown) {
  char url[128];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", srv.tls_port);
  fails_with(url, 1000, "rediss://");
}

Test(cache_remote_tls, bad_tls_files_are_refused_up_front) {
  need_tools();
  redis_srv_start_tls(&srv, ALL_NAMES, false);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = remote_ctx(NULL, 0);
  char url[700];
  snprintf(url, sizeof url, "rediss://localhost?cacert=%s/redis.log", srv.dir);
  cr_expect_eq(kiln_context_set_remote_cache(ctx, url, NULL, 0, st), -1);
  cr_expect(strstr(kiln_status_message(st), "not a usable PEM file"), "%s",
            kiln_status_message(st));
  snprintf(url, sizeof url, "rediss://localhost?cert=%s/client.pem&key=%s/server.key", srv.dir,
           srv.dir);
  cr_expect_eq(kiln_context_set_remote_cache(ctx, url, NULL, 0, st), -1);
  cr_expect(strstr(kiln_status_message(st), "is not the key of"), "%s",
            kiln_status_message(st));
  kiln_context_free(ctx);
  kiln_status_free(st);
  redis_srv_stop(&srv);
}
