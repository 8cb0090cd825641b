/* kiln/device.h - devices: the CPU, NVIDIA GPUs through the CUDA driver,
 * AMD GPUs through the HIP runtime, and simt-emu (GPU kernels run on the
 * CPU, for testing without a GPU).
 *
 * The CUDA driver (libcuda.so.1) and the HIP runtime (libamdhip64.so) are
 * opened at run time: kiln builds and runs where they are absent, and
 * opening "cuda:0" there returns an error that says which piece is missing
 * (no driver library, no device, a driver too old), never a crash.
 *
 * Device memory is addressed by an opaque `kiln_devptr` (a device address on
 * a GPU, a host address on cpu and simt-emu). Copies are synchronous. A
 * device may be used from several threads at once. */
#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#include "common.h"
#include "graph.h"
#include "runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_device_kind {
  KILN_DEVICE_CPU = 0,
  KILN_DEVICE_CUDA = 1,
  KILN_DEVICE_HIP = 2,
  KILN_DEVICE_SIMT_EMU = 3,
} kiln_device_kind;

typedef struct kiln_device kiln_device;
typedef uint64_t kiln_devptr;

/* "cpu", "cuda", "cuda:N", "hip", "hip:N", "simt-emu" ("simt-emu:0").
 * Returns a device the caller owns and closes with kiln_device_close (after
 * freeing its tensors and models), or NULL with st filled. */
KILN_API kiln_device *kiln_device_open(const char *spec, kiln_status *st);
KILN_API void kiln_device_close(kiln_device *d); /* NULL ok; frees nothing the caller allocated */

/* How many devices of a kind this machine has: 1 for cpu and simt-emu;
 * for cuda / hip 0 when the driver is absent or reports none (st, when
 * given, then says why, with code KILN_ERR_NOT_FOUND). -1 on a bad kind. */
KILN_API int kiln_device_count(kiln_device_kind kind, kiln_status *st);
/* "cpu", "cuda", "hip", "simt-emu": a static string (never freed); NULL out
 * of range. */
KILN_API const char *kiln_device_kind_name(kiln_device_kind kind);

KILN_API kiln_device_kind kiln_device_get_kind(const kiln_device *d);
KILN_API int kiln_device_ordinal(const kiln_device *d);
KILN_API const char *kiln_device_label(const kiln_device *d); /* "cuda:0"; owned by d */
/* What the driver says: "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)", the host
 * CPU's model name, ...; owned by d. */
KILN_API const char *kiln_device_description(const kiln_device *d);

/* Memory. Alloc returns 0 and *out, or -1 with st filled. */
KILN_API int kiln_device_alloc(kiln_device *d, size_t bytes, kiln_devptr *out, kiln_status *st);
KILN_API void kiln_device_free(kiln_device *d, kiln_devptr p); /* 0 ok */
KILN_API int kiln_device_copy_to(kiln_device *d, kiln_devptr dst, const void *src, size_t bytes,
                                 kiln_status *st);
KILN_API int kiln_device_copy_from(kiln_device *d, void *dst, kiln_devptr src, size_t bytes,
                                   kiln_status *st);
/* Wait for everything queued on d. */
KILN_API int kiln_device_synchronize(kiln_device *d, kiln_status *st);

/* ---- tensors on a device ----
 * A kiln_tensor lives in host memory (kiln_tensor_new, _borrow: the CPU
 * device's memory too) or in one device's memory. A device tensor has no
 * host data (kiln_tensor_data is NULL); its memory is kiln_tensor_devptr
 * and is freed by kiln_tensor_free. The device must outlive its tensors.
 * A CPU model takes host tensors only and says so; a model on a device
 * takes host tensors and tensors on its own device, inputs and outputs,
 * and leaves data on the device without a host round trip. */
/* A tensor of this dtype and shape in d's memory, contents undefined; d
 * NULL or the CPU device: a host tensor (kiln_tensor_new, zeroed). The
 * caller owns it and frees it with kiln_tensor_free (before closing d);
 * NULL with st filled on error. */
KILN_API kiln_tensor *kiln_tensor_new_on(kiln_device *d, kiln_dtype dtype, int rank,
                                         const int64_t *shape, kiln_status *st);
/* A new tensor with t's dtype, shape and contents on d (host memory when d
 * is NULL or the CPU device): host to device, device to host, or within a
 * device. t may be on any device; the caller owns the result and frees it
 * with kiln_tensor_free; NULL with st filled on error. */
KILN_API kiln_tensor *kiln_tensor_copy_to(const kiln_tensor *t, kiln_device *d, kiln_status *st);
/* The device t lives on, borrowed (t does not own it; never close it
 * through this pointer); NULL for host memory (and for NULL). */
KILN_API kiln_device *kiln_tensor_device(const kiln_tensor *t);
/* t's device memory; 0 for a host tensor. */
KILN_API kiln_devptr kiln_tensor_devptr(const kiln_tensor *t);

/* ---- running a graph on a device ----
 * kiln_model_compile_on compiles g for device d: the CPU (d NULL or the
 * cpu device: the same as kiln_model_compile) or a SIMT device (cuda, hip,
 * simt-emu: SIMT kernels). The result is a kiln_model like any other
 * (kiln/runtime.h): its metadata, kiln_model_bind_weight, _execute,
 * _capture / _replay / _verify_replay / _release, the specialization
 * policies, buckets, bounds and counters, kiln_model_free. It is prepared
 * as a CPU model is (transposes folded, fusion where the SIMT lowering
 * takes it, reshapes as aliases), its kernels come from ctx's disk cache
 * (compiled and stored on a miss) and ctx's kernel libraries serve its
 * mo.custom ops (KILN_SIMT_KERNEL, kiln/kernel.h).
 * On a SIMT device the model keeps the graph's constants and bound weights
 * in device memory (kiln_model_bind_weight copies the tensor, which may be
 * freed afterwards; weights need static shapes there). An execute takes
 * host tensors and tensors on its own device, inputs and outputs, copies
 * them in, runs every kernel on the device in graph order (from one device
 * arena planned by value lifetimes, kept while the binding repeats: executes
 * of one binding allocate nothing) and copies the outputs into the given
 * tensors, host or on its device (where outputs[i] is NULL kiln allocates
 * it: on the device when the graph types that output gpu:N, else on the
 * host). A tensor on another device is an error that names both.
 * Capture / replay there keeps the resolved launch sequence (buffers,
 * every kernel's grid and parameters) and records it on the device (a CUDA
 * graph on cuda, a launch list on simt-emu; where the driver cannot record
 * the capture keeps its own list): a replay is one graph launch and one
 * check of the kernels' error word (an error then names the sequence, not
 * the op: an execute on the same inputs does); verify_replay builds the
 * launch sequence an eager execute would run and fails, naming the first
 * difference, if it is not the captured one.
 * Placement: a graph's types may name a device (!mo.tensor<[n], f32, gpu:0>)
 * and mo.transfer_to {device = "gpu:0" | "cpu"} moves a value between host
 * and GPU. A model on a SIMT device runs a graph whose GPU values all name
 * one gpu:N (this device); in such a placed graph every op computes on the
 * GPU (only constants, weights and transfers make host values), and a CPU
 * model refuses any value on a GPU. A graph without devices in its types
 * runs wholly on the device it is compiled for. Executes on one device
 * model are serialized. d and ctx must outlive the model.
 * Returns a model the caller owns (kiln_model_free), or NULL with st. */
KILN_API kiln_model *kiln_model_compile_on(kiln_context *ctx, kiln_device *d, const kiln_graph *g,
                                           kiln_status *st);
/* The device m runs on (borrowed), NULL for a CPU model (and for NULL). */
KILN_API kiln_device *kiln_model_device(const kiln_model *m);

/* ---- kiln_device_model: the earlier names, kept ----
 * A kiln_device_model is a kiln_model on a SIMT device; these are thin
 * wrappers over the kiln_model calls (kiln_model_* take it as it is).
 * kiln_device_model_compile_with(ctx, d, g) is kiln_model_compile_on for a
 * SIMT device (the cpu device is refused: use kiln_model_compile).
 * kiln_device_model_compile(d, g) makes the model a context of its own
 * (freed with it) with no disk cache, no kernel libraries (a graph with
 * custom ops is refused there) and the policy off (generic kernels, as
 * before; kiln_model_set_specialize on the model changes that). */
typedef struct kiln_model kiln_device_model;

KILN_API kiln_device_model *kiln_device_model_compile(kiln_device *d, const kiln_graph *g,
                                                      kiln_status *st);
KILN_API kiln_device_model *kiln_device_model_compile_with(kiln_context *ctx, kiln_device *d,
                                                           const kiln_graph *g, kiln_status *st);
KILN_API void kiln_device_model_free(kiln_device_model *m);
KILN_API int kiln_device_model_bind_weight(kiln_device_model *m, const char *name,
                                           const kiln_tensor *t, kiln_status *st);
KILN_API int kiln_device_model_execute(kiln_device_model *m, kiln_tensor *const *inputs,
                                       int ninputs, kiln_tensor **outputs, int noutputs,
                                       kiln_status *st);
KILN_API int kiln_device_model_capture(kiln_device_model *m, uint64_t key,
                                       kiln_tensor *const *inputs, int ninputs,
                                       kiln_tensor **outputs, int noutputs, kiln_status *st);
KILN_API int kiln_device_model_replay(kiln_device_model *m, uint64_t key,
                                      kiln_tensor *const *inputs, int ninputs,
                                      kiln_tensor **outputs, int noutputs, kiln_status *st);
KILN_API int kiln_device_model_verify_replay(kiln_device_model *m, uint64_t key,
                                             kiln_tensor *const *inputs, int ninputs,
                                             kiln_status *st);
KILN_API int kiln_device_model_release(kiln_device_model *m, uint64_t key, kiln_status *st);
KILN_API double kiln_device_model_compile_ms(const kiln_device_model *m);

#ifdef __cplusplus
}
#endif
#endif
