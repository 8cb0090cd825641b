/* cache_key.h - internal to src/: the kernel cache key, shared by the memory
 * cache (cache_mem.h) and the disk store (cache_disk.h). */
#ifndef KILN_SRC_CACHE_KEY_H
#define KILN_SRC_CACHE_KEY_H

#include <stdint.h>

/* XXH3-128 of a kernel's key components: lo / hi are XXH128_hash_t's
 * low64 / high64; printed hi then lo (XXH128's canonical order). */
typedef struct kc_key {
  uint64_t lo, hi;
} kc_key;

#endif
