/* test_buffers.c - mutable buffers and chains (ir/buffer.h, src/buffers.h):
 * each buffer op on the CPU runtime against the reference interpreter
 * (outputs and the buffers' final contents: integers bit for bit, floats
 * within rounding), a load after a store sees it and one before does not,
 * a KV-cache append by slices into a caller's buffer that persists across
 * three executes, a graph-internal buffer, fusion and aliases around buffer
 * ops, a slice outside the buffer, the text round trip, the C builder, and
 * bad graphs refused at their line:col. The buffers_simt_emu suite runs the
 * same cases as a simt-emu device model (buffers copied in and back, the
 * slice store a kernel: src/device_model.c), and a cache that lives in
 * device memory; KILN_TEST_DEVICE moves the buffers suite to that device. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "kiln/custom.h"
#include "kiln/kiln.h"
#include "src/rt.h"
#include "support/under_test.h"

#define T(r) "!mo.tensor<[" r "], f32>"
#define B(r) "!mo.buffer<[" r "], f32>"
#define CH "!mo.chain"

static kiln_status *st;
static kiln_context *ctx;

static void setup(void) {
  st = kiln_status_new();
  ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
}

static void teardown(void) {
  kiln_context_free(ctx);
  kiln_status_free(st);
}

TestSuite(buffers, .init = setup, .fini = teardown);

#define MAXIO 8

/* One case: inputs given as tensors (the JIT mutates them in place); the
 * interpreter gets copies of the same data. Checks that the outputs and
 * every input (buffers included) agree bit for bit after the run. */
typedef struct run_case {
  const char *text;
  int nin;
  kiln_tensor *in[MAXIO];
} run_case;

/* The device the buffer_device suite compiles for (simt-emu), else NULL:
 * the CPU, or the device KILN_TEST_DEVICE names (support/under_test.h). */
static kiln_device *on_device;

static void setup_device(void) {
  setup();
  on_device = kiln_device_open("simt-emu", st);
  cr_assert(on_device, "%s", kiln_status_message(st));
}

static void teardown_device(void) {
  kiln_device_close(on_device);
  on_device = NULL;
  teardown();
}

TestSuite(buffers_simt_emu, .init = setup_device, .fini = teardown_device);

/* A case run twice: on the CPU (suite buffers) and on simt-emu. */
#define ON_BOTH(name)                                                                          \
  Test(buffers, name) { name(); }                                                              \
  Test(buffers_simt_emu, name) { name(); }

static kiln_model *compile_text(const char *text) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "t.mlir", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = on_device ? kiln_model_compile_on(ctx, on_device, g, st)
                            : under_test_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_graph_free(g);
  return m;
}

static kiln_tensor *tensor_f32(int rank, const int64_t *shape, float start, float step) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, st);
  cr_assert(t);
  float *p = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) p[i] = start + step * (float)i;
  return t;
}

static kiln_tensor *tensor_i64(int n, const int64_t *v) {
  int64_t shape[1] = {n};
  kiln_tensor *t = kiln_tensor_new(KILN_INT64, 1, shape, st);
  cr_assert(t);
  memcpy(kiln_tensor_data(t), v, (size_t)n * 8);
  return t;
}

static ir_tensor as_ir(const kiln_tensor *t, void *data) {
  ir_tensor r = {.dtype = (ir_dtype)kiln_tensor_dtype(t), .rank = kiln_tensor_rank(t),
                 .data = data};
  for (int a = 0; a < r.rank; a++) r.shape[a] = kiln_tensor_shape(t)[a];
  return r;
}

/* got against the interpreter's want: integers bit for bit, f32 within
 * rounding (exp is libm's in the interpreter, the JIT's own in kernels). */
static void expect_close(const kiln_tensor *got, const void *want, const char *what, int k) {
  if (kiln_tensor_dtype(got) != KILN_FLOAT32) {
    cr_expect_eq(memcmp(kiln_tensor_data(got), want, kiln_tensor_nbytes(got)), 0, "%s %d differs",
                 what, k);
    return;
  }
  const float *gp = kiln_tensor_data(got), *wp = want;
  for (int64_t i = 0; i < kiln_tensor_numel(got); i++)
    cr_expect(gp[i] == wp[i] || fabsf(gp[i] - wp[i]) <= 1e-6f + 1e-5f * fabsf(wp[i]),
              "%s %d [%lld]: %g vs %g", what, k, (long long)i, gp[i], wp[i]);
}

/* Execute m once on c's inputs and the interpreter on copies; compare. */
static void check_against_interp(kiln_model *m, const run_case *c) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(c->text, strlen(c->text), &d);
  cr_assert(g, "%d:%d: %s", d.line, d.col, d.msg);
  ir_tensor ins[MAXIO];
  void *copies[MAXIO];
  for (int i = 0; i < c->nin; i++) {
    size_t nb = kiln_tensor_nbytes(c->in[i]);
    copies[i] = malloc(nb ? nb : 1);
    memcpy(copies[i], kiln_tensor_data(c->in[i]), nb);
    ins[i] = as_ir(c->in[i], copies[i]);
  }
  ir_tensor outs[MAXIO];
  char msg[512];
  cr_assert_eq(ir_interp_run(g, ins, NULL, NULL, outs, msg, sizeof msg), 0, "%s", msg);
  int no = kiln_model_num_outputs(m);
  kiln_tensor *got[MAXIO] = {0};
  cr_assert_eq(kiln_model_execute(m, c->in, c->nin, got, no, st), 0, "%s",
               kiln_status_message(st));
  for (int o = 0; o < no; o++) {
    expect_close(got[o], outs[o].data, "output", o);
    free(outs[o].data);
    kiln_tensor_free(got[o]);
  }
  for (int i = 0; i < c->nin; i++) {
    expect_close(c->in[i], copies[i], "input (after the run)", i);
    free(copies[i]);
  }
  ir_graph_free(g);
}

static float f(const kiln_tensor *t, int64_t i) { return ((const float *)kiln_tensor_data(t))[i]; }

/* ---- ordering ---- */

static const char *STORE_THEN_LOAD =
    "mo.graph @g(%buf: " B("4") ", %x: " T("4") ") -> (" T("4") ", " T("4") ") {\n"
    "  %c0 = mo.chain.create() : " CH "\n"
    "  %old, %c1 = mo.mutable.load(%buf, %c0) : (" B("4") ", " CH ") -> (" T("4") ", " CH ")\n"
    "  %two = mo.add(%x, %x) : " T("4") "\n"
    "  %c2 = mo.mutable.store(%buf, %two, %c1) : (" B("4") ", " T("4") ", " CH ") -> " CH "\n"
    "  %new, %c3 = mo.mutable.load(%buf, %c2) : (" B("4") ", " CH ") -> (" T("4") ", " CH ")\n"
    "  %y = mo.add(%new, %old) : " T("4") "\n"
    "  %z = mo.negate(%old) : " T("4") "\n"
    "  mo.output %y, %z : " T("4") ", " T("4") "\n"
    "}\n";

static void a_load_after_a_store_sees_it_and_one_before_does_not(void) {
  kiln_model *m = compile_text(STORE_THEN_LOAD);
  cr_assert_eq(kiln_model_input_is_buffer(m, 0), 1);
  cr_assert_eq(kiln_model_input_is_buffer(m, 1), 0);
  int64_t s4[1] = {4};
  kiln_tensor *buf = tensor_f32(1, s4, 10, 1), *x = tensor_f32(1, s4, 1, 1);
  kiln_tensor *in[2] = {buf, x}, *out[2] = {0};
  cr_assert_eq(kiln_model_execute(m, in, 2, out, 2, st), 0, "%s", kiln_status_message(st));
  for (int i = 0; i < 4; i++) {
    float old = 10.0f + (float)i, two = 2.0f * (1.0f + (float)i);
    cr_expect_eq(f(out[0], i), two + old, "y[%d] = %g", i, f(out[0], i));
    cr_expect_eq(f(out[1], i), -old, "z[%d] = %g", i, f(out[1], i));
    cr_expect_eq(f(buf, i), two, "the caller's buffer holds the store: buf[%d] = %g", i,
                 f(buf, i));
  }
  kiln_tensor_free(out[0]);
  kiln_tensor_free(out[1]);
  run_case c = {STORE_THEN_LOAD, 2, {buf, x}};
  check_against_interp(m, &c);
  kiln_tensor_free(buf);
  kiln_tensor_free(x);
  kiln_model_free(m);
}
ON_BOTH(a_load_after_a_store_sees_it_and_one_before_does_not)

/* ---- the KV-cache append ---- */

#define KV "!mo.buffer<[2, 8, 3], f32>"
static const char *KV_APPEND =
    "mo.graph @kv<n>(%cache: " KV ", %new: " T("2, n, 3") ", %start: !mo.tensor<[3], si64>)\n"
    "    -> (" T("2, 8, 3") ") {\n"
    "  %c0 = mo.chain.create() : " CH "\n"
    "  %s = mo.mul(%new, %new) : " T("2, n, 3") "\n"
    "  %c1 = mo.mutable.store.slice(%cache, %s, %start, %c0) : (" KV ", " T("2, n, 3")
    ", !mo.tensor<[3], si64>, " CH ") -> " CH "\n"
    "  %all, %c2 = mo.mutable.load(%cache, %c1) : (" KV ", " CH ") -> (" T("2, 8, 3") ", " CH ")\n"
    "  %y = mo.exp(%all) : " T("2, 8, 3") "\n"
    "  mo.output %y : " T("2, 8, 3") "\n"
    "}\n";

static void a_kv_cache_appended_by_slices_persists_across_three_executes(void) {
  kiln_model *m = compile_text(KV_APPEND);
  int64_t cs[3] = {2, 8, 3};
  kiln_tensor *cache = tensor_f32(3, cs, 0, 0);
  float want[48] = {0};
  int64_t pos = 0, steps[3] = {2, 1, 3};
  for (int s = 0; s < 3; s++) {
    int64_t ns[3] = {2, steps[s], 3};
    kiln_tensor *nw = tensor_f32(3, ns, 0.1f * (float)(s + 1), 0.05f);
    int64_t start[3] = {0, pos, 0};
    kiln_tensor *sv = tensor_i64(3, start);
    for (int b = 0; b < 2; b++)
      for (int t = 0; t < steps[s]; t++)
        for (int k = 0; k < 3; k++) {
          float v = f(nw, (b * steps[s] + t) * 3 + k);
          want[(b * 8 + pos + t) * 3 + k] = v * v;
        }
    run_case c = {KV_APPEND, 3, {cache, nw, sv}};
    check_against_interp(m, &c); /* executes once: the cache now holds steps 0..s */
    for (int i = 0; i < 48; i++)
      cr_assert_eq(f(cache, i), want[i], "after execute %d: cache[%d] = %g, want %g", s + 1, i,
                   f(cache, i), want[i]);
    pos += steps[s];
    kiln_tensor_free(nw);
    kiln_tensor_free(sv);
  }
  kiln_tensor_free(cache);
  kiln_model_free(m);
}
ON_BOTH(a_kv_cache_appended_by_slices_persists_across_three_executes)

/* A captured KV-cache step replayed with new tokens and starts: each replay
 * appends to the caller's cache (on a device: the recorded launch list, its
 * copies and the slice kernel, then the cache copied back). */
static void a_captured_step_replays_appending_to_the_cache(void) {
  kiln_model *m = compile_text(KV_APPEND);
  int64_t cs[3] = {2, 8, 3}, ns[3] = {2, 1, 3};
  kiln_tensor *cache = tensor_f32(3, cs, 0, 0);
  float want[48] = {0};
  for (int s = 0; s < 4; s++) {
    kiln_tensor *nw = tensor_f32(3, ns, 0.5f + (float)s, -0.125f);
    int64_t start[3] = {0, s, 0};
    kiln_tensor *sv = tensor_i64(3, start), *in[3] = {cache, nw, sv}, *out[1] = {0};
    int rc = s == 0 ? kiln_model_capture(m, 7, in, 3, out, 1, st)
                    : kiln_model_replay(m, 7, in, 3, out, 1, st);
    cr_assert_eq(rc, 0, "step %d: %s", s, kiln_status_message(st));
    for (int b = 0; b < 2; b++)
      for (int k = 0; k < 3; k++) want[(b * 8 + s) * 3 + k] = f(nw, b * 3 + k) * f(nw, b * 3 + k);
    for (int i = 0; i < 48; i++) {
      cr_expect_eq(f(cache, i), want[i], "step %d: cache[%d] = %g, want %g", s, i, f(cache, i),
                   want[i]);
      cr_expect(fabsf(f(out[0], i) - expf(want[i])) <= 1e-6f * expf(want[i]), "step %d: y[%d]", s,
                i);
    }
    kiln_tensor_free(out[0]);
    kiln_tensor_free(nw);
    kiln_tensor_free(sv);
  }
  cr_expect_eq(kiln_model_release(m, 7, st), 0, "%s", kiln_status_message(st));
  kiln_tensor_free(cache);
  kiln_model_free(m);
}
ON_BOTH(a_captured_step_replays_appending_to_the_cache)

static void a_slice_outside_the_buffer_is_an_error_that_names_the_op(void) {
  kiln_model *m = compile_text(KV_APPEND);
  int64_t cs[3] = {2, 8, 3}, ns[3] = {2, 3, 3}, start[3] = {0, 6, 0};
  kiln_tensor *cache = tensor_f32(3, cs, 0, 0), *nw = tensor_f32(3, ns, 1, 1);
  kiln_tensor *sv = tensor_i64(3, start);
  kiln_tensor *in[3] = {cache, nw, sv}, *out[1] = {0};
  cr_assert_eq(kiln_model_execute(m, in, 3, out, 1, st), -1);
  const char *msg = kiln_status_message(st);
  /* on a device too: its kernel's error word, then the start read back */
  cr_expect(strstr(msg, "mo.mutable.store.slice at line 5:"), "%s", msg);
  cr_expect(strstr(msg, "[6, 9) of axis 1 is outside the buffer's 8"), "%s", msg);
  for (int i = 0; i < 48; i++) cr_expect_eq(f(cache, i), 0.0f, "the cache was not written");
  /* the interpreter refuses it too */
  ir_diag d = {0};
  ir_graph *g = ir_parse(KV_APPEND, strlen(KV_APPEND), &d);
  cr_assert(g);
  ir_tensor ins[3] = {as_ir(cache, kiln_tensor_data(cache)), as_ir(nw, kiln_tensor_data(nw)),
                      as_ir(sv, kiln_tensor_data(sv))};
  ir_tensor outs[1];
  char emsg[512];
  cr_expect_eq(ir_interp_run(g, ins, NULL, NULL, outs, emsg, sizeof emsg), -1);
  cr_expect(strstr(emsg, "outside the buffer"), "%s", emsg);
  ir_graph_free(g);
  kiln_tensor_free(cache);
  kiln_tensor_free(nw);
  kiln_tensor_free(sv);
  kiln_model_free(m);
}
ON_BOTH(a_slice_outside_the_buffer_is_an_error_that_names_the_op)

/* ---- a graph-internal buffer, symbolic ---- */

static const char *INTERNAL =
    "mo.graph @in<n>(%x: " T("n, 4") ", %start: !mo.tensor<[2], si32>) -> (" T("n, 6") ") {\n"
    "  %c0 = mo.chain.create() : " CH "\n"
    "  %b = mo.buffer.create() : " B("n, 6") "\n"
    "  %c1 = mo.mutable.store.slice(%b, %x, %start, %c0) : (" B("n, 6") ", " T("n, 4")
    ", !mo.tensor<[2], si32>, " CH ") -> " CH "\n"
    "  %h = mo.relu(%x) : " T("n, 4") "\n"
    "  %c2 = mo.mutable.store.slice(%b, %h, %start, %c1) : (" B("n, 6") ", " T("n, 4")
    ", !mo.tensor<[2], si32>, " CH ") -> " CH "\n"
    "  %v, %c3 = mo.mutable.load(%b, %c2) : (" B("n, 6") ", " CH ") -> (" T("n, 6") ", " CH ")\n"
    "  %y = mo.add(%v, %v) : " T("n, 6") "\n"
    "  mo.output %y : " T("n, 6") "\n"
    "}\n";

static void a_graph_internal_buffer_starts_zeroed_at_every_execute(void) {
  kiln_model *m = compile_text(INTERNAL);
  for (int64_t n = 1; n <= 5; n += 4) {
    int64_t xs[2] = {n, 4};
    kiln_tensor *x = tensor_f32(2, xs, -3, 0.75f);
    int32_t st2[2] = {0, 1};
    int64_t ss[1] = {2};
    kiln_tensor *sv = kiln_tensor_new(KILN_INT32, 1, ss, st);
    memcpy(kiln_tensor_data(sv), st2, 8);
    run_case c = {INTERNAL, 2, {x, sv}};
    check_against_interp(m, &c);
    check_against_interp(m, &c); /* again: column 0 and 5 stay zero */
    kiln_tensor *in[2] = {x, sv}, *out[1] = {0};
    cr_assert_eq(kiln_model_execute(m, in, 2, out, 1, st), 0, "%s", kiln_status_message(st));
    for (int64_t r = 0; r < n; r++) {
      cr_expect_eq(f(out[0], r * 6 + 0), 0.0f);
      cr_expect_eq(f(out[0], r * 6 + 5), 0.0f);
      float xv = f(x, r * 4 + 1);
      cr_expect_eq(f(out[0], r * 6 + 2), 2 * (xv > 0 ? xv : 0));
    }
    kiln_tensor_free(out[0]);
    kiln_tensor_free(x);
    kiln_tensor_free(sv);
  }
  kiln_model_free(m);
}
ON_BOTH(a_graph_internal_buffer_starts_zeroed_at_every_execute)

/* ---- fusion and aliases around buffer ops ---- */

/* An elementwise chain reads a load and feeds a store, another reads a
 * second load; a reshape of the first load (an alias: no kernel) is used
 * after the store. Fusion groups the chains but no group spans a buffer
 * op, and the alias still holds the contents from before the store. */
static const char *AROUND =
    "mo.graph @around(%buf: " B("2, 3") ", %x: " T("2, 3") ") -> (" T("2, 3") ", " T("6") ") {\n"
    "  %c0 = mo.chain.create() : " CH "\n"
    "  %t, %c1 = mo.mutable.load(%buf, %c0) : (" B("2, 3") ", " CH ") -> (" T("2, 3") ", " CH
    ")\n"
    "  %r = mo.reshape(%t) : " T("6") "\n"
    "  %a = mo.mul(%t, %x) : " T("2, 3") "\n"
    "  %b = mo.add(%a, %x) : " T("2, 3") "\n"
    "  %e = mo.exp(%b) : " T("2, 3") "\n"
    "  %c2 = mo.mutable.store(%buf, %e, %c1) : (" B("2, 3") ", " T("2, 3") ", " CH ") -> " CH
    "\n"
    "  %u, %c3 = mo.mutable.load(%buf, %c2) : (" B("2, 3") ", " CH ") -> (" T("2, 3") ", " CH
    ")\n"
    "  %v = mo.sub(%u, %t) : " T("2, 3") "\n"
    "  %w = mo.relu(%v) : " T("2, 3") "\n"
    "  %q = mo.negate(%r) : " T("6") "\n"
    "  mo.output %w, %q : " T("2, 3") ", " T("6") "\n"
    "}\n";

static void fusion_and_aliases_leave_buffer_ops_in_order(void) {
  kiln_model *m = compile_text(AROUND);
  int fused = 0;
  for (int i = 0; i < m->g->nnodes; i++) {
    const ir_node *n = m->g->nodes[i];
    if (n->op != IR_OP_FUSED) continue;
    fused++;
    for (int j = 0; j < n->body->nnodes; j++)
      cr_expect_neq(ir_op_get(n->body->nodes[j]->op)->cls, IR_CLS_BUFFER);
  }
  cr_expect_geq(fused, 1, "the elementwise chains were fused");
  int64_t s23[2] = {2, 3};
  kiln_tensor *buf = tensor_f32(2, s23, -1, 0.5f), *x = tensor_f32(2, s23, 0.25f, 0.125f);
  run_case c = {AROUND, 2, {buf, x}};
  for (int k = 0; k < 3; k++) check_against_interp(m, &c); /* the buffer changes each time */
  kiln_tensor_free(buf);
  kiln_tensor_free(x);
  kiln_model_free(m);
}
ON_BOTH(fusion_and_aliases_leave_buffer_ops_in_order)

/* ---- loads without a copy ---- */

/* The value of m's prepared graph named name, or NULL. */
static const ir_value *value_named(const kiln_model *m, const char *name) {
  for (int v = 0; v < m->g->nvalues; v++)
    if (m->g->values[v]->name && strcmp(m->g->values[v]->name, name) == 0) return m->g->values[v];
  return NULL;
}

/* Whether value `name` of m reads the memory of input `buffer` (rt_buffer_alias_loads). */
static bool reads_buffer_memory(const kiln_model *m, const char *name, int buffer) {
  const ir_value *v = value_named(m, name);
  cr_assert(v, "no value %%%s", name);
  return m->alias && m->alias[v->id] == m->g->inputs[buffer]->id;
}

/* A KV append whose full load is read only after the last store: it is
 * the caller's cache itself (no copy, nothing of it in the arena), execute
 * after execute, and the results match the interpreter's. */
#define KV64 "!mo.buffer<[2, 64, 3], f32>"
static const char *KV_APPEND_64 =
    "mo.graph @kv<n>(%cache: " KV64 ", %new: " T("2, n, 3") ", %start: !mo.tensor<[3], si64>)\n"
    "    -> (" T("2, 3") ") {\n"
    "  %c0 = mo.chain.create() : " CH "\n"
    "  %s = mo.mul(%new, %new) : " T("2, n, 3") "\n"
    "  %c1 = mo.mutable.store.slice(%cache, %s, %start, %c0) : (" KV64 ", " T("2, n, 3")
    ", !mo.tensor<[3], si64>, " CH ") -> " CH "\n"
    "  %all, %c2 = mo.mutable.load(%cache, %c1) : (" KV64 ", " CH ") -> (" T("2, 64, 3") ", " CH
    ")\n"
    "  %y = mo.max(%all) {axis = 1} : (" T("2, 64, 3") ") -> " T("2, 1, 3") "\n"
    "  %z = mo.reshape(%y) : " T("2, 3") "\n"
    "  mo.output %z : " T("2, 3") "\n"
    "}\n";

Test(buffers, a_load_no_store_follows_reads_the_buffer_without_a_copy) {
  if (under_test_device()) cr_skip_test("the CPU planner (%s)", under_test_device());
  kiln_model *m = compile_text(KV_APPEND_64);
  cr_expect(reads_buffer_memory(m, "all", 0), "the load of %%cache copies it");
  int64_t cs[3] = {2, 64, 3}, ns[3] = {2, 1, 3};
  kiln_tensor *cache = tensor_f32(3, cs, -0.5f, 0.01f);
  for (int s = 0; s < 3; s++) {
    kiln_tensor *nw = tensor_f32(3, ns, 0.1f * (float)(s + 1), 0.05f);
    int64_t start[3] = {0, 5 * s, 0};
    kiln_tensor *sv = tensor_i64(3, start);
    run_case c = {KV_APPEND_64, 3, {cache, nw, sv}};
    check_against_interp(m, &c);
    kiln_tensor_free(nw);
    kiln_tensor_free(sv);
  }
  cr_expect_lt(rt_model_peak_bytes(m), kiln_tensor_nbytes(cache),
               "arena peak %zu bytes: the cache (%zu bytes) was copied into it",
               rt_model_peak_bytes(m), kiln_tensor_nbytes(cache));
  kiln_tensor_free(cache);
  kiln_model_free(m);
}

/* A load read after a later store keeps its copy (the old contents); the
 * load after the store, read after no other store, needs none. */
Test(buffers, a_load_read_after_a_store_keeps_its_copy) {
  if (under_test_device()) cr_skip_test("the CPU planner (%s)", under_test_device());
  kiln_model *m = compile_text(STORE_THEN_LOAD);
  cr_expect_not(reads_buffer_memory(m, "old", 0), "%%old is read after the store");
  cr_expect(reads_buffer_memory(m, "new", 0), "%%new is read before any other store");
  kiln_model_free(m);
  m = compile_text(AROUND); /* a reshape of the load, read after the store, is a read of it */
  cr_expect_not(reads_buffer_memory(m, "t", 0), "%%t's reshape %%r is read after the store");
  kiln_model_free(m);
}

/* ---- inplace_custom on a buffer ---- */

/* bump adds 1 to every element of its in-place buffer, and 100 more to
 * element 0 when the buffer it got is the memory whose address `where`
 * holds: the caller's array itself. */
static const char *BUMP_C =
    "#include <kiln/kernel.h>\n"
    "KILN_KERNEL(bump, 2, 1)\n"
    "int32_t bump(const kiln_kernel_args *a) {\n"
    "  float *y = a->outputs[0].data;\n"
    "  const int64_t *where = a->inputs[1].data;\n"
    "  int64_t n = kiln_kernel_numel(&a->outputs[0]);\n"
    "  for (int64_t i = 0; i < n; i++) y[i] += 1.0f;\n"
    "  if (n > 0 && (int64_t)(uintptr_t)a->outputs[0].data == where[0]) y[0] += 100.0f;\n"
    "  return 0;\n"
    "}\n";

#define BN "!mo.buffer<[n], f32>"
#define IP_HEAD                                                                              \
  "mo.graph @ip<n>(%buf: " BN ", %where: !mo.tensor<[1], si64>) -> (" T("n") ", " T("n") \
  ") {\n"                                                                                   \
  "  %c0 = mo.chain.create() : " CH "\n"                                                     \
  "  %t, %c1 = mo.mutable.load(%buf, %c0) : (" BN ", " CH ") -> (" T("n") ", " CH ")\n"     \
  "  %y = mo.inplace_custom(%t, %where) {symbol = \"bump\"} : (" T("n")                    \
  ", !mo.tensor<[1], si64>) -> " T("n") "\n"                                                \
  "  %c2 = mo.mutable.store(%buf, %y, %c1) : (" BN ", " T("n") ", " CH ") -> " CH "\n"      \
  "  %u, %c3 = mo.mutable.load(%buf, %c2) : (" BN ", " CH ") -> (" T("n") ", " CH ")\n"

static void bump_run(const char *text, bool zero_copy) {
  if (under_test_device()) /* bump is a KILN_KERNEL: it runs on the CPU only */
    cr_skip_test("a CPU custom kernel (%s)", under_test_device());
  cr_assert_eq(kiln_context_add_kernel_library_memory(ctx, "bump.c", BUMP_C, strlen(BUMP_C), st),
               0, "%s", kiln_status_message(st));
  kiln_model *m = compile_text(text);
  int64_t s5[1] = {5};
  kiln_tensor *buf = tensor_f32(1, s5, 1, 1);
  int64_t addr = (int64_t)(uintptr_t)kiln_tensor_data(buf);
  kiln_tensor *where = tensor_i64(1, &addr);
  for (int k = 1; k <= 3; k++) {
    kiln_tensor *in[2] = {buf, where}, *out[2] = {0};
    cr_assert_eq(kiln_model_execute(m, in, 2, out, 2, st), 0, "%s", kiln_status_message(st));
    for (int i = 0; i < 5; i++) {
      float want = (float)(i + 1 + k) + (i == 0 && zero_copy ? 100.0f * (float)k : 0.0f);
      cr_expect_eq(f(buf, i), want, "execute %d: buf[%d] = %g, want %g", k, i, f(buf, i), want);
      cr_expect_eq(f(out[0], i), want);
    }
    kiln_tensor_free(out[0]);
    kiln_tensor_free(out[1]);
  }
  kiln_tensor_free(buf);
  kiln_tensor_free(where);
  kiln_model_free(m);
}

Test(buffers, inplace_custom_between_a_load_and_a_store_mutates_the_callers_memory) {
  bump_run(IP_HEAD "  %z = mo.negate(%u) : " T("n") "\n"
                   "  mo.output %u, %z : " T("n") ", " T("n") "\n}\n",
           true);
}

Test(buffers, inplace_custom_on_a_loaded_tensor_used_elsewhere_gets_a_copy) {
  bump_run(IP_HEAD "  mo.output %u, %t : " T("n") ", " T("n") "\n}\n", false);
}

/* ---- devices ---- */

/* The bytes of m's profile row named `kernel` ("copy in", "copy out"). */
static double copied_bytes(const kiln_model *m, const char *kernel) {
  kiln_profile *p = kiln_model_profile(m, st);
  cr_assert(p, "%s", kiln_status_message(st));
  double bytes = -1;
  for (int i = 0; i < kiln_profile_num_rows(p); i++)
    if (strcmp(kiln_profile_row_at(p, i)->kernel, kernel) == 0)
      bytes = kiln_profile_row_at(p, i)->gbyte * 1e9;
  kiln_profile_free(p);
  return bytes;
}

/* A device-model KV cache in a tensor on the device itself: the graph
 * updates the device memory in place, execute after execute, with no copy
 * of it in or back (the profile's copy rows count the other inputs and the
 * output only). */
Test(buffers_simt_emu, a_kv_cache_in_device_memory_is_updated_in_place) {
  kiln_model *m = compile_text(KV_APPEND);
  cr_assert_eq(kiln_model_set_profile(m, 1, st), 0, "%s", kiln_status_message(st));
  int64_t cs[3] = {2, 8, 3};
  kiln_tensor *host = tensor_f32(3, cs, 0, 0);
  kiln_tensor *cache = kiln_tensor_copy_to(host, on_device, st);
  cr_assert(cache, "%s", kiln_status_message(st));
  float want[48] = {0};
  int64_t pos = 0, steps[2] = {3, 2};
  for (int s = 0; s < 2; s++) {
    int64_t ns[3] = {2, steps[s], 3};
    kiln_tensor *nw = tensor_f32(3, ns, 0.5f * (float)(s + 1), 0.25f);
    int64_t start[3] = {0, pos, 0};
    kiln_tensor *sv = tensor_i64(3, start), *in[3] = {cache, nw, sv}, *out[1] = {0};
    cr_assert_eq(kiln_model_execute(m, in, 3, out, 1, st), 0, "%s", kiln_status_message(st));
    for (int b = 0; b < 2; b++)
      for (int t = 0; t < steps[s]; t++)
        for (int k = 0; k < 3; k++) {
          float v = f(nw, (b * steps[s] + t) * 3 + k);
          want[(b * 8 + pos + t) * 3 + k] = v * v;
        }
    kiln_tensor *back = kiln_tensor_copy_to(cache, NULL, st);
    cr_assert(back, "%s", kiln_status_message(st));
    for (int i = 0; i < 48; i++)
      cr_expect_eq(f(back, i), want[i], "after execute %d: cache[%d] = %g, want %g", s + 1, i,
                   f(back, i), want[i]);
    kiln_tensor_free(back);
    pos += steps[s];
    kiln_tensor_free(out[0]);
    kiln_tensor_free(nw);
    kiln_tensor_free(sv);
  }
  /* in: new [2, 3, 3] and [2, 2, 3] f32, start 3 x si64 twice; out: y [2, 8, 3] f32 twice */
  cr_expect_eq(copied_bytes(m, "copy in"), (18 + 12) * 4 + 2 * 24, "the cache was copied in");
  cr_expect_eq(copied_bytes(m, "copy out"), 2 * 48 * 4, "the cache was copied back");
  kiln_tensor_free(cache);
  kiln_tensor_free(host);
  kiln_model_free(m);
}

/* One model (one plan: the same shapes) given the cache on the device, then
 * a host cache, then the device one again: each execute updates the tensor
 * it was given and no other. */
Test(buffers_simt_emu, a_buffer_on_the_device_then_on_the_host_then_back) {
  kiln_model *m = compile_text(KV_APPEND);
  int64_t cs[3] = {2, 8, 3}, ns[3] = {2, 1, 3};
  kiln_tensor *host = tensor_f32(3, cs, 0, 0), *dev = kiln_tensor_copy_to(host, on_device, st);
  cr_assert(dev, "%s", kiln_status_message(st));
  kiln_tensor *which[3] = {dev, host, dev};
  int64_t pos[3] = {0, 5, 1};
  for (int s = 0; s < 3; s++) {
    kiln_tensor *nw = tensor_f32(3, ns, 1.0f + (float)s, 1), *sv;
    int64_t start[3] = {0, pos[s], 0};
    sv = tensor_i64(3, start);
    kiln_tensor *in[3] = {which[s], nw, sv}, *out[1] = {0};
    cr_assert_eq(kiln_model_execute(m, in, 3, out, 1, st), 0, "%s", kiln_status_message(st));
    kiln_tensor_free(out[0]);
    kiln_tensor_free(nw);
    kiln_tensor_free(sv);
  }
  kiln_tensor *back = kiln_tensor_copy_to(dev, NULL, st);
  cr_assert(back, "%s", kiln_status_message(st));
  for (int i = 0; i < 48; i++) {
    int b = i / 24, t = i / 3 % 8, k = i % 3;
    float v = 1.0f + (float)(b * 3 + k); /* new[b, 0, k] before the square */
    float want_dev = t == 0 ? v * v : t == 1 ? (v + 2) * (v + 2) : 0;
    float want_host = t == 5 ? (v + 1) * (v + 1) : 0;
    cr_expect_eq(f(back, i), want_dev, "device cache[%d] = %g, want %g", i, f(back, i), want_dev);
    cr_expect_eq(f(host, i), want_host, "host cache[%d] = %g, want %g", i, f(host, i), want_host);
  }
  kiln_tensor_free(back);
  kiln_tensor_free(dev);
  kiln_tensor_free(host);
  kiln_model_free(m);
}

/* ---- text ---- */

Test(buffers, buffer_graphs_print_and_parse_back_the_same) {
  const char *texts[] = {STORE_THEN_LOAD, KV_APPEND, INTERNAL};
  for (int i = 0; i < 3; i++) {
    ir_diag d = {0};
    ir_graph *g = ir_parse(texts[i], strlen(texts[i]), &d);
    cr_assert(g, "%d:%d: %s", d.line, d.col, d.msg);
    char *p1 = ir_print(g);
    ir_graph *g2 = ir_parse(p1, strlen(p1), &d);
    cr_assert(g2, "%s\n%d:%d: %s", p1, d.line, d.col, d.msg);
    char *p2 = ir_print(g2);
    cr_expect_str_eq(p1, p2);
    cr_expect(strstr(p1, "!mo.buffer<[") && strstr(p1, "!mo.chain"), "%s", p1);
    free(p1);
    free(p2);
    ir_graph_free(g);
    ir_graph_free(g2);
  }
}

/* ---- the C builder ---- */

Test(buffers, the_c_builder_makes_a_buffer_graph) {
  kiln_graph *g = kiln_graph_new("b", st);
  const char *dims[1] = {"n"};
  kiln_value *buf = kiln_graph_add_buffer_input(g, "acc", KILN_FLOAT32, 1, dims, st);
  kiln_value *x = kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, dims, st);
  cr_assert(buf && x, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_value_kind_of(buf), KILN_VALUE_BUFFER);
  kiln_value *c0 = kiln_graph_add_op(g, "mo.chain.create", NULL, 0, NULL, CH, st);
  cr_assert(c0, "%s", kiln_status_message(st));
  cr_expect_eq(kiln_value_kind_of(c0), KILN_VALUE_CHAIN);
  kiln_value *lo[2] = {buf, c0};
  kiln_value *old = kiln_graph_add_op(g, "mo.mutable.load", lo, 2, NULL, NULL, st);
  cr_assert(old, "%s", kiln_status_message(st));
  kiln_value *c1 = kiln_value_result(old, 1);
  kiln_value *ax[2] = {old, x};
  kiln_value *sum = kiln_graph_add_op(g, "mo.add", ax, 2, NULL, NULL, st);
  kiln_value *so[3] = {buf, sum, c1};
  kiln_value *c2 = kiln_graph_add_op(g, "mo.mutable.store", so, 3, NULL, NULL, st);
  cr_assert(c2, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_graph_set_outputs(g, &sum, 1, NULL, st), 0, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  int64_t s3[1] = {3};
  kiln_tensor *acc = tensor_f32(1, s3, 0, 0), *xv = tensor_f32(1, s3, 1, 1);
  for (int k = 1; k <= 3; k++) { /* an accumulator: acc += x per execute */
    kiln_tensor *in[2] = {acc, xv}, *out[1] = {0};
    cr_assert_eq(kiln_model_execute(m, in, 2, out, 1, st), 0, "%s", kiln_status_message(st));
    for (int i = 0; i < 3; i++) {
      cr_expect_eq(f(acc, i), (float)(k * (i + 1)));
      cr_expect_eq(f(out[0], i), (float)(k * (i + 1)));
    }
    kiln_tensor_free(out[0]);
  }
  kiln_tensor_free(acc);
  kiln_tensor_free(xv);
  kiln_model_free(m);
  kiln_graph_free(g);
}

/* ---- bad graphs ---- */

static void refused(const char *text, const char *where, const char *what) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "bad.mlir", st);
  cr_assert_null(g, "accepted:\n%s", text);
  const char *msg = kiln_status_message(st);
  cr_expect(strstr(msg, where), "want '%s' in: %s", where, msg);
  cr_expect(strstr(msg, what), "want '%s' in: %s", what, msg);
}

#define HEAD "mo.graph @bad(%buf: " B("4") ", %x: " T("4") ") -> (" T("4") ") {\n"
#define STORE(c, cin) "  " c " = mo.mutable.store(%buf, %x, " cin ") : (" B("4") ", " T("4") \
                      ", " CH ") -> " CH "\n"
#define LOAD(t, c, cin) "  " t ", " c " = mo.mutable.load(%buf, " cin ") : (" B("4") ", " CH \
                        ") -> (" T("4") ", " CH ")\n"

Test(buffers, a_buffer_stored_from_two_chains_is_refused_at_line_col) {
  refused(HEAD "  %a = mo.chain.create() : " CH "\n"
               "  %b = mo.chain.create() : " CH "\n" STORE("%a1", "%a") STORE("%b1", "%b")
               "  mo.output %x : " T("4") "\n}\n",
          "bad.mlir:5:3", "races with mo.mutable.store at 4:3 on buffer %buf");
}

Test(buffers, a_load_on_another_chain_than_a_store_is_refused) {
  refused(HEAD "  %a = mo.chain.create() : " CH "\n"
               "  %b = mo.chain.create() : " CH "\n" STORE("%a1", "%a") LOAD("%t", "%b1", "%b")
               "  mo.output %t : " T("4") "\n}\n",
          "bad.mlir:5:3", "different chains");
  /* the load first, the store second: refused at the store */
  refused(HEAD "  %a = mo.chain.create() : " CH "\n"
               "  %b = mo.chain.create() : " CH "\n" LOAD("%t", "%b1", "%b") STORE("%a1", "%a")
               "  mo.output %t : " T("4") "\n}\n",
          "bad.mlir:5:3", "races with mo.mutable.load at 4:3");
}

Test(buffers, loads_on_two_chains_without_a_store_are_fine) {
  const char *ok = HEAD "  %a = mo.chain.create() : " CH "\n"
                        "  %b = mo.chain.create() : " CH "\n" LOAD("%t", "%a1", "%a")
                            LOAD("%u", "%b1", "%b") "  %y = mo.add(%t, %u) : " T("4") "\n"
                        "  mo.output %y : " T("4") "\n}\n";
  kiln_graph *g = kiln_graph_parse(ok, strlen(ok), "ok.mlir", st);
  cr_expect(g, "%s", kiln_status_message(st));
  kiln_graph_free(g);
}

Test(buffers, a_chain_used_twice_is_refused_at_line_col) {
  refused(HEAD "  %a = mo.chain.create() : " CH "\n" STORE("%a1", "%a") STORE("%a2", "%a")
               "  mo.output %x : " T("4") "\n}\n",
          "bad.mlir:4:3", "chain %a is used a second time (first by mo.mutable.store at 3:3)");
}

Test(buffers, buffers_and_chains_go_only_where_they_belong) {
  refused(HEAD "  %y = mo.add(%buf, %x) : " T("4") "\n  mo.output %y : " T("4") "\n}\n",
          "bad.mlir:2:", "is a !mo.buffer: load it into a tensor with mo.mutable.load first");
  refused("mo.graph @bad(%buf: " B("4") ") -> (" B("4") ") {\n  mo.output %buf : " B("4")
          "\n}\n",
          "bad.mlir:2:3", "is a !mo.buffer: a buffer is changed in place, not returned");
  refused("mo.graph @bad(%c: " CH ", %x: " T("4") ") -> (" T("4") ") {\n  mo.output %x : " T("4")
          "\n}\n",
          "input 0 (%c) is a !mo.chain", "mo.chain.create");
  refused(HEAD "  %a = mo.chain.create() : " CH "\n"
               "  %a1 = mo.mutable.store(%x, %x, %a) : (" T("4") ", " T("4") ", " CH ") -> " CH
               "\n  mo.output %x : " T("4") "\n}\n",
          "bad.mlir:3:", "operand 0 of mo.mutable.store (%x, the buffer) must be a !mo.buffer");
  refused(HEAD "  %a = mo.chain.create() : " CH "\n"
               "  %y = mo.cast(%x) {dtype = f64} : !mo.tensor<[4], f64>\n"
               "  %a1 = mo.mutable.store(%buf, %y, %a) : (" B("4") ", !mo.tensor<[4], f64>, "
               CH ") -> " CH "\n  mo.output %x : " T("4") "\n}\n",
          "bad.mlir:4:", "the stored tensor is f64 but the buffer is f32");
  refused(HEAD "  %a = mo.chain.create() : " CH "\n"
               "  %s = mo.constant {value = #M.dense_array<0, 0> : tensor<2xsi64>} : "
               "!mo.tensor<[2], si64>\n"
               "  %a1 = mo.mutable.store.slice(%buf, %x, %s, %a) : (" B("4") ", " T("4")
               ", !mo.tensor<[2], si64>, " CH ") -> " CH "\n  mo.output %x : " T("4") "\n}\n",
          "bad.mlir:4:", "2 start indices for a buffer of rank 1");
  refused(HEAD "  %b = mo.buffer.create() : " T("4") "\n  mo.output %x : " T("4") "\n}\n",
          "bad.mlir:2:", "needs a declared !mo.buffer result type");
}
