//! Reductions on the host: every output folds its elements in index order (or, for a column sum, rows are added
//! into rows of accumulators); large inputs are split across threads.

#[cfg(feature = "std")]
use super::elementwise::PARALLEL_MIN;
use crate::dtype::WithDType;
use crate::layout::{for_each_row, Layout};
use crate::ops::ReduceOp;
use crate::shape::MAX_RANK;
use alloc::vec::Vec;

/// `op` over the axes marked in `reduced`; the output is contiguous over the kept axes, in order.
///
/// From [`PARALLEL_MIN`] input elements on, the work is split across threads: along the first kept axis when
/// there is one (each part owns a contiguous block of outputs), otherwise along the first reduced axis, whose
/// parts' partial states are merged in index order (so argmax still picks the first of tied maxima).
pub(super) fn reduce<T: WithDType, Op: ReduceOp<T>>(
    op: Op,
    src: &[T],
    layout: &Layout,
    reduced: &[bool; MAX_RANK],
) -> Vec<Op::Out> {
    #[cfg(feature = "std")]
    if layout.numel() >= PARALLEL_MIN && rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        let dims = layout.dims();
        let axis_to_split = |want_reduced: bool| {
            (0..layout.rank()).find(|&ax| reduced[ax] == want_reduced && dims[ax] > 1)
        };
        if let Some(ax) = axis_to_split(false) {
            let pieces: Vec<Vec<Op::Out>> = parts(dims[ax])
                .into_par_iter()
                .map(|(start, len)| {
                    let part = layout.narrow(Op::NAME, ax, start, len).expect("in bounds");
                    reduce_serial(op, src, &part, reduced)
                })
                .collect();
            return pieces.concat();
        }
        if let Some(ax) = axis_to_split(true) {
            // One output: the reduced elements after axis `ax` number `per_step` per step along it.
            let count = layout.numel();
            let per_step = count / dims[ax];
            let partials: Vec<Op::Acc> = parts(dims[ax])
                .into_par_iter()
                .map(|(start, len)| {
                    let part = layout.narrow(Op::NAME, ax, start, len).expect("in bounds");
                    fold_view(&op, src, &part, op.init(), start * per_step)
                })
                .collect();
            let acc = partials
                .into_iter()
                .reduce(|a, b| op.merge(a, b))
                .expect("at least one part");
            return alloc::vec![op.finish(acc, count)];
        }
    }
    reduce_serial(op, src, layout, reduced)
}

/// `(start, len)` pieces of an axis of `size`: a few per thread.
#[cfg(feature = "std")]
fn parts(size: usize) -> Vec<(usize, usize)> {
    let n = size.min(4 * rayon::current_num_threads());
    (0..n)
        .map(|i| (i * size / n, (i + 1) * size / n - i * size / n))
        .collect()
}

/// Folds every element of a (sub-)view into `acc`, passing each its row-major index within the view plus
/// `first_index`.
#[inline(always)]
fn fold_view<T: WithDType, Op: ReduceOp<T>>(
    op: &Op,
    src: &[T],
    layout: &Layout,
    acc: Op::Acc,
    first_index: usize,
) -> Op::Acc {
    let mut acc = acc;
    let mut index = first_index;
    for_each_row(layout.dims(), [layout], |[o], len, [s]| {
        acc = if s == 1 {
            op.fold_slice(acc, &src[o..o + len], index)
        } else {
            (0..len).fold(acc, |a, i| op.step(a, src[o + i * s], index + i))
        };
        index += len;
    });
    acc
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
) -> Vec<Op::Out> {
    let (outer, inner) = layout.split_reduced(reduced);
    let count = inner.numel();
    let innermost_kept = (0..layout.rank())
        .filter(|&ax| layout.dims()[ax] > 1)
        .min_by_key(|&ax| layout.strides()[ax])
        .is_some_and(|ax| !reduced[ax]);

    let accs: Vec<Op::Acc> = if innermost_kept && !Op::USES_INDEX && count > 0 {
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
        accs
    } else {
        let mut accs = Vec::with_capacity(outer.numel());
        for_each_row(outer.dims(), [&outer], |[o], len, [s]| {
            for i in 0..len {
                let sub = Layout::from_parts(*inner.dims(), inner.strides(), o + i * s);
                accs.push(fold_view(&op, src, &sub, op.init(), 0));
            }
        });
        accs
    };
    accs.into_iter().map(|a| op.finish(a, count)).collect()
}

/// [`reduce`] of a tiny dense row-major input of `dims` into `out` (one element per output, at most `CAP`), on
/// the calling thread with its accumulators on the stack: no heap and no layouts. It takes [`reduce_serial`]'s
/// walk, element for element (the same rows, merged the same way as [`for_each_row`] merges them, folded by the
/// same `step` and `fold_slice` calls), so the results have the same bits; tests/ops.rs checks every dtype.
#[inline(always)]
pub(crate) fn reduce_small<T: WithDType, Op: ReduceOp<T>, const CAP: usize>(
    op: Op,
    src: &[T],
    dims: &[usize],
    reduced: &[bool; MAX_RANK],
    out: &mut [Op::Out],
) {
    let rank = dims.len();
    // Row-major strides of the input, and of the output over the kept axes (0 on reduced ones).
    let (mut strides, mut out_strides) = ([0; MAX_RANK], [0; MAX_RANK]);
    let (mut numel, mut outputs, mut count) = (1, 1, 1);
    for ax in (0..rank).rev() {
        strides[ax] = numel;
        numel *= dims[ax];
        if reduced[ax] {
            count *= dims[ax];
        } else {
            out_strides[ax] = outputs;
            outputs *= dims[ax];
        }
    }
    debug_assert_eq!(outputs, out.len());
    let mut accs = [op.init(); CAP];
    let accs = &mut accs[..outputs];
    let innermost_kept = (0..rank)
        .rev()
        .find(|&ax| dims[ax] > 1)
        .is_some_and(|ax| !reduced[ax]);
    if innermost_kept && !Op::USES_INDEX && count > 0 {
        // The accumulate walk: every element in memory order into its output's accumulator.
        let mut idx = [0; MAX_RANK];
        let mut j = 0;
        for &x in &src[..numel] {
            accs[j] = op.step(accs[j], x, 0);
            let mut ax = rank;
            while ax > 0 {
                ax -= 1;
                idx[ax] += 1;
                j += out_strides[ax];
                if idx[ax] < dims[ax] {
                    break;
                }
                j -= out_strides[ax] * dims[ax];
                idx[ax] = 0;
            }
        }
    } else if count > 0 {
        // The rows walk: the reduced axes of size > 1, merged where adjacent in memory; the last group is the
        // row (a slice when its stride is 1), the others are walked in row-major order.
        let (mut gd, mut gs, mut g) = ([1; MAX_RANK], [0; MAX_RANK], 0);
        for ax in (0..rank).filter(|&ax| reduced[ax] && dims[ax] > 1) {
            if g > 0 && gs[g - 1] == strides[ax] * dims[ax] {
                gd[g - 1] *= dims[ax];
                gs[g - 1] = strides[ax];
            } else {
                (gd[g], gs[g]) = (dims[ax], strides[ax]);
                g += 1;
            }
        }
        let (len, step) = if g == 0 {
            (1, 0)
        } else {
            (gd[g - 1], gs[g - 1])
        };
        let outer = g.saturating_sub(1);
        let rows: usize = gd[..outer].iter().product();
        for (j, acc) in accs.iter_mut().enumerate() {
            // The output's first element: its kept-axis position, unravelled.
            let (mut base, mut rest) = (0, j);
            for ax in (0..rank).rev().filter(|&ax| !reduced[ax]) {
                base += rest % dims[ax] * strides[ax];
                rest /= dims[ax];
            }
            for r in 0..rows {
                let (mut o, mut rest) = (base, r);
                for k in (0..outer).rev() {
                    o += rest % gd[k] * gs[k];
                    rest /= gd[k];
                }
                let index = r * len;
                *acc = if step == 1 {
                    op.fold_slice(*acc, &src[o..o + len], index)
                } else {
                    (0..len).fold(*acc, |a, i| op.step(a, src[o + i * step], index + i))
                };
            }
        }
    }
    for (o, &a) in out.iter_mut().zip(accs.iter()) {
        *o = op.finish(a, count);
    }
}
