// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the pool, run when the module loads.
//!
//! Each test builds a pool of its own, which no IOMMU domain uses: its counters are exact.

use kernel::prelude::*;

#[kunit_tests(iommu_pt_pool)]
mod pool_tests {
    use crate::{
        cpu_cache::{
            BATCH,
            CACHE_PAGES, //
        },
        depot::Depot,
        params::{
            Limits,
            MAX_CAPACITY, //
        },
        pool::{
            self,
            Pool, //
        },
        refill,
    };
    use core::cell::Cell;
    use kernel::{
        alloc::{
            flags::{
                GFP_KERNEL,
                __GFP_NOWARN,
                __GFP_THISNODE, //
            },
            NumaNode,
        },
        cpu::CpuId,
        iommu::pages::ZeroedPage,
        new_spinlock_irq,
        page::{
            ExclusivePage,
            PAGE_SIZE, //
        },
        percpu::MigrationDisabled,
        prelude::*,
        str::CString,
        sync::{
            atomic::Relaxed,
            Arc, //
        },
        types::Owned,
    };

    /// A private pool of at most `capacity` pages in the depot, filled up to `high`.
    fn filled_pool(capacity: u32, low: u32, high: u32, zero_check: u32) -> Result<Arc<Pool>> {
        let pool = Pool::new(Limits::new(capacity, low, high, zero_check)?, false)?;
        refill::refill_now(&pool);
        Ok(pool)
    }

    /// Takes pages until the pool has none left or `pages` holds `max`, all on one CPU.
    /// Allocates nothing (`pages` must have room).
    fn drain_into(pool: &Pool, pages: &mut KVec<ZeroedPage>, max: usize) {
        let one_cpu = MigrationDisabled::new();
        while pages.len() < max {
            let Some(page) = pool.alloc(NumaNode::NO_NODE).0 else {
                break;
            };
            if let Err(e) = pages.push_within_capacity(page) {
                pool.free_zeroed(e.0);
                break;
            }
        }
        drop(one_cpu);
    }

    /// Takes pages until the pool has none left, at most `max`, all on one CPU.
    fn drain(pool: &Pool, max: usize) -> Result<KVec<ZeroedPage>> {
        let mut pages = KVec::with_capacity(max, GFP_KERNEL)?;
        drain_into(pool, &mut pages, max);
        Ok(pages)
    }

    fn is_zero(page: &ExclusivePage) -> Result<bool> {
        let mut buf = [0xffu8; 256];
        for offset in (0..PAGE_SIZE).step_by(buf.len()) {
            page.read(&mut buf, offset)?;
            if buf.iter().any(|&b| b != 0) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn dirty(page: ZeroedPage) -> Result<Owned<ExclusivePage>> {
        let mut page = page.into_inner();
        page.as_pin_mut().write(&[0x5a; 64], PAGE_SIZE - 64)?;
        page.as_pin_mut().write(&[0xa5; 64], 0)?;
        Ok(page)
    }

    /// The node of the current CPU's memory. Call with migration disabled.
    fn home_node() -> Result<usize> {
        CpuId::current().mem_node().id().ok_or(ENODEV)
    }

    /// The node with id `idx`.
    fn node(idx: usize) -> Result<NumaNode> {
        NumaNode::new(i32::try_from(idx).map_err(|_| EINVAL)?)
    }

    /// A node other than `home` that the page allocator has pages of.
    ///
    /// The KUnit stage boots two nodes (`qemu/run-guest.sh --numa`). Rust's KUnit cannot skip a
    /// case at run time, so on a guest with one node the cases that need a second one fail, and
    /// say why.
    fn other_node(home: usize) -> Result<usize> {
        for id in 0.. {
            let Ok(nid) = NumaNode::new(id) else {
                break;
            };
            if usize::try_from(id) == Ok(home) {
                continue;
            }
            let flags = GFP_KERNEL | __GFP_THISNODE | __GFP_NOWARN;
            if ZeroedPage::alloc_node(nid, flags).is_ok_and(|page| page.nid() == id) {
                return usize::try_from(id).map_err(|_| EINVAL);
            }
        }
        pr_err!("this case needs a second NUMA node with memory (qemu/run-guest.sh --numa)\n");
        Err(ENODEV)
    }

    /// The current CPU's node and another node with memory, with the depots of both set up and
    /// filled, whichever CPU made `pool`. Call with migration disabled, for the first to stay
    /// this CPU's node.
    fn fill_two_nodes(pool: &Pool) -> Result<(usize, usize)> {
        let home = home_node()?;
        let remote = other_node(home)?;
        for idx in [home, remote] {
            pool.depot(idx).ok_or(EINVAL)?.set_up(64)?;
        }
        refill::refill_now(pool);
        Ok((home, remote))
    }

    /// The pages the CPUs' caches hold, counted on each CPU (the shrinker's hints may say more).
    fn cpu_cache_pages(pool: &Pool) -> usize {
        let (_, spare) = pool.snapshot();
        spare.cpu_clean + spare.cpu_dirty
    }

    /// The node of each page in the depot of node `idx`, as (pages, pages of another node).
    fn depot_nodes(pool: &Pool, idx: usize) -> Result<(usize, usize)> {
        let pages = pool.depot(idx).ok_or(EINVAL)?.lock();
        let nids = pages.clean.iter().map(|p| p.nid());
        let mut counts = (0, 0);
        for nid in Iterator::chain(nids, pages.dirty.iter().map(|p| p.nid())) {
            counts.0 += 1;
            counts.1 += usize::from(usize::try_from(nid) != Ok(idx));
        }
        Ok(counts)
    }

    #[test]
    fn limits_refuse_bad_values() {
        assert!(Limits::new(0, 1, 2, 0).is_err());
        assert!(Limits::new(MAX_CAPACITY + 1, 1, 2, 0).is_err());
        assert!(Limits::new(u32::MAX, 1, 2, 0).is_err());
        assert!(Limits::new(16, 0, 8, 0).is_err());
        assert!(Limits::new(16, 8, 8, 0).is_err());
        assert!(Limits::new(16, 9, 8, 0).is_err());
        assert!(Limits::new(16, 4, 17, 0).is_err());
        assert!(Limits::new(16, 4, 16, 2).is_err());
        assert!(Limits::new(16, 4, 16, 0).is_ok());
        assert!(Limits::new(16, 4, 16, 1).is_ok_and(|l| l.zero_check()));
        assert!(Limits::new(MAX_CAPACITY, 1, MAX_CAPACITY, 0).is_ok());
        let limits = Limits::new(16, 4, 16, 0);
        assert!(limits.is_ok_and(|l| l.prefill()));
        assert!(limits.and_then(|l| l.with_prefill(2)).is_err());
        assert!(limits
            .and_then(|l| l.with_prefill(0))
            .is_ok_and(|l| !l.prefill()));
    }

    #[test]
    fn without_prefill_the_pool_keeps_only_the_tables_given_back() -> Result {
        let pool = Pool::new(Limits::new(64, 4, 32, 0)?.with_prefill(0)?, false)?;
        let one_cpu = MigrationDisabled::new();
        let home = node(home_node()?)?;
        pool.set_up_cpu_nodes()?;
        refill::refill_now(&pool);
        // Nothing was filled: the first request goes to C.
        let first = pool.alloc(home).0;
        let given = dirty(ZeroedPage::alloc_node(home, GFP_KERNEL | __GFP_THISNODE)?)?;
        let pfn = given.pfn();
        pool.free_dirty(given);
        // Neither filled nor zeroed by the worker's run: the table given back is handed out
        // again, zeroed then.
        refill::refill_now(&pool);
        let second = pool.alloc(home).0.ok_or(ENOMEM)?;
        drop(one_cpu);
        let (counters, spare) = pool.snapshot();
        assert!(first.is_none());
        assert_eq!(second.pfn(), pfn);
        assert!(is_zero(&second)?);
        assert_eq!(
            (counters.hits, counters.fallbacks, counters.zeroed_on_alloc),
            (1, 1, 1)
        );
        assert_eq!(pool.worker_stats.refills.load(Relaxed), 0);
        assert_eq!(pool.worker_stats.zeroed.load(Relaxed), 0);
        assert_eq!(
            spare.clean + spare.dirty + spare.cpu_clean + spare.cpu_dirty,
            0
        );
        Ok(())
    }

    #[test]
    fn fill_reaches_the_high_watermark() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let (_, spare) = pool.snapshot();
        assert_eq!(spare.clean, 32);
        assert_eq!(pool.worker_stats.refills.load(Relaxed), 32);
        Ok(())
    }

    #[test]
    fn alloc_free_round_trip() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let page = pool.alloc(NumaNode::NO_NODE).0.ok_or(ENOMEM)?;
        assert!(is_zero(&page)?);
        pool.free_dirty(page.into_inner());
        let (counters, _) = pool.snapshot();
        assert_eq!(counters.allocs, 1);
        assert_eq!(counters.hits, 1);
        assert_eq!(counters.frees, 1);
        assert_eq!(counters.outstanding(), 0);
        Ok(())
    }

    #[test]
    fn dirty_pages_come_out_zeroed() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let pages = drain(&pool, 1024)?;
        assert_eq!(pages.len(), 32);
        let mut dirty_pages = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for page in pages {
            dirty_pages.push(dirty(page)?, GFP_KERNEL)?;
        }
        let mut again = KVec::with_capacity(1024, GFP_KERNEL)?;
        // On the CPU that drains them again below.
        let one_cpu = MigrationDisabled::new();
        for page in dirty_pages {
            pool.free_dirty(page);
        }
        drain_into(&pool, &mut again, 1024);
        drop(one_cpu);
        assert_eq!(again.len(), 32);
        for page in again.iter() {
            assert!(is_zero(page)?);
        }
        let (counters, _) = pool.snapshot();
        assert_eq!(counters.zeroed_on_alloc, 32);
        Ok(())
    }

    #[test]
    fn the_worker_zeroes_returned_pages() -> Result {
        let pool = filled_pool(1024, 4, 32, 0)?;
        let pages = drain(&pool, 32)?;
        let mut dirty_pages = KVec::with_capacity(CACHE_PAGES + BATCH, GFP_KERNEL)?;
        for page in pages {
            dirty_pages.push(dirty(page)?, GFP_KERNEL)?;
        }
        while dirty_pages.len() < CACHE_PAGES + BATCH {
            let page = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
            dirty_pages.push(dirty(page)?, GFP_KERNEL)?;
        }
        // On one CPU: the cache fills with dirty pages and spills a batch to the depot.
        let one_cpu = MigrationDisabled::new();
        for page in dirty_pages {
            pool.free_dirty(page);
        }
        drop(one_cpu);
        let (_, spare) = pool.snapshot();
        assert_eq!(spare.dirty, BATCH);
        refill::refill_now(&pool);
        assert_eq!(pool.worker_stats.zeroed.load(Relaxed), BATCH as u64);
        let (_, spare) = pool.snapshot();
        assert_eq!(spare.dirty, 0);
        assert_eq!(spare.clean, 32);
        // Everything in the depot is clean now: take it, through a cache that holds no clean page.
        let mut taken = 0;
        let one_cpu = MigrationDisabled::new();
        let mut zero = true;
        while taken < 32 {
            let Some(page) = pool.alloc(NumaNode::NO_NODE).0 else {
                break;
            };
            zero &= is_zero(&page).unwrap_or(false);
            taken += 1;
            drop(page);
        }
        drop(one_cpu);
        assert_eq!(taken, 32);
        assert!(zero);
        let (counters, _) = pool.snapshot();
        assert_eq!(counters.zeroed_on_alloc, 0);
        Ok(())
    }

    /// The pool's `spare_pfns` file, as debugfs shows it.
    struct SparePfns<'a>(&'a Pool);

    impl core::fmt::Display for SparePfns<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            self.0.show_spare(f)
        }
    }

    #[test]
    fn spare_pfns_list_every_spare_page_once() -> Result {
        let pool = filled_pool(1024, 4, 32, 0)?;
        // A CPU's cache takes the depot's 32 clean pages; 8 are handed out.
        let mut clean = drain(&pool, 8)?;
        let mut freed = KVec::with_capacity(clean.len(), GFP_KERNEL)?;
        for page in &clean {
            freed.push(page.pfn(), GFP_KERNEL)?;
        }
        let mut dirty_pages = KVec::with_capacity(4, GFP_KERNEL)?;
        while dirty_pages.len() < 4 {
            dirty_pages.push(dirty(clean.pop().ok_or(ENOMEM)?)?, GFP_KERNEL)?;
        }
        // Back into a CPU's cache, clean and dirty ones, beside the clean pages it holds.
        let one_cpu = MigrationDisabled::new();
        for page in dirty_pages {
            pool.free_dirty(page);
        }
        for page in clean {
            pool.free_zeroed(page);
        }
        drop(one_cpu);
        let (_, spare) = pool.snapshot();
        let total = spare.clean + spare.dirty + spare.cpu_clean + spare.cpu_dirty;
        assert_eq!(total, 32);
        assert_eq!(spare.cpu_dirty, 4);
        let text = CString::try_from_fmt(format_args!("{}", SparePfns(&pool)))?;
        let mut listed = KVec::with_capacity(total, GFP_KERNEL)?;
        for line in text.to_str().map_err(|_| EINVAL)?.lines() {
            let pfn = usize::from_str_radix(line.trim_start_matches("0x"), 16);
            listed.push(pfn.map_err(|_| EINVAL)?, GFP_KERNEL)?;
        }
        assert_eq!(listed.len(), total);
        listed.sort_unstable();
        assert!(listed.windows(2).all(|pair| pair[0] != pair[1]));
        for pfn in &freed {
            assert!(listed.binary_search(pfn).is_ok());
        }
        Ok(())
    }

    #[test]
    fn emptied_table_is_reused_without_zeroing() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let page = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
        let pfn = page.pfn();
        // On one CPU throughout: the page goes into this CPU's cache and comes straight out.
        let one_cpu = MigrationDisabled::new();
        pool.free_zeroed(page);
        let again = pool.alloc(NumaNode::NO_NODE).0;
        drop(one_cpu);
        let again = again.ok_or(ENOMEM)?;
        assert_eq!(again.pfn(), pfn);
        assert!(is_zero(&again)?);
        let (counters, _) = pool.snapshot();
        assert_eq!(counters.frees_zeroed, 1);
        assert_eq!(counters.zeroed_on_alloc, 0);
        assert_eq!(pool.worker_stats.zeroed.load(Relaxed), 0);
        Ok(())
    }

    #[test]
    fn zero_check_takes_a_dirty_page_as_dirty() -> Result {
        let mut page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        page.as_pin_mut().write(&[0x5a], PAGE_SIZE - 1)?;
        assert!(!pool::is_all_zero(&page)?);
        let page = ZeroedPage::zero(page);
        assert!(pool::is_all_zero(&page)?);
        Ok(())
    }

    #[test]
    fn a_full_cache_spills_a_batch_to_the_depot() -> Result {
        let pool = filled_pool(1024, 4, 32, 0)?;
        let mut pages = KVec::new();
        for _ in 0..=CACHE_PAGES {
            pages.push(
                ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        let one_cpu = MigrationDisabled::new();
        for page in pages {
            pool.free_zeroed(page);
        }
        drop(one_cpu);
        let (counters, spare) = pool.snapshot();
        assert_eq!(counters.cache_spills, 1);
        assert_eq!(counters.frees_over_capacity, 0);
        assert_eq!(spare.clean, 32 + BATCH);
        assert_eq!(spare.clean + spare.cpu_clean, 32 + CACHE_PAGES + 1);
        Ok(())
    }

    #[test]
    fn dirty_demand_leaves_a_depot_without_clean_pages_alone() -> Result {
        // Sustained demand with every table coming back dirty: a cache with dirty pages of its
        // own zeroes one of those rather than lock a depot that has no clean page to give.
        let pool = filled_pool(256, 4, 32, 0)?;
        let mut freed = KVec::with_capacity(32 + 2 * CACHE_PAGES, GFP_KERNEL)?;
        for page in drain(&pool, 1024)? {
            freed.push(dirty(page)?, GFP_KERNEL)?;
        }
        assert_eq!(freed.len(), 32);
        while freed.len() < 32 + CACHE_PAGES {
            freed.push(ExclusivePage::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        let (before, _) = pool.snapshot();
        let mut taken = KVec::with_capacity(CACHE_PAGES + 1, GFP_KERNEL)?;
        // All on one CPU. 96 dirty frees: its array fills at 64, spills a batch of 32 to the
        // depot, and fills again. Then 65 requests: the array's own dirty pages first, with no
        // look into the depot, which has no clean page; then one batch of the depot's.
        let one_cpu = MigrationDisabled::new();
        for page in freed {
            pool.free_dirty(page);
        }
        drain_into(&pool, &mut taken, CACHE_PAGES + 1);
        drop(one_cpu);
        let (after, spare) = pool.snapshot();
        assert_eq!(taken.len(), CACHE_PAGES + 1);
        for page in &taken {
            assert!(is_zero(page)?);
        }
        assert_eq!(after.cache_refills - before.cache_refills, 1);
        assert_eq!(
            after.zeroed_on_alloc - before.zeroed_on_alloc,
            CACHE_PAGES as u64 + 1
        );
        assert_eq!((spare.dirty, spare.cpu_dirty), (0, BATCH - 1));
        for page in taken {
            pool.free_zeroed(page);
        }
        Ok(())
    }

    #[test]
    fn a_full_depot_refuses_pages() -> Result {
        let depot = KBox::pin_init(Depot::new(), GFP_KERNEL)?;
        // Not set up: no room at all.
        let page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        assert!(depot.lock().push_dirty(page).is_err());
        depot.set_up(4)?;
        for _ in 0..3 {
            let page = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
            assert!(depot.lock().push_clean(page).is_ok());
        }
        let page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        assert!(depot.lock().push_dirty(page).is_ok());
        // Four pages, clean and dirty together: full for both kinds.
        let page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        assert!(depot.lock().push_dirty(page).is_err());
        let page = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
        assert!(depot.lock().push_clean(page).is_err());
        assert_eq!(depot.len(), 4);
        Ok(())
    }

    #[test]
    fn capacity_bounds_the_depot() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        // Fresh pages, far more than the depot and this CPU's cache can hold, freed as tables.
        let count = 64 + 2 * CACHE_PAGES + BATCH;
        let mut pages = KVec::new();
        for _ in 0..count {
            pages.push(ExclusivePage::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        for page in pages {
            pool.free_dirty(page);
        }
        let (counters, spare) = pool.snapshot();
        assert!(spare.clean + spare.dirty <= 64);
        assert!(counters.frees_over_capacity > 0);
        Ok(())
    }

    #[test]
    fn a_depot_takes_only_pages_of_its_node() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        // A node without memory, such as an id past the online nodes: the page allocator has no
        // page of it, so its depot must stay empty whatever the other nodes have.
        let empty = pool
            .depots()
            .map(|(idx, _)| idx)
            .find(|&idx| {
                i32::try_from(idx)
                    .map_err(|_| EINVAL)
                    .and_then(NumaNode::new)
                    .and_then(|nid| ZeroedPage::alloc_node(nid, GFP_KERNEL | __GFP_NOWARN))
                    .is_err_and(|e| e == EINVAL)
            })
            .ok_or(ENODEV)?;
        pool.depot(empty).ok_or(EINVAL)?.set_up(64)?;
        refill::refill_now(&pool);
        // Counted under each depot's lock, checked once it is dropped: a failed assertion ends
        // the test's thread, which must not hold a spinlock then.
        let (mut filed, mut foreign) = (0, 0);
        for (idx, depot) in pool.depots() {
            let pages = depot.lock();
            for page in &pages.clean {
                filed += 1;
                foreign += usize::from(usize::try_from(page.nid()) != Ok(idx));
            }
        }
        assert_eq!(foreign, 0);
        // The home node's depot is still full, and the empty node's has nothing.
        assert_eq!(filed, 32);
        assert_eq!(pool.depot(empty).ok_or(EINVAL)?.len(), 0);
        Ok(())
    }

    #[test]
    fn each_nodes_depot_fills_with_its_own_pages() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let one_cpu = MigrationDisabled::new();
        let (home, remote) = fill_two_nodes(&pool)?;
        drop(one_cpu);
        // Counted under each depot's lock, checked once it is dropped: a failed assertion ends
        // the test's thread, which must not hold a spinlock then.
        let at_home = depot_nodes(&pool, home)?;
        let far = depot_nodes(&pool, remote)?;
        assert_eq!(at_home, (32, 0));
        assert_eq!(far, (32, 0));
        Ok(())
    }

    #[test]
    fn requests_get_pages_of_the_node_they_name() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let one_cpu = MigrationDisabled::new();
        let (home, remote) = fill_two_nodes(&pool)?;
        let local = pool.alloc(node(home)?).0.ok_or(ENOMEM)?;
        let far = pool.alloc(node(remote)?).0.ok_or(ENOMEM)?;
        // No node named: the calling CPU's.
        let any = pool.alloc(NumaNode::NO_NODE).0.ok_or(ENOMEM)?;
        drop(one_cpu);
        let nids = [local.nid(), far.nid(), any.nid()];
        for page in [local, far, any] {
            pool.free_zeroed(page);
        }
        let (counters, _) = pool.snapshot();
        assert_eq!(nids.map(usize::try_from), [Ok(home), Ok(remote), Ok(home)]);
        assert_eq!(counters.hits, 3);
        assert_eq!(counters.fallbacks, 0);
        Ok(())
    }

    #[test]
    fn a_request_that_takes_a_depot_below_its_low_watermark_wakes_the_worker() -> Result {
        // Depots of 32 clean pages, a low watermark of 4.
        let pool = filled_pool(64, 4, 32, 0)?;
        let mut pages = KVec::with_capacity(64, GFP_KERNEL)?;
        let mut kicks = [
            KVec::with_capacity(32, GFP_KERNEL)?,
            KVec::with_capacity(32, GFP_KERNEL)?,
        ];
        let one_cpu = MigrationDisabled::new();
        let (home, remote) = fill_two_nodes(&pool)?;
        for (idx, kicked) in Iterator::zip([home, remote].into_iter(), kicks.iter_mut()) {
            for n in 0..32 {
                let (page, kick) = pool.alloc(node(idx)?);
                if kick {
                    kicked.push_within_capacity(n).map_err(|_| ENOMEM)?;
                }
                if let Some(Err(e)) = page.map(|page| pages.push_within_capacity(page)) {
                    pool.free_zeroed(e.0);
                }
            }
        }
        drop(one_cpu);
        let served = pages.len();
        for page in pages {
            pool.free_zeroed(page);
        }
        assert_eq!(served, 64);
        // This CPU's node: the first request moved the whole depot into the cache, a batch.
        assert_eq!(&kicks[0][..], &[0][..]);
        // The other node's depot, a page at a time: the 29th request left 3 clean pages.
        assert_eq!(&kicks[1][..], &[28][..]);
        Ok(())
    }

    #[test]
    fn a_node_asked_for_gets_a_filled_depot() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let one_cpu = MigrationDisabled::new();
        let home = home_node()?;
        drop(one_cpu);
        let remote = other_node(home)?;
        // No depot for the node yet: the request goes to C and asks for one.
        let (page, kick) = pool.alloc(node(remote)?);
        let fell_back = page.is_none();
        drop(page);
        refill::refill_now(&pool);
        // Filled, although the request that asked for it fell back.
        let (pages, foreign) = depot_nodes(&pool, remote)?;
        let served = pool.alloc(node(remote)?).0.map(|page| page.nid());
        assert!(fell_back && kick);
        assert_eq!((pages, foreign), (32, 0));
        assert_eq!(served.map(usize::try_from), Some(Ok(remote)));
        Ok(())
    }

    #[test]
    fn a_page_freed_on_a_cpu_of_another_node_goes_home() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let one_cpu = MigrationDisabled::new();
        let (_, remote) = fill_two_nodes(&pool)?;
        let depot = pool.depot(remote).ok_or(EINVAL)?;
        let clean = pool.alloc(node(remote)?).0.ok_or(ENOMEM)?;
        let dirty = dirty(pool.alloc(node(remote)?).0.ok_or(ENOMEM)?)?;
        let (far_before, near_before) = (depot.len(), cpu_cache_pages(&pool));
        pool.free_zeroed(clean);
        pool.free_dirty(dirty);
        let (far_after, near_after) = (depot.len(), cpu_cache_pages(&pool));
        drop(one_cpu);
        // Both into the remote node's depot, neither into this CPU's cache.
        assert_eq!(far_after, far_before + 2);
        assert_eq!(near_after, near_before);
        let (pages, foreign) = depot_nodes(&pool, remote)?;
        assert_eq!((pages, foreign), (32, 0));
        Ok(())
    }

    #[test]
    fn the_shrinker_counts_every_page_a_cpu_caches() -> Result {
        // First, for the pool's depot to be of this CPU's node.
        let one_cpu = MigrationDisabled::new();
        let pool = filled_pool(64, 4, 32, 0)?;
        let home = home_node()?;
        // What the CPUs' caches hold, as their hints tell the shrinker.
        let hinted = |pool: &Pool| {
            pool.depots()
                .map(|(idx, _)| pool.cpu_cached(idx))
                .sum::<usize>()
        };
        // Pages of this node from the page allocator, to give back more than the cache took.
        let mut extra = KVec::with_capacity(4, GFP_KERNEL)?;
        for _ in 0..4 {
            extra.push(
                ZeroedPage::alloc_node(node(home)?, GFP_KERNEL | __GFP_THISNODE)?,
                GFP_KERNEL,
            )?;
        }
        // The first request moves a batch into this CPU's cache, the next ones take from it
        // without telling the shrinker; the frees bring it back to the batch, then past it.
        let taken = drain(&pool, 8)?;
        let mut counts = KVec::new();
        for page in Iterator::chain(taken.into_iter(), extra) {
            pool.free_zeroed(page);
            counts.push((hinted(&pool), cpu_cache_pages(&pool)), GFP_KERNEL)?;
        }
        let held = cpu_cache_pages(&pool);
        let freed = pool.drain_cpu_caches(home);
        let after = (hinted(&pool), cpu_cache_pages(&pool));
        drop(one_cpu);
        assert_eq!(held, BATCH + 4);
        // After each free, the hints say at least what the caches hold.
        let short = counts.iter().filter(|(hint, held)| hint < held);
        for (hint, held) in short.clone() {
            pr_err!("the hints say {hint} pages, the caches hold {held}\n");
        }
        assert_eq!(short.count(), 0);
        // The drain reached every page, and left the hints exact.
        assert_eq!(freed, held);
        assert_eq!(after, (0, 0));
        Ok(())
    }

    #[test]
    fn the_worker_waits_for_demand_to_pause() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        assert!(refill::quiet(&pool));
        let pages = drain(&pool, 1024)?;
        let (counters, _) = pool.snapshot();
        assert_eq!(counters.fallbacks, 1);
        assert_eq!(counters.allocs, counters.hits + counters.fallbacks);
        // The drain used the depot and fell back: not quiet, the worker would wait.
        assert!(!refill::quiet(&pool));
        // Nothing since: quiet. Requests ran the depot dry, so the refill leaves it to the
        // tables that come back; the one after that tops it up from the page allocator.
        assert!(refill::quiet(&pool));
        // This test's CPU is taken as free: the next test covers the other case.
        let refills = pool.worker_stats.refills.load(Relaxed);
        refill::run_when_free(&pool, || true);
        assert_eq!(pool.worker_stats.refills.load(Relaxed), refills);
        assert_eq!(pool.worker_stats.refills_skipped.load(Relaxed), 1);
        refill::run_when_free(&pool, || true);
        assert_eq!(pool.worker_stats.refills.load(Relaxed), refills + 32);
        assert_eq!(pool.worker_stats.quiet_waits.load(Relaxed), 0);
        drop(pages);
        Ok(())
    }

    #[test]
    fn the_worker_waits_for_its_cpu_to_be_free() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let pages = drain(&pool, 16)?;
        // The drain used the depot: take that sign down, as the worker's first look would.
        let _ = refill::quiet(&pool);
        let runs = pool.worker_stats.runs.load(Relaxed);
        // Another task is waiting for the CPU at the first look, none at the second.
        let looks = Cell::new(0);
        refill::run_when_free(&pool, || {
            looks.set(looks.get() + 1);
            looks.get() > 1
        });
        assert_eq!(looks.get(), 2);
        assert_eq!(pool.worker_stats.cpu_busy_waits.load(Relaxed), 1);
        assert_eq!(pool.worker_stats.quiet_waits.load(Relaxed), 0);
        assert_eq!(pool.worker_stats.runs.load(Relaxed), runs + 1);
        drop(pages);
        Ok(())
    }

    #[test]
    fn free_and_alloc_with_irqs_off() -> Result {
        let pool = filled_pool(64, 4, 32, 0)?;
        let page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        let irqs_off = KBox::pin_init(new_spinlock_irq!(()), GFP_KERNEL)?;
        let guard = irqs_off.lock();
        // As from the IOTLB flush completion in softirq or with IRQs off: must not sleep.
        pool.free_dirty(page);
        // Allocation runs under RCU and may come with IRQs off as well.
        let page = pool.alloc(NumaNode::NO_NODE).0;
        drop(guard);
        assert!(page.is_some());
        let (counters, _) = pool.snapshot();
        assert_eq!(counters.frees, 1);
        Ok(())
    }

    #[test]
    fn a_bypassed_pool_keeps_no_page() -> Result {
        // As when the page allocator checks freed pages: tables must go back to it.
        let pool = Pool::new(Limits::new(64, 4, 32, 0)?, true)?;
        refill::refill_now(&pool);
        assert!(pool.alloc(NumaNode::NO_NODE).0.is_none());
        let page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        pool.free_dirty(page);
        let page = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
        pool.free_zeroed(page);
        let (counters, spare) = pool.snapshot();
        assert_eq!(
            spare.clean + spare.dirty + spare.cpu_clean + spare.cpu_dirty,
            0
        );
        assert_eq!(counters.fallbacks, 1);
        assert_eq!(counters.frees_over_capacity, 2);
        assert_eq!(pool.worker_stats.refills.load(Relaxed), 0);
        Ok(())
    }
}
