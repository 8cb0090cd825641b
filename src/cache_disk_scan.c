/* cache_disk_scan.c - the disk cache's directory walk: the scan that learns
 * the true total, least-recently-used eviction, and the listing and
 * maintenance calls built on them (list, prune, clear, verify).
 * Compiled kernel libraries (DIR/libs/<32 hex>.bc and .fns) are part of the
 * walk: they count toward the size bound and are evicted, pruned and
 * cleared like entries, but list and verify show only kernel entries.
 *
 * Assumes other processes add, touch and remove entries during a walk: a
 * file that vanished is skipped, one touched since the scan is not evicted
 * (it is in use). Only names kiln gives (DIR/ab/ab<30 hex>.kc and
 * DIR/ab/.tmp-*, DIR/libs/<32 hex>.bc / .fns and their .tmp- files) are
 * ever removed; foreign files are left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_disk_impl.h"
#include "rt.h"

#define STALE_TMP_NS (3600ll * 1000000000ll) /* a temporary file this old lost its writer */

static int64_t mtime_ns(const struct stat *sb) {
  return (int64_t)sb->st_mtim.tv_sec * 1000000000ll + sb->st_mtim.tv_nsec;
}

static int cmp_lru(const void *a, const void *b) {
  const kcd_file *x = a, *y = b;
  if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
  if (x->key.hi != y->key.hi) return x->key.hi < y->key.hi ? -1 : 1;
  if (x->key.lo != y->key.lo) return x->key.lo < y->key.lo ? -1 : 1;
  return (x->kind > y->kind) - (x->kind < y->kind);
}

/* name is "<32 lowercase hex>.bc" or ".fns": a library file's kind and key;
 * KCD_ENTRY when it is neither. */
static kcd_kind lib_name(const char *name, kc_key *key) {
  size_t n = strlen(name);
  kcd_kind k = n == 35 && strcmp(name + 32, ".bc") == 0    ? KCD_LIB_BC
               : n == 36 && strcmp(name + 32, ".fns") == 0 ? KCD_LIB_FNS
                                                           : KCD_ENTRY;
  if (k == KCD_ENTRY) return k;
  char hex[33];
  memcpy(hex, name, 32);
  hex[32] = '\0';
  for (int i = 0; i < 32; i++)
    if (hex[i] >= 'A' && hex[i] <= 'F') return KCD_ENTRY;
  return kc_key_parse(hex, key) ? k : KCD_ENTRY;
}

/* Append a file; false when out of memory. */
static bool add_file(kcd_file **files, size_t *n, size_t *cap, kcd_file f) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    kcd_file *nf = realloc(*files, nc * sizeof *nf);
    if (!nf) return false;
    *files = nf;
    *cap = nc;
  }
  (*files)[(*n)++] = f;
  return true;
}

/* The library files of DIR/libs (fd: DIR) into files; stale temporary
 * files (a name with ".tmp-") go. false when out of memory. */
static bool scan_libs(int top, int64_t now_ns, kcd_file **files, size_t *n, size_t *cap,
                      uint64_t *total) {
  int lfd = openat(top, "libs", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (lfd < 0) return true;
  DIR *dp = fdopendir(lfd);
  if (!dp) {
    close(lfd);
    return true;
  }
  bool ok = true;
  struct dirent *de;
  while (ok && (de = readdir(dp))) {
    kc_key key;
    kcd_kind kind = lib_name(de->d_name, &key);
    bool tmp = strstr(de->d_name, ".tmp-") != NULL;
    if (kind == KCD_ENTRY && !tmp) continue;
    struct stat sb;
    if (fstatat(lfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (kind == KCD_ENTRY) { /* a temporary file */
      if (now_ns - mtime_ns(&sb) > STALE_TMP_NS) unlinkat(lfd, de->d_name, 0);
      continue;
    }
    ok = add_file(files, n, cap, (kcd_file){key, (uint64_t)sb.st_size, mtime_ns(&sb), kind});
    if (ok) *total += (uint64_t)sb.st_size;
  }
  closedir(dp);
  return ok;
}

/* name is "<sub><30 hex>.kc" with lowercase hex: the entry's key in *key. */
static bool entry_name(const char *name, const char *sub, kc_key *key) {
  if (strlen(name) != 35 || strcmp(name + 32, ".kc") != 0 || memcmp(name, sub, 2) != 0)
    return false;
  char hex[33];
  memcpy(hex, name, 32);
  hex[32] = '\0';
  for (int i = 0; i < 32; i++)
    if (hex[i] >= 'A' && hex[i] <= 'F') return false;
  return kc_key_parse(hex, key);
}

int kcd_scan(kc_disk *d, kcd_file **files, size_t *n, uint64_t *total, kiln_status *st) {
  *files = NULL;
  *n = 0;
  *total = 0;
  size_t cap = 0;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t now_ns = (int64_t)now.tv_sec * 1000000000ll + now.tv_nsec;
  int top = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) return 0; /* no directory: no entries */
  for (int i = 0; i < 256; i++) {
    char sub[3];
    snprintf(sub, sizeof sub, "%02x", i);
    int sfd = openat(top, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (sfd < 0) continue;
    DIR *dp = fdopendir(sfd);
    if (!dp) {
      close(sfd);
      continue;
    }
    struct dirent *de;
    while ((de = readdir(dp))) {
      kc_key key;
      bool is_entry = entry_name(de->d_name, sub, &key);
      if (!is_entry && strncmp(de->d_name, ".tmp-", 5) != 0) continue;
      struct stat sb;
      if (fstatat(sfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
        continue;
      if (!is_entry) {
        if (now_ns - mtime_ns(&sb) > STALE_TMP_NS) unlinkat(sfd, de->d_name, 0);
        continue;
      }
      if (!add_file(files, n, &cap, (kcd_file){key, (uint64_t)sb.st_size, mtime_ns(&sb),
                                                KCD_ENTRY})) {
        closedir(dp);
        close(top);
        free(*files);
        *files = NULL;
        *n = 0;
        return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory scanning the kernel cache");
      }
      *total += (uint64_t)sb.st_size;
    }
    closedir(dp);
  }
  bool libs_ok = scan_libs(top, now_ns, files, n, &cap, total);
  close(top);
  if (!libs_ok) {
    free(*files);
    *files = NULL;
    *n = 0;
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory scanning the kernel cache");
  }
  if (*n > 1) qsort(*files, *n, sizeof **files, cmp_lru);
  return 0;
}

void kcd_evict(kc_disk *d, const kcd_file *files, size_t n, uint64_t *total, uint64_t target,
               const kc_key *keep, uint64_t *removed, uint64_t *removed_bytes) {
  for (size_t i = 0; i < n && *total > target; i++) {
    const kcd_file *f = &files[i];
    if (keep && f->kind == KCD_ENTRY && keep->lo == f->key.lo && keep->hi == f->key.hi) continue;
    char *path = kcd_file_path(d->dir, f);
    if (!path) return;
    struct stat sb;
    if (lstat(path, &sb) != 0) {
      *total -= f->size; /* another process removed it */
    } else if (mtime_ns(&sb) == f->mtime_ns && unlink(path) == 0) {
      *total -= f->size;
      *removed += f->kind == KCD_ENTRY; /* counts entries; bytes count everything */
      *removed_bytes += f->size;
    }
    free(path);
  }
}

void kcd_rescan_locked(kc_disk *d, const kc_key *keep) {
  kcd_file *files;
  size_t n;
  uint64_t total;
  atomic_fetch_add(&d->rescans, 1);
  d->puts_since_scan = 0;
  if (kcd_scan(d, &files, &n, &total, NULL) != 0) {
    kcd_warn(d, "kiln cache: out of memory scanning '%s'; size bound not enforced", d->dir);
    return;
  }
  if (total > d->max_bytes) {
    uint64_t removed = 0, removed_bytes = 0;
    kcd_evict(d, files, n, &total, d->max_bytes - d->max_bytes / 10, keep, &removed,
              &removed_bytes);
    atomic_fetch_add(&d->evicted, removed);
  }
  free(files);
  d->total_known = true;
  d->approx_bytes = total;
}

/* ---- listing and maintenance ---- */

int kc_disk_list(kc_disk *d, bool with_components, kc_disk_visit_fn fn, void *user,
                 kiln_status *st) {
  if (!fn) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache list: NULL callback");
  if (!d || !d->enabled) {
    rt_ok(st);
    return 0;
  }
  kcd_file *files;
  size_t n;
  uint64_t total;
  if (kcd_scan(d, &files, &n, &total, st) != 0) return -1;
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (files[i].kind != KCD_ENTRY) continue; /* libraries: not listed */
    char *path = kcd_entry_path(d->dir, files[i].key);
    if (!path) {
      rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory listing the kernel cache");
      break;
    }
    kc_disk_entry e = {.key = files[i].key, .path = path, .file_bytes = files[i].size,
                       .last_use_ns = files[i].mtime_ns};
    kcd_header h = {0};
    if (with_components) {
      int r = kcd_read_entry(d, path, files[i].key, KCD_READ_HEADER, true, false, &h, NULL, st);
      if (r == KC_DISK_ERROR) {
        free(path);
        rc = -1;
        break;
      }
      if (r != KC_DISK_HIT) {
        free(path);
        continue;
      }
      e.payload_bytes = h.payload_bytes;
      e.ncomponents = h.ncomponents;
      e.components = h.components;
    }
    int stop = fn(&e, user);
    kcd_header_free(&h);
    free(path);
    if (stop) break;
  }
  free(files);
  if (rc == 0) rt_ok(st);
  return rc;
}

/* After prune or clear the running total is stale: the next put rescans. */
static void forget_total(kc_disk *d) {
  pthread_mutex_lock(&d->lock);
  d->total_known = false;
  pthread_mutex_unlock(&d->lock);
}

int kc_disk_prune(kc_disk *d, uint64_t max_bytes, uint64_t *removed, uint64_t *removed_bytes,
                  kiln_status *st) {
  uint64_t r = 0, rb = 0;
  if (d && d->read_only)
    return rt_err(st, KILN_ERR_IO, "cannot prune the kernel cache: %s", d->note);
  if (d && d->enabled) {
    kcd_file *files;
    size_t n;
    uint64_t total;
    if (kcd_scan(d, &files, &n, &total, st) != 0) return -1;
    kcd_evict(d, files, n, &total, max_bytes, NULL, &r, &rb);
    free(files);
    forget_total(d);
  }
  if (removed) *removed = r;
  if (removed_bytes) *removed_bytes = rb;
  rt_ok(st);
  return 0;
}

int kc_disk_clear(kc_disk *d, uint64_t *removed, kiln_status *st) {
  uint64_t r = 0;
  if (d && d->read_only)
    return rt_err(st, KILN_ERR_IO, "cannot clear the kernel cache: %s", d->note);
  if (d && d->enabled) {
    kcd_file *files;
    size_t n;
    uint64_t total;
    if (kcd_scan(d, &files, &n, &total, st) != 0) return -1;
    for (size_t i = 0; i < n; i++) { /* libraries go too; r counts entries */
      char *path = kcd_file_path(d->dir, &files[i]);
      if (path && unlink(path) == 0) r += files[i].kind == KCD_ENTRY;
      free(path);
    }
    free(files);
    forget_total(d);
  }
  if (removed) *removed = r;
  rt_ok(st);
  return 0;
}

int kc_disk_verify(kc_disk *d, uint64_t *bad, kiln_status *st) {
  uint64_t nbad = 0;
  int rc = 0;
  if (d && d->enabled) {
    kcd_file *files;
    size_t n;
    uint64_t total;
    if (kcd_scan(d, &files, &n, &total, st) != 0) return -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
      if (files[i].kind != KCD_ENTRY) continue;
      char *path = kcd_entry_path(d->dir, files[i].key);
      if (!path) {
        rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory verifying the kernel cache");
        break;
      }
      kcd_header h;
      void *payload;
      int r = kcd_read_entry(d, path, files[i].key, KCD_READ_FULL, false, false, &h, &payload, st);
      if (r == KC_DISK_ERROR) rc = -1;
      if (r == KCD_REMOVED) nbad++;
      if (r == KC_DISK_HIT) {
        kcd_header_free(&h);
        free(payload);
      }
      free(path);
    }
    free(files);
  }
  if (bad) *bad = nbad;
  if (rc == 0) rt_ok(st);
  return rc;
}
