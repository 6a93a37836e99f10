// SPDX-License-Identifier: GPL-2.0
/*
 * The AMD-Vi reader of table-frames: the device table entry (DTE) of a
 * device, from the AMD IOMMU debugfs files, and the AMD v1 page table it
 * points to, walked in physical memory read through /proc/kcore. The AMD
 * debugfs has no dump of a domain's tables, unlike VT-d's.
 *
 * drivers/iommu/amd/debugfs.c: writing "SSSS:BB:DD.F" to devid selects the
 * device (-ENODEV if no IOMMU covers it); devtbl then shows a header line and
 * "SSSS:BB:DD.F QWORD[3] QWORD[2] QWORD[1] QWORD[0] iommuN", each QWORD as
 * %016llx, highest first. The selection is one for the whole system: two
 * readers must not run at once.
 *
 * DTE bits (drivers/iommu/amd/amd_iommu_types.h): V 0, TV 1, Mode 11:9 (0:
 * no table, 1..6: the number of levels), the top table 51:12 (DTE_HOST_TRP),
 * GV 55 (guest, v2 tables through a GCR3 table), IR 61, IW 62. The driver
 * writes V, TV, Mode and the top for a v1 domain (amd_iommu_set_dte_v1), V, TV,
 * IR and IW with Mode 0 for the identity domain (set_dte_passthrough), V
 * alone for the blocked domain (clear_dte_entry), V and TV alone, which
 * blocks DMA too, for a device with no domain (init_device_table_dma).
 *
 * AMD v1 entries (drivers/iommu/generic_pt/fmt/amdv1.h): PR 0, NextLevel
 * 11:9, the address 51:12. generic_pt numbers levels from 0 (a table of
 * leaves) to mode - 1 (the top); an entry present in a table of level L >= 1
 * points to a table of level L - 1 if NextLevel is L (amdv1pt_install_table
 * writes the level of the table that holds the entry, and generic_pt skips
 * no level), and is a leaf if NextLevel is 0 or 7 (amdv1pt_load_entry_raw);
 * every entry of a level 0 table is a leaf, so level 0 tables are counted but
 * never read. A level 5 table (mode 6) has 128 entries, the others 512.
 *
 * The walk races with unmap and with the pool handing a freed table out
 * again: a table read may hold anything. It is bounded (each level strictly
 * lower than the one above, each frame read once, at most MAX_FRAMES) and
 * checked: an entry with another NextLevel, a table reached twice or a table
 * at address 0 makes the walk inconsistent, and it is started again from the
 * DTE, TRIES times at most; a walk inconsistent every time is an error.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "table-frames.h"

#define DTE_V		(1ULL << 0)
#define DTE_TV		(1ULL << 1)
#define DTE_MODE_SHIFT	9
#define DTE_GV		(1ULL << 55)
#define DTE_IR		(1ULL << 61)
#define DTE_IW		(1ULL << 62)

#define PTE_PR		(1ULL << 0)
#define PTE_NL_SHIFT	9
#define PTE_NL_SIZE	7

#define TABLE_SIZE	4096
#define TRIES		3
/* PT_LOAD program headers of /proc/kcore kept: one per RAM range */
#define MAX_SEGS	4096

struct seg {
	uint64_t paddr;
	uint64_t size;
	uint64_t offset;
};

static struct seg segs[MAX_SEGS];
static int nr_segs;
static int kcore = -1;
static const char *kcore_path;
/* Why the last walk was inconsistent, for the error message */
static char why[160];

/*
 * kcore_open - opens /proc/kcore ($TABLE_FRAMES_KCORE) and keeps its PT_LOAD
 * segments that have a physical address: fs/proc/kcore.c sets p_paddr for
 * RAM (and the kernel text), and -1 for the others.
 */
static int kcore_open(void)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	kcore_path = getenv("TABLE_FRAMES_KCORE");
	if (!kcore_path || !*kcore_path)
		kcore_path = "/proc/kcore";
	kcore = open(kcore_path, O_RDONLY);
	if (kcore < 0) {
		fprintf(stderr, "table-frames: %s: %s\n", kcore_path, strerror(errno));
		return -1;
	}
	if (pread(kcore, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(ph)) {
		fprintf(stderr, "table-frames: %s is no ELF64 core\n", kcore_path);
		return -1;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(kcore, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph)) {
			fprintf(stderr, "table-frames: %s: program header %d cannot be read\n",
				kcore_path, i);
			return -1;
		}
		if (ph.p_type != PT_LOAD || ph.p_paddr == ~(Elf64_Addr)0)
			continue;
		if (nr_segs == MAX_SEGS) {
			fprintf(stderr, "table-frames: %s has more than %d RAM segments\n",
				kcore_path, MAX_SEGS);
			return -1;
		}
		segs[nr_segs++] = (struct seg){ ph.p_paddr, ph.p_filesz, ph.p_offset };
	}
	if (!nr_segs) {
		fprintf(stderr, "table-frames: %s has no segment with a physical address\n",
			kcore_path);
		return -1;
	}
	return 0;
}

/* read_table - reads the 4 KiB table at physical address pa. */
static int read_table(uint64_t pa, uint64_t table[TABLE_SIZE / 8])
{
	int i;

	for (i = 0; i < nr_segs; i++) {
		const struct seg *s = &segs[i];

		if (pa < s->paddr || s->size < TABLE_SIZE || pa - s->paddr > s->size - TABLE_SIZE)
			continue;
		if (pread(kcore, table, TABLE_SIZE, s->offset + (pa - s->paddr)) == TABLE_SIZE)
			return 0;
		fprintf(stderr, "table-frames: %s: the table at 0x%llx cannot be read\n",
			kcore_path, (unsigned long long)pa);
		return -1;
	}
	fprintf(stderr, "table-frames: %s: no RAM segment holds the table at 0x%llx\n",
		kcore_path, (unsigned long long)pa);
	return -1;
}

/*
 * walk - adds the frames of the tables that the table at pa points to, and
 * so on down; level, at least 1, is the level of that table. Returns 0, 1 if
 * the walk is inconsistent (why says how), -1 on an error.
 */
static int walk(uint64_t pa, int level)
{
	uint64_t table[TABLE_SIZE / 8];
	int n = level == 5 ? 128 : TABLE_SIZE / 8;
	int i, ret;

	if (read_table(pa, table))
		return -1;
	for (i = 0; i < n; i++) {
		uint64_t e = table[i];
		int nl = (e >> PTE_NL_SHIFT) & 7;

		if (!(e & PTE_PR) || nl == 0 || nl == PTE_NL_SIZE)
			continue;
		if (nl != level) {
			snprintf(why, sizeof(why),
				 "entry %d of the level %d table at 0x%llx: 0x%016llx, next level %d",
				 i, level, (unsigned long long)pa, (unsigned long long)e, nl);
			return 1;
		}
		ret = add_frame(e);
		if (ret < 0) {
			fprintf(stderr, "table-frames: more than %d tables\n", MAX_FRAMES);
			return -1;
		}
		if (ret == 0) {
			snprintf(why, sizeof(why),
				 "entry %d of the level %d table at 0x%llx: 0x%016llx, a table %s",
				 i, level, (unsigned long long)pa, (unsigned long long)e,
				 e & ADDR_MASK ? "reached twice" : "at address 0");
			return 1;
		}
		if (level > 1) {
			ret = walk(e & ADDR_MASK, level - 1);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/*
 * read_dte - the DTE of device bdf, dte[0] to dte[3]. Returns 0, 1 if no
 * IOMMU covers the device, -1 on an error.
 */
static int read_dte(const char *bdf, uint64_t dte[4])
{
	unsigned long long q[4];
	char path[256], line[512], dev[16];
	int fd, found = 0, idx;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/amd/devid", iommu_debugfs());
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "table-frames: %s: %s\n", path, strerror(errno));
		return -1;
	}
	n = write(fd, bdf, strlen(bdf));
	if (n < 0 && errno == ENODEV) {
		close(fd);
		return 1;
	}
	if (n != (ssize_t)strlen(bdf)) {
		fprintf(stderr, "table-frames: writing %s to %s: %s\n", bdf, path,
			n < 0 ? strerror(errno) : "short write");
		close(fd);
		return -1;
	}
	close(fd);

	snprintf(path, sizeof(path), "%s/amd/devtbl", iommu_debugfs());
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "table-frames: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%15s %llx %llx %llx %llx iommu%d",
			   dev, &q[3], &q[2], &q[1], &q[0], &idx) == 6 && !strcasecmp(dev, bdf))
			found = 1;
	}
	fclose(f);
	if (!found) {
		fprintf(stderr,
			"table-frames: %s has no entry for %s (another device selected meanwhile, or a new format?)\n",
			path, bdf);
		return -1;
	}
	memcpy(dte, q, sizeof(q));
	return 0;
}

/* stage - what the DTE translates with; NULL if its mode is reserved (7). */
static const char *stage(const uint64_t dte[4], int *mode)
{
	*mode = (dte[0] >> DTE_MODE_SHIFT) & 7;
	if (!(dte[0] & DTE_V) || !(dte[0] & DTE_TV))
		return "none";
	if (dte[0] & DTE_GV)
		return "amdv2";
	if (*mode == 0)
		return dte[0] & (DTE_IR | DTE_IW) ? "passthrough" : "none";
	if (*mode == 7)
		return NULL;
	return "amdv1";
}

int amd_frames(const char *bdf, int stage_only)
{
	const struct timespec pause = { 0, 10 * 1000 * 1000 };
	const char *st;
	uint64_t dte[4], top;
	int try, mode, ret;

	for (try = 1; ; try++) {
		ret = read_dte(bdf, dte);
		if (ret < 0)
			return -1;
		if (ret > 0) {
			printf("stage none\n");
			return 0;
		}
		st = stage(dte, &mode);
		if (!st) {
			fprintf(stderr,
				"table-frames: the DTE of %s has the reserved mode 7: %016llx\n",
				bdf, (unsigned long long)dte[0]);
			return -1;
		}
		if (stage_only || strcmp(st, "amdv1")) {
			printf("stage %s\n", st);
			return 0;
		}
		if (kcore < 0 && kcore_open())
			return -1;
		top = dte[0] & ADDR_MASK;
		frames_reset();
		if (add_frame(top) <= 0) {
			snprintf(why, sizeof(why), "the DTE %016llx has no top table",
				 (unsigned long long)dte[0]);
			ret = 1;
		} else {
			ret = mode > 1 ? walk(top, mode - 1) : 0;
		}
		if (ret <= 0 || try == TRIES)
			break;
		nanosleep(&pause, NULL);
	}
	printf("stage %s\n", st);
	printf("top 0x%llx\n", (unsigned long long)top >> 12);
	if (ret > 0)
		fprintf(stderr,
			"table-frames: the tables of %s are inconsistent in %d walks; the last: %s\n",
			bdf, TRIES, why);
	return ret ? -1 : 0;
}
