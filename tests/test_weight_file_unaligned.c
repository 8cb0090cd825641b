/* test_weight_file_unaligned.c - kiln_model_bind_weights_file on a
 * .safetensors file whose tensors lie at every offset mod 4 (the header's
 * length padded to 0..3 past a multiple of 4): where the data is not
 * aligned for its dtype the weight source packs a prepacked weight where it
 * lies in the mapping (the model keeps only the packed copy), and copies a
 * weight the model reads itself into a copy the model owns. Every layout
 * gives the same bits as the aligned one and a naive loop's sums, also in a
 * second model bound from the same file after the first gave back its
 * pages; for f32 weights and for f16 ones (their GEMM's pack reads 2-byte
 * elements at odd addresses). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/runtime.h"

enum { ROWS = 2, K = 40, N = 300 };

#define T(dims) "!mo.tensor<[" dims "], f32>"
static const char graph_text[] =
    "mo.graph @g(%x: " T("2, 40") ") -> (" T("2, 300") ") {\n"
    "  %w = mo.constant.external {name = \"w\"} : " T("40, 300") "\n"
    "  %b = mo.constant.external {name = \"b\"} : " T("2, 300") "\n"
    "  %h = mo.matmul(%x, %w) : (" T("2, 40") ", " T("40, 300") ") -> " T("2, 300") "\n"
    "  %y = mo.add(%h, %b) : " T("2, 300") "\n"
    "  mo.output %y : " T("2, 300") "\n"
    "}\n";

#define H(dims) "!mo.tensor<[" dims "], f16>"
static const char graph_half[] =
    "mo.graph @g(%x: " H("2, 40") ") -> (" H("2, 300") ") {\n"
    "  %w = mo.constant.external {name = \"w\"} : " H("40, 300") "\n"
    "  %h = mo.matmul(%x, %w) : (" H("2, 40") ", " H("40, 300") ") -> " H("2, 300") "\n"
    "  mo.output %h : " H("2, 300") "\n"
    "}\n";

static float wv[K * N], bv[ROWS * N], xv[ROWS * K];
static _Float16 wh[K * N], xh[ROWS * K];

static void fill(void) {
  for (int i = 0; i < K * N; i++) wv[i] = (float)((i * 37 % 101) - 50) / 64.0f;
  for (int i = 0; i < ROWS * N; i++) bv[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < ROWS * K; i++) xv[i] = (float)((i * 13 % 29) - 14) / 8.0f;
  for (int i = 0; i < K * N; i++) wh[i] = (_Float16)wv[i]; /* exact: multiples of 1/64 */
  for (int i = 0; i < ROWS * K; i++) xh[i] = (_Float16)xv[i];
}

/* A .safetensors file of one f16 weight w at 8 + a header of pad mod 4
 * bytes (odd pads put it at odd addresses). Its path (malloc'd). */
static char *write_half_weights(int pad) {
  char hdr[256];
  int n = snprintf(hdr, sizeof hdr,
                   "{\"w\":{\"dtype\":\"F16\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]}}", K, N,
                   sizeof wh);
  while (n % 4 != pad) hdr[n++] = ' ';
  char *path = strdup("/tmp/kiln_unaligned_XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  uint64_t len = (uint64_t)n;
  cr_assert_eq(write(fd, &len, 8), 8);
  cr_assert_eq(write(fd, hdr, (size_t)n), n);
  cr_assert_eq(write(fd, wh, sizeof wh), (ssize_t)sizeof wh);
  close(fd);
  return path;
}

/* A .safetensors file of w and b whose data section starts at 8 + a header
 * length of pad mod 4 (JSON padded with spaces). Its path (malloc'd). */
static char *write_weights(int pad) {
  char hdr[512];
  int n = snprintf(hdr, sizeof hdr,
                   "{\"w\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]},"
                   "\"b\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}}",
                   K, N, sizeof wv, ROWS, N, sizeof wv, sizeof wv + sizeof bv);
  while (n % 4 != pad) hdr[n++] = ' ';
  char *path = strdup("/tmp/kiln_unaligned_XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  uint64_t len = (uint64_t)n; /* little-endian on the hosts kiln runs on */
  cr_assert_eq(write(fd, &len, 8), 8);
  cr_assert_eq(write(fd, hdr, (size_t)n), n);
  cr_assert_eq(write(fd, wv, sizeof wv), (ssize_t)sizeof wv);
  cr_assert_eq(write(fd, bv, sizeof bv), (ssize_t)sizeof bv);
  close(fd);
  return path;
}

/* y of a model of graph_text (graph_half with half) with its weights bound
 * from path: ROWS x N floats, or halves. */
static void run_graph(kiln_context *ctx, const char *path, bool half, void *y) {
  kiln_status *st = kiln_status_new();
  const char *text = half ? graph_half : graph_text;
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "unaligned", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_graph_free(g);
  cr_assert_eq(kiln_model_weight_needs_data(m, "w"), 0, "w is read only through its packed copy");
  cr_assert_eq(kiln_model_bind_weights_file(m, path, st), 0, "%s", kiln_status_message(st));
  int64_t shape[2] = {ROWS, K};
  kiln_tensor *in = kiln_tensor_borrow(half ? KILN_FLOAT16 : KILN_FLOAT32, 2, shape,
                                       half ? (void *)xh : (void *)xv, st),
              *out = NULL;
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_numel(out), ROWS * N);
  memcpy(y, kiln_tensor_data(out), kiln_tensor_nbytes(out));
  kiln_tensor_free(in);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_status_free(st);
}

/* The models' results for files at every pad: the same bits from two
 * models per file and across pads; the aligned file's (pad 0) into first
 * (ROWS x N floats, or halves). */
static void every_pad(kiln_context *ctx, bool half, void *first) {
  size_t bytes = (size_t)(ROWS * N) * (half ? sizeof(_Float16) : sizeof(float));
  static float y[ROWS * N], again[ROWS * N]; /* room for either */
  for (int pad = 0; pad < 4; pad++) {
    char *path = half ? write_half_weights(pad) : write_weights(pad);
    run_graph(ctx, path, half, y);
    run_graph(ctx, path, half, again); /* the file's pages given back by the first */
    cr_assert(!memcmp(y, again, bytes), "pad %d: the second model differs", pad);
    if (pad == 0) memcpy(first, y, bytes);
    cr_assert(!memcmp(first, y, bytes), "pad %d differs from the aligned file", pad);
    unlink(path);
    free(path);
  }
}

Test(weight_file_unaligned, every_offset_gives_the_aligned_bits, .timeout = 300) {
  fill();
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  static float first[ROWS * N];
  every_pad(ctx, false, first);
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < N; j++) {
      double s = bv[r * N + j];
      for (int k = 0; k < K; k++) s += (double)xv[r * K + k] * wv[k * N + j];
      cr_assert(fabs(first[r * N + j] - s) <= 1e-4 * (1 + fabs(s)), "y[%d][%d] = %g, expected %g",
                r, j, (double)first[r * N + j], s);
    }
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(weight_file_unaligned, half_weights_at_odd_addresses_give_the_aligned_bits, .timeout = 300) {
  fill();
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  static _Float16 first[ROWS * N];
  every_pad(ctx, true, first);
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += (double)xh[r * K + k] * (double)wh[k * N + j];
      cr_assert(fabs((double)first[r * N + j] - s) <= 2e-3 * (1 + fabs(s)),
                "y[%d][%d] = %g, expected %g", r, j, (double)first[r * N + j], s);
    }
  kiln_context_free(ctx);
  kiln_status_free(st);
}
