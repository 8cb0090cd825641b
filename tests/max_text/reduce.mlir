mo.graph @reduce<b>(%arg0: !mo.tensor<[b, 6, 10], f32>) -> (!mo.tensor<[b, 6, 1], f32>, !mo.tensor<[b, 1, 10], f32>, !mo.tensor<[1, 6, 10], f32>, !mo.tensor<[b, 6, 1], f32>, !mo.tensor<[b, 6, 1], si64>, !mo.tensor<[b, 1, 10], si64>, !mo.tensor<[b, 6, 10], f32>, !mo.tensor<[b, 6, 10], f32>, !mo.tensor<[b, 6, 10], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7", "output8"]} {
  %0 = mo.chain.create()
  %1 = rmo.mo.reduce.add(%arg0) [axis = 2] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 6, 1], f32>
  %2 = rmo.mo.reduce.mean(%arg0) [axis = 1] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 1, 10], f32>
  %3 = rmo.mo.reduce.max(%arg0) [axis = 0] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[1, 6, 10], f32>
  %4 = rmo.mo.reduce.min(%arg0) [axis = 2] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 6, 1], f32>
  %5 = rmo.mo.reduce.arg_max(%arg0) [axis = 2] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 6, 1], si64>
  %6 = rmo.mo.reduce.arg_min(%arg0) [axis = 1] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 1, 10], si64>
  %7 = rmo.mo.reduce.softmax(%arg0) [axis = 2] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 6, 10], f32>
  %8 = rmo.mo.reduce.logsoftmax(%arg0) [axis = 2] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 6, 10], f32>
  %9 = rmo.mo.reduce.softmax(%arg0) [axis = 1] : (!mo.tensor<[b, 6, 10], f32>) -> !mo.tensor<[b, 6, 10], f32>
  mo.output %1, %2, %3, %4, %5, %6, %7, %8, %9 : !mo.tensor<[b, 6, 1], f32>, !mo.tensor<[b, 1, 10], f32>, !mo.tensor<[1, 6, 10], f32>, !mo.tensor<[b, 6, 1], f32>, !mo.tensor<[b, 6, 1], si64>, !mo.tensor<[b, 1, 10], si64>, !mo.tensor<[b, 6, 10], f32>, !mo.tensor<[b, 6, 10], f32>, !mo.tensor<[b, 6, 10], f32>
}
