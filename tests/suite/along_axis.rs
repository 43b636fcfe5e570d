//! softmax, log_softmax, layer_norm, rms_norm along each axis of strided views, for every float dtype, against
//! f64 references; a large tensor takes the threaded path.

use crate::common::{per_lane, tolerance, views, Mat, M, N};
use typed_tensor::prelude::*;
use typed_tensor::shape::HasAxis;

type LaneFn = fn(&[f64]) -> Vec<f64>;

fn softmax(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::MIN, f64::max);
    let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
    x.iter().map(|v| (v - m).exp() / s).collect()
}
fn log_softmax(x: &[f64]) -> Vec<f64> {
    let m = x.iter().cloned().fold(f64::MIN, f64::max);
    let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
    x.iter().map(|v| v - m - s.ln()).collect()
}
fn layer_norm(x: &[f64]) -> Vec<f64> {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    x.iter().map(|v| (v - mean) / (var + 1e-5).sqrt()).collect()
}
fn rms_norm(x: &[f64]) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    x.iter().map(|v| v / (ms + 1e-6).sqrt()).collect()
}

fn check_axis<T: FloatDType, D: Device, Ax>(axis: usize)
where
    Mat: HasAxis<Ax>,
{
    type Op<T, D> = fn(&Tensor<T, Mat, D>) -> Tensor<T, Mat, D>;
    let cases: [(&str, Op<T, D>, LaneFn); 4] = [
        ("softmax", |t| t.softmax::<Ax>(), softmax),
        ("log_softmax", |t| t.log_softmax::<Ax>(), log_softmax),
        ("layer_norm", |t| t.layer_norm::<Ax>(1e-5), layer_norm),
        ("rms_norm", |t| t.rms_norm::<Ax>(1e-6), rms_norm),
    ];
    for v in views::<T, D>(51, -4.0, 4.0) {
        let xs: Vec<f64> = v.expected.iter().map(|x| x.to_f64()).collect();
        for (name, op, f) in cases {
            let want = per_lane(&xs, &[M, N], axis, f);
            assert_close(
                &format!("{name} along axis {axis} of {} view", v.kind),
                &op(&v.tensor).to_vec(),
                &want,
            );
        }
    }
}

fn every_dtype_both_axes<D: Device>() {
    fn both<T: FloatDType, D: Device>() {
        check_axis::<T, D, Axis<0>>(0);
        check_axis::<T, D, Axis<1>>(1);
    }
    both::<f32, D>();
    both::<f64, D>();
    both::<f16, D>();
    both::<bf16, D>();
}

fn rank3_large_and_edge_cases<D: Device>() {
    // The middle axis of a rank-3 tensor.
    let x = Tensor::<f64, Rank3<2, 3, 4>, D>::randn(3);
    let want = per_lane(&x.to_vec(), &[2, 3, 4], 1, softmax);
    assert_close(
        "softmax along axis 1 of rank 3",
        &x.softmax::<Axis<1>>().to_vec(),
        &want,
    );
    // Large enough for the threaded path (lanes along the last axis), on a transposed view.
    let big = Tensor::<f32, Rank2<300, 256>, D>::randn(4);
    let t = big.t(); // (256, 300), lanes strided by 256
    let want = per_lane(&values(&t.to_vec()), &[256, 300], 1, log_softmax);
    assert_close(
        "log_softmax of a large transposed view",
        &t.log_softmax::<Axis<1>>().to_vec(),
        &want,
    );
    let want = per_lane(&values(&big.to_vec()), &[300, 256], 1, layer_norm);
    assert_close(
        "layer_norm of a large tensor",
        &big.layer_norm::<Axis<1>>(1e-5).to_vec(),
        &want,
    );
    // Large inputs do not overflow; -inf entries get probability 0; NaN poisons its lane only.
    let x =
        Tensor::<f32, _, D>::from_array([[1000., 1001.], [f32::NEG_INFINITY, 0.], [f32::NAN, 1.]]);
    let p = x.softmax::<Axis<1>>().to_vec();
    assert!(
        (p[0] - 0.268_941_43).abs() < 1e-6 && (p[1] - 0.731_058_6).abs() < 1e-6,
        "{p:?}"
    );
    assert_eq!(&p[2..4], &[0.0, 1.0]);
    assert!(p[4].is_nan() && p[5].is_nan());
    let l = x.log_softmax::<Axis<1>>().to_vec();
    assert_eq!(l[2], f32::NEG_INFINITY);
    assert!(l[3].abs() < 1e-7);
    // Known values (PyTorch): F.layer_norm(torch.tensor([1., 2., 3.]), (3,)) = [-1.2247, 0., 1.2247]
    let ln = Tensor::<f32, _, D>::from_array([1., 2., 3.])
        .layer_norm::<Axis<0>>(1e-5)
        .to_vec();
    assert!(
        (ln[0] + 1.224_742_3).abs() < 1e-5
            && ln[1].abs() < 1e-7
            && (ln[2] - 1.224_742_3).abs() < 1e-5
    );
}

/// Layer norm takes its moments about the lane's first element on every device: a constant lane normalises to
/// exact zeros whatever the summation order (about its mean, the rounded mean leaves deviations of an ulp, which
/// eps then scales up), and a lane far from zero keeps the precision of its spread, not of its mean.
fn constant_and_offset_lanes<T: FloatDType, D: Device>() {
    let c = T::from_f64(0.1);
    for (what, got) in [
        (
            "tiny static lane",
            Tensor::<T, Rank2<1, 4>, D>::full(c)
                .layer_norm::<Axis<1>>(1e-5)
                .to_vec(),
        ),
        (
            "kernel lanes",
            Tensor::<T, Rank2<3, 40>, D>::full(c)
                .layer_norm::<Axis<1>>(1e-5)
                .to_vec(),
        ),
        (
            "kernel lanes along axis 0",
            Tensor::<T, Rank2<40, 3>, D>::full(c)
                .layer_norm::<Axis<0>>(1e-5)
                .to_vec(),
        ),
    ] {
        assert!(
            got.iter().all(|y| y.to_f64() == 0.0),
            "layer_norm of a constant {what} [{}]: {got:?}",
            T::DTYPE
        );
    }
    // 1e4 + 0.01 k: in f32 the spread is ~100 ulps of the mean, so the mean's rounding would dominate.
    if T::DTYPE == DType::F32 || T::DTYPE == DType::F64 {
        let x = Tensor::<T, Rank2<2, 40>, D>::arange().affine(0.01, 1e4);
        // The reference gets the (exact) deviations from 1e4: layer norm does not move with a shift, and its
        // f64 sums over values near 1e4 would be the least precise thing here.
        let shifted: Vec<f64> = x.to_vec().iter().map(|v| v.to_f64() - 1e4).collect();
        let want = per_lane(&shifted, &[2, 40], 1, layer_norm);
        assert_close(
            "layer_norm of lanes far from zero",
            &x.layer_norm::<Axis<1>>(1e-5).to_vec(),
            &want,
        );
    }
}

fn constant_and_offset_lanes_every_dtype<D: Device>() {
    constant_and_offset_lanes::<f32, D>();
    constant_and_offset_lanes::<f64, D>();
    constant_and_offset_lanes::<f16, D>();
    constant_and_offset_lanes::<bf16, D>();
}

/// Outputs here are differences of O(1..10) quantities (x - max - ln sum, x - mean), so the error bound scales
/// with the inputs' magnitude, not the (possibly tiny) output.
fn assert_close<T: WithDType>(what: &str, got: &[T], want: &[f64]) {
    let tol = tolerance::<T>() * 2.0;
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - w).abs() <= tol * (w.abs() + 8.0),
            "{what} [{}] element {i}: got {g}, want {w}",
            T::DTYPE
        );
    }
}

fn values(t: &[f32]) -> Vec<f64> {
    t.iter().map(|&x| x as f64).collect()
}

device_tests! {
    softmax_and_norms_every_dtype_both_axes => every_dtype_both_axes;
    softmax_and_norms_rank3_large_and_edge_cases => rank3_large_and_edge_cases;
    layer_norm_constant_and_offset_lanes => constant_and_offset_lanes_every_dtype;
}

embedded_tests! {
    softmax_and_norms_every_dtype_both_axes => every_dtype_both_axes;
    softmax_and_norms_rank3_large_and_edge_cases => rank3_large_and_edge_cases;
    layer_norm_constant_and_offset_lanes => constant_and_offset_lanes_every_dtype;
}

/// CUDA runs the host devices' formulas with another summation order (a block's threads, then a tree), so its
/// results agree with the CPU's to rounding: within 64 units in the last place of `max(|y|, 1)`, in f32 and f64,
/// over lanes of 1000 elements (both axes, so strided lanes too).
#[cfg(feature = "cuda")]
mod cuda_against_cpu {
    use typed_tensor::device::Cuda;
    use typed_tensor::ops::AlongAxis;
    use typed_tensor::prelude::*;
    use typed_tensor::shape::HasAxis;

    fn along<T: FloatDType, D: Device, A, const R: usize, const C: usize>(
        x: &Tensor<T, Rank2<R, C>, D>,
        op: AlongAxis,
    ) -> Vec<f64>
    where
        Rank2<R, C>: HasAxis<A>,
    {
        let y = match op {
            AlongAxis::Softmax => x.softmax::<A>(),
            AlongAxis::LogSoftmax => x.log_softmax::<A>(),
            AlongAxis::LayerNorm { eps } => x.layer_norm::<A>(eps),
            AlongAxis::RmsNorm { eps } => x.rms_norm::<A>(eps),
        };
        y.to_vec().iter().map(|v| v.to_f64()).collect()
    }

    /// Every op along both axes of an (R, C) tensor, on the CPU and the GPU, within `64 ulp`.
    fn agree_on<T: FloatDType, const R: usize, const C: usize>(ulp: f64) {
        let cpu = Tensor::<T, Rank2<R, C>, Cpu>::randn(11).affine(3.0, 0.5);
        let gpu = cpu.to_device::<Cuda>().unwrap();
        for op in [
            AlongAxis::Softmax,
            AlongAxis::LogSoftmax,
            AlongAxis::LayerNorm { eps: 1e-5 },
            AlongAxis::RmsNorm { eps: 1e-6 },
        ] {
            for (axis, c, g) in [
                (
                    0,
                    along::<T, _, Axis<0>, R, C>(&cpu, op),
                    along::<T, _, Axis<0>, R, C>(&gpu, op),
                ),
                (
                    1,
                    along::<T, _, Axis<1>, R, C>(&cpu, op),
                    along::<T, _, Axis<1>, R, C>(&gpu, op),
                ),
            ] {
                for (i, (c, g)) in c.iter().zip(&g).enumerate() {
                    assert!(
                        (c - g).abs() <= 64.0 * ulp * c.abs().max(1.0),
                        "{op:?} [{}] ({R}, {C}) axis {axis} element {i}: cpu {c}, cuda {g}",
                        T::DTYPE
                    );
                }
            }
        }
    }

    fn agree<T: FloatDType>(ulp: f64) {
        agree_on::<T, 6, 1000>(ulp);
    }

    /// The GPU keeps a lane in shared memory when it fits in 47 KB and reads it again from global memory when
    /// not: lanes on both sides of that size give the CPU's results, dense ones (read 16 bytes at a time) and
    /// lanes of a length that is no whole number of 16-byte vectors.
    #[test]
    fn lanes_in_and_past_shared_memory_agree_with_the_cpu() {
        if let Err(e) = Cuda::init() {
            eprintln!("skipped lanes_in_and_past_shared_memory_agree_with_the_cpu on cuda: {e}");
            return;
        }
        agree_on::<f32, 2, 12032>(f32::EPSILON as f64); // 47 KB: kept
        agree_on::<f32, 2, 12033>(f32::EPSILON as f64); // 4 bytes past: read again
        agree_on::<f64, 2, 6016>(f64::EPSILON); // 47 KB
        agree_on::<f64, 2, 7000>(f64::EPSILON);
        agree_on::<f16, 3, 4098>(f16::EPSILON.to_f64()); // 8 KB, no whole number of 8-element vectors
    }

    #[test]
    fn softmax_and_norms_agree_with_the_cpu() {
        if let Err(e) = Cuda::init() {
            eprintln!("skipped softmax_and_norms_agree_with_the_cpu on cuda: {e}");
            return;
        }
        agree::<f64>(f64::EPSILON);
        agree::<f32>(f32::EPSILON as f64);
    }
}
