/* test_regressions.c - inputs found by review that once misbehaved, each
 * named for what it caught:
 *  - a tiny .npy whose header claims a huge shape made kiln allocate that
 *    much before noticing the file had no data (now an error, no allocation);
 *  - duplicate argument_names / result_names were accepted, leaving an input
 *    that could never be given and an output shadowed by another;
 *  - kiln run --random-inputs filled gigabytes before noticing the dims made
 *    tensors that cannot exist;
 *  - kiln cache ls --dir created a directory that was not there;
 *  - a graph could claim a runtime fact (kiln.transpose_b made a matmul read
 *    B transposed) through kiln_graph_add_op's attributes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/io.h"
#include "tests/support/shell.h"

/* An .npy v1 file: magic, version 1.0, header padded to 128 bytes, no data. */
static size_t npy_without_data(char *buf, const char *shape) {
  char dict[128];
  int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                   shape);
  size_t hlen = 128 - 10;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)hlen;
  buf[9] = 0;
  memset(buf + 10, ' ', hlen);
  memcpy(buf + 10, dict, (size_t)n);
  buf[10 + hlen - 1] = '\n';
  return 10 + hlen;
}

Test(regressions, npy_claiming_a_huge_shape_is_an_error_before_any_allocation) {
  char buf[192];
  size_t len = npy_without_data(buf, "(100000000000,)"); /* 400 GB claimed, 0 present */
  kiln_status *st = kiln_status_new();
  cr_assert_null(rt_npy_decode(buf, len, "huge.npy", st));
  cr_assert(strstr(kiln_status_message(st), "huge.npy: .npy data is 0 bytes") != NULL, "%s",
            kiln_status_message(st));
  char path[] = "/tmp/kiln-huge-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  FILE *f = fdopen(fd, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
  cr_assert_null(rt_npy_read(path, st));
  cr_assert(strstr(kiln_status_message(st), ".npy data is 0 bytes") != NULL, "%s",
            kiln_status_message(st));
  len = npy_without_data(buf, "(4294967296, 4294967296, 4)"); /* size overflows */
  cr_assert_null(rt_npy_decode(buf, len, "over.npy", st));
  cr_assert(strncmp(kiln_status_message(st), "over.npy: ", 10) == 0, "%s",
            kiln_status_message(st));
  remove(path);
  kiln_status_free(st);
}

static void expect_rejected(const char *text, const char *msg) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "g.mlir", st);
  cr_assert_null(g, "accepted:\n%s", text);
  cr_assert(strstr(kiln_status_message(st), msg) != NULL, "message: %s", kiln_status_message(st));
  kiln_status_free(st);
}

Test(regressions, duplicate_argument_names_are_rejected) {
  expect_rejected("mo.graph @g(%x: !mo.tensor<[2], f32>, %y: !mo.tensor<[2], f32>) -> "
                  "(!mo.tensor<[2], f32>) attributes {argument_names = [\"a\", \"a\"]} {\n"
                  "  %s = mo.add(%x, %y) : !mo.tensor<[2], f32>\n"
                  "  mo.output %s : !mo.tensor<[2], f32>\n}\n",
                  "inputs 0 and 1 are both named 'a'");
}

Test(regressions, duplicate_result_names_are_rejected) {
  expect_rejected("mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>, "
                  "!mo.tensor<[2], f32>) attributes {result_names = [\"y\", \"y\"]} {\n"
                  "  %a = mo.relu(%x) : !mo.tensor<[2], f32>\n"
                  "  %b = mo.exp(%x) : !mo.tensor<[2], f32>\n"
                  "  mo.output %a, %b : !mo.tensor<[2], f32>, !mo.tensor<[2], f32>\n}\n",
                  "outputs 0 and 1 are both named 'y'");
}

Test(regressions, the_same_value_returned_twice_without_names_is_fine) {
  const char *t = "mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>, "
                  "!mo.tensor<[2], f32>) {\n"
                  "  %a = mo.relu(%x) : !mo.tensor<[2], f32>\n"
                  "  mo.output %a, %a : !mo.tensor<[2], f32>, !mo.tensor<[2], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(t, strlen(t), "g.mlir", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* kiln run --random-inputs with dims whose intermediates cannot exist once
 * filled gigabytes of random inputs and was killed for memory; now the sizes
 * are checked first. */
Test(regressions, run_rejects_dims_whose_tensors_cannot_fit_before_filling_inputs) {
  char path[] = "/tmp/kiln-bc-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("mo.graph @g<n, m>(%x: !mo.tensor<[n, 1], f32>, %y: !mo.tensor<[1, m], f32>) -> "
        "(!mo.tensor<[n, m], f32>) {\n"
        "  %0 = mo.add(%x, %y) : (!mo.tensor<[n, 1], f32>, !mo.tensor<[1, m], f32>) -> "
        "!mo.tensor<[n, m], f32>\n"
        "  mo.output %0 : !mo.tensor<[n, m], f32>\n}\n",
        f);
  fclose(f);
  char cmd[512], *out;
  snprintf(cmd, sizeof cmd, "%s run %s --random-inputs --dim n=3037000500 --dim m=3037000500 2>&1",
           KILN_CLI, path);
  cr_assert_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_assert(strstr(out, "value %0: tensor size overflows at axis 1") != NULL, "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "%s run %s --random-inputs --dim n=10000000 --dim m=10000000 2>&1",
           KILN_CLI, path);
  cr_assert_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_assert(strstr(out, "more than this machine's") != NULL, "%s", out);
  free(out);
  remove(path);
}

/* `kiln cache ls --dir X` created X when it did not exist. */
Test(regressions, cache_ls_does_not_create_a_missing_dir) {
  char dir[] = "/tmp/kiln-nodir-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cr_assert_eq(rmdir(dir), 0);
  char cmd[512], *out;
  snprintf(cmd, sizeof cmd, "%s cache ls --dir %s 2>&1", KILN_CLI, dir);
  cr_assert_eq(shell_capture(cmd, &out), 1, "%s", out);
  cr_assert(strstr(out, "no cache directory at") != NULL, "%s", out);
  free(out);
  struct stat sb;
  cr_assert_neq(stat(dir, &sb), 0, "%s was created", dir);
}

/* kiln.* attributes are facts the runtime stamps; the builder refuses them
 * as the parser does, and the graph stays usable. */
Test(regressions, graph_builder_refuses_runtime_attributes) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("b", st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  const char *ad[] = {"4", "12"}, *bd[] = {"9", "12"};
  kiln_value *a = kiln_graph_add_input(g, "a", KILN_FLOAT32, 2, ad, st);
  kiln_value *b = kiln_graph_add_input(g, "b", KILN_FLOAT32, 2, bd, st);
  cr_assert(a && b, "%s", kiln_status_message(st));
  kiln_value *ab[] = {a, b};
  cr_assert_null(kiln_graph_add_op(g, "mo.matmul", ab, 2, "{kiln.transpose_b = 1}", NULL, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_PARSE);
  cr_assert_str_eq(kiln_status_message(st),
                   "attributes of mo.matmul: 1:2: attribute 'kiln.transpose_b' is set by the "
                   "runtime, not by graph text");
  static const char *const others[] = {"{kiln.packed_b = 16}", "{kiln.library = \"c-00\"}",
                                       "{symbol = \"k\", kiln.elementwise = 1}",
                                       "{kiln.simt_stub = \"x\"}"};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    cr_assert_null(kiln_graph_add_op(g, "mo.custom", &a, 1, others[i], "!mo.tensor<[4, 12], f32>", st),
                   "%s accepted", others[i]);
    cr_assert(strstr(kiln_status_message(st), "is set by the runtime, not by graph text"), "%s",
              kiln_status_message(st));
  }
  /* the refused calls left nothing behind: the plain transpose and matmul build */
  kiln_value *t = kiln_graph_add_op(g, "mo.transpose", &b, 1, "{axis_1 = 0, axis_2 = 1}", NULL, st);
  cr_assert_not_null(t, "%s", kiln_status_message(st));
  kiln_value *at[] = {a, t};
  kiln_value *c = kiln_graph_add_op(g, "mo.matmul", at, 2, NULL, NULL, st);
  cr_assert_not_null(c, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_graph_set_outputs(g, &c, 1, NULL, st), 0, "%s", kiln_status_message(st));
  char dim[16];
  kiln_value_dim(c, 1, dim, sizeof dim);
  cr_assert_str_eq(dim, "9");
  kiln_graph_free(g);
  kiln_status_free(st);
}
