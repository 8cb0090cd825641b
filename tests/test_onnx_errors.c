/* test_onnx_errors.c - the ONNX importer on models built here with
 * protobuf-c: bad input (truncated file, an initializer whose size does not
 * match its type, missing or short external data, unsupported ops listed all
 * at once) is a clear error naming what is wrong; weights the model carries
 * (in the file or external, mapped) are bound at compile and outlive the
 * graph; dim_param dims are symbols; PyTorch's Shape -> Gather -> Concat ->
 * Reshape folds into a symbolic reshape; a Slice to a symbolic end runs;
 * Range and Tile over initializers become mo.range and mo.tile; Expand to a
 * shape input broadcasts both ways; signed integer Div truncates and
 * Mod with fmod = 1 takes the dividend's sign; Einsum on two operands
 * matches a naive sum over the letters; a bidirectional RNN and one with
 * sequence_lens match a naive loop; an f16 Gemm and MatMul run in f16;
 * float Mod with fmod = 1 is C's fmod bit for bit; TfIdfVectorizer's IDF
 * and TFIDF modes match a naive count;
 * Asinh / Acosh match libm on huge values; If, Loop and Scan (opset 8's
 * batched form too; outer values
 * read inside, nested subgraphs, trip count and condition, scan outputs,
 * a carried value that grows, reverse directions and axes) match naive
 * loops, and bad control flow is a clear error; axes of a length not known
 * at import take the rank the model declares, or are refused naming them;
 * the CLI's
 * run / import / check on such models (the imported text plus its weights
 * run bit for bit alike). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx.pb-c.h"
#include "src/io.h"
#include "src/rt.h"
#include "tests/support/shell.h"

#include "support/onnx_build.h"

TestSuite(onnx_errors, .fini = free_kept);
TestSuite(onnx_cli, .fini = free_kept);

/* The usual model: y = x + w, x and w of n f32. */
static mb *add_model(int64_t n, size_t wbytes) {
  mb *b = mb_new();
  static const char *const in[] = {"x", "w"};
  char dim[32];
  snprintf(dim, sizeof dim, "%lld", (long long)n);
  const char *d[1] = {keep(strdup(dim))};
  b->ins[b->g.n_input++] = vinfo("x", 1, d);
  b->outs[b->g.n_output++] = vinfo("y", 1, d);
  init_f32(b, "w", n, wbytes);
  node(b, "Add", "add0", 2, in, "y");
  return b;
}

static char *tmpdir(void) {
  char *d = keep(strdup("/tmp/kiln_onnx_XXXXXX"));
  cr_assert(mkdtemp(d));
  return d;
}

static void remove_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  char *out = NULL;
  shell_capture(cmd, &out);
  free(out);
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  fwrite(data, 1, len, f);
  fclose(f);
}

/* Compile g (then free it) and run y = x + w on x = 1.0..; check y. */
static void run_add(kiln_graph *g, int64_t n) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_graph_free(g); /* the model keeps the weights' memory */
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, &n, st), *y = NULL;
  for (int64_t i = 0; i < n; i++) ((float *)kiln_tensor_data(x))[i] = 1.0f;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  for (int64_t i = 0; i < n; i++) cr_assert_eq(((float *)kiln_tensor_data(y))[i], 1.0f + (float)i);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(onnx_errors, truncated_file_is_an_io_error) {
  size_t len;
  uint8_t *buf = pack(add_model(100, 400), &len);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kiln_graph_from_onnx_memory(buf, len - 7, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  cr_assert(strstr(kiln_status_message(st), "truncated"), "%s", kiln_status_message(st));
  cr_assert_null(kiln_graph_from_onnx_memory("not a model at all", 18, st));
  cr_assert_null(kiln_graph_from_onnx_file("/nonexistent/model.onnx", st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_NOT_FOUND);
  kiln_status_free(st);
  free(buf);
}

Test(onnx_errors, initializer_size_mismatch_names_the_tensor) {
  size_t len;
  uint8_t *buf = pack(add_model(100, 399), &len);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kiln_graph_from_onnx_memory(buf, len, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  cr_assert(strstr(kiln_status_message(st), "'w'") && strstr(kiln_status_message(st), "399"),
            "%s", kiln_status_message(st));
  kiln_status_free(st);
  free(buf);
}

/* found by tests/fuzz/fuzz_onnx.c: a node with no outputs */
Test(onnx_errors, node_without_outputs) {
  mb *b = add_model(4, 16);
  b->nodes[0]->n_output = 0;
  size_t len;
  uint8_t *buf = pack(b, &len);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kiln_graph_from_onnx_memory(buf, len, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO);
  cr_assert(strstr(kiln_status_message(st), "without outputs"), "%s", kiln_status_message(st));
  kiln_status_free(st);
  free(buf);
}

Test(onnx_errors, weights_in_the_file_are_bound_at_compile) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = import_built(add_model(100, 400), st);
  char *txt = kiln_graph_print(g, st);
  cr_assert(strstr(txt, "constant.external"), "%s", txt);
  free(txt);
  run_add(g, 100);
  kiln_status_free(st);
}

Test(onnx_errors, external_data_is_mapped_and_bound) {
  char *dir = tmpdir(), path[512];
  float data[110];
  for (int i = 0; i < 110; i++) data[i] = (float)(i - 10);
  snprintf(path, sizeof path, "%s/w.bin", dir);
  write_file(path, data, sizeof data);
  mb *b = add_model(100, 400);
  external(b->inits[0], "w.bin", "40", "400"); /* starts at element 10: value 0 */
  size_t len;
  uint8_t *buf = pack(b, &len);
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  write_file(path, buf, len);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_from_onnx_file(path, st);
  cr_assert(g, "%s", kiln_status_message(st));
  run_add(g, 100);
  /* from memory, external data has no directory to come from */
  cr_assert_null(kiln_graph_from_onnx_memory(buf, len, st));
  cr_assert(strstr(kiln_status_message(st), "w.bin"), "%s", kiln_status_message(st));
  kiln_status_free(st);
  free(buf);
  remove_dir(dir);
}

Test(onnx_errors, missing_or_short_external_data) {
  char *dir = tmpdir(), path[512];
  float data[4] = {0};
  snprintf(path, sizeof path, "%s/short.bin", dir);
  write_file(path, data, sizeof data);
  kiln_status *st = kiln_status_new();
  const char *cases[][3] = {{"gone.bin", "0", NULL}, {"short.bin", "0", NULL},
                            {"short.bin", "8", "400"}, {"../etc/passwd", "0", NULL}};
  const char *want[] = {"gone.bin", "outside", "outside", "leaves"};
  for (int c = 0; c < 4; c++) {
    mb *b = add_model(100, 400);
    external(b->inits[0], cases[c][0], cases[c][1], cases[c][2]);
    size_t len;
    uint8_t *buf = pack(b, &len);
    snprintf(path, sizeof path, "%s/m%d.onnx", dir, c);
    write_file(path, buf, len);
    free(buf);
    cr_assert_null(kiln_graph_from_onnx_file(path, st));
    const char *msg = kiln_status_message(st);
    cr_assert(strstr(msg, "'w'") && strstr(msg, want[c]), "case %d: %s", c, msg);
  }
  kiln_status_free(st);
  remove_dir(dir);
}

Test(onnx_errors, unsupported_ops_are_listed_all_at_once) {
  mb *b = mb_new();
  const char *d[1] = {"4"};
  b->ins[b->g.n_input++] = vinfo("x", 1, d);
  b->outs[b->g.n_output++] = vinfo("z", 1, d);
  static const char *const i0[] = {"x"}, *const i1[] = {"a"}, *const i2[] = {"b"},
                           *const i3[] = {"c"};
  node(b, "FancyOp", "first", 1, i0, "a");
  node(b, "Relu", "ok", 1, i1, "b");
  node(b, "OtherOp", "second", 1, i2, "c");
  node(b, "FancyOp", "third", 1, i3, "z");
  size_t len;
  uint8_t *buf = pack(b, &len);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kiln_graph_from_onnx_memory(buf, len, st));
  const char *msg = kiln_status_message(st);
  cr_assert_eq(kiln_status_code(st), KILN_ERR_UNSUPPORTED, "%s", msg);
  cr_assert(strstr(msg, "FancyOp (2 nodes)") && strstr(msg, "'first'") && strstr(msg, "'third'") &&
                strstr(msg, "OtherOp (1 node)") && strstr(msg, "'second'") &&
                strstr(msg, "opset 17") && !strstr(msg, "Relu"),
            "%s", msg);
  kiln_status_free(st);
  free(buf);
}

Test(onnx_errors, dim_param_and_shape_subgraph_fold_to_symbols) {
  /* y = Reshape(x, Concat(Unsqueeze(Shape(x)[0] * Shape(x)[1]), [-1])) */
  mb *b = mb_new();
  const char *d[3] = {"batch", "seq", "4"};
  b->ins[b->g.n_input++] = vinfo("x", 3, d);
  const char *od[2] = {"bs", "4"};
  b->outs[b->g.n_output++] = vinfo("y", 2, od);
  static const int64_t zero = 0, one = 1, minus1 = -1;
  init_i64(b, "i0", 1, &zero);
  init_i64(b, "i1", 1, &one);
  init_i64(b, "m1", 1, &minus1);
  b->inits[0]->n_dims = 0; /* scalar indices */
  b->inits[1]->n_dims = 0;
  static const char *const s_in[] = {"x"}, *const g0[] = {"s", "i0"}, *const g1[] = {"s", "i1"},
                           *const mu[] = {"a", "b"}, *const un[] = {"p", "i0"},
                           *const cc[] = {"q", "m1"}, *const rs[] = {"x", "shape"};
  node(b, "Shape", "shape_of", 1, s_in, "s");
  node(b, "Gather", "g0", 2, g0, "a");
  node(b, "Gather", "g1", 2, g1, "b");
  node(b, "Mul", "mul", 2, mu, "p");
  node(b, "Unsqueeze", "un", 2, un, "q");
  node(b, "Concat", "cat", 2, cc, "shape")->n_attribute = 0;
  Onnx__AttributeProto *axs[1] = {attr_int("axis", 0)};
  b->nodes[b->g.n_node - 1]->n_attribute = 1;
  b->nodes[b->g.n_node - 1]->attribute = axs;
  node(b, "Reshape", "reshape", 2, rs, "y");
  kiln_status *st = kiln_status_new();
  kiln_graph *g = import_built(b, st);
  char *txt = kiln_graph_print(g, st);
  cr_assert(strstr(txt, "[batch * seq, 4]") && !strstr(txt, "gather"), "%s", txt);
  free(txt);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t shape[3] = {2, 3, 4};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 3, shape, st), *y = NULL;
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_shape(y)[0], 6);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Slice whose end is a symbolic dim (PyTorch's position ids sliced to the
 * sequence length): y = x[1 : n : 2] for x of 10 and n from Shape(s). */
Test(onnx_errors, slice_to_a_symbolic_end) {
  mb *b = mb_new();
  const char *xd[1] = {"10"}, *sd[1] = {"n"}, *yd[1] = {"m"};
  b->ins[b->g.n_input++] = vinfo("x", 1, xd);
  b->ins[b->g.n_input++] = vinfo("s", 1, sd);
  b->outs[b->g.n_output++] = vinfo("y", 1, yd);
  static const int64_t one = 1, zero = 0, two = 2;
  init_i64(b, "starts", 1, &one);
  init_i64(b, "axes", 1, &zero);
  init_i64(b, "steps", 1, &two);
  static const char *const sh_in[] = {"s"}, *const sl[] = {"x", "starts", "ends", "axes", "steps"};
  node(b, "Shape", "shape_of", 1, sh_in, "ends");
  node(b, "Slice", "slice", 5, sl, "y");
  kiln_status *st = kiln_status_new();
  kiln_graph *g = import_built(b, st);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t ten = 10, n = 6;
  kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 1, &ten, st),
                        kiln_tensor_new(KILN_FLOAT32, 1, &n, st)},
              *y = NULL;
  for (int i = 0; i < 10; i++) ((float *)kiln_tensor_data(in[0]))[i] = (float)i;
  cr_assert_eq(kiln_model_execute(m, in, 2, &y, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_shape(y)[0], 3);
  for (int i = 0; i < 3; i++) cr_expect_eq(((float *)kiln_tensor_data(y))[i], (float)(1 + 2 * i));
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Expand with its shape a graph input: kiln reads the shape before the run
 * and broadcasts both ways (a 1 in the shape keeps x's dim, a shorter shape
 * aligns right); a shape that does not broadcast is an execute error naming
 * the op. */
Test(onnx_errors, expand_with_a_shape_input) {
  mb *b = mb_new();
  const char *xd[2] = {"3", "1"}, *sd[1] = {"3"}, *yd[3] = {"a", "b", "c"};
  b->ins[b->g.n_input++] = vinfo("x", 2, xd);
  b->ins[b->g.n_input++] = vinfo("s", 1, sd);
  b->ins[1]->type->tensor_type->elem_type = 7; /* int64 */
  b->outs[b->g.n_output++] = vinfo("y", 3, yd);
  static const char *const ex[] = {"x", "s"};
  node(b, "Expand", "expand", 2, ex, "y");
  kiln_status *st = kiln_status_new();
  kiln_graph *g = import_built(b, st);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t xs[2] = {3, 1}, three = 3;
  kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, st),
                        kiln_tensor_new(KILN_INT64, 1, &three, st)},
              *y = NULL;
  for (int i = 0; i < 3; i++) ((float *)kiln_tensor_data(in[0]))[i] = (float)(i + 1);
  int64_t *sv = kiln_tensor_data(in[1]);
  sv[0] = 2, sv[1] = 1, sv[2] = 4; /* [3, 1] with [2, 1, 4]: [2, 3, 4] */
  cr_assert_eq(kiln_model_execute(m, in, 2, &y, 1, st), 0, "%s", kiln_status_message(st));
  const int64_t *ys = kiln_tensor_shape(y);
  cr_assert(ys[0] == 2 && ys[1] == 3 && ys[2] == 4, "shape [%lld, %lld, %lld]", (long long)ys[0],
            (long long)ys[1], (long long)ys[2]);
  for (int i = 0; i < 24; i++)
    cr_expect_eq(((float *)kiln_tensor_data(y))[i], (float)(i / 4 % 3 + 1), "element %d", i);
  kiln_tensor_free(y);
  y = NULL;
  sv[1] = 2; /* x's 3 against 2 */
  cr_assert_neq(kiln_model_execute(m, in, 2, &y, 1, st), 0);
  cr_expect(strstr(kiln_status_message(st), "mo.broadcast_to") &&
                strstr(kiln_status_message(st), "does not broadcast with shape[1] = 2"),
            "%s", kiln_status_message(st));
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Slice bounds and an Expand shape computed inside the graph from an input
 * (a - 1 .. a + 1, and |s|): kiln reads them before the graph runs, per
 * execute; bounds past either end clamp as numpy's, an empty slice is
 * empty. */
Test(onnx_errors, slice_and_expand_from_computed_data) {
  mb *b = mb_new();
  const char *xd[1] = {"6"}, *ad[1] = {"1"}, *yd[1] = {"p"}, *zd[2] = {"q", "r"},
             *sd[1] = {"2"};
  b->ins[b->g.n_input++] = vinfo("x", 1, xd);
  b->ins[b->g.n_input++] = vinfo_of("a", 7, 1, ad);
  b->ins[b->g.n_input++] = vinfo_of("s", 7, 1, sd);
  b->outs[b->g.n_output++] = vinfo("y", 1, yd);
  b->outs[b->g.n_output++] = vinfo("z", 2, zd);
  static const int64_t one[1] = {1};
  init_i64(b, "one", 1, one);
  static const char *const sub[] = {"a", "one"}, *const add[] = {"a", "one"},
                           *const sl[] = {"x", "st", "en"}, *const ab[] = {"s"},
                           *const ex[] = {"x", "sa"};
  node(b, "Sub", "sub", 2, sub, "st");
  node(b, "Add", "add", 2, add, "en");
  node(b, "Slice", "slice", 3, sl, "y");
  node(b, "Abs", "abs", 1, ab, "sa");
  node(b, "Expand", "expand", 2, ex, "z");
  built r = compile_built(b);
  int64_t six = 6, k1 = 1, k2 = 2;
  static const struct {
    int64_t a, s0, s1, first, len;
  } C[] = {{2, -2, 6, 2, 2}, {0, 1, -6, 0, 0}, {6, 3, 1, 6, 1}, {9, -1, 1, 0, 0}};
  for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
    kiln_tensor *in[3] = {kiln_tensor_new(KILN_FLOAT32, 1, &six, r.st),
                          kiln_tensor_new(KILN_INT64, 1, &k1, r.st),
                          kiln_tensor_new(KILN_INT64, 1, &k2, r.st)},
                *out[2] = {NULL, NULL};
    for (int e = 0; e < 6; e++) ((float *)kiln_tensor_data(in[0]))[e] = (float)(e + 1);
    *(int64_t *)kiln_tensor_data(in[1]) = C[i].a;
    ((int64_t *)kiln_tensor_data(in[2]))[0] = C[i].s0;
    ((int64_t *)kiln_tensor_data(in[2]))[1] = C[i].s1;
    cr_assert_eq(kiln_model_execute(r.m, in, 3, out, 2, r.st), 0, "case %zu: %s", i,
                 kiln_status_message(r.st));
    cr_expect_eq(kiln_tensor_shape(out[0])[0], C[i].len, "case %zu: %lld", i,
                 (long long)kiln_tensor_shape(out[0])[0]);
    for (int64_t e = 0; e < C[i].len; e++)
      cr_expect_eq(((float *)kiln_tensor_data(out[0]))[e], (float)(C[i].first + e),
                   "case %zu element %lld", i, (long long)e);
    const int64_t *zs = kiln_tensor_shape(out[1]);
    int64_t q = C[i].s0 < 0 ? -C[i].s0 : C[i].s0; /* [q, 1 or 6] with [6]: [q, 6] */
    cr_expect(zs[0] == q && zs[1] == 6, "case %zu: z is [%lld, %lld]", i, (long long)zs[0],
              (long long)zs[1]);
    for (int j = 0; j < 3; j++) kiln_tensor_free(in[j]);
    for (int j = 0; j < 2; j++) kiln_tensor_free(out[j]);
  }
  built_free(&r);
}

/* ---- the CLI: kiln run MODEL.onnx, kiln import, kiln check ---- */
/* Range over f32 initializers (known at import) is a mo.range of the length
 * they give; Tile with its repeats in an initializer is one mo.tile. */
Test(onnx_errors, range_and_tile_from_initializers) {
  mb *b = mb_new();
  const char *d[2] = {"2", "3"}, *od[2] = {"4", "3"}, *rd[1] = {"6"};
  b->ins[b->g.n_input++] = vinfo("x", 2, d);
  b->outs[b->g.n_output++] = vinfo("y", 2, od);
  b->outs[b->g.n_output++] = vinfo("r", 1, rd);
  static const float vals[3] = {0.5f, 2.0f, 0.25f};
  static const char *const names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; i++) {
    Onnx__TensorProto *t = init_f32(b, names[i], 1, 4);
    t->n_dims = 0; /* scalars */
    memcpy(t->raw_data.data, &vals[i], 4);
  }
  static const int64_t reps[2] = {2, 1};
  init_i64(b, "reps", 2, reps);
  static const char *const ti[] = {"x", "reps"}, *const ri[] = {"start", "limit", "delta"};
  node(b, "Tile", "tile", 2, ti, "y");
  node(b, "Range", "range", 3, ri, "r");
  kiln_status *st = kiln_status_new();
  kiln_graph *g = import_built(b, st);
  char *txt = kiln_graph_print(g, st);
  cr_assert(strstr(txt, "mo.tile") && strstr(txt, "repeats = [2, 1]") && strstr(txt, "mo.range") &&
                strstr(txt, "[6], f32"),
            "%s", txt);
  free(txt);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t shape[2] = {2, 3};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, shape, st), *y[2] = {NULL, NULL};
  for (int i = 0; i < 6; i++) ((float *)kiln_tensor_data(x))[i] = (float)i;
  cr_assert_eq(kiln_model_execute(m, &x, 1, y, 2, st), 0, "%s", kiln_status_message(st));
  for (int i = 0; i < 12; i++) cr_expect_eq(((float *)kiln_tensor_data(y[0]))[i], (float)(i % 6));
  for (int i = 0; i < 6; i++) cr_expect_eq(((float *)kiln_tensor_data(y[1]))[i], 0.5f + 0.25f * (float)i);
  kiln_tensor_free(x);
  kiln_tensor_free(y[0]);
  kiln_tensor_free(y[1]);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Signed integer Div truncates toward zero and Mod with fmod = 1 has the
 * dividend's sign (C's / and %), from kiln's floor_div and floor mod; the
 * divisor is an initializer, the dividend a graph input (nothing folds). */
Test(onnx_errors, signed_integer_div_and_fmod) {
  static const int64_t num[8] = {7, -7, 7, -7, 6, -6, 0, -9}, den[8] = {2, 2, -2, -2, 3, -3, 5, 4};
  static const int64_t quot[8] = {3, -3, -3, 3, 2, 2, 0, -2}, rem[8] = {1, -1, 1, -1, 0, 0, 0, -1};
  for (int fmod = 0; fmod < 2; fmod++) {
    mb *b = mb_new();
    const char *d[1] = {"8"};
    b->ins[b->g.n_input++] = vinfo("x", 1, d);
    b->outs[b->g.n_output++] = vinfo("y", 1, d);
    b->ins[0]->type->tensor_type->elem_type = 7; /* int64 */
    b->outs[0]->type->tensor_type->elem_type = 7;
    init_i64(b, "w", 8, den);
    static const char *const in[] = {"x", "w"};
    Onnx__NodeProto *n = node(b, fmod ? "Mod" : "Div", "op", 2, in, "y");
    if (fmod) {
      node_attrs(n, 1, attr_int("fmod", 1));
    }
    built c0 = compile_built(b);
    kiln_status *st = c0.st;
    kiln_model *m = c0.m;
    int64_t n8 = 8;
    kiln_tensor *x = kiln_tensor_borrow(KILN_INT64, 1, &n8, (void *)num, st), *y = NULL;
    cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
    const int64_t *got = kiln_tensor_data(y), *want = fmod ? rem : quot;
    for (int i = 0; i < 8; i++)
      cr_expect_eq(got[i], want[i], "%s: %lld, %lld -> %lld, want %lld", fmod ? "fmod" : "div",
                   (long long)num[i], (long long)den[i], (long long)got[i], (long long)want[i]);
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    built_free(&c0);
  }
}

/* A naive einsum over letter sizes: every assignment of the letters, the
 * product of the operands summed into the output (the oracle). */
static void einsum_ref(const char *ta, const char *tb, const char *to, const int *size,
                       const float *a, const float *b, float *y, int ny) {
  char letters[16];
  int nl = 0, val[16] = {0};
  for (const char *p = ta; *p; p++)
    if (!memchr(letters, *p, (size_t)nl)) letters[nl++] = *p;
  for (const char *p = tb; *p; p++)
    if (!memchr(letters, *p, (size_t)nl)) letters[nl++] = *p;
  for (int i = 0; i < ny; i++) y[i] = 0;
  for (;;) {
    int ia = 0, ib = 0, iy = 0;
    for (const char *p = ta; *p; p++)
      ia = ia * size[*p - 'a'] + val[(char *)memchr(letters, *p, (size_t)nl) - letters];
    for (const char *p = tb; *p; p++)
      ib = ib * size[*p - 'a'] + val[(char *)memchr(letters, *p, (size_t)nl) - letters];
    for (const char *p = to; *p; p++)
      iy = iy * size[*p - 'a'] + val[(char *)memchr(letters, *p, (size_t)nl) - letters];
    y[iy] += a[ia] * b[ib];
    int k = nl - 1;
    while (k >= 0 && ++val[k] == size[letters[k] - 'a']) val[k--] = 0;
    if (k < 0) break;
  }
}

/* Einsum on two operands: attention's scores, an implicit output, an outer
 * product, a letter summed out of one operand, a full contraction; against
 * the naive oracle. */
Test(onnx_errors, einsum_two_operands) {
  static const struct {
    const char *eq, *ta, *tb, *to;
  } cases[] = {
      {"bhqd,bhkd->bhqk", "bhqd", "bhkd", "bhqk"},
      {"ij,jk", "ij", "jk", "ik"},
      {"i,j->ij", "i", "j", "ij"},
      {"ij,jk->i", "ij", "jk", "i"},
      {"ij,ij->", "ij", "ij", ""},
      {"bij,bkj->bki", "bij", "bkj", "bki"},
  };
  static const int size[26] = {['b' - 'a'] = 2, ['h' - 'a'] = 3, ['q' - 'a'] = 4, ['d' - 'a'] = 5,
                               ['k' - 'a'] = 3, ['i' - 'a'] = 4, ['j' - 'a'] = 5};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const char *terms[3] = {cases[c].ta, cases[c].tb, cases[c].to};
    char dimtxt[3][8][4];
    const char *dims[3][8];
    int64_t shape[3][8], numel[3] = {1, 1, 1};
    for (int k = 0; k < 3; k++)
      for (int i = 0; terms[k][i]; i++) {
        shape[k][i] = size[terms[k][i] - 'a'];
        numel[k] *= shape[k][i];
        snprintf(dimtxt[k][i], 4, "%d", (int)shape[k][i]);
        dims[k][i] = dimtxt[k][i];
      }
    mb *b = mb_new();
    b->ins[b->g.n_input++] = vinfo("a", (int)strlen(terms[0]), dims[0]);
    b->ins[b->g.n_input++] = vinfo("b", (int)strlen(terms[1]), dims[1]);
    b->outs[b->g.n_output++] = vinfo("y", (int)strlen(terms[2]), dims[2]);
    static const char *const in[] = {"a", "b"};
    Onnx__NodeProto *n = node(b, "Einsum", "einsum", 2, in, "y");
    node_attrs(n, 1, attr_str("equation", cases[c].eq));
    built c0 = compile_built(b);
    kiln_status *st = c0.st;
    kiln_model *m = c0.m;
    kiln_tensor *x[2], *y = NULL;
    for (int k = 0; k < 2; k++) {
      x[k] = kiln_tensor_new(KILN_FLOAT32, (int)strlen(terms[k]), shape[k], st);
      for (int64_t i = 0; i < numel[k]; i++)
        ((float *)kiln_tensor_data(x[k]))[i] = (float)((i * 7 + k * 3) % 11) - 5.0f;
    }
    cr_assert_eq(kiln_model_execute(m, x, 2, &y, 1, st), 0, "%s", kiln_status_message(st));
    float want[256];
    einsum_ref(terms[0], terms[1], terms[2], size, kiln_tensor_data(x[0]),
               kiln_tensor_data(x[1]), want, (int)numel[2]);
    cr_expect_eq(kiln_tensor_numel(y), numel[2], "%s", cases[c].eq);
    for (int64_t i = 0; i < numel[2] && i < kiln_tensor_numel(y); i++)
      cr_expect(fabsf(((float *)kiln_tensor_data(y))[i] - want[i]) <= 1e-4f,
                "%s: [%lld] %g, want %g", cases[c].eq, (long long)i,
                (double)((float *)kiln_tensor_data(y))[i], (double)want[i]);
    kiln_tensor_free(x[0]);
    kiln_tensor_free(x[1]);
    kiln_tensor_free(y);
    built_free(&c0);
  }
}

/* An f32 initializer of n elements from v (dims given by the caller). */
static Onnx__TensorProto *init_f32_values(mb *b, const char *name, int rank, const int64_t *dims,
                                          const float *v) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  Onnx__TensorProto *t = init_f32(b, name, n, (size_t)n * 4);
  t->n_dims = (size_t)rank;
  t->dims = keep(calloc((size_t)rank, sizeof *t->dims));
  memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  memcpy(t->raw_data.data, v, (size_t)n * 4);
  return t;
}

/* A tanh RNN, T = 4 steps, batch 2, input 3, hidden 2, against a naive C
 * loop: bidirectional (Y [T, 2, B, H] and Y_h), and forward with
 * sequence_lens {4, 2} (the short row keeps its state and outputs zeros). */
Test(onnx_errors, rnn_bidirectional_and_sequence_lens) {
  enum { T = 4, B = 2, I = 3, H = 2 };
  float w[2][H][I], r[2][H][H], bias[2][2 * H], xs[T][B][I];
  for (int d = 0; d < 2; d++) {
    for (int i = 0; i < H * I; i++) (&w[d][0][0])[i] = 0.1f * (float)((i * 5 + d * 3) % 7) - 0.3f;
    for (int i = 0; i < H * H; i++) (&r[d][0][0])[i] = 0.2f * (float)((i * 3 + d) % 5) - 0.4f;
    for (int i = 0; i < 2 * H; i++) bias[d][i] = 0.05f * (float)(i + d) - 0.1f;
  }
  for (int i = 0; i < T * B * I; i++) (&xs[0][0][0])[i] = 0.25f * (float)((i * 7) % 9) - 1.0f;
  static const int64_t lens_v[B] = {4, 2};
  for (int with_lens = 0; with_lens < 2; with_lens++) {
    int ndir = with_lens ? 1 : 2;
    /* the naive reference */
    float want_y[T][2][B][H] = {{{{0}}}}, want_h[2][B][H] = {{{0}}};
    for (int d = 0; d < ndir; d++)
      for (int bb = 0; bb < B; bb++) {
        float h[H] = {0};
        for (int s = 0; s < T; s++) {
          int t = d == 1 ? T - 1 - s : s;
          if (with_lens && t >= lens_v[bb]) continue; /* keeps h; Y stays 0 */
          float nh[H];
          for (int j = 0; j < H; j++) {
            float acc = bias[d][j] + bias[d][H + j];
            for (int i = 0; i < I; i++) acc += xs[t][bb][i] * w[d][j][i];
            for (int k = 0; k < H; k++) acc += h[k] * r[d][j][k];
            nh[j] = tanhf(acc);
          }
          memcpy(h, nh, sizeof h);
          memcpy(want_y[t][d][bb], h, sizeof h);
        }
        memcpy(want_h[d][bb], h, sizeof h);
      }
    mb *b = mb_new();
    const char *xd[3] = {"4", "2", "3"}, *yd[4] = {"4", ndir == 2 ? "2" : "1", "2", "2"},
               *hd[3] = {ndir == 2 ? "2" : "1", "2", "2"};
    b->ins[b->g.n_input++] = vinfo("x", 3, xd);
    b->outs[b->g.n_output++] = vinfo("y", 4, yd);
    b->outs[b->g.n_output++] = vinfo("y_h", 3, hd);
    init_f32_values(b, "w", 3, (int64_t[]){ndir, H, I}, &w[0][0][0]);
    init_f32_values(b, "r", 3, (int64_t[]){ndir, H, H}, &r[0][0][0]);
    init_f32_values(b, "b", 2, (int64_t[]){ndir, 2 * H}, &bias[0][0]);
    static const char *const ins[] = {"x", "w", "r", "b", "lens"};
    if (with_lens) init_i64(b, "lens", B, lens_v);
    Onnx__NodeProto *n = node(b, "RNN", "rnn", with_lens ? 5 : 4, ins, "y");
    node_outputs(n, 2, "y", "y_h");
    node_attrs(n, 2, attr_int("hidden_size", H),
               attr_str("direction", ndir == 2 ? "bidirectional" : "forward"));
    built c0 = compile_built(b);
    kiln_status *st = c0.st;
    kiln_model *m = c0.m;
    int64_t xshape[3] = {T, B, I};
    kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 3, xshape, &xs[0][0][0], st),
                *y[2] = {NULL, NULL};
    cr_assert_eq(kiln_model_execute(m, &x, 1, y, 2, st), 0, "%s", kiln_status_message(st));
    const float *gy = kiln_tensor_data(y[0]), *gh = kiln_tensor_data(y[1]);
    for (int t = 0; t < T; t++)
      for (int d = 0; d < ndir; d++)
        for (int i = 0; i < B * H; i++)
          cr_expect(fabsf(gy[(t * ndir + d) * B * H + i] - (&want_y[t][d][0][0])[i]) < 1e-5f,
                    "lens %d: Y[%d][%d] element %d: %g, want %g", with_lens, t, d, i,
                    (double)gy[(t * ndir + d) * B * H + i], (double)(&want_y[t][d][0][0])[i]);
    for (int i = 0; i < ndir * B * H; i++)
      cr_expect(fabsf(gh[i] - (&want_h[0][0][0])[i]) < 1e-5f,
                "lens %d: Y_h element %d: %g, want %g", with_lens, i, (double)gh[i],
                (double)(&want_h[0][0][0])[i]);
    kiln_tensor_free(x);
    kiln_tensor_free(y[0]);
    kiln_tensor_free(y[1]);
    built_free(&c0);
  }
}

/* A half-precision model: Gemm (alpha 0.5, beta 2, transB) and MatMul on
 * f16, whose scalars the importer makes f16 (values exact in f16). */
Test(onnx_errors, float16_gemm_and_matmul) {
  mb *b = mb_new();
  const char *xd[2] = {"2", "3"}, *yd[2] = {"2", "2"};
  b->ins[b->g.n_input++] = vinfo("x", 2, xd);
  b->outs[b->g.n_output++] = vinfo("y", 2, yd);
  b->outs[b->g.n_output++] = vinfo("z", 2, yd);
  b->ins[0]->type->tensor_type->elem_type = 10; /* FLOAT16 */
  b->outs[0]->type->tensor_type->elem_type = 10;
  b->outs[1]->type->tensor_type->elem_type = 10;
  static const float wv[6] = {1, 2, 3, 4, 5, 6}, cv[2] = {1, -1}, mv[6] = {2, 0, 0, 2, 1, 1};
  static const char *const names[3] = {"w", "c", "m"};
  const float *vals[3] = {wv, cv, mv};
  int64_t dims[3][2] = {{2, 3}, {2, 0}, {3, 2}};
  for (int k = 0; k < 3; k++) {
    int64_t ne = k == 1 ? 2 : 6;
    _Float16 *h = keep(calloc((size_t)ne, sizeof *h));
    for (int64_t i = 0; i < ne; i++) h[i] = (_Float16)vals[k][i];
    Onnx__TensorProto *t = init_f32(b, names[k], ne, (size_t)ne * 2);
    t->data_type = 10;
    t->n_dims = k == 1 ? 1 : 2;
    t->dims = keep(calloc(2, sizeof *t->dims));
    memcpy(t->dims, dims[k], sizeof dims[k]);
    t->raw_data.data = (uint8_t *)h;
  }
  static const char *const gi[] = {"x", "w", "c"}, *const mi[] = {"x", "m"};
  Onnx__NodeProto *n = node(b, "Gemm", "gemm", 3, gi, "y");
  node_attrs(n, 3, attr_float("alpha", 0.5f), attr_float("beta", 2.0f), attr_int("transB", 1));
  node(b, "MatMul", "mm", 2, mi, "z");
  built c0 = compile_built(b);
  int64_t shape[2] = {2, 3};
  _Float16 xv[6] = {1, 0, 2, -1, 3, 1};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT16, 2, shape, xv, c0.st), *y[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(c0.m, &x, 1, y, 2, c0.st), 0, "%s", kiln_status_message(c0.st));
  /* y = 0.5 x w^T + 2 c; z = x m */
  static const float want_y[4] = {5.5f, 6.0f, 6.0f, 6.5f}, want_z[4] = {4, 2, -1, 7};
  for (int i = 0; i < 4; i++) {
    cr_expect_eq((float)((_Float16 *)kiln_tensor_data(y[0]))[i], want_y[i], "y[%d]", i);
    cr_expect_eq((float)((_Float16 *)kiln_tensor_data(y[1]))[i], want_z[i], "z[%d]", i);
  }
  kiln_tensor_free(x);
  kiln_tensor_free(y[0]);
  kiln_tensor_free(y[1]);
  built_free(&c0);
}

/* Asinh and Acosh against libm, past the point where x * x overflows f32
 * (the importer switches to log(2|x|) there) and with asinh's sign. */
Test(onnx_errors, asinh_and_acosh_of_huge_values) {
  static const char *const ops[2] = {"Asinh", "Acosh"};
  static const float xs[2][4] = {{-1e10f, -0.5f, 0.25f, 3e38f}, {1.0f, 1.5f, 1e10f, 3e38f}};
  for (int k = 0; k < 2; k++) {
    mb *b = mb_new();
    const char *d[1] = {"4"};
    b->ins[b->g.n_input++] = vinfo("x", 1, d);
    b->outs[b->g.n_output++] = vinfo("y", 1, d);
    static const char *const in[] = {"x"};
    node(b, ops[k], "f", 1, in, "y");
    built c0 = compile_built(b);
    int64_t four = 4;
    kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, &four, (void *)xs[k], c0.st), *y = NULL;
    cr_assert_eq(kiln_model_execute(c0.m, &x, 1, &y, 1, c0.st), 0, "%s",
                 kiln_status_message(c0.st));
    for (int i = 0; i < 4; i++) {
      double want = k ? acosh((double)xs[k][i]) : asinh((double)xs[k][i]);
      double got = ((const float *)kiln_tensor_data(y))[i];
      cr_expect(fabs(got - want) <= 1e-6 + 1e-5 * fabs(want), "%s(%g) = %g, want %g", ops[k],
                (double)xs[k][i], got, want);
    }
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    built_free(&c0);
  }
}

/* TopK over [4, 3] along axis 0, K = 2 from an initializer: bottom_k (largest
 * = 0), two outputs; then K as a graph input gives the same answer. */
Test(onnx_errors, top_k_with_k_from_an_initializer_or_an_input) {
  for (int dyn = 0; dyn < 2; dyn++) {
    mb *b = mb_new();
    const char *d[2] = {"4", "3"}, *od[2] = {"2", "3"}, *kd[1] = {"1"};
    b->ins[b->g.n_input++] = vinfo("x", 2, d);
    b->outs[b->g.n_output++] = vinfo("v", 2, od);
    b->outs[b->g.n_output++] = vinfo("i", 2, od);
    b->outs[1]->type->tensor_type->elem_type = 7; /* INT64 */
    static const int64_t k[1] = {2};
    if (dyn) {
      b->ins[b->g.n_input++] = vinfo("k", 1, kd);
      b->ins[1]->type->tensor_type->elem_type = 7;
    } else {
      init_i64(b, "k", 1, k);
    }
    static const char *const ins[] = {"x", "k"};
    Onnx__NodeProto *n = node(b, "TopK", "topk", 2, ins, "v");
    node_outputs(n, 2, "v", "i");
    node_attrs(n, 2, attr_int("axis", 0), attr_int("largest", 0));
    size_t len;
    uint8_t *buf = pack(b, &len);
    kiln_status *st = kiln_status_new();
    kiln_graph *g = kiln_graph_from_onnx_memory(buf, len, st);
    free(buf);
    cr_assert(g, "%s", kiln_status_message(st));
    char *txt = kiln_graph_print(g, st);
    /* K as data: the whole axis sorted, then sliced to K as it runs */
    cr_assert(strstr(txt, "mo.bottom_k") && strstr(txt, dyn ? "k = 4" : "k = 2"), "%s", txt);
    free(txt);
    kiln_context *ctx = kiln_context_new(st);
    kiln_model *m = kiln_model_compile(ctx, g, st);
    cr_assert(m, "%s", kiln_status_message(st));
    int64_t shape[2] = {4, 3}, one = 1;
    kiln_tensor *x[2] = {kiln_tensor_new(KILN_FLOAT32, 2, shape, st),
                         kiln_tensor_new(KILN_INT64, 1, &one, st)}, *y[2] = {NULL, NULL};
    static const float xv[12] = {5, 1, 2, 0, 1, 9, 3, 1, -4, 0, 7, 8};
    memcpy(kiln_tensor_data(x[0]), xv, sizeof xv);
    memcpy(kiln_tensor_data(x[1]), k, sizeof k);
    cr_assert_eq(kiln_model_execute(m, x, 1 + dyn, y, 2, st), 0, "%s", kiln_status_message(st));
    static const float wv[6] = {0, 1, -4, 0, 1, 2};
    static const int64_t wi[6] = {1, 0, 2, 3, 1, 0};
    for (int i = 0; i < 6; i++) {
      cr_expect_eq(((float *)kiln_tensor_data(y[0]))[i], wv[i], "value %d", i);
      cr_expect_eq(((int64_t *)kiln_tensor_data(y[1]))[i], wi[i], "index %d", i);
    }
    kiln_tensor_free(x[0]);
    kiln_tensor_free(x[1]);
    kiln_tensor_free(y[0]);
    kiln_tensor_free(y[1]);
    kiln_model_free(m);
    kiln_context_free(ctx);
    kiln_graph_free(g);
    kiln_status_free(st);
  }
}

/* Gelu (opset 20) with approximate "none" and "tanh" against the formulas;
 * another spelling is refused naming it. */
Test(onnx_errors, gelu_of_opset_20) {
  static const char *const modes[] = {"none", "tanh", "erf"};
  for (int mi = 0; mi < 3; mi++) {
    mb *b = mb_new();
    b->op.version = 20;
    const char *d[1] = {"5"};
    b->ins[b->g.n_input++] = vinfo("x", 1, d);
    b->outs[b->g.n_output++] = vinfo("y", 1, d);
    static const char *const ins[] = {"x"};
    Onnx__NodeProto *n = node(b, "Gelu", "gelu", 1, ins, "y");
    node_attrs(n, 1, attr_str("approximate", modes[mi]));
    size_t len;
    uint8_t *buf = pack(b, &len);
    kiln_status *st = kiln_status_new();
    kiln_graph *g = kiln_graph_from_onnx_memory(buf, len, st);
    free(buf);
    if (mi == 2) {
      cr_assert_null(g);
      cr_expect(strstr(kiln_status_message(st), "approximate 'erf'"), "%s",
                kiln_status_message(st));
      kiln_status_free(st);
      continue;
    }
    cr_assert(g, "%s", kiln_status_message(st));
    kiln_context *ctx = kiln_context_new(st);
    kiln_model *m = kiln_model_compile(ctx, g, st);
    cr_assert(m, "%s", kiln_status_message(st));
    int64_t shape[1] = {5};
    kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, shape, st), *y = NULL;
    static const float xv[5] = {-3, -0.5f, 0, 0.75f, 2.5f};
    memcpy(kiln_tensor_data(x), xv, sizeof xv);
    cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
    for (int i = 0; i < 5; i++) {
      double v = xv[i];
      double want = mi == 0 ? 0.5 * v * (1 + erf(v / sqrt(2.0)))
                            : 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      float got = ((float *)kiln_tensor_data(y))[i];
      cr_expect(fabs(got - want) <= 1e-6 + 1e-5 * fabs(want), "%s x=%g: %.9g, want %.9g",
                modes[mi], v, got, want);
    }
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    kiln_model_free(m);
    kiln_context_free(ctx);
    kiln_graph_free(g);
    kiln_status_free(st);
  }
}

/* RandomUniformLike (x's shape, seed 5, [-1, 2)) and RandomNormal (shape
 * [4000], mean 3, scale 0.5): kiln's generator, so values in range, the
 * same on every execute, the moments near the asked ones. */
Test(onnx_errors, random_ops_draw_from_kiln_generator) {
  mb *b = mb_new();
  const char *d[1] = {"n"}, *d2[1] = {"4000"};
  b->ins[b->g.n_input++] = vinfo("x", 1, d);
  b->outs[b->g.n_output++] = vinfo("u", 1, d);
  b->outs[b->g.n_output++] = vinfo("z", 1, d2);
  static const char *const ins[] = {"x"};
  Onnx__NodeProto *u = node(b, "RandomUniformLike", "u0", 1, ins, "u");
  node_attrs(u, 3, attr_float("low", -1), attr_float("high", 2), attr_float("seed", 5));
  Onnx__NodeProto *z = node(b, "RandomNormal", "z0", 0, NULL, "z");
  z->n_attribute = 3;
  z->attribute = keep(calloc(3, sizeof *z->attribute));
  z->attribute[0] = attr_float("mean", 3);
  z->attribute[1] = attr_float("scale", 0.5f);
  Onnx__AttributeProto *shape = attr_of("shape", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  static int64_t n4000 = 4000;
  shape->n_ints = 1;
  shape->ints = &n4000;
  z->attribute[2] = shape;
  kiln_status *st = kiln_status_new();
  kiln_graph *g = import_built(b, st);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t n = 300;
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, &n, st), *out[2][2] = {{NULL}};
  for (int run = 0; run < 2; run++)
    cr_assert_eq(kiln_model_execute(m, &x, 1, out[run], 2, st), 0, "%s",
                 kiln_status_message(st));
  const float *uv = kiln_tensor_data(out[0][0]), *zv = kiln_tensor_data(out[0][1]);
  cr_expect_eq(memcmp(uv, kiln_tensor_data(out[1][0]), 300 * sizeof(float)), 0);
  cr_expect_eq(memcmp(zv, kiln_tensor_data(out[1][1]), 4000 * sizeof(float)), 0);
  double lo = 9, hi = -9, mean = 0, var = 0;
  for (int i = 0; i < 300; i++) lo = fmin(lo, uv[i]), hi = fmax(hi, uv[i]);
  cr_expect(lo >= -1 && hi < 2 && lo < 0 && hi > 1, "uniform in [%g, %g]", lo, hi);
  for (int i = 0; i < 4000; i++) mean += zv[i] / 4000.0;
  for (int i = 0; i < 4000; i++) var += (zv[i] - mean) * (zv[i] - mean) / 3999.0;
  cr_expect(fabs(mean - 3) < 0.05 && fabs(sqrt(var) - 0.5) < 0.05, "mean %g, std %g", mean,
            sqrt(var));
  for (int run = 0; run < 2; run++)
    for (int k = 0; k < 2; k++) kiln_tensor_free(out[run][k]);
  kiln_tensor_free(x);
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Float Mod with fmod = 1 is C's fmod bit for bit, also where the quotient
 * is huge or the divisor infinite (a - b * trunc(a / b) would not be). */
Test(onnx_errors, float_fmod_is_exact) {
  mb *b = mb_new();
  static const char *const d8[1] = {"8"}, *const ab[] = {"a", "b"};
  b->ins[b->g.n_input++] = vinfo("a", 1, d8);
  b->ins[b->g.n_input++] = vinfo("b", 1, d8);
  b->outs[b->g.n_output++] = vinfo("y", 1, d8);
  node_attrs(node(b, "Mod", "fm", 2, ab, "y"), 1, attr_int("fmod", 1));
  built c0 = compile_built(b);
  static const float av[8] = {1e10f, -1e10f, -7.5f, 7.5f, -4.3f, 5.0f, 3e38f, -0.75f};
  static const float bv[8] = {3.0f, 0.7f, INFINITY, -INFINITY, 2.1f, -3.0f, -1e-3f, 0.25f};
  int64_t eight = 8;
  kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 1, &eight, (void *)av, c0.st),
                        kiln_tensor_borrow(KILN_FLOAT32, 1, &eight, (void *)bv, c0.st)};
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(c0.m, in, 2, &y, 1, c0.st), 0, "%s", kiln_status_message(c0.st));
  for (int i = 0; i < 8; i++)
    cr_expect_eq(((const float *)kiln_tensor_data(y))[i], fmodf(av[i], bv[i]),
                 "fmod(%g, %g) = %g, want %g", (double)av[i], (double)bv[i],
                 (double)((const float *)kiln_tensor_data(y))[i], (double)fmodf(av[i], bv[i]));
  kiln_tensor_free(in[0]);
  kiln_tensor_free(in[1]);
  kiln_tensor_free(y);
  built_free(&c0);
}

/* ---- control flow: If, Loop, Scan ---- */
static Onnx__AttributeProto *attr_graph(const char *name, mb *sub) {
  Onnx__AttributeProto *a = attr_of(name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = &sub->g;
  return a;
}

static const char *const d4[1] = {"4"}, *const d3[1] = {"3"};

/* y = If(c) then x + w (w an initializer of the outer graph) else x * x. */
Test(onnx_errors, if_branches_read_outer_values) {
  mb *b = mb_new(), *th = mb_new(), *el = mb_new();
  b->ins[b->g.n_input++] = vinfo_of("c", 9, 0, NULL);
  b->ins[b->g.n_input++] = vinfo("x", 1, d4);
  b->outs[b->g.n_output++] = vinfo("y", 1, d4);
  init_f32(b, "w", 4, 16);
  static const char *const xw[] = {"x", "w"}, *const xx[] = {"x", "x"}, *const c[] = {"c"};
  node(th, "Add", "then_add", 2, xw, "t");
  th->outs[th->g.n_output++] = vinfo("t", 1, d4);
  node(el, "Mul", "else_mul", 2, xx, "e");
  el->outs[el->g.n_output++] = vinfo("e", 1, d4);
  Onnx__NodeProto *n = node(b, "If", "if0", 1, c, "y");
  node_attrs(n, 2, attr_graph("then_branch", th), attr_graph("else_branch", el));
  built c0 = compile_built(b);
  static const float xs[4] = {1.5f, -2.0f, 3.0f, 0.5f};
  for (int pick = 0; pick < 2; pick++) {
    bool cv = pick == 0;
    int64_t four = 4;
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_BOOL, 0, NULL, &cv, c0.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 1, &four, (void *)xs, c0.st)};
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_model_execute(c0.m, in, 2, &y, 1, c0.st), 0, "%s",
                 kiln_status_message(c0.st));
    for (int i = 0; i < 4; i++) {
      float want = cv ? xs[i] + (float)i : xs[i] * xs[i];
      cr_expect_eq(((const float *)kiln_tensor_data(y))[i], want, "c=%d y[%d]", cv, i);
    }
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
    kiln_tensor_free(y);
  }
  built_free(&c0);
}

/* The branches return values of x's symbolic shape: the If's result keeps
 * x's dims (batch), so it adds to x; run at batch 2 and 3. */
Test(onnx_errors, if_result_keeps_outer_symbolic_dims) {
  mb *b = mb_new(), *th = mb_new(), *el = mb_new();
  static const char *const bd[2] = {"batch", "3"}, *const xi[] = {"x"}, *const c[] = {"c"};
  static const char *const yx[] = {"y", "x"};
  b->ins[b->g.n_input++] = vinfo_of("c", 9, 0, NULL);
  b->ins[b->g.n_input++] = vinfo("x", 2, bd);
  b->outs[b->g.n_output++] = vinfo("z", 2, bd);
  node(th, "Relu", "r", 1, xi, "t");
  th->outs[th->g.n_output++] = vinfo("t", 2, bd);
  node(el, "Neg", "m", 1, xi, "e");
  el->outs[el->g.n_output++] = vinfo("e", 2, bd);
  node_attrs(node(b, "If", "pick", 1, c, "y"), 2, attr_graph("then_branch", th),
             attr_graph("else_branch", el));
  node(b, "Add", "plus_x", 2, yx, "z");
  built c0 = compile_built(b);
  char dim[32];
  kiln_value_dim((kiln_value *)c0.g->ir->outputs[0], 0, dim, sizeof dim);
  cr_expect_str_eq(dim, "batch");
  static const float xs[9] = {-1, 2, -3, 4, -5, 6, 0.5f, -0.25f, 7};
  for (int64_t rows = 2; rows <= 3; rows++)
    for (int pick = 0; pick < 2; pick++) {
      bool cv = pick == 0;
      int64_t sh[2] = {rows, 3};
      kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_BOOL, 0, NULL, &cv, c0.st),
                            kiln_tensor_borrow(KILN_FLOAT32, 2, sh, (void *)xs, c0.st)};
      kiln_tensor *z = NULL;
      cr_assert_eq(kiln_model_execute(c0.m, in, 2, &z, 1, c0.st), 0, "%s",
                   kiln_status_message(c0.st));
      cr_assert_eq(kiln_tensor_shape(z)[0], rows);
      for (int i = 0; i < rows * 3; i++) {
        float want = (cv ? (xs[i] > 0 ? xs[i] : 0) : -xs[i]) + xs[i];
        cr_expect_eq(((const float *)kiln_tensor_data(z))[i], want, "z[%d]", i);
      }
      kiln_tensor_free(in[0]);
      kiln_tensor_free(in[1]);
      kiln_tensor_free(z);
    }
  built_free(&c0);
}

/* Loop(M, cond, y0 = x): y += x; go on while sum(y) < lim; scan output
 * If(it > 1) then y * it else y - x (a nested subgraph reading x two scopes
 * up), against a naive loop: stopped by M, by the condition, and never run. */
Test(onnx_errors, loop_trip_count_condition_and_scan_output) {
  mb *b = mb_new(), *body = mb_new(), *th = mb_new(), *el = mb_new();
  b->ins[b->g.n_input++] = vinfo_of("M", 7, 0, NULL);
  b->ins[b->g.n_input++] = vinfo_of("cond", 9, 0, NULL);
  b->ins[b->g.n_input++] = vinfo("x", 1, d3);
  b->ins[b->g.n_input++] = vinfo("lim", 1, (const char *const[]){"1"});
  b->outs[b->g.n_output++] = vinfo("y", 1, d3);
  b->outs[b->g.n_output++] = vinfo("scan", 0, NULL);
  body->ins[body->g.n_input++] = vinfo_of("it", 7, 0, NULL);
  body->ins[body->g.n_input++] = vinfo_of("c_in", 9, 0, NULL);
  body->ins[body->g.n_input++] = vinfo("y_in", 1, d3);
  static const char *const yx[] = {"y_in", "x"}, *const ysum[] = {"y_out"};
  static const char *const tl[] = {"total", "lim"}, *const itn[] = {"it"};
  static const char *const gt[] = {"itf", "one"}, *const gc[] = {"big"};
  static const char *const ym[] = {"y_out", "itf"}, *const ys[] = {"y_out", "x"};
  node(body, "Add", "acc", 2, yx, "y_out");
  node_attrs(node(body, "ReduceSum", "total", 1, ysum, "total"), 1, attr_int("keepdims", 0));
  node(body, "Less", "go", 2, tl, "c_out");
  node_attrs(node(body, "Cast", "itf", 1, itn, "itf"), 1, attr_int("to", 1));
  init_f32(body, "one", 1, 4); /* [0.0]: it > 0 */
  node(body, "Greater", "big", 2, gt, "big");
  node(th, "Mul", "scale", 2, ym, "t");
  th->outs[th->g.n_output++] = vinfo("t", 1, d3);
  node(el, "Sub", "less_x", 2, ys, "e");
  el->outs[el->g.n_output++] = vinfo("e", 1, d3);
  node_attrs(node(body, "If", "pick", 1, gc, "s"), 2, attr_graph("then_branch", th),
             attr_graph("else_branch", el));
  body->outs[body->g.n_output++] = vinfo_of("c_out", 9, 0, NULL);
  body->outs[body->g.n_output++] = vinfo("y_out", 1, d3);
  body->outs[body->g.n_output++] = vinfo("s", 1, d3);
  static const char *const lin[] = {"M", "cond", "x"};
  Onnx__NodeProto *n = node(b, "Loop", "loop0", 3, lin, "y");
  node_outputs(n, 2, "y", "scan");
  node_attrs(n, 1, attr_graph("body", body));
  built c0 = compile_built(b);
  static const float xs[3] = {1.0f, 2.0f, 3.0f};
  static const struct { int64_t m; bool cond; float lim; int iters; } cases[] = {
      {5, true, 1000.0f, 5}, {10, true, 20.0f, 3}, {0, true, 1000.0f, 0}, {4, false, 1e3f, 0}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t three = 3, one = 1;
    kiln_tensor *in[4] = {kiln_tensor_borrow(KILN_INT64, 0, NULL, (void *)&cases[k].m, c0.st),
                          kiln_tensor_borrow(KILN_BOOL, 0, NULL, (void *)&cases[k].cond, c0.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 1, &three, (void *)xs, c0.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 1, &one, (void *)&cases[k].lim,
                                             c0.st)};
    kiln_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(kiln_model_execute(c0.m, in, 4, out, 2, c0.st), 0, "%s",
                 kiln_status_message(c0.st));
    float y[3] = {xs[0], xs[1], xs[2]}, scan[16][3];
    int it = 0;
    for (bool go = cases[k].cond; it < cases[k].m && go; it++) { /* the oracle */
      float total = 0;
      for (int j = 0; j < 3; j++) total += y[j] += xs[j];
      go = total < cases[k].lim;
      for (int j = 0; j < 3; j++) scan[it][j] = it > 0 ? y[j] * (float)it : y[j] - xs[j];
    }
    cr_expect_eq(it, cases[k].iters);
    for (int j = 0; j < 3; j++) cr_expect_eq(((const float *)kiln_tensor_data(out[0]))[j], y[j]);
    cr_assert_eq(kiln_tensor_rank(out[1]), 2);
    cr_expect_eq(kiln_tensor_shape(out[1])[0], it, "case %zu: %lld scan rows", k,
                 (long long)kiln_tensor_shape(out[1])[0]);
    for (int r = 0; r < it; r++)
      for (int j = 0; j < 3; j++)
        cr_expect_eq(((const float *)kiln_tensor_data(out[1]))[r * 3 + j], scan[r][j],
                     "case %zu scan[%d][%d]", k, r, j);
    for (int i = 0; i < 4; i++) kiln_tensor_free(in[i]);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(out[1]);
  }
  built_free(&c0);
}

/* Loop(M, "", y0): y = Concat(y, y): a carried value whose length doubles. */
Test(onnx_errors, loop_state_that_grows) {
  mb *b = mb_new(), *body = mb_new();
  b->ins[b->g.n_input++] = vinfo_of("M", 7, 0, NULL);
  b->ins[b->g.n_input++] = vinfo("y0", 1, (const char *const[]){"2"});
  b->outs[b->g.n_output++] = vinfo("y", 1, (const char *const[]){"n"});
  body->ins[body->g.n_input++] = vinfo_of("it", 7, 0, NULL);
  body->ins[body->g.n_input++] = vinfo_of("c_in", 9, 0, NULL);
  body->ins[body->g.n_input++] = vinfo("y_in", 1, (const char *const[]){"k"});
  static const char *const yy[] = {"y_in", "y_in"}, *const ci[] = {"c_in"};
  node_attrs(node(body, "Concat", "twice", 2, yy, "y_out"), 1, attr_int("axis", 0));
  node(body, "Identity", "keep", 1, ci, "c_out");
  body->outs[body->g.n_output++] = vinfo_of("c_out", 9, 0, NULL);
  body->outs[body->g.n_output++] = vinfo("y_out", 1, (const char *const[]){"k2"});
  static const char *const lin[] = {"M", "", "y0"};
  node_attrs(node(b, "Loop", "grow", 3, lin, "y"), 1, attr_graph("body", body));
  built c0 = compile_built(b);
  static const float y0[2] = {1.0f, -1.0f};
  for (int64_t m = 0; m <= 3; m++) {
    int64_t two = 2;
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_INT64, 0, NULL, &m, c0.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 1, &two, (void *)y0, c0.st)};
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_model_execute(c0.m, in, 2, &y, 1, c0.st), 0, "%s",
                 kiln_status_message(c0.st));
    cr_expect_eq(kiln_tensor_shape(y)[0], 2 << m);
    for (int64_t i = 0; i < kiln_tensor_shape(y)[0]; i++)
      cr_expect_eq(((const float *)kiln_tensor_data(y))[i], y0[i % 2]);
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
    kiln_tensor_free(y);
  }
  built_free(&c0);
}

/* Loop(M, cond, y [1]): y += xs[it : it + len] (an initializer of the
 * body sliced by the iteration count: the slice's dim is computed inside
 * the body), scanned. The body declares y_out and scan_out [1], which the
 * importer takes (test_loop11's form): against a naive loop for M = 0 .. 5;
 * with len 2 the slices do not fit the declaration, a run-time error. */
static mb *loop_slice_model(int64_t len) {
  static const int64_t zero[1] = {0}, lens[2][1] = {{1}, {2}};
  mb *b = mb_new(), *body = mb_new();
  b->ins[b->g.n_input++] = vinfo_of("M", 7, 0, NULL);
  b->ins[b->g.n_input++] = vinfo_of("cond", 9, 0, NULL);
  b->ins[b->g.n_input++] = vinfo("y", 1, (const char *const[]){"1"});
  b->outs[b->g.n_output++] = vinfo("res_y", 1, (const char *const[]){"1"});
  b->outs[b->g.n_output++] = vinfo("res_scan", 2, (const char *const[]){"n", "1"});
  body->ins[body->g.n_input++] = vinfo_of("it", 7, 0, NULL);
  body->ins[body->g.n_input++] = vinfo_of("c_in", 9, 0, NULL);
  body->ins[body->g.n_input++] = vinfo("y_in", 1, (const char *const[]){"1"});
  init_f32(body, "xs", 5, 20); /* 0, 1, 2, 3, 4 */
  init_i64(body, "ax0", 1, zero);
  init_i64(body, "len", 1, lens[len - 1]);
  static const char *const ci[] = {"c_in"}, *const ia[] = {"it", "ax0"};
  static const char *const sl[] = {"start", "len"}, *const sxe[] = {"xs", "start", "end"};
  static const char *const ys[] = {"y_in", "part"}, *const yo[] = {"y_out"};
  node(body, "Identity", "keep", 1, ci, "c_out");
  node(body, "Unsqueeze", "start", 2, ia, "start");
  node(body, "Add", "end", 2, sl, "end");
  node(body, "Slice", "part", 3, sxe, "part");
  node(body, "Add", "acc", 2, ys, "y_out");
  node(body, "Identity", "scan", 1, yo, "scan_out");
  body->outs[body->g.n_output++] = vinfo_of("c_out", 9, 0, NULL);
  body->outs[body->g.n_output++] = vinfo("y_out", 1, (const char *const[]){"1"});
  body->outs[body->g.n_output++] = vinfo("scan_out", 1, (const char *const[]){"1"});
  static const char *const lin[] = {"M", "cond", "y"};
  Onnx__NodeProto *n = node(b, "Loop", "loop_slice", 3, lin, "res_y");
  node_outputs(n, 2, "res_y", "res_scan");
  node_attrs(n, 1, attr_graph("body", body));
  return b;
}

/* Execute the loop_slice model for M; 0 with out[2] set, or -1. */
static int run_loop_slice(built *r, int64_t m, kiln_tensor **out) {
  static const bool go = true;
  static const float y0 = 0.5f;
  int64_t one = 1;
  kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_INT64, 0, NULL, &m, r->st),
                        kiln_tensor_borrow(KILN_BOOL, 0, NULL, (void *)&go, r->st),
                        kiln_tensor_borrow(KILN_FLOAT32, 1, &one, (void *)&y0, r->st)};
  int rc = kiln_model_execute(r->m, in, 3, out, 2, r->st);
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  return rc;
}

Test(onnx_errors, loop_body_slice_by_the_iteration_count) {
  built r = compile_built(loop_slice_model(1));
  for (int64_t m = 0; m <= 5; m++) {
    kiln_tensor *out[2] = {NULL, NULL};
    cr_assert_eq(run_loop_slice(&r, m, out), 0, "M = %lld: %s", (long long)m,
                 kiln_status_message(r.st));
    float y = 0.5f;
    cr_assert_eq(kiln_tensor_rank(out[1]), 2);
    cr_expect_eq(kiln_tensor_shape(out[1])[0], m);
    for (int64_t i = 0; i < m; i++) {
      y += (float)i;
      cr_expect_eq(((const float *)kiln_tensor_data(out[1]))[i], y, "M = %lld, scan[%lld]",
                   (long long)m, (long long)i);
    }
    cr_expect_eq(((const float *)kiln_tensor_data(out[0]))[0], y, "M = %lld", (long long)m);
    kiln_tensor_free(out[0]);
    kiln_tensor_free(out[1]);
  }
  built_free(&r);
  built bad = compile_built(loop_slice_model(2));
  kiln_tensor *out[2] = {NULL, NULL};
  cr_expect_eq(run_loop_slice(&bad, 0, out), 0, "%s", kiln_status_message(bad.st));
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  out[0] = out[1] = NULL;
  cr_expect_neq(run_loop_slice(&bad, 2, out), 0, "slices of 2 fit the declared [1]");
  cr_expect(strstr(kiln_status_message(bad.st), "mo.reshape"), "%s",
            kiln_status_message(bad.st));
  built_free(&bad);
}

/* Data ONNX forbids, found at run time, is reported naming the ONNX node
 * (its name and op type: ir_node.origin) before the kiln op that read it:
 * a Reshape shape entry of -2, a Slice step of 0, a Gather index past the
 * axis (found by the kernel), a Loop body whose slices contradict its
 * declared output type (the Loop, then the body's output). */
static void fails_naming(built *r, kiln_tensor **in, int nin, int nout, const char *const *has,
                         int nhas) {
  kiln_tensor *out[2] = {NULL, NULL};
  cr_expect_neq(kiln_model_execute(r->m, in, nin, out, nout, r->st), 0, "no error");
  for (int i = 0; i < nhas; i++)
    cr_expect(strstr(kiln_status_message(r->st), has[i]), "'%s' lacks '%s'",
              kiln_status_message(r->st), has[i]);
  for (int i = 0; i < nin; i++) kiln_tensor_free(in[i]);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
}

Test(onnx_errors, forbidden_data_names_the_onnx_node) {
  int64_t two = 2, xs[2] = {2, 3}, four = 4;
  static const float xv[6] = {0, 1, 2, 3, 4, 5};
  { /* Reshape(x, shape) */
    mb *b = mb_new();
    b->ins[b->g.n_input++] = vinfo("x", 2, (const char *const[]){"2", "3"});
    b->ins[b->g.n_input++] = vinfo_of("shape", 7, 1, (const char *const[]){"2"});
    b->outs[b->g.n_output++] = vinfo("y", 2, (const char *const[]){"a", "b"});
    static const char *const xsh[] = {"x", "shape"};
    node(b, "Reshape", "Reshape_12", 2, xsh, "y");
    built r = compile_built(b);
    static const int64_t bad[2] = {-2, 3};
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 2, xs, (void *)xv, r.st),
                          kiln_tensor_borrow(KILN_INT64, 1, &two, (void *)bad, r.st)};
    static const char *const has[] = {"ONNX node 'Reshape_12' (Reshape): mo.reshape",
                                      "shape[0] is -2"};
    fails_naming(&r, in, 2, 1, has, 2);
    built_free(&r);
  }
  { /* Slice(x, starts, ends, axes, steps) with run-time steps */
    mb *b = mb_new();
    b->ins[b->g.n_input++] = vinfo("x", 1, (const char *const[]){"4"});
    b->ins[b->g.n_input++] = vinfo_of("steps", 7, 1, (const char *const[]){"1"});
    b->outs[b->g.n_output++] = vinfo("y", 1, (const char *const[]){"n"});
    static const int64_t zero[1] = {0}, end[1] = {4};
    init_i64(b, "starts", 1, zero);
    init_i64(b, "ends", 1, end);
    init_i64(b, "axes", 1, zero);
    static const char *const sl[] = {"x", "starts", "ends", "axes", "steps"};
    node(b, "Slice", "Slice_3", 5, sl, "y");
    built r = compile_built(b);
    static const int64_t step0[1] = {0};
    int64_t one = 1;
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 1, &four, (void *)xv, r.st),
                          kiln_tensor_borrow(KILN_INT64, 1, &one, (void *)step0, r.st)};
    static const char *const has[] = {"ONNX node 'Slice_3' (Slice): mo.slice_tensor"};
    fails_naming(&r, in, 2, 1, has, 1);
    built_free(&r);
  }
  { /* Gather(x, idx) past the axis: the kernel's own error */
    mb *b = mb_new();
    b->ins[b->g.n_input++] = vinfo("x", 1, (const char *const[]){"4"});
    b->ins[b->g.n_input++] = vinfo_of("idx", 7, 1, (const char *const[]){"1"});
    b->outs[b->g.n_output++] = vinfo("y", 1, (const char *const[]){"1"});
    static const char *const xi[] = {"x", "idx"};
    node(b, "Gather", "Gather_7", 2, xi, "y");
    built r = compile_built(b);
    static const int64_t past[1] = {9};
    int64_t one = 1;
    kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 1, &four, (void *)xv, r.st),
                          kiln_tensor_borrow(KILN_INT64, 1, &one, (void *)past, r.st)};
    static const char *const has[] = {"ONNX node 'Gather_7' (Gather): mo.gather"};
    fails_naming(&r, in, 2, 1, has, 1);
    built_free(&r);
  }
  { /* the Loop of loop_body_slice_by_the_iteration_count, slices of 2 */
    built r = compile_built(loop_slice_model(2));
    static const bool go = true;
    static const float y0 = 0.5f;
    int64_t m = 2, one = 1;
    kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_INT64, 0, NULL, &m, r.st),
                          kiln_tensor_borrow(KILN_BOOL, 0, NULL, (void *)&go, r.st),
                          kiln_tensor_borrow(KILN_FLOAT32, 1, &one, (void *)&y0, r.st)};
    static const char *const has[] = {"ONNX node 'loop_slice' (Loop): mo.while",
                                      "region @body: ONNX subgraph 't' output 'y_out': "
                                      "mo.reshape"};
    fails_naming(&r, in, 3, 2, has, 2);
    built_free(&r);
  }
}

/* Scan over X [3, 2] along axis 0 in reverse and Z [2, 3] along axis 1:
 * s += x_t; o_t = s * z_t, stacked along axis 1 in reverse (prepended). */
Test(onnx_errors, scan_reverse_and_axes) {
  mb *b = mb_new(), *body = mb_new();
  static const char *const d2[1] = {"2"}, *const d32[2] = {"3", "2"}, *const d23[2] = {"2", "3"};
  b->ins[b->g.n_input++] = vinfo("s0", 1, d2);
  b->ins[b->g.n_input++] = vinfo("X", 2, d32);
  b->ins[b->g.n_input++] = vinfo("Z", 2, d23);
  b->outs[b->g.n_output++] = vinfo("s", 1, d2);
  b->outs[b->g.n_output++] = vinfo("O", 2, d23);
  body->ins[body->g.n_input++] = vinfo("s_in", 1, d2);
  body->ins[body->g.n_input++] = vinfo("x_t", 1, d2);
  body->ins[body->g.n_input++] = vinfo("z_t", 1, d2);
  static const char *const sx[] = {"s_in", "x_t"}, *const sz[] = {"s_out", "z_t"};
  node(body, "Add", "acc", 2, sx, "s_out");
  node(body, "Mul", "o", 2, sz, "o_t");
  body->outs[body->g.n_output++] = vinfo("s_out", 1, d2);
  body->outs[body->g.n_output++] = vinfo("o_t", 1, d2);
  static const char *const sin[] = {"s0", "X", "Z"};
  static const int64_t in_axes[2] = {0, 1}, in_dirs[2] = {1, 0}, out_axes[1] = {-1};
  static const int64_t out_dirs[1] = {1};
  Onnx__NodeProto *n = node(b, "Scan", "scan0", 3, sin, "s");
  node_outputs(n, 2, "s", "O");
  node_attrs(n, 6, attr_graph("body", body), attr_int("num_scan_inputs", 2),
             attr_ints("scan_input_axes", 2, in_axes),
             attr_ints("scan_input_directions", 2, in_dirs),
             attr_ints("scan_output_axes", 1, out_axes),
             attr_ints("scan_output_directions", 1, out_dirs));
  built c0 = compile_built(b);
  static const float s0[2] = {0.5f, -1.0f}, X[3][2] = {{1, 2}, {3, 4}, {5, 6}};
  static const float Z[2][3] = {{1, -1, 2}, {0.5f, 3, -2}};
  int64_t sh2 = 2, sh32[2] = {3, 2}, sh23[2] = {2, 3};
  kiln_tensor *in[3] = {kiln_tensor_borrow(KILN_FLOAT32, 1, &sh2, (void *)s0, c0.st),
                        kiln_tensor_borrow(KILN_FLOAT32, 2, sh32, (void *)X, c0.st),
                        kiln_tensor_borrow(KILN_FLOAT32, 2, sh23, (void *)Z, c0.st)};
  kiln_tensor *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(c0.m, in, 3, out, 2, c0.st), 0, "%s",
               kiln_status_message(c0.st));
  float s[2] = {s0[0], s0[1]}, O[2][3];
  for (int t = 0; t < 3; t++) /* the oracle: X read backwards, O filled from the end */
    for (int j = 0; j < 2; j++) {
      s[j] += X[2 - t][j];
      O[j][2 - t] = s[j] * Z[j][t];
    }
  for (int j = 0; j < 2; j++) cr_expect_eq(((const float *)kiln_tensor_data(out[0]))[j], s[j]);
  cr_assert_eq(kiln_tensor_shape(out[1])[0], 2);
  cr_assert_eq(kiln_tensor_shape(out[1])[1], 3);
  for (int j = 0; j < 6; j++)
    cr_expect_eq(((const float *)kiln_tensor_data(out[1]))[j], O[j / 3][j % 3], "O[%d]", j);
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  built_free(&c0);
}

/* Opset 8's Scan: states [B, 2] and X [B, 3, 2] with a batch axis, read
 * in reverse; s += x_t, o_t = s * x_t stacked along axis 1: one scan per
 * batch entry, against a naive loop. */
Test(onnx_errors, scan_opset8_batch) {
  mb *b = mb_new(), *body = mb_new();
  b->op.version = 8;
  static const char *const d2[1] = {"2"}, *const d22[2] = {"2", "2"};
  static const char *const d232[3] = {"2", "3", "2"};
  b->ins[b->g.n_input++] = vinfo("s0", 2, d22);
  b->ins[b->g.n_input++] = vinfo("X", 3, d232);
  b->outs[b->g.n_output++] = vinfo("s", 2, d22);
  b->outs[b->g.n_output++] = vinfo("O", 3, d232);
  body->ins[body->g.n_input++] = vinfo("s_in", 1, d2);
  body->ins[body->g.n_input++] = vinfo("x_t", 1, d2);
  static const char *const sx[] = {"s_in", "x_t"}, *const so[] = {"s_out", "x_t"};
  node(body, "Add", "acc", 2, sx, "s_out");
  node(body, "Mul", "o", 2, so, "o_t");
  body->outs[body->g.n_output++] = vinfo("s_out", 1, d2);
  body->outs[body->g.n_output++] = vinfo("o_t", 1, d2);
  static const char *const sin[] = {"", "s0", "X"};
  static const int64_t dirs[1] = {1};
  Onnx__NodeProto *n = node(b, "Scan", "scan8", 3, sin, "s");
  node_outputs(n, 2, "s", "O");
  node_attrs(n, 3, attr_graph("body", body), attr_int("num_scan_inputs", 1),
             attr_ints("directions", 1, dirs));
  built c0 = compile_built(b);
  static const float s0[2][2] = {{0.5f, -1}, {2, 3}};
  static const float X[2][3][2] = {{{1, 2}, {3, 4}, {5, 6}}, {{-1, 0.5f}, {2, -2}, {0, 1}}};
  int64_t sh22[2] = {2, 2}, sh232[3] = {2, 3, 2};
  kiln_tensor *in[2] = {kiln_tensor_borrow(KILN_FLOAT32, 2, sh22, (void *)s0, c0.st),
                        kiln_tensor_borrow(KILN_FLOAT32, 3, sh232, (void *)X, c0.st)};
  kiln_tensor *out[2] = {NULL, NULL};
  cr_assert_eq(kiln_model_execute(c0.m, in, 2, out, 2, c0.st), 0, "%s",
               kiln_status_message(c0.st));
  const float *gs = kiln_tensor_data(out[0]), *go = kiln_tensor_data(out[1]);
  for (int e = 0; e < 2; e++) {
    float st[2] = {s0[e][0], s0[e][1]};
    for (int t = 0; t < 3; t++) /* X read backwards, O in step order */
      for (int j = 0; j < 2; j++) {
        st[j] += X[e][2 - t][j];
        float o = st[j] * X[e][2 - t][j];
        cr_expect_eq(go[(e * 3 + t) * 2 + j], o, "O[%d, %d, %d] = %g, expected %g", e, t, j,
                     go[(e * 3 + t) * 2 + j], o);
      }
    for (int j = 0; j < 2; j++) cr_expect_eq(gs[e * 2 + j], st[j], "s[%d, %d]", e, j);
  }
  for (int i = 0; i < 2; i++) {
    kiln_tensor_free(in[i]);
    kiln_tensor_free(out[i]);
  }
  built_free(&c0);
}

/* Bad control flow: clear errors naming the node and what is wrong. */
Test(onnx_errors, bad_if_loop_and_scan) {
  static const char *const c[] = {"c"}, *const xx[] = {"x", "x"}, *const nope[] = {"nope"};
  { /* branches that disagree in output count */
    mb *b = mb_new(), *th = mb_new(), *el = mb_new();
    b->ins[b->g.n_input++] = vinfo_of("c", 9, 0, NULL);
    b->ins[b->g.n_input++] = vinfo("x", 1, d4);
    b->outs[b->g.n_output++] = vinfo("y", 1, d4);
    node(th, "Add", "a", 2, xx, "t");
    node(th, "Mul", "m", 2, xx, "u");
    th->outs[th->g.n_output++] = vinfo("t", 1, d4);
    th->outs[th->g.n_output++] = vinfo("u", 1, d4);
    node(el, "Mul", "m", 2, xx, "e");
    el->outs[el->g.n_output++] = vinfo("e", 1, d4);
    node_attrs(node(b, "If", "if_bad", 1, c, "y"), 2, attr_graph("then_branch", th),
               attr_graph("else_branch", el));
    import_fails(b, KILN_ERR_VERIFY, "then_branch gives 2 outputs, else_branch 1");
    import_fails(b, KILN_ERR_VERIFY, "node 'if_bad' (If)");
    /* a branch that reads a name nobody defines */
    th->g.n_output = 1;
    th->g.n_node = 0;
    node(th, "Identity", "i", 1, nope, "t");
    import_fails(b, KILN_ERR_IO, "reads 'nope'");
  }
  { /* a Loop body with the wrong number of inputs; then neither M nor cond */
    mb *b = mb_new(), *body = mb_new();
    b->ins[b->g.n_input++] = vinfo_of("M", 7, 0, NULL);
    b->ins[b->g.n_input++] = vinfo("x", 1, d4);
    b->outs[b->g.n_output++] = vinfo("y", 1, d4);
    body->ins[body->g.n_input++] = vinfo_of("it", 7, 0, NULL);
    body->ins[body->g.n_input++] = vinfo("x_in", 1, d4);
    static const char *const ci[] = {"x_in"};
    node(body, "Identity", "i", 1, ci, "x_out");
    body->outs[body->g.n_output++] = vinfo("x_out", 1, d4);
    static const char *const lin[] = {"M", "", "x"};
    Onnx__NodeProto *n = node(b, "Loop", "loop_bad", 3, lin, "y");
    node_attrs(n, 1, attr_graph("body", body));
    import_fails(b, KILN_ERR_VERIFY, "the body takes 2 inputs; with 1 loop-carried values it "
                 "must take 3");
    static const char *const none[] = {"", "", "x"};
    n->input = (char **)none;
    import_fails(b, KILN_ERR_UNSUPPORTED, "neither a trip count nor a condition");
  }
  { /* Scan in opset 8's form; then a scan axis out of range */
    mb *b = mb_new(), *body = mb_new();
    b->ins[b->g.n_input++] = vinfo("x", 1, d4);
    b->outs[b->g.n_output++] = vinfo("y", 1, d4);
    body->ins[body->g.n_input++] = vinfo("x_t", 0, NULL);
    static const char *const xt[] = {"x_t"}, *const sin[] = {"x"};
    node(body, "Identity", "i", 1, xt, "y_t");
    body->outs[body->g.n_output++] = vinfo("y_t", 0, NULL);
    Onnx__NodeProto *n = node(b, "Scan", "scan_bad", 1, sin, "y");
    static const int64_t axis5[1] = {5};
    node_attrs(n, 3, attr_graph("body", body), attr_int("num_scan_inputs", 1),
               attr_ints("scan_input_axes", 1, axis5));
    import_fails(b, KILN_ERR_VERIFY, "scan_input_axes[0] = 5 is out of range for rank 1");
    b->op.version = 8; /* "x" is then opset 8's sequence_lens */
    import_fails(b, KILN_ERR_UNSUPPORTED, "opset 8's sequence_lens input");
  }
}

/* TfIdfVectorizer in IDF and TFIDF modes (ONNX's node tests cover TF only)
 * against a naive count: unigrams once, bigrams at distances 1 .. skip + 1. */
Test(onnx_errors, tfidf_weighted_modes) {
  enum { ROWS = 2, LEN = 7, NG = 4 };
  static const int64_t pool[6] = {1, 4, 1, 2, 2, 1}, ngc[2] = {0, 2}, idx[NG] = {3, 0, 1, 2};
  static const int64_t gk[NG] = {1, 1, 2, 2}, gs[NG] = {0, 1, 2, 4}; /* length, pool offset */
  static const float w[NG] = {0.5f, 2.0f, 3.0f, 0.25f};
  static const int64_t xs[ROWS][LEN] = {{1, 2, 1, 2, 4, 1, 1}, {2, 2, 4, 1, 3, 2, 1}};
  static const char *const modes[2] = {"IDF", "TFIDF"};
  for (int md = 0; md < 2; md++) {
    mb *b = mb_new();
    static const char *const dx[2] = {"2", "7"}, *const dy[2] = {"2", "4"}, *const xi[] = {"X"};
    b->ins[b->g.n_input++] = vinfo_of("X", 7, 2, dx);
    b->outs[b->g.n_output++] = vinfo("Y", 2, dy);
    Onnx__AttributeProto *wa = attr_of("weights", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    wa->n_floats = NG;
    wa->floats = (float *)w;
    node_attrs(node(b, "TfIdfVectorizer", "tfidf", 1, xi, "Y"), 8, attr_str("mode", modes[md]),
               attr_int("min_gram_length", 1), attr_int("max_gram_length", 2),
               attr_int("max_skip_count", 1), attr_ints("pool_int64s", 6, pool),
               attr_ints("ngram_counts", 2, ngc), attr_ints("ngram_indexes", NG, idx), wa);
    built c0 = compile_built(b);
    int64_t sh[2] = {ROWS, LEN};
    kiln_tensor *x = kiln_tensor_borrow(KILN_INT64, 2, sh, (void *)xs, c0.st), *y = NULL;
    cr_assert_eq(kiln_model_execute(c0.m, &x, 1, &y, 1, c0.st), 0, "%s",
                 kiln_status_message(c0.st));
    for (int r = 0; r < ROWS; r++) {
      float want[NG] = {0};
      for (int j = 0; j < NG; j++) { /* the oracle */
        int count = 0;
        for (int d = 1; d <= (gk[j] == 1 ? 1 : 2); d++)
          for (int i = 0; i + (gk[j] - 1) * d < LEN; i++) {
            bool hit = true;
            for (int t = 0; t < gk[j]; t++) hit &= xs[r][i + t * d] == pool[gs[j] + t];
            count += hit;
          }
        want[idx[j]] += (float)count;
      }
      for (int c = 0; c < NG; c++) {
        float e = md == 0 ? (want[c] > 0 ? w[c] : 0) : want[c] * w[c];
        cr_expect_eq(((const float *)kiln_tensor_data(y))[r * NG + c], e, "%s row %d col %d",
                     modes[md], r, c);
      }
    }
    kiln_tensor_free(x);
    kiln_tensor_free(y);
    built_free(&c0);
  }
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char *out = NULL;
  int rc = shell_capture(cmd, &out);
  if (rc != 0 && !strstr(cmd, "2>/dev/null")) fprintf(stderr, "%s\n-> %d: %s\n", cmd, rc, out ? out : "");
  free(out);
  return rc;
}

static char *slurp(const char *path, size_t *len) {
  kiln_status *st = kiln_status_new();
  char *b = rt_read_file(path, NULL, len, st);
  kiln_status_free(st);
  return b;
}

Test(onnx_cli, import_then_run_gives_the_same_bits) {
  char *dir = tmpdir(), path[512];
  size_t len;
  uint8_t *buf = pack(add_model(100, 400), &len);
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  write_file(path, buf, len);
  free(buf);
  int64_t n = 100;
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 1, &n, NULL);
  for (int i = 0; i < 100; i++) ((float *)kiln_tensor_data(x))[i] = 0.25f * (float)i;
  snprintf(path, sizeof path, "%s/x.npy", dir);
  cr_assert_eq(rt_npy_write(path, x, NULL), 0);
  kiln_tensor_free(x);
  const char *k = KILN_CLI;
  cr_assert_eq(sh("'%s' run %s/m.onnx --input x=%s/x.npy --out %s/d1 2>&1", k, dir, dir, dir), 0);
  cr_assert_eq(sh("'%s' import %s/m.onnx -o %s/g.mlir --weights-out %s/w.safetensors 2>&1", k, dir,
                  dir, dir), 0);
  cr_assert_eq(sh("'%s' check %s/g.mlir 2>&1", k, dir), 0);
  cr_assert_eq(sh("'%s' run %s/g.mlir --weights %s/w.safetensors --input x=%s/x.npy --out %s/d2 "
                  "2>&1", k, dir, dir, dir, dir), 0);
  char p1[600], p2[600];
  size_t l1, l2;
  snprintf(p1, sizeof p1, "%s/d1/y.npy", dir);
  snprintf(p2, sizeof p2, "%s/d2/y.npy", dir);
  char *a = slurp(p1, &l1), *b = slurp(p2, &l2);
  cr_assert(a && b && l1 == l2 && memcmp(a, b, l1) == 0, "outputs differ");
  free(a);
  free(b);
  /* without --weights-out the weights would be lost: a usage error */
  cr_assert_eq(sh("'%s' import %s/m.onnx -o %s/g2.mlir 2>/dev/null", k, dir, dir), 2);
  remove_dir(dir);
}

Test(onnx_cli, unsupported_model_exits_1) {
  mb *b = mb_new();
  const char *d[1] = {"4"};
  b->ins[b->g.n_input++] = vinfo("x", 1, d);
  b->outs[b->g.n_output++] = vinfo("z", 1, d);
  static const char *const i0[] = {"x"};
  node(b, "FancyOp", "first", 1, i0, "z");
  char *dir = tmpdir(), path[512];
  size_t len;
  uint8_t *buf = pack(b, &len);
  snprintf(path, sizeof path, "%s/u.onnx", dir);
  write_file(path, buf, len);
  free(buf);
  cr_assert_eq(sh("'%s' run %s --random-inputs 2>/dev/null", KILN_CLI, path), 1);
  cr_assert_eq(sh("'%s' import %s 2>/dev/null", KILN_CLI, path), 1);
  remove_dir(dir);
}

/* Axes given as a graph input of a dim_param length: Unsqueeze takes its
 * result's rank from the rank the model declares for its output (a list of
 * another length is a data error naming the reshape that reads it), and is
 * refused naming the input and the output when no rank is declared;
 * ReduceSum with keepdims needs no rank, and an empty list reduces every
 * axis (noop_with_empty_axes 0). */
static kiln_tensor *axes_of(int64_t n, const int64_t *v, kiln_status *st) {
  kiln_tensor *t = kiln_tensor_new(KILN_INT64, 1, &n, st);
  if (n) memcpy(kiln_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}

Test(onnx_errors, axes_of_a_length_not_known_at_import) {
  const char *xd[2] = {"3", "4"}, *ad[1] = {"k"}, *yd[3] = {"3", "1", "4"}, *rd[2] = {"a", "b"};
  static const char *const xa[] = {"x", "axes"};
  for (int declared = 0; declared < 2; declared++) {
    mb *b = mb_new();
    b->ins[b->g.n_input++] = vinfo("x", 2, xd);
    b->ins[b->g.n_input++] = vinfo_of("axes", 7, 1, ad);
    b->outs[b->g.n_output++] = vinfo("y", 3, yd);
    if (!declared) b->outs[0]->type->tensor_type->shape = NULL;
    node(b, "Unsqueeze", "unsq", 2, xa, "y");
    if (!declared) {
      import_fails(b, KILN_ERR_UNSUPPORTED, "input 'axes' (axes) is run-time data of a length "
                   "not known at import and the model declares no rank for output 'y'");
      continue;
    }
    built r = compile_built(b);
    int64_t xs[2] = {3, 4};
    static const int64_t one[1] = {1}, last[1] = {-1}, two[2] = {0, 1};
    const int64_t *cases[2] = {one, last}, want[2][3] = {{3, 1, 4}, {3, 4, 1}};
    for (int c = 0; c < 2; c++) {
      kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, r.st),
                            axes_of(1, cases[c], r.st)}, *y = NULL;
      for (int e = 0; e < 12; e++) ((float *)kiln_tensor_data(in[0]))[e] = (float)e;
      cr_assert_eq(kiln_model_execute(r.m, in, 2, &y, 1, r.st), 0, "%s",
                   kiln_status_message(r.st));
      for (int d = 0; d < 3; d++) cr_expect_eq(kiln_tensor_shape(y)[d], want[c][d]);
      for (int e = 0; e < 12; e++) cr_expect_eq(((float *)kiln_tensor_data(y))[e], (float)e);
      kiln_tensor_free(in[0]);
      kiln_tensor_free(in[1]);
      kiln_tensor_free(y);
    }
    kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, r.st), axes_of(2, two, r.st)},
                *y = NULL;
    cr_expect_neq(kiln_model_execute(r.m, in, 2, &y, 1, r.st), 0);
    cr_expect(strstr(kiln_status_message(r.st), "mo.reshape"), "%s", kiln_status_message(r.st));
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
    built_free(&r);
  }
  mb *b = mb_new();
  b->ins[b->g.n_input++] = vinfo("x", 2, xd);
  b->ins[b->g.n_input++] = vinfo_of("axes", 7, 1, ad);
  b->outs[b->g.n_output++] = vinfo("r", 2, rd);
  b->outs[0]->type->tensor_type->shape = NULL; /* keepdims: the rank is the input's */
  node(b, "ReduceSum", "rsum", 2, xa, "r");
  built r = compile_built(b);
  int64_t xs[2] = {3, 4};
  static const int64_t zero[1] = {0};
  for (int c = 0; c < 2; c++) {
    kiln_tensor *in[2] = {kiln_tensor_new(KILN_FLOAT32, 2, xs, r.st), axes_of(c, zero, r.st)},
                *y = NULL;
    for (int e = 0; e < 12; e++) ((float *)kiln_tensor_data(in[0]))[e] = (float)e;
    cr_assert_eq(kiln_model_execute(r.m, in, 2, &y, 1, r.st), 0, "%s", kiln_status_message(r.st));
    const int64_t *ys = kiln_tensor_shape(y);
    const float *yv = kiln_tensor_data(y);
    if (c == 0) { /* every axis: the sum of 0 .. 11 */
      cr_expect(ys[0] == 1 && ys[1] == 1 && yv[0] == 66.0f, "[%lld, %lld] %g", (long long)ys[0],
                (long long)ys[1], yv[0]);
    } else { /* axis 0: the column sums 12, 15, 18, 21 */
      cr_expect(ys[0] == 1 && ys[1] == 4, "[%lld, %lld]", (long long)ys[0], (long long)ys[1]);
      for (int e = 0; e < 4; e++) cr_expect_eq(yv[e], (float)(12 + 3 * e));
    }
    kiln_tensor_free(in[0]);
    kiln_tensor_free(in[1]);
    kiln_tensor_free(y);
  }
  built_free(&r);
}
