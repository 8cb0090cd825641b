/* test_simt_ops.c - the SIMT lowering of graph ops (jit/simt_lower.c) on
 * simt-emu against the reference interpreter: every node of a graph becomes
 * one SIMT kernel, launched with jit_simt_geometry's grid on the emulator,
 * node after node; the graph's outputs must equal the interpreter's (ints
 * and bools exactly, floats within a small tolerance: reductions combine in
 * a tree). Sizes are odd and larger than a block where it matters (rows of
 * 1000, reductions of 300), dims are symbolic. Kernels of ops that need no
 * device math library are also emitted for sm_80 (assembled by ptxas when it
 * is on PATH) and gfx90a. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "ir/parse.h"
#include "jit/jit.h"
#include "jit/simt.h"
#include "jit/simt_abi.h"
#include "kiln/kiln.h"
#include "src/device.h"
#include "src/simt_mathlib.h"
#include "support/note.h"
#include "support/simt_check.h"

#define T(dims, dt) "!mo.tensor<[" dims "], " dt ">"

/* Whether t's device math library (libdevice, ocml) is on this host. */
static bool mathlib_present(const jit_simt_target *t) {
  char buf[4096];
  const char *path = rt_simt_mathlib_path(t, buf, sizeof buf);
  return path && access(path, R_OK) == 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
/* ui8 (GGUF blocks here): bytes in [0, 40], so every f16 scale in them is
 * small (exponent field <= 10) and the sums stay finite. */
static void fill(ir_tensor *t) {
  if (t->dtype != IR_DT_UI8) {
    simt_fill(t, &rng, 6, 5);
    return;
  }
  for (int64_t i = 0; i < ir_tensor_numel(t); i++)
    ((uint8_t *)t->data)[i] = (uint8_t)(simt_urand(&rng) * 41);
}
static bool close_enough(ir_dtype dt, const void *got, const void *want, int64_t i) {
  return simt_close(dt, got, want, i, 2e-5);
}

typedef struct emu_run {
  jit_engine *e;
  kiln_device *dev;
  kiln_status *st;
} emu_run;

/* Run graph text on simt-emu with symbol values syms (graph order) and
 * compare with the interpreter. gpu: also emit for sm_80 and gfx90a. */
/* specialized: every node's kernel is compiled with all symbols bound
 * (jit_simt_compile_graph with the binding: no symbol parameters). */
typedef ir_graph *(*parse_fn)(const char *text, size_t len, ir_diag *d);

static void check_variant(const char *text, const int64_t *syms, bool gpu, bool specialized,
                          parse_fn parse) {
  ir_diag d = {0};
  ir_graph *g = parse(text, strlen(text), &d);
  cr_assert_not_null(g, "parse: %s\n%s", d.msg, text);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "verify: %s", d.msg);
  char msg[1024] = "";
  void **data = calloc((size_t)g->nvalues, sizeof *data);
  ir_tensor *ins = calloc((size_t)g->ninputs + 1, sizeof *ins);
  ir_tensor *want = calloc((size_t)g->noutputs + 1, sizeof *want);
  cr_assert(data && ins && want);
  for (int i = 0; i < g->ninputs; i++) {
    const ir_type *ty = &g->inputs[i]->type;
    ins[i].dtype = ty->dtype;
    ins[i].rank = ty->rank;
    cr_assert_eq(ir_eval_shape(ty, syms, ins[i].shape, msg, sizeof msg), 0, "%s", msg);
    ins[i].data = data[g->inputs[i]->id] =
        malloc((size_t)ir_tensor_numel(&ins[i]) * ir_dtype_size(ty->dtype) + 1);
    fill(&ins[i]);
  }
  cr_assert_eq(ir_interp_run(g, ins, NULL, NULL, want, msg, sizeof msg), 0, "interp: %s", msg);

  emu_run er = {0};
  char err[2048] = "";
  er.e = jit_engine_new(err, sizeof err);
  cr_assert_not_null(er.e, "%s", err);
  er.st = kiln_status_new();
  er.dev = kiln_device_open("simt-emu", er.st);
  cr_assert_not_null(er.dev);
  jit_simt_target emu = {0}, ptx = {.math = &rt_simt_math}, amd = {.math = &rt_simt_math};
  jit_simt_target_parse("simt-emu", &emu, err, sizeof err);
  jit_simt_target_parse("sm_80", &ptx, err, sizeof err);
  jit_simt_target_parse("gfx90a", &amd, err, sizeof err);

  for (int ni = 0; ni < g->nnodes; ni++) {
    const ir_node *n = g->nodes[ni];
    for (int j = 0; j < n->nout; j++) {
      ir_tensor o = {.dtype = n->out[j]->type.dtype, .rank = n->out[j]->type.rank};
      cr_assert_eq(ir_eval_shape(&n->out[j]->type, syms, o.shape, msg, sizeof msg), 0);
      data[n->out[j]->id] = calloc((size_t)ir_tensor_numel(&o) * ir_dtype_size(o.dtype) + 1, 1);
    }
    char name[32];
    snprintf(name, sizeof name, "node%d", ni);
    size_t len = 0;
    void *obj = NULL;
    if (specialized) {
      jit_simt_kernel_name(g, ni, name, sizeof name);
      if (jit_simt_compile_graph(g, &emu, syms, NULL, ni, false, &obj, &len, err, sizeof err) < 0)
        obj = NULL;
    } else {
      obj = simt_emit_node(g, n, &emu, name, &len, err, sizeof err);
    }
    cr_assert_not_null(obj, "mo.%s: %s", ir_op_get(n->op)->name, err);
    jit_kernel_fn fn = NULL;
    jit_code *code = jit_load_object(er.e, obj, len, name, &fn, err, sizeof err);
    free(obj);
    cr_assert_not_null(code, "%s", err);
    jit_simt_dims dims;
    cr_assert_eq(jit_simt_geometry(n, syms, &dims, err, sizeof err), 0, "%s", err);
    int nks = specialized ? 0 : g->nsyms;
    int np = n->nin + n->nout + nks + 1;
    void **params = calloc((size_t)np, sizeof *params);
    void **bufs = calloc((size_t)(n->nin + n->nout), sizeof *bufs);
    int64_t *symv = calloc((size_t)g->nsyms + 1, sizeof *symv);
    int32_t errword = 0, *errp = &errword;
    cr_assert(params && bufs && symv);
    int k = 0;
    for (int j = 0; j < n->nin; j++) bufs[k++] = data[n->in[j]->id];
    for (int j = 0; j < n->nout; j++) bufs[k++] = data[n->out[j]->id];
    for (int j = 0; j < k; j++) params[j] = &bufs[j];
    for (int s = 0; s < nks; s++) {
      symv[s] = syms[s];
      params[k + s] = &symv[s];
    }
    params[k + nks] = &errp;
    if (dims.grid[0] && dims.grid[1] && dims.grid[2]) {
      rt_launch_dims ld = {{dims.grid[0], dims.grid[1], dims.grid[2]},
                           {dims.block[0], dims.block[1], dims.block[2]},
                           dims.shared_bytes};
      cr_assert_eq(rt_device_launch(er.dev, (void *)(uintptr_t)fn, &ld, params, er.st), 0,
                   "mo.%s: %s", ir_op_get(n->op)->name, kiln_status_message(er.st));
    }
    cr_expect_eq(errword, 0, "mo.%s reported error %d", ir_op_get(n->op)->name, errword);
    jit_code_free(er.e, code);
    free(params);
    free(bufs);
    free(symv);

    if (gpu && !specialized) {
      void *p = simt_emit_node(g, n, &ptx, name, &len, err, sizeof err);
      cr_expect_not_null(p, "sm_80 mo.%s: %s", ir_op_get(n->op)->name, err);
      char what[64];
      snprintf(what, sizeof what, "mo.%s", ir_op_get(n->op)->name);
      simt_expect_ptxas(p, len, what);
      free(p);
      p = simt_emit_node(g, n, &amd, name, &len, err, sizeof err);
      if (!p && !mathlib_present(&amd)) /* a host without ROCm's device libraries */
        test_note("skipped: gfx90a mo.%s: %s", ir_op_get(n->op)->name, err);
      else
        cr_expect_not_null(p, "gfx90a mo.%s: %s", ir_op_get(n->op)->name, err);
      free(p);
    }
  }

  for (int i = 0; i < g->noutputs; i++) {
    const void *got = data[g->outputs[i]->id];
    int64_t cnt = ir_tensor_numel(&want[i]);
    int bad = 0;
    for (int64_t e = 0; e < cnt && bad < 5; e++)
      if (!close_enough(want[i].dtype, got, want[i].data, e)) {
        bad++;
        cr_expect_fail("output %d element %lld differs (%s)\n%s", i, (long long)e,
                       ir_dtype_name(want[i].dtype), text);
      }
    free(want[i].data);
  }
  for (int v = 0; v < g->nvalues; v++) free(data[v]);
  free(data);
  free(ins);
  free(want);
  jit_engine_free(er.e);
  kiln_device_close(er.dev);
  kiln_status_free(er.st);
  ir_graph_free(g);
}

static void check(const char *text, const int64_t *syms, bool gpu) {
  check_variant(text, syms, gpu, false, ir_parse);
  check_variant(text, syms, false, true, ir_parse);
}

/* The same for a graph that carries the runtime's kiln.* facts, which only
 * the kernel-text entry reads (user text cannot set them). */
static void check_stamped(const char *text, const int64_t *syms, bool gpu) {
  check_variant(text, syms, gpu, false, ir_parse_kernel_text);
  check_variant(text, syms, false, true, ir_parse_kernel_text);
}

Test(simt_ops, elementwise_broadcast) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 5", "f32") ", %b: " T("5", "f32") ", %c: " T("n, 1", "f32")
      ", %m: " T("n, 5", "bool") ") -> (" T("n, 5", "f32") ", " T("n, 5", "si32") ", " T("n, 5", "bool") ") {\n"
      "  %0 = mo.add(%x, %b) : (" T("n, 5", "f32") ", " T("5", "f32") ") -> " T("n, 5", "f32") "\n"
      "  %1 = mo.mul(%0, %c) : (" T("n, 5", "f32") ", " T("n, 1", "f32") ") -> " T("n, 5", "f32") "\n"
      "  %2 = mo.where(%m, %1, %x) : (" T("n, 5", "bool") ", " T("n, 5", "f32") ", " T("n, 5", "f32") ") -> " T("n, 5", "f32") "\n"
      "  %3 = mo.relu(%2) : " T("n, 5", "f32") "\n"
      "  %4 = mo.cast(%1) {dtype = si32} : (" T("n, 5", "f32") ") -> " T("n, 5", "si32") "\n"
      "  %5 = mo.greater(%x, %1) : (" T("n, 5", "f32") ", " T("n, 5", "f32") ") -> " T("n, 5", "bool") "\n"
      "  mo.output %3, %4, %5 : " T("n, 5", "f32") ", " T("n, 5", "si32") ", " T("n, 5", "bool") "\n}\n";
  int64_t n[] = {37};
  check(text, n, true);
  int64_t n2[] = {300};
  check(text, n2, false);
}

Test(simt_ops, elementwise_math_on_emu) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n", "f64") ") -> (" T("n", "f64") ") {\n"
      "  %0 = mo.sigmoid(%x) : " T("n", "f64") "\n"
      "  %1 = mo.tanh(%0) : " T("n", "f64") "\n"
      "  %2 = mo.gelu(%1) : " T("n", "f64") "\n"
      "  mo.output %2 : " T("n", "f64") "\n}\n";
  int64_t n[] = {1000};
  check(text, n, false);
}

Test(simt_ops, reductions) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 7", "f32") ", %i: " T("n, 7", "si32") ") -> ("
      T("1, 7", "f32") ", " T("n, 1", "f32") ", " T("1, 7", "f32") ", " T("n, 1", "si32") ", "
      T("1, 7", "si64") ", " T("n, 1", "si64") ", " T("1, 7", "si32") ") {\n"
      "  %0 = mo.sum(%x) {axis = 0} : (" T("n, 7", "f32") ") -> " T("1, 7", "f32") "\n"
      "  %1 = mo.max(%x) {axis = -1} : (" T("n, 7", "f32") ") -> " T("n, 1", "f32") "\n"
      "  %2 = mo.mean(%x) {axis = 0} : (" T("n, 7", "f32") ") -> " T("1, 7", "f32") "\n"
      "  %3 = mo.min(%i) {axis = 1} : (" T("n, 7", "si32") ") -> " T("n, 1", "si32") "\n"
      "  %4 = mo.argmax(%i) {axis = 0} : (" T("n, 7", "si32") ") -> " T("1, 7", "si64") "\n"
      "  %5 = mo.argmin(%x) {axis = 1} : (" T("n, 7", "f32") ") -> " T("n, 1", "si64") "\n"
      "  %6 = mo.sum(%i) {axis = 0} : (" T("n, 7", "si32") ") -> " T("1, 7", "si32") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5, %6 : " T("1, 7", "f32") ", " T("n, 1", "f32") ", "
      T("1, 7", "f32") ", " T("n, 1", "si32") ", " T("1, 7", "si64") ", " T("n, 1", "si64") ", "
      T("1, 7", "si32") "\n}\n";
  int64_t n[] = {300};
  check(text, n, true);
  int64_t n1[] = {1};
  check(text, n1, false);
}

Test(simt_ops, softmax_and_layer_norm) {
  const char *text =
      "mo.graph @g<r, c>(%x: " T("r, c", "f32") ", %gm: " T("c", "f32") ", %bt: " T("c", "f32") ") -> ("
      T("r, c", "f32") ", " T("r, c", "f32") ", " T("r, c", "f32") ") {\n"
      "  %0 = mo.softmax(%x) : " T("r, c", "f32") "\n"
      "  %1 = mo.logsoftmax(%x) {axis = 0} : " T("r, c", "f32") "\n"
      "  %2 = mo.layer_norm(%x, %gm, %bt) {epsilon = 0.001} : (" T("r, c", "f32") ", " T("c", "f32")
      ", " T("c", "f32") ") -> " T("r, c", "f32") "\n"
      "  mo.output %0, %1, %2 : " T("r, c", "f32") ", " T("r, c", "f32") ", " T("r, c", "f32") "\n}\n";
  int64_t s[] = {5, 1000};
  check(text, s, false);
  int64_t s2[] = {3, 7};
  check(text, s2, false);
}

Test(simt_ops, matmul_tiles) {
  const char *text =
      "mo.graph @g<m, k>(%a: " T("2, 3, m, k", "f32") ", %b: " T("k, 23", "f32") ", %p: "
      T("m, k", "f64") ", %q: " T("k, 9", "f64") ") -> (" T("2, 3, m, 23", "f32") ", " T("m, 9", "f64") ") {\n"
      "  %0 = mo.matmul(%a, %b) : (" T("2, 3, m, k", "f32") ", " T("k, 23", "f32") ") -> " T("2, 3, m, 23", "f32") "\n"
      "  %1 = mo.matmul(%p, %q) : (" T("m, k", "f64") ", " T("k, 9", "f64") ") -> " T("m, 9", "f64") "\n"
      "  mo.output %0, %1 : " T("2, 3, m, 23", "f32") ", " T("m, 9", "f64") "\n}\n";
  int64_t s[] = {37, 19};
  check(text, s, true);
  int64_t s0[] = {5, 0}; /* K = 0: zeros */
  check(text, s0, false);
}

/* kiln.transpose_b (ir/fold_transpose.c): operand 1 read as [..., N, K],
 * batched and broadcast, against the interpreter (which reads it so too). */
Test(simt_ops, matmul_transposed_b) {
  const char *text =
      "mo.graph @g<m, k>(%a: " T("3, m, k", "f32") ", %b: " T("3, 21, k", "f32") ", %p: "
      T("m, k", "f64") ", %q: " T("9, k", "f64") ") -> (" T("3, m, 21", "f32") ", " T("m, 9", "f64") ") {\n"
      "  %0 = mo.matmul(%a, %b) {kiln.transpose_b = 1} : (" T("3, m, k", "f32") ", " T("3, 21, k", "f32") ") -> " T("3, m, 21", "f32") "\n"
      "  %1 = mo.matmul(%p, %q) {kiln.transpose_b = 1} : (" T("m, k", "f64") ", " T("9, k", "f64") ") -> " T("m, 9", "f64") "\n"
      "  mo.output %0, %1 : " T("3, m, 21", "f32") ", " T("m, 9", "f64") "\n}\n";
  int64_t s[] = {37, 19};
  check_stamped(text, s, true);
}

Test(simt_ops, data_movement) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 5, 7", "f32") ", %y: " T("n, 2", "si64") ", %z: " T("n, 3", "si64")
      ", %idx: " T("4", "si64") ") -> (" T("7, 5, n", "f32") ", " T("5, 7, n", "f32") ", " T("n, 5", "si64")
      ", " T("n, 1", "si64") ", " T("n, 4", "si64") ", " T("n, 35", "f32") ") {\n"
      "  %0 = mo.transpose(%x) {axis_1 = 0, axis_2 = 2} : (" T("n, 5, 7", "f32") ") -> " T("7, 5, n", "f32") "\n"
      "  %1 = mo.permute(%x) {dims = [1, 2, 0]} : (" T("n, 5, 7", "f32") ") -> " T("5, 7, n", "f32") "\n"
      "  %2 = mo.concat(%y, %z) {axis = 1} : (" T("n, 2", "si64") ", " T("n, 3", "si64") ") -> " T("n, 5", "si64") "\n"
      "  %3, %4 = mo.split(%2) {split_sizes = [1, 4], axis = 1} : (" T("n, 5", "si64") ") -> (" T("n, 1", "si64") ", " T("n, 4", "si64") ")\n"
      "  %5 = mo.reshape(%x) : (" T("n, 5, 7", "f32") ") -> " T("n, 35", "f32") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5 : " T("7, 5, n", "f32") ", " T("5, 7, n", "f32") ", " T("n, 5", "si64")
      ", " T("n, 1", "si64") ", " T("n, 4", "si64") ", " T("n, 35", "f32") "\n}\n";
  int64_t n[] = {11};
  check(text, n, true);
}

Test(simt_ops, slice_tensor_forward_and_backward) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 9", "f32") ", %i: " T("n, 5, 2", "si32") ") -> (" T("n, 3", "f32") ", "
      T("n, 4", "f32") ", " T("n, 2, 1", "si32") ") {\n"
      "  %a = mo.slice_tensor(%x) {start = [0, 1], stop = [9223372036854775807, 8], step = [1, 3]} : ("
      T("n, 9", "f32") ") -> " T("n, 3", "f32") "\n"
      "  %b = mo.slice_tensor(%x) {start = [-9223372036854775808, -2], stop = [9223372036854775807, 0], "
      "step = [1, -2]} : (" T("n, 9", "f32") ") -> " T("n, 4", "f32") "\n"
      "  %c = mo.slice_tensor(%i) {start = [0, 4, 1], stop = [9223372036854775807, 0, 2], step = [1, -3, 1]} : ("
      T("n, 5, 2", "si32") ") -> " T("n, 2, 1", "si32") "\n"
      "  mo.output %a, %b, %c : " T("n, 3", "f32") ", " T("n, 4", "f32") ", " T("n, 2, 1", "si32") "\n}\n";
  int64_t n[] = {37};
  check(text, n, true);
  int64_t n0[] = {0}; /* empty */
  check(text, n0, false);
}

Test(simt_ops, gather_and_its_index_error) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 6", "f32") ", %idx: " T("3, 2", "si64") ") -> (" T("n, 3, 2", "f32") ") {\n"
      "  %0 = mo.gather(%x, %idx) {axis = 1} : (" T("n, 6", "f32") ", " T("3, 2", "si64") ") -> " T("n, 3, 2", "f32") "\n"
      "  mo.output %0 : " T("n, 3, 2", "f32") "\n}\n";
  int64_t n[] = {9}; /* the generator's indices lie in [-2, 2]: in range, negatives wrap */
  check(text, n, true);
}

/* issue 17's elementwise ops: inverse trigonometric (through the device
 * math library on sm_80 / gfx90a), ceil, float floor_div. */
Test(simt_ops, new_float_elementwise) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n", "f64") ", %y: " T("n", "f32") ") -> (" T("n", "f64") ", " T("n", "f64")
      ", " T("n", "f32") ", " T("n", "f32") ", " T("n", "f32") ", " T("n", "f64") ") {\n"
      "  %0 = mo.acos(%x) : " T("n", "f64") "\n"
      "  %1 = mo.asin(%x) : " T("n", "f64") "\n"
      "  %2 = mo.atan(%y) : " T("n", "f32") "\n"
      "  %3 = mo.atanh(%y) : " T("n", "f32") "\n"
      "  %4 = mo.ceil(%y) : " T("n", "f32") "\n"
      "  %5 = mo.floor_div(%x, %0) : (" T("n", "f64") ", " T("n", "f64") ") -> " T("n", "f64") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5 : " T("n", "f64") ", " T("n", "f64") ", " T("n", "f32")
      ", " T("n", "f32") ", " T("n", "f32") ", " T("n", "f64") "\n}\n";
  int64_t n[] = {300};
  check(text, n, true);
}

/* integer floor_div and pow (divisors and bases kept nonzero: 1 + |j|,
 * negated where m), and div of ints into f64 */
Test(simt_ops, new_int_elementwise) {
  const char *text =
      "mo.graph @g<n>(%i: " T("n, 3", "si32") ", %j: " T("n, 3", "si32") ", %m: " T("n, 3", "bool")
      ", %x: " T("n, 3", "f32") ") -> (" T("n, 3", "si32") ", " T("n, 3", "si32") ", " T("n, 3", "f64") ") {\n"
      "  %t = mo.is_nan(%x) : (" T("n, 3", "f32") ") -> " T("n, 3", "bool") "\n"
      "  %u = mo.logical_not(%t) : " T("n, 3", "bool") "\n"
      "  %one = mo.cast(%u) {dtype = si32} : (" T("n, 3", "bool") ") -> " T("n, 3", "si32") "\n"
      "  %a = mo.abs(%j) : " T("n, 3", "si32") "\n"
      "  %p = mo.add(%a, %one) : (" T("n, 3", "si32") ", " T("n, 3", "si32") ") -> " T("n, 3", "si32") "\n"
      "  %q = mo.negate(%p) : " T("n, 3", "si32") "\n"
      "  %d = mo.where(%m, %p, %q) : (" T("n, 3", "bool") ", " T("n, 3", "si32") ", " T("n, 3", "si32") ") -> " T("n, 3", "si32") "\n"
      "  %0 = mo.floor_div(%i, %d) : (" T("n, 3", "si32") ", " T("n, 3", "si32") ") -> " T("n, 3", "si32") "\n"
      "  %1 = mo.pow(%d, %i) : (" T("n, 3", "si32") ", " T("n, 3", "si32") ") -> " T("n, 3", "si32") "\n"
      "  %2 = mo.div(%i, %j) : (" T("n, 3", "si32") ", " T("n, 3", "si32") ") -> " T("n, 3", "f64") "\n"
      "  mo.output %0, %1, %2 : " T("n, 3", "si32") ", " T("n, 3", "si32") ", " T("n, 3", "f64") "\n}\n";
  int64_t n[] = {111};
  check(text, n, true);
}

/* mo.prod on rows, and mo.cumsum (one thread per line) along a leading and
 * a trailing axis, every mode, more lines than a block */
Test(simt_ops, prod_and_cumsum) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 7", "f32") ", %i: " T("n, 7", "si64") ") -> ("
      T("1, 7", "f32") ", " T("n, 1", "si64") ", " T("n, 7", "f32") ", " T("n, 7", "f32") ", "
      T("n, 7", "si64") ", " T("n, 7", "si64") ") {\n"
      "  %0 = mo.prod(%x) {axis = 0} : (" T("n, 7", "f32") ") -> " T("1, 7", "f32") "\n"
      "  %1 = mo.prod(%i) {axis = 1} : (" T("n, 7", "si64") ") -> " T("n, 1", "si64") "\n"
      "  %2 = mo.cumsum(%x) {axis = 0} : " T("n, 7", "f32") "\n"
      "  %3 = mo.cumsum(%x) {exclusive = true, reverse = true} : " T("n, 7", "f32") "\n"
      "  %4 = mo.cumsum(%i) {axis = 0, reverse = true} : " T("n, 7", "si64") "\n"
      "  %5 = mo.cumsum(%i) {axis = 1, exclusive = true} : " T("n, 7", "si64") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5 : " T("1, 7", "f32") ", " T("n, 1", "si64") ", "
      T("n, 7", "f32") ", " T("n, 7", "f32") ", " T("n, 7", "si64") ", " T("n, 7", "si64") "\n}\n";
  int64_t n[] = {40};
  check(text, n, true);
  int64_t n0[] = {0};
  check(text, n0, false);
  int64_t n1[] = {300};
  check(text, n1, false);
}

/* mo.irfft, one thread per result element: a symbolic number of lines, odd
 * and power-of-two n, padded and truncated, complex input, every
 * normalization, along the last and a leading axis */
Test(simt_ops, irfft) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 9", "f32") ", %c: " T("5, n, 2", "f64") ") -> ("
      T("n, 16", "f32") ", " T("n, 7", "f32") ", " T("8, n", "f64") ", " T("5, 3", "f64") ") {\n"
      "  %0 = mo.irfft(%x) {n = 16} : (" T("n, 9", "f32") ") -> " T("n, 16", "f32") "\n"
      "  %1 = mo.irfft(%x) {n = 7, normalization = \"ortho\"} : (" T("n, 9", "f32") ") -> "
      T("n, 7", "f32") "\n"
      "  %2 = mo.irfft(%c) {axis = 0, input_is_complex = true, normalization = \"forward\"} : ("
      T("5, n, 2", "f64") ") -> " T("8, n", "f64") "\n"
      "  %3 = mo.irfft(%c) {n = 3, input_is_complex = true} : (" T("5, n, 2", "f64") ") -> "
      T("5, 3", "f64") "\n"
      "  mo.output %0, %1, %2, %3 : " T("n, 16", "f32") ", " T("n, 7", "f32") ", " T("8, n", "f64")
      ", " T("5, 3", "f64") "\n}\n";
  int64_t n[] = {300};
  check(text, n, true);
  int64_t n1[] = {1};
  check(text, n1, false);
}

/* argmax / argmin as numpy on the row tree: ties (floor) go to the first
 * index, the first NaN (log of a negative) wins, across 128 threads a row */
Test(simt_ops, argmax_argmin_ties_and_nan) {
  const char *text =
      "mo.graph @g<n>(%x: " T("4, n", "f32") ") -> (" T("4, 1", "si64") ", " T("4, 1", "si64") ", "
      T("4, 1", "si64") ", " T("4, 1", "si64") ") {\n"
      "  %f = mo.floor(%x) : " T("4, n", "f32") "\n"
      "  %l = mo.log(%x) : " T("4, n", "f32") "\n"
      "  %0 = mo.argmax(%f) : (" T("4, n", "f32") ") -> " T("4, 1", "si64") "\n"
      "  %1 = mo.argmin(%f) : (" T("4, n", "f32") ") -> " T("4, 1", "si64") "\n"
      "  %2 = mo.argmax(%l) : (" T("4, n", "f32") ") -> " T("4, 1", "si64") "\n"
      "  %3 = mo.argmin(%l) : (" T("4, n", "f32") ") -> " T("4, 1", "si64") "\n"
      "  mo.output %0, %1, %2, %3 : " T("4, 1", "si64") ", " T("4, 1", "si64") ", "
      T("4, 1", "si64") ", " T("4, 1", "si64") "\n}\n";
  int64_t n[] = {500};
  check(text, n, true);
}

Test(simt_ops, band_part) {
  const char *text =
      "mo.graph @g<n>(%x: " T("3, n, 9", "f32") ", %b: " T("n, 9", "bool") ") -> (" T("3, n, 9", "f32")
      ", " T("n, 9", "bool") ") {\n"
      "  %0 = mo.band_part(%x) {num_lower = 2, num_upper = 1} : " T("3, n, 9", "f32") "\n"
      "  %1 = mo.band_part(%b) {num_upper = 0, exclude = true} : " T("n, 9", "bool") "\n"
      "  mo.output %0, %1 : " T("3, n, 9", "f32") ", " T("n, 9", "bool") "\n}\n";
  int64_t n[] = {37};
  check(text, n, true);
  int64_t n0[] = {0};
  check(text, n0, false);
}

/* top_k / bottom_k (values and indices, two results) and argsort, one
 * thread per line, along the last and a leading axis; small integers make
 * ties, which keep the lower index first */
Test(simt_ops, top_k_bottom_k_argsort) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 37", "f32") ", %i: " T("n, 6", "si32") ") -> (" T("n, 5", "f32")
      ", " T("n, 5", "si64") ", " T("2, 6", "si32") ", " T("2, 6", "si64") ", " T("n, 37", "si64")
      ", " T("n, 6", "si64") ") {\n"
      "  %v, %vi = mo.top_k(%x) {k = 5} : (" T("n, 37", "f32") ") -> (" T("n, 5", "f32") ", "
      T("n, 5", "si64") ")\n"
      "  %b, %bi = mo.bottom_k(%i) {axis = 0, k = 2} : (" T("n, 6", "si32") ") -> (" T("2, 6", "si32")
      ", " T("2, 6", "si64") ")\n"
      "  %a = mo.argsort(%x) {axis = 1, ascending = false} : (" T("n, 37", "f32") ") -> " T("n, 37", "si64") "\n"
      "  %c = mo.argsort(%i) {axis = 1} : (" T("n, 6", "si32") ") -> " T("n, 6", "si64") "\n"
      "  mo.output %v, %vi, %b, %bi, %a, %c : " T("n, 5", "f32") ", " T("n, 5", "si64") ", "
      T("2, 6", "si32") ", " T("2, 6", "si64") ", " T("n, 37", "si64") ", " T("n, 6", "si64") "\n}\n";
  int64_t n[] = {300};
  check(text, n, true);
  int64_t n2[] = {2};
  check(text, n2, false);
}

/* Indices are drawn in [-2, 2] (fill), so every indexed axis here has at
 * least 3 elements: negative indices wrap, repeats occur (scatter applies
 * them in order, in one thread). */
Test(simt_ops, indexing) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 5", "f32") ", %i: " T("n, 3", "si64") ", %u: " T("n, 3", "f32")
      ", %j: " T("4, 2", "si32") ", %v: " T("4, 5", "f32") ", %k: " T("4, 1", "si64")
      ", %b: " T("n, 5", "si32") ") -> (" T("n, 3", "f32") ", " T("n, 5", "f32") ", " T("4", "f32") ", "
      T("n, 5", "f32") ", " T("n, 5", "f32") ", " T("3 * n, 10", "si32") ", " T("n, 5", "si32") ") {\n"
      "  %0 = mo.gather_elements(%x, %i) {axis = 1} : (" T("n, 5", "f32") ", " T("n, 3", "si64") ") -> " T("n, 3", "f32") "\n"
      "  %1 = mo.scatter_add(%x, %u, %i) {axis = 1} : (" T("n, 5", "f32") ", " T("n, 3", "f32") ", " T("n, 3", "si64") ") -> " T("n, 5", "f32") "\n"
      "  %2 = mo.gather_nd(%v, %j) : (" T("4, 5", "f32") ", " T("4, 2", "si32") ") -> " T("4", "f32") "\n"
      "  %3 = mo.scatter_nd(%x, %v, %k) : (" T("n, 5", "f32") ", " T("4, 5", "f32") ", " T("4, 1", "si64") ") -> " T("n, 5", "f32") "\n"
      "  %4 = mo.scatter(%x, %u, %i) {axis = 1} : (" T("n, 5", "f32") ", " T("n, 3", "f32") ", " T("n, 3", "si64") ") -> " T("n, 5", "f32") "\n"
      "  %5 = mo.tile(%b) {repeats = [3, 2]} : (" T("n, 5", "si32") ") -> " T("3 * n, 10", "si32") "\n"
      "  %6 = mo.scatter_max(%b, %b, %b) {axis = 0} : (" T("n, 5", "si32") ", " T("n, 5", "si32") ", " T("n, 5", "si32") ") -> " T("n, 5", "si32") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5, %6 : " T("n, 3", "f32") ", " T("n, 5", "f32") ", " T("4", "f32") ", "
      T("n, 5", "f32") ", " T("n, 5", "f32") ", " T("3 * n, 10", "si32") ", " T("n, 5", "si32") "\n}\n";
  int64_t n[] = {37};
  check(text, n, true);
}

/* fold: overlapping taps (stride below the kernel), gaps (stride above
 * it), dilation and padding, a symbolic batch */
Test(simt_ops, fold) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 18, 16", "f32") ", %i: " T("n, 2, 9", "si32") ") -> ("
      T("n, 2, 7, 7", "f32") ", " T("n, 2, 7, 7", "si32") ") {\n"
      "  %0 = mo.fold(%x) {kernel_size = [3, 3], output_size = [7, 7], padding = [1], stride = [2]} : ("
      T("n, 18, 16", "f32") ") -> " T("n, 2, 7, 7", "f32") "\n"
      "  %1 = mo.fold(%i) {dilation = [2], kernel_size = [1, 1], output_size = [7, 7], stride = [3]} : ("
      T("n, 2, 9", "si32") ") -> " T("n, 2, 7, 7", "si32") "\n"
      "  mo.output %0, %1 : " T("n, 2, 7, 7", "f32") ", " T("n, 2, 7, 7", "si32") "\n}\n";
  int64_t n[] = {3};
  check(text, n, true);
}

/* roi_align: both modes, aligned or not, fixed and adaptive grids. The
 * regions are a sigmoid of the drawn values (batch index 0, corners in
 * (0, 1), some inverted); test_ops_roi covers wider regions on the
 * emulator through the oracle. */
Test(simt_ops, roi_align) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 6, 7, 3", "f32") ", %q: " T("3, 5", "f32") ", %d: "
      T("n, 5, 4, 2", "f64") ", %p: " T("3, 5", "f64") ") -> (" T("3, 2, 3, 3", "f32") ", "
      T("3, 3, 2, 2", "f64") ") {\n"
      "  %r = mo.sigmoid(%q) : " T("3, 5", "f32") "\n"
      "  %s = mo.sigmoid(%p) : " T("3, 5", "f64") "\n"
      "  %0 = mo.roi_align(%x, %r) {output_height = 2, output_width = 3, spatial_scale = 4.0} : ("
      T("n, 6, 7, 3", "f32") ", " T("3, 5", "f32") ") -> " T("3, 2, 3, 3", "f32") "\n"
      "  %1 = mo.roi_align(%d, %s) {aligned = true, mode = \"max\", output_height = 3, "
      "output_width = 2, sampling_ratio = 2, spatial_scale = 3.0} : (" T("n, 5, 4, 2", "f64") ", "
      T("3, 5", "f64") ") -> " T("3, 3, 2, 2", "f64") "\n"
      "  mo.output %0, %1 : " T("3, 2, 3, 3", "f32") ", " T("3, 3, 2, 2", "f64") "\n}\n";
  int64_t n[] = {2};
  check(text, n, true);
}

/* random numbers: uniform bit for bit, normal through the device's log,
 * sqrt and cos (the emulator's are the host's) */
Test(simt_ops, random) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 3", "f32") ") -> (" T("n, 3", "f32") ", " T("n, 3", "f32") ", "
      T("2, n", "f64") ", " T("n, 5", "f64") ") {\n"
      "  %0 = mo.abs(%x) : " T("n, 3", "f32") "\n"
      "  %1 = mo.random.uniform() {high = 2.0, low = -1.0, seed = 3} : () -> " T("n, 3", "f32") "\n"
      "  %2 = mo.random.uniform() {seed = -9} : () -> " T("2, n", "f64") "\n"
      "  %3 = mo.random.normal() {mean = 1.0, std = 3.0} : () -> " T("n, 5", "f64") "\n"
      "  mo.output %0, %1, %2, %3 : " T("n, 3", "f32") ", " T("n, 3", "f32") ", " T("2, n", "f64")
      ", " T("n, 5", "f64") "\n}\n";
  int64_t n[] = {300};
  check(text, n, true);
}

/* print on a device copies its operand (any dtype, bytes) and prints
 * nothing */
Test(simt_ops, print_passes_through) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 3", "f32") ", %b: " T("n, 5", "bool") ", %i: " T("7", "si64")
      ") -> (" T("n, 3", "f32") ", " T("n, 5", "bool") ", " T("7", "si64") ") {\n"
      "  %0 = mo.print(%x) {label = \"x\"} : (" T("n, 3", "f32") ") -> " T("n, 3", "f32") "\n"
      "  %1 = mo.print(%b) : (" T("n, 5", "bool") ") -> " T("n, 5", "bool") "\n"
      "  %2 = mo.print(%i) : (" T("7", "si64") ") -> " T("7", "si64") "\n"
      "  mo.output %0, %1, %2 : " T("n, 3", "f32") ", " T("n, 5", "bool") ", " T("7", "si64")
      "\n}\n";
  int64_t n[] = {41};
  check(text, n, true);
}

/* masked_scatter runs serially in one thread (a broadcast mask, updates as
 * many as the input's elements); shape_to_tensor writes the run-time dims */
Test(simt_ops, masked_scatter_and_shape_to_tensor) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 7", "f32") ", %m: " T("7", "bool") ", %u: " T("n, 7", "f32")
      ", %i: " T("n, 3", "si32") ", %b: " T("n, 3", "bool") ", %v: " T("3, n", "si32") ") -> ("
      T("n, 7", "f32") ", " T("n, 3", "si32") ", " T("2", "si64") ") {\n"
      "  %0 = mo.masked_scatter(%x, %m, %u) : (" T("n, 7", "f32") ", " T("7", "bool") ", "
      T("n, 7", "f32") ") -> " T("n, 7", "f32") "\n"
      "  %1 = mo.masked_scatter(%i, %b, %v) : (" T("n, 3", "si32") ", " T("n, 3", "bool") ", "
      T("3, n", "si32") ") -> " T("n, 3", "si32") "\n"
      "  %2 = mo.shape_to_tensor(%x) : (" T("n, 7", "f32") ") -> " T("2", "si64") "\n"
      "  mo.output %0, %1, %2 : " T("n, 7", "f32") ", " T("n, 3", "si32") ", " T("2", "si64")
      "\n}\n";
  int64_t n[] = {45};
  check(text, n, true);
  int64_t z[] = {0};
  check(text, z, true);
}

/* repeat_interleave with the attribute repeats: one result element per
 * thread (tensor repeats: below, and test_ops_repeat on the emulator) */
Test(simt_ops, repeat_interleave) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 4", "f32") ", %i: " T("4, n", "si32") ") -> ("
      T("3 * n, 4", "f32") ", " T("4, 2 * n", "si32") ", " T("8 * n", "f32") ") {\n"
      "  %0 = mo.repeat_interleave(%x) {repeats = 3, axis = 0} : " T("3 * n, 4", "f32") "\n"
      "  %1 = mo.repeat_interleave(%i) {repeats = 2, axis = -1} : " T("4, 2 * n", "si32") "\n"
      "  %2 = mo.repeat_interleave(%x) {repeats = 2} : " T("8 * n", "f32") "\n"
      "  mo.output %0, %1, %2 : " T("3 * n, 4", "f32") ", " T("4, 2 * n", "si32") ", "
      T("8 * n", "f32") "\n}\n";
  int64_t n[] = {37};
  check(text, n, true);
  int64_t z[] = {0};
  check(text, z, true);
}

/* Node 0 of text lowered for sm_80 and assembled by ptxas (where present):
 * for ops whose operands are data the emulator's random inputs cannot
 * satisfy. */
static void expect_assembles_for_sm_80(const char *text, const char *what) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%s", d.msg);
  char err[1024] = "";
  jit_simt_target ptx = {.math = &rt_simt_math};
  jit_simt_target_parse("sm_80", &ptx, err, sizeof err);
  size_t len = 0;
  void *p = simt_emit_node(g, g->nodes[0], &ptx, "node0", &len, err, sizeof err);
  cr_assert_not_null(p, "%s: %s", what, err);
  simt_expect_ptxas(p, len, what);
  free(p);
  ir_graph_free(g);
}

/* repeat_interleave with a repeats tensor (a scan of the prefix sums per
 * thread) is assembled by ptxas: random repeats would not sum to the
 * declared dim here */
Test(simt_ops, repeat_interleave_tensor_assembles_for_sm_80) {
  const char *text = "mo.graph @g<n, k>(%x: " T("n, 3", "f16") ", %r: " T("n", "si32")
                     ") -> (" T("k, 3", "f16") ") {\n"
                     "  %0 = mo.repeat_interleave(%x, %r) {axis = 0} : " T("k, 3", "f16")
                     "\n  mo.output %0 : " T("k, 3", "f16") "\n}\n";
  expect_assembles_for_sm_80(text, "mo.repeat_interleave");
}

/* range's lowering is assembled by ptxas (its operands are data, so the
 * random inputs here would not give the declared length on the emulator;
 * test_ops_index runs it on the CPU) */
Test(simt_ops, range_assembles_for_sm_80) {
  const char *text = "mo.graph @g<n>(%a: " T("", "f32") ", %b: " T("", "f32") ", %s: " T("", "f32")
                     ") -> (" T("n", "f32") ") {\n"
                     "  %0 = mo.range(%a, %b, %s) : (" T("", "f32") ", " T("", "f32") ", " T("", "f32")
                     ") -> " T("n", "f32") "\n  mo.output %0 : " T("n", "f32") "\n}\n";
  expect_assembles_for_sm_80(text, "mo.range");
}

/* matmul with 1-D operands (seed 002: [K] is 1xK as lhs, Kx1 as rhs, the
 * added dims dropped) and integer matmul, on the tiles of their matrix view */
Test(simt_ops, matmul_vectors_and_ints) {
  const char *text =
      "mo.graph @g<n>(%v: " T("n", "f32") ", %m: " T("n, 37", "f32") ", %l: " T("2, 5, n", "f32")
      ", %i: " T("n", "si32") ", %j: " T("3, n", "si32") ") -> (" T("37", "f32") ", " T("2, 5", "f32")
      ", " T("", "f32") ", " T("3", "si32") ") {\n"
      "  %0 = mo.matmul(%v, %m) : (" T("n", "f32") ", " T("n, 37", "f32") ") -> " T("37", "f32") "\n"
      "  %1 = mo.matmul(%l, %v) : (" T("2, 5, n", "f32") ", " T("n", "f32") ") -> " T("2, 5", "f32") "\n"
      "  %2 = mo.matmul(%v, %v) : (" T("n", "f32") ", " T("n", "f32") ") -> " T("", "f32") "\n"
      "  %3 = mo.matmul(%j, %i) : (" T("3, n", "si32") ", " T("n", "si32") ") -> " T("3", "si32") "\n"
      "  mo.output %0, %1, %2, %3 : " T("37", "f32") ", " T("2, 5", "f32") ", " T("", "f32") ", "
      T("3", "si32") "\n}\n";
  int64_t n[] = {19};
  check(text, n, true);
  int64_t n0[] = {0};
  check(text, n0, false);
}

/* vision: pad's three modes, both pools, conv2d (direct on SIMT) with
 * groups, padding, stride and a bias, conv2d_transpose; a symbolic batch */
Test(simt_ops, vision) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 9, 7, 4", "f32") ", %w: " T("3, 3, 2, 6", "f32") ", %b: " T("6", "f32")
      ", %i: " T("n, 5", "si32") ", %v: " T("2, 2, 3, 4", "f32") ") -> (" T("n, 12, 8, 4", "f32") ", "
      T("n, 5, 4, 4", "f32") ", " T("n, 4, 4, 4", "f32") ", " T("n, 5, 4, 6", "f32") ", " T("n, 9", "si32")
      ", " T("n + 1, 6", "si32") ", " T("n, 17, 13, 3", "f32") ") {\n"
      "  %0 = mo.pad(%x) {mode = \"reflect\", paddings = [0, 0, 1, 2, 0, 1, 0, 0]} : " T("n, 12, 8, 4", "f32") "\n"
      "  %1 = mo.max_pool2d(%x) {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], ceil_mode = true} : "
      T("n, 5, 4, 4", "f32") "\n"
      "  %2 = mo.avg_pool2d(%x) {kernel_size = [2, 3], stride = [2, 2], dilation = [1, 1], padding = [0, 0, 1, 1], "
      "count_boundary = false} : " T("n, 4, 4, 4", "f32") "\n"
      "  %3 = mo.conv2d(%x, %w, %b) {stride = [2, 2], padding = [1, 1, 1, 1], groups = 2} : "
      T("n, 5, 4, 6", "f32") "\n"
      "  %4 = mo.pad(%i) {mode = \"edge\", paddings = [0, 0, 2, 2]} : " T("n, 9", "si32") "\n"
      "  %5 = mo.pad(%i) {paddings = [1, 0, 0, 1], value = -3.0} : " T("n + 1, 6", "si32") "\n"
      "  %6 = mo.conv2d_transpose(%x, %v) {stride = [2, 2], padding = [1, 0, 0, 1]} : " T("n, 17, 13, 3", "f32") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5, %6 : " T("n, 12, 8, 4", "f32") ", " T("n, 5, 4, 4", "f32") ", "
      T("n, 4, 4, 4", "f32") ", " T("n, 5, 4, 6", "f32") ", " T("n, 9", "si32") ", " T("n + 1, 6", "si32")
      ", " T("n, 17, 13, 3", "f32") "\n}\n";
  int64_t n[] = {3};
  check(text, n, true);
  int64_t n0[] = {0};
  check(text, n0, false);
}

/* resizing: nearest (ints too), linear and bicubic with exclude_outside,
 * up and down, explicit scales, three axes at once, a symbolic batch */
Test(simt_ops, resize) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 3, 5, 7", "f32") ", %i: " T("n, 4, 3", "si32") ", %d: "
      T("n, 6, 9", "f64") ") -> (" T("n, 3, 11, 4", "f32") ", " T("n, 3, 2, 13", "f32") ", "
      T("n, 3, 9, 9", "f32") ", " T("n, 9, 6", "si32") ", " T("n, 4, 17", "f64") ", "
      T("n, 2, 8, 3", "f32") ") {\n"
      "  %0 = mo.resize_nearest(%x) {coordinate_transformation_mode = \"align_corners\", "
      "nearest_mode = \"round_prefer_ceil\"} : " T("n, 3, 11, 4", "f32") "\n"
      "  %1 = mo.resize_linear(%x) {coordinate_transformation_mode = \"pytorch_half_pixel\"} : "
      T("n, 3, 2, 13", "f32") "\n"
      "  %2 = mo.resize_bicubic(%x) {cubic_coeff_a = -0.5, exclude_outside = true} : "
      T("n, 3, 9, 9", "f32") "\n"
      "  %3 = mo.resize(%i) {mode = \"nearest\", scale_h = 2.25, scale_w = 2.0} : "
      T("n, 9, 6", "si32") "\n"
      "  %4 = mo.resize(%d) {mode = \"bicubic\", coordinate_transformation_mode = \"asymmetric\"} : "
      T("n, 4, 17", "f64") "\n"
      "  %5 = mo.resize_linear(%x) : " T("n, 2, 8, 3", "f32") "\n"
      "  mo.output %0, %1, %2, %3, %4, %5 : " T("n, 3, 11, 4", "f32") ", " T("n, 3, 2, 13", "f32")
      ", " T("n, 3, 9, 9", "f32") ", " T("n, 9, 6", "si32") ", " T("n, 4, 17", "f64") ", "
      T("n, 2, 8, 3", "f32") "\n}\n";
  int64_t n[] = {3};
  check(text, n, true);
  int64_t n0[] = {0};
  check(text, n0, false);
}

Test(simt_ops, conv3d) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 4, 5, 3, 4", "f32") ", %w: " T("2, 3, 2, 2, 6", "f32") ", %b: " T("6", "f32")
      ") -> (" T("n, 2, 5, 2, 6", "f32") ") {\n"
      "  %0 = mo.conv3d(%x, %w, %b) {stride = [2, 1, 1], padding = [0, 1, 1, 1, 0, 0], groups = 2} : "
      T("n, 2, 5, 2, 6", "f32") "\n"
      "  mo.output %0 : " T("n, 2, 5, 2, 6", "f32") "\n}\n";
  int64_t n[] = {2};
  check(text, n, true);
}

/* dequantize and qmatmul over every GGUF block encoding (jit/simt_quant.c)
 * against the interpreter: dequantize exactly as the interpreter decodes,
 * qmatmul with its lhs blocks quantized in the kernel (two blocks of K, rows
 * over a symbolic M); both emitted for sm_80 (ptxas) and gfx90a. */
Test(simt_ops, dequantize_and_qmatmul_every_encoding) {
  static const char *const enc[] = {"q4_0", "q8_0", "q4_k", "q5_k", "q6_k"};
  static const int elems[] = {32, 32, 256, 256, 256}, bytes[] = {18, 34, 144, 176, 210};
  for (int e = 0; e < 5; e++) {
    int k = 2 * elems[e], rb = 2 * bytes[e];
    char text[2048];
    snprintf(text, sizeof text,
             "mo.graph @q<m>(%%a: !mo.tensor<[m, %d], f32>, %%w: !mo.tensor<[5, %d], ui8>) -> "
             "(!mo.tensor<[m, 5], f32>, !mo.tensor<[5, %d], f32>) {\n"
             "  %%y = mo.qmatmul(%%a, %%w) {encoding = \"%s\"} : (!mo.tensor<[m, %d], f32>, "
             "!mo.tensor<[5, %d], ui8>) -> !mo.tensor<[m, 5], f32>\n"
             "  %%d = mo.dequantize(%%w) {encoding = \"%s\"} : (!mo.tensor<[5, %d], ui8>) -> "
             "!mo.tensor<[5, %d], f32>\n"
             "  mo.output %%y, %%d : !mo.tensor<[m, 5], f32>, !mo.tensor<[5, %d], f32>\n}\n",
             k, rb, k, enc[e], k, rb, enc[e], rb, k, k);
    int64_t m[] = {3};
    check(text, m, true);
    int64_t m0[] = {0};
    check(text, m0, false);
  }
}

/* mo.mutable.store.slice's kernel (jit/simt_buffer.c, lowered from the
 * graph itself: every symbol a parameter) for sm_80, assembled by ptxas, and
 * for gfx90a; device models run it (test_buffers' buffers_simt_emu). */
Test(simt_ops, store_slice_assembles_for_sm_80_and_gfx90a) {
  const char *text =
      "mo.graph @kv<n>(%cache: !mo.buffer<[2, 8, 3], f16>, %new: " T("2, n, 3", "f16")
      ", %start: " T("3", "si32") ") -> (" T("2, 8, 3", "f16") ") {\n"
      "  %c0 = mo.chain.create() : !mo.chain\n"
      "  %c1 = mo.mutable.store.slice(%cache, %new, %start, %c0) : (!mo.buffer<[2, 8, 3], f16>, "
      T("2, n, 3", "f16") ", " T("3", "si32") ", !mo.chain) -> !mo.chain\n"
      "  %all, %c2 = mo.mutable.load(%cache, %c1) : (!mo.buffer<[2, 8, 3], f16>, !mo.chain) -> ("
      T("2, 8, 3", "f16") ", !mo.chain)\n"
      "  mo.output %all : " T("2, 8, 3", "f16") "\n}\n";
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "%d:%d: %s", d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "%s", d.msg);
  int node = -1;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i]->op == IR_OP_MUTABLE_STORE_SLICE) node = i;
  char err[1024] = "";
  jit_simt_target ptx = {.math = &rt_simt_math}, amd = {.math = &rt_simt_math};
  jit_simt_target_parse("sm_80", &ptx, err, sizeof err);
  jit_simt_target_parse("gfx90a", &amd, err, sizeof err);
  void *p = NULL;
  size_t len = 0;
  cr_assert_eq(jit_simt_compile_store_slice(g, &ptx, node, "ss", &p, &len, err, sizeof err), 0,
               "%s", err);
  cr_expect(strstr(p, ".entry ss"), "no kernel entry in the PTX");
  simt_expect_ptxas(p, len, "mo.mutable.store.slice");
  free(p);
  cr_expect_eq(jit_simt_compile_store_slice(g, &amd, node, "ss", &p, &len, err, sizeof err), 0,
               "%s", err);
  free(p);
  cr_expect_neq(jit_simt_compile_store_slice(g, &amd, 0, "ss", &p, &len, err, sizeof err), 0);
  cr_expect(strstr(err, "is not a mo.mutable.store.slice"), "%s", err);
  ir_graph_free(g);
}
