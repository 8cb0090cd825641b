mo.graph @attention<b, s>(%arg0: !mo.tensor<[b, 4, s, 8], f32>, %arg1: !mo.tensor<[b, 4, s, 8], f32>, %arg2: !mo.tensor<[b, 4, s, 8], f32>) -> !mo.tensor<[b, 4, s, 8], f32> attributes {_kernel_library_paths = [], argument_names = ["input0", "input1", "input2"], result_names = ["output0"]} {
  %0 = mo.chain.create()
  %1 = mo.constant <#M.dense_array<0, 1, 3, 2> : tensor<4xsi64>> : !mo.tensor<[4], si64>
  %2 = rmo.mo.transpose(%arg1, %1) : (!mo.tensor<[b, 4, s, 8], f32>, !mo.tensor<[4], si64>) -> !mo.tensor<[b, 4, 8, s], f32>
  %3 = rmo.matmul(%arg0, %2) : (!mo.tensor<[b, 4, s, 8], f32>, !mo.tensor<[b, 4, 8, s], f32>) -> !mo.tensor<[b, 4, s, s], f32>
  %4 = mo.constant <#M.dense_array<0.353553385> : tensor<f32>> : !mo.tensor<[], f32>
  %5 = rmo.mul(%3, %4) : (!mo.tensor<[b, 4, s, s], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[b, 4, s, s], f32>
  %6 = rmo.mo.reduce.softmax(%5) [axis = 3] : (!mo.tensor<[b, 4, s, s], f32>) -> !mo.tensor<[b, 4, s, s], f32>
  %7 = rmo.matmul(%6, %arg2) : (!mo.tensor<[b, 4, s, s], f32>, !mo.tensor<[b, 4, s, 8], f32>) -> !mo.tensor<[b, 4, s, 8], f32>
  mo.output %7 : !mo.tensor<[b, 4, s, 8], f32>
}
