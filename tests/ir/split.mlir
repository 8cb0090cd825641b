// An op with several results: names listed, or an MLIR result group
// `%p:3`, whose results are named %p#0, %p#1, %p#2.
mo.graph @split(%x: !mo.tensor<[6, 4], f32>) -> (!mo.tensor<[1, 4], f32>, !mo.tensor<[5, 4], f32>, !mo.tensor<[2, 4], f32>) {
  %a, %b = mo.split(%x) {split_sizes = [1, 5]} : (!mo.tensor<[6, 4], f32>) -> (!mo.tensor<[1, 4], f32>, !mo.tensor<[5, 4], f32>)
  %p:3 = mo.split(%x) {axis = 0, split_sizes = [2, 2, 2]} : (!mo.tensor<[6, 4], f32>) -> (!mo.tensor<[2, 4], f32>, !mo.tensor<[2, 4], f32>, !mo.tensor<[2, 4], f32>)
  %s = mo.add(%p#0, %p#2) : !mo.tensor<[2, 4], f32>
  mo.output %a, %b, %s : !mo.tensor<[1, 4], f32>, !mo.tensor<[5, 4], f32>, !mo.tensor<[2, 4], f32>
}
// CHECK-PRINT:
// mo.graph @split(%x: !mo.tensor<[6, 4], f32>) -> (!mo.tensor<[1, 4], f32>, !mo.tensor<[5, 4], f32>, !mo.tensor<[2, 4], f32>) {
//   %a, %b = mo.split(%x) {split_sizes = [1, 5]} : (!mo.tensor<[6, 4], f32>) -> (!mo.tensor<[1, 4], f32>, !mo.tensor<[5, 4], f32>)
//   %p#0, %p#1, %p#2 = mo.split(%x) {axis = 0, split_sizes = [2, 2, 2]} : (!mo.tensor<[6, 4], f32>) -> (!mo.tensor<[2, 4], f32>, !mo.tensor<[2, 4], f32>, !mo.tensor<[2, 4], f32>)
//   %s = mo.add(%p#0, %p#2) : !mo.tensor<[2, 4], f32>
//   mo.output %a, %b, %s : !mo.tensor<[1, 4], f32>, !mo.tensor<[5, 4], f32>, !mo.tensor<[2, 4], f32>
// }
