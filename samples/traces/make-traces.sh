#!/bin/sh
# samples/traces/make-traces.sh: re-record the checked-in traces (as root,
# after `make`). Each trace comes with the sample binary it recorded, stored
# by build-id under debug/, so the analyzer names its frames anywhere with
# --debug-dir samples/traces/debug.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/samples/traces
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# An 8 MiB input of a fixed pattern, so the run is the same every time.
i=0
: >"$tmp/in8.bin"
while [ $i -lt 2048 ]; do printf '%4096s' "$i" >>"$tmp/in8.bin"; i=$((i + 1)); done

"$top/build/memsight" record -q -o "$out/xor-8m.trace" -- "$top/build/samples/xor_encoder" "$tmp/in8.bin" \
	>"$out/xor-8m.truth"

# Faults of every kind, with frame-pointer stacks and no embedded objects
# to stay small: the sample's own functions keep their frame pointers.
"$top/build/memsight" record -q -g fp --embed none -e faults -o "$out/fault-kinds.trace" -- \
	"$top/build/samples/fault_kinds" 64 >"$out/fault-kinds.truth"

for s in xor_encoder fault_kinds; do
	bin=$top/build/samples/$s
	id=$(readelf -n "$bin" | sed -n 's/.*Build ID: //p')
	mkdir -p "$out/debug/.build-id/$(echo "$id" | cut -c1-2)"
	cp "$bin" "$out/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
	echo "$s build-id $id"
done
