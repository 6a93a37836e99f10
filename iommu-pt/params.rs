// SPDX-License-Identifier: GPL-2.0

//! Validation of the module parameters.

use kernel::prelude::*;

/// The most pages a node's pool may hold: 1 GiB of 4 KiB pages.
pub(crate) const MAX_CAPACITY: u32 = 1 << 18;

/// The pool's size limits, in pages per NUMA node, whether it checks the tables freed as all
/// zero, and whether its worker pre-fills and pre-zeroes the depots.
///
/// # Invariants
///
/// `1 <= low < high <= capacity <= MAX_CAPACITY`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Limits {
    capacity: usize,
    low: usize,
    high: usize,
    zero_check: bool,
    prefill: bool,
}

impl Limits {
    /// Checks the parameters, saying which one is wrong if any is.
    pub(crate) fn new(capacity: u32, low: u32, high: u32, zero_check: u32) -> Result<Self> {
        if capacity == 0 || capacity > MAX_CAPACITY {
            pr_err!("capacity={capacity} is out of range: 1..={MAX_CAPACITY} pages per node\n");
            return Err(EINVAL);
        }
        if low == 0 {
            pr_err!("low_watermark=0: the pool would never be refilled, use 1 or more\n");
            return Err(EINVAL);
        }
        if low >= high {
            pr_err!("low_watermark={low} must be below high_watermark={high}\n");
            return Err(EINVAL);
        }
        if high > capacity {
            pr_err!("high_watermark={high} must not exceed capacity={capacity}\n");
            return Err(EINVAL);
        }
        if zero_check > 1 {
            pr_err!("zero_check={zero_check}: use 0 (off) or 1 (on)\n");
            return Err(EINVAL);
        }
        // INVARIANT: Checked above; `u32` always fits in `usize` on the 64-bit kernels that have
        // generic_pt.
        Ok(Self {
            capacity: capacity as usize,
            low: low as usize,
            high: high as usize,
            zero_check: zero_check == 1,
            prefill: true,
        })
    }

    /// These limits, with pre-filling and pre-zeroing on (`prefill` 1, as [`Limits::new`] makes
    /// them) or off (0), saying so if `prefill` is neither.
    pub(crate) fn with_prefill(self, prefill: u32) -> Result<Self> {
        if prefill > 1 {
            pr_err!("prefill={prefill}: use 0 (keep only the tables given back) or 1 (pre-fill and pre-zero)\n");
            return Err(EINVAL);
        }
        Ok(Self {
            prefill: prefill == 1,
            ..self
        })
    }

    /// The most pages a node's pool holds; returned pages beyond it are freed.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Below this many clean pages, the refill worker is started.
    pub(crate) fn low(&self) -> usize {
        self.low
    }

    /// Whether every table freed as all zero is checked before the pool reuses it.
    pub(crate) fn zero_check(&self) -> bool {
        self.zero_check
    }

    /// The refill worker fills a node's pool up to this many pages.
    pub(crate) fn high(&self) -> usize {
        self.high
    }

    /// Whether the worker fills the depots from the page allocator up to [`Limits::high`] and
    /// zeroes their dirty pages while requests leave them alone. Without it the pool holds only
    /// the tables generic_pt gave back, a dirty one is zeroed when it is handed out, and the
    /// worker only sets up the depots that requests ask for.
    pub(crate) fn prefill(&self) -> bool {
        self.prefill
    }
}
