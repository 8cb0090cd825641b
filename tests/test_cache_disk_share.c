/* test_cache_disk_share.c - the disk cache's entry store (src/cache_disk.h)
 * as a shared resource: LRU eviction order and the size bound, prune /
 * clear / stale temporary files, the environment (KILN_CACHE,
 * KILN_CACHE_DIR, XDG_CACHE_HOME, HOME, KILN_CACHE_MAX_BYTES), unusable and
 * vanished directories, a failing write, and 8 processes (and 4 threads)
 * hammering one directory with overlapping keys under a small bound.
 *
 * Each test runs in its own process (Criterion) with its own mkdtemp
 * directory, removed afterwards; the cache variables are unset first. */
#define _GNU_SOURCE /* nftw */
#include "cache_disk_util.h"

TestSuite(cache_disk_share, .init = setup, .fini = teardown, .timeout = 60);

/* ---- size bound and LRU ---- */

Test(cache_disk_share, eviction_removes_the_least_recently_used_and_spares_a_touched_entry) {
  uint64_t e = entry_bytes(1000);
  kc_disk *d = open_store(tmp_path("c"), 4 * e + e / 2);
  char *p[6];
  for (int i = 0; i < 6; i++) p[i] = kc_disk_entry_path(d, key_of(i));
  for (int i = 0; i < 4; i++) put_ok(d, i, 1000); /* 4 entries fit */
  for (int i = 0; i < 4; i++) set_age(p[i], 400 - 100 * i); /* 0 oldest ... 3 newest */
  cr_assert_eq(get_check(d, 0, 1000), KC_DISK_HIT);       /* 0 becomes the newest */
  put_ok(d, 4, 1000);                                      /* over the bound: evict one */
  cr_assert(exists(p[0]), "the touched entry survives");
  cr_assert(!exists(p[1]), "the least recently used entry is evicted");
  cr_assert(exists(p[2]) && exists(p[3]) && exists(p[4]));
  put_ok(d, 5, 1000);
  cr_assert(!exists(p[2]), "then the next least recently used");
  cr_assert(exists(p[0]) && exists(p[3]) && exists(p[4]) && exists(p[5]));
  kc_disk_stats s = stats_of(d);
  cr_assert_eq(s.evicted, 2);
  cr_assert_eq(s.entries, 4);
  cr_assert_leq(s.bytes, s.max_bytes);
  for (int i = 0; i < 6; i++) free(p[i]);
  kc_disk_close(d);
}

Test(cache_disk_share, many_puts_stay_under_the_bound_with_few_rescans) {
  uint64_t e = entry_bytes(800);
  kc_disk *d = open_store(tmp_path("c"), 10 * e);
  for (int i = 0; i < 60; i++) put_ok(d, i, 800);
  kc_disk_stats s = stats_of(d);
  cr_assert_leq(s.bytes, s.max_bytes);
  cr_assert_geq(s.entries, 9);
  cr_assert(entry_exists(d, 59), "the newest entry is kept");
  cr_assert_eq(s.evicted, 60 - s.entries);
  /* the first put, then one per ~10% of the bound overshoot */
  cr_assert_leq(s.rescans, 1 + 60 / 2, "rescans: %llu", (unsigned long long)s.rescans);
  kc_disk_close(d);
}

Test(cache_disk_share, rescan_sees_entries_other_handles_wrote) {
  uint64_t e = entry_bytes(500);
  kc_disk *a = open_store(tmp_path("c"), 20 * e), *b = open_store(tmp_path("c"), 100 * e);
  put_ok(a, 1000, 500); /* a's first put scans: a knows the total */
  for (int i = 0; i < 40; i++) put_ok(b, i, 500); /* a does not see these yet */
  cr_assert_eq(stats_of(a).entries, 41);
  for (int i = 0; i < 20; i++) put_ok(a, 1001 + i, 500); /* a's estimate passes its bound */
  kc_disk_stats s = stats_of(a);
  cr_assert_leq(s.bytes, 20 * e, "a's rescan counted b's entries and evicted them");
  cr_assert_geq(s.evicted, 40);
  cr_assert(entry_exists(a, 1020));
  kc_disk *c = open_store(tmp_path("c"), 5 * e);
  put_ok(c, 2000, 500); /* the first put of a handle scans and evicts */
  cr_assert_leq(stats_of(c).bytes, 5 * e);
  kc_disk_close(c);
  kc_disk_close(b);
  kc_disk_close(a);
}

Test(cache_disk_share, entry_larger_than_the_bound_is_not_stored) {
  kc_disk *d = open_store(tmp_path("c"), 4096);
  put_ok(d, 1, 8000);
  cr_assert(!entry_exists(d, 1));
  kc_disk_stats s = stats_of(d);
  cr_assert_eq(s.too_big, 1);
  cr_assert_eq(s.entries, 0);
  kc_disk_close(d);
}

Test(cache_disk_share, prune_evicts_lru_down_to_a_bound_and_clear_leaves_foreign_files) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  uint64_t e = 0;
  for (int i = 0; i < 5; i++) {
    put_ok(d, i, 1000);
    char *p = kc_disk_entry_path(d, key_of(i));
    set_age(p, 100 - i); /* 0 oldest */
    e = file_size(p);
    free(p);
  }
  uint64_t removed = 0, rbytes = 0;
  cr_assert_eq(kc_disk_prune(d, 3 * e, &removed, &rbytes, NULL), 0);
  cr_assert_eq(removed, 2);
  cr_assert_eq(rbytes, 2 * e);
  cr_assert(!entry_exists(d, 0) && !entry_exists(d, 1) && entry_exists(d, 2));
  spit(tmp_path("c/README"), "mine", 4);
  mkdir(tmp_path("c/ab"), 0755);
  spit(tmp_path("c/ab/notes.txt"), "mine", 4);
  cr_assert_eq(kc_disk_clear(d, &removed, NULL), 0);
  cr_assert_eq(removed, 3);
  cr_assert_eq(stats_of(d).entries, 0);
  cr_assert(exists(tmp_path("c/README")) && exists(tmp_path("c/ab/notes.txt")));
  kc_disk_close(d);
}

Test(cache_disk_share, stale_temporary_files_are_removed_fresh_ones_kept) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 10);
  char *p = kc_disk_entry_path(d, key_of(1));
  char dir[600], old_tmp[700], new_tmp[700];
  snprintf(dir, sizeof dir, "%s", p);
  *strrchr(dir, '/') = '\0';
  snprintf(old_tmp, sizeof old_tmp, "%s/.tmp-dead-writer", dir);
  snprintf(new_tmp, sizeof new_tmp, "%s/.tmp-live-writer", dir);
  spit(old_tmp, "x", 1);
  spit(new_tmp, "x", 1);
  set_age(old_tmp, 2 * 3600);
  kc_disk_stats s = stats_of(d); /* a scan */
  cr_assert_eq(s.entries, 1, "temporary files are not entries");
  cr_assert(!exists(old_tmp));
  cr_assert(exists(new_tmp));
  free(p);
  kc_disk_close(d);
}

/* ---- environment ---- */

Test(cache_disk_share, kiln_cache_off_disables_the_store) {
  setenv("KILN_CACHE", "off", 1);
  setenv("KILN_CACHE_MAX_BYTES", "lots", 1); /* irrelevant when off */
  kc_disk *d = open_store(tmp_path("c"), 0);
  cr_assert(!kc_disk_enabled(d));
  cr_assert(!exists(tmp_path("c")), "a disabled store creates nothing");
  put_ok(d, 1, 100);
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_MISS);
  kc_disk_stats s = stats_of(d);
  cr_assert(!s.enabled);
  cr_assert_null(s.dir);
  cr_assert_eq(s.entries, 0);
  kc_disk_close(d);
  /* the `kiln cache` commands can still reach the directory */
  unsetenv("KILN_CACHE_MAX_BYTES");
  d = kc_disk_open(tmp_path("c"), 0, KC_DISK_IGNORE_OFF, NULL);
  cr_assert(d && kc_disk_enabled(d));
  kc_disk_close(d);
}

Test(cache_disk_share, kiln_cache_dir_is_honored_and_an_explicit_dir_wins) {
  setenv("KILN_CACHE_DIR", tmp_path("env"), 1);
  kc_disk *d = open_store(NULL, 0);
  cr_assert_str_eq(kc_disk_dir(d), tmp_path("env"));
  put_ok(d, 1, 10);
  char *p = kc_disk_entry_path(d, key_of(1));
  cr_assert(!strncmp(p, tmp_path("env/"), strlen(tmp_path("env/"))) && exists(p));
  free(p);
  kc_disk_close(d);
  d = open_store(tmp_path("explicit"), 0);
  cr_assert_str_eq(kc_disk_dir(d), tmp_path("explicit"));
  kc_disk_close(d);
}

Test(cache_disk_share, default_dir_is_xdg_cache_home_then_home) {
  setenv("XDG_CACHE_HOME", tmp_path("xdg"), 1);
  kc_disk *d = open_store(NULL, 0);
  cr_assert_str_eq(kc_disk_dir(d), tmp_path("xdg/kiln"));
  kc_disk_close(d);
  setenv("XDG_CACHE_HOME", "relative/ignored", 1);
  setenv("HOME", tmp_path("home"), 1);
  d = open_store(NULL, 0);
  cr_assert_str_eq(kc_disk_dir(d), tmp_path("home/.cache/kiln"));
  struct stat sb;
  cr_assert_eq(stat(tmp_path("home/.cache/kiln"), &sb), 0);
  cr_assert_eq(sb.st_mode & 0777, 0700, "created private: entries are code");
  kc_disk_close(d);
}

Test(cache_disk_share, max_bytes_from_the_environment_and_the_api) {
  setenv("KILN_CACHE_MAX_BYTES", "2M", 1);
  kc_disk *d = open_store(tmp_path("c"), 0);
  cr_assert_eq(kc_disk_max_bytes(d), 2u << 20);
  kc_disk_close(d);
  d = open_store(tmp_path("c"), 5000);
  cr_assert_eq(kc_disk_max_bytes(d), 5000, "the API value wins");
  kc_disk_close(d);
  setenv("KILN_CACHE_MAX_BYTES", "lots", 1);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kc_disk_open(tmp_path("c"), 0, 0, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(kiln_status_message(st), "KILN_CACHE_MAX_BYTES='lots'"), "%s",
            kiln_status_message(st));
  kiln_status_free(st);
}

/* ---- directories and write failures ---- */

Test(cache_disk_share, unusable_directory_is_a_clear_error) {
  spit(tmp_path("file"), "x", 1);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kc_disk_open(tmp_path("file/cache"), 0, 0, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  cr_assert(strstr(kiln_status_message(st), tmp_path("file/cache")), "%s", kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), "Not a directory"), "%s", kiln_status_message(st));
  cr_assert_null(kc_disk_open(tmp_path("file"), 0, 0, st), "a file is not a directory");
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  if (geteuid() != 0) { /* root may write anywhere */
    /* an existing directory that cannot be written is read from, read-only */
    mkdir(tmp_path("ro"), 0500);
    kc_disk *d = kc_disk_open(tmp_path("ro"), 0, 0, st);
    cr_assert(d, "%s", kiln_status_message(st));
    cr_assert(kc_disk_read_only(d));
    cr_assert(strstr(kc_disk_note(d), "not writable"), "%s", kc_disk_note(d));
    kc_disk_close(d);
    chmod(tmp_path("ro"), 0700);
  }
  kiln_status_free(st);
}

Test(cache_disk_share, directory_removed_after_open_is_recreated_by_put) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 100);
  nftw(tmp_path("c"), rm_one, 16, FTW_DEPTH | FTW_PHYS);
  cr_assert(!exists(tmp_path("c")));
  cr_assert_eq(get_check(d, 1, 100), KC_DISK_MISS);
  put_ok(d, 2, 100);
  cr_assert_eq(get_check(d, 2, 100), KC_DISK_HIT);
  kc_disk_close(d);
}

Test(cache_disk_share, failed_write_is_an_io_error_and_leaves_nothing) {
  kc_disk *d = open_store(tmp_path("c"), 0);
  put_ok(d, 1, 10); /* creates the subdirectories' parent */
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) { /* a file size limit stands in for a full disk */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &rl);
    kiln_status *st = kiln_status_new();
    unsigned char *p = payload_of(2, 100000);
    kc_disk *own = kc_disk_open(tmp_path("c"), 0, 0, NULL); /* not the parent's */
    int rc = own ? kc_disk_put(own, key_of(2), COMPS, NCOMPS, p, 100000, st) : 0;
    int ok = rc == -1 && kiln_status_code(st) == KILN_ERR_IO &&
             strstr(kiln_status_message(st), "writing entry") != NULL;
    if (!ok) fprintf(stderr, "child: rc %d: %s\n", rc, kiln_status_message(st));
    _exit(ok ? 0 : 1);
  }
  int ws;
  cr_assert_eq(waitpid(pid, &ws, 0), pid);
  cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the put reported an i/o error");
  cr_assert(!entry_exists(d, 2));
  cr_assert(!any_tmp_file(tmp_path("c")), "no temporary file is left");
  kc_disk_close(d);
}

/* ---- many processes and threads on one directory ---- */

#define NKEYS 12
static size_t len_of(int k) { return 700 + (size_t)k * 173; }

typedef struct report {
  int hits, misses, wrong, errors;
  unsigned long long corrupt, evicted;
} report;

/* ops random gets and puts over NKEYS keys; every hit is checked. */
static report hammer(kc_disk *d, unsigned seed, int ops) {
  report r = {0};
  for (int i = 0; i < ops; i++) {
    seed = seed * 1103515245u + 12345u;
    int k = (int)((seed >> 16) % NKEYS);
    void *p;
    size_t n;
    int rc = kc_disk_get(d, key_of(k), &p, &n, NULL);
    if (rc == KC_DISK_ERROR) r.errors++;
    if (rc == KC_DISK_MISS) {
      r.misses++;
      unsigned char *want = payload_of(k, len_of(k));
      if (kc_disk_put(d, key_of(k), COMPS, NCOMPS, want, len_of(k), NULL) != 0) r.errors++;
      free(want);
    }
    if (rc == KC_DISK_HIT) {
      r.hits++;
      unsigned char *want = payload_of(k, len_of(k));
      if (n != len_of(k) || memcmp(p, want, n) != 0) r.wrong++;
      free(want);
      free(p);
    }
  }
  kc_disk_stats s;
  memset(&s, 0, sizeof s);
  kc_disk_stats_get(d, &s, NULL);
  r.corrupt = (unsigned long long)s.corrupt_removed;
  r.evicted = (unsigned long long)s.evicted;
  return r;
}

static int check_entry(const kc_disk_entry *e, void *user) {
  int *n = user;
  int k = -1;
  for (int i = 0; i < NKEYS; i++)
    if (e->key.lo == key_of(i).lo && e->key.hi == key_of(i).hi) k = i;
  cr_assert_geq(k, 0, "only keys that were put");
  cr_assert_eq(e->payload_bytes, len_of(k));
  (*n)++;
  return 0;
}

static void check_dir_after_stress(const char *dir, uint64_t bound) {
  kc_disk *d = open_store(dir, bound);
  uint64_t bad = 99;
  cr_assert_eq(kc_disk_verify(d, &bad, NULL), 0);
  cr_assert_eq(bad, 0, "every entry in the directory is valid");
  int n = 0;
  cr_assert_eq(kc_disk_list(d, true, check_entry, &n, NULL), 0);
  cr_assert_gt(n, 0);
  for (int k = 0; k < NKEYS; k++) (void)get_check(d, k, len_of(k));
  cr_assert(!any_tmp_file(dir), "no temporary file is left");
  kc_disk_close(d);
}

Test(cache_disk_share, eight_processes_share_one_empty_directory) {
  enum { NPROC = 8, OPS = 150 };
  /* a bound of about 6 of the 12 entries: eviction races with readers */
  uint64_t bound = 6 * (entry_bytes(len_of(NKEYS / 2)));
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  fflush(NULL);
  pid_t pids[NPROC];
  for (int c = 0; c < NPROC; c++) {
    pids[c] = fork();
    cr_assert_geq(pids[c], 0);
    if (pids[c] == 0) {
      close(fds[0]);
      kc_disk *d = kc_disk_open(tmp_path("shared"), bound, 0, NULL);
      report r = {.errors = d ? 0 : 1};
      if (d) r = hammer(d, 77u + (unsigned)c * 1000003u, OPS);
      kc_disk_close(d);
      ssize_t w = write(fds[1], &r, sizeof r);
      _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
  }
  close(fds[1]);
  report tot = {0};
  for (int c = 0; c < NPROC; c++) {
    report r;
    cr_assert_eq(read(fds[0], &r, sizeof r), (ssize_t)sizeof r, "child %d reported", c);
    tot.hits += r.hits, tot.misses += r.misses, tot.wrong += r.wrong, tot.errors += r.errors;
    tot.corrupt += r.corrupt, tot.evicted += r.evicted;
  }
  close(fds[0]);
  for (int c = 0; c < NPROC; c++) {
    int ws;
    cr_assert_eq(waitpid(pids[c], &ws, 0), pids[c]);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child %d exited cleanly", c);
  }
  cr_assert_eq(tot.wrong, 0, "every hit returned the exact bytes");
  cr_assert_eq(tot.errors, 0);
  cr_assert_eq(tot.corrupt, 0, "no reader ever saw a partial entry");
  cr_assert_eq(tot.hits + tot.misses, NPROC * OPS);
  cr_assert_gt(tot.hits, 0);
  cr_assert_gt(tot.evicted, 0, "evictions raced with the readers");
  check_dir_after_stress(tmp_path("shared"), bound);
}

typedef struct thread_arg {
  kc_disk *d;
  unsigned seed;
  report r;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  a->r = hammer(a->d, a->seed, 100);
  return NULL;
}

Test(cache_disk_share, threads_share_one_store) {
  uint64_t bound = 6 * (entry_bytes(len_of(NKEYS / 2)));
  kc_disk *d = open_store(tmp_path("shared"), bound);
  thread_arg args[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (thread_arg){d, 5u + (unsigned)i * 7919u, {0}};
    cr_assert_eq(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  int hits = 0;
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(args[i].r.wrong, 0);
    cr_assert_eq(args[i].r.errors, 0);
    hits += args[i].r.hits;
  }
  kc_disk_stats s = stats_of(d);
  cr_assert_eq(s.corrupt_removed, 0);
  cr_assert_eq(s.hits, (uint64_t)hits);
  kc_disk_close(d);
  check_dir_after_stress(tmp_path("shared"), bound);
}
