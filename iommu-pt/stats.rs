// SPDX-License-Identifier: GPL-2.0

//! Counters of the pool, shown in debugfs as `iommu_pt/stats`.

use core::fmt;
use kernel::sync::atomic::{
    Atomic,
    Relaxed, //
};

/// Event counters. Relaxed atomics: each is exact, a snapshot of several is not atomic.
pub(crate) struct Stats {
    /// Table pages generic_pt asked the pool for.
    pub(crate) allocs: Atomic<u64>,
    /// Of those, the ones the pool served.
    pub(crate) hits: Atomic<u64>,
    /// Of those, the ones left to the C allocator because the node's pool had no clean page.
    pub(crate) fallbacks: Atomic<u64>,
    /// Table pages handed back after the IOTLB flush.
    pub(crate) frees: Atomic<u64>,
    /// Of those, the ones freed to the page allocator because the pool was full.
    pub(crate) frees_over_capacity: Atomic<u64>,
    /// Of the frees, the tables generic_pt had cleared entry by entry: they went back to the
    /// pool as clean pages, without being zeroed again.
    pub(crate) frees_zeroed: Atomic<u64>,
    /// Of those, the ones the zero check (`zero_check=1`) found not all zero. Always 0 unless
    /// generic_pt lies about a table it cleared; such a page is zeroed before reuse.
    pub(crate) zero_check_failures: Atomic<u64>,
    /// Returned pages the worker zeroed.
    pub(crate) zeroed: Atomic<u64>,
    /// Hits served from a returned page, zeroed by the request because no clean page was left.
    pub(crate) zeroed_on_alloc: Atomic<u64>,
    /// Pages the worker allocated to refill the pool.
    pub(crate) refills: Atomic<u64>,
    /// Times the worker ran.
    pub(crate) worker_runs: Atomic<u64>,
    /// Time the worker spent zeroing and refilling, in nanoseconds (it never sleeps, but can be
    /// preempted).
    pub(crate) worker_ns: Atomic<u64>,
    /// Spare pages given back to the page allocator under memory pressure.
    pub(crate) shrunk: Atomic<u64>,
    /// Pages handed out and not yet returned (tables live in IOMMU domains).
    pub(crate) outstanding: Atomic<i64>,
}

impl Stats {
    pub(crate) const fn new() -> Self {
        Self {
            allocs: Atomic::new(0),
            hits: Atomic::new(0),
            fallbacks: Atomic::new(0),
            frees: Atomic::new(0),
            frees_over_capacity: Atomic::new(0),
            frees_zeroed: Atomic::new(0),
            zero_check_failures: Atomic::new(0),
            zeroed: Atomic::new(0),
            zeroed_on_alloc: Atomic::new(0),
            refills: Atomic::new(0),
            worker_runs: Atomic::new(0),
            worker_ns: Atomic::new(0),
            shrunk: Atomic::new(0),
            outstanding: Atomic::new(0),
        }
    }

    /// Writes the counters and the pool's current page counts, one `name value` per line.
    pub(crate) fn show(
        &self,
        clean: usize,
        dirty: usize,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        writeln!(f, "allocs {}", self.allocs.load(Relaxed))?;
        writeln!(f, "hits {}", self.hits.load(Relaxed))?;
        writeln!(f, "fallbacks {}", self.fallbacks.load(Relaxed))?;
        writeln!(f, "frees {}", self.frees.load(Relaxed))?;
        writeln!(
            f,
            "frees_over_capacity {}",
            self.frees_over_capacity.load(Relaxed)
        )?;
        writeln!(f, "frees_zeroed {}", self.frees_zeroed.load(Relaxed))?;
        writeln!(
            f,
            "zero_check_failures {}",
            self.zero_check_failures.load(Relaxed)
        )?;
        writeln!(f, "zeroed {}", self.zeroed.load(Relaxed))?;
        writeln!(f, "zeroed_on_alloc {}", self.zeroed_on_alloc.load(Relaxed))?;
        writeln!(f, "refills {}", self.refills.load(Relaxed))?;
        writeln!(f, "worker_runs {}", self.worker_runs.load(Relaxed))?;
        writeln!(f, "worker_ns {}", self.worker_ns.load(Relaxed))?;
        writeln!(f, "shrunk {}", self.shrunk.load(Relaxed))?;
        writeln!(f, "outstanding {}", self.outstanding.load(Relaxed))?;
        writeln!(f, "clean {clean}")?;
        writeln!(f, "dirty {dirty}")
    }
}
