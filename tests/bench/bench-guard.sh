#!/bin/sh
# tests/bench/bench-guard.sh: what the guard mode costs, side by side in
# one run, on four programs: alloc_zoo churn (a malloc/free loop), Python
# building JSON strings, a node script building objects, and redis-server
# (jemalloc) under redis-benchmark. Each alone; with memsight's wrapper
# preloaded and nothing recording, without and with the guard at its
# default rate (MEMSIGHT_GUARD=5000); recorded for memsight errors (-e
# malloc,faults,signals, which --guard adds) with --sample-bytes 512K,
# without and with --guard; and so recorded every call, without and with
# --guard. Times are the program's own where it prints one, the whole run's
# wall time and peak RSS beside them, and redis-benchmark's requests per
# second. Runs are taken in turn, mode after mode, RUNS times; medians.
# Prints figures and ratios. Asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${BUILD:-$top/build}
. "$top/tests/bench/bench-lib.sh"
RUNS=${RUNS:-5}
N=${N:-200000}
PY=/usr/bin/python3
GAP=${GAP:-1} # seconds between recordings: a recording's uprobes are let go after it exits
bench_workdir
bench_malloc_workloads
zoo=$b/samples/alloc_zoo
sampler=$b/libmemsight-sample.so
trap 'redis-cli -p 6391 shutdown nosave >/dev/null 2>&1; rm -rf "$w"' EXIT

MODES="alone idle idle-guard sampled sampled-guard every every-guard"

run() { /usr/bin/time -f "%e %M" -o w.time "$@" >out 2>err; }
own() { sed -n "s/^$1: elapsed \([0-9.]*\) ms.*/\1/p" out err | head -1; }

mode_cmd() {
	case $1 in
	alone) echo "" ;;
	idle) echo "env LD_PRELOAD=$sampler" ;;
	idle-guard) echo "env LD_PRELOAD=$sampler MEMSIGHT_GUARD=5000" ;;
	sampled) echo "$b/memsight record -q -e malloc,faults,signals --sample-bytes 512K -o ms.trace --" ;;
	sampled-guard) echo "$b/memsight record -q -e malloc,faults,signals --sample-bytes 512K --guard -o ms.trace --" ;;
	every) echo "$b/memsight record -q -e malloc,faults,signals -o ms.trace --" ;;
	every-guard) echo "$b/memsight record -q -e malloc,faults,signals --guard -o ms.trace --" ;;
	esac
}

mode_label() {
	case $1 in
	alone) echo "alone" ;;
	idle) echo "wrapper preloaded, nothing recording" ;;
	idle-guard) echo "  and the guard on (MEMSIGHT_GUARD=5000)" ;;
	sampled) echo "memsight --sample-bytes 512K" ;;
	sampled-guard) echo "  and --guard" ;;
	every) echo "memsight, every call" ;;
	every-guard) echo "  and --guard" ;;
	esac
}

# One workload: NAME, the marker its program prints its time after, then
# the command. Fills NAME.MODE.{own,wall,rss}, one line a run.
workload() {
	name=$1 mark=$2
	shift 2
	for i in $(seq "$RUNS"); do
		for mode in $MODES; do
			# shellcheck disable=SC2046
			run $(mode_cmd $mode) "$@"
			own "$mark" >>"$name.$mode.own"
			cut -d" " -f1 w.time >>"$name.$mode.wall"
			cut -d" " -f2 w.time >>"$name.$mode.rss"
			case $mode in sampled* | every*) sleep "$GAP" ;; esac
		done
	done
}

# Each mode against the one above it where it adds the guard, else alone.
report() {
	name=$1 title=$2
	printf '\n%s, median of %s runs\n' "$title" "$RUNS"
	printf '%-42s %9s %8s %8s %8s %10s %9s\n' "" "own ms" "ratio" "wall s" "ratio" "RSS KiB" "more KiB"
	for mode in $MODES; do
		case $mode in *-guard) base=${mode%-guard} ;; *) base=alone ;; esac
		o=$(median <"$name.$mode.own") bo=$(median <"$name.$base.own")
		ww=$(median <"$name.$mode.wall") bw=$(median <"$name.$base.wall")
		r=$(median <"$name.$mode.rss") br=$(median <"$name.$base.rss")
		awk -v l="$(mode_label $mode)" -v o="${o:-0}" -v a="${bo:-0}" -v w="$ww" -v aw="$bw" -v r="$r" -v br="$br" 'BEGIN {
			printf "%-42s %9.1f %7.3fx %8.2f %7.3fx %10d %+9d\n", l, o, (a > 0 ? o / a : 0), w, (aw > 0 ? w / aw : 0), r, r - br }'
	done
	echo "(a guarded mode's ratios are to the same mode without the guard; the others' to the program alone)"
}

WORKLOADS=${WORKLOADS:-churn python node redis}
want() { case " $WORKLOADS " in *" $1 "*) return 0 ;; esac; return 1; }

if want churn; then
	workload churn alloc_zoo "$zoo" churn "$N"
	report churn "alloc_zoo churn $N (malloc/calloc/realloc/free, nothing else)"
fi

if want python; then
	workload python python "$PY" build_json.py
	report python "Python building 200,000 JSON strings"
fi

if want node; then
	workload node node node objects.js
	report node "node building 200,000 objects"
fi

# redis-server links jemalloc, which the wrapper hands its calls to; the
# figure is redis-benchmark's throughput.
if want redis && command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	rb() {
		"$@" redis-server --port 6391 --save "" --appendonly no >redis.out 2>&1 &
		for i in $(seq 50); do redis-cli -p 6391 ping >/dev/null 2>&1 && break; sleep 0.1; done
		redis-benchmark -p 6391 -q -n 100000 -t set,get -d 64 2>/dev/null |
			awk -F'[: ]+' '/requests per second/ { for (i = 1; i <= NF; i++) if ($i == "requests") { s += $(i - 1); n++ } }
				END { printf "%.0f\n", n ? s / n : 0 }'
		redis-cli -p 6391 shutdown nosave >/dev/null 2>&1
		wait
		sleep "$GAP"
	}
	for i in $(seq "$RUNS"); do
		for mode in $MODES; do
			# shellcheck disable=SC2046
			rb $(mode_cmd $mode) >>redis.$mode
		done
	done
	printf '\nredis-server (jemalloc) under redis-benchmark (set, get; 64 bytes), median of %s runs\n' "$RUNS"
	for mode in $MODES; do
		case $mode in *-guard) base=${mode%-guard} ;; *) base=alone ;; esac
		awk -v l="$(mode_label $mode)" -v r="$(median <redis.$mode)" -v a="$(median <redis.$base)" 'BEGIN {
			printf "%-42s %10d req/s %7.3fx slower\n", l, r, (r > 0 ? a / r : 0) }'
	done
fi
