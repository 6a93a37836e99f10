// SPDX-License-Identifier: GPL-2.0

//! The work item that runs [`crate::refill::run`] on the live pool, off the map path.

use crate::{
    pool::Pool,
    refill, //
};
use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{
        impl_has_work,
        new_work,
        OwnedQueue,
        Work,
        WorkItem, //
    },
};

/// The refill worker of a pool.
#[pin_data]
pub(crate) struct Worker {
    pool: Arc<Pool>,
    #[pin]
    work: Work<Worker>,
}

impl_has_work! {
    impl HasWork<Self> for Worker { self.work }
}

impl Worker {
    pub(crate) fn new(pool: Arc<Pool>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Worker {
                pool,
                work <- new_work!("iommu_pt::Worker::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Queues the worker on `queue`, unless it is queued already.
    pub(crate) fn kick(self: &Arc<Self>, queue: &OwnedQueue) {
        // An `Err` means the work is already queued, which is all we want.
        let _ = queue.enqueue(self.clone());
    }
}

impl WorkItem for Worker {
    type Pointer = Arc<Worker>;

    fn run(this: Arc<Worker>) {
        refill::run(&this.pool);
    }
}
