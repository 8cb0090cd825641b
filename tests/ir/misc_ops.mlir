// mo.fold, mo.roi_align, mo.random.uniform / mo.random.normal (no operands,
// the result type as declared) and mo.print, defaults left out and given.
mo.graph @misc<n>(%c: !mo.tensor<[n, 12, 12], f32>, %x: !mo.tensor<[n, 6, 7, 3], f32>,
    %r: !mo.tensor<[4, 5], f32>) -> (!mo.tensor<[n, 3, 4, 5], f32>, !mo.tensor<[n, 3, 4, 5], f32>,
    !mo.tensor<[4, 2, 3, 3], f32>, !mo.tensor<[4, 1, 1, 3], f32>, !mo.tensor<[n, 3], f32>,
    !mo.tensor<[2, n], f64>) {
  %f = mo.fold(%c) {kernel_size = [2, 2], output_size = [4, 5]} : (!mo.tensor<[n, 12, 12], f32>) -> !mo.tensor<[n, 3, 4, 5], f32>
  %g = mo.fold(%c) {dilation = [1], kernel_size = [2, 2], output_size = [4, 5], padding = [0, 0], stride = [1, 1]} : (!mo.tensor<[n, 12, 12], f32>) -> !mo.tensor<[n, 3, 4, 5], f32>
  %a = mo.roi_align(%x, %r) {output_height = 2, output_width = 3} : (!mo.tensor<[n, 6, 7, 3], f32>, !mo.tensor<[4, 5], f32>) -> !mo.tensor<[4, 2, 3, 3], f32>
  %b = mo.roi_align(%x, %r) {aligned = true, mode = "max", output_height = 1, output_width = 1, sampling_ratio = 2, spatial_scale = 0.5} : (!mo.tensor<[n, 6, 7, 3], f32>, !mo.tensor<[4, 5], f32>) -> !mo.tensor<[4, 1, 1, 3], f32>
  %u = mo.random.uniform() {high = 2.0, low = -1.0, seed = 3} : () -> !mo.tensor<[n, 3], f32>
  %z = mo.random.normal() : () -> !mo.tensor<[2, n], f64>
  %p = mo.print(%u) {label = "u"} : (!mo.tensor<[n, 3], f32>) -> !mo.tensor<[n, 3], f32>
  %q = mo.print(%z) : (!mo.tensor<[2, n], f64>) -> !mo.tensor<[2, n], f64>
  mo.output %f, %g, %a, %b, %p, %q : !mo.tensor<[n, 3, 4, 5], f32>, !mo.tensor<[n, 3, 4, 5], f32>,
      !mo.tensor<[4, 2, 3, 3], f32>, !mo.tensor<[4, 1, 1, 3], f32>, !mo.tensor<[n, 3], f32>,
      !mo.tensor<[2, n], f64>
}
// CHECK-PRINT:
// mo.graph @misc<n>(%c: !mo.tensor<[n, 12, 12], f32>, %x: !mo.tensor<[n, 6, 7, 3], f32>, %r: !mo.tensor<[4, 5], f32>) -> (!mo.tensor<[n, 3, 4, 5], f32>, !mo.tensor<[n, 3, 4, 5], f32>, !mo.tensor<[4, 2, 3, 3], f32>, !mo.tensor<[4, 1, 1, 3], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[2, n], f64>) {
//   %f = mo.fold(%c) {kernel_size = [2, 2], output_size = [4, 5]} : (!mo.tensor<[n, 12, 12], f32>) -> !mo.tensor<[n, 3, 4, 5], f32>
//   %g = mo.fold(%c) {dilation = [1], kernel_size = [2, 2], output_size = [4, 5], padding = [0, 0], stride = [1, 1]} : (!mo.tensor<[n, 12, 12], f32>) -> !mo.tensor<[n, 3, 4, 5], f32>
//   %a = mo.roi_align(%x, %r) {output_height = 2, output_width = 3} : (!mo.tensor<[n, 6, 7, 3], f32>, !mo.tensor<[4, 5], f32>) -> !mo.tensor<[4, 2, 3, 3], f32>
//   %b = mo.roi_align(%x, %r) {aligned = true, mode = "max", output_height = 1, output_width = 1, sampling_ratio = 2, spatial_scale = 0.5} : (!mo.tensor<[n, 6, 7, 3], f32>, !mo.tensor<[4, 5], f32>) -> !mo.tensor<[4, 1, 1, 3], f32>
//   %u = mo.random.uniform {high = 2.0, low = -1.0, seed = 3} : !mo.tensor<[n, 3], f32>
//   %z = mo.random.normal : !mo.tensor<[2, n], f64>
//   %p = mo.print(%u) {label = "u"} : !mo.tensor<[n, 3], f32>
//   %q = mo.print(%z) : !mo.tensor<[2, n], f64>
//   mo.output %f, %g, %a, %b, %p, %q : !mo.tensor<[n, 3, 4, 5], f32>, !mo.tensor<[n, 3, 4, 5], f32>, !mo.tensor<[4, 2, 3, 3], f32>, !mo.tensor<[4, 1, 1, 3], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[2, n], f64>
// }
