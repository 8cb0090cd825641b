/* test_ops_matmul_integer.c - mo.matmul.integer (ONNX MatMulInteger): the
 * JIT (kernels-templates/gemm_int8.c) against the reference interpreter,
 * exactly, for every pair of ui8 / si8 operands, over shapes that cross the
 * kernel's blocks and the pool's parts, without zero points, with scalar ones
 * and with one per row of a / per column of b, batched with broadcasting and
 * with 1-D operands; hand-worked answers (ONNX's node test, a sum that wraps
 * past 2^31); b a weight or constant read prepacked; and verify errors at
 * line:col for wrong dtypes and shapes, and for a kiln.packed_b in user text;
 * each kernel (generic, AVX2, AVX-VNNI, AVX512-VNNI: KILN_INT8_GEMM caps the
 * choice) on what this host runs, also with per-channel scales after it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/jit.h"
#include "kiln/kiln.h"
#include "src/prepack.h"
#include "src/rt.h"
#include "support/oracle.h"
#include "support/under_test.h"

static const char *const DT[] = {"ui8", "si8"};

/* Full ranges of each dtype, so saturation anywhere would show. */
static oracle_gen range_of(const char *dt) {
  return strcmp(dt, "ui8") == 0 ? gen_uniform(0, 255) : gen_uniform(-128, 127);
}

/* a [m, k] x b [k, n] with zero points: zps 0 none, 1 scalars, 2 per row /
 * per column */
static void mmi_text(char *buf, size_t cap, const char *ta, const char *tb, int zps) {
  char za[64] = "", zb[64] = "", in[256] = "", ops[64] = "", tys[256] = "";
  if (zps == 1) {
    snprintf(za, sizeof za, "!mo.tensor<[], %s>", ta);
    snprintf(zb, sizeof zb, "!mo.tensor<[1], %s>", tb);
  } else if (zps == 2) {
    snprintf(za, sizeof za, "!mo.tensor<[m], %s>", ta);
    snprintf(zb, sizeof zb, "!mo.tensor<[n], %s>", tb);
  }
  if (zps) {
    snprintf(in, sizeof in, ", %%za: %s, %%zb: %s", za, zb);
    snprintf(ops, sizeof ops, ", %%za, %%zb");
    snprintf(tys, sizeof tys, ", %s, %s", za, zb);
  }
  snprintf(buf, cap,
           "mo.graph @mmi<m, n, k>(%%a: !mo.tensor<[m, k], %s>, %%b: !mo.tensor<[k, n], %s>%s)"
           " -> (!mo.tensor<[m, n], si32>) {\n"
           "  %%y = mo.matmul.integer(%%a, %%b%s) : (!mo.tensor<[m, k], %s>, "
           "!mo.tensor<[k, n], %s>%s) -> !mo.tensor<[m, n], si32>\n"
           "  mo.output %%y : !mo.tensor<[m, n], si32>\n}\n",
           ta, tb, in, ops, ta, tb, tys);
}

static void each_pair(int zps, const char *bindings, unsigned seed) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      char text[2048], label[96];
      mmi_text(text, sizeof text, DT[i], DT[j], zps);
      snprintf(label, sizeof label, "matmul.integer %s x %s, zero points %d", DT[i], DT[j], zps);
      oracle_gen g[] = {range_of(DT[i]), range_of(DT[j]), range_of(DT[i]), range_of(DT[j])};
      oracle_case c = {.label = label, .mlir = text, .bindings = bindings,
                       .seed = seed + (unsigned)(2 * i + j), .gens = g, .ngens = 4};
      ORACLE_ASSERT(&c);
    }
}

static const char *SHAPES = "m=1,n=1,k=1;m=3,n=5,k=7;m=17,n=33,k=64;m=0,n=4,k=3;"
                            "m=4,n=3,k=0;m=70,n=130,k=300;m=1,n=257,k=1000";

Test(matmul_integer, every_dtype_pair_without_zero_points) {
  each_pair(0, SHAPES, 10);
}

Test(matmul_integer, every_dtype_pair_with_scalar_zero_points) {
  each_pair(1, SHAPES, 20);
}

Test(matmul_integer, every_dtype_pair_with_row_and_column_zero_points) {
  each_pair(2, SHAPES, 30);
}

/* batch dims broadcast as mo.matmul's: [2, 1, m, k] x [3, k, n] */
Test(matmul_integer, batch_dims_broadcast) {
  const char *text =
      "mo.graph @b<m, n, k>(%a: !mo.tensor<[2, 1, m, k], ui8>, %b: !mo.tensor<[3, k, n], si8>, "
      "%za: !mo.tensor<[m], ui8>) -> (!mo.tensor<[2, 3, m, n], si32>) {\n"
      "  %y = mo.matmul.integer(%a, %b, %za) : (!mo.tensor<[2, 1, m, k], ui8>, "
      "!mo.tensor<[3, k, n], si8>, !mo.tensor<[m], ui8>) -> !mo.tensor<[2, 3, m, n], si32>\n"
      "  mo.output %y : !mo.tensor<[2, 3, m, n], si32>\n}\n";
  oracle_gen g[] = {gen_uniform(0, 255), gen_uniform(-128, 127), gen_uniform(0, 255)};
  oracle_case c = {.label = "matmul.integer batched", .mlir = text,
                   .bindings = "m=3,n=4,k=5;m=9,n=40,k=70", .seed = 7, .gens = g, .ngens = 3};
  ORACLE_ASSERT(&c);
}

/* a 1-D a is one row, a 1-D b one column (their dims dropped) */
Test(matmul_integer, one_dimensional_operands) {
  const char *text =
      "mo.graph @v<n, k>(%a: !mo.tensor<[k], si8>, %b: !mo.tensor<[k, n], ui8>, "
      "%c: !mo.tensor<[k], ui8>) -> (!mo.tensor<[n], si32>, !mo.tensor<[], si32>) {\n"
      "  %y = mo.matmul.integer(%a, %b) : (!mo.tensor<[k], si8>, !mo.tensor<[k, n], ui8>) -> "
      "!mo.tensor<[n], si32>\n"
      "  %z = mo.matmul.integer(%a, %c) : (!mo.tensor<[k], si8>, !mo.tensor<[k], ui8>) -> "
      "!mo.tensor<[], si32>\n"
      "  mo.output %y, %z : !mo.tensor<[n], si32>, !mo.tensor<[], si32>\n}\n";
  oracle_gen g[] = {gen_uniform(-128, 127), gen_uniform(0, 255), gen_uniform(0, 255)};
  oracle_case c = {.label = "matmul.integer 1-D", .mlir = text, .bindings = "n=5,k=9;n=1,k=100",
                   .seed = 3, .gens = g, .ngens = 3};
  ORACLE_ASSERT(&c);
}

/* b a weight (bound, packed once at bind for every kernel but the generic
 * one) and a constant (packed at compile): the prepacked kernel against the
 * interpreter, with a scalar a and a per-column b zero point, K not a
 * multiple of 4 and N not one of the 64-column panels: b [k, n] with the
 * given bindings of m (decode steps of 1 to 4 rows stream b panel by
 * panel, K blocks of 512 in turn) */
static void prepacked_shape(const char *kernel, int k, int n, const char *bindings) {
  const char *pairs[][2] = {{"ui8", "si8"}, {"si8", "ui8"}, {"si8", "si8"}, {"ui8", "ui8"}};
  for (int p = 0; p < 4; p++) {
    char text[2048], label[96];
    snprintf(text, sizeof text,
             "mo.graph @w<m>(%%a: !mo.tensor<[m, %d], %s>, %%zb: !mo.tensor<[%d], %s>, "
             "%%s: !mo.tensor<[m, 2], %s>) -> "
             "(!mo.tensor<[m, %d], si32>, !mo.tensor<[m, 3], si32>) {\n"
             "  %%b = mo.constant.external {name = \"w\"} : !mo.tensor<[%d, %d], %s>\n"
             "  %%za = mo.constant {value = #M.dense_array<3> : tensor<%s>} : !mo.tensor<[], %s>\n"
             "  %%y = mo.matmul.integer(%%a, %%b, %%za, %%zb) : (!mo.tensor<[m, %d], %s>, "
             "!mo.tensor<[%d, %d], %s>, !mo.tensor<[], %s>, !mo.tensor<[%d], %s>) -> "
             "!mo.tensor<[m, %d], si32>\n"
             "  %%c = mo.constant {value = #M.dense_array<1, 2, 3, 4, 5, 6> : tensor<2x3x%s>} : "
             "!mo.tensor<[2, 3], %s>\n"
             "  %%z = mo.matmul.integer(%%s, %%c) : (!mo.tensor<[m, 2], %s>, "
             "!mo.tensor<[2, 3], %s>) -> !mo.tensor<[m, 3], si32>\n"
             "  mo.output %%y, %%z : !mo.tensor<[m, %d], si32>, !mo.tensor<[m, 3], si32>\n}\n",
             k, pairs[p][0], n, pairs[p][1], pairs[p][0], n, k, n, pairs[p][1], pairs[p][0],
             pairs[p][0], k, pairs[p][0], k, n, pairs[p][1], pairs[p][0], n, pairs[p][1], n,
             pairs[p][1], pairs[p][1], pairs[p][0], pairs[p][1], n);
    snprintf(label, sizeof label, "matmul.integer prepacked %s x %s [%d, %d], %s kernel",
             pairs[p][0], pairs[p][1], k, n, kernel);
    oracle_gen g[] = {range_of(pairs[p][0]), range_of(pairs[p][1]), range_of(pairs[p][0])};
    oracle_case c = {.label = label, .mlir = text, .bindings = bindings, .seed = 50u + p,
                     .gens = g, .ngens = 3, .wgen = range_of(pairs[p][1])};
    ORACLE_ASSERT(&c);
  }
}

static void prepacked_cases(const char *kernel) {
  prepacked_shape(kernel, 203, 130, "m=1;m=7;m=40");
  prepacked_shape(kernel, 1030, 200, "m=1;m=2;m=3;m=4");
}

Test(matmul_integer, constant_and_weight_b_read_prepacked) {
  if (under_test_device()) /* weights are packed for the host's GEMM only */
    cr_skip_test("prepacking is the CPU runtime's (%s)", under_test_device());
  prepacked_cases("the host's");
}

/* dynamic_scaled_matmul's form: the si32 sums of a (zero point per row)
 * and b (per column) cast to f32 and scaled per column of b and per tensor
 * of a; the kernel's sums must be exact for the scaled result to match */
static void scaled_cases(const char *kernel) {
  const char *text =
      "mo.graph @s<m, n, k>(%a: !mo.tensor<[m, k], ui8>, %b: !mo.tensor<[k, n], si8>, "
      "%za: !mo.tensor<[m], ui8>, %zb: !mo.tensor<[n], si8>, %sa: !mo.tensor<[1], f32>, "
      "%sb: !mo.tensor<[n], f32>) -> (!mo.tensor<[m, n], f32>) {\n"
      "  %y = mo.matmul.integer(%a, %b, %za, %zb) : (!mo.tensor<[m, k], ui8>, "
      "!mo.tensor<[k, n], si8>, !mo.tensor<[m], ui8>, !mo.tensor<[n], si8>) -> "
      "!mo.tensor<[m, n], si32>\n"
      "  %f = mo.cast(%y) : !mo.tensor<[m, n], f32>\n"
      "  %s = mo.mul(%sb, %sa) : (!mo.tensor<[n], f32>, !mo.tensor<[1], f32>) -> "
      "!mo.tensor<[n], f32>\n"
      "  %o = mo.mul(%f, %s) : (!mo.tensor<[m, n], f32>, !mo.tensor<[n], f32>) -> "
      "!mo.tensor<[m, n], f32>\n"
      "  mo.output %o : !mo.tensor<[m, n], f32>\n}\n";
  char label[96];
  snprintf(label, sizeof label, "matmul.integer scaled per channel, %s kernel", kernel);
  oracle_gen g[] = {gen_uniform(0, 255),    gen_uniform(-128, 127), gen_uniform(0, 255),
                    gen_uniform(-128, 127), gen_uniform(0.001, 0.1), gen_uniform(0.001, 0.1)};
  oracle_case c = {.label = label, .mlir = text,
                   .bindings = "m=1,n=67,k=259;m=7,n=130,k=5;m=13,n=64,k=1030",
                   .seed = 90, .gens = g, .ngens = 6};
  ORACLE_ASSERT(&c);
}

Test(matmul_integer, scaled_per_channel_against_the_interpreter) {
  scaled_cases("the host's");
}

/* Every kernel of the 8-bit GEMM this host runs (KILN_INT8_GEMM caps the
 * JIT's choice: on an AVX512-VNNI host the AVX2 and AVX-VNNI ones run too),
 * through the JIT against the interpreter: odd M / N / K, K not a multiple
 * of 4, M = 1, every zero-point form, prepacked b, per-channel scales, on
 * two threads */
Test(matmul_integer, every_kernel_against_the_interpreter) {
  if (under_test_device())
    cr_skip_test("the 8-bit GEMM kernels are the CPU's (%s)", under_test_device());
  static const char *const KERNELS[] = {"generic", "avx2", "avxvnni", "avx512vnni"};
  const char *shapes = "m=1,n=1,k=1;m=1,n=257,k=1027;m=5,n=67,k=3;m=13,n=129,k=515;"
                       "m=40,n=64,k=64";
  /* two threads: m = 1 and 5 split their columns by panels, 40 its rows */
  setenv("KILN_NUM_THREADS", "2", 1);
  for (int i = 0; i < 4; i++) {
    setenv("KILN_INT8_GEMM", KERNELS[i], 1);
    for (int z = 0; z < 3; z++) each_pair(z, shapes, 100u + 10u * (unsigned)z);
    prepacked_cases(KERNELS[i]);
    scaled_cases(KERNELS[i]);
  }
  unsetenv("KILN_INT8_GEMM");
  unsetenv("KILN_NUM_THREADS");
}

/* KILN_INT8_GEMM caps the engine's kernel at the named one (or the host's
 * best, when slower), names it in the options (the code keys), and a weight
 * b is prepacked for every kernel but the generic one */
Test(matmul_integer, kernel_cap_is_the_engines_choice_and_decides_prepacking) {
  if (under_test_device())
    cr_skip_test("the 8-bit GEMM kernels are the CPU's (%s)", under_test_device());
  setenv("KILN_CACHE", "off", 1);
  const char *text =
      "mo.graph @w(%a: !mo.tensor<[3, 40], ui8>) -> (!mo.tensor<[3, 70], si32>) {\n"
      "  %b = mo.constant.external {name = \"w\"} : !mo.tensor<[40, 70], si8>\n"
      "  %y = mo.matmul.integer(%a, %b) : (!mo.tensor<[3, 40], ui8>, !mo.tensor<[40, 70], si8>)"
      " -> !mo.tensor<[3, 70], si32>\n"
      "  mo.output %y : !mo.tensor<[3, 70], si32>\n}\n";
  for (int cap = JIT_MMI_GENERIC; cap <= JIT_MMI_AVX512VNNI; cap++) {
    const char *name = jit_mmi_isa_name((jit_mmi_isa)cap);
    setenv("KILN_INT8_GEMM", name, 1);
    kiln_status *st = kiln_status_new();
    kiln_context *ctx = kiln_context_new(st);
    unsetenv("KILN_INT8_GEMM");
    cr_assert_not_null(ctx, "%s", kiln_status_message(st));
    jit_mmi_isa host = jit_mmi_isa_for(jit_engine_features(ctx->jit), 0);
    jit_mmi_isa want = (jit_mmi_isa)cap < host ? (jit_mmi_isa)cap : host;
    cr_expect_eq(jit_engine_int8_gemm(ctx->jit), want, "cap %s: kernel %s, not %s", name,
                 jit_mmi_isa_name(jit_engine_int8_gemm(ctx->jit)), jit_mmi_isa_name(want));
    char word[48];
    snprintf(word, sizeof word, "int8-gemm=%s", name);
    cr_expect(strstr(jit_engine_options(ctx->jit), word) != NULL, "options: %s",
              jit_engine_options(ctx->jit));
    kiln_graph *kg = kiln_graph_parse(text, strlen(text), "w", st);
    cr_assert_not_null(kg, "%s", kiln_status_message(st));
    kiln_model *m = kiln_model_compile(ctx, kg, st);
    cr_assert_not_null(m, "%s", kiln_status_message(st));
    cr_expect_eq(rt_model_prepack_sources(m), want > JIT_MMI_GENERIC ? 1 : 0, "cap %s", name);
    kiln_model_free(m);
    kiln_graph_free(kg);
    kiln_context_free(ctx);
    kiln_status_free(st);
  }
}

Test(matmul_integer, unknown_kernel_name_is_refused_at_context_creation) {
  setenv("KILN_INT8_GEMM", "avx9", 1);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  unsetenv("KILN_INT8_GEMM");
  cr_assert_null(ctx);
  const char *msg = kiln_status_message(st);
  cr_expect(strstr(msg, "KILN_INT8_GEMM=avx9") && strstr(msg, "avxvnni"), "message: %s", msg);
  kiln_status_free(st);
}

/* ONNX's test_matmulinteger: A ui8 [4, 3], a_zero_point 12, B ui8 [3, 2],
 * b_zero_point 0; row 0, column 0: (11-12)*1 + (7-12)*2 + (3-12)*3 = -38 */
Test(known_matmul_integer, onnx_node_test_values) {
  oracle_expect_known(
      "matmul.integer ONNX example",
      "mo.graph @k() -> (!mo.tensor<[4, 2], si32>) {\n" ORACLE_CONST(
          "a", "ui8", "4, 3", "4x3x", "11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0")
          ORACLE_CONST("b", "ui8", "3, 2", "3x2x", "1, 4, 2, 5, 3, 6")
              ORACLE_CONST("za", "ui8", "", "", "12")
                  ORACLE_CONST("zb", "ui8", "", "", "0") "  %y = mo.matmul.integer(%a, %b, %za, "
                                                         "%zb) : (!mo.tensor<[4, 3], ui8>, "
                                                         "!mo.tensor<[3, 2], ui8>, "
                                                         "!mo.tensor<[], ui8>, !mo.tensor<[], "
                                                         "ui8>) -> !mo.tensor<[4, 2], si32>\n"
                                                         "  mo.output %y : !mo.tensor<[4, 2], "
                                                         "si32>\n}\n",
      (oracle_expect){KILN_INT32, 2, {4, 2},
                      ((const int32_t[]){-38, -83, -44, -98, -50, -113, -56, -128})});
}

/* 70000 terms of 255 * -128 = -2284800000, past INT32_MIN: wrapped to
 * -2284800000 + 2^32 = 2010167296, as ONNX's int32 accumulation does */
Test(known_matmul_integer, sums_wrap_to_32_bits) {
  oracle_expect_known(
      "matmul.integer wraps",
      "mo.graph @k() -> (!mo.tensor<[1, 1], si32>) {\n" ORACLE_CONST(
          "a", "ui8", "1, 70000", "1x", "255") ORACLE_CONST("b", "si8", "70000, 1",
                                                                  "1x", "-128")
          "  %y = mo.matmul.integer(%a, %b) : (!mo.tensor<[1, 70000], ui8>, "
          "!mo.tensor<[70000, 1], si8>) -> !mo.tensor<[1, 1], si32>\n"
          "  mo.output %y : !mo.tensor<[1, 1], si32>\n}\n",
      (oracle_expect){KILN_INT32, 2, {1, 1}, ((const int32_t[]){2010167296})});
}

/* one node over a [2, 3] x [3, 4]; the rest of the line is its operands */
static void reject(const char *ops_and_types, const char *what) {
  char text[1024];
  snprintf(text, sizeof text,
           "mo.graph @r(%%a: !mo.tensor<[2, 3], ui8>, %%b: !mo.tensor<[3, 4], si8>, "
           "%%i: !mo.tensor<[2, 3], si32>, %%z: !mo.tensor<[], si8>, "
           "%%v: !mo.tensor<[5], ui8>, %%w: !mo.tensor<[2, 2], ui8>) "
           "-> (!mo.tensor<[2, 4], si32>) {\n"
           "  %%y = mo.matmul.integer%s -> !mo.tensor<[2, 4], si32>\n"
           "  mo.output %%y : !mo.tensor<[2, 4], si32>\n}\n",
           ops_and_types);
  EXPECT_REJECTED(text, what);
}

Test(matmul_integer, wrong_dtypes_and_shapes_are_refused_at_verify) {
  reject("(%i, %b) : (!mo.tensor<[2, 3], si32>, !mo.tensor<[3, 4], si8>)",
         "operand 0 must be ui8 or si8, not si32");
  reject("(%a, %b, %z) : (!mo.tensor<[2, 3], ui8>, !mo.tensor<[3, 4], si8>, "
         "!mo.tensor<[], si8>)",
         "operand 2 (a's zero point) must be ui8 like operand 0, not si8");
  reject("(%a, %b, %v) : (!mo.tensor<[2, 3], ui8>, !mo.tensor<[3, 4], si8>, "
         "!mo.tensor<[5], ui8>)",
         "has 5 entries, not 1 or one per row (2)");
  reject("(%a, %b, %w) : (!mo.tensor<[2, 3], ui8>, !mo.tensor<[3, 4], si8>, "
         "!mo.tensor<[2, 2], ui8>)",
         "must be a scalar or one per row (rank 0 or 1), not rank 2");
  reject("(%a, %a) : (!mo.tensor<[2, 3], ui8>, !mo.tensor<[2, 3], ui8>)",
         "operand 0 has K = 3 but operand 1 has K = 2");
}

/* the message is located at the node's line:col */
Test(matmul_integer, verify_error_names_line_and_column) {
  char msg[1024];
  const char *text =
      "mo.graph @r(%a: !mo.tensor<[2, 3], f32>, %b: !mo.tensor<[3, 4], si8>) "
      "-> (!mo.tensor<[2, 4], si32>) {\n"
      "  %y = mo.matmul.integer(%a, %b) : (!mo.tensor<[2, 3], f32>, "
      "!mo.tensor<[3, 4], si8>) -> !mo.tensor<[2, 4], si32>\n"
      "  mo.output %y : !mo.tensor<[2, 4], si32>\n}\n";
  cr_assert_neq(oracle_ir_parse_only(text, msg, sizeof msg), 0);
  cr_expect(strstr(msg, "2:") != NULL && strstr(msg, "must be ui8 or si8, not f32") != NULL,
            "%s", msg);
}

/* kiln.packed_b is the runtime's (src/prepack.c): graph text that sets it
 * is refused at parse, so no kernel reads a plain b as panels */
Test(matmul_integer, user_packed_b_attribute_is_refused) {
  const char *text =
      "mo.graph @u(%a: !mo.tensor<[4, 8], ui8>, %b: !mo.tensor<[8, 8], si8>) -> "
      "(!mo.tensor<[4, 8], si32>) {\n"
      "  %0 = mo.matmul.integer(%a, %b) {kiln.packed_b = 64} : (!mo.tensor<[4, 8], ui8>, "
      "!mo.tensor<[8, 8], si8>) -> !mo.tensor<[4, 8], si32>\n"
      "  mo.output %0 : !mo.tensor<[4, 8], si32>\n}\n";
  kiln_code code;
  char msg[512];
  cr_assert_eq(oracle_compile_only(text, &code, msg, sizeof msg), -1);
  cr_assert_eq(code, KILN_ERR_PARSE);
  cr_expect(strstr(msg, ":2:") != NULL &&
                strstr(msg, "attribute 'kiln.packed_b' is set by the runtime") != NULL,
            "%s", msg);
}
