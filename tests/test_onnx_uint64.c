/* test_onnx_uint64.c - ONNX's Max, Min, Mod and BitShift on ui64
 * (src/onnx/ops_uint64.c: unsigned order, division and right shift rebuilt
 * from kiln's si64 ops). ONNX's own node-test models (Debian
 * libonnx-testdata) are imported and run, by the JIT and by the reference
 * interpreter, on operands across the whole ui64 range (0, 1, 2^62,
 * 2^63 - 1, 2^63, 2^64 - 1 and pseudo-random ones, top bit set or not);
 * C's own unsigned arithmetic is the oracle. ONNX's test data uses small
 * values only, where the si64 ops alone would be right. Skipped when the
 * test data is not installed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/kiln.h>
#include <kiln/onnx.h>

#include "ir/interp.h"
#include "src/rt.h"

#define NODE_DIR "/usr/include/onnx/backend/test/data/node"
#define LANES 3 /* every model here takes two [3] operands */

typedef uint64_t (*u64_fn)(uint64_t a, uint64_t b);

static uint64_t u_max(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t u_min(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t u_mod(uint64_t a, uint64_t b) { return a % b; }
static uint64_t u_shl(uint64_t a, uint64_t b) { return a << b; }
static uint64_t u_shr(uint64_t a, uint64_t b) { return a >> b; }

static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

enum { NA = 64 };

/* Operand pairs: every pair of the edge values, then random ones; b kept
 * in [1, 2^64) for Mod and [0, 63] for the shifts. */
static int pairs(uint64_t *a, uint64_t *b, bool shift, bool nonzero) {
  static const uint64_t E[] = {0, 1, 2, 7, UINT64_C(1) << 62, INT64_MAX, UINT64_C(1) << 63,
                               (UINT64_C(1) << 63) + 5, UINT64_MAX - 1, UINT64_MAX};
  const int ne = (int)(sizeof E / sizeof *E);
  int n = 0;
  uint64_t s = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < ne; i++)
    for (int j = 0; j < ne; j++) {
      a[n] = E[i];
      b[n] = shift ? (uint64_t)(j * 7) % 64 : E[j];
      if (!(nonzero && b[n] == 0)) n++;
    }
  for (int k = 0; k < NA; k++) {
    a[n] = next_random(&s);
    b[n] = shift ? next_random(&s) % 64 : next_random(&s) >> (next_random(&s) % 64);
    if (!shift && k % 3 == 0) b[n] |= UINT64_C(1) << 63;
    if (!(nonzero && b[n] == 0)) n++;
  }
  while (n % LANES) a[n] = a[0], b[n] = b[0] | 1, n++;
  return n;
}

static void check(const char *test, u64_fn want, bool shift, bool nonzero) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, test);
  if (access(path, R_OK) != 0)
    cr_skip_test("ONNX node test data not installed (%s; Debian: libonnx-testdata)", path);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_from_onnx_file(path, st);
  cr_assert_not_null(g, "%s: %s", test, kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s: %s", test, kiln_status_message(st));
  static uint64_t a[256], b[256];
  int n = pairs(a, b, shift, nonzero);
  int64_t dim = LANES;
  for (int at = 0; at < n; at += LANES) {
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_UINT64, 1, &dim, &a[at], st),
                          kiln_tensor_borrow(KILN_UINT64, 1, &dim, &b[at], st)};
    kiln_tensor *out[1] = {NULL};
    cr_assert_eq(kiln_model_execute(m, in, 2, out, 1, st), 0, "%s: %s", test,
                 kiln_status_message(st));
    ir_tensor ii[2] = {{IR_DT_UI64, 1, {LANES}, &a[at]}, {IR_DT_UI64, 1, {LANES}, &b[at]}};
    ir_tensor io[1];
    char msg[256];
    cr_assert_eq(ir_interp_run(g->ir, ii, NULL, NULL, io, msg, sizeof msg), 0, "%s: %s", test,
                 msg);
    const uint64_t *jit = kiln_tensor_data(out[0]), *ref = io[0].data;
    for (int i = 0; i < LANES; i++) {
      uint64_t w = want(a[at + i], b[at + i]);
      cr_expect_eq(jit[i], w, "%s JIT: %llu, %llu gave %llu, expected %llu", test,
                   (unsigned long long)a[at + i], (unsigned long long)b[at + i],
                   (unsigned long long)jit[i], (unsigned long long)w);
      cr_expect_eq(ref[i], w, "%s interpreter: %llu, %llu gave %llu, expected %llu", test,
                   (unsigned long long)a[at + i], (unsigned long long)b[at + i],
                   (unsigned long long)ref[i], (unsigned long long)w);
    }
    free(io[0].data);
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
    kiln_tensor_free(out[0]);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(onnx_uint64, max_is_unsigned) { check("test_max_uint64", u_max, false, false); }
Test(onnx_uint64, min_is_unsigned) { check("test_min_uint64", u_min, false, false); }
Test(onnx_uint64, mod_is_unsigned) { check("test_mod_uint64", u_mod, false, true); }
Test(onnx_uint64, shift_left_wraps) { check("test_bitshift_left_uint64", u_shl, true, false); }
Test(onnx_uint64, shift_right_is_logical) {
  check("test_bitshift_right_uint64", u_shr, true, false);
}
