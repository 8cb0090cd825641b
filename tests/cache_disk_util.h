/* cache_disk_util.h - fixture and helpers shared by the disk cache tests
 * (test_cache_disk.c, test_cache_disk_share.c): a mkdtemp directory per
 * test with the cache variables unset, deterministic keys and payloads, a
 * warning collector, and small file helpers. Each test file includes it
 * once; the helpers are static inline so unused ones cost nothing. */
#ifndef KILN_TESTS_CACHE_DISK_UTIL_H
#define KILN_TESTS_CACHE_DISK_UTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "kiln/kiln.h"
#include "src/cache_disk.h"

/* ---- fixture ---- */
static char g_tmp[64];
static char g_warn[4096];
static int g_nwarn;

static inline int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static inline void setup(void) {
  strcpy(g_tmp, "/tmp/kiln-cache-disk-XXXXXX");
  cr_assert(mkdtemp(g_tmp), "mkdtemp: %s", strerror(errno));
  unsetenv("KILN_CACHE");
  unsetenv("KILN_CACHE_DIR");
  unsetenv("KILN_CACHE_MAX_BYTES");
  g_warn[0] = '\0';
  g_nwarn = 0;
}

static inline void teardown(void) {
  if (g_tmp[0]) nftw(g_tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void on_warn(void *user, const char *msg) {
  (void)user;
  g_nwarn++;
  size_t used = strlen(g_warn);
  snprintf(g_warn + used, sizeof g_warn - used, "%s\n", msg); /* keeps what fits */
}

static inline char *tmp_path(const char *rel) {
  static char buf[4][512];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 512, "%s/%s", g_tmp, rel);
  return p;
}

static inline kc_disk *open_store(const char *dir, uint64_t max_bytes) {
  kiln_status *st = kiln_status_new();
  kc_disk *d = kc_disk_open(dir, max_bytes, 0, st);
  cr_assert(d, "open %s: %s", dir ? dir : "(default)", kiln_status_message(st));
  kiln_status_free(st);
  kc_disk_set_warn(d, on_warn, NULL);
  return d;
}

static inline kc_key key_of(int i) {
  return (kc_key){.lo = 0x1000u + (uint64_t)i * 0x9e3779b97f4a7c15ull,
                  .hi = (uint64_t)i * 0x100000001b3ull ^ ((uint64_t)(i & 255) << 56)};
}

/* Deterministic payload bytes for (i, len). */
static inline unsigned char *payload_of(int i, size_t len) {
  unsigned char *p = malloc(len ? len : 1);
  uint64_t s = (uint64_t)i * 2654435761u + 7;
  for (size_t j = 0; j < len; j++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[j] = (unsigned char)(s >> 56);
  }
  return p;
}

static const kc_component COMPS[] = {
    {"kernel_ir", "func @k(%a: tensor<?x4xf32>) {\n  mo.relu %a\n}\ttab \\ back \x01 ctl"},
    {"dims", "N=8"},
    {"triple", "x86_64-unknown-linux-gnu"},
    {"cpu", "znver4"},
    {"features", "+avx2,+fma,-avx512f"},
    {"options", "O2"},
    {"kiln_version", "0.1.0"},
    {"llvm_version", "19.1.7"},
};
#define NCOMPS ((int)(sizeof COMPS / sizeof COMPS[0]))

static inline void put_ok(kc_disk *d, int i, size_t len) {
  unsigned char *p = payload_of(i, len);
  kiln_status *st = kiln_status_new();
  int rc = kc_disk_put(d, key_of(i), COMPS, NCOMPS, p, len, st);
  cr_assert_eq(rc, 0, "put %d: %s", i, kiln_status_message(st));
  kiln_status_free(st);
  free(p);
}

/* KC_DISK_HIT with exactly payload_of(i, len), or KC_DISK_MISS. */
static inline int get_check(kc_disk *d, int i, size_t len) {
  void *p = NULL;
  size_t n = 99;
  kiln_status *st = kiln_status_new();
  int rc = kc_disk_get(d, key_of(i), &p, &n, st);
  cr_assert_neq(rc, KC_DISK_ERROR, "get %d: %s", i, kiln_status_message(st));
  kiln_status_free(st);
  if (rc == KC_DISK_MISS) {
    cr_assert(!p && n == 0);
    return rc;
  }
  unsigned char *want = payload_of(i, len);
  cr_assert(p, "a hit returns a buffer");
  cr_assert_eq(n, len, "entry %d: %zu bytes, expected %zu", i, n, len);
  cr_assert(memcmp(p, want, len) == 0, "entry %d: payload differs", i);
  free(want);
  free(p);
  return rc;
}

static inline bool exists(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0;
}

static inline bool entry_exists(kc_disk *d, int i) {
  char *p = kc_disk_entry_path(d, key_of(i));
  bool e = exists(p);
  free(p);
  return e;
}

static inline kc_disk_stats stats_of(kc_disk *d) {
  kc_disk_stats s;
  cr_assert_eq(kc_disk_stats_get(d, &s, NULL), 0);
  return s;
}

static inline char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "open %s", path);
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)sz + 1);
  cr_assert_eq(fread(b, 1, (size_t)sz, f), (size_t)sz);
  fclose(f);
  b[sz] = '\0';
  *n = (size_t)sz;
  return b;
}

static inline void spit(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f, "create %s", path);
  cr_assert_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

static inline void set_age(const char *path, int seconds_ago) {
  struct timespec ts[2];
  clock_gettime(CLOCK_REALTIME, &ts[0]);
  ts[0].tv_sec -= seconds_ago;
  ts[1] = ts[0];
  cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0, "utimensat %s", path);
}

static inline uint64_t file_size(const char *path) {
  struct stat sb;
  cr_assert_eq(stat(path, &sb), 0, "stat %s", path);
  return (uint64_t)sb.st_size;
}

/* Size of one entry file as put_ok writes it with a payload of len bytes. */
static inline uint64_t entry_bytes(size_t len) {
  kc_disk *d = open_store(tmp_path("probe"), 0);
  put_ok(d, 0, len);
  char *p = kc_disk_entry_path(d, key_of(0));
  uint64_t n = file_size(p);
  free(p);
  kc_disk_close(d);
  return n;
}

static inline bool any_tmp_file(const char *dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "find '%s' -name '.tmp-*' | grep -q .", dir);
  return system(cmd) == 0;
}

#endif
