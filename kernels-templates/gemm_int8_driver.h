/* gemm_int8_driver.h - the blocking and corrections of the x86-64 8-bit GEMM
 * entries, instantiated once per micro-kernel: gemm_int8_vnni.h and
 * gemm_int8_avx2.h include it with
 *   MMI_ISA     the entries' suffix (kiln_mmi_AB_<MMI_ISA>, ..._<MMI_ISA>_pex)
 *   MMI_TARGET  the target attribute string of the micro-kernel
 *   MMI_MICRO   the micro-kernel: rows [i, i + MR) (MR 1, 2, 3 or MMI_MR) of a
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
#define MMI_BLOCK MMI_CAT(mmi_block_, MMI_ISA)

/* One K block [k0, k0 + kc) of the panel at column j0 (nr valid columns)
 * for rows [i0, i0 + mc): B's block packed into bp (its true column sums
 * added to cb) unless B is prepacked, then MMI_MR rows at a time, the last
 * ones in tiles of 3, 2 or 1 rows; a partial panel through the edge tile
 * (MMI_MR x MMI_NR). */
static inline __attribute__((target(MMI_TARGET), always_inline)) void
MMI_BLOCK(const uint8_t *A, const uint8_t *B, uint32_t *Cu, int64_t N, int64_t K, int64_t k4,
          int64_t i0, int64_t mc, int64_t j0, int64_t nr, int64_t k0, int64_t kc, uint8_t *bp,
          uint32_t *cb, uint32_t *edge, int sa, int sb, int pre, int pf) {
  int first = k0 == 0;
  const uint8_t *panel = bp;
  if (pre)
    panel = B + (j0 / MMI_NR) * MMI_NR * k4 + k0 * MMI_NR;
  else
    pack_panel(B, N, k0, kc, j0, bp, cb, sb);
  for (int64_t r = 0; r < mc;) {
    int64_t left = mc - r, m = left >= MMI_MR ? MMI_MR : left >= 3 ? 3 : left >= 2 ? 2 : 1;
    int64_t i = i0 + r, ldt = N;
    uint32_t *c = Cu + i * N + j0, *t = c;
    if (nr < MMI_NR) {
      t = edge, ldt = MMI_NR;
      for (int64_t x = 0; !first && x < m; x++)
        for (int64_t y = 0; y < nr; y++) edge[x * MMI_NR + y] = c[x * N + y];
    }
    int pfr = pf && r == 0; /* the rows after the first read the block from cache */
    if (m == 1) MMI_MICRO(A, K, i, k0, kc, panel, t, ldt, first, sa, pfr, 1);
    else if (m == 2) MMI_MICRO(A, K, i, k0, kc, panel, t, ldt, first, sa, pfr, 2);
    else if (m == 3) MMI_MICRO(A, K, i, k0, kc, panel, t, ldt, first, sa, pfr, 3);
    else MMI_MICRO(A, K, i, k0, kc, panel, t, ldt, first, sa, pfr, MMI_MR);
    for (int64_t x = 0; nr < MMI_NR && x < m; x++)
      for (int64_t y = 0; y < nr; y++) c[x * N + y] = edge[x * MMI_NR + y];
    r += m;
  }
}

/* Rows [lo, hi) x columns [jlo, jhi) (jlo a multiple of MMI_NR: mmi_part).
 * pre: B prepacked (gemm_int8_vnni.h's top), or NULL: B row-major, packed
 * per call */
static inline __attribute__((target(MMI_TARGET), always_inline)) void
MMI_DRIVER(int64_t N, int64_t K, const void *A_, const void *B_, int32_t *C, const void *ZA,
           int64_t nza, const void *ZB, int64_t nzb, int64_t lo, int64_t hi, int64_t jlo,
           int64_t jhi, int sa, int sb, int pre) {
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
    /* Few rows (their A in L2: a decode step): each panel's K blocks in
     * turn, so a prepacked panel streams from memory in order; else each K
     * block across the chunk's panels, so A's block is read from L1 / L2
     * for all of them. The sums are integers: the order changes nothing. */
    int panel_major = mc * K <= MMI_PANEL_MAJOR_A_BYTES;
    for (int64_t jc = jlo; jc < jhi; jc += nc) {
      int64_t jend = jhi - jc < nc ? jhi : jc + nc;
      for (int64_t c = 0; c < nc; c++) cb[c] = 0;
      const uint32_t *sums = pre ? pre_sums + jc : cb;
      /* the (panel, K block) pairs in either order, through one call site
       * (each inlined copy of the block is four micro-kernels to compile) */
      int64_t npan = (jend - jc + MMI_NR - 1) / MMI_NR;
      int64_t nkb = K > 0 ? (K + MMI_KC - 1) / MMI_KC : 1;
      for (int64_t o = 0; o < npan * nkb; o++) {
        int64_t p = panel_major ? o / nkb : o % npan, kb = panel_major ? o % nkb : o / npan;
        int64_t j0 = jc + p * MMI_NR, k0 = kb * MMI_KC;
        MMI_BLOCK(A, B, Cu, N, K, k4, i0, mc, j0, jend - j0 < MMI_NR ? jend - j0 : MMI_NR, k0,
                  K - k0 < MMI_KC ? K - k0 : MMI_KC, bp, cb + (j0 - jc), edge, sa, sb, pre,
                  pre && panel_major);
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
    int64_t lo, hi, jlo, jhi;                                                                \
    mmi_part(M, N, part, nparts, &lo, &hi, &jlo, &jhi);                                      \
    if (M <= MMI_GENERIC_MAX_M) /* packing B would cost more than it saves */               \
      mmi_generic(N, K, A, B, C, ZA, nza, ZB, nzb, lo, hi, jlo, jhi, sa, sb);                \
    else                                                                                     \
      MMI_DRIVER(N, K, A, B, C, ZA, nza, ZB, nzb, lo, hi, jlo, jhi, sa, sb, 0);              \
  }                                                                                          \
  __attribute__((target(MMI_TARGET))) void                                                   \
  MMI_CAT(MMI_CAT(kiln_mmi_##name##_, MMI_ISA), _pex)(ARGS) {                                \
    int64_t lo, hi, jlo, jhi;                                                                \
    mmi_part(M, N, part, nparts, &lo, &hi, &jlo, &jhi);                                      \
    MMI_DRIVER(N, K, A, B, C, ZA, nza, ZB, nzb, lo, hi, jlo, jhi, sa, sb, 1);                \
  }
MMI_ENTRY(u8u8, 0, 0)
MMI_ENTRY(u8s8, 0, 1)
MMI_ENTRY(s8u8, 1, 0)
MMI_ENTRY(s8s8, 1, 1)

#undef MMI_ENTRY
#undef MMI_DRIVER
#undef MMI_BLOCK
#undef MMI_CAT
#undef MMI_CAT_
#undef MMI_ISA
#undef MMI_TARGET
#undef MMI_MICRO
