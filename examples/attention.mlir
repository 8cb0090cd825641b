// Scaled dot-product attention for one head: two symbolic dims, transpose,
// batched matmul, a scalar constant, softmax.
// run: --dim batch=2 --dim seq=16
mo.graph @attention<batch, seq>(%q: !mo.tensor<[batch, seq, 64], f32>, %k: !mo.tensor<[batch, seq, 64], f32>, %v: !mo.tensor<[batch, seq, 64], f32>) -> (!mo.tensor<[batch, seq, 64], f32>) attributes {argument_names = ["q", "k", "v"], result_names = ["context"]} {
  %kt = mo.transpose(%k) {axis_1 = 1, axis_2 = 2} : (!mo.tensor<[batch, seq, 64], f32>) -> !mo.tensor<[batch, 64, seq], f32>
  %s = mo.matmul(%q, %kt) : (!mo.tensor<[batch, seq, 64], f32>, !mo.tensor<[batch, 64, seq], f32>) -> !mo.tensor<[batch, seq, seq], f32>
  %scale = mo.constant {value = #M.dense_array<0.125> : tensor<f32>} : !mo.tensor<[], f32>
  %ss = mo.mul(%s, %scale) : (!mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[batch, seq, seq], f32>
  %p = mo.softmax(%ss) {axis = -1} : !mo.tensor<[batch, seq, seq], f32>
  %o = mo.matmul(%p, %v) : (!mo.tensor<[batch, seq, seq], f32>, !mo.tensor<[batch, seq, 64], f32>) -> !mo.tensor<[batch, seq, 64], f32>
  mo.output %o : !mo.tensor<[batch, seq, 64], f32>
}
