// SPDX-License-Identifier: GPL-2.0

//! Gives the depots' spare pages back to the page allocator under memory pressure.
//!
//! The CPUs' caches are left alone: at most `2 * CACHE_PAGES` pages per CPU, and reaching them
//! would take an interrupt on every CPU.

use crate::{
    cpu_cache::BATCH,
    live, //
};
use kernel::{
    mm::shrinker::{
        ShrinkControl,
        Shrinker, //
    },
    page::ExclusivePage,
    sync::atomic::Relaxed,
    types::Owned,
};

/// The pool's shrinker.
pub(crate) struct PoolShrinker;

impl Shrinker for PoolShrinker {
    fn count(sc: &ShrinkControl<'_>) -> usize {
        // SAFETY: A shrinker callback.
        let Some(live) = (unsafe { live::get() }) else {
            return 0;
        };
        let idx = sc.nid().id().unwrap_or(0);
        live.pool.depot(idx).map_or(0, |depot| depot.len())
    }

    fn scan(sc: &mut ShrinkControl<'_>) -> Option<usize> {
        // SAFETY: A shrinker callback.
        let live = (unsafe { live::get() })?;
        let idx = sc.nid().id().unwrap_or(0);
        let depot = live.pool.depot(idx)?;
        let mut freed = 0;
        while freed < sc.nr_to_scan() {
            let mut batch: [Option<Owned<ExclusivePage>>; BATCH] = [const { None }; BATCH];
            {
                let mut pages = depot.lock();
                for slot in batch.iter_mut().take(sc.nr_to_scan() - freed) {
                    *slot = pages.take_spare();
                }
            }
            let n = batch.iter().flatten().count();
            // Freed outside the lock.
            drop(batch);
            freed += n;
            if n == 0 {
                break;
            }
        }
        live.pool.worker_stats.shrunk.add(freed as u64, Relaxed);
        // Every spare page of the depot was looked at. With nothing freed, stop: reporting zero
        // pages scanned instead would make reclaim call again forever.
        (freed > 0).then_some(freed)
    }
}
