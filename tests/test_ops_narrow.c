/* test_ops_narrow.c - integer ops on si8, si16, ui8, ui16 and ui32, JIT vs
 * the reference interpreter (on the CPU, and on simt-emu under
 * tools/gpu_check.sh), and hand-worked values.
 *
 * An integer op on a narrow dtype means its meaning on the operands widened
 * exactly (si8 / si16 / ui8 / ui16 -> si32, ui32 -> si64), each narrow result
 * wrapped back to its low bits (ir.h: ir_node_computes_narrow): sums,
 * products and matmuls wrap as in the narrow type; comparisons, division,
 * mod, max and mean see the exact values, unsigned ones included (mo.div
 * of integers is true division into f64). Integers
 * compare bit for bit. Also: ui64 stays storage-only and indices stay si32
 * or si64, each refused with a message that says which dtypes the op takes. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"
#include "support/gtext.h"
#include "support/oracle.h"

static const char *const NARROW[] = {"si8", "si16", "ui8", "ui16", "ui32"};
#define NNARROW (int)(sizeof NARROW / sizeof NARROW[0])
static const char *const SHAPES[] = {"", "7", "3, 1, 4", "0, 5", "2, 67", "n, 3"};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define BINDINGS "n=0;n=1;n=5"

static void run_case(const char *label, gt *t, const char *bindings) {
  int ngens = 0;
  const oracle_gen *gens = gt_gens(t, &ngens);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 11,
                   .gens = gens, .ngens = ngens};
  ORACLE_ASSERT(&c);
}

/* The whole range of the dtype (the generator clamps to it). */
static oracle_gen full(void) { return gen_uniform(-1e19, 1e19); }

static void binary(const char *op, const char *out_dt, oracle_gen rhs) {
  for (int d = 0; d < NNARROW; d++) {
    gt *t = gt_new("binary", "n");
    for (int i = 0; i < NSHAPES; i++) {
      int a = gt_in_gen(t, NARROW[d], SHAPES[i], full());
      int b = gt_in_gen(t, NARROW[d], SHAPES[i], rhs);
      gt_out(t, gt_op2(t, op, NULL, a, b, out_dt ? out_dt : NARROW[d], SHAPES[i]));
    }
    int a = gt_in_gen(t, NARROW[d], "4, 1", full()); /* broadcast */
    int b = gt_in_gen(t, NARROW[d], "1, 6", rhs);
    gt_out(t, gt_op2(t, op, NULL, a, b, out_dt ? out_dt : NARROW[d], "4, 6"));
    char label[96];
    snprintf(label, sizeof label, "%s %s", op, NARROW[d]);
    run_case(label, t, BINDINGS);
    gt_free(t);
  }
}

Test(narrow, arithmetic_wraps_and_compares_exactly) {
  static const char *const ops[] = {"mo.add", "mo.sub", "mo.mul", "mo.max", "mo.min"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) binary(ops[i], NULL, full());
  binary("mo.div", "f64", gen_nonzero(-1e19, 1e19, 1)); /* true division */
  binary("mo.mod", NULL, gen_nonzero(-1e19, 1e19, 1));
  static const char *const cmp[] = {"mo.equal", "mo.not_equal", "mo.greater",
                                    "mo.greater_equal"};
  for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++) binary(cmp[i], "bool", full());
}

Test(narrow, unary_ops) {
  static const char *const ops[] = {"mo.abs", "mo.negate"};
  for (int d = 0; d < NNARROW; d++)
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
      gt *t = gt_new("unary", "n");
      for (int i = 0; i < NSHAPES; i++)
        gt_out(t, gt_op1(t, ops[k], NULL, gt_in_gen(t, NARROW[d], SHAPES[i], full()), NARROW[d],
                         SHAPES[i]));
      char label[96];
      snprintf(label, sizeof label, "%s %s", ops[k], NARROW[d]);
      run_case(label, t, BINDINGS);
      gt_free(t);
    }
}

Test(narrow, reductions_scans_matmul_where) {
  for (int d = 0; d < NNARROW; d++) {
    const char *dt = NARROW[d];
    gt *t = gt_new("reduce", "n");
    int x = gt_in_gen(t, dt, "n, 67", full());
    gt_out(t, gt_op1(t, "mo.sum", "{axis = 1}", x, dt, "n, 1"));
    gt_out(t, gt_op1(t, "mo.mean", "{axis = 1}", x, dt, "n, 1"));
    gt_out(t, gt_op1(t, "mo.max", "{axis = 0}", x, dt, "1, 67"));
    gt_out(t, gt_op1(t, "mo.min", "{axis = 1}", x, dt, "n, 1"));
    gt_out(t, gt_op1(t, "mo.cumsum", "{axis = 1}", x, dt, "n, 67"));
    int a = gt_in_gen(t, dt, "3, 67", full()), b = gt_in_gen(t, dt, "67, n", full());
    gt_out(t, gt_op2(t, "mo.matmul", NULL, a, b, dt, "3, n"));
    int c = gt_in(t, "bool", "n, 67"), y = gt_in_gen(t, dt, "n, 67", full());
    int ins[3] = {c, x, y};
    gt_out(t, gt_op(t, "mo.where", NULL, ins, 3, dt, "n, 67"));
    char label[96];
    snprintf(label, sizeof label, "reductions %s", dt);
    run_case(label, t, "n=1;n=4;n=0");
    gt_free(t);
  }
}

/* Run a graph of constants on the JIT (and, through the oracle, the
 * interpreter) and compare output 0's bytes with want. */
static void expect_values(const char *text, const void *want, size_t nbytes) {
  oracle_case c = {.label = "hand-worked", .mlir = text, .bindings = "", .seed = 1};
  ORACLE_ASSERT(&c);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "narrow.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(m, NULL, 0, &y, 1, st), 0, "%s", kiln_status_message(st));
  cr_expect_eq(memcmp(kiln_tensor_data(y), want, nbytes), 0, "wrong values for\n%s", text);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* %a OP %b on two 4-element constants of dtype dt, result dtype rt. */
static void hand(const char *op, const char *dt, const char *a, const char *b, const char *rt,
                 const void *want, size_t nbytes) {
  gt *t = gt_new("hand", NULL);
  int x = gt_const(t, dt, "4", a), y = gt_const(t, dt, "4", b);
  gt_out(t, gt_op2(t, op, NULL, x, y, rt, "4"));
  expect_values(gt_finish(t), want, nbytes);
  gt_free(t);
}

Test(narrow, hand_worked_values) {
  /* sums and products wrap to the low bits */
  hand("mo.add", "si8", "100, 127, -128, -1", "100, 1, -1, 1", "si8",
       (int8_t[]){-56, -128, 127, 0}, 4);
  hand("mo.add", "ui8", "200, 255, 0, 17", "100, 1, 0, 3", "ui8", (uint8_t[]){44, 0, 0, 20}, 4);
  hand("mo.sub", "ui8", "3, 0, 255, 9", "5, 1, 255, 4", "ui8", (uint8_t[]){254, 255, 0, 5}, 4);
  hand("mo.mul", "si16", "300, -300, 181, 2", "300, 300, 181, -16384", "si16",
       (int16_t[]){24464, -24464, 32761, -32768}, 8);
  hand("mo.mul", "ui32", "65536, 4294967295, 3, 0", "65536, 2, 5, 7", "ui32",
       (uint32_t[]){0, 4294967294u, 15, 0}, 16);
  /* division and mod see the exact values: unsigned ones stay unsigned */
  hand("mo.div", "ui32", "4294967295, 4000000000, 9, 1", "2, 3, 4, 5", "f64",
       (double[]){2147483647.5, 4000000000.0 / 3.0, 2.25, 0.2}, 32);
  hand("mo.mod", "ui8", "200, 255, 7, 0", "3, 16, 2, 9", "ui8", (uint8_t[]){2, 15, 1, 0}, 4);
  hand("mo.max", "ui32", "4294967295, 1, 2147483648, 0", "1, 2, 5, 0", "ui32",
       (uint32_t[]){4294967295u, 2, 2147483648u, 0}, 16);
  hand("mo.greater", "ui16", "65535, 1, 32768, 7", "1, 65535, 32767, 7", "bool",
       (uint8_t[]){1, 0, 1, 0}, 4);
  hand("mo.greater", "si8", "-1, 1, -128, 127", "1, -1, 127, -128", "bool",
       (uint8_t[]){0, 1, 0, 1}, 4);
  /* a mean of narrow values does not overflow on the way */
  gt *t = gt_new("mean", NULL);
  int x = gt_const(t, "si8", "2, 2", "100, 120, -128, -126");
  gt_out(t, gt_op1(t, "mo.mean", "{axis = 1}", x, "si8", "2, 1"));
  expect_values(gt_finish(t), (int8_t[]){110, -127}, 2);
  gt_free(t);
}

Test(narrow, storage_only_and_index_dtypes_are_refused) {
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[4], ui64>) -> (!mo.tensor<[4], ui64>) {\n"
                  "  %y = mo.add(%x, %x) : (!mo.tensor<[4], ui64>, !mo.tensor<[4], ui64>) -> "
                  "!mo.tensor<[4], ui64>\n"
                  "  mo.output %y : !mo.tensor<[4], ui64>\n}\n",
                  "mo.add takes f16, bf16, f32, f64 or an integer (si8 to si64, ui8 to ui32)");
  EXPECT_REJECTED("mo.graph @g(%x: !mo.tensor<[4], f32>, %i: !mo.tensor<[2], si8>) -> "
                  "(!mo.tensor<[2], f32>) {\n"
                  "  %y = mo.gather(%x, %i) {axis = 0} : (!mo.tensor<[4], f32>, "
                  "!mo.tensor<[2], si8>) -> !mo.tensor<[2], f32>\n"
                  "  mo.output %y : !mo.tensor<[2], f32>\n}\n",
                  "indices must be si32 or si64");
}
