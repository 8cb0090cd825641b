// mo.masked_scatter (out_dim left out and given), mo.shape_to_tensor, mo.split
// with sizes from its declared result types (none given, and -1 beside a
// static size), mo.constant.external with align and is_placeholder.
mo.graph @masked<n, k>(%x: !mo.tensor<[n, 4], f32>, %m: !mo.tensor<[4], bool>,
    %u: !mo.tensor<[k], f32>) -> (!mo.tensor<[n, 4], f32>, !mo.tensor<[n, 4], f32>,
    !mo.tensor<[2], si64>, !mo.tensor<[n, 1], f32>, !mo.tensor<[n, 3], f32>,
    !mo.tensor<[n, 4], f32>) {
  %a = mo.masked_scatter(%x, %m, %u) : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], bool>, !mo.tensor<[k], f32>) -> !mo.tensor<[n, 4], f32>
  %b = mo.masked_scatter(%x, %m, %u) {out_dim = "d"} : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], bool>, !mo.tensor<[k], f32>) -> !mo.tensor<[n, 4], f32>
  %s = mo.shape_to_tensor(%x) : (!mo.tensor<[n, 4], f32>) -> !mo.tensor<[2], si64>
  %p, %q = mo.split(%x) {axis = 1} : (!mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 1], f32>, !mo.tensor<[n, 3], f32>)
  %r:2 = mo.split(%x) {axis = 0, split_sizes = [-1, 0]} : (!mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 4], f32>, !mo.tensor<[0, 4], f32>)
  %w = mo.constant.external {align = 64, is_placeholder = true, name = "w"} : !mo.tensor<[4], f32>
  %y = mo.add(%r#0, %w) : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], f32>) -> !mo.tensor<[n, 4], f32>
  mo.output %a, %b, %s, %p, %q, %y : !mo.tensor<[n, 4], f32>, !mo.tensor<[n, 4], f32>,
      !mo.tensor<[2], si64>, !mo.tensor<[n, 1], f32>, !mo.tensor<[n, 3], f32>,
      !mo.tensor<[n, 4], f32>
}
// CHECK-PRINT:
// mo.graph @masked<n, k>(%x: !mo.tensor<[n, 4], f32>, %m: !mo.tensor<[4], bool>, %u: !mo.tensor<[k], f32>) -> (!mo.tensor<[n, 4], f32>, !mo.tensor<[n, 4], f32>, !mo.tensor<[2], si64>, !mo.tensor<[n, 1], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 4], f32>) {
//   %a = mo.masked_scatter(%x, %m, %u) : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], bool>, !mo.tensor<[k], f32>) -> !mo.tensor<[n, 4], f32>
//   %b = mo.masked_scatter(%x, %m, %u) {out_dim = "d"} : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], bool>, !mo.tensor<[k], f32>) -> !mo.tensor<[n, 4], f32>
//   %s = mo.shape_to_tensor(%x) : (!mo.tensor<[n, 4], f32>) -> !mo.tensor<[2], si64>
//   %p, %q = mo.split(%x) {axis = 1} : (!mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 1], f32>, !mo.tensor<[n, 3], f32>)
//   %r#0, %r#1 = mo.split(%x) {axis = 0, split_sizes = [-1, 0]} : (!mo.tensor<[n, 4], f32>) -> (!mo.tensor<[n, 4], f32>, !mo.tensor<[0, 4], f32>)
//   %w = mo.constant.external {align = 64, is_placeholder = true, name = "w"} : !mo.tensor<[4], f32>
//   %y = mo.add(%r#0, %w) : (!mo.tensor<[n, 4], f32>, !mo.tensor<[4], f32>) -> !mo.tensor<[n, 4], f32>
//   mo.output %a, %b, %s, %p, %q, %y : !mo.tensor<[n, 4], f32>, !mo.tensor<[n, 4], f32>, !mo.tensor<[2], si64>, !mo.tensor<[n, 1], f32>, !mo.tensor<[n, 3], f32>, !mo.tensor<[n, 4], f32>
// }
