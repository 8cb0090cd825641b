"""kiln.driver: devices and tensors, as ``max.driver``.

``CPU()``, ``Accelerator()`` (the first CUDA or HIP GPU kiln can open) and
``SimtEmulator()`` (GPU kernels run on the CPU, for testing without a GPU)
are devices. ``Tensor`` (also ``Buffer``) holds a kiln tensor in host or
device memory; host tensors share their memory with numpy and DLPack
consumers both ways without copying.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import _kiln
from .dtype import DType

__all__ = [
    "Device", "CPU", "Accelerator", "SimtEmulator", "Tensor", "Buffer",
    "accelerator_count", "accelerator_api", "devices_exist", "load_devices",
    "scan_available_devices", "DeviceSpec",
]


class Device(_kiln.Device):
    """A device kiln opened: the CPU, a GPU, or the SIMT emulator."""

    @property
    def id(self) -> int:
        """The device's number among devices of its kind."""
        return self.ordinal

    @property
    def api(self) -> str:
        """"cpu", "cuda", "hip" or "simt-emu"."""
        return self.kind

    @property
    def is_host(self) -> bool:
        """True for the CPU."""
        return self.kind == "cpu"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _kiln.Device) and other.label == self.label

    def __hash__(self) -> int:
        return hash(self.label)

    def __repr__(self) -> str:
        return f"Device({self.label!r})"

    def __str__(self) -> str:
        return self.label


class CPU(Device):
    """The host CPU (``id`` is accepted as MAX does; there is one CPU device)."""

    def __new__(cls, id: int = -1) -> "CPU":
        return super().__new__(cls, "cpu")


class Accelerator(Device):
    """A GPU: ``id`` -1 picks the first one (CUDA first, then HIP).

    Raises ``kiln.NotFoundError`` saying what is missing (driver, device)
    where there is none."""

    def __new__(cls, id: int = -1) -> "Accelerator":
        api = accelerator_api()
        if api is None:
            # let kiln say why (no driver library, no device, ...)
            return super().__new__(cls, "cuda" if id < 0 else f"cuda:{id}")
        return super().__new__(cls, api if id < 0 else f"{api}:{id}")


class SimtEmulator(Device):
    """simt-emu: kiln's GPU kernels run on the CPU, for tests without a GPU."""

    def __new__(cls, id: int = -1) -> "SimtEmulator":
        return super().__new__(cls, "simt-emu")


_HOST: CPU | None = None


def _host() -> CPU:
    global _HOST
    if _HOST is None:
        _HOST = CPU()
    return _HOST


def accelerator_api() -> str | None:
    """"cuda" or "hip" for the first kind of GPU present, else None."""
    for api in ("cuda", "hip"):
        if _kiln.Device.count(api) > 0:
            return api
    return None


def accelerator_count() -> int:
    """GPUs kiln can open here (CUDA and HIP)."""
    return _kiln.Device.count("cuda") + _kiln.Device.count("hip")


class DeviceSpec:
    """A device by kind and id: ``DeviceSpec.cpu()``, ``DeviceSpec.accelerator(0)``."""

    def __init__(self, id: int, device_type: str = "cpu") -> None:
        self.id = id
        self.device_type = device_type

    @staticmethod
    def cpu(id: int = -1) -> "DeviceSpec":
        """The host CPU."""
        return DeviceSpec(id, "cpu")

    @staticmethod
    def accelerator(id: int = -1) -> "DeviceSpec":
        """GPU number id (-1: the first)."""
        return DeviceSpec(id, "gpu")

    def __repr__(self) -> str:
        return f"DeviceSpec(id={self.id}, device_type={self.device_type!r})"


def load_devices(specs: Sequence[DeviceSpec]) -> list[Device]:
    """Open the devices the specs name."""
    return [CPU(s.id) if s.device_type == "cpu" else Accelerator(s.id) for s in specs]


def scan_available_devices() -> list[DeviceSpec]:
    """Every GPU kiln can open here, or the CPU when there is none."""
    n = accelerator_count()
    return [DeviceSpec.accelerator(i) for i in range(n)] or [DeviceSpec.cpu()]


def devices_exist(specs: Sequence[DeviceSpec]) -> bool:
    """True when every spec names a device present here."""
    n = accelerator_count()
    return all(s.device_type == "cpu" or s.id < n for s in specs)


class Tensor(_kiln.Tensor):
    """A tensor in host or device memory (``max.driver.Tensor``).

    ``Tensor(dtype, shape, device=None)`` allocates (zeroed on the host).
    ``Tensor.from_numpy(a)`` and ``Tensor.from_dlpack(x)`` share the
    array's memory when it is C-contiguous host memory (a strided array is
    copied). ``to_numpy()`` and ``np.from_dlpack(t)`` share the tensor's
    memory. Supports the buffer protocol (``np.asarray(t)``, memoryview).
    """

    def __new__(cls, dtype: DType, shape: Sequence[int], device: Device | None = None,
                pinned: bool = False) -> "Tensor":
        if device is not None and device.is_host:
            device = None
        return super().__new__(cls, DType(dtype)._kiln, tuple(int(d) for d in shape), device)

    @property
    def dtype(self) -> DType:
        """The element type."""
        return DType._from_kiln(self._dtype)

    @property
    def device(self) -> Device:
        """Where the memory is (``CPU()`` for host memory)."""
        d = self._device
        return d if d is not None else _host()

    @property
    def is_host(self) -> bool:
        """True for host memory."""
        return self._device is None

    @property
    def rank(self) -> int:
        """Number of dims."""
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        """Number of elements (the product of the dims)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.size_in_bytes

    @classmethod
    def from_numpy(cls, arr: np.ndarray) -> "Tensor":
        """A tensor over the array's memory (copied only if it is strided)."""
        return cls.from_object(arr)

    @classmethod
    def from_dlpack(cls, array: Any, *, copy: bool | None = None) -> "Tensor":
        """A tensor over a DLPack producer's host memory (torch, jax, numpy)."""
        t = cls.from_object(array)
        return t.copy() if copy else t

    @classmethod
    def zeros(cls, shape: Sequence[int], dtype: DType = DType.float32,
              device: Device | None = None) -> "Tensor":
        """A zero-filled tensor."""
        t = cls(dtype, shape, device)
        if not t.is_host:
            t = cls.from_numpy(np.zeros(tuple(shape), dtype.to_numpy())).to(device)
        return t

    def to_numpy(self) -> np.ndarray:
        """The elements as a numpy array: the same memory for a host tensor,
        a copy for a device tensor."""
        t = self if self.is_host else self.copy_to(None)
        if t.num_elements == 0:
            return np.zeros(t.shape, t.dtype.to_numpy())
        return np.asarray(t)

    def copy(self, device: Device | None = None) -> "Tensor":
        """A copy on device (default: the tensor's own device)."""
        target = self._device if device is None else device
        if target is not None and target.is_host:
            target = None
        return self.copy_to(target)

    def to(self, device: Device) -> "Tensor":
        """The tensor on device: itself when it is there already, else a copy."""
        if device == self.device:
            return self
        return self.copy(device)

    def item(self) -> Any:
        """The one element of a one-element tensor as a Python number."""
        if self.num_elements != 1:
            raise ValueError(f"item() of a tensor of {self.num_elements} elements")
        return self.to_numpy().reshape(()).item()

    def __array__(self, dtype=None, copy=None):
        a = self.to_numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"Tensor(dtype={self.dtype.name}, shape={list(self.shape)}, device={self.device})"


Buffer = Tensor

_kiln.Tensor._set_tensor_class(Tensor)
