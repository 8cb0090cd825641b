/* encoder_latency.c (bench_encoder_latency) - a transformer encoder
 * imported from ONNX on kiln beside ONNX Runtime's C API: the same file,
 * the same inputs, one request at a time. Two kinds of model:
 *  - a text encoder (inputs input_ids and attention_mask, si64 [batch,
 *    seq]; e.g. paraphrase-MiniLM-L3-v2): token ids < 1000, seeded, the
 *    mask all ones; the last output is compared;
 *  - a hidden-state encoder (one f32 input "hidden" [batch, seq, H], one
 *    output "out"; bench/service_gen.py's BERT-base-sized encoder): seeded
 *    values in [-1, 1).
 * Prints kiln's import and compile time beside ORT's session creation,
 * then per batch x seq the median latency of each, their ratio and the
 * largest difference between the two outputs, relative to the largest
 * magnitude.
 *
 * usage: bench_encoder_latency MODEL.onnx LIBONNXRUNTIME.so [THREADS [RUNS [BxS,...]]]
 *                              [--tsv NAME]
 * THREADS (default 1) goes to ORT's intra-op pool and to kiln's pool
 * (KILN_NUM_THREADS); kiln specializes each shape before it is timed
 * (policy sync, then 3 warm-up runs, as ORT gets). --tsv prints the
 * figures as bench/report.py reads them instead: "R NAME_load kiln|ort T
 * ms 1 t t t" and "R NAME_BxS kiln|ort T ms RUNS min median max".
 * Exit status 1 when a run fails or the outputs differ by more than 1e-3
 * relative, 2 on a usage error. */
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

/* Sorts v. */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *tsv_name; /* --tsv NAME, or NULL for the table */

/* One R line: min, median, max of v (n runs). */
static void tsv_row(const char *cid, const char *engine, int threads, double *v, int n) {
  double med = median(v, n);
  printf("R\t%s\t%s\t%d\tms\t%d\t%.4f\t%.4f\t%.4f\n", cid, engine, threads, n, v[0], med,
         v[n - 1]);
}

typedef struct encoder {
  kiln_model *m;
  svc_ort_session *s;
  bool tokens;    /* input_ids + attention_mask; else one f32 hidden input */
  int64_t hidden; /* the hidden input's last dim */
  int threads;
} encoder;

/* One shape on both engines; 0, or -1 after printing why. */
static int run_shape(const encoder *e, int64_t b, int64_t q, int runs, double *worst) {
  int64_t shape[3] = {b, q, e->hidden};
  kiln_status *st = kiln_status_new();
  kiln_tensor *ins[2] = {NULL, NULL};
  int nin = e->tokens ? 2 : 1, nout = kiln_model_num_outputs(e->m), rc = -1;
  kiln_tensor **outs = calloc((size_t)nout, sizeof *outs);
  double *tk = malloc((size_t)runs * sizeof *tk), *to = malloc((size_t)runs * sizeof *to);
  float *ref = NULL;
  char err[512];
  if (e->tokens) {
    ins[0] = kiln_tensor_new(KILN_INT64, 2, shape, st);
    ins[1] = kiln_tensor_new(KILN_INT64, 2, shape, st);
  } else {
    ins[0] = kiln_tensor_new(KILN_FLOAT32, 3, shape, st);
  }
  if (!ins[0] || (e->tokens && !ins[1]) || !outs || !tk || !to) goto done;
  uint64_t seed = 16;
  int64_t n = kiln_tensor_numel(ins[0]);
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    if (e->tokens) {
      ((int64_t *)kiln_tensor_data(ins[0]))[i] = (int64_t)((seed >> 33) % 1000);
      ((int64_t *)kiln_tensor_data(ins[1]))[i] = 1;
    } else {
      ((float *)kiln_tensor_data(ins[0]))[i] = (float)((seed >> 40) / 8388608.0 - 1.0);
    }
  }
  for (int r = -3; r < runs; r++) { /* 3 warm-up runs */
    for (int i = 0; i < nout; i++) kiln_tensor_free(outs[i]), outs[i] = NULL;
    double t0 = now_ms();
    if (kiln_model_execute(e->m, ins, nin, outs, nout, st) < 0) {
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
    int bad = e->tokens ? svc_ort_session_run_encoder(e->s, kiln_tensor_data(ins[0]),
                                                      kiln_tensor_data(ins[1]), b, q, ref, numel,
                                                      err, sizeof err)
                        : svc_ort_session_run(e->s, kiln_tensor_data(ins[0]), ref, b, q,
                                              e->hidden, err, sizeof err);
    if (bad) {
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
  if (tsv_name) {
    char cid[160];
    snprintf(cid, sizeof cid, "%s_%lldx%lld", tsv_name, (long long)b, (long long)q);
    tsv_row(cid, "kiln", e->threads, tk, runs);
    tsv_row(cid, "ort", e->threads, to, runs);
  } else {
    double mk = median(tk, runs), mo = median(to, runs);
    printf("%5lld x %-5lld %10.3f %10.3f %8.2f %12.3g\n", (long long)b, (long long)q, mk, mo,
           mk / mo, rel);
  }
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

/* The model's kind from its inputs; 0, or -1 after printing why. */
static int input_kind(encoder *e, const char *model) {
  int nin = kiln_model_num_inputs(e->m);
  if (nin == 2 && kiln_model_input_dtype(e->m, 0) == KILN_INT64) {
    e->tokens = true;
    return 0;
  }
  if (nin == 1 && kiln_model_input_dtype(e->m, 0) == KILN_FLOAT32 &&
      kiln_model_input_rank(e->m, 0) == 3 && kiln_model_input_dim_static(e->m, 0, 2) > 0) {
    e->hidden = kiln_model_input_dim_static(e->m, 0, 2);
    return 0;
  }
  fprintf(stderr, "%s: neither a text encoder (input_ids, attention_mask) nor one f32 input "
                  "[batch, seq, H]\n", model);
  return -1;
}

int main(int argc, char **argv) {
  const char *pos[5] = {0};
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--tsv") == 0 && i + 1 < argc) tsv_name = argv[++i];
    else if (npos < 5) pos[npos++] = argv[i];
    else npos = 6;
  }
  if (npos < 2 || npos > 5) {
    fprintf(stderr, "usage: %s MODEL.onnx LIBONNXRUNTIME.so [THREADS [RUNS [BxS,...]]] "
                    "[--tsv NAME]\n", argv[0]);
    return 2;
  }
  const char *model = pos[0], *lib = pos[1];
  encoder e = {.threads = npos > 2 ? atoi(pos[2]) : 1};
  int runs = npos > 3 ? atoi(pos[3]) : 20;
  const char *shapes = npos > 4 ? pos[4] : "1x16,1x128,1x384,8x128";
  if (e.threads < 1 || runs < 1) return 2;
  char nt[16];
  snprintf(nt, sizeof nt, "%d", e.threads);
  setenv("KILN_NUM_THREADS", nt, 1);
  char err[512];
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_graph *g = NULL;
  svc_ort *o = NULL;
  int rc = 1;
  double t0 = now_ms(), t1 = 0, t2 = 0, ort_ms = 0, worst = 0;
  if (ctx && (g = kiln_graph_from_onnx_file(model, st))) {
    t1 = now_ms();
    if ((e.m = kiln_model_compile(ctx, g, st)) &&
        kiln_model_set_specialize(e.m, KILN_SPECIALIZE_SYNC, st))
      kiln_model_free(e.m), e.m = NULL;
    t2 = now_ms();
  }
  if (!e.m) {
    fprintf(stderr, "kiln: %s: %s\n", model, kiln_status_message(st));
    goto done;
  }
  if (input_kind(&e, model) < 0) goto done;
  if (!(o = svc_ort_open(lib, err, sizeof err)) ||
      !(e.s = svc_ort_session_new(o, model, e.threads, &ort_ms, err, sizeof err))) {
    fprintf(stderr, "%s\n", err);
    goto done;
  }
  if (tsv_name) {
    char cid[160];
    double lk = t2 - t0;
    snprintf(cid, sizeof cid, "%s_load", tsv_name);
    tsv_row(cid, "kiln", e.threads, &lk, 1);
    tsv_row(cid, "ort", e.threads, &ort_ms, 1);
    printf("M\t%s_ort_version\t%s\n", tsv_name, svc_ort_version(o));
  } else {
    printf("%s, %d thread(s), median of %d runs, onnxruntime %s\n", model, e.threads, runs,
           svc_ort_version(o));
    printf("load: kiln import %.1f ms + compile %.1f ms; ORT session %.1f ms\n", t1 - t0,
           t2 - t1, ort_ms);
    printf("%-13s %10s %10s %8s %12s\n", "batch x seq", "kiln ms", "ORT ms", "kiln/ORT",
           "rel diff");
  }
  fflush(stdout);
  rc = 0;
  for (const char *p = shapes; *p && !rc;) {
    long long b, q;
    int used = 0;
    if (sscanf(p, "%lldx%lld%n", &b, &q, &used) != 2 || b < 1 || q < 1) {
      fprintf(stderr, "bad shape list at '%s'\n", p);
      rc = 2;
      break;
    }
    rc = run_shape(&e, b, q, runs, &worst) ? 1 : 0;
    fflush(stdout);
    p += used;
    if (*p == ',') p++;
  }
  if (!rc && worst > 1e-3) {
    fprintf(stderr, "kiln and ORT differ: %g relative\n", worst);
    rc = 1;
  }
done:
  svc_ort_session_free(e.s);
  svc_ort_close(o);
  kiln_model_free(e.m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return rc;
}
