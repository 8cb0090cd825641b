/* test_slice_gemm.c - slices a GEMM reads in place (ir_graph_fuse with
 * IR_FUSE_SLICE_OPERANDS, jit/fused.c, jit_matmul_in_place): which slices
 * join a matmul's group and which stay kernels of their own, and the
 * results of graphs with such slices, through the runtime (which fuses them
 * on the host) against the reference interpreter: a decoder's attention
 * over cache[:, :total] (data bounds, the transposed K folded into the
 * GEMM), attribute bounds on batch, row and column axes, a GEMM epilogue
 * after them, empty and clamped bounds, and a symbol only a fused slice
 * reads, still checked against the data; slices read by several groups
 * (rotary halves, a slice read by a GEMM and by an elementwise group), each
 * group reading them in place, and a slice that stays a kernel for the
 * readers that cannot. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "ir/parse.h"
#include "support/oracle.h"

#define T(shape, dt) "!mo.tensor<[" shape "], " dt ">"

/* One attention head pair over a [2, 40, 16] cache: scores = q k^T with k
 * = kc[:, :stop] (data bounds), p = softmax(scores), out = p v with v =
 * vc[:, :stop]. */
static const char *ATTN =
    "mo.graph @attn<n, t>(%q: " T("2, n, 16", "f32") ", %kc: " T("2, 40, 16", "f32")
    ", %vc: " T("2, 40, 16", "f32") ", %stop: " T("1", "si64") ") -> (" T("2, n, 16", "f32")
    ") {\n"
    ORACLE_CONST("z", "si64", "1", "1x", "0")
    ORACLE_CONST("one", "si64", "1", "1x", "1")
    "  %k = mo.slice_tensor(%kc, %z, %stop, %one, %one) : (" T("2, 40, 16", "f32") ", "
    T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ") -> "
    T("2, t, 16", "f32") "\n"
    "  %v = mo.slice_tensor(%vc, %z, %stop, %one, %one) : (" T("2, 40, 16", "f32") ", "
    T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ") -> "
    T("2, t, 16", "f32") "\n"
    "  %kt = mo.transpose(%k) {axis_1 = 2, axis_2 = 1} : (" T("2, t, 16", "f32") ") -> "
    T("2, 16, t", "f32") "\n"
    "  %s = mo.matmul(%q, %kt) : (" T("2, n, 16", "f32") ", " T("2, 16, t", "f32") ") -> "
    T("2, n, t", "f32") "\n"
    "  %p = mo.softmax(%s) : " T("2, n, t", "f32") "\n"
    "  %o = mo.matmul(%p, %v) : (" T("2, n, t", "f32") ", " T("2, t, 16", "f32") ") -> "
    T("2, n, 16", "f32") "\n"
    "  mo.output %o : " T("2, n, 16", "f32") "\n}\n";

/* Attribute bounds: a = x[1:4:2, 2:10, 1:8] (a batch step, rows and a
 * column range of x's rows), then a GEMM epilogue (bias, relu); and b =
 * w[:, 3:9] as the right operand of a second GEMM. */
static const char *STATIC =
    "mo.graph @st<m>(%x: " T("5, 12, 9", "f32") ", %w: " T("7, 11", "f32") ", %bias: "
    T("6", "f32") ", %y: " T("m, 7", "f32") ") -> (" T("2, 8, 6", "f32") ", "
    T("m, 6", "f32") ") {\n"
    "  %a = mo.slice_tensor(%x) {start = [1, 2, 1], step = [2, 1, 1], stop = [4, 10, 8]} : ("
    T("5, 12, 9", "f32") ") -> " T("2, 8, 7", "f32") "\n"
    "  %b = mo.slice_tensor(%w) {start = [0, 3], step = [1, 1], stop = [7, 9]} : ("
    T("7, 11", "f32") ") -> " T("7, 6", "f32") "\n"
    "  %p = mo.matmul(%a, %b) : (" T("2, 8, 7", "f32") ", " T("7, 6", "f32") ") -> "
    T("2, 8, 6", "f32") "\n"
    "  %pb = mo.add(%p, %bias) : " T("2, 8, 6", "f32") "\n"
    "  %r = mo.relu(%pb) : " T("2, 8, 6", "f32") "\n"
    "  %b2 = mo.slice_tensor(%w) {start = [0, 3], step = [1, 1], stop = [7, 9]} : ("
    T("7, 11", "f32") ") -> " T("7, 6", "f32") "\n"
    "  %q = mo.matmul(%y, %b2) : (" T("m, 7", "f32") ", " T("7, 6", "f32") ") -> "
    T("m, 6", "f32") "\n"
    "  mo.output %r, %q : " T("2, 8, 6", "f32") ", " T("m, 6", "f32") "\n}\n";

/* Slices that must stay kernels of their own: a last axis taken with step
 * 2, a slice read by the matmul and by its own epilogue (which sees only
 * the product), and a step given as data. */
static const char *STAY =
    "mo.graph @stay<n>(%x: " T("6, 8", "f32") ", %y: " T("n, 4", "f32") ", %z: "
    T("4, 8", "f32") ", %st: " T("1", "si64") ", %w: " T("4, 4", "f32") ") -> ("
    T("n, 3", "f32") ", " T("4, 4", "f32") ", " T("n, 4", "f32") ") {\n"
    "  %a = mo.slice_tensor(%x) {start = [0, 1], step = [1, 2], stop = [4, 7]} : ("
    T("6, 8", "f32") ") -> " T("4, 3", "f32") "\n"
    "  %p = mo.matmul(%y, %a) : (" T("n, 4", "f32") ", " T("4, 3", "f32") ") -> "
    T("n, 3", "f32") "\n"
    "  %s = mo.slice_tensor(%x) {start = [1, 2], step = [1, 1], stop = [5, 6]} : ("
    T("6, 8", "f32") ") -> " T("4, 4", "f32") "\n"
    "  %sw = mo.matmul(%s, %w) : (" T("4, 4", "f32") ", " T("4, 4", "f32") ") -> "
    T("4, 4", "f32") "\n"
    "  %ss = mo.add(%sw, %s) : " T("4, 4", "f32") "\n"
    ORACLE_CONST("c0", "si64", "1", "1x", "0")
    ORACLE_CONST("e", "si64", "1", "1x", "8")
    ORACLE_CONST("ax", "si64", "1", "1x", "1")
    "  %d = mo.slice_tensor(%z, %c0, %e, %st, %ax) : (" T("4, 8", "f32") ", " T("1", "si64")
    ", " T("1", "si64") ", " T("1", "si64") ", " T("1", "si64") ") -> " T("4, 4", "f32") "\n"
    "  %pd = mo.matmul(%y, %d) : (" T("n, 4", "f32") ", " T("4, 4", "f32") ") -> "
    T("n, 4", "f32") "\n"
    "  mo.output %p, %ss, %pd : " T("n, 3", "f32") ", " T("4, 4", "f32") ", " T("n, 4", "f32")
    "\n}\n";

/* g parsed, verified, its transposes folded and fused as the host does. */
static ir_graph *fused(const char *text) {
  ir_diag d = {0};
  ir_graph *g = ir_parse(text, strlen(text), &d);
  cr_assert_not_null(g, "ir_parse: %d:%d: %s", d.line, d.col, d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "verify: %s", d.msg);
  cr_assert(ir_graph_fold_transpose_b(g, &d) >= 0, "%s", d.msg);
  cr_assert(ir_graph_fuse(g, IR_FUSE_SOFTMAX | IR_FUSE_SLICE_OPERANDS, &d) >= 0, "%s", d.msg);
  cr_assert_eq(ir_graph_verify(g, &d), 0, "the fused graph does not verify: %s", d.msg);
  return g;
}

/* The ops of node i of g ("mo.fused[slice_tensor,matmul]" or "mo.matmul"). */
static void node_ops(const ir_graph *g, int i, char *buf, size_t cap) {
  const ir_node *n = g->nodes[i];
  int k = snprintf(buf, cap, "%s", ir_op_get(n->op)->name);
  for (int j = 0; n->body && j < n->body->nnodes && (size_t)k < cap; j++)
    k += snprintf(buf + k, cap - (size_t)k, "%s%s", j ? "," : "[",
                  ir_op_get(n->body->nodes[j]->op)->name);
  if (n->body && (size_t)k < cap) snprintf(buf + k, cap - (size_t)k, "]");
}

/* Whether some node of g has exactly these ops. */
static bool has_node(const ir_graph *g, const char *ops) {
  char buf[256];
  for (int i = 0; i < g->nnodes; i++) {
    node_ops(g, i, buf, sizeof buf);
    if (!strcmp(buf, ops)) return true;
  }
  return false;
}

static int count_op(const ir_graph *g, ir_op op) {
  int k = 0;
  for (int i = 0; i < g->nnodes; i++) k += g->nodes[i]->op == op;
  return k;
}

Test(slice_gemm, the_attention_reads_its_cache_slices_in_place) {
  ir_graph *g = fused(ATTN);
  cr_assert_eq(count_op(g, IR_OP_SLICE_DATA), 0, "every slice joined its GEMM");
  cr_assert(has_node(g, "fused[slice_tensor,matmul]"), "q k^T with k read in place");
  cr_assert_eq(count_op(g, IR_OP_FUSED), 2);
  cr_assert(ir_graph_reads_dims(g), "t is still read from the fused slices' data");
  ir_graph_free(g);
  static const double STOP[] = {0, 1, 17, 40, 55, -3};
  for (size_t i = 0; i < sizeof STOP / sizeof *STOP; i++) {
    oracle_gen gens[4] = {gen_uniform(-2, 2), gen_uniform(-2, 2), gen_uniform(-2, 2),
                          gen_const(STOP[i])};
    char label[64];
    snprintf(label, sizeof label, "attention over cache[:, :%g]", STOP[i]);
    oracle_case c = {.label = label, .mlir = ATTN, .bindings = "n=1;n=5", .gens = gens,
                     .ngens = 4, .rtol = 1e-4, .atol = 1e-5};
    ORACLE_ASSERT(&c);
  }
}

Test(slice_gemm, attribute_bounds_and_an_epilogue) {
  ir_graph *g = fused(STATIC);
  cr_assert_eq(count_op(g, IR_OP_SLICE_TENSOR), 0, "both slices joined their GEMMs");
  cr_assert(has_node(g, "fused[slice_tensor,slice_tensor,matmul,add,relu]"),
            "both operands in place, then the epilogue");
  cr_assert(has_node(g, "fused[slice_tensor,matmul]"), "a right operand read in place");
  ir_graph_free(g);
  oracle_case c = {.label = "slices with attribute bounds", .mlir = STATIC,
                   .bindings = "m=0;m=1;m=9", .gen_default = gen_uniform(-2, 2), .rtol = 1e-4,
                   .atol = 1e-5};
  ORACLE_ASSERT(&c);
}

Test(slice_gemm, slices_a_gemm_cannot_read_in_place_stay_kernels) {
  ir_graph *g = fused(STAY);
  cr_assert_eq(count_op(g, IR_OP_SLICE_TENSOR), 2,
               "step 2 on the last axis; its epilogue reads it");
  cr_assert_eq(count_op(g, IR_OP_SLICE_DATA), 1, "a step given as data");
  cr_assert_eq(count_op(g, IR_OP_FUSED), 1);
  cr_assert(has_node(g, "fused[matmul,add]"), "the epilogue reads the slice's kernel");
  ir_graph_free(g);
  oracle_gen gens[5] = {gen_uniform(-2, 2), gen_uniform(-2, 2), gen_uniform(-2, 2),
                        gen_const(2), gen_uniform(-2, 2)};
  oracle_case c = {.label = "slices left alone", .mlir = STAY, .bindings = "n=1;n=6",
                   .gens = gens, .ngens = 5, .rtol = 1e-4, .atol = 1e-5};
  ORACLE_ASSERT(&c);
}

/* Scores %<scores> = q k^T over k = kc[:stop] (data bounds, so t is read
 * from %stop), for graphs with inputs %q [3, 16], %kc [40, 16], %stop. */
#define QK_OVER_CACHE(scores)                                                                  \
  ORACLE_CONST("z", "si64", "1", "1x", "0")                                                    \
  ORACLE_CONST("one", "si64", "1", "1x", "1")                                                  \
  "  %k = mo.slice_tensor(%kc, %z, %stop, %one) : (" T("40, 16", "f32") ", " T("1", "si64")    \
  ", " T("1", "si64") ", " T("1", "si64") ") -> " T("t, 16", "f32") "\n"                       \
  "  %kt = mo.transpose(%k) {axis_1 = 1, axis_2 = 0} : (" T("t, 16", "f32") ") -> "           \
  T("16, t", "f32") "\n"                                                                       \
  "  %" scores " = mo.matmul(%q, %kt) : (" T("3, 16", "f32") ", " T("16, t", "f32") ") -> "   \
  T("3, t", "f32") "\n"

/* t is read only by the fused slice; a second input of length t must agree
 * with it, so a stop that disagrees is an error naming the slice on both
 * sides (the fused slice's read still runs before the graph). */
static const char *ONLY_READER =
    "mo.graph @only<t>(%q: " T("3, 16", "f32") ", %kc: " T("40, 16", "f32") ", %stop: "
    T("1", "si64") ", %m: " T("t", "f32") ") -> (" T("3, t", "f32") ") {\n"
    QK_OVER_CACHE("s")
    "  %o = mo.add(%s, %m) : " T("3, t", "f32") "\n"
    "  mo.output %o : " T("3, t", "f32") "\n}\n";

Test(slice_gemm, a_symbol_only_a_fused_slice_reads) {
  ir_graph *g = fused(ONLY_READER);
  cr_assert(has_node(g, "fused[slice_tensor,matmul,add]"));
  ir_graph_free(g);
  oracle_gen gens[4] = {gen_uniform(-2, 2), gen_uniform(-2, 2), gen_const(7),
                        gen_uniform(-2, 2)};
  oracle_case ok = {.label = "stop 7, m of 7", .mlir = ONLY_READER, .bindings = "t=7",
                    .gens = gens, .ngens = 4, .rtol = 1e-4, .atol = 1e-5};
  ORACLE_ASSERT(&ok);
  oracle_case bad = {.label = "stop 7, m of 5", .mlir = ONLY_READER, .bindings = "t=5",
                     .gens = gens, .ngens = 4, .expect_error = true};
  oracle_expect_both_fail(&bad, "mo.slice_tensor");
}

/* Slices elementwise members read (IR_FUSE_SLICE_OPERANDS): a gated unit
 * over the two halves of x (silu(x[:, :6]) * x[:, 6:]), a slice with
 * negative steps plus a bias, and a softmax whose prologue adds a mask
 * sliced to the scores' size by data bounds. */
static const char *EW =
    "mo.graph @ew<n, t>(%x: " T("n, 12", "f32") ", %w: " T("5, 12", "f32") ", %bias: "
    T("6", "f32") ", %s: " T("t, t", "f32") ", %m: " T("9, 9", "f32") ", %stop: "
    T("2", "si64") ") -> (" T("n, 6", "f32") ", " T("4, 6", "f32") ", " T("t, t", "f32")
    ") {\n"
    "  %a = mo.slice_tensor(%x) {start = [0, 0], step = [1, 1], stop = [9223372036854775807, 6]}"
    " : (" T("n, 12", "f32") ") -> " T("n, 6", "f32") "\n"
    "  %b = mo.slice_tensor(%x) {start = [0, 6], step = [1, 1], stop = [9223372036854775807, 12]}"
    " : (" T("n, 12", "f32") ") -> " T("n, 6", "f32") "\n"
    "  %sg = mo.sigmoid(%a) : " T("n, 6", "f32") "\n"
    "  %si = mo.mul(%a, %sg) : " T("n, 6", "f32") "\n"
    "  %y = mo.mul(%si, %b) : " T("n, 6", "f32") "\n"
    "  %r = mo.slice_tensor(%w) {start = [4, 11], step = [-1, -2], stop = [0, 0]} : ("
    T("5, 12", "f32") ") -> " T("4, 6", "f32") "\n"
    "  %rb = mo.add(%r, %bias) : " T("4, 6", "f32") "\n"
    ORACLE_CONST("z", "si64", "2", "2x", "0, 0")
    ORACLE_CONST("one", "si64", "2", "2x", "1, 1")
    "  %ms = mo.slice_tensor(%m, %z, %stop, %one) : (" T("9, 9", "f32") ", " T("2", "si64")
    ", " T("2", "si64") ", " T("2", "si64") ") -> " T("t, t", "f32") "\n"
    "  %sm = mo.add(%s, %ms) : " T("t, t", "f32") "\n"
    "  %p = mo.softmax(%sm) : " T("t, t", "f32") "\n"
    "  mo.output %y, %rb, %p : " T("n, 6", "f32") ", " T("4, 6", "f32") ", " T("t, t", "f32")
    "\n}\n";

Test(slice_gemm, elementwise_groups_read_slices_in_place) {
  ir_graph *g = fused(EW);
  cr_assert_eq(count_op(g, IR_OP_SLICE_TENSOR) + count_op(g, IR_OP_SLICE_DATA), 0,
               "every slice joined the group reading it");
  cr_assert(has_node(g, "fused[slice_tensor,slice_tensor,sigmoid,mul,mul]"));
  cr_assert(has_node(g, "fused[slice_tensor,add]"));
  cr_assert(has_node(g, "fused[slice_tensor,add,softmax]"));
  ir_graph_free(g);
  static const double T_[] = {1, 4, 9};
  for (size_t i = 0; i < sizeof T_ / sizeof *T_; i++) {
    oracle_gen gens[6] = {gen_uniform(-2, 2), gen_uniform(-2, 2), gen_uniform(-2, 2),
                          gen_uniform(-2, 2), gen_uniform(-2, 2), gen_const(T_[i])};
    char label[64], bind[64];
    snprintf(label, sizeof label, "slices read by elementwise groups, t = %g", T_[i]);
    snprintf(bind, sizeof bind, "n=0,t=%g;n=1,t=%g;n=7,t=%g", T_[i], T_[i], T_[i]);
    oracle_case c = {.label = label, .mlir = EW, .bindings = bind, .gens = gens, .ngens = 6,
                     .rtol = 1e-5, .atol = 1e-6};
    ORACLE_ASSERT(&c);
  }
}

#define BIG "9223372036854775807"

/* Rotary positions as the decoder writes them: the two halves of x (a
 * permuted input, so no graph input is sliced), each read by both groups
 * (x1 cos - x2 sin, x1 sin + x2 cos), then concatenated. */
static const char *ROTARY =
    "mo.graph @rot<n>(%xi: " T("n, 2, 16", "f32") ", %cos: " T("n, 8", "f32") ", %sin: "
    T("n, 8", "f32") ") -> (" T("2, n, 16", "f32") ") {\n"
    "  %x = mo.permute(%xi) {dims = [1, 0, 2]} : (" T("n, 2, 16", "f32") ") -> "
    T("2, n, 16", "f32") "\n"
    "  %x1 = mo.slice_tensor(%x) {start = [0, 0, 0], step = [1, 1, 1], stop = [" BIG ", " BIG
    ", 8]} : (" T("2, n, 16", "f32") ") -> " T("2, n, 8", "f32") "\n"
    "  %x2 = mo.slice_tensor(%x) {start = [0, 0, 8], step = [1, 1, 1], stop = [" BIG ", " BIG
    ", " BIG "]} : (" T("2, n, 16", "f32") ") -> " T("2, n, 8", "f32") "\n"
    "  %a1 = mo.mul(%x1, %cos) : (" T("2, n, 8", "f32") ", " T("n, 8", "f32") ") -> "
    T("2, n, 8", "f32") "\n"
    "  %a2 = mo.mul(%x2, %sin) : (" T("2, n, 8", "f32") ", " T("n, 8", "f32") ") -> "
    T("2, n, 8", "f32") "\n"
    "  %a = mo.sub(%a1, %a2) : " T("2, n, 8", "f32") "\n"
    "  %b1 = mo.mul(%x1, %sin) : (" T("2, n, 8", "f32") ", " T("n, 8", "f32") ") -> "
    T("2, n, 8", "f32") "\n"
    "  %b2 = mo.mul(%x2, %cos) : (" T("2, n, 8", "f32") ", " T("n, 8", "f32") ") -> "
    T("2, n, 8", "f32") "\n"
    "  %b = mo.add(%b1, %b2) : " T("2, n, 8", "f32") "\n"
    "  %r = mo.concat(%a, %b) {axis = 2} : (" T("2, n, 8", "f32") ", " T("2, n, 8", "f32")
    ") -> " T("2, n, 16", "f32") "\n"
    "  mo.output %r : " T("2, n, 16", "f32") "\n}\n";

Test(slice_gemm, rotary_halves_read_by_two_groups_are_read_in_place) {
  ir_graph *g = fused(ROTARY);
  cr_assert_eq(count_op(g, IR_OP_SLICE_TENSOR), 0, "no slice kernel left");
  cr_assert(has_node(g, "fused[slice_tensor,slice_tensor,mul,mul,sub]"));
  cr_assert(has_node(g, "fused[slice_tensor,slice_tensor,mul,mul,add]"));
  cr_assert_eq(g->nnodes, 4, "permute, two groups, concat");
  ir_graph_free(g);
  oracle_case c = {.label = "rotary halves", .mlir = ROTARY, .bindings = "n=0;n=1;n=5",
                   .gen_default = gen_uniform(-2, 2), .rtol = 1e-5, .atol = 1e-6};
  ORACLE_ASSERT(&c);
}

/* A slice read by a GEMM group and by an elementwise group: attribute
 * bounds (s = x[:, 2:10] times w, and relu(s + bias)), and data bounds
 * (k = kc[:stop], q k^T with k transposed in the GEMM, and k * k), so the
 * solver reads the data slice's bounds in two bodies. */
static const char *MIXED =
    "mo.graph @mix<m, t>(%x: " T("m, 12", "f32") ", %w: " T("8, 5", "f32") ", %bias: "
    T("8", "f32") ", %q: " T("3, 16", "f32") ", %kc: " T("40, 16", "f32") ", %stop: "
    T("1", "si64") ") -> (" T("m, 5", "f32") ", " T("m, 8", "f32") ", " T("3, t", "f32") ", "
    T("t, 16", "f32") ") {\n"
    "  %s = mo.slice_tensor(%x) {start = [0, 2], step = [1, 1], stop = [" BIG ", 10]} : ("
    T("m, 12", "f32") ") -> " T("m, 8", "f32") "\n"
    "  %p = mo.matmul(%s, %w) : (" T("m, 8", "f32") ", " T("8, 5", "f32") ") -> "
    T("m, 5", "f32") "\n"
    "  %e = mo.add(%s, %bias) : (" T("m, 8", "f32") ", " T("8", "f32") ") -> " T("m, 8", "f32")
    "\n"
    "  %r = mo.relu(%e) : " T("m, 8", "f32") "\n"
    QK_OVER_CACHE("sc")
    "  %kk = mo.mul(%k, %k) : " T("t, 16", "f32") "\n"
    "  mo.output %p, %r, %sc, %kk : " T("m, 5", "f32") ", " T("m, 8", "f32") ", "
    T("3, t", "f32") ", " T("t, 16", "f32") "\n}\n";

Test(slice_gemm, a_slice_read_by_a_gemm_and_an_elementwise_group) {
  ir_graph *g = fused(MIXED);
  cr_assert_eq(count_op(g, IR_OP_SLICE_TENSOR) + count_op(g, IR_OP_SLICE_DATA), 0,
               "no slice kernel left");
  cr_assert(has_node(g, "fused[slice_tensor,add,relu]"));
  cr_assert(has_node(g, "fused[slice_tensor,mul]"));
  cr_assert_eq(count_op(g, IR_OP_FUSED), 4, "two GEMMs reading in place, two elementwise groups");
  cr_assert(ir_graph_reads_dims(g), "t is read from the fused slices' data");
  ir_graph_free(g);
  static const double STOP[] = {0, 1, 17, 40, 55, -3};
  for (size_t i = 0; i < sizeof STOP / sizeof *STOP; i++) {
    oracle_gen gens[6] = {gen_uniform(-2, 2), gen_uniform(-2, 2), gen_uniform(-2, 2),
                          gen_uniform(-2, 2), gen_uniform(-2, 2), gen_const(STOP[i])};
    char label[64];
    snprintf(label, sizeof label, "a shared slice, stop %g", STOP[i]);
    oracle_case c = {.label = label, .mlir = MIXED, .bindings = "m=0;m=1;m=7", .gens = gens,
                     .ngens = 6, .rtol = 1e-4, .atol = 1e-5};
    ORACLE_ASSERT(&c);
  }
}

/* A slice some of whose readers cannot take it in (a concat) stays a
 * kernel for them, while its GEMM and elementwise readers read it in
 * place; a slice a GEMM reads as both operands is read in place twice. */
static const char *PARTIAL =
    "mo.graph @part<m>(%x: " T("m, 12", "f32") ", %w: " T("8, 5", "f32") ", %y: "
    T("6, 6", "f32") ") -> (" T("m, 5", "f32") ", " T("m, 8", "f32") ", " T("m, 16", "f32")
    ", " T("4, 4", "f32") ") {\n"
    "  %s = mo.slice_tensor(%x) {start = [0, 2], step = [1, 1], stop = [" BIG ", 10]} : ("
    T("m, 12", "f32") ") -> " T("m, 8", "f32") "\n"
    "  %p = mo.matmul(%s, %w) : (" T("m, 8", "f32") ", " T("8, 5", "f32") ") -> "
    T("m, 5", "f32") "\n"
    "  %e = mo.exp(%s) : " T("m, 8", "f32") "\n"
    "  %r = mo.negate(%e) : " T("m, 8", "f32") "\n"
    "  %c = mo.concat(%s, %s) {axis = 1} : (" T("m, 8", "f32") ", " T("m, 8", "f32") ") -> "
    T("m, 16", "f32") "\n"
    "  %y1 = mo.slice_tensor(%y) {start = [1, 2], step = [1, 1], stop = [5, 6]} : ("
    T("6, 6", "f32") ") -> " T("4, 4", "f32") "\n"
    "  %yy = mo.matmul(%y1, %y1) : (" T("4, 4", "f32") ", " T("4, 4", "f32") ") -> "
    T("4, 4", "f32") "\n"
    "  mo.output %p, %r, %c, %yy : " T("m, 5", "f32") ", " T("m, 8", "f32") ", "
    T("m, 16", "f32") ", " T("4, 4", "f32") "\n}\n";

Test(slice_gemm, a_slice_stays_a_kernel_for_readers_that_cannot_take_it) {
  ir_graph *g = fused(PARTIAL);
  cr_assert_eq(count_op(g, IR_OP_SLICE_TENSOR), 1, "the concat still reads the slice's kernel");
  cr_assert_eq(count_op(g, IR_OP_CONCAT), 1);
  cr_assert(has_node(g, "fused[slice_tensor,exp,negate]"));
  cr_assert_eq(count_op(g, IR_OP_FUSED), 3, "two GEMMs reading in place, one elementwise group");
  ir_graph_free(g);
  oracle_case c = {.label = "a slice partly read in place", .mlir = PARTIAL,
                   .bindings = "m=0;m=1;m=9", .gen_default = gen_uniform(-2, 2), .rtol = 1e-4,
                   .atol = 1e-5};
  ORACLE_ASSERT(&c);
}
