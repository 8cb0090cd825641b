/* load.c - a graph file for the CLI: an ONNX model (".onnx", or a file
 * that starts as a protobuf ModelProto does: field 1, ir_version, as a
 * varint) is imported, anything else is parsed as MO text. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "src/onnx/onnx_io.h"
#include "src/rt.h"

bool cli_is_onnx(const char *path) {
  if (rt_onnx_is_model_path(path)) return true;
  FILE *f = rt_fopen_regular(path, NULL, NULL); /* a FIFO is refused, not waited on */
  if (!f) return false;
  int c = fgetc(f);
  fclose(f);
  return c == 0x08; /* never the first byte of MO text */
}

kiln_graph *cli_load_graph(const char *path, kiln_status *st) {
  return cli_is_onnx(path) ? kiln_graph_from_onnx_file(path, st) : kiln_graph_load(path, st);
}
