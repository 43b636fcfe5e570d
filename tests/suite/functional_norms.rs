//! The functional normalisations (`batch_norm`, `group_norm`, `instance_norm`, `layer_norm_affine`,
//! `rms_norm_affine`) on plain and traced values: values against naive loops written from PyTorch's formulas, on
//! strided views, in every float dtype; runtime channel dims, empty batches, a NaN kept in its own group or
//! channel, the panics' messages; gradients by finite differences.

use super::norm_layers::{
    channel_stats, norm_tol, normalise_groups, normalised, strided_input, to_f64,
};
use crate::common::*;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::prelude::*;

fn tensor<T: FloatDType, S: ConstShape, D: Device>(values: &[f64]) -> Tensor<T, S, D> {
    Tensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect()).unwrap()
}

/// Every functional norm on a strided `(4, 3, 2, 5)` input, plain and traced, against the naive references.
fn functional_norm_values<T: FloatDType, D: AutogradDevice>() {
    const DIMS: [usize; 3] = [4, 3, 10];
    let tol = norm_tol::<T>();
    let (x, xs) = strided_input::<T, D>(71);
    let (wv, bv) = ([0.5, -1.25, 2.0], [0.1, 0.0, -0.75]);
    let (w, b) = (tensor::<T, Rank1<3>, D>(&wv), tensor::<T, Rank1<3>, D>(&bv));

    let want = normalised(&xs, DIMS, &channel_stats(&xs, DIMS), (&wv, &bv), 1e-5);
    let got = x.batch_norm(None, Some(&w), Some(&b), 1e-5);
    assert_within("batch_norm, batch statistics", &got.to_vec(), &want, tol);
    let traced = Traced::constant(x.clone()).batch_norm(
        None,
        Some(&Traced::constant(w.clone())),
        Some(&Traced::constant(b.clone())),
        1e-5,
    );
    assert_within("traced batch_norm", &traced.value().to_vec(), &want, tol);

    let given = [(0.25, 2.0), (-1.0, 0.5), (0.0, 1.0)];
    let mean = tensor::<T, Rank1<3>, D>(&given.map(|s| s.0));
    let var = tensor::<T, Rank1<3>, D>(&given.map(|s| s.1));
    let want = normalised(&xs, DIMS, &given, (&wv, &bv), 1e-3);
    let got = x.batch_norm(Some((&mean, &var)), Some(&w), Some(&b), 1e-3);
    assert_within("batch_norm, given statistics", &got.to_vec(), &want, tol);
    let traced = Traced::constant(x.clone()).batch_norm(Some((&mean, &var)), None, None, 1e-3);
    let want = normalised(&xs, DIMS, &given, (&[1.0; 3], &[0.0; 3]), 1e-3);
    assert_within(
        "traced batch_norm, given",
        &traced.value().to_vec(),
        &want,
        tol,
    );

    // Instance norm: each (sample, channel) plane of 10 values its own group.
    let want = normalise_groups(
        &xs,
        12,
        |i| i / 10,
        Some((&wv, &bv, &|i| (i / 10) % 3)),
        1e-5,
    );
    let got = x.instance_norm(Some(&w), Some(&b), 1e-5);
    assert_within("instance_norm", &got.to_vec(), &want, tol);
    // One group of every channel: each sample's 30 values.
    let want = normalise_groups(&xs, 4, |i| i / 30, None, 1e-5);
    assert_within(
        "group_norm::<1>",
        &x.group_norm::<1>(None, None, 1e-5).to_vec(),
        &want,
        tol,
    );
    let got =
        Traced::constant(x.clone()).group_norm::<3>(None, Some(&Traced::constant(b.clone())), 1e-5);
    let want = normalise_groups(
        &xs,
        12,
        |i| i / 10,
        Some((&[1.0; 3], &bv, &|i| (i / 10) % 3)),
        1e-5,
    );
    assert_within("traced group_norm::<3>", &got.value().to_vec(), &want, tol);

    // Layer norm over the trailing (2, 5): each (sample, channel) row of 10, with a (2, 5) weight and bias.
    let lw: Vec<f64> = (0..10).map(|i| 0.5 + i as f64 / 10.0).collect();
    let lb: Vec<f64> = (0..10).map(|i| i as f64 / 20.0 - 0.2).collect();
    let (lwt, lbt) = (
        tensor::<T, Rank2<2, 5>, D>(&lw),
        tensor::<T, Rank2<2, 5>, D>(&lb),
    );
    let want = normalise_groups(&xs, 12, |i| i / 10, Some((&lw, &lb, &|i| i % 10)), 1e-5);
    let got = x.layer_norm_affine(Some(&lwt), Some(&lbt), 1e-5);
    assert_within("layer_norm_affine over (2, 5)", &got.to_vec(), &want, tol);
    let traced = Traced::constant(x.clone()).layer_norm_affine(
        Some(&Traced::constant(lwt.clone())),
        Some(&Traced::constant(lbt.clone())),
        1e-5,
    );
    assert_within(
        "traced layer_norm_affine",
        &traced.value().to_vec(),
        &want,
        tol,
    );

    // RMS norm over the last axis (5) with a weight.
    let rw = [1.0, 2.0, -0.5, 0.25, 3.0];
    let want = per_lane(&xs, &[4, 3, 2, 5], 3, |lane| {
        let rms = (lane.iter().map(|v| v * v).sum::<f64>() / 5.0 + 1e-5).sqrt();
        lane.iter().zip(&rw).map(|(v, w)| v / rms * w).collect()
    });
    let got = x.rms_norm_affine(Some(&tensor::<T, Rank1<5>, D>(&rw)), 1e-5);
    assert_within("rms_norm_affine", &got.to_vec(), &want, tol);
    let plain = x.rms_norm_affine::<Rank1<5>>(None, 1e-5);
    assert_within(
        "rms_norm_affine without weight",
        &plain.to_vec(),
        &to_f64(x.rms_norm::<Axis<3>>(1e-5).to_vec()),
        tol,
    );
}

fn functional_norm_values_f32<D: AutogradDevice>() {
    functional_norm_values::<f32, D>()
}
fn functional_norm_values_f64<D: AutogradDevice>() {
    functional_norm_values::<f64, D>()
}
fn functional_norm_values_f16<D: AutogradDevice>() {
    functional_norm_values::<f16, D>()
}
fn functional_norm_values_bf16<D: AutogradDevice>() {
    functional_norm_values::<bf16, D>()
}

device_tests! {
    functional_norm_values_f32 => functional_norm_values_f32;
    functional_norm_values_f64 => functional_norm_values_f64;
    functional_norm_values_f16 => functional_norm_values_f16;
    functional_norm_values_bf16 => functional_norm_values_bf16;
}

/// A runtime channel dim gives what the static one gives; a group count that does not divide it panics, naming
/// both numbers; so do too few values per channel for batch statistics.
#[test]
fn runtime_channels_and_bad_sizes() {
    let x: Tensor<f64, Rank3<2, 4, 3>, Cpu> = random(72);
    let runtime = x.reshape_with_shape((Const::<2>, 4usize, Const::<3>));
    let w =
        Tensor::<f64, (usize,), Cpu>::from_vec_with_shape((4,), vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    let wc = Tensor::<f64, Rank1<4>, Cpu>::from_array([1.0, 2.0, 3.0, 4.0]);
    assert_eq!(
        runtime.group_norm::<2>(Some(&w), None, 1e-5).to_vec(),
        x.group_norm::<2>(Some(&wc), None, 1e-5).to_vec()
    );
    assert_eq!(
        runtime.batch_norm(None, Some(&w), Some(&w), 1e-5).to_vec(),
        x.batch_norm(None, Some(&wc), Some(&wc), 1e-5).to_vec()
    );
    let message = panic_message(|| runtime.group_norm::<3>(None, None, 1e-5));
    assert_eq!(
        message,
        "group_norm: 3 groups do not divide 4 channels; the group count must be a divisor of the channel count"
    );
    let one = Tensor::<f64, Rank3<1, 4, 1>, Cpu>::ones();
    let message = panic_message(|| one.batch_norm(None, None, None, 1e-5));
    assert_eq!(
        message,
        "batch_norm: expected more than 1 value(s) per channel when training, got 1 (input of 4 elements over 4 \
         channels)"
    );
    // With given statistics one value per channel is enough.
    let (m, v) = (Tensor::zeros(), Tensor::ones());
    assert_eq!(
        one.batch_norm(Some((&m, &v)), None, None, 0.0).to_vec(),
        [1.0; 4]
    );
}

/// No elements: the per-sample norms give an empty result (even with a huge runtime axis), batch statistics
/// panic as PyTorch's do (no value per channel).
#[test]
fn empty_inputs() {
    let x = Tensor::<f32, Rank3<0, 4, 3>, Cpu>::zeros();
    assert_eq!(
        x.group_norm::<2>(None, None, 1e-5).dims().to_vec(),
        [0, 4, 3]
    );
    assert_eq!(x.instance_norm(None, None, 1e-5).dims().to_vec(), [0, 4, 3]);
    let huge = Tensor::<f32, (usize, Const<4>, usize), Cpu>::zeros_with_shape((0, Const, 1 << 40));
    assert_eq!(huge.group_norm::<4>(None, None, 1e-5).numel(), 0);
    let wide = Tensor::<f32, (Const<0>, usize), Cpu>::zeros_with_shape((Const, 1 << 40));
    let normed = wide.layer_norm_affine::<(usize,)>(None, None, 1e-5);
    assert_eq!(normed.dims().to_vec(), [0, 1 << 40]);
    let message = panic_message(|| x.batch_norm(None, None, None, 1e-5));
    assert!(message.contains("got 0"), "{message}");
}

/// A NaN spoils its own group (group and instance norm) or channel (batch norm), nothing else.
#[test]
fn nan_stays_in_its_group() {
    let mut values = random::<f32, Rank3<2, 4, 3>, Cpu>(73).to_vec();
    values[0] = f32::NAN; // sample 0, channel 0
    let x = Tensor::<f32, Rank3<2, 4, 3>, Cpu>::from_vec(values).unwrap();
    let nan_at = |y: Vec<f32>| -> Vec<usize> { (0..y.len()).filter(|&i| y[i].is_nan()).collect() };
    assert_eq!(
        nan_at(x.group_norm::<2>(None, None, 1e-5).to_vec()),
        (0..6).collect::<Vec<_>>()
    );
    assert_eq!(
        nan_at(x.instance_norm(None, None, 1e-5).to_vec()),
        [0, 1, 2]
    );
    let per_channel = nan_at(x.batch_norm(None, None, None, 1e-5).to_vec());
    assert_eq!(per_channel, [0, 1, 2, 12, 13, 14]);
    let rows = nan_at(x.layer_norm_affine::<Rank1<3>>(None, None, 1e-5).to_vec());
    assert_eq!(rows, [0, 1, 2]);
}

/// Gradients of the input and of the weight and bias, by central finite differences.
#[test]
fn functional_gradients_match_finite_differences() {
    let x = Var::new(random::<f64, Rank3<3, 4, 5>, Cpu>(74));
    let w = Var::new(random::<f64, Rank1<4>, Cpu>(75).affine(0.5, 1.0));
    let b = Var::new(random::<f64, Rank1<4>, Cpu>(76));
    let probe: Tensor<f64, Rank3<3, 4, 5>, Cpu> = random(77);
    let (mean, var) = (
        random::<f64, Rank1<4>, Cpu>(78),
        random::<f64, Rank1<4>, Cpu>(79).affine(0.2, 1.0),
    );
    type Norm<'a> = &'a dyn Fn(
        &Traced<f64, Rank3<3, 4, 5>, Cpu>,
        &Traced<f64, Rank1<4>, Cpu>,
        &Traced<f64, Rank1<4>, Cpu>,
    ) -> Traced<f64, Rank3<3, 4, 5>, Cpu>;
    let norms: [(&str, Norm); 4] = [
        ("batch_norm, batch statistics", &|x, w, b| {
            x.batch_norm(None, Some(w), Some(b), 1e-5)
        }),
        ("batch_norm, given statistics", &|x, w, b| {
            x.batch_norm(Some((&mean, &var)), Some(w), Some(b), 1e-5)
        }),
        ("group_norm::<2>", &|x, w, b| {
            x.group_norm::<2>(Some(w), Some(b), 1e-5)
        }),
        ("instance_norm", &|x, w, b| {
            x.instance_norm(Some(w), Some(b), 1e-5)
        }),
    ];
    for (what, norm) in norms {
        let loss = || (norm(&x.trace(), &w.trace(), &b.trace()) * &probe).sum_all();
        for (part, check) in [
            ("input", check_gradient(&x, 1e-5, loss)),
            ("weight", check_gradient(&w, 1e-5, loss)),
            ("bias", check_gradient(&b, 1e-5, loss)),
        ] {
            assert!(check.error < 1e-7, "{what}, {part}: {check:?}");
        }
    }
    let lw = Var::new(random::<f64, Rank2<4, 5>, Cpu>(80));
    let lb = Var::new(random::<f64, Rank2<4, 5>, Cpu>(81));
    let loss = || {
        (x.trace()
            .layer_norm_affine(Some(&lw.trace()), Some(&lb.trace()), 1e-5)
            * &probe)
            .sum_all()
    };
    for check in [
        check_gradient(&x, 1e-5, loss),
        check_gradient(&lw, 1e-5, loss),
        check_gradient(&lb, 1e-5, loss),
    ] {
        assert!(check.error < 1e-7, "layer_norm_affine: {check:?}");
    }
    let rw = Var::new(random::<f64, Rank1<5>, Cpu>(82));
    let loss = || (x.trace().rms_norm_affine(Some(&rw.trace()), 1e-5) * &probe).sum_all();
    for check in [
        check_gradient(&x, 1e-5, loss),
        check_gradient(&rw, 1e-5, loss),
    ] {
        assert!(check.error < 1e-7, "rms_norm_affine: {check:?}");
    }
}
