// SPDX-License-Identifier: GPL-2.0
/*
 * Print which translation a PCI device's VT-d domain uses and the page frames
 * of its page-table pages, as the IOMMU sees them, from the Intel IOMMU
 * debugfs files.
 *
 * usage: table-frames [--stage-only] BDF
 *
 * Output, one item per line:
 *   stage first|second|passthrough|none   from the device's context or PASID entry
 *   top 0x<pfn>                           the top table, which identifies the domain
 *   table 0x<pfn>                         the top table and every table an entry points to
 *
 * The leaf entries (the last one printed for each IOVA, a 4 KiB, 2 MiB or
 * 1 GiB page) point to data, not tables, and are not printed. Exits 0 also
 * when the device has no domain; exits 1 on a usage or read error, on a line
 * of the table dump it cannot parse and on more than MAX_FRAMES frames, so
 * that a change of the debugfs format cannot pass for a domain without
 * tables.
 *
 * Walking the tables races with unmap: a table freed meanwhile may be read
 * (the debugfs code says so). With --stage-only only the context or PASID
 * entry is read, which is safe while tables go back to the page allocator.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEBUGFS "/sys/kernel/debug/iommu/intel"
/* Bits 51:12 of a VT-d table entry or table pointer */
#define ADDR_MASK 0x000ffffffffff000ULL
#define MAX_FRAMES 65536

static uint64_t frames[MAX_FRAMES];
static int nr_frames;
static int too_many;

static void add_frame(uint64_t entry)
{
	uint64_t pfn = (entry & ADDR_MASK) >> 12;
	int i;

	if (!pfn)
		return;
	for (i = nr_frames - 1; i >= 0; i--)
		if (frames[i] == pfn)
			return;
	if (nr_frames < MAX_FRAMES)
		frames[nr_frames++] = pfn;
	else
		too_many = 1;
}

/*
 * dmar_translation_struct has one line per present context entry (legacy) or
 * PASID entry (scalable): "bb:dd.f\troot_hi:root_lo\tctx_hi:ctx_lo\tpasid\tv2:v1:v0".
 */
static const char *stage(const char *bdf)
{
	unsigned long long ctx_hi, ctx_lo, v2, v1, v0;
	const char *result = "none";
	char line[512], dev[16];
	int pasid;
	FILE *f;

	f = fopen(DEBUGFS "/dmar_translation_struct", "r");
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
static int tables(const char *bdf)
{
	char path[256], line[512];
	unsigned long long top;
	int bad = 0;
	FILE *f;

	snprintf(path, sizeof(path), DEBUGFS "/%s/domain_translation_struct", bdf);
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

int main(int argc, char **argv)
{
	int stage_only = argc == 3 && !strcmp(argv[1], "--stage-only");
	const char *bdf = argv[argc - 1];
	int i;

	if (argc != 2 + stage_only || strlen(bdf) != 12 || bdf[4] != ':') {
		fprintf(stderr, "usage: table-frames [--stage-only] SSSS:BB:DD.F\n");
		return 1;
	}
	printf("stage %s\n", stage(bdf));
	if (stage_only)
		return 0;
	if (tables(bdf))
		return 1;
	for (i = 0; i < nr_frames; i++)
		printf("table 0x%" PRIx64 "\n", frames[i]);
	return 0;
}
