// SPDX-License-Identifier: GPL-2.0

//! The pool of spare table pages, per NUMA node, and the provider callbacks.
//!
//! A page is in one of three places:
//!
//! - `clean`: a [`ZeroedPage`], ready to become a table;
//! - live: a raw `struct page` owned by C, a table that an IOMMU may walk. No Rust object refers
//!   to it, so nothing in this module can touch or recycle it;
//! - `dirty`: an [`Owned<ExclusivePage>`] with stale entries, which C returned through
//!   [`TablePageProvider::recycle`] once no IOMMU can walk it. The refill worker zeroes it; when
//!   a request finds no clean page, the request zeroes a dirty one itself, which costs what the
//!   C allocator's `__GFP_ZERO` costs and saves the trip through the page allocator.
//!
//! Every path that runs from C ([`IommuPt::alloc`], [`IommuPt::recycle`]) only pops or pushes
//! within reserved capacity under an IRQ-safe spinlock: it never allocates and never sleeps.

use crate::{
    params::Limits,
    refill::Refiller,
    stats::Stats, //
};
use core::fmt;
use kernel::{
    alloc::{
        flags::{
            GFP_KERNEL,
            GFP_NOWAIT,
            __GFP_NOWARN,
            __GFP_THISNODE, //
        },
        Flags,
        NumaNode, //
    },
    iommu::pages::{
        TablePageProvider,
        ZeroedPage, //
    },
    mm::shrinker::{
        ShrinkControl,
        Shrinker, //
    },
    page::ExclusivePage,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc, //
    },
    time::{
        Instant,
        Monotonic, //
    },
    types::Owned,
    workqueue::OwnedQueue,
};

/// The most NUMA nodes the pool keeps pages for; requests for other nodes go to C.
const MAX_NODES: usize = 64;

/// Spare pages of one NUMA node.
///
/// # Invariants
///
/// `clean.len() + dirty.len() <= capacity`, and both vectors have room for `capacity` elements,
/// so pushing a page within the limit never allocates.
pub(crate) struct NodePool {
    clean: KVec<ZeroedPage>,
    dirty: KVec<Owned<ExclusivePage>>,
    capacity: usize,
}

impl NodePool {
    fn new(capacity: usize) -> Result<Self> {
        // INVARIANT: Both vectors are empty and have room for `capacity` pages.
        Ok(Self {
            clean: KVec::with_capacity(capacity, GFP_KERNEL)?,
            dirty: KVec::with_capacity(capacity, GFP_KERNEL)?,
            capacity,
        })
    }

    fn len(&self) -> usize {
        self.clean.len() + self.dirty.len()
    }

    fn push_clean(&mut self, page: ZeroedPage) -> Result<(), ZeroedPage> {
        if self.len() >= self.capacity {
            return Err(page);
        }
        self.clean.push_within_capacity(page).map_err(|e| e.0)
    }

    /// Takes a spare page to give back to the page allocator, a dirty one first.
    fn take_spare(&mut self) -> Option<Owned<ExclusivePage>> {
        self.dirty
            .pop()
            .or_else(|| self.clean.pop().map(ZeroedPage::into_inner))
    }

    fn push_dirty(&mut self, page: Owned<ExclusivePage>) -> Result<(), Owned<ExclusivePage>> {
        if self.len() >= self.capacity {
            return Err(page);
        }
        self.dirty.push_within_capacity(page).map_err(|e| e.0)
    }
}

/// The state behind [`POOL`].
pub(crate) struct PoolState {
    limits: Option<Limits>,
    /// The node of the CPU that loaded the module, used for `NUMA_NO_NODE` requests.
    home: usize,
    /// Indexed by node id; `None` until the worker creates the node's pool.
    nodes: KVec<Option<NodePool>>,
    /// Bit `n` set: node `n` was asked for and has no pool yet (`MAX_NODES` is 64).
    wanted: u64,
    queue: Option<OwnedQueue>,
    refiller: Option<Arc<Refiller>>,
}

impl PoolState {
    const EMPTY: Self = Self {
        limits: None,
        home: 0,
        nodes: KVec::new(),
        wanted: 0,
        queue: None,
        refiller: None,
    };

    fn node_index(&self, nid: NumaNode) -> usize {
        nid.id().unwrap_or(self.home)
    }

    fn node(&mut self, idx: usize) -> Option<&mut NodePool> {
        self.nodes.get_mut(idx).and_then(Option::as_mut)
    }

    /// Starts the refill worker, unless it is already queued.
    fn kick(&self) {
        if let (Some(queue), Some(refiller)) = (&self.queue, &self.refiller) {
            // An `Err` means the work is already queued, which is all we want.
            let _ = queue.enqueue(refiller.clone());
        }
    }

    /// The pool's size limits, once initialised.
    pub(crate) fn limits(&self) -> Option<Limits> {
        self.limits
    }

    /// Counts clean and dirty pages over all nodes.
    pub(crate) fn counts(&self) -> (usize, usize) {
        self.nodes
            .iter()
            .flatten()
            .fold((0, 0), |(c, d), n| (c + n.clean.len(), d + n.dirty.len()))
    }

    /// The number of pages the pool holds for `nid`.
    pub(crate) fn node_len(&self, nid: NumaNode) -> usize {
        let idx = self.node_index(nid);
        self.nodes
            .get(idx)
            .and_then(Option::as_ref)
            .map_or(0, NodePool::len)
    }
}

kernel::sync::global_lock! {
    // SAFETY: `init()` is called in `pool::init()`, the first thing module init does with it.
    pub(crate) unsafe(uninit) static POOL: SpinLockIrq<PoolState> = PoolState::EMPTY;
}

/// The pool's counters.
pub(crate) static STATS: Stats = Stats::new();

/// 1 if tables freed as all zero are checked (`zero_check=1`), set at load.
static ZERO_CHECK: Atomic<u32> = Atomic::new(0);

/// Sets up the pool and fills the home node's share up to the high watermark.
pub(crate) fn init(limits: Limits) -> Result {
    // SAFETY: Called once per module load, before anything else uses `POOL`.
    unsafe { POOL.init() };
    ZERO_CHECK.store(u32::from(limits.zero_check()), Relaxed);

    let mut nodes = KVec::with_capacity(MAX_NODES, GFP_KERNEL)?;
    for _ in 0..MAX_NODES {
        nodes.push(None, GFP_KERNEL)?;
    }
    // The page allocator's choice for `NUMA_NO_NODE` is the node of this CPU.
    let home = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
    let home_idx = usize::try_from(home.nid()).map_err(|_| EINVAL)?;
    if home_idx >= MAX_NODES {
        pr_err!("node {home_idx} is beyond the {MAX_NODES} nodes the pool supports\n");
        return Err(EINVAL);
    }
    let mut home_pool = NodePool::new(limits.capacity())?;
    home_pool.push_clean(home).map_err(|_| EINVAL)?;
    nodes[home_idx] = Some(home_pool);

    let queue = OwnedQueue::new(c"iommu_pt", OwnedQueue::UNBOUND)?;
    let refiller = Refiller::new()?;
    {
        let mut pool = POOL.lock();
        pool.limits = Some(limits);
        pool.home = home_idx;
        pool.nodes = nodes;
        pool.queue = Some(queue);
        pool.refiller = Some(refiller);
    }
    refill();
    Ok(())
}

/// Stops the worker and frees every spare page. Called after the provider is unregistered, so
/// no callback runs any more.
pub(crate) fn exit() {
    let (queue, refiller, nodes) = {
        let mut pool = POOL.lock();
        (
            pool.queue.take(),
            pool.refiller.take(),
            core::mem::take(&mut pool.nodes),
        )
    };
    drop(refiller);
    // Destroying the queue runs a still queued refill to completion. It finds no nodes.
    drop(queue);
    // Frees the spare pages and the vectors, outside the spinlock.
    drop(nodes);
}

/// A spare page taken for a request.
enum Spare {
    Clean(ZeroedPage),
    Dirty(Owned<ExclusivePage>),
}

/// The provider of table pages: this module's pool.
pub(crate) struct IommuPt;

impl TablePageProvider for IommuPt {
    fn alloc(nid: NumaNode, _flags: Flags) -> Option<ZeroedPage> {
        STATS.allocs.add(1, Relaxed);
        let page = {
            let mut pool = POOL.lock();
            let idx = pool.node_index(nid);
            let low = pool.limits.map_or(0, |l| l.low());
            let (page, kick) = match pool.node(idx) {
                Some(node) => match node.clean.pop() {
                    // Start the worker once, when the clean pages fall below the low
                    // watermark: not on every request below it.
                    Some(page) => (Some(Spare::Clean(page)), node.clean.len() + 1 == low),
                    // Out of clean pages: the worker stopped short (a refill failed) or
                    // cannot keep up; ask again.
                    None => (node.dirty.pop().map(Spare::Dirty), true),
                },
                None if idx < MAX_NODES => {
                    pool.wanted |= 1 << idx;
                    (None, true)
                }
                None => (None, false),
            };
            if kick {
                pool.kick();
            }
            page
        };
        let page = match page {
            Some(Spare::Clean(page)) => page,
            Some(Spare::Dirty(page)) => {
                // Outside the spinlock; zeroing does not sleep.
                STATS.zeroed_on_alloc.add(1, Relaxed);
                ZeroedPage::zero(page)
            }
            None => {
                STATS.fallbacks.add(1, Relaxed);
                return None;
            }
        };
        STATS.hits.add(1, Relaxed);
        STATS.outstanding.add(1, Relaxed);
        Some(page)
    }

    fn recycle_zeroed(page: ZeroedPage) {
        if ZERO_CHECK.load(Relaxed) != 0 && !is_all_zero(&page).unwrap_or(false) {
            // generic_pt said it cleared every entry and did not: count it, say so once, and
            // take the page as stale, so that it is zeroed before it serves another table.
            if STATS.zero_check_failures.load(Relaxed) == 0 {
                pr_err!(
                    "table page {:#x} was freed as all zero and is not\n",
                    page.pfn()
                );
            }
            STATS.zero_check_failures.add(1, Relaxed);
            IommuPt::recycle(page.into_inner());
            return;
        }
        STATS.frees.add(1, Relaxed);
        STATS.frees_zeroed.add(1, Relaxed);
        STATS.outstanding.add(-1, Relaxed);
        // A table generic_pt emptied entry by entry: clean as it is, no zeroing to do.
        if !put_clean(page) {
            STATS.frees_over_capacity.add(1, Relaxed);
        }
    }

    fn recycle(page: Owned<ExclusivePage>) {
        STATS.frees.add(1, Relaxed);
        STATS.outstanding.add(-1, Relaxed);
        let idx = usize::try_from(page.nid()).unwrap_or(usize::MAX);
        let over = {
            let mut pool = POOL.lock();
            let res = match pool.node(idx) {
                // The worker zeroes until `dirty` is empty, so only the first dirty page needs
                // to start it: the free path does not queue work for every table.
                Some(node) => node.push_dirty(page).map(|()| node.dirty.len() == 1),
                None => Err(page),
            };
            if matches!(res, Ok(true)) {
                pool.kick();
            }
            res.err()
        };
        if let Some(page) = over {
            STATS.frees_over_capacity.add(1, Relaxed);
            // Freed to the page allocator, outside the spinlock.
            drop(page);
        }
    }
}

/// Zeroes the dirty pages, creates a wanted node's pool, and fills every node's pool up to the
/// high watermark. Runs in the refill worker, and once at load; may sleep.
///
/// The time it takes is counted in `worker_ns`: work moved off the table allocation and free
/// paths is not work saved, and benchmarks report it.
pub(crate) fn refill() {
    let start = Instant::<Monotonic>::now();
    STATS.worker_runs.add(1, Relaxed);
    refill_pages();
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(0);
    STATS.worker_ns.add(ns, Relaxed);
}

fn refill_pages() {
    // Zero returned pages one at a time, outside the spinlock.
    loop {
        let dirty = {
            let mut pool = POOL.lock();
            pool.nodes
                .iter_mut()
                .flatten()
                .find_map(|node| node.dirty.pop())
        };
        let Some(page) = dirty else {
            break;
        };
        let page = ZeroedPage::zero(page);
        STATS.zeroed.add(1, Relaxed);
        put_clean(page);
    }

    let (wanted, limits) = {
        let mut pool = POOL.lock();
        (core::mem::take(&mut pool.wanted), pool.limits)
    };
    let Some(limits) = limits else {
        return;
    };
    for idx in (0..MAX_NODES).filter(|idx| wanted & (1 << idx) != 0) {
        if let Ok(node) = NodePool::new(limits.capacity()) {
            let mut pool = POOL.lock();
            if let Some(slot) = pool.nodes.get_mut(idx) {
                if slot.is_none() {
                    *slot = Some(node);
                }
            }
        }
    }

    for idx in 0..MAX_NODES {
        // At most the high watermark per node and run: the loop ends even if pages keep going.
        for _ in 0..limits.high() {
            let short = {
                let mut pool = POOL.lock();
                pool.node(idx).is_some_and(|n| n.len() < limits.high())
            };
            if !short {
                break;
            }
            let Ok(nid) = NumaNode::new(idx as i32) else {
                break;
            };
            // Never reclaim to refill: that would only run the pool's own shrinker. Only pages
            // of this node: a node short of memory is not refilled from another one.
            let flags = GFP_NOWAIT | __GFP_NOWARN | __GFP_THISNODE;
            let Ok(page) = ZeroedPage::alloc_node(nid, flags) else {
                break;
            };
            if usize::try_from(page.nid()) != Ok(idx) {
                // Cannot happen with `__GFP_THISNODE`; never file a page under another node.
                break;
            }
            STATS.refills.add(1, Relaxed);
            put_clean(page);
        }
    }
}

/// Gives the pool's spare pages back to the page allocator under memory pressure.
pub(crate) struct PoolShrinker;

impl Shrinker for PoolShrinker {
    fn count(sc: &ShrinkControl<'_>) -> usize {
        POOL.lock().node_len(sc.nid())
    }

    fn scan(sc: &mut ShrinkControl<'_>) -> Option<usize> {
        let nid = sc.nid();
        let mut freed = 0;
        while freed < sc.nr_to_scan() {
            let page = {
                let mut pool = POOL.lock();
                let idx = pool.node_index(nid);
                pool.node(idx).and_then(NodePool::take_spare)
            };
            let Some(page) = page else {
                break;
            };
            // Freed outside the spinlock.
            drop(page);
            freed += 1;
        }
        STATS.shrunk.add(freed as u64, Relaxed);
        // Every spare page of the node was looked at. With nothing freed, stop: reporting zero
        // pages scanned instead would make reclaim call again forever.
        (freed > 0).then_some(freed)
    }
}

/// Whether every byte of `page` is zero; the check behind `zero_check=1`.
pub(crate) fn is_all_zero(page: &ExclusivePage) -> Result<bool> {
    let mut buf = [0u8; 512];
    for offset in (0..kernel::page::PAGE_SIZE).step_by(buf.len()) {
        page.read(&mut buf, offset)?;
        if buf.iter().any(|&b| b != 0) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Puts a zeroed page into its node's pool, or frees it if the pool is full (then returns
/// `false`).
fn put_clean(page: ZeroedPage) -> bool {
    let idx = usize::try_from(page.nid()).unwrap_or(usize::MAX);
    let rejected = {
        let mut pool = POOL.lock();
        match pool.node(idx) {
            Some(node) => node.push_clean(page).err(),
            None => Some(page),
        }
    };
    // Freed to the page allocator, outside the spinlock.
    rejected.is_none()
}

/// Writes the statistics file.
pub(crate) fn show(f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (clean, dirty) = POOL.lock().counts();
    STATS.show(clean, dirty, f)
}

/// Writes the page frame numbers of the spare pages, clean and dirty, one per line.
///
/// Tests compare them with the table frames an IOMMU domain uses, to show that its tables came
/// from the pool.
pub(crate) fn show_spare(f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let pool = POOL.lock();
    for node in pool.nodes.iter().flatten() {
        for page in &node.clean {
            writeln!(f, "{:#x}", page.pfn())?;
        }
        for page in &node.dirty {
            writeln!(f, "{:#x}", page.pfn())?;
        }
    }
    Ok(())
}
