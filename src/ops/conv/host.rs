//! Convolution and pooling on the embedded device: a direct loop over each output's window, accumulating in the
//! type's accumulator (f32 for f16/bf16). No scratch memory: the CPU's im2col + GEMM needs a column matrix per
//! image, which a device without a heap does not have, and the small images of embedded inference do not need.
//! Sums run over (input channel, kernel row, kernel column) in order.

use super::{Conv2dParams, ConvKernels};
use crate::device::host::elementwise::zeroed;
use crate::device::Embedded;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use core::mem::MaybeUninit;

/// The input position that tap `i` of output `o` reads along spatial axis `ax` of a forward window, if inside.
#[inline(always)]
pub(crate) fn tap(o: usize, i: usize, p: &Conv2dParams, ax: usize, size: usize) -> Option<usize> {
    let pos = (o * p.stride[ax] + i * p.dilation[ax]).checked_sub(p.padding[ax])?;
    (pos < size).then_some(pos)
}

/// The input position that feeds output `o` of a transposed convolution through tap `i` along axis `ax`: the
/// `y` with `y * stride - padding + i * dilation == o`, if there is one inside the input.
#[inline(always)]
pub(crate) fn transposed_tap(
    o: usize,
    i: usize,
    p: &Conv2dParams,
    ax: usize,
    size: usize,
) -> Option<usize> {
    let t = (o + p.padding[ax]).checked_sub(i * p.dilation[ax])?;
    let y = t / p.stride[ax];
    (t % p.stride[ax] == 0 && y < size).then_some(y)
}

/// Storage offset of `[a, b, c, d]` in a rank-4 layout.
#[inline(always)]
pub(crate) fn at(l: &Layout, [a, b, c, d]: [usize; 4]) -> usize {
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
}
