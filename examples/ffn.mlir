// A transformer feed-forward block with a residual: layer_norm over the
// model dim, expand, gelu, project back, add. Rows are batch * seq, an
// algebraic dim reached through reshape.
// run: --dim batch=2 --dim seq=8
mo.graph @ffn<batch, seq>(%x: !mo.tensor<[batch, seq, 128], f32>) -> (!mo.tensor<[batch, seq, 128], f32>) attributes {argument_names = ["hidden"], result_names = ["out"]} {
  %flat = mo.reshape(%x) : (!mo.tensor<[batch, seq, 128], f32>) -> !mo.tensor<[batch * seq, 128], f32>
  %gamma = mo.constant.external {name = "ln.gamma"} : !mo.tensor<[128], f32>
  %beta = mo.constant.external {name = "ln.beta"} : !mo.tensor<[128], f32>
  %n = mo.layer_norm(%flat, %gamma, %beta) {epsilon = 1.0e-5} : (!mo.tensor<[batch * seq, 128], f32>, !mo.tensor<[128], f32>, !mo.tensor<[128], f32>) -> !mo.tensor<[batch * seq, 128], f32>
  %w1 = mo.constant.external {name = "up.weight"} : !mo.tensor<[128, 512], f32>
  %h = mo.matmul(%n, %w1) : (!mo.tensor<[batch * seq, 128], f32>, !mo.tensor<[128, 512], f32>) -> !mo.tensor<[batch * seq, 512], f32>
  %g = mo.gelu(%h) : !mo.tensor<[batch * seq, 512], f32>
  %w2 = mo.constant.external {name = "down.weight"} : !mo.tensor<[512, 128], f32>
  %d = mo.matmul(%g, %w2) : (!mo.tensor<[batch * seq, 512], f32>, !mo.tensor<[512, 128], f32>) -> !mo.tensor<[batch * seq, 128], f32>
  %r = mo.add(%flat, %d) : (!mo.tensor<[batch * seq, 128], f32>, !mo.tensor<[batch * seq, 128], f32>) -> !mo.tensor<[batch * seq, 128], f32>
  %y = mo.reshape(%r) : (!mo.tensor<[batch * seq, 128], f32>) -> !mo.tensor<[batch, seq, 128], f32>
  mo.output %y : !mo.tensor<[batch, seq, 128], f32>
}
