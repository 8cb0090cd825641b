// The indexing ops: gather_nd (batch_dims), gather_elements, scatter and
// scatter_nd with a combination, tile, range (its length declared), and a
// matmul of a vector by a matrix (the added dim dropped).
mo.graph @indexing<n>(%x: !mo.tensor<[n, 5], f32>, %i: !mo.tensor<[n, 3], si64>,
                      %u: !mo.tensor<[n, 3], f32>, %j: !mo.tensor<[n, 2, 1], si32>,
                      %v: !mo.tensor<[5], f32>, %a: !mo.tensor<[], si64>, %b: !mo.tensor<[], si64>)
    -> (!mo.tensor<[n, 2], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 5], f32>,
        !mo.tensor<[n, 5], f32>, !mo.tensor<[2 * n, 15], f32>, !mo.tensor<[4], si64>,
        !mo.tensor<[n], f32>) {
  %g = mo.gather_nd(%x, %j) {batch_dims = 1} : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 2, 1], si32>) -> !mo.tensor<[n, 2], f32>
  %e = mo.gather_elements(%x, %i) {axis = 1} : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 3], si64>) -> !mo.tensor<[n, 3], f32>
  %s = mo.scatter_add(%x, %u, %i) {axis = -1} : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>) -> !mo.tensor<[n, 5], f32>
  %k = mo.cast(%j) {dtype = si64} : (!mo.tensor<[n, 2, 1], si32>) -> !mo.tensor<[n, 2, 1], si64>
  %w = mo.gather_nd(%x, %k) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 2, 1], si64>) -> !mo.tensor<[n, 2, 5], f32>
  %t = mo.scatter_nd_max(%s, %w, %k) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 2, 5], f32>, !mo.tensor<[n, 2, 1], si64>) -> !mo.tensor<[n, 5], f32>
  %r = mo.tile(%x) {repeats = [2, 3]} : (!mo.tensor<[n, 5], f32>) -> !mo.tensor<[2 * n, 15], f32>
  %q = mo.range(%a, %b, %a) : (!mo.tensor<[], si64>, !mo.tensor<[], si64>, !mo.tensor<[], si64>) -> !mo.tensor<[4], si64>
  %m = mo.matmul(%x, %v) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[5], f32>) -> !mo.tensor<[n], f32>
  mo.output %g, %e, %s, %t, %r, %q, %m : !mo.tensor<[n, 2], f32>, !mo.tensor<[n, 3], f32>,
      !mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], f32>, !mo.tensor<[2 * n, 15], f32>,
      !mo.tensor<[4], si64>, !mo.tensor<[n], f32>
}
// CHECK-PRINT:
// mo.graph @indexing<n>(%x: !mo.tensor<[n, 5], f32>, %i: !mo.tensor<[n, 3], si64>, %u: !mo.tensor<[n, 3], f32>, %j: !mo.tensor<[n, 2, 1], si32>, %v: !mo.tensor<[5], f32>, %a: !mo.tensor<[], si64>, %b: !mo.tensor<[], si64>) -> (!mo.tensor<[n, 2], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], f32>, !mo.tensor<[2 * n, 15], f32>, !mo.tensor<[4], si64>, !mo.tensor<[n], f32>) {
//   %g = mo.gather_nd(%x, %j) {batch_dims = 1} : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 2, 1], si32>) -> !mo.tensor<[n, 2], f32>
//   %e = mo.gather_elements(%x, %i) {axis = 1} : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 3], si64>) -> !mo.tensor<[n, 3], f32>
//   %s = mo.scatter_add(%x, %u, %i) {axis = -1} : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 3], si64>) -> !mo.tensor<[n, 5], f32>
//   %k = mo.cast(%j) {dtype = si64} : (!mo.tensor<[n, 2, 1], si32>) -> !mo.tensor<[n, 2, 1], si64>
//   %w = mo.gather_nd(%x, %k) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 2, 1], si64>) -> !mo.tensor<[n, 2, 5], f32>
//   %t = mo.scatter_nd_max(%s, %w, %k) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 2, 5], f32>, !mo.tensor<[n, 2, 1], si64>) -> !mo.tensor<[n, 5], f32>
//   %r = mo.tile(%x) {repeats = [2, 3]} : (!mo.tensor<[n, 5], f32>) -> !mo.tensor<[2 * n, 15], f32>
//   %q = mo.range(%a, %b, %a) : (!mo.tensor<[], si64>, !mo.tensor<[], si64>, !mo.tensor<[], si64>) -> !mo.tensor<[4], si64>
//   %m = mo.matmul(%x, %v) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[5], f32>) -> !mo.tensor<[n], f32>
//   mo.output %g, %e, %s, %t, %r, %q, %m : !mo.tensor<[n, 2], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], f32>, !mo.tensor<[2 * n, 15], f32>, !mo.tensor<[4], si64>, !mo.tensor<[n], f32>
// }
