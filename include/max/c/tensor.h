/* max/c/tensor.h - tensor specs, tensors and tensor maps of kiln's MAX C
 * API layer.
 *
 * A spec is a name, a dtype, a rank and a shape (M_DYNAMIC_DIMENSION_VALUE
 * for an unknown dim) plus a device. A tensor map holds named tensors: the
 * inputs you borrow into it, or the outputs a model returns. An
 * M_AsyncTensor is a handle on one tensor's storage: the storage lives as
 * long as any handle, map or captured graph refers to it, so a tensor taken
 * from a map stays valid after the map is freed. Borrowed data stays the
 * caller's: keep it alive while any of those refer to it. Data is dense,
 * row-major, on the host or on an accelerator (M_copyTensorToDevice;
 * M_getTensorData is NULL for accelerator memory). */
#ifndef MAX_C_TENSOR_H
#define MAX_C_TENSOR_H

#include <stdint.h>

#include "max/c/types.h"

MAX_C_BEGIN

/* shape[rankSize] and tensorName are copied; device may be NULL (host).
 * rankSize M_DYNAMIC_RANK_VALUE makes a dynamically ranked spec (shape is
 * then ignored). NULL on a bad argument or out of memory. Owned by the
 * caller: M_freeTensorSpec. */
MAX_C_API M_TensorSpec *M_newTensorSpec(const int64_t *shape, int64_t rankSize, M_Dtype dtype,
                                        const char *tensorName, const M_Device *device);
MAX_C_API int M_isDynamicRanked(const M_TensorSpec *spec); /* 1 or 0 */
/* Dim `axis`; 0 for NULL, a dynamic rank or an axis out of range. */
MAX_C_API int64_t M_getDimAt(const M_TensorSpec *spec, size_t axis);
/* Rank, M_DYNAMIC_RANK_VALUE when dynamic; 0 for NULL. */
MAX_C_API int64_t M_getRank(const M_TensorSpec *spec);
MAX_C_API M_Dtype M_getDtype(const M_TensorSpec *spec); /* M_UNKNOWN for NULL */
MAX_C_API const char *M_getName(M_TensorSpec *spec);    /* owned by spec; NULL for NULL */
MAX_C_API M_DeviceType M_getDeviceTypeFromSpec(const M_TensorSpec *spec);
MAX_C_API int M_getDeviceIdFromSpec(const M_TensorSpec *spec);
MAX_C_API void M_freeTensorSpec(M_TensorSpec *spec); /* no-op on NULL */

/* An empty map. Owned by the caller: M_freeAsyncTensorMap. */
MAX_C_API M_AsyncTensorMap *M_newAsyncTensorMap(const M_RuntimeContext *context);
/* Adds `input` under the spec's name, borrowed (never copied nor freed);
 * the spec is copied. The spec must have a static rank and no dynamic dim,
 * a known dtype, a host device and a name. A tensor of the same name is
 * replaced. */
MAX_C_API void M_borrowTensorInto(M_AsyncTensorMap *tensors, void *input,
                                  const M_TensorSpec *tensorSpec, M_Status *status);
/* A new handle on the tensor `name` of the map (owned by the caller:
 * M_freeTensor). NULL with an error naming the map's tensors when there is
 * none. */
MAX_C_API M_AsyncTensor *M_getTensorByNameFrom(M_AsyncTensorMap *tensorMap, const char *name,
                                               M_Status *status);
MAX_C_API size_t M_getTensorNumElements(const M_AsyncTensor *tensor); /* 0 for NULL */
MAX_C_API M_Dtype M_getTensorType(const M_AsyncTensor *tensor);       /* M_UNKNOWN for NULL */
/* The host data, valid while the tensor's storage lives; NULL for NULL and
 * for a tensor in accelerator memory. */
MAX_C_API const void *M_getTensorData(const M_AsyncTensor *tensor);
/* A new spec describing the tensor (caller frees it); NULL for NULL. */
MAX_C_API M_TensorSpec *M_getTensorSpec(const M_AsyncTensor *tensor);
/* A new device (caller frees it with M_freeDevice); NULL for NULL. */
MAX_C_API M_Device *M_getTensorDevice(const M_AsyncTensor *tensor);
/* A copy of the tensor on `device`, the host or an accelerator (owned by
 * the caller: M_freeTensor). */
MAX_C_API M_AsyncTensor *M_copyTensorToDevice(M_AsyncTensor *tensor, M_Device *device,
                                              M_Status *status);
MAX_C_API void M_freeTensor(M_AsyncTensor *tensor);            /* no-op on NULL */
MAX_C_API void M_freeAsyncTensorMap(M_AsyncTensorMap *tensorMap); /* no-op on NULL */

MAX_C_END
#endif /* MAX_C_TENSOR_H */
