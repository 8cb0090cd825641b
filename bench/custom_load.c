/* custom_load.c (bench_custom_load) - warm load of a graph with a custom op
 * against the same graph with a built-in op instead (issue 6).
 *
 * custom:   y = silu(rms_norm(x, gamma))        rms_norm from examples/custom_ops/rms_norm.c
 * built-in: y = silu(layer_norm(x, gamma, beta)) the nearest built-in op
 * Both on [rows, 64] f32, rows symbolic. A load is what a fresh process does
 * to serve its first request: create a context on a disk cache, add the
 * kernel library (custom only), parse and compile the graph, run it once.
 * Each sample is a child process (fork before anything of kiln exists in
 * the parent, so every child starts with nothing loaded) timing that
 * sequence; the disk cache is warmed first by one child of each kind (that
 * one compiles the C and the kernels). Children alternate between the two
 * graphs so that noise hits both alike. Prints min / median / max and the
 * ratio of the medians.
 *
 * usage: bench_custom_load [N]   (N samples of each, default 21)
 * The cache lives in a temporary directory removed at the end. */
#define _GNU_SOURCE
#include <ftw.h>
#include <kiln/kiln.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T "!mo.tensor<[rows, 64], f32>"
#define G "!mo.tensor<[64], f32>"

static const char *CUSTOM =
    "mo.graph @c<rows>(%x: " T ", %g: " G ") -> (" T ") {\n"
    "  %n = mo.custom(%x, %g) {symbol = \"rms_norm\", epsilon = 1.0e-6} : (" T ", " G ") -> " T "\n"
    "  %y = mo.silu(%n) : " T "\n"
    "  mo.output %y : " T "\n"
    "}\n";

static const char *BUILTIN =
    "mo.graph @b<rows>(%x: " T ", %g: " G ", %b: " G ") -> (" T ") {\n"
    "  %n = mo.layer_norm(%x, %g, %b) {epsilon = 1.0e-6} : (" T ", " G ", " G ") -> " T "\n"
    "  %y = mo.silu(%n) : " T "\n"
    "  mo.output %y : " T "\n"
    "}\n";

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One load in this process: ms, or -1 on an error (printed). */
static double load_once(const char *cache, bool custom) {
  double t0 = now_ms();
  kiln_status *st = kiln_status_new();
  kiln_context *ctx = kiln_context_new(st);
  kiln_model *m = NULL;
  kiln_graph *g = NULL;
  kiln_tensor *in[3] = {NULL, NULL, NULL}, *out[1] = {NULL};
  double ms = -1;
  if (!ctx || kiln_context_set_cache_dir(ctx, cache, 0, st) < 0) goto done;
  if (custom && kiln_context_add_kernel_library(
                    ctx, KILN_SOURCE_DIR "/examples/custom_ops/rms_norm.c", st) < 0)
    goto done;
  const char *text = custom ? CUSTOM : BUILTIN;
  if (!(g = kiln_graph_parse(text, strlen(text), NULL, st))) goto done;
  if (!(m = kiln_model_compile(ctx, g, st))) goto done;
  int64_t xs[2] = {8, 64}, gs[1] = {64};
  in[0] = kiln_tensor_new(KILN_FLOAT32, 2, xs, st);
  in[1] = kiln_tensor_new(KILN_FLOAT32, 1, gs, st);
  in[2] = kiln_tensor_new(KILN_FLOAT32, 1, gs, st);
  if (kiln_model_execute(m, in, custom ? 2 : 3, out, 1, st) < 0) goto done;
  ms = now_ms() - t0;
done:
  if (ms < 0) fprintf(stderr, "load failed: %s\n", kiln_status_message(st));
  for (int i = 0; i < 3; i++) kiln_tensor_free(in[i]);
  kiln_tensor_free(out[0]);
  kiln_model_free(m);
  kiln_graph_free(g);
  kiln_context_free(ctx);
  kiln_status_free(st);
  return ms;
}

/* load_once in a child process; its ms, or -1. */
static double load_in_child(const char *cache, bool custom) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    setenv("KILN_SPECIALIZE", "off", 1); /* the load only, no background compile */
    double ms = load_once(cache, custom);
    ssize_t w = write(fd[1], &ms, sizeof ms);
    _exit(w == (ssize_t)sizeof ms && ms >= 0 ? 0 : 1);
  }
  close(fd[1]);
  double ms = -1;
  if (pid < 0 || read(fd[0], &ms, sizeof ms) != (ssize_t)sizeof ms) ms = -1;
  close(fd[0]);
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  return ms;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb;
  (void)flag;
  (void)f;
  return remove(p);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 21;
  if (n < 1 || n > 1000) n = 21;
  char cache[] = "/tmp/kiln-bench-custom-XXXXXX";
  if (!mkdtemp(cache)) return 1;
  double cold_c = load_in_child(cache, true), cold_b = load_in_child(cache, false);
  printf("cold (compiles, fills the disk cache): custom %.2f ms, built-in %.2f ms\n", cold_c,
         cold_b);
  double *c = calloc((size_t)n, sizeof *c), *b = calloc((size_t)n, sizeof *b);
  int rc = c && b && cold_c >= 0 && cold_b >= 0 ? 0 : 1;
  for (int i = 0; i < n && rc == 0; i++) {
    c[i] = load_in_child(cache, true);
    b[i] = load_in_child(cache, false);
    if (c[i] < 0 || b[i] < 0) rc = 1;
  }
  if (rc == 0) {
    qsort(c, (size_t)n, sizeof *c, cmp);
    qsort(b, (size_t)n, sizeof *b, cmp);
    printf("warm load, fresh process, %d samples each (ms):  min  median  max\n", n);
    printf("  custom op (rms_norm.c)   %7.2f %7.2f %7.2f\n", c[0], c[n / 2], c[n - 1]);
    printf("  built-in op (layer_norm) %7.2f %7.2f %7.2f\n", b[0], b[n / 2], b[n - 1]);
    printf("  ratio of medians: %.2fx (target <= 1.2x)\n", c[n / 2] / b[n / 2]);
  }
  free(c);
  free(b);
  nftw(cache, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
