/* rms_norm_simt.c - the SIMT versions of the example kernels, for simt-emu,
 * CUDA and HIP (kiln/kernel.h: KILN_SIMT_KERNEL, the kiln_simt_* helpers).
 *
 * rms_norm_simt: y = x / sqrt(mean(x^2) + eps) * gamma over the last axis,
 * f32; launched with simt_grid = "rows": each block takes rows block_id,
 * block_id + grid_dim, ...; its threads stride along the row, then sum
 * their partial squares with a tree in shared memory (barriers between the
 * steps).
 * scaled_add: y = x + alpha * z, f32, elementwise (the default grid): a
 * grid-stride loop over the elements. */
#include <math.h>
#include <kiln/kernel.h>

KILN_SIMT_KERNEL(rms_norm_simt, 2, 1)
int32_t rms_norm_simt(const kiln_kernel_args *args) {
  const kiln_kernel_tensor *x = &args->inputs[0], *g = &args->inputs[1];
  if (x->dtype != KILN_KERNEL_F32 || x->rank < 1) return 1;
  int64_t n = x->dims[x->rank - 1], rows = n ? kiln_kernel_numel(x) / n : 0;
  float eps = (float)kiln_param_float(args, "epsilon", 1e-6);
  const float *xp = x->data, *gp = g->data;
  float *yp = args->outputs[0].data;
  float *part = kiln_simt_shared(); /* one float per thread */
  uint32_t t = kiln_simt_thread_id(), nt = kiln_simt_block_dim();
  for (int64_t r = kiln_simt_block_id(); r < rows; r += kiln_simt_grid_dim()) {
    const float *xr = xp + r * n;
    float ss = 0;
    for (int64_t i = t; i < n; i += nt) ss += xr[i] * xr[i];
    part[t] = ss;
    kiln_simt_barrier();
    for (uint32_t s = nt / 2; s > 0; s /= 2) {
      if (t < s) part[t] += part[t + s];
      kiln_simt_barrier();
    }
    float scale = 1.0f / sqrtf(part[0] / (float)n + eps);
    kiln_simt_barrier(); /* everyone has read part[0] before the next row writes it */
    for (int64_t i = t; i < n; i += nt) yp[r * n + i] = xr[i] * scale * gp[i];
  }
  return 0;
}

KILN_SIMT_KERNEL(scaled_add, 2, 1)
int32_t scaled_add(const kiln_kernel_args *args) {
  const kiln_kernel_tensor *x = &args->inputs[0], *z = &args->inputs[1];
  if (x->dtype != KILN_KERNEL_F32 || z->dtype != KILN_KERNEL_F32) return 1;
  float alpha = (float)kiln_param_float(args, "alpha", 1.0);
  const float *xp = x->data, *zp = z->data;
  float *yp = args->outputs[0].data;
  int64_t total = kiln_kernel_numel(x);
  for (int64_t i = kiln_simt_global_id(); i < total; i += kiln_simt_global_size())
    yp[i] = xp[i] + alpha * zp[i];
  return 0;
}
