/* service.c (bench_service) - replays request traces against a BERT-style
 * encoder with kiln and ONNX Runtime, both through their C APIs, in one
 * process, and prints one table per run: throughput, p50 / p99 latency,
 * CPU time per request, and kiln's specialization counters, per trace x
 * threads x engine (ORT, or kiln under a specialization policy).
 *
 * Inputs (bench/service_gen.py writes them): the model as MO text with
 * mo.constant.external weights (--mlir), its weights (--weights, read with
 * the M_Safetensors reader libkiln.so exports), the same model as ONNX
 * (--onnx), and traces ("SEQ [GAP_MS]" a line, '#' comments). Input
 * [1, seq, hidden]; hidden is read from the model.
 *
 * What is measured: each (trace, threads, engine) run starts cold - a new
 * kiln context (disk cache off unless --cache-dir) and model, or a new ORT
 * session - then replays the trace closed-loop (each request issued when
 * the previous returns; --gaps: at its arrival time, latency counted from
 * arrival). Latency is one kiln_model_execute / OrtRun with the caller's
 * input and output buffers (tensor wrappers made per request on both
 * sides). CPU time is getrusage(RUSAGE_SELF) over the replay: every thread
 * of the process, kiln's compile thread included. Runs are sequential, so
 * no engine's threads compete with another's.
 *
 * Before any timing: kiln (policy off, and sync at one length) and ORT on
 * the same inputs at a few lengths, max |diff| printed; a disagreement
 * exits 1 without timing. Exit 2 on a usage or load error. */
#define _GNU_SOURCE /* getrusage's RUSAGE_SELF, strdup */
#include <kiln/kiln.h>
#include <math.h>
#include <stddef.h>
#include <max/c/common.h>
#include <max/c/safetensors.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "service_ort.h"

enum { MAX_TRACES = 8, MAX_ENGINES = 16, MAX_THREADS = 8, MAX_ROUNDS = 9 };

typedef struct trace {
  const char *name;
  int n;
  int *seq;
  double *gap_ms;
  int max_seq;
} trace;

typedef enum engine_kind { ENG_ORT, ENG_KILN } engine_kind;

typedef struct engine {
  char label[48];  /* "ort", "async", "sync:pow2", ... (+ " #round") */
  engine_kind kind;
  kiln_specialize_policy policy;
  kiln_bucket_kind bucket;
  int64_t bucket_n;
} engine;

typedef struct result {
  int n, planned;
  double wall_s, cpu_s, load_ms, p50, p99, mean, max;
  double loadavg; /* the machine's 1-minute load average when the replay ended */
  /* kiln only, deltas over the replay */
  double variants, compiles, compile_ms, hits, misses, dropped, pending;
} result;

typedef struct options {
  const char *mlir, *weights, *onnx, *ort_lib, *cache_dir, *markdown, *raw;
  trace traces[MAX_TRACES];
  int ntraces;
  engine engines[MAX_ENGINES];
  int nengines;
  int threads[MAX_THREADS];
  int nthreads;
  int requests;     /* first N of each trace; 0: all */
  double budget_s;  /* stop a replay after this long; 0: never */
  int gaps;
  int rounds;       /* each (trace, threads) group this many times */
  int ahead;        /* lengths an `ahead` engine specializes at load */
} options;

/* ---- small helpers */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double loadavg_1min(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}

static void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[n]. */
static double percentile(const double *v, int n, double p) {
  int k = (int)ceil(p / 100.0 * n);
  if (k < 1) k = 1;
  return v[k - 1];
}

/* ---- traces */

static int trace_load(trace *t, const char *name, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "bench_service: cannot open trace %s\n", path);
    return -1;
  }
  char line[256];
  int cap = 0, lineno = 0;
  t->name = name;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *p = line + strspn(line, " \t");
    if (*p == '#' || *p == '\n' || *p == '\0') continue;
    int seq;
    double gap = 0;
    int got = sscanf(p, "%d %lf", &seq, &gap);
    if (got < 1 || seq < 1) {
      fprintf(stderr, "bench_service: %s:%d: expected 'SEQ [GAP_MS]' with SEQ >= 1\n", path,
              lineno);
      fclose(f);
      return -1;
    }
    if (t->n == cap) {
      cap = cap ? 2 * cap : 512;
      t->seq = realloc(t->seq, (size_t)cap * sizeof *t->seq);
      t->gap_ms = realloc(t->gap_ms, (size_t)cap * sizeof *t->gap_ms);
      if (!t->seq || !t->gap_ms) {
        fprintf(stderr, "bench_service: out of memory\n");
        fclose(f);
        return -1;
      }
    }
    t->seq[t->n] = seq;
    t->gap_ms[t->n] = gap > 0 ? gap : 0;
    if (seq > t->max_seq) t->max_seq = seq;
    t->n++;
  }
  fclose(f);
  if (t->n == 0) {
    fprintf(stderr, "bench_service: trace %s has no requests\n", path);
    return -1;
  }
  return 0;
}

/* The k most frequent lengths of t (ties: the shorter first) into out. */
static int trace_top_lengths(const trace *t, int k, int64_t *out) {
  int *count = calloc((size_t)t->max_seq + 1, sizeof *count);
  if (!count) return 0;
  for (int i = 0; i < t->n; i++) count[t->seq[i]]++;
  int got = 0;
  for (; got < k; got++) {
    int best = 0;
    for (int s = 1; s <= t->max_seq; s++)
      if (count[s] > count[best]) best = s;
    if (!best) break;
    out[got] = best;
    count[best] = 0;
  }
  free(count);
  return got;
}

/* ---- kiln */

typedef struct kiln_side {
  kiln_graph *graph;
  M_Safetensors *st;
  kiln_tensor **weights; /* borrowed views of st's data, one per graph weight */
  int nweights;
  int64_t hidden;
} kiln_side;

static int kiln_side_open(kiln_side *k, const char *mlir, const char *weights) {
  kiln_status *st = kiln_status_new();
  M_Status *ms = M_newStatus();
  kiln_context *ctx = NULL;
  kiln_model *m = NULL;
  int rc = -1;
  k->graph = kiln_graph_load(mlir, st);
  if (!k->graph) {
    fprintf(stderr, "bench_service: %s\n", kiln_status_message(st));
    goto done;
  }
  k->st = M_loadSafetensors(&weights, 1, NULL, ms);
  if (!k->st) {
    fprintf(stderr, "bench_service: %s: %s\n", weights, M_getError(ms));
    goto done;
  }
  /* A throwaway model with the disk cache off tells the weights and the
   * hidden size; the engines compile their own. */
  ctx = kiln_context_new(st);
  if (!ctx || kiln_context_set_cache_dir(ctx, NULL, 0, st) ||
      !(m = kiln_model_compile(ctx, k->graph, st))) {
    fprintf(stderr, "bench_service: %s: %s\n", mlir, kiln_status_message(st));
    goto done;
  }
  k->hidden = kiln_model_input_dim_static(m, 0, 2);
  if (kiln_model_num_inputs(m) != 1 || kiln_model_input_rank(m, 0) != 3 || k->hidden < 1) {
    fprintf(stderr, "bench_service: %s: expected one input [batch, seq, HIDDEN]\n", mlir);
    goto done;
  }
  k->nweights = kiln_model_num_weights(m);
  k->weights = calloc((size_t)k->nweights + 1, sizeof *k->weights);
  if (!k->weights) {
    fprintf(stderr, "bench_service: out of memory\n");
    goto done;
  }
  for (int i = 0; i < k->nweights; i++) {
    const char *name = kiln_model_weight_name(m, i);
    int64_t shape[8];
    size_t rank = M_getSafetensorRank(k->st, name, ms);
    if (M_isError(ms) || rank > 8 || M_getSafetensorDtype(k->st, name, ms) != M_FLOAT32) {
      fprintf(stderr, "bench_service: weight %s: %s\n", name,
              M_isError(ms) ? M_getError(ms) : "expected an F32 tensor of rank <= 8");
      goto done;
    }
    M_getSafetensorShape(k->st, name, shape, ms);
    void *data = (void *)M_getSafetensorData(k->st, name, ms); /* kiln only reads weights */
    k->weights[i] = kiln_tensor_borrow(KILN_FLOAT32, (int)rank, shape, data, st);
    if (!k->weights[i]) {
      fprintf(stderr, "bench_service: weight %s: %s\n", name, kiln_status_message(st));
      goto done;
    }
  }
  rc = 0;
done:
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
  M_freeStatus(ms);
  return rc;
}

static void kiln_side_close(kiln_side *k) {
  for (int i = 0; i < k->nweights; i++) kiln_tensor_free(k->weights[i]);
  free(k->weights);
  M_freeSafetensors(k->st);
  kiln_graph_free(k->graph);
}

/* A new context (threads, disk cache) and model with every weight bound,
 * policy and bucket set. NULL on error (message printed). */
static kiln_model *kiln_model_open(const kiln_side *k, const engine *e, int threads,
                                   const char *cache_dir, kiln_context **ctx_out) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = NULL;
  if (!ctx || kiln_context_set_num_threads(ctx, threads, st) ||
      kiln_context_set_cache_dir(ctx, cache_dir, 0, st) ||
      !(m = kiln_model_compile(ctx, k->graph, st)))
    goto fail;
  for (int i = 0; i < k->nweights; i++)
    if (kiln_model_bind_weight(m, kiln_model_weight_name(m, i), k->weights[i], st)) goto fail;
  if (kiln_model_set_specialize(m, e->policy, st) ||
      (e->bucket != KILN_BUCKET_EXACT &&
       kiln_model_set_bucket(m, "seq", e->bucket, e->bucket_n, st)))
    goto fail;
  kiln_status_free(st);
  *ctx_out = ctx;
  return m;
fail:
  fprintf(stderr, "bench_service: kiln (%s, %d threads): %s\n", e->label, threads,
          kiln_status_message(st));
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return NULL;
}

static int kiln_run(kiln_model *m, float *in, float *out, int64_t seq, int64_t hidden,
                    kiln_status *st) {
  const int64_t shape[3] = {1, seq, hidden};
  kiln_tensor *x = kiln_tensor_borrow(KILN_FLOAT32, 3, shape, in, st);
  kiln_tensor *y = kiln_tensor_borrow(KILN_FLOAT32, 3, shape, out, st);
  int rc = x && y ? kiln_model_execute(m, &x, 1, &y, 1, st) : -1;
  kiln_tensor_free(x);
  kiln_tensor_free(y);
  return rc;
}

/* ---- one replay */

typedef struct bench {
  const options *opt;
  kiln_side kiln;
  svc_ort *ort;
  float *in, *out; /* [max_seq * hidden] */
  double *lat;     /* per request, seconds */
  FILE *raw;       /* --raw: one line per request, or NULL */
  int round;       /* for --raw */
} bench;

/* Runs one (trace, threads, engine); fills r. -1 when the engine could not
 * be set up or a request failed (message printed). */
static int replay(bench *b, const trace *t, int threads, const engine *e, result *r) {
  const options *opt = b->opt;
  int64_t hidden = b->kiln.hidden;
  char err[512];
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = NULL;
  kiln_model *m = NULL;
  svc_ort_session *s = NULL;
  int rc = -1;
  memset(r, 0, sizeof *r);
  r->planned = opt->requests > 0 && opt->requests < t->n ? opt->requests : t->n;

  double t0 = now_s();
  if (e->kind == ENG_ORT) {
    s = svc_ort_session_new(b->ort, opt->onnx, threads, NULL, err, sizeof err);
    if (!s) {
      fprintf(stderr, "bench_service: %s\n", err);
      goto done;
    }
  } else {
    m = kiln_model_open(&b->kiln, e, threads, opt->cache_dir, &ctx);
    if (!m) goto done;
    if (e->policy == KILN_SPECIALIZE_AHEAD) {
      int64_t top[64];
      int n = trace_top_lengths(t, opt->ahead < 64 ? opt->ahead : 64, top);
      for (int i = 0; i < n; i++) {
        const char *syms[2] = {"batch", "seq"};
        int64_t vals[2] = {1, top[i]};
        if (kiln_model_specialize(m, syms, vals, 2, st)) {
          fprintf(stderr, "bench_service: ahead seq=%lld: %s\n", (long long)top[i],
                  kiln_status_message(st));
          goto done;
        }
      }
    }
  }
  r->load_ms = (now_s() - t0) * 1e3;

  double c_compiles = ctx ? kiln_context_counter(ctx, KILN_COUNTER_COMPILES) : 0;
  double c_ms = ctx ? kiln_context_counter(ctx, KILN_COUNTER_COMPILE_MS) : 0;
  double m_built = m ? kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT) : 0;
  double m_hits = m ? kiln_model_counter(m, KILN_COUNTER_HITS) : 0;
  double m_miss = m ? kiln_model_counter(m, KILN_COUNTER_MISSES) : 0;
  double m_drop = m ? kiln_model_counter(m, KILN_COUNTER_ASYNC_DROPPED) : 0;

  double cpu0 = cpu_s(), start = now_s(), arrival = start;
  for (int i = 0; i < r->planned; i++) {
    int64_t seq = t->seq[i];
    if (opt->gaps) {
      arrival += t->gap_ms[i] / 1e3;
      sleep_s(arrival - now_s());
    }
    double a = opt->gaps ? arrival : now_s();
    int bad = e->kind == ENG_ORT ? svc_ort_session_run(s, b->in, b->out, 1, seq, hidden, err,
                                                        sizeof err)
                                 : kiln_run(m, b->in, b->out, seq, hidden, st);
    double done_at = now_s();
    if (bad) {
      fprintf(stderr, "bench_service: %s, request %d (seq %lld): %s\n", e->label, i,
              (long long)seq, e->kind == ENG_ORT ? err : kiln_status_message(st));
      goto done;
    }
    b->lat[r->n++] = done_at - a;
    if (b->raw)
      fprintf(b->raw, "%s\t%d\t%s\t%d\t%d\t%lld\t%.3f\n", t->name, threads, e->label,
              b->round, i, (long long)seq, (done_at - a) * 1e3);
    if (opt->budget_s > 0 && done_at - start > opt->budget_s) break;
  }
  r->wall_s = now_s() - start;
  r->cpu_s = cpu_s() - cpu0;
  r->loadavg = loadavg_1min();

  if (m) {
    r->compiles = kiln_context_counter(ctx, KILN_COUNTER_COMPILES) - c_compiles;
    r->compile_ms = kiln_context_counter(ctx, KILN_COUNTER_COMPILE_MS) - c_ms;
    r->variants = kiln_model_counter(m, KILN_COUNTER_VARIANTS_BUILT) - m_built;
    r->hits = kiln_model_counter(m, KILN_COUNTER_HITS) - m_hits;
    r->misses = kiln_model_counter(m, KILN_COUNTER_MISSES) - m_miss;
    r->dropped = kiln_model_counter(m, KILN_COUNTER_ASYNC_DROPPED) - m_drop;
    r->pending = kiln_model_counter(m, KILN_COUNTER_ASYNC_PENDING);
  }
  qsort(b->lat, (size_t)r->n, sizeof *b->lat, cmp_double);
  double sum = 0;
  for (int i = 0; i < r->n; i++) sum += b->lat[i];
  r->mean = sum / r->n;
  r->p50 = percentile(b->lat, r->n, 50);
  r->p99 = percentile(b->lat, r->n, 99);
  r->max = b->lat[r->n - 1];
  rc = 0;
done:
  kiln_model_free(m);
  kiln_context_free(ctx);
  svc_ort_session_free(s);
  kiln_status_free(st);
  return rc;
}

/* ---- agreement check */

static int check_outputs(bench *b, const int *lengths, int nlengths, int sync_length) {
  const int64_t hidden = b->kiln.hidden;
  char err[512];
  kiln_status *st = kiln_status_new();
  engine off = {"off", ENG_KILN, KILN_SPECIALIZE_OFF, KILN_BUCKET_EXACT, 0};
  engine sync = {"sync", ENG_KILN, KILN_SPECIALIZE_SYNC, KILN_BUCKET_EXACT, 0};
  kiln_context *c1 = NULL, *c2 = NULL;
  kiln_model *m1 = kiln_model_open(&b->kiln, &off, 1, NULL, &c1);
  kiln_model *m2 = m1 ? kiln_model_open(&b->kiln, &sync, 1, NULL, &c2) : NULL;
  svc_ort_session *s = svc_ort_session_new(b->ort, b->opt->onnx, 1, NULL, err, sizeof err);
  float *ref = NULL;
  int bad = !m1 || !m2 || !s;
  if (!s) fprintf(stderr, "bench_service: %s\n", err);
  for (int i = 0; !bad && i <= nlengths; i++) {
    int from_sync = i == nlengths;
    int64_t seq = from_sync ? sync_length : lengths[i];
    size_t n = (size_t)(seq * hidden);
    free(ref);
    ref = malloc(n * sizeof *ref);
    if (!ref || svc_ort_session_run(s, b->in, ref, 1, seq, hidden, err, sizeof err)) {
      fprintf(stderr, "bench_service: check, ORT seq %lld: %s\n", (long long)seq, err);
      bad = 1;
      break;
    }
    if (kiln_run(from_sync ? m2 : m1, b->in, b->out, seq, hidden, st)) {
      fprintf(stderr, "bench_service: check, kiln seq %lld: %s\n", (long long)seq,
              kiln_status_message(st));
      bad = 1;
      break;
    }
    double diff = 0, scale = 1;
    for (size_t j = 0; j < n; j++) {
      double d = fabs((double)b->out[j] - (double)ref[j]);
      if (!(d <= diff)) diff = d; /* NaN counts as a disagreement */
      if (fabs(ref[j]) > scale) scale = fabs(ref[j]);
    }
    double tol = 1e-3 * scale;
    int ok = diff <= tol;
    printf("check: seq %3lld  kiln %-4s vs ORT: max |diff| %.3g (max |ORT| %.3g, tol %.3g)  %s\n",
           (long long)seq, from_sync ? "sync" : "off", diff, scale, tol,
           ok ? "AGREE" : "DISAGREE");
    bad |= !ok;
  }
  free(ref);
  svc_ort_session_free(s);
  kiln_model_free(m2);
  kiln_context_free(c2);
  kiln_model_free(m1);
  kiln_context_free(c1);
  kiln_status_free(st);
  return bad ? -1 : 0;
}

/* ---- the table */

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median over rounds of every figure of r[0..n) (throughput, not wall
 * time: wall_s is set so that n / wall_s is the median throughput). */
static result median_result(const result *r, int n) {
  static const size_t fields[] = {
      offsetof(result, p50),      offsetof(result, p99),      offsetof(result, mean),
      offsetof(result, max),      offsetof(result, load_ms),  offsetof(result, variants),
      offsetof(result, compiles), offsetof(result, compile_ms), offsetof(result, hits),
      offsetof(result, misses),   offsetof(result, dropped),  offsetof(result, pending),
      offsetof(result, loadavg)};
  result m = r[0];
  double v[MAX_ROUNDS];
  for (size_t f = 0; f < sizeof fields / sizeof *fields; f++) {
    for (int i = 0; i < n; i++) memcpy(&v[i], (const char *)&r[i] + fields[f], sizeof(double));
    double med = median(v, n);
    memcpy((char *)&m + fields[f], &med, sizeof med);
  }
  double n_done[MAX_ROUNDS], cpu[MAX_ROUNDS];
  for (int i = 0; i < n; i++) {
    v[i] = r[i].n / r[i].wall_s;
    n_done[i] = r[i].n;
    cpu[i] = r[i].cpu_s / r[i].n;
  }
  double tput = median(v, n);
  m.n = (int)median(n_done, n);
  m.wall_s = m.n / tput;
  m.cpu_s = median(cpu, n) * m.n;
  return m;
}

static void print_row(FILE *f, const trace *t, int threads, const engine *e, const result *r,
                      const result *ort) {
  char n[32], vs[64], kiln[160];
  snprintf(n, sizeof n, r->n < r->planned ? "%d/%d" : "%d", r->n, r->planned);
  double tput = r->n / r->wall_s;
  if (ort && e->kind != ENG_ORT)
    snprintf(vs, sizeof vs, "%.2fx | %.2f", tput / (ort->n / ort->wall_s), r->p99 / ort->p99);
  else
    snprintf(vs, sizeof vs, "%s | %s", e->kind == ENG_ORT ? "1.00x" : "-",
             e->kind == ENG_ORT ? "1.00" : "-");
  if (e->kind == ENG_KILN)
    snprintf(kiln, sizeof kiln, "%.0f | %.0f | %.0f | %.0f/%.0f | %.0f | %.0f", r->variants,
             r->compiles, r->compile_ms, r->hits, r->misses, r->dropped, r->pending);
  else
    snprintf(kiln, sizeof kiln, "- | - | - | - | - | -");
  fprintf(f, "| %s | %d | %s | %s | %.2f | %.1f | %.1f | %.1f | %.3f | %s | %.0f | %s | %.1f |\n",
          t->name, threads, e->label, n, tput, r->p50 * 1e3, r->p99 * 1e3, r->max * 1e3,
          r->cpu_s / r->n, vs, r->load_ms, kiln, r->loadavg);
}

static void print_head(FILE *f) {
  fprintf(f, "| trace | thr | engine | requests | req/s | p50 ms | p99 ms | max ms | CPU s/req"
             " | tput / ORT | p99 / ORT | load ms | variants | compiles | compile ms"
             " | hits/misses | dropped | pending | loadavg |\n");
  fprintf(f, "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
             " ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
}

/* ---- options */

static int parse_engine(engine *e, const char *text) {
  memset(e, 0, sizeof *e);
  snprintf(e->label, sizeof e->label, "%s", text);
  char name[32];
  snprintf(name, sizeof name, "%s", text);
  char *bucket = strchr(name, ':');
  if (bucket) *bucket++ = '\0';
  e->kind = ENG_KILN;
  if (!strcmp(name, "ort")) e->kind = ENG_ORT;
  else if (!strcmp(name, "off")) e->policy = KILN_SPECIALIZE_OFF;
  else if (!strcmp(name, "sync")) e->policy = KILN_SPECIALIZE_SYNC;
  else if (!strcmp(name, "async")) e->policy = KILN_SPECIALIZE_ASYNC;
  else if (!strcmp(name, "ahead")) e->policy = KILN_SPECIALIZE_AHEAD;
  else return -1;
  if (!bucket) return 0;
  if (e->kind == ENG_ORT) return -1;
  if (!strcmp(bucket, "pow2")) e->bucket = KILN_BUCKET_POW2;
  else if (!strncmp(bucket, "mult", 4) && atoi(bucket + 4) > 0) {
    e->bucket = KILN_BUCKET_MULTIPLE;
    e->bucket_n = atoi(bucket + 4);
  } else return -1;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_service --mlir F.mlir --weights F.safetensors --onnx F.onnx\n"
          "                     --ort-lib libonnxruntime.so --trace NAME=FILE [--trace ...]\n"
          "                     [--threads 1,2] [--engines ort,off,async,sync]\n"
          "                     [--requests N] [--budget-s S] [--gaps] [--ahead K]\n"
          "                     [--cache-dir DIR] [--markdown FILE] [--raw FILE]\n"
          "                     [--rounds R]\n"
          "engines: ort | off | async | sync | ahead, a kiln one optionally with\n"
          "         :pow2 or :multN (bucketing of seq), e.g. async:mult32\n"
          "--raw: every request as 'trace threads engine round index seq latency_ms' (TSV)\n"
          "--rounds: each trace x threads group R times, the engines' order reversed\n"
          "          every other round; then a table of the medians over rounds\n");
}

static int parse_list(const char *text, char *buf, size_t cap, char **items, int max) {
  snprintf(buf, cap, "%s", text);
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && n < max;
       tok = strtok_r(NULL, ",", &save))
    items[n++] = tok;
  return n;
}

static int parse_options(options *o, int argc, char **argv) {
  static char ebuf[256], tbuf[64];
  char *items[MAX_ENGINES];
  memset(o, 0, sizeof *o);
  o->ahead = 4;
  o->rounds = 1;
  o->threads[0] = 1;
  o->nthreads = 1;
  const char *engines = "ort,off,async,sync";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = strcmp(a, "--gaps") && strcmp(a, "-h") && strcmp(a, "--help");
    if (takes && !v) {
      fprintf(stderr, "bench_service: %s needs a value\n", a);
      return -1;
    }
    if (!strcmp(a, "--mlir")) o->mlir = v;
    else if (!strcmp(a, "--weights")) o->weights = v;
    else if (!strcmp(a, "--onnx")) o->onnx = v;
    else if (!strcmp(a, "--ort-lib")) o->ort_lib = v;
    else if (!strcmp(a, "--cache-dir")) o->cache_dir = v;
    else if (!strcmp(a, "--markdown")) o->markdown = v;
    else if (!strcmp(a, "--raw")) o->raw = v;
    else if (!strcmp(a, "--engines")) engines = v;
    else if (!strcmp(a, "--requests")) o->requests = atoi(v);
    else if (!strcmp(a, "--budget-s")) o->budget_s = atof(v);
    else if (!strcmp(a, "--ahead")) o->ahead = atoi(v);
    else if (!strcmp(a, "--rounds")) {
      o->rounds = atoi(v);
      if (o->rounds < 1 || o->rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench_service: --rounds takes 1..%d\n", MAX_ROUNDS);
        return -1;
      }
    }
    else if (!strcmp(a, "--gaps")) o->gaps = 1;
    else if (!strcmp(a, "--threads")) {
      int n = parse_list(v, tbuf, sizeof tbuf, items, MAX_THREADS);
      o->nthreads = 0;
      for (int j = 0; j < n; j++)
        if ((o->threads[o->nthreads++] = atoi(items[j])) < 1) {
          fprintf(stderr, "bench_service: bad thread count %s\n", items[j]);
          return -1;
        }
    } else if (!strcmp(a, "--trace")) {
      const char *eq = strchr(v, '=');
      if (!eq || o->ntraces == MAX_TRACES) {
        fprintf(stderr, "bench_service: --trace takes NAME=FILE (at most %d)\n", MAX_TRACES);
        return -1;
      }
      if (trace_load(&o->traces[o->ntraces], strndup(v, (size_t)(eq - v)), eq + 1)) return -1;
      o->ntraces++;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else {
      fprintf(stderr, "bench_service: unknown argument %s\n", a);
      usage(stderr);
      return -1;
    }
    if (takes) i++;
  }
  int n = parse_list(engines, ebuf, sizeof ebuf, items, MAX_ENGINES);
  for (int j = 0; j < n; j++)
    if (parse_engine(&o->engines[o->nengines++], items[j])) {
      fprintf(stderr, "bench_service: unknown engine %s\n", items[j]);
      return -1;
    }
  if (!o->mlir || !o->weights || !o->onnx || !o->ort_lib || !o->ntraces) {
    usage(stderr);
    return -1;
  }
  return 0;
}

/* ---- main */

static void print_header(FILE *f, const bench *b) {
  const options *o = b->opt;
  fprintf(f, "kiln %s, onnxruntime %s; encoder %s (hidden %lld, %d weights)\n", kiln_version(),
          svc_ort_version(b->ort), o->mlir, (long long)b->kiln.hidden, b->kiln.nweights);
  for (int i = 0; i < o->ntraces; i++) {
    const trace *t = &o->traces[i];
    int n = o->requests > 0 && o->requests < t->n ? o->requests : t->n;
    double sum = 0;
    int distinct = 0;
    char *seen = calloc((size_t)t->max_seq + 1, 1);
    for (int j = 0; j < n; j++) {
      sum += t->seq[j];
      if (seen && !seen[t->seq[j]]++) distinct++;
    }
    free(seen);
    fprintf(f, "trace %s: %d requests, mean seq %.1f, max %d, %d distinct lengths\n", t->name, n,
            sum / n, t->max_seq, distinct);
  }
  fprintf(f, "%s, kiln disk cache %s%s\n\n",
          o->gaps ? "open loop (arrival gaps from the trace)" : "closed loop",
          o->cache_dir ? o->cache_dir : "off", o->budget_s > 0 ? ", budget per run" : "");
}

int main(int argc, char **argv) {
  options opt;
  bench b = {.opt = &opt};
  char err[512];
  if (parse_options(&opt, argc, argv)) return 2;
  if (kiln_side_open(&b.kiln, opt.mlir, opt.weights)) return 2;
  b.ort = svc_ort_open(opt.ort_lib, err, sizeof err);
  if (!b.ort) {
    fprintf(stderr, "bench_service: %s\n", err);
    return 2;
  }
  int max_seq = 256, max_n = 1;
  for (int i = 0; i < opt.ntraces; i++) {
    if (opt.traces[i].max_seq > max_seq) max_seq = opt.traces[i].max_seq;
    if (opt.traces[i].n > max_n) max_n = opt.traces[i].n;
  }
  size_t elems = (size_t)max_seq * (size_t)b.kiln.hidden;
  b.in = malloc(elems * sizeof *b.in);
  b.out = malloc(elems * sizeof *b.out);
  b.lat = malloc((size_t)max_n * sizeof *b.lat);
  if (!b.in || !b.out || !b.lat) {
    fprintf(stderr, "bench_service: out of memory\n");
    return 2;
  }
  uint64_t x = 0x9E3779B97F4A7C15u; /* xorshift64: the same input every run */
  for (size_t i = 0; i < elems; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b.in[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }

  print_header(stdout, &b);
  const int lengths[] = {1, 7, 64, max_seq};
  if (check_outputs(&b, lengths, 4, 37)) {
    fprintf(stderr, "bench_service: kiln and ORT disagree: nothing timed\n");
    return 1;
  }
  printf("\n");

  FILE *md = opt.markdown ? fopen(opt.markdown, "w") : NULL;
  b.raw = opt.raw ? fopen(opt.raw, "w") : NULL;
  if ((opt.markdown && !md) || (opt.raw && !b.raw)) {
    fprintf(stderr, "bench_service: cannot write %s\n", md ? opt.raw : opt.markdown);
    return 2;
  }
  print_head(stdout);
  if (md) print_head(md);
  fflush(stdout);
  int failed = 0;
  /* Per group: every round's run of every engine, then the medians. */
  static result runs[MAX_ROUNDS][MAX_ENGINES];
  int ok[MAX_ROUNDS][MAX_ENGINES];
  result *summary = calloc((size_t)(opt.ntraces * opt.nthreads * opt.nengines), sizeof *summary);
  int *summary_ok = calloc((size_t)(opt.ntraces * opt.nthreads * opt.nengines), sizeof *summary_ok);
  if (!summary || !summary_ok) return 2;
  for (int ti = 0; ti < opt.ntraces; ti++)
    for (int hi = 0; hi < opt.nthreads; hi++) {
      const trace *t = &opt.traces[ti];
      int threads = opt.threads[hi];
      for (int round = 0; round < opt.rounds; round++) {
        const result *ort = NULL;
        b.round = round + 1;
        for (int k = 0; k < opt.nengines; k++) {
          int ei = round % 2 ? opt.nengines - 1 - k : k;
          ok[round][ei] = !replay(&b, t, threads, &opt.engines[ei], &runs[round][ei]);
          if (!ok[round][ei]) failed = 1;
          if (ok[round][ei] && opt.engines[ei].kind == ENG_ORT) ort = &runs[round][ei];
        }
        /* the round's rows once it is done (the ORT ratios need ORT's run) */
        for (int ei = 0; ei < opt.nengines; ei++) {
          engine e = opt.engines[ei];
          if (opt.rounds > 1)
            snprintf(e.label, sizeof e.label, "%.30s #%d", opt.engines[ei].label, round + 1);
          for (int pass = 0; pass < 2; pass++) {
            FILE *f = pass ? md : stdout;
            if (!f) continue;
            if (ok[round][ei])
              print_row(f, t, threads, &e, &runs[round][ei], ort);
            else
              fprintf(f, "| %s | %d | %s | failed (see stderr) |\n", t->name, threads, e.label);
          }
        }
        fflush(stdout);
      }
      for (int ei = 0; ei < opt.nengines; ei++) {
        result done[MAX_ROUNDS];
        int n = 0;
        for (int round = 0; round < opt.rounds; round++)
          if (ok[round][ei]) done[n++] = runs[round][ei];
        int at = (ti * opt.nthreads + hi) * opt.nengines + ei;
        if (n) summary[at] = median_result(done, n), summary_ok[at] = 1;
      }
    }
  if (opt.rounds > 1) {
    for (int pass = 0; pass < 2; pass++) {
      FILE *f = pass ? md : stdout;
      if (!f) continue;
      fprintf(f, "\nmedians over %d rounds:\n\n", opt.rounds);
      print_head(f);
      for (int ti = 0; ti < opt.ntraces; ti++)
        for (int hi = 0; hi < opt.nthreads; hi++) {
          const result *ort = NULL;
          int base = (ti * opt.nthreads + hi) * opt.nengines;
          for (int ei = 0; ei < opt.nengines; ei++)
            if (summary_ok[base + ei] && opt.engines[ei].kind == ENG_ORT) ort = &summary[base + ei];
          for (int ei = 0; ei < opt.nengines; ei++)
            if (summary_ok[base + ei])
              print_row(f, &opt.traces[ti], opt.threads[hi], &opt.engines[ei], &summary[base + ei],
                        ort);
        }
    }
  }
  free(summary);
  free(summary_ok);
  if (md) fclose(md);
  if (b.raw) fclose(b.raw);
  free(b.in);
  free(b.out);
  free(b.lat);
  svc_ort_close(b.ort);
  kiln_side_close(&b.kiln);
  return failed;
}
