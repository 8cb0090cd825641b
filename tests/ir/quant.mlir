// mo.qmatmul and mo.dequantize on GGUF blocks: lhs f32 [m, K], the weight ui8
// rows of blocks [N, K / 32 * 18] for q4_0; the encoding in MAX's spelling too.
mo.graph @quant<m>(%a: !mo.tensor<[m, 64], f32>, %w: !mo.tensor<[5, 36], ui8>, %k: !mo.tensor<[2, 144], ui8>) -> (!mo.tensor<[m, 5], f32>, !mo.tensor<[5, 64], f32>, !mo.tensor<[2, 256], f32>) {
  %y = mo.qmatmul(%a, %w) {encoding = "q4_0"} : (!mo.tensor<[m, 64], f32>, !mo.tensor<[5, 36], ui8>) -> !mo.tensor<[m, 5], f32>
  %d = mo.dequantize(%w) {encoding = "q4_0"} : (!mo.tensor<[5, 36], ui8>) -> !mo.tensor<[5, 64], f32>
  %e = mo.dequantize(%k) {encoding = "Q4_K"} : (!mo.tensor<[2, 144], ui8>) -> !mo.tensor<[2, 256], f32>
  mo.output %y, %d, %e : !mo.tensor<[m, 5], f32>, !mo.tensor<[5, 64], f32>, !mo.tensor<[2, 256], f32>
}
// CHECK-PRINT:
// mo.graph @quant<m>(%a: !mo.tensor<[m, 64], f32>, %w: !mo.tensor<[5, 36], ui8>, %k: !mo.tensor<[2, 144], ui8>) -> (!mo.tensor<[m, 5], f32>, !mo.tensor<[5, 64], f32>, !mo.tensor<[2, 256], f32>) {
//   %y = mo.qmatmul(%a, %w) {encoding = "q4_0"} : (!mo.tensor<[m, 64], f32>, !mo.tensor<[5, 36], ui8>) -> !mo.tensor<[m, 5], f32>
//   %d = mo.dequantize(%w) {encoding = "q4_0"} : (!mo.tensor<[5, 36], ui8>) -> !mo.tensor<[5, 64], f32>
//   %e = mo.dequantize(%k) {encoding = "Q4_K"} : (!mo.tensor<[2, 144], ui8>) -> !mo.tensor<[2, 256], f32>
//   mo.output %y, %d, %e : !mo.tensor<[m, 5], f32>, !mo.tensor<[5, 64], f32>, !mo.tensor<[2, 256], f32>
// }
