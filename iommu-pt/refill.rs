// SPDX-License-Identifier: GPL-2.0

//! What the worker does: set up the depots that requests asked for, zero the dirty pages of the
//! depots up to the high watermark, and fill each depot up to it from the page allocator.
//!
//! Zeroing here is work moved off the allocation path, not saved, and so is a refill from the
//! page allocator: `worker_ns` counts it, and benchmarks report it. So that moved work does not
//! land in the middle of the demand it was moved from, the worker first waits for a quiet
//! period, [`QUIET`] without any request using a depot or falling back to C, and for its CPU to
//! have no other task waiting: a domain being torn down frees most of its tables to C without
//! touching the pool, and on one CPU the worker would zero in the middle of it. Under sustained
//! demand it does nothing: requests take the dirty pages and zero them, as C zeroes fresh ones,
//! and fall back to C when the pool runs dry, at C's cost. Once demand pauses, the worker
//! prepares the pool for the next burst: it zeroes returned tables, and it tops the depot up
//! from the page allocator unless requests ran it dry since the last refill. After such demand,
//! the tables that come back refill it; pages from the page allocator would only stand in for
//! the ones C hands out anyway.

use crate::{
    cpu_cache::BATCH,
    depot::Depot,
    pool::Pool, //
};
use kernel::{
    alloc::{
        flags::{
            GFP_NOWAIT,
            __GFP_NOWARN,
            __GFP_THISNODE, //
        },
        NumaNode,
    },
    iommu::pages::ZeroedPage,
    page::ExclusivePage,
    prelude::*,
    sync::atomic::Relaxed,
    task::single_task_running,
    time::{
        delay::fsleep,
        Delta,
        Instant,
        Monotonic, //
    },
    types::Owned,
};

/// How long no request may use a depot before the worker zeroes or refills.
pub(crate) const QUIET: Delta = Delta::from_millis(10);

/// The worker: waits until requests leave the depots alone for [`QUIET`] and no other task is
/// waiting to run on this CPU, then runs [`refill_now`]. Returns early if the pool is being torn
/// down. May sleep.
pub(crate) fn run(pool: &Pool) {
    run_when_free(pool, single_task_running)
}

/// [`run`], with `cpu_free` telling whether no other task is waiting for this CPU.
pub(crate) fn run_when_free(pool: &Pool, cpu_free: impl Fn() -> bool) {
    loop {
        if !quiet(pool) {
            pool.worker_stats.quiet_waits.add(1, Relaxed);
        } else if !cpu_free() {
            pool.worker_stats.cpu_busy_waits.add(1, Relaxed);
            // Cheap, and without it a node's requests would go to C for as long as the CPU
            // stays busy.
            set_up_wanted(pool);
        } else {
            break;
        }
        fsleep(QUIET);
        if pool.stopping() {
            return;
        }
    }
    refill_now(pool);
}

/// Whether no request used a depot since the last call.
pub(crate) fn quiet(pool: &Pool) -> bool {
    // Every depot's flag is taken, not just the first busy one.
    pool.depots()
        .fold(true, |quiet, (_, depot)| !depot.busy.take() && quiet)
}

/// Runs the worker's jobs once, on every node, now. May sleep.
pub(crate) fn refill_now(pool: &Pool) {
    if pool.bypassed() {
        return;
    }
    if !pool.limits().prefill() {
        // Nothing to fill or zero: only the depots that requests asked for.
        set_up_wanted(pool);
        return;
    }
    let start = Instant::<Monotonic>::now();
    let stats = &pool.worker_stats;
    stats.runs.add(1, Relaxed);
    let limits = pool.limits();
    set_up_wanted(pool);
    for (idx, depot) in pool.depots() {
        if !depot.is_set_up() {
            continue;
        }
        let (zeroed, freed) = zero_dirty(depot, limits.high());
        stats.zeroed.add(zeroed as u64, Relaxed);
        stats.zeroed_freed.add(freed as u64, Relaxed);
        if depot.drained.take() {
            stats.refills_skipped.add(1, Relaxed);
            continue;
        }
        let refilled = fill(idx, depot, limits.high());
        stats.refills.add(refilled as u64, Relaxed);
    }
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(0);
    stats.ns.add(ns, Relaxed);
}

/// Sets up the depots that requests asked for, unless the pool is bypassed. May sleep.
fn set_up_wanted(pool: &Pool) {
    if pool.bypassed() {
        return;
    }
    let capacity = pool.limits().capacity();
    for (_, depot) in pool.depots() {
        if depot.wanted.take() {
            // On failure, a later request asks again.
            let _ = depot.set_up(capacity);
        }
    }
}

/// Zeroes the depot's dirty pages, a batch at a time outside its lock, until it has `high` clean
/// pages. Returns how many it zeroed, and how many of those the depot had no room for when they
/// came back (frees filled it meanwhile): those went to the page allocator.
///
/// Beyond `high`, dirty pages stay dirty: a request that takes one zeroes it, as C would zero a
/// fresh page, and one that the shrinker frees is never zeroed at all.
fn zero_dirty(depot: &Depot, high: usize) -> (usize, usize) {
    let mut zeroed = 0;
    let mut freed = 0;
    loop {
        let mut batch: [Option<Owned<ExclusivePage>>; BATCH] = [const { None }; BATCH];
        {
            let mut pages = depot.lock();
            let room = high.saturating_sub(pages.clean.len());
            for slot in batch.iter_mut().take(room) {
                *slot = pages.dirty.pop();
                if slot.is_none() {
                    break;
                }
            }
        }
        let batch = batch.map(|page| page.map(ZeroedPage::zero));
        let n = batch.iter().flatten().count();
        if n == 0 {
            return (zeroed, freed);
        }
        zeroed += n;
        freed += n - file_clean(depot, batch);
        if n < BATCH {
            return (zeroed, freed);
        }
    }
}

/// Fills the depot of node `idx` up to `high` pages from the page allocator, a batch at a time.
/// Returns how many pages it added.
fn fill(idx: usize, depot: &Depot, high: usize) -> usize {
    let Ok(nid) = i32::try_from(idx)
        .map_err(|_| EINVAL)
        .and_then(NumaNode::new)
    else {
        return 0;
    };
    let mut added = 0;
    // At most `high` pages per run: the loop ends even if pages keep going.
    while added < high && depot.len() < high {
        let mut batch: [Option<ZeroedPage>; BATCH] = [const { None }; BATCH];
        let want = (high - depot.len()).min(BATCH);
        let mut got = 0;
        for slot in batch.iter_mut().take(want) {
            // Never reclaim to refill: that would only run the pool's own shrinker. Only pages
            // of this node: a node short of memory is not refilled from another one.
            let flags = GFP_NOWAIT | __GFP_NOWARN | __GFP_THISNODE;
            match ZeroedPage::alloc_node(nid, flags) {
                Ok(page) if usize::try_from(page.nid()) == Ok(idx) => {
                    *slot = Some(page);
                    got += 1;
                }
                // Cannot happen with `__GFP_THISNODE`: never file a page under another node.
                _ => break,
            }
        }
        let kept = file_clean(depot, batch);
        added += kept;
        if got < want || kept < got {
            break;
        }
    }
    added
}

/// Puts a batch of clean pages into the depot under one lock. Returns how many it kept; the
/// pages it had no room for are freed after the lock is dropped.
fn file_clean(depot: &Depot, batch: [Option<ZeroedPage>; BATCH]) -> usize {
    let mut rejected: [Option<ZeroedPage>; BATCH] = [const { None }; BATCH];
    let mut kept = 0;
    {
        let mut pages = depot.lock();
        for (page, out) in batch.into_iter().flatten().zip(rejected.iter_mut()) {
            *out = pages.push_clean(page).err();
            kept += usize::from(out.is_none());
        }
    }
    kept
}
