/* test_cache_remote.c - the remote (fleet) kernel cache on a real
 * redis-server (tests/support/redis_srv.c starts one per test on a free
 * loopback port): a second process with an empty disk cache compiles
 * nothing after a first one published; a killed server, a corrupt value, a
 * slow network (a delaying proxy), a full server and a dead server (the
 * breaker) never fail a compile; the public counters of the breaker and
 * the publisher (a full queue drops at once); AUTH from the URL; device
 * code; the CLI's warm --remote, ls, push and pull. Over TLS:
 * test_cache_remote_tls.c. The tests that need a server are skipped,
 * saying so, when redis-server is not installed. */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/cache_disk.h"
#include "src/cache_remote.h"
#include "src/rt.h"
#include "support/redis_srv.h"
#include "support/remote_run.h"

static redis_srv srv;

static void need_redis(void) {
  if (!redis_srv_binary()) cr_skip_test("skipped: redis-server not installed");
}

static void setup(void) {
  need_redis();
  redis_srv_start(&srv);
  remote_fresh_disk();
}

static void teardown(void) {
  redis_srv_stop(&srv);
  if (remote_disk[0]) remote_remove_disk();
  remote_disk[0] = 0;
}

/* ---- URLs (no server) ---- */

Test(cache_remote, url_forms_parse) {
  kr_url u;
  char why[512];
  cr_assert_eq(kr_url_parse("redis://cache.internal", &u, why, sizeof why), 0, "%s", why);
  cr_expect_str_eq(u.host, "cache.internal");
  cr_expect_eq(u.port, 6379);
  cr_expect_eq(u.db, 0);
  cr_assert_eq(kr_url_parse("redis://bob:s3cr@t@10.0.0.5:7000/3", &u, why, sizeof why), 0);
  cr_expect_str_eq(u.user, "bob");
  cr_expect_str_eq(u.password, "s3cr@t");
  cr_expect_str_eq(u.host, "10.0.0.5");
  cr_expect_eq(u.port, 7000);
  cr_expect_eq(u.db, 3);
  cr_assert_eq(kr_url_parse("redis://:pw@[::1]:6380", &u, why, sizeof why), 0, "%s", why);
  cr_expect_str_eq(u.user, "");
  cr_expect_str_eq(u.host, "::1");
  cr_expect_eq(u.port, 6380);
  cr_expect(!u.tls);
  cr_assert_eq(kr_url_parse("rediss://u:p?w@cache:6380/2?cacert=/etc/ca.pem&cert=/c.pem&key=/k"
                            ".pem", &u, why, sizeof why), 0, "%s", why);
  cr_expect(u.tls);
  cr_expect_str_eq(u.password, "p?w");
  cr_expect_str_eq(u.host, "cache");
  cr_expect_eq(u.port, 6380);
  cr_expect_eq(u.db, 2);
  cr_expect_str_eq(u.cacert, "/etc/ca.pem");
  cr_expect_str_eq(u.cert, "/c.pem");
  cr_expect_str_eq(u.key, "/k.pem");
  cr_assert_eq(kr_url_parse("rediss://cache", &u, why, sizeof why), 0, "%s", why);
  cr_expect(u.tls && !u.cacert[0] && u.port == 6379);
}

Test(cache_remote, bad_urls_say_what_is_wrong) {
  kr_url u;
  char why[512];
  static const char *const bad[][2] = {
      {"redis://h?cacert=/ca.pem", "cacert= is a TLS setting: use rediss://"},
      {"rediss://h?cafile=/ca.pem", "unknown query parameter 'cafile'"},
      {"rediss://h?cert=/c.pem", "go together"},
      {"rediss://h?cacert=", "file path"},
      {"rediss://h/1?cacert", "name=value"},
      {"http://h", "redis://"},
      {"redis://h:99999", "port"},
      {"redis://h/x", "database"},
      {"redis://:6379", "host"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(kr_url_parse(bad[i][0], &u, why, sizeof why), -1, "%s parsed", bad[i][0]);
    cr_expect(strstr(why, bad[i][1]), "%s: '%s' lacks '%s'", bad[i][0], why, bad[i][1]);
  }
}

Test(cache_remote, api_rejects_bad_settings_and_hides_the_password) {
  setenv("KILN_CACHE", "off", 1);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx);
  cr_expect_eq(kiln_context_set_remote_cache(ctx, "rediss://h?cacert=/nonexistent/ca.pem",
                                             NULL, 0, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_expect(strstr(kiln_status_message(st), "cacert=/nonexistent/ca.pem: No such file"), "%s",
            kiln_status_message(st));
  cr_expect_eq(kiln_context_set_remote_cache(ctx, "redis://h", "bad ns!", 0, st), -1);
  cr_expect(strstr(kiln_status_message(st), "namespace"), "%s", kiln_status_message(st));
  cr_expect_eq(kiln_context_set_remote_cache(ctx, "redis://u:hunter2@h:1/2", NULL, 0, st), 0);
  const char *s = kiln_context_remote_cache_status(ctx);
  cr_expect(strstr(s, "redis://u:***@h:1/2") && !strstr(s, "hunter2"), "%s", s);
  cr_expect_eq(kiln_context_set_remote_cache(ctx, "rediss://u:hunter2@h:1/2", NULL, 0, st), 0,
               "%s", kiln_status_message(st));
  s = kiln_context_remote_cache_status(ctx);
  cr_expect(strstr(s, "rediss://u:***@h:1/2") && !strstr(s, "hunter2"), "%s", s);
  cr_expect_eq(kiln_context_set_remote_cache(ctx, "rediss://u:hunter2@h?cacert=/none", NULL, 0,
                                             st), -1);
  cr_expect(strstr(kiln_status_message(st), "rediss://u:***@h") &&
            !strstr(kiln_status_message(st), "hunter2"), "%s", kiln_status_message(st));
  cr_expect_eq(kiln_context_set_remote_cache(ctx, NULL, NULL, 0, st), 0);
  cr_expect(strstr(kiln_context_remote_cache_status(ctx), "off"));
  cr_expect_eq(kiln_context_counter(ctx, KILN_COUNTER_REMOTE_HITS), 0);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- against a real server ---- */

Test(cache_remote, second_process_with_empty_disk_compiles_nothing, .init = setup,
     .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  float a = 0, b = 0;
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) { /* the warming process: compiles, publishes, exits */
    kiln_context *ctx = remote_ctx(url, 0);
    remote_compile_and_run(ctx, GRAPH, 16, &a);
    run_counts c = remote_counts(ctx);
    cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
    c = remote_counts(ctx);
    kiln_context_free(ctx);
    _exit(c.compiles == NKERNELS && c.published == NKERNELS ? 0 : 3);
  }
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "warming process failed");
  cr_assert_eq(remote_keys(url), NKERNELS);
  remote_remove_disk();
  remote_fresh_disk(); /* the second process starts with an empty local cache */
  kiln_context *ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH, 16, &b);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, 0, "compiled %g kernels", c.compiles);
  cr_expect_eq(c.remote_hits, NKERNELS);
  cr_expect_eq(c.disk_hits, 0, "Redis hits counted as disk hits");
  cr_expect_eq(c.remote_errors, 0);
  kiln_context_free(ctx);
  /* the fetched entries were written to the local disk: a third context,
   * without the server, loads them from there */
  redis_srv_kill(&srv);
  ctx = remote_ctx(NULL, 0);
  remote_compile_and_run(ctx, GRAPH, 16, &a);
  c = remote_counts(ctx);
  cr_expect_eq(c.compiles, 0);
  cr_expect_eq(c.disk_hits, NKERNELS);
  cr_expect_eq(a, b);
  kiln_context_free(ctx);
}

Test(cache_remote, server_killed_mid_run_compiles_locally, .init = setup, .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  kiln_context *ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  redis_srv_kill(&srv); /* pooled connections now point at a dead server */
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, NKERNELS + 1);
  cr_expect_geq(c.remote_errors, 1);
  /* restarted (empty): the next kernels are published there again */
  redis_srv_restart(&srv);
  kiln_context_free(ctx);
  remote_remove_disk();
  remote_fresh_disk();
  ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  cr_expect_eq(remote_counts(ctx).published, 1);
  kiln_context_free(ctx);
}

/* A command on the test's server through hiredis; asserts it is answered. */
static void server_cmd(const char *cmd) {
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", srv.port, tv);
  cr_assert(c && !c->err);
  redisReply *x = redisCommand(c, cmd);
  cr_assert(x && x->type != REDIS_REPLY_ERROR, "%s: %s", cmd, x ? x->str : c->errstr);
  freeReplyObject(x);
  redisFree(c);
}

Test(cache_remote, full_server_refuses_publishing_but_compiles_succeed, .init = setup,
     .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  server_cmd("CONFIG SET maxmemory-policy noeviction");
  server_cmd("CONFIG SET maxmemory 1"); /* below what it uses: every write is refused (OOM) */
  kiln_context *ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, NKERNELS + 1);
  cr_expect_eq(c.published, 0);
  cr_expect_eq(c.remote_errors, NKERNELS + 1, "%g errors", c.remote_errors);
  /* error replies are answers: the breaker stays closed, so once there is
   * room again the next kernel is published */
  server_cmd("CONFIG SET maxmemory 0");
  remote_compile_and_run(ctx, GRAPH3, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  cr_expect_eq(remote_counts(ctx).published, 1);
  kiln_context_free(ctx);
}

Test(cache_remote, auth_comes_from_the_url, .init = setup, .fini = teardown) {
  char url[128];
  server_cmd("ACL SETUSER kiln on >s3cret ~test:* +get +set +del +exists +scan +strlen +info");
  snprintf(url, sizeof url, "redis://kiln:wrong@127.0.0.1:%d/0", srv.port);
  kiln_context *ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, 1);
  cr_expect_eq(c.published, 0);
  cr_expect_geq(c.remote_errors, 1);
  kiln_context_free(ctx);
  snprintf(url, sizeof url, "redis://kiln:s3cret@127.0.0.1:%d/0", srv.port);
  remote_publish_one(url, 0);
}

static kc_key some_key(void) { return (kc_key){.lo = 0x1234, .hi = 0xabcd}; }

Test(cache_remote, corrupt_value_is_a_miss_and_is_removed, .init = setup, .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  kiln_status *st = kiln_status_new();
  kr_options o = {.ns = "test"};
  kr_remote *r = kr_remote_new(url, &o, st);
  cr_assert_not_null(r, "%s", kiln_status_message(st));
  kc_component comp = {"kernel_ir", "x"};
  void *e;
  size_t n;
  const char payload[] = "object bytes";
  cr_assert_eq(kc_entry_encode(some_key(), &comp, 1, payload, sizeof payload, &e, &n, st), 0);
  cr_assert_eq(kr_remote_put_now(r, some_key(), e, n, st), 0, "%s", kiln_status_message(st));
  void *got;
  size_t len, off, plen;
  cr_assert_eq(kr_remote_get(r, some_key(), &got, &len, &off, &plen), KR_HIT);
  cr_expect_eq(plen, sizeof payload);
  cr_expect_eq(memcmp((char *)got + off, payload, plen), 0);
  free(got);
  ((char *)e)[n - 2] ^= 1; /* a flipped payload bit */
  cr_assert_eq(kr_remote_put_now(r, some_key(), e, n, st), 0);
  cr_expect_eq(kr_remote_get(r, some_key(), &got, &len, &off, &plen), KR_MISS);
  cr_expect_null(got);
  kr_stats s;
  kr_remote_stats(r, &s);
  cr_expect_eq(s.corrupt, 1);
  cr_expect_eq(remote_keys(url), 0, "the bad value is still on the server");
  /* a truncated one too */
  cr_assert_eq(kr_remote_put_now(r, some_key(), e, n / 2, st), 0);
  cr_expect_eq(kr_remote_get(r, some_key(), &got, &len, &off, &plen), KR_MISS);
  cr_expect_eq(remote_keys(url), 0);
  free(e);
  kr_remote_free(r);
  kiln_status_free(st);

  /* through a model: every value corrupted, the compile still succeeds */
  kiln_context *ctx = remote_ctx(url, 0);
  float a, b;
  remote_compile_and_run(ctx, GRAPH, 16, &a);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  kiln_context_free(ctx);
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", srv.port, tv);
  cr_assert(c && !c->err);
  redisReply *keys = redisCommand(c, "KEYS test:*");
  cr_assert(keys && keys->type == REDIS_REPLY_ARRAY && keys->elements == NKERNELS);
  for (size_t i = 0; i < keys->elements; i++) {
    redisReply *x = redisCommand(c, "SETRANGE %s 200 XXXX", keys->element[i]->str);
    cr_assert(x && x->type == REDIS_REPLY_INTEGER);
    freeReplyObject(x);
  }
  freeReplyObject(keys);
  redisFree(c);
  remote_remove_disk();
  remote_fresh_disk();
  ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH, 16, &b);
  run_counts k = remote_counts(ctx);
  cr_expect_eq(k.remote_hits, 0);
  cr_expect_eq(k.compiles, NKERNELS);
  cr_expect_eq(a, b);
  kiln_context_free(ctx);
}

Test(cache_remote, slow_network_times_out_then_a_longer_timeout_serves, .init = setup,
     .fini = teardown) {
  char url[96], slow[96];
  redis_srv_url(&srv, url, sizeof url);
  kiln_context *ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  kiln_context_free(ctx);
  int port;
  delay_proxy *p = delay_proxy_start(srv.port, 50, &port);
  snprintf(slow, sizeof slow, "redis://127.0.0.1:%d/0", port);
  remote_remove_disk();
  remote_fresh_disk();
  /* 25 ms: every command times out (a delay equal to the timeout is a
   * coin toss: the kernel rounds socket timeouts to its tick) */
  ctx = remote_ctx(slow, 25);
  double t0 = rt_now_ms();
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  double ms = rt_now_ms() - t0;
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, NKERNELS);
  cr_expect_eq(c.remote_hits, 0);
  cr_expect_geq(c.remote_errors, 1);
  cr_expect_lt(ms, 5000, "a slow server held the compile for %.0f ms", ms);
  kiln_context_free(ctx);
  remote_remove_disk();
  remote_fresh_disk();
  ctx = remote_ctx(slow, 1000);
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  c = remote_counts(ctx);
  cr_expect_eq(c.compiles, 0);
  cr_expect_eq(c.remote_hits, NKERNELS);
  kiln_context_free(ctx);
  delay_proxy_stop(p);
}

Test(cache_remote, breaker_stops_asking_a_dead_server, .init = setup, .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  redis_srv_kill(&srv);
  kiln_status *st = kiln_status_new();
  kr_options o = {.ns = "test", .breaker_ms = 1000};
  kr_remote *r = kr_remote_new(url, &o, st);
  cr_assert_not_null(r);
  void *got;
  size_t len, off, plen;
  for (int i = 0; i < KR_BREAKER_FAILURES + 5; i++)
    cr_expect_eq(kr_remote_get(r, some_key(), &got, &len, &off, &plen), KR_MISS);
  kr_stats s;
  kr_remote_stats(r, &s);
  cr_expect_eq(s.errors, KR_BREAKER_FAILURES, "asked a dead server %llu times",
               (unsigned long long)s.errors);
  cr_expect_eq(s.breaker_skips, 5);
  cr_expect(s.breaker_open);
  cr_expect_eq(s.breaker_opens, 1);
  /* back, but the breaker holds for 1 s; then a probe closes it */
  redis_srv_restart(&srv);
  cr_expect_eq(kr_remote_get(r, some_key(), &got, &len, &off, &plen), KR_MISS);
  kr_remote_stats(r, &s);
  cr_expect_eq(s.breaker_skips, 6);
  usleep(1050 * 1000);
  cr_expect_eq(kr_remote_put_now(r, some_key(), "x", 1, st), 0, "%s", kiln_status_message(st));
  kr_remote_stats(r, &s);
  cr_expect(!s.breaker_open);
  /* a failed probe doubles the wait */
  redis_srv_kill(&srv);
  for (int i = 0; i < KR_BREAKER_FAILURES; i++)
    kr_remote_get(r, some_key(), &got, &len, &off, &plen);
  usleep(1050 * 1000);
  kr_remote_get(r, some_key(), &got, &len, &off, &plen); /* the probe fails: 2 s */
  kr_remote_stats(r, &s);
  cr_expect_eq(s.breaker_opens, 3);
  usleep(1050 * 1000);
  kr_remote_stats(r, &s);
  cr_expect(s.breaker_open, "the second opening is not longer");
  kr_remote_free(r);
  kiln_status_free(st);
}

/* The breaker's and the publisher's counters are public: a dead server
 * takes 3 failed commands, then the breaker skips the rest and every
 * kernel's publish is dropped. */
Test(cache_remote, dead_server_counters_are_public, .init = setup, .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  redis_srv_kill(&srv);
  kiln_context *ctx = remote_ctx(url, 0);
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  remote_compile_and_run(ctx, GRAPH2, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 5000, NULL), 0);
  double errors = kiln_context_counter(ctx, KILN_COUNTER_REMOTE_ERRORS);
  double skips = kiln_context_counter(ctx, KILN_COUNTER_REMOTE_SKIPS);
  /* 3 lookups and 3 publishes: the first failures open the breaker (two
   * commands racing past a closing breaker may both fail); then lookups
   * are skipped and publishes dropped before they are queued */
  cr_expect_geq(errors, KR_BREAKER_FAILURES);
  cr_expect_leq(errors, KR_BREAKER_FAILURES + 1);
  cr_expect_geq(skips, 1, "GRAPH2's lookup was sent to a dead server");
  cr_expect_eq(kiln_context_counter(ctx, KILN_COUNTER_REMOTE_DROPPED), NKERNELS + 1);
  cr_expect_eq(kiln_context_counter(ctx, KILN_COUNTER_REMOTE_BREAKER_OPENS), 1);
  cr_expect_eq(kiln_context_counter(ctx, KILN_COUNTER_REMOTE_PUBLISHED), 0);
  cr_expect_eq(kiln_context_counter(ctx, KILN_COUNTER_REMOTE_CORRUPT), 0);
  cr_expect_eq(kiln_context_counter(ctx, KILN_COUNTER_COMPILES), NKERNELS + 1);
  cr_expect_eq(kiln_model_counter(NULL, KILN_COUNTER_REMOTE_CORRUPT), -1);
  cr_expect_eq(kiln_context_counter(ctx, (kiln_counter)(KILN_COUNTER_ARENA_GROWS + 1)), -1);
  kiln_context_free(ctx);
}

/* A publisher stuck on a slow server: the queue holds KR_QUEUE_MAX
 * entries, the rest are dropped at once, never waited for. */
Test(cache_remote, full_publish_queue_drops_and_counts, .init = setup, .fini = teardown) {
  int port;
  delay_proxy *p = delay_proxy_start(srv.port, 400, &port);
  char slow[96];
  snprintf(slow, sizeof slow, "redis://127.0.0.1:%d/0", port);
  kiln_status *st = kiln_status_new();
  kr_options o = {.ns = "test", .timeout_ms = 1000};
  kr_remote *r = kr_remote_new(slow, &o, st);
  cr_assert_not_null(r, "%s", kiln_status_message(st));
  enum { N = KR_QUEUE_MAX + 40 };
  double t0 = rt_now_ms();
  for (int i = 0; i < N; i++) kr_remote_publish(r, (kc_key){.lo = (uint64_t)i, .hi = 7}, "x", 1);
  double ms = rt_now_ms() - t0;
  kr_stats s;
  kr_remote_stats(r, &s);
  cr_expect_lt(ms, 300, "publishing waited %.0f ms for a slow server", ms);
  cr_expect_geq(s.dropped, N - KR_QUEUE_MAX - 1, "%llu dropped",
                (unsigned long long)s.dropped);
  cr_expect_leq(s.queued, KR_QUEUE_MAX);
  uint64_t seen = s.dropped + (uint64_t)s.queued + s.published;
  cr_expect(seen == N || seen == N - 1, "%llu of %d accounted for (one may be in flight)",
            (unsigned long long)seen, N);
  kr_remote_free(r); /* drains 2 s, then drops what is left */
  kiln_status_free(st);
  delay_proxy_stop(p);
}

/* ---- device code (simt-emu) ---- */

#include "src/device.h"

Test(cache_remote, device_code_comes_from_the_server_too, .init = setup, .fini = teardown) {
  char url[96];
  redis_srv_url(&srv, url, sizeof url);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(GRAPH2, strlen(GRAPH2), "g.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device *dev = kiln_device_open("simt-emu", st);
  cr_assert_not_null(dev, "%s", kiln_status_message(st));
  int hits[2], misses[2];
  for (int round = 0; round < 2; round++) {
    kiln_context *ctx = remote_ctx(url, 0);
    kiln_device_model *m = kiln_device_model_compile_with(ctx, dev, g, st);
    cr_assert_not_null(m, "%s", kiln_status_message(st));
    rt_device_model_cache_counts(m, &hits[round], &misses[round]);
    if (round == 1) cr_expect_eq(remote_counts(ctx).remote_hits, hits[1]);
    kiln_device_model_free(m);
    kiln_context_free(ctx); /* publishes what it compiled */
    remote_remove_disk();
    remote_fresh_disk(); /* the next round starts with an empty local cache */
  }
  cr_expect_eq(hits[0], 0);
  cr_expect_gt(misses[0], 0);
  cr_expect_eq(hits[1], misses[0], "%d of %d kernels from the server", hits[1], misses[0]);
  cr_expect_eq(misses[1], 0);
  kiln_device_close(dev);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* ---- the CLI ---- */

#include "support/shell.h"

Test(cache_remote, cli_warm_remote_then_a_fresh_process_compiles_nothing, .init = setup,
     .fini = teardown) {
  char url[96], path[128], cmd[1024], *out = NULL;
  redis_srv_url(&srv, url, sizeof url);
  snprintf(path, sizeof path, "%s/g.mlir", remote_disk);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(GRAPH, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "KILN_CACHE_REMOTE_NS=test '%s' cache warm '%s' --remote=%s 2>&1",
           KILN_CLI, path, url);
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  cr_expect(strstr(out, "2 compiled and stored"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "KILN_CACHE_REMOTE_NS=test '%s' cache ls --remote=%s 2>&1",
           KILN_CLI, url);
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  cr_expect(strstr(out, "2 entries"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "KILN_CACHE_REMOTE_NS=test '%s' cache warm '%s' --remote=%s 2>&1",
           KILN_CLI, path, url);
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  cr_expect(strstr(out, "0 compiled and stored, 2 already present"), "%s", out);
  free(out);
  kiln_context *ctx = remote_ctx(url, 0); /* empty disk: everything from the server */
  remote_compile_and_run(ctx, GRAPH, 16, NULL);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.compiles, 0);
  cr_expect_eq(c.remote_hits, NKERNELS);
  kiln_context_free(ctx);
  /* pull into another empty directory; push back is then a no-op */
  snprintf(cmd, sizeof cmd,
           "KILN_CACHE_DIR='%s/pulled' KILN_CACHE_REMOTE_NS=test KILN_CACHE_REMOTE=%s '%s' cache "
           "pull 2>&1 && KILN_CACHE_DIR='%s/pulled' KILN_CACHE_REMOTE_NS=test '%s' cache push "
           "--remote=%s 2>&1",
           remote_disk, url, KILN_CLI, remote_disk, KILN_CLI, url);
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  cr_expect(strstr(out, "2 entries pulled"), "%s", out);
  cr_expect(strstr(out, "0 entries pushed (0 B), 2 already there"), "%s", out);
  free(out);
}

Test(cache_remote, cli_names_a_missing_server_and_a_bad_tls_url) {
  char cmd[512], *out = NULL;
  snprintf(cmd, sizeof cmd, "env -u KILN_CACHE_REMOTE '%s' cache ls --remote 2>&1", KILN_CLI);
  cr_expect_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_expect(strstr(out, "KILN_CACHE_REMOTE"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' cache stats --remote='rediss://h?key=/k.pem' 2>&1", KILN_CLI);
  cr_expect_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_expect(strstr(out, "cert= and key="), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' cache ls --remote=redis://127.0.0.1:%d/0 2>&1", KILN_CLI,
           redis_free_port());
  cr_expect_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_expect(strstr(out, "refused"), "%s", out);
  free(out);
}
