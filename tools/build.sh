#!/usr/bin/env bash
# Configures and builds tgc into build/ (ninja, ccache, -j2); run tools/setup.sh first.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TGC_BUILD_DIR:-$repo/build}
jobs=${TGC_JOBS:-2}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py \
    -DTGC_VENV="${TGC_VENV:-$repo/.venv}" "$@"
fi
cmake --build "$build" -j "$jobs"
