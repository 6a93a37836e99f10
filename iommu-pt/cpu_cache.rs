// SPDX-License-Identifier: GPL-2.0

//! The cache of spare pages of one CPU: the pool's fast path.
//!
//! Each CPU keeps a few clean and dirty pages of its memory node in two small arrays, used only
//! on that CPU with local interrupts disabled (through [`kernel::percpu::PerCpu::with_local`]).
//! An allocation or a free that the arrays can serve touches nothing shared. The arrays take and
//! give pages from and to the node's depot in batches of [`BATCH`], as SLUB's sheaves do with
//! its barns.

use crate::stats::Counters;
use kernel::{
    alloc::NumaNode,
    cpu::CpuId,
    iommu::pages::ZeroedPage,
    page::ExclusivePage,
    prelude::*,
    types::Owned, //
};

/// The most pages of each kind (clean, dirty) a CPU keeps.
pub(crate) const CACHE_PAGES: usize = 64;

/// The pages moved at once between a CPU's cache and its node's depot.
pub(crate) const BATCH: usize = CACHE_PAGES / 2;

/// The spare pages and counters of one CPU.
///
/// # Invariants
///
/// Both vectors have room for [`CACHE_PAGES`] elements, so pushing within that bound never
/// allocates. They hold pages of node `node` only: callers push no other.
pub(crate) struct CpuCache {
    node: usize,
    pub(crate) clean: KVec<ZeroedPage>,
    pub(crate) dirty: KVec<Owned<ExclusivePage>>,
    pub(crate) counters: Counters,
}

impl CpuCache {
    /// Makes the empty cache of `cpu`, for pages of the node of its memory.
    pub(crate) fn new(cpu: CpuId) -> Result<Self> {
        // A CPU whose node cannot be told keeps no pages: every request goes to the depots.
        let node = cpu.mem_node().id().unwrap_or(usize::MAX);
        // INVARIANT: Both vectors are empty, with room for `CACHE_PAGES` pages.
        Ok(Self {
            node,
            clean: KVec::with_capacity(CACHE_PAGES, GFP_KERNEL)?,
            dirty: KVec::with_capacity(CACHE_PAGES, GFP_KERNEL)?,
            counters: Counters::default(),
        })
    }

    /// The node whose pages this cache holds.
    pub(crate) fn node(&self) -> usize {
        self.node
    }

    /// Whether a request for `nid` is one for this cache's node.
    pub(crate) fn serves(&self, nid: NumaNode) -> bool {
        nid.id().is_none_or(|id| id == self.node)
    }

    /// Whether a page of node `nid` belongs in this cache.
    pub(crate) fn holds(&self, nid: i32) -> bool {
        usize::try_from(nid) == Ok(self.node)
    }

    /// Keeps a clean page of this cache's node, or gives it back if the array is full.
    pub(crate) fn push_clean(&mut self, page: ZeroedPage) -> Result<(), ZeroedPage> {
        if self.clean.len() >= CACHE_PAGES {
            return Err(page);
        }
        self.clean.push_within_capacity(page).map_err(|e| e.0)
    }

    /// Keeps a dirty page of this cache's node, or gives it back if the array is full.
    pub(crate) fn push_dirty(
        &mut self,
        page: Owned<ExclusivePage>,
    ) -> Result<(), Owned<ExclusivePage>> {
        if self.dirty.len() >= CACHE_PAGES {
            return Err(page);
        }
        self.dirty.push_within_capacity(page).map_err(|e| e.0)
    }
}
