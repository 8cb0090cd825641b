// rms_norm_simt.mlir - SIMT custom ops (examples/custom_ops/rms_norm_simt.c)
// between built-in ops, for a SIMT device.
// run: --device simt-emu --dim rows=4
// Run by hand (simt-emu: the GPU kernels on the CPU):
//   kiln run examples/custom_ops/rms_norm_simt.mlir --device simt-emu \
//            --kernels examples/custom_ops/rms_norm_simt.c --random-inputs --dim rows=4
mo.graph @rms_simt<rows>(%x: !mo.tensor<[rows, 300], f32>, %gamma: !mo.tensor<[300], f32>) -> !mo.tensor<[rows, 300], f32> attributes {argument_names = ["x", "gamma"], result_names = ["y"]} {
  %n = mo.custom(%x, %gamma) {symbol = "rms_norm_simt", epsilon = 1.0e-6, simt_grid = "rows"} : (!mo.tensor<[rows, 300], f32>, !mo.tensor<[300], f32>) -> !mo.tensor<[rows, 300], f32>
  %s = mo.silu(%n) : !mo.tensor<[rows, 300], f32>
  %y = mo.custom(%s, %x) {symbol = "scaled_add", alpha = 0.5} : (!mo.tensor<[rows, 300], f32>, !mo.tensor<[rows, 300], f32>) -> !mo.tensor<[rows, 300], f32>
  mo.output %y : !mo.tensor<[rows, 300], f32>
}
