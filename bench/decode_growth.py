#!/usr/bin/env python3
"""decode_growth.py - the step time of a decode whose shapes grow (issue 20):
examples/decoder prefills a 5-token prompt, then generates --steps tokens
greedily, one execute per token; its attention reads cache[:, :total], so
the symbolic dim total grows by one every step. Each policy runs the same
generation on a fresh session (its own empty disk cache, one thread):

  - off:   the generic kernels only;
  - async: --bucket total=pow2 (or a multiple of N): variants compiled in
           the background, never on the request path.

Rounds alternate the policies; each step's time is its median over the
rounds (a preemption of the loaded host hits one round, a compile stall on
the request path would hit the same step every round). It prints the
step-time curve (median of each --every steps, per policy), then per policy,
over the steps past the first bucket (total beyond the bucket of the first
decode step): the median step, the p99, p99 / median (the issue's goal:
<= 1.2 for async), the p99 of each step over the median of the --every steps
around it (the same ratio with the growth of the attention taken out: this
small decoder's step cost grows with total, so the plain ratio also measures
that growth), the slowest step, variants built, variants evicted (the most
in any round) and kernels compiled.

The graph is built only from Python (kiln.graph): the decoder exists as
Python code, so its driver is Python too; the Python call costs a few
microseconds per step, the same for both policies.

usage: python3 bench/decode_growth.py [--steps 512] [--rounds 3] [--every 16]
                                      [--bucket pow2|N] [--tsv] [--quick]
  --tsv: also print M / R lines (bench_chain's format) for bench/report.py.
Exit status: 0 when every generation gave the same tokens under both
policies (whether the goal is met or not), 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "decoder"))

import decoder  # noqa: E402
from kiln.driver import CPU  # noqa: E402
from kiln.engine import Bucket, InferenceSession, SpecializePolicy  # noqa: E402

PROMPT = [1, 7, 3, 12, 5]
COUNTER_VARIANTS_BUILT, COUNTER_VARIANTS_EVICTED, COUNTER_COMPILES = 3, 4, 8  # kiln_counter


def bucket_of(total: int, bucket: str) -> int:
    """The upper end of total's bucket."""
    if bucket == "pow2":
        b = 1
        while b < total:
            b *= 2
        return b
    n = int(bucket)
    return -(-total // n) * n


def generate(policy: str, steps: int, bucket: str) -> dict:
    """One generation: prefill + steps; step times in microseconds."""
    cache = tempfile.mkdtemp(prefix="kiln-decode-bench-")
    try:
        session = InferenceSession(devices=[CPU()], num_threads=1, cache_dir=cache)
        dec = decoder.Decoder(decoder.CONFIG, session)
        m = dec.model
        if policy == "off":
            m.set_specialize(SpecializePolicy.OFF)
        else:
            m.set_specialize(SpecializePolicy.ASYNC)
            if bucket == "pow2":
                m.set_bucket("total", Bucket.POW2)
            else:
                m.set_bucket("total", Bucket.MULTIPLE, int(bucket))
        tokens = list(PROMPT)
        t0 = time.perf_counter_ns()
        logits = dec.step(np.asarray(PROMPT, np.int64))
        prefill_us = (time.perf_counter_ns() - t0) / 1e3
        times, totals = [], []
        for _ in range(steps):
            tokens.append(int(np.argmax(logits[-1])))
            t0 = time.perf_counter_ns()
            logits = dec.step(np.asarray(tokens[-1:], np.int64))
            times.append((time.perf_counter_ns() - t0) / 1e3)
            totals.append(dec.length)
        session.wait_compiles(30.0)
        c = m._m.counter
        return dict(times=times, totals=totals, prefill=prefill_us, tokens=tokens,
                    variants=int(c(COUNTER_VARIANTS_BUILT)), compiles=int(c(COUNTER_COMPILES)),
                    evicted=int(c(COUNTER_VARIANTS_EVICTED)))
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def p99(xs: list) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.99 * len(s)))]


def local_ratios(times: list, idx: list, every: int) -> list:
    """times[i] / the median of the `every` steps centred on i, for i in idx."""
    h = max(1, every // 2)
    return [times[i] / statistics.median(times[max(0, i - h):i + h]) for i in idx]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--every", type=int, default=16)
    ap.add_argument("--bucket", default="pow2", help="pow2 or a multiple N")
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one round")
    a = ap.parse_args()
    if a.bucket != "pow2" and not (a.bucket.isdigit() and int(a.bucket) > 0):
        ap.error("--bucket is pow2 or a positive multiple")
    if len(PROMPT) + a.steps > decoder.CONFIG["max_len"]:
        ap.error(f"--steps: the caches hold {decoder.CONFIG['max_len']} tokens")
    rounds = 1 if a.quick else max(1, a.rounds)
    policies = ("off", "async")
    runs: dict = {p: [] for p in policies}
    for r in range(rounds):
        for p in (policies if r % 2 == 0 else policies[::-1]):
            runs[p].append(generate(p, a.steps, a.bucket))
    ok = all(g["tokens"] == runs["off"][0]["tokens"] for p in policies for g in runs[p])
    totals = runs["off"][0]["totals"]
    # per step: the median over the rounds
    step = {p: [statistics.median(g["times"][i] for g in runs[p]) for i in range(a.steps)]
            for p in policies}
    first = bucket_of(totals[0], a.bucket)
    after = [i for i, t in enumerate(totals) if t > first]

    print(f"decode_growth: prompt {len(PROMPT)}, {a.steps} steps, bucket total={a.bucket}, "
          f"{rounds} round(s), 1 thread; host load is shared (2 CPUs, several users)")
    print(f"step-time curve (us, median of each {a.every} steps, median over rounds):")
    print(f"  {'steps':>9} {'total':>9} " + " ".join(f"{p:>8}" for p in policies))
    for s in range(0, a.steps, a.every):
        e = min(a.steps, s + a.every)
        row = " ".join(f"{statistics.median(step[p][s:e]):8.1f}" for p in policies)
        print(f"  {s:4d}-{e - 1:<4d} {totals[s]:4d}-{totals[e - 1]:<4d} {row}")
    print(f"summary (steps with total > {first}, past the first bucket: {len(after)}):")
    print(f"  {'policy':8} {'median':>8} {'p99':>8} {'p99/med':>8} {'p99/local':>9} {'max':>9} "
          f"{'prefill':>8} {'variants':>8} {'evicted':>7} {'compiles':>8}")
    summary = {}
    after = after or list(range(a.steps))
    for p in policies:
        xs = [step[p][i] for i in after]
        med, q = statistics.median(xs), p99(xs)
        local = p99(local_ratios(step[p], after, a.every))
        var = statistics.median(g["variants"] for g in runs[p])
        comp = statistics.median(g["compiles"] for g in runs[p])
        evicted = max(g["evicted"] for g in runs[p])
        pre = statistics.median(g["prefill"] for g in runs[p])
        summary[p] = (med, q, local, var, comp)
        print(f"  {p:8} {med:8.1f} {q:8.1f} {q / med:8.2f} {local:9.2f} {max(xs):9.1f} "
              f"{pre:8.1f} {var:8.0f} {evicted:7d} {comp:8.0f}")
    med, q, local = summary["async"][:3]
    print(f"  goal (async, p99 <= 1.2 x median): plain {'met' if q <= 1.2 * med else 'NOT met'} "
          f"({q / med:.2f}), growth taken out {'met' if local <= 1.2 else 'NOT met'} "
          f"({local:.2f}); async median / off median = {med / summary['off'][0]:.2f}")
    if not ok:
        print("decode_growth: the policies generated different tokens", file=sys.stderr)
    if a.tsv:
        print(f"M\tdecode_bucket\t{a.bucket}")
        print(f"M\tdecode_steps\t{a.steps}")
        for p in policies:
            med, q, local, var, comp = summary[p]
            xs = [step[p][i] for i in after]
            print(f"R\tdecode_step_{p}\tkiln\t1\tus\t{len(xs)}\t{min(xs):.3f}\t{med:.3f}\t"
                  f"{max(xs):.3f}")
            print(f"R\tdecode_p99_{p}\tkiln\t1\tus\t{len(xs)}\t{q:.3f}\t{q:.3f}\t{q:.3f}")
            print(f"M\tdecode_p99_local_{p}\t{local:.3f}")
            print(f"M\tdecode_variants_{p}\t{var:.0f}")
            print(f"M\tdecode_compiles_{p}\t{comp:.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
