mo.graph @shifted<n>(%a: !mo.tensor<[n, 2], f32>, %b: !mo.tensor<[n + 1, 2], f32>) -> (!mo.tensor<[n, 2], f32>, !mo.tensor<[n + 1, 2], f32>) {
  %0 = mo.relu(%a) : !mo.tensor<[n, 2], f32>
  %1 = mo.relu(%b) : !mo.tensor<[n + 1, 2], f32>
  mo.output %0, %1 : !mo.tensor<[n, 2], f32>, !mo.tensor<[n + 1, 2], f32>
}
