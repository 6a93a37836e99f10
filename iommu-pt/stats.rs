// SPDX-License-Identifier: GPL-2.0

//! Counters of the pool, shown in debugfs as `iommu_pt/stats`.
//!
//! The allocation and free paths count in [`Counters`], one per CPU, with plain additions: no
//! atomic instruction and no cache line shared between CPUs. A reader sums them over the CPUs,
//! into a [`CounterSum`].
//! The worker and the shrinker, which run seldom, count in [`WorkerStats`].

use core::fmt;
use kernel::sync::atomic::{
    Atomic,
    Relaxed, //
};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {
        /// Counters of the allocation and free paths of one CPU, or their sum.
        #[derive(Clone, Copy, Default)]
        pub(crate) struct Counters {
            $($(#[$doc])* pub(crate) $name: $ty,)*
        }

        impl Counters {
            fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                $(writeln!(f, concat!(stringify!($name), " {}"), self.$name)?;)*
                Ok(())
            }
        }

        /// A sum of [`Counters`] that several CPUs add to at once, each from an interrupt
        /// ([`kernel::percpu::PerCpu::on_each_cpu`] without PREEMPT_RT): atomic additions, no
        /// lock, which would be a sleeping one on PREEMPT_RT. Also the counters of the CPUs
        /// that went offline.
        pub(crate) struct CounterSum {
            $($name: Atomic<$ty>,)*
        }

        impl CounterSum {
            pub(crate) fn new() -> Self {
                Self {
                    $($name: Atomic::new(0),)*
                }
            }

            /// Adds `counters` to the sum.
            pub(crate) fn add(&self, counters: &Counters) {
                $(self.$name.add(counters.$name, Relaxed);)*
            }

            /// The sum, once every addition is ordered before this call.
            pub(crate) fn load(&self) -> Counters {
                Counters {
                    $($name: self.$name.load(Relaxed),)*
                }
            }
        }
    };
}

counters! {
    /// Table pages generic_pt asked the pool for.
    allocs: u64,
    /// Of those, the ones the pool served.
    hits: u64,
    /// Of those, the ones left to the C allocator because the pool had no page for them.
    fallbacks: u64,
    /// Table pages handed back after the IOTLB flush.
    frees: u64,
    /// Of those, the ones freed to the page allocator because the node's depot was full.
    frees_over_capacity: u64,
    /// Of the frees, the tables generic_pt had cleared entry by entry: back in the pool as
    /// clean pages, without being zeroed again.
    frees_zeroed: u64,
    /// Of those, the ones the zero check (`zero_check=1`) found not all zero. Always 0 unless
    /// generic_pt lies about a table it cleared; such a page is zeroed before reuse.
    zero_check_failures: u64,
    /// Hits served from a returned page that the request zeroed, no clean page being left.
    zeroed_on_alloc: u64,
    /// Times a CPU's cache took a batch of pages from its node's depot.
    cache_refills: u64,
    /// Times a CPU's cache gave a batch of pages to its node's depot, or freed it.
    cache_spills: u64,
}

impl Counters {
    /// Pages handed out minus pages returned (each free returns one, whoever allocated it):
    /// summed over the CPUs, the tables in live IOMMU domains. Not a counter of its own, which
    /// would be one more addition on each request and each free.
    pub(crate) fn outstanding(&self) -> i64 {
        (self.hits as i64).wrapping_sub(self.frees as i64)
    }
}

/// Counters of the refill worker and the shrinker.
pub(crate) struct WorkerStats {
    /// Returned pages the worker zeroed.
    pub(crate) zeroed: Atomic<u64>,
    /// Pages the worker zeroed that their depot, filled by frees meanwhile, had no room for:
    /// freed to the page allocator.
    pub(crate) zeroed_freed: Atomic<u64>,
    /// Pages the worker allocated to refill a depot.
    pub(crate) refills: Atomic<u64>,
    /// Times the worker left a depot to be refilled by returned tables rather than the page
    /// allocator, because requests had run it dry.
    pub(crate) refills_skipped: Atomic<u64>,
    /// Times the worker waited for requests to leave the depots alone: under demand, moved work
    /// would only land in the middle of it.
    pub(crate) quiet_waits: Atomic<u64>,
    /// Times the worker waited because another task was waiting to run on its CPU: moved work
    /// would take that task's time.
    pub(crate) cpu_busy_waits: Atomic<u64>,
    /// Times the worker zeroed and refilled.
    pub(crate) runs: Atomic<u64>,
    /// Time the worker spent zeroing and refilling, in nanoseconds.
    pub(crate) ns: Atomic<u64>,
    /// Spare pages given back to the page allocator under memory pressure.
    pub(crate) shrunk: Atomic<u64>,
    /// Spare pages moved from the cache of a CPU that went offline into its node's depot.
    pub(crate) cpu_dead_moved: Atomic<u64>,
    /// Spare pages of the cache of a CPU that went offline that its node's depot had no room
    /// for: freed to the page allocator.
    pub(crate) cpu_dead_freed: Atomic<u64>,
}

impl WorkerStats {
    pub(crate) const fn new() -> Self {
        Self {
            zeroed: Atomic::new(0),
            zeroed_freed: Atomic::new(0),
            refills: Atomic::new(0),
            refills_skipped: Atomic::new(0),
            quiet_waits: Atomic::new(0),
            cpu_busy_waits: Atomic::new(0),
            runs: Atomic::new(0),
            ns: Atomic::new(0),
            shrunk: Atomic::new(0),
            cpu_dead_moved: Atomic::new(0),
            cpu_dead_freed: Atomic::new(0),
        }
    }
}

/// Spare pages held, by place and state.
#[derive(Clone, Copy, Default)]
pub(crate) struct SpareCounts {
    /// Clean pages in the depots.
    pub(crate) clean: usize,
    /// Dirty pages in the depots.
    pub(crate) dirty: usize,
    /// Clean pages in the CPUs' caches.
    pub(crate) cpu_clean: usize,
    /// Dirty pages in the CPUs' caches.
    pub(crate) cpu_dirty: usize,
}

/// Writes every counter and the spare page counts, one `name value` per line.
pub(crate) fn show(
    counters: &Counters,
    worker: &WorkerStats,
    spare: &SpareCounts,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    counters.show(f)?;
    writeln!(f, "outstanding {}", counters.outstanding())?;
    writeln!(f, "zeroed {}", worker.zeroed.load(Relaxed))?;
    writeln!(f, "zeroed_freed {}", worker.zeroed_freed.load(Relaxed))?;
    writeln!(f, "refills {}", worker.refills.load(Relaxed))?;
    writeln!(
        f,
        "refills_skipped {}",
        worker.refills_skipped.load(Relaxed)
    )?;
    writeln!(f, "quiet_waits {}", worker.quiet_waits.load(Relaxed))?;
    writeln!(f, "cpu_busy_waits {}", worker.cpu_busy_waits.load(Relaxed))?;
    writeln!(f, "worker_runs {}", worker.runs.load(Relaxed))?;
    writeln!(f, "worker_ns {}", worker.ns.load(Relaxed))?;
    writeln!(f, "shrunk {}", worker.shrunk.load(Relaxed))?;
    writeln!(f, "cpu_dead_moved {}", worker.cpu_dead_moved.load(Relaxed))?;
    writeln!(f, "cpu_dead_freed {}", worker.cpu_dead_freed.load(Relaxed))?;
    // `clean` and `dirty` count every spare page, as before the CPU caches existed.
    writeln!(f, "clean {}", spare.clean + spare.cpu_clean)?;
    writeln!(f, "dirty {}", spare.dirty + spare.cpu_dirty)?;
    writeln!(f, "cpu_clean {}", spare.cpu_clean)?;
    writeln!(f, "cpu_dirty {}", spare.cpu_dirty)
}
