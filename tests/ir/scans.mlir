// mo.cumsum with its attributes (defaults are not printed when absent), mo.prod,
// and the elementwise ops of issue 17: floor_div, int div into f64, int pow.
mo.graph @scans<n>(%x: !mo.tensor<[n, 5], f32>, %i: !mo.tensor<[n, 5], si32>)
    -> (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], si32>, !mo.tensor<[1, 5], f32>,
        !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f64>, !mo.tensor<[n, 5], si32>,
        !mo.tensor<[n, 5], f32>) {
  %c = mo.cumsum(%x) {axis = 0, exclusive = true, reverse = false} : !mo.tensor<[n, 5], f32>
  %d = mo.cumsum(%i) : !mo.tensor<[n, 5], si32>
  %p = mo.prod(%x) {axis = 0} : (!mo.tensor<[n, 5], f32>) -> !mo.tensor<[1, 5], f32>
  %q = mo.floor_div(%i, %d) : !mo.tensor<[n, 5], si32>
  %r = mo.div(%i, %d) : (!mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], si32>) -> !mo.tensor<[n, 5], f64>
  %s = mo.pow(%i, %d) : !mo.tensor<[n, 5], si32>
  %t = mo.atanh(%x) : !mo.tensor<[n, 5], f32>
  mo.output %c, %d, %p, %q, %r, %s, %t : !mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], si32>,
      !mo.tensor<[1, 5], f32>, !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f64>,
      !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f32>
}
// CHECK-PRINT:
// mo.graph @scans<n>(%x: !mo.tensor<[n, 5], f32>, %i: !mo.tensor<[n, 5], si32>) -> (!mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], si32>, !mo.tensor<[1, 5], f32>, !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f64>, !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f32>) {
//   %c = mo.cumsum(%x) {axis = 0, exclusive = true, reverse = false} : !mo.tensor<[n, 5], f32>
//   %d = mo.cumsum(%i) : !mo.tensor<[n, 5], si32>
//   %p = mo.prod(%x) {axis = 0} : (!mo.tensor<[n, 5], f32>) -> !mo.tensor<[1, 5], f32>
//   %q = mo.floor_div(%i, %d) : !mo.tensor<[n, 5], si32>
//   %r = mo.div(%i, %d) : (!mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], si32>) -> !mo.tensor<[n, 5], f64>
//   %s = mo.pow(%i, %d) : !mo.tensor<[n, 5], si32>
//   %t = mo.atanh(%x) : !mo.tensor<[n, 5], f32>
//   mo.output %c, %d, %p, %q, %r, %s, %t : !mo.tensor<[n, 5], f32>, !mo.tensor<[n, 5], si32>, !mo.tensor<[1, 5], f32>, !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f64>, !mo.tensor<[n, 5], si32>, !mo.tensor<[n, 5], f32>
// }
