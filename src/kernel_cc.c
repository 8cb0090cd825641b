/* kernel_cc.c - compiling C kernel libraries to LLVM bitcode with clang 19
 * (kernel_lib.h: rt_cc_prepare, rt_cc_build).
 *
 * The compiler: $KILN_CLANG when set (it must be an executable), else
 * clang-19, then clang, on PATH. Its version must be 19 (kiln's LLVM reads
 * the bitcode); it is checked by running `clang --version` before a compile,
 * not on a cache hit: the hash covers the compiler's resolved path, size and
 * mtime, so a different compiler is a different hash and compiles again.
 * A compile runs in a fresh temporary directory: the source is written there
 * behind a `#line 1 "<path>"` directive (clang's messages then name the
 * user's file and lines), kiln/kernel.h (the embedded copy kiln was built
 * with) beside it, and clang runs as
 *   clang -O2 -Xclang -disable-llvm-passes -fno-math-errno -emit-llvm -c
 *         -I<tmp> [-I<dir of the source>] <tmp>/<name> -o <tmp>/out.bc
 * with stdout and stderr in a file that becomes the error message when it
 * fails. The directory is removed afterwards.
 * Disk cache: cache_dir/libs/<32 hex>.bc, written to a temporary file and
 * renamed into place (readers never see half a file; the kernel cache's
 * scan ignores this folder). A file that is not bitcode is ignored.
 * GPU targets (job->target: nvptx64-nvidia-cuda, amdgcn-amd-amdhsa, for
 * SIMT kernels): the same, plus --target=<triple> -nogpulib -nostdlibinc
 * (clang's own stdint.h / stddef.h / float.h stay) and a <math.h> of
 * kiln's beside kiln/kernel.h that declares the C99 float and double
 * functions (clang treats them as builtins; jit/simt_math.c maps them per
 * target): the host's libc headers do not compile for a GPU. The target
 * and that header are part of the hash, so each target's bitcode has its
 * own cache entry.
 * Known limit: headers the source includes (other than kiln/kernel.h) are
 * not hashed; an edit to one is seen only once the .c changes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "kernel_lib.h"

extern char **environ;

static const char *const CC_FLAGS[] = {"-O2", "-Xclang", "-disable-llvm-passes",
                                       "-fno-math-errno", "-emit-llvm", "-c"};
#define CC_NFLAGS (sizeof CC_FLAGS / sizeof CC_FLAGS[0])

/* <math.h> for GPU targets (see the top). */
static const char GPU_MATH_H[] =
    "/* math.h - kiln's for SIMT kernels on GPU targets: declarations only */\n"
    "#ifndef KILN_GPU_MATH_H\n#define KILN_GPU_MATH_H\n"
    "#define INFINITY __builtin_inff()\n#define NAN __builtin_nanf(\"\")\n"
    "#define HUGE_VALF __builtin_huge_valf()\n#define HUGE_VAL __builtin_huge_val()\n"
    "#define isnan(x) __builtin_isnan(x)\n#define isinf(x) __builtin_isinf(x)\n"
    "#define isfinite(x) __builtin_isfinite(x)\n#define signbit(x) __builtin_signbit(x)\n"
    "#define M_E 2.7182818284590452354\n#define M_LN2 0.69314718055994530942\n"
    "#define M_PI 3.14159265358979323846\n#define M_SQRT2 1.41421356237309504880\n"
    "#define KILN_M1(n) double n(double); float n##f(float);\n"
    "#define KILN_M2(n) double n(double, double); float n##f(float, float);\n"
    "KILN_M1(sqrt) KILN_M1(cbrt) KILN_M1(exp) KILN_M1(exp2) KILN_M1(expm1) KILN_M1(log)\n"
    "KILN_M1(log2) KILN_M1(log10) KILN_M1(log1p) KILN_M1(sin) KILN_M1(cos) KILN_M1(tan)\n"
    "KILN_M1(asin) KILN_M1(acos) KILN_M1(atan) KILN_M1(sinh) KILN_M1(cosh) KILN_M1(tanh)\n"
    "KILN_M1(asinh) KILN_M1(acosh) KILN_M1(atanh) KILN_M1(erf) KILN_M1(erfc) KILN_M1(tgamma)\n"
    "KILN_M1(lgamma) KILN_M1(fabs) KILN_M1(floor) KILN_M1(ceil) KILN_M1(round) KILN_M1(trunc)\n"
    "KILN_M1(rint) KILN_M1(nearbyint)\n"
    "KILN_M2(pow) KILN_M2(atan2) KILN_M2(fmod) KILN_M2(fmin) KILN_M2(fmax) KILN_M2(hypot)\n"
    "KILN_M2(copysign) KILN_M2(remainder) KILN_M2(fdim)\n"
    "double fma(double, double, double); float fmaf(float, float, float);\n"
    "double ldexp(double, int); float ldexpf(float, int);\n"
    "#undef KILN_M1\n#undef KILN_M2\n#endif\n";

/* ---- finding clang ---- */

static bool executable(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0;
}

/* `name` on PATH into out; false when absent. */
static bool on_path(const char *name, char *out, size_t cap) {
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, p, name) < cap && executable(out))
      return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

static int find_clang(rt_cc_job *job, kiln_status *st) {
  const char *env = getenv("KILN_CLANG");
  if (env && *env) {
    if (!executable(env))
      return rt_err(st, KILN_ERR_NOT_FOUND,
                    "kernel library '%s': KILN_CLANG=%s is not an executable file (point "
                    "KILN_CLANG at clang 19)", job->name, env);
    snprintf(job->clang, sizeof job->clang, "%s", env);
    return 0;
  }
  if (on_path("clang-19", job->clang, sizeof job->clang) ||
      on_path("clang", job->clang, sizeof job->clang))
    return 0;
  return rt_err(st, KILN_ERR_NOT_FOUND,
                "kernel library '%s': no C compiler: set KILN_CLANG to clang 19, or put clang-19 "
                "on PATH (or give the library as .ll / .bc)", job->name);
}

int rt_cc_prepare(rt_cc_job *job, kiln_status *st) {
  if (find_clang(job, st) < 0) return -1;
  char real[PATH_MAX];
  struct stat sb;
  if (!realpath(job->clang, real) || stat(real, &sb) != 0)
    return rt_err(st, KILN_ERR_NOT_FOUND, "kernel library '%s': cannot resolve the compiler %s",
                  job->name, job->clang);
  char ident[PATH_MAX + 96];
  int il = snprintf(ident, sizeof ident, "%s\n%lld\n%lld.%09ld\n", real, (long long)sb.st_size,
                    (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
  XXH3_state_t s;
  XXH3_128bits_reset(&s);
  XXH3_128bits_update(&s, "kiln-clang/1\n", 13);
  XXH3_128bits_update(&s, ident, (size_t)il);
  for (size_t i = 0; i < CC_NFLAGS; i++)
    XXH3_128bits_update(&s, CC_FLAGS[i], strlen(CC_FLAGS[i]) + 1);
  XXH3_128bits_update(&s, kiln_kernel_h_text, kiln_kernel_h_text_len);
  if (job->target) { /* the host's hash stays what it was */
    XXH3_128bits_update(&s, "target=", 7);
    XXH3_128bits_update(&s, job->target, strlen(job->target) + 1);
    XXH3_128bits_update(&s, GPU_MATH_H, sizeof GPU_MATH_H - 1);
  }
  const char *file = job->path ? job->path : job->name; /* clang's messages name it */
  XXH3_128bits_update(&s, file, strlen(file) + 1);
  if (job->len) XXH3_128bits_update(&s, job->src, job->len);
  XXH128_hash_t h = XXH3_128bits_digest(&s);
  snprintf(job->hash, sizeof job->hash, "c-%016llx%016llx", (unsigned long long)h.high64,
           (unsigned long long)h.low64);
  return 0;
}

/* ---- files ---- */

/* a + "/" + b into out; false when it does not fit (the caller then fails
 * cleanly on a path that cannot exist). */
static bool join(char *out, size_t cap, const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la + lb + 2 > cap) return false;
  memcpy(out, a, la);
  out[la] = '/';
  memcpy(out + la + 1, b, lb + 1);
  return true;
}

static int write_file(const char *path, const void *a, size_t alen, const void *b, size_t blen) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  bool ok = (alen == 0 || fwrite(a, 1, alen, f) == alen) &&
            (blen == 0 || fwrite(b, 1, blen, f) == blen);
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* The whole of path, malloc'd (+1 NUL); NULL when it cannot be read. */
static char *read_file(const char *path, size_t *len) {
  return rt_read_file(path, NULL, len, NULL);
}

static bool looks_like_bitcode(const unsigned char *p, size_t n) {
  return n >= 4 && ((p[0] == 'B' && p[1] == 'C' && p[2] == 0xC0 && p[3] == 0xDE) ||
                    (p[0] == 0xDE && p[1] == 0xC0 && p[2] == 0x17 && p[3] == 0x0B));
}

static void cache_path(const char *cache_dir, const rt_cc_job *job, char *out, size_t cap) {
  snprintf(out, cap, "%s/libs/%s.bc", cache_dir, job->hash + 2);
}

static void *cache_get(const char *cache_dir, const rt_cc_job *job, size_t *len) {
  char p[PATH_MAX];
  cache_path(cache_dir, job, p, sizeof p);
  char *bc = read_file(p, len);
  if (bc && !looks_like_bitcode((unsigned char *)bc, *len)) {
    free(bc);
    return NULL;
  }
  return bc;
}

/* Best effort: a failure to store only costs a compile next time. */
static void cache_put(const char *cache_dir, const rt_cc_job *job, const void *bc, size_t len) {
  char dir[PATH_MAX], tmp[PATH_MAX + 32], final[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/libs", cache_dir);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
  snprintf(tmp, sizeof tmp, "%s/.tmp-%s-%ld", dir, job->hash + 2, (long)getpid());
  cache_path(cache_dir, job, final, sizeof final);
  if (write_file(tmp, bc, len, NULL, 0) != 0 || rename(tmp, final) != 0) unlink(tmp);
}

/* ---- running clang ---- */

/* Run argv with stdout and stderr into log; its exit status, -1 if it could
 * not start (errno-style reason in *why). */
static int run(char *const *argv, const char *log, int *why) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addclose(&fa, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *why = rc;
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      *why = errno;
      return -1;
    }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The text of a log file for a message, at most ~3 KB, trailing newline off. */
static char *log_text(const char *log) {
  size_t n = 0;
  char *t = read_file(log, &n);
  if (!t) return NULL;
  if (n > 3000) memcpy(t + 2980, "\n[... cut]", 11), n = 2990;
  while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r')) t[--n] = 0;
  return t;
}

/* 0 when `clang --version` says 19.x; -1 with st otherwise. */
static int check_version(const rt_cc_job *job, const char *tmp, kiln_status *st) {
  char log[PATH_MAX];
  join(log, sizeof log, tmp, "version.txt");
  char *argv[] = {(char *)job->clang, "--version", NULL};
  int why = 0, rc = run(argv, log, &why);
  char *text = rc == 0 ? log_text(log) : NULL;
  const char *v = text ? strstr(text, "clang version ") : NULL;
  int major = v ? atoi(v + 14) : -1;
  int out = 0;
  if (rc != 0)
    out = rt_err(st, KILN_ERR_NOT_FOUND, "kernel library '%s': cannot run %s --version (%s; set "
                 "KILN_CLANG to clang 19)", job->name, job->clang,
                 rc < 0 ? strerror(why) : "it failed");
  else if (major != 19)
    out = rt_err(st, KILN_ERR_UNSUPPORTED,
                 "kernel library '%s': %s is not clang 19 (it says: %.120s); kiln's LLVM 19 "
                 "needs clang 19 bitcode: set KILN_CLANG to clang-19", job->name, job->clang,
                 text ? strtok(text, "\n") : "nothing");
  free(text);
  return out;
}

/* The base name clang compiles: the library's, made safe for a path. */
static void source_name(const rt_cc_job *job, char *out, size_t cap) {
  const char *b = strrchr(job->name, '/');
  snprintf(out, cap, "%s", b ? b + 1 : job->name);
  for (char *p = out; *p; p++)
    if (*p == '/' || *p == '\\') *p = '_';
  if (!out[0]) snprintf(out, cap, "kernels.c");
}

static int compile_in(const rt_cc_job *job, const char *tmp, void **bc, size_t *bclen,
                      kiln_status *st) {
  char kdir[PATH_MAX], hdr[PATH_MAX], src[PATH_MAX], out[PATH_MAX], log[PATH_MAX], base[256];
  char inc_tmp[PATH_MAX + 2], inc_src[PATH_MAX + 2];
  source_name(job, base, sizeof base);
  if (!join(kdir, sizeof kdir, tmp, "kiln") || !join(hdr, sizeof hdr, kdir, "kernel.h") ||
      !join(src, sizeof src, tmp, base) || !join(out, sizeof out, tmp, "out.bc") ||
      !join(log, sizeof log, tmp, "clang.txt") ||
      (size_t)snprintf(inc_tmp, sizeof inc_tmp, "-I%s", tmp) >= sizeof inc_tmp)
    return rt_err(st, KILN_ERR_IO, "kernel library '%s': temporary path too long", job->name);
  /* #line with the user's file: clang's messages then point at it */
  const char *shown = job->path ? job->path : job->name;
  char line[PATH_MAX + 32];
  int ll = snprintf(line, sizeof line, "#line 1 \"");
  for (const char *p = shown; *p && ll < (int)sizeof line - 4; p++) {
    if (*p == '"' || *p == '\\') line[ll++] = '\\';
    line[ll++] = *p;
  }
  ll += snprintf(line + ll, sizeof line - (size_t)ll, "\"\n");
  char mathh[PATH_MAX], tflag[128];
  if (!join(mathh, sizeof mathh, tmp, "math.h"))
    return rt_err(st, KILN_ERR_IO, "kernel library '%s': temporary path too long", job->name);
  if (mkdir(kdir, 0700) != 0 ||
      write_file(hdr, kiln_kernel_h_text, kiln_kernel_h_text_len, NULL, 0) != 0 ||
      write_file(src, line, (size_t)ll, job->src, job->len) != 0 ||
      (job->target && write_file(mathh, GPU_MATH_H, sizeof GPU_MATH_H - 1, NULL, 0) != 0))
    return rt_err(st, KILN_ERR_IO, "kernel library '%s': cannot write to %s: %s", job->name, tmp,
                  strerror(errno));
  char *argv[CC_NFLAGS + 12];
  size_t k = 0;
  argv[k++] = (char *)job->clang;
  for (size_t i = 0; i < CC_NFLAGS; i++) argv[k++] = (char *)CC_FLAGS[i];
  if (job->target) {
    snprintf(tflag, sizeof tflag, "--target=%s", job->target);
    argv[k++] = tflag;
    argv[k++] = "-nogpulib";
    argv[k++] = "-nostdlibinc";
  }
  argv[k++] = inc_tmp;
  if (job->path) { /* quote includes next to the user's file */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", job->path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0; /* "/x.c": the root */
    else *slash = 0;
    snprintf(inc_src, sizeof inc_src, "-I%s", dir);
    argv[k++] = inc_src;
  }
  argv[k++] = src;
  argv[k++] = "-o";
  argv[k++] = out;
  argv[k] = NULL;
  int why = 0, rc = run(argv, log, &why);
  if (rc != 0) {
    char *text = rc > 0 ? log_text(log) : NULL;
    if (rc < 0)
      rt_err(st, KILN_ERR_NOT_FOUND, "kernel library '%s': cannot run %s: %s (set KILN_CLANG)",
             job->name, job->clang, strerror(why));
    else
      rt_err(st, KILN_ERR_COMPILE, "kernel library '%s' does not compile%s%s (%s):\n%s",
             job->name, job->target ? " for " : "", job->target ? job->target : "", job->clang,
             text && text[0] ? text : "(no message)");
    free(text);
    return -1;
  }
  if (!(*bc = read_file(out, bclen)) || !looks_like_bitcode(*bc, *bclen)) {
    free(*bc);
    *bc = NULL;
    return rt_err(st, KILN_ERR_COMPILE, "kernel library '%s': %s wrote no bitcode", job->name,
                  job->clang);
  }
  return 0;
}

/* Remove the temporary directory (only the names compile_in writes). */
static void remove_tmp(const char *tmp, const rt_cc_job *job) {
  char p[PATH_MAX], base[256];
  source_name(job, base, sizeof base);
  static const char *const files[] = {"kiln/kernel.h", "out.bc", "clang.txt", "version.txt",
                                      "math.h"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (join(p, sizeof p, tmp, files[i])) unlink(p);
  }
  if (join(p, sizeof p, tmp, base)) unlink(p);
  if (join(p, sizeof p, tmp, "kiln")) rmdir(p);
  rmdir(tmp);
}

int rt_cc_build(const rt_cc_job *job, const char *cache_dir, void **bc, size_t *bclen,
                kiln_status *st) {
  *bc = NULL;
  *bclen = 0;
  if (cache_dir && (*bc = cache_get(cache_dir, job, bclen))) return 0;
  const char *tdir = getenv("TMPDIR");
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/kiln-cc-XXXXXX", tdir && *tdir ? tdir : "/tmp");
  if (!mkdtemp(tmp))
    return rt_err(st, KILN_ERR_IO, "kernel library '%s': cannot create a temporary directory "
                  "in %s: %s", job->name, tdir && *tdir ? tdir : "/tmp", strerror(errno));
  int rc = check_version(job, tmp, st);
  if (rc == 0) rc = compile_in(job, tmp, bc, bclen, st);
  remove_tmp(tmp, job);
  if (rc == 0 && cache_dir) cache_put(cache_dir, job, *bc, *bclen);
  return rc;
}
