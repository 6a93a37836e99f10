// SPDX-License-Identifier: GPL-2.0

//! The pool of spare table pages: a cache per CPU in front of a depot per NUMA node.
//!
//! A page is in one of three places:
//!
//! - spare, in a CPU's cache or a node's depot: clean (a [`ZeroedPage`], ready to become a
//!   table) or dirty (an [`Owned<ExclusivePage>`] with stale entries, zeroed before reuse);
//! - live: a raw `struct page` owned by C, a table that an IOMMU may walk. No Rust object refers
//!   to it, so nothing in this module can touch or recycle it;
//! - on its way back: C returns a table through the provider only once no IOMMU can walk it, as
//!   a clean page if generic_pt cleared every entry, else as a dirty one.
//!
//! Requests and frees use the current CPU's cache under its local lock: without PREEMPT_RT, with
//! local interrupts disabled, no lock, no atomic instruction, no shared cache line; with
//! PREEMPT_RT, a per-CPU `spinlock_t` with migration disabled, so that the depot's `spinlock_t`
//! may be taken inside. The cache takes from and gives to its node's depot in batches, under the
//! depot's lock; a batch the depot has no room for goes back to the page allocator without the
//! lock being taken. Nothing on these paths allocates, and pages are freed to the page allocator
//! only once the local lock is released.
//!
//! When a CPU goes offline, its cache's pages go to its node's depot and its counters to the
//! pool's ([`Pool::cpu_dead`]), as the page allocator's `page_alloc_cpu_dead()` does.

use crate::{
    cpu_cache::{
        CpuCache,
        BATCH,
        CACHE_PAGES, //
    },
    depot::{
        Depot,
        DepotPages, //
    },
    params::Limits,
    stats::{
        self,
        CounterSum,
        Counters,
        SpareCounts,
        WorkerStats, //
    },
};
use core::{
    fmt,
    mem::MaybeUninit,
    ptr::NonNull, //
};
use kernel::{
    alloc::{
        flags::GFP_KERNEL,
        NumaNode, //
    },
    bindings,
    cpu::CpuId,
    cpuhp::{
        OfflineCpu,
        ReadGuard, //
    },
    iommu::pages::ZeroedPage,
    page::ExclusivePage,
    percpu::PerCpu,
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Relaxed,
            Release, //
        },
        Arc,
    },
    types::Owned,
};

/// The pool: its limits, the CPUs' caches and the nodes' depots.
pub(crate) struct Pool {
    limits: Limits,
    /// The page allocator checks freed pages (debug_pagealloc, init_on_free, page poisoning,
    /// KASAN): the pool keeps no page, so that a table used after its free stays visible to
    /// those checks. Every request is left to C and every free goes back to it.
    bypass: bool,
    caches: PerCpu<CpuCache>,
    /// Indexed by node id, one for every id `NumaNode::new()` accepts.
    depots: KVec<Pin<KBox<Depot>>>,
    pub(crate) worker_stats: WorkerStats,
    /// The counters of the CPUs that went offline.
    retired: CounterSum,
    /// What each CPU's cache holds, by CPU index, for the shrinker to count without reaching
    /// the CPUs.
    hints: KVec<CacheHint>,
    /// Room for every page the CPUs' caches can hold, where the shrinker's drain puts the pages
    /// it takes out of them from an interrupt (as raw `struct page` pointers); one drain at a
    /// time, the one that set `draining`.
    drain_slots: KVec<Atomic<usize>>,
    draining: Atomic<bool>,
    /// The pool is being torn down: the worker stops waiting and returns.
    stopping: Atomic<bool>,
}

/// The spare pages of one CPU's cache and their node, as of the cache's last change: written
/// (plain stores) only under the cache's local lock, read without it. On a cache line of its own,
/// so that a CPU's stores do not bounce another's line.
#[repr(align(64))]
struct CacheHint {
    pages: Atomic<usize>,
    node: Atomic<usize>,
}

/// A spare page taken for a request.
enum Spare {
    Clean(ZeroedPage),
    Dirty(Owned<ExclusivePage>),
}

/// Pages that a free found no room for, freed to the page allocator once interrupts are enabled
/// again, when this is dropped.
///
/// It lives in the frame of [`Pool::free`] and is filled through a reference: an array of
/// `Option`s returned from the per-CPU closure would be initialised and copied on every free,
/// even the ones that spill nothing.
///
/// # Invariants
///
/// The first `len` elements of `pages` are initialised, and `len <= SPILL`.
struct Spill {
    pages: [MaybeUninit<Owned<ExclusivePage>>; SPILL],
    len: usize,
}

/// A full batch and the page being freed.
const SPILL: usize = BATCH + 1;

impl Spill {
    fn new() -> Self {
        // INVARIANT: No element is initialised, and `len` is 0.
        Self {
            pages: [const { MaybeUninit::uninit() }; SPILL],
            len: 0,
        }
    }

    /// The pages kept to be freed.
    fn len(&self) -> usize {
        self.len
    }

    /// Keeps `page` to be freed.
    fn push(&mut self, page: Owned<ExclusivePage>) {
        match self.pages.get_mut(self.len) {
            Some(slot) => {
                slot.write(page);
                // INVARIANT: The element at the old `len` was just initialised.
                self.len += 1;
            }
            // Cannot happen: at most a batch and one page are spilled. Freed at once instead.
            None => drop(page),
        }
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        // `take()`, not a slice: `len <= SPILL` (type invariant) needs no bounds check here.
        for slot in self.pages.iter_mut().take(self.len) {
            // SAFETY: The first `len` elements are initialised (type invariant), and each is
            // dropped once: `self` is not used after this.
            unsafe { slot.assume_init_drop() };
        }
    }
}

impl Pool {
    /// Makes an empty pool with the given limits, whose depot of the current CPU's node is set
    /// up. The worker ([`crate::refill::run`]) fills it. With `bypass`, the pool keeps no page
    /// and leaves everything to C, as it must while
    /// [`kernel::page::page_allocator_checks_freed_pages()`].
    pub(crate) fn new(limits: Limits, bypass: bool) -> Result<Arc<Self>> {
        let mut caches = PerCpu::new(GFP_KERNEL, |cpu| CpuCache::new(cpu, !bypass))?;
        let nr_cpus = kernel::cpu::nr_cpu_ids() as usize;
        let mut hints = KVec::with_capacity(nr_cpus, GFP_KERNEL)?;
        while hints
            .push_within_capacity(CacheHint {
                pages: Atomic::new(0),
                node: Atomic::new(usize::MAX),
            })
            .is_ok()
        {}
        caches.for_each_mut(|_cpu, cache| {
            if let Some(hint) = hints.get(cache.cpu()) {
                hint.node.store(cache.node(), Relaxed);
            }
        });
        let mut drain_slots = KVec::with_capacity(nr_cpus * 2 * CACHE_PAGES, GFP_KERNEL)?;
        while drain_slots
            .push_within_capacity(Atomic::new(0usize))
            .is_ok()
        {}
        let mut depots = KVec::new();
        for id in 0.. {
            if NumaNode::new(id).is_err() {
                break;
            }
            depots.push(KBox::pin_init(Depot::new(), GFP_KERNEL)?, GFP_KERNEL)?;
        }
        let pool = Self {
            limits,
            bypass,
            caches,
            depots,
            worker_stats: WorkerStats::new(),
            retired: CounterSum::new(),
            hints,
            drain_slots,
            draining: Atomic::new(false),
            stopping: Atomic::new(false),
        };
        if let Some(home) = CpuId::current().mem_node().id().filter(|_| !bypass) {
            pool.depot(home).ok_or(EINVAL)?.set_up(limits.capacity())?;
        }
        Ok(Arc::new(pool, GFP_KERNEL)?)
    }

    /// Sets up the depot of the node of every possible CPU, offline ones included, so that each
    /// CPU's cache has a depot from its first request on; the worker fills them. Without it a
    /// CPU of another node than the loading one would find no depot, and its first requests
    /// would go to C until the worker had set one up. May sleep.
    pub(crate) fn set_up_cpu_nodes(&self) -> Result {
        if self.bypass {
            return Ok(());
        }
        for hint in &self.hints {
            if let Some(depot) = self.depot(hint.node.load(Relaxed)) {
                depot.set_up(self.limits.capacity())?;
            }
        }
        Ok(())
    }

    /// The pool's limits.
    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Tells the worker to stop: the pool is being torn down.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Relaxed);
    }

    /// Whether the pool is being torn down.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.load(Relaxed)
    }

    /// Whether the pool keeps no page because the page allocator checks freed ones.
    pub(crate) fn bypassed(&self) -> bool {
        self.bypass
    }

    /// The depot of node `idx`.
    pub(crate) fn depot(&self, idx: usize) -> Option<&Depot> {
        self.depots.get(idx).map(|depot| &**depot)
    }

    /// The depots, with their node ids.
    pub(crate) fn depots(&self) -> impl Iterator<Item = (usize, &Depot)> {
        self.depots.iter().map(|depot| &**depot).enumerate()
    }

    /// Takes a zeroed page of node `nid` for a table, or `None` to leave the request to C.
    /// Returns also whether the worker should run.
    pub(crate) fn alloc(&self, nid: NumaNode) -> (Option<ZeroedPage>, bool) {
        let taken = self.caches.with_local(|cache| {
            cache.counters.allocs += 1;
            // A bypassed pool's caches are of no node and its depots are not set up: the paths
            // below find no page for it.
            let (spare, mut kick) = if cache.serves(nid) {
                match cache.clean.pop() {
                    Some(page) => (Some(Spare::Clean(page)), false),
                    None => {
                        let kick = self.refill_cache(cache);
                        let spare = cache
                            .clean
                            .pop()
                            .map(Spare::Clean)
                            .or_else(|| cache.dirty.pop().map(Spare::Dirty));
                        (spare, kick)
                    }
                }
            } else {
                // Another node's page: from its depot, under its lock. generic_pt asks for the
                // IOMMU's node, so on a host of two sockets this is every request of the CPUs
                // of the other one (`bench/`'s `k_remote_*`).
                nid.id()
                    .map_or((None, false), |idx| self.take_from_depot(idx))
            };
            match spare {
                Some(Spare::Clean(_)) => cache.counters.hits += 1,
                Some(Spare::Dirty(_)) => {
                    cache.counters.hits += 1;
                    cache.counters.zeroed_on_alloc += 1;
                }
                None => {
                    // C leaves this provider alone for the rest of the tick (patch "Leave a
                    // provider that ran dry alone until the next tick"). Tell the worker that
                    // demand goes on.
                    cache.counters.fallbacks += 1;
                    let idx = nid.id().unwrap_or(cache.node());
                    if let Some(depot) = self.depot(idx).filter(|_| !self.bypass) {
                        kick |= note_fallback(depot);
                    }
                }
            }
            (spare, kick)
        });
        match taken {
            Some((Some(Spare::Clean(page)), kick)) => (Some(page), kick),
            // Zeroed with interrupts enabled again.
            Some((Some(Spare::Dirty(page)), kick)) => (Some(ZeroedPage::zero(page)), kick),
            Some((None, kick)) => (None, kick),
            // This CPU's cache is in use further up the call chain: cannot happen from C.
            None => (None, false),
        }
    }

    /// Moves a batch of pages from the depot of `cache`'s node into `cache`: clean ones if the
    /// depot has any, else dirty ones. Returns whether the worker should run.
    fn refill_cache(&self, cache: &mut CpuCache) -> bool {
        let Some(depot) = self.depot(cache.node()) else {
            return false;
        };
        if !depot.may_have_pages() {
            return false;
        }
        depot.busy.raise();
        if !cache.dirty.is_empty() && !depot.may_have_clean() {
            // Nothing clean to take, and dirty pages of its own: zeroing one of those costs what
            // zeroing one of the depot's would, without the shared lock. Under sustained demand
            // (every table coming back dirty) the lock was taken for nothing on every request.
            return false;
        }
        let low = self.limits.low();
        let mut pages = depot.lock();
        let before = pages.clean.len();
        while cache.clean.len() < BATCH {
            let Some(page) = pages.clean.pop() else {
                break;
            };
            if let Err(page) = cache.push_clean(page) {
                // Cannot happen: the array has room for a batch. Back to the depot.
                let _ = pages.push_clean(page);
                break;
            }
        }
        if cache.clean.is_empty() {
            while cache.dirty.len() < BATCH {
                let Some(page) = pages.dirty.pop() else {
                    break;
                };
                if let Err(page) = cache.push_dirty(page) {
                    let _ = pages.push_dirty(page);
                    break;
                }
            }
        }
        let after = pages.clean.len();
        drop(pages);
        cache.counters.cache_refills += 1;
        // The cache grew: the shrinker must see it (`note_grown()` says why a request that only
        // takes a page leaves the hint as it is).
        self.note_cached(cache);
        // Only when the clean pages fall below the low watermark, not on every batch below it.
        before >= low && after < low
    }

    /// Takes one page from the depot of node `idx`, a clean one first. Returns also whether the
    /// worker should run: the page taken was the one that left the depot's clean pages below the
    /// low watermark, as `refill_cache()` tells for a batch. Without it a depot that only
    /// CPUs of other nodes use would be refilled only once they ran it dry.
    fn take_from_depot(&self, idx: usize) -> (Option<Spare>, bool) {
        let Some(depot) = self.depot(idx) else {
            return (None, false);
        };
        if !depot.may_have_pages() {
            return (None, false);
        }
        // In use: the worker waits for its quiet period before it zeroes or refills.
        depot.busy.raise();
        let mut pages = depot.lock();
        let clean = pages.clean.len();
        match pages.clean.pop() {
            Some(page) => (Some(Spare::Clean(page)), clean == self.limits.low()),
            None => (pages.dirty.pop().map(Spare::Dirty), false),
        }
    }

    /// Takes back a table that generic_pt cleared entry by entry: clean as it is.
    ///
    /// With `zero_check=1`, the page is checked first; one that is not all zero is counted and
    /// taken back as dirty.
    pub(crate) fn free_zeroed(&self, page: ZeroedPage) -> bool {
        if self.limits.zero_check() && !is_all_zero(&page).unwrap_or(false) {
            self.caches.with_local(|cache| {
                if cache.counters.zero_check_failures == 0 {
                    pr_err!(
                        "table page {:#x} was freed as all zero and is not\n",
                        page.pfn()
                    );
                }
                cache.counters.zero_check_failures += 1;
            });
            return self.free(Spare::Dirty(page.into_inner()));
        }
        self.free(Spare::Clean(page))
    }

    /// Takes back a table with stale entries.
    pub(crate) fn free_dirty(&self, page: Owned<ExclusivePage>) -> bool {
        self.free(Spare::Dirty(page))
    }

    /// Takes back a table, into this CPU's cache if it can, and returns whether the worker
    /// should run.
    fn free(&self, page: Spare) -> bool {
        let mut page = Some(page);
        let mut spill = Spill::new();
        let kick = self.caches.with_local(|cache| {
            let Some(page) = page.take() else {
                return false;
            };
            cache.counters.frees += 1;
            if matches!(page, Spare::Clean(_)) {
                cache.counters.frees_zeroed += 1;
            }
            // A bypassed pool's caches hold no node's pages and its depots are not set up: the
            // page goes to `spill`.
            let mut kick = false;
            let nid = match &page {
                Spare::Clean(p) => p.nid(),
                Spare::Dirty(p) => p.nid(),
            };
            let page = if cache.holds(nid) {
                match self.push_local(cache, page) {
                    Ok(()) => {
                        self.note_grown(cache);
                        return false;
                    }
                    Err(page) => {
                        // The array is full: a batch goes to the depot, or back to C.
                        kick = self.spill_cache(cache, &page, &mut spill);
                        self.push_local(cache, page)
                    }
                }
            } else {
                Err(page)
            };
            if let Err(page) = page {
                // Another node's page (or, cannot happen, a cache still full): to its depot.
                kick |= self.give_to_depot(nid, page, &mut spill);
            }
            cache.counters.frees_over_capacity += spill.len() as u64;
            self.note_cached(cache);
            kick
        });
        // The spilled pages are freed when `spill` goes, with interrupts enabled again.
        match kick {
            Some(kick) => kick,
            None => {
                // This CPU's cache is in use further up the call chain: cannot happen from C.
                // The page goes to the page allocator; the counters miss it.
                drop(page);
                false
            }
        }
    }

    /// Publishes how many spare pages `cache` holds, for the shrinker to count.
    fn note_cached(&self, cache: &mut CpuCache) {
        self.publish(cache, cache.len());
    }

    /// Raises what `cache`'s hint says if the cache grew past it: to the next multiple of
    /// [`BATCH`], so that frees that fill a cache one page after the other store once a batch.
    /// The hint may stay above what the cache holds (requests take pages without publishing,
    /// and a free that leaves the cache below the hint need not), which is harmless: the
    /// shrinker drains the caches, which makes the hints exact. Below would hide pages from
    /// reclaim. A free into a cache below its hint, the common case, stores nothing.
    #[inline]
    fn note_grown(&self, cache: &mut CpuCache) {
        let pages = cache.len();
        if pages > cache.published() {
            self.publish(cache, pages.next_multiple_of(BATCH));
        }
    }

    /// Tells the shrinker that `cache` holds at most `pages`: a plain store to the CPU's own
    /// cache line.
    #[cold]
    fn publish(&self, cache: &mut CpuCache, pages: usize) {
        if let Some(hint) = self.hints.get(cache.cpu()) {
            hint.pages.store(pages, Relaxed);
        }
        cache.set_published(pages);
    }

    /// The spare pages the caches of the CPUs of node `idx` hold, as of their last change.
    pub(crate) fn cpu_cached(&self, idx: usize) -> usize {
        self.hints
            .iter()
            .filter(|hint| hint.node.load(Relaxed) == idx)
            .map(|hint| hint.pages.load(Relaxed))
            .sum()
    }

    /// Gives the spare pages of the caches of the CPUs of node `idx` back to the page allocator,
    /// as the shrinker does once the node's depot is empty; returns how many. May sleep.
    ///
    /// Each CPU moves its pages into slots it claims, as raw pages, from an interrupt (without
    /// PREEMPT_RT), where neither the depot's lock nor the page allocator may be used; they are
    /// freed here afterwards. Returns 0 at once if another drain is running.
    pub(crate) fn drain_cpu_caches(&self, idx: usize) -> usize {
        if self.cpu_cached(idx) == 0 || self.draining.cmpxchg(false, true, Acquire).is_err() {
            return 0;
        }
        let claimed = Atomic::new(0usize);
        self.caches.on_each_cpu(|_cpu, cache| {
            if cache.node() != idx {
                return;
            }
            let start = claimed.fetch_add(cache.len(), Relaxed);
            for slot in self.drain_slots.iter().skip(start) {
                let Some(page) = cache.take_spare() else {
                    break;
                };
                slot.store(
                    ExclusivePage::into_raw_page(page).as_ptr() as usize,
                    Relaxed,
                );
            }
            self.note_cached(cache);
        });
        // `on_each_cpu()` returns after every CPU's call completed: the stores are visible.
        let mut freed = 0;
        for slot in self.drain_slots.iter().take(claimed.load(Relaxed)) {
            let Some(raw) = NonNull::new(slot.xchg(0, Relaxed) as *mut bindings::page) else {
                continue;
            };
            // SAFETY: `raw` came from `into_raw_page()` above, which gave up a spare page of the
            // pool: no CPU or device uses it, and its only reference was stored in this slot
            // alone, taken out once by the `xchg()`.
            drop(unsafe { ExclusivePage::from_raw_page(raw) });
            freed += 1;
        }
        self.draining.store(false, Release);
        freed
    }

    /// Puts `page` into `cache`, or gives it back if its array is full.
    fn push_local(&self, cache: &mut CpuCache, page: Spare) -> Result<(), Spare> {
        match page {
            Spare::Clean(p) => cache.push_clean(p).map_err(Spare::Clean),
            Spare::Dirty(p) => cache.push_dirty(p).map_err(Spare::Dirty),
        }
    }

    /// Moves a batch of pages of the kind of `like` from `cache` to its node's depot. What the
    /// depot has no room for goes to `out`, and if the depot looks full, it is not even locked.
    /// Returns whether the worker should run (the depot got its first dirty pages).
    #[cold]
    fn spill_cache(&self, cache: &mut CpuCache, like: &Spare, out: &mut Spill) -> bool {
        cache.counters.cache_spills += 1;
        let clean = matches!(like, Spare::Clean(_));
        if let Some(depot) = self.depot(cache.node()) {
            depot.busy.raise();
        }
        let depot = self
            .depot(cache.node())
            .filter(|d| d.is_set_up() && !d.seems_full());
        let Some(depot) = depot else {
            for _ in 0..BATCH {
                let page = if clean {
                    cache.clean.pop().map(ZeroedPage::into_inner)
                } else {
                    cache.dirty.pop()
                };
                match page {
                    Some(page) => out.push(page),
                    None => break,
                }
            }
            return false;
        };
        let mut pages = depot.lock();
        let had_dirty = !pages.dirty.is_empty();
        for _ in 0..BATCH {
            let rejected = if clean {
                let Some(page) = cache.clean.pop() else {
                    break;
                };
                pages.push_clean(page).err().map(ZeroedPage::into_inner)
            } else {
                let Some(page) = cache.dirty.pop() else {
                    break;
                };
                pages.push_dirty(page).err()
            };
            if let Some(page) = rejected {
                out.push(page);
            }
        }
        !clean && !had_dirty && !pages.dirty.is_empty()
    }

    /// Gives `page`, of node `nid`, to that node's depot, or to `out` if the depot has no
    /// room. Returns whether the worker should run.
    fn give_to_depot(&self, nid: i32, page: Spare, out: &mut Spill) -> bool {
        let depot = usize::try_from(nid).ok().and_then(|idx| self.depot(idx));
        let Some(depot) = depot else {
            out.push(into_page(page));
            return false;
        };
        if self.bypass {
            out.push(into_page(page));
            return false;
        }
        depot.busy.raise();
        if !depot.is_set_up() {
            out.push(into_page(page));
            return note_fallback(depot);
        }
        let mut pages = depot.lock();
        let rejected = file(&mut pages, page).err();
        let kick = rejected.is_none() && pages.dirty.len() == 1;
        drop(pages);
        if let Some(page) = rejected {
            out.push(page);
        }
        kick
    }

    /// Sums the counters of every CPU, offline ones included, and counts the spare pages. May
    /// sleep.
    ///
    /// CPU hotplug is held off meanwhile, so that a CPU that went offline is seen either in its
    /// cache or in what [`Pool::cpu_dead`] moved, never in neither or both. Without PREEMPT_RT,
    /// each CPU adds its own counters from an interrupt, all at once: atomic additions, no lock
    /// (a `spinlock_t` there is an invalid wait context).
    pub(crate) fn snapshot(&self) -> (Counters, SpareCounts) {
        let _hotplug = ReadGuard::lock();
        let sum = CounterSum::new();
        sum.add(&self.retired.load());
        let cpu_clean = Atomic::new(0usize);
        let cpu_dirty = Atomic::new(0usize);
        self.caches.on_each_cpu(|_cpu, cache| {
            sum.add(&cache.counters);
            cpu_clean.add(cache.clean.len(), Relaxed);
            cpu_dirty.add(cache.dirty.len(), Relaxed);
        });
        // `on_each_cpu()` returns after every CPU's call completed (an acquire on each): the
        // additions are visible to relaxed loads.
        let mut spare = SpareCounts {
            cpu_clean: cpu_clean.load(Relaxed),
            cpu_dirty: cpu_dirty.load(Relaxed),
            ..SpareCounts::default()
        };
        for (_, depot) in self.depots() {
            depot.count(&mut spare);
        }
        (sum.load(), spare)
    }

    /// Takes back what `cpu`, gone offline, left in its cache: its pages into its node's depot,
    /// those the depot has no room for to the page allocator, and its counters into the pool's.
    /// Called from the CPU hotplug callback that runs after the CPU died.
    pub(crate) fn cpu_dead(&self, cpu: &OfflineCpu<'_>) {
        // Made before the cache is emptied: holds what the depot has no room for until it is
        // freed below, after the locks. If it cannot be made, those pages are freed at once.
        let mut rejected = KVec::with_capacity(2 * CACHE_PAGES, GFP_KERNEL).unwrap_or_default();
        let mut moved = 0u64;
        let mut freed = 0u64;
        self.caches.with_offline(cpu, |cache| {
            self.retired.add(&core::mem::take(&mut cache.counters));
            if cache.len() == 0 {
                return;
            }
            let mut pages = self
                .depot(cache.node())
                .filter(|depot| depot.is_set_up())
                .map(Depot::lock);
            let spares = core::iter::from_fn(|| {
                cache
                    .clean
                    .pop()
                    .map(Spare::Clean)
                    .or_else(|| cache.dirty.pop().map(Spare::Dirty))
            });
            for page in spares {
                let page = match pages.as_mut() {
                    Some(pages) => file(pages, page),
                    None => Err(into_page(page)),
                };
                if let Err(page) = page {
                    freed += 1;
                    if let Err(e) = rejected.push_within_capacity(page) {
                        drop(e.0);
                    }
                } else {
                    moved += 1;
                }
            }
            drop(pages);
            self.note_cached(cache);
        });
        drop(rejected);
        self.worker_stats.cpu_dead_moved.add(moved, Relaxed);
        self.worker_stats.cpu_dead_freed.add(freed, Relaxed);
    }

    /// Makes the cache of `cpu`, about to come up, one for its memory node. Called from the CPU
    /// hotplug callback that runs before the CPU comes up.
    pub(crate) fn cpu_prepare(&self, cpu: &OfflineCpu<'_>) {
        self.caches.with_offline(cpu, |cache| {
            // A bypassed pool's cache stays of no node.
            cache.set_node(cpu.id());
            if let Some(hint) = self.hints.get(cache.cpu()) {
                hint.node.store(cache.node(), Relaxed);
            }
        });
    }

    /// Writes the statistics file.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (counters, spare) = self.snapshot();
        stats::show(&counters, &self.worker_stats, &spare, f)?;
        writeln!(f, "bypass {}", u8::from(self.bypass))
    }

    /// Writes the page frame numbers of the spare pages, in the CPUs' caches and in the depots,
    /// one per line. Must be called with interrupts enabled.
    ///
    /// Tests compare them with the table frames an IOMMU domain uses, to show that its tables
    /// came from the pool.
    pub(crate) fn show_spare(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A slot for every page of every CPU's full cache. Each CPU claims a range of them and
        // writes its pages' frame numbers there, from an interrupt: no lock, as in `snapshot()`.
        let room = kernel::cpu::nr_cpu_ids() as usize * 2 * CACHE_PAGES;
        let mut slots = KVec::with_capacity(room, GFP_KERNEL).map_err(|_| fmt::Error)?;
        while slots.push_within_capacity(Atomic::new(0usize)).is_ok() {}
        let claimed = Atomic::new(0usize);
        let _hotplug = ReadGuard::lock();
        self.caches.on_each_cpu(|_cpu, cache| {
            let start = claimed.fetch_add(cache.clean.len() + cache.dirty.len(), Relaxed);
            let mut slots = slots.iter().skip(start);
            let clean = cache.clean.iter().map(|page| page.pfn());
            let dirty = cache.dirty.iter().map(|page| page.pfn());
            // The pages first: `zip()` takes a slot only for a page it has.
            for (pfn, slot) in clean.zip(slots.by_ref()) {
                slot.store(pfn, Relaxed);
            }
            for (pfn, slot) in dirty.zip(slots) {
                slot.store(pfn, Relaxed);
            }
        });
        for slot in slots.iter().take(claimed.load(Relaxed)) {
            writeln!(f, "{:#x}", slot.load(Relaxed))?;
        }
        for (_, depot) in self.depots() {
            let pages = depot.lock();
            for page in &pages.clean {
                writeln!(f, "{:#x}", page.pfn())?;
            }
            for page in &pages.dirty {
                writeln!(f, "{:#x}", page.pfn())?;
            }
        }
        Ok(())
    }
}

/// Notes that a request for `depot`'s node fell back to C. Returns whether the worker should
/// run: to set up a depot that is not.
///
/// Only a depot that exists can have been run dry: a fallback for want of a depot asks for one,
/// which the worker then fills. Otherwise a node whose CPUs give no table back (a node of memory
/// only, or the IOMMU's node seen from the other socket) would never be served.
#[cold]
fn note_fallback(depot: &Depot) -> bool {
    depot.busy.raise();
    if !depot.is_set_up() {
        return depot.wanted.raise();
    }
    depot.drained.raise();
    false
}

/// Files `page` in a depot's pages, as clean or dirty, or gives it back if the depot is full.
fn file(pages: &mut DepotPages, page: Spare) -> Result<(), Owned<ExclusivePage>> {
    match page {
        Spare::Clean(p) => pages.push_clean(p).map_err(ZeroedPage::into_inner),
        Spare::Dirty(p) => pages.push_dirty(p),
    }
}

fn into_page(page: Spare) -> Owned<ExclusivePage> {
    match page {
        Spare::Clean(p) => p.into_inner(),
        Spare::Dirty(p) => p,
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
