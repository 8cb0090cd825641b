/* test_cli_generate.c - `kiln run --generate N --prompt ...` drives a graph by
 * the decoder convention (src/cli/generate.c): a toy graph whose next token
 * depends on the tokens kept in its buffer, on the positions and on the
 * length input gives the sequence computed here; running past the buffer's
 * capacity, an input outside the convention and bad options are errors;
 * the same on simt-emu.
 * (tests/python/test_decoder.py runs the real decoder's emitted text.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/shell.h"

#define T(d, ty) "!mo.tensor<[" d "], " ty ">"
#define HIST "!mo.buffer<[16], f32>"

/* Each call stores its tokens in %hist at their first position, then reads
 * the first `len` entries back: next token = (sum(hist[:len]) + len) mod 11,
 * as logits -|k - target| over k < 11 (one row per token); the tokens cycle
 * through ten values (x -> 2x + 1 mod 11). */
static const char toy_text[] =
    "mo.graph @toy<n, t>(%tok: " T("n", "si64") ", %pos: " T("n", "si64") ", %len: "
    T("1", "si64") ", %hist: " HIST ") -> (" T("n, 11", "f32") ") {\n"
    "  %tokf = mo.cast(%tok) {dtype = f32} : (" T("n", "si64") ") -> " T("n", "f32") "\n"
    "  %start = mo.slice_tensor(%pos) {start = [0], step = [1], stop = [1]} : ("
    T("n", "si64") ") -> " T("1", "si64") "\n"
    "  %c0 = mo.chain.create : !mo.chain\n"
    "  %c1 = mo.mutable.store.slice(%hist, %tokf, %start, %c0) : (" HIST ", " T("n", "f32")
    ", " T("1", "si64") ", !mo.chain) -> !mo.chain\n"
    "  %all, %c2 = mo.mutable.load(%hist, %c1) : (" HIST ", !mo.chain) -> (" T("16", "f32")
    ", !mo.chain)\n"
    "  %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : " T("1", "si64") "\n"
    "  %zero = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : " T("1", "si64") "\n"
    "  %seen = mo.slice_tensor(%all, %zero, %len, %one, %zero) : (" T("16", "f32") ", "
    T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ") -> "
    T("t", "f32") "\n"
    "  %onef = mo.constant {value = #M.dense_array<1.0> : tensor<f32>} : " T("", "f32") "\n"
    "  %plus = mo.add(%seen, %onef) : (" T("t", "f32") ", " T("", "f32") ") -> " T("t", "f32")
    "\n"
    "  %sum = mo.sum(%plus) {axis = 0} : (" T("t", "f32") ") -> " T("1", "f32") "\n"
    "  %eleven = mo.constant {value = #M.dense_array<11.0> : tensor<f32>} : " T("", "f32") "\n"
    "  %target = mo.mod(%sum, %eleven) : (" T("1", "f32") ", " T("", "f32") ") -> "
    T("1", "f32") "\n"
    "  %iota = mo.constant {value = #M.dense_array<0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, "
    "9.0, 10.0> : tensor<11xf32>} : " T("11", "f32") "\n"
    "  %col = mo.reshape(%tokf) : (" T("n", "f32") ") -> " T("n, 1", "f32") "\n"
    "  %zf = mo.constant {value = #M.dense_array<0.0> : tensor<f32>} : " T("", "f32") "\n"
    "  %rows = mo.mul(%col, %zf) : (" T("n, 1", "f32") ", " T("", "f32") ") -> "
    T("n, 1", "f32") "\n"
    "  %d = mo.sub(%iota, %target) : (" T("11", "f32") ", " T("1", "f32") ") -> "
    T("11", "f32") "\n"
    "  %a = mo.abs(%d) : " T("11", "f32") "\n"
    "  %logits = mo.sub(%rows, %a) : (" T("n, 1", "f32") ", " T("11", "f32") ") -> "
    T("n, 11", "f32") "\n"
    "  mo.output %logits : " T("n, 11", "f32") "\n}\n";

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln_generate_XXXXXX");
  shell_dir_with_file(dir, "toy.mlir", toy_text);
}

static void teardown(void) { shell_rm_dir(dir); }

static int run_cli(const char *graph, const char *args, char **out) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "KILN_CACHE=off '%s' run '%s/%s' %s 2>&1", KILN_CLI, dir, graph,
           args);
  return shell_capture(cmd, out);
}

/* The toy's greedy sequence after prompt, written as the CLI prints it. */
static void expected_tokens(const int *prompt, int np, int steps, char *buf, size_t cap) {
  double hist[64] = {0};
  int len = 0, next = 0;
  size_t k = 0;
  for (int s = -1; s < steps; s++) {
    if (s < 0) {
      for (int i = 0; i < np; i++) hist[len++] = prompt[i];
    } else {
      k += (size_t)snprintf(buf + k, cap - k, "%s%d", s ? ", " : "", next);
      hist[len++] = next;
    }
    double sum = len;
    for (int i = 0; i < len; i++) sum += hist[i];
    next = (int)fmod(sum, 11.0);
  }
}

/* out holds the toy's greedy tokens for prompt 1, 2 and 12 steps. */
static void expect_toy_tokens(const char *out) {
  char want[256], line[300];
  const int prompt[] = {1, 2};
  expected_tokens(prompt, 2, 12, want, sizeof want);
  snprintf(line, sizeof line, "generated: %s\n", want);
  cr_assert(strstr(out, line), "want '%s' in:\n%s", line, out);
}

Test(cli_generate, follows_the_tokens_positions_length_and_buffer, .init = setup,
     .fini = teardown) {
  char *out = NULL;
  int rc = run_cli("toy.mlir", "--generate 12 --prompt 1,2", &out);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "prompt: 1, 2\n"), "%s", out);
  expect_toy_tokens(out);
  cr_assert(strstr(out, "prefill (2 tokens): ") && strstr(out, "steps: 12, median "), "%s", out);
  cr_assert(strstr(out, "step-time curve (median of each 64 steps, us): 0-11: "), "%s", out);
  free(out);
}

/* On simt-emu the buffer is stored by the slice kernel and copied back after
 * each execute: the same tokens as on the CPU. */
Test(cli_generate, the_same_tokens_on_simt_emu, .init = setup, .fini = teardown) {
  char *out = NULL;
  int rc = run_cli("toy.mlir", "--generate 12 --prompt 1,2 --device simt-emu --stats", &out);
  cr_assert_eq(rc, 0, "%s", out);
  expect_toy_tokens(out);
  cr_assert(strstr(out, "device: simt-emu"), "%s", out);
  free(out);
}

/* With the length's dim bucketed, it grows at every step: --stats says the
 * next bucket was queued ahead, and the tokens are the same (the plans and
 * variants made ahead serve the steps exactly). Multiples of 4: t grows
 * 3..14, and from bucket 12 (hot at t = 11, after 8 rises) the next one,
 * 13..16, is queued ahead; it is the last (the buffer holds 16), so
 * nothing is queued past it. (pow2 buckets would reach their run of rises
 * in 9..16, the last bucket, with nothing left to queue.) */
Test(cli_generate, a_growing_bucketed_dim_is_specialized_ahead, .init = setup,
     .fini = teardown) {
  char *out = NULL;
  int rc = run_cli("toy.mlir", "--generate 12 --prompt 1,2 --bucket t=4 --stats", &out);
  cr_assert_eq(rc, 0, "%s", out);
  expect_toy_tokens(out);
  cr_assert(strstr(out, "specialize: async, 1 bucket queued ahead (a bucketed dim grew"), "%s",
            out);
  free(out);
}

Test(cli_generate, running_past_the_buffer_is_an_error_naming_the_step, .init = setup,
     .fini = teardown) {
  char *out = NULL;
  int rc = run_cli("toy.mlir", "--generate 20 --prompt 1,2", &out); /* 22 tokens, room for 16 */
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "--generate: step 14 (token "), "%s", out);
  cr_assert(strstr(out, "16 tokens run"), "%s", out);
  free(out);
}

Test(cli_generate, an_input_outside_the_convention_is_refused, .init = setup, .fini = teardown) {
  static const char bad[] =
      "mo.graph @g<n>(%tok: " T("n", "si64") ", %x: " T("3", "f32") ") -> (" T("n", "f32")
      ") {\n"
      "  %f = mo.cast(%tok) {dtype = f32} : (" T("n", "si64") ") -> " T("n", "f32") "\n"
      "  mo.output %f : " T("n", "f32") "\n}\n";
  char path[128], *out = NULL;
  snprintf(path, sizeof path, "%s/bad.mlir", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f && fputs(bad, f) >= 0 && fclose(f) == 0);
  int rc = run_cli("bad.mlir", "--generate 2 --prompt 1", &out);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "--generate: input 1 (x) is none of: a buffer, si32 / si64 [n] "
                        "positions, si32 / si64 [1] length"), "%s", out);
  free(out);
}

Test(cli_generate, bad_options_are_usage_errors, .init = setup, .fini = teardown) {
  static const struct {
    const char *args, *says;
  } cases[] = {
      {"--generate 4", "--generate needs --prompt"},
      {"--prompt 1,2", "--prompt goes with --generate N"},
      {"--generate 4 --prompt 1,x", "--prompt expects token ids >= 0"},
      {"--generate 4 --prompt 1,,2", "--prompt expects token ids >= 0"},
      {"--generate 0 --prompt 1", "--generate expects a count >= 1"},
      {"--generate 4 --prompt 1 --repeat 3", "--generate feeds the inputs itself"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *out = NULL;
    int rc = run_cli("toy.mlir", cases[i].args, &out);
    cr_expect_eq(rc, 2, "%s: %s", cases[i].args, out);
    cr_expect(strstr(out, cases[i].says), "%s: want '%s' in %s", cases[i].args, cases[i].says,
              out);
    free(out);
  }
}
