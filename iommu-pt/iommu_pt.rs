// SPDX-License-Identifier: GPL-2.0

//! iommu-pt: a pool of IOMMU page-table pages for generic_pt domains.
//!
//! The module registers itself as the provider of the order-0 table pages that generic_pt
//! allocates for IOMMU paging domains, such as the Intel VT-d ones. Spare pages wait in a per-node
//! pool as zeroed [`kernel::page::ExclusivePage`]s. A table page comes back to the pool when
//! generic_pt frees it after the IOTLB flush, as an `Owned<FreedTablePage>` whose
//! `Ownable::release()` recycles it; a worker zeroes it and keeps the pool between its
//! watermarks.
//!
//! Statistics are in `/sys/kernel/debug/iommu_pt/stats`, the frame numbers of the spare pages
//! in `/sys/kernel/debug/iommu_pt/spare_pfns`.

use kernel::{
    debugfs::{
        Dir,
        File, //
    },
    iommu::pages::Registration,
    mm::shrinker,
    prelude::*,
};

mod params;
mod pool;
mod refill;
mod stats;
#[cfg(CONFIG_KUNIT)]
mod tests;

module! {
    type: IommuPtModule,
    name: "iommu_pt",
    authors: ["iommu-pt developers"],
    description: "Pool of IOMMU page-table pages for generic_pt domains",
    license: "GPL",
    params: {
        capacity: u32 {
            default: 1024,
            description: "Most spare table pages kept per NUMA node (1..=262144)",
        },
        low_watermark: u32 {
            default: 32,
            description: "Refill a node's pool when it has fewer clean pages than this (>= 1)",
        },
        high_watermark: u32 {
            default: 256,
            description: "Refill a node's pool up to this many pages (> low, <= capacity)",
        },
        zero_check: u32 {
            default: 0,
            description: "1: check that every table freed as all zero is, counting failures (0 or 1)",
        },
    },
}

struct IommuPtModule {
    /// Always `Some` until `drop`, which unregisters before it empties the pool.
    registration: Option<Registration<pool::IommuPt>>,
    /// Always `Some` until `drop`, which unregisters it before it empties the pool.
    shrinker: Option<shrinker::Registration<pool::PoolShrinker>>,
    _stats: Pin<KBox<File<()>>>,
    _spare_pfns: Pin<KBox<File<()>>>,
    _dir: Dir,
}

impl kernel::Module for IommuPtModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let limits = params::Limits::new(
            module_parameters::capacity.value(),
            module_parameters::low_watermark.value(),
            module_parameters::high_watermark.value(),
            module_parameters::zero_check.value(),
        )?;
        pool::init(limits)?;

        let dir = Dir::new(c"iommu_pt");
        let stats = KBox::pin_init(
            dir.read_callback_file(c"stats", (), &|(), f| pool::show(f)),
            GFP_KERNEL,
        );
        let spare_pfns = KBox::pin_init(
            dir.read_callback_file(c"spare_pfns", (), &|(), f| pool::show_spare(f)),
            GFP_KERNEL,
        );
        let (stats, spare_pfns) = match (stats, spare_pfns) {
            (Ok(stats), Ok(spare_pfns)) => (stats, spare_pfns),
            (Err(e), _) | (_, Err(e)) => {
                pool::exit();
                return Err(e);
            }
        };
        let shrinker = match shrinker::Registration::new(c"iommu_pt", shrinker::NUMA_AWARE) {
            Ok(shrinker) => shrinker,
            Err(e) => {
                pool::exit();
                return Err(e);
            }
        };
        let registration = match Registration::new() {
            Ok(registration) => registration,
            Err(e) => {
                pr_err!(
                    "cannot become the provider of table pages ({e:?}): is another one loaded?\n"
                );
                drop(shrinker);
                pool::exit();
                return Err(e);
            }
        };
        pr_info!(
            "providing generic_pt table pages (capacity {}, watermarks {}..{})\n",
            limits.capacity(),
            limits.low(),
            limits.high()
        );
        Ok(Self {
            registration: Some(registration),
            shrinker: Some(shrinker),
            _stats: stats,
            _spare_pfns: spare_pfns,
            _dir: dir,
        })
    }
}

impl Drop for IommuPtModule {
    fn drop(&mut self) {
        // Unregistering waits until no callback runs; only then can the pool be emptied.
        drop(self.registration.take());
        drop(self.shrinker.take());
        pool::exit();
        let outstanding = pool::STATS.outstanding.load(kernel::sync::atomic::Relaxed);
        pr_info!("unloaded; {outstanding} table pages stay in live domains and go back to C\n");
    }
}
