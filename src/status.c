/* status.c - kiln_status (code + malloc'd message), code and dtype names,
 * the version string.
 *
 * Every failure path in src/ goes through rt_err, which tolerates a NULL
 * status and allocates the message to its full length (no fixed buffer). If
 * the message itself cannot be allocated, the code is still set and
 * kiln_status_message falls back to the code's name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#ifndef KILN_VERSION_STRING
#define KILN_VERSION_STRING "0.1.0"
#endif
#ifndef KILN_LLVM_VERSION
#define KILN_LLVM_VERSION "19"
#endif

/* kiln_dtype and ir_dtype are the same enumeration (ABI). */
_Static_assert((int)KILN_BOOL == (int)IR_DT_BOOL, "dtype ABI");
_Static_assert((int)KILN_INT8 == (int)IR_DT_SI8, "dtype ABI");
_Static_assert((int)KILN_INT64 == (int)IR_DT_SI64, "dtype ABI");
_Static_assert((int)KILN_UINT8 == (int)IR_DT_UI8, "dtype ABI");
_Static_assert((int)KILN_UINT64 == (int)IR_DT_UI64, "dtype ABI");
_Static_assert((int)KILN_FLOAT16 == (int)IR_DT_F16, "dtype ABI");
_Static_assert((int)KILN_BFLOAT16 == (int)IR_DT_BF16, "dtype ABI");
_Static_assert((int)KILN_FLOAT32 == (int)IR_DT_F32, "dtype ABI");
_Static_assert((int)KILN_FLOAT64 == (int)IR_DT_F64, "dtype ABI");
_Static_assert((int)KILN_FLOAT8_E4M3FN == (int)IR_DT_F8E4M3FN, "dtype ABI");
_Static_assert((int)KILN_FLOAT8_E5M2FNUZ == (int)IR_DT_F8E5M2FNUZ, "dtype ABI");
_Static_assert((int)KILN_DTYPE_COUNT == (int)IR_DT_COUNT, "dtype ABI");

KILN_API const char *kiln_version(void) {
  return KILN_VERSION_STRING " (LLVM " KILN_LLVM_VERSION ")";
}

KILN_API kiln_status *kiln_status_new(void) { return calloc(1, sizeof(kiln_status)); }

KILN_API void kiln_status_free(kiln_status *st) {
  if (!st) return;
  free(st->msg);
  free(st);
}

KILN_API kiln_code kiln_status_code(const kiln_status *st) { return st ? st->code : KILN_OK; }

KILN_API bool kiln_status_is_error(const kiln_status *st) { return st && st->code != KILN_OK; }

KILN_API const char *kiln_status_message(const kiln_status *st) {
  if (!st || st->code == KILN_OK) return "";
  return st->msg ? st->msg : kiln_code_name(st->code);
}

KILN_API void kiln_status_clear(kiln_status *st) {
  if (!st) return;
  free(st->msg);
  st->msg = NULL;
  st->code = KILN_OK;
}

KILN_API const char *kiln_code_name(kiln_code code) {
  switch (code) {
  case KILN_OK: return "ok";
  case KILN_ERR_INVALID_ARGUMENT: return "invalid argument";
  case KILN_ERR_PARSE: return "parse error";
  case KILN_ERR_VERIFY: return "verification error";
  case KILN_ERR_SHAPE: return "shape error";
  case KILN_ERR_NOT_FOUND: return "not found";
  case KILN_ERR_IO: return "i/o error";
  case KILN_ERR_COMPILE: return "compile error";
  case KILN_ERR_RUNTIME: return "runtime error";
  case KILN_ERR_OUT_OF_MEMORY: return "out of memory";
  case KILN_ERR_UNSUPPORTED: return "unsupported";
  }
  return "unknown error";
}

KILN_API const char *kiln_dtype_name(kiln_dtype t) { return ir_dtype_name((ir_dtype)t); }

KILN_API size_t kiln_dtype_size(kiln_dtype t) { return ir_dtype_size((ir_dtype)t); }

void rt_ok(kiln_status *st) { kiln_status_clear(st); }

int rt_verr(kiln_status *st, kiln_code code, const char *fmt, va_list ap) {
  if (!st) return -1;
  free(st->msg);
  st->msg = NULL;
  st->code = code;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return -1;
  char *m = malloc((size_t)n + 1);
  if (!m) return -1;
  vsnprintf(m, (size_t)n + 1, fmt, ap);
  st->msg = m;
  return -1;
}

int rt_err(kiln_status *st, kiln_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rt_verr(st, code, fmt, ap);
  va_end(ap);
  return -1;
}

int rt_err_diag(kiln_status *st, kiln_code code, const char *filename, const ir_diag *d) {
  if (d->line <= 0) {
    if (filename) return rt_err(st, code, "%s: %s", filename, d->msg);
    return rt_err(st, code, "%s", d->msg);
  }
  if (filename) return rt_err(st, code, "%s:%d:%d: %s", filename, d->line, d->col, d->msg);
  return rt_err(st, code, "%d:%d: %s", d->line, d->col, d->msg);
}
