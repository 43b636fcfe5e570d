//! Batch normalisation (PyTorch's `BatchNorm1d`/`BatchNorm2d`): per-channel statistics over the batch and every
//! axis after the channel one, with running estimates for evaluation.
//!
//! The normalisation is the functional `batch_norm` (`functional.rs`: `x * scale + shift` with `scale = weight /
//! sqrt(var + eps)` and `shift = bias - mean * scale` per channel, read through a view that repeats each
//! channel's value over the other axes, so the passes over the data walk it in its own order). This file holds
//! the layer (parameters, running statistics, the choice of statistics by mode) and, for traced values with the
//! batch's statistics, the one recorded op with its fused backward rule.

use super::functional::PerChannel as PerChannelOf;
use super::norm_kind::{AnyRank, Spatial, TakesInput};
use super::{join_name, layer, Buffer, Module, ParamVisitor, Parameters, TrainingFlag};
use crate::autograd::{record_with, Gradients, Slot, Traced, Var};
use crate::dtype::FloatDType;
use crate::ops;
use crate::ops::Device;
use crate::shape::{ChannelsFirst, Const, Dim, Dims, MAX_RANK};
use crate::tensor::{or_panic, padded_axes, padded_shape, Grad, Padded, Tensor};
use core::marker::PhantomData;

/// One value per channel.
type PerChannel<T, const C: usize, D> = Tensor<T, (Const<C>,), D>;

/// How a [`BatchNorm`] is built; the default is PyTorch's (`eps` 1e-5, momentum 0.1, affine, running
/// statistics tracked).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchNormConfig {
    /// Added to the variance before the square root.
    pub eps: f64,
    /// Weight of the newest batch in the running statistics: `running = (1 - m) running + m batch`. `None` is
    /// a cumulative average over every batch seen (`m = 1 / num_batches_tracked`), as in PyTorch.
    pub momentum: Option<f64>,
    /// Whether the layer has a learned `weight` (starting at 1) and `bias` (starting at 0).
    pub affine: bool,
    /// Whether the layer keeps running statistics for evaluation. Without them it normalises with the batch's
    /// own statistics in both modes.
    pub track_running_stats: bool,
}

impl Default for BatchNormConfig {
    fn default() -> Self {
        BatchNormConfig {
            eps: 1e-5,
            momentum: Some(0.1),
            affine: true,
            track_running_stats: true,
        }
    }
}

/// The running estimates of a [`BatchNorm`], PyTorch's buffers of the same names.
pub struct RunningStats<T: FloatDType, const C: usize, D: Device> {
    /// `running_mean`, starting at 0.
    pub mean: Buffer<T, (Const<C>,), D>,
    /// `running_var`, the unbiased batch variances' average, starting at 1.
    pub var: Buffer<T, (Const<C>,), D>,
    /// `num_batches_tracked`: how many training batches updated the estimates.
    pub num_batches_tracked: Buffer<i64, (), D>,
}

/// Batch normalisation over channel axis 1 of `(N, C)`, `(N, C, L)` (PyTorch's `BatchNorm1d`) and
/// `(N, C, H, W)` inputs (`BatchNorm2d`): `(x - mean) / sqrt(var + eps) * weight + bias`, per channel.
///
/// - **Training mode, traced input**: the batch's mean and population variance over every axis but the
///   channel; the running statistics move towards them (the variance's unbiased form, as PyTorch), and
///   `num_batches_tracked` counts the batch. Fewer than 2 values per channel panic (no variance to take).
/// - **Evaluation mode, or plain tensors** (inference): the running statistics. A layer built without them
///   ([`BatchNormConfig::track_running_stats`] off) uses the batch's statistics in every mode.
///
/// The mode is the layer's [`TrainingFlag`], set model-wide by [`Parameters::train`]/[`Parameters::eval`].
/// Parameter and buffer names follow PyTorch's (`weight`, `bias`, `running_mean`, `running_var`,
/// `num_batches_tracked`), so a PyTorch `state_dict` saved as safetensors loads without renaming.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Traced;
/// use typed_tensor::nn::{BatchNorm2d, Module, Parameters};
/// let bn = BatchNorm2d::<f32, 2, Cpu>::new();
/// let x = Tensor::<f32, Rank4<4, 2, 3, 3>, Cpu>::randn(0);
/// let y = bn.forward(Traced::constant(x.clone())).into_value(); // training: batch statistics
/// let per_channel = y.permute::<(Axis<1>, Axis<0>, Axis<2>, Axis<3>)>().reshape::<Rank2<2, 36>>();
/// assert!(per_channel.mean::<Axis<1>>().to_vec().iter().all(|m| m.abs() < 1e-5));
/// let stats = bn.running.as_ref().unwrap();
/// assert_eq!(stats.num_batches_tracked.value().to_scalar(), 1);
/// bn.eval();
/// let _ = bn.forward(x); // running statistics
/// ```
pub struct BatchNorm<T: FloatDType, const C: usize, D: Device, K = AnyRank> {
    /// `(C,)`, multiplies the normalised value (absent without `affine`).
    pub weight: Option<Var<T, (Const<C>,), D>>,
    /// `(C,)`, added last (absent without `affine`).
    pub bias: Option<Var<T, (Const<C>,), D>>,
    /// The running statistics (absent without `track_running_stats`).
    pub running: Option<RunningStats<T, C, D>>,
    config: BatchNormConfig,
    training: TrainingFlag,
    kind: PhantomData<K>,
}

/// [`BatchNorm`] for `(N, C)` and `(N, C, L)` inputs (PyTorch's `BatchNorm1d`); another rank is a build error.
pub type BatchNorm1d<T, const C: usize, D> = BatchNorm<T, C, D, Spatial<1>>;
/// [`BatchNorm`] for `(N, C, H, W)` inputs (PyTorch's `BatchNorm2d`).
pub type BatchNorm2d<T, const C: usize, D> = BatchNorm<T, C, D, Spatial<2>>;
/// [`BatchNorm`] for `(N, C, D, H, W)` inputs (PyTorch's `BatchNorm3d`).
pub type BatchNorm3d<T, const C: usize, D> = BatchNorm<T, C, D, Spatial<3>>;

impl<T: FloatDType, const C: usize, D: Device, K> Default for BatchNorm<T, C, D, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: FloatDType, const C: usize, D: Device, K> BatchNorm<T, C, D, K> {
    /// PyTorch's defaults: `eps` 1e-5, momentum 0.1, affine, running statistics tracked, training mode.
    pub fn new() -> Self {
        Self::with_config(BatchNormConfig::default())
    }

    /// A layer built as `config` says.
    ///
    /// # Panics
    ///
    /// When the momentum is outside `[0, 1]` or `eps` is negative.
    #[track_caller]
    pub fn with_config(config: BatchNormConfig) -> Self {
        if let Some(m) = config.momentum {
            assert!(
                (0.0..=1.0).contains(&m),
                "BatchNorm: momentum must be in [0, 1], got {m}"
            );
        }
        assert!(
            config.eps >= 0.0,
            "BatchNorm: eps must not be negative, got {}",
            config.eps
        );
        let affine = config.affine;
        BatchNorm {
            weight: affine.then(|| Var::create(Tensor::ones())),
            bias: affine.then(|| Var::create(Tensor::zeros())),
            running: config.track_running_stats.then(|| RunningStats {
                mean: Buffer::new(Tensor::zeros()),
                var: Buffer::new(Tensor::ones()),
                num_batches_tracked: Buffer::new(Tensor::zeros()),
            }),
            config,
            training: TrainingFlag::default(),
            kind: PhantomData,
        }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &BatchNormConfig {
        &self.config
    }

    /// The per-channel factor the layer applies after normalising: its learned `weight`, or ones for a layer
    /// built without `affine` (PyTorch's `bn.weight`, which is `None` there).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::{BatchNorm2d, BatchNormConfig};
    /// let bn = BatchNorm2d::<f32, 3, Cpu>::new();
    /// assert_eq!(bn.weight_value().to_array(), [1., 1., 1.]);
    /// assert_eq!(bn.bias_value().to_array(), [0., 0., 0.]);
    /// assert_eq!(bn.running_mean().map(|m| m.to_array()), Some([0., 0., 0.]));
    /// assert_eq!(bn.running_var().map(|v| v.to_array()), Some([1., 1., 1.]));
    /// assert_eq!(bn.num_batches_tracked(), Some(0));
    /// let plain = BatchNorm2d::<f32, 3, Cpu>::with_config(BatchNormConfig {
    ///     affine: false,
    ///     track_running_stats: false,
    ///     ..Default::default()
    /// });
    /// assert_eq!(plain.weight_value().to_array(), [1., 1., 1.]);
    /// assert!(plain.running_mean().is_none());
    /// ```
    pub fn weight_value(&self) -> PerChannel<T, C, D> {
        self.weight.as_ref().map_or_else(Tensor::ones, Var::value)
    }

    /// The per-channel shift the layer adds last: its learned `bias`, or zeros without `affine`.
    pub fn bias_value(&self) -> PerChannel<T, C, D> {
        self.bias.as_ref().map_or_else(Tensor::zeros, Var::value)
    }

    /// The running mean (PyTorch's `running_mean`); `None` for a layer that tracks no running statistics.
    pub fn running_mean(&self) -> Option<PerChannel<T, C, D>> {
        self.running.as_ref().map(|stats| stats.mean.value())
    }

    /// The running variance (PyTorch's `running_var`, the unbiased batch variances' average); `None` for a layer
    /// that tracks no running statistics.
    pub fn running_var(&self) -> Option<PerChannel<T, C, D>> {
        self.running.as_ref().map(|stats| stats.var.value())
    }

    /// How many training batches moved the running statistics (PyTorch's `num_batches_tracked`); `None` for a
    /// layer that tracks none.
    pub fn num_batches_tracked(&self) -> Option<i64> {
        self.running
            .as_ref()
            .map(|stats| stats.num_batches_tracked.value().to_scalar())
    }

    /// The running mean and variance when evaluation should use them (evaluation mode, or inference).
    fn running_for(&self, training: bool) -> Option<(PerChannel<T, C, D>, PerChannel<T, C, D>)> {
        match &self.running {
            Some(stats) if !training => Some((stats.mean.value(), stats.var.value())),
            _ => None,
        }
    }

    /// Moves the running statistics towards a training batch's `mean` and population `var` over `n` values per
    /// channel.
    #[track_caller]
    fn track(&self, mean: &Tensor<T, (Const<C>,), D>, var: &Tensor<T, (Const<C>,), D>, n: usize) {
        let Some(stats) = &self.running else {
            return;
        };
        // In place, so that a CUDA graph recording a training step moves the same buffers at each replay.
        stats.num_batches_tracked.update_in_place(|k| *k += 1);
        let m = match self.config.momentum {
            Some(m) => m,
            None => 1.0 / stats.num_batches_tracked.value().to_scalar() as f64,
        };
        let blend = |running: &mut Tensor<T, (Const<C>,), D>, batch: Tensor<T, (Const<C>,), D>| {
            *running *= T::from_f64(1.0 - m);
            *running += &(batch * T::from_f64(m));
        };
        let unbiased = var * T::from_f64(n as f64 / (n - 1) as f64);
        stats.mean.update_in_place(|r| blend(r, mean.clone()));
        stats.var.update_in_place(|r| blend(r, unbiased));
    }

    /// Normalises a traced input: in training the batch's statistics (one recorded op with a fused backward
    /// rule, [`with_batch_stats`]), which also move the running ones; in evaluation the running statistics.
    #[track_caller]
    fn forward_traced<S>(&self, x: Traced<T, S, D>) -> Traced<T, S, D>
    where
        S: ChannelsFirst<Channels = Const<C>>,
    {
        let training = self.training.get();
        let (weight, bias) = (
            self.weight.as_ref().map(Var::trace),
            self.bias.as_ref().map(Var::trace),
        );
        let eps = self.config.eps;
        if let Some((mean, var)) = self.running_for(training) {
            return x.batch_norm(Some((&mean, &var)), weight.as_ref(), bias.as_ref(), eps);
        }
        let needed = if training { 2 } else { 1 };
        let (y, mean, var) =
            with_batch_stats("BatchNorm", &x, weight.as_ref(), bias.as_ref(), eps, needed);
        if training {
            self.track(&mean, &var, x.value().numel() / C);
        }
        y
    }

    /// Normalises a plain input (inference): the running statistics, or the batch's without them.
    #[track_caller]
    fn forward_tensor<S>(&self, x: Tensor<T, S, D>) -> Tensor<T, S, D>
    where
        S: ChannelsFirst<Channels = Const<C>>,
    {
        let (weight, bias) = (
            self.weight.as_ref().map(Var::value),
            self.bias.as_ref().map(Var::value),
        );
        let (w, b, eps) = (weight.as_ref(), bias.as_ref(), self.config.eps);
        match self.running_for(false) {
            Some((mean, var)) => x.normalized_with(&mean, &var, w, b, eps),
            // Without running statistics the batch's, even of one value per channel (no variance is tracked).
            None => x.normalized_by_batch("BatchNorm", w, b, eps, 1),
        }
    }
}

/// A traced batch norm's output and the batch's mean and population variance.
type WithBatchStats<T, S, D> = (
    Traced<T, S, D>,
    PerChannelOf<T, S, D>,
    PerChannelOf<T, S, D>,
);

/// Batch norm of a traced input with the batch's statistics, as one recorded op with the fused backward rule
/// ([`batch_norm_rule`]); also gives the batch's mean and population variance. Panics with fewer than `needed`
/// values per channel.
#[track_caller]
pub(super) fn with_batch_stats<T: FloatDType, S: ChannelsFirst, D: Device>(
    op: &str,
    x: &Traced<T, S, D>,
    weight: Option<&Traced<T, (S::Channels,), D>>,
    bias: Option<&Traced<T, (S::Channels,), D>>,
    eps: f64,
    needed: usize,
) -> WithBatchStats<T, S, D> {
    let (mean, var) = x.value().batch_stats(op, needed);
    let n = x.value().numel() / x.shape().channels().size();
    let rstd = (&var + T::from_f64(eps)).rsqrt();
    let ones = || Traced::constant_of(Tensor::ones_with_shape((x.shape().channels(),)));
    let zeros = || Traced::constant_of(Tensor::zeros_with_shape((x.shape().channels(),)));
    // The rule's parents: the parameters, or constants standing in for absent ones.
    let weight = weight.cloned().unwrap_or_else(ones);
    let bias = bias.cloned().unwrap_or_else(zeros);
    let y = x
        .value()
        .normalized_with(&mean, &var, Some(weight.value()), Some(bias.value()), eps);
    let reduced = padded_axes(&S::OTHERS, S::RANK);
    let saved = (
        x.value().padded(),
        [mean.padded(), rstd.padded(), weight.value().padded()],
    );
    let captured = ([x.slot(), weight.slot(), bias.slot()], saved, reduced, n);
    let y = record_with(
        y,
        &[&x.node, &weight.node, &bias.node],
        captured,
        batch_norm_rule::<T, D>,
    );
    (y, mean, var)
}

/// What the fused rule keeps: the slots of the input, weight and bias; the input and the per-channel mean,
/// `1 / sqrt(var + eps)` and weight (padded); the reduced axes of the padded input; the values per channel.
type BatchNormCaptured<T, D> = (
    [Slot; 3],
    (Grad<T, D>, [Grad<T, D>; 3]),
    [bool; MAX_RANK],
    usize,
);

/// Batch norm's backward pass in one rule (PyTorch's `batch_norm_backward`): with `x_hat = (x - mean) rstd`,
/// the bias gets `sum(g)`, the weight `sum(g x_hat)`, and the input
/// `w rstd (g - sum(g) / n - x_hat sum(g x_hat) / n)`, written as `a g + b x + c` per channel so that the
/// large passes are one product `g x`, two reductions and the three terms (the composed form took about eleven
/// passes and five reductions). Compiled once per element type and device.
fn batch_norm_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sx, sw, sb], (x, [mean, rstd, w]), reduced, n): BatchNormCaptured<T, D>,
    store: &mut Gradients,
) {
    let channels = padded_shape(&Dims::from_slice(&[mean.numel()]));
    let sum = |t: &Grad<T, D>| {
        or_panic(t.reduce_with::<_, Padded>(ops::Sum, &reduced, true)).relabel(channels)
    };
    let sum_g = sum(&g);
    let sum_gx = sum(&g.zip_same(ops::Mul, &x));
    // sum(g x_hat) = rstd (sum(g x) - mean sum(g)).
    let sum_gxhat = rstd.zip_same(
        ops::Mul,
        &sum_gx.zip_same(ops::Sub, &mean.zip_same(ops::Mul, &sum_g)),
    );
    sb.give_padded_with(store, || sum_g.clone());
    sw.give_padded_with(store, || sum_gxhat.clone());
    sx.give_padded_with(store, || {
        let inv_n = 1.0 / n as f64;
        let a = w.zip_same(ops::Mul, &rstd);
        // b = -a rstd sum(g x_hat) / n multiplies x; c = -a sum(g) / n - b mean is the rest.
        let b = a
            .zip_same(ops::Mul, &rstd)
            .zip_same(ops::Mul, &sum_gxhat)
            .affine(-inv_n, 0.0);
        let c = a
            .zip_same(ops::Mul, &sum_g)
            .affine(-inv_n, 0.0)
            .zip_same(ops::Sub, &b.zip_same(ops::Mul, &mean));
        let spread = |v: &Grad<T, D>| v.spread_over(x.shape(), &reduced);
        g.zip_same(ops::Mul, &spread(&a))
            .zip_same(ops::Add, &x.zip_same(ops::Mul, &spread(&b)))
            .zip_same(ops::Add, &spread(&c))
    });
}

/// Batch norm on each kind of value: a plain tensor is inference ([`BatchNorm::forward_tensor`]), a traced value
/// training, or evaluation with the graph recorded ([`BatchNorm::forward_traced`]).
trait BatchNormInput<T: FloatDType, const C: usize, D: Device>: Sized {
    fn normalized_by<K>(self, layer: &BatchNorm<T, C, D, K>) -> Self;
}

impl<T: FloatDType, const C: usize, D: Device, S> BatchNormInput<T, C, D> for Tensor<T, S, D>
where
    S: ChannelsFirst<Channels = Const<C>>,
{
    #[track_caller]
    fn normalized_by<K>(self, layer: &BatchNorm<T, C, D, K>) -> Self {
        layer.forward_tensor(self)
    }
}

impl<T: FloatDType, const C: usize, D: Device, S> BatchNormInput<T, C, D> for Traced<T, S, D>
where
    S: ChannelsFirst<Channels = Const<C>>,
{
    #[track_caller]
    fn normalized_by<K>(self, layer: &BatchNorm<T, C, D, K>) -> Self {
        layer.forward_traced(self)
    }
}

/// `Module` for the inputs of one rank.
macro_rules! batch_norm_inputs {
    ($(($($d:ident),*) => $shape:ty;)*) => {$(
        #[layer]
        impl<T: FloatDType, const C: usize, D: Device, K: TakesInput<$shape, C>, $($d: Dim),*>
            Module<Value<T, $shape, D>> for BatchNorm<T, C, D, K>
        {
            type Output = Value<T, $shape, D>;
            #[track_caller]
            fn forward(&self, x: Value<T, $shape, D>) -> Self::Output {
                BatchNormInput::<T, C, D>::normalized_by(x, self)
            }
        }
    )*};
}

batch_norm_inputs! {
    (B) => (B, Const<C>);
    (B, L) => (B, Const<C>, L);
    (B, H, W) => (B, Const<C>, H, W);
    (B, Z, H, W) => (B, Const<C>, Z, H, W);
}

impl<T: FloatDType, const C: usize, D: Device, K> Parameters for BatchNorm<T, C, D, K> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        super::norm::visit_affine(&self.weight, &self.bias, prefix, visitor);
        if let Some(stats) = &self.running {
            visitor.visit_buffer(&join_name(prefix, "running_mean"), &stats.mean);
            visitor.visit_buffer(&join_name(prefix, "running_var"), &stats.var);
            visitor.visit_buffer(
                &join_name(prefix, "num_batches_tracked"),
                &stats.num_batches_tracked,
            );
        }
        visitor.visit_training(&self.training);
    }
}
