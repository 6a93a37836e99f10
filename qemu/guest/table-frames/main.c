// SPDX-License-Identifier: GPL-2.0
/*
 * Print which translation a PCI device's IOMMU domain uses and the page
 * frames of its page-table pages, as the IOMMU sees them.
 *
 * usage: table-frames [--stage-only] SSSS:BB:DD.F
 *
 * Output, one item per line:
 *   stage first|second|passthrough|none  from the context or PASID entry
 *   top 0x<pfn>                          the top table, which identifies the domain
 *   table 0x<pfn>                        the top table and every table an entry points to
 *
 * The leaf entries (a 4 KiB, 2 MiB or 1 GiB page...) point to data, not
 * tables, and are not printed. Exits 0 also when the device has no domain;
 * exits 1 on a usage or read error, on what it cannot parse and on more than
 * MAX_FRAMES frames, so that a change of the debugfs format cannot pass for a
 * domain without tables.
 *
 * vtd.c reads VT-d's context or PASID entry and table dump.
 *
 * Walking the tables races with unmap: a table freed meanwhile may be read.
 * With --stage-only only the context or PASID entry is read,
 * which is safe while tables go back to the page allocator.
 *
 * TABLE_FRAMES_DEBUGFS replaces /sys/kernel/debug/iommu, for a test on files
 * of its own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
	int stage_only = argc == 3 && !strcmp(argv[1], "--stage-only");
	const char *bdf = argv[argc - 1];
	int i;

	if (argc != 2 + stage_only || strlen(bdf) != 12 || bdf[4] != ':') {
		fprintf(stderr, "usage: table-frames [--stage-only] SSSS:BB:DD.F\n");
		return 1;
	}
	if (vtd_frames(bdf, stage_only))
		return 1;
	for (i = 0; i < nr_frames; i++)
		printf("table 0x%" PRIx64 "\n", frames[i]);
	return 0;
}
