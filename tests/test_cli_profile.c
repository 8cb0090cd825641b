/* test_cli_profile.c - `kiln run --profile` and `--trace`, on the host and
 * on simt-emu: the table has a row per kernel with its calls (a device
 * model's copies in and out too) beside peaks measured where the model
 * ran, and the trace file parses with the device's launches on a track of
 * its own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/shell.h"
#include "support/trace_read.h"

static const char graph_text[] =
    "mo.graph @g<batch>(%x: !mo.tensor<[batch, 32], f32>, %w: !mo.tensor<[32, 16], f32>) -> "
    "(!mo.tensor<[batch, 16], f32>) {\n"
    "  %m = mo.matmul(%x, %w) : !mo.tensor<[batch, 16], f32>\n"
    "  %t = mo.tanh(%m) : !mo.tensor<[batch, 16], f32>\n"
    "  mo.output %t : !mo.tensor<[batch, 16], f32>\n}\n";

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln_prof_XXXXXX");
  shell_dir_with_file(dir, "g.mlir", graph_text);
}

static void teardown(void) { shell_rm_dir(dir); }

/* kiln run --profile --trace on device ("cpu" or "simt-emu"), 3 runs. */
static char *run_profiled(const char *device) {
  char cmd[1024], *out = NULL;
  snprintf(cmd, sizeof cmd, "KILN_CACHE=off '%s' run '%s/g.mlir' --random-inputs --dim batch=8 "
           "--repeat 3 --device %s --profile --trace '%s/t.json' 2>&1",
           KILN_CLI, dir, device, dir);
  int rc = shell_capture(cmd, &out);
  cr_assert_eq(rc, 0, "%s: %s", cmd, out);
  return out;
}

/* The table's line for kernel (it starts after the node column). */
static const char *row(const char *out, const char *kernel) {
  char key[64];
  snprintf(key, sizeof key, "  %s ", kernel);
  const char *p = strstr(out, key);
  cr_assert(p, "a row for %s in:\n%s", kernel, out);
  return p;
}

TestSuite(cli_profile, .init = setup, .fini = teardown);

Test(cli_profile, host_table_names_each_kernel_with_its_calls) {
  char *out = run_profiled("cpu");
  cr_assert(strstr(out, "profile: 3 executes"), "%s", out);
  cr_assert(strstr(out, "peak (measured now): "), "%s", out);
  const char *r = row(out, "mo.matmul+mo.tanh");
  cr_assert_eq(strtol(r + 2 + 32 + 1 + 24, NULL, 10), 3, "3 calls: %s", r); /* kernel, shape */
  cr_assert_null(strstr(out, "copy in"), "a host model copies nothing");
  free(out);
  char path[128];
  snprintf(path, sizeof path, "%s/t.json", dir);
  rt_json *j = trace_read(path);
  cr_assert_eq(trace_count_named(j, "execute @g"), 3);
  rt_json_free(j);
}

Test(cli_profile, device_table_has_kernels_copies_and_device_peaks) {
  char *out = run_profiled("simt-emu");
  cr_assert(strstr(out, "profile: 3 executes"), "%s", out);
  cr_assert(strstr(out, "peak (measured now on simt-emu"), "%s", out);
  row(out, "copy in");
  row(out, "copy out");
  row(out, "launches and waits");
  bool matmul = strstr(out, "  mo.matmul") != NULL;
  cr_assert(matmul, "a matmul row:\n%s", out);
  free(out);
  char path[128];
  snprintf(path, sizeof path, "%s/t.json", dir);
  rt_json *j = trace_read(path);
  int64_t track = trace_track_of(j, "simt-emu");
  cr_assert_geq(track, 0, "the device's track");
  int launches = 0;
  for (int i = 0; i < j->n; i++)
    if (!strcmp(trace_str(&j->items[i], "cat"), "kernel")) {
      cr_assert_eq(trace_int(&j->items[i], "tid"), track);
      launches++;
    }
  cr_assert_geq(launches, 3, "a launch per kernel per run");
  cr_assert_eq(launches % 3, 0, "%d launches (the peaks' are not the run's)", launches);
  rt_json_free(j);
}
