// mo.resize (MAX's default bilinear, and a mode given), mo.resize_nearest,
// mo.resize_linear and mo.resize_bicubic: the result type is the target,
// defaults left out and given.
mo.graph @resize<n, h>(%x: !mo.tensor<[n, 3, h, 5], f32>, %i: !mo.tensor<[4, 6], si32>)
    -> (!mo.tensor<[n, 3, h + 2, 10], f32>, !mo.tensor<[n, 3, 2, 2], f32>, !mo.tensor<[9, 12], si32>,
        !mo.tensor<[n, 3, 7, 7], f32>, !mo.tensor<[n, 3, 1, 9], f32>) {
  %a = mo.resize(%x) : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, h + 2, 10], f32>
  %b = mo.resize(%x) {mode = "bicubic", cubic_coeff_a = -0.5} : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, 2, 2], f32>
  %c = mo.resize_nearest(%i) {coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scale_h = 2.25} : (!mo.tensor<[4, 6], si32>) -> !mo.tensor<[9, 12], si32>
  %d = mo.resize_linear(%x) {coordinate_transformation_mode = "align_corners"} : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, 7, 7], f32>
  %e = mo.resize_bicubic(%x) {exclude_outside = true} : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, 1, 9], f32>
  mo.output %a, %b, %c, %d, %e : !mo.tensor<[n, 3, h + 2, 10], f32>, !mo.tensor<[n, 3, 2, 2], f32>,
      !mo.tensor<[9, 12], si32>, !mo.tensor<[n, 3, 7, 7], f32>, !mo.tensor<[n, 3, 1, 9], f32>
}
// CHECK-PRINT:
// mo.graph @resize<n, h>(%x: !mo.tensor<[n, 3, h, 5], f32>, %i: !mo.tensor<[4, 6], si32>) -> (!mo.tensor<[n, 3, h + 2, 10], f32>, !mo.tensor<[n, 3, 2, 2], f32>, !mo.tensor<[9, 12], si32>, !mo.tensor<[n, 3, 7, 7], f32>, !mo.tensor<[n, 3, 1, 9], f32>) {
//   %a = mo.resize(%x) : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, h + 2, 10], f32>
//   %b = mo.resize(%x) {cubic_coeff_a = -0.5, mode = "bicubic"} : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, 2, 2], f32>
//   %c = mo.resize_nearest(%i) {coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scale_h = 2.25} : (!mo.tensor<[4, 6], si32>) -> !mo.tensor<[9, 12], si32>
//   %d = mo.resize_linear(%x) {coordinate_transformation_mode = "align_corners"} : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, 7, 7], f32>
//   %e = mo.resize_bicubic(%x) {exclude_outside = true} : (!mo.tensor<[n, 3, h, 5], f32>) -> !mo.tensor<[n, 3, 1, 9], f32>
//   mo.output %a, %b, %c, %d, %e : !mo.tensor<[n, 3, h + 2, 10], f32>, !mo.tensor<[n, 3, 2, 2], f32>, !mo.tensor<[9, 12], si32>, !mo.tensor<[n, 3, 7, 7], f32>, !mo.tensor<[n, 3, 1, 9], f32>
// }
