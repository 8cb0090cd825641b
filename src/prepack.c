/* prepack.c - constant GEMM operands packed once (see prepack.h): marking
 * the matmuls whose B is a constant or a weight (and the conv2d whose
 * filter is), the per-model packed copies, and the packing itself.
 *
 * Assumes: the graph was prepared (rt_pipeline_prepare: verified, fused) and
 * is the model's own clone; the packed layout written here is the one
 * kernels-templates/gemm.c documents under "Prepacked B" (panels of NR
 * columns, each K x NR row-major, zeros past column N), NR as
 * jit_gemm_panel_width gives it for the JIT engine's target, the same
 * function jit/matmul.c checks the attribute against.
 * Guarantees: a node carries kiln.packed_b only when the runtime passes the
 * packed copy for that operand (rt_prepack_init records every marked node;
 * a marked node whose source cannot be found is an error, never a kernel
 * reading raw data as panels); a bound weight that feeds a marked matmul
 * always has a packed copy of the data it was bound with; a matmul with
 * kiln.transpose_b has its source packed from the transposed layout (a failed pack
 * leaves the previous binding whole). Memory: one copy per source, shared
 * by every matmul that reads it, ceil(N / NR) * NR * K elements (mlp's
 * fc1.weight [784, 512] f32: 1.53 MiB), freed on rebind and with the model.
 * Threads: bind is not safe against a running execute (runtime.h says so);
 * the execute only reads the tables. */
#include "prepack.h"

#include <stdlib.h>
#include <string.h>

#include "../ir/qblock.h"
#include "spread.h"

static bool is_8bit(ir_dtype dt) { return dt == IR_DT_UI8 || dt == IR_DT_SI8; }

/* The B operands a node reads in its own packed layout: 8-bit ones of
 * matmul.integer, half ones of a matmul with kiln.wide_result (half_gemm.c),
 * f32 / f64 ones of the f32 / f64 GEMM. */
typedef enum b_kind { B_FLOAT, B_8BIT, B_HALF } b_kind;

static b_kind b_kind_of(const ir_node *n) {
  if (n->op == IR_OP_MATMUL_INTEGER) return B_8BIT;
  if (n->op == IR_OP_MATMUL && ir_node_attr_int(n, "kiln.wide_result", 0)) return B_HALF;
  return B_FLOAT;
}

/* B's type qualifies: of the kind's dtypes, the rank given, static dims. */
static bool packable_type(const ir_type *t, int rank, b_kind kind) {
  bool dt_ok = kind == B_8BIT   ? is_8bit(t->dtype)
               : kind == B_HALF ? ir_dtype_is_half(t->dtype)
                                : t->dtype == IR_DT_F32 || t->dtype == IR_DT_F64;
  if (!dt_ok) return false;
  if (t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (!ir_dim_is_const(t->dims[i], NULL)) return false;
  return true;
}

/* The nodes whose operand 1 the template reads as B: a matmul, and a
 * one-group conv2d (its RSCF filter is the [R * S * C, F] matrix B of
 * jit/conv.c's GEMMs; groups would need a packed copy per group). */
static bool reads_b(const ir_node *n) {
  if (n->op == IR_OP_MATMUL) return n->nin == 2;
  if (n->op == IR_OP_MATMUL_INTEGER) return true;
  return n->op == IR_OP_CONV2D && n->nin >= 2 && ir_node_attr_int(n, "groups", 1) == 1;
}

/* The node (in g or in n's body) that reads a constant B through operand
 * *operand of n, or NULL. */
static ir_node *packable(const ir_node *n, int *operand) {
  if (reads_b(n) && ir_node_is_source(n->in[1]->def) &&
      packable_type(&n->in[1]->type, n->op == IR_OP_CONV2D ? 4 : 2, b_kind_of(n))) {
    *operand = 1;
    return (ir_node *)n;
  }
  if (!n->body) return NULL;
  const ir_graph *b = n->body;
  for (int i = 0; i < b->nnodes; i++) {
    ir_node *mm = b->nodes[i];
    if (mm->op != IR_OP_MATMUL || mm->nin != 2) continue;
    const ir_value *bv = mm->in[1];
    if (bv->def || bv->index < 0 || bv->index >= n->nin || b->inputs[bv->index] != bv)
      return NULL; /* B computed inside the body */
    const ir_value *outer = n->in[bv->index];
    if (!ir_node_is_source(outer->def) || !packable_type(&bv->type, 2, b_kind_of(mm)) ||
        ir_value_uses(b, bv) != 1)
      return NULL;
    *operand = bv->index;
    return mm;
  }
  return NULL;
}

static bool carries_mark(const ir_node *n) {
  if ((n->op == IR_OP_MATMUL || n->op == IR_OP_CONV2D || n->op == IR_OP_MATMUL_INTEGER) &&
      ir_node_attr(n, "kiln.packed_b"))
    return true;
  for (int i = 0; n->body && i < n->body->nnodes; i++)
    if (carries_mark(n->body->nodes[i])) return true;
  return false;
}

int rt_prepack_mark(ir_graph *g, const kiln_context *ctx, kiln_status *st) {
  const char *features = jit_engine_features(ctx->jit);
  bool avx512f = jit_features_have(features, "avx512f");
  jit_mmi_isa int8 = jit_engine_int8_gemm(ctx->jit);
  for (int i = 0; i < g->nnodes; i++)
    if (carries_mark(g->nodes[i]))
      return rt_err(st, KILN_ERR_VERIFY,
                    "graph @%s: mo.%s (%%%s) carries kiln.packed_b, an attribute only the "
                    "runtime sets",
                    g->name, ir_op_get(g->nodes[i]->op)->name,
                    g->nodes[i]->nout > 0 ? g->nodes[i]->out[0]->name : "?");
  int marked = 0;
  for (int i = 0; i < g->nnodes; i++) {
    ir_node *n = g->nodes[i];
    int operand;
    ir_node *mm = packable(n, &operand);
    if (!mm) continue;
    b_kind kind = b_kind_of(mm);
    int64_t nr = kind == B_8BIT   ? jit_mmi_panel_width(int8)
                 : kind == B_HALF ? jit_hgemm_panel_width()
                                  : jit_gemm_panel_width(avx512f, mm->in[1]->type.dtype);
    if (nr <= 0) continue;
    ir_graph *owner = mm == n ? g : n->body;
    if (ir_node_set_attr_int(owner, mm, "kiln.packed_b", nr) < 0)
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory marking mo.%s (%%%s)",
                    ir_op_get(mm->op)->name, n->out[0]->name);
    marked++;
  }
  return marked;
}

size_t rt_prepack_bytes(ir_dtype dt, int64_t K, int64_t N, int64_t nr) {
  if (K < 0 || N < 0 || nr <= 0) return 0;
  int64_t panels = (N + nr - 1) / nr, elems;
  if (ir_dtype_is_half(dt)) { /* bf16: K rounded up to 2, 2 bytes; f16: f32 elements */
    int64_t kk = dt == IR_DT_BF16 ? (K + 1) / 2 * 2 : K, bytes;
    if (__builtin_mul_overflow(panels, nr, &elems) || __builtin_mul_overflow(elems, kk, &elems) ||
        __builtin_mul_overflow(elems, dt == IR_DT_BF16 ? 2 : 4, &bytes))
      return 0;
    return (size_t)bytes;
  }
  if (is_8bit(dt)) { /* panels of K rounded up to 4, then a uint32 sum per column */
    int64_t k4 = (K + 3) / 4 * 4, cols, bytes;
    if (__builtin_mul_overflow(panels, nr, &cols) || __builtin_mul_overflow(cols, k4 + 4, &bytes))
      return 0;
    return (size_t)bytes;
  }
  if (__builtin_mul_overflow(panels, nr, &elems) || __builtin_mul_overflow(elems, K, &elems))
    return 0;
  size_t bytes;
  if (__builtin_mul_overflow((size_t)elems, ir_dtype_size(dt), &bytes)) return 0;
  return bytes;
}

/* matmul.integer's layout (kernels-templates/gemm_int8_vnni.h, "Prepacked
 * B"): per panel of nr columns, groups of 4 k as [g][col][4] bytes (si8 b as
 * it is, ui8 b ^ 0x80; zero past K and N), then the true column sums. */
static void pack_8bit(const uint8_t *b, bool sb, int64_t K, int64_t N, int64_t nr,
                      uint8_t *out) {
  int64_t k4 = (K + 3) / 4 * 4, panels = (N + nr - 1) / nr;
  uint32_t *sums = (uint32_t *)(void *)(out + panels * nr * k4);
  for (int64_t p = 0; p < panels; p++)
    for (int64_t c = 0; c < nr; c++) {
      int64_t j = p * nr + c;
      uint32_t s = 0;
      for (int64_t k = 0; k < k4; k++) {
        uint8_t v = 0;
        if (k < K && j < N) {
          uint8_t raw = b[k * N + j];
          s += sb ? (uint32_t)(int32_t)(int8_t)raw : raw;
          v = sb ? raw : (uint8_t)(raw ^ 0x80);
        }
        out[p * nr * k4 + (k / 4) * nr * 4 + c * 4 + k % 4] = v;
      }
      sums[j] = s;
    }
}

/* The half GEMM's layout (kernels-templates/gemm_half.c, "Prepacked B"):
 * bf16 in K blocks of HALF_KB rows (the last rounded up to even), each all
 * panels of nr columns, each panel's rows as k pairs [k / 2][col][k % 2]
 * (zero past K and N); f16 converted to f32, per panel [k][col] (zero past
 * N). */
enum { HALF_KB = 256 }; /* gemm_half.c's HG_KB */
static void pack_half(const char *b, ir_dtype dt, int64_t K, int64_t N, int64_t nr,
                      bool trans, void *out) {
  int64_t np = (N + nr - 1) / nr * nr;
  size_t bytes = rt_prepack_bytes(dt, K, N, nr);
  memset(out, 0, bytes);
  for (int64_t k = 0; k < K; k++) {
    int64_t k0 = k / HALF_KB * HALF_KB, kb = K - k0 < HALF_KB ? K - k0 : HALF_KB;
    int64_t kb2 = (kb + 1) / 2 * 2;
    for (int64_t j = 0; j < N; j++) {
      uint16_t v; /* the source may sit at any address (weight_source.c) */
      memcpy(&v, b + 2 * (trans ? j * K + k : k * N + j), 2);
      int64_t p = j / nr, c = j % nr;
      if (dt == IR_DT_F16)
        ((float *)out)[(p * K + k) * nr + c] = qb_f16((const uint8_t *)&v);
      else
        ((uint16_t *)out)[k0 * np + p * kb2 * nr + (k - k0) / 2 * nr * 2 + c * 2 + k % 2] = v;
    }
  }
}

/* Panels [p0, p1) of the f32 / f64 layout: each panel's rows of nr
 * elements, in panel order, so a range of panels is a range of out. */
static void pack_float_panels(const char *src, size_t es, int64_t K, int64_t N, int64_t nr,
                              bool trans, int64_t p0, int64_t p1, char *out) {
  char *dst = out + (size_t)p0 * (size_t)nr * (size_t)K * es;
  for (int64_t j0 = p0 * nr; j0 < N && j0 < p1 * nr; j0 += nr) {
    int64_t w = N - j0 < nr ? N - j0 : nr;
    for (int64_t k = 0; k < K; k++) {
      if (!trans) {
        memcpy(dst, src + ((size_t)k * (size_t)N + (size_t)j0) * es, (size_t)w * es);
      } else { /* B[k, j] = src[j * K + k]: once per bind, so element by element */
        for (int64_t j = 0; j < w; j++)
          memcpy(dst + (size_t)j * es, src + ((size_t)(j0 + j) * (size_t)K + (size_t)k) * es, es);
      }
      if (w < nr) memset(dst + (size_t)w * es, 0, (size_t)(nr - w) * es);
      dst += (size_t)nr * es;
    }
  }
}

void rt_prepack_pack(const void *b, ir_dtype dt, int64_t K, int64_t N, int64_t nr, bool trans,
                     void *out) {
  if (is_8bit(dt)) {
    pack_8bit(b, dt == IR_DT_SI8, K, N, nr, out);
    return;
  }
  if (ir_dtype_is_half(dt)) {
    pack_half(b, dt, K, N, nr, trans, out);
    return;
  }
  pack_float_panels(b, ir_dtype_size(dt), K, N, nr, trans, 0, (N + nr - 1) / nr, out);
}

/* One share of a spread pack: panels [n p / P, n (p + 1) / P) of P. */
typedef struct pack_share {
  const void *b;
  size_t es;
  int64_t K, N, nr, panels;
  bool trans;
  int shares;
  void *out;
} pack_share;

static int pack_one_share(void *arg, int k) {
  const pack_share *s = arg;
  int64_t p0 = s->panels * k / s->shares, p1 = s->panels * (k + 1) / s->shares;
  pack_float_panels(s->b, s->es, s->K, s->N, s->nr, s->trans, p0, p1, s->out);
  return 0;
}

int rt_prepack_shares(size_t bytes, int64_t panels, int cpus) {
  int64_t n = (int64_t)(bytes / RT_PREPACK_SHARE_BYTES);
  if (n > panels) n = panels;
  if (n > 4 * (int64_t)cpus) n = 4 * (int64_t)cpus; /* a few per CPU: a busy one takes fewer */
  return cpus > 1 && n > 1 ? (int)n : 1;
}

void rt_prepack_pack_spread(const void *b, ir_dtype dt, int64_t K, int64_t N, int64_t nr,
                            bool trans, void *out, int cpus) {
  int64_t panels = nr > 0 ? (N + nr - 1) / nr : 0;
  int shares = is_8bit(dt) || ir_dtype_is_half(dt)
                   ? 1
                   : rt_prepack_shares(rt_prepack_bytes(dt, K, N, nr), panels, cpus);
  if (shares <= 1) {
    rt_prepack_pack(b, dt, K, N, nr, trans, out);
    return;
  }
  pack_share s = {b, ir_dtype_size(dt), K, N, nr, panels, trans, shares, out};
  (void)rt_spread_run(pack_one_share, &s, shares, cpus); /* shares never fail */
}

/* Index in m->prepack of the source (weight w or constant node c), added
 * when new; -1 on out of memory. */
static int source_index(kiln_model *m, int w, int c, const ir_type *t, int64_t nr, bool trans,
                        int *cap) {
  for (int s = 0; s < m->nprepack; s++)
    if (m->prepack[s].weight == w && m->prepack[s].node == c && m->prepack[s].nr == nr &&
        m->prepack[s].trans == trans)
      return s;
  if (m->nprepack == *cap) {
    int nc = *cap ? *cap * 2 : 4;
    rt_prepack *p = realloc(m->prepack, (size_t)nc * sizeof *p);
    if (!p) return -1;
    m->prepack = p;
    *cap = nc;
  }
  rt_prepack *p = &m->prepack[m->nprepack];
  *p = (rt_prepack){.weight = w, .node = c, .dtype = t->dtype, .nr = nr, .trans = trans};
  /* a transposed source is N x K; a filter [R, S, C, F] is (R * S * C) x F */
  p->K = 1;
  for (int i = trans ? 1 : 0; i < (trans ? 2 : t->rank - 1); i++) {
    int64_t d = 0;
    ir_dim_is_const(t->dims[i], &d);
    if (__builtin_mul_overflow(p->K, d, &p->K)) return -1;
  }
  ir_dim_is_const(t->dims[trans ? 0 : t->rank - 1], &p->N);
  p->bytes = rt_prepack_bytes(t->dtype, p->K, p->N, nr);
  if (p->bytes == 0 && p->K > 0 && p->N > 0) return -1;
  return m->nprepack++;
}

int rt_prepack_init(kiln_model *m, kiln_status *st) {
  const ir_graph *g = m->g;
  int cap = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const ir_node *n = g->nodes[i];
    int operand;
    const ir_node *mm = packable(n, &operand);
    int64_t nr = mm ? ir_node_attr_int(mm, "kiln.packed_b", 0) : 0;
    if (nr <= 0) {
      if (carries_mark(n)) /* marked, yet no source this file can feed it */
        return rt_err(st, KILN_ERR_COMPILE, "mo.%s (%%%s): kiln.packed_b without a constant B",
                      ir_op_get(n->op)->name, n->out[0]->name);
      continue;
    }
    if (!m->prepack_use) {
      m->prepack_use = malloc((size_t)g->nnodes * sizeof *m->prepack_use);
      if (!m->prepack_use) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
      for (int k = 0; k < g->nnodes; k++) m->prepack_use[k] = (rt_prepack_use){-1, -1};
    }
    const ir_node *def = n->in[operand]->def;
    int w = def->op == IR_OP_CONSTANT_EXTERNAL ? m->weight_of_node[def->id] : -1;
    int c = w < 0 ? def->id : -1;
    bool trans = ir_node_attr_int(mm, "kiln.transpose_b", 0) != 0;
    int s = source_index(m, w, c, &n->in[operand]->type, nr, trans, &cap);
    if (s < 0) return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory");
    m->prepack_use[i] = (rt_prepack_use){operand, s};
  }
  for (int s = 0; s < m->nprepack; s++) { /* constants: now */
    rt_prepack *p = &m->prepack[s];
    if (p->node < 0) continue;
    if (!(p->data = rt_aligned_alloc_large(p->bytes)))
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY, "out of memory packing a constant (%zu bytes)",
                    p->bytes);
    rt_prepack_pack(m->const_data[p->node], p->dtype, p->K, p->N, p->nr, p->trans, p->data);
  }
  return 0;
}

int rt_prepack_bind_cpus(const kiln_model *m) {
  /* threads only where the process has or will have some anyway (the
   * context's pool, the quick tier's compile thread): a single-threaded
   * process keeps glibc's faster single-threaded malloc (model.c) */
  return kiln_context_num_threads(m->ctx) > 1 || m->quick_built > 0 ? rt_spread_cpus() : 1;
}

int rt_prepack_bind(kiln_model *m, int w, const kiln_tensor *t, kiln_status *st) {
  int cpus = rt_prepack_bind_cpus(m);
  for (int s = 0; s < m->nprepack; s++) {
    rt_prepack *p = &m->prepack[s];
    if (p->weight != w) continue;
    /* rows: all axes but the last (a filter's R, S, C), or N transposed */
    int64_t r0 = 1, r1 = t->rank > 0 ? t->shape[t->rank - 1] : -1;
    for (int i = 0; i < t->rank - 1; i++) r0 *= t->shape[i];
    bool ok = p->trans ? t->rank == 2 && r0 == p->N && r1 == p->K
                       : t->rank >= 2 && r0 == p->K && r1 == p->N;
    if (!ok)
      return rt_err(st, KILN_ERR_SHAPE, "weight '%s': expected a %lld x %lld matrix",
                    m->weights[w].port.name, (long long)(p->trans ? p->N : p->K),
                    (long long)(p->trans ? p->K : p->N));
    if (p->bytes && !t->data)
      return rt_err(st, KILN_ERR_INVALID_ARGUMENT, "weight '%s': tensor data is NULL",
                    m->weights[w].port.name);
    void *data = rt_aligned_alloc_large(p->bytes);
    if (!data)
      return rt_err(st, KILN_ERR_OUT_OF_MEMORY,
                    "weight '%s': out of memory packing it for the GEMM (%zu bytes)",
                    m->weights[w].port.name, p->bytes);
    rt_prepack_pack_spread(t->data, p->dtype, p->K, p->N, p->nr, p->trans, data, cpus);
    free(p->data);
    p->data = data;
  }
  return 0;
}

bool rt_prepack_covers(const kiln_model *m, int w) {
  const ir_graph *g = m->g;
  if (!m->prepack_use) return false;
  bool any = false;
  for (int j = 0; j < g->nnodes; j++) {
    const ir_node *n = g->nodes[j];
    for (int k = 0; k < n->nin; k++) {
      const ir_node *def = n->in[k]->def;
      if (!def || def->op != IR_OP_CONSTANT_EXTERNAL || m->weight_of_node[def->id] != w) continue;
      const rt_prepack_use *u = &m->prepack_use[j];
      if (u->operand != k || m->prepack[u->src].weight != w) return false;
      any = true;
    }
  }
  for (int o = 0; o < g->noutputs; o++) {
    const ir_node *def = g->outputs[o]->def;
    if (def && def->op == IR_OP_CONSTANT_EXTERNAL && m->weight_of_node[def->id] == w) return false;
  }
  return any;
}

void rt_prepack_free(kiln_model *m) {
  for (int s = 0; s < m->nprepack; s++) free(m->prepack[s].data);
  free(m->prepack);
  free(m->prepack_use);
  m->prepack = NULL;
  m->prepack_use = NULL;
  m->nprepack = 0;
}

size_t rt_model_prepack_bytes(const kiln_model *m) {
  size_t n = 0;
  for (int s = 0; m && s < m->nprepack; s++)
    if (m->prepack[s].data) n += m->prepack[s].bytes;
  return n;
}

int rt_model_prepack_sources(const kiln_model *m) { return m ? m->nprepack : 0; }
