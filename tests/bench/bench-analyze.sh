#!/bin/sh
# tests/bench/bench-analyze.sh: how fast the analyzer reads what it
# recorded, beside heaptrack_print on heaptrack's recording of the same
# run. Three programs, each recorded by memsight (-e malloc: every call)
# and by heaptrack: Python building JSON, Node building objects, and
# churn_leak churning CHURN_MIB MiB in each of two threads (about ten
# million samples by default). For each: the time and peak RSS of
# report --html, report, leaks, folded -e malloc and pprof, against
# heaptrack_print's, and records a second for leaks and folded. Prints
# figures and ratios; asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
CHURN_MIB=${CHURN_MIB:-10000}
command -v heaptrack >/dev/null && command -v heaptrack_print >/dev/null ||
	{ echo "heaptrack is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"
bench_workdir

# Debian's interpreter itself, as bench-malloc.sh: a pyenv shim is a
# shell script, which heaptrack would follow instead. The script's name
# is no module's it imports (a json.py imports itself, and fails).
py=/usr/bin/python3
cat >build_json.py <<'EOF'
import json
print(len([json.dumps({"k%d" % i: [i] * 20 for i in range(4000)}) for r in range(40)]))
EOF
cat >objects.js <<'EOF'
let keep = [];
for (let r = 0; r < 200; r++) {
	let o = {};
	for (let i = 0; i < 5000; i++) o["k" + i] = { i: i, s: "v" + i };
	keep.push(JSON.stringify(o).length);
}
console.log(keep.length);
EOF

# One program: its recordings, then each analysis timed.
one() {
	name=$1
	shift
	"$@" >/dev/null 2>&1 || { echo "$name: '$*' failed: nothing to measure"; return; }
	"$b/memsight" record -q -e malloc -o ms.trace -- "$@" >/dev/null 2>&1
	rm -f ht.*
	heaptrack -o ht "$@" >/dev/null 2>&1
	ht=$(ls ht.* 2>/dev/null | head -1)
	n=$("$b/memsight" info ms.trace | sed -n 's/^samples: *//p')
	# The objects' cache first, as heaptrack_print's symbols are in its
	# file already.
	"$b/memsight" folded -e malloc ms.trace >/dev/null 2>&1
	set -- $(measure heaptrack_print "$ht")
	hp_s=$1 hp_kb=$2
	printf '\n%s: memsight %s samples (%s MB), heaptrack %s MB\n' "$name" "$n" \
		$(($(stat -c %s ms.trace) / 1048576)) $(($(stat -c %s "$ht") / 1048576))
	printf '  %-22s %7.2f s  %6.0f MB\n' "heaptrack_print" "$hp_s" "$(echo "$hp_kb" | awk '{ print $1 / 1024 }')"
	for c in "report --html r.html" report leaks "folded -e malloc" "pprof -o p.pb.gz"; do
		set -- $(measure "$b/memsight" $c ms.trace)
		awk -v c="$c" -v s="$1" -v kb="$2" -v hs="$hp_s" -v hk="$hp_kb" -v n="$n" 'BEGIN {
			printf "  memsight %-13s %7.2f s  %6.0f MB   %5.2fx heaptrack_print'"'"'s time, %5.2fx its RSS, %.1fM samples/s\n",
				c, s, kb / 1024, s / hs, kb / hk, n / s / 1e6 }'
	done
}

one "python3 building JSON" "$py" build_json.py
command -v node >/dev/null && one "node building objects" node objects.js
one "churn_leak, $CHURN_MIB MiB churned by each of 2 threads" "$b/samples/churn_leak" 16 "$CHURN_MIB" 2
