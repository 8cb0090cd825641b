/* kiln/custom.h - custom kernel libraries: C sources, LLVM IR (.ll) or
 * bitcode (.bc) whose functions graphs call with mo.custom /
 * mo.inplace_custom. A kernel is written against kiln/kernel.h (its ABI and
 * a worked example). A context holds any number of libraries; a symbol must
 * be defined by exactly one of them. C is compiled by clang 19 ($KILN_CLANG,
 * else clang-19 / clang on PATH) and cached by content hash (source, flags,
 * kiln/kernel.h, compiler) in memory and beside the disk kernel cache.
 * Libraries stay loaded until the context is freed; adding one under the
 * same name (path) again replaces the earlier one for the models compiled
 * afterwards (the earlier models keep their code). */
#ifndef KILN_CUSTOM_H
#define KILN_CUSTOM_H

#include "common.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Add the library at path; its extension says the kind (.c, .ll, .bc).
 * Errors (kiln_status): a missing file (KILN_ERR_NOT_FOUND), an unknown
 * extension, C that does not compile (KILN_ERR_COMPILE, with clang's own
 * file:line messages), no clang 19 (the message names KILN_CLANG), IR or
 * bitcode that does not parse or verify (KILN_ERR_PARSE). 0 or -1. */
KILN_API int kiln_context_add_kernel_library(kiln_context *ctx, const char *path,
                                             kiln_status *st);
/* The same from memory: name (ending in .c, .ll or .bc) says the kind and
 * names the library in messages; data[0..len) is copied as needed. */
KILN_API int kiln_context_add_kernel_library_memory(kiln_context *ctx, const char *name,
                                                    const void *data, size_t len,
                                                    kiln_status *st);
/* Libraries added so far (replaced ones included); -1 for NULL. */
KILN_API int kiln_context_num_kernel_libraries(const kiln_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
