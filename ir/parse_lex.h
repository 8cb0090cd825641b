/* parse_lex.h - internal to the MO text parser (parse.c, parse_lex.c and
 * parse_max.c): the parser state, the lexer, the grammar of attribute values,
 * and the translation of MAX's printed forms. Not for use outside those files.
 *
 * Conventions: every function that can fail returns 0 (or true) on success
 * and -1 (or false) on failure; an error message is recorded once, by
 * ir_lex_error, as the first error of the parse (later ones are ignored), at
 * the 1-based line:col (bytes) of an offset into the text. */
#ifndef KILN_IR_PARSE_LEX_H
#define KILN_IR_PARSE_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir.h"

/* A scratch vector (malloc'd, freed when parsing ends). */
typedef struct vec {
  void *p;
  size_t n, cap;
} vec;

typedef struct attr_at {
  ir_attr a;
  size_t at;  /* where its name is */
  size_t vat; /* where its value is */
} attr_at;

typedef enum tok_kind { T_INT, T_FLOAT, T_HEX, T_INF, T_NAN, T_TRUE, T_FALSE } tok_kind;
typedef struct numtok { /* a literal: text at [at, at+len), sign included */
  size_t at, len;
  tok_kind kind;
  bool neg;
} numtok;

typedef struct parser {
  const char *s;
  size_t n, pos;
  ir_graph *g;
  ir_diag *d;
  bool failed;
  bool runtime_attrs; /* kiln.* attribute names allowed (kernel texts only) */
  bool sym_failed; /* the last dim error came from the symbol resolver */
  size_t sym_pos;
  int nres; /* the graph's declared result types */
  ir_type *res;
  size_t out_at, *out_pos; /* where mo.output and its operands are */
  size_t loc_pos;          /* ir_lex_loc's last answer: loc is at loc_pos */
  ir_loc loc;
  ir_value **tab; /* values by name (open addressing), tab_cap a power of 2 */
  size_t tab_cap, tab_n;
  vec names, uses, use_at, in_types, out_types, attrs, list, toks, flat_attrs, result_names;
  vec absorbed; /* mo.constant nodes MAX passed as operands that became attributes */
  /* A mo.if branch: the parser of the enclosing graph, whose values the
   * branch may read (each becomes an input of the branch: parse.c capture),
   * and those values (ir_value *, the enclosing graph's) in order. */
  struct parser *outer;
  vec captures;
} parser;

/* Character classes (c may be -1 at the end of input). */
static inline bool is_alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }
static inline bool is_hex(int c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static inline bool is_id_char(int c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '$'; }
static inline bool is_value_char(int c) { return is_id_char(c) || c == '-' || c == '#'; }
static inline int lex_at(const parser *p, size_t i) {
  return i < p->n ? (unsigned char)p->s[i] : -1;
}
static inline bool lit_eq(const char *s, size_t len, const char *lit) {
  return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* ---- parse.c: the value table and parser, for parse_capture.c ---- */
ir_value *ir_parse_find_value(const parser *p, const char *s, size_t len);
int ir_parse_add_value(parser *p, ir_value *v); /* 0, or -1 out of memory */
void ir_parse_free_parser(parser *p);           /* its vectors and table */

/* ---- parse_capture.c ---- */
/* %name of a graph enclosing mo.if branch p (a branch between them
 * captures it first) as a new input of p, recorded in p->captures; NULL
 * when no enclosing graph has it, or with p failed: out of memory, or a
 * buffer or chain (an error at `where`, the use). */
ir_value *ir_parse_capture(parser *p, const char *s, size_t len, size_t where);
/* The values of p's graph that mo.if n's branches r[0..nr) captured (caps[k]:
 * branch k's ir_value *s, in the order they were met) become operands of n
 * after its own, and inputs of every branch in one order: a branch gets an
 * input for each value only another branch names (unused by it), and its
 * own captured inputs are put in that order. 0, or -1 out of memory. */
int ir_parse_lift_captures(parser *p, ir_node *n, ir_graph **r, vec *caps, int nr);

/* ---- parse_lex.c ---- */
/* Append a zeroed slot of elem bytes; NULL on out-of-memory. */
void *ir_lex_push(vec *v, size_t elem);

/* Errors: line:col of an offset; record "fmt" at pos (first error wins);
 * "out of memory" at the current position. All return -1. */
ir_loc ir_lex_loc(parser *p, size_t pos);
int ir_lex_error(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ir_lex_oom(parser *p);

/* Skip spaces and // comments; the next character (-1 at the end). */
void ir_lex_skip(parser *p);
int ir_lex_peek(parser *p);
/* Consume c / the literal lit (a word literal must not run on into an
 * identifier) when it comes next. */
bool ir_lex_accept(parser *p, char c);
bool ir_lex_accept_lit(parser *p, const char *lit);
/* "expected WHAT, found 'tok'" / "unexpected end of input, expected WHAT". */
int ir_lex_expected(parser *p, const char *what);
int ir_lex_expect(parser *p, char c);
/* An identifier [A-Za-z_][A-Za-z0-9_.$]*; not consumed when absent. */
bool ir_lex_ident(parser *p, const char **s, size_t *len, size_t *where);
/* A number (-?digits[.digits][e[+-]digits], -?0x hex, -?inf, -?nan); not
 * consumed when absent. */
bool ir_lex_number(parser *p, numtok *t);
/* An INT or HEX token as int64 (error when out of range). */
int ir_lex_int64(parser *p, const numtok *t, int64_t *out);
/* A string literal with escapes, copied into the graph's arena. */
int ir_lex_string(parser *p, const char **out);
/* '{' [name '=' value {',' name '=' value}] '}' into p->attrs (cleared
 * first), values in the graph's arena; a repeated name is an error, and so
 * is a name in the runtime's kiln.* namespace unless p->runtime_attrs. */
int ir_lex_attr_dict(parser *p);
/* The same for MAX's printed dicts: open is '[' (properties) or '{'; a value
 * may be followed by ': type' (skipped), and a '#name<...>' value other than
 * a dense array is kept as a string of its raw text (read it again from
 * attr_at.vat). */
int ir_lex_max_dict(parser *p, char open);
/* One attribute value (as in a '{...}' dict) into a. */
int ir_lex_attr_value(parser *p, ir_attr *a);

/* ---- parse.c ---- */
/* '[' [dim {',' dim}] ']' at the current position: the dims of a type (at
 * most IR_MAX_RANK), in the graph's arena, symbols resolved as in types; a
 * negative constant is an error unless negative_ok. */
int ir_parse_dims(parser *p, const ir_dim **dims, int *rank, bool negative_ok);

/* ---- parse_max.c ---- */
typedef struct max_op max_op;
/* The MAX row for an op name as MAX prints it (rmo.X, rmo.mo.X, or an mo.X
 * name kiln does not have), or NULL when MAX has none kiln maps. */
const max_op *ir_max_op_find(const char *name, size_t len);
/* Whether kiln's op `name` with nin operands is written MAX's way
 * (mo.split / mo.transpose with a constant operand); *row is set when it is. */
bool ir_max_kiln_form(const char *name, size_t len, int nin, const max_op **row);
/* Rewrite the statement in p->uses, p->use_at, p->in_types, p->attrs,
 * p->out_types (as read: MAX's operands and properties) into kiln's form;
 * *kiln_name is the kiln op name (without "mo."), NULL when the statement
 * is skipped (mo.chain.create). nm is the name as written, at op_at.
 * row may be NULL: a kiln-named op in MAX syntax (properties in '[...]', a
 * constant in '<...>', a mo.cast without dtype). */
int ir_max_rewrite(parser *p, const max_op *row, const char *nm, size_t nlen, size_t op_at,
                   const char **kiln_name);
/* After the graph is read: drop the constants in p->absorbed that nothing
 * uses any more (in kiln's form they are attributes). */
int ir_max_drop_absorbed(parser *p);

#endif
