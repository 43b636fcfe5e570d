//! argsort, sort, topk and kthvalue along each axis of strided views, for every dtype, against the standard
//! library's stable sort with PyTorch's order (NaN last ascending, first descending, ties in input order); the
//! threaded path on a large tensor. Gradients are checked in autograd.rs.

use crate::common::{views, Mat, M, N};
use std::cmp::Ordering;
use typed_tensor::ops::TopK;
use typed_tensor::prelude::*;
use typed_tensor::shape::HasAxis;

/// The stable order of `lane` (positions), PyTorch's: NaN as the largest value, reversed for `descending`.
fn order(lane: &[f64], descending: bool) -> Vec<u32> {
    let key = |x: f64| if x.is_nan() { f64::INFINITY } else { x };
    let mut idx: Vec<u32> = (0..lane.len() as u32).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (lane[a as usize], lane[b as usize]);
        // NaN after +inf: compare (is_nan, value).
        let c = (x.is_nan(), key(x))
            .partial_cmp(&(y.is_nan(), key(y)))
            .unwrap_or(Ordering::Equal);
        if descending {
            c.reverse()
        } else {
            c
        }
    });
    idx
}

/// The lanes along `axis` of row-major `values` with `dims`, each as (first index, stride) and its values.
fn lanes(values: &[f64], dims: [usize; 2], axis: usize) -> Vec<(Vec<usize>, Vec<f64>)> {
    let (n, others) = (dims[axis], dims[1 - axis]);
    (0..others)
        .map(|o| {
            let at: Vec<usize> = (0..n)
                .map(|i| {
                    if axis == 1 {
                        o * dims[1] + i
                    } else {
                        i * dims[1] + o
                    }
                })
                .collect();
            let vals = at.iter().map(|&k| values[k]).collect();
            (at, vals)
        })
        .collect()
}

fn check_axis<T: WithDType, D: Device, Ax>(axis: usize)
where
    Mat: HasAxis<Ax>,
{
    let (lo, hi) = if T::DTYPE.is_float() {
        (-3.0, 3.0)
    } else {
        (0.0, 4.0)
    }; // integers: many ties
    for v in views::<T, D>(91 + axis as u64, lo, hi) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        for descending in [false, true] {
            let what = format!(
                "{} view, axis {axis}, descending {descending} [{}]",
                v.kind,
                T::DTYPE
            );
            let (values, indices) = v.tensor.sort::<Ax>(descending);
            let (values, indices) = (values.to_vec(), indices.to_vec());
            assert_eq!(
                v.tensor.argsort::<Ax>(descending).to_vec(),
                indices,
                "{what}"
            );
            for (at, lane) in lanes(&xs, [M, N], axis) {
                let want = order(&lane, descending);
                let got: Vec<u32> = at.iter().map(|&k| indices[k]).collect();
                assert_eq!(got, want, "argsort, {what}");
                let got: Vec<f64> = at.iter().map(|&k| values[k].to_f64()).collect();
                let want: Vec<f64> = want.iter().map(|&p| lane[p as usize]).collect();
                assert_eq!(got, want, "sort, {what}");
            }
        }
    }
}

fn check_topk_kthvalue<T: WithDType, D: Device>() {
    let (lo, hi) = if T::DTYPE.is_float() {
        (-3.0, 3.0)
    } else {
        (0.0, 4.0)
    };
    for v in views::<T, D>(97, lo, hi) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        for largest in [true, false] {
            let (values, indices) = v.tensor.topk::<Axis<1>, 3>(largest);
            let (values, indices) = (values.to_array(), indices.to_array());
            for (r, (_, lane)) in lanes(&xs, [M, N], 1).into_iter().enumerate() {
                let want: Vec<u32> = order(&lane, largest)[..3].to_vec();
                assert_eq!(
                    indices[r].to_vec(),
                    want,
                    "topk {} view largest {largest} [{}]",
                    v.kind,
                    T::DTYPE
                );
                let got: Vec<f64> = values[r].iter().map(|x| x.to_f64()).collect();
                let want: Vec<f64> = want.iter().map(|&p| lane[p as usize]).collect();
                assert_eq!(got, want);
            }
            // Unsorted: the same picks, in the order they stand in the lane.
            let options = TopK {
                largest,
                sorted: false,
            };
            let (values, indices) = v.tensor.topk_with::<Axis<1>, 3>(options);
            let (values, indices) = (values.to_array(), indices.to_array());
            for (r, (_, lane)) in lanes(&xs, [M, N], 1).into_iter().enumerate() {
                let mut want: Vec<u32> = order(&lane, largest)[..3].to_vec();
                want.sort();
                let what = format!(
                    "unsorted topk {} view largest {largest} [{}]",
                    v.kind,
                    T::DTYPE
                );
                assert_eq!(indices[r].to_vec(), want, "{what}");
                let got: Vec<f64> = values[r].iter().map(|x| x.to_f64()).collect();
                let want: Vec<f64> = want.iter().map(|&p| lane[p as usize]).collect();
                assert_eq!(got, want, "{what}");
            }
        }
        for k in [1, 3, M] {
            let (values, indices) = v.tensor.kthvalue::<Axis<0>>(k).unwrap();
            let (values, indices) = (values.to_vec(), indices.to_vec());
            for (c, (_, lane)) in lanes(&xs, [M, N], 0).into_iter().enumerate() {
                let p = order(&lane, false)[k - 1];
                assert_eq!(
                    indices[c],
                    p,
                    "kthvalue {k} of {} view [{}]",
                    v.kind,
                    T::DTYPE
                );
                assert_eq!(values[c].to_f64(), lane[p as usize]);
            }
        }
        let (values, indices) = v.tensor.median::<Axis<1>>();
        let (values, indices) = (values.to_vec(), indices.to_vec());
        for (r, (_, lane)) in lanes(&xs, [M, N], 1).into_iter().enumerate() {
            let p = order(&lane, false)[N.div_ceil(2) - 1];
            assert_eq!(indices[r], p, "median of {} view [{}]", v.kind, T::DTYPE);
            assert_eq!(values[r].to_f64(), lane[p as usize]);
        }
        for k in [0, M + 1] {
            let err = v.tensor.kthvalue::<Axis<0>>(k).unwrap_err();
            assert!(err.to_string().starts_with("kthvalue"), "{err}");
        }
    }
}

fn every_dtype_both_axes<D: Device>() {
    fn all<T: WithDType, D: Device>() {
        check_axis::<T, D, Axis<0>>(0);
        check_axis::<T, D, Axis<1>>(1);
        check_topk_kthvalue::<T, D>();
    }
    all::<f32, D>();
    all::<f64, D>();
    all::<f16, D>();
    all::<bf16, D>();
    all::<u8, D>();
    all::<u32, D>();
    all::<i8, D>();
    all::<i32, D>();
    all::<i64, D>();
}

fn nan_ties_and_large<D: Device>() {
    let x = Tensor::<f32, _, D>::from_array([2., f32::NAN, -0.0, 1., 0.0, f32::NAN, 2.]);
    assert_eq!(
        x.argsort::<Axis<0>>(false).to_array(),
        [2, 4, 3, 0, 6, 1, 5]
    );
    assert_eq!(x.argsort::<Axis<0>>(true).to_array(), [1, 5, 0, 6, 3, 2, 4]);
    let (top, at) = x.topk::<Axis<0>, 3>(true);
    assert!(top.to_vec()[..2].iter().all(|v| v.is_nan()) && top.to_vec()[2] == 2.0);
    assert_eq!(at.to_array(), [1, 5, 0]);
    // median: the lower middle of an even count; any NaN wins, at its first position.
    let x = Tensor::<f64, _, D>::from_array([
        [4., 1., 3., 2.],
        [5., f64::NAN, 1., f64::NAN],
        [2., 2., 9., 2.],
    ]);
    let (values, indices) = x.median::<Axis<1>>();
    let values = values.to_vec();
    assert!(
        values[0] == 2.0 && values[1].is_nan() && values[2] == 2.0,
        "{values:?}"
    );
    assert_eq!(indices.to_array(), [3, 1, 1]);
    // Large enough for the CPU's threaded path; a transposed view's lanes are strided.
    let big = Tensor::<f32, Rank2<96, 512>, D>::randn(7);
    let t = big.t(); // (512, 96)
    for (what, got, dims, src) in [
        (
            "large",
            big.argsort::<Axis<1>>(true).to_vec(),
            [96, 512],
            big.to_vec(),
        ),
        (
            "large transposed",
            t.argsort::<Axis<1>>(false).to_vec(),
            [512, 96],
            t.to_vec(),
        ),
    ] {
        let xs: Vec<f64> = src.iter().map(|&v| v as f64).collect();
        let descending = what == "large";
        for (at, lane) in lanes(&xs, dims, 1) {
            let got_lane: Vec<u32> = at.iter().map(|&k| got[k]).collect();
            assert_eq!(got_lane, order(&lane, descending), "{what}");
        }
    }
}

device_tests! {
    sort_every_dtype_both_axes => every_dtype_both_axes;
    sort_nan_ties_and_large => nan_ties_and_large;
}

embedded_tests! {
    sort_every_dtype_both_axes => every_dtype_both_axes;
    sort_nan_ties_and_large => nan_ties_and_large;
}
