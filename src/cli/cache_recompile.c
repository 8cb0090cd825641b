/* cache_recompile.c - `kiln cache verify --recompile [--sample N]`: compile
 * the kernel each entry records (its kernel_ir component) again, as
 * kiln_model_compile would on this host, and compare the object byte for
 * byte with the stored one.
 *
 * Why: an entry's key hashes the compile's inputs and its checksums cover
 * its bytes, so an entry whose object was replaced (by hand, or in a bundle
 * imported with --trust-unsigned) passes every other check. Code generation
 * is deterministic for one key (same kernel text, triple, CPU, features,
 * options, kiln and LLVM), so a fresh compile must give the same bytes.
 * Entries whose key this host cannot reproduce (another target, kiln or
 * LLVM version, device code) and kernels that need a custom library are
 * skipped and counted, never reported as good. An entry that differs is
 * removed (unless the store is read-only) and makes the exit status 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../cache_disk.h"
#include "../cache_mem.h"
#include "../rt.h"
#include "cache_cli.h"
#include "cli.h"

typedef struct rc_item {
  kc_key key;
  char *kernel; /* the kernel_ir component, malloc'd; NULL when absent */
} rc_item;

typedef struct rc_list {
  rc_item *v;
  size_t n, cap;
  bool oom;
} rc_list;

static int collect(const kc_disk_entry *e, void *user) {
  rc_list *l = user;
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 64;
    rc_item *nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) return (l->oom = true);
    l->v = nv;
    l->cap = nc;
  }
  rc_item *it = &l->v[l->n++];
  it->key = e->key;
  it->kernel = NULL;
  for (int i = 0; i < e->ncomponents; i++)
    if (!strcmp(e->components[i].name, "kernel_ir") &&
        !(it->kernel = strdup(e->components[i].value)))
      return (l->oom = true);
  return 0;
}

/* The object a compile hands its backing store. */
typedef struct rc_sink {
  kc_key key;
  void *obj;
  size_t len;
  bool got;
} rc_sink;

static void capture(void *ud, const kc_key *key, const rt_key_parts *parts, const void *obj,
                    size_t len) {
  (void)parts;
  rc_sink *s = ud;
  free(s->obj);
  s->obj = malloc(len ? len : 1);
  if (s->obj) memcpy(s->obj, obj, len);
  s->len = len;
  s->key = *key;
  s->got = s->obj != NULL;
}

static bool key_eq(kc_key a, kc_key b) { return a.lo == b.lo && a.hi == b.hi; }

int cli_cache_recompile(const cache_opts *o, kc_disk *d) {
  long sample = -1;
  if (o->sample) {
    char *end;
    sample = strtol(o->sample, &end, 10);
    if (*o->sample < '0' || *o->sample > '9' || *end || sample <= 0) {
      fprintf(stderr, "kiln cache verify: --sample expects a positive count, got '%s'\n",
              o->sample);
      return CLI_USAGE;
    }
  }
  kiln_status *st = kiln_status_new();
  rc_list l = {0};
  int rc = CLI_OK;
  if (kc_disk_list(d, true, collect, &l, st) < 0 || l.oom) {
    fprintf(stderr, "kiln cache verify: %s\n", l.oom ? "out of memory" : kiln_status_message(st));
    rc = CLI_ERR;
    goto out;
  }
  size_t take = sample > 0 && (size_t)sample < l.n ? (size_t)sample : l.n;
  if (take < l.n) { /* a random sample: the first `take` of a partial shuffle */
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    for (size_t i = 0; i < take; i++) {
      size_t j = i + (size_t)rand() % (l.n - i);
      rc_item t = l.v[i];
      l.v[i] = l.v[j];
      l.v[j] = t;
    }
  }
  /* the runtime's target and options, with no store of the context's own */
  setenv("KILN_CACHE", "off", 1);
  kiln_context *ctx = kiln_context_new(st);
  if (!ctx) {
    fprintf(stderr, "kiln cache verify: %s\n", kiln_status_message(st));
    rc = CLI_ERR;
    goto out;
  }
  rt_cache_mem *mem = rt_context_cache(ctx);
  rc_sink sink = {0};
  rt_cache_backing b = {&sink, NULL, capture};
  rt_cache_mem_set_backing(mem, &b);
  uint64_t same = 0, differ = 0, other = 0, failed = 0, gone = 0;
  for (size_t i = 0; i < take; i++) {
    rc_item *it = &l.v[i];
    char hex[33];
    kc_key_hex(it->key, hex);
    rt_key_parts parts;
    kc_key k;
    if (!it->kernel) {
      other++;
      continue;
    }
    rt_cache_mem_key_parts(mem, it->kernel, &parts);
    rt_key_compute(&parts, &k);
    if (!key_eq(k, it->key)) { /* built elsewhere: this host cannot reproduce it */
      other++;
      continue;
    }
    void *stored = NULL;
    size_t slen = 0;
    if (kc_disk_get(d, it->key, &stored, &slen, st) != KC_DISK_HIT) {
      gone++; /* evicted meanwhile, or corrupt (then removed and warned about) */
      continue;
    }
    sink.got = false;
    rt_kentry *e = NULL;
    jit_kernel_fn fn = NULL;
    char err[1024] = "";
    if (rt_cache_mem_get(mem, it->kernel, &e, &fn, err, sizeof err) < 0 || !sink.got) {
      printf("  %s: cannot recompile: %s\n", hex, err[0] ? err : "no object produced");
      failed++;
    } else if (sink.len == slen && !memcmp(sink.obj, stored, slen) && key_eq(sink.key, it->key)) {
      same++;
    } else {
      differ++;
      char *path = kc_disk_entry_path(d, it->key);
      bool removed = !kc_disk_read_only(d) && path && unlink(path) == 0;
      printf("  %s: DIFFERS: the stored object (%zu bytes) is not what its kernel compiles to "
             "(%zu bytes): a forged or damaged entry; %s\n",
             hex, slen, sink.len, removed ? "removed" : "remove it (read-only store: left)");
      free(path);
    }
    rt_cache_mem_release(mem, e);
    free(stored);
  }
  rt_cache_mem_set_backing(mem, NULL);
  free(sink.obj);
  kiln_context_free(ctx);
  printf("recompiled %llu of %zu entr%s in %s%s: %llu identical, %llu differ%s\n",
         (unsigned long long)(same + differ + failed), l.n, l.n == 1 ? "y" : "ies",
         kc_disk_dir(d), take < l.n ? " (a random sample)" : "", (unsigned long long)same,
         (unsigned long long)differ, differ ? " (removed)" : "");
  if (other)
    printf("skipped %llu built for another target, kiln or LLVM version (not reproducible "
           "here)\n",
           (unsigned long long)other);
  if (failed)
    printf("%llu could not be recompiled (a custom kernel library this command does not "
           "load?)\n",
           (unsigned long long)failed);
  if (gone) printf("%llu vanished or failed the store's checks while verifying\n",
                   (unsigned long long)gone);
  if (differ) rc = CLI_ERR;
out:
  for (size_t i = 0; i < l.n; i++) free(l.v[i].kernel);
  free(l.v);
  kiln_status_free(st);
  return rc;
}
