/* context_libs.c - the context's kernel libraries (kiln/custom.h:
 * kiln_context_add_kernel_library, _memory, kiln_context_num_kernel_libraries).
 * The libraries themselves are kernel_lib.c's; this file hands them the
 * context's disk cache directory, so kernel_lib.c needs nothing of the
 * context. Errors name the call and the library. */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_lib.h"
#include "rt.h"

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
  int rc = rt_kernel_libs_add(ctx->libs, path, path, data, len, kiln_context_cache_dir(ctx), st);
  free(data);
  return rc;
}

KILN_API int kiln_context_add_kernel_library_memory(kiln_context *ctx, const char *name,
                                                    const void *data, size_t len,
                                                    kiln_status *st) {
  if (!ctx || !name || !*name || (!data && len))
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "kiln_context_add_kernel_library_memory: %s",
                  !ctx ? "context is NULL" : !data ? "data is NULL" : "no name");
  return rt_kernel_libs_add(ctx->libs, name, NULL, data, len, kiln_context_cache_dir(ctx), st);
}

KILN_API int kiln_context_num_kernel_libraries(const kiln_context *ctx) {
  return ctx ? rt_kernel_libs_count(ctx->libs) : -1;
}
