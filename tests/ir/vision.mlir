// The vision ops of issue 17: mo.pad in its three modes, the pools with
// their window attributes, mo.conv2d (NHWC, RSCF, groups, bias) and
// mo.conv2d_transpose; symbolic batch and height.
mo.graph @vision<n, h>(%x: !mo.tensor<[n, h, 8, 4], f32>, %w: !mo.tensor<[3, 3, 2, 6], f32>,
                       %b: !mo.tensor<[6], f32>, %v: !mo.tensor<[2, 2, 3, 4], f32>)
    -> (!mo.tensor<[n, h + 3, 8, 4], f32>, !mo.tensor<[n, h, 10, 4], f32>,
        !mo.tensor<[n, (h - 1) floordiv 2 + 1, 4, 4], f32>, !mo.tensor<[n, h - 1, 7, 4], f32>,
        !mo.tensor<[n, h, 8, 6], f32>, !mo.tensor<[n, 2 * h, 16, 3], f32>) {
  %p = mo.pad(%x) {paddings = [0, 0, 1, 2, 0, 0, 0, 0], value = 1.5} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, h + 3, 8, 4], f32>
  %r = mo.pad(%x) {mode = "reflect", paddings = [0, 0, 0, 0, 1, 1, 0, 0]} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, h, 10, 4], f32>
  %m = mo.max_pool2d(%x) {kernel_size = [3, 3], stride = [2, 2], padding = [1], ceil_mode = false} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, (h - 1) floordiv 2 + 1, 4, 4], f32>
  %a = mo.avg_pool2d(%x) {kernel_size = [2, 2], count_boundary = false} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, h - 1, 7, 4], f32>
  %c = mo.conv2d(%x, %w, %b) {padding = [1, 1, 1, 1], groups = 2} : (!mo.tensor<[n, h, 8, 4], f32>, !mo.tensor<[3, 3, 2, 6], f32>, !mo.tensor<[6], f32>) -> !mo.tensor<[n, h, 8, 6], f32>
  %t = mo.conv2d_transpose(%x, %v) {stride = [2, 2]} : (!mo.tensor<[n, h, 8, 4], f32>, !mo.tensor<[2, 2, 3, 4], f32>) -> !mo.tensor<[n, 2 * h, 16, 3], f32>
  mo.output %p, %r, %m, %a, %c, %t : !mo.tensor<[n, h + 3, 8, 4], f32>, !mo.tensor<[n, h, 10, 4], f32>,
      !mo.tensor<[n, (h - 1) floordiv 2 + 1, 4, 4], f32>, !mo.tensor<[n, h - 1, 7, 4], f32>,
      !mo.tensor<[n, h, 8, 6], f32>, !mo.tensor<[n, 2 * h, 16, 3], f32>
}
// CHECK-PRINT:
// mo.graph @vision<n, h>(%x: !mo.tensor<[n, h, 8, 4], f32>, %w: !mo.tensor<[3, 3, 2, 6], f32>, %b: !mo.tensor<[6], f32>, %v: !mo.tensor<[2, 2, 3, 4], f32>) -> (!mo.tensor<[n, h + 3, 8, 4], f32>, !mo.tensor<[n, h, 10, 4], f32>, !mo.tensor<[n, (h - 1) floordiv 2 + 1, 4, 4], f32>, !mo.tensor<[n, h - 1, 7, 4], f32>, !mo.tensor<[n, h, 8, 6], f32>, !mo.tensor<[n, 2 * h, 16, 3], f32>) {
//   %p = mo.pad(%x) {paddings = [0, 0, 1, 2, 0, 0, 0, 0], value = 1.5} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, h + 3, 8, 4], f32>
//   %r = mo.pad(%x) {mode = "reflect", paddings = [0, 0, 0, 0, 1, 1, 0, 0]} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, h, 10, 4], f32>
//   %m = mo.max_pool2d(%x) {ceil_mode = false, kernel_size = [3, 3], padding = [1], stride = [2, 2]} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, (h - 1) floordiv 2 + 1, 4, 4], f32>
//   %a = mo.avg_pool2d(%x) {count_boundary = false, kernel_size = [2, 2]} : (!mo.tensor<[n, h, 8, 4], f32>) -> !mo.tensor<[n, h - 1, 7, 4], f32>
//   %c = mo.conv2d(%x, %w, %b) {groups = 2, padding = [1, 1, 1, 1]} : (!mo.tensor<[n, h, 8, 4], f32>, !mo.tensor<[3, 3, 2, 6], f32>, !mo.tensor<[6], f32>) -> !mo.tensor<[n, h, 8, 6], f32>
//   %t = mo.conv2d_transpose(%x, %v) {stride = [2, 2]} : (!mo.tensor<[n, h, 8, 4], f32>, !mo.tensor<[2, 2, 3, 4], f32>) -> !mo.tensor<[n, 2 * h, 16, 3], f32>
//   mo.output %p, %r, %m, %a, %c, %t : !mo.tensor<[n, h + 3, 8, 4], f32>, !mo.tensor<[n, h, 10, 4], f32>, !mo.tensor<[n, (h - 1) floordiv 2 + 1, 4, 4], f32>, !mo.tensor<[n, h - 1, 7, 4], f32>, !mo.tensor<[n, h, 8, 6], f32>, !mo.tensor<[n, 2 * h, 16, 3], f32>
// }
