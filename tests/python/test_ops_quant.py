"""ops.dequantize and ops.qmatmul from Python on GGUF blocks written here in
numpy (Q8_0: an f16 scale d and 32 int8 q, value q * d; Q4_0: d and 32
nibbles, the low ones first, value (nibble - 8) * d), and
kiln.graph.quantization's encodings."""

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, Weight, ops
from kiln.graph.quantization import QuantizationConfig, QuantizationEncoding as QE


def quantize(enc: QE, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """w [N, K] -> (blocks uint8 [N, K / 32 * block_size], their exact values)."""
    n, k = w.shape
    b = w.reshape(n, k // 32, 32)
    amax = np.abs(b).max(axis=-1)
    levels = 127 if enc is QE.Q8_0 else 8
    d = (amax / levels).astype(np.float16)
    df = d.astype(np.float32)[..., None]
    safe = np.where(df == 0, 1, df)
    if enc is QE.Q8_0:
        q = np.clip(np.rint(b / safe), -127, 127).astype(np.int8)
        body = q.view(np.uint8)
        values = q.astype(np.float32) * df
    else:
        q = np.clip(np.rint(b / safe) + 8, 0, 15).astype(np.uint8)
        body = q[..., :16] | (q[..., 16:] << 4)
        values = (q.astype(np.float32) - 8) * df
    blocks = np.concatenate([d[..., None].view(np.uint8), body], axis=-1)
    assert blocks.shape[-1] == enc.block_size
    return blocks.reshape(n, -1), values.reshape(n, k)


@pytest.mark.parametrize("enc", [QE.Q8_0, QE.Q4_0])
def test_qmatmul_and_dequantize_of_numpy_blocks(enc: QE) -> None:
    rng = np.random.default_rng(7)
    n, k = 24, 128
    blocks, values = quantize(enc, rng.standard_normal((n, k)).astype(np.float32))
    w = Weight("w", DType.uint8, list(blocks.shape), quantization_encoding=enc)
    with Graph("q", input_types=[TensorType(DType.float32, ["m", k])]) as g:
        x = g.inputs[0]
        g.output(ops.qmatmul(enc, None, x, w), ops.dequantize(enc, w))
    model = InferenceSession(cache_dir=None).load(g, weights_registry={"w": blocks})
    for m in (1, 5):
        xs = rng.standard_normal((m, k)).astype(np.float32)
        y, deq = (t.to_numpy() for t in model.execute(xs))
        np.testing.assert_array_equal(deq, values)  # the blocks' exact values
        # the lhs is quantized per block of 32 to Q8_0: within half a step of
        # amax / 127 per element (plus the f16 scale's rounding)
        xb = np.abs(xs.reshape(m, k // 32, 32)).max(axis=-1)
        bound = 0.6 / 127 * np.einsum("mb,nb->mn", xb, np.abs(values).reshape(n, k // 32, 32)
                                      .sum(axis=-1))
        assert y.shape == (m, n)
        assert np.all(np.abs(y - xs @ values.T) <= bound + 1e-4)


def test_encodings_as_max_names_them() -> None:
    assert (QE.Q4_K.elements_per_block, QE.Q4_K.block_size) == (256, 144)
    assert QE.Q6_K.block_parameters.block_size == 210 and QE.Q4_0.name == "q4_0"
    assert QE.Q8_0.is_gguf and not QE.GPTQ.is_gguf
    with pytest.raises(ValueError):
        QE.GPTQ.block_size


def test_what_kiln_cannot_compute_is_refused_by_name() -> None:
    w = Weight("w", DType.uint8, [4, 18], quantization_encoding=QE.Q4_0)
    with Graph("q", input_types=[TensorType(DType.float32, [2, 32])]) as g:
        with pytest.raises(kiln.UnsupportedError, match="GPTQ"):
            ops.qmatmul(QE.GPTQ, None, g.inputs[0], w)
        with pytest.raises(kiln.UnsupportedError, match="QuantizationConfig"):
            ops.qmatmul(QE.Q4_0, QuantizationConfig("gptq", 4, 128), g.inputs[0], w)
        with pytest.raises(kiln.KilnError, match="qmatmul"):  # K not a multiple of 32
            ops.qmatmul(QE.Q4_0, None, ops.reshape(g.inputs[0], [4, 16]), w)
    with pytest.raises(ValueError, match="uint8"):
        Weight("w", DType.float32, [4, 18], quantization_encoding=QE.Q4_0)


def test_fence_passes_its_values_through() -> None:
    with Graph("f", input_types=[TensorType(DType.float32, [3])] * 2) as g:
        a, b = ops.fence(*g.inputs)
        g.output(ops.add(a, b))
    model = InferenceSession(cache_dir=None).load(g)
    (y,) = model.execute(np.ones(3, np.float32), np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(y.to_numpy(), [1, 2, 3])
