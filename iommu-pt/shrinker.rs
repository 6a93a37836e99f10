// SPDX-License-Identifier: GPL-2.0

//! Gives the spare pages back to the page allocator under memory pressure: a node's depot
//! first, then, once it is empty, the caches of the node's CPUs, as the page allocator drains its
//! per-CPU lists under pressure (`drain_all_pages()`).

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
        live.pool.depot(idx).map_or(0, |depot| depot.len()) + live.pool.cpu_cached(idx)
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
        if freed < sc.nr_to_scan() {
            // The depot is empty: the CPUs' caches hold the node's last spare pages.
            freed += live.pool.drain_cpu_caches(idx);
        }
        live.pool.worker_stats.shrunk.add(freed as u64, Relaxed);
        // Every spare page of the depot and the caches was looked at. With nothing freed, stop: reporting zero
        // pages scanned instead would make reclaim call again forever.
        (freed > 0).then_some(freed)
    }
}
