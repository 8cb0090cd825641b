/* kiln/common.h - status, dtypes and version: what every kiln call shares.
 *
 * Errors: every fallible call takes a `kiln_status *` last (it may be NULL
 * when the caller does not want the message) and returns NULL or a negative
 * number on failure. The status then holds a code and a message that says
 * what went wrong and where ("mlp.mlir:3:7: use of undefined value %zz",
 * "input 0 (x): axis 1 expected 784, got 783").
 * Ownership: a function returning a pointer says who owns it; every
 * kiln_*_free accepts NULL. */
#ifndef KILN_COMMON_H
#define KILN_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every public function is exported from libkiln.so (the library is built
 * with -fvisibility=hidden; everything else stays internal). */
#if defined(__GNUC__) || defined(__clang__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0

KILN_API const char *kiln_version(void); /* "0.1.0 (LLVM 19.1.7)"; static string */

typedef enum kiln_code {
  KILN_OK = 0,
  KILN_ERR_INVALID_ARGUMENT, /* a NULL handle, an index out of range, a bad option */
  KILN_ERR_PARSE,            /* malformed IR text */
  KILN_ERR_VERIFY,           /* well-formed IR that breaks an op's rules */
  KILN_ERR_SHAPE,            /* execute-time shape / dtype mismatch */
  KILN_ERR_NOT_FOUND,        /* a missing input, weight, file */
  KILN_ERR_IO,               /* a file that cannot be read or written, or is malformed */
  KILN_ERR_COMPILE,          /* LLVM failed */
  KILN_ERR_RUNTIME,          /* a kernel reported a data error (index out of range...) */
  KILN_ERR_OUT_OF_MEMORY,
  KILN_ERR_UNSUPPORTED,      /* a valid request kiln cannot serve (yet): says what */
} kiln_code;

typedef struct kiln_status kiln_status;

/* A new status the caller owns and frees with kiln_status_free; NULL on
 * out-of-memory. */
KILN_API kiln_status *kiln_status_new(void);
KILN_API void kiln_status_free(kiln_status *st); /* NULL ok */
KILN_API kiln_code kiln_status_code(const kiln_status *st); /* KILN_OK for NULL */
KILN_API bool kiln_status_is_error(const kiln_status *st);
/* "" when ok. Owned by st: valid until st is next filled, cleared or freed. */
KILN_API const char *kiln_status_message(const kiln_status *st);
KILN_API void kiln_status_clear(kiln_status *st);
KILN_API const char *kiln_code_name(kiln_code code); /* "parse error", ...; static string */

/* Element types: every MAX dtype. Values are ABI. */
typedef enum kiln_dtype {
  KILN_BOOL = 0,
  KILN_INT8,
  KILN_INT16,
  KILN_INT32,
  KILN_INT64,
  KILN_UINT8,
  KILN_UINT16,
  KILN_UINT32,
  KILN_UINT64,
  KILN_FLOAT16,
  KILN_BFLOAT16,
  KILN_FLOAT32,
  KILN_FLOAT64,
  KILN_FLOAT8_E4M3FN,
  KILN_FLOAT8_E4M3FNUZ,
  KILN_FLOAT8_E5M2,
  KILN_FLOAT8_E5M2FNUZ,
  KILN_DTYPE_COUNT
} kiln_dtype;

/* MO spelling: "f32", "si64", "bool"; a static string (never freed). */
KILN_API const char *kiln_dtype_name(kiln_dtype t);
KILN_API size_t kiln_dtype_size(kiln_dtype t);      /* bytes per element; 0 if out of range */

#ifdef __cplusplus
}
#endif
#endif
