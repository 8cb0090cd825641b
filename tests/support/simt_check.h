/* simt_check.h - helpers the SIMT tests share: seeded random operands,
 * the tolerance kernels are held to against the interpreter, and lowering
 * one node for a target into emitted code. */
#ifndef KILN_TESTS_SIMT_CHECK_H
#define KILN_TESTS_SIMT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/interp.h"
#include "jit/simt.h"

/* A uniform double in [0, 1) from the xorshift state *s. */
double simt_urand(uint64_t *s);
/* Fill t: floats uniform in [-span / 2, span / 2), integers in
 * [-(ispan / 2), ispan - ispan / 2), bools half true. Fails the test for
 * other dtypes. */
void simt_fill(ir_tensor *t, uint64_t *s, double span, int ispan);
/* Element i of got matches want: floats within f32_tol (f32) or 1e-12
 * (f64) relative to 1 + |want|, NaN where want is NaN; others bit-equal. */
bool simt_close(ir_dtype dt, const void *got, const void *want, int64_t i, double f32_tol);
/* Node n of g lowered for t as `name` in a fresh module and emitted:
 * malloc'd bytes (*len), or NULL with err. */
void *simt_emit_node(const ir_graph *g, const ir_node *n, const jit_simt_target *t,
                     const char *name, size_t *len, char *err, size_t errlen);
/* ptxas (when installed) accepts the PTX text ptx (len bytes with its NUL)
 * for sm_80; a test failure naming `what` when it does not. */
void simt_expect_ptxas(const void *ptx, size_t len, const char *what);

#endif
