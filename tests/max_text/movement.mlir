mo.graph @movement<b, s>(%arg0: !mo.tensor<[b, s, 12], f32>) -> (!mo.tensor<[b, s, 3, 4], f32>, !mo.tensor<[b, 12, s], f32>, !mo.tensor<[b, 3, s, 4], f32>, !mo.tensor<[mul_no_wrap(b, s), 12], f32>, !mo.tensor<[b, 2, s, 12], f32>, !mo.tensor<[b, s, 24], f32>, !mo.tensor<[mul(b, 2), s, 12], f32>, !mo.tensor<[b, s, 12], f32>, !mo.tensor<[b, s, 12, 1], f32>, !mo.tensor<[12, s, b], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7", "output8", "output9"]} {
  %0 = mo.chain.create()
  %1 = rmo.reshape(%arg0) [newShape = #mosh<ape[b, s, 3, 4]> : !mosh.ape] : (!mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[b, s, 3, 4], f32>
  %2 = mo.constant <#M.dense_array<0, 2, 1> : tensor<3xsi64>> : !mo.tensor<[3], si64>
  %3 = rmo.mo.transpose(%arg0, %2) : (!mo.tensor<[b, s, 12], f32>, !mo.tensor<[3], si64>) -> !mo.tensor<[b, 12, s], f32>
  %4 = mo.constant <#M.dense_array<0, 2, 1, 3> : tensor<4xsi64>> : !mo.tensor<[4], si64>
  %5 = rmo.mo.transpose(%1, %4) : (!mo.tensor<[b, s, 3, 4], f32>, !mo.tensor<[4], si64>) -> !mo.tensor<[b, 3, s, 4], f32>
  %6 = rmo.reshape(%arg0) [newShape = #mosh<ape[mul_no_wrap(b, s), 12]> : !mosh.ape] : (!mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[mul_no_wrap(b, s), 12], f32>
  %7 = rmo.reshape(%arg0) [newShape = #mosh<ape[b, 1, s, 12]> : !mosh.ape] : (!mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[b, 1, s, 12], f32>
  %8 = rmo.broadcast_to(%7) [newShape = #mosh<ape[b, 2, s, 12]> : !mosh.ape] : (!mo.tensor<[b, 1, s, 12], f32>) -> !mo.tensor<[b, 2, s, 12], f32>
  %9 = mo.constant <#M.dense_array<2.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %10 = rmo.mul(%arg0, %9) : (!mo.tensor<[b, s, 12], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[b, s, 12], f32>
  %11 = rmo.concat(%arg0, %10) [axis = -1 : index] : (!mo.tensor<[b, s, 12], f32>, !mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[b, s, 24], f32>
  %12 = rmo.concat(%arg0, %arg0) [axis = 0 : index] : (!mo.tensor<[b, s, 12], f32>, !mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[mul(b, 2), s, 12], f32>
  %13 = rmo.reshape(%arg0) [newShape = #mosh<ape[1, b, s, 12]> : !mosh.ape] : (!mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[1, b, s, 12], f32>
  %14 = rmo.reshape(%13) [newShape = #mosh<ape[b, s, 12]> : !mosh.ape] : (!mo.tensor<[1, b, s, 12], f32>) -> !mo.tensor<[b, s, 12], f32>
  %15 = rmo.reshape(%arg0) [newShape = #mosh<ape[b, s, 12, 1]> : !mosh.ape] : (!mo.tensor<[b, s, 12], f32>) -> !mo.tensor<[b, s, 12, 1], f32>
  %16 = mo.constant <#M.dense_array<2, 1, 0> : tensor<3xsi64>> : !mo.tensor<[3], si64>
  %17 = rmo.mo.transpose(%arg0, %16) : (!mo.tensor<[b, s, 12], f32>, !mo.tensor<[3], si64>) -> !mo.tensor<[12, s, b], f32>
  mo.output %1, %3, %5, %6, %8, %11, %12, %14, %15, %17 : !mo.tensor<[b, s, 3, 4], f32>, !mo.tensor<[b, 12, s], f32>, !mo.tensor<[b, 3, s, 4], f32>, !mo.tensor<[mul_no_wrap(b, s), 12], f32>, !mo.tensor<[b, 2, s, 12], f32>, !mo.tensor<[b, s, 24], f32>, !mo.tensor<[mul(b, 2), s, 12], f32>, !mo.tensor<[b, s, 12], f32>, !mo.tensor<[b, s, 12, 1], f32>, !mo.tensor<[12, s, b], f32>
} {counter = 104 : i64}
