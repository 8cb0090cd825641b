/* remote_run.c - remote_run.h: helpers of the remote cache tests. */
#include "remote_run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cache_remote.h"

char remote_disk[64];

void remote_fresh_disk(void) {
  strcpy(remote_disk, "/tmp/kiln-remote-disk-XXXXXX");
  cr_assert_not_null(mkdtemp(remote_disk));
  setenv("KILN_CACHE_DIR", remote_disk, 1);
  unsetenv("KILN_CACHE");
  setenv("KILN_QUIET", "1", 1);
}

void remote_remove_disk(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", remote_disk);
  cr_assert_eq(system(cmd), 0);
}

run_counts remote_counts(kiln_context *ctx) {
  return (run_counts){kiln_context_counter(ctx, KILN_COUNTER_COMPILES),
                      kiln_context_counter(ctx, KILN_COUNTER_DISK_HITS),
                      kiln_context_counter(ctx, KILN_COUNTER_REMOTE_HITS),
                      kiln_context_counter(ctx, KILN_COUNTER_REMOTE_MISSES),
                      kiln_context_counter(ctx, KILN_COUNTER_REMOTE_ERRORS),
                      kiln_context_counter(ctx, KILN_COUNTER_REMOTE_PUBLISHED)};
}

kiln_context *remote_ctx(const char *url, int timeout_ms) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st), 0);
  cr_assert_eq(kiln_context_set_tier_up(ctx, 0, st), 0);
  cr_assert_eq(kiln_context_set_remote_cache(ctx, url, "test", timeout_ms, st), 0, "%s",
               kiln_status_message(st));
  kiln_status_free(st);
  return ctx;
}

void remote_compile_and_run(kiln_context *ctx, const char *text, int in_cols, float *first) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "g.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float x[3 * 16], w[16 * 8], out[3 * 8];
  for (int i = 0; i < 3 * 16; i++) x[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < 16 * 8; i++) w[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
  kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 2, (int64_t[]){3, in_cols}, x, st),
                        kiln_tensor_borrow(KILN_FLOAT32, 2, (int64_t[]){16, 8}, w, st)};
  kiln_tensor *o = kiln_tensor_borrow(KILN_FLOAT32, 2, (int64_t[]){3, 8}, out, st);
  int nin = in_cols == 16 ? 2 : 1;
  cr_assert_eq(kiln_model_execute(m, in, nin, &o, 1, st), 0, "%s", kiln_status_message(st));
  if (first) *first = out[0];
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_tensor_free(o);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_status_free(st);
}

size_t remote_keys(const char *url) {
  kiln_status *st = kiln_status_new();
  kr_options o = {.ns = "test", .timeout_ms = 1000};
  kr_remote *r = kr_remote_new(url, &o, st);
  cr_assert_not_null(r, "%s", kiln_status_message(st));
  kr_entry_info *e = NULL;
  size_t n = 0;
  cr_assert_eq(kr_remote_list(r, &e, &n, st), 0, "%s", kiln_status_message(st));
  free(e);
  kr_remote_free(r);
  kiln_status_free(st);
  return n;
}

void remote_publish_one(const char *url, int timeout_ms) {
  kiln_context *ctx = remote_ctx(url, timeout_ms);
  remote_compile_and_run(ctx, GRAPH3, 8, NULL);
  cr_assert_eq(kiln_context_flush_remote_cache(ctx, 10000, NULL), 0);
  run_counts c = remote_counts(ctx);
  cr_expect_eq(c.published, 1);
  cr_expect_eq(c.remote_errors, 0);
  kiln_context_free(ctx);
  cr_expect_eq(remote_keys(url), 1);
}
