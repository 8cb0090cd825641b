/* fuzz_npy.c - libFuzzer target for the .npy reader: any bytes go through
 * rt_npy_decode, which must return a tensor or a status, never crash, hang
 * or leak. A tensor it accepts must encode and decode again to the same
 * dtype, shape and bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = rt_npy_decode(data, size, "fuzz.npy", st);
  if (!t && kiln_status_code(st) == KILN_OK) __builtin_trap();
  if (t) {
    size_t len = 0;
    void *enc = rt_npy_encode(t, &len, st);
    if (!enc) __builtin_trap();
    kiln_tensor *u = rt_npy_decode(enc, len, "encoded.npy", st);
    if (!u || kiln_tensor_dtype(u) != kiln_tensor_dtype(t) ||
        kiln_tensor_rank(u) != kiln_tensor_rank(t) ||
        memcmp(kiln_tensor_shape(u), kiln_tensor_shape(t),
               sizeof(int64_t) * (size_t)kiln_tensor_rank(t)) != 0 ||
        kiln_tensor_nbytes(u) != kiln_tensor_nbytes(t) ||
        (kiln_tensor_nbytes(t) &&
         memcmp(kiln_tensor_data(u), kiln_tensor_data(t), kiln_tensor_nbytes(t)) != 0))
      __builtin_trap();
    kiln_tensor_free(u);
    free(enc);
    kiln_tensor_free(t);
  }
  kiln_status_free(st);
  return 0;
}
