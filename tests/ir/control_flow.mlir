// mo.if, mo.while (a carried value whose dim grows each iteration) and
// mo.call with a prefix; the subgraph follows the main graph in the module.
mo.graph @control<n, m>(%p: !mo.tensor<[], bool>, %x: !mo.tensor<[n], f32>,
    %k: !mo.tensor<[], si64>) -> (!mo.tensor<[n], f32>, !mo.tensor<[], si64>, !mo.tensor<[m], f32>) {
  %y = mo.if(%p, %x) : (!mo.tensor<[], bool>, !mo.tensor<[n], f32>) -> !mo.tensor<[n], f32> {
    mo.graph @then(%a: !mo.tensor<[n], f32>) -> !mo.tensor<[n], f32> {
      %b = mo.call @twice(%a) {prefix = "t."} : (!mo.tensor<[n], f32>) -> !mo.tensor<[n], f32>
      mo.output %b : !mo.tensor<[n], f32>
    }
    mo.graph @else(%a: !mo.tensor<[n], f32>) -> !mo.tensor<[n], f32> {
      mo.output %a : !mo.tensor<[n], f32>
    }
  }
  %k1, %z = mo.while(%k, %y) : (!mo.tensor<[], si64>, !mo.tensor<[n], f32>) -> (!mo.tensor<[], si64>, !mo.tensor<[m], f32>) {
    mo.graph @cond(%i: !mo.tensor<[], si64>, %v: !mo.tensor<[j], f32>) -> !mo.tensor<[], bool> {
      %zero = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : !mo.tensor<[], si64>
      %c = mo.greater(%i, %zero) : (!mo.tensor<[], si64>, !mo.tensor<[], si64>) -> !mo.tensor<[], bool>
      mo.output %c : !mo.tensor<[], bool>
    }
    mo.graph @body(%i: !mo.tensor<[], si64>, %v: !mo.tensor<[j], f32>) -> (!mo.tensor<[], si64>, !mo.tensor<[2 * j], f32>) {
      %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : !mo.tensor<[], si64>
      %i1 = mo.sub(%i, %one) : !mo.tensor<[], si64>
      %w = mo.concat(%v, %v) {axis = 0} : (!mo.tensor<[j], f32>, !mo.tensor<[j], f32>) -> !mo.tensor<[2 * j], f32>
      mo.output %i1, %w : !mo.tensor<[], si64>, !mo.tensor<[2 * j], f32>
    }
  }
  mo.output %y, %k1, %z : !mo.tensor<[n], f32>, !mo.tensor<[], si64>, !mo.tensor<[m], f32>
}

mo.graph @twice(%a: !mo.tensor<[r], f32>) -> !mo.tensor<[r], f32> {
  %b = mo.add(%a, %a) : !mo.tensor<[r], f32>
  mo.output %b : !mo.tensor<[r], f32>
}
// CHECK-PRINT:
// mo.graph @control<n, m>(%p: !mo.tensor<[], bool>, %x: !mo.tensor<[n], f32>, %k: !mo.tensor<[], si64>) -> (!mo.tensor<[n], f32>, !mo.tensor<[], si64>, !mo.tensor<[m], f32>) {
//   %y = mo.if(%p, %x) : (!mo.tensor<[], bool>, !mo.tensor<[n], f32>) -> !mo.tensor<[n], f32> {
//     mo.graph @then<n>(%a: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {
//       %b = mo.call @twice(%a) {prefix = "t."} : !mo.tensor<[n], f32>
//       mo.output %b : !mo.tensor<[n], f32>
//     }
//     mo.graph @else<n>(%a: !mo.tensor<[n], f32>) -> (!mo.tensor<[n], f32>) {
//       mo.output %a : !mo.tensor<[n], f32>
//     }
//   }
//   %k1, %z = mo.while(%k, %y) : (!mo.tensor<[], si64>, !mo.tensor<[n], f32>) -> (!mo.tensor<[], si64>, !mo.tensor<[m], f32>) {
//     mo.graph @cond<j>(%i: !mo.tensor<[], si64>, %v: !mo.tensor<[j], f32>) -> (!mo.tensor<[], bool>) {
//       %zero = mo.constant {value = #M.dense_array<0> : tensor<1xsi64>} : !mo.tensor<[], si64>
//       %c = mo.greater(%i, %zero) : (!mo.tensor<[], si64>, !mo.tensor<[], si64>) -> !mo.tensor<[], bool>
//       mo.output %c : !mo.tensor<[], bool>
//     }
//     mo.graph @body<j>(%i: !mo.tensor<[], si64>, %v: !mo.tensor<[j], f32>) -> (!mo.tensor<[], si64>, !mo.tensor<[2 * j], f32>) {
//       %one = mo.constant {value = #M.dense_array<1> : tensor<1xsi64>} : !mo.tensor<[], si64>
//       %i1 = mo.sub(%i, %one) : !mo.tensor<[], si64>
//       %w = mo.concat(%v, %v) {axis = 0} : (!mo.tensor<[j], f32>, !mo.tensor<[j], f32>) -> !mo.tensor<[2 * j], f32>
//       mo.output %i1, %w : !mo.tensor<[], si64>, !mo.tensor<[2 * j], f32>
//     }
//   }
//   mo.output %y, %k1, %z : !mo.tensor<[n], f32>, !mo.tensor<[], si64>, !mo.tensor<[m], f32>
// }
//
// mo.graph @twice<r>(%a: !mo.tensor<[r], f32>) -> (!mo.tensor<[r], f32>) {
//   %b = mo.add(%a, %a) : !mo.tensor<[r], f32>
//   mo.output %b : !mo.tensor<[r], f32>
// }
