mo.graph @integers<n>(%arg0: !mo.tensor<[n, 6], si64>, %arg1: !mo.tensor<[6], si32>) -> (!mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], f32>, !mo.tensor<[n, 1], si64>, !mo.tensor<[n, 6], si64>) attributes {_kernel_library_paths = [], argument_names = ["input0", "input1"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7"]} {
  %0 = mo.chain.create()
  %1 = mo.cast(%arg1) : (!mo.tensor<[6], si32>) -> !mo.tensor<[6], si64>
  %2 = rmo.add(%arg0, %1) : (!mo.tensor<[n, 6], si64>, !mo.tensor<[6], si64>) -> !mo.tensor<[n, 6], si64>
  %3 = rmo.mul(%arg0, %1) : (!mo.tensor<[n, 6], si64>, !mo.tensor<[6], si64>) -> !mo.tensor<[n, 6], si64>
  %4 = mo.constant <#M.dense_array<3> : tensor<si64>> : !mo.tensor<[], si64>
  %5 = rmo.sub(%arg0, %4) : (!mo.tensor<[n, 6], si64>, !mo.tensor<[], si64>) -> !mo.tensor<[n, 6], si64>
  %6 = rmo.max(%arg0, %1) : (!mo.tensor<[n, 6], si64>, !mo.tensor<[6], si64>) -> !mo.tensor<[n, 6], si64>
  %7 = rmo.mo.abs(%arg0) : (!mo.tensor<[n, 6], si64>) -> !mo.tensor<[n, 6], si64>
  %8 = mo.cast(%arg0) : (!mo.tensor<[n, 6], si64>) -> !mo.tensor<[n, 6], f32>
  %9 = rmo.mo.reduce.add(%arg0) [axis = 1] : (!mo.tensor<[n, 6], si64>) -> !mo.tensor<[n, 1], si64>
  %10 = mo.cast(%arg0) : (!mo.tensor<[n, 6], si64>) -> !mo.tensor<[n, 6], f32>
  %11 = mo.constant <#M.dense_array<5.000000e-01> : tensor<f32>> : !mo.tensor<[], f32>
  %12 = rmo.mul(%10, %11) : (!mo.tensor<[n, 6], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[n, 6], f32>
  %13 = mo.cast(%12) : (!mo.tensor<[n, 6], f32>) -> !mo.tensor<[n, 6], si64>
  mo.output %2, %3, %5, %6, %7, %8, %9, %13 : !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], si64>, !mo.tensor<[n, 6], f32>, !mo.tensor<[n, 1], si64>, !mo.tensor<[n, 6], si64>
}
