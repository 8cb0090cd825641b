/* cache_disk.c - the disk cache store: finding and creating the directory,
 * get (read, check, touch), put (temporary file + rename, then the size
 * bound), statistics and key helpers. The header codec is in
 * cache_disk_format.c, the directory scan and eviction in cache_disk_scan.c;
 * cache_disk.h describes the format and the design.
 *
 * Assumes any file in the directory may be missing, foreign, truncated or
 * corrupt, and that other processes add and remove entries at any moment.
 * Guarantees: a hit's bytes passed every check (magic, format, key, header
 * checksum, length, payload checksum); a put either publishes a complete
 * entry or leaves nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "cache_disk_impl.h"
#include "rt.h"

/* ---- keys and paths ---- */

void kc_key_hex(kc_key key, char out[33]) {
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)key.hi, (unsigned long long)key.lo);
}

bool kc_key_parse(const char *s, kc_key *key) {
  uint64_t part[2] = {0, 0};
  for (int i = 0; i < 32; i++) {
    char ch = s[i];
    int h = (ch >= '0' && ch <= '9')   ? ch - '0'
            : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
            : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                       : -1;
    if (h < 0) return false;
    part[i / 16] = part[i / 16] << 4 | (uint64_t)h;
  }
  if (s[32] != '\0') return false;
  key->hi = part[0];
  key->lo = part[1];
  return true;
}

kc_key kc_key_from_bytes(const uint8_t b[16]) {
  kc_key k = {0, 0};
  for (int i = 0; i < 8; i++) {
    k.hi = k.hi << 8 | b[i];
    k.lo = k.lo << 8 | b[8 + i];
  }
  return k;
}

void kc_key_to_bytes(kc_key key, uint8_t b[16]) {
  for (int i = 0; i < 8; i++) {
    b[7 - i] = (uint8_t)(key.hi >> (8 * i));
    b[15 - i] = (uint8_t)(key.lo >> (8 * i));
  }
}

char *kcd_entry_path(const char *dir, kc_key key) {
  char hex[33];
  kc_key_hex(key, hex);
  size_t n = strlen(dir) + 48;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%.2s/%s.kc", dir, hex, hex);
  return p;
}

char *kcd_file_path(const char *dir, const kcd_file *f) {
  if (f->kind == KCD_ENTRY) return kcd_entry_path(dir, f->key);
  char hex[33];
  kc_key_hex(f->key, hex);
  size_t n = strlen(dir) + 48;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/libs/%s.%s", dir, hex, f->kind == KCD_LIB_BC ? "bc" : "fns");
  return p;
}

char *kc_disk_entry_path(const kc_disk *d, kc_key key) {
  return d && d->enabled ? kcd_entry_path(d->dir, key) : NULL;
}

void kcd_warn(kc_disk *d, const char *fmt, ...) {
  if (!d->warn) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  d->warn(d->warn_user, msg);
}

/* ---- trust ---- */

int kcd_trust_check(const struct stat *sb, const char *path, const char *what, char *why,
                    size_t whylen) {
  uid_t me = geteuid();
  if (sb->st_uid != me && sb->st_uid != 0) {
    snprintf(why, whylen,
             "%s '%s' is owned by uid %lu, not by you (uid %lu) or root: kiln runs the code it "
             "holds, so it is refused; use a directory of your own, or ship entries in a signed "
             "bundle (kiln cache import --trust-key)",
             what, path, (unsigned long)sb->st_uid, (unsigned long)me);
    return -1;
  }
  if (sb->st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(why, whylen,
             "%s '%s' is writable by %s (mode %04o): anyone there could plant code kiln runs, so "
             "it is refused; remove that permission (chmod go-w '%s') or use a directory of your "
             "own",
             what, path, (sb->st_mode & S_IWOTH) ? "others" : "its group",
             (unsigned)(sb->st_mode & 07777), path);
    return -1;
  }
  return 0;
}

/* ---- opening ---- */

static bool env_is_off(const char *v) {
  return v && (!strcasecmp(v, "off") || !strcmp(v, "0") || !strcasecmp(v, "no") ||
               !strcasecmp(v, "false") || !strcasecmp(v, "disabled"));
}

bool kc_parse_bytes(const char *s, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno) return false;
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  case 't': case 'T': shift = 40; end++; break;
  default: break;
  }
  if (shift && *end == 'i') end++;
  if (*end == 'B' && (shift || end[1] == '\0')) end++;
  if (*end != '\0') return false;
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *out = (uint64_t)v << shift;
  return true;
}

/* The directory to use, malloc'd; NULL with st filled. */
static char *resolve_dir(const char *dir, kiln_status *st) {
  const char *v;
  if (dir && *dir) return strdup(dir);
  if ((v = getenv("KILN_CACHE_DIR")) && *v) return strdup(v);
  const char *base, *suffix;
  if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/') {
    base = v;
    suffix = "/kiln";
  } else if ((v = getenv("HOME")) && *v) {
    base = v;
    suffix = "/.cache/kiln";
  } else {
    rt_err(st, KILN_ERR_NOT_FOUND,
           "no kernel cache directory: none of KILN_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
    return NULL;
  }
  size_t n = strlen(base) + strlen(suffix) + 1;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s", base, suffix);
  return p;
}

/* mkdir -p path (temporarily edited in place); the directories it creates
 * get mode. 0 or an errno. */
static int mkdir_p(char *path, mode_t mode) {
  struct stat sb;
  if (stat(path, &sb) == 0) return S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char save = *p;
    *p = '\0';
    int rc = mkdir(path, mode);
    int err = errno;
    *p = save;
    if (rc != 0 && err != EEXIST) return err;
    if (save == '\0') break;
  }
  if (stat(path, &sb) != 0) return errno;
  return S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
}

kc_disk *kc_disk_open(const char *dir, uint64_t max_bytes, unsigned flags, kiln_status *st) {
  kc_disk *d = calloc(1, sizeof *d);
  if (!d) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory opening the kernel cache");
    return NULL;
  }
  if (pthread_mutex_init(&d->lock, NULL) != 0) {
    free(d);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "cannot create the kernel cache's lock");
    return NULL;
  }
  bool off = !(flags & KC_DISK_IGNORE_OFF) && env_is_off(getenv("KILN_CACHE"));
  const char *mb = getenv("KILN_CACHE_MAX_BYTES");
  d->max_bytes = max_bytes;
  if (!d->max_bytes && mb && *mb && !kc_parse_bytes(mb, &d->max_bytes) && !off) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "KILN_CACHE_MAX_BYTES='%s' is not a byte count (examples: 1073741824, 512M, 2G)", mb);
    goto fail;
  }
  if (!d->max_bytes) d->max_bytes = KC_DISK_DEFAULT_MAX_BYTES;
  if (off) {
    rt_ok(st);
    return d; /* disabled: no directory is touched */
  }
  d->dir = resolve_dir(dir, st);
  if (!d->dir) {
    if (!kiln_status_is_error(st))
      rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory opening the kernel cache");
    goto fail;
  }
  size_t n = strlen(d->dir);
  while (n > 1 && d->dir[n - 1] == '/') d->dir[--n] = '\0';
  bool ro = flags & KC_DISK_READ_ONLY;
  struct stat sb;
  int err = ro ? (stat(d->dir, &sb) != 0 ? errno : S_ISDIR(sb.st_mode) ? 0 : ENOTDIR)
               : mkdir_p(d->dir, 0700);
  if (err) {
    rt_err(st, KILN_ERR_IO, "cannot %s the kernel cache directory '%s': %s",
           ro ? "open" : "create", d->dir, strerror(err));
    goto fail;
  }
  char why[768];
  if (stat(d->dir, &sb) != 0 || kcd_trust_check(&sb, d->dir, "the kernel cache directory", why,
                                                 sizeof why) != 0) {
    rt_err(st, KILN_ERR_IO, "%s", why);
    goto fail;
  }
  if (access(d->dir, R_OK | X_OK) != 0) {
    rt_err(st, KILN_ERR_IO, "the kernel cache directory '%s' is not readable: %s", d->dir,
           strerror(errno));
    goto fail;
  }
  if (ro) {
    d->read_only = true;
    snprintf(d->note, sizeof d->note, "read-only (opened as a seed layer)");
  } else if (access(d->dir, W_OK) != 0) {
    /* A warmed cache shipped read-only (an image layer) is still worth reading. */
    d->read_only = true;
    snprintf(d->note, sizeof d->note,
             "'%s' is not writable (%s): kernels are read from it but new ones are not stored; "
             "set KILN_CACHE_DIR to a writable directory and KILN_CACHE_SEED_DIR to this one",
             d->dir, strerror(errno));
  }
  d->enabled = true;
  rt_ok(st);
  return d;
fail:
  kc_disk_close(d);
  return NULL;
}

void kc_disk_close(kc_disk *d) {
  if (!d) return;
  for (int i = 0; i < d->nseeds; i++) kc_disk_close(d->seeds[i]);
  free(d->seeds);
  pthread_mutex_destroy(&d->lock);
  free(d->dir);
  free(d);
}

void kc_disk_set_warn(kc_disk *d, kc_disk_warn_fn fn, void *user) {
  if (!d) return;
  d->warn = fn;
  d->warn_user = user;
  for (int i = 0; i < d->nseeds; i++) kc_disk_set_warn(d->seeds[i], fn, user);
}

bool kc_disk_enabled(const kc_disk *d) { return d && d->enabled; }
const char *kc_disk_dir(const kc_disk *d) { return d && d->enabled ? d->dir : NULL; }
uint64_t kc_disk_max_bytes(const kc_disk *d) { return d ? d->max_bytes : 0; }
bool kc_disk_read_only(const kc_disk *d) { return d && d->enabled && d->read_only; }
const char *kc_disk_note(const kc_disk *d) { return d ? d->note : ""; }
int kc_disk_nseeds(const kc_disk *d) { return d ? d->nseeds : 0; }

const char *kc_disk_seed_dir(const kc_disk *d, int i) {
  return d && i >= 0 && i < d->nseeds ? d->seeds[i]->dir : NULL;
}

int kc_disk_add_seed(kc_disk *d, const char *dir, kiln_status *st) {
  if (!d || !d->enabled)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "cannot add the cache seed '%s': the disk cache is off", dir ? dir : "");
  if (!dir || !*dir)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache seed: empty directory name");
  kc_disk **v = realloc(d->seeds, (size_t)(d->nseeds + 1) * sizeof *v);
  if (!v) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding a cache seed");
  d->seeds = v;
  kc_disk *s = kc_disk_open(dir, d->max_bytes, KC_DISK_IGNORE_OFF | KC_DISK_READ_ONLY, st);
  if (!s) return -1;
  s->warn = d->warn;
  s->warn_user = d->warn_user;
  d->seeds[d->nseeds++] = s;
  return 0;
}

/* ---- reading ---- */

/* Read up to n bytes at the current offset; the count read (short only at
 * end of file), or -1 with errno. */
static ssize_t read_full(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* Remove a corrupt entry, but only if path still names the file we read
 * (a writer may have published a good one meanwhile). */
static void remove_corrupt(kc_disk *d, const char *path, const struct stat *read_sb,
                           const char *why) {
  struct stat sb;
  atomic_fetch_add(&d->corrupt, 1);
  if (d->read_only) {
    kcd_warn(d, "kiln cache: corrupt entry %s (read-only, left in place): %s", path, why);
    return;
  }
  if (stat(path, &sb) == 0 && sb.st_dev == read_sb->st_dev && sb.st_ino == read_sb->st_ino)
    unlink(path);
  kcd_warn(d, "kiln cache: removed corrupt entry %s: %s", path, why);
}

int kcd_read_entry(kc_disk *d, const char *path, kc_key key, int mode, bool want_components,
                   bool touch, kcd_header *h, void **payload, kiln_status *st) {
  memset(h, 0, sizeof *h);
  if (payload) *payload = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return KC_DISK_MISS;
  int rc = KC_DISK_MISS;
  char why[768] = "";
  char *hbuf = NULL, *pl = NULL;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) goto out;
  if (kcd_trust_check(&sb, path, "kernel cache entry", why, sizeof why) != 0) {
    atomic_fetch_add(&d->untrusted, 1);
    kcd_warn(d, "%s", why);
    goto out;
  }
  /* Read the header in growing chunks: never more than the file holds or a
   * header may take, whatever the file claims. */
  uint64_t fsize = (uint64_t)sb.st_size;
  size_t cap = fsize < 65536 ? (size_t)fsize + 1 : 65536, got = 0;
  int pr;
  for (;;) {
    char *nb = realloc(hbuf, cap);
    if (!nb) goto nomem;
    hbuf = nb;
    ssize_t r = read_full(fd, hbuf + got, cap - got);
    if (r < 0) {
      snprintf(why, sizeof why, "read error: %s", strerror(errno));
      goto out; /* an I/O error is a miss, not proof of corruption */
    }
    got += (size_t)r;
    pr = kcd_header_parse(hbuf, got, want_components, h, why, sizeof why);
    if (pr == KCD_NOMEM) goto nomem;
    if (pr != KCD_INCOMPLETE) break;
    if (got < cap || cap >= KC_DISK_MAX_HEADER + 1) {
      snprintf(why, sizeof why, got < cap ? "truncated header (%zu bytes)" : "header too long", got);
      pr = KCD_BAD;
      break;
    }
    cap = cap * 4 > KC_DISK_MAX_HEADER + 1 ? KC_DISK_MAX_HEADER + 1 : cap * 4;
  }
  if (pr == KCD_BAD) goto corrupt;
  if (h->key.lo != key.lo || h->key.hi != key.hi) {
    snprintf(why, sizeof why, "holds another key");
    goto corrupt;
  }
  uint64_t held = fsize > h->header_bytes ? fsize - h->header_bytes : 0;
  if (h->payload_bytes != held || got > fsize) { /* got > fsize: it grew while we read */
    snprintf(why, sizeof why, "%s: the header says %llu payload bytes, the file holds %llu",
             h->payload_bytes > held ? "truncated" : "wrong length",
             (unsigned long long)h->payload_bytes, (unsigned long long)held);
    goto corrupt;
  }
  if (mode == KCD_READ_FULL) {
    if (h->payload_bytes > SIZE_MAX - 1) goto nomem;
    size_t plen = (size_t)h->payload_bytes;
    pl = malloc(plen ? plen : 1);
    if (!pl) goto nomem;
    size_t have = got - h->header_bytes < plen ? got - h->header_bytes : plen;
    memcpy(pl, hbuf + h->header_bytes, have);
    ssize_t r = read_full(fd, pl + have, plen - have);
    if (r < 0) {
      snprintf(why, sizeof why, "read error: %s", strerror(errno));
      goto out;
    }
    if ((size_t)r != plen - have) {
      snprintf(why, sizeof why, "truncated while reading");
      goto corrupt;
    }
    if (XXH3_64bits(pl, plen) != h->payload_hash) {
      snprintf(why, sizeof why, "payload checksum mismatch");
      goto corrupt;
    }
    /* The recency mark; failing to set it (read-only file) only weakens LRU. */
    if (touch && !d->read_only) (void)futimens(fd, NULL);
    *payload = pl;
    pl = NULL;
  }
  rc = KC_DISK_HIT;
  goto out;
nomem:
  rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory reading cache entry %s", path);
  goto out;
corrupt:
  remove_corrupt(d, path, &sb, why);
  rc = KCD_REMOVED;
out:
  if (rc != KC_DISK_HIT) kcd_header_free(h);
  free(hbuf);
  free(pl);
  close(fd);
  return rc;
}

int kc_disk_get(kc_disk *d, kc_key key, void **payload, size_t *len, kiln_status *st) {
  if (!payload || !len)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache get: NULL payload or length pointer");
  *payload = NULL;
  *len = 0;
  if (!d || !d->enabled) {
    if (d) atomic_fetch_add(&d->misses, 1);
    rt_ok(st);
    return KC_DISK_MISS;
  }
  char *path = kcd_entry_path(d->dir, key);
  if (!path) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory in cache get");
  kcd_header h;
  int rc = kcd_read_entry(d, path, key, KCD_READ_FULL, false, true, &h, payload, st);
  free(path);
  if (rc == KC_DISK_ERROR) return rc;
  for (int i = 0; i < d->nseeds && rc != KC_DISK_HIT; i++) {
    kc_disk *s = d->seeds[i];
    if (!(path = kcd_entry_path(s->dir, key)))
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory in cache get");
    rc = kcd_read_entry(s, path, key, KCD_READ_FULL, false, false, &h, payload, st);
    free(path);
    if (rc == KC_DISK_ERROR) return rc;
    if (rc == KC_DISK_HIT) atomic_fetch_add(&d->seed_hits, 1);
  }
  if (rc == KC_DISK_HIT) {
    *len = (size_t)h.payload_bytes;
    kcd_header_free(&h);
    atomic_fetch_add(&d->hits, 1);
  } else {
    atomic_fetch_add(&d->misses, 1);
    rc = KC_DISK_MISS;
  }
  rt_ok(st);
  return rc;
}

/* ---- writing ---- */

static int write_full(int fd, const void *buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, (const char *)buf + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    done += (size_t)w;
  }
  return 0;
}

/* DIR/SUB as a directory fd, created (0700) when missing, with DIR
 * recreated when it vanished. A symbolic link there is refused (ELOOP or
 * ENOTDIR), never followed: a link planted inside the tree must not send
 * writes elsewhere. -1 with errno. */
static int open_sub(const char *dir, const char *sub) {
  int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0 && errno == ENOENT) {
    char *copy = strdup(dir);
    int err = copy ? mkdir_p(copy, 0700) : ENOMEM;
    free(copy);
    if (err) {
      errno = err;
      return -1;
    }
    top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (top < 0) return -1;
  int fd = openat(top, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && (mkdirat(top, sub, 0700) == 0 || errno == EEXIST))
    fd = openat(top, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int err = errno;
  close(top);
  errno = err;
  return fd;
}

/* Write a[alen] then b[blen] to a new temporary file in sfd (O_EXCL |
 * O_NOFOLLOW; its name into tmp) and renameat it to final. *step says what
 * failed. 0, or -1 with errno and no temporary file left. */
static int publish_at(int sfd, const char *final, const char *tag, _Atomic uint64_t *seq,
                      const void *a, size_t alen, const void *b, size_t blen,
                      const char **step) {
  char tmp[160];
  int fd = -1;
  *step = "creating a temporary file for";
  for (int attempt = 0; attempt < 8 && fd < 0; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(tmp, sizeof tmp, ".tmp-%s-%ld-%llu-%lx", tag, (long)getpid(),
             (unsigned long long)atomic_fetch_add(seq, 1), (unsigned long)ts.tv_nsec);
    fd = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return -1;
  }
  if (fd < 0) return -1;
  *step = "writing";
  int err = 0;
  if (write_full(fd, a, alen) != 0 || write_full(fd, b, blen) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno; /* some filesystems report write errors here */
  if (!err) {
    *step = "publishing";
    if (renameat(sfd, tmp, sfd, final) == 0) return 0;
    err = errno;
  }
  unlinkat(sfd, tmp, 0);
  errno = err;
  return -1;
}

int kc_tree_publish(const char *dir, const char *sub, const char *name, const void *a,
                    size_t len) {
  int sfd = open_sub(dir, sub);
  if (sfd < 0) return -1;
  const char *step;
  _Atomic uint64_t seq = 0; /* the time and O_EXCL make the names unique */
  int rc = publish_at(sfd, name, "f", &seq, a, len, "", 0, &step);
  int err = errno;
  close(sfd);
  errno = err;
  return rc;
}

char *kc_tree_read(const char *dir, const char *sub, const char *name, size_t *len,
                   char *why, size_t whylen) {
  if (why && whylen) why[0] = 0;
  int top = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0) return NULL;
  int sfd = openat(top, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  close(top);
  if (sfd < 0) return NULL;
  int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  close(sfd);
  if (fd < 0) return NULL;
  struct stat sb;
  char *buf = NULL;
  char w[768];
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) goto out;
  size_t pl = strlen(dir) + strlen(sub) + strlen(name) + 3;
  char *path = malloc(pl);
  if (!path) goto out;
  snprintf(path, pl, "%s/%s/%s", dir, sub, name);
  int t = kcd_trust_check(&sb, path, "kernel cache file", w, sizeof w);
  free(path);
  if (t != 0) {
    if (why && whylen) snprintf(why, whylen, "%s", w);
    goto out;
  }
  if (!(buf = malloc((size_t)sb.st_size + 1))) goto out;
  ssize_t r = read_full(fd, buf, (size_t)sb.st_size);
  if (r != (ssize_t)sb.st_size) {
    free(buf);
    buf = NULL;
    goto out;
  }
  buf[r] = 0;
  *len = (size_t)r;
out:
  close(fd);
  return buf;
}

static void account_put(kc_disk *d, kc_key key, uint64_t fsize) {
  pthread_mutex_lock(&d->lock);
  d->puts_since_scan++;
  if (d->total_known) d->approx_bytes += fsize;
  if (!d->total_known || d->approx_bytes > d->max_bytes ||
      d->puts_since_scan >= KC_DISK_RESCAN_EVERY)
    kcd_rescan_locked(d, &key);
  pthread_mutex_unlock(&d->lock);
}

/* Publish a[alen] then b[blen] as key's entry file: a temporary file in the
 * entry's subdirectory (O_EXCL | O_NOFOLLOW, through the directory's fd),
 * then renameat. 0, or -1 with st; no temporary file is left. */
static int store_file(kc_disk *d, kc_key key, const void *a, size_t alen, const void *b,
                      size_t blen, kiln_status *st) {
  char hex[33], final[40], sub[3];
  kc_key_hex(key, hex);
  snprintf(final, sizeof final, "%s.kc", hex);
  snprintf(sub, sizeof sub, "%.2s", hex);
  const char *step = "opening the subdirectory for";
  int err = 0, sfd = open_sub(d->dir, sub);
  if (sfd >= 0 && publish_at(sfd, final, hex, &d->tmp_seq, a, alen, b, blen, &step) == 0) {
    close(sfd);
    atomic_fetch_add(&d->puts, 1);
    account_put(d, key, (uint64_t)alen + blen);
    rt_ok(st);
    return 0;
  }
  err = errno;
  if (sfd >= 0) close(sfd);
  atomic_fetch_add(&d->put_errors, 1);
  rt_err(st, err == ENOMEM ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_IO,
         "kernel cache: %s entry %s in '%s': %s%s", step, hex, d->dir, strerror(err),
         err == ELOOP || err == ENOTDIR
             ? " (a symbolic link or a file inside the cache tree: kiln does not follow links "
               "there when writing; remove it)"
             : "");
  return -1;
}

int kc_disk_put(kc_disk *d, kc_key key, const kc_component *c, int n, const void *payload,
                size_t len, kiln_status *st) {
  if (len && !payload)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache put: NULL payload of %zu bytes", len);
  char *hdr = NULL;
  size_t hlen;
  if (kcd_header_encode(key, c, n, payload, len, &hdr, &hlen, st) != 0) return -1;
  int rc = 0;
  if (!d || !d->enabled || d->read_only) {
    rt_ok(st);
  } else if ((uint64_t)hlen + len > d->max_bytes) {
    atomic_fetch_add(&d->too_big, 1);
    rt_ok(st);
  } else {
    rc = store_file(d, key, hdr, hlen, payload, len, st);
  }
  free(hdr);
  return rc;
}

int kc_disk_put_file(kc_disk *d, kc_key key, const void *bytes, size_t len, kiln_status *st) {
  if (len && !bytes)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache put: NULL entry of %zu bytes", len);
  if (!d || !d->enabled || d->read_only) {
    rt_ok(st);
    return 0;
  }
  return store_file(d, key, bytes, len, "", 0, st);
}

/* ---- statistics ---- */

int kc_disk_stats_get(kc_disk *d, kc_disk_stats *out, kiln_status *st) {
  if (!out) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "cache stats: NULL output");
  memset(out, 0, sizeof *out);
  if (!d) {
    rt_ok(st);
    return 0;
  }
  out->enabled = d->enabled;
  out->dir = kc_disk_dir(d);
  out->max_bytes = d->max_bytes;
  out->hits = atomic_load(&d->hits);
  out->misses = atomic_load(&d->misses);
  out->puts = atomic_load(&d->puts);
  out->too_big = atomic_load(&d->too_big);
  out->put_errors = atomic_load(&d->put_errors);
  out->corrupt_removed = atomic_load(&d->corrupt);
  out->evicted = atomic_load(&d->evicted);
  out->seed_hits = atomic_load(&d->seed_hits);
  out->untrusted = atomic_load(&d->untrusted);
  for (int i = 0; i < d->nseeds; i++) {
    out->corrupt_removed += atomic_load(&d->seeds[i]->corrupt);
    out->untrusted += atomic_load(&d->seeds[i]->untrusted);
  }
  out->rescans = atomic_load(&d->rescans);
  if (d->enabled) {
    kcd_file *files;
    size_t nf;
    if (kcd_scan(d, &files, &nf, &out->bytes, st) != 0) return -1;
    for (size_t i = 0; i < nf; i++) out->entries += files[i].kind == KCD_ENTRY;
    free(files);
  }
  rt_ok(st);
  return 0;
}
