/*
 * samples/pipe_hold.c: holds N pipes open, then closes them, so the
 * kernel memory behind each pipe is allocated, held, and freed.
 *
 * usage: pipe_hold [N [HOLD_MS [AFTER_MS]]]   (default 64 pipes, 0 ms, 0 ms)
 * Prints: "pipe_hold: N pipes open" when all are open, holds them HOLD_MS,
 * then "pipe_hold: N pipes closed", and waits AFTER_MS before exiting (the
 * kernel frees some of a pipe's memory after an RCU grace period). Pipes
 * are made by open_pipes(), closed by close_pipes().
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void open_pipes(int (*fds)[2], int n)
{
	for (int i = 0; i < n; i++)
		if (pipe(fds[i]))
			exit(1);
}

void close_pipes(int (*fds)[2], int n)
{
	for (int i = 0; i < n; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	int hold_ms = argc > 2 ? atoi(argv[2]) : 0, after_ms = argc > 3 ? atoi(argv[3]) : 0;
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
	struct timespec after = { after_ms / 1000, (after_ms % 1000) * 1000000L };
	int (*fds)[2] = calloc(n, sizeof(*fds));

	if (!fds)
		return 1;
	open_pipes(fds, n);
	printf("pipe_hold: %d pipes open\n", n);
	fflush(stdout);
	nanosleep(&ts, NULL);
	close_pipes(fds, n);
	printf("pipe_hold: %d pipes closed\n", n);
	fflush(stdout);
	nanosleep(&after, NULL);
	free(fds);
	return 0;
}
