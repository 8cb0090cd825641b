/* test_cli_cache.c - `kiln cache` (src/cli/cache.c) run as a user would:
 * each test gets its own mkdtemp cache directory, and every command runs
 * with KILN_CACHE unset (ctest sets it to off) and KILN_CACHE_DIR set to
 * that directory (also for the later commands of a chain). Checks exit
 * codes and the words users rely on: warm then ls / stats / explain, prune,
 * clear, signed export + import (then `kiln run --stats` loads every kernel
 * from disk), corrupt bundles and entries, bad usage, import of an entry
 * whose key is not the hash of its components, warm with --dim
 * (specialized kernels) and --target, warm / explain of a graph with a
 * custom op (--kernels); and trust: unsigned, wrongly signed and spliced
 * bundles, verify --recompile of forged code, a world-writable cache, a
 * FIFO given as a bundle, bad settings on stderr and in stats. */
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
  /* exported: every command of a chain ("a && KILN b") uses the test's cache */
  snprintf(cmd, sizeof cmd, "unset KILN_CACHE; export KILN_CACHE_DIR='%s'; { '%s' %s; } 2>&1",
           g_cache, KILN_CLI, args);
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

/* `kiln cache keygen` into the test's directory: DIR/sk, DIR/pk (or the
 * names given). */
static void keygen(const char *sk, const char *pk) {
  char *out;
  cr_assert_eq(kiln(&out, "cache keygen '%s/%s' '%s/%s'", g_dir, sk, g_dir, pk), 0, "%s", out);
  HAS(out, "key id:");
  free(out);
}

Test(cli_cache, export_clear_import_then_run_loads_from_disk) {
  warm(EX("mlp.mlir"));
  keygen("sk", "pk");
  char *out;
  cr_assert_eq(kiln(&out, "cache export '%s/b.kcb' --sign '%s/sk'", g_dir, g_dir), 0, "%s", out);
  HAS(out, "exported 2 entries");
  free(out);
  cr_assert_eq(kiln(&out, "cache clear"), 0, "%s", out);
  free(out);
  cr_assert_eq(entries(), 0);
  cr_assert_eq(kiln(&out, "cache import '%s/b.kcb' --trust-key '%s/pk'", g_dir, g_dir), 0, "%s",
               out);
  HAS(out, "signature by");
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

/* g_dir/s.mlir into path: @s<n>, softmax then tanh over [n, 4] (2 kernels:
 * an op after a softmax does not join it). */
static void write_softmax_tanh(char *path, size_t cap) {
  snprintf(path, cap, "%s/s.mlir", g_dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("mo.graph @s<n>(%x: !mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 4], f32>) {\n"
        "  %y = mo.softmax(%x) : !mo.tensor<[n, 4], f32>\n"
        "  %z = mo.tanh(%y) : !mo.tensor<[n, 4], f32>\n"
        "  mo.output %z : !mo.tensor<[n, 4], f32>\n}\n", f);
  cr_assert_eq(fclose(f), 0);
}

Test(cli_cache, warm_with_dims_stores_the_specialized_kernels) {
  char *out;
  cr_assert_eq(kiln(&out, "cache warm '%s' --target host", EX("relu.mlir")), 0, "%s", out);
  HAS(out, "1 compiled and stored"); /* relu.mlir is static: nothing to specialize */
  free(out);
  /* a graph with a symbol: 2 kernels (an op after a softmax does not join
   * it), generic + 2 bindings */
  char g[128];
  write_softmax_tanh(g, sizeof g);
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

/* One warm over several graphs: one count over all of them, a kernel two
 * graphs share compiled once, --dim taken by the graphs that have the
 * symbol, and a --dim no graph has refused. */
Test(cli_cache, warm_takes_several_graphs) {
  char g[128];
  write_softmax_tanh(g, sizeof g);
  char *out;
  cr_assert_eq(kiln(&out, "cache warm '%s' '%s' '%s' --dim n=2", EX("relu.mlir"), g,
                    EX("relu.mlir")), 0, "%s", out);
  HAS(out, "with 3 graphs: 6 kernels");
  HAS(out, "graph @s: 4 kernels (generic + 1 binding of --dim)");
  HAS(out, "6 kernels: 5 compiled and stored, 0 already present, 1 shared with another node");
  HAS(out, "graph @s: 2 generic and 2 shape-specialized kernels (1 binding");
  free(out);
  cr_assert_eq(kiln(&out, "cache warm '%s' '%s' --dim n=2", EX("relu.mlir"), g), 0, "%s", out);
  HAS(out, "5 kernels: 0 compiled and stored, 5 already present");
  free(out);
  cr_assert_neq(kiln(&out, "cache warm '%s' '%s' --dim m=2", EX("relu.mlir"), g), 0, "%s", out);
  HAS(out, "--dim m: none of the 2 graphs has a symbolic dim 'm'");
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
                          "--trust-unsigned --dir '%s' '%s'",
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

/* ---- trust: signed bundles, recompiling, permissions (issue 19) ---- */

/* Replace the object code of every entry by other bytes of the same length
 * (each byte + 1), through the store: key, components and checksums are
 * all right, as a forger would make them. */
static int forge_visit(const kc_disk_entry *e, void *user) {
  kc_disk *d = user;
  void *payload = NULL;
  size_t len = 0;
  cr_assert_eq(kc_disk_get(d, e->key, &payload, &len, NULL), KC_DISK_HIT);
  for (size_t i = 0; i < len; i++) ((unsigned char *)payload)[i]++;
  cr_assert_eq(kc_disk_put(d, e->key, e->components, e->ncomponents, payload, len, NULL), 0);
  free(payload);
  return 0;
}

static void forge_entries(void) {
  kc_disk *d = kc_disk_open(g_cache, 0, KC_DISK_IGNORE_OFF, NULL);
  cr_assert(d);
  cr_assert_eq(kc_disk_list(d, true, forge_visit, d, NULL), 0);
  kc_disk_close(d);
}

Test(cli_cache, verify_recompile_finds_forged_code) {
  warm(EX("relu.mlir"));
  char *out;
  cr_assert_eq(kiln(&out, "cache verify --recompile"), 0, "%s", out);
  HAS(out, "recompiled 1 of 1 entry");
  HAS(out, "1 identical, 0 differ");
  free(out);
  forge_entries();
  cr_assert_eq(kiln(&out, "cache verify"), 0, "the checksums cannot see it:\n%s", out);
  HAS(out, "1 ok, 0 bad");
  free(out);
  cr_assert_eq(kiln(&out, "cache verify --recompile --sample 5"), 1, "%s", out);
  HAS(out, "DIFFERS");
  HAS(out, "0 identical, 1 differ (removed)");
  free(out);
  cr_assert_eq(entries(), 0, "the forged entry is gone");
  cr_assert_eq(kiln(&out, "cache verify --sample 2"), 2, "%s", out);
  HAS(out, "--sample N goes with verify --recompile");
  free(out);
}

Test(cli_cache, import_refuses_unsigned_and_wrongly_signed_bundles) {
  warm(EX("relu.mlir"));
  keygen("sk", "pk");
  keygen("sk2", "pk2");
  forge_entries();
  char *out, bundle[128];
  snprintf(bundle, sizeof bundle, "%s/b.kcb", g_dir);
  cr_assert_eq(kiln(&out, "cache export '%s' && '%s' cache clear --dir '%s'", bundle, KILN_CLI,
                    g_cache),
               0, "%s", out);
  free(out);
  /* unsigned: refused, and says how to go on */
  cr_assert_eq(kiln(&out, "cache import '%s'", bundle), 1, "%s", out);
  HAS(out, "the bundle is not signed");
  HAS(out, "--trust-unsigned");
  HAS(out, "nothing was imported");
  free(out);
  cr_assert_eq(kiln(&out, "cache import '%s' --trust-key '%s/pk'", bundle, g_dir), 1, "%s", out);
  HAS(out, "the bundle is not signed");
  free(out);
  cr_assert_eq(entries(), 0);
  /* signed by another key than the one trusted */
  cr_assert_eq(kiln(&out, "cache export '%s' --sign '%s/sk2'", bundle, g_dir), 0, "%s", out);
  free(out);
  cr_assert_eq(kiln(&out, "cache import '%s' --trust-key '%s/pk'", bundle, g_dir), 1, "%s", out);
  HAS(out, "which is none of the 1 --trust-key key given");
  free(out);
  cr_assert_eq(kiln(&out, "cache import '%s'", bundle), 1, "%s", out);
  HAS(out, "but no --trust-key PUBLIC_KEY was given");
  free(out);
  /* a genuine signature moved onto other content: export an honest signed
   * bundle, then splice its signature line after the forged bundle's body */
  cr_assert_eq(kiln(&out, "cache clear && '%s' cache warm '%s' && '%s' cache export '%s' --sign "
                          "'%s/sk'",
                    KILN_CLI, EX("relu.mlir"), KILN_CLI, bundle, g_dir),
               0, "%s", out);
  size_t n, fn;
  char *honest = read_file(bundle, &n);
  const char *mark = "end\nsignature ed25519 ";
  char *sig = memmem(honest, n, mark, strlen(mark)); /* binary: not strstr */
  cr_assert(sig, "a signed bundle ends with its signature line (%zu bytes):\n%s", n, out);
  free(out);
  sig += 4;
  forge_entries();
  cr_assert_eq(kiln(&out, "cache export '%s' && '%s' cache clear", bundle, KILN_CLI), 0, "%s",
               out);
  free(out);
  char *forged = read_file(bundle, &fn);
  size_t siglen = n - (size_t)(sig - honest);
  char *spliced = malloc(fn + siglen);
  memcpy(spliced, forged, fn);
  memcpy(spliced + fn, sig, siglen);
  write_file(bundle, spliced, fn + siglen);
  cr_assert_eq(kiln(&out, "cache import '%s' --trust-key '%s/pk'", bundle, g_dir), 1, "%s", out);
  HAS(out, "does not verify");
  free(out);
  cr_assert_eq(entries(), 0);
  free(spliced);
  free(forged);
  free(honest);
  /* the secret key must be private */
  char sk[128];
  snprintf(sk, sizeof sk, "%s/sk", g_dir);
  cr_assert_eq(chmod(sk, 0644), 0);
  cr_assert_eq(kiln(&out, "cache export '%s' --sign '%s'", bundle, sk), 1, "%s", out);
  HAS(out, "accessible by group or others");
  free(out);
  /* --trust-unsigned takes it anyway, and says so */
  cr_assert_eq(kiln(&out, "cache import '%s' --trust-unsigned", bundle), 0, "%s", out);
  HAS(out, "not checked (no --trust-key; imported because of --trust-unsigned)");
  free(out);
  cr_assert_eq(entries(), 1);
}

Test(cli_cache, keygen_never_overwrites_a_key) {
  keygen("sk", "pk");
  char *out;
  cr_assert_eq(kiln(&out, "cache keygen '%s/sk' '%s/pk3'", g_dir, g_dir), 1, "%s", out);
  HAS(out, "keys are never overwritten");
  free(out);
  struct stat sb;
  char p[128];
  snprintf(p, sizeof p, "%s/sk", g_dir);
  cr_assert_eq(stat(p, &sb), 0);
  cr_assert_eq(sb.st_mode & 0777, 0600);
}

Test(cli_cache, world_writable_cache_is_refused_by_run) {
  warm(EX("relu.mlir"));
  cr_assert_eq(chmod(g_cache, 01777), 0);
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --stats", EX("relu.mlir")), 0, "%s", out);
  HAS(out, "kiln: warning:");
  HAS(out, "writable by others (mode 1777)");
  HAS(out, g_cache);
  HAS(out, "(0 from disk)");
  free(out);
  cr_assert_eq(kiln(&out, "cache ls"), 1, "%s", out);
  HAS(out, "writable by others");
  free(out);
  cr_assert_eq(chmod(g_cache, 0700), 0);
}

Test(cli_cache, import_of_a_fifo_is_refused_not_hung) {
  char fifo[128];
  snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  char *out, cmd[1024];
  /* timeout: a hang (exit 124) fails the test instead of stalling it */
  snprintf(cmd, sizeof cmd, "env -u KILN_CACHE KILN_CACHE_DIR='%s' timeout 20 '%s' cache import "
                            "'%s' 2>&1",
           g_cache, KILN_CLI, fifo);
  cr_assert_eq(shell_capture(cmd, &out), 1, "%s", out);
  HAS(out, "not a regular file");
  free(out);
  snprintf(cmd, sizeof cmd, "timeout 20 '%s' check '%s' 2>&1", KILN_CLI, fifo);
  cr_assert_eq(shell_capture(cmd, &out), 1, "%s", out);
  HAS(out, "not a regular file (a FIFO)");
  free(out);
}

Test(cli_cache, bad_cache_settings_warn_on_stderr) {
  const char *bad[] = {"KILN_CACHE_MAX_BYTES=abc", "KILN_CACHE_MAX_BYTES=-1",
                       "KILN_CACHE_MAX_BYTES=99999999999999999999"};
  char *out;
  for (int i = 0; i < 3; i++) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "env -u KILN_CACHE KILN_CACHE_DIR='%s' %s '%s' run '%s' "
                              "--random-inputs 2>&1 >/dev/null",
             g_cache, bad[i], KILN_CLI, EX("relu.mlir"));
    cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
    HAS(out, "kiln: warning:");
    HAS(out, strchr(bad[i], '=') + 1);
    HAS(out, "not a byte count");
    cr_assert_eq(count_of(out, "warning"), 1, "warned once:\n%s", out);
    free(out);
  }
  char file[128], cmd[1024];
  snprintf(file, sizeof file, "%s/afile", g_dir);
  write_file(file, "x", 1);
  snprintf(cmd, sizeof cmd, "env -u KILN_CACHE KILN_CACHE_DIR='%s' '%s' run '%s' "
                            "--random-inputs 2>&1 >/dev/null",
           file, KILN_CLI, EX("relu.mlir"));
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  HAS(out, "kiln: warning:");
  HAS(out, file);
  HAS(out, "Not a directory");
  free(out);
  snprintf(cmd, sizeof cmd, "env -u KILN_CACHE KILN_QUIET=1 KILN_CACHE_DIR='%s' '%s' run '%s' "
                            "--random-inputs 2>&1 >/dev/null",
           file, KILN_CLI, EX("relu.mlir"));
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  LACKS(out, "warning");
  free(out);
}

Test(cli_cache, stats_shows_settings_their_sources_and_problems) {
  char *out, seed[128];
  snprintf(seed, sizeof seed, "%s/seed", g_dir);
  cr_assert_eq(mkdir(seed, 0555), 0);
  cr_assert_eq(kiln(&out, "cache stats && KILN_CACHE_SEED_DIR='%s:%s/none' '%s' cache stats", seed,
                    g_dir, KILN_CLI),
               0, "%s", out);
  HAS(out, "directory: ");
  HAS(out, "(KILN_CACHE_DIR)");
  HAS(out, "seeds:     none (KILN_CACHE_SEED_DIR is not set)");
  HAS(out, "(KILN_CACHE_SEED_DIR, read-only): 0 entries");
  HAS(out, "/none (KILN_CACHE_SEED_DIR): not used");
  HAS(out, "problem:   cannot open the kernel cache directory");
  HAS(out, "bound:     1073741824 (1.0 GiB, default)");
  free(out);
  cr_assert_eq(kiln(&out, "cache stats && KILN_CACHE_MAX_BYTES=abc '%s' cache stats", KILN_CLI),
               1, "%s", out);
  HAS(out, "bound:     not set: KILN_CACHE_MAX_BYTES='abc' is not a byte count");
  HAS(out, "runtime:   no disk cache");
  HAS(out, "problem:   KILN_CACHE_MAX_BYTES='abc'");
  free(out);
}

/* The real permission path: a warmed cache the user cannot write (mode
 * 0555, as in a read-only image layer) is read, not ignored. Root ignores
 * permission bits, so as root the commands run as nobody (setpriv). */
Test(cli_cache, unwritable_cache_is_read_not_ignored) {
  char as[128] = "";
  if (geteuid() == 0) {
    if (system("command -v setpriv >/dev/null 2>&1") != 0) cr_skip_test("no setpriv");
    snprintf(as, sizeof as, "setpriv --reuid=65534 --regid=65534 --clear-groups");
    cr_assert_eq(chmod(g_dir, 0711), 0);
    cr_assert_eq(mkdir(g_cache, 0700), 0);
    cr_assert_eq(chown(g_cache, 65534, 65534), 0);
  }
  char *out, cmd[2048];
  snprintf(cmd, sizeof cmd, "unset KILN_CACHE; export KILN_CACHE_DIR='%s' HOME='%s'; %s '%s' "
                            "cache warm '%s' && chmod 555 '%s' && %s '%s' run '%s' "
                            "--random-inputs --dim batch=2 --stats --specialize off 2>&1",
           g_cache, g_dir, as, KILN_CLI, EX("mlp.mlir"), g_cache, as, KILN_CLI, EX("mlp.mlir"));
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  HAS(out, "(2 from disk)");
  HAS(out, "is not writable");
  HAS(out, "KILN_CACHE_SEED_DIR");
  free(out);
  chmod(g_cache, 0700);
}
