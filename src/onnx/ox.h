/* ox.h - internal to src/onnx/: the ONNX importer's state and the helpers
 * its files share.
 *
 * The importer walks an ONNX graph's nodes in order and builds a kiln graph
 * through the public builder (kiln/graph.h), so every node it adds is
 * verified and shape-inferred at once. Each ONNX value name maps to an
 * ox_val: a kiln value, and/or data known at import time (small integer and
 * bool tensors whose elements are dims: Shape -> Gather -> Concat chains
 * fold into symbolic dims this way), and/or a decoded initializer not yet
 * placed in the graph (it becomes a constant or a weight when first used as
 * data). Unsupported nodes are collected (errors.c) and the import goes on,
 * so one error lists them all; their results are marked `bad` and nodes that
 * read them are skipped. Any other failure stops the import at once with a
 * message naming the node. */
#ifndef KILN_SRC_ONNX_OX_H
#define KILN_SRC_ONNX_OX_H

#include <stdarg.h>

#include "onnx.pb-c.h"
#include "src/rt.h"
#include "src/weight_source.h"

/* Integer / bool tensors up to this many elements are tracked as known data. */
#define OX_KNOWN_MAX 4096
/* Initializers up to this many elements become constants, larger ones weights. */
#define OX_CONST_MAX 64

typedef struct ox_val {
  const char *name;     /* the ONNX name (owned by the model proto) */
  kiln_value *v;        /* the kiln value, or NULL until materialized */
  bool bad;             /* made by an unsupported node */
  /* known data: integer / bool elements as dims (constants, or symbolic) */
  bool known;
  ir_dtype dtype;       /* of the known data or the initializer */
  int rank;
  int64_t shape[IR_MAX_RANK];
  int64_t numel;
  const ir_dim **e;     /* numel entries (graph arena) */
  /* an initializer not yet in the graph */
  kiln_tensor *init;    /* decoded data (owned here until given to the weight source) */
  const void *in_file;  /* init's bytes in a file mapping the weight source keeps, or NULL */
  bool weight;          /* materialized as a weight (init given away) */
} ox_val;

typedef struct ox_unsup ox_unsup; /* errors.c */

typedef struct ox {
  kiln_graph *g;
  ir_graph *ir;         /* g->ir */
  rt_wsrc *ws;
  const char *dir;      /* the model file's directory (external data), or NULL */
  /* the model graph's initializers' raw_data found in place (wire.c): raw[i]
   * is initializer i's of raw_graph (data NULL: left in the proto) */
  const struct ox_raw *raw;
  size_t nraw;
  const Onnx__GraphProto *raw_graph;
  int64_t opset;        /* of the default domain */
  kiln_status *st;
  /* values by name: open addressing over vals */
  ox_val **vals;
  int nvals, capvals;
  int *index;
  int capindex;
  /* unsupported nodes (errors.c) */
  ox_unsup *unsup;
  int nunsup, capunsup;
  const Onnx__NodeProto *node; /* the node being imported (messages) */
  char origin[320];     /* "ONNX node 'name' (OpType)": g->origin while node is imported */
  int nsym;             /* generated symbol names */
  int *counter;         /* a subgraph's: the model graph's nsym (names unique across regions) */
  int depth;            /* subgraph nesting: 0 for the model's graph */
  const Onnx__GraphProto *gp; /* the graph being imported (its declared types) */
} ox;

/* ---- values (values.c) ---- */
ox_val *ox_find(ox *x, const char *name);
/* A new value named name (replacing an older one of that name). */
ox_val *ox_new_val(ox *x, const char *name);
/* v as a kiln value: known data and initializers become constants or
 * weights here. NULL with st filled (or the node recorded unsupported when
 * known data has symbolic elements: *unsup set). */
kiln_value *ox_value(ox *x, ox_val *v, bool *unsup);
/* Add op `op` with attributes (printf-style text, NULL for none) and an
 * optional declared result type; errors name the ONNX node. */
kiln_value *ox_op(ox *x, const char *op, kiln_value *const *in, int nin, const char *result_type,
                  const char *attr_fmt, ...) __attribute__((format(printf, 6, 7)));
kiln_value *ox_scalar(ox *x, ir_dtype dt, double v); /* a rank-0 constant */
/* Input 0 when it is a float, or NULL after recording that another dtype
 * is not supported (*rc 1; -1 on error) (ops_hyperbolic.c). */
kiln_value *ox_float_in(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, int *rc);
/* Input i as a kiln value; NULL with *rc -1 (error) or 1 (unsupported). */
kiln_value *ox_in(ox *x, ox_val **in, int nin, int i, int *rc);
/* dst becomes the same value as src (Identity). 0, -1 or 1. */
int ox_alias(ox *x, ox_val *dst, ox_val *src);
/* v holds initializer data t (taken); integer data is also known. */
int ox_set_init(ox *x, ox_val *v, kiln_tensor *t);
/* The result type text "!mo.tensor<[d0, ...], dt>" of dims into buf. */
const char *ox_type_text(char *buf, size_t cap, ir_dtype dt, int rank, const ir_dim *const *dims);
static inline const ir_type *ox_type(const kiln_value *v) { return &((const ir_value *)v)->type; }
/* Entry i of the 1-D v as a rank-0 value (values.c). */
kiln_value *ox_entry(ox *x, kiln_value *v, int64_t i);
/* mo.range(0, end) as si64 [d] (end a rank-0 si64): d a constant, or a
 * symbol read from end's data before the graph runs (values.c). */
kiln_value *ox_range_to(ox *x, kiln_value *end, const ir_dim *d);
/* a reshaped to the dims given (ox_op with that result type) */
kiln_value *ox_reshape(ox *x, kiln_value *a, int rank, const ir_dim *const *dims);

/* The op mappers' shorthand (ops_*.c): BEGIN opens a mapper (rc for IN,
 * the unsupported count to tell a failure from an unsupported node by),
 * IN(i) is input i as a kiln value, FAILED() the mapper's return after a
 * NULL from ox_op (1: recorded unsupported, -1: error). */
#define BEGIN int rc = 0, nun0 = x->nunsup; (void)nun0
#define IN(i) ox_in(x, in, nin, i, &rc)
#define FAILED() (x->nunsup > nun0 ? 1 : -1)
#define OP1(name, a) ox_op(x, name, (kiln_value *[]){a}, 1, NULL, NULL)
#define OP2(name, a, b) ox_op(x, name, (kiln_value *[]){a, b}, 2, NULL, NULL)

/* ONNX's 3-D MaxPool / AveragePool of a (N, C, D, H, W) as two 2-D pools
 * (pool3d.c): 0 with *res set, -1 (error) or 1 (unsupported, recorded). */
int ox_pool3d(ox *x, const Onnx__NodeProto *n, kiln_value *a, bool avg, kiln_value **res);

/* ConvTranspose's paddings for an output of `want` cells along an axis of
 * len input cells (output_shape, or auto_pad SAME_*: upper puts the odd
 * cell at the end), as ONNX computes them; a negative end padding becomes
 * more output padding (*op). False when the start padding would be
 * negative (convt3d.c). */
bool ox_convt_fit(int64_t len, int64_t k, int64_t st, int64_t dil, int64_t want, bool upper,
                  int64_t *pb, int64_t *pe, int64_t *op);
/* ONNX's 3-D ConvTranspose of a (N, C, D, H, W) by w (C, M, KD, KH, KW)
 * plus bias b (NULL: none), group 1, as two 2-D ones (convt3d.c): 0 with
 * *res set, -1 or 1. */
int ox_convt3d(ox *x, const Onnx__NodeProto *n, kiln_value *a, kiln_value *w, kiln_value *b,
               kiln_value **res);

/* ONNX Resize with coordinate_transformation_mode tf_crop_and_resize
 * (resize_crop.c): a resized by roi_v to sizes_v or scales_v (one NULL),
 * mode "nearest" (rounded by `round`) or "linear". 0, -1 or 1. */
int ox_resize_crop(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *roi_v,
                   const ox_val *scales_v, const ox_val *sizes_v, const char *mode,
                   const char *round, ox_val *out);

/* MaxPool's Indices (pool_argmax.c): the flat index (row- or column-major
 * planes) of each window's maximum of a [N, C, H, W] (static) for the
 * window k, st, dil, pads (top, bottom, left, right) whose values are y
 * (mo.max_pool2d's, giving the output grid). 0 with *res set, -1 (error)
 * or 1 (a symbolic dim). */
int ox_pool_indices(ox *x, kiln_value *a, const int64_t k[2], const int64_t st[2],
                    const int64_t dil[2], const int64_t pads[4], bool column_major,
                    const kiln_value *y, kiln_value **res);

/* The DFT of a ([..., L, ..., 1 or 2], float, static last dim) along axis
 * ax for a signal of len samples (L cut or zero-padded; len < 0: the
 * rank-0 si64 len_data, or L when that is NULL too): [..., K, ..., 2],
 * K = len or len / 2 + 1 (onesided); NULL on failure (ops_dft.c). */
kiln_value *ox_dft(ox *x, kiln_value *a, int ax, int64_t len, kiln_value *len_data,
                   bool inverse, bool onesided);

/* ONNX's Max / Min (variadic), BitShift and Mod on ui64 operands, exact over
 * the full range from si64 ops (ops_uint64.c); NULL on failure (*rc as IN). */
kiln_value *ox_uint64_minmax(ox *x, ox_val **in, int nin, bool max, int *rc);
kiln_value *ox_uint64_shift(ox *x, ox_val **in, int nin, bool left, int *rc);
kiln_value *ox_uint64_mod(ox *x, ox_val **in, int nin, int *rc);

/* The rank the model declares for value `name` (a graph output or a
 * value_info entry of x->gp with a shape), or -1 (values.c). */
int ox_declared_rank(const ox *x, const char *name);

/* ---- attributes (values.c) ---- */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *n, const char *name);
int64_t ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double ox_attr_float(const Onnx__NodeProto *n, const char *name, double dflt);
/* ints of attribute name: *count entries, or NULL (count 0) when absent */
const int64_t *ox_attr_ints(const Onnx__NodeProto *n, const char *name, int *count);
const char *ox_attr_string(const Onnx__NodeProto *n, const char *name, const char *dflt,
                           char *buf, size_t cap);
/* A 3-D op's per-axis attribute `name` (3 entries) into out[3]; dflt when
 * absent. 0, or -1 for another count (the message names it). */
int ox_attr_ints3(ox *x, const Onnx__NodeProto *n, const char *name, int64_t dflt, int64_t *out);

/* ---- known data (shape.c) ---- */
/* Known integer elements all constant: copied into out[max]; *n set. */
bool ox_known_consts(const ox_val *v, int64_t *out, int max, int *n);
/* Data not known at import that kiln can read dims from before the graph
 * runs (ir/shape.h): a graph input or a value computed from inputs and
 * constants (ir_value_read_blocker finds no weight, control flow, effects
 * or count set from data among its producers). */
bool ox_run_time_data(const ox_val *v);
/* Make v known with `numel` dims e (copied) of dtype and shape. */
int ox_set_known(ox *x, ox_val *v, ir_dtype dt, int rank, const int64_t *shape,
                 const ir_dim *const *e);
bool ox_dtype_is_known_kind(ir_dtype dt); /* integers and bool */
/* dim `d` of value kv's type */
static inline const ir_dim *ox_dim(const kiln_value *kv, int d) { return ox_type(kv)->dims[d]; }
/* Axis a normalized into [0, rank) (false when out of range). */
bool ox_axis(int64_t a, int rank, int *out);
/* Reshape target from ONNX shape data (0: copy, unless allowzero; -1: infer)
 * into dims[n]. Returns 0, -1 (st filled) or 1 (unsupported, recorded). */
int ox_reshape_dims(ox *x, const kiln_value *in, const ox_val *shape, bool allowzero,
                    const ir_dim **dims, int *n);
/* Symbol for ONNX dim_param text (sanitized), or a fresh one (name NULL). */
const ir_dim *ox_symbol(ox *x, const char *name);
/* The result type "[n, cols] si64" of an op whose row count n is set from
 * data (mo.nonzero, mo.non_maximum_suppression): n a fresh symbol. Into
 * buf, or NULL (out of memory, st set). */
const char *ox_count_rows_type(ox *x, int64_t cols, char *buf, size_t cap);
/* ONNX elem_type -> kiln dtype; false for strings, complex, unknown. */
bool ox_dtype(int32_t onnx, ir_dtype *out);

/* ---- tensors (tensor.c, external.c) ---- */
/* Decode a TensorProto: raw_data borrowed from the proto, external data
 * mapped (kept alive by ws), typed fields copied. The tensor is owned by the
 * caller (borrowed views must not outlive ws / the proto). */
kiln_tensor *ox_tensor_decode(const Onnx__TensorProto *t, const char *dir, rt_wsrc *ws,
                              const char *what, kiln_status *st);
/* The same with t's raw_data found in place (raw: wire.c's; NULL or data
 * NULL: t's own), borrowed where it lies in a file mapping ws keeps
 * (raw->mapped) and is aligned for the dtype, else copied. *in_file: the
 * tensor's bytes when they lie in a file mapping (in place or external
 * data; the weight source gives their pages back once a model holds its own
 * copy), else NULL. A tensor of more than OX_KNOWN_MAX elements whose
 * file bytes are not aligned comes back as a shape without data (in_file
 * set): it can only become a weight, which rt_wsrc_add_mapped copies at
 * each bind. */
kiln_tensor *ox_tensor_decode_in(const Onnx__TensorProto *t, const char *dir, rt_wsrc *ws,
                                 const struct ox_raw *raw, const void **in_file,
                                 const char *what, kiln_status *st);
/* External data of t: a pointer to nbytes bytes (mapped and kept by ws). */
const void *ox_external_data(const Onnx__TensorProto *t, const char *dir, rt_wsrc *ws,
                             size_t nbytes, const char *what, kiln_status *st);

/* ---- initializers read in place (wire.c) ---- */
/* raw_data of at least this many bytes is read where it lies in the file
 * (protobuf-c would copy it); smaller ones stay in the proto. */
#define OX_IN_PLACE_MIN 256
typedef struct ox_raw {
  const uint8_t *data; /* inside the model's bytes, or NULL */
  size_t len;
  bool mapped;         /* the bytes are a file mapping the weight source keeps */
} ox_raw;
typedef struct ox_split {
  uint8_t *rest;       /* the model without the raw_data taken out (malloc'd) */
  size_t rest_len;
  ox_raw *raw;         /* per initializer of the model's graph, in order */
  size_t nraw;
} ox_split;
/* Split the model bytes buf: 1 with out filled (free with ox_split_free),
 * 0 when the layout is left to protobuf-c (out empty), -1 with st filled
 * (what: the file, in messages) when the bytes end inside an initializer. */
int ox_wire_split(const void *buf, size_t len, size_t min_bytes, ox_split *out,
                  const char *what, kiln_status *st);
void ox_split_free(ox_split *s); /* NULL ok */

/* ---- errors (errors.c) ---- */
/* Record node n as unsupported with a reason (printf-style); returns 1. */
int ox_unsupported(ox *x, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* All recorded unsupported nodes in one KILN_ERR_UNSUPPORTED status; -1. */
int ox_report_unsupported(ox *x);
void ox_unsup_free(ox *x);
/* A hard error at the current node; returns -1. */
int ox_fail(ox *x, kiln_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "node 'name' (OpType)" for messages */
const char *ox_node_label(const Onnx__NodeProto *n, char *buf, size_t cap);

/* ---- the driver (import.c), shared with subgraphs ---- */
int ox_add_initializers(ox *x, const Onnx__GraphProto *gp);
int ox_import_node(ox *x, const Onnx__NodeProto *n); /* 0 or -1 (unsupported ones recorded) */
void ox_free(ox *x); /* the value table and the unsupported list, not x->g */
/* Move from's unsupported nodes to the end of to's list. */
void ox_unsup_move(ox *to, ox *from);

/* ---- subgraphs (subgraph.c): the bodies of If, Loop and Scan ----
 * A subgraph becomes a region: a kiln graph of its own (regions are
 * isolated), imported by a child importer that shares the parent's weight
 * source, status and symbol counter (so a fresh symbol's name is unique in
 * the whole import, and a region dim named like an outer symbol is it).
 * The names a subgraph reads from enclosing scopes (its free names) become
 * region inputs after the ones the caller declares, and operands of the
 * control node; free names whose data is known at import (all elements
 * constant) are copied in as known data instead, so shape computations
 * inside still fold. Region input dims that are plain symbols keep their
 * names, so result dims can be mapped back. */
typedef struct ox_names {
  int n, cap;
  const char **v; /* borrowed from the model proto */
} ox_names;
/* Add the names gps[0..ngps) read but do not define (nested subgraphs
 * included) to out, each once, in first-use order. 0 or -1. */
int ox_free_names(ox *x, const Onnx__GraphProto *const *gps, int ngps, ox_names *out);
void ox_names_free(ox_names *names);

typedef struct ox_sub {
  ox x;       /* the region's importer; x.g is the region graph */
  ox *parent;
} ox_sub;
/* Open a region of parent named name (a fresh graph). 0 or -1. */
int ox_sub_open(ox *parent, ox_sub *s, const char *name);
/* A region input with t's dtype and rank and its dims as the region sees
 * them (t a parent type; where fresh[d], dim d is a fresh symbol), bound to
 * ONNX name onnx_name when not NULL. NULL with st filled. */
kiln_value *ox_sub_input(ox_sub *s, const char *onnx_name, const ir_type *t, const bool *fresh);
/* The free names as region inputs or known data; caps[*ncap] gets the
 * parent values passed in (the control node's operands), inner[*ncap] the
 * region inputs they become, in input order (each may be NULL; room for
 * names->n). 0, -1 or 1 (a name made by an unsupported node). */
int ox_sub_captures(ox_sub *s, const ox_names *names, kiln_value **caps, kiln_value **inner,
                    int *ncap);
/* Import gp's initializers and nodes. 0, -1, or 1 when nodes inside are
 * unsupported (they go to the parent's list when the region closes). */
int ox_sub_body(ox_sub *s, const Onnx__GraphProto *gp);
/* Output i of gp as a region value; NULL with *rc -1 or 1. */
kiln_value *ox_sub_output(ox_sub *s, const Onnx__GraphProto *gp, size_t i, int *rc);
/* Region dim d in the parent's terms (constants, and symbols the parent
 * has by that name), or NULL when it means nothing outside. */
const ir_dim *ox_sub_dim_out(ox_sub *s, const ir_dim *d);
/* Free the region (its graph included: kiln_graph_add_region_op copies
 * it), moving its unsupported nodes to the parent. NULL-safe. */
void ox_sub_close(ox_sub *s);

/* ---- ops (ops_*.c) ----
 * An op's importer reads in[nin] (NULL for an absent optional input) and
 * fills out[nout] (ox_val objects already created). Returns 0, -1 (hard
 * error, st filled) or 1 (unsupported: recorded with ox_unsupported). */
typedef int (*ox_op_fn)(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                        int nout);
/* The importer of op_type in domain (NULL, "" or "ai.onnx": the default
 * one) (ops_table.c); NULL when unknown. */
ox_op_fn ox_op_lookup(const char *domain, const char *op_type);

#define OX_OPS_ELEMENTWISE(X)                                                                     \
  X(Add) X(Sub) X(Mul) X(Div) X(Pow) X(Mod) X(Neg) X(Abs) X(Exp) X(Log) X(Sqrt) X(Tanh)             \
  X(Sigmoid) X(Relu) X(Erf) X(Sin) X(Cos) X(Floor) X(Ceil) X(Round) X(Reciprocal) X(Sign)           \
  X(IsNaN) X(IsInf) X(Not) X(And) X(Or) X(Xor) X(Equal) X(Greater) X(Less) X(GreaterOrEqual)        \
  X(LessOrEqual) X(Where) X(Max) X(Min) X(Sum) X(Mean) X(Clip) X(LeakyRelu) X(Elu) X(Selu)          \
  X(Gelu) X(Celu) X(HardSigmoid) X(HardSwish) X(Softplus) X(Softsign) X(ThresholdedRelu) X(PRelu)           \
  X(Mish) X(Shrink) X(Cast) X(CastLike) X(Identity) X(BitShift)
#define OX_OPS_NN(X)                                                                              \
  X(MatMul) X(Gemm) X(Softmax) X(LogSoftmax) X(LayerNormalization) X(ReduceSum) X(ReduceMean)       \
  X(ReduceMax) X(ReduceMin) X(ReduceSumSquare) X(ReduceL1) X(ReduceL2) X(ReduceLogSum)              \
  X(ReduceLogSumExp) X(ArgMax) X(ArgMin) X(Hardmax) X(Dropout)
#define OX_OPS_SHAPE(X)                                                                           \
  X(Reshape) X(Transpose) X(Concat) X(Split) X(Slice) X(Gather) X(Squeeze) X(Unsqueeze)             \
  X(Flatten) X(Expand) X(Tile)
#define OX_OPS_FOLD(X) X(Constant) X(Shape) X(Size) X(ConstantOfShape) X(Range) X(ReduceProd)
/* indexing and masks (ops_index.c) */
#define OX_OPS_INDEX(X)                                                                           \
  X(GatherElements) X(GatherND) X(ScatterElements) X(Scatter) X(ScatterND) X(CumSum) X(Trilu)    \
  X(NonZero) X(Compress) X(ReverseSequence)
#define OX_OPS_VISION(X)                                                                          \
  X(Pad) X(MaxPool) X(AveragePool) X(Conv) X(ConvInteger) X(ConvTranspose) X(GlobalAveragePool)  \
  X(GlobalMaxPool) X(MaxUnpool) X(QLinearConv)
/* over the channel axis (ops_channel.c) */
#define OX_OPS_CHANNEL(X)                                                                         \
  X(BatchNormalization) X(InstanceNormalization) X(DepthToSpace) X(SpaceToDepth)
/* positions compared (ops_onehot.c) */
#define OX_OPS_ONEHOT(X) X(OneHot) X(EyeLike)
/* Einsum as sums, permutes and one matmul (ops_einsum.c) */
#define OX_OPS_EINSUM(X) X(Einsum)
/* recurrent cells unrolled over a known sequence length (ops_rnn.c) */
#define OX_OPS_RNN(X) X(RNN) X(GRU) X(LSTM)
/* hyperbolic and (inverse) trigonometric functions (ops_hyperbolic.c) */
#define OX_OPS_HYPERBOLIC(X)                                                                      \
  X(Tan) X(Sinh) X(Cosh) X(Asinh) X(Acosh) X(Atanh) X(Asin) X(Acos) X(Atan)
/* training losses (ops_loss.c) */
#define OX_OPS_LOSS(X) X(NegativeLogLikelihoodLoss) X(SoftmaxCrossEntropyLoss)
/* sorting and selection (ops_sort.c) */
#define OX_OPS_SORT(X) X(TopK)
/* resizing (ops_resize.c) */
#define OX_OPS_RESIZE(X) X(Resize) X(Upsample)
/* regions of interest and detection (ops_roi.c) */
#define OX_OPS_ROI(X) X(RoiAlign) X(NonMaxSuppression)
/* random numbers (ops_random.c) */
#define OX_OPS_RANDOM(X) X(RandomUniform) X(RandomNormal) X(RandomUniformLike) X(RandomNormalLike)

/* n-gram counts (ops_tfidf.c) */
#define OX_OPS_TFIDF(X) X(TfIdfVectorizer)
/* distinct elements (ops_unique.c) */
#define OX_OPS_UNIQUE(X) X(Unique)
/* sampling an image at grid points (ops_gridsample.c) */
#define OX_OPS_GRIDSAMPLE(X) X(GridSample)
/* normalizations (ops_normalize.c) */
#define OX_OPS_NORMALIZE(X) X(MeanVarianceNormalization) X(LRN)
/* window functions (ops_window.c) */
/* determinants by cofactor expansion (ops_det.c), DFT / STFT by DFT matrices (ops_dft.c),
 * mel filters (ops_mel.c) */
#define OX_OPS_LINALG(X) X(Det) X(DFT) X(STFT) X(MelWeightMatrix)
#define OX_OPS_WINDOW(X) X(HannWindow) X(HammingWindow) X(BlackmanWindow)
/* control flow as mo.if / mo.while (ops_control.c, ops_scan.c) */
#define OX_OPS_CONTROL(X) X(If) X(Loop) X(Scan)
/* integer-quantized ops (ops_quant.c) */
#define OX_OPS_QUANT(X)                                                                           \
  X(MatMulInteger) X(QuantizeLinear) X(DequantizeLinear) X(DynamicQuantizeLinear) X(QLinearMatMul)
/* optimizers of domain ai.onnx.preview.training (ops_training.c) */
#define OX_OPS_TRAINING(X) X(Adagrad) X(Adam) X(Momentum)
#define OX_DECLARE(name)                                                                          \
  int ox_op_##name(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out, int nout);
OX_OPS_ELEMENTWISE(OX_DECLARE)
OX_OPS_NN(OX_DECLARE)
OX_OPS_SHAPE(OX_DECLARE)
OX_OPS_FOLD(OX_DECLARE)
OX_OPS_INDEX(OX_DECLARE)
OX_OPS_VISION(OX_DECLARE)
OX_OPS_CHANNEL(OX_DECLARE)
OX_OPS_LOSS(OX_DECLARE)
OX_OPS_HYPERBOLIC(OX_DECLARE)
OX_OPS_RNN(OX_DECLARE)
OX_OPS_EINSUM(OX_DECLARE)
OX_OPS_ONEHOT(OX_DECLARE)
OX_OPS_SORT(OX_DECLARE)
OX_OPS_RESIZE(OX_DECLARE)
OX_OPS_ROI(OX_DECLARE)
OX_OPS_RANDOM(OX_DECLARE)
OX_OPS_QUANT(OX_DECLARE)
OX_OPS_CONTROL(OX_DECLARE)
OX_OPS_WINDOW(OX_DECLARE)
OX_OPS_LINALG(OX_DECLARE)
OX_OPS_NORMALIZE(OX_DECLARE)
OX_OPS_GRIDSAMPLE(OX_DECLARE)
OX_OPS_UNIQUE(OX_DECLARE)
OX_OPS_TFIDF(OX_DECLARE)
OX_OPS_TRAINING(OX_DECLARE)
#undef OX_DECLARE

/* Slice with symbolic starts / ends (slice_dyn.c): does in[1] or in[2]
 * hold a symbolic dim; the slice as gathers (0, -1 or 1). */
bool ox_slice_is_dynamic(const ox_val *const *in, int nin);
int ox_slice_dynamic(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out);
/* mo.nonzero of a: [n, rank] si64 with n a fresh symbol (set from data). */
kiln_value *ox_nonzero_rows(ox *x, kiln_value *a);
/* 0, 1, ..., len - 1 as a rank-1 si64 value (len may be symbolic). */
kiln_value *ox_iota(ox *x, const ir_dim *len);
kiln_value *ox_iota_reversed(ox *x, const ir_dim *len); /* len - 1, ..., 0 */
/* ox_iota(len) shaped [1, ..., len, ..., 1] (len at axis) for a rank-`rank` value. */
kiln_value *ox_iota_along(ox *x, const ir_dim *len, int axis, int rank);

/* Ops whose axes, sizes or counts are run-time data (data_axes.c; the
 * data input must satisfy ox_run_time_data). Each returns 0, -1 or 1. */
int ox_squeeze_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *axes, ox_val *out);
int ox_unsqueeze_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *axes,
                      ox_val *out);
/* The reduction `op` of a along the axes the data names (*res; keepdims
 * as keep, noop_with_empty_axes as noop). */
int ox_reduce_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, const char *op, ox_val *axes,
                   bool keep, bool noop, kiln_value **res);
int ox_split_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, int axis, ox_val *sizes,
                  ox_val **out, int nout);
int ox_cumsum_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *axis_v, bool ex,
                   bool rev, ox_val *out);
/* Pad by run-time pads (pad_data.c): cval the run-time constant_value or
 * NULL (then `value`), axes[na] known. */
int ox_pad_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, ox_val *pads, ox_val *cval,
                double value, const int64_t *axes, int na, const char *mode, ox_val *out);
int ox_topk_data(ox *x, const Onnx__NodeProto *n, kiln_value *a, int axis, bool largest,
                 ox_val *k_v, ox_val **out, int nout);

/* A Reduce* node as kiln's reduction `op` along each axis (ops_nn.c); axes
 * are an input from opset axes_input_opset on, an attribute before. */
int ox_reduce_plain(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val **out,
                    const char *op, int axes_input_opset);

/* Fold an integer elementwise node over known inputs (ops_fold.c): 0 done,
 * 2 not foldable (build it), -1 error. */
int ox_fold_elementwise(ox *x, const Onnx__NodeProto *n, ox_val **in, int nin, ox_val *out);

#endif
