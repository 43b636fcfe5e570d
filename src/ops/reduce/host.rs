//! Reductions over host memory that need no heap: each output folds its elements in index order (the *rows*
//! walk), and tiny dense inputs fold with their accumulators on the stack.

use super::ReduceKernels;
use crate::device::Embedded;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use crate::ops::ReduceOp;
use crate::shape::MAX_RANK;
use core::mem::MaybeUninit;

/// Folds every element of a (sub-)view into `acc`, passing each its row-major index within the view plus
/// `first_index`.
#[inline(always)]
pub(crate) fn fold_view<T: WithDType, Op: ReduceOp<T>>(
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

/// `op` over the `reduced` axes into `out` (one slot per output, contiguous over the kept axes, all written):
/// each output folds its elements in index order, contiguous runs through `fold_slice`. The CPU takes this walk
/// whenever the innermost memory axis is reduced, and for index-dependent ops (argmax).
pub(crate) fn reduce_rows_into<T: WithDType, Op: ReduceOp<T>>(
    op: &Op,
    src: &[T],
    layout: &Layout,
    reduced: &[bool; MAX_RANK],
    out: &mut [MaybeUninit<Op::Out>],
) {
    let (outer, inner) = layout.split_reduced(reduced);
    let count = inner.numel();
    let mut at = 0;
    for_each_row(outer.dims(), [&outer], |[o], len, [s]| {
        for (i, slot) in out[at..at + len].iter_mut().enumerate() {
            let sub = Layout::from_parts(*inner.dims(), inner.strides(), o + i * s);
            slot.write(op.finish(fold_view(op, src, &sub, op.init(), 0), count));
        }
        at += len;
    });
}

/// A reduction of a tiny dense row-major input of `dims` into `out` (one element per output, at most `CAP`), on
/// the calling thread with its accumulators on the stack: no heap and no layouts. It takes the CPU kernel's
/// walk, element for element (the same rows, merged the same way as [`for_each_row`] merges them, folded by the
/// same `step` and `fold_slice` calls), so the results have the same bits; tests/suite/ops.rs checks every dtype.
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

// SAFETY: `reduce_rows_into` writes one value per output position.
unsafe impl ReduceKernels for Embedded {
    #[inline]
    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        op: Op,
        (src, ls): (&[T], &Layout),
        reduced: &[bool; MAX_RANK],
        out: &mut [MaybeUninit<Op::Out>],
    ) -> Result<()> {
        reduce_rows_into(&op, src, ls, reduced, out);
        Ok(())
    }
}
