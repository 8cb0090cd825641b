/* test_spec_cli.c - the specialization options of `kiln run` (src/cli/run.c)
 * as a user runs them: --specialize async (the outcome in --stats, whether
 * the background compile finished or not), --bucket (grouping, bad values,
 * unknown symbols), and the help text. Runs with KILN_CACHE=off (ctest). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/shell.h"

#define EX(name) KILN_SHARED_DIR "/ir-examples/" name

static int kiln(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int kiln(char **out, const char *fmt, ...) {
  char args[4096], cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "env -u KILN_SPECIALIZE '%s' %s 2>&1", KILN_CLI, args);
  return shell_capture(cmd, out);
}

#define HAS(out, s) cr_assert(strstr(out, s), "output lacks '%s':\n%s", s, out)

#define ATTN_DIMS "--dim batch=2 --dim seq=5"

Test(spec_cli, async_run_reports_its_outcome) {
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs " ATTN_DIMS " --stats",
                    EX("attention_block.mlir")),
               0, "%s", out);
  HAS(out, "specialize: async; ");
  /* one execute: on the generic variant, the binding not hot yet: nothing queued */
  HAS(out, "executes: 0 hits (a live variant), 1 miss (async: ran on the generic variant)");
  HAS(out, "1 execute on a binding not hot yet (a binding is specialized once it ran 3 times)");
  HAS(out, "nothing pending at exit (0 background compiles done)");
  free(out);
  /* hot from its third execute: then queued */
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs " ATTN_DIMS " --stats --repeat 3",
                    EX("attention_block.mlir")),
               0, "%s", out);
  HAS(out, "2 executes on a binding not hot yet");
  cr_assert(strstr(out, "compile pending at exit (the run ended before the background compile; "
                        "not waited for)") ||
                strstr(out, "nothing pending at exit (1 background compile done)"),
            "%s", out);
  free(out);
  /* an MLP's symbolic kernels are GEMMs: nothing to specialize */
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=2 --stats", EX("mlp.mlir")), 0,
               "%s", out);
  HAS(out, "logits: f32 [2, 10] = [");
  HAS(out, "specialize: async; nothing to specialize: the kernels that read symbolic dims are "
           "GEMMs");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs " ATTN_DIMS " --stats --specialize off",
                    EX("attention_block.mlir")),
               0, "%s", out);
  HAS(out, "specialize: off; 0 variants live; executes: 0 hits (a live variant), 0 misses");
  free(out);
}

Test(spec_cli, bucket_groups_and_checks_its_values) {
  char *out;
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=5 --dim seq=3 --stats "
                          "--specialize sync --bucket batch=pow2",
                    EX("attention_block.mlir")),
               0, "%s", out);
  HAS(out, "1 specialized");
  HAS(out, "specialize: sync; 1 variant live; executes: 0 hits (a live variant), 1 miss (sync");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=5 --bucket batch=zero",
                    EX("mlp.mlir")),
               1, "%s", out);
  HAS(out, "--bucket batch: expected pow2, exact or a multiple N >= 1, got 'zero'");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --dim batch=5 --bucket seq=8", EX("mlp.mlir")),
               1, "%s", out);
  HAS(out, "no symbolic dim 'seq'");
  free(out);
  cr_assert_eq(kiln(&out, "run '%s' --random-inputs --specialize later", EX("mlp.mlir")), 2, "%s",
               out);
  HAS(out, "off, sync, async or ahead");
  free(out);
}

Test(spec_cli, help_names_the_new_options) {
  char *out;
  cr_assert_eq(kiln(&out, "help run"), 0, "%s", out);
  HAS(out, "--bucket SYM=pow2|N|exact");
  HAS(out, "async");
  free(out);
  cr_assert_eq(kiln(&out, "help cache"), 0, "%s", out);
  HAS(out, "--target host");
  free(out);
}
