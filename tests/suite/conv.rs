//! conv2d, conv1d, conv_transpose2d, max_pool2d and avg_pool2d, and conv2d's gradients, against naive f64 loops,
//! with stride, padding, dilation and groups, on contiguous and strided (channels-last permuted) inputs, for
//! every float dtype.

use crate::common::*;
use typed_tensor::autograd::{Traced, Var};
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, Conv2dAxes, ConvGeometry, Pool2d};

/// Naive NCHW convolution; `x` and `w` row-major.
#[allow(clippy::too_many_arguments)]
fn conv_ref(
    x: &[f64],
    xd: [usize; 4],
    w: &[f64],
    wd: [usize; 4],
    stride: [usize; 2],
    pad: [usize; 2],
    dil: [usize; 2],
    groups: usize,
) -> (Vec<f64>, usize, usize) {
    conv_sides_ref(x, xd, w, wd, stride, [pad, pad], dil, groups)
}

/// [`conv_ref`] with `pad[0]` zeros before each axis and `pad[1]` after (asymmetric padding): taps are placed
/// from the leading padding, the output size counts both.
#[allow(clippy::too_many_arguments)]
fn conv_sides_ref(
    x: &[f64],
    [n, c, h, wd]: [usize; 4],
    w: &[f64],
    [co, cig, kh, kw]: [usize; 4],
    stride: [usize; 2],
    [pad, pad_end]: [[usize; 2]; 2],
    dil: [usize; 2],
    groups: usize,
) -> (Vec<f64>, usize, usize) {
    let oh = (h + pad[0] + pad_end[0] - dil[0] * (kh - 1) - 1) / stride[0] + 1;
    let ow = (wd + pad[1] + pad_end[1] - dil[1] * (kw - 1) - 1) / stride[1] + 1;
    let cog = co / groups;
    let mut out = vec![0.0; n * co * oh * ow];
    for b in 0..n {
        for o in 0..co {
            let g = o / cog;
            for y in 0..oh {
                for xo in 0..ow {
                    let mut s = 0.0;
                    for ci in 0..cig {
                        for i in 0..kh {
                            for j in 0..kw {
                                let sy = (y * stride[0] + i * dil[0]) as isize - pad[0] as isize;
                                let sx = (xo * stride[1] + j * dil[1]) as isize - pad[1] as isize;
                                if sy < 0 || sx < 0 || sy >= h as isize || sx >= wd as isize {
                                    continue;
                                }
                                let xi =
                                    ((b * c + g * cig + ci) * h + sy as usize) * wd + sx as usize;
                                s += x[xi] * w[((o * cig + ci) * kh + i) * kw + j];
                            }
                        }
                    }
                    out[((b * co + o) * oh + y) * ow + xo] = s;
                }
            }
        }
    }
    (out, oh, ow)
}

/// Naive gradients of [`conv_ref`]'s convolution for an output gradient `gy`: every product `x * w` the forward
/// pass formed sends `gy * w` to its input position and `gy * x` to its weight position.
#[allow(clippy::too_many_arguments)]
fn conv_grads_ref(
    x: &[f64],
    [n, c, h, wd]: [usize; 4],
    w: &[f64],
    [co, cig, kh, kw]: [usize; 4],
    gy: &[f64],
    stride: usize,
    pad: usize,
    groups: usize,
) -> (Vec<f64>, Vec<f64>) {
    let oh = (h + 2 * pad - kh) / stride + 1;
    let ow = (wd + 2 * pad - kw) / stride + 1;
    let cog = co / groups;
    let (mut dx, mut dw) = (vec![0.0; x.len()], vec![0.0; w.len()]);
    for b in 0..n {
        for o in 0..co {
            for y in 0..oh {
                for xo in 0..ow {
                    let g = gy[((b * co + o) * oh + y) * ow + xo];
                    for ci in 0..cig {
                        for i in 0..kh {
                            for j in 0..kw {
                                let sy = (y * stride + i) as isize - pad as isize;
                                let sx = (xo * stride + j) as isize - pad as isize;
                                if sy < 0 || sx < 0 || sy >= h as isize || sx >= wd as isize {
                                    continue;
                                }
                                let xi = ((b * c + o / cog * cig + ci) * h + sy as usize) * wd
                                    + sx as usize;
                                let wi = ((o * cig + ci) * kh + i) * kw + j;
                                dx[xi] += g * w[wi];
                                dw[wi] += g * x[xi];
                            }
                        }
                    }
                }
            }
        }
    }
    (dx, dw)
}

fn vals<T: WithDType>(t: &[T]) -> Vec<f64> {
    t.iter().map(|x| x.to_f64()).collect()
}

fn check<T: WithDType>(what: &str, got: &[T], want: &[f64], terms: usize) {
    assert_within(
        what,
        got,
        want,
        tolerance::<T>() * (terms as f64).sqrt() * 3.0,
    );
}

fn convs<T: FloatDType, D: Device>() {
    // Dense, stride 1, padding 1 (the conv2d bench shape, small).
    let x: Tensor<T, Rank4<2, 4, 6, 5>, D> = random(1);
    let w: Tensor<T, Rank4<3, 4, 3, 3>, D> = random(2);
    let y: Tensor<T, Rank4<2, 3, 6, 5>, D> = x.conv2d(&w, Conv::<1, 1, 1, 1>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [2, 4, 6, 5],
        &vals(&w.to_vec()),
        [3, 4, 3, 3],
        [1; 2],
        [1; 2],
        [1; 2],
        1,
    );
    check("conv2d s1 p1", &y.to_vec(), &want, 36);

    // Stride 2, dilation 2, groups 2, on a channels-last buffer viewed as NCHW (strided input).
    let nhwc: Tensor<T, Rank4<2, 7, 8, 4>, D> = random(3);
    let x = nhwc.permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>(); // (2, 4, 7, 8), strided
    let w: Tensor<T, Rank4<6, 2, 3, 2>, D> = random(4);
    let y: Tensor<T, Rank4<2, 6, 3, 4>, D> = x.conv2d(&w, Conv::<2, 1, 2, 2>);
    let (want, oh, ow) = conv_ref(
        &vals(&x.to_vec()),
        [2, 4, 7, 8],
        &vals(&w.to_vec()),
        [6, 2, 3, 2],
        [2; 2],
        [1; 2],
        [2; 2],
        2,
    );
    assert_eq!((oh, ow), (3, 4));
    check("conv2d s2 d2 g2 on a permuted view", &y.to_vec(), &want, 12);

    // Depthwise (groups = channels), and a transposed weight view.
    let x: Tensor<T, Rank4<1, 3, 5, 5>, D> = random(5);
    let wt: Tensor<T, Rank4<3, 1, 3, 3>, D> = random(6);
    let w = wt.transpose::<Axis<2>, Axis<3>>();
    let y: Tensor<T, Rank4<1, 3, 3, 3>, D> = x.conv2d(&w, Conv::<1, 0, 1, 3>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [1, 3, 5, 5],
        &vals(&w.to_vec()),
        [3, 1, 3, 3],
        [1; 2],
        [0; 2],
        [1; 2],
        3,
    );
    check("depthwise conv2d, transposed weight", &y.to_vec(), &want, 9);

    // A batch large enough that the CPU runs images on separate threads, padding wider than the taps reach.
    let x: Tensor<T, Rank4<4, 16, 12, 12>, D> = random(21);
    let w: Tensor<T, Rank4<16, 16, 3, 3>, D> = random(22);
    let y: Tensor<T, Rank4<4, 16, 14, 14>, D> = x.conv2d(&w, Conv::<1, 2, 1, 1>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [4, 16, 12, 12],
        &vals(&w.to_vec()),
        [16, 16, 3, 3],
        [1; 2],
        [2; 2],
        [1; 2],
        1,
    );
    check("conv2d batch 4, padding 2", &y.to_vec(), &want, 144);

    // "Same" padding, whose col rows the CPU copies as whole spans: dilation 2 (two padding columns per row
    // boundary), 7x7 (three), and a view narrowed in width whose row stride equals the output width.
    let x: Tensor<T, Rank4<2, 3, 7, 9>, D> = random(25);
    let w: Tensor<T, Rank4<4, 3, 3, 3>, D> = random(26);
    let y: Tensor<T, Rank4<2, 4, 7, 9>, D> = x.conv2d(&w, Conv::<1, 2, 2, 1>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [2, 3, 7, 9],
        &vals(&w.to_vec()),
        [4, 3, 3, 3],
        [1; 2],
        [2; 2],
        [2; 2],
        1,
    );
    check("conv2d d2 p2, same size", &y.to_vec(), &want, 27);
    let x: Tensor<T, Rank4<1, 2, 9, 9>, D> = random(27);
    let w: Tensor<T, Rank4<2, 2, 7, 7>, D> = random(28);
    let y: Tensor<T, Rank4<1, 2, 9, 9>, D> = x.conv2d(&w, Conv::<1, 3, 1, 1>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [1, 2, 9, 9],
        &vals(&w.to_vec()),
        [2, 2, 7, 7],
        [1; 2],
        [3; 2],
        [1; 2],
        1,
    );
    check("conv2d 7x7 p3, same size", &y.to_vec(), &want, 98);
    let wide: Tensor<T, Rank4<1, 2, 6, 9>, D> = random(29);
    let x = wide.narrow::<Axis<3>, 1, 7>(); // (1, 2, 6, 7), rows 9 apart
    let w: Tensor<T, Rank4<3, 2, 3, 3>, D> = random(30);
    let y: Tensor<T, Rank4<1, 3, 8, 9>, D> = x.conv2d(&w, Conv::<1, 2, 1, 1>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [1, 2, 6, 7],
        &vals(&w.to_vec()),
        [3, 2, 3, 3],
        [1; 2],
        [2; 2],
        [1; 2],
        1,
    );
    check("conv2d p2 of a narrowed view", &y.to_vec(), &want, 18);

    // A 1x1 input, stride 2, padding 1: whole rows and columns of taps fall in the padding.
    let x: Tensor<T, Rank4<1, 2, 1, 1>, D> = random(23);
    let w: Tensor<T, Rank4<3, 2, 3, 3>, D> = random(24);
    let y: Tensor<T, Rank4<1, 3, 1, 1>, D> = x.conv2d(&w, Conv::<2, 1, 1, 1>);
    let (want, _, _) = conv_ref(
        &vals(&x.to_vec()),
        [1, 2, 1, 1],
        &vals(&w.to_vec()),
        [3, 2, 3, 3],
        [2; 2],
        [1; 2],
        [1; 2],
        1,
    );
    check("conv2d of a 1x1 input", &y.to_vec(), &want, 18);

    // conv1d = conv2d of height 1, padded along the length only.
    let x: Tensor<T, Rank3<2, 4, 9>, D> = random(7);
    let w: Tensor<T, Rank3<6, 2, 3>, D> = random(8);
    let y: Tensor<T, Rank3<2, 6, 5>, D> = x.conv1d(&w, Conv::<2, 1, 1, 2>);
    let (want, oh, ol) = conv_ref(
        &vals(&x.to_vec()),
        [2, 4, 1, 9],
        &vals(&w.to_vec()),
        [6, 2, 1, 3],
        [1, 2],
        [0, 1],
        [1, 1],
        2,
    );
    assert_eq!((oh, ol), (1, 5));
    check("conv1d s2 p1 g2", &y.to_vec(), &want, 6);
}

fn pools<T: FloatDType, D: Device>() {
    let x: Tensor<T, Rank4<2, 3, 5, 6>, D> = random(9);
    let xv = vals(&x.to_vec());
    // max 3x3 stride 2 padding 1; avg 2x2 stride 2.
    let m: Tensor<T, Rank4<2, 3, 3, 3>, D> = x.max_pool2d(Pool2d::<3, 2, 1>);
    let a: Tensor<T, Rank4<2, 3, 2, 3>, D> = x.avg_pool2d(Pool2d::<2, 2, 0>);
    let (mut want_m, mut want_a) = (vec![], vec![]);
    for plane in 0..6 {
        let p = &xv[plane * 30..(plane + 1) * 30];
        for y in 0..3 {
            for xo in 0..3 {
                let mut best = f64::MIN;
                for i in 0..3 {
                    for j in 0..3 {
                        let (sy, sx) = ((y * 2 + i) as isize - 1, (xo * 2 + j) as isize - 1);
                        if (0..5).contains(&sy) && (0..6).contains(&sx) {
                            best = best.max(p[sy as usize * 6 + sx as usize]);
                        }
                    }
                }
                want_m.push(best);
            }
        }
        for y in 0..2 {
            for xo in 0..3 {
                let s: f64 = (0..2)
                    .flat_map(|i| (0..2).map(move |j| (i, j)))
                    .map(|(i, j)| p[(y * 2 + i) * 6 + xo * 2 + j])
                    .sum();
                want_a.push(s / 4.0);
            }
        }
    }
    check("max_pool2d 3/2/1", &m.to_vec(), &want_m, 1);
    check("avg_pool2d 2/2/0", &a.to_vec(), &want_a, 4);
    // On a strided view: pooling a transposed (H <-> W) tensor.
    let t = x.transpose::<Axis<2>, Axis<3>>(); // (2, 3, 6, 5)
    let m: Tensor<T, Rank4<2, 3, 3, 2>, D> = t.max_pool2d(Pool2d::<2, 2, 0>);
    let tv = vals(&t.to_vec());
    let want: Vec<f64> = (0..6)
        .flat_map(|pl| {
            let tv = &tv;
            (0..3).flat_map(move |y| {
                (0..2).map(move |xo| {
                    let p = &tv[pl * 30..(pl + 1) * 30];
                    [(0, 0), (0, 1), (1, 0), (1, 1)]
                        .iter()
                        .map(|(i, j)| p[(y * 2 + i) * 5 + xo * 2 + j])
                        .fold(f64::MIN, f64::max)
                })
            })
        })
        .collect();
    check("max_pool2d of a transposed view", &m.to_vec(), &want, 1);
}

/// The input positions of window `(y, xo)` of a `k x k`, stride `s`, padding `pad` pooling over `h x w` planes, in
/// (row, column) order (taps in the padding left out).
fn window_taps(
    y: usize,
    xo: usize,
    k: usize,
    s: usize,
    pad: usize,
    [h, w]: [usize; 2],
) -> Vec<usize> {
    let mut taps = vec![];
    for i in 0..k {
        for j in 0..k {
            let (sy, sx) = (
                (y * s + i) as isize - pad as isize,
                (xo * s + j) as isize - pad as isize,
            );
            if (0..h as isize).contains(&sy) && (0..w as isize).contains(&sx) {
                taps.push(sy as usize * w + sx as usize);
            }
        }
    }
    taps
}

/// Max pooling large enough that the CPU splits planes across cores, with windows whole and clipped: the values
/// and the gradient (each window's goes to its first maximum in (row, column) order) against naive loops.
fn large_max_pool<T: FloatDType, D: AutogradDevice>() {
    const HW: usize = 32;
    let x: Tensor<T, Rank4<4, 32, HW, HW>, D> = random(41);
    let gy: Tensor<T, Rank4<4, 32, 16, 16>, D> = random(42);
    let xv = Var::new(x.clone());
    let y: Traced<T, Rank4<4, 32, 16, 16>, D> = xv.trace().max_pool2d(Pool2d::<3, 2, 1>);
    let got_y = y.value().to_vec();
    let dx = y
        .mul(&Traced::constant(gy.clone()))
        .sum_all()
        .backward()
        .get(&xv)
        .to_vec();
    let (xs, gs) = (vals(&x.to_vec()), vals(&gy.to_vec()));
    let (mut want_y, mut want_dx) = (vec![], vec![0.0; xs.len()]);
    for plane in 0..4 * 32 {
        let (p, base) = (&xs[plane * HW * HW..(plane + 1) * HW * HW], plane * HW * HW);
        for y in 0..16 {
            for xo in 0..16 {
                let taps = window_taps(y, xo, 3, 2, 1, [HW, HW]);
                let max = taps.iter().map(|&t| p[t]).fold(f64::MIN, f64::max);
                want_y.push(max);
                // The first tap holding the maximum, in (row, column) order (PyTorch's argmax).
                let first = taps
                    .iter()
                    .find(|&&t| p[t] == max)
                    .expect("a window has taps");
                want_dx[base + first] += gs[(plane * 16 + y) * 16 + xo];
            }
        }
    }
    check("large max_pool2d 3/2/1", &got_y, &want_y, 1);
    check("large max_pool2d 3/2/1 gradient", &dx, &want_dx, 4);
}

/// Naive transposed convolution: every input pixel scatters `x * w` into its output window.
#[allow(clippy::too_many_arguments)]
fn conv_transpose_ref(
    x: &[f64],
    xd: [usize; 4],
    w: &[f64],
    wd: [usize; 4],
    stride: usize,
    pad: usize,
    dil: usize,
    groups: usize,
) -> (Vec<f64>, usize, usize) {
    let p = ([stride; 2], [[pad; 2]; 2], [dil; 2]);
    conv_transpose_axes_ref(x, xd, w, wd, p, groups, [0, 0])
}

/// [`conv_transpose_ref`] with per-axis stride, padding before and after (`[before, after]`), dilation and
/// output padding: the output is `op` rows and columns longer, and they hold what lands there.
fn conv_transpose_axes_ref(
    x: &[f64],
    [n, c, h, wd]: [usize; 4],
    w: &[f64],
    [_, cog, kh, kw]: [usize; 4],
    (stride, [pad, pad_end], dil): ([usize; 2], [[usize; 2]; 2], [usize; 2]),
    groups: usize,
    op: [usize; 2],
) -> (Vec<f64>, usize, usize) {
    let oh = (h - 1) * stride[0] + dil[0] * (kh - 1) + 1 - pad[0] - pad_end[0] + op[0];
    let ow = (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 - pad[1] - pad_end[1] + op[1];
    let (cig, co) = (c / groups, cog * groups);
    let mut out = vec![0.0; n * co * oh * ow];
    for b in 0..n {
        for ci in 0..c {
            let g = ci / cig;
            for y in 0..h {
                for xo in 0..wd {
                    let v = x[((b * c + ci) * h + y) * wd + xo];
                    for o in 0..cog {
                        for i in 0..kh {
                            for j in 0..kw {
                                let ty = (y * stride[0] + i * dil[0]) as isize - pad[0] as isize;
                                let tx = (xo * stride[1] + j * dil[1]) as isize - pad[1] as isize;
                                if ty < 0 || tx < 0 || ty >= oh as isize || tx >= ow as isize {
                                    continue;
                                }
                                let oi =
                                    ((b * co + g * cog + o) * oh + ty as usize) * ow + tx as usize;
                                out[oi] += v * w[((ci * cog + o) * kh + i) * kw + j];
                            }
                        }
                    }
                }
            }
        }
    }
    (out, oh, ow)
}

fn transposed_and_upsample<T: FloatDType, D: Device>() {
    // Stride 2, padding 1, the classic 2x upsampling deconvolution: (1, 4, 3, 3) -> (1, 2, 6, 6) with K = 4.
    let x: Tensor<T, Rank4<1, 4, 3, 3>, D> = random(11);
    let w: Tensor<T, Rank4<4, 2, 4, 4>, D> = random(12);
    let y: Tensor<T, Rank4<1, 2, 6, 6>, D> = x.conv_transpose2d(&w, Conv::<2, 1, 1, 1>);
    let (want, oh, ow) = conv_transpose_ref(
        &vals(&x.to_vec()),
        [1, 4, 3, 3],
        &vals(&w.to_vec()),
        [4, 2, 4, 4],
        2,
        1,
        1,
        1,
    );
    assert_eq!((oh, ow), (6, 6));
    check("conv_transpose2d s2 p1", &y.to_vec(), &want, 16);
    // Groups 2, dilation 2, a permuted (strided) input and a transposed weight view.
    let nhwc: Tensor<T, Rank4<2, 3, 4, 4>, D> = random(13);
    let x = nhwc.permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>(); // (2, 4, 3, 4)
    let wt: Tensor<T, Rank4<4, 3, 3, 2>, D> = random(14);
    let w = wt.transpose::<Axis<2>, Axis<3>>(); // (4, 3, 2, 3)
    let y: Tensor<T, Rank4<2, 6, 5, 8>, D> = x.conv_transpose2d(&w, Conv::<1, 0, 2, 2>);
    let (want, oh, ow) = conv_transpose_ref(
        &vals(&x.to_vec()),
        [2, 4, 3, 4],
        &vals(&w.to_vec()),
        [4, 3, 2, 3],
        1,
        0,
        2,
        2,
    );
    assert_eq!((oh, ow), (5, 8));
    check("conv_transpose2d g2 d2, strided", &y.to_vec(), &want, 12);
    // Output padding, per axis (stride (2, 3), padding (1, 0)), on the same strided input and weight views.
    let y: Tensor<T, Rank4<2, 6, 5, 14>, D> = x.conv_transpose2d(
        &w,
        Conv2dAxes::<2, 3, 1, 0, 1, 1, 2>.output_padding::<1, 2>(),
    );
    let (want, oh, ow) = conv_transpose_axes_ref(
        &vals(&x.to_vec()),
        [2, 4, 3, 4],
        &vals(&w.to_vec()),
        [4, 3, 2, 3],
        ([2, 3], [[1, 0], [1, 0]], [1, 1]),
        2,
        [1, 2],
    );
    assert_eq!((oh, ow), (5, 14));
    check(
        "conv_transpose2d output padding (1, 2)",
        &y.to_vec(),
        &want,
        12,
    );
    // Output padding at least the stride but below the dilation (PyTorch accepts it): stride 1, dilation 3 and
    // two extra rows; stride 2, dilation 2 and one extra column.
    let yd: Tensor<T, Rank4<2, 6, 8, 10>, D> = x.conv_transpose2d(
        &w,
        Conv2dAxes::<1, 2, 0, 1, 3, 2, 2>.output_padding::<2, 1>(),
    );
    let (want, oh, ow) = conv_transpose_axes_ref(
        &vals(&x.to_vec()),
        [2, 4, 3, 4],
        &vals(&w.to_vec()),
        [4, 3, 2, 3],
        ([1, 2], [[0, 1], [0, 1]], [3, 2]),
        2,
        [2, 1],
    );
    assert_eq!((oh, ow), (8, 10));
    check(
        "conv_transpose2d output padding below the dilation",
        &yd.to_vec(),
        &want,
        12,
    );
    // The same without output padding is the padded output's leading rows and columns.
    let base: Tensor<T, Rank4<2, 6, 4, 12>, D> =
        x.conv_transpose2d(&w, Conv2dAxes::<2, 3, 1, 0, 1, 1, 2>);
    let (full, b) = (y.to_vec(), base.to_vec());
    for (k, v) in b.iter().enumerate() {
        let (plane, r, col) = (k / 48, (k % 48) / 12, k % 12);
        assert_eq!(
            *v,
            full[plane * 70 + r * 14 + col],
            "output padding keeps the rest [{k}]"
        );
    }
    // A batch large enough that the CPU runs images on separate threads (a conv2d's input gradient).
    let x: Tensor<T, Rank4<4, 16, 12, 12>, D> = random(16);
    let w: Tensor<T, Rank4<16, 16, 3, 3>, D> = random(17);
    let y: Tensor<T, Rank4<4, 16, 12, 12>, D> = x.conv_transpose2d(&w, Conv::<1, 1, 1, 1>);
    let (want, _, _) = conv_transpose_ref(
        &vals(&x.to_vec()),
        [4, 16, 12, 12],
        &vals(&w.to_vec()),
        [16, 16, 3, 3],
        1,
        1,
        1,
        1,
    );
    check("conv_transpose2d batch 4", &y.to_vec(), &want, 144);
    // Nearest upsampling by 2 of a transposed view.
    let s: Tensor<T, Rank4<1, 2, 3, 2>, D> = random(15);
    let st = s.transpose::<Axis<2>, Axis<3>>(); // (1, 2, 2, 3)
    let u: Tensor<T, Rank4<1, 2, 4, 6>, D> = st.upsample_nearest2d();
    let sv = st.to_vec();
    let want: Vec<T> = (0..48)
        .map(|k| sv[(k / 24) * 6 + ((k % 24) / 6 / 2) * 3 + (k % 6) / 2])
        .collect();
    assert_eq!(u.to_vec(), want, "upsample_nearest2d [{}]", T::DTYPE);
}

/// Both gradients of conv2d through autograd, on batches large enough that the CPU runs images on separate
/// threads: stride 1 (the input gradient is the padded transposed convolution), and stride 2 with groups, whose
/// last input row and column the forward pass never reads (the gradient is cropped and zero-extended).
fn conv_gradients<T: FloatDType, D: AutogradDevice>() {
    let x: Tensor<T, Rank4<4, 16, 12, 12>, D> = random(31);
    let w: Tensor<T, Rank4<16, 16, 3, 3>, D> = random(32);
    let gy: Tensor<T, Rank4<4, 16, 12, 12>, D> = random(33);
    let (xv, wv) = (Var::new(x.clone()), Var::new(w.clone()));
    let y: Traced<T, Rank4<4, 16, 12, 12>, D> = xv.trace().conv2d(&wv, Conv::<1, 1, 1, 1>);
    let grads = y.mul(&Traced::constant(gy.clone())).sum_all().backward();
    let (want_dx, want_dw) = conv_grads_ref(
        &vals(&x.to_vec()),
        [4, 16, 12, 12],
        &vals(&w.to_vec()),
        [16, 16, 3, 3],
        &vals(&gy.to_vec()),
        1,
        1,
        1,
    );
    let (dx, dw) = (grads.get(&xv).to_vec(), grads.get(&wv).to_vec());
    check("conv2d input gradient, batch 4", &dx, &want_dx, 144);
    check("conv2d weight gradient, batch 4", &dw, &want_dw, 576);

    let x: Tensor<T, Rank4<4, 32, 16, 16>, D> = random(34);
    let w: Tensor<T, Rank4<32, 16, 3, 3>, D> = random(35);
    let gy: Tensor<T, Rank4<4, 32, 8, 8>, D> = random(36);
    let (xv, wv) = (Var::new(x.clone()), Var::new(w.clone()));
    let y: Traced<T, Rank4<4, 32, 8, 8>, D> = xv.trace().conv2d(&wv, Conv::<2, 1, 1, 2>);
    let grads = y.mul(&Traced::constant(gy.clone())).sum_all().backward();
    let (want_dx, want_dw) = conv_grads_ref(
        &vals(&x.to_vec()),
        [4, 32, 16, 16],
        &vals(&w.to_vec()),
        [32, 16, 3, 3],
        &vals(&gy.to_vec()),
        2,
        1,
        2,
    );
    let (dx, dw) = (grads.get(&xv).to_vec(), grads.get(&wv).to_vec());
    check("conv2d s2 g2 input gradient", &dx, &want_dx, 144);
    check("conv2d s2 g2 weight gradient", &dw, &want_dw, 256);
}

/// Adaptive average pooling against a direct reading of PyTorch's bins (`[floor(i n / out), ceil((i + 1) n /
/// out))`): dividing, non-dividing (overlapping bins) and global sizes, a strided input, 1-D and 2-D.
fn adaptive_pools<T: FloatDType, D: Device>() {
    fn bins(n: usize, out: usize) -> Vec<(usize, usize)> {
        (0..out)
            .map(|i| (i * n / out, ((i + 1) * n).div_ceil(out)))
            .collect()
    }
    fn reference(
        x: &[f64],
        planes: usize,
        (h, w): (usize, usize),
        (oh, ow): (usize, usize),
    ) -> Vec<f64> {
        let mut out = Vec::new();
        for p in 0..planes {
            for &(r0, r1) in &bins(h, oh) {
                for &(c0, c1) in &bins(w, ow) {
                    let sum: f64 = (r0..r1)
                        .flat_map(|r| (c0..c1).map(move |c| (r, c)))
                        .map(|(r, c)| x[(p * h + r) * w + c])
                        .sum();
                    out.push(sum / ((r1 - r0) * (c1 - c0)) as f64);
                }
            }
        }
        out
    }
    // (2, 3, 5, 7) as a transposed view of (2, 3, 7, 5).
    let x = random::<T, Rank4<2, 3, 7, 5>, D>(70).transpose::<Axis<2>, Axis<3>>();
    let xs = vals(&x.to_vec());
    let y: Tensor<T, Rank4<2, 3, 3, 4>, D> = x.adaptive_avg_pool2d();
    check(
        "adaptive_avg_pool2d 5x7 -> 3x4",
        &y.to_vec(),
        &reference(&xs, 6, (5, 7), (3, 4)),
        35,
    );
    let g: Tensor<T, Rank4<2, 3, 1, 1>, D> = x.adaptive_avg_pool2d();
    check(
        "global average pool",
        &g.to_vec(),
        &reference(&xs, 6, (5, 7), (1, 1)),
        35,
    );
    let up: Tensor<T, Rank4<2, 3, 10, 7>, D> = x.adaptive_avg_pool2d();
    check(
        "adaptive_avg_pool2d 5 -> 10 rows",
        &up.to_vec(),
        &reference(&xs, 6, (5, 7), (10, 7)),
        35,
    );
    let line: Tensor<T, Rank3<2, 3, 9>, D> = random(71);
    let l: Tensor<T, Rank3<2, 3, 4>, D> = line.adaptive_avg_pool1d();
    check(
        "adaptive_avg_pool1d 9 -> 4",
        &l.to_vec(),
        &reference(&vals(&line.to_vec()), 6, (1, 9), (1, 4)),
        9,
    );
}

/// Every `interpolate` mode, `align_corners` both ways.
pub(crate) const MODES: [typed_tensor::ops::Interpolation; 5] = {
    use typed_tensor::ops::Interpolation::*;
    [
        Nearest,
        Bilinear {
            align_corners: false,
        },
        Bilinear {
            align_corners: true,
        },
        Bicubic {
            align_corners: false,
        },
        Bicubic {
            align_corners: true,
        },
    ]
};

/// The taps `(source index, weight)` PyTorch's `interpolate` gives output `j` of an axis `n -> out`, written
/// from its definitions (`area_pixel_compute_source_index`, the cubic convolution with a = -0.75, borders
/// clamped).
pub(crate) fn taps(
    mode: typed_tensor::ops::Interpolation,
    j: usize,
    n: usize,
    out: usize,
) -> Vec<(usize, f64)> {
    use typed_tensor::ops::Interpolation::*;
    let coordinate = |align: bool, clamp: bool| {
        let s = if align {
            if out > 1 {
                j as f64 * (n - 1) as f64 / (out - 1) as f64
            } else {
                0.0
            }
        } else {
            (j as f64 + 0.5) * n as f64 / out as f64 - 0.5
        };
        if clamp {
            s.max(0.0)
        } else {
            s
        }
    };
    let at = |i: isize| i.clamp(0, n as isize - 1) as usize;
    match mode {
        Nearest => vec![((j * n / out).min(n - 1), 1.0)],
        Bilinear { align_corners } => {
            let s = coordinate(align_corners, true);
            let i = s.floor() as isize;
            let t = s - i as f64;
            vec![(at(i), 1.0 - t), (at(i + 1), t)]
        }
        Bicubic { align_corners } => {
            let s = coordinate(align_corners, false);
            let i = s.floor() as isize;
            let t = s - i as f64;
            let a = -0.75;
            let k = |x: f64| {
                let x = x.abs();
                if x <= 1.0 {
                    (a + 2.0) * x.powi(3) - (a + 3.0) * x.powi(2) + 1.0
                } else {
                    a * x.powi(3) - 5.0 * a * x.powi(2) + 8.0 * a * x - 4.0 * a
                }
            };
            (-1..=2).map(|d| (at(i + d), k(t - d as f64))).collect()
        }
    }
}

/// Every resize mode against a direct 2-D sum over the taps of both axes, on a strided input; known values.
fn resizes<T: FloatDType, D: Device>() {
    use typed_tensor::ops::Interpolation::{self, *};
    let x = random::<T, Rank4<2, 2, 5, 3>, D>(80).transpose::<Axis<2>, Axis<3>>(); // (2, 2, 3, 5)
    let xs = vals(&x.to_vec());
    let reference = |mode: Interpolation, (oh, ow): (usize, usize)| -> Vec<f64> {
        let (h, w) = (3, 5);
        let mut out = Vec::new();
        for p in 0..4 {
            for r in 0..oh {
                for c in 0..ow {
                    let mut sum = 0.0;
                    for (i, wy) in taps(mode, r, h, oh) {
                        for (k, wx) in taps(mode, c, w, ow) {
                            sum += wy * wx * xs[(p * h + i) * w + k];
                        }
                    }
                    out.push(sum);
                }
            }
        }
        out
    };
    for mode in MODES {
        let up: Tensor<T, Rank4<2, 2, 7, 8>, D> = x.interpolate(mode);
        check(
            &format!("{mode:?} 3x5 -> 7x8"),
            &up.to_vec(),
            &reference(mode, (7, 8)),
            16,
        );
        let down: Tensor<T, Rank4<2, 2, 2, 3>, D> = x.interpolate(mode);
        check(
            &format!("{mode:?} 3x5 -> 2x3"),
            &down.to_vec(),
            &reference(mode, (2, 3)),
            16,
        );
    }
    // Known values (hand-derived): a ramp [0, 3] stretched to 4 columns.
    let ramp = Tensor::<T, _, D>::from_array([[[[0., 3.].map(T::from_f64)]]]);
    let cubic: Tensor<T, Rank4<1, 1, 1, 4>, D> = ramp.interpolate(Bicubic {
        align_corners: true,
    });
    check(
        "bicubic ramp",
        &cubic.to_vec(),
        &[0.0, 0.944_444_444_444_444_4, 2.055_555_555_555_555, 3.0],
        4,
    );
    let near: Tensor<T, Rank4<1, 1, 1, 5>, D> = ramp.interpolate(Nearest);
    check(
        "nearest ramp",
        &near.to_vec(),
        &[0.0, 0.0, 0.0, 3.0, 3.0],
        1,
    );
}

/// Per-axis hyper-parameters (`Conv2dAxes`): conv2d against the naive loop with a different stride, padding and
/// dilation on each axis, on a strided input; conv_transpose2d with the same parameters is its adjoint
/// (`<conv(x), y> = <x, conv_transpose(y)>`).
fn per_axis_geometry<T: FloatDType, D: Device>() {
    use typed_tensor::tensor::Conv2dAxes;
    let x = random::<T, Rank4<2, 7, 6, 2>, D>(90).permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>();
    let w: Tensor<T, Rank4<3, 2, 3, 2>, D> = random(91);
    let (xs, ws) = (vals(&x.to_vec()), vals(&w.to_vec()));
    let geometry = Conv2dAxes::<2, 1, 1, 0, 1, 2, 1>; // stride (2, 1), padding (1, 0), dilation (1, 2)
    let y: Tensor<T, Rank4<2, 3, 4, 4>, D> = x.conv2d(&w, geometry);
    let (want, _, _) = conv_ref(
        &xs,
        [2, 2, 7, 6],
        &ws,
        [3, 2, 3, 2],
        [2, 1],
        [1, 0],
        [1, 2],
        1,
    );
    check("conv2d per axis", &y.to_vec(), &want, 12);
    let probe: Tensor<T, Rank4<2, 3, 4, 4>, D> = random(92);
    let back: Tensor<T, Rank4<2, 2, 7, 6>, D> = probe.conv_transpose2d(&w, geometry);
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    let lhs = dot(&vals(&y.to_vec()), &vals(&probe.to_vec()));
    let rhs = dot(&xs, &vals(&back.to_vec()));
    let tol = if T::DTYPE == DType::F64 { 1e-12 } else { 1e-4 };
    assert!(
        (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()),
        "adjoint [{}]: {lhs} vs {rhs}",
        T::DTYPE
    );
}

/// Asymmetric padding (more zeros on one side than the other, ONNX's `pads`): conv2d, conv_transpose2d (with
/// output padding), a causal conv1d and conv_transpose1d against the naive loops with separate leading and
/// trailing padding, on strided views; `same_padding`'s split and the output size it gives.
fn asymmetric_padding<T: FloatDType, D: Device>() {
    use typed_tensor::tensor::same_padding;
    let x = random::<T, Rank4<2, 7, 8, 4>, D>(93).permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>(); // (2, 4, 7, 8)
    let w: Tensor<T, Rank4<6, 2, 3, 2>, D> = random(94);
    let (xs, ws) = (vals(&x.to_vec()), vals(&w.to_vec()));
    // Height: 0 before, 2 after, stride 2: (7 + 2 - 3) / 2 + 1 = 4; width: 3 before, 1 after, dilation 2:
    // (8 + 4 - 3) / 1 + 1 = 10 (the first columns read only padding).
    let geometry = Conv2dAxes::<2, 1, 0, 0, 1, 2, 2>.asymmetric_padding::<0, 2, 3, 1>();
    let y: Tensor<T, Rank4<2, 6, 4, 10>, D> = x.conv2d(&w, geometry);
    let (want, oh, ow) = conv_sides_ref(
        &xs,
        [2, 4, 7, 8],
        &ws,
        [6, 2, 3, 2],
        [2, 1],
        [[0, 3], [2, 1]],
        [1, 2],
        2,
    );
    assert_eq!((oh, ow), (4, 10));
    check("conv2d asymmetric padding", &y.to_vec(), &want, 12);

    // ONNX's SAME_UPPER: ceil(size / stride) outputs, the odd zero after.
    assert_eq!(same_padding(8, 4, 1, 1), [1, 2]); // 7 + 4 - 8 = 3 zeros (PyTorch's padding="same")
    const PH: [usize; 2] = same_padding(7, 2, 2, 1); // 4 outputs: (4 - 1) 2 + 2 - 7 = 1 zero
    const PW: [usize; 2] = same_padding(8, 3, 1, 2); // 8 outputs: 7 + 5 - 8 = 4 zeros
    assert_eq!((PH, PW), ([0, 1], [2, 2]));
    let w2: Tensor<T, Rank4<6, 2, 2, 3>, D> = random(99);
    let same = Conv2dAxes::<2, 1, 0, 0, 1, 2, 2>
        .asymmetric_padding::<{ PH[0] }, { PH[1] }, { PW[0] }, { PW[1] }>();
    let y: Tensor<T, Rank4<2, 6, 4, 8>, D> = x.conv2d(&w2, same);
    let (want, _, _) = conv_sides_ref(
        &xs,
        [2, 4, 7, 8],
        &vals(&w2.to_vec()),
        [6, 2, 2, 3],
        [2, 1],
        [[PH[0], PW[0]], [PH[1], PW[1]]],
        [1, 2],
        2,
    );
    check("conv2d same padding", &y.to_vec(), &want, 12);

    // Transposed, with output padding: (3 - 1) 2 - 1 - 2 + 3 + 1 = 5 rows, (4 - 1) 1 - 0 - 1 + 2 (2 - 1) + 1 = 5
    // columns, on a strided input (the first 3 rows and 4 columns of x's planes).
    let t = x.narrow::<Axis<2>, 0, 3>().narrow::<Axis<3>, 0, 4>(); // (2, 4, 3, 4)
    let wt: Tensor<T, Rank4<4, 3, 3, 2>, D> = random(95);
    let tg = Conv2dAxes::<2, 1, 0, 0, 1, 2, 2>
        .asymmetric_padding::<1, 2, 0, 1>()
        .output_padding::<1, 0>();
    let y: Tensor<T, Rank4<2, 6, 5, 5>, D> = t.conv_transpose2d(&wt, tg);
    let (want, oh, ow) = conv_transpose_axes_ref(
        &vals(&t.to_vec()),
        [2, 4, 3, 4],
        &vals(&wt.to_vec()),
        [4, 3, 3, 2],
        ([2, 1], [[1, 0], [2, 1]], [1, 2]),
        2,
        [1, 0],
    );
    assert_eq!((oh, ow), (5, 5));
    check(
        "conv_transpose2d asymmetric padding",
        &y.to_vec(),
        &want,
        12,
    );

    // A causal conv1d: two zeros before each sequence, none after, so the output keeps the length.
    let seq = random::<T, Rank3<2, 9, 4>, D>(96).transpose::<Axis<1>, Axis<2>>(); // (2, 4, 9)
    let k: Tensor<T, Rank3<6, 2, 3>, D> = random(97);
    let y: Tensor<T, Rank3<2, 6, 9>, D> =
        seq.conv1d(&k, Conv::<1, 0, 1, 2>.asymmetric_padding::<2, 0, 2, 0>());
    let (want, _, ol) = conv_sides_ref(
        &vals(&seq.to_vec()),
        [2, 4, 1, 9],
        &vals(&k.to_vec()),
        [6, 2, 1, 3],
        [1, 1],
        [[0, 2], [0, 0]],
        [1, 1],
        2,
    );
    assert_eq!(ol, 9);
    check("conv1d causal", &y.to_vec(), &want, 6);

    // conv_transpose1d with output padding: (4 - 1) 2 - 2 + 3 + 1 = 8.
    let short = seq.narrow::<Axis<2>, 1, 4>(); // (2, 4, 4), offset
    let kt: Tensor<T, Rank3<4, 3, 3>, D> = random(98);
    let y: Tensor<T, Rank3<2, 6, 8>, D> =
        short.conv_transpose1d(&kt, Conv::<2, 1, 1, 2>.output_padding::<1, 1>());
    let (want, _, ol) = conv_transpose_axes_ref(
        &vals(&short.to_vec()),
        [2, 4, 1, 4],
        &vals(&kt.to_vec()),
        [4, 3, 1, 3],
        ([1, 2], [[0, 1], [0, 1]], [1, 1]),
        2,
        [0, 1],
    );
    assert_eq!(ol, 8);
    check("conv_transpose1d output padding", &y.to_vec(), &want, 6);
}

/// Naive NCDHW 3-D convolution; `x` and `w` row-major; the output and its (depth, height, width).
#[allow(clippy::too_many_arguments)]
fn conv3d_ref(
    x: &[f64],
    dims: [usize; 5],
    w: &[f64],
    channels: [usize; 2],
    kernel: [usize; 3],
    stride: [usize; 3],
    pad: [usize; 3],
    dil: [usize; 3],
    groups: usize,
) -> (Vec<f64>, [usize; 3]) {
    conv3d_ref_padded(
        x,
        dims,
        w,
        channels,
        kernel,
        stride,
        [pad, pad],
        dil,
        groups,
    )
}

/// [`conv3d_ref`] with padding `[before, after]` per axis.
#[allow(clippy::too_many_arguments)]
fn conv3d_ref_padded(
    x: &[f64],
    [n, c, d, h, wd]: [usize; 5],
    w: &[f64],
    [co, cig]: [usize; 2],
    [kd, kh, kw]: [usize; 3],
    stride: [usize; 3],
    [pad, pad_end]: [[usize; 3]; 2],
    dil: [usize; 3],
    groups: usize,
) -> (Vec<f64>, [usize; 3]) {
    let size = |s: usize, k: usize, a: usize| {
        (s + pad[a] + pad_end[a] - dil[a] * (k - 1) - 1) / stride[a] + 1
    };
    let (od, oh, ow) = (size(d, kd, 0), size(h, kh, 1), size(wd, kw, 2));
    let cog = co / groups;
    let mut out = vec![0.0; n * co * od * oh * ow];
    let source = |o: usize, t: usize, a: usize, len: usize| {
        let p = (o * stride[a] + t * dil[a]) as isize - pad[a] as isize;
        (p >= 0 && p < len as isize).then_some(p as usize)
    };
    for b in 0..n {
        for o in 0..co {
            let g = o / cog;
            for z in 0..od {
                for y in 0..oh {
                    for xo in 0..ow {
                        let mut s = 0.0;
                        for ci in 0..cig {
                            for i in 0..kd {
                                for j in 0..kh {
                                    for l in 0..kw {
                                        let (Some(sz), Some(sy), Some(sx)) = (
                                            source(z, i, 0, d),
                                            source(y, j, 1, h),
                                            source(xo, l, 2, wd),
                                        ) else {
                                            continue;
                                        };
                                        let xi =
                                            (((b * c + g * cig + ci) * d + sz) * h + sy) * wd + sx;
                                        let wi = (((o * cig + ci) * kd + i) * kh + j) * kw + l;
                                        s += x[xi] * w[wi];
                                    }
                                }
                            }
                        }
                        out[(((b * co + o) * od + z) * oh + y) * ow + xo] = s;
                    }
                }
            }
        }
    }
    (out, [od, oh, ow])
}

/// conv3d against the naive loop: per-axis stride, padding and dilation with groups on a strided input (depth
/// windows reaching into the padding at both ends), "same" padding, and a dilated depth whose stride leaves the
/// last slice unread.
fn conv3d<T: FloatDType, D: Device>() {
    use typed_tensor::tensor::Conv3dAxes;
    // (2, 5, 6, 3, 4) in memory, viewed as (N, C, D, H, W) = (2, 4, 5, 6, 3).
    let x = random::<T, Rank5<2, 5, 6, 3, 4>, D>(120)
        .permute::<(Axis<0>, Axis<4>, Axis<1>, Axis<2>, Axis<3>)>();
    let w: Tensor<T, Rank5<6, 2, 3, 2, 2>, D> = random(121);
    let (xs, ws) = (vals(&x.to_vec()), vals(&w.to_vec()));
    let dims = [2, 4, 5, 6, 3];
    // Depth: stride 2, padding 1 -> (5 + 2 - 3) / 2 + 1 = 3; height: dilation 2, padding 1 -> 6; width: 2.
    let y: Tensor<T, Rank5<2, 6, 3, 6, 2>, D> =
        x.conv3d(&w, Conv3dAxes::<2, 1, 1, 1, 1, 0, 1, 2, 1, 2>);
    let (want, out) = conv3d_ref(
        &xs,
        dims,
        &ws,
        [6, 2],
        [3, 2, 2],
        [2, 1, 1],
        [1, 1, 0],
        [1, 2, 1],
        2,
    );
    assert_eq!(out, [3, 6, 2]);
    check("conv3d per axis, groups 2", &y.to_vec(), &want, 24);

    let w3: Tensor<T, Rank5<3, 4, 3, 3, 3>, D> = random(122);
    let y: Tensor<T, Rank5<2, 3, 5, 6, 3>, D> = x.conv3d(&w3, Conv::<1, 1, 1, 1>);
    let (want, _) = conv3d_ref(
        &xs,
        dims,
        &vals(&w3.to_vec()),
        [3, 4],
        [3, 3, 3],
        [1; 3],
        [1; 3],
        [1; 3],
        1,
    );
    check("conv3d same padding", &y.to_vec(), &want, 108);

    let w2: Tensor<T, Rank5<2, 4, 2, 1, 3>, D> = random(123);
    // Depth: dilation 2, stride 2 -> (5 - 3) / 2 + 1 = 2 windows, slices {0, 2} and {2, 4}; width 1.
    let y: Tensor<T, Rank5<2, 2, 2, 6, 1>, D> =
        x.conv3d(&w2, Conv3dAxes::<2, 1, 1, 0, 0, 0, 2, 1, 1, 1>);
    let (want, _) = conv3d_ref(
        &xs,
        dims,
        &vals(&w2.to_vec()),
        [2, 4],
        [2, 1, 3],
        [2, 1, 1],
        [0; 3],
        [2, 1, 1],
        1,
    );
    check("conv3d dilated depth", &y.to_vec(), &want, 24);

    // Asymmetric padding: (0, 2) slices, (1, 0) rows, (2, 1) columns, on the per-axis geometry with groups.
    use typed_tensor::tensor::Conv3dGeometry;
    let geometry =
        Conv3dAxes::<2, 1, 1, 0, 0, 0, 1, 2, 1, 2>.asymmetric_padding_3d::<0, 2, 1, 0, 2, 1>();
    let y: Tensor<T, Rank5<2, 6, 3, 5, 5>, D> = x.conv3d(&w, geometry);
    let (want, out) = conv3d_ref_padded(
        &xs,
        dims,
        &ws,
        [6, 2],
        [3, 2, 2],
        [2, 1, 1],
        [[0, 1, 2], [2, 0, 1]],
        [1, 2, 1],
        2,
    );
    assert_eq!(out, [3, 5, 5]);
    check("conv3d asymmetric padding", &y.to_vec(), &want, 24);
}

/// Pixel shuffle against PyTorch's index rule (`out[n][c][h R + i][w R + j] = x[n][c R^2 + i R + j][h][w]`) on a
/// strided input, and unshuffle as its inverse.
fn pixel_shuffles<T: WithDType, D: Device>() {
    let src: Tensor<T, Rank4<2, 3, 3, 8>, D> = Tensor::arange();
    let x = src.permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>(); // (2, 8, 3, 3)
    let xs = vals(&x.to_vec());
    let y: Tensor<T, Rank4<2, 2, 6, 6>, D> = x.pixel_shuffle::<2, _, _, _>();
    let want: Vec<f64> = (0..2 * 2 * 6 * 6)
        .map(|k| {
            let (n, c, oy, ox) = (k / 72, (k / 36) % 2, (k / 6) % 6, k % 6);
            let (h, i, w, j) = (oy / 2, oy % 2, ox / 2, ox % 2);
            xs[((n * 8 + c * 4 + i * 2 + j) * 3 + h) * 3 + w]
        })
        .collect();
    assert_eq!(vals(&y.to_vec()), want, "pixel_shuffle [{}]", T::DTYPE);
    let back: Tensor<T, Rank4<2, 8, 3, 3>, D> = y.pixel_unshuffle::<2, _, _, _>();
    assert_eq!(vals(&back.to_vec()), xs, "pixel_unshuffle [{}]", T::DTYPE);
}

/// unfold against the patch rule (`col[(c KH + i) KW + j][y][x] = x[c][y sh + i dh - ph][x sw + j dw - pw]`,
/// zero in the padding) on a strided input with per-axis geometry; fold as its adjoint.
fn unfolds<T: FloatDType, D: Device>() {
    use typed_tensor::tensor::Conv2dAxes;
    let x = random::<T, Rank4<2, 5, 5, 3>, D>(95).permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>();
    let xs = vals(&x.to_vec());
    let geometry = Conv2dAxes::<1, 2, 1, 0, 2, 1, 1>; // stride (1, 2), padding (1, 0), dilation (2, 1)
    let cols: Tensor<T, Rank4<2, 18, 5, 2>, D> = x.unfold::<2, 3, _, _, _, _>(geometry);
    let want: Vec<f64> = (0..2 * 18 * 5 * 2)
        .map(|k| {
            let (n, r, y, xo) = (k / 180, (k / 10) % 18, (k / 2) % 5, k % 2);
            let (c, i, j) = (r / 6, (r / 3) % 2, r % 3);
            let sy = (y + 2 * i) as isize - 1;
            let sx = xo * 2 + j;
            if !(0..5).contains(&sy) || sx >= 5 {
                0.0
            } else {
                xs[((n * 3 + c) * 5 + sy as usize) * 5 + sx]
            }
        })
        .collect();
    assert_eq!(vals(&cols.to_vec()), want, "unfold [{}]", T::DTYPE);
    // Asymmetric padding (rows: none before, two after; columns: one before, none after), stride (2, 1),
    // dilation (1, 2): the padded input is read through one strided view.
    use typed_tensor::tensor::ConvGeometry;
    let asym = Conv2dAxes::<2, 1, 0, 0, 1, 2, 1>.asymmetric_padding::<0, 2, 1, 0>();
    let cols: Tensor<T, Rank4<2, 18, 3, 2>, D> = x.unfold::<2, 3, _, _, _, _>(asym);
    let want_asym: Vec<f64> = (0..2 * 18 * 3 * 2)
        .map(|k| {
            let (n, r, y, xo) = (k / 108, (k / 6) % 18, (k / 2) % 3, k % 2);
            let (c, i, j) = (r / 6, (r / 3) % 2, r % 3);
            let (sy, sx) = ((y * 2 + i) as isize, (xo + 2 * j) as isize - 1);
            if !(0..5).contains(&sy) || !(0..5).contains(&sx) {
                0.0
            } else {
                xs[((n * 3 + c) * 5 + sy as usize) * 5 + sx as usize]
            }
        })
        .collect();
    assert_eq!(
        vals(&cols.to_vec()),
        want_asym,
        "unfold, asymmetric padding [{}]",
        T::DTYPE
    );
    let probe: Tensor<T, Rank4<2, 18, 5, 2>, D> = random(96);
    let back: Tensor<T, Rank4<2, 3, 5, 5>, D> = probe.fold::<2, 3, _, _, _, _>(geometry);
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    let (lhs, rhs) = (
        dot(&want, &vals(&probe.to_vec())),
        dot(&xs, &vals(&back.to_vec())),
    );
    // fold's sums are rounded to the element type once per pixel.
    let tol = match T::DTYPE {
        DType::F64 => 1e-12,
        DType::F32 => 1e-4,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    };
    assert!(
        (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()),
        "fold adjoint [{}]: {lhs} vs {rhs}",
        T::DTYPE
    );
}

/// conv_transpose1d against the naive transposed convolution (a height-1 image), and as the adjoint of conv1d
/// with padding, dilation and groups.
fn transposed_1d<T: FloatDType, D: Device>() {
    let x = random::<T, Rank3<2, 5, 4>, D>(97).transpose::<Axis<1>, Axis<2>>(); // (2, 4, 5)
    let w: Tensor<T, Rank3<4, 3, 3>, D> = random(98);
    let y: Tensor<T, Rank3<2, 3, 11>, D> = x.conv_transpose1d(&w, Conv::<2, 0, 1, 1>);
    let (want, _, _) = conv_transpose_ref(
        &vals(&x.to_vec()),
        [2, 4, 1, 5],
        &vals(&w.to_vec()),
        [4, 3, 1, 3],
        2,
        0,
        1,
        1,
    );
    check("conv_transpose1d", &y.to_vec(), &want, 12);
    let x1: Tensor<T, Rank3<2, 4, 9>, D> = random(99);
    let w1: Tensor<T, Rank3<6, 2, 3>, D> = random(100);
    let geometry = Conv::<2, 1, 2, 2>;
    let forward: Tensor<T, Rank3<2, 6, 4>, D> = x1.conv1d(&w1, geometry);
    let probe: Tensor<T, Rank3<2, 6, 4>, D> = random(101);
    let back: Tensor<T, Rank3<2, 4, 9>, D> = probe.conv_transpose1d(&w1, geometry);
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
    let lhs = dot(&vals(&forward.to_vec()), &vals(&probe.to_vec()));
    let rhs = dot(&vals(&x1.to_vec()), &vals(&back.to_vec()));
    let tol = if T::DTYPE == DType::F64 { 1e-12 } else { 1e-4 };
    assert!(
        (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()),
        "conv_transpose1d adjoint [{}]: {lhs} vs {rhs}",
        T::DTYPE
    );
}

fn every_dtype<D: AutogradDevice>() {
    large_max_pool::<f32, D>();
    large_max_pool::<f64, D>();
    large_max_pool::<f16, D>();
    large_max_pool::<bf16, D>();
    conv_gradients::<f32, D>();
    conv_gradients::<f64, D>();
    conv_gradients::<f16, D>();
    conv_gradients::<bf16, D>();
    forward_every_dtype::<D>();
}

/// The forward ops alone (no gradients, small inputs): what the embedded device runs too.
fn forward_every_dtype<D: Device>() {
    transposed_and_upsample::<f32, D>();
    transposed_and_upsample::<f64, D>();
    transposed_and_upsample::<f16, D>();
    transposed_and_upsample::<bf16, D>();
    convs::<f32, D>();
    convs::<f64, D>();
    convs::<f16, D>();
    convs::<bf16, D>();
    pools::<f32, D>();
    pools::<f64, D>();
    pools::<f16, D>();
    pools::<bf16, D>();
    adaptive_pools::<f32, D>();
    adaptive_pools::<f64, D>();
    adaptive_pools::<f16, D>();
    adaptive_pools::<bf16, D>();
    resizes::<f32, D>();
    resizes::<f64, D>();
    resizes::<f16, D>();
    resizes::<bf16, D>();
    per_axis_geometry::<f32, D>();
    per_axis_geometry::<f64, D>();
    asymmetric_padding::<f32, D>();
    asymmetric_padding::<f64, D>();
    asymmetric_padding::<f16, D>();
    asymmetric_padding::<bf16, D>();
    conv3d::<f32, D>();
    conv3d::<f64, D>();
    conv3d::<f16, D>();
    conv3d::<bf16, D>();
    pixel_shuffles::<f32, D>();
    pixel_shuffles::<bf16, D>();
    pixel_shuffles::<u8, D>();
    pixel_shuffles::<i64, D>();
    unfolds::<f32, D>();
    unfolds::<f64, D>();
    unfolds::<f16, D>();
    unfolds::<bf16, D>();
    transposed_1d::<f32, D>();
    transposed_1d::<f64, D>();
}

device_tests! {
    conv_and_pool_every_float_dtype => every_dtype;
}

/// A NaN in a window wins its max (as in max reductions), the first one in (row, column) order when there are
/// several; of equal values the first stays (-0 before +0), whether windows are folded side by side or one by
/// one.
#[test]
fn cpu_max_pool_nan_and_signed_zero() {
    let (nan_a, nan_b) = (f32::from_bits(0x7fc0_0001), f32::from_bits(0xffc0_0002));
    let mut v = vec![-1f32; 6 * 4];
    // Windows (2 x 2, stride 2) of a 6 x 4 plane, the first four folded side by side: (0, 0) holds two NaNs,
    // (0, 1) +0 then -0, (1, 0) -0 then +0; folded one by one: (2, 0) -0 then +0, (2, 1) 3 then two NaNs.
    v[1] = nan_a;
    v[4] = nan_b;
    v[2] = 0.0;
    v[7] = -0.0;
    v[8] = -0.0;
    v[13] = 0.0;
    v[16] = -0.0;
    v[21] = 0.0;
    v[18] = 3.0;
    v[19] = nan_b;
    v[23] = nan_a;
    let x = Tensor::<f32, Rank4<1, 1, 6, 4>, Cpu>::from_vec(v).unwrap();
    let m: Tensor<f32, Rank4<1, 1, 3, 2>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
    let bits: Vec<u32> = m.to_vec().iter().map(|v| v.to_bits()).collect();
    let want = [nan_a, 0.0, -0.0, -1.0, -0.0, nan_b].map(f32::to_bits);
    assert_eq!(bits, want, "max_pool2d bits");
}

embedded_tests! {
    conv_and_pool_every_float_dtype => forward_every_dtype;
}

/// The convolutions' products through the library's own kernels (the `cuda` variant above takes cuBLAS wherever
/// it is installed).
#[cfg(feature = "cuda")]
#[test]
fn cuda_conv_through_the_matmul_kernels() {
    use typed_tensor::device::{Cuda, MatmulBackend};
    if let Err(e) = Cuda::init() {
        eprintln!("skipped cuda_conv_through_the_matmul_kernels: {e}");
        return;
    }
    Cuda::with_matmul_backend(MatmulBackend::Kernels, every_dtype::<Cuda>);
    assert_eq!(Cuda::last_matmul_backend(), Some(MatmulBackend::Kernels));
}
