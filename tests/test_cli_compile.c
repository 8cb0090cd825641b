/* test_cli_compile.c - `kiln compile` and `kiln devices` from the shell:
 * PTX for the example graphs (assembled by ptxas when it is on PATH), AMDGPU
 * code objects (ELF machine AMDGPU, a shared object), host LLVM IR with and
 * without --dim (specialized kernels have no symbol loads), device math
 * (libdevice on nvptx, ROCm's ocml on amdgpu; a clear error without them),
 * a buffer graph (its store.slice a kernel), and the usage errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/note.h"
#include "support/shell.h"

#define EX KILN_SHARED_DIR "/ir-examples/"

static char *run(const char *args, int *rc) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", KILN_CLI, args);
  char *out = NULL;
  *rc = shell_capture(cmd, &out);
  return out;
}

static bool have(const char *tool) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* A graph whose kernel needs a math library on a GPU (gelu calls erff). */
static const char *gelu_graph(void) {
  static char path[] = "/tmp/kiln-test-gelu-XXXXXX.mlir";
  static bool made;
  if (!made) {
    int fd = mkstemps(path, 5);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs("mo.graph @g<n>(%x: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {\n"
          "  %0 = mo.gelu(%x) : !mo.tensor<[n], f32>\n"
          "  mo.output %0 : !mo.tensor<[n], f32>\n}\n",
          f);
    fclose(f);
    made = true;
  }
  return path;
}

static bool libdevice_here(void) {
  const char *env = getenv("KILN_LIBDEVICE");
  FILE *f = fopen(env && *env ? env : "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc", "rb");
  if (f) fclose(f);
  return f != NULL;
}

static bool ocml_here(void) {
  const char *env = getenv("KILN_OCML");
  if (env && *env) return access(env, R_OK) == 0;
  return access("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ocml.bc", R_OK) == 0 ||
         access("/opt/rocm/amdgcn/bitcode/ocml.bc", R_OK) == 0;
}

Test(cli_compile, ptx_for_the_examples) {
  char gelu[300];
  snprintf(gelu, sizeof gelu, "%s", gelu_graph());
  const char *graphs[] = {EX "mlp.mlir", EX "attention_block.mlir", EX "split_concat.mlir",
                          EX "relu.mlir", gelu};
  for (int i = 0; i < 5; i++) {
    for (int a = 0; a < 2; a++) {
      const char *arch = a ? "sm_90" : "sm_80";
      char args[1024], path[256];
      snprintf(path, sizeof path, "/tmp/kiln-test-compile-%d-%s.ptx", i, arch);
      snprintf(args, sizeof args, "compile %s --target %s -o %s", graphs[i], arch, path);
      int rc;
      char *out = run(args, &rc);
      bool needs_math = graphs[i] == gelu; /* erff: libdevice */
      if (needs_math && !libdevice_here()) {
        cr_expect_eq(rc, 1, "%s", out);
        cr_expect(strstr(out, "libdevice") && strstr(out, "KILN_LIBDEVICE"), "%s", out);
        free(out);
        continue;
      }
      cr_expect_eq(rc, 0, "%s %s: %s", graphs[i], arch, out);
      free(out);
      if (rc != 0) continue;
      if (have("ptxas")) {
        snprintf(args, sizeof args, "ptxas -arch=%s %s -o /dev/null 2>&1", arch, path);
        out = NULL;
        cr_expect_eq(shell_capture(args, &out), 0, "ptxas: %s", out);
        free(out);
      } else {
        test_note("ptxas not on PATH: assembling %s for %s skipped", graphs[i], arch);
      }
      remove(path);
    }
  }
  remove(gelu);
}

/* A graph with buffers: mo.mutable.store.slice is a kernel beside the
 * others; the chain, the load and the store are the runtime's copies. */
Test(cli_compile, a_buffer_graph_has_a_store_slice_kernel) {
  static const char text[] =
      "mo.graph @kv<n>(%cache: !mo.buffer<[2, 8, 3], f32>, %new: !mo.tensor<[2, n, 3], f32>, "
      "%start: !mo.tensor<[3], si64>) -> (!mo.tensor<[2, 8, 3], f32>) {\n"
      "  %c0 = mo.chain.create() : !mo.chain\n"
      "  %c1 = mo.mutable.store.slice(%cache, %new, %start, %c0) : (!mo.buffer<[2, 8, 3], f32>, "
      "!mo.tensor<[2, n, 3], f32>, !mo.tensor<[3], si64>, !mo.chain) -> !mo.chain\n"
      "  %all, %c2 = mo.mutable.load(%cache, %c1) : (!mo.buffer<[2, 8, 3], f32>, !mo.chain) -> "
      "(!mo.tensor<[2, 8, 3], f32>, !mo.chain)\n"
      "  %y = mo.exp(%all) : !mo.tensor<[2, 8, 3], f32>\n"
      "  mo.output %y : !mo.tensor<[2, 8, 3], f32>\n}\n";
  char graph[] = "/tmp/kiln-test-kv-XXXXXX.mlir", args[512], *out;
  int fd = mkstemps(graph, 5), rc;
  cr_assert(fd >= 0 && write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
  close(fd);
  const char *ptx = "/tmp/kiln-test-compile-kv.ptx";
  snprintf(args, sizeof args, "compile %s --target sm_80 -o %s", graph, ptx);
  out = run(args, &rc);
  cr_expect_eq(rc, 0, "%s", out);
  free(out);
  snprintf(args, sizeof args, "grep -c '.entry kiln_' %s; grep -o 'kiln_[0-9]_[a-z_]*(' %s", ptx,
           ptx);
  out = NULL;
  shell_capture(args, &out);
  cr_expect(strstr(out, "2\n") && strstr(out, "kiln_1_mutable_store_slice(") &&
                strstr(out, "kiln_3_exp("),
            "%s", out);
  free(out);
  if (have("ptxas")) {
    snprintf(args, sizeof args, "ptxas -arch=sm_80 %s -o /dev/null 2>&1", ptx);
    out = NULL;
    cr_expect_eq(shell_capture(args, &out), 0, "ptxas: %s", out);
    free(out);
  }
  remove(ptx);
  remove(graph);
}

Test(cli_compile, amdgpu_code_object) {
  int rc;
  char *out = run("compile " EX "mlp.mlir --target gfx942 -o /tmp/kiln-test-mlp.hsaco", &rc);
  if (!have("ld.lld-19") && !have("ld.lld")) {
    cr_expect_eq(rc, 1);
    cr_expect(strstr(out, "KILN_LLD"), "%s", out);
    free(out);
    return;
  }
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  FILE *f = fopen("/tmp/kiln-test-mlp.hsaco", "rb");
  cr_assert_not_null(f);
  unsigned char h[64];
  cr_assert_eq(fread(h, 1, 64, f), 64);
  fclose(f);
  cr_expect(memcmp(h, "\177ELF", 4) == 0);
  cr_expect_eq(h[16], 3, "e_type %d (want ET_DYN)", h[16]);  /* little endian */
  cr_expect_eq(h[18] | h[19] << 8, 224, "e_machine (want EM_AMDGPU)");
  remove("/tmp/kiln-test-mlp.hsaco");
  /* erff comes from ROCm's ocml: a code object when it is installed, else a
   * clear error naming the call, KILN_OCML and the package */
  char args[512];
  snprintf(args, sizeof args, "compile %s --target gfx90a -o /tmp/kiln-test-gelu.hsaco",
           gelu_graph());
  out = run(args, &rc);
  if (ocml_here()) {
    cr_expect_eq(rc, 0, "%s", out);
    f = fopen("/tmp/kiln-test-gelu.hsaco", "rb");
    cr_expect_not_null(f, "no code object for gelu");
    if (f) {
      cr_expect_eq(fread(h, 1, 64, f), 64);
      fclose(f);
      cr_expect(memcmp(h, "\177ELF", 4) == 0 && h[16] == 3 && (h[18] | h[19] << 8) == 224);
    }
    remove("/tmp/kiln-test-gelu.hsaco");
  } else {
    test_note("ROCm's ocml.bc not found: gelu on gfx90a checked for its error only");
    cr_expect_eq(rc, 1, "%s", out);
    cr_expect(strstr(out, "erff") && strstr(out, "KILN_OCML") && strstr(out, "rocm-device-libs"),
              "%s", out);
  }
  free(out);
  /* KILN_OCML naming a missing file says so */
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "KILN_OCML=/nonexistent/ocml.bc %s compile %s --target gfx942 -o "
           "/tmp/kiln-test-gelu.hsaco 2>&1",
           KILN_CLI, gelu_graph());
  out = NULL;
  rc = shell_capture(cmd, &out);
  remove(gelu_graph());
  cr_expect_eq(rc, 1, "%s", out);
  cr_expect(strstr(out, "/nonexistent/ocml.bc") && strstr(out, "KILN_OCML"), "%s", out);
  free(out);
}

Test(cli_compile, nvptx_without_libdevice_is_a_clear_error) {
  int rc;
  char *out = NULL;
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "KILN_LIBDEVICE=/nonexistent/libdevice.bc %s compile %s --target sm_80 2>&1", KILN_CLI,
           gelu_graph());
  rc = shell_capture(cmd, &out);
  remove(gelu_graph());
  cr_expect_eq(rc, 1, "%s", out);
  cr_expect(strstr(out, "/nonexistent/libdevice.bc") && strstr(out, "KILN_LIBDEVICE"), "%s", out);
  free(out);
}

Test(cli_compile, host_llvm_and_specialization) {
  int rc;
  char *gen = run("compile " EX "mlp.mlir", &rc);
  cr_assert_eq(rc, 0, "%s", gen);
  /* the kernels kiln run runs: fused, named by their cache keys */
  cr_expect(strstr(gen, "; ---- kernel kiln_k_") &&
                strstr(gen, ": graph @mlp, node 4 (mo.matmul+mo.add+mo.relu -> %2), line 8 ----"),
            "%.400s", gen);
  cr_expect(strstr(gen, "define"), "no functions");
  /* its symbolic kernels are GEMMs: --dim keeps them generic, as kiln run does */
  char *spec = run("compile " EX "mlp.mlir --dim batch=8", &rc);
  cr_assert_eq(rc, 0, "%s", spec);
  cr_expect(strcmp(gen, spec) == 0, "--dim changed a GEMM kernel");
  free(gen);
  free(spec);
  gen = run("compile " EX "attention_block.mlir", &rc);
  cr_assert_eq(rc, 0, "%s", gen);
  spec = run("compile " EX "attention_block.mlir --dim batch=2 --dim seq=8", &rc);
  cr_assert_eq(rc, 0, "%s", spec);
  cr_expect(strcmp(gen, spec) != 0, "--dim changed nothing");
  free(gen);
  free(spec);
  char *simt = run("compile " EX "mlp.mlir --target simt-emu --dim batch=3", &rc);
  cr_expect_eq(rc, 0, "%s", simt);
  /* the device's kernels are the prepared graph's: matmul + bias + relu fused */
  cr_expect(strstr(simt, "define void @kiln_4_fused(ptr"), "%.300s", simt);
  free(simt);
}

Test(cli_compile, usage_errors) {
  int rc;
  char *out = run("compile " EX "mlp.mlir --target sm_13", &rc);
  cr_expect_eq(rc, 2);
  cr_expect(strstr(out, "unknown SIMT target 'sm_13'"), "%s", out);
  free(out);
  out = run("compile " EX "mlp.mlir --target sm_80 --emit hsaco", &rc);
  cr_expect_eq(rc, 2);
  cr_expect(strstr(out, "not a kind for target sm_80"), "%s", out);
  free(out);
  out = run("compile " EX "mlp.mlir --target gfx90a", &rc);
  cr_expect_eq(rc, 2);
  cr_expect(strstr(out, "needs -o FILE"), "%s", out);
  free(out);
  out = run("compile " EX "mlp.mlir --dim seq=3", &rc);
  cr_expect_eq(rc, 1);
  cr_expect(strstr(out, "has no symbol 'seq'"), "%s", out);
  free(out);
  out = run("compile /nonexistent.mlir", &rc);
  cr_expect_eq(rc, 1);
  cr_expect(strstr(out, "/nonexistent.mlir"), "%s", out);
  free(out);
}

Test(cli_compile, devices_lists_every_kind) {
  int rc;
  char *out = run("devices", &rc);
  cr_expect_eq(rc, 0, "%s", out);
  cr_expect(strstr(out, "cpu "), "%s", out);
  cr_expect(strstr(out, "simt-emu "), "%s", out);
  cr_expect(strstr(out, "cuda"), "%s", out);
  cr_expect(strstr(out, "hip"), "%s", out);
  free(out);
}
