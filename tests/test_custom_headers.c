/* test_custom_headers.c - headers a C kernel library includes are part of
 * its identity (kernel_cc.c): editing one is seen by the same context and
 * by a fresh one on the disk cache, and changes the kiln.library stamp; a
 * deleted header is clang's error naming it, not a stale hit; headers
 * included from headers, in other directories and through a macro are
 * followed; a corrupted disk entry is compiled again; a warm load with
 * unchanged headers runs no compiler. Files go to a fresh temporary
 * directory per test. */
#define _GNU_SOURCE /* nftw */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/ir.h"
#include "kiln/kiln.h"
#include "src/rt.h"

#define T(r) "!mo.tensor<[" r "], f32>"
#define SCALE_GRAPH                                                          \
  "mo.graph @s<n>(%x: " T("n") ") -> (" T("n") ") {\n"                       \
  "  %y = mo.custom(%x) {symbol = \"scale\"} : (" T("n") ") -> " T("n") "\n" \
  "  mo.output %y : " T("n") "\n"                                            \
  "}\n"

/* The kernel multiplies by SCALE, which the header it includes defines. */
#define KERNEL_C(include)                                                  \
  "#include <kiln/kernel.h>\n" include                                     \
  "KILN_KERNEL(scale, 1, 1)\n"                                             \
  "int32_t scale(const kiln_kernel_args *a) {\n"                           \
  "  const float *x = a->inputs[0].data; float *y = a->outputs[0].data;\n" \
  "  for (int64_t i = 0; i < a->inputs[0].dims[0]; i++) y[i] = x[i] * SCALE;\n" \
  "  return 0;\n"                                                          \
  "}\n"

static char dir[256], cache[300];
static kiln_status *st;

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/kiln-test-headers-XXXXXX");
  cr_assert(mkdtemp(dir));
  snprintf(cache, sizeof cache, "%s/cache", dir);
  st = kiln_status_new();
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

static void teardown(void) {
  unsetenv("KILN_CLANG");
  unsetenv("CPATH");
  kiln_status_free(st);
  cr_expect_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

TestSuite(custom_headers, .init = setup, .fini = teardown, .timeout = 300);

/* dir/name with text (subdirectories made); its path in a static buffer. */
static const char *put_file(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = 0;
    mkdir(path, 0755);
    *s = '/';
  }
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
  return path;
}

static const char *path_of(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

/* A context (with the disk cache under dir when disk is set). */
static kiln_context *new_context(bool disk) {
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st), 0);
  if (disk)
    cr_assert_eq(kiln_context_set_cache_dir(ctx, cache, 0, st), 0, "%s", kiln_status_message(st));
  return ctx;
}

/* Add dir/k.c to ctx, compile the graph, run it on 1.5s: the result; the
 * node's kiln.library stamp into hash. */
static float load_and_run(kiln_context *ctx, char hash[40]) {
  cr_assert_eq(kiln_context_add_kernel_library(ctx, path_of("k.c"), st), 0, "%s",
               kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(SCALE_GRAPH, strlen(SCALE_GRAPH), NULL, st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_graph_free(g);
  cr_assert(m, "%s", kiln_status_message(st));
  const char *h = ir_node_attr_string(m->g->nodes[0], "kiln.library", "");
  cr_assert(strncmp(h, "c-", 2) == 0, "no library stamp: '%s'", h);
  if (hash) snprintf(hash, 40, "%s", h);
  int64_t s[1] = {4};
  float data[4] = {1.5f, 1.5f, 1.5f, 1.5f};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 1, s, data, st), *out[1] = {NULL};
  cr_assert_eq(kiln_model_execute(m, &x, 1, out, 1, st), 0, "%s", kiln_status_message(st));
  float r = ((float *)kiln_tensor_data(out[0]))[3];
  kiln_tensor_free(out[0]);
  kiln_tensor_free(x);
  kiln_model_free(m);
  return r;
}

/* A fresh context on the disk cache: the result and the stamp. */
static float fresh_run(char hash[40]) {
  kiln_context *ctx = new_context(true);
  float r = load_and_run(ctx, hash);
  kiln_context_free(ctx);
  return r;
}

Test(custom_headers, editing_a_header_is_seen_by_the_same_context) {
  put_file("k.c", KERNEL_C("#include \"scale.h\"\n"));
  put_file("scale.h", "#define SCALE 2.0f\n");
  kiln_context *ctx = new_context(false);
  char h2[40], h3[40], again[40];
  cr_assert_float_eq(load_and_run(ctx, h2), 3.0f, 1e-6);
  put_file("scale.h", "#define SCALE 3.0f\n"); /* k.c unchanged */
  cr_assert_float_eq(load_and_run(ctx, h3), 4.5f, 1e-6, "stale code: the old header's kernel ran");
  cr_assert_str_neq(h2, h3, "the library hash does not cover the header");
  put_file("scale.h", "#define SCALE 2.0f\n"); /* back: the first hash again (memory cache) */
  cr_assert_float_eq(load_and_run(ctx, again), 3.0f, 1e-6);
  cr_assert_str_eq(again, h2);
  kiln_context_free(ctx);
}

Test(custom_headers, editing_a_header_is_seen_through_the_disk_cache) {
  put_file("k.c", KERNEL_C("#include \"scale.h\"\n"));
  put_file("scale.h", "#define SCALE 2.0f\n");
  char h2[40], h3[40], again[40];
  cr_assert_float_eq(fresh_run(h2), 3.0f, 1e-6);
  put_file("scale.h", "#define SCALE 3.0f\n");
  cr_assert_float_eq(fresh_run(h3), 4.5f, 1e-6, "stale code from the disk cache");
  cr_assert_str_neq(h2, h3);
  put_file("scale.h", "#define SCALE 2.0f\n");
  cr_assert_float_eq(fresh_run(again), 3.0f, 1e-6);
  cr_assert_str_eq(again, h2);
}

Test(custom_headers, a_deleted_header_is_a_compile_error_naming_it) {
  put_file("k.c", KERNEL_C("#include \"scale.h\"\n"));
  put_file("scale.h", "#define SCALE 2.0f\n");
  cr_assert_float_eq(fresh_run(NULL), 3.0f, 1e-6);
  cr_assert_eq(unlink(path_of("scale.h")), 0);
  kiln_context *ctx = new_context(true);
  cr_assert_neq(kiln_context_add_kernel_library(ctx, path_of("k.c"), st), 0,
                "a stale hit: the header is gone");
  cr_assert_eq(kiln_status_code(st), KILN_ERR_COMPILE, "%s", kiln_status_message(st));
  cr_assert(strstr(kiln_status_message(st), "'scale.h' file not found"), "%s",
            kiln_status_message(st));
  kiln_context_free(ctx);
}

/* A header including a header beside it, in a subdirectory; a header
 * from $CPATH; one named through a macro (clang lists the files then). */
Test(custom_headers, headers_of_headers_cpath_and_macro_includes_are_followed) {
  put_file("k.c", KERNEL_C("#include \"sub/a.h\"\n#include <extra.h>\n"
                           "#define HDR \"last.h\"\n#include HDR\n"));
  put_file("sub/a.h", "#include \"b.h\"\n");
  put_file("sub/b.h", "#define SCALE_B 2.0f\n");
  put_file("inc/extra.h", "#define SCALE_E 1.0f\n");
  put_file("last.h", "#define SCALE (SCALE_B * SCALE_E)\n");
  setenv("CPATH", path_of("inc"), 1);
  kiln_context *ctx = new_context(false);
  char h[4][40];
  cr_assert_float_eq(load_and_run(ctx, h[0]), 3.0f, 1e-6);
  put_file("sub/b.h", "#define SCALE_B 3.0f\n");
  cr_assert_float_eq(load_and_run(ctx, h[1]), 4.5f, 1e-6, "an edit two includes deep was missed");
  put_file("inc/extra.h", "#define SCALE_E 2.0f\n");
  cr_assert_float_eq(load_and_run(ctx, h[2]), 9.0f, 1e-6, "an edit in $CPATH was missed");
  put_file("last.h", "#define SCALE (SCALE_B * SCALE_E * 0.5f)\n");
  cr_assert_float_eq(load_and_run(ctx, h[3]), 4.5f, 1e-6, "an include by macro was missed");
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) cr_assert_str_neq(h[i], h[j]);
  kiln_context_free(ctx);
}

/* A header appearing earlier in the search order shadows the old one. */
Test(custom_headers, a_header_that_appears_earlier_in_the_search_is_seen) {
  put_file("sub/k.h", "#include \"scale.h\"\n");
  put_file("scale.h", "#define SCALE 2.0f\n");
  put_file("k.c", KERNEL_C("#include \"sub/k.h\"\n"));
  kiln_context *ctx = new_context(false);
  cr_assert_float_eq(load_and_run(ctx, NULL), 3.0f, 1e-6);
  put_file("sub/scale.h", "#define SCALE 4.0f\n"); /* sub/k.h's own directory comes first */
  cr_assert_float_eq(load_and_run(ctx, NULL), 6.0f, 1e-6);
  kiln_context_free(ctx);
}

static void corrupt(const char *path) {
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  fputs("not bitcode", f);
  fclose(f);
}

Test(custom_headers, a_corrupted_disk_entry_is_compiled_again) {
  put_file("k.c", KERNEL_C("#include \"scale.h\"\n"));
  put_file("scale.h", "#define SCALE 2.0f\n");
  char h[40], again[40];
  cr_assert_float_eq(fresh_run(h), 3.0f, 1e-6);
  char bc[512];
  snprintf(bc, sizeof bc, "%s/libs/%s.bc", cache, h + 2);
  struct stat sb;
  cr_assert_eq(stat(bc, &sb), 0, "no disk entry %s", bc);
  corrupt(bc);
  cr_assert_float_eq(fresh_run(again), 3.0f, 1e-6);
  cr_assert_str_eq(again, h);
  cr_assert_eq(stat(bc, &sb), 0);
  cr_assert_gt(sb.st_size, 100, "the entry was not written again");
}

static int lines_in(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int n = 0, c;
  while ((c = fgetc(f)) != EOF) n += c == '\n';
  fclose(f);
  return n;
}

/* KILN_CLANG: a script that logs each call and runs clang 19. */
Test(custom_headers, a_warm_load_with_unchanged_headers_runs_no_compiler) {
  char script[1200];
  snprintf(script, sizeof script,
           "#!/bin/sh\necho \"$@\" >> '%s/calls.txt'\n"
           "exec \"$(command -v clang-19 || command -v clang)\" \"$@\"\n", dir);
  char clang[512];
  snprintf(clang, sizeof clang, "%s", put_file("clang-logged", script));
  cr_assert_eq(chmod(clang, 0755), 0);
  setenv("KILN_CLANG", clang, 1);
  put_file("k.c", KERNEL_C("#include \"scale.h\"\n"));
  put_file("scale.h", "#define SCALE 2.0f\n");
  char calls[512];
  snprintf(calls, sizeof calls, "%s", path_of("calls.txt")); /* path_of's buffer is reused */
  cr_assert_float_eq(fresh_run(NULL), 3.0f, 1e-6);
  int cold = lines_in(calls);
  cr_assert_gt(cold, 0, "the script did not run: %s", calls);
  cr_assert_float_eq(fresh_run(NULL), 3.0f, 1e-6);
  cr_assert_eq(lines_in(calls), cold, "a warm load ran clang");
  put_file("scale.h", "#define SCALE 3.0f\n");
  cr_assert_float_eq(fresh_run(NULL), 4.5f, 1e-6);
  cr_assert_gt(lines_in(calls), cold, "an edited header did not compile again (%d calls)", cold);
}

/* A memory library has no directory of its own: its includes resolve
 * through $CPATH (and absolute names) and are followed the same way. */
Test(custom_headers, a_library_from_memory_follows_cpath_headers) {
  put_file("inc/scale.h", "#define SCALE 2.0f\n");
  setenv("CPATH", path_of("inc"), 1);
  static const char src[] = KERNEL_C("#include \"scale.h\"\n");
  kiln_context *ctx = new_context(false);
  char h[2][40];
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(kiln_context_add_kernel_library_memory(ctx, "mem.c", src, strlen(src), st), 0,
                 "%s", kiln_status_message(st));
    kiln_graph *g = kiln_graph_parse(SCALE_GRAPH, strlen(SCALE_GRAPH), NULL, st);
    kiln_model *m = kiln_model_compile(ctx, g, st);
    kiln_graph_free(g);
    cr_assert(m, "%s", kiln_status_message(st));
    snprintf(h[i], 40, "%s", ir_node_attr_string(m->g->nodes[0], "kiln.library", ""));
    kiln_model_free(m);
    put_file("inc/scale.h", "#define SCALE 3.0f\n");
  }
  cr_assert_str_neq(h[0], h[1]);
  kiln_context_free(ctx);
}
