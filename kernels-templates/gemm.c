/* gemm.c - the GEMM kernel template: C = A * B for row-major matrices,
 * compiled to LLVM bitcode at build time (clang-19, no LLVM passes) and
 * linked into the matmul kernel's module at JIT time (jit/template.c), where
 * it gets the host's target-cpu / target-features and goes through O3 with
 * the kernel (static dims fold to constants after inlining).
 *
 * Entries (one per element type and vector width; the JIT calls the one that
 * matches the host: 16 floats / 8 doubles with avx512f, else 8 / 4):
 *   void kiln_gemm_<t>_v<VL>_ex(int64_t M, int64_t N, int64_t K,
 *                            const T *A, int64_t lda, const T *B, int64_t ldb,
 *                            T *C, int64_t ldc, T *work, int64_t part, int64_t nparts,
 *                            kiln_gemm_<t>_v<VL>_epi epi, void *epi_ctx)
 *   void kiln_gemm_<t>_v<VL>(M, N, K, A, lda, B, ldb, C, ldc, work)
 *                            = the _ex entry with part 0 of 1 and no epilogue
 *   int64_t kiln_gemm_<t>_v<VL>_work(int64_t M, int64_t N, int64_t K)
 *   void kiln_gemm_<t>_v<VL>_tex(M, N, K, A, lda, Bt, ldbt, C, ldc, work,
 *                            part, nparts, epi, epi_ctx)
 *                            = _ex with B given transposed (Bt is N x K,
 *                              B[k, j] = Bt[j * ldbt + k]: a matmul with
 *                              kiln.transpose_b): packed from that layout
 *                              (8 x 8 blocks transposed in registers); few
 *                              rows take dot products of rows of A and Bt
 *   void kiln_gemm_<t>_v<VL>_pex(M, N, K, A, lda, const T *Bp, C, ldc,
 *                            part, nparts, epi, epi_ctx)
 *                            = _ex with B prepacked (a constant weight packed
 *                              once, src/prepack.c); no workspace: the A
 *                              block lives in the stack buffer that holds
 *                              the B block of _ex
 * Prepacked B (the layout is the one the packed path below reads, whatever
 * M is, so one packed copy serves every M, part and epilogue): NR = 2 * VL
 * columns per panel, ceil(N / NR) panels of K x NR elements, panel p at
 * Bp + p * K * NR, B[k, j] at Bp[(j / NR) * K * NR + k * NR + j % NR],
 * zeros in the columns past N of the last panel. A KC block of a panel is
 * then the contiguous kc x NR run the micro-kernel reads; the small-M path
 * reads the panels whole. _pex sums every element exactly as _ex given the
 * workspace it asks for does (same K blocking, decided from M, N, K), so
 * both give the same bits.
 * C[i*ldc + j] = sum_k A[i*lda + k] * B[k*ldb + j] for 0 <= i < M, 0 <= j < N.
 * part / nparts (0 <= part < nparts): this call computes part `part` of C
 * cut in nparts pieces: row ranges (multiples of MR) when M has at least
 * 2 * MR rows per part and M >= N (or N is too narrow to cut), else column
 * ranges (multiples of 2 * VL): the cut dimension is the one whose operand
 * every part packs whole, so the smaller one is duplicated. How each
 * element is summed (small-M path or packed, the K blocking) is decided
 * from the whole M, N, K, so the pieces put together equal the (0, 1) call
 * bit for bit (as long as every part got a workspace or none did).
 * epi (may be NULL): called as epi(epi_ctx, i0, j0, m, n, &C[i0*ldc + j0],
 * ldc) once for every m x n block of C right after its last K block is
 * added (while the block is in cache), i0 / j0 counted in the whole C; the
 * blocks of one call never overlap and cover this part's piece of C. It
 * may rewrite the block in place (a fused epilogue: bias, activation...).
 * work: NULL, or at least _work(M, N, K) elements (any alignment: the
 * entry aligns it to 64 bytes) the caller provides for a wide B block
 * (_work is 0 for shapes that do not want one; without it the entry blocks
 * N by NC_STACK on its own stack).
 *
 * Assumes: A and B do not overlap C; lda >= K, ldb >= N, ldc >= N; M, N, K
 * >= 0 (any of them may be 0 or 1). Freestanding: no libc, no malloc, no
 * static mutable state (kernels may run on several threads at once); the
 * packing buffers are local arrays sized by the blocking constants below
 * (about 420 KiB of stack for f32, 570 KiB for f64: callers need thread stacks
 * of 1 MiB or more; the default 8 MiB is fine) plus the caller's work.
 * Guarantees: every C[i, j] of the part's piece is written (zeros when K = 0,
 * then the epilogue), nothing else is touched; C is never read before it is written by this call, so
 * garbage in C does not leak into the result. Sums are in the element type,
 * k ascending within a KC block, blocks added in order (narrow small M: in
 * strands, below); fused multiply-add.
 *
 * Design (BLIS-like): loop jc over N by NC, pc over K by KC (pack the KC x NC
 * block of B into NR-wide panels, zero-padded), ic over M by MC (pack the
 * MC x KC block of A into MR-tall panels, zero-padded), then an MR x NR
 * register tile per (ir, jr): NR = 2 vectors, MR rows, one broadcast of A
 * and two vector loads of B per k. Block sizes come from the shape: K is
 * split into ceil(K / KC_MAX) equal blocks (likewise M and N), so a K just
 * over a block size does not leave a tiny remainder block. Where N (of the
 * piece) is at most DIRECT_A_MAX_N, A is not packed: the tile reads its MR
 * rows in place (few column panels would share a packed copy). Where B is
 * small, or M is and B is cached (DIRECT_B_*), B is not packed either: the
 * tile reads B's rows in place, ldb apart; a last partial panel is packed
 * (the tile reads whole zero-padded panels).
 * Small M (fewer rows than SMALL_M) skips packing: B is streamed row by row
 * (four rows of B per step, C's row chunk stays in L1), which is what a
 * memory-bound GEMV wants; with B prepacked, four panels are streamed at a
 * time (eight independent accumulator chains per row, no C traffic).
 * Narrow small M (VL <= N <= 4 VL, B not transposed): a row of C has too
 * few vectors to keep the FMA units busy (P x V of a decode step: N = a
 * head's 16 columns, K = the tokens cached), so K is summed in S = 8 / (N's
 * vectors) strands, element k into strand k % S, the strands added as a
 * tree (narrow_row): a different order from the other paths, the same for
 * _ex, _pex and every part.
 * With B prepacked the KC x NC block is not copied: the micro-kernel reads
 * the panels in place, with NC_HEAP-wide column blocks (fewer passes over
 * A) and KC_HEAP-deep K blocks where _ex would take its workspace; the
 * panel read next is prefetched while the current one's tiles run. */
#include <stdint.h>

typedef float v16f __attribute__((ext_vector_type(16)));
typedef float v8f __attribute__((ext_vector_type(8)));
typedef double v8d __attribute__((ext_vector_type(8)));
typedef double v4d __attribute__((ext_vector_type(4)));

typedef float v4f __attribute__((ext_vector_type(4)));

/* The lane sums of four vectors v[0..3] into out[0..3], by halving them
 * pairwise with shuffles (a tree: each sum adds its lanes in the same order
 * whatever the other three hold). _small_t's dot products end here: the
 * lanes stored and added one by one cost it ~4x the FMAs at K = 16. The
 * vectors go by pointer (no vector argument without the family's target). */
#define SHUF __builtin_shufflevector
#define HSUM_INLINE static inline __attribute__((always_inline, unused))
HSUM_INLINE void hsum4_v16f(const v16f *v, float *out) {
  v16f x = SHUF(v[0], v[1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           SHUF(v[0], v[1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  v16f y = SHUF(v[2], v[3], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
           SHUF(v[2], v[3], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
  v16f z = SHUF(x, y, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
           SHUF(x, y, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  v8f w = SHUF(z, z, 0, 1, 4, 5, 8, 9, 12, 13) + SHUF(z, z, 2, 3, 6, 7, 10, 11, 14, 15);
  v4f r = SHUF(w, w, 0, 2, 4, 6) + SHUF(w, w, 1, 3, 5, 7);
  __builtin_memcpy(out, &r, sizeof r);
}
HSUM_INLINE void hsum4_v8f(const v8f *v, float *out) {
  v8f x = SHUF(v[0], v[1], 0, 1, 2, 3, 8, 9, 10, 11) + SHUF(v[0], v[1], 4, 5, 6, 7, 12, 13, 14, 15);
  v8f y = SHUF(v[2], v[3], 0, 1, 2, 3, 8, 9, 10, 11) + SHUF(v[2], v[3], 4, 5, 6, 7, 12, 13, 14, 15);
  v8f z = SHUF(x, y, 0, 1, 4, 5, 8, 9, 12, 13) + SHUF(x, y, 2, 3, 6, 7, 10, 11, 14, 15);
  v4f r = SHUF(z, z, 0, 2, 4, 6) + SHUF(z, z, 1, 3, 5, 7);
  __builtin_memcpy(out, &r, sizeof r);
}
HSUM_INLINE void hsum4_v8d(const v8d *v, double *out) {
  v8d x = SHUF(v[0], v[1], 0, 1, 2, 3, 8, 9, 10, 11) + SHUF(v[0], v[1], 4, 5, 6, 7, 12, 13, 14, 15);
  v8d y = SHUF(v[2], v[3], 0, 1, 2, 3, 8, 9, 10, 11) + SHUF(v[2], v[3], 4, 5, 6, 7, 12, 13, 14, 15);
  v8d z = SHUF(x, y, 0, 1, 4, 5, 8, 9, 12, 13) + SHUF(x, y, 2, 3, 6, 7, 10, 11, 14, 15);
  v4d r = SHUF(z, z, 0, 2, 4, 6) + SHUF(z, z, 1, 3, 5, 7);
  __builtin_memcpy(out, &r, sizeof r);
}
HSUM_INLINE void hsum4_v4d(const v4d *v, double *out) {
  v4d x = SHUF(v[0], v[1], 0, 1, 4, 5) + SHUF(v[0], v[1], 2, 3, 6, 7);
  v4d y = SHUF(v[2], v[3], 0, 1, 4, 5) + SHUF(v[2], v[3], 2, 3, 6, 7);
  v4d r = SHUF(x, y, 0, 2, 4, 6) + SHUF(x, y, 1, 3, 5, 7);
  __builtin_memcpy(out, &r, sizeof r);
}

/* The lane sums of VL vectors v[0..VL) into out[0..VL), VL at once: each
 * level adds the two halves of every group of lanes of two vectors into
 * one (lane l with l + 4, then + 2, + 1: the last levels of hsum4's tree),
 * leaving the sums in bit-reversed order, so the vectors go in bit-reversed
 * order and the sums come out in order. */
#define HALVES(x, y, s0, s1) (SHUF(x, y, s0) + SHUF(x, y, s1))
#define H8_4 0, 1, 2, 3, 8, 9, 10, 11
#define H8_4B 4, 5, 6, 7, 12, 13, 14, 15
#define H8_2 0, 1, 8, 9, 4, 5, 12, 13
#define H8_2B 2, 3, 10, 11, 6, 7, 14, 15
#define H8_1 0, 8, 2, 10, 4, 12, 6, 14
#define H8_1B 1, 9, 3, 11, 5, 13, 7, 15
#define UNROLL _Pragma("clang loop unroll(full)")
#define HSUMVL_8(V, T)                                                                           \
  HSUM_INLINE void hsumvl_##V(const V *v, T *out) {                                              \
    static const int rev[8] = {0, 4, 2, 6, 1, 5, 3, 7};                                          \
    V a[4], b[2];                                                                                \
    UNROLL for (int r = 0; r < 4; r++)                                                           \
      a[r] = HALVES(v[rev[2 * r]], v[rev[2 * r + 1]], H8_4, H8_4B);                              \
    UNROLL for (int r = 0; r < 2; r++) b[r] = HALVES(a[2 * r], a[2 * r + 1], H8_2, H8_2B);       \
    V w = HALVES(b[0], b[1], H8_1, H8_1B);                                                       \
    __builtin_memcpy(out, &w, sizeof w);                                                         \
  }
HSUMVL_8(v8f, float)
HSUMVL_8(v8d, double)
HSUM_INLINE void hsumvl_v4d(const v4d *v, double *out) {
  v4d a = SHUF(v[0], v[2], 0, 1, 4, 5) + SHUF(v[0], v[2], 2, 3, 6, 7);
  v4d b = SHUF(v[1], v[3], 0, 1, 4, 5) + SHUF(v[1], v[3], 2, 3, 6, 7);
  v4d w = SHUF(a, b, 0, 4, 2, 6) + SHUF(a, b, 1, 5, 3, 7);
  __builtin_memcpy(out, &w, sizeof w);
}

/* VL dot products of one vector each, out[q] = a . b[q ldb ...] for q < VL,
 * the products formed as _small_t forms them (fma(a, b, 0)) and summed
 * by hsum4's tree: the same bits as there, ~2 shuffles per sum against
 * hsum4's 2.5, and one store. 16 floats go as two halves of 8 (one
 * vector each on AVX2; on AVX-512, where a 512-bit shuffle costs two
 * 256-bit ones, 0.62 ns per sum against 0.71 whole): each row's halves
 * add lane by lane first, hsum4's first level. A decoder's Q Kt at
 * head_dim 16 on AVX-512 took ~4.9 cycles per sum by fours. */
#define DOTVL(V, T, VL)                                                                          \
  HSUM_INLINE void dotvl_##V(const T *a, const T *b, int64_t ldb, T *out) {                      \
    V a0, v[VL];                                                                                 \
    __builtin_memcpy(&a0, a, sizeof a0);                                                         \
    UNROLL for (int q = 0; q < VL; q++, b += ldb) {                                              \
      V x;                                                                                       \
      __builtin_memcpy(&x, b, sizeof x);                                                         \
      v[q] = __builtin_elementwise_fma(a0, x, (V)0);                                             \
    }                                                                                            \
    hsumvl_##V(v, out);                                                                          \
  }
DOTVL(v8f, float, 8)
DOTVL(v8d, double, 8)
DOTVL(v4d, double, 4)
HSUM_INLINE void dotvl_v16f(const float *a, const float *b, int64_t ldb, float *out) {
  v8f lo, hi, h[16];
  __builtin_memcpy(&lo, a, sizeof lo);
  __builtin_memcpy(&hi, a + 8, sizeof hi);
  UNROLL for (int q = 0; q < 16; q++, b += ldb) {
    v8f x, y;
    __builtin_memcpy(&x, b, sizeof x);
    __builtin_memcpy(&y, b + 8, sizeof y);
    h[q] = __builtin_elementwise_fma(lo, x, (v8f)0) + __builtin_elementwise_fma(hi, y, (v8f)0);
  }
  hsumvl_v8f(h, out);
  hsumvl_v8f(h + 8, out + 8);
}
#undef HSUM_INLINE
#undef SHUF

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define CEILDIV(a, b) (((a) + (b) - 1) / (b))

/* Rows of the register tile, MR, is defined per family (see the end of the
 * file): 8 rows x 2 vectors (16 accumulators, 2 loads + 8 broadcasts per
 * 16 FMAs) with 32 zmm registers (AVX-512); 6 x 2 (12 accumulators) leave
 * room in 16 ymm registers (AVX2). On znver5, 8 rows measured against 6:
 * 32 x 256 x 128 205 -> 259 GFLOP/s, 128 x 128 x 64 253 -> 264, 256^3 and
 * 1024^3 equal. */
/* rows of the edge tile for a last row panel of 1 to 4 rows (every MR is
 * larger: asserted in _piece) */
#define MR4 4
/* rows of the one-vector tile that reads A in place: MR_TALL chains cover
 * the FMA latency where the MR of one vector did not (12 measured faster
 * than 16 at 100 x 10 x 300: 121 against 100 GFLOP/s) */
#define MR_TALL 12
/* accumulator rows a tile function holds: the taller of the two */
#define MR_MAX (MR_TALL > MR ? MR_TALL : MR)

/* Block limits in elements. On the stack: KC x NR panel of B (32 KiB for
 * f32 x 16: L1), MC x KC block of A (144 KiB: L2), KC x NC block of B
 * (256 KiB: L2). In the caller's workspace (N > NC_STACK, M >= SMALL_M): a
 * 2 MiB KC_HEAP x 2048 B block (L3), so A is packed N / 2048 times instead
 * of N / 256; measured 5-15% faster at N = 1024 and 2048 with other
 * processes sharing the caches. KC_HEAP was 384 (fewer passes over C) with
 * 6-row tiles; with 8-row ones the 48 KiB B panel and the A sliver no
 * longer fit L1 together, and 256 measured 1-2% faster (znver5, 1024^3 to
 * 2048^3; mlp batch 64 equal).
 * Overridable with -D only for experiments; the build uses these. */
#ifndef KC_MAX
#define KC_MAX 256
#endif
#ifndef KC_HEAP
#define KC_HEAP 256 /* KC with the caller's workspace */
#endif
#ifndef MC_MAX
#define MC_MAX 144 /* a multiple of every MR */
#endif
#ifndef NC_MAX_F32
#define NC_MAX_F32 256
#endif
#ifndef NC_HEAP_F32
#define NC_HEAP_F32 2048 /* KC x NC B block in caller workspace: 2 MiB (L3) */
#endif
#define SMALL_M 4
/* Bytes of prepacked B (of a piece) above which the panel read next is
 * prefetched: a smaller B stays in L2 from one row block to the next, and
 * the prefetches only take L1 from the current panel (3136 x 256 x 64 and
 * 3136 x 64 x 256, B 64 KiB: 2-4% slower with them) */
#define PF_MIN_B (128 << 10)
/* Largest N (of a piece) whose A is read in place, not packed */
#define DIRECT_A_MAX_N 512
/* B (of a piece) read in place, not packed: K x N elements at most
 * DIRECT_B_L1, or at most DIRECT_B_CACHED with M at most DIRECT_B_MAX_M */
#define DIRECT_B_L1 8192
#define DIRECT_B_MAX_M 32
#define DIRECT_B_CACHED (1 << 20)
/* Columns of C per chunk in the small-M path: 16 KiB of f32 C stays in L1,
 * and B is read in runs of 16 KiB per row. With 1024 (4 KiB runs, one page
 * each, the rows a page apart) the hardware prefetcher stopped at every
 * page: GEMV 1x4096x4096 was 0.85x oneDNN, with 4096 1.01x (measured). */
#define SMALL_NB 4096

static inline __attribute__((always_inline)) int64_t block_size(int64_t n, int64_t max,
                                                                  int64_t mult) {
  /* n split into equal blocks of at most max, rounded up to mult */
  if (n <= 0) return mult;
  int64_t nblk = CEILDIV(n, max);
  int64_t b = CEILDIV(n, nblk);
  b = CEILDIV(b, mult) * mult;
  return b > max ? max : b;
}

/* Unaligned vector access without aliasing assumptions (lowers to plain
 * vector loads / stores once LLVM folds the memcpy). */
#define VLOAD(V, p)                                                                              \
  ({                                                                                             \
    V v_;                                                                                        \
    __builtin_memcpy(&v_, (p), sizeof v_);                                                       \
    v_;                                                                                          \
  })
#define VSTORE(p, v)                                                                             \
  do {                                                                                           \
    __typeof__(v) s_ = (v);                                                                      \
    __builtin_memcpy((p), &s_, sizeof s_);                                                       \
  } while (0)

/* Edge loops (partial tiles, padding, scalar tails): keep them as plain
 * loops, so O3 does not spend compile time and code size vectorizing and
 * unrolling code that runs at most a few times per block. */
#define COLD _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")

/* A slice of the B panel a tile's successors read, which the tile prefetches
 * into L2 while it runs (p NULL: none): at its k-th step (k < n), the line at
 * p + k * step and, where step is 128, the one after it. Spread over the
 * k loop, the misses overlap the multiply-adds; issued in one burst before
 * the tile (as once), they filled the miss queues and most were dropped
 * (16 x 1536 x 384 with B prepacked, from L3: 79 -> ~120 GFLOP/s). */
typedef struct gemm_pf {
  const char *p;
  int64_t n, step;
} gemm_pf;

static inline __attribute__((always_inline)) void gemm_prefetch_step(gemm_pf pf, int64_t k) {
  if (k < pf.n) {
    __builtin_prefetch(pf.p + k * pf.step, 0, 2);
    if (pf.step > 64) __builtin_prefetch(pf.p + k * pf.step + 64, 0, 2);
  }
}

/* One GEMM family per (element type T, vector type V, VL lanes). NAME is the
 * entry; the B block is NC_STACK columns wide in the entry's stack buffer,
 * NC_HEAP in the caller's workspace. */
#define DEFINE_GEMM(NAME, T, V, VL, V8, NC_STACK, NC_HEAP)                                       \
  /* the epilogue hook (see the entries above) */                                                \
  typedef void (*NAME##_epi)(void *ctx, int64_t i0, int64_t j0, int64_t m, int64_t n,            \
                             T *C, int64_t ldc);                                                 \
                                                                                                 \
  /* Bp[panel][k][0..NR) = B[k, jr..jr+NR), zero past n */                                       \
  static void NAME##_pack_b(int64_t kc, int64_t n, const T *restrict B, int64_t ldb,             \
                            T *restrict Bp) {                                                    \
    for (int64_t jr = 0; jr < n; jr += 2 * VL) {                                                 \
      int64_t nr = MIN(2 * VL, n - jr);                                                          \
      if (nr == 2 * VL) {                                                                        \
        for (int64_t k = 0; k < kc; k++) {                                                       \
          VSTORE(Bp + k * 2 * VL, VLOAD(V, B + k * ldb + jr));                                   \
          VSTORE(Bp + k * 2 * VL + VL, VLOAD(V, B + k * ldb + jr + VL));                         \
        }                                                                                        \
      } else {                                                                                   \
        for (int64_t k = 0; k < kc; k++) {                                                       \
          COLD for (int64_t j = 0; j < nr; j++) Bp[k * 2 * VL + j] = B[k * ldb + jr + j];        \
          COLD for (int64_t j = nr; j < 2 * VL; j++) Bp[k * 2 * VL + j] = 0;                     \
        }                                                                                        \
      }                                                                                          \
      Bp += kc * 2 * VL;                                                                         \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  /* The same from B given transposed (Bt, N x K: B[k, j] = Bt[j * ldb +                         \
   * k]): whole panels move as 8 x 8 blocks transposed in registers, the                         \
   * rest (a last partial panel, kc % 8) element by element. */                                  \
  static inline __attribute__((always_inline)) void NAME##_t8x8(                                 \
      const T *restrict src, int64_t lds, T *restrict dst, int64_t ldd) {                        \
    V8 r0 = VLOAD(V8, src), r1 = VLOAD(V8, src + lds);                                           \
    V8 r2 = VLOAD(V8, src + 2 * lds), r3 = VLOAD(V8, src + 3 * lds);                             \
    V8 r4 = VLOAD(V8, src + 4 * lds), r5 = VLOAD(V8, src + 5 * lds);                             \
    V8 r6 = VLOAD(V8, src + 6 * lds), r7 = VLOAD(V8, src + 7 * lds);                             \
    /* pairs of rows interleaved by element, then by pairs, then by halves */                    \
    V8 t0 = __builtin_shufflevector(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);                           \
    V8 t1 = __builtin_shufflevector(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);                         \
    V8 t2 = __builtin_shufflevector(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);                           \
    V8 t3 = __builtin_shufflevector(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);                         \
    V8 t4 = __builtin_shufflevector(r4, r5, 0, 8, 1, 9, 4, 12, 5, 13);                           \
    V8 t5 = __builtin_shufflevector(r4, r5, 2, 10, 3, 11, 6, 14, 7, 15);                         \
    V8 t6 = __builtin_shufflevector(r6, r7, 0, 8, 1, 9, 4, 12, 5, 13);                           \
    V8 t7 = __builtin_shufflevector(r6, r7, 2, 10, 3, 11, 6, 14, 7, 15);                         \
    V8 u0 = __builtin_shufflevector(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);                           \
    V8 u1 = __builtin_shufflevector(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);                         \
    V8 u2 = __builtin_shufflevector(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);                           \
    V8 u3 = __builtin_shufflevector(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);                         \
    V8 u4 = __builtin_shufflevector(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);                           \
    V8 u5 = __builtin_shufflevector(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);                         \
    V8 u6 = __builtin_shufflevector(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);                           \
    V8 u7 = __builtin_shufflevector(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);                         \
    VSTORE(dst, __builtin_shufflevector(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11));                      \
    VSTORE(dst + ldd, __builtin_shufflevector(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11));                \
    VSTORE(dst + 2 * ldd, __builtin_shufflevector(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11));            \
    VSTORE(dst + 3 * ldd, __builtin_shufflevector(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11));            \
    VSTORE(dst + 4 * ldd, __builtin_shufflevector(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15));          \
    VSTORE(dst + 5 * ldd, __builtin_shufflevector(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15));          \
    VSTORE(dst + 6 * ldd, __builtin_shufflevector(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15));          \
    VSTORE(dst + 7 * ldd, __builtin_shufflevector(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15));          \
  }                                                                                              \
                                                                                                 \
  static void NAME##_pack_b_t(int64_t kc, int64_t n, const T *restrict Bt, int64_t ldb,          \
                              T *restrict Bp) {                                                  \
    for (int64_t jr = 0; jr < n; jr += 2 * VL) {                                                 \
      int64_t nr = MIN(2 * VL, n - jr);                                                          \
      int64_t k8 = nr == 2 * VL ? kc / 8 * 8 : 0;                                                \
      for (int64_t j = 0; j < 2 * VL; j += 8)                                                    \
        for (int64_t k = 0; k < k8; k += 8)                                                      \
          NAME##_t8x8(Bt + (jr + j) * ldb + k, ldb, Bp + k * 2 * VL + j, 2 * VL);                \
      for (int64_t k = k8; k < kc; k++) {                                                        \
        COLD for (int64_t j = 0; j < nr; j++) Bp[k * 2 * VL + j] = Bt[(jr + j) * ldb + k];       \
        COLD for (int64_t j = nr; j < 2 * VL; j++) Bp[k * 2 * VL + j] = 0;                       \
      }                                                                                          \
      Bp += kc * 2 * VL;                                                                         \
    }                                                                                            \
  }                                                                                              \
  /* Ap[panel][k][0..MR) = A[ir.., k], zero past m */                                            \
  static void NAME##_pack_a(int64_t m, int64_t kc, const T *restrict A, int64_t lda,             \
                            T *restrict Ap) {                                                    \
    for (int64_t ir = 0; ir < m; ir += MR) {                                                     \
      int64_t mr = MIN(MR, m - ir);                                                              \
      if (mr == MR) {                                                                            \
        for (int64_t k = 0; k < kc; k++)                                                         \
          for (int64_t r = 0; r < MR; r++) Ap[k * MR + r] = A[(ir + r) * lda + k];               \
      } else {                                                                                   \
        for (int64_t k = 0; k < kc; k++) {                                                       \
          COLD for (int64_t r = 0; r < mr; r++) Ap[k * MR + r] = A[(ir + r) * lda + k];          \
          COLD for (int64_t r = mr; r < MR; r++) Ap[k * MR + r] = 0;                             \
        }                                                                                        \
      }                                                                                          \
      Ap += kc * MR;                                                                             \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  /* Write (first) or add the mr x nr valid part of an R x W-vector tile of                      \
   * accumulators (R <= MR_MAX) to C. */                                                         \
  static inline __attribute__((always_inline)) void NAME##_store(                                \
      int R, int W, V (*acc)[2], T *restrict C, int64_t ldc, int64_t mr, int64_t nr,             \
      int first) {                                                                               \
    if (mr == R && nr == W * VL) {                                                               \
      _Pragma("clang loop unroll(full)") for (int r = 0; r < MR_MAX; r++) {                      \
        if (r >= R) continue;                                                                    \
        T *c = C + r * ldc;                                                                      \
        if (first) {                                                                             \
          VSTORE(c, acc[r][0]);                                                                  \
          if (W == 2) VSTORE(c + VL, acc[r][1]);                                                 \
        } else {                                                                                 \
          VSTORE(c, VLOAD(V, c) + acc[r][0]);                                                    \
          if (W == 2) VSTORE(c + VL, VLOAD(V, c + VL) + acc[r][1]);                              \
        }                                                                                        \
      }                                                                                          \
    } else {                                                                                     \
      T tile[MR_MAX][2 * VL];                                                                    \
      _Pragma("clang loop unroll(full)") for (int r = 0; r < MR_MAX; r++) {                      \
        if (r >= R) continue;                                                                    \
        VSTORE(&tile[r][0], acc[r][0]);                                                          \
        if (W == 2) VSTORE(&tile[r][VL], acc[r][1]);                                             \
      }                                                                                          \
      COLD for (int64_t r = 0; r < mr; r++)                                                      \
        COLD for (int64_t j = 0; j < nr; j++)                                                    \
          C[r * ldc + j] = first ? tile[r][j] : C[r * ldc + j] + tile[r][j];                     \
    }                                                                                            \
  }                                                                                              \
  /* One k step of the main MR x 2-vector tile: acc[r][*] += A[r] * B's two                      \
   * vectors (Ap: the MR packed values of A, Bp: the panel's 2VL-wide row). */                   \
  static inline __attribute__((always_inline)) void NAME##_step(V (*acc)[2],                     \
                                                                const T *restrict Ap,            \
                                                                const T *restrict Bp) {          \
    V b0 = VLOAD(V, Bp), b1 = VLOAD(V, Bp + VL);                                                 \
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {                            \
      V a = (V)Ap[r];                                                                            \
      acc[r][0] = __builtin_elementwise_fma(a, b0, acc[r][0]);                                   \
      acc[r][1] = __builtin_elementwise_fma(a, b1, acc[r][1]);                                   \
    }                                                                                            \
  }                                                                                              \
  /* _step with A read in place: row r's element k at ar[r][k] */                                 \
  static inline __attribute__((always_inline)) void NAME##_step_da(                              \
      V (*acc)[2], const T *const *ar, int64_t k, const T *restrict Bp) {                        \
    V b0 = VLOAD(V, Bp), b1 = VLOAD(V, Bp + VL);                                                 \
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {                            \
      V a = (V)ar[r][k];                                                                         \
      acc[r][0] = __builtin_elementwise_fma(a, b0, acc[r][0]);                                   \
      acc[r][1] = __builtin_elementwise_fma(a, b1, acc[r][1]);                                   \
    }                                                                                            \
  }                                                                                              \
  /* The R x W vectors register tile (R <= MR rows, W = 1 or 2 vectors; both                     \
   * constants once inlined: the narrower tiles at the edges of C skip the                       \
   * multiply-adds of zero-padded rows and columns) over kc packed steps (A                      \
   * panels MR tall, B panels 2VL wide whatever R and W are); writes C                           \
   * (first block) or adds to it, only the mr x nr valid part (mr <= R,                          \
   * nr <= W * VL). Each element's sum is the same for every R and W. */                         \
  static inline __attribute__((always_inline)) void NAME##_micro(                                \
      int R, int W, int64_t kc, const T *restrict Ap, const T *restrict Bp, int64_t bk,          \
      T *restrict C, int64_t ldc, int64_t mr, int64_t nr, int first, gemm_pf pf) {               \
    V acc[MR][2];                                                                                \
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {                            \
      acc[r][0] = (V)0;                                                                          \
      acc[r][1] = (V)0;                                                                          \
    }                                                                                            \
    /* C is read (or written) after the k loop: start fetching it now */                         \
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {                            \
      if (r < R) {                                                                               \
        __builtin_prefetch(C + r * ldc, 1, 3);                                                   \
        __builtin_prefetch(C + r * ldc + W * VL - 1, 1, 3);                                      \
      }                                                                                          \
    }                                                                                            \
    if (R == MR && W == 2 && sizeof(V) == 32) {                                                  \
      /* AVX2's main tile: 12 accumulators, 2 B vectors and the broadcasts                       \
       * share 16 ymm registers, and with gemm_prefetch_step's branch in the                     \
       * k loop O3 loaded all MR broadcasts ahead of it and kept 4                               \
       * accumulators on the stack (a store and a reload each per k, every                       \
       * step waiting on store forwarding). The steps that prefetch run in                       \
       * a loop of their own, so neither body has a branch. */                                   \
      int64_t k = 0, kp = MIN(pf.n, kc);                                                         \
      int64_t second = pf.step > 64 ? 64 : 0; /* else the same line again */                     \
      for (; k < kp; k++) {                                                                      \
        NAME##_step(acc, Ap, Bp);                                                                \
        __builtin_prefetch(pf.p + k * pf.step, 0, 2);                                            \
        __builtin_prefetch(pf.p + k * pf.step + second, 0, 2);                                   \
        Ap += MR;                                                                                \
        Bp += bk;                                                                                \
      }                                                                                          \
      for (; k < kc; k++) {                                                                      \
        NAME##_step(acc, Ap, Bp);                                                                \
        Ap += MR;                                                                                \
        Bp += bk;                                                                                \
      }                                                                                          \
    } else if (R == MR && W == 2) { /* the main tile, as O3 likes it (unrolled by 2) */          \
      for (int64_t k = 0; k < kc; k++) {                                                         \
        V b0 = VLOAD(V, Bp), b1 = VLOAD(V, Bp + VL);                                             \
        _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {                        \
          V a = (V)Ap[r];                                                                        \
          acc[r][0] = __builtin_elementwise_fma(a, b0, acc[r][0]);                               \
          acc[r][1] = __builtin_elementwise_fma(a, b1, acc[r][1]);                               \
        }                                                                                        \
        gemm_prefetch_step(pf, k);                                                               \
        Ap += MR;                                                                                \
        Bp += bk;                                                                                \
      }                                                                                          \
    } else { /* edge tiles: not unrolled (each is one more copy to compile) */                   \
      _Pragma("clang loop unroll(disable)") for (int64_t k = 0; k < kc; k++) {                   \
        V b0 = VLOAD(V, Bp), b1 = W == 2 ? VLOAD(V, Bp + VL) : (V)0;                             \
        _Pragma("clang loop unroll(full)") for (int r = 0; r < MR; r++) {                        \
          if (r < R) {                                                                           \
            V a = (V)Ap[r];                                                                      \
            acc[r][0] = __builtin_elementwise_fma(a, b0, acc[r][0]);                             \
            if (W == 2) acc[r][1] = __builtin_elementwise_fma(a, b1, acc[r][1]);                 \
          }                                                                                      \
        }                                                                                        \
        gemm_prefetch_step(pf, k);                                                               \
        Ap += MR;                                                                                \
        Bp += bk;                                                                                \
      }                                                                                          \
    }                                                                                            \
    NAME##_store(R, W, acc, C, ldc, mr, nr, first);                                              \
  }                                                                                              \
                                                                                                 \
  /* The same tile with A read where it is (row-major, row stride lda)                           \
   * instead of packed, where few column panels would share a packed A                           \
   * (N <= DIRECT_A_MAX_N): packing then costs more than it saves (64 x                          \
   * 512 x 10: 9.2 us packed, 6.0 in place). Rows past mr read row mr - 1                        \
   * (never stored). Every element is summed as by the packed tile, in the                       \
   * same order, so the results do not depend on the choice. One vector                          \
   * wide (W = 1), the tile is MR_TALL rows tall: MR chains are fewer                            \
   * than the FMA latency covers (64 x 512 x 10 + bias: 5.9 -> 5.5 us). */                       \
  static inline __attribute__((always_inline)) void NAME##_micro_da(                             \
      int R, int W, int64_t kc, const T *restrict A, int64_t lda, const T *restrict Bp,          \
      int64_t bk, T *restrict C, int64_t ldc, int64_t mr, int64_t nr, int first,                \
      gemm_pf pf) {                                                                              \
    V acc[MR_MAX][2];                                                                            \
    const T *ar[MR_MAX];                                                                         \
    _Pragma("clang loop unroll(full)") for (int r = 0; r < MR_MAX; r++) {                        \
      acc[r][0] = (V)0;                                                                          \
      acc[r][1] = (V)0;                                                                          \
      ar[r] = A + (r < mr ? r : mr - 1) * lda;                                                   \
    }                                                                                            \
    if (R == MR && W == 2 && sizeof(V) == 32) {                                                  \
      /* AVX2: the packed main tile's register budget, and the same split                        \
       * of the k loop (no branch in either body; see _micro) */                                 \
      int64_t k = 0, kp = MIN(pf.n, kc);                                                         \
      int64_t second = pf.step > 64 ? 64 : 0;                                                    \
      for (; k < kp; k++) {                                                                      \
        NAME##_step_da(acc, ar, k, Bp);                                                          \
        __builtin_prefetch(pf.p + k * pf.step, 0, 2);                                            \
        __builtin_prefetch(pf.p + k * pf.step + second, 0, 2);                                   \
        Bp += bk;                                                                                \
      }                                                                                          \
      for (; k < kc; k++) {                                                                      \
        NAME##_step_da(acc, ar, k, Bp);                                                          \
        Bp += bk;                                                                                \
      }                                                                                          \
    } else {                                                                                     \
      for (int64_t k = 0; k < kc; k++) {                                                         \
        V b0 = VLOAD(V, Bp), b1 = W == 2 ? VLOAD(V, Bp + VL) : (V)0;                             \
        _Pragma("clang loop unroll(full)") for (int r = 0; r < MR_MAX; r++) {                    \
          if (r < R) {                                                                           \
            V a = (V)ar[r][k];                                                                   \
            acc[r][0] = __builtin_elementwise_fma(a, b0, acc[r][0]);                             \
            if (W == 2) acc[r][1] = __builtin_elementwise_fma(a, b1, acc[r][1]);                 \
          }                                                                                      \
        }                                                                                        \
        gemm_prefetch_step(pf, k);                                                               \
        Bp += bk;                                                                                \
      }                                                                                          \
    }                                                                                            \
    NAME##_store(R, W, acc, C, ldc, mr, nr, first);                                              \
  }                                                                                              \
  /* Few rows and few columns (narrow: N <= 4 VL, strands S > 1): one row                      \
   * of C in registers, nv vectors (nv * S <= 8 accumulators), element k of                      \
   * the sum going to strand k % S, the strands added as a tree at the end:                     \
   * nv * S independent FMA chains where the row's own nv would leave the                         \
   * FMA units waiting on their latency (P x V of a decode step: N = 16,                           \
   * K = the tokens cached). Vector v of row k of B at b + k * ks + bo[v],                        \
   * stored at c + co[v] (the last one: its first nlast lanes). A lane sums its                    \
   * column in the same order whichever vector holds it, and narrow_col                           \
   * likewise, so row-major and prepacked B give the same bits. */                                 \
  /* narrow_row's products of rows k .. k + cnt - 1 of B (cnt <= S) into                        \
   * their strands (a: A's row from k, r: B's row k) */                                          \
  static inline __attribute__((always_inline)) void NAME##_narrow_step(                          \
      int S, int nv, int64_t cnt, const T *restrict a, const T *restrict r, const int64_t *bo,   \
      int64_t ks, V (*acc)[4]) {                                                                 \
    _Pragma("clang loop unroll(full)") for (int s = 0; s < 8; s++) {                             \
      if (s < S && s < cnt) {                                                                    \
        V av = (V)a[s];                                                                          \
        _Pragma("clang loop unroll(full)") for (int v = 0; v < 4; v++)                           \
          if (v < nv)                                                                            \
            acc[s][v] = __builtin_elementwise_fma(av, VLOAD(V, r + s * ks + bo[v]), acc[s][v]);  \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
  static inline __attribute__((always_inline)) void NAME##_narrow_row(                           \
      int S, int nv, int64_t K, const T *restrict a, const T *restrict b, const int64_t *bo,     \
      int64_t ks, T *restrict c, const int64_t *co, int64_t nlast) {                             \
    V acc[8][4];                                                                                 \
    _Pragma("clang loop unroll(full)") for (int s = 0; s < 8; s++)                               \
      _Pragma("clang loop unroll(full)") for (int v = 0; v < 4; v++) acc[s][v] = (V)0;           \
    int64_t k = 0;                                                                               \
    const T *r = b; /* row k of B */                                                             \
    _Pragma("clang loop unroll(disable)") for (; k + S <= K; k += S, r += S * ks)                \
      NAME##_narrow_step(S, nv, S, a + k, r, bo, ks, acc);                                       \
    NAME##_narrow_step(S, nv, K - k, a + k, r, bo, ks, acc); /* the last K % S */               \
    _Pragma("clang loop unroll(full)") for (int w = 1; w < 8; w *= 2)                            \
      _Pragma("clang loop unroll(full)") for (int s = 0; s + w < 8; s += 2 * w)                  \
        if (s + w < S)                                                                           \
          _Pragma("clang loop unroll(full)") for (int v = 0; v < 4; v++)                         \
            if (v < nv) acc[s][v] += acc[s + w][v];                                              \
    _Pragma("clang loop unroll(full)") for (int v = 0; v < 4; v++) {                             \
      if (v < nv - 1 || (v == nv - 1 && nlast == VL)) {                                          \
        VSTORE(c + co[v], acc[0][v]);                                                            \
      } else if (v == nv - 1) {                                                                  \
        T tile[VL];                                                                              \
        VSTORE(&tile[0], acc[0][v]);                                                             \
        COLD for (int64_t j = 0; j < nlast; j++) c[co[v] + j] = tile[j];                         \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
  /* narrow_row's sums one column at a time (fewer columns than a vector):                       \
   * column j of B at b + j + k * ks. */                                                         \
  static inline __attribute__((always_inline)) void NAME##_narrow_col(                           \
      int S, int64_t n, int64_t K, const T *restrict a, const T *restrict b, int64_t ks,         \
      T *restrict c) {                                                                           \
    for (int64_t j = 0; j < n; j++) {                                                            \
      T t[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                         \
      int64_t k = 0;                                                                             \
      for (; k + S <= K; k += S)                                                                 \
        _Pragma("clang loop unroll(full)") for (int s = 0; s < 8; s++)                           \
          if (s < S) t[s] = __builtin_elementwise_fma(a[k + s], b[j + (k + s) * ks], t[s]);      \
      _Pragma("clang loop unroll(full)") for (int s = 0; s < 8; s++)                             \
        if (s < S && k + s < K) t[s] = __builtin_elementwise_fma(a[k + s], b[j + (k + s) * ks], t[s]); \
      _Pragma("clang loop unroll(full)") for (int w = 1; w < 8; w *= 2)                          \
        _Pragma("clang loop unroll(full)") for (int s = 0; s + w < 8; s += 2 * w)                \
          if (s + w < S) t[s] += t[s + w];                                                       \
      c[j] = t[0];                                                                               \
    }                                                                                            \
  }                                                                                              \
  /* One row of a narrow product: S and nv as constants (S * nv <= 8); a                        \
   * function of its own, so its FMA chains get the registers (inlined into                      \
   * the entry, the strands' row pointers were spilled). */                                     \
  static __attribute__((noinline)) void NAME##_narrow(                                           \
      int S, int nv, int64_t K, const T *restrict a, const T *restrict b, const int64_t *bo,     \
      int64_t ks, T *restrict c, const int64_t *co, int64_t nlast) {                             \
    if (S == 8) NAME##_narrow_row(8, 1, K, a, b, bo, ks, c, co, nlast);                          \
    else if (S == 4 && nv == 2) NAME##_narrow_row(4, 2, K, a, b, bo, ks, c, co, nlast);          \
    else if (S == 4) NAME##_narrow_row(4, 1, K, a, b, bo, ks, c, co, nlast);                     \
    else if (nv == 4) NAME##_narrow_row(2, 4, K, a, b, bo, ks, c, co, nlast);                    \
    else if (nv == 3) NAME##_narrow_row(2, 3, K, a, b, bo, ks, c, co, nlast);                    \
    else if (nv == 2) NAME##_narrow_row(2, 2, K, a, b, bo, ks, c, co, nlast);                    \
    else NAME##_narrow_row(2, 1, K, a, b, bo, ks, c, co, nlast);                                 \
  }                                                                                              \
  /* Few rows: no packing; per row, C's chunk of SMALL_NB columns is                             \
   * accumulated over K four rows of B at a time (it stays in L1); narrow                        \
   * (S > 1): narrow_row, the columns past whole vectors scalar. */                              \
  static void NAME##_small(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,    \
                           const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc,         \
                           NAME##_epi epi, void *epi_ctx, int64_t i_off, int64_t j_off, int S) { \
    if (S > 1) { /* narrow: N <= 4 VL; a last partial vector overlaps the one before */         \
      int nv = (int)CEILDIV(N, VL);                                                              \
      int64_t co[4];                                                                             \
      for (int v = 0; v < nv; v++) co[v] = MIN(v * VL, N - VL);                                  \
      for (int64_t i = 0; i < M; i++) {                                                          \
        if (N < VL) NAME##_narrow_col(S, N, K, A + i * lda, B, ldb, C + i * ldc);                \
        else NAME##_narrow(S, nv, K, A + i * lda, B, co, ldb, C + i * ldc, co, VL);              \
        if (epi) epi(epi_ctx, i_off + i, j_off, 1, N, C + i * ldc, ldc);                         \
      }                                                                                          \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t i = 0; i < M; i++) {                                                            \
      const T *a = A + i * lda;                                                                  \
      T *c = C + i * ldc;                                                                        \
      for (int64_t j0 = 0; j0 < N; j0 += SMALL_NB) {                                             \
        int64_t nb = MIN(SMALL_NB, N - j0);                                                      \
        int64_t nv = nb / VL * VL;                                                               \
        for (int64_t j = 0; j < nb; j++) c[j0 + j] = 0;                                          \
        int64_t k = 0;                                                                           \
        for (; k + 4 <= K; k += 4) {                                                             \
          const T *b0 = B + k * ldb + j0, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;        \
          V a0 = (V)a[k], a1 = (V)a[k + 1], a2 = (V)a[k + 2], a3 = (V)a[k + 3];                  \
          for (int64_t j = 0; j < nv; j += VL) {                                                 \
            V s = VLOAD(V, c + j0 + j);                                                          \
            s = __builtin_elementwise_fma(a0, VLOAD(V, b0 + j), s);                              \
            s = __builtin_elementwise_fma(a1, VLOAD(V, b1 + j), s);                              \
            s = __builtin_elementwise_fma(a2, VLOAD(V, b2 + j), s);                              \
            s = __builtin_elementwise_fma(a3, VLOAD(V, b3 + j), s);                              \
            VSTORE(c + j0 + j, s);                                                               \
          }                                                                                      \
          COLD for (int64_t j = nv; j < nb; j++) {                                               \
            T s = c[j0 + j];                                                                     \
            s = __builtin_elementwise_fma(a[k], b0[j], s);                                       \
            s = __builtin_elementwise_fma(a[k + 1], b1[j], s);                                   \
            s = __builtin_elementwise_fma(a[k + 2], b2[j], s);                                   \
            s = __builtin_elementwise_fma(a[k + 3], b3[j], s);                                   \
            c[j0 + j] = s;                                                                       \
          }                                                                                      \
        }                                                                                        \
        for (; k < K; k++) {                                                                     \
          const T *b0 = B + k * ldb + j0;                                                        \
          V a0 = (V)a[k];                                                                        \
          for (int64_t j = 0; j < nv; j += VL)                                                   \
            VSTORE(c + j0 + j,                                                                   \
                         __builtin_elementwise_fma(a0, VLOAD(V, b0 + j),                         \
                                                   VLOAD(V, c + j0 + j)));                       \
          COLD for (int64_t j = nv; j < nb; j++)                                                 \
            c[j0 + j] = __builtin_elementwise_fma(a[k], b0[j], c[j0 + j]);                       \
        }                                                                                        \
        if (epi) epi(epi_ctx, i_off + i, j_off + j0, 1, nb, c + j0, ldc);                        \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  /* Few rows, B given transposed (_tex): C[i, j] is the dot product of row                      \
   * i of A and row j of Bt, both contiguous: four rows of Bt at a time,                         \
   * each summed over K in vectors (two chains), then across the lanes                           \
   * (hsum4_<V>, the four at once); VL rows at a time when K is one vector                       \
   * (dotvl_<V>, the same sums). */                                                              \
                                                                                                 \
  static void NAME##_small_t(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,  \
                             const T *restrict Bt, int64_t ldb, T *restrict C, int64_t ldc,      \
                             NAME##_epi epi, void *epi_ctx, int64_t i_off, int64_t j_off) {      \
    int64_t kv = K / VL * VL;                                                                    \
    for (int64_t i = 0; i < M; i++) {                                                            \
      const T *a = A + i * lda;                                                                  \
      T *c = C + i * ldc;                                                                        \
      for (int64_t j0 = 0; j0 < N; j0 += SMALL_NB) {                                             \
        int64_t nb = MIN(SMALL_NB, N - j0);                                                      \
        int64_t j = j0;                                                                          \
        /* K one vector (VL): VL rows per lane-sum tree (dotvl_<V>: fma(a, b, 0) is          \
         * s[q][0] + s[q][1] below, bit for bit) */                                              \
        if (K == VL)                                                                             \
          for (; j + VL <= j0 + nb; j += VL) dotvl_##V(a, Bt + j * ldb, ldb, c + j);              \
        for (; j + 4 <= j0 + nb; j += 4) {                                                       \
          V s[4][2];                                                                             \
          _Pragma("clang loop unroll(full)") for (int q = 0; q < 4; q++) {                       \
            s[q][0] = (V)0;                                                                      \
            s[q][1] = (V)0;                                                                      \
          }                                                                                      \
          int64_t k = 0;                                                                         \
          for (; k + 2 * VL <= K; k += 2 * VL) {                                                 \
            V a0 = VLOAD(V, a + k), a1 = VLOAD(V, a + k + VL);                                   \
            _Pragma("clang loop unroll(full)") for (int q = 0; q < 4; q++) {                     \
              const T *b = Bt + (j + q) * ldb + k;                                               \
              s[q][0] = __builtin_elementwise_fma(a0, VLOAD(V, b), s[q][0]);                     \
              s[q][1] = __builtin_elementwise_fma(a1, VLOAD(V, b + VL), s[q][1]);                \
            }                                                                                    \
          }                                                                                      \
          for (; k < kv; k += VL) {                                                              \
            V a0 = VLOAD(V, a + k);                                                              \
            _Pragma("clang loop unroll(full)") for (int q = 0; q < 4; q++)                       \
              s[q][0] =                                                                          \
                  __builtin_elementwise_fma(a0, VLOAD(V, Bt + (j + q) * ldb + k), s[q][0]);      \
          }                                                                                      \
          V v4[4] = {s[0][0] + s[0][1], s[1][0] + s[1][1], s[2][0] + s[2][1],                    \
                     s[3][0] + s[3][1]};                                                         \
          T t4[4];                                                                               \
          hsum4_##V(v4, t4);                                                                     \
          _Pragma("clang loop unroll(full)") for (int q = 0; q < 4; q++) {                       \
            T t = t4[q];                                                                         \
            COLD for (int64_t kk = kv; kk < K; kk++)                                             \
              t = __builtin_elementwise_fma(a[kk], Bt[(j + q) * ldb + kk], t);                   \
            c[j + q] = t;                                                                        \
          }                                                                                      \
        }                                                                                        \
        COLD for (; j < j0 + nb; j++) {                                                          \
          T t = 0;                                                                               \
          COLD for (int64_t kk = 0; kk < K; kk++)                                                \
            t = __builtin_elementwise_fma(a[kk], Bt[j * ldb + kk], t);                           \
          c[j] = t;                                                                              \
        }                                                                                        \
        if (epi) epi(epi_ctx, i_off + i, j_off + j0, 1, nb, c + j0, ldc);                        \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
  /* Few rows, B prepacked (_pex): per row and chunk of SMALL_NB columns,                        \
   * q <= 4 panels at a time, each element summed over all of K in k order                       \
   * from zero, exactly as _small sums it (bit for bit the same results).                        \
   * b: the first panel, ps: elements from one panel to the next, nlast: valid                   \
   * columns of the q-th panel (the others are whole). */                                        \
  static inline __attribute__((always_inline)) void NAME##_spanels(                              \
      int q, int64_t K, const T *restrict a, const T *restrict b, int64_t ps, T *restrict c,     \
      int64_t nlast) {                                                                           \
    V acc[4][2];                                                                                 \
    _Pragma("clang loop unroll(full)") for (int p = 0; p < 4; p++) {                             \
      acc[p][0] = (V)0;                                                                          \
      acc[p][1] = (V)0;                                                                          \
    }                                                                                            \
    for (int64_t k = 0; k < K; k++) {                                                            \
      V av = (V)a[k];                                                                            \
      _Pragma("clang loop unroll(full)") for (int p = 0; p < 4; p++) {                           \
        if (p < q) {                                                                             \
          const T *bk = b + p * ps + k * 2 * VL;                                                 \
          acc[p][0] = __builtin_elementwise_fma(av, VLOAD(V, bk), acc[p][0]);                    \
          acc[p][1] = __builtin_elementwise_fma(av, VLOAD(V, bk + VL), acc[p][1]);               \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
    _Pragma("clang loop unroll(full)") for (int p = 0; p < 4; p++) {                             \
      if (p < q - 1 || (p == q - 1 && nlast == 2 * VL)) {                                        \
        VSTORE(c + p * 2 * VL, acc[p][0]);                                                       \
        VSTORE(c + p * 2 * VL + VL, acc[p][1]);                                                  \
      } else if (p == q - 1) {                                                                   \
        T tile[2 * VL];                                                                          \
        VSTORE(&tile[0], acc[p][0]);                                                             \
        VSTORE(&tile[VL], acc[p][1]);                                                            \
        COLD for (int64_t j = 0; j < nlast; j++) c[p * 2 * VL + j] = tile[j];                    \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  static void NAME##_small_packed(int64_t M, int64_t N, int64_t K, const T *restrict A,          \
                                  int64_t lda, const T *restrict Bp, T *restrict C, int64_t ldc, \
                                  NAME##_epi epi, void *epi_ctx, int64_t i_off, int64_t j_off,   \
                                  int S) {                                                       \
    const int64_t ps = K * 2 * VL;                                                               \
    if (S > 1) { /* narrow: the panels' zero columns let every vector be whole */               \
      int nv = (int)CEILDIV(N, VL);                                                              \
      int64_t bo[4], co[4];                                                                      \
      for (int v = 0; v < nv; v++) co[v] = v * VL, bo[v] = (v / 2) * ps + (v % 2) * VL;          \
      for (int64_t i = 0; i < M; i++) {                                                          \
        NAME##_narrow(S, nv, K, A + i * lda, Bp, bo, 2 * VL, C + i * ldc, co, N - (nv - 1) * VL);\
        if (epi) epi(epi_ctx, i_off + i, j_off, 1, N, C + i * ldc, ldc);                         \
      }                                                                                          \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t i = 0; i < M; i++) {                                                            \
      const T *a = A + i * lda;                                                                  \
      T *c = C + i * ldc;                                                                        \
      for (int64_t j0 = 0; j0 < N; j0 += SMALL_NB) { /* SMALL_NB: a multiple of 2 * VL */        \
        int64_t nb = MIN(SMALL_NB, N - j0);                                                      \
        int64_t jp = 0;                                                                          \
        for (; jp + 8 * VL <= nb; jp += 8 * VL)                                                  \
          NAME##_spanels(4, K, a, Bp + (j0 + jp) / (2 * VL) * ps, ps, c + j0 + jp, 2 * VL);      \
        int64_t rest = nb - jp, q = CEILDIV(rest, 2 * VL), nlast = rest - (q - 1) * 2 * VL;      \
        const T *b = Bp + (j0 + jp) / (2 * VL) * ps;                                             \
        if (q == 4) NAME##_spanels(4, K, a, b, ps, c + j0 + jp, nlast); /* last partial */       \
        else if (q == 3) NAME##_spanels(3, K, a, b, ps, c + j0 + jp, nlast);                     \
        else if (q == 2) NAME##_spanels(2, K, a, b, ps, c + j0 + jp, nlast);                     \
        else if (q == 1) NAME##_spanels(1, K, a, b, ps, c + j0 + jp, nlast);                     \
        if (epi) epi(epi_ctx, i_off + i, j_off + j0, 1, nb, c + j0, ldc);                        \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  /* Elements of caller workspace the entry wants for this shape (0: none;                       \
   * its own stack buffers then hold the B block, NC_STACK columns wide). */                     \
  int64_t NAME##_work(int64_t M, int64_t N, int64_t K);                                          \
  int64_t NAME##_work(int64_t M, int64_t N, int64_t K) {                                         \
    if (M < SMALL_M || K <= 0 || N <= NC_STACK) return 0;                                        \
    /* the B block, the A block (packed even where N <= DIRECT_A_MAX_N when                      \
     * lda is a multiple of 4 KiB: _piece; lda is not known here), align */                      \
    return KC_HEAP * (NC_HEAP + MC_MAX) + 64 / (int64_t)sizeof(T);                               \
  }                                                                                              \
                                                                                                 \
  /* The piece rows [0, M) x columns [0, N) of the pointers given (i_off,                        \
   * j_off: where it sits in the whole C, for the epilogue), K blocked by                        \
   * kc_b (decided from the whole problem), packed unless small. packed: B                       \
   * is the piece's first panel of a prepacked B (_pex), ldb and work                            \
   * unused: the A block, even a KC_HEAP deep one, fits in the stack buffer                      \
   * that holds the B block when B is not prepacked. */                                          \
  static inline __attribute__((always_inline)) void NAME##_piece(                                \
      int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda, const T *restrict B,    \
      int64_t ldb, T *restrict C, int64_t ldc, T *restrict work, int heap, int small, int strands,\
      int64_t kc_b, NAME##_epi epi, void *epi_ctx, int64_t i_off, int64_t j_off, int packed,     \
      int trans) {                                                                               \
    if (M <= 0 || N <= 0) return;                                                                \
    if (K <= 0) {                                                                                \
      COLD for (int64_t i = 0; i < M; i++)                                                       \
        COLD for (int64_t j = 0; j < N; j++) C[i * ldc + j] = 0;                                 \
      if (epi) epi(epi_ctx, i_off, j_off, M, N, C, ldc);                                         \
      return;                                                                                    \
    }                                                                                            \
    if (small) {                                                                                 \
      if (packed)                                                                                \
        NAME##_small_packed(M, N, K, A, lda, B, C, ldc, epi, epi_ctx, i_off, j_off, strands);    \
      else if (trans)                                                                            \
        NAME##_small_t(M, N, K, A, lda, B, ldb, C, ldc, epi, epi_ctx, i_off, j_off);             \
      else NAME##_small(M, N, K, A, lda, B, ldb, C, ldc, epi, epi_ctx, i_off, j_off, strands);   \
      return;                                                                                    \
    }                                                                                            \
    /* the B block, then the A block; a prepacked B leaves it all to A */                        \
    T stack[KC_MAX * NC_STACK + KC_MAX * MC_MAX] __attribute__((aligned(64)));                   \
    T edge[(KC_HEAP > KC_MAX ? KC_HEAP : KC_MAX) * MR] __attribute__((aligned(64))); /* medge */ \
    _Static_assert(KC_HEAP * MC_MAX <= KC_MAX * NC_STACK + KC_MAX * MC_MAX, "A block");          \
    _Static_assert(MR > MR4, "the edge path takes the last rows only: MR must exceed 4");        \
    /* wide B blocks (fewer passes over A) in the caller's workspace */                          \
    T *wal = heap && !packed ? (T *)(((uintptr_t)work + 63) & ~(uintptr_t)63) : 0;               \
    T *Bp = packed ? 0 : heap ? wal : stack;                                                     \
    T *Ap = packed ? stack : heap ? wal + KC_HEAP * NC_HEAP : stack + KC_MAX * NC_STACK;         \
    int64_t nc_b = block_size(N, heap || packed ? NC_HEAP : NC_STACK, 2 * VL);                   \
    int64_t mc_b = block_size(M, MC_MAX, MR);                                                    \
    /* A read in place, not packed, where few column panels would share                          \
     * the packed copy (measured on znver5, GFLOP/s packed -> in place:                          \
     * 128x128x64 222 -> 239, 256^3 240 -> 249, 512^3 250 -> 254, N = 10                         \
     * 71 -> 109; 1024^3 and 2048^3 equal or 3% slower: they keep packing).                      \
     * Not where lda is a multiple of 4 KiB (a 1x1 conv over 1024 or 2048                        \
     * channels): the MR rows then map to one L1 set and evict the B panel                       \
     * (AVX2 host, L2 flushed, 49 x 512 x 2048 and 196 x 256 x 1024 with B                       \
     * prepacked: +4% packed) */                                                                 \
    int direct = N <= DIRECT_A_MAX_N && (lda * (int64_t)sizeof(T)) % 4096 != 0;                  \
    /* B read in place, not packed, where that is faster than packing it                         \
     * (measured on znver5, GFLOP/s packed -> in place): B small enough that                     \
     * its rows, ldb apart, stay in L1 (128x128x64 247 -> 258, 64^3 222 ->                       \
     * 233; at 128 x 128 or more L1 conflicts cost 15%), or few row tiles to                     \
     * share the packed copy and B within the caches (24 x 1000 x 1000 177 ->                    \
     * 216, 32 x 512 x 784 168 -> 195; 16 x 2048 x 2048 from memory 101 -> 79)                   \
     */                                                                                          \
    int direct_b = !packed && !trans &&                                                          \
                   (K * N <= DIRECT_B_L1 || (M <= DIRECT_B_MAX_M && K * N <= DIRECT_B_CACHED));  \
    for (int64_t jc = 0; jc < N; jc += nc_b) {                                                   \
      int64_t nc = MIN(nc_b, N - jc);                                                            \
      for (int64_t pc = 0; pc < K; pc += kc_b) {                                                 \
        int64_t kc = MIN(kc_b, K - pc);                                                          \
        /* Bb + (jr / 2VL) * ps: the kc x 2VL panel of columns jc + jr.. */                      \
        const T *Bb;                                                                             \
        int64_t ps;                                                                              \
        int64_t nfull = nc; /* columns read from Bb; the rest from Bp */                         \
        if (packed) {                                                                            \
          Bb = B + jc * K + pc * 2 * VL; /* panel jc / 2VL, row pc */                            \
          ps = K * 2 * VL;                                                                       \
        } else if (direct_b) { /* whole panels in place, a last partial one packed */            \
          Bb = B + pc * ldb + jc;                                                                \
          ps = 2 * VL;                                                                           \
          nfull = nc / (2 * VL) * 2 * VL;                                                        \
          if (nfull < nc) NAME##_pack_b(kc, nc - nfull, B + pc * ldb + jc + nfull, ldb, Bp);     \
        } else {                                                                                 \
          if (trans) NAME##_pack_b_t(kc, nc, B + jc * ldb + pc, ldb, Bp);                        \
          else NAME##_pack_b(kc, nc, B + pc * ldb + jc, ldb, Bp);                                \
          Bb = Bp;                                                                               \
          ps = kc * 2 * VL;                                                                      \
        }                                                                                        \
        for (int64_t ic = 0; ic < M; ic += mc_b) {                                               \
          int64_t mc = MIN(mc_b, M - ic);                                                        \
          if (!direct) NAME##_pack_a(mc, kc, A + ic * lda + pc, lda, Ap);                        \
          /* A in place: a last row tile of at most MR4 rows goes to the packed                  \
           * 4-row tile (one tile instance less to compile), its rows packed here */             \
          int64_t medge = mc % MR;                                                               \
          if (direct && medge > 0 && medge <= MR4)                                               \
            NAME##_pack_a(medge, kc, A + (ic + mc - medge) * lda + pc, lda, edge);               \
          for (int64_t jr = 0; jr < nc; jr += 2 * VL) {                                          \
            int64_t nr = MIN(2 * VL, nc - jr);                                                   \
            const T *bp = jr < nfull ? Bb + jr / (2 * VL) * ps : Bp;                             \
            int64_t bk = jr < nfull && direct_b ? ldb : 2 * VL; /* B row stride */               \
            if (direct && nr <= VL) { /* one vector: tiles of MR_TALL rows */                    \
              for (int64_t ir = 0; ir < mc; ir += MR_TALL) {                                     \
                int64_t mr = MIN(MR_TALL, mc - ir);                                              \
                const T *ad = A + (ic + ir) * lda + pc;                                          \
                T *cp = C + (ic + ir) * ldc + jc + jr;                                           \
                int first = pc == 0;                                                             \
                gemm_pf none = {0};                                                              \
                NAME##_micro_da(MR_TALL, 1, kc, ad, lda, bp, bk, cp, ldc, mr, nr, first, none);  \
              }                                                                                  \
              continue;                                                                          \
            }                                                                                    \
            /* B prepacked: the panel read next (this block's next one, else its                 \
             * first for the next row block, else the first of the next K or                     \
             * column block) is prefetched a slice per row tile, so                              \
             * it is in cache when its first tile starts; the hardware prefetcher                \
             * restarts on every panel, which sit K * 2VL elements apart (AVX2                   \
             * host, caches flushed between calls, GFLOP/s median: 196 x 256 x                   \
             * 1024 +3-11%, 49 x 512 x 2048 +2-20%, 392 x 512 x 2048 +6-13%),                    \
             * where B is too large to stay in L2 across the row blocks */                       \
            const char *pf = 0;                                                                  \
            int64_t pf_lines = 0, ntiles = CEILDIV(mc, MR);                                      \
            if (packed && K * CEILDIV(N, 2 * VL) * 2 * VL * (int64_t)sizeof(T) > PF_MIN_B) {     \
              if (jr + 2 * VL < nc) pf = (const char *)(Bb + (jr / (2 * VL) + 1) * ps);          \
              else if (ic + mc < M) pf = (const char *)Bb;                                       \
              else if (pc + kc < K) pf = (const char *)(B + jc * K + (pc + kc) * 2 * VL);        \
              else if (jc + nc < N) pf = (const char *)(B + (jc + nc) * K);                      \
              pf_lines = kc * 2 * VL * (int64_t)sizeof(T) / 64;                                  \
            }                                                                                    \
            for (int64_t ir = 0; ir < mc; ir += MR) {                                            \
              int64_t mr = MIN(MR, mc - ir);                                                     \
              /* this tile's slice of the next panel: lines l0..l1, one or two per k */          \
              int64_t t = ir / MR, l0 = t * pf_lines / ntiles, l1 = (t + 1) * pf_lines / ntiles; \
              gemm_pf tp = {0, 0, l1 - l0 > kc ? 128 : 64};                                      \
              if (pf) tp = (gemm_pf){pf + l0 * 64, CEILDIV((l1 - l0) * 64, tp.step), tp.step};   \
              T *cp = C + (ic + ir) * ldc + jc + jr;                                             \
              int first = pc == 0;                                                               \
              if (direct && mr > MR4) { /* A as it is */                                         \
                const T *ad = A + (ic + ir) * lda + pc;                                          \
                NAME##_micro_da(MR, 2, kc, ad, lda, bp, bk, cp, ldc, mr, nr, first, tp);         \
                continue;                                                                        \
              }                                                                                  \
              const T *ap = direct ? edge : Ap + ir * kc;                                        \
              /* edge tiles: fewer rows (a 4-row tile) or one vector */                          \
              if (nr > VL) {                                                                     \
                if (mr > MR4) NAME##_micro(MR, 2, kc, ap, bp, bk, cp, ldc, mr, nr, first, tp);   \
                else NAME##_micro(MR4, 2, kc, ap, bp, bk, cp, ldc, mr, nr, first, tp);           \
              } else {                                                                           \
                if (mr > MR4) NAME##_micro(MR, 1, kc, ap, bp, bk, cp, ldc, mr, nr, first, tp);   \
                else NAME##_micro(MR4, 1, kc, ap, bp, bk, cp, ldc, mr, nr, first, tp);           \
              }                                                                                  \
            }                                                                                    \
          }                                                                                      \
          if (epi && pc + kc >= K)                                                               \
            epi(epi_ctx, i_off + ic, j_off + jc, mc, nc, C + ic * ldc + jc, ldc);                \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }                                                                                              \
                                                                                                 \
  /* _ex and _pex: packed says which B they got. */                                              \
  static inline __attribute__((always_inline)) void NAME##_run(                                  \
      int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda, const T *restrict B,    \
      int64_t ldb, T *restrict C, int64_t ldc, T *restrict work, int64_t part, int64_t nparts,   \
      NAME##_epi epi, void *epi_ctx, int packed, int trans) {                                    \
    if (M <= 0 || N <= 0 || nparts < 1 || part < 0 || part >= nparts) return;                    \
    /* how every element is summed: from the whole problem, never the piece */                   \
    int small = M < SMALL_M;                                                                     \
    /* narrow (narrow_row): K summed in S strands of independent FMA chains */                      \
    int strands = !small || trans || N < VL || N > 4 * VL ? 1 : N == VL ? 8 : N <= 2 * VL ? 4 : 2; \
    /* _pex blocks K as _ex does with the workspace it asks for */                               \
    int heap = !small && (work || packed) && NAME##_work(M, N, K) > 0;                           \
    int64_t kc_b = block_size(K, heap ? KC_HEAP : KC_MAX, 1);                                    \
    int64_t m0 = 0, m1 = M, n0 = 0, n1 = N;                                                      \
    if (nparts > 1) {                                                                            \
      int64_t mu = CEILDIV(M, MR), nu = CEILDIV(N, 2 * VL);                                      \
      /* rows when there are enough and M >= N: each part then packs all of B                    \
       * (K x N) and its share of A; columns duplicate A's packing instead */                    \
      if (!small && mu >= 2 * nparts && (M >= N || nu < 2 * nparts)) { /* rows, MR units */      \
        int64_t q = mu / nparts, r = mu % nparts;                                                \
        m0 = (q * part + MIN(part, r)) * MR;                                                     \
        m1 = MIN(M, (q * (part + 1) + MIN(part + 1, r)) * MR);                                   \
      } else { /* columns, in 2 * VL units */                                                    \
        int64_t q = nu / nparts, r = nu % nparts;                                                \
        n0 = (q * part + MIN(part, r)) * 2 * VL;                                                 \
        n1 = MIN(N, (q * (part + 1) + MIN(part + 1, r)) * 2 * VL);                               \
      }                                                                                          \
      if (m0 >= m1 || n0 >= n1) return;                                                          \
    }                                                                                            \
    /* a prepacked B's column n0 (a multiple of 2 VL) starts panel n0 / 2VL,                     \
     * n0 * K elements in */                                                                     \
    const T *Bn = packed ? B + n0 * K : trans ? B + n0 * ldb : B + n0; /* column n0 */           \
    NAME##_piece(m1 - m0, n1 - n0, K, A + m0 * lda, lda, Bn, ldb, C + m0 * ldc + n0, ldc, work,  \
                 heap, small, strands, kc_b, epi, epi_ctx, m0, n0, packed, trans);               \
  }                                                                                              \
                                                                                                 \
  void NAME##_ex(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,              \
                 const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc,                   \
                 T *restrict work, int64_t part, int64_t nparts, NAME##_epi epi,                 \
                 void *epi_ctx);                                                                 \
  void NAME##_ex(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,              \
                 const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc,                   \
                 T *restrict work, int64_t part, int64_t nparts, NAME##_epi epi,                 \
                 void *epi_ctx) {                                                                \
    NAME##_run(M, N, K, A, lda, B, ldb, C, ldc, work, part, nparts, epi, epi_ctx, 0, 0);         \
  }                                                                                              \
                                                                                                 \
  /* B given transposed: Bt is N x K, row stride ldbt (B[k, j] = Bt[j * ldbt                     \
   * + k]); otherwise _ex, with the same workspace (_work). */                                   \
  void NAME##_tex(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,             \
                  const T *restrict Bt, int64_t ldbt, T *restrict C, int64_t ldc,                \
                  T *restrict work, int64_t part, int64_t nparts, NAME##_epi epi,                \
                  void *epi_ctx);                                                                \
  void NAME##_tex(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,             \
                  const T *restrict Bt, int64_t ldbt, T *restrict C, int64_t ldc,                \
                  T *restrict work, int64_t part, int64_t nparts, NAME##_epi epi,                \
                  void *epi_ctx) {                                                               \
    NAME##_run(M, N, K, A, lda, Bt, ldbt, C, ldc, work, part, nparts, epi, epi_ctx, 0, 1);       \
  }                                                                                              \
                                                                                                 \
  /* B prepacked: Bp holds ceil(N / 2VL) panels of K x 2VL elements, panel p                     \
   * at Bp + p * K * 2VL, element (k, j) of B at Bp[(j / 2VL) * K * 2VL +                        \
   * k * 2VL + j % 2VL], zeros past column N (the layout rt_prepack writes).                     \
   * No workspace: the stack buffers suffice. The same results bit for bit                       \
   * as _ex given the workspace _work asks for. */                                               \
  void NAME##_pex(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,             \
                  const T *restrict Bp, T *restrict C, int64_t ldc, int64_t part,                \
                  int64_t nparts, NAME##_epi epi, void *epi_ctx);                                \
  void NAME##_pex(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,             \
                  const T *restrict Bp, T *restrict C, int64_t ldc, int64_t part,                \
                  int64_t nparts, NAME##_epi epi, void *epi_ctx) {                               \
    NAME##_run(M, N, K, A, lda, Bp, 0, C, ldc, 0, part, nparts, epi, epi_ctx, 1, 0);             \
  }                                                                                              \
                                                                                                 \
  /* the whole C, no epilogue */                                                                 \
  void NAME(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,                   \
            const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc, T *restrict work);     \
  void NAME(int64_t M, int64_t N, int64_t K, const T *restrict A, int64_t lda,                   \
            const T *restrict B, int64_t ldb, T *restrict C, int64_t ldc, T *restrict work) {    \
    NAME##_ex(M, N, K, A, lda, B, ldb, C, ldc, work, 0, 1, 0, 0);                                \
  }

/* The families. The build compiles this file twice more, to objects that
 * libkiln embeds (the prebuilt GEMM, jit/template.h; jit/engine.c loads
 * them: what a kernel with symbolic sizes calls instead of compiling the
 * template again): with
 * -DKILN_GEMM_PREBUILT=kiln_pre_v4_ -DKILN_GEMM_FAMILIES=1 at x86-64-v4 (the
 * AVX-512 families only, names prefixed) and with ...v3_ and
 * -DKILN_GEMM_FAMILIES=2 at x86-64-v3 (the AVX2 ones). */
#ifdef KILN_GEMM_PREBUILT
#define FAMILY(name) FAMILY_(KILN_GEMM_PREBUILT, name)
#define FAMILY_(prefix, name) FAMILY__(prefix, name)
#define FAMILY__(prefix, name) prefix##name
#else
#define FAMILY(name) name
#endif
#ifndef KILN_GEMM_FAMILIES
#define KILN_GEMM_FAMILIES 3 /* 1: the AVX-512 ones, 2: the AVX2 ones */
#endif
/* expands FAMILY(...) before DEFINE_GEMM pastes NAME */
#define DEFINE_FAMILY(NAME, ...) DEFINE_GEMM(NAME, __VA_ARGS__)

/* MR is read where each family expands: 8 rows for the AVX-512 ones, 6 for
 * AVX2's (-DKILN_GEMM_MR=N sets every family's, for experiments;
 * jit_gemm_tile_rows, jit/matmul.c, says the same to the JIT) */
#ifdef KILN_GEMM_MR
#define MR KILN_GEMM_MR
#else
#define MR 8
#endif
#if KILN_GEMM_FAMILIES & 1
DEFINE_FAMILY(FAMILY(kiln_gemm_f32_v16), float, v16f, 16, v8f, NC_MAX_F32, NC_HEAP_F32)
DEFINE_FAMILY(FAMILY(kiln_gemm_f64_v8), double, v8d, 8, v8d, NC_MAX_F32 / 2, NC_HEAP_F32 / 2)
#endif
#ifndef KILN_GEMM_MR
#undef MR
#define MR 6
#endif
#if KILN_GEMM_FAMILIES & 2
DEFINE_FAMILY(FAMILY(kiln_gemm_f32_v8), float, v8f, 8, v8f, NC_MAX_F32, NC_HEAP_F32)
DEFINE_FAMILY(FAMILY(kiln_gemm_f64_v4), double, v4d, 4, v8d, NC_MAX_F32 / 2, NC_HEAP_F32 / 2)
#endif
