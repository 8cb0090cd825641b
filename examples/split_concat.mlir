// An op with several results (split), concat along the same axis, and a
// cast to an integer dtype.
// run: --dim n=3
mo.graph @split_concat<n>(%x: !mo.tensor<[n, 6], f32>) -> (!mo.tensor<[n, 6], f32>, !mo.tensor<[n, 4], si64>) {
  %a, %b = mo.split(%x) {split_sizes = [2, 4], axis = 1} : (!mo.tensor<[n, 6], f32>) -> (!mo.tensor<[n, 2], f32>, !mo.tensor<[n, 4], f32>)
  %y = mo.concat(%b, %a) {axis = 1} : (!mo.tensor<[n, 4], f32>, !mo.tensor<[n, 2], f32>) -> !mo.tensor<[n, 6], f32>
  %s = mo.constant {value = #M.dense_array<10.0> : tensor<f32>} : !mo.tensor<[], f32>
  %bs = mo.mul(%b, %s) : (!mo.tensor<[n, 4], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[n, 4], f32>
  %i = mo.cast(%bs) {dtype = si64} : (!mo.tensor<[n, 4], f32>) -> !mo.tensor<[n, 4], si64>
  mo.output %y, %i : !mo.tensor<[n, 6], f32>, !mo.tensor<[n, 4], si64>
}
