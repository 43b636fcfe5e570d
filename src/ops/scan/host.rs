//! The family's host kernels, one body for `Cpu` and `Embedded`: each lane walked in order by [`Scan::run`], read
//! in place from the strided input and written once into the dense output. With `std`, the CPU splits large
//! tensors' lanes across cores.

use super::{Scan, ScanKernels};
use crate::device::host::elementwise::zeroed;
use crate::dtype::{Accumulator, WithDType};
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use crate::shape::MAX_RANK;
use core::mem::MaybeUninit;

/// From this many elements on, the CPU runs lanes on every core (`std` only).
#[cfg(feature = "std")]
const PARALLEL_ELEMS: usize = 1 << 15;

/// Calls `lane(starts, out, o0, os)` for every lane along `axis` of the inputs (whose dims are `inputs[0]`'s):
/// `starts[k]` is input `k`'s storage index of the lane's first element, and the lane's outputs are
/// `out[o0 + i * os]` in the dense output. With `threads` (the CPU under `std`) a large tensor's lanes run on every
/// core, each thread owning whole slabs of the output (a slab per index of the axes before `axis`).
fn for_each_lane<const K: usize, O: Send>(
    inputs: [&Layout; K],
    axis: usize,
    out: &mut [O],
    threads: bool,
    lane: impl Fn([usize; K], &mut [O], usize, usize) + Sync,
) {
    let dims = *inputs[0].dims();
    let mut on_axis = [false; MAX_RANK];
    on_axis[axis] = true;
    let split: [(Layout, Layout); K] = core::array::from_fn(|k| inputs[k].split_reduced(&on_axis));
    let outer: [&Layout; K] = core::array::from_fn(|k| &split[k].0);
    // Lanes in row-major order of the other axes: lane `l` starts at `(l / inner) n inner + l % inner` in the
    // dense output and steps by `inner`.
    let n = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    #[cfg(feature = "std")]
    if threads && out.len() >= PARALLEL_ELEMS && out.len() > n * inner {
        use rayon::prelude::*;
        let mut starts: alloc::vec::Vec<[usize; K]> = alloc::vec::Vec::with_capacity(out.len() / n);
        for_each_row(outer[0].dims(), outer, |o, len, s| {
            starts.extend(
                (0..len).map(|i| -> [usize; K] { core::array::from_fn(|k| o[k] + i * s[k]) }),
            )
        });
        out.par_chunks_mut(n * inner)
            .zip(starts.par_chunks(inner))
            .for_each(|(slab, slab_starts)| {
                for (j, &st) in slab_starts.iter().enumerate() {
                    lane(st, slab, j, inner);
                }
            });
        return;
    }
    let _ = threads;
    let mut first = 0;
    for_each_row(outer[0].dims(), outer, |o, len, s| {
        for i in 0..len {
            let l = first + i;
            lane(
                core::array::from_fn(|k| o[k] + i * s[k]),
                out,
                l / inner * n * inner + l % inner,
                inner,
            );
        }
        first += len;
    });
}

/// The scan `op` of every lane along `axis` of `src`/`layout` into `out` (dense, every element written).
pub(crate) fn scan_into<T: WithDType>(
    op: Scan,
    (src, layout): (&[T], &Layout),
    axis: usize,
    reverse: bool,
    out: &mut [T],
    threads: bool,
) {
    let n = layout.dims()[axis];
    let xs = axis_stride(layout, axis);
    for_each_lane([layout], axis, out, threads, |[x0], out, o0, os| {
        let order = |k: usize| if reverse { n - 1 - k } else { k };
        op.run::<T::Acc>(
            n,
            order,
            |i| src[x0 + i * xs].to_acc(),
            |i, y| out[o0 + i * os] = T::from_acc(y),
        );
    });
}

/// The running maximum's or minimum's indices (see [`ScanKernels::scan_index`]) into `out`.
pub(crate) fn scan_index_into<T: WithDType>(
    op: Scan,
    (src, layout): (&[T], &Layout),
    axis: usize,
    out: &mut [u32],
    threads: bool,
) {
    let n = layout.dims()[axis];
    let xs = axis_stride(layout, axis);
    for_each_lane([layout], axis, out, threads, |[x0], out, o0, os| {
        op.run_index::<T::Acc>(
            n,
            |i| src[x0 + i * xs].to_acc(),
            |i, at| out[o0 + i * os] = at,
        );
    });
}

/// `cumprod`'s gradient (see [`ScanKernels::cumprod_backward`]) into `out`: `R` is written first (rounded to
/// `T`, as on CUDA), then multiplied by the running product of the elements before.
pub(crate) fn cumprod_backward_into<T: WithDType>(
    (x, lx): (&[T], &Layout),
    (g, lg): (&[T], &Layout),
    axis: usize,
    out: &mut [T],
    threads: bool,
) {
    let n = lx.dims()[axis];
    let (xs, gs) = (axis_stride(lx, axis), axis_stride(lg, axis));
    for_each_lane([lx, lg], axis, out, threads, |[x0, g0], out, o0, os| {
        let x = |i: usize| x[x0 + i * xs].to_acc();
        let mut r = T::Acc::ZERO;
        for i in (0..n).rev() {
            let gi = g[g0 + i * gs].to_acc();
            r = if i + 1 == n {
                gi
            } else {
                gi.add(x(i + 1).mul(r))
            };
            out[o0 + i * os] = T::from_acc(r);
            r = out[o0 + i * os].to_acc();
        }
        let mut p = T::Acc::ONE;
        for i in 0..n {
            let o = &mut out[o0 + i * os];
            *o = T::from_acc(p.mul(o.to_acc()));
            p = p.mul(x(i));
        }
    });
}

/// The stride of `axis` in `layout`.
fn axis_stride(layout: &Layout, axis: usize) -> usize {
    layout.strides()[axis]
}

macro_rules! host_scan_kernels {
    ($device:ty, $threads:expr) => {
        // SAFETY: every body zeroes the output first, then writes every lane of it.
        unsafe impl ScanKernels for $device {
            #[inline]
            fn scan<T: WithDType>(
                op: Scan,
                src: (&[T], &Layout),
                axis: usize,
                reverse: bool,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                let out = zeroed(&mut out[..src.1.numel()]);
                scan_into(op, src, axis, reverse, out, $threads);
                Ok(())
            }
            #[inline]
            fn scan_index<T: WithDType>(
                op: Scan,
                src: (&[T], &Layout),
                axis: usize,
                out: &mut [MaybeUninit<u32>],
            ) -> Result<()> {
                let out = zeroed(&mut out[..src.1.numel()]);
                scan_index_into(op, src, axis, out, $threads);
                Ok(())
            }
            #[inline]
            fn cumprod_backward<T: WithDType>(
                x: (&[T], &Layout),
                g: (&[T], &Layout),
                axis: usize,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                let out = zeroed(&mut out[..x.1.numel()]);
                cumprod_backward_into(x, g, axis, out, $threads);
                Ok(())
            }
        }
    };
}

host_scan_kernels!(crate::device::Embedded, false);
#[cfg(feature = "alloc")]
host_scan_kernels!(crate::device::Cpu, true);
