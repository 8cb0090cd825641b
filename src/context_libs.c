/* context_libs.c - the context's kernel libraries (kiln/custom.h:
 * kiln_context_add_kernel_library, _memory, kiln_context_num_kernel_libraries).
 * The libraries themselves are kernel_lib.c's; this file hands them the
 * context's disk cache directory and its seed layers (rt_context_lib_dirs),
 * so kernel_lib.c needs nothing of the context. Errors name the call and the
 * library. */
#include <stdio.h>
#include <stdlib.h>

#include "cache_disk.h"
#include "kernel_lib.h"
#include "rt.h"

void rt_context_lib_dirs(const kiln_context *ctx, rt_lib_dirs *d) {
  *d = (rt_lib_dirs){.dir = kiln_context_cache_dir(ctx)};
  int n = ctx ? kc_disk_nseeds(ctx->disk) : 0;
  const char **seeds = n > 0 ? malloc((size_t)n * sizeof *seeds) : NULL;
  if (!seeds) return;
  for (int i = 0; i < n; i++) seeds[i] = kc_disk_seed_dir(ctx->disk, i);
  d->seeds = seeds;
  d->nseeds = n;
}

void rt_lib_dirs_done(rt_lib_dirs *d) {
  free((void *)d->seeds);
  d->seeds = NULL;
  d->nseeds = 0;
}

KILN_API int kiln_context_add_kernel_library(kiln_context *ctx, const char *path,
                                             kiln_status *st) {
  if (!ctx || !path || !*path)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_add_kernel_library: %s",
                  !ctx ? "context is NULL" : "no path");
  if (!rt_kernel_lib_kind_known(path))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kernel library '%s': unknown kind (the name must end in .c, .ll or .bc)", path);
  char what[512];
  snprintf(what, sizeof what, "kernel library '%s'", path);
  size_t len = 0;
  void *data = rt_read_file(path, what, &len, st);
  if (!data) return -1;
  rt_lib_dirs dirs;
  rt_context_lib_dirs(ctx, &dirs);
  int rc = rt_kernel_libs_add(ctx->libs, path, path, data, len, &dirs, st);
  rt_lib_dirs_done(&dirs);
  free(data);
  return rc;
}

KILN_API int kiln_context_add_kernel_library_memory(kiln_context *ctx, const char *name,
                                                    const void *data, size_t len,
                                                    kiln_status *st) {
  if (!ctx || !name || !*name || (!data && len))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_add_kernel_library_memory: %s",
                  !ctx ? "context is NULL" : !data ? "data is NULL" : "no name");
  rt_lib_dirs dirs;
  rt_context_lib_dirs(ctx, &dirs);
  int rc = rt_kernel_libs_add(ctx->libs, name, NULL, data, len, &dirs, st);
  rt_lib_dirs_done(&dirs);
  return rc;
}

KILN_API int kiln_context_num_kernel_libraries(const kiln_context *ctx) {
  return ctx ? rt_kernel_libs_count(ctx->libs) : -1;
}
