/* kernel_lib.c - a context's custom kernel libraries (kernel_lib.h); the public
 * calls that add them to a context are context_libs.c's.
 *
 * Adding: the kind comes from the name's extension (.c: compiled by
 * kernel_cc.c; .ll: LLVM IR text; .bc: bitcode); jit_lib_inspect turns the
 * bytes into verified bitcode and lists the external functions with their
 * LLVM types and KILN_KERNEL markers. A C library whose hash is already in
 * the list (the same source, flags and compiler) reuses that bitcode: the
 * in-memory cache of compiled C. Binding a graph: each custom node's symbol
 * is looked up among the libraries not superseded; exactly one must define
 * it, with the ABI type, a marker of this ABI version and operand / result
 * counts that fit the node. Only then is kiln.library stamped: kiln never
 * compiles a call to a kernel whose signature it did not check. An
 * elementwise kernel (KILN_ELEMENTWISE_KERNEL, marker flag
 * KILN_KERNEL_ELEMENTWISE) is a scalar function instead: its LLVM type must
 * spell the op's dtypes ("float (float, float)"), the op must be a
 * parameterless mo.custom whose result shape is its operands' broadcast;
 * it runs on every placement and is stamped kiln.elementwise too (fusion
 * and the lowerings read it). Binding runs before fusion
 * (rt_pipeline_prepare, pipeline.c).
 * SIMT targets (rt_kernel_libs_bind_simt): the same lookup, but the kernel
 * must be a KILN_SIMT_KERNEL; C libraries are compiled again for a GPU
 * triple on first need (kernel_cc.c) and that bitcode is kept beside the
 * host's; simt-emu uses the host's.
 * Ownership: the list owns every library (label, hash, source, bitcode per
 * target, function list) until rt_kernel_libs_free; the resolvers hand out
 * borrowed bitcode. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "cache_disk.h"
#include "kernel_lib.h"
#include "kiln/custom.h"
#include "kiln/kernel.h"

/* fusion and the loop emitters size their operand arrays by IR_EW_MAX_IN */
_Static_assert(KILN_ELEMENTWISE_MAX_INPUTS == IR_EW_MAX_IN,
               "kiln/kernel.h and ir.h disagree on elementwise operands");

_Static_assert(KILN_KERNEL_F32 == (int)KILN_FLOAT32 && KILN_KERNEL_F64 == (int)KILN_FLOAT64 &&
                   KILN_KERNEL_I64 == (int)KILN_INT64 && KILN_KERNEL_BOOL == (int)KILN_BOOL &&
                   KILN_KERNEL_BF16 == (int)KILN_BFLOAT16,
               "kiln/kernel.h dtypes must be kiln_dtype's values");

typedef struct rt_kernel_lib {
  char *label;     /* the name it was added under (path or memory name), malloc'd */
  char hash[40];   /* "c-...", "ll-...", "bc-..." */
  bool superseded; /* a later library of the same label replaced it for lookups */
  jit_lib_info info;
  /* C only: the source (to compile for GPU targets on demand) and that
   * bitcode per rt_lib_target (NULL until asked; never for RT_LIB_EMU) */
  char *src, *path;
  size_t srclen;
  void *tbc[RT_LIB_NTARGETS];
  size_t tlen[RT_LIB_NTARGETS];
} rt_kernel_lib;

typedef struct lib_resolver {
  rt_kernel_libs *l;
  rt_lib_target t;
} lib_resolver;

struct rt_kernel_libs {
  pthread_mutex_t mu;
  rt_kernel_lib **v;
  int n, cap;
  bool simt_stubs;
  lib_resolver res[RT_LIB_NTARGETS];
};

rt_kernel_libs *rt_kernel_libs_new(void) {
  rt_kernel_libs *l = calloc(1, sizeof *l);
  if (l && pthread_mutex_init(&l->mu, NULL) != 0) {
    free(l);
    return NULL;
  }
  return l;
}

void rt_kernel_libs_free(rt_kernel_libs *l) {
  if (!l) return;
  for (int i = 0; i < l->n; i++) {
    jit_lib_info_free(&l->v[i]->info);
    free(l->v[i]->label);
    free(l->v[i]->src);
    free(l->v[i]->path);
    for (int t = 0; t < RT_LIB_NTARGETS; t++) free(l->v[i]->tbc[t]);
    free(l->v[i]);
  }
  free(l->v);
  pthread_mutex_destroy(&l->mu);
  free(l);
}

int rt_kernel_libs_count(rt_kernel_libs *l) {
  if (!l) return 0;
  pthread_mutex_lock(&l->mu);
  int n = l->n;
  pthread_mutex_unlock(&l->mu);
  return n;
}

/* ---- the resolver ---- */

static int find_bitcode(void *ud, const char *hash, const void **data, size_t *len) {
  rt_kernel_libs *l = ud;
  int rc = -1;
  pthread_mutex_lock(&l->mu);
  for (int i = l->n - 1; i >= 0 && rc < 0; i--)
    if (strcmp(l->v[i]->hash, hash) == 0) {
      *data = l->v[i]->info.bitcode; /* immutable until the list is freed */
      *len = l->v[i]->info.len;
      rc = 0;
    }
  pthread_mutex_unlock(&l->mu);
  return rc;
}

jit_libs rt_kernel_libs_resolver(rt_kernel_libs *l) {
  jit_libs r = {l, find_bitcode};
  return r;
}

/* ---- adding ---- */

typedef enum lib_kind { LIB_C, LIB_LL, LIB_BC, LIB_UNKNOWN } lib_kind;
static lib_kind kind_of(const char *name);

bool rt_kernel_lib_kind_known(const char *name) { return kind_of(name) != LIB_UNKNOWN; }

static lib_kind kind_of(const char *name) {
  const char *dot = strrchr(name, '.');
  if (!dot || strchr(dot, '/')) return LIB_UNKNOWN;
  if (strcmp(dot, ".c") == 0) return LIB_C;
  if (strcmp(dot, ".ll") == 0) return LIB_LL;
  if (strcmp(dot, ".bc") == 0) return LIB_BC;
  return LIB_UNKNOWN;
}

static void bytes_hash(const char *prefix, const void *data, size_t len, char out[40]) {
  XXH128_hash_t h = XXH3_128bits(data, len);
  snprintf(out, 40, "%s-%016llx%016llx", prefix, (unsigned long long)h.high64,
           (unsigned long long)h.low64);
}

/* A copy of the bitcode of a library with this hash, when one is loaded. */
static void *known_bitcode(rt_kernel_libs *l, const char *hash, size_t *len) {
  const void *d = NULL;
  void *copy = NULL;
  pthread_mutex_lock(&l->mu);
  for (int i = 0; i < l->n && !d; i++)
    if (strcmp(l->v[i]->hash, hash) == 0) {
      d = l->v[i]->info.bitcode;
      *len = l->v[i]->info.len;
    }
  if (d && (copy = malloc(*len))) memcpy(copy, d, *len);
  pthread_mutex_unlock(&l->mu);
  return copy;
}

/* The library's bitcode-or-IR bytes and hash: C compiled (or found), .ll /
 * .bc as given. *owned is a malloc'd buffer to free (NULL when data is
 * used as is). 0 or -1 with st. */
static int library_bytes(rt_kernel_libs *l, lib_kind kind, const char *name, const char *path,
                         const void *data, size_t len, const rt_lib_dirs *dirs, const void **out,
                         size_t *outlen, void **owned, char hash[40], kiln_status *st) {
  *owned = NULL;
  *out = data;
  *outlen = len;
  if (kind != LIB_C) {
    bytes_hash(kind == LIB_LL ? "ll" : "bc", data, len, hash);
    return 0;
  }
  rt_cc_job job;
  memset(&job, 0, sizeof job);
  job.name = name;
  job.path = path;
  job.src = data;
  job.len = len;
  if (rt_cc_prepare(&job, st) < 0) return -1;
  memcpy(hash, job.hash, 40);
  void *bc = known_bitcode(l, job.hash, outlen);
  if (!bc && rt_cc_build(&job, dirs, &bc, outlen, st) < 0) return -1;
  *owned = bc;
  *out = bc;
  return 0;
}

char *rt_lib_dirs_read(const rt_lib_dirs *d, const char *name, size_t *len) {
  if (!d) return NULL;
  char *bytes = d->dir ? kc_tree_read(d->dir, "libs", name, len, NULL, 0) : NULL;
  for (int i = 0; !bytes && i < d->nseeds; i++)
    bytes = kc_tree_read(d->seeds[i], "libs", name, len, NULL, 0);
  return bytes;
}

/* ---- the function list beside a compiled C library's bitcode ----
 * cache_dir/libs/<hex>.fns: what jit_lib_inspect found in <hex>.bc, so that
 * a warm load reads two small files and never starts LLVM's bitcode reader.
 * Text: "kiln-lib-fns/1 N\n", then per function
 * "ABI_TYPE HAS_MARKER ABI NIN NOUT NAME\tTYPE\n". Anything unexpected: the
 * file is ignored (and the bitcode inspected). */

static void fns_name(const char *hash, char *out, size_t cap) {
  snprintf(out, cap, "%s.fns", hash + 2);
}

/* Through kc_tree_publish: a temporary file renamed in place, no link
 * followed. */
static void fns_store(const char *cache_dir, const char *hash, const jit_lib_info *info) {
  char name[64], *text = NULL;
  size_t len = 0;
  fns_name(hash, name, sizeof name);
  FILE *f = open_memstream(&text, &len);
  if (!f) return;
  bool ok = fprintf(f, "kiln-lib-fns/1 %d\n", info->nfns) > 0;
  for (int i = 0; ok && i < info->nfns; i++) {
    const jit_lib_fn *e = &info->fns[i];
    ok = !strpbrk(e->name, " \t\n") && !strchr(e->type, '\n') &&
         fprintf(f, "%d %d %d %d %d %s\t%s\n", e->abi_type, e->has_marker, (int)e->abi,
                 (int)e->nin, (int)e->nout, e->name, e->type) > 0;
  }
  if (fclose(f) == 0 && ok) (void)kc_tree_publish(cache_dir, "libs", name, text, len);
  free(text);
}

/* The function list of hash from its .fns file into info (bitcode not
 * set); false when there is none, it fails the cache's owner and mode rule
 * (kc_tree_read), or it is malformed (info then empty). */
static bool fns_load(const rt_lib_dirs *dirs, const char *hash, jit_lib_info *info) {
  char name[64], line[8192];
  size_t tlen = 0;
  fns_name(hash, name, sizeof name);
  char *text = rt_lib_dirs_read(dirs, name, &tlen);
  FILE *f = text ? fmemopen(text, tlen, "r") : NULL;
  if (!f) {
    free(text);
    return false;
  }
  int n = -1;
  bool ok = fgets(line, sizeof line, f) && sscanf(line, "kiln-lib-fns/1 %d", &n) == 1 && n >= 0 &&
            n < 100000 && (info->fns = calloc((size_t)n + 1, sizeof *info->fns));
  for (int i = 0; ok && i < n; i++) {
    int a, m, abi, nin, nout, off = 0;
    ok = fgets(line, sizeof line, f) &&
         sscanf(line, "%d %d %d %d %d %n", &a, &m, &abi, &nin, &nout, &off) == 5 && off > 0;
    char *tab = ok ? strchr(line + off, '\t') : NULL;
    char *nl = tab ? strchr(tab, '\n') : NULL;
    ok = nl != NULL;
    if (!ok) break;
    *tab = *nl = 0;
    jit_lib_fn *e = &info->fns[info->nfns++];
    e->abi_type = a != 0;
    e->has_marker = m != 0;
    e->abi = abi;
    e->nin = nin;
    e->nout = nout;
    ok = (e->name = strdup(line + off)) && (e->type = strdup(tab + 1));
  }
  fclose(f);
  free(text);
  if (!ok) jit_lib_info_free(info);
  return ok;
}

/* The library's function list and bitcode: for C from the .fns file when
 * the cache has one, else (and for .ll / .bc) by jit_lib_inspect. */
static int describe(rt_kernel_lib *lib, lib_kind kind, const void *bytes, size_t nbytes,
                    const rt_lib_dirs *dirs, kiln_status *st) {
  bool c = kind == LIB_C;
  if (c && dirs && fns_load(dirs, lib->hash, &lib->info)) {
    if (!(lib->info.bitcode = malloc(nbytes ? nbytes : 1)))
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding a kernel library");
    memcpy(lib->info.bitcode, bytes, nbytes);
    lib->info.len = nbytes;
    return 0;
  }
  char err[1024] = "";
  if (jit_lib_inspect(bytes, nbytes, lib->label, c, &lib->info, err, sizeof err) < 0)
    return rt_err(st, c ? KILN_ERR_COMPILE : KILN_ERR_PARSE, "kernel library %s", err);
  if (c && dirs && dirs->dir) fns_store(dirs->dir, lib->hash, &lib->info);
  return 0;
}

static int append(rt_kernel_libs *l, rt_kernel_lib *lib, kiln_status *st) {
  pthread_mutex_lock(&l->mu);
  if (l->n == l->cap) {
    int nc = l->cap ? 2 * l->cap : 4;
    rt_kernel_lib **nv = realloc(l->v, (size_t)nc * sizeof *nv);
    if (!nv) {
      pthread_mutex_unlock(&l->mu);
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding a kernel library");
    }
    l->v = nv;
    l->cap = nc;
  }
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i]->label, lib->label) == 0) l->v[i]->superseded = true;
  l->v[l->n++] = lib;
  pthread_mutex_unlock(&l->mu);
  return 0;
}

int rt_kernel_libs_add(rt_kernel_libs *l, const char *name, const char *path, const void *data,
                       size_t len, const rt_lib_dirs *dirs, kiln_status *st) {
  lib_kind kind = kind_of(name);
  if (kind == LIB_UNKNOWN)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT,
                  "kernel library '%s': unknown kind (the name must end in .c, .ll or .bc)", name);
  const void *bytes;
  size_t nbytes;
  void *owned = NULL;
  char hash[40];
  if (library_bytes(l, kind, name, path, data, len, dirs, &bytes, &nbytes, &owned, hash,
                    st) < 0)
    return -1;
  rt_kernel_lib *lib = calloc(1, sizeof *lib);
  int rc = 0;
  if (!lib || !(lib->label = strdup(name)) ||
      (kind == LIB_C && (!(lib->src = malloc(len ? len : 1)) ||
                         (path && !(lib->path = strdup(path)))))) {
    rc = rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory adding a kernel library");
  } else {
    if (kind == LIB_C) {
      if (len) memcpy(lib->src, data, len);
      lib->srclen = len;
    }
    memcpy(lib->hash, hash, sizeof lib->hash);
    rc = describe(lib, kind, bytes, nbytes, dirs, st);
    if (rc == 0) rc = append(l, lib, st);
  }
  free(owned);
  if (rc < 0 && lib) {
    jit_lib_info_free(&lib->info);
    free(lib->label);
    free(lib->src);
    free(lib->path);
    free(lib);
  }
  if (rc == 0) rt_ok(st);
  return rc;
}

/* ---- binding a graph ---- */

/* The library and function defining sym; NULL with st (missing, or two
 * libraries define it). Under l->mu. */
static const rt_kernel_lib *lookup(rt_kernel_libs *l, const char *sym, const jit_lib_fn **fn,
                                   const char *where, kiln_status *st) {
  const rt_kernel_lib *found = NULL;
  for (int i = 0; i < l->n; i++) {
    const rt_kernel_lib *lib = l->v[i];
    if (lib->superseded) continue;
    for (int k = 0; k < lib->info.nfns; k++) {
      if (strcmp(lib->info.fns[k].name, sym) != 0) continue;
      if (found) {
        rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" is defined by two kernel libraries: %s and %s",
               where, sym, found->label, lib->label);
        return NULL;
      }
      found = lib;
      *fn = &lib->info.fns[k];
    }
  }
  if (!found) {
    if (l->n == 0)
      rt_err(st, KILN_ERR_NOT_FOUND, "%skernel \"%s\": no kernel library is loaded (add one with "
             "kiln_context_add_kernel_library or kiln run --kernels FILE.c)", where, sym);
    else
      rt_err(st, KILN_ERR_NOT_FOUND, "%skernel \"%s\" is not defined by any kernel library of "
             "the context (%d loaded, the last: %s)", where, sym, l->n, l->v[l->n - 1]->label);
  }
  return found;
}

/* Where a bind places kernels. */
typedef enum placement { ON_HOST, ON_HOST_STUBS, ON_SIMT } placement;

#define MARKER_FLAGS (KILN_KERNEL_ON_SIMT | KILN_KERNEL_ELEMENTWISE)

/* ---- elementwise kernels (KILN_ELEMENTWISE_KERNEL) ---- */

/* The LLVM type of dtype t's C type in an elementwise kernel's signature,
 * and its C spelling; NULL for element types elementwise kernels do not
 * take (f16, bf16, f8). */
static const char *ew_llvm_type(ir_dtype t) {
  switch (t) {
  case IR_DT_BOOL: return "i1";
  case IR_DT_SI8:
  case IR_DT_UI8: return "i8";
  case IR_DT_SI16:
  case IR_DT_UI16: return "i16";
  case IR_DT_SI32:
  case IR_DT_UI32: return "i32";
  case IR_DT_SI64:
  case IR_DT_UI64: return "i64";
  case IR_DT_F32: return "float";
  case IR_DT_F64: return "double";
  default: return NULL;
  }
}

static const char *ew_c_type(ir_dtype t) {
  switch (t) {
  case IR_DT_BOOL: return "bool";
  case IR_DT_SI8: return "int8_t";
  case IR_DT_UI8: return "uint8_t";
  case IR_DT_SI16: return "int16_t";
  case IR_DT_UI16: return "uint16_t";
  case IR_DT_SI32: return "int32_t";
  case IR_DT_UI32: return "uint32_t";
  case IR_DT_SI64: return "int64_t";
  case IR_DT_UI64: return "uint64_t";
  case IR_DT_F32: return "float";
  case IR_DT_F64: return "double";
  default: return "?";
  }
}

/* buf += s (cap bytes, truncating, always NUL-terminated). */
static void cat(char *buf, size_t cap, const char *s) {
  size_t k = strlen(buf);
  if (k + 1 < cap) snprintf(buf + k, cap - k, "%s", s);
}

/* The result type of n is the broadcast of its operands' (numpy rules,
 * right-aligned; dims compared as expressions: each operand dim equals the
 * result's or is the constant 1, and some operand gives every result dim
 * that is not 1). 0 or -1 with st. */
static int check_broadcast(const ir_node *n, const char *where, const char *sym,
                           kiln_status *st) {
  const ir_type *rt = &n->out[0]->type;
  int r = 0;
  for (int k = 0; k < n->nin; k++)
    if (n->in[k]->type.rank > r) r = n->in[k]->type.rank;
  char ts[256];
  ir_type_print(rt, ts, sizeof ts);
  if (rt->rank != r)
    return rt_err(st, KILN_ERR_VERIFY, "%selementwise kernel \"%s\": the result type %s has rank "
                  "%d, the broadcast of the operands' shapes has rank %d", where, sym, ts,
                  rt->rank, r);
  for (int a = 0; a < r; a++) {
    const ir_dim *rd = rt->dims[a];
    int64_t c = 0;
    bool given = ir_dim_is_const(rd, &c) && c == 1;
    char rs[128], ds[128];
    ir_dim_print(rd, rs, sizeof rs);
    for (int k = 0; k < n->nin; k++) {
      const ir_type *t = &n->in[k]->type;
      int off = r - t->rank;
      if (a < off) continue;
      const ir_dim *d = t->dims[a - off];
      if (ir_dim_equal(d, rd)) {
        given = true;
        continue;
      }
      if (ir_dim_is_const(d, &c) && c == 1) continue;
      ir_dim_print(d, ds, sizeof ds);
      return rt_err(st, KILN_ERR_VERIFY, "%selementwise kernel \"%s\": the result type %s is "
                    "not the broadcast of the operands' shapes: axis %d is %s, operand %d (%%%s) "
                    "has %s there (an operand's dim must equal the result's or be 1)", where,
                    sym, ts, a, rs, k, n->in[k]->name ? n->in[k]->name : "?", ds);
    }
    if (!given)
      return rt_err(st, KILN_ERR_VERIFY, "%selementwise kernel \"%s\": the result type %s is "
                    "not the broadcast of the operands' shapes: no operand has axis %d's dim %s",
                    where, sym, ts, a, rs);
  }
  return 0;
}

/* An elementwise kernel fits node n: mo.custom, one result, no parameters,
 * the operand count, element types it takes, the function's LLVM type
 * spelling those types, the result shape the operands' broadcast. 0 or -1
 * with st. */
static int check_elementwise(const rt_kernel_lib *lib, const jit_lib_fn *fn, const ir_node *n,
                             const char *where, kiln_status *st) {
  const char *sym = fn->name;
  if (n->op != IR_OP_CUSTOM)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s is an elementwise kernel "
                  "(KILN_ELEMENTWISE_KERNEL): use it with mo.custom (it computes a new value, "
                  "it updates nothing in place)", where, sym, lib->label);
  if (n->nout != 1)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s is an elementwise kernel: it "
                  "makes 1 result, the op has %d", where, sym, lib->label, n->nout);
  if (fn->nin >= 0 && fn->nin != n->nin)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s takes %d operand%s, the op gives %d",
                  where, sym, lib->label, (int)fn->nin, fn->nin == 1 ? "" : "s", n->nin);
  if (n->nin > KILN_ELEMENTWISE_MAX_INPUTS)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%skernel \"%s\" in %s: an elementwise kernel takes "
                  "at most %d operands, the op gives %d", where, sym, lib->label,
                  KILN_ELEMENTWISE_MAX_INPUTS, n->nin);
  for (int i = 0; i < n->nattrs; i++) {
    const char *a = n->attrs[i].name;
    if (strcmp(a, "symbol") == 0 || strncmp(a, "kiln.", 5) == 0) continue;
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s is an elementwise kernel, which "
                  "takes no parameters, but the op has '%s' (pass the value as an operand: a "
                  "one-element tensor broadcasts)", where, sym, lib->label, a);
  }
  for (int k = 0; k <= n->nin; k++) { /* the operands, then the result */
    const ir_value *v = k < n->nin ? n->in[k] : n->out[0];
    if (ew_llvm_type(v->type.dtype)) continue;
    char what[32];
    if (k == n->nin) snprintf(what, sizeof what, "its result");
    else snprintf(what, sizeof what, "operand %d", k);
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%skernel \"%s\" in %s: %s is %s; elementwise "
                  "kernels take f32, f64, bool and the integer element types (cast to f32 "
                  "around the op)", where, sym, lib->label, what, ir_dtype_name(v->type.dtype));
  }
  /* the type the op needs, in LLVM's spelling and in C's */
  char want[512] = "", c_sig[512] = "";
  for (int k = -1; k < n->nin; k++) {
    const ir_value *v = k < 0 ? n->out[0] : n->in[k];
    const char *lt = ew_llvm_type(v->type.dtype);
    if (k >= 1) {
      cat(want, sizeof want, ", ");
      cat(c_sig, sizeof c_sig, ", ");
    }
    cat(want, sizeof want, lt);
    cat(c_sig, sizeof c_sig, ew_c_type(v->type.dtype));
    if (k < 0) { /* "float (" and "float NAME(" */
      cat(want, sizeof want, " (");
      cat(c_sig, sizeof c_sig, " ");
      cat(c_sig, sizeof c_sig, sym);
      cat(c_sig, sizeof c_sig, "(");
    }
  }
  cat(want, sizeof want, ")");
  cat(c_sig, sizeof c_sig, ")");
  if (strcmp(fn->type, want) != 0)
    return rt_err(st, KILN_ERR_VERIFY, "%selementwise kernel \"%s\" in %s has type %s, the op "
                  "needs %s (in C: %s)", where, sym, lib->label, fn->type, want, c_sig);
  return check_broadcast(n, where, sym, st);
}

/* The function fits the node: ABI type, marker, counts, placement (a SIMT
 * kernel under ON_HOST_STUBS sets *stub); an elementwise kernel (*ew set)
 * fits check_elementwise's rules and any placement. 0 or -1 with st. */
static int check_signature(const rt_kernel_lib *lib, const jit_lib_fn *fn, const ir_node *n,
                           const char *where, placement pl, bool *stub, bool *ew,
                           kiln_status *st) {
  const char *sym = fn->name;
  *ew = fn->has_marker && (fn->abi & KILN_KERNEL_ELEMENTWISE) != 0;
  if (!fn->abi_type && !*ew)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s has type %s, which does not fit "
                  "int32_t (const kiln_kernel_args *) (kiln/kernel.h)%s%s%s", where, sym,
                  lib->label, fn->type,
                  fn->has_marker ? "" : "; a scalar elementwise kernel is declared with "
                                        "KILN_ELEMENTWISE_KERNEL(",
                  fn->has_marker ? "" : sym, fn->has_marker ? "" : ", NIN)");
  if (!fn->has_marker)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s is not declared with "
                  "KILN_KERNEL(%s, NIN, NOUT) (no kiln_abi_%s marker): kiln cannot check its "
                  "signature", where, sym, lib->label, sym, sym);
  bool simt = (fn->abi & KILN_KERNEL_ON_SIMT) != 0;
  if ((fn->abi & ~MARKER_FLAGS) != KILN_KERNEL_ABI)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s was built for kernel ABI %d, this "
                  "kiln has ABI %d: rebuild it against kiln/kernel.h", where, sym, lib->label,
                  (int)(fn->abi & ~MARKER_FLAGS), KILN_KERNEL_ABI);
  if (*ew) return check_elementwise(lib, fn, n, where, st); /* runs everywhere */
  if (ir_node_attr(n, "kiln.elementwise"))
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s is not an elementwise kernel, but "
                  "the op carries kiln.elementwise (an attribute kiln stamps itself)", where, sym,
                  lib->label);
  if (simt && pl == ON_HOST)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%skernel \"%s\" in %s is a SIMT kernel "
                  "(KILN_SIMT_KERNEL): it runs on a SIMT device (simt-emu, cuda, hip: kiln run "
                  "--device), not on the CPU", where, sym, lib->label);
  if (!simt && pl == ON_SIMT)
    return rt_err(st, KILN_ERR_UNSUPPORTED, "%skernel \"%s\" in %s is a host kernel "
                  "(KILN_KERNEL): it runs on the CPU only; declare it with KILN_SIMT_KERNEL to "
                  "run it on a SIMT device", where, sym, lib->label);
  *stub = simt && pl == ON_HOST_STUBS;
  if (fn->nin >= 0 && fn->nin != n->nin)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s takes %d operand%s, the op gives %d",
                  where, sym, lib->label, (int)fn->nin, fn->nin == 1 ? "" : "s", n->nin);
  if (fn->nout >= 0 && fn->nout != n->nout)
    return rt_err(st, KILN_ERR_VERIFY, "%skernel \"%s\" in %s makes %d result%s, the op has %d",
                  where, sym, lib->label, (int)fn->nout, fn->nout == 1 ? "" : "s", n->nout);
  return 0;
}

static int bind(rt_kernel_libs *l, ir_graph *g, placement pl, kiln_status *st) {
  for (int i = 0; i < g->nnodes; i++) {
    ir_node *n = g->nodes[i];
    if (ir_op_get(n->op)->cls != IR_CLS_CUSTOM) continue;
    const char *sym = ir_node_attr_string(n, "symbol", "");
    char where[200];
    if (n->loc.line > 0)
      snprintf(where, sizeof where, "%d:%d: mo.%s: ", n->loc.line, n->loc.col,
               ir_op_get(n->op)->name);
    else
      snprintf(where, sizeof where, "op #%d (mo.%s): ", i, ir_op_get(n->op)->name);
    const jit_lib_fn *fn = NULL;
    char hash[40];
    bool stub = false, ew = false;
    pthread_mutex_lock(&l->mu);
    if (pl == ON_HOST && l->simt_stubs) pl = ON_HOST_STUBS;
    const rt_kernel_lib *lib = lookup(l, sym, &fn, where, st);
    int rc = lib ? check_signature(lib, fn, n, where, pl, &stub, &ew, st) : -1;
    if (rc == 0) memcpy(hash, lib->hash, sizeof hash);
    pthread_mutex_unlock(&l->mu);
    if (rc < 0) return -1;
    /* kiln.elementwise: fusion (ir/fuse.c) and the lowerings read it */
    if (ir_node_set_attr_string(g, n, "kiln.library", hash) < 0 ||
        (stub && ir_node_set_attr_string(g, n, "kiln.simt_stub", "never called") < 0) ||
        (ew && ir_node_set_attr_int(g, n, "kiln.elementwise", 1) < 0))
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  return 0;
}

int rt_kernel_libs_bind(rt_kernel_libs *l, ir_graph *g, kiln_status *st) {
  return bind(l, g, ON_HOST, st);
}

void rt_kernel_libs_set_simt_stubs(rt_kernel_libs *l, bool on) {
  if (!l) return;
  pthread_mutex_lock(&l->mu);
  l->simt_stubs = on;
  pthread_mutex_unlock(&l->mu);
}

/* ---- SIMT targets ---- */

static const char *const target_triple[RT_LIB_NTARGETS] = {NULL, "nvptx64-nvidia-cuda",
                                                          "amdgcn-amd-amdhsa"};

static int find_target_bitcode(void *ud, const char *hash, const void **data, size_t *len) {
  const lib_resolver *r = ud;
  rt_kernel_libs *l = r->l;
  int rc = -1;
  pthread_mutex_lock(&l->mu);
  for (int i = l->n - 1; i >= 0 && rc < 0; i--) {
    const rt_kernel_lib *lib = l->v[i];
    if (strcmp(lib->hash, hash) != 0) continue;
    bool own = lib->src && r->t != RT_LIB_EMU; /* C: compiled for the GPU triple */
    if (own && !lib->tbc[r->t]) break;          /* not prepared: a miss */
    *data = own ? lib->tbc[r->t] : lib->info.bitcode;
    *len = own ? lib->tlen[r->t] : lib->info.len;
    rc = 0;
  }
  pthread_mutex_unlock(&l->mu);
  return rc;
}

/* The C library of hash compiled for GPU target t, once. 0 or -1 with st. */
static int prepare_target(rt_kernel_libs *l, const char *hash, rt_lib_target t,
                          const rt_lib_dirs *dirs, kiln_status *st) {
  rt_cc_job job;
  memset(&job, 0, sizeof job);
  pthread_mutex_lock(&l->mu);
  rt_kernel_lib *lib = NULL;
  for (int i = l->n - 1; i >= 0 && !lib; i--)
    if (strcmp(l->v[i]->hash, hash) == 0) lib = l->v[i];
  bool need = lib && lib->src && !lib->tbc[t];
  if (need) { /* the library lives (and its source stays put) until l is freed */
    job.name = lib->label;
    job.path = lib->path;
    job.src = lib->src;
    job.len = lib->srclen;
    job.target = target_triple[t];
  }
  pthread_mutex_unlock(&l->mu);
  if (!need) return 0;
  void *bc = NULL;
  size_t len = 0;
  if (rt_cc_prepare(&job, st) < 0 || rt_cc_build(&job, dirs, &bc, &len, st) < 0) return -1;
  pthread_mutex_lock(&l->mu);
  if (!lib->tbc[t]) {
    lib->tbc[t] = bc;
    lib->tlen[t] = len;
    bc = NULL;
  }
  pthread_mutex_unlock(&l->mu);
  free(bc);
  return 0;
}

int rt_kernel_libs_bind_simt(rt_kernel_libs *l, ir_graph *g, rt_lib_target t,
                             const rt_lib_dirs *dirs, jit_libs *res, kiln_status *st) {
  if (!l || (unsigned)t >= RT_LIB_NTARGETS)
    return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "rt_kernel_libs_bind_simt: bad argument");
  if (bind(l, g, ON_SIMT, st) < 0) return -1;
  for (int i = 0; i < g->nnodes; i++) {
    const char *hash = ir_node_attr_string(g->nodes[i], "kiln.library", NULL);
    if (hash && t != RT_LIB_EMU && prepare_target(l, hash, t, dirs, st) < 0) return -1;
  }
  pthread_mutex_lock(&l->mu);
  l->res[t].l = l;
  l->res[t].t = t;
  pthread_mutex_unlock(&l->mu);
  res->ud = &l->res[t];
  res->find = find_target_bitcode;
  return 0;
}

