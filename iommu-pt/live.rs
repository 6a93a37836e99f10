// SPDX-License-Identifier: GPL-2.0

//! The pool that the provider and shrinker callbacks serve, published for them.
//!
//! Those callbacks are plain functions, called by C with no context pointer, so they find the
//! pool through [`LIVE`]. It is set before they are registered and cleared only after they are
//! unregistered, which waits for the callbacks that are running.

use crate::{
    pool::Pool,
    worker::Worker, //
};
use core::ptr;
use kernel::{
    prelude::*,
    sync::{
        atomic::{
            Acquire,
            Atomic,
            Release, //
        },
        Arc,
    },
    workqueue::OwnedQueue,
};

/// The published pool, its worker and the worker's queue.
pub(crate) struct Live {
    /// Destroyed first: destroying it waits for a queued or running refill.
    queue: OwnedQueue,
    worker: Arc<Worker>,
    pub(crate) pool: Arc<Pool>,
}

impl Live {
    /// Starts the worker, unless it is queued already.
    pub(crate) fn kick(&self) {
        self.worker.kick(&self.queue);
    }
}

/// The published [`Live`], or null. Points to a leaked `KBox<Live>` while not null.
static LIVE: Atomic<*mut Live> = Atomic::new(ptr::null_mut());

/// Owns the published pool; dropping it unpublishes the pool and stops its worker.
///
/// # Invariants
///
/// [`LIVE`] points to the `KBox<Live>` this publication made, until it is dropped.
pub(crate) struct Publication(());

impl Publication {
    /// Publishes `pool` with a worker of its own. Fails with `EBUSY` if a pool is published.
    pub(crate) fn new(pool: Arc<Pool>) -> Result<Self> {
        let queue = OwnedQueue::new(c"iommu_pt", OwnedQueue::UNBOUND)?;
        let worker = Worker::new(pool.clone())?;
        let live = KBox::new(
            Live {
                queue,
                worker,
                pool,
            },
            GFP_KERNEL,
        )?;
        let live = KBox::into_raw(live);
        if LIVE.cmpxchg(ptr::null_mut(), live, Release).is_err() {
            // SAFETY: `live` came from `KBox::into_raw()` above and was not published.
            drop(unsafe { KBox::from_raw(live) });
            return Err(EBUSY);
        }
        // INVARIANT: `LIVE` now points to the box made above.
        Ok(Self(()))
    }
}

impl Drop for Publication {
    fn drop(&mut self) {
        let live = LIVE.xchg(ptr::null_mut(), Acquire);
        if !live.is_null() {
            // SAFETY: As below; the box is still alive here.
            unsafe { (*live).pool.stop() };
            // SAFETY: By the type invariant, `live` is the published box, and the callbacks that
            // could use it are unregistered (see `get()`). Dropping it destroys the queue, which
            // waits for the worker.
            drop(unsafe { KBox::from_raw(live) });
        }
    }
}

/// Returns the published pool, if any.
///
/// # Safety
///
/// Only for a provider or shrinker callback (or a holder of the [`Publication`]): the callbacks
/// are unregistered before the publication is dropped, and unregistering waits for them, so the
/// pool outlives `'a`.
pub(crate) unsafe fn get<'a>() -> Option<&'a Live> {
    let live = LIVE.load(Acquire);
    // SAFETY: Not null, `live` points to the published box, which by the safety requirements
    // lives for `'a`.
    unsafe { live.as_ref() }
}
