"""examples/decoder: the decoder prefills a prompt and generates 64 tokens
greedily, one execute per step with its K / V caches in caller-owned
buffers, and its logits match tools/decoder_ref.py (numpy, no cache) at
every step; the caches hold exactly the tokens run; and the check is not
vacuous (caches cleared between steps make it fail). The attention reads
only the written part of the caches. The emitted MO text and weights, run
by ``kiln run --generate``, give the tokens the Python run gives. On simt-emu
(a device model: the caches copied in and back each step, the slice stores
a kernel) the logits match the CPU's at every step, and ``kiln run --device
simt-emu --generate`` gives the same tokens."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples", "decoder"))

import decoder  # noqa: E402


@pytest.fixture(scope="module")
def dec(session):
    return decoder.Decoder(decoder.CONFIG, session)


def test_generates_64_tokens_matching_numpy_at_every_step(dec):
    steps = []
    check = decoder.reference_check(dec)

    def record(tokens, logits):
        check(tokens, logits)
        steps.append(len(logits))

    prompt = [1, 7, 3, 12, 5]
    out = decoder.generate(dec, prompt, 64, record)
    assert len(out) == len(prompt) + 64 and steps == [5] + [1] * 64
    n = dec.length
    assert n == 69
    for c in dec.caches:  # written up to the tokens run, untouched after
        assert np.abs(c[:, :n]).sum(-1).min() > 0
        assert not c[:, n:].any()


def test_the_check_fails_when_the_cache_is_lost(session):
    d = decoder.Decoder(decoder.CONFIG, session)
    check = decoder.reference_check(d)
    tokens = [1, 7, 3]
    check(tokens, d.step(np.asarray(tokens, np.int64)))
    for c in d.caches:
        c[...] = 0
    tokens.append(4)
    with pytest.raises(AssertionError, match="logits after 4 tokens"):
        check(tokens, d.step(np.asarray(tokens[-1:], np.int64)))


def test_attention_reads_only_the_written_part_of_the_caches(session):
    """NaN past the cached tokens would poison a masked attention over the
    whole cache (0 * NaN in softmax @ V); the sliced one never reads it."""
    d = decoder.Decoder(decoder.CONFIG, session)
    for c in d.caches:
        c[...] = np.nan
    out = decoder.generate(d, [1, 7, 3, 12, 5], 8, decoder.reference_check(d))
    assert len(out) == 13 and np.isnan(d.caches[0][:, 13:]).all()


def _kiln_cli() -> str | None:
    """The kiln command: $KILN_CLI, else the one built beside the extension
    (a build tree's kiln/_kiln.abi3.so link), else kiln on PATH."""
    import kiln._kiln as ext

    beside = os.path.join(os.path.dirname(os.path.realpath(ext.__file__)), "kiln")
    for c in (os.environ.get("KILN_CLI"), beside, shutil.which("kiln")):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def test_on_simt_emu_the_logits_match_the_cpu_at_every_step(dec):
    from kiln.driver import SimtEmulator
    from kiln.engine import InferenceSession

    emu = decoder.Decoder(decoder.CONFIG, InferenceSession(devices=[SimtEmulator()]))
    cpu = decoder.Decoder(decoder.CONFIG, dec.session)
    on_cpu, on_emu = [], []
    prompt = [1, 7, 3, 12, 5]
    want = decoder.generate(cpu, prompt, 24, lambda t, lg: on_cpu.append(lg))
    got = decoder.generate(emu, prompt, 24, lambda t, lg: on_emu.append(lg))
    assert got == want
    for k, (a, b) in enumerate(zip(on_cpu, on_emu)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5, err_msg=f"execute {k}")
    for a, b in zip(cpu.caches, emu.caches):  # the caller's caches, updated in place
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    assert np.abs(emu.caches[0][:, :len(got)]).max() > 0


@pytest.mark.parametrize("prompt,device", [([1, 7, 3, 12, 5], "cpu"), ([40, 2], "cpu"),
                                           ([40, 2], "simt-emu")])
def test_kiln_run_generate_drives_the_emitted_decoder(session, tmp_path, prompt, device):
    cli = _kiln_cli()
    if cli is None:
        pytest.skip("no kiln command (set KILN_CLI)")
    mlir, weights = tmp_path / "decoder.mlir", tmp_path / "decoder.safetensors"
    decoder.emit(str(mlir), str(weights))
    steps = 24
    run = subprocess.run([cli, "run", str(mlir), "--weights", str(weights), "--generate",
                          str(steps), "--prompt", ",".join(map(str, prompt)), "--device", device],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KILN_CACHE": "off"})
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith("generated:"))
    got = [int(t) for t in line.split(":", 1)[1].split(",")]
    d = decoder.Decoder(decoder.CONFIG, session)
    want = decoder.generate(d, prompt, steps, decoder.reference_check(d))[len(prompt):]
    assert got == want
