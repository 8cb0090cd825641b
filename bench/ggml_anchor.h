/* ggml_anchor.h - llama.cpp's ggml as bench_quant's outside anchor: its
 * shared libraries (libggml-base.so, libggml-cpu.so, from the bench venv's
 * llama-cpp-python) loaded with dlopen, and one weight times an f32 lhs
 * computed by ggml's own mul_mat through a ggml graph.
 *
 * Bench-only: kiln never links ggml. The ggml functions used are declared
 * in ggml_anchor.c (the wheel ships no headers); only opaque pointers and
 * ggml_init's three-field parameter struct cross the line,
 * and opening checks, per encoding, that the installed ggml names its type
 * enum value as expected and gives its blocks kiln's element and byte
 * counts (ir/qblock.h), so a ggml whose enums moved is refused, not
 * misread. */
#ifndef KILN_BENCH_GGML_ANCHOR_H
#define KILN_BENCH_GGML_ANCHOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct anchor_ggml anchor_ggml;
typedef struct anchor_ggml_gemv anchor_ggml_gemv;

/* Loads libggml-base.so and libggml-cpu.so from libdir. NULL on failure
 * with the reason in err (dlopen's message, a missing symbol, an encoding
 * whose type the library lays out otherwise). Free with anchor_ggml_close. */
anchor_ggml *anchor_ggml_open(const char *libdir, char *err, size_t errlen);
/* After every gemv is freed; NULL: no-op. The libraries stay loaded. */
void anchor_ggml_close(anchor_ggml *g);
/* ggml_version() of the library ("?" where it has none). */
const char *anchor_ggml_version(const anchor_ggml *g);

/* y[m, n] = sum_k a[m, k] * w[n, k] with w the n x k weight of encoding
 * enc (a qb_encoding) in GGUF blocks, row after row (kiln's qmatmul rhs
 * layout), through ggml's CPU backend on `threads` threads. The weight is
 * copied once into a backend buffer: the CPU's plain one, or with repack
 * its CPU_REPACK one (llama.cpp's default for weights where the CPU has
 * kernels for the type: q4_0 and q4_K rows interleaved 8 by 8 on AVX2
 * hosts). NULL on failure with the reason in err (also when repack is
 * asked for a type this CPU has no repacked kernel for). */
anchor_ggml_gemv *anchor_ggml_gemv_new(anchor_ggml *g, int enc, int64_t m, int64_t n, int64_t k,
                                       const uint8_t *w, bool repack, int threads, char *err,
                                       size_t errlen);
/* One product: a[m * k] copied in, the graph (built once) computed, y[m *
 * n] copied out; *seconds gets the time of the compute only (ggml's plan,
 * the lhs quantized to q8 blocks, the product). -1 when ggml reports a
 * failure. */
int anchor_ggml_gemv_run(anchor_ggml_gemv *p, const float *a, float *y, double *seconds);
void anchor_ggml_gemv_free(anchor_ggml_gemv *p); /* NULL: no-op */

#endif
