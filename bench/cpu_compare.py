#!/usr/bin/env python3
"""Eager vs tgc vs torch.compile (Inductor, CPU) on the workloads of
bench/CpuFusion.cpp, in one run on this machine, as one table of ratios.

Runs build/bin/tgc-bench-cpu (Google Benchmark, C++ eager and tgc), then the
same workloads through torch.compile from this venv's Python, and prints:
time per call for each, tgc's speedup over eager and over torch.compile, and
for the memory-bound workloads the bandwidth tgc achieves against the copy
bandwidth measured in the same run.

Usage: .venv/bin/python bench/cpu_compare.py [--bench build/bin/tgc-bench-cpu]
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


def chain10(x, y, _):
    return ((((x * y + 1).sigmoid() - x).relu() * 2 + y).tanh() * x - 0.5).abs()


class BasicBlock(nn.Module):
    """Same as tgc::models::BasicBlock (bench/models/Models.h)."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.bn2 = nn.BatchNorm2d(c)
        with torch.no_grad():
            for m in (self.bn1, self.bn2):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(0.5, 1.5)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


def workloads():
    mlp = nn.Sequential(nn.Linear(512, 2048), nn.GELU(approximate="tanh"), nn.Linear(2048, 512)).eval()
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0).eval()
    block = BasicBlock(64).eval()
    one = torch.ones(1)
    w = []
    for size, rows in (("small", 256), ("large", 4096)):
        w.append(("chain10", size, lambda r=rows: (torch.randn(r, 1024), torch.randn(1024), one), chain10))
        w.append(("softmax", size, lambda r=rows: (torch.randn(r, 1024), one, one),
                  lambda x, _a, _b: torch.softmax(x, -1)))
        w.append(("layer_norm", size, lambda r=rows: (torch.randn(r, 1024), torch.randn(1024), torch.randn(1024)),
                  lambda x, g, b: F.layer_norm(x, (1024,), g, b)))
    w.append(("gelu_mlp", "small", lambda: (torch.randn(16, 512), one, one), lambda x, _a, _b: mlp(x)))
    w.append(("gelu_mlp", "large", lambda: (torch.randn(512, 512), one, one), lambda x, _a, _b: mlp(x)))
    w.append(("transformer", "small", lambda: (torch.randn(32, 2, 256), one, one), lambda x, _a, _b: layer(x)))
    w.append(("transformer", "large", lambda: (torch.randn(128, 8, 256), one, one), lambda x, _a, _b: layer(x)))
    w.append(("resnet_block", "small", lambda: (torch.randn(1, 64, 14, 14), one, one), lambda x, _a, _b: block(x)))
    w.append(("resnet_block", "large", lambda: (torch.randn(8, 64, 28, 28), one, one), lambda x, _a, _b: block(x)))
    return w


def time_us(fn, args, min_time=0.3):
    fn(*args)
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < min_time or len(times) < 5:
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e6


def inductor_times():
    out = {}
    torch.manual_seed(0)
    with torch.no_grad():
        for name, size, make, fn in workloads():
            args = make()
            compiled = torch.compile(fn)
            t0 = time.perf_counter()
            compiled(*args)
            print(f"  torch.compile {name}/{size}: compiled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
            out[(name, size)] = time_us(compiled, args)
    return out


def tgc_times(binary):
    res = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=0.3"],
                         check=True, capture_output=True, text=True)
    data = json.loads(res.stdout)
    out, copy_bw = {}, None
    for b in data["benchmarks"]:
        _, name, size, mode = b["name"].split("/")[:4]
        if name == "copy":
            copy_bw = b["bytes_per_second"]
            continue
        t = b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
        out[(name, size, mode)] = (t, b.get("bytes_per_second"), b.get("error_occurred", False))
    return out, copy_bw


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/bin/tgc-bench-cpu")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)
    cxx, copy_bw = tgc_times(args.bench)
    ind = inductor_times()
    fusable = {"chain10", "softmax", "layer_norm", "gelu_mlp", "transformer", "resnet_block"}
    print(f"copy bandwidth (at::copy_, 16 MiB -> 16 MiB): {copy_bw / 1e9:.1f} GB/s")
    print(f"{'workload':<14}{'size':<7}{'eager us':>10}{'tgc us':>10}{'inductor us':>13}"
          f"{'tgc/eager':>11}{'tgc/inductor':>14}{'tgc GB/s':>10}{'% copy':>8}")
    ratios = []
    for (name, size), ind_us in ind.items():
        eager, _, _ = cxx[(name, size, "eager")]
        tgc, bw, err = cxx[(name, size, "tgc")]
        vs_eager, vs_ind = eager / tgc, ind_us / tgc
        if name in fusable:
            ratios.append(vs_eager)
        bw_s = f"{bw / 1e9:10.1f}{100 * bw / copy_bw:7.0f}%" if bw else f"{'-':>10}{'-':>8}"
        flag = "  (tgc result differed)" if err else ""
        print(f"{name:<14}{size:<7}{eager:10.1f}{tgc:10.1f}{ind_us:13.1f}{vs_eager:10.2f}x{vs_ind:13.2f}x{bw_s}{flag}")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geomean tgc speedup over eager (fusable workloads): {geo:.2f}x")


if __name__ == "__main__":
    main()
