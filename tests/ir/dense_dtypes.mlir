// Dense constants of several dtypes. f32 / f64 print in the shortest decimal
// that reads back to the same bits; f16 / bf16 print as hex bit patterns;
// NaNs other than the default quiet NaN print as hex bit patterns.
mo.graph @dense() -> (!mo.tensor<[2, 2], f32>, !mo.tensor<[3], si64>, !mo.tensor<[2], bool>, !mo.tensor<[4], f64>, !mo.tensor<[], f32>, !mo.tensor<[3], f16>, !mo.tensor<[2], bf16>, !mo.tensor<[3], si8>, !mo.tensor<[2], ui64>, !mo.tensor<[0], si32>) {
  %f32 = mo.constant {value = #M.dense_array<3, 0.1, -0.0, 1e-45> : tensor<2x2xf32>} : !mo.tensor<[2, 2], f32>
  %i64 = mo.constant {value = #M.dense_array<-9223372036854775808, 0, 9223372036854775807> : tensor<3xsi64>} : !mo.tensor<[3], si64>
  %b = mo.constant {value = #M.dense_array<true, false> : tensor<2xbool>} : !mo.tensor<[2], bool>
  %f64 = mo.constant {value = #M.dense_array<0.1, nan, -inf, 0xFFF8000000000001> : tensor<4xf64>} : !mo.tensor<[4], f64>
  %s = mo.constant {value = #M.dense_array<0x7FC00001> : tensor<f32>} : !mo.tensor<[], f32>
  %h = mo.constant {value = #M.dense_array<1.0, -2.5, 0x7E00> : tensor<3xf16>} : !mo.tensor<[3], f16>
  %bf = mo.constant {value = #M.dense_array<1.0, 0x7F80> : tensor<2xbf16>} : !mo.tensor<[2], bf16>
  %i8 = mo.constant {value = #M.dense_array<-128, 127, 0x10> : tensor<3xsi8>} : !mo.tensor<[3], si8>
  %u64 = mo.constant {value = #M.dense_array<18446744073709551615, 0> : tensor<2xui64>} : !mo.tensor<[2], ui64>
  %e = mo.constant {value = #M.dense_array<> : tensor<0xsi32>} : !mo.tensor<[0], si32>
  mo.output %f32, %i64, %b, %f64, %s, %h, %bf, %i8, %u64, %e : !mo.tensor<[2, 2], f32>, !mo.tensor<[3], si64>, !mo.tensor<[2], bool>, !mo.tensor<[4], f64>, !mo.tensor<[], f32>, !mo.tensor<[3], f16>, !mo.tensor<[2], bf16>, !mo.tensor<[3], si8>, !mo.tensor<[2], ui64>, !mo.tensor<[0], si32>
}
// CHECK-PRINT:
// mo.graph @dense() -> (!mo.tensor<[2, 2], f32>, !mo.tensor<[3], si64>, !mo.tensor<[2], bool>, !mo.tensor<[4], f64>, !mo.tensor<[], f32>, !mo.tensor<[3], f16>, !mo.tensor<[2], bf16>, !mo.tensor<[3], si8>, !mo.tensor<[2], ui64>, !mo.tensor<[0], si32>) {
//   %f32 = mo.constant {value = #M.dense_array<3.0, 0.1, -0.0, 1.0e-45> : tensor<2x2xf32>} : !mo.tensor<[2, 2], f32>
//   %i64 = mo.constant {value = #M.dense_array<-9223372036854775808, 0, 9223372036854775807> : tensor<3xsi64>} : !mo.tensor<[3], si64>
//   %b = mo.constant {value = #M.dense_array<true, false> : tensor<2xbool>} : !mo.tensor<[2], bool>
//   %f64 = mo.constant {value = #M.dense_array<0.1, nan, -inf, 0xFFF8000000000001> : tensor<4xf64>} : !mo.tensor<[4], f64>
//   %s = mo.constant {value = #M.dense_array<0x7FC00001> : tensor<f32>} : !mo.tensor<[], f32>
//   %h = mo.constant {value = #M.dense_array<0x3C00, 0xC100, 0x7E00> : tensor<3xf16>} : !mo.tensor<[3], f16>
//   %bf = mo.constant {value = #M.dense_array<0x3F80, 0x7F80> : tensor<2xbf16>} : !mo.tensor<[2], bf16>
//   %i8 = mo.constant {value = #M.dense_array<-128, 127, 16> : tensor<3xsi8>} : !mo.tensor<[3], si8>
//   %u64 = mo.constant {value = #M.dense_array<18446744073709551615, 0> : tensor<2xui64>} : !mo.tensor<[2], ui64>
//   %e = mo.constant {value = #M.dense_array<> : tensor<0xsi32>} : !mo.tensor<[0], si32>
//   mo.output %f32, %i64, %b, %f64, %s, %h, %bf, %i8, %u64, %e : !mo.tensor<[2, 2], f32>, !mo.tensor<[3], si64>, !mo.tensor<[2], bool>, !mo.tensor<[4], f64>, !mo.tensor<[], f32>, !mo.tensor<[3], f16>, !mo.tensor<[2], bf16>, !mo.tensor<[3], si8>, !mo.tensor<[2], ui64>, !mo.tensor<[0], si32>
// }
