/* cache.c - `kiln cache SUBCOMMAND`: look at and maintain the on-disk kernel
 * cache (src/cache_disk.h) and say why a graph's kernels hit or miss it;
 * warm --remote compiles straight into the remote cache (cache_remote.c).
 * See cli_usage_cache for the commands and their output.
 *
 * The directory: --dir DIR, else the runtime's rules (KILN_CACHE_DIR, else
 * $XDG_CACHE_HOME/kiln, else ~/.cache/kiln). These commands work on the
 * directory even when KILN_CACHE=off (which only stops the runtime from
 * using it); `stats` says when it is off. explain and warm compute kernel
 * texts and keys exactly as kiln_model_compile does (ir_kernel_text, the key
 * parts of a fresh context's memory cache); the context itself is made with
 * KILN_CACHE=off so it never opens a store of its own, and warm plugs the
 * chosen store under its memory cache for the puts.
 *
 * Bundles (export / import): cache_bundle.c.
 *
 * Exit status: 0 done, 1 an error (message on stderr), 2 bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "../cache_disk.h"
#include "../cache_mem.h"
#include "../cache_remote.h"
#include "../pipeline.h"
#include "../rt.h"
#include "cache_cli.h"
#include "cli.h"
#include "progress.h"

/* ---- small helpers ---- */

static bool env_is_off(const char *v) {
  return v && (!strcasecmp(v, "off") || !strcmp(v, "0") || !strcasecmp(v, "no") ||
               !strcasecmp(v, "false") || !strcasecmp(v, "disabled"));
}

const char *cli_human_bytes(char *buf, size_t cap, uint64_t v) {
  static const char *unit[] = {"KiB", "MiB", "GiB", "TiB"};
  if (v < 1024) {
    snprintf(buf, cap, "%llu B", (unsigned long long)v);
    return buf;
  }
  double x = (double)v / 1024;
  int u = 0;
  while (x >= 1024 && u < 3) {
    x /= 1024;
    u++;
  }
  snprintf(buf, cap, "%.1f %s", x, unit[u]);
  return buf;
}

static int64_t now_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* "just now", "42s ago", "5m ago", "3h ago", "2d ago". */
static const char *age_text(char *buf, size_t cap, int64_t then_ns) {
  int64_t s = (now_real_ns() - then_ns) / 1000000000;
  if (s < 1) snprintf(buf, cap, "just now");
  else if (s < 120) snprintf(buf, cap, "%llds ago", (long long)s);
  else if (s < 7200) snprintf(buf, cap, "%lldm ago", (long long)(s / 60));
  else if (s < 172800) snprintf(buf, cap, "%lldh ago", (long long)(s / 3600));
  else snprintf(buf, cap, "%lldd ago", (long long)(s / 86400));
  return buf;
}

static const char *comp_value(const kc_disk_entry *e, const char *name) {
  for (int i = 0; i < e->ncomponents; i++)
    if (strcmp(e->components[i].name, name) == 0) return e->components[i].value;
  return NULL;
}

/* Copy types text [c, end) to out at *k as "[d0, 512]f32": "!mo.tensor<[d0,
 * 512], f32>" shortened, value names ("%a0: ") dropped. */
static void append_types(const char *c, const char *end, char *out, size_t *k, size_t cap) {
  int in_tensor = 0;
  for (; c < end && *k + 1 < cap; c++) {
    if (strncmp(c, "!mo.tensor<", 11) == 0) {
      in_tensor = 1;
      c += 10;
      continue;
    }
    if (*c == '%') { /* "%a0: " */
      while (c < end && *c != ' ') c++;
      continue;
    }
    if (in_tensor && c[0] == ']' && c[1] == ',') { /* "[d0, 512], f32" -> "[d0, 512]f32" */
      out[(*k)++] = ']';
      c += (c[2] == ' ') ? 2 : 1;
      continue;
    }
    if (in_tensor && *c == '>') {
      in_tensor = 0;
      continue;
    }
    out[(*k)++] = *c;
  }
  out[*k] = 0;
}

/* A fused kernel (several nodes, ir_kernel_text): "mo.matmul+mo.add+mo.relu
 * ([d0, 784]f32, [784, 512]f32, [512]f32) -> ([d0, 512]f32)": its ops in
 * order, then the kernel graph's own signature. */
static void fused_summary(const char *text, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = text; (p = strstr(p, " = mo.")) && k + 1 < cap; p++) {
    if (k && k + 1 < cap) out[k++] = '+';
    for (const char *c = p + 3; *c && *c != '(' && *c != ' ' && *c != '{' && k + 1 < cap; c++)
      out[k++] = *c;
  }
  out[k] = 0;
  const char *sig = strchr(text, '(');
  const char *body = strstr(text, " {");
  if (!sig || !body || body < sig || k + 2 >= cap) return;
  out[k++] = ' ';
  append_types(sig, body, out, &k, cap);
}

/* A readable one-line summary of a kernel text: "mo.matmul ([d0, 512]f32,
 * [512, 10]f32) -> [d0, 10]f32", from the line of its single node. */
static void kernel_summary(const char *text, char *out, size_t cap) {
  out[0] = 0;
  if (text && strstr(text, "%t0 = mo.")) {
    fused_summary(text, out, cap);
    return;
  }
  const char *p = text ? strstr(text, "%r0 = mo.") : NULL;
  if (!p) p = text ? strstr(text, "= mo.") : NULL;
  if (!p) {
    snprintf(out, cap, "?");
    return;
  }
  p = strstr(p, "mo.");
  const char *eol = strchr(p, '\n');
  if (!eol) eol = p + strlen(p);
  size_t k = 0;
  const char *op_end = p;
  while (op_end < eol && *op_end != '(' && *op_end != ' ') op_end++;
  for (const char *c = p; c < op_end && k + 1 < cap; c++) out[k++] = *c;
  /* attributes, if any, sit between the operand list and " : " */
  const char *colon = strstr(op_end, ") : ");
  if (!colon || colon > eol) colon = strstr(op_end, " : ");
  if (!colon || colon > eol) {
    out[k] = 0;
    return;
  }
  const char *attrs = strchr(op_end, '{');
  if (attrs && attrs < colon) {
    const char *ae = strchr(attrs, '}');
    if (ae && ae < eol)
      for (const char *c = attrs - 1; c <= ae && k + 1 < cap; c++) out[k++] = *c;
  }
  append_types(strstr(colon, " : ") + 2, eol, out, &k, cap);
}

static void warn_stderr(void *user, const char *msg) {
  (void)user;
  fprintf(stderr, "kiln cache: warning: %s\n", msg);
}

/* Open the store (even when KILN_CACHE=off); NULL after printing why. */
static kc_disk *open_store(const cache_opts *o) {
  kiln_status *st = kiln_status_new();
  kc_disk *d = kc_disk_open(o->dir, 0, KC_DISK_IGNORE_OFF, st);
  if (!d) fprintf(stderr, "kiln cache: %s\n", kiln_status_message(st));
  else kc_disk_set_warn(d, warn_stderr, NULL);
  kiln_status_free(st);
  return d;
}

static int fail_st(const char *what, kiln_status *st) {
  fprintf(stderr, "kiln cache %s: %s\n", what, kiln_status_message(st));
  return CLI_ERR;
}

/* ---- ls ---- */

typedef struct ls_state {
  uint64_t n, bytes;
} ls_state;

static int ls_visit(const kc_disk_entry *e, void *user) {
  ls_state *s = user;
  if (s->n++ == 0)
    printf("%-32s  %10s  %-9s  %s\n", "KEY (least recently used first)", "SIZE", "LAST USE",
           "KERNEL");
  s->bytes += e->file_bytes;
  char hex[33], size[32], age[32], kern[512];
  kc_key_hex(e->key, hex);
  kernel_summary(comp_value(e, "kernel_ir"), kern, sizeof kern);
  printf("%s  %10s  %-9s  %s\n", hex, cli_human_bytes(size, sizeof size, e->file_bytes),
         age_text(age, sizeof age, e->last_use_ns), kern);
  return 0;
}

static int cmd_ls(const cache_opts *o, kc_disk *d) {
  (void)o;
  kiln_status *st = kiln_status_new();
  ls_state s = {0};
  int rc = kc_disk_list(d, true, ls_visit, &s, st) < 0 ? fail_st("ls", st) : CLI_OK;
  char b[32];
  if (rc == CLI_OK) {
    if (s.n == 0) printf("no entries in %s\n", kc_disk_dir(d));
    else
      printf("%llu entr%s, %s in %s\n", (unsigned long long)s.n, s.n == 1 ? "y" : "ies",
             cli_human_bytes(b, sizeof b, s.bytes), kc_disk_dir(d));
  }
  kiln_status_free(st);
  return rc;
}

/* ---- stats ---- */

/* Where the directory setting comes from, and the directory it names
 * (dir[cap]) as kc_disk_open resolves it. */
static const char *dir_setting(const cache_opts *o, char *dir, size_t cap) {
  const char *v;
  if (o->dir) {
    snprintf(dir, cap, "%s", o->dir);
    return "--dir";
  }
  if ((v = getenv("KILN_CACHE_DIR")) && *v) {
    snprintf(dir, cap, "%s", v);
    return "KILN_CACHE_DIR";
  }
  if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/') {
    snprintf(dir, cap, "%s/kiln", v);
    return "default: $XDG_CACHE_HOME/kiln";
  }
  snprintf(dir, cap, "%s/.cache/kiln", getenv("HOME") ? getenv("HOME") : "(HOME unset)");
  return "default: ~/.cache/kiln";
}

/* The seeds of KILN_CACHE_SEED_DIR, each with its entry count or why it
 * cannot be used; problems counted in *nproblems. */
static void print_seeds(int *nproblems) {
  const char *list = getenv("KILN_CACHE_SEED_DIR");
  if (!list || !*list) {
    printf("seeds:     none (KILN_CACHE_SEED_DIR is not set)\n");
    return;
  }
  char *copy = strdup(list), *save = NULL;
  int n = 0;
  kiln_status *st = kiln_status_new();
  for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
       dir = strtok_r(NULL, ":", &save)) {
    kc_disk *sd = kc_disk_open(dir, KC_DISK_DEFAULT_MAX_BYTES,
                               KC_DISK_IGNORE_OFF | KC_DISK_READ_ONLY, st);
    kc_disk_stats ss;
    printf("%s", n++ ? "           " : "seeds:     ");
    if (sd && kc_disk_stats_get(sd, &ss, st) == 0)
      printf("%s (KILN_CACHE_SEED_DIR, read-only): %llu entr%s\n", dir,
             (unsigned long long)ss.entries, ss.entries == 1 ? "y" : "ies");
    else {
      printf("%s (KILN_CACHE_SEED_DIR): not used\n", dir);
      printf("problem:   %s\n", kiln_status_message(st));
      ++*nproblems;
    }
    kc_disk_close(sd);
  }
  kiln_status_free(st);
  free(copy);
}

/* The settings as the runtime would take them; d NULL when the store could
 * not be opened (problem says why). The count of problems printed. */
static int print_settings(const cache_opts *o, const kc_disk_stats *s, const kc_disk *d,
                          const char *problem) {
  char dir[1024], b1[32], b2[32];
  const char *src = dir_setting(o, dir, sizeof dir);
  int np = 0;
  printf("directory: %s (%s)%s\n", d ? kc_disk_dir(d) : dir, src,
         kc_disk_read_only(d) ? ", read-only" : d ? "" : ", not usable");
  if (d) {
    printf("entries:   %llu\n", (unsigned long long)s->entries);
    printf("bytes:     %llu (%s)\n", (unsigned long long)s->bytes,
           cli_human_bytes(b1, sizeof b1, s->bytes));
  }
  print_seeds(&np);
  const char *mb = getenv("KILN_CACHE_MAX_BYTES");
  uint64_t bound = d ? s->max_bytes : KC_DISK_DEFAULT_MAX_BYTES, parsed = 0;
  bool mb_bad = mb && *mb && !kc_parse_bytes(mb, &parsed);
  if (mb_bad)
    printf("bound:     not set: KILN_CACHE_MAX_BYTES='%s' is not a byte count\n", mb);
  else
    printf("bound:     %llu (%s, %s)%s", (unsigned long long)bound,
           cli_human_bytes(b2, sizeof b2, bound),
           mb && *mb && parsed ? "KILN_CACHE_MAX_BYTES" : "default", d ? "" : "\n");
  if (d && !mb_bad)
    printf(", %.0f%% used\n",
           s->max_bytes ? 100.0 * (double)s->bytes / (double)s->max_bytes : 0.0);
  if (o->runtime_off)
    printf("runtime:   off (KILN_CACHE=%s): kiln run and the API compile every kernel and do "
           "not use this directory\n",
           o->runtime_off_value);
  else if (!d || mb_bad)
    printf("runtime:   no disk cache: kiln run and the API compile every kernel (see the "
           "problem below)\n");
  else if (kc_disk_read_only(d))
    printf("runtime:   enabled, read-only (kernels are read, new ones not stored)\n");
  else printf("runtime:   enabled (KILN_CACHE=off would disable it)\n");
  if (problem && *problem) {
    printf("problem:   %s\n", problem);
    np++;
  }
  if (kc_disk_read_only(d)) {
    printf("problem:   %s\n", kc_disk_note(d));
    np++;
  }
  return np;
}

/* stats when the store does not open: the settings and why, then false. */
static bool stats_store_ok(const cache_opts *o) {
  kiln_status *st = kiln_status_new();
  kc_disk *d = kc_disk_open(o->dir, 0, KC_DISK_IGNORE_OFF, st);
  if (!d) {
    print_settings(o, NULL, NULL, kiln_status_message(st));
    fprintf(stderr, "kiln cache stats: %s\n", kiln_status_message(st));
  }
  kc_disk_close(d);
  kiln_status_free(st);
  return d != NULL;
}

static int cmd_stats(const cache_opts *o, kc_disk *d) {
  kiln_status *st = kiln_status_new();
  kc_disk_stats s;
  if (kc_disk_stats_get(d, &s, st) < 0) {
    int rc = fail_st("stats", st);
    kiln_status_free(st);
    return rc;
  }
  kiln_status_free(st);
  print_settings(o, &s, d, NULL);
  if (s.corrupt_removed)
    printf("removed:   %llu corrupt entr%s found while counting\n",
           (unsigned long long)s.corrupt_removed, s.corrupt_removed == 1 ? "y" : "ies");
  return CLI_OK;
}

/* ---- clear, prune, verify ---- */

static int cmd_clear(const cache_opts *o, kc_disk *d) {
  (void)o;
  kiln_status *st = kiln_status_new();
  uint64_t removed = 0;
  int rc = CLI_OK;
  if (kc_disk_clear(d, &removed, st) < 0) rc = fail_st("clear", st);
  else
    printf("removed %llu entr%s from %s\n", (unsigned long long)removed,
           removed == 1 ? "y" : "ies", kc_disk_dir(d));
  kiln_status_free(st);
  return rc;
}

static int cmd_prune(const cache_opts *o, kc_disk *d) {
  uint64_t target = kc_disk_max_bytes(d);
  if (o->max_bytes && !kc_parse_bytes(o->max_bytes, &target)) {
    fprintf(stderr, "kiln cache prune: --max-bytes expects a size like 0, 4096, 64K, 512M or 1G, "
                    "got '%s'\n",
            o->max_bytes);
    return CLI_USAGE;
  }
  kiln_status *st = kiln_status_new();
  uint64_t removed = 0, rbytes = 0;
  kc_disk_stats s;
  int rc = CLI_OK;
  char b1[32], b2[32], b3[32];
  if (kc_disk_prune(d, target, &removed, &rbytes, st) < 0 || kc_disk_stats_get(d, &s, st) < 0) {
    rc = fail_st("prune", st);
  } else {
    printf("removed %llu entr%s (%s), least recently used first, to fit %s%s\n",
           (unsigned long long)removed, removed == 1 ? "y" : "ies",
           cli_human_bytes(b1, sizeof b1, rbytes), cli_human_bytes(b2, sizeof b2, target),
           o->max_bytes ? "" : " (the configured bound)");
    printf("%s now holds %llu entr%s, %s\n", kc_disk_dir(d), (unsigned long long)s.entries,
           s.entries == 1 ? "y" : "ies", cli_human_bytes(b3, sizeof b3, s.bytes));
  }
  kiln_status_free(st);
  return rc;
}

static int cmd_verify(const cache_opts *o, kc_disk *d) {
  if (o->recompile) return cli_cache_recompile(o, d);
  kiln_status *st = kiln_status_new();
  kc_disk_stats before;
  uint64_t bad = 0;
  int rc = CLI_OK;
  if (kc_disk_stats_get(d, &before, st) < 0 || kc_disk_verify(d, &bad, st) < 0) {
    rc = fail_st("verify", st);
  } else {
    uint64_t n = before.entries;
    printf("checked %llu entr%s in %s: %llu ok, %llu bad (removed)\n", (unsigned long long)n,
           n == 1 ? "y" : "ies", kc_disk_dir(d), (unsigned long long)(n >= bad ? n - bad : 0),
           (unsigned long long)bad);
  }
  kiln_status_free(st);
  return rc;
}

/* ---- graphs: kernels and keys, as kiln_model_compile makes them ---- */

typedef struct kernel_info {
  int node;
  char desc[160]; /* "node 4 (mo.matmul -> %0)" */
  char *text;     /* ir_kernel_text */
  rt_key_parts parts;
  kc_key key;
} kernel_info;

typedef struct graph_job {
  kiln_status *st;
  kiln_graph *g;
  ir_graph *ir; /* verified clone */
  kiln_context *ctx;
  kernel_info *k;
  int nk;
  int *generic_nsyms; /* per node: symbols its generic kernel reads */
} graph_job;

static void graph_job_free(graph_job *j) {
  for (int i = 0; i < j->nk; i++) free(j->k[i].text);
  free(j->k);
  free(j->generic_nsyms);
  kiln_context_free(j->ctx);
  ir_graph_free(j->ir);
  kiln_graph_free(j->g);
  kiln_status_free(j->st);
}

/* Check --dim SYM=V[,V...] against the graph's symbols (multi: several
 * values allowed; own: every SYM must be one of g's, else warm over several
 * graphs checks that some graph has it). 0, CLI_ERR or CLI_USAGE after
 * printing why. */
static int check_dims(const cache_opts *o, const ir_graph *g, bool multi, bool own,
                      const char *cmd) {
  for (int i = 0; i < o->ndims; i++) {
    const char *v = o->dims[i], *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) {
      fprintf(stderr, "kiln cache %s: --dim expects SYM=VALUE%s, got '%s'\n", cmd,
              multi ? "[,VALUE...]" : "", v);
      return CLI_USAGE;
    }
    int k = 0;
    while (k < g->nsyms && (strlen(g->syms[k]) != (size_t)(eq - v) ||
                            strncmp(g->syms[k], v, (size_t)(eq - v)) != 0))
      k++;
    if (k == g->nsyms && own) {
      fprintf(stderr, "kiln cache %s: --dim %.*s: graph @%s has no symbolic dim '%.*s' (symbols:",
              cmd, (int)(eq - v), v, g->name, (int)(eq - v), v);
      for (int s = 0; s < g->nsyms; s++) fprintf(stderr, "%s %s", s ? "," : "", g->syms[s]);
      fprintf(stderr, "%s)\n", g->nsyms ? "" : " none");
      return CLI_ERR;
    }
    const char *p = eq + 1;
    for (;;) {
      char *end;
      errno = 0;
      long long x = strtoll(p, &end, 10);
      if (end == p || errno || x < 0 || (*end && *end != ',') || (*end == ',' && !multi)) {
        fprintf(stderr, "kiln cache %s: --dim %s: expected %s, got '%s'\n", cmd, v,
                multi ? "non-negative integers separated by commas" : "a non-negative integer",
                eq + 1);
        return CLI_ERR;
      }
      if (!*end) break;
      p = end + 1;
    }
  }
  return 0;
}

/* Load, verify, make the context and every kernel's text and key. */
/* "mo.relu", or for a fused node its ops: "mo.matmul+mo.add+mo.relu". */
static const char *node_ops(const ir_node *n, char *buf, size_t cap) {
  if (!n->body) {
    snprintf(buf, cap, "mo.%s", ir_op_get(n->op)->name);
    return buf;
  }
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n->body->nnodes && k + 1 < cap; i++) {
    int w = snprintf(buf + k, cap - k, "%smo.%s", i ? "+" : "", ir_op_get(n->body->nodes[i]->op)->name);
    if (w < 0) break;
    k += (size_t)w;
  }
  return buf;
}

/* Kernel node i of the prepared graph under b (NULL: generic) into
 * j->k[j->nk] (room for it): its text, description and key, as the model
 * makes them (pipeline.c). bdesc describes the binding ("" for none). *nks
 * (may be NULL) gets the kernel's symbol count. 0, or -1 with j->st. */
static int kernel_info_init(graph_job *j, int i, const rt_binding *b, const char *bdesc,
                            int *nks) {
  kernel_info *k = &j->k[j->nk];
  memset(k, 0, sizeof *k);
  if (!(k->text = rt_pipeline_kernel_text(j->ir, i, b, NULL, nks, j->st))) return -1;
  j->nk++;
  k->node = i;
  const ir_node *n = j->ir->nodes[i];
  char ops[96];
  snprintf(k->desc, sizeof k->desc, "node %d (%s -> %%%s)%s%s%s", i, node_ops(n, ops, sizeof ops),
           n->nout > 0 ? n->out[0]->name : "?", bdesc[0] ? " [" : "", bdesc, bdesc[0] ? "]" : "");
  rt_target t;
  rt_target_host(&t, j->ctx);
  rt_pipeline_host_key(&t, k->text, &k->parts, &k->key);
  return 0;
}

/* Graph file `path` (one of o->pos) prepared as the runtime prepares it. */
static int graph_job_init(graph_job *j, const cache_opts *o, const char *path, bool multi_dims,
                          const char *cmd) {
  memset(j, 0, sizeof *j);
  if (!(j->st = kiln_status_new())) return CLI_ERR;
  if (!(j->g = kiln_graph_load(path, j->st))) return fail_st(cmd, j->st);
  if (!(j->ir = ir_graph_clone(j->g->ir))) {
    fprintf(stderr, "kiln cache %s: out of memory\n", cmd);
    return CLI_ERR;
  }
  /* the runtime's target and options, without a store of the context's own */
  setenv("KILN_CACHE", "off", 1);
  if (!(j->ctx = kiln_context_new(j->st))) return fail_st(cmd, j->st);
  /* custom ops bound as kiln run --kernels binds them: their libraries'
   * hashes are in the kernel texts, so the keys are the model's */
  for (int i = 0; i < o->nkernels; i++)
    if (kiln_context_add_kernel_library(j->ctx, o->kernels[i], j->st) < 0)
      return fail_st(cmd, j->st);
  rt_target t;
  rt_target_host(&t, j->ctx);
  if (rt_pipeline_prepare(j->ir, &t, path, j->st) < 0) return fail_st(cmd, j->st);
  int rc = check_dims(o, j->ir, multi_dims, o->npos == 1, cmd);
  if (rc) return rc;
  j->k = calloc((size_t)j->ir->nnodes + 1, sizeof *j->k);
  j->generic_nsyms = calloc((size_t)j->ir->nnodes + 1, sizeof *j->generic_nsyms);
  if (!j->k || !j->generic_nsyms) {
    fprintf(stderr, "kiln cache %s: out of memory\n", cmd);
    return CLI_ERR;
  }
  for (int i = 0; i < j->ir->nnodes; i++) {
    if (!rt_pipeline_has_kernel(j->ir, j->ir->nodes[i])) continue;
    if (kernel_info_init(j, i, NULL, "", &j->generic_nsyms[i]) < 0) return fail_st(cmd, j->st);
  }
  return 0;
}

/* Values of --dim for symbol k (warm: SYM=V1,V2,...), into vals (room for
 * cap); the count, 0 when the symbol is not given. */
static int dim_values(const cache_opts *o, const char *sym, int64_t *vals, int cap) {
  size_t sl = strlen(sym);
  int n = 0;
  for (int i = 0; i < o->ndims; i++) {
    const char *v = o->dims[i], *eq = strchr(v, '=');
    if (!eq || (size_t)(eq - v) != sl || strncmp(v, sym, sl) != 0) continue;
    n = 0; /* the last --dim of a symbol wins */
    for (const char *p = eq + 1; *p && n < cap;) {
      char *end;
      vals[n++] = strtoll(p, &end, 10); /* syntax checked by check_dims */
      p = *end == ',' ? end + 1 : end;
    }
  }
  return n;
}

#define WARM_MAX_BINDINGS 256
#define WARM_MAX_VALUES 64

/* With --dim values for every symbol: also the shape-specialized kernels
 * (ir_kernel_text_bound, as kiln_model_specialize makes them under exact
 * buckets) for every combination of the values. *nbind gets the number of
 * bindings (0: none, and *missing names a symbol without values). 0 or
 * CLI_ERR after printing why. */
static int add_bindings(graph_job *j, const cache_opts *o, const char *cmd, int *nbind,
                        const char **missing) {
  const ir_graph *g = j->ir;
  *nbind = 0;
  *missing = NULL;
  if (g->nsyms == 0 || o->ndims == 0) return 0;
  int64_t(*vals)[WARM_MAX_VALUES] = calloc((size_t)g->nsyms, sizeof *vals);
  int *nv = calloc((size_t)g->nsyms, sizeof *nv), *at = calloc((size_t)g->nsyms, sizeof *at);
  int64_t *b = calloc((size_t)g->nsyms, sizeof *b);
  int rc = 0;
  long total = 1;
  if (!vals || !nv || !at || !b) {
    fprintf(stderr, "kiln cache %s: out of memory\n", cmd);
    rc = CLI_ERR;
  }
  for (int k = 0; rc == 0 && k < g->nsyms; k++) {
    nv[k] = dim_values(o, g->syms[k], vals[k], WARM_MAX_VALUES);
    if (nv[k] == 0 && !*missing) *missing = g->syms[k];
    total *= nv[k] ? nv[k] : 1;
    if (total > WARM_MAX_BINDINGS) {
      fprintf(stderr, "kiln cache %s: the --dim values make more than %d bindings\n", cmd,
              WARM_MAX_BINDINGS);
      rc = CLI_ERR;
    }
  }
  if (rc == 0 && !*missing) {
    kernel_info *k2 = realloc(j->k, ((size_t)j->nk + (size_t)total * (size_t)g->nnodes + 1) *
                                        sizeof *k2);
    if (!k2) {
      fprintf(stderr, "kiln cache %s: out of memory\n", cmd);
      rc = CLI_ERR;
    } else {
      j->k = k2;
    }
    for (long c = 0; rc == 0 && c < total; c++) {
      char bdesc[96] = "";
      size_t bl = 0;
      for (int k = 0; k < g->nsyms; k++) {
        b[k] = vals[k][at[k]];
        bl += (size_t)snprintf(bdesc + bl, bl < sizeof bdesc ? sizeof bdesc - bl : 0, "%s%s=%lld",
                               k ? ", " : "", g->syms[k], (long long)b[k]);
      }
      rt_binding bb = {b, NULL};
      for (int i = 0; rc == 0 && i < g->nnodes; i++) {
        if (!rt_pipeline_has_kernel(g, g->nodes[i])) continue;
        if (j->generic_nsyms[i] == 0) continue; /* static kernel: the generic one serves */
        if (!rt_pipeline_host_specializes(g, i)) continue; /* a GEMM: so does its generic */
        if (kernel_info_init(j, i, &bb, bdesc, NULL) < 0) {
          fprintf(stderr, "kiln cache %s: %s under %s\n", cmd, kiln_status_message(j->st), bdesc);
          rc = CLI_ERR;
        }
      }
      (*nbind)++;
      for (int k = g->nsyms - 1; k >= 0; k--) { /* next combination */
        if (++at[k] < nv[k]) break;
        at[k] = 0;
      }
    }
  }
  free(vals);
  free(nv);
  free(at);
  free(b);
  return rc;
}

/* --target NAME of warm: the host (by "host", its triple, CPU name, "TRIPLE
 * CPU" or the whole target text) or an error. */
static int check_target(const cache_opts *o, const graph_job *j) {
  if (!o->target) return 0;
  const char *t = o->target, *triple = jit_engine_triple(j->ctx->jit),
             *cpu = jit_engine_cpu(j->ctx->jit), *full = kiln_context_target(j->ctx);
  char tc[256];
  snprintf(tc, sizeof tc, "%s %s", triple ? triple : "", cpu ? cpu : "");
  if (!strcmp(t, "host") || (triple && !strcmp(t, triple)) || (cpu && !strcmp(t, cpu)) ||
      !strcmp(t, tc) || (full && !strcmp(t, full)))
    return 0;
  fprintf(stderr,
          "kiln cache warm: --target %s: cross-target warm is not built yet (kiln compile --target writes GPU code); this "
          "kiln compiles for the host only (%s; --target host)\n",
          t, tc);
  return CLI_ERR;
}

/* ---- explain ---- */

typedef struct stored {
  kc_key key;
  char *val[RT_KEY_NPARTS];
} stored;

typedef struct stored_list {
  stored *v;
  size_t n, cap;
  bool oom;
} stored_list;

static int collect_visit(const kc_disk_entry *e, void *user) {
  stored_list *l = user;
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 64;
    stored *nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) {
      l->oom = true;
      return 1;
    }
    l->v = nv;
    l->cap = nc;
  }
  stored *s = &l->v[l->n++];
  memset(s, 0, sizeof *s);
  s->key = e->key;
  for (int i = 0; i < RT_KEY_NPARTS; i++) {
    const char *v = comp_value(e, rt_key_part_name(i));
    if (v && !(s->val[i] = strdup(v))) l->oom = true;
  }
  return l->oom;
}

static void stored_free(stored_list *l) {
  for (size_t i = 0; i < l->n; i++)
    for (int p = 0; p < RT_KEY_NPARTS; p++) free(l->v[i].val[p]);
  free(l->v);
}

static bool part_eq(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

/* Comma-separated items of a that are not items of b, at most max, into out. */
static void list_minus(const char *a, const char *b, char *out, size_t cap, int max) {
  size_t k = 0;
  int shown = 0, more = 0;
  out[0] = 0;
  for (const char *p = a; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    bool found = false;
    for (const char *q = b; q && *q && !found;) {
      const char *qe = strchr(q, ',');
      size_t ql = qe ? (size_t)(qe - q) : strlen(q);
      found = ql == len && strncmp(p, q, len) == 0;
      q = qe ? qe + 1 : q + ql;
    }
    if (!found && len) {
      if (shown < max && k + len + 2 < cap) {
        k += (size_t)snprintf(out + k, cap - k, "%s%.*s", shown ? "," : "", (int)len, p);
        shown++;
      } else {
        more++;
      }
    }
    p = e ? e + 1 : p + len;
  }
  if (more && k + 8 < cap) snprintf(out + k, cap - k, ",...");
  if (!shown) snprintf(out, cap, "nothing");
}

/* "ours vs theirs" for one differing component. */
static void diff_detail(int part, const char *ours, const char *theirs, char *out, size_t cap) {
  ours = ours ? ours : "";
  theirs = theirs ? theirs : "";
  if (strcmp(rt_key_part_name(part), "features") == 0) {
    char a[256], b[256];
    list_minus(ours, theirs, a, sizeof a, 4);
    list_minus(theirs, ours, b, sizeof b, 4);
    snprintf(out, cap, "here %.200s vs entry %.200s", a, b);
  } else if (strcmp(rt_key_part_name(part), "kernel_ir") == 0) {
    char a[256], b[256];
    kernel_summary(ours, a, sizeof a);
    kernel_summary(theirs, b, sizeof b);
    snprintf(out, cap, "%.200s vs %.200s", a, b);
  } else {
    snprintf(out, cap, "%.60s%s vs %.60s%s", ours, strlen(ours) > 60 ? "..." : "", theirs,
             strlen(theirs) > 60 ? "..." : "");
  }
}

static void explain_one(const kernel_info *k, const stored_list *l) {
  char hex[33];
  kc_key_hex(k->key, hex);
  printf("  %-28s %s  ", k->desc, hex);
  const stored *best = NULL;
  int best_score = -1;
  for (size_t i = 0; i < l->n; i++) {
    const stored *s = &l->v[i];
    if (s->key.lo == k->key.lo && s->key.hi == k->key.hi) {
      printf("hit\n");
      return;
    }
    int score = 0;
    for (int p = 0; p < RT_KEY_NPARTS; p++)
      if (part_eq(rt_key_part(&k->parts, p), s->val[p])) score += p == 0 ? 100 : 1;
    if (score > best_score) {
      best_score = score;
      best = s;
    }
  }
  if (!best) {
    printf("miss: the cache is empty\n");
    return;
  }
  char names[256] = "", detail[1024] = "";
  size_t kn = 0, kd = 0;
  for (int p = 0; p < RT_KEY_NPARTS; p++) {
    const char *ours = rt_key_part(&k->parts, p);
    if (part_eq(ours, best->val[p])) continue;
    kn += (size_t)snprintf(names + kn, sizeof names - kn, "%s%s", kn ? ", " : "",
                           rt_key_part_name(p));
    if (kn >= sizeof names) kn = sizeof names - 1;
    if (p == 0) continue;
    char d[512];
    diff_detail(p, ours, best->val[p], d, sizeof d);
    kd += (size_t)snprintf(detail + kd, sizeof detail - kd, "%s%s: %s", kd ? "; " : "",
                           rt_key_part_name(p), d);
    if (kd >= sizeof detail) kd = sizeof detail - 1;
  }
  char bhex[33];
  kc_key_hex(best->key, bhex);
  if (!names[0]) /* every component equal under another key: a foreign or damaged entry */
    printf("miss: entry %.12s... has the same components under another key\n", bhex);
  else if (part_eq(k->parts.kernel, best->val[0]))
    printf("miss: same kernel, different %s (%s)\n", names, detail);
  else if (strcmp(names, "kernel_ir") == 0)
    printf("miss: no entry for this kernel (nearest %.12s... differs in kernel_ir only)\n", bhex);
  else
    printf("miss: no entry for this kernel (nearest %.12s... differs in %s)\n", bhex, names);
}

static int cmd_explain(const cache_opts *o, kc_disk *d) {
  graph_job j;
  int rc = graph_job_init(&j, o, o->pos[0], false, "explain");
  int ngeneric = j.nk, nbind = 0;
  const char *missing = NULL;
  if (!rc) rc = add_bindings(&j, o, "explain", &nbind, &missing);
  if (rc) {
    graph_job_free(&j);
    return rc;
  }
  stored_list l = {0};
  if (kc_disk_list(d, true, collect_visit, &l, j.st) < 0 || l.oom) {
    fprintf(stderr, "kiln cache explain: %s\n", l.oom ? "out of memory" : kiln_status_message(j.st));
    stored_free(&l);
    graph_job_free(&j);
    return CLI_ERR;
  }
  printf("graph @%s: %d kernel%s, cache %s (%zu entr%s)\n", j.ir->name, j.nk, j.nk == 1 ? "" : "s",
         kc_disk_dir(d), l.n, l.n == 1 ? "y" : "ies");
  if (nbind)
    printf("%d generic and %d shape-specialized kernel%s (the --dim binding, exact buckets)\n",
           ngeneric, j.nk - ngeneric, j.nk - ngeneric == 1 ? "" : "s");
  else if (missing)
    printf("--dim: no value for symbolic dim '%s': only the generic kernels are explained\n",
           missing);
  int hits = 0;
  for (int i = 0; i < j.nk; i++) {
    bool hit = false;
    for (size_t e = 0; e < l.n && !hit; e++)
      hit = l.v[e].key.lo == j.k[i].key.lo && l.v[e].key.hi == j.k[i].key.hi;
    hits += hit;
    explain_one(&j.k[i], &l);
  }
  printf("%d hit%s, %d miss%s\n", hits, hits == 1 ? "" : "s", j.nk - hits,
         j.nk - hits == 1 ? "" : "es");
  if (o->runtime_off)
    printf("note: KILN_CACHE=%s: the runtime does not read this cache now\n", o->runtime_off_value);
  stored_free(&l);
  graph_job_free(&j);
  return CLI_OK;
}

/* ---- warm ---- */

typedef struct warm_sink {
  kc_disk *d;
  kr_remote *r; /* warm --remote: straight to the server instead of d */
  int failed;
  char why[512];
} warm_sink;

static void warm_put(void *ud, const kc_key *key, const rt_key_parts *parts, const void *obj,
                     size_t len) {
  warm_sink *w = ud;
  kc_component c[RT_KEY_NPARTS];
  for (int i = 0; i < RT_KEY_NPARTS; i++) {
    const char *v = rt_key_part(parts, i);
    c[i].name = rt_key_part_name(i);
    c[i].value = v ? v : "";
  }
  kiln_status *st = kiln_status_new();
  void *e = NULL;
  size_t elen = 0;
  int rc = !w->r ? kc_disk_put(w->d, *key, c, RT_KEY_NPARTS, obj, len, st)
           : kc_entry_encode(*key, c, RT_KEY_NPARTS, obj, len, &e, &elen, st) < 0
               ? -1
               : kr_remote_put_now(w->r, *key, e, elen, st);
  if (rc < 0 && !w->failed++) snprintf(w->why, sizeof w->why, "%s", kiln_status_message(st));
  free(e);
  kiln_status_free(st);
}

/* One graph of a warm: its job, kernels before --dim bindings, bindings made,
 * the symbol that had no --dim (or NULL). */
typedef struct warm_graph {
  graph_job j;
  int ngeneric, nbind;
  const char *missing;
} warm_graph;

/* Whether kernel k of graph wg[gi] has a key that an earlier kernel of this
 * warm already had (the same kernel in another node or graph). */
static bool warm_seen(const warm_graph *wg, int gi, int ki) {
  const kc_key key = wg[gi].j.k[ki].key;
  for (int g = 0; g <= gi; g++)
    for (int p = 0; p < (g < gi ? wg[g].j.nk : ki); p++)
      if (wg[g].j.k[p].key.lo == key.lo && wg[g].j.k[p].key.hi == key.hi) return true;
  return false;
}

/* Every --dim symbol is one of some graph's (warm over several graphs takes
 * each --dim where a graph has that symbol). 0 or CLI_ERR. */
static int warm_dims_used(const cache_opts *o, const warm_graph *wg, int n) {
  for (int i = 0; i < o->ndims; i++) {
    const char *v = o->dims[i], *eq = strchr(v, '=');
    bool found = false;
    for (int g = 0; g < n && !found; g++)
      for (int k = 0; k < wg[g].j.ir->nsyms && !found; k++)
        found = strlen(wg[g].j.ir->syms[k]) == (size_t)(eq - v) &&
                strncmp(wg[g].j.ir->syms[k], v, (size_t)(eq - v)) == 0;
    if (!found) {
      fprintf(stderr, "kiln cache warm: --dim %.*s: none of the %d graphs has a symbolic dim "
              "'%.*s'\n", (int)(eq - v), v, n, (int)(eq - v), v);
      return CLI_ERR;
    }
  }
  return 0;
}

/* The lines after a warm: per graph what --dim made of it. */
static void warm_graph_notes(const warm_graph *w, bool several) {
  const char *at = several ? w->j.ir->name : NULL;
  if (w->nbind)
    printf("%s%s%s%d generic and %d shape-specialized kernel%s (%d binding%s of --dim; exact "
           "buckets)\n",
           at ? "graph @" : "", at ? at : "", at ? ": " : "", w->ngeneric, w->j.nk - w->ngeneric,
           w->j.nk - w->ngeneric == 1 ? "" : "s", w->nbind, w->nbind == 1 ? "" : "s");
  else if (w->missing)
    printf("%s%s%s--dim: no value for symbolic dim '%s': only the generic kernels were warmed "
           "(specialized kernels need a value for every symbol)\n",
           at ? "graph @" : "", at ? at : "", at ? ": " : "", w->missing);
}

static int cmd_warm(const cache_opts *o, kc_disk *d) {
  kr_remote *remote = NULL;
  if (o->remote && !(remote = cli_remote_open(o, "warm"))) return CLI_ERR;
  if (!remote && kc_disk_read_only(d)) {
    fprintf(stderr, "kiln cache warm: cannot store kernels in %s: %s\n", kc_disk_dir(d),
            kc_disk_note(d));
    kr_remote_free(remote);
    return CLI_ERR;
  }
  int ng = o->npos, total = 0, rc = 0;
  bool several = ng > 1;
  warm_graph *wg = calloc((size_t)ng, sizeof *wg);
  if (!wg) {
    fprintf(stderr, "kiln cache warm: out of memory\n");
    rc = CLI_ERR;
  }
  for (int g = 0; rc == 0 && g < ng; g++) {
    warm_graph *w = &wg[g];
    rc = graph_job_init(&w->j, o, o->pos[g], true, "warm");
    w->ngeneric = w->j.nk;
    if (!rc) rc = check_target(o, &w->j);
    if (!rc) rc = add_bindings(&w->j, o, "warm", &w->nbind, &w->missing);
    total += w->j.nk;
  }
  if (!rc && several) rc = warm_dims_used(o, wg, ng);
  kc_disk_stats s0 = {0};
  if (!rc && !remote && kc_disk_stats_get(d, &s0, wg[0].j.st) < 0)
    rc = fail_st("warm", wg[0].j.st);
  if (rc) {
    for (int g = 0; wg && g < ng; g++) graph_job_free(&wg[g].j); /* zeroed ones too */
    free(wg);
    kr_remote_free(remote);
    return rc;
  }
  cli_progress bar; /* drawn on a terminal; plain lines otherwise (progress.h) */
  cli_progress_start(&bar, stdout, total);
  bool tty = bar.tty;
  warm_sink sink = {.d = d, .r = remote};
  int compiled = 0, present = 0, dup = 0, done = 0;
  double t0 = rt_now_ms();
  const char *where = remote ? kr_remote_describe(remote) : kc_disk_dir(d);
  if (several)
    printf("warming %s with %d graphs: %d kernel%s\n", where, ng, total, total == 1 ? "" : "s");
  for (int g = 0; g < ng && rc == 0; g++) {
    graph_job *j = &wg[g].j;
    if (several) printf("  graph @%s: %d kernel%s (generic", j->ir->name, j->nk,
                        j->nk == 1 ? "" : "s");
    else printf("warming %s with graph @%s: %d kernel%s (generic", where, j->ir->name, j->nk,
                j->nk == 1 ? "" : "s");
    if (wg[g].nbind) printf(" + %d binding%s of --dim", wg[g].nbind, wg[g].nbind == 1 ? "" : "s");
    printf(")\n");
    rt_cache_mem *mem = rt_context_cache(j->ctx);
    rt_cache_backing b = {&sink, NULL, warm_put};
    rt_cache_mem_set_backing(mem, &b);
    for (int i = 0; i < j->nk && rc == 0; i++, done++) {
      kernel_info *k = &j->k[i];
      cli_progress_at(&bar, done, k->desc);
      if (warm_seen(wg, g, i)) {
        dup++;
        if (!tty) printf("  %s: same kernel as an earlier node\n", k->desc);
        continue;
      }
      void *payload = NULL;
      size_t len = 0;
      int got;
      if (remote) { /* present on the server: trusted to be checked by its readers */
        got = kr_remote_exists(remote, k->key, j->st);
        got = got < 0 ? KC_DISK_ERROR : got == 1 ? KC_DISK_HIT : KC_DISK_MISS;
      } else {
        got = kc_disk_get(d, k->key, &payload, &len, j->st); /* checks it in full */
      }
      free(payload);
      if (got == KC_DISK_ERROR) {
        rc = fail_st("warm", j->st);
        break;
      }
      if (got == KC_DISK_HIT) {
        present++;
        if (!tty) printf("  %s: already in the cache\n", k->desc);
        continue;
      }
      double c0 = rt_now_ms();
      rt_kentry *e = NULL;
      jit_kernel_fn fn = NULL;
      char err[1024] = "";
      if (rt_cache_mem_get(mem, k->text, &e, &fn, err, sizeof err) < 0) {
        cli_progress_clear(&bar);
        fprintf(stderr, "kiln cache warm: graph @%s, %s: %s\n", j->ir->name, k->desc, err);
        rc = CLI_ERR;
        break;
      }
      rt_cache_mem_release(mem, e);
      compiled++;
      if (!tty) printf("  %s: compiled in %.1f ms\n", k->desc, rt_now_ms() - c0);
    }
    rt_cache_mem_set_backing(mem, NULL);
  }
  if (rc == 0) cli_progress_end(&bar);
  else cli_progress_clear(&bar);
  kc_disk_stats s1 = {0};
  if (rc == 0 && !remote && kc_disk_stats_get(d, &s1, wg[0].j.st) < 0)
    rc = fail_st("warm", wg[0].j.st);
  if (rc == 0) {
    printf("%d kernel%s: %d compiled and stored, %d already present", total,
           total == 1 ? "" : "s", compiled, present);
    if (dup) printf(", %d shared with another node", dup);
    printf(" (%.0f ms)\n", rt_now_ms() - t0);
    for (int g = 0; g < ng; g++) warm_graph_notes(&wg[g], several);
    if (s1.too_big > s0.too_big)
      printf("warning: %llu kernel%s larger than the cache bound (%llu bytes) and not stored\n",
             (unsigned long long)(s1.too_big - s0.too_big),
             s1.too_big - s0.too_big == 1 ? " is" : "s are", (unsigned long long)s1.max_bytes);
    if (o->runtime_off && !remote)
      printf("note: KILN_CACHE=%s: the runtime does not read this cache until it is unset\n",
             o->runtime_off_value);
    if (sink.failed) {
      fprintf(stderr, "kiln cache warm: %d kernel%s could not be stored: %s\n", sink.failed,
              sink.failed == 1 ? "" : "s", sink.why);
      rc = CLI_ERR;
    }
  }
  for (int g = 0; g < ng; g++) graph_job_free(&wg[g].j);
  free(wg);
  kr_remote_free(remote);
  return rc;
}

/* ---- dispatch ---- */

typedef struct subcmd {
  const char *name;
  int (*fn)(const cache_opts *, kc_disk *);
  int min_pos, max_pos;
  bool max_bytes, dims;
} subcmd;

static const subcmd SUBCMDS[] = {
    {"ls", cmd_ls, 0, 0, false, false},          {"stats", cmd_stats, 0, 0, false, false},
    {"clear", cmd_clear, 0, 0, false, false},    {"prune", cmd_prune, 0, 0, true, false},
    {"verify", cmd_verify, 0, 0, false, false},  {"explain", cmd_explain, 1, 1, false, true},
    {"warm", cmd_warm, 1, 4096, false, true},    {"export", cli_cache_export, 1, 1, false, false},
    {"import", cli_cache_import, 1, 1, false, false},
    {"push", cli_cache_push, 0, 0, false, false},  {"pull", cli_cache_pull, 0, 0, false, false},
    {"keygen", NULL, 2, 2, false, false},
};

static int usage_err(const char *fmt, const char *a) {
  fprintf(stderr, "kiln cache: ");
  fprintf(stderr, fmt, a);
  fprintf(stderr, "\n\n");
  cli_usage_cache(stderr);
  return CLI_USAGE;
}

int cli_cache(int argc, char **argv) {
  if (argc < 2) return usage_err("%s", "no subcommand given");
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    cli_usage_cache(stdout);
    return CLI_OK;
  }
  const subcmd *sc = NULL;
  for (size_t i = 0; i < sizeof SUBCMDS / sizeof *SUBCMDS; i++)
    if (strcmp(argv[1], SUBCMDS[i].name) == 0) sc = &SUBCMDS[i];
  if (!sc) return usage_err("unknown subcommand '%s'", argv[1]);
  cache_opts o = {.sub = sc->name};
  const char *off = getenv("KILN_CACHE");
  o.runtime_off = env_is_off(off);
  o.runtime_off_value = off;
  o.pos = calloc((size_t)argc, sizeof *o.pos);
  o.dims = calloc((size_t)argc, sizeof *o.dims);
  o.kernels = calloc((size_t)argc, sizeof *o.kernels);
  o.trust_keys = calloc((size_t)argc, sizeof *o.trust_keys);
  int rc = CLI_OK;
  if (!o.pos || !o.dims || !o.kernels || !o.trust_keys) {
    fprintf(stderr, "kiln cache: out of memory\n");
    rc = CLI_ERR;
  }
  for (int i = 2; rc == CLI_OK && i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    const char *opts[] = {"--dir",  "--max-bytes", "--dim",      "--target",
                          "--kernels", "--sign",   "--trust-key", "--sample"};
    int which = -1;
    if (!strcmp(a, "--trust-unsigned") && !strcmp(sc->name, "import")) {
      o.trust_unsigned = true;
      continue;
    }
    if (!strcmp(a, "--recompile") && !strcmp(sc->name, "verify")) {
      o.recompile = true;
      continue;
    }
    if ((!strcmp(a, "--remote") || !strncmp(a, "--remote=", 9)) &&
        (!strcmp(sc->name, "ls") || !strcmp(sc->name, "stats") || !strcmp(sc->name, "warm") ||
         !strcmp(sc->name, "push") || !strcmp(sc->name, "pull"))) {
      o.remote = true;
      if (a[8] == '=') o.remote_url = a + 9;
      continue;
    }
    for (int k = 0; k < 8 && which < 0; k++) {
      size_t n = strlen(opts[k]);
      if (strncmp(a, opts[k], n) == 0 && (a[n] == 0 || a[n] == '=')) {
        which = k;
        if (a[n] == '=') val = a + n + 1;
        else if (i + 1 < argc) val = argv[++i];
        else rc = usage_err("%s needs a value", opts[k]);
      }
    }
    if (rc != CLI_OK) break;
    if (which == 0) o.dir = val;
    else if (which == 1 && sc->max_bytes) o.max_bytes = val;
    else if (which == 2 && sc->dims) o.dims[o.ndims++] = val;
    else if (which == 3 && strcmp(sc->name, "warm") == 0) o.target = val;
    else if (which == 4 && sc->dims) o.kernels[o.nkernels++] = val; /* the graph commands */
    else if (which == 5 && !strcmp(sc->name, "export")) o.sign = val;
    else if (which == 6 && !strcmp(sc->name, "import")) o.trust_keys[o.ntrust_keys++] = val;
    else if (which == 7 && !strcmp(sc->name, "verify")) o.sample = val;
    else if (which >= 0) {
      fprintf(stderr, "kiln cache %s: %s is not an option of this subcommand\n\n", sc->name,
              opts[which]);
      cli_usage_cache(stderr);
      rc = CLI_USAGE;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      cli_usage_cache(stdout);
      free(o.trust_keys);
      free(o.pos);
      free(o.dims);
      free(o.kernels);
      return CLI_OK;
    } else if (a[0] == '-' && a[1] != 0) {
      fprintf(stderr, "kiln cache %s: unknown option '%s'\n\n", sc->name, a);
      cli_usage_cache(stderr);
      rc = CLI_USAGE;
    } else {
      o.pos[o.npos++] = a;
    }
  }
  if (rc == CLI_OK && (o.npos < sc->min_pos || o.npos > sc->max_pos)) {
    fprintf(stderr, "kiln cache %s: expected %s\n\n", sc->name,
            sc->max_pos == 0 ? "no arguments"
            : strcmp(sc->name, "export") == 0 || strcmp(sc->name, "import") == 0 ? "one FILE"
            : strcmp(sc->name, "keygen") == 0 ? "SECRET_KEY_FILE PUBLIC_KEY_FILE"
                                              : "one GRAPH.mlir");
    cli_usage_cache(stderr);
    rc = CLI_USAGE;
  }
  if (rc == CLI_OK && o.dir && !*o.dir) rc = usage_err("%s", "--dir needs a directory");
  if (rc == CLI_OK && o.sample && !o.recompile)
    rc = usage_err("%s", "--sample N goes with verify --recompile");
  if (rc == CLI_OK && !sc->fn) { /* keygen: no store */
    rc = cli_cache_keygen(&o);
    goto done;
  }
  if (rc == CLI_OK && o.remote && (!strcmp(sc->name, "ls") || !strcmp(sc->name, "stats"))) {
    rc = !strcmp(sc->name, "ls") ? cli_cache_ls_remote(&o) : cli_cache_stats_remote(&o);
    goto done;
  }
  if (rc == CLI_OK && o.remote && !strcmp(sc->name, "warm")) { /* no local store */
    rc = cmd_warm(&o, NULL);
    goto done;
  }
  if (rc == CLI_OK && !strcmp(sc->name, "stats") && !stats_store_ok(&o)) {
    rc = CLI_ERR;
    goto done;
  }
  /* Only the commands that store entries may create a --dir that is not
   * there: a typo in `kiln cache ls --dir` must not leave a new directory. */
  bool stores = strcmp(sc->name, "warm") == 0 || strcmp(sc->name, "import") == 0 ||
                strcmp(sc->name, "pull") == 0;
  struct stat sb;
  if (rc == CLI_OK && o.dir && !stores && stat(o.dir, &sb) != 0) {
    fprintf(stderr, "kiln cache %s: no cache directory at %s\n", sc->name, o.dir);
    rc = CLI_ERR;
  }
  kc_disk *d = rc == CLI_OK ? open_store(&o) : NULL;
  if (rc == CLI_OK) rc = d ? sc->fn(&o, d) : CLI_ERR;
  kc_disk_close(d);
done:
  free(o.trust_keys);
  free(o.pos);
  free(o.dims);
  free(o.kernels);
  return rc;
}
