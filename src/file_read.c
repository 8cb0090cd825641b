/* file_read.c - read a whole file into memory (rt_read_file, rt.h): the one
 * loop behind kiln_graph_load, kernel libraries and the C compiler's
 * outputs. Guarantees: the buffer ends with a NUL that *len does not count;
 * every failure (no such file, cannot open, not a regular file, read error,
 * out of memory) is a NULL with a status naming the file; nothing leaks.
 * The file is opened with O_NONBLOCK and checked with fstat before any read:
 * a FIFO, socket or device is refused instead of blocking the caller (an
 * open of a FIFO without a writer waits forever). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt.h"

FILE *rt_fopen_regular(const char *path, const char *what, kiln_status *st) {
  if (!what) what = path;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    rt_err(st, errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO, "%s: cannot open: %s", what,
           strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    rt_err(st, KILN_ERR_IO, "%s: cannot open: %s", what, strerror(errno));
    close(fd);
    return NULL;
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "%s: not a regular file (a %s): give the path of a file", what,
           S_ISDIR(sb.st_mode) ? "directory" : S_ISFIFO(sb.st_mode) ? "FIFO" :
           S_ISSOCK(sb.st_mode) ? "socket" : "device");
    return NULL;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: cannot read: %s", what, strerror(errno));
    close(fd);
  }
  return f;
}

char *rt_read_file(const char *path, const char *what, size_t *len, kiln_status *st) {
  if (!what) what = path;
  FILE *f = rt_fopen_regular(path, what, st);
  if (!f) return NULL;
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
