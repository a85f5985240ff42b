#!/usr/bin/env python3
"""Eager vs tgc vs torch.compile (mode max-autotune-no-cudagraphs) on a GPU,
bfloat16, in one run, as one table.

Runs tgc-bench-gpu (C++, tgc_runtime only) on the .tgccase files that
tgc-gpu-prepare compiled ahead of time: eager (the captured ATen ops one by
one) and tgc's compiled plan, plus a device-to-device copy. Then the same
workloads (the shapes of bench/GpuPrepare.cpp, the models of
bench/models/Models.h) through torch.compile from this Python. Prints time
per call, tgc's speedup over eager and over torch.compile, and the bandwidth
each reaches (bytes of inputs + outputs, moved once) against the copy.

Usage: python3 bench/gpu_compare.py --bench DIR/bin/tgc-bench-gpu --cases DIR/bench
           [--min-time 0.3] [--deadline SECONDS]
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def chain10(x, y):
    """Same as tgc::models::chain10."""
    return ((((x * y + 1).sigmoid() - x).relu() * 2 + y).tanh() * x - 0.5).abs()


class Gpt2Block(nn.Module):
    """Same as tgc::models::Gpt2Block (bench/models/Models.h)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        H = self.heads
        q, k, v = self.qkv(self.ln1(x)).chunk(3, -1)
        q, k, v = (t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v))
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D // H)
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = torch.softmax(att.masked_fill(mask, float("-inf")), -1)
        y = torch.matmul(att, v).transpose(1, 2).contiguous().view(B, T, D)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def workloads():
    """(name, inputs, fn) with GpuPrepare.cpp's full-size shapes, cheapest first."""
    dev, bf = "cuda", torch.bfloat16
    r = lambda *s: torch.randn(*s, device=dev, dtype=bf) * 0.5
    rows, n = 16384, 4096
    mlp = nn.Sequential(nn.Linear(2048, 8192), nn.GELU(approximate="tanh"), nn.Linear(8192, 2048))
    mlp = mlp.to(dev, bf).eval()
    block = Gpt2Block(1024, 16).to(dev, bf).eval()
    return [
        ("pointwise_chain", (r(rows, n), r(n)), chain10),
        ("softmax", (r(rows, n),), lambda x: torch.softmax(x, -1)),
        ("layer_norm", (r(rows, n), r(n), r(n)), lambda x, w, b: F.layer_norm(x, (n,), w, b)),
        ("gelu_mlp", (r(8192, 2048),), mlp),
        ("transformer_layer", (r(4, 1024, 1024),), block),
    ]


def training_workloads():
    """(name, model, input) with GpuPrepare.cpp's training shapes (bfloat16)."""
    dev, bf = "cuda", torch.bfloat16
    mlp = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(approximate="tanh"), nn.Linear(4096, 1024))
    return [
        ("train_gelu_mlp", mlp.to(dev, bf), torch.randn(8192, 1024, device=dev, dtype=bf) * 0.5),
        ("train_transformer_layer", Gpt2Block(768, 12).to(dev, bf),
         torch.randn(8, 512, 768, device=dev, dtype=bf) * 0.5),
    ]


def training_step(model, opt):
    """zero_grad, forward, loss = mean(out^2) in float32, backward, AdamW: tgc-bench-gpu's step."""
    def step(x):
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
    return step


def time_us(fn, args, min_time):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    samples, batch, start = [], 1, time.perf_counter()
    while len(samples) < 5 or time.perf_counter() - start < min_time:
        t = time.perf_counter()
        for _ in range(batch):
            fn(*args)
        torch.cuda.synchronize()
        s = time.perf_counter() - t
        samples.append(s / batch)
        if s < 0.01:
            batch *= 2
    return statistics.median(samples) * 1e6


def compiled_us(name, fn, args, min_time):
    """Time per call of `fn` (already wrapped by torch.compile) after a first call that compiles it."""
    t0 = time.perf_counter()
    fn(*args)
    print(f"  torch.compile {name}: compiled in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return time_us(fn, args, min_time)


def compile_columns(compiled, us):
    """torch.compile's time and tgc's speedup over it, or placeholders when it was skipped."""
    if not compiled:
        return f"{'skipped':>12}", f"{'-':>13}"
    return f"{compiled:12.1f}", f"{compiled / us:12.2f}x"


def tgc_times(binary, cases, min_time):
    res = subprocess.run([binary, cases, "--min-time", str(min_time)], capture_output=True, text=True)
    sys.stderr.write(res.stderr)
    out, copy = {}, None
    for line in res.stdout.splitlines():
        row = json.loads(line)
        if "copy_gbps" in row:
            copy = row["copy_gbps"]
        else:
            out[row["name"]] = row
    if res.returncode != 0:
        print(f"tgc-bench-gpu exited with {res.returncode}", file=sys.stderr)
    return out, copy


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="tgc-bench-gpu")
    ap.add_argument("--cases", required=True, help="directory of tgc-gpu-prepare's .tgccase files")
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--deadline", type=float, default=420, help="seconds; later torch.compile runs are skipped")
    args = ap.parse_args()
    start = time.time()
    if not torch.cuda.is_available():
        print("gpu_compare: no CUDA device visible to PyTorch; nothing to measure", file=sys.stderr)
        return 3
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", file=sys.stderr)
    tgc, copy = tgc_times(args.bench, args.cases, args.min_time)
    rows = []
    with torch.no_grad():
        for name, inputs, fn in workloads():
            eager = time_us(fn, inputs, args.min_time)
            compiled = None
            if time.time() - start < args.deadline:
                c = torch.compile(fn, mode="max-autotune-no-cudagraphs")
                compiled = compiled_us(name, c, inputs, args.min_time)
            rows.append((name, eager, compiled))
    train_rows = []
    for name, model, x in training_workloads():
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        eager = time_us(training_step(model, opt), (x,), args.min_time)
        compiled = None
        if time.time() - start < args.deadline:
            compiled = compiled_us(name, training_step(torch.compile(model), opt), (x,), args.min_time)
        train_rows.append((name, eager, compiled))
    print(f"device-to-device copy: {copy:.0f} GB/s (1 GiB, same run)" if copy else "copy: not measured")
    print(f"{'workload':<18}{'eager us':>10}{'tgc us':>10}{'compile us':>12}{'tgc/eager':>11}{'tgc/compile':>13}"
          f"{'tgc GB/s':>10}{'% copy':>8}{'compile GB/s':>14}{'tgc err':>9}")
    for name, py_eager, compiled in rows:
        t = tgc.get(name)
        if not t:
            print(f"{name:<18}{py_eager:10.1f}{'-':>10}  (tgc did not run)")
            continue
        eager, us, nbytes = t["eager_us"], t["tgc_us"], t["bytes"]
        gbs = nbytes / us / 1e3
        pct = f"{100 * gbs / copy:7.0f}%" if copy else f"{'-':>8}"
        comp, vs_c = compile_columns(compiled, us)
        comp_gbs = f"{nbytes / compiled / 1e3:14.0f}" if compiled else f"{'-':>14}"
        print(f"{name:<18}{eager:10.1f}{us:10.1f}{comp}{eager / us:10.2f}x{vs_c}{gbs:10.0f}{pct}{comp_gbs}"
              f"{t['rel_err']:9.1e}")
    print("eager: the captured ATen ops run one by one from C++ (tgc-bench-gpu); Python eager for reference: "
          + ", ".join(f"{n} {e:.1f} us" for n, e, _ in rows))
    print()
    print("training step (zero_grad, forward, mean(out^2) loss, backward, AdamW), bfloat16; "
          "torch.compile in its default mode")
    print(f"{'workload':<24}{'eager us':>10}{'tgc us':>10}{'compile us':>12}{'tgc/eager':>11}"
          f"{'tgc/compile':>13}{'tgc err':>9}")
    for name, py_eager, compiled in train_rows:
        t = tgc.get(name)
        if not t:
            print(f"{name:<24}{py_eager:10.1f}{'-':>10}  (tgc did not run)")
            continue
        eager, us = t["eager_us"], t["tgc_us"]
        comp, vs_c = compile_columns(compiled, us)
        print(f"{name:<24}{eager:10.1f}{us:10.1f}{comp}{eager / us:10.2f}x{vs_c}{t['rel_err']:9.1e}")
    print("training eager: the captured ops under autograd from C++; Python eager for reference: "
          + ", ".join(f"{n} {e:.1f} us" for n, e, _ in train_rows))
    print(f"total {time.time() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
