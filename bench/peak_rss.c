/* peak_rss.c (bench_peak_rss) - the peak resident memory of one process
 * that loads a hidden-state encoder (bench/service_gen.py's: one f32 input
 * [1, seq, H], one output) and runs one request, for issue 15's memory
 * goal (kiln's peak <= ONNX Runtime's + 5%). One engine per process, so
 * each peak is its own:
 *   kiln   MODEL.mlir WEIGHTS.safetensors: kiln_model_bind_weights_file
 *          (the file stays mapped; a weight every read of which is a packed
 *          GEMM operand is kept once, packed: the mode where kiln owns the
 *          weights);
 *   onnx   MODEL.onnx: kiln_graph_from_onnx_file + kiln_model_compile
 *          (the graph's initializers, read in place from the file's
 *          mapping, bound by name; a packed weight's pages given back);
 *   ort    LIBONNXRUNTIME.so MODEL.onnx: ONNX Runtime's C API session.
 * Prints "R peak_rss_ENGINE kiln|ort 1 MiB 1 P P P" (bench/report.py's
 * format) with P = VmHWM, and the RSS before loading on an "M" line.
 *
 * usage: bench_peak_rss kiln MODEL.mlir WEIGHTS.safetensors SEQ
 *        bench_peak_rss onnx MODEL.onnx SEQ
 *        bench_peak_rss ort LIBONNXRUNTIME.so MODEL.onnx SEQ
 * Exit status 1 when loading or the run fails, 2 on a usage error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "service_ort.h"

/* /proc/self/status field `key` (kB) in MiB, or -1. */
static double status_mib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') v = atof(line + n + 1) / 1024.0;
  if (f) fclose(f);
  return v;
}

static float *hidden_input(int64_t seq, int64_t hidden) {
  float *x = malloc((size_t)(seq * hidden) * sizeof *x);
  uint32_t s = 12345;
  for (int64_t i = 0; x && i < seq * hidden; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  }
  return x;
}

/* One request on m; 0 or -1 (message printed). */
static int kiln_request(kiln_model *m, int64_t seq, kiln_status *st) {
  int64_t hidden = kiln_model_input_dim_static(m, 0, 2);
  if (hidden <= 0) {
    fprintf(stderr, "bench_peak_rss: input 0 has no static hidden size\n");
    return -1;
  }
  int64_t shape[3] = {1, seq, hidden};
  float *x = hidden_input(seq, hidden);
  kiln_tensor *in = x ? kiln_tensor_borrow(KILN_FLOAT32, 3, shape, x, st) : NULL;
  kiln_tensor *out = NULL;
  int rc = in && kiln_model_execute(m, &in, 1, &out, 1, st) == 0 ? 0 : -1;
  if (rc) fprintf(stderr, "bench_peak_rss: %s\n", kiln_status_message(st));
  kiln_tensor_free(out);
  kiln_tensor_free(in);
  free(x);
  return rc;
}

static int run_kiln(const char *engine, const char *model, const char *weights, int64_t seq) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = NULL;
  kiln_model *m = NULL;
  int rc = -1;
  if (!ctx || kiln_context_set_num_threads(ctx, 1, st)) goto done;
  g = weights ? kiln_graph_load(model, st) : kiln_graph_from_onnx_file(model, st);
  if (!g || !(m = kiln_model_compile(ctx, g, st))) goto done;
  kiln_graph_free(g);
  g = NULL;
  if (weights && kiln_model_bind_weights_file(m, weights, st)) goto done;
  rc = kiln_request(m, seq, st);
done:
  if (rc && kiln_status_code(st) != KILN_OK)
    fprintf(stderr, "bench_peak_rss: %s\n", kiln_status_message(st));
  double peak = status_mib("VmHWM");
  if (rc == 0)
    printf("R\tpeak_rss_%s\tkiln\t1\tMiB\t1\t%.1f\t%.1f\t%.1f\n", engine, peak, peak, peak);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return rc ? 1 : 0;
}

static int run_ort(const char *lib, const char *model, int64_t seq) {
  char err[512] = "";
  double load_ms = 0;
  const int64_t hidden = 768; /* service_gen.py's */
  svc_ort *o = svc_ort_open(lib, err, sizeof err);
  svc_ort_session *s = o ? svc_ort_session_new(o, model, 1, &load_ms, err, sizeof err) : NULL;
  float *x = hidden_input(seq, hidden), *y = malloc((size_t)(seq * hidden) * sizeof *y);
  int rc = s && x && y ? svc_ort_session_run(s, x, y, 1, seq, hidden, err, sizeof err) : -1;
  if (rc) fprintf(stderr, "bench_peak_rss: ONNX Runtime: %s\n", err[0] ? err : "out of memory");
  double peak = status_mib("VmHWM");
  if (rc == 0) printf("R\tpeak_rss_ort\tort\t1\tMiB\t1\t%.1f\t%.1f\t%.1f\n", peak, peak, peak);
  free(x);
  free(y);
  svc_ort_session_free(s);
  svc_ort_close(o);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *e = argc > 1 ? argv[1] : "";
  int want = strcmp(e, "kiln") == 0 || strcmp(e, "ort") == 0 ? 5 : strcmp(e, "onnx") == 0 ? 4 : 0;
  int64_t seq = want && argc == want ? atoll(argv[want - 1]) : 0;
  if (!want || argc != want || seq < 1) {
    fprintf(stderr, "usage: bench_peak_rss kiln MODEL.mlir WEIGHTS.safetensors SEQ\n"
                    "       bench_peak_rss onnx MODEL.onnx SEQ\n"
                    "       bench_peak_rss ort LIBONNXRUNTIME.so MODEL.onnx SEQ\n");
    return 2;
  }
  printf("M\trss_before_load_%s_MiB\t%.1f\n", e, status_mib("VmRSS"));
  if (strcmp(e, "ort") == 0) return run_ort(argv[2], argv[3], seq);
  return run_kiln(e, argv[2], strcmp(e, "kiln") == 0 ? argv[3] : NULL, seq);
}
