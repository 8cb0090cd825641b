mo.graph @gather<n>(%arg0: !mo.tensor<[7, 5], f32>, %arg1: !mo.tensor<[n, 3], si64>) -> (!mo.tensor<[n, 3, 5], f32>, !mo.tensor<[n, 3, 5], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0", "input1"], result_names = ["output0", "output1"]} {
  %0 = mo.chain.create()
  %1 = rmo.mo.gather(%arg0, %arg1) [axis = 0] : (!mo.tensor<[7, 5], f32>, !mo.tensor<[n, 3], si64>) -> !mo.tensor<[n, 3, 5], f32>
  %2 = mo.cast(%arg1) : (!mo.tensor<[n, 3], si64>) -> !mo.tensor<[n, 3], si32>
  %3 = rmo.mo.gather(%arg0, %2) [axis = 0] : (!mo.tensor<[7, 5], f32>, !mo.tensor<[n, 3], si32>) -> !mo.tensor<[n, 3, 5], f32>
  mo.output %1, %3 : !mo.tensor<[n, 3, 5], f32>, !mo.tensor<[n, 3, 5], f32>
}
