"""kiln.engine: sessions load graphs, MO text files and ONNX files; models
execute with numpy inputs, report their metadata, bind weights, specialize,
capture and replay."""

import os
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver import CPU, Tensor
from kiln.dtype import DType
from kiln.engine import Bucket, InferenceSession, SpecializePolicy
from kiln.graph import Graph, TensorType, Weight, ops

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return InferenceSession(devices=[CPU()], num_threads=1,
                            cache_dir=tmp_path_factory.mktemp("cache"))


def relu_plus_one(batch="batch"):
    with Graph("relu1", input_types=[TensorType(DType.float32, [batch, 3])]) as g:
        g.output(ops.add(ops.relu(g.inputs[0]), 1.0))
    return g


def test_execute_symbolic_batch_at_two_sizes(session):
    model = session.load(relu_plus_one())
    for batch in (1, 5):
        x = np.linspace(-3, 3, batch * 3, dtype=np.float32).reshape(batch, 3)
        (y,) = model.execute(x)
        assert isinstance(y, Tensor)
        np.testing.assert_array_equal(y.to_numpy(), np.maximum(x, 0) + 1)
    (y,) = model(np.zeros((2, 3), np.float32))  # __call__ is execute
    assert y.shape == (2, 3)


def test_metadata(session):
    model = session.load(relu_plus_one())
    (i,), (o,) = model.input_metadata, model.output_metadata
    assert (i.name, i.shape, i.dtype, i.dims) == ("input0", [None, 3], DType.float32,
                                                  ["batch", "3"])
    assert o.shape == [None, 3] and o.dtype == DType.float32
    assert model.compile_ms > 0


def test_load_mo_text_file_with_weights(session):
    rng = np.random.default_rng(0)
    w = {"fc1.weight": rng.standard_normal((784, 512), np.float32) * 0.05,
         "fc1.bias": rng.standard_normal(512, np.float32),
         "fc2.weight": rng.standard_normal((512, 10), np.float32) * 0.05,
         "fc2.bias": rng.standard_normal(10, np.float32)}
    model = session.load(ROOT / "examples" / "mlp.mlir", weights_registry=w)
    assert sorted(model.weight_names) == sorted(w)
    assert model.input_metadata[0].name == "pixels"
    assert model.output_metadata[0].name == "logits"
    x = rng.standard_normal((4, 784), np.float32)
    (y,) = model.execute(x)
    h = np.maximum(x @ w["fc1.weight"] + w["fc1.bias"], 0)
    np.testing.assert_allclose(y.to_numpy(), h @ w["fc2.weight"] + w["fc2.bias"],
                               rtol=1e-4, atol=1e-4)


def test_weights_from_the_graph_api(session):
    with Graph("lin", input_types=[TensorType(DType.float32, ["n", 4])]) as g:
        w = Weight("w", DType.float32, [4, 2])
        b = Weight("b", DType.float32, [2])
        g.output(g.inputs[0] @ w + b)
    wv = np.arange(8, dtype=np.float32).reshape(4, 2)
    bv = np.array([0.5, -0.5], np.float32)
    model = session.load(g, weights_registry={"w": wv, "b": bv})
    x = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(model.execute(x)[0].to_numpy(), x @ wv + bv)
    model.bind_weight("b", np.zeros(2, np.float32))  # bound again
    np.testing.assert_allclose(model.execute(x)[0].to_numpy(), x @ wv)


def test_unbound_weight_is_an_error(session):
    with Graph("lin", input_types=[TensorType(DType.float32, [1, 4])]) as g:
        g.output(ops.matmul(g.inputs[0], Weight("w", DType.float32, [4, 2])))
    model = session.load(g)
    with pytest.raises(kiln.KilnError, match="w"):
        model.execute(np.ones((1, 4), np.float32))


def test_onnx_file_matches_onnx_runtime(session):
    d = ROOT / "tests" / "onnx" / "minilm_tiny"
    model = session.load(d / "model.onnx")
    names = [i.name for i in model.input_metadata]
    for case in ("b1s12", "b2s5"):
        ins = {n: np.load(d / f"{case}.{n}.npy") for n in ("input_ids", "attention_mask")}
        outs = model.execute(*[ins[n] for n in names])
        for k, want in ((2, np.load(d / f"{case}.out2.npy")), (3, np.load(d / f"{case}.out3.npy"))):
            got = outs[k - 2 if len(outs) == 2 else k].to_numpy()
            assert got.shape == want.shape
            assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))


def test_specialization_policy_and_buckets(session):
    model = session.load(relu_plus_one())
    model.set_specialize(SpecializePolicy.SYNC)
    model.set_bucket("batch", Bucket.POW2)
    x = np.ones((3, 3), np.float32)
    np.testing.assert_array_equal(model.execute(x)[0].to_numpy(), x + 1)
    model.specialize(batch=8)
    assert model.variants >= 1
    with pytest.raises(kiln.KilnError):
        model.set_bucket("nosuchsymbol", Bucket.POW2)


def test_capture_replay(session):
    model = session.load(relu_plus_one())
    x = np.full((2, 3), -1.0, np.float32)
    model.capture(7, x)
    np.testing.assert_array_equal(model.replay(7, x * -2)[0].to_numpy(), np.full((2, 3), 3.0))
    model.debug_verify_replay(7, x)
    with pytest.raises(kiln.ShapeError):
        model.debug_verify_replay(7, np.zeros((4, 3), np.float32))
    model.release(7)
    with pytest.raises(kiln.KilnError):
        model.replay(7, x)


def test_cache_dir_and_threads(tmp_path):
    s = InferenceSession(num_threads=2, cache_dir=tmp_path / "kc")
    assert s.num_threads == 2
    assert s.cache_dir == str(tmp_path / "kc")
    s.load(relu_plus_one())
    assert any((tmp_path / "kc").rglob("*")), "the disk cache was not written"
    off = InferenceSession(cache_dir=None)
    assert off.cache_dir is None


def test_cache_seed_dir_serves_kernels(tmp_path):
    seed, own = tmp_path / "seed", tmp_path / "own"
    InferenceSession(cache_dir=seed).load(relu_plus_one())  # a deploy step warms the seed
    s = InferenceSession(cache_dir=own)
    s.add_cache_seed_dir(seed)
    assert s.cache_warning is None
    assert str(seed) in s.cache_status and str(own) in s.cache_status
    (y,) = s.load(relu_plus_one()).execute(np.array([[-2, 3, 0]], np.float32))
    np.testing.assert_array_equal(y.to_numpy(), [[1, 4, 1]])
    assert not list(own.rglob("*.kc")), "the kernels compiled again instead of coming from the seed"
    with pytest.raises(kiln.KilnError, match="missing"):
        s.add_cache_seed_dir(tmp_path / "missing")


def test_graph_without_outputs_is_refused(session):
    g = Graph("empty", input_types=[TensorType(DType.float32, [1])])
    with pytest.raises(ValueError, match="no outputs"):
        session.load(g)


def test_graph_text_round_trip(session):
    text = str(relu_plus_one())
    assert "mo.relu" in text and "batch" in text
    g = Graph.from_text(text)
    (y,) = session.load(g).execute(np.array([[-1, 0, 1]], np.float32))
    np.testing.assert_array_equal(y.to_numpy(), [[1, 1, 2]])


def test_models_outlive_their_session_and_graph():
    model = InferenceSession(cache_dir=None).load(relu_plus_one())
    import gc

    gc.collect()
    np.testing.assert_array_equal(model.execute(np.zeros((1, 3), np.float32))[0].to_numpy(),
                                  np.ones((1, 3)))


def test_input_types_keep_their_device(session):
    from kiln.graph import DeviceRef

    with Graph("placed", input_types=[TensorType(DType.float32, [2], DeviceRef.GPU(0)),
                                      TensorType(DType.float32, [2])]) as g:
        a, b = g.inputs
        assert a.device == DeviceRef.GPU(0) and b.device == DeviceRef.CPU()
        assert a.type.to_mlir() == "!mo.tensor<[2], f32, gpu:0>"
        g.output(ops.add(a, b.to(DeviceRef.GPU(0))))
    assert "gpu:0" in str(g)
    with pytest.raises(kiln.KilnError, match="gpu"):  # a CPU model refuses GPU values
        session.load(g)
    # the emulated GPU runs it: the input typed on the GPU is copied there
    from kiln.driver import SimtEmulator

    model = InferenceSession(devices=[SimtEmulator()], cache_dir=None).load(g)
    (y,) = model.execute(np.array([1, 2], np.float32), np.array([10, 20], np.float32))
    np.testing.assert_array_equal(y.to_numpy(), [11, 22])
