// A tensor type may name a device as a third parameter; cpu:0 is the default
// and is not printed.
mo.graph @devices(%x: !mo.tensor<[5], f32, gpu:0>, %y: !mo.tensor<[5], f32, cpu:0>, %z: !mo.tensor<[5], f32, gpu:1>) -> (!mo.tensor<[5], f32, gpu:0>, !mo.tensor<[5], f32>, !mo.tensor<[5], f32, gpu:1>) {
  %a = mo.abs(%x) : !mo.tensor<[5], f32, gpu:0>
  %b = mo.negate(%y) : !mo.tensor<[5], f32>
  %c = mo.sqrt(%z) : !mo.tensor<[5], f32, gpu:1>
  mo.output %a, %b, %c : !mo.tensor<[5], f32, gpu:0>, !mo.tensor<[5], f32, cpu:0>, !mo.tensor<[5], f32, gpu:1>
}
// CHECK-PRINT:
// mo.graph @devices(%x: !mo.tensor<[5], f32, gpu:0>, %y: !mo.tensor<[5], f32>, %z: !mo.tensor<[5], f32, gpu:1>) -> (!mo.tensor<[5], f32, gpu:0>, !mo.tensor<[5], f32>, !mo.tensor<[5], f32, gpu:1>) {
//   %a = mo.abs(%x) : !mo.tensor<[5], f32, gpu:0>
//   %b = mo.negate(%y) : !mo.tensor<[5], f32>
//   %c = mo.sqrt(%z) : !mo.tensor<[5], f32, gpu:1>
//   mo.output %a, %b, %c : !mo.tensor<[5], f32, gpu:0>, !mo.tensor<[5], f32>, !mo.tensor<[5], f32, gpu:1>
// }
