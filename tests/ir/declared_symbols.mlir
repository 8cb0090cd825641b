// A declared symbol list, with a symbol the graph does not use.
mo.graph @declared<batch, unused>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 8], f32>) attributes {result_names = ["out"]} {
  %y = mo.sigmoid(%x) : !mo.tensor<[batch, 8], f32>
  mo.output %y : !mo.tensor<[batch, 8], f32>
}
// CHECK-PRINT:
// mo.graph @declared<batch, unused>(%x: !mo.tensor<[batch, 8], f32>) -> (!mo.tensor<[batch, 8], f32>) attributes {result_names = ["out"]} {
//   %y = mo.sigmoid(%x) : !mo.tensor<[batch, 8], f32>
//   mo.output %y : !mo.tensor<[batch, 8], f32>
// }
