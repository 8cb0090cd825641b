/* test_cli_dot.c - `kiln check --dot` / `kiln compile --dot`: the DOT file
 * renders with Graphviz (dot -Tsvg) and the SVG names every node of the
 * graph before and after fusion, the fused group as a cluster, and the
 * shapes on the edges. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/shell.h"

static const char graph_text[] =
    "mo.graph @g<batch>(%x: !mo.tensor<[batch, 16], f32>, %w: !mo.tensor<[16, 8], f32>, "
    "%b: !mo.tensor<[8], f32>) -> (!mo.tensor<[batch, 8], f32>) {\n"
    "  %m = mo.matmul(%x, %w) : (!mo.tensor<[batch, 16], f32>, !mo.tensor<[16, 8], f32>) -> "
    "!mo.tensor<[batch, 8], f32>\n"
    "  %a = mo.add(%m, %b) : (!mo.tensor<[batch, 8], f32>, !mo.tensor<[8], f32>) -> "
    "!mo.tensor<[batch, 8], f32>\n"
    "  %r = mo.relu(%a) : !mo.tensor<[batch, 8], f32>\n"
    "  %s = mo.softmax(%r) {axis = -1} : !mo.tensor<[batch, 8], f32>\n"
    "  mo.output %s : !mo.tensor<[batch, 8], f32>\n}\n";

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln_dot_XXXXXX");
  shell_dir_with_file(dir, "g.mlir", graph_text);
}

static void teardown(void) { shell_rm_dir(dir); }

static char *render(const char *subcommand) {
  char cmd[1024], *out = NULL;
  snprintf(cmd, sizeof cmd, "KILN_CACHE=off '%s' %s '%s/g.mlir' --dot '%s/g.dot' >/dev/null 2>&1 "
           "&& dot -Tsvg '%s/g.dot' -o '%s/g.svg' 2>&1 && cat '%s/g.svg'",
           KILN_CLI, subcommand, dir, dir, dir, dir, dir);
  int rc = shell_capture(cmd, &out);
  cr_assert_eq(rc, 0, "%s: %s", cmd, out);
  return out;
}

static void names_every_node(const char *svg) {
  /* before: each op with its result; after: the same nodes, the add and
   * relu fused into the softmax's prologue (ir_graph_fuse: a softmax takes
   * the group even where a matmul produces its operand) */
  const char *ops[] = {"mo.matmul", "mo.add", "mo.relu", "mo.softmax"};
  const char *results[] = {"%m", "%a", "%r", "%s"};
  for (int i = 0; i < 4; i++) {
    int n = 0;
    for (const char *p = svg; (p = strstr(p, ops[i])); p++) n++;
    cr_assert_geq(n, 2, "%s drawn before and after fusion", ops[i]);
    cr_assert(strstr(svg, results[i]), "%s", results[i]);
  }
  for (int k = 0; k < 4; k++) {
    char id[32];
    snprintf(id, sizeof id, "<title>b_n%d</title>", k);
    cr_assert(strstr(svg, id), "%s", id);
  }
  cr_assert(strstr(svg, "<title>b_in0</title>") && strstr(svg, "<title>a_in2</title>"));
  cr_assert(strstr(svg, "fused: mo.add+mo.relu+mo.softmax"), "the fused group's cluster");
  cr_assert(strstr(svg, "<title>cluster_a_f"), "a cluster per fused group");
  cr_assert(strstr(svg, "[batch, 16] f32") && strstr(svg, "[batch, 8] f32"), "shapes on edges");
  cr_assert(strstr(svg, "before fusion") && strstr(svg, "after fusion"));
}

Test(cli_dot, check_dot_renders_and_names_every_node, .init = setup, .fini = teardown) {
  char *svg = render("check");
  names_every_node(svg);
  free(svg);
}

Test(cli_dot, compile_dot_renders_and_names_every_node, .init = setup, .fini = teardown) {
  char *svg = render("compile");
  names_every_node(svg);
  free(svg);
}

Test(cli_dot, dot_to_an_unwritable_path_is_an_error, .init = setup, .fini = teardown) {
  char cmd[512], *out = NULL;
  snprintf(cmd, sizeof cmd, "'%s' check '%s/g.mlir' --dot /nonexistent/d/g.dot 2>&1", KILN_CLI,
           dir);
  cr_assert_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_assert(strstr(out, "/nonexistent/d/g.dot"), "%s", out);
  free(out);
}
