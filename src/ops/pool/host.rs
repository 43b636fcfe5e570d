//! Pooling on the embedded device: a direct loop over each output's window, accumulating in the type's
//! accumulator, with no scratch memory (also the tests' reference, and the CPU's loop for what it does not
//! specialise).

use super::{Pool, PoolKernels, PoolParams};
use crate::device::host::elementwise::zeroed;
use crate::device::Embedded;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::conv::host::{at, tap, transposed_tap};
use core::mem::MaybeUninit;

/// The input positions `(row, column)` of output `(oy, ox)`'s window that land inside the `[h, w]` input, in (row,
/// column) order.
#[inline(always)]
fn window_taps(
    [oy, ox]: [usize; 2],
    p: &PoolParams<2>,
    [h, w]: [usize; 2],
) -> impl Iterator<Item = (usize, usize)> + '_ {
    let win = p.window();
    (0..p.kernel[0]).flat_map(move |i| {
        let iy = tap(oy, i, &win, 0, h);
        (0..p.kernel[1]).filter_map(move |j| Some((iy?, tap(ox, j, &win, 1, w)?)))
    })
}

/// The largest of `values` with its tag (its position): the first NaN wins; of equal values the first stays
/// (so -0 before +0 gives -0). `None` for no values.
#[inline(always)]
fn first_max<A: Accumulator>(values: impl Iterator<Item = (A, usize)>) -> Option<(A, usize)> {
    let mut best = None;
    for (v, at) in values {
        keep_first_max(&mut best, v, at);
    }
    best
}

/// One step of [`first_max`]: `(v, at)` replaces `best` when it is the first value, or larger, or the first
/// NaN (the CPU's indices kernel folds its windows with it too).
#[inline(always)]
pub(crate) fn keep_first_max<A: Accumulator>(best: &mut Option<(A, usize)>, v: A, at: usize) {
    match *best {
        Some((b, _)) if b.is_nan() || !(v > b || v.is_nan()) => {}
        _ => *best = Some((v, at)),
    }
}

/// Fills `out` (dense `(N, C, OH, OW)`) with `window(values, (oy, ox))` for every window of the pooling of `x`,
/// `values` being its taps inside the input, in (row, column) order, as `(accumulator value, plane index
/// row * W + column)`.
fn each_window<T: FloatDType, O>(
    (x, lx): (&[T], &Layout),
    p: &PoolParams<2>,
    out: &mut [O],
    mut window: impl FnMut(&mut dyn Iterator<Item = (T::Acc, usize)>, [usize; 2]) -> O,
) {
    let [n, c, h, wd] = lx.dims4();
    let Some([oh, ow]) = p.output([h, wd]) else {
        return;
    };
    let mut outputs = out.iter_mut();
    for b in 0..n {
        for ch in 0..c {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut values = window_taps([oy, ox], p, [h, wd])
                        .map(|(iy, ix)| (x[at(lx, [b, ch, iy, ix])].to_acc(), iy * wd + ix));
                    if let Some(slot) = outputs.next() {
                        *slot = window(&mut values, [oy, ox]);
                    }
                }
            }
        }
    }
}

/// `Kernels::pool2d` into `out` (dense `(N, C, OH, OW)`, every element written). Max: the largest tap (padding
/// never wins; the first NaN of a window wins; of equal values the first stays, so -0 before +0 gives -0). Avg:
/// the sum over the window's taps inside the input, divided by the product of the per-axis counts
/// ([`PoolParams::avg_count`]).
pub(crate) fn pool2d<T: FloatDType>(
    pool: Pool,
    x: (&[T], &Layout),
    p: PoolParams<2>,
    out: &mut [T],
) {
    let [_, _, h, wd] = x.1.dims4();
    each_window(x, &p, out, |values, [oy, ox]| {
        let result = match pool {
            Pool::Max => first_max(values).map_or(T::Acc::LOWEST, |(v, _)| v),
            Pool::Avg => {
                let count = p.avg_count(0, oy, h) * p.avg_count(1, ox, wd);
                let sum = values.map(|(v, _)| v).fold(T::Acc::ZERO, Accumulator::add);
                sum.div(T::Acc::from_usize(count))
            }
        };
        T::from_acc(result)
    });
}

/// `Kernels::max_pool2d_indices` into `out` (dense `(N, C, OH, OW)`, every element written): the plane index
/// `row * W + column` of each window's [`first_max`].
pub(crate) fn max_pool2d_indices<T: FloatDType>(
    x: (&[T], &Layout),
    p: PoolParams<2>,
    out: &mut [u32],
) {
    each_window(x, &p, out, |values, _| {
        first_max(values).map_or(0, |(_, at)| at as u32)
    });
}

/// `ConvKernels::max_pool2d_at` on the host devices into `out` (dense `(N, C, OH, OW)`, every element written):
/// each window's value is the input's element at its plane index `row * W + column` (a dense plane is read at
/// the index itself, a strided one through its row and column).
pub(crate) fn max_pool2d_at<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    (idx, li): (&[u32], &Layout),
    out: &mut [T],
) {
    let [n, c, _, _] = lx.dims4();
    let [_, _, oh, ow] = li.dims4();
    let (s, offset) = (lx.strides(), plane_offset(lx));
    let mut outputs = out.iter_mut();
    for b in 0..n {
        for ch in 0..c {
            let plane = lx.offset() + b * s[0] + ch * s[1];
            for oy in 0..oh {
                for ox in 0..ow {
                    let k = idx[at(li, [b, ch, oy, ox])] as usize;
                    if let Some(slot) = outputs.next() {
                        *slot = x[plane + offset(k)];
                    }
                }
            }
        }
    }
}

/// Where plane index `k` (`row * W + column`) of the `(N, C, H, W)` view `lx` lies from its plane's first
/// element: `k` itself in a dense plane, through the row and column strides otherwise.
pub(crate) fn plane_offset(lx: &Layout) -> impl Fn(usize) -> usize + Sync + use<> {
    let [_, _, h, w] = lx.dims4();
    let (sh, sw) = (lx.strides()[2], lx.strides()[3]);
    let dense = (w <= 1 || sw == 1) && (h <= 1 || sh == w);
    move |k| {
        if dense {
            k
        } else {
            (k / w) * sh + (k % w) * sw
        }
    }
}

/// `Kernels::max_pool2d_backward` into `out` (dense `(N, C, H, W)`, every element written): each input position
/// sums, in the accumulator type, the gradients of the windows whose index (`at`, `row * W + column`) names it.
pub(crate) fn max_pool2d_backward<T: FloatDType>(
    (idx, li): (&[u32], &Layout),
    (g, lg): (&[T], &Layout),
    [h, wd]: [usize; 2],
    pool: PoolParams<2>,
    out: &mut [T],
) {
    let [n, c, oh, ow] = li.dims4();
    let p = pool.window();
    let mut outputs = out.iter_mut();
    for b in 0..n {
        for ch in 0..c {
            for iy in 0..h {
                for ix in 0..wd {
                    let here = (iy * wd + ix) as u32;
                    let mut acc = T::Acc::ZERO;
                    // The windows holding (iy, ix) at tap (i, j), in (i, j) order.
                    for i in 0..pool.kernel[0] {
                        let Some(oy) = transposed_tap(iy, i, &p, 0, oh) else {
                            continue;
                        };
                        for j in 0..pool.kernel[1] {
                            let Some(ox) = transposed_tap(ix, j, &p, 1, ow) else {
                                continue;
                            };
                            if idx[at(li, [b, ch, oy, ox])] == here {
                                acc = acc.add(g[at(lg, [b, ch, oy, ox])].to_acc());
                            }
                        }
                    }
                    if let Some(slot) = outputs.next() {
                        *slot = T::from_acc(acc);
                    }
                }
            }
        }
    }
}

// SAFETY: every kernel writes each output element (the loops start from `zeroed`).
unsafe impl PoolKernels for Embedded {
    #[inline]
    fn pool2d<T: FloatDType>(
        pool: Pool,
        input: (&[T], &Layout),
        params: PoolParams<2>,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        pool2d(pool, input, params, zeroed(out));
        Ok(())
    }

    #[inline]
    fn max_pool2d_indices<T: FloatDType>(
        input: (&[T], &Layout),
        params: PoolParams<2>,
        out: &mut [MaybeUninit<u32>],
    ) -> Result<()> {
        max_pool2d_indices(input, params, zeroed(out));
        Ok(())
    }

    #[inline]
    fn max_pool2d_at<T: FloatDType>(
        input: (&[T], &Layout),
        indices: (&[u32], &Layout),
        _params: PoolParams<2>,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        max_pool2d_at(input, indices, zeroed(out));
        Ok(())
    }

    #[inline]
    fn max_pool2d_backward<T: FloatDType>(
        indices: (&[u32], &Layout),
        grad: (&[T], &Layout),
        input: [usize; 2],
        params: PoolParams<2>,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        max_pool2d_backward(indices, grad, input, params, zeroed(out));
        Ok(())
    }
}
