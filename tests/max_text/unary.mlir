mo.graph @unary<batch>(%arg0: !mo.tensor<[batch, 16], f32>) -> (!mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>) attributes {_kernel_library_paths = [], argument_names = ["input0"], result_names = ["output0", "output1", "output2", "output3", "output4", "output5", "output6", "output7", "output8", "output9", "output10", "output11", "output12", "output13", "output14", "output15", "output16", "output17", "output18"]} {
  %0 = mo.chain.create()
  %1 = rmo.mo.abs(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %2 = mo.constant <#M.dense_array<5.000000e-01> : tensor<f32>> : !mo.tensor<[], f32>
  %3 = rmo.add(%1, %2) : (!mo.tensor<[batch, 16], f32>, !mo.tensor<[], f32>) -> !mo.tensor<[batch, 16], f32>
  %4 = rmo.mo.exp(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %5 = rmo.mo.log(%3) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %6 = rmo.mo.log1p(%3) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %7 = rmo.mo.sqrt(%3) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %8 = rmo.mo.rsqrt(%3) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %9 = rmo.mo.tanh(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %10 = rmo.mo.sigmoid(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %11 = rmo.mo.relu(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %12 = rmo.mo.gelu(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %13 = rmo.mo.gelu_tanh(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %14 = rmo.mo.silu(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %15 = rmo.mo.erf(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %16 = rmo.mo.sin(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %17 = rmo.mo.cos(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %18 = rmo.mo.floor(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %19 = rmo.mo.round(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %20 = rmo.mo.trunc(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %21 = rmo.mo.negative(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  %22 = rmo.mo.negative(%arg0) : (!mo.tensor<[batch, 16], f32>) -> !mo.tensor<[batch, 16], f32>
  mo.output %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22 : !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>, !mo.tensor<[batch, 16], f32>
}
