/* service_minilm.c - a sentence encoder imported from ONNX (e.g.
 * paraphrase-MiniLM-L3-v2) on kiln beside ONNX Runtime's C API: the same
 * file, the same token ids, one request at a time. Prints kiln's import and
 * compile time beside ORT's session creation, then per batch x sequence the
 * median latency of each, their ratio and the largest difference between
 * the two last outputs (the sentence embeddings).
 *
 * usage: bench_service_minilm MODEL.onnx LIBONNXRUNTIME.so [THREADS [RUNS [BxS,...]]]
 * THREADS (default 1) goes to ORT's intra-op pool and to kiln's pool
 * (KILN_NUM_THREADS); kiln specializes each shape before it is timed
 * (policy sync, then warm-up runs). Token ids are < 1000 and seeded, the
 * attention mask all ones. Exit status 1 when a run fails or the outputs
 * differ by more than 1e-3 relative. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/onnx.h"
#include "kiln/runtime.h"
#include "service_ort.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One shape on both engines; 0, or -1 after printing why. */
static int run_shape(kiln_model *m, svc_ort_session *s, int64_t b, int64_t q, int runs,
                     double *worst) {
  int64_t shape[2] = {b, q};
  kiln_status *st = kiln_status_new();
  kiln_tensor *ins[2] = {kiln_tensor_new(KILN_INT64, 2, shape, st),
                         kiln_tensor_new(KILN_INT64, 2, shape, st)};
  int nout = kiln_model_num_outputs(m), rc = -1;
  kiln_tensor **outs = calloc((size_t)nout, sizeof *outs);
  double *tk = malloc((size_t)runs * sizeof *tk), *to = malloc((size_t)runs * sizeof *to);
  float *ref = NULL;
  char err[512];
  if (!ins[0] || !ins[1] || !outs || !tk || !to) goto done;
  uint64_t seed = 16;
  int64_t *ids = kiln_tensor_data(ins[0]), *mask = kiln_tensor_data(ins[1]);
  for (int64_t i = 0; i < b * q; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    ids[i] = (int64_t)((seed >> 33) % 1000);
    mask[i] = 1;
  }
  for (int r = -3; r < runs; r++) { /* 3 warm-up runs */
    for (int i = 0; i < nout; i++) kiln_tensor_free(outs[i]), outs[i] = NULL;
    double t0 = now_ms();
    if (kiln_model_execute(m, ins, 2, outs, nout, st) < 0) {
      fprintf(stderr, "kiln %lldx%lld: %s\n", (long long)b, (long long)q, kiln_status_message(st));
      goto done;
    }
    if (r >= 0) tk[r] = now_ms() - t0;
  }
  const kiln_tensor *last = outs[nout - 1];
  int64_t numel = kiln_tensor_numel(last);
  if (!(ref = malloc((size_t)numel * sizeof *ref))) goto done;
  for (int r = -3; r < runs; r++) {
    double t0 = now_ms();
    if (svc_ort_session_run_encoder(s, ids, mask, b, q, ref, numel, err, sizeof err)) {
      fprintf(stderr, "ort %lldx%lld: %s\n", (long long)b, (long long)q, err);
      goto done;
    }
    if (r >= 0) to[r] = now_ms() - t0;
  }
  const float *got = kiln_tensor_data(last);
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < numel; i++) {
    diff = fmax(diff, fabs((double)got[i] - ref[i]));
    scale = fmax(scale, fabs(ref[i]));
  }
  double rel = scale > 0 ? diff / scale : diff;
  *worst = fmax(*worst, rel);
  double mk = median(tk, runs), mo = median(to, runs);
  printf("%5lld x %-5lld %10.3f %10.3f %8.2f %12.3g\n", (long long)b, (long long)q, mk, mo,
         mk / mo, rel);
  rc = 0;
done:
  for (int i = 0; outs && i < nout; i++) kiln_tensor_free(outs[i]);
  kiln_tensor_free(ins[0]);
  kiln_tensor_free(ins[1]);
  free(outs);
  free(tk);
  free(to);
  free(ref);
  kiln_status_free(st);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL.onnx LIBONNXRUNTIME.so [THREADS [RUNS [BxS,...]]]\n", argv[0]);
    return 2;
  }
  const char *model = argv[1], *lib = argv[2];
  int threads = argc > 3 ? atoi(argv[3]) : 1, runs = argc > 4 ? atoi(argv[4]) : 20;
  const char *shapes = argc > 5 ? argv[5] : "1x16,1x128,1x384,8x128";
  if (threads < 1 || runs < 1) return 2;
  char nt[16];
  snprintf(nt, sizeof nt, "%d", threads);
  setenv("KILN_NUM_THREADS", nt, 1);
  char err[512];
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = NULL;
  kiln_model *m = NULL;
  svc_ort *o = NULL;
  svc_ort_session *s = NULL;
  int rc = 1;
  double t0 = now_ms(), t1 = 0, t2 = 0, ort_ms = 0, worst = 0;
  if (ctx && (g = kiln_graph_from_onnx_file(model, st))) {
    t1 = now_ms();
    if ((m = kiln_model_compile(ctx, g, st)) && kiln_model_set_specialize(m, KILN_SPECIALIZE_SYNC, st))
      kiln_model_free(m), m = NULL;
    t2 = now_ms();
  }
  if (!m) {
    fprintf(stderr, "kiln: %s: %s\n", model, kiln_status_message(st));
    goto done;
  }
  if (!(o = svc_ort_open(lib, err, sizeof err)) ||
      !(s = svc_ort_session_new(o, model, threads, &ort_ms, err, sizeof err))) {
    fprintf(stderr, "%s\n", err);
    goto done;
  }
  printf("%s, %d thread(s), median of %d runs, onnxruntime %s\n", model, threads, runs,
         svc_ort_version(o));
  printf("load: kiln import %.1f ms + compile %.1f ms; ORT session %.1f ms\n", t1 - t0, t2 - t1,
         ort_ms);
  printf("%-13s %10s %10s %8s %12s\n", "batch x seq", "kiln ms", "ORT ms", "kiln/ORT", "rel diff");
  rc = 0;
  for (const char *p = shapes; *p && !rc;) {
    long long b, q;
    int used = 0;
    if (sscanf(p, "%lldx%lld%n", &b, &q, &used) != 2 || b < 1 || q < 1) {
      fprintf(stderr, "bad shape list at '%s'\n", p);
      rc = 2;
      break;
    }
    rc = run_shape(m, s, b, q, runs, &worst) ? 1 : 0;
    p += used;
    if (*p == ',') p++;
  }
  if (!rc && worst > 1e-3) {
    fprintf(stderr, "kiln and ORT differ: %g relative\n", worst);
    rc = 1;
  }
done:
  svc_ort_session_free(s);
  svc_ort_close(o);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return rc;
}
