#!/bin/sh
# tests/bench/bench-default.sh: what the default call graph costs, in one
# run, side by side. Prints figures and ratios; asserts nothing (machines
# are noisy).
#
#   XOR encoder (frame-pointer build), faults+brk+mmap: the workload's own
#     elapsed time alone, under memsight's default (dwarf), the default
#     without deep-stacks (--deep-freq 0), memsight -g fp, perf -g and perf
#     --call-graph dwarf; bytes per event, losses and the share of fault
#     stacks that reach main
#   malloc churn (alloc_zoo): alone, memsight -e malloc default, -g fp and
#     -g dwarf,4096, perf on the same uprobes without stacks and with -g
#   fixed cost: the wall time of recording `true`, memsight and perf
#
# Each round runs the tools in a turning order; slowdowns are medians of
# the rounds.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=$top/build
RUNS=${RUNS:-6}
MB=${MB:-64}
N=${N:-5000}
w=$(mktemp -d)
ue=/sys/kernel/tracing/uprobe_events
cleanup() {
	for e in malloc malloc_ret calloc calloc_ret realloc realloc_ret free; do echo "-:benchdef/$e" >>$ue; done 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT
cd "$w" || exit 1
MEMSIGHT_CACHE_DIR=$w/cache
export MEMSIGHT_CACHE_DIR
command -v perf >/dev/null || { echo "perf is not installed: make bench-deps"; exit 1; }
. "$top/tests/bench/bench-lib.sh"

xor=$b/samples/xor_encoder
zoo=$b/samples/alloc_zoo
head -c $((MB << 20)) /dev/urandom >in.bin
xel() { sed -n 's/^xor_encoder: elapsed \([0-9.]*\) ms$/\1/p' e; }
zel() { sed -n 's/^alloc_zoo: elapsed \([0-9.]*\) ms$/\1/p' e; }
# bytes per event of the last recording of a tool
ms_bpe() { "$b/memsight" info "$1" | awk -v s="$(stat -c %s "$1")" '/^samples:/ { print s / $2 }'; }
pf_bpe() { perf script -i "$1" -F event 2>/dev/null | wc -l | awk -v s="$(stat -c %s "$1")" '{ print s / $1 }'; }

pev=syscalls:sys_enter_brk,syscalls:sys_enter_mmap,page-faults
x_alone() { "$xor" in.bin >/dev/null 2>e; }
x_msdef() { "$b/memsight" record -q -o x-def.trace -- "$xor" in.bin >/dev/null 2>e; }
x_ms0() { "$b/memsight" record -q --deep-freq 0 -o x-0.trace -- "$xor" in.bin >/dev/null 2>e; }
x_msfp() { "$b/memsight" record -q -g fp -o x-fp.trace -- "$xor" in.bin >/dev/null 2>e; }
x_pfg() { perf record -q -e $pev -c 1 -g -o x-pfg.data -- "$xor" in.bin >/dev/null 2>e; }
x_pfdw() { perf record -q -e $pev -c 1 --call-graph dwarf -o x-pfdw.data -- "$xor" in.bin >/dev/null 2>e; }

libc=$(ldd "$zoo" | sed -n 's/.*libc.so.6 => \([^ ]*\).*/\1/p')
off() { nm -D --defined-only "$libc" | awk -v f="$1" '$3 == f || $3 ~ "^"f"@@" { print "0x" $1; exit }'; }
{
	echo "p:benchdef/malloc $libc:$(off malloc) size=%di:u64"
	echo "r:benchdef/malloc_ret $libc:$(off malloc) ret=\$retval:u64"
	echo "p:benchdef/calloc $libc:$(off calloc) nmemb=%di:u64 size=%si:u64"
	echo "r:benchdef/calloc_ret $libc:$(off calloc) ret=\$retval:u64"
	echo "p:benchdef/realloc $libc:$(off realloc) ptr=%di:u64 size=%si:u64"
	echo "r:benchdef/realloc_ret $libc:$(off realloc) ret=\$retval:u64"
	echo "p:benchdef/free $libc:$(off free) ptr=%di:u64"
} >>$ue || { echo "cannot define uprobes in $ue"; exit 1; }
z_alone() { "$zoo" churn $N >/dev/null 2>e; }
z_msdef() { "$b/memsight" record -q -e malloc -o z-def.trace -- "$zoo" churn $N >/dev/null 2>e; }
z_msfp() { "$b/memsight" record -q -e malloc -g fp -o z-fp.trace -- "$zoo" churn $N >/dev/null 2>e; }
z_ms4k() { "$b/memsight" record -q -e malloc -g dwarf,4096 -o z-4k.trace -- "$zoo" churn $N >/dev/null 2>e; }
z_pf() { perf record -q -e 'benchdef:*' -o z-pf.data -- "$zoo" churn $N >/dev/null 2>e; }
z_pfg() { perf record -q -e 'benchdef:*' -g -o z-pfg.data -- "$zoo" churn $N >/dev/null 2>e; }

xtools="alone msdef ms0 msfp pfg pfdw"
ztools="alone msdef msfp ms4k pf pfg"
for t in $xtools; do : >x.$t; done
for t in $ztools; do : >z.$t; done
for i in $(seq "$RUNS"); do
	set -- $xtools
	k=$((i % $#)); while [ $k -gt 0 ]; do x=$1; shift; set -- "$@" "$x"; k=$((k - 1)); done
	for t in "$@"; do sync; x_$t && xel >>x.$t; done
	set -- $ztools
	k=$((i % $#)); while [ $k -gt 0 ]; do x=$1; shift; set -- "$@" "$x"; k=$((k - 1)); done
	for t in "$@"; do z_$t && zel >>z.$t; done
done

# The fixed cost: recording `true`, ten times each in turns with a pause
# between (spaced), then ten times each back to back. Each time, whether a
# process of the recorder's outlived its return; and the bytes of a trace.
fixed() { # TOOL MODE: one recording of true, its wall time added to f.TOOL.MODE
	s=$(date +%s.%N)
	case $1 in
	ms) "$b/memsight" record -q -o f.trace -- true ;;
	msm) "$b/memsight" record -q -e malloc -o f.trace -- true ;;
	pf) perf record -q -e $pev -c 1 -g -o f.data -- true 2>/dev/null ;;
	esac
	e=$(date +%s.%N)
	awk -v s="$s" -v e="$e" 'BEGIN { print e - s }' >>f.$1.$2
	pgrep -x memsight-record >/dev/null && echo "$1" >>f.left
	return 0
}
: >f.left
for t in ms msm pf; do : >f.$t.spaced; : >f.$t.b2b; done
for i in $(seq 10); do
	for t in ms msm pf; do fixed $t spaced; sleep 0.5; done
done
for t in ms msm pf; do
	for i in $(seq 10); do fixed $t b2b; done
done
"$b/memsight" record -q -o true.trace -- true
perf record -q -e $pev -c 1 -g -o true.data -- true 2>/dev/null

ratio() { paste "$1" "$2" | awk '{ print $1 / $2 }' | median; }
# The share of the XOR encoder's fault stacks that reach main.
ms_reach() {
	"$b/memsight" folded --no-kernel -e faults "$1" 2>/dev/null |
		awk '/^xor_encoder;/ { n += $NF; if (index($0, ";main;")) m += $NF } END { printf "%.1f", n ? 100 * m / n : 0 }'
}
ms_lost() { "$b/memsight" info "$1" | sed -n 's/^lost: *\([0-9]*\).*/\1/p'; }
printf 'XOR encoder (frame pointers), %d MiB, faults+brk+mmap, median of %d rounds\n\n' "$MB" "$RUNS"
printf '%-36s %12s %10s %10s %8s %8s\n' "" "elapsed ms" "slowdown" "bytes/ev" "lost" "reach%"
printf '%-36s %12.1f %9.2fx\n' "alone" "$(median <x.alone)" 1
printf '%-36s %12.1f %9.2fx %10.1f %8s %7s%%\n' "memsight (default: dwarf,8192)" "$(median <x.msdef)" "$(ratio x.msdef x.alone)" \
	"$(ms_bpe x-def.trace)" "$(ms_lost x-def.trace)" "$(ms_reach x-def.trace)"
printf '%-36s %12.1f %9.2fx %10.1f %8s %7s%%\n' "memsight --deep-freq 0" "$(median <x.ms0)" "$(ratio x.ms0 x.alone)" \
	"$(ms_bpe x-0.trace)" "$(ms_lost x-0.trace)" "$(ms_reach x-0.trace)"
printf '%-36s %12.1f %9.2fx %10.1f %8s %7s%%\n' "memsight -g fp" "$(median <x.msfp)" "$(ratio x.msfp x.alone)" \
	"$(ms_bpe x-fp.trace)" "$(ms_lost x-fp.trace)" "$(ms_reach x-fp.trace)"
printf '%-36s %12.1f %9.2fx %10.1f %8s\n' "perf record -g" "$(median <x.pfg)" "$(ratio x.pfg x.alone)" \
	"$(pf_bpe x-pfg.data)" "$(perf_lost x-pfg.data)"
printf '%-36s %12.1f %9.2fx %10.1f %8s\n' "perf record --call-graph dwarf" "$(median <x.pfdw)" "$(ratio x.pfdw x.alone)" \
	"$(pf_bpe x-pfdw.data)" "$(perf_lost x-pfdw.data)"
printf '\nratios: default/fp %.2f, default/--deep-freq 0 %.2f, default/perf -g %.2f, default/perf dwarf %.2f\n\n' \
	"$(ratio x.msdef x.msfp)" "$(ratio x.msdef x.ms0)" "$(ratio x.msdef x.pfg)" "$(ratio x.msdef x.pfdw)"

printf 'alloc_zoo churn %d (malloc family through uprobes), median of %d rounds\n\n' "$N" "$RUNS"
printf '%-44s %12s %10s\n' "" "elapsed ms" "slowdown"
printf '%-44s %12.1f %9.2fx\n' "alone" "$(median <z.alone)" 1
for t in msdef msfp ms4k pf pfg; do
	case $t in
	msdef) l="memsight -e malloc (default: dwarf,8192)" ;; msfp) l="memsight -e malloc -g fp" ;;
	ms4k) l="memsight -e malloc -g dwarf,4096" ;; pf) l="perf record, same uprobes, no stacks" ;;
	pfg) l="perf record -g, same uprobes" ;;
	esac
	printf '%-44s %12.1f %9.2fx\n' "$l" "$(median <z.$t)" "$(ratio z.$t z.alone)"
done
printf '\nratios against perf without stacks: default %.2f, fp %.2f, dwarf,4096 %.2f, perf -g %.2f\n\n' \
	"$(ratio z.msdef z.pf)" "$(ratio z.msfp z.pf)" "$(ratio z.ms4k z.pf)" "$(ratio z.pfg z.pf)"

printf 'fixed cost: recording `true`, median of 10 (s)     spaced  back to back  trace bytes\n'
printf '  memsight record (brk,mmap,faults)   %10.3f %13.3f %12d\n' "$(median <f.ms.spaced)" "$(median <f.ms.b2b)" \
	"$(stat -c %s true.trace)"
printf '  memsight record -e malloc           %10.3f %13.3f\n' "$(median <f.msm.spaced)" "$(median <f.msm.b2b)"
printf '  perf record (same events, -g)       %10.3f %13.3f %12d\n' "$(median <f.pf.spaced)" "$(median <f.pf.b2b)" \
	"$(stat -c %s true.data)"
printf '  recordings after which a memsight-record process was left: %d of 40\n' "$(wc -l <f.left)"
