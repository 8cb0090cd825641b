mo.graph @shapes<b>(%arg0: !mo.tensor<[b, 10], f32>) -> (!mo.tensor<[2], si64>, !mo.tensor<[2], si64>, !mo.tensor<[1], si64>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1", "output2"]} {
  %0 = mo.chain.create()
  %1 = rmo.shape_to_tensor() [shape = #mosh<ape[b, 10]> : !mosh.ape] : () -> !mo.tensor<[2], si64>
  %2 = rmo.shape_to_tensor [shape = #mosh<ape[3, 4]> : !mosh.ape] : !mo.tensor<[2], si64>
  %3 = rmo.reshape(%arg0) [newShape = #mosh<ape[mul_no_wrap(b, 10)]> : !mosh.ape] : (!mo.tensor<[b, 10], f32>) -> !mo.tensor<[mul_no_wrap(b, 10)], f32>
  %4 = rmo.shape_to_tensor() [shape = #mosh<ape[mul_no_wrap(b, 10)]> : !mosh.ape] : () -> !mo.tensor<[1], si64>
  mo.output %1, %2, %4 : !mo.tensor<[2], si64>, !mo.tensor<[2], si64>, !mo.tensor<[1], si64>
} {counter = 5 : i64}
