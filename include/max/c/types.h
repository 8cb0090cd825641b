/* max/c/types.h - the opaque handles and enums of kiln's MAX C API layer.
 *
 * kiln implements the functions of Modular MAX's C API (the headers of include/max/c/,
 * `M_` prefix) as a thin layer over its own kiln_ API, so a program written
 * for MAX builds against these headers and links libkiln.so. Every handle is
 * opaque; who owns what is said at each function. M_Dtype values follow
 * MAX's bit encoding and are ABI: integers are 0x80 | log2(bits) << 1 |
 * signed, floats 0x40 | k. */
#ifndef MAX_C_TYPES_H
#define MAX_C_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* Every M_ function is exported from libkiln.so (built with
 * -fvisibility=hidden). */
#if defined(__GNUC__) || defined(__clang__)
#define MAX_C_API __attribute__((visibility("default")))
#else
#define MAX_C_API
#endif

#ifdef __cplusplus
#define MAX_C_BEGIN extern "C" {
#define MAX_C_END }
#else
#define MAX_C_BEGIN
#define MAX_C_END
#endif

MAX_C_BEGIN

typedef struct M_Status M_Status;                   /* common.h */
typedef struct M_RuntimeConfig M_RuntimeConfig;     /* context.h */
typedef struct M_RuntimeContext M_RuntimeContext;   /* context.h */
typedef struct M_Device M_Device;                   /* device.h */
typedef struct M_CompileConfig M_CompileConfig;     /* model.h */
typedef struct M_AsyncCompiledModel M_AsyncCompiledModel;
typedef struct M_AsyncModel M_AsyncModel;
typedef struct M_TensorSpec M_TensorSpec;           /* tensor.h */
typedef struct M_AsyncTensor M_AsyncTensor;
typedef struct M_AsyncTensorMap M_AsyncTensorMap;
typedef struct M_WeightsRegistry M_WeightsRegistry; /* weights.h */
typedef struct M_Safetensors M_Safetensors;         /* safetensors.h */

typedef enum M_Dtype {
  M_UNKNOWN = 0,
  M_BOOL = 1,
  M_FLOAT8_E4M3FN = 0x4B,
  M_FLOAT8_E4M3FNUZ = 0x4C,
  M_FLOAT8_E5M2 = 0x4D,
  M_FLOAT8_E5M2FNUZ = 0x4E,
  M_FLOAT16 = 0x4F,
  M_BFLOAT16 = 0x50,
  M_FLOAT32 = 0x51,
  M_FLOAT64 = 0x52,
  M_UINT8 = 0x86,
  M_INT8 = 0x87,
  M_UINT16 = 0x88,
  M_INT16 = 0x89,
  M_UINT32 = 0x8A,
  M_INT32 = 0x8B,
  M_UINT64 = 0x8C,
  M_INT64 = 0x8D,
} M_Dtype;

typedef enum M_DeviceType {
  M_HOST = 0,
  M_ACCELERATOR = 1,
} M_DeviceType;

/* A tensor spec's dim that is not known (a dynamic batch) and a spec's rank
 * when the rank itself is not known. A tensor handed to the model
 * (M_borrowTensorInto) must have neither. */
#define M_DYNAMIC_DIMENSION_VALUE ((int64_t)-1)
#define M_DYNAMIC_RANK_VALUE ((int64_t)-1)

MAX_C_END
#endif /* MAX_C_TYPES_H */
