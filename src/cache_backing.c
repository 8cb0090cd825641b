/* cache_backing.c - the disk cache (cache_disk.h) as the second level of a
 * context's memory cache (cache_mem.h): a memory miss looks for the kernel's
 * object on disk before compiling it, and a fresh compile is stored there
 * with every key component in readable form. With a remote cache
 * (cache_remote.h) the chain is memory -> disk -> remote -> compile: a
 * remote hit is written to the disk too, a compile is published to the
 * remote in the background.
 *
 * The store is opened from the environment when the context is created
 * (KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
 * KILN_CACHE=off disables it; KILN_CACHE_MAX_BYTES bounds it). A directory
 * that cannot be used leaves the context without a disk cache: kiln still
 * works, it only compiles more; the reason is kept for `kiln run --stats`
 * and kiln_context_cache_status / _warning, and printed once on stderr
 * (unless KILN_QUIET is set): a mistyped setting must not pass silently.
 * KILN_CACHE_SEED_DIR names read-only layers (a deploy cache in an image)
 * read after the writable directory.
 * A failed write is not an error for the model being compiled either.
 * kiln_context_set_cache_dir (context.c) swaps the store later through
 * rt_cache_backing_attach. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_backing.h"
#include "cache_disk.h"
#include "cache_remote.h"

static void fill_components(const rt_key_parts *parts, kc_component comps[RT_KEY_NPARTS]) {
  for (int i = 0; i < RT_KEY_NPARTS; i++) {
    comps[i].name = rt_key_part_name(i);
    const char *v = rt_key_part(parts, i);
    comps[i].value = v ? v : "";
  }
}

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
  fill_components(parts, comps);
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

int rt_cache_tiers_get(kc_disk *d, struct kr_remote *r, const kc_key *key, void **obj,
                       size_t *len) {
  if (rt_cache_backing_get(d, key, obj, len) == 0) return 0;
  void *e = NULL;
  size_t elen = 0, off = 0, plen = 0;
  if (kr_remote_get(r, *key, &e, &elen, &off, &plen) != KR_HIT) return -1;
  if (kc_disk_enabled(d)) kc_disk_put_file(d, *key, e, elen, NULL); /* best effort */
  memmove(e, (char *)e + off, plen);
  *obj = e;
  *len = plen;
  return 1;
}

void rt_cache_tiers_put(kc_disk *d, struct kr_remote *r, const kc_key *key,
                        const rt_key_parts *parts, const void *obj, size_t len) {
  rt_cache_backing_put(d, key, parts, obj, len);
  if (!r) return;
  kc_component comps[RT_KEY_NPARTS];
  fill_components(parts, comps);
  void *e = NULL;
  size_t elen = 0;
  if (kc_entry_encode(*key, comps, RT_KEY_NPARTS, obj, len, &e, &elen, NULL) == 0)
    kr_remote_publish(r, *key, e, elen);
  free(e);
}

static int tiers_get(void *ud, const kc_key *key, const rt_key_parts *parts, void **obj,
                     size_t *len) {
  (void)parts;
  rt_tiers *t = ud;
  return rt_cache_tiers_get(t->disk, t->remote, key, obj, len);
}

static void tiers_put(void *ud, const kc_key *key, const rt_key_parts *parts, const void *obj,
                      size_t len) {
  rt_tiers *t = ud;
  rt_cache_tiers_put(t->disk, t->remote, key, parts, obj, len);
}

void rt_cache_backing_attach_tiers(rt_cache_mem *mem, rt_tiers *t) {
  if (!t || !t->remote) {
    rt_cache_backing_attach(mem, t ? t->disk : NULL);
    return;
  }
  rt_cache_backing b = {t, tiers_get, tiers_put};
  rt_cache_mem_set_backing(mem, &b);
}

bool rt_quiet(void) {
  const char *v = getenv("KILN_QUIET");
  return v && *v && strcmp(v, "0") != 0;
}

void rt_cache_backing_warn(void *user, const char *msg) {
  rt_logf(user, KILN_LOG_WARN, "%s", msg);
}

static void append(char *buf, size_t cap, const char *sep, const char *text) {
  size_t n = strlen(buf);
  if (n + 1 < cap) snprintf(buf + n, cap - n, "%s%s", n ? sep : "", text);
}

void rt_cache_backing_add_seeds(kc_disk *d, const char *list, char *warn, size_t warnlen) {
  if (!list || !*list) return;
  char *copy = strdup(list);
  if (!copy) return;
  kiln_status *st = kiln_status_new();
  char *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    if (kc_disk_add_seed(d, dir, st) == 0) continue;
    char m[1024];
    snprintf(m, sizeof m, "KILN_CACHE_SEED_DIR: %s (not used)", kiln_status_message(st));
    append(warn, warnlen, "; ", m);
  }
  kiln_status_free(st);
  free(copy);
}

void rt_cache_backing_describe(const kc_disk *d, const char *origin, char *buf, size_t cap) {
  snprintf(buf, cap, "disk cache: %s%s%s", kc_disk_dir(d), origin ? " " : "", origin ? origin : "");
  if (kc_disk_read_only(d)) append(buf, cap, ", ", "read-only");
  for (int i = 0; i < kc_disk_nseeds(d); i++) {
    char s[600];
    snprintf(s, sizeof s, "%s%s", i ? ":" : "seeds ", kc_disk_seed_dir(d, i));
    append(buf, cap, i ? "" : "; ", s);
  }
}

kc_disk *rt_cache_backing_open(rt_cache_mem *mem, rt_log *log, char *why, size_t whylen, char *warn,
                               size_t warnlen) {
  kiln_status *st = kiln_status_new();
  kc_disk *d = kc_disk_open(NULL, 0, 0, st);
  warn[0] = 0;
  if (!d) {
    snprintf(why, whylen, "disk cache unavailable: %s", kiln_status_message(st));
    snprintf(warn, warnlen, "the disk cache is off, every kernel compiles: %s",
             kiln_status_message(st));
  } else if (!kc_disk_enabled(d)) {
    snprintf(why, whylen, "disk cache off (KILN_CACHE)");
  } else {
    if (kc_disk_read_only(d)) snprintf(warn, warnlen, "disk cache %s", kc_disk_note(d));
    rt_cache_backing_add_seeds(d, getenv("KILN_CACHE_SEED_DIR"), warn, warnlen);
    rt_cache_backing_describe(d, NULL, why, whylen);
    kc_disk_set_warn(d, rt_cache_backing_warn, log);
    rt_cache_backing_attach(mem, d);
  }
  if (warn[0]) rt_cache_backing_warn(log, warn);
  kiln_status_free(st);
  return d;
}
