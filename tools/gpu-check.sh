#!/usr/bin/env bash
# The CUDA backend on a real GPU (issue 5, point 6), in two halves:
#
#   tools/gpu-check.sh pack [OUT]   development machine (MLIR, NVRTC, no GPU
#                                   needed): compiles everything the GPU
#                                   machine runs into OUT (default gpu-check/)
#   tools/gpu-check.sh closure [OUT]  checks that OUT needs no library beyond
#                                   torch's and the base system's, < 64 MiB
#   tools/gpu-check.sh binaries [OUT] the binaries and libraries alone, then
#                                   closure (the ctest gpu_check.closure)
#   tools/gpu-check.sh run [OUT]    GPU machine (torch 2.11.0, a driver; no
#                                   MLIR, no network): the GPU tests, then one
#                                   table of eager vs tgc vs torch.compile,
#                                   within 8 minutes
#
# OUT holds runtime-only binaries (tgc_runtime + LibTorch, no MLIR), the
# .tgccase files (plans with sm_90 cubins) and bench/gpu_compare.py; it is
# git-ignored, so carry it explicitly. docs/gpu-check.md explains the design.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-}
out=${2:-$repo/gpu-check}

pack() {
  local build=${TGC_BUILD_DIR:-$repo/build}
  [ -f "$build/build.ninja" ] || { echo "gpu-check: build tgc first (tools/build.sh)" >&2; exit 1; }
  ninja -C "$build" -j "${TGC_JOBS:-2}" tgc_gpu_corpus_tests tgc-bench-gpu tgc-gpu-prepare \
    tgc_cuda_emu_rows_tests tgc_cuda_emu_matrix_tests
  rm -rf "$out"
  mkdir -p "$out/bin" "$out/lib" "$out/corpus" "$out/bench"
  # The emulated tests write one case per program they check (and keep their caches).
  for t in tgc_cuda_emu_rows_tests tgc_cuda_emu_matrix_tests; do
    echo "gpu-check: $t -> corpus"
    TGC_GPU_CORPUS_DIR="$out/corpus" TGC_CACHE_DIR="$build/tests/emu/cache-$t" \
      "$build/bin/$t" --gtest_brief=1 > "$out/$t.log" || { tail -20 "$out/$t.log"; exit 1; }
  done
  TGC_CACHE_DIR="$build/gpu-prepare-cache" "$build/bin/tgc-gpu-prepare" "$out/bench"
  pack_binaries "$build"
  cp "$repo/bench/gpu_compare.py" "$out/"
  echo "gpu-check: $(ls "$out/corpus" | wc -l) test cases, $(ls "$out/bench" | wc -l) workloads," \
       "$(du -sh "$out" | cut -f1) in $out (the carry limit is 64 MiB)"
}

# Libraries a machine with only torch 2.11+cu130 and a base system has: the
# C/C++ runtime, and torch's lib/ (by name; the run puts it on the path).
BASE_LIBS="libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 ld-linux-x86-64.so.2 libdl.so.2
libpthread.so.0 librt.so.1"
TORCH_LIBS="libtorch.so libtorch_cpu.so libtorch_cuda.so libc10.so libc10_cuda.so libgomp.so.1
libtorch_global_deps.so"

needed() { readelf -d "$1" 2> /dev/null | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}'; }
# Whether the GPU machine provides library $1 (torch's or the base system's).
provided() { case " $BASE_LIBS $TORCH_LIBS " in *[[:space:]]$1[[:space:]]*) return 0 ;; esac; return 1; }

# The binaries, tgc_runtime, and every other library they need (transitively)
# that is neither torch's nor the base system's, copied from this machine.
pack_binaries() {
  local build=$1 lib path todo
  mkdir -p "$out/bin" "$out/lib"
  cp "$build/bin/tgc_gpu_corpus_tests" "$build/bin/tgc-bench-gpu" "$out/bin/"
  cp "$build/lib/libtgc_runtime.so" "$out/lib/"
  todo="$out/bin/tgc_gpu_corpus_tests $out/bin/tgc-bench-gpu $out/lib/libtgc_runtime.so"
  while [ -n "$todo" ]; do
    local next=""
    for f in $todo; do
      for lib in $(needed "$f"); do
        provided "$lib" && continue
        [ -e "$out/lib/$lib" ] && continue
        path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
        [ -n "$path" ] || { echo "gpu-check: $f needs $lib, which this machine lacks" >&2; exit 1; }
        cp -L "$path" "$out/lib/$lib"
        next="$next $out/lib/$lib"
      done
    done
    todo=$next
  done
}

# Whether OUT runs where only torch and the base system are: every NEEDED of
# every file in bin/ and lib/ is in lib/, torch's lib/ or the base system;
# OUT under the carry limit of 64 MiB. Prints what is missing.
closure() {
  local bad=0 lib f size
  for f in "$out"/bin/* "$out"/lib/*; do
    for lib in $(needed "$f"); do
      provided "$lib" && continue
      [ -e "$out/lib/$lib" ] || { echo "gpu-check: $(basename "$f") needs $lib, not in $out/lib"; bad=1; }
    done
  done
  size=$(du -sm "$out" | cut -f1)
  [ "$size" -lt 64 ] || { echo "gpu-check: $out is $size MiB, over the 64 MiB carry limit"; bad=1; }
  [ $bad -eq 0 ] && echo "gpu-check: closure ok: $(ls "$out/lib" | tr '\n' ' ')($size MiB)"
  return $bad
}

# Reruns the corpus without the cases that failed until no case faults (at
# most 2 minutes): lists each failing case once with its error, and runs the
# first faulting case alone under compute-sanitizer when the machine has it.
triage() {
  local first="" excl="" start=$SECONDS names
  names=$(mktemp)
  cp "$1" "$names.log"
  for _ in $(seq 1 30); do
    [ $((SECONDS - start)) -gt 120 ] && { echo "gpu-check: triage stopped (time)"; break; }
    # The failures before the first fault are real; the fault's case too.
    awk '/C\+\+ exception|Failure/ {why=$0}
         /\[  FAILED  \] Corpus/ {n=$4; sub(/.*\//, "", n); sub(/,$/, "", n);
           sticky = why ~ /illegal memory|unspecified launch|misaligned/;
           print (sticky ? "FAULT " : "FAIL  ") n " :: " substr(why, 1, 200);
           if (sticky) exit}' "$names.log" > "$names"
    [ -s "$names" ] || break
    cat "$names"
    [ -z "$first" ] && first=$(awk '$1 == "FAULT" {print $2; exit}' "$names")
    for n in $(awk '{print $2}' "$names"); do excl="${excl:+$excl:}*/$n"; done
    grep -q "^FAULT" "$names" || break
    TGC_GPU_CORPUS="$out/corpus" TGC_CACHE_DIR=$(mktemp -d) timeout 90 \
      "$out/bin/tgc_gpu_corpus_tests" --gtest_brief=1 --gtest_filter="*-$excl" > "$names.log" 2>&1
    tail -1 "$names.log"
  done
  if [ -n "$first" ] && command -v compute-sanitizer > /dev/null; then
    echo "== compute-sanitizer memcheck: $first"
    local one
    one=$(mktemp -d)
    cp "$out/corpus/$first.tgccase" "$one/" 2> /dev/null || true
    TGC_GPU_CORPUS="$one" TGC_CACHE_DIR=$(mktemp -d) timeout 90 compute-sanitizer --tool memcheck \
      --print-limit 2 "$out/bin/tgc_gpu_corpus_tests" --gtest_brief=1 2>&1 |
      grep "=========" | grep -v "Host Frame" | head -20 || true
  fi
}

run() {
  local start=$SECONDS python=${PYTHON:-python3}
  [ -d "$out/bin" ] || { echo "gpu-check: $out is missing; run 'tools/gpu-check.sh pack' first" >&2; exit 1; }
  local torchlib
  torchlib=$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH="$out/lib:$torchlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  # ldd's whole output first: under pipefail, `ldd | grep -q` fails when grep
  # closes the pipe early (SIGPIPE). A missing library is reported, not fatal:
  # the tests then say which binary could not start.
  local deps
  deps=$(ldd "$out"/bin/* 2>&1 || true)
  if grep -q "not found" <<<"$deps"; then
    echo "gpu-check: missing libraries (continuing):" >&2
    grep "not found" <<<"$deps" | sort -u >&2
  fi
  echo "== GPU tests: $(ls "$out/corpus" | wc -l) programs of the emulated matrix on the GPU"
  local cache log
  cache=$(mktemp -d)
  log=$(mktemp)
  if ! TGC_GPU_CORPUS="$out/corpus" TGC_CACHE_DIR="$cache" \
      timeout 180 "$out/bin/tgc_gpu_corpus_tests" --gtest_brief=1 > "$log" 2>&1; then
    grep -v "^frame #\|^Exception raised\|registered at\|^  " "$log" | tail -40
    echo "gpu-check: GPU tests FAILED"
    # A faulting kernel poisons the CUDA context: every later case in the
    # process fails too. Find the cases that fail on their own.
    if grep -q "illegal memory access\|unspecified launch failure\|misaligned address" "$log"; then
      triage "$log"
    fi
  else
    tail -3 "$log"
  fi
  echo "== eager vs tgc vs torch.compile (max-autotune-no-cudagraphs), bfloat16"
  local left=$((470 - (SECONDS - start)))
  TGC_CACHE_DIR="$cache" timeout "$left" "$python" "$out/gpu_compare.py" --bench "$out/bin/tgc-bench-gpu" \
    --cases "$out/bench" --deadline $((left - 150)) || echo "gpu-check: the table did not finish (rc $?)"
  echo "gpu-check: $((SECONDS - start)) s"
}

case "$mode" in
  pack) pack; closure ;;
  binaries) rm -rf "$out"; pack_binaries "${TGC_BUILD_DIR:-$repo/build}"; closure ;;
  closure) closure ;;
  run) run ;;
  *) sed -n '2,21p' "$0"; exit 2 ;;
esac
