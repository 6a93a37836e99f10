// SPDX-License-Identifier: GPL-2.0
/*
 * Load a module with the N-th fault-injection point of the load failing.
 *
 * usage: fail-nth-insmod N MODULE.ko [PARAMS]
 *
 * Writes N to /proc/thread-self/fail-nth, calls finit_module() in the same
 * task, then reads fail-nth back. Prints "loaded" or "failed <errno name>",
 * then "reached" if the N-th point was reached (fail-nth counted down to 0)
 * or "not-reached". Exits 0 unless something other than the load failed.
 *
 * Only points that pass the fail_page_alloc and failslab filters count, so a
 * stack filter set to the module's own code limits the points to its init.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char buf[16] = "";
	int nth, ko, len, ret, err;

	if (argc < 3 || argc > 4 || atoi(argv[1]) < 1) {
		fprintf(stderr, "usage: %s N(>=1) MODULE.ko [PARAMS]\n", argv[0]);
		return 2;
	}
	ko = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (ko < 0) {
		perror(argv[2]);
		return 1;
	}
	nth = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth < 0) {
		perror("/proc/thread-self/fail-nth");
		return 1;
	}
	len = strlen(argv[1]);
	if (write(nth, argv[1], len) != len) {
		perror("write fail-nth");
		return 1;
	}
	ret = syscall(SYS_finit_module, ko, argc == 4 ? argv[3] : "", 0);
	err = errno;
	if (pread(nth, buf, sizeof(buf) - 1, 0) < 0) {
		perror("read fail-nth");
		return 1;
	}
	if (ret)
		printf("failed %s\n", strerrorname_np(err) ?: "?");
	else
		printf("loaded\n");
	printf("%s\n", atoi(buf) == 0 ? "reached" : "not-reached");
	return 0;
}
