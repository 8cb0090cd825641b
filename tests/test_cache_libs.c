/* test_cache_libs.c - compiled kernel libraries in the disk cache
 * (DIR/libs/<32 hex>.bc and .fns, written by kernel_cc.c / kernel_lib.c)
 * share the cache's size bound: the scan counts their bytes (stats: bytes,
 * not entries), prune and eviction remove them least recently used first
 * beside the kernel entries, clear removes them, list and verify show only
 * kernel entries, stale temporary files go and foreign files stay. Then a
 * real C library whose cached files were pruned compiles again and runs. */
#define _GNU_SOURCE /* nftw */
#include "cache_disk_util.h"

#include <dirent.h>

TestSuite(cache_libs, .init = setup, .fini = teardown, .timeout = 120);

static const char *HEX_A = "0123456789abcdef0123456789abcdef";
static const char *HEX_B = "fedcba9876543210fedcba9876543210";

/* DIR/libs/NAME with n bytes, last used `age` seconds ago. */
static void lib_file(const char *dir, const char *name, size_t n, int age) {
  char p[600];
  mkdir(dir, 0755);
  snprintf(p, sizeof p, "%s/libs", dir);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/libs/%s", dir, name);
  FILE *f = fopen(p, "wb");
  cr_assert(f, "%s", p);
  for (size_t i = 0; i < n; i++) fputc('b', f);
  fclose(f);
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= age;
  t[1] = t[0];
  cr_assert_eq(utimensat(AT_FDCWD, p, t, 0), 0);
}

static bool lib_exists(const char *dir, const char *name) {
  char p[600];
  snprintf(p, sizeof p, "%s/libs/%s", dir, name);
  return exists(p);
}

static int count_visit(const kc_disk_entry *e, void *user) {
  (void)e;
  (*(int *)user)++;
  return 0;
}

/* Two libraries (old and older) beside one fresh kernel entry. */
static kc_disk *populate(const char *dir) {
  char name[64];
  lib_file(dir, (snprintf(name, sizeof name, "%s.bc", HEX_A), name), 4000, 7200);
  lib_file(dir, (snprintf(name, sizeof name, "%s.fns", HEX_A), name), 100, 7200);
  lib_file(dir, (snprintf(name, sizeof name, "%s.bc", HEX_B), name), 3000, 3600);
  lib_file(dir, "README", 10, 9000);                     /* foreign: never touched */
  lib_file(dir, "x.bc.tmp-123", 10, 2 * 3600);           /* a stale temporary file */
  kc_disk *d = open_store(dir, 0);
  put_ok(d, 1, 500);
  return d;
}

Test(cache_libs, libraries_count_toward_the_bound_but_are_not_entries) {
  const char *dir = tmp_path("c");
  kc_disk *d = populate(dir);
  char *entry = kc_disk_entry_path(d, key_of(1));
  uint64_t entry_bytes = (uint64_t)file_size(entry);
  kc_disk_stats s = stats_of(d);
  cr_assert_eq(s.entries, 1, "libraries are not kernel entries");
  cr_assert_eq(s.bytes, entry_bytes + 4000 + 100 + 3000, "but their bytes count");
  cr_assert(!lib_exists(dir, "x.bc.tmp-123"), "a stale temporary file goes");
  cr_assert(lib_exists(dir, "README"));
  int n = 0;
  cr_assert_eq(kc_disk_list(d, true, count_visit, &n, NULL), 0);
  cr_assert_eq(n, 1, "list shows kernel entries only");
  uint64_t bad = 9;
  cr_assert_eq(kc_disk_verify(d, &bad, NULL), 0);
  cr_assert_eq(bad, 0, "library files are not checked as entries");
  /* prune to a bound that keeps the entry and the newer library: the
   * oldest library (both its files) goes first */
  uint64_t removed = 9, removed_bytes = 0;
  cr_assert_eq(kc_disk_prune(d, entry_bytes + 3000, &removed, &removed_bytes, NULL), 0);
  cr_assert_eq(removed, 0, "no kernel entry was removed");
  cr_assert_eq(removed_bytes, 4100);
  char name[64];
  cr_assert(!lib_exists(dir, (snprintf(name, sizeof name, "%s.bc", HEX_A), name)));
  cr_assert(!lib_exists(dir, (snprintf(name, sizeof name, "%s.fns", HEX_A), name)));
  cr_assert(lib_exists(dir, (snprintf(name, sizeof name, "%s.bc", HEX_B), name)));
  cr_assert(exists(entry));
  /* clear takes everything kiln wrote */
  cr_assert_eq(kc_disk_clear(d, &removed, NULL), 0);
  cr_assert_eq(removed, 1, "one kernel entry");
  cr_assert(!lib_exists(dir, (snprintf(name, sizeof name, "%s.bc", HEX_B), name)));
  cr_assert(lib_exists(dir, "README"), "foreign files stay");
  free(entry);
  kc_disk_close(d);
}

Test(cache_libs, the_size_bound_evicts_old_libraries) {
  const char *dir = tmp_path("c");
  kc_disk *d = populate(dir);
  kc_disk_close(d);
  d = open_store(dir, 6000); /* below the libraries' 7100 bytes */
  put_ok(d, 2, 500);         /* a put learns the total and evicts to 90% */
  kc_disk_stats s = stats_of(d);
  cr_assert(s.bytes <= 5400, "%llu bytes", (unsigned long long)s.bytes);
  cr_assert_eq(s.entries, 2, "the fresh entries stay");
  char name[64];
  cr_assert(!lib_exists(dir, (snprintf(name, sizeof name, "%s.bc", HEX_A), name)));
  kc_disk_close(d);
}

/* A C library whose cached bitcode and function list were pruned compiles
 * again (a miss, not an error) and runs. */
static const char *LIB = "#include <kiln/kernel.h>\n"
                         "KILN_KERNEL(twice, 1, 1)\n"
                         "int32_t twice(const kiln_kernel_args *a) {\n"
                         "  const float *x = a->inputs[0].data; float *y = a->outputs[0].data;\n"
                         "  for (int64_t i = 0; i < a->inputs[0].dims[0]; i++) y[i] = 2 * x[i];\n"
                         "  return 0;\n}\n";
static const char *GRAPH =
    "mo.graph @g(%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>) {\n"
    "  %y = mo.custom(%x) {symbol = \"twice\"} : (!mo.tensor<[3], f32>) -> !mo.tensor<[3], f32>\n"
    "  mo.output %y : !mo.tensor<[3], f32>\n}\n";

static void run_twice(const char *src) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_add_kernel_library(ctx, src, st), 0, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(GRAPH, strlen(GRAPH), "g.mlir", st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t shape[1] = {3};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, shape, st), *y = NULL;
  float *xp = kiln_tensor_data(x);
  for (int i = 0; i < 3; i++) xp[i] = (float)i + 0.5f;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  const float *yp = kiln_tensor_data(y);
  for (int i = 0; i < 3; i++) cr_assert_eq(yp[i], 2 * xp[i]);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* LIB written to src (room for 600) in the test's directory. */
static void write_lib(char *src) {
  snprintf(src, 600, "%s/twice.c", g_tmp);
  FILE *f = fopen(src, "w");
  cr_assert(f);
  fputs(LIB, f);
  cr_assert_eq(fclose(f), 0);
}

Test(cache_libs, a_pruned_library_compiles_again) {
  const char *dir = tmp_path("c");
  mkdir(dir, 0755);
  setenv("KILN_CACHE_DIR", dir, 1);
  setenv("KILN_CACHE", "on", 1);
  char src[600];
  write_lib(src);
  run_twice(src);
  char lib[600];
  snprintf(lib, sizeof lib, "%s/libs", dir);
  kc_disk *d = open_store(dir, 0);
  int n = 0;
  cr_assert_eq(kc_disk_list(d, false, count_visit, &n, NULL), 0);
  cr_assert(n >= 1, "the kernel is cached");
  DIR *ld = opendir(lib);
  cr_assert(ld, "the library was compiled into %s", lib);
  int nbc = 0;
  for (struct dirent *e; (e = readdir(ld));) nbc += strstr(e->d_name, ".bc") != NULL;
  closedir(ld);
  cr_assert(nbc >= 1, "no compiled library in %s", lib);
  uint64_t removed = 0;
  cr_assert_eq(kc_disk_clear(d, &removed, NULL), 0);
  cr_assert_eq(stats_of(d).bytes, 0, "clear left %llu bytes",
               (unsigned long long)stats_of(d).bytes);
  kc_disk_close(d);
  run_twice(src); /* compiled again from the source */
}

/* The .bc files in dir/libs. */
static int bitcode_files(const char *dir) {
  char lib[600];
  snprintf(lib, sizeof lib, "%s/libs", dir);
  DIR *ld = opendir(lib);
  int n = 0;
  for (struct dirent *e; ld && (e = readdir(ld));) n += strstr(e->d_name, ".bc") != NULL;
  if (ld) closedir(ld);
  return n;
}

/* A deploy cache given as a read-only seed layer (KILN_CACHE_SEED_DIR) serves
 * compiled C libraries too: a context whose own cache is empty finds the
 * library's bitcode and function list in the seed, so nothing is compiled
 * into its own directory. */
Test(cache_libs, a_seed_layer_serves_compiled_libraries) {
  const char *seed = tmp_path("seed"), *own = tmp_path("own");
  mkdir(seed, 0755);
  mkdir(own, 0755);
  setenv("KILN_CACHE", "on", 1);
  setenv("KILN_CACHE_DIR", seed, 1);
  char src[600];
  write_lib(src);
  run_twice(src); /* warms the seed */
  cr_assert_geq(bitcode_files(seed), 1, "the library was compiled into the seed");
  setenv("KILN_CACHE_DIR", own, 1);
  setenv("KILN_CACHE_SEED_DIR", seed, 1);
  run_twice(src);
  unsetenv("KILN_CACHE_SEED_DIR");
  cr_assert_eq(bitcode_files(own), 0, "the library compiled again instead of coming from "
                                      "the seed layer");
  run_twice(src); /* without the seed: compiled into the context's own directory */
  cr_assert_geq(bitcode_files(own), 1);
}
