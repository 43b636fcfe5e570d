//! CPU convolution: im2col + the matmul kernel, so it runs at GEMM speed, for conv2d, its weight gradient and
//! the transposed convolution (with col2im).

use super::{Conv2dParams, ConvKernels};
use crate::device::cpu::elementwise::{dense_view, map_view};
use crate::device::cpu::pool;
use crate::device::host::elementwise::zeroed;
use crate::device::Cpu;
use crate::dtype::{Accumulator, DType, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::matmul::cpu::{self as matmul, Threads};
use crate::shape::Dims;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use core::ops::Range;

/// Spatial output size (height, width); the tensor API has checked that the window fits.
fn out_hw(p: &Conv2dParams, input: [usize; 2], kernel: [usize; 2]) -> [usize; 2] {
    p.output_hw(input, kernel)
        .expect("conv2d: window larger than the padded input (checked by the tensor API)")
}

/// Input coordinate of output position `o`, tap `k` along `axis`, or `None` in the padding.
#[inline(always)]
pub(crate) fn source(
    o: usize,
    k: usize,
    size: usize,
    p: &Conv2dParams,
    axis: usize,
) -> Option<usize> {
    (o * p.stride[axis] + k * p.dilation[axis])
        .checked_sub(p.padding[axis])
        .filter(|&i| i < size)
}

/// The output positions `lo..hi` along `axis` whose tap `k` lands inside the input (the rest read padding).
fn valid_outputs(
    out_len: usize,
    k: usize,
    size: usize,
    p: &Conv2dParams,
    axis: usize,
) -> (usize, usize) {
    let (s, shift, pad) = (p.stride[axis], k * p.dilation[axis], p.padding[axis]);
    // o * s + shift - pad must lie in [0, size).
    let lo = pad.saturating_sub(shift).div_ceil(s);
    let hi = if size + pad > shift {
        ((size + pad - shift - 1) / s + 1).min(out_len)
    } else {
        0
    };
    (lo.min(hi), hi)
}

/// Geometry of one conv2d call, shared by the per-image work: sizes, and which taps land inside the input.
struct Geometry {
    h: usize,
    wd: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    cig: usize,
    p: Conv2dParams,
    /// Per kernel row `i`: (output row, input row) of each output row whose tap row `i` lands inside.
    tap_rows: Vec<Vec<(usize, usize)>>,
    /// Per kernel column `j`: the outputs `lo..hi` whose tap column `j` lands inside, and the input column of
    /// output `lo` (consecutive outputs step by the stride).
    tap_cols: Vec<(usize, usize, usize)>,
}

impl Geometry {
    /// A conv2d of `[h, wd]` inputs by `cig`-channel `[kh, kw]` windows under `p`.
    fn new([h, wd]: [usize; 2], [kh, kw]: [usize; 2], cig: usize, p: Conv2dParams) -> Self {
        let [oh, ow] = out_hw(&p, [h, wd], [kh, kw]);
        Self::with_output([h, wd], [kh, kw], [oh, ow], cig, p)
    }

    /// The same, its output size known (a transposed convolution's input).
    fn with_output(
        [h, wd]: [usize; 2],
        [kh, kw]: [usize; 2],
        [oh, ow]: [usize; 2],
        cig: usize,
        p: Conv2dParams,
    ) -> Self {
        let tap_rows = (0..kh)
            .map(|i| {
                (0..oh)
                    .filter_map(|y| source(y, i, h, &p, 0).map(|sy| (y, sy)))
                    .collect()
            })
            .collect();
        let tap_cols = (0..kw)
            .map(|j| {
                let (lo, hi) = valid_outputs(ow, j, wd, &p, 1);
                (lo, hi, if lo < hi { tap_source(lo, j, &p, 1) } else { 0 })
            })
            .collect();
        Geometry {
            h,
            wd,
            kh,
            kw,
            oh,
            ow,
            cig,
            p,
            tap_rows,
            tap_cols,
        }
    }
}

/// im2col of image `b`, group `grp`: `col[(ci, i, j)][(y, x)] = input[b, grp * cig + ci, y * s - pad + i * dil,
/// x * s - pad + j * dil]`. Only taps inside the input are written: `col` must hold zeros at the padding
/// positions, as a zeroed buffer does, and keeps them across calls (they depend on the geometry alone). Rows of
/// unit-stride taps are slice copies; which taps land inside comes from the geometry, computed once per call.
fn im2col<T: FloatDType>(x: &[T], lx: &Layout, g: &Geometry, b: usize, grp: usize, col: &mut [T]) {
    let sx = lx.strides();
    let (ow, l) = (g.ow, g.oh * g.ow);
    let step = g.p.stride[1] * sx[3];
    let base = lx.offset() + b * sx[0] + grp * g.cig * sx[1];
    // A stride-1 convolution whose input rows lie `ow` apart (the usual "same" padding over dense rows): a
    // tap's col row and the input differ by a constant offset, so all its rows are one copy; the positions
    // between rows that fall in the padding are zeroed again after it. This saves a copy call per short row.
    let spans = g.p.stride == [1, 1] && sx[3] == 1 && sx[2] == ow;
    for ci in 0..g.cig {
        for (i, rows) in g.tap_rows.iter().enumerate() {
            for (j, &(lo, hi, first)) in g.tap_cols.iter().enumerate() {
                let plane = base + ci * sx[1] + first * sx[3];
                let row = ((ci * g.kh + i) * g.kw + j) * l;
                if spans {
                    if let (Some(&(y0, sy0)), Some(&(y1, _)), true) =
                        (rows.first(), rows.last(), lo < hi)
                    {
                        let (from, to) = (row + y0 * ow + lo, row + y1 * ow + hi);
                        let start = plane + sy0 * sx[2];
                        col[from..to].copy_from_slice(&x[start..start + (to - from)]);
                        let gap = ow - (hi - lo);
                        for y in y0..y1 {
                            zero_short(&mut col[row + y * ow + hi..][..gap]);
                        }
                    }
                    continue;
                }
                for &(y, sy) in rows {
                    let dst = &mut col[row + y * ow + lo..row + y * ow + hi];
                    let start = plane + sy * sx[2];
                    if step == 1 {
                        dst.copy_from_slice(&x[start..start + dst.len()]);
                    } else {
                        for (t, d) in dst.iter_mut().enumerate() {
                            *d = x[start + t * step];
                        }
                    }
                }
            }
        }
    }
}

/// Zeroes a run that is usually one or two elements long with plain stores (a `memset` call costs more).
#[inline(always)]
fn zero_short<T: FloatDType>(run: &mut [T]) {
    match run {
        [] => {}
        [a] => *a = T::ZERO,
        [a, b] => (*a, *b) = (T::ZERO, T::ZERO),
        _ => run.fill(T::ZERO),
    }
}

/// conv2d as one GEMM per image and group, `(cog, K) x (K, OH * OW)` over that image's im2col block. Large
/// batches run images side by side on threads (each thread reuses one column buffer); otherwise images go one
/// after another and the GEMM itself uses the cores.
pub(super) fn conv2d<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    w: &[T],
    lw: &Layout,
    p: Conv2dParams,
    out: &mut [MaybeUninit<T>],
) {
    let [n, c, h, wd] = lx.dims4();
    let [co, cig, kh, kw] = lw.dims4();
    let geometry = Geometry::new([h, wd], [kh, kw], cig, p);
    let (groups, cog) = (p.groups, co / p.groups);
    debug_assert_eq!(c, cig * groups);
    let (k, l) = (cig * kh * kw, geometry.oh * geometry.ow);
    let out = zeroed(&mut out[..n * co * l]);
    if out.is_empty() {
        return;
    }
    // The weight as a dense (C_out, K) matrix (copied only if strided).
    let w_rows = dense_view(w, lw);
    let lc = Layout::contiguous(Dims::from_slice(&[1, k, l]));
    let image = |b: usize, out_image: &mut [T], s: &mut Scratch<T>, threads: Threads| {
        for grp in 0..groups {
            im2col(x, lx, &geometry, b, grp, &mut s.col);
            let lw_g =
                Layout::from_parts(Dims::from_slice(&[1, cog, k]), &[0, k, 1], grp * cog * k);
            let dst = &mut out_image[grp * cog * l..(grp + 1) * cog * l];
            matmul::matmul_into(&w_rows, &lw_g, &s.col, &lc, dst, threads);
        }
    };
    let scratch = || Scratch::new(k * l);
    per_image(out, n, co * l, n * co * k * l, scratch, image);
}

/// The gradient of conv2d with respect to its `(C_out, C / G, KH, KW)` weight, from the input `x` and the
/// output's gradient `gy`: per group, `dW_g (cog, K) = sum over images b of dY_{b,g} (cog, OH * OW) x
/// col_{b,g}^T (OH * OW, K)`, the im2col block of the forward pass transposed, one GEMM per image and group summed
/// in the accumulator type. f16/bf16 inputs are widened to f32 once and the result rounded once.
pub(super) fn conv2d_weight_grad<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    gy: &[T],
    lgy: &Layout,
    kernel: [usize; 2],
    p: Conv2dParams,
    out: &mut [MaybeUninit<T>],
) {
    match T::DTYPE {
        DType::F32 | DType::F64 => {
            let sums = weight_grad_acc(x, lx, gy, lgy, kernel, p);
            for (o, &v) in out.iter_mut().zip(&sums) {
                o.write(T::from_acc(v));
            }
        }
        _ => {
            let widen = |v: T| v.to_f64() as f32;
            let (wx, wg) = (map_view(x, lx, widen), map_view(gy, lgy, widen));
            let (wlx, wlg) = (
                Layout::contiguous(*lx.dims()),
                Layout::contiguous(*lgy.dims()),
            );
            let sums = weight_grad_acc(&wx, &wlx, &wg, &wlg, kernel, p);
            for (o, &v) in out.iter_mut().zip(&sums) {
                o.write(T::from_f64(v as f64)); // exact widening, then one rounding
            }
        }
    }
}

/// [`conv2d_weight_grad`] for f32/f64 operands (whose accumulator is themselves), in the accumulator type.
fn weight_grad_acc<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    gy: &[T],
    lgy: &Layout,
    [kh, kw]: [usize; 2],
    p: Conv2dParams,
) -> Vec<T::Acc> {
    let [n, c, h, wd] = lx.dims4();
    let co = lgy.dims()[1];
    let (groups, cig, cog) = (p.groups, c / p.groups, co / p.groups);
    let geometry = Geometry::new([h, wd], [kh, kw], cig, p);
    debug_assert_eq!(lgy.dims()[2..], [geometry.oh, geometry.ow]);
    let (k, l) = (cig * kh * kw, geometry.oh * geometry.ow);
    if co * k == 0 || n == 0 || l == 0 {
        return alloc::vec![T::Acc::ZERO; co * k];
    }
    // dY as dense (N, C_out, OH * OW) rows (copied only if strided).
    let gy = dense_view(gy, lgy);
    let col_t = Layout::from_parts(Dims::from_slice(&[1, l, k]), &[0, 1, l], 0); // col^T, read in place

    // The sum over `images` of their dW, in the accumulator type.
    let grad_of = |images: Range<usize>, threads: Threads| -> Vec<T::Acc> {
        let mut s = Scratch::new(k * l);
        let (mut sum, mut part) = (
            pool::filled(co * k, T::Acc::ZERO),
            alloc::vec![T::ZERO; cog * k],
        );
        for b in images {
            for grp in 0..groups {
                im2col(x, lx, &geometry, b, grp, &mut s.col);
                let rows = Layout::from_parts(
                    Dims::from_slice(&[1, cog, l]),
                    &[0, l, 1],
                    (b * co + grp * cog) * l,
                );
                matmul::matmul_into(&gy, &rows, &s.col, &col_t, &mut part, threads);
                for (a, &v) in sum[grp * cog * k..(grp + 1) * cog * k]
                    .iter_mut()
                    .zip(&part)
                {
                    *a = a.add(v.to_acc());
                }
            }
        }
        sum
    };
    #[cfg(feature = "std")]
    if let Some(per_worker) = images_per_worker(n, n * co * k * l) {
        // Each worker sums its images; the workers' sums are added in image order.
        use rayon::prelude::*;
        let starts: Vec<usize> = (0..n).step_by(per_worker).collect();
        let sums: Vec<Vec<T::Acc>> = starts
            .into_par_iter()
            .map(|b| grad_of(b..(b + per_worker).min(n), Threads::One))
            .collect();
        let mut sums = sums.into_iter();
        let mut total = sums.next().expect("at least one image");
        for sum in sums {
            for (t, &v) in total.iter_mut().zip(&sum) {
                *t = t.add(v);
            }
            pool::recycle(sum);
        }
        return total;
    }
    grad_of(0..n, Threads::IfLarge)
}

/// Transposed convolution: per image and group, `col = W_g^T x_g` (the matmul kernel, `(cog * KH * KW, H * W)`)
/// scattered back into the output windows (col2im), the exact adjoint of `conv2d`'s im2col + matmul. Images run
/// like [`conv2d`]'s, each worker with one column buffer; f32/f64 outputs are their own accumulators, f16/bf16
/// images sum in f32 and round once.
pub(super) fn conv_transpose2d<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    w: &[T],
    lw: &Layout,
    p: Conv2dParams,
    out: &mut [MaybeUninit<T>],
) {
    let [n, c, h, wd] = lx.dims4();
    let [ci, cog, kh, kw] = lw.dims4();
    debug_assert_eq!(ci, c);
    let (groups, cig) = (p.groups, c / p.groups);
    let co = cog * groups;
    let [oh, ow] = p.transposed_output_hw([h, wd], [kh, kw]);
    // col2im walks the windows of the convolution this one inverts: its input is our (oh, ow) output.
    let geometry = Geometry::with_output([oh, ow], [kh, kw], [h, wd], cog, p);
    let (k, l, plane) = (cog * kh * kw, h * wd, oh * ow);
    let out = zeroed(&mut out[..n * co * plane]);
    if out.is_empty() || k == 0 || l == 0 {
        return;
    }
    // lhs: W_g^T as (K, cig) (rows (co, i, j), columns ci): the weight's (co, i, j) axes must flatten, else use
    // its dense copy. rhs: x_{b,g} as (cig, H * W): the view's rows must be dense. Both are decided (and copied
    // if needed) once, outside the image loop.
    let (sw, sx) = (lw.strides(), lx.strides());
    let dense_w: Vec<T>;
    let (wbuf, w_rows, w_cols, w_base) = if sw[1] == kh * kw * sw[3] && sw[2] == kw * sw[3] {
        (w, sw[3], sw[0], lw.offset())
    } else {
        dense_w = map_view(w, lw, |v| v);
        (&dense_w[..], 1, k, 0)
    };
    let dense_x: Vec<T>;
    let (xbuf, x_img, x_chan, x_base) = if sx[3] == 1 && sx[2] == wd {
        (x, sx[0], sx[1], lx.offset())
    } else {
        dense_x = map_view(x, lx, |v| v);
        (&dense_x[..], c * l, l, 0)
    };
    let image = |b: usize, out_image: &mut [T], s: &mut Scratch<T>, threads: Threads| {
        let Scratch { col, acc } = s;
        sum_in_acc(out_image, acc, |acc| {
            for grp in 0..groups {
                let wl = Layout::from_parts(
                    Dims::from_slice(&[1, k, cig]),
                    &[0, w_rows, w_cols],
                    w_base + grp * cig * w_cols,
                );
                let xl = Layout::from_parts(
                    Dims::from_slice(&[1, cig, l]),
                    &[0, x_chan, 1],
                    x_base + b * x_img + grp * cig * x_chan,
                );
                matmul::matmul_into(wbuf, &wl, xbuf, &xl, col, threads);
                col2im(
                    col,
                    &geometry,
                    &mut acc[grp * cog * plane..(grp + 1) * cog * plane],
                );
            }
        });
    };
    let scratch = || Scratch::new(k * l);
    per_image(out, n, co * plane, n * k * cig * l, scratch, image);
}

/// One worker's buffers, back to the buffer cache when dropped: a zeroed column block (im2col's keeps zeros at
/// the padding positions) and the accumulators [`sum_in_acc`] grows for f16/bf16.
struct Scratch<T: FloatDType> {
    col: Vec<T>,
    acc: Vec<T::Acc>,
}

impl<T: FloatDType> Scratch<T> {
    fn new(col: usize) -> Self {
        Scratch {
            col: pool::filled(col, T::ZERO),
            acc: Vec::new(),
        }
    }
}

/// Runs `sum`, which adds into zeroed accumulators, and leaves the result in `out`. f32/f64 are their own
/// accumulators (`T::Acc == T`): `sum` adds into `out` itself, seen as `T::Acc`. f16/bf16 sum in f32 in
/// `scratch` (reused across calls, `out.len()` long) and are rounded once into `out`.
pub(crate) fn sum_in_acc<T: FloatDType>(
    out: &mut [T],
    scratch: &mut Vec<T::Acc>,
    sum: impl FnOnce(&mut [T::Acc]),
) {
    if matches!(T::DTYPE, DType::F32 | DType::F64) {
        debug_assert!(
            out.iter().all(|v| v.to_f64() == 0.0),
            "sum_in_acc: `out` must be zeroed"
        );
        sum(crate::dtype::cast_slice_mut(out));
        return;
    }
    if scratch.len() == out.len() {
        scratch.fill(T::Acc::ZERO);
    } else {
        pool::recycle(core::mem::take(scratch));
        *scratch = pool::filled(out.len(), T::Acc::ZERO);
    }
    sum(scratch);
    for (o, &a) in out.iter_mut().zip(scratch.iter()) {
        *o = T::from_acc(a);
    }
}

impl<T: FloatDType> Drop for Scratch<T> {
    fn drop(&mut self) {
        pool::recycle(core::mem::take(&mut self.col));
        pool::recycle(core::mem::take(&mut self.acc));
    }
}

/// col2im, the adjoint of [`im2col`]: adds `col[(o, i, j)][(y, x)]` into `acc[o, y * s - pad + i * dil, x * s -
/// pad + j * dil]` for the taps that land inside (`g` describes the convolution being inverted, whose input is
/// `acc`). Each output sums its taps in (i, j) order; rows of unit-stride taps are slice adds.
fn col2im<T: FloatDType>(col: &[T], g: &Geometry, acc: &mut [T::Acc]) {
    let (l, plane) = (g.oh * g.ow, g.h * g.wd);
    let step = g.p.stride[1];
    for o in 0..g.cig {
        let dst = &mut acc[o * plane..(o + 1) * plane];
        for (i, rows) in g.tap_rows.iter().enumerate() {
            for (j, &(lo, hi, first)) in g.tap_cols.iter().enumerate() {
                let row = ((o * g.kh + i) * g.kw + j) * l;
                for &(y, ty) in rows {
                    let src = &col[row + y * g.ow + lo..row + y * g.ow + hi];
                    let start = ty * g.wd + first;
                    if step == 1 {
                        for (a, &v) in dst[start..start + src.len()].iter_mut().zip(src) {
                            *a = a.add(v.to_acc());
                        }
                    } else {
                        for (t, &v) in src.iter().enumerate() {
                            let a = &mut dst[start + t * step];
                            *a = a.add(v.to_acc());
                        }
                    }
                }
            }
        }
    }
}

/// Images per worker when a batch of `n` images (`macs` multiply-adds in all) should run whole images side by
/// side, each worker with single-threaded GEMMs: when the batch divides evenly over the threads or is large.
/// `None`: images go one after another and each GEMM uses the cores.
#[cfg(feature = "std")]
fn images_per_worker(n: usize, macs: usize) -> Option<usize> {
    let threads = rayon::current_num_threads();
    let balanced = n % threads == 0 || n >= 4 * threads;
    (threads > 1 && n > 1 && balanced && macs >= matmul::PARALLEL_MACS).then(|| n.div_ceil(threads))
}

/// Runs `image(b, out_image, scratch, threads)` for each image `b` (its `per_image` outputs of `out`), split as
/// [`images_per_worker`] says, each worker with its own `scratch()`.
fn per_image<T: Send, S>(
    out: &mut [T],
    n: usize,
    per_image: usize,
    macs: usize,
    scratch: impl Fn() -> S + Sync,
    image: impl Fn(usize, &mut [T], &mut S, Threads) + Sync,
) {
    #[cfg(feature = "std")]
    if let Some(per_worker) = images_per_worker(n, macs) {
        use rayon::prelude::*;
        out.par_chunks_mut(per_worker * per_image)
            .enumerate()
            .for_each(|(part, block)| {
                let mut s = scratch();
                for (i, out_image) in block.chunks_mut(per_image).enumerate() {
                    image(part * per_worker + i, out_image, &mut s, Threads::One);
                }
            });
        return;
    }
    let _ = (n, macs);
    let mut s = scratch();
    for (b, out_image) in out.chunks_mut(per_image).enumerate() {
        image(b, out_image, &mut s, Threads::IfLarge);
    }
}

/// Input coordinate of output `o`, tap `k` along `axis`, for a tap known to land inside the input.
#[inline(always)]
pub(crate) fn tap_source(o: usize, k: usize, p: &Conv2dParams, axis: usize) -> usize {
    o * p.stride[axis] + k * p.dilation[axis] - p.padding[axis]
}

// SAFETY: every kernel writes each output element (the loops above start from `zeroed` or write every position),
// and none reads its destination.
unsafe impl ConvKernels for Cpu {
    fn conv2d<T: FloatDType>(
        (x, lx): (&[T], &Layout),
        (w, lw): (&[T], &Layout),
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        conv2d(x, lx, w, lw, params, out);
        Ok(())
    }

    fn conv_transpose2d<T: FloatDType>(
        (x, lx): (&[T], &Layout),
        (w, lw): (&[T], &Layout),
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        conv_transpose2d(x, lx, w, lw, params, out);
        Ok(())
    }

    fn conv2d_weight_grad<T: FloatDType>(
        (x, lx): (&[T], &Layout),
        (g, lg): (&[T], &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        conv2d_weight_grad(x, lx, g, lg, kernel, params, out);
        Ok(())
    }

    fn unfold<T: FloatDType>(
        input: (&[T], &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        super::columns::unfold(input, kernel, &params, true, out);
        Ok(())
    }

    fn fold<T: FloatDType>(
        columns: (&[T], &Layout),
        kernel: [usize; 2],
        image: [usize; 2],
        params: Conv2dParams,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        super::columns::fold(columns, kernel, &params, image, true, out);
        Ok(())
    }
}
