//! Gather and scatter-add over host memory: one walk over the index view, with the source (or destination)
//! offset rebuilt from the index at the chosen axis. Every index is checked before use.

use super::IndexingKernels;
use crate::device::host::elementwise::{assume_init, map_view_into};
use crate::device::host::kernels::copy;
use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::{for_each_row, Layout};
use core::mem::MaybeUninit;

/// The position `idx` names along an axis of `size`, or the op's error.
#[inline(always)]
fn position<I: IndexDType>(op: &'static str, axis: usize, idx: I, size: usize) -> Result<usize> {
    match idx.to_index() {
        Some(p) if p < size => Ok(p),
        _ => Err(Error::IndexOutOfRange {
            op,
            axis,
            index: idx.to_signed(),
            size,
        }),
    }
}

/// Writes `src` gathered along `axis` by the index view into `out` (`li.numel()` slots, all written: a bad
/// index writes zero there, and the first bad index is the error).
pub(crate) fn gather_into<T: WithDType, I: IndexDType>(
    op: &'static str,
    out: &mut [MaybeUninit<T>],
    (src, ls): (&[T], &Layout),
    (idx, li): (&[I], &Layout),
    axis: usize,
) -> Result<()> {
    let (size, step) = (ls.dims()[axis], ls.strides()[axis]);
    let walk = ls.along_index(li, axis);
    let mut err = None;
    let mut at = 0;
    for_each_row(li.dims(), [li, &walk], |[io, so], len, [is, ss]| {
        for (i, o) in out[at..at + len].iter_mut().enumerate() {
            o.write(match position(op, axis, idx[io + i * is], size) {
                Ok(p) => src[so + i * ss + p * step],
                Err(e) => {
                    err.get_or_insert(e);
                    T::ZERO
                }
            });
        }
        at += len;
    });
    err.map_or(Ok(()), Err)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn scatter_add_into<T: WithDType, I: IndexDType>(
    op: &'static str,
    out: &mut [T],
    ld: &Layout,
    idx: &[I],
    li: &Layout,
    src: &[T],
    ls: &Layout,
    axis: usize,
) -> Result<()> {
    // `out` is the contiguous copy of the destination view.
    let dense = Layout::contiguous(*ld.dims());
    let (size, step) = (dense.dims()[axis], dense.strides()[axis]);
    let walk = dense.along_index(li, axis);
    // Check every index first, so a bad one leaves nothing half-written.
    let mut err = None;
    for_each_row(li.dims(), [li], |[io], len, [is]| {
        for i in 0..len {
            if let Err(e) = position(op, axis, idx[io + i * is], size) {
                err.get_or_insert(e);
            }
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    for_each_row(
        li.dims(),
        [li, &walk, ls],
        |[io, wo, so], len, [is, ws, ss]| {
            for i in 0..len {
                let p = idx[io + i * is].to_index().unwrap_or(0); // checked above
                let k = wo + i * ws + p * step;
                out[k] = out[k].add(src[so + i * ss]);
            }
        },
    );
    Ok(())
}

/// `Kernels`-style gather on host memory: the body both host devices run.
#[inline]
pub(crate) fn gather<T: WithDType, I: IndexDType>(
    op: &'static str,
    src: (&[T], &Layout),
    idx: (&[I], &Layout),
    axis: usize,
    out: &mut [MaybeUninit<T>],
) -> Result<()> {
    gather_into(op, &mut out[..idx.1.numel()], src, idx, axis)
}

#[inline]
pub(crate) fn scatter_add<T: WithDType, I: IndexDType>(
    op: &'static str,
    (dst, ld): (&[T], &Layout),
    (idx, li): (&[I], &Layout),
    (src, ls): (&[T], &Layout),
    axis: usize,
    out: &mut [MaybeUninit<T>],
) -> Result<()> {
    let out = &mut out[..ld.numel()];
    copy((dst, ld), out);
    // SAFETY: `copy` just wrote every element.
    let out = unsafe { assume_init(out) };
    scatter_add_into(op, out, ld, idx, li, src, ls, axis)
}

/// Cross entropy's gradient (`IndexingKernels::cross_entropy_backward`) on host memory: `exp` of the
/// log-probabilities through the elementwise loop (vectorised, and split across threads when large), then each row
/// scaled by its gradient, which is also taken off at the row's label.
pub(crate) fn cross_entropy_backward<T: FloatDType, I: IndexDType>(
    (log_probs, llp): (&[T], &Layout),
    (labels, llab): (&[I], &Layout),
    (g, lg): (&[T], &Layout),
    out: &mut [MaybeUninit<T>],
) {
    let n = llp.numel();
    let out = &mut out[..n];
    map_view_into(out, log_probs, llp, |x: T| x.exp());
    // SAFETY: `map_view_into` just wrote every element.
    let out = unsafe { assume_init(out) };
    let classes = llp.dims().last().copied().unwrap_or(1);
    if classes == 0 {
        return;
    }
    for (row, values) in out.chunks_exact_mut(classes).enumerate() {
        let gr = g[lg.offset_of(row)];
        for v in values.iter_mut() {
            *v = v.mul(gr);
        }
        if let Some(c) = labels[llab.offset_of(row)]
            .to_index()
            .filter(|&c| c < classes)
        {
            values[c] = values[c].sub(gr);
        }
    }
}

/// `IndexingKernels` for a device with host memory: the bodies above, for `Embedded` and `Cpu` alike.
macro_rules! host_indexing_kernels {
    ($device:ty) => {
        // SAFETY: gather writes one value per index position (zero where an index is bad, whose error is
        // returned); scatter_add copies the destination whole first.
        unsafe impl IndexingKernels for $device {
            #[inline]
            fn gather<T: WithDType, I: IndexDType>(
                op: &'static str,
                src: (&[T], &Layout),
                idx: (&[I], &Layout),
                axis: usize,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                gather(op, src, idx, axis, out)
            }

            #[inline]
            fn scatter_add<T: WithDType, I: IndexDType>(
                op: &'static str,
                dst: (&[T], &Layout),
                idx: (&[I], &Layout),
                src: (&[T], &Layout),
                axis: usize,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                scatter_add(op, dst, idx, src, axis, out)
            }

            #[inline]
            fn cross_entropy_backward<T: FloatDType, I: IndexDType>(
                log_probs: (&[T], &Layout),
                labels: (&[I], &Layout),
                g: (&[T], &Layout),
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                cross_entropy_backward(log_probs, labels, g, out);
                Ok(())
            }
        }
    };
}

host_indexing_kernels!(crate::device::Embedded);
#[cfg(feature = "alloc")]
host_indexing_kernels!(crate::device::Cpu);
