/* trace_read.c - reading back a Chrome trace, and recording one (trace_read.h). */
#include "trace_read.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void trace_temp_file(char *path) {
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp %s", path);
  close(fd);
}

rt_json *trace_read(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  static char buf[8 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  char err[256] = "";
  rt_json *j = rt_json_parse(buf, n, err, sizeof err);
  cr_assert(j, "%s is not JSON: %s", path, err);
  cr_assert_eq(j->kind, RT_JSON_ARRAY);
  return j;
}

const char *trace_str(const rt_json *ev, const char *key) {
  const rt_json *v = rt_json_get(ev, key);
  return v && v->kind == RT_JSON_STRING ? v->s : "";
}

int64_t trace_int(const rt_json *ev, const char *key) {
  const rt_json *v = rt_json_get(ev, key);
  return v && v->kind == RT_JSON_NUMBER ? (int64_t)v->num : -1;
}

int trace_count_named(const rt_json *j, const char *name) {
  size_t n = strlen(name);
  bool prefix = n && name[n - 1] == '*';
  int c = 0;
  for (int i = 0; i < j->n; i++) {
    const char *e = trace_str(&j->items[i], "name");
    if (prefix ? strncmp(e, name, n - 1) == 0 : strcmp(e, name) == 0) c++;
  }
  return c;
}

int64_t trace_track_of(const rt_json *j, const char *name) {
  for (int i = 0; i < j->n; i++) {
    const rt_json *e = &j->items[i];
    const rt_json *a = rt_json_get(e, "args");
    if (!strcmp(trace_str(e, "name"), "thread_name") && a && !strcmp(trace_str(a, "name"), name))
      return trace_int(e, "tid");
  }
  return -1;
}

rt_json *trace_specializing_runs(const char *text, kiln_device *dev, const char *path) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  cr_assert(ctx, "%s", kiln_status_message(st));
  cr_assert_eq(kiln_context_set_specialize(ctx, KILN_SPECIALIZE_ASYNC, st), 0);
  cr_assert_eq(kiln_context_set_specialize_hot(ctx, 1, st), 0);
  cr_assert_eq(kiln_context_set_trace(ctx, path, st), 0, "%s", kiln_status_message(st));
  kiln_graph *g = kiln_graph_parse(text, strlen(text), "<test>", st);
  cr_assert(g, "%s", kiln_status_message(st));
  kiln_model *m = kiln_model_compile_on(ctx, dev, g, st);
  cr_assert(m, "%s", kiln_status_message(st));
  kiln_tensor *x = kiln_tensor_new(KILN_FLOAT32, 2, (int64_t[]){8, 64}, st);
  cr_assert(x);
  float *d = kiln_tensor_data(x);
  for (int i = 0; i < 8 * 64; i++) d[i] = 0.01f * (float)(i % 17);
  for (int i = 0; i < 3; i++) {
    kiln_tensor *y = NULL;
    cr_assert_eq(kiln_model_execute(m, &x, 1, &y, 1, st), 0, "%s", kiln_status_message(st));
    kiln_tensor_free(y);
    cr_assert_geq(kiln_context_wait_compiles(ctx, 60000, st), 0);
  }
  kiln_tensor_free(x);
  kiln_model_free(m);
  kiln_context_free(ctx); /* writes the trace */
  kiln_graph_free(g);
  kiln_status_free(st);
  return trace_read(path);
}
