#!/usr/bin/env python3
"""decode_growth.py - the step time of a decode whose shapes grow (issue 20):
examples/decoder prefills a 5-token prompt, then generates --steps tokens
greedily, one execute per token; its attention reads cache[:, :total], so
the symbolic dim total grows by one every step. Each policy runs the same
generation on a fresh session (its own empty disk cache, one thread):

  - off:        the generic kernels only;
  - async:      --bucket total=pow2 (or a multiple of N): variants compiled
                in the background, never on the request path; the first
                generation of the session (a 512-step generation of this
                small decoder lasts ~40 ms: the background compiles, paced
                behind the model's tier-up, finish seconds later);
  - async-warm: the same session's second generation, once the first one's
                background compiles have finished (a service's steady
                state): the variants are live and each bucket switches to
                its own.

Rounds alternate the policies; each step's time is its median over the
rounds (a preemption of the loaded host hits one round, a compile stall on
the request path would hit the same step every round). Nine by default: on
a shared 2-CPU host ~5% of single steps run over 1.5x their neighbours, so
the median of 5 rounds still left ~1% of steps 1.3x slow by chance (the p99
measured the host), that of 9 ~1.1x. It prints the
step-time curve (median of each --every steps, per policy), a table per
bucket of total, then per policy, over the steps past the first bucket (total
beyond the bucket of the first decode step):
  - the goal's measures (issue 20: p99 <= 1.2 x median past the first
    bucket): global, p99 / median over all those steps (this small decoder's
    step cost grows with total, so it measures that curve as much as any
    stall); in-bucket, the p99 over those steps of each step's time over
    its own bucket's median, with the worst single bucket's p99 / median
    beside it (a pow2 bucket spans a 2x range of total, over which the
    attention's cost still grows ~1.3x at 257..512, so this one measures the
    curve within a bucket as well as the stalls); and local, the p99 of each
    step over the median of the --every steps around it (the curve is flat
    over 16 steps: this one measures stalls: a plan, an arena grown, a
    compile, a swap, a cold first execute, a preemption hitting the same
    step in most rounds);
  - a control: off's session then runs as many steps at one total (the
    generation's middle), timed the same way: the p99 / median of a step
    whose work does not change, the spread the host itself gives;
  - the slowest step, the variants live at the last step, built, specialized
    ahead of a growing dim (kiln_counter SPEC_AHEAD), evicted (the most in
    any round), kernels compiled, and how long async-warm waited for the
    first generation's compiles.

The graph is built only from Python (kiln.graph): the decoder exists as
Python code, so its driver is Python too; the Python call costs a few
microseconds per step, the same for every policy.

usage: python3 bench/decode_growth.py [--steps 512] [--rounds 9] [--every 16]
                                      [--bucket pow2|N] [--tsv] [--quick] [--why]
  --tsv: also print M / R lines (bench_chain's format) for bench/report.py.
  --why: per policy, the slow steps (> 1.2 x their bucket's median in their round) and what
         happened on them: a plan on the request path, an arena grown, a swap to a variant,
         a background compile queued or running, a plan made ahead by the prepare thread
         (print_why).
Exit status: 0 when every generation gave the same tokens under both
policies (whether the goal is met or not), 1 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
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


def kiln_counters() -> dict:
    """kiln_counter's values by name (HITS, PLANS, ...), read from the enum in
    include/kiln/runtime.h: numbers written here went stale once a counter was
    inserted before others (--why then read SPEC_SKIPPED as plans and
    PLANS_AHEAD as arena grows)."""
    path = os.path.join(HERE, "..", "include", "kiln", "runtime.h")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    body = text[text.index("typedef enum kiln_counter {"):text.index("} kiln_counter;")]
    names = re.findall(r"^\s*KILN_COUNTER_([A-Z0-9_]+)\b", body, re.M)
    return {n: i for i, n in enumerate(names)}


_C = kiln_counters()
COUNTER_VARIANTS_LIVE, COUNTER_VARIANTS_BUILT = _C["VARIANTS_LIVE"], _C["VARIANTS_BUILT"]
COUNTER_VARIANTS_EVICTED, COUNTER_COMPILES = _C["VARIANTS_EVICTED"], _C["COMPILES"]
COUNTER_SPEC_AHEAD = _C["SPEC_AHEAD"]  # variants specialized ahead of a growing dim
# per step (--why): what happened on it
COUNTER_HITS, COUNTER_PENDING = _C["HITS"], _C["ASYNC_PENDING"]
COUNTER_PLANS, COUNTER_PLANS_AHEAD = _C["PLANS"], _C["PLANS_AHEAD"]
COUNTER_ARENA_GROWS = _C["ARENA_GROWS"]
WHY_COUNTERS = (COUNTER_HITS, COUNTER_PLANS, COUNTER_ARENA_GROWS, COUNTER_PENDING, COUNTER_COMPILES,
                COUNTER_PLANS_AHEAD)


def bucket_of(total: int, bucket: str) -> int:
    """The upper end of total's bucket."""
    if bucket == "pow2":
        b = 1
        while b < total:
            b *= 2
        return b
    n = int(bucket)
    return -(-total // n) * n


def decode(dec: "decoder.Decoder", steps: int, bucket: str) -> dict:
    """Prefill + steps from empty caches; step times in microseconds."""
    for c in dec.caches:
        c[...] = 0
    dec.length = 0
    m = dec.model._m
    live = []  # variants live after each step
    marks = [[int(m.counter(k)) for k in WHY_COUNTERS]]  # counters before and after each step
    tokens = list(PROMPT)
    t0 = time.perf_counter_ns()
    logits = dec.step(np.asarray(PROMPT, np.int64))
    prefill_us = (time.perf_counter_ns() - t0) / 1e3
    times, totals = [], []
    gc.disable()  # as timeit does: a collection would land on the same steps every round
    try:
        for _ in range(steps):
            tokens.append(int(np.argmax(logits[-1])))
            t0 = time.perf_counter_ns()
            logits = dec.step(np.asarray(tokens[-1:], np.int64))
            times.append((time.perf_counter_ns() - t0) / 1e3)
            totals.append(dec.length)
            live.append(int(m.counter(COUNTER_VARIANTS_LIVE)))
            marks.append([int(m.counter(k)) for k in WHY_COUNTERS])
    finally:
        gc.enable()
    return dict(times=times, totals=totals, prefill=prefill_us, tokens=tokens, live=live,
                events=step_events(marks, [bucket_of(t, bucket) for t in totals]))


def step_events(marks: list, buckets: list) -> list:
    """Per step, what happened on it (from the counters before and after it): 'plan' (the
    execute placed its intermediates: no cached plan fitted), 'arena' (it allocated a larger
    arena block), 'swap' (its first execute on a variant: after generic ones, or the first
    of a new bucket; a variant's trial alternates generic and variant executes, so each of
    its variant turns counts as one), 'compile' (a background compile was queued or running, or a kernel
    was compiled), 'prep' (the prepare thread planned a bucket ahead, and maybe faulted in
    its arena, meanwhile)."""
    out, prev_hit, prev_bucket = [], False, None
    for a, b, bk in zip(marks, marks[1:], buckets):
        hit = b[0] > a[0]
        ev = set()
        if b[1] > a[1]:
            ev.add("plan")
        if b[2] > a[2]:
            ev.add("arena")
        if hit and (not prev_hit or bk != prev_bucket):
            ev.add("swap")
        if a[3] > 0 or b[3] > 0 or b[4] > a[4]:
            ev.add("compile")
        if b[5] > a[5]:
            ev.add("prep")
        prev_hit, prev_bucket = hit, bk
        out.append(ev)
    return out


def fixed(dec: "decoder.Decoder", steps: int, total: int) -> list:
    """The control: `steps` decode steps that all run at one total (each
    rewrites the cache position total - 1, the same Python call as a step
    of the generation): the step's time where nothing grows, so its p99 /
    median is what this host (and the step itself) gives without a curve
    or a stall to blame."""
    times = []
    gc.disable()
    try:
        for _ in range(steps):
            dec.length = total - 1
            t0 = time.perf_counter_ns()
            dec.step(np.asarray([3], np.int64))
            times.append((time.perf_counter_ns() - t0) / 1e3)
    finally:
        gc.enable()
    return times


def generate(policy: str, steps: int, bucket: str) -> dict:
    """One generation on a fresh session; under async-warm, the second one,
    after the first one's background compiles have finished."""
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
        settle_s = 0.0
        if policy == "async-warm":
            decode(dec, steps, bucket)
            t0 = time.perf_counter()
            session.wait_compiles(120.0)
            settle_s = time.perf_counter() - t0
        r = decode(dec, steps, bucket)
        if policy == "off":  # the control, on the same session after its generation
            r["fixed"] = fixed(dec, steps, len(PROMPT) + steps // 2)
        c = m._m.counter
        ahead = c(COUNTER_SPEC_AHEAD)  # -1 from a library without the counter
        r.update(variants=int(c(COUNTER_VARIANTS_BUILT)), compiles=int(c(COUNTER_COMPILES)),
                 ahead=max(0, int(ahead)),
                 evicted=int(c(COUNTER_VARIANTS_EVICTED)), settle=settle_s,
                 live_at_end=r["live"][-1] if r["live"] else 0)
        return r
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def p99(xs: list) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.99 * len(s)))]


def by_bucket(totals: list, idx: list, bucket: str) -> dict:
    """The step indices in idx grouped by the bucket of their total (upper end -> steps)."""
    groups: dict = {}
    for i in idx:
        groups.setdefault(bucket_of(totals[i], bucket), []).append(i)
    return groups


def bucket_ratios(times: list, groups: dict) -> tuple:
    """Within each bucket, p99 / median of its steps (a bucket's attention cost is nearly
    flat, so this is the stall measure): the worst bucket's ratio, and the p99 over every
    step of times[i] / its bucket's median (pooled)."""
    worst, pooled = 0.0, []
    for steps in groups.values():
        xs = [times[i] for i in steps]
        med = statistics.median(xs)
        worst = max(worst, p99(xs) / med)
        pooled += [x / med for x in xs]
    return worst, p99(pooled) if pooled else 0.0


def local_ratios(times: list, idx: list, every: int) -> list:
    """times[i] / the median of the `every` steps centred on i, for i in idx."""
    h = max(1, every // 2)
    return [times[i] / statistics.median(times[max(0, i - h):i + h]) for i in idx]


WHY = ("plan", "arena", "swap", "compile", "prep")


def print_why(runs: dict, policies: tuple, after: list, bucket: str) -> None:
    """--why: per policy, the slow steps of each round (> 1.2 x the median of their bucket in
    that round, past the first bucket) and what happened on them; steps with an event and how
    many of those were slow; the five slowest steps of the per-step medians with their events
    in every round."""
    print("why (per round: steps > 1.2 x their bucket's median in that round; events as "
          "step_events says; a slow step may have several):")
    print(f"  {'policy':10} {'slow/rnd':>8} " + " ".join(f"{w + ' slow/all':>16}" for w in WHY) +
          f" {'none':>6}")
    for p in policies:
        slow_n, none_n = 0, 0
        hit = {w: [0, 0] for w in WHY}
        for g in runs[p]:
            groups = by_bucket(g["totals"], after, bucket)
            for steps in groups.values():
                med = statistics.median(g["times"][i] for i in steps)
                for i in steps:
                    slow = g["times"][i] > 1.2 * med
                    ev = g["events"][i]
                    slow_n += slow
                    none_n += slow and not ev
                    for w in WHY:
                        if w in ev:
                            hit[w][0] += slow
                            hit[w][1] += 1
        r = len(runs[p])
        cells = " ".join(f"{hit[w][0] / r:7.1f}/{hit[w][1] / r:<8.1f}" for w in WHY)
        print(f"  {p:10} {slow_n / r:8.1f} {cells} {none_n / r:6.1f}")
    for p in policies:
        step = [statistics.median(g["times"][i] for g in runs[p]) for i in after]
        worst = sorted(range(len(after)), key=lambda j: -step[j])[:5]
        cells = []
        for j in worst:
            i = after[j]
            ev = ["+".join(sorted(g["events"][i])) or "-" for g in runs[p]]
            cells.append(f"step {i} total {runs[p][0]['totals'][i]} {step[j]:.0f} us "
                         f"[{' '.join(ev)}]")
        print(f"  {p} slowest: " + "; ".join(cells))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--every", type=int, default=16)
    ap.add_argument("--bucket", default="pow2", help="pow2 or a multiple N")
    ap.add_argument("--tsv", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one round")
    ap.add_argument("--why", action="store_true",
                    help="what happened on the slow steps (plans, arena grows, variant swaps, "
                    "background compiles)")
    a = ap.parse_args()
    if a.bucket != "pow2" and not (a.bucket.isdigit() and int(a.bucket) > 0):
        ap.error("--bucket is pow2 or a positive multiple")
    if len(PROMPT) + a.steps > decoder.CONFIG["max_len"]:
        ap.error(f"--steps: the caches hold {decoder.CONFIG['max_len']} tokens")
    rounds = 1 if a.quick else max(1, a.rounds)
    policies = ("off", "async", "async-warm")
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
    after = after or list(range(a.steps))
    groups = by_bucket(totals, after, a.bucket)
    print(f"per bucket of total (steps past the first bucket; median us, p99 / median):")
    print(f"  {'bucket':>6} {'steps':>5} " +
          " ".join(f"{p + ' med':>14} {'p99/med':>7}" for p in policies))
    for b in sorted(groups):
        cells = []
        for p in policies:
            xs = [step[p][i] for i in groups[b]]
            med = statistics.median(xs)
            cells.append(f"{med:14.1f} {p99(xs) / med:7.2f}")
        print(f"  {b:6d} {len(groups[b]):5d} " + " ".join(cells))
    print(f"summary (steps with total > {first}, past the first bucket: {len(after)}):")
    print(f"  {'policy':10} {'median':>7} {'p99':>7} {'p99/med':>7} {'in-bkt':>6} "
          f"{'worst':>5} {'local':>5} {'max':>7} {'prefill':>7} {'live':>4} {'built':>5} "
          f"{'ahead':>5} {'evicted':>7} {'compiles':>8} {'settle s':>8}")
    summary = {}
    for p in policies:
        xs = [step[p][i] for i in after]
        med, q = statistics.median(xs), p99(xs)
        local = p99(local_ratios(step[p], after, a.every))
        worst, pooled = bucket_ratios(step[p], groups)
        var = statistics.median(g["variants"] for g in runs[p])
        ahead = statistics.median(g["ahead"] for g in runs[p])
        live = statistics.median(g["live_at_end"] for g in runs[p])
        comp = statistics.median(g["compiles"] for g in runs[p])
        evicted = max(g["evicted"] for g in runs[p])
        pre = statistics.median(g["prefill"] for g in runs[p])
        settle = statistics.median(g["settle"] for g in runs[p])
        summary[p] = (med, q, local, var, comp, pooled, worst)
        print(f"  {p:10} {med:7.1f} {q:7.1f} {q / med:7.2f} {pooled:6.2f} {worst:5.2f} "
              f"{local:5.2f} {max(xs):7.1f} {pre:7.1f} {live:4.0f} {var:5.0f} {ahead:5.0f} "
              f"{evicted:7d} {comp:8.0f} {settle:8.2f}")
    for p in policies:
        med, q, local = summary[p][:3]
        pooled, worst = summary[p][5:7]
        print(f"  goal ({p}, p99 <= 1.2 x median past the first bucket): global "
              f"{'met' if q <= 1.2 * med else 'NOT met'} ({q / med:.2f}: the curve), in-bucket "
              f"{'met' if pooled <= 1.2 else 'NOT met'} ({pooled:.2f}; worst bucket "
              f"{worst:.2f}: the stalls and the curve within a bucket), local "
              f"{'met' if local <= 1.2 else 'NOT met'} ({local:.2f}: the stalls); "
              f"median / off's = {med / summary['off'][0]:.2f}")
    # the control: off's session at one total (the middle of the generation)
    fx = [statistics.median(g["fixed"][i] for g in runs["off"]) for i in range(a.steps)]
    fmed, fq = statistics.median(fx), p99(fx)
    print(f"  control (off, every step at total {len(PROMPT) + a.steps // 2}, the same rounds): "
          f"median {fmed:.1f}, p99 {fq:.1f}, p99/med {fq / fmed:.2f}: this host's spread for "
          f"a step whose work does not change")
    if a.why:
        print_why(runs, policies, after, a.bucket)
    if not ok:
        print("decode_growth: the policies generated different tokens", file=sys.stderr)
    if a.tsv:
        print(f"M\tdecode_bucket\t{a.bucket}")
        print(f"M\tdecode_p99_fixed_control\t{fq / fmed:.3f}")
        print(f"M\tdecode_steps\t{a.steps}")
        for p in policies:
            med, q, local, var, comp, pooled, worst = summary[p]
            xs = [step[p][i] for i in after]
            print(f"R\tdecode_step_{p}\tkiln\t1\tus\t{len(xs)}\t{min(xs):.3f}\t{med:.3f}\t"
                  f"{max(xs):.3f}")
            print(f"R\tdecode_p99_{p}\tkiln\t1\tus\t{len(xs)}\t{q:.3f}\t{q:.3f}\t{q:.3f}")
            print(f"M\tdecode_p99_local_{p}\t{local:.3f}")
            print(f"M\tdecode_p99_in_bucket_{p}\t{pooled:.3f}")
            print(f"M\tdecode_p99_worst_bucket_{p}\t{worst:.3f}")
            print(f"M\tdecode_variants_{p}\t{var:.0f}")
            print(f"M\tdecode_compiles_{p}\t{comp:.0f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
