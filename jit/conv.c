/* conv.c - lowering of mo.conv2d (x [N, H, W, C] NHWC, filter [R, S, C/g, F]
 * RSCF, optional bias [F]), for the host and for SIMT targets.
 *
 * Host: im2col and the GEMM template (kernels-templates/gemm.c, through
 * jit_gemm_entries), because NHWC with an RSCF filter is already a GEMM's
 * layout: row p of the result (one output pixel) is the pixel's receptive
 * field, read as R * S runs of C / g contiguous channels, times the filter
 * seen as a [R * S * C/g, F] matrix with row stride F. So
 *   - a 1x1 filter with stride 1, no padding and one group is the GEMM of
 *     the operand itself ([N * H * W, C] x [C, F]), with no copy;
 *   - otherwise, per block of at most CONV_MB pixels and per group, the
 *     pixels' fields are copied into a [pixels, R * S * C/g] buffer (a
 *     memcpy per tap, zeros for taps in the padding) and multiplied by the
 *     group's columns of the filter, the products stored straight into the
 *     result (ldc = F). The block keeps the copy in cache between its write
 *     and the GEMM's read.
 * Direct (AVX-512 hosts, f32, prepacked filter, every conv but the plain
 * 1x1): kernels-templates/conv.c, an implicit GEMM over the same packed
 * filter whose register tile reads each tap's channels straight from x
 * (zeros in the padding) and adds the bias itself: no im2col copy, no
 * malloc, and the accumulators stay in registers across the taps. On this
 * Xeon (AVX-512) im2col + the GEMM reached 0.65-0.80x oneDNN on ResNet-50's
 * 3x3 layers, ~11% of its time in the copy; the direct kernel (0.83-0.98x
 * there) removes the copy and the C passes between K blocks. Winograd was
 * not taken: it changes the rounding and helps only 3x3 stride 1. AVX2
 * hosts keep im2col + the GEMM, measured near oneDNN's speed there. The
 * plain 1x1 keeps the GEMM (through the direct kernel it measured slower:
 * 56x56 64 -> 256 0.97x -> 0.86x oneDNN). At the quick tier (jit.h) the
 * kernel calls the direct kernel prebuilt at x86-64-v4 (template.h) with
 * its geometry as run-time arguments: a 3x3 conv kernel then compiles in
 * ~40 ms instead of ~0.7 s, for 2-8% of speed on ResNet-50's 3x3 layers
 * at batch 1 (same sums, same bits), which the tier-up's full rebuild,
 * the template inlined with its sizes folded, wins back.
 * Prepacked filter (kiln.packed_b = NR, set by the runtime, src/prepack.c,
 * on a one-group conv whose filter is a weight or a constant): the filter
 * buffer holds the [R * S * C, F] matrix already in the template's panel
 * layout, packed once per bind, and every GEMM calls the _pex entry (no B
 * copy per block and per call, no workspace); a plain 1x1 then calls it per
 * block of CONV_PLAIN_MB pixels. _pex sums exactly as _ex, so where the
 * GEMM runs the results do not depend on whether the filter was packed;
 * the direct kernel sums in the GEMM's order only where K = R * S * C is
 * at most 256 (one K block), C at most 128 (one channel block) and there
 * is no bias (else rounding differs).
 * The pixels are split between the parts (jit_split_range); each part runs
 * its own blocks with its own buffer and calls the template whole (part 0
 * of 1), so nothing is shared between parts. The bias is added to each
 * finished block. The buffer and the template's workspace are one malloc
 * per call; if it fails the kernel returns JIT_KERR_NOMEM. The template
 * blocks K and uses fused multiply-adds, so sums are reordered against the
 * reference interpreter (which sums in double): rounding differences only.
 * SIMT: a grid-stride loop over the result elements, each thread one dot
 * product over its window (direct convolution), accumulating with fmuladd
 * in the dtype.
 * mo.conv2d_transpose and mo.conv3d, of the same class, are lowered by
 * conv_t.c and conv3d.c.
 * Assumes a verified node: f32 / f64 throughout, R, S and F static, C =
 * groups * C/g, the result dims from ops.def's rule. */
#include "lower.h"
#include "jit.h"
#include "simt.h"
#include "template.h"

#define CONV_MB 256 /* pixels per im2col block */
/* Pixels per GEMM of a plain 1x1 conv with a prepacked filter: one call
 * for all pixels passes over the whole result once per K block of the
 * template (256 deep), from L3 where it is large; blocks of the template's
 * MC keep each block's result in L2 across its K blocks (measured on this
 * AVX2 host, GFLOP/s, whole -> blocks of 144: 1568 x 256 x 1024 71 -> 82,
 * 6272 x 128 x 512 63 -> 75; 96 and 288 were no better). The
 * ceil(M / 144) blocks split the register tiles (jit_gemm_tile_rows, MR
 * rows) as evenly as they go, so only the last block ends in a partial
 * tile: equal blocks of pixels left one in each (196 = 98 + 98, each 16
 * tiles of 6 rows and one of 2; 102 + 94 measured +6% on 196 x 256 x
 * 1024). Every block but a lone one (M <= 144, the whole call) holds at
 * least 9 tiles, so none drops to the template's few-rows path (under 4
 * rows, summed differently) and the sums stay those of one call. (Without
 * a packed filter each block would pack the whole filter again: one
 * call.) */
#define CONV_PLAIN_MB 144

typedef struct convp {
  jit_win w;
  int64_t R, S, F, Fg, groups;
  ir_dtype dt;
  bool bias;
  LLVMValueRef H, W, C, Cg, Ho, Wo;
} convp;

static int conv_setup(jit_fn *f, convp *q) {
  const ir_node *n = f->node;
  if (n->nin < 2 || jit_win_read(f, n, &q->w) != 0) return -1;
  const ir_type *xt = &n->in[0]->type, *ft = &n->in[1]->type, *yt = &n->out[0]->type;
  q->groups = ir_node_attr_int(n, "groups", 1);
  if (ft->rank != 4 || !ir_dim_is_const(ft->dims[0], &q->R) ||
      !ir_dim_is_const(ft->dims[1], &q->S) ||
      !ir_dim_is_const(ft->dims[3], &q->F) || q->groups < 1 || q->F % q->groups != 0)
    return jit_fn_error(f, "mo.conv2d: the filter needs static R, S and F divisible by groups");
  q->Fg = q->F / q->groups;
  q->dt = xt->dtype;
  if (q->dt != IR_DT_F32 && q->dt != IR_DT_F64)
    return jit_fn_error(f, "mo.conv2d: dtype %s is not supported", ir_dtype_name(q->dt));
  q->bias = n->nin > 2;
  q->H = jit_dim(f, xt->dims[1]);
  q->W = jit_dim(f, xt->dims[2]);
  q->C = jit_dim(f, xt->dims[3]);
  q->Cg = jit_dim(f, ft->dims[2]);
  q->Ho = jit_dim(f, yt->dims[1]);
  q->Wo = jit_dim(f, yt->dims[2]);
  return 0;
}

static LLVMValueRef eptr(jit_fn *f, ir_dtype dt, LLVMValueRef base, LLVMValueRef idx) {
  return LLVMBuildInBoundsGEP2(f->b, jit_mem_type(f, dt), base, &idx, 1, "");
}

/* i = o * stride - pad + t * dil, and whether it is in [0, n). */
static LLVMValueRef tap(jit_fn *f, LLVMValueRef o, LLVMValueRef t, int64_t st, int64_t pad,
                        int64_t dil, LLVMValueRef n, LLVMValueRef *in) {
  LLVMValueRef i = LLVMBuildAdd(f->b, LLVMBuildSub(f->b, LLVMBuildMul(f->b, o, jit_i64(f, st), ""),
                                                   jit_i64(f, pad), ""),
                                LLVMBuildMul(f->b, t, jit_i64(f, dil), ""), "");
  *in = LLVMBuildICmp(f->b, LLVMIntULT, i, n, "");
  return i;
}

/* y[row, :] += bias for rows [r0, r1). */
static void add_bias(jit_fn *f, const convp *q, LLVMValueRef r0, LLVMValueRef r1) {
  LLVMValueRef Y = jit_out(f, 0), B = jit_in(f, 2);
  jit_loop L, O;
  LLVMValueRef row = jit_loop_begin(f, &L, r0, r1, "brow");
  LLVMValueRef base = jit_mul(f, row, jit_i64(f, q->F));
  LLVMValueRef o = jit_loop_begin(f, &O, jit_i64(f, 0), jit_i64(f, q->F), "o");
  LLVMValueRef yi = jit_add(f, base, o);
  LLVMValueRef sum = LLVMBuildFAdd(f->b, jit_load(f, q->dt, Y, yi), jit_load(f, q->dt, B, o), "");
  jit_store(f, q->dt, Y, yi, sum);
  jit_loop_end(f, &O);
  jit_loop_end(f, &L);
}

static LLVMValueRef ceil_div(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildUDiv(f->b, jit_add(f, a, LLVMBuildSub(f->b, b, jit_i64(f, 1), "")), b, "");
}

static LLVMValueRef min_i64(jit_fn *f, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* C = A B through the template's _ex entry, or its _pex one when B is
 * prepacked (packed: ldb and work unused). */
static void call_gemm(jit_fn *f, LLVMValueRef gemm, bool packed, LLVMValueRef M, LLVMValueRef N,
                      LLVMValueRef K, LLVMValueRef A, LLVMValueRef lda, LLVMValueRef B,
                      LLVMValueRef ldb, LLVMValueRef C, LLVMValueRef ldc, LLVMValueRef work) {
  LLVMValueRef null = LLVMConstPointerNull(f->t_ptr), one = jit_i64(f, 1), zero = jit_i64(f, 0);
  LLVMValueRef ex[14] = {M, N, K, A, lda, B, ldb, C, ldc, work, zero, one, null, null};
  LLVMValueRef pex[12] = {M, N, K, A, lda, B, C, ldc, zero, one, null, null};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(gemm), gemm, packed ? pex : ex, packed ? 12 : 14,
                 "");
}

/* One malloc of `elems` elements plus the template's workspace for an
 * (M, N, K) GEMM (none without work_fn: _pex takes none); returns
 * JIT_KERR_NOMEM from the kernel when it fails. *work points past the
 * first `elems` elements. */
static LLVMValueRef workspace(jit_fn *f, const convp *q, LLVMValueRef work_fn, LLVMValueRef elems,
                              LLVMValueRef M, LLVMValueRef N, LLVMValueRef K, LLVMValueRef *work) {
  LLVMValueRef wargs[3] = {M, N, K}, wel = jit_i64(f, 0);
  if (work_fn)
    wel = LLVMBuildCall2(f->b, LLVMGlobalGetValueType(work_fn), work_fn, wargs, 3, "");
  LLVMValueRef es = jit_i64(f, (int64_t)ir_dtype_size(q->dt));
  /* 64 spare bytes: never a malloc(0), whose NULL would read as a failure */
  LLVMValueRef bytes = jit_add(f, jit_mul(f, jit_add(f, elems, wel), es), jit_i64(f, 64));
  LLVMTypeRef malloc_ty = LLVMFunctionType(f->t_ptr, &f->t_i64, 1, 0);
  LLVMValueRef malloc_fn = jit_libc_fn(f, "malloc", malloc_ty);
  LLVMValueRef buf = LLVMBuildCall2(f->b, malloc_ty, malloc_fn, &bytes, 1, "conv.buf");
  jit_fail_if(f, LLVMBuildIsNull(f->b, buf, ""), JIT_KERR_NOMEM);
  *work = eptr(f, q->dt, buf, elems);
  return buf;
}

static void release(jit_fn *f, LLVMValueRef buf) {
  LLVMTypeRef ty = LLVMFunctionType(f->t_void, &f->t_ptr, 1, 0);
  LLVMBuildCall2(f->b, ty, jit_libc_fn(f, "free", ty), &buf, 1, "");
}

/* The direct kernel (kernels-templates/conv.c) over the pixels [lo, hi):
 * the taps read from x in place, the bias added in the kernel. */
static int lower_direct(jit_fn *f, const convp *q, LLVMValueRef lo, LLVMValueRef hi) {
  /* the quick tier calls the engine's prebuilt entry, the same code
   * compiled once at v4 (template.h): the kernel compiles in milliseconds,
   * not ~0.5 s, and runs 2-8% slower than the template inlined with its
   * sizes folded, which the full tier (the tier-up's rebuild) does */
  const char *entry = "kiln_conv_f32_v16_pex", *pre = f->prebuilt_conv;
  LLVMValueRef fn = pre ? jit_template_extern(f, JIT_TMPL_CONV, entry, pre)
                        : jit_template_function(f, JIT_TMPL_CONV, entry);
  if (!fn) return -1;
  const jit_win *w = &q->w;
  LLVMValueRef bias = q->bias ? jit_in(f, 2) : LLVMConstPointerNull(f->t_ptr);
  LLVMValueRef args[20] = {lo,
                           hi,
                           q->H,
                           q->W,
                           q->C,
                           q->Ho,
                           q->Wo,
                           jit_i64(f, q->F),
                           jit_i64(f, q->R),
                           jit_i64(f, q->S),
                           jit_i64(f, w->st[0]),
                           jit_i64(f, w->st[1]),
                           jit_i64(f, w->pad[0]),
                           jit_i64(f, w->pad[2]),
                           jit_i64(f, w->dil[0]),
                           jit_i64(f, w->dil[1]),
                           jit_in(f, 0),
                           jit_in(f, 1),
                           bias,
                           jit_out(f, 0)};
  LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 20, "");
  return f->failed ? -1 : 0;
}

int jit_lower_conv(jit_fn *f) {
  if (f->node->op != IR_OP_CONV2D && ir_node_attr_int(f->node, "kiln.packed_b", 0))
    return jit_fn_error(f, "kiln.packed_b is read by mo.conv2d only");
  if (f->node->op == IR_OP_CONV2D_TRANSPOSE) return jit_lower_conv_t(f);
  if (f->node->op == IR_OP_CONV3D) return jit_lower_conv3d(f);
  convp q;
  if (conv_setup(f, &q) != 0) return -1;
  const jit_win *w = &q.w;
  /* the filter prepacked by the runtime (src/prepack.c): the width it
   * packed with must be the one this target's entry reads */
  int64_t packed = ir_node_attr_int(f->node, "kiln.packed_b", 0);
  if (packed) {
    int64_t want = jit_gemm_panel_width(jit_target_has(f, "avx512f"), q.dt);
    if (q.groups != 1 || packed != want)
      return jit_fn_error(f, "mo.conv2d: kiln.packed_b = %lld needs one group and this target's "
                          "panel width %lld", (long long)packed, (long long)want);
  }
  bool plain = q.R == 1 && q.S == 1 && w->st[0] == 1 && w->st[1] == 1 && q.groups == 1 &&
               !w->pad[0] && !w->pad[1] && !w->pad[2] && !w->pad[3];
  LLVMValueRef pix = jit_numel_range(f, &f->node->out[0]->type, 0, 3), lo, hi;
  jit_split_range(f, pix, &lo, &hi);
  if (packed && !plain && q.dt == IR_DT_F32 && jit_target_has(f, "avx512f"))
    return lower_direct(f, &q, lo, hi);
  LLVMValueRef gemm, work_fn = NULL;
  if (jit_gemm_entries(f, q.dt, packed ? "pex" : "ex", true, &gemm, packed ? NULL : &work_fn) != 0)
    return -1;
  LLVMValueRef X = jit_in(f, 0), Fl = jit_in(f, 1), Y = jit_out(f, 0), zero = jit_i64(f, 0);
  LLVMValueRef Fv = jit_i64(f, q.F), Fgv = jit_i64(f, q.Fg);
  LLVMValueRef M = LLVMBuildSub(f->b, hi, lo, "m");
  if (plain && packed) { /* the same, in blocks of at most CONV_PLAIN_MB pixels */
    /* nb = ceil(M / CONV_PLAIN_MB) blocks (at least one) share the ceil(M /
     * MR) register tiles: tq each, one more for the first tr */
    LLVMValueRef one = jit_i64(f, 1);
    LLVMValueRef mr = jit_i64(f, jit_gemm_tile_rows(jit_target_has(f, "avx512f")));
    LLVMValueRef nb = ceil_div(f, M, jit_i64(f, CONV_PLAIN_MB));
    nb = LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntULT, nb, one, ""), one, nb, "");
    LLVMValueRef tiles = ceil_div(f, M, mr);
    LLVMValueRef tq = LLVMBuildUDiv(f->b, tiles, nb, ""), tr = LLVMBuildURem(f->b, tiles, nb, "");
    jit_loop Pb;
    LLVMValueRef blk = jit_loop_begin(f, &Pb, zero, nb, "pblk");
    LLVMValueRef t0 = jit_add(f, jit_mul(f, blk, tq), min_i64(f, blk, tr));
    LLVMValueRef t1 = jit_add(f, jit_mul(f, jit_add(f, blk, one), tq),
                              min_i64(f, jit_add(f, blk, one), tr));
    LLVMValueRef m0 = jit_add(f, lo, jit_mul(f, t0, mr));
    LLVMValueRef m = LLVMBuildSub(f->b, min_i64(f, jit_add(f, lo, jit_mul(f, t1, mr)), hi), m0, "");
    call_gemm(f, gemm, true, m, Fv, q.C, eptr(f, q.dt, X, jit_mul(f, m0, q.C)), q.C, Fl, Fv,
              eptr(f, q.dt, Y, jit_mul(f, m0, Fv)), Fv, NULL);
    if (q.bias) add_bias(f, &q, m0, jit_add(f, m0, m));
    jit_loop_end(f, &Pb);
    return f->failed ? -1 : 0;
  }
  if (plain) { /* [pixels, C] x [C, F]: the operand is the GEMM's A; B not packed (above) */
    LLVMValueRef work, buf = workspace(f, &q, work_fn, zero, M, Fv, q.C, &work);
    call_gemm(f, gemm, false, M, Fv, q.C, eptr(f, q.dt, X, jit_mul(f, lo, q.C)), q.C, Fl, Fv,
              eptr(f, q.dt, Y, jit_mul(f, lo, Fv)), Fv, work);
    release(f, buf);
    if (q.bias) add_bias(f, &q, lo, hi);
    return f->failed ? -1 : 0;
  }
  LLVMValueRef K = jit_mul(f, jit_i64(f, q.R * q.S), q.Cg), MB = jit_i64(f, CONV_MB);
  LLVMValueRef work, buf = workspace(f, &q, work_fn, jit_mul(f, MB, K), MB, Fgv, K, &work);
  LLVMValueRef es = jit_i64(f, (int64_t)ir_dtype_size(q.dt));
  LLVMValueRef run_bytes = jit_mul(f, q.Cg, es);
  unsigned al = (unsigned)ir_dtype_size(q.dt);
  LLVMValueRef nblk = LLVMBuildUDiv(f->b, jit_add(f, M, jit_i64(f, CONV_MB - 1)), MB, "");
  jit_loop Bk, G, I, Rr, Ss;
  LLVMValueRef blk = jit_loop_begin(f, &Bk, zero, nblk, "blk");
  LLVMValueRef m0 = jit_add(f, lo, jit_mul(f, blk, MB));
  LLVMValueRef rest = LLVMBuildSub(f->b, hi, m0, "");
  LLVMValueRef m =
      LLVMBuildSelect(f->b, LLVMBuildICmp(f->b, LLVMIntSLT, rest, MB, ""), rest, MB, "");
  LLVMValueRef g = jit_loop_begin(f, &G, zero, jit_i64(f, q.groups), "g");
  LLVMValueRef cbase = jit_mul(f, g, q.Cg);
  LLVMValueRef i = jit_loop_begin(f, &I, zero, m, "i");
  LLVMValueRef p = jit_add(f, m0, i);
  LLVMValueRef ow = LLVMBuildURem(f->b, p, q.Wo, ""), t = LLVMBuildUDiv(f->b, p, q.Wo, "");
  LLVMValueRef oh = LLVMBuildURem(f->b, t, q.Ho, ""), b = LLVMBuildUDiv(f->b, t, q.Ho, "");
  LLVMValueRef row = jit_mul(f, i, K);
  LLVMValueRef r = jit_loop_begin(f, &Rr, zero, jit_i64(f, q.R), "r");
  LLVMValueRef inh, ih = tap(f, oh, r, w->st[0], w->pad[0], w->dil[0], q.H, &inh);
  LLVMValueRef s = jit_loop_begin(f, &Ss, zero, jit_i64(f, q.S), "s");
  LLVMValueRef inw, iw = tap(f, ow, s, w->st[1], w->pad[2], w->dil[1], q.W, &inw);
  LLVMValueRef dst = eptr(f, q.dt, buf,
                          jit_add(f, row, jit_mul(f, jit_add(f, jit_mul(f, r, jit_i64(f, q.S)), s),
                                                  q.Cg)));
  LLVMBasicBlockRef cp = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tap.in");
  LLVMBasicBlockRef zf = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tap.pad");
  LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(f->ctx, f->fn, "tap.next");
  LLVMBuildCondBr(f->b, LLVMBuildAnd(f->b, inh, inw, ""), cp, zf);
  LLVMPositionBuilderAtEnd(f->b, cp);
  LLVMValueRef xrow = jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, b, q.H), ih), q.W), iw);
  LLVMValueRef src = jit_add(f, jit_mul(f, xrow, q.C), cbase);
  LLVMBuildMemCpy(f->b, dst, al, eptr(f, q.dt, X, src), al, run_bytes);
  LLVMBuildBr(f->b, nx);
  LLVMPositionBuilderAtEnd(f->b, zf);
  LLVMBuildMemSet(f->b, dst, LLVMConstInt(f->t_i8, 0, 0), run_bytes, al);
  LLVMBuildBr(f->b, nx);
  LLVMPositionBuilderAtEnd(f->b, nx);
  jit_loop_end(f, &Ss);
  jit_loop_end(f, &Rr);
  jit_loop_end(f, &I);
  call_gemm(f, gemm, packed, m, Fgv, K, buf, K, eptr(f, q.dt, Fl, jit_mul(f, g, Fgv)), Fv,
            eptr(f, q.dt, Y, jit_add(f, jit_mul(f, m0, Fv), jit_mul(f, g, Fgv))), Fv, work);
  jit_loop_end(f, &G);
  if (q.bias) add_bias(f, &q, m0, jit_add(f, m0, m));
  jit_loop_end(f, &Bk);
  release(f, buf);
  return f->failed ? -1 : 0;
}

int jit_simt_lower_conv(jit_simt_fn *sf) {
  if (sf->f.node->op == IR_OP_CONV2D_TRANSPOSE) return jit_simt_lower_conv_t(sf);
  if (sf->f.node->op == IR_OP_CONV3D) return jit_simt_lower_conv3d(sf);
  jit_fn *f = &sf->f;
  if (ir_node_attr_int(f->node, "kiln.packed_b", 0)) /* the CPU runtime's, never a device's */
    return jit_fn_error(f, "mo.conv2d: kiln.packed_b is not supported on SIMT targets");
  convp q;
  if (conv_setup(f, &q) != 0) return -1;
  const jit_win *w = &q.w;
  LLVMValueRef zero = jit_i64(f, 0), Fv = jit_i64(f, q.F);
  LLVMTypeRef et = jit_type(f, q.dt);
  LLVMValueRef acc_slot = jit_alloca(f, et, "acc");
  jit_simt_loop l;
  LLVMValueRef e =
      jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, &f->node->out[0]->type, 0, 4));
  LLVMValueRef dims[4] = {NULL, q.Ho, q.Wo, Fv}, co[4];
  jit_simt_unravel(f, e, dims, 4, co);
  LLVMValueRef cbase = jit_mul(f, LLVMBuildUDiv(f->b, co[3], jit_i64(f, q.Fg), ""), q.Cg);
  LLVMBuildStore(f->b, q.bias ? jit_load(f, q.dt, jit_in(f, 2), co[3]) : jit_fconst(f, q.dt, 0),
                 acc_slot);
  jit_loop Rr, Ss, Cc;
  LLVMValueRef r = jit_loop_begin(f, &Rr, zero, jit_i64(f, q.R), "r");
  LLVMValueRef inh, ih = tap(f, co[1], r, w->st[0], w->pad[0], w->dil[0], q.H, &inh);
  LLVMValueRef s = jit_loop_begin(f, &Ss, zero, jit_i64(f, q.S), "s");
  LLVMValueRef inw, iw = tap(f, co[2], s, w->st[1], w->pad[2], w->dil[1], q.W, &inw);
  jit_simt_if ib;
  jit_simt_if_begin(f, &ib, LLVMBuildAnd(f->b, inh, inw, ""));
  LLVMValueRef xrow = jit_add(f, jit_mul(f, jit_add(f, jit_mul(f, co[0], q.H), ih), q.W), iw);
  LLVMValueRef xb = jit_add(f, jit_mul(f, xrow, q.C), cbase);
  LLVMValueRef fb = jit_mul(f, jit_add(f, jit_mul(f, r, jit_i64(f, q.S)), s), q.Cg);
  LLVMValueRef c = jit_loop_begin(f, &Cc, zero, q.Cg, "c");
  LLVMValueRef args[3] = {jit_load(f, q.dt, jit_in(f, 0), jit_add(f, xb, c)),
                          jit_load(f, q.dt, jit_in(f, 1),
                                   jit_add(f, jit_mul(f, jit_add(f, fb, c), Fv), co[3])),
                          LLVMBuildLoad2(f->b, et, acc_slot, "")};
  LLVMBuildStore(f->b, jit_intrinsic(f, "llvm.fmuladd", et, args, 3), acc_slot);
  jit_loop_end(f, &Cc);
  jit_simt_if_end(f, &ib);
  jit_loop_end(f, &Ss);
  jit_loop_end(f, &Rr);
  jit_store(f, q.dt, jit_out(f, 0), e, LLVMBuildLoad2(f->b, et, acc_slot, ""));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
