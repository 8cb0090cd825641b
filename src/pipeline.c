/* pipeline.c - prepare a graph for a target; name, key and compile the
 * kernel of node i under a binding (pipeline.h). The one place these steps
 * are written: the CPU model, variants, device models and the CLI call here.
 *
 * Prepare, in order (each pass says what it requires in its own header):
 *   ir_graph_verify -> custom kernels bound (kernel_lib.c; before fusion,
 *   which takes elementwise custom kernels into chains) ->
 *   ir_graph_fold_transpose_b -> ir_graph_fuse (unless KILN_FUSE=0; softmax
 *   prologues and slices read in place by GEMMs for the host only) ->
 *   rt_prepack_mark (host: matmuls that read a constant B; last, since it
 *   changes those matmuls' kernel texts).
 * Compile node i: its canonical kernel text under the binding
 * (ir_kernel_text, _bound or _partial), then for the host the context's
 * memory cache (which reads and fills the disk and remote caches), for SIMT
 * the disk cache, then the remote cache, under a code key, else
 * jit_simt_compile_node (and ld.lld for AMDGPU). A device kernel's steps
 * (disk read, compile, link, disk write) are trace spans and log lines of
 * the target context, named as the host's are (cache_mem.c). */
#include "pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "buffers.h"
#include "cache_backing.h"
#include "ir/control.h"
#include "gpu_link.h"
#include "kernel_lib.h"
#include "obs_label.h"
#include "plan.h"
#include "prepack.h"
#include "simt_mathlib.h"

/* ---- targets ---- */

void rt_target_host(rt_target *t, kiln_context *ctx) {
  memset(t, 0, sizeof *t);
  t->kind = RT_TARGET_HOST;
  t->ctx = ctx;
  snprintf(t->label, sizeof t->label, "host");
}

/* t->math_id: the device math library t's kernels link (path, size and
 * time), part of their code keys. */
static void math_identity(rt_target *t) {
  char lbuf[1024];
  const char *lib = rt_simt_mathlib_path(&t->simt, lbuf, sizeof lbuf);
  struct stat sb;
  if (!lib) snprintf(t->math_id, sizeof t->math_id, "math=host");
  else if (stat(lib, &sb) == 0)
    snprintf(t->math_id, sizeof t->math_id, "math=%s:%lld:%lld.%09ld%s", lib,
             (long long)sb.st_size, (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec,
             t->simt.kind == JIT_SIMT_AMDGPU ? " linked=ld.lld" : "");
  else
    snprintf(t->math_id, sizeof t->math_id, "math=%s:absent", lib);
}

int rt_target_simt(rt_target *t, kiln_context *ctx, const char *simt_name, const char *label,
                   kiln_status *st) {
  memset(t, 0, sizeof *t);
  t->kind = RT_TARGET_SIMT;
  t->ctx = ctx;
  snprintf(t->label, sizeof t->label, "%s", label ? label : simt_name);
  char err[256];
  if (!simt_name || jit_simt_target_parse(simt_name, &t->simt, err, sizeof err) < 0)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: no SIMT target", t->label);
  if (ctx && ctx->disk) math_identity(t); /* only code keys read it */
  return 0;
}

/* ---- prepare ---- */

static bool fusion_enabled(void) {
  const char *v = getenv("KILN_FUSE");
  return !(v && (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no") ||
                 !strcasecmp(v, "false")));
}

/* The passes after binding; prepack only for the host. */
static int passes(ir_graph *g, const kiln_context *ctx, bool host, const char *filename,
                  kiln_status *st) {
  ir_diag d = {0};
  /* ops on narrow dtypes computed wider between casts (widen_narrow.c) */
  if (ir_graph_widen_narrow(g, &d) < 0) return rt_err_diag(st, KILN_ERR_UNSUPPORTED, filename, &d);
  /* host GEMMs read f16 / bf16 operands as they are, not through casts to
   * f32, where the host has the half GEMM's native kernel (half_gemm.c;
   * before the transposes fold, so one under a cast does) */
  unsigned halves = 0;
  if (host && ctx && jit_engine_half_gemm(ctx->jit, IR_DT_F16)) halves |= IR_HALF_GEMM_F16;
  if (host && ctx && jit_engine_half_gemm(ctx->jit, IR_DT_BF16)) halves |= IR_HALF_GEMM_BF16;
  if (halves && ir_graph_half_gemm(g, halves, &d) < 0)
    return rt_err_diag(st, KILN_ERR_OUT_OF_MEMORY, filename, &d);
  /* matmul(a, transpose(b)): b read in its own layout (fold_transpose.c) */
  if (ir_graph_fold_transpose_b(g, &d) < 0)
    return rt_err_diag(st, KILN_ERR_OUT_OF_MEMORY, filename, &d);
  /* softmax prologues and slices read in place by a GEMM only for the
   * host: the SIMT lowering has neither */
  unsigned fuse = host ? IR_FUSE_SOFTMAX | IR_FUSE_SLICE_OPERANDS : 0;
  if (fusion_enabled() && ir_graph_fuse(g, fuse, &d) < 0)
    return rt_err_diag(st, KILN_ERR_OUT_OF_MEMORY, filename, &d);
  /* a group the SIMT lowering cannot take is an error naming its ops
   * (jit/simt_fused.c lowers the elementwise chains and GEMM epilogues
   * ir_graph_fuse makes for it) */
  for (int i = 0; !host && i < g->nnodes; i++) {
    char why[512];
    if (g->nodes[i]->body && jit_simt_check_node(g->nodes[i], why, sizeof why) < 0) {
      char desc[256];
      return rt_err(st, KILN_ERR_UNSUPPORTED, "%s: %s",
                    rt_pipeline_node_desc(g, i, desc, sizeof desc), why);
    }
  }
  /* constant GEMM operands packed once (prepack.c): the matmuls that read
   * them are marked before any kernel text is made (their keys differ) */
  return host && rt_prepack_mark(g, ctx, st) < 0 ? -1 : 0;
}

int rt_pipeline_prepare_libs(ir_graph *g, const kiln_context *ctx, rt_kernel_libs *libs,
                             const char *filename, kiln_status *st) {
  ir_diag d = {0};
  if (ir_graph_verify(g, &d) < 0) return rt_err_diag(st, KILN_ERR_VERIFY, filename, &d);
  if (libs && rt_kernel_libs_bind(libs, g, st) < 0) return -1;
  return passes(g, ctx, true, filename, st);
}

/* SIMT custom ops: bound to the context's libraries built for t (none
 * without a context: an error naming the way to give them). */
static int bind_simt(ir_graph *g, rt_target *t, kiln_status *st) {
  const ir_node *first = NULL;
  for (int i = 0; i < g->nnodes && !first; i++)
    if (ir_op_get(g->nodes[i]->op)->cls == IR_CLS_CUSTOM) first = g->nodes[i];
  if (!first) return 0;
  if (!t->ctx)
    return rt_err(st, KILN_ERR_NOT_FOUND,
                  "mo.%s (kernel \"%s\") on %s needs the context's kernel libraries: compile "
                  "the graph with kiln_model_compile_on and a context (kiln run --device ... --kernels "
                  "FILE)", ir_op_get(first->op)->name, ir_node_attr_string(first, "symbol", "?"),
                  t->label);
  rt_lib_target lt = t->simt.kind == JIT_SIMT_NVPTX    ? RT_LIB_NVPTX
                     : t->simt.kind == JIT_SIMT_AMDGPU ? RT_LIB_AMDGPU
                                                       : RT_LIB_EMU;
  rt_lib_dirs dirs;
  rt_context_lib_dirs(t->ctx, &dirs);
  int rc = rt_kernel_libs_bind_simt(t->ctx->libs, g, lt, &dirs, &t->libs, st);
  rt_lib_dirs_done(&dirs);
  if (rc < 0) return -1;
  t->has_libs = true;
  return 0;
}

static int prepare(ir_graph *g, rt_target *t, const char *filename, kiln_status *st) {
  if (t->kind == RT_TARGET_HOST)
    return rt_pipeline_prepare_libs(g, t->ctx, t->ctx ? t->ctx->libs : NULL, filename, st);
  ir_diag d = {0};
  if (ir_graph_verify(g, &d) < 0) return rt_err_diag(st, KILN_ERR_VERIFY, filename, &d);
  if (bind_simt(g, t, st) < 0) return -1;
  return passes(g, t->ctx, false, filename, st);
}

int rt_pipeline_prepare(ir_graph *g, rt_target *t, const char *filename, kiln_status *st) {
  rt_trace *tr = t->ctx ? t->ctx->trace : NULL;
  int64_t t0 = rt_trace_on(tr) ? rt_now_ns() : 0;
  int rc = prepare(g, t, filename, st);
  if (rt_trace_on(tr)) {
    char name[160], esc[128], a[200];
    snprintf(name, sizeof name, "prepare @%s", g->name ? g->name : "?");
    snprintf(a, sizeof a, "\"target\":\"%s\",\"nodes\":%d",
             rt_trace_escape(t->label, esc, sizeof esc), g->nnodes);
    rt_trace_span(tr, "compile", name, t0, rt_now_ns(), a);
  }
  return rc;
}

/* ---- node i ---- */

bool rt_pipeline_host_specializes(const ir_graph *g, int i) {
  const ir_node *mm = ir_node_matmul(g->nodes[i]);
  return !(mm && (mm->out[0]->type.dtype == IR_DT_F32 || mm->out[0]->type.dtype == IR_DT_F64));
}

bool rt_pipeline_has_kernel(const ir_graph *g, const ir_node *n) {
  return !ir_node_is_source(n) && !rt_node_is_alias(g, n) && !rt_node_is_buffer_op(n);
}

const char *rt_pipeline_node_desc(const ir_graph *g, int i, char *buf, size_t cap) {
  const ir_node *n = g->nodes[i];
  int k = snprintf(buf, cap, "graph @%s, node %d (", g->name ? g->name : "?", i);
  if (!n->body) {
    k += snprintf(buf + k, (size_t)k < cap ? cap - (size_t)k : 0, "mo.%s", ir_op_get(n->op)->name);
  } else {
    for (int j = 0; j < n->body->nnodes && (size_t)k < cap; j++)
      k += snprintf(buf + k, cap - (size_t)k, "%smo.%s", j ? "+" : "",
                    ir_op_get(n->body->nodes[j]->op)->name);
  }
  if ((size_t)k < cap)
    snprintf(buf + k, cap - (size_t)k, " -> %%%s)", n->nout > 0 ? n->out[0]->name : "?");
  return buf;
}

char *rt_pipeline_kernel_text(const ir_graph *g, int i, const rt_binding *b, int *map, int *nks,
                              kiln_status *st) {
  const ir_node *n = g->nodes[i];
  char desc[256];
  int k = 0;
  bool all = true;
  if (ir_node_is_control(n)) { /* src/control.c compiles its regions as models */
    rt_err(st, KILN_ERR_UNSUPPORTED,
           "%s: control flow has no kernel of its own (its regions compile as models of "
           "their own when the graph's CPU model is compiled)",
           rt_pipeline_node_desc(g, i, desc, sizeof desc));
    return NULL;
  }
  if (b && b->vals && b->bind)
    for (int s = 0; s < g->nsyms; s++) all = all && b->bind[s];
  char *text = !b || !b->vals ? ir_kernel_text(g, n, map, &k)
               : all          ? ir_kernel_text_bound(g, n, b->vals)
                              : ir_kernel_text_partial(g, n, b->vals, b->bind, map, &k);
  if (nks) *nks = k;
  if (!text) {
    rt_pipeline_node_desc(g, i, desc, sizeof desc);
    if (!b || !b->vals) rt_err(st, KILN_ERR_OUT_OF_MEMORY, "%s: out of memory", desc);
    else
      rt_err(st, KILN_ERR_SHAPE,
             "%s: a dim has no non-negative value under the binding (or out of memory)", desc);
    return NULL;
  }
  if (k > RT_KERNEL_MAX_SYMS) {
    free(text);
    rt_err(st, KILN_ERR_COMPILE, "%s: the kernel uses %d symbolic dims, at most %d are supported",
           rt_pipeline_node_desc(g, i, desc, sizeof desc), k, RT_KERNEL_MAX_SYMS);
    return NULL;
  }
  return text;
}

void rt_pipeline_host_key(const rt_target *t, const char *text, rt_key_parts *parts, kc_key *key) {
  rt_cache_mem_key_parts(rt_context_cache(t->ctx), text, parts);
  rt_key_compute(parts, key);
}

void rt_pipeline_host_fn_name(const kc_key *key, char out[48]) {
  char hex[33];
  rt_key_hex(key, hex);
  snprintf(out, 48, "kiln_k_%s", hex);
}

/* *map (nks entries) copied unless it is the identity: the kernel's
 * symbols are then the graph's own. */
static int keep_map(const int *map, int nks, bool always, int **out, kiln_status *st) {
  *out = NULL;
  bool identity = !always;
  for (int j = 0; j < nks && identity; j++) identity = map[j] == j;
  if (nks == 0 || identity) return 0;
  if (!(*out = malloc((size_t)nks * sizeof **out)))
    return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(*out, map, (size_t)nks * sizeof **out);
  return 0;
}

int rt_pipeline_compile_host(const rt_target *t, const ir_graph *g, int i, const rt_binding *b,
                             rt_host_kernel *out, kiln_status *st) {
  return rt_pipeline_compile_host_mode(t, g, i, b, RT_GET_FULL, out, st);
}

int rt_pipeline_compile_host_mode(const rt_target *t, const ir_graph *g, int i,
                                  const rt_binding *b, rt_get_mode mode, rt_host_kernel *out,
                                  kiln_status *st) {
  memset(out, 0, sizeof *out);
  int *map = malloc(((size_t)g->nsyms + 1) * sizeof *map);
  if (!map) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  char *text = rt_pipeline_kernel_text(g, i, b, map, &out->nsyms, st);
  if (!text) {
    free(map);
    return -1;
  }
  char err[1024] = "";
  int rc = rt_cache_mem_get_mode(rt_context_cache(t->ctx), text, mode, &out->entry, &out->fn,
                                 &out->outcome, &out->ms, err, sizeof err);
  free(text);
  if (rc == 0 && out->outcome == RT_CACHE_MISS) { /* RT_GET_FULL_CACHED: nothing held */
    free(map);
    memset(out, 0, sizeof *out);
    out->outcome = RT_CACHE_MISS;
    return 0;
  }
  if (rc < 0 || !out->fn) {
    char desc[256];
    rt_err(st, KILN_ERR_COMPILE, "%s%s: %s", rt_pipeline_node_desc(g, i, desc, sizeof desc),
           b && b->vals ? ", specialized" : "", err[0] ? err : "the JIT produced no kernel");
    rt_cache_mem_release(rt_context_cache(t->ctx), out->entry);
    free(map);
    memset(out, 0, sizeof *out);
    return -1;
  }
  /* a specialized kernel's map is kept even when it is the identity: its
   * callers pass the kernel's dims, never the graph's (variants.c) */
  rc = keep_map(map, out->nsyms, b && b->vals, &out->sym_map, st);
  free(map);
  if (rc < 0) {
    rt_cache_mem_release(rt_context_cache(t->ctx), out->entry);
    memset(out, 0, sizeof *out);
  }
  return rc;
}

/* ---- SIMT code ---- */

/* The content key of a kernel's code for t: the kernel text, the kernel's
 * function name (the code defines it), the target and arch, the math
 * library's identity, the kiln and LLVM versions. opts and host hold the
 * texts parts points into. */
static void code_key(const rt_target *t, const char *text, const char *name, char *opts,
                     size_t optcap, char *host, size_t hostcap, rt_key_parts *parts,
                     kc_key *key) {
  static const char *const TRIPLES[] = {[JIT_SIMT_EMU] = "simt-emu",
                                        [JIT_SIMT_NVPTX] = "nvptx64-nvidia-cuda",
                                        [JIT_SIMT_AMDGPU] = "amdgcn-amd-amdhsa"};
  snprintf(opts, optcap, "simt name=%s %s", name, t->math_id);
  jit_engine *e = t->ctx->jit; /* the emulator's code is the host's */
  bool emu = t->simt.kind == JIT_SIMT_EMU;
  snprintf(host, hostcap, "%s %s", TRIPLES[t->simt.kind], emu ? jit_engine_triple(e) : "");
  *parts = (rt_key_parts){.kernel = text,
                          .triple = host,
                          .cpu = emu ? jit_engine_cpu(e) : t->simt.arch,
                          .features = emu ? jit_engine_features(e) : "",
                          .options = opts,
                          .kiln_version = rt_kiln_version(),
                          .llvm_version = jit_llvm_version()};
  rt_key_compute(parts, key);
}

void rt_simt_code_free(rt_simt_code *c) {
  if (!c) return;
  free(c->image);
  free(c->sym_map);
  memset(c, 0, sizeof *c);
}

/* A trace span of a step producing device kernel fn (node i of g) for t. */
static void simt_step(const rt_target *t, const char *what, const char *fn, const ir_graph *g,
                      int i, int64_t t0) {
  rt_trace *tr = t->ctx ? t->ctx->trace : NULL;
  if (!rt_trace_on(tr)) return;
  char label[256], esc[300], efn[200], a[600];
  rt_obs_node_ops(g, i, label, sizeof label);
  snprintf(a, sizeof a, "\"fn\":\"%s\",\"kernel\":\"%s\",\"target\":\"%s\"",
           rt_trace_escape(fn, efn, sizeof efn), rt_trace_escape(label, esc, sizeof esc),
           t->label);
  rt_trace_span(tr, "compile", what, t0, rt_now_ns(), a);
}

/* Node i's device code from the disk or remote cache: 0 (hit), else -1.
 * A trace span ("disk read", "remote read" or "disk read (miss)") and a
 * "cache hit" / "cache miss" instant, a debug line. */
static int simt_cached(const rt_target *t, const ir_graph *g, int i, const kc_key *key,
                       rt_simt_code *out) {
  rt_trace *tr = t->ctx->trace;
  int64_t t0 = rt_trace_on(tr) ? rt_now_ns() : 0;
  /* 0: from the disk, 1: from the remote (now on the disk too), -1: a miss */
  int rc = rt_cache_tiers_get(t->ctx->disk, t->ctx->remote, key, &out->image, &out->len);
  simt_step(t, rc < 0 ? "disk read (miss)" : rc == 0 ? "disk read" : "remote read", out->name,
            g, i, t0);
  if (rt_trace_on(tr)) {
    char a[200], efn[200];
    snprintf(a, sizeof a, "\"fn\":\"%s\",\"target\":\"%s\"",
             rt_trace_escape(out->name, efn, sizeof efn), t->label);
    rt_trace_instant(tr, "cache", rc >= 0 ? "cache hit" : "cache miss", a);
  }
  if (rc >= 0)
    rt_logf(&t->ctx->log, KILN_LOG_DEBUG, "loaded kernel %s for %s from the %s cache (%zu "
            "bytes)", out->name, t->label, rc == 0 ? "disk" : "remote", out->len);
  return rc >= 0 ? 0 : -1;
}

int rt_pipeline_compile_simt(const rt_target *t, const ir_graph *g, int i, const rt_binding *b,
                             rt_simt_code *out, kiln_status *st) {
  memset(out, 0, sizeof *out);
  int *map = malloc(((size_t)g->nsyms + 1) * sizeof *map);
  if (!map) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  char *text = rt_pipeline_kernel_text(g, i, b, map, &out->nsyms, st);
  int rc = text ? keep_map(map, out->nsyms, true, &out->sym_map, st) : -1;
  free(map);
  if (rc < 0) {
    free(text);
    rt_simt_code_free(out);
    return -1;
  }
  /* a specialized kernel's name differs from the generic one's (simt-emu
   * loads every module into one namespace): the hash of its text */
  jit_simt_kernel_name(g, i, out->name, sizeof out->name);
  if (b && b->vals) {
    size_t nl = strlen(out->name);
    snprintf(out->name + nl, sizeof out->name - nl, "_b%016llx",
             (unsigned long long)XXH3_64bits(text, strlen(text)));
  }
  char opts[1200], host[160];
  rt_key_parts parts;
  kc_key key;
  kc_disk *disk = t->ctx ? t->ctx->disk : NULL;
  struct kr_remote *remote = t->ctx ? t->ctx->remote : NULL;
  if (disk || remote) {
    code_key(t, text, out->name, opts, sizeof opts, host, sizeof host, &parts, &key);
    if (simt_cached(t, g, i, &key, out) == 0) {
      out->cached = true;
      free(text);
      return 0;
    }
  }
  char err[2048] = "";
  void *obj = NULL;
  size_t olen = 0;
  jit_simt_target simt = t->simt;
  simt.math = &rt_simt_math; /* the device math library, found and read by src/ */
  bool watched = t->ctx && (rt_trace_on(t->ctx->trace) || rt_log_on(&t->ctx->log, KILN_LOG_INFO));
  int64_t t0 = watched ? rt_now_ns() : 0;
  rc = jit_simt_compile_node(g, &simt, b ? b->vals : NULL, b ? b->bind : NULL, i,
                             t->has_libs ? &t->libs : NULL, out->name, &obj, &olen, err,
                             sizeof err);
  if (watched) simt_step(t, rc == 0 ? "compile" : "compile (failed)", out->name, g, i, t0);
  if (watched && rc == 0) {
    char label[256], shape[256];
    rt_obs_node_ops(g, i, label, sizeof label);
    rt_obs_type_text(&g->nodes[i]->out[0]->type, shape, sizeof shape);
    rt_logf(&t->ctx->log, KILN_LOG_INFO, "compiled kernel %s %s for %s (%s) in %.1f ms", label,
            shape, t->label, out->name, (double)(rt_now_ns() - t0) / 1e6);
  }
  if (rc < 0) {
    rt_err(st, KILN_ERR_COMPILE, "%s: %s", t->label, err);
  } else if (t->simt.kind == JIT_SIMT_AMDGPU) {
    int64_t tl = watched ? rt_now_ns() : 0;
    rc = rt_link_amdgpu(obj, olen, &out->image, &out->len, st);
    if (watched) simt_step(t, "link", out->name, g, i, tl);
    free(obj);
  } else {
    out->image = obj;
    out->len = olen;
  }
  if (rc == 0 && (disk || remote)) {
    int64_t tw = watched ? rt_now_ns() : 0;
    rt_cache_tiers_put(disk, remote, &key, &parts, out->image, out->len);
    if (watched) simt_step(t, "disk write", out->name, g, i, tw);
  }
  free(text);
  if (rc < 0) rt_simt_code_free(out);
  return rc;
}
