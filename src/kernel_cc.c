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
 *         -MMD -MT kiln -MF <tmp>/deps.d
 * with stdout and stderr in a file that becomes the error message when it
 * fails. The directory is removed afterwards.
 * Disk cache: cache_dir/libs/<32 hex>.bc, written to a temporary file and
 * renamed into place through the folder's fd, no link followed
 * (kc_tree_publish: readers never see half a file), and read only when it
 * passes the cache's owner and mode rule (kc_tree_read). A file that is not
 * bitcode is ignored.
 * GPU targets (job->target: nvptx64-nvidia-cuda, amdgcn-amd-amdhsa, for
 * SIMT kernels): the same, plus --target=<triple> -nogpulib -nostdlibinc
 * (clang's own stdint.h / stddef.h / float.h stay) and a <math.h> of
 * kiln's beside kiln/kernel.h that declares the C99 float and double
 * functions (clang treats them as builtins; jit/simt_math.c maps them per
 * target): the host's libc headers do not compile for a GPU. The target
 * and that header are part of the hash, so each target's bitcode has its
 * own cache entry.
 *
 * Headers. The library hash ("c-<32 hex>": the memory cache, the disk
 * entry's name, kiln.library on every node and so every kernel cache key)
 * also covers the user files the source reads: for each, the path it is
 * opened by (the search directory joined with the name) and an XXH3-128 of
 * its content; for each include that finds no user file, its
 * name (so a header that appears, or disappears, changes the hash too).
 * rt_cc_prepare computes it without clang, so the warm path (a cache hit)
 * costs reading those headers, not a compile: a scan of the source and,
 * recursively, of each header found, follows every #include, #include_next,
 * #import, #embed and __has_include / __has_embed with a literal name, in
 * every branch of #if (more files than clang reads can only cost a miss),
 * resolved as clang does: a quoted name in the includer's directory (for
 * the source that is <tmp>: kiln/kernel.h, kiln's math.h), then -I<tmp>,
 * -I<dir of the source>, then $CPATH's directories (clang adds them as -I);
 * what is found nowhere there comes from the system directories or is
 * missing. The embedded headers are hashed as text already; system headers
 * (libc, clang's own) are not: they change with the toolchain, not with the
 * user's edits (the compiler's identity is in the hash). A source the scan
 * cannot follow (an #include of a macro, a directive hidden behind a
 * comment) gets its list from `clang -MM` instead, on every load: correct,
 * slower.
 * After a compile, the list clang wrote (-MMD: non-system files) is checked
 * against the scan: a user file clang read that the scan did not hash (a
 * header reached only through a system header) fails the load rather than
 * cache code whose inputs the hash does not cover, and a header edited
 * while clang ran (the hash computed again differs) fails it too. So the
 * bitcode stored under a hash is the compile of exactly what it covers.
 * Entries written before headers were hashed (scheme "kiln-clang/1") have
 * other names and are never read. */
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

#include "cache_disk.h"
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

static void *cache_get(const rt_lib_dirs *dirs, const rt_cc_job *job, size_t *len) {
  char name[64];
  snprintf(name, sizeof name, "%s.bc", job->hash + 2);
  /* owner and mode checked, no link followed: this bitcode becomes code */
  char *bc = rt_lib_dirs_read(dirs, name, len);
  if (bc && !looks_like_bitcode((unsigned char *)bc, *len)) {
    free(bc);
    return NULL;
  }
  return bc;
}

/* Best effort: a failure to store only costs a compile next time. */
static void cache_put(const char *cache_dir, const rt_cc_job *job, const void *bc, size_t len) {
  char name[64];
  snprintf(name, sizeof name, "%s.bc", job->hash + 2);
  (void)kc_tree_publish(cache_dir, "libs", name, bc, len); /* no link followed */
}

/* ---- lists of paths ---- */

typedef struct str_list {
  char **v;
  int n, cap;
} str_list;

static void list_free(str_list *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static bool list_has(const str_list *l, const char *s) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0) return true;
  return false;
}

/* A copy of s[0..n) appended; -1 when out of memory. */
static int list_add(str_list *l, const char *s, size_t n) {
  if (l->n == l->cap) {
    int nc = l->cap ? 2 * l->cap : 8;
    char **nv = realloc(l->v, (size_t)nc * sizeof *nv);
    if (!nv) return -1;
    l->v = nv;
    l->cap = nc;
  }
  char *c = malloc(n + 1);
  if (!c) return -1;
  memcpy(c, s, n);
  c[n] = 0;
  l->v[l->n++] = c;
  return 0;
}

/* The directory of path into out ("." when it has none). */
static void dir_of(const char *path, char *out, size_t cap) {
  snprintf(out, cap, "%s", path);
  char *slash = strrchr(out, '/');
  if (!slash) snprintf(out, cap, ".");
  else if (slash == out) out[1] = 0; /* "/x.c": the root */
  else *slash = 0;
}

/* ---- the user files a source reads (see the top) ---- */

typedef struct scan {
  const rt_cc_job *job;
  XXH3_state_t *hs; /* what is found goes here */
  char base[256];   /* the source's name in the temporary directory */
  str_list dirs;    /* searched after -I<tmp>: the source's directory, $CPATH's */
  str_list seen;    /* paths (as opened) of the user files hashed */
  str_list scanned; /* paths of the files scanned for includes */
  bool unsure;      /* an include the scan cannot follow: ask clang */
  bool oom;
  int depth;
} scan;

static void scan_text(scan *sc, const char *text, size_t len, const char *from);

static void put(scan *sc, const char *tag, const char *s) {
  XXH3_128bits_update(sc->hs, tag, strlen(tag) + 1);
  XXH3_128bits_update(sc->hs, s, strlen(s) + 1);
}

/* A user file opened as path: that path (as clang would name it; real
 * paths only after a compile, in check_files: realpath costs a system call
 * per component) and its content into the hash; scanned (from its
 * directory, once) unless it is data (#embed, a probe). */
static void take_file(scan *sc, const char *path, bool data) {
  size_t n = 0;
  char *text = read_file(path, &n);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(text ? text : "", text ? n : 0));
  put(sc, text ? "file" : "unreadable", path);
  XXH3_128bits_update(sc->hs, &c, sizeof c);
  if (!list_has(&sc->seen, path) && list_add(&sc->seen, path, strlen(path)) < 0) sc->oom = true;
  if (text && !data && !sc->oom && !list_has(&sc->scanned, path)) {
    if (list_add(&sc->scanned, path, strlen(path)) < 0) {
      sc->oom = true;
    } else if (sc->depth >= 200) { /* clang's own limit */
      sc->unsure = true;
    } else {
      char dir[PATH_MAX];
      dir_of(path, dir, sizeof dir);
      sc->depth++;
      scan_text(sc, text, n, dir);
      sc->depth--;
    }
  }
  free(text);
}

static bool try_dir(scan *sc, const char *dir, const char *name, bool data) {
  char p[PATH_MAX];
  struct stat sb;
  if (!join(p, sizeof p, dir, name) || stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
  take_file(sc, p, data);
  return true;
}

/* One of the files kiln writes into the temporary directory (hashed as
 * text already). */
static bool in_tmp(scan *sc, const char *name) {
  bool hit = strcmp(name, "kiln/kernel.h") == 0 || strcmp(name, sc->base) == 0 ||
             (sc->job->target && strcmp(name, "math.h") == 0);
  if (hit) put(sc, "kiln", name);
  return hit;
}

/* An include of name from a file in directory from (NULL: the source, in
 * the temporary directory), in clang's order; include_next takes every
 * match (the scan does not track where the includer was found). */
static void resolve(scan *sc, const char *from, const char *name, bool angle, bool next,
                    bool data) {
  if (!*name) return; /* clang refuses it */
  if (name[0] == '/') {
    struct stat sb;
    if (stat(name, &sb) == 0 && S_ISREG(sb.st_mode)) take_file(sc, name, data);
    else put(sc, "absent", name);
    return;
  }
  bool any = false;
  for (int i = -2; i < sc->dirs.n && !sc->oom; i++) {
    bool hit;
    if (i == -2) {
      if (angle || next) continue;
      hit = from ? try_dir(sc, from, name, data) : in_tmp(sc, name);
    } else if (i == -1) {
      hit = in_tmp(sc, name);
    } else {
      hit = try_dir(sc, sc->dirs.v[i], name, data);
    }
    any = any || hit;
    if (hit && !next) return;
  }
  if (!any) put(sc, angle ? "absent<>" : "absent\"\"", name);
}

/* Blanks and comments that end on the line. */
static const char *skip_space(const char *p) {
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\f' || *p == '\v' || *p == '\r') p++;
    const char *e = p[0] == '/' && p[1] == '*' ? strstr(p + 2, "*/") : NULL;
    if (!e) return p;
    p = e + 2;
  }
}

static bool word_at(const char **p, const char *w) {
  size_t n = strlen(w);
  char after = (*p)[n];
  if (strncmp(*p, w, n) != 0 || after == '_' || (after >= 'a' && after <= 'z') ||
      (after >= 'A' && after <= 'Z') || (after >= '0' && after <= '9'))
    return false;
  *p += n;
  return true;
}

/* "name" or <name> at p; false when p holds something else (a macro). */
static bool header_name(const char *p, char *out, size_t cap, bool *angle) {
  char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
  const char *e = close ? strchr(p + 1, close) : NULL;
  if (!e || (size_t)(e - p - 1) >= cap) return false;
  memcpy(out, p + 1, (size_t)(e - p - 1));
  out[e - p - 1] = 0;
  *angle = close == '>';
  return true;
}

/* One logical line (continuations joined, NUL-terminated). */
static void scan_line(scan *sc, const char *line, const char *from) {
  char name[PATH_MAX];
  bool angle;
  const char *p = skip_space(line);
  if (*p != '#') { /* a comment that began above may end before a directive */
    const char *e = strstr(line, "*/");
    if (e) p = skip_space(e + 2);
  }
  bool directive = false;
  if (*p == '#') {
    p = skip_space(p + 1);
    directive = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
    bool next = false, data = false, inc = true;
    if (word_at(&p, "include_next")) next = true;
    else if (word_at(&p, "embed")) data = true;
    else if (!word_at(&p, "include") && !word_at(&p, "import")) inc = false;
    if (inc) {
      if (header_name(skip_space(p), name, sizeof name, &angle))
        resolve(sc, from, name, angle, next, data);
      else
        sc->unsure = true;
      return;
    }
  }
  if (!directive && strchr(line, '#') && (strstr(line, "include") || strstr(line, "embed")))
    sc->unsure = true; /* perhaps a directive behind a comment of several lines */
  for (const char *q = line; (q = strstr(q, "__has_")) != NULL;) {
    q += 6;
    bool next = false;
    if (word_at(&q, "include_next")) next = true;
    else if (!word_at(&q, "include") && !word_at(&q, "embed")) continue;
    q = skip_space(q);
    if (*q != '(') continue; /* defined(__has_include), #ifdef __has_include */
    if (header_name(skip_space(q + 1), name, sizeof name, &angle))
      resolve(sc, from, name, angle, next, true);
    else
      sc->unsure = true;
  }
}

static void scan_text(scan *sc, const char *text, size_t len, const char *from) {
  char *t = malloc(len + 1); /* the text with continuations joined, one line at a time */
  if (!t) {
    sc->oom = true;
    return;
  }
  size_t i = 0;
  while (i < len && !sc->oom) {
    size_t k = 0;
    while (i < len && text[i] != '\n') {
      if (text[i] == '\\' && i + 1 < len && text[i + 1] == '\n') i += 2;
      else if (text[i] == '\\' && i + 2 < len && text[i + 1] == '\r' && text[i + 2] == '\n') i += 3;
      else t[k++] = text[i++];
    }
    i++;
    t[k] = 0;
    for (size_t j = 0; j < k; j++)
      if (t[j] == 0) t[j] = ' '; /* clang ignores a NUL */
    if (k > 0) scan_line(sc, t, from);
  }
  free(t);
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

/* -I<the source's directory> into out; false when it comes from memory. */
static bool source_include(const rt_cc_job *job, char *out, size_t cap) {
  if (!job->path) return false;
  char dir[PATH_MAX];
  dir_of(job->path, dir, sizeof dir);
  snprintf(out, cap, "-I%s", dir);
  return true;
}

/* Run clang on job's source in tmp: compile to tmp/out.bc (*bc, malloc'd),
 * or with bc NULL only list the non-system files it reads; either way the
 * list goes to tmp/deps.d. 0, or -1 with st (clang's messages). */
static int run_clang(const rt_cc_job *job, const char *tmp, void **bc, size_t *bclen,
                     kiln_status *st) {
  char kdir[PATH_MAX], hdr[PATH_MAX], src[PATH_MAX], out[PATH_MAX], log[PATH_MAX], base[256];
  char deps[PATH_MAX], inc_tmp[PATH_MAX + 2], inc_src[PATH_MAX + 2];
  source_name(job, base, sizeof base);
  if (!join(kdir, sizeof kdir, tmp, "kiln") || !join(hdr, sizeof hdr, kdir, "kernel.h") ||
      !join(src, sizeof src, tmp, base) || !join(out, sizeof out, tmp, "out.bc") ||
      !join(log, sizeof log, tmp, "clang.txt") || !join(deps, sizeof deps, tmp, "deps.d") ||
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
  char *argv[CC_NFLAGS + 20];
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
  if (source_include(job, inc_src, sizeof inc_src)) argv[k++] = inc_src; /* quote includes
                                                                            next to the file */
  argv[k++] = src;
  if (bc) {
    argv[k++] = "-o";
    argv[k++] = out;
  }
  argv[k++] = bc ? "-MMD" : "-MM";
  argv[k++] = "-MT";
  argv[k++] = "kiln";
  argv[k++] = "-MF";
  argv[k++] = deps;
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
  if (bc && (!(*bc = read_file(out, bclen)) || !looks_like_bitcode(*bc, *bclen))) {
    free(*bc);
    *bc = NULL;
    return rt_err(st, KILN_ERR_COMPILE, "kernel library '%s': %s wrote no bitcode", job->name,
                  job->clang);
  }
  return 0;
}

/* The files tmp/deps.d lists (make syntax, target "kiln") outside tmp, as
 * clang named them, into out. 0, or -1 when it is missing or malformed. */
static int read_deps(const char *tmp, str_list *out) {
  char p[PATH_MAX];
  size_t n = 0;
  char *t = join(p, sizeof p, tmp, "deps.d") ? read_file(p, &n) : NULL;
  if (!t || n < 5 || memcmp(t, "kiln:", 5) != 0) {
    free(t);
    return -1;
  }
  char *name = malloc(n + 1);
  size_t tl = strlen(tmp), k = 0;
  int rc = name ? 0 : -1;
  for (size_t i = 5; i <= n && rc == 0; i++) {
    char c = i < n ? t[i] : ' ';
    if (c == '\\' && i + 1 < n && (t[i + 1] == ' ' || t[i + 1] == '#')) {
      name[k++] = t[++i];
    } else if (c == '$' && i + 1 < n && t[i + 1] == '$') {
      name[k++] = t[++i];
    } else if (c == '\\' && i + 1 < n && (t[i + 1] == '\n' || t[i + 1] == '\r')) {
      continue; /* a continuation: the newline that follows ends the name */
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      bool in_tmp = k > tl && memcmp(name, tmp, tl) == 0 && name[tl] == '/';
      if (k > 0 && !in_tmp && list_add(out, name, k) < 0) rc = -1;
      k = 0;
    } else {
      name[k++] = c;
    }
  }
  free(name);
  free(t);
  return rc;
}

/* Remove the temporary directory (only the names run_clang writes). */
static void remove_tmp(const char *tmp, const rt_cc_job *job) {
  char p[PATH_MAX], base[256];
  source_name(job, base, sizeof base);
  static const char *const files[] = {"kiln/kernel.h", "out.bc", "clang.txt", "version.txt",
                                      "math.h", "deps.d"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (join(p, sizeof p, tmp, files[i])) unlink(p);
  }
  if (join(p, sizeof p, tmp, base)) unlink(p);
  if (join(p, sizeof p, tmp, "kiln")) rmdir(p);
  rmdir(tmp);
}

/* A fresh temporary directory into tmp. 0 or -1 with st. */
static int make_tmp(const rt_cc_job *job, char *tmp, size_t cap, kiln_status *st) {
  const char *tdir = getenv("TMPDIR");
  snprintf(tmp, cap, "%s/kiln-cc-XXXXXX", tdir && *tdir ? tdir : "/tmp");
  if (!mkdtemp(tmp))
    return rt_err(st, KILN_ERR_IO, "kernel library '%s': cannot create a temporary directory "
                  "in %s: %s", job->name, tdir && *tdir ? tdir : "/tmp", strerror(errno));
  return 0;
}

/* ---- the library hash ---- */

/* The user files job's source reads, from `clang -MM` (the scan could not
 * follow an include), into sc. 0 or -1 with st. */
static int files_by_clang(scan *sc, kiln_status *st) {
  char tmp[PATH_MAX];
  if (make_tmp(sc->job, tmp, sizeof tmp, st) < 0) return -1;
  str_list files = {0};
  int rc = run_clang(sc->job, tmp, NULL, NULL, st);
  if (rc == 0 && read_deps(tmp, &files) < 0)
    rc = rt_err(st, KILN_ERR_COMPILE, "kernel library '%s': %s -MM wrote no list of the files "
                "it reads", sc->job->name, sc->job->clang);
  remove_tmp(tmp, sc->job);
  put(sc, "clang -MM", "");
  for (int i = 0; rc == 0 && i < files.n; i++) take_file(sc, files.v[i], true);
  list_free(&files);
  return rc;
}

/* The library hash of job into out (see the top); the paths of the user
 * files it covers into sc->seen (sc is set up here; the caller frees
 * its lists). 0 or -1 with st. */
static int library_hash(const rt_cc_job *job, char out[40], scan *sc, kiln_status *st) {
  memset(sc, 0, sizeof *sc);
  char real[PATH_MAX];
  struct stat sb;
  if (!realpath(job->clang, real) || stat(real, &sb) != 0)
    return rt_err(st, KILN_ERR_NOT_FOUND, "kernel library '%s': cannot resolve the compiler %s",
                  job->name, job->clang);
  char ident[PATH_MAX + 96];
  int il = snprintf(ident, sizeof ident, "%s\n%lld\n%lld.%09ld\n", real, (long long)sb.st_size,
                    (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
  XXH3_state_t s, files;
  XXH3_128bits_reset(&s);
  XXH3_128bits_update(&s, "kiln-clang/2\n", 13);
  XXH3_128bits_update(&s, ident, (size_t)il);
  for (size_t i = 0; i < CC_NFLAGS; i++)
    XXH3_128bits_update(&s, CC_FLAGS[i], strlen(CC_FLAGS[i]) + 1);
  XXH3_128bits_update(&s, kiln_kernel_h_text, kiln_kernel_h_text_len);
  if (job->target) {
    XXH3_128bits_update(&s, "target=", 7);
    XXH3_128bits_update(&s, job->target, strlen(job->target) + 1);
    XXH3_128bits_update(&s, GPU_MATH_H, sizeof GPU_MATH_H - 1);
  }
  const char *file = job->path ? job->path : job->name; /* clang's messages name it */
  XXH3_128bits_update(&s, file, strlen(file) + 1);
  if (job->len) XXH3_128bits_update(&s, job->src, job->len);
  /* the user files: the scan, else clang's list */
  sc->job = job;
  sc->hs = &files;
  source_name(job, sc->base, sizeof sc->base);
  char dir[PATH_MAX];
  if (job->path) {
    dir_of(job->path, dir, sizeof dir);
    if (list_add(&sc->dirs, dir, strlen(dir)) < 0) sc->oom = true;
  }
  const char *cpath = getenv("CPATH"); /* clang adds these as -I; an empty entry is "." */
  for (const char *p = cpath && *cpath ? cpath : NULL; p && !sc->oom;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (list_add(&sc->dirs, n ? p : ".", n ? n : 1) < 0) sc->oom = true;
    p = end ? end + 1 : NULL;
  }
  XXH3_128bits_reset(&files);
  if (!sc->oom) scan_text(sc, job->src ? job->src : "", job->len, NULL);
  if (!sc->oom && sc->unsure) {
    list_free(&sc->seen);
    XXH3_128bits_reset(&files);
    if (files_by_clang(sc, st) < 0) return -1;
  }
  if (sc->oom)
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "kernel library '%s': out of memory", job->name);
  XXH128_canonical_t fc;
  XXH128_canonicalFromHash(&fc, XXH3_128bits_digest(&files));
  XXH3_128bits_update(&s, "files", 6);
  XXH3_128bits_update(&s, &fc, sizeof fc);
  XXH128_hash_t h = XXH3_128bits_digest(&s);
  snprintf(out, 40, "c-%016llx%016llx", (unsigned long long)h.high64,
           (unsigned long long)h.low64);
  return 0;
}

static void scan_free(scan *sc) {
  list_free(&sc->dirs);
  list_free(&sc->seen);
  list_free(&sc->scanned);
}

int rt_cc_prepare(rt_cc_job *job, kiln_status *st) {
  if (find_clang(job, st) < 0) return -1;
  scan sc;
  int rc = library_hash(job, job->hash, &sc, st);
  scan_free(&sc);
  return rc;
}

/* After a compile in tmp: the hash computed again is job's (no header
 * changed meanwhile) and every user file clang read (tmp/deps.d) is one
 * the hash covers. 0 or -1 with st. */
static int check_files(const rt_cc_job *job, const char *tmp, kiln_status *st) {
  scan sc;
  char again[40];
  str_list read = {0};
  int rc = library_hash(job, again, &sc, st);
  if (rc == 0 && strcmp(again, job->hash) != 0)
    rc = rt_err(st, KILN_ERR_IO, "kernel library '%s': a header it includes changed while it "
                "compiled; add the library again", job->name);
  if (rc == 0 && read_deps(tmp, &read) < 0)
    rc = rt_err(st, KILN_ERR_COMPILE, "kernel library '%s': %s wrote no list of the files it "
                "read (-MMD)", job->name, job->clang);
  str_list covered = {0}; /* the real paths of what the hash covers */
  for (int i = 0; rc == 0 && i < sc.seen.n; i++) {
    char real[PATH_MAX];
    if (!realpath(sc.seen.v[i], real)) snprintf(real, sizeof real, "%s", sc.seen.v[i]);
    if (list_add(&covered, real, strlen(real)) < 0)
      rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "kernel library '%s': out of memory", job->name);
  }
  for (int i = 0; rc == 0 && i < read.n; i++) {
    char real[PATH_MAX];
    if (!realpath(read.v[i], real)) snprintf(real, sizeof real, "%s", read.v[i]);
    if (!list_has(&covered, real))
      rc = rt_err(st, KILN_ERR_UNSUPPORTED,
                  "kernel library '%s': clang read %s, which kiln's scan of its #include lines "
                  "did not find (reached through a system header?): its edits would go unseen "
                  "by the cache; include it from the library with #include \"...\"",
                  job->name, real);
  }
  list_free(&covered);
  list_free(&read);
  scan_free(&sc);
  return rc;
}

int rt_cc_build(const rt_cc_job *job, const rt_lib_dirs *dirs, void **bc, size_t *bclen,
                kiln_status *st) {
  *bc = NULL;
  *bclen = 0;
  if (dirs && (*bc = cache_get(dirs, job, bclen))) return 0;
  char tmp[PATH_MAX];
  if (make_tmp(job, tmp, sizeof tmp, st) < 0) return -1;
  int rc = check_version(job, tmp, st);
  if (rc == 0) rc = run_clang(job, tmp, bc, bclen, st);
  if (rc == 0) rc = check_files(job, tmp, st);
  remove_tmp(tmp, job);
  if (rc < 0) {
    free(*bc);
    *bc = NULL;
    *bclen = 0;
  } else if (dirs && dirs->dir) {
    cache_put(dirs->dir, job, *bc, *bclen);
  }
  return rc;
}
