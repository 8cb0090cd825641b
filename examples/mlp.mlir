// A two-layer perceptron on MNIST-sized inputs: symbolic batch, weights bound
// by name (--weights FILE.safetensors, or random with --random-inputs).
// The same graph as ../shared/ir-examples/mlp.mlir; bench/ times it.
// run: --dim batch=4
mo.graph @mlp<batch>(%x: !mo.tensor<[batch, 784], f32>) -> (!mo.tensor<[batch, 10], f32>) attributes {argument_names = ["pixels"], result_names = ["logits"]} {
  %w1 = mo.constant.external {name = "fc1.weight"} : !mo.tensor<[784, 512], f32>
  %b1 = mo.constant.external {name = "fc1.bias"} : !mo.tensor<[512], f32>
  %w2 = mo.constant.external {name = "fc2.weight"} : !mo.tensor<[512, 10], f32>
  %b2 = mo.constant.external {name = "fc2.bias"} : !mo.tensor<[10], f32>
  %0 = mo.matmul(%x, %w1) : (!mo.tensor<[batch, 784], f32>, !mo.tensor<[784, 512], f32>) -> !mo.tensor<[batch, 512], f32>
  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512], f32>) -> !mo.tensor<[batch, 512], f32>
  %2 = mo.relu(%1) : !mo.tensor<[batch, 512], f32>
  %3 = mo.matmul(%2, %w2) : (!mo.tensor<[batch, 512], f32>, !mo.tensor<[512, 10], f32>) -> !mo.tensor<[batch, 10], f32>
  %4 = mo.add(%3, %b2) : (!mo.tensor<[batch, 10], f32>, !mo.tensor<[10], f32>) -> !mo.tensor<[batch, 10], f32>
  mo.output %4 : !mo.tensor<[batch, 10], f32>
}
