// SPDX-License-Identifier: GPL-2.0
/*
 * Put the guest under memory pressure: allocate and touch anonymous memory,
 * 1 MiB at a time, until MemFree in /proc/meminfo drops below FREE_MB, so
 * that kswapd and direct reclaim run the shrinkers. Holds the memory until a
 * line arrives on stdin.
 *
 * usage: mem-hog FREE_MB
 *
 * Prints "held N MiB, MemFree M MiB", waits, then exits (freeing it all).
 * Stops early, without failing, if an allocation fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK (1UL << 20)

static long meminfo_kb(const char *key)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':')
			kb = strtol(line + strlen(key) + 1, NULL, 10);
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	long free_mb, held = 0;
	char buf[16];

	free_mb = argc == 2 ? strtol(argv[1], NULL, 0) : 0;
	if (free_mb <= 0) {
		fprintf(stderr, "usage: %s FREE_MB\n", argv[0]);
		return 2;
	}
	while (meminfo_kb("MemFree") / 1024 > free_mb) {
		char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			break;
		memset(p, 0x5a, CHUNK);
		held++;
	}
	printf("held %ld MiB, MemFree %ld MiB\n", held, meminfo_kb("MemFree") / 1024);
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		return 1;
	return 0;
}
