#!/usr/bin/env python3
"""Every SIMD loop of the zoo's generated CPU kernels vectorizes.

Compiles the zoo models with tgc-zoo into a fresh cache with TGC_DEBUG_DIR
set (so every graph's C++ source is dumped), rebuilds each source with the
exact command tgc uses (`tgc-cache compiler`) plus GCC's vectorization
report, and fails on any `#pragma omp simd` loop the compiler did not
vectorize, printing the loop, its kernel and the compiler's reasons. Also
fails when a kernel object calls a scalar libm function that has a vector
variant (expf instead of _ZGV..._expf, i.e. a transcendental left scalar).

Loops known not to vectorize yet are counted per model in a baseline file
(`--baseline`, lines `model count  # why`): a model with more misses than
its baseline fails, one with fewer asks for the baseline to be lowered. So
the test fails on every new missed loop while the known ones are fixed.

usage: check_vectorized.py [--baseline FILE] TGC_ZOO TGC_CACHE ZOO_DIR WORK_DIR MODEL...
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

# Functions the generated prelude declares `omp declare simd` (libmvec has
# vector variants): a call to the scalar symbol means a loop left scalar.
VECTOR_MATH = ["expf", "logf", "tanhf", "erff", "exp", "log", "tanh", "erf", "log1pf",
               "log1p", "expm1f", "expm1", "sinf", "sin", "cosf", "cos", "powf", "pow"]


def simd_loops(lines):
    """(pragma line, last line, kernel name) of every `omp simd` loop (1-based)."""
    loops, kernel = [], "?"
    for i, line in enumerate(lines):
        m = re.match(r'extern "C" void (\w+)\(', line)
        if m:
            kernel = m.group(1)
        if "#pragma omp simd" not in line:
            continue
        depth, end = 0, None
        for j in range(i + 1, len(lines)):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0 and "}" in lines[j]:
                end = j
                break
        loops.append((i + 1, (end if end is not None else len(lines) - 1) + 1, kernel))
    return loops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline")
    ap.add_argument("zoo")
    ap.add_argument("cache_tool")
    ap.add_argument("zoo_dir")
    ap.add_argument("work")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    zoo, cache_tool, zoo_dir, work, models = a.zoo, a.cache_tool, a.zoo_dir, a.work, a.models
    baseline = {}
    if a.baseline:
        for line in open(a.baseline):
            line = line.split("#")[0].split()
            if line:
                baseline[line[0]] = int(line[1])
    shutil.rmtree(work, ignore_errors=True)
    kernels = os.path.join(work, "kernels")
    os.makedirs(kernels)
    for m in models:  # one process per model, so every source names its model
        out = os.path.join(kernels, m)
        env = dict(os.environ, TGC_CACHE_DIR=os.path.join(work, "cache"), TGC_DEBUG_DIR=out)
        run = subprocess.run([zoo, "--dir", zoo_dir, "--rounds", "1", "--model", m], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            print(f"FAIL: tgc-zoo --model {m} exited with {run.returncode}")
            return 1
    command = None
    for line in subprocess.run([cache_tool, "compiler"], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        if line.startswith("command: "):
            command = line[len("command: "):].split()
    if not command or "SOURCE" not in command or "OBJECT" not in command:
        print("FAIL: tgc-cache compiler printed no command line")
        return 1
    sources = sorted(os.path.join(m, f) for m in models if os.path.isdir(os.path.join(kernels, m))
                     for f in os.listdir(os.path.join(kernels, m)) if f.endswith(".cpp"))
    if not sources:
        print(f"FAIL: no generated C++ in {kernels}")
        return 1
    total, missed, scalar_math = 0, [], []
    for src in sources:
        path = os.path.join(kernels, src)
        obj = path[:-4] + ".so"
        cmd = [obj if a == "OBJECT" else path if a == "SOURCE" else a for a in command]
        cmd.insert(1, "-fopt-info-vec-all")
        report = subprocess.run(cmd, capture_output=True, text=True)
        if report.returncode != 0:
            print(report.stderr[-4000:])
            print(f"FAIL: {src} did not compile")
            return 1
        vectorized = set()
        reasons = {}
        for line in report.stderr.splitlines():
            m = re.match(re.escape(path) + r":(\d+):\d+: (.*)", line)
            if not m:
                continue
            n, what = int(m.group(1)), m.group(2)
            if "optimized: loop vectorized" in what:
                vectorized.add(n)
            elif what.startswith("missed:"):
                reasons.setdefault(n, []).append(what)
        lines = open(path).read().splitlines()
        for first, last, kernel in simd_loops(lines):
            total += 1
            if not any(first <= n <= last for n in vectorized):
                why = sorted({r for n in range(first, last + 1) for r in reasons.get(n, [])})
                # GCC made the loop a memset/memcpy call (a fill with zeros, a
                # plain copy): libc's vectorized routine, not a scalar loop.
                if any("__builtin_memset" in r or "__builtin_memcpy" in r for r in why):
                    continue
                missed.append((src, kernel, first, lines[first:last], why))
        nm = subprocess.run(["nm", "-D", "--undefined-only", obj], capture_output=True,
                            text=True).stdout.split()
        for f in VECTOR_MATH:
            if f in nm:
                scalar_math.append((src, f))
    print(f"{total} SIMD loops in {len(sources)} graphs of {len(models)} models")
    for src, kernel, first, body, why in missed:
        print(f"\nNOT VECTORIZED: {src}:{first} in {kernel}")
        print("\n".join("    " + l for l in body[:24]))
        for r in why[:6]:
            print("  gcc: " + r)
    for src, f in scalar_math:
        print(f"SCALAR LIBM CALL: {src} calls {f}")
    per_model = {m: 0 for m in models}
    for src, *_ in missed:
        per_model[src.split(os.sep)[0]] += 1
    worse = []
    print("\nmodel                 missed  baseline")
    for m in models:
        known = baseline.get(m, 0)
        note = "  MORE THAN THE BASELINE" if per_model[m] > known else (
            "  fewer: lower the baseline" if per_model[m] < known else "")
        print(f"{m:20} {per_model[m]:7} {known:9}{note}")
        if per_model[m] > known:
            worse.append(m)
    if worse or scalar_math:
        print(f"\nFAIL: {len(missed)} of {total} SIMD loops not vectorized (more than the baseline "
              f"in {', '.join(worse) or 'none'}), {len(scalar_math)} scalar libm calls")
        return 1
    print(f"\nPASS: {total - len(missed)} of {total} SIMD loops vectorized, {len(missed)} known "
          "misses (baseline), no scalar libm calls")
    return 0

if __name__ == "__main__":
    sys.exit(main())
