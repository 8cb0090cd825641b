mo.graph @slicing<b>(%arg0: !mo.tensor<[b, 10, 12], f32>) -> (!mo.tensor<[b, 2, 12], f32>, !mo.tensor<[b, 3, 12], f32>, !mo.tensor<[b, 5, 12], f32>, !mo.tensor<[b, 6, 6], f32>, !mo.tensor<[b, 10], f32>, !mo.tensor<[b, 3, 3], f32>, !mo.tensor<[10, 12], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6"]} {
  %0 = mo.chain.create()
  %1 = mo.constant <#M.dense_array<2, 3, 5> : tensor<3xsi64>> : !mo.tensor<[3], si64>
  %2:3 = mo.split(%arg0, %1) [axis = 1] : (!mo.tensor<[b, 10, 12], f32>, !mo.tensor<[3], si64>) -> (!mo.tensor<[b, 2, 12], f32>, !mo.tensor<[b, 3, 12], f32>, !mo.tensor<[b, 5, 12], f32>)
  %3 = rmo.slice(%arg0) [starts = #mosh<ape[0, 1, 0]> : !mosh.ape, stops = #mosh<ape[b, 7, 12]> : !mosh.ape, steps = #mosh<ape[1, 1, 2]> : !mosh.ape] : (!mo.tensor<[b, 10, 12], f32>) -> !mo.tensor<[b, 6, 6], f32>
  %4 = rmo.slice(%arg0) [starts = #mosh<ape[0, 0, 3]> : !mosh.ape, stops = #mosh<ape[b, 10, 4]> : !mosh.ape, steps = #mosh<ape[1, 1, 1]> : !mosh.ape] : (!mo.tensor<[b, 10, 12], f32>) -> !mo.tensor<[b, 10, 1], f32>
  %5 = rmo.reshape(%4) [newShape = #mosh<ape[b, 10]> : !mosh.ape] : (!mo.tensor<[b, 10, 1], f32>) -> !mo.tensor<[b, 10], f32>
  %6 = rmo.slice(%arg0) [starts = #mosh<ape[0, -3, 2]> : !mosh.ape, stops = #mosh<ape[b, 10, 10]> : !mosh.ape, steps = #mosh<ape[1, 1, 3]> : !mosh.ape] : (!mo.tensor<[b, 10, 12], f32>) -> !mo.tensor<[b, 3, 3], f32>
  %7 = rmo.slice(%arg0) [starts = #mosh<ape[0, 0, 0]> : !mosh.ape, stops = #mosh<ape[1, 10, 12]> : !mosh.ape, steps = #mosh<ape[1, 1, 1]> : !mosh.ape] : (!mo.tensor<[b, 10, 12], f32>) -> !mo.tensor<[1, 10, 12], f32>
  %8 = rmo.reshape(%7) [newShape = #mosh<ape[10, 12]> : !mosh.ape] : (!mo.tensor<[1, 10, 12], f32>) -> !mo.tensor<[10, 12], f32>
  mo.output %2#0, %2#1, %2#2, %3, %5, %6, %8 : !mo.tensor<[b, 2, 12], f32>, !mo.tensor<[b, 3, 12], f32>, !mo.tensor<[b, 5, 12], f32>, !mo.tensor<[b, 6, 6], f32>, !mo.tensor<[b, 10], f32>, !mo.tensor<[b, 3, 3], f32>, !mo.tensor<[10, 12], f32>
} {counter = 16 : i64}
