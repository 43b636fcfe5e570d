//! The family's host kernels, one body for `Cpu` and `Embedded`. The output is walked a block at a time (the
//! `n_out x inner` outputs of one index of the axes before the resampled one), each output position's taps applied
//! to the block's `inner` side-by-side lanes, so a resample along a leading axis reads and writes whole rows. The
//! CPU computes the taps once per call into a table and runs blocks on every core for large outputs; `Embedded`
//! computes each where it is used, with no heap.

use super::{Resample, ResampleKernels, Taps};
use crate::device::host::elementwise::{each_chunk, zeroed};
use crate::dtype::{Accumulator, FloatDType, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::MAX_RANK;
use core::mem::MaybeUninit;

/// Where the lanes along `axis` of a strided view start: block `b` (an index of the axes before `axis`, row-major)
/// and lane `j` within it (an index of the axes after).
struct Lanes {
    dims: [usize; MAX_RANK],
    strides: [usize; MAX_RANK],
    offset: usize,
    axis: usize,
    rank: usize,
    /// The stride between neighbouring lanes of a block, when the axes after `axis` walk memory as one.
    step: Option<usize>,
}

impl Lanes {
    fn new(layout: &Layout, axis: usize) -> Self {
        let (rank, d, s) = (layout.rank(), layout.dims(), layout.strides());
        let mergeable = (axis + 1..rank.saturating_sub(1)).all(|k| s[k] == d[k + 1] * s[k + 1]);
        let step = match (mergeable, axis + 1 < rank) {
            (true, true) => Some(s[rank - 1]),
            (true, false) => Some(0), // one lane per block
            _ => None,
        };
        let (mut dims, mut strides) = ([0; MAX_RANK], [0; MAX_RANK]);
        dims[..rank].copy_from_slice(d);
        strides[..rank].copy_from_slice(s);
        Lanes {
            dims,
            strides,
            offset: layout.offset(),
            axis,
            rank,
            step,
        }
    }

    /// The storage index of the first element of block `b`'s first lane.
    fn block(&self, mut b: usize) -> usize {
        let mut at = self.offset;
        for k in (0..self.axis).rev() {
            at += b % self.dims[k] * self.strides[k];
            b /= self.dims[k];
        }
        at
    }

    /// The storage index of the first element of lane `j` of the block starting at `block`.
    #[inline(always)]
    fn lane(&self, block: usize, mut j: usize) -> usize {
        if let Some(step) = self.step {
            return block + j * step;
        }
        let mut at = block;
        for k in (self.axis + 1..self.rank).rev() {
            at += j % self.dims[k] * self.strides[k];
            j /= self.dims[k];
        }
        at
    }
}

/// One output from its taps, `get(i)` reading input `i` of the lane: the weighted taps summed in order, or the
/// bin's sum divided by its length, in the accumulator type.
#[inline(always)]
fn apply<T: WithDType>(taps: &Taps, get: impl Fn(usize) -> T) -> T {
    match *taps {
        Taps::Weighted {
            index,
            weight,
            count,
        } => {
            let mut acc = T::Acc::ZERO;
            for k in 0..count {
                acc = acc.add(T::Acc::from_f64(weight[k]).mul(get(index[k]).to_acc()));
            }
            T::from_acc(acc)
        }
        Taps::Bin { start, end } => {
            let mut acc = T::Acc::ZERO;
            for i in start..end {
                acc = acc.add(get(i).to_acc());
            }
            T::from_acc(acc.div(T::Acc::from_usize(end - start)))
        }
    }
}

/// [`ResampleKernels::resample`] of `(x, lx)` into `out`, with `taps(o)` the taps of output `o`.
fn resample_into<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    axis: usize,
    n_out: usize,
    taps: &(impl Fn(usize) -> Taps + Sync),
    parallel: bool,
    out: &mut [MaybeUninit<T>],
) {
    let dims = lx.dims();
    let inner: usize = dims[axis + 1..].iter().product();
    let blocks: usize = dims[..axis].iter().product();
    let (lanes, xs) = (Lanes::new(lx, axis), lx.strides()[axis]);
    let out = &mut out[..blocks * n_out * inner];
    each_chunk(out, n_out * inner, parallel, |b, block| {
        let start = lanes.block(b);
        for (o, row) in block.chunks_exact_mut(inner).enumerate() {
            let t = taps(o);
            for (j, slot) in row.iter_mut().enumerate() {
                let lane = lanes.lane(start, j);
                slot.write(apply(&t, |i| x[lane + i * xs]));
            }
        }
    });
}

/// [`ResampleKernels::resample_backward`] of `(g, lg)` into `out`, with `taps(o)` the taps of output `o`.
fn resample_backward_into<T: FloatDType>(
    (g, lg): (&[T], &Layout),
    axis: usize,
    n_in: usize,
    taps: &(impl Fn(usize) -> Taps + Sync),
    parallel: bool,
    out: &mut [MaybeUninit<T>],
) {
    let dims = lg.dims();
    let n_out = dims[axis];
    let inner: usize = dims[axis + 1..].iter().product();
    let blocks: usize = dims[..axis].iter().product();
    let (lanes, gs) = (Lanes::new(lg, axis), lg.strides()[axis]);
    let out = &mut out[..blocks * n_in * inner];
    each_chunk(out, n_in * inner, parallel, |b, block| {
        let block = zeroed(block);
        let start = lanes.block(b);
        // Rounded to T at each addition: the same sums, in the same order, as the CUDA kernel's.
        let add = |d: &mut T, v: T::Acc| *d = T::from_acc(d.to_acc().add(v));
        for o in 0..n_out {
            let t = taps(o);
            for j in 0..inner {
                let gv = g[lanes.lane(start, j) + o * gs].to_acc();
                match t {
                    Taps::Weighted {
                        index,
                        weight,
                        count,
                    } => {
                        for k in 0..count {
                            let v = T::Acc::from_f64(weight[k]).mul(gv);
                            add(&mut block[index[k] * inner + j], v);
                        }
                    }
                    Taps::Bin { start, end } => {
                        let v = gv.div(T::Acc::from_usize(end - start));
                        for i in start..end {
                            add(&mut block[i * inner + j], v);
                        }
                    }
                }
            }
        }
    });
}

/// [`ResampleKernels::resample`] on the host: the CPU (`parallel`) computes the taps once into a table, `Embedded`
/// where each is used.
fn forward<T: FloatDType>(
    op: Resample,
    src: (&[T], &Layout),
    axis: usize,
    n_out: usize,
    parallel: bool,
    out: &mut [MaybeUninit<T>],
) {
    let n_in = src.1.dims()[axis];
    if src.1.numel() == 0 || n_out == 0 {
        return; // nothing to write (and no taps for an empty input)
    }
    #[cfg(feature = "alloc")]
    if parallel {
        let taps = table(op, n_in, n_out);
        return resample_into(src, axis, n_out, &|o| taps[o], true, out);
    }
    let _ = parallel; // without `alloc`, only `Embedded`
    resample_into(src, axis, n_out, &|o| op.taps(o, n_in, n_out), false, out);
}

/// [`ResampleKernels::resample_backward`] on the host, the taps as in [`forward`].
fn backward<T: FloatDType>(
    op: Resample,
    grad: (&[T], &Layout),
    axis: usize,
    n_in: usize,
    parallel: bool,
    out: &mut [MaybeUninit<T>],
) {
    let n_out = grad.1.dims()[axis];
    if n_in == 0 {
        return; // an empty input's gradient has no elements
    }
    #[cfg(feature = "alloc")]
    if parallel {
        let taps = table(op, n_in, n_out);
        return resample_backward_into(grad, axis, n_in, &|o| taps[o], true, out);
    }
    let _ = parallel;
    let taps = |o| op.taps(o, n_in, n_out);
    resample_backward_into(grad, axis, n_in, &taps, false, out);
}

/// The taps of every output position of an axis of `n_in -> n_out`, computed once (the CPU's table).
#[cfg(feature = "alloc")]
fn table(op: Resample, n_in: usize, n_out: usize) -> alloc::vec::Vec<Taps> {
    (0..n_out).map(|o| op.taps(o, n_in, n_out)).collect()
}

macro_rules! host_resample_kernels {
    ($device:ty, $parallel:expr) => {
        // SAFETY: `resample_into` writes every output element; `resample_backward_into` zeroes each block first.
        unsafe impl ResampleKernels for $device {
            fn resample<T: FloatDType>(
                op: Resample,
                src: (&[T], &Layout),
                axis: usize,
                n_out: usize,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                forward(op, src, axis, n_out, $parallel, out);
                Ok(())
            }

            fn resample_backward<T: FloatDType>(
                op: Resample,
                grad: (&[T], &Layout),
                axis: usize,
                n_in: usize,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                backward(op, grad, axis, n_in, $parallel, out);
                Ok(())
            }
        }
    };
}

host_resample_kernels!(crate::device::Embedded, false);
#[cfg(feature = "alloc")]
host_resample_kernels!(crate::device::Cpu, true);
