// SPDX-License-Identifier: GPL-2.0

//! The pool's CPU hotplug callbacks: a CPU that goes offline leaves no page stranded in its
//! cache, and a CPU that comes up caches pages of its own memory node.

use crate::pool::Pool;
use kernel::{
    cpuhp::{
        OfflineCpu,
        PrepareCallbacks, //
    },
    prelude::*,
    sync::Arc,
};

/// The pool, as the CPU hotplug state sees it.
pub(crate) struct PoolHotplug(pub(crate) Arc<Pool>);

impl PrepareCallbacks for PoolHotplug {
    fn prepare(&self, cpu: &OfflineCpu<'_>) -> Result {
        self.0.cpu_prepare(cpu);
        Ok(())
    }

    fn dead(&self, cpu: &OfflineCpu<'_>) {
        self.0.cpu_dead(cpu);
    }
}
