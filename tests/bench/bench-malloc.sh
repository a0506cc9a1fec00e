#!/bin/sh
# tests/bench/bench-malloc.sh: what tracing the malloc family costs, side by
# side in one run, on four programs:
#   alloc_zoo churn (a malloc/free loop), Python building JSON strings, a
#   node script building objects, and redis-server under redis-benchmark;
# each run alone; with memsight's wrapper preloaded and nothing recording;
# recorded with --sample-bytes 512K; every call through the wrapper (the
# default); every call through uprobes on the allocator (--malloc-via
# uprobes); under heaptrack; and under perf record on uprobes on the same
# allocator functions, with their arguments and no stacks.
# Times are the program's own where it prints one (churn, Python, node:
# the work, not the start-up), the whole run's wall time beside them, and
# redis-benchmark's requests per second. Then what one reported allocation
# costs, against a bare uprobe on the wrapper's probe site; and churn with
# the wrapper preloaded and nothing recording, in pairs with runs alone,
# beside a bare interposer that does nothing but jump to glibc's malloc.
# Prints figures and ratios. Asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${BUILD:-$top/build}
. "$top/tests/bench/bench-lib.sh"
RUNS=${RUNS:-3}
N=${N:-20000}
PY=/usr/bin/python3
GAP=${GAP:-1} # seconds between runs: a recording's uprobes are let go after it exits
bench_workdir
bench_malloc_workloads
ue=/sys/kernel/tracing/uprobe_events
zoo=$b/samples/alloc_zoo
libc=$(ldd "$zoo" | sed -n 's/.*libc.so.6 => \([^ ]*\).*/\1/p')
jemalloc=$(ldd /usr/bin/redis-server 2>/dev/null | sed -n 's/.*libjemalloc.so.2 => \([^ ]*\).*/\1/p')
sampler=$b/libmemsight-sample.so
trap 'exit 1' INT TERM
# This bench's uprobe groups, left behind by a run that was killed too.
drop_groups() {
	for g in benchlibc benchje benchsite; do
		grep "^[pr]:$g/" $ue 2>/dev/null | sed "s/^[pr]:\([^ ]*\) .*/-:\1/" | while read -r d; do echo "$d" >>$ue; done
	done
}
drop_groups
trap 'drop_groups; redis-cli -p 6390 shutdown nosave >/dev/null 2>&1; rm -rf "$w"' EXIT

# Uprobes for perf: entries and returns of malloc, calloc, realloc, and free,
# in an allocator object, under a group; the events' -e list in $2_events.
off() { nm -D --defined-only "$1" | awk -v f="$2" '$3 == f || $3 ~ "^"f"@@" { print "0x" $1; exit }'; }
perf_uprobes() {
	obj=$1 g=$2
	{
		for f in malloc calloc realloc; do
			case $f in malloc) a="size=%di:u64" ;; calloc) a="nmemb=%di:u64 size=%si:u64" ;; *) a="ptr=%di:u64 size=%si:u64" ;; esac
			echo "p:$g/$f $obj:$(off "$obj" $f) $a"
			echo "r:$g/${f}_ret $obj:$(off "$obj" $f) ret=\$retval:u64"
		done
		echo "p:$g/free $obj:$(off "$obj" free) ptr=%di:u64"
	} >>$ue || { echo "cannot define uprobes in $ue"; exit 1; }
	eval "${g}_events=\"-e $g:malloc -e $g:malloc_ret -e $g:calloc -e $g:calloc_ret -e $g:realloc -e $g:realloc_ret -e $g:free\""
}
perf_uprobes "$libc" benchlibc
[ -n "$jemalloc" ] && perf_uprobes "$jemalloc" benchje

# The wrapper's probe sites, as bare uprobes with their semaphores: what a
# reported allocation costs with nothing but the trap.
# Note addresses are virtual; uprobes and their semaphores take file offsets.
"$PY" - "$sampler" >sites.ue <<'EOF'
import re, subprocess, sys
obj = sys.argv[1]
loads = [tuple(int(x, 16) for x in (l.split()[1], l.split()[2], l.split()[5]))
         for l in subprocess.run(["readelf", "-lW", obj], capture_output=True, text=True).stdout.splitlines()
         if l.split()[:1] == ["LOAD"]]
def off(a):
    return next((a - va + o for o, va, sz in loads if va <= a < va + sz), a)
n = {}
for name, loc, sem in re.findall(r"Name: (\S+)\s+Location: (\S+), Base: \S+, Semaphore: (\S+)",
                                 subprocess.run(["readelf", "-n", obj], capture_output=True, text=True).stdout):
    n[name] = n.get(name, 0) + 1
    print("p:benchsite/%s%s %s:0x%x(0x%x)" % (name, "_%d" % n[name] if n[name] > 1 else "", obj,
                                            off(int(loc, 16)), off(int(sem, 16))))
EOF
cat sites.ue >>$ue || { echo "cannot define the wrapper's sites in $ue"; exit 1; }
site_events=$(sed 's/^p:\([^/]*\)\/\([^ ]*\) .*/-e \1:\2/' sites.ue | tr '\n' ' ')

wall() { /usr/bin/time -f %e -o w.time "$@" >out 2>err; sleep "$GAP"; }
own() { sed -n "s/^$1: elapsed \([0-9.]*\) ms.*/\1/p" out err | head -1; }

# One workload: NAME, the marker its program prints its time after, then
# the command. Fills NAME.MODE.own and NAME.MODE.wall, one line a run.
workload() {
	name=$1 mark=$2
	shift 2
	for i in $(seq "$RUNS"); do
		for mode in alone preloaded sampled wrapper uprobes heaptrack perf site; do
			case $mode in
			alone) wall "$@" ;;
			preloaded) wall env LD_PRELOAD="$sampler" "$@" ;;
			sampled) wall "$b/memsight" record -q -e malloc --sample-bytes 512K -o ms.trace -- "$@" ;;
			wrapper) wall "$b/memsight" record -q -e malloc -o ms.trace -- "$@" ;;
			uprobes) wall "$b/memsight" record -q -e malloc --malloc-via uprobes -o ms.trace -- "$@" ;;
			heaptrack) wall heaptrack -o ht "$@"; rm -f ht* ;;
			perf) wall perf record -q $benchlibc_events -o perf.data -- "$@" ;;
			site) wall perf record -q $site_events -o perf.data -- env LD_PRELOAD="$sampler" MEMSIGHT_SAMPLE_BYTES=0 "$@" ;;
			esac
			own "$mark" >>"$name.$mode.own"
			cat w.time >>"$name.$mode.wall"
			[ "$mode" = wrapper ] && "$b/memsight" info ms.trace | sed -n 's/^samples: *//p' >"$name.events"
		done
	done
}

# A mode's line label; $2 names the allocator perf's uprobes are on.
mode_label() {
	case $1 in
	alone) echo "alone" ;;
	preloaded) echo "wrapper preloaded, nothing recording" ;;
	sampled) echo "memsight --sample-bytes 512K" ;;
	wrapper) echo "memsight -e malloc (wrapper, every call)" ;;
	uprobes) echo "memsight -e malloc --malloc-via uprobes" ;;
	heaptrack) echo "heaptrack" ;;
	perf) echo "perf record, $2 uprobes, no stacks" ;;
	site) echo "perf record, the wrapper's sites, no stacks" ;;
	esac
}

report() {
	name=$1 title=$2
	a=$(median <"$name.alone.own") aw=$(median <"$name.alone.wall") ev=$(cat "$name.events")
	printf '\n%s, median of %s runs (%s reports through the wrapper)\n' "$title" "$RUNS" "$ev"
	printf '%-44s %10s %9s %9s %9s\n' "" "own ms" "ratio" "wall s" "ratio"
	for mode in alone preloaded sampled wrapper uprobes heaptrack perf site; do
		o=$(median <"$name.$mode.own") ww=$(median <"$name.$mode.wall")
		l=$(mode_label $mode libc)
		awk -v l="$l" -v o="${o:-0}" -v a="${a:-0}" -v w="$ww" -v aw="$aw" 'BEGIN {
			printf "%-44s %10.1f %8.2fx %9.2f %8.2fx\n", l, o, (a > 0 ? o / a : 0), w, (aw > 0 ? w / aw : 0) }'
	done
	# Only churn's own time holds every report: the others report also
	# in their start-up, which their own times leave out.
	[ "$name" = churn ] && awk -v w="$(median <"$name.wrapper.own")" -v p="$(median <"$name.preloaded.own")" \
	    -v s="$(median <"$name.site.own")" -v ev="$ev" 'BEGIN {
		if (ev > 0) printf "per report: %.2f us through memsight (stack dump included), %.2f us as a bare uprobe on the site\n",
			1000 * (w - p) / ev, 1000 * (s - p) / ev }'
}

# WORKLOADS picks some: churn python node redis (default all).
WORKLOADS=${WORKLOADS:-churn python node redis}
want() { case " $WORKLOADS " in *" $1 "*) return 0 ;; esac; return 1; }

if want churn; then
	workload churn alloc_zoo "$zoo" churn "$N"
	report churn "alloc_zoo churn $N (malloc/calloc/realloc/free, nothing else)"
fi

# What the wrapper costs with nothing recording, against the floor of any
# preloaded wrapper: one whose malloc, free, calloc and realloc are each a
# jump to glibc's. churn's own time at 10 times N is a few tens of ms, so
# these are medians of the ratios of runs taken in turn (IDLE_PAIRS each).
IDLE_PAIRS=${IDLE_PAIRS:-21}
if want churn && cat >bare.c <<'EOF' && cc -O2 -fPIC -shared -o bare.so bare.c; then
#include <stddef.h>
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t k, size_t n) { return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
EOF
	: >idle.wrapper
	: >idle.bare
	for i in $(seq "$IDLE_PAIRS"); do
		"$zoo" churn $((N * 10)) >out 2>&1
		a=$(own alloc_zoo)
		env LD_PRELOAD="$sampler" "$zoo" churn $((N * 10)) >out 2>&1
		awk -v a="$a" -v b="$(own alloc_zoo)" 'BEGIN { if (a > 0) print b / a }' >>idle.wrapper
		env LD_PRELOAD="$PWD/bare.so" "$zoo" churn $((N * 10)) >out 2>&1
		awk -v a="$a" -v b="$(own alloc_zoo)" 'BEGIN { if (a > 0) print b / a }' >>idle.bare
	done
	printf '\nalloc_zoo churn %s, nothing recording, median of %s ratios to a run alone just before\n' $((N * 10)) "$IDLE_PAIRS"
	printf '%-44s %8.3fx\n' "memsight's wrapper preloaded" "$(median <idle.wrapper)"
	printf '%-44s %8.3fx\n' "a bare interposer (one jump a call)" "$(median <idle.bare)"
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
# throughput is redis-benchmark's.
if want redis && command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	rb() {
		"$@" --port 6390 --save "" --appendonly no >redis.out 2>&1 &
		for i in $(seq 50); do redis-cli -p 6390 ping >/dev/null 2>&1 && break; sleep 0.1; done
		redis-benchmark -p 6390 -q -n 50000 -t set,get -d 64 2>/dev/null |
			awk -F'[: ]+' '/requests per second/ { for (i = 1; i <= NF; i++) if ($i == "requests") { s += $(i - 1); n++ } }
				END { printf "%.0f\n", n ? s / n : 0 }'
		redis-cli -p 6390 shutdown nosave >/dev/null 2>&1
		wait
		sleep "$GAP"
	}
	for i in $(seq "$RUNS"); do
		rb redis-server >>redis.alone
		rb env LD_PRELOAD="$sampler" redis-server >>redis.preloaded
		rb "$b/memsight" record -q -e malloc --sample-bytes 512K -o ms.trace -- redis-server >>redis.sampled
		rb "$b/memsight" record -q -e malloc -o ms.trace -- redis-server >>redis.wrapper
		rb "$b/memsight" record -q -e malloc --malloc-via uprobes -o ms.trace -- redis-server >>redis.uprobes
		rb heaptrack -o ht redis-server >>redis.heaptrack
		rm -f ht*
		rb perf record -q $benchje_events -o perf.data -- redis-server >>redis.perf
	done
	a=$(median <redis.alone)
	printf '\nredis-server (jemalloc) under redis-benchmark (set, get; 64 bytes), median of %s runs\n' "$RUNS"
	for mode in alone preloaded sampled wrapper uprobes heaptrack perf; do
		l=$(mode_label $mode jemalloc)
		awk -v l="$l" -v r="$(median <redis.$mode)" -v a="$a" 'BEGIN {
			printf "%-44s %10d req/s %8.2fx slower\n", l, r, (r > 0 ? a / r : 0) }'
	done
fi
