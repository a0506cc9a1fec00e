#!/bin/sh
# tests/bench/bench-jit.sh: what naming JIT-compiled code costs.
#   The recorder: a process whose perf map lists 20,000 compiled methods
#   (about the size a big JVM service writes), recorded with -p for a
#   second, with and without the map there: the time the recording takes
#   to stop, and the bytes carried.
#   The analyzer: 1,000,000 page faults taken inside code a program
#   compiled, named through its perf map, by `memsight folded` and by
#   `perf script` on perf's recording of the same run.
# Prints figures and ratios. Asserts nothing.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${BUILD:-$top/build}
. "$top/tests/bench/bench-lib.sh"
RUNS=${RUNS:-3}
FAULTS=${FAULTS:-1000000}
bench_workdir

# A program that compiles one stub and runs FAULTS page faults through it:
# the stub calls touch(), which faults in a page, gives it back, again.
cat >jitloop.c <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
static const unsigned char stub[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xf8, 0x48,
				      0x89, 0xf7, 0xff, 0xd0, 0x5d, 0xc3 };
static char *page;
__attribute__((noinline)) void touch(long n)
{
	for (long i = 0; i < n; i++) {
		page[0] = 1;
		madvise(page, 4096, MADV_DONTNEED);
	}
}
int main(int argc, char **argv)
{
	long n = atol(argv[1]);
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];
	FILE *f;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(code, stub, sizeof(stub));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	fprintf(f, "%lx %zx jit_loop\n", (unsigned long)code, sizeof(stub));
	fclose(f);
	((void (*)(void (*)(long), long))code)(touch, n);
	return 0;
}
EOF
cc -O1 -g -fno-omit-frame-pointer -o jitloop jitloop.c || exit 1

# The recorder.
sleep 30 &
holder=$!
map=/tmp/perf-$holder.map
: >ms.with
: >ms.without
for i in $(seq "$RUNS"); do
	awk 'BEGIN { for (i = 0; i < 20000; i++) printf "%x %x Lcom/example/Service%d;::handle%d\n", 0x7f0000000000 + i * 4096, 2048, i % 400, i }' >"$map"
	/usr/bin/time -f %e -o t "$b/memsight" record -q -e faults -p $holder -d 1 -o ms.trace && cat t >>ms.with
	bytes=$(wc -c <"$map")
	rm -f "$map"
	/usr/bin/time -f %e -o t "$b/memsight" record -q -e faults -p $holder -d 1 -o ms.trace && cat t >>ms.without
done
kill $holder 2>/dev/null
with=$(median <ms.with)
without=$(median <ms.without)
printf 'recorder, -p -d 1 of a process whose perf map lists 20,000 methods (%s bytes), median of %s runs\n' "$bytes" "$RUNS"
printf '  with the map:    %6.3f s\n  without it:      %6.3f s\n  copying it:      %6.3f s\n' "$with" "$without" \
	"$(echo "$with $without" | awk '{ print $1 - $2 }')"

# The analyzer.
"$b/memsight" record -q -g fp -m 8192 -e faults -o jit.trace -- ./jitloop "$FAULTS"
perf record -q -g -m 8192 -e page-faults -c 1 -o perf.data -- ./jitloop "$FAULTS" 2>/dev/null
samples=$("$b/memsight" info jit.trace | sed -n 's/^samples: *//p')
named=$("$b/memsight" folded jit.trace 2>/dev/null | awk '/;jit_loop;touch / { n += $NF } END { print n + 0 }')
: >an.ms
: >an.perf
for i in $(seq "$RUNS"); do
	measure "$b/memsight" folded jit.trace | cut -d' ' -f1 >>an.ms
	measure perf script -i perf.data | cut -d' ' -f1 >>an.perf
done
ms=$(median <an.ms)
pf=$(median <an.perf)
printf '\nanalyzer, %s faults in JIT code (%s samples, %s named jit_loop), median of %s runs\n' "$FAULTS" "$samples" "$named" "$RUNS"
printf '  memsight folded  %6.2f s  (%.0f ns a JIT frame)\n  perf script      %6.2f s  %.2fx memsight\n' "$ms" \
	"$(echo "$ms $named" | awk '{ print $2 ? $1 * 1e9 / $2 : 0 }')" "$pf" "$(echo "$pf $ms" | awk '{ print $2 ? $1 / $2 : 0 }')"
# The programs' maps stay for perf script, which reads them where the
# runtime wrote them; they go now.
grep -l " jit_loop$" /tmp/perf-*.map 2>/dev/null | xargs rm -f
