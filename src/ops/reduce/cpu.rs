//! Reductions on the host: every output folds its elements in index order (or, for a column sum, rows are added
//! into rows of accumulators); large inputs are split across threads.

#[cfg(feature = "std")]
use super::host::fold_view;
use super::host::reduce_rows_into;
use super::ReduceKernels;
#[cfg(feature = "std")]
use crate::device::host::elementwise::PARALLEL_MIN;
use crate::device::Cpu;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use crate::ops::ReduceOp;
use crate::shape::MAX_RANK;
#[cfg(feature = "std")]
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// `op` over the axes marked in `reduced`; the output is contiguous over the kept axes, in order.
///
/// From [`PARALLEL_MIN`] input elements on, the work is split across threads: along the first kept axis when
/// there is one (each part owns a contiguous block of outputs), otherwise along the first reduced axis, whose
/// parts' partial states are merged in index order (so argmax still picks the first of tied maxima).
fn reduce<T: WithDType, Op: ReduceOp<T>>(
    op: Op,
    src: &[T],
    layout: &Layout,
    reduced: &[bool; MAX_RANK],
    out: &mut [MaybeUninit<Op::Out>],
) {
    #[cfg(feature = "std")]
    if layout.numel() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
        let dims = layout.dims();
        let axis_to_split = |want_reduced: bool| {
            (0..layout.rank()).find(|&ax| reduced[ax] == want_reduced && dims[ax] > 1)
        };
        if let Some(ax) = axis_to_split(false) {
            // Kept axes before `ax` have size 1, so each step along it owns `per_step` consecutive outputs.
            let per_step = layout.split_reduced(reduced).0.numel() / dims[ax];
            let mut blocks = Vec::new();
            let mut rest = &mut out[..per_step * dims[ax]];
            for (start, len) in parts(dims[ax]) {
                let (block, tail) = rest.split_at_mut(len * per_step);
                blocks.push((start, len, block));
                rest = tail;
            }
            par_blocks(blocks, &|start, len, block| {
                let part = layout.narrow(Op::NAME, ax, start, len).expect("in bounds");
                reduce_serial(op, src, &part, reduced, block)
            });
            return;
        }
        if let Some(ax) = axis_to_split(true) {
            // One output: the reduced elements after axis `ax` number `per_step` per step along it.
            let count = layout.numel();
            let per_step = count / dims[ax];
            let partials = par_partials(parts(dims[ax]), &|start, len| {
                let part = layout.narrow(Op::NAME, ax, start, len).expect("in bounds");
                fold_view(&op, src, &part, op.init(), start * per_step)
            });
            let acc = partials
                .into_iter()
                .reduce(|a, b| op.merge(a, b))
                .expect("at least one part");
            out[0].write(op.finish(acc, count));
            return;
        }
    }
    reduce_serial(op, src, layout, reduced, out)
}

/// `job(start, len, block)` for each block of outputs, side by side on rayon's threads. The job is a trait object
/// so that rayon's machinery is compiled once per output type, not once per (op, dtype): see the elementwise
/// loops' `par_chunks`, which split the output evenly; these blocks follow the pieces of the split axis instead,
/// as an output of a few thousand elements can still stand for millions of inputs.
#[cfg(feature = "std")]
#[inline(never)]
fn par_blocks<O: Send>(
    blocks: Vec<(usize, usize, &mut [O])>,
    job: &(dyn Fn(usize, usize, &mut [O]) + Sync),
) {
    use rayon::prelude::*;
    blocks
        .into_par_iter()
        .for_each(|(start, len, block)| job(start, len, block));
}

/// `job(start, len)` for each piece, side by side on rayon's threads, the results in the pieces' order (a trait
/// object, as in [`par_blocks`]).
#[cfg(feature = "std")]
#[inline(never)]
fn par_partials<A: Send>(
    pieces: Vec<(usize, usize)>,
    job: &(dyn Fn(usize, usize) -> A + Sync),
) -> Vec<A> {
    use rayon::prelude::*;
    pieces
        .into_par_iter()
        .map(|(start, len)| job(start, len))
        .collect()
}

/// `(start, len)` pieces of an axis of `size`: a few per thread.
#[cfg(feature = "std")]
fn parts(size: usize) -> Vec<(usize, usize)> {
    let n = size.min(4 * rayon::current_num_threads());
    (0..n)
        .map(|i| (i * size / n, (i + 1) * size / n - i * size / n))
        .collect()
}

/// Dense row into dense accumulators: a vectorisable zip (a column sum runs at memory speed through it, three
/// times faster than the indexed loop).
#[inline]
fn accumulate_row<T: WithDType, Op: ReduceOp<T>>(op: &Op, accs: &mut [Op::Acc], xs: &[T]) {
    for (a, &x) in accs.iter_mut().zip(xs) {
        *a = op.step(*a, x, 0);
    }
}

/// A reduction over the `reduced` axes on the calling thread. Two walks:
/// - *rows*: for each output, fold its elements (contiguous runs go through `fold_slice`); used when the
///   innermost memory axis is reduced, and always for index-dependent ops (argmax);
/// - *accumulate*: walk the input in memory order and add each row into a row of accumulators; used when the
///   innermost memory axis is kept (a column sum), where the rows walk would stride through memory.
fn reduce_serial<T: WithDType, Op: ReduceOp<T>>(
    op: Op,
    src: &[T],
    layout: &Layout,
    reduced: &[bool; MAX_RANK],
    out: &mut [MaybeUninit<Op::Out>],
) {
    let (outer, inner) = layout.split_reduced(reduced);
    let count = inner.numel();
    let innermost_kept = (0..layout.rank())
        .filter(|&ax| layout.dims()[ax] > 1)
        .min_by_key(|&ax| layout.strides()[ax])
        .is_some_and(|ax| !reduced[ax]);

    if !(innermost_kept && !Op::USES_INDEX && count > 0) {
        return reduce_rows_into(&op, src, layout, reduced, out);
    }
    // Accumulators laid out like the output, seen through the input's dims with stride 0 on reduced axes.
    let mut acc_strides = [0; MAX_RANK];
    let mut stride = 1;
    for ax in (0..layout.rank()).rev() {
        if !reduced[ax] {
            acc_strides[ax] = stride;
            stride *= layout.dims()[ax];
        }
    }
    let acc_layout = Layout::from_parts(*layout.dims(), &acc_strides, 0);
    let mut accs = alloc::vec![op.init(); outer.numel()];
    for_each_row(
        layout.dims(),
        [layout, &acc_layout],
        |[xo, ao], len, [xs, as_]| {
            if as_ == 0 {
                accs[ao] = (0..len).fold(accs[ao], |a, i| op.step(a, src[xo + i * xs], 0));
            } else if as_ == 1 && xs == 1 {
                accumulate_row(&op, &mut accs[ao..ao + len], &src[xo..xo + len]);
            } else {
                for i in 0..len {
                    let k = ao + i * as_;
                    accs[k] = op.step(accs[k], src[xo + i * xs], 0);
                }
            }
        },
    );
    for (o, a) in out.iter_mut().zip(accs) {
        o.write(op.finish(a, count));
    }
}

// SAFETY: `reduce` writes one value per output position (every path: the rows walk, the accumulators, the
// threaded splits).
unsafe impl ReduceKernels for Cpu {
    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        op: Op,
        (src, ls): (&[T], &Layout),
        reduced: &[bool; MAX_RANK],
        out: &mut [MaybeUninit<Op::Out>],
    ) -> Result<()> {
        reduce(op, src, ls, reduced, out);
        Ok(())
    }
}
