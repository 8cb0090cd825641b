/* ggml_anchor.h - llama.cpp's ggml as bench_quant's outside anchor: its
 * shared libraries (libggml-base.so, libggml-cpu.so, from the bench venv's
 * llama-cpp-python) loaded with dlopen, and one weight times an f32 lhs
 * computed by ggml's own mul_mat through a ggml graph.
 *
 * Bench-only: kiln never links ggml. The few ggml functions used are
 * declared in ggml_anchor.c (the wheel ships no headers); only opaque
 * pointers and ggml_init's three-field parameter struct cross the line,
 * and opening checks, per encoding, that the installed ggml names its type
 * enum value as expected and gives its blocks kiln's element and byte
 * counts (ir/qblock.h), so a ggml whose enums moved is refused, not
 * misread. */
#ifndef KILN_BENCH_GGML_ANCHOR_H
#define KILN_BENCH_GGML_ANCHOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct anchor_ggml anchor_ggml;
typedef struct anchor_ggml_gemv anchor_ggml_gemv;

/* Loads libggml-base.so and libggml-cpu.so from libdir. NULL on failure
 * with the reason in err (dlopen's message, a missing symbol, an encoding
 * whose type the library lays out otherwise). Free with anchor_ggml_close. */
anchor_ggml *anchor_ggml_open(const char *libdir, char *err, size_t errlen);
void anchor_ggml_close(anchor_ggml *g); /* NULL: no-op; after every gemv is freed */
/* ggml_version() of the library ("?" where it has none). */
const char *anchor_ggml_version(const anchor_ggml *g);

/* y[m, n] = sum_k a[m, k] * w[n, k] with w the n x k weight of encoding
 * enc (a qb_encoding) in GGUF blocks, row after row (kiln's qmatmul rhs
 * layout, copied once into ggml's tensor). NULL on failure with the reason
 * in err. */
anchor_ggml_gemv *anchor_ggml_gemv_new(anchor_ggml *g, int enc, int64_t m, int64_t n, int64_t k,
                                       const uint8_t *w, char *err, size_t errlen);
/* One product on `threads` threads: a[m * k] is copied in, then the graph
 * (ggml_mul_mat of the weight and a) is built and computed, then y[m * n]
 * copied out; *seconds gets the time of the build and compute only.
 * -1 when ggml reports a failure. */
int anchor_ggml_gemv_run(anchor_ggml_gemv *p, const float *a, float *y, int threads,
                         double *seconds);
void anchor_ggml_gemv_free(anchor_ggml_gemv *p); /* NULL: no-op */

#endif
