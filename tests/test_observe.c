/* test_observe.c - logs at each level and through the callback, Chrome
 * traces (parsed back with src/json.c: the expected events, their tracks,
 * a valid file after each flush) and per-kernel profiles (calls, counted
 * flops, times that add up to the execute time). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/json.h"
#include "src/cache_mem.h"
#include "src/rt.h"
#include "support/note.h"
#include "support/trace_read.h"

/* Big enough for the pool to split both kernels (pool.c's grain). */
static const char mlp_text[] =
    "mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 256], f32>, %w1: !mo.tensor<[256, 512], f32>, "
    "%w2: !mo.tensor<[512, 64], f32>) -> (!mo.tensor<[batch, 64], f32>) {\n"
    "  %h = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 256], f32>, !mo.tensor<[256, 512], f32>) -> "
    "!mo.tensor<[batch, 512], f32>\n"
    "  %r = mo.relu(%h) : !mo.tensor<[batch, 512], f32>\n"
    "  %y = mo.matmul(%r, %w2) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512, 64], f32>) -> "
    "!mo.tensor<[batch, 64], f32>\n"
    "  mo.output %y : !mo.tensor<[batch, 64], f32>\n}\n";

/* Elementwise only: specializes (no GEMM). */
static const char ew_text[] =
    "mo.graph @ew<n>(%x: !mo.tensor<[n, 64], f32>) -> (!mo.tensor<[n, 64], f32>) {\n"
    "  %e = mo.exp(%x) : !mo.tensor<[n, 64], f32>\n"
    "  %t = mo.tanh(%e) : !mo.tensor<[n, 64], f32>\n"
    "  mo.output %t : !mo.tensor<[n, 64], f32>\n}\n";

static kiln_graph *parse(const char *text, kiln_status *st) {
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "<test>", st);
  cr_assert(g, "%s", kiln_status_message(st));
  return g;
}

static kiln_tensor *filled(int rank, const int64_t *shape, float v, kiln_status *st) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, st);
  cr_assert(t);
  float *d = kiln_tensor_data(t);
  for (int64_t i = 0; i < kiln_tensor_numel(t); i++) d[i] = v * (float)((i % 7) - 3);
  return t;
}

/* Execute the mlp with batch rows, n times; returns the wall ms of all. */
static double run_mlp(kiln_model *m, int64_t batch, int n, kiln_status *st) {
  kiln_tensor *x = filled(2, (int64_t[]){batch, 256}, 0.01f, st);
  kiln_tensor *w1 = filled(2, (int64_t[]){256, 512}, 0.02f, st);
  kiln_tensor *w2 = filled(2, (int64_t[]){512, 64}, 0.03f, st);
  double t0 = rt_now_ms();
  for (int i = 0; i < n; i++) {
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_model_execute(m, (kiln_tensor *[]){x, w1, w2}, 3, &y, 1, st), 0, "%s",
                 kiln_status_message(st));
    kiln_tensor_free(y);
  }
  double ms = rt_now_ms() - t0;
  kiln_tensor_free(x);
  kiln_model_free(m);
  kiln_tensor_free(w1);
  kiln_tensor_free(w2);
  return ms;
}

/* ---- logs ---- */

typedef struct log_sink {
  int n[4];
  char lines[64][512];
  int nlines;
} log_sink;

static void collect(void *user, kiln_log_level level, const char *line) {
  log_sink *s = user;
  s->n[level]++;
  if (s->nlines < 64) snprintf(s->lines[s->nlines++], 512, "%s", line);
}

static bool logged(const log_sink *s, const char *what) {
  for (int i = 0; i < s->nlines; i++)
    if (strstr(s->lines[i], what)) return true;
  return false;
}

/* Compile the mlp in a fresh context logging at level into s, then free
 * the model under a code bound of 0 (its kernels are evicted). */
static void compile_logged(kiln_log_level level, log_sink *s) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx);
  cr_assert_eq(kiln_context_set_log(ctx, collect, s, level, st), 0);
  cr_assert_eq(kiln_context_set_code_limit(ctx, 0, st), 0);
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(observe, log_info_names_compiles_and_evictions) {
  log_sink s = {0};
  compile_logged(KILN_LOG_INFO, &s);
  cr_assert(logged(&s, "compiled kernel mo.matmul+mo.relu"), "%s", s.lines[0]);
  cr_assert(logged(&s, "compiled model @mlp: 2 kernels"));
  cr_assert(logged(&s, "evicted kernel kiln_k_"));
  cr_assert_eq(s.n[KILN_LOG_DEBUG], 0, "no debug lines at info");
}

Test(observe, log_warn_and_off_say_nothing_of_a_clean_compile) {
  log_sink w = {0}, o = {0};
  compile_logged(KILN_LOG_WARN, &w);
  compile_logged(KILN_LOG_OFF, &o);
  cr_assert_eq(w.nlines, 0, "%s", w.lines[0]);
  cr_assert_eq(o.nlines, 0, "%s", o.lines[0]);
}

Test(observe, log_debug_includes_info_lines) {
  log_sink s = {0};
  compile_logged(KILN_LOG_DEBUG, &s);
  cr_assert_gt(s.n[KILN_LOG_INFO], 2);
  cr_assert(logged(&s, "compiled kernel"));
}

Test(observe, log_debug_names_disk_loads) {
  char dir[] = "/tmp/kiln_obs_XXXXXX";
  cr_assert(mkdtemp(dir));
  log_sink s = {0};
  kiln_status *st = kiln_status_new();
  kiln_graph *g = parse(mlp_text, st);
  for (int round = 0; round < 2; round++) { /* the second context reads the disk */
    kiln_context *ctx = kiln_context_new(st);
    cr_assert_eq(kiln_context_set_cache_dir(ctx, dir, 0, st), 0, "%s", kiln_status_message(st));
    cr_assert_eq(kiln_context_set_log(ctx, collect, &s, KILN_LOG_DEBUG, st), 0);
    kiln_model *m = kiln_model_compile(ctx, g, st);
    cr_assert(m, "%s", kiln_status_message(st));
    kiln_model_free(m);
    kiln_context_free(ctx);
  }
  cr_assert(logged(&s, "from the disk cache"));
  cr_assert(logged(&s, "unloading 2 kernels"));
  kiln_graph_free(g);
  kiln_status_free(st);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

Test(observe, log_level_from_the_environment) {
  kiln_status *st = kiln_status_new();
  setenv("KILN_LOG", "debug", 1);
  kiln_context *a = kiln_context_new(st);
  unsetenv("KILN_LOG");
  setenv("KILN_QUIET", "1", 1);
  kiln_context *b = kiln_context_new(st);
  unsetenv("KILN_QUIET");
  kiln_context *c = kiln_context_new(st);
  cr_assert_eq(kiln_context_log_level(a), KILN_LOG_DEBUG);
  cr_assert_eq(kiln_context_log_level(b), KILN_LOG_OFF);
  cr_assert_eq(kiln_context_log_level(c), KILN_LOG_WARN);
  kiln_context_free(a);
  kiln_context_free(b);
  kiln_context_free(c);
  kiln_status_free(st);
}

Test(observe, log_refuses_a_bad_level) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_log(ctx, NULL, NULL, (kiln_log_level)7, st), -1);
  cr_assert(strstr(kiln_status_message(st), "level 7"), "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_log(NULL, NULL, NULL, KILN_LOG_INFO, st), -1);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- traces ---- */

Test(observe, trace_has_compile_phases_executes_kernels_and_parts) {
  char path[] = "/tmp/kiln_trace_XXXXXX";
  trace_temp_file(path);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_num_threads(ctx, 2, st), 0);
  cr_assert_eq(kiln_context_set_trace(ctx, path, st), 0, "%s", kiln_status_message(st));
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_model *m2 = kiln_model_compile(ctx, g, st); /* both kernels hit the memory cache */
  cr_assert(m2, "%s", kiln_status_message(st));
  kiln_model_free(m2);
  run_mlp(m, 256, 3, st);
  /* flushed while the context lives: already a whole JSON array */
  cr_assert_eq(kiln_context_flush_trace(ctx, st), 0, "%s", kiln_status_message(st));
  rt_json *mid = trace_read(path);
  cr_assert_eq(trace_count_named(mid, "execute @mlp"), 3);
  rt_json_free(mid);
  kiln_context_free(ctx);

  rt_json *j = trace_read(path);
  cr_assert_eq(trace_count_named(j, "prepare @mlp"), 2);
  cr_assert_eq(trace_count_named(j, "compile model @mlp"), 2);
  const char *phases[] = {"lower", "O3", "codegen", "compile", "load"};
  for (int p = 0; p < 5; p++) cr_assert_eq(trace_count_named(j, phases[p]), 2, "%s", phases[p]);
  cr_assert_eq(trace_count_named(j, "cache miss"), 2);
  cr_assert_eq(trace_count_named(j, "cache hit"), 2);
  cr_assert_eq(trace_count_named(j, "execute @mlp"), 3);
  int kernels = 0, parts = 0;
  int64_t main_tid = -1;
  bool part_off_main = false;
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    const char *cat = trace_str(e, "cat");
    if (!strcmp(cat, "kernel")) {
      kernels++;
      const rt_json *a = rt_json_get(e, "args");
      cr_assert(a && trace_int(a, "node") >= 0);
      cr_assert(strstr(trace_str(a, "shape"), "[256, "), "%s", trace_str(a, "shape"));
      cr_assert_eq(trace_str(e, "ph")[0], 'X');
      cr_assert_geq(rt_json_get(e, "dur")->num, 0);
      main_tid = trace_int(e, "tid");
    }
    if (!strcmp(cat, "part")) parts++;
  }
  /* Which thread claims a part is up to the scheduler (on a busy machine
   * the caller may run them all): each part is on the caller's track or on
   * a track named for a pool worker. */
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    if (strcmp(trace_str(e, "cat"), "part") != 0) continue;
    int64_t tid = trace_int(e, "tid");
    if (tid == main_tid) continue;
    part_off_main = true;
    cr_assert_eq(tid, trace_track_of(j, "kiln-pool-1"), "a part on an unnamed track");
  }
  cr_assert_eq(kernels, 6, "two kernels per execute");
  cr_assert_geq(parts, 6, "each kernel split in parts");
  if (!part_off_main) test_note("every part ran on the caller (a busy machine)");
  rt_json_free(j);
  kiln_graph_free(g);
  kiln_status_free(st);
  unlink(path);
}

Test(observe, trace_puts_background_specializations_on_their_own_track) {
  char path[] = "/tmp/kiln_trace_XXXXXX";
  trace_temp_file(path);
  rt_json *j = trace_specializing_runs(ew_text, NULL, path);
  int64_t compile_tid = trace_track_of(j, "kiln-compile");
  cr_assert_geq(compile_tid, 0, "the compile thread has a named track");
  bool found = false;
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    if (!strcmp(trace_str(e, "name"), "specialize @ew")) {
      cr_assert_eq(trace_int(e, "tid"), compile_tid);
      found = true;
    }
  }
  cr_assert(found, "a specialize span");
  rt_json_free(j);
  unlink(path);
}

Test(observe, trace_reads_from_disk_show_as_disk_read) {
  char dir[] = "/tmp/kiln_obs_XXXXXX", path[] = "/tmp/kiln_trace_XXXXXX";
  cr_assert(mkdtemp(dir));
  trace_temp_file(path);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = parse(mlp_text, st);
  for (int round = 0; round < 2; round++) {
    kiln_context *ctx = kiln_context_new(st);
    cr_assert_eq(kiln_context_set_cache_dir(ctx, dir, 0, st), 0);
    if (round == 1) cr_assert_eq(kiln_context_set_trace(ctx, path, st), 0);
    kiln_model *m = kiln_model_compile(ctx, g, st);
    cr_assert(m, "%s", kiln_status_message(st));
    kiln_model_free(m);
    kiln_context_free(ctx);
  }
  rt_json *j = trace_read(path);
  cr_assert_eq(trace_count_named(j, "disk read"), 2);
  cr_assert_eq(trace_count_named(j, "load"), 2);
  cr_assert_eq(trace_count_named(j, "lower"), 0, "nothing compiled");
  rt_json_free(j);
  kiln_graph_free(g);
  kiln_status_free(st);
  unlink(path);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

Test(observe, trace_to_an_unwritable_path_is_an_error) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_trace(ctx, "/nonexistent/dir/t.json", st), -1);
  cr_assert(strstr(kiln_status_message(st), "/nonexistent/dir/t.json"), "%s",
            kiln_status_message(st));
  cr_assert_eq(atomic_load(&ctx->watch), 0, "no trace, nothing watched");
  cr_assert_eq(kiln_context_set_trace(ctx, "", st), -1);
  if (access("/dev/full", W_OK) == 0) { /* opens, but every write fails */
    cr_assert_eq(kiln_context_set_trace(ctx, "/dev/full", st), -1);
    cr_assert(strstr(kiln_status_message(st), "cannot write"), "%s", kiln_status_message(st));
    cr_assert_eq(atomic_load(&ctx->watch), 0);
  }
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- profiles ---- */

Test(observe, profile_times_sum_to_the_execute_time) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_model *keep = m; /* run_mlp would free it before the snapshot */
  kiln_tensor *x = filled(2, (int64_t[]){512, 256}, 0.01f, st);
  kiln_tensor *w1 = filled(2, (int64_t[]){256, 512}, 0.02f, st);
  kiln_tensor *w2 = filled(2, (int64_t[]){512, 64}, 0.03f, st);
  kiln_tensor *y0 = NULL; /* the first execute builds the binding's plan: not what is timed */
  cr_assert_eq(kiln_model_execute(keep, (kiln_tensor *[]){x, w1, w2}, 3, &y0, 1, st), 0);
  kiln_tensor_free(y0);
  cr_assert_eq(kiln_model_set_profile(m, 1, st), 0, "%s", kiln_status_message(st));
  cr_assert_eq(atomic_load(&ctx->watch), 1);
  const int n = 10;
  double t0 = rt_now_ms();
  for (int i = 0; i < n; i++) {
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_model_execute(keep, (kiln_tensor *[]){x, w1, w2}, 3, &y, 1, st), 0, "%s",
                 kiln_status_message(st));
    kiln_tensor_free(y);
  }
  double wall = rt_now_ms() - t0;
  kiln_profile *p = kiln_model_profile(keep, st);
  cr_assert(p, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_profile_num_rows(p), 2);
  cr_assert_eq(kiln_profile_executes(p), (uint64_t)n);
  double sum = 0, share = 0;
  for (int i = 0; i < 2; i++) {
    const kiln_profile_row *r = kiln_profile_row_at(p, i);
    cr_assert_eq(r->calls, (uint64_t)n);
    sum += r->total_ms;
    share += r->share;
    cr_assert_gt(r->gbyte, 0);
  }
  const kiln_profile_row *r0 = kiln_profile_row_at(p, 0), *r1 = kiln_profile_row_at(p, 1);
  cr_assert_str_eq(r0->kernel, "mo.matmul+mo.relu");
  cr_assert_str_eq(r1->kernel, "mo.matmul");
  cr_assert(strstr(r0->shape, "batch") && strstr(r0->shape, "512"), "%s", r0->shape);
  cr_assert_float_eq(r0->gflop, 2.0 * 512 * 256 * 512 * n / 1e9, 1e-9);
  cr_assert_float_eq(r1->gflop, 2.0 * 512 * 512 * 64 * n / 1e9, 1e-9);
  cr_assert_float_eq(share, 1.0, 1e-9);
  double exec = kiln_profile_execute_ms(p);
  cr_assert(sum <= exec && sum >= 0.9 * exec, "kernels %.3f ms of executes %.3f ms", sum, exec);
  cr_assert(exec <= wall, "executes %.3f ms within the wall %.3f ms", exec, wall);
  cr_assert_null(kiln_profile_row_at(p, 2));
  kiln_profile_free(p);
  kiln_profile_free(NULL);
  kiln_tensor_free(x);
  kiln_model_free(keep);
  cr_assert_eq(atomic_load(&ctx->watch), 0, "a freed model stops watching");
  kiln_tensor_free(w1);
  kiln_tensor_free(w2);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

Test(observe, profile_counts_nothing_unless_asked) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  kiln_model *m2 = kiln_model_compile(ctx, g, st);
  cr_assert(m && m2);
  run_mlp(m, 16, 2, st);
  kiln_profile *p = kiln_model_profile(m2, st); /* compiled, never executed, never asked */
  cr_assert(p);
  for (int i = 0; i < kiln_profile_num_rows(p); i++)
    cr_assert_eq(kiln_profile_row_at(p, i)->calls, 0);
  kiln_profile_free(p);
  /* the context's switch profiles every model of it */
  cr_assert_eq(kiln_context_set_profile(ctx, 1, st), 0);
  kiln_model *m3 = kiln_model_compile(ctx, g, st);
  cr_assert(m3);
  kiln_model_free(m2);
  kiln_tensor *x = filled(2, (int64_t[]){4, 256}, 0.01f, st);
  kiln_tensor *w1 = filled(2, (int64_t[]){256, 512}, 0.02f, st);
  kiln_tensor *w2 = filled(2, (int64_t[]){512, 64}, 0.03f, st);
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_execute(m3, (kiln_tensor *[]){x, w1, w2}, 3, &y, 1, st), 0, "%s",
               kiln_status_message(st));
  kiln_tensor_free(y);
  p = kiln_model_profile(m3, st);
  cr_assert_eq(kiln_profile_row_at(p, 0)->calls, 1);
  cr_assert_eq(kiln_profile_executes(p), 1);
  kiln_profile_free(p);
  cr_assert_eq(kiln_context_set_profile(ctx, 0, st), 0);
  cr_assert_eq(atomic_load(&ctx->watch), 0);
  kiln_model_free(m3);
  kiln_tensor_free(x);
  kiln_tensor_free(w1);
  kiln_tensor_free(w2);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- perf maps ---- */

Test(observe, perf_map_names_each_loaded_kernel_at_its_address) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  unlink(path);
  setenv("KILN_PERF", "1", 1);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  unsetenv("KILN_PERF");
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  FILE *f = fopen(path, "r");
  cr_assert(f, "KILN_PERF=1 writes %s", path);
  char line[1024];
  int found = 0;
  bool epilogue = false, prebuilt = false, prebuilt_conv = false;
  while (fgets(line, sizeof line, f)) {
    unsigned long addr = 0, size = 0;
    char name[900] = "";
    cr_assert_eq(sscanf(line, "%lx %lx %899[^\n]", &addr, &size, name), 3, "%s", line);
    cr_assert_gt(size, 0);
    for (int i = 0; i < m->g->nnodes; i++) {
      if (!m->kernels[i] || (uintptr_t)m->kernels[i] != addr) continue;
      found++;
      cr_assert(strstr(name, "kiln_k_"), "%s", name);
      cr_assert(strstr(name, i == 0 || m->g->nodes[i]->body ? "mo.matmul" : "mo."), "%s", name);
    }
    if (strstr(name, "mo.matmul+mo.relu")) cr_assert(strstr(name, "512] f32"), "%s", name);
    if (strstr(name, ".epi")) epilogue = true;
    if (strstr(name, "prebuilt GEMM")) prebuilt = true;
    if (strstr(name, "prebuilt conv kiln_pre_v4_kiln_conv_f32_v16_pex")) prebuilt_conv = true;
  }
  fclose(f);
  cr_assert_eq(found, 2, "both kernels named at their entry");
  cr_assert(epilogue, "the fused GEMM's epilogue function is named too");
  cr_assert_eq(prebuilt, jit_engine_prebuilt(ctx->jit) != NULL, "the prebuilt GEMM's functions");
  /* the direct conv's entry, where the engine loaded it (x86-64-v4 hosts) */
  cr_assert_eq(prebuilt_conv, strstr(jit_engine_options(ctx->jit), "prebuilt-conv=v4") != NULL,
               "the prebuilt conv's entry (options: %s)", jit_engine_options(ctx->jit));
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  unlink(path);
}

Test(observe, no_perf_map_unless_asked) {
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  unlink(path);
  unsetenv("KILN_PERF");
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m);
  cr_assert_neq(access(path, F_OK), 0);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
}

/* ---- debuggers: gdb's JIT interface (the descriptor libLLVM defines) ---- */

struct jit_code_entry {
  struct jit_code_entry *next, *prev;
  const char *symfile_addr;
  uint64_t symfile_size;
};
struct jit_descriptor {
  uint32_t version, action_flag;
  struct jit_code_entry *relevant_entry, *first_entry;
};
extern struct jit_descriptor __jit_debug_descriptor;

static int registered_objects(void) {
  int n = 0;
  for (struct jit_code_entry *e = __jit_debug_descriptor.first_entry; e; e = e->next) n++;
  return n;
}

/* Whether some registered object's bytes hold name (its symbol table). */
static bool registered_name(const char *name) {
  size_t n = strlen(name);
  for (struct jit_code_entry *e = __jit_debug_descriptor.first_entry; e; e = e->next)
    for (uint64_t i = 0; i + n <= e->symfile_size; i++)
      if (!memcmp(e->symfile_addr + i, name, n)) return true;
  return false;
}

Test(observe, perf_mode_registers_kernels_with_debuggers) {
  kiln_status *st = kiln_status_new();
  int before = registered_objects();
  kiln_context *plain = kiln_context_new(st);
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(plain, g, st);
  cr_assert(m);
  cr_assert_eq(registered_objects(), before, "nothing registered without KILN_PERF");
  kiln_model_free(m);
  kiln_context_free(plain);
  setenv("KILN_PERF", "1", 1);
  kiln_context *ctx = kiln_context_new(st);
  unsetenv("KILN_PERF");
  m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_geq(registered_objects(), before + 2, "each kernel's object is registered");
  for (int i = 0; i < m->g->nnodes; i++)
    if (m->kentries[i])
      cr_assert(registered_name(rt_kentry_fn_name(m->kentries[i])), "%s",
                rt_kentry_fn_name(m->kentries[i]));
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  unlink(path); /* KILN_PERF wrote it too */
}

/* ---- several threads at once ---- */

typedef struct exec_job {
  kiln_model *m;
  kiln_tensor *in[3];
  int n;
  int failed;
} exec_job;

static void *exec_loop(void *arg) {
  exec_job *j = arg;
  kiln_status *st = kiln_status_new();
  for (int i = 0; i < j->n; i++) {
    kiln_tensor *y = NULL;
    if (kiln_model_execute(j->m, j->in, 3, &y, 1, st) != 0) j->failed++;
    kiln_tensor_free(y);
  }
  kiln_status_free(st);
  return NULL;
}

Test(observe, concurrent_executes_trace_and_profile_every_call) {
  char path[] = "/tmp/kiln_trace_XXXXXX";
  trace_temp_file(path);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_trace(ctx, path, st), 0);
  kiln_graph *g = parse(mlp_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_model_set_profile(m, 1, st), 0);
  kiln_tensor *x = filled(2, (int64_t[]){8, 256}, 0.01f, st);
  kiln_tensor *w1 = filled(2, (int64_t[]){256, 512}, 0.02f, st);
  kiln_tensor *w2 = filled(2, (int64_t[]){512, 64}, 0.03f, st);
  enum { THREADS = 4, EACH = 50 };
  exec_job jobs[THREADS];
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) {
    jobs[t] = (exec_job){m, {x, w1, w2}, EACH, 0};
    cr_assert_eq(pthread_create(&th[t], NULL, exec_loop, &jobs[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) {
    pthread_join(th[t], NULL);
    cr_assert_eq(jobs[t].failed, 0);
  }
  kiln_profile *p = kiln_model_profile(m, st);
  cr_assert_eq(kiln_profile_executes(p), THREADS * EACH);
  for (int i = 0; i < kiln_profile_num_rows(p); i++)
    cr_assert_eq(kiln_profile_row_at(p, i)->calls, THREADS * EACH);
  kiln_profile_free(p);
  kiln_model_free(m);
  kiln_tensor_free(x);
  kiln_tensor_free(w1);
  kiln_tensor_free(w2);
  kiln_context_free(ctx);
  rt_json *j = trace_read(path);
  cr_assert_eq(trace_count_named(j, "execute @mlp"), THREADS * EACH);
  int kernels = 0;
  for (int i = 0; i < j->n; i++) kernels += !strcmp(trace_str(&j->items[i], "cat"), "kernel");
  cr_assert_eq(kernels, 2 * THREADS * EACH);
  rt_json_free(j);
  kiln_graph_free(g);
  kiln_status_free(st);
  unlink(path);
}

Test(observe, trace_writes_when_its_buffer_fills_and_stays_json) {
  char path[] = "/tmp/kiln_trace_XXXXXX";
  trace_temp_file(path);
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st), 0);
  cr_assert_eq(kiln_context_set_trace(ctx, path, st), 0);
  kiln_graph *g = parse(ew_text, st);
  kiln_model *m = kiln_model_compile(ctx, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_tensor *x = filled(2, (int64_t[]){1, 64}, 0.1f, st);
  enum { N = 6000 }; /* ~3 events of ~200 bytes each: past the 1 MiB buffer */
  for (int i = 0; i < N; i++) {
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0);
    kiln_tensor_free(y);
  }
  /* written without a flush, and a whole JSON array already */
  FILE *f = fopen(path, "rb");
  cr_assert(f);
  fseek(f, 0, SEEK_END);
  long written = ftell(f);
  fclose(f);
  /* a write happens when the next event would not fit: just under 1 MiB */
  cr_assert_gt(written, 1 << 19, "the full buffer went to the file (%ld bytes)", written);
  rt_json *mid = trace_read(path);
  int seen = trace_count_named(mid, "execute @ew");
  cr_assert(seen > 0 && seen < N, "%d", seen);
  rt_json_free(mid);
  kiln_tensor_free(x);
  kiln_model_free(m);
  kiln_context_free(ctx);
  rt_json *j = trace_read(path);
  cr_assert_eq(trace_count_named(j, "execute @ew"), N, "every event written at the end");
  rt_json_free(j);
  kiln_graph_free(g);
  kiln_status_free(st);
  unlink(path);
}
