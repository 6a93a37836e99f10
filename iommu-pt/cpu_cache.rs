// SPDX-License-Identifier: GPL-2.0

//! The cache of spare pages of one CPU: the pool's fast path.
//!
//! Each CPU keeps a few clean and dirty pages of its memory node in two small arrays, used only
//! on that CPU under its local lock (through [`kernel::percpu::PerCpu::with_local`]), or while
//! it is offline, by the CPU hotplug callbacks (`crate::hotplug`).
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
/// Both vectors have a capacity of [`CACHE_PAGES`] elements exactly, so a push within it never
/// allocates and none goes past it. They hold pages of node `node` only: callers push no other.
/// A cache of no node (`usize::MAX`: its CPU's node unknown, or `keeps_pages` false) serves no
/// request from its arrays and takes no page into them.
pub(crate) struct CpuCache {
    /// The CPU's index, below `nr_cpu_ids`: its slot in [`crate::pool::Pool`]'s hints.
    cpu: usize,
    node: usize,
    /// False for the caches of a bypassed pool, which stay of no node.
    keeps_pages: bool,
    /// What the cache's hint in [`crate::pool::Pool`] last said it holds.
    published: usize,
    pub(crate) clean: KVec<ZeroedPage>,
    pub(crate) dirty: KVec<Owned<ExclusivePage>>,
    pub(crate) counters: Counters,
}

impl CpuCache {
    /// Makes the empty cache of `cpu`, for pages of the node of its memory, or, unless
    /// `keeps_pages`, one that never holds a page: a bypassed pool's, whose fast path then takes
    /// the slow one with no test of its own.
    pub(crate) fn new(cpu: CpuId, keeps_pages: bool) -> Result<Self> {
        let node = node_of(cpu, keeps_pages);
        let clean = KVec::with_capacity(CACHE_PAGES, GFP_KERNEL)?;
        let dirty = KVec::with_capacity(CACHE_PAGES, GFP_KERNEL)?;
        if clean.capacity() != CACHE_PAGES || dirty.capacity() != CACHE_PAGES {
            return Err(EINVAL);
        }
        // INVARIANT: Both vectors are empty, of capacity `CACHE_PAGES`.
        Ok(Self {
            cpu: cpu.as_u32() as usize,
            node,
            keeps_pages,
            published: 0,
            clean,
            dirty,
            counters: Counters::default(),
        })
    }

    /// The node whose pages this cache holds.
    pub(crate) fn node(&self) -> usize {
        self.node
    }

    /// The index of the cache's CPU.
    pub(crate) fn cpu(&self) -> usize {
        self.cpu
    }

    /// The spare pages the cache holds.
    pub(crate) fn len(&self) -> usize {
        self.clean.len() + self.dirty.len()
    }

    /// What the cache's hint last said it holds.
    pub(crate) fn published(&self) -> usize {
        self.published
    }

    /// Records that the cache's hint now says `pages`.
    pub(crate) fn set_published(&mut self, pages: usize) {
        self.published = pages;
    }

    /// Takes a spare page, a clean one first, as the shrinker gives them back.
    pub(crate) fn take_spare(&mut self) -> Option<Owned<ExclusivePage>> {
        self.clean
            .pop()
            .map(ZeroedPage::into_inner)
            .or_else(|| self.dirty.pop())
    }

    /// Makes the cache one for the node of `cpu`'s memory, which may have become known since
    /// the cache was made. Only an empty cache changes node: its pages must stay of its node.
    pub(crate) fn set_node(&mut self, cpu: CpuId) {
        if self.clean.is_empty() && self.dirty.is_empty() {
            // INVARIANT: The cache holds no page.
            self.node = node_of(cpu, self.keeps_pages);
        }
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
        // At most `CACHE_PAGES`: the capacity (type invariant).
        self.clean.push_within_capacity(page).map_err(|e| e.0)
    }

    /// Keeps a dirty page of this cache's node, or gives it back if the array is full.
    pub(crate) fn push_dirty(
        &mut self,
        page: Owned<ExclusivePage>,
    ) -> Result<(), Owned<ExclusivePage>> {
        // At most `CACHE_PAGES`: the capacity (type invariant).
        self.dirty.push_within_capacity(page).map_err(|e| e.0)
    }
}

/// The node of `cpu`'s memory, or none (`usize::MAX`) if it cannot be told, when the cache is
/// to keep no page: every request then goes to the depots.
fn node_of(cpu: CpuId, keeps_pages: bool) -> usize {
    match cpu.mem_node().id() {
        Some(id) if keeps_pages => id,
        _ => usize::MAX,
    }
}
