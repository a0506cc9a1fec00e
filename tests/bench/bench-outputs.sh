#!/bin/sh
# tests/bench/bench-outputs.sh: the outputs on a trace of about a million
# samples (every page fault of phases touching SAMPLES_MIB MiB a MiB at a
# time, frame-pointer stacks): memsight pprof, and memsight report --html
# with its size and the time headless Chromium takes to load it, beside
# perf script on perf record of the same workload (and stackcollapse-perf.pl
# | flamegraph.pl where they are on PATH: Debian packages neither). Prints
# times and sizes; asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
MIB=${SAMPLES_MIB:-4000}
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"
bench_workdir

"$b/memsight" record -q -g fp -e faults -o ms.trace -- "$b/samples/phases" 16 "$MIB" 16 >/dev/null
n=$("$b/memsight" info ms.trace | sed -n 's/^samples: *//p')
"$b/memsight" folded ms.trace >/dev/null 2>&1 # the objects' cache, as perf's ~/.debug
set -- $(measure "$b/memsight" pprof -e faults -o p.pb.gz ms.trace)
pp_s=$1 pp_kb=$2
set -- $(measure "$b/memsight" report --html r.html ms.trace)
html_s=$1 html_kb=$2
load_s=
if command -v chromium >/dev/null; then
	s=$(date +%s.%N)
	chromium --headless --no-sandbox --disable-gpu --user-data-dir="$w/chr" --dump-dom "file://$w/r.html" >/dev/null 2>&1
	load_s=$(awk -v a="$s" -v b="$(date +%s.%N)" "BEGIN { print b - a }")
fi

perf record -q -g -e page-faults -c 1 -o perf.data -- "$b/samples/phases" 16 "$MIB" 16 >/dev/null 2>&1
pn=$(perf script -i perf.data -F event 2>/dev/null | wc -l)
perf script -i perf.data >/dev/null 2>&1 # perf's build-id cache
set -- $(measure perf script -i perf.data)
ps_s=$1 ps_kb=$2
fg_s=
if command -v stackcollapse-perf.pl >/dev/null && command -v flamegraph.pl >/dev/null; then
	s=$(date +%s.%N)
	perf script -i perf.data 2>/dev/null | stackcollapse-perf.pl | flamegraph.pl >fg.svg
	fg_s=$(awk -v a="$s" -v b="$(date +%s.%N)" "BEGIN { print b - a }")
fi

awk -v n="$n" -v pp="$pp_s" -v ppk="$pp_kb" -v pb=$(stat -c %s p.pb.gz) -v hs="$html_s" -v hk="$html_kb" \
    -v hb=$(stat -c %s r.html) -v ls="${load_s:-0}" -v pn="$pn" -v ps="$ps_s" -v psk="$ps_kb" -v fg="${fg_s:-0}" 'BEGIN {
	printf "memsight: %d samples\n", n
	printf "  pprof -e faults:      %.2f s (%.0f samples/s), peak %.0f MB, profile %.0f KB\n", pp, n / pp, ppk / 1024, pb / 1024
	printf "  report --html:        %.2f s, peak %.0f MB, page %.0f KB", hs, hk / 1024, hb / 1024
	if (ls > 0) printf ", headless Chromium loads it in %.2f s", ls
	printf "\nperf: %d samples\n", pn
	printf "  perf script:          %.2f s (%.0f samples/s), peak %.0f MB\n", ps, pn / ps, psk / 1024
	if (fg > 0) printf "  | stackcollapse-perf.pl | flamegraph.pl: %.2f s\n", fg
	else printf "  (stackcollapse-perf.pl and flamegraph.pl are not on PATH: perf script alone is timed)\n"
	printf "pprof vs perf script, samples/s: %.1fx\n", (n / pp) / (pn / ps) }'
