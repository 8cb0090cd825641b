mo.graph @norm<b, s>(%arg0: !mo.tensor<[b, s, 32], f32>) -> (!mo.tensor<[b, s, 32], f32>, !mo.tensor<[b, s, 32], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1"]} {
  %0 = mo.constant.external [name = "ln.beta", align = 4, device = #M.device_ref<"cpu", 0>] : !mo.tensor<[32], f32>
  %1 = mo.constant.external [name = "ln.gamma", align = 4, device = #M.device_ref<"cpu", 0>] : !mo.tensor<[32], f32>
  %2 = mo.chain.create()
  %3 = mo.constant <#M.dense_array<9.99999974E-6> : tensor<f32>> : !mo.tensor<[], f32>
  %4 = mo.reduce.layer_norm(%arg0, %1, %0, %3) : (!mo.tensor<[b, s, 32], f32>, !mo.tensor<[32], f32>, !mo.tensor<[32], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[b, s, 32], f32>
  %5 = mo.constant <#M.dense_array<1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00, 1.000000e+00> : tensor<32xf32>> : !mo.tensor<[32], f32>
  %6 = mo.constant <#M.dense_array<0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00> : tensor<32xf32>> : !mo.tensor<[32], f32>
  %7 = mo.constant <#M.dense_array<9.99999997E-7> : tensor<f32>> : !mo.tensor<[], f32>
  %8 = mo.reduce.layer_norm(%arg0, %5, %6, %7) : (!mo.tensor<[b, s, 32], f32>, !mo.tensor<[32], f32>, !mo.tensor<[32], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[b, s, 32], f32>
  mo.output %4, %8 : !mo.tensor<[b, s, 32], f32>, !mo.tensor<[b, s, 32], f32>
}
