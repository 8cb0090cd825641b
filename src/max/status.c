/* status.c - M_Status and the version of kiln's MAX C API layer, and the
 * message helpers every file of src/max/ uses. A status with no error has
 * no message; M_getError then returns "". Out of memory while formatting a
 * message still marks the status as an error (with a fixed message). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mx.h"

MAX_C_API const char *M_version(void) { return kiln_version(); }

MAX_C_API M_Status *M_newStatus(void) { return calloc(1, sizeof(M_Status)); }

MAX_C_API const char *M_getError(const M_Status *status) {
  if (!status || !status->error) return "";
  return status->msg ? status->msg : "out of memory formatting an error message";
}

MAX_C_API int M_isError(const M_Status *status) { return status && status->error ? 1 : 0; }

MAX_C_API void M_freeStatus(M_Status *status) {
  if (!status) return;
  free(status->msg);
  free(status);
}

void mx_ok(M_Status *st) {
  if (!st) return;
  free(st->msg);
  st->msg = NULL;
  st->error = 0;
}

static char *vstrf(const char *fmt, va_list ap) {
  va_list cp;
  va_copy(cp, ap);
  int n = vsnprintf(NULL, 0, fmt, cp);
  va_end(cp);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

char *mx_strf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vstrf(fmt, ap);
  va_end(ap);
  return s;
}

int mx_err(M_Status *st, const char *fmt, ...) {
  if (!st) return -1;
  va_list ap;
  va_start(ap, fmt);
  char *s = vstrf(fmt, ap);
  va_end(ap);
  free(st->msg);
  st->msg = s;
  st->error = 1;
  return -1;
}

char *mx_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}
