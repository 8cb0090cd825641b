/* test_ir_text.c - the MO text form: ir_parse and ir_print.
 *
 * - Round trips: every ../shared/ir-examples/<name>.mlir and tests/ir/<name>.mlir is
 *   parsed, printed, parsed again and printed again; both printings must be
 *   identical (print . parse is the identity on printed text).
 * - Goldens (tests/ir/<name>.mlir): each file holds an input graph, then a line
 *       // CHECK-PRINT:
 *   then the expected canonical printing of the input, every line prefixed
 *   with "// " ("//" alone for an empty line). The input is everything
 *   before the CHECK-PRINT line (the whole file also parses: the expected
 *   text is comments). To add one: write the input, run it through ir_print,
 *   check the printing by eye, append it as above.
 * - Rejections: every ../shared/ir-examples/bad/<name>.mlir must fail with exactly
 *   the message of its first line `// expect: <message>`, at a line:col
 *   inside the file; the known ones at a fixed line:col. Plus one test per
 *   syntax or declaration error, with its message and line:col.
 * - A short mutation fuzz with a fixed seed: no crash, every failure has a
 *   message and a location, every success round-trips.
 * - Runtime facts: attributes named kiln.* are refused in user text and in
 *   ir_parse_attrs, at their line:col; ir_parse_kernel_text (parse.h), the
 *   runtime's entry for the kernel texts it prints, accepts them. */
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/parse.h"

/* ---- helpers ---- */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  cr_assert(buf);
  cr_assert(fread(buf, 1, (size_t)n, f) == (size_t)n);
  buf[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static ir_graph *parse_str(const char *text, ir_diag *d) { return ir_parse(text, strlen(text), d); }

static ir_graph *parse_ok(const char *text) {
  ir_diag d;
  ir_graph *g = parse_str(text, &d);
  cr_assert(g, "parse failed at %d:%d: %s\n%s", d.line, d.col, d.msg, text);
  return g;
}

static char *print_ok(const ir_graph *g) {
  char *t = ir_print(g);
  cr_assert(t, "ir_print returned NULL");
  return t;
}

/* Parse, print, parse the printing, print again: the printings must match. */
static void check_round_trip(const char *what, const char *text, size_t len) {
  ir_diag d;
  ir_graph *g = ir_parse(text, len, &d);
  cr_assert(g, "%s: parse failed at %d:%d: %s", what, d.line, d.col, d.msg);
  char *p1 = print_ok(g);
  ir_graph *g2 = parse_str(p1, &d);
  cr_assert(g2, "%s: printed text does not parse at %d:%d: %s\n%s", what, d.line, d.col, d.msg, p1);
  char *p2 = print_ok(g2);
  cr_assert_str_eq(p2, p1, "%s: printing changed after a round trip", what);
  free(p1);
  free(p2);
  ir_graph_free(g);
  ir_graph_free(g2);
}

static int round_trip_dir(const char *pattern) {
  glob_t gl;
  cr_assert(glob(pattern, 0, NULL, &gl) == 0, "no files match %s", pattern);
  for (size_t i = 0; i < gl.gl_pathc; i++) {
    size_t len;
    char *text = read_file(gl.gl_pathv[i], &len);
    check_round_trip(gl.gl_pathv[i], text, len);
    free(text);
  }
  int n = (int)gl.gl_pathc;
  globfree(&gl);
  return n;
}

static void expect_error(const char *text, int line, int col, const char *msg) {
  ir_diag d;
  ir_graph *g = parse_str(text, &d);
  if (g) ir_graph_free(g);
  cr_assert(!g, "accepted:\n%s", text);
  cr_assert_str_eq(d.msg, msg);
  cr_assert(d.line == line && d.col == col, "'%s' at %d:%d, expected %d:%d", d.msg, d.line, d.col,
            line, col);
}

/* ---- round trips ---- */
Test(round_trip, shared_examples) {
  cr_assert_geq(round_trip_dir(KILN_SHARED_DIR "/ir-examples/*.mlir"), 5);
}

Test(round_trip, golden_inputs) {
  cr_assert_geq(round_trip_dir(KILN_SOURCE_DIR "/tests/ir/*.mlir"), 8);
}

/* ---- goldens ---- */
static void check_golden(const char *path) {
  size_t len;
  char *text = read_file(path, &len);
  const char *marker = "// CHECK-PRINT:\n";
  char *m = strstr(text, marker);
  while (m && m != text && m[-1] != '\n') m = strstr(m + 1, marker);
  cr_assert(m, "%s: no '// CHECK-PRINT:' line", path);
  /* expected text: the comment lines after the marker, prefix removed */
  char *want = malloc(len + 1), *w = want;
  cr_assert(want);
  for (char *line = m + strlen(marker); *line;) {
    char *nl = strchr(line, '\n');
    size_t ll = nl ? (size_t)(nl - line) : strlen(line);
    if (ll == 2 && memcmp(line, "//", 2) == 0) { /* an empty line */
      line += 2;
      ll = 0;
    } else {
      cr_assert(ll >= 3 && memcmp(line, "// ", 3) == 0, "%s: expected text line without '// '",
                path);
      line += 3;
      ll -= 3;
    }
    memcpy(w, line, ll);
    w += ll;
    *w++ = '\n';
    line += ll + (nl ? 1 : 0);
    if (!nl) break;
  }
  *w = 0;
  ir_diag d;
  ir_graph *g = ir_parse(text, (size_t)(m - text), &d);
  cr_assert(g, "%s: parse failed at %d:%d: %s", path, d.line, d.col, d.msg);
  char *got = print_ok(g);
  cr_assert_str_eq(got, want, "%s: printing differs from CHECK-PRINT", path);
  free(got);
  free(want);
  free(text);
  ir_graph_free(g);
}

Test(golden, printing_matches_check_print) {
  glob_t gl;
  cr_assert(glob(KILN_SOURCE_DIR "/tests/ir/*.mlir", 0, NULL, &gl) == 0);
  cr_assert_geq(gl.gl_pathc, 8);
  for (size_t i = 0; i < gl.gl_pathc; i++) check_golden(gl.gl_pathv[i]);
  globfree(&gl);
}

/* ---- the shared bad examples ---- */
static const struct {
  const char *file;
  int line, col;
} bad_locs[] = {
    {"undefined_value.mlir", 3, 16}, /* at the operand */
    {"truncated.mlir", 4, 1},        /* at the end of input */
    {"unknown_symbol.mlir", 2, 45},  /* at the symbol inside the type */
    {"shape_mismatch.mlir", 3, 3},   /* at the node */
};

Test(bad_examples, rejected_with_expected_message_and_location) {
  glob_t gl;
  cr_assert(glob(KILN_SHARED_DIR "/ir-examples/bad/*.mlir", 0, NULL, &gl) == 0);
  cr_assert_geq(gl.gl_pathc, 4);
  for (size_t i = 0; i < gl.gl_pathc; i++) {
    const char *path = gl.gl_pathv[i];
    size_t len;
    char *text = read_file(path, &len);
    const char *pre = "// expect: ";
    cr_assert(strncmp(text, pre, strlen(pre)) == 0, "%s: no '// expect:' line", path);
    const char *msg = text + strlen(pre);
    size_t mlen = strcspn(msg, "\n");
    int nlines = 1;
    for (size_t k = 0; k < len; k++) nlines += text[k] == '\n';
    ir_diag d;
    memset(&d, 0, sizeof d);
    ir_graph *g = ir_parse(text, len, &d);
    cr_assert(!g, "%s: accepted", path);
    cr_assert(strlen(d.msg) == mlen && memcmp(d.msg, msg, mlen) == 0,
              "%s: got '%s', expected '%.*s'", path, d.msg, (int)mlen, msg);
    cr_assert(d.line >= 2 && d.line <= nlines && d.col >= 1, "%s: location %d:%d", path, d.line,
              d.col);
    const char *base = strrchr(path, '/') + 1;
    for (size_t k = 0; k < sizeof bad_locs / sizeof bad_locs[0]; k++)
      if (strcmp(base, bad_locs[k].file) == 0)
        cr_assert(d.line == bad_locs[k].line && d.col == bad_locs[k].col,
                  "%s: at %d:%d, expected %d:%d", path, d.line, d.col, bad_locs[k].line,
                  bad_locs[k].col);
    free(text);
  }
  globfree(&gl);
}

/* ---- errors, one per test ---- */
#define HEAD "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
#define TAIL "  mo.output %x : !mo.tensor<[5], f32>\n}\n"
#define ERROR_TEST(name, text, line, col, msg)                                                     \
  Test(parse_error, name) { expect_error(text, line, col, msg); }

ERROR_TEST(unknown_op, HEAD "  %0 = mo.frob(%x) : !mo.tensor<[5], f32>\n" TAIL, 2, 8,
           "unknown op 'mo.frob'")
ERROR_TEST(op_without_mo_prefix, HEAD "  %0 = tosa.add(%x, %x) : !mo.tensor<[5], f32>\n" TAIL, 2, 8,
           "unknown op 'tosa.add'")
ERROR_TEST(wrong_operand_count, HEAD "  %0 = mo.add(%x) : !mo.tensor<[5], f32>\n" TAIL, 2, 8,
           "mo.add takes 2 operands, got 1")
ERROR_TEST(wrong_operand_count_shared_name,
           HEAD "  %0 = mo.max(%x, %x, %x) : !mo.tensor<[5], f32>\n" TAIL, 2, 8,
           "mo.max takes 1 or 2 operands, got 3")
ERROR_TEST(wrong_operand_count_one, HEAD "  %0 = mo.relu(%x, %x) : !mo.tensor<[5], f32>\n" TAIL, 2,
           8, "mo.relu takes 1 operand, got 2")
ERROR_TEST(redefinition, HEAD "  %x = mo.relu(%x) : !mo.tensor<[5], f32>\n" TAIL, 2, 3,
           "redefinition of value %x")
ERROR_TEST(
    redefinition_in_one_statement,
    "mo.graph @g(%x: !mo.tensor<[4], f32>) -> (!mo.tensor<[4], f32>) {\n"
    "  %a, %a = mo.split(%x) {split_sizes = [2, 2]} : (!mo.tensor<[4], f32>) -> (!mo.tensor<[2], f32>, !mo.tensor<[2], f32>)\n"
    "  mo.output %x : !mo.tensor<[4], f32>\n}\n",
    2, 7, "redefinition of value %a")
ERROR_TEST(undefined_operand, HEAD "  %0 = mo.add(%x, %y) : !mo.tensor<[5], f32>\n" TAIL, 2, 19,
           "use of undefined value %y")
ERROR_TEST(undefined_output, HEAD "  mo.output %nope : !mo.tensor<[5], f32>\n}\n", 2, 13,
           "use of undefined value %nope")
ERROR_TEST(unknown_dtype,
           "mo.graph @g(%x: !mo.tensor<[5], f33>) -> (!mo.tensor<[5], f32>) {\n" TAIL, 1, 33,
           "unknown dtype 'f33'")
ERROR_TEST(
    unknown_cast_dtype,
    HEAD
    "  %0 = mo.cast(%x) {dtype = int} : (!mo.tensor<[5], f32>) -> !mo.tensor<[5], si32>\n" TAIL,
    2, 29, "unknown dtype 'int'")
ERROR_TEST(malformed_dim,
           "mo.graph @g(%x: !mo.tensor<[5 +], f32>) -> (!mo.tensor<[5], f32>) {\n" TAIL, 1, 32,
           "expected a dim (integer, symbol or parenthesized expression)")
ERROR_TEST(negative_dim,
           "mo.graph @g(%x: !mo.tensor<[-3], f32>) -> (!mo.tensor<[5], f32>) {\n" TAIL, 1, 29,
           "dim -3 is negative")
ERROR_TEST(undeclared_symbol,
           "mo.graph @g<n>(%x: !mo.tensor<[n, m], f32>) -> (!mo.tensor<[5], f32>) {\n" TAIL, 1, 35,
           "symbolic dim 'm' is not declared in the graph's parameter list <n>")
ERROR_TEST(symbol_declared_twice,
           "mo.graph @g<n, n>(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n" TAIL, 1, 16,
           "symbol 'n' is declared twice")
ERROR_TEST(missing_output, HEAD "  %0 = mo.relu(%x) : !mo.tensor<[5], f32>\n}\n", 3, 1,
           "graph @g has no mo.output")
ERROR_TEST(trailing_text, HEAD TAIL "extra\n", 4, 1,
           "expected end of input after the graph, found 'extra'")
ERROR_TEST(statement_after_output,
           HEAD
           "  mo.output %x : !mo.tensor<[5], f32>\n  %0 = mo.relu(%x) : !mo.tensor<[5], f32>\n}\n",
           3, 3, "mo.output must be the last operation of the graph")
ERROR_TEST(truncated_in_op, HEAD "  %0 = mo.relu(%x", 2, 18,
           "unexpected end of input, expected ')'")
ERROR_TEST(missing_paren, HEAD "  %0 = mo.relu(%x : !mo.tensor<[5], f32>\n" TAIL, 2, 19,
           "expected ')', found ':'")
ERROR_TEST(missing_colon, HEAD "  %0 = mo.relu(%x) !mo.tensor<[5], f32>\n" TAIL, 2, 20,
           "expected ':', found '!mo.tensor'")
ERROR_TEST(missing_type, HEAD "  %0 = mo.relu(%x) : f32\n" TAIL, 2, 22,
           "expected a type '!mo.tensor<...>', found 'f32'")
ERROR_TEST(bad_statement, HEAD "  mo.relu(%x) : !mo.tensor<[5], f32>\n" TAIL, 2, 3,
           "expected an operation '%... = mo.<op>', 'mo.output' or '}', found 'mo.relu'")
ERROR_TEST(not_a_graph, "module {\n}\n", 1, 1, "expected 'mo.graph', found 'module'")
ERROR_TEST(empty_input, "", 1, 1, "unexpected end of input, expected 'mo.graph'")
ERROR_TEST(
    result_name_count,
    "mo.graph @g(%x: !mo.tensor<[6], f32>) -> (!mo.tensor<[2], f32>) {\n"
    "  %a, %b, %c = mo.split(%x) {split_sizes = [2, 4]} : (!mo.tensor<[6], f32>) -> (!mo.tensor<[2], f32>, !mo.tensor<[4], f32>)\n"
    "  mo.output %a : !mo.tensor<[2], f32>\n}\n",
    2, 3, "mo.split produces 2 results but 3 names were given")
ERROR_TEST(
    result_type_count,
    HEAD
    "  %0 = mo.relu(%x) : (!mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>, !mo.tensor<[5], f32>)\n" TAIL,
    2, 48, "mo.relu produces 1 result but 2 result types were declared")
ERROR_TEST(
    operand_type_count,
    HEAD
    "  %0 = mo.relu(%x) : (!mo.tensor<[5], f32>, !mo.tensor<[5], f32>) -> !mo.tensor<[5], f32>\n" TAIL,
    2, 22, "mo.relu has 1 operand but 2 operand types were declared")
ERROR_TEST(
    operand_type_mismatch,
    "mo.graph @g(%a: !mo.tensor<[5], f32>, %b: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n"
    "  %0 = \"mo.add\"(%a, %b) : (!mo.tensor<[5], f32>, !mo.tensor<[4], f32>) -> !mo.tensor<[5], f32>\n"
    "  mo.output %0 : !mo.tensor<[5], f32>\n}\n",
    2, 21,
    "operand 1 of mo.add is declared as !mo.tensor<[4], f32> but %b has type !mo.tensor<[5], f32>")
ERROR_TEST(
    output_type_mismatch, HEAD "  mo.output %x : !mo.tensor<[5], si32>\n}\n", 2, 13,
    "operand 0 of mo.output is declared as !mo.tensor<[5], si32> but %x has type !mo.tensor<[5], f32>")
ERROR_TEST(
    signature_mismatch, "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[4], f32>) {\n" TAIL,
    2, 13,
    "result 0 of the graph is declared as !mo.tensor<[4], f32> but mo.output returns %x of type !mo.tensor<[5], f32>")
ERROR_TEST(
    signature_count,
    "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>, !mo.tensor<[5], f32>) {\n" TAIL,
    2, 3, "mo.output returns 1 value but the graph declares 2 results")
ERROR_TEST(duplicate_attribute,
           HEAD "  %0 = mo.softmax(%x) {axis = -1, axis = 0} : !mo.tensor<[5], f32>\n" TAIL, 2, 35,
           "attribute 'axis' is given twice")
ERROR_TEST(unterminated_string,
           HEAD "  %0 = mo.gelu(%x) {approximate = \"tanh} : !mo.tensor<[5], f32>\n" TAIL, 2, 35,
           "unterminated string")
ERROR_TEST(list_of_floats,
           HEAD "  %0 = mo.permute(%x) {dims = [0.5]} : !mo.tensor<[5], f32>\n" TAIL, 2, 32,
           "expected an integer (a list holds integers or strings), found '0.5'")
ERROR_TEST(
    dense_count,
    HEAD
    "  %c = mo.constant {value = #M.dense_array<1.0, 2.0> : tensor<5xf32>} : !mo.tensor<[5], f32>\n" TAIL,
    2, 29, "dense constant has 2 values but its type holds 5")
ERROR_TEST(
    dense_int_range,
    HEAD
    "  %c = mo.constant {value = #M.dense_array<300> : tensor<1xsi8>} : !mo.tensor<[1], si8>\n" TAIL,
    2, 44, "value 300 does not fit in si8")
ERROR_TEST(
    dense_float_range,
    HEAD
    "  %c = mo.constant {value = #M.dense_array<1e39> : tensor<1xf32>} : !mo.tensor<[1], f32>\n" TAIL,
    2, 44, "1e39 is out of range for f32")
ERROR_TEST(
    dense_f16_range,
    HEAD
    "  %c = mo.constant {value = #M.dense_array<65520.0> : tensor<1xf16>} : !mo.tensor<[1], f16>\n" TAIL,
    2, 44, "65520.0 is out of range for f16")
ERROR_TEST(
    dense_bool_value,
    HEAD
    "  %c = mo.constant {value = #M.dense_array<2> : tensor<1xbool>} : !mo.tensor<[1], bool>\n" TAIL,
    2, 44, "expected true or false for a bool value, found '2'")
ERROR_TEST(
    dense_hex_too_wide,
    HEAD
    "  %c = mo.constant {value = #M.dense_array<0x10000> : tensor<1xf16>} : !mo.tensor<[1], f16>\n" TAIL,
    2, 44, "bit pattern 0x10000 does not fit in f16")
ERROR_TEST(integer_attr_range,
           HEAD "  %0 = mo.softmax(%x) {axis = 9223372036854775808} : !mo.tensor<[5], f32>\n" TAIL,
           2, 31, "integer 9223372036854775808 is out of range")
ERROR_TEST(unknown_device,
           "mo.graph @g(%x: !mo.tensor<[5], f32, tpu:0>) -> (!mo.tensor<[5], f32>) {\n" TAIL, 1, 38,
           "unknown device 'tpu' (expected cpu or gpu)")
ERROR_TEST(
    argument_names_count,
    "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) attributes {argument_names = [\"a\", \"b\"]} {\n" TAIL,
    1, 77, "argument_names has 2 entries but the graph has 1 argument")
ERROR_TEST(
    unknown_graph_attribute,
    "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) attributes {color = \"red\"} {\n" TAIL,
    1, 77, "unknown graph attribute 'color' (expected argument_names or result_names)")
ERROR_TEST(verifier_error_located_at_node,
           HEAD
           "  %0 = mo.relu(%x) : !mo.tensor<[4], f32>\n  mo.output %0 : !mo.tensor<[4], f32>\n}\n",
           2, 3,
           "result 0 of mo.relu is declared as !mo.tensor<[4], f32> but is !mo.tensor<[5], f32>")

Test(parse_error, null_diag_is_allowed) {
  cr_assert_null(ir_parse("mo.graph", 8, NULL));
  cr_assert_null(ir_parse(NULL, 0, NULL));
}

Test(parse_error, garbage_bytes_have_a_location) {
  ir_diag d;
  const char text[] = "mo.graph @g(\x01\xff";
  cr_assert_null(ir_parse(text, sizeof text - 1, &d));
  cr_assert_str_eq(d.msg, "expected a value name '%...', found byte 0x01");
  cr_assert(d.line == 1 && d.col == 13);
}

/* ---- parsing details ---- */
static const ir_attr *node_attr(const ir_graph *g, int node, const char *name) {
  cr_assert(node < g->nnodes);
  const ir_attr *a = ir_node_attr(g->nodes[node], name);
  cr_assert(a, "node %d has no attribute %s", node, name);
  return a;
}

#define CONST_GRAPH(vals, ttype, mtype)                                                            \
  "mo.graph @c() -> (" mtype ") {\n  %c = mo.constant {value = #M.dense_array<" vals "> : " ttype  \
  "} : " mtype "\n  mo.output %c : " mtype "\n}\n"

Test(parse, dense_f32_is_little_endian_bytes) {
  ir_graph *g = parse_ok(CONST_GRAPH("3.0, -1", "tensor<2xf32>", "!mo.tensor<[2], f32>"));
  const ir_attr *a = node_attr(g, 0, "value");
  cr_assert_eq(a->kind, IR_ATTR_DENSE);
  cr_assert_eq(a->u.dense.dtype, IR_DT_F32);
  cr_assert_eq(a->u.dense.numel, 2);
  cr_assert(a->u.dense.rank == 1 && a->u.dense.shape[0] == 2);
  const unsigned char want[8] = {0, 0, 0x40, 0x40, 0, 0, 0x80, 0xbf};
  cr_assert_arr_eq(a->u.dense.data, want, 8);
  ir_graph_free(g);
}

Test(parse, dense_scalar_has_rank_zero) {
  ir_graph *g = parse_ok(CONST_GRAPH("7", "tensor<si64>", "!mo.tensor<[], si64>"));
  const ir_attr *a = node_attr(g, 0, "value");
  cr_assert(a->u.dense.rank == 0 && a->u.dense.numel == 1);
  int64_t v;
  memcpy(&v, a->u.dense.data, 8);
  cr_assert_eq(v, 7);
  ir_graph_free(g);
}

Test(parse, dense_zero_dims_are_not_hex) {
  /* "tensor<2x0xf32>" must read as 2 x 0 x f32, not 2 x 0xf32 */
  const char *text = CONST_GRAPH("", "tensor<2x0xf32>", "!mo.tensor<[2, 0], f32>");
  ir_graph *g = parse_ok(text);
  const ir_attr *a = node_attr(g, 0, "value");
  cr_assert(a->u.dense.rank == 2 && a->u.dense.shape[1] == 0 && a->u.dense.numel == 0);
  char *t = print_ok(g);
  cr_assert_str_eq(t, text);
  free(t);
  ir_graph_free(g);
}

Test(parse, dense_f16_decimals_round_to_nearest_even) {
  /* 2049 and 2051 are ties at spacing 2: to 2048 (0x6800) and 2052 (0x6802);
   * 6e-8 is the smallest subnormal (0x0001). */
  ir_graph *g =
      parse_ok(CONST_GRAPH("1.0, 2049, 2051, 6e-8, -0.0", "tensor<5xf16>", "!mo.tensor<[5], f16>"));
  const uint16_t want[5] = {0x3C00, 0x6800, 0x6802, 0x0001, 0x8000};
  const unsigned char *p = node_attr(g, 0, "value")->u.dense.data;
  for (int i = 0; i < 5; i++) cr_assert_eq(p[2 * i] | p[2 * i + 1] << 8, want[i], "element %d", i);
  ir_graph_free(g);
}

Test(parse, dense_nan_bit_patterns_are_kept) {
  ir_graph *g =
      parse_ok(CONST_GRAPH("0x7FC00001, nan, -nan", "tensor<3xf32>", "!mo.tensor<[3], f32>"));
  uint32_t v[3];
  memcpy(v, node_attr(g, 0, "value")->u.dense.data, sizeof v);
  cr_assert_eq(v[0], 0x7FC00001u);
  cr_assert_eq(v[1], 0x7FC00000u);
  cr_assert_eq(v[2], 0xFFC00000u);
  char *t = print_ok(g);
  cr_assert(strstr(t, "#M.dense_array<0x7FC00001, nan, 0xFFC00000>"), "%s", t);
  free(t);
  ir_graph_free(g);
}

Test(parse, string_escapes) {
  ir_graph *g = parse_ok(
      "mo.graph @s() -> (!mo.tensor<[2], f32>) {\n"
      "  %w = mo.constant.external {name = \"a\\\"b\\\\c\\nd\\te\\01\"} : !mo.tensor<[2], f32>\n"
      "  mo.output %w : !mo.tensor<[2], f32>\n}\n");
  cr_assert_str_eq(node_attr(g, 0, "name")->u.s, "a\"b\\c\nd\te\x01");
  char *t = print_ok(g);
  cr_assert(strstr(t, "{name = \"a\\\"b\\\\c\\nd\\te\\01\"}"), "%s", t);
  free(t);
  ir_graph_free(g);
}

Test(parse, attribute_kinds) {
  ir_graph *g = parse_ok(
      "mo.graph @a(%x: !mo.tensor<[2, 3], f32>) -> (!mo.tensor<[3, 2], f32>) {\n"
      "  %p = mo.permute(%x) {dims = [1, 0]} : (!mo.tensor<[2, 3], f32>) -> !mo.tensor<[3, 2], f32>\n"
      "  mo.output %p : !mo.tensor<[3, 2], f32>\n}\n");
  const ir_attr *a = node_attr(g, 0, "dims");
  cr_assert_eq(a->kind, IR_ATTR_INTS);
  cr_assert(a->u.ints.n == 2 && a->u.ints.v[0] == 1 && a->u.ints.v[1] == 0);
  ir_graph_free(g);
  g = parse_ok("mo.graph @a(%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>) {\n"
               "  %n = mo.layer_norm(%x, %x, %x) {epsilon = 2.5e-3} : !mo.tensor<[3], f32>\n"
               "  mo.output %n : !mo.tensor<[3], f32>\n}\n");
  a = node_attr(g, 0, "epsilon");
  cr_assert(a->kind == IR_ATTR_FLOAT && a->u.f == 2.5e-3);
  ir_graph_free(g);
}

Test(parse, graph_names_and_locations) {
  ir_graph *g = parse_ok(
      "mo.graph @n(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) attributes {result_names = [\"y\"], argument_names = [\"x\"]} {\n"
      "  // a comment line\n"
      "    %0 = mo.relu(%x) : !mo.tensor<[5], f32>\n"
      "  mo.output %0 : !mo.tensor<[5], f32>\n}\n");
  cr_assert_str_eq(g->name, "n");
  cr_assert_str_eq(g->input_names[0], "x");
  cr_assert_str_eq(g->output_names[0], "y");
  cr_assert(g->nodes[0]->loc.line == 3 && g->nodes[0]->loc.col == 5);
  cr_assert(g->output_loc.line == 4 && g->output_loc.col == 3);
  cr_assert(!g->syms_declared);
  ir_graph_free(g);
}

Test(parse, symbol_list_sets_syms_declared) {
  ir_graph *g =
      parse_ok("mo.graph @s<b, unused>(%x: !mo.tensor<[b], f32>) -> (!mo.tensor<[b], f32>) {\n"
               "  mo.output %x : !mo.tensor<[b], f32>\n}\n");
  cr_assert(g->syms_declared);
  cr_assert_eq(g->nsyms, 2);
  cr_assert_str_eq(g->syms[1], "unused");
  ir_graph_free(g);
}

Test(parse, reads_only_len_bytes) {
  const char *text =
      "mo.graph @g(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) {\n" TAIL "garbage";
  ir_diag d;
  ir_graph *g = ir_parse(text, strlen(text) - strlen("garbage"), &d);
  cr_assert(g, "%s", d.msg);
  ir_graph_free(g);
}

Test(parse, max_with_one_operand_reduces) {
  ir_graph *g = parse_ok(
      "mo.graph @m(%x: !mo.tensor<[4, 6], f32>) -> (!mo.tensor<[4, 1], f32>) {\n"
      "  %r = mo.max(%x) {axis = 1} : (!mo.tensor<[4, 6], f32>) -> !mo.tensor<[4, 1], f32>\n"
      "  %e = mo.max(%r, %r) : !mo.tensor<[4, 1], f32>\n"
      "  mo.output %e : !mo.tensor<[4, 1], f32>\n}\n");
  cr_assert_eq(g->nodes[0]->op, IR_OP_REDUCE_MAX);
  cr_assert_eq(g->nodes[1]->op, IR_OP_MAX);
  ir_graph_free(g);
}

/* ---- printing details ---- */
Test(print, floats_print_shortest_exact_form) {
  ir_graph *g = parse_ok(
      "mo.graph @f(%x: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>) {\n"
      "  %n = mo.layer_norm(%x, %x, %x) {epsilon = 0.00001} : !mo.tensor<[3], f32>\n"
      "  %c = mo.constant {value = #M.dense_array<3, 0.1, 1e20> : tensor<3xf32>} : !mo.tensor<[3], f32>\n"
      "  %s = mo.add(%n, %c) : !mo.tensor<[3], f32>\n"
      "  mo.output %s : !mo.tensor<[3], f32>\n}\n");
  char *t = print_ok(g);
  cr_assert(strstr(t, "{epsilon = 1.0e-5}"), "%s", t);
  cr_assert(strstr(t, "#M.dense_array<3.0, 0.1, 1.0e20>"), "%s", t);
  free(t);
  ir_graph_free(g);
}

Test(print, api_built_graph) {
  ir_graph *g = ir_graph_new("api");
  cr_assert(g);
  int b = ir_graph_symbol(g, "batch", 5, true);
  const ir_dim *dims[2] = {ir_dim_sym(g->arena, b, g->syms[b]), ir_dim_const(g->arena, 4)};
  ir_type t = {.dtype = IR_DT_F32, .rank = 2, .dims = dims};
  ir_value *x = ir_graph_add_input(g, "x", &t);
  cr_assert(x);
  ir_attr ax = {.name = "axis", .kind = IR_ATTR_INT, .u.i = -1};
  ir_node *n =
      ir_graph_add_node(g, IR_OP_SOFTMAX, &x, 1, &ax, 1, 1, &t, NULL, (ir_loc){0, 0}, NULL);
  cr_assert(n);
  cr_assert_eq(ir_graph_set_outputs(g, n->out, 1, (ir_loc){0, 0}), 0);
  char *txt = print_ok(g);
  cr_assert_str_eq(
      txt,
      "mo.graph @api<batch>(%x: !mo.tensor<[batch, 4], f32>) -> (!mo.tensor<[batch, 4], f32>) {\n"
      "  %1 = mo.softmax(%x) {axis = -1} : !mo.tensor<[batch, 4], f32>\n"
      "  mo.output %1 : !mo.tensor<[batch, 4], f32>\n}\n");
  check_round_trip("api_built_graph", txt, strlen(txt));
  free(txt);
  ir_graph_free(g);
}

Test(print, type_print_truncates_like_snprintf) {
  ir_graph *g = ir_graph_new("t");
  const ir_dim *dims[1] = {ir_dim_const(g->arena, 5)};
  ir_type t = {.dtype = IR_DT_SI64, .rank = 1, .dims = dims, .device = {IR_DEV_GPU, 2}};
  char buf[64];
  size_t n = ir_type_print(&t, buf, sizeof buf);
  cr_assert_str_eq(buf, "!mo.tensor<[5], si64, gpu:2>");
  cr_assert_eq(n, strlen(buf));
  char small[8];
  cr_assert_eq(ir_type_print(&t, small, sizeof small), n);
  cr_assert_str_eq(small, "!mo.ten");
  cr_assert_eq(ir_type_print(&t, NULL, 0), n);
  ir_type s = {.dtype = IR_DT_BOOL, .rank = 0};
  ir_type_print(&s, buf, sizeof buf);
  cr_assert_str_eq(buf, "!mo.tensor<[], bool>");
  ir_graph_free(g);
}

/* ---- fuzz: mutated examples never crash; what parses round-trips ---- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32) % n;
}

Test(fuzz, mutated_examples_fail_cleanly_or_round_trip) {
  static const char *frags[] = {"%",
                                "(",
                                ")",
                                "<",
                                ">",
                                "[",
                                "]",
                                "{",
                                "}",
                                ",",
                                ":",
                                "=",
                                "\"",
                                "#",
                                "-",
                                "0x",
                                "nan",
                                "-inf",
                                "->",
                                "!mo.tensor<[",
                                "mo.output",
                                "//",
                                "\n",
                                " * ",
                                " floordiv ",
                                "99999999999999999999",
                                "0",
                                "f16",
                                "bool",
                                "tensor<",
                                "#M.dense_array<",
                                "%a:2",
                                "\\",
                                "gpu:1",
                                "1e999",
                                "mo.split",
                                "mo.cumsum",
                                "exclusive = true",
                                "mo.floor_div",
                                "mo.gather_nd",
                                "batch_dims = 1",
                                "mo.scatter_nd_max",
                                "repeats = [2, 3]",
                                "mo.conv2d", "mo.max_pool2d", "ceil_mode = true", "mode = \"edge\"",
                                "mo.top_k", "mo.bottom_k", "k = 0", "mo.argsort",
                                "ascending = false"};
  glob_t g1, g2;
  cr_assert(glob(KILN_SHARED_DIR "/ir-examples/*.mlir", 0, NULL, &g1) == 0);
  cr_assert(glob(KILN_SOURCE_DIR "/tests/ir/*.mlir", 0, NULL, &g2) == 0);
  size_t nf = g1.gl_pathc + g2.gl_pathc, lens[64];
  char *files[64];
  cr_assert(nf <= 64);
  for (size_t i = 0; i < nf; i++)
    files[i] = read_file(i < g1.gl_pathc ? g1.gl_pathv[i] : g2.gl_pathv[i - g1.gl_pathc], &lens[i]);
  size_t cap = 1 << 16;
  char *buf = malloc(cap);
  int parsed = 0;
  for (int it = 0; it < 4000; it++) {
    size_t k = rnd((uint32_t)nf), n = lens[k];
    if (n + 1024 > cap) continue;
    memcpy(buf, files[k], n);
    for (int m = 1 + (int)rnd(3); m > 0; m--) {
      size_t pos = n ? rnd((uint32_t)n) : 0;
      switch (rnd(4)) {
      case 0: /* overwrite a byte */
        if (n) buf[pos] = (char)rnd(256);
        break;
      case 1: { /* delete a few bytes */
        size_t l = 1 + rnd(8);
        if (pos + l > n) l = n - pos;
        memmove(buf + pos, buf + pos + l, n - pos - l);
        n -= l;
        break;
      }
      case 2: { /* insert a fragment */
        const char *f = frags[rnd(sizeof frags / sizeof frags[0])];
        size_t l = strlen(f);
        memmove(buf + pos + l, buf + pos, n - pos);
        memcpy(buf + pos, f, l);
        n += l;
        break;
      }
      default: /* truncate */ n = pos;
      }
    }
    ir_diag d;
    ir_graph *g = ir_parse(buf, n, &d);
    if (!g) {
      cr_assert(d.msg[0] && d.line >= 1 && d.col >= 1, "iteration %d: bad diagnostic %d:%d '%s'",
                it, d.line, d.col, d.msg);
      continue;
    }
    parsed++;
    char *t = print_ok(g);
    check_round_trip("fuzz", t, strlen(t));
    free(t);
    ir_graph_free(g);
  }
  cr_assert_gt(parsed, 0);
  free(buf);
  for (size_t i = 0; i < nf; i++) free(files[i]);
  globfree(&g1);
  globfree(&g2);
}

/* ---- grammar pieces for the C API ---- */
Test(pieces, parse_type_resolves_symbols) {
  ir_graph *g = ir_graph_new("t");
  ir_type t;
  ir_diag d;
  cr_assert_eq(ir_parse_type(g, "  !mo.tensor<[batch * 2, 64], f16, gpu:1> ", 42, &t, &d), 0, "%s",
               d.msg);
  cr_assert(t.rank == 2 && t.dtype == IR_DT_F16 && t.device.kind == IR_DEV_GPU && t.device.id == 1);
  cr_assert_eq(g->nsyms, 1);
  char buf[80];
  ir_type_print(&t, buf, sizeof buf);
  cr_assert_str_eq(buf, "!mo.tensor<[2 * batch, 64], f16, gpu:1>");
  ir_graph_free(g);
}

Test(pieces, parse_type_rejects_trailing_text_and_undeclared_symbols) {
  ir_graph *g = ir_graph_new("t");
  ir_type t;
  ir_diag d;
  const char *s = "!mo.tensor<[5], f32> x";
  cr_assert_eq(ir_parse_type(g, s, strlen(s), &t, &d), -1);
  cr_assert_str_eq(d.msg, "expected end of the type, found 'x'");
  cr_assert(d.line == 1 && d.col == 22);
  g->syms_declared = true;
  s = "!mo.tensor<[n], f32>";
  cr_assert_eq(ir_parse_type(g, s, strlen(s), &t, &d), -1);
  cr_assert_str_eq(d.msg, "symbolic dim 'n' is not declared in the graph's parameter list <>");
  cr_assert(d.line == 1 && d.col == 13);
  ir_graph_free(g);
}

Test(pieces, parse_attrs) {
  ir_graph *g = ir_graph_new("t");
  ir_attr *a;
  int n;
  ir_diag d;
  const char *s = "{split_sizes = [2, 3], axis = 0, dtype = si64, name = \"w\"}";
  cr_assert_eq(ir_parse_attrs(g, s, strlen(s), &a, &n, &d), 0, "%s", d.msg);
  cr_assert_eq(n, 4);
  cr_assert(strcmp(a[0].name, "split_sizes") == 0 && a[0].kind == IR_ATTR_INTS &&
            a[0].u.ints.n == 2);
  cr_assert(strcmp(a[1].name, "axis") == 0 && a[1].kind == IR_ATTR_INT && a[1].u.i == 0);
  cr_assert(a[2].kind == IR_ATTR_DTYPE && a[2].u.dtype == IR_DT_SI64);
  cr_assert(a[3].kind == IR_ATTR_STRING && strcmp(a[3].u.s, "w") == 0);
  cr_assert_eq(ir_parse_attrs(g, " ", 1, &a, &n, &d), 0);
  cr_assert_eq(n, 0);
  s = "{axis = 1,\n axis = 2}";
  cr_assert_eq(ir_parse_attrs(g, s, strlen(s), &a, &n, &d), -1);
  cr_assert_str_eq(d.msg, "attribute 'axis' is given twice");
  cr_assert(d.line == 2 && d.col == 2);
  ir_graph_free(g);
}

/* ---- runtime facts (kiln.* attributes) ---- */

#define TT(dims) "!mo.tensor<[" dims "], f32>"
static const char transposed_b[] =
    "mo.graph @t<m>(%a: " TT("m, 12") ", %b: " TT("9, 12") ") -> (" TT("m, 9") ") {\n"
    "  %c = mo.matmul(%a, %b) {kiln.transpose_b = 1} : (" TT("m, 12") ", " TT("9, 12") ") -> " TT("m, 9") "\n"
    "  mo.output %c : " TT("m, 9") "\n}\n";

/* kiln.transpose_b would make the matmul read B as [N, K]: graph text
 * cannot claim it. */
Test(runtime_attrs, user_text_cannot_set_transpose_b) {
  expect_error(transposed_b, 2, 27,
               "attribute 'kiln.transpose_b' is set by the runtime, not by graph text");
}

Test(runtime_attrs, every_kiln_name_is_refused_where_it_stands) {
  static const char *const names[] = {"kiln.packed_b", "kiln.library", "kiln.elementwise",
                                      "kiln.simt_stub", "kiln.anything_else"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char text[512], msg[160];
    snprintf(text, sizeof text,
             "mo.graph @u(%%x: " TT("4") ") -> (" TT("4") ") {\n"
             "  %%y = mo.custom(%%x) {symbol = \"k\",\n      %s = 1} : (" TT("4") ") -> " TT("4") "\n"
             "  mo.output %%y : " TT("4") "\n}\n",
             names[i]);
    snprintf(msg, sizeof msg, "attribute '%s' is set by the runtime, not by graph text", names[i]);
    expect_error(text, 3, 7, msg);
  }
  /* the graph's own attribute dictionary too */
  expect_error("mo.graph @u(%x: " TT("4") ") -> (" TT("4") ") attributes {kiln.x = 1} {\n"
               "  mo.output %x : " TT("4") "\n}\n",
               1, 77, "attribute 'kiln.x' is set by the runtime, not by graph text");
}

Test(runtime_attrs, parse_attrs_refuses_kiln_names) {
  ir_graph *g = ir_graph_new("t");
  ir_attr *a;
  int n;
  ir_diag d;
  const char *s = "{transpose_b = 1, kiln.transpose_b = 1}";
  cr_assert_eq(ir_parse_attrs(g, s, strlen(s), &a, &n, &d), -1);
  cr_assert_str_eq(d.msg, "attribute 'kiln.transpose_b' is set by the runtime, not by graph text");
  cr_assert(d.line == 1 && d.col == 19, "at %d:%d", d.line, d.col);
  s = "{kilnx = 1, kiln_y = 2}"; /* only the kiln. namespace is the runtime's */
  cr_assert_eq(ir_parse_attrs(g, s, strlen(s), &a, &n, &d), 0, "%s", d.msg);
  cr_assert_eq(n, 2);
  ir_graph_free(g);
}

Test(runtime_attrs, kernel_text_entry_accepts_them) {
  ir_diag d;
  ir_graph *g = ir_parse_kernel_text(transposed_b, strlen(transposed_b), &d);
  cr_assert(g, "%d:%d: %s", d.line, d.col, d.msg);
  cr_assert_eq(ir_node_attr_int(g->nodes[0], "kiln.transpose_b", 0), 1);
  char *p1 = print_ok(g);
  ir_graph *g2 = ir_parse_kernel_text(p1, strlen(p1), &d);
  cr_assert(g2, "%s", d.msg);
  char *p2 = print_ok(g2);
  cr_assert_str_eq(p2, p1);
  free(p1);
  free(p2);
  ir_graph_free(g2);
  ir_graph_free(g);
}

/* The fact made the runtime's way (the transpose folded into the matmul):
 * its kernel text reads back through the kernel-text entry only. */
Test(runtime_attrs, folded_kernel_text_round_trips_through_the_kernel_entry) {
  ir_graph *g = parse_ok(
      "mo.graph @f<m>(%a: " TT("m, 12") ", %b: " TT("9, 12") ") -> (" TT("m, 9") ") {\n"
      "  %bt = mo.transpose(%b) {axis_1 = 0, axis_2 = 1} : (" TT("9, 12") ") -> " TT("12, 9") "\n"
      "  %c = mo.matmul(%a, %bt) : (" TT("m, 12") ", " TT("12, 9") ") -> " TT("m, 9") "\n"
      "  mo.output %c : " TT("m, 9") "\n}\n");
  ir_diag d;
  cr_assert_eq(ir_graph_fold_transpose_b(g, &d), 1, "%s", d.msg);
  char *kt = ir_kernel_text(g, g->nodes[0], NULL, NULL);
  cr_assert(kt && strstr(kt, "kiln.transpose_b = 1"), "%s", kt ? kt : "(null)");
  ir_graph *user = ir_parse(kt, strlen(kt), &d);
  cr_assert_null(user, "user parsing accepted a kernel text's runtime fact");
  cr_assert(strstr(d.msg, "is set by the runtime"), "%s", d.msg);
  ir_graph *kg = ir_parse_kernel_text(kt, strlen(kt), &d);
  cr_assert(kg, "%s", d.msg);
  char *again = print_ok(kg);
  cr_assert_str_eq(again, kt);
  free(again);
  free(kt);
  ir_graph_free(kg);
  ir_graph_free(g);
}
