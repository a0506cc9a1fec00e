/*
 * samples/shm_cycle.c: System V shared memory from creation to removal,
 * plus one call that fails, as shmsnoop would see it.
 *
 * usage: shm_cycle [BYTES]   (default 65536)
 * Prints one line per call with its arguments and result, in the order
 * made, as memsight shm names them: shmget, shmat, shmdt, shmctl IPC_RMID, and shmat of the removed id
 * (which fails with EINVAL: -22).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 65536;
	int flags = IPC_CREAT | 0600;
	int id = shmget(IPC_PRIVATE, size, flags), r;
	char *p;

	printf("shmget key=0x0 size=%zu shmflg=0x%x ret=%d\n", size, flags, id);
	if (id < 0)
		return 1;
	p = shmat(id, NULL, 0);
	printf("shmat shmid=%d shmaddr=0x0 shmflg=0x0 ret=0x%lx\n", id, (unsigned long)p);
	if (p == (void *)-1)
		return 1;
	memset(p, 1, size);
	r = shmdt(p);
	printf("shmdt shmaddr=0x%lx ret=%d\n", (unsigned long)p, r);
	r = shmctl(id, IPC_RMID, NULL);
	printf("shmctl shmid=%d cmd=IPC_RMID buf=0x0 ret=%d\n", id, r);
	p = shmat(id, NULL, 0);
	printf("shmat shmid=%d shmaddr=0x0 shmflg=0x0 ret=%ld\n", id,
	       p == (void *)-1 ? -(long)errno : (long)p);
	return 0;
}
