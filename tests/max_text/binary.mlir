mo.graph @binary<n>(%arg0: !mo.tensor<[n, 8], f32>, %arg1: !mo.tensor<[8], f32>) -> (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0", "input1"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7", "output8", "output9"]} {
  %0 = mo.chain.create()
  %1 = rmo.add(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %2 = rmo.sub(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %3 = rmo.mul(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %4 = rmo.mo.abs(%arg1) : (!mo.tensor<[8], f32>) -> !mo.tensor<[8], f32>
  %5 = mo.constant <#M.dense_array<1.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %6 = rmo.add(%4, %5) : (!mo.tensor<[8], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[8], f32>
  %7 = rmo.div(%arg0, %6) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %8 = rmo.max(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %9 = rmo.min(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %10 = rmo.mo.abs(%arg0) : (!mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], f32>
  %11 = mo.constant <#M.dense_array<1.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %12 = rmo.add(%10, %11) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[n, 8], f32>
  %13 = rmo.pow(%12, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %14 = rmo.mo.abs(%arg1) : (!mo.tensor<[8], f32>) -> !mo.tensor<[8], f32>
  %15 = mo.constant <#M.dense_array<1.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %16 = rmo.add(%14, %15) : (!mo.tensor<[8], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[8], f32>
  %17 = rmo.mod(%arg0, %16) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[8], f32>) -> !mo.tensor<[n, 8], f32>
  %18 = mo.constant <#M.dense_array<2.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %19 = rmo.mul(%arg0, %18) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[n, 8], f32>
  %20 = mo.constant <#M.dense_array<1.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %21 = rmo.add(%19, %20) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[n, 8], f32>
  %22 = mo.constant <#M.dense_array<2.000000e+00> : tensor<f32>> : !mo.tensor<[], f32>
  %23 = rmo.sub(%22, %arg0) : (!mo.tensor<[], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], f32>
  mo.output %1, %2, %3, %7, %8, %9, %13, %17, %21, %23 : !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>
}
