// The smallest graph: one op, static shape (seed 003's example).
mo.graph @relu_graph(%x: !mo.tensor<[5], f32>) -> (!mo.tensor<[5], f32>) attributes {argument_names = ["x"], result_names = ["y"]} {
  %0 = mo.relu(%x) : !mo.tensor<[5], f32>
  mo.output %0 : !mo.tensor<[5], f32>
}
