/* test_simt.c - SIMT kernels written once (jit/simt.h) and emitted for the
 * three targets: on simt-emu they run and give the right numbers (a
 * grid-stride elementwise kernel over sizes that are not a multiple of the
 * block, a shared-memory block reduction with barriers, a data error that
 * reaches the error word); for sm_80 / sm_90 the PTX is assembled by the CUDA
 * toolkit's ptxas when it is on PATH (skipped with a message otherwise); for
 * gfx90a / gfx942 the object is an AMDGPU ELF with the kernel descriptor, and
 * links into a shared object with no undefined symbols when ld.lld-19 is
 * there. */
#include <criterion/criterion.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/ir.h"
#include "jit/jit.h"
#include "jit/simt.h"
#include "jit/simt_abi.h"
#include "kiln/kiln.h"
#include "src/device.h"
#include "src/simt_mathlib.h"
#include "support/note.h"

#define BLOCK 128

static const char *GRAPH =
    "mo.graph @k<n>(%x: !mo.tensor<[n], f32>, %w: !mo.tensor<[n], f32>) -> "
    "(!mo.tensor<[n], f32>) {\n"
    "  %y = mo.mul(%x, %w) : (!mo.tensor<[n], f32>, !mo.tensor<[n], f32>) -> "
    "!mo.tensor<[n], f32>\n"
    "  mo.output %y : !mo.tensor<[n], f32>\n}\n";

static ir_graph *parse_graph(void) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(GRAPH, strlen(GRAPH), &d);
  cr_assert_not_null(g, "parse: %s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "verify: %s", d.msg);
  return g;
}

typedef enum { K_AXPB, K_BLOCK_SUM, K_FAIL_NEGATIVE } kernel_kind;

/* Build one kernel `name` of the given kind into mod. */
static void build(kernel_kind kind, const jit_simt_target *t, LLVMContextRef ctx, LLVMModuleRef mod,
                  const ir_graph *g, const char *name) {
  char err[512] = "";
  jit_simt_fn sf;
  const ir_node *node = g->nodes[0];
  jit_simt_begin(&sf, t, ctx, mod, g, node, name, BLOCK, err, sizeof err);
  jit_fn *f = &sf.f;
  cr_assert(!f->failed, "begin: %s", err);
  LLVMValueRef n = jit_dim(f, node->in[0]->type.dims[0]);
  LLVMValueRef x = jit_in(f, 0), w = jit_in(f, 1), y = jit_out(f, 0);
  if (kind == K_AXPB || kind == K_FAIL_NEGATIVE) {
    jit_simt_loop l;
    LLVMValueRef i = jit_simt_grid_loop_begin(&sf, &l, n);
    LLVMValueRef xv = jit_load(f, IR_DT_F32, x, i);
    if (kind == K_FAIL_NEGATIVE)
      jit_fail_if(f, LLVMBuildFCmp(f->b, LLVMRealOLT, xv, jit_fconst(f, IR_DT_F32, 0), ""), 1);
    LLVMValueRef v = LLVMBuildFMul(f->b, xv, jit_load(f, IR_DT_F32, w, i), "");
    v = LLVMBuildFAdd(f->b, v, jit_fconst(f, IR_DT_F32, 1), "");
    jit_store(f, IR_DT_F32, y, i, v);
    jit_simt_grid_loop_end(&sf, &l);
  } else {
    /* per thread: grid-stride sum of x*w; then a shared-memory tree per
     * block; thread 0 writes y[blockIdx.x] */
    LLVMValueRef acc = jit_alloca(f, f->t_f32, "acc");
    LLVMBuildStore(f->b, jit_fconst(f, IR_DT_F32, 0), acc);
    jit_simt_loop l;
    LLVMValueRef i = jit_simt_grid_loop_begin(&sf, &l, n);
    LLVMValueRef v = LLVMBuildFMul(f->b, jit_load(f, IR_DT_F32, x, i),
                                   jit_load(f, IR_DT_F32, w, i), "");
    LLVMBuildStore(f->b, LLVMBuildFAdd(f->b, LLVMBuildLoad2(f->b, f->t_f32, acc, ""), v, ""), acc);
    jit_simt_grid_loop_end(&sf, &l);
    LLVMValueRef sh = jit_simt_shared(&sf, BLOCK * sizeof(float));
    LLVMValueRef tid = LLVMBuildZExt(f->b, jit_simt_sreg_get(&sf, JIT_SIMT_TID, 0), f->t_i64, "");
    jit_store(f, IR_DT_F32, sh, tid, LLVMBuildLoad2(f->b, f->t_f32, acc, ""));
    jit_simt_barrier(&sf);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
      LLVMBasicBlockRef add = LLVMAppendBasicBlockInContext(ctx, f->fn, "add");
      LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(ctx, f->fn, "join");
      LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntULT, tid, jit_i64(f, s), ""), add, join);
      LLVMPositionBuilderAtEnd(f->b, add);
      LLVMValueRef other = LLVMBuildAdd(f->b, tid, jit_i64(f, s), "");
      LLVMValueRef sum = LLVMBuildFAdd(f->b, jit_load(f, IR_DT_F32, sh, tid),
                                       jit_load(f, IR_DT_F32, sh, other), "");
      jit_store(f, IR_DT_F32, sh, tid, sum);
      LLVMBuildBr(f->b, join);
      LLVMPositionBuilderAtEnd(f->b, join);
      jit_simt_barrier(&sf);
    }
    LLVMBasicBlockRef write = LLVMAppendBasicBlockInContext(ctx, f->fn, "write");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, f->fn, "done");
    LLVMBuildCondBr(f->b, LLVMBuildICmp(f->b, LLVMIntEQ, tid, jit_i64(f, 0), ""), write, done);
    LLVMPositionBuilderAtEnd(f->b, write);
    LLVMValueRef b = LLVMBuildZExt(f->b, jit_simt_sreg_get(&sf, JIT_SIMT_CTAID, 0), f->t_i64, "");
    jit_store(f, IR_DT_F32, y, b, jit_load(f, IR_DT_F32, sh, jit_i64(f, 0)));
    LLVMBuildBr(f->b, done);
    LLVMPositionBuilderAtEnd(f->b, done);
  }
  jit_simt_finish(&sf);
  cr_assert(!f->failed, "lowering: %s", err);
  jit_simt_dispose(&sf);
}

/* Emit the kernels of `kinds` for target name tn; malloc'd bytes. */
static void *emit(const char *tn, const kernel_kind *kinds, const char *const *names, int nk,
                  size_t *len) {
  char err[1024] = "";
  jit_simt_target t = {.math = &rt_simt_math};
  cr_assert_eq(jit_simt_target_parse(tn, &t, err, sizeof err), 0, "%s", err);
  ir_graph *g = parse_graph();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, &t, "simt_test", err, sizeof err);
  cr_assert_not_null(mod, "%s", err);
  for (int k = 0; k < nk; k++) build(kinds[k], &t, ctx, mod, g, names[k]);
  void *out = NULL;
  int rc = jit_simt_emit(mod, &t, &out, len, err, sizeof err);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  ir_graph_free(g);
  cr_assert_eq(rc, 0, "%s: %s", tn, err);
  return out;
}

Test(simt, target_names) {
  jit_simt_target t = {0};
  char err[256];
  cr_expect_eq(jit_simt_target_parse("sm_90", &t, err, sizeof err), 0);
  cr_expect_eq(t.kind, JIT_SIMT_NVPTX);
  cr_expect_str_eq(t.arch, "sm_90");
  cr_expect_eq(jit_simt_target_parse("gfx942", &t, err, sizeof err), 0);
  cr_expect_eq(t.kind, JIT_SIMT_AMDGPU);
  cr_expect_eq(jit_simt_target_parse("sm_13", &t, err, sizeof err), -1);
  cr_expect(strstr(err, "unknown SIMT target 'sm_13'"), "%s", err);
}

/* ---- simt-emu: run them ---- */

typedef struct emu_kernels {
  jit_engine *e;
  jit_code *code[3];
  jit_simt_kernel_fn fn[3];
  kiln_device *dev;
  kiln_status *st;
} emu_kernels;

static void load_emu(emu_kernels *k) {
  char err[1024] = "";
  k->e = jit_engine_new(err, sizeof err);
  cr_assert_not_null(k->e, "%s", err);
  static const kernel_kind kinds[3] = {K_AXPB, K_BLOCK_SUM, K_FAIL_NEGATIVE};
  static const char *const names[3] = {"k_axpb", "k_block_sum", "k_fail"};
  for (int i = 0; i < 3; i++) { /* one object per kernel, as the runtime will load them */
    size_t len = 0;
    void *obj = emit("simt-emu", &kinds[i], &names[i], 1, &len);
    jit_kernel_fn fn = NULL;
    k->code[i] = jit_load_object(k->e, obj, len, names[i], &fn, err, sizeof err);
    free(obj);
    cr_assert_not_null(k->code[i], "%s", err);
    k->fn[i] = (jit_simt_kernel_fn)(uintptr_t)fn;
  }
  k->st = kiln_status_new();
  k->dev = kiln_device_open("simt-emu", k->st);
  cr_assert_not_null(k->dev);
}

static void unload_emu(emu_kernels *k) {
  for (int i = 0; i < 3; i++) jit_code_free(k->e, k->code[i]);
  jit_engine_free(k->e);
  kiln_device_close(k->dev);
  kiln_status_free(k->st);
}

static int launch(emu_kernels *k, int which, float *x, float *w, float *y, int64_t n,
                  uint32_t blocks, int32_t *errword) {
  void *params[5] = {&x, &w, &y, &n, &errword};
  /* on simt-emu the launch provides the kernel's static shared memory */
  rt_launch_dims g = {{blocks, 1, 1}, {BLOCK, 1, 1}, which == 1 ? BLOCK * sizeof(float) : 0};
  return rt_device_launch(k->dev, (void *)(uintptr_t)k->fn[which], &g, params, k->st);
}

Test(simt, emu_runs_the_same_kernels) {
  emu_kernels k;
  load_emu(&k);
  int64_t sizes[] = {1, 127, 128, 129, 1000, 5000};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int64_t n = sizes[s];
    float *x = malloc((size_t)n * 4), *w = malloc((size_t)n * 4), *y = calloc((size_t)n, 4);
    cr_assert(x && w && y);
    for (int64_t i = 0; i < n; i++) {
      x[i] = (float)((i * 13) % 29) - 7.0f;
      w[i] = (float)((i * 7) % 11) * 0.25f;
    }
    int32_t errword = 0;
    cr_assert_eq(launch(&k, 0, x, w, y, n, 3, &errword), 0, "%s", kiln_status_message(k.st));
    cr_expect_eq(errword, 0);
    for (int64_t i = 0; i < n; i++)
      cr_expect(y[i] == x[i] * w[i] + 1, "n=%lld y[%lld]=%g", (long long)n, (long long)i, y[i]);

    /* block sums: block b owns i with (i / BLOCK) % blocks == b */
    uint32_t blocks = 4;
    float out[4] = {0};
    cr_assert_eq(launch(&k, 1, x, w, out, n, blocks, &errword), 0, "%s",
                 kiln_status_message(k.st));
    for (uint32_t b = 0; b < blocks; b++) {
      double want = 0;
      for (int64_t i = 0; i < n; i++)
        if ((uint32_t)((i / BLOCK) % blocks) == b) want += (double)x[i] * w[i];
      cr_expect(out[b] > want - 1e-3 && out[b] < want + 1e-3, "n=%lld block %u: %g vs %g",
                (long long)n, b, out[b], want);
    }

    /* a negative x is a data error: the word says so */
    x[n - 1] = -1;
    errword = 0;
    cr_assert_eq(launch(&k, 2, x, w, y, n, 2, &errword), 0);
    cr_expect_eq(errword, 1, "n=%lld", (long long)n);
    free(x);
    free(w);
    free(y);
  }
  unload_emu(&k);
}

/* ---- nvptx: ptxas accepts the PTX ---- */

static bool on_path(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

static char *write_temp(const void *data, size_t len, const char *suffix) {
  char *path = malloc(256);
  cr_assert_not_null(path);
  snprintf(path, 256, "/tmp/kiln-simt-XXXXXX%s", suffix);
  int fd = mkstemps(path, (int)strlen(suffix));
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, data, len), (ssize_t)len);
  close(fd);
  return path;
}

static void check_ptx(const char *arch) {
  static const kernel_kind kinds[3] = {K_AXPB, K_BLOCK_SUM, K_FAIL_NEGATIVE};
  static const char *const names[3] = {"k_axpb", "k_block_sum", "k_fail"};
  size_t len = 0;
  char *ptx = emit(arch, kinds, names, 3, &len);
  cr_expect(strstr(ptx, ".entry k_axpb"), "no .entry in the PTX");
  cr_expect(strstr(ptx, ".entry k_block_sum"));
  cr_expect(strstr(ptx, ".maxntid 128"), "no launch bound");
  cr_expect(strstr(ptx, "bar.sync"), "no barrier in the PTX");
  char target[32];
  snprintf(target, sizeof target, ".target %s", arch);
  cr_expect(strstr(ptx, target), "no '%s'", target);
  if (!on_path("ptxas")) {
    test_note("ptxas not on PATH: assembling the %s PTX skipped", arch);
    free(ptx);
    return;
  }
  char *path = write_temp(ptx, len - 1, ".ptx");
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ptxas -arch=%s %s -o /dev/null 2>&1", arch, path);
  int rc = system(cmd);
  cr_expect_eq(rc, 0, "ptxas -arch=%s rejected the PTX (%s)", arch, path);
  if (rc == 0) unlink(path);
  free(path);
  free(ptx);
}

Test(simt, ptx_for_sm_80_assembles) { check_ptx("sm_80"); }
Test(simt, ptx_for_sm_90_assembles) { check_ptx("sm_90"); }

/* ---- amdgpu: an ELF with kernel descriptors, linkable ---- */

/* Does ELF image `img` define symbol `name` (in .symtab or .dynsym)? Counts
 * undefined symbols (other than the null one) into *undefined. */
static bool elf_has_symbol(const unsigned char *img, size_t len, const char *name, int *undefined) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
  bool found = false;
  *undefined = 0;
  cr_assert(len >= sizeof *eh && eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) continue;
    const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
    const char *strtab = (const char *)(img + sh[sh[i].sh_link].sh_offset);
    size_t n = sh[i].sh_size / sizeof *sym;
    for (size_t k = 1; k < n; k++) {
      if (strcmp(strtab + sym[k].st_name, name) == 0 && sym[k].st_shndx != SHN_UNDEF) found = true;
      if (sym[k].st_shndx == SHN_UNDEF && sym[k].st_name) ++*undefined;
    }
  }
  return found;
}

static void check_amdgpu(const char *arch) {
  static const kernel_kind kinds[3] = {K_AXPB, K_BLOCK_SUM, K_FAIL_NEGATIVE};
  static const char *const names[3] = {"k_axpb", "k_block_sum", "k_fail"};
  size_t len = 0;
  unsigned char *obj = emit(arch, kinds, names, 3, &len);
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)obj;
  cr_assert(len > sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0, "not an ELF");
  cr_expect_eq(eh->e_machine, EM_AMDGPU, "e_machine %d", eh->e_machine);
  int undefined = 0;
  for (int k = 0; k < 3; k++) {
    char kd[64];
    snprintf(kd, sizeof kd, "%s.kd", names[k]);
    cr_expect(elf_has_symbol(obj, len, kd, &undefined), "%s: no kernel descriptor %s", arch, kd);
  }
  cr_expect_eq(undefined, 0, "%s: %d undefined symbols in the object", arch, undefined);
  if (!on_path("ld.lld-19")) {
    test_note("ld.lld-19 not on PATH: linking the %s code object skipped", arch);
    free(obj);
    return;
  }
  char *path = write_temp(obj, len, ".o");
  char out[300], cmd[700];
  snprintf(out, sizeof out, "%s.hsaco", path);
  snprintf(cmd, sizeof cmd, "ld.lld-19 -shared %s -o %s 2>&1", path, out);
  cr_expect_eq(system(cmd), 0, "ld.lld-19 failed on %s", path);
  FILE *fp = fopen(out, "rb");
  cr_assert_not_null(fp, "no %s", out);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *so = malloc((size_t)n);
  cr_assert_eq(fread(so, 1, (size_t)n, fp), (size_t)n);
  fclose(fp);
  cr_expect(elf_has_symbol(so, (size_t)n, "k_block_sum.kd", &undefined));
  cr_expect_eq(undefined, 0, "%s: undefined symbols in the code object", arch);
  cr_expect_eq(((const Elf64_Ehdr *)so)->e_type, ET_DYN);
  unlink(path);
  unlink(out);
  free(so);
  free(path);
  free(obj);
}

Test(simt, amdgpu_gfx90a_code_object) { check_amdgpu("gfx90a"); }
Test(simt, amdgpu_gfx942_code_object) { check_amdgpu("gfx942"); }
