/* st_file.h - raw .safetensors files for reader tests: any header text. */
#ifndef KILN_TESTS_ST_FILE_H
#define KILN_TESTS_ST_FILE_H

#include <stddef.h>

/* Write path: the 8-byte little-endian length hlen, header[0..hlen), then
 * ndata data bytes 0, 1, 2, ... (mod 256). Asserts the file is written. */
void st_write_raw(const char *path, const char *header, size_t hlen, size_t ndata);

#endif
