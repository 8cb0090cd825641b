/* st_file.c - raw .safetensors files for reader tests (st_file.h). */
#include "st_file.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>

void st_write_raw(const char *path, const char *header, size_t hlen, size_t ndata) {
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
  fwrite(len8, 1, 8, f);
  fwrite(header, 1, hlen, f);
  for (size_t i = 0; i < ndata; i++) fputc((int)(i & 0xff), f);
  cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}
