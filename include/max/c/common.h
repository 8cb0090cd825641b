/* max/c/common.h - version and status of kiln's MAX C API layer.
 *
 * An M_Status carries the outcome of the last call it was passed to: every
 * call taking one clears it first, then fills it on failure. Passing NULL
 * is allowed and drops the message. */
#ifndef MAX_C_COMMON_H
#define MAX_C_COMMON_H

#include "max/c/types.h"

MAX_C_BEGIN

/* kiln's version string ("0.1.0 (LLVM 19.1.7)"); static. */
MAX_C_API const char *M_version(void);

/* A new status, no error. Owned by the caller: M_freeStatus. NULL when out
 * of memory. */
MAX_C_API M_Status *M_newStatus(void);
/* The error message ("" when there is none); owned by the status, valid
 * until its next use. */
MAX_C_API const char *M_getError(const M_Status *status);
/* 1 when the status holds an error, else 0 (also for NULL). */
MAX_C_API int M_isError(const M_Status *status);
/* No-op on NULL. */
MAX_C_API void M_freeStatus(M_Status *status);

MAX_C_END
#endif /* MAX_C_COMMON_H */
