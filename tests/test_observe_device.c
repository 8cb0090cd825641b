/* test_observe_device.c - traces and profiles of device models, on the
 * device KILN_TEST_DEVICE names (simt-emu otherwise): a span per launch on
 * the device's own track, copies as spans, per-kernel and copy rows whose
 * times add up to the execute time, recorded captures replayed launch by
 * launch while watched, and answers that watching does not change. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kiln.h"
#include "src/device.h"
#include "src/rt.h"
#include "support/oracle.h"
#include "support/shell.h"
#include "support/trace_read.h"
#include "support/under_test.h"

/* Two GEMMs and a relu between them: work enough per launch that the
 * copies and the bookkeeping are a small part of an execute. */
static const char mlp_text[] =
    "mo.graph @dmlp<batch>(%x: !mo.tensor<[batch, 64], f32>, %w1: !mo.tensor<[64, 96], f32>, "
    "%w2: !mo.tensor<[96, 32], f32>) -> (!mo.tensor<[batch, 32], f32>) {\n"
    "  %h = mo.matmul(%x, %w1) : !mo.tensor<[batch, 96], f32>\n"
    "  %r = mo.relu(%h) : !mo.tensor<[batch, 96], f32>\n"
    "  %y = mo.matmul(%r, %w2) : !mo.tensor<[batch, 32], f32>\n"
    "  mo.output %y : !mo.tensor<[batch, 32], f32>\n}\n";

enum { BATCH = 32 };

typedef struct fixture {
  kiln_status *st;
  kiln_context *ctx;
  kiln_device *dev;
  kiln_graph *g;
  kiln_model *m;
  kiln_tensor *in[3];
} fixture;

static kiln_tensor *filled(int rank, const int64_t *shape, uint64_t seed, kiln_status *st) {
  kiln_tensor *t = kiln_tensor_new(KILN_FLOAT32, rank, shape, st);
  cr_assert(t, "%s", kiln_status_message(st));
  oracle_gen g = gen_uniform(-1, 1);
  oracle_fill(kiln_tensor_data(t), KILN_FLOAT32, kiln_tensor_numel(t), &g, seed);
  return t;
}

/* The model on the device under test, in a context tracing to trace_path
 * (NULL: none). */
static void open_fixture(fixture *f, const char *trace_path) {
  memset(f, 0, sizeof *f);
  f->st = kiln_status_new();
  f->ctx = kiln_context_new(f->st);
  cr_assert(f->ctx, "%s", kiln_status_message(f->st));
  if (trace_path)
    cr_assert_eq(kiln_context_set_trace(f->ctx, trace_path, f->st), 0, "%s",
                 kiln_status_message(f->st));
  const char *spec = under_test_device() ? under_test_device() : "simt-emu";
  f->dev = kiln_device_open(spec, f->st);
  cr_assert(f->dev, "%s", kiln_status_message(f->st));
  f->g = kiln_graph_parse(mlp_text, strlen(mlp_text), "<test>", f->st);
  cr_assert(f->g, "%s", kiln_status_message(f->st));
  f->m = kiln_model_compile_on(f->ctx, f->dev, f->g, f->st);
  cr_assert(f->m, "%s", kiln_status_message(f->st));
  cr_assert(kiln_model_device(f->m), "a device model");
  f->in[0] = filled(2, (int64_t[]){BATCH, 64}, 1, f->st);
  f->in[1] = filled(2, (int64_t[]){64, 96}, 2, f->st);
  f->in[2] = filled(2, (int64_t[]){96, 32}, 3, f->st);
}

static void close_fixture(fixture *f) {
  for (int i = 0; i < 3; i++) kiln_tensor_free(f->in[i]);
  kiln_model_free(f->m);
  kiln_context_free(f->ctx); /* writes the trace */
  kiln_device_close(f->dev);
  kiln_graph_free(f->g);
  kiln_status_free(f->st);
}

/* n executes; the last one's output, kept (the caller frees it). */
static kiln_tensor *run(fixture *f, int n) {
  kiln_tensor *y = NULL;
  for (int i = 0; i < n; i++) {
    kiln_tensor_free(y);
    y = NULL;
    cr_assert_eq(kiln_model_execute(f->m, f->in, 3, &y, 1, f->st), 0, "%s",
                 kiln_status_message(f->st));
  }
  return y;
}

static void assert_same(const kiln_tensor *a, const kiln_tensor *b) {
  cr_assert_eq(kiln_tensor_numel(a), kiln_tensor_numel(b));
  cr_assert_eq(memcmp(kiln_tensor_data(a), kiln_tensor_data(b),
                      (size_t)kiln_tensor_numel(a) * sizeof(float)), 0,
               "watching changed the answer");
}

Test(observe_device, trace_has_a_span_per_launch_on_the_device_track) {
  char path[] = "/tmp/kiln_dtrace_XXXXXX";
  trace_temp_file(path);
  fixture f;
  open_fixture(&f, path);
  int nk = rt_device_model_kernels(f.m);
  cr_assert_geq(nk, 2, "two GEMMs at least");
  char label[32];
  snprintf(label, sizeof label, "%s", kiln_device_label(f.dev));
  kiln_tensor *y = run(&f, 3);
  kiln_tensor_free(y);
  close_fixture(&f);

  rt_json *j = trace_read(path);
  int64_t track = trace_track_of(j, label);
  cr_assert_geq(track, 0, "a track named %s", label);
  cr_assert_eq(trace_count_named(j, "compile model @dmlp"), 1);
  cr_assert_eq(trace_count_named(j, "execute @dmlp"), 3);
  int kernels = 0, copies_in = 0, copies_out = 0;
  int64_t caller = -1;
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    if (!strcmp(trace_str(e, "name"), "execute @dmlp")) caller = trace_int(e, "tid");
  }
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    const char *cat = trace_str(e, "cat");
    const rt_json *a = rt_json_get(e, "args");
    if (!strcmp(cat, "kernel")) {
      kernels++;
      cr_assert_eq(trace_int(e, "tid"), track, "a launch on the device's track");
      cr_assert_neq(track, caller);
      cr_assert(strncmp(trace_str(e, "name"), "mo.", 3) == 0, "%s", trace_str(e, "name"));
      cr_assert(a && trace_int(a, "node") >= 0);
      const rt_json *grid = rt_json_get(a, "grid");
      cr_assert(grid && grid->kind == RT_JSON_ARRAY && grid->n == 3, "the grid as args");
      cr_assert_geq(grid->items[0].num, 1);
      cr_assert(strstr(trace_str(a, "shape"), "[32, "), "%s", trace_str(a, "shape"));
      cr_assert_geq(rt_json_get(e, "dur")->num, 0);
    }
    if (!strcmp(cat, "copy")) {
      cr_assert_eq(trace_int(e, "tid"), track);
      cr_assert_gt(trace_int(a, "bytes"), 0);
      if (!strncmp(trace_str(e, "name"), "copy in %", 9)) copies_in++;
      if (!strcmp(trace_str(e, "name"), "copy out %y")) copies_out++;
    }
  }
  cr_assert_eq(kernels, 3 * nk, "a span per launch: %d for %d kernels", kernels, nk);
  cr_assert_eq(copies_in, 3 * 3, "each input copied in per execute");
  cr_assert_eq(copies_out, 3, "the output copied out per execute");
  rt_json_free(j);
  unlink(path);
}

Test(observe_device, profile_rows_sum_to_the_execute_time) {
  fixture f;
  open_fixture(&f, NULL);
  kiln_tensor *before = run(&f, 1); /* builds the binding's plan: not what is timed */
  cr_assert_eq(kiln_model_set_profile(f.m, 1, f.st), 0, "%s", kiln_status_message(f.st));
  const int n = 5;
  double t0 = rt_now_ms();
  kiln_tensor *y = run(&f, n);
  double wall = rt_now_ms() - t0;
  assert_same(before, y);
  kiln_profile *p = kiln_model_profile(f.m, f.st);
  cr_assert(p, "%s", kiln_status_message(f.st));
  int nk = rt_device_model_kernels(f.m);
  cr_assert_eq(kiln_profile_num_rows(p), nk + 3,
               "a row per kernel, then copies in and out, then launches and waits");
  cr_assert_eq(kiln_profile_executes(p), (uint64_t)n);
  double sum = 0, share = 0, gflop = 0;
  for (int i = 0; i < kiln_profile_num_rows(p); i++) {
    const kiln_profile_row *r = kiln_profile_row_at(p, i);
    sum += r->total_ms;
    share += r->share;
    gflop += r->gflop;
    if (i < nk + 2) cr_assert_gt(r->gbyte, 0, "row %d (%s)", i, r->kernel);
    if (i < nk) {
      cr_assert_eq(r->calls, (uint64_t)n, "%s", r->kernel);
      cr_assert_geq(r->node, 0);
      cr_assert(strncmp(r->kernel, "mo.", 3) == 0, "%s", r->kernel);
    }
  }
  const kiln_profile_row *cin = kiln_profile_row_at(p, nk), *cout = kiln_profile_row_at(p, nk + 1);
  cr_assert_str_eq(cin->kernel, "copy in");
  cr_assert_str_eq(cout->kernel, "copy out");
  cr_assert_eq(cin->node, -1);
  cr_assert_eq(cin->calls, (uint64_t)(3 * n));
  cr_assert_eq(cout->calls, (uint64_t)n);
  cr_assert_float_eq(cout->gbyte, (double)n * BATCH * 32 * 4 / 1e9, 1e-12);
  cr_assert_float_eq(gflop, 2.0 * n * BATCH * (64 * 96 + 96 * 32) / 1e9, 1e-9);
  const kiln_profile_row *rest = kiln_profile_row_at(p, nk + 2);
  cr_assert_str_eq(rest->kernel, "launches and waits");
  cr_assert_eq(rest->node, -1);
  cr_assert_eq(rest->calls, (uint64_t)n);
  cr_assert_float_eq(share, 1.0, 1e-9);
  double exec = kiln_profile_execute_ms(p);
  /* on a GPU the kernels' device time leaves launch costs to the last row */
  cr_assert_float_eq(sum, exec, 1e-6 * exec, "rows %.3f ms of executes %.3f ms", sum, exec);
  cr_assert(exec <= wall, "executes %.3f ms within the wall %.3f ms", exec, wall);
  kiln_profile_free(p);
  kiln_tensor_free(before);
  kiln_tensor_free(y);
  cr_assert_eq(kiln_model_set_profile(f.m, 0, f.st), 0);
  cr_assert_eq(atomic_load(&f.ctx->watch), 0, "nothing watched once the profile stops");
  close_fixture(&f);
}

Test(observe_device, profile_counts_nothing_unless_asked) {
  fixture f;
  open_fixture(&f, NULL);
  cr_assert_eq(atomic_load(&f.ctx->watch), 0);
  kiln_tensor *y = run(&f, 2);
  kiln_profile *p = kiln_model_profile(f.m, f.st);
  cr_assert(p, "%s", kiln_status_message(f.st));
  for (int i = 0; i < kiln_profile_num_rows(p); i++)
    cr_assert_eq(kiln_profile_row_at(p, i)->calls, 0);
  cr_assert_eq(kiln_profile_executes(p), 0);
  kiln_profile_free(p);
  kiln_tensor_free(y);
  close_fixture(&f);
}

Test(observe_device, a_recorded_capture_replays_launch_by_launch_while_watched) {
  fixture f;
  open_fixture(&f, NULL);
  kiln_tensor *y = NULL;
  cr_assert_eq(kiln_model_capture(f.m, 7, f.in, 3, &y, 1, f.st), 0, "%s",
               kiln_status_message(f.st));
  cr_assert_eq(kiln_model_set_profile(f.m, 1, f.st), 0);
  const int n = 3;
  for (int i = 0; i < n; i++) {
    kiln_tensor *z = NULL;
    cr_assert_eq(kiln_model_replay(f.m, 7, f.in, 3, &z, 1, f.st), 0, "%s",
                 kiln_status_message(f.st));
    assert_same(y, z);
    kiln_tensor_free(z);
  }
  kiln_profile *p = kiln_model_profile(f.m, f.st);
  cr_assert(p);
  int nk = rt_device_model_kernels(f.m);
  for (int i = 0; i < nk; i++)
    cr_assert_eq(kiln_profile_row_at(p, i)->calls, (uint64_t)n, "every kernel of every replay");
  cr_assert_eq(kiln_profile_executes(p), (uint64_t)n, "a replay counts as an execute");
  double sum = 0;
  for (int i = 0; i < kiln_profile_num_rows(p); i++) sum += kiln_profile_row_at(p, i)->total_ms;
  cr_assert_leq(sum, kiln_profile_execute_ms(p) * (1 + 1e-9), "rows within the replays' time");
  kiln_profile_free(p);
  kiln_tensor_free(y);
  close_fixture(&f);
}

typedef struct log_lines {
  int n;
  char lines[32][512];
} log_lines;

static void collect(void *user, kiln_log_level level, const char *line) {
  (void)level;
  log_lines *l = user;
  if (l->n < 32) snprintf(l->lines[l->n++], 512, "%s", line);
}

Test(observe_device, compiles_trace_their_steps_and_log_like_the_hosts) {
  char dir[] = "/tmp/kiln_dobs_XXXXXX", path[] = "/tmp/kiln_dtrace_XXXXXX";
  cr_assert(mkdtemp(dir));
  trace_temp_file(path);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_parse(mlp_text, strlen(mlp_text), "<test>", st);
  const char *spec = under_test_device() ? under_test_device() : "simt-emu";
  kiln_device *dev = kiln_device_open(spec, st);
  cr_assert(g && dev, "%s", kiln_status_message(st));
  log_lines logs = {0};
  for (int round = 0; round < 2; round++) { /* compiled, then read from the disk cache */
    kiln_context *ctx = kiln_context_new(st);
    cr_assert_eq(kiln_context_set_cache_dir(ctx, dir, 0, st), 0);
    if (round == 0) cr_assert_eq(kiln_context_set_log(ctx, collect, &logs, KILN_LOG_INFO, st), 0);
    char p[64];
    snprintf(p, sizeof p, "%s.%d", path, round);
    cr_assert_eq(kiln_context_set_trace(ctx, p, st), 0, "%s", kiln_status_message(st));
    kiln_model *m = kiln_model_compile_on(ctx, dev, g, st);
    cr_assert(m, "%s", kiln_status_message(st));
    int nk = rt_device_model_kernels(m);
    kiln_model_free(m);
    kiln_context_free(ctx);
    rt_json *j = trace_read(p);
    const char *steps[2][3] = {{"disk read (miss)", "cache miss", "compile"},
                               {"disk read", "cache hit", "load"}};
    for (int s = 0; s < 3; s++)
      cr_assert_eq(trace_count_named(j, steps[round][s]), nk, "round %d: %s", round,
                   steps[round][s]);
    cr_assert_eq(trace_count_named(j, "load"), nk, "each kernel loaded on the device");
    if (round == 1) cr_assert_eq(trace_count_named(j, "compile"), 0, "nothing compiled");
    rt_json_free(j);
    unlink(p);
  }
  bool compiled = false, model = false;
  for (int i = 0; i < logs.n; i++) {
    compiled |= strstr(logs.lines[i], "compiled kernel mo.matmul") &&
                strstr(logs.lines[i], kiln_device_label(dev));
    model |= strstr(logs.lines[i], "compiled model @dmlp for ") != NULL;
  }
  cr_assert(compiled && model, "info lines name the kernels and the device: %s", logs.lines[0]);
  kiln_device_close(dev);
  kiln_graph_free(g);
  kiln_status_free(st);
  unlink(path);
  shell_rm_dir(dir);
}

Test(observe_device, perf_map_names_simt_emu_kernels) {
  if (under_test_device()) return; /* GPU code runs on the GPU: perf cannot see it */
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
  unlink(path);
  setenv("KILN_PERF", "1", 1);
  fixture f;
  open_fixture(&f, NULL);
  kiln_tensor_free(run(&f, 1)); /* simt-emu links a module when its kernel is asked for */
  unsetenv("KILN_PERF");
  FILE *pm = fopen(path, "r");
  cr_assert(pm, "KILN_PERF=1 writes %s", path);
  char line[1024];
  int named = 0;
  while (fgets(line, sizeof line, pm)) {
    unsigned long addr = 0, size = 0;
    char name[900] = "";
    cr_assert_eq(sscanf(line, "%lx %lx %899[^\n]", &addr, &size, name), 3, "%s", line);
    if (strncmp(name, "kiln simt-emu kiln_", 19) == 0) {
      cr_assert_gt(size, 0);
      named++;
    }
  }
  fclose(pm);
  cr_assert_geq(named, rt_device_model_kernels(f.m), "each kernel named (%d)", named);
  close_fixture(&f);
  unlink(path);
}

Test(observe_device, background_specializations_trace_on_the_compile_track) {
  static const char ew_text[] =
      "mo.graph @dew<n>(%x: !mo.tensor<[n, 64], f32>) -> (!mo.tensor<[n, 64], f32>) {\n"
      "  %e = mo.exp(%x) : !mo.tensor<[n, 64], f32>\n"
      "  %t = mo.tanh(%e) : !mo.tensor<[n, 64], f32>\n"
      "  mo.output %t : !mo.tensor<[n, 64], f32>\n}\n";
  char path[] = "/tmp/kiln_dtrace_XXXXXX";
  trace_temp_file(path);
  kiln_status *st = kiln_status_new();
  kiln_device *dev = kiln_device_open(under_test_device() ? under_test_device() : "simt-emu", st);
  cr_assert(dev, "%s", kiln_status_message(st));
  rt_json *j = trace_specializing_runs(ew_text, dev, path);
  int64_t compile_tid = trace_track_of(j, "kiln-compile");
  cr_assert_geq(compile_tid, 0, "the compile thread has a named track");
  int specialize = 0, compiles = 0;
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    if (trace_int(e, "tid") != compile_tid) continue;
    specialize += !strcmp(trace_str(e, "name"), "specialize @dew");
    compiles += !strcmp(trace_str(e, "name"), "compile");
  }
  cr_assert_geq(specialize, 1, "a specialize span on the compile track");
  cr_assert_geq(compiles, 1, "its device kernels compile there");
  rt_json_free(j);
  kiln_device_close(dev);
  kiln_status_free(st);
  unlink(path);
}

/* ---- the device-clock path, on simt-emu with stand-in events ----
 * CUDA and HIP time launches with events; no GPU here, so simt-emu's table
 * gets event entries that read the host's clock when recorded (simt-emu
 * runs a launch before returning, so that is when the device reaches
 * them), and counts what device_watch.c asks of them. */
static int events_live, events_made, events_read;

static int fake_event_create(kiln_device *d, void **ev, kiln_status *st) {
  (void)d, (void)st;
  *ev = calloc(1, sizeof(int64_t));
  events_live++;
  events_made++;
  return *ev ? 0 : -1;
}

static int fake_event_record(kiln_device *d, void *ev, kiln_status *st) {
  (void)d, (void)st;
  *(int64_t *)ev = rt_now_ns();
  return 0;
}

static int fake_event_elapsed(kiln_device *d, void *a, void *b, float *ms, kiln_status *st) {
  (void)d, (void)st;
  events_read++;
  *ms = (float)((double)(*(int64_t *)b - *(int64_t *)a) / 1e6);
  return 0;
}

static void fake_event_destroy(kiln_device *d, void *ev) {
  (void)d;
  events_live--;
  free(ev);
}

Test(observe_device, launches_timed_by_device_events_trace_and_profile) {
  if (under_test_device()) return; /* a real GPU's events are its own */
  char path[] = "/tmp/kiln_dtrace_XXXXXX";
  trace_temp_file(path);
  fixture f;
  open_fixture(&f, path);
  static rt_device_ops with_events;
  with_events = *f.dev->ops;
  with_events.event_create = fake_event_create;
  with_events.event_record = fake_event_record;
  with_events.event_elapsed = fake_event_elapsed;
  with_events.event_destroy = fake_event_destroy;
  f.dev->ops = &with_events;
  cr_assert(rt_device_can_time(f.dev));
  int nk = rt_device_model_kernels(f.m);
  cr_assert_eq(kiln_model_set_profile(f.m, 1, f.st), 0);
  const int n = 3;
  kiln_tensor *y = run(&f, n);
  kiln_profile *p = kiln_model_profile(f.m, f.st);
  cr_assert(p);
  double sum = 0;
  for (int i = 0; i < kiln_profile_num_rows(p); i++) {
    const kiln_profile_row *r = kiln_profile_row_at(p, i);
    if (i < nk) cr_assert_eq(r->calls, (uint64_t)n, "%s", r->kernel);
    sum += r->total_ms;
  }
  cr_assert_float_eq(sum, kiln_profile_execute_ms(p), 1e-6 * kiln_profile_execute_ms(p),
                     "rows %.3f ms of executes %.3f ms", sum, kiln_profile_execute_ms(p));
  kiln_profile_free(p);
  kiln_tensor_free(y);
  cr_assert_eq(events_made, 1 + 2 * nk, "a base and two per launch, made once and kept");
  cr_assert_eq(events_read, 2 * nk * n, "read at the end of each execute");
  kiln_model_free(f.m);
  f.m = NULL;
  cr_assert_eq(events_live, 0, "freed with the model");
  close_fixture(&f);
  rt_json *j = trace_read(path);
  int launches = 0;
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    if (strcmp(trace_str(e, "cat"), "kernel") != 0) continue;
    launches++;
    cr_assert_str_eq(trace_str(rt_json_get(e, "args"), "clock"), "device");
    cr_assert_gt(rt_json_get(e, "dur")->num, 0);
  }
  cr_assert_eq(launches, n * nk);
  rt_json_free(j);
  unlink(path);
}
