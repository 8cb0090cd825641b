/* kiln/graph.h - graphs: from text, from a file, or built op by op.
 *
 * A kiln_graph is owned by the caller and freed with kiln_graph_free. Values
 * (kiln_value) belong to their graph and die with it. A graph is not
 * thread-safe to build from two threads; a finished graph may be compiled
 * from any thread. Dims are written as text: "5", "batch", "batch * seq",
 * "seq + 1", "n floordiv 4". */
#ifndef KILN_GRAPH_H
#define KILN_GRAPH_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_graph kiln_graph;
typedef struct kiln_value kiln_value;

/* Parse MO text. `filename` (may be NULL) prefixes error locations:
 * "FILE:LINE:COL: message". Attribute names in the kiln.* namespace
 * (kiln.transpose_b, kiln.packed_b, ...) are the runtime's and are refused.
 * Returns a new graph the caller owns and frees with kiln_graph_free, or
 * NULL on error (nothing to free). */
KILN_API kiln_graph *kiln_graph_parse(const char *text, size_t len, const char *filename,
                                      kiln_status *st);
/* Read and parse a file ("-" is not special here). Ownership as for
 * kiln_graph_parse. */
KILN_API kiln_graph *kiln_graph_load(const char *path, kiln_status *st);
KILN_API void kiln_graph_free(kiln_graph *g); /* NULL is a no-op */

/* Canonical text: a malloc'd string the caller frees with free(); NULL on
 * error. */
KILN_API char *kiln_graph_print(const kiln_graph *g, kiln_status *st);

/* ---- building ----
 * kiln_graph_new returns a new empty graph the caller owns (kiln_graph_free),
 * or NULL. Every kiln_value * returned below points into its graph: never
 * freed on its own, valid until kiln_graph_free of that graph; NULL on error
 * (the graph is left as it was before the call). */
KILN_API kiln_graph *kiln_graph_new(const char *name, kiln_status *st);
/* Declare symbolic dims up front (optional: without it, symbols are declared
 * by their first use). */
KILN_API int kiln_graph_declare_symbol(kiln_graph *g, const char *name, kiln_status *st);
/* A graph input. dims[rank] are dim texts. name may be NULL. */
KILN_API kiln_value *kiln_graph_add_input(kiln_graph *g, const char *name, kiln_dtype dtype,
                                          int rank, const char *const *dims, kiln_status *st);
/* The same, typed on gpu:N (gpu >= 0; -1: the host, as kiln_graph_add_input):
 * the value lives there, as a type's third parameter says in text. */
KILN_API kiln_value *kiln_graph_add_input_on(kiln_graph *g, const char *name, kiln_dtype dtype,
                                             int rank, const char *const *dims, int gpu,
                                             kiln_status *st);
/* An op by its MO name ("mo.add" or "add"). attrs is the attribute
 * dictionary in MO text ("{axis = -1}") or NULL; kiln.* names are refused
 * as in kiln_graph_parse. result_type is the declared
 * result type in MO text ("!mo.tensor<[batch * seq, 64], f32>"), required for
 * mo.reshape, mo.broadcast_to, mo.range (its length), the mo.resize ops,
 * mo.random.uniform / .normal, mo.slice_tensor with data bounds,
 * mo.nonzero and mo.non_maximum_suppression (dim 0 is the count: a symbol
 * of its own, set from data when the op runs) and mo.custom (one result
 * through this call; mo.inplace_custom's is operand 0's type), otherwise
 * NULL (inferred). Returns the
 * first result; kiln_value_result gives the others (mo.split). */
KILN_API kiln_value *kiln_graph_add_op(kiln_graph *g, const char *op, kiln_value *const *operands,
                                       int noperands, const char *attrs, const char *result_type,
                                       kiln_status *st);
/* The same with a declared type per result (result_types[nresults], MO
 * text; nresults 0: none): for ops of several results, such as mo.split with
 * symbolic sizes (-1 in split_sizes: the declared dim) and mo.custom with
 * several outputs (one result per type). nresults must equal the op's result
 * count. */
KILN_API kiln_value *kiln_graph_add_op_typed(kiln_graph *g, const char *op,
                                             kiln_value *const *operands, int noperands,
                                             const char *attrs, const char *const *result_types,
                                             int nresults, kiln_status *st);
/* Result i of the op that defined v (v itself for i == 0), owned by v's
 * graph. NULL if none. */
KILN_API kiln_value *kiln_value_result(kiln_value *v, int i);
/* A dense constant: data (row-major, numel elements) is copied. */
KILN_API kiln_value *kiln_graph_add_constant(kiln_graph *g, kiln_dtype dtype, int rank,
                                             const int64_t *shape, const void *data,
                                             kiln_status *st);
/* A weight bound by name when the model is executed (mo.constant.external). */
KILN_API kiln_value *kiln_graph_add_weight(kiln_graph *g, const char *name, kiln_dtype dtype,
                                           int rank, const char *const *dims, kiln_status *st);
/* Mark the outputs (names may be NULL) and verify the graph. */
KILN_API int kiln_graph_set_outputs(kiln_graph *g, kiln_value *const *values, int n,
                                    const char *const *names, kiln_status *st);
/* Verify again (parse and set_outputs already do). */
KILN_API int kiln_graph_verify(kiln_graph *g, kiln_status *st);

/* ---- control flow (MAX's ops.cond, ops.while_loop, ops.call) ----
 * Regions and subgraphs are graphs built with kiln_graph_new and finished
 * with kiln_graph_set_outputs. These calls copy them: the caller still owns
 * (and frees) its graphs.
 * kiln_graph_add_region_op adds "mo.if" (operands: a bool scalar predicate,
 * then the values both regions take; regions: then, else; a result type per
 * result, MO text) or "mo.while" (operands: the initial carried values;
 * regions: cond, which returns a bool scalar, and body, which returns the
 * next carried values; result_types: one per carried value, or nresults 0
 * for the operands' types). Regions see only their inputs. Returns the first
 * result (kiln_value_result gives the others), or NULL with st filled.
 * kiln_graph_add_subgraph adds sub to g's module under sub's name (names
 * are unique in a module); kiln_graph_add_op_typed(g, "mo.call", args, n,
 * "{callee = \"name\", prefix = \"layer0.\"}", types, ntypes, st) calls it
 * (prefix, optional, goes before the names of its weights). The calls are
 * checked against the subgraphs when g is verified (kiln_graph_set_outputs).
 * Returns 0 or -1. */
KILN_API kiln_value *kiln_graph_add_region_op(kiln_graph *g, const char *op,
                                              kiln_value *const *operands, int noperands,
                                              kiln_graph *const *regions, int nregions,
                                              const char *const *result_types, int nresults,
                                              kiln_status *st);
KILN_API int kiln_graph_add_subgraph(kiln_graph *g, kiln_graph *sub, kiln_status *st);

/* Type of a value: dtype, rank, and dim i as text into buf (snprintf-like). */
KILN_API kiln_dtype kiln_value_dtype(const kiln_value *v);
KILN_API int kiln_value_rank(const kiln_value *v);
KILN_API size_t kiln_value_dim(const kiln_value *v, int i, char *buf, size_t cap);
/* Where the value lives as the graph types it: -1 on the host (cpu, the
 * default), N on gpu:N (a type's third parameter, mo.transfer_to). -2 for
 * NULL. */
KILN_API int kiln_value_gpu(const kiln_value *v);

/* ---- mutable buffers and chains ----
 * A buffer input (`!mo.buffer<[dims], dtype>` in text) is a tensor the
 * graph changes in place: the caller passes it to kiln_model_execute like
 * any input, and stores through mo.mutable.store / mo.mutable.store.slice
 * write into the caller's memory, which keeps its contents for the next
 * execute (a KV cache). The graph reads it with mo.mutable.load. Every
 * buffer op takes a chain (`!mo.chain`, from mo.chain.create) and returns
 * the next; a chain is used once, and a buffer that is stored to is touched
 * from one chain only, so its loads and stores are ordered. Build them with
 * kiln_graph_add_op / _typed: "mo.chain.create" (result type "!mo.chain"),
 * "mo.buffer.create" (a "!mo.buffer<...>" result type), "mo.mutable.load"
 * (buffer, chain; results: the tensor, then the chain: kiln_value_result),
 * "mo.mutable.store" (buffer, tensor, chain), "mo.mutable.store.slice"
 * (buffer, tensor, start indices, chain). Buffer ops run on the CPU
 * runtime only (a device model refuses them, naming the op), and kiln takes
 * no lock on a buffer: executes that share one must not overlap. */
typedef enum kiln_value_kind {
  KILN_VALUE_TENSOR,
  KILN_VALUE_BUFFER,
  KILN_VALUE_CHAIN,
} kiln_value_kind;
/* A buffer input, as kiln_graph_add_input (on the host). */
KILN_API kiln_value *kiln_graph_add_buffer_input(kiln_graph *g, const char *name,
                                                 kiln_dtype dtype, int rank,
                                                 const char *const *dims, kiln_status *st);
/* What v is (KILN_VALUE_TENSOR for NULL). */
KILN_API kiln_value_kind kiln_value_kind_of(const kiln_value *v);

#ifdef __cplusplus
}
#endif
#endif
