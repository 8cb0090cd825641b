/* test_pipeline.c - one pipeline for every user of the compiler
 * (src/pipeline.c): `kiln compile --emit llvm` prints exactly the kernels
 * `kiln run` compiles for the same graph and dims (their cache keys are
 * the entries the run leaves in an empty disk cache), generic and
 * specialized; `kiln cache warm` names the same keys; device models run
 * the prepared graph: reshapes share their operand's buffer (fewer
 * kernels than nodes) and executes of one binding build one plan. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/device.h"
#include "../src/rt.h"
#include "../src/variants.h"
#include "kiln/kiln.h"
#include "support/shell.h"

#define EX KILN_SHARED_DIR "/ir-examples/"
#define MAXK 64

typedef struct keyset {
  char k[MAXK][33];
  int n;
} keyset;

static void add_key(keyset *s, const char *hex) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->k[i], hex)) return;
  cr_assert_lt(s->n, MAXK);
  snprintf(s->k[s->n++], 33, "%s", hex);
}

/* Every "kiln_k_<32 hex>" in the header lines of compile output. */
static keyset compile_keys(const char *out) {
  keyset s = {.n = 0};
  for (const char *p = out; (p = strstr(p, "; ---- kernel kiln_k_")); p++) {
    char hex[33];
    memcpy(hex, p + strlen("; ---- kernel kiln_k_"), 32);
    hex[32] = 0;
    add_key(&s, hex);
  }
  return s;
}

/* The keys in a disk cache directory: DIR/ab/<32 hex>.kc */
static keyset dir_keys(const char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cd %s && ls */*.kc 2>/dev/null", dir);
  char *out = NULL;
  shell_capture(cmd, &out);
  keyset s = {.n = 0};
  for (char *line = strtok(out ? out : (char[]){0}, "\n"); line; line = strtok(NULL, "\n")) {
    const char *slash = strchr(line, '/');
    if (slash && strlen(slash + 1) >= 35) {
      char hex[33];
      memcpy(hex, slash + 1, 32);
      hex[32] = 0;
      add_key(&s, hex);
    }
  }
  free(out);
  return s;
}

static bool same(const keyset *a, const keyset *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++) {
    bool found = false;
    for (int j = 0; j < b->n && !found; j++) found = !strcmp(a->k[i], b->k[j]);
    if (!found) return false;
  }
  return true;
}

static char *sh(const char *fmt, const char *a, const char *b, int *rc) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, a, b);
  char *out = NULL;
  *rc = shell_capture(cmd, &out);
  return out;
}

/* compile's keys == the entries kiln run leaves in an empty cache. */
static void check_graph(const char *graph, const char *dims, const char *spec) {
  char dir[] = "/tmp/kiln-pipe-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char args[512];
  snprintf(args, sizeof args, "%s %s --specialize %s", graph, dims, spec);
  int rc;
  char *out = sh("env -u KILN_CACHE KILN_CACHE_DIR=%s " KILN_CLI " run %s --random-inputs >/dev/null 2>&1", dir,
                 args, &rc);
  free(out);
  cr_assert_eq(rc, 0, "kiln run %s failed", args);
  keyset ran = dir_keys(dir);
  /* generic kernels (what --specialize off runs), plus, with sync, the
   * binding's specialized ones */
  out = sh(KILN_CLI " compile %s --target host --emit llvm %s 2>&1", graph, "", &rc);
  cr_assert_eq(rc, 0, "%s", out);
  keyset want = compile_keys(out);
  free(out);
  if (!strcmp(spec, "sync")) {
    out = sh(KILN_CLI " compile %s --target host --emit llvm %s 2>&1", graph, dims, &rc);
    cr_assert_eq(rc, 0, "%s", out);
    keyset bound = compile_keys(out);
    free(out);
    for (int i = 0; i < bound.n; i++) add_key(&want, bound.k[i]);
  }
  cr_expect_gt(want.n, 0);
  cr_expect(same(&want, &ran), "%s %s: kiln compile names %d kernels, kiln run compiled %d",
            graph, dims, want.n, ran.n);
  char rm[600];
  snprintf(rm, sizeof rm, "rm -rf %s", dir);
  cr_assert_eq(system(rm), 0);
}

Test(pipeline, compile_prints_the_kernels_run_runs_generic) {
  check_graph(EX "mlp.mlir", "--dim batch=3", "off");
  check_graph(EX "attention_block.mlir", "--dim batch=2 --dim seq=5", "off");
  check_graph(EX "split_concat.mlir", "--dim n=3", "off");
}

Test(pipeline, compile_prints_the_kernels_run_runs_specialized) {
  check_graph(EX "mlp.mlir", "--dim batch=3", "sync");
  check_graph(EX "attention_block.mlir", "--dim batch=2 --dim seq=5", "sync");
}

Test(pipeline, cache_warm_names_the_same_keys) {
  char dir[] = "/tmp/kiln-pipe-warm-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  int rc;
  char *out = sh("env -u KILN_CACHE KILN_CACHE_DIR=%s " KILN_CLI " cache warm %s --dim batch=3 >/dev/null 2>&1", dir,
                 EX "mlp.mlir", &rc);
  free(out);
  cr_assert_eq(rc, 0);
  keyset warmed = dir_keys(dir);
  out = sh(KILN_CLI " compile %s --target host --emit llvm %s 2>&1", EX "mlp.mlir", "", &rc);
  keyset generic = compile_keys(out);
  free(out);
  out = sh(KILN_CLI " compile %s --target host --emit llvm %s 2>&1", EX "mlp.mlir",
           "--dim batch=3", &rc);
  keyset bound = compile_keys(out);
  free(out);
  for (int i = 0; i < bound.n; i++) add_key(&generic, bound.k[i]);
  cr_expect(same(&generic, &warmed), "warm stored %d kernels, compile names %d", warmed.n,
            generic.n);
  char rm[600];
  snprintf(rm, sizeof rm, "rm -rf %s", dir);
  cr_assert_eq(system(rm), 0);
}

/* A reshape between two kernels on simt-emu: it runs no kernel (its result
 * is its operand's buffer), and the answers are the CPU's. */
static const char *RESHAPE_GRAPH =
    "mo.graph @r<n>(%x: !mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 2, 2], f32>) {\n"
    "  %a = mo.exp(%x) : !mo.tensor<[n, 4], f32>\n"
    "  %b = mo.reshape(%a) : !mo.tensor<[n, 2, 2], f32>\n"
    "  %c = mo.negate(%b) : !mo.tensor<[n, 2, 2], f32>\n"
    "  mo.output %c : !mo.tensor<[n, 2, 2], f32>\n}\n";

Test(pipeline, device_model_aliases_reshapes_and_keeps_its_plan) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(RESHAPE_GRAPH, strlen(RESHAPE_GRAPH), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device *d = kiln_device_open("simt-emu", st);
  cr_assert_not_null(d, "%s", kiln_status_message(st));
  kiln_device_model *dm = kiln_device_model_compile(d, g, st);
  cr_assert_not_null(dm, "%s", kiln_status_message(st));
  /* exp and negate fuse when SIMT takes fused nodes; the reshape never
   * runs a kernel */
  cr_expect_leq(rt_device_model_kernels(dm), 2);
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *cm = kiln_model_compile(ctx, g, st);
  cr_assert_not_null(cm, "%s", kiln_status_message(st));
  for (int n = 1; n <= 3; n++) {
    int64_t shape[2] = {n, 4};
    kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
    float *xd = (float *)kiln_tensor_data(x);
    for (int i = 0; i < n * 4; i++) xd[i] = (float)i * 0.25f - 1.0f;
    for (int rep = 0; rep < 3; rep++) {
      kiln_tensor *dy = NULL, *cy = NULL;
      cr_assert_eq(kiln_device_model_execute(dm, &x, 1, &dy, 1, st), 0, "%s",
                   kiln_status_message(st));
      cr_assert_eq(kiln_model_execute(cm, &x, 1, &cy, 1, st), 0, "%s", kiln_status_message(st));
      const float *a = (const float *)kiln_tensor_data(dy), *b = (const float *)kiln_tensor_data(cy);
      for (int i = 0; i < n * 4; i++) cr_expect_float_eq(a[i], b[i], 1e-6f, "n=%d i=%d", n, i);
      kiln_tensor_free(dy);
      kiln_tensor_free(cy);
    }
    kiln_tensor_free(x);
    /* one plan per binding, however many executes */
    cr_expect_eq(rt_device_model_plan_builds(dm), n);
  }
  kiln_model_free(cm);
  kiln_context_free(ctx);
  kiln_device_model_free(dm);
  kiln_device_close(d);
  kiln_graph_free(g);
  kiln_status_free(st);
}

/* Under the sync policy a device model compiles each new binding's kernels
 * with the dims as constants; the answers stay the generic ones'. */
Test(pipeline, device_model_specializes_under_sync) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(RESHAPE_GRAPH, strlen(RESHAPE_GRAPH), NULL, st);
  cr_assert_not_null(g, "%s", kiln_status_message(st));
  kiln_device *d = kiln_device_open("simt-emu", st);
  kiln_context *gctx = kiln_context_new(st), *sctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_specialize(gctx, KILN_SPECIALIZE_OFF, st), 0);
  cr_assert_eq(kiln_context_set_specialize(sctx, KILN_SPECIALIZE_SYNC, st), 0);
  kiln_device_model *gm = kiln_device_model_compile_with(gctx, d, g, st);
  kiln_device_model *sm = kiln_device_model_compile_with(sctx, d, g, st);
  cr_assert(gm && sm, "%s", kiln_status_message(st));
  for (int n = 1; n <= 3; n++) {
    int64_t shape[2] = {n, 4};
    kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, shape, st);
    float *xd = (float *)kiln_tensor_data(x);
    for (int i = 0; i < n * 4; i++) xd[i] = (float)i * 0.5f - 2.0f;
    kiln_tensor *gy = NULL, *sy = NULL;
    cr_assert_eq(kiln_device_model_execute(gm, &x, 1, &gy, 1, st), 0, "%s", kiln_status_message(st));
    cr_assert_eq(kiln_device_model_execute(sm, &x, 1, &sy, 1, st), 0, "%s", kiln_status_message(st));
    cr_expect_eq(memcmp(kiln_tensor_data(gy), kiln_tensor_data(sy), kiln_tensor_nbytes(gy)), 0,
                 "n=%d", n);
    kiln_tensor_free(x);
    kiln_tensor_free(gy);
    kiln_tensor_free(sy);
  }
  cr_expect_eq(rt_model_num_specialized(gm), 0);
  cr_expect_eq(rt_model_num_specialized(sm), 3);
  kiln_device_model_free(gm);
  kiln_device_model_free(sm);
  kiln_context_free(gctx);
  kiln_context_free(sctx);
  kiln_device_close(d);
  kiln_graph_free(g);
  kiln_status_free(st);
}
