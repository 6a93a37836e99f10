// SPDX-License-Identifier: GPL-2.0
/*
 * Attach a vfio-pci device to an iommufd IOAS, map a sparse range (one 4 KiB
 * page every 2 MiB, so every mapping needs a new leaf table) and unmap it.
 * Pauses at each step so that the caller can read counters:
 *
 *   iommufd-map /dev/vfio/devices/vfioN MAPPINGS [dense]
 *
 * "dense" maps the MAPPINGS pages back to back instead, in one map from a
 * 2 MiB aligned IOVA, and no huge page backs them: every 512 pages fill a
 * leaf table with 4 KiB entries, which the unmap then clears and frees.
 *
 * prints "mapped" after mapping and waits for a line on stdin, then unmaps,
 * prints "unmapped", waits again, and tears everything down.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/iommufd.h>
#include <linux/vfio.h>

#include "iommufd-dev.h"

#define SZ_4K (1UL << 12)
#define SZ_2M (1UL << 21)
#define IOVA_BASE (1UL << 32)

static void die(const char *what)
{
	fprintf(stderr, "iommufd-map: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void wait_line(const char *state)
{
	char buf[16];

	printf("%s\n", state);
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		exit(1);
}

int main(int argc, char **argv)
{
	struct iommufd_dev d;
	unsigned long i, n;
	bool dense;
	char *buf;

	if (argc < 3 || argc > 4 || (n = strtoul(argv[2], NULL, 0)) == 0 || n > 65536 ||
	    (argc == 4 && strcmp(argv[3], "dense"))) {
		fprintf(stderr, "usage: %s /dev/vfio/devices/vfioN MAPPINGS(1..65536) [dense]\n",
			argv[0]);
		return 2;
	}
	dense = argc == 4;
	iommufd_dev_open(&d, argv[1], 1);

	buf = mmap(NULL, n * SZ_4K, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	/*
	 * 4 KiB pages, so that the IOMMU maps 4 KiB entries. EINVAL: a kernel
	 * without transparent huge pages, which has none to turn off.
	 */
	if (madvise(buf, n * SZ_4K, MADV_NOHUGEPAGE) && errno != EINVAL)
		die("madvise");
	memset(buf, 1, n * SZ_4K);
	if (dense) {
		errno = -iommufd_map(d.iommufd, d.ioas_id, buf, IOVA_BASE, n * SZ_4K);
		if (errno)
			die("IOMMU_IOAS_MAP");
	}
	for (i = 0; !dense && i < n; i++) {
		errno = -iommufd_map(d.iommufd, d.ioas_id, buf + i * SZ_4K,
				     IOVA_BASE + i * SZ_2M, SZ_4K);
		if (errno)
			die("IOMMU_IOAS_MAP");
	}
	wait_line("mapped");

	errno = -iommufd_unmap(d.iommufd, d.ioas_id, IOVA_BASE, dense ? n * SZ_4K : n * SZ_2M,
			       NULL);
	if (errno)
		die("IOMMU_IOAS_UNMAP");
	wait_line("unmapped");

	close(d.dev);
	close(d.iommufd);
	munmap(buf, n * SZ_4K);
	return 0;
}
