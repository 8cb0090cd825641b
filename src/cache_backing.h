/* cache_backing.h - internal to src/: plug the disk cache, and the remote
 * cache after it, under a context's memory cache (cache_backing.c). */
#ifndef KILN_SRC_CACHE_BACKING_H
#define KILN_SRC_CACHE_BACKING_H

#include <stddef.h>

#include "cache_disk.h"
#include "cache_mem.h"
#include "log.h"

/* Open the disk cache from the environment (with the read-only layers of
 * KILN_CACHE_SEED_DIR, colon-separated) and, when it is usable, make it
 * mem's backing store. Returns the store (close it with kc_disk_close after
 * the memory cache is freed; NULL when it could not be opened), writes a
 * one-line description of the outcome into why, and into warn what a user
 * should fix ("" when nothing: KILN_CACHE=off is a choice, not a problem),
 * which also goes to log as a warning (log.h; the disk cache's later
 * warnings too). */
kc_disk *rt_cache_backing_open(rt_cache_mem *mem, rt_log *log, char *why, size_t whylen, char *warn,
                               size_t warnlen);
/* Add the colon-separated seed directories of list to d; the problems,
 * "; "-separated, are appended to warn. */
void rt_cache_backing_add_seeds(kc_disk *d, const char *list, char *warn, size_t warnlen);
/* The one-line description of d (kiln_context_cache_status) into buf. */
void rt_cache_backing_describe(const kc_disk *d, const char *origin, char *buf, size_t cap);
/* Whether KILN_QUIET asks the library not to print warnings on stderr. */
bool rt_quiet(void);
/* A kc_disk_warn_fn that logs MSG as a warning to user, an rt_log (NULL:
 * stderr at the environment's level). */
void rt_cache_backing_warn(void *user, const char *msg);
/* One entry of d under key, for caches beside the kernel cache (the GPU
 * code of device models): get returns 0 on a hit with *obj malloc'd (the
 * caller frees it), -1 on a miss or when d is NULL or disabled; put stores
 * obj with the key's parts as the entry's components (best effort: a
 * failure only means a later miss). */
int rt_cache_backing_get(kc_disk *d, const kc_key *key, void **obj, size_t *len);
void rt_cache_backing_put(kc_disk *d, const kc_key *key, const rt_key_parts *parts,
                          const void *obj, size_t len);
/* Make d (enabled, borrowed: it must outlive every compile that may still
 * use it) mem's backing store; NULL or a disabled d detaches the store. */
void rt_cache_backing_attach(rt_cache_mem *mem, kc_disk *d);

/* The chain of stores under a memory cache: the disk (NULL or disabled:
 * none), then the remote tier (NULL: none). A get tries the disk, then the
 * remote, whose hit is also written to the disk; a put writes the disk and
 * queues the same entry bytes for the remote (kr_remote_publish). A chain
 * is never changed once attached, and must outlive every get that may use
 * it: the context keeps each one (linked through prev) until it is freed. */
struct kr_remote;
typedef struct rt_tiers {
  kc_disk *disk;
  struct kr_remote *remote;
  struct rt_tiers *prev;
} rt_tiers;
/* Make t mem's backing store (a chain with neither store detaches it). */
void rt_cache_backing_attach_tiers(rt_cache_mem *mem, rt_tiers *t);
/* rt_cache_backing_get / _put through the chain d (NULL: none), then r
 * (NULL: none), for caches beside the kernel cache (device code): get
 * returns 0 with *obj malloc'd from the disk, else 1 with it from the
 * remote (then written to the disk too), -1 on a miss; put stores in d and queues the
 * entry for r. */
int rt_cache_tiers_get(kc_disk *d, struct kr_remote *r, const kc_key *key, void **obj,
                       size_t *len);
void rt_cache_tiers_put(kc_disk *d, struct kr_remote *r, const kc_key *key,
                        const rt_key_parts *parts, const void *obj, size_t len);

#endif
