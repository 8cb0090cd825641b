/* test_onnx_data_axes.c - ONNX nodes whose axes, sizes, pads, depth or K
 * are run-time data (src/onnx/data_axes.c, pad_data.c, ops_onehot.c,
 * ops_random.c): ONNX's own node-test models (Debian libonnx-testdata) are
 * imported, printed as MO text and run by the JIT against the reference
 * interpreter with data other than the test's (every axis, negative ones,
 * other sizes), and with data ONNX forbids (an axis out of range, a squeezed
 * dim other than 1, split sizes that do not add up, K or depth out of range,
 * a negative result length), which both must refuse with an error naming
 * the op that reads it. Skipped when the test data is not installed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kiln/kiln.h>

#include "support/oracle.h"

#define NODE_DIR "/usr/include/onnx/backend/test/data/node"

/* The MO text of node test `name`'s model (free it), or a skipped test. */
static char *node_text(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, name);
  if (access(path, R_OK) != 0)
    cr_skip_test("ONNX node test data not installed (%s; Debian: libonnx-testdata)", path);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_file(path, st);
  cr_assert_not_null(g, "%s: %s", name, kiln_status_message(st));
  char *text = kiln_graph_print(g, st);
  cr_assert_not_null(text, "%s: %s", name, kiln_status_message(st));
  kiln_graph_free(g);
  kiln_status_free(st);
  return text;
}

/* JIT and interpreter agree on `name` with data input `k` constant at each
 * of vals[n] (other inputs from the default generator). */
static void agree_for_each(const char *name, int k, const double *vals, int n) {
  char *text = node_text(name);
  for (int i = 0; i < n; i++) {
    oracle_gen gens[4] = {{0}, {0}, {0}, {0}};
    gens[k] = gen_const(vals[i]);
    char label[128];
    snprintf(label, sizeof label, "%s, input %d = %g", name, k, vals[i]);
    oracle_case c = {.label = label, .mlir = text, .gens = gens, .ngens = 4, .rtol = 1e-6,
                     .atol = 1e-6};
    ORACLE_ASSERT(&c);
  }
  free(text);
}

/* JIT and interpreter both refuse `name` with input k constant at v, each
 * message naming `word`. */
static void refused(const char *name, int k, double v, const char *word) {
  char *text = node_text(name);
  oracle_gen gens[4] = {{0}, {0}, {0}, {0}};
  gens[k] = gen_const(v);
  char label[128];
  snprintf(label, sizeof label, "%s, input %d = %g", name, k, v);
  oracle_case c = {.label = label, .mlir = text, .gens = gens, .ngens = 4};
  oracle_expect_both_fail(&c, word);
  free(text);
}

Test(onnx_data_axes, unsqueeze_at_every_axis) {
  /* x [3, 4, 5], axes [1]: the result's rank 4, the new axis anywhere */
  static const double A[] = {0, 1, 2, 3, -1, -2, -4};
  agree_for_each("test_unsqueeze_axis_0", 1, A, 7);
  refused("test_unsqueeze_axis_0", 1, 4, "reshape");
  refused("test_unsqueeze_axis_0", 1, -5, "reshape");
  /* two axes that name the same one */
  refused("test_unsqueeze_two_axes", 1, 1, "reshape");
}

Test(onnx_data_axes, squeeze_only_a_dim_of_one) {
  /* x [1, 3, 4, 5], axes [1] */
  static const double A[] = {0, -4};
  agree_for_each("test_squeeze", 1, A, 2);
  refused("test_squeeze", 1, 1, "reshape");  /* dim 3 */
  refused("test_squeeze", 1, 4, "reshape");  /* out of range */
  refused("test_squeeze", 1, -5, "reshape");
}

Test(onnx_data_axes, reduce_sum_along_each_axis) {
  /* data [3, 2, 2], axes [1], keepdims 1 and 0 */
  static const double A[] = {0, 1, 2, -1, -3};
  agree_for_each("test_reduce_sum_keepdims_random", 1, A, 5);
  agree_for_each("test_reduce_sum_do_not_keepdims_random", 1, A, 5);
  refused("test_reduce_sum_keepdims_random", 1, 3, "slice_tensor");
  refused("test_reduce_sum_do_not_keepdims_random", 1, -4, "slice_tensor");
}

Test(onnx_data_axes, cumsum_along_each_axis) {
  static const double A[] = {0, 1, -1, -2};
  agree_for_each("test_cumsum_2d_axis_0", 1, A, 4);
  refused("test_cumsum_2d_axis_0", 1, 2, "reshape");
  refused("test_cumsum_2d_axis_0", 1, -3, "reshape");
}

Test(onnx_data_axes, split_sizes_must_add_up) {
  /* input [6], split [2] */
  static const double S[] = {3};
  agree_for_each("test_split_variable_parts_1d", 1, S, 1);
  refused("test_split_variable_parts_1d", 1, 4, "slice_tensor");
  refused("test_split_variable_parts_1d", 1, -3, "slice_tensor");
}

Test(onnx_data_axes, top_k_of_every_k) {
  /* x [3, 4], K [1] along axis 1 */
  static const double K[] = {1, 2, 3, 4};
  agree_for_each("test_top_k", 1, K, 4);
  agree_for_each("test_top_k_smallest", 1, K, 4);
  refused("test_top_k", 1, 5, "slice_tensor");
  refused("test_top_k", 1, 0, "slice_tensor");
}

Test(onnx_data_axes, pad_by_run_time_pads) {
  /* x [1, 3, 4, 5], pads [8]: every pad 0, 1 or 3 (past the axis for
   * reflect); every pad -1 crops axis 0 (1 element) below 0 */
  static const double P[] = {0, 1, 3};
  agree_for_each("test_constant_pad", 1, P, 3);
  agree_for_each("test_edge_pad", 1, P, 3);
  agree_for_each("test_reflect_pad", 1, P, 3);
  refused("test_constant_pad", 1, -1, "range");
}

Test(onnx_data_axes, one_hot_of_a_run_time_depth) {
  static const double D[] = {1, 4, 11};
  agree_for_each("test_onehot_with_axis", 1, D, 3);
  agree_for_each("test_onehot_negative_indices", 1, D, 3);
  refused("test_onehot_with_axis", 1, 0, "range");
}

Test(onnx_data_axes, dropout_in_training_mode) {
  /* (x, ratio, training_mode): kiln's generator on both sides */
  static const double R[] = {0, 0.25, 0.5, 1};
  agree_for_each("test_training_dropout_zero_ratio_mask", 1, R, 4);
}
