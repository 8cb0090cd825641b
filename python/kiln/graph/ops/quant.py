"""kiln.graph.ops.quant: dequantize and qmatmul over GGUF block encodings
(kiln's mo.dequantize / mo.qmatmul; ir/ops.def states their meaning).

qmatmul(encoding, config, lhs, rhs) is MAX's dequantize(quantize(lhs) @
transpose(rhs)): rhs is the quantized weight as stored, [N, K / elements *
block_size] uint8, and the result [..., N] float32.
"""

from __future__ import annotations

from typing import Any

from ... import _kiln
from . import _core
from ..quantization import QuantizationConfig, QuantizationEncoding
from ..value import TensorValue

__all__ = ["dequantize", "qmatmul"]


def _encoding(op: str, encoding: Any) -> str:
    enc = QuantizationEncoding(encoding)  # a member, or its value ("Q4_0")
    if not enc.is_gguf:
        raise _kiln.UnsupportedError(f"{op}: kiln has no kernels for {enc.value} "
                                     "(it computes Q4_0, Q8_0, Q4_K, Q5_K and Q6_K)")
    return enc.name


def dequantize(encoding: QuantizationEncoding, quantized: Any) -> TensorValue:
    """The float32 values of a quantized tensor: [..., B] uint8 of whole
    blocks -> [..., B / block_size * elements_per_block]."""
    return _core.add_op1("mo.dequantize", [quantized],
                         {"encoding": _encoding("dequantize", encoding)})


def qmatmul(encoding: QuantizationEncoding, config: QuantizationConfig | None, lhs: Any,
            *rhs: Any) -> TensorValue:
    """lhs [..., K] float32 times the transposed quantized weight rhs [N, K /
    elements_per_block * block_size] (uint8): lhs quantized per block to
    Q8_0 (Q4_0, Q8_0 weights) or Q8_K (the K-quants), integer block dots,
    scaled in float32; result [..., N]. config (GPTQ's) is refused, as is
    more than one rhs tensor (GPTQ's auxiliary ones)."""
    name = _encoding("qmatmul", encoding)
    if config is not None:
        raise _kiln.UnsupportedError("qmatmul: kiln takes no QuantizationConfig (GPTQ)")
    if len(rhs) != 1:
        raise ValueError(f"qmatmul: expected one quantized rhs tensor, got {len(rhs)}")
    return _core.add_op1("mo.qmatmul", [lhs, rhs[0]], {"encoding": name})
