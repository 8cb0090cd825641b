/* test_onnx_inplace.c - an ONNX file's initializers read in place from the
 * file's mapping (src/onnx/wire.c): a model imported from a file, whose
 * weights are borrowed from the mapping (aligned) or copied at each bind
 * (not aligned for f32), gives bit for bit the outputs of the same bytes
 * imported from memory (every weight copied) and of a naive loop; a second
 * model compiled from the same graph after the first gave back the weight's
 * pages reads them again from the file; the graph can be freed before the
 * models run; a file cut inside an initializer is refused naming it; the
 * wire walk finds raw_data where it lies and leaves layouts it does not
 * expect (the graph given twice, garbage) to protobuf-c.
 * KILN_TEST_DEVICE=simt-emu (cuda:0, ...) compiles the models there
 * (tests/support/under_test.h). */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/onnx.h"
#include "onnx.pb-c.h"
#include "src/onnx/onnx_io.h"
#include "src/onnx/ox.h"
#include "src/rt.h"
#include "src/weight_source.h"
#include "support/under_test.h"

enum { ROWS = 2, K = 40, N = 300 };

/* y = x @ w + b: w [K, N] prepacked by the model (the file's pages given
 * back once packed), b [N] read by the add at each execute (kept). */
typedef struct built {
  Onnx__ModelProto m;
  Onnx__GraphProto g;
  Onnx__OperatorSetIdProto op, *ops[1];
  Onnx__NodeProto mm, add, *nodes[2];
  Onnx__TensorProto w, b, *inits[2];
  Onnx__ValueInfoProto x, y, *ins[1], *outs[1];
  Onnx__TypeProto xt, yt;
  Onnx__TypeProto__Tensor xtt, ytt;
  Onnx__TensorShapeProto xs, ys;
  Onnx__TensorShapeProto__Dimension xd[2], yd[2], *xdp[2], *ydp[2];
  int64_t wdims[2], bdims[1];
  float wv[K * N], bv[N];
  char wname[32];
  char *mm_in[2], *mm_out[1], *add_in[2], *add_out[1];
} built;

static void value_info(Onnx__ValueInfoProto *v, const char *name, Onnx__TypeProto *tp,
                       Onnx__TypeProto__Tensor *tt, Onnx__TensorShapeProto *sh,
                       Onnx__TensorShapeProto__Dimension *d, Onnx__TensorShapeProto__Dimension **dp,
                       int64_t cols) {
  onnx__value_info_proto__init(v);
  onnx__type_proto__init(tp);
  onnx__type_proto__tensor__init(tt);
  onnx__tensor_shape_proto__init(sh);
  for (int i = 0; i < 2; i++) {
    onnx__tensor_shape_proto__dimension__init(&d[i]);
    d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d[i].dim_value = i == 0 ? ROWS : cols;
    dp[i] = &d[i];
  }
  sh->n_dim = 2;
  sh->dim = dp;
  tt->has_elem_type = 1;
  tt->elem_type = 1;
  tt->shape = sh;
  tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  tp->tensor_type = tt;
  v->name = (char *)name;
  v->type = tp;
}

static void f32_init(Onnx__TensorProto *t, const char *name, int rank, int64_t *dims,
                     float *v) {
  onnx__tensor_proto__init(t);
  t->name = (char *)name;
  t->has_data_type = 1;
  t->data_type = 1;
  t->n_dims = (size_t)rank;
  t->dims = dims;
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  t->has_raw_data = 1;
  t->raw_data.data = (uint8_t *)v;
  t->raw_data.len = (size_t)n * sizeof *v;
}

static void node(Onnx__NodeProto *n, const char *op, char **in, char **out) {
  onnx__node_proto__init(n);
  n->op_type = (char *)op;
  n->name = (char *)op;
  n->n_input = 2;
  n->input = in;
  n->n_output = 1;
  n->output = out;
}

/* The model with w named "w" followed by pad x's (moving its raw_data). */
static built *build(int pad) {
  built *b = calloc(1, sizeof *b);
  cr_assert(b);
  snprintf(b->wname, sizeof b->wname, "w%.*s", pad, "xxxxxxxx");
  for (int i = 0; i < K * N; i++) b->wv[i] = (float)((i * 37 % 101) - 50) / 64.0f;
  for (int i = 0; i < N; i++) b->bv[i] = (float)(i % 7) - 3.0f;
  b->wdims[0] = K;
  b->wdims[1] = N;
  b->bdims[0] = N;
  f32_init(&b->w, b->wname, 2, b->wdims, b->wv);
  f32_init(&b->b, "bias", 1, b->bdims, b->bv);
  b->inits[0] = &b->w;
  b->inits[1] = &b->b;
  b->mm_in[0] = "x";
  b->mm_in[1] = b->wname;
  b->mm_out[0] = "h";
  b->add_in[0] = "h";
  b->add_in[1] = "bias";
  b->add_out[0] = "y";
  node(&b->mm, "MatMul", b->mm_in, b->mm_out);
  node(&b->add, "Add", b->add_in, b->add_out);
  b->nodes[0] = &b->mm;
  b->nodes[1] = &b->add;
  value_info(&b->x, "x", &b->xt, &b->xtt, &b->xs, b->xd, b->xdp, K);
  value_info(&b->y, "y", &b->yt, &b->ytt, &b->ys, b->yd, b->ydp, N);
  b->ins[0] = &b->x;
  b->outs[0] = &b->y;
  onnx__graph_proto__init(&b->g);
  b->g.name = "inplace";
  b->g.n_node = 2;
  b->g.node = b->nodes;
  b->g.n_initializer = 2;
  b->g.initializer = b->inits;
  b->g.n_input = 1;
  b->g.input = b->ins;
  b->g.n_output = 1;
  b->g.output = b->outs;
  onnx__operator_set_id_proto__init(&b->op);
  b->op.domain = "";
  b->op.has_version = 1;
  b->op.version = 17;
  b->ops[0] = &b->op;
  onnx__model_proto__init(&b->m);
  b->m.has_ir_version = 1;
  b->m.ir_version = 8;
  b->m.n_opset_import = 1;
  b->m.opset_import = b->ops;
  b->m.graph = &b->g;
  return b;
}

static uint8_t *pack(const built *b, size_t *len) {
  *len = onnx__model_proto__get_packed_size(&b->m);
  uint8_t *buf = malloc(*len);
  cr_assert(buf);
  onnx__model_proto__pack(&b->m, buf);
  return buf;
}

/* Where w's raw bytes start in the packed model. */
static size_t w_offset(const built *b, const uint8_t *buf, size_t len) {
  const uint8_t *p = memmem(buf, len, b->wv, sizeof b->wv);
  cr_assert(p, "w's bytes are not in the packed model");
  return (size_t)(p - buf);
}

static char *write_temp(const void *data, size_t len) {
  char *path = strdup("/tmp/kiln_inplace_XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, data, len), (ssize_t)len);
  close(fd);
  return path;
}

/* Whether p lies in a mapping of the file at path (/proc/self/maps). */
static bool in_file_mapping(const void *p, const char *path) {
  FILE *f = fopen("/proc/self/maps", "r");
  cr_assert(f);
  char line[1024];
  bool yes = false;
  while (!yes && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    line[strcspn(line, "\n")] = 0;
    size_t n = strlen(line), pl = strlen(path);
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && n >= pl && !strcmp(line + n - pl, path))
      yes = (uintptr_t)p >= lo && (uintptr_t)p < hi;
  }
  fclose(f);
  return yes;
}

/* Weight `name` of g's weight source: whether its data is read from path's mapping. */
static bool weight_in_file(kiln_graph *g, const char *name, const char *path) {
  struct rt_wsrc *ws = rt_graph_weight_source(g);
  kiln_status *st = kiln_status_new();
  for (int i = 0; i < rt_wsrc_count(ws); i++) {
    if (strcmp(rt_wsrc_name(ws, i), name) != 0) continue;
    kiln_tensor *t = rt_wsrc_get(ws, i, st);
    cr_assert(t, "%s", kiln_status_message(st));
    bool yes = in_file_mapping(kiln_tensor_data(t), path);
    kiln_tensor_free(t);
    kiln_status_free(st);
    return yes;
  }
  cr_assert_fail("no weight '%s' in the graph", name);
  return false;
}

static void fill_x(float *x) {
  for (int i = 0; i < ROWS * K; i++) x[i] = (float)((i * 13 % 29) - 14) / 8.0f;
}

/* y of a model compiled from g (freed here when free_graph). */
static void run(kiln_context *ctx, kiln_graph *g, bool free_graph, float *y) {
  kiln_status *st = kiln_status_new();
  kiln_model *m = under_test_compile(ctx, g, st);
  cr_assert(m, "compile: %s", kiln_status_message(st));
  if (free_graph) kiln_graph_free(g); /* the model keeps the weights' bytes alive */
  int64_t shape[2] = {ROWS, K};
  float x[ROWS * K];
  fill_x(x);
  kiln_tensor *in = kiln_tensor_borrow(KILN_FLOAT32, 2, shape, x, st), *out = NULL;
  cr_assert_eq(kiln_model_execute(m, &in, 1, &out, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_tensor_numel(out), ROWS * N);
  memcpy(y, kiln_tensor_data(out), sizeof(float) * ROWS * N);
  kiln_tensor_free(in);
  kiln_tensor_free(out);
  kiln_model_free(m);
  kiln_status_free(st);
}

static void expect_naive(const built *b, const float *y) {
  float x[ROWS * K];
  fill_x(x);
  for (int r = 0; r < ROWS; r++)
    for (int j = 0; j < N; j++) {
      double s = b->bv[j];
      for (int k = 0; k < K; k++) s += (double)x[r * K + k] * b->wv[k * N + j];
      cr_assert(fabs(y[r * N + j] - s) <= 1e-4 * (1 + fabs(s)), "y[%d][%d] = %g, expected %g", r,
                j, (double)y[r * N + j], s);
    }
}

Test(onnx_inplace, weights_read_from_the_mapping_match_the_copied_import, .timeout = 300) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  bool aligned_seen = false, unaligned_seen = false;
  for (int pad = 0; pad < 4; pad++) {
    built *b = build(pad);
    size_t len;
    uint8_t *buf = pack(b, &len);
    bool aligned = w_offset(b, buf, len) % sizeof(float) == 0;
    aligned_seen |= aligned;
    unaligned_seen |= !aligned;
    char *path = write_temp(buf, len);
    static float from_file[ROWS * N], again[ROWS * N], from_memory[ROWS * N];
    kiln_graph *g = kiln_graph_from_onnx_file(path, st);
    cr_assert(g, "import %s: %s", path, kiln_status_message(st));
    /* aligned: borrowed from the file's mapping; else an aligned copy */
    cr_assert_eq(weight_in_file(g, b->wname, path), aligned, "pad %d", pad);
    run(ctx, g, false, from_file);
    run(ctx, g, true, again); /* after the first model gave back w's pages */
    kiln_graph *gm = kiln_graph_from_onnx_memory(buf, len, st);
    cr_assert(gm, "import from memory: %s", kiln_status_message(st));
    free(buf); /* the memory route copied what it keeps */
    run(ctx, gm, true, from_memory);
    cr_assert(!memcmp(from_file, from_memory, sizeof from_file), "pad %d (%s): file != memory",
              pad, aligned ? "aligned" : "unaligned");
    cr_assert(!memcmp(from_file, again, sizeof from_file), "pad %d: second compile differs", pad);
    expect_naive(b, from_file);
    unlink(path);
    free(path);
    free(b);
  }
  cr_assert(aligned_seen && unaligned_seen, "the pads did not give both alignments of w");
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(onnx_inplace, file_cut_inside_an_initializer_is_refused_naming_it) {
  built *b = build(3);
  size_t len;
  uint8_t *buf = pack(b, &len);
  size_t cut = w_offset(b, buf, len) + 1000;
  char *path = write_temp(buf, cut);
  kiln_status *st = kiln_status_new();
  cr_assert_null(kiln_graph_from_onnx_file(path, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO, "%s", kiln_status_message(st));
  const char *msg = kiln_status_message(st);
  cr_assert(strstr(msg, "'wxxx'") && strstr(msg, "cut short") && strstr(msg, path), "%s", msg);
  cr_assert_null(kiln_graph_from_onnx_memory(buf, cut, st));
  cr_assert(strstr(kiln_status_message(st), "'wxxx'"), "%s", kiln_status_message(st));
  /* cut before the name: the initializer's index instead */
  cr_assert_null(kiln_graph_from_onnx_memory(buf, w_offset(b, buf, len) - 12, st));
  cr_assert_eq(kiln_status_code(st), KILN_ERR_IO, "%s", kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), "initializer 0 is cut short before its name"), "%s",
            kiln_status_message(st));
  unlink(path);
  free(path);
  free(buf);
  free(b);
  kiln_status_free(st);
}

Test(onnx_inplace, wire_split_finds_raw_data_and_leaves_the_rest_to_protobuf_c) {
  built *b = build(1);
  size_t len;
  uint8_t *buf = pack(b, &len);
  kiln_status *st = kiln_status_new();
  ox_split sp;
  cr_assert_eq(ox_wire_split(buf, len, OX_IN_PLACE_MIN, &sp, "m", st), 1, "%s",
               kiln_status_message(st));
  cr_assert_eq(sp.nraw, 2);
  cr_assert(sp.raw[0].data == buf + w_offset(b, buf, len) && sp.raw[0].len == sizeof b->wv);
  cr_assert(sp.raw[1].data == memmem(buf, len, b->bv, sizeof b->bv) &&
            sp.raw[1].len == sizeof b->bv);
  cr_assert(sp.rest_len < len - sizeof b->wv - sizeof b->bv + 16, "rest %zu of %zu", sp.rest_len,
            len);
  Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, sp.rest_len, sp.rest);
  cr_assert(m && m->graph && m->graph->n_initializer == 2 && m->graph->n_node == 2);
  cr_assert_str_eq(m->graph->initializer[0]->name, "wx");
  cr_assert(!m->graph->initializer[0]->has_raw_data && m->graph->initializer[0]->n_dims == 2);
  cr_assert_eq(m->n_opset_import, 1);
  onnx__model_proto__free_unpacked(m, NULL);
  ox_split_free(&sp);
  /* a threshold above both: nothing to take, protobuf-c reads it all */
  cr_assert_eq(ox_wire_split(buf, len, sizeof b->wv + 1, &sp, "m", st), 0);
  cr_assert(!sp.rest && !sp.raw);
  /* the graph field twice (protobuf-c merges them): left to protobuf-c */
  size_t glen = onnx__graph_proto__get_packed_size(&b->g);
  uint8_t *two = malloc(len + glen + 16);
  memcpy(two, buf, len);
  size_t n = len;
  two[n++] = 7 << 3 | 2;
  for (size_t v = glen; ; v >>= 7) {
    two[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  n += onnx__graph_proto__pack(&b->g, two + n);
  cr_assert_eq(ox_wire_split(two, n, OX_IN_PLACE_MIN, &sp, "m", st), 0);
  /* garbage: left to protobuf-c, which refuses it */
  cr_assert_eq(ox_wire_split("\xff\xff\xff", 3, OX_IN_PLACE_MIN, &sp, "m", st), 0);
  free(two);
  free(buf);
  free(b);
  kiln_status_free(st);
}
