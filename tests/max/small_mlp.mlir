mo.graph @small_mlp<batch>(%x: !mo.tensor<[batch, 3], f32>) -> (!mo.tensor<[batch, 2], f32>) attributes {argument_names = ["features"], result_names = ["scores"]} {
  %w = mo.constant.external {name = "fc.weight"} : !mo.tensor<[3, 2], f32>
  %b = mo.constant.external {name = "fc.bias"} : !mo.tensor<[2], f32>
  %0 = mo.matmul(%x, %w) : (!mo.tensor<[batch, 3], f32>, !mo.tensor<[3, 2], f32>) -> !mo.tensor<[batch, 2], f32>
  %1 = mo.add(%0, %b) : (!mo.tensor<[batch, 2], f32>, !mo.tensor<[2], f32>) -> !mo.tensor<[batch, 2], f32>
  %2 = mo.relu(%1) : !mo.tensor<[batch, 2], f32>
  mo.output %2 : !mo.tensor<[batch, 2], f32>
}
