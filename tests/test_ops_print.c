/* test_ops_print.c - mo.print: its result is its operand (the JIT against
 * the reference interpreter over numeric, bool and narrow dtypes, size-0
 * and size-1 dims, symbolic dims, inside elementwise chains that fuse around
 * it), the line it writes to stderr (hand-worked lines, the same text from
 * the kernel and the interpreter, elision past IR_PRINT_MAX_ELEMS), kept when
 * its result is unused (EFFECTS), bad attributes refused at line:col; a
 * device model (simt-emu, or KILN_TEST_DEVICE's GPU) writes the host's
 * lines, once per execute and per replay of a capture.
 * stderr (fd 2) is redirected to a temporary file while a graph runs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/parse.h"
#include "support/gtext.h"
#include "support/oracle.h"
#include "support/under_test.h"

typedef struct capture {
  int fd, saved;
} capture;

static capture capture_begin(void) {
  char path[] = "/tmp/kiln-print-XXXXXX";
  capture c = {mkstemp(path), -1};
  cr_assert(c.fd >= 0);
  unlink(path);
  fflush(stderr);
  c.saved = dup(2);
  cr_assert(c.saved >= 0 && dup2(c.fd, 2) == 2);
  return c;
}

/* What was written to fd 2 since capture_begin (malloc'd, NUL-terminated). */
static char *capture_end(capture c) {
  fflush(stderr);
  dup2(c.saved, 2);
  close(c.saved);
  off_t len = lseek(c.fd, 0, SEEK_END);
  cr_assert(len >= 0);
  char *buf = malloc((size_t)len + 1);
  cr_assert(buf);
  cr_assert_eq(pread(c.fd, buf, (size_t)len, 0), (ssize_t)len);
  buf[len] = 0;
  close(c.fd);
  return buf;
}

/* The lines of text, each of them a print's line (label, type, values);
 * the oracle may run the kernel more than once, so counts vary and the
 * kernel's text is compared with the interpreter's in known_print. */
static int print_lines(const char *text) {
  int n = 0;
  for (const char *p = text; *p; n++) {
    const char *e = strchr(p, '\n');
    cr_assert_not_null(e, "an unterminated line: %s", p);
    const char *t = strstr(p, ": tensor<[");
    cr_expect(t && t < e && e[-1] == ']', "not a print line: %.*s", (int)(e - p), p);
    p = e + 1;
  }
  return n;
}

static void check_pass_through(const char *dt) {
  gt *t = gt_new("print", "n");
  int x = gt_in(t, dt, "n, 3"), s = gt_in(t, dt, "2, 0"), o = gt_in(t, dt, "1");
  int p = gt_op1(t, "mo.print", "{label = \"x\"}", x, dt, "n, 3");
  gt_out(t, p);
  gt_out(t, gt_op1(t, "mo.print", NULL, s, dt, "2, 0"));
  gt_out(t, gt_op1(t, "mo.print", "{label = \"100%s %d\"}", o, dt, "1"));
  bool num = !strcmp(dt, "f32") || !strcmp(dt, "f64") || !strcmp(dt, "si32") || !strcmp(dt, "si64");
  if (num) { /* elementwise ops around it fuse; print stays between them */
    int a = gt_op2(t, "mo.add", NULL, x, x, dt, "n, 3");
    int q = gt_op1(t, "mo.print", "{label = \"sum\"}", a, dt, "n, 3");
    gt_out(t, gt_op2(t, "mo.mul", NULL, q, x, dt, "n, 3"));
  }
  char label[64];
  snprintf(label, sizeof label, "mo.print %s", dt);
  oracle_case c = {.label = label, .mlir = gt_finish(t), .bindings = "n=1;n=4;n=0", .seed = 5};
  capture cap = capture_begin();
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(&c, r);
  char *text = capture_end(cap);
  cr_expect_eq(rc, 0, "%s", r->msg);
  cr_expect_gt(print_lines(text), 0, "%s printed nothing", label);
  cr_expect(strstr(text, "100%s %d: tensor<[1], ") != NULL, "%s", text);
  free(text);
  free(r);
  gt_free(t);
}

Test(print, passes_its_operand_through) {
  static const char *const dts[] = {"f32", "f64", "si32", "si64", "bool", "si8", "ui8", "f16"};
  for (int i = 0; i < 8; i++)
    check_pass_through(dts[i]);
}

/* ---- the line ---- */

/* Run text through the JIT (oracle_known: expect is its one output) and
 * through the interpreter; each must write `line`. */
static void expect_line(const char *text, oracle_expect e, const char *line) {
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  capture cap = capture_begin();
  int rc = oracle_known(line, text, &e, 1, 0, 0, r);
  char *got = capture_end(cap);
  cr_expect_eq(rc, 0, "%s", r->msg);
  cr_expect(strstr(got, line) != NULL, "JIT wrote '%s', not '%s'", got, line);
  free(got);
  free(r);
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%s", d.msg);
  ir_tensor out[1];
  char msg[512];
  cap = capture_begin();
  rc = ir_interp_run(g, NULL, NULL, NULL, out, msg, sizeof msg);
  got = capture_end(cap);
  cr_assert_eq(rc, 0, "%s", msg);
  cr_expect(strstr(got, line) != NULL, "the interpreter wrote '%s', not '%s'", got, line);
  free(got);
  free(out[0].data);
  ir_graph_free(g);
}

Test(known_print, lines) {
  expect_line("mo.graph @k() -> (!mo.tensor<[3], f32>) {\n"
              "  %c = mo.constant {value = #M.dense_array<1.5, -2.0, 3.0> : tensor<3xf32>} : "
              "!mo.tensor<[3], f32>\n"
              "  %y = mo.print(%c) {label = \"act\"} : (!mo.tensor<[3], f32>) -> "
              "!mo.tensor<[3], f32>\n  mo.output %y : !mo.tensor<[3], f32>\n}\n",
              (oracle_expect){KILN_FLOAT32, 1, {3}, ORACLE_F32(1.5f, -2.0f, 3.0f)},
              "act: tensor<[3], f32> [1.5, -2, 3]\n");
  expect_line("mo.graph @k() -> (!mo.tensor<[2, 2], si64>) {\n"
              "  %c = mo.constant {value = #M.dense_array<-1, 2, 30, -400> : tensor<2x2xsi64>} : "
              "!mo.tensor<[2, 2], si64>\n"
              "  %y = mo.print(%c) : (!mo.tensor<[2, 2], si64>) -> !mo.tensor<[2, 2], si64>\n"
              "  mo.output %y : !mo.tensor<[2, 2], si64>\n}\n",
              (oracle_expect){KILN_INT64, 2, {2, 2}, ORACLE_I64(-1, 2, 30, -400)},
              "debug_tensor: tensor<[2, 2], si64> [-1, 2, 30, -400]\n");
  expect_line(
      "mo.graph @k() -> (!mo.tensor<[], si64>) {\n"
      "  %c = mo.constant {value = #M.dense_array<7> : tensor<si64>} : !mo.tensor<[], si64>\n"
      "  %y = mo.print(%c) {label = \"s\"} : (!mo.tensor<[], si64>) -> !mo.tensor<[], si64>\n"
      "  mo.output %y : !mo.tensor<[], si64>\n}\n",
      (oracle_expect){KILN_INT64, 0, {0}, ORACLE_I64(7)}, "s: tensor<[], si64> [7]\n");
}

/* past IR_PRINT_MAX_ELEMS elements the line ends with ", ..."; a print
 * whose result nothing uses still prints (EFFECTS) */
Test(known_print, elision_and_unused_result) {
  const char *text = "mo.graph @g(%x: !mo.tensor<[1001], si32>) -> (!mo.tensor<[1001], si32>) {\n"
                     "  %y = mo.print(%x) {label = \"long\"} : (!mo.tensor<[1001], si32>) -> "
                     "!mo.tensor<[1001], si32>\n"
                     "  %z = mo.print(%x) {label = \"unused\"} : (!mo.tensor<[1001], si32>) -> "
                     "!mo.tensor<[1001], si32>\n"
                     "  mo.output %y : !mo.tensor<[1001], si32>\n}\n";
  oracle_gen iota = gen_iota(0);
  oracle_case c = {.label = "print long", .mlir = text, .seed = 1, .gens = &iota, .ngens = 1};
  capture cap = capture_begin();
  oracle_report *r = calloc(1, sizeof *r);
  cr_assert(r);
  int rc = oracle_run(&c, r);
  char *got = capture_end(cap);
  cr_expect_eq(rc, 0, "%s", r->msg);
  cr_expect_gt(print_lines(got), 0);
  cr_expect(strstr(got, "long: tensor<[1001], si32> [0, 1, 2, ") != NULL);
  cr_expect(strstr(got, ", 998, 999, ...]\n") != NULL);
  cr_expect(strstr(got, "unused: tensor<[1001], si32> [0, 1, 2, ") != NULL, "dropped: %s", got);
  free(got);
  free(r);
}

/* ---- bad attributes: refused where they are written ---- */

static void expect_rejected(const char *attrs, const char *ty_out, const char *what) {
  char mlir[1024], msg[1024];
  snprintf(mlir, sizeof mlir,
           "mo.graph @g(%%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[%s], f32>) {\n"
           "  %%y = mo.print(%%x) %s : (!mo.tensor<[3], f32>) -> !mo.tensor<[%s], f32>\n"
           "  mo.output %%y : !mo.tensor<[%s], f32>\n}\n",
           ty_out, attrs, ty_out, ty_out);
  cr_expect_neq(oracle_ir_parse_only(mlir, msg, sizeof msg), 0, "ir_parse accepted %s", what);
  cr_expect(strstr(msg, what) != NULL, "message '%s' does not mention '%s'", msg, what);
}

Test(print_verify, bad_attributes_are_refused) {
  expect_rejected("{label = 1}", "3", "2:3: attribute 'label' of mo.print must be a string");
  expect_rejected("{name = \"a\"}", "3", "mo.print has no attribute 'name'");
  expect_rejected("", "4", "declared as");
}

/* ---- on a device ---- */

Test(device_print, writes_the_hosts_lines) {
  static const char text[] =
      "mo.graph @g<n>(%x: !mo.tensor<[n, 2], f32>, %e: !mo.tensor<[0], si32>,"
      " %b: !mo.tensor<[1200], si64>) -> (!mo.tensor<[n, 2], f32>, !mo.tensor<[0], si32>,"
      " !mo.tensor<[1200], si64>) {\n"
      "  %a = mo.add(%x, %x) : !mo.tensor<[n, 2], f32>\n"
      "  %p = mo.print(%a) {label = \"dev\"} : (!mo.tensor<[n, 2], f32>) -> "
      "!mo.tensor<[n, 2], f32>\n"
      "  %y = mo.mul(%p, %x) : !mo.tensor<[n, 2], f32>\n"
      "  %q = mo.print(%e) {label = \"empty\"} : (!mo.tensor<[0], si32>) -> "
      "!mo.tensor<[0], si32>\n"
      "  %r = mo.print(%b) {label = \"big\"} : (!mo.tensor<[1200], si64>) -> "
      "!mo.tensor<[1200], si64>\n"
      "  mo.output %y, %q, %r : !mo.tensor<[n, 2], f32>, !mo.tensor<[0], si32>,"
      " !mo.tensor<[1200], si64>\n"
      "}\n";
  under_test_simt u;
  cr_assert_eq(under_test_simt_open(&u, text), 0, "%s", kiln_status_message(u.st));
  kiln_device_model *m = u.m;
  kiln_status *st = u.st;
  int64_t xs[2] = {2, 2}, es[1] = {0}, bs[1] = {1200};
  kiln_tensor *in[3] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, st),
                        kiln_tensor_new(KILN_INT32, 1, es, st),
                        kiln_tensor_new(KILN_INT64, 1, bs, st)};
  float *px = kiln_tensor_data(in[0]);
  for (int i = 0; i < 4; i++) px[i] = 0.25f * (float)(i + 1);
  int64_t *pb = kiln_tensor_data(in[2]);
  for (int i = 0; i < 1200; i++) pb[i] = i - 3;
  const char *want =
      "dev: tensor<[2, 2], f32> [0.5, 1, 1.5, 2]\n"
      "empty: tensor<[0], si32> []\n"
      "big: tensor<[1200], si64> [-3, -2, -1, 0, 1, ";
  for (int round = 0; round < 3; round++) { /* execute, capture, replay */
    kiln_tensor *out[3] = {0};
    capture cap = capture_begin();
    int rc = round == 0   ? kiln_device_model_execute(m, in, 3, out, 3, st)
             : round == 1 ? kiln_device_model_capture(m, 7, in, 3, out, 3, st)
                          : kiln_device_model_replay(m, 7, in, 3, out, 3, st);
    char *got = capture_end(cap);
    cr_assert_eq(rc, 0, "round %d: %s", round, kiln_status_message(st));
    cr_expect(strncmp(got, want, strlen(want)) == 0, "round %d wrote:\n%.300s", round, got);
    cr_expect(strstr(got, ", 995, 996, ...]\n") != NULL, "round %d: no elision:\n%s", round,
              got + (strlen(got) > 80 ? strlen(got) - 80 : 0));
    cr_expect_eq(print_lines(got), 3, "round %d: not 3 lines", round);
    const float *py = kiln_tensor_data(out[0]);
    cr_expect(py[0] == 0.125f && py[3] == 2.0f, "round %d: y %g .. %g", round, py[0], py[3]);
    free(got);
    for (int i = 0; i < 3; i++) kiln_tensor_free(out[i]);
  }
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  under_test_simt_close(&u);
}
