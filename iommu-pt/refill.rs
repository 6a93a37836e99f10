// SPDX-License-Identifier: GPL-2.0

//! The refill worker: zeroes returned pages and tops the pool up, off the map path.

use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{
        impl_has_work,
        new_work,
        Work,
        WorkItem, //
    },
};

/// The work item that runs [`crate::pool::refill`].
#[pin_data]
pub(crate) struct Refiller {
    #[pin]
    work: Work<Refiller>,
}

impl_has_work! {
    impl HasWork<Self> for Refiller { self.work }
}

impl Refiller {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Refiller {
                work <- new_work!("iommu_pt::Refiller::work"),
            }),
            GFP_KERNEL,
        )
    }
}

impl WorkItem for Refiller {
    type Pointer = Arc<Refiller>;

    fn run(_this: Arc<Refiller>) {
        crate::pool::refill();
    }
}
