#!/usr/bin/env bash
# Cache scenarios across separate processes.
# Usage: run.sh SCENARIO WORKER TGC_CACHE_TOOL SCRATCH
# Scenarios: warm, warm-training, concurrent, readonly, relocatable, cli.
set -euo pipefail
scenario=$1 worker=$2 tool=$3 scratch=$4
rm -rf "$scratch" && mkdir -p "$scratch"
export TGC_CACHE_DIR="$scratch/cache"
unset TGC_DISABLE_CACHE TGC_CACHE_MAX_BYTES

field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$2"; }
fail() { echo "FAIL: $*"; exit 1; }

case "$scenario" in
warm)
  cold=$("$worker")
  echo "cold: $cold"
  [ "$(field kernels_compiled "$cold")" -gt 0 ] || fail "the cold run compiled nothing"
  warm=$("$worker")
  echo "warm: $warm"
  [ "$(field kernels_compiled "$warm")" -eq 0 ] || fail "the warm run compiled kernels"
  [ "$(field pipelines_run "$warm")" -eq 0 ] || fail "the warm run ran the MLIR pipeline"
  [ "$(field cache_hits_disk "$warm")" -gt 0 ] || fail "the warm run had no disk hits"
  ;;
warm-training)
  cold=$("$worker" --train)
  echo "cold: $cold"
  [ "$(field training_graphs "$cold")" -gt 0 ] || fail "no training graph was built"
  [ "$(field eager_fallbacks "$cold")" -eq 0 ] || fail "the training step fell back to eager"
  [ "$(field kernels_compiled "$cold")" -gt 0 ] || fail "the cold run compiled nothing"
  warm=$("$worker" --train)
  echo "warm: $warm"
  [ "$(field kernels_compiled "$warm")" -eq 0 ] || fail "the warm training step compiled kernels"
  [ "$(field pipelines_run "$warm")" -eq 0 ] || fail "the warm training step ran the MLIR pipeline"
  [ "$(field cache_hits_disk "$warm")" -gt 0 ] || fail "the warm run had no disk hits"
  ;;
concurrent)
  pids=()
  for i in 0 1 2 3 4 5 6 7; do
    "$worker" "$i" >"$scratch/out.$i" 2>&1 & pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { cat "$scratch/out.$i"; fail "worker $i failed"; }
  done
  cat "$scratch"/out.*
  "$tool" verify || fail "the cache holds a torn or corrupt entry"
  ;;
readonly)
  "$worker" >/dev/null # fill the cache
  command -v unshare >/dev/null || { echo "SKIP: unshare not available"; exit 0; }
  mkdir -p "$scratch/ro"
  script='mount --bind -o ro "$0" "$1" && TGC_CACHE_DIR="$1" "$2" --extra'
  if ! out=$(unshare -m sh -c "$script" "$TGC_CACHE_DIR" "$scratch/ro" "$worker" 2>"$scratch/err"); then
    if grep -q "mount" "$scratch/err"; then echo "SKIP: cannot bind-mount here"; exit 0; fi
    cat "$scratch/err"; fail "worker failed on a read-only cache"
  fi
  echo "read-only: $out"
  [ "$(field kernels_compiled "$out")" -eq 1 ] || fail "expected only the new program to compile"
  [ "$(field cache_hits_disk "$out")" -gt 0 ] || fail "a read-only cache must still serve hits"
  warnings=$(grep -c "cannot write to the cache directory" "$scratch/err" || true)
  [ "$warnings" -eq 1 ] || { cat "$scratch/err"; fail "expected exactly one warning, got $warnings"; }
  ;;
relocatable)
  "$worker" >/dev/null
  mkdir -p "$scratch/elsewhere/deep" "$scratch/otherhome"
  cp -r "$TGC_CACHE_DIR" "$scratch/elsewhere/deep/copied"
  rm -rf "$TGC_CACHE_DIR"
  out=$(HOME="$scratch/otherhome" TGC_CACHE_DIR="$scratch/elsewhere/deep/copied" "$worker")
  echo "relocated: $out"
  [ "$(field kernels_compiled "$out")" -eq 0 ] || fail "a copied cache must still hit"
  [ "$(field pipelines_run "$out")" -eq 0 ] || fail "a copied cache must still hit"
  ;;
cli)
  "$tool" --help | grep -q "Examples" || fail "--help has no examples"
  "$worker" >/dev/null
  "$tool" stats | tee "$scratch/stats"
  grep -q "^entries: [1-9]" "$scratch/stats" || fail "stats shows no entries"
  grep -q "^misses: [1-9]" "$scratch/stats" || fail "stats shows no misses"
  [ "$("$tool" ls | wc -l)" -gt 0 ] || fail "ls lists nothing"
  "$tool" verify || fail "verify fails on a healthy cache"
  "$tool" export "$scratch/all.tgcz"
  n=$("$tool" ls | wc -l)
  "$tool" clear
  [ "$("$tool" ls | wc -l)" -eq 0 ] || fail "clear left entries"
  "$tool" import "$scratch/all.tgcz"
  [ "$("$tool" ls | wc -l)" -eq "$n" ] || fail "import restored a different number of entries"
  out=$("$worker")
  [ "$(field kernels_compiled "$out")" -eq 0 ] || fail "imported entries must hit"
  # Corruption: verify exits 1 and names the entry.
  entry=$("$tool" ls | head -1 | awk '{print $1 "/" $2 ".tgc"}')
  printf 'garbage' >> "$TGC_CACHE_DIR/$entry"
  set +e
  "$tool" verify > "$scratch/verify"; rc=$?
  "$tool" import "$scratch/stats"; rc2=$?
  "$tool" frobnicate 2>/dev/null; rc3=$?
  set -e
  [ $rc -eq 1 ] || fail "verify exit code $rc on corruption"
  grep -q "CORRUPT" "$scratch/verify" || fail "verify does not name the corrupt entry"
  [ $rc2 -eq 1 ] || fail "importing a non-archive exits $rc2"
  [ $rc3 -eq 2 ] || fail "an unknown command exits $rc3"
  ;;
*) fail "unknown scenario $scenario" ;;
esac
echo "PASS: $scenario"
