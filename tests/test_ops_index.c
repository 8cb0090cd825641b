/* test_ops_index.c - the indexing ops (mo.gather_nd, mo.gather_elements,
 * mo.scatter*, mo.scatter_nd*, mo.tile, mo.range) and the edges of matmul
 * and mean (1-D and integer operands, one-element constants): the JIT
 * against the reference interpreter over dtypes, size-0 and size-1 dims,
 * symbolic dims and negative indices; out-of-range indices and bad range
 * lengths as errors from both, naming the op; hand-worked answers (ONNX's
 * examples, seed 002's gather_nd type example); bad attributes and shapes
 * refused at line:col. Index inputs are drawn in [-d, d) for the axis they
 * index (both signs), so repeated indices occur: scatter applies them in
 * order on both sides, and results agree bit for bit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

static const char *const NUMERIC[] = {"f32", "f64", "si32", "si64"};

static void run_case(gt *t, const char *label, const char *bindings) {
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 53,
                   .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
}

/* Indices valid for an axis of size d (d >= 1): [-d, d). */
static oracle_gen idx_gen(int d) { return gen_integers(-d, d - 1); }

/* ---- gather_elements / gather_nd ---- */

typedef struct gcase {
  const char *x, *idx, *attrs, *out;
  int d; /* the smallest indexed dim */
} gcase;

static void check_gather(const char *op, const char *dt, const char *it, const gcase *cs, int n,
                         const char *bindings) {
  gt *t = gt_new("gather", bindings ? "n, m" : NULL);
  for (int i = 0; i < n; i++) {
    int x = gt_in(t, dt, cs[i].x), k = gt_in_gen(t, it, cs[i].idx, idx_gen(cs[i].d));
    gt_out(t, gt_op2(t, op, cs[i].attrs, x, k, dt, cs[i].out));
  }
  char label[128];
  snprintf(label, sizeof label, "%s %s indices %s", op, dt, it);
  run_case(t, label, bindings);
  gt_free(t);
}

static const gcase GE[] = {
    {"3, 4", "2, 4", "{axis = 0}", "2, 4", 3}, {"3, 4", "3, 2", "{axis = 1}", "3, 2", 4},
    {"3, 4", "1, 3", NULL, "1, 3", 4},          {"2, 3, 5", "2, 3, 7", "{axis = -1}", "2, 3, 7", 5},
    {"1", "1", "{axis = 0}", "1", 1},           {"3, 0", "2, 0", "{axis = 0}", "2, 0", 3},
    {"3, 4", "0, 4", "{axis = 0}", "0, 4", 3},
};
static const gcase GE_SYM[] = {{"n, 5", "n, 3", "{axis = 1}", "n, 3", 5},
                               {"4, m", "2, m", "{axis = 0}", "2, m", 4}};

Test(gather_elements, dtypes_shapes_negative_indices) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool"};
  for (int d = 0; d < 5; d++) check_gather("mo.gather_elements", dts[d], "si64", GE, 7, NULL);
  check_gather("mo.gather_elements", "f32", "si32", GE, 7, NULL);
  check_gather("mo.gather_elements", "f32", "si64", GE_SYM, 2, "n=1,m=1;n=4,m=3;n=0,m=0");
}

static const gcase GND[] = {
    {"4, 5, 6", "3, 2", NULL, "3, 6", 4},
    {"4, 5, 6", "3, 3", "{batch_dims = 0}", "3", 4},
    {"2, 3, 4", "2, 5, 1", "{batch_dims = 1}", "2, 5, 4", 3},
    {"2, 3, 4", "2, 1", "{batch_dims = 1}", "2, 4", 3},
    {"3, 4", "2", NULL, "", 3},
    {"1, 1", "1, 1", NULL, "1, 1", 1},
    {"3, 4", "0, 1", NULL, "0, 4", 3},
    {"3, 0", "2, 1", NULL, "2, 0", 3},
};
static const gcase GND_SYM[] = {{"n, 4", "m, 1", NULL, "m, 4", 1},
                                {"n, 3, 4", "n, m, 1", "{batch_dims = 1}", "n, m, 4", 3}};

Test(gather_nd, dtypes_shapes_batch_dims_negative_indices) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool"};
  for (int d = 0; d < 5; d++) check_gather("mo.gather_nd", dts[d], "si64", GND, 8, NULL);
  check_gather("mo.gather_nd", "si32", "si32", GND, 8, NULL);
  check_gather("mo.gather_nd", "bf16", "si64", GND, 8, NULL);
  check_gather("mo.gather_nd", "f32", "si64", GND_SYM, 2, "n=1,m=1;n=3,m=4;n=2,m=0");
}

/* Slices of whole 64-byte lines (index.c's row copy with a prefetch): one
 * and two lines, index tuples of two, batch dims, a symbolic count of
 * rows, and a result of 8 MiB (f32) and 16 MiB (f64): non-temporal stores */
static const gcase GND_LINES[] = {
    {"9, 16", "7, 1", NULL, "7, 16", 9},
    {"5, 3, 32", "6, 2", NULL, "6, 32", 3},
    {"2, 5, 16", "2, 3, 1", "{batch_dims = 1}", "2, 3, 16", 5},
    {"3, 16", "m, 1", NULL, "m, 16", 3},
    {"2048, 1024", "2048, 1", NULL, "2048, 1024", 2048},
};

Test(gather_nd, rows_of_whole_cache_lines) {
  for (int d = 0; d < 4; d++)
    check_gather("mo.gather_nd", NUMERIC[d], "si64", GND_LINES, d < 2 ? 5 : 4,
                  "n=1,m=1;n=1,m=9;n=1,m=0");
}

/* ---- scatter / scatter_nd and their combinations ---- */

typedef struct scase {
  const char *x, *u, *idx, *attrs;
  int d;
} scase;

static void check_scatter(const char *op, const char *dt, const scase *cs, int n,
                          const char *bindings) {
  gt *t = gt_new("scatter", bindings ? "n, m" : NULL);
  for (int i = 0; i < n; i++) {
    int x = gt_in(t, dt, cs[i].x), u = gt_in(t, dt, cs[i].u);
    int k = gt_in_gen(t, "si64", cs[i].idx, idx_gen(cs[i].d));
    gt_out(t, gt_op(t, op, cs[i].attrs, (int[]){x, u, k}, 3, dt, cs[i].x));
  }
  char label[128];
  snprintf(label, sizeof label, "%s %s", op, dt);
  run_case(t, label, bindings);
  gt_free(t);
}

static const scase SC[] = {
    {"4, 5", "3, 5", "3, 5", "{axis = 0}", 4}, {"4, 5", "4, 2", "4, 2", "{axis = 1}", 5},
    {"4, 5", "2, 3", "2, 3", NULL, 5},          {"3, 4, 5", "3, 6, 5", "3, 6, 5", "{axis = -2}", 4},
    {"1", "1", "1", "{axis = 0}", 1},           {"4, 5", "0, 5", "0, 5", "{axis = 0}", 4},
    {"0, 5", "0, 2", "0, 2", "{axis = 1}", 5},
};
static const scase SC_SYM[] = {{"n, 5", "n, 3", "n, 3", "{axis = 1}", 5},
                               {"4, m", "2, m", "2, m", "{axis = 0}", 4}};
static const scase SND[] = {
    {"4, 5", "3, 5", "3, 1", NULL, 4},       {"4, 5", "3", "3, 2", NULL, 4},
    {"2, 3, 4", "2, 4", "2, 2", NULL, 2},    {"2, 3, 4", "5, 2, 3, 4", "5, 2, 1", NULL, 2},
    {"4, 5", "0, 5", "0, 1", NULL, 4},       {"1", "1", "1, 1", NULL, 1},
};
static const scase SND_SYM[] = {{"n, 3", "m, 3", "m, 1", NULL, 1}};

Test(scatter, every_combination_and_dtype) {
  static const char *const ops[] = {"mo.scatter", "mo.scatter_add", "mo.scatter_mul",
                                    "mo.scatter_max", "mo.scatter_min"};
  /* the write on every dtype; each combination on two (every dtype is
   * combined by two of them), which keeps the file fast under ASan */
  for (int d = 0; d < 4; d++) check_scatter(ops[0], NUMERIC[d], SC, 7, NULL);
  for (int o = 1; o < 5; o++)
    for (int d = 0; d < 2; d++) check_scatter(ops[o], NUMERIC[(o + 2 * d) % 4], SC, 7, NULL);
  check_scatter("mo.scatter", "bool", SC, 7, NULL);
  check_scatter("mo.scatter", "f16", SC, 7, NULL); /* storage dtypes move as bytes */
  check_scatter("mo.scatter_add", "f32", SC_SYM, 2, "n=1,m=1;n=4,m=6;n=0,m=0");
}

/* Results of 8 MiB and more (index.c's scatter_copy: non-temporal lines,
 * then the bytes past the last whole line), with updates in the last line */
Test(scatter, results_of_eight_mib_and_more) {
  static const scase big[] = {{"2097155", "9", "9", "{axis = 0}", 2097155},
                              {"1048577, 2", "5, 2", "5, 2", "{axis = 0}", 3}};
  check_scatter("mo.scatter", "f32", big, 2, NULL);
  check_scatter("mo.scatter_nd_add", "si64", (const scase[]){{"1048577, 3", "4, 3", "4, 1", NULL,
                                                              1048577}}, 1, NULL);
}

Test(scatter_nd, every_combination_and_dtype) {
  static const char *const ops[] = {"mo.scatter_nd", "mo.scatter_nd_add", "mo.scatter_nd_mul",
                                    "mo.scatter_nd_max", "mo.scatter_nd_min"};
  for (int d = 0; d < 4; d++) check_scatter(ops[0], NUMERIC[d], SND, 6, NULL);
  for (int o = 1; o < 5; o++)
    for (int d = 0; d < 2; d++) check_scatter(ops[o], NUMERIC[(o + 2 * d + 1) % 4], SND, 6, NULL);
  check_scatter("mo.scatter_nd", "bool", SND, 6, NULL);
  check_scatter("mo.scatter_nd_add", "si64", SND_SYM, 1, "n=1,m=1;n=3,m=7;n=2,m=0");
}

/* ---- tile ---- */

/* tile moves elements as bytes: one dtype per element size */
Test(tile, dtypes_shapes_and_symbolic_dims) {
  static const char *const dts[] = {"f32", "si64", "bool"};
  for (int d = 0; d < 3; d++) {
    gt *t = gt_new("tile", "n");
    const char *dt = dts[d];
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [2, 3]}", gt_in(t, dt, "2, 3"), dt, "4, 9"));
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [1, 1]}", gt_in(t, dt, "2, 3"), dt, "2, 3"));
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [0, 2]}", gt_in(t, dt, "2, 3"), dt, "0, 6"));
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [3]}", gt_in(t, dt, "0"), dt, "0"));
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [5]}", gt_in(t, dt, "1"), dt, "5"));
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [1, 2, 1]}", gt_in(t, dt, "2, 3, 4"), dt, "2, 6, 4"));
    gt_out(t, gt_op1(t, "mo.tile", "{repeats = [3, 1]}", gt_in(t, dt, "n, 2"), dt, "3 * n, 2"));
    char label[64];
    snprintf(label, sizeof label, "mo.tile %s", dt);
    run_case(t, label, "n=0;n=1;n=5");
    gt_free(t);
  }
}

/* ---- range ---- */

static const char *range_graph(char *buf, size_t cap, const char *dt, const char *a,
                               const char *b, const char *s, const char *len) {
  snprintf(buf, cap,
           "mo.graph @r() -> (!mo.tensor<[%s], %s>) {\n"
           "  %%a = mo.constant {value = #M.dense_array<%s> : tensor<%s>} : !mo.tensor<[], %s>\n"
           "  %%b = mo.constant {value = #M.dense_array<%s> : tensor<%s>} : !mo.tensor<[], %s>\n"
           "  %%s = mo.constant {value = #M.dense_array<%s> : tensor<%s>} : !mo.tensor<[], %s>\n"
           "  %%y = mo.range(%%a, %%b, %%s) : (!mo.tensor<[], %s>, !mo.tensor<[], %s>, "
           "!mo.tensor<[], %s>) -> !mo.tensor<[%s], %s>\n"
           "  mo.output %%y : !mo.tensor<[%s], %s>\n}\n",
           len, dt, a, dt, dt, b, dt, dt, s, dt, dt, dt, dt, dt, len, dt, len, dt);
  return buf;
}

Test(range, lengths_and_dtypes_agree_with_the_oracle) {
  static const char *const c[][4] = {{"0", "10", "3", "4"},  {"10", "0", "-3", "4"},
                                     {"5", "5", "1", "0"},   {"5", "0", "1", "0"},
                                     {"-7", "8", "2", "8"},  {"0", "1", "5", "1"}};
  char buf[2048];
  for (int d = 0; d < 4; d++)
    for (int i = 0; i < 6; i++) {
      oracle_case oc = {.label = "mo.range", .mlir = range_graph(buf, sizeof buf, NUMERIC[d],
                                                                  c[i][0], c[i][1], c[i][2], c[i][3])};
      ORACLE_ASSERT(&oc);
    }
  oracle_case fc = {.label = "mo.range f32 fractional",
                    .mlir = range_graph(buf, sizeof buf, "f32", "0.5", "2.0", "0.25", "6")};
  ORACLE_ASSERT(&fc);
}

Test(range, wrong_length_or_zero_step_is_an_error) {
  char buf[2048];
  oracle_case a = {.label = "range long", .mlir = range_graph(buf, sizeof buf, "si64", "0", "10", "3", "5")};
  oracle_expect_both_fail(&a, "mo.range");
  oracle_case b = {.label = "range step 0", .mlir = range_graph(buf, sizeof buf, "f32", "0.0", "1.0", "0.0", "2")};
  oracle_expect_both_fail(&b, "mo.range");
  oracle_case c = {.label = "range si32 step 0", .mlir = range_graph(buf, sizeof buf, "si32", "0", "1", "0", "0")};
  oracle_expect_both_fail(&c, "mo.range");
}

/* ---- out-of-range indices: an error naming the op, from both sides ---- */

Test(index_errors, out_of_range_indices_name_the_op) {
  static const struct {
    const char *op, *attrs, *x, *idx, *out;
    bool scatter;
    double bad;
  } c[] = {
      {"mo.gather_elements", "{axis = 0}", "3, 4", "2, 4", "2, 4", false, 3},
      {"mo.gather_elements", "{axis = 1}", "3, 4", "3, 2", "3, 2", false, -5},
      {"mo.gather_nd", NULL, "3, 4", "2, 2", "2", false, 4},
      {"mo.gather_nd", NULL, "3, 4", "2, 1", "2, 4", false, -4},
      {"mo.gather_nd", NULL, "3, 16", "2, 1", "2, 16", false, 3},
      {"mo.scatter", "{axis = 0}", "3, 4", "2, 4", "3, 4", true, 3},
      {"mo.scatter_add", "{axis = 1}", "3, 4", "3, 2", "3, 4", true, -5},
      {"mo.scatter_nd", NULL, "3, 4", "2, 1", "3, 4", true, 3},
      {"mo.scatter_nd_max", NULL, "3, 4", "2, 2", "3, 4", true, 9.0e18},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    gt *t = gt_new("oob", NULL);
    int x = gt_in(t, "f32", c[i].x), k, y;
    if (c[i].scatter) {
      char us[32];
      snprintf(us, sizeof us, "%s", c[i].idx);
      if (strstr(c[i].op, "_nd")) snprintf(us, sizeof us, "%s", strcmp(c[i].idx, "2, 1") ? "2" : "2, 4");
      int u = gt_in(t, "f32", us);
      k = gt_in_gen(t, "si64", c[i].idx, gen_const(c[i].bad));
      y = gt_op(t, c[i].op, c[i].attrs, (int[]){x, u, k}, 3, "f32", c[i].out);
    } else {
      k = gt_in_gen(t, "si64", c[i].idx, gen_const(c[i].bad));
      y = gt_op2(t, c[i].op, c[i].attrs, x, k, "f32", c[i].out);
    }
    gt_out(t, y);
    int ng;
    const oracle_gen *gens = gt_gens(t, &ng);
    oracle_case oc = {.label = c[i].op, .mlir = gt_finish(t), .seed = 7, .gens = gens, .ngens = ng};
    oracle_expect_both_fail(&oc, c[i].op);
    oracle_case oc2 = oc;
    oracle_expect_both_fail(&oc2, "out of range");
    gt_free(t);
  }
}

/* ---- hand-worked answers ---- */

/* ONNX ScatterElements' example (axis 0) */
Test(known_index, scatter_elements_example) {
  oracle_expect_known("scatter example",
        "mo.graph @k() -> (!mo.tensor<[3, 3], f32>) {\n" ORACLE_CONST("x", "f32", "3, 3", "3x3x", "0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0")
        ORACLE_CONST("u", "f32", "2, 3", "2x3x", "1.0, 1.1, 1.2, 2.0, 2.1, 2.2") ORACLE_CONST("i", "si64", "2, 3", "2x3x", "1, 0, 2, 0, 2, 1")
        "  %y = mo.scatter(%x, %u, %i) {axis = 0} : (!mo.tensor<[3, 3], f32>, !mo.tensor<[2, 3], f32>, "
        "!mo.tensor<[2, 3], si64>) -> !mo.tensor<[3, 3], f32>\n  mo.output %y : !mo.tensor<[3, 3], f32>\n}\n",
        (oracle_expect){KILN_FLOAT32, 2, {3, 3}, ORACLE_F32(2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f)});
}

/* ONNX ScatterND's add example, reduced: repeated rows add up */
Test(known_index, scatter_nd_add_repeats) {
  oracle_expect_known("scatter_nd_add",
        "mo.graph @k() -> (!mo.tensor<[4], si64>) {\n" ORACLE_CONST("x", "si64", "4", "4x", "1, 2, 3, 4")
        ORACLE_CONST("u", "si64", "3", "3x", "10, 20, 30") ORACLE_CONST("i", "si64", "3, 1", "3x1x", "1, -3, 3")
        "  %y = mo.scatter_nd_add(%x, %u, %i) : (!mo.tensor<[4], si64>, !mo.tensor<[3], si64>, "
        "!mo.tensor<[3, 1], si64>) -> !mo.tensor<[4], si64>\n  mo.output %y : !mo.tensor<[4], si64>\n}\n",
        (oracle_expect){KILN_INT64, 1, {4}, ORACLE_I64(1, 32, 3, 34)});
}

/* ONNX GatherND's examples 1 and 5 (batch_dims = 1) */
Test(known_index, gather_nd_examples) {
  oracle_expect_known("gather_nd", "mo.graph @k() -> (!mo.tensor<[2], si64>) {\n" ORACLE_CONST("x", "si64", "2, 2", "2x2x", "0, 1, 2, 3")
        ORACLE_CONST("i", "si64", "2, 2", "2x2x", "0, 0, 1, 1")
        "  %y = mo.gather_nd(%x, %i) : (!mo.tensor<[2, 2], si64>, !mo.tensor<[2, 2], si64>) -> "
        "!mo.tensor<[2], si64>\n  mo.output %y : !mo.tensor<[2], si64>\n}\n",
        (oracle_expect){KILN_INT64, 1, {2}, ORACLE_I64(0, 3)});
  oracle_expect_known("gather_nd batch", "mo.graph @k() -> (!mo.tensor<[2, 2], si64>) {\n"
        ORACLE_CONST("x", "si64", "2, 2, 2", "2x2x2x", "0, 1, 2, 3, 4, 5, 6, 7") ORACLE_CONST("i", "si64", "2, 1", "2x1x", "1, 0")
        "  %y = mo.gather_nd(%x, %i) {batch_dims = 1} : (!mo.tensor<[2, 2, 2], si64>, "
        "!mo.tensor<[2, 1], si64>) -> !mo.tensor<[2, 2], si64>\n  mo.output %y : !mo.tensor<[2, 2], si64>\n}\n",
        (oracle_expect){KILN_INT64, 2, {2, 2}, ORACLE_I64(2, 3, 4, 5)});
}

Test(known_index, gather_elements_tile_range_matmul_1d) {
  oracle_expect_known("gather_elements", "mo.graph @k() -> (!mo.tensor<[2, 2], si64>) {\n" ORACLE_CONST("x", "si64", "2, 2", "2x2x", "1, 2, 3, 4")
        ORACLE_CONST("i", "si64", "2, 2", "2x2x", "0, 0, 1, -2")
        "  %y = mo.gather_elements(%x, %i) {axis = 1} : (!mo.tensor<[2, 2], si64>, !mo.tensor<[2, 2], si64>) -> "
        "!mo.tensor<[2, 2], si64>\n  mo.output %y : !mo.tensor<[2, 2], si64>\n}\n",
        (oracle_expect){KILN_INT64, 2, {2, 2}, ORACLE_I64(1, 1, 4, 3)});
  oracle_expect_known("tile", "mo.graph @k() -> (!mo.tensor<[2, 4], si64>) {\n" ORACLE_CONST("x", "si64", "1, 2", "1x2x", "1, 2")
        "  %y = mo.tile(%x) {repeats = [2, 2]} : (!mo.tensor<[1, 2], si64>) -> !mo.tensor<[2, 4], si64>\n"
        "  mo.output %y : !mo.tensor<[2, 4], si64>\n}\n",
        (oracle_expect){KILN_INT64, 2, {2, 4}, ORACLE_I64(1, 2, 1, 2, 1, 2, 1, 2)});
  char buf[2048];
  oracle_expect_known("range", range_graph(buf, sizeof buf, "si64", "10", "-1", "-4", "3"),
        (oracle_expect){KILN_INT64, 1, {3}, ORACLE_I64(10, 6, 2)});
  oracle_expect_known("matmul 1-D x 2-D", "mo.graph @k() -> (!mo.tensor<[2], f32>) {\n" ORACLE_CONST("a", "f32", "3", "3x", "1.0, 2.0, 3.0")
        ORACLE_CONST("b", "f32", "3, 2", "3x2x", "1.0, 0.0, 0.0, 1.0, 1.0, 1.0")
        "  %y = mo.matmul(%a, %b) : (!mo.tensor<[3], f32>, !mo.tensor<[3, 2], f32>) -> !mo.tensor<[2], f32>\n"
        "  mo.output %y : !mo.tensor<[2], f32>\n}\n",
        (oracle_expect){KILN_FLOAT32, 1, {2}, ORACLE_F32(4, 5)});
  oracle_expect_known("matmul 1-D x 1-D", "mo.graph @k() -> (!mo.tensor<[], si64>) {\n" ORACLE_CONST("a", "si64", "3", "3x", "1, 2, 3")
        ORACLE_CONST("b", "si64", "3", "3x", "4, 5, 6")
        "  %y = mo.matmul(%a, %b) : (!mo.tensor<[3], si64>, !mo.tensor<[3], si64>) -> !mo.tensor<[], si64>\n"
        "  mo.output %y : !mo.tensor<[], si64>\n}\n",
        (oracle_expect){KILN_INT64, 0, {0}, ORACLE_I64(32)});
  oracle_expect_known("constant splat", "mo.graph @k() -> (!mo.tensor<[2, 3], si64>) {\n"
        "  %c = mo.constant {value = #M.dense_array<7> : tensor<si64>} : !mo.tensor<[2, 3], si64>\n"
        "  mo.output %c : !mo.tensor<[2, 3], si64>\n}\n",
        (oracle_expect){KILN_INT64, 2, {2, 3}, ORACLE_I64(7, 7, 7, 7, 7, 7)});
  oracle_expect_known("integer mean", "mo.graph @k() -> (!mo.tensor<[2, 1], si64>) {\n" ORACLE_CONST("x", "si64", "2, 3", "2x3x", "1, 2, 4, -1, -2, -4")
        "  %y = mo.mean(%x) {axis = 1} : (!mo.tensor<[2, 3], si64>) -> !mo.tensor<[2, 1], si64>\n"
        "  mo.output %y : !mo.tensor<[2, 1], si64>\n}\n",
        (oracle_expect){KILN_INT64, 2, {2, 1}, ORACLE_I64(2, -2)});
}

/* seed 002's gather_nd example: [a, b, c, d, e] by [a, f, 3], batch_dims 1 -> [a, f, e] */
Test(known_index, gather_nd_type_of_seed_example) {
  const char *ok = "mo.graph @g<a, b, c, d, e, f>(%x: !mo.tensor<[a, b, c, d, e], f32>, %i: "
                   "!mo.tensor<[a, f, 3], si32>) -> (!mo.tensor<[a, f, e], f32>) {\n"
                   "  %y = mo.gather_nd(%x, %i) {batch_dims = 1} : (!mo.tensor<[a, b, c, d, e], f32>, "
                   "!mo.tensor<[a, f, 3], si32>) -> !mo.tensor<[a, f, e], f32>\n"
                   "  mo.output %y : !mo.tensor<[a, f, e], f32>\n}\n";
  char msg[512];
  cr_expect_eq(oracle_ir_parse_only(ok, msg, sizeof msg), 0, "%s", msg);
}

/* ---- edges of matmul and mean: 1-D and integer operands ---- */

Test(matmul_edges, one_d_and_integer_operands) {
  for (int d = 0; d < 4; d++) {
    const char *dt = NUMERIC[d];
    gt *t = gt_new("mm", "n");
    oracle_gen small = d >= 2 ? gen_integers(-4, 4) : gen_uniform(-1, 1);
    int a1 = gt_in_gen(t, dt, "n", small), b2 = gt_in_gen(t, dt, "n, 5", small);
    int a2 = gt_in_gen(t, dt, "3, n", small), b1 = gt_in_gen(t, dt, "n", small);
    int b3 = gt_in_gen(t, dt, "2, n, 4", small), a3 = gt_in_gen(t, dt, "2, 3, n", small);
    int m = gt_in_gen(t, dt, "3, n", small), m2 = gt_in_gen(t, dt, "n, 4", small);
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a1, b2, dt, "5"));
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a2, b1, dt, "3"));
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a1, b1, dt, ""));
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a1, b3, dt, "2, 4"));
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a3, b1, dt, "2, 3"));
    gt_out(t, gt_op2(t, "mo.matmul", NULL, m, m2, dt, "3, 4"));
    gt_out(t, gt_op1(t, "mo.mean", "{axis = 1}", m, dt, "3, 1"));
    char label[64];
    snprintf(label, sizeof label, "matmul / mean edges %s", dt);
    int ng;
    const oracle_gen *gens = gt_gens(t, &ng);
    oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=0;n=1;n=7", .seed = 5,
                     .gens = gens, .ngens = ng, .rtol = d ? TOL_F64_ARITH : 1e-5};
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

/* ---- bad attributes and shapes: refused where they are written ---- */

#define G2(op, attrs, tx, ti, ty)                                                           \
  "mo.graph @g(%x: !mo.tensor<[" tx "], f32>, %i: !mo.tensor<[" ti "], si64>) -> "          \
  "(!mo.tensor<[" ty "], f32>) {\n  %y = mo." op "(%x, %i) " attrs " : (!mo.tensor<[" tx    \
  "], f32>, !mo.tensor<[" ti "], si64>) -> !mo.tensor<[" ty "], f32>\n  mo.output %y : "    \
  "!mo.tensor<[" ty "], f32>\n}\n"
#define G3(op, attrs, tx, tu, ti, iddt)                                                     \
  "mo.graph @g(%x: !mo.tensor<[" tx "], f32>, %u: !mo.tensor<[" tu "], f32>, %i: "          \
  "!mo.tensor<[" ti "], " iddt ">) -> (!mo.tensor<[" tx "], f32>) {\n  %y = mo." op          \
  "(%x, %u, %i) " attrs " : (!mo.tensor<[" tx "], f32>, !mo.tensor<[" tu "], f32>, "         \
  "!mo.tensor<[" ti "], " iddt ">) -> !mo.tensor<[" tx "], f32>\n  mo.output %y : "          \
  "!mo.tensor<[" tx "], f32>\n}\n"
#define G1(op, attrs, tx, ty)                                                               \
  "mo.graph @g(%x: !mo.tensor<[" tx "], f32>) -> (!mo.tensor<[" ty "], f32>) {\n  %y = mo." \
  op "(%x) " attrs " : (!mo.tensor<[" tx "], f32>) -> !mo.tensor<[" ty "], f32>\n"           \
  "  mo.output %y : !mo.tensor<[" ty "], f32>\n}\n"

Test(index_verify, bad_attributes_and_shapes_are_refused) {
  EXPECT_REJECTED(G2("gather_nd", "{batch_dims = 2}", "3, 4", "3, 1", "3"),
                  "2:3: mo.gather_nd: batch_dims 2 must be in [0, 2)");
  EXPECT_REJECTED(G2("gather_nd", "", "3, 4", "2, 3", "2"), "index vectors of length 3 do not fit");
  EXPECT_REJECTED("mo.graph @g<k>(%x: !mo.tensor<[3, 4], f32>, %i: !mo.tensor<[2, k], si64>) -> "
                  "(!mo.tensor<[2], f32>) {\n  %y = mo.gather_nd(%x, %i) : (!mo.tensor<[3, 4], f32>, "
                  "!mo.tensor<[2, k], si64>) -> !mo.tensor<[2], f32>\n  mo.output %y : "
                  "!mo.tensor<[2], f32>\n}\n",
                  "the last dim of the indices must be static");
  EXPECT_REJECTED(G2("gather_elements", "{axis = 2}", "3, 4", "3, 4", "3, 4"),
                  "2:3: mo.gather_elements: axis 2 is out of range for rank 2");
  EXPECT_REJECTED(G2("gather_elements", "{axis = 0}", "3, 4", "3, 5", "3, 5"),
                  "dim 1 of the input (4) must be at least dim 1 of the indices (5)");
  EXPECT_REJECTED(G2("gather_elements", "{axis = 0}", "3, 4", "3", "3"), "indices have rank 1");
  EXPECT_REJECTED(G3("scatter", "{axis = 0}", "3, 4", "2, 4", "2, 3", "si64"),
                  "dim 1 of the updates (4) must equal dim 1 of the indices (3)");
  EXPECT_REJECTED(G3("scatter", "{axis = 0}", "3, 4", "2, 4", "2, 4", "f32"),
                  "operand 2 of mo.scatter has dtype f32 but indices must be si32 or si64");
  EXPECT_REJECTED(G3("scatter_nd", "", "3, 4", "2", "2, 1", "si64"),
                  "updates have rank 1 but need rank 2");
  EXPECT_REJECTED(G3("scatter_nd_add", "", "3, 4", "2, 5", "2, 1", "si64"),
                  "dim 1 of the updates (5) must equal dim 1 of the input (4)");
  EXPECT_REJECTED(G3("scatter", "{mode = 1}", "3, 4", "2, 4", "2, 4", "si64"),
                  "no attribute 'mode'");
  EXPECT_REJECTED(G1("tile", "{repeats = [2]}", "3, 4", "6, 4"), "repeats has 1 entries but the input has rank 2");
  EXPECT_REJECTED(G1("tile", "{repeats = [-1, 1]}", "3, 4", "3, 4"), "repeats[0] is -1 but must be >= 0");
  EXPECT_REJECTED(G1("tile", "", "3, 4", "3, 4"), "mo.tile requires attribute 'repeats'");
  EXPECT_REJECTED(G1("tile", "{repeats = [2, 1]}", "3, 4", "3, 4"), "declared as");
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[2], si64>) -> (!mo.tensor<[3], si64>) {\n"
                  "  %y = mo.range(%x, %x, %x) : (!mo.tensor<[2], si64>, !mo.tensor<[2], si64>, "
                  "!mo.tensor<[2], si64>) -> !mo.tensor<[3], si64>\n  mo.output %y : "
                  "!mo.tensor<[3], si64>\n}\n",
                  "2:3: operand 0 of mo.range has rank 1 but must be a scalar");
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[], si64>) -> (!mo.tensor<[3], f32>) {\n"
                  "  %y = mo.range(%x, %x, %x) : (!mo.tensor<[], si64>, !mo.tensor<[], si64>, "
                  "!mo.tensor<[], si64>) -> !mo.tensor<[3], f32>\n  mo.output %y : "
                  "!mo.tensor<[3], f32>\n}\n",
                  "the result must be declared 1-D of the operands' dtype si64");
  EXPECT_REJECTED("mo.graph @g(%a: !mo.tensor<[], f32>, %b: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>) {\n"
                  "  %y = mo.matmul(%a, %b) : (!mo.tensor<[], f32>, !mo.tensor<[3], f32>) -> "
                  "!mo.tensor<[3], f32>\n  mo.output %y : !mo.tensor<[3], f32>\n}\n",
                  "operand 0 of mo.matmul has rank 0 but mo.matmul needs rank >= 1");
}
