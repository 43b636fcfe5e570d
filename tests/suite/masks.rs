//! masked_fill (broadcast masks), where_scalar, tril/triu (diagonal offsets, batches) and one_hot against host
//! references, on every view kind and every dtype, on every device; one_hot's range check. Gradients: autograd.rs.

use crate::common::*;
use typed_tensor::prelude::*;

fn masks_for<T: WithDType, D: Device>() {
    for v in views::<T, D>(81, 0.0, 5.0) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let what = |op: &str| format!("{op} of {} view [{}]", v.kind, T::DTYPE);
        // A mask over the last axis, broadcast over the rows, and a full mask.
        let cols: Vec<u8> = (0..N).map(|j| (j % 3 == 1) as u8).collect();
        let row_mask = Tensor::<u8, Rank1<N>, D>::from_slice(&cols).unwrap();
        let fill = T::from_f64(7.0);
        let got = v.tensor.masked_fill(&row_mask, fill).to_vec();
        let want: Vec<f64> = (0..M * N)
            .map(|k| if cols[k % N] != 0 { 7.0 } else { xs[k] })
            .collect();
        assert_eq!(
            got.iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
            want,
            "{}",
            what("masked_fill")
        );
        let full: Vec<u8> = (0..M * N).map(|k| (k % 4 == 0) as u8 * 3).collect(); // any non-zero byte is true
        let full_mask = Tensor::<u8, Mat, D>::from_slice(&full).unwrap();
        let want: Vec<f64> = (0..M * N)
            .map(|k| if full[k] != 0 { 7.0 } else { xs[k] })
            .collect();
        let got = v.tensor.masked_fill(&full_mask, fill).to_vec();
        assert_eq!(
            got.iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
            want,
            "{}",
            what("masked_fill, full mask")
        );
        let got = full_mask.where_scalar(&v.tensor, fill).to_vec();
        let want: Vec<f64> = (0..M * N)
            .map(|k| if full[k] != 0 { xs[k] } else { 7.0 })
            .collect();
        assert_eq!(
            got.iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
            want,
            "{}",
            what("where_scalar")
        );
        for diagonal in [-2, -1, 0, 1, 3, 10] {
            for lower in [true, false] {
                let got = if lower {
                    v.tensor.tril(diagonal)
                } else {
                    v.tensor.triu(diagonal)
                };
                let want: Vec<f64> = (0..M * N)
                    .map(|k| {
                        let d = (k % N) as i64 - (k / N) as i64;
                        let keep = if lower { d <= diagonal } else { d >= diagonal };
                        if keep {
                            xs[k]
                        } else {
                            0.0
                        }
                    })
                    .collect();
                let got: Vec<f64> = got.to_vec().iter().map(|x| x.to_f64()).collect();
                assert_eq!(
                    got,
                    want,
                    "{} diagonal {diagonal}",
                    what(if lower { "tril" } else { "triu" })
                );
            }
        }
    }
}

fn masks_every_dtype<D: Device>() {
    masks_for::<f32, D>();
    masks_for::<f64, D>();
    masks_for::<f16, D>();
    masks_for::<bf16, D>();
    masks_for::<u8, D>();
    masks_for::<u32, D>();
    masks_for::<i8, D>();
    masks_for::<i32, D>();
    masks_for::<i64, D>();
    // A batch of matrices: each gets its triangle.
    let x = Tensor::<i64, Rank3<2, 2, 3>, D>::arange();
    assert_eq!(
        x.tril(0).to_array(),
        [[[0, 0, 0], [3, 4, 0]], [[6, 0, 0], [9, 10, 0]]]
    );
    assert_eq!(
        x.triu(1).to_array(),
        [[[0, 1, 2], [0, 0, 5]], [[0, 7, 8], [0, 0, 11]]]
    );
    // A causal attention mask: -inf above the diagonal.
    let scores = Tensor::<f32, Rank2<3, 3>, D>::zeros();
    let future = Tensor::<u8, Rank2<3, 3>, D>::ones().triu(1);
    let masked = scores
        .masked_fill(&future, f32::NEG_INFINITY)
        .softmax::<Axis<1>>();
    assert_eq!(masked.to_array()[0], [1.0, 0.0, 0.0]);
    assert_eq!(masked.to_array()[1], [0.5, 0.5, 0.0]);
}

fn one_hot_every_index_dtype<D: Device>() {
    let labels = Tensor::<u32, _, D>::from_array([3, 0, 1]);
    assert_eq!(
        labels.one_hot::<4, f32>().to_array(),
        [[0., 0., 0., 1.], [1., 0., 0., 0.], [0., 1., 0., 0.]]
    );
    assert_eq!(labels.one_hot::<4, u8>().to_array()[0], [0, 0, 0, 1]);
    // Strided indices (a transposed (2, 3) of i64): a (3, 2, 3) result.
    let idx = Tensor::<i64, _, D>::from_array([[0, 1, 2], [2, 2, 0]]).t();
    let got = idx.one_hot::<3, i64>();
    let want: Vec<i64> = [0, 2, 1, 2, 2, 0]
        .iter()
        .flat_map(|&c| (0..3).map(move |k| (k == c) as i64))
        .collect();
    assert_eq!(got.to_vec(), want);
    // Out of range, either side: an error naming the op, the index and the class count.
    let err = Tensor::<u32, _, D>::from_array([1, 4])
        .try_one_hot::<4, f32>()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        Tensor::<u32, _, D>::from_array([4])
            .try_one_hot::<4, f32>()
            .unwrap_err()
            .to_string()
    );
    assert!(
        err.to_string().contains("one_hot") && err.to_string().contains('4'),
        "{err}"
    );
    assert!(Tensor::<i64, _, D>::from_array([-1, 0])
        .try_one_hot::<2, f32>()
        .is_err());

    // On and off values: every element is one of the two, against the naive loop, on the strided indices.
    let got: Tensor<f64, Rank3<3, 2, 3>, D> = idx.one_hot_with(0.9, -0.05);
    let want: Vec<f64> = want
        .iter()
        .map(|&hit| if hit == 1 { 0.9 } else { -0.05 })
        .collect();
    assert_eq!(got.to_vec(), want);
    let got: Tensor<i64, Rank2<3, 4>, D> = labels.one_hot_with(-7, 5);
    assert_eq!(got.to_array()[0], [5, 5, 5, -7]);
    let nan = labels.one_hot_with::<4, f32>(f32::NAN, 0.0).to_vec();
    assert!(nan[3].is_nan() && nan[4].is_nan() && nan[9].is_nan());
    assert_eq!(nan.iter().filter(|v| v.is_nan()).count(), 3); // NaN only at the labels
    let err = Tensor::<u32, _, D>::from_array([5])
        .try_one_hot_with::<4, f32>(1.0, 0.5)
        .unwrap_err();
    assert!(err.to_string().contains("one_hot"), "{err}");
    let none = Tensor::<u32, Rank1<0>, D>::zeros().one_hot_with::<4, f32>(2.0, 1.0);
    assert_eq!(none.dims().to_vec(), [0, 4]);
}

/// clamp_tensor against `min(max(x, lo), hi)` per element, with a lower bound broadcast per column and a full
/// upper bound (some elements with `lo > hi`), on every view kind and dtype.
fn clamp_tensor_for<T: WithDType, D: Device>() {
    let lo_vals: Vec<f64> = (0..N).map(|j| (j % 3) as f64).collect();
    let hi_vals: Vec<f64> = (0..M * N).map(|k| 1.0 + (k % 5) as f64).collect();
    let lo = Tensor::<T, Rank1<N>, D>::from_vec(lo_vals.iter().map(|&v| T::from_f64(v)).collect())
        .unwrap();
    let hi =
        Tensor::<T, Mat, D>::from_vec(hi_vals.iter().map(|&v| T::from_f64(v)).collect()).unwrap();
    for v in views::<T, D>(83, 0.0, 6.0) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        let want: Vec<f64> = (0..M * N)
            .map(|k| xs[k].max(lo_vals[k % N]).min(hi_vals[k]))
            .collect();
        let got: Vec<f64> = v
            .tensor
            .clamp_tensor(&lo, &hi)
            .to_vec()
            .iter()
            .map(|x| x.to_f64())
            .collect();
        assert_eq!(got, want, "clamp_tensor of {} view [{}]", v.kind, T::DTYPE);
    }
}

fn clamp_tensor_every_dtype<D: Device>() {
    clamp_tensor_for::<f32, D>();
    clamp_tensor_for::<f64, D>();
    clamp_tensor_for::<f16, D>();
    clamp_tensor_for::<bf16, D>();
    clamp_tensor_for::<u8, D>();
    clamp_tensor_for::<u32, D>();
    clamp_tensor_for::<i8, D>();
    clamp_tensor_for::<i32, D>();
    clamp_tensor_for::<i64, D>();
}

device_tests! {
    clamp_with_tensor_bounds => clamp_tensor_every_dtype;
    masked_fill_where_scalar_and_triangles => masks_every_dtype;
    one_hot_every_index_dtype => one_hot_every_index_dtype;
}

embedded_tests! {
    clamp_with_tensor_bounds => clamp_tensor_every_dtype;
    masked_fill_where_scalar_and_triangles => masks_every_dtype;
    one_hot_every_index_dtype => one_hot_every_index_dtype;
}
