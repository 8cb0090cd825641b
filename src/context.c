/* context.c - kiln_context: owns the JIT engine, the lock that serializes
 * every use of its LLJIT (load, lookup, unload), since an LLJIT must not be
 * driven from two threads at once (see jit.h), and the memory cache of
 * compiled kernels its models share (cache_mem.h), backed by the disk cache
 * (cache_backing.c). No global state: two
 * contexts may live side by side. Models must be freed before their context
 * (the cache unloads every kernel when the context goes). */
#include <stdlib.h>
#include <string.h>

#include "cache_backing.h"
#include "cache_mem.h"
#include "pool.h"
#include "rt.h"

KILN_API kiln_context *kiln_context_new(kiln_status *st) {
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
  char err[512] = "";
  ctx->jit = jit_engine_new(err, sizeof err);
  if (!ctx->jit) {
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    rt_err(st, KILN_ERR_COMPILE, "cannot start the JIT: %s", err[0] ? err : "unknown error");
    return NULL;
  }
  if (!(ctx->kcache = rt_cache_mem_new(ctx->jit, &ctx->lock))) {
    jit_engine_free(ctx->jit);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory creating the kernel cache");
    return NULL;
  }
  ctx->disk = rt_cache_backing_open(ctx->kcache, ctx->disk_status, sizeof ctx->disk_status);
  rt_ok(st);
  return ctx;
}

KILN_API void kiln_context_free(kiln_context *ctx) {
  if (!ctx) return;
  rt_pool_free(ctx->pool); /* joins the workers: no kernel runs after this */
  rt_cache_mem_free(ctx->kcache); /* unloads the kernels: before the engine */
  kc_disk_close(ctx->disk);
  jit_engine_free(ctx->jit);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

KILN_API const char *kiln_context_target(const kiln_context *ctx) {
  return ctx ? jit_engine_target(ctx->jit) : "";
}

rt_cache_mem *rt_context_cache(const kiln_context *ctx) { return ctx ? ctx->kcache : NULL; }
