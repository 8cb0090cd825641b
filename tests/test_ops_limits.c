/* test_ops_limits.c - the edges of the shape space, JIT vs the reference
 * interpreter: rank 16 (IR_MAX_RANK) through every op class that builds a
 * loop nest per axis, ops with many operands or results (concat of 24
 * operands, split into 24), and a long chain of nodes sharing intermediate
 * buffers. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gtext.h"
#include "support/oracle.h"

/* 2^8 = 256 elements in 16 dims, alternating 2 and 1 */
#define R16 "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1"
#define R16_REV "1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2"
#define R15 "1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3"
#define R16_B "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 3"
#define PERM_REV "[15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]"

static void run(const char *label, gt *t, const char *bindings, double rtol, double atol) {
  int ng;
  const oracle_gen *gens = gt_gens(t, &ng);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = bindings, .seed = 91,
                   .rtol = rtol, .atol = atol, .gens = gens, .ngens = ng};
  ORACLE_ASSERT(&c);
  gt_free(t);
}

Test(limits, rank16_elementwise_broadcast) {
  gt *t = gt_new("r16", NULL);
  /* rank 16 [2, 1, 2, 1, ...] + rank 15 [2, 1, ..., 3] (padded with a
   * leading axis): the 1s meet 2s on every axis, the result is [2 x 15, 3] */
  int a = gt_in(t, "f32", "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1");
  int b = gt_in(t, "f32", "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 3");
  gt_out(t, gt_op2(t, "mo.add", NULL, a, b, "f32", "2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3"));
  int c = gt_in(t, "si64", R16);
  gt_out(t, gt_op1(t, "mo.negate", NULL, c, "si64", R16));
  int ins[3] = {gt_in(t, "bool", R16), gt_in(t, "f64", R16_REV), gt_in(t, "f64", "")};
  gt_out(t, gt_op(t, "mo.where", NULL, ins, 3, "f64",
                  "2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2"));
  run("rank 16 elementwise", t, "", 0, 0);
}

Test(limits, rank16_movement) {
  gt *t = gt_new("r16", NULL);
  int a = gt_in(t, "si32", R16);
  gt_out(t, gt_op1(t, "mo.permute", "{dims = " PERM_REV "}", a, "si32", R16_REV));
  gt_out(t, gt_op1(t, "mo.transpose", "{axis_1 = 0, axis_2 = 15}", a, "si32",
                   "1, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2"));
  gt_out(t, gt_op1(t, "mo.reshape", NULL, a, "si32", "256"));
  int v = gt_in(t, "si32", "256");
  gt_out(t, gt_op1(t, "mo.reshape", NULL, v, "si32", R16));
  gt_out(t, gt_op1(t, "mo.squeeze", "{axis = 15}", a, "si32",
                   "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2"));
  int r15 = gt_in(t, "f64", R15);
  gt_out(t, gt_op1(t, "mo.unsqueeze", "{axis = 7}", r15, "f64",
                   "1, 2, 1, 2, 1, 2, 1, 1, 2, 1, 2, 1, 2, 1, 2, 3"));
  gt_out(t, gt_op1(t, "mo.broadcast_to", NULL, r15, "f64", "4, " R15));
  int ins[2] = {a, gt_in(t, "si32", R16)};
  gt_out(t, gt_op(t, "mo.concat", "{axis = 13}", ins, 2, "si32",
                  "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2, 2, 1"));
  gt_out(t, gt_op1(t, "mo.slice_tensor",
                   "{start = [1, 0, -1], stop = [2, 1, -3], step = [1, 1, -1]}", a, "si32",
                   "1, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1"));
  int idx = gt_in_gen(t, "si64", "2", gen_uniform(-2, 1));
  gt_out(t, gt_op2(t, "mo.gather", "{axis = 14}", a, idx, "si32",
                   "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1"));
  run("rank 16 movement", t, "", 0, 0);
}

Test(limits, rank16_reductions_norms_matmul) {
  gt *t = gt_new("r16", NULL);
  int a = gt_in(t, "f64", R16_B);
  gt_out(t, gt_op1(t, "mo.sum", "{axis = 6}", a, "f64",
                   "2, 1, 2, 1, 2, 1, 1, 1, 2, 1, 2, 1, 2, 1, 2, 3"));
  gt_out(t, gt_op1(t, "mo.argmax", "{axis = 14}", a, "si64",
                   "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 1, 3"));
  gt_out(t, gt_op1(t, "mo.softmax", "{axis = 0}", a, "f64", R16_B));
  int ln[3] = {a, gt_in(t, "f64", "3"), gt_in(t, "f64", "3")};
  gt_out(t, gt_op(t, "mo.layer_norm", NULL, ln, 3, "f64", R16_B));
  /* 14 batch dims, one of them broadcast */
  int m1 = gt_in(t, "f64", "2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2, 3, 4");
  int m2 = gt_in(t, "f64", "1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 2");
  gt_out(t, gt_op2(t, "mo.matmul", NULL, m1, m2, "f64",
                   "2, 3, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 2, 3, 2"));
  run("rank 16 reductions, norms, matmul", t, "", 1e-12, 1e-14);
}

Test(limits, concat_of_24_operands_and_split_into_24) {
  for (int d = 0; d < 2; d++) {
    const char *dt = d ? "bool" : "f32";
    gt *t = gt_new("many", "n");
    int ins[24];
    for (int i = 0; i < 24; i++) ins[i] = gt_in(t, dt, i % 3 == 0 ? "n, 2" : "1, 2");
    gt_out(t, gt_op(t, "mo.concat", "{axis = 0}", ins, 24, dt, "8 * n + 16, 2"));
    const char *dts[24], *shapes[24];
    static const char *const sz[3] = {"0, 5", "1, 5", "2, 5"};
    for (int i = 0; i < 24; i++) {
      dts[i] = dt;
      shapes[i] = sz[i % 3];
    }
    int x = gt_in(t, dt, "24, 5");
    int first = gt_opn(t, "mo.split",
                       "{split_sizes = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, "
                       "1, 2, 0, 1, 2], axis = 0}",
                       &x, 1, 24, dts, shapes);
    for (int i = 0; i < 24; i++) gt_out(t, first < 0 ? -1 : first + i);
    run(d ? "concat / split bool" : "concat / split f32", t, "n=0;n=1;n=3", 0, 0);
  }
}

/* 60 nodes in a chain with side branches: intermediate buffers are reused
 * (or not) by the runtime's plan; every result must still be right */
Test(limits, long_chain_of_nodes) {
  gt *t = gt_new("chain", "n");
  int x = gt_in_gen(t, "f64", "n, 5", gen_uniform(-1, 1));
  int acc = x;
  for (int i = 0; i < 20; i++) {
    int a = gt_op1(t, "mo.tanh", NULL, acc, "f64", "n, 5");
    int b = gt_op2(t, "mo.mul", NULL, a, x, "f64", "n, 5");
    acc = gt_op2(t, "mo.add", NULL, b, acc, "f64", "n, 5");
    if (i % 7 == 0) gt_out(t, b);
  }
  gt_out(t, acc);
  run("long chain", t, "n=0;n=1;n=6", TOL_F64_TRANS, 1e-13);
}

/* Large symbolic sizes (a prime number of rows, so no vector width or
 * thread split divides them): the main vector loops, their remainders and
 * any split of the outer loop across threads. Sums of 1009 terms: atol as
 * in test_ops_reduce.c (1e-6 * L). */
Test(limits, large_symbolic_sizes) {
  gt *t = gt_new("large", "n, m");
  int x = gt_in(t, "f32", "n, m");
  gt_out(t, gt_op1(t, "mo.relu", NULL, x, "f32", "n, m"));
  gt_out(t, gt_op2(t, "mo.add", NULL, x, gt_in(t, "f32", "m"), "f32", "n, m"));
  gt_out(t, gt_op1(t, "mo.sum", "{axis = 0}", x, "f32", "1, m"));
  gt_out(t, gt_op1(t, "mo.max", "{axis = 1}", x, "f32", "n, 1"));
  gt_out(t, gt_op1(t, "mo.softmax", "{axis = 0}", x, "f32", "n, m"));
  gt_out(t, gt_op1(t, "mo.transpose", "{axis_1 = 0, axis_2 = 1}", x, "f32", "m, n"));
  gt_out(t, gt_op1(t, "mo.cast", "{dtype = si32}", x, "si32", "n, m"));
  run("large sizes", t, "n=1009,m=131;n=100003,m=1", 2e-5, 1e-6 * 1009);
}
