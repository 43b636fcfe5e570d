//! CPU convolution (im2col + the matmul kernel, so it runs at GEMM speed) and pooling (direct window loops).

use super::matmul;
use crate::dtype::{Accumulator, FloatDType};
use crate::layout::Layout;
use crate::ops::{Conv2dParams, Pool};
use crate::shape::Dims;
use alloc::vec::Vec;

/// Spatial output size along `axis` (0: height, 1: width); the tensor API has checked that the window fits.
fn out_size(size: usize, kernel: usize, p: &Conv2dParams, axis: usize) -> usize {
    Conv2dParams::out_size(
        size,
        kernel,
        p.stride[axis],
        p.padding[axis],
        p.dilation[axis],
    )
    .expect("conv2d: window larger than the padded input (checked by the tensor API)")
}

/// Input coordinate of output position `o`, tap `k` along `axis`, or `None` in the padding.
#[inline(always)]
fn source(o: usize, k: usize, size: usize, p: &Conv2dParams, axis: usize) -> Option<usize> {
    (o * p.stride[axis] + k * p.dilation[axis])
        .checked_sub(p.padding[axis])
        .filter(|&i| i < size)
}

pub(super) fn conv2d<T: FloatDType>(
    x: &[T],
    lx: &Layout,
    w: &[T],
    lw: &Layout,
    p: Conv2dParams,
) -> Vec<T> {
    let [n, c, h, wd] = [lx.dims()[0], lx.dims()[1], lx.dims()[2], lx.dims()[3]];
    let [co, cig, kh, kw] = [lw.dims()[0], lw.dims()[1], lw.dims()[2], lw.dims()[3]];
    let (oh, ow) = (out_size(h, kh, &p, 0), out_size(wd, kw, &p, 1));
    let (g, cog) = (p.groups, co / p.groups);
    debug_assert_eq!(c, cig * g);
    let (k, l) = (cig * kh * kw, oh * ow);
    let sx = lx.strides();
    let mut out = alloc::vec![T::ZERO; n * co * l];
    if out.is_empty() {
        return out;
    }
    // The weight as a dense (C_out, K) matrix (copied only if strided).
    let w_dense: Vec<T>;
    let w_rows: &[T] = if let Some(r) = lw.contiguous_range() {
        &w[r]
    } else {
        let mut v = Vec::with_capacity(lw.numel());
        crate::layout::for_each_row(lw.dims(), [lw], |[o], len, [s]| {
            v.extend((0..len).map(|i| w[o + i * s]))
        });
        w_dense = v;
        &w_dense
    };
    let mut col = alloc::vec![T::ZERO; n * k * l];
    for grp in 0..g {
        // im2col: col[b][(ci, i, j)][(y, x)] = input[b, grp * cig + ci, y * s - pad + i * dil, x * s - pad + j * dil].
        for b in 0..n {
            for ci in 0..cig {
                let plane = lx.offset() + b * sx[0] + (grp * cig + ci) * sx[1];
                for i in 0..kh {
                    for j in 0..kw {
                        let row = ((b * k) + (ci * kh + i) * kw + j) * l;
                        for y in 0..oh {
                            let dst = &mut col[row + y * ow..row + (y + 1) * ow];
                            match source(y, i, h, &p, 0) {
                                None => dst.fill(T::ZERO),
                                Some(sy) => {
                                    for (xo, d) in dst.iter_mut().enumerate() {
                                        *d = match source(xo, j, wd, &p, 1) {
                                            Some(sxx) => x[plane + sy * sx[2] + sxx * sx[3]],
                                            None => T::ZERO,
                                        };
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // [N, cog, K] (the group's weight rows, shared: batch stride 0) x [N, K, L].
        let lw_g = Layout::from_parts(Dims::from_slice(&[n, cog, k]), &[0, k, 1], grp * cog * k);
        let lc = Layout::from_parts(Dims::from_slice(&[n, k, l]), &[k * l, l, 1], 0);
        let y = matmul::matmul(w_rows, &lw_g, &col, &lc);
        for b in 0..n {
            let dst = (b * co + grp * cog) * l;
            out[dst..dst + cog * l].copy_from_slice(&y[b * cog * l..(b + 1) * cog * l]);
        }
    }
    out
}

pub(super) fn pool2d<T: FloatDType>(
    pool: Pool,
    x: &[T],
    lx: &Layout,
    kernel: usize,
    p: Conv2dParams,
) -> Vec<T> {
    let [n, c, h, wd] = [lx.dims()[0], lx.dims()[1], lx.dims()[2], lx.dims()[3]];
    let (oh, ow) = (out_size(h, kernel, &p, 0), out_size(wd, kernel, &p, 1));
    let sx = lx.strides();
    let mut out = Vec::with_capacity(n * c * oh * ow);
    let window = T::Acc::from_usize(kernel * kernel);
    for b in 0..n {
        for ch in 0..c {
            let plane = lx.offset() + b * sx[0] + ch * sx[1];
            for y in 0..oh {
                for xo in 0..ow {
                    let mut acc = match pool {
                        Pool::Max => T::Acc::LOWEST,
                        Pool::Avg => T::Acc::ZERO,
                    };
                    for i in 0..kernel {
                        let Some(sy) = source(y, i, h, &p, 0) else {
                            continue;
                        };
                        for j in 0..kernel {
                            let Some(sxx) = source(xo, j, wd, &p, 1) else {
                                continue;
                            };
                            let v = x[plane + sy * sx[2] + sxx * sx[3]].to_acc();
                            acc = match pool {
                                // NaN wins, as in max reductions.
                                Pool::Max if acc.is_nan() || (!v.is_nan() && acc >= v) => acc,
                                Pool::Max => v,
                                Pool::Avg => acc.add(v),
                            };
                        }
                    }
                    out.push(T::from_acc(match pool {
                        Pool::Max => acc,
                        Pool::Avg => acc.div(window),
                    }));
                }
            }
        }
    }
    out
}
