"""kiln.graph.quantization: ``QuantizationEncoding`` and ``QuantizationConfig``,
as ``max.graph.quantization``.

An encoding names GGUF's block layout: groups of ``elements_per_block``
values stored in ``block_size`` bytes (ir/qblock.h has the bit layouts).
``ops.dequantize`` and ``ops.qmatmul`` take one; a quantized weight is a
uint8 tensor of whole blocks, [rows, blocks per row * block_size].
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["BlockParameters", "QuantizationConfig", "QuantizationEncoding"]


@dataclass(frozen=True)
class BlockParameters:
    """How an encoding groups elements: ``elements_per_block`` values in
    ``block_size`` bytes."""

    elements_per_block: int
    block_size: int


# GGUF's block sizes (ggml's type traits)
_BLOCKS = {"Q4_0": (32, 18), "Q8_0": (32, 34), "Q4_K": (256, 144), "Q5_K": (256, 176),
           "Q6_K": (256, 210)}


class QuantizationEncoding(enum.Enum):
    """A quantization encoding. Q4_0, Q8_0, Q4_K, Q5_K and Q6_K are GGUF's
    block types, which kiln computes on; GPTQ is named (MAX has it) but kiln
    has no kernels for it, and the ops refuse it."""

    Q4_0 = "Q4_0"
    Q8_0 = "Q8_0"
    Q4_K = "Q4_K"
    Q5_K = "Q5_K"
    Q6_K = "Q6_K"
    GPTQ = "GPTQ"

    @property
    def block_parameters(self) -> BlockParameters:
        """Elements per block and bytes per block (ValueError for GPTQ,
        which has no fixed block)."""
        if self.value not in _BLOCKS:
            raise ValueError(f"{self.value} has no fixed block size")
        return BlockParameters(*_BLOCKS[self.value])

    @property
    def block_size(self) -> int:
        """Bytes of one encoded block."""
        return self.block_parameters.block_size

    @property
    def elements_per_block(self) -> int:
        """Values in one block."""
        return self.block_parameters.elements_per_block

    @property
    def is_gguf(self) -> bool:
        """Whether GGUF files store this encoding."""
        return self.value in _BLOCKS

    @property
    def name(self) -> str:  # type: ignore[override]
        """The encoding's name in lower case ("q4_k"), as kiln's MO text spells it."""
        return self.value.lower()


@dataclass
class QuantizationConfig:
    """GPTQ's parameters (``max.graph.quantization.QuantizationConfig``);
    kiln's ops take the GGUF encodings only, so a config is refused."""

    quant_method: str
    bits: int
    group_size: int
    desc_act: bool = False
    sym: bool = False
