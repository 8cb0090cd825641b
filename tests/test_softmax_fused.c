/* test_softmax_fused.c - softmax with a fused elementwise prologue
 * (softmax(x * c + mask), ir/fuse.c IR_FUSE_SOFTMAX, jit/norm.c) through
 * the public API, against the reference interpreter (tests/support/oracle.c)
 * and against the same graph compiled with KILN_FUSE=0.
 *
 * Shapes: attention-like [b, h, s, s] with masks [1, 1, s, s] and
 * [b, 1, 1, s], rows of 1, 7, 384 and 1000, the axis not last, symbolic
 * dims; x / c; logsoftmax. Data: uniform, NaN / inf in x, masks of 0 and
 * -inf (a row entirely -inf is NaN in the interpreter: x - max is
 * -inf - -inf), x * c overflowing to inf. The fusion is checked to happen
 * (one kernel compiled instead of two) and to change no bit.
 * Tolerances: as test_ops_norm.c's softmax (rtol 1e-5: exp within an ulp,
 * a sum of <= 1000 terms in f32 lanes); atol 1e-9 for results that
 * underflow (the prologue-free f32 exp flushes below 2^-126). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/oracle.h"

/* softmax-like op over x [shape] of the prologue `x OP c + mask`, mask of
 * mshape (NULL: no mask), into buf. */
static const char *graph(char *buf, size_t cap, const char *syms, const char *op,
                         const char *attrs, const char *shape, const char *binop,
                         const char *mshape) {
  char mask_in[256] = "", mask_op[512] = "";
  const char *res = mshape ? "%u" : "%t";
  if (mshape) {
    snprintf(mask_in, sizeof mask_in, ", %%mask: !mo.tensor<[%s], f32>", mshape);
    snprintf(mask_op, sizeof mask_op,
             "  %%u = mo.add(%%t, %%mask) : (!mo.tensor<[%s], f32>, !mo.tensor<[%s], f32>) -> "
             "!mo.tensor<[%s], f32>\n",
             shape, mshape, shape);
  }
  snprintf(buf, cap,
           "mo.graph @sm%s(%%x: !mo.tensor<[%s], f32>, %%c: !mo.tensor<[1], f32>%s) -> "
           "(!mo.tensor<[%s], f32>) {\n"
           "  %%t = mo.%s(%%x, %%c) : (!mo.tensor<[%s], f32>, !mo.tensor<[1], f32>) -> "
           "!mo.tensor<[%s], f32>\n"
           "%s"
           "  %%y = mo.%s(%s) %s : !mo.tensor<[%s], f32>\n"
           "  mo.output %%y : !mo.tensor<[%s], f32>\n}\n",
           syms, shape, mask_in, shape, binop, shape, shape, mask_op, op, res, attrs ? attrs : "",
           shape, shape);
  return buf;
}

static void check(const char *label, const char *text, const char *bindings, oracle_gen gx,
                  oracle_gen gc, oracle_gen gm, double atol) {
  oracle_gen gens[3] = {gx, gc, gm};
  oracle_case c = {.label = label, .mlir = text, .bindings = bindings, .seed = 77, .rtol = 1e-5,
                   .atol = atol, .gens = gens, .ngens = 3, .gen_default = gx};
  ORACLE_ASSERT(&c);
}

Test(softmax_fused, attention_masks_and_rows) {
  char t[4096];
  const char *shape = "b, 2, s, s";
  const char *binds = "b=1,s=1;b=2,s=7;b=1,s=384";
  check("scale + [1, 1, s, s] mask", graph(t, sizeof t, "<b, s>", "softmax", NULL, shape, "mul",
                                           "1, 1, s, s"),
        binds, gen_uniform(-8, 8), gen_uniform(0.1, 0.2), gen_uniform(-3, 0), 1e-9);
  check("x / c + [b, 1, 1, s] mask", graph(t, sizeof t, "<b, s>", "softmax", NULL, shape, "div",
                                            "b, 1, 1, s"),
        binds, gen_uniform(-8, 8), gen_uniform(6, 10), gen_uniform(-3, 0), 1e-9);
  check("logsoftmax, scale + mask", graph(t, sizeof t, "<b, s>", "logsoftmax", NULL, shape,
                                          "mul", "1, 1, s, s"),
        binds, gen_uniform(-8, 8), gen_uniform(0.1, 0.2), gen_uniform(-3, 0), 4e-6);
}

Test(softmax_fused, long_rows_and_axis_not_last) {
  char t[4096];
  check("1000-long rows", graph(t, sizeof t, "", "softmax", NULL, "3, 1000", "mul", "1000"), "",
        gen_uniform(-5, 5), gen_uniform(0.5, 2), gen_uniform(-1, 1), 1e-9);
  check("axis 1 of 3", graph(t, sizeof t, "", "softmax", "{axis = 1}", "4, 37, 5", "mul", "37, 1"),
        "", gen_uniform(-5, 5), gen_uniform(0.5, 2), gen_uniform(-1, 1), 1e-9);
  check("axis 0, logsoftmax", graph(t, sizeof t, "", "logsoftmax", "{axis = 0}", "67, 3", "mul",
                                    "1, 3"),
        "", gen_uniform(-5, 5), gen_uniform(0.5, 2), gen_uniform(-1, 1), 4e-6);
}

/* NaN / inf in x reach the rows through the prologue; x * c with c ~ 1e30
 * overflows to +-inf (rows with +inf are NaN, as in the interpreter). */
Test(softmax_fused, special_values_and_overflow) {
  char t[4096];
  for (int k = 0; k < 2; k++) {
    const char *op = k ? "logsoftmax" : "softmax";
    check(op, graph(t, sizeof t, "", op, NULL, "6, 37", "mul", "37"), "", gen_naninf(-5, 5),
          gen_uniform(0.5, 2), gen_uniform(-1, 1), 4e-6);
    check(op, graph(t, sizeof t, "", op, NULL, "6, 37", "mul", NULL), "", gen_uniform(-5, 5),
          gen_uniform(1e37, 1e38), gen_uniform(0, 0), 4e-6);
  }
}

/* A mask of 0 / -inf: rows partly -inf (those entries are exactly 0), and
 * the rows where the mask is all -inf are NaN on both sides. */
Test(softmax_fused, minus_inf_mask_rows) {
  const char *text =
      "mo.graph @m(%x: !mo.tensor<[2, 3, 8, 8], f32>, %c: !mo.tensor<[1], f32>, "
      "%mask: !mo.tensor<[1, 1, 8, 8], f32>) -> (!mo.tensor<[2, 3, 8, 8], f32>) {\n"
      "  %t = mo.mul(%x, %c) : (!mo.tensor<[2, 3, 8, 8], f32>, !mo.tensor<[1], f32>) -> "
      "!mo.tensor<[2, 3, 8, 8], f32>\n"
      "  %u = mo.add(%t, %mask) : (!mo.tensor<[2, 3, 8, 8], f32>, "
      "!mo.tensor<[1, 1, 8, 8], f32>) -> !mo.tensor<[2, 3, 8, 8], f32>\n"
      "  %y = mo.softmax(%u) : !mo.tensor<[2, 3, 8, 8], f32>\n"
      "  mo.output %y : !mo.tensor<[2, 3, 8, 8], f32>\n}\n";
  /* causal: -inf above the diagonal; row 5 all -inf */
  float mask[64];
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) mask[i * 8 + j] = j > i || i == 5 ? -INFINITY : 0.0f;
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "m.mlir", st);
  cr_assert(ctx && g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float x[384], c = 0.125f, y[384];
  oracle_gen gx = gen_uniform(-8, 8);
  oracle_fill(x, KILN_FLOAT32, 384, &gx, 5);
  int64_t xs[4] = {2, 3, 8, 8}, cs[1] = {1}, ms[4] = {1, 1, 8, 8};
  kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, 4, xs, x, st),
                        kiln_tensor_borrow(KILN_FLOAT32, 1, cs, &c, st),
                        kiln_tensor_borrow(KILN_FLOAT32, 4, ms, mask, st)};
  kiln_tensor *out = kiln_tensor_borrow(KILN_FLOAT32, 4, xs, y, st);
  cr_assert(in[0] && in[1] && in[2] && out);
  cr_assert_eq(kiln_model_execute(m, in, 3, &out, 1, st), 0, "%s", kiln_status_message(st));
  for (int r = 0; r < 48; r++) {
    int i = r % 8;
    double s = 0;
    for (int j = 0; j < 8; j++) {
      float v = y[r * 8 + j];
      if (i == 5) {
        cr_expect(isnan(v), "row %d (all -inf) element %d: %g, expected NaN", r, j, v);
      } else if (j > i) {
        cr_expect(v == 0.0f && !signbit(v), "row %d element %d (masked): %g, expected +0", r, j, v);
      } else {
        s += v;
      }
    }
    if (i != 5) cr_expect(fabs(s - 1.0) < 1e-5, "row %d sums to %.9g", r, s);
  }
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* Kernels compiled for `text` in a fresh context (the memory cache makes
 * each distinct kernel once), and its output on seeded x / c / mask. */
static double compile_and_run(const char *text, float *y, int64_t n) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "g.mlir", st);
  cr_assert(ctx && g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  float *x = malloc((size_t)n * sizeof *x), c = 0.125f, mask[64 * 64];
  cr_assert_not_null(x);
  oracle_gen gx = gen_naninf(-8, 8), gm = gen_uniform(-2, 0);
  oracle_fill(x, KILN_FLOAT32, n, &gx, 9);
  oracle_fill(mask, KILN_FLOAT32, 64 * 64, &gm, 10);
  mask[3 * 64 + 5] = -INFINITY;
  int64_t xs[4] = {n / (64 * 64), 1, 64, 64}, cs[1] = {1}, ms[4] = {1, 1, 64, 64};
  kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, 4, xs, x, st),
                        kiln_tensor_borrow(KILN_FLOAT32, 1, cs, &c, st),
                        kiln_tensor_borrow(KILN_FLOAT32, 4, ms, mask, st)};
  kiln_tensor *out = kiln_tensor_borrow(KILN_FLOAT32, 4, xs, y, st);
  cr_assert(in[0] && in[1] && in[2] && out);
  cr_assert_eq(kiln_model_execute(m, in, 3, &out, 1, st), 0, "%s", kiln_status_message(st));
  double kernels = kiln_context_counter(ctx, KILN_COUNTER_COMPILES);
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  kiln_tensor_free(out);
  free(x);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return kernels;
}

/* Fused: one kernel (mul + add + softmax); KILN_FUSE=0: three. The same
 * bits either way (the prologue rounds each member as its kernel does, the
 * rows are normalized by the same code), NaN payloads and signs aside. */
Test(softmax_fused, fused_is_one_kernel_and_bit_identical) {
  char t[4096];
  graph(t, sizeof t, "", "softmax", NULL, "3, 1, 64, 64", "mul", "1, 1, 64, 64");
  int64_t n = 3 * 64 * 64;
  float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
  cr_assert(a && b);
  setenv("KILN_FUSE", "0", 1);
  double k0 = compile_and_run(t, a, n);
  cr_assert_eq(k0, 3.0, "%g kernels unfused", k0);
  unsetenv("KILN_FUSE");
  double k1 = compile_and_run(t, b, n);
  cr_assert_eq(k1, 1.0, "%g kernels fused", k1);
  for (int64_t i = 0; i < n; i++) {
    if (isnan(a[i]) && isnan(b[i])) continue; /* which NaN a row gets is unspecified */
    uint32_t ua, ub;
    memcpy(&ua, &a[i], 4);
    memcpy(&ub, &b[i], 4);
    cr_assert_eq(ua, ub, "element %lld: unfused %a (%08x), fused %a (%08x)", (long long)i, a[i],
                 ua, b[i], ub);
  }
  free(a);
  free(b);
}
