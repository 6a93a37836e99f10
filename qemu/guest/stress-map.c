// SPDX-License-Identifier: GPL-2.0
/*
 * Concurrent map/unmap in several VT-d domains of one vfio-pci device.
 *
 * usage: stress-map /dev/vfio/devices/vfioN DOMAINS THREADS SECONDS
 *
 * Creates DOMAINS iommufd IOASes, each with its own hardware page table
 * (IOMMU_HWPT_ALLOC: a real VT-d paging domain for the device), and attaches
 * the device to the first. THREADS threads (thread t works in domain
 * t % DOMAINS) map and unmap random 4 KiB slots, spread one per 2 MiB so
 * that tables are allocated and freed all the time, until SECONDS pass:
 *  - even threads own disjoint slot ranges and record what they mapped;
 *  - odd threads share one range per domain with the other odd threads of
 *    that domain, so their maps and unmaps overlap and race (EEXIST, ENOENT
 *    and, for an unmap racing a map, EBUSY are expected there).
 *
 * Then it checks the result:
 *  - for every owned slot in every domain, unmapping succeeds exactly when the
 *    thread recorded the slot as mapped;
 *  - in the attached domain, before that, the device's live page table
 *    (debugfs domain_translation_struct) maps exactly the recorded slots of
 *    its owned ranges, each to the right page frame (/proc/self/pagemap);
 *  - the shared ranges are unmapped in full.
 * Prints "ops N maps M unmaps U overlap_conflicts C checked K" and exits 1 on
 * any mismatch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#define SLOTS 256		/* per range: 512 MiB of IOVA */
#define RANGE (SLOTS * SZ_2M)
#define IOVA_BASE (1UL << 32)
#define MAX_DOMAINS 16
#define MAX_THREADS 64

static int iommufd;
static __u32 ioas[MAX_DOMAINS];
static int nr_domains, nr_threads;
static char *page;		/* the one page every slot maps */
static volatile int stop;
static const char *bdf;

struct worker {
	pthread_t tid;
	int id;
	unsigned int seed;
	unsigned char mapped[SLOTS];	/* owned ranges only */
	unsigned long ops, maps, unmaps, conflicts, errors;
};

static struct worker workers[MAX_THREADS];

static void die(const char *what)
{
	fprintf(stderr, "stress-map: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Owned ranges come first, one per even thread; then one shared range per domain. */
static uint64_t range_base(int id)
{
	if (id % 2 == 0)
		return IOVA_BASE + (uint64_t)id * RANGE;
	return IOVA_BASE + (uint64_t)(MAX_THREADS + id % nr_domains) * RANGE;
}

static int do_map(__u32 ioas_id, uint64_t iova)
{
	return iommufd_map(iommufd, ioas_id, page, iova, SZ_4K);
}

static int do_unmap(__u32 ioas_id, uint64_t iova, uint64_t length)
{
	return iommufd_unmap(iommufd, ioas_id, iova, length, NULL);
}

static void shared_error(struct worker *w, const char *op, unsigned int slot, int ret)
{
	if (w->errors++ < 5)
		fprintf(stderr, "stress-map: thread %d (shared range) %s slot %u: %s\n", w->id, op,
			slot, strerror(-ret));
}

static void *work(void *arg)
{
	struct worker *w = arg;
	__u32 id = ioas[w->id % nr_domains];
	uint64_t base = range_base(w->id);
	int owned = w->id % 2 == 0;

	while (!stop) {
		unsigned int slot = rand_r(&w->seed) % SLOTS;
		uint64_t iova = base + slot * SZ_2M;
		int ret;

		w->ops++;
		if (owned) {
			if (w->mapped[slot]) {
				ret = do_unmap(id, iova, SZ_4K);
				if (!ret) {
					w->mapped[slot] = 0;
					w->unmaps++;
				}
			} else {
				ret = do_map(id, iova);
				if (!ret) {
					w->mapped[slot] = 1;
					w->maps++;
				}
			}
			if (ret) {
				fprintf(stderr, "stress-map: thread %d slot %u: %s\n", w->id, slot,
					strerror(-ret));
				w->errors++;
			}
		} else if (rand_r(&w->seed) & 1) {
			ret = do_map(id, iova);
			if (!ret)
				w->maps++;
			else if (ret == -EEXIST)
				w->conflicts++;
			else
				shared_error(w, "map", slot, ret);
		} else {
			/*
			 * iommufd answers EBUSY to an unmap that races a map of the
			 * same area ("Userspace should not race map/unmap's of the
			 * same area"): expected here, where threads race on purpose.
			 */
			ret = do_unmap(id, iova, SZ_4K);
			if (!ret)
				w->unmaps++;
			else if (ret == -ENOENT || ret == -EBUSY)
				w->conflicts++;
			else
				shared_error(w, "unmap", slot, ret);
		}
	}
	return NULL;
}

static uint64_t page_pfn(void)
{
	uint64_t entry;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0 || pread(fd, &entry, sizeof(entry),
			    (uintptr_t)page / SZ_4K * sizeof(entry)) != sizeof(entry))
		die("pagemap");
	close(fd);
	return entry & ((1ULL << 55) - 1);
}

/*
 * Compare the attached domain's live table with what the owning threads of
 * domain 0 recorded. Returns the number of mismatches.
 */
static int check_live_table(unsigned long *checked)
{
	static unsigned char seen[MAX_THREADS][SLOTS];
	char path[256], line[512];
	uint64_t pfn = page_pfn();
	int bad = 0, t, s;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/kernel/debug/iommu/intel/%s/domain_translation_struct", bdf);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long iova_pfn, e[5];
		uint64_t iova, leaf;
		int n;

		n = sscanf(line, "0x%llx |\t0x%llx\t0x%llx\t0x%llx\t0x%llx\t0x%llx",
			   &iova_pfn, &e[0], &e[1], &e[2], &e[3], &e[4]);
		if (n < 2)
			continue;
		iova = iova_pfn * SZ_4K;
		leaf = e[n - 2];
		for (t = 0; t < nr_threads; t += 2) {
			if (t % nr_domains || iova < range_base(t) || iova >= range_base(t) + RANGE)
				continue;
			s = (iova - range_base(t)) / SZ_2M;
			seen[t][s] = 1;
			if (!workers[t].mapped[s] || iova % SZ_2M ||
			    ((leaf & 0x000ffffffffff000ULL) >> 12) != pfn) {
				fprintf(stderr, "stress-map: live table: IOVA 0x%llx -> 0x%llx unexpected\n",
					(unsigned long long)iova, (unsigned long long)leaf);
				bad++;
			}
		}
	}
	fclose(f);
	for (t = 0; t < nr_threads; t += 2) {
		if (t % nr_domains)
			continue;
		for (s = 0; s < SLOTS; s++) {
			if (workers[t].mapped[s] && !seen[t][s]) {
				fprintf(stderr, "stress-map: live table lacks IOVA 0x%llx\n",
					(unsigned long long)(range_base(t) + s * SZ_2M));
				bad++;
			}
			*checked += workers[t].mapped[s];
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct iommufd_dev d;
	unsigned long ops = 0, maps = 0, unmaps = 0, conflicts = 0, errors = 0, checked = 0;
	int seconds, i, s, bad;

	if (argc == 5) {
		nr_domains = atoi(argv[2]);
		nr_threads = atoi(argv[3]);
		seconds = atoi(argv[4]);
	}
	if (argc != 5 || nr_domains < 1 || nr_domains > MAX_DOMAINS ||
	    nr_threads < 1 || nr_threads > MAX_THREADS || seconds < 0) {
		fprintf(stderr, "usage: %s /dev/vfio/devices/vfioN DOMAINS(1..%d) THREADS(1..%d) SECONDS\n",
			argv[0], MAX_DOMAINS, MAX_THREADS);
		return 2;
	}
	/* The BDF, for debugfs: /dev/vfio/devices/vfioN -> /sys/class/vfio-dev/vfioN/device */
	{
		static char link[256];
		char path[256];
		ssize_t len;

		snprintf(path, sizeof(path), "/sys/class/vfio-dev/%s/device", strrchr(argv[1], '/') + 1);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			die(path);
		link[len] = '\0';
		bdf = strrchr(link, '/') + 1;
	}

	page = mmap(NULL, SZ_4K, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (page == MAP_FAILED)
		die("mmap");
	iommufd_dev_open(&d, argv[1], 0);
	iommufd = d.iommufd;
	for (i = 0; i < nr_domains; i++) {
		struct iommu_hwpt_alloc hwpt = { .size = sizeof(hwpt) };

		ioas[i] = iommufd_dev_new_ioas(&d);
		hwpt.dev_id = d.dev_id;
		hwpt.pt_id = ioas[i];
		if (ioctl(iommufd, IOMMU_HWPT_ALLOC, &hwpt))
			die("IOMMU_HWPT_ALLOC");
		if (i == 0)
			iommufd_dev_attach(&d, hwpt.out_hwpt_id);
	}

	for (i = 0; i < nr_threads; i++) {
		workers[i].id = i;
		workers[i].seed = 12345 + i;
		if (pthread_create(&workers[i].tid, NULL, work, &workers[i]))
			die("pthread_create");
	}
	if (seconds) {
		sleep(seconds);
	} else {
		char c;

		if (read(0, &c, 1) < 0)
			die("read stdin");
	}
	stop = 1;
	for (i = 0; i < nr_threads; i++) {
		pthread_join(workers[i].tid, NULL);
		ops += workers[i].ops;
		maps += workers[i].maps;
		unmaps += workers[i].unmaps;
		conflicts += workers[i].conflicts;
		errors += workers[i].errors;
	}

	bad = check_live_table(&checked);
	for (i = 0; i < nr_threads; i++) {
		__u32 id = ioas[i % nr_domains];

		if (i % 2) {
			int ret = do_unmap(id, range_base(i), RANGE);

			if (ret && ret != -ENOENT) {
				fprintf(stderr, "stress-map: shared range of thread %d: %s\n", i,
					strerror(-ret));
				bad++;
			}
			continue;
		}
		for (s = 0; s < SLOTS; s++) {
			int ret = do_unmap(id, range_base(i) + s * SZ_2M, SZ_4K);

			if (workers[i].mapped[s] ? ret != 0 : ret != -ENOENT) {
				fprintf(stderr, "stress-map: thread %d slot %d: recorded %s, unmap %s\n",
					i, s, workers[i].mapped[s] ? "mapped" : "unmapped",
					ret ? strerror(-ret) : "succeeded");
				bad++;
			}
		}
	}
	printf("ops %lu maps %lu unmaps %lu overlap_conflicts %lu errors %lu checked %lu mismatches %d\n",
	       ops, maps, unmaps, conflicts, errors, checked, bad);
	return bad || errors ? 1 : 0;
}
