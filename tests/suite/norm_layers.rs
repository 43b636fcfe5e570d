//! Normalisation layers with batch or group statistics: BatchNorm in training and evaluation modes (values,
//! running statistics, `num_batches_tracked`, every configuration), the model-wide mode walk, buffers in
//! save/load and out of the optimizers; GroupNorm, InstanceNorm and LayerNorm over several axes; gradients by
//! finite differences. References are naive loops over the elements, written from PyTorch's documented
//! formulas.

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Traced, Var};
use typed_tensor::nn::{
    BatchNorm, BatchNorm1d, BatchNorm2d, BatchNormConfig, Buffer, Dropout, GroupNorm,
    InstanceNorm1d, InstanceNorm2d, LayerNormOver, Linear, Mode, Module, ParamVisitor, Parameters,
    TrainingFlag,
};
use typed_tensor::prelude::*;

/// Per-channel `(mean, population variance)` of an `(n, c, inner)` NCHW-ordered buffer.
pub(crate) fn channel_stats(x: &[f64], [n, c, inner]: [usize; 3]) -> Vec<(f64, f64)> {
    (0..c)
        .map(|ch| {
            let values: Vec<f64> = (0..n)
                .flat_map(|b| (0..inner).map(move |s| (b * c + ch) * inner + s))
                .map(|i| x[i])
                .collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
            (mean, var)
        })
        .collect()
}

/// `(x - mean) / sqrt(var + eps) * w + b` per channel of an `(n, c, inner)` buffer.
pub(crate) fn normalised(
    x: &[f64],
    [n, c, inner]: [usize; 3],
    stats: &[(f64, f64)],
    (w, b): (&[f64], &[f64]),
    eps: f64,
) -> Vec<f64> {
    (0..n * c * inner)
        .map(|i| {
            let ch = (i / inner) % c;
            let (mean, var) = stats[ch];
            (x[i] - mean) / (var + eps).sqrt() * w[ch] + b[ch]
        })
        .collect()
}

pub(crate) fn to_f64<T: WithDType>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(|x| x.to_f64()).collect()
}

/// Relative tolerance for a normalised value in `T` (a reduction, a square root and a few products).
pub(crate) fn norm_tol<T: WithDType>() -> f64 {
    match T::DTYPE {
        DType::F16 => 1e-2,
        DType::BF16 => 5e-2,
        DType::F32 => 1e-5,
        _ => 1e-11,
    }
}

/// A `(4, 3, 2, 5)` input as a strided view (a permuted `(4, 2, 5, 3)` buffer), with its NCHW elements.
pub(crate) fn strided_input<T: FloatDType, D: Device>(
    seed: u64,
) -> (Tensor<T, Rank4<4, 3, 2, 5>, D>, Vec<f64>) {
    let src: Tensor<T, Rank4<4, 2, 5, 3>, D> = random::<T, _, D>(seed).affine(3.0, 0.5);
    let x = src.permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>();
    let values = to_f64(x.to_vec());
    (x, values)
}

/// BatchNorm2d in training mode: the batch's statistics, the running ones blended with momentum 0.1 (unbiased
/// variance), `num_batches_tracked` counted; in evaluation mode and on plain tensors, the running statistics.
fn batch_norm_2d_modes<T: FloatDType, D: AutogradDevice>() {
    const DIMS: [usize; 3] = [4, 3, 10];
    let bn = BatchNorm2d::<T, 3, D>::new();
    let w = [0.5, -1.25, 2.0];
    let b = [0.1, 0.0, -0.75];
    let weight = bn.weight.as_ref().unwrap();
    weight.set(Tensor::from_vec(w.iter().map(|&v| T::from_f64(v)).collect()).unwrap());
    let bias = bn.bias.as_ref().unwrap();
    bias.set(Tensor::from_vec(b.iter().map(|&v| T::from_f64(v)).collect()).unwrap());
    let eps = 1e-5;
    let tol = norm_tol::<T>();

    let (mut running_mean, mut running_var) = (vec![0.0; 3], vec![1.0; 3]);
    for step in 0..2u64 {
        let (x, xs) = strided_input::<T, D>(10 + step);
        let stats = channel_stats(&xs, DIMS);
        let y = bn.forward(Traced::constant(x)).into_value();
        let want = normalised(&xs, DIMS, &stats, (&w, &b), eps);
        assert_within("batch norm, training", &y.to_vec(), &want, tol);
        for (ch, (m, v)) in stats.iter().enumerate() {
            running_mean[ch] = 0.9 * running_mean[ch] + 0.1 * m;
            running_var[ch] = 0.9 * running_var[ch] + 0.1 * v * 40.0 / 39.0;
        }
    }
    let running = bn.running.as_ref().unwrap();
    assert_within(
        "running_mean",
        &running.mean.value().to_vec(),
        &running_mean,
        tol,
    );
    assert_within(
        "running_var",
        &running.var.value().to_vec(),
        &running_var,
        tol,
    );
    assert_eq!(running.num_batches_tracked.value().to_scalar(), 2);

    // Plain tensors are inference whatever the mode: the running statistics, and nothing is tracked.
    let (x, xs) = strided_input::<T, D>(20);
    let stats: Vec<(f64, f64)> = running_mean
        .iter()
        .copied()
        .zip(running_var.iter().copied())
        .collect();
    let want = normalised(&xs, DIMS, &stats, (&w, &b), eps);
    assert_within(
        "batch norm, plain tensor",
        &bn.forward(x.clone()).to_vec(),
        &want,
        tol,
    );
    bn.eval();
    assert_eq!(bn.mode(), Some(Mode::Evaluation));
    let y = bn.forward(Traced::constant(x)).into_value();
    assert_within("batch norm, evaluation", &y.to_vec(), &want, tol);
    assert_eq!(running.num_batches_tracked.value().to_scalar(), 2);
    assert_within(
        "running_mean after evaluation",
        &running.mean.value().to_vec(),
        &running_mean,
        tol,
    );
}

/// `(N, C)` and `(N, C, L)` inputs, contiguous and strided.
fn batch_norm_1d_ranks<T: FloatDType, D: AutogradDevice>() {
    let tol = norm_tol::<T>();
    let ones = [1.0; 5];
    let zeros = [0.0; 5];
    let bn = BatchNorm1d::<T, 5, D>::new();
    // (6, 5) as the transpose of a (5, 6) buffer.
    let x: Tensor<T, Rank2<6, 5>, D> = random::<T, Rank2<5, 6>, D>(3).t();
    let xs = to_f64(x.to_vec());
    let stats = channel_stats(&xs, [6, 5, 1]);
    let y = bn.forward(Traced::constant(x)).into_value();
    let want = normalised(&xs, [6, 5, 1], &stats, (&ones, &zeros), 1e-5);
    assert_within("batch norm 1d (N, C)", &y.to_vec(), &want, tol);
    // (3, 5, 4): the statistics run over N and L.
    let x: Tensor<T, Rank3<3, 5, 4>, D> = random(4);
    let xs = to_f64(x.to_vec());
    let stats = channel_stats(&xs, [3, 5, 4]);
    let y = bn.forward(Traced::constant(x)).into_value();
    let want = normalised(&xs, [3, 5, 4], &stats, (&ones, &zeros), 1e-5);
    assert_within("batch norm 1d (N, C, L)", &y.to_vec(), &want, tol);
    let running = bn.running.as_ref().unwrap();
    assert_eq!(running.num_batches_tracked.value().to_scalar(), 2);
}

/// Per-channel weight and bias, and the channel of each element.
pub(crate) type Affine<'a> = (&'a [f64], &'a [f64], &'a dyn Fn(usize) -> usize);

/// Normalises `x` within each group (`group_of(i)` of `groups`), population variance, then `* w + b` with
/// `channel_of(i)` picking the parameters.
pub(crate) fn normalise_groups(
    x: &[f64],
    groups: usize,
    group_of: impl Fn(usize) -> usize,
    affine: Option<Affine<'_>>,
    eps: f64,
) -> Vec<f64> {
    let mut stats = vec![(0.0, 0.0, 0usize); groups];
    for (i, &v) in x.iter().enumerate() {
        let s = &mut stats[group_of(i)];
        s.0 += v;
        s.2 += 1;
    }
    for s in &mut stats {
        s.0 /= s.2 as f64;
    }
    for (i, &v) in x.iter().enumerate() {
        let s = &mut stats[group_of(i)];
        s.1 += (v - s.0).powi(2) / s.2 as f64;
    }
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            let (mean, var, _) = stats[group_of(i)];
            let y = (v - mean) / (var + eps).sqrt();
            match affine {
                Some((w, b, channel_of)) => y * w[channel_of(i)] + b[channel_of(i)],
                None => y,
            }
        })
        .collect()
}

fn set_param<T: FloatDType, D: Device, const C: usize>(
    var: &Option<Var<T, (Const<C>,), D>>,
    values: &[f64],
) {
    let var = var.as_ref().expect("an affine layer");
    var.set(Tensor::from_vec(values.iter().map(|&v| T::from_f64(v)).collect()).unwrap());
}

/// GroupNorm: groups of `C / G` channels per sample, over every rank it takes, plain and traced alike; the
/// input a strided view.
fn group_norm_values<T: FloatDType, D: AutogradDevice>() {
    let tol = norm_tol::<T>();
    let gn = GroupNorm::<T, 2, 6, D>::new();
    let (w, b) = (
        [0.5, 1.5, -1.0, 2.0, 0.25, 1.0],
        [0.0, 0.1, 0.2, -0.3, 0.4, 0.5],
    );
    set_param(&gn.weight, &w);
    set_param(&gn.bias, &b);
    // (3, 6, 2, 2) from a permuted (3, 2, 2, 6) buffer: element (n, c, h, w) at NCHW index i.
    let src: Tensor<T, Rank4<3, 2, 2, 6>, D> = random::<T, _, D>(50).affine(2.0, 1.0);
    let x = src.permute::<(Axis<0>, Axis<3>, Axis<1>, Axis<2>)>();
    let xs = to_f64(x.to_vec());
    let channel = |i: usize| (i / 4) % 6;
    let want = normalise_groups(
        &xs,
        6,
        |i| (i / 4 / 6) * 2 + channel(i) / 3,
        Some((&w, &b, &channel)),
        1e-5,
    );
    assert_within(
        "group norm (N, C, H, W)",
        &gn.forward(x.clone()).to_vec(),
        &want,
        tol,
    );
    let traced = gn.forward(Traced::constant(x)).into_value();
    assert_within("group norm, traced", &traced.to_vec(), &want, tol);
    // (4, 6): groups of 3 channels, one position each.
    let x: Tensor<T, Rank2<4, 6>, D> = random(51);
    let xs = to_f64(x.to_vec());
    let channel = |i: usize| i % 6;
    let want = normalise_groups(&xs, 8, |i| i / 3, Some((&w, &b, &channel)), 1e-5);
    assert_within("group norm (N, C)", &gn.forward(x).to_vec(), &want, tol);
    // (2, 6, 5).
    let x: Tensor<T, Rank3<2, 6, 5>, D> = random(52);
    let xs = to_f64(x.to_vec());
    let channel = |i: usize| (i / 5) % 6;
    let want = normalise_groups(
        &xs,
        4,
        |i| (i / 5 / 6) * 2 + channel(i) / 3,
        Some((&w, &b, &channel)),
        1e-5,
    );
    assert_within("group norm (N, C, L)", &gn.forward(x).to_vec(), &want, tol);
}

/// InstanceNorm: each (sample, channel) plane on its own, no parameters by default.
fn instance_norm_values<T: FloatDType, D: AutogradDevice>() {
    let tol = norm_tol::<T>();
    let norm = InstanceNorm2d::<T, 3, D>::new();
    let x: Tensor<T, Rank4<2, 3, 3, 2>, D> =
        random::<T, Rank4<2, 3, 2, 3>, D>(53).transpose::<Axis<2>, Axis<3>>();
    let xs = to_f64(x.to_vec());
    let want = normalise_groups(&xs, 6, |i| i / 6, None, 1e-5);
    assert_within(
        "instance norm 2d",
        &norm.forward(x.clone()).to_vec(),
        &want,
        tol,
    );
    assert_within(
        "instance norm 2d, traced",
        &norm.forward(Traced::constant(x)).into_value().to_vec(),
        &want,
        tol,
    );
    let affine = InstanceNorm1d::<T, 3, D>::with_options(1e-5, true);
    let (w, b) = ([2.0, -1.0, 0.5], [1.0, 0.0, -1.0]);
    set_param(&affine.weight, &w);
    set_param(&affine.bias, &b);
    let x: Tensor<T, Rank3<2, 3, 4>, D> = random(54);
    let xs = to_f64(x.to_vec());
    let channel = |i: usize| (i / 4) % 3;
    let want = normalise_groups(&xs, 6, |i| i / 4, Some((&w, &b, &channel)), 1e-5);
    assert_within(
        "instance norm 1d, affine",
        &affine.forward(x).to_vec(),
        &want,
        tol,
    );
}

/// LayerNorm over two and three trailing axes: each sample's block normalised as a whole, then the
/// elementwise weight and bias of the block's shape.
fn layer_norm_over_values<T: FloatDType, D: AutogradDevice>() {
    let tol = norm_tol::<T>();
    let norm = LayerNormOver::<T, Rank2<3, 4>, D>::new(1e-5);
    let w: Vec<f64> = (0..12).map(|i| 0.5 + i as f64 * 0.1).collect();
    let b: Vec<f64> = (0..12).map(|i| i as f64 * -0.05).collect();
    norm.weight
        .set(Tensor::from_vec(w.iter().map(|&v| T::from_f64(v)).collect()).unwrap());
    norm.bias
        .set(Tensor::from_vec(b.iter().map(|&v| T::from_f64(v)).collect()).unwrap());
    let block = |i: usize| i % 12;
    let x: Tensor<T, Rank3<2, 3, 4>, D> = random(55);
    let xs = to_f64(x.to_vec());
    let want = normalise_groups(&xs, 2, |i| i / 12, Some((&w, &b, &block)), 1e-5);
    assert_within(
        "layer norm over (3, 4)",
        &norm.forward(x.clone()).to_vec(),
        &want,
        tol,
    );
    assert_within(
        "layer norm over (3, 4), traced",
        &norm.forward(Traced::constant(x)).into_value().to_vec(),
        &want,
        tol,
    );
    // (2, 5, 3, 4) as a strided view: 10 blocks.
    let x: Tensor<T, Rank4<2, 5, 3, 4>, D> =
        random::<T, Rank4<5, 2, 3, 4>, D>(56).transpose::<Axis<0>, Axis<1>>();
    let xs = to_f64(x.to_vec());
    let want = normalise_groups(&xs, 10, |i| i / 12, Some((&w, &b, &block)), 1e-5);
    assert_within(
        "layer norm over (3, 4), rank 4",
        &norm.forward(x).to_vec(),
        &want,
        tol,
    );
    let cube = LayerNormOver::<T, Rank3<2, 3, 2>, D>::new(1e-5);
    let x: Tensor<T, Rank4<3, 2, 3, 2>, D> = random(57);
    let xs = to_f64(x.to_vec());
    let want = normalise_groups(&xs, 3, |i| i / 12, None, 1e-5);
    assert_within(
        "layer norm over (2, 3, 2)",
        &cube.forward(x).to_vec(),
        &want,
        tol,
    );
}

device_tests! {
    group_norm_values_f32 => group_norm_values_f32;
    group_norm_values_bf16 => group_norm_values_bf16;
    instance_norm_values_f64 => instance_norm_values_f64;
    instance_norm_values_f16 => instance_norm_values_f16;
    layer_norm_over_values_f32 => layer_norm_over_values_f32;
    layer_norm_over_values_f64 => layer_norm_over_values_f64;
    batch_norm_2d_modes_f32 => batch_norm_2d_modes_f32;
    batch_norm_2d_modes_f64 => batch_norm_2d_modes_f64;
    batch_norm_2d_modes_bf16 => batch_norm_2d_modes_bf16;
    batch_norm_1d_ranks_f32 => batch_norm_1d_ranks_f32;
    batch_norm_1d_ranks_f16 => batch_norm_1d_ranks_f16;
    batch_norm_1d_ranks_f64 => batch_norm_1d_ranks_f64;
}

fn group_norm_values_f32<D: AutogradDevice>() {
    group_norm_values::<f32, D>()
}
fn group_norm_values_bf16<D: AutogradDevice>() {
    group_norm_values::<bf16, D>()
}
fn instance_norm_values_f64<D: AutogradDevice>() {
    instance_norm_values::<f64, D>()
}
fn instance_norm_values_f16<D: AutogradDevice>() {
    instance_norm_values::<f16, D>()
}
fn layer_norm_over_values_f32<D: AutogradDevice>() {
    layer_norm_over_values::<f32, D>()
}
fn layer_norm_over_values_f64<D: AutogradDevice>() {
    layer_norm_over_values::<f64, D>()
}

/// Gradients of the input and the affine parameters of the group-statistics layers, by finite differences.
#[test]
fn group_statistics_gradients_match_finite_differences() {
    let x = Var::new(random::<f64, Rank4<2, 4, 2, 3>, Cpu>(60));
    let probe: Tensor<f64, Rank4<2, 4, 2, 3>, Cpu> = random(61);
    let gn = GroupNorm::<f64, 2, 4, Cpu>::new();
    set_param(&gn.weight, &[0.5, -1.0, 1.5, 2.0]);
    let loss = || (gn.forward(x.trace()) * &probe).sum_all();
    for (what, check) in [
        ("group norm input", check_gradient(&x, 1e-5, loss)),
        (
            "group norm weight",
            check_gradient(gn.weight.as_ref().unwrap(), 1e-5, loss),
        ),
        (
            "group norm bias",
            check_gradient(gn.bias.as_ref().unwrap(), 1e-5, loss),
        ),
    ] {
        assert!(check.error < 1e-7, "{what}: {check:?}");
    }
    let inorm = InstanceNorm2d::<f64, 4, Cpu>::with_options(1e-5, true);
    let loss = || (inorm.forward(x.trace()) * &probe).sum_all();
    assert!(check_gradient(&x, 1e-5, loss).error < 1e-7);
    assert!(check_gradient(inorm.weight.as_ref().unwrap(), 1e-5, loss).error < 1e-7);
    let ln = LayerNormOver::<f64, Rank3<4, 2, 3>, Cpu>::new(1e-5);
    ln.weight.set(random(62));
    let loss = || (ln.forward(x.trace()) * &probe).sum_all();
    for (what, check) in [
        ("layer norm input", check_gradient(&x, 1e-5, loss)),
        ("layer norm weight", check_gradient(&ln.weight, 1e-5, loss)),
        ("layer norm bias", check_gradient(&ln.bias, 1e-5, loss)),
    ] {
        assert!(check.error < 1e-7, "{what}: {check:?}");
    }
    // Parameter names are PyTorch's; InstanceNorm without affine has none.
    let mut all = Everything::default();
    (gn, InstanceNorm2d::<f64, 4, Cpu>::new(), ln).visit_params("", &mut all);
    assert_eq!(all.params, ["0.weight", "0.bias", "2.weight", "2.bias"]);
}

fn batch_norm_2d_modes_f32<D: AutogradDevice>() {
    batch_norm_2d_modes::<f32, D>()
}
fn batch_norm_2d_modes_f64<D: AutogradDevice>() {
    batch_norm_2d_modes::<f64, D>()
}
fn batch_norm_2d_modes_bf16<D: AutogradDevice>() {
    batch_norm_2d_modes::<bf16, D>()
}
fn batch_norm_1d_ranks_f32<D: AutogradDevice>() {
    batch_norm_1d_ranks::<f32, D>()
}
fn batch_norm_1d_ranks_f16<D: AutogradDevice>() {
    batch_norm_1d_ranks::<f16, D>()
}
fn batch_norm_1d_ranks_f64<D: AutogradDevice>() {
    batch_norm_1d_ranks::<f64, D>()
}

/// The configurations: momentum `None` is a cumulative average; without running statistics the batch's are
/// used in every mode (plain tensors included) and there are no buffers; without `affine` no parameters.
#[test]
fn batch_norm_configurations() {
    let cumulative = BatchNorm1d::<f64, 2, Cpu>::with_config(BatchNormConfig {
        momentum: None,
        ..Default::default()
    });
    let batches: Vec<Tensor<f64, Rank2<3, 2>, Cpu>> = (0..3).map(|s| random(30 + s)).collect();
    for x in &batches {
        cumulative.forward(Traced::constant(x.clone()));
    }
    let mut mean = [0.0; 2];
    for x in &batches {
        for (ch, (m, _)) in channel_stats(&x.to_vec(), [3, 2, 1]).iter().enumerate() {
            mean[ch] += m / 3.0;
        }
    }
    let running = cumulative.running.as_ref().unwrap();
    // The first batch replaces the initial 0 entirely (m = 1), then each batch weighs 1 / count.
    assert_within(
        "cumulative running_mean",
        &running.mean.value().to_vec(),
        &mean,
        1e-12,
    );

    let untracked = BatchNorm1d::<f64, 2, Cpu>::with_config(BatchNormConfig {
        track_running_stats: false,
        affine: false,
        eps: 0.0,
        ..Default::default()
    });
    assert!(untracked.running.is_none() && untracked.weight.is_none());
    // The accessors read the same state without unwrapping, and say what the layer applies.
    assert_eq!(cumulative.num_batches_tracked(), Some(3));
    assert_eq!(
        cumulative.running_mean().map(|m| m.to_vec()),
        Some(running.mean.value().to_vec())
    );
    assert_eq!(
        cumulative.running_var().map(|v| v.to_vec()),
        Some(running.var.value().to_vec())
    );
    assert!(untracked.running_mean().is_none() && untracked.running_var().is_none());
    assert_eq!(untracked.num_batches_tracked(), None);
    assert_eq!(untracked.weight_value().to_vec(), [1.0, 1.0]);
    assert_eq!(untracked.bias_value().to_vec(), [0.0, 0.0]);
    let x = Tensor::<f64, _, Cpu>::from_array([[1., 10.], [3., 30.]]);
    let want = [-1., -1., 1., 1.];
    assert_eq!(untracked.forward(x.clone()).to_vec(), want);
    untracked.eval();
    assert_eq!(
        untracked.forward(Traced::constant(x)).into_value().to_vec(),
        want
    );
    let mut all = Everything::default();
    untracked.visit_params("bn", &mut all);
    assert_eq!((all.params.len(), all.buffers.len(), all.flags), (0, 0, 1));

    let message = panic_message(|| {
        BatchNorm1d::<f64, 2, Cpu>::new()
            .forward(Traced::constant(Tensor::<f64, Rank2<1, 2>, Cpu>::ones()))
    });
    assert_eq!(
        message,
        "BatchNorm: expected more than 1 value(s) per channel when training, got 1 (input of 2 elements over 2 \
         channels)"
    );
    let message = panic_message(|| {
        BatchNorm1d::<f64, 2, Cpu>::with_config(BatchNormConfig {
            momentum: Some(1.5),
            ..Default::default()
        })
    });
    assert_eq!(message, "BatchNorm: momentum must be in [0, 1], got 1.5");
}

/// Gradients of the input, weight and bias in training mode (through the batch statistics) and of the input in
/// evaluation mode (a per-channel affine map), by finite differences.
#[test]
fn batch_norm_gradients_match_finite_differences() {
    let bn = BatchNorm2d::<f64, 3, Cpu>::new();
    bn.weight
        .as_ref()
        .unwrap()
        .set(Tensor::from_array([0.5, -1.5, 2.0]));
    bn.bias
        .as_ref()
        .unwrap()
        .set(Tensor::from_array([0.1, 0.2, 0.3]));
    let x = Var::new(random::<f64, Rank4<2, 3, 2, 2>, Cpu>(40));
    let probe: Tensor<f64, Rank4<2, 3, 2, 2>, Cpu> = random(41);
    let loss = || (bn.forward(x.trace()) * &probe).sum_all();
    for (what, check) in [
        ("input", check_gradient(&x, 1e-5, loss)),
        (
            "weight",
            check_gradient(bn.weight.as_ref().unwrap(), 1e-5, loss),
        ),
        (
            "bias",
            check_gradient(bn.bias.as_ref().unwrap(), 1e-5, loss),
        ),
    ] {
        assert!(check.error < 1e-7, "training, {what}: {check:?}");
    }
    bn.eval();
    let check = check_gradient(&x, 1e-5, loss);
    assert!(check.error < 1e-7, "evaluation, input: {check:?}");
    // Without affine parameters, on (N, C) and (N, C, L) inputs.
    let plain = BatchNorm1d::<f64, 3, Cpu>::with_config(BatchNormConfig {
        affine: false,
        ..Default::default()
    });
    let rows = Var::new(random::<f64, Rank2<5, 3>, Cpu>(42));
    let probe_rows: Tensor<f64, Rank2<5, 3>, Cpu> = random(43);
    let check = check_gradient(&rows, 1e-5, || {
        (plain.forward(rows.trace()) * &probe_rows).sum_all()
    });
    assert!(check.error < 1e-7, "no affine, (N, C): {check:?}");
    let seq = Var::new(random::<f64, Rank3<2, 3, 4>, Cpu>(44));
    let probe_seq: Tensor<f64, Rank3<2, 3, 4>, Cpu> = random(45);
    let check = check_gradient(&seq, 1e-5, || {
        (plain.forward(seq.trace()) * &probe_seq).sum_all()
    });
    assert!(check.error < 1e-7, "no affine, (N, C, L): {check:?}");
}

/// Everything a walk shows: parameter and buffer names with dtypes, and how many training flags.
#[derive(Default)]
struct Everything {
    params: Vec<String>,
    buffers: Vec<(String, DType)>,
    flags: usize,
}

impl ParamVisitor for Everything {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, _: &Var<T, S, D>) {
        self.params.push(name.to_string());
    }
    fn visit_buffer<T: WithDType, S: Shape, D: Device>(&mut self, name: &str, _: &Buffer<T, S, D>) {
        self.buffers.push((name.to_string(), T::DTYPE));
    }
    fn visit_training(&mut self, _: &TrainingFlag) {
        self.flags += 1;
    }
}

/// A model type written by hand: forwarding `visit_params` to its fields is all `train`/`eval` need.
struct Block {
    norm: BatchNorm1d<f32, 4, Cpu>,
    head: (Linear<f32, 4, 4, Cpu>, Dropout),
}

impl Parameters for Block {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        self.norm
            .visit_params(&typed_tensor::nn::join_name(prefix, "norm"), visitor);
        self.head
            .visit_params(&typed_tensor::nn::join_name(prefix, "head"), visitor);
    }
}

/// `#[derive(Parameters)]` walks the fields as the hand-written [`Block`] does (names, buffers, flags), skips a
/// `#[parameters(skip)]` field, visits a `#[parameters(flatten)]` field's contents under the struct's own prefix,
/// and bounds a generic field (`M: Parameters`); `train`/`eval` reach a `TrainingFlag` field.
#[test]
fn derived_walks_match_the_hand_written_one() {
    #[derive(Parameters)]
    struct Derived {
        norm: BatchNorm1d<f32, 4, Cpu>,
        head: (Linear<f32, 4, 4, Cpu>, Dropout),
        #[parameters(skip)]
        _note: f64,
    }
    let hand = [Block {
        norm: BatchNorm1d::new(),
        head: (Linear::new(1), Dropout::new(0.5, 2)),
    }];
    let derived = [Derived {
        norm: BatchNorm1d::new(),
        head: (Linear::new(1), Dropout::new(0.5, 2)),
        _note: 1.0,
    }];
    let (mut a, mut b) = (Everything::default(), Everything::default());
    hand.visit_params("", &mut a);
    derived.visit_params("", &mut b);
    assert_eq!(
        (a.params, a.buffers, a.flags),
        (b.params, b.buffers, b.flags)
    );

    #[derive(Parameters)]
    struct Counter {
        seen: Buffer<i64, (), Cpu>,
        training: TrainingFlag,
    }
    #[derive(Parameters)]
    struct Outer<M> {
        #[parameters(flatten)]
        counter: Counter,
        inner: M,
    }
    #[derive(Parameters)]
    struct Pair<A, B>(pub(crate) A, #[parameters(skip)] pub (B, u8));
    let model = Pair(
        Outer {
            counter: Counter {
                seen: Buffer::new(Tensor::zeros()),
                training: TrainingFlag::default(),
            },
            inner: Linear::<f32, 2, 3, Cpu>::new(0),
        },
        ("not parameters", 0),
    );
    let mut all = Everything::default();
    model.visit_params("m", &mut all);
    assert_eq!(all.params, ["m.0.inner.weight", "m.0.inner.bias"]);
    assert_eq!(all.buffers, [("m.0.seen".to_string(), DType::I64)]);
    assert_eq!(all.flags, 1);
    model.eval();
    assert_eq!(model.mode(), Some(Mode::Evaluation));
    assert!(!model.0.counter.training.get());
}

/// PyTorch's names for the parameters and buffers; `train`/`eval` reach nested layers; optimizers register
/// the parameters only.
#[test]
fn modes_and_buffers_walk_the_model() {
    let model = [Block {
        norm: BatchNorm1d::new(),
        head: (Linear::new(1), Dropout::new(0.5, 2)),
    }];
    let mut all = Everything::default();
    model.visit_params("", &mut all);
    assert_eq!(
        all.params,
        [
            "0.norm.weight",
            "0.norm.bias",
            "0.head.0.weight",
            "0.head.0.bias"
        ]
    );
    assert_eq!(
        all.buffers,
        [
            ("0.norm.running_mean".to_string(), DType::F32),
            ("0.norm.running_var".to_string(), DType::F32),
            ("0.norm.num_batches_tracked".to_string(), DType::I64),
        ]
    );
    assert_eq!(all.flags, 2);
    assert_eq!(model.mode(), Some(Mode::Training));
    model.eval();
    assert_eq!(model.mode(), Some(Mode::Evaluation));
    model[0].head.1.train();
    assert_eq!(model.mode(), Some(Mode::Mixed));
    model.train();
    assert_eq!(model.mode(), Some(Mode::Training));

    // An optimizer steps the four parameters; the running statistics only move by forward passes.
    use typed_tensor::optim::{Optimizer, Sgd, SgdConfig};
    let mut opt = Sgd::new(&model, SgdConfig::default());
    let x: Tensor<f32, Rank2<8, 4>, Cpu> = random(5);
    let loss = model[0].norm.forward(Traced::constant(x)).sum_all();
    let before = model[0]
        .norm
        .running
        .as_ref()
        .unwrap()
        .mean
        .value()
        .to_vec();
    opt.step(&loss.backward());
    assert_eq!(
        model[0]
            .norm
            .running
            .as_ref()
            .unwrap()
            .mean
            .value()
            .to_vec(),
        before
    );
}

/// Buffers are saved and loaded with the parameters, under PyTorch's names, `num_batches_tracked` as i64.
#[cfg(feature = "safetensors")]
#[test]
fn buffers_round_trip_through_safetensors() {
    use typed_tensor::io::{from_bytes, to_bytes};
    let bn = BatchNorm2d::<f32, 2, Cpu>::new();
    for seed in 0..3 {
        bn.forward(Traced::constant(random::<f32, Rank4<2, 2, 3, 3>, Cpu>(
            seed,
        )));
    }
    let bytes = to_bytes(&bn).unwrap();
    let fresh = BatchNorm2d::<f32, 2, Cpu>::new();
    from_bytes(&fresh, &bytes).unwrap();
    let (a, b) = (
        bn.running.as_ref().unwrap(),
        fresh.running.as_ref().unwrap(),
    );
    assert_eq!(a.mean.value().to_vec(), b.mean.value().to_vec());
    assert_eq!(a.var.value().to_vec(), b.var.value().to_vec());
    assert_eq!(b.num_batches_tracked.value().to_scalar(), 3);
    // A file without the buffers does not load into a layer that has them.
    let affine_only = BatchNorm2d::<f32, 2, Cpu>::with_config(BatchNormConfig {
        track_running_stats: false,
        ..Default::default()
    });
    let err = from_bytes(&bn, &to_bytes(&affine_only).unwrap()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "load: the file has no tensor `running_mean`"
    );
}

/// The kinds PyTorch names take the ranks PyTorch lets them (another rank does not compile:
/// tests/ui/fail/batch_norm2d_of_a_matrix.rs); the generic `BatchNorm<T, C, D>` takes every rank.
#[test]
fn batch_norm_kinds_take_their_ranks() {
    let generic = BatchNorm::<f64, 3, Cpu>::new();
    let _ = generic.forward(random::<f64, Rank2<4, 3>, Cpu>(1));
    let _ = generic.forward(random::<f64, Rank4<2, 3, 2, 2>, Cpu>(2));
    let _ = BatchNorm1d::<f64, 3, Cpu>::new().forward(random::<f64, Rank3<2, 3, 4>, Cpu>(3));
    let _ = BatchNorm2d::<f64, 3, Cpu>::new().forward(random::<f64, Rank4<2, 3, 2, 2>, Cpu>(4));
}

/// BatchNorm3d on `(N, C, D, H, W)`: the batch's statistics per channel over the batch and the three spatial
/// axes, against the naive loop, in training and then evaluation (running statistics); its gradients by finite
/// differences.
#[test]
fn batch_norm_3d_values_and_gradients() {
    use typed_tensor::nn::BatchNorm3d;
    const DIMS: [usize; 3] = [2, 3, 2 * 3 * 2];
    let bn = BatchNorm3d::<f64, 3, Cpu>::new();
    let (w, b) = ([0.5, -1.5, 2.0], [0.1, 0.2, 0.3]);
    bn.weight.as_ref().unwrap().set(Tensor::from_array(w));
    bn.bias.as_ref().unwrap().set(Tensor::from_array(b));
    // A strided view: the (2, 2, 3, 2, 3) buffer with the channels moved to axis 1.
    let src: Tensor<f64, Rank5<2, 2, 3, 2, 3>, Cpu> = random::<f64, _, Cpu>(50).affine(2.0, 0.5);
    let x = src.permute::<(Axis<0>, Axis<4>, Axis<1>, Axis<2>, Axis<3>)>();
    let xs = x.to_vec();
    let stats = channel_stats(&xs, DIMS);
    let y = bn.forward(Traced::constant(x.clone())).into_value();
    assert_within(
        "batch norm 3d, training",
        &y.to_vec(),
        &normalised(&xs, DIMS, &stats, (&w, &b), 1e-5),
        1e-11,
    );
    let n = (DIMS[0] * DIMS[2]) as f64;
    let running: Vec<(f64, f64)> = stats
        .iter()
        .map(|(m, v)| (0.1 * m, 0.9 + 0.1 * v * n / (n - 1.0)))
        .collect();
    bn.eval();
    let y = bn.forward(x.clone());
    assert_within(
        "batch norm 3d, evaluation",
        &y.to_vec(),
        &normalised(&xs, DIMS, &running, (&w, &b), 1e-5),
        1e-11,
    );
    bn.train();
    let v = Var::new(x.contiguous());
    let probe: Tensor<f64, Rank5<2, 3, 2, 3, 2>, Cpu> = random(51);
    let check = check_gradient(&v, 1e-5, || (bn.forward(v.trace()) * &probe).sum_all());
    assert!(check.error < 1e-7, "batch norm 3d, input: {check:?}");
}
