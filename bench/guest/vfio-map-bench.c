// SPDX-License-Identifier: GPL-2.0
/*
 * Map/unmap benchmark from userspace on a vfio-pci device, through iommufd
 * (IOMMU_IOAS_MAP/UNMAP) or the VFIO type1 container (VFIO_IOMMU_MAP_DMA /
 * UNMAP_DMA). The device is attached, so every unmap also pays the IOTLB
 * invalidation.
 *
 * usage: vfio-map-bench iommufd|type1 BDF dense|sparse|huge|churn COUNT [ROUNDS]
 *
 *   dense   COUNT 4 KiB mappings side by side, one ioctl each
 *   sparse  COUNT 4 KiB mappings, one every 2 MiB: each needs a new leaf table
 *   huge    COUNT 2 MiB mappings of one 2 MiB hugetlb page
 *   churn   ROUNDS times the sparse map of COUNT pages and its unmap, which
 *           frees the leaf tables that the next round allocates again
 *
 * Unmapping is one ioctl per mapping too. Prints "name value" lines: the
 * time spent in map and in unmap ioctls, and per ioctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/iommufd.h>
#include <linux/vfio.h>

#include "iommufd-dev.h"

#define SZ_4K (1UL << 12)
#define SZ_2M (1UL << 21)
#define IOVA_BASE (1UL << 32)
#define MAX_COUNT (1UL << 20)

static int use_iommufd, iommufd, container;
static __u32 ioas_id;

static void die(const char *what)
{
	fprintf(stderr, "vfio-map-bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void setup_iommufd(const char *bdf)
{
	struct iommufd_dev d;
	char path[256], name[64];
	FILE *f;

	/* /sys/bus/pci/devices/BDF/vfio-dev/vfioN -> /dev/vfio/devices/vfioN */
	snprintf(path, sizeof(path), "ls /sys/bus/pci/devices/%s/vfio-dev", bdf);
	f = popen(path, "r");
	if (!f || !fgets(name, sizeof(name), f))
		die("no vfio-dev for the device (bound to vfio-pci?)");
	pclose(f);
	name[strcspn(name, "\n")] = '\0';
	snprintf(path, sizeof(path), "/dev/vfio/devices/%s", name);

	iommufd_dev_open(&d, path, 1);
	iommufd = d.iommufd;
	ioas_id = d.ioas_id;
}

static void setup_type1(const char *bdf)
{
	struct vfio_group_status status = { .argsz = sizeof(status) };
	char path[256], link[256];
	ssize_t len;
	int group;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", bdf);
	len = readlink(path, link, sizeof(link) - 1);
	if (len < 0)
		die(path);
	link[len] = '\0';
	snprintf(path, sizeof(path), "/dev/vfio/%s", strrchr(link, '/') + 1);

	container = open("/dev/vfio/vfio", O_RDWR);
	if (container < 0)
		die("open /dev/vfio/vfio");
	group = open(path, O_RDWR);
	if (group < 0)
		die(path);
	if (ioctl(group, VFIO_GROUP_GET_STATUS, &status))
		die("VFIO_GROUP_GET_STATUS");
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		errno = EBUSY;
		die("group not viable (all devices bound to vfio-pci?)");
	}
	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container))
		die("VFIO_GROUP_SET_CONTAINER");
	if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		die("VFIO_SET_IOMMU");
}

static void map_one(void *va, uint64_t iova, uint64_t len)
{
	if (use_iommufd) {
		errno = -iommufd_map(iommufd, ioas_id, va, iova, len);
		if (errno)
			die("IOMMU_IOAS_MAP");
	} else {
		struct vfio_iommu_type1_dma_map map = {
			.argsz = sizeof(map),
			.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
			.vaddr = (uintptr_t)va,
			.iova = iova,
			.size = len,
		};

		if (ioctl(container, VFIO_IOMMU_MAP_DMA, &map))
			die("VFIO_IOMMU_MAP_DMA");
	}
}

static void unmap_one(uint64_t iova, uint64_t len)
{
	if (use_iommufd) {
		errno = -iommufd_unmap(iommufd, ioas_id, iova, len, NULL);
		if (errno)
			die("IOMMU_IOAS_UNMAP");
	} else {
		struct vfio_iommu_type1_dma_unmap unmap = {
			.argsz = sizeof(unmap),
			.iova = iova,
			.size = len,
		};

		if (ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap))
			die("VFIO_IOMMU_UNMAP_DMA");
	}
}

int main(int argc, char **argv)
{
	uint64_t map_ns = 0, unmap_ns = 0, t, stride, len;
	unsigned long count, rounds = 1, i, r;
	const char *pattern;
	char *buf;

	count = argc >= 5 ? strtoul(argv[4], NULL, 0) : 0;
	if (argc == 6)
		rounds = strtoul(argv[5], NULL, 0);
	if (argc < 5 || argc > 6 || count == 0 || count > MAX_COUNT || rounds == 0 ||
	    (strcmp(argv[1], "iommufd") && strcmp(argv[1], "type1"))) {
		fprintf(stderr,
			"usage: %s iommufd|type1 BDF dense|sparse|huge|churn COUNT(1..%lu) [ROUNDS]\n",
			argv[0], MAX_COUNT);
		return 2;
	}
	pattern = argv[3];
	if (strcmp(pattern, "churn"))
		rounds = 1;
	use_iommufd = !strcmp(argv[1], "iommufd");

	if (!strcmp(pattern, "huge")) {
		len = SZ_2M;
		stride = SZ_2M;
		buf = mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	} else if (!strcmp(pattern, "dense") || !strcmp(pattern, "sparse") ||
		   !strcmp(pattern, "churn")) {
		len = SZ_4K;
		stride = strcmp(pattern, "dense") ? SZ_2M : SZ_4K;
		buf = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	} else {
		fprintf(stderr, "vfio-map-bench: unknown pattern '%s'\n", pattern);
		return 2;
	}
	if (buf == MAP_FAILED)
		die("mmap");

	if (use_iommufd)
		setup_iommufd(argv[2]);
	else
		setup_type1(argv[2]);

	/* Every mapping maps the same page: what is measured is the IOMMU side. */
	for (r = 0; r < rounds; r++) {
		t = now_ns();
		for (i = 0; i < count; i++)
			map_one(buf, IOVA_BASE + i * stride, len);
		map_ns += now_ns() - t;
		t = now_ns();
		for (i = 0; i < count; i++)
			unmap_one(IOVA_BASE + i * stride, len);
		unmap_ns += now_ns() - t;
	}
	printf("op %s\npattern %s\ncount %lu\nrounds %lu\nmap_ns %llu\nunmap_ns %llu\n"
	       "ns_per_map %llu\nns_per_unmap %llu\n",
	       argv[1], pattern, count, rounds, (unsigned long long)map_ns,
	       (unsigned long long)unmap_ns,
	       (unsigned long long)(map_ns / (count * rounds)),
	       (unsigned long long)(unmap_ns / (count * rounds)));
	return 0;
}
