/* scale.c (bench_scale) - how load and compile times grow with the size of
 * the input, through the public API, so a step that is quadratic shows:
 *
 *  - safetensors N: a .safetensors file of N one-element f32 tensors
 *    (written first, not timed); timed: M_loadSafetensors (open, header
 *    parse and validation), then every tensor looked up by name
 *    (M_getSafetensorData), then M_freeSafetensors. Goal: N = 200,000 in
 *    under 1 s.
 *  - chain N: a graph x -> N elementwise ops (v = op(v, x) over [64] f32,
 *    op drawn from add, mul, sub, max, min by a fixed pseudo-random
 *    sequence, so that no two fused kernels have the same text and every
 *    one compiles); timed: kiln_model_compile in a fresh context with the
 *    disk cache off (KILN_CACHE=off), fused as usual or, with KILN_FUSE=0
 *    in the environment, unfused (five distinct kernels then, each compiled
 *    once). Goal: time linear in N.
 *
 * One run per size (these are seconds, not microseconds), as wall and CPU
 * time (the compile of a chain may use the pool's threads; on a shared
 * machine CPU time is the steadier); the ratio column is CPU time /
 * (CPU time of the first size * N / first N), 1.0 when linear.
 *
 * usage: bench_scale [--tensors N[,N...]] [--chain N[,N...]] [--tsv]
 *   defaults: --tensors 50000,100000,200000 --chain 5000,10000,20000;
 *   "--tensors 0" or "--chain 0" leaves that part out.
 *   --tsv: R <case> <N> s <wall seconds> <cpu seconds> <ratio> lines.
 * Exit status: 0, or 1 when a step failed. */
#include <kiln/kiln.h>
#include <max/c/common.h>
#include <max/c/safetensors.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool tsv;

static double clock_s(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* s: wall seconds; cpu: this process's CPU seconds over the same span
 * (on a shared machine the steadier of the two). */
static void report(const char *what, long n, double s, double cpu, double ratio) {
  if (tsv) printf("R\t%s\t%ld\ts\t%.4f\t%.4f\t%.2f\n", what, n, s, cpu, ratio);
  else printf("%-14s %8ld %9.3f s wall %9.3f s cpu   x%.2f of linear\n", what, n, s, cpu, ratio);
  fflush(stdout);
}

/* N tensors "layers.<i>.w", f32 [1], contiguous data, into path. */
static int write_tensors(const char *path, long n) {
  size_t cap = (size_t)n * 96 + 64, k = 0;
  char *h = malloc(cap);
  if (!h) return -1;
  k += (size_t)snprintf(h + k, cap - k, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (long i = 0; i < n; i++)
    k += (size_t)snprintf(h + k, cap - k,
                          ",\"layers.%ld.w\":{\"dtype\":\"F32\",\"shape\":[1],"
                          "\"data_offsets\":[%ld,%ld]}",
                          i, 4 * i, 4 * i + 4);
  h[k++] = '}';
  while (k % 8) h[k++] = ' ';
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(h);
    return -1;
  }
  unsigned char len[8];
  for (int b = 0; b < 8; b++) len[b] = (unsigned char)((uint64_t)k >> (8 * b));
  bool ok = fwrite(len, 1, 8, f) == 8 && fwrite(h, 1, k, f) == k;
  float v = 1.0f;
  for (long i = 0; ok && i < n; i++) ok = fwrite(&v, 4, 1, f) == 1;
  free(h);
  return fclose(f) == 0 && ok ? 0 : -1;
}

static int bench_tensors(long n, double *s, double *cpu) {
  char path[] = "/tmp/bench_scale_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  close(fd);
  int rc = -1;
  M_Status *ms = M_newStatus();
  if (write_tensors(path, n) < 0 || !ms) goto done;
  double t0 = now_s(), c0 = cpu_s();
  const char *paths[] = {path};
  M_Safetensors *st = M_loadSafetensors(paths, 1, NULL, ms);
  if (!st) {
    fprintf(stderr, "bench_scale: load: %s\n", M_getError(ms));
    goto done;
  }
  char name[64];
  for (long i = 0; i < n; i++) {
    snprintf(name, sizeof name, "layers.%ld.w", i);
    if (!M_getSafetensorData(st, name, ms)) {
      fprintf(stderr, "bench_scale: %s: %s\n", name, M_getError(ms));
      M_freeSafetensors(st);
      goto done;
    }
  }
  M_freeSafetensors(st);
  *s = now_s() - t0;
  *cpu = cpu_s() - c0;
  rc = 0;
done:
  M_freeStatus(ms);
  unlink(path);
  return rc;
}

static int bench_chain(long n, double *s, double *cpu) {
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_new("chain", st);
  const char *dims[] = {"64"};
  kiln_value *x = g ? kiln_graph_add_input(g, "x", KILN_FLOAT32, 1, dims, st) : NULL, *v = x;
  static const char *const ops[] = {"mo.add", "mo.mul", "mo.sub", "mo.max", "mo.min"};
  uint32_t r = 12345;
  for (long i = 0; v && i < n; i++) {
    r ^= r << 13, r ^= r >> 17, r ^= r << 5; /* xorshift: no two fused groups alike */
    v = kiln_graph_add_op(g, ops[r % 5], (kiln_value *[]){v, x}, 2, NULL, NULL, st);
  }
  int rc = -1;
  if (!v || kiln_graph_set_outputs(g, &v, 1, NULL, st) < 0) {
    fprintf(stderr, "bench_scale: chain graph: %s\n", kiln_status_message(st));
    goto done;
  }
  double t0 = now_s(), c0 = cpu_s();
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = ctx ? kiln_model_compile(ctx, g, st) : NULL;
  *s = now_s() - t0;
  *cpu = cpu_s() - c0;
  if (!m) fprintf(stderr, "bench_scale: chain compile: %s\n", kiln_status_message(st));
  else rc = 0;
  kiln_model_free(m);
  kiln_context_free(ctx);
done:
  kiln_graph_free(g);
  kiln_status_free(st);
  return rc;
}

/* "5000,10000" into sizes (at most 16); 0 entries for "0". */
static int parse_sizes(const char *s, long *out) {
  int k = 0;
  for (char *end; *s && k < 16; s = *end ? end + 1 : end) {
    long v = strtol(s, &end, 10);
    if (end == s || v < 0) return -1;
    if (v > 0) out[k++] = v;
  }
  return k;
}

int main(int argc, char **argv) {
  long tens[16] = {50000, 100000, 200000}, chain[16] = {5000, 10000, 20000};
  int ntens = 3, nchain = 3;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tsv")) tsv = true;
    else if (!strcmp(argv[i], "--tensors") && i + 1 < argc) ntens = parse_sizes(argv[++i], tens);
    else if (!strcmp(argv[i], "--chain") && i + 1 < argc) nchain = parse_sizes(argv[++i], chain);
    else {
      fprintf(stderr, "usage: bench_scale [--tensors N,..] [--chain N,..] [--tsv]\n");
      return 1;
    }
    if (ntens < 0 || nchain < 0) {
      fprintf(stderr, "bench_scale: bad size list '%s'\n", argv[i]);
      return 1;
    }
  }
  setenv("KILN_CACHE", "off", 1); /* every chain kernel compiles */
  const char *fuse = getenv("KILN_FUSE");
  const char *chain_name = fuse && !strcmp(fuse, "0") ? "chain-unfused" : "chain";
  for (int i = 0; i < ntens; i++) {
    double s = 0, cpu = 0;
    if (bench_tensors(tens[i], &s, &cpu) < 0) return 1;
    static double first;
    if (i == 0) first = cpu / (double)tens[0];
    report("safetensors", tens[i], s, cpu, cpu / (first * (double)tens[i]));
  }
  for (int i = 0; i < nchain; i++) {
    double s = 0, cpu = 0;
    if (bench_chain(chain[i], &s, &cpu) < 0) return 1;
    static double first;
    if (i == 0) first = cpu / (double)chain[0];
    report(chain_name, chain[i], s, cpu, cpu / (first * (double)chain[i]));
  }
  return 0;
}
