/* kiln/onnx.h - ONNX models in: an ONNX file becomes a kiln graph.
 *
 * Each ONNX node becomes kiln ops with ONNX's semantics; dim_param names
 * become symbolic dims (unnamed unknown dims get generated names), so one
 * import serves every batch and sequence length. Shape-computing subgraphs
 * (Shape -> Gather -> Concat -> Reshape, ...) are folded at import into
 * dims. Small initializers (and those used as shape or axes data) become
 * constants; the others become weights (mo.constant.external) named after
 * the initializer, and the graph carries their data: kiln_model_compile /
 * kiln_model_compile_on bind them by name, the model keeping the data alive
 * after the graph is freed. kiln_model_bind_weight still overrides one.
 * From a file, initializers are mapped, not copied: the raw_data of the
 * model graph's initializers is read in place from the file's read-only
 * mapping, and external data files (location / offset / length, relative
 * to the model's directory) are mapped too; the mappings live as long as
 * the graph or any model compiled from it. A weight whose bytes are not
 * aligned for its dtype is copied when a model binds it; a weight a model
 * reads only through its packed copy has its mapped pages given back once
 * bound (read again from the file if ever needed), so the file must not
 * change while the graph or its models live.
 *
 * Errors: a malformed or truncated file (a file cut inside an initializer
 * names it), a missing external data file, an offset or length outside it,
 * an initializer whose size does not match its type: KILN_ERR_IO /
 * KILN_ERR_NOT_FOUND naming the tensor. Ops kiln cannot
 * express: one KILN_ERR_UNSUPPORTED listing every unsupported op type with
 * its node names and the opset. */
#ifndef KILN_ONNX_H
#define KILN_ONNX_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Import the ONNX model at path. Returns a new graph the caller owns
 * (kiln_graph_free), or NULL with st filled. */
KILN_API kiln_graph *kiln_graph_from_onnx_file(const char *path, kiln_status *st);
/* The same from a model in memory (copied as needed: data may be freed
 * afterwards). External data is refused here: it needs the model's
 * directory. */
KILN_API kiln_graph *kiln_graph_from_onnx_memory(const void *data, size_t len, kiln_status *st);

#ifdef __cplusplus
}
#endif
#endif
