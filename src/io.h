/* io.h - tensor files: numpy .npy (read and write), .safetensors (read,
 * plus a writer for tests and tools) and GGUF (read). Internal to src/ (the CLI and tests
 * use it through the static library).
 *
 * .npy: format versions 1.0, 2.0 and 3.0; little-endian (or byte-order free)
 * data in C order only. dtypes: bool '|b1', every integer, f2, f4, f8.
 * bf16 and the float8 kinds have no numpy descr and are refused.
 * .safetensors: 8-byte little-endian header length, a JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [a, b]},
 * "__metadata__": {...}}, then the data. Every offset is checked against the
 * file and every size against dtype * shape before any data is touched; the
 * tensors' data ranges, sorted, must tile the data section (no overlap, no
 * hole, no trailing bytes) and every name must be UTF-8, as the format
 * requires (safetensors.c says why). Opening is linear in the number of
 * tensors (bar one sort) and rt_safetensors_find is a hash lookup.
 * All failures return NULL / -1 with a status that names the file (and the
 * tensor, when one is at fault). */
#ifndef KILN_SRC_IO_H
#define KILN_SRC_IO_H

#include "rt.h"

/* Read a .npy file into an owned tensor. */
kiln_tensor *rt_npy_read(const char *path, kiln_status *st);
/* Decode .npy bytes into an owned tensor (data copied). `what` names the
 * source in errors. */
kiln_tensor *rt_npy_decode(const void *buf, size_t len, const char *what, kiln_status *st);
/* Encode t as .npy (version 1.0, or 2.0 when the header needs it); malloc'd. */
void *rt_npy_encode(const kiln_tensor *t, size_t *len, kiln_status *st);
int rt_npy_write(const char *path, const kiln_tensor *t, kiln_status *st);

typedef struct rt_safetensors rt_safetensors;
/* Map the file read-only and validate its header. */
rt_safetensors *rt_safetensors_open(const char *path, kiln_status *st);
void rt_safetensors_close(rt_safetensors *f); /* NULL ok */
int rt_safetensors_count(const rt_safetensors *f);
const char *rt_safetensors_name(const rt_safetensors *f, int i); /* owned by f */
/* Index of tensor `name`, -1 if none. */
int rt_safetensors_find(const rt_safetensors *f, const char *name);
/* Tensor i: borrows the mapping when its data is aligned for its dtype, else
 * an owned aligned copy. Free with kiln_tensor_free, and (borrowed) use it
 * only while f is open. */
kiln_tensor *rt_safetensors_tensor(const rt_safetensors *f, int i, kiln_status *st);
/* Where tensor i's bytes lie in the file's mapping (*len of them), NULL
 * when none: for rt_map_drop once a model no longer reads them
 * (kiln_model_weight_needs_data). */
const void *rt_safetensors_bytes(const rt_safetensors *f, int i, size_t *len);
/* Write tensors[n] named names[n] as a .safetensors file. */
int rt_safetensors_write(const char *path, const char *const *names,
                         const kiln_tensor *const *tensors, int n, kiln_status *st);

/* GGUF (v2, v3; gguf.c): tensors f32 / f16 / bf16 and the block types q4_0,
 * q8_0, q4_k, q5_k, q6_k (ir/qblock.h), mapped read-only. A tensor's kiln
 * shape is its GGUF dims reversed; a block type is uint8 with the innermost
 * dim in bytes (the operand of mo.qmatmul / mo.dequantize). */
typedef struct rt_gguf rt_gguf;
rt_gguf *rt_gguf_open(const char *path, kiln_status *st);
void rt_gguf_close(rt_gguf *f); /* NULL ok */
int rt_gguf_count(const rt_gguf *f);
const char *rt_gguf_name(const rt_gguf *f, int i); /* owned by f */
int rt_gguf_find(const rt_gguf *f, const char *name); /* -1 if none */
/* Tensor i's block encoding ("q4_k"), NULL for a plain float tensor. */
const char *rt_gguf_encoding(const rt_gguf *f, int i);
/* Tensor i, as rt_safetensors_tensor (borrowed while f is open, or a copy). */
kiln_tensor *rt_gguf_tensor(const rt_gguf *f, int i, kiln_status *st);
const void *rt_gguf_bytes(const rt_gguf *f, int i, size_t *len); /* as safetensors' */
/* Metadata: keys (owned by f), lookup (-1 if none), integer values of any
 * integer type (-1 if not one, or a u64 above INT64_MAX), strings (bytes in
 * the mapping, not NUL-terminated), arrays' element type and length. */
int rt_gguf_meta_count(const rt_gguf *f);
const char *rt_gguf_meta_key(const rt_gguf *f, int i);
int rt_gguf_meta_find(const rt_gguf *f, const char *key);
int rt_gguf_meta_int(const rt_gguf *f, int i, int64_t *out);
const char *rt_gguf_meta_string(const rt_gguf *f, int i, size_t *len);
int rt_gguf_meta_array(const rt_gguf *f, int i, int *elem_type, uint64_t *count);

/* Safetensors dtype spelling ("F32", "BF16", "F8_E4M3"); NULL if none. */
const char *rt_safetensors_dtype_name(kiln_dtype t);

#endif
