/* test_ops_movement.c - data movement ops (reshape, transpose, permute,
 * broadcast_to, concat, split, slice_tensor, squeeze, unsqueeze, gather),
 * JIT vs the reference interpreter, bit for bit.
 *
 * These ops take every dtype (storage-only ones included, ir/infer.c). One
 * graph per (op, dtype) holds one node per case: static shapes with size-1
 * and size-0 dims and scalars, negative axes, symbolic shapes, algebraic
 * result dims (reshape to n * m, concat to n + m, slice to (n - 1) ceildiv 3).
 * Input data is drawn so that elements are distinct (ints over a wide range,
 * random floats), so a wrong index shows as a wrong value; bool data is
 * random.
 * slice_tensor follows Python's slice.indices on static dims (clamping,
 * negative steps); on symbolic dims it needs 0 <= start <= stop <= d at run
 * time and rejects a negative step (ir/infer.c: "not supported"): that is
 * tested as a rejection. gather indices are drawn from [-d, d-1] (negative
 * indices count from the end); out-of-range indices are in
 * test_ops_errors.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

typedef struct mv {
  const char *op, *attrs;
  int nin;
  const char *in[4];
  int nout;
  const char *out[4];
  const char *idx_dt; /* gather: dtype of operand 1 */
  double idx_lo, idx_hi;
} mv;

#define MAXI "9223372036854775807"
#define MINI "-9223372036854775808"

static oracle_gen data_gen(const char *dt) {
  if (strcmp(dt, "bool") == 0) return (oracle_gen){0};
  if (dt[0] == 'f' || dt[0] == 'b') return gen_uniform(-3, 3); /* f32 f64 f16 bf16 */
  return gen_uniform(-2e9, 2e9); /* clamped to each int type's range */
}

static void check_cases(const char *family, const char *dt, const mv *cases, int ncases,
                        const char *syms, const char *bindings) {
  gt *t = gt_new("movement", syms);
  for (int i = 0; i < ncases; i++) {
    const mv *m = &cases[i];
    int ins[4];
    for (int k = 0; k < m->nin; k++) {
      if (m->idx_dt && k == 1)
        ins[k] = gt_in_gen(t, m->idx_dt, m->in[k], gen_uniform(m->idx_lo, m->idx_hi));
      else
        ins[k] = gt_in_gen(t, dt, m->in[k], data_gen(dt));
    }
    const char *dts[4] = {dt, dt, dt, dt};
    int first = gt_opn(t, m->op, m->attrs, ins, m->nin, m->nout, dts, m->out);
    for (int r = 0; r < m->nout; r++) gt_out(t, first < 0 ? -1 : first + r);
  }
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  char label[128];
  snprintf(label, sizeof label, "%s %s", family, dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 61,
                   .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

static const char *const DTYPES[] = {"f32", "f64", "si32", "si64", "bool"};
#define NDT 5

#define CHECK_ALL_DTYPES(family, cases, syms, bindings)                                \
  for (int d_ = 0; d_ < NDT; d_++)                                                    \
  check_cases(family, DTYPES[d_], cases, (int)(sizeof cases / sizeof cases[0]), syms, \
              bindings)

/* ---- reshape ---- */

static const mv RESHAPE[] = {
    {"mo.reshape", NULL, 1, {"2, 3, 4"}, 1, {"6, 4"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"2, 3, 4"}, 1, {"24"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {""}, 1, {"1, 1"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"1"}, 1, {""}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"0, 3"}, 1, {"3, 0"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"n, 4"}, 1, {"4 * n"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"n, m, 2"}, 1, {"n * m, 2"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"n, 6"}, 1, {"n, 2, 3"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"n, 4"}, 1, {"2 * n, 2"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"n, m"}, 1, {"m, n"}, NULL, 0, 0},
    {"mo.reshape", NULL, 1, {"n, 6"}, 1, {"3 * n, 2"}, NULL, 0, 0},
};

Test(movement, reshape) { CHECK_ALL_DTYPES("mo.reshape", RESHAPE, "n, m", "n=0,m=2;n=1,m=1;n=3,m=5"); }

/* ---- transpose and permute ---- */

static const mv TRANSPOSE[] = {
    {"mo.transpose", "{axis_1 = 0, axis_2 = 1}", 1, {"2, 3, 4"}, 1, {"3, 2, 4"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 1, axis_2 = 2}", 1, {"2, 3, 4"}, 1, {"2, 4, 3"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = -1, axis_2 = -3}", 1, {"2, 3, 4"}, 1, {"4, 3, 2"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 1, axis_2 = 1}", 1, {"2, 3, 4"}, 1, {"2, 3, 4"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 0, axis_2 = 1}", 1, {"n, m"}, 1, {"m, n"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 0, axis_2 = 2}", 1, {"1, 0, 3"}, 1, {"3, 0, 1"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 0, axis_2 = 1}", 1, {"5, 67"}, 1, {"67, 5"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 0, axis_2 = 2}", 1, {"n, 3, 2"}, 1, {"2, 3, n"}, NULL, 0, 0},
    /* 32 x 32 tiles, whole (in registers for 4- and 8-byte elements) and at the edges */
    {"mo.transpose", "{axis_1 = 0, axis_2 = 1}", 1, {"70, 45"}, 1, {"45, 70"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 1, axis_2 = 2}", 1, {"3, 64, 33"}, 1, {"3, 33, 64"}, NULL, 0, 0},
};

Test(movement, transpose) {
  CHECK_ALL_DTYPES("mo.transpose", TRANSPOSE, "n, m", "n=0,m=2;n=1,m=1;n=3,m=5;n=40,m=70");
}

static const mv PERMUTE[] = {
    {"mo.permute", "{dims = [2, 0, 1]}", 1, {"2, 3, 4"}, 1, {"4, 2, 3"}, NULL, 0, 0},
    {"mo.permute", "{dims = [0, 1, 2]}", 1, {"2, 3, 4"}, 1, {"2, 3, 4"}, NULL, 0, 0},
    {"mo.permute", "{dims = [1, 0, 2]}", 1, {"2, 3, 4"}, 1, {"3, 2, 4"}, NULL, 0, 0},
    {"mo.permute", "{dims = [-1, 0, 1]}", 1, {"2, 3, 4"}, 1, {"4, 2, 3"}, NULL, 0, 0},
    {"mo.permute", "{dims = [2, 1, 0]}", 1, {"n, 3, m"}, 1, {"m, 3, n"}, NULL, 0, 0},
    {"mo.permute", "{dims = [0]}", 1, {"5"}, 1, {"5"}, NULL, 0, 0},
    {"mo.permute", "{dims = []}", 1, {""}, 1, {""}, NULL, 0, 0},
    {"mo.permute", "{dims = [2, 0, 1]}", 1, {"2, 0, 3"}, 1, {"3, 2, 0"}, NULL, 0, 0},
    {"mo.permute", "{dims = [3, 1, 2, 0]}", 1, {"2, 3, 4, 5"}, 1, {"5, 3, 4, 2"}, NULL, 0, 0},
    {"mo.permute", "{dims = [0, 3, 2, 1]}", 1, {"2, 40, 3, 36"}, 1, {"2, 36, 3, 40"}, NULL, 0, 0},
    /* trailing axes left in place move as one run per step (attention's heads split) */
    {"mo.permute", "{dims = [0, 2, 1, 3]}", 1, {"2, 7, 12, 64"}, 1, {"2, 12, 7, 64"}, NULL, 0, 0},
    {"mo.permute", "{dims = [0, 2, 1, 3]}", 1, {"n, m, 3, 5"}, 1, {"n, 3, m, 5"}, NULL, 0, 0},
    {"mo.permute", "{dims = [1, 0, 2, 3]}", 1, {"n, 3, m, 4"}, 1, {"3, n, m, 4"}, NULL, 0, 0},
    {"mo.permute", "{dims = [1, 0, 2]}", 1, {"3, 4, n"}, 1, {"4, 3, n"}, NULL, 0, 0},
};

Test(movement, permute) {
  CHECK_ALL_DTYPES("mo.permute", PERMUTE, "n, m", "n=0,m=2;n=1,m=1;n=3,m=5;n=64,m=35");
}

/* ---- broadcast_to ---- */

static const mv BROADCAST[] = {
    {"mo.broadcast_to", NULL, 1, {"3, 1"}, 1, {"2, 3, 4"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {""}, 1, {"n, 3"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"1"}, 1, {"0"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"n, 1"}, 1, {"n, m"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"4"}, 1, {"2, 4"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"1, 1"}, 1, {"1, 1"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"n"}, 1, {"2, n"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"1, 67"}, 1, {"3, 67"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"2, 1, 3"}, 1, {"2, m, 3"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"m"}, 1, {"3, m"}, NULL, 0, 0}, /* m comes from an input */
};

Test(movement, broadcast_to) {
  CHECK_ALL_DTYPES("mo.broadcast_to", BROADCAST, "n, m", "n=0,m=2;n=1,m=1;n=3,m=5");
}

/* ---- concat and split ---- */

static const mv CONCAT[] = {
    {"mo.concat", "{axis = 0}", 2, {"2, 3", "4, 3"}, 1, {"6, 3"}, NULL, 0, 0},
    {"mo.concat", "{axis = 1}", 3, {"2, 3", "2, 0", "2, 5"}, 1, {"2, 8"}, NULL, 0, 0},
    {"mo.concat", "{axis = -1}", 2, {"2, 3, 1", "2, 3, 2"}, 1, {"2, 3, 3"}, NULL, 0, 0},
    {"mo.concat", "{axis = 1}", 2, {"2, 1, 4", "2, 3, 4"}, 1, {"2, 4, 4"}, NULL, 0, 0},
    {"mo.concat", "{axis = 0}", 2, {"n, 3", "m, 3"}, 1, {"n + m, 3"}, NULL, 0, 0},
    {"mo.concat", "{axis = 0}", 3, {"n", "n", "5"}, 1, {"2 * n + 5"}, NULL, 0, 0},
    {"mo.concat", "{axis = 1}", 1, {"3, 2"}, 1, {"3, 2"}, NULL, 0, 0},
    {"mo.concat", "{axis = 0}", 3, {"1", "1", "1"}, 1, {"3"}, NULL, 0, 0},
    {"mo.concat", "{axis = 0}", 2, {"0, 4", "0, 4"}, 1, {"0, 4"}, NULL, 0, 0},
    {"mo.concat", "{axis = 1}", 2, {"2, n", "2, 1"}, 1, {"2, n + 1"}, NULL, 0, 0},
    {"mo.concat", "{axis = 1}", 2, {"3, 67", "3, 61"}, 1, {"3, 128"}, NULL, 0, 0},
};

Test(movement, concat) {
  CHECK_ALL_DTYPES("mo.concat", CONCAT, "n, m", "n=0,m=2;n=1,m=1;n=3,m=5");
}

static const mv SPLIT[] = {
    {"mo.split", "{split_sizes = [2, 4], axis = 1}", 1, {"n, 6"}, 2, {"n, 2", "n, 4"}, NULL, 0, 0},
    {"mo.split", "{split_sizes = [0, 3, 4], axis = 0}", 1, {"7"}, 3, {"0", "3", "4"}, NULL, 0, 0},
    {"mo.split", "{split_sizes = [5], axis = -1}", 1, {"3, 5"}, 1, {"3, 5"}, NULL, 0, 0},
    {"mo.split", "{split_sizes = [1, 2, 3]}", 1, {"6, n"}, 3, {"1, n", "2, n", "3, n"}, NULL, 0, 0},
    {"mo.split", "{split_sizes = [4, 5], axis = 1}", 1, {"2, 9, 2"}, 2, {"2, 4, 2", "2, 5, 2"},
     NULL, 0, 0},
    {"mo.split", "{split_sizes = [1, 1], axis = 0}", 1, {"2, 0"}, 2, {"1, 0", "1, 0"}, NULL, 0, 0},
};

Test(movement, split) { CHECK_ALL_DTYPES("mo.split", SPLIT, "n", "n=0;n=1;n=4"); }

/* Sizes from the declared result types (MAX's symbolic split_sizes): no
 * split_sizes (every size declared; k + m against k + m cancels), and -1
 * entries beside static ones (n = k + 2 checked at run time) */
Test(movement, split_sizes_from_declared_types) {
  for (int d = 0; d < NDT; d++) {
    const char *dt = DTYPES[d], *dts[3] = {dt, dt, dt};
    gt *t = gt_new("split", "n, k, m");
    int a = gt_in_gen(t, dt, "k, 3", data_gen(dt)), b = gt_in_gen(t, dt, "m, 3", data_gen(dt));
    int x = gt_op2(t, "mo.concat", "{axis = 0}", a, b, dt, "k + m, 3");
    const char *s1[2] = {"k, 3", "m, 3"};
    int r = gt_opn(t, "mo.split", NULL, &x, 1, 2, dts, s1);
    gt_out(t, r);
    gt_out(t, r + 1);
    int y = gt_in_gen(t, dt, "4, n", data_gen(dt));
    const char *s2[3] = {"4, k", "4, 2", "4, 0"};
    r = gt_opn(t, "mo.split", "{axis = 1, split_sizes = [-1, 2, 0]}", &y, 1, 3, dts, s2);
    for (int i = 0; i < 3; i++) gt_out(t, r + i);
    const char *s3[1] = {"4, n"};
    gt_out(t, gt_opn(t, "mo.split", "{axis = -1, split_sizes = []}", &y, 1, 1, dts, s3));
    oracle_case c = {.label = "mo.split declared sizes", .mlir = gt_finish(t),
                     .bindings = "n=5,k=3,m=0;n=2,k=0,m=4;n=9,k=7,m=1", .seed = 17};
    int ng;
    c.gens = gt_gens(t, &ng);
    c.ngens = ng;
    ORACLE_ASSERT(&c);
    gt_free(t);
  }
}

#define SPLIT_TEXT(x, attrs, res)                                                      \
  "mo.graph @g<n>(%x: !mo.tensor<[" x "], f32>) -> (!mo.tensor<[2], f32>) {\n"       \
  "  %a, %b = mo.split(%x) " attrs " : (!mo.tensor<[" x "], f32>) -> (" res ")\n" \
  "  mo.output %a : !mo.tensor<[2], f32>\n}\n"

Test(movement, split_bad_sizes_are_refused) {
  EXPECT_REJECTED(SPLIT_TEXT("5", "{split_sizes = [2, -2]}",
                             "!mo.tensor<[2], f32>, !mo.tensor<[3], f32>"),
                  "2:3: mo.split: split_sizes[1] = -2 is negative (-1: the declared size)");
  EXPECT_REJECTED(SPLIT_TEXT("6", "", "!mo.tensor<[2], f32>, !mo.tensor<[3], f32>"),
                  "2:3: mo.split: split_sizes sum to 5 but axis 0 has size 6");
  EXPECT_REJECTED(SPLIT_TEXT("6", "{split_sizes = [2, -1]}",
                             "!mo.tensor<[2], f32>, !mo.tensor<[n, 2], f32>"),
                  "2:3: mo.split: result 1 is declared with rank 2 but the operand has rank 1");
  EXPECT_REJECTED(SPLIT_TEXT("6", "{split_sizes = [2, 2, 2]}",
                             "!mo.tensor<[2], f32>, !mo.tensor<[4], f32>"),
                  "2:3: mo.split produces 3 results but 2 names were given");
}

/* ---- slice_tensor ---- */

#define SL(shape, start, stop, step, out)                                                  \
  {"mo.slice_tensor", "{start = [" start "], stop = [" stop "], step = [" step "]}", 1, {shape}, \
   1, {out}, NULL, 0, 0}

static const mv SLICE_STATIC[] = {
    SL("10", "2", "8", "1", "6"),
    SL("10", "1", "9", "3", "3"),
    SL("10", "-3", MAXI, "1", "3"),
    SL("10", MINI, MAXI, "-1", "10"),
    SL("10", "8", "2", "-2", "3"),
    SL("10", "-1", "-11", "-1", "10"),
    SL("10", "100", "200", "1", "0"),
    SL("10", "5", "2", "1", "0"),
    SL("10", "0", "10", "20", "1"),
    SL("10", "-100", "100", "4", "3"),
    SL("4, 6", "1, 0", "3, 6", "1, 2", "2, 3"),
    SL("4, 6, 3", "0", MAXI, "2", "2, 6, 3"),
    SL("4, 6", "3, -1", "0, 0", "-1, -2", "3, 3"),
    SL("0, 3", "0", MAXI, "1", "0, 3"),
    SL("3, 67", "0, 1", "3, 66", "1, 1", "3, 65"),
};

Test(movement, slice_static) {
  CHECK_ALL_DTYPES("mo.slice_tensor", SLICE_STATIC, NULL, "");
}

/* symbolic dims: length (stop - start) ceildiv step, run-time checks that
 * 0 <= start <= stop <= n (so every binding here has n >= 2) */
static const mv SLICE_SYMBOLIC[] = {
    SL("n", "1", MAXI, "1", "n - 1"),
    SL("n, 4", "0", "2", "1", "2, 4"),
    SL("n", "0", MAXI, "2", "n ceildiv 2"),
    SL("n", "-2", MAXI, "1", "2"),
    SL("n", "1", "-1", "1", "n - 2"),
    SL("n", "1", MAXI, "3", "(n - 1) ceildiv 3"),
    SL("n, m", MINI ", 1", MAXI ", " MAXI, "1, 2", "n, (m - 1) ceildiv 2"),
};

Test(movement, slice_symbolic) {
  CHECK_ALL_DTYPES("mo.slice_tensor", SLICE_SYMBOLIC, "n, m", "n=2,m=1;n=3,m=4;n=7,m=9;n=10,m=2");
}

/* by design: a negative step on a symbolic dim is rejected with a clear error */
Test(movement, slice_negative_step_on_symbolic_dim_is_rejected) {
  const char *text =
      "mo.graph @g<n>(%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
      "  %y = mo.slice_tensor(%x) {start = [" MINI "], stop = [" MAXI "], step = [-1]} : "
      "(!mo.tensor<[n], f32>) -> !mo.tensor<[n], f32>\n"
      "  mo.output %y : !mo.tensor<[n], f32>\n}\n";
  char msg[1024];
  kiln_code code;
  cr_expect_neq(oracle_ir_parse_only(text, msg, sizeof msg), 0, "ir_parse accepted it");
  cr_expect(strstr(msg, "negative step on symbolic dim is not supported") != NULL, "message: %s",
            msg);
  cr_expect_neq(oracle_compile_only(text, &code, msg, sizeof msg), 0, "kiln accepted it");
  cr_expect(strstr(msg, "negative step on symbolic dim is not supported") != NULL, "message: %s",
            msg);
}

/* ---- squeeze and unsqueeze ---- */

static const mv SQUEEZE[] = {
    {"mo.squeeze", "{axis = 1}", 1, {"3, 1, 4"}, 1, {"3, 4"}, NULL, 0, 0},
    {"mo.squeeze", "{axis = -2}", 1, {"3, 1, 4"}, 1, {"3, 4"}, NULL, 0, 0},
    {"mo.squeeze", "{axis = 0}", 1, {"1"}, 1, {""}, NULL, 0, 0},
    {"mo.squeeze", "{axis = 1}", 1, {"n, 1"}, 1, {"n"}, NULL, 0, 0},
    {"mo.squeeze", "{axis = 0}", 1, {"1, 0"}, 1, {"0"}, NULL, 0, 0},
    {"mo.squeeze", "{axis = -1}", 1, {"1, 1"}, 1, {"1"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = 0}", 1, {"3, 4"}, 1, {"1, 3, 4"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = 1}", 1, {"3, 4"}, 1, {"3, 1, 4"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = 2}", 1, {"3, 4"}, 1, {"3, 4, 1"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = -1}", 1, {"3, 4"}, 1, {"3, 4, 1"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = -3}", 1, {"3, 4"}, 1, {"1, 3, 4"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = 0}", 1, {""}, 1, {"1"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = -1}", 1, {""}, 1, {"1"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = -1}", 1, {"n"}, 1, {"n, 1"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = 0}", 1, {"0"}, 1, {"1, 0"}, NULL, 0, 0},
};

Test(movement, squeeze_unsqueeze) {
  CHECK_ALL_DTYPES("mo.squeeze / mo.unsqueeze", SQUEEZE, "n", "n=0;n=1;n=4");
}

/* ---- gather: output = input.shape[:axis] + indices.shape + input.shape[axis+1:] ---- */

#define GA(in, idx, idt, attrs, out, lo, hi) \
  {"mo.gather", attrs, 2, {in, idx}, 1, {out}, idt, lo, hi}

static const mv GATHER[] = {
    GA("5, 4", "3", "si64", "{axis = 0}", "3, 4", -5, 4),
    GA("5, 4", "2", "si32", "{axis = 1}", "5, 2", -4, 3),
    GA("5, 4", "2", "si64", NULL, "5, 2", -4, 3),
    GA("5, 4", "2", "si32", "{axis = -1}", "5, 2", -4, 3),
    GA("5, 4", "2, 3", "si64", "{axis = 0}", "2, 3, 4", -5, 4),
    GA("5, 4", "", "si32", "{axis = 0}", "4", -5, 4),
    GA("5, 4", "0", "si64", "{axis = 0}", "0, 4", -5, 4),
    GA("5, 4, 3", "2, 2", "si32", "{axis = 1}", "5, 2, 2, 3", -4, 3),
    GA("5", "7", "si64", "{axis = 0}", "7", -5, 4),
    GA("0, 3", "0", "si32", "{axis = 0}", "0, 3", 0, 0),
    GA("n, 4", "k", "si64", "{axis = 0}", "k, 4", -3, 2),
    GA("3, n", "k, 2", "si32", "{axis = 1}", "3, k, 2", -3, 2),
};

Test(movement, gather) {
  CHECK_ALL_DTYPES("mo.gather", GATHER, "n, k", "n=3,k=0;n=5,k=7;n=4,k=1");
}

/* ---- storage-only dtypes: one case of every movement op ---- */

static const mv STORAGE[] = {
    {"mo.reshape", NULL, 1, {"n, 6"}, 1, {"n, 2, 3"}, NULL, 0, 0},
    {"mo.transpose", "{axis_1 = 0, axis_2 = 1}", 1, {"5, 67"}, 1, {"67, 5"}, NULL, 0, 0},
    {"mo.permute", "{dims = [2, 0, 1]}", 1, {"2, 3, n"}, 1, {"n, 2, 3"}, NULL, 0, 0},
    {"mo.broadcast_to", NULL, 1, {"n, 1"}, 1, {"n, 5"}, NULL, 0, 0},
    {"mo.concat", "{axis = 0}", 2, {"n, 3", "2, 3"}, 1, {"n + 2, 3"}, NULL, 0, 0},
    {"mo.split", "{split_sizes = [1, 4], axis = 1}", 1, {"n, 5"}, 2, {"n, 1", "n, 4"}, NULL, 0, 0},
    SL("10, 3", "8", "1", "-3", "3, 3"),
    {"mo.squeeze", "{axis = 0}", 1, {"1, n"}, 1, {"n"}, NULL, 0, 0},
    {"mo.unsqueeze", "{axis = 1}", 1, {"n, 2"}, 1, {"n, 1, 2"}, NULL, 0, 0},
    GA("6, 4", "n, 5", "si64", "{axis = 0}", "n, 5, 4", -6, 5),
};

Test(movement, storage_dtypes) {
  static const char *const dts[] = {"si8", "ui8", "si16", "ui16", "ui32", "ui64", "f16", "bf16",
                                    "f8e4m3fn", "f8e5m2"};
  for (int d = 0; d < 10; d++)
    check_cases("every movement op", dts[d], STORAGE, (int)(sizeof STORAGE / sizeof STORAGE[0]),
                "n", "n=0;n=1;n=3");
}
