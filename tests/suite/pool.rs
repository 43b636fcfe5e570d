//! Pooling geometry: non-square and per-axis windows, ceil mode, averages with and without the padding, dilated
//! max pooling, max pooling's indices, 1-D and 3-D pools, adaptive max pooling and global pooling, against a
//! naive N-D loop written from PyTorch's pooling kernels (its output-size rule, its window clipping, its
//! divisors), for every float dtype, on contiguous and strided views; gradients by finite differences.

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::prelude::*;
use typed_tensor::shape::{BroadcastShapes, ConstShape};
use typed_tensor::tensor::{
    AvgPoolGeometry, Pool1d, Pool2d, Pool2dAxes, Pool3d, Pool3dAxes, PoolGeometry,
};

/// A pooling window per axis, as PyTorch's arguments.
#[derive(Clone)]
struct Win {
    k: Vec<usize>,
    s: Vec<usize>,
    p: Vec<usize>,
    d: Vec<usize>,
    ceil: bool,
    count_pad: bool,
}

impl Win {
    fn new(k: &[usize], s: &[usize], p: &[usize]) -> Self {
        Win {
            k: k.to_vec(),
            s: s.to_vec(),
            p: p.to_vec(),
            d: vec![1; k.len()],
            ceil: false,
            count_pad: true,
        }
    }
    fn ceil(mut self) -> Self {
        self.ceil = true;
        self
    }
    fn exclude(mut self) -> Self {
        self.count_pad = false;
        self
    }
    fn dilate(mut self, d: usize) -> Self {
        self.d = vec![d; self.k.len()];
        self
    }

    /// PyTorch's `pooling_output_shape`.
    fn out_len(&self, axis: usize, size: usize) -> usize {
        let (k, s, p, d) = (
            self.k[axis] as i64,
            self.s[axis] as i64,
            self.p[axis] as i64,
            self.d[axis] as i64,
        );
        let num = size as i64 + 2 * p - d * (k - 1) - 1 + if self.ceil { s - 1 } else { 0 };
        let mut out = num.div_euclid(s) + 1;
        if self.ceil && (out - 1) * s >= size as i64 + p {
            out -= 1;
        }
        out as usize
    }
}

/// Naive pooling of `planes` planes of `sizes` (row-major): per output, the max, the plane index of the first
/// max, and the average (PyTorch's window clipping and divisor); and the output sizes.
fn pool_ref(
    x: &[f64],
    planes: usize,
    sizes: &[usize],
    win: &Win,
) -> (Vec<f64>, Vec<u32>, Vec<f64>, Vec<usize>) {
    let rank = sizes.len();
    let out: Vec<usize> = (0..rank).map(|a| win.out_len(a, sizes[a])).collect();
    let (plane_len, out_len) = (
        sizes.iter().product::<usize>(),
        out.iter().product::<usize>(),
    );
    let (mut maxes, mut idx, mut avgs) = (vec![], vec![], vec![]);
    let unravel = |mut i: usize, dims: &[usize]| -> Vec<usize> {
        let mut c = vec![0; dims.len()];
        for a in (0..dims.len()).rev() {
            c[a] = i % dims[a];
            i /= dims[a];
        }
        c
    };
    for plane in 0..planes {
        let x = &x[plane * plane_len..(plane + 1) * plane_len];
        for o in 0..out_len {
            let oc = unravel(o, &out);
            // Max: every dilated tap inside the input, in row-major kernel order.
            let (mut best, mut at) = (f64::NEG_INFINITY, 0usize);
            let mut seen = false;
            for t in 0..win.k.iter().product::<usize>() {
                let kc = unravel(t, &win.k);
                let pos: Option<Vec<usize>> = (0..rank)
                    .map(|a| {
                        let i = (oc[a] * win.s[a] + kc[a] * win.d[a]) as i64 - win.p[a] as i64;
                        (0..sizes[a] as i64).contains(&i).then_some(i as usize)
                    })
                    .collect();
                if let Some(pos) = pos {
                    let flat = pos.iter().zip(sizes).fold(0, |f, (&i, &n)| f * n + i);
                    let v = x[flat];
                    if !seen || (!best.is_nan() && (v > best || v.is_nan())) {
                        (best, at, seen) = (v, flat, true);
                    }
                }
            }
            maxes.push(best);
            idx.push(at as u32);
            // Average (undilated windows): PyTorch's avg_pool clipping.
            let (mut lo, mut hi, mut pool_size) = (vec![0; rank], vec![0; rank], 1i64);
            for a in 0..rank {
                let start = (oc[a] * win.s[a]) as i64 - win.p[a] as i64;
                let end = (start + win.k[a] as i64).min((sizes[a] + win.p[a]) as i64);
                pool_size *= end - start;
                lo[a] = start.max(0) as usize;
                hi[a] = end.min(sizes[a] as i64) as usize;
            }
            let span: Vec<usize> = (0..rank).map(|a| hi[a] - lo[a]).collect();
            let inside: usize = span.iter().product();
            let sum: f64 = (0..inside)
                .map(|t| {
                    let c = unravel(t, &span);
                    let flat = (0..rank).fold(0, |f, a| f * sizes[a] + lo[a] + c[a]);
                    x[flat]
                })
                .sum();
            avgs.push(
                sum / if win.count_pad {
                    pool_size as f64
                } else {
                    inside as f64
                },
            );
        }
    }
    (maxes, idx, avgs, out)
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

/// One 2-D max case: values and indices of `x` under `G` against the reference.
#[allow(clippy::type_complexity)]
fn case_max<
    T: FloatDType,
    D: Device,
    const N: usize,
    const C: usize,
    const H: usize,
    const W: usize,
    const OH: usize,
    const OW: usize,
    G: PoolGeometry<2>,
>(
    what: &str,
    x: &Tensor<T, Rank4<N, C, H, W>, D>,
    g: G,
    win: &Win,
) {
    let (want_max, want_idx, _, out) = pool_ref(&vals(&x.to_vec()), N * C, &[H, W], win);
    assert_eq!(out, [OH, OW], "{what}: output size");
    let (m, i): (Tensor<T, Rank4<N, C, OH, OW>, D>, _) = x.max_pool2d_with_indices(g);
    let plain: Tensor<T, Rank4<N, C, OH, OW>, D> = x.max_pool2d(g);
    check(&format!("{what}: max"), &m.to_vec(), &want_max, 1);
    assert_eq!(
        plain.to_vec(),
        m.to_vec(),
        "{what}: max_pool2d and its indexed form"
    );
    assert_eq!(i.to_vec(), want_idx, "{what}: indices");
}

/// One 2-D case of every kind: [`case_max`], and both averages (padding counted, and `exclude_padding`).
#[allow(clippy::type_complexity)]
fn case_2d<
    T: FloatDType,
    D: Device,
    const N: usize,
    const C: usize,
    const H: usize,
    const W: usize,
    const OH: usize,
    const OW: usize,
    G: AvgPoolGeometry<2>,
>(
    what: &str,
    x: &Tensor<T, Rank4<N, C, H, W>, D>,
    g: G,
    win: Win,
) {
    case_max::<T, D, N, C, H, W, OH, OW, G>(what, x, g, &win);
    let xs = vals(&x.to_vec());
    let taps = win.k.iter().product();
    let (_, _, want_avg, _) = pool_ref(&xs, N * C, &[H, W], &win);
    let a: Tensor<T, Rank4<N, C, OH, OW>, D> = x.avg_pool2d(g);
    check(&format!("{what}: avg"), &a.to_vec(), &want_avg, taps);
    let (_, _, want_excl, _) = pool_ref(&xs, N * C, &[H, W], &win.clone().exclude());
    let e: Tensor<T, Rank4<N, C, OH, OW>, D> = x.avg_pool2d(g.exclude_padding());
    check(
        &format!("{what}: avg excluding padding"),
        &e.to_vec(),
        &want_excl,
        taps,
    );
}

fn pools_2d<T: FloatDType, D: Device>() {
    let x: Tensor<T, Rank4<2, 3, 7, 6>, D> = random(1);
    // Non-square, per-axis stride and padding, ceil mode (4 rows: one more than floor would give).
    let w = Win::new(&[3, 2], &[2, 1], &[1, 0]).ceil();
    case_2d::<T, D, 2, 3, 7, 6, 4, 5, _>(
        "3x2 s(2,1) p(1,0) ceil",
        &x,
        Pool2dAxes::<3, 2, 2, 1, 1, 0>.ceil_mode(),
        w,
    );
    // Square, stride 3, padding 1, ceil mode.
    let w = Win::new(&[3, 3], &[3, 3], &[1, 1]).ceil();
    case_2d::<T, D, 2, 3, 7, 6, 3, 3, _>("3/3/1 ceil", &x, Pool2d::<3, 3, 1>.ceil_mode(), w);
    // Floor mode with padding: windows clipped at both borders.
    let w = Win::new(&[3, 3], &[2, 2], &[1, 1]);
    case_2d::<T, D, 2, 3, 7, 6, 4, 3, _>("3/2/1", &x, Pool2d::<3, 2, 1>, w);
    // Dilated max pooling, floor and ceil.
    let w = Win::new(&[2, 2], &[2, 2], &[1, 1]).dilate(2);
    case_max::<T, D, 2, 3, 7, 6, 4, 3, _>(
        "2/2/1 dilation 2",
        &x,
        Pool2d::<2, 2, 1>.dilation::<2>(),
        &w,
    );
    case_max::<T, D, 2, 3, 7, 6, 4, 4, _>(
        "2/2/1 dilation 2 ceil",
        &x,
        Pool2d::<2, 2, 1>.dilation::<2>().ceil_mode(),
        &w.ceil(),
    );
    // Per-axis windows with dilation.
    let w = Win::new(&[2, 3], &[1, 2], &[1, 1]).dilate(2);
    case_max::<T, D, 2, 3, 7, 6, 7, 2, _>(
        "2x3 s(1,2) p(1,1) dilation 2",
        &x,
        Pool2dAxes::<2, 3, 1, 2, 1, 1>.dilation::<2>(),
        &w,
    );
    // Per-axis dilation: rows 3 apart, columns adjacent.
    let mut w = Win::new(&[2, 3], &[1, 2], &[1, 1]);
    w.d = vec![3, 1];
    case_max::<T, D, 2, 3, 7, 6, 6, 3, _>(
        "2x3 s(1,2) p(1,1) dilation (3, 1)",
        &x,
        Pool2dAxes::<2, 3, 1, 2, 1, 1>.dilation_axes::<3, 1>(),
        &w,
    );
    // A last window past the padded input in ceil mode: its divisor is clipped to the padded input.
    let y: Tensor<T, Rank4<2, 3, 7, 5>, D> = random(2);
    let w = Win::new(&[2, 2], &[2, 2], &[0, 0]).ceil();
    case_2d::<T, D, 2, 3, 7, 5, 4, 3, _>("2/2/0 ceil", &y, Pool2d::<2, 2, 0>.ceil_mode(), w);
    // A strided view: the transposed (H <-> W) input.
    let t = x.transpose::<Axis<2>, Axis<3>>();
    let w = Win::new(&[3, 2], &[2, 1], &[1, 0]).ceil();
    case_2d::<T, D, 2, 3, 6, 7, 4, 6, _>(
        "3x2 s(2,1) p(1,0) ceil, transposed view",
        &t,
        Pool2dAxes::<3, 2, 2, 1, 1, 0>.ceil_mode(),
        w,
    );
}

fn pools_1d_3d<T: FloatDType, D: Device>() {
    // 1-D, with a strided view (the length axis of a transposed tensor).
    let x: Tensor<T, Rank3<2, 8, 3>, D> = random(3);
    let x = x.transpose::<Axis<1>, Axis<2>>(); // (2, 3, 8)
    let xs = vals(&x.to_vec());
    let win = Win::new(&[3], &[2], &[1]).ceil();
    let (want_max, want_idx, want_avg, out) = pool_ref(&xs, 6, &[8], &win);
    assert_eq!(out, [5]);
    let g = Pool1d::<3, 2, 1>.ceil_mode();
    let (m, i): (Tensor<T, Rank3<2, 3, 5>, D>, _) = x.max_pool1d_with_indices(g);
    check("max_pool1d", &m.to_vec(), &want_max, 1);
    assert_eq!(x.max_pool1d::<5, _>(g).to_vec(), m.to_vec());
    assert_eq!(i.to_vec(), want_idx, "max_pool1d indices");
    check(
        "avg_pool1d",
        &x.avg_pool1d::<5, _>(g).to_vec(),
        &want_avg,
        3,
    );
    let (_, _, want_excl, _) = pool_ref(&xs, 6, &[8], &win.clone().exclude());
    check(
        "avg_pool1d excluding padding",
        &x.avg_pool1d::<5, _>(g.exclude_padding()).to_vec(),
        &want_excl,
        3,
    );
    let (want_dil, _, _, out) = pool_ref(&xs, 6, &[8], &Win::new(&[2], &[1], &[1]).dilate(3));
    assert_eq!(out, [7]);
    check(
        "max_pool1d dilation 3",
        &x.max_pool1d::<7, _>(Pool1d::<2, 1, 1>.dilation::<3>())
            .to_vec(),
        &want_dil,
        1,
    );

    // 3-D: the two passes against one 3-D loop.
    let v: Tensor<T, Rank5<2, 2, 5, 4, 6>, D> = random(4);
    let vs = vals(&v.to_vec());
    let win = Win::new(&[3, 3, 3], &[2, 2, 2], &[1, 1, 1]);
    let (want_max, want_idx, want_avg, out) = pool_ref(&vs, 4, &[5, 4, 6], &win);
    assert_eq!(out, [3, 2, 3]);
    let m: Tensor<T, Rank5<2, 2, 3, 2, 3>, D> = v.max_pool3d(Pool3d::<3, 2, 1>);
    let a: Tensor<T, Rank5<2, 2, 3, 2, 3>, D> = v.avg_pool3d(Pool3d::<3, 2, 1>);
    check("max_pool3d 3/2/1", &m.to_vec(), &want_max, 1);
    check("avg_pool3d 3/2/1", &a.to_vec(), &want_avg, 27);
    let (mi, i): (Tensor<T, Rank5<2, 2, 3, 2, 3>, D>, _) =
        v.max_pool3d_with_indices(Pool3d::<3, 2, 1>);
    assert_eq!(mi.to_vec(), m.to_vec(), "max_pool3d and its indexed form");
    assert_eq!(i.to_vec(), want_idx, "max_pool3d 3/2/1 indices");
    let win = Win::new(&[2, 2, 2], &[2, 2, 2], &[0, 0, 0])
        .ceil()
        .exclude();
    let (want_max, _, want_avg, out) = pool_ref(&vs, 4, &[5, 4, 6], &win);
    assert_eq!(out, [3, 2, 3]);
    let g = Pool3d::<2, 2, 0>.ceil_mode();
    let m: Tensor<T, Rank5<2, 2, 3, 2, 3>, D> = v.max_pool3d(g);
    let a: Tensor<T, Rank5<2, 2, 3, 2, 3>, D> = v.avg_pool3d(g.exclude_padding());
    check("max_pool3d 2/2/0 ceil", &m.to_vec(), &want_max, 1);
    check(
        "avg_pool3d 2/2/0 ceil excluding padding",
        &a.to_vec(),
        &want_avg,
        8,
    );
    // Dilated 3-D max pooling in ceil mode (dilation is separable too).
    let win = Win::new(&[2, 2, 2], &[1, 1, 1], &[1, 1, 1])
        .dilate(2)
        .ceil();
    let (want_max, want_idx, _, out) = pool_ref(&vs, 4, &[5, 4, 6], &win);
    assert_eq!(out, [5, 4, 6]);
    let m: Tensor<T, Rank5<2, 2, 5, 4, 6>, D> =
        v.max_pool3d(Pool3d::<2, 1, 1>.dilation::<2>().ceil_mode());
    let (_, i): (Tensor<T, Rank5<2, 2, 5, 4, 6>, D>, _) =
        v.max_pool3d_with_indices(Pool3d::<2, 1, 1>.dilation::<2>().ceil_mode());
    assert_eq!(i.to_vec(), want_idx, "max_pool3d dilated indices");
    check(
        "max_pool3d 2/1/1 dilation 2 ceil",
        &m.to_vec(),
        &want_max,
        1,
    );
    // A permuted (strided) 3-D input.
    let p = v.transpose::<Axis<3>, Axis<4>>(); // (2, 2, 5, 6, 4)
    let (want_max, want_idx, _, _) = pool_ref(
        &vals(&p.to_vec()),
        4,
        &[5, 6, 4],
        &Win::new(&[3, 3, 3], &[2, 2, 2], &[1, 1, 1]),
    );
    let m: Tensor<T, Rank5<2, 2, 3, 3, 2>, D> = p.max_pool3d(Pool3d::<3, 2, 1>);
    check("max_pool3d of a transposed view", &m.to_vec(), &want_max, 1);
    let (_, i): (Tensor<T, Rank5<2, 2, 3, 3, 2>, D>, _) =
        p.max_pool3d_with_indices(Pool3d::<3, 2, 1>);
    assert_eq!(
        i.to_vec(),
        want_idx,
        "max_pool3d indices of a transposed view"
    );
    // A window per axis on the same view: kernel (3, 2, 3), stride (1, 2, 1), padding (1, 0, 1).
    let win = Win::new(&[3, 2, 3], &[1, 2, 1], &[1, 0, 1]);
    let (want_max, want_idx, want_avg, out) = pool_ref(&vals(&p.to_vec()), 4, &[5, 6, 4], &win);
    assert_eq!(out, [5, 3, 4]);
    let g = Pool3dAxes::<3, 2, 3, 1, 2, 1, 1, 0, 1>;
    let (m, i): (Tensor<T, Rank5<2, 2, 5, 3, 4>, D>, _) = p.max_pool3d_with_indices(g);
    check("max_pool3d per axis", &m.to_vec(), &want_max, 1);
    assert_eq!(i.to_vec(), want_idx, "max_pool3d per-axis indices");
    let a: Tensor<T, Rank5<2, 2, 5, 3, 4>, D> = p.avg_pool3d(g);
    check("avg_pool3d per axis", &a.to_vec(), &want_avg, 18);
    let (_, _, want_excl, _) = pool_ref(&vals(&p.to_vec()), 4, &[5, 6, 4], &win.exclude());
    let a: Tensor<T, Rank5<2, 2, 5, 3, 4>, D> = p.avg_pool3d(g.exclude_padding());
    check(
        "avg_pool3d per axis excluding padding",
        &a.to_vec(),
        &want_excl,
        18,
    );
    // Dilation per axis: (2, 1, 3).
    let mut win = Win::new(&[2, 2, 2], &[1, 1, 1], &[1, 0, 1]);
    win.d = vec![2, 1, 3];
    let (want_max, want_idx, _, out) = pool_ref(&vals(&p.to_vec()), 4, &[5, 6, 4], &win);
    assert_eq!(out, [5, 5, 3]);
    let g = Pool3dAxes::<2, 2, 2, 1, 1, 1, 1, 0, 1>.dilation_axes_3d::<2, 1, 3>();
    let (m, i): (Tensor<T, Rank5<2, 2, 5, 5, 3>, D>, _) = p.max_pool3d_with_indices(g);
    check("max_pool3d dilation (2, 1, 3)", &m.to_vec(), &want_max, 1);
    assert_eq!(
        i.to_vec(),
        want_idx,
        "max_pool3d dilation (2, 1, 3) indices"
    );
}

/// PyTorch's adaptive bins: `[floor(i n / out), ceil((i + 1) n / out))`.
fn bin(i: usize, n: usize, out: usize) -> (usize, usize) {
    (i * n / out, ((i + 1) * n).div_ceil(out))
}

fn adaptive_and_global<T: FloatDType, D: Device>() {
    let x: Tensor<T, Rank4<2, 3, 7, 6>, D> = random(5);
    let xs = vals(&x.to_vec());
    let adaptive = |oh: usize, ow: usize| -> Vec<f64> {
        let mut out = vec![];
        for plane in 0..6 {
            for i in 0..oh {
                for j in 0..ow {
                    let ((r0, r1), (c0, c1)) = (bin(i, 7, oh), bin(j, 6, ow));
                    let m = (r0..r1)
                        .flat_map(|r| (c0..c1).map(move |c| (r, c)))
                        .map(|(r, c)| xs[plane * 42 + r * 6 + c])
                        .fold(f64::NEG_INFINITY, f64::max);
                    out.push(m);
                }
            }
        }
        out
    };
    // Bins that overlap (7 -> 3, 6 -> 4), that divide (7 -> 7, 6 -> 3), and that upsample (7 -> 9).
    let y: Tensor<T, Rank4<2, 3, 3, 4>, D> = x.adaptive_max_pool2d();
    check(
        "adaptive_max_pool2d 7x6 -> 3x4",
        &y.to_vec(),
        &adaptive(3, 4),
        1,
    );
    let y: Tensor<T, Rank4<2, 3, 7, 3>, D> = x.adaptive_max_pool2d();
    check(
        "adaptive_max_pool2d 7x6 -> 7x3",
        &y.to_vec(),
        &adaptive(7, 3),
        1,
    );
    let y: Tensor<T, Rank4<2, 3, 9, 1>, D> = x.adaptive_max_pool2d();
    check(
        "adaptive_max_pool2d 7x6 -> 9x1",
        &y.to_vec(),
        &adaptive(9, 1),
        1,
    );
    // On a strided view, 1-D.
    let t = x.transpose::<Axis<2>, Axis<3>>(); // (2, 3, 6, 7)
    let r: Tensor<T, Rank3<2, 3, 6>, D> = t.i((.., .., .., 1)).contiguous();
    let rs = vals(&r.to_vec());
    let want: Vec<f64> = (0..6)
        .flat_map(|pl| {
            let rs = &rs;
            (0..4).map(move |i| {
                let (a, b) = bin(i, 6, 4);
                (a..b)
                    .map(|k| rs[pl * 6 + k])
                    .fold(f64::NEG_INFINITY, f64::max)
            })
        })
        .collect();
    let got: Tensor<T, Rank3<2, 3, 4>, D> = t.i((.., .., .., 1)).adaptive_max_pool1d();
    check(
        "adaptive_max_pool1d 6 -> 4 of a strided view",
        &got.to_vec(),
        &want,
        1,
    );
    // Global pooling.
    let mean: Vec<f64> = (0..6)
        .map(|p| xs[p * 42..(p + 1) * 42].iter().sum::<f64>() / 42.0)
        .collect();
    let max: Vec<f64> = (0..6)
        .map(|p| {
            xs[p * 42..(p + 1) * 42]
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    check(
        "global_avg_pool2d",
        &x.global_avg_pool2d().to_vec(),
        &mean,
        42,
    );
    check(
        "global_max_pool2d",
        &x.global_max_pool2d().to_vec(),
        &max,
        1,
    );
}

/// Ties go to the first position in (row, column) order and a NaN wins with its own index, on every device.
fn indices_ties_and_nan<D: Device>() {
    let nan = f32::NAN;
    let x = Tensor::<f32, Rank4<1, 1, 2, 6>, D>::from_array([[[
        [1., 3., 2., 2., 0., nan],
        [3., 0., 1., 2., nan, 5.],
    ]]]);
    let (m, i): (Tensor<f32, Rank4<1, 1, 1, 3>, D>, _) =
        x.max_pool2d_with_indices(Pool2d::<2, 2, 0>);
    let m = m.to_vec();
    assert_eq!(&m[..2], [3., 2.]);
    assert!(m[2].is_nan());
    assert_eq!(i.to_vec(), [1, 2, 5]);
    // 3-D: the first max in (depth, row, column) order, although a later slice holds it earlier in its plane;
    // a NaN in the second slice wins over larger values in the first.
    let v = Tensor::<f32, Rank5<1, 1, 2, 2, 4>, D>::from_array([[[
        [[1., 0., 2., 2.], [0., 4., 9., 1.]],
        [[4., 3., 8., nan], [2., 1., 3., 0.]],
    ]]]);
    let (m, i): (Tensor<f32, Rank5<1, 1, 1, 1, 2>, D>, _) =
        v.max_pool3d_with_indices(Pool3d::<2, 2, 0>);
    let m = m.to_vec();
    assert_eq!(m[0], 4.);
    assert!(m[1].is_nan());
    assert_eq!(i.to_vec(), [5, 11]);
}

/// Adaptive max pooling's indices on an input full of ties and with NaNs, read through a transposed view: each
/// bin's first maximum in (row, column) order, or its first NaN, as in a naive loop.
fn adaptive_max_indices<T: FloatDType, D: Device>() {
    let mut xs: Vec<f64> = random::<f64, Rank1<252>, Cpu>(60)
        .to_vec()
        .iter()
        .map(|v| (v.abs() * 3.0).floor())
        .collect();
    for k in [17, 100, 101, 230] {
        xs[k] = f64::NAN;
    }
    let dense = Tensor::<f64, Rank4<2, 3, 6, 7>, D>::from_vec(xs).unwrap();
    let x: Tensor<T, Rank4<2, 3, 7, 6>, D> = dense.to_dtype::<T>().transpose::<Axis<2>, Axis<3>>();
    let xs = vals(&x.to_vec()); // (2, 3, 7, 6) in order
    let first_max = |cells: &mut dyn Iterator<Item = usize>, plane: &[f64]| -> (f64, u32) {
        let first = cells.next().unwrap();
        cells.fold((plane[first], first as u32), |(m, at), k| {
            let v = plane[k];
            if v > m || (v.is_nan() && !m.is_nan()) {
                (v, k as u32)
            } else {
                (m, at)
            }
        })
    };
    let same = |what: &str, got: (&[f64], Vec<u32>), want: &[(f64, u32)]| {
        for (k, (&(v, i), g)) in want.iter().zip(got.0.iter().zip(&got.1)).enumerate() {
            let equal = (g.0.is_nan() && v.is_nan()) || *g.0 == v;
            assert!(
                equal && *g.1 == i,
                "{what} at {k}: got ({}, {}), want ({v}, {i})",
                g.0,
                g.1
            );
        }
    };
    let reference = |oh: usize, ow: usize| -> Vec<(f64, u32)> {
        (0..6)
            .flat_map(|plane| {
                let xs = &xs[plane * 42..(plane + 1) * 42];
                (0..oh * ow).map(move |o| {
                    let ((r0, r1), (c0, c1)) = (bin(o / ow, 7, oh), bin(o % ow, 6, ow));
                    first_max(
                        &mut (r0..r1).flat_map(|r| (c0..c1).map(move |c| r * 6 + c)),
                        xs,
                    )
                })
            })
            .collect()
    };
    macro_rules! case {
        ($oh:literal, $ow:literal) => {{
            let want = reference($oh, $ow);
            let (m, at): (Tensor<T, Rank4<2, 3, $oh, $ow>, D>, _) =
                x.adaptive_max_pool2d_with_indices();
            let what = concat!("adaptive_max_pool2d_with_indices 7x6 -> ", $oh, "x", $ow);
            same(what, (&vals(&m.to_vec()), at.to_vec()), &want);
            let plain: Tensor<T, Rank4<2, 3, $oh, $ow>, D> = x.adaptive_max_pool2d();
            same(what, (&vals(&plain.to_vec()), at.to_vec()), &want);
        }};
    }
    // Overlapping bins, dividing ones on both axes, upsampling, global.
    case!(3, 4);
    case!(7, 3);
    case!(9, 1);
    case!(1, 1);
    // 1-D, along a strided row of the same view.
    let r = x.i((.., .., 2, ..)); // (2, 3, 6), stride 7 along the row
    let rs = vals(&r.to_vec());
    for (ol, what) in [(4, "6 -> 4"), (3, "6 -> 3")] {
        let want: Vec<(f64, u32)> = (0..6)
            .flat_map(|pl| {
                let rs = &rs[pl * 6..(pl + 1) * 6];
                (0..ol).map(move |i| {
                    let (a, b) = bin(i, 6, ol);
                    first_max(&mut (a..b), rs)
                })
            })
            .collect();
        let (m, at) = if ol == 4 {
            let (m, at): (Tensor<T, Rank3<2, 3, 4>, D>, _) = r.adaptive_max_pool1d_with_indices();
            (m.to_vec(), at.to_vec())
        } else {
            let (m, at): (Tensor<T, Rank3<2, 3, 3>, D>, _) = r.adaptive_max_pool1d_with_indices();
            (m.to_vec(), at.to_vec())
        };
        same(
            &format!("adaptive_max_pool1d_with_indices {what}"),
            (&vals(&m), at),
            &want,
        );
    }
}

fn every_dtype<D: Device>() {
    pools_2d::<f32, D>();
    pools_2d::<f64, D>();
    pools_2d::<f16, D>();
    pools_2d::<bf16, D>();
    pools_1d_3d::<f32, D>();
    pools_1d_3d::<f64, D>();
    pools_1d_3d::<f16, D>();
    pools_1d_3d::<bf16, D>();
    adaptive_and_global::<f32, D>();
    adaptive_and_global::<f64, D>();
    adaptive_and_global::<f16, D>();
    adaptive_and_global::<bf16, D>();
    adaptive_max_indices::<f32, D>();
    adaptive_max_indices::<f64, D>();
    adaptive_max_indices::<f16, D>();
    adaptive_max_indices::<bf16, D>();
    indices_ties_and_nan::<D>();
}

fn weighted<S: ConstShape + BroadcastShapes<S, Output = S>, D: Device>(
    t: Traced<f64, S, D>,
) -> Traced<f64, (), D> {
    let w: Tensor<f64, S, D> = random(999);
    (t * &w).sum_all()
}

fn grad_check<S: Shape, D: Device>(
    what: &str,
    x: &Var<f64, S, D>,
    f: impl Fn() -> Traced<f64, (), D>,
) {
    let worst = check_gradient(x, 1e-5, f);
    assert!(worst.error < 1e-6, "{what}: {worst:?}");
}

fn gradients<D: AutogradDevice>() {
    let x = Var::new(random::<f64, Rank4<2, 3, 7, 6>, D>(6));
    grad_check("avg_pool2d 2/2/0 ceil (clipped divisors)", &x, || {
        let y: Traced<f64, Rank4<2, 3, 4, 3>, D> =
            x.trace().avg_pool2d(Pool2d::<2, 2, 0>.ceil_mode());
        weighted(y)
    });
    grad_check("avg_pool2d 3/3/1 ceil excluding padding", &x, || {
        let y: Traced<f64, Rank4<2, 3, 3, 3>, D> = x
            .trace()
            .avg_pool2d(Pool2d::<3, 3, 1>.ceil_mode().exclude_padding());
        weighted(y)
    });
    grad_check("avg_pool2d 3x2 per axis", &x, || {
        let y: Traced<f64, Rank4<2, 3, 4, 5>, D> = x
            .trace()
            .avg_pool2d(Pool2dAxes::<3, 2, 2, 1, 1, 0>.ceil_mode());
        weighted(y)
    });
    grad_check("max_pool2d 2/2/1 dilation 2 ceil", &x, || {
        let y: Traced<f64, Rank4<2, 3, 4, 4>, D> = x
            .trace()
            .max_pool2d(Pool2d::<2, 2, 1>.dilation::<2>().ceil_mode());
        weighted(y)
    });
    grad_check("max_pool2d dilation (3, 1)", &x, || {
        let y: Traced<f64, Rank4<2, 3, 6, 3>, D> = x
            .trace()
            .max_pool2d(Pool2dAxes::<2, 3, 1, 2, 1, 1>.dilation_axes::<3, 1>());
        weighted(y)
    });
    grad_check("adaptive_max_pool2d 7x6 -> 3x4", &x, || {
        let y: Traced<f64, Rank4<2, 3, 3, 4>, D> = x.trace().adaptive_max_pool2d();
        weighted(y)
    });
    grad_check("adaptive_max_pool2d 7x6 -> 7x2", &x, || {
        let y: Traced<f64, Rank4<2, 3, 7, 2>, D> = x.trace().adaptive_max_pool2d();
        weighted(y)
    });
    grad_check("global pools", &x, || {
        weighted(x.trace().global_avg_pool2d()) + weighted(x.trace().global_max_pool2d())
    });
    let s = Var::new(random::<f64, Rank3<2, 3, 8>, D>(7));
    grad_check("max_pool1d 3/2/1 ceil", &s, || {
        let y: Traced<f64, Rank3<2, 3, 5>, D> = s.trace().max_pool1d(Pool1d::<3, 2, 1>.ceil_mode());
        weighted(y)
    });
    grad_check("avg_pool1d 3/2/1 ceil excluding padding", &s, || {
        let y: Traced<f64, Rank3<2, 3, 5>, D> = s
            .trace()
            .avg_pool1d(Pool1d::<3, 2, 1>.ceil_mode().exclude_padding());
        weighted(y)
    });
    grad_check("adaptive_max_pool1d 8 -> 3", &s, || {
        let y: Traced<f64, Rank3<2, 3, 3>, D> = s.trace().adaptive_max_pool1d();
        weighted(y)
    });
    let v = Var::new(random::<f64, Rank5<1, 2, 5, 4, 6>, D>(8));
    grad_check("max_pool3d 3/2/1", &v, || {
        let y: Traced<f64, Rank5<1, 2, 3, 2, 3>, D> = v.trace().max_pool3d(Pool3d::<3, 2, 1>);
        weighted(y)
    });
    grad_check("max_pool3d per axis, dilation (2, 1, 3)", &v, || {
        let g = Pool3dAxes::<2, 2, 2, 1, 2, 1, 1, 0, 1>.dilation_axes_3d::<2, 1, 3>();
        let y: Traced<f64, Rank5<1, 2, 5, 2, 5>, D> = v.trace().max_pool3d(g);
        weighted(y)
    });
    grad_check("avg_pool3d per axis", &v, || {
        let g = Pool3dAxes::<3, 2, 3, 1, 2, 2, 1, 0, 1>;
        let y: Traced<f64, Rank5<1, 2, 5, 2, 3>, D> = v.trace().avg_pool3d(g);
        weighted(y)
    });
    grad_check("avg_pool3d 2/2/0 ceil excluding padding", &v, || {
        let y: Traced<f64, Rank5<1, 2, 3, 2, 3>, D> = v
            .trace()
            .avg_pool3d(Pool3d::<2, 2, 0>.ceil_mode().exclude_padding());
        weighted(y)
    });
    grad_check("avg_pool3d 3/2/1 of a transposed view", &v, || {
        let y: Traced<f64, Rank5<1, 2, 3, 3, 2>, D> = v
            .trace()
            .transpose::<Axis<3>, Axis<4>>()
            .avg_pool3d(Pool3d::<3, 2, 1>);
        weighted(y)
    });
}

/// Max pooling's gradient goes to each window's first maximum (its index), as in PyTorch: on inputs full of ties
/// (small integers), with overlapping and padded windows, in 1-D, 2-D and 3-D, the gradient is the output
/// gradient summed at the indices `max_pool*_with_indices` gives; a NaN window sends it to its first NaN.
fn max_gradient_to_the_first_maximum<D: AutogradDevice>() {
    fn expected(at: &[u32], gy: &[f64], planes: usize, plane: usize) -> Vec<f64> {
        let per = at.len() / planes;
        let mut dx = vec![0.0; planes * plane];
        for (o, (&k, &g)) in at.iter().zip(gy).enumerate() {
            dx[(o / per) * plane + k as usize] += g;
        }
        dx
    }
    let ties = |seed: u64| -> Vec<f64> {
        let r: Tensor<f64, Rank1<360>, Cpu> = random(seed);
        r.to_vec().iter().map(|v| (v.abs() * 3.0).floor()).collect()
    };
    // 2-D: 3x3 windows, stride 2, padding 1 (windows overlap), on a transposed view.
    let x = Var::new(
        Tensor::<f64, Rank4<2, 3, 6, 5>, D>::from_vec(ties(50)[..180].to_vec())
            .unwrap()
            .transpose::<Axis<2>, Axis<3>>()
            .contiguous(),
    );
    let (_, at): (Tensor<f64, Rank4<2, 3, 3, 3>, D>, _) =
        x.value().max_pool2d_with_indices(Pool2d::<3, 2, 1>);
    let gy: Tensor<f64, Rank4<2, 3, 3, 3>, D> = random(51);
    let y: Traced<f64, Rank4<2, 3, 3, 3>, D> = x.trace().max_pool2d(Pool2d::<3, 2, 1>);
    let dx = (y * &gy).sum_all().backward().get(&x).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 6, 30),
        "max_pool2d ties"
    );
    // 1-D, stride 1 (each position in up to 3 windows).
    let s = Var::new(Tensor::<f64, Rank3<2, 2, 9>, D>::from_vec(ties(52)[..36].to_vec()).unwrap());
    let (_, at): (Tensor<f64, Rank3<2, 2, 7>, D>, _) =
        s.value().max_pool1d_with_indices(Pool1d::<3, 1, 0>);
    let gy: Tensor<f64, Rank3<2, 2, 7>, D> = random(53);
    let y: Traced<f64, Rank3<2, 2, 7>, D> = s.trace().max_pool1d(Pool1d::<3, 1, 0>);
    let dx = (y * &gy).sum_all().backward().get(&s).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 4, 9),
        "max_pool1d ties"
    );
    // 3-D, through the two passes: the first maximum in (depth, row, column) order.
    let v = Var::new(
        Tensor::<f64, Rank5<1, 2, 4, 5, 4>, D>::from_vec(ties(54)[..160].to_vec()).unwrap(),
    );
    let (_, at): (Tensor<f64, Rank5<1, 2, 3, 3, 3>, D>, _) = v
        .value()
        .max_pool3d_with_indices(Pool3d::<2, 2, 1>.ceil_mode());
    let gy: Tensor<f64, Rank5<1, 2, 3, 3, 3>, D> = random(55);
    let y: Traced<f64, Rank5<1, 2, 3, 3, 3>, D> =
        v.trace().max_pool3d(Pool3d::<2, 2, 1>.ceil_mode());
    let dx = (y * &gy).sum_all().backward().get(&v).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 2, 80),
        "max_pool3d ties"
    );
    // A NaN window: its gradient goes to its first NaN; a tie to the first of the equal values.
    let nan = f64::NAN;
    let x = Var::new(Tensor::<f64, Rank4<1, 1, 2, 6>, D>::from_array([[[
        [1., 3., 2., 2., 0., nan],
        [3., 0., 1., 2., nan, 5.],
    ]]]));
    let gy = Tensor::<f64, Rank4<1, 1, 1, 3>, D>::from_array([[[[1., 2., 4.]]]]);
    let y: Traced<f64, Rank4<1, 1, 1, 3>, D> = x.trace().max_pool2d(Pool2d::<2, 2, 0>);
    let dx = (y * &gy).sum_all().backward().get(&x).to_vec();
    assert_eq!(dx, [0., 1., 2., 0., 0., 4., 0., 0., 0., 0., 0., 0.]);
    // Adaptive, overlapping bins (gathers) and dividing ones (the pooling kernel), 2-D and 1-D.
    let x =
        Var::new(Tensor::<f64, Rank4<2, 3, 7, 6>, D>::from_vec(ties(56)[..252].to_vec()).unwrap());
    let (_, at): (Tensor<f64, Rank4<2, 3, 3, 4>, D>, _) =
        x.value().adaptive_max_pool2d_with_indices();
    let gy: Tensor<f64, Rank4<2, 3, 3, 4>, D> = random(57);
    let y: Traced<f64, Rank4<2, 3, 3, 4>, D> = x.trace().adaptive_max_pool2d();
    let dx = (y * &gy).sum_all().backward().get(&x).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 6, 42),
        "adaptive_max_pool2d ties"
    );
    let (_, at): (Tensor<f64, Rank4<2, 3, 7, 2>, D>, _) =
        x.value().adaptive_max_pool2d_with_indices();
    let gy: Tensor<f64, Rank4<2, 3, 7, 2>, D> = random(58);
    let y: Traced<f64, Rank4<2, 3, 7, 2>, D> = x.trace().adaptive_max_pool2d();
    let dx = (y * &gy).sum_all().backward().get(&x).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 6, 42),
        "adaptive_max_pool2d 7x6 -> 7x2 ties"
    );
    let s = Var::new(Tensor::<f64, Rank3<2, 2, 9>, D>::from_vec(ties(59)[..36].to_vec()).unwrap());
    let (_, at): (Tensor<f64, Rank3<2, 2, 4>, D>, _) = s.value().adaptive_max_pool1d_with_indices();
    let gy: Tensor<f64, Rank3<2, 2, 4>, D> = random(60);
    let y: Traced<f64, Rank3<2, 2, 4>, D> = s.trace().adaptive_max_pool1d();
    let dx = (y * &gy).sum_all().backward().get(&s).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 4, 9),
        "adaptive_max_pool1d ties"
    );
    // 9 -> 3 divides: one pooling pass, recorded with its indices.
    let (_, at): (Tensor<f64, Rank3<2, 2, 3>, D>, _) = s.value().adaptive_max_pool1d_with_indices();
    let gy: Tensor<f64, Rank3<2, 2, 3>, D> = random(61);
    let y: Traced<f64, Rank3<2, 2, 3>, D> = s.trace().adaptive_max_pool1d();
    let dx = (y * &gy).sum_all().backward().get(&s).to_vec();
    assert_eq!(
        dx,
        expected(&at.to_vec(), &gy.to_vec(), 4, 9),
        "adaptive_max_pool1d 9 -> 3 ties"
    );
}

fn all<D: AutogradDevice>() {
    every_dtype::<D>();
    gradients::<D>();
    max_gradient_to_the_first_maximum::<D>();
}

device_tests! {
    pooling_geometry_every_float_dtype_and_gradients => all;
}

/// The heap-free device: the kernels' loops, with a few windows of each kind.
fn embedded_forward<D: Device>() {
    pools_2d::<f32, D>();
    pools_1d_3d::<f32, D>();
    adaptive_and_global::<f32, D>();
    adaptive_max_indices::<f32, D>();
    indices_ties_and_nan::<D>();
}

embedded_tests! {
    pooling_geometry_f32 => embedded_forward;
}

/// The adaptive pooling layers run the functional ops, on tensors and on traced values.
#[test]
fn adaptive_pool_layers_match_the_ops() {
    use typed_tensor::nn::{AdaptiveAvgPool2d, AdaptiveMaxPool2d, Module};
    let x: Tensor<f32, Rank4<2, 3, 7, 6>, Cpu> = random(9);
    let max: Tensor<f32, Rank4<2, 3, 3, 4>, Cpu> = x.adaptive_max_pool2d();
    let avg: Tensor<f32, Rank4<2, 3, 3, 4>, Cpu> = x.adaptive_avg_pool2d();
    assert_eq!(
        AdaptiveMaxPool2d::<3, 4>.forward(x.clone()).to_vec(),
        max.to_vec()
    );
    assert_eq!(
        AdaptiveAvgPool2d::<3, 4>.forward(x.clone()).to_vec(),
        avg.to_vec()
    );
    let v = Var::new(x);
    let traced = AdaptiveMaxPool2d::<3, 4>.forward(v.trace());
    assert_eq!(traced.value().to_vec(), max.to_vec());
}
