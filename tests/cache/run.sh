#!/usr/bin/env bash
# Cache scenarios across separate processes.
# Usage: run.sh SCENARIO WORKER TGC_CACHE_TOOL SCRATCH
# Scenarios: warm, warm-training, concurrent, readonly, relocatable, cli, trust.
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
trust)
  # Entries are native code: a cache others can write is not loaded from.
  (umask 000 && "$worker" >/dev/null)
  [ "$(stat -c %a "$TGC_CACHE_DIR")" = 700 ] || fail "cache directory mode $(stat -c %a "$TGC_CACHE_DIR")"
  [ "$(stat -c %a "$TGC_CACHE_DIR/kernels")" = 700 ] || fail "layer mode is not 700"
  modes=$(find "$TGC_CACHE_DIR" -name '*.tgc' -printf '%m\n' | sort -u)
  [ "$modes" = 600 ] || fail "entry modes: $modes"
  "$tool" verify || fail "verify fails on a private cache"
  chmod g+w "$TGC_CACHE_DIR/kernels"
  set +e
  "$tool" verify >"$scratch/verify"; rc=$?
  set -e
  cat "$scratch/verify"
  [ $rc -eq 1 ] || fail "verify exits $rc on a group-writable layer"
  grep -q "UNSAFE .*kernels.*writable by group or others" "$scratch/verify" || fail "verify does not name the layer"
  out=$("$worker" 2>"$scratch/err")
  echo "group-writable: $out"
  [ "$(field cache_hits_disk "$out")" -eq 0 ] || fail "entries were loaded from an unsafe cache"
  [ "$(field kernels_compiled "$out")" -gt 0 ] || fail "nothing was compiled"
  warnings=$(grep -c "is not safe to load native code from" "$scratch/err" || true)
  [ "$warnings" -eq 1 ] || { cat "$scratch/err"; fail "expected one warning, got $warnings"; }
  chmod g-w "$TGC_CACHE_DIR/kernels"
  # A layer that is a symbolic link: not loaded from, and clear leaves
  # what it points to alone.
  mv "$TGC_CACHE_DIR/graphs" "$scratch/outside"
  ln -s "$scratch/outside" "$TGC_CACHE_DIR/graphs"
  before=$(ls "$scratch/outside" | wc -l)
  [ "$before" -gt 0 ] || fail "no graph entries to protect"
  set +e
  "$tool" verify >"$scratch/verify"; rc=$?
  set -e
  [ $rc -eq 1 ] && grep -q "UNSAFE .*: its layer graphs is a symbolic link" "$scratch/verify" ||
    { cat "$scratch/verify"; fail "verify does not report the symlinked layer"; }
  "$tool" clear
  [ "$(ls "$scratch/outside" | wc -l)" -eq "$before" ] || fail "clear followed a symlinked layer"
  # An entry that is a symbolic link is reported too.
  rm "$TGC_CACHE_DIR/graphs" && mkdir -m 700 "$TGC_CACHE_DIR/graphs"
  ln -s "$scratch/outside/$(ls "$scratch/outside" | head -1)" "$TGC_CACHE_DIR/graphs/planted.tgc"
  set +e
  "$tool" verify >"$scratch/verify"; rc=$?
  set -e
  [ $rc -eq 1 ] && grep -q "UNSAFE .*planted.tgc: a symbolic link" "$scratch/verify" ||
    { cat "$scratch/verify"; fail "verify does not report a symlinked entry"; }
  if [ "$(id -u)" -eq 0 ]; then
    # A cache directory owned by another user (root can make one).
    rm -f "$TGC_CACHE_DIR/graphs/planted.tgc"
    "$worker" >/dev/null
    chown -R 4242:4242 "$TGC_CACHE_DIR"
    out=$("$worker" 2>"$scratch/err")
    [ "$(field cache_hits_disk "$out")" -eq 0 ] || fail "entries were loaded from another user's cache"
    grep -q "owned by uid 4242, not by this user" "$scratch/err" || { cat "$scratch/err"; fail "no ownership warning"; }
    set +e
    "$tool" verify >"$scratch/verify"; rc=$?
    set -e
    [ $rc -eq 1 ] || fail "verify exits $rc on another user's cache"
    chown -R 0:0 "$TGC_CACHE_DIR"
  else
    echo "SKIP (part): not root, no cache of another owner"
  fi
  ;;
*) fail "unknown scenario $scenario" ;;
esac
echo "PASS: $scenario"
