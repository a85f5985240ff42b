#!/usr/bin/env bash
# One zoo model through tgc-aot: compile a package from the traced model with
# its input specs, then run it against eager (tgc-aot run --check-against
# fails on a mismatch). No zoo model has data-dependent control flow, so the
# package must compile all of it: no op left to TorchScript, no segment run
# as TorchScript (the real-model issue's target; size arithmetic included).
# Usage: aot.sh TGC_AOT PYTHON ZOO_DIR OUT_DIR MODEL
set -euo pipefail
aot=$1 python=$2 zoo=$3 out=$4 model=$5
mkdir -p "$out"
mapfile -t inputs < <("$python" -c 'import json, sys
for s in json.load(open(sys.argv[1]))["inputs"]: print("--input"); print(s)' "$zoo/$model.json")
compiled=$("$aot" compile "$zoo/$model.pt" "${inputs[@]}" -o "$out/$model.tgcpkg")
echo "$compiled"
ran=$("$aot" run "$out/$model.tgcpkg" --check-against "$zoo/$model.pt")
echo "$ran"
status=0
if grep -q "runs as TorchScript" <<<"$compiled" || ! grep -q " 0 left to TorchScript" <<<"$compiled"; then
  echo "FAIL: $model: the package leaves work to TorchScript (eager)" >&2
  status=1
fi
if ! grep -q " 0 as TorchScript" <<<"$ran"; then
  echo "FAIL: $model: a segment ran as TorchScript (eager)" >&2
  status=1
fi
exit $status
