/* interp_impl.h - internal to the reference interpreter (interp.c,
 * interp_scalar.c): the scalar semantics every op is built from, and the
 * message helpers it shares with shape.c (shape.h). Not part of any API. */
#ifndef KILN_IR_INTERP_IMPL_H
#define KILN_IR_INTERP_IMPL_H

#include "interp.h"

/* Write a formatted message into msg (when msg && msglen); returns -1. */
int ir_ref_fail(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *ir_ref_dim_text(const ir_dim *d, char *buf, size_t cap);
const char *ir_ref_input_name(const ir_graph *g, int i); /* argument name or SSA name */

/* gelu's `approximate` attribute */
enum { IR_REF_GELU_NONE, IR_REF_GELU_TANH, IR_REF_GELU_QUICK };

/* Element access and scalar semantics (interp_scalar.c). */
char *ir_ref_elem(const ir_tensor *t, int64_t i);
double ir_ref_ld_f(const ir_tensor *t, int64_t i);
void ir_ref_st_f(const ir_tensor *t, int64_t i, double v);
int64_t ir_ref_ld_i(const ir_tensor *t, int64_t i);
void ir_ref_st_i(const ir_tensor *t, int64_t i, int64_t v);
int64_t ir_ref_wrap_i(ir_dtype dt, uint64_t v);
int64_t ir_ref_int_min(ir_dtype dt);
int64_t ir_ref_int_max(ir_dtype dt);
bool ir_ref_is_fc(ir_dtype dt);
bool ir_ref_is_ic(ir_dtype dt);
/* The scalar meaning of each elementwise op: true with *y set, false when
 * the interpreter has none for op (run_elementwise reports it with the op's
 * name). ir_ref_logic takes logical_not (b unused) and the binary logicals. */
bool ir_ref_un_f32(ir_op op, int gelu, float x, float *y);
bool ir_ref_un_f64(ir_op op, int gelu, double x, double *y);
bool ir_ref_un_int(ir_op op, int64_t x, int64_t *y);
bool ir_ref_pred(ir_op op, double x, bool *y);
bool ir_ref_logic(ir_op op, bool a, bool b, bool *y);
double ir_ref_max_f(double a, double b);
double ir_ref_min_f(double a, double b);
bool ir_ref_bin_f32(ir_op op, float a, float b, float *y);
bool ir_ref_bin_f64(ir_op op, double a, double b, double *y);
enum { IR_REF_OK, IR_REF_NO_MEANING, IR_REF_DIV_ZERO };
/* IR_REF_OK, IR_REF_NO_MEANING, or IR_REF_DIV_ZERO (integer mod by zero). */
int ir_ref_bin_int(ir_op op, int64_t a, int64_t b, int64_t *y);
bool ir_ref_cmp_f(ir_op op, double a, double b, bool *y);
bool ir_ref_cmp_i(ir_op op, int64_t a, int64_t b, bool *y);
void ir_ref_cast_elem(const ir_tensor *x, int64_t xi, const ir_tensor *y, int64_t yi);

/* mo.dequantize, mo.qmatmul (interp_quant.c), as the routines below. */
int ir_ref_dequantize(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg,
                      size_t msglen);
int ir_ref_qmatmul(const ir_node *n, const ir_tensor *a, const ir_tensor *w, ir_tensor *y,
                   char *msg, size_t msglen);

/* Routines of op classes (interp_ops.c): 0, or -1 with a message (without
 * the op's name, which the caller adds) in msg. */
int ir_ref_scan(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
int ir_ref_band_part(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg,
                     size_t msglen);
/* The Fourier class (interp_fft.c): mo.irfft. */
int ir_ref_fft(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
/* The divisor of an irfft normalization ("backward": n, "ortho": sqrt(n),
 * "forward": 1). */
double ir_ref_fft_scale(const char *norm, int64_t n);
/* The sorting class (interp_sort.c): vals is NULL for argsort, idx si64. */
int ir_ref_sort(const ir_node *n, const ir_tensor *x, ir_tensor *vals, ir_tensor *idx, char *msg,
                size_t msglen);
/* Routines of the indexing classes (interp_index.c), as above. */
int ir_ref_gather_index(const ir_node *n, const ir_tensor *x, const ir_tensor *it, ir_tensor *y,
                        char *msg, size_t msglen);
int ir_ref_scatter(const ir_node *n, const ir_tensor *x, const ir_tensor *u, const ir_tensor *it,
                   ir_tensor *y, char *msg, size_t msglen);
int ir_ref_tile(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
int ir_ref_range(const ir_tensor *start, const ir_tensor *stop, const ir_tensor *step,
                 ir_tensor *y, char *msg, size_t msglen);
/* numpy.arange's length for integers (stop - start wrapping in 64 bits);
 * -1 for step 0. */
int64_t ir_ref_range_len_i(int64_t start, int64_t stop, int64_t step);
/* One axis of slice_tensor (interp.c): numpy's rules (ops.def: INT64_MAX
 * stop = to the end, INT64_MIN start = from the beginning, whatever the
 * step's sign): the length, and the first index in *first. */
int64_t ir_ref_slice_axis(int64_t d, int64_t start, int64_t stop, int64_t step, int64_t *first);
/* slice_tensor's (start, stop, step) per axis of a rank-`rank` operand from
 * its data operands p = (start, stop, step, axes or NULL), each 1-D of k
 * elements (a one-element one fills k): v[a] = entry j's values where
 * axes[j] (negative from the end; without axes, j) is a, else the whole
 * axis. 0, or -1 with msg (an axis out of range or given twice, a step 0). */
int ir_ref_slice_data(const ir_tensor *const p[4], int rank, int64_t (*v)[3], char *msg,
                      size_t msglen);
/* mo.nonzero: writes the indices of x's nonzero elements as rows of y
 * ([bound, rank], room for every element) and returns their count. */
int64_t ir_ref_nonzero(const ir_tensor *x, ir_tensor *y);
/* mo.non_maximum_suppression (interp_nms.c): writes the selected rows
 * (batch, class, box) into y ([bound, 3]) and returns their count
 * (score_min may be NULL). ir_ref_nms_overlaps: boxes a and b (ymin, xmin,
 * ymax, xmax) overlap by an IoU above threshold (ops.def's rule). */
int64_t ir_ref_nms(const ir_node *n, const ir_tensor *boxes, const ir_tensor *scores,
                   const ir_tensor *limit, const ir_tensor *iou, const ir_tensor *score_min,
                   ir_tensor *y);
bool ir_ref_nms_overlaps(const double a[4], const double b[4], double threshold);
/* Vision (interp_vision.c): mo.pad; mo.max_pool2d / mo.avg_pool2d; mo.conv2d
 * (bias may be NULL). */
int ir_ref_pad(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
int ir_ref_pool(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
int ir_ref_conv(const ir_node *n, const ir_tensor *x, const ir_tensor *f, const ir_tensor *bias,
                ir_tensor *y, char *msg, size_t msglen);
/* Resizing (interp_resize.c): mo.resize, resize_nearest, resize_linear,
 * resize_bicubic. */
/* scales: the run-time scales operand (one per axis), or NULL */
int ir_ref_resize(const ir_node *n, const ir_tensor *x, const ir_tensor *scales, ir_tensor *y,
                  char *msg, size_t msglen);
/* The image-patch classes (interp_patch.c): mo.fold, mo.roi_align. */
int ir_ref_fold(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
int ir_ref_roi_align(const ir_node *n, const ir_tensor *x, const ir_tensor *rois, ir_tensor *y,
                     char *msg, size_t msglen);
/* The random-number class (interp_random.c): the generator's definition. */
int ir_ref_random(const ir_node *n, ir_tensor *y, char *msg, size_t msglen);
/* mo.print (interp_print.c): copies x into y and writes its line to stderr. */
int ir_ref_print(const ir_node *n, const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
/* mo.masked_scatter, mo.shape_to_tensor (interp_masked.c). */
int ir_ref_masked_scatter(const ir_node *n, const ir_tensor *x, const ir_tensor *m,
                          const ir_tensor *u, ir_tensor *y, char *msg, size_t msglen);
int ir_ref_shape_to_tensor(const ir_tensor *x, ir_tensor *y, char *msg, size_t msglen);
/* mo.repeat_interleave (interp_repeat.c); reps: the repeats operand or NULL. */
int ir_ref_repeat_interleave(const ir_node *n, const ir_tensor *x, const ir_tensor *reps,
                             ir_tensor *y, char *msg, size_t msglen);

/* The buffer ops (interp_buffer.c): in[] and out[] are the node's operand
 * and result tensors; a store writes through its buffer operand's data. */
int ir_ref_buffer(const ir_node *n, const ir_tensor *const *in, ir_tensor *const *out, char *msg,
                  size_t msglen);

#endif
