// mo.matmul.integer (ONNX MatMulInteger): ui8 x si8 without zero points, with
// a scalar zero point of a, and with a per-row a and a per-column b zero point.
mo.graph @mmi<m>(%a: !mo.tensor<[m, 4], ui8>, %b: !mo.tensor<[4, 3], si8>, %za: !mo.tensor<[], ui8>, %zr: !mo.tensor<[m], ui8>, %zc: !mo.tensor<[3], si8>) -> (!mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>) {
  %p = mo.matmul.integer(%a, %b) : (!mo.tensor<[m, 4], ui8>, !mo.tensor<[4, 3], si8>) -> !mo.tensor<[m, 3], si32>
  %q = mo.matmul.integer(%a, %b, %za) : (!mo.tensor<[m, 4], ui8>, !mo.tensor<[4, 3], si8>, !mo.tensor<[], ui8>) -> !mo.tensor<[m, 3], si32>
  %r = mo.matmul.integer(%a, %b, %zr, %zc) : (!mo.tensor<[m, 4], ui8>, !mo.tensor<[4, 3], si8>, !mo.tensor<[m], ui8>, !mo.tensor<[3], si8>) -> !mo.tensor<[m, 3], si32>
  mo.output %p, %q, %r : !mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>
}
// CHECK-PRINT:
// mo.graph @mmi<m>(%a: !mo.tensor<[m, 4], ui8>, %b: !mo.tensor<[4, 3], si8>, %za: !mo.tensor<[], ui8>, %zr: !mo.tensor<[m], ui8>, %zc: !mo.tensor<[3], si8>) -> (!mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>) {
//   %p = mo.matmul.integer(%a, %b) : (!mo.tensor<[m, 4], ui8>, !mo.tensor<[4, 3], si8>) -> !mo.tensor<[m, 3], si32>
//   %q = mo.matmul.integer(%a, %b, %za) : (!mo.tensor<[m, 4], ui8>, !mo.tensor<[4, 3], si8>, !mo.tensor<[], ui8>) -> !mo.tensor<[m, 3], si32>
//   %r = mo.matmul.integer(%a, %b, %zr, %zc) : (!mo.tensor<[m, 4], ui8>, !mo.tensor<[4, 3], si8>, !mo.tensor<[m], ui8>, !mo.tensor<[3], si8>) -> !mo.tensor<[m, 3], si32>
//   mo.output %p, %q, %r : !mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>, !mo.tensor<[m, 3], si32>
// }
