/* cache_remote.c - the `kiln cache` commands of the remote (fleet) cache on
 * Redis (src/cache_remote.h): push (local disk -> server), pull (server ->
 * local disk), ls --remote, stats --remote; warm --remote lives with warm
 * (cache.c) and opens its server here.
 *
 * The server: --remote=URL, else KILN_CACHE_REMOTE; the namespace:
 * KILN_CACHE_REMOTE_NS (default kiln). These commands wait longer than the
 * runtime (KILN_CACHE_REMOTE_TIMEOUT_MS, else 2 s per command): a deploy
 * step over a real network should not give up after 50 ms. Every entry
 * pushed or pulled is checked in full on the way (kc_entry_check); a bad
 * one is skipped (and, on the server, deleted), counted and reported. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cache_remote.h"
#include "cache_cli.h"
#include "cli.h"

#define CLI_REMOTE_TIMEOUT_MS 2000

kr_remote *cli_remote_open(const cache_opts *o, const char *cmd) {
  const char *url = o->remote_url && *o->remote_url ? o->remote_url : getenv("KILN_CACHE_REMOTE");
  if (!url || !*url) {
    fprintf(stderr,
            "kiln cache %s: no remote cache: give --remote=redis://HOST:PORT/DB or set "
            "KILN_CACHE_REMOTE\n",
            cmd);
    return NULL;
  }
  const char *t = getenv("KILN_CACHE_REMOTE_TIMEOUT_MS");
  kr_options opt = {.timeout_ms = t && *t ? 0 : CLI_REMOTE_TIMEOUT_MS};
  kiln_status *st = kiln_status_new();
  kr_remote *r = kr_remote_new(url, &opt, st);
  if (!r) fprintf(stderr, "kiln cache %s: %s\n", cmd, kiln_status_message(st));
  kiln_status_free(st);
  return r;
}

/* The whole file at path, malloc'd; NULL with errno. */
static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += k;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    errno = EIO;
    return NULL;
  }
  *len = n;
  return buf;
}

/* ---- push ---- */

typedef struct push_state {
  kr_remote *r;
  kiln_status *st;
  uint64_t pushed, present, bad, bytes;
  int failed; /* a server error: stop */
} push_state;

static int push_visit(const kc_disk_entry *e, void *user) {
  push_state *p = user;
  char hex[33], why[512];
  kc_key_hex(e->key, hex);
  int ex = kr_remote_exists(p->r, e->key, p->st);
  if (ex < 0) {
    p->failed = 1;
    return 1;
  }
  if (ex == 1) {
    p->present++;
    return 0;
  }
  size_t len = 0, off, plen;
  void *buf = read_file(e->path, &len);
  if (!buf) {
    fprintf(stderr, "kiln cache push: %s: %s (skipped)\n", e->path, strerror(errno));
    p->bad++;
    return 0;
  }
  if (kc_entry_check(buf, len, e->key, &off, &plen, why, sizeof why) != 0) {
    fprintf(stderr, "kiln cache push: entry %s is bad (%s): not pushed (kiln cache verify "
                    "removes it)\n", hex, why);
    p->bad++;
  } else if (kr_remote_put_now(p->r, e->key, buf, len, p->st) != 0) {
    p->failed = 1;
  } else {
    p->pushed++;
    p->bytes += len;
  }
  free(buf);
  return p->failed;
}

int cli_cache_push(const cache_opts *o, kc_disk *d) {
  kr_remote *r = cli_remote_open(o, "push");
  if (!r) return CLI_ERR;
  push_state p = {.r = r, .st = kiln_status_new()};
  int rc = CLI_OK;
  if (kc_disk_list(d, false, push_visit, &p, p.st) < 0 || p.failed) {
    fprintf(stderr, "kiln cache push: %s\n", kiln_status_message(p.st));
    rc = CLI_ERR;
  }
  char b[32];
  printf("%s -> %s: %llu entr%s pushed (%s), %llu already there, %llu bad and skipped\n",
         kc_disk_dir(d), kr_remote_describe(r), (unsigned long long)p.pushed,
         p.pushed == 1 ? "y" : "ies", cli_human_bytes(b, sizeof b, p.bytes),
         (unsigned long long)p.present, (unsigned long long)p.bad);
  kiln_status_free(p.st);
  kr_remote_free(r);
  return rc;
}

/* ---- pull ---- */

int cli_cache_pull(const cache_opts *o, kc_disk *d) {
  if (kc_disk_read_only(d)) {
    fprintf(stderr, "kiln cache pull: cannot store kernels in %s: %s\n", kc_disk_dir(d),
            kc_disk_note(d));
    return CLI_ERR;
  }
  kr_remote *r = cli_remote_open(o, "pull");
  if (!r) return CLI_ERR;
  kiln_status *st = kiln_status_new();
  kr_entry_info *v = NULL;
  size_t n = 0;
  int rc = CLI_OK;
  uint64_t pulled = 0, present = 0, bad = 0, bytes = 0;
  if (kr_remote_list(r, &v, &n, st) < 0) {
    fprintf(stderr, "kiln cache pull: %s\n", kiln_status_message(st));
    rc = CLI_ERR;
  }
  for (size_t i = 0; rc == CLI_OK && i < n; i++) {
    void *obj = NULL, *e = NULL;
    size_t len = 0, off, plen;
    int g = kc_disk_get(d, v[i].key, &obj, &len, st); /* full check; a bad one is removed */
    free(obj);
    if (g == KC_DISK_HIT) {
      present++;
      continue;
    }
    kr_stats s0, s1;
    kr_remote_stats(r, &s0);
    if (kr_remote_get(r, v[i].key, &e, &len, &off, &plen) != KR_HIT) {
      kr_remote_stats(r, &s1);
      if (s1.corrupt > s0.corrupt) {
        bad++; /* warned about and deleted by the get */
        continue;
      }
      if (s1.errors > s0.errors) {
        fprintf(stderr, "kiln cache pull: the server stopped answering\n");
        rc = CLI_ERR;
      }
      continue; /* evicted since the listing */
    }
    if (kc_disk_put_file(d, v[i].key, e, len, st) != 0) {
      fprintf(stderr, "kiln cache pull: %s\n", kiln_status_message(st));
      rc = CLI_ERR;
    } else {
      pulled++;
      bytes += len;
    }
    free(e);
  }
  char b[32];
  printf("%s -> %s: %llu entr%s pulled (%s), %llu already here, %llu bad (removed from the "
         "server)\n",
         kr_remote_describe(r), kc_disk_dir(d), (unsigned long long)pulled,
         pulled == 1 ? "y" : "ies", cli_human_bytes(b, sizeof b, bytes),
         (unsigned long long)present, (unsigned long long)bad);
  free(v);
  kiln_status_free(st);
  kr_remote_free(r);
  return rc;
}

/* ---- ls --remote, stats --remote ---- */

int cli_cache_ls_remote(const cache_opts *o) {
  kr_remote *r = cli_remote_open(o, "ls");
  if (!r) return CLI_ERR;
  kiln_status *st = kiln_status_new();
  kr_entry_info *v = NULL;
  size_t n = 0;
  int rc = CLI_OK;
  if (kr_remote_list(r, &v, &n, st) < 0) {
    fprintf(stderr, "kiln cache ls: %s\n", kiln_status_message(st));
    rc = CLI_ERR;
  } else {
    uint64_t total = 0;
    if (n) printf("%-32s  %10s\n", "KEY", "SIZE");
    for (size_t i = 0; i < n; i++) {
      char hex[33], b[32];
      kc_key_hex(v[i].key, hex);
      printf("%s  %10s\n", hex, cli_human_bytes(b, sizeof b, v[i].bytes));
      total += v[i].bytes;
    }
    char b[32];
    printf("%zu entr%s, %s in %s\n", n, n == 1 ? "y" : "ies",
           cli_human_bytes(b, sizeof b, total), kr_remote_describe(r));
  }
  free(v);
  kiln_status_free(st);
  kr_remote_free(r);
  return rc;
}

int cli_cache_stats_remote(const cache_opts *o) {
  kr_remote *r = cli_remote_open(o, "stats");
  if (!r) return CLI_ERR;
  kiln_status *st = kiln_status_new();
  static const char *const names[] = {"redis_version", "used_memory_human", "maxmemory_human",
                                      "maxmemory_policy", "evicted_keys"};
  char vals[5][128];
  kr_entry_info *v = NULL;
  size_t n = 0;
  int rc = CLI_OK;
  printf("server:    %s\n", kr_remote_describe(r));
  if (kr_remote_info(r, names, 5, vals, st) < 0 || kr_remote_list(r, &v, &n, st) < 0) {
    printf("status:    unreachable: %s\n", kiln_status_message(st));
    fprintf(stderr, "kiln cache stats: %s\n", kiln_status_message(st));
    rc = CLI_ERR;
  } else {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += v[i].bytes;
    char b[32];
    printf("entries:   %zu (%s) under %s:kc%d:*\n", n, cli_human_bytes(b, sizeof b, total),
           kr_remote_ns(r), KC_DISK_FORMAT);
    printf("redis:     %s, memory %s of %s, policy %s, %s keys evicted\n", vals[0], vals[1],
           strcmp(vals[2], "0B") == 0 ? "no limit" : vals[2], vals[3], vals[4]);
    if (strcmp(vals[3], "noeviction") == 0)
      printf("note:      maxmemory-policy noeviction: a full server refuses new kernels "
             "(publishing fails; lookups still work); allkeys-lru keeps the most used\n");
  }
  const char *t = getenv("KILN_CACHE_REMOTE_TIMEOUT_MS");
  printf("runtime:   KILN_CACHE_REMOTE %s; timeout %s ms per command%s\n",
         getenv("KILN_CACHE_REMOTE") ? "set" : "not set (the runtime uses no remote cache)",
         t && *t ? t : "50", t && *t ? " (KILN_CACHE_REMOTE_TIMEOUT_MS)" : " (default)");
  free(v);
  kiln_status_free(st);
  kr_remote_free(r);
  return rc;
}
