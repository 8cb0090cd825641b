// rms_norm.mlir - a graph with a custom op (examples/custom_ops/rms_norm.c)
// followed by a built-in op.
// run: --dim rows=4
// Run by hand:
//   kiln run examples/custom_ops/rms_norm.mlir --kernels examples/custom_ops/rms_norm.c \
//            --random-inputs --dim rows=4
mo.graph @rms_block<rows>(%x: !mo.tensor<[rows, 64], f32>, %gamma: !mo.tensor<[64], f32>) -> !mo.tensor<[rows, 64], f32> attributes {argument_names = ["x", "gamma"], result_names = ["y"]} {
  %n = mo.custom(%x, %gamma) {symbol = "rms_norm", epsilon = 1.0e-6} : (!mo.tensor<[rows, 64], f32>, !mo.tensor<[64], f32>) -> !mo.tensor<[rows, 64], f32>
  %y = mo.silu(%n) : !mo.tensor<[rows, 64], f32>
  mo.output %y : !mo.tensor<[rows, 64], f32>
}
