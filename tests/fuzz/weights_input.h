/* weights_input.h - what the weights-file fuzz targets (fuzz_safetensors.c,
 * fuzz_gguf.c) share: the input as a file the readers can open by path,
 * and the check every tensor they return must pass. */
#ifndef KILN_FUZZ_WEIGHTS_INPUT_H
#define KILN_FUZZ_WEIGHTS_INPUT_H

#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kiln/kiln.h"

/* data[0..size) in an in-memory file (memfd `name`) whose path goes into
 * path; the fd (close it), or -1 when it cannot be made. */
static inline int fuzz_input_file(const char *name, const uint8_t *data, size_t size,
                                  char *path, size_t cap) {
  int fd = memfd_create(name, 0);
  if (fd < 0) return -1;
  for (size_t done = 0; done < size;) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) {
      close(fd);
      return -1;
    }
    done += (size_t)w;
  }
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

/* A reader's tensor t (freed here): NULL only with an error status, else
 * its first and last byte readable. */
static inline void fuzz_check_tensor(kiln_tensor *t, kiln_status *st) {
  if (!t && kiln_status_code(st) == KILN_OK) __builtin_trap();
  if (t && kiln_tensor_nbytes(t)) {
    volatile const uint8_t *p = kiln_tensor_data(t);
    (void)p[0];
    (void)p[kiln_tensor_nbytes(t) - 1];
  }
  kiln_tensor_free(t);
}

#endif
