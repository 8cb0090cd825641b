/* conv.c - the direct conv2d kernel template (f32, 16-float vectors):
 * y = conv2d(x, filter) + bias for NHWC x and a filter prepacked into the
 * GEMM template's panels, as an implicit GEMM that reads the taps straight
 * from x (no im2col copy). Compiled to LLVM bitcode at build time and
 * linked into mo.conv2d's kernel at JIT time (jit/conv.c, jit/template.c),
 * where the static sizes fold to constants; jit/conv.c calls it only where
 * the kernel's target has avx512f.
 *
 * Entry:
 *   void kiln_conv_f32_v16_pex(int64_t p0, int64_t p1, int64_t H, int64_t W,
 *       int64_t C, int64_t Ho, int64_t Wo, int64_t F, int64_t R, int64_t S,
 *       int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw,
 *       const float *X, const float *Bp, const float *bias, float *Y)
 * computes the output pixels p0 <= p < p1 of [N, Ho, Wo] (flattened):
 *   Y[p * F + f] = bias[f] + sum_{r, s, c} x(p, r, s, c) * w[r, s, c, f]
 * where x(p, r, s, c) is X[((b * H + ih) * W + iw) * C + c] for ih = oh * sh
 * - ph + r * dh, iw = ow * sw - pw + s * dw inside [0, H) x [0, W), else 0
 * (padding). bias may be NULL (none). Bp is the filter seen as the [R * S *
 * C, F] matrix (row (r * S + s) * C + c) in the GEMM template's prepacked
 * layout (kernels-templates/gemm.c, "Prepacked B"; src/prepack.c writes
 * it): ceil(F / 32) panels of K x 32 floats, K = R * S * C, zeros past F.
 *
 * Design: an MR x 32 register tile (MR output pixels, one panel: 2 x MR
 * accumulators, 2 vector loads of the panel and MR broadcasts of x per
 * channel) that runs over every tap and a block of channels without
 * leaving registers, so each output element is loaded and stored once per
 * channel block. Per tap each tile row gets its own pointer into x (a
 * constant zero row where the tap falls in the padding or the row is past
 * the range), so strides, dilation, padding and tiles crossing output rows
 * or images all take the same loop. Channels are blocked by KC so that a
 * panel's block (R * S * KC * 32 floats, 147 KiB for 3x3) stays in L2
 * while the tiles of a pixel block read it; pixels are blocked by PB so the
 * input rows the block reads stay there too. Loop order: pixel block,
 * channel block, panel, tile, tap, channel. A pixel block is cut into
 * equal tiles of 5 to MR rows (MR_EDGE rows for a block of at most 4).
 * Sums: in f32 with fused multiply-adds, per channel block tap by tap,
 * channels ascending, added to the bias (first block) or to Y (later
 * blocks): rounding differs from the reference interpreter's double sums.
 * Assumes: F, R, S >= 1 (C = 0 writes the bias, or zeros); p0 <= p1 <=
 * N * Ho * Wo; X holds [N, H, W, C], Y [N, Ho, Wo, F], disjoint from X and
 * Bp. Freestanding: no libc, no mutable static state (kernels run on
 * several threads at once); the zero row is a read-only constant.
 *
 * Prebuilt: the build also compiles this file at x86-64-v4 with
 * -DKILN_CONV_PREBUILT=kiln_pre_v4_ to an object libkiln embeds
 * (jit/template.h); the JIT loads it with the prebuilt GEMM, and a conv
 * kernel built at the quick tier calls its entry (named with the prefix)
 * with the geometry as run-time arguments instead of compiling this file
 * again (jit/conv.c); the full tier still inlines it, sizes folded. */
#include <stdint.h>

#ifdef KILN_CONV_PREBUILT
#define CONV_ENTRY CONV_ENTRY_(KILN_CONV_PREBUILT, kiln_conv_f32_v16_pex)
#define CONV_ENTRY_(prefix, name) CONV_ENTRY__(prefix, name)
#define CONV_ENTRY__(prefix, name) prefix##name
#else
#define CONV_ENTRY kiln_conv_f32_v16_pex
#endif

typedef float v16f __attribute__((ext_vector_type(16)));

#define VL 16
#define NR (2 * VL) /* panel width: the GEMM template's prepacked layout */
#define MR 8        /* output pixels per register tile, at most */
#define MR_EDGE 4   /* rows of the tile for a block of at most 4 pixels */
/* channels per block: 3x3 x 128 x 32 floats = 147 KiB of panel (L2) */
#define KC 128
/* output pixels per block at most: the range in equal blocks of whole
 * tiles, so no block is a sliver that sweeps the whole filter again for a
 * few pixels; 384 pixels x 128 channels of input (~250 KiB with the halo
 * rows) stay in L2 beside a panel's block */
#define PB 384

/* filter bytes above which the next panel block is prefetched (L2 is
 * 2 MiB on this Xeon: a smaller filter stays there between pixel blocks) */
#define PF_MIN_FILTER (1 << 20)

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define CEILDIV(a, b) (((a) + (b) - 1) / (b))

#define VLOAD(p)                                                                                 \
  ({                                                                                             \
    v16f v_;                                                                                     \
    __builtin_memcpy(&v_, (p), sizeof v_);                                                       \
    v_;                                                                                          \
  })
#define VSTORE(p, v)                                                                             \
  do {                                                                                           \
    v16f s_ = (v);                                                                               \
    __builtin_memcpy((p), &s_, sizeof s_);                                                       \
  } while (0)
#define COLD _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")

/* read where a tap falls in the padding (KC channels of zeros) */
static const float conv_zero_row[KC];

/* The geometry of one call. */
typedef struct conv_geom {
  int64_t H, W, C, Ho, Wo, F, R, S, sh, sw, ph, pw, dh, dw;
} conv_geom;

/* Write (first) or add an mr x nr block of the tile (rows R_ of acc) to Y. */
static inline __attribute__((always_inline)) void conv_store(int R_, v16f (*acc)[2], float *Y,
                                                             int64_t F, int64_t mr, int64_t nr,
                                                             int first) {
  _Pragma("clang loop unroll(full)") for (int i = 0; i < MR; i++) {
    if (i >= R_ || i >= mr) continue;
    float *y = Y + i * F;
    if (nr == NR) {
      if (first) {
        VSTORE(y, acc[i][0]);
        VSTORE(y + VL, acc[i][1]);
      } else {
        VSTORE(y, VLOAD(y) + acc[i][0]);
        VSTORE(y + VL, VLOAD(y + VL) + acc[i][1]);
      }
    } else {
      float row[NR];
      VSTORE(row, acc[i][0]);
      VSTORE(row + VL, acc[i][1]);
      COLD for (int64_t j = 0; j < nr; j++) y[j] = first ? row[j] : y[j] + row[j];
    }
  }
}

/* One R_-row tile (R_ <= MR, a constant once inlined): pixels t .. t + mr
 * - 1 (mr <= R_), the panel block bp (channel c0 of tap 0), kc channels;
 * acc starts at bv[0 .. NR) (the bias on the first channel block, else 0). */
static inline __attribute__((always_inline)) void conv_tile(
    int R_, const conv_geom *g, int64_t t, int64_t mr, const float *restrict X, int64_t c0,
    int64_t kc, const float *restrict bp, const float *bv, float *restrict Y, int64_t nr,
    int first, const char *pf, int64_t pf0, int64_t pf1) {
  int64_t ih0[MR], iw0[MR], xb[MR];
  _Pragma("clang loop unroll(full)") for (int i = 0; i < MR; i++) {
    if (i >= R_) continue;
    int64_t p = t + i, ow = p % g->Wo, q = p / g->Wo, oh = q % g->Ho;
    ih0[i] = i < mr ? oh * g->sh - g->ph : -g->H - g->R * g->dh; /* past mr: never inside */
    iw0[i] = ow * g->sw - g->pw;
    xb[i] = q / g->Ho * g->H;
  }
  v16f acc[MR][2], b0 = VLOAD(bv), b1 = VLOAD(bv + VL);
  _Pragma("clang loop unroll(full)") for (int i = 0; i < MR; i++) {
    acc[i][0] = b0;
    acc[i][1] = b1;
  }
  /* the taps stay loops: unrolled (R and S are constants), each tile
   * instance would hold R * S copies of the channel loop */
  _Pragma("clang loop unroll(disable)") for (int64_t r = 0; r < g->R; r++) {
    _Pragma("clang loop unroll(disable)") for (int64_t s = 0; s < g->S; s++) {
      const float *a[MR];
      _Pragma("clang loop unroll(full)") for (int i = 0; i < MR; i++) {
        if (i >= R_) continue;
        int64_t ih = ih0[i] + r * g->dh, iw = iw0[i] + s * g->dw;
        int in = (uint64_t)ih < (uint64_t)g->H && (uint64_t)iw < (uint64_t)g->W;
        a[i] = in ? X + ((xb[i] + ih) * g->W + iw) * g->C + c0 : conv_zero_row;
      }
      const float *bt = bp + (r * g->S + s) * g->C * NR;
      if (pf) { /* this tile's share of the next panel block's lines, this tap's run */
        const char *pt = pf + (r * g->S + s) * g->C * NR * (int64_t)sizeof(float);
        COLD for (int64_t l = pf0; l < pf1; l++) __builtin_prefetch(pt + l * 64, 0, 2);
      }
      for (int64_t k = 0; k < kc; k++) {
        v16f w0 = VLOAD(bt + k * NR), w1 = VLOAD(bt + k * NR + VL);
        _Pragma("clang loop unroll(full)") for (int i = 0; i < MR; i++) {
          if (i >= R_) continue;
          v16f av = (v16f)a[i][k];
          acc[i][0] = __builtin_elementwise_fma(av, w0, acc[i][0]);
          acc[i][1] = __builtin_elementwise_fma(av, w1, acc[i][1]);
        }
      }
    }
  }
  conv_store(R_, acc, Y + t * g->F, g->F, mr, nr, first);
}

void CONV_ENTRY(int64_t p0, int64_t p1, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo,
                int64_t F, int64_t R, int64_t S, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                int64_t dh, int64_t dw, const float *X, const float *Bp, const float *bias,
                float *Y);
void CONV_ENTRY(int64_t p0, int64_t p1, int64_t H, int64_t W, int64_t C, int64_t Ho, int64_t Wo,
                int64_t F, int64_t R, int64_t S, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                int64_t dh, int64_t dw, const float *X, const float *Bp, const float *bias,
                float *Y) {
  if (p1 <= p0) return; /* an empty part (fewer pixels than parts, or batch 0) */
  if (C <= 0) { /* no channels: every sum is empty */
    COLD for (int64_t p = p0; p < p1; p++)
      COLD for (int64_t f = 0; f < F; f++) Y[p * F + f] = bias ? bias[f] : 0;
    return;
  }
  const conv_geom g = {H, W, C, Ho, Wo, F, R, S, sh, sw, ph, pw, dh, dw};
  const int64_t K = R * S * C, npan = CEILDIV(F, NR);
  /* C in equal blocks of at most KC channels */
  const int64_t kc_b = CEILDIV(C, CEILDIV(C, KC));
  const int64_t pb_b = CEILDIV(CEILDIV(p1 - p0, CEILDIV(p1 - p0, PB)), MR) * MR;
  for (int64_t pb = p0; pb < p1; pb += pb_b) {
    int64_t pe = MIN(pb + pb_b, p1);
    /* the block's pixels in ntiles tiles of th rows (the last one may be
     * shorter): 49 pixels take 7 tiles of 7, not 6 of 8 and one of 1 */
    const int64_t ntiles = CEILDIV(pe - pb, MR), th = CEILDIV(pe - pb, ntiles);
    for (int64_t c0 = 0; c0 < C; c0 += kc_b) {
      int64_t kc = MIN(kc_b, C - c0);
      int first = c0 == 0;
      for (int64_t j = 0; j < npan; j++) {
        int64_t nr = MIN(NR, F - j * NR);
        const float *bp = Bp + j * K * NR + c0 * NR;
        float bv[NR] = {0};
        if (first && bias) COLD for (int64_t f = 0; f < nr; f++) bv[f] = bias[j * NR + f];
        float *yp = Y + j * NR;
        /* a filter larger than L2 streams from L3: the block read next
         * (the next panel's, else the next channel block's first) is
         * prefetched into L2, each tile taking a share of each tap's run
         * of kc x 32 floats */
        const char *pf = 0;
        if (K * npan * NR * (int64_t)sizeof(float) > PF_MIN_FILTER) {
          if (j + 1 < npan) pf = (const char *)(bp + K * NR);
          else if (c0 + kc < C) pf = (const char *)(Bp + (c0 + kc) * NR);
        }
        const int64_t lines = kc * NR * (int64_t)sizeof(float) / 64;
        int64_t ti = 0;
        for (int64_t t = pb; t < pe; t += th, ti++) {
          int64_t mr = MIN(th, pe - t), l0 = ti * lines / ntiles, l1 = (ti + 1) * lines / ntiles;
          if (th == 8) conv_tile(8, &g, t, mr, X, c0, kc, bp, bv, yp, nr, first, pf, l0, l1);
          else if (th == 7) conv_tile(7, &g, t, mr, X, c0, kc, bp, bv, yp, nr, first, pf, l0, l1);
          else if (th == 6) conv_tile(6, &g, t, mr, X, c0, kc, bp, bv, yp, nr, first, pf, l0, l1);
          else if (th == 5) conv_tile(5, &g, t, mr, X, c0, kc, bp, bv, yp, nr, first, pf, l0, l1);
          else conv_tile(MR_EDGE, &g, t, mr, X, c0, kc, bp, bv, yp, nr, first, pf, l0, l1);
        }
      }
    }
  }
}
