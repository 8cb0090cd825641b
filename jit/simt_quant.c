/* simt_quant.c - the SIMT lowering of mo.dequantize and mo.qmatmul over GGUF
 * blocks (ir/qblock.h's layouts), one result element per thread in a
 * grid-stride loop (simt.h's elements launch):
 *   dequantize  element e of the result decodes its own value from its
 *               block (block e / elems at byte (e / elems) * bytes: the
 *               rows of blocks and of elements are both dense);
 *   qmatmul     result [m, n] walks the K / elems blocks of lhs row m and
 *               weight row n: it quantizes the lhs block itself (Q8_0 for
 *               q4_0 / q8_0, Q8_K for the K-quants: amax, the scale, round
 *               to nearest even, clamp), takes the exact integer dot with
 *               the weight block, scales it in f32 in qblock.h's order and
 *               adds the block terms in double, rounded once to f32: the
 *               interpreter's arithmetic (ir/interp_quant.c) step for step.
 * No float op here carries a fast-math flag, so nothing is contracted into
 * an fma and each term is the interpreter's where the target rounds f32
 * IEEE-wise (simt-emu; PTX and AMDGCN for mul, add, div and roundeven).
 * A thread quantizes the lhs blocks again for each weight row it computes:
 * straightforward, not fast (the host's kernels-templates/qmatmul.c is the
 * fast path). Assumes the shape rule (ir/infer_quant.c) held: a known
 * encoding, ui8 blocks with a static last dim of whole blocks, K matching. */
#include <math.h>

#include "../ir/qblock.h"
#include "simt.h"

static LLVMValueRef c32(jit_fn *f, int v) {
  return LLVMConstInt(f->t_i32, (unsigned long long)(int64_t)v, 1);
}
static LLVMValueRef cf(jit_fn *f, float v) { return LLVMConstReal(f->t_f32, v); }
static LLVMValueRef at(jit_fn *f, LLVMValueRef base, int64_t k) {
  return jit_add(f, base, jit_i64(f, k));
}

/* The byte at p[off] (i64) as i32: zero- or sign-extended. */
static LLVMValueRef byte_at(jit_fn *f, LLVMValueRef p, LLVMValueRef off) {
  return LLVMBuildZExt(f->b, jit_load(f, IR_DT_UI8, p, off), f->t_i32, "");
}
static LLVMValueRef sbyte_at(jit_fn *f, LLVMValueRef p, LLVMValueRef off) {
  return LLVMBuildSExt(f->b, jit_load(f, IR_DT_UI8, p, off), f->t_i32, "");
}

/* The f16 at p[off] (two little-endian bytes, any alignment) as f32, exact. */
static LLVMValueRef f16_at(jit_fn *f, LLVMValueRef p, LLVMValueRef off) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef h = LLVMBuildOr(b, byte_at(f, p, off),
                               LLVMBuildShl(b, byte_at(f, p, at(f, off, 1)), c32(f, 8), ""), "");
  h = LLVMBuildBitCast(b, LLVMBuildTrunc(b, h, f->t_i16, ""), f->t_f16, "");
  return LLVMBuildFPExt(b, h, f->t_f32, "");
}

static LLVMValueRef shr(jit_fn *f, LLVMValueRef v, LLVMValueRef s) {
  return LLVMBuildLShr(f->b, v, s, "");
}
static LLVMValueRef band(jit_fn *f, LLVMValueRef v, int m) {
  return LLVMBuildAnd(f->b, v, c32(f, m), "");
}
static LLVMValueRef i2f(jit_fn *f, LLVMValueRef v) {
  return LLVMBuildSIToFP(f->b, v, f->t_f32, "");
}

/* Sub-block j's 6-bit scale and min of q4_k / q5_k (qb_scale_min_k4); the
 * 12 packed bytes at p[off]. */
static void scale_min(jit_fn *f, LLVMValueRef p, LLVMValueRef off, int j, LLVMValueRef *sc,
                      LLVMValueRef *m) {
  LLVMBuilderRef b = f->b;
  if (j < 4) {
    *sc = band(f, byte_at(f, p, at(f, off, j)), 63);
    *m = band(f, byte_at(f, p, at(f, off, j + 4)), 63);
    return;
  }
  LLVMValueRef q4 = byte_at(f, p, at(f, off, j + 4)), lo = byte_at(f, p, at(f, off, j - 4));
  LLVMValueRef hi = byte_at(f, p, at(f, off, j));
  *sc = LLVMBuildOr(b, band(f, q4, 0xf), LLVMBuildShl(b, shr(f, lo, c32(f, 6)), c32(f, 4), ""), "");
  *m = LLVMBuildOr(b, shr(f, q4, c32(f, 4)), LLVMBuildShl(b, shr(f, hi, c32(f, 6)), c32(f, 4), ""),
                   "");
}

/* q6_k element i's (i32) q6 - 32 and its group's int8 scale, as i32, from
 * the block at p[blk] (qb_q6_k_values: half h of 128, quarter r of 32, lane
 * l; the scale of element i is the int8 at 192 + i / 16). */
static void q6_value(jit_fn *f, LLVMValueRef p, LLVMValueRef blk, LLVMValueRef i,
                     LLVMValueRef *v, LLVMValueRef *sc) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef h = shr(f, i, c32(f, 7)), r = band(f, shr(f, i, c32(f, 5)), 3);
  LLVMValueRef l = band(f, i, 31);
  LLVMValueRef qlo =
      LLVMBuildAdd(b, LLVMBuildMul(b, h, c32(f, 64), ""),
                   LLVMBuildAdd(b, l, LLVMBuildShl(b, band(f, r, 1), c32(f, 5), ""), ""), "");
  LLVMValueRef qho = LLVMBuildAdd(b, c32(f, 128),
                                  LLVMBuildAdd(b, LLVMBuildMul(b, h, c32(f, 32), ""), l, ""), "");
  LLVMValueRef ql = byte_at(f, p, jit_add(f, blk, LLVMBuildZExt(b, qlo, f->t_i64, "")));
  LLVMValueRef qh = byte_at(f, p, jit_add(f, blk, LLVMBuildZExt(b, qho, f->t_i64, "")));
  LLVMValueRef nib = band(f, shr(f, ql, LLVMBuildShl(b, shr(f, r, c32(f, 1)), c32(f, 2), "")), 0xf);
  LLVMValueRef two = band(f, shr(f, qh, LLVMBuildShl(b, r, c32(f, 1), "")), 3);
  *v = LLVMBuildSub(b, LLVMBuildOr(b, nib, LLVMBuildShl(b, two, c32(f, 4), ""), ""), c32(f, 32),
                    "");
  *sc = sbyte_at(f, p,
                 jit_add(f, at(f, blk, 192), LLVMBuildZExt(b, shr(f, i, c32(f, 4)), f->t_i64, "")));
}

/* ---- dequantize ---- */

/* Element i (i32, < QB_ELEMS) of the block at p[blk] (qb_decode). */
static LLVMValueRef decode_elem(jit_fn *f, qb_encoding e, LLVMValueRef p, LLVMValueRef blk,
                                LLVMValueRef i) {
  LLVMBuilderRef b = f->b;
  LLVMValueRef i64 = LLVMBuildZExt(b, i, f->t_i64, "");
  switch (e) {
  case QB_Q4_0: { /* (nibble - 8) * d: low nibbles of bytes 0-15, then high */
    LLVMValueRef hi = LLVMBuildICmp(b, LLVMIntUGE, i, c32(f, 16), "");
    LLVMValueRef lane = LLVMBuildZExt(b, band(f, i, 15), f->t_i64, "");
    LLVMValueRef byte = byte_at(f, p, jit_add(f, at(f, blk, 2), lane));
    LLVMValueRef nib = band(f, shr(f, byte, jit_sel(f, hi, c32(f, 4), c32(f, 0))), 0xf);
    return jit_fmul(f, i2f(f, LLVMBuildSub(b, nib, c32(f, 8), "")), f16_at(f, p, blk));
  }
  case QB_Q8_0:
    return jit_fmul(f, i2f(f, sbyte_at(f, p, jit_add(f, at(f, blk, 2), i64))), f16_at(f, p, blk));
  case QB_Q4_K:
  case QB_Q5_K: { /* chunk c of 64: sub-block 2c (low nibbles), 2c + 1 (high) */
    bool q5 = e == QB_Q5_K;
    LLVMValueRef c = shr(f, i, c32(f, 6)), high = band(f, shr(f, i, c32(f, 5)), 1);
    LLVMValueRef l = band(f, i, 31),
                 j = LLVMBuildOr(b, LLVMBuildShl(b, c, c32(f, 1), ""), high, "");
    /* the sub-block's scale and min: qb_scale_min_k4 for a run-time j */
    LLVMValueRef scales = at(f, blk, 4), small = LLVMBuildICmp(b, LLVMIntULT, j, c32(f, 4), "");
    LLVMValueRef j64 = LLVMBuildZExt(b, j, f->t_i64, "");
    LLVMValueRef jm4 = LLVMBuildZExt(b, band(f, j, 3), f->t_i64, ""); /* j - 4 for j >= 4 */
    LLVMValueRef bj = byte_at(f, p, jit_add(f, scales, j64));
    LLVMValueRef bj4 = byte_at(f, p, jit_add(f, scales, at(f, jm4, 4)));  /* q[j + 4] (j < 4) */
    LLVMValueRef bjp4 = byte_at(f, p, jit_add(f, scales, at(f, jm4, 8))); /* q[j + 4] (j >= 4) */
    LLVMValueRef bjm4 = byte_at(f, p, jit_add(f, scales, jm4));           /* q[j - 4] */
    LLVMValueRef sc_big = LLVMBuildOr(b, band(f, bjp4, 0xf),
                                      LLVMBuildShl(b, shr(f, bjm4, c32(f, 6)), c32(f, 4), ""), "");
    LLVMValueRef m_big = LLVMBuildOr(b, shr(f, bjp4, c32(f, 4)),
                                     LLVMBuildShl(b, shr(f, bj, c32(f, 6)), c32(f, 4), ""), "");
    LLVMValueRef sc = jit_sel(f, small, band(f, bj, 63), sc_big);
    LLVMValueRef m = jit_sel(f, small, band(f, bj4, 63), m_big);
    LLVMValueRef qs = at(f, blk, q5 ? 48 : 16);
    LLVMValueRef l64 = LLVMBuildZExt(b, l, f->t_i64, "");
    LLVMValueRef c32off = LLVMBuildZExt(b, LLVMBuildShl(b, c, c32(f, 5), ""), f->t_i64, "");
    LLVMValueRef q = byte_at(f, p, jit_add(f, qs, jit_add(f, c32off, l64)));
    LLVMValueRef nib = band(f, shr(f, q, LLVMBuildShl(b, high, c32(f, 2), "")), 0xf);
    if (q5) { /* the fifth bit: bit j of qh[l] */
      LLVMValueRef qh = byte_at(f, p, jit_add(f, at(f, blk, 16), l64));
      nib = LLVMBuildOr(b, nib, LLVMBuildShl(b, band(f, shr(f, qh, j), 1), c32(f, 4), ""), "");
    }
    LLVMValueRef dj = jit_fmul(f, f16_at(f, p, blk), i2f(f, sc));
    LLVMValueRef mj = jit_fmul(f, f16_at(f, p, at(f, blk, 2)), i2f(f, m));
    return jit_fsub(f, jit_fmul(f, dj, i2f(f, nib)), mj);
  }
  default: { /* q6_k: (d * scale) * v, in qb_decode_q6_k's order */
    LLVMValueRef v, sc;
    q6_value(f, p, blk, i, &v, &sc);
    LLVMValueRef d = f16_at(f, p, at(f, blk, 208));
    return jit_fmul(f, jit_fmul(f, d, i2f(f, sc)), i2f(f, v));
  }
  }
}

static int encoding_of(jit_fn *f, qb_encoding *e) {
  int enc = qb_from_name(ir_node_attr_string(f->node, "encoding", ""));
  if (enc < 0) return jit_fn_error(f, "mo.%s: unknown encoding", ir_op_get(f->node->op)->name);
  *e = (qb_encoding)enc;
  return 0;
}

int jit_simt_lower_dequantize(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  qb_encoding e;
  if (encoding_of(f, &e) < 0) return -1;
  jit_simt_loop l;
  LLVMValueRef idx = jit_simt_grid_loop_begin(
      sf, &l, jit_numel_range(f, &f->node->out[0]->type, 0, f->node->out[0]->type.rank));
  LLVMValueRef elems = jit_i64(f, QB_ELEMS(e));
  LLVMValueRef blk = jit_mul(f, LLVMBuildUDiv(f->b, idx, elems, ""), jit_i64(f, QB_BYTES(e)));
  LLVMValueRef i = LLVMBuildTrunc(f->b, LLVMBuildURem(f->b, idx, elems, ""), f->t_i32, "");
  jit_store(f, IR_DT_F32, jit_out(f, 0), idx, decode_elem(f, e, jit_in(f, 0), blk, i));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}

/* ---- qmatmul ---- */

/* One lhs block of one thread: where it starts (an element index into lhs),
 * the scale its q are taken with, whether they are (else all 0), and its
 * scale da (qb_quantize_q8_0 / qb_quantize_q8_k). */
typedef struct lhs_block {
  LLVMValueRef x;     /* i64: lhs index of the block's element 0 */
  LLVMValueRef scale; /* f32: q = round(x * scale) */
  LLVMValueRef ok;    /* i1: false: every q is 0 (a non-finite or, Q8_K, all-zero block) */
  LLVMValueRef da;    /* f32 */
} lhs_block;

/* A loop over [0, n) of constants. */
static LLVMValueRef loop_n(jit_fn *f, jit_loop *l, int64_t n) {
  return jit_loop_begin(f, l, jit_i64(f, 0), jit_i64(f, n), "i");
}

static LLVMValueRef load_acc(jit_fn *f, LLVMTypeRef t, LLVMValueRef slot) {
  return LLVMBuildLoad2(f->b, t, slot, "");
}
static void add_i32(jit_fn *f, LLVMValueRef slot, LLVMValueRef v) {
  LLVMBuildStore(f->b, LLVMBuildAdd(f->b, load_acc(f, f->t_i32, slot), v, ""), slot);
}

/* Quantize the E lhs elements from x (qblock.h's Q8_0 for E = 32, Q8_K for
 * 256): amax (the first largest |x|), whether all are finite, the scale. */
static lhs_block quantize_lhs(jit_fn *f, LLVMValueRef a, LLVMValueRef x, bool k_quant,
                              LLVMValueRef s_amax, LLVMValueRef s_xmax, LLVMValueRef s_fin) {
  LLVMBuilderRef b = f->b;
  int64_t E = k_quant ? 256 : 32;
  LLVMBuildStore(b, cf(f, 0), s_amax);
  LLVMBuildStore(b, cf(f, 0), s_xmax);
  LLVMBuildStore(b, LLVMConstInt(f->t_i1, 1, 0), s_fin);
  jit_loop l;
  LLVMValueRef i = loop_n(f, &l, E);
  LLVMValueRef v = jit_load(f, IR_DT_F32, a, jit_add(f, x, i));
  LLVMValueRef av = jit_intrinsic(f, "llvm.fabs", f->t_f32, &v, 1);
  LLVMValueRef best = load_acc(f, f->t_f32, s_amax);
  LLVMValueRef gt = jit_fcmp(f, LLVMRealOGT, av, best);
  LLVMBuildStore(b, jit_sel(f, gt, av, best), s_amax);
  LLVMBuildStore(b, jit_sel(f, gt, v, load_acc(f, f->t_f32, s_xmax)), s_xmax);
  LLVMValueRef finite = jit_fcmp(f, LLVMRealONE, av, cf(f, INFINITY)); /* false for NaN too */
  LLVMBuildStore(b, LLVMBuildAnd(b, load_acc(f, f->t_i1, s_fin), finite, ""), s_fin);
  jit_loop_end(f, &l);
  LLVMValueRef amax = load_acc(f, f->t_f32, s_amax), fin = load_acc(f, f->t_i1, s_fin);
  LLVMValueRef nan = cf(f, NAN);
  lhs_block r = {.x = x};
  if (!k_quant) { /* d = amax / 127; q with 1 / d (0 for d = 0); da = d rounded to f16 */
    LLVMValueRef d = jit_fdiv(f, amax, cf(f, 127.0f));
    LLVMValueRef nz = jit_fcmp(f, LLVMRealUNE, d, cf(f, 0));
    r.scale = jit_sel(f, nz, jit_fdiv(f, cf(f, 1.0f), d), cf(f, 0));
    LLVMValueRef d16 = LLVMBuildFPExt(b, LLVMBuildFPTrunc(b, d, f->t_f16, ""), f->t_f32, "");
    r.ok = fin;
    r.da = jit_sel(f, fin, d16, nan);
  } else { /* iscale = -127 / x_max; da = 1 / iscale; zeros for an all-zero block */
    LLVMValueRef iscale = jit_fdiv(f, cf(f, -127.0f), load_acc(f, f->t_f32, s_xmax));
    LLVMValueRef zero = jit_fcmp(f, LLVMRealOEQ, amax, cf(f, 0));
    r.scale = iscale;
    r.ok = LLVMBuildAnd(b, fin, LLVMBuildNot(b, zero, ""), "");
    r.da = jit_sel(f, fin, jit_sel(f, zero, cf(f, 0), jit_fdiv(f, cf(f, 1.0f), iscale)), nan);
  }
  return r;
}

/* q of lhs element i (i64) of block q (qb_round_q8: to nearest even,
 * clamped to [-127, 127]), as i32. */
static LLVMValueRef q_at(jit_fn *f, LLVMValueRef a, const lhs_block *q, LLVMValueRef i) {
  LLVMValueRef v = jit_fmul(f, jit_load(f, IR_DT_F32, a, jit_add(f, q->x, i)), q->scale);
  LLVMValueRef r = jit_intrinsic(f, "llvm.roundeven", f->t_f32, &v, 1);
  r = jit_sel(f, jit_fcmp(f, LLVMRealOGT, r, cf(f, 127.0f)), cf(f, 127.0f), r);
  r = jit_sel(f, jit_fcmp(f, LLVMRealOLT, r, cf(f, -127.0f)), cf(f, -127.0f), r);
  LLVMValueRef qi = LLVMBuildFPToSI(f->b, r, f->t_i32, "");
  return jit_sel(f, q->ok, qi, c32(f, 0));
}

/* The term of the weight block at w[wb] times lhs block q (qb_dot). */
static LLVMValueRef block_term(jit_fn *f, qb_encoding e, LLVMValueRef a, LLVMValueRef w,
                               LLVMValueRef wb, const lhs_block *q, LLVMValueRef s_isum,
                               LLVMValueRef s_msum, LLVMValueRef s_part, LLVMValueRef s_qsum) {
  LLVMBuilderRef b = f->b;
  LLVMBuildStore(b, c32(f, 0), s_isum);
  LLVMBuildStore(b, c32(f, 0), s_msum);
  jit_loop l;
  switch (e) {
  case QB_Q4_0:
  case QB_Q8_0: {
    LLVMValueRef i = loop_n(f, &l, e == QB_Q4_0 ? 16 : 32);
    LLVMValueRef off = jit_add(f, at(f, wb, 2), i);
    if (e == QB_Q8_0) {
      add_i32(f, s_isum, LLVMBuildMul(b, sbyte_at(f, w, off), q_at(f, a, q, i), ""));
    } else {
      LLVMValueRef byte = byte_at(f, w, off);
      LLVMValueRef lo = LLVMBuildSub(b, band(f, byte, 0xf), c32(f, 8), "");
      LLVMValueRef hi = LLVMBuildSub(b, shr(f, byte, c32(f, 4)), c32(f, 8), "");
      add_i32(f, s_isum,
              LLVMBuildAdd(b, LLVMBuildMul(b, lo, q_at(f, a, q, i), ""),
                           LLVMBuildMul(b, hi, q_at(f, a, q, at(f, i, 16)), ""), ""));
    }
    jit_loop_end(f, &l);
    LLVMValueRef dd = jit_fmul(f, f16_at(f, w, wb), q->da);
    return jit_fmul(f, i2f(f, load_acc(f, f->t_i32, s_isum)), dd);
  }
  case QB_Q4_K:
  case QB_Q5_K: {
    bool q5 = e == QB_Q5_K;
    for (int j = 0; j < 8; j++) { /* sub-block j: chunk j / 2, low or high nibbles */
      int c = j / 2, high = j & 1;
      LLVMBuildStore(b, c32(f, 0), s_part);
      LLVMBuildStore(b, c32(f, 0), s_qsum);
      LLVMValueRef l_ = loop_n(f, &l, 32);
      LLVMValueRef qv = q_at(f, a, q, at(f, l_, 64 * c + 32 * high));
      LLVMValueRef byte = byte_at(f, w, jit_add(f, at(f, wb, (q5 ? 48 : 16) + 32 * c), l_));
      LLVMValueRef nib = high ? shr(f, byte, c32(f, 4)) : band(f, byte, 0xf);
      if (q5) {
        LLVMValueRef qh = byte_at(f, w, jit_add(f, at(f, wb, 16), l_));
        nib = LLVMBuildOr(b, nib, LLVMBuildShl(b, band(f, shr(f, qh, c32(f, j)), 1), c32(f, 4), ""),
                          "");
      }
      add_i32(f, s_part, LLVMBuildMul(b, nib, qv, ""));
      add_i32(f, s_qsum, qv);
      jit_loop_end(f, &l);
      LLVMValueRef sc, m;
      scale_min(f, w, at(f, wb, 4), j, &sc, &m);
      add_i32(f, s_isum, LLVMBuildMul(b, sc, load_acc(f, f->t_i32, s_part), ""));
      add_i32(f, s_msum, LLVMBuildMul(b, m, load_acc(f, f->t_i32, s_qsum), ""));
    }
    LLVMValueRef dd = jit_fmul(f, f16_at(f, w, wb), q->da);
    LLVMValueRef dm = jit_fmul(f, f16_at(f, w, at(f, wb, 2)), q->da);
    LLVMValueRef hi = jit_fmul(f, dd, i2f(f, load_acc(f, f->t_i32, s_isum)));
    LLVMValueRef lo = jit_fmul(f, dm, i2f(f, load_acc(f, f->t_i32, s_msum)));
    return jit_fsub(f, hi, lo);
  }
  default: { /* q6_k: v as dequantize decodes it, times its group's int8 scale */
    LLVMValueRef i = loop_n(f, &l, 256), v, sc;
    q6_value(f, w, wb, LLVMBuildTrunc(b, i, f->t_i32, ""), &v, &sc);
    add_i32(f, s_isum, LLVMBuildMul(b, LLVMBuildMul(b, sc, v, ""), q_at(f, a, q, i), ""));
    jit_loop_end(f, &l);
    LLVMValueRef dd = jit_fmul(f, f16_at(f, w, at(f, wb, 208)), q->da);
    return jit_fmul(f, dd, i2f(f, load_acc(f, f->t_i32, s_isum)));
  }
  }
}

int jit_simt_lower_qmatmul(jit_simt_fn *sf) {
  jit_fn *f = &sf->f;
  const ir_node *n = f->node;
  qb_encoding e;
  if (encoding_of(f, &e) < 0) return -1;
  const ir_type *at_ = &n->in[0]->type, *wt = &n->in[1]->type, *yt = &n->out[0]->type;
  LLVMValueRef K = jit_dim(f, at_->dims[at_->rank - 1]), N = jit_dim(f, wt->dims[0]);
  LLVMValueRef rowbytes = jit_dim(f, wt->dims[1]);
  LLVMValueRef nb = LLVMBuildUDiv(f->b, K, jit_i64(f, QB_ELEMS(e)), "");
  /* per-thread slots (registers after O3) */
  LLVMValueRef s_acc = jit_alloca(f, f->t_f64, "acc"), s_amax = jit_alloca(f, f->t_f32, "amax");
  LLVMValueRef s_xmax = jit_alloca(f, f->t_f32, "xmax"), s_fin = jit_alloca(f, f->t_i1, "fin");
  LLVMValueRef s_isum = jit_alloca(f, f->t_i32, "isum"), s_msum = jit_alloca(f, f->t_i32, "msum");
  LLVMValueRef s_part = jit_alloca(f, f->t_i32, "part"), s_qsum = jit_alloca(f, f->t_i32, "qsum");
  LLVMValueRef a = jit_in(f, 0), w = jit_in(f, 1);
  jit_simt_loop l;
  LLVMValueRef idx = jit_simt_grid_loop_begin(sf, &l, jit_numel_range(f, yt, 0, yt->rank));
  LLVMValueRef m = LLVMBuildUDiv(f->b, idx, N, ""), col = LLVMBuildURem(f->b, idx, N, "");
  LLVMBuildStore(f->b, LLVMConstReal(f->t_f64, 0), s_acc);
  jit_loop blocks;
  LLVMValueRef bl = jit_loop_begin(f, &blocks, jit_i64(f, 0), nb, "block");
  LLVMValueRef x = jit_add(f, jit_mul(f, m, K), jit_mul(f, bl, jit_i64(f, QB_ELEMS(e))));
  LLVMValueRef wb = jit_add(f, jit_mul(f, col, rowbytes), jit_mul(f, bl, jit_i64(f, QB_BYTES(e))));
  lhs_block q = quantize_lhs(f, a, x, QB_LHS_IS_K(e), s_amax, s_xmax, s_fin);
  LLVMValueRef term = block_term(f, e, a, w, wb, &q, s_isum, s_msum, s_part, s_qsum);
  LLVMBuildStore(
      f->b, jit_fadd(f, load_acc(f, f->t_f64, s_acc), LLVMBuildFPExt(f->b, term, f->t_f64, "")),
      s_acc);
  jit_loop_end(f, &blocks);
  jit_store(f, IR_DT_F32, jit_out(f, 0), idx,
            LLVMBuildFPTrunc(f->b, load_acc(f, f->t_f64, s_acc), f->t_f32, ""));
  jit_simt_grid_loop_end(sf, &l);
  return f->failed ? -1 : 0;
}
