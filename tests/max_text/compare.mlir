mo.graph @compare<n>(%arg0: !mo.tensor<[n, 8], f32>, %arg1: !mo.tensor<[n, 8], f32>) -> (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], bool>, !mo.tensor<[n, 8], bool>) attributes {_kernel_library_paths = [], argument_names = ["input0", "input1"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7", "output8", "output9", "output10", "output11", "output12"]} {
  %0 = mo.chain.create()
  %1 = rmo.greater(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %2 = rmo.greater_equal(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %3 = rmo.equal(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %4 = rmo.not_equal(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %5 = mo.cast(%1) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %6 = mo.cast(%2) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %7 = mo.cast(%3) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %8 = mo.cast(%4) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %9 = rmo.select(%1, %arg0, %arg1) : (!mo.tensor<[n, 8], bool>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], f32>
  %10 = rmo.and(%1, %4) : (!mo.tensor<[n, 8], bool>, !mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], bool>
  %11 = mo.cast(%10) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %12 = rmo.or(%1, %3) : (!mo.tensor<[n, 8], bool>, !mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], bool>
  %13 = mo.cast(%12) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %14 = rmo.xor(%1, %2) : (!mo.tensor<[n, 8], bool>, !mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], bool>
  %15 = mo.cast(%14) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %16 = rmo.mo.not(%1) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], bool>
  %17 = mo.cast(%16) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %18 = rmo.div(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], f32>
  %19 = rmo.mo.is_nan(%18) : (!mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %20 = mo.cast(%19) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %21 = rmo.sub(%arg1, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], f32>
  %22 = rmo.div(%arg0, %21) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], f32>
  %23 = rmo.mo.is_inf(%22) : (!mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %24 = mo.cast(%23) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], f32>
  %25 = rmo.greater_equal(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %26 = rmo.mo.not(%25) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], bool>
  %27 = rmo.greater(%arg0, %arg1) : (!mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>) -> !mo.tensor<[n, 8], bool>
  %28 = rmo.mo.not(%27) : (!mo.tensor<[n, 8], bool>) -> !mo.tensor<[n, 8], bool>
  mo.output %5, %6, %7, %8, %9, %11, %13, %15, %17, %20, %24, %26, %28 : !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], f32>, !mo.tensor<[n, 8], bool>, !mo.tensor<[n, 8], bool>
}
