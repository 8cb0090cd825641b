/* remote_cache.c (bench_remote_cache) - how long kiln_model_compile of a
 * BERT-style encoder (bench/service_gen.py's encoder.mlir) takes when its
 * kernels come from the remote cache on Redis, beside the local disk cache
 * and a cold compile. Each run uses new contexts (empty memory caches):
 *   cold:  an empty disk cache directory, no remote cache;
 *   disk:  the directory the cold run filled, no remote cache;
 *   redis: an empty disk directory and the remote cache, which a first,
 *          untimed compile filled (its publisher flushed before timing);
 *   redis_tls (with --tls=URL): the same, over TLS (rediss://) to the same
 *          server's TLS port, so each fetch pays the handshake of its
 *          context's new connections and the encryption.
 * Only kiln_model_compile is timed (not context creation). Specialization
 * and quick kernels are off, so every run builds the same generic kernels.
 * The namespace is unique to the run (bench-<pid>) and left on the server
 * (bench/run.sh starts a throwaway one).
 *
 * usage: bench_remote_cache ENCODER.mlir REDIS_URL [RUNS] [--tls=REDISS_URL] [--tsv]
 *   --tsv: "R case kiln 1 ms runs min median max" lines (bench/report.py)
 *   cases: encoder_load_cold, encoder_load_disk, encoder_load_redis,
 *          encoder_load_redis_tls */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/kiln.h"

#include "bench_util.h"

static char ns[64];

static void rmrf(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_remote_cache: could not remove %s\n", dir);
}

static void fresh_dir(char *buf, size_t cap) {
  snprintf(buf, cap, "/tmp/kiln-bench-remote-XXXXXX");
  if (!mkdtemp(buf)) {
    perror("bench_remote_cache: mkdtemp");
    exit(1);
  }
}

/* Compile g in a new context on disk directory dir with the remote url
 * (NULL: none); the compile's seconds into *s. flush: wait for the
 * publisher afterwards. The compile counters into *compiles, *remote_hits. */
static int compile_once(const kiln_graph *g, const char *dir, const char *url, bool flush,
                        double *s, double *compiles, double *remote_hits) {
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = NULL;
  int rc = -1;
  if (!ctx || kiln_context_set_cache_dir(ctx, dir, 0, st) ||
      kiln_context_set_specialize(ctx, KILN_SPECIALIZE_OFF, st) ||
      kiln_context_set_tier_up(ctx, 0, st) ||
      kiln_context_set_remote_cache(ctx, url, ns, 0, st))
    goto done;
  double t0 = bench_now_s();
  m = kiln_model_compile(ctx, g, st);
  *s = bench_now_s() - t0;
  if (!m) goto done;
  if (flush && kiln_context_flush_remote_cache(ctx, 60000, st) != 0) {
    fprintf(stderr, "bench_remote_cache: the publisher did not finish in 60 s\n");
    goto done;
  }
  *compiles = kiln_context_counter(ctx, KILN_COUNTER_COMPILES);
  *remote_hits = kiln_context_counter(ctx, KILN_COUNTER_REMOTE_HITS);
  rc = 0;
done:
  if (rc) fprintf(stderr, "bench_remote_cache: %s\n", kiln_status_message(st));
  kiln_model_free(m);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return rc;
}

static void report(const char *name, double *t, int n, bool tsv) {
  double q[3];
  for (int i = 0; i < n; i++) t[i] *= 1e3;
  bench_stats(t, n, q);
  if (tsv)
    printf("R\tencoder_load_%s\tkiln\t1\tms\t%d\t%.3f\t%.3f\t%.3f\n", name, n, q[0], q[1], q[2]);
  else
    printf("%-9s  min %9.1f ms  median %9.1f ms  max %9.1f ms  (%d runs)\n", name, q[0], q[1],
           q[2], n);
}

int main(int argc, char **argv) {
  const char *pos[3] = {0};
  int npos = 0;
  bool tsv = false;
  const char *tls_url = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tsv")) tsv = true;
    else if (!strncmp(argv[i], "--tls=", 6)) tls_url = argv[i] + 6;
    else if (npos < 3) pos[npos++] = argv[i];
  }
  if (npos < 2) {
    fprintf(stderr, "usage: bench_remote_cache ENCODER.mlir REDIS_URL [RUNS] "
            "[--tls=REDISS_URL] [--tsv]\n");
    return 2;
  }
  int runs = npos > 2 ? atoi(pos[2]) : 3;
  if (runs < 1 || runs > 1000) runs = 3;
  snprintf(ns, sizeof ns, "bench-%d", (int)getpid());
  setenv("KILN_QUIET", "1", 1);
  kiln_status *st = kiln_status_new();
  kiln_graph *g = kiln_graph_load(pos[0], st);
  if (!g) {
    fprintf(stderr, "bench_remote_cache: %s\n", kiln_status_message(st));
    return 1;
  }
  double *t = malloc(4 * (size_t)runs * sizeof *t), s, compiles = 0, hits = 0;
  double *cold = t, *disk = t + runs, *redis = t + 2 * runs, *redis_tls = t + 3 * runs;
  char seed[64], a[64], b[64], c[64];
  int rc = 0;
  fresh_dir(seed, sizeof seed);
  if (compile_once(g, seed, pos[1], true, &s, &compiles, &hits)) return 1;
  rmrf(seed);
  double nkernels = compiles;
  for (int i = 0; i < runs && rc == 0; i++) {
    fresh_dir(a, sizeof a);
    fresh_dir(b, sizeof b);
    rc = compile_once(g, a, NULL, false, &cold[i], &compiles, &hits);
    if (!rc) rc = compile_once(g, a, NULL, false, &disk[i], &compiles, &hits);
    if (!rc && compiles != 0) {
      fprintf(stderr, "bench_remote_cache: the disk run compiled %g kernels\n", compiles);
      rc = 1;
    }
    if (!rc) rc = compile_once(g, b, pos[1], false, &redis[i], &compiles, &hits);
    if (!rc && (compiles != 0 || hits != nkernels)) {
      fprintf(stderr, "bench_remote_cache: the redis run compiled %g and fetched %g of %g "
              "kernels\n", compiles, hits, nkernels);
      rc = 1;
    }
    if (!rc && tls_url) {
      fresh_dir(c, sizeof c);
      rc = compile_once(g, c, tls_url, false, &redis_tls[i], &compiles, &hits);
      if (!rc && (compiles != 0 || hits != nkernels)) {
        fprintf(stderr, "bench_remote_cache: the TLS run compiled %g and fetched %g of %g "
                "kernels\n", compiles, hits, nkernels);
        rc = 1;
      }
      rmrf(c);
    }
    rmrf(a);
    rmrf(b);
  }
  if (rc == 0) {
    if (tsv) printf("M\tkernels\t%g\nM\tnamespace\t%s\n", nkernels, ns);
    else printf("%s: %g kernels; remote %s (namespace %s)\n", pos[0], nkernels, pos[1], ns);
    report("cold", cold, runs, tsv);
    report("disk", disk, runs, tsv);
    report("redis", redis, runs, tsv);
    if (tls_url) report("redis_tls", redis_tls, runs, tsv);
  }
  free(t);
  kiln_graph_free(g);
  kiln_status_free(st);
  return rc ? 1 : 0;
}
