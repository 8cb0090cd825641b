/* test_cli_cache.c - `kiln cache` (src/cli/cache.c) run as a user would:
 * each test gets its own mkdtemp cache directory, and every command runs
 * with KILN_CACHE unset (ctest sets it to off) and KILN_CACHE_DIR set to
 * that directory. Checks exit codes and the words users rely on: warm then
 * ls / stats / explain, prune, clear, export + import (then `kiln run
 * --stats` loads every kernel from disk), corrupt bundles and entries, bad
 * usage, import of an entry whose key is not the hash of its components,
 * warm with --dim (specialized kernels) and --target, warm / explain of a
 * graph with a custom op (--kernels). */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/cache_disk.h"
#include "tests/support/shell.h"

#define EX(name) KILN_SHARED_DIR "/ir-examples/" name

static char g_dir[64];  /* the test's directory: cache in g_dir/c, files beside it */
static char g_cache[96];

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static void setup(void) {
  strcpy(g_dir, "/tmp/kiln-cli-cache-XXXXXX");
  cr_assert(mkdtemp(g_dir), "mkdtemp: %s", strerror(errno));
  snprintf(g_cache, sizeof g_cache, "%s/c", g_dir);
}

static void teardown(void) { nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(cli_cache, .init = setup, .fini = teardown);

/* Run `kiln ARGS` with the test's cache; exit code, output (stdout and
 * stderr together, malloc'd) in *out. */
static int kiln(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int kiln(char **out, const char *fmt, ...) {
  char args[4096], cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "env -u KILN_CACHE KILN_CACHE_DIR='%s' '%s' %s 2>&1", g_cache,
           KILN_CLI, args);
  return shell_capture(cmd, out);
}

#define HAS(out, s) cr_assert(strstr(out, s), "output lacks '%s':\n%s", s, out)
#define LACKS(out, s) cr_assert(!strstr(out, s), "output has '%s':\n%s", s, out)

static int count_of(const char *out, const char *s) {
  int n = 0;
  for (const char *p = out; (p = strstr(p, s)); p += strlen(s)) n++;
  return n;
}

static void warm(const char *graph) {
  char *out;
  cr_assert_eq(kiln(&out, "cache warm '%s'", graph), 0, "%s", out);
  free(out);
}

/* Entries in the cache directory (a store opened on it). */
static uint64_t entries(void) {
  kc_disk *d = kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL);
  cr_assert(d);
  kc_disk_stats s;
  cr_assert_eq(kc_disk_stats_get(d, &s, NULL), 0);
  kc_disk_close(d);
  return s.entries;
}

Test(cli_cache, warm_then_ls_lists_the_kernels) {
  char *out;
  cr_assert_eq(kiln(&out, "cache warm '%s'", EX("mlp.mlir")), 0, "%s", out);
  HAS(out, "2 compiled and stored, 0 already present");
  free(out);
  cr_assert_eq(kiln(&out, "cache warm '%s'", EX("mlp.mlir")), 0, "%s", out);
  HAS(out, "0 compiled and stored, 2 already present");
  free(out);
  cr_assert_eq(kiln(&out, "cache ls"), 0, "%s", out);
  /* fused: matmul + bias + relu, then matmul + bias */
  HAS(out, "mo.matmul+mo.add+mo.relu ([d0, 784]f32, [784, 512]f32, [512]f32) -> ([d0, 512]f32)");
  HAS(out, "mo.matmul+mo.add ([d0, 512]f32, [512, 10]f32, [10]f32) -> ([d0, 10]f32)");
  HAS(out, "2 entries");
  free(out);
}

Test(cli_cache, ls_of_an_empty_cache) {
  char *out;
  cr_assert_eq(kiln(&out, "cache ls"), 0, "%s", out);
  HAS(out, "no entries in");
  free(out);
}

Test(cli_cache, stats_counts_entries_and_says_on_or_off) {
  warm(EX("relu.mlir"));
  char *out;
  cr_assert_eq(kiln(&out, "cache stats"), 0, "%s", out);
  HAS(out, "entries:   1\n");
  HAS(out, g_cache);
  HAS(out, "runtime:   enabled");
  HAS(out, "bound:     1073741824");
  free(out);
  cr_assert_eq(kiln(&out, "cache stats --dir '%s' && KILN_CACHE=off KILN_CACHE_MAX_BYTES=64M '%s' "
                          "cache stats --dir '%s'",
                    g_cache, KILN_CLI, g_cache),
               0, "%s", out);
  HAS(out, "runtime:   off (KILN_CACHE=off)");
  HAS(out, "bound:     67108864 (64.0 MiB, KILN_CACHE_MAX_BYTES)");
  free(out);
}

Test(cli_cache, explain_misses_before_warm_and_hits_after) {
  char *out;
  /* the MLP's kernels are GEMMs: a bound batch keeps their generic kernels */
  cr_assert_eq(kiln(&out, "cache explain '%s' --dim batch=4", EX("mlp.mlir")), 0, "%s", out);
  cr_assert_eq(count_of(out, "miss: the cache is empty"), 2, "%s", out);
  HAS(out, "2 generic and 0 shape-specialized kernels");
  HAS(out, "node 4 (mo.matmul+mo.add+mo.relu -> %2)");
  HAS(out, "0 hits, 2 misses");
  free(out);
  warm(EX("relu.mlir"));
  /* the MLP's kernels are other than relu.mlir's: nearest differs in kernel_ir */
  cr_assert_eq(kiln(&out, "cache explain '%s'", EX("mlp.mlir")), 0, "%s", out);
  HAS(out, "miss: no entry for this kernel (nearest ");
  HAS(out, "differs in kernel_ir only)");
  free(out);
  warm(EX("mlp.mlir"));
  cr_assert_eq(kiln(&out, "cache explain '%s'", EX("mlp.mlir")), 0, "%s", out);
  cr_assert_eq(count_of(out, " hit\n"), 2, "%s", out);
  HAS(out, "2 hits, 0 misses");
  free(out);
}

/* Re-store every entry with one component changed (as if built on another
 * CPU), under another key, and remove the original. */
typedef struct rekey {
  kc_disk *d;
  int n;
} rekey;

static int rekey_visit(const kc_disk_entry *e, void *user) {
  rekey *r = user;
  kc_component c[16];
  cr_assert(e->ncomponents <= 16);
  for (int i = 0; i < e->ncomponents; i++) {
    c[i] = e->components[i];
    if (strcmp(c[i].name, "cpu") == 0) c[i].value = "othercpu";
  }
  kc_key k = e->key;
  k.lo ^= 1;
  cr_assert_eq(kc_disk_put(r->d, k, c, e->ncomponents, "x", 1, NULL), 0);
  cr_assert_eq(unlink(e->path), 0);
  r->n++;
  return 0;
}

Test(cli_cache, explain_names_the_component_that_differs) {
  warm(EX("relu.mlir"));
  rekey r = {kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL), 0};
  cr_assert(r.d);
  cr_assert_eq(kc_disk_list(r.d, true, rekey_visit, &r, NULL), 0);
  cr_assert_eq(r.n, 1);
  kc_disk_close(r.d);
  char *out;
  cr_assert_eq(kiln(&out, "cache explain '%s'", EX("relu.mlir")), 0, "%s", out);
  HAS(out, "miss: same kernel, different cpu (");
  HAS(out, "vs othercpu");
  free(out);
}

Test(cli_cache, prune_to_zero_removes_everything) {
  warm(EX("mlp.mlir"));
  char *out;
  cr_assert_eq(kiln(&out, "cache prune"), 0, "%s", out); /* within the 1 GiB bound */
  HAS(out, "removed 0 entries");
  free(out);
  cr_assert_eq(entries(), 2);
  cr_assert_eq(kiln(&out, "cache prune --max-bytes 0"), 0, "%s", out);
  HAS(out, "removed 2 entries");
  HAS(out, "now holds 0 entries");
  free(out);
  cr_assert_eq(entries(), 0);
  cr_assert_eq(kiln(&out, "cache prune --max-bytes 12Q"), 2, "%s", out);
  HAS(out, "--max-bytes expects a size");
  free(out);
}

/* Entry sizes in a listing (least recently used first). */
typedef struct sizes {
  uint64_t total, last;
  kc_key last_key;
} sizes;

static int size_visit(const kc_disk_entry *e, void *user) {
  sizes *z = user;
  z->total += e->file_bytes;
  z->last = e->file_bytes;
  z->last_key = e->key;
  return 0;
}

Test(cli_cache, prune_keeps_the_most_recently_used) {
  warm(EX("mlp.mlir"));
  char *out;
  cr_assert_eq(kiln(&out, "cache prune --max-bytes 1K"), 0, "%s", out);
  free(out);
  cr_assert_eq(entries(), 0); /* every entry is over 1 KiB */
  warm(EX("mlp.mlir"));
  /* a bound that fits the most recently used entry only: prune evicts to
   * 90% of the bound, least recently used first */
  sizes z = {0};
  kc_disk *d = kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL);
  cr_assert(d);
  cr_assert_eq(kc_disk_list(d, false, size_visit, &z, NULL), 0);
  kc_disk_close(d);
  uint64_t bound = z.last * 10 / 9 + 64;
  cr_assert(bound < z.total, "entries of %llu (most recent) and %llu bytes in all: no bound "
            "keeps just one", (unsigned long long)z.last, (unsigned long long)z.total);
  cr_assert_eq(kiln(&out, "cache prune --max-bytes %llu", (unsigned long long)bound), 0, "%s",
               out);
  free(out);
  uint64_t n = entries();
  cr_assert_eq(n, 1, "%llu entries", (unsigned long long)n);
  d = kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL);
  sizes left = {0};
  cr_assert_eq(kc_disk_list(d, false, size_visit, &left, NULL), 0);
  kc_disk_close(d);
  cr_assert(left.last_key.lo == z.last_key.lo && left.last_key.hi == z.last_key.hi,
            "the entry kept is not the most recently used one");
}

Test(cli_cache, clear_removes_every_entry) {
  warm(EX("mlp.mlir"));
  char *out;
  cr_assert_eq(kiln(&out, "cache clear"), 0, "%s", out);
  HAS(out, "removed 2 entries");
  free(out);
  cr_assert_eq(entries(), 0);
}

Test(cli_cache, export_clear_import_then_run_loads_from_disk) {
  warm(EX("mlp.mlir"));
  char *out;
  cr_assert_eq(kiln(&out, "cache export '%s/b.kcb'", g_dir), 0, "%s", out);
  HAS(out, "exported 2 entries");
  free(out);
  cr_assert_eq(kiln(&out, "cache clear"), 0, "%s", out);
  free(out);
  cr_assert_eq(entries(), 0);
  cr_assert_eq(kiln(&out, "cache import '%s/b.kcb'", g_dir), 0, "%s", out);
  HAS(out, "imported 2 entries");
  HAS(out, "another target");
  free(out);
  cr_assert_eq(entries(), 2);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=3 --stats --specialize off",
                    EX("mlp.mlir")),
               0, "%s", out);
  HAS(out, "cache: 2 hits (2 from disk), 0 misses");
  free(out);
}

static void write_file(const char *path, const char *buf, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(buf, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  cr_assert(buf);
  cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return buf;
}

Test(cli_cache, corrupt_bundle_fails_and_imports_nothing) {
  warm(EX("mlp.mlir"));
  char *out, bundle[128], bad[128];
  snprintf(bundle, sizeof bundle, "%s/b.kcb", g_dir);
  snprintf(bad, sizeof bad, "%s/bad.kcb", g_dir);
  cr_assert_eq(kiln(&out, "cache export '%s' && '%s' cache clear --dir '%s'", bundle, KILN_CLI,
                    g_cache),
               0, "%s", out);
  free(out);
  size_t n;
  char *buf = read_file(bundle, &n);
  /* truncated */
  write_file(bad, buf, n - 100);
  cr_assert_eq(kiln(&out, "cache import '%s'", bad), 1, "%s", out);
  HAS(out, "at offset ");
  HAS(out, "truncated");
  HAS(out, "nothing was imported");
  free(out);
  cr_assert_eq(entries(), 0);
  /* one bit flipped in the middle of an entry */
  buf[n / 2] ^= 0x10;
  write_file(bad, buf, n);
  cr_assert_eq(kiln(&out, "cache import '%s'", bad), 1, "%s", out);
  HAS(out, "checksum mismatch");
  free(out);
  cr_assert_eq(entries(), 0);
  /* not a bundle at all, and an empty file */
  write_file(bad, "hello\n", 6);
  cr_assert_eq(kiln(&out, "cache import '%s'", bad), 1, "%s", out);
  HAS(out, "not a kiln cache bundle");
  free(out);
  write_file(bad, "", 0);
  cr_assert_eq(kiln(&out, "cache import '%s'", bad), 1, "%s", out);
  HAS(out, "empty");
  free(out);
  cr_assert_eq(kiln(&out, "cache import '%s/none.kcb'", g_dir), 1, "%s", out);
  HAS(out, "cannot open");
  free(out);
  cr_assert_eq(entries(), 0);
  free(buf);
}

typedef struct first_path {
  char path[512];
} first_path;

static int first_visit(const kc_disk_entry *e, void *user) {
  snprintf(((first_path *)user)->path, 512, "%s", e->path);
  return 1;
}

Test(cli_cache, verify_removes_a_corrupted_entry) {
  warm(EX("mlp.mlir"));
  kc_disk *d = kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL);
  first_path fp = {""};
  cr_assert_eq(kc_disk_list(d, false, first_visit, &fp, NULL), 0);
  kc_disk_close(d);
  size_t n;
  char *buf = read_file(fp.path, &n);
  buf[n - 10] ^= 0x01; /* in the payload: only a full read sees it */
  write_file(fp.path, buf, n);
  free(buf);
  char *out;
  cr_assert_eq(kiln(&out, "cache verify"), 0, "%s", out);
  HAS(out, "checked 2 entries");
  HAS(out, "1 ok, 1 bad (removed)");
  free(out);
  cr_assert_eq(entries(), 1);
  cr_assert_eq(access(fp.path, F_OK), -1);
}

Test(cli_cache, bad_usage_exits_2) {
  char *out;
  cr_assert_eq(kiln(&out, "cache frobnicate"), 2, "%s", out);
  HAS(out, "unknown subcommand 'frobnicate'");
  HAS(out, "usage: kiln cache");
  free(out);
  cr_assert_eq(kiln(&out, "cache"), 2, "%s", out);
  HAS(out, "usage: kiln cache");
  free(out);
  cr_assert_eq(kiln(&out, "cache ls --bogus"), 2, "%s", out);
  HAS(out, "unknown option '--bogus'");
  free(out);
  cr_assert_eq(kiln(&out, "cache explain"), 2, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "cache ls --max-bytes 1"), 2, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "cache warm '%s' --dim nosuch=3", EX("mlp.mlir")), 1, "%s", out);
  HAS(out, "no symbolic dim 'nosuch'");
  free(out);
  cr_assert_eq(kiln(&out, "help cache"), 0, "%s", out);
  HAS(out, "explain GRAPH.mlir");
  HAS(out, "import FILE");
  HAS(out, "never hit");
  free(out);
}

Test(cli_cache, dir_option_overrides_the_environment) {
  char *out, other[128];
  snprintf(other, sizeof other, "%s/other", g_dir);
  cr_assert_eq(kiln(&out, "cache warm '%s' --dir '%s'", EX("relu.mlir"), other), 0, "%s", out);
  free(out);
  cr_assert_eq(entries(), 0);
  cr_assert_eq(kiln(&out, "cache ls --dir='%s'", other), 0, "%s", out);
  HAS(out, "1 entry");
  free(out);
}

Test(cli_cache, warm_with_dims_stores_the_specialized_kernels) {
  char *out;
  cr_assert_eq(kiln(&out, "cache warm '%s' --target host", EX("relu.mlir")), 0, "%s", out);
  HAS(out, "1 compiled and stored"); /* relu.mlir is static: nothing to specialize */
  free(out);
  /* a graph with a symbol: 2 kernels (an op after a softmax does not join
   * it), generic + 2 bindings */
  char g[128];
  snprintf(g, sizeof g, "%s/s.mlir", g_dir);
  FILE *f = fopen(g, "w");
  cr_assert(f);
  fputs("mo.graph @s<n>(%x: !mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 4], f32>) {\n"
        "  %y = mo.softmax(%x) : !mo.tensor<[n, 4], f32>\n"
        "  %z = mo.tanh(%y) : !mo.tensor<[n, 4], f32>\n"
        "  mo.output %z : !mo.tensor<[n, 4], f32>\n}\n", f);
  fclose(f);
  cr_assert_eq(kiln(&out, "cache warm '%s' --dim n=1,3", g), 0, "%s", out);
  HAS(out, "6 compiled and stored, 0 already present");
  HAS(out, "2 generic and 4 shape-specialized kernels (2 bindings");
  free(out);
  /* a run of a warmed binding loads its specialized kernels from disk */
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim n=3 --specialize sync --stats", g), 0,
               "%s", out);
  HAS(out, "cache: 4 hits (4 from disk), 0 misses, 1 specialized");
  free(out);
  cr_assert_eq(kiln(&out, "cache warm '%s'", g), 0, "%s", out);
  HAS(out, "0 compiled and stored, 2 already present");
  free(out);
}

Test(cli_cache, warm_for_another_target_is_a_clear_error) {
  char *out;
  cr_assert_eq(kiln(&out, "cache warm '%s' --target sm_90", EX("relu.mlir")), 1, "%s", out);
  HAS(out, "cross-target warm is not built yet");
  HAS(out, "--target host");
  free(out);
  cr_assert_eq(entries(), 0);
  cr_assert_eq(kiln(&out, "cache ls --target host"), 2, "%s", out); /* warm only */
  free(out);
}

/* Re-file the store's only entry under another key, components unchanged,
 * and return that key. Its checksums are all right; only the key is not
 * the hash of what it records. */
static int refile_visit(const kc_disk_entry *e, void *user) {
  kc_disk *d = user;
  void *payload = NULL;
  size_t len = 0;
  cr_assert_eq(kc_disk_get(d, e->key, &payload, &len, NULL), KC_DISK_HIT);
  kc_key k = e->key;
  k.hi ^= 0x8000;
  cr_assert_eq(kc_disk_put(d, k, e->components, e->ncomponents, payload, len, NULL), 0);
  free(payload);
  cr_assert_eq(unlink(e->path), 0);
  return 1;
}

Test(cli_cache, import_recomputes_keys_and_rejects_a_mismatch) {
  warm(EX("relu.mlir"));
  char *out, bundle[128];
  snprintf(bundle, sizeof bundle, "%s/b.kcb", g_dir);
  /* an honest bundle imports */
  cr_assert_eq(kiln(&out, "cache export '%s' && '%s' cache clear --dir '%s' && '%s' cache import "
                          "--dir '%s' '%s'",
                    bundle, KILN_CLI, g_cache, KILN_CLI, g_cache, bundle),
               0, "%s", out);
  HAS(out, "imported 1 entry");
  free(out);
  kc_disk *d = kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL);
  cr_assert(d);
  cr_assert_eq(kc_disk_list(d, true, refile_visit, d, NULL), 0);
  kc_disk_close(d);
  cr_assert_eq(entries(), 1);
  cr_assert_eq(kiln(&out, "cache export '%s' && '%s' cache clear --dir '%s'", bundle, KILN_CLI,
                    g_cache),
               0, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "cache import '%s'", bundle), 1, "%s", out);
  HAS(out, "its key does not match the components it records");
  HAS(out, "nothing was imported");
  free(out);
  cr_assert_eq(entries(), 0);
}

/* A graph with a custom op: warm and explain take the library with
 * --kernels and compute the keys kiln run computes (run then loads every
 * kernel from disk); without the library they fail, naming the op. */
Test(cli_cache, warm_and_explain_take_kernel_libraries) {
  const char *g = KILN_SOURCE_DIR "/examples/custom_ops/swish_beta.mlir";
  const char *lib = KILN_SOURCE_DIR "/examples/custom_ops/swish_beta.c";
  char *out;
  cr_assert_neq(kiln(&out, "cache warm '%s'", g), 0, "warm without the library:\n%s", out);
  HAS(out, "swish_beta");
  free(out);
  cr_assert_eq(kiln(&out, "cache warm '%s' --kernels '%s'", g, lib), 0, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "cache explain '%s' --kernels '%s'", g, lib), 0, "%s", out);
  HAS(out, " 0 misses");
  LACKS(out, "miss:");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --kernels '%s' --random-inputs --dim rows=4 --stats "
                          "--specialize off", g, lib),
               0, "%s", out);
  HAS(out, "0 misses");
  LACKS(out, "(0 from disk)");
  free(out);
}
