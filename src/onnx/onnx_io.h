/* onnx_io.h - ONNX tensor files for the CLI and tests (internal to src/). */
#ifndef KILN_SRC_ONNX_IO_H
#define KILN_SRC_ONNX_IO_H

#include "src/rt.h"

/* Read a .pb file holding one ONNX TensorProto into an owned tensor; its
 * name (malloc'd, "" when unnamed) into *name when name is not NULL. NULL
 * with st filled (the file named) on a malformed file or unsupported dtype. */
kiln_tensor *rt_onnx_tensor_read(const char *path, char **name, kiln_status *st);
/* The weights an imported graph carries (NULL when none): names and tensors
 * for `kiln import --weights-out`; owned by g. */
struct rt_wsrc *rt_graph_weight_source(const kiln_graph *g);
/* Whether the file at path looks like an ONNX model (".onnx" suffix, or a
 * protobuf that is not MO text). */
bool rt_onnx_is_model_path(const char *path);

#endif
