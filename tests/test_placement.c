/* test_placement.c - devices in graph types and mo.transfer_to: a graph
 * that moves its input to gpu:0, computes there and returns one result on
 * the host and one on the device, run on simt-emu (results checked against
 * the same arithmetic in C; outputs left where the graph puts them, inputs
 * accepted from the host or the device); mo.transfer_to within the host on
 * the CPU model (a copy); the API builder; and the refusals: the CPU model
 * given values on a GPU, a device model given two GPUs or an op computed
 * on the host inside a placed graph, a transfer without a valid device. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kiln/kiln.h"

/* x (host) -> gpu:0; y = abs(x) * c (c a constant on gpu:0); outputs: y
 * copied back to the host, and y + 1 left on the device. */
static const char *placed_text =
    "mo.graph @placed<n>(%x: !mo.tensor<[n, 3], f32>) -> (!mo.tensor<[n, 3], f32>, "
    "!mo.tensor<[n, 3], f32, gpu:0>) {\n"
    "  %g = mo.transfer_to(%x) {device = \"gpu:0\"} : (!mo.tensor<[n, 3], f32>) -> "
    "!mo.tensor<[n, 3], f32, gpu:0>\n"
    "  %c = mo.constant {value = #M.dense_array<2.0, -1.0, 0.5> : tensor<3xf32>} : "
    "!mo.tensor<[3], f32, gpu:0>\n"
    "  %one = mo.constant {value = #M.dense_array<1.0> : tensor<1xf32>} : "
    "!mo.tensor<[1], f32, gpu:0>\n"
    "  %a = mo.abs(%g) : !mo.tensor<[n, 3], f32, gpu:0>\n"
    "  %y = mo.mul(%a, %c) : (!mo.tensor<[n, 3], f32, gpu:0>, !mo.tensor<[3], f32, gpu:0>) -> "
    "!mo.tensor<[n, 3], f32, gpu:0>\n"
    "  %z = mo.add(%y, %one) : (!mo.tensor<[n, 3], f32, gpu:0>, !mo.tensor<[1], f32, gpu:0>) -> "
    "!mo.tensor<[n, 3], f32, gpu:0>\n"
    "  %h = mo.transfer_to(%y) {device = \"cpu:0\"} : (!mo.tensor<[n, 3], f32, gpu:0>) -> "
    "!mo.tensor<[n, 3], f32>\n"
    "  mo.output %h, %z : !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], f32, gpu:0>\n"
    "}\n";

static kiln_graph *parse(const char *text, kiln_status *st) {
  return kiln_graph_parse(text, strlen(text), "placed.mlir", st);
}

static kiln_tensor *input(int64_t n) {
  int64_t shape[2] = {n, 3};
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL);
  cr_assert_not_null(t);
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < n * 3; i++) p[i] = (float)(i % 7) - 3.25f;
  return t;
}

static void check_outputs(const kiln_tensor *x, const kiln_tensor *h, const kiln_tensor *z) {
  static const float c[3] = {2.0f, -1.0f, 0.5f};
  const float *xp = kiln_tensor_data(x), *hp = kiln_tensor_data(h), *zp = kiln_tensor_data(z);
  cr_assert(hp && zp, "outputs must be on the host here");
  for (int64_t i = 0; i < kiln_tensor_numel(x); i++) {
    float y = fabsf(xp[i]) * c[i % 3];
    cr_assert_eq(hp[i], y, "h[%lld] = %g, expected %g", (long long)i, hp[i], y);
    cr_assert_eq(zp[i], y + 1.0f, "z[%lld] = %g, expected %g", (long long)i, zp[i], y + 1.0f);
  }
}

Test(placement, placed_graph_runs_on_emu_and_leaves_outputs_where_typed) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = parse(placed_text, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device *dev = kiln_device_open("simt-emu", st);
  cr_assert_not_null(dev, "%s", kiln_status_message(st));
  kiln_device_model *m = kiln_device_model_compile(dev, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  for (int64_t n = 5; n >= 1; n -= 4) { /* symbolic n: two sizes, one compile */
    kiln_tensor *x = input(n);
    kiln_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(kiln_device_model_execute(m, &x, 1, out, 2, st), 0, "%s",
                 kiln_status_message(st));
    cr_assert_null(kiln_tensor_device(out[0]), "%%h is typed cpu: a host tensor");
    cr_assert_eq(kiln_tensor_device(out[1]), dev, "%%z is typed gpu:0: left on the device");
    cr_assert_null(kiln_tensor_data(out[1]));
    kiln_tensor *z = kiln_tensor_copy_to(out[1], NULL, st);
    cr_assert_not_null(z, "%s", kiln_status_message(st));
    check_outputs(x, out[0], z);
    kiln_tensor_free(z);
    /* the same with the input already on the device and host tensors given
     * for both outputs (copied out of the device) */
    kiln_tensor *xd = kiln_tensor_copy_to(x, dev, st);
    cr_assert_not_null(xd, "%s", kiln_status_message(st));
    int64_t shape[2] = {n, 3};
    kiln_tensor *given[2] = {kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL),
                             kiln_tensor_new(KILN_FLOAT32, 2, shape, NULL)};
    cr_assert_eq(kiln_device_model_execute(m, &xd, 1, given, 2, st), 0, "%s",
                 kiln_status_message(st));
    check_outputs(x, given[0], given[1]);
    for (int i = 0; i < 2; i++) {
      kiln_tensor_free(out[i]);
      kiln_tensor_free(given[i]);
    }
    kiln_tensor_free(xd);
    kiln_tensor_free(x);
  }
  kiln_device_model_free(m);
  kiln_device_close(dev);
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(placement, cpu_model_refuses_values_on_a_gpu) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = parse(placed_text, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  cr_assert_null(kiln_model_compile(ctx, g, st));
  const char *msg = kiln_status_message(st);
  cr_assert(strstr(msg, "%g (line 2, mo.transfer_to) is on gpu:0") &&
                strstr(msg, "kiln_model_compile_on"),
            "%s", msg);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(placement, transfer_within_the_host_is_a_copy) {
  const char *text =
      "mo.graph @t(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>) {\n"
      "  %h = mo.transfer_to(%x) {device = \"cpu\"} : (!mo.tensor<[4], f32>) -> "
      "!mo.tensor<[4], f32>\n"
      "  %y = mo.add(%h, %x) : !mo.tensor<[4], f32>\n"
      "  mo.output %y : !mo.tensor<[4], f32>\n"
      "}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = parse(text, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t shape[1] = {4};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, shape, NULL);
  float *xp = kiln_tensor_data(x);
  for (int i = 0; i < 4; i++) xp[i] = (float)i * 1.5f - 2.0f;
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  const float *yp = kiln_tensor_data(y);
  for (int i = 0; i < 4; i++) cr_assert_eq(yp[i], 2.0f * xp[i]);
  kiln_tensor_free(y);
  kiln_tensor_free(x);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(placement, builder_takes_the_device_attribute) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("b", st);
  const char *dims[1] = {"8"};
  kiln_value *x = kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, dims, st);
  cr_assert_not_null(x, "%s", kiln_status_message(st));
  kiln_value *d = kiln_graph_add_op(g, "mo.transfer_to", &x, 1, "{device = \"gpu:0\"}", NULL, st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  kiln_value *r = kiln_graph_add_op(g, "mo.relu", &d, 1, NULL, NULL, st);
  cr_assert_not_null(r, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_graph_set_outputs(g, &r, 1, NULL, st), 0, "%s", kiln_status_message(st));
  char *text = kiln_graph_print(g, st);
  cr_assert_not_null(text);
  cr_assert(strstr(text, "mo.relu(%") && strstr(text, "!mo.tensor<[8], f32, gpu:0>"), "%s", text);
  free(text);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Graph text with one line varied; the parse (verify) or the device model
 * compile must fail with a message containing `want`. */
static void refused(const char *text, bool at_parse, const char *want) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = parse(text, st);
  if (at_parse) {
    cr_assert_null(g, "expected a parse error for:\n%s", text);
  } else {
    cr_assert_not_null(g, "%s", kiln_status_message(st));
    kiln_device *dev = kiln_device_open("simt-emu", st);
    cr_assert_not_null(dev);
    cr_assert_null(kiln_device_model_compile(dev, g, st));
    kiln_device_close(dev);
  }
  cr_assert(strstr(kiln_status_message(st), want), "expected '%s' in: %s", want,
            kiln_status_message(st));
  kiln_graph_free(g);
  kiln_status_free(st);
}

Test(placement, refusals_say_what_and_where) {
  refused("mo.graph @t(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32, gpu:0>) {\n"
          "  %g = mo.transfer_to(%x) : (!mo.tensor<[2], f32>) -> !mo.tensor<[2], f32, gpu:0>\n"
          "  mo.output %g : !mo.tensor<[2], f32, gpu:0>\n}\n",
          true, "mo.transfer_to requires attribute 'device'");
  refused("mo.graph @t(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32, gpu:0>) {\n"
          "  %g = mo.transfer_to(%x) {device = \"tpu:0\"} : (!mo.tensor<[2], f32>) -> "
          "!mo.tensor<[2], f32, gpu:0>\n"
          "  mo.output %g : !mo.tensor<[2], f32, gpu:0>\n}\n",
          true, "attribute 'device' of mo.transfer_to must be");
  refused("mo.graph @t(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32, gpu:1>) {\n"
          "  %g = mo.transfer_to(%x) {device = \"gpu:0\"} : (!mo.tensor<[2], f32>) -> "
          "!mo.tensor<[2], f32, gpu:1>\n"
          "  mo.output %g : !mo.tensor<[2], f32, gpu:1>\n}\n",
          true, "is declared as !mo.tensor<[2], f32, gpu:1> but is !mo.tensor<[2], f32, gpu:0>");
  refused("mo.graph @t(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32, gpu:0>, "
          "!mo.tensor<[2], f32, gpu:1>) {\n"
          "  %a = mo.transfer_to(%x) {device = \"gpu:0\"} : (!mo.tensor<[2], f32>) -> "
          "!mo.tensor<[2], f32, gpu:0>\n"
          "  %b = mo.transfer_to(%x) {device = \"gpu:1\"} : (!mo.tensor<[2], f32>) -> "
          "!mo.tensor<[2], f32, gpu:1>\n"
          "  mo.output %a, %b : !mo.tensor<[2], f32, gpu:0>, !mo.tensor<[2], f32, gpu:1>\n}\n",
          false, "is on gpu:1: a device model runs on one device (simt-emu)");
  refused("mo.graph @t(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32, gpu:0>) {\n"
          "  %n = mo.negate(%x) : !mo.tensor<[2], f32>\n"
          "  %a = mo.transfer_to(%n) {device = \"gpu:0\"} : (!mo.tensor<[2], f32>) -> "
          "!mo.tensor<[2], f32, gpu:0>\n"
          "  mo.output %a : !mo.tensor<[2], f32, gpu:0>\n}\n",
          false, "%n (line 2, mo.negate) is computed on cpu:0 in a graph placed on gpu:0");
}
