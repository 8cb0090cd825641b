/* context_remote.c - a context's remote (fleet) kernel cache
 * (kiln_context_set_remote_cache, cache_remote.h): opened from
 * KILN_CACHE_REMOTE when the context is made, swapped by the API, chained
 * after the disk store under the memory cache (rt_tiers, cache_backing.h).
 *
 * Like the disk store, a replaced remote and every chain ever attached are
 * kept until the context is freed: a compile that copied the backing store
 * may still be using them. A context is never refused because of its
 * remote cache: a bad KILN_CACHE_REMOTE leaves it off, with a warning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_backing.h"
#include "cache_remote.h"
#include "rt.h"

/* Attach a new chain of the current disk store and remote. 0, or -1 when
 * out of memory (the old chain stays attached). */
int rt_context_reattach(kiln_context *ctx) {
  if (!ctx->remote) { /* the disk alone, as before any remote */
    rt_cache_backing_attach(ctx->kcache, ctx->disk);
    return 0;
  }
  rt_tiers *t = calloc(1, sizeof *t);
  if (!t) return -1;
  t->disk = kc_disk_enabled(ctx->disk) ? ctx->disk : NULL;
  t->remote = ctx->remote;
  t->prev = ctx->tiers;
  ctx->tiers = t;
  rt_cache_backing_attach_tiers(ctx->kcache, t);
  return 0;
}

static void describe(kiln_context *ctx, const char *origin) {
  if (ctx->remote)
    snprintf(ctx->remote_status, sizeof ctx->remote_status, "remote cache: %s%s",
             kr_remote_describe(ctx->remote), origin);
  else snprintf(ctx->remote_status, sizeof ctx->remote_status, "remote cache off%s", origin);
}

void rt_context_remote_open(kiln_context *ctx) {
  const char *url = getenv("KILN_CACHE_REMOTE");
  if (!url || !*url) {
    describe(ctx, "");
    return;
  }
  kiln_status *st = kiln_status_new();
  kr_options o = {.log = &ctx->log, .place = ctx->place};
  ctx->remote = kr_remote_new(url, &o, st);
  if (!ctx->remote) {
    snprintf(ctx->remote_status, sizeof ctx->remote_status,
             "remote cache unavailable: KILN_CACHE_REMOTE: %s", kiln_status_message(st));
    char w[800];
    snprintf(w, sizeof w, "the remote kernel cache is off: KILN_CACHE_REMOTE: %s",
             kiln_status_message(st));
    rt_cache_backing_warn(&ctx->log, w);
  } else {
    describe(ctx, "");
    if (rt_context_reattach(ctx) != 0) {
      kr_remote_free(ctx->remote);
      ctx->remote = NULL;
      snprintf(ctx->remote_status, sizeof ctx->remote_status,
               "remote cache unavailable: out of memory");
    }
  }
  kiln_status_free(st);
}

void rt_context_remote_free(kiln_context *ctx) {
  kr_remote_free(ctx->remote);
  for (int i = 0; i < ctx->nremote_retired; i++) kr_remote_free(ctx->remote_retired[i]);
  free(ctx->remote_retired);
  while (ctx->tiers) {
    rt_tiers *p = ctx->tiers->prev;
    free(ctx->tiers);
    ctx->tiers = p;
  }
}

KILN_API int kiln_context_set_remote_cache(kiln_context *ctx, const char *url, const char *ns,
                                           int timeout_ms, kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_remote_cache: context is NULL");
  kr_remote *r = NULL;
  if (url) {
    kr_options o = {.ns = ns, .timeout_ms = timeout_ms, .log = &ctx->log, .place = ctx->place};
    if (!(r = kr_remote_new(url, &o, st))) return -1;
  }
  kr_remote **keep = realloc(ctx->remote_retired,
                             (size_t)(ctx->nremote_retired + 1) * sizeof *keep);
  if (!keep) {
    kr_remote_free(r);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "kiln_context_set_remote_cache: out of memory");
  }
  ctx->remote_retired = keep;
  kr_remote *old = ctx->remote;
  ctx->remote = r;
  if (rt_context_reattach(ctx) != 0) {
    ctx->remote = old;
    kr_remote_free(r);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "kiln_context_set_remote_cache: out of memory");
  }
  if (old) ctx->remote_retired[ctx->nremote_retired++] = old;
  describe(ctx, " (set by the API)");
  rt_ok(st);
  return 0;
}

KILN_API const char *kiln_context_remote_cache_status(const kiln_context *ctx) {
  return ctx ? ctx->remote_status : "";
}

KILN_API int kiln_context_flush_remote_cache(kiln_context *ctx, int64_t timeout_ms,
                                             kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_flush_remote_cache: context is NULL");
  rt_ok(st);
  return kr_remote_flush(ctx->remote, timeout_ms);
}

double rt_context_remote_counter(const kiln_context *ctx, kiln_counter c) {
  kr_stats s;
  kr_remote_stats(ctx->remote, &s);
  switch (c) {
  case KILN_COUNTER_REMOTE_HITS: return (double)s.hits;
  case KILN_COUNTER_REMOTE_MISSES: return (double)s.misses;
  case KILN_COUNTER_REMOTE_ERRORS: return (double)s.errors;
  case KILN_COUNTER_REMOTE_PUBLISHED: return (double)s.published;
  case KILN_COUNTER_REMOTE_DROPPED: return (double)s.dropped;
  case KILN_COUNTER_REMOTE_SKIPS: return (double)s.breaker_skips;
  case KILN_COUNTER_REMOTE_BREAKER_OPENS: return (double)s.breaker_opens;
  case KILN_COUNTER_REMOTE_CORRUPT: return (double)s.corrupt;
  default: return 0;
  }
}
