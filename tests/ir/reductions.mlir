// mo.max / mo.min reduce with one operand and are elementwise with two;
// comments and line breaks may appear between any tokens.
mo.graph @reduce(%x: !mo.tensor<[4, 6], f32>,  // the input
                 %y: !mo.tensor<[4, 6], f32>)
    -> (!mo.tensor<[4, 1], f32>, !mo.tensor<[4, 6], f32>, !mo.tensor<[1, 6], si64>)
    attributes {argument_names = ["x", "y"]} {
  %r = mo.max(%x) {axis = -1} : (!mo.tensor<[4, 6], f32>) -> !mo.tensor<[4, 1], f32>  // reduce
  %e = mo.min(%x, %y) : !mo.tensor<[4, 6], f32>                                     // elementwise
  %i = mo.argmax(%y) {axis = 0} :
       (!mo.tensor<[4, 6], f32>)
       -> !mo.tensor<[1, 6], si64>
  mo.output %r, %e, %i : !mo.tensor<[4, 1], f32>, !mo.tensor<[4, 6], f32>,
                         !mo.tensor<[1, 6], si64>
}
// CHECK-PRINT:
// mo.graph @reduce(%x: !mo.tensor<[4, 6], f32>, %y: !mo.tensor<[4, 6], f32>) -> (!mo.tensor<[4, 1], f32>, !mo.tensor<[4, 6], f32>, !mo.tensor<[1, 6], si64>) attributes {argument_names = ["x", "y"]} {
//   %r = mo.max(%x) {axis = -1} : (!mo.tensor<[4, 6], f32>) -> !mo.tensor<[4, 1], f32>
//   %e = mo.min(%x, %y) : !mo.tensor<[4, 6], f32>
//   %i = mo.argmax(%y) {axis = 0} : (!mo.tensor<[4, 6], f32>) -> !mo.tensor<[1, 6], si64>
//   mo.output %r, %e, %i : !mo.tensor<[4, 1], f32>, !mo.tensor<[4, 6], f32>, !mo.tensor<[1, 6], si64>
// }
