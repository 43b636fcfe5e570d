//! CPU convolution (im2col + the matmul kernel, so it runs at GEMM speed) and pooling (direct window loops).

use super::matmul::{self, Threads};
use crate::dtype::{Accumulator, DType, FloatDType};
use crate::layout::Layout;
use crate::ops::{Conv2dParams, Pool};
use crate::shape::Dims;
use alloc::vec::Vec;

/// Spatial output size (height, width); the tensor API has checked that the window fits.
fn out_hw(p: &Conv2dParams, input: [usize; 2], kernel: [usize; 2]) -> [usize; 2] {
    p.output_hw(input, kernel)
        .expect("conv2d: window larger than the padded input (checked by the tensor API)")
}

/// Input coordinate of output position `o`, tap `k` along `axis`, or `None` in the padding.
#[inline(always)]
fn source(o: usize, k: usize, size: usize, p: &Conv2dParams, axis: usize) -> Option<usize> {
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

/// Geometry of one conv2d call, shared by the per-image work.
struct Geometry {
    h: usize,
    wd: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    cig: usize,
    p: Conv2dParams,
}

impl Geometry {
    /// A conv2d of `[h, wd]` inputs by `cig`-channel `[kh, kw]` windows under `p`.
    fn new([h, wd]: [usize; 2], [kh, kw]: [usize; 2], cig: usize, p: Conv2dParams) -> Self {
        let [oh, ow] = out_hw(&p, [h, wd], [kh, kw]);
        Geometry {
            h,
            wd,
            kh,
            kw,
            oh,
            ow,
            cig,
            p,
        }
    }
}

/// im2col of image `b`, group `grp`: `col[(ci, i, j)][(y, x)] = input[b, grp * cig + ci, y * s - pad + i * dil,
/// x * s - pad + j * dil]`. Only taps inside the input are written: `col` must hold zeros at the padding
/// positions, as a zeroed buffer does, and keeps them across calls (they depend on the geometry alone). Rows of
/// unit-stride taps are slice copies; the valid ranges are computed once per tap, not per channel.
fn im2col<T: FloatDType>(x: &[T], lx: &Layout, g: &Geometry, b: usize, grp: usize, col: &mut [T]) {
    let sx = lx.strides();
    let (ow, l) = (g.ow, g.oh * g.ow);
    let step = g.p.stride[1] * sx[3];
    let base = lx.offset() + b * sx[0] + grp * g.cig * sx[1];
    for i in 0..g.kh {
        // Output rows whose tap row i lands inside the input, and that input row's offset.
        let rows =
            || (0..g.oh).filter_map(|y| source(y, i, g.h, &g.p, 0).map(|sy| (y, sy * sx[2])));
        for j in 0..g.kw {
            let (lo, hi) = valid_outputs(ow, j, g.wd, &g.p, 1);
            if lo == hi {
                continue;
            }
            let first = source(lo, j, g.wd, &g.p, 1).expect("inside the valid range") * sx[3];
            for ci in 0..g.cig {
                let plane = base + ci * sx[1] + first;
                let row = ((ci * g.kh + i) * g.kw + j) * l;
                for (y, sy) in rows() {
                    let dst = &mut col[row + y * ow + lo..row + y * ow + hi];
                    let start = plane + sy;
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

/// conv2d as one GEMM per image and group, `(cog, K) x (K, OH * OW)` over that image's im2col block. Large
/// batches run images side by side on threads (each thread reuses one column buffer); otherwise images go one
/// after another and the GEMM itself uses the cores.
pub(super) fn conv2d<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    w: &[T],
    lw: &Layout,
    p: Conv2dParams,
) -> Vec<T> {
    let [n, c, h, wd] = lx.dims4();
    let [co, cig, kh, kw] = lw.dims4();
    let geometry = Geometry::new([h, wd], [kh, kw], cig, p);
    let (groups, cog) = (p.groups, co / p.groups);
    debug_assert_eq!(c, cig * groups);
    let (k, l) = (cig * kh * kw, geometry.oh * geometry.ow);
    let mut out = super::pool::filled(n * co * l, T::ZERO);
    if out.is_empty() {
        return out;
    }
    // The weight as a dense (C_out, K) matrix (copied only if strided).
    let w_dense: Vec<T>;
    let w_rows: &[T] = if let Some(r) = lw.contiguous_range() {
        &w[r]
    } else {
        w_dense = super::map_view(w, lw, |v| v);
        &w_dense
    };
    let lc = Layout::contiguous(Dims::from_slice(&[1, k, l]));
    let image = |b: usize, out_image: &mut [T], col: &mut [T], threads: Threads| {
        for grp in 0..groups {
            im2col(x, lx, &geometry, b, grp, col);
            let lw_g =
                Layout::from_parts(Dims::from_slice(&[1, cog, k]), &[0, k, 1], grp * cog * k);
            let dst = &mut out_image[grp * cog * l..(grp + 1) * cog * l];
            matmul::matmul_into(w_rows, &lw_g, col, &lc, dst, threads);
        }
    };

    #[cfg(feature = "std")]
    {
        // Whole images per thread balance when the batch divides evenly or is large.
        let threads = rayon::current_num_threads();
        let balanced = n % threads == 0 || n >= 4 * threads;
        if threads > 1 && n > 1 && balanced && n * co * k * l >= matmul::PARALLEL_MACS {
            use rayon::prelude::*;
            let per_part = n.div_ceil(threads);
            out.par_chunks_mut(per_part * co * l)
                .enumerate()
                .for_each(|(part, block)| {
                    let mut col = super::pool::filled(k * l, T::ZERO);
                    for (i, out_image) in block.chunks_mut(co * l).enumerate() {
                        image(part * per_part + i, out_image, &mut col, Threads::One);
                    }
                    super::pool::recycle(col);
                });
            return out;
        }
    }
    let mut col = super::pool::filled(k * l, T::ZERO);
    for (b, out_image) in out.chunks_mut(co * l).enumerate() {
        image(b, out_image, &mut col, Threads::IfLarge);
    }
    super::pool::recycle(col);
    out
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
) -> Vec<T> {
    match T::DTYPE {
        DType::F32 | DType::F64 => weight_grad_acc(x, lx, gy, lgy, kernel, p)
            .into_iter()
            .map(T::from_acc)
            .collect(),
        _ => {
            let widen = |v: T| v.to_f64() as f32;
            let (wx, wg) = (
                super::map_view(x, lx, widen),
                super::map_view(gy, lgy, widen),
            );
            let (wlx, wlg) = (
                Layout::contiguous(*lx.dims()),
                Layout::contiguous(*lgy.dims()),
            );
            weight_grad_acc(&wx, &wlx, &wg, &wlg, kernel, p)
                .into_iter()
                .map(|v| T::from_f64(v as f64)) // exact widening, then one rounding
                .collect()
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
    let mut acc = alloc::vec![T::Acc::ZERO; co * k];
    if acc.is_empty() || n == 0 || l == 0 {
        return acc;
    }
    // dY as dense (N, C_out, OH * OW) rows (copied only if strided).
    let gy_dense: Vec<T>;
    let (gbuf, gbase) = match lgy.contiguous_range() {
        Some(r) => (gy, r.start),
        None => {
            gy_dense = super::map_view(gy, lgy, |v| v);
            (&gy_dense[..], 0)
        }
    };
    let col_t = Layout::from_parts(Dims::from_slice(&[1, l, k]), &[0, 1, l], 0); // col^T, read in place
    let (mut col, mut part) = (
        super::pool::filled(k * l, T::ZERO),
        alloc::vec![T::ZERO; cog * k],
    );
    for b in 0..n {
        for grp in 0..groups {
            im2col(x, lx, &geometry, b, grp, &mut col);
            let rows = Layout::from_parts(
                Dims::from_slice(&[1, cog, l]),
                &[0, l, 1],
                gbase + (b * co + grp * cog) * l,
            );
            matmul::matmul_into(gbuf, &rows, &col, &col_t, &mut part, Threads::IfLarge);
            for (a, &v) in acc[grp * cog * k..(grp + 1) * cog * k]
                .iter_mut()
                .zip(&part)
            {
                *a = a.add(v.to_acc());
            }
        }
    }
    super::pool::recycle(col);
    acc
}

/// Transposed convolution: per image and group, `col = W_g^T x_g` (the matmul kernel, `(cog * KH * KW, H * W)`)
/// scattered back into the output windows (col2im), the exact adjoint of `conv2d`'s im2col + matmul.
pub(super) fn conv_transpose2d<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    w: &[T],
    lw: &Layout,
    p: Conv2dParams,
) -> Vec<T> {
    let [n, c, h, wd] = lx.dims4();
    let [ci, cog, kh, kw] = lw.dims4();
    debug_assert_eq!(ci, c);
    let (g, cig) = (p.groups, c / p.groups);
    let co = cog * g;
    let [oh, ow] = p.transposed_output_hw([h, wd], [kh, kw]);
    let (k, l) = (cog * kh * kw, h * wd);
    let mut acc = alloc::vec![T::Acc::ZERO; n * co * oh * ow];
    if acc.is_empty() || k == 0 || l == 0 {
        return acc.into_iter().map(T::from_acc).collect();
    }
    // lhs: W_g^T as [N, K, cig] (rows (co, i, j), columns ci), shared across the batch: the weight's (co, i, j)
    // axes must flatten, else use its dense copy. rhs: x_g as [N, cig, H * W]: the view's rows must be dense.
    // Both are decided (and copied if needed) once, outside the group loop.
    let (sw, sx) = (lw.strides(), lx.strides());
    let dense_w: Vec<T>;
    let (wbuf, w_rows, w_cols, w_base) = if sw[1] == kh * kw * sw[3] && sw[2] == kw * sw[3] {
        (w, sw[3], sw[0], lw.offset())
    } else {
        dense_w = super::map_view(w, lw, |v| v);
        (&dense_w[..], 1, k, 0)
    };
    let dense_x: Vec<T>;
    let (xbuf, x_img, x_chan, x_base) = if sx[3] == 1 && sx[2] == wd {
        (x, sx[0], sx[1], lx.offset())
    } else {
        dense_x = super::map_view(x, lx, |v| v);
        (&dense_x[..], c * l, l, 0)
    };
    for grp in 0..g {
        let wl = Layout::from_parts(
            Dims::from_slice(&[n, k, cig]),
            &[0, w_rows, w_cols],
            w_base + grp * cig * w_cols,
        );
        let xl = Layout::from_parts(
            Dims::from_slice(&[n, cig, l]),
            &[x_img, x_chan, 1],
            x_base + grp * cig * x_chan,
        );
        let col = matmul::matmul(wbuf, &wl, xbuf, &xl); // [N, K, L]
                                                        // col2im: col[b][(o, i, j)][(y, x)] adds into out[b, grp * cog + o, y * s - pad + i * dil, x * s - pad + j * dil].
        for b in 0..n {
            for o in 0..cog {
                let plane = (b * co + grp * cog + o) * oh * ow;
                for i in 0..kh {
                    for j in 0..kw {
                        let row = ((b * k) + (o * kh + i) * kw + j) * l;
                        for y in 0..h {
                            let Some(ty) = (y * p.stride[0] + i * p.dilation[0])
                                .checked_sub(p.padding[0])
                                .filter(|&t| t < oh)
                            else {
                                continue;
                            };
                            for xo in 0..wd {
                                let Some(tx) = (xo * p.stride[1] + j * p.dilation[1])
                                    .checked_sub(p.padding[1])
                                    .filter(|&t| t < ow)
                                else {
                                    continue;
                                };
                                let a = &mut acc[plane + ty * ow + tx];
                                *a = a.add(col[row + y * wd + xo].to_acc());
                            }
                        }
                    }
                }
            }
        }
    }
    acc.into_iter().map(T::from_acc).collect()
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
            let valid = |k: &usize| source(o, *k, size, p, axis).is_some();
            let lo = (0..kernel).find(valid).unwrap_or(kernel);
            (lo, lo + (lo..kernel).take_while(valid).count())
        })
        .collect()
}

/// Input coordinate of output `o`, tap `k` along `axis`, for a tap [`tap_ranges`] found valid.
#[inline(always)]
fn tap_source(o: usize, k: usize, p: &Conv2dParams, axis: usize) -> usize {
    o * p.stride[axis] + k * p.dilation[axis] - p.padding[axis]
}

pub(super) fn pool2d<T: FloatDType>(
    pool: Pool,
    x: &[T],
    lx: &Layout,
    kernel: usize,
    p: Conv2dParams,
) -> Vec<T> {
    match pool {
        // NaN wins, as in max reductions.
        Pool::Max => pool_with(
            x,
            lx,
            kernel,
            p,
            T::Acc::LOWEST,
            |acc, v| {
                if acc.is_nan() || (!v.is_nan() && acc >= v) {
                    acc
                } else {
                    v
                }
            },
            |acc| acc,
        ),
        Pool::Avg => {
            let window = T::Acc::from_usize(kernel * kernel); // padding counts in the average
            pool_with(
                x,
                lx,
                kernel,
                p,
                T::Acc::ZERO,
                |acc, v| acc.add(v),
                |acc| acc.div(window),
            )
        }
    }
}

/// Pooling with the window fold `step` from `init`, and `finish` on each window's result. A whole output row is
/// folded at once, tap by tap (each tap over the outputs it reaches), so the row's windows are independent chains
/// the CPU overlaps; every window still folds its taps in (row, column) order.
#[inline(always)]
fn pool_with<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    kernel: usize,
    p: Conv2dParams,
    init: T::Acc,
    step: impl Fn(T::Acc, T::Acc) -> T::Acc,
    finish: impl Fn(T::Acc) -> T::Acc,
) -> Vec<T> {
    let [n, c, h, wd] = lx.dims4();
    let [oh, ow] = out_hw(&p, [h, wd], [kernel, kernel]);
    let sx = lx.strides();
    let rows = tap_ranges(oh, kernel, h, &p, 0);
    // For tap column j, the outputs it reaches and the input offset of the first one.
    let taps: Vec<(usize, usize, usize)> = (0..kernel)
        .map(|j| {
            let (lo, hi) = valid_outputs(ow, j, wd, &p, 1);
            let first = if lo < hi { tap_source(lo, j, &p, 1) } else { 0 };
            (lo, hi, first * sx[3])
        })
        .collect();
    let step_x = p.stride[1] * sx[3];
    let mut acc = alloc::vec![init; ow];
    let mut out = super::pool::with_capacity(n * c * oh * ow);
    for b in 0..n {
        for ch in 0..c {
            let plane = lx.offset() + b * sx[0] + ch * sx[1];
            for (y, &(ilo, ihi)) in rows.iter().enumerate() {
                acc.fill(init);
                for i in ilo..ihi {
                    let row = plane + tap_source(y, i, &p, 0) * sx[2];
                    for &(lo, hi, first) in &taps {
                        let src = &x[row + first..];
                        for (t, a) in acc[lo..hi].iter_mut().enumerate() {
                            *a = step(*a, src[t * step_x].to_acc());
                        }
                    }
                }
                out.extend(acc.iter().map(|&a| T::from_acc(finish(a))));
            }
        }
    }
    out
}

/// The gradient of max pooling: `y` is the dense forward output, `g` its dense gradient; every input position
/// equal to its window's maximum receives the window's gradient (ties all do, as in candle; padding never
/// wins).
pub(super) fn max_pool2d_backward<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    y: &[T],
    g: &[T],
    kernel: usize,
    p: Conv2dParams,
) -> Vec<T> {
    let [n, c, h, wd] = lx.dims4();
    let [oh, ow] = out_hw(&p, [h, wd], [kernel, kernel]);
    let sx = lx.strides();
    let (rows, cols) = (
        tap_ranges(oh, kernel, h, &p, 0),
        tap_ranges(ow, kernel, wd, &p, 1),
    );
    let mut acc = alloc::vec![T::Acc::ZERO; n * c * h * wd];
    for b in 0..n {
        for ch in 0..c {
            let plane = lx.offset() + b * sx[0] + ch * sx[1];
            let dst = (b * c + ch) * h * wd;
            for (yo, &(ilo, ihi)) in rows.iter().enumerate() {
                for (xo, &(jlo, jhi)) in cols.iter().enumerate() {
                    let k = ((b * c + ch) * oh + yo) * ow + xo;
                    let (max, grad) = (y[k], g[k].to_acc());
                    for i in ilo..ihi {
                        let sy = tap_source(yo, i, &p, 0);
                        for j in jlo..jhi {
                            let sxx = tap_source(xo, j, &p, 1);
                            if x[plane + sy * sx[2] + sxx * sx[3]] == max {
                                let at = dst + sy * wd + sxx;
                                acc[at] = acc[at].add(grad);
                            }
                        }
                    }
                }
            }
        }
    }
    acc.into_iter().map(T::from_acc).collect()
}
