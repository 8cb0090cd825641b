// The printer uses the short form `: T` exactly when an op has one result and
// every operand has the result's type (or no operands); otherwise the
// functional form. The short form as input only gives the result type.
mo.graph @short(%x: !mo.tensor<[4, 3], f32>, %bias: !mo.tensor<[3], f32>) -> (!mo.tensor<[4, 3], f32>, !mo.tensor<[4, 3], bool>) {
  %r = mo.relu(%x) : (!mo.tensor<[4, 3], f32>) -> !mo.tensor<[4, 3], f32>
  %a = mo.add(%r, %bias) : !mo.tensor<[4, 3], f32>
  %e = mo.exp(%a) : !mo.tensor<[4, 3], f32>
  %s = mo.sub(%e, %r) : (!mo.tensor<[4, 3], f32>, !mo.tensor<[4, 3], f32>) -> !mo.tensor<[4, 3], f32>
  %n = mo.is_nan(%s) : (!mo.tensor<[4, 3], f32>) -> !mo.tensor<[4, 3], bool>
  mo.output %s, %n : !mo.tensor<[4, 3], f32>, !mo.tensor<[4, 3], bool>
}
// CHECK-PRINT:
// mo.graph @short(%x: !mo.tensor<[4, 3], f32>, %bias: !mo.tensor<[3], f32>) -> (!mo.tensor<[4, 3], f32>, !mo.tensor<[4, 3], bool>) {
//   %r = mo.relu(%x) : !mo.tensor<[4, 3], f32>
//   %a = mo.add(%r, %bias) : (!mo.tensor<[4, 3], f32>, !mo.tensor<[3], f32>) -> !mo.tensor<[4, 3], f32>
//   %e = mo.exp(%a) : !mo.tensor<[4, 3], f32>
//   %s = mo.sub(%e, %r) : !mo.tensor<[4, 3], f32>
//   %n = mo.is_nan(%s) : (!mo.tensor<[4, 3], f32>) -> !mo.tensor<[4, 3], bool>
//   mo.output %s, %n : !mo.tensor<[4, 3], f32>, !mo.tensor<[4, 3], bool>
// }
