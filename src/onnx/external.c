/* external.c - ONNX external data (TensorProto.external_data: location,
 * offset, length), mapped read-only, never copied here. The location is
 * relative to the model file's directory; absolute paths and ".." are
 * refused (a model must not read files outside its directory). Offset and
 * length are checked against the file and the tensor's size before any
 * byte is read. Each mapping is kept alive by the weight source. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ox.h"

static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return true;
}

const void *ox_external_data(const Onnx__TensorProto *t, const char *dir, rt_wsrc *ws,
                             size_t nbytes, const char *what, kiln_status *st) {
  const char *loc = NULL;
  uint64_t offset = 0, length = 0;
  bool has_len = false;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
    if (!k) continue;
    if (strcmp(k, "location") == 0) {
      loc = v;
    } else if (strcmp(k, "offset") == 0) {
      if (!parse_u64(v, &offset)) {
        rt_err(st, KILN_ERR_IO, "%s: external data offset '%s' is not a number", what, v ? v : "");
        return NULL;
      }
    } else if (strcmp(k, "length") == 0) {
      if (!parse_u64(v, &length)) {
        rt_err(st, KILN_ERR_IO, "%s: external data length '%s' is not a number", what, v ? v : "");
        return NULL;
      }
      has_len = true;
    }
  }
  if (!loc || !*loc) {
    rt_err(st, KILN_ERR_IO, "%s: external data without a location", what);
    return NULL;
  }
  if (!dir || !ws) {
    rt_err(st, KILN_ERR_INVALID_ARGUMENT,
           "%s: external data '%s' needs the model's directory (load the model from a file)",
           what, loc);
    return NULL;
  }
  if (loc[0] == '/' || strstr(loc, "..")) {
    rt_err(st, KILN_ERR_IO, "%s: external data location '%s' leaves the model's directory", what,
           loc);
    return NULL;
  }
  if (has_len && length != nbytes) {
    rt_err(st, KILN_ERR_IO, "%s: external data length %llu does not match its type (%zu bytes)",
           what, (unsigned long long)length, nbytes);
    return NULL;
  }
  size_t plen = strlen(dir) + strlen(loc) + 2;
  char *path = malloc(plen);
  if (!path) {
    rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  snprintf(path, plen, "%s/%s", dir, loc);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    rt_err(st, errno == ENOENT ? KILN_ERR_NOT_FOUND : KILN_ERR_IO,
           "%s: external data file '%s': %s", what, path, strerror(errno));
    free(path);
    return NULL;
  }
  struct stat sb;
  const void *res = NULL;
  if (fstat(fd, &sb) < 0) {
    rt_err(st, KILN_ERR_IO, "%s: external data file '%s': %s", what, path, strerror(errno));
  } else if (offset > (uint64_t)sb.st_size || nbytes > (uint64_t)sb.st_size - offset) {
    rt_err(st, KILN_ERR_IO,
           "%s: external data [%llu, +%zu) is outside '%s' (%lld bytes)", what,
           (unsigned long long)offset, nbytes, path, (long long)sb.st_size);
  } else if (nbytes == 0) {
    static const char none[RT_ALIGN] __attribute__((aligned(RT_ALIGN)));
    res = none;
  } else {
    long page = sysconf(_SC_PAGE_SIZE);
    uint64_t base = offset - offset % (uint64_t)(page > 0 ? page : 4096);
    size_t maplen = (size_t)(offset - base) + nbytes;
    void *map = mmap(NULL, maplen, PROT_READ, MAP_PRIVATE, fd, (off_t)base);
    if (map == MAP_FAILED)
      rt_err(st, KILN_ERR_IO, "%s: cannot map '%s': %s", what, path, strerror(errno));
    else if (rt_wsrc_keep_map(ws, map, maplen, st) == 0)
      res = (const char *)map + (offset - base);
  }
  close(fd);
  free(path);
  return res;
}
