// swish_beta.mlir - an elementwise custom op (examples/custom_ops/swish_beta.c)
// between built-in elementwise ops: bias add -> swish_beta -> scale fuse
// into one kernel (kiln run --stats counts one kernel).
// run: --dim rows=4
// Run by hand:
//   kiln run examples/custom_ops/swish_beta.mlir --kernels examples/custom_ops/swish_beta.c \
//            --random-inputs --dim rows=4 --stats
mo.graph @swish_block<rows>(%x: !mo.tensor<[rows, 64], f32>, %b: !mo.tensor<[64], f32>, %beta: !mo.tensor<[64], f32>, %g: !mo.tensor<[rows, 64], f32>) -> !mo.tensor<[rows, 64], f32> attributes {argument_names = ["x", "b", "beta", "g"], result_names = ["y"]} {
  %h = mo.add(%x, %b) : (!mo.tensor<[rows, 64], f32>, !mo.tensor<[64], f32>) -> !mo.tensor<[rows, 64], f32>
  %s = mo.custom(%h, %beta) {symbol = "swish_beta"} : (!mo.tensor<[rows, 64], f32>, !mo.tensor<[64], f32>) -> !mo.tensor<[rows, 64], f32>
  %y = mo.mul(%s, %g) : !mo.tensor<[rows, 64], f32>
  mo.output %y : !mo.tensor<[rows, 64], f32>
}
