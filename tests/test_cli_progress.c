/* test_cli_progress.c - `kiln cache warm` draws a progress bar (counts,
 * percentage, time left, then the total) on a terminal, through script(1)'s
 * pseudo-terminal, and prints plain lines without escape codes into a
 * pipe. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/shell.h"

static const char graph_text[] =
    "mo.graph @p<n>(%x: !mo.tensor<[n, 8], f32>, %w: !mo.tensor<[8, 4], f32>) -> "
    "(!mo.tensor<[n, 4], f32>) {\n"
    "  %m = mo.matmul(%x, %w) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8, 4], f32>) -> "
    "!mo.tensor<[n, 4], f32>\n"
    "  %s = mo.softmax(%m) {axis = -1} : !mo.tensor<[n, 4], f32>\n"
    "  %t = mo.tanh(%s) : !mo.tensor<[n, 4], f32>\n"
    "  mo.output %t : !mo.tensor<[n, 4], f32>\n}\n";

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln_prog_XXXXXX");
  shell_dir_with_file(dir, "p.mlir", graph_text);
}

static void teardown(void) { shell_rm_dir(dir); }

Test(cli_progress, warm_on_a_terminal_draws_a_bar_with_counts_and_time,
     .init = setup, .fini = teardown) {
  if (system("command -v script >/dev/null 2>&1") != 0) cr_skip_test("no script(1)");
  char cmd[1024], *out = NULL;
  snprintf(cmd, sizeof cmd,
           "script -qec \"KILN_CACHE_DIR='%s/c' '%s' cache warm '%s/p.mlir' --dim n=1,2,3\" "
           "/dev/null",
           dir, KILN_CLI, dir);
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  cr_assert(strstr(out, "\033[K["), "the bar is redrawn in place: %s", out);
  /* 3 generic kernels and 2 specialized ones per binding (the GEMM is not) */
  cr_assert(strstr(out, "] 0/9   0% -:-- left"), "%s", out);
  cr_assert(strstr(out, "] 9/9 100% "), "%s", out);
  cr_assert(strstr(out, " left") && strstr(out, " total done"), "%s", out);
  cr_assert(strstr(out, "compiled and stored"), "%s", out);
  cr_assert_null(strstr(out, "compiled in"), "no plain lines on a terminal: %s", out);
  free(out);
}

Test(cli_progress, warm_into_a_pipe_prints_plain_lines, .init = setup, .fini = teardown) {
  char cmd[1024], *out = NULL;
  snprintf(cmd, sizeof cmd, "KILN_CACHE_DIR='%s/c' '%s' cache warm '%s/p.mlir' | cat", dir,
           KILN_CLI, dir);
  cr_assert_eq(shell_capture(cmd, &out), 0, "%s", out);
  cr_assert_null(strstr(out, "\033"), "no escape codes in a pipe: %s", out);
  cr_assert(strstr(out, ": compiled in "), "%s", out);
  free(out);
}
