/* fuzz_onnx.c - libFuzzer target for the ONNX reader: any bytes go through
 * kiln_graph_from_onnx_memory (protobuf decoding, the importer's mappers,
 * shape inference, the verifier), which must return a graph or a status,
 * never crash, hang or leak (built with AddressSanitizer; see
 * tests/fuzz/run.sh). */
#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "kiln/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_memory(data, size, st);
  if (!g && kiln_status_code(st) == KILN_OK) __builtin_trap(); /* a failure says why */
  kiln_graph_free(g);
  kiln_status_free(st);
  return 0;
}
