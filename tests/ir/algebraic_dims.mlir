// Algebraic dims are kept in canonical form: `2*m+1` and `(1 + m*2)` are the
// same dim; products and sums are printed in one order.
mo.graph @algebraic<n, m>(%x: !mo.tensor<[n, 2*m+1], f32>, %y: !mo.tensor<[n, 1 + m * 2], f32>, %z: !mo.tensor<[8 * n], f32>) -> (!mo.tensor<[n * (2 * m + 1)], f32>, !mo.tensor<[n, 4 * m + 2], f32>, !mo.tensor<[n, 8], f32>) {
  %f = mo.reshape(%x) : (!mo.tensor<[n, 2 * m + 1], f32>) -> !mo.tensor<[(m * 2 + 1) * n], f32>
  %c = mo.concat(%x, %y) {axis = 1} : (!mo.tensor<[n, 2 * m + 1], f32>, !mo.tensor<[n, 2 * m + 1], f32>) -> !mo.tensor<[n, 4 * m + 2], f32>
  %r = mo.reshape(%z) : (!mo.tensor<[8 * n], f32>) -> !mo.tensor<[8 * n floordiv 8, 8], f32>
  mo.output %f, %c, %r : !mo.tensor<[n + 2 * m * n], f32>, !mo.tensor<[n, 2 + 4 * m], f32>, !mo.tensor<[n, 8], f32>
}
// CHECK-PRINT:
// mo.graph @algebraic<n, m>(%x: !mo.tensor<[n, 2 * m + 1], f32>, %y: !mo.tensor<[n, 2 * m + 1], f32>, %z: !mo.tensor<[8 * n], f32>) -> (!mo.tensor<[n + 2 * n * m], f32>, !mo.tensor<[n, 4 * m + 2], f32>, !mo.tensor<[n, 8], f32>) {
//   %f = mo.reshape(%x) : (!mo.tensor<[n, 2 * m + 1], f32>) -> !mo.tensor<[n + 2 * n * m], f32>
//   %c = mo.concat(%x, %y) {axis = 1} : (!mo.tensor<[n, 2 * m + 1], f32>, !mo.tensor<[n, 2 * m + 1], f32>) -> !mo.tensor<[n, 4 * m + 2], f32>
//   %r = mo.reshape(%z) : (!mo.tensor<[8 * n], f32>) -> !mo.tensor<[n, 8], f32>
//   mo.output %f, %c, %r : !mo.tensor<[n + 2 * n * m], f32>, !mo.tensor<[n, 4 * m + 2], f32>, !mo.tensor<[n, 8], f32>
// }
