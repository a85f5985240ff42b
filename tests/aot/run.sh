#!/usr/bin/env bash
# tgc-aot end to end: compile real models, run them against eager, bad input, CLI manners.
# Usage: run.sh TGC_AOT PYTHON WORKDIR SCENARIO [MODEL]
# Scenarios: models (saves the TorchScript models), compile MODEL, cuda, bad, cli, sign.
set -euo pipefail
aot=$1 python=$2 work=$3 scenario=$4 model=${5:-}
models=$work/models pkgs=$work/packages
export TGC_CACHE_DIR=$work/cache
mkdir -p "$pkgs"
# Scratch files of this scenario only: scenarios run in parallel.
tmp=$work/tmp-$scenario$model
rm -rf "$tmp" && mkdir -p "$tmp"

fail() { echo "FAIL: $*"; exit 1; }
# expect CODE PATTERN CMD...: CMD exits with CODE and its stderr matches PATTERN.
expect() {
  local code=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$tmp/out.txt" 2>"$tmp/err.txt" || rc=$?
  cat "$tmp/out.txt" "$tmp/err.txt"
  [ "$rc" -eq "$code" ] || fail "exit $rc, expected $code: $*"
  grep -qE -- "$pattern" "$tmp/err.txt" || fail "stderr lacks /$pattern/: $*"
}
# compile NAME SPEC... : compiles models/NAME.pt into packages/NAME.tgcpkg.
compile() {
  local name=$1
  shift
  local args=()
  for spec in "$@"; do args+=(--input "$spec"); done
  "$aot" compile "$models/$name.pt" "${args[@]}" -o "$pkgs/$name.tgcpkg"
}
check() { "$aot" run "$pkgs/$1.tgcpkg" --check-against "$models/$1.pt" "${@:2}"; }

case "$scenario" in
models)
  "$python" "$(dirname "$0")/save_models.py" "$models"
  ;;
compile)
  case "$model" in
  resnet18 | mobilenet_v3_small) compile "$model" 'x:f32[1,3,64,64]' ;;
  gpt2) compile gpt2 'ids:i64[2,32]@0:512' ;;
  gate) compile gate 'x:f32[4,16]' ;;
  nonzero) compile nonzero 'x:f32[8,8]' ;;
  *) fail "unknown model $model" ;;
  esac
  "$aot" inspect "$pkgs/$model.tgcpkg"
  ls -l "$pkgs/$model.tgcpkg"
  for seed in 1 2; do check "$model" --seed "$seed"; done
  if [ "$model" = gate ]; then
    # An if on tensor data: several segments, each branch compiled and right.
    n=$("$aot" inspect --json "$pkgs/gate.tgcpkg" | grep -c '"status": "compiled"')
    [ "$n" -ge 4 ] || fail "gate has $n compiled segments, expected both branches and more"
    for x in gate_pos gate_neg; do
      out=$(check gate --input "x=$models/$x.pt")
      echo "$out"
      grep -q "0 as TorchScript" <<<"$out" || fail "$x ran a segment as TorchScript"
    done
  fi
  if [ "$model" = gate ]; then
    # zstd-compressed sections load and run the same.
    "$aot" compile "$models/gate.pt" --input 'x:f32[4,16]' --compress -o "$tmp/z.tgcpkg"
    "$aot" inspect "$tmp/z.tgcpkg" | grep -q '(zstd, ' || fail "--compress stored nothing compressed"
    "$aot" run "$tmp/z.tgcpkg" --check-against "$models/gate.pt"
  fi
  if [ "$model" = nonzero ]; then
    "$aot" inspect "$pkgs/nonzero.tgcpkg" | grep -q "runs as TorchScript: aten::nonzero" ||
      fail "nonzero is not reported as an eager op"
  fi
  ;;
cuda)
  # CUDA packages build here, without a GPU: NVRTC only.
  "$aot" compile "$models/mlp.pt" --input 'x:f32[4,32]' --backend cuda --arch sm_90 \
    --arch sm_80 -o "$pkgs/mlp_cuda.tgcpkg"
  listing=$("$aot" inspect "$pkgs/mlp_cuda.tgcpkg")
  echo "$listing"
  for part in 'sm_90.cubin' 'sm_80.cubin' '\.ptx' 'backend cuda'; do
    grep -qE "$part" <<<"$listing" || fail "the CUDA package lacks $part"
  done
  expect 5 'running CUDA packages is not implemented yet' "$aot" run "$pkgs/mlp_cuda.tgcpkg"
  # A second compile builds nothing: its kernels come from the cache.
  again=$("$aot" compile "$models/mlp.pt" --input 'x:f32[4,32]' --backend cuda --arch sm_90 \
    --arch sm_80 -o "$tmp/mlp_cuda_again.tgcpkg")
  grep -qE '\(0 built, [1-9][0-9]* from the cache\)' <<<"$again" ||
    fail "a second CUDA compile rebuilt kernels: $again"
  expect 2 'needs --arch' "$aot" compile "$models/mlp.pt" --input 'x:f32[4,32]' \
    --backend cuda -o "$tmp/x.tgcpkg"
  # NVRTC failing (injected; a fresh cache so it runs): an error naming the stage, no crash.
  TGC_FAULT=nvrtc expect 1 'NVRTC failed to compile kernel .*stage nvrtc' "$aot" compile \
    "$models/mlp.pt" --input 'x:f32[4,32]' --backend cuda --arch sm_90 \
    --cache-dir "$tmp/nvrtc-fault-cache" -o "$tmp/x.tgcpkg"
  expect 2 'not of the form sm_XY' "$aot" compile "$models/mlp.pt" --input 'x:f32[4,32]' \
    --backend cuda --arch 90 -o "$tmp/x.tgcpkg"
  ;;
sign)
  # Signed packages: only a package signed by a trusted key loads when one is required.
  "$aot" --help | grep -q "runs its native code" || fail "--help does not say a package is native code"
  "$aot" keygen "$tmp/release"
  [ "$(stat -c %a "$tmp/release.key")" = 600 ] || fail "the secret key is not mode 600"
  expect 2 "not overwriting a key" "$aot" keygen "$tmp/release"
  "$aot" keygen "$tmp/other" >/dev/null
  "$aot" compile "$models/gate.pt" --input 'x:f32[4,16]' --sign "$tmp/release.key" --compress -o "$tmp/signed.tgcpkg"
  "$aot" compile "$models/gate.pt" --input 'x:f32[4,16]' -o "$tmp/unsigned.tgcpkg" >/dev/null
  "$aot" run "$tmp/signed.tgcpkg" --verify-key "$tmp/release.pub" --check-against "$models/gate.pt"
  "$aot" run "$tmp/signed.tgcpkg" --verify-key "$tmp/other.pub" --verify-key "$tmp/release.pub" >/dev/null
  "$aot" run "$tmp/signed.tgcpkg" >/dev/null # no key required: loads as before
  expect 6 "signed by key [0-9a-f]{64}, which is not one of the trusted keys" \
    "$aot" run "$tmp/signed.tgcpkg" --verify-key "$tmp/other.pub"
  expect 6 "is not signed, and a signature by one of 1 trusted key" \
    "$aot" run "$tmp/unsigned.tgcpkg" --verify-key "$tmp/release.pub"
  expect 2 "not a tgc-ed25519-secret-key file" \
    "$aot" compile "$models/gate.pt" --input 'x:f32[4,16]' --sign "$tmp/release.pub" -o "$tmp/x.tgcpkg"
  expect 2 "cannot read key file" "$aot" run "$tmp/signed.tgcpkg" --verify-key "$tmp/none.pub"
  # A flipped byte fails its checksum before the signature is looked at.
  cp "$tmp/signed.tgcpkg" "$tmp/flipped.tgcpkg"
  printf '\x55' | dd of="$tmp/flipped.tgcpkg" bs=1 seek=$(($(stat -c %s "$tmp/signed.tgcpkg") - 300)) conv=notrunc 2>/dev/null
  expect 4 "checksum mismatch" "$aot" run "$tmp/flipped.tgcpkg" --verify-key "$tmp/release.pub"
  ;;
bad)
  gate=$pkgs/gate.tgcpkg
  [ -f "$gate" ] || compile gate 'x:f32[4,16]' >/dev/null
  expect 3 'cannot read model .*: no such file' "$aot" compile "$tmp/missing.pt" --input 'x:f32[1]' -o "$tmp/x.tgcpkg"
  expect 3 'is not a TorchScript module' "$aot" compile "$models/not_torchscript.pt" --input 'x:f32[1]' -o "$tmp/x.tgcpkg"
  for spec in 'x:f32' 'x:q8[4,16]' 'x:f32[4,a]' ':f32[4,16]' 'x:f32[4,16' 'x:f32[4,16]@0:3' 'x:f32[-4,16]'; do
    expect 2 "malformed input spec '.*'" "$aot" compile "$models/gate.pt" --input "$spec" -o "$tmp/x.tgcpkg"
  done
  expect 2 "no --input names forward's argument 'x'" "$aot" compile "$models/gate.pt" --input 'y:f32[4,16]' -o "$tmp/x.tgcpkg"
  expect 3 'fails on random inputs .*cannot be multiplied' "$aot" compile "$models/gate.pt" --input 'x:f32[4,17]' -o "$tmp/x.tgcpkg"
  # An op tgc cannot compile: an eager segment by default, an error naming it with --fullgraph.
  expect 3 'fullgraph: graph break at aten::nonzero' "$aot" compile "$models/nonzero.pt" --input 'x:f32[8,8]' --fullgraph -o "$tmp/x.tgcpkg"
  "$aot" compile "$models/nonzero.pt" --input 'x:f32[8,8]' -o "$tmp/nz.tgcpkg" | grep -q 'aten::nonzero' ||
    fail "the nonzero package does not name its eager op"
  # Corrupt, truncated, foreign packages.
  expect 4 'cannot read package .*: no such file' "$aot" run "$tmp/missing.tgcpkg"
  expect 4 'is not a tgc package' "$aot" run "$models/gate.pt"
  size=$(stat -c %s "$gate")
  cp "$gate" "$tmp/flip.tgcpkg"
  printf '\xa5' | dd of="$tmp/flip.tgcpkg" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
  expect 4 'checksum mismatch in section' "$aot" run "$tmp/flip.tgcpkg"
  cp "$gate" "$tmp/header.tgcpkg"
  printf 'x' | dd of="$tmp/header.tgcpkg" bs=1 seek=85 conv=notrunc 2>/dev/null
  expect 4 'checksum mismatch in the header' "$aot" inspect "$tmp/header.tgcpkg"
  head -c $((size / 2)) "$gate" >"$tmp/half.tgcpkg"
  expect 4 'is truncated' "$aot" run "$tmp/half.tgcpkg"
  head -c 60 "$gate" >"$tmp/stub.tgcpkg"
  expect 4 'is truncated' "$aot" inspect "$tmp/stub.tgcpkg"
  cp "$gate" "$tmp/tgc.tgcpkg"
  printf '0.0.9\0' | dd of="$tmp/tgc.tgcpkg" bs=1 seek=16 conv=notrunc 2>/dev/null
  expect 4 'written by tgc 0.0.9 .*Recompile' "$aot" run "$tmp/tgc.tgcpkg"
  cp "$gate" "$tmp/torch.tgcpkg"
  printf '1.13.0\0' | dd of="$tmp/torch.tgcpkg" bs=1 seek=48 conv=notrunc 2>/dev/null
  expect 4 'with LibTorch 1.13.0' "$aot" run "$tmp/torch.tgcpkg"
  # Inputs that miss the package's guards.
  "$python" -c "import torch; torch.save(torch.randn(2, 16), '$tmp/small.pt')"
  expect 2 "input 'x' .*expected f32\[4,16\] on cpu, got f32\[2,16\]" "$aot" run "$gate" --input "x=$tmp/small.pt"
  expect 2 "not a tensor saved by torch.save" "$aot" run "$gate" --input "x=$models/not_torchscript.pt"
  expect 2 "must be NAME=FILE" "$aot" run "$gate" --input "x"
  ;;
cli)
  gate=$pkgs/gate.tgcpkg
  help=$("$aot" --help)
  for part in 'Examples:' 'tgc-aot compile resnet18.pt --input x:f32' 'Exit codes:' '5  missing device'; do
    grep -qF -- "$part" <<<"$help" || fail "--help lacks '$part'"
  done
  "$aot" compile --help | grep -q -- '--fullgraph' || fail "compile --help lacks --fullgraph"
  expect 2 'required' "$aot"
  expect 2 'subcommand is required|not expected' "$aot" bogus
  expect 2 'required' "$aot" compile "$models/gate.pt"
  # In a pipe: one summary line, no progress bar; -q: nothing at all.
  "$aot" compile "$models/gate.pt" --input 'x:f32[4,16]' -o "$tmp/p.tgcpkg" >"$tmp/pipe.out" 2>"$tmp/pipe.err"
  cat "$tmp/pipe.out" "$tmp/pipe.err"
  grep -q '^wrote .*p.tgcpkg' "$tmp/pipe.out" || fail "no summary line in a pipe"
  ! grep -q $'\r' "$tmp/pipe.out" "$tmp/pipe.err" || fail "progress bar drawn into a pipe"
  [ ! -s "$tmp/pipe.err" ] || fail "stderr is not quiet in a pipe"
  "$aot" -q compile "$models/gate.pt" --input 'x:f32[4,16]' -o "$tmp/q.tgcpkg" >"$tmp/q.out" 2>&1
  [ ! -s "$tmp/q.out" ] || fail "-q printed: $(cat "$tmp/q.out")"
  "$aot" -q run "$tmp/q.tgcpkg" --check-against "$models/gate.pt" >"$tmp/q.out" 2>&1
  [ ! -s "$tmp/q.out" ] || fail "-q run printed: $(cat "$tmp/q.out")"
  # On a terminal: a progress bar (script gives the command a pseudo-terminal).
  command -v script >/dev/null || fail "script(1) is missing (util-linux)"
  script -qec "'$aot' compile '$models/gpt2.pt' --input 'ids:i64[2,32]@0:512' -o '$tmp/t.tgcpkg'" /dev/null >"$tmp/tty.out"
  cat -v "$tmp/tty.out"
  grep -q $'\r' "$tmp/tty.out" || fail "no progress bar on a terminal"
  grep -qE 'compile +\[#*\.*\]' "$tmp/tty.out" || fail "no compile progress bar on a terminal"
  # Exit code 1: outputs that do not match eager.
  expect 1 'differ from eager' "$aot" run "$gate" --check-against "$models/gate_other.pt"
  grep -q MISMATCH "$tmp/out.txt" || fail "no MISMATCH line"
  ;;
*) fail "unknown scenario $scenario" ;;
esac
echo PASS
