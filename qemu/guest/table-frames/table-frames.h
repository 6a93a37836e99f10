/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of table-frames share: the set of table frames found (main.c
 * prints it) and the readers, one per IOMMU (vtd.c, amd.c).
 */
#ifndef TABLE_FRAMES_H
#define TABLE_FRAMES_H

#include <stdint.h>

/* Bits 51:12 of a table entry or table pointer, VT-d and AMD v1 alike */
#define ADDR_MASK 0x000ffffffffff000ULL
#define MAX_FRAMES 65536

extern uint64_t frames[MAX_FRAMES];
extern int nr_frames;
extern int too_many;

/*
 * add_frame - adds the page frame an entry or table pointer points to (bits
 * 51:12), once. Returns 1 if it is new, 0 if it is there already or 0, -1 if
 * MAX_FRAMES frames are there already (too_many is set then).
 */
int add_frame(uint64_t entry);
/* frames_reset - forgets every frame, for a new walk. */
void frames_reset(void);

/*
 * iommu_debugfs - the IOMMU debugfs directory, /sys/kernel/debug/iommu, or
 * $TABLE_FRAMES_DEBUGFS when set (the host's self-test points it at files of
 * its own).
 */
const char *iommu_debugfs(void);

/*
 * A reader prints "stage ..." and, unless stage_only, "top 0x<pfn>" for the
 * domain and adds the frames of its tables. Returns 0, or -1 on an error it
 * printed on stderr.
 */
int vtd_frames(const char *bdf, int stage_only);
int amd_frames(const char *bdf, int stage_only);

#endif /* TABLE_FRAMES_H */
