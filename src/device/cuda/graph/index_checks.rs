//! The index checks of captured gather/scatter kernels: each check's record word on the device (one buffer per
//! graph, so that each replay ends with one copy of them all), the page-locked mailbox those copies land in, and
//! the checks' reports.

use super::{lock, OP};
use crate::device::cuda::{check, cuda_err, state, State};
use crate::error::{Error, Result};
use alloc::boxed::Box;
use alloc::format;
use core::ffi::c_void;
use cust::sys as cu;

/// An out-of-range-index check of a captured gather/scatter kernel: which of the graph's record words the kernel
/// records the first bad index in, and how to turn that record into the error the eager op gives.
pub(crate) struct IndexCheck {
    pub(super) slot: usize,
    pub(super) report: Box<dyn Fn(u64) -> Error + Send + Sync>,
}

impl IndexCheck {
    /// `slot` as [`capture_record`] handed it out.
    pub(crate) fn new(slot: usize, report: Box<dyn Fn(u64) -> Error + Send + Sync>) -> Self {
        IndexCheck { slot, report }
    }
}

/// During a capture, a record word of the graph for a gather/scatter kernel to write its bad index to: its slot
/// and device address. The graph's words sit in one buffer, so that each replay ends with one copy of them all.
/// An error (which also fails the capture) past `Mailbox::CAPACITY` checks.
pub(crate) fn capture_record(op: &'static str) -> Result<(usize, cu::CUdeviceptr)> {
    let st = state(op)?;
    let mut cache = lock(st);
    let Some(rec) = cache.capture.as_mut() else {
        return Err(cuda_err(op, "no capture is running"));
    };
    if rec.records_used == Mailbox::CAPACITY {
        let message = format!(
            "a graph holds at most {} index-checked ops (gather, scatter_add, index_select, cross_entropy)",
            Mailbox::CAPACITY
        );
        rec.refused.get_or_insert((op, message.clone()));
        return Err(cuda_err(op, message));
    }
    let slot = rec.records_used;
    rec.records_used += 1;
    Ok((slot, rec.records + (slot * size_of::<u64>()) as u64))
}

/// Page-locked host memory that each replay's last operation copies the graph's index-check records into (slot
/// for slot), so that [`CudaGraph::replay`] reads what the finished replays found without waiting for the GPU. A
/// record stays set on the device until it is reported, so a slot only ever moves from "none" to a bad index,
/// whichever replay's copy lands last.
pub(super) struct Mailbox {
    pub(super) slots: *mut u64,
}

impl Mailbox {
    /// Checks one graph can hold (32 KiB of page-locked memory and as much device memory, allocated before each
    /// capture).
    pub(super) const CAPACITY: usize = 4096;

    pub(super) fn new(op: &'static str) -> Result<Self> {
        let mut slots: *mut c_void = core::ptr::null_mut();
        // SAFETY: the driver writes the address of a fresh page-locked allocation of the size asked to our local.
        check(op, unsafe {
            cu::cuMemAllocHost_v2(&mut slots, Self::CAPACITY * size_of::<u64>())
        })?;
        let mailbox = Mailbox {
            slots: slots.cast(),
        };
        for k in 0..Self::CAPACITY {
            mailbox.clear(k);
        }
        Ok(mailbox)
    }

    /// Slot `k` (`k < CAPACITY`), as the last copy into it left it.
    pub(super) fn read(&self, k: usize) -> u64 {
        debug_assert!(k < Self::CAPACITY);
        // SAFETY: `k` is inside the allocation; volatile, as the GPU's copies write it behind the compiler's back
        // (an aligned 8-byte word, written whole).
        unsafe { self.slots.add(k).read_volatile() }
    }

    /// Sets slot `k` to "no bad index" (only while no copy into it is queued).
    pub(super) fn clear(&self, k: usize) {
        debug_assert!(k < Self::CAPACITY);
        // SAFETY: as in `read`.
        unsafe { self.slots.add(k).write_volatile(u64::MAX) }
    }
}

impl Drop for Mailbox {
    fn drop(&mut self) {
        // SAFETY: `slots` came from `cuMemAllocHost_v2` and is freed once, after the last copy into it (the graph
        // that owns it synchronises the stream before its fields drop).
        let _ = unsafe { cu::cuMemFreeHost(self.slots.cast()) };
    }
}

// SAFETY: page-locked host memory is usable from any thread; the slots are read and written volatile, whole.
unsafe impl Send for Mailbox {}
// SAFETY: as for `Send`.
unsafe impl Sync for Mailbox {}

/// At the end of a capture: records one copy of the record words handed out into the mailbox, so that each
/// replay ends with it (a refusal, failing the capture, if queueing it fails).
pub(super) fn copy_records_out(st: &State, mailbox: &Mailbox) {
    let mut cache = lock(st);
    let Some(rec) = cache.capture.as_mut().filter(|r| r.records_used > 0) else {
        return;
    };
    // SAFETY: the destination is the page-locked mailbox, which the graph keeps while it lives, and the source the
    // graph's record words, as many as handed out (at most the mailbox's capacity). Queued on the capturing
    // stream: recorded, not run.
    let copied = check(OP, unsafe {
        cu::cuMemcpyDtoHAsync_v2(
            mailbox.slots.cast(),
            rec.records,
            rec.records_used * size_of::<u64>(),
            st.stream.as_inner(),
        )
    });
    if let Err(e) = copied {
        rec.refused
            .get_or_insert(("capture", format!("copying the index checks out: {e}")));
    }
}

/// Sets the first `n` record words at `records` to "no bad index" (all bits set: the kernels take an unsigned
/// atomic minimum). Queued in order with the device's stream.
pub(super) fn reset_records(op: &'static str, records: cu::CUdeviceptr, n: usize) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    // SAFETY: `records` is a live device allocation of at least `n` u64 words, that is `2 n` 32-bit words.
    check(op, unsafe { cu::cuMemsetD32_v2(records, u32::MAX, 2 * n) })
}

/// Defers a captured gather/scatter's index check to each replay.
pub(crate) fn defer_index_check(op: &'static str, check: IndexCheck) -> Result<()> {
    let st = state(op)?;
    if let Some(rec) = lock(st).capture.as_mut() {
        rec.checks.push(check);
    }
    Ok(())
}
