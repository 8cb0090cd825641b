/* swish_beta.c - an elementwise custom kernel for kiln (kiln/kernel.h):
 * swish with a per-channel beta, y = x * sigmoid(beta * x), for f32. A pure
 * scalar function: kiln calls it per element (operands broadcast) and fuses
 * it with the elementwise ops around it into one kernel, on the CPU and on
 * every SIMT target. Used by swish_beta.mlir:
 *   kiln run examples/custom_ops/swish_beta.mlir --kernels examples/custom_ops/swish_beta.c \
 *            --random-inputs --dim rows=4 --stats */
#include <math.h>

#include <kiln/kernel.h>

KILN_ELEMENTWISE_KERNEL(swish_beta, 2)
float swish_beta(float x, float beta) {
  return x / (1.0f + expf(-beta * x));
}
