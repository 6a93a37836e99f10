/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The iommufd setup the guest test programs share: open a vfio-pci device's
 * cdev, bind it to a new iommufd and, optionally, attach it to a new IOAS.
 * Each step that fails ends the program with a message naming it.
 */
#ifndef IOMMUFD_DEV_H
#define IOMMUFD_DEV_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/iommufd.h>
#include <linux/vfio.h>

struct iommufd_dev {
	int iommufd;
	int dev;
	__u32 dev_id;
	/* The IOAS the device is attached to, if it was asked for */
	__u32 ioas_id;
};

static inline void iommufd_dev_fail(const char *what)
{
	fprintf(stderr, "%s: %s\n", what, strerror(errno));
	exit(1);
}

/* A new IOAS in @d's iommufd. */
static inline __u32 iommufd_dev_new_ioas(struct iommufd_dev *d)
{
	struct iommu_ioas_alloc alloc = { .size = sizeof(alloc) };

	if (ioctl(d->iommufd, IOMMU_IOAS_ALLOC, &alloc))
		iommufd_dev_fail("IOMMU_IOAS_ALLOC");
	return alloc.out_ioas_id;
}

/* Attach the device to @pt_id, an IOAS or a hardware page table. */
static inline void iommufd_dev_attach(struct iommufd_dev *d, __u32 pt_id)
{
	struct vfio_device_attach_iommufd_pt attach = {
		.argsz = sizeof(attach),
		.pt_id = pt_id,
	};

	if (ioctl(d->dev, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &attach))
		iommufd_dev_fail("VFIO_DEVICE_ATTACH_IOMMUFD_PT");
}

/* Map @length bytes at @va to @iova in IOAS @ioas_id. Returns 0 or -errno. */
static inline int iommufd_map(int iommufd, __u32 ioas_id, void *va, __u64 iova, __u64 length)
{
	struct iommu_ioas_map map = {
		.size = sizeof(map),
		.flags = IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE |
			 IOMMU_IOAS_MAP_WRITEABLE,
		.ioas_id = ioas_id,
		.user_va = (__u64)(unsigned long)va,
		.length = length,
		.iova = iova,
	};

	return ioctl(iommufd, IOMMU_IOAS_MAP, &map) ? -errno : 0;
}

/*
 * Unmap [@iova, @iova + @length) in IOAS @ioas_id. Returns 0 or -errno; the
 * bytes unmapped go to @unmapped if it is not NULL.
 */
static inline int iommufd_unmap(int iommufd, __u32 ioas_id, __u64 iova, __u64 length,
				__u64 *unmapped)
{
	struct iommu_ioas_unmap unmap = {
		.size = sizeof(unmap),
		.ioas_id = ioas_id,
		.iova = iova,
		.length = length,
	};

	if (ioctl(iommufd, IOMMU_IOAS_UNMAP, &unmap))
		return -errno;
	if (unmapped)
		*unmapped = unmap.length;
	return 0;
}

/* Open @cdev (/dev/vfio/devices/vfioN) and bind it; with @attach, to a new IOAS too. */
static inline void iommufd_dev_open(struct iommufd_dev *d, const char *cdev, int attach)
{
	struct vfio_device_bind_iommufd bind = { .argsz = sizeof(bind) };

	d->iommufd = open("/dev/iommu", O_RDWR);
	if (d->iommufd < 0)
		iommufd_dev_fail("open /dev/iommu");
	d->dev = open(cdev, O_RDWR);
	if (d->dev < 0)
		iommufd_dev_fail(cdev);
	bind.iommufd = d->iommufd;
	if (ioctl(d->dev, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		iommufd_dev_fail("VFIO_DEVICE_BIND_IOMMUFD");
	d->dev_id = bind.out_devid;
	d->ioas_id = 0;
	if (attach) {
		d->ioas_id = iommufd_dev_new_ioas(d);
		iommufd_dev_attach(d, d->ioas_id);
	}
}

#endif /* IOMMUFD_DEV_H */
