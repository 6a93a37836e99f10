// SPDX-License-Identifier: GPL-2.0

//! The depot of one NUMA node: the spare pages of the node beyond the CPUs' caches.
//!
//! The caches take and give pages in batches under the depot's lock. Counts kept next to the
//! lock, written under it and read without it, let a cache see that the depot is empty, has no
//! clean page or is full without taking the lock: a free past capacity goes back to the page
//! allocator without touching a shared lock.

use crate::{
    cpu_cache::BATCH,
    stats::SpareCounts, //
};
use kernel::{
    iommu::pages::ZeroedPage,
    new_spinlock_irq,
    page::ExclusivePage,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        SpinLockIrq,
        SpinLockIrqGuard, //
    },
    types::Owned,
};

/// The pages of a depot.
///
/// # Invariants
///
/// `clean.len() + dirty.len() <= capacity`, and both vectors have room for `capacity` elements
/// (or none at all while `capacity` is 0, before the worker set the depot up).
pub(crate) struct DepotPages {
    pub(crate) clean: KVec<ZeroedPage>,
    pub(crate) dirty: KVec<Owned<ExclusivePage>>,
    capacity: usize,
}

impl DepotPages {
    fn len(&self) -> usize {
        self.clean.len() + self.dirty.len()
    }

    /// Takes a clean page back, unless the depot is full.
    pub(crate) fn push_clean(&mut self, page: ZeroedPage) -> Result<(), ZeroedPage> {
        if self.len() >= self.capacity {
            return Err(page);
        }
        self.clean.push_within_capacity(page).map_err(|e| e.0)
    }

    /// Takes a dirty page back, unless the depot is full.
    pub(crate) fn push_dirty(
        &mut self,
        page: Owned<ExclusivePage>,
    ) -> Result<(), Owned<ExclusivePage>> {
        if self.len() >= self.capacity {
            return Err(page);
        }
        self.dirty.push_within_capacity(page).map_err(|e| e.0)
    }

    /// Takes a spare page to give back to the page allocator, a dirty one first.
    pub(crate) fn take_spare(&mut self) -> Option<Owned<ExclusivePage>> {
        self.dirty
            .pop()
            .or_else(|| self.clean.pop().map(ZeroedPage::into_inner))
    }
}

/// The depot of one node.
#[pin_data]
pub(crate) struct Depot {
    #[pin]
    pages: SpinLockIrq<DepotPages>,
    /// `pages.clean.len() + pages.dirty.len()`, as of the last change.
    len_hint: Atomic<usize>,
    /// `pages.clean.len()`, as of the last change.
    clean_hint: Atomic<usize>,
    /// `pages.capacity`, 0 until the worker set the depot up.
    capacity_hint: Atomic<usize>,
    /// A request for this node found it not set up: the worker should.
    pub(crate) wanted: Sign,
    /// Requests or frees used the depot, or fell back to C, since the worker last looked: the
    /// worker waits for a quiet period before it zeroes or refills, so that work moved off the
    /// request path does not land in the middle of the demand it was moved from.
    pub(crate) busy: Sign,
    /// A request for the node fell back to C since the worker last refilled: demand went past
    /// what the pool holds. The next refill is left to the tables that come back; pages from the
    /// page allocator would only stand in for the ones C hands out anyway.
    pub(crate) drained: Sign,
}

/// A sign that the request paths put up and the worker takes down, read and written without
/// the depot's lock.
pub(crate) struct Sign(Atomic<bool>);

impl Sign {
    const fn new() -> Self {
        Self(Atomic::new(false))
    }

    /// Puts the sign up; returns whether it was down. Written only when it changes: the request
    /// paths do not dirty a shared cache line each time.
    pub(crate) fn raise(&self) -> bool {
        let was_down = !self.0.load(Relaxed);
        if was_down {
            self.0.store(true, Relaxed);
        }
        was_down
    }

    /// Takes the sign down; returns whether it was up.
    pub(crate) fn take(&self) -> bool {
        let was_up = self.0.load(Relaxed);
        if was_up {
            self.0.store(false, Relaxed);
        }
        was_up
    }
}

/// A depot's pages, locked: updates the lock-free counts when it is dropped.
pub(crate) struct Locked<'a> {
    depot: &'a Depot,
    guard: SpinLockIrqGuard<'a, DepotPages>,
}

impl core::ops::Deref for Locked<'_> {
    type Target = DepotPages;

    fn deref(&self) -> &DepotPages {
        &self.guard
    }
}

impl core::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut DepotPages {
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.depot.len_hint.store(self.guard.len(), Relaxed);
        self.depot.clean_hint.store(self.guard.clean.len(), Relaxed);
    }
}

impl Depot {
    /// An empty depot, not set up: it keeps no page until [`Depot::set_up`].
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: No capacity, no pages.
            pages <- new_spinlock_irq!(DepotPages {
                clean: KVec::new(),
                dirty: KVec::new(),
                capacity: 0,
            }),
            len_hint: Atomic::new(0),
            clean_hint: Atomic::new(0),
            capacity_hint: Atomic::new(0),
            wanted: Sign::new(),
            busy: Sign::new(),
            drained: Sign::new(),
        })
    }

    /// Gives the depot room for `capacity` pages, if it has none yet. May sleep.
    pub(crate) fn set_up(&self, capacity: usize) -> Result {
        if self.is_set_up() {
            return Ok(());
        }
        let clean = KVec::with_capacity(capacity, GFP_KERNEL)?;
        let dirty = KVec::with_capacity(capacity, GFP_KERNEL)?;
        let mut pages = self.lock();
        if pages.capacity == 0 {
            // INVARIANT: The depot had no room and so no page; now both vectors have room for
            // `capacity` pages.
            pages.clean = clean;
            pages.dirty = dirty;
            pages.capacity = capacity;
            self.capacity_hint.store(capacity, Relaxed);
        }
        // Otherwise another set-up won; the vectors are freed here, after the lock is dropped.
        drop(pages);
        Ok(())
    }

    /// Whether the depot has room for pages.
    pub(crate) fn is_set_up(&self) -> bool {
        self.capacity_hint.load(Relaxed) != 0
    }

    /// Locks the depot's pages.
    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked {
            depot: self,
            guard: self.pages.lock(),
        }
    }

    /// Whether the depot had any page when last changed; read without the lock.
    pub(crate) fn may_have_pages(&self) -> bool {
        self.len_hint.load(Relaxed) != 0
    }

    /// Whether the depot had a clean page when last changed; read without the lock.
    pub(crate) fn may_have_clean(&self) -> bool {
        self.clean_hint.load(Relaxed) != 0
    }

    /// Whether the depot was full when last changed; read without the lock.
    pub(crate) fn seems_full(&self) -> bool {
        self.len_hint.load(Relaxed) + BATCH > self.capacity_hint.load(Relaxed)
    }

    /// All the pages, as of the last change.
    pub(crate) fn len(&self) -> usize {
        self.len_hint.load(Relaxed)
    }

    /// Adds the depot's pages to `counts`.
    pub(crate) fn count(&self, counts: &mut SpareCounts) {
        let pages = self.lock();
        counts.clean += pages.clean.len();
        counts.dirty += pages.dirty.len();
    }
}
