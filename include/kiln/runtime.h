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
/* A new context, owned by the caller (free it with kiln_context_free, after
 * its models). NULL with st filled on error, also when KILN_CODE_MAX_BYTES
 * is set but is not a byte count. */
KILN_API kiln_context *kiln_context_new(kiln_status *st);
/* Free ctx (NULL: nothing to do): its compile thread, workers, loaded
 * code. A context whose models are not all freed yet (kiln_model_free) is
 * NOT freed, since their executes run its code: kiln_context_free then
 * prints why on stderr and leaks the context (a leak is recoverable, a use
 * after free is not); kiln_context_free_checked returns -1 with st saying
 * so (KILN_ERR_INVALID_ARGUMENT), ctx untouched and still the caller's, and
 * prints nothing. Both return with ctx freed otherwise (0). Freeing a
 * context while a call on it, or on a model of it, is running is undefined. */
KILN_API void kiln_context_free(kiln_context *ctx);
KILN_API int kiln_context_free_checked(kiln_context *ctx, kiln_status *st);
/* Host target as the JIT sees it: "x86_64-pc-linux-gnu znver4 +avx512f,...".
 * Owned by ctx, valid until it is freed ("" for NULL). */
KILN_API const char *kiln_context_target(const kiln_context *ctx);

/* ---- loaded code ----
 * A context keeps each compiled kernel loaded while a model or a
 * specialized variant uses it. Kernels no one uses any more stay loaded
 * (the next model or shape that needs them finds them at once) while their
 * code fits max_bytes, counted as the size of their object code; past it,
 * the least recently used of them are unloaded, and a later model or
 * variant that needs one loads it again from the disk cache, or compiles
 * it, transparently. Kernels in use are never unloaded, so the bound does
 * not limit the code of live models. 0 keeps no unused kernel loaded;
 * SIZE_MAX never unloads one. Default: 8 MiB (some 4,000 small kernels; a
 * loaded kernel holds about 4 times its object size in memory, its
 * sections being page-aligned), or KILN_CODE_MAX_BYTES when the context is
 * created (a byte count: "8388608", "8M", "1G"). Applies
 * at once; safe while other threads compile and execute on ctx. Counters:
 * KILN_COUNTER_KERNELS_EVICTED, KILN_COUNTER_CODE_BYTES. */
KILN_API int kiln_context_set_code_limit(kiln_context *ctx, size_t max_bytes, kiln_status *st);

/* ---- logs ----
 * One line per event: a kernel compiled (info), loaded from the disk cache
 * or unloaded (debug), evicted by the code bound (info), a corrupt
 * disk-cache entry found and removed, a setting that did not work (warn).
 * Default: KILN_LOG=off|warn|info|debug when the context is created, else
 * warn (KILN_QUIET=1: off); lines go to stderr as "kiln: warning: ...",
 * "kiln: info: ...". kiln_context_set_log sends the lines at or above
 * `level` (KILN_LOG_OFF: none) to fn instead (NULL fn: stderr): fn gets the
 * line without prefix or newline (borrowed for the call), is called from
 * whichever thread logs (compile threads included) but never twice at once
 * for one context, and must not call back into kiln. user is passed as
 * is. Safe while other threads run on ctx. */
typedef enum kiln_log_level {
  KILN_LOG_OFF = 0,
  KILN_LOG_WARN = 1,
  KILN_LOG_INFO = 2,
  KILN_LOG_DEBUG = 3,
} kiln_log_level;
typedef void (*kiln_log_fn)(void *user, kiln_log_level level, const char *line);
KILN_API int kiln_context_set_log(kiln_context *ctx, kiln_log_fn fn, void *user,
                                  kiln_log_level level, kiln_status *st);
KILN_API kiln_log_level kiln_context_log_level(const kiln_context *ctx);

/* ---- traces ----
 * Chrome trace-event JSON (Perfetto and chrome://tracing open it): compile
 * phases per kernel (prepare, lower, O3, codegen, load, disk read; a
 * device kernel's disk read, compile, link, disk write and load), the
 * background compile thread on its own track, each execute and each kernel
 * it ran (split kernels: each part on its pool worker's track), cache hits
 * and misses as instant events. A device model's launches and its copies
 * in and out are spans on the device's own track ("cuda:0", "simt-emu"),
 * timed on the device's clock where it has events (CUDA, HIP) and by the
 * host's on simt-emu; a recorded capture replays launch by launch while a
 * trace is open or a profile is on, so that every kernel is seen.
 * kiln_context_set_trace starts writing to path (created or truncated;
 * NULL stops and closes the current trace); KILN_TRACE=path does the same
 * when the context is created (one file per context: a second context
 * opening the same path truncates it). Events are buffered (at most 1 MiB)
 * and written when the buffer fills, on kiln_context_flush_trace, when
 * tracing stops and when the context is freed. After each write the file
 * is a complete JSON array, so a process that exits without freeing its
 * context loses only the events since the last write. With tracing off an
 * execute pays one predictable branch per kernel; with it on, about 1 us
 * per event written (a kernel call, each part of a split kernel;
 * bench_observe). Thread-safe. */
KILN_API int kiln_context_set_trace(kiln_context *ctx, const char *path, kiln_status *st);
KILN_API int kiln_context_flush_trace(kiln_context *ctx, kiln_status *st);
/* Profilers: with KILN_PERF=1 in the environment when a context is
 * created, each kernel it loads (and the prebuilt GEMM's functions) gets a
 * line in /tmp/perf-PID.map (perf's convention for JIT code) naming it by
 * its ops and shape, "kiln mo.add+mo.relu [d0, 128] f32 kiln_k_<hex>", so
 * `perf report` shows those names instead of [JIT] tid. The file is left
 * for perf after the process exits. The same switch registers each loaded
 * object with debuggers (gdb's JIT interface), so gdb's backtraces and
 * `info functions kiln_k_` name kernels. */

/* ---- profiles ----
 * Per-kernel times of a model's executes. kiln_model_set_profile(m, 1)
 * starts counting m's kernel calls (from zero; 0 stops, keeping the
 * counts); kiln_context_set_profile does it for every model of ctx, those
 * compiled later included. kiln_model_profile returns a snapshot owned by
 * the caller (kiln_profile_free), one row per kernel node of m in graph
 * order; a device model's then has two rows for its copies ("copy in" and
 * "copy out", node -1: their calls, time and bytes) and a last one,
 * "launches and waits" (node -1, no bytes): the executes' time that no
 * kernel or copy accounts for (on a GPU kernels are timed on the device's
 * clock, so launch costs and idle gaps show there). Rows and their strings
 * are owned by the snapshot. NULL with st on error (a graph with control
 * flow has no profile: its regions are models of their own). A profiled
 * kernel call costs two clock reads (on a GPU, two events instead). */
KILN_API int kiln_context_set_profile(kiln_context *ctx, int on, kiln_status *st);
typedef struct kiln_profile kiln_profile;
typedef struct kiln_profile_row {
  int node;          /* the node's index in the compiled (fused) graph; -1: copies */
  const char *kernel;/* "mo.matmul", or a fused group "mo.add+mo.relu" */
  const char *shape; /* its first result's type as compiled: "[batch, 128] f32" */
  uint64_t calls;
  double total_ms, mean_ms;
  double share;      /* of the total of every row's total_ms, 0..1 */
  double gflop;      /* floating-point operations over all calls, 1e9 (0: not counted) */
  double gbyte;      /* bytes of its operands and results over all calls, 1e9 */
} kiln_profile_row;
KILN_API kiln_profile *kiln_model_profile(const kiln_model *m, kiln_status *st);
KILN_API void kiln_profile_free(kiln_profile *p);
KILN_API int kiln_profile_num_rows(const kiln_profile *p); /* -1 for NULL */
KILN_API const kiln_profile_row *kiln_profile_row_at(const kiln_profile *p, int i); /* owned by p */
/* Executes of the model counted (kiln_model_execute and kiln_model_replay),
 * and their wall time (from entry to return). */
KILN_API uint64_t kiln_profile_executes(const kiln_profile *p);
KILN_API double kiln_profile_execute_ms(const kiln_profile *p);

/* ---- threads ----
 * A context splits big kernels across a persistent pool of threads (the
 * calling thread plus n - 1 workers, started on first use, never per call).
 * Default: KILN_NUM_THREADS when set, else the number of CPUs the calling
 * thread may run on (its affinity mask). n >= 1; 0 restores the default.
 * Must not be called while an execute runs on the context. When n is that
 * number of CPUs (the default), each worker is bound to a CPU of its own,
 * away from the caller's (rebound when the caller moves); KILN_PIN_THREADS=0
 * turns that off. Fewer threads stay unbound. The calling thread is never
 * bound. The calling thread runs a share of each kernel itself: the GEMM
 * and quantized-matmul kernels keep their packing buffers on the stack
 * (up to ~0.6 MiB), so call executes from threads with at least 1 MiB of
 * stack (glibc's default is 8 MiB; the pool's workers get the default). */
KILN_API int kiln_context_set_num_threads(kiln_context *ctx, int n, kiln_status *st);
KILN_API int kiln_context_num_threads(const kiln_context *ctx); /* -1 for NULL */

/* ---- tensors ----
 * Both constructors return a tensor owned by the caller (free it with
 * kiln_tensor_free), or NULL with st filled. */
/* Its memory owned by the tensor: zero-filled, 64-byte aligned. */
KILN_API kiln_tensor *kiln_tensor_new(kiln_dtype dtype, int rank, const int64_t *shape,
                                      kiln_status *st);
/* Borrowed: kiln reads / writes `data` but never frees it. */
KILN_API kiln_tensor *kiln_tensor_borrow(kiln_dtype dtype, int rank, const int64_t *shape,
                                         void *data, kiln_status *st);
KILN_API void kiln_tensor_free(kiln_tensor *t);
/* The elements: owned by t (kiln_tensor_new, outputs kiln allocated) or the
 * caller's memory given to kiln_tensor_borrow; valid while t lives. */
KILN_API void *kiln_tensor_data(const kiln_tensor *t);
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API int kiln_tensor_rank(const kiln_tensor *t);
KILN_API const int64_t *kiln_tensor_shape(const kiln_tensor *t); /* rank entries, owned by t */
KILN_API int64_t kiln_tensor_numel(const kiln_tensor *t);
KILN_API size_t kiln_tensor_nbytes(const kiln_tensor *t);

/* ---- models ---- */
/* Verify, lower and JIT-compile g. The model keeps its own copy of what it
 * needs: g may be freed afterwards. The model is owned by the caller: free
 * it with kiln_model_free, before ctx. NULL with st filled on error. */
KILN_API kiln_model *kiln_model_compile(kiln_context *ctx, const kiln_graph *g, kiln_status *st);
/* Free m (NULL: nothing to do). Executes on m already running in other
 * threads (kiln_model_execute, _capture, _replay, _verify_replay,
 * _release) are waited for: the call returns once the last of them has
 * returned, then frees. One that starts while the free waits is refused
 * (-1, KILN_ERR_INVALID_ARGUMENT, "the model is being freed"); but the
 * caller must not start any call on m once kiln_model_free may have begun:
 * once the in-flight executes are done, m is gone, and a call starting
 * then is a use after free. Other calls on m (binding weights,
 * specializing) must not run concurrently with the free. */
KILN_API void kiln_model_free(kiln_model *m);
KILN_API double kiln_model_compile_ms(const kiln_model *m); /* wall time of kiln_model_compile */
/* Count m's kernel times (1) or stop (0); see kiln_model_profile. */
KILN_API int kiln_model_set_profile(kiln_model *m, int on, kiln_status *st);

/* Inputs and outputs: names (argument_names / result_names, else the SSA
 * name), dtypes, ranks and dims. A dim is given as text ("batch", "784") and,
 * when static, as a number (-1 when symbolic). Index out of range: NULL / -1.
 * Strings are owned by m and valid until it is freed. */
KILN_API int kiln_model_num_inputs(const kiln_model *m);
KILN_API int kiln_model_num_outputs(const kiln_model *m);
KILN_API const char *kiln_model_input_name(const kiln_model *m, int i);  /* owned by m */
KILN_API const char *kiln_model_output_name(const kiln_model *m, int i); /* owned by m */
KILN_API kiln_dtype kiln_model_input_dtype(const kiln_model *m, int i);
KILN_API kiln_dtype kiln_model_output_dtype(const kiln_model *m, int i);
KILN_API int kiln_model_input_rank(const kiln_model *m, int i);
KILN_API int kiln_model_output_rank(const kiln_model *m, int i);
/* 1 when input i is a buffer (`!mo.buffer`, kiln/graph.h): kiln_model_execute
 * writes into the tensor given for it, in place; 0 for a tensor; -1 out of range. */
KILN_API int kiln_model_input_is_buffer(const kiln_model *m, int i);
KILN_API const char *kiln_model_input_dim(const kiln_model *m, int i, int axis);  /* owned by m */
KILN_API const char *kiln_model_output_dim(const kiln_model *m, int i, int axis); /* owned by m */
KILN_API int64_t kiln_model_input_dim_static(const kiln_model *m, int i, int axis);
KILN_API int64_t kiln_model_output_dim_static(const kiln_model *m, int i, int axis);
KILN_API int kiln_model_input_index(const kiln_model *m, const char *name);  /* -1 if none */
KILN_API int kiln_model_output_index(const kiln_model *m, const char *name); /* -1 if none */

/* Weights (mo.constant.external), by name. Strings are owned by m and
 * valid until it is freed; NULL / -1 for an index out of range. */
KILN_API int kiln_model_num_weights(const kiln_model *m);
KILN_API const char *kiln_model_weight_name(const kiln_model *m, int i); /* owned by m */
KILN_API kiln_dtype kiln_model_weight_dtype(const kiln_model *m, int i);
KILN_API int kiln_model_weight_rank(const kiln_model *m, int i);
KILN_API const char *kiln_model_weight_dim(const kiln_model *m, int i, int axis); /* owned by m */
/* Bind a weight by name. The model borrows t's memory (keep it alive until
 * the model is freed or the weight is bound again); dtype and shape are
 * checked against the graph. Where the weight is the B operand of an f32 /
 * f64 mo.matmul and has a static rank-2 shape, or the static filter
 * [R, S, C, F] of a one-group f32 / f64 mo.conv2d (B = the (R * S * C) x F
 * matrix), the model also packs a copy of it now, in the GEMM's layout
 * (ceil(N / 32) * 32 * K elements on an AVX-512 host, 16 wide otherwise;
 * freed when the weight is bound again or the model is freed), and those
 * ops read the copy: changes to t's data after binding are not seen by
 * them until the weight is bound again (other ops read t's memory at each
 * execute, so until then they may see the new values and the packed ops
 * the old). Bind again after changing the
 * data. Fails (the previous binding stays) when the copy cannot be
 * allocated. Not thread-safe against a running execute. */
KILN_API int kiln_model_bind_weight(kiln_model *m, const char *name, const kiln_tensor *t,
                                    kiln_status *st);
/* The same, but m takes t (on success the model owns it: the caller must
 * neither use nor free it; on failure it is still the caller's). Where
 * every read of the weight is a GEMM's packed operand (the usual case for
 * a linear layer's weight), the model keeps only the packed copy and frees
 * t's data at once, so the weight is resident once instead of twice; else
 * it keeps t until the weight is bound again or the model is freed. On a
 * device, t is copied there and freed. */
KILN_API int kiln_model_take_weight(kiln_model *m, const char *name, kiln_tensor *t,
                                    kiln_status *st);
/* Whether m reads the memory of the tensor bound to weight `name` at each
 * execute: 1 yes (keep it alive and unchanged, as kiln_model_bind_weight
 * says); 0 no: every read is of the model's own copy (the packed copy of
 * a GEMM operand, or the device's), so after kiln_model_bind_weight the
 * caller may free the memory or give back a file mapping's pages
 * (madvise) until the weight is bound again; -1 for NULL or an unknown
 * name. */
KILN_API int kiln_model_weight_needs_data(const kiln_model *m, const char *name);
/* Bind the weights of m found by name in the weights file at `path`: a
 * GGUF file (v2 / v3, told by its magic: f32, f16, bf16 tensors and the
 * block types q4_0, q8_0, q4_k, q5_k, q6_k, which bind as uint8 [..., N,
 * K / block * block bytes], the operand of mo.qmatmul and mo.dequantize) or
 * else a .safetensors file. Tensors that name no weight of m are skipped.
 * The file stays mapped (read in place, not copied, where aligned) as long
 * as m. -1 with st naming the file and what is wrong with it (bad magic or
 * version, a truncated header, a tensor past the end, an unknown type) or
 * the weight that does not bind; weights bound before a failure stay bound. */
KILN_API int kiln_model_bind_weights_file(kiln_model *m, const char *path, kiln_status *st);

/* Execute. inputs[num_inputs] in order (shapes solve the symbolic dims).
 * outputs[num_outputs]: where outputs[i] is NULL kiln allocates an owned
 * tensor and stores it there (the caller frees it); where it is a tensor, it
 * must have the output's dtype and shape and kiln writes into it. On error
 * no NULL slot is filled. Returns 0 or -1. */
KILN_API int kiln_model_execute(kiln_model *m, kiln_tensor *const *inputs, int ninputs,
                                kiln_tensor **outputs, int noutputs, kiln_status *st);

/* ---- shape-specialized variants ----
 * Every model has a generic variant (dims read at run time, compiled by
 * kiln_model_compile). A specialized variant binds symbolic dims to
 * constants (LLVM then unrolls and folds for that shape); its kernels go
 * through the same kernel cache (memory and disk). Policies:
 *   OFF   executes always run the generic variant;
 *   SYNC  an execute with a binding that has no variant compiles one before
 *         it returns, and runs on it (a new shape pays a full compile of
 *         every kernel on the request path);
 *   AHEAD executes use only variants declared with kiln_model_specialize;
 *   ASYNC (the default of a new context) an execute with a binding that has
 *         no variant runs on the generic variant at once and, once the
 *         binding is hot (kiln_context_set_specialize_hot below: what async
 *         compiles and when it drops a variant), queues the
 *         specialized compile on the context's compile thread (one per
 *         context, started on first use, at a lower CPU priority); later
 *         executes use the variant once it is live. No execute ever waits
 *         for a compile. Queued bindings are deduplicated; the queue holds
 *         at most 64 jobs, and a model at most its variant bound of them
 *         (more are not queued: a later execute asks again).
 *         kiln_model_free cancels the model's queued jobs and waits at
 *         most for the one kernel being compiled for it.
 * KILN_SPECIALIZE=off|sync|async|ahead in the environment sets a new
 * context's policy instead (an unknown value is ignored).
 * At most 8 variants per model by default (settable), least recently used
 * evicted. A graph with no symbolic dims never gets one. A binding whose
 * specialized compile failed keeps running on the generic variant and is
 * not retried. Bit for bit the same results as the generic variant are not
 * promised in general (LLVM may reassociate differently). */
typedef enum kiln_specialize_policy {
  KILN_SPECIALIZE_OFF = 0,
  KILN_SPECIALIZE_SYNC = 1,
  KILN_SPECIALIZE_AHEAD = 2,
  KILN_SPECIALIZE_ASYNC = 3,
} kiln_specialize_policy;

/* What ASYNC compiles, so that specialization pays for itself in a service
 * that sees many shapes a few times each:
 *   - a binding is queued once it is hot: executed `executes` times within
 *     the model's last 256 executes (default 3; 1 queues on first sight);
 *     before that its executes count KILN_COUNTER_COLD;
 *   - only kernels a bound shape can speed up are specialized: on the CPU
 *     an f32 / f64 GEMM (fused or not) runs the same prebuilt kernel either
 *     way, so a variant reuses the generic one; a graph with nothing else
 *     symbolic never gets a variant;
 *   - a hot binding is not specialized when the kernels a variant would
 *     rebuild are estimated at under 5% of its execute's time (a roofline
 *     of each kernel at that shape: bytes moved, a GEMM's flops), since no
 *     variant could then pay for its compile (KILN_COUNTER_SPEC_SKIPPED;
 *     the compile thread weighs a queued binding before compiling it, so
 *     the execute that found it hot does not walk the graph);
 *   - a new variant's first 5 executes are timed against the binding's
 *     generic executes; one that is not 3% faster is dropped
 *     (KILN_COUNTER_DROPPED) and that binding is not specialized again;
 *   - a symbol without a bucket of the caller's (kiln_model_set_bucket)
 *     that takes more than 8 distinct values gets pow2 buckets
 *     (KILN_COUNTER_AUTO_BUCKETS);
 *   - a symbol the caller bucketed that grew at each of the last 8
 *     executes (a decoder's sequence length) gets the variant of its next
 *     bucket queued as soon as its binding is hot or live, so the variant
 *     is ready when the dim crosses into that bucket
 *     (KILN_COUNTER_SPEC_AHEAD; automatic buckets never look ahead);
 *   - the compile thread waits while executes run on a context whose
 *     threads cover every CPU (or on a machine of 2 CPUs or fewer), and
 *     rests as long as each kernel took to compile (half a core at most).
 * SYNC and AHEAD compile what they are asked (the GEMM rule applies).
 * executes >= 1; 0 restores the default. */
KILN_API int kiln_context_set_specialize_hot(kiln_context *ctx, int executes, kiln_status *st);

/* Policy of every model of ctx that has none of its own. */
KILN_API int kiln_context_set_specialize(kiln_context *ctx, kiln_specialize_policy p,
                                         kiln_status *st);
KILN_API kiln_specialize_policy kiln_context_specialize_policy(const kiln_context *ctx);
/* Policy of m (overrides its context's). Safe while executes run. */
KILN_API int kiln_model_set_specialize(kiln_model *m, kiln_specialize_policy p, kiln_status *st);
/* Compile (or fetch) the variant for the binding syms[i] = values[i], now,
 * whatever the policy; every symbolic dim of the graph must be given
 * (bucketed ones too: the value picks the bucket). A graph without
 * symbols: nothing to do, returns 0. */
KILN_API int kiln_model_specialize(kiln_model *m, const char *const *syms, const int64_t *values,
                                   int n, kiln_status *st);
/* Specialized variants live in m (-1 for NULL). */
KILN_API int kiln_model_variants(const kiln_model *m);

/* Bucketing, per model and symbol. EXACT (the default): each value of the
 * symbol gets its own variant, with the value bound to a constant.
 * POW2: values are grouped by the next power of two (5, 6, 7, 8 -> 8);
 * MULTIPLE: by the next multiple of n (n >= 1). Decision: a bucket only
 * GROUPS compiles. A bucketed symbol stays a run-time dim in the variant
 * (the model's other, exact symbols are bound to constants), so one variant
 * serves every value of its bucket and results are always exact: nothing is
 * padded, because padding the inputs changes reductions, softmax and
 * layer_norm over the padded axis. Variants of different buckets of the
 * same symbol share their kernels through the cache (a new bucket costs
 * cache hits, not compiles). Safe while executes run; variants made under
 * the old setting stay valid (they are exact for what they serve). */
typedef enum kiln_bucket_kind {
  KILN_BUCKET_EXACT = 0,
  KILN_BUCKET_POW2 = 1,
  KILN_BUCKET_MULTIPLE = 2,
} kiln_bucket_kind;
KILN_API int kiln_model_set_bucket(kiln_model *m, const char *sym, kiln_bucket_kind kind,
                                   int64_t n, kiln_status *st);

/* Bound on the variants of one model: 1 .. 4096. For a context (the bound
 * of its models that have none of their own): 0 restores 8; for a model: 0
 * restores its context's. Lowering a model's bound evicts its least
 * recently used variants at once; a lower context bound applies to each
 * model at its next new variant. */
KILN_API int kiln_context_set_max_variants(kiln_context *ctx, int n, kiln_status *st);
KILN_API int kiln_model_set_max_variants(kiln_model *m, int n, kiln_status *st);

/* ---- capture / replay (capture.c) ----
 * kiln_model_capture executes as kiln_model_execute and keeps the resolved
 * binding under key (input dtypes and shapes, symbol values, the
 * specialized variant it ran, which stays alive while captured).
 * kiln_model_replay executes inputs of exactly the captured dtypes and
 * shapes (new data) without solving shapes or looking variants up: the same
 * kernels, the same bits as an execute. kiln_model_verify_replay re-solves
 * the inputs' shapes and fails, saying which input differs, when they no
 * longer give the captured binding. kiln_model_release drops the capture;
 * it must not run while a replay of the same key runs. A key is captured
 * once until released (an error otherwise). Each returns 0 or -1 with st. */
KILN_API int kiln_model_capture(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                                int ninputs, kiln_tensor **outputs, int noutputs,
                                kiln_status *st);
KILN_API int kiln_model_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                               int ninputs, kiln_tensor **outputs, int noutputs,
                               kiln_status *st);
KILN_API int kiln_model_verify_replay(kiln_model *m, uint64_t key, kiln_tensor *const *inputs,
                                      int ninputs, kiln_status *st);
KILN_API int kiln_model_release(kiln_model *m, uint64_t key, kiln_status *st);


/* Counters. A model counts its own specialization work; a context counts
 * what all its models (live or freed) did, and its kernel counters
 * (KERNEL_HITS, DISK_HITS, COMPILES, COMPILE_MS) cover every kernel of its
 * cache, generic ones included, while a model's cover only the kernels of
 * its specialized variants. -1 for a NULL handle or an unknown counter. */
typedef enum kiln_counter {
  KILN_COUNTER_HITS = 0,        /* executes that found a live specialized variant */
  KILN_COUNTER_MISSES,          /* executes (symbols, policy not off) that found none: under
                                   sync they compiled one and ran on it, else the generic */
  KILN_COUNTER_VARIANTS_LIVE,   /* specialized variants in the table now */
  KILN_COUNTER_VARIANTS_BUILT,  /* specialized variants made, ever */
  KILN_COUNTER_VARIANTS_EVICTED,/* removed by the bound */
  KILN_COUNTER_FAILED,          /* specialized compiles that failed (binding stays generic) */
  KILN_COUNTER_KERNEL_HITS,     /* kernels found in the memory cache */
  KILN_COUNTER_DISK_HITS,       /* kernels loaded from the disk cache */
  KILN_COUNTER_COMPILES,        /* kernels compiled by LLVM */
  KILN_COUNTER_COMPILE_MS,      /* ms spent producing kernels (compile or disk load, link) */
  KILN_COUNTER_ASYNC_QUEUED,    /* background compiles queued, ever */
  KILN_COUNTER_ASYNC_DONE,      /* background compiles finished (live or failed) */
  KILN_COUNTER_ASYNC_DROPPED,   /* requests not queued (queue, or the model's share of it =
                                   its bound, full: a later execute asks again) and jobs
                                   not run (model freed, variant live meanwhile, or
                                   weighed on the compile thread and skipped) */
  KILN_COUNTER_ASYNC_PENDING,   /* queued or running now */
  KILN_COUNTER_KERNELS_EVICTED, /* kernels unloaded by the code bound
                                   (kiln_context_set_code_limit); context only, 0 for a model */
  KILN_COUNTER_CODE_BYTES,      /* bytes of object code loaded now; context only, 0 for a model */
  KILN_COUNTER_COLD,            /* async executes whose binding was not hot yet (run generic,
                                   nothing queued: kiln_context_set_specialize_hot) */
  KILN_COUNTER_DROPPED,         /* variants dropped after their trial: not faster than the
                                   generic kernels (their bindings stay generic) */
  KILN_COUNTER_AUTO_BUCKETS,    /* symbols given pow2 buckets because they vary widely */
  KILN_COUNTER_QUICK_KERNELS,   /* kernels a model compile built at the quick tier first
                                   (kiln_context_set_tier_up) */
  KILN_COUNTER_QUICK_LIVE,      /* of those, kernels still running quick code now (their
                                   full build pending: kiln_context_set_tier_up) */
  /* The remote cache (kiln_context_set_remote_cache); context only, 0 for a
   * model; they count for the remote cache in use (a new one starts at 0). */
  KILN_COUNTER_REMOTE_HITS,     /* kernels fetched from the remote cache (a context's
                                   DISK_HITS counts the local disk only; a model's DISK_HITS
                                   counts its kernels loaded from either) */
  KILN_COUNTER_REMOTE_MISSES,   /* lookups it did not serve (absent, bad, unreachable) */
  KILN_COUNTER_REMOTE_ERRORS,   /* commands that failed (timeout, no server, TLS, error reply) */
  KILN_COUNTER_REMOTE_PUBLISHED,/* kernels stored on the server by the background publisher */
  KILN_COUNTER_REMOTE_DROPPED,  /* kernels not published: the queue was full (256 entries,
                                   256 MiB), the breaker open, the store failed, or still
                                   queued when the context was freed */
  KILN_COUNTER_REMOTE_SKIPS,    /* commands not sent because the breaker was open */
  KILN_COUNTER_REMOTE_BREAKER_OPENS, /* times the breaker opened */
  KILN_COUNTER_REMOTE_CORRUPT,  /* values that failed their checks (removed; also misses) */
  KILN_COUNTER_SPEC_AHEAD,      /* async compiles queued ahead: the next bucket of a dim the
                                   caller bucketed, seen growing (also in ASYNC_QUEUED) */
  KILN_COUNTER_SPEC_SKIPPED,    /* hot bindings async did not specialize: the kernels a
                                   variant would rebuild are under 5% of their estimated
                                   time (GEMMs dominate) */
  KILN_COUNTER_PLANS,           /* arena plans made by executes (no cached plan fitted their
                                   shapes: the intermediates were placed on the request path) */
  KILN_COUNTER_PLANS_AHEAD,     /* arena plans made ahead, off the request path (the next
                                   bucket of a growing dim) */
  KILN_COUNTER_ARENA_GROWS,     /* arena blocks allocated by executes (the kept block was too
                                   small: a malloc and fresh pages on the request path) */
} kiln_counter;
KILN_API double kiln_model_counter(const kiln_model *m, kiln_counter c);
KILN_API double kiln_context_counter(const kiln_context *ctx, kiln_counter c);

/* Quick kernels first. A model compile that must build at least
 * min_kernels kernels (none of the context's caches holds them) builds them
 * with a short LLVM pipeline (a few cleanup passes, LLVM's fast instruction
 * selector and register allocator: about a tenth of the compile time, code
 * about 1.2-1.8x slower), so kiln_model_compile returns sooner, and queues
 * their full (O3) builds on the context's compile thread, ahead of any
 * specialization (at its low priority, without the rests of specialization
 * compiles); each full kernel replaces its quick one while executes run
 * (results of the two may differ in the last bits, as between specialized
 * and generic kernels). Rebuilds that pay run at once, the slowest quick
 * kernels first; a GEMM whose quick kernel already runs
 * the prebuilt GEMM with a cheap epilogue (a bias, adds, a relu) or none,
 * f32 softmax and layer_norm (prebuilt row routines at both tiers), and a
 * copy of data (permute, reshape), are about as fast, and are
 * rebuilt only once no execute has held the CPUs, or started, for 20 ms
 * (where requests fill the CPUs, a compile's time is taken from them), so
 * the QUICK_LIVE count may stay up while a service is busy. Only full
 * kernels go to the disk cache, so a later process loads those. 0 turns it
 * off: every kernel is built fully before kiln_model_compile returns.
 * Default 4, or the environment's KILN_TIER_UP (a number, or "off"). A
 * model holds its quick kernels until it is freed (at most two kernels per
 * node).
 * kiln_context_wait_compiles waits for the full builds too. */
KILN_API int kiln_context_set_tier_up(kiln_context *ctx, int min_kernels, kiln_status *st);

/* Wait until ctx's compile queue is empty and its thread idle (and the
 * plans it makes ahead of a growing dim are made), at most
 * timeout_ms (< 0: no limit). 0 when idle, 1 on timeout, -1 for NULL. For
 * tools and tests: a service never needs to call it. */
KILN_API int kiln_context_wait_compiles(kiln_context *ctx, int64_t timeout_ms, kiln_status *st);

/* ---- disk cache of a context ----
 * By default a context opens the disk cache from the environment
 * (KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln;
 * KILN_CACHE=off disables it; KILN_CACHE_MAX_BYTES bounds it, default
 * 1 GiB). kiln_context_set_cache_dir overrides all of that: dir (created
 * when missing; one that exists but cannot be written is only read) with a
 * bound of max_bytes (0: KILN_CACHE_MAX_BYTES, else 1 GiB), or, with dir
 * NULL, no disk cache. The directory and its entries must be owned by you
 * or root and not writable by group or others: kiln runs the code they
 * hold (a directory that fails is an error naming it; an entry, a miss).
 * On error the previous store stays in use. Compiles already running finish
 * with the store they began with (it is kept until the context is freed).
 * Do not call it from two threads at once. */
KILN_API int kiln_context_set_cache_dir(kiln_context *ctx, const char *dir, uint64_t max_bytes,
                                        kiln_status *st);
/* The directory in use (owned by ctx, valid until it is freed), or NULL
 * when the context has no disk cache. */
KILN_API const char *kiln_context_cache_dir(const kiln_context *ctx);

/* Read-only layers: kernels are looked up in the cache directory, then in
 * each seed directory in the order added; new kernels are written only to
 * the cache directory. A warmed cache shipped read-only (a container image
 * layer) is a seed; KILN_CACHE_SEED_DIR (colon-separated) adds seeds to the
 * default context. A cache directory that exists but is not writable is
 * itself read from (new kernels are then not stored, and the context's
 * warning says so). The seed must be a directory owned by you or root and
 * not writable by group or others, like the cache directory. Fails (st
 * filled, nothing changed) for a missing, foreign or group/other-writable
 * directory, or when the context has no disk cache. Seeds stay when
 * kiln_context_set_cache_dir changes the directory. Same threading rule as
 * kiln_context_set_cache_dir. */
KILN_API int kiln_context_add_cache_seed_dir(kiln_context *ctx, const char *dir,
                                             kiln_status *st);

/* ---- what the disk cache settings came to ----
 * A context never fails to be created because of its disk cache: a setting
 * that does not work (KILN_CACHE_MAX_BYTES that is not a byte count, a
 * KILN_CACHE_DIR that is a file, unwritable, or owned by another user, a
 * seed that cannot be used) leaves the cache off or read-only, and
 * kiln_context_new prints one line "kiln: warning: ..." on stderr unless
 * the environment sets KILN_QUIET (to anything but "" or "0"). Later
 * trouble with single entries (corrupt, untrusted) is printed the same way.
 * kiln_context_cache_status: one line, "disk cache: DIR[, read-only][; seeds
 * A:B]", "disk cache off (KILN_CACHE)" or "disk cache unavailable: WHY";
 * never NULL. kiln_context_cache_warning: the problem a user should fix, or
 * NULL when there is none (KILN_CACHE=off is a choice, not a problem). Both
 * are owned by ctx and change only with kiln_context_set_cache_dir /
 * _add_cache_seed_dir. */
KILN_API const char *kiln_context_cache_status(const kiln_context *ctx);

/* ---- remote (fleet) cache of a context ----
 * A Redis server shared by many machines, looked up after the disk cache
 * and before compiling: url is redis://[[user]:password@]host[:port][/db],
 * or rediss://...[?cacert=FILE&cert=FILE&key=FILE] for TLS 1.2+: the
 * server's certificate must chain to cacert (PEM; default: the system's
 * trust store) and name the host; cert and key (PEM, both or neither) are
 * the client's, for servers that require one (values taken literally, no
 * '&' or '@'). A TLS failure (untrusted certificate, wrong host, TLS on
 * one side only) is logged, counted by the breaker and costs compiles. A
 * kernel
 * fetched from it is written to the local disk cache too; a kernel compiled
 * here is published to it by a background thread (never on the caller's
 * thread). Keys are "<ns>:kc<format>:<key hex>"; ns NULL takes
 * KILN_CACHE_REMOTE_NS, else "kiln". timeout_ms (0: KILN_CACHE_REMOTE_TIMEOUT_MS,
 * else 50) bounds each connect and command; after 3 failures in a row the
 * server is left alone for 5 s (KILN_CACHE_REMOTE_BREAKER_MS), doubled
 * after each failed retry. A slow, full or dead server only costs compiles.
 * url NULL turns the remote cache off. Nothing connects here: a bad URL or
 * TLS file is an error (KILN_ERR_INVALID_ARGUMENT, saying which part), an
 * unreachable server is not. By default a context takes KILN_CACHE_REMOTE (a bad value
 * only warns, as for the disk cache). Same threading rule as
 * kiln_context_set_cache_dir; compiles already running finish with the
 * remote they began with. */
KILN_API int kiln_context_set_remote_cache(kiln_context *ctx, const char *url, const char *ns,
                                           int timeout_ms, kiln_status *st);
/* "remote cache: redis[s]://host:port/db (namespace NS)" (password hidden),
 * "remote cache off" or "remote cache unavailable: WHY"; owned by ctx,
 * never NULL. */
KILN_API const char *kiln_context_remote_cache_status(const kiln_context *ctx);
/* Wait until every kernel queued for the remote cache is published (or
 * dropped), at most timeout_ms (< 0: no limit). 0 when done, 1 on timeout,
 * -1 for NULL. For deploy tools (`kiln cache warm --remote`); freeing the
 * context also waits, at most 2 s. */
KILN_API int kiln_context_flush_remote_cache(kiln_context *ctx, int64_t timeout_ms,
                                             kiln_status *st);
KILN_API const char *kiln_context_cache_warning(const kiln_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
