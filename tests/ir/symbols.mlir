// Without a <...> list symbols are declared by first use, in that order; the
// printer always prints the list. A declared but unused symbol is kept.
mo.graph @implicit(%x: !mo.tensor<[seq, batch], f32>, %y: !mo.tensor<[seq, batch], f32>) -> (!mo.tensor<[seq, batch], f32>) {
  %s = mo.add(%x, %y) : !mo.tensor<[seq, batch], f32>
  mo.output %s : !mo.tensor<[seq, batch], f32>
}
// CHECK-PRINT:
// mo.graph @implicit<seq, batch>(%x: !mo.tensor<[seq, batch], f32>, %y: !mo.tensor<[seq, batch], f32>) -> (!mo.tensor<[seq, batch], f32>) {
//   %s = mo.add(%x, %y) : !mo.tensor<[seq, batch], f32>
//   mo.output %s : !mo.tensor<[seq, batch], f32>
// }
