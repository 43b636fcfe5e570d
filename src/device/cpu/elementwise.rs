//! The CPU's vector-producing forms of the host's elementwise loops: fresh vectors (from the buffer [`pool`])
//! written through the loops of [`crate::device::host::elementwise`], for host copies and scratch.

use super::pool;
use crate::device::host::elementwise::map_view_into;
use crate::dtype::{Plain, WithDType};
use crate::layout::Layout;
use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// A fresh vector of `n` elements written by `fill`.
///
/// # Safety
///
/// `fill` must write an initialised value to every one of the `n` slots it receives (the host loops write one
/// per element of their view, so a view of `n` elements fills them all).
#[inline(always)]
pub(crate) unsafe fn collect_into<U: Plain>(
    n: usize,
    fill: impl FnOnce(&mut [MaybeUninit<U>]),
) -> Vec<U> {
    let mut out = pool::with_capacity(n);
    fill(&mut out.spare_capacity_mut()[..n]);
    // SAFETY: `fill` wrote all `n` elements (the contract); if it panicked we never get here and the vector
    // drops as empty.
    unsafe { out.set_len(n) };
    out
}

/// `f` of every element of a view, in row-major order.
#[inline(always)]
pub(crate) fn map_view<T: WithDType, U: Plain + Send>(
    src: &[T],
    layout: &Layout,
    f: impl Fn(T) -> U + Sync,
) -> Vec<U> {
    // SAFETY: `map_view_into` writes one value per element of the view: all `layout.numel()` slots.
    unsafe { collect_into(layout.numel(), |out| map_view_into(out, src, layout, f)) }
}

/// A view's elements as a dense row-major slice: borrowed when the view is already dense, else copied.
pub(crate) fn dense_view<'a, T: WithDType>(src: &'a [T], layout: &Layout) -> Cow<'a, [T]> {
    match layout.contiguous_range() {
        Some(range) => Cow::Borrowed(&src[range]),
        None => Cow::Owned(map_view(src, layout, |v| v)),
    }
}
