/* gemm_int8_driver.h - the blocking and corrections of the x86-64 8-bit GEMM
 * entries, instantiated once per micro-kernel: gemm_int8_vnni.h and
 * gemm_int8_avx2.h include it with
 *   MMI_ISA     the entries' suffix (kiln_mmi_AB_<MMI_ISA>, ..._<MMI_ISA>_pex)
 *   MMI_TARGET  the target attribute string of the micro-kernel
 *   MMI_MICRO   the micro-kernel: rows [i, i + MR) (MR 1 or MMI_MR) of a
 *               64-column panel block bp (gemm_int8_vnni.h's layout) over kc,
 *               R = sum a' b' into tile (row stride ldt), added to what the
 *               tile holds unless first; a' is a for ui8 a, a ^ 0x80 for si8
 *               (u8), b' the panel's s8 bytes. Exact, wrapped to 32 bits.
 * and undefines them at its end. The blocking, the packing and the
 * corrections (gemm_int8_vnni.h's top) are the same for every micro-kernel,
 * so every entry gives the generic entry's result bit for bit. */

#define MMI_CAT_(a, b) a##b
#define MMI_CAT(a, b) MMI_CAT_(a, b)
#define MMI_DRIVER MMI_CAT(mmi_run_, MMI_ISA)

/* pre: B prepacked (gemm_int8_vnni.h's top), or NULL: B row-major, packed
 * per call */
static inline __attribute__((target(MMI_TARGET), always_inline)) void
MMI_DRIVER(int64_t N, int64_t K, const void *A_, const void *B_, int32_t *C, const void *ZA,
           int64_t nza, const void *ZB, int64_t nzb, int64_t lo, int64_t hi, int sa, int sb,
           int pre) {
  const uint8_t *A = A_, *B = B_;
  int64_t k4 = (K + 3) / 4 * 4, panels = (N + MMI_NR - 1) / MMI_NR;
  const uint32_t *pre_sums = (const uint32_t *)(const void *)(B + panels * MMI_NR * k4);
  uint8_t bp[MMI_KC * MMI_NR] __attribute__((aligned(64)));
  uint32_t ra[MMI_MC], cb[MMI_NCMAX], edge[MMI_MR * MMI_NR];
  uint32_t *Cu = (uint32_t *)C;
  for (int64_t i0 = lo; i0 < hi; i0 += MMI_MC) {
    int64_t mc = hi - i0 < MMI_MC ? hi - i0 : MMI_MC;
    for (int64_t r = 0; r < mc; r++) {
      uint32_t s = 0;
      for (int64_t k = 0; k < K; k++) s += (uint32_t)ld8(A, (i0 + r) * K + k, sa);
      ra[r] = s;
    }
    /* N in chunks of panels whose C rows stay in L2 (~512 KB) across the
     * K blocks, so each K block's rows of B (one page apart when N is
     * large) are walked once for the whole chunk, not once per panel */
    int64_t nc = (MMI_CHUNK_BYTES / 4 / mc) / MMI_NR * MMI_NR;
    nc = nc < MMI_NR ? MMI_NR : nc > MMI_NCMAX ? MMI_NCMAX : nc;
    for (int64_t jc = 0; jc < N; jc += nc) {
      int64_t jend = N - jc < nc ? N : jc + nc;
      for (int64_t c = 0; c < nc; c++) cb[c] = 0;
      const uint32_t *sums = pre ? pre_sums + jc : cb;
      for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += MMI_KC) {
        int64_t kc = K - k0 < MMI_KC ? K - k0 : MMI_KC;
        int first = k0 == 0;
        for (int64_t j0 = jc; j0 < jend; j0 += MMI_NR) {
          int64_t nr = jend - j0 < MMI_NR ? jend - j0 : MMI_NR;
          const uint8_t *panel = bp;
          if (pre)
            panel = B + (j0 / MMI_NR) * MMI_NR * k4 + k0 * MMI_NR;
          else
            pack_panel(B, N, k0, kc, j0, bp, cb + (j0 - jc), sb);
          int64_t r = 0;
          for (; nr == MMI_NR && r + MMI_MR <= mc; r += MMI_MR)
            MMI_MICRO(A, K, i0 + r, k0, kc, panel, Cu + (i0 + r) * N + j0, N, first, sa,
                      MMI_MR);
          for (; r < mc; r++) { /* one row; a partial panel through the edge tile */
            uint32_t *c = Cu + (i0 + r) * N + j0;
            if (nr == MMI_NR) {
              MMI_MICRO(A, K, i0 + r, k0, kc, panel, c, N, first, sa, 1);
              continue;
            }
            for (int64_t t = 0; t < nr; t++) edge[t] = c[t];
            MMI_MICRO(A, K, i0 + r, k0, kc, panel, edge, MMI_NR, first, sa, 1);
            for (int64_t t = 0; t < nr; t++) c[t] = edge[t];
          }
        }
      }
      /* corrections (gemm_int8_vnni.h's top) */
      uint32_t k32 = (uint32_t)K, both = sa && !sb ? 16384u : 0u;
      for (int64_t r = 0; r < mc; r++) {
        uint32_t za = zp(ZA, nza, i0 + r, sa), ca = za + (sa ? 128u : 0u);
        uint32_t *c = Cu + (i0 + r) * N;
        for (int64_t j = jc; j < jend; j++) {
          uint32_t zb = zp(ZB, nzb, j, sb), cbj = zb - (sb ? 0u : 128u);
          c[j] = c[j] - ca * sums[j - jc] - cbj * ra[r] + k32 * (za * zb + both);
        }
      }
    }
  }
}

#define MMI_ENTRY(name, sa, sb)                                                              \
  __attribute__((target(MMI_TARGET))) void MMI_CAT(kiln_mmi_##name##_, MMI_ISA)(ARGS) {      \
    (void)M;                                                                                 \
    MMI_DRIVER(N, K, A, B, C, ZA, nza, ZB, nzb, lo, hi, sa, sb, 0);                          \
  }                                                                                          \
  __attribute__((target(MMI_TARGET))) void                                                   \
  MMI_CAT(MMI_CAT(kiln_mmi_##name##_, MMI_ISA), _pex)(ARGS) {                                \
    (void)M;                                                                                 \
    MMI_DRIVER(N, K, A, B, C, ZA, nza, ZB, nzb, lo, hi, sa, sb, 1);                          \
  }
MMI_ENTRY(u8u8, 0, 0)
MMI_ENTRY(u8s8, 0, 1)
MMI_ENTRY(s8u8, 1, 0)
MMI_ENTRY(s8s8, 1, 1)

#undef MMI_ENTRY
#undef MMI_DRIVER
#undef MMI_CAT
#undef MMI_CAT_
#undef MMI_ISA
#undef MMI_TARGET
#undef MMI_MICRO
