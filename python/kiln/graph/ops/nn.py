"""kiln.graph.ops.nn: normalizations, convolutions, pools, resize, fold, pad,
band_part, hann_window, and kiln's roi_align and non_maximum_suppression.

kiln's convolutions and pools take NHWC images and RSCF filters (as MAX's
defaults); the convolutions also take MAX's NCHW input and its other filter
layouts (FCRS, CFRS; FCQRS for conv3d), by permuting around kiln's op. hann_window is composed (range, cos); the others
are one MO op each.
"""

from __future__ import annotations

import enum
import math
from typing import Any, Iterable

from ...dtype import DType
from . import _core
from ..type import ConvInputLayout, FilterLayout
from ..value import TensorValue

__all__ = ["softmax", "logsoftmax", "layer_norm", "conv2d", "conv2d_transpose", "conv3d",
           "max_pool2d", "avg_pool2d", "resize", "InterpolationMode", "ConvInputLayout",
           "FilterLayout", "fold", "pad", "band_part", "hann_window", "roi_align",
           "non_maximum_suppression"]


class InterpolationMode(enum.Enum):
    """resize's interpolation (``max.graph.ops.InterpolationMode``)."""

    BICUBIC = "bicubic"
    BILINEAR = "bilinear"
    NEAREST = "nearest"


def _layout(v: Any) -> str:
    return str(v.value if isinstance(v, enum.Enum) else v).upper()


def _ints(v: Any, n: int | None = None) -> list[int]:
    """An int or a sequence of ints as a list (an int repeated n times when n is given)."""
    if isinstance(v, (int,)) and not isinstance(v, bool):
        return [int(v)] * (n or 1)
    return [int(i) for i in v]


def softmax(x: Any, axis: int = -1) -> TensorValue:
    """exp(x) / sum(exp(x)) along axis (MAX's: the last axis)."""
    v = _core.as_value(x)
    a = _core.normalize_axis(axis, v.rank)
    return _core.add_op1("mo.softmax", [v], None if a == v.rank - 1 else {"axis": a})


def logsoftmax(x: Any, axis: int = -1) -> TensorValue:
    """log(softmax(x)) along axis (MAX's: the last axis)."""
    v = _core.as_value(x)
    a = _core.normalize_axis(axis, v.rank)
    return _core.add_op1("mo.logsoftmax", [v], None if a == v.rank - 1 else {"axis": a})


def layer_norm(input: Any, gamma: Any, beta: Any, epsilon: float) -> TensorValue:
    """(input - mean) / sqrt(var + epsilon) * gamma + beta over the last axis
    (gamma, beta: [last dim])."""
    v = _core.as_value(input)
    return _core.add_op1("mo.layer_norm", [v, _core.as_value(gamma, v), _core.as_value(beta, v)],
                         {"epsilon": float(epsilon)})


def _conv_operands(x: Any, filter: Any, bias: Any) -> list[TensorValue]:
    v = _core.as_value(x)
    ops = [v, _core.as_value(filter, v)]
    if bias is not None:
        ops.append(_core.as_value(bias, v))
    return ops


def _to_kiln_layout(op: str, x: Any, filter: Any, input_layout: Any, filter_layout: Any,
                    spatial: int) -> tuple[Any, Any, bool]:
    """x and filter permuted to kiln's channels-last input and RSCF / QRSCF
    filter; whether the result must go back to channels-first."""
    from .shape import permute

    il, fl = _layout(input_layout), _layout(filter_layout)
    want = "QRSCF" if spatial == 3 else "RSCF"
    if il not in ("NHWC", "NCHW") or sorted(fl) != sorted(want):
        raise ValueError(f"{op}: input layout NHWC or NCHW and a filter layout of the letters "
                         f"{want}, got {il}, {fl}")
    if il == "NCHW":
        x = permute(x, [0] + list(range(2, spatial + 2)) + [1])
    if fl != want:
        filter = permute(filter, [fl.index(c) for c in want])
    return x, filter, il == "NCHW"


def _channels_first(out: TensorValue, spatial: int) -> TensorValue:
    from .shape import permute

    return permute(out, [0, spatial + 1] + list(range(1, spatial + 1)))


def conv2d(x: Any, filter: Any, stride: Any = (1, 1), dilation: Any = (1, 1),
           padding: Any = (0, 0, 0, 0), groups: int = 1, bias: Any = None,
           input_layout: Any = ConvInputLayout.NHWC,
           filter_layout: Any = FilterLayout.RSCF) -> TensorValue:
    """The 2-D convolution of x (NHWC, or NCHW) with filter (RSCF, or FCRS /
    CFRS), plus bias [F]; padding (top, bottom, left, right) of zeros."""
    x, filter, back = _to_kiln_layout("conv2d", x, filter, input_layout, filter_layout, 2)
    attrs = {"stride": _ints(stride, 2), "dilation": _ints(dilation, 2),
             "padding": _ints(padding, 4), "groups": groups}
    out = _core.add_op1("mo.conv2d", _conv_operands(x, filter, bias), attrs)
    return _channels_first(out, 2) if back else out


def conv2d_transpose(x: Any, filter: Any, stride: Any = (1, 1), dilation: Any = (1, 1),
                     padding: Any = (0, 0, 0, 0), output_paddings: Any = (0, 0),
                     bias: Any = None, input_layout: Any = ConvInputLayout.NHWC,
                     filter_layout: Any = FilterLayout.RSCF) -> TensorValue:
    """The transposed 2-D convolution (the gradient of conv2d by its input) of
    x (NHWC, or NCHW) with filter [R, S, F, C] (RSCF, or the same letters in
    another order), plus bias [F]."""
    x, filter, back = _to_kiln_layout("conv2d_transpose", x, filter, input_layout,
                                      filter_layout, 2)
    attrs = {"stride": _ints(stride, 2), "dilation": _ints(dilation, 2),
             "padding": _ints(padding, 4), "output_paddings": _ints(output_paddings, 2)}
    out = _core.add_op1("mo.conv2d_transpose", _conv_operands(x, filter, bias), attrs)
    return _channels_first(out, 2) if back else out


def conv3d(x: Any, filter: Any, stride: Any = (1, 1, 1), dilation: Any = (1, 1, 1),
           padding: Any = (0, 0, 0, 0, 0, 0), groups: int = 1, bias: Any = None,
           input_layout: Any = ConvInputLayout.NHWC,
           filter_layout: Any = FilterLayout.QRSCF) -> TensorValue:
    """The 3-D convolution of x (NDHWC, or NCDHW for ConvInputLayout.NCHW)
    with filter (QRSCF, or FCQRS), plus bias [F]; padding (front, back, top,
    bottom, left, right) of zeros."""
    x, filter, back = _to_kiln_layout("conv3d", x, filter, input_layout, filter_layout, 3)
    attrs = {"stride": _ints(stride, 3), "dilation": _ints(dilation, 3),
             "padding": _ints(padding, 6), "groups": groups}
    out = _core.add_op1("mo.conv3d", _conv_operands(x, filter, bias), attrs)
    return _channels_first(out, 3) if back else out


def _pool_attrs(kernel_size: Any, stride: Any, dilation: Any, padding: Any,
                ceil_mode: bool) -> dict:
    return {"kernel_size": _ints(kernel_size, 2), "stride": _ints(stride),
            "dilation": _ints(dilation), "padding": _ints(padding), "ceil_mode": ceil_mode}


def max_pool2d(input: Any, kernel_size: Any, stride: Any = 1, dilation: Any = 1,
               padding: Any = 0, ceil_mode: bool = False) -> TensorValue:
    """The maximum over each kernel_size window of input (NHWC)."""
    return _core.add_op1("mo.max_pool2d", [input],
                         _pool_attrs(kernel_size, stride, dilation, padding, ceil_mode))


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = 1, dilation: Any = 1,
               padding: Any = 0, ceil_mode: bool = False,
               count_boundary: bool = True) -> TensorValue:
    """The mean over each kernel_size window of input (NHWC); count_boundary:
    padding counts in the divisor."""
    attrs = _pool_attrs(kernel_size, stride, dilation, padding, ceil_mode)
    attrs["count_boundary"] = count_boundary
    return _core.add_op1("mo.avg_pool2d", [input], attrs)


def resize(input: Any, shape: Iterable[Any],
           interpolation: Any = InterpolationMode.BILINEAR) -> TensorValue:
    """input (rank 4, NCHW) resized to shape by interpolation (half-pixel
    coordinates; kiln resizes every axis whose dim changes)."""
    v = _core.as_value(input)
    dims = [_core.dim_text(d) for d in shape]
    if v.rank != 4 or len(dims) != 4:
        raise ValueError(f"resize: input and shape must have rank 4 (NCHW), got {v.rank} "
                         f"and {len(dims)}")
    mode = InterpolationMode(interpolation).value
    return _core.add_op1("mo.resize", [v], {"mode": mode}, _core.tensor_type(v.dtype, dims))


def fold(input: Any, output_size: Any, kernel_size: Any, stride: Any = 1, dilation: Any = 1,
         padding: Any = 0) -> TensorValue:
    """col2im: sliding blocks [N, C * kh * kw, L] summed into [N, C, H, W]
    (output_size (H, W))."""
    v = _core.as_value(input)
    ks = _ints(kernel_size, 2)
    sizes = [_core.static_dim(d) for d in output_size]
    attrs = {"output_size": [-1 if s is None else s for s in sizes], "kernel_size": ks,
             "stride": _ints(stride), "dilation": _ints(dilation), "padding": _ints(padding)}
    if all(s is not None for s in sizes):
        return _core.add_op1("mo.fold", [v], attrs)
    # symbolic H or W: the declared result [N, C, H, W] gives them (kiln
    # checks at run time that the blocks fit)
    n, ckk = v.shape[0], v.shape[1]
    c = ckk // (ks[0] * ks[1])
    dims = [n.to_mlir(), c.to_mlir()] + [_core.dim_text(d) for d in output_size]
    return _core.add_op1("mo.fold", [v], attrs, _core.tensor_type(v.dtype, dims))


def pad(input: Any, paddings: Iterable[int], mode: str = "constant", value: Any = 0) -> TensorValue:
    """input padded by paddings (before, after per axis); mode "constant"
    (with value), or kiln's "reflect" and "edge"."""
    attrs = {"paddings": [int(p) for p in paddings], "mode": mode, "value": float(value)}
    return _core.add_op1("mo.pad", [input], attrs)


def band_part(x: Any, num_lower: int | None = None, num_upper: int | None = None,
              exclude: bool = False) -> TensorValue:
    """x with the elements outside the band of the last two axes (num_lower
    below, num_upper above the diagonal; None: unbounded) set to 0."""
    attrs = {"num_lower": -1 if num_lower is None else int(num_lower),
             "num_upper": -1 if num_upper is None else int(num_upper), "exclude": exclude}
    return _core.add_op1("mo.band_part", [x], attrs)


def hann_window(window_length: int, device: Any = None, periodic: bool = True,
                dtype: DType = DType.float32) -> TensorValue:
    """The Hann window of window_length points, 0.5 - 0.5 cos(2 pi n / N)
    with N = window_length (periodic) or window_length - 1."""
    from .misc import range as range_

    n = int(window_length)
    if n < 0:
        raise ValueError(f"hann_window: window_length must be >= 0, got {n}")
    if n <= 1:
        return _core.constant([1.0] * n, dtype)
    k = range_(0, n, 1, dtype=dtype)
    denom = n if periodic else n - 1
    from .elementwise import cos

    return 0.5 - 0.5 * cos(k * (2.0 * math.pi / denom))


def roi_align(input: Any, rois: Any, output_height: int, output_width: int,
              spatial_scale: float = 1.0, sampling_ratio: int = 0, aligned: bool = False,
              mode: str = "avg") -> TensorValue:
    """Each region of rois [K, 5] (batch index, x1, y1, x2, y2) of input (NHWC)
    pooled to [K, output_height, output_width, C] by bilinear sampling, mode
    "avg" or "max" (kiln's mo.roi_align, ONNX RoiAlign's meaning)."""
    v = _core.as_value(input)
    attrs = {"output_height": int(output_height), "output_width": int(output_width),
             "spatial_scale": float(spatial_scale), "sampling_ratio": int(sampling_ratio),
             "aligned": aligned, "mode": str(mode).lower()}
    return _core.add_op1("mo.roi_align", [v, _core.as_value(rois, v)], attrs)


def non_maximum_suppression(boxes: Any, scores: Any, max_output_boxes_per_class: Any,
                            iou_threshold: Any, score_threshold: Any = None,
                            center_point_box: int = 0, out_dim: Any = "nms") -> TensorValue:
    """The boxes [B, N, 4] kept per batch and class of scores [B, C, N] by
    greedy non-maximum suppression: si64 rows (batch, class, box), [out_dim, 3]
    with out_dim set when the op runs (kiln's mo.non_maximum_suppression, ONNX's)."""
    b = _core.as_value(boxes)
    ops = [b, _core.as_value(scores, b),
           _core.constant(max_output_boxes_per_class, DType.int64, graph=b.graph)
           if not isinstance(max_output_boxes_per_class, TensorValue)
           else max_output_boxes_per_class,
           _core.constant(iou_threshold, b.dtype, graph=b.graph)
           if not isinstance(iou_threshold, TensorValue) else iou_threshold]
    if score_threshold is not None:
        ops.append(score_threshold if isinstance(score_threshold, TensorValue)
                   else _core.constant(score_threshold, b.dtype, graph=b.graph))
    attrs = {"center_point_box": int(center_point_box)} if center_point_box else None
    return _core.add_op1("mo.non_maximum_suppression", ops, attrs,
                         _core.tensor_type(DType.int64, [out_dim, 3]))
