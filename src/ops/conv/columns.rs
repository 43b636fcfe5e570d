//! `unfold` and `fold` on the host, one body for `Cpu` and `Embedded`: each `(image, channel)` plane of the
//! output written on its own (on every core for large outputs on the CPU), with no scratch memory.
//!
//! - **unfold** copies each tap's grid from the input, zero where it falls in the padding: a read per value.
//! - **fold** adds each column value into the one pixel it came from, in PyTorch's `col2im` order (taps in
//!   (row, column) order, then the grid row by row), accumulating in the element type as that loop does. A value
//!   reaches only its own pixel, so a NaN in the columns stays there: the one-hot transposed convolution this
//!   replaces multiplied every column value by the zeros of the other taps' kernels, and a NaN spread to four
//!   pixels of a 2x2 window.

use super::Conv2dParams;
use crate::device::host::elementwise::{each_chunk, zeroed};
use crate::dtype::{Accumulator, FloatDType};
use crate::layout::Layout;
use core::mem::MaybeUninit;

/// The outputs `o` of an axis of `n` whose tap `k` lands inside an input of `size`: `o stride + k dilation -
/// padding` in `0..size`, a range (the position grows with `o`).
#[inline]
fn inside(
    n: usize,
    k: usize,
    p: &Conv2dParams,
    axis: usize,
    size: usize,
) -> core::ops::Range<usize> {
    let (s, offset) = (p.stride[axis], k * p.dilation[axis]);
    let pad = p.padding[axis];
    // First o with o s + offset >= pad, and the first with o s + offset >= pad + size.
    let first_at = |target: usize| target.saturating_sub(offset).div_ceil(s).min(n);
    first_at(pad)..first_at(pad + size)
}

/// unfold of the `(N, C, H, W)` view `x` into the dense `(N, C KH KW, OH, OW)` columns `out`: channel `(c KH + i)
/// KW + j` at `(y, x)` is the input at `(c, y sh + i dh - ph, x sw + j dw - pw)`, zero in the padding. Every
/// element of `out` is written; the planes run on every core when `parallel` (the CPU).
pub(crate) fn unfold<T: FloatDType>(
    (x, lx): (&[T], &Layout),
    [kh, kw]: [usize; 2],
    p: &Conv2dParams,
    parallel: bool,
    out: &mut [MaybeUninit<T>],
) {
    let [n, c, h, w] = lx.dims4();
    let [oh, ow] = p.output_hw([h, w], [kh, kw]).unwrap_or([0, 0]);
    let s = lx.strides();
    let zeros = |run: &mut [MaybeUninit<T>]| run.fill(MaybeUninit::new(T::ZERO));
    let out = &mut out[..n * c * kh * kw * oh * ow];
    each_chunk(out, kh * kw * oh * ow, parallel, |plane, cols| {
        let base = lx.offset() + plane / c * s[0] + plane % c * s[1];
        let mut rows = cols.chunks_exact_mut(ow);
        for i in 0..kh {
            let ys = inside(oh, i, p, 0, h);
            for j in 0..kw {
                let xs = inside(ow, j, p, 1, w);
                for oy in 0..oh {
                    let Some(row) = rows.next() else { return };
                    if !ys.contains(&oy) || xs.is_empty() {
                        zeros(row);
                        continue;
                    }
                    let iy = oy * p.stride[0] + i * p.dilation[0] - p.padding[0];
                    let first = base + iy * s[2];
                    zeros(&mut row[..xs.start]);
                    zeros(&mut row[xs.end..]);
                    let ix0 = xs.start * p.stride[1] + j * p.dilation[1] - p.padding[1];
                    let step = p.stride[1] * s[3];
                    if step == 1 {
                        // Unit steps (stride 1, dense rows): a slice copy.
                        let src = &x[first + ix0..][..xs.len()];
                        for (o, &v) in row[xs.clone()].iter_mut().zip(src) {
                            o.write(v);
                        }
                    } else {
                        for (k, o) in row[xs.clone()].iter_mut().enumerate() {
                            o.write(x[first + ix0 * s[3] + k * step]);
                        }
                    }
                }
            }
        }
    });
}

/// fold of the `(N, C KH KW, OH, OW)` view `cols` into the dense `(N, C, H, W)` image `out`: each column value
/// added into the pixel unfold read it from (see the module docs). Every element of `out` is written.
pub(crate) fn fold<T: FloatDType>(
    (cols, lc): (&[T], &Layout),
    [kh, kw]: [usize; 2],
    p: &Conv2dParams,
    [h, w]: [usize; 2],
    parallel: bool,
    out: &mut [MaybeUninit<T>],
) {
    let [n, ck, oh, ow] = lc.dims4();
    let c = ck / (kh * kw).max(1);
    let s = lc.strides();
    let out = &mut out[..n * c * h * w];
    each_chunk(out, h * w, parallel, |plane, image| {
        let image = zeroed(image);
        let first_tap = lc.offset() + plane / c * s[0] + plane % c * kh * kw * s[1];
        for i in 0..kh {
            let ys = inside(oh, i, p, 0, h);
            for j in 0..kw {
                let xs = inside(ow, j, p, 1, w);
                let tap = first_tap + (i * kw + j) * s[1];
                if xs.is_empty() {
                    continue;
                }
                let x0 = xs.start * p.stride[1] + j * p.dilation[1] - p.padding[1];
                let add = |d: &mut T, v: T| *d = T::from_acc(d.to_acc().add(v.to_acc()));
                for oy in ys.clone() {
                    let y = oy * p.stride[0] + i * p.dilation[0] - p.padding[0];
                    let first = tap + oy * s[2] + xs.start * s[3];
                    // Rounded to T at each step, as col2im adds.
                    if p.stride[1] == 1 && s[3] == 1 {
                        let dst = &mut image[y * w + x0..][..xs.len()];
                        for (d, &v) in dst.iter_mut().zip(&cols[first..][..xs.len()]) {
                            add(d, v);
                        }
                    } else {
                        for k in 0..xs.len() {
                            add(
                                &mut image[y * w + x0 + k * p.stride[1]],
                                cols[first + k * s[3]],
                            );
                        }
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_matches_the_tap_rule() {
        let mut p = Conv2dParams {
            stride: [1, 1],
            padding: [0, 0],
            padding_end: [0, 0],
            dilation: [1, 1],
            groups: 1,
            output_padding: [0, 0],
        };
        for (stride, pad, dil) in [(1, 0, 1), (2, 1, 1), (3, 2, 2), (1, 3, 1), (2, 0, 3)] {
            p.stride[0] = stride;
            p.padding[0] = pad;
            p.dilation[0] = dil;
            for size in [1, 4, 7] {
                for k in 0..4 {
                    let want: Vec<usize> = (0..9)
                        .filter(|&o| {
                            let at = o * stride + k * dil;
                            at >= pad && at - pad < size
                        })
                        .collect();
                    let got: Vec<usize> = inside(9, k, &p, 0, size).collect();
                    assert_eq!(
                        got, want,
                        "stride {stride} pad {pad} dil {dil} size {size} tap {k}"
                    );
                }
            }
        }
    }
}
