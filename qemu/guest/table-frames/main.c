// SPDX-License-Identifier: GPL-2.0
/*
 * Print which translation a PCI device's IOMMU domain uses and the page
 * frames of its page-table pages, as the IOMMU sees them.
 *
 * usage: table-frames [--stage-only] SSSS:BB:DD.F
 *
 * Output, one item per line:
 *   stage first|second|passthrough|none  VT-d: from the context or PASID entry
 *   stage amdv1|amdv2|passthrough|none   AMD-Vi: from the device table entry
 *   top 0x<pfn>                          the top table, which identifies the domain
 *   table 0x<pfn>                        the top table and every table an entry points to
 *
 * The leaf entries (a 4 KiB, 2 MiB or 1 GiB page...) point to data, not
 * tables, and are not printed. Exits 0 also when the device has no domain;
 * exits 1 on a usage or read error, on what it cannot parse and on more than
 * MAX_FRAMES frames, so that a change of the debugfs format cannot pass for a
 * domain without tables.
 *
 * The IOMMU is the one whose debugfs directory exists: iommu/amd (the AMD
 * driver creates it only once it initialised, drivers/iommu/amd/init.c), else
 * iommu/intel. vtd.c reads VT-d's table dump, amd.c walks AMD v1 tables in
 * memory read through /proc/kcore.
 *
 * Walking the tables races with unmap: a table freed meanwhile may be read.
 * With --stage-only only the context, PASID or device table entry is read,
 * which is safe while tables go back to the page allocator.
 *
 * For the host's self-test (scripts/test-table-frames.py), two variables
 * replace the paths: TABLE_FRAMES_DEBUGFS /sys/kernel/debug/iommu and
 * TABLE_FRAMES_KCORE /proc/kcore.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "table-frames.h"

uint64_t frames[MAX_FRAMES];
int nr_frames;
int too_many;

int add_frame(uint64_t entry)
{
	uint64_t pfn = (entry & ADDR_MASK) >> 12;
	int i;

	if (!pfn)
		return 0;
	for (i = nr_frames - 1; i >= 0; i--)
		if (frames[i] == pfn)
			return 0;
	if (nr_frames == MAX_FRAMES) {
		too_many = 1;
		return -1;
	}
	frames[nr_frames++] = pfn;
	return 1;
}

void frames_reset(void)
{
	nr_frames = 0;
	too_many = 0;
}

const char *iommu_debugfs(void)
{
	const char *dir = getenv("TABLE_FRAMES_DEBUGFS");

	return dir && *dir ? dir : "/sys/kernel/debug/iommu";
}

static int is_amd(void)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/amd", iommu_debugfs());
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

int main(int argc, char **argv)
{
	int stage_only = argc == 3 && !strcmp(argv[1], "--stage-only");
	const char *bdf = argv[argc - 1];
	int i, err;

	if (argc != 2 + stage_only || strlen(bdf) != 12 || bdf[4] != ':') {
		fprintf(stderr, "usage: table-frames [--stage-only] SSSS:BB:DD.F\n");
		return 1;
	}
	if (is_amd())
		err = amd_frames(bdf, stage_only);
	else
		err = vtd_frames(bdf, stage_only);
	if (err)
		return 1;
	for (i = 0; i < nr_frames; i++)
		printf("table 0x%" PRIx64 "\n", frames[i]);
	return 0;
}
