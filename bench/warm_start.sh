#!/usr/bin/env bash
# Cold vs warm time to first result, each in a fresh process, with a fresh
# cache directory for the cold run and the filled one for the warm run.
#   bench/warm_start.sh [build dir]
set -euo pipefail
build=${1:-build}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%-12s %-5s %s\n' model run result
for model in transformer gpt2; do
  export TGC_CACHE_DIR="$dir/$model"
  printf '%-12s %-5s %s\n' "$model" cold "$("$build/bin/tgc-bench-warmstart" "$model")"
  printf '%-12s %-5s %s\n' "$model" warm "$("$build/bin/tgc-bench-warmstart" "$model")"
done
