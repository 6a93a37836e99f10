// SPDX-License-Identifier: GPL-2.0
/*
 * Map under injected allocation failures: make the N-th fault-injection point
 * (page or slab allocation) of one IOMMU_IOAS_MAP fail, for N = 1, 2, ...,
 * until a map runs without reaching the N-th point. The map covers SIZE_MB of
 * 4 KiB pages, so it needs several leaf tables.
 *
 * usage: fault-map /dev/vfio/devices/vfioN SIZE_MB MAX_N
 *
 * Needs CONFIG_FAULT_INJECTION (per-task /proc/thread-self/fail-nth), with
 * fail_page_alloc and failslab set to fail order-0 and sleeping allocations.
 * After each try:
 *  - a map that succeeded must be mapped in full: unmapping the range removes
 *    exactly SIZE bytes;
 *  - a map that failed must fail with ENOMEM and leave nothing mapped:
 *    unmapping the range finds nothing (ENOENT).
 * Prints one summary line "tried N failed F succeeded S" and exits 1 on the
 * first inconsistency.
 */
#include <errno.h>
#include <fcntl.h>
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

#define IOVA_BASE (1UL << 32)

static void die(const char *what)
{
	fprintf(stderr, "fault-map: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void set_fail_nth(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(fd, buf, len, 0) != len)
		die("write fail-nth");
}

static unsigned int get_fail_nth(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) < 0)
		die("read fail-nth");
	return strtoul(buf, NULL, 10);
}

int main(int argc, char **argv)
{
	struct iommufd_dev d;
	unsigned long size, n, max_n, failed = 0, succeeded = 0;
	int nth;
	char *buf;

	if (argc != 4) {
		fprintf(stderr, "usage: %s /dev/vfio/devices/vfioN SIZE_MB(1..1024) MAX_N\n",
			argv[0]);
		return 2;
	}
	size = strtoul(argv[2], NULL, 0) << 20;
	max_n = strtoul(argv[3], NULL, 0);
	if (size == 0 || size > (1UL << 30) || max_n == 0) {
		fprintf(stderr, "usage: %s /dev/vfio/devices/vfioN SIZE_MB(1..1024) MAX_N\n",
			argv[0]);
		return 2;
	}
	iommufd_dev_open(&d, argv[1], 1);
	buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap");
	nth = open("/proc/thread-self/fail-nth", O_RDWR);
	if (nth < 0)
		die("open /proc/thread-self/fail-nth (CONFIG_FAULT_INJECTION?)");

	for (n = 1; n <= max_n; n++) {
		__u64 unmapped = 0;
		int ret, reached;

		set_fail_nth(nth, n);
		ret = iommufd_map(d.iommufd, d.ioas_id, buf, IOVA_BASE, size);
		/* fail-nth counts down to 0 when the N-th point fails. */
		reached = get_fail_nth(nth) == 0;
		set_fail_nth(nth, 0);

		if (ret == 0) {
			succeeded++;
			ret = iommufd_unmap(d.iommufd, d.ioas_id, IOVA_BASE, size, &unmapped);
			if (ret || unmapped != size) {
				fprintf(stderr, "fault-map: n=%lu: map succeeded, unmap removed %llu of %lu bytes (%s)\n",
					n, (unsigned long long)unmapped, size, strerror(-ret));
				return 1;
			}
		} else {
			failed++;
			if (ret != -ENOMEM) {
				fprintf(stderr, "fault-map: n=%lu: map failed with %s, not ENOMEM\n",
					n, strerror(-ret));
				return 1;
			}
			if (iommufd_unmap(d.iommufd, d.ioas_id, IOVA_BASE, size, &unmapped) != -ENOENT) {
				fprintf(stderr, "fault-map: n=%lu: failed map left %llu bytes mapped\n",
					n, (unsigned long long)unmapped);
				return 1;
			}
		}
		if (!reached)
			break;
	}
	printf("tried %lu failed %lu succeeded %lu%s\n", n > max_n ? max_n : n, failed,
	       succeeded, n > max_n ? " (stopped at MAX_N)" : "");
	close(nth);
	close(d.dev);
	close(d.iommufd);
	munmap(buf, size);
	return 0;
}
