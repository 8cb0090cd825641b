/* compile.c - `kiln compile GRAPH.mlir --target T [--emit KIND] [-o FILE]
 * [--dim SYM=V ...]`: show what kiln generates for a graph.
 *
 * The graph is prepared as kiln run prepares it (pipeline.c: custom kernels
 * bound, transposes folded, fused, prepacked operands marked), so the
 * kernels shown are the ones kiln run runs: on the host each is named by
 * its cache key (kiln_k_<hex>, as `kiln cache ls` lists it) and its object
 * is the one the kernel cache stores (a symbolic GEMM calls the prebuilt
 * one, as at run time).
 * Targets: host (the CPU JIT's kernels), sm_80 / sm_90 (PTX), gfx90a /
 * gfx942 (AMDGPU), simt-emu (the SIMT kernels as host code). Kinds: ptx,
 * hsaco (a linked AMDGPU code object), obj (an object file: the AMDGPU
 * relocatable object, the simt-emu object, or for host one object per
 * kernel, FILE-kiln_k_<hex>.o), llvm (optimized LLVM IR text). --dim binds
 * symbols (some or all), giving the shape-specialized kernels. --kernels
 * adds kernel libraries for the graph's custom ops (SIMT targets: the
 * kernels must be KILN_SIMT_KERNELs). Text goes to
 * stdout without -o; binary kinds need -o. Exit 0, 1 on an error in the
 * input or the compile, 2 on a usage error. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu_link.h"
#include "../../ir/parse.h"
#include "../pipeline.h"
#include "../simt_mathlib.h"
#include "cli.h"
#include "cli_dot.h"

typedef struct compile_opts {
  const char *graph, *target, *emit, *out;
  const char *dot; /* --dot FILE: the graph before and after fusion (dot.c) */
  char **dim_names;
  int64_t *dim_values;
  int ndims;
  const char **kernels; /* --kernels FILE (SIMT targets: custom ops' libraries) */
  int nkernels;
} compile_opts;

void cli_usage_compile(FILE *out) {
  fprintf(out,
          "usage: kiln compile GRAPH.mlir [--target T] [--emit KIND] [-o FILE] [--dim SYM=V ...]\n"
          "\n"
          "Prints or writes the code kiln generates for every kernel of a graph.\n"
          "  --target T    host (default), sm_80, sm_90, gfx90a, gfx942, simt-emu\n"
          "  --emit KIND   ptx (sm_*), hsaco (gfx*), obj, llvm; default: ptx for sm_*,\n"
          "                hsaco for gfx*, llvm for host and simt-emu\n"
          "  -o FILE       where to write (default stdout; binary kinds need a file;\n"
          "                obj for host writes one FILE-<kernel>.o per kernel)\n"
          "  --dim SYM=V   bind a symbolic dim: specialized kernels (repeatable)\n"
          "  --dot FILE    also write the graph before and after fusion as Graphviz DOT\n"
          "                (fused groups as clusters, shapes on edges)\n"
          "  --kernels FILE  a kernel library (.c, .ll, .bc) for the graph's custom ops\n"
          "                (KILN_SIMT_KERNELs; SIMT targets only; repeatable)\n");
}

static int usage_err(const char *fmt, const char *arg) {
  fprintf(stderr, "kiln compile: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n");
  cli_usage_compile(stderr);
  return CLI_USAGE;
}

static int parse_opts(int argc, char **argv, compile_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = strcmp(a, "--target") == 0 ? &o->target
                        : strcmp(a, "--emit") == 0 ? &o->emit
                        : strcmp(a, "-o") == 0     ? &o->out
                        : strcmp(a, "--dot") == 0  ? &o->dot
                                                   : NULL;
    if (slot) {
      if (i + 1 >= argc) return usage_err("%s needs a value", a);
      *slot = argv[++i];
    } else if (strcmp(a, "--dim") == 0) {
      if (i + 1 >= argc) return usage_err("%s needs SYM=VALUE", a);
      const char *v = argv[++i], *eq = strchr(v, '=');
      char *end = NULL;
      errno = 0;
      long long val = eq ? strtoll(eq + 1, &end, 10) : -1;
      if (!eq || eq == v || !end || *end || errno || val < 0)
        return usage_err("--dim expects SYM=VALUE with VALUE >= 0, got '%s'", v);
      char **nn = realloc(o->dim_names, sizeof *nn * (size_t)(o->ndims + 1));
      if (nn) o->dim_names = nn;
      int64_t *nv = realloc(o->dim_values, sizeof *nv * (size_t)(o->ndims + 1));
      if (nv) o->dim_values = nv;
      if (!nn || !nv || !(o->dim_names[o->ndims] = strndup(v, (size_t)(eq - v)))) {
        fprintf(stderr, "kiln compile: out of memory\n");
        return CLI_ERR;
      }
      o->dim_values[o->ndims++] = val;
    } else if (strcmp(a, "--kernels") == 0) {
      if (i + 1 >= argc) return usage_err("%s needs a file", a);
      const char **nk = realloc(o->kernels, sizeof *nk * (size_t)(o->nkernels + 1));
      if (!nk) {
        fprintf(stderr, "kiln compile: out of memory\n");
        return CLI_ERR;
      }
      o->kernels = nk;
      o->kernels[o->nkernels++] = argv[++i];
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      cli_usage_compile(stdout);
      return -1;
    } else if (a[0] == '-' && a[1]) {
      return usage_err("unknown option '%s'", a);
    } else if (o->graph) {
      return usage_err("one graph at a time (got a second: '%s')", a);
    } else {
      o->graph = a;
    }
  }
  if (!o->graph) return usage_err("%s", "no graph given");
  return CLI_OK;
}

static int write_out(const char *path, const void *data, size_t len, bool binary) {
  if (!path) {
    if (binary) {
      fprintf(stderr, "kiln compile: binary output needs -o FILE\n");
      return CLI_USAGE;
    }
    fwrite(data, 1, len, stdout);
    return CLI_OK;
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
    fprintf(stderr, "kiln compile: cannot write %s: %s\n", path, strerror(errno));
    if (f) fclose(f);
    return CLI_ERR;
  }
  return CLI_OK;
}

/* The binding of --dim: values and which symbols are bound. */
static int bind_dims(const ir_graph *g, const compile_opts *o, int64_t *syms, bool *bind) {
  for (int k = 0; k < o->ndims; k++) {
    int s = -1;
    for (int j = 0; j < g->nsyms; j++)
      if (g->syms[j] && strcmp(g->syms[j], o->dim_names[k]) == 0) s = j;
    if (s < 0) {
      fprintf(stderr, "kiln compile: --dim %s: graph @%s has no symbol '%s'\n", o->dim_names[k],
              g->name ? g->name : "?", o->dim_names[k]);
      return CLI_ERR;
    }
    syms[s] = o->dim_values[k];
    bind[s] = true;
  }
  return CLI_OK;
}

/* Append a kernel's header line and text to *all. */
static int append(char **all, size_t *alllen, const char *head, const char *text) {
  size_t hn = strlen(head), tn = strlen(text);
  char *grown = realloc(*all, *alllen + hn + tn + 2);
  if (!grown) return CLI_ERR;
  *all = grown;
  memcpy(grown + *alllen, head, hn);
  memcpy(grown + *alllen + hn, text, tn);
  *alllen += hn + tn;
  grown[(*alllen)++] = '\n';
  return CLI_OK;
}

/* host: the kernels kiln run runs (pipeline.c): every kernel node of the
 * prepared graph g under the --dim binding, named by its cache key, through
 * the context's JIT (jit_node_llvm_ir / jit_compile_object). */
static int compile_host(kiln_context *ctx, const ir_graph *g, const compile_opts *o,
                        const int64_t *syms, const bool *bind, bool obj) {
  char err[2048] = "";
  int rc = CLI_OK;
  char *all = NULL;
  size_t alllen = 0;
  kiln_status *st = kiln_status_new();
  rt_target t;
  rt_target_host(&t, ctx);
  rt_binding b = {syms, bind};
  for (int i = 0; rc == CLI_OK && i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    if (!rt_pipeline_has_kernel(g, n)) continue;
    char desc[256];
    rt_pipeline_node_desc(g, i, desc, sizeof desc);
    bool bound = o->ndims && rt_pipeline_host_specializes(g, i); /* a GEMM stays generic */
    char *text = rt_pipeline_kernel_text(g, i, bound ? &b : NULL, NULL, NULL, st);
    if (!text) {
      fprintf(stderr, "kiln compile: %s\n", kiln_status_message(st));
      rc = CLI_ERR;
      break;
    }
    rt_key_parts parts;
    kc_key key;
    char name[48];
    rt_pipeline_host_key(&t, text, &parts, &key);
    rt_pipeline_host_fn_name(&key, name);
    ir_diag d = {0};
    ir_graph *kg = ir_parse_kernel_text(text, strlen(text), &d);
    free(text);
    if (!kg || ir_graph_verify(kg, &d) < 0) {
      fprintf(stderr, "kiln compile: %s: %s\n", desc, d.msg);
      ir_graph_free(kg);
      rc = CLI_ERR;
      break;
    }
    if (obj) {
      void *bytes = NULL;
      size_t len = 0;
      if (jit_compile_object(ctx->jit, kg, name, &bytes, &len, err, sizeof err) < 0) {
        fprintf(stderr, "kiln compile: %s: %s\n", desc, err);
        rc = CLI_ERR;
      } else {
        char path[1024];
        snprintf(path, sizeof path, "%s-%s.o", o->out, name);
        rc = write_out(path, bytes, len, true);
        if (rc == CLI_OK) printf("%s\n", path);
      }
      free(bytes);
    } else {
      int kn = 0;
      while (kn < kg->nnodes && ir_node_is_source(kg->nodes[kn])) kn++;
      char *ir = jit_node_llvm_ir(ctx->jit, kg, kn, err, sizeof err);
      if (!ir) {
        fprintf(stderr, "kiln compile: %s: %s\n", desc, err);
        rc = CLI_ERR;
      } else {
        char head[400];
        snprintf(head, sizeof head, "; ---- kernel %s: %s, line %d ----\n", name, desc,
                 n->loc.line);
        rc = append(&all, &alllen, head, ir);
        free(ir);
      }
    }
    ir_graph_free(kg);
  }
  if (rc == CLI_OK && !obj) rc = write_out(o->out, all, alllen, false);
  free(all);
  kiln_status_free(st);
  return rc;
}

int cli_compile(int argc, char **argv) {
  compile_opts o = {0};
  int rc = parse_opts(argc, argv, &o);
  kiln_status *st = kiln_status_new();
  kiln_graph *kg = NULL;
  kiln_context *ctx = NULL;
  ir_graph *bound = NULL;
  int64_t *syms = NULL;
  bool *bind = NULL;
  void *code = NULL, *linked = NULL;
  if (rc != CLI_OK) goto done;
  if (!st) {
    rc = CLI_ERR;
    goto done;
  }
  const char *tname = o.target ? o.target : "host";
  bool host = strcmp(tname, "host") == 0;
  jit_simt_target t = {0};
  char err[4096] = "";
  if (!host && jit_simt_target_parse(tname, &t, err, sizeof err) < 0) {
    rc = usage_err("%s", err);
    goto done;
  }
  const char *emit = o.emit ? o.emit
                     : host || t.kind == JIT_SIMT_EMU ? "llvm"
                     : t.kind == JIT_SIMT_NVPTX       ? "ptx"
                                                      : "hsaco";
  bool ok_kind = strcmp(emit, "llvm") == 0 || strcmp(emit, "obj") == 0 ||
                 (strcmp(emit, "ptx") == 0 && !host && t.kind == JIT_SIMT_NVPTX) ||
                 (strcmp(emit, "hsaco") == 0 && !host && t.kind == JIT_SIMT_AMDGPU);
  if (!ok_kind || (strcmp(emit, "obj") == 0 && !host && t.kind == JIT_SIMT_NVPTX)) {
    fprintf(stderr, "kiln compile: --emit %s is not a kind for target %s (%s)\n", emit, tname,
            host ? "llvm or obj"
            : t.kind == JIT_SIMT_NVPTX ? "ptx or llvm"
            : t.kind == JIT_SIMT_AMDGPU ? "hsaco, obj or llvm"
                                        : "obj or llvm");
    rc = CLI_USAGE;
    goto done;
  }
  if (!host && !o.out && (strcmp(emit, "obj") == 0 || strcmp(emit, "hsaco") == 0)) {
    fprintf(stderr, "kiln compile: binary output needs -o FILE\n");
    rc = CLI_USAGE;
    goto done;
  }
  if (host && strcmp(emit, "obj") == 0 && !o.out) {
    fprintf(stderr, "kiln compile: --emit obj for host writes FILE-<kernel>.o: give -o FILE\n");
    rc = CLI_USAGE;
    goto done;
  }
  if (strcmp(o.graph, "-") == 0) {
    fprintf(stderr, "kiln compile: reading the graph from stdin is not supported; give a file\n");
    rc = CLI_USAGE;
    goto done;
  }
  kg = kiln_graph_load(o.graph, st);
  if (!kg || kiln_graph_verify(kg, st) < 0 || (o.dot && cli_write_dot(o.dot, kg, st) < 0)) {
    fprintf(stderr, "%s\n", kiln_status_message(st));
    rc = CLI_ERR;
    goto done;
  }
  /* the runtime's target, options and kernel libraries; nothing stored */
  setenv("KILN_CACHE", "off", 1);
  if (!(ctx = kiln_context_new(st)) || !(bound = ir_graph_clone(kg->ir))) {
    fprintf(stderr, "kiln compile: %s\n", ctx ? "out of memory" : kiln_status_message(st));
    rc = CLI_ERR;
    goto done;
  }
  if (o.nkernels && host) {
    fprintf(stderr, "kiln compile: --kernels is for SIMT targets (sm_*, gfx*, simt-emu)\n");
    rc = CLI_USAGE;
    goto done;
  }
  for (int i = 0; i < o.nkernels; i++)
    if (kiln_context_add_kernel_library(ctx, o.kernels[i], st) < 0) break;
  rt_target rtt;
  if (host) rt_target_host(&rtt, ctx);
  else if (rt_target_simt(&rtt, ctx, tname, tname, st) < 0) {
    fprintf(stderr, "kiln compile: %s\n", kiln_status_message(st));
    rc = CLI_ERR;
    goto done;
  }
  /* the graph as kiln run prepares it: custom kernels bound, transposes
   * folded, fused */
  if (kiln_status_code(st) != KILN_OK || rt_pipeline_prepare(bound, &rtt, o.graph, st) < 0) {
    fprintf(stderr, "kiln compile: %s\n", kiln_status_message(st));
    rc = CLI_ERR;
    goto done;
  }
  const ir_graph *g = bound;
  syms = calloc((size_t)g->nsyms + 1, sizeof *syms);
  bind = calloc((size_t)g->nsyms + 1, sizeof *bind);
  if (!syms || !bind) {
    rc = CLI_ERR;
    goto done;
  }
  if ((rc = bind_dims(g, &o, syms, bind)) != CLI_OK) goto done;
  if (host) {
    rc = compile_host(ctx, g, &o, syms, bind, strcmp(emit, "obj") == 0);
    goto done;
  }
  size_t len = 0;
  bool llvm = strcmp(emit, "llvm") == 0;
  t.math = &rt_simt_math; /* the device math library (src/simt_mathlib.c) */
  if (jit_simt_compile_graph_libs(g, &t, o.ndims ? syms : NULL, o.ndims ? bind : NULL, -1, llvm,
                                  rtt.has_libs ? &rtt.libs : NULL, &code, &len, err, sizeof err) < 0) {
    fprintf(stderr, "kiln compile: %s: %s\n", o.graph, err);
    rc = CLI_ERR;
    goto done;
  }
  if (strcmp(emit, "hsaco") == 0) {
    size_t llen = 0;
    if (rt_link_amdgpu(code, len, &linked, &llen, st) < 0) {
      fprintf(stderr, "kiln compile: %s\n", kiln_status_message(st));
      rc = CLI_ERR;
      goto done;
    }
    rc = write_out(o.out, linked, llen, true);
  } else {
    bool text = llvm || strcmp(emit, "ptx") == 0;
    rc = write_out(o.out, code, text && len && !llvm ? len - 1 : len, !text);
  }
done:
  free(code);
  free(linked);
  free(syms);
  free(bind);
  ir_graph_free(bound);
  kiln_context_free(ctx);
  kiln_graph_free(kg);
  kiln_status_free(st);
  free(o.kernels);
  for (int i = 0; i < o.ndims; i++) free(o.dim_names[i]);
  free(o.dim_names);
  free(o.dim_values);
  return rc < 0 ? CLI_OK : rc;
}
