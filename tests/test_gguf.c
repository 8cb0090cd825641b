/* test_gguf.c - the GGUF reader (src/gguf.c) on files llama.cpp's own
 * writer (the `gguf` Python package, tools/gguf_testdata.py) produced:
 * metadata of every value type, tensors f32 / f16 / bf16 equal to what
 * numpy wrote beside them, block-quantized tensors as uint8 rows whose
 * decoding (ir/qblock.h) equals gguf.quants.dequantize, alignment; corrupt
 * files (built here byte by byte) refused with a message naming the file
 * and the fault; kiln_model_bind_weights_file and `--weights` binding a
 * GGUF's tensors by name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/qblock.h"
#include "kiln/kiln.h"
#include "src/io.h"

#define GG KILN_SOURCE_DIR "/tests/gguf/"

static kiln_tensor *npy(const char *name) {
  char path[512];
  snprintf(path, sizeof path, GG "small/%s.npy", name);
  kiln_status *st = kiln_status_new();
  kiln_tensor *t = rt_npy_read(path, st);
  cr_assert(t, "%s", kiln_status_message(st));
  kiln_status_free(st);
  return t;
}

static rt_gguf *open_ok(const char *path, kiln_status *st) {
  rt_gguf *f = rt_gguf_open(path, st);
  cr_assert(f, "%s", kiln_status_message(st));
  return f;
}

static int64_t meta_int(const rt_gguf *f, const char *key) {
  int i = rt_gguf_meta_find(f, key);
  cr_assert_geq(i, 0, "no key %s", key);
  int64_t v = 0;
  cr_assert_eq(rt_gguf_meta_int(f, i, &v), 0, "%s is not an integer", key);
  return v;
}

Test(gguf, metadata_of_every_value_type_reads_back) {
  kiln_status *st = kiln_status_new();
  rt_gguf *f = open_ok(GG "small.gguf", st);
  cr_expect_eq(meta_int(f, "t.u8"), 200);
  cr_expect_eq(meta_int(f, "t.i8"), -100);
  cr_expect_eq(meta_int(f, "t.u16"), 60000);
  cr_expect_eq(meta_int(f, "t.i16"), -30000);
  cr_expect_eq(meta_int(f, "t.u32"), 4000000000ll);
  cr_expect_eq(meta_int(f, "t.i32"), -2000000000ll);
  cr_expect_eq(meta_int(f, "t.u64"), (1ll << 40) + 3);
  cr_expect_eq(meta_int(f, "t.i64"), -(1ll << 40) - 3);
  cr_expect_eq(meta_int(f, "t.bool"), 1);
  size_t len = 0;
  const char *s = rt_gguf_meta_string(f, rt_gguf_meta_find(f, "t.str"), &len);
  cr_assert(s);
  cr_expect(len == 6 && memcmp(s, "h\xc3\xa9llo", 6) == 0);
  s = rt_gguf_meta_string(f, rt_gguf_meta_find(f, "general.architecture"), &len);
  cr_expect(s && len == 9 && memcmp(s, "kiln-test", 9) == 0);
  int et = -1;
  uint64_t n = 0;
  cr_assert_eq(rt_gguf_meta_array(f, rt_gguf_meta_find(f, "t.ints"), &et, &n), 0);
  cr_expect_eq(n, 4);
  cr_assert_eq(rt_gguf_meta_array(f, rt_gguf_meta_find(f, "t.strs"), &et, &n), 0);
  cr_expect(et == 8 && n == 3);
  cr_assert_eq(rt_gguf_meta_array(f, rt_gguf_meta_find(f, "t.nested"), &et, &n), 0);
  cr_expect(et == 9 && n == 2);
  cr_expect_eq(rt_gguf_meta_find(f, "t.missing"), -1);
  rt_gguf_close(f);
  kiln_status_free(st);
}

static float as_f32(const kiln_tensor *t, int64_t i) {
  const uint8_t *p = (const uint8_t *)kiln_tensor_data(t);
  switch (kiln_tensor_dtype(t)) {
  case KILN_FLOAT32: return ((const float *)(const void *)p)[i];
  case KILN_FLOAT16: return qb_f16(p + 2 * i);
  default: return qb_bf16(p + 2 * i);
  }
}

Test(gguf, float_tensors_equal_what_numpy_wrote) {
  static const struct {
    const char *name;
    kiln_dtype dt;
  } cases[] = {{"plain.f32", KILN_FLOAT32}, {"plain.f16", KILN_FLOAT16},
               {"plain.bf16", KILN_BFLOAT16}};
  kiln_status *st = kiln_status_new();
  rt_gguf *f = open_ok(GG "small.gguf", st);
  cr_expect_eq(rt_gguf_count(f), 8);
  for (size_t c = 0; c < 3; c++) {
    int i = rt_gguf_find(f, cases[c].name);
    cr_assert_geq(i, 0, "%s", cases[c].name);
    cr_expect_null(rt_gguf_encoding(f, i));
    kiln_tensor *t = rt_gguf_tensor(f, i, st), *want = npy(cases[c].name);
    cr_assert(t, "%s", kiln_status_message(st));
    cr_expect_eq(kiln_tensor_dtype(t), cases[c].dt);
    cr_assert_eq(kiln_tensor_rank(t), 2);
    for (int a = 0; a < 2; a++)
      cr_expect_eq(kiln_tensor_shape(t)[a], kiln_tensor_shape(want)[a], "%s", cases[c].name);
    const float *w = kiln_tensor_data(want);
    for (int64_t e = 0; e < kiln_tensor_numel(want); e++)
      cr_expect_eq(as_f32(t, e), w[e], "%s[%lld]", cases[c].name, (long long)e);
    kiln_tensor_free(t);
    kiln_tensor_free(want);
  }
  rt_gguf_close(f);
  kiln_status_free(st);
}

Test(gguf, block_tensors_are_uint8_rows_that_decode_to_numpys_dequantize) {
  static const char *const names[] = {"blk.q4_0", "blk.q8_0", "blk.q4_k", "blk.q5_k",
                                      "blk.q6_k"};
  kiln_status *st = kiln_status_new();
  rt_gguf *f = open_ok(GG "small.gguf", st);
  for (int c = 0; c < 5; c++) {
    int i = rt_gguf_find(f, names[c]);
    cr_assert_geq(i, 0);
    int enc = qb_from_name(rt_gguf_encoding(f, i));
    cr_assert_eq(enc, c, "%s", names[c]);
    kiln_tensor *t = rt_gguf_tensor(f, i, st), *want = npy(names[c]);
    cr_assert(t, "%s", kiln_status_message(st));
    cr_expect_eq(kiln_tensor_dtype(t), KILN_UINT8);
    int64_t rows = kiln_tensor_shape(want)[0], k = kiln_tensor_shape(want)[1];
    cr_assert_eq(kiln_tensor_shape(t)[0], rows);
    cr_assert_eq(kiln_tensor_shape(t)[1], k / QB_ELEMS(enc) * QB_BYTES(enc), "%s", names[c]);
    const uint8_t *b = kiln_tensor_data(t);
    const float *w = kiln_tensor_data(want);
    float y[256];
    for (int64_t blk = 0; blk < rows * k / QB_ELEMS(enc); blk++) {
      qb_decode((qb_encoding)enc, b + blk * QB_BYTES(enc), y);
      for (int e = 0; e < QB_ELEMS(enc); e++) {
        float ref = w[blk * QB_ELEMS(enc) + e];
        cr_assert(fabsf(y[e] - ref) <= 1e-6f * fmaxf(1.0f, fabsf(ref)),
                  "%s block %lld element %d: %g, numpy %g", names[c], (long long)blk, e,
                  (double)y[e], (double)ref);
      }
    }
    kiln_tensor_free(t);
    kiln_tensor_free(want);
  }
  rt_gguf_close(f);
  kiln_status_free(st);
}

Test(gguf, general_alignment_places_the_data) {
  kiln_status *st = kiln_status_new();
  rt_gguf *f = open_ok(GG "aligned.gguf", st);
  cr_expect_eq(meta_int(f, "general.alignment"), 64);
  kiln_tensor *a = rt_gguf_tensor(f, rt_gguf_find(f, "a"), st);
  cr_assert(a, "%s", kiln_status_message(st));
  const float *av = kiln_tensor_data(a);
  cr_expect(av[0] == 0 && av[1] == 1 && av[2] == 2);
  kiln_tensor *b = rt_gguf_tensor(f, rt_gguf_find(f, "b"), st);
  cr_assert(b);
  float y[32];
  qb_decode(QB_Q8_0, (const uint8_t *)kiln_tensor_data(b) + 34, y);
  cr_expect(fabsf(y[31] - 1.0f) < 0.01f, "%g", (double)y[31]);
  kiln_tensor_free(a);
  kiln_tensor_free(b);
  rt_gguf_close(f);
  kiln_status_free(st);
}

/* ---- corrupt files, written byte by byte ---- */

typedef struct buf {
  uint8_t b[4096];
  size_t n;
} buf;

static void put(buf *w, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) w->b[w->n++] = (uint8_t)(v >> (8 * i));
}
static void put_str(buf *w, const char *s) {
  put(w, strlen(s), 8);
  memcpy(w->b + w->n, s, strlen(s));
  w->n += strlen(s);
}

/* A file: magic, version, one u32 kv "k" = 7, one tensor "w" of `type` with
 * dims [dim0, 2] at `offset`, padded to 32, then `data` bytes. */
typedef struct spec {
  const char *magic;
  uint32_t version, type;
  uint64_t ntensors, nkv, dim0, offset, data, kvtype;
} spec;

static spec good(void) {
  return (spec){"GGUF", 3, 0, 1, 1, 4, 0, 32, 4};
}

static void write_file(const char *path, const spec *s, size_t cut) {
  buf w = {.n = 0};
  memcpy(w.b, s->magic, 4);
  w.n = 4;
  put(&w, s->version, 4);
  put(&w, s->ntensors, 8);
  put(&w, s->nkv, 8);
  put_str(&w, "k");
  put(&w, s->kvtype, 4);
  put(&w, 7, 4);
  put_str(&w, "w");
  put(&w, 2, 4);
  put(&w, s->dim0, 8);
  put(&w, 2, 8);
  put(&w, s->type, 4);
  put(&w, s->offset, 8);
  while (w.n % 32) w.b[w.n++] = 0;
  memset(w.b + w.n, 0, s->data);
  w.n += s->data;
  FILE *fp = fopen(path, "wb");
  cr_assert(fp);
  cr_assert_eq(fwrite(w.b, 1, cut ? cut : w.n, fp), cut ? cut : w.n);
  cr_assert_eq(fclose(fp), 0);
}

static void refused(const spec *s, size_t cut, kiln_code code, const char *needle) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/kiln_test_gguf_%d.gguf", (int)getpid());
  write_file(path, s, cut);
  kiln_status *st = kiln_status_new();
  rt_gguf *f = rt_gguf_open(path, st);
  cr_assert_null(f, "accepted a file that should fail with '%s'", needle);
  const char *m = kiln_status_message(st);
  cr_expect_eq(kiln_status_code(st), code, "%s", m);
  cr_expect(strstr(m, path), "message '%s' does not name the file", m);
  cr_expect(strstr(m, needle), "message '%s' lacks '%s'", m, needle);
  kiln_status_free(st);
  unlink(path);
}

Test(gguf_corrupt, the_hand_built_file_is_well_formed) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/kiln_test_gguf_ok_%d.gguf", (int)getpid());
  spec s = good();
  write_file(path, &s, 0);
  kiln_status *st = kiln_status_new();
  rt_gguf *f = open_ok(path, st);
  cr_expect_eq(rt_gguf_count(f), 1);
  cr_expect_eq(meta_int(f, "k"), 7);
  kiln_tensor *t = rt_gguf_tensor(f, 0, st);
  cr_assert(t);
  cr_expect(kiln_tensor_shape(t)[0] == 2 && kiln_tensor_shape(t)[1] == 4);
  kiln_tensor_free(t);
  rt_gguf_close(f);
  kiln_status_free(st);
  unlink(path);
}

Test(gguf_corrupt, bad_magic) {
  spec s = good();
  s.magic = "GGML";
  refused(&s, 0, KILN_ERR_IO, "not a GGUF file");
}

Test(gguf_corrupt, bad_version) {
  spec s = good();
  s.version = 1;
  refused(&s, 0, KILN_ERR_UNSUPPORTED, "unsupported GGUF version 1");
  s.version = 0x03000000;
  refused(&s, 0, KILN_ERR_UNSUPPORTED, "big-endian");
}

Test(gguf_corrupt, truncated_header_and_kv) {
  spec s = good();
  refused(&s, 10, KILN_ERR_IO, "truncated header");
  refused(&s, 30, KILN_ERR_IO, "metadata count 1 cannot fit in the file");
  refused(&s, 39, KILN_ERR_IO, "truncated metadata value");
}

Test(gguf_corrupt, unknown_metadata_value_type) {
  spec s = good();
  s.kvtype = 13;
  refused(&s, 0, KILN_ERR_IO, "unknown metadata value type 13");
}

Test(gguf_corrupt, forged_counts_fail_before_allocating) {
  spec s = good();
  s.nkv = UINT64_MAX / 2;
  refused(&s, 0, KILN_ERR_IO, "cannot fit in the file");
  s = good();
  s.ntensors = 1ull << 40;
  refused(&s, 0, KILN_ERR_IO, "tensor count 1099511627776 cannot fit in the file");
}

Test(gguf_corrupt, tensor_past_the_end) {
  spec s = good();
  s.data = 16;
  refused(&s, 0, KILN_ERR_IO, "tensor 'w': data runs past the end of the file");
  s = good();
  s.offset = 1ull << 62;
  refused(&s, 0, KILN_ERR_IO, "tensor 'w': data runs past the end of the file");
}

Test(gguf_corrupt, unknown_and_unsupported_tensor_types) {
  spec s = good();
  s.type = 99;
  refused(&s, 0, KILN_ERR_UNSUPPORTED, "tensor 'w': unsupported GGML type 99 (unknown");
  s.type = 3;
  refused(&s, 0, KILN_ERR_UNSUPPORTED, "unsupported GGML type 3 (q4_1");
}

Test(gguf_corrupt, block_dim_not_a_multiple_of_the_block) {
  spec s = good();
  s.type = 2; /* q4_0: 4 elements is not a block of 32 */
  refused(&s, 0, KILN_ERR_IO, "innermost dim 4 is not a multiple of q4_0's block of 32");
}

Test(gguf_corrupt, misaligned_offset) {
  spec s = good();
  s.offset = 4;
  s.data = 64;
  refused(&s, 0, KILN_ERR_IO, "offset 4 is not a multiple of the alignment 32");
}

Test(gguf_corrupt, fifo_is_refused_without_waiting) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/kiln_test_gguf_fifo_%d", (int)getpid());
  cr_assert_eq(mkfifo(path, 0600), 0);
  kiln_status *st = kiln_status_new();
  cr_expect_null(rt_gguf_open(path, st));
  cr_expect(strstr(kiln_status_message(st), "not a regular file"), "%s",
            kiln_status_message(st));
  kiln_status_free(st);
  unlink(path);
}

/* ---- binding a GGUF's tensors to a model ---- */

Test(gguf_bind, bind_weights_file_binds_by_name_and_outlives_nothing) {
  static const char text[] =
      "mo.graph @g(%x: !mo.tensor<[3, 5], f32>) -> (!mo.tensor<[3, 5], f32>) {\n"
      "  %w = mo.constant.external {name = \"plain.f32\"} : !mo.tensor<[3, 5], f32>\n"
      "  %y = mo.add(%x, %w) : (!mo.tensor<[3, 5], f32>, !mo.tensor<[3, 5], f32>) -> "
      "!mo.tensor<[3, 5], f32>\n  mo.output %y : !mo.tensor<[3, 5], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "bind.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_bind_weights_file(m, GG "small.gguf", st), 0, "%s",
               kiln_status_message(st));
  /* a second file chains to the first; the first stays mapped */
  cr_assert_eq(kiln_model_bind_weights_file(m, GG "aligned.gguf", st), 0, "%s",
               kiln_status_message(st));
  int64_t shape[] = {3, 5};
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, shape, st), *y = NULL;
  cr_assert(x);
  memset(kiln_tensor_data(x), 0, kiln_tensor_nbytes(x));
  cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
  kiln_tensor *want = npy("plain.f32");
  for (int i = 0; i < 15; i++)
    cr_expect_eq(((const float *)kiln_tensor_data(y))[i],
                 ((const float *)kiln_tensor_data(want))[i]);
  cr_expect_eq(kiln_model_bind_weights_file(m, "/nonexistent.gguf", st), -1);
  cr_expect(strstr(kiln_status_message(st), "/nonexistent.gguf"));
  kiln_tensor_free(want);
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(gguf_bind, a_tensor_of_the_wrong_shape_is_named_and_nothing_leaks) {
  static const char text[] =
      "mo.graph @g(%x: !mo.tensor<[5, 3], f32>) -> (!mo.tensor<[5, 3], f32>) {\n"
      "  %w = mo.constant.external {name = \"plain.f32\"} : !mo.tensor<[5, 3], f32>\n"
      "  %y = mo.add(%x, %w) : (!mo.tensor<[5, 3], f32>, !mo.tensor<[5, 3], f32>) -> "
      "!mo.tensor<[5, 3], f32>\n  mo.output %y : !mo.tensor<[5, 3], f32>\n}\n";
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "shape.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_bind_weights_file(m, GG "small.gguf", st), -1);
  cr_expect(strstr(kiln_status_message(st), "plain.f32"), "%s", kiln_status_message(st));
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}
