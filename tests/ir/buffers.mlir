// A KV-cache append: the new rows go to the cache at start, the whole cache is read back.
mo.graph @kv<n>(%cache: !mo.buffer<[2, 8, 3], f32>, %new: !mo.tensor<[2, n, 3], f32>, %start: !mo.tensor<[3], si64>) -> (!mo.tensor<[2, 8, 3], f32>) {
  %c0 = mo.chain.create() : !mo.chain
  %c1 = mo.mutable.store.slice(%cache, %new, %start, %c0) : (!mo.buffer<[2, 8, 3], f32>, !mo.tensor<[2, n, 3], f32>, !mo.tensor<[3], si64>, !mo.chain) -> !mo.chain
  %all, %c2 = mo.mutable.load(%cache, %c1) : (!mo.buffer<[2, 8, 3], f32>, !mo.chain) -> (!mo.tensor<[2, 8, 3], f32>, !mo.chain)
  %b = mo.buffer.create() : !mo.buffer<[n], si32>
  %v, %c3 = mo.mutable.load(%b, %c2) : (!mo.buffer<[n], si32>, !mo.chain) -> (!mo.tensor<[n], si32>, !mo.chain)
  mo.output %all : !mo.tensor<[2, 8, 3], f32>
}
// CHECK-PRINT:
// mo.graph @kv<n>(%cache: !mo.buffer<[2, 8, 3], f32>, %new: !mo.tensor<[2, n, 3], f32>, %start: !mo.tensor<[3], si64>) -> (!mo.tensor<[2, 8, 3], f32>) {
//   %c0 = mo.chain.create : !mo.chain
//   %c1 = mo.mutable.store.slice(%cache, %new, %start, %c0) : (!mo.buffer<[2, 8, 3], f32>, !mo.tensor<[2, n, 3], f32>, !mo.tensor<[3], si64>, !mo.chain) -> !mo.chain
//   %all, %c2 = mo.mutable.load(%cache, %c1) : (!mo.buffer<[2, 8, 3], f32>, !mo.chain) -> (!mo.tensor<[2, 8, 3], f32>, !mo.chain)
//   %b = mo.buffer.create : !mo.buffer<[n], si32>
//   %v, %c3 = mo.mutable.load(%b, %c2) : (!mo.buffer<[n], si32>, !mo.chain) -> (!mo.tensor<[n], si32>, !mo.chain)
//   mo.output %all : !mo.tensor<[2, 8, 3], f32>
// }
