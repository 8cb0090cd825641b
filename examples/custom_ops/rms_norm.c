/* rms_norm.c - a custom CPU kernel for kiln (kiln/kernel.h): RMS
 * normalization over the last axis, y = x / sqrt(mean(x^2) + epsilon) * gamma,
 * for f32. Used by rms_norm.mlir:
 *   kiln run examples/custom_ops/rms_norm.mlir --kernels examples/custom_ops/rms_norm.c \
 *            --random-inputs --dim rows=4
 * Operands: x [..., n], gamma [n]; result: y, x's shape. Parameter: epsilon
 * (float, default 1e-6). Returns 1 (an error kiln reports) for other dtypes. */
#include <math.h>

#include <kiln/kernel.h>

KILN_KERNEL(rms_norm, 2, 1)
int32_t rms_norm(const kiln_kernel_args *args) {
  const kiln_kernel_tensor *x = &args->inputs[0], *gamma = &args->inputs[1];
  const kiln_kernel_tensor *y = &args->outputs[0];
  if (x->dtype != KILN_KERNEL_F32 || gamma->dtype != KILN_KERNEL_F32 || x->rank < 1) return 1;
  int64_t n = x->dims[x->rank - 1];
  if (n == 0) return 0;
  int64_t rows = kiln_kernel_numel(x) / n;
  float eps = (float)kiln_param_float(args, "epsilon", 1e-6);
  const float *xp = x->data, *gp = gamma->data;
  float *yp = y->data;
  for (int64_t r = 0; r < rows; r++, xp += n, yp += n) {
    float ss = 0.0f;
    for (int64_t i = 0; i < n; i++) ss += xp[i] * xp[i];
    float scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int64_t i = 0; i < n; i++) yp[i] = xp[i] * scale * gp[i];
  }
  return 0;
}
