// Dims read from data computed inside the graph (ir/shape.h): a range whose
// limit is len(x) + k, a slice whose bounds are computed from %a, and a
// reshape to a shape computed from the range's length. kiln computes those
// operands from the inputs before the graph runs and binds m, p, q, u, v.
mo.graph @data_shapes<n, m, p, q, u, v>(%x: !mo.tensor<[n, 5], f32>, %k: !mo.tensor<[], si64>,
    %a: !mo.tensor<[1], si64>) -> (!mo.tensor<[m], si64>, !mo.tensor<[p, q], f32>,
    !mo.tensor<[u, v], si64>) {
  %s = mo.shape_to_tensor(%x) : (!mo.tensor<[n, 5], f32>) -> !mo.tensor<[2], si64>
  %i = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : !mo.tensor<[1], si64>
  %s0 = mo.gather(%s, %i) {axis = 0} : !mo.tensor<[1], si64>
  %n0 = mo.reshape(%s0) : !mo.tensor<[], si64>
  %l = mo.add(%n0, %k) : !mo.tensor<[], si64>
  %z = mo.constant {value = #M.dense_array<0> : tensor<si64>} : !mo.tensor<[], si64>
  %one = mo.constant {value = #M.dense_array<1> : tensor<si64>} : !mo.tensor<[], si64>
  %r = mo.range(%z, %l, %one) : !mo.tensor<[m], si64>
  %c2 = mo.constant {value = #M.dense_array<2> : tensor<1xsi64>} : !mo.tensor<[1], si64>
  %st = mo.sub(%a, %c2) : !mo.tensor<[1], si64>
  %sp = mo.mul(%a, %c2) : !mo.tensor<[1], si64>
  %ax = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : !mo.tensor<[1], si64>
  %y = mo.slice_tensor(%x, %st, %sp, %ax, %ax) : !mo.tensor<[p, q], f32>
  %len = mo.shape_to_tensor(%r) : (!mo.tensor<[m], si64>) -> !mo.tensor<[1], si64>
  %sh = mo.concat(%len, %ax) {axis = 0} : !mo.tensor<[2], si64>
  %w = mo.reshape(%r, %sh) : !mo.tensor<[u, v], si64>
  mo.output %r, %y, %w : !mo.tensor<[m], si64>, !mo.tensor<[p, q], f32>, !mo.tensor<[u, v], si64>
}
// CHECK-PRINT:
// mo.graph @data_shapes<n, m, p, q, u, v>(%x: !mo.tensor<[n, 5], f32>, %k: !mo.tensor<[], si64>, %a: !mo.tensor<[1], si64>) -> (!mo.tensor<[m], si64>, !mo.tensor<[p, q], f32>, !mo.tensor<[u, v], si64>) {
//   %s = mo.shape_to_tensor(%x) : (!mo.tensor<[n, 5], f32>) -> !mo.tensor<[2], si64>
//   %i = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : !mo.tensor<[1], si64>
//   %s0 = mo.gather(%s, %i) {axis = 0} : (!mo.tensor<[2], si64>, !mo.tensor<[1], si64>) -> !mo.tensor<[1], si64>
//   %n0 = mo.reshape(%s0) : (!mo.tensor<[1], si64>) -> !mo.tensor<[], si64>
//   %l = mo.add(%n0, %k) : !mo.tensor<[], si64>
//   %z = mo.constant {value = #M.dense_array<0> : tensor<si64>} : !mo.tensor<[], si64>
//   %one = mo.constant {value = #M.dense_array<1> : tensor<si64>} : !mo.tensor<[], si64>
//   %r = mo.range(%z, %l, %one) : (!mo.tensor<[], si64>, !mo.tensor<[], si64>, !mo.tensor<[], si64>) -> !mo.tensor<[m], si64>
//   %c2 = mo.constant {value = #M.dense_array<2> : tensor<1xsi64>} : !mo.tensor<[1], si64>
//   %st = mo.sub(%a, %c2) : !mo.tensor<[1], si64>
//   %sp = mo.mul(%a, %c2) : !mo.tensor<[1], si64>
//   %ax = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : !mo.tensor<[1], si64>
//   %y = mo.slice_tensor(%x, %st, %sp, %ax, %ax) : (!mo.tensor<[n, 5], f32>, !mo.tensor<[1], si64>, !mo.tensor<[1], si64>, !mo.tensor<[1], si64>, !mo.tensor<[1], si64>) -> !mo.tensor<[p, q], f32>
//   %len = mo.shape_to_tensor(%r) : (!mo.tensor<[m], si64>) -> !mo.tensor<[1], si64>
//   %sh = mo.concat(%len, %ax) {axis = 0} : (!mo.tensor<[1], si64>, !mo.tensor<[1], si64>) -> !mo.tensor<[2], si64>
//   %w = mo.reshape(%r, %sh) : (!mo.tensor<[m], si64>, !mo.tensor<[2], si64>) -> !mo.tensor<[u, v], si64>
//   mo.output %r, %y, %w : !mo.tensor<[m], si64>, !mo.tensor<[p, q], f32>, !mo.tensor<[u, v], si64>
// }
