#!/bin/sh
# tests/demo.sh: what `make demo` shows. Records the bundled samples, prints
# what memsight found, writes flame graphs into demo/. Falls back to the
# checked-in trace where recording is not allowed.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/build
out=$top/demo
mkdir -p "$out"
cd "$out" || exit 1

echo "== memsight demo: the XOR encoder sample, 64 MiB input =="
head -c $((64 << 20)) /dev/urandom >"$out/input.bin"
if "$b/memsight" record -o "$out/xor.trace" -- "$b/samples/xor_encoder" "$out/input.bin"; then
	trace=$out/xor.trace
	dbg=
else
	echo "(recording is not possible here: analyzing the checked-in trace instead)"
	trace=$top/samples/traces/xor-8m.trace
	dbg="--debug-dir $top/samples/traces/debug"
fi
rm -f "$out/input.bin"
echo
"$b/memsight" report -T 3 $dbg "$trace"
# The finding, by name: which function's memory the faults were.
echo
echo "== page faults by the function they were for (memsight folded -e faults) =="
"$b/memsight" folded $dbg -e faults "$trace" 2>/dev/null | awk '
	{ n = $NF; t += n; if (/;process_chunk(;|$| )/) pc += n; else if (/;read_in_chunks(;|$| )/) rc += n }
	END {
		printf "  %6d (%2.0f%%)  read_in_chunks: its input buffer, the size of the whole input\n", rc, 100 * rc / t
		printf "  %6d (%2.0f%%)  process_chunk: the copy of every chunk it keeps\n", pc, 100 * pc / t
		printf "  %6d (%2.0f%%)  the rest (loader, libc, stdio)\n", t - rc - pc, 100 * (t - rc - pc) / t
	}'
for e in faults brk mmap; do
	w=count
	[ $e = faults ] || w=bytes
	"$b/memsight" flamegraph $dbg -e $e -w $w -o "$out/xor-$e.svg" "$trace" && echo "wrote $out/xor-$e.svg"
done

echo
echo "== page faults by kind: first touches, copy-on-write in a forked child, the kernel filling a buffer =="
if "$b/memsight" record -q -o "$out/kinds.trace" -- "$b/samples/fault_kinds" 256 >/dev/null; then
	"$b/memsight" faults -T 3 "$out/kinds.trace" 2>/dev/null | sed -n "/PID COMM/,/^$/p"
fi

echo
echo "== the fibonacci leak and the leak() loop: every malloc call, leaks by stack =="
for s in "fib_leak 200" "loop_leak 10000"; do
	set -- $s
	if "$b/memsight" record -q -e malloc -o "$out/$1.trace" -- "$b/samples/$1" "$2"; then
		"$b/memsight" leaks -T 2 "$out/$1.trace"
		"$b/memsight" flamegraph -e malloc -w leaked -o "$out/$1-leaks.svg" "$out/$1.trace" &&
			echo "wrote $out/$1-leaks.svg"
		echo
	fi
done
if [ -f "$out/loop_leak.trace" ] && [ -f "$out/fib_leak.trace" ]; then
	"$b/memsight" report --html "$out/report.html" "$out/fib_leak.trace" "$out/loop_leak.trace" 2>/dev/null &&
		echo "wrote $out/report.html: loop_leak's page, with what changed from fib_leak"
fi
echo
echo "open the SVGs in a browser: click to zoom, Search (Ctrl-F) to highlight; and report.html: drag across"
echo "its chart to select a window, click a function for its callers."
