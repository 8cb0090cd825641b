/* test_cache_persist.c - the disk cache under a context's memory cache: a
 * second context (as a second process would) loads every kernel from disk
 * and compiles none, with bit-identical results; corrupted entries are
 * misses that are recompiled and rewritten; KILN_CACHE=off writes nothing.
 * Each test uses its own KILN_CACHE_DIR (mkdtemp). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/kiln.h"
#include "src/cache_mem.h"
#include "src/rt.h"

#define GRAPH                                                                                  \
  "mo.graph @g<n>(%x: !mo.tensor<[n, 16], f32>, %w: !mo.tensor<[16, 8], f32>) -> "            \
  "(!mo.tensor<[n, 8], f32>) {\n"                                                              \
  "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 16], f32>, !mo.tensor<[16, 8], f32>) -> "       \
  "!mo.tensor<[n, 8], f32>\n"                                                                  \
  "  %t = mo.tanh(%m) : !mo.tensor<[n, 8], f32>\n"                                             \
  "  %s = mo.softmax(%t) : !mo.tensor<[n, 8], f32>\n"                                          \
  "  mo.output %s : !mo.tensor<[n, 8], f32>\n"                                                 \
  "}\n"
#define NKERNELS 2 /* matmul; tanh + softmax fuse (ir_graph_fuse, a softmax prologue) */

static char dir[64];

static void use_fresh_dir(void) {
  strcpy(dir, "/tmp/kiln-persist-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  setenv("KILN_CACHE_DIR", dir, 1);
  unsetenv("KILN_CACHE");
}

static void remove_dir(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* Compile GRAPH in a new context, run it on fixed data into out[3 * 8], and
 * return the context's cache counters. */
static rt_cache_stats compile_and_run(float *out) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  /* generic kernels only: a background specialization would add entries */
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st), 0);
  kiln_graph *g = kiln_graph_parse(GRAPH, strlen(GRAPH), "g.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float x[3 * 16], w[16 * 8];
  for (int i = 0; i < 3 * 16; i++) x[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < 16 * 8; i++) w[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
  kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 2, (int64_t[]){3, 16}, x, st),
                        kiln_tensor_borrow(KILN_FLOAT32, 2, (int64_t[]){16, 8}, w, st)};
  kiln_tensor *o = kiln_tensor_borrow(KILN_FLOAT32, 2, (int64_t[]){3, 8}, out, st);
  cr_assert_eq(kiln_model_execute(m, in, 2, &o, 1, st), 0, "%s", kiln_status_message(st));
  rt_cache_stats cs;
  rt_cache_mem_stats(rt_context_cache(ctx), &cs);
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_tensor_free(o);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return cs;
}

/* Call fn(path) for every cache entry file; returns how many there were. */
static int each_entry(void (*fn)(const char *path)) {
  int n = 0;
  DIR *top = opendir(dir);
  cr_assert_not_null(top);
  for (struct dirent *s; (s = readdir(top));) {
    if (s->d_name[0] == '.') continue;
    char sub[512];
    snprintf(sub, sizeof sub, "%s/%s", dir, s->d_name);
    DIR *d = opendir(sub);
    if (!d) continue;
    for (struct dirent *e; (e = readdir(d));) {
      size_t len = strlen(e->d_name);
      if (len < 4 || strcmp(e->d_name + len - 3, ".kc") != 0) continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
      if (fn) fn(path);
      n++;
    }
    closedir(d);
  }
  closedir(top);
  return n;
}

/* Flip one byte in the middle of the payload (the last half of the file). */
static void corrupt(const char *path) {
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, size - size / 4, SEEK_SET);
  int c = fgetc(f);
  fseek(f, size - size / 4, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
}

Test(cache_persist, second_context_loads_every_kernel_from_disk) {
  use_fresh_dir();
  float a[24], b[24];
  rt_cache_stats first = compile_and_run(a);
  cr_assert_eq(first.compiles, NKERNELS);
  cr_assert_eq(first.backing_hits, 0);
  cr_assert_eq(each_entry(NULL), NKERNELS, "one entry file per kernel");
  rt_cache_stats second = compile_and_run(b);
  cr_assert_eq(second.compiles, 0, "the second context compiled %llu kernels",
               (unsigned long long)second.compiles);
  cr_assert_eq(second.backing_hits, NKERNELS);
  cr_assert_eq(memcmp(a, b, sizeof a), 0, "results from cached objects differ");
  remove_dir();
}

Test(cache_persist, corrupted_entries_are_recompiled_and_rewritten) {
  use_fresh_dir();
  float a[24], b[24], c[24];
  compile_and_run(a);
  cr_assert_eq(each_entry(corrupt), NKERNELS);
  rt_cache_stats again = compile_and_run(b);
  cr_assert_eq(again.backing_hits, 0, "a corrupted entry was used");
  cr_assert_eq(again.compiles, NKERNELS);
  cr_assert_eq(memcmp(a, b, sizeof a), 0);
  rt_cache_stats third = compile_and_run(c); /* the rewritten entries are good */
  cr_assert_eq(third.backing_hits, NKERNELS);
  cr_assert_eq(memcmp(a, c, sizeof a), 0);
  remove_dir();
}

Test(cache_persist, kiln_cache_off_writes_nothing) {
  use_fresh_dir();
  setenv("KILN_CACHE", "off", 1);
  float a[24];
  rt_cache_stats s = compile_and_run(a);
  cr_assert_eq(s.compiles, NKERNELS);
  cr_assert_eq(each_entry(NULL), 0);
  unsetenv("KILN_CACHE");
  remove_dir();
}

Test(cache_persist, unusable_directory_still_compiles) {
  use_fresh_dir();
  char file[128];
  snprintf(file, sizeof file, "%s/not-a-dir", dir);
  FILE *f = fopen(file, "w");
  cr_assert_not_null(f);
  fclose(f);
  setenv("KILN_CACHE_DIR", file, 1); /* a regular file: the store cannot open */
  float a[24];
  rt_cache_stats s = compile_and_run(a);
  cr_assert_eq(s.compiles, NKERNELS);
  remove_dir();
}
