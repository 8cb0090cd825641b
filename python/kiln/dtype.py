"""kiln.dtype: element types, as ``max.dtype``.

``DType`` has MAX's member names and values; each maps to kiln's own dtype
number (``DType._kiln``), to numpy (``to_numpy`` / ``from_numpy``) and to
DLPack's type codes (``to_dlpack`` / ``from_dlpack``).
"""

from __future__ import annotations

import builtins
import enum

import numpy as np

__all__ = ["DType"]

# name: (MAX value, kiln number, numpy dtype or None, DLPack (code, bits) or None)
_TABLE = {
    "bool": (1, 0, np.bool_, (6, 8)),
    "int8": (135, 1, np.int8, (0, 8)),
    "int16": (137, 2, np.int16, (0, 16)),
    "int32": (139, 3, np.int32, (0, 32)),
    "int64": (141, 4, np.int64, (0, 64)),
    "uint8": (134, 5, np.uint8, (1, 8)),
    "uint16": (136, 6, np.uint16, (1, 16)),
    "uint32": (138, 7, np.uint32, (1, 32)),
    "uint64": (140, 8, np.uint64, (1, 64)),
    "float16": (70, 9, np.float16, (2, 16)),
    "bfloat16": (71, 10, None, (4, 16)),
    "float32": (72, 11, np.float32, (2, 32)),
    "float64": (73, 12, np.float64, (2, 64)),
    "float8_e4m3fn": (66, 13, None, None),
    "float8_e4m3fnuz": (67, 14, None, None),
    "float8_e5m2": (68, 15, None, None),
    "float8_e5m2fnuz": (69, 16, None, None),
}

_SIZES = {"bool": 1, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


class DType(enum.Enum):
    """The element type of a tensor (MAX's names and values)."""

    bool = 1
    int8 = 135
    int16 = 137
    int32 = 139
    int64 = 141
    uint8 = 134
    uint16 = 136
    uint32 = 138
    uint64 = 140
    float16 = 70
    bfloat16 = 71
    float32 = 72
    float64 = 73
    float8_e4m3fn = 66
    float8_e4m3fnuz = 67
    float8_e5m2 = 68
    float8_e5m2fnuz = 69

    @property
    def _kiln(self) -> int:
        """kiln's dtype number (``kiln_dtype`` in kiln/common.h)."""
        return _TABLE[self.name][1]

    @classmethod
    def _from_kiln(cls, number: int) -> "DType":
        return _BY_KILN[number]

    @property
    def size_in_bytes(self) -> int:
        """Bytes per element."""
        if self.name in _SIZES:
            return _SIZES[self.name]
        if self.name.startswith("float8"):
            return 1
        return int("".join(c for c in self.name if c.isdigit())) // 8

    @property
    def align(self) -> int:
        """Alignment of one element, in bytes."""
        return self.size_in_bytes

    @property
    def mo_name(self) -> str:
        """kiln's MO spelling ("f32", "si64", "bool")."""
        from . import _kiln

        return _kiln.dtype_name(self._kiln)

    def is_float(self) -> builtins.bool:
        """True for every floating-point type (float8, half, float32, float64)."""
        return self.name.startswith(("float", "bfloat"))

    def is_float8(self) -> builtins.bool:
        """True for the four float8 types."""
        return self.name.startswith("float8")

    def is_half(self) -> builtins.bool:
        """True for float16 and bfloat16."""
        return self in (DType.float16, DType.bfloat16)

    def is_integral(self) -> builtins.bool:
        """True for signed and unsigned integers (not bool)."""
        return self.is_signed_integral() or self.is_unsigned_integral()

    def is_signed_integral(self) -> builtins.bool:
        """True for int8 .. int64."""
        return self.name.startswith("int")

    def is_unsigned_integral(self) -> builtins.bool:
        """True for uint8 .. uint64."""
        return self.name.startswith("uint")

    def to_numpy(self) -> np.dtype:
        """The numpy dtype; TypeError for the types numpy lacks (bfloat16, float8)."""
        np_type = _TABLE[self.name][2]
        if np_type is None:
            raise TypeError(f"numpy has no dtype for {self.name}")
        return np.dtype(np_type)

    @classmethod
    def from_numpy(cls, dtype) -> "DType":
        """The DType of a numpy dtype (or anything np.dtype() accepts)."""
        d = np.dtype(dtype)
        for name, row in _TABLE.items():
            if row[2] is not None and np.dtype(row[2]) == d:
                return cls[name]
        raise TypeError(f"kiln has no dtype for numpy's {d}")

    def to_dlpack(self) -> tuple[int, int]:
        """DLPack's (type code, bits) for this dtype (lanes are 1)."""
        row = _TABLE[self.name][3]
        if row is None:
            raise TypeError(f"DLPack has no type code for {self.name} here")
        return row

    @classmethod
    def from_dlpack(cls, code: int, bits: int) -> "DType":
        """The DType of DLPack's (type code, bits)."""
        for name, row in _TABLE.items():
            if row[3] == (code, bits):
                return cls[name]
        raise TypeError(f"kiln has no dtype for DLPack code {code}, {bits} bits")

    def __repr__(self) -> str:
        return f"DType.{self.name}"


_BY_KILN = {row[1]: DType[name] for name, row in _TABLE.items()}
