mo.graph @add2<n>(%a: !mo.tensor<[n, 4], f32>, %b: !mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 4], f32>) {
  %0 = mo.add(%a, %b) : !mo.tensor<[n, 4], f32>
  mo.output %0 : !mo.tensor<[n, 4], f32>
}
