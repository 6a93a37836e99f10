// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the pool, run when the module loads.
//!
//! They use the module's own pool while it is registered, so IOMMU domains may take and return
//! pages at the same time: every check is on the test's own pages or on counters that only grow.

use kernel::prelude::*;

#[kunit_tests(iommu_pt_pool)]
mod pool_tests {
    use crate::{
        params::{
            Limits,
            MAX_CAPACITY, //
        },
        pool::{
            self,
            IommuPt,
            POOL,
            STATS, //
        },
    };
    use kernel::{
        alloc::{
            flags::GFP_KERNEL,
            NumaNode, //
        },
        iommu::pages::{
            TablePageProvider,
            ZeroedPage, //
        },
        new_spinlock_irq,
        page::{
            ExclusivePage,
            PAGE_SIZE, //
        },
        prelude::*,
        sync::atomic::Relaxed,
    };

    /// Takes clean pages from the home node until the pool has none left, at most `max`.
    fn drain(max: usize) -> Result<KVec<ZeroedPage>> {
        let mut pages = KVec::new();
        while pages.len() < max {
            match IommuPt::alloc(NumaNode::NO_NODE, GFP_KERNEL) {
                Some(page) => pages.push(page, GFP_KERNEL)?,
                None => break,
            }
        }
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
    }

    #[test]
    fn alloc_recycle_round_trip() -> Result {
        // Zero what earlier tests returned and top the pool up, as the worker would.
        pool::refill();
        let hits = STATS.hits.load(Relaxed);
        let frees = STATS.frees.load(Relaxed);
        let page = IommuPt::alloc(NumaNode::NO_NODE, GFP_KERNEL).ok_or(ENOMEM)?;
        assert!(STATS.hits.load(Relaxed) > hits);
        assert!(is_zero(&page)?);
        IommuPt::recycle(page.into_inner());
        assert!(STATS.frees.load(Relaxed) > frees);
        Ok(())
    }

    #[test]
    fn returned_dirty_pages_come_out_zeroed() -> Result {
        pool::refill();
        let mut pages = drain(4096)?;
        assert!(!pages.is_empty());
        // Return every page dirty, then let the worker's zeroing run here.
        let count = pages.len();
        while let Some(page) = pages.pop() {
            let mut page = page.into_inner();
            page.as_pin_mut().write(&[0x5a; 64], PAGE_SIZE - 64)?;
            page.as_pin_mut().write(&[0xa5; 64], 0)?;
            IommuPt::recycle(page);
        }
        pool::refill();
        let again = drain(count)?;
        assert!(!again.is_empty());
        for page in again.iter() {
            assert!(is_zero(page)?);
        }
        for page in again {
            IommuPt::recycle(page.into_inner());
        }
        Ok(())
    }

    #[test]
    fn request_zeroes_a_dirty_page_when_no_clean_one_is_left() -> Result {
        // Hold every clean page and every returned one: the pool is empty.
        let held = drain(4096)?;
        // One page comes back dirty. Unless the worker zeroed it meanwhile, the next request
        // finds no clean page and zeroes this one itself: either way it gets all zeroes.
        let mut page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        page.as_pin_mut().write(&[0x5a; 64], 128)?;
        STATS.outstanding.add(1, Relaxed);
        IommuPt::recycle(page);
        // `None` only if the worker holds the page right now, zeroing it outside the lock.
        let page = IommuPt::alloc(NumaNode::NO_NODE, GFP_KERNEL);
        let zero = page.as_ref().map(|page| is_zero(page));
        if let Some(page) = page {
            IommuPt::recycle(page.into_inner());
        }
        for page in held {
            IommuPt::recycle(page.into_inner());
        }
        if let Some(zero) = zero {
            assert!(zero?);
        }
        Ok(())
    }

    #[test]
    fn zeroed_table_is_reused_without_zeroing() -> Result {
        // Hold every clean page, so that the next request can only be served by the page this
        // test returns as cleared (or by the worker's refill, which allocates zeroed pages).
        let held = drain(4096)?;
        let zeroed_on_alloc = STATS.zeroed_on_alloc.load(Relaxed);
        let frees_zeroed = STATS.frees_zeroed.load(Relaxed);
        let page = ZeroedPage::alloc_node(NumaNode::NO_NODE, GFP_KERNEL)?;
        let pfn = page.pfn();
        STATS.outstanding.add(1, Relaxed);
        IommuPt::recycle_zeroed(page);
        assert!(STATS.frees_zeroed.load(Relaxed) > frees_zeroed);
        let again = IommuPt::alloc(NumaNode::NO_NODE, GFP_KERNEL);
        let same = again.as_ref().is_some_and(|page| page.pfn() == pfn);
        let zero = again.as_ref().map(|page| is_zero(page));
        if let Some(page) = again {
            IommuPt::recycle(page.into_inner());
        }
        for page in held {
            IommuPt::recycle(page.into_inner());
        }
        // A concurrent domain may take the page first; if this test got it, it came straight
        // back clean: nobody zeroed a page between the free and the request.
        if same {
            assert_eq!(STATS.zeroed_on_alloc.load(Relaxed), zeroed_on_alloc);
            assert!(zero.is_some_and(|z| z.is_ok_and(|z| z)));
        }
        Ok(())
    }

    #[test]
    fn zero_check_catches_a_page_that_is_not_zero() -> Result {
        let mut page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        page.as_pin_mut().write(&[0x5a], PAGE_SIZE - 1)?;
        assert!(!pool::is_all_zero(&page)?);
        let page = ZeroedPage::zero(page);
        assert!(pool::is_all_zero(&page)?);
        Ok(())
    }

    #[test]
    fn capacity_bounds_the_pool() -> Result {
        let capacity = POOL.lock().limits().map_or(0, |l| l.capacity());
        assert!(capacity > 0);
        let over = STATS.frees_over_capacity.load(Relaxed);
        // Fresh pages, one more than the pool can hold, all returned as if they were tables.
        let mut pages = KVec::new();
        for _ in 0..=capacity {
            pages.push(ExclusivePage::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        for page in pages {
            STATS.outstanding.add(1, Relaxed);
            IommuPt::recycle(page);
        }
        assert!(POOL.lock().node_len(NumaNode::NO_NODE) <= capacity);
        assert!(STATS.frees_over_capacity.load(Relaxed) > over);
        Ok(())
    }

    #[test]
    fn empty_pool_falls_back_to_c() -> Result {
        let fallbacks = STATS.fallbacks.load(Relaxed);
        let capacity = POOL.lock().limits().map_or(0, |l| l.capacity());
        let pages = drain(4 * capacity)?;
        // The pool ran dry: the last request was left to C.
        assert!(STATS.fallbacks.load(Relaxed) > fallbacks);
        for page in pages {
            IommuPt::recycle(page.into_inner());
        }
        Ok(())
    }

    #[test]
    fn statistics_add_up() -> Result {
        let pages = drain(8)?;
        for page in pages {
            IommuPt::recycle(page.into_inner());
        }
        // Each request is a hit or a fallback; racing requests only make `allocs` lead.
        let fallbacks = STATS.fallbacks.load(Relaxed);
        let hits = STATS.hits.load(Relaxed);
        let allocs = STATS.allocs.load(Relaxed);
        assert!(allocs >= hits + fallbacks);
        assert!(STATS.frees.load(Relaxed) >= STATS.frees_over_capacity.load(Relaxed));
        let (clean, dirty) = POOL.lock().counts();
        assert!(clean + dirty <= POOL.lock().limits().map_or(0, |l| l.capacity()));
        Ok(())
    }

    #[test]
    fn recycle_with_irqs_off() -> Result {
        // A fresh page stands in for a freed table: the pool may be empty right now.
        let page = ExclusivePage::alloc_page(GFP_KERNEL)?;
        STATS.outstanding.add(1, Relaxed);
        let frees = STATS.frees.load(Relaxed);
        let irqs_off = KBox::pin_init(new_spinlock_irq!(()), GFP_KERNEL)?;
        let guard = irqs_off.lock();
        // As from the IOTLB flush completion in softirq or with IRQs off: must not sleep.
        IommuPt::recycle(page);
        // Allocation runs under RCU and may come with IRQs off as well.
        let page = IommuPt::alloc(NumaNode::NO_NODE, GFP_KERNEL);
        drop(guard);
        assert!(STATS.frees.load(Relaxed) > frees);
        if let Some(page) = page {
            IommuPt::recycle(page.into_inner());
        }
        Ok(())
    }
}
