// mo.irfft: the default n (2 (m - 1), an expression of a symbolic axis),
// n given with each normalization, and complex input (the last dim, 2, not
// counted by axis); defaults are not printed when absent.
mo.graph @fft<m>(%x: !mo.tensor<[3, m], f32>, %c: !mo.tensor<[4, 6, 2], f64>)
    -> (!mo.tensor<[3, 2 * m - 2], f32>, !mo.tensor<[3, 7], f32>, !mo.tensor<[4, 16], f64>,
        !mo.tensor<[6, 6], f64>) {
  %a = mo.irfft(%x) : (!mo.tensor<[3, m], f32>) -> !mo.tensor<[3, 2 * m - 2], f32>
  %b = mo.irfft(%x) {n = 7, normalization = "ortho"} : (!mo.tensor<[3, m], f32>) -> !mo.tensor<[3, 7], f32>
  %d = mo.irfft(%c) {input_is_complex = true, n = 16, normalization = "forward"} : (!mo.tensor<[4, 6, 2], f64>) -> !mo.tensor<[4, 16], f64>
  %e = mo.irfft(%c) {axis = 0, input_is_complex = true, normalization = "backward"} : (!mo.tensor<[4, 6, 2], f64>) -> !mo.tensor<[6, 6], f64>
  mo.output %a, %b, %d, %e : !mo.tensor<[3, 2 * m - 2], f32>, !mo.tensor<[3, 7], f32>,
      !mo.tensor<[4, 16], f64>, !mo.tensor<[6, 6], f64>
}
// CHECK-PRINT:
// mo.graph @fft<m>(%x: !mo.tensor<[3, m], f32>, %c: !mo.tensor<[4, 6, 2], f64>) -> (!mo.tensor<[3, 2 * m - 2], f32>, !mo.tensor<[3, 7], f32>, !mo.tensor<[4, 16], f64>, !mo.tensor<[6, 6], f64>) {
//   %a = mo.irfft(%x) : (!mo.tensor<[3, m], f32>) -> !mo.tensor<[3, 2 * m - 2], f32>
//   %b = mo.irfft(%x) {n = 7, normalization = "ortho"} : (!mo.tensor<[3, m], f32>) -> !mo.tensor<[3, 7], f32>
//   %d = mo.irfft(%c) {input_is_complex = true, n = 16, normalization = "forward"} : (!mo.tensor<[4, 6, 2], f64>) -> !mo.tensor<[4, 16], f64>
//   %e = mo.irfft(%c) {axis = 0, input_is_complex = true, normalization = "backward"} : (!mo.tensor<[4, 6, 2], f64>) -> !mo.tensor<[6, 6], f64>
//   mo.output %a, %b, %d, %e : !mo.tensor<[3, 2 * m - 2], f32>, !mo.tensor<[3, 7], f32>, !mo.tensor<[4, 16], f64>, !mo.tensor<[6, 6], f64>
// }
