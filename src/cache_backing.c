/* cache_backing.c - the disk cache (cache_disk.h) as the second level of a
 * context's memory cache (cache_mem.h): a memory miss looks for the kernel's
 * object on disk before compiling it, and a fresh compile is stored there
 * with every key component in readable form.
 *
 * The store is opened from the environment when the context is created
 * (KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
 * KILN_CACHE=off disables it; KILN_CACHE_MAX_BYTES bounds it). A directory
 * that cannot be used leaves the context without a disk cache: kiln still
 * works, it only compiles more; the reason is kept for `kiln run --stats`.
 * A failed write is not an error for the model being compiled either.
 * kiln_context_set_cache_dir (context.c) swaps the store later through
 * rt_cache_backing_attach. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_backing.h"
#include "cache_disk.h"

int rt_cache_backing_get(kc_disk *d, const kc_key *key, void **obj, size_t *len) {
  *obj = NULL;
  *len = 0;
  if (!kc_disk_enabled(d)) return -1;
  return kc_disk_get(d, *key, obj, len, NULL) == KC_DISK_HIT ? 0 : -1;
}

void rt_cache_backing_put(kc_disk *d, const kc_key *key, const rt_key_parts *parts,
                          const void *obj, size_t len) {
  if (!kc_disk_enabled(d)) return;
  kc_component comps[RT_KEY_NPARTS];
  for (int i = 0; i < RT_KEY_NPARTS; i++) {
    comps[i].name = rt_key_part_name(i);
    const char *v = rt_key_part(parts, i);
    comps[i].value = v ? v : "";
  }
  kc_disk_put(d, *key, comps, RT_KEY_NPARTS, obj, len, NULL); /* best effort */
}

static int disk_get(void *ud, const kc_key *key, const rt_key_parts *parts, void **obj,
                    size_t *len) {
  (void)parts;
  return rt_cache_backing_get(ud, key, obj, len);
}

static void disk_put(void *ud, const kc_key *key, const rt_key_parts *parts, const void *obj,
                     size_t len) {
  rt_cache_backing_put(ud, key, parts, obj, len);
}

void rt_cache_backing_attach(rt_cache_mem *mem, kc_disk *d) {
  if (!kc_disk_enabled(d)) {
    rt_cache_mem_set_backing(mem, NULL);
    return;
  }
  rt_cache_backing b = {d, disk_get, disk_put};
  rt_cache_mem_set_backing(mem, &b);
}

kc_disk *rt_cache_backing_open(rt_cache_mem *mem, char *why, size_t whylen) {
  kiln_status *st = kiln_status_new();
  kc_disk *d = kc_disk_open(NULL, 0, 0, st);
  if (!d) {
    snprintf(why, whylen, "disk cache unavailable: %s", kiln_status_message(st));
  } else if (!kc_disk_enabled(d)) {
    snprintf(why, whylen, "disk cache off (KILN_CACHE)");
  } else {
    snprintf(why, whylen, "disk cache: %s", kc_disk_dir(d));
    rt_cache_backing_attach(mem, d);
  }
  kiln_status_free(st);
  return d;
}
