"""kiln.driver and kiln.dtype: tensors share memory with numpy and DLPack
both ways, dtypes map to numpy and DLPack, devices open or say why not."""

import numpy as np
import pytest

import kiln
from kiln.driver import CPU, Accelerator, SimtEmulator, Tensor, accelerator_count
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, ops

NUMPY_DTYPES = [DType.bool, DType.int8, DType.int16, DType.int32, DType.int64, DType.uint8,
                DType.uint16, DType.uint32, DType.uint64, DType.float16, DType.float32,
                DType.float64]


def addr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dt", NUMPY_DTYPES, ids=lambda d: d.name)
def test_dtype_numpy_round_trip(dt):
    assert DType.from_numpy(dt.to_numpy()) is dt
    assert dt.size_in_bytes == dt.to_numpy().itemsize
    a = (np.arange(6) % 2).astype(dt.to_numpy()).reshape(2, 3)
    t = Tensor.from_numpy(a)
    assert t.dtype is dt and t.shape == (2, 3)
    assert t.data_ptr == addr(a)  # borrowed, not copied
    back = t.to_numpy()
    assert addr(back) == addr(a)
    np.testing.assert_array_equal(back, a)
    # numpy reads DLPack's bool code from 1.25 on; kiln's own consumer always
    old_numpy = tuple(int(p) for p in np.__version__.split(".")[:2]) < (1, 25)
    if dt is DType.bool and old_numpy:
        assert Tensor.from_dlpack(t).data_ptr == addr(a)
    else:
        assert addr(np.from_dlpack(t)) == addr(a)


def test_dtype_properties():
    assert DType.float32.value == 72 and DType.int64.value == 141  # MAX's numbers
    assert DType.bfloat16.is_half() and DType.bfloat16.is_float()
    assert DType.uint8.is_unsigned_integral() and not DType.uint8.is_signed_integral()
    assert DType.float8_e5m2.is_float8() and DType.float8_e5m2.size_in_bytes == 1
    assert DType.float32.mo_name == "f32" and DType.int64.mo_name == "si64"
    with pytest.raises(TypeError):
        DType.bfloat16.to_numpy()
    with pytest.raises(TypeError):
        DType.from_numpy(np.complex64)


def test_tensor_allocates_zeroed():
    t = Tensor(DType.float32, [2, 3])
    assert t.shape == (2, 3) and t.is_host and t.device == CPU()
    assert t.num_elements == 6 and t.rank == 2 and t.element_size == 4
    np.testing.assert_array_equal(t.to_numpy(), np.zeros((2, 3)))
    view = t.to_numpy()
    view[0, 0] = 5  # the same memory
    assert t.to_numpy()[0, 0] == 5
    assert Tensor(DType.float32, [1]).item() == 0.0


def test_writes_through_numpy_are_seen_by_the_tensor():
    a = np.zeros(4, np.float32)
    t = Tensor.from_numpy(a)
    a[2] = 7
    assert t.to_numpy()[2] == 7


def test_strided_arrays_are_copied_densely():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = Tensor.from_numpy(a)
    np.testing.assert_array_equal(t.to_numpy(), a)
    assert t.data_ptr != addr(a)


def test_from_dlpack_borrows_and_keeps_the_producer_alive():
    a = np.arange(5, dtype=np.int32)
    t = Tensor.from_dlpack(a)
    assert t.data_ptr == addr(a)
    del a
    np.testing.assert_array_equal(t.to_numpy(), np.arange(5))
    c = Tensor.from_dlpack(np.arange(3, dtype=np.float64), copy=True)
    np.testing.assert_array_equal(c.to_numpy(), [0, 1, 2])


def test_dlpack_export_outlives_the_tensor():
    t = Tensor.from_numpy(np.arange(3, dtype=np.float32)).copy()
    a = np.from_dlpack(t)
    del t
    np.testing.assert_array_equal(a, [0, 1, 2])
    assert Tensor(DType.float32, [2]).__dlpack_device__() == (1, 0)


def test_read_only_arrays_stay_read_only():
    a = np.ones(3, np.float32)
    a.setflags(write=False)
    t = Tensor.from_numpy(a)
    assert t.data_ptr == addr(a) and memoryview(t).readonly
    assert not np.asarray(t).flags.writeable
    with Graph("neg", input_types=[TensorType(DType.float32, [3])]) as g:
        g.output(ops.sub(0.0, g.inputs[0]))
    (y,) = InferenceSession(cache_dir=None).load(g).execute(a)  # an input is only read
    np.testing.assert_array_equal(y.to_numpy(), -a)


def test_bfloat16_has_no_numpy_view():
    t = Tensor(DType.bfloat16, [2])
    with pytest.raises(BufferError, match="bf16"):
        np.asarray(memoryview(t))


def test_zero_size_tensors():
    t = Tensor.from_numpy(np.zeros((0, 3), np.float32))
    assert t.shape == (0, 3) and t.to_numpy().shape == (0, 3)


def test_unsupported_objects_are_refused_with_the_type():
    with pytest.raises(TypeError, match="str"):
        Tensor.from_dlpack("not an array")
    with pytest.raises(kiln.DTypeError):
        Tensor.from_numpy(np.zeros(2, np.complex64))


def test_simt_emulator_runs_a_graph_and_copies_tensors():
    emu = SimtEmulator()
    assert emu.kind == "simt-emu" and not emu.is_host
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    t = Tensor.from_numpy(a).to(emu)
    assert not t.is_host and t.device == emu
    np.testing.assert_array_equal(t.to_numpy(), a)
    with pytest.raises(BufferError, match="simt-emu"):
        memoryview(t)
    with Graph("relu", input_types=[TensorType(DType.float32, ["n", 3])]) as g:
        g.output(ops.relu(g.inputs[0]))
    model = InferenceSession(devices=[emu], cache_dir=None).load(g)
    for x in (a, t):  # host and device inputs
        (y,) = model.execute(x)
        np.testing.assert_array_equal(y.to_numpy(), np.maximum(a, 0))


def test_accelerator_absent_says_why():
    if accelerator_count() > 0:
        assert Accelerator().kind in ("cuda", "hip")
        return
    with pytest.raises(kiln.KilnError) as e:
        Accelerator()
    assert "cuda" in str(e.value).lower() or "driver" in str(e.value).lower()
