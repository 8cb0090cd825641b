/* kiln/runtime.h - contexts, tensors, compiled models and execution.
 *
 * A kiln_context holds the JIT and (later) the thread pool, caches and
 * devices; one per process is typical, two may live side by side. Models are
 * compiled in a context and must be freed before it. kiln_model_execute may
 * be called from several threads at once on the same model.
 * Tensors are dense, row-major, on the CPU. A tensor either owns its memory
 * (kiln_tensor_new, outputs kiln allocates) or borrows the caller's
 * (kiln_tensor_borrow: the caller keeps the memory alive and frees it). */
#ifndef KILN_RUNTIME_H
#define KILN_RUNTIME_H

#include "common.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_context kiln_context;
typedef struct kiln_tensor kiln_tensor;
typedef struct kiln_model kiln_model;

/* ---- context ---- */
KILN_API kiln_context *kiln_context_new(kiln_status *st);
KILN_API void kiln_context_free(kiln_context *ctx);
/* Host target as the JIT sees it: "x86_64-pc-linux-gnu znver4 +avx512f,...". */
KILN_API const char *kiln_context_target(const kiln_context *ctx);

/* ---- threads ----
 * A context splits big kernels across a persistent pool of threads (the
 * calling thread plus n - 1 workers, started on first use, never per call).
 * Default: KILN_NUM_THREADS when set, else the number of online cores.
 * n >= 1; 0 restores the default. Must not be called while an execute runs
 * on the context. */
KILN_API int kiln_context_set_num_threads(kiln_context *ctx, int n, kiln_status *st);
KILN_API int kiln_context_num_threads(const kiln_context *ctx); /* -1 for NULL */

/* ---- tensors ---- */
/* Owned, zero-filled, 64-byte aligned. */
KILN_API kiln_tensor *kiln_tensor_new(kiln_dtype dtype, int rank, const int64_t *shape,
                                      kiln_status *st);
/* Borrowed: kiln reads / writes `data` but never frees it. */
KILN_API kiln_tensor *kiln_tensor_borrow(kiln_dtype dtype, int rank, const int64_t *shape,
                                         void *data, kiln_status *st);
KILN_API void kiln_tensor_free(kiln_tensor *t);
KILN_API void *kiln_tensor_data(const kiln_tensor *t);
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API int kiln_tensor_rank(const kiln_tensor *t);
KILN_API const int64_t *kiln_tensor_shape(const kiln_tensor *t); /* rank entries, owned by t */
KILN_API int64_t kiln_tensor_numel(const kiln_tensor *t);
KILN_API size_t kiln_tensor_nbytes(const kiln_tensor *t);

/* ---- models ---- */
/* Verify, lower and JIT-compile g. The model keeps its own copy of what it
 * needs: g may be freed afterwards. NULL on error. */
KILN_API kiln_model *kiln_model_compile(kiln_context *ctx, const kiln_graph *g, kiln_status *st);
KILN_API void kiln_model_free(kiln_model *m);
KILN_API double kiln_model_compile_ms(const kiln_model *m); /* wall time of kiln_model_compile */

/* Inputs and outputs: names (argument_names / result_names, else the SSA
 * name), dtypes, ranks and dims. A dim is given as text ("batch", "784") and,
 * when static, as a number (-1 when symbolic). Index out of range: NULL / -1. */
KILN_API int kiln_model_num_inputs(const kiln_model *m);
KILN_API int kiln_model_num_outputs(const kiln_model *m);
KILN_API const char *kiln_model_input_name(const kiln_model *m, int i);
KILN_API const char *kiln_model_output_name(const kiln_model *m, int i);
KILN_API kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i);
KILN_API kiln_dtype kiln_model_output_dtype(const kiln_model *m, int i);
KILN_API int kiln_model_input_rank(const kiln_model *m, int i);
KILN_API int kiln_model_output_rank(const kiln_model *m, int i);
KILN_API const char *kiln_model_input_dim(const kiln_model *m, int i, int axis);  /* owned by m */
KILN_API const char *kiln_model_output_dim(const kiln_model *m, int i, int axis); /* owned by m */
KILN_API int64_t kiln_model_input_dim_static(const kiln_model *m, int i, int axis);
KILN_API int64_t kiln_model_output_dim_static(const kiln_model *m, int i, int axis);
KILN_API int kiln_model_input_index(const kiln_model *m, const char *name);  /* -1 if none */
KILN_API int kiln_model_output_index(const kiln_model *m, const char *name); /* -1 if none */

/* Weights (mo.constant.external), by name. */
KILN_API int kiln_model_num_weights(const kiln_model *m);
KILN_API const char *kiln_model_weight_name(const kiln_model *m, int i);
KILN_API kiln_dtype kiln_model_weight_dtype(const kiln_model *m, int i);
KILN_API int kiln_model_weight_rank(const kiln_model *m, int i);
KILN_API const char *kiln_model_weight_dim(const kiln_model *m, int i, int axis);
/* Bind a weight by name. The model borrows t's memory (keep it alive until
 * the model is freed or the weight is bound again); dtype and shape are
 * checked against the graph. Not thread-safe against a running execute. */
KILN_API int kiln_model_bind_weight(kiln_model *m, const char *name, const kiln_tensor *t,
                                    kiln_status *st);

/* Execute. inputs[num_inputs] in order (shapes solve the symbolic dims).
 * outputs[num_outputs]: where outputs[i] is NULL kiln allocates an owned
 * tensor and stores it there (the caller frees it); where it is a tensor, it
 * must have the output's dtype and shape and kiln writes into it. On error
 * no NULL slot is filled. Returns 0 or -1. */
KILN_API int kiln_model_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                                kiln_tensor **outputs, int noutputs, kiln_status *st);

/* ---- shape-specialized variants ----
 * Every model has a generic variant (dims read at run time, compiled by
 * kiln_model_compile). A specialized variant binds every symbolic dim to a
 * constant (LLVM then unrolls and folds for that shape); its kernels go
 * through the same kernel cache (memory and disk). Policies:
 *   OFF   executes always run the generic variant (the default: a new shape
 *         under SYNC pays a full compile of every kernel on the request path);
 *   SYNC  an execute with a binding that has no variant compiles one before
 *         it returns, and runs on it;
 *   AHEAD executes use only variants declared with kiln_model_specialize.
 * At most 8 variants per model, least recently used evicted. A graph with no
 * symbolic dims never gets one. Bit for bit the same results as the generic
 * variant is not promised in general (LLVM may reassociate differently). */
typedef enum kiln_specialize_policy {
  KILN_SPECIALIZE_OFF = 0,
  KILN_SPECIALIZE_SYNC = 1,
  KILN_SPECIALIZE_AHEAD = 2,
} kiln_specialize_policy;

/* Policy of every model of ctx that has none of its own. */
KILN_API int kiln_context_set_specialize(kiln_context *ctx, kiln_specialize_policy p,
                                         kiln_status *st);
/* Policy of m (overrides its context's). Safe while executes run. */
KILN_API int kiln_model_set_specialize(kiln_model *m, kiln_specialize_policy p, kiln_status *st);
/* Compile (or fetch) the variant for the binding syms[i] = values[i], now,
 * whatever the policy; every symbolic dim of the graph must be given. A
 * graph without symbols: nothing to do, returns 0. */
KILN_API int kiln_model_specialize(kiln_model *m, const char *const *syms, const int64_t *values,
                                   int n, kiln_status *st);
/* Specialized variants live in m (-1 for NULL). */
KILN_API int kiln_model_variants(const kiln_model *m);

#ifdef __cplusplus
}
#endif
#endif
