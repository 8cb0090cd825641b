/* fuzz_gguf.c - libFuzzer target for the GGUF reader: any
 * bytes, written to an in-memory file, go through rt_gguf_open and
 * every tensor it lists through rt_gguf_tensor, which must return a
 * reader / tensor or a status, never crash, hang or leak. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "src/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz.gguf", 0);
  if (fd < 0) return 0;
  for (size_t done = 0; done < size;) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) {
      close(fd);
      return 0;
    }
    done += (size_t)w;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  kiln_status *st = kiln_status_new();
  rt_gguf *f = rt_gguf_open(path, st);
  if (!f && kiln_status_code(st) == KILN_OK) __builtin_trap();
  for (int i = 0; f && i < rt_gguf_count(f); i++) {
    const char *name = rt_gguf_name(f, i);
    if (!name || rt_gguf_find(f, name) < 0) __builtin_trap();
    kiln_tensor *t = rt_gguf_tensor(f, i, st);
    if (!t && kiln_status_code(st) == KILN_OK) __builtin_trap();
    if (t && kiln_tensor_nbytes(t)) { /* touch the first and last byte */
      volatile const uint8_t *p = kiln_tensor_data(t);
      (void)p[0];
      (void)p[kiln_tensor_nbytes(t) - 1];
    }
    kiln_tensor_free(t);
  }
  rt_gguf_close(f);
  kiln_status_free(st);
  close(fd);
  return 0;
}
