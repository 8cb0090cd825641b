/* max/c/model.h - compiling, initializing and running models with kiln's
 * MAX C API layer.
 *
 * The model path is a kiln graph in MO text (.mlir). Flow: M_newCompileConfig
 * -> M_setModelPath -> M_compileModel (asynchronous: a compile thread; its
 * result or error surfaces at M_waitForCompilation, M_initModel's wait or the
 * first execute) or M_compileModelSync -> M_initModel (asynchronous: binds the
 * registry's weights to the graph's mo.constant.external by name, no
 * recompile) -> M_executeModelSync. Inputs are named by the graph's
 * argument_names (else input0, input1, ...), outputs by its result_names
 * (else output0, ...). Symbolic dims take their values from the input
 * tensors' shapes; a disagreement is an error whose message contains
 * "symbolic dimension".
 * Capture / replay (host, or the accelerator's device model): a capture runs the model and records, under
 * the key, the input signature (dtypes and shapes) and the output tensors; a
 * replay runs the model again on inputs of that signature (the data may be
 * new, at any address) and writes the captured output tensors in place; a
 * verify replays and compares the outputs with a fresh eager run.
 * Free models before their compiled model's context; every free is a no-op
 * on NULL. A model may be executed from several threads at once. */
#ifndef MAX_C_MODEL_H
#define MAX_C_MODEL_H

#include <stdint.h>

#include "max/c/types.h"

MAX_C_BEGIN

/* Owned by the caller until handed to M_compileModel[Sync]. NULL when out of
 * memory. */
MAX_C_API M_CompileConfig *M_newCompileConfig(void);
/* path is copied; the file is read at compile time. */
MAX_C_API void M_setModelPath(M_CompileConfig *compileConfig, const char *path);

/* Starts compiling in the background and returns at once. Takes ownership of
 * *compileConfig and sets it to NULL whatever happens. NULL (with status)
 * only for a bad context or config (no path); a compile error surfaces at
 * M_waitForCompilation. Owned by the caller: M_freeCompiledModel. */
MAX_C_API M_AsyncCompiledModel *M_compileModel(const M_RuntimeContext *context,
                                               M_CompileConfig **compileConfig,
                                               M_Status *status);
/* Blocks until compiled; status holds the compile error, if any. */
MAX_C_API void M_waitForCompilation(M_AsyncCompiledModel *compiledModel, M_Status *status);
/* Compiles now: NULL with status on any error. Otherwise as M_compileModel. */
MAX_C_API M_AsyncCompiledModel *M_compileModelSync(const M_RuntimeContext *context,
                                                   M_CompileConfig **compileConfig,
                                                   M_Status *status);

/* Starts initializing in the background and returns at once (compiledModel
 * need not be compiled yet). weightsRegistry may be NULL when the graph has
 * no weights; its entries are copied now (the data stays borrowed), so it
 * may be freed when this returns. status has an error only for a bad
 * context or compiled model; other errors surface at M_waitForModel or at
 * the first execute. compiledModel may be freed before the model. Owned by
 * the caller: M_freeModel. */
MAX_C_API M_AsyncModel *M_initModel(const M_RuntimeContext *context,
                                    const M_AsyncCompiledModel *compiledModel,
                                    const M_WeightsRegistry *weightsRegistry, M_Status *status);
MAX_C_API void M_waitForModel(M_AsyncModel *model, M_Status *status);

/* Runs the model on the map's tensors (one per input, by name; a tensor the
 * model does not take is an error). Returns a new map of the outputs, by
 * name (owned by the caller: M_freeAsyncTensorMap), or NULL with status. */
MAX_C_API M_AsyncTensorMap *M_executeModelSync(const M_RuntimeContext *context,
                                               M_AsyncModel *initializedModel,
                                               M_AsyncTensorMap *inputs, M_Status *status);

/* Capture under graphKeys[0] (the host is one device: exactly one key).
 * inputs[numInputs] in model input order. Returns a malloc'd array of
 * *numOutputs new tensors (free each with M_freeTensor, the array with
 * free()), rewritten by every replay of the key. Capturing a key already
 * captured is an error (release it first). */
MAX_C_API M_AsyncTensor **M_captureModelSync(const M_RuntimeContext *context,
                                             M_AsyncModel *initializedModel,
                                             const uint64_t *graphKeys, size_t numGraphKeys,
                                             M_AsyncTensor *const *inputs, size_t numInputs,
                                             size_t *numOutputs, M_Status *status);
/* Replays the key on inputs of the captured dtypes and shapes (else an
 * error naming the key and the input). */
MAX_C_API void M_replayModelSync(const M_RuntimeContext *context, M_AsyncModel *initializedModel,
                                 const uint64_t *graphKeys, size_t numGraphKeys,
                                 M_AsyncTensor *const *inputs, size_t numInputs,
                                 M_Status *status);
/* Replays the key and runs the model eagerly on the same inputs; an error
 * names the first output element that differs (f32 / f64: by more than a
 * relative 1e-5, as the two runs may use different shape-specialized
 * variants; other dtypes: any bit). */
MAX_C_API void M_debugVerifyReplayModelSync(const M_RuntimeContext *context,
                                            M_AsyncModel *initializedModel,
                                            const uint64_t *graphKeys, size_t numGraphKeys,
                                            M_AsyncTensor *const *inputs, size_t numInputs,
                                            M_Status *status);
/* Forgets the keys (a key never captured is skipped). The output tensors
 * returned by the capture stay valid until freed. */
MAX_C_API void M_releaseCapturedGraphs(const M_RuntimeContext *context,
                                       M_AsyncModel *initializedModel, const uint64_t *graphKeys,
                                       size_t numGraphKeys, M_Status *status);

/* Each free first waits for the object's background work (init, compile)
 * to finish. A model's captured graphs go with it; the output tensors a
 * capture returned stay valid until freed. */
MAX_C_API void M_freeModel(M_AsyncModel *model);                 /* no-op on NULL */
MAX_C_API void M_freeCompiledModel(M_AsyncCompiledModel *model); /* no-op on NULL */
MAX_C_API void M_freeCompileConfig(M_CompileConfig *config);     /* no-op on NULL */

MAX_C_END
#endif /* MAX_C_MODEL_H */
