//! The family's host kernels, one body for `Cpu` and `Embedded`: each lane walked in order by [`Scan::run`], read
//! in place from the strided input and written once into the dense output. The CPU walks the output a slab at a
//! time (the lanes of one index of the axes before the scanned one): lanes that lie side by side (a scan along a
//! leading axis) go row by row through [`Scan::run_rows`], and with `std` a large tensor's slabs run on every
//! core. `Embedded` walks one lane at a time, with no heap.

use super::{Cumulative, Scan, ScanKernels};
#[cfg(feature = "alloc")]
use crate::device::host::elementwise::each_chunk;
use crate::device::host::elementwise::zeroed;
use crate::dtype::{Accumulator, WithDType};
use crate::error::Result;
use crate::layout::{for_each_lane, Layout};
use core::mem::MaybeUninit;

/// Calls `slab(starts, out_slab)` for every slab of the dense output (the `n x inner` elements of one index of
/// the axes before `axis`, lane `j`'s element `i` at `i * inner + j`), with the first-element indices of the
/// slab's `inner` lanes in each input; a large tensor's slabs run on every core (`std`).
#[cfg(feature = "alloc")]
fn for_each_slab<const K: usize, O: Send>(
    inputs: [&Layout; K],
    axis: usize,
    out: &mut [O],
    slab: impl Fn(&[[usize; K]], &mut [O]) + Sync,
) {
    let mut starts: alloc::vec::Vec<[usize; K]> = alloc::vec::Vec::new();
    for_each_lane(inputs, axis, |st, _| starts.push(st));
    let dims = inputs[0].dims();
    let (n, inner) = (dims[axis], dims[axis + 1..].iter().product::<usize>());
    each_chunk(out, n * inner, true, |b, o| {
        slab(&starts[b * inner..][..inner], o)
    });
}

/// Where the host kernels' lanes come from: `Embedded` walks each lane on its own with no heap; the CPU walks
/// slabs (threads for large tensors, and side-by-side lanes row by row).
#[derive(Clone, Copy, PartialEq)]
enum Walk {
    Lanes,
    #[cfg(feature = "alloc")]
    Slabs,
}

/// Calls `lane(starts, out, o0, os)` for every lane along `axis` of the inputs: `starts[k]` is input `k`'s storage
/// index of the lane's first element, and the lane's outputs are `out[o0 + i * os]`; walking slabs, `out` is the
/// lane's slab (threads for large tensors).
fn each_lane<const K: usize, O: Send>(
    walk: Walk,
    inputs: [&Layout; K],
    axis: usize,
    out: &mut [O],
    lane: impl Fn([usize; K], &mut [O], usize, usize) + Sync,
) {
    let inner: usize = inputs[0].dims()[axis + 1..].iter().product();
    match walk {
        Walk::Lanes => for_each_lane(inputs, axis, |st, o0| lane(st, out, o0, inner)),
        #[cfg(feature = "alloc")]
        Walk::Slabs => for_each_slab(inputs, axis, out, |starts, slab| {
            for (j, &st) in starts.iter().enumerate() {
                lane(st, slab, j, inner);
            }
        }),
    }
}

/// The scan `op` of every lane along `axis` of `src`/`layout` into `out` (dense, every element written).
fn scan_into<T: WithDType>(
    walk: Walk,
    op: Scan,
    (src, layout): (&[T], &Layout),
    axis: usize,
    order: Cumulative,
    out: &mut [T],
) {
    let dims = *layout.dims();
    let (n, xs) = (dims[axis], layout.strides()[axis]);
    let at = move |k: usize| if order.reverse { n - 1 - k } else { k };
    #[cfg(feature = "alloc")]
    if walk == Walk::Slabs && dims[axis + 1..].iter().product::<usize>() > 1 {
        // Lanes side by side: row by row, each row of the slab read and written once.
        let inner: usize = dims[axis + 1..].iter().product();
        for_each_slab([layout], axis, out, |starts, slab| {
            // Side-by-side lanes that are also neighbours in the input read each row as one slice.
            let neighbours = starts.windows(2).all(|w| w[1][0] == w[0][0] + 1);
            op.run_rows::<T::Acc>(
                n,
                inner,
                order.exclusive,
                |i, row| {
                    let first = at(i) * xs;
                    if neighbours {
                        let xs = &src[starts[0][0] + first..][..inner];
                        for (a, x) in row.iter_mut().zip(xs) {
                            *a = x.to_acc();
                        }
                    } else {
                        for (a, st) in row.iter_mut().zip(starts) {
                            *a = src[st[0] + first].to_acc();
                        }
                    }
                },
                |i, row| {
                    for (o, &y) in slab[at(i) * inner..][..inner].iter_mut().zip(row) {
                        *o = T::from_acc(y);
                    }
                },
            );
        });
        return;
    }
    each_lane(walk, [layout], axis, out, |[x0], out, o0, os| {
        op.run::<T::Acc>(
            n,
            at,
            order.exclusive,
            |i| src[x0 + i * xs].to_acc(),
            |i, y| out[o0 + i * os] = T::from_acc(y),
        );
    });
}

/// The running maximum's or minimum's indices (see [`ScanKernels::scan_index`]) into `out`.
fn scan_index_into<T: WithDType>(
    walk: Walk,
    op: Scan,
    (src, layout): (&[T], &Layout),
    axis: usize,
    out: &mut [u32],
) {
    let (n, xs) = (layout.dims()[axis], layout.strides()[axis]);
    each_lane(walk, [layout], axis, out, |[x0], out, o0, os| {
        op.run_index::<T::Acc>(
            n,
            |i| src[x0 + i * xs].to_acc(),
            |i, at| out[o0 + i * os] = at,
        );
    });
}

/// `cumprod`'s gradient (see [`ScanKernels::cumprod_backward`]) into `out`: `R` is written first (rounded to
/// `T`, as on CUDA), then multiplied by the running product of the elements before.
fn cumprod_backward_into<T: WithDType>(
    walk: Walk,
    (x, lx): (&[T], &Layout),
    (g, lg): (&[T], &Layout),
    axis: usize,
    exclusive: bool,
    out: &mut [T],
) {
    let (n, xs, gs) = (lx.dims()[axis], lx.strides()[axis], lg.strides()[axis]);
    each_lane(walk, [lx, lg], axis, out, |[x0, g0], out, o0, os| {
        let x = |i: usize| x[x0 + i * xs].to_acc();
        // The exclusive product's output i + 1 is the inclusive one's i: its gradient stands in, 0 past the end.
        let g = |i: usize| match (exclusive, i + 1 < n) {
            (false, _) => g[g0 + i * gs].to_acc(),
            (true, true) => g[g0 + (i + 1) * gs].to_acc(),
            (true, false) => T::Acc::ZERO,
        };
        let mut r = T::Acc::ZERO;
        for i in (0..n).rev() {
            let gi = g(i);
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

macro_rules! host_scan_kernels {
    ($device:ty, $walk:expr) => {
        // SAFETY: every body zeroes the output first, then writes every lane of it (an empty output has nothing
        // to write, and returns before walking lanes: `(0, 2^40)` along axis 1 has 2^40 of them).
        unsafe impl ScanKernels for $device {
            #[inline]
            fn scan<T: WithDType>(
                op: Scan,
                src: (&[T], &Layout),
                axis: usize,
                order: Cumulative,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                if src.1.numel() == 0 {
                    return Ok(());
                }
                let out = zeroed(&mut out[..src.1.numel()]);
                scan_into($walk, op, src, axis, order, out);
                Ok(())
            }
            #[inline]
            fn scan_index<T: WithDType>(
                op: Scan,
                src: (&[T], &Layout),
                axis: usize,
                out: &mut [MaybeUninit<u32>],
            ) -> Result<()> {
                if src.1.numel() == 0 {
                    return Ok(());
                }
                let out = zeroed(&mut out[..src.1.numel()]);
                scan_index_into($walk, op, src, axis, out);
                Ok(())
            }
            #[inline]
            fn cumprod_backward<T: WithDType>(
                x: (&[T], &Layout),
                g: (&[T], &Layout),
                axis: usize,
                exclusive: bool,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                if x.1.numel() == 0 {
                    return Ok(());
                }
                let out = zeroed(&mut out[..x.1.numel()]);
                cumprod_backward_into($walk, x, g, axis, exclusive, out);
                Ok(())
            }
        }
    };
}

host_scan_kernels!(crate::device::Embedded, Walk::Lanes);
#[cfg(feature = "alloc")]
host_scan_kernels!(crate::device::Cpu, Walk::Slabs);
