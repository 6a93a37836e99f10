// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel benchmarks of IOMMU page-table page allocation, through the entry
 * points generic_pt uses, whichever allocator is behind them: the C page
 * allocator, or a provider such as the iommu_pt pool when it is loaded.
 *
 * Write a command to /sys/kernel/debug/iommu_pt_bench/run; the write returns
 * when the run is over, and reading the file gives its result as
 * "name value" lines:
 *
 *   alloc ITERATIONS INFLIGHT [NODE]
 *	ITERATIONS table pages allocated with iommu_alloc_table_pages_node_sz()
 *	and freed with iommu_put_pages_list(), INFLIGHT at a time, for node
 *	NODE (default NUMA_NO_NODE: the calling CPU's). Also reported: the node
 *	of the CPU the run started on, and how many pages were of the node
 *	asked for (all of them, unless that node ran out of memory).
 *   map dense|sparse|huge COUNT
 *	COUNT mappings on a fresh VT-d paging domain of the benchmark device,
 *	then unmapped: 4 KiB pages side by side (dense), one 4 KiB page every
 *	2 MiB so that every map needs a new leaf table (sparse), or 2 MiB pages
 *	(huge). The domain is not attached: no device uses it, so the run
 *	measures table work and table allocation, not IOTLB invalidation.
 *	Also reported: the median and 99th percentile of one map call, and the
 *	time freeing the domain takes per table it frees (teardown).
 *   churn COUNT ROUNDS
 *	ROUNDS times: the sparse map of COUNT pages, then unmapping all of it.
 *	The leaf tables stay: generic_pt frees a table only when an unmap
 *	covers every entry of it, so later rounds map into tables already there
 *	(mapping and unmapping entries, not allocating tables).
 *   emptied TABLES ROUNDS
 *	ROUNDS times: one map of TABLES * 2 MiB in 4 KiB entries, which fills
 *	TABLES leaf tables, then one unmap of all of it, which clears every
 *	entry and frees the tables it emptied; the next round allocates them
 *	again. Reported per table: what a table costs when it is reused after
 *	the page-table code emptied it.
 *   concurrent THREADS COUNT ROUNDS
 *	THREADS kernel threads, each bound to its own online CPU, started
 *	together, each ROUNDS times: a new paging domain, the sparse map of
 *	COUNT pages into it (a leaf table each), and the domain freed, which
 *	frees its tables: every round allocates and frees COUNT + 2 tables
 *	per thread. Reported: the time from the start until the last thread
 *	ended, and per map the time that makes over every thread's maps (the
 *	inverse of the throughput), so that one and two threads compare as
 *	scaling.
 *
 * The benchmark device is the first PCI device matching the vendor and
 * device module parameters (default: the 82576 igb that QEMU emulates).
 */
#include <linux/debugfs.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/iommu.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/pci.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmstat.h>

#include "iommu-pages.h"

static ushort vendor = PCI_VENDOR_ID_INTEL;
module_param(vendor, ushort, 0444);
MODULE_PARM_DESC(vendor, "PCI vendor ID of the device whose IOMMU is used");
static ushort device = 0x10c9;
module_param(device, ushort, 0444);
MODULE_PARM_DESC(device, "PCI device ID of the device whose IOMMU is used");

#define MAX_INFLIGHT 65536
#define MAX_COUNT BIT(20)
#define MAX_ROUNDS 10000
#define IOVA_BASE SZ_4G
#define RESULT_SIZE 1024
#define MAX_THREADS 64

static DEFINE_MUTEX(bench_lock);
static char result[RESULT_SIZE];
static struct dentry *bench_dir;

/*
 * NR_IOMMU_PAGES, exactly: the node counters plus the per-CPU deltas not yet
 * folded into them (which can be tens of pages per CPU).
 */
static long iommu_pages_now(void)
{
	long pages = 0;
	int nid, cpu;

	for_each_online_node(nid) {
		struct pglist_data *pgdat = NODE_DATA(nid);

		pages += atomic_long_read(&pgdat->vm_stat[NR_IOMMU_PAGES]);
		for_each_online_cpu(cpu)
			pages += per_cpu_ptr(pgdat->per_cpu_nodestats, cpu)
					 ->vm_node_stat_diff[NR_IOMMU_PAGES];
	}
	return pages;
}

static int bench_alloc(unsigned int iterations, unsigned int inflight, int nid)
{
	u64 alloc_ns = 0, free_ns = 0;
	unsigned int done = 0, on_node = 0, i, n;
	int cpu_node = numa_node_id();
	void **pages;
	ktime_t t;

	if (!iterations || !inflight || inflight > MAX_INFLIGHT ||
	    iterations > MAX_COUNT * 16)
		return -EINVAL;
	if (nid != NUMA_NO_NODE &&
	    (nid < 0 || nid >= MAX_NUMNODES || !node_state(nid, N_MEMORY)))
		return -EINVAL;
	pages = kvcalloc(inflight, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;

	while (done < iterations) {
		struct iommu_pages_list list = IOMMU_PAGES_LIST_INIT(list);

		n = min(inflight, iterations - done);
		t = ktime_get();
		for (i = 0; i < n; i++) {
			pages[i] = iommu_alloc_table_pages_node_sz(nid,
								   GFP_KERNEL,
								   PAGE_SIZE);
			if (!pages[i])
				break;
		}
		alloc_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		n = i;
		if (nid != NUMA_NO_NODE)
			for (i = 0; i < n; i++)
				on_node += page_to_nid(virt_to_page(pages[i])) == nid;
		/* As generic_pt does after the IOTLB flush. */
		t = ktime_get();
		for (i = 0; i < n; i++)
			iommu_pages_list_add(&list, pages[i]);
		iommu_put_pages_list(&list);
		free_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		done += n;
		if (n == 0) {
			kvfree(pages);
			return -ENOMEM;
		}
		cond_resched();
	}
	kvfree(pages);
	scnprintf(result, sizeof(result),
		  "op alloc\npages %u\ninflight %u\nalloc_ns %llu\nfree_ns %llu\nns_per_page %llu\nns_per_free %llu\n",
		  iterations, inflight, alloc_ns, free_ns,
		  div_u64(alloc_ns + free_ns, iterations),
		  div_u64(free_ns, iterations));
	if (nid != NUMA_NO_NODE) {
		size_t len = strlen(result);

		scnprintf(result + len, sizeof(result) - len,
			  "node %d\ncpu_node %d\npages_on_node %u\n",
			  nid, cpu_node, on_node);
	}
	return 0;
}

enum pattern { DENSE, SPARSE, HUGE };

static const char *const pattern_names[] = { "dense", "sparse", "huge" };

/* Maps COUNT pages; with LAT, records each map call's time in it. */
static int map_all(struct iommu_domain *domain, enum pattern pattern,
		   unsigned int count, phys_addr_t paddr, u64 *lat)
{
	size_t size = pattern == HUGE ? SZ_2M : SZ_4K;
	unsigned long stride = pattern == DENSE ? SZ_4K : SZ_2M;
	unsigned int i;
	ktime_t t = 0;
	int ret;

	for (i = 0; i < count; i++) {
		if (lat)
			t = ktime_get();
		ret = iommu_map(domain, IOVA_BASE + i * stride, paddr, size,
				IOMMU_READ | IOMMU_WRITE, GFP_KERNEL);
		if (lat)
			lat[i] = ktime_to_ns(ktime_sub(ktime_get(), t));
		if (ret)
			return ret;
		if (!(i % 256))
			cond_resched();
	}
	return 0;
}

static int unmap_all(struct iommu_domain *domain, enum pattern pattern,
		     unsigned int count)
{
	unsigned long stride = pattern == DENSE ? SZ_4K : SZ_2M;
	size_t size = pattern == HUGE ? SZ_2M : SZ_4K;
	unsigned int i;

	for (i = 0; i < count; i++) {
		if (iommu_unmap(domain, IOVA_BASE + i * stride, size) != size)
			return -EIO;
		if (!(i % 256))
			cond_resched();
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static int bench_map(enum pattern pattern, unsigned int count,
		     unsigned int rounds)
{
	u64 map_ns = 0, unmap_ns = 0, free_ns, ops, *lat;
	long base, peak = 0, torn_down;
	struct iommu_domain *domain;
	struct pci_dev *pdev;
	phys_addr_t paddr;
	struct page *page;
	unsigned int r;
	ktime_t t;
	int ret = 0;

	if (!count || count > MAX_COUNT || !rounds || rounds > MAX_ROUNDS)
		return -EINVAL;
	pdev = pci_get_device(vendor, device, NULL);
	if (!pdev)
		return -ENODEV;
	/* Huge mappings need a 2 MiB aligned address; no device reads it. */
	page = alloc_pages(GFP_KERNEL, pattern == HUGE ? get_order(SZ_2M) : 0);
	if (!page) {
		ret = -ENOMEM;
		goto put_dev;
	}
	paddr = page_to_phys(page);
	/* The first round's map calls, for their percentiles. */
	lat = kvmalloc_array(count, sizeof(*lat), GFP_KERNEL);
	if (!lat) {
		ret = -ENOMEM;
		goto free_page;
	}

	base = iommu_pages_now();
	domain = iommu_paging_domain_alloc(&pdev->dev);
	if (IS_ERR(domain)) {
		ret = PTR_ERR(domain);
		goto free_lat;
	}
	for (r = 0; r < rounds; r++) {
		t = ktime_get();
		ret = map_all(domain, pattern, count, paddr, r ? NULL : lat);
		map_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		peak = max(peak, iommu_pages_now());
		if (ret)
			break;
		t = ktime_get();
		ret = unmap_all(domain, pattern, count);
		unmap_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		if (ret)
			break;
	}
	torn_down = iommu_pages_now() - base;
	t = ktime_get();
	iommu_domain_free(domain);
	free_ns = ktime_to_ns(ktime_sub(ktime_get(), t));
	if (ret)
		goto free_lat;

	sort(lat, count, sizeof(*lat), cmp_u64, NULL);
	ops = (u64)count * rounds;
	scnprintf(result, sizeof(result),
		  "op %s\npattern %s\ncount %u\nrounds %u\nmap_ns %llu\nunmap_ns %llu\nns_per_map %llu\nns_per_unmap %llu\np50_map_ns %llu\np99_map_ns %llu\nfree_ns %llu\ntables_freed %ld\nns_per_table_freed %llu\ntable_pages %ld\nleaked_pages %ld\n",
		  rounds > 1 ? "churn" : "map", pattern_names[pattern], count,
		  rounds, map_ns, unmap_ns, div64_u64(map_ns, ops),
		  div64_u64(unmap_ns, ops), lat[count / 2],
		  lat[(u64)count * 99 / 100], free_ns, torn_down,
		  torn_down > 0 ? div64_u64(free_ns, torn_down) : 0,
		  peak - base, iommu_pages_now() - base);
free_lat:
	kvfree(lat);
free_page:
	__free_pages(page, pattern == HUGE ? get_order(SZ_2M) : 0);
put_dev:
	pci_dev_put(pdev);
	return ret;
}

/*
 * The output addresses only need to be 4 KiB aligned and not 2 MiB aligned,
 * so that every entry is a 4 KiB one: the domain is never attached, no device
 * walks it and nothing reads the addresses it maps.
 */
#define EMPTIED_OA (SZ_4G + SZ_4K)
#define MAX_TABLES 512

static int bench_emptied(unsigned int tables, unsigned int rounds)
{
	u64 map_ns = 0, unmap_ns = 0, ops;
	size_t size = (size_t)tables * SZ_2M;
	struct iommu_domain *domain;
	struct pci_dev *pdev;
	long base, peak = 0;
	unsigned int r;
	ktime_t t;
	int ret = 0;

	if (!tables || tables > MAX_TABLES || !rounds || rounds > MAX_ROUNDS)
		return -EINVAL;
	pdev = pci_get_device(vendor, device, NULL);
	if (!pdev)
		return -ENODEV;
	base = iommu_pages_now();
	domain = iommu_paging_domain_alloc(&pdev->dev);
	if (IS_ERR(domain)) {
		ret = PTR_ERR(domain);
		goto put_dev;
	}
	for (r = 0; r < rounds; r++) {
		t = ktime_get();
		ret = iommu_map(domain, IOVA_BASE, EMPTIED_OA, size,
				IOMMU_READ | IOMMU_WRITE, GFP_KERNEL);
		map_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		peak = max(peak, iommu_pages_now());
		if (ret)
			break;
		t = ktime_get();
		if (iommu_unmap(domain, IOVA_BASE, size) != size)
			ret = -EIO;
		unmap_ns += ktime_to_ns(ktime_sub(ktime_get(), t));
		if (ret)
			break;
		cond_resched();
	}
	iommu_domain_free(domain);
	if (ret)
		goto put_dev;

	ops = (u64)tables * rounds;
	scnprintf(result, sizeof(result),
		  "op emptied\ntables %u\nrounds %u\nmap_ns %llu\nunmap_ns %llu\nns_per_table %llu\nns_per_map %llu\nns_per_unmap %llu\ntable_pages %ld\nleaked_pages %ld\n",
		  tables, rounds, map_ns, unmap_ns,
		  div64_u64(map_ns + unmap_ns, ops), div64_u64(map_ns, ops),
		  div64_u64(unmap_ns, ops), peak - base,
		  iommu_pages_now() - base);
put_dev:
	pci_dev_put(pdev);
	return ret;
}

struct concurrent_arg {
	struct device *dev;
	struct completion *start;
	struct completion done;
	phys_addr_t paddr;
	unsigned int count;
	unsigned int rounds;
	u64 ns;
	int ret;
};

static int concurrent_thread(void *data)
{
	struct concurrent_arg *arg = data;
	unsigned int r;
	ktime_t t;

	wait_for_completion(arg->start);
	t = ktime_get();
	for (r = 0; r < arg->rounds && !arg->ret; r++) {
		struct iommu_domain *domain = iommu_paging_domain_alloc(arg->dev);

		if (IS_ERR(domain)) {
			arg->ret = PTR_ERR(domain);
			break;
		}
		arg->ret = map_all(domain, SPARSE, arg->count, arg->paddr, NULL);
		iommu_domain_free(domain);
	}
	arg->ns = ktime_to_ns(ktime_sub(ktime_get(), t));
	complete(&arg->done);
	return 0;
}

static int bench_concurrent(unsigned int threads, unsigned int count,
			    unsigned int rounds)
{
	DECLARE_COMPLETION_ONSTACK(start);
	struct concurrent_arg *args;
	unsigned int i, started = 0;
	u64 elapsed_ns, slowest = 0;
	struct task_struct *task;
	struct pci_dev *pdev;
	struct page *page;
	long base;
	ktime_t t;
	int ret = 0;

	if (!threads || threads > MAX_THREADS ||
	    threads > num_online_cpus() || !count || count > MAX_COUNT ||
	    !rounds || rounds > MAX_ROUNDS)
		return -EINVAL;
	pdev = pci_get_device(vendor, device, NULL);
	if (!pdev)
		return -ENODEV;
	page = alloc_page(GFP_KERNEL);
	args = kcalloc(threads, sizeof(*args), GFP_KERNEL);
	if (!page || !args) {
		ret = -ENOMEM;
		goto free;
	}

	base = iommu_pages_now();
	for (i = 0; i < threads; i++) {
		args[i].dev = &pdev->dev;
		args[i].start = &start;
		init_completion(&args[i].done);
		args[i].paddr = page_to_phys(page);
		args[i].count = count;
		args[i].rounds = rounds;
	}
	for (i = 0; i < threads; i++) {
		task = kthread_create(concurrent_thread, &args[i],
				      "iommu_pt_bench/%u", i);
		if (IS_ERR(task)) {
			ret = PTR_ERR(task);
			break;
		}
		kthread_bind(task, cpumask_nth(i, cpu_online_mask));
		wake_up_process(task);
		started++;
	}
	/* Those started wait for this; they end on their own. */
	t = ktime_get();
	complete_all(&start);
	for (i = 0; i < started; i++) {
		wait_for_completion(&args[i].done);
		slowest = max(slowest, args[i].ns);
		ret = ret ?: args[i].ret;
	}
	elapsed_ns = ktime_to_ns(ktime_sub(ktime_get(), t));
	if (!ret)
		scnprintf(result, sizeof(result),
			  "op concurrent\nthreads %u\ncount %u\nrounds %u\nelapsed_ns %llu\nslowest_thread_ns %llu\nns_per_map %llu\n",
			  threads, count, rounds, elapsed_ns, slowest,
			  div64_u64(elapsed_ns, (u64)threads * count * rounds));
	if (!ret) {
		size_t len = strlen(result);

		scnprintf(result + len, sizeof(result) - len,
			  "leaked_pages %ld\n", iommu_pages_now() - base);
	}
free:
	kfree(args);
	if (page)
		__free_page(page);
	pci_dev_put(pdev);
	return ret;
}

static ssize_t run_write(struct file *file, const char __user *ubuf,
			 size_t len, loff_t *ppos)
{
	unsigned int a, b, c;
	char cmd[64], word[16];
	int ret, i, nid;

	if (len >= sizeof(cmd))
		return -EINVAL;
	if (copy_from_user(cmd, ubuf, len))
		return -EFAULT;
	cmd[len] = '\0';

	mutex_lock(&bench_lock);
	result[0] = '\0';
	if (sscanf(cmd, "concurrent %u %u %u", &a, &b, &c) == 3) {
		ret = bench_concurrent(a, b, c);
	} else if (sscanf(cmd, "alloc %u %u %d", &a, &b, &nid) == 3) {
		ret = bench_alloc(a, b, nid);
	} else if (sscanf(cmd, "alloc %u %u", &a, &b) == 2) {
		ret = bench_alloc(a, b, NUMA_NO_NODE);
	} else if (sscanf(cmd, "emptied %u %u", &a, &b) == 2) {
		ret = bench_emptied(a, b);
	} else if (sscanf(cmd, "churn %u %u", &a, &b) == 2) {
		ret = bench_map(SPARSE, a, b);
	} else if (sscanf(cmd, "map %15s %u", word, &a) == 2) {
		ret = -EINVAL;
		for (i = 0; i < ARRAY_SIZE(pattern_names); i++)
			if (!strcmp(word, pattern_names[i]))
				ret = bench_map(i, a, 1);
	} else {
		ret = -EINVAL;
	}
	if (ret)
		scnprintf(result, sizeof(result), "error %d\n", ret);
	mutex_unlock(&bench_lock);
	return ret ?: len;
}

static ssize_t run_read(struct file *file, char __user *ubuf, size_t len,
			loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&bench_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, result, strlen(result));
	mutex_unlock(&bench_lock);
	return ret;
}

static const struct file_operations run_fops = {
	.owner = THIS_MODULE,
	.read = run_read,
	.write = run_write,
	.llseek = default_llseek,
};

static int __init iommu_pt_bench_init(void)
{
	bench_dir = debugfs_create_dir("iommu_pt_bench", NULL);
	debugfs_create_file("run", 0600, bench_dir, NULL, &run_fops);
	return 0;
}

static void __exit iommu_pt_bench_exit(void)
{
	debugfs_remove_recursive(bench_dir);
}

module_init(iommu_pt_bench_init);
module_exit(iommu_pt_bench_exit);
MODULE_DESCRIPTION("Benchmarks of IOMMU page-table page allocation");
MODULE_LICENSE("GPL");
