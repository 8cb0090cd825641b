/* test_cache_trust.c - what the disk cache trusts and where it reads from:
 * OpenSSH-style ownership and permission checks on the directory and its
 * entries, no symbolic link followed for writes, read-only stores and seed
 * layers (a seeded kernel is a disk hit, not a compile), and the context's
 * report of cache settings that did not work (kiln_context_cache_warning).
 * Each test gets its own mkdtemp directory (cache_disk_util.h). Tests run
 * as root here, which ignores permission bits: the read-only path is
 * reached through KC_DISK_READ_ONLY and seeds, ownership through chown. */
#define _GNU_SOURCE /* nftw */
#include "tests/cache_disk_util.h"

#include <dirent.h>

#include "src/io.h"

TestSuite(cache_trust, .init = setup, .fini = teardown);

static kc_disk *open_fails(const char *dir, unsigned flags, char *msg, size_t cap) {
  kiln_status *st = kiln_status_new();
  kc_disk *d = kc_disk_open(dir, 0, flags, st);
  snprintf(msg, cap, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return d;
}

Test(cache_trust, world_writable_directory_is_refused) {
  char msg[1024];
  cr_assert_eq(mkdir(tmp_path("c"), 0700), 0);
  chmod(tmp_path("c"), 01777);
  cr_assert_null(open_fails(tmp_path("c"), 0, msg, sizeof msg));
  cr_assert(strstr(msg, tmp_path("c")), "%s", msg);
  cr_assert(strstr(msg, "writable by others (mode 1777)"), "%s", msg);
  chmod(tmp_path("c"), 0770);
  cr_assert_null(open_fails(tmp_path("c"), KC_DISK_READ_ONLY, msg, sizeof msg));
  cr_assert(strstr(msg, "writable by its group"), "%s", msg);
  chmod(tmp_path("c"), 0755);
  kc_disk *d = open_fails(tmp_path("c"), 0, msg, sizeof msg);
  cr_assert(d, "a directory only its owner may write is fine: %s", msg);
  kc_disk_close(d);
}

Test(cache_trust, directory_of_another_user_is_refused) {
  if (geteuid() != 0) cr_skip_test("needs root to give the directory away");
  char msg[1024];
  cr_assert_eq(mkdir(tmp_path("c"), 0755), 0);
  cr_assert_eq(chown(tmp_path("c"), 1234, 1234), 0);
  cr_assert_null(open_fails(tmp_path("c"), 0, msg, sizeof msg));
  cr_assert(strstr(msg, "owned by uid 1234, not by you (uid 0) or root"), "%s", msg);
  cr_assert(strstr(msg, tmp_path("c")), "%s", msg);
}

Test(cache_trust, entry_writable_by_others_is_a_miss_and_kept) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 100);
  char *path = kc_disk_entry_path(d, key_of(1));
  cr_assert_eq(chmod(path, 0666), 0);
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_MISS);
  cr_assert(exists(path), "an untrusted entry is not removed");
  cr_assert(strstr(g_warn, "writable by others"), "%s", g_warn);
  cr_assert(strstr(g_warn, path), "%s", g_warn);
  kc_disk_stats s;
  cr_assert_eq(kc_disk_stats_get(d, &s, NULL), 0);
  cr_assert_eq(s.untrusted, 1);
  cr_assert_eq(chmod(path, 0644), 0);
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_HIT);
  free(path);
  kc_disk_close(d);
}

Test(cache_trust, symlinked_subdirectory_is_not_followed_for_writes) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  cr_assert_eq(mkdir(tmp_path("elsewhere"), 0700), 0);
  char *path = kc_disk_entry_path(d, key_of(1)); /* DIR/ab/ab....kc */
  char sub[512];
  snprintf(sub, sizeof sub, "%s", path);
  *strrchr(sub, '/') = 0;
  cr_assert_eq(symlink(tmp_path("elsewhere"), sub), 0);
  unsigned char *p = payload_of(1, 64);
  kiln_status *st = kiln_status_new();
  cr_assert_eq(kc_disk_put(d, key_of(1), COMPS, NCOMPS, p, 64, st), -1);
  cr_assert(strstr(kiln_status_message(st), "symbolic link"), "%s", kiln_status_message(st));
  kiln_status_free(st);
  DIR *dp = opendir(tmp_path("elsewhere"));
  int n = 0;
  for (struct dirent *de; (de = readdir(dp));) n += de->d_name[0] != '.';
  closedir(dp);
  cr_assert_eq(n, 0, "nothing was written through the link");
  free(p);
  free(path);
  kc_disk_close(d);
}

Test(cache_trust, read_only_store_reads_and_never_writes) {
  kc_disk *w = open_store(tmp_path("c"), 0);
  put_ok(w, 1, 100);
  kc_disk_close(w);
  char msg[1024];
  kc_disk *d = open_fails(tmp_path("c"), KC_DISK_READ_ONLY, msg, sizeof msg);
  cr_assert(d, "%s", msg);
  cr_assert(kc_disk_read_only(d));
  char *path = kc_disk_entry_path(d, key_of(1));
  struct stat before, after;
  cr_assert_eq(stat(path, &before), 0);
  struct timespec t = {0, 50 * 1000 * 1000};
  nanosleep(&t, NULL);
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_HIT);
  cr_assert_eq(stat(path, &after), 0);
  cr_assert_eq(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec, "a read-only hit touches nothing");
  put_ok(d, 2, 100); /* succeeds, stores nothing */
  cr_assert_not(entry_exists(d, 2));
  cr_assert_eq(kc_disk_clear(d, NULL, NULL), -1);
  cr_assert(entry_exists(d, 1));
  /* a damaged entry in a read-only layer is a miss, left in place */
  int fd = open(path, O_WRONLY);
  cr_assert_eq(pwrite(fd, "X", 1, (off_t)before.st_size - 1), 1);
  close(fd);
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_MISS);
  cr_assert(exists(path));
  free(path);
  kc_disk_close(d);
  /* a read-only store must exist: it is never created */
  cr_assert_null(open_fails(tmp_path("none"), KC_DISK_READ_ONLY, msg, sizeof msg));
  cr_assert_not(exists(tmp_path("none")));
}

Test(cache_trust, seed_layers_are_searched_after_the_directory) {
  kc_disk *s = open_store(tmp_path("seed"), 0);
  put_ok(s, 1, 100);
  kc_disk_close(s);
  chmod(tmp_path("seed"), 0555);
  kc_disk *d = open_store(tmp_path("w"), 0);
  kiln_status *st = kiln_status_new();
  cr_assert_eq(kc_disk_add_seed(d, tmp_path("missing"), st), -1);
  cr_assert(strstr(kiln_status_message(st), tmp_path("missing")), "%s", kiln_status_message(st));
  cr_assert_eq(kc_disk_add_seed(d, tmp_path("seed"), st), 0, "%s", kiln_status_message(st));
  kiln_status_free(st);
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_HIT);
  kc_disk_stats ks;
  cr_assert_eq(kc_disk_stats_get(d, &ks, NULL), 0);
  cr_assert_eq(ks.seed_hits, 1);
  cr_assert_eq(ks.entries, 0, "a seed hit is not copied into the directory");
  put_ok(d, 2, 100);
  cr_assert(entry_exists(d, 2), "new entries go to the writable directory");
  kc_disk_close(d);
  chmod(tmp_path("seed"), 0700);
}

/* ---- through a context ---- */

#define RELU                                                                                   \
  "mo.graph @g(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>) {\n"                        \
  "  %r = mo.relu(%x) : !mo.tensor<[4], f32>\n"                                                \
  "  mo.output %r : !mo.tensor<[4], f32>\n"                                                    \
  "}\n"

/* Compile RELU in ctx; the context's disk hits and compiles after it. */
static void compile_relu(kiln_context *ctx, double *disk_hits, double *compiles) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(RELU, strlen(RELU), "relu.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  *disk_hits = kiln_context_counter(ctx, KILN_COUNTER_DISK_HITS);
  *compiles = kiln_context_counter(ctx, KILN_COUNTER_COMPILES);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_status_free(st);
}

static kiln_context *quiet_context(void) {
  setenv("KILN_QUIET", "1", 1);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return ctx;
}

Test(cache_trust, seeded_kernel_is_a_disk_hit_not_a_compile) {
  setenv("KILN_CACHE", "off", 1); /* no store from the environment */
  kiln_context *ctx = quiet_context();
  kiln_status *st = kiln_status_new();
  double hits, compiles;
  cr_assert_eq(kiln_context_set_cache_dir(ctx, tmp_path("seed"), 0, st), 0);
  compile_relu(ctx, &hits, &compiles);
  cr_assert_eq(compiles, 1);
  kiln_context_free(ctx);
  cr_assert_eq(chmod(tmp_path("seed"), 0555), 0);
  ctx = quiet_context();
  cr_assert_eq(kiln_context_add_cache_seed_dir(ctx, tmp_path("seed"), st), -1,
               "no disk cache to add a seed to");
  cr_assert(strstr(kiln_status_message(st), "kiln_context_set_cache_dir"), "%s",
            kiln_status_message(st));
  cr_assert_eq(kiln_context_set_cache_dir(ctx, tmp_path("w"), 0, st), 0);
  cr_assert_eq(kiln_context_add_cache_seed_dir(ctx, tmp_path("seed"), st), 0, "%s",
               kiln_status_message(st));
  cr_assert(strstr(kiln_context_cache_status(ctx), tmp_path("seed")), "%s",
            kiln_context_cache_status(ctx));
  compile_relu(ctx, &hits, &compiles);
  cr_assert_eq(hits, 1, "the seeded kernel is loaded from disk");
  cr_assert_eq(compiles, 0, "and not compiled");
  kiln_context_free(ctx);
  /* from the environment: KILN_CACHE_SEED_DIR beside KILN_CACHE_DIR */
  unsetenv("KILN_CACHE");
  setenv("KILN_CACHE_DIR", tmp_path("w2"), 1);
  setenv("KILN_CACHE_SEED_DIR", tmp_path("seed"), 1);
  ctx = quiet_context();
  cr_assert_null(kiln_context_cache_warning(ctx), "%s", kiln_context_cache_warning(ctx));
  compile_relu(ctx, &hits, &compiles);
  cr_assert_eq(hits, 1);
  cr_assert_eq(compiles, 0);
  kiln_context_free(ctx);
  unsetenv("KILN_CACHE_SEED_DIR");
  chmod(tmp_path("seed"), 0700);
  kiln_status_free(st);
}

/* Each bad setting leaves the context without a disk cache, says why in
 * kiln_context_cache_warning, and never fails the context. */
Test(cache_trust, bad_cache_settings_are_reported_by_the_context) {
  const char *bad_max[] = {"abc", "-1", "99999999999999999999"};
  unsetenv("KILN_CACHE");
  setenv("KILN_CACHE_DIR", tmp_path("c"), 1);
  for (int i = 0; i < 3; i++) {
    setenv("KILN_CACHE_MAX_BYTES", bad_max[i], 1);
    kiln_context *ctx = quiet_context();
    const char *w = kiln_context_cache_warning(ctx);
    cr_assert(w, "KILN_CACHE_MAX_BYTES=%s passes silently", bad_max[i]);
    char want[64];
    snprintf(want, sizeof want, "KILN_CACHE_MAX_BYTES='%s'", bad_max[i]);
    cr_assert(strstr(w, want), "%s", w);
    cr_assert_null(kiln_context_cache_dir(ctx));
    cr_assert(strstr(kiln_context_cache_status(ctx), "unavailable"), "%s",
              kiln_context_cache_status(ctx));
    kiln_context_free(ctx);
  }
  unsetenv("KILN_CACHE_MAX_BYTES");
  spit(tmp_path("file"), "x", 1);
  setenv("KILN_CACHE_DIR", tmp_path("file"), 1);
  kiln_context *ctx = quiet_context();
  const char *w = kiln_context_cache_warning(ctx);
  cr_assert(w && strstr(w, tmp_path("file")) && strstr(w, "Not a directory"), "%s",
            w ? w : "(no warning)");
  kiln_context_free(ctx);
  setenv("KILN_CACHE_DIR", tmp_path("c"), 1);
  setenv("KILN_CACHE_SEED_DIR", tmp_path("nope"), 1);
  ctx = quiet_context();
  w = kiln_context_cache_warning(ctx);
  cr_assert(w && strstr(w, "KILN_CACHE_SEED_DIR") && strstr(w, tmp_path("nope")), "%s",
            w ? w : "(no warning)");
  kiln_context_free(ctx);
  unsetenv("KILN_CACHE_SEED_DIR");
  ctx = quiet_context();
  cr_assert_null(kiln_context_cache_warning(ctx), "a good setting warns about nothing");
  kiln_context_free(ctx);
  setenv("KILN_CACHE", "off", 1);
  ctx = quiet_context();
  cr_assert_null(kiln_context_cache_warning(ctx), "KILN_CACHE=off is a choice, not a problem");
  kiln_context_free(ctx);
}

/* ---- files kiln reads are regular files ---- */

Test(cache_trust, reading_a_fifo_is_refused_not_a_hang) {
  cr_assert_eq(mkfifo(tmp_path("fifo"), 0600), 0);
  kiln_status *st = kiln_status_new();
  alarm(20); /* a hang fails the test instead of the suite */
  cr_assert_null(kiln_graph_load(tmp_path("fifo"), st));
  cr_assert(strstr(kiln_status_message(st), "not a regular file"), "%s",
            kiln_status_message(st));
  cr_assert_null(rt_npy_read(tmp_path("fifo"), st));
  cr_assert(strstr(kiln_status_message(st), "not a regular file"), "%s",
            kiln_status_message(st));
  alarm(0);
  kiln_status_free(st);
}

/* ---- other files of the tree (compiled C kernel libraries in DIR/libs) ---- */

Test(cache_trust, library_files_follow_the_same_rules) {
  cr_assert_eq(mkdir(tmp_path("c"), 0700), 0);
  cr_assert_eq(kc_tree_publish(tmp_path("c"), "libs", "a.bc", "BC\xc0\xde", 4), 0);
  size_t n = 0;
  char why[1024];
  char *b = kc_tree_read(tmp_path("c"), "libs", "a.bc", &n, why, sizeof why);
  cr_assert(b && n == 4 && !memcmp(b, "BC\xc0\xde", 4));
  free(b);
  cr_assert_eq(chmod(tmp_path("c/libs/a.bc"), 0664), 0);
  cr_assert_null(kc_tree_read(tmp_path("c"), "libs", "a.bc", &n, why, sizeof why));
  cr_assert(strstr(why, "writable by its group"), "%s", why);
  /* a libs folder that is a link: not written through, not read through */
  cr_assert_eq(mkdir(tmp_path("d"), 0700), 0);
  cr_assert_eq(mkdir(tmp_path("elsewhere"), 0700), 0);
  cr_assert_eq(symlink(tmp_path("elsewhere"), tmp_path("d/libs")), 0);
  cr_assert_eq(kc_tree_publish(tmp_path("d"), "libs", "a.bc", "x", 1), -1);
  cr_assert_not(exists(tmp_path("elsewhere/a.bc")));
  spit(tmp_path("elsewhere/b.bc"), "x", 1);
  cr_assert_null(kc_tree_read(tmp_path("d"), "libs", "b.bc", &n, NULL, 0));
}
