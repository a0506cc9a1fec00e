# tests/bench/bench-lib.sh: what the benchmarks share. Sourced after $b
# (the build directory) is set; works in the current directory.

# A scratch directory for the run, removed at exit, made the current one;
# the analyzer's cache of decoded objects starts empty there ($w).
bench_workdir() {
	w=$(mktemp -d)
	trap 'rm -rf "$w"' EXIT
	cd "$w" || exit 1
	MEMSIGHT_CACHE_DIR=$w/cache
	export MEMSIGHT_CACHE_DIR
}

# The parallel build the box benchmarks time: ./build.sh runs make -j2 of
# memsight's recorder and analyzer from a copy of this tree ($top) in the
# work directory, built once here so that each timed run finds its
# sources cached. Exits when it does not build.
bench_build_workload() {
	mkdir src && (cd "$top" && git archive HEAD) | tar -x -C src || exit 1
	cat >build.sh <<BUILD
#!/bin/sh
rm -rf "$w/src/b"
make -j2 -s -C "$w/src" B="$w/src/b" "$w/src/b/memsight-analyze" "$w/src/b/memsight-record" >/dev/null 2>&1
BUILD
	chmod +x build.sh
	./build.sh || { echo "the workload does not build"; exit 1; }
}

# "wall_s max_rss_kb" of a command, its output dropped.
measure() { /usr/bin/time -f "%e %M" -o m.time "$@" >/dev/null 2>m.err; cat m.time; }

# The median of the numbers on standard input.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Size, events and losses of ms.trace and perf.data, into ms_bytes,
# ms_events, ms_lost, pf_bytes, pf_events, pf_lost.
count_outputs() {
	ms_bytes=$(stat -c %s ms.trace)
	"$b/memsight" info ms.trace >ms.info
	ms_events=$(sed -n 's/^samples: *//p' ms.info)
	ms_lost=$(sed -n 's/^lost: *\([0-9]*\).*/\1/p' ms.info)
	pf_bytes=$(stat -c %s perf.data)
	pf_events=$(perf script -i perf.data -F event 2>/dev/null | wc -l)
	pf_lost=$(perf_lost perf.data)
}

# Samples perf lost, by its own count: the LOST_SAMPLES line of each
# event's section in --stats (the aggregated section above them counts
# LOST records, not the samples they stand for).
perf_lost() {
	perf report -i "$1" --stats 2>/dev/null |
		awk '/ stats:$/ { ev = 1 } ev && /LOST_SAMPLES events:/ { s += $3 } END { print s + 0 }'
}

# The malloc benchmarks' workloads, written into the current directory:
# build_json.py (Python building JSON strings) and objects.js (node
# building objects), each printing "NAME: elapsed MS ms" for its work
# alone, on stderr.
bench_malloc_workloads() {
	cat >build_json.py <<'EOF'
import json, sys, time
t = time.perf_counter()
s = [json.dumps({"id": i, "name": "item%d" % i, "tags": ["a", "b", "c"], "v": [i] * 10}) for i in range(200000)]
print("python: elapsed %.3f ms %d" % ((time.perf_counter() - t) * 1000, len(s)), file=sys.stderr)
EOF
	cat >objects.js <<'EOF'
const t0 = process.hrtime.bigint();
let a = [];
for (let i = 0; i < 200000; i++) a.push({ id: i, name: "n" + i, tags: ["x", "y"], v: [i, i + 1] });
const s = JSON.stringify(a.slice(0, 20000));
console.error("node: elapsed " + (Number(process.hrtime.bigint() - t0) / 1e6).toFixed(3) + " ms " + s.length);
EOF
}
