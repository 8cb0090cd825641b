/* test_exp.c - the JIT's call-free exp (jit_exp_f64, used by softmax) against
 * libm's exp over its whole range, through f64 softmax rows [0, x]:
 * out[1] = exp(x) / (1 + exp(x)), out[0] = 1 / (1 + exp(x)). Normal results
 * must be within 4 ulps of libm's; subnormal ones within a few of the
 * smallest subnormal; NaN in gives NaN out; x far below -746 gives exactly 0. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"

#define GRAPH                                                                   \
  "mo.graph @g<n>(%x: !mo.tensor<[n, 2], f64>) -> (!mo.tensor<[n, 2], f64>) {\n" \
  "  %s = mo.softmax(%x) : !mo.tensor<[n, 2], f64>\n"                            \
  "  mo.output %s : !mo.tensor<[n, 2], f64>\n"                                   \
  "}\n"

#define N 4001

Test(jit_exp, softmax_rows_match_libm_exp_everywhere) {
  static double in[N * 2], out[N * 2];
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_not_null(ctx, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(GRAPH, strlen(GRAPH), "exp.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  for (int i = 0; i < N; i++) { /* x from -800 to 0, plus irregular fractions */
    in[2 * i] = 0.0;
    in[2 * i + 1] = -800.0 * i / (N - 1) - (i % 7) * 1e-3;
  }
  in[1] = 0.0;
  in[3] = NAN;
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT64, 2, (int64_t[]){N, 2}, in, st);
  kiln_tensor *y = kiln_tensor_borrow(KILN_FLOAT64, 2, (int64_t[]){N, 2}, out, st);
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert(isnan(out[2]) && isnan(out[3]), "NaN in, NaN out");
  for (int i = 0; i < N; i++) {
    if (i == 1) continue;
    double e = exp(in[2 * i + 1]);
    double want1 = e / (1.0 + e), want0 = 1.0 / (1.0 + e);
    double got1 = out[2 * i + 1], got0 = out[2 * i];
    double tol1 = e < 0x1p-1022 ? 4 * 0x1p-1074 : 4 * 0x1p-52 * want1;
    cr_assert(fabs(got1 - want1) <= tol1, "x = %.17g: exp part %.17g, libm gives %.17g",
              in[2 * i + 1], got1, want1);
    cr_assert(fabs(got0 - want0) <= 4 * 0x1p-52 * want0, "x = %.17g: %.17g vs %.17g",
              in[2 * i + 1], got0, want0);
    if (in[2 * i + 1] < -760.0) cr_assert_eq(got1, 0.0);
  }
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}
