/* gemm_int8_vnni.h - the x86-64 entries of the 8-bit GEMM template
 * (gemm_int8.c includes it once, at its end, on x86-64): what they share (the
 * layout, the packing, the corrections; the blocking is gemm_int8_driver.h,
 * instantiated per micro-kernel) and the AVX512-VNNI micro-kernel, whose
 * entries are kiln_mmi_AB_avx512vnni; gemm_int8_avx2.h adds the AVX-VNNI
 * and AVX2 ones. Every entry has the generic entries' arguments and
 * results, bit for bit.
 *
 * vpdpbusd adds four u8 x s8 products into each int32 lane exactly (no
 * intermediate saturation, unlike vpmaddubsw). Other signedness is shifted
 * into that form: a signed a is read as a' = a + 128 (u8, one xor of 0x80 per
 * broadcast), an unsigned b is packed as b' = b - 128 (s8, an xor at packing).
 * With R = sum a' b', RA_i = sum_k a_ik and CB_j = sum_k b_kj (true values),
 * sa = a is signed, ub = b is unsigned:
 *   sum (a - za)(b - zb) = R - (za + 128 sa) CB - (zb - 128 ub) RA
 *                          + K (za zb + 16384 sa ub)        (mod 2^32)
 * all in uint32 (wrapping), so the result is the generic entry's.
 *
 * Blocking: rows of the part in chunks of MC = 2048 (their RA on the
 * stack); per chunk, N in chunks whose C rows fit ~512 KB (64 to 2048
 * columns); per N chunk, K in blocks of KC = 512 bytes and the chunk's
 * panels of NR = 64 columns (four vectors of 16 lanes: whole cache lines of
 * B's rows), each K block across the panels, or, for few rows (their A
 * under 256 KB: a decode step), each panel's K blocks in turn (a prepacked
 * panel then streams in order, and the micro-kernels prefetch it 16 KB
 * ahead into L2). Per K block of a panel: its block of B
 * packed on the stack (32 KB) in groups of 4 k (bp[g][col][4]: one 64-byte
 * load per 16 columns), zero-padded past K and N, then MR = 6 rows of A at a
 * time against it (24 accumulators), each 4-byte group of a row broadcast
 * from A in place; the last rows in tiles of 3, 2 or 1 rows. Partial
 * panels go through a tile on the stack. C holds R between K blocks; the
 * corrections are applied when the N chunk is done.
 *
 * Prepacked B (_pex entries; src/prepack.c writes it once for a constant or
 * weight B, kiln.packed_b = 64): for each panel of 64 columns in order, the
 * whole K rounded up to 4 in groups of 4 k (bytes [g][col][4]: b for si8 b,
 * b ^ 0x80 for ui8 b; zero past K and N), i.e. ceil(N / 64) * 64 * K4
 * bytes, then ceil(N / 64) * 64 uint32 column sums of the true b (0 past N).
 * A K block of a panel is then a contiguous slice, read in place.
 * A B given row-major with at most MMI_GENERIC_MAX_M rows in A goes through
 * the generic loops instead (vectorized for the entry's target). */
#include <immintrin.h>

enum { MMI_MR = 6, MMI_NR = 64, MMI_KC = 512, MMI_MC = 2048, MMI_NCMAX = 2048 };
_Static_assert(MMI_NR == MMI_PANEL, "mmi_part cuts C at the panels the kernels read");
#define MMI_CHUNK_BYTES (512 * 1024)
#define MMI_PANEL_MAJOR_A_BYTES (256 * 1024) /* gemm_int8_driver.h: few rows */
/* A B given row-major (not prepacked) with this many rows or fewer runs the
 * generic loops (vectorized for the entry's target): packing B per call
 * costs more than the kernels save there (1 x 4096 x 4096, AVX2: 3.0 ms
 * packed vs 1.6 ms; at 3 rows 3.5 vs 8.9) */
#define MMI_GENERIC_MAX_M 2

#define VNNI_FN __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define VNNI_INLINE static inline __attribute__((target("avx512f,avx512bw,avx512vnni"), \
                                                 always_inline))

/* 4 bytes of row a at k (fewer past K: zero-filled), as the u8 a' */
static inline __attribute__((always_inline)) uint32_t a_group(const uint8_t *a, int64_t k,
                                                               int64_t K, int sa) {
  uint32_t v = 0;
  if (k + 4 <= K) {
    __builtin_memcpy(&v, a + k, 4);
  } else {
    for (int64_t t = 0; k + t < K; t++) v |= (uint32_t)a[k + t] << (8 * t);
  }
  return sa ? v ^ 0x80808080u : v;
}

/* Pack B[k0 .. k0 + kc) x [j0, j0 + NR) into bp (b' = b ^ 0x80 for unsigned
 * b; zero past K and N) and add its true column sums into cb. Whole groups
 * of a whole panel take the loops O3 vectorizes; the edges go byte by byte. */
static inline __attribute__((always_inline)) void
pack_panel(const uint8_t *B, int64_t N, int64_t k0, int64_t kc, int64_t j0, uint8_t *bp,
           uint32_t *cb, int sb) {
  int64_t groups = (kc + 3) / 4, whole = j0 + MMI_NR <= N ? kc / 4 : 0;
  uint8_t flip = sb ? 0 : 0x80;
  for (int64_t g = 0; g < whole; g++) {
    const uint8_t *r0 = B + (k0 + 4 * g) * N + j0, *r1 = r0 + N, *r2 = r1 + N, *r3 = r2 + N;
    uint8_t *o = bp + g * MMI_NR * 4;
    for (int c = 0; c < MMI_NR; c++) {
      o[4 * c] = r0[c] ^ flip;
      o[4 * c + 1] = r1[c] ^ flip;
      o[4 * c + 2] = r2[c] ^ flip;
      o[4 * c + 3] = r3[c] ^ flip;
    }
    for (int c = 0; c < MMI_NR; c++)
      cb[c] += sb ? (uint32_t)((int32_t)(int8_t)r0[c] + (int8_t)r1[c] + (int8_t)r2[c] +
                               (int8_t)r3[c])
                  : (uint32_t)r0[c] + r1[c] + r2[c] + r3[c];
  }
  for (int64_t g = whole; g < groups; g++)
    for (int64_t c = 0; c < MMI_NR; c++)
      for (int t = 0; t < 4; t++) {
        int64_t k = k0 + 4 * g + t, j = j0 + c;
        uint8_t v = 0;
        if (k < k0 + kc && j < N) {
          uint8_t raw = B[k * N + j];
          cb[c] += sb ? (uint32_t)(int32_t)(int8_t)raw : (uint32_t)raw;
          v = (uint8_t)(raw ^ flip);
        }
        bp[(g * MMI_NR + c) * 4 + t] = v;
      }
}

static inline __attribute__((always_inline)) uint32_t ld_u(const uint8_t *p, int64_t k) {
  uint32_t v;
  __builtin_memcpy(&v, p + k, 4);
  return v;
}
static inline __attribute__((always_inline)) uint32_t ld_s(const uint8_t *p, int64_t k) {
  return ld_u(p, k) ^ 0x80808080u;
}

/* A prepacked B read panel by panel (gemm_int8_driver.h's order for few
 * rows) is one stream in memory order: the micro-kernels prefetch it
 * MMI_PF bytes ahead into L2, a prefetch per line (the qmatmul template's
 * GEMVs found L2 better than L1: an L1 prefetch holds one of the few fill
 * buffers until its line arrives). Prefetches never fault: past the end
 * of B they are dropped. */
enum { MMI_PF = 16384 };
static inline __attribute__((always_inline)) void prefetch_group(const uint8_t *bg) {
  for (int l = 0; l < MMI_NR * 4; l += 64) __builtin_prefetch(bg + MMI_PF + l, 0, 1);
}

/* one group of 4 k for MR rows: acc += a'[r] . bp[g] */
VNNI_INLINE void micro_group(__m512i acc[][4], const uint8_t *const *rows, int64_t k,
                             const uint8_t *bg, int sa, const int MR) {
  __m512i b[4];
  for (int h = 0; h < 4; h++) b[h] = _mm512_loadu_si512((const void *)(bg + 64 * h));
  for (int r = 0; r < MR; r++) {
    __m512i av = _mm512_set1_epi32((int)(sa ? ld_s(rows[r], k) : ld_u(rows[r], k)));
    for (int h = 0; h < 4; h++) acc[r][h] = _mm512_dpbusd_epi32(acc[r][h], av, b[h]);
  }
}

/* rows [i, i + MR) (MR 1, 2, 3 or MMI_MR) of the panel: acc (+)= a' . bp over kc,
 * into tile (row stride ldt), adding to what it holds unless first. The
 * groups inside K read 4 bytes at once; a last partial one is zero-filled.
 * pf: prefetch bp ahead (prefetch_group). */
VNNI_INLINE void micro(const uint8_t *A, int64_t K, int64_t i, int64_t k0, int64_t kc,
                       const uint8_t *bp, uint32_t *tile, int64_t ldt, int first, int sa,
                       int pf, const int MR) {
  __m512i acc[MMI_MR][4];
  const uint8_t *rows[MMI_MR];
  for (int r = 0; r < MR; r++) {
    rows[r] = A + (i + r) * K + k0;
    for (int h = 0; h < 4; h++)
      acc[r][h] = first ? _mm512_setzero_si512()
                        : _mm512_loadu_si512((const void *)(tile + r * ldt + 16 * h));
  }
  int64_t full = kc / 4, groups = (kc + 3) / 4;
  for (int64_t g = 0; g < full; g++) {
    if (pf) prefetch_group(bp + g * MMI_NR * 4);
    micro_group(acc, rows, 4 * g, bp + g * MMI_NR * 4, sa, MR);
  }
  if (groups > full) { /* K's last 1 to 3 bytes */
    __m512i b[4];
    for (int h = 0; h < 4; h++)
      b[h] = _mm512_loadu_si512((const void *)(bp + full * MMI_NR * 4 + 64 * h));
    for (int r = 0; r < MR; r++) {
      __m512i av = _mm512_set1_epi32((int)a_group(rows[r], 4 * full, kc, sa));
      for (int h = 0; h < 4; h++) acc[r][h] = _mm512_dpbusd_epi32(acc[r][h], av, b[h]);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int h = 0; h < 4; h++)
      _mm512_storeu_si512((void *)(tile + r * ldt + 16 * h), acc[r][h]);
}

#define MMI_ISA avx512vnni
#define MMI_TARGET "avx512f,avx512bw,avx512vnni"
#define MMI_MICRO micro
#include "gemm_int8_driver.h"

#include "gemm_int8_avx2.h"
