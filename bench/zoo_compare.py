#!/usr/bin/env python3
"""The model-zoo table: tgc vs eager vs torch.compile (Inductor) on public
models (tests/zoo/make_zoo.py), in one run on this machine.

For each model: build/bin/tgc-zoo runs the traced TorchScript module eagerly
and through tgc::compile in alternating rounds (a crash of one model is
reported as a crash, the others still run); then, in this Python, the same
model (the same seed, so the same weights) runs eagerly and through
torch.compile in alternating rounds. Prints per model: graphs, graph breaks
and kernels and extern calls per call, captures after warm-up, the max error
vs eager, tgc's first call, tgc's speedup over eager TorchScript and
Inductor's over eager PyTorch, and geometric means.

Usage: .venv/bin/python bench/zoo_compare.py [--zoo DIR] [--only NAME ...]
           [--rounds N] [--threads N] [--inductor default,freezing | --no-inductor]
           [--dtype f32|bf16] [--tgc-mode default,max-autotune]

--dtype bf16 runs every model in bfloat16 (tgc-zoo --dtype bf16: the bf16
trace make_zoo.py writes; Inductor: the Python model and its floating inputs
converted); "max err" is then tgc's error against the f32 eager run and
"eager err" eager bf16's, both relative to the output's scale.

Inductor runs in each listed configuration ("freezing": the recommended CPU
inference setting, torch._inductor.config.freezing = True). Every speedup is
over the same baseline, the zoo's TorchScript trace run eagerly: tgc-zoo
times it against tgc in alternating rounds, and the Inductor process times
it (loaded with torch.jit.load) in rounds alternating with PyTorch eager and
Inductor. So "tgc/<inductor>", tgc's speedup over Inductor's, compares two
ratios taken in-process against one baseline, which cancels most of this
shared machine's drift between the two processes. Then both median call
times and "by time", Inductor's time over tgc's (>1: tgc is faster; the two
medians come from two processes run one after the other, so they carry that
drift), and "py/ts", PyTorch eager's time over the TorchScript trace's (the
Python per-module overhead a speedup over PyTorch eager would credit to
Inductor).
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "zoo"))
import make_zoo  # noqa: E402


def tgc_row(binary, zoo, name, rounds, threads, dtype, mode="default"):
    start = time.time()
    p = subprocess.run([binary, "--dir", zoo, "--model", name, "--rounds", str(rounds), "--json",
                        "--threads", str(threads), "--dtype", dtype, "--mode", mode],
                       capture_output=True, text=True)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not rows:
        why = f"exit {p.returncode}" if p.returncode >= 0 else f"signal {-p.returncode}"
        return {"model": name, "ok": False, "error": "CRASH (" + why + ")",
                "secs": time.time() - start}
    rows[0]["secs"] = time.time() - start
    return rows[0]


def inductor_speedup(name, rounds, freezing, dtype, zoo):
    """Inductor's speedup over the zoo's TorchScript trace of the model (the
    baseline tgc-zoo uses), PyTorch eager's time over that trace's, and
    Inductor's median ms: the three run in alternating rounds."""
    family, make, inputs_of = make_zoo.MODELS[name]
    torch.manual_seed(sum(map(ord, name)))
    model = make()
    inputs = inputs_of()
    make_zoo.reinit_zeros(model)
    make_zoo.calibrate(model, inputs)
    args = tuple(t for _, t, _ in inputs)
    if dtype == "bf16":
        model = model.to(torch.bfloat16)
        args = tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in args)
    script = torch.jit.load(os.path.join(zoo, name + (".bf16.pt" if dtype == "bf16" else ".pt")))
    script.eval()
    torch._dynamo.reset()
    torch._inductor.config.freezing = freezing
    compiled = torch.compile(model)
    with torch.no_grad():
        for _ in range(2):
            compiled(*args)
            script(*args)
        te, ts, tc = [], [], []
        for _ in range(rounds):
            for f, times in ((model, te), (script, ts), (compiled, tc)):
                t0 = time.perf_counter()
                f(*args)
                times.append(time.perf_counter() - t0)
    ms = statistics.median(tc)
    return statistics.median(ts) / ms, statistics.median(te) / statistics.median(ts), ms * 1000


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zoo", default=os.path.join(HERE, "..", "build", "zoo"))
    ap.add_argument("--bench", default=os.path.join(HERE, "..", "build", "bin", "tgc-zoo"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--inductor", default="freezing",
                    help="comma-separated Inductor configurations: default, freezing")
    ap.add_argument("--freezing", action="store_true", help="same as --inductor freezing")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--tgc-mode", default="default",
                    help="default, max-autotune, or default,max-autotune: both, the "
                         "speedup of max-autotune over default (\"mat/tgc\") and over the "
                         "last Inductor configuration (\"mat/ind\", last column); the other "
                         "columns are the first mode's")
    a = ap.parse_args()
    tgc_modes = [m for m in a.tgc_mode.split(",") if m]
    torch.set_num_threads(a.threads)
    modes = [] if a.no_inductor else ["freezing"] if a.freezing else \
        [m for m in a.inductor.split(",") if m]
    names = a.only or list(make_zoo.MODELS)
    missing = [n for n in names if not os.path.exists(os.path.join(a.zoo, n + ".pt"))]
    if missing:
        subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "zoo", "make_zoo.py"),
                        a.zoo, "--only", *missing], check=False)
    labels = {"default": "inductor", "freezing": "ind+frz"}
    bf16 = a.dtype == "bf16"
    head = (f"{'model':20} {'graphs':>6} {'breaks':>6} {'kernels':>7} {'externs':>7} {'recap':>5} "
            f"{'max err':>9}" + (f" {'eager err':>9}" if bf16 else "") + f" {'1st s':>6} {'tgc/eager':>9}")
    if len(tgc_modes) > 1:
        head += f" {'mat/eager':>9} {'mat/tgc':>8} {'tuned':>6}"
    for m in modes:
        head += f" {labels[m]:>9}"
    if modes:
        head += (f" {'tgc/' + labels[modes[-1]]:>13} {'tgc ms':>8} {labels[modes[-1]] + ' ms':>8}"
                 f" {'by time':>9} {'py/ts':>6}")
        if len(tgc_modes) > 1:
            head += f" {'mat/' + labels[modes[-1]]:>13}"
    print(f"{a.threads} thread(s), {a.dtype}, {a.rounds} alternating rounds, medians")
    print(head)
    tgc_speed, crashes, mismatches = [], 0, 0
    ind_speed = {m: [] for m in modes}
    versus, by_time = [], []
    mat_speed, mat_over, mat_versus = [], [], []
    for name in names:
        rows = [tgc_row(a.bench, a.zoo, name, a.rounds, a.threads, a.dtype, m) for m in tgc_modes]
        r = rows[0]
        ind, ind_ms, py_ts = {}, {}, {}
        for m in modes:
            try:
                ind[m], py_ts[m], ind_ms[m] = inductor_speedup(name, a.rounds, m == "freezing",
                                                              a.dtype, a.zoo)
                ind_speed[m].append(ind[m])
            except Exception as e:  # Inductor's own failures are reported, not fatal
                ind[m], py_ts[m], ind_ms[m] = float("nan"), float("nan"), float("nan")
                print(f"  ({name}: torch.compile ({m}) failed: {type(e).__name__})", file=sys.stderr)
        ind_text = "".join(f" {ind[m]:8.2f}x" for m in modes)
        if not r.get("ok"):
            crashes += 1
            print(f"{name:20} {r.get('error', 'failed')[:60]:60}{ind_text}")
            continue
        rel = r["max_error"] / max(1.0, r["scale"])
        eager_rel = r.get("eager_error", 0.0) / max(1.0, r["scale"])
        mismatches += rel > (2 * eager_rel + 0.01 if bf16 else 1e-4)
        speed = r["eager_ms"] / r["tgc_ms"]
        tgc_speed.append(speed)
        line = (f"{name:20} {r['graphs']:6} {r['breaks_per_call']:6} {r['kernels_per_call']:7} "
                f"{r['externs_per_call']:7} {r['captures_after_warmup']:5} {rel:9.1e} "
                + (f"{eager_rel:9.1e} " if bf16 else "") +
                f"{r['first_call_ms'] / 1000:6.1f} {speed:8.2f}x")
        mat = None
        if len(rows) > 1:
            last = rows[-1]
            if last.get("ok"):
                mat = last["eager_ms"] / last["tgc_ms"]
                mat_speed.append(mat)
                mat_over.append(mat / speed)
                line += f" {mat:8.2f}x {mat / speed:7.2f}x {last.get('autotune_benchmarks', 0):6}"
                mismatches += last["max_error"] / max(1.0, last["scale"]) > \
                    (2 * eager_rel + 0.01 if bf16 else 1e-4)
            else:
                crashes += 1
                line += f" {last.get('error', 'failed')[:30]:>30}"
        line += ind_text
        if modes and ind[modes[-1]] == ind[modes[-1]] and ind[modes[-1]] > 0:
            versus.append(speed / ind[modes[-1]])
            by_time.append(ind_ms[modes[-1]] / r["tgc_ms"])
            line += (f" {versus[-1]:12.2f}x {r['tgc_ms']:8.2f} {ind_ms[modes[-1]]:8.2f}"
                     f" {by_time[-1]:8.2f}x {py_ts[modes[-1]]:6.2f}")
            if mat:
                mat_versus.append(mat / ind[modes[-1]])
                line += f" {mat_versus[-1]:12.2f}x"
        print(line)
    tail = (f"{'geomean':20} {'':6} {'':6} {'':7} {'':7} {'':5} {'':9} "
            + (f"{'':9} " if bf16 else "") + f"{'':6} {geomean(tgc_speed):8.2f}x")
    if len(tgc_modes) > 1:
        tail += f" {geomean(mat_speed):8.2f}x {geomean(mat_over):7.2f}x {'':6}"
    for m in modes:
        tail += f" {geomean(ind_speed[m]):8.2f}x"
    if modes:
        tail += f" {geomean(versus):12.2f}x {'':8} {'':8} {geomean(by_time):8.2f}x"
        if len(tgc_modes) > 1:
            tail += f" {'':6} {geomean(mat_versus):12.2f}x"
    print(tail)
    print(f"{len(names)} models: {crashes} failed or crashed, {mismatches} mismatched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
