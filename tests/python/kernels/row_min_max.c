/* row_min_max.c - a custom kernel with two results, for the Python tests:
 * the minimum and the maximum of each row of an f32 [rows, n] input
 * (results [rows]). Returns 1 (an error kiln reports) for other inputs. */
#include <kiln/kernel.h>

KILN_KERNEL(row_min_max, 1, 2)
int32_t row_min_max(const kiln_kernel_args *args) {
  const kiln_kernel_tensor *x = &args->inputs[0];
  if (x->dtype != KILN_KERNEL_F32 || x->rank != 2 || x->dims[1] < 1) return 1;
  int64_t rows = x->dims[0], n = x->dims[1];
  const float *xp = x->data;
  float *lo = args->outputs[0].data, *hi = args->outputs[1].data;
  for (int64_t r = 0; r < rows; r++, xp += n) {
    lo[r] = hi[r] = xp[0];
    for (int64_t i = 1; i < n; i++) {
      lo[r] = xp[i] < lo[r] ? xp[i] : lo[r];
      hi[r] = xp[i] > hi[r] ? xp[i] : hi[r];
    }
  }
  return 0;
}
