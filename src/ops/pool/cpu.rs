//! CPU pooling: max and average pooling, and the gradient of max pooling.
//!
//! A window whose taps all land inside the input (every window of an unpadded pooling) reads its taps through a
//! table of offsets from the window's corner, and the forward pass folds such windows four at a time
//! (independent chains the CPU overlaps); only border windows of a padded pooling clip their taps. Planes (one
//! image's channel) are independent, so large poolings split them across cores. Forward results are bit-identical
//! to folding each window's taps in (row, column) order.

use super::{Pool, PoolKernels, PoolParams};
use crate::device::cpu::elementwise::dense_view;
use crate::device::host::elementwise::zeroed;
use crate::device::Cpu;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::conv::cpu::{sum_in_acc, tap_source};
use crate::ops::Conv2dParams;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// From this many window taps in all, planes run on several cores (`std` only).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
const PARALLEL_TAPS: usize = 1 << 18;

/// The windows of a pooling of `[h, w]` planes: the valid taps of each output row and column, and, for windows
/// with every tap inside, each tap's offset from the window's corner in the (strided) input and in a dense plane.
struct Windows {
    p: Conv2dParams,
    kernel: [usize; 2],
    /// Input size (height, width).
    size: [usize; 2],
    /// Output size (height, width).
    out: [usize; 2],
    /// Input strides along height and width.
    strides: [usize; 2],
    /// Where plane `i` (image `i / channels`, channel `i % channels`) starts: offset, channels, and the image
    /// and channel strides.
    planes: (usize, usize, [usize; 2]),
    /// Per output row, then per output column: the taps `lo..hi` that land inside the input.
    rows: Vec<(usize, usize)>,
    cols: Vec<(usize, usize)>,
    /// Per tap of a whole window, in (row, column) order: (input offset, dense-plane offset) from the corner.
    taps: Vec<(usize, usize)>,
    /// The outputs whose taps all land inside the input, row by row.
    whole: Vec<WholeWindow>,
    /// The other outputs (windows clipped by the padding): output indices within a plane.
    clipped: Vec<usize>,
}

impl Windows {
    fn new(lx: &Layout, pool: &PoolParams<2>) -> Self {
        let [_, c, h, w] = lx.dims4();
        let [oh, ow] = pool
            .output([h, w])
            .expect("pool2d: window larger than the padded input (checked by the tensor API)");
        let (p, kernel) = (pool.window(), pool.kernel);
        let strides = [lx.strides()[2], lx.strides()[3]];
        let taps = (0..kernel[0] * kernel[1])
            .map(|t| {
                let (i, j) = (
                    (t / kernel[1]) * p.dilation[0],
                    (t % kernel[1]) * p.dilation[1],
                );
                (i * strides[0] + j * strides[1], i * w + j)
            })
            .collect();
        let (rows, cols) = (
            tap_ranges(oh, kernel[0], h, &p, 0),
            tap_ranges(ow, kernel[1], w, &p, 1),
        );
        let (mut whole, mut clipped) = (Vec::new(), Vec::new());
        for (y, &row) in rows.iter().enumerate() {
            for (x, &col) in cols.iter().enumerate() {
                if row == (0, kernel[0]) && col == (0, kernel[1]) {
                    let (r, c) = (tap_source(y, 0, &p, 0), tap_source(x, 0, &p, 1));
                    whole.push(WholeWindow {
                        corner: r * strides[0] + c * strides[1],
                        dense_corner: r * w + c,
                        output: y * ow + x,
                    });
                } else {
                    clipped.push(y * ow + x);
                }
            }
        }
        Windows {
            p,
            kernel,
            size: [h, w],
            out: [oh, ow],
            strides,
            planes: (lx.offset(), c, [lx.strides()[0], lx.strides()[1]]),
            rows,
            cols,
            taps,
            whole,
            clipped,
        }
    }

    /// Plane `i` of the input `x` (an image's channel), from its first element on.
    #[inline(always)]
    fn plane<'a, T>(&self, x: &'a [T], i: usize) -> &'a [T] {
        let (offset, c, [image, channel]) = self.planes;
        &x[offset + (i / c) * image + (i % c) * channel..]
    }

    /// Calls `visit(input offset, dense offset)` for every tap of output `(y, x)` inside the input, in (row,
    /// column) order; offsets are within a plane.
    #[inline(always)]
    fn for_each_tap(&self, y: usize, x: usize, mut visit: impl FnMut(usize, usize)) {
        let ((ilo, ihi), (jlo, jhi)) = (self.rows[y], self.cols[x]);
        let (p, [sy, sx], w) = (&self.p, self.strides, self.size[1]);
        if ilo == 0 && jlo == 0 && ihi == self.kernel[0] && jhi == self.kernel[1] {
            let (r, c) = (tap_source(y, 0, p, 0), tap_source(x, 0, p, 1));
            let (src, dst) = (r * sy + c * sx, r * w + c);
            for &(s, d) in &self.taps {
                visit(src + s, dst + d);
            }
            return;
        }
        for i in ilo..ihi {
            let r = tap_source(y, i, p, 0);
            for j in jlo..jhi {
                let c = tap_source(x, j, p, 1);
                visit(r * sy + c * sx, r * w + c);
            }
        }
    }
}

/// An output whose window has every tap inside the input.
#[derive(Clone, Copy)]
struct WholeWindow {
    /// The offset of the window's first tap within an input plane, and within a dense plane.
    corner: usize,
    dense_corner: usize,
    /// The output's index within its plane.
    output: usize,
}

/// For each output position along `axis`, the taps `lo..hi` of a `kernel`-wide window that land inside the
/// input (the valid taps of a window are contiguous), so window loops need no per-tap bounds checks.
fn tap_ranges(
    out_len: usize,
    kernel: usize,
    size: usize,
    p: &Conv2dParams,
    axis: usize,
) -> Vec<(usize, usize)> {
    (0..out_len)
        .map(|o| {
            let valid = |k: &usize| crate::ops::conv::cpu::source(o, *k, size, p, axis).is_some();
            let lo = (0..kernel).find(valid).unwrap_or(kernel);
            (lo, lo + (lo..kernel).take_while(valid).count())
        })
        .collect()
}

/// Runs `plane(index, out_plane)` for each `(image, channel)` plane of `out` (`per_plane` elements each), on
/// several cores when there are `taps` or more window taps in all.
fn for_each_plane<A: Send>(
    out: &mut [A],
    per_plane: usize,
    taps: usize,
    plane: impl Fn(usize, &mut [A]) + Sync,
) {
    if per_plane == 0 {
        return;
    }
    #[cfg(feature = "std")]
    if taps >= PARALLEL_TAPS && rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        out.par_chunks_mut(per_plane)
            .enumerate()
            .for_each(|(i, o)| plane(i, o));
        return;
    }
    let _ = taps;
    for (i, o) in out.chunks_mut(per_plane).enumerate() {
        plane(i, o);
    }
}

/// Max or average pooling of an NCHW view under `p`, into a dense output.
pub(super) fn pool2d<T: FloatDType>(
    pool: Pool,
    x: &[T],
    lx: &Layout,
    p: PoolParams<2>,
    out: &mut [MaybeUninit<T>],
) {
    let [_, _, h, w] = lx.dims4();
    match pool {
        // Of equal values the first stays (-0 before +0 keeps -0); a NaN wins (`NAN_WINS`), as in max
        // reductions. The step alone, one compare and select, keeps each window's chain short; a dense input
        // checked free of NaN (one pass at memory speed) skips the NaN tracking beside it.
        Pool::Max => {
            let max = |acc: T::Acc, v: T::Acc| if v > acc { v } else { acc };
            let no_nan = lx.contiguous_range().is_some_and(|r| !has_nan(&x[r]));
            let keep = |acc, _| acc;
            if no_nan {
                pool_with::<T, false>(x, lx, &p, T::Acc::LOWEST, max, keep, out)
            } else {
                pool_with::<T, true>(x, lx, &p, T::Acc::LOWEST, max, keep, out)
            }
        }
        Pool::Avg => {
            // Per output row and column, the divisor's factor along that axis.
            let [oh, ow] = p.output([h, w]).unwrap_or([0, 0]);
            let rows: Vec<T::Acc> = (0..oh)
                .map(|o| T::Acc::from_usize(p.avg_count(0, o, h)))
                .collect();
            let cols: Vec<usize> = (0..ow).map(|o| p.avg_count(1, o, w)).collect();
            let divisor =
                |o: usize| rows[o / ow.max(1)].mul(T::Acc::from_usize(cols[o % ow.max(1)]));
            pool_with::<T, false>(
                x,
                lx,
                &p,
                T::Acc::ZERO,
                |acc, v| acc.add(v),
                |acc, o| acc.div(divisor(o)),
                out,
            )
        }
    }
}

/// `Kernels::max_pool2d_indices`: for each window, the dense plane offset (`row * W + column`) of its first
/// maximum (the first NaN when it holds one), planes split across cores as in [`pool2d`].
pub(super) fn max_pool2d_indices<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    p: PoolParams<2>,
    out: &mut [MaybeUninit<u32>],
) {
    let [n, c, _, _] = lx.dims4();
    let win = Windows::new(lx, &p);
    let [oh, ow] = win.out;
    let out = zeroed(&mut out[..n * c * oh * ow]);
    let taps = out.len() * p.kernel[0] * p.kernel[1];
    // One fold per window keeping the value and offset of its first maximum: a later tap replaces it only when
    // strictly larger (the first of equal values stays) or a NaN where the best is not (the first NaN wins). A
    // dense input checked free of NaN (one pass at memory speed) folds with the comparison alone, as a select
    // without branches (random data would mispredict half of them).
    let no_nan = lx.contiguous_range().is_some_and(|r| !has_nan(&x[r]));
    let Some((&(s0, d0), rest)) = win.taps.split_first() else {
        return;
    };
    for_each_plane(out, oh * ow, taps, |i, out_plane| {
        let plane = win.plane(x, i);
        // Whole windows LANES at a time: independent chains of selects the CPU overlaps.
        let mut blocks = win.whole.chunks_exact(LANES);
        for block in &mut blocks {
            let corners: [usize; LANES] = core::array::from_fn(|l| block[l].corner);
            let at = if no_nan {
                first_max::<T, false, LANES>(plane, corners, (s0, d0), rest)
            } else {
                first_max::<T, true, LANES>(plane, corners, (s0, d0), rest)
            };
            for (w, at) in block.iter().zip(at) {
                out_plane[w.output] = (w.dense_corner + at) as u32;
            }
        }
        for w in blocks.remainder() {
            let at = first_max::<T, true, 1>(&plane[w.corner..], [0], (s0, d0), rest)[0];
            out_plane[w.output] = (w.dense_corner + at) as u32;
        }
        for &o in &win.clipped {
            let mut first: Option<(T::Acc, usize)> = None;
            win.for_each_tap(o / ow, o % ow, |s, d| {
                super::host::keep_first_max(&mut first, plane[s].to_acc(), d)
            });
            out_plane[o] = first.map_or(0, |(_, d)| d as u32);
        }
    });
}

/// `Kernels::max_pool2d_at`: each window's value read at its plane index, planes split across cores as in
/// [`pool2d`]; dense index planes read straight through (`host::max_pool2d_at` takes any other layout).
pub(super) fn max_pool2d_at<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    (idx, li): (&[u32], &Layout),
    out: &mut [MaybeUninit<T>],
) {
    let [n, c, _, _] = lx.dims4();
    let [_, _, oh, ow] = li.dims4();
    let Some(range) = li.contiguous_range() else {
        return super::host::max_pool2d_at((x, lx), (idx, li), zeroed(out));
    };
    let (idx, per_plane) = (&idx[range], oh * ow);
    let (s, offset) = (lx.strides(), super::host::plane_offset(lx));
    let out = &mut out[..n * c * per_plane];
    for_each_plane(out, per_plane, out.len() * 4, |i, out_plane| {
        let plane = &x[lx.offset() + (i / c) * s[0] + (i % c) * s[1]..];
        let at = &idx[i * per_plane..(i + 1) * per_plane];
        for (o, &k) in out_plane.iter_mut().zip(at) {
            o.write(plane[offset(k as usize)]);
        }
    });
}

/// For each window whose first tap is at `corners[l]` of `plane`, the offset `d` of its first maximum among the
/// taps `(s, d)` (`first`, then `rest`); with `NAN`, the first NaN wins.
#[inline(always)]
fn first_max<T: FloatDType, const NAN: bool, const L: usize>(
    plane: &[T],
    corners: [usize; L],
    first: (usize, usize),
    rest: &[(usize, usize)],
) -> [usize; L] {
    let mut best: [T::Acc; L] = core::array::from_fn(|l| plane[corners[l] + first.0].to_acc());
    let mut at = [first.1; L];
    for &(s, d) in rest {
        for l in 0..L {
            let v = plane[corners[l] + s].to_acc();
            let take = if NAN {
                !best[l].is_nan() && (v > best[l] || v.is_nan())
            } else {
                v > best[l]
            };
            // Selects, so the loop has no data-dependent branch (LLVM turns a plain `if` here into a branch,
            // which random data mispredicts: the indices kernel ran 2.3x slower).
            at[l] = core::hint::select_unpredictable(take, d, at[l]);
            best[l] = core::hint::select_unpredictable(take, v, best[l]);
        }
    }
    at
}

/// Whether any element is NaN, a block at a time (a branch-free fold per block vectorises).
fn has_nan<T: FloatDType>(x: &[T]) -> bool {
    x.chunks(256)
        .any(|block| block.iter().fold(false, |nan, v| nan | v.to_acc().is_nan()))
}

/// Windows [`pool_with`] folds side by side: independent chains of dependent steps the CPU overlaps.
const LANES: usize = 4;

/// Pooling with the window fold `step` from `init` over each window's taps in (row, column) order, and `finish`
/// on each window's result and its output index within the plane. With `NAN_WINS`, a window holding a NaN gives its first NaN (`step` need not handle
/// NaN). The whole windows run `LANES` at a time, the clipped ones at the border one by one.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the view and geometry, the fold's three parts, the output
fn pool_with<T: FloatDType, const NAN_WINS: bool>(
    x: &[T],
    lx: &Layout,
    p: &PoolParams<2>,
    init: T::Acc,
    step: impl Fn(T::Acc, T::Acc) -> T::Acc + Sync,
    finish: impl Fn(T::Acc, usize) -> T::Acc + Sync,
    out: &mut [MaybeUninit<T>],
) {
    let [n, c, _, _] = lx.dims4();
    let win = Windows::new(lx, p);
    let [oh, ow] = win.out;
    let out = zeroed(&mut out[..n * c * oh * ow]);
    let taps = out.len() * p.kernel[0] * p.kernel[1];
    let first_nan = |plane: &[T], y: usize, xo: usize| {
        let mut first = None;
        win.for_each_tap(y, xo, |s, _| {
            let v = plane[s].to_acc();
            if first.is_none() && v.is_nan() {
                first = Some(v);
            }
        });
        first.expect("a NaN was seen")
    };
    let window = |plane: &[T], y: usize, xo: usize| {
        let (mut acc, mut nan) = (init, false);
        win.for_each_tap(y, xo, |s, _| {
            let v = plane[s].to_acc();
            nan |= NAN_WINS && v.is_nan();
            acc = step(acc, v);
        });
        T::from_acc(finish(
            if nan { first_nan(plane, y, xo) } else { acc },
            y * ow + xo,
        ))
    };
    for_each_plane(out, oh * ow, taps, |i, out_plane| {
        let plane = win.plane(x, i);
        let mut blocks = win.whole.chunks_exact(LANES);
        for block in &mut blocks {
            let (mut acc, mut nan) = ([init; LANES], [false; LANES]);
            for &(s, _) in &win.taps {
                for u in 0..LANES {
                    let v = plane[block[u].corner + s].to_acc();
                    nan[u] |= NAN_WINS && v.is_nan();
                    acc[u] = step(acc[u], v);
                }
            }
            for u in 0..LANES {
                let o = block[u].output;
                let a = if nan[u] {
                    first_nan(plane, o / ow, o % ow)
                } else {
                    acc[u]
                };
                out_plane[o] = T::from_acc(finish(a, o));
            }
        }
        let rest = blocks.remainder().iter().map(|w| w.output);
        for o in rest.chain(win.clipped.iter().copied()) {
            out_plane[o] = window(plane, o / ow, o % ow);
        }
    });
}

/// The gradient of max pooling: `at` holds each window's index within its plane (dense, as the indices kernel
/// writes them), `g` the dense output gradient; each window's gradient is added at its index. Planes run side by
/// side; sums run in the accumulator type (f32/f64 in the output itself, f16/bf16 in an f32 buffer rounded
/// once).
pub(super) fn max_pool2d_backward<T: FloatDType>(
    at: &[u32],
    g: &[T],
    [n, c, oh, ow]: [usize; 4],
    [h, wd]: [usize; 2],
    out: &mut [MaybeUninit<T>],
) {
    let out = zeroed(&mut out[..n * c * h * wd]);
    let windows = oh * ow;
    let route = |i: usize, acc: &mut [T::Acc]| {
        let outputs = i * windows..(i + 1) * windows;
        for (&k, &grad) in at[outputs.clone()].iter().zip(&g[outputs]) {
            let a = &mut acc[k as usize];
            *a = a.add(grad.to_acc());
        }
    };
    let mut acc = Vec::new();
    sum_in_acc(out, &mut acc, |acc| {
        for_each_plane(acc, h * wd, n * c * windows, route)
    });
    crate::device::cpu::pool::recycle(acc);
}

// SAFETY: every kernel writes each output element (the loops above start from `zeroed` or write every position),
// and none reads its destination.
unsafe impl PoolKernels for Cpu {
    fn pool2d<T: FloatDType>(
        pool: Pool,
        (x, lx): (&[T], &Layout),
        params: PoolParams<2>,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        pool2d(pool, x, lx, params, out);
        Ok(())
    }

    fn max_pool2d_indices<T: FloatDType>(
        (x, lx): (&[T], &Layout),
        params: PoolParams<2>,
        out: &mut [MaybeUninit<u32>],
    ) -> Result<()> {
        max_pool2d_indices(x, lx, params, out);
        Ok(())
    }

    fn max_pool2d_at<T: FloatDType>(
        input: (&[T], &Layout),
        indices: (&[u32], &Layout),
        _params: PoolParams<2>,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        max_pool2d_at(input, indices, out);
        Ok(())
    }

    fn max_pool2d_backward<T: FloatDType>(
        (at, la): (&[u32], &Layout),
        (g, lg): (&[T], &Layout),
        input: [usize; 2],
        _params: PoolParams<2>,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        let (at, g) = (dense_view(at, la), dense_view(g, lg));
        max_pool2d_backward(&at, &g, la.dims4(), input, out);
        Ok(())
    }
}
