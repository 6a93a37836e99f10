// SPDX-License-Identifier: GPL-2.0

//! The provider of generic_pt table pages, and its registration with the shrinker and CPU
//! hotplug.

use crate::{
    hotplug::PoolHotplug,
    live::{
        self,
        Publication, //
    },
    pool::Pool,
    shrinker::PoolShrinker, //
};
use kernel::{
    alloc::{
        Flags,
        NumaNode, //
    },
    cpuhp,
    iommu::pages::{
        Registration,
        TablePageProvider,
        ZeroedPage, //
    },
    mm::shrinker,
    page::ExclusivePage,
    prelude::*,
    sync::Arc,
    types::Owned,
};

/// The provider of table pages: the published pool.
pub(crate) struct IommuPt;

impl TablePageProvider for IommuPt {
    fn alloc(nid: NumaNode, _flags: Flags) -> Option<ZeroedPage> {
        // SAFETY: A provider callback.
        let live = unsafe { live::get() }?;
        let (page, kick) = live.pool.alloc(nid);
        if kick {
            live.kick();
        }
        page
    }

    fn recycle(page: Owned<ExclusivePage>) {
        // SAFETY: A provider callback.
        if let Some(live) = unsafe { live::get() } {
            if live.pool.free_dirty(page) {
                live.kick();
            }
        }
    }

    fn recycle_zeroed(page: ZeroedPage) {
        // SAFETY: A provider callback.
        if let Some(live) = unsafe { live::get() } {
            if live.pool.free_zeroed(page) {
                live.kick();
            }
        }
    }
}

/// The pool, serving generic_pt and the shrinker for as long as this lives.
///
/// Dropping it unregisters the provider and the shrinker first, which waits for their running
/// callbacks, then the CPU hotplug callbacks, and only then unpublishes the pool and stops its
/// worker.
pub(crate) struct Provider {
    // Dropped in this order.
    _registration: Registration<IommuPt>,
    _shrinker: shrinker::Registration<PoolShrinker>,
    _hotplug: cpuhp::Registration<PoolHotplug>,
    _publication: Publication,
}

impl Provider {
    /// Publishes `pool` and registers it as the provider of table pages and as a shrinker.
    pub(crate) fn start(pool: Arc<Pool>) -> Result<Self> {
        // Before the pool serves: a CPU that goes offline from now on leaves nothing behind.
        let hotplug = cpuhp::Registration::new(c"iommu_pt:dead", PoolHotplug(pool.clone()))?;
        let publication = Publication::new(pool)?;
        let shrinker = shrinker::Registration::new(c"iommu_pt", shrinker::NUMA_AWARE)?;
        let registration = Registration::new().inspect_err(|e| {
            pr_err!("cannot become the provider of table pages ({e:?}): is another one loaded?\n");
        })?;
        Ok(Self {
            _registration: registration,
            _shrinker: shrinker,
            _hotplug: hotplug,
            _publication: publication,
        })
    }
}
