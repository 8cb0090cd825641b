/* test_spec_cache.c - the disk cache of a context set through the API
 * (kiln_context_set_cache_dir: a directory of the test's own, its bound,
 * turning it off, errors that keep the previous store), the context's
 * kernel counters (a second context loads from disk instead of compiling),
 * and the .npy reader's refusal of a NUL byte inside the header's 'descr'. */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/kiln.h"
#include "src/io.h"
#include "src/rt.h"

#define G                                                                                     \
  "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"             \
  "  %y = mo.tanh(%x) : !mo.tensor<[n, 8], f32>\n"                                           \
  "  %z = mo.relu(%y) : !mo.tensor<[n, 8], f32>\n"                                           \
  "  mo.output %z : !mo.tensor<[n, 8], f32>\n"                                               \
  "}\n" /* one kernel: tanh and relu fuse */

static char g_dir[64];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static void setup(void) {
  strcpy(g_dir, "/tmp/kiln-spec-cache-XXXXXX");
  cr_assert(mkdtemp(g_dir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void) { nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* A context with the policy off (counts stay those of the generic
 * kernels), compile G and run it once. */
static kiln_context *ctx_with(const char *dir, kiln_status *st) {
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st), 0);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, dir, 0, st), 0, "%s", kiln_status_message(st));
  return ctx;
}

static void compile_run(kiln_context *ctx, kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(G, strlen(G), "g", st);
  cr_assert_not_null(g);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  kiln_tensor *in = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){3, 8}, st), *out[1] = {0};
  cr_assert_eq(kiln_model_execute(m, &in, 1, out, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor_free(out[0]);
  kiln_tensor_free(in);
  kiln_model_free(m);
  kiln_graph_free(g);
}

Test(spec_cache, set_cache_dir_stores_and_a_second_context_loads, .init = setup,
     .fini = teardown) {
  char dir[128];
  snprintf(dir, sizeof dir, "%s/c", g_dir); /* created by the call */
  kiln_status *st = kiln_status_new();
  kiln_context *a = ctx_with(dir, st);
  cr_assert_str_eq(kiln_context_cache_dir(a), dir);
  compile_run(a, st);
  cr_assert_eq(kiln_context_counter(a, KILN_COUNTER_COMPILES), 1);
  cr_assert_eq(kiln_context_counter(a, KILN_COUNTER_DISK_HITS), 0);
  kiln_context_free(a);
  kiln_context *b = ctx_with(dir, st);
  compile_run(b, st);
  cr_assert_eq(kiln_context_counter(b, KILN_COUNTER_COMPILES), 0);
  cr_assert_eq(kiln_context_counter(b, KILN_COUNTER_DISK_HITS), 1);
  cr_assert_geq(kiln_context_counter(b, KILN_COUNTER_COMPILE_MS), 0);
  kiln_context_free(b);
  kiln_status_free(st);
}

Test(spec_cache, null_turns_it_off_and_errors_keep_the_previous_store, .init = setup,
     .fini = teardown) {
  char dir[128], file[128];
  snprintf(dir, sizeof dir, "%s/c", g_dir);
  snprintf(file, sizeof file, "%s/f", g_dir);
  FILE *fp = fopen(file, "w");
  cr_assert(fp);
  fclose(fp);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = ctx_with(dir, st);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, file, 0, st), -1, "a regular file");
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  cr_assert_str_eq(kiln_context_cache_dir(ctx), dir, "the previous store stays");
  cr_assert_eq(kiln_context_set_cache_dir(ctx, "", 0, st), -1);
  cr_assert_eq(kiln_context_set_cache_dir(NULL, dir, 0, st), -1);
  cr_assert_eq(kiln_context_set_cache_dir(ctx, NULL, 0, st), 0);
  cr_assert_null(kiln_context_cache_dir(ctx));
  compile_run(ctx, st); /* compiles, stores nothing */
  cr_assert_eq(kiln_context_counter(ctx, KILN_COUNTER_COMPILES), 1);
  kiln_context_free(ctx);
  kiln_context *b = ctx_with(dir, st); /* the directory holds nothing from the second run */
  compile_run(b, st);
  cr_assert_eq(kiln_context_counter(b, KILN_COUNTER_COMPILES), 1);
  kiln_context_free(b);
  cr_assert_null(kiln_context_cache_dir(NULL));
  kiln_status_free(st);
}

/* .npy v1.0 bytes: header dict text h padded to 128 bytes in all, then ndata zero bytes. */
static size_t npy_bytes(char *buf, const char *h, size_t hlen, size_t ndata) {
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  size_t total = 128;
  buf[8] = (char)(total - 10);
  buf[9] = 0;
  memset(buf + 10, ' ', total - 10);
  memcpy(buf + 10, h, hlen);
  buf[total - 1] = '\n';
  memset(buf + total, 0, ndata);
  return total + ndata;
}

Test(spec_cache, npy_descr_with_a_nul_byte_is_rejected) {
  char buf[256];
  static const char good[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  size_t n = npy_bytes(buf, good, sizeof good - 1, 8);
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = rt_npy_decode(buf, n, "good.npy", st);
  cr_assert_not_null(t, "%s", kiln_status_message(st));
  kiln_tensor_free(t);
  static const char bad[] = "{'descr': '<f4\0xx', 'fortran_order': False, 'shape': (2,), }";
  n = npy_bytes(buf, bad, sizeof bad - 1, 8);
  cr_assert_null(rt_npy_decode(buf, n, "bad.npy", st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  cr_assert_not_null(strstr(kiln_status_message(st), "NUL"), "%s", kiln_status_message(st));
  kiln_status_free(st);
}
