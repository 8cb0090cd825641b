mo.graph @mlp<m>(%arg0: !mo.tensor<[m, 24], f32>) -> (!mo.tensor<[m, 4], f32>, !mo.tensor<[m, m], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1"]} {
  %0 = mo.constant.external [name = "fc2.weight", align = 4, device = #M.device_ref<"cpu", 0>] : !mo.tensor<[16, 4], f32>
  %1 = mo.constant.external [name = "fc1.bias", align = 4, device = #M.device_ref<"cpu", 0>] : !mo.tensor<[16], f32>
  %2 = mo.constant.external [name = "fc1.weight", align = 4, device = #M.device_ref<"cpu", 0>] : !mo.tensor<[24, 16], f32>
  %3 = mo.chain.create()
  %4 = rmo.matmul(%arg0, %2) : (!mo.tensor<[m, 24], f32>, !mo.tensor<[24, 16], f32>) -> !mo.tensor<[m, 16], f32>
  %5 = rmo.add(%4, %1) : (!mo.tensor<[m, 16], f32>, !mo.tensor<[16], f32>) -> !mo.tensor<[m, 16], f32>
  %6 = rmo.mo.relu(%5) : (!mo.tensor<[m, 16], f32>) -> !mo.tensor<[m, 16], f32>
  %7 = rmo.matmul(%6, %0) : (!mo.tensor<[m, 16], f32>, !mo.tensor<[16, 4], f32>) -> !mo.tensor<[m, 4], f32>
  %8 = rmo.mo.reduce.softmax(%7) [axis = 1] : (!mo.tensor<[m, 4], f32>) -> !mo.tensor<[m, 4], f32>
  %9 = mo.constant <#M.dense_array<1, 0> : tensor<2xsi64>> : !mo.tensor<[2], si64>
  %10 = rmo.mo.transpose(%6, %9) : (!mo.tensor<[m, 16], f32>, !mo.tensor<[2], si64>) -> !mo.tensor<[16, m], f32>
  %11 = rmo.matmul(%6, %10) : (!mo.tensor<[m, 16], f32>, !mo.tensor<[16, m], f32>) -> !mo.tensor<[m, m], f32>
  mo.output %8, %11 : !mo.tensor<[m, 4], f32>, !mo.tensor<[m, m], f32>
}
