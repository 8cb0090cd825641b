/* test_device.c - the device layer (kiln/device.h, src/device*.c): spec
 * parsing, host memory, the no-GPU errors of cuda / hip (or, on a machine
 * with a GPU, a memory round trip), and simt-emu running hand-written SIMT
 * kernels (jit/simt_abi.h): grid-stride loops over sizes that are not a
 * multiple of the block, shared-memory block reductions with barriers, 3-D
 * ids, and the launch errors (barrier divergence, oversized blocks). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit/simt_abi.h"
#include "kiln/kiln.h"
#include "src/device.h"

static kiln_status *st;
static void setup(void) { st = kiln_status_new(); }
static void teardown(void) { kiln_status_free(st); }
TestSuite(device, .init = setup, .fini = teardown);

Test(device, cpu_memory_round_trip) {
  kiln_device *d = kiln_device_open("cpu", st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  cr_expect_str_eq(kiln_device_label(d), "cpu");
  cr_expect_eq(kiln_device_get_kind(d), KILN_DEVICE_CPU);
  cr_expect(strlen(kiln_device_description(d)) > 0);
  float src[100], dst[100];
  for (int i = 0; i < 100; i++) src[i] = (float)i * 0.5f;
  kiln_devptr p = 0;
  cr_assert_eq(kiln_device_alloc(d, sizeof src, &p, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_device_copy_to(d, p, src, sizeof src, st), 0);
  cr_assert_eq(kiln_device_copy_from(d, dst, p, sizeof dst, st), 0);
  cr_expect_eq(memcmp(src, dst, sizeof src), 0);
  cr_expect_eq(kiln_device_synchronize(d, st), 0);
  kiln_device_free(d, p);
  kiln_device_close(d);
  kiln_device_close(NULL);
}

static void expect_bad_spec(const char *spec, const char *needle, kiln_code code) {
  kiln_device *d = kiln_device_open(spec, st);
  cr_expect_null(d, "'%s' opened", spec ? spec : "(null)");
  kiln_device_close(d);
  cr_expect_eq(kiln_status_code(st), code, "'%s': code %d", spec ? spec : "(null)",
               (int)kiln_status_code(st));
  cr_expect(strstr(kiln_status_message(st), needle), "'%s': %s", spec ? spec : "(null)",
            kiln_status_message(st));
}

Test(device, bad_specs_say_what) {
  expect_bad_spec(NULL, "empty device name", KILN_ERR_INVALID_ARGUMENT);
  expect_bad_spec("", "empty device name", KILN_ERR_INVALID_ARGUMENT);
  expect_bad_spec("tpu:0", "unknown device 'tpu:0'", KILN_ERR_INVALID_ARGUMENT);
  expect_bad_spec("cuda:x", "ordinal", KILN_ERR_INVALID_ARGUMENT);
  expect_bad_spec("cuda:-1", "ordinal", KILN_ERR_INVALID_ARGUMENT);
  expect_bad_spec("cuda:1x", "ordinal", KILN_ERR_INVALID_ARGUMENT);
  expect_bad_spec("cpu:1", "one cpu device", KILN_ERR_NOT_FOUND);
  cr_expect_eq(kiln_device_count((kiln_device_kind)42, st), -1);
  cr_expect_str_eq(kiln_device_kind_name(KILN_DEVICE_SIMT_EMU), "simt-emu");
  cr_expect_null(kiln_device_kind_name((kiln_device_kind)42));
}

/* cuda / hip: where the machine has none, opening says why; where it has
 * one, memory goes there and back. */
static void gpu_kind(kiln_device_kind kind, const char *spec, const char *lib) {
  int n = kiln_device_count(kind, st);
  if (n == 0) {
    cr_expect_eq(kiln_status_code(st), KILN_ERR_NOT_FOUND);
    char why[512];
    snprintf(why, sizeof why, "%s", kiln_status_message(st));
    cr_expect(strlen(why) > 0, "count 0 without a reason");
    kiln_device *d = kiln_device_open(spec, st);
    cr_expect_null(d);
    kiln_device_close(d);
    cr_expect_eq(kiln_status_code(st), KILN_ERR_NOT_FOUND);
    cr_expect(strstr(kiln_status_message(st), spec), "%s", kiln_status_message(st));
    cr_expect(strstr(kiln_status_message(st), why), "%s", kiln_status_message(st));
    if (strstr(why, "cannot be opened"))
      cr_expect(strstr(why, lib), "%s", why); /* names the library it looked for */
    cr_log_info("%s: no device here (%s): memory round trip skipped", spec, why);
    return;
  }
  kiln_device *d = kiln_device_open(spec, st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  int32_t src[257], dst[257];
  for (int i = 0; i < 257; i++) src[i] = i * 7 - 3;
  kiln_devptr p = 0;
  cr_assert_eq(kiln_device_alloc(d, sizeof src, &p, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_device_copy_to(d, p, src, sizeof src, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_device_copy_from(d, dst, p, sizeof dst, st), 0, "%s",
               kiln_status_message(st));
  cr_expect_eq(memcmp(src, dst, sizeof src), 0);
  kiln_device_free(d, p);
  char beyond[32];
  snprintf(beyond, sizeof beyond, "%.*s:%d", (int)(strchr(spec, ':') - spec), spec, n);
  kiln_device_close(d);
  d = kiln_device_open(beyond, st);
  cr_expect_null(d);
  kiln_device_close(d);
  cr_expect(strstr(kiln_status_message(st), "no such device"), "%s", kiln_status_message(st));
}

Test(device, cuda_absent_or_round_trip) { gpu_kind(KILN_DEVICE_CUDA, "cuda:0", "libcuda.so.1"); }
Test(device, hip_absent_or_round_trip) { gpu_kind(KILN_DEVICE_HIP, "hip:0", "libamdhip64"); }

/* ---- simt-emu ---- */

/* y[i] = x[i] * 2 + 1 over n elements, grid-stride. params: x, y, n. */
static void k_axpb(void **params, jit_simt_thread *t) {
  const float *x = *(const float **)params[0];
  float *y = *(float **)params[1];
  int64_t n = *(const int64_t *)params[2];
  int64_t stride = (int64_t)t->ntid[0] * t->nctaid[0];
  for (int64_t i = (int64_t)t->ctaid[0] * t->ntid[0] + t->tid[0]; i < n; i += stride)
    y[i] = x[i] * 2 + 1;
}

/* out[block] = sum of x over the block's chunk of ntid * per elements,
 * through a shared-memory tree with barriers (blockDim a power of two). */
static void k_block_sum(void **params, jit_simt_thread *t) {
  const double *x = *(const double **)params[0];
  double *out = *(double **)params[1];
  int64_t n = *(const int64_t *)params[2];
  uint32_t b = t->ctaid[1] * t->nctaid[0] + t->ctaid[0];
  uint32_t nt = t->ntid[0];
  int64_t chunk = (n + t->nctaid[0] * t->nctaid[1] - 1) / (t->nctaid[0] * t->nctaid[1]);
  int64_t lo = (int64_t)b * chunk, hi = lo + chunk < n ? lo + chunk : n;
  double acc = 0;
  for (int64_t i = lo + t->tid[0]; i < hi; i += nt) acc += x[i];
  double *sh = t->shared;
  sh[t->tid[0]] = acc;
  t->barrier(t);
  for (uint32_t s = nt / 2; s > 0; s /= 2) {
    if (t->tid[0] < s) sh[t->tid[0]] += sh[t->tid[0] + s];
    t->barrier(t);
  }
  if (t->tid[0] == 0) out[b] = sh[0];
}

/* ids[global linear id] = global linear id + 1, over a 3-D grid of 3-D blocks. */
static void k_ids(void **params, jit_simt_thread *t) {
  int32_t *ids = *(int32_t **)params[0];
  uint32_t bx = t->ntid[0], by = t->ntid[1], bz = t->ntid[2];
  uint32_t block = (t->ctaid[2] * t->nctaid[1] + t->ctaid[1]) * t->nctaid[0] + t->ctaid[0];
  uint32_t local = (t->tid[2] * by + t->tid[1]) * bx + t->tid[0];
  ids[block * bx * by * bz + local] = (int32_t)(block * bx * by * bz + local) + 1;
}

/* Odd threads leave before the barrier the even ones wait at. */
static void k_diverge(void **params, jit_simt_thread *t) {
  (void)params;
  if (t->tid[0] % 2) return;
  t->barrier(t);
}

static kiln_device *emu(void) {
  kiln_device *d = kiln_device_open("simt-emu", st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_device_get_kind(d), KILN_DEVICE_SIMT_EMU);
  return d;
}

Test(device, emu_grid_stride_odd_sizes) {
  kiln_device *d = emu();
  int64_t sizes[] = {1, 127, 128, 129, 1000, 4099};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int64_t n = sizes[s];
    float *x = malloc((size_t)n * sizeof *x), *y = calloc((size_t)n, sizeof *y);
    cr_assert(x && y);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 97) - 40.0f;
    void *params[3] = {&x, &y, &n};
    rt_launch_dims g = {{3, 1, 1}, {128, 1, 1}, 0};
    cr_assert_eq(rt_device_launch(d, (void *)(uintptr_t)k_axpb, &g, params, st), 0, "%s",
                 kiln_status_message(st));
    for (int64_t i = 0; i < n; i++)
      cr_expect(y[i] == x[i] * 2 + 1, "n=%lld y[%lld] = %g", (long long)n, (long long)i, y[i]);
    free(x);
    free(y);
  }
  kiln_device_close(d);
}

Test(device, emu_block_reduction_with_barriers) {
  kiln_device *d = emu();
  int64_t n = 10007;
  double *x = malloc((size_t)n * sizeof *x), out[6] = {0};
  cr_assert_not_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = (double)((i * 37) % 101) - 50.0;
  double *outp = out;
  void *params[3] = {&x, &outp, &n};
  rt_launch_dims g = {{3, 2, 1}, {64, 1, 1}, 64 * sizeof(double)};
  cr_assert_eq(rt_device_launch(d, (void *)(uintptr_t)k_block_sum, &g, params, st), 0, "%s",
               kiln_status_message(st));
  int64_t chunk = (n + 5) / 6;
  for (int b = 0; b < 6; b++) {
    double want = 0;
    for (int64_t i = b * chunk; i < (b + 1) * chunk && i < n; i++) want += x[i];
    cr_expect(out[b] == want, "block %d: got %.17g, want %.17g", b, out[b], want);
  }
  free(x);
  kiln_device_close(d);
}

Test(device, emu_3d_ids_cover_the_grid_once) {
  kiln_device *d = emu();
  rt_launch_dims g = {{2, 3, 2}, {4, 2, 3}, 0};
  int total = 2 * 3 * 2 * 4 * 2 * 3;
  int32_t *ids = calloc((size_t)total, sizeof *ids);
  cr_assert_not_null(ids);
  void *params[1] = {&ids};
  cr_assert_eq(rt_device_launch(d, (void *)(uintptr_t)k_ids, &g, params, st), 0, "%s",
               kiln_status_message(st));
  for (int i = 0; i < total; i++) cr_expect_eq(ids[i], i + 1, "id %d", i);
  free(ids);
  kiln_device_close(d);
}

Test(device, emu_launch_errors) {
  kiln_device *d = emu();
  void *params[1] = {NULL};
  rt_launch_dims g = {{2, 1, 1}, {8, 1, 1}, 0};
  cr_expect_eq(rt_device_launch(d, (void *)(uintptr_t)k_diverge, &g, params, st), -1);
  cr_expect(strstr(kiln_status_message(st), "barrier divergence in block (0, 0, 0)"), "%s",
            kiln_status_message(st));
  rt_launch_dims big = {{1, 1, 1}, {64, 32, 1}, 0};
  cr_expect_eq(rt_device_launch(d, (void *)(uintptr_t)k_diverge, &big, params, st), -1);
  cr_expect(strstr(kiln_status_message(st), "2048 threads"), "%s", kiln_status_message(st));
  rt_launch_dims empty = {{0, 1, 1}, {8, 1, 1}, 0};
  cr_expect_eq(rt_device_launch(d, (void *)(uintptr_t)k_diverge, &empty, params, st), -1);
  cr_expect(strstr(kiln_status_message(st), "empty grid"), "%s", kiln_status_message(st));
  /* the cpu device runs no SIMT code */
  kiln_device *cpu = kiln_device_open("cpu", st);
  cr_assert_not_null(cpu);
  cr_expect_eq(rt_device_launch(cpu, (void *)(uintptr_t)k_diverge, &g, params, st), -1);
  cr_expect_eq(kiln_status_code(st), KILN_ERR_UNSUPPORTED);
  kiln_device_close(cpu);
  kiln_device_close(d);
}
