/*
 * samples/rss_grow.c: grows its resident set, then reports it from /proc
 * and holds it, for the RSS-over-time chart.
 *
 * usage: rss_grow [ANON_MIB [WAIT_MS [HOLD_MS [early]]]]   (default 16, 300, 3000)
 * Waits WAIT_MS (so a recorder can attach with -p), writes ANON_MIB MiB of
 * fresh anonymous memory page by page (mapped before the wait with
 * "early", so that its mapping and its faults are far apart in a
 * trace), then prints its pid and RssAnon,
 * RssFile and RssShmem in bytes as /proc/self/status gives them, and
 * sleeps HOLD_MS with all of it still mapped. The line is printed twice:
 * printing the first faults in libc's stdio pages, so the second (the
 * ground truth) is read when nothing is left to fault in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static long status_kib(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 16;
	long wait_ms = argc > 2 ? atol(argv[2]) : 300, hold_ms = argc > 3 ? atol(argv[3]) : 3000;
	size_t len = (size_t)mib << 20;
	int early = argc > 4 && !strcmp(argv[4], "early");
	char *p = MAP_FAILED;

	if (early)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	sleep_ms(wait_ms);
	if (!early)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	for (int i = 0; i < 2; i++) {
		printf("rss_grow: pid %d anon %ld file %ld shmem %ld\n", (int)getpid(), status_kib("RssAnon:") * 1024,
		       status_kib("RssFile:") * 1024, status_kib("RssShmem:") * 1024);
		fflush(stdout);
	}
	sleep_ms(hold_ms);
	return 0;
}
