"""kiln.graph.ops' surface: every MAX op kiln serves is there under MAX's
name, each public function has a docstring, and the ops kiln cannot serve
are absent (not stubbed)."""

from __future__ import annotations

import inspect

import pytest

from kiln.graph import ops

MAX_OPS = """abs add argmax argmin argsort as_interleaved_complex atanh avg_pool2d band_part
broadcast_to cast chunk concat constant constant_external conv2d conv2d_transpose conv3d cos
cumsum custom div equal erf exp flatten floor fold gather gather_nd gelu greater greater_equal
hann_window inplace_custom is_inf is_nan layer_norm log log1p logical_and logical_not logical_or
logical_xor logsoftmax masked_scatter matmul max max_pool2d mean min mod mul negate nonzero
not_equal outer pad permute pow print range rebind relu repeat_interleave reshape resize round
rsqrt scatter scatter_nd shape_to_tensor sigmoid silu sin slice_tensor softmax split sqrt squeeze
stack sub sum tanh tile top_k transfer_to transpose trunc unsqueeze where call cond
while_loop dequantize fence qmatmul irfft""".split()
LEFT_OUT = """allgather""".split()
MAX_OPS += ["buffer_create", "buffer_load", "buffer_store", "buffer_store_slice"]


@pytest.mark.parametrize("name", MAX_OPS)
def test_max_op_present(name):
    assert callable(getattr(ops, name)) and name in ops.__all__


@pytest.mark.parametrize("name", LEFT_OUT)
def test_unserved_op_absent(name):
    assert not hasattr(ops, name)


def test_every_public_function_has_a_docstring():
    missing = [n for n in ops.__all__ if callable(getattr(ops, n))
               and not (getattr(ops, n).__doc__ or "").strip()]
    missing += [n for n in ("uniform", "gaussian", "normal", "set_seed")
                if not (getattr(ops.random, n).__doc__ or "").strip()]
    assert not missing


@pytest.mark.parametrize("name,params", [
    ("transpose", ["x", "axis_1", "axis_2"]), ("sum", ["x", "axis"]),
    ("split", ["x", "split_sizes", "axis"]), ("concat", ["original_vals", "axis"]),
    ("gather", ["input", "indices", "axis"]), ("layer_norm", ["input", "gamma", "beta", "epsilon"]),
    ("cast", ["x", "dtype"]), ("reshape", ["x", "shape"]),
    ("broadcast_to", ["x", "shape", "out_dims"]),
    ("custom", ["name", "device", "values", "out_types", "parameters"]),
    ("band_part", ["x", "num_lower", "num_upper", "exclude"]),
    ("conv2d", ["x", "filter", "stride", "dilation", "padding", "groups", "bias", "input_layout",
                "filter_layout"]),
    ("cumsum", ["x", "axis", "exclusive", "reverse"]), ("top_k", ["input", "k", "axis"]),
    ("scatter", ["input", "updates", "indices", "axis"]), ("tile", ["x", "repeats"]),
    ("range", ["start", "stop", "step", "out_dim", "dtype", "device"]),
    ("irfft", ["input_tensor", "n", "axis", "normalization", "input_is_complex",
               "buffer_size_mb"]),
])
def test_max_signatures(name, params):
    assert list(inspect.signature(getattr(ops, name)).parameters) == params


def test_defaults_match_max():
    sig = inspect.signature
    assert sig(ops.sum).parameters["axis"].default == -1
    assert sig(ops.gather).parameters["axis"].default == -1
    assert sig(ops.split).parameters["axis"].default == 0
    assert sig(ops.concat).parameters["axis"].default == 0
    assert sig(ops.argsort).parameters["ascending"].default is True
    assert sig(ops.random.uniform).parameters["range"].default == (0, 1)
