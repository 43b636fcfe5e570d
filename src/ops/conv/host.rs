//! Convolution and pooling on the embedded device: a direct loop over each output's window, accumulating in the
//! type's accumulator (f32 for f16/bf16). No scratch memory: the CPU's im2col + GEMM needs a column matrix per
//! image, which a device without a heap does not have, and the small images of embedded inference do not need.
//! Sums run over (input channel, kernel row, kernel column) in order.

use super::{Conv2dParams, ConvKernels, Pool, PoolParams};
use crate::device::host::elementwise::zeroed;
use crate::device::Embedded;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use core::mem::MaybeUninit;

/// The input position that tap `i` of output `o` reads along spatial axis `ax` of a forward window, if inside.
#[inline(always)]
fn tap(o: usize, i: usize, p: &Conv2dParams, ax: usize, size: usize) -> Option<usize> {
    let pos = (o * p.stride[ax] + i * p.dilation[ax]).checked_sub(p.padding[ax])?;
    (pos < size).then_some(pos)
}

/// The input position that feeds output `o` of a transposed convolution through tap `i` along axis `ax`: the
/// `y` with `y * stride - padding + i * dilation == o`, if there is one inside the input.
#[inline(always)]
fn transposed_tap(o: usize, i: usize, p: &Conv2dParams, ax: usize, size: usize) -> Option<usize> {
    let t = (o + p.padding[ax]).checked_sub(i * p.dilation[ax])?;
    let y = t / p.stride[ax];
    (t % p.stride[ax] == 0 && y < size).then_some(y)
}

/// Storage offset of `[a, b, c, d]` in a rank-4 layout.
#[inline(always)]
fn at(l: &Layout, [a, b, c, d]: [usize; 4]) -> usize {
    let s = l.strides();
    l.offset() + a * s[0] + b * s[1] + c * s[2] + d * s[3]
}

/// `Kernels::conv2d` into `out` (dense `(N, C_out, OH, OW)`, every element written).
pub(super) fn conv2d<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    (w, lw): (&[T], &Layout),
    p: Conv2dParams,
    out: &mut [T],
) {
    let [n, _, h, wd] = lx.dims4();
    let [co, cig, kh, kw] = lw.dims4();
    let Some([oh, ow]) = p.output_hw([h, wd], [kh, kw]) else {
        return; // no window fits: the output is empty
    };
    let cog = co / p.groups;
    let mut outputs = out.iter_mut();
    for b in 0..n {
        for oc in 0..co {
            let first_ic = oc / cog * cig;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = T::Acc::ZERO;
                    for ci in 0..cig {
                        for i in 0..kh {
                            let Some(iy) = tap(oy, i, &p, 0, h) else {
                                continue;
                            };
                            for j in 0..kw {
                                let Some(ix) = tap(ox, j, &p, 1, wd) else {
                                    continue;
                                };
                                let xv = x[at(lx, [b, first_ic + ci, iy, ix])].to_acc();
                                acc = acc.add(xv.mul(w[at(lw, [oc, ci, i, j])].to_acc()));
                            }
                        }
                    }
                    if let Some(o) = outputs.next() {
                        *o = T::from_acc(acc);
                    }
                }
            }
        }
    }
}

/// `Kernels::conv_transpose2d` into `out` (dense `(N, C_out, OH, OW)`, every element written).
pub(super) fn conv_transpose2d<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    (w, lw): (&[T], &Layout),
    p: Conv2dParams,
    out: &mut [T],
) {
    let [n, c, h, wd] = lx.dims4();
    let [_, cog, kh, kw] = lw.dims4();
    let [oh, ow] = p.transposed_output_hw([h, wd], [kh, kw]);
    let (co, cig) = (cog * p.groups, c / p.groups);
    let mut outputs = out.iter_mut();
    for b in 0..n {
        for oc in 0..co {
            let (first_ic, o) = (oc / cog * cig, oc % cog);
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = T::Acc::ZERO;
                    for ci in 0..cig {
                        for i in 0..kh {
                            let Some(iy) = transposed_tap(oy, i, &p, 0, h) else {
                                continue;
                            };
                            for j in 0..kw {
                                let Some(ix) = transposed_tap(ox, j, &p, 1, wd) else {
                                    continue;
                                };
                                let ic = first_ic + ci;
                                let xv = x[at(lx, [b, ic, iy, ix])].to_acc();
                                acc = acc.add(xv.mul(w[at(lw, [ic, o, i, j])].to_acc()));
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
pub(super) fn keep_first_max<A: Accumulator>(best: &mut Option<(A, usize)>, v: A, at: usize) {
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
pub(super) fn pool2d<T: FloatDType>(
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
pub(super) fn max_pool2d_indices<T: FloatDType>(
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

/// `Kernels::conv2d_weight_grad` into `out` (dense `(C_out, C / groups, KH, KW)`, every element written): for each
/// weight tap, the sum over images and output positions of the output's gradient times the input the tap read,
/// in the accumulator type, rounded once.
pub(super) fn conv2d_weight_grad<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    (g, lg): (&[T], &Layout),
    [kh, kw]: [usize; 2],
    p: Conv2dParams,
    out: &mut [T],
) {
    let [n, c, h, wd] = lx.dims4();
    let [_, co, oh, ow] = lg.dims4();
    let cig = c / p.groups;
    let cog = co / p.groups;
    let mut outputs = out.iter_mut();
    for oc in 0..co {
        let first_ic = oc / cog * cig;
        for ci in 0..cig {
            for i in 0..kh {
                for j in 0..kw {
                    let mut acc = T::Acc::ZERO;
                    for b in 0..n {
                        for oy in 0..oh {
                            let Some(iy) = tap(oy, i, &p, 0, h) else {
                                continue;
                            };
                            for ox in 0..ow {
                                let Some(ix) = tap(ox, j, &p, 1, wd) else {
                                    continue;
                                };
                                let gv = g[at(lg, [b, oc, oy, ox])].to_acc();
                                let xv = x[at(lx, [b, first_ic + ci, iy, ix])].to_acc();
                                acc = acc.add(gv.mul(xv));
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

/// `Kernels::max_pool2d_backward` into `out` (dense `(N, C, H, W)`, every element written): each input position
/// sums, in the accumulator type, the gradients of the windows whose index (`at`, `row * W + column`) names it.
pub(super) fn max_pool2d_backward<T: FloatDType>(
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

// SAFETY: each kernel starts from `zeroed(out)` and never reads it otherwise.
unsafe impl ConvKernels for Embedded {
    #[inline]
    fn conv2d<T: FloatDType>(
        input: (&[T], &Layout),
        weight: (&[T], &Layout),
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        conv2d(input, weight, params, zeroed(out));
        Ok(())
    }

    #[inline]
    fn conv_transpose2d<T: FloatDType>(
        input: (&[T], &Layout),
        weight: (&[T], &Layout),
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        conv_transpose2d(input, weight, params, zeroed(out));
        Ok(())
    }

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
    fn conv2d_weight_grad<T: FloatDType>(
        input: (&[T], &Layout),
        grad: (&[T], &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        conv2d_weight_grad(input, grad, kernel, params, zeroed(out));
        Ok(())
    }

    #[inline]
    fn unfold<T: FloatDType>(
        input: (&[T], &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        super::columns::unfold(input, kernel, &params, false, out);
        Ok(())
    }

    #[inline]
    fn fold<T: FloatDType>(
        columns: (&[T], &Layout),
        kernel: [usize; 2],
        image: [usize; 2],
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        super::columns::fold(columns, kernel, &params, image, false, out);
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
