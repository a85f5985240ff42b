#!/usr/bin/env bash
# The CUDA backend on a real GPU (issue 5, point 6), in two halves:
#
#   tools/gpu-check.sh pack [OUT]   development machine (MLIR, NVRTC, no GPU
#                                   needed): compiles everything the GPU
#                                   machine runs into OUT (default gpu-check/)
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
  cp "$build/bin/tgc_gpu_corpus_tests" "$build/bin/tgc-bench-gpu" "$out/bin/"
  cp "$build/lib/libtgc_runtime.so" "$out/lib/"
  # Small Debian libraries tgc_runtime links that a GPU machine may lack.
  for lib in libxxhash.so.0 libzstd.so.1; do
    cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')" "$out/lib/"
  done
  cp "$repo/bench/gpu_compare.py" "$out/"
  echo "gpu-check: $(ls "$out/corpus" | wc -l) test cases, $(ls "$out/bench" | wc -l) workloads," \
       "$(du -sh "$out" | cut -f1) in $out (the carry limit is 64 MiB)"
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
  local cache
  cache=$(mktemp -d)
  TGC_GPU_CORPUS="$out/corpus" TGC_CACHE_DIR="$cache" \
    timeout 180 "$out/bin/tgc_gpu_corpus_tests" --gtest_brief=1 || echo "gpu-check: GPU tests FAILED (rc $?)"
  echo "== eager vs tgc vs torch.compile (max-autotune-no-cudagraphs), bfloat16"
  local left=$((470 - (SECONDS - start)))
  TGC_CACHE_DIR="$cache" timeout "$left" "$python" "$out/gpu_compare.py" --bench "$out/bin/tgc-bench-gpu" \
    --cases "$out/bench" --deadline $((left - 150)) || echo "gpu-check: the table did not finish (rc $?)"
  echo "gpu-check: $((SECONDS - start)) s"
}

case "$mode" in
  pack) pack ;;
  run) run ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
