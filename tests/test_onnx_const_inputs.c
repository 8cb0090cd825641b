/* test_onnx_const_inputs.c - ONNX node tests (Debian libonnx-testdata)
 * whose second and later inputs are data kiln needs at import, made
 * initializers: Resize / Upsample scales and sizes, ReduceSum / Squeeze /
 * Unsqueeze axes, Split sizes, Tile repeats, Pad pads, CumSum axes,
 * OneHot depths and values, MaxUnpool's output_shape, STFT's frame_step and
 * frame_length (and window). ONNX's tests pass them as
 * graph inputs, which kiln reads before the graph runs (test_onnx_node
 * passes those). Here every graph input after X becomes an initializer
 * holding the test's data, the way a deployed (PyTorch-exported) model
 * carries them, and every output must match ONNX's (rtol 1e-3, atol 1e-5 as
 * test_onnx_node; integers exactly). The upsampling ones also run with X's dims made symbols
 * (whole scales fold into dim * k). A scale of 0.6 on a symbolic dim
 * known at import stays refused, with a message saying so.
 * Skips when the test data is not installed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "src/onnx/onnx_io.h"
#include "src/rt.h"
#include "support/under_test.h"

#define NODE_DIR "/usr/include/onnx/backend/test/data/node"

static const char *const PASSING[] = {
    "test_resize_downsample_scales_cubic",
    "test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
    "test_resize_downsample_scales_cubic_align_corners",
    "test_resize_downsample_scales_linear",
    "test_resize_downsample_scales_linear_align_corners",
    "test_resize_downsample_scales_nearest",
    "test_resize_downsample_sizes_cubic",
    "test_resize_downsample_sizes_linear_pytorch_half_pixel",
    "test_resize_downsample_sizes_nearest",
    "test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn",
    "test_resize_tf_crop_and_resize",
    "test_resize_upsample_scales_cubic",
    "test_resize_upsample_scales_cubic_A_n0p5_exclude_outside",
    "test_resize_upsample_scales_cubic_align_corners",
    "test_resize_upsample_scales_cubic_asymmetric",
    "test_resize_upsample_scales_linear",
    "test_resize_upsample_scales_linear_align_corners",
    "test_resize_upsample_scales_nearest",
    "test_resize_upsample_sizes_cubic",
    "test_resize_upsample_sizes_nearest",
    "test_resize_upsample_sizes_nearest_ceil_half_pixel",
    "test_resize_upsample_sizes_nearest_floor_align_corners",
    "test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
    "test_upsample_nearest",
    "test_reduce_sum_default_axes_keepdims_example",
    "test_reduce_sum_default_axes_keepdims_random",
    "test_reduce_sum_do_not_keepdims_example",
    "test_reduce_sum_do_not_keepdims_random",
    "test_reduce_sum_empty_axes_input_noop_example",
    "test_reduce_sum_empty_axes_input_noop_random",
    "test_reduce_sum_keepdims_example",
    "test_reduce_sum_keepdims_random",
    "test_reduce_sum_negative_axes_keepdims_example",
    "test_reduce_sum_negative_axes_keepdims_random",
    "test_squeeze",
    "test_squeeze_negative_axes",
    "test_unsqueeze_axis_0",
    "test_unsqueeze_axis_1",
    "test_unsqueeze_axis_2",
    "test_unsqueeze_negative_axes",
    "test_unsqueeze_three_axes",
    "test_unsqueeze_two_axes",
    "test_unsqueeze_unsorted_axes",
    "test_split_variable_parts_1d",
    "test_split_variable_parts_2d",
    "test_split_variable_parts_default_axis",
    "test_split_zero_size_splits",
    "test_tile",
    "test_tile_precomputed",
    "test_constant_pad",
    "test_edge_pad",
    "test_reflect_pad",
    "test_cumsum_2d_axis_0",
    "test_cumsum_2d_axis_1",
    "test_cumsum_2d_negative_axis",
    "test_onehot_negative_indices",
    "test_onehot_with_axis",
    "test_onehot_with_negative_axis",
    "test_onehot_without_axis",
    "test_maxunpool_export_with_output_shape",
    "test_stft",
    "test_stft_with_window",
};
#define NPASSING (int)(sizeof PASSING / sizeof PASSING[0])
#define MAX_OUT 8

static Onnx__TensorProto *read_proto(const char *path) {
  size_t len = 0;
  char *buf = rt_read_file(path, NULL, &len, NULL);
  if (!buf) return NULL;
  Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, (const uint8_t *)buf);
  free(buf);
  return t;
}

/* The dims of value vi named d0, d1, ... (prefix p), each static one's
 * value saved in saved[]; undo puts the values back. */
static void symbolic_dims(Onnx__ValueInfoProto *vi, char p, int64_t *saved, bool undo) {
  static char names[2][8][3];
  Onnx__TensorShapeProto *sh =
      vi && vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
              vi->type->tensor_type
          ? vi->type->tensor_type->shape
          : NULL;
  for (size_t k = 0; sh && k < sh->n_dim && k < 8; k++) {
    Onnx__TensorShapeProto__Dimension *d = sh->dim[k];
    if (undo) {
      if (saved[k] < 0) continue;
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = saved[k];
      continue;
    }
    saved[k] = -1;
    if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) continue;
    saved[k] = d->dim_value;
    char *nm = names[p == 'o'][k];
    nm[0] = p, nm[1] = (char)('0' + k), nm[2] = 0;
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    d->dim_param = nm;
  }
}

/* The test's model with graph inputs 1.. made initializers (from
 * test_data_set_0), packed into a malloc'd buffer (*len); NULL on failure.
 * symbolic: the dims of X and Y are symbols. */
static uint8_t *model_with_constants(const char *dir, bool symbolic, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%.900s/model.onnx", dir);
  size_t n = 0;
  char *buf = rt_read_file(path, NULL, &n, NULL);
  if (!buf) return NULL;
  Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, (const uint8_t *)buf);
  free(buf);
  if (!mp || !mp->graph || mp->graph->n_input < 1) {
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    return NULL;
  }
  Onnx__GraphProto *g = mp->graph;
  size_t nin = g->n_input, ninit = g->n_initializer, nextra = nin - 1;
  Onnx__TensorProto **inits = calloc(ninit + nextra + 1, sizeof *inits);
  Onnx__TensorProto **extra = calloc(nextra + 1, sizeof *extra);
  char **own_names = calloc(nextra + 1, sizeof *own_names);
  uint8_t *out = NULL;
  bool ok = inits && extra && own_names;
  for (size_t i = 0; ok && i < ninit; i++) inits[i] = g->initializer[i];
  for (size_t i = 0; ok && i < nextra; i++) {
    snprintf(path, sizeof path, "%.900s/test_data_set_0/input_%zu.pb", dir, i + 1);
    ok = (extra[i] = read_proto(path)) != NULL;
    if (ok) {
      own_names[i] = extra[i]->name;
      extra[i]->name = g->input[i + 1]->name; /* borrowed, restored below */
      inits[ninit + i] = extra[i];
    }
  }
  int64_t saved_in[8], saved_out[8];
  if (ok && symbolic) {
    symbolic_dims(g->input[0], 'd', saved_in, false);
    symbolic_dims(g->n_output ? g->output[0] : NULL, 'o', saved_out, false);
  }
  if (ok) {
    Onnx__TensorProto **old_init = g->initializer;
    g->initializer = inits;
    g->n_initializer = ninit + nextra;
    g->n_input = 1;
    *len = onnx__model_proto__get_packed_size(mp);
    if ((out = malloc(*len ? *len : 1))) onnx__model_proto__pack(mp, out);
    g->initializer = old_init;
    g->n_initializer = ninit;
    g->n_input = nin;
  }
  if (ok && symbolic) {
    symbolic_dims(g->input[0], 'd', saved_in, true);
    symbolic_dims(g->n_output ? g->output[0] : NULL, 'o', saved_out, true);
  }
  for (size_t i = 0; extra && i < nextra; i++)
    if (extra[i]) {
      extra[i]->name = own_names[i];
      onnx__tensor_proto__free_unpacked(extra[i], NULL);
    }
  free(extra);
  free(own_names);
  free(inits);
  onnx__model_proto__free_unpacked(mp, NULL);
  return out;
}

static bool same(const kiln_tensor *got, const kiln_tensor *want, char *why, size_t cap) {
  kiln_dtype dt = kiln_tensor_dtype(got);
  int rank = kiln_tensor_rank(got);
  if (dt != kiln_tensor_dtype(want) || rank != kiln_tensor_rank(want) ||
      memcmp(kiln_tensor_shape(got), kiln_tensor_shape(want), (size_t)rank * sizeof(int64_t)) !=
          0) {
    snprintf(why, cap, "dtype or shape differs");
    return false;
  }
  for (int64_t i = 0; i < kiln_tensor_numel(got); i++) {
    double a, b;
    if (dt == KILN_FLOAT32) {
      a = ((const float *)kiln_tensor_data(got))[i];
      b = ((const float *)kiln_tensor_data(want))[i];
    } else if (dt == KILN_FLOAT64) {
      a = ((const double *)kiln_tensor_data(got))[i];
      b = ((const double *)kiln_tensor_data(want))[i];
    } else { /* integers and bools: bit for bit */
      size_t es = kiln_dtype_size(dt);
      if (memcmp((const char *)kiln_tensor_data(got) + (size_t)i * es,
                 (const char *)kiln_tensor_data(want) + (size_t)i * es, es) != 0) {
        snprintf(why, cap, "element %lld differs (dtype %d)", (long long)i, (int)dt);
        return false;
      }
      continue;
    }
    if (!(fabs(a - b) <= 1e-5 + 1e-3 * fabs(b))) {
      snprintf(why, cap, "element %lld: %.9g, expected %.9g", (long long)i, a, b);
      return false;
    }
  }
  return true;
}

/* Import, compile and run test `name` with constants; 0, or -1 with why;
 * *code the import's status code. */
static int run_one(kiln_context *ctx, const char *name, bool symbolic, kiln_code *code, char *why,
                   size_t cap) {
  char dir[512], path[1024];
  snprintf(dir, sizeof dir, "%s/%s", NODE_DIR, name);
  size_t len = 0;
  uint8_t *model = model_with_constants(dir, symbolic, &len);
  *code = KILN_OK;
  if (!model) {
    snprintf(why, cap, "cannot read the test");
    return -1;
  }
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_memory(model, len, st);
  free(model);
  kiln_model *m = NULL;
  kiln_tensor *in = NULL, *want[MAX_OUT] = {NULL}, *out[MAX_OUT] = {NULL};
  int rc = -1, nout = 0;
  if (!g) {
    *code = kiln_status_code(st);
    snprintf(why, cap, "import: %s", kiln_status_message(st));
    goto done;
  }
  if (!(m = under_test_compile(ctx, g, st))) {
    snprintf(why, cap, "compile: %s", kiln_status_message(st));
    goto done;
  }
  if ((nout = kiln_model_num_outputs(m)) > MAX_OUT) {
    snprintf(why, cap, "%d outputs (the harness reads %d)", nout, MAX_OUT);
    nout = 0;
    goto done;
  }
  snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", dir);
  in = rt_onnx_tensor_read(path, NULL, st);
  for (int k = 0; in && k < nout; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", dir, k);
    if (!(want[k] = rt_onnx_tensor_read(path, NULL, st))) break;
  }
  if (!in || (nout && !want[nout - 1])) {
    snprintf(why, cap, "test data: %s", kiln_status_message(st));
    goto done;
  }
  if (kiln_model_execute(m, &in, 1, out, nout, st) < 0) {
    snprintf(why, cap, "execute: %s", kiln_status_message(st));
    goto done;
  }
  rc = 0;
  for (int k = 0; k < nout && rc == 0; k++) rc = same(out[k], want[k], why, cap) ? 0 : -1;
done:
  kiln_tensor_free(in);
  for (int k = 0; k < nout; k++) {
    kiln_tensor_free(want[k]);
    kiln_tensor_free(out[k]);
  }
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_status_free(st);
  return rc;
}

static kiln_context *context_or_skip(void) {
  char probe[600];
  snprintf(probe, sizeof probe, "%s/%s/model.onnx", NODE_DIR, PASSING[0]);
  FILE *f = fopen(probe, "rb");
  if (!f)
    cr_skip_test("ONNX node test data not installed (%s; Debian: libonnx-testdata)", NODE_DIR);
  fclose(f);
  kiln_context *ctx = kiln_context_new(NULL);
  cr_assert_not_null(ctx);
  return ctx;
}

Test(onnx_const_inputs, node_tests_with_constant_inputs) {
  kiln_context *ctx = context_or_skip();
  for (int i = 0; i < NPASSING; i++) {
    char why[2048] = "";
    kiln_code code;
    cr_expect_eq(run_one(ctx, PASSING[i], false, &code, why, sizeof why), 0, "%s: %s", PASSING[i],
                 why);
  }
  kiln_context_free(ctx);
}

/* X of symbolic dims: whole scales fold into dim * k (a model that takes any
 * image size) */
Test(onnx_const_inputs, whole_scales_on_symbolic_dims) {
  kiln_context *ctx = context_or_skip();
  static const char *const tests[] = {
      "test_resize_upsample_scales_nearest", "test_resize_upsample_scales_linear",
      "test_resize_upsample_scales_cubic", "test_resize_upsample_scales_cubic_asymmetric",
      "test_upsample_nearest"};
  for (int i = 0; i < 5; i++) {
    char why[2048] = "";
    kiln_code code;
    cr_expect_eq(run_one(ctx, tests[i], true, &code, why, sizeof why), 0, "%s: %s", tests[i], why);
  }
  /* a scale of 0.6 on a symbolic dim: refused, naming it */
  char why[2048] = "";
  kiln_code code;
  cr_expect_neq(run_one(ctx, "test_resize_downsample_scales_linear", true, &code, why, sizeof why),
                0);
  cr_expect_eq(code, KILN_ERR_UNSUPPORTED, "%s", why);
  cr_expect(strstr(why, "scale 0.6 on the symbolic axis 2"), "%s", why);
  kiln_context_free(ctx);
}
