mo.graph @extra<r>(%arg0: !mo.tensor<[r, 6], f32>, %arg1: !mo.tensor<[6], f32>) -> (!mo.tensor<[r, 6], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 1], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 2, 3], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[add(r, -1), 2], f32>, !mo.tensor<[r, 5], f32>, !mo.tensor<[mul_no_wrap(r, 6)], f32>, !mo.tensor<[2, r, 6], f32>, !mo.tensor<[6, 6], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0", "input1"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7", "output8", "output9", "output10", "output11", "output12"]} {
  %0 = mo.chain.create()
  %1 = rmo.mo.abs(%arg0) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %2 = rmo.mo.ceil(%arg0) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %3 = rmo.mo.tanh(%arg0) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %4 = mo.custom [symbol = "mo.acos"](%3) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %5 = rmo.mo.tanh(%arg0) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %6 = mo.constant <#M.dense_array<5.000000e-01> : tensor<f32>> : !mo.tensor<[], f32>
  %7 = rmo.mul(%5, %6) : (!mo.tensor<[r, 6], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[r, 6], f32>
  %8 = rmo.mo.atanh(%7) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %9 = rmo.mo.abs(%arg1) : (!mo.tensor<[6], f32>) -> !mo.tensor<[6], f32>
  %10 = mo.constant <#M.dense_array<5.000000e-01> : tensor<f32>> : !mo.tensor<[], f32>
  %11 = rmo.add(%9, %10) : (!mo.tensor<[6], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[6], f32>
  %12 = rmo.div(%arg0, %11) : (!mo.tensor<[r, 6], f32>, !mo.tensor<[6], f32>) -> !mo.tensor<[r, 6], f32>
  %13 = rmo.mo.floor(%12) : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %14 = rmo.mo.reduce.mul(%arg0) [axis = 1] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 1], f32>
  %15 = rmo.mo.cumsum(%arg0) [axis = 1, exclusive = 0, reverse = 0] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %16 = rmo.reshape(%arg0) [newShape = #mosh<ape[r, 2, 3]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 2, 3], f32>
  %17 = mo.constant <#M.dense_array<0> : tensor<si64>> : !mo.tensor<[], si64>
  %18 = mo.constant <#M.dense_array<1> : tensor<si64>> : !mo.tensor<[], si64>
  %19 = mo.constant <#M.dense_array<false> : tensor<i1>> : !mo.tensor<[], bool>
  %20 = rmo.mo.linalg.band_part(%16, %17, %18, %19) : (!mo.tensor<[r, 2, 3], f32>, !mo.tensor<[], si64>, !mo.tensor<[], si64>, !mo.tensor<[], bool>) -> !mo.tensor<[r, 2, 3], f32>
  %21 = rmo.reshape(%1) [newShape = #mosh<ape[r, 1, 6]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 1, 6], f32>
  %22 = rmo.reshape(%21) [newShape = #mosh<ape[r, 6]> : !mosh.ape] : (!mo.tensor<[r, 1, 6], f32>) -> !mo.tensor<[r, 6], f32>
  %23 = rmo.slice(%arg0) [starts = #mosh<ape[1, 1]> : !mosh.ape, stops = #mosh<ape[r, 5]> : !mosh.ape, steps = #mosh<ape[1, 2]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[add(r, -1), 2], f32>
  %24 = rmo.slice(%arg0) [starts = #mosh<ape[0, 0]> : !mosh.ape, stops = #mosh<ape[r, -1]> : !mosh.ape, steps = #mosh<ape[1, 1]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[r, 5], f32>
  %25 = rmo.reshape(%arg0) [newShape = #mosh<ape[mul_no_wrap(r, 6)]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[mul_no_wrap(r, 6)], f32>
  %26 = rmo.reshape(%arg0) [newShape = #mosh<ape[1, r, 6]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[1, r, 6], f32>
  %27 = rmo.reshape(%1) [newShape = #mosh<ape[1, r, 6]> : !mosh.ape] : (!mo.tensor<[r, 6], f32>) -> !mo.tensor<[1, r, 6], f32>
  %28 = rmo.concat(%26, %27) [axis = 0 : index] : (!mo.tensor<[1, r, 6], f32>, !mo.tensor<[1, r, 6], f32>) -> !mo.tensor<[2, r, 6], f32>
  %29 = rmo.reshape(%arg1) [newShape = #mosh<ape[6, 1]> : !mosh.ape] : (!mo.tensor<[6], f32>) -> !mo.tensor<[6, 1], f32>
  %30 = rmo.reshape(%arg1) [newShape = #mosh<ape[1, 6]> : !mosh.ape] : (!mo.tensor<[6], f32>) -> !mo.tensor<[1, 6], f32>
  %31 = rmo.mul(%29, %30) : (!mo.tensor<[6, 1], f32>, !mo.tensor<[1, 6], f32>) -> !mo.tensor<[6, 6], f32>
  mo.output %2, %4, %8, %13, %14, %15, %20, %22, %23, %24, %25, %28, %31 : !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 1], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[r, 2, 3], f32>, !mo.tensor<[r, 6], f32>, !mo.tensor<[add(r, -1), 2], f32>, !mo.tensor<[r, 5], f32>, !mo.tensor<[mul_no_wrap(r, 6)], f32>, !mo.tensor<[2, r, 6], f32>, !mo.tensor<[6, 6], f32>
} {counter = 100 : i64}
