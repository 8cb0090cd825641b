/* cache_disk_impl.h - internal to the disk cache (cache_disk*.c): the store
 * struct, the header codec (cache_disk_format.c) and the directory scan and
 * eviction (cache_disk_scan.c). See cache_disk.h for the format and the
 * design. */
#ifndef KILN_SRC_CACHE_DISK_IMPL_H
#define KILN_SRC_CACHE_DISK_IMPL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include <sys/stat.h>

#include "cache_disk.h"

struct kc_disk {
  bool enabled;
  bool read_only; /* gets only: no put, touch or removal (KC_DISK_READ_ONLY, or not writable) */
  char *dir; /* malloc'd, no trailing '/'; NULL when disabled */
  char note[512]; /* why the store is read-only, or a setting that was ignored; "" if none */
  kc_disk **seeds; /* read-only layers searched after dir (kc_disk_add_seed); owned */
  int nseeds;
  uint64_t max_bytes;
  kc_disk_warn_fn warn;
  void *warn_user;
  /* counters: atomics so gets never wait for the lock */
  _Atomic uint64_t hits, misses, puts, too_big, put_errors, corrupt, evicted, rescans;
  _Atomic uint64_t seed_hits, untrusted;
  _Atomic uint64_t tmp_seq; /* part of temporary file names */
  /* accounting, guarded by lock */
  pthread_mutex_t lock;
  bool total_known;
  uint64_t approx_bytes;
  unsigned puts_since_scan;
};

/* ---- header codec (cache_disk_format.c) ---- */

#define KCD_MAGIC "kiln-cache-entry"

/* The header of key's entry for payload[len] with the n components c, as a
 * malloc'd buffer *out of *outlen bytes (the payload goes right after it).
 * Returns 0, or -1 with st filled (a bad component name, out of memory). */
int kcd_header_encode(kc_key key, const kc_component *c, int n, const void *payload, size_t len,
                      char **out, size_t *outlen, kiln_status *st);

typedef struct kcd_header {
  kc_key key;
  uint64_t payload_bytes;
  uint64_t payload_hash;
  size_t header_bytes; /* the payload starts here */
  int ncomponents;
  kc_component *components; /* malloc'd with malloc'd strings; only when asked for */
} kcd_header;

enum { KCD_OK = 0, KCD_INCOMPLETE = 1, KCD_BAD = 2, KCD_NOMEM = 3 };

/* Parse and check the header at buf[n] (which may hold payload bytes after
 * it). KCD_INCOMPLETE: buf ends before the header does (read more, unless
 * the file has no more: then it is truncated). KCD_BAD: why[whylen] says
 * what is wrong (magic, format, field syntax, header checksum). Components
 * are decoded only when want_components; free them with kcd_header_free. */
int kcd_header_parse(const char *buf, size_t n, bool want_components, kcd_header *h, char *why,
                     size_t whylen);
void kcd_header_free(kcd_header *h);

/* ---- reading one entry (cache_disk.c) ---- */

enum { KCD_READ_HEADER = 0, KCD_READ_FULL = 1 };
enum { KCD_REMOVED = 2 }; /* kcd_read_entry: the entry was corrupt and is gone */

/* Read the entry file at path, expected to hold key. KC_DISK_HIT: *h is
 * filled (with components when want_components) and, for KCD_READ_FULL,
 * *payload holds the checked payload (malloc'd). KC_DISK_MISS: absent,
 * unreadable or not a regular file. KCD_REMOVED: corrupt, so removed,
 * counted and warned about. KC_DISK_ERROR: out of memory (st filled).
 * touch marks a full read as a use (mtime). */
int kcd_read_entry(kc_disk *d, const char *path, kc_key key, int mode, bool want_components,
                   bool touch, kcd_header *h, void **payload, kiln_status *st);

/* "DIR/ab/ab...kc", malloc'd; NULL on out of memory. */
char *kcd_entry_path(const char *dir, kc_key key);
void kcd_warn(kc_disk *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* OpenSSH's rule for what kiln loads code from: sb (of path, a `what` such as
 * "kernel cache directory") must be owned by the effective user or by root
 * and not writable by group or others. 0, or -1 with why[whylen] naming the
 * path, the problem and the fix. */
int kcd_trust_check(const struct stat *sb, const char *path, const char *what, char *why,
                    size_t whylen);

/* ---- directory scan and eviction (cache_disk_scan.c) ---- */

/* What a scanned file is: a kernel entry, or a compiled C kernel library's
 * files in DIR/libs (kernel_cc.c: <32 hex>.bc; kernel_lib.c: <32 hex>.fns,
 * its function list), which share the size bound and the LRU order with
 * the entries but are no entries (list and verify skip them). Losing one
 * of a library's two files is harmless: the .bc is compiled again, the
 * .fns read again from the bitcode. */
typedef enum kcd_kind { KCD_ENTRY, KCD_LIB_BC, KCD_LIB_FNS } kcd_kind;

typedef struct kcd_file {
  kc_key key;
  uint64_t size;
  int64_t mtime_ns;
  kcd_kind kind;
} kcd_file;

/* Every entry file in d->dir (names kiln gives entries, in the right
 * subdirectory; anything else is left alone) and every library file in
 * DIR/libs. Removes temporary files older than an hour. *files is malloc'd
 * (caller frees, also when *n is 0), sorted least recently used first.
 * Returns 0 or -1 with st (out of memory). */
int kcd_scan(kc_disk *d, kcd_file **files, size_t *n, uint64_t *total, kiln_status *st);
/* The path of a scanned file (an entry's, or DIR/libs/<hex>.bc / .fns). */
char *kcd_file_path(const char *dir, const kcd_file *f);

/* Remove entries of files[n] (LRU order) until *total <= target, skipping
 * keep (may be NULL) and entries used since the scan. Updates *total;
 * adds to *removed and *removed_bytes. */
void kcd_evict(kc_disk *d, const kcd_file *files, size_t n, uint64_t *total, uint64_t target,
               const kc_key *keep, uint64_t *removed, uint64_t *removed_bytes);

/* Under d->lock: learn the true total with a scan and evict down to 90% of
 * the bound when it is exceeded (never keep). Failures are warnings. */
void kcd_rescan_locked(kc_disk *d, const kc_key *keep);

#endif
