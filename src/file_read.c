/* file_read.c - read a whole file into memory (rt_read_file, rt.h): the one
 * loop behind kiln_graph_load, kernel libraries and the C compiler's
 * outputs. Guarantees: the buffer ends with a NUL that *len does not count;
 * every failure (no such file, cannot open, read error, out of memory) is a
 * NULL with a status naming the file; nothing leaks. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

char *rt_read_file(const char *path, const char *what, size_t *len, kiln_status *st) {
  if (!what) what = path;
  FILE *f = fopen(path, "rb");
  if (!f) {
    rt_err(st, errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, "%s: cannot open: %s", what,
           strerror(errno));
    return NULL;
  }
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  bool oom = !buf;
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *nb = cap > SIZE_MAX / 4 ? NULL : realloc(buf, 2 * cap + 1);
    if (!nb) {
      oom = true;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  bool bad = !oom && ferror(f);
  int err = errno;
  fclose(f);
  if (oom || bad) {
    free(buf);
    if (oom) rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory reading the file", what);
    else rt_err(st, KILN_ERR_IO, "%s: read error: %s", what, strerror(err));
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}
