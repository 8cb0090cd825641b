/* ir.h - kiln's graph IR: tensor types, values, op nodes, attributes, the
 * graph, and the passes that read and write it (parse, print, verify, infer).
 *
 * Invariants:
 *   - every object of a graph (nodes, values, types, dims, attribute data,
 *     strings) lives in the graph's arena and dies with ir_graph_free.
 *   - nodes are kept in a valid topological order (operands are graph inputs
 *     or results of earlier nodes); the builder only appends.
 *   - value names are unique within a graph (the builder makes them so).
 *   - after ir_graph_verify succeeds, every value's type is the inferred one
 *     and every node obeys its op's rules (ops.def); the JIT and the
 *     interpreter may rely on that and on nothing else.
 * Each op's rules that are data (operand counts, dtypes, attribute schema,
 * flags, the class's work estimate) are rows of ops.def, read through
 * ir_op_get, ir_class_get and ir_op_attr_spec; shape rules are code (infer.c).
 * ir/ knows nothing of LLVM, files, devices or threads. */
#ifndef KILN_IR_IR_H
#define KILN_IR_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "dim.h"
#include "dtype.h"

#define IR_MAX_RANK 16
/* Most operands of a node an elementwise group (fusion, kernel text, the
 * loop emitters) takes: builtin elementwise ops have up to 3, an
 * elementwise custom kernel up to kiln/kernel.h's
 * KILN_ELEMENTWISE_MAX_INPUTS (checked equal in src/kernel_lib.c). */
#define IR_EW_MAX_IN 8

/* ---- ops (ops.def) ---- */
typedef enum ir_op {
#define OP(id, ...) IR_OP_##id,
#include "ops.def"
  IR_OP_COUNT
} ir_op;

/* Op classes, in ops.def's CLS order (values are stable: new ones go last). */
typedef enum ir_op_class {
#define CLS(id, ...) IR_CLS_##id,
#include "ops.def"
  IR_CLS_COUNT
} ir_op_class;

/* Dtype sets an operand may be required to be in (ops.def's dt0 / dt1):
 * F = f16 bf16 f32 f64, I = si8 si16 si32 si64 ui8 ui16 ui32 (the narrow
 * ones computed wider: ir_node_computes_narrow), B = bool. IDX is si32 si64
 * named "indices" in messages. ANY (0): no rule in the table. */
enum {
  IR_DTS_ANY = 0,
  IR_DTS_F = 1,
  IR_DTS_I = 2,
  IR_DTS_B = 4,
  IR_DTS_FI = IR_DTS_F | IR_DTS_I,
  IR_DTS_FIB = IR_DTS_F | IR_DTS_I | IR_DTS_B,
  IR_DTS_NAMED_INDICES = 8,
  IR_DTS_IDX = IR_DTS_I | IR_DTS_NAMED_INDICES,
};
/* Whether dtype t is in set `dts` (ANY: every dtype). */
bool ir_dtype_in_set(ir_dtype t, unsigned dts);
/* The set as words: "f16, bf16, f32 or f64", "bool", ... */
const char *ir_dtype_set_name(unsigned dts);

/* Op flags (ops.def's last column). */
enum {
  IR_OPF_EW = 1u << 0,      /* elementwise: a scalar function of broadcast operands; fuses */
  IR_OPF_RED = 1u << 1,     /* reduces along one axis */
  IR_OPF_ALIAS = 1u << 2,   /* the result is operand 0's data (reshape-like): may alias it */
  IR_OPF_SRC = 1u << 3,     /* a source: the runtime supplies its value, no kernel */
  IR_OPF_EFFECTS = 1u << 4, /* opaque to kiln: never dropped, even with unused results */
  IR_OPF_PARAMS = 1u << 5,  /* attributes outside its schema are kernel parameters */
  IR_OPF_DATA_DIM = 1u << 6, /* result 0's dim 0 is a symbol the node sets from data */
};

/* One attribute of an op's schema: name, kind and (optional ones) default
 * value, as the ir_attr a node would carry. */
typedef struct ir_attr_spec ir_attr_spec;

/* How the pool estimates a class's work (ops.def's CLS rows). */
typedef enum ir_work_kind {
  IR_WORK_NONE,   /* 0: no kernel, or one that never splits */
  IR_WORK_OUT,    /* elements of result 0 */
  IR_WORK_IN,     /* elements of operand 0 */
  IR_WORK_MATMUL, /* M * N * K: result elements times operand 0's last dim */
  IR_WORK_BODY,   /* the body's matmul when it has one, else elements of result 0 */
} ir_work_kind;

typedef struct ir_class_info {
  const char *name;  /* "UNARY" */
  ir_work_kind work; /* the estimate is n * work_mul / work_div */
  int work_mul, work_div;
  bool streams;      /* the pool may cut a call finer than one part per thread */
} ir_class_info;

typedef struct ir_op_info {
  const char *name; /* without the "mo." prefix */
  ir_op_class cls;
  int nin_min, nin_max; /* nin_max -1: any number */
  int nout;             /* -1: decided by attributes (split) */
  unsigned dts[2];      /* IR_DTS_* set of operand 0 / 1 */
  int same;             /* operands same.. share one dtype; -1: no such rule */
  const ir_attr_spec *attrs; /* the schema, nattrs rows in the order rules read them */
  int nattrs;
  unsigned flags;       /* IR_OPF_* */
} ir_op_info;

const ir_op_info *ir_op_get(ir_op op);           /* NULL when op is not an op */
const ir_class_info *ir_class_get(ir_op_class c); /* NULL when c is not a class */
/* Find an op by its name (without "mo.") and operand count; -1 if none. When
 * the name exists but not with that operand count, *name_known is set. */
int ir_op_lookup(const char *name, size_t len, int noperands, bool *name_known);
bool ir_op_is_elementwise(ir_op op); /* IR_OPF_EW: unary, binary, compare, logical, where, cast */
bool ir_op_has_flag(ir_op op, unsigned flag); /* every bit of flag (false for a bad op) */
/* The schema row of attribute `name` of op; NULL when op's schema lacks it. */
const ir_attr_spec *ir_op_attr_spec(ir_op op, const char *name);

/* ---- devices and types ---- */
typedef enum ir_device_kind { IR_DEV_CPU, IR_DEV_GPU } ir_device_kind;
typedef struct ir_device {
  ir_device_kind kind;
  int id;
} ir_device; /* printed only when not cpu:0, as a third type parameter: gpu:0 */
/* "cpu", "gpu", "cpu:N", "gpu:N" (N decimal, at most 1000000; no number: 0)
 * into *d. False for anything else (d unchanged). */
bool ir_device_parse(const char *s, ir_device *d);

/* What a value is (ir/buffer.h): an immutable tensor (the default, 0), a
 * mutable buffer (`!mo.buffer<[dims], dtype>`: a tensor the graph writes in
 * place, owned by the caller when it is a graph input), or a chain
 * (`!mo.chain`: no data; the token that orders a buffer's loads and stores). */
typedef enum ir_type_kind { IR_TYPE_TENSOR, IR_TYPE_BUFFER, IR_TYPE_CHAIN } ir_type_kind;

typedef struct ir_type {
  ir_dtype dtype;
  int rank;
  const ir_dim **dims; /* rank entries, arena-owned (NULL when rank == 0) */
  ir_device device;
  ir_type_kind kind; /* a chain has rank 0 and dtype bool */
} ir_type;

bool ir_type_equal(const ir_type *a, const ir_type *b);
/* Same rank and equal dims (canonical expressions); dtype and device aside. */
bool ir_type_same_shape(const ir_type *a, const ir_type *b);
/* Static element count, or false when a dim is not constant. */
bool ir_type_static_numel(const ir_type *t, int64_t *n);
/* "!mo.tensor<[batch, 64], f32>" into buf; returns needed length like snprintf. */
size_t ir_type_print(const ir_type *t, char *buf, size_t cap);

/* ---- attributes ---- */
typedef enum ir_attr_kind {
  IR_ATTR_INT,    /* 3, -1 */
  IR_ATTR_FLOAT,  /* 1.0e-5 */
  IR_ATTR_BOOL,   /* true, false */
  IR_ATTR_STRING, /* "fc1.weight" */
  IR_ATTR_INTS,   /* [1, 0, 2] */
  IR_ATTR_STRINGS,/* ["pixels"] */
  IR_ATTR_DTYPE,  /* si64 */
  IR_ATTR_DENSE,  /* #M.dense_array<3.0, 1.0> : tensor<2xf32> */
} ir_attr_kind;

typedef struct ir_dense {
  ir_dtype dtype;
  int rank;
  int64_t shape[IR_MAX_RANK];
  int64_t numel;
  void *data; /* numel * ir_dtype_size(dtype) bytes, little-endian, arena-owned */
} ir_dense;

typedef struct ir_attr {
  const char *name;
  ir_attr_kind kind;
  union {
    int64_t i;
    double f;
    bool b;
    const char *s;
    ir_dtype dtype;
    struct { int n; const int64_t *v; } ints;
    struct { int n; const char **v; } strings;
    ir_dense dense;
  } u;
} ir_attr;

struct ir_attr_spec {
  ir_attr a;     /* name, kind, and the default (optional ones) */
  bool required; /* a node must carry it */
  bool runtime;  /* a fact the runtime stamps (kiln.*), not the user */
};

/* ---- values and nodes ---- */
typedef struct ir_node ir_node;
typedef struct ir_check ir_check;

typedef struct ir_loc {
  int line, col; /* 1-based; 0 when the node was built through the API */
} ir_loc;

typedef struct ir_value {
  int id;            /* index in graph->values */
  const char *name;  /* SSA name without '%', unique in the graph */
  ir_type type;
  ir_node *def;      /* defining node, NULL for a graph input */
  int index;         /* result index in def, or input index for graph inputs */
} ir_value;

struct ir_node {
  int id; /* index in graph->nodes (topological position) */
  ir_op op;
  int nin;
  ir_value **in;
  int nout;
  ir_value **out;
  int nattrs;
  ir_attr *attrs; /* sorted by name (canonical order) */
  ir_loc loc;
  /* What the node was made from when it was not parsed from text: an
   * importer's source node ("ONNX node 'Reshape_12' (Reshape)"), in the
   * graph's arena; NULL otherwise. Errors about the node at run time start
   * with it (ir_node_origin_msg), as text-built nodes give their line. */
  const char *origin;
  /* For mo.fused only (NULL otherwise), the group the node
   * stands for as a graph of its own (own arena, owned by the node: freed by
   * ir_graph_free and deep-copied by ir_graph_clone of the outer graph). Its
   * inputs are the node's operands in order (same types), its outputs the
   * node's results in order; its symbols are the outer graph's, same names
   * and indices, so dims mean the same in both. */
  struct ir_graph *body;
  /* For mo.if (then, else) and mo.while (cond, body) only: the regions, graphs of
   * their own (own arenas and symbols, owned by the node like body; ir/control.h). */
  int nregions;
  struct ir_graph **regions;
};

/* ---- the graph ---- */
typedef struct ir_graph {
  ir_arena *arena;
  const char *name;          /* without '@' */
  int nsyms;
  const char **syms;         /* symbol names; dims refer to them by index */
  bool syms_declared;        /* the text had a <...> list: every symbol must be in it */
  int ninputs;
  ir_value **inputs;
  const char **input_names;  /* argument_names, or NULL entries */
  int noutputs;
  ir_value **outputs;
  const char **output_names; /* result_names, or NULL entries */
  ir_loc output_loc;         /* where mo.output is */
  int nnodes;
  ir_node **nodes;
  int nvalues;
  ir_value **values;
  int nchecks;
  struct ir_check *checks;   /* run-time shape checks, see below */
  int cap_nodes, cap_values, cap_syms, cap_inputs, cap_checks; /* growth bookkeeping */
  ir_value **name_index; /* open-addressing hash of values by name (graph.c);
                            entries past nvalues are stale and ignored, so a
                            caller may roll back by restoring the counts */
  int cap_index;
  /* Control flow (ir/control.h): the module's named subgraphs that mo.call
   * calls (owned by this, the main graph; NULL in regions and subgraphs), and
   * whether this graph is a region or a subgraph (its calls are checked when
   * the main graph is verified). */
  int nsubgraphs;
  struct ir_graph **subgraphs;
  bool nested;
} ir_graph;

/* The index of v among g's inputs, -1 when v is not an input of g. */
int ir_graph_input_index(const ir_graph *g, const ir_value *v);

/* A diagnostic: where (line:col, 0:0 for API-built graphs) and what. */
typedef struct ir_diag {
  int line, col;
  bool rule; /* set by ir_parse when the text was well formed but broke an op's rules */
  char msg[512];
} ir_diag;

/* Fill d with a formatted message at loc; returns -1 (for `return ir_diag_set(...)`). */
int ir_diag_set(ir_diag *d, ir_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- building (graph.c) ---- */
ir_graph *ir_graph_new(const char *name); /* NULL on out-of-memory */
void ir_graph_free(ir_graph *g);          /* NULL is a no-op */
/* Remove the nodes i with drop[i] (g->nnodes entries) and the values they
 * define, renumbering the rest in order; the caller has made sure nothing
 * kept uses them. Their memory stays in the arena. */
void ir_graph_drop_nodes(ir_graph *g, const bool *drop);

/* Index of symbol `name`, adding it when `create`; -1 if absent and !create. */
int ir_graph_symbol(ir_graph *g, const char *name, size_t len, bool create);

/* Add a graph input of type t (dims must belong to g's arena). name may be
 * NULL (a fresh name is chosen). Returns NULL on out-of-memory. */
ir_value *ir_graph_add_input(ir_graph *g, const char *name, const ir_type *t);

/* Append a node. Operands must be values of g. Results are created with the
 * given types (types may be NULL: result types are then left with rank -1
 * until ir_infer_node fills them). result_names may be NULL or hold NULLs.
 * Attributes are copied into the arena and sorted by name. Returns NULL on
 * out-of-memory or a duplicate result name (diag filled when d != NULL). */
ir_node *ir_graph_add_node(ir_graph *g, ir_op op, ir_value *const *in, int nin,
                           const ir_attr *attrs, int nattrs, int nout,
                           const ir_type *out_types, const char *const *result_names,
                           ir_loc loc, ir_diag *d);

int ir_graph_set_outputs(ir_graph *g, ir_value *const *v, int n, ir_loc loc);

/* Give n the origin text (copied into g's arena; NULL clears it); false on
 * out-of-memory. */
bool ir_node_set_origin(ir_graph *g, ir_node *n, const char *origin);
/* Prefix the message msg (msglen bytes) with "ORIGIN: " when n has an
 * origin; returns -1 (for `return ir_node_origin_msg(...)` after a failure). */
int ir_node_origin_msg(const ir_node *n, char *msg, size_t msglen);

/* Look up a value by name (without '%'), NULL if none. */
ir_value *ir_graph_find_value(const ir_graph *g, const char *name, size_t len);

/* Attribute accessors (on a node's sorted attrs). Return NULL / the default
 * when absent. */
const ir_attr *ir_node_attr(const ir_node *n, const char *name);
int64_t ir_node_attr_int(const ir_node *n, const char *name, int64_t dflt);
bool ir_node_attr_bool(const ir_node *n, const char *name, bool dflt);
/* An elementwise node with a data error (division by zero): integer mod,
 * floor_div and pow. Fusion keeps it a kernel of its own, so the error
 * still names it. */
bool ir_node_ew_can_fail(const ir_node *n);
/* A mo.slice_tensor, with attribute bounds or data bounds (the fusion pass
 * and jit/fused.c read such a slice in place). */
bool ir_node_is_slice(const ir_node *n);
/* A node of a source op (IR_OPF_SRC: mo.constant, mo.constant.external),
 * whose value the runtime supplies rather than a kernel (NULL: false). */
bool ir_node_is_source(const ir_node *n);
/* Whether n computes on narrow dtypes (ir_dtype_is_narrow: f16, bf16, si8,
 * si16, ui8, ui16, ui32): an op whose table row takes floats or integers
 * with such an operand in a float / integer set (ir_node_widens_operand:
 * not an ANY operand, not indices), or a float op with a half result. Such
 * a node means its counterpart on those operands widened exactly
 * (ir_dtype_widened: f32, si32 or si64), each narrow result rounded to
 * nearest even (floats) or wrapped (integers) back once: the interpreter
 * runs it so, and compilers rewrite it so first (ir_graph_widen_narrow). */
bool ir_node_computes_narrow(const ir_node *n);
bool ir_node_widens_operand(const ir_node *n, int k);
/* The symbol node n defines from data (IR_OPF_DATA_DIM: the plain symbol of
 * result 0's dim 0, mo.nonzero's count), or -1 (any other node, or NULL).
 * Its value is known only once the node has run; ir/shape.h says how the
 * runtimes plan and check around it. */
int ir_node_data_sym(const ir_node *n);
/* Whether v's data can be computed before its graph runs, so that dims
 * may be read from it (ir/shape.c: a graph input, a mo.constant, or a value
 * the reference interpreter computes from them): NULL when it can, else a
 * node v depends on that cannot run then (a weight, control flow, an op
 * with effects, a count set from data), with *why saying which. */
const ir_node *ir_value_read_blocker(const ir_value *v, const char **why);
/* Why node p cannot run before its graph does ("a weight", ...), or NULL. */
const char *ir_node_not_before_run(const ir_node *p);
/* Whether some node of g defines a symbol from data. */
bool ir_graph_has_data_syms(const ir_graph *g);
/* Whether g's dims depend on data read before it runs (ir/shape.h:
 * mo.reshape and mo.broadcast_to with a shape operand, mo.resize* with a
 * sizes operand, mo.slice_tensor with data bounds, mo.repeat_interleave
 * with a repeats operand, mo.range with a length no input shape binds; the
 * data of inputs, constants or values computed from them), so one input
 * shape may give several bindings. */
bool ir_graph_reads_dims(const ir_graph *g);
/* Whether node n may read dims from operand data (the ops above, a fused
 * body's data slice, any mo.range with a symbolic length): the nodes
 * ir_solve_symbols_at must visit, with those that set a symbol from data. */
bool ir_node_reads_dims(const ir_node *n);
/* The mo.matmul n is, or the one in n's fused body (a GEMM with its
 * epilogue, ir_graph_fuse); NULL for any other node. */
const ir_node *ir_node_matmul(const ir_node *n);
/* How many times g uses v: operand slots of g's nodes plus graph outputs. */
int ir_value_uses(const ir_graph *g, const ir_value *v);
double ir_node_attr_float(const ir_node *n, const char *name, double dflt);
/* mo.pad's `value` v in integer dtype dt (interp_vision.c): truncated toward
 * zero and saturated to int64 (NaN: 0), then wrapped to dt's width. */
int64_t ir_pad_int_value(ir_dtype dt, double v);
const char *ir_node_attr_string(const ir_node *n, const char *name, const char *dflt);
/* Attribute `name` of n, else its default from n's op schema (ops.def);
 * NULL when n lacks it and it has no default (required, or not in the schema). */
const ir_attr *ir_node_attr_or_default(const ir_node *n, const char *name);
/* Set string attribute `name` of n (replaced, or inserted in name order);
 * copies into g's arena. 0, or -1 on out-of-memory (the runtime stamps
 * mo.custom's kiln.library this way). */
int ir_node_set_attr_string(ir_graph *g, ir_node *n, const char *name, const char *value);
/* The same for an integer attribute (mo.matmul's kiln.packed_b, kiln.transpose_b). */
int ir_node_set_attr_int(ir_graph *g, ir_node *n, const char *name, int64_t value);

/* Deep copy into a fresh arena (symbols, names, attributes, dense data). */
ir_graph *ir_graph_clone(const ir_graph *g);

/* ---- text (parse.c, print.c) ---- */
/* Parse MO text (generic and short op forms). Checks syntax, names, symbol
 * declarations and that declared types are well formed; then runs
 * ir_graph_verify. Returns NULL with d filled on any error. */
ir_graph *ir_parse(const char *text, size_t len, ir_diag *d);
/* Canonical text; malloc'd, caller frees; NULL on out-of-memory.
 * ir_print(ir_parse(ir_print(g))) equals ir_print(g) byte for byte. */
char *ir_print(const ir_graph *g);

/* Pieces of the grammar for the C builder API (parse.c). Both parse the
 * whole of text[0..len) (surrounding spaces allowed) into g's arena; symbols
 * in dims are resolved with ir_graph_symbol(create = !g->syms_declared).
 * Attribute dictionary: "{axis = -1, dtype = si64}" -> *out (arena array of
 * *n attributes, unsorted). Type: "!mo.tensor<[batch, 64], f32>". Errors carry
 * line:col within text. Return 0 or -1. */
int ir_parse_attrs(ir_graph *g, const char *text, size_t len, ir_attr **out, int *n, ir_diag *d);
int ir_parse_type(ir_graph *g, const char *text, size_t len, ir_type *out, ir_diag *d);

/* ---- canonical kernel text (kernel_text.c) ---- */
/* The canonical text of node n of g as a one-op graph: `mo.graph
 * @kernel<d0, ...>(%a0: T, ...) -> (...)` with one input per operand, one
 * node (same op and attributes, results %r0, ...), outputs = the results.
 * Symbols are renamed d0, d1, ... in order of first use (operand types, then
 * result types), so the same op on the same types prints the same text in
 * graphs with different symbol names. sym_map (may be NULL; room for
 * g->nsyms entries) receives, for kernel symbol j, the index of the graph
 * symbol it stands for; *nsyms (may be NULL) the kernel's symbol count. The
 * text parses (ir_parse) back into a graph that prints to the same text.
 * For a mo.fused node the kernel graph is its body: inputs
 * %a0, ... = the node's operands, the body's nodes with results %t0, ...
 * and %r0, ... (the outputs), symbols numbered over the input types and then
 * the nodes' result types; the JIT compiles such a multi-node kernel graph
 * as one kernel. The _bound and _partial variants below do the same.
 * malloc'd, caller frees; NULL on out-of-memory or when n is not g's. */
char *ir_kernel_text(const ir_graph *g, const ir_node *n, int *sym_map, int *nsyms);
/* The same canonical text with every dim evaluated to a
 * constant under sym_values (g->nsyms entries: a value for every symbol of
 * g): a fully static kernel with no symbols, called with no dims. malloc'd,
 * caller frees; NULL on out-of-memory, when n is not g's, or when a dim does
 * not evaluate to a non-negative value under the binding. */
char *ir_kernel_text_bound(const ir_graph *g, const ir_node *n, const int64_t *sym_values);
/* Between the two (bucketed variants): graph symbols s
 * with bind[s] true are replaced by sym_values[s] (the dims rebuilt, so
 * constants fold), the others stay symbols, renamed and mapped as in
 * ir_kernel_text (sym_map, nsyms). NULL also when a dim folds to a negative
 * constant. */
char *ir_kernel_text_partial(const ir_graph *g, const ir_node *n, const int64_t *sym_values,
                             const bool *bind, int *sym_map, int *nsyms);

/* ---- fusion (fuse.c) ---- */
/* Groups ir_graph_fuse forms only when asked (flags): their lowering is the
 * host's alone. */
enum {
  IR_FUSE_SOFTMAX = 1u << 0,        /* softmax / logsoftmax with an elementwise prologue */
  IR_FUSE_SLICE_OPERANDS = 1u << 1, /* a matmul reads the slices it multiplies in place */
};
#define IR_FUSE_MAX_NODES 128 /* nodes in one fused group at most */
#define IR_FUSE_MAX_INPUTS 64 /* values one fused group reads from outside at most */
/* Rewrite verified g in place: each group of nodes that one kernel computes
 * better than several becomes ONE mo.fused node (ir_node.body holds the
 * group), in the position of the group's last node:
 *   - elementwise groups: nodes of the classes unary*, binary*, compare,
 *     logical, where, cast and broadcast_to whose results all have one shape
 *     (operands may broadcast), joined through intermediates that are used
 *     only inside the group and are not graph outputs;
 *   - GEMM epilogues: an f32 / f64 mo.matmul whose result is used once, by
 *     such a group of the matmul result's shape and dtype (bias add,
 *     activation, residual add, ...); the matmul's operands stay outside;
 *   - with IR_FUSE_SOFTMAX in flags, softmax prologues: a mo.softmax /
 *     mo.logsoftmax with such a group of its operand's shape computing its
 *     operand (x * scale + mask); it takes the group even where a matmul
 *     produces the group's operand (the matmul then stays alone);
 *   - with IR_FUSE_SLICE_OPERANDS, slices read in place: an f32 / f64
 *     mo.matmul (alone or with its epilogue) takes in each operand that is
 *     a mo.slice_tensor no other member reads whose last axis has step 1
 *     (attributes, or data bounds whose step and axes are constants): the
 *     GEMM reads the rows where they lie (a decoder's KV cache[:, :total]
 *     is never copied); a group without a matmul takes in the slices its
 *     elementwise members read (any steps), read through their strides.
 *     The body lists such slices first. Every group reading a slice may
 *     take it in (each body holds its own copy: rotary halves read by two
 *     groups); the slice leaves g when groups took in all its uses, else
 *     it stays a kernel for the other readers.
 * A group has at least two nodes, at most IR_FUSE_MAX_NODES, reads at most
 * IR_FUSE_MAX_INPUTS values from outside (the kernels' buffer limit: a wider
 * group is cut the same way), and one result (its last node's): a longer
 * chain becomes several groups, so each fused kernel, and the time LLVM
 * spends on it, stays bounded and compile time grows linearly with the graph
 * (LLVM's time on one function grows faster than its size; a group of 128
 * ops already keeps its intermediates in registers, and the value between
 * two groups costs one buffer). The
 * values only the group used leave g (g->values renumbered); the others
 * keep their ir_value objects (a result now defined by the mo.fused node).
 * Run-time checks of absorbed nodes are kept and point at the body's copy of
 * their node. Returns the number of mo.fused nodes made (0: g unchanged), or
 * -1 with d filled on out-of-memory (g unchanged). g must have passed
 * ir_graph_verify; the result verifies too (ir_graph_verify accepts a
 * mo.fused that has a body and checks the body against the node). */
int ir_graph_fuse(ir_graph *g, unsigned flags, ir_diag *d);

/* ---- transposed GEMM operands (fold_transpose.c; added for q k^T and
 * x W^T) ----
 * Rewrite verified g in place: a mo.transpose / mo.permute that swaps just
 * the last two axes, whose result is used once, as operand 1 of a
 * mo.matmul, and is no graph output, leaves g; the matmul reads its operand
 * and gets kiln.transpose_b = 1 (operand 1 then is [..., N, K]: infer.c,
 * interp.c and the lowerings honour it). g->nodes and g->values are
 * renumbered. Returns the number of matmuls rewritten, or -1 with d filled
 * on out-of-memory (the matmuls rewritten until then stay rewritten, their
 * transposes gone: g is consistent either way). */
int ir_graph_fold_transpose_b(ir_graph *g, ir_diag *d);

/* ---- half GEMM operands (half_gemm.c; the host pipeline only) ----
 * Rewrite verified, unfused g in place: a mo.matmul with an f32 result whose
 * operands are both mo.cast from the same half dtype (f16 / bf16, those
 * `which` names: IR_HALF_GEMM_* bits) to f32
 * reads the casts' operands and gets kiln.wide_result = 1 (half operands
 * widened exactly, an f32 result: infer.c, interp.c, jit/matmul_half.c);
 * casts left unused leave g (renumbered). Returns the number of matmuls
 * rewritten, or -1 with d filled on out-of-memory (g consistent either way). */
enum { IR_HALF_GEMM_F16 = 1, IR_HALF_GEMM_BF16 = 2 };
int ir_graph_half_gemm(ir_graph *g, unsigned which, ir_diag *d);

/* ---- narrow dtypes (widen_narrow.c) ----
 * Rewrite verified g in place so no kernel computes on a narrow dtype (f16,
 * bf16, si8, si16, ui8, ui16, ui32): each node with ir_node_computes_narrow
 * reads the operands it widens through new mo.cast nodes to the wider
 * dtype, computes wide results, and new mo.cast nodes round or wrap them
 * back into the original result values (so uses and graph outputs are
 * unchanged). Fusion then folds the casts into the kernels around them.
 * Returns the number of nodes rewritten, or -1 with d filled (out of memory,
 * or an op whose result dtype does not follow its operands: named there). */
int ir_graph_widen_narrow(ir_graph *g, ir_diag *d);

/* ---- rules (infer.c, verify.c) ---- */
/* Compute the result types of node n from its operand types and attributes
 * (for reshape, broadcast_to, constant and constant.external the declared
 * result type is the target and is only checked). Writes them into
 * n->out[i]->type. Returns 0, or -1 with d filled ("operand 1 of mo.add has
 * shape [4] which does not broadcast with [5]"), located at n->loc. */
int ir_infer_node(ir_graph *g, ir_node *n, ir_diag *d);

/* Verify the whole graph: op arity and attributes, dtypes each op allows,
 * that declared result types equal the inferred ones, symbol declarations,
 * outputs present and their types. Returns 0 or -1 with d filled. */
int ir_graph_verify(ir_graph *g, ir_diag *d);

/* ---- run-time shape constraints (recorded by infer.c through verify.c) ---- */
/* Facts about symbolic dims the verifier cannot decide (a symbolic dim
 * broadcast against a static one, reshape element counts, matmul K dims,
 * slice bounds). The runtime checks every one after solving the symbols. */
typedef enum ir_check_kind {
  IR_CHECK_EQ, /* lhs == rhs */
  IR_CHECK_GE, /* lhs >= rhs */
} ir_check_kind;
struct ir_check {
  ir_check_kind kind;
  const ir_dim *lhs, *rhs;
  const ir_node *node; /* the op that needs it */
  const char *what;    /* "operand 1 axis 0 of mo.add broadcasts with 5" */
};
/* ir_graph_verify (re)builds g->checks: every run-time check of the graph,
 * in node order. ir_infer_node appends to it through ir_graph_add_check. */
int ir_graph_add_check(ir_graph *g, ir_check_kind kind, const ir_dim *lhs, const ir_dim *rhs,
                       const ir_node *node, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif
