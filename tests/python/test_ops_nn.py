"""kiln.graph.ops nn ops against numpy: softmax / logsoftmax, layer_norm,
conv2d (layouts, groups, stride, dilation, padding, bias), conv2d_transpose,
conv3d, pools, resize, fold, pad, band_part and hann_window."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import TensorType, ops

RNG = np.random.default_rng(2)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_logsoftmax(run, axis):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    s, ls = run(lambda v: [ops.softmax(v, axis), ops.logsoftmax(v, axis)], x)
    np.testing.assert_allclose(s, _softmax(x, axis), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ls, np.log(_softmax(x, axis)), rtol=1e-5, atol=1e-5)


def test_softmax_symbolic_f64(build):
    model = build(ops.softmax, [TensorType(DType.float64, ["batch", 5])])
    for n in (1, 3):
        x = RNG.standard_normal((n, 5))
        np.testing.assert_allclose(model.execute(x)[0].to_numpy(), _softmax(x, -1), rtol=1e-12)


def test_layer_norm(run):
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    g = RNG.standard_normal(8).astype(np.float32)
    b = RNG.standard_normal(8).astype(np.float32)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
    out = run(lambda v, gv, bv: ops.layer_norm(v, gv, bv, 1e-5), x, g, b)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def test_layer_norm_wrong_gamma_shape(build):
    t = [TensorType(DType.float32, [3, 8]), TensorType(DType.float32, [4]),
         TensorType(DType.float32, [8])]
    with pytest.raises(kiln.KilnError, match="layer_norm"):
        build(lambda v, g, b: ops.layer_norm(v, g, b, 1e-5), t)


def _conv2d_ref(x, w, stride, dil, pad, groups, bias=None):
    n, h, wd, c = x.shape
    r, s, cg, f = w.shape
    x = np.pad(x, [(0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)])
    ho = (x.shape[1] - dil[0] * (r - 1) - 1) // stride[0] + 1
    wo = (x.shape[2] - dil[1] * (s - 1) - 1) // stride[1] + 1
    out = np.zeros((n, ho, wo, f), np.float64)
    fg = f // groups
    for gi in range(groups):
        for i in range(ho):
            for j in range(wo):
                patch = x[:, i * stride[0]:i * stride[0] + dil[0] * (r - 1) + 1:dil[0],
                          j * stride[1]:j * stride[1] + dil[1] * (s - 1) + 1:dil[1],
                          gi * cg:(gi + 1) * cg]
                out[:, i, j, gi * fg:(gi + 1) * fg] = np.einsum(
                    "nrsc,rscf->nf", patch, w[..., gi * fg:(gi + 1) * fg])
    return out + (0 if bias is None else bias)


CONV = {"plain": ((1, 1), (1, 1), (0, 0, 0, 0), 1), "stride_pad": ((2, 2), (1, 1), (1, 1, 1, 1), 1),
        "dilation": ((1, 1), (2, 2), (0, 1, 2, 0), 1), "groups": ((1, 2), (1, 1), (1, 0, 0, 1), 2)}


@pytest.mark.parametrize("case", list(CONV))
def test_conv2d_nhwc_rscf(run, case):
    stride, dil, pad, groups = CONV[case]
    x = RNG.standard_normal((2, 6, 7, 4)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 4 // groups, 6)).astype(np.float32)
    bias = RNG.standard_normal(6).astype(np.float32)
    out = run(lambda v, wv, bv: ops.conv2d(v, wv, stride, dil, pad, groups, bv), x, w, bias)
    np.testing.assert_allclose(out, _conv2d_ref(x, w, stride, dil, pad, groups, bias),
                               rtol=1e-4, atol=1e-4)


def test_conv2d_nchw_fcrs(run):
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)  # NCHW
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)  # FCRS
    out = run(lambda v, wv: ops.conv2d(v, wv, padding=(1, 1, 1, 1), input_layout="NCHW",
                                       filter_layout=ops.FilterLayout.FCRS), x, w)
    ref = _conv2d_ref(x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), (1, 1), (1, 1),
                      (1, 1, 1, 1), 1).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv2d_channel_mismatch(build):
    t = [TensorType(DType.float32, [1, 5, 5, 3]), TensorType(DType.float32, [3, 3, 4, 2])]
    with pytest.raises(kiln.KilnError, match="conv2d"):
        build(ops.conv2d, t)


def test_conv2d_transpose(run):
    x = RNG.standard_normal((1, 3, 4, 2)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 5, 2)).astype(np.float32)  # [R, S, F, C]
    stride = (2, 1)
    out = run(lambda v, wv: ops.conv2d_transpose(v, wv, stride=stride), x, w)
    ho, wo = (3 - 1) * 2 + 3, (4 - 1) * 1 + 2
    ref = np.zeros((1, ho, wo, 5))
    for ih in range(3):
        for iw in range(4):
            for r in range(3):
                for s in range(2):
                    ref[0, ih * 2 + r, iw + s] += w[r, s] @ x[0, ih, iw]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv3d(run):
    x = RNG.standard_normal((1, 3, 4, 4, 2)).astype(np.float32)
    w = RNG.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)
    out = run(ops.conv3d, x, w)
    ref = np.zeros((1, 2, 3, 3, 3))
    for d in range(2):
        for i in range(3):
            for j in range(3):
                ref[0, d, i, j] = np.einsum("qrsc,qrscf->f", x[0, d:d + 2, i:i + 2, j:j + 2], w)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv_layouts_are_permutations_of_the_default(run):
    """NCHW input and every other filter layout give the default layouts'
    result on the permuted arrays, for conv2d, conv2d_transpose and conv3d."""
    x4 = RNG.standard_normal((1, 4, 5, 2)).astype(np.float32)  # NHWC
    w4 = RNG.standard_normal((3, 2, 2, 3)).astype(np.float32)  # RSCF
    wt = RNG.standard_normal((3, 2, 3, 2)).astype(np.float32)  # conv2d_transpose's [R, S, F, C]
    x5 = RNG.standard_normal((1, 3, 4, 4, 2)).astype(np.float32)  # NDHWC
    w5 = RNG.standard_normal((2, 2, 2, 2, 3)).astype(np.float32)  # QRSCF
    cases = [(ops.conv2d, x4, w4, "RSCF", ["FCRS", "CFRS"]),
             (ops.conv2d_transpose, x4, wt, "RSCF", ["FCRS", "CFRS"]),
             (ops.conv3d, x5, w5, "QRSCF", ["FCQRS"])]
    for op, x, w, base, others in cases:
        want = run(lambda v, wv: op(v, wv), x, w)
        sp = x.ndim - 2
        xf = x.transpose([0, sp + 1] + list(range(1, sp + 1)))  # channels first
        for fl in others:
            wl = w.transpose([base.index(c) for c in fl])
            got = run(lambda v, wv: op(v, wv, input_layout=ops.ConvInputLayout.NCHW,
                                       filter_layout=fl), xf, wl)
            back = got.transpose([0] + list(range(2, sp + 2)) + [1])
            np.testing.assert_allclose(back, want, rtol=1e-5, atol=1e-5, err_msg=fl)
    with pytest.raises(ValueError, match="QRSCF"):
        run(lambda v, wv: ops.conv3d(v, wv, filter_layout="FCRS"), x5, w5)


def _pool_ref(x, k, s, fn):
    n, h, w, c = x.shape
    ho, wo = (h - k) // s + 1, (w - k) // s + 1
    return np.stack([np.stack([fn(x[:, i * s:i * s + k, j * s:j * s + k], axis=(1, 2))
                               for j in range(wo)], 1) for i in range(ho)], 1)


@pytest.mark.parametrize("k,s", [(2, 2), (3, 1)])
def test_pools(run, k, s):
    x = RNG.standard_normal((2, 5, 6, 3)).astype(np.float32)
    mx, av = run(lambda v: [ops.max_pool2d(v, (k, k), s), ops.avg_pool2d(v, (k, k), s)], x)
    np.testing.assert_allclose(mx, _pool_ref(x, k, s, np.max), rtol=1e-6)
    np.testing.assert_allclose(av, _pool_ref(x, k, s, np.mean), rtol=1e-5, atol=1e-6)


def test_avg_pool_padding_count_boundary(run):
    x = np.ones((1, 2, 2, 1), np.float32)
    a, b = run(lambda v: [ops.avg_pool2d(v, (2, 2), 1, padding=1),
                          ops.avg_pool2d(v, (2, 2), 1, padding=1, count_boundary=False)], x)
    np.testing.assert_allclose(a[0, :, :, 0], [[.25, .5, .25], [.5, 1, .5], [.25, .5, .25]])
    np.testing.assert_allclose(b, np.ones((1, 3, 3, 1)))


def test_resize_nearest_and_bilinear(run):
    x = RNG.standard_normal((1, 2, 3, 3)).astype(np.float32)
    near, same, lin = run(lambda v: [
        ops.resize(v, [1, 2, 6, 9], ops.InterpolationMode.NEAREST),
        ops.resize(v, [1, 2, 3, 3]), ops.resize(v, [1, 2, 6, 6], "bilinear")], x)
    np.testing.assert_array_equal(near, x.repeat(2, 2).repeat(3, 3))
    np.testing.assert_allclose(same, x, rtol=1e-6)
    # half-pixel bilinear, edges clamped: corners and the mean are those of x
    np.testing.assert_allclose(lin[..., 0, 0], x[..., 0, 0], rtol=1e-5)
    np.testing.assert_allclose(lin.mean((2, 3)), x.mean((2, 3)), rtol=1e-4, atol=1e-5)


def test_resize_rank_error():
    from kiln.graph import Graph

    with Graph("bad", input_types=[TensorType(DType.float32, [2, 3])]) as g:
        with pytest.raises(ValueError, match="rank 4"):
            ops.resize(g.inputs[0], [4, 6])


def test_fold(run):
    # unfold a 1x1x3x3 image with a 2x2 kernel by hand, fold it back: overlaps add
    img = np.arange(9, dtype=np.float32).reshape(3, 3)
    cols = np.stack([img[i:i + 2, j:j + 2].reshape(-1) for i in range(2) for j in range(2)], -1)
    out = run(lambda v: ops.fold(v, (3, 3), (2, 2)), cols[None])
    count = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]], np.float32)
    np.testing.assert_array_equal(out[0, 0], img * count)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad(run, mode):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    kw = {"constant_values": 7} if mode == "constant" else {}
    out = run(lambda v: ops.pad(v, [1, 0, 2, 1], mode, 7), x)
    np.testing.assert_array_equal(out, np.pad(x, [(1, 0), (2, 1)], mode, **kw))


@pytest.mark.parametrize("lo,up,exclude", [(0, None, False), (None, 0, False), (1, 1, False),
                                           (0, 0, True)])
def test_band_part(run, lo, up, exclude):
    x = RNG.standard_normal((2, 4, 4)).astype(np.float32)
    m, n = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    keep = ((lo is None) | (m - n <= (lo or 0))) & ((up is None) | (n - m <= (up or 0)))
    if exclude:
        keep = ~keep
    np.testing.assert_array_equal(run(lambda v: ops.band_part(v, lo, up, exclude), x),
                                  np.where(keep, x, 0))


@pytest.mark.parametrize("periodic", [True, False])
def test_hann_window(run, periodic):
    ref = np.hanning(9)[:-1] if periodic else np.hanning(8)
    out = run(lambda v: ops.hann_window(8, None, periodic) + v, np.zeros(8, np.float32))
    np.testing.assert_allclose(out, ref, atol=1e-6)


def test_roi_align_constant_image(run):
    x = np.full((1, 6, 6, 2), 3.0, np.float32)
    x[..., 1] = 5.0
    rois = np.array([[0, 1, 1, 4, 4], [0, 0, 0, 2, 5]], np.float32)
    out = run(lambda v, r: ops.roi_align(v, r, 2, 3, sampling_ratio=2), x, rois)
    assert out.shape == (2, 2, 3, 2)
    np.testing.assert_allclose(out[..., 0], 3.0, rtol=1e-6)
    np.testing.assert_allclose(out[..., 1], 5.0, rtol=1e-6)


def test_non_maximum_suppression(build):
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3], [5, 5, 6, 6]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7, 0.1]]], np.float32)
    model = build(lambda b, s: ops.non_maximum_suppression(b, s, 10, 0.5, 0.2),
                  [TensorType(DType.float32, [1, 4, 4]), TensorType(DType.float32, [1, 1, 4])])
    out = model.execute(boxes, scores)[0].to_numpy()
    np.testing.assert_array_equal(out, [[0, 0, 0], [0, 0, 2]])


def test_fold_symbolic_output_size(build):
    # columns of a 2x2 kernel folded into [1, 1, h, 3], h set by the second input
    model = build(lambda v, m: ops.fold(v, ("h", 3), (2, 2)) + m,
                  [TensorType(DType.float32, [1, 4, "blocks"]),
                   TensorType(DType.float32, [1, 1, "h", 3])])
    assert model.output_metadata[0].dims == ["1", "1", "h", "3"]
    for h in (3, 4):
        img = np.arange(h * 3, dtype=np.float32).reshape(h, 3)
        cols = np.stack([img[i:i + 2, j:j + 2].reshape(-1) for i in range(h - 1)
                         for j in range(2)], -1)
        count = np.ones((h, 3), np.float32)
        count[1:-1] *= 2
        count[:, 1] *= 2
        m = np.full((1, 1, h, 3), 0.5, np.float32)
        (y,) = model.execute(cols[None], m)
        np.testing.assert_array_equal(y.to_numpy()[0, 0], img * count + 0.5)
    with pytest.raises(kiln.KilnError):  # 5 blocks do not fit h = 3
        model.execute(np.zeros((1, 4, 5), np.float32), np.zeros((1, 1, 3, 3), np.float32))
