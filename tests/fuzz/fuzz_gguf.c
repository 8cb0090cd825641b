/* fuzz_gguf.c - libFuzzer target for the GGUF reader: any bytes, written to
 * an in-memory file (weights_input.h), go through rt_gguf_open and every
 * tensor it lists through rt_gguf_tensor, which must return a reader /
 * tensor or a status, never crash, hang or leak. */
#include "weights_input.h"

#include "src/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = fuzz_input_file("fuzz.gguf", data, size, path, sizeof path);
  if (fd < 0) return 0;
  kiln_status *st = kiln_status_new();
  rt_gguf *f = rt_gguf_open(path, st);
  if (!f && kiln_status_code(st) == KILN_OK) __builtin_trap();
  for (int i = 0; f && i < rt_gguf_count(f); i++) {
    const char *name = rt_gguf_name(f, i);
    if (!name || rt_gguf_find(f, name) < 0) __builtin_trap();
    fuzz_check_tensor(rt_gguf_tensor(f, i, st), st);
  }
  rt_gguf_close(f);
  kiln_status_free(st);
  close(fd);
  return 0;
}
