/* test_device_tensor.c - tensors in a device's memory (kiln/device.h,
 * "tensors on a device"), on simt-emu: allocation, copies host -> device ->
 * device -> host with the bytes checked, the CPU device giving host
 * tensors; a device model fed device inputs and writing device outputs,
 * against the same model fed host tensors; capture / replay with device
 * tensors; and the errors: a device tensor given to the CPU runtime
 * (execute input, output, weight), a tensor of another device handle, and
 * copies from a tensor with no data. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

#define HAS(s, sub) cr_assert(strstr((s), (sub)), "'%s' lacks '%s'", (s), (sub))

static kiln_device *emu(kiln_status *st) {
  kiln_device *d = kiln_device_open("simt-emu", st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  return d;
}

static kiln_tensor *host_iota(int rank, const int64_t *shape, float scale) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, NULL);
  cr_assert_not_null(t);
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) p[i] = (float)((i * 37) % 101) * scale - 1.f;
  return t;
}

static void expect_same_bytes(const kiln_tensor *a, const kiln_tensor *b) {
  cr_assert_eq(kiln_tensor_nbytes(a), kiln_tensor_nbytes(b));
  cr_assert_eq(memcmp(kiln_tensor_data(a), kiln_tensor_data(b), kiln_tensor_nbytes(a)), 0);
}

Test(device_tensor, round_trip_through_the_device) {
  kiln_status *st = kiln_status_new();
  kiln_device *d = emu(st);
  int64_t shape[] = {7, 5};
  kiln_tensor *h = host_iota(2, shape, 0.25f);
  kiln_tensor *on = kiln_tensor_copy_to(h, d, st);
  cr_assert_not_null(on, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_device(on), d);
  cr_assert_null(kiln_tensor_data(on), "a device tensor has no host data");
  cr_assert_neq(kiln_tensor_devptr(on), 0);
  cr_assert_eq(kiln_tensor_rank(on), 2);
  cr_assert_eq(kiln_tensor_shape(on)[1], 5);
  kiln_tensor *twice = kiln_tensor_copy_to(on, d, st); /* within the device */
  cr_assert_not_null(twice, "%s", kiln_status_message(st));
  cr_assert_neq(kiln_tensor_devptr(twice), kiln_tensor_devptr(on));
  kiln_tensor *back = kiln_tensor_copy_to(twice, NULL, st);
  cr_assert_not_null(back, "%s", kiln_status_message(st));
  cr_assert_null(kiln_tensor_device(back));
  expect_same_bytes(h, back);
  /* the CPU device's memory is host memory */
  kiln_device *cpu = kiln_device_open("cpu", st);
  cr_assert_not_null(cpu);
  kiln_tensor *c = kiln_tensor_new_on(cpu, KILN_FLOAT32, 2, shape, st);
  cr_assert_not_null(c);
  cr_assert_null(kiln_tensor_device(c));
  cr_assert_not_null(kiln_tensor_data(c));
  kiln_tensor *c2 = kiln_tensor_copy_to(on, cpu, st);
  expect_same_bytes(h, c2);
  /* zero elements */
  int64_t empty[] = {0, 3};
  kiln_tensor *z = kiln_tensor_new_on(d, KILN_FLOAT32, 2, empty, st);
  cr_assert_not_null(z, "%s", kiln_status_message(st));
  kiln_tensor *zb = kiln_tensor_copy_to(z, NULL, st);
  cr_assert_not_null(zb);
  cr_assert_eq(kiln_tensor_numel(zb), 0);
  kiln_tensor *tensors[] = {h, on, twice, back, c, c2, z, zb};
  for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) kiln_tensor_free(tensors[i]);
  kiln_device_close(cpu);
  kiln_device_close(d);
  kiln_status_free(st);
}

#define G                                                                                      \
  "mo.graph @g<n>(%x: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 4], f32>) {\n"              \
  "  %w = mo.constant.external {name = \"w\"} : !mo.tensor<[8, 4], f32>\n"                     \
  "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8, 4], f32>) -> "         \
  "!mo.tensor<[n, 4], f32>\n"                                                                   \
  "  %y = mo.tanh(%m) : !mo.tensor<[n, 4], f32>\n"                                             \
  "  mo.output %y : !mo.tensor<[n, 4], f32>\n"                                                 \
  "}\n"

Test(device_tensor, device_model_reads_and_writes_device_tensors) {
  kiln_status *st = kiln_status_new();
  kiln_device *d = emu(st);
  kiln_graph *g = kiln_graph_parse(G, strlen(G), "g", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device_model *m = kiln_device_model_compile(d, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  int64_t ws[] = {8, 4}, xs[] = {9, 8}, ys[] = {9, 4};
  kiln_tensor *w = host_iota(2, ws, 0.02f), *x = host_iota(2, xs, 0.03f);
  kiln_tensor *wd = kiln_tensor_copy_to(w, d, st), *xd = kiln_tensor_copy_to(x, d, st);
  cr_assert(wd && xd);
  cr_assert_eq(kiln_device_model_bind_weight(m, "w", wd, st), 0, "%s", kiln_status_message(st));
  /* host in, host out: the reference */
  kiln_tensor *yh = NULL;
  cr_assert_eq(kiln_device_model_execute(m, &x, 1, &yh, 1, st), 0, "%s", kiln_status_message(st));
  /* device in, device out */
  kiln_tensor *yd = kiln_tensor_new_on(d, KILN_FLOAT32, 2, ys, st);
  cr_assert_eq(kiln_device_model_execute(m, &xd, 1, &yd, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *yb = kiln_tensor_copy_to(yd, NULL, st);
  expect_same_bytes(yh, yb);
  /* capture with device tensors, replay with new device data */
  kiln_tensor *yc = kiln_tensor_new_on(d, KILN_FLOAT32, 2, ys, st);
  cr_assert_eq(kiln_device_model_capture(m, 7, &xd, 1, &yc, 1, st), 0, "%s",
               kiln_status_message(st));
  kiln_tensor *x2 = host_iota(2, xs, -0.01f), *x2d = kiln_tensor_copy_to(x2, d, st);
  kiln_tensor *y2h = NULL;
  cr_assert_eq(kiln_device_model_execute(m, &x2, 1, &y2h, 1, st), 0);
  cr_assert_eq(kiln_device_model_replay(m, 7, &x2d, 1, &yc, 1, st), 0, "%s",
               kiln_status_message(st));
  kiln_tensor *y2b = kiln_tensor_copy_to(yc, NULL, st);
  expect_same_bytes(y2h, y2b);
  kiln_tensor *all[] = {w, x, wd, xd, yh, yd, yb, yc, x2, x2d, y2h, y2b};
  kiln_device_model_free(m);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_tensor_free(all[i]);
  kiln_graph_free(g);
  kiln_device_close(d);
  kiln_status_free(st);
}

Test(device_tensor, wrong_place_is_a_clear_error) {
  kiln_status *st = kiln_status_new();
  kiln_device *d = emu(st), *other = emu(st);
  kiln_graph *g = kiln_graph_parse(G, strlen(G), "g", st);
  cr_assert_not_null(g);
  int64_t ws[] = {8, 4}, xs[] = {2, 8}, ys[] = {2, 4};
  kiln_tensor *w = host_iota(2, ws, 0.02f), *x = host_iota(2, xs, 0.03f);
  kiln_tensor *xd = kiln_tensor_copy_to(x, d, st), *wd = kiln_tensor_copy_to(w, d, st);
  kiln_tensor *yd = kiln_tensor_new_on(d, KILN_FLOAT32, 2, ys, st);
  /* the CPU runtime takes host tensors */
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *cpu = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(cpu, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_bind_weight(cpu, "w", wd, st), -1);
  HAS(kiln_status_message(st), "weight 'w' lives on simt-emu");
  cr_assert_eq(kiln_model_bind_weight(cpu, "w", w, st), 0);
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(cpu, &xd, 1, &y, 1, st), -1);
  HAS(kiln_status_message(st), "input 0 (x) lives on simt-emu");
  HAS(kiln_status_message(st), "kiln_tensor_copy_to");
  cr_assert_null(y);
  cr_assert_eq(kiln_model_execute(cpu, &x, 1, &yd, 1, st), -1);
  HAS(kiln_status_message(st), "output 0 (y) lives on simt-emu");
  /* a device model takes its own device's tensors only */
  kiln_device_model *m = kiln_device_model_compile(other, g, st);
  cr_assert_not_null(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_device_model_bind_weight(m, "w", wd, st), -1);
  HAS(kiln_status_message(st), "another device handle");
  cr_assert_eq(kiln_device_model_bind_weight(m, "w", w, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_device_model_execute(m, &xd, 1, &y, 1, st), -1);
  HAS(kiln_status_message(st), "input 0 (x) lives on simt-emu (another device handle)");
  cr_assert_eq(kiln_device_model_execute(m, &x, 1, &yd, 1, st), -1);
  HAS(kiln_status_message(st), "output 0");
  /* copying between two device handles goes through the host */
  kiln_tensor *xo = kiln_tensor_copy_to(xd, other, st);
  cr_assert_not_null(xo, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_device_model_execute(m, &xo, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *yref = NULL;
  cr_assert_eq(kiln_model_execute(cpu, &x, 1, &yref, 1, st), 0);
  const float *a = kiln_tensor_data(y), *b = kiln_tensor_data(yref);
  for (int i = 0; i < 8; i++) cr_assert_float_eq(a[i], b[i], 1e-5f);
  /* bad arguments */
  cr_assert_null(kiln_tensor_copy_to(NULL, d, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_INVALID_ARGUMENT);
  cr_assert_null(kiln_tensor_device(NULL));
  cr_assert_eq(kiln_tensor_devptr(x), 0);
  kiln_tensor *all[] = {w, x, xd, wd, yd, y, xo, yref};
  kiln_device_model_free(m);
  kiln_model_free(cpu);
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kiln_tensor_free(all[i]);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_device_close(other);
  kiln_device_close(d);
  kiln_status_free(st);
}
