"""kiln.graph.ops.irfft against numpy.fft.irfft: default and given n (odd,
even, powers of two, truncating and padding), axes, the three
normalizations (as strings and as Normalization), complex input, f64, and
bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import TensorType, ops

RNG = np.random.default_rng(7)
X = RNG.uniform(-1, 1, (3, 9, 4)).astype(np.float32)
C = RNG.uniform(-1, 1, (3, 9, 2)).astype(np.float32)


@pytest.mark.parametrize("n", [None, 16, 7, 8, 1, 20])
@pytest.mark.parametrize("axis", [1, -1, 0])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_irfft_real_matches_numpy(run, n, axis, norm):
    out = run(lambda v: ops.irfft(v, n=n, axis=axis, normalization=norm), X)
    want = np.fft.irfft(X.astype(np.float64), n=n, axis=axis, norm=norm)
    assert out.dtype == np.float32 and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [None, 16, 5])
@pytest.mark.parametrize("norm", list(ops.Normalization))
def test_irfft_complex_input(run, n, norm):
    out = run(lambda v: ops.irfft(v, n=n, axis=-1, normalization=norm, input_is_complex=True), C)
    z = C[..., 0].astype(np.float64) + 1j * C[..., 1]
    np.testing.assert_allclose(out, np.fft.irfft(z, n=n, axis=-1, norm=norm.value), rtol=1e-5,
                               atol=1e-6)


def test_irfft_f64(run):
    x = X.astype(np.float64)
    out = run(lambda v: ops.irfft(v, n=32, axis=1), x)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, np.fft.irfft(x, n=32, axis=1), rtol=1e-12, atol=1e-12)


def test_irfft_bad_arguments(build):
    f32 = TensorType(DType.float32, [5])
    with pytest.raises(kiln.VerifyError, match="normalization 'sideways'"):
        build(lambda v: ops.irfft(v, normalization="sideways"), [f32])
    with pytest.raises(kiln.VerifyError, match="n = 0 must be at least 1"):
        build(lambda v: ops.irfft(v, n=0), [f32])
    with pytest.raises(IndexError, match="axis 1 is out of range for rank 1"):
        build(lambda v: ops.irfft(v, axis=1), [f32])
    with pytest.raises(kiln.VerifyError, match="input_is_complex needs a last dim of 2"):
        build(lambda v: ops.irfft(v, input_is_complex=True), [f32])
