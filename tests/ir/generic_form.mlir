// Generic op form ("mo.op"(...) with a functional type) prints in the custom
// form; a zero-operand generic op prints without parentheses.
mo.graph @generic(%a: !mo.tensor<[3], f32>, %b: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>) {
  %s = "mo.add"(%a, %b) : (!mo.tensor<[3], f32>, !mo.tensor<[3], f32>) -> !mo.tensor<[3], f32>
  %c = "mo.constant"() {value = #M.dense_array<1.0, 2.0, 3.0> : tensor<3xf32>} : () -> !mo.tensor<[3], f32>
  %m = "mo.mul"(%s, %c) : (!mo.tensor<[3], f32>, !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>)
  %t = "mo.tanh"(%m) : (!mo.tensor<[3], f32>) -> !mo.tensor<[3], f32>
  mo.output %t : !mo.tensor<[3], f32>
}
// CHECK-PRINT:
// mo.graph @generic(%a: !mo.tensor<[3], f32>, %b: !mo.tensor<[3], f32>) -> (!mo.tensor<[3], f32>) {
//   %s = mo.add(%a, %b) : !mo.tensor<[3], f32>
//   %c = mo.constant {value = #M.dense_array<1.0, 2.0, 3.0> : tensor<3xf32>} : !mo.tensor<[3], f32>
//   %m = mo.mul(%s, %c) : !mo.tensor<[3], f32>
//   %t = mo.tanh(%m) : !mo.tensor<[3], f32>
//   mo.output %t : !mo.tensor<[3], f32>
// }
