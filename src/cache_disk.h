/* cache_disk.h - internal to src/: the on-disk entry store of the kernel
 * cache. One file per entry, named by the entry's XXH3-128 key; payloads are
 * opaque bytes (object files); every key component is kept beside the entry
 * in readable form so a miss can be explained. No LLVM here.
 *
 * Directory: the `dir` given to kc_disk_open, else $KILN_CACHE_DIR, else
 * $XDG_CACHE_HOME/kiln (when absolute), else $HOME/.cache/kiln. Created on
 * open (mkdir -p; a directory kiln creates is mode 0700 because entries are
 * code that gets loaded and run). KILN_CACHE=off (also 0, no, false)
 * disables the store unless KC_DISK_IGNORE_OFF is passed: open then returns
 * a disabled store whose gets miss and whose puts store nothing.
 *
 * Layout and file format (format 1):
 *   DIR/ab/ab0123...(32 hex).kc    the subdirectory is the key's first byte
 *   DIR/ab/.tmp-<hex>-<pid>-<n>-<t> a put in progress (removed after 1 hour
 *                                    by the next rescan if its writer died)
 * The key's hex is `hi` then `lo`, 16 lowercase digits each (the canonical
 * XXH128 order: lo = XXH128_hash_t.low64, hi = .high64). A file is a text
 * header, one field per line, then the payload bytes:
 *   kiln-cache-entry                 magic
 *   format 1                         format version
 *   key <32 hex>                     must match the file name's key
 *   component NAME=VALUE             zero or more, in the order given to put;
 *                                    NAME is [A-Za-z0-9_.-]+, VALUE is escaped
 *                                    (\\ \n \t and \xHH for other bytes
 *                                    outside printable ASCII), so every
 *                                    component is one grep-able line
 *   payload-bytes <decimal>          exact length of what follows the header
 *   payload-xxh3-64 <16 hex>         XXH3-64 of the payload
 *   header-xxh3-64 <16 hex>          XXH3-64 of every header byte before this line
 *   <payload>
 * A reader that finds a bad magic, format, key, header checksum, length or
 * payload checksum treats the entry as a miss, removes the file and counts
 * it (stats.corrupt_removed); it never returns bytes that failed a check.
 *
 * Concurrency: many processes (and threads: a kc_disk is thread-safe, except
 * kc_disk_set_warn, which belongs before sharing it) may use one directory at
 * once without locks; a child process opens its own store rather than use
 * one inherited through fork. A put writes a temporary file in the
 * entry's subdirectory and publishes it with rename(2), so a reader opens
 * either nothing or a complete entry; an eviction that unlinks a file a
 * reader has open does not disturb the read. No fsync: a crash may leave a
 * published entry torn on some filesystems, and the checksums turn that into
 * a miss.
 *
 * Recency and size bound: a hit sets the entry's mtime to now (futimens);
 * eviction removes the least recently used entries (oldest mtime, ties by
 * key) first. mtime, not atime, because atime is often not updated
 * (noatime, relatime). The bound is the max_bytes given to open, else
 * $KILN_CACHE_MAX_BYTES (a number with an optional K, M, G or T suffix,
 * powers of 1024; 0 means the default), else 1 GiB; it counts whole files
 * (header + payload).
 * Open does not scan the directory (a warm load stays fast). Each handle
 * keeps an approximate total: the first put scans the directory (256
 * readdirs and a stat per entry) to learn the true total, then each put adds
 * its own file size; a put rescans when the estimate goes over the bound or
 * after every KC_DISK_RESCAN_EVERY puts (to see what other processes
 * added). A rescan over the bound evicts down to 90% of it, so rescans stay
 * rare; a file that moved since the scan (touched by a hit) is not evicted.
 * The bound can thus be exceeded by what other processes wrote since the
 * last rescan, never for long.
 *
 * Trust: entries are code that gets loaded and run, so the store follows
 * OpenSSH's rule: the directory (at open) and every entry (at read) must be
 * owned by the effective user or root and not writable by group or others.
 * A directory that fails is refused at open (a message naming it and the
 * problem); an entry that fails is a miss, counted (stats.untrusted) and
 * warned about, never removed. Writes go through a directory fd with
 * O_NOFOLLOW (openat / renameat): a symbolic link planted inside the tree
 * does not redirect them.
 *
 * Read-only stores and seeds: a directory that exists but cannot be written
 * (a read-only filesystem, no write permission), or one opened with
 * KC_DISK_READ_ONLY, is opened read-only: gets work (without touching or
 * removing anything), puts store nothing, kc_disk_note says why. Seeds
 * (kc_disk_add_seed) are such read-only layers searched, in order, after
 * the store's own directory: a deploy cache shipped in an image beside a
 * writable one.
 *
 * Errors follow src/: -1 (or NULL) with a kiln_status filled; a NULL store is
 * accepted everywhere and behaves like a disabled one. Cache trouble (a
 * corrupt file, a vanished entry, a full disk on put) never crashes; a get
 * reports an error only for bad arguments or out of memory. */
#ifndef KILN_SRC_CACHE_DISK_H
#define KILN_SRC_CACHE_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/common.h"

#include "cache_key.h"

#ifndef KC_COMPONENT_DEFINED
#define KC_COMPONENT_DEFINED
/* One readable key component ("kernel_ir", "dims", "triple", "cpu",
 * "features", "options", "kiln_version", "llvm_version"). */
typedef struct kc_component {
  const char *name, *value;
} kc_component;
#endif

#define KC_DISK_FORMAT 1
#define KC_DISK_DEFAULT_MAX_BYTES (1ull << 30)
#define KC_DISK_RESCAN_EVERY 64
#define KC_DISK_MAX_HEADER (16u << 20) /* longest header a reader accepts */

typedef struct kc_disk kc_disk;

/* kc_disk_open flags */
enum {
  KC_DISK_IGNORE_OFF = 1 << 0, /* open even when KILN_CACHE=off (`kiln cache` commands) */
  KC_DISK_READ_ONLY = 1 << 1,  /* never write: the directory must exist; no put, touch, removal */
};

/* kc_disk_get results */
enum {
  KC_DISK_ERROR = -1,
  KC_DISK_MISS = 0,
  KC_DISK_HIT = 1,
};

/* Called with a one-line message when something worth a warning happens
 * that no status reports (a corrupt entry found and removed, a rescan that
 * ran out of memory), from whichever thread used the store; msg lives for
 * the call. Without one, the store is silent. */
typedef void (*kc_disk_warn_fn)(void *user, const char *msg);

/* Open (and create) the store. dir: NULL for the default (see above);
 * max_bytes: 0 for the default. Returns an owned store (free with
 * kc_disk_close), disabled when KILN_CACHE=off, read-only when the directory
 * exists but cannot be written (kc_disk_note says so); NULL with st filled
 * when the directory cannot be found, created or read, fails the trust rule
 * (KILN_ERR_IO, naming it and the problem) or KILN_CACHE_MAX_BYTES is
 * malformed (KILN_ERR_INVALID_ARGUMENT). */
kc_disk *kc_disk_open(const char *dir, uint64_t max_bytes, unsigned flags, kiln_status *st);
/* A byte count as KILN_CACHE_MAX_BYTES (and KILN_CODE_MAX_BYTES) write it:
 * "123", "64K", "512M", "1G", "2T" (powers of 1024; an optional trailing B
 * or iB: "512MiB"). False for anything else or an overflow. */
bool kc_parse_bytes(const char *s, uint64_t *out);
void kc_disk_close(kc_disk *d); /* NULL is a no-op */

void kc_disk_set_warn(kc_disk *d, kc_disk_warn_fn fn, void *user);
bool kc_disk_enabled(const kc_disk *d);
const char *kc_disk_dir(const kc_disk *d); /* owned by d; NULL when disabled */
uint64_t kc_disk_max_bytes(const kc_disk *d);
bool kc_disk_read_only(const kc_disk *d);
/* Why the store is read-only, or "" (owned by d; "" for NULL). */
const char *kc_disk_note(const kc_disk *d);

/* Add dir as a read-only layer searched after d's own directory (and the
 * seeds added before it). Not thread-safe: before the store is shared.
 * 0, or -1 with st filled (d disabled, dir missing, not a directory, or
 * failing the trust rule: the message names it). */
int kc_disk_add_seed(kc_disk *d, const char *dir, kiln_status *st);
int kc_disk_nseeds(const kc_disk *d);
const char *kc_disk_seed_dir(const kc_disk *d, int i); /* owned by d; NULL out of range */

/* Look key up. On a hit returns KC_DISK_HIT with *payload a malloc'd buffer
 * the caller frees (non-NULL even for an empty payload) and *len its length,
 * and marks the entry used. A miss (no entry, disabled store, corrupt entry:
 * removed) returns KC_DISK_MISS with *payload NULL and *len 0;
 * KC_DISK_ERROR with st filled for bad arguments or out of memory. */
int kc_disk_get(kc_disk *d, kc_key key, void **payload, size_t *len, kiln_status *st);

/* Store payload[len] under key with the n components c (names
 * [A-Za-z0-9_.-]+, values any NUL-terminated text). Replaces an existing
 * entry. Returns 0 when stored, when disabled, and when the entry alone is
 * larger than the bound (then nothing is written: stats.too_big); -1 with st
 * filled for bad arguments or when the entry could not be written
 * (KILN_ERR_IO: full disk, directory removed...; no temporary file is left).
 * May evict least recently used entries afterwards (never this one). */
int kc_disk_put(kc_disk *d, kc_key key, const kc_component *c, int n, const void *payload,
                size_t len, kiln_status *st);

/* Store the bytes of a whole entry file (header and payload, as a put
 * writes them, e.g. from a bundle) under key, through the same temporary
 * file and rename as a put. The caller has checked them (kc_entry_parse);
 * a get checks them again. 0 (also when disabled or read-only: nothing
 * written), or -1 with st (KILN_ERR_IO naming the entry and the step). */
int kc_disk_put_file(kc_disk *d, kc_key key, const void *bytes, size_t len, kiln_status *st);

/* ---- other files in the tree (DIR/libs: compiled C kernel libraries) ---- */
/* Publish a[len] as DIR/SUB/NAME (SUB created 0700 when missing) through a
 * temporary file and renameat on SUB's fd; no symbolic link is followed.
 * 0, or -1 with errno. */
int kc_tree_publish(const char *dir, const char *sub, const char *name, const void *a,
                    size_t len);
/* DIR/SUB/NAME in full, malloc'd with a NUL after the last byte (*len does
 * not count it), when it is a regular file that passes the trust rule,
 * reached without following a link; NULL otherwise (why[whylen], when
 * given, then says why for an untrusted file, else ""). */
char *kc_tree_read(const char *dir, const char *sub, const char *name, size_t *len,
                   char *why, size_t whylen);

/* ---- listing and maintenance (`kiln cache ls | stats | clear | prune | explain`) ---- */

typedef struct kc_disk_entry {
  kc_key key;
  const char *path;          /* the entry's file */
  uint64_t file_bytes;       /* whole file */
  uint64_t payload_bytes;    /* 0 unless components were read */
  int64_t last_use_ns;       /* mtime, ns since the epoch */
  int ncomponents;           /* 0 unless components were read */
  const kc_component *components; /* unescaped; valid during the callback */
} kc_disk_entry;

/* Return nonzero to stop the listing (kc_disk_list then returns 0). */
typedef int (*kc_disk_visit_fn)(const kc_disk_entry *e, void *user);

/* Visit every entry, least recently used first (ties by key). With
 * with_components the header of each entry is read and checked (its
 * checksum, not the payload's): an entry whose header is bad is removed,
 * counted and skipped, and so is one that vanished since the scan. Returns 0,
 * or -1 with st filled (out of memory). A disabled store lists nothing. */
int kc_disk_list(kc_disk *d, bool with_components, kc_disk_visit_fn fn, void *user,
                 kiln_status *st);

typedef struct kc_disk_stats {
  bool enabled;
  const char *dir;      /* owned by the store; NULL when disabled */
  uint64_t max_bytes;
  /* from a scan of the directory at the time of the call */
  uint64_t entries, bytes;
  /* this handle's counters since open */
  uint64_t hits, misses, puts, too_big, put_errors;
  uint64_t corrupt_removed; /* bad entries found (and removed) by gets and listings */
  uint64_t seed_hits;       /* hits served by a seed layer (counted in hits too) */
  uint64_t untrusted;       /* entries refused by the trust rule (not removed) */
  uint64_t evicted;         /* entries removed to keep the bound (not by prune/clear) */
  uint64_t rescans;
} kc_disk_stats;

int kc_disk_stats_get(kc_disk *d, kc_disk_stats *out, kiln_status *st);

/* Remove least recently used entries until the directory holds at most
 * max_bytes. *removed / *removed_bytes (each may be NULL) get what was
 * removed. kc_disk_clear removes every entry (and stale temporary files);
 * files kiln did not name are left alone. Both return 0 or -1 with st. */
int kc_disk_prune(kc_disk *d, uint64_t max_bytes, uint64_t *removed, uint64_t *removed_bytes,
                  kiln_status *st);
int kc_disk_clear(kc_disk *d, uint64_t *removed, kiln_status *st);

/* Read every entry in full and remove those that fail a check; *bad (may be
 * NULL) gets how many. For `kiln cache stats --verify` and tests. */
int kc_disk_verify(kc_disk *d, uint64_t *bad, kiln_status *st);

/* ---- entry bytes (for `kiln cache import`) ---- */
/* Parse the header of an entry file's bytes buf[len] (magic, format, field
 * syntax, header checksum; not the payload): 0 with *key and its components
 * (*comps[*ncomps], malloc'd: free with kc_components_free), or -1 with why
 * filled. */
int kc_entry_parse(const void *buf, size_t len, kc_key *key, kc_component **comps, int *ncomps,
                   char *why, size_t whylen);
void kc_components_free(kc_component *c, int n);
/* The bytes of key's whole entry (header, then payload[len]) exactly as a
 * put writes the file: *out malloc'd (caller frees), *outlen its length.
 * For stores that keep entries elsewhere (cache_remote.h). 0, or -1 with st
 * (a bad component, out of memory). */
int kc_entry_encode(kc_key key, const kc_component *c, int n, const void *payload, size_t len,
                    void **out, size_t *outlen, kiln_status *st);
/* Every check a get makes on the entry bytes buf[len] expected to hold key:
 * the header (kc_entry_parse's checks), the key, the exact payload length
 * and the payload checksum. 0 with the payload at buf + *payload_off,
 * *payload_len bytes; -1 with why filled. */
int kc_entry_check(const void *buf, size_t len, kc_key key, size_t *payload_off,
                   size_t *payload_len, char *why, size_t whylen);

/* ---- keys ---- */
/* 32 lowercase hex digits plus NUL into out. */
void kc_key_hex(kc_key key, char out[33]);
/* Parse 32 hex digits (either case); false if s is anything else. */
bool kc_key_parse(const char *s, kc_key *key);
/* From / to the 16 canonical (big-endian) bytes of an XXH128 hash
 * (XXH128_canonical_t; rt_cache_key.b): bytes 0-7 are hi, 8-15 lo, so the
 * hex of both is the same text. */
kc_key kc_key_from_bytes(const uint8_t b[16]);
void kc_key_to_bytes(kc_key key, uint8_t b[16]);
/* Path of key's file in the store, malloc'd (caller frees); NULL when disabled
 * or out of memory. */
char *kc_disk_entry_path(const kc_disk *d, kc_key key);

#endif
