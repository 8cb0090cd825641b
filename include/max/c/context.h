/* max/c/context.h - runtime configs and contexts of kiln's MAX C API layer.
 *
 * An M_RuntimeContext wraps one kiln_context (JIT, kernel cache, thread
 * pool). Compiled models, models and tensor maps made in a context must be
 * freed before it. */
#ifndef MAX_C_CONTEXT_H
#define MAX_C_CONTEXT_H

#include "max/c/types.h"

MAX_C_BEGIN

/* A config with no devices (the host is implied). Owned by the caller:
 * M_freeRuntimeConfig. NULL when out of memory. */
MAX_C_API M_RuntimeConfig *M_newRuntimeConfig(void);
MAX_C_API void M_freeRuntimeConfig(M_RuntimeConfig *config); /* no-op on NULL */
/* Records the device (its type and id are copied; device stays the
 * caller's). */
MAX_C_API void M_runtimeConfigAddDevice(M_RuntimeConfig *config, M_Device *device);
/* A context for config's devices (config may be freed afterwards). NULL on
 * failure with the reason in status. */
MAX_C_API M_RuntimeContext *M_newRuntimeContext(const M_RuntimeConfig *config, M_Status *status);
MAX_C_API void M_freeRuntimeContext(M_RuntimeContext *context); /* no-op on NULL */

MAX_C_END
#endif /* MAX_C_CONTEXT_H */
