/* test_simt_fused.c - the SIMT lowering of mo.fused (jit/simt_fused.c) on
 * simt-emu against the reference interpreter: a graph is fused
 * (ir_graph_fuse, after ir_graph_fold_transpose_b where asked), every node
 * of the fused graph becomes one SIMT kernel, launched with
 * jit_simt_geometry's grid on the emulator node after node, and the
 * outputs must equal the interpreter's on the unfused graph (ints and bools
 * exactly, floats within a small tolerance). Each graph runs twice: kernels
 * lowered from the node with the graph's symbols as parameters, and kernels
 * compiled from the node's kernel text with every symbol bound
 * (jit_simt_compile_graph). The fused kernels are also emitted for sm_80
 * (assembled by ptxas when it is found; skipped with a message otherwise)
 * and gfx90a. Bodies the lowering does not take, and op classes without a
 * SIMT lowering, are refused by name. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/interp.h"
#include "ir/ir.h"
#include "jit/jit.h"
#include "jit/simt.h"
#include "jit/simt_abi.h"
#include "kiln/kiln.h"
#include "src/device.h"
#include "src/simt_mathlib.h"
#include "support/simt_check.h"
#include "support/note.h"

#define T(dims, dt) "!mo.tensor<[" dims "], " dt ">"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static void fill(ir_tensor *t) { simt_fill(t, &rng, 4, 9); }
static bool close_enough(ir_dtype dt, const void *got, const void *want, int64_t i) {
  return simt_close(dt, got, want, i, 5e-5);
}

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "parse: %s\n%s", d.msg, text);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "verify: %s", d.msg);
  return g;
}

/* g fused (transposes folded first when fold); the number of mo.fused
 * nodes made must be nfused. */
static ir_graph *fused_copy(const ir_graph *g, bool fold, int nfused) {
  ir_graph *f = ir_graph_clone(g);
  cr_assert_not_null(f);
  ir_diag d = {0};
  if (fold) cr_assert_geq(ir_graph_fold_transpose_b(f, &d), 1, "fold: %s", d.msg);
  cr_assert_eq(ir_graph_fuse(f, 0, &d), nfused, "fuse: %s", d.msg);
  cr_assert_eq(ir_graph_verify(f, &d), 0, "verify after fusing: %s", d.msg);
  return f;
}


static const char *find_ptxas(void) {
  if (system("command -v ptxas >/dev/null 2>&1") == 0) return "ptxas";
  if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0) return "/usr/local/cuda/bin/ptxas";
  return NULL;
}

/* Emit node n for sm_80 (assembled by ptxas when found) and gfx90a. */
static void check_gpu_code(const ir_graph *g, const ir_node *n, const char *name) {
  char err[2048] = "";
  jit_simt_target ptx = {.math = &rt_simt_math}, amd = {.math = &rt_simt_math};
  cr_assert_eq(jit_simt_target_parse("sm_80", &ptx, err, sizeof err), 0);
  cr_assert_eq(jit_simt_target_parse("gfx90a", &amd, err, sizeof err), 0);
  size_t len = 0;
  void *p = simt_emit_node(g, n, &ptx, name, &len, err, sizeof err);
  cr_expect_not_null(p, "sm_80 %s: %s", name, err);
  const char *ptxas = find_ptxas();
  if (p && !ptxas) test_note("ptxas not found: assembling the sm_80 PTX of %s skipped", name);
  if (p && ptxas) {
    char path[] = "/tmp/kiln-simt-fused-XXXXXX.ptx";
    int fd = mkstemps(path, 4);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, p, len - 1), (ssize_t)(len - 1));
    close(fd);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -arch=sm_80 %s -o /dev/null", ptxas, path);
    cr_expect_eq(system(cmd), 0, "ptxas rejected %s (%s)", name, path);
    unlink(path);
  }
  free(p);
  p = simt_emit_node(g, n, &amd, name, &len, err, sizeof err);
  if (!p && strstr(err, "ocml") && strstr(err, "not found"))
    test_note("ROCm's ocml not found: the gfx90a code of %s skipped", name);
  else
    cr_expect_not_null(p, "gfx90a %s: %s", name, err);
  free(p);
}

/* Run fused graph fg on simt-emu, node after node, under syms (graph
 * order); bound: kernels compiled from their text with every symbol bound.
 * The outputs go to data (by value id); gpu: also emit the fused kernels
 * for the GPU targets. */
static void run_on_emu(const ir_graph *fg, const int64_t *syms, bool bound, bool gpu,
                       void **data) {
  char err[2048] = "", msg[1024] = "";
  jit_engine *e = jit_engine_new(err, sizeof err);
  cr_assert_not_null(e, "%s", err);
  kiln_status *st = kiln_status_new();
  kiln_device *dev = kiln_device_open("simt-emu", st);
  cr_assert_not_null(dev, "%s", kiln_status_message(st));
  jit_simt_target emu = {0};
  cr_assert_eq(jit_simt_target_parse("simt-emu", &emu, err, sizeof err), 0);
  for (int ni = 0; ni < fg->nnodes; ni++) {
    const ir_node *n = fg->nodes[ni];
    cr_assert(!ir_node_is_source(n), "the test graphs have no constants");
    cr_assert(jit_simt_can_lower(n), "mo.%s: the SIMT lowering refuses it", ir_op_get(n->op)->name);
    for (int j = 0; j < n->nout; j++) {
      ir_tensor o = {.dtype = n->out[j]->type.dtype, .rank = n->out[j]->type.rank};
      cr_assert_eq(ir_eval_shape(&n->out[j]->type, syms, o.shape, msg, sizeof msg), 0);
      free(data[n->out[j]->id]);
      data[n->out[j]->id] = calloc((size_t)ir_tensor_numel(&o) * ir_dtype_size(o.dtype) + 1, 1);
    }
    char name[64];
    size_t len = 0;
    void *obj = NULL;
    if (bound) {
      jit_simt_kernel_name(fg, ni, name, sizeof name);
      if (jit_simt_compile_graph(fg, &emu, syms, NULL, ni, false, &obj, &len, err, sizeof err) < 0)
        obj = NULL;
    } else {
      snprintf(name, sizeof name, "fused_node%d", ni);
      obj = simt_emit_node(fg, n, &emu, name, &len, err, sizeof err);
    }
    cr_assert_not_null(obj, "mo.%s: %s", ir_op_get(n->op)->name, err);
    jit_kernel_fn fn = NULL;
    jit_code *code = jit_load_object(e, obj, len, name, &fn, err, sizeof err);
    free(obj);
    cr_assert_not_null(code, "%s", err);
    jit_simt_dims dims;
    cr_assert_eq(jit_simt_geometry(n, syms, &dims, err, sizeof err), 0, "%s", err);
    int nks = bound ? 0 : fg->nsyms, nb = n->nin + n->nout;
    void **params = calloc((size_t)(nb + nks + 1), sizeof *params);
    void **bufs = calloc((size_t)nb + 1, sizeof *bufs);
    int64_t *symv = calloc((size_t)fg->nsyms + 1, sizeof *symv);
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
      cr_assert_eq(rt_device_launch(dev, (void *)(uintptr_t)fn, &ld, params, st), 0, "mo.%s: %s",
                   ir_op_get(n->op)->name, kiln_status_message(st));
    }
    cr_expect_eq(errword, 0, "mo.%s reported error %d", ir_op_get(n->op)->name, errword);
    jit_code_free(e, code);
    free(params);
    free(bufs);
    free(symv);
    if (gpu && !bound && n->op == IR_OP_FUSED) check_gpu_code(fg, n, name);
  }
  jit_engine_free(e);
  kiln_device_close(dev);
  kiln_status_free(st);
}

/* Interpret text's graph under syms, fuse it (nfused groups), run the fused
 * graph on simt-emu both ways and compare every output. */
static void check(const char *text, const int64_t *syms, bool fold, int nfused, bool gpu) {
  ir_graph *g = parse(text);
  ir_graph *fg = fused_copy(g, fold, nfused);
  char msg[1024] = "";
  ir_tensor *ins = calloc((size_t)g->ninputs + 1, sizeof *ins);
  ir_tensor *want = calloc((size_t)g->noutputs + 1, sizeof *want);
  cr_assert(ins && want);
  for (int i = 0; i < g->ninputs; i++) {
    const ir_type *ty = &g->inputs[i]->type;
    ins[i].dtype = ty->dtype;
    ins[i].rank = ty->rank;
    cr_assert_eq(ir_eval_shape(ty, syms, ins[i].shape, msg, sizeof msg), 0, "%s", msg);
    ins[i].data = malloc((size_t)ir_tensor_numel(&ins[i]) * ir_dtype_size(ty->dtype) + 1);
    fill(&ins[i]);
  }
  cr_assert_eq(ir_interp_run(g, ins, NULL, NULL, want, msg, sizeof msg), 0, "interp: %s", msg);
  for (int pass = 0; pass < 2; pass++) {
    void **data = calloc((size_t)fg->nvalues, sizeof *data);
    cr_assert(data);
    for (int i = 0; i < fg->ninputs; i++) {
      size_t bytes = (size_t)ir_tensor_numel(&ins[i]) * ir_dtype_size(ins[i].dtype);
      data[fg->inputs[i]->id] = malloc(bytes + 1);
      memcpy(data[fg->inputs[i]->id], ins[i].data, bytes);
    }
    run_on_emu(fg, syms, pass == 1, gpu && pass == 0, data);
    for (int o = 0; o < fg->noutputs; o++) {
      const void *got = data[fg->outputs[o]->id];
      int64_t cnt = ir_tensor_numel(&want[o]);
      int bad = 0;
      for (int64_t i = 0; i < cnt && bad < 5; i++)
        if (!close_enough(want[o].dtype, got, want[o].data, i)) {
          bad++;
          cr_expect_fail("%s: output %d element %lld differs (%s)\n%s",
                         pass ? "bound kernels" : "generic kernels", o, (long long)i,
                         ir_dtype_name(want[o].dtype), text);
        }
    }
    for (int v = 0; v < fg->nvalues; v++) free(data[v]);
    free(data);
  }
  for (int i = 0; i < g->ninputs; i++) free(ins[i].data);
  for (int o = 0; o < g->noutputs; o++) free(want[o].data);
  free(ins);
  free(want);
  ir_graph_free(fg);
  ir_graph_free(g);
}

Test(simt_fused, elementwise_chain_with_broadcast) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 5", "f32") ", %b: " T("5", "f32") ", %c: " T("n, 1", "f32")
      ") -> (" T("n, 5", "f32") ") {\n"
      "  %0 = mo.add(%x, %b) : (" T("n, 5", "f32") ", " T("5", "f32") ") -> " T("n, 5", "f32") "\n"
      "  %1 = mo.mul(%0, %c) : (" T("n, 5", "f32") ", " T("n, 1", "f32") ") -> " T("n, 5", "f32") "\n"
      "  %2 = mo.tanh(%1) : " T("n, 5", "f32") "\n"
      "  %3 = mo.relu(%2) : " T("n, 5", "f32") "\n"
      "  %4 = mo.sub(%3, %x) : " T("n, 5", "f32") "\n"
      "  mo.output %4 : " T("n, 5", "f32") "\n}\n";
  int64_t n[] = {37};
  check(text, n, false, 1, true);
  int64_t big[] = {700}; /* more elements than one grid-stride pass of a block */
  check(text, big, false, 1, false);
  int64_t none[] = {0};
  check(text, none, false, 1, false);
}

Test(simt_fused, elementwise_chain_of_ints_compares_and_where) {
  const char *text =
      "mo.graph @g<n>(%i: " T("n, 3", "si32") ", %j: " T("3", "si32") ", %x: " T("n, 3", "f64")
      ") -> (" T("n, 3", "f64") ") {\n"
      "  %0 = mo.mul(%i, %j) : (" T("n, 3", "si32") ", " T("3", "si32") ") -> " T("n, 3", "si32") "\n"
      "  %1 = mo.max(%0, %i) : " T("n, 3", "si32") "\n"
      "  %2 = mo.greater(%1, %i) : (" T("n, 3", "si32") ", " T("n, 3", "si32") ") -> " T("n, 3", "bool") "\n"
      "  %3 = mo.cast(%1) {dtype = f64} : (" T("n, 3", "si32") ") -> " T("n, 3", "f64") "\n"
      "  %4 = mo.exp(%x) : " T("n, 3", "f64") "\n"
      "  %5 = mo.where(%2, %3, %4) : (" T("n, 3", "bool") ", " T("n, 3", "f64") ", " T("n, 3", "f64") ") -> " T("n, 3", "f64") "\n"
      "  mo.output %5 : " T("n, 3", "f64") "\n}\n";
  int64_t n[] = {129};
  check(text, n, false, 1, false);
}

Test(simt_fused, gemm_with_bias_and_relu_epilogue) {
  const char *text =
      "mo.graph @g<m, k>(%a: " T("m, k", "f32") ", %w: " T("k, 23", "f32") ", %b: " T("23", "f32")
      ") -> (" T("m, 23", "f32") ") {\n"
      "  %0 = mo.matmul(%a, %w) : (" T("m, k", "f32") ", " T("k, 23", "f32") ") -> " T("m, 23", "f32") "\n"
      "  %1 = mo.add(%0, %b) : (" T("m, 23", "f32") ", " T("23", "f32") ") -> " T("m, 23", "f32") "\n"
      "  %2 = mo.relu(%1) : " T("m, 23", "f32") "\n"
      "  mo.output %2 : " T("m, 23", "f32") "\n}\n";
  int64_t s[] = {37, 19};
  check(text, s, false, 1, true);
  int64_t k0[] = {5, 0}; /* K = 0: the epilogue on zeros */
  check(text, k0, false, 1, false);
}

Test(simt_fused, batched_gemm_with_residual_epilogue_f64) {
  const char *text =
      "mo.graph @g<m, k>(%a: " T("2, m, k", "f64") ", %w: " T("k, 9", "f64") ", %r: " T("2, m, 9", "f64")
      ", %s: " T("m, 1", "f64") ") -> (" T("2, m, 9", "f64") ") {\n"
      "  %0 = mo.matmul(%a, %w) : (" T("2, m, k", "f64") ", " T("k, 9", "f64") ") -> " T("2, m, 9", "f64") "\n"
      "  %1 = mo.mul(%0, %s) : (" T("2, m, 9", "f64") ", " T("m, 1", "f64") ") -> " T("2, m, 9", "f64") "\n"
      "  %2 = mo.add(%1, %r) : " T("2, m, 9", "f64") "\n"
      "  %3 = mo.gelu(%2) : " T("2, m, 9", "f64") "\n"
      "  mo.output %3 : " T("2, m, 9", "f64") "\n}\n";
  int64_t s[] = {21, 17};
  check(text, s, false, 1, true);
}

/* x W^T + b: the transpose folds into the matmul (kiln.transpose_b), which
 * then fuses with its epilogue; N (7) differs from K so the grid must take
 * N from B's second-to-last axis. */
Test(simt_fused, gemm_with_transposed_b_and_epilogue) {
  const char *text =
      "mo.graph @g<m>(%x: " T("m, 40", "f32") ", %w: " T("7, 40", "f32") ", %b: " T("7", "f32")
      ") -> (" T("m, 7", "f32") ") {\n"
      "  %wt = mo.transpose(%w) {axis_1 = 0, axis_2 = 1} : (" T("7, 40", "f32") ") -> " T("40, 7", "f32") "\n"
      "  %0 = mo.matmul(%x, %wt) : (" T("m, 40", "f32") ", " T("40, 7", "f32") ") -> " T("m, 7", "f32") "\n"
      "  %1 = mo.add(%0, %b) : (" T("m, 7", "f32") ", " T("7", "f32") ") -> " T("m, 7", "f32") "\n"
      "  %2 = mo.sigmoid(%1) : " T("m, 7", "f32") "\n"
      "  mo.output %2 : " T("m, 7", "f32") "\n}\n";
  int64_t s[] = {33};
  check(text, s, true, 1, true);
}

/* A graph of several groups and unfused nodes between them (a reduction
 * over a short axis, sized to its rows). */
Test(simt_fused, groups_around_a_reduction) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 8", "f32") ", %w: " T("8, 8", "f32") ") -> (" T("n, 1", "f32") ") {\n"
      "  %0 = mo.matmul(%x, %w) : (" T("n, 8", "f32") ", " T("8, 8", "f32") ") -> " T("n, 8", "f32") "\n"
      "  %1 = mo.silu(%0) : " T("n, 8", "f32") "\n"
      "  %2 = mo.max(%1) {axis = -1} : (" T("n, 8", "f32") ") -> " T("n, 1", "f32") "\n"
      "  %3 = mo.negate(%2) : " T("n, 1", "f32") "\n"
      "  %4 = mo.exp(%3) : " T("n, 1", "f32") "\n"
      "  mo.output %4 : " T("n, 1", "f32") "\n}\n";
  int64_t n[] = {1000};
  check(text, n, false, 2, false);
}

/* ---- refusals ---- */

static int lower_message(const ir_graph *g, const ir_node *n, char *err, size_t errlen) {
  jit_simt_target emu = {0};
  cr_assert_eq(jit_simt_target_parse("simt-emu", &emu, err, errlen), 0);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, &emu, "refused", err, errlen);
  cr_assert_not_null(mod, "%s", err);
  jit_simt_fn sf;
  jit_simt_begin(&sf, &emu, ctx, mod, g, n, "refused", JIT_SIMT_BLOCK, err, errlen);
  int rc = sf.f.failed ? -1 : jit_simt_lower_node(&sf);
  jit_simt_dispose(&sf);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return rc;
}

Test(simt_fused, a_body_member_without_an_elementwise_form_is_refused_by_name) {
  const char *text =
      "mo.graph @g<n>(%x: " T("n, 4", "f32") ") -> (" T("n, 4", "f32") ") {\n"
      "  %0 = mo.exp(%x) : " T("n, 4", "f32") "\n"
      "  %1 = mo.negate(%0) : " T("n, 4", "f32") "\n"
      "  mo.output %1 : " T("n, 4", "f32") "\n}\n";
  ir_graph *g = parse(text);
  ir_graph *fg = fused_copy(g, false, 1);
  ir_node *fn = fg->nodes[fg->nnodes - 1];
  cr_assert_eq(fn->op, IR_OP_FUSED);
  cr_assert(jit_simt_can_lower(fn));
  /* the same types, another class: a softmax member has no per-element form */
  fn->body->nodes[0]->op = IR_OP_SOFTMAX;
  cr_expect_not(jit_simt_can_lower(fn));
  char err[1024] = "";
  cr_expect_eq(lower_message(fg, fn, err, sizeof err), -1);
  cr_expect(strstr(err, "mo.softmax") && strstr(err, "mo.fused"), "message: %s", err);
  ir_graph_free(fg);
  ir_graph_free(g);
}

Test(simt_fused, an_op_class_without_a_lowering_is_refused_by_name) {
  const char *text =
      "mo.graph @g(%x: " T("3", "f32") ") -> (" T("3", "f32") ") {\n"
      "  %c = mo.constant {value = #M.dense_array<1.0, 2.0, 3.0> : tensor<3xf32>} : " T("3", "f32") "\n"
      "  %0 = mo.add(%x, %c) : " T("3", "f32") "\n"
      "  mo.output %0 : " T("3", "f32") "\n}\n";
  ir_graph *g = parse(text);
  const ir_node *c = g->nodes[0];
  cr_assert_eq(c->op, IR_OP_CONSTANT);
  cr_expect_not(jit_simt_can_lower(c));
  cr_expect(jit_simt_can_lower(g->nodes[1]));
  char err[1024] = "";
  cr_expect_eq(lower_message(g, c, err, sizeof err), -1);
  cr_expect(strstr(err, "mo.constant has no SIMT lowering") != NULL, "message: %s", err);
  ir_graph_free(g);
}
