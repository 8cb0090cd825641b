/* test_ops_quant.c - mo.qmatmul and mo.dequantize (GGUF block encodings):
 * the JIT, which computes from the blocks (kernels-templates/qmatmul.c),
 * against the reference interpreter for every encoding over several M, N
 * and K (M across the kernel's 4-row passes, N split between the pool's
 * parts, K of one and several blocks), with the weight bytes random (their
 * f16 scale bytes kept small so sums stay finite); both against numpy's
 * values for the blocks the gguf package wrote (tests/gguf/); and the
 * verify errors: K not a multiple of the block, bytes not whole blocks, an
 * unknown encoding, wrong dtypes. Under KILN_TEST_DEVICE (tools/gpu_check.sh)
 * every model here runs on that device instead (jit/simt_quant.c: the same
 * terms, summed in double like the interpreter). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/qblock.h"
#include "kiln/kiln.h"
#include "src/io.h"
#include "support/oracle.h"
#include "support/under_test.h"

static const char *const ENC[] = {"q4_0", "q8_0", "q4_k", "q5_k", "q6_k"};

/* lhs [m, K] f32, rhs [n, K / elems * bytes] ui8 -> [m, n] */
static void qmatmul_text(char *buf, size_t cap, const char *enc, int64_t k) {
  int e = qb_from_name(enc);
  int64_t bytes = k / QB_ELEMS(e) * QB_BYTES(e);
  snprintf(buf, cap,
           "mo.graph @q<m, n>(%%a: !mo.tensor<[m, %lld], f32>, %%w: !mo.tensor<[n, %lld], ui8>)"
           " -> (!mo.tensor<[m, n], f32>) {\n"
           "  %%y = mo.qmatmul(%%a, %%w) {encoding = \"%s\"} : (!mo.tensor<[m, %lld], f32>, "
           "!mo.tensor<[n, %lld], ui8>) -> !mo.tensor<[m, n], f32>\n"
           "  mo.output %%y : !mo.tensor<[m, n], f32>\n}\n",
           (long long)k, (long long)bytes, enc, (long long)k, (long long)bytes);
}

static void dequantize_text(char *buf, size_t cap, const char *enc, int64_t blocks) {
  int e = qb_from_name(enc);
  long long bytes = blocks * QB_BYTES(e), elems = blocks * QB_ELEMS(e);
  snprintf(buf, cap,
           "mo.graph @d<n>(%%w: !mo.tensor<[n, %lld], ui8>) -> (!mo.tensor<[n, %lld], f32>) {\n"
           "  %%y = mo.dequantize(%%w) {encoding = \"%s\"} : (!mo.tensor<[n, %lld], ui8>) -> "
           "!mo.tensor<[n, %lld], f32>\n  mo.output %%y : !mo.tensor<[n, %lld], f32>\n}\n",
           bytes, elems, enc, bytes, elems, elems);
}

/* Weight bytes in [0, 40]: every f16 scale then has an exponent field of at
 * most 10 (|d| < 2^-4), so sums of K products stay far from overflow. */
static const oracle_gen GENS[] = {{ORACLE_GEN_UNIFORM, -3, 3, 0}, {ORACLE_GEN_UNIFORM, 0, 40, 0}};

/* qmatmul of [m, k] by [n, k]'s blocks, JIT against the interpreter, for
 * every encoding (k = 0: one block of each): the bindings of m and n, lhs
 * from gens[0], weight bytes from gens[1] */
static void each_encoding(const char *what, int64_t k, const char *bindings, unsigned seed,
                          double atol, const oracle_gen *gens) {
  for (int e = 0; e < 5; e++) {
    int64_t kk = k ? k : QB_ELEMS(qb_from_name(ENC[e]));
    char text[2048], label[64];
    qmatmul_text(text, sizeof text, ENC[e], kk);
    snprintf(label, sizeof label, "qmatmul %s K=%lld %s", ENC[e], (long long)kk, what);
    oracle_case c = {.label = label, .mlir = text, .bindings = bindings, .seed = seed + e,
                     .rtol = 1e-4, .atol = atol, .gens = gens, .ngens = 2};
    ORACLE_ASSERT(&c);
  }
}

/* K of one block (k = 0 above) and of 512; the f32 sums against the
 * interpreter's double sums: |sum| of products up to ~1e4 at K = 512, so a
 * few 1e-3 of rounding */
Test(qmatmul, every_encoding_against_the_interpreter) {
  static const char *const bindings = "m=1,n=1;m=1,n=300;m=3,n=17;m=4,n=64;m=9,n=33;m=0,n=5";
  each_encoding("", 0, bindings, 21, 2e-2, GENS);
  each_encoding("", 512, bindings, 21, 2e-2, GENS);
}

/* K = 16640: past the kernel's columns of quantized lhs per pass (16384 for
 * one row, 4096 for more), so a row's sum is chunks added (the interpreter
 * sums it in one go). */
Test(qmatmul, k_across_the_kernels_lhs_chunks_against_the_interpreter) {
  each_encoding("", 16640, "m=3,n=5;m=1,n=2", 5, 5e-2, GENS);
}

/* A prefill (m > 1) quantizes groups of lhs rows once per pass over K and
 * reads W in blocks of ~256 KB: 17 rows (four 4-row tiles and one left
 * over) against 130 rows of W (several blocks for every encoding), and K =
 * 37120, past the buffer's whole rows (two passes) with a tail. */
Test(qmatmul, prefill_groups_passes_and_blocks_of_w_against_the_interpreter) {
  each_encoding("", 4352, "m=17,n=130", 7, 5e-2, GENS);
  each_encoding("", 2 * 16384 + 4096 + 256, "m=5,n=3", 11, 1e-1, GENS);
}

/* An lhs block with a NaN or an infinity has a NaN scale (ir/qblock.h): the
 * rows it is in are NaN, in the JIT as in the interpreter; an all-zero lhs
 * gives zeros. */
Test(qmatmul, non_finite_and_zero_lhs_as_the_interpreter) {
  static const oracle_gen naninf[] = {{ORACLE_GEN_NANINF, -3, 3, 0},
                                      {ORACLE_GEN_UNIFORM, 0, 40, 0}};
  static const oracle_gen zeros[] = {{ORACLE_GEN_CONST, 0, 0, 0}, {ORACLE_GEN_UNIFORM, 0, 40, 0}};
  each_encoding("non-finite lhs", 256, "m=3,n=4", 9, 2e-2, naninf);
  each_encoding("zero lhs", 256, "m=3,n=4", 9, 2e-2, zeros);
}

Test(dequantize, every_encoding_against_the_interpreter_exactly) {
  for (int e = 0; e < 5; e++) {
    char text[2048], label[64];
    dequantize_text(text, sizeof text, ENC[e], 3);
    snprintf(label, sizeof label, "dequantize %s", ENC[e]);
    oracle_case c = {.label = label, .mlir = text, .bindings = "n=1;n=5;n=0;n=70",
                     .seed = 7u + e, .rtol = 0, .atol = 0, .gens = GENS + 1, .ngens = 1};
    ORACLE_ASSERT(&c);
  }
}

/* ---- against numpy: the blocks the gguf package wrote ---- */

static kiln_tensor *npy(const char *name, kiln_status *st) {
  char path[512];
  snprintf(path, sizeof path, KILN_SOURCE_DIR "/tests/gguf/small/%s.npy", name);
  kiln_tensor *t = rt_npy_read(path, st);
  cr_assert(t, "%s", kiln_status_message(st));
  return t;
}

static const ir_tensor *gguf_weight(void *ud, const char *name) {
  (void)name;
  return ud;
}

/* The interpreter's outputs for graph `text` on x, its weight w. */
static void interpret(const char *text, kiln_tensor *x, kiln_tensor *w, ir_tensor *out) {
  ir_diag dg = {0};
  ir_graph *g = ir_parse(text, strlen(text), &dg);
  cr_assert(g, "%d:%d: %s", dg.line, dg.col, dg.msg);
  ir_tensor in = {.dtype = IR_DT_F32, .rank = 2, .data = kiln_tensor_data(x)};
  ir_tensor wt = {.dtype = IR_DT_UI8, .rank = 2, .data = kiln_tensor_data(w)};
  for (int i = 0; i < 2; i++) {
    in.shape[i] = kiln_tensor_shape(x)[i];
    wt.shape[i] = kiln_tensor_shape(w)[i];
  }
  char msg[512];
  cr_assert_eq(ir_interp_run(g, &in, gguf_weight, &wt, out, msg, sizeof msg), 0, "%s", msg);
  ir_graph_free(g);
}

/* Block terms of lhs quantization: |x - q * da| <= 0.6 * amax / 127 per
 * element (half a step, and the f16 rounding of Q8_0's scale), so qmatmul
 * is within sum over blocks of 0.6 * amax / 127 * sum |w| of x @ W^T. */
static double quantization_bound(const float *x, const float *w, int64_t k, int64_t e) {
  double bound = 0;
  for (int64_t b = 0; b < k / e; b++) {
    double amax = 0, wsum = 0;
    for (int64_t i = b * e; i < (b + 1) * e; i++) {
      amax = fmax(amax, fabs(x[i]));
      wsum += fabs(w[i]);
    }
    bound += 0.6 * amax / 127 * wsum;
  }
  return bound;
}

/* y = qmatmul(x, W) and dequantize(W) of tensor `name` of small.gguf, bound
 * with kiln_model_bind_weights_file (the JIT) and given to the interpreter,
 * against tools/qmatmul_oracle.py's numpy answers (yq_: the same meaning,
 * up to the order of the float sums) and gguf_testdata.py's float64
 * x @ dequantize(W)^T (y_: the unquantized lhs, within the lhs rounding). */
static void against_numpy(const char *enc) {
  char name[32], text[4096];
  snprintf(name, sizeof name, "blk.%s", enc);
  kiln_status *st = kiln_status_new();
  char xn[48], yn[48], qn[48];
  snprintf(xn, sizeof xn, "x_%s", name);
  snprintf(yn, sizeof yn, "y_%s", name);
  snprintf(qn, sizeof qn, "yq_%s", name);
  kiln_tensor *x = npy(xn, st), *want_y = npy(yn, st), *want_d = npy(name, st);
  kiln_tensor *want_q = npy(qn, st);
  int64_t m = kiln_tensor_shape(x)[0], k = kiln_tensor_shape(x)[1];
  int64_t n = kiln_tensor_shape(want_d)[0];
  int e = qb_from_name(enc);
  long long bytes = k / QB_ELEMS(e) * QB_BYTES(e);
  snprintf(text, sizeof text,
           "mo.graph @g(%%x: !mo.tensor<[%lld, %lld], f32>) -> (!mo.tensor<[%lld, %lld], f32>, "
           "!mo.tensor<[%lld, %lld], f32>) {\n"
           "  %%w = mo.constant.external {name = \"%s\"} : !mo.tensor<[%lld, %lld], ui8>\n"
           "  %%y = mo.qmatmul(%%x, %%w) {encoding = \"%s\"} : (!mo.tensor<[%lld, %lld], f32>, "
           "!mo.tensor<[%lld, %lld], ui8>) -> !mo.tensor<[%lld, %lld], f32>\n"
           "  %%d = mo.dequantize(%%w) {encoding = \"%s\"} : (!mo.tensor<[%lld, %lld], ui8>) -> "
           "!mo.tensor<[%lld, %lld], f32>\n"
           "  mo.output %%y, %%d : !mo.tensor<[%lld, %lld], f32>, "
           "!mo.tensor<[%lld, %lld], f32>\n}\n",
           (long long)m, (long long)k, (long long)m, (long long)n, (long long)n, (long long)k,
           name, (long long)n, bytes, enc, (long long)m, (long long)k, (long long)n, bytes,
           (long long)m, (long long)n, enc, (long long)n, bytes, (long long)n, (long long)k,
           (long long)m, (long long)n, (long long)n, (long long)k);
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "numpy.mlir", st);
  cr_assert(g, "%s\n%s", kiln_status_message(st), text);
  kiln_model *md = under_test_compile(ctx, g, st);
  cr_assert(md, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_bind_weights_file(md, KILN_SOURCE_DIR "/tests/gguf/small.gguf", st), 0,
               "%s", kiln_status_message(st));
  kiln_tensor *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(md, &x, 1, out, 2, st), 0, "%s", kiln_status_message(st));
  rt_gguf *gf = rt_gguf_open(KILN_SOURCE_DIR "/tests/gguf/small.gguf", st);
  cr_assert(gf, "%s", kiln_status_message(st));
  kiln_tensor *w = rt_gguf_tensor(gf, rt_gguf_find(gf, name), st);
  cr_assert(w, "%s", kiln_status_message(st));
  ir_tensor ref[2];
  interpret(text, x, w, ref);
  const float *y = kiln_tensor_data(out[0]), *wy = kiln_tensor_data(want_y);
  const float *wq = kiln_tensor_data(want_q), *ry = ref[0].data;
  const float *xv = kiln_tensor_data(x), *wd = kiln_tensor_data(want_d);
  for (int64_t i = 0; i < m * n; i++) {
    double mag = 0; /* sum of |products|: the scale of the rounding */
    for (int64_t kk = 0; kk < k; kk++)
      mag += fabs((double)xv[(i / n) * k + kk] * wd[(i % n) * k + kk]);
    /* the interpreter and numpy both sum the f32 terms in double */
    cr_expect(fabs(ry[i] - wq[i]) <= 1e-7 * mag + 1e-7, "%s interp y[%lld] = %.9g, numpy %.9g",
              enc, (long long)i, (double)ry[i], (double)wq[i]);
    cr_expect(fabs(y[i] - wq[i]) <= 1e-6 * mag + 1e-6, "%s jit y[%lld] = %.9g, numpy %.9g", enc,
              (long long)i, (double)y[i], (double)wq[i]);
    double bound = quantization_bound(xv + (i / n) * k, wd + (i % n) * k, k, QB_ELEMS(e));
    cr_expect(fabs(y[i] - wy[i]) <= bound + 1e-6 * mag, "%s y[%lld] = %g, x @ W^T %g (bound %g)",
              enc, (long long)i, (double)y[i], (double)wy[i], bound);
  }
  free(ref[0].data);
  free(ref[1].data);
  kiln_tensor_free(w);
  rt_gguf_close(gf);
  kiln_tensor_free(want_q);
  const float *d = kiln_tensor_data(out[1]);
  for (int64_t i = 0; i < n * k; i++)
    cr_expect(fabsf(d[i] - wd[i]) <= 1e-6f * fmaxf(1.0f, fabsf(wd[i])), "%s d[%lld]", enc,
              (long long)i);
  for (int i = 0; i < 2; i++) kiln_tensor_free(out[i]);
  kiln_tensor_free(x);
  kiln_tensor_free(want_y);
  kiln_tensor_free(want_d);
  kiln_model_free(md);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(qmatmul_numpy, q4_0) { against_numpy("q4_0"); }
Test(qmatmul_numpy, q8_0) { against_numpy("q8_0"); }
Test(qmatmul_numpy, q4_k) { against_numpy("q4_k"); }
Test(qmatmul_numpy, q5_k) { against_numpy("q5_k"); }
Test(qmatmul_numpy, q6_k) { against_numpy("q6_k"); }

/* ---- refused at verify ---- */

#define QM(k, bytes, enc, adt, wdt)                                                          \
  "mo.graph @g(%a: !mo.tensor<[2, " k "], " adt ">, %w: !mo.tensor<[3, " bytes "], " wdt   \
  ">) -> (!mo.tensor<[2, 3], f32>) {\n  %y = mo.qmatmul(%a, %w) {encoding = \"" enc        \
  "\"} : (!mo.tensor<[2, " k "], " adt ">, !mo.tensor<[3, " bytes "], " wdt               \
  ">) -> !mo.tensor<[2, 3], f32>\n  mo.output %y : !mo.tensor<[2, 3], f32>\n}\n"

Test(quant_errors, k_not_a_multiple_of_the_block) {
  EXPECT_REJECTED(QM("40", "18", "q4_0", "f32", "ui8"),
                  "K = 40 is not a multiple of q4_0's block of 32");
}

Test(quant_errors, k_does_not_match_the_blocks) {
  EXPECT_REJECTED(QM("64", "18", "q4_0", "f32", "ui8"),
                  "operand 0 has K = 64 but operand 1's 1 blocks per row hold K = 32");
}

Test(quant_errors, bytes_not_whole_blocks) {
  EXPECT_REJECTED(QM("32", "20", "q4_0", "f32", "ui8"),
                  "is 20 bytes, not a whole number of q4_0 blocks of 18 bytes");
}

Test(quant_errors, unknown_encoding) {
  EXPECT_REJECTED(QM("32", "18", "q3_k", "f32", "ui8"), "unknown encoding 'q3_k'");
}

Test(quant_errors, wrong_dtypes) {
  EXPECT_REJECTED(QM("32", "18", "q4_0", "f32", "si32"), "must be ui8, not si32");
  EXPECT_REJECTED(QM("32", "18", "q4_0", "f64", "ui8"), "operand 0 must be f32, not f64");
}

Test(quant_errors, max_spelling_of_the_encoding_is_accepted) {
  kiln_code code;
  char msg[1024];
  cr_expect_eq(oracle_compile_only(QM("256", "144", "Q4_K", "f32", "ui8"), &code, msg,
                                   sizeof msg), 0, "%s", msg);
}

/* A symbolic K is checked when the graph runs: the blocks decide K. */
Test(quant_errors, symbolic_k_is_checked_at_run_time) {
  static const char text[] =
      "mo.graph @g<k>(%a: !mo.tensor<[2, k], f32>, %w: !mo.tensor<[3, 18], ui8>) -> "
      "(!mo.tensor<[2, 3], f32>) {\n"
      "  %y = mo.qmatmul(%a, %w) {encoding = \"q4_0\"} : (!mo.tensor<[2, k], f32>, "
      "!mo.tensor<[3, 18], ui8>) -> !mo.tensor<[2, 3], f32>\n"
      "  mo.output %y : !mo.tensor<[2, 3], f32>\n}\n";
  oracle_case ok = {.label = "qmatmul symbolic K", .mlir = text, .bindings = "k=32",
                    .rtol = 1e-4, .atol = 2e-2, .gens = GENS, .ngens = 2};
  ORACLE_ASSERT(&ok);
  oracle_case bad = {.label = "qmatmul symbolic K wrong", .mlir = text, .bindings = "k=64",
                     .gens = GENS, .ngens = 2, .expect_error = true};
  oracle_expect_both_fail(&bad, "must be 32 (operand 1's blocks)");
}
