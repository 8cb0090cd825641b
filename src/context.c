/* context.c - kiln_context: owns the JIT engine, the lock that serializes every use
 * of its LLJIT (load, lookup, unload), since an LLJIT must not be driven from two
 * threads at once (see jit.h), the memory cache of compiled kernels its models share
 * (cache_mem.h), backed by the disk cache (cache_backing.c) and the remote cache
 * (context_remote.c), and the background compile queue of specialized variants
 * (variants.h), and the custom kernel libraries (kernel_lib.h) the JIT links
 * mo.custom kernels from. No global state: two contexts may live side by side.
 * Models must be freed before their context (the cache unloads every kernel when the
 * context goes).
 *
 * The disk store can be replaced (kiln_context_set_cache_dir) while compiles
 * run: the old store is detached from the memory cache but kept open until
 * the context is freed, so a compile that copied it keeps a valid handle.
 *
 * Loaded code is bounded: kernels no model or variant references are
 * unloaded past KILN_CODE_MAX_BYTES (read here, when the context is
 * created; a malformed value fails the creation) or the bound given to
 * kiln_context_set_code_limit (cache_mem.h). */
#include <errno.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bg_place.h"
#include "cache_backing.h"
#include "cache_disk.h"
#include "cache_mem.h"
#include "kernel_lib.h"
#include "perf_map.h"
#include "pool.h"
#include "rt.h"
#include "tier_up.h"
#include "variants.h"

/* KILN_SPECIALIZE=off|sync|async|ahead, else async. */
static int default_policy(void) {
  const char *v = getenv("KILN_SPECIALIZE");
  if (v) {
    if (!strcasecmp(v, "off")) return KILN_SPECIALIZE_OFF;
    if (!strcasecmp(v, "sync")) return KILN_SPECIALIZE_SYNC;
    if (!strcasecmp(v, "ahead")) return KILN_SPECIALIZE_AHEAD;
  }
  return KILN_SPECIALIZE_ASYNC;
}

/* The code bound from KILN_CODE_MAX_BYTES (unset or empty: the default).
 * 0, or -1 with st filled. */
static int env_code_limit(size_t *out, kiln_status *st) {
  *out = RT_CODE_LIMIT_DEFAULT;
  const char *v = getenv("KILN_CODE_MAX_BYTES");
  if (!v || !*v) return 0;
  uint64_t n = 0;
  if (!kc_parse_bytes(v, &n) || n > SIZE_MAX)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "KILN_CODE_MAX_BYTES='%s' is not a byte count (examples: 8388608, 8M, 1G; "
                  "0 keeps no unreferenced kernel loaded)",
                  v);
  *out = (size_t)n;
  return 0;
}

KILN_API kiln_context *kiln_context_new(kiln_status *st) {
  size_t code_limit;
  if (env_code_limit(&code_limit, st) != 0) return NULL;
  kiln_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating a context");
    return NULL;
  }
  if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
    free(ctx);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "cannot create the context's lock");
    return NULL;
  }
  if (rt_log_init(&ctx->log) != 0 || !(ctx->trace = rt_trace_new())) {
    rt_trace_free(ctx->trace);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating a context");
    return NULL;
  }
  char err[512] = "";
  ctx->jit = jit_engine_new(err, sizeof err);
  if (!ctx->jit) {
    rt_trace_free(ctx->trace);
    rt_log_destroy(&ctx->log);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    rt_err(st, KILN_ERR_COMPILE, "cannot start the JIT: %s", err[0] ? err : "unknown error");
    return NULL;
  }
  /* KILN_HALF_GEMM=generic: the half GEMM's generic loops in place of its
   * AVX-512 kernels, on any host (tests of that path) */
  const char *hg = getenv("KILN_HALF_GEMM");
  bool generic_half = hg && strcmp(hg, "generic") == 0;
  /* KILN_INT8_GEMM=generic|avx2|avxvnni|avx512vnni: the 8-bit GEMM's
   * kernel no faster than that one (tests and measurements of the slower
   * kernels on a faster host) */
  const char *ig = getenv("KILN_INT8_GEMM");
  jit_mmi_isa int8_cap = ig && *ig ? jit_mmi_isa_parse(ig) : 0;
  if (ig && *ig && !int8_cap) {
    jit_engine_free(ctx->jit);
    rt_trace_free(ctx->trace);
    rt_log_destroy(&ctx->log);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "KILN_INT8_GEMM=%s: expected generic, avx2, avxvnni or avx512vnni", ig);
    return NULL;
  }
  if ((generic_half && jit_engine_force_generic_half(ctx->jit) < 0) ||
      (int8_cap && jit_engine_cap_int8_gemm(ctx->jit, int8_cap) < 0) ||
      !(ctx->kcache = rt_cache_mem_new(ctx->jit, &ctx->lock)) ||
      !(ctx->place = rt_bg_place_new()) || !(ctx->spec = rt_spec_ctx_new(ctx->place)) ||
      !(ctx->libs = rt_kernel_libs_new())) {
    rt_spec_ctx_free(ctx->spec);
    rt_bg_place_free(ctx->place);
    rt_kernel_libs_free(ctx->libs);
    rt_cache_mem_free(ctx->kcache);
    jit_engine_free(ctx->jit);
    rt_trace_free(ctx->trace);
    rt_log_destroy(&ctx->log);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating the kernel cache");
    return NULL;
  }
  jit_libs resolver = rt_kernel_libs_resolver(ctx->libs);
  jit_engine_set_libs(ctx->jit, &resolver);
  rt_cache_mem_set_obs(ctx->kcache, &ctx->log, ctx->trace);
  if (rt_perf_map_wanted()) {
    if (rt_perf_map_prebuilt(ctx->jit, &ctx->lock) != 0)
      rt_logf(&ctx->log, KILN_LOG_WARN, "KILN_PERF: cannot write the perf map: %s",
              strerror(errno));
    char derr[512] = "";
    if (jit_engine_enable_debugger(ctx->jit, derr, sizeof derr) != 0)
      rt_logf(&ctx->log, KILN_LOG_WARN, "KILN_PERF: debuggers will not see kernels: %s", derr);
  }
  jit_phase_hook hook = {ctx->trace, rt_trace_jit_phase};
  jit_engine_set_phase_hook(ctx->jit, &hook);
  const char *trace = getenv("KILN_TRACE");
  if (trace && *trace) {
    kiln_status *ts = kiln_status_new();
    if (kiln_context_set_trace(ctx, trace, ts) < 0) /* a trace that fails must not go unseen */
      rt_logf(&ctx->log, KILN_LOG_WARN, "KILN_TRACE: %s", ts ? kiln_status_message(ts) : "?");
    kiln_status_free(ts);
  }
  rt_cache_mem_set_limit(ctx->kcache, code_limit);
  atomic_store(&ctx->specialize, default_policy());
  atomic_store(&ctx->tier_up_min, rt_tier_up_env());
  ctx->disk = rt_cache_backing_open(ctx->kcache, &ctx->log, ctx->disk_status,
                                    sizeof ctx->disk_status,
                                    ctx->disk_warning, sizeof ctx->disk_warning);
  rt_context_remote_open(ctx);
  rt_ok(st);
  return ctx;
}

KILN_API int kiln_context_free_checked(kiln_context *ctx, kiln_status *st) {
  if (!ctx) {
    rt_ok(st);
    return 0;
  }
  int live = atomic_load(&ctx->models);
  if (live > 0)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_free: %d model%s of this context %s still live; the context is "
                  "not freed (free its models first: their executes run its kernels)",
                  live, live == 1 ? "" : "s", live == 1 ? "is" : "are");
  rt_spec_ctx_free(ctx->spec); /* joins the compile thread: it used the cache and the JIT */
  rt_pool_free(ctx->pool);     /* joins the workers: no kernel runs after this */
  rt_cache_mem_free(ctx->kcache); /* unloads the kernels: before the engine */
  rt_context_remote_free(ctx);    /* drains its publish queue first (bounded) */
  kc_disk_close(ctx->disk);
  for (int i = 0; i < ctx->ndisk_retired; i++) kc_disk_close(ctx->disk_retired[i]);
  free(ctx->disk_retired);
  jit_engine_free(ctx->jit);
  rt_kernel_libs_free(ctx->libs); /* after every compile that could look one up */
  rt_trace_free(ctx->trace);      /* writes what is buffered; nothing records any more */
  rt_bg_place_free(ctx->place);   /* every background thread has been joined */
  rt_log_destroy(&ctx->log);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
  rt_ok(st);
  return 0;
}

KILN_API void kiln_context_free(kiln_context *ctx) {
  kiln_status *st = kiln_status_new();
  if (kiln_context_free_checked(ctx, st) < 0) /* refused: leaking beats a use after free */
    rt_logf(&ctx->log, KILN_LOG_WARN, "%s",
            st ? kiln_status_message(st) : "kiln_context_free refused");
  kiln_status_free(st);
}

KILN_API const char *kiln_context_target(const kiln_context *ctx) {
  return ctx ? jit_engine_target(ctx->jit) : "";
}

rt_cache_mem *rt_context_cache(const kiln_context *ctx) { return ctx ? ctx->kcache : NULL; }

KILN_API int kiln_context_set_code_limit(kiln_context *ctx, size_t max_bytes, kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_code_limit: context is NULL");
  rt_cache_mem_set_limit(ctx->kcache, max_bytes);
  rt_ok(st);
  return 0;
}

/* Make d (NULL: none) the context's store; the old one is retired, not
 * closed (compiles may hold it). Takes d, also on failure. */
static int swap_store(kiln_context *ctx, kc_disk *d, kiln_status *st) {
  kc_disk **r = realloc(ctx->disk_retired, (size_t)(ctx->ndisk_retired + 1) * sizeof *r);
  if (!r) {
    kc_disk_close(d);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  ctx->disk_retired = r;
  if (d) kc_disk_set_warn(d, rt_cache_backing_warn, &ctx->log);
  kc_disk *old = ctx->disk;
  ctx->disk = d;
  if (rt_context_reattach(ctx) != 0) {
    ctx->disk = old;
    kc_disk_close(d);
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (old) ctx->disk_retired[ctx->ndisk_retired++] = old;
  if (d) rt_cache_backing_describe(d, "(set by the API)", ctx->disk_status,
                                   sizeof ctx->disk_status);
  else snprintf(ctx->disk_status, sizeof ctx->disk_status, "disk cache off (set by the API)");
  ctx->disk_warning[0] = 0;
  if (kc_disk_read_only(d))
    snprintf(ctx->disk_warning, sizeof ctx->disk_warning, "disk cache %s", kc_disk_note(d));
  rt_ok(st);
  return 0;
}

/* A new store on dir (NULL: the current one's) with the current seeds,
 * plus the seed add when not NULL. NULL with st. */
static kc_disk *reopen_store(kiln_context *ctx, const char *dir, uint64_t max_bytes,
                             const char *add, kiln_status *st) {
  kc_disk *d = kc_disk_open(dir, max_bytes, KC_DISK_IGNORE_OFF, st);
  for (int i = 0; d && i < kc_disk_nseeds(ctx->disk); i++)
    if (kc_disk_add_seed(d, kc_disk_seed_dir(ctx->disk, i), st) != 0) {
      kc_disk_close(d);
      return NULL;
    }
  if (d && add && kc_disk_add_seed(d, add, st) != 0) {
    kc_disk_close(d);
    return NULL;
  }
  return d;
}

KILN_API int kiln_context_set_cache_dir(kiln_context *ctx, const char *dir, uint64_t max_bytes,
                                        kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_cache_dir: context is NULL");
  if (dir && !*dir)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_cache_dir: empty directory (NULL turns the disk cache off)");
  kc_disk *d = NULL;
  if (dir && !(d = reopen_store(ctx, dir, max_bytes, NULL, st))) return -1;
  return swap_store(ctx, d, st);
}

KILN_API int kiln_context_add_cache_seed_dir(kiln_context *ctx, const char *dir,
                                             kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_add_cache_seed_dir: context is NULL");
  if (!dir || !*dir)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_add_cache_seed_dir: no directory given");
  if (!kc_disk_enabled(ctx->disk))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_add_cache_seed_dir('%s'): the context has no disk cache (%s); "
                  "give it one with kiln_context_set_cache_dir first",
                  dir, ctx->disk_status);
  kc_disk *d = reopen_store(ctx, kc_disk_dir(ctx->disk), kc_disk_max_bytes(ctx->disk), dir, st);
  return d ? swap_store(ctx, d, st) : -1;
}

KILN_API const char *kiln_context_cache_status(const kiln_context *ctx) {
  return ctx ? ctx->disk_status : "";
}

KILN_API const char *kiln_context_cache_warning(const kiln_context *ctx) {
  return ctx && ctx->disk_warning[0] ? ctx->disk_warning : NULL;
}

KILN_API const char *kiln_context_cache_dir(const kiln_context *ctx) {
  return ctx ? kc_disk_dir(ctx->disk) : NULL;
}

KILN_API int kiln_context_set_trace(kiln_context *ctx, const char *path, kiln_status *st) {
  if (!ctx) return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_set_trace: context is NULL");
  if (path && !*path)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kiln_context_set_trace: empty path (NULL stops tracing)");
  int rc = rt_trace_open(ctx->trace, path, st);
  int on = rt_trace_on(ctx->trace) ? 1 : 0;
  int was = atomic_exchange(&ctx->watch_trace, on);
  atomic_fetch_add(&ctx->watch, on - was);
  if (rc == 0 && path) rt_logf(&ctx->log, KILN_LOG_INFO, "tracing to %s", path);
  return rc;
}

KILN_API int kiln_context_flush_trace(kiln_context *ctx, kiln_status *st) {
  if (!ctx)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_flush_trace: context is NULL");
  return rt_trace_flush(ctx->trace, st);
}
