/* prepack.h - internal to src/: constant GEMM operands packed once (prepack.c).
 *
 * A mo.matmul whose B operand is a mo.constant or a mo.constant.external
 * (a weight) of static rank-2 shape, f32 or f64, reads B in the GEMM
 * template's panel layout (kernels-templates/gemm.c, "Prepacked B"); so
 * does a one-group mo.conv2d whose filter [R, S, C, F] (static, f32 or
 * f64) is one, read as the (R * S * C) x F matrix of its GEMMs
 * (jit/conv.c); and a mo.matmul.integer's ui8 / si8 B of static rank 2
 * where the host has AVX2 (jit_mmi_panel_width: its own layout of
 * 4-byte k groups and column sums, kernels-templates/gemm_int8_vnni.h).
 * The model marks such nodes with the attribute kiln.packed_b = NR (the panel
 * width of the host's GEMM, jit_gemm_panel_width) before their kernel texts
 * are made, so the packed kernels have their own cache keys, and keeps one
 * packed copy per source: a constant's is made at compile, a weight's at
 * each kiln_model_bind_weight. The execute passes the packed copy in place
 * of that operand's buffer; every other use of the weight or constant (an
 * op that is not marked, a matmul's A operand) still gets the original data.
 *
 * The packed layout does not depend on M, on the parts a call is split in,
 * nor on the epilogue: one copy serves every batch size, every specialized
 * variant and every thread. */
#ifndef KILN_SRC_PREPACK_H
#define KILN_SRC_PREPACK_H

#include "rt.h"

/* One packed source of a model. */
typedef struct rt_prepack {
  int weight;     /* weight index (m->weights), or -1 for a mo.constant */
  int node;       /* the mo.constant node, or -1 for a weight */
  ir_dtype dtype;
  int64_t K, N;   /* B is K x N (a filter: K = R * S * C) */
  int64_t nr;     /* panel width */
  bool trans;     /* the source is stored N x K (a matmul with kiln.transpose_b) */
  size_t bytes;   /* of the packed copy: ceil(N / nr) * nr * K elements */
  void *data;     /* rt_aligned_alloc_large'd; NULL for a weight not bound yet */
} rt_prepack;

/* Where node i of the model reads a packed copy: operand `operand` (-1:
 * none) gets m->prepack[src].data. */
typedef struct rt_prepack_use {
  int operand;
  int src;
} rt_prepack_use;

/* Mark every eligible matmul of the prepared (verified, fused) graph g with
 * kiln.packed_b for ctx's JIT target: top-level ones (B = operand 1), the
 * matmul of a mo.fused body whose B is a body input that nothing else in
 * the body reads, and top-level one-group conv2d (the filter = operand 1).
 * A graph that already carries kiln.packed_b is rejected (the attribute is
 * the runtime's: a kernel trusting it on raw data would read garbage).
 * rt_pipeline_prepare (pipeline.c) calls it last, so everything that
 * computes a model's kernel keys marks the graph alike.
 * Returns the number of nodes marked, or -1 with st filled. */
int rt_prepack_mark(ir_graph *g, const kiln_context *ctx, kiln_status *st);

/* After marking and collect_sources: the model's sources and per-node uses,
 * constants packed now. 0, or -1 with st filled (out of memory). */
int rt_prepack_init(kiln_model *m, kiln_status *st);

/* kiln_model_bind_weight's part: weight w is about to be bound to t (its
 * dtype and shape already checked): pack t's data into a new copy (on
 * rt_prepack_bind_cpus CPUs, rt_prepack_pack_spread), then free the old
 * one. On failure nothing changes (the old binding and copy
 * stay). 0, or -1 with st filled. */
int rt_prepack_bind(kiln_model *m, int w, const kiln_tensor *t, kiln_status *st);

/* The CPUs rt_prepack_bind packs on: every CPU (rt_spread_cpus) when m's
 * context runs several threads or m's kernels were built quick, else 1. */
int rt_prepack_bind_cpus(const kiln_model *m);

/* Whether every read of weight w is an operand that gets its packed copy
 * (no other op, no graph output, no alias reads the weight itself): the
 * model then needs no other copy of its data (kiln_model_take_weight). */
bool rt_prepack_covers(const kiln_model *m, int w);

/* Free the model's packed copies and tables (kiln_model_free). */
void rt_prepack_free(kiln_model *m);

/* Pack row-major B (K x N, element type dt, row stride N; with trans, b
 * holds B transposed: N x K, row stride K) into out in the template's
 * layout with panels nr wide (zeros past column N). out has room for
 * rt_prepack_bytes(dt, K, N, nr) bytes. b may sit at any address (each
 * element is read with memcpy): a weight's bytes in a file mapping are
 * packed where they lie. */
void rt_prepack_pack(const void *b, ir_dtype dt, int64_t K, int64_t N, int64_t nr, bool trans,
                     void *out);
/* Bytes of that layout; 0 on overflow or bad arguments. */
size_t rt_prepack_bytes(ir_dtype dt, int64_t K, int64_t N, int64_t nr);

/* For tests: bytes of packed copies m holds now, and how many sources
 * (weights and constants) it packs. */
size_t rt_model_prepack_bytes(const kiln_model *m);
int rt_model_prepack_sources(const kiln_model *m);

/* The same, f32 / f64 split by panels over up to cpus threads
 * (rt_spread_run: the caller and cpus - 1 started for this call) when the
 * copy is large enough to pay for them (rt_prepack_shares); other dtypes,
 * and small copies, on the calling thread. The bytes written do not depend
 * on the split. */
void rt_prepack_pack_spread(const void *b, ir_dtype dt, int64_t K, int64_t N, int64_t nr,
                            bool trans, void *out, int cpus);

/* How many shares rt_prepack_pack_spread cuts a copy of `bytes` in
 * `panels` panels into on cpus CPUs: one per RT_PREPACK_SHARE_BYTES, at
 * most one per panel and four per CPU; 1 (no thread started) below two
 * shares or on one CPU. */
int rt_prepack_shares(size_t bytes, int64_t panels, int cpus);
#define RT_PREPACK_SHARE_BYTES ((size_t)512 << 10)

#endif
