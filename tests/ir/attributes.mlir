// Attributes in any order print sorted by name; floats print in the shortest
// form that reads back exactly; strings keep their escapes.
mo.graph @attrs(%x: !mo.tensor<[2, 3, 4], f32>) -> (!mo.tensor<[2, 4, 3], f32>, !mo.tensor<[1, 3, 2], f32>, !mo.tensor<[2, 3, 4], si32>) {
  %t = mo.transpose(%x) {axis_2 = 2, axis_1 = 1} : (!mo.tensor<[2, 3, 4], f32>) -> !mo.tensor<[2, 4, 3], f32>
  %g = mo.gelu(%t) {approximate = "tanh"} : !mo.tensor<[2, 4, 3], f32>
  %w = mo.constant.external {name = "layer \"0\"\\w\n"} : !mo.tensor<[3], f32>
  %b = mo.constant.external {name = "layer.0.b"} : !mo.tensor<[3], f32>
  %n = mo.layer_norm(%g, %w, %b) {epsilon = 0.00001} : (!mo.tensor<[2, 4, 3], f32>, !mo.tensor<[3], f32>, !mo.tensor<[3], f32>) -> !mo.tensor<[2, 4, 3], f32>
  %sl = mo.slice_tensor(%x) {step = [1, 1, -2], stop = [1, 3, -9223372036854775807], start = [0, 0, 3]} : (!mo.tensor<[2, 3, 4], f32>) -> !mo.tensor<[1, 3, 2], f32>
  %p = mo.permute(%sl) {dims = [0, 1, 2]} : !mo.tensor<[1, 3, 2], f32>
  %c = mo.cast(%x) {dtype = si32} : (!mo.tensor<[2, 3, 4], f32>) -> !mo.tensor<[2, 3, 4], si32>
  mo.output %n, %p, %c : !mo.tensor<[2, 4, 3], f32>, !mo.tensor<[1, 3, 2], f32>, !mo.tensor<[2, 3, 4], si32>
}
// CHECK-PRINT:
// mo.graph @attrs(%x: !mo.tensor<[2, 3, 4], f32>) -> (!mo.tensor<[2, 4, 3], f32>, !mo.tensor<[1, 3, 2], f32>, !mo.tensor<[2, 3, 4], si32>) {
//   %t = mo.transpose(%x) {axis_1 = 1, axis_2 = 2} : (!mo.tensor<[2, 3, 4], f32>) -> !mo.tensor<[2, 4, 3], f32>
//   %g = mo.gelu(%t) {approximate = "tanh"} : !mo.tensor<[2, 4, 3], f32>
//   %w = mo.constant.external {name = "layer \"0\"\\w\n"} : !mo.tensor<[3], f32>
//   %b = mo.constant.external {name = "layer.0.b"} : !mo.tensor<[3], f32>
//   %n = mo.layer_norm(%g, %w, %b) {epsilon = 1.0e-5} : (!mo.tensor<[2, 4, 3], f32>, !mo.tensor<[3], f32>, !mo.tensor<[3], f32>) -> !mo.tensor<[2, 4, 3], f32>
//   %sl = mo.slice_tensor(%x) {start = [0, 0, 3], step = [1, 1, -2], stop = [1, 3, -9223372036854775807]} : (!mo.tensor<[2, 3, 4], f32>) -> !mo.tensor<[1, 3, 2], f32>
//   %p = mo.permute(%sl) {dims = [0, 1, 2]} : !mo.tensor<[1, 3, 2], f32>
//   %c = mo.cast(%x) {dtype = si32} : (!mo.tensor<[2, 3, 4], f32>) -> !mo.tensor<[2, 3, 4], si32>
//   mo.output %n, %p, %c : !mo.tensor<[2, 4, 3], f32>, !mo.tensor<[1, 3, 2], f32>, !mo.tensor<[2, 3, 4], si32>
// }
