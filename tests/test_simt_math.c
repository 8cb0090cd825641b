/* test_simt_math.c - device math on AMDGPU through ROCm's ocml
 * (jit/simt_math.c): graphs whose kernels call math functions (exact and
 * tanh gelu, erf, tanh, log1p, f64 exp / log / sin / cos, f32 sin / cos,
 * pow, sigmoid, softmax, logsoftmax, layer_norm) compile for gfx90a and
 * gfx942 to an AMDGPU ELF of the right arch with one kernel descriptor per
 * node and no undefined symbols, and link into a code object with none
 * (when ld.lld-19 is on PATH). The linked module, before optimizing, has
 * ocml's functions internal and the oclc constants defined for the arch
 * (ISA version 9010 / 9402, i8 flags in addrspace(4)); after O3 no libm
 * name, ocml function or oclc constant is left to resolve. KILN_OCML naming
 * a missing file or a file that is not bitcode is a clear error naming it,
 * the variable and the package; graphs that need no library compile
 * without one; a call ocml lacks and a global nothing defines are named by
 * jit_simt_check_externals. jit/ reads no file: the library comes from
 * the target's resolver (src/simt_mathlib.c finds and reads it; a test
 * resolver hands over bytes of its own), and a target without one fails
 * with a message naming the call. Tests that need ocml.bc skip with a
 * message when it is not installed (tools/setup.sh installs
 * rocm-device-libs).
 * Numbers cannot be checked here: no AMD GPU. */
#include <criterion/criterion.h>
#include <elf.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>

#include "ir/ir.h"
#include "jit/simt.h"
#include "src/simt_mathlib.h"
#include "support/note.h"

#define EF_MACH_MASK 0x0ff /* EF_AMDGPU_MACH */
#define EF_MACH_GFX90A 0x03f
#define EF_MACH_GFX942 0x04c

#define T(dims, dt) "!mo.tensor<[" dims "], " dt ">"

/* ocml.bc where kiln looks for it, or NULL */
static const char *ocml_file(void) {
  static char found[1024];
  const char *env = getenv("KILN_OCML");
  if (env && *env) return access(env, R_OK) == 0 ? env : NULL;
  static const char *const fixed[] = {"/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc",
                                      "/opt/rocm/amdgcn/bitcode/ocml.bc"};
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (access(fixed[i], R_OK) == 0) return fixed[i];
  glob_t g;
  const char *r = NULL;
  if (glob("/opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode/ocml.bc", 0, NULL, &g) == 0) {
    if (g.gl_pathc > 0) {
      snprintf(found, sizeof found, "%s", g.gl_pathv[g.gl_pathc - 1]);
      r = found;
    }
    globfree(&g);
  }
  return r;
}

static void need_ocml(void) {
  if (ocml_file()) return;
  test_note("ROCm's ocml.bc not found (install rocm-device-libs or set KILN_OCML): "
              "AMDGPU device math not tested");
  cr_skip_test("ROCm's ocml.bc not found (install rocm-device-libs or set KILN_OCML)");
}

static ir_graph *parse(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "parse: %s\n%s", d.msg, text);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "verify: %s\n%s", d.msg, text);
  return g;
}

/* ---- ELF checks ---- */

typedef struct elf_syms {
  int undefined;     /* named undefined symbols */
  const char *first; /* the first of them */
} elf_syms;

static const Elf64_Ehdr *elf_header(const unsigned char *img, size_t len) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
  cr_assert(len >= sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0, "not an ELF");
  cr_assert_eq(eh->e_ident[EI_CLASS], ELFCLASS64);
  cr_assert(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len, "truncated ELF");
  return eh;
}

/* Is `name` defined in img's symbol tables? Counts the undefined ones. */
static bool elf_defines(const unsigned char *img, size_t len, const char *name, elf_syms *s) {
  const Elf64_Ehdr *eh = elf_header(img, len);
  const Elf64_Shdr *sec = (const Elf64_Shdr *)(img + eh->e_shoff);
  bool defined = false;
  s->undefined = 0;
  s->first = NULL;
  for (unsigned i = 0; i < eh->e_shnum; i++) {
    if (sec[i].sh_type != SHT_SYMTAB && sec[i].sh_type != SHT_DYNSYM) continue;
    cr_assert(sec[i].sh_link < eh->e_shnum && sec[i].sh_offset + sec[i].sh_size <= len);
    const Elf64_Sym *sym = (const Elf64_Sym *)(img + sec[i].sh_offset);
    const char *str = (const char *)(img + sec[sec[i].sh_link].sh_offset);
    for (size_t k = 1; k < sec[i].sh_size / sizeof *sym; k++) {
      const char *nm = str + sym[k].st_name;
      if (sym[k].st_shndx == SHN_UNDEF) {
        if (sym[k].st_name && !s->undefined++) s->first = nm;
      } else if (strcmp(nm, name) == 0) {
        defined = true;
      }
    }
  }
  return defined;
}

static bool have_lld(void) { return system("command -v ld.lld-19 >/dev/null 2>&1") == 0; }

/* ld.lld-19 -shared: a loadable code object with no undefined symbols. */
static void check_links(const unsigned char *obj, size_t len, const char *kd, const char *what) {
  char in[] = "/tmp/kiln-simt-math-XXXXXX.o";
  int fd = mkstemps(in, 2);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, obj, len), (ssize_t)len);
  close(fd);
  char out[64], cmd[256];
  snprintf(out, sizeof out, "%s.hsaco", in);
  snprintf(cmd, sizeof cmd, "ld.lld-19 -shared %s -o %s 2>&1", in, out);
  cr_expect_eq(system(cmd), 0, "%s: ld.lld-19 failed on %s", what, in);
  FILE *f = fopen(out, "rb");
  cr_assert_not_null(f, "%s: no %s", what, out);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  cr_assert(n > 0);
  unsigned char *so = malloc((size_t)n);
  cr_assert_not_null(so);
  cr_assert_eq(fread(so, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  elf_syms s;
  cr_expect(elf_defines(so, (size_t)n, kd, &s), "%s: code object lacks %s", what, kd);
  cr_expect_eq(s.undefined, 0, "%s: code object has undefined symbol %s", what,
               s.first ? s.first : "?");
  cr_expect_eq(((const Elf64_Ehdr *)so)->e_type, ET_DYN, "%s: not a shared object", what);
  free(so);
  unlink(in);
  unlink(out);
}

/* Compile graph text for arch (generic kernels, or with every symbol bound
 * to syms) and check the object. */
static void check_object(const char *label, const char *text, const char *arch,
                         const int64_t *syms, bool lld) {
  char err[2048] = "", what[160];
  snprintf(what, sizeof what, "%s on %s%s", label, arch, syms ? " (specialized)" : "");
  jit_simt_target t = {.math = &rt_simt_math};
  cr_assert_eq(jit_simt_target_parse(arch, &t, err, sizeof err), 0, "%s", err);
  ir_graph *g = parse(text);
  void *out = NULL;
  size_t len = 0;
  int rc = jit_simt_compile_graph(g, &t, syms, NULL, -1, false, &out, &len, err, sizeof err);
  cr_assert_eq(rc, 0, "%s: %s", what, err);
  const unsigned char *obj = out;
  const Elf64_Ehdr *eh = elf_header(obj, len);
  cr_expect_eq(eh->e_machine, EM_AMDGPU, "%s: e_machine %d", what, eh->e_machine);
  unsigned mach = strcmp(arch, "gfx942") == 0 ? EF_MACH_GFX942 : EF_MACH_GFX90A;
  cr_expect_eq(eh->e_flags & EF_MACH_MASK, mach, "%s: e_flags 0x%x", what, eh->e_flags);
  char kd[96] = "";
  for (int i = 0; i < g->nnodes; i++) {
    ir_op op = g->nodes[i]->op;
    if (op == IR_OP_CONSTANT || op == IR_OP_CONSTANT_EXTERNAL) continue;
    char name[64];
    jit_simt_kernel_name(g, i, name, sizeof name);
    snprintf(kd, sizeof kd, "%s.kd", name);
    elf_syms s;
    cr_expect(elf_defines(obj, len, kd, &s), "%s: no kernel descriptor %s", what, kd);
    cr_expect_eq(s.undefined, 0, "%s: undefined symbol %s in the object", what,
                 s.first ? s.first : "?");
  }
  if (lld) check_links(obj, len, kd, what);
  free(out);
  ir_graph_free(g);
}

/* ---- the graphs ---- */

typedef struct math_graph {
  const char *label;
  const char *text;
  int64_t syms[2]; /* for the specialized compile */
} math_graph;

#define UNARY1(op, dt) "  %0 = mo." op "(%x) : " T("n", dt) "\n"
#define GRAPH1(dt, body, outs, outtys)                                                            \
  "mo.graph @g<n>(%x: " T("n", dt) ") -> (" outtys ") {\n" body "  mo.output " outs " : " outtys \
  "\n}\n"

static const math_graph GRAPHS[] = {
    {"gelu (exact: erff)",
     GRAPH1("f32", UNARY1("gelu", "f32"), "%0", T("n", "f32")), {1000, 0}},
    {"gelu tanh, f32 and f64",
     "mo.graph @g<n>(%x: " T("n", "f32") ", %y: " T("n", "f64") ") -> (" T("n", "f32") ", "
     T("n", "f64") ") {\n"
     "  %0 = mo.gelu(%x) {approximate = \"tanh\"} : " T("n", "f32") "\n"
     "  %1 = mo.gelu(%y) {approximate = \"tanh\"} : " T("n", "f64") "\n"
     "  mo.output %0, %1 : " T("n", "f32") ", " T("n", "f64") "\n}\n",
     {37, 0}},
    {"erf / tanh / log1p f32",
     GRAPH1("f32",
            "  %0 = mo.erf(%x) : " T("n", "f32") "\n"
            "  %1 = mo.tanh(%0) : " T("n", "f32") "\n"
            "  %2 = mo.log1p(%1) : " T("n", "f32") "\n",
            "%0, %1, %2", T("n", "f32") ", " T("n", "f32") ", " T("n", "f32")),
     {300, 0}},
    {"erf / tanh / log1p f64",
     GRAPH1("f64",
            "  %0 = mo.erf(%x) : " T("n", "f64") "\n"
            "  %1 = mo.tanh(%0) : " T("n", "f64") "\n"
            "  %2 = mo.log1p(%1) : " T("n", "f64") "\n",
            "%2", T("n", "f64")),
     {300, 0}},
    {"exp / log / sin / cos f64",
     GRAPH1("f64",
            "  %0 = mo.exp(%x) : " T("n", "f64") "\n"
            "  %1 = mo.log(%0) : " T("n", "f64") "\n"
            "  %2 = mo.sin(%1) : " T("n", "f64") "\n"
            "  %3 = mo.cos(%2) : " T("n", "f64") "\n",
            "%0, %1, %2, %3",
            T("n", "f64") ", " T("n", "f64") ", " T("n", "f64") ", " T("n", "f64")),
     {1000, 0}},
    {"exp / log / sin / cos f32",
     GRAPH1("f32",
            "  %0 = mo.exp(%x) : " T("n", "f32") "\n"
            "  %1 = mo.log(%0) : " T("n", "f32") "\n"
            "  %2 = mo.sin(%1) : " T("n", "f32") "\n"
            "  %3 = mo.cos(%2) : " T("n", "f32") "\n",
            "%3", T("n", "f32")),
     {1000, 0}},
    {"pow f32 and f64",
     "mo.graph @g<n>(%x: " T("n", "f32") ", %y: " T("n", "f64") ") -> (" T("n", "f32") ", "
     T("n", "f64") ") {\n"
     "  %0 = mo.pow(%x, %x) : (" T("n", "f32") ", " T("n", "f32") ") -> " T("n", "f32") "\n"
     "  %1 = mo.pow(%y, %y) : (" T("n", "f64") ", " T("n", "f64") ") -> " T("n", "f64") "\n"
     "  mo.output %0, %1 : " T("n", "f32") ", " T("n", "f64") "\n}\n",
     {129, 0}},
    {"sigmoid / silu f32 and f64",
     "mo.graph @g<n>(%x: " T("n", "f32") ", %y: " T("n", "f64") ") -> (" T("n", "f32") ", "
     T("n", "f64") ", " T("n", "f64") ") {\n"
     "  %0 = mo.sigmoid(%x) : " T("n", "f32") "\n"
     "  %1 = mo.sigmoid(%y) : " T("n", "f64") "\n"
     "  %2 = mo.silu(%y) : " T("n", "f64") "\n"
     "  mo.output %0, %1, %2 : " T("n", "f32") ", " T("n", "f64") ", " T("n", "f64") "\n}\n",
     {5, 0}},
    {"softmax / logsoftmax / layer_norm",
     "mo.graph @g<r, c>(%x: " T("r, c", "f32") ", %gm: " T("c", "f32") ", %bt: " T("c", "f32")
     ") -> (" T("r, c", "f32") ", " T("r, c", "f32") ", " T("r, c", "f32") ") {\n"
     "  %0 = mo.softmax(%x) : " T("r, c", "f32") "\n"
     "  %1 = mo.logsoftmax(%x) {axis = 0} : " T("r, c", "f32") "\n"
     "  %2 = mo.layer_norm(%x, %gm, %bt) {epsilon = 0.001} : (" T("r, c", "f32") ", " T("c", "f32")
     ", " T("c", "f32") ") -> " T("r, c", "f32") "\n"
     "  mo.output %0, %1, %2 : " T("r, c", "f32") ", " T("r, c", "f32") ", " T("r, c", "f32")
     "\n}\n",
     {5, 1000}},
    {"softmax f64",
     "mo.graph @g<r, c>(%x: " T("r, c", "f64") ") -> (" T("r, c", "f64") ") {\n"
     "  %0 = mo.softmax(%x) : " T("r, c", "f64") "\n"
     "  mo.output %0 : " T("r, c", "f64") "\n}\n",
     {3, 7}},
};
#define NGRAPHS (sizeof GRAPHS / sizeof GRAPHS[0])

static void check_arch(const char *arch) {
  need_ocml();
  bool lld = have_lld();
  if (!lld) test_note("ld.lld-19 not on PATH: linking the %s code objects skipped", arch);
  for (size_t i = 0; i < NGRAPHS; i++) {
    check_object(GRAPHS[i].label, GRAPHS[i].text, arch, NULL, lld);
    check_object(GRAPHS[i].label, GRAPHS[i].text, arch, GRAPHS[i].syms, false);
  }
}

Test(simt_math, gfx90a_code_objects) { check_arch("gfx90a"); }
Test(simt_math, gfx942_code_objects) { check_arch("gfx942"); }

/* ---- the module before and after O3 ---- */

/* Add one kernel per node of graph text to mod. */
static void add_kernels(LLVMContextRef ctx, LLVMModuleRef mod, const jit_simt_target *t,
                        const char *text) {
  char err[1024] = "";
  ir_graph *g = parse(text);
  for (int i = 0; i < g->nnodes; i++) {
    char name[64];
    jit_simt_kernel_name(g, i, name, sizeof name);
    jit_simt_fn sf;
    jit_simt_begin(&sf, t, ctx, mod, g, g->nodes[i], name, JIT_SIMT_BLOCK, err, sizeof err);
    cr_assert(!sf.f.failed, "%s", err);
    cr_assert_eq(jit_simt_lower_node(&sf), 0, "%s", err);
    jit_simt_finish(&sf);
    cr_assert(!sf.f.failed, "%s", err);
    jit_simt_dispose(&sf);
  }
  ir_graph_free(g);
}

/* An exported function kiln_sqrt(x) = sqrtf(x): a plain libm call, as a
 * custom kernel library compiled for amdgcn would make. */
static void add_sqrtf_caller(LLVMContextRef ctx, LLVMModuleRef mod) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
  LLVMTypeRef fty = LLVMFunctionType(f32, &f32, 1, 0);
  LLVMValueRef sq = LLVMAddFunction(mod, "sqrtf", fty);
  LLVMValueRef fn = LLVMAddFunction(mod, "kiln_sqrt", fty);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  LLVMValueRef x = LLVMGetParam(fn, 0);
  LLVMBuildRet(b, LLVMBuildCall2(b, fty, sq, &x, 1, ""));
  LLVMDisposeBuilder(b);
}

/* The oclc constant `name` in the linked module: an internal constant iN
 * in addrspace(4) of value want (-1: any, and ocml 5.2 need not declare
 * it; then it must be 1, wave64). */
static void check_oclc(LLVMModuleRef mod, const char *name, unsigned bits, long long want,
                       const char *arch) {
  LLVMValueRef g = LLVMGetNamedGlobal(mod, name);
  if (!g && want < 0) return;
  cr_assert_not_null(g, "%s: the linked ocml does not declare %s", arch, name);
  if (want < 0) want = 1;
  cr_expect(!LLVMIsDeclaration(g), "%s: %s left undefined", arch, name);
  cr_expect(LLVMIsGlobalConstant(g), "%s: %s not constant", arch, name);
  cr_expect_eq(LLVMGetLinkage(g), LLVMInternalLinkage, "%s: %s not internal", arch, name);
  cr_expect_eq(LLVMGetPointerAddressSpace(LLVMTypeOf(g)), 4, "%s: %s not in addrspace(4)", arch,
               name);
  LLVMTypeRef ty = LLVMGlobalGetValueType(g);
  cr_assert_eq(LLVMGetTypeKind(ty), LLVMIntegerTypeKind);
  cr_expect_eq(LLVMGetIntTypeWidth(ty), bits, "%s: %s is i%u", arch, name,
               LLVMGetIntTypeWidth(ty));
  LLVMValueRef v = LLVMGetInitializer(g);
  cr_assert_not_null(v);
  cr_expect_eq(LLVMConstIntGetZExtValue(v), (unsigned long long)want, "%s: %s = %llu, want %lld",
               arch, name, LLVMConstIntGetZExtValue(v), want);
}

static void check_linked(const char *arch, long long isa) {
  need_ocml();
  char err[1024] = "";
  jit_simt_target t = {.math = &rt_simt_math};
  cr_assert_eq(jit_simt_target_parse(arch, &t, err, sizeof err), 0, "%s", err);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, &t, "math", err, sizeof err);
  cr_assert_not_null(mod, "%s", err);
  add_kernels(ctx, mod, &t, GRAPHS[2].text); /* erf / tanh / log1p f32 */
  add_kernels(ctx, mod, &t, GRAPHS[4].text); /* exp / log / sin / cos f64 */
  add_sqrtf_caller(ctx, mod);
  cr_assert_eq(jit_simt_legalize_math(mod, &t, err, sizeof err), 0, "%s", err);
  /* the libm names went to ocml, which is linked and internal */
  static const char *const calls[][2] = {
      {"erff", "__ocml_erf_f32"}, {"tanhf", "__ocml_tanh_f32"}, {"log1pf", "__ocml_log1p_f32"},
      {"exp", "__ocml_exp_f64"},  {"log", "__ocml_log_f64"},    {"sin", "__ocml_sin_f64"},
      {"cos", "__ocml_cos_f64"},  {"sqrtf", "__ocml_sqrt_f32"},
  };
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    LLVMValueRef f = LLVMGetNamedFunction(mod, calls[i][0]);
    cr_expect(!f || !LLVMGetFirstUse(f), "%s: %s still called", arch, calls[i][0]);
    f = LLVMGetNamedFunction(mod, calls[i][1]);
    cr_assert_not_null(f, "%s: no %s", arch, calls[i][1]);
    cr_expect(!LLVMIsDeclaration(f), "%s: %s not linked", arch, calls[i][1]);
    cr_expect_eq(LLVMGetLinkage(f), LLVMInternalLinkage, "%s: %s not internal", arch,
                 calls[i][1]);
  }
  /* every definition but kiln's own is internal */
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    const char *name = LLVMGetValueName2(f, &(size_t){0});
    if (!LLVMIsDeclaration(f) && strncmp(name, "kiln_", 5) != 0)
      cr_expect_eq(LLVMGetLinkage(f), LLVMInternalLinkage, "%s: %s not internal", arch, name);
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
    const char *name = LLVMGetValueName2(g, &(size_t){0});
    cr_expect(!LLVMIsDeclaration(g), "%s: global %s left undefined", arch, name);
    if (strncmp(name, "__ocml", 6) == 0 || strncmp(name, "__oclc", 6) == 0)
      cr_expect_eq(LLVMGetLinkage(g), LLVMInternalLinkage, "%s: %s not internal", arch, name);
  }
  check_oclc(mod, "__oclc_ISA_version", 32, isa, arch);
  check_oclc(mod, "__oclc_finite_only_opt", 8, 0, arch);
  check_oclc(mod, "__oclc_unsafe_math_opt", 8, 0, arch);
  check_oclc(mod, "__oclc_daz_opt", 8, 0, arch);
  check_oclc(mod, "__oclc_correctly_rounded_sqrt32", 8, 1, arch);
  check_oclc(mod, "__oclc_wavefrontsize64", 8, -1, arch); /* newer ocml reads it */
  char *msg = NULL;
  cr_expect(!LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg), "%s: %s", arch, msg);
  LLVMDisposeMessage(msg);
  /* and the whole module compiles to an object with nothing undefined */
  void *obj = NULL;
  size_t len = 0;
  cr_assert_eq(jit_simt_emit(mod, &t, &obj, &len, err, sizeof err), 0, "%s: %s", arch, err);
  elf_syms s;
  cr_expect(elf_defines(obj, len, "kiln_sqrt", &s), "%s: kiln_sqrt not in the object", arch);
  cr_expect_eq(s.undefined, 0, "%s: undefined symbol %s", arch, s.first ? s.first : "?");
  free(obj);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
}

Test(simt_math, gfx90a_links_ocml_and_defines_oclc) { check_linked("gfx90a", 9010); }
Test(simt_math, gfx942_links_ocml_and_defines_oclc) { check_linked("gfx942", 9402); }

/* After O3: nothing left to resolve, no oclc constant, ocml only internal. */
Test(simt_math, optimized_ir_is_self_contained) {
  need_ocml();
  for (size_t i = 0; i < NGRAPHS; i++) {
    char err[2048] = "";
    jit_simt_target t = {.math = &rt_simt_math};
    cr_assert_eq(jit_simt_target_parse("gfx90a", &t, err, sizeof err), 0);
    ir_graph *g = parse(GRAPHS[i].text);
    void *out = NULL;
    size_t len = 0;
    cr_assert_eq(jit_simt_compile_graph(g, &t, NULL, NULL, -1, true, &out, &len, err, sizeof err),
                 0, "%s: %s", GRAPHS[i].label, err);
    const char *ir = out;
    for (const char *p = strstr(ir, "\ndeclare "); p; p = strstr(p + 1, "\ndeclare ")) {
      const char *at = strchr(p, '@');
      cr_expect(at && strncmp(at, "@llvm.", 6) == 0, "%s: the module declares %.60s",
                GRAPHS[i].label, at ? at : p);
    }
    for (const char *p = strstr(ir, "\ndefine "); p; p = strstr(p + 1, "\ndefine ")) {
      const char *eol = strchr(p + 1, '\n');
      const char *at = strchr(p, '@');
      bool kernel = at && strncmp(at, "@kiln_", 6) == 0;
      cr_expect(kernel || (strstr(p, " internal ") && strstr(p, " internal ") < eol),
                "%s: not internal: %.80s", GRAPHS[i].label, p + 1);
    }
    cr_expect(!strstr(ir, "@__oclc_"), "%s: an oclc constant survived O3", GRAPHS[i].label);
    free(out);
    ir_graph_free(g);
  }
}

/* ---- errors ---- */

static const char *GELU = GRAPH1("f32", UNARY1("gelu", "f32"), "%0", T("n", "f32"));

static int compile_gfx90a(const char *text, char *err, size_t errlen) {
  jit_simt_target t = {.math = &rt_simt_math};
  jit_simt_target_parse("gfx90a", &t, err, errlen);
  ir_graph *g = parse(text);
  void *out = NULL;
  size_t len = 0;
  int rc = jit_simt_compile_graph(g, &t, NULL, NULL, -1, false, &out, &len, err, errlen);
  free(out);
  ir_graph_free(g);
  return rc;
}

Test(simt_math, missing_ocml_is_a_clear_error) {
  setenv("KILN_OCML", "/nonexistent/kiln-test/ocml.bc", 1); /* this test's process only */
  char err[2048] = "";
  cr_assert_eq(compile_gfx90a(GELU, err, sizeof err), -1, "compiled without ocml");
  cr_expect(strstr(err, "/nonexistent/kiln-test/ocml.bc"), "path not named: %s", err);
  cr_expect(strstr(err, "KILN_OCML"), "variable not named: %s", err);
  cr_expect(strstr(err, "rocm-device-libs"), "package not named: %s", err);
  cr_expect(strstr(err, "erff") && strstr(err, "gfx90a"), "call / arch not named: %s", err);
}

Test(simt_math, ocml_that_is_not_bitcode_is_a_clear_error) {
  char path[] = "/tmp/kiln-test-ocml-XXXXXX.bc";
  int fd = mkstemps(path, 3);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, "not bitcode\n", 12), 12);
  close(fd);
  setenv("KILN_OCML", path, 1);
  char err[2048] = "";
  int rc = compile_gfx90a(GELU, err, sizeof err); /* LLVM must not print and exit */
  unlink(path);
  cr_assert_eq(rc, -1, "compiled with a bad ocml");
  cr_expect(strstr(err, path) && strstr(err, "bitcode"), "%s", err);
}

/* A resolver of the test's own: ocml.bc read here, labelled "test:ocml". */
typedef struct test_math {
  const char *path; /* ocml.bc, found before the test hides KILN_OCML */
  int calls;
} test_math;

static int test_find(void *ud, const jit_simt_target *t, const char *needs, jit_simt_mathlib *lib,
                     char *err, size_t errlen) {
  test_math *tm = ud;
  tm->calls++;
  const char *path = tm->path;
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f) {
    snprintf(err, errlen, "%s: the test has no ocml.bc", needs);
    return -1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  lib->data = n > 0 ? malloc((size_t)n) : NULL;
  lib->len = lib->data && fread(lib->data, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
  fclose(f);
  snprintf(lib->label, sizeof lib->label, "test:ocml for %s", t->arch);
  lib->hint = "a test resolver";
  return 0;
}

/* The library is what the resolver hands over, asked once per compile that
 * needs it and never for one that does not; jit/ looks at no variable or
 * file itself. */
Test(simt_math, the_library_comes_from_the_resolver) {
  need_ocml();
  test_math tm = {ocml_file(), 0};
  jit_simt_math math = {&tm, test_find};
  setenv("KILN_OCML", "/nonexistent/kiln-test/ocml.bc", 1); /* not read by jit/ */
  char err[2048] = "";
  jit_simt_target t = {.math = &math};
  cr_assert_eq(jit_simt_target_parse("gfx90a", &t, err, sizeof err), 0);
  cr_assert(t.math == &math, "parsing changed the resolver");
  ir_graph *g = parse(GELU);
  void *out = NULL;
  size_t len = 0;
  cr_expect_eq(jit_simt_compile_graph(g, &t, NULL, NULL, -1, false, &out, &len, err, sizeof err),
               0, "%s", err);
  cr_expect_eq(tm.calls, 1);
  free(out);
  ir_graph_free(g);
  const char *plain = GRAPH1("f32", UNARY1("relu", "f32"), "%0", T("n", "f32"));
  g = parse(plain);
  cr_expect_eq(jit_simt_compile_graph(g, &t, NULL, NULL, -1, false, &out, &len, err, sizeof err),
               0, "%s", err);
  cr_expect_eq(tm.calls, 1, "asked for a library a kernel does not need");
  free(out);
  ir_graph_free(g);
}

/* A target with no resolver compiles what needs no library and names the
 * call and the library for what does. */
Test(simt_math, no_resolver_is_a_clear_error) {
  char err[2048] = "";
  jit_simt_target t = {0};
  cr_assert_eq(jit_simt_target_parse("gfx90a", &t, err, sizeof err), 0);
  ir_graph *g = parse(GELU);
  void *out = NULL;
  size_t len = 0;
  cr_expect_eq(jit_simt_compile_graph(g, &t, NULL, NULL, -1, false, &out, &len, err, sizeof err),
               -1);
  cr_expect(strstr(err, "erff") && strstr(err, "ROCm's ocml") && strstr(err, "gfx90a"), "%s",
            err);
  free(out);
  ir_graph_free(g);
}

/* Kernels whose math the backend lowers itself (f32 exp, log, sqrt) need no
 * ocml at all. */
Test(simt_math, no_library_needed_without_library_calls) {
  setenv("KILN_OCML", "/nonexistent/kiln-test/ocml.bc", 1);
  char err[2048] = "";
  const char *text = GRAPH1("f32",
                            "  %0 = mo.exp(%x) : " T("n", "f32") "\n"
                            "  %1 = mo.log(%0) : " T("n", "f32") "\n"
                            "  %2 = mo.sigmoid(%1) : " T("n", "f32") "\n"
                            "  %3 = mo.rsqrt(%2) : " T("n", "f32") "\n",
                            "%3", T("n", "f32"));
  cr_expect_eq(compile_gfx90a(text, err, sizeof err), 0, "%s", err);
}

/* What ocml does not have stays a clear error: a libm-like call it lacks,
 * and a global that nothing defines (as an oclc constant of a newer ocml). */
Test(simt_math, what_ocml_lacks_is_named) {
  need_ocml();
  char err[1024] = "";
  jit_simt_target t = {.math = &rt_simt_math};
  cr_assert_eq(jit_simt_target_parse("gfx942", &t, err, sizeof err), 0);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = jit_simt_module_new(ctx, &t, "lacks", err, sizeof err);
  cr_assert_not_null(mod, "%s", err);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx), i8 = LLVMInt8TypeInContext(ctx);
  LLVMTypeRef fty = LLVMFunctionType(f32, &f32, 1, 0);
  LLVMValueRef odd = LLVMAddFunction(mod, "kiln_test_no_such_mathf", fty);
  LLVMValueRef flag = LLVMAddGlobalInAddressSpace(mod, i8, "__oclc_kiln_test_flag", 4);
  LLVMValueRef fn = LLVMAddFunction(mod, "kiln_user", fty);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
  LLVMValueRef x = LLVMGetParam(fn, 0);
  LLVMValueRef y = LLVMBuildCall2(b, fty, odd, &x, 1, "");
  LLVMValueRef c = LLVMBuildUIToFP(b, LLVMBuildLoad2(b, i8, flag, ""), f32, "");
  LLVMBuildRet(b, LLVMBuildFAdd(b, y, c, ""));
  LLVMDisposeBuilder(b);
  cr_assert_eq(jit_simt_legalize_math(mod, &t, err, sizeof err), 0, "%s", err);
  cr_expect_eq(jit_simt_check_externals(mod, &t, err, sizeof err), -1);
  cr_expect(strstr(err, "kiln_test_no_such_mathf") && strstr(err, "ocml"), "%s", err);
  LLVMDeleteFunction(LLVMGetNamedFunction(mod, "kiln_user"));
  LLVMValueRef user = LLVMAddFunction(mod, "kiln_user2", LLVMFunctionType(f32, NULL, 0, 0));
  b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, user, "entry"));
  LLVMBuildRet(b, LLVMBuildUIToFP(b, LLVMBuildLoad2(b, i8, flag, ""), f32, ""));
  LLVMDisposeBuilder(b);
  err[0] = 0;
  cr_expect_eq(jit_simt_check_externals(mod, &t, err, sizeof err), -1);
  cr_expect(strstr(err, "__oclc_kiln_test_flag") && strstr(err, "gfx942"), "%s", err);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
}
