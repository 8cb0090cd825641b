// mlp.mlir placed on a GPU: the pixels arrive on the host, mo.transfer_to
// moves them to gpu:0 where the weights live and every op runs, and the
// logits come back to the host (a result typed gpu:0 would stay on the
// device). Runs on a device model: cuda:0, hip:0 or, on any machine, the
// SIMT emulator; the CPU model refuses values on a GPU.
// run: --dim batch=4 --device simt-emu
mo.graph @mlp_on_gpu<batch>(%x: !mo.tensor<[batch, 784], f32>) -> (!mo.tensor<[batch, 10], f32>) attributes {argument_names = ["pixels"], result_names = ["logits"]} {
  %w1 = mo.constant.external {name = "fc1.weight"} : !mo.tensor<[784, 512], f32, gpu:0>
  %b1 = mo.constant.external {name = "fc1.bias"} : !mo.tensor<[512], f32, gpu:0>
  %w2 = mo.constant.external {name = "fc2.weight"} : !mo.tensor<[512, 10], f32, gpu:0>
  %b2 = mo.constant.external {name = "fc2.bias"} : !mo.tensor<[10], f32, gpu:0>
  %xg = mo.transfer_to(%x) {device = "gpu:0"} : (!mo.tensor<[batch, 784], f32>) -> !mo.tensor<[batch, 784], f32, gpu:0>
  %0 = mo.matmul(%xg, %w1) : (!mo.tensor<[batch, 784], f32, gpu:0>, !mo.tensor<[784, 512], f32, gpu:0>) -> !mo.tensor<[batch, 512], f32, gpu:0>
  %1 = mo.add(%0, %b1) : (!mo.tensor<[batch, 512], f32, gpu:0>, !mo.tensor<[512], f32, gpu:0>) -> !mo.tensor<[batch, 512], f32, gpu:0>
  %2 = mo.relu(%1) : !mo.tensor<[batch, 512], f32, gpu:0>
  %3 = mo.matmul(%2, %w2) : (!mo.tensor<[batch, 512], f32, gpu:0>, !mo.tensor<[512, 10], f32, gpu:0>) -> !mo.tensor<[batch, 10], f32, gpu:0>
  %4 = mo.add(%3, %b2) : (!mo.tensor<[batch, 10], f32, gpu:0>, !mo.tensor<[10], f32, gpu:0>) -> !mo.tensor<[batch, 10], f32, gpu:0>
  %y = mo.transfer_to(%4) {device = "cpu"} : (!mo.tensor<[batch, 10], f32, gpu:0>) -> !mo.tensor<[batch, 10], f32>
  mo.output %y : !mo.tensor<[batch, 10], f32>
}
