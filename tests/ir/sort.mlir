// mo.top_k / mo.bottom_k (two results: values, si64 indices) and mo.argsort,
// defaults left out and given.
mo.graph @sort<n>(%x: !mo.tensor<[n, 9], f32>, %i: !mo.tensor<[n, 9], si64>)
    -> (!mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>, !mo.tensor<[2, 9], si64>,
        !mo.tensor<[n, 9], si64>, !mo.tensor<[n, 9], si64>) {
  %v, %vi = mo.top_k(%x) {k = 3} : (!mo.tensor<[n, 9], f32>) -> (!mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>)
  %b:2 = mo.bottom_k(%i) {axis = 0, k = 2} : (!mo.tensor<[n, 9], si64>) -> (!mo.tensor<[2, 9], si64>, !mo.tensor<[2, 9], si64>)
  %a = mo.argsort(%x) : (!mo.tensor<[n, 9], f32>) -> !mo.tensor<[n, 9], si64>
  %d = mo.argsort(%i) {ascending = false, axis = 1} : (!mo.tensor<[n, 9], si64>) -> !mo.tensor<[n, 9], si64>
  mo.output %v, %vi, %b#1, %a, %d : !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>,
      !mo.tensor<[2, 9], si64>, !mo.tensor<[n, 9], si64>, !mo.tensor<[n, 9], si64>
}
// CHECK-PRINT:
// mo.graph @sort<n>(%x: !mo.tensor<[n, 9], f32>, %i: !mo.tensor<[n, 9], si64>) -> (!mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>, !mo.tensor<[2, 9], si64>, !mo.tensor<[n, 9], si64>, !mo.tensor<[n, 9], si64>) {
//   %v, %vi = mo.top_k(%x) {k = 3} : (!mo.tensor<[n, 9], f32>) -> (!mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>)
//   %b#0, %b#1 = mo.bottom_k(%i) {axis = 0, k = 2} : (!mo.tensor<[n, 9], si64>) -> (!mo.tensor<[2, 9], si64>, !mo.tensor<[2, 9], si64>)
//   %a = mo.argsort(%x) : (!mo.tensor<[n, 9], f32>) -> !mo.tensor<[n, 9], si64>
//   %d = mo.argsort(%i) {ascending = false, axis = 1} : !mo.tensor<[n, 9], si64>
//   mo.output %v, %vi, %b#1, %a, %d : !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>, !mo.tensor<[2, 9], si64>, !mo.tensor<[n, 9], si64>, !mo.tensor<[n, 9], si64>
// }
