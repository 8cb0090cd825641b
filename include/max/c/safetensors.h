/* max/c/safetensors.h - .safetensors files of kiln's MAX C API layer.
 *
 * Files are mapped read-only and their headers validated in full at load
 * (kiln's reader: every offset and size is checked before data is touched).
 * The tensors of all files share one namespace; a name in two files is an
 * error. Data pointers and registries made from an M_Safetensors borrow its
 * memory: free it after every model initialized from it. */
#ifndef MAX_C_SAFETENSORS_H
#define MAX_C_SAFETENSORS_H

#include <stdint.h>

#include "max/c/types.h"

MAX_C_BEGIN

/* Loads paths[numPaths] for device (NULL, the host or an accelerator: the
 * data is read into host memory, and a model's init copies its weights to
 * the accelerator). Owned by the caller: M_freeSafetensors. */
MAX_C_API M_Safetensors *M_loadSafetensors(const char **paths, size_t numPaths, M_Device *device,
                                           M_Status *status);
MAX_C_API size_t M_getSafetensorCount(const M_Safetensors *safetensors); /* 0 for NULL */
/* Name of tensor `index` (owned by safetensors), NULL out of range. */
MAX_C_API const char *M_getSafetensorName(const M_Safetensors *safetensors, size_t index);
/* Per tensor, by name; an unknown name is an error (NULL / 0 / M_UNKNOWN). */
MAX_C_API const void *M_getSafetensorData(const M_Safetensors *safetensors, const char *name,
                                          M_Status *status);
MAX_C_API size_t M_getSafetensorNumBytes(const M_Safetensors *safetensors, const char *name,
                                         M_Status *status);
MAX_C_API M_Dtype M_getSafetensorDtype(const M_Safetensors *safetensors, const char *name,
                                       M_Status *status);
MAX_C_API size_t M_getSafetensorRank(const M_Safetensors *safetensors, const char *name,
                                     M_Status *status);
/* Writes M_getSafetensorRank entries into shapeOut. */
MAX_C_API void M_getSafetensorShape(const M_Safetensors *safetensors, const char *name,
                                    int64_t *shapeOut, M_Status *status);
/* A registry of every tensor, with dtypes and shapes (borrows the data). */
MAX_C_API M_WeightsRegistry *M_newWeightsRegistryFromSafetensors(const M_Safetensors *safetensors,
                                                                 M_Status *status);
MAX_C_API void M_freeSafetensors(M_Safetensors *safetensors); /* no-op on NULL */

MAX_C_END
#endif /* MAX_C_SAFETENSORS_H */
