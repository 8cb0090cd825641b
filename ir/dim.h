/* dim.h - tensor dims: static, symbolic and algebraic, in one canonical form.
 *
 * A dim is an immutable expression allocated in a graph's arena:
 *   static      10
 *   symbolic    batch            (a symbol of the graph, by index)
 *   algebraic   batch * seq, seq + 1, 2 * n - 3, n floordiv 4, n ceildiv 8, n mod 2
 * `+ - *` combine dims; floordiv / ceildiv / mod take a positive constant on
 * the right.
 *
 * Canonical form (every constructor returns it, so structurally equal means
 * mathematically equal for the forms we build):
 *   - constants are folded; x + 0, x * 1, x floordiv 1, x ceildiv 1 vanish;
 *     x * 0 is 0; x mod 1 is 0; (c1 floordiv c2) on constants folds.
 *   - a sum is a flat list of terms (coefficient * monomial) with like terms
 *     merged, zero terms dropped, the constant term last; terms ordered by
 *     ir_dim_cmp of their monomials.
 *   - a monomial is a flat, sorted product of atoms (a symbol, or a floordiv /
 *     ceildiv / mod node whose operand is itself canonical).
 *   - there is no subtraction node: a - b is a + (-1 * b).
 * Printing is deterministic: `2 * n + 1`, `batch * seq`, `n - 1`,
 * `(n + 1) floordiv 2`, `batch * seq floordiv 4` is never ambiguous because
 * the printer parenthesizes every non-atomic operand of floordiv / ceildiv /
 * mod and of `*`.
 * ir_dim_parse(print(d)) builds a dim equal to d; ir_dim_hash(d) depends only on
 * the canonical structure (symbol ids and constants), so equal dims hash equal.
 *
 * Precedence when parsing: `*`, `floordiv`, `ceildiv`, `mod` bind tighter than
 * `+` and `-` and associate left; parentheses group. */
#ifndef KILN_IR_DIM_H
#define KILN_IR_DIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"

typedef enum ir_dim_kind {
  IR_DIM_CONST,    /* value */
  IR_DIM_SYM,      /* sym, name */
  IR_DIM_ADD,      /* n terms in ops[]; a constant term, if any, is last */
  IR_DIM_MUL,      /* value = coefficient (never 0; not 1 when there is a single atom); n atoms in ops[] */
  IR_DIM_FLOORDIV, /* ops[0] floordiv value (value > 1) */
  IR_DIM_CEILDIV,  /* ops[0] ceildiv value (value > 1) */
  IR_DIM_MOD,      /* ops[0] mod value (value > 1) */
} ir_dim_kind;

typedef struct ir_dim ir_dim;
struct ir_dim {
  ir_dim_kind kind;
  int64_t value;      /* CONST: the value; MUL: coefficient; DIV/MOD: the constant divisor */
  int sym;            /* SYM: index into the graph's symbol table */
  const char *name;   /* SYM: the symbol's name (arena-owned) */
  int n;              /* ADD / MUL: number of operands; DIV/MOD: 1 */
  const ir_dim **ops; /* operands (arena-owned) */
  uint64_t hash;      /* structural hash, filled by the constructors */
};

/* Error from dim construction or parsing. `pos` is the byte offset in the
 * parsed text where the error is (0 when not parsing). */
typedef struct ir_dim_err {
  size_t pos;
  char msg[256];
} ir_dim_err;

/* Constructors. All return canonical dims, or NULL on out-of-memory (or, for
 * floordiv / ceildiv / mod, a divisor <= 0; err filled when err != NULL). */
const ir_dim *ir_dim_const(ir_arena *a, int64_t v);
const ir_dim *ir_dim_sym(ir_arena *a, int sym, const char *name);
const ir_dim *ir_dim_add(ir_arena *a, const ir_dim *x, const ir_dim *y);
const ir_dim *ir_dim_sub(ir_arena *a, const ir_dim *x, const ir_dim *y);
const ir_dim *ir_dim_mul(ir_arena *a, const ir_dim *x, const ir_dim *y);
const ir_dim *ir_dim_floordiv(ir_arena *a, const ir_dim *x, int64_t c, ir_dim_err *err);
const ir_dim *ir_dim_ceildiv(ir_arena *a, const ir_dim *x, int64_t c, ir_dim_err *err);
const ir_dim *ir_dim_mod(ir_arena *a, const ir_dim *x, int64_t c, ir_dim_err *err);
/* Rebuild d in another arena (symbols keep their ids and names, names copied). */
const ir_dim *ir_dim_clone(ir_arena *a, const ir_dim *d);

bool ir_dim_is_const(const ir_dim *d, int64_t *value); /* value may be NULL */
bool ir_dim_is_sym(const ir_dim *d);
/* Total order on canonical dims (constants first, then by structure);
 * 0 exactly when the two are equal. */
int ir_dim_cmp(const ir_dim *x, const ir_dim *y);
bool ir_dim_equal(const ir_dim *x, const ir_dim *y);
uint64_t ir_dim_hash(const ir_dim *d);
/* Does d mention symbol `sym`? */
bool ir_dim_uses_sym(const ir_dim *d, int sym);

/* Evaluate with symbol values sym_values[sym]. floordiv / ceildiv / mod use
 * floor semantics for negative operands. Returns false (err filled) on
 * overflow. */
bool ir_dim_eval(const ir_dim *d, const int64_t *sym_values, int64_t *out, ir_dim_err *err);

/* Print the canonical text into buf (always NUL-terminated when cap > 0);
 * returns the length the full text needs (like snprintf). */
size_t ir_dim_print(const ir_dim *d, char *buf, size_t cap);

/* Resolve a symbol name to its index, creating it if the caller allows.
 * Returns the index, or -1 after writing a message into err->msg. */
typedef int (*ir_sym_resolver)(void *ud, const char *name, size_t len, ir_dim_err *err);

/* Parse one dim expression from text[0..len). Stops at the first character
 * that cannot continue the expression (',', ']', '>' ...) and stores the
 * number of bytes consumed in *consumed (leading and inner spaces included).
 * On error returns NULL with err->pos (offset into text) and err->msg set. */
const ir_dim *ir_dim_parse(ir_arena *a, const char *text, size_t len, size_t *consumed,
                           ir_sym_resolver resolve, void *ud, ir_dim_err *err);

#endif
