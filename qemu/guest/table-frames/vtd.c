// SPDX-License-Identifier: GPL-2.0
/*
 * The VT-d reader of table-frames: the translation a device's context or
 * PASID entry selects and the frames of its domain's tables, from the Intel
 * IOMMU debugfs files (drivers/iommu/intel/debugfs.c), which the kernel
 * writes by walking the tables itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table-frames.h"

/*
 * dmar_translation_struct has one line per present context entry (legacy) or
 * PASID entry (scalable): "bb:dd.f\troot_hi:root_lo\tctx_hi:ctx_lo\tpasid\tv2:v1:v0".
 */
static const char *stage(const char *bdf)
{
	unsigned long long ctx_hi, ctx_lo, v2, v1, v0;
	const char *result = "none";
	char path[256], line[512], dev[16];
	int pasid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/intel/dmar_translation_struct", iommu_debugfs());
	f = fopen(path, "r");
	if (!f)
		return "none";
	/* The file names devices without their PCI segment. */
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%15s\t%*x:%*x\t%llx:%llx\t%d\t%llx:%llx:%llx",
			   dev, &ctx_hi, &ctx_lo, &pasid, &v2, &v1, &v0) != 7)
			continue;
		if (strcmp(dev, bdf + 5))
			continue;
		if (pasid == -1) {
			/* Legacy context entry: translation type, bits 3:2 */
			switch ((ctx_lo >> 2) & 3) {
			case 0:
			case 1:
				result = "second";
				break;
			case 2:
				result = "passthrough";
				break;
			}
			break;
		}
		if (pasid != 0)
			continue;
		/* Scalable-mode PASID entry: PGTT, bits 8:6 */
		switch ((v0 >> 6) & 7) {
		case 1:
			result = "first";
			break;
		case 2:
		case 3:
			result = "second";
			break;
		case 4:
			result = "passthrough";
			break;
		}
		break;
	}
	fclose(f);
	return result;
}

/*
 * domain_translation_struct: "Device ... @0x<top>", a header, then one line per
 * leaf: "0x<iova_pfn> |\t<pml5e>\t<pml4e>\t<pdpe>[\t<pde>[\t<pte>]]".
 */
static int read_tables(const char *bdf)
{
	char path[256], line[512];
	unsigned long long top;
	int bad = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/intel/%s/domain_translation_struct",
		 iommu_debugfs(), bdf);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "table-frames: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t entries[5];
		char *p, *end;
		int n = 0, i;

		if (!strncmp(line, "Device ", 7)) {
			p = strstr(line, "@0x");
			if (p && sscanf(p, "@0x%llx", &top) == 1) {
				printf("top 0x%llx\n", (top & ADDR_MASK) >> 12);
				add_frame(top);
			}
			continue;
		}
		p = strchr(line, '|');
		if (!p)
			continue;
		p++;
		while (n < 5) {
			uint64_t v = strtoull(p, &end, 16);

			if (end == p)
				break;
			entries[n++] = v;
			p = end;
		}
		if (n == 0) {
			if (!bad++)
				fprintf(stderr, "table-frames: cannot parse: %s", line);
			continue;
		}
		/* All but the last entry point to a table. */
		for (i = 0; i < n - 1; i++)
			add_frame(entries[i]);
	}
	fclose(f);
	if (bad)
		fprintf(stderr, "table-frames: %d lines of %s not parsed\n", bad, path);
	if (too_many)
		fprintf(stderr, "table-frames: more than %d tables\n", MAX_FRAMES);
	return bad || too_many ? -1 : 0;
}

int vtd_frames(const char *bdf, int stage_only)
{
	printf("stage %s\n", stage(bdf));
	if (stage_only)
		return 0;
	return read_tables(bdf);
}
