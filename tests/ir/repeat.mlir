// mo.repeat_interleave: the attribute repeats along an axis and flattened
// (no axis), a repeats operand from a graph input (the axis dim k is read
// from its data) and from a constant, with out_dim.
mo.graph @repeat<n, k>(%x: !mo.tensor<[n, 4], f32>, %r: !mo.tensor<[n], si64>) -> (
    !mo.tensor<[2 * n, 4], f32>, !mo.tensor<[8 * n], f32>, !mo.tensor<[k, 4], f32>,
    !mo.tensor<[n, 5], f32>) {
  %a = mo.repeat_interleave(%x) {axis = 0, repeats = 2} : !mo.tensor<[2 * n, 4], f32>
  %b = mo.repeat_interleave(%x) {repeats = 2} : !mo.tensor<[8 * n], f32>
  %c = mo.repeat_interleave(%x, %r) {axis = -2, out_dim = "k"} : !mo.tensor<[k, 4], f32>
  %s = mo.constant {value = #M.dense_array<2, 0, 1, 2> : tensor<4xsi32>} : !mo.tensor<[4], si32>
  %d = mo.repeat_interleave(%x, %s) {axis = 1} : !mo.tensor<[n, 5], f32>
  mo.output %a, %b, %c, %d : !mo.tensor<[2 * n, 4], f32>, !mo.tensor<[8 * n], f32>,
      !mo.tensor<[k, 4], f32>, !mo.tensor<[n, 5], f32>
}
// CHECK-PRINT:
// mo.graph @repeat<n, k>(%x: !mo.tensor<[n, 4], f32>, %r: !mo.tensor<[n], si64>) -> (!mo.tensor<[2 * n, 4], f32>, !mo.tensor<[8 * n], f32>, !mo.tensor<[k, 4], f32>, !mo.tensor<[n, 5], f32>) {
//   %a = mo.repeat_interleave(%x) {axis = 0, repeats = 2} : (!mo.tensor<[n, 4], f32>) -> !mo.tensor<[2 * n, 4], f32>
//   %b = mo.repeat_interleave(%x) {repeats = 2} : (!mo.tensor<[n, 4], f32>) -> !mo.tensor<[8 * n], f32>
//   %c = mo.repeat_interleave(%x, %r) {axis = -2, out_dim = "k"} : (!mo.tensor<[n, 4], f32>, !mo.tensor<[n], si64>) -> !mo.tensor<[k, 4], f32>
//   %s = mo.constant {value = #M.dense_array<2, 0, 1, 2> : tensor<4xsi32>} : !mo.tensor<[4], si32>
//   %d = mo.repeat_interleave(%x, %s) {axis = 1} : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], si32>) -> !mo.tensor<[n, 5], f32>
//   mo.output %a, %b, %c, %d : !mo.tensor<[2 * n, 4], f32>, !mo.tensor<[8 * n], f32>, !mo.tensor<[k, 4], f32>, !mo.tensor<[n, 5], f32>
// }
