/* remote_run.h - what the remote cache tests (test_cache_remote*.c) share:
 * small graphs, a fresh local disk cache per run, a context on a remote
 * cache, a compile-and-run and the context's counters. */
#ifndef KILN_TESTS_REMOTE_RUN_H
#define KILN_TESTS_REMOTE_RUN_H

#include <stddef.h>

#include "kiln/kiln.h"

#define GRAPH                                                                                  \
  "mo.graph @g<n>(%x: !mo.tensor<[n, 16], f32>, %w: !mo.tensor<[16, 8], f32>) -> "            \
  "(!mo.tensor<[n, 8], f32>) {\n"                                                              \
  "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 16], f32>, !mo.tensor<[16, 8], f32>) -> "       \
  "!mo.tensor<[n, 8], f32>\n"                                                                  \
  "  %t = mo.tanh(%m) : !mo.tensor<[n, 8], f32>\n"                                             \
  "  %s = mo.softmax(%t) : !mo.tensor<[n, 8], f32>\n"                                          \
  "  mo.output %s : !mo.tensor<[n, 8], f32>\n"                                                 \
  "}\n"
#define NKERNELS 2 /* matmul; tanh + softmax fused */

/* A second graph with kernels of its own. */
#define GRAPH2                                                                                 \
  "mo.graph @h<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"              \
  "  %e = mo.exp(%x) : !mo.tensor<[n, 8], f32>\n"                                              \
  "  mo.output %e : !mo.tensor<[n, 8], f32>\n"                                                 \
  "}\n"

#define GRAPH3                                                                                 \
  "mo.graph @k<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>) {\n"              \
  "  %e = mo.tanh(%x) : !mo.tensor<[n, 8], f32>\n"                                             \
  "  mo.output %e : !mo.tensor<[n, 8], f32>\n"                                                 \
  "}\n"

/* The local disk cache directory of the current run (KILN_CACHE_DIR). */
extern char remote_disk[64];
/* A new empty remote_disk, set as KILN_CACHE_DIR; KILN_QUIET on. */
void remote_fresh_disk(void);
/* Remove remote_disk and all in it. */
void remote_remove_disk(void);

typedef struct run_counts {
  double compiles, disk_hits, remote_hits, remote_misses, remote_errors, published;
} run_counts;
run_counts remote_counts(kiln_context *ctx);

/* A context (no specialization, no quick tier) on url's remote cache,
 * namespace "test" (url NULL: none). Asserts it is made. */
kiln_context *remote_ctx(const char *url, int timeout_ms);
/* Compile text in ctx and run it on 3 rows (in_cols 16: GRAPH's two
 * inputs, else one); the first output value into *first (may be NULL). */
void remote_compile_and_run(kiln_context *ctx, const char *text, int in_cols, float *first);
/* Keys of the "test" namespace on url's server. */
size_t remote_keys(const char *url);
/* A context on url (with timeout_ms) compiles GRAPH3 and publishes its one
 * kernel without an error; the server then holds that one key. */
void remote_publish_one(const char *url, int timeout_ms);

#endif
