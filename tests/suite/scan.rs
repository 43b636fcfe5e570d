//! cumsum, cumprod, cummax/cummin (values and indices) and logcumsumexp along each axis of strided views, for every
//! dtype, against sequential f64 (floats) or wrapping 64-bit (integers) references; PyTorch's tie and NaN rules;
//! a large tensor takes the threaded path. Gradients are checked in autograd.rs.

use crate::common::{per_lane, tolerance, views, Mat, M, N};
use typed_tensor::ops::Cumulative;
use typed_tensor::prelude::*;
use typed_tensor::shape::HasAxis;

/// An integer result as `T` holds it: the 64-bit wrapping value truncated to `T`'s width.
fn wrapped<T: WithDType>(x: i64) -> f64 {
    T::from_i64(x).to_f64()
}

fn running<T: WithDType>(lane: &[f64], product: bool) -> Vec<f64> {
    if T::DTYPE.is_float() {
        let mut acc = if product { 1.0 } else { 0.0 };
        return lane
            .iter()
            .map(|&x| {
                acc = if product { acc * x } else { acc + x };
                acc
            })
            .collect();
    }
    let mut acc: i64 = if product { 1 } else { 0 };
    lane.iter()
        .map(|&x| {
            acc = if product {
                acc.wrapping_mul(x as i64)
            } else {
                acc.wrapping_add(x as i64)
            };
            wrapped::<T>(acc)
        })
        .collect()
}

/// [`running`] in `order`: the lane reversed first (and the result back), the results shifted by one with the
/// op's identity first when exclusive.
fn running_in<T: WithDType>(lane: &[f64], product: bool, order: Cumulative) -> Vec<f64> {
    let mut lane = lane.to_vec();
    if order.reverse {
        lane.reverse();
    }
    let mut out = running::<T>(&lane, product);
    if order.exclusive {
        out.pop();
        out.insert(0, if product { 1.0 } else { 0.0 });
    }
    if order.reverse {
        out.reverse();
    }
    out
}

/// PyTorch's `cummax`/`cummin`: the later index on ties; from a NaN on, NaN and the latest NaN's index.
fn running_extreme(lane: &[f64], min: bool) -> (Vec<f64>, Vec<f64>) {
    let (mut best, mut at) = (f64::NAN, 0);
    let mut values = Vec::new();
    let mut indices = Vec::new();
    for (i, &x) in lane.iter().enumerate() {
        let better = if min { x <= best } else { x >= best };
        if i == 0 || x.is_nan() || (!best.is_nan() && better) {
            best = x;
            at = i;
        }
        values.push(best);
        indices.push(at as f64);
    }
    (values, indices)
}

fn log_cum_sum_exp(lane: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..lane.len() {
        let m = lane[..=i].iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = lane[..=i].iter().map(|x| (x - m).exp()).sum();
        out.push(m + s.ln());
    }
    out
}

/// Exact for integers and for maxima; floats within a few ulps of the running values' scale.
fn assert_close<T: WithDType>(what: &str, got: &[T], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let tol = tolerance::<T>() * 4.0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        let ok = if w.is_nan() {
            g.is_nan()
        } else {
            g == *w || (g - w).abs() <= tol * (w.abs() + 8.0)
        };
        assert!(ok, "{what} [{}] element {i}: got {g}, want {w}", T::DTYPE);
    }
}

fn check_axis<T: WithDType, D: Device, Ax>(axis: usize)
where
    Mat: HasAxis<Ax>,
{
    // Small magnitudes so that integer products stay meaningful and float products stay in range.
    let (lo, hi) = if T::DTYPE.is_float() {
        (-2.0, 2.0)
    } else {
        (0.0, 5.0)
    };
    for v in views::<T, D>(61 + axis as u64, lo, hi) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let dims = [M, N];
        let what = |op: &str| format!("{op} along axis {axis} of {} view", v.kind);
        let want = per_lane(&xs, &dims, axis, |l| running::<T>(l, false));
        assert_close(&what("cumsum"), &v.tensor.cumsum::<Ax>().to_vec(), &want);
        let want = per_lane(&xs, &dims, axis, |l| running::<T>(l, true));
        assert_close(&what("cumprod"), &v.tensor.cumprod::<Ax>().to_vec(), &want);
        let both = Cumulative {
            reverse: true,
            exclusive: true,
        };
        for order in [Cumulative::REVERSE, Cumulative::EXCLUSIVE, both] {
            let want = per_lane(&xs, &dims, axis, |l| running_in::<T>(l, false, order));
            let got = v.tensor.cumsum_with::<Ax>(order).to_vec();
            assert_close(&what(&format!("cumsum_with {order:?}")), &got, &want);
            let want = per_lane(&xs, &dims, axis, |l| running_in::<T>(l, true, order));
            let got = v.tensor.cumprod_with::<Ax>(order).to_vec();
            assert_close(&what(&format!("cumprod_with {order:?}")), &got, &want);
        }
        for (name, min) in [("cummax", false), ("cummin", true)] {
            let (values, indices) = if min {
                v.tensor.cummin::<Ax>()
            } else {
                v.tensor.cummax::<Ax>()
            };
            let want = per_lane(&xs, &dims, axis, |l| running_extreme(l, min).0);
            assert_close(&what(name), &values.to_vec(), &want);
            let want = per_lane(&xs, &dims, axis, |l| running_extreme(l, min).1);
            assert_close(&what(&format!("{name} indices")), &indices.to_vec(), &want);
        }
    }
}

fn check_log_cum_sum_exp<T: FloatDType, D: Device, Ax>(axis: usize)
where
    Mat: HasAxis<Ax>,
{
    for v in views::<T, D>(71 + axis as u64, -30.0, 30.0) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let want = per_lane(&xs, &[M, N], axis, log_cum_sum_exp);
        let what = format!("logcumsumexp along axis {axis} of {} view", v.kind);
        assert_close(&what, &v.tensor.logcumsumexp::<Ax>().to_vec(), &want);
    }
}

fn every_dtype_both_axes<D: Device>() {
    fn both<T: WithDType, D: Device>() {
        check_axis::<T, D, Axis<0>>(0);
        check_axis::<T, D, Axis<1>>(1);
    }
    fn both_float<T: FloatDType, D: Device>() {
        both::<T, D>();
        check_log_cum_sum_exp::<T, D, Axis<0>>(0);
        check_log_cum_sum_exp::<T, D, Axis<1>>(1);
    }
    both_float::<f32, D>();
    both_float::<f64, D>();
    both_float::<f16, D>();
    both_float::<bf16, D>();
    both::<u8, D>();
    both::<u32, D>();
    both::<i8, D>();
    both::<i32, D>();
    both::<i64, D>();
}

fn rank3_large_and_edge_cases<D: Device>() {
    // The middle axis of a rank-3 tensor.
    let x = Tensor::<f64, Rank3<2, 3, 4>, D>::randn(3);
    let want = per_lane(&x.to_vec(), &[2, 3, 4], 1, |l| running::<f64>(l, false));
    assert_close(
        "cumsum along axis 1 of rank 3",
        &x.cumsum::<Axis<1>>().to_vec(),
        &want,
    );
    // Large enough for the threaded path, along the last axis of a transposed view and along the first axis.
    let big = Tensor::<f32, Rank2<300, 256>, D>::randn(4);
    let values: Vec<f64> = big.to_vec().iter().map(|&v| v as f64).collect();
    let t = big.t();
    let tv: Vec<f64> = t.to_vec().iter().map(|&v| v as f64).collect();
    let want = per_lane(&tv, &[256, 300], 1, |l| running::<f32>(l, false));
    assert_close(
        "cumsum of a large transposed view",
        &t.cumsum::<Axis<1>>().to_vec(),
        &want,
    );
    let want = per_lane(&values, &[300, 256], 0, |l| running_extreme(l, false).1);
    assert_close(
        "cummax indices along axis 0 of a large tensor",
        &big.cummax::<Axis<0>>().1.to_vec(),
        &want,
    );
    let want = per_lane(&values, &[300, 256], 1, log_cum_sum_exp);
    assert_close(
        "logcumsumexp of a large tensor",
        &big.logcumsumexp::<Axis<1>>().to_vec(),
        &want,
    );

    // Ties go to the later index, NaN sticks with the latest NaN's index (torch.cummax / torch.cummin).
    let x = Tensor::<f32, _, D>::from_array([2., 2., 1., f32::NAN, 5., f32::NAN, 0.]);
    let (values, indices) = x.cummax::<Axis<0>>();
    assert_eq!(indices.to_array(), [0, 1, 1, 3, 3, 5, 5]);
    assert_eq!(&values.to_vec()[..3], &[2., 2., 2.]);
    assert!(values.to_vec()[3..].iter().all(|v| v.is_nan()));
    let (values, indices) = x.cummin::<Axis<0>>();
    assert_eq!(indices.to_array(), [0, 1, 2, 3, 3, 5, 5]);
    assert_eq!(&values.to_vec()[..3], &[2., 2., 1.]);
    // Each value is the element its index names (torch.cummax: `x >= max` takes the later element of a tie), so
    // at a 0.0 / -0.0 tie the later zero's sign; along the trailing axis and along the leading one (the CPU
    // walks that row by row).
    let x = Tensor::<f32, Rank2<3, 4>, D>::from_array([
        [0.0, -0.0, 0.0, 1.0],
        [-0.0, 0.0, -0.0, 1.0],
        [-0.0, -0.0, 0.0, -1.0],
    ]);
    let xs = x.to_array();
    for min in [false, true] {
        let (values, indices) = if min {
            (x.cummin::<Axis<1>>(), x.cummin::<Axis<0>>())
        } else {
            (x.cummax::<Axis<1>>(), x.cummax::<Axis<0>>())
        };
        let (v1, i1) = (values.0.to_array(), values.1.to_array());
        let (v0, i0) = (indices.0.to_array(), indices.1.to_array());
        for r in 0..3 {
            for c in 0..4 {
                let along_1 = xs[r][i1[r][c] as usize];
                assert_eq!(
                    v1[r][c].to_bits(),
                    along_1.to_bits(),
                    "min {min} ({r}, {c}), axis 1"
                );
                let along_0 = xs[i0[r][c] as usize][c];
                assert_eq!(
                    v0[r][c].to_bits(),
                    along_0.to_bits(),
                    "min {min} ({r}, {c}), axis 0"
                );
            }
        }
    }
    assert_eq!(x.cummax::<Axis<1>>().1.to_array()[0], [0, 1, 2, 3]);
    assert_eq!(x.cummin::<Axis<0>>().1.to_array()[1], [1, 1, 1, 1]);
    // logcumsumexp: no overflow at 1e4, -inf adds nothing, +inf and NaN stick.
    let x = Tensor::<f32, _, D>::from_array([
        f32::NEG_INFINITY,
        1e4,
        1e4,
        f32::NEG_INFINITY,
        f32::INFINITY,
        0.,
    ]);
    let y = x.logcumsumexp::<Axis<0>>().to_vec();
    assert_eq!(y[0], f32::NEG_INFINITY);
    assert_eq!(y[1], 1e4);
    assert!((y[2] - (1e4 + std::f32::consts::LN_2)).abs() < 1e-3);
    assert_eq!(y[3], y[2]);
    assert_eq!(&y[4..], &[f32::INFINITY; 2]);
    let y = Tensor::<f64, _, D>::from_array([0., f64::NAN, 1.])
        .logcumsumexp::<Axis<0>>()
        .to_vec();
    assert!(y[0] == 0.0 && y[1].is_nan() && y[2].is_nan());
    // Integer sums wrap in the element type, products too; i64 keeps its sign.
    let x = Tensor::<u8, _, D>::from_array([200, 100, 3]);
    assert_eq!(x.cumsum::<Axis<0>>().to_array(), [200, 44, 47]);
    assert_eq!(x.cumprod::<Axis<0>>().to_array(), [200, 32, 96]);
    let x = Tensor::<i64, _, D>::from_array([-3, 5, -2]);
    assert_eq!(x.cummin::<Axis<0>>().0.to_array(), [-3, -3, -3]);
    assert_eq!(x.cumprod::<Axis<0>>().to_array(), [-3, -15, 30]);

    // A NaN reaches only the outputs whose elements include it: those before it in reverse, after it when
    // exclusive.
    let x = Tensor::<f32, _, D>::from_array([1., 2., f32::NAN, 4., 5.]);
    let nan_at =
        |y: Tensor<f32, Rank1<5>, D>| y.to_vec().iter().map(|v| v.is_nan()).collect::<Vec<_>>();
    let (t, f) = (true, false);
    assert_eq!(
        nan_at(x.cumsum_with::<Axis<0>>(Cumulative::REVERSE)),
        [t, t, t, f, f]
    );
    assert_eq!(
        nan_at(x.cumsum_with::<Axis<0>>(Cumulative::EXCLUSIVE)),
        [f, f, f, t, t]
    );
    let both = Cumulative {
        reverse: true,
        exclusive: true,
    };
    assert_eq!(nan_at(x.cumprod_with::<Axis<0>>(both)), [t, t, f, f, f]);
    // No elements, or lanes of none: nothing to write.
    let empty = Tensor::<f32, Rank2<0, 3>, D>::zeros();
    assert_eq!(empty.cumsum_with::<Axis<1>>(both).dims().to_vec(), [0, 3]);
    let no_lane = Tensor::<i32, Rank2<3, 0>, D>::zeros();
    assert_eq!(
        no_lane
            .cumprod_with::<Axis<1>>(Cumulative::EXCLUSIVE)
            .dims()
            .to_vec(),
        [3, 0]
    );
}

device_tests! {
    scans_every_dtype_both_axes => every_dtype_both_axes;
    scans_rank3_large_and_edge_cases => rank3_large_and_edge_cases;
}

embedded_tests! {
    scans_every_dtype_both_axes => every_dtype_both_axes;
    scans_rank3_large_and_edge_cases => rank3_large_and_edge_cases;
}
