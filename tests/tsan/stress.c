/* stress.c (tsan_stress) - kiln's concurrency under ThreadSanitizer
 * (cmake -DKILN_TSAN=ON; tests/tsan/run.sh). Not a Criterion test: Criterion
 * cannot start under TSan. One context with no code bound (kernels no model
 * uses are unloaded at once), and two models of one graph:
 *   - async, bindings hot at first sight: specialized variants compile on
 *     the background thread and go live while executes run;
 *   - sync with at most 2 variants: executes compile variants and evict
 *     them while other threads run them;
 * THREADS threads execute them (even threads the first, odd the second) over
 * changing shapes, each result checked exactly against C (y = relu(2x + 1),
 * row sums of y: small integers, exact in f32), and one thread compiles and
 * frees models of the same graph, turning the context's profile on and off.
 * Throughout, the context writes a trace, logs at debug level to a
 * callback and model 0 counts its profile (observe.c, trace.c, log.c).
 * Exit 0 when every result was right; TSan's own exit code otherwise (run.sh
 * sets halt_on_error). usage: tsan_stress [SECONDS (10)] */
#include <kiln/kiln.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

static const char *GRAPH =
    "mo.graph @stress<a, b>(%x: !mo.tensor<[a, b], f32>) -> (!mo.tensor<[a, b], f32>, "
    "!mo.tensor<[a, 1], f32>) {\n"
    "  %two = mo.constant {value = #M.dense_array<2.0> : tensor<f32>} : !mo.tensor<[], f32>\n"
    "  %one = mo.constant {value = #M.dense_array<1.0> : tensor<f32>} : !mo.tensor<[], f32>\n"
    "  %m = mo.mul(%x, %two) : (!mo.tensor<[a, b], f32>, !mo.tensor<[], f32>) -> "
    "!mo.tensor<[a, b], f32>\n"
    "  %p = mo.add(%m, %one) : (!mo.tensor<[a, b], f32>, !mo.tensor<[], f32>) -> "
    "!mo.tensor<[a, b], f32>\n"
    "  %y = mo.relu(%p) : !mo.tensor<[a, b], f32>\n"
    "  %s = mo.sum(%y) {axis = 1} : !mo.tensor<[a, 1], f32>\n"
    "  mo.output %y, %s : !mo.tensor<[a, b], f32>, !mo.tensor<[a, 1], f32>\n"
    "}\n";

static kiln_context *ctx;
static kiln_graph *graph;
static kiln_model *models[2];
static atomic_int failures, executes, compiles, log_lines;

static void count_line(void *user, kiln_log_level level, const char *line) {
  (void)user;
  (void)level;
  (void)line;
  atomic_fetch_add(&log_lines, 1);
}
static double deadline;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fail(const char *what, const kiln_status *st) {
  fprintf(stderr, "tsan_stress: %s: %s\n", what, st ? kiln_status_message(st) : "");
  atomic_fetch_add(&failures, 1);
}

static void *executor(void *arg) {
  kiln_model *model = models[(uintptr_t)arg % 2];
  unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;
  kiln_status *st = kiln_status_new();
  float *x = malloc(sizeof(float) * 40 * 70);
  while (now() < deadline && atomic_load(&failures) == 0) {
    int64_t shape[2] = {1 + (int64_t)(rand_r(&seed) % 40), 1 + (int64_t)(rand_r(&seed) % 70)};
    int64_t n = shape[0] * shape[1];
    for (int64_t i = 0; i < n; i++) x[i] = (float)((int)(rand_r(&seed) % 9) - 4);
    kiln_tensor *in = kiln_tensor_borrow(KILN_FLOAT32, 2, shape, x, st);
    kiln_tensor *out[2] = {NULL, NULL};
    if (!in || kiln_model_execute(model, &in, 1, out, 2, st) < 0) {
      fail("execute", st);
      kiln_tensor_free(in);
      break;
    }
    const float *y = kiln_tensor_data(out[0]), *s = kiln_tensor_data(out[1]);
    for (int64_t r = 0; r < shape[0]; r++) {
      float sum = 0;
      for (int64_t c = 0; c < shape[1]; c++) {
        float want = x[r * shape[1] + c] * 2 + 1;
        want = want > 0 ? want : 0;
        sum += want;
        if (y[r * shape[1] + c] != want) {
          fail("a wrong element of y", NULL);
          r = shape[0];
          break;
        }
      }
      if (r < shape[0] && s[r] != sum) fail("a wrong row sum", NULL);
    }
    kiln_tensor_free(out[0]);
    kiln_tensor_free(out[1]);
    kiln_tensor_free(in);
    atomic_fetch_add(&executes, 1);
  }
  free(x);
  kiln_status_free(st);
  return NULL;
}

static void *compiler(void *arg) {
  (void)arg;
  kiln_status *st = kiln_status_new();
  while (now() < deadline && atomic_load(&failures) == 0) {
    kiln_model *m = kiln_model_compile(ctx, graph, st);
    if (!m) {
      fail("compile", st);
      break;
    }
    kiln_model_free(m);
    kiln_context_set_profile(ctx, atomic_fetch_add(&compiles, 1) % 2 == 0, st);
  }
  kiln_status_free(st);
  return NULL;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 10;
  kiln_status *st = kiln_status_new();
  char trace[64];
  snprintf(trace, sizeof trace, "/tmp/kiln_tsan_trace_%d.json", (int)getpid());
  if (!(ctx = kiln_context_new(st)) || kiln_context_set_cache_dir(ctx, NULL, 0, st) < 0 ||
      kiln_context_set_num_threads(ctx, 2, st) < 0 ||
      kiln_context_set_specialize(ctx, KILN_SPECIALIZE_ASYNC, st) < 0 ||
      kiln_context_set_specialize_hot(ctx, 1, st) < 0 ||
      kiln_context_set_code_limit(ctx, 0, st) < 0 ||
      kiln_context_set_log(ctx, count_line, NULL, KILN_LOG_DEBUG, st) < 0 ||
      kiln_context_set_trace(ctx, trace, st) < 0 ||
      !(graph = kiln_graph_parse(GRAPH, strlen(GRAPH), "stress", st)) ||
      !(models[0] = kiln_model_compile(ctx, graph, st)) ||
      !(models[1] = kiln_model_compile(ctx, graph, st)) ||
      kiln_model_set_specialize(models[1], KILN_SPECIALIZE_SYNC, st) < 0 ||
      kiln_model_set_max_variants(models[1], 2, st) < 0 ||
      kiln_model_set_profile(models[0], 1, st) < 0) {
    fprintf(stderr, "tsan_stress: setup: %s\n", kiln_status_message(st));
    return 1;
  }
  deadline = now() + secs;
  pthread_t th[THREADS + 1];
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, executor, (void *)(uintptr_t)i);
  pthread_create(&th[THREADS], NULL, compiler, NULL);
  for (int i = 0; i <= THREADS; i++) pthread_join(th[i], NULL);
  printf("tsan_stress: %d executes checked, %d models compiled and freed, variants built "
         "%.0f (async) %.0f (sync, %.0f evicted), %.0f kernels unloaded, %d failures\n",
         atomic_load(&executes), atomic_load(&compiles),
         kiln_model_counter(models[0], KILN_COUNTER_VARIANTS_BUILT),
         kiln_model_counter(models[1], KILN_COUNTER_VARIANTS_BUILT),
         kiln_model_counter(models[1], KILN_COUNTER_VARIANTS_EVICTED),
         kiln_context_counter(ctx, KILN_COUNTER_KERNELS_EVICTED), atomic_load(&failures));
  kiln_profile *prof = kiln_model_profile(models[0], st);
  printf("tsan_stress: model 0 profiled %llu executes; %d log lines\n",
         (unsigned long long)kiln_profile_executes(prof), atomic_load(&log_lines));
  if (!prof || kiln_profile_executes(prof) == 0) atomic_fetch_add(&failures, 1);
  kiln_profile_free(prof);
  kiln_model_free(models[0]);
  kiln_model_free(models[1]);
  kiln_graph_free(graph);
  kiln_context_free(ctx);
  kiln_status_free(st);
  unlink(trace);
  return atomic_load(&failures) ? 1 : 0;
}
