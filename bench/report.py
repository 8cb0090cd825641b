"""report.py - the one table of bench/run.sh: reads what the steps wrote
(bench_gemm --tsv at 1 and 2 threads, bench_chain --tsv, bench_softmax and
bench/anchors/ort_softmax.py --tsv, bench_topk --tsv, bench_movement --tsv,
bench_conv --tsv (conv2d beside oneDNN), bench_encoder_latency --tsv
(MiniLM and a BERT-base-sized encoder beside ORT), the anchors' JSON from
bench/anchors/ort_bench.py) and prints, per case, kiln's median, each
anchor's median, the ratio kiln speed / anchor speed (> 1: kiln faster),
the target and whether it is met; then every figure as min / median / max
and the footnotes (threads, builds, MAX, failures).

Assumes: the files were written in this invocation of bench/run.sh (a file
that is missing or empty makes its rows say "not measured", with the reason
run.sh gives through --failed). Python 3 standard library only.

usage: report.py [--gemm1 F] [--gemm2 F] [--chain F] [--softmax F] [--topk F] [--movement F]
                 [--conv F] [--encoders F]
                 [--anchors F]
                 [--failed STEP=REASON]... [--note TEXT]... [--quick]
                 [--markdown OUT]
Exit status: 0.
"""
import argparse
import json
import os
import platform
import subprocess
import time


def read_tsv(path):
    """-> (meta {key: value}, rows {(case, engine, threads): dict}, errors [...])"""
    meta, rows, errs = {}, {}, []
    if not path or not os.path.exists(path):
        return meta, rows, errs
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "M" and len(p) >= 3:
                meta[p[1]] = p[2]
            elif p[0] == "R" and len(p) >= 9:
                rows[(p[1], p[2], int(p[3]))] = dict(unit=p[4], runs=int(p[5]), min=float(p[6]),
                                                     median=float(p[7]), max=float(p[8]))
            elif p[0] == "E" and len(p) >= 5:
                errs.append(dict(case=p[1], engine=p[2], threads=int(p[3]), reason=p[4]))
    return meta, rows, errs


def cpu_model():
    """'model name (family F model M, cache size)' from /proc/cpuinfo."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = (x.strip() for x in line.split(":", 1))
                    info.setdefault(k, v)
                elif info:
                    break  # the first processor is enough
    except OSError:
        pass
    name = info.get("model name") or platform.processor() or "unknown CPU"
    extra = ["family %s model %s" % (info["cpu family"], info["model"])] \
        if "cpu family" in info and "model" in info else []
    if "cache size" in info:
        extra.append("cache size %s" % info["cache size"])
    return name + (" (%s)" % ", ".join(extra) if extra else "")


def git_tree(src):
    """'abc1234' or 'abc1234 + N uncommitted file(s)'; '' when not a checkout."""
    def git(*args):
        try:
            return subprocess.run(["git", "-C", src] + list(args), capture_output=True,
                                  text=True).stdout
        except OSError:
            return ""
    rev = git("rev-parse", "--short", "HEAD").strip()
    if not rev:
        return ""
    dirty = len(git("status", "--porcelain").splitlines())
    return rev + (" + %d uncommitted file(s)" % dirty if dirty else "")


def qfmt(q, target):
    """A ratio; with 3 decimals where 2 would hide that it misses its target."""
    if q is None:
        return "-"
    if target is not None and q < target <= round(q, 2):
        return "%.3fx" % q
    return "%.2fx" % q


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "us":
        if v >= 1000:
            return "%.3f ms" % (v / 1e3)
        return "%.2f us" % v if v >= 10 else "%.3f us" % v
    if unit == "ms":
        return "%.1f ms" % v if v >= 10 else "%.2f ms" % v
    return "%.1f" % v if v >= 10 else "%.2f" % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemm1")
    ap.add_argument("--gemm2")
    ap.add_argument("--chain")
    ap.add_argument("--chain0", help="bench_chain --tsv run with KILN_FUSE=0")
    ap.add_argument("--softmax", help="bench_softmax and ort_softmax.py --tsv, one file")
    ap.add_argument("--topk", help="bench_topk --tsv (kiln and the C selection)")
    ap.add_argument("--movement", help="bench_movement --tsv (kiln and its triad)")
    ap.add_argument("--quant", help="bench_quant --tsv (qmatmul GEMV, its triad, ggml's)")
    ap.add_argument("--quant-rows", action="append", default=[],
                    help="bench_quant --tsv --m M (qmatmul of M rows beside ggml's); repeatable")
    ap.add_argument("--gemm-half", help="bench_gemm_half --tsv (bf16 GEMM, oneDNN, kiln f32)")
    ap.add_argument("--conv", help="bench_conv --tsv (kiln's conv2d and oneDNN's)")
    ap.add_argument("--encoders", help="bench_encoder_latency --tsv lines (kiln and ORT)")
    ap.add_argument("--rss", help="bench_peak_rss lines (peak RSS of kiln and ORT)")
    ap.add_argument("--decode", help="decode_growth.py --tsv (decoder steps, growing attention)")
    ap.add_argument("--pyover", help="python_overhead.py --tsv (Python execute vs C and ORT)")
    ap.add_argument("--remote", help="bench_remote_cache --tsv (encoder load: Redis, disk, cold)")
    ap.add_argument("--anchors")
    ap.add_argument("--failed", action="append", default=[])
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--source", help="kiln's source tree (for its git revision)")
    ap.add_argument("--markdown")
    a = ap.parse_args()
    failed = dict(f.split("=", 1) for f in a.failed if "=" in f)

    g1m, g1, g1e = read_tsv(a.gemm1)
    g2m, g2, g2e = read_tsv(a.gemm2)
    cm, ch, che = read_tsv(a.chain)
    c0m, ch0, ch0e = read_tsv(a.chain0)
    anc = None
    if a.anchors and os.path.exists(a.anchors):
        try:
            with open(a.anchors) as f:
                anc = json.load(f)
        except ValueError as e:
            failed.setdefault("anchors", "cannot read %s: %s" % (a.anchors, e))

    table = []  # rows: case, kiln, anchor, ratio, target, met
    details = []  # rows: what, unit, runs, min, median, max

    def why(step, default="not measured"):
        return "not measured (step %s failed: see the notes)" % step if step in failed else default

    def detail(what, r, unit=None):
        if r:
            runs = str(r["runs"]) if "runs" in r else "%s round(s)" % r.get("rounds", "?")
            details.append((what, unit or r["unit"], runs,
                            fmt(r["min"], r.get("unit", unit)), fmt(r["median"], r.get("unit", unit)),
                            fmt(r["max"], r.get("unit", unit))))

    def ratio(k, x, unit):
        """kiln speed / anchor speed from two medians."""
        if not k or not x:
            return None
        return x / k if unit in ("us", "ms") else k / x

    def add(case, unit, kiln, anchors, missing):
        """anchors: [(label, row or None, target ratio or None)]; the first
        row carries the case and kiln's figure, one row per anchor."""
        kv = kiln["median"] if kiln else None
        first = True
        for label, r, target in anchors or [("-", None, None)]:
            rv = r["median"] if r else None
            q = ratio(kv, rv, unit)
            met = ""
            if target is not None:
                met = "-" if q is None else ("yes" if q >= target else "NO")
            table.append((case if first else "", fmt(kv, unit) if first and kv else
                          (missing if first else ""),
                          "%s %s" % (label, fmt(rv, unit)) if r else
                          ("%s: n/a (see the notes)" % label if label != "-" else "-"),
                          qfmt(q, target),
                          (">= %.2fx" % target) if target is not None else "(info)", met))
            first = False

    # ---- GEMM, 1 thread
    sizes = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
             (1, 4096, 4096)]
    for m, n, k in sizes:
        cid = "gemm_%dx%dx%d" % (m, n, k)
        label = ("GEMM %d (GFLOP/s)" % m) if m > 1 else "GEMV M=1 K=N=4096 (GFLOP/s)"
        kr = g1.get((cid, "kiln", 1))
        dn, ob = g1.get((cid, "oneDNN", 1)), g1.get((cid, "OpenBLAS", 1))
        add(label, "GFLOP/s", kr, [("oneDNN", dn, 0.9), ("OpenBLAS", ob, None)],
            why("gemm1", "not measured (see the notes)"))
        # the same GEMM as a served model runs it: B a bound weight, packed once
        kw = g1.get((cid, "kiln-weight", 1))
        if kw:
            add(label.replace(" (GFLOP/s)", ", B a bound weight (GFLOP/s)"), "GFLOP/s", kw,
                [("oneDNN", dn, 0.9)], why("gemm1"))
        detail("%s kiln 1T" % cid, kr)
        detail("%s kiln-weight 1T" % cid, kw)
        detail("%s oneDNN 1T" % cid, dn)
        detail("%s OpenBLAS 1T" % cid, ob)

    # ---- GEMM 1024, 2 threads vs 1
    cid = "gemm_1024x1024x1024"
    k2, k1 = g2.get((cid, "kiln", 2)), g2.get((cid, "kiln", 1))
    d2, o2 = g2.get((cid, "oneDNN", 2)), g2.get((cid, "OpenBLAS", 2))
    miss2 = why("gemm2")
    for e in g2e:
        if e["case"] == cid and e["engine"] == "kiln" and e["threads"] == 2:
            miss2 = e["reason"]
    add("GEMM 1024, 2 threads (GFLOP/s)", "GFLOP/s", k2,
        [("kiln 1 thread", k1, 1.7), ("oneDNN 2T", d2, None), ("OpenBLAS 2T", o2, None)], miss2)
    detail("%s kiln 1T (same run as 2T)" % cid, k1)
    detail("%s kiln 2T" % cid, k2)
    detail("%s oneDNN 2T" % cid, d2)
    detail("%s OpenBLAS 2T" % cid, o2)

    # ---- fused chain vs triad
    tr, tr0 = ch.get(("triad", "triad", 1)), ch0.get(("triad", "triad", 1))
    n_el = cm.get("chain_elements", "?")
    for cid, label, target in (("chain_full", "gelu(x*a+b), a b full [N] (GB/s)", 0.8),
                               ("chain_scalar", "gelu(x*a+b), a b scalars (GB/s)", None)):
        r = ch.get((cid, "kiln", 1))
        add(label, "GB/s", r, [("triad", tr, target)], why("chain"))
        detail("%s kiln" % cid, r)
        if a.chain0:
            r0 = ch0.get((cid, "kiln KILN_FUSE=0", 1))
            add(label.replace(" (GB/s)", ", KILN_FUSE=0 (GB/s)"), "GB/s", r0,
                [("triad", tr0, None)], why("chain0"))
            detail("%s kiln KILN_FUSE=0" % cid, r0)
    detail("triad", tr)
    detail("triad (KILN_FUSE=0 process)", tr0)

    # ---- softmax vs ORT, 1 thread
    _, sm, _ = read_tsv(a.softmax)
    for cid, label in (("softmax", "softmax [1,12,384,384] (us)"),
                       ("scale+mask+softmax", "softmax(x*0.125+mask) [1,12,384,384] (us)")):
        kr, orr = sm.get((cid, "kiln", 1)), sm.get((cid, "ort", 1))
        add(label, "us", kr, [("ORT", orr, 1.0)], why("softmax"))
        detail("%s kiln 1T" % cid, kr)
        detail("%s ORT 1T" % cid, orr)

    # ---- top_k vs a C bounded selection, 1 thread (issue 17: >= 0.8x)
    _, tk, _ = read_tsv(a.topk)
    for rows, n in ((1, 32000), (8, 128256)):
        for k in (1, 8, 50):
            cid = "top_k[%d,%d] k=%d" % (rows, n, k)
            kr, cr = tk.get((cid, "kiln", 1)), tk.get((cid, "C", 1))
            add("%s (us)" % cid, "us", kr, [("C selection", cr, 0.8)], why("topk"))
            detail("%s kiln 1T" % cid, kr)
            detail("%s C 1T" % cid, cr)

    # ---- indexing ops vs the triad, 1 thread (issue 17: >= 0.7x of its bandwidth)
    _, mv, _ = read_tsv(a.movement)
    mtr = mv.get(("triad", "triad", 1))
    for cid, label in (("cumsum_last", "cumsum [4096,4096] axis 1"),
                       ("cumsum_first", "cumsum [4096,4096] axis 0"),
                       ("gather_nd", "gather_nd 65536 rows of [65536,256]"),
                       ("scatter", "scatter 4M in order into [16M]"),
                       ("max_pool2d", "max_pool2d 3x3 [1,1024,1024,16]"),
                       ("avg_pool2d", "avg_pool2d 3x3 [1,1024,1024,16]")):
        kr = mv.get((cid, "kiln", 1))
        add("%s (GB/s)" % label, "GB/s", kr, [("triad", mtr, 0.7)], why("movement"))
        detail("%s kiln 1T" % cid, kr)
    detail("gather_nd C memcpy rows 1T", mv.get(("gather_nd", "C", 1)))
    detail("triad (bench_movement)", mtr)

    # ---- qmatmul GEMV from GGUF blocks vs the triad, 1 thread (issue 21: >= 0.8x),
    # and beside llama.cpp's ggml mul_mat on the same bytes (information)
    qmeta, qm, _ = read_tsv(a.quant)
    qtr = qm.get(("triad", "triad", 1))
    for enc in ("q4_0", "q4_k", "q8_0", "q5_k", "q6_k"):
        for k in (4096, 14336):
            cid = "%s_4096x%d" % (enc, k)
            kr, gr = qm.get((cid, "kiln", 1)), qm.get((cid, "ggml", 1))
            pr = qm.get((cid, "ggml_repack", 1))
            add("qmatmul %s GEMV [1,%d] x [4096,%d] (GB/s of weights)" % (enc, k, k), "GB/s", kr,
                [("triad", qtr, 0.8), ("ggml", gr, None)] +
                ([("ggml repacked", pr, None)] if pr else []), why("quant"))
            detail("%s kiln 1T" % cid, kr)
            detail("%s ggml 1T" % cid, gr)
            detail("%s ggml repacked 1T" % cid, pr)
    detail("triad (bench_quant)", qtr)
    qrows_meta = {}
    for path in a.quant_rows:
        qrm, qr, _ = read_tsv(path)
        qrows_meta.update(qrm)
        m = next((c.split("_")[2].split("x")[0] for c, _, _ in qr if c.count("_") == 2), None)
        for enc in ("q4_0", "q4_k", "q8_0", "q5_k", "q6_k"):
            for k in (4096, 14336):
                cid = "%s_%sx4096x%d" % (enc, m, k)
                kr, gr = qr.get((cid, "kiln", 1)), qr.get((cid, "ggml", 1))
                pr = qr.get((cid, "ggml_repack", 1))
                if not kr and not gr:
                    continue
                add("qmatmul %s [%s,%d] x [4096,%d] (GB/s of weights)" % (enc, m, k, k), "GB/s",
                    kr, [("ggml", gr, None)] + ([("ggml repacked", pr, None)] if pr else []),
                    why("quant"))
                detail("%s kiln 1T" % cid, kr)
                detail("%s ggml 1T" % cid, gr)
                detail("%s ggml repacked 1T" % cid, pr)

    # ---- conv2d vs oneDNN's convolution, 1 thread (issue 17: >= 0.8x)
    cvm, cv, cve = read_tsv(a.conv)
    shapes = [(56, 64, 64, 3), (56, 64, 256, 1), (56, 256, 64, 1), (28, 128, 128, 3),
              (28, 512, 128, 1), (14, 256, 256, 3), (14, 1024, 256, 1), (7, 512, 512, 3),
              (7, 2048, 512, 1)]
    for n in (1, 8):
        for h, c, f, k in shapes:
            cid = "n%d_%dx%d_%d-%d_%dx%d" % (n, h, h, c, f, k, k)
            kr, dr = cv.get((cid, "kiln", 1)), cv.get((cid, "oneDNN", 1))
            add("conv2d %s (GFLOP/s)" % cid, "GFLOP/s", kr, [("oneDNN", dr, 0.8)], why("conv"))
            detail("%s kiln 1T" % cid, kr)
            detail("%s oneDNN 1T" % cid, dr)

    # ---- bf16 GEMM vs oneDNN's bf16 matmul and kiln's f32 GEMM, 1 thread
    # (issue 21: >= 0.9x oneDNN and >= 1.6x kiln f32, b prepacked on every side)
    _, hg, _ = read_tsv(a.gemm_half)
    for cid in ("256x256x256", "512x512x512", "1024x1024x1024", "2048x2048x2048",
                "1x4096x4096", "4x4096x4096", "8x4096x4096"):
        kr = hg.get((cid, "kiln bf16 prepacked", 1))
        dr = hg.get((cid, "oneDNN bf16 prepacked", 1))
        fr = hg.get((cid, "kiln f32 prepacked", 1))
        add("bf16 GEMM %s (GFLOP/s)" % cid, "GFLOP/s", kr,
            [("oneDNN bf16", dr, 0.9), ("kiln f32", fr, 1.6)], why("gemm_half"))
        detail("bf16 %s kiln 1T" % cid, kr)
        detail("bf16 %s oneDNN 1T" % cid, dr)
        detail("bf16 %s kiln f32 1T" % cid, fr)

    # ---- ONNX encoders vs ORT (issue 16: kiln <= ORT latency at every point)
    _, en, _ = read_tsv(a.encoders)
    for model, name in (("minilm", "MiniLM-L3 (ONNX)"), ("bert", "BERT-base-sized, 12 layers (ONNX)")):
        for load in ("cold", "warm"):
            cid = "%s_load_%s" % (model, load)
            t = 1 if load == "cold" else 2
            kr, orr = en.get((cid, "kiln", t)), en.get((cid, "ort", t))
            add("%s import+compile, %s cache (ms)" % (name, load), "ms", kr,
                [("ORT session", orr, None)], why("encoders"))
        for t in (1, 2):
            for shape in ("1x16", "1x128", "1x384", "8x128"):
                cid = "%s_%s" % (model, shape)
                kr, orr = en.get((cid, "kiln", t)), en.get((cid, "ort", t))
                add("%s %s, %dT (ms)" % (name, shape, t), "ms", kr, [("ORT", orr, 1.0)],
                    why("encoders"))
                detail("%s kiln %dT" % (cid, t), kr)
                detail("%s ORT %dT" % (cid, t), orr)

    # ---- peak RSS of the 12-layer encoder, one process each (issue 15: <= ORT + 5%)
    _, rs, _ = read_tsv(a.rss)
    orr = rs.get(("peak_rss_ort", "ort", 1))
    for eng, how in (("kiln", "weights file bound"), ("onnx", "from the ONNX file")):
        kr = rs.get(("peak_rss_%s" % eng, "kiln", 1))
        if kr and orr:
            q = kr["median"] / orr["median"]
            table.append(("BERT-base-sized encoder peak RSS, %s (MiB)" % how,
                          "%.0f MiB" % kr["median"], "ORT %.0f MiB" % orr["median"],
                          "%.2fx" % q, "<= 1.05x ORT", "yes" if q <= 1.05 else "NO"))
        else:
            table.append(("BERT-base-sized encoder peak RSS, %s (MiB)" % how, why("rss"),
                          "-", "-", "<= 1.05x ORT", "-"))

    # ---- the BERT-base-sized encoder's kernels from Redis vs disk vs cold (issue 22)
    rm, rc, _ = read_tsv(a.remote)
    kr = rc.get(("encoder_load_redis", "kiln", 1))
    dk, cd = rc.get(("encoder_load_disk", "kiln", 1)), rc.get(("encoder_load_cold", "kiln", 1))
    tl = rc.get(("encoder_load_redis_tls", "kiln", 1))
    add("BERT-base-sized encoder compile, %s kernels from Redis (ms)" % rm.get("kernels", "?"),
        "ms", kr, [("local disk cache", dk, None), ("cold compile", cd, None)], why("remote"))
    if tl:
        add("BERT-base-sized encoder compile, kernels from Redis over TLS (ms)", "ms", tl,
            [("Redis, plain", kr, None), ("local disk cache", dk, None)], why("remote"))
    for case, r in (("redis", kr), ("redis_tls", tl), ("disk", dk), ("cold", cd)):
        detail("encoder_load_%s" % case, r)

    # ---- the decoder's steps while its attention grows, async pow2 vs off (issue 20)
    dm, dc, _ = read_tsv(a.decode)
    ko = dc.get(("decode_step_off", "kiln", 1))
    for pol, what in (("async", "first generation"), ("async-warm", "second generation")):
        ka = dc.get(("decode_step_%s" % pol, "kiln", 1))
        add("decoder step, %s steps, %s %s buckets, %s (us)"
            % (dm.get("decode_steps", "?"), pol, dm.get("decode_bucket", "?"), what), "us", ka,
            [("specialize off", ko, None)], why("decode"))
        pa = dc.get(("decode_p99_%s" % pol, "kiln", 1))
        if ka and pa:
            q = pa["median"] / ka["median"]
            local = float(dm.get("decode_p99_local_%s" % pol, "nan"))
            table.append(("decoder step p99 / median, %s (%s variants)"
                          % (pol, dm.get("decode_variants_%s" % pol, "?")),
                          "%.2f (growth out: %.2f)" % (q, local), "-", "-", "<= 1.2",
                          "yes" if q <= 1.2 else ("growth out only" if local <= 1.2 else "NO")))
    for pol in ("off", "async", "async-warm"):
        for kind in ("step", "p99"):
            case = "decode_%s_%s" % (kind, pol)
            detail(case, dc.get((case, "kiln", 1)))

    # ---- Python's model.execute over the C call, 1-op graph (issue 18)
    _, po, _ = read_tsv(a.pyover)
    pc, pp = po.get(("python_overhead_relu16", "kiln C", 1)), \
        po.get(("python_overhead_relu16", "kiln Python", 1))
    if pc and pp:
        over = pp["median"] - pc["median"]
        table.append(("Python model.execute over the C call, relu [16] (us)",
                      "%.2f us" % over, "C execute %s" % fmt(pc["median"], "us"), "-",
                      "<= 3 us", "yes" if over <= 3 else "NO"))
    else:
        table.append(("Python model.execute over the C call, relu [16] (us)",
                      why("pyover"), "-", "-", "<= 3 us", "-"))
    add("Python model.execute, relu [16] (us)", "us", pp,
        [("ORT Python session.run", po.get(("python_overhead_relu16", "ORT Python", 1)), None)],
        why("pyover"))
    for eng in ("kiln C", "kiln Python", "kiln Python Tensor", "ORT Python"):
        detail("python_overhead %s" % eng, po.get(("python_overhead_relu16", eng, 1)))

    # ---- graphs vs ORT and MAX
    times = (anc or {}).get("times", {})
    checks = (anc or {}).get("checks", {})
    for case, label in (("mlp_b1", "mlp.mlir batch 1 (latency)"),
                        ("mlp_b64", "mlp.mlir batch 64 (latency)"),
                        ("attention", "attention_block b=4 s=128 (latency)")):
        kr = times.get("%s|kiln ctypes [Py]" % case)
        orr = times.get("%s|ORT io_binding [Py]" % case)
        mx = times.get("%s|MAX [Py]" % case)
        bad = [e for e, c in checks.get(case, {}).items() if not c["ok"]]
        miss = why("anchors") if not anc else "not measured (see the notes)"
        if bad:
            miss = "outputs disagree with ORT: " + ", ".join(bad)
            kr = None
        add(label, "us", kr, [("ORT", orr, 1.0), ("MAX", mx, 1.0)], miss)
        for eng in ("kiln ctypes [Py]", "kiln CLI [C]", "ORT io_binding [Py]", "MAX [Py]"):
            detail("%s %s" % (case, eng), times.get("%s|%s" % (case, eng)), "us")

    # ---- execute overhead
    ov = ch.get(("overhead_relu16", "kiln", 1))
    kv = ov["median"] if ov else None
    table.append(("execute overhead, relu [16]", fmt(kv, "us") if ov else why("chain"), "-", "-",
                  "<= 1 us", "-" if kv is None else ("yes" if kv <= 1.0 else "NO")))
    detail("overhead_relu16 kiln 1T", ov)
    for (cid, eng, thr), r in sorted(ch.items()):
        if cid == "overhead_relu16" and eng != "kiln":
            table.append(("  same, %s (%s)" % (eng, thr or "?"), fmt(r["median"], "us"), "-", "-",
                          "(info)", ""))
            detail("overhead_relu16 %s" % eng, r)

    # ---- print
    out = []
    P = out.append
    tree = git_tree(a.source) if a.source else ""
    P("# kiln benchmarks, %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    target = g1m.get("target", "").split(" ")
    P("# CPU: %s, %d logical CPUs%s" % (cpu_model(), os.cpu_count() or 0,
                                         ", LLVM host CPU " + target[1] if len(target) > 1 else ""))
    P("# load average at the end %s%s" % (
        " ".join("%.2f" % x for x in os.getloadavg()),
        "; QUICK run (smoke test: few repetitions, not figures to quote)" if a.quick else ""))
    P("# kiln %s%s" % (g1m.get("kiln_version") or cm.get("kiln_version") or
                       ((anc or {}).get("versions", {}).get("kiln") or "?").replace("kiln ", ""),
                       ", tree " + tree if tree else ""))
    P("")
    P("ratio = kiln speed / anchor speed, medians from the same invocation (> 1: kiln faster);")
    P("met? compares the ratio with the target (latency rows: ratio >= 1 means kiln's latency <= the anchor's).")
    P("")
    hdr = ("case", "kiln", "anchor", "ratio", "target", "met?")
    w = [max(len(str(r[i])) for r in table + [hdr]) for i in range(6)]
    line = lambda r: "| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |"
    P(line(hdr))
    P("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in table:
        P(line(r))
    P("")
    P("All figures: min / median / max over the runs (GFLOP/s and GB/s: min = slowest run).")
    hdr = ("what", "unit", "runs", "min", "median", "max")
    w = [max(len(str(r[i])) for r in details + [hdr]) for i in range(6)]
    P(line(hdr))
    P("|" + "|".join("-" * (x + 2) for x in w) + "|")
    for r in details:
        P(line(r))
    P("")
    P("Notes:")
    if g1m:
        P("- GEMM: row-major C = A B, fp32, kiln through the public API (a one-op mo.matmul graph, "
          "static shapes) vs dnnl_sgemm and cblas_sgemm in one process, interleaved; each "
          "anchor's result is checked against kiln's first. Threads: kiln %s; OMP_NUM_THREADS=%s "
          "OPENBLAS_NUM_THREADS=%s; OPENBLAS_CORETYPE=%s (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE "
          "are unset for this step). No thread is pinned." % (
            g1m.get("kiln_threads_1", "?"), g1m.get("OMP_NUM_THREADS", "?"),
            g1m.get("OPENBLAS_NUM_THREADS", "?"), g1m.get("OPENBLAS_CORETYPE", "?")))
    if g2m:
        P("- 2 threads: kiln 1-thread and 2-thread contexts in one process of their own (kiln 1T: "
          "%s; kiln 2T: %s), interleaved, each timed call after a 150 ms pause and an untimed "
          "call; anchors in another process with OMP_NUM_THREADS=%s OPENBLAS_NUM_THREADS=%s (two "
          "libraries' thread pools in one process on two cores slowed each other). Not pinned." % (
              g2m.get("kiln_threads_1", "?"), g2m.get("kiln_threads_2", "?"),
              g2m.get("OMP_NUM_THREADS", "?"), g2m.get("OPENBLAS_NUM_THREADS", "?")))
    if cm:
        P("- chain: y = gelu(x * a + b) (mo.mul, mo.add, mo.gelu approximate=none) over %s f32, "
          "kiln %s; effective GB/s = bytes the chain reads and writes once (full: x, a, b, y = "
          "16 B/elem; scalars: x, y = 8 B/elem) / time. triad a = b + s*c (12 B/elem, no "
          "write-allocate counted, as STREAM), same array size, one thread, built %s (%s). "
          "KILN_FUSE=0 rows: the same in a second process with KILN_FUSE=0 (fusion off), against "
          "the triad measured in that process." % (
              n_el, cm.get("kiln_threads", "?"), cm.get("triad_build", "?"),
              cm.get("triad_isa", "?")))
        P("- overhead: median time of one kiln_model_execute of relu on 16 f32 (borrowed "
          "input/output, preallocated; samples of 32 back-to-back calls), the kernel included.")
    if anc:
        v = anc.get("versions", {})
        P("- graphs: bench/anchors/ort_bench.py, same seeded weights and inputs for all; every "
          "engine's outputs are checked against ORT's (and ORT's against numpy float64) and a "
          "disagreeing engine gets no ratio. kiln = libkiln.so through ctypes, ORT = "
          "run_with_iobinding, MAX = model.execute, all three timed from Python around one "
          "call; one thread each (KILN_NUM_THREADS=1; ORT intra/inter_op_num_threads=1; MAX "
          "pinned to one CPU). %d round(s); median of the rounds' medians. onnxruntime %s, "
          "python %s." % (anc.get("rounds", 0), v.get("onnxruntime"), v.get("python")))
        for case, c in checks.items():
            P("  outputs %s: %s" % (case, ", ".join(
                "%s %s (max|d| %.1e)" % (e, "agree" if x["ok"] else "DISAGREE", x["max_abs_diff"])
                for e, x in c.items())))
        for what, per in anc.get("setup_ms", {}).items():
            vals = ["%s %.1f" % (c, x) for c, x in per.items()
                    if c in ("mlp", "mlp_b1", "attention") and isinstance(x, (int, float)) and x]
            if vals:
                P("  setup, %s (ms, first round): %s" % (what, ", ".join(vals)))
        P("- MAX: %s%s" % (anc.get("max_note", "?"),
                           (" (max %s)" % v["max"]) if v.get("max") else ""))
        for f in anc.get("failures", []):
            P("- anchors FAILED: %s" % f)
    if cvm:
        P("- conv2d: bench_conv, f32 NHWC, stride 1, padding k / 2; kiln's RSCF filter is a "
          "%s (a weight is bound, and packed, once); oneDNN's convolution primitive (NHWC, "
          "weights reordered once to the layout it picks); both 1 thread, interleaved, "
          "oneDNN's result checked against kiln's first. GFLOP/s = 2 N Ho Wo F R S C / time."
          % cvm.get("filter", "?"))
    if "ggml" in qmeta:
        P("- qmatmul's ggml columns: llama.cpp's ggml %s (the bench venv's llama-cpp-python, "
          "built from source by pip with GGML_NATIVE=ON), dlopen'ed by bench_quant: ggml_mul_mat "
          "of the same weight bytes and lhs through ggml's CPU backend on kiln's thread count, "
          "the graph built once, one graph compute timed (the lhs copied in outside the "
          "timing); kiln, ggml and ggml repacked back to back per case, the order rotating "
          "every round; every side's results checked against a C reference first (ggml "
          "quantizes the lhs to the same q8_0 / q8_K blocks as kiln: equal work). 'ggml': the "
          "weight in a plain CPU buffer; 'ggml repacked': in the CPU_REPACK buffer, as "
          "llama.cpp loads weights where the CPU has such kernels (this run: %s)."
          % (qmeta["ggml"], ", ".join(sorted({c.split("_4096")[0] for c, e, _ in qm
                                              if e == "ggml_repack"})) or "none"))
    for q in (qmeta, qrows_meta):
        if "ggml_missing" in q:
            P("- qmatmul's ggml column: no ggml (%s)" % q["ggml_missing"])
            break
    for e in g1e + g2e + che + ch0e + cve:
        P("- %s %s (%d threads): %s" % (e["case"], e["engine"], e["threads"], e["reason"]))
    for step, reason in failed.items():
        P("- step %s failed: %s" % (step, reason))
    for n in a.note:
        P("- " + n)
    text = "\n".join(out)
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
