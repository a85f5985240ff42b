#!/usr/bin/env bash
# Tests that every segment TGC_DEBUG_DIR dumps while a test binary runs is
# read back by `tgc-opt --import-segment` into exactly the `tg` the JIT
# imported (the graphN.tg.mlir dumped beside it).
#
#   debug-dump-reimports.sh <test binary> <gtest filter> <tgc-opt> <scratch dir>
set -euo pipefail
binary=$1 filter=$2 tgc_opt=$3 dir=$4
rm -rf "$dir"
mkdir -p "$dir"
TGC_DEBUG_DIR=$dir TGC_DISABLE_CACHE=1 "$binary" --gtest_filter="$filter" > "$dir/run.log"
count=0
for segment in "$dir"/graph*.segment.txt; do
  [ -e "$segment" ] || break
  stem=${segment%.segment.txt}
  # tgc-opt ends its output with an empty line; the dump does not.
  "$tgc_opt" --import-segment "$segment" | sed -e '${/^$/d}' > "$stem.reimported.mlir"
  diff -u "$stem.tg.mlir" "$stem.reimported.mlir"
  count=$((count + 1))
done
if [ "$count" -eq 0 ]; then
  echo "no segment was dumped to $dir" >&2
  exit 1
fi
echo "$count dumped segments re-import to the tg the JIT compiled"
