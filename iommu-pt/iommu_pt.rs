// SPDX-License-Identifier: GPL-2.0

//! iommu-pt: a pool of IOMMU page-table pages for generic_pt domains.
//!
//! The module registers itself as the provider of the order-0 table pages that generic_pt
//! allocates for IOMMU paging domains, such as the Intel VT-d ones. Spare pages wait in a cache
//! per CPU and a depot per NUMA node as [`kernel::page::ExclusivePage`]s. A table page comes back
//! when generic_pt frees it after the IOTLB flush, as an `Owned<FreedTablePage>` whose
//! `Ownable::release()` recycles it: clean if generic_pt cleared every entry, else dirty, to be
//! zeroed before reuse.
//!
//! Statistics are in `/sys/kernel/debug/iommu_pt/stats`, the frame numbers of the spare pages
//! in `/sys/kernel/debug/iommu_pt/spare_pfns`.

use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    page::page_allocator_checks_freed_pages,
    prelude::*,
    sync::Arc,
};

mod cpu_cache;
mod depot;
mod hotplug;
mod live;
mod params;
mod pool;
mod provider;
mod refill;
mod shrinker;
mod stats;
#[cfg(CONFIG_KUNIT)]
mod tests;
mod worker;

module! {
    type: IommuPtModule,
    name: "iommu_pt",
    authors: ["iommu-pt developers"],
    description: "Pool of IOMMU page-table pages for generic_pt domains",
    license: "GPL",
    params: {
        capacity: u32 {
            default: 1024,
            description: "Most spare table pages in a NUMA node's depot (1..=262144); each CPU caches up to 128 more",
        },
        low_watermark: u32 {
            default: 32,
            description: "Refill a node's depot when it has fewer clean pages than this (>= 1)",
        },
        high_watermark: u32 {
            default: 256,
            description: "Refill a node's depot up to this many pages (> low, <= capacity)",
        },
        zero_check: u32 {
            default: 0,
            description: "1: check that every table freed as all zero is, counting failures (0 or 1)",
        },
        prefill: u32 {
            default: 1,
            description: "1: pre-fill the depots from the page allocator and pre-zero the tables given back, in quiet periods; 0: neither, the pool keeps only the tables given back (0 or 1)",
        },
    },
}

struct IommuPtModule {
    /// Always `Some` until `drop`, which stops the provider before anything else goes.
    provider: Option<provider::Provider>,
    _stats: Pin<KBox<File<Arc<pool::Pool>>>>,
    _spare_pfns: Pin<KBox<File<Arc<pool::Pool>>>>,
    _dir: Dir,
    pool: Arc<pool::Pool>,
}

impl kernel::Module for IommuPtModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let limits = params::Limits::new(
            module_parameters::capacity.value(),
            module_parameters::low_watermark.value(),
            module_parameters::high_watermark.value(),
            module_parameters::zero_check.value(),
        )?
        .with_prefill(module_parameters::prefill.value())?;
        let pool = pool::Pool::new(limits, page_allocator_checks_freed_pages())?;
        // Fill the depots of the CPUs' nodes before the first request (with `prefill`).
        pool.set_up_cpu_nodes()?;
        refill::refill_now(&pool);

        let dir = Dir::new(c"iommu_pt");
        let stats = KBox::pin_init(
            dir.read_callback_file(c"stats", pool.clone(), &|pool, f| pool.show(f)),
            GFP_KERNEL,
        )?;
        let spare_pfns = KBox::pin_init(
            dir.read_callback_file(c"spare_pfns", pool.clone(), &|pool, f| pool.show_spare(f)),
            GFP_KERNEL,
        )?;
        let provider = provider::Provider::start(pool.clone())?;
        if pool.bypassed() {
            pr_info!(
                "the page allocator checks freed pages (debug_pagealloc, init_on_free, page \
                 poisoning or KASAN): the pool keeps none and leaves every table to it\n"
            );
        }
        pr_info!(
            "providing generic_pt table pages (capacity {}, watermarks {}..{}, {})\n",
            limits.capacity(),
            limits.low(),
            limits.high(),
            if limits.prefill() {
                "pre-filled"
            } else {
                "no pre-fill"
            }
        );
        Ok(Self {
            provider: Some(provider),
            _stats: stats,
            _spare_pfns: spare_pfns,
            _dir: dir,
            pool,
        })
    }
}

impl Drop for IommuPtModule {
    fn drop(&mut self) {
        // Unregistering waits until no callback runs; only then can the pool be emptied.
        drop(self.provider.take());
        let (counters, _) = self.pool.snapshot();
        let outstanding = counters.outstanding();
        pr_info!("unloaded; {outstanding} table pages stay in live domains and go back to C\n");
    }
}
