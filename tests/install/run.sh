#!/usr/bin/env bash
# Builds tests/install against tgc's build tree and against an install of it.
# Usage: run.sh <tgc build dir> <Torch_DIR> <scratch dir>
set -euo pipefail
build=$1 torch_dir=$2 scratch=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch" && mkdir -p "$scratch"
export TGC_CACHE_DIR="$scratch/cache"

echo "== against the build tree"
cmake -G Ninja -S "$here" -B "$scratch/from-build" -Dtgc_DIR="$build" -DTorch_DIR="$torch_dir" >/dev/null
cmake --build "$scratch/from-build" >/dev/null
"$scratch/from-build/downstream"

echo "== against an installed tgc"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -G Ninja -S "$here" -B "$scratch/from-install" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" -DTorch_DIR="$torch_dir" >/dev/null
cmake --build "$scratch/from-install" >/dev/null
"$scratch/from-install/downstream"
