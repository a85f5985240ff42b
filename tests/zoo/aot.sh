#!/usr/bin/env bash
# One zoo model through tgc-aot: compile a package from the traced model with
# its input specs, then run it against eager (tgc-aot run --check-against
# fails on a mismatch). Usage: aot.sh TGC_AOT PYTHON ZOO_DIR OUT_DIR MODEL
set -euo pipefail
aot=$1 python=$2 zoo=$3 out=$4 model=$5
mkdir -p "$out"
mapfile -t inputs < <("$python" -c 'import json, sys
for s in json.load(open(sys.argv[1]))["inputs"]: print("--input"); print(s)' "$zoo/$model.json")
"$aot" compile "$zoo/$model.pt" "${inputs[@]}" -o "$out/$model.tgcpkg"
"$aot" run "$out/$model.tgcpkg" --check-against "$zoo/$model.pt"
