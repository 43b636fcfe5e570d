//! The normalisations of PyTorch's `torch.nn.functional` as methods of plain and traced values, so that a model
//! can apply one without building a layer: `batch_norm` (with given statistics or the batch's own),
//! `group_norm`, `instance_norm`, and `layer_norm_affine`/`rms_norm_affine` (`layer_norm`/`rms_norm` with their
//! weight and bias). The layers ([`super::BatchNorm`], [`super::GroupNorm`], [`super::InstanceNorm`],
//! [`super::LayerNormOver`], [`super::RMSNorm`]) call these, so each normalisation is written once.
//!
//! Each is a composition written once for both kinds of value (`#[layer]` on an inherent impl). Batch norm's one
//! step that differs by kind is the batch-statistics form (`normalized_by_batch`): on traced values a single
//! recorded op with a fused backward rule (`batch_norm.rs`).

use super::layer;
use crate::autograd::Traced;
use crate::dtype::FloatDType;
use crate::ops::{self, Device};
use crate::shape::size_check::{self, n, t};
use crate::shape::{Axis, BroadcastShapes, ChannelsFirst, Dim, Shape};
use crate::tensor::{or_panic, Tensor};
use core::marker::PhantomData;

/// One value per channel of a channels-first shape `S`: a `(C,)` tensor.
pub type PerChannel<T, S, D> = Tensor<T, (<S as ChannelsFirst>::Channels,), D>;

/// The statistics `batch_norm` normalises with when given: a per-channel mean and variance.
pub type MeanVar<'a, T, S, D> = (&'a PerChannel<T, S, D>, &'a PerChannel<T, S, D>);

/// The build-time check of `group_norm::<G>`: `G` divides a static channel count.
struct GroupsDivide<S, const G: usize>(PhantomData<S>);
impl<S: ChannelsFirst, const G: usize> GroupsDivide<S, G> {
    const OK: () = if let Some(c) = <S::Channels as Dim>::STATIC_SIZE {
        groups_divide("group_norm", G, c)
    };
}

/// Fails the build (in a `const` block), naming `op` and both numbers, unless `groups` divides `channels`.
pub(crate) const fn groups_divide(op: &str, groups: usize, channels: usize) {
    if groups == 0 || channels % groups != 0 {
        size_check::concat_panic(&[&[
            t(op),
            t(": "),
            n(groups),
            t(" groups do not divide "),
            n(channels),
            t(" channels; the group count must be a divisor of the channel count"),
        ]]);
    }
}

/// Panics, naming the op and the sizes, when `groups` does not divide the `channels` of a runtime-sized shape.
#[track_caller]
fn check_groups(op: &str, groups: usize, channels: usize) {
    assert!(
        groups > 0 && channels % groups == 0,
        "{op}: {groups} groups do not divide {channels} channels; the group count must be a divisor of the \
         channel count"
    );
}

#[layer]
impl<T: FloatDType, S: Shape, D: Device> Value<T, S, D> {
    /// Group normalisation (PyTorch's `F.group_norm(x, G, weight, bias, eps)`): each sample's channels (axis
    /// 1) split into `G` groups, each group with every position after the channels normalised as a whole,
    /// `(x - mean) / sqrt(var + eps)` with the population variance, then `* weight + bias` per channel when
    /// given. `G` must divide the channel count: a build error for a static one, a panic for a runtime one.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank3<1, 4, 2>, Cpu>::from_array([[[1., 3.], [5., 7.], [0., 0.], [10., 10.]]]);
    /// let w = Tensor::<f32, Rank1<4>, Cpu>::full(2.0);
    /// let y = x.group_norm::<2>(Some(&w), None, 0.0).to_vec();
    /// let s = 5f32.sqrt(); // the first group (1, 3, 5, 7): mean 4, variance 5
    /// assert!((y[0] + 2. * 3. / s).abs() < 1e-5 && (y[3] - 2. * 3. / s).abs() < 1e-5);
    /// ```
    ///
    /// A group count that does not divide the channels does not build:
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank3<1, 6, 2>, Cpu>::zeros();
    /// // "group_norm: 4 groups do not divide 6 channels"
    /// let y = x.group_norm::<4>(None, None, 1e-5);
    /// ```
    #[track_caller]
    pub fn group_norm<const G: usize>(
        &self,
        weight: Option<&Value<T, (S::Channels,), D>>,
        bias: Option<&Value<T, (S::Channels,), D>>,
        eps: f64,
    ) -> Self
    where
        S: ChannelsFirst,
    {
        let () = GroupsDivide::<S, G>::OK;
        self.grouped_norm("group_norm", G, eps)
            .channel_affine(weight, bias)
    }

    /// Instance normalisation (PyTorch's `F.instance_norm(x, weight=.., bias=.., eps=..)` with the input's own
    /// statistics): each channel of each sample normalised over its positions, then `* weight + bias` per
    /// channel when given.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f64, Rank3<1, 2, 2>, Cpu>::from_array([[[1., 3.], [10., 20.]]]);
    /// let y = x.instance_norm(None, None, 0.0);
    /// assert_eq!(y.to_array(), [[[-1., 1.], [-1., 1.]]]);
    /// ```
    #[track_caller]
    pub fn instance_norm(
        &self,
        weight: Option<&Value<T, (S::Channels,), D>>,
        bias: Option<&Value<T, (S::Channels,), D>>,
        eps: f64,
    ) -> Self
    where
        S: ChannelsFirst,
    {
        let channels = self.shape().channels().size();
        self.grouped_norm("instance_norm", channels, eps)
            .channel_affine(weight, bias)
    }

    /// Layer normalisation over the trailing axes that `W` names, with PyTorch's affine part
    /// (`F.layer_norm(x, W, weight, bias, eps)`): the last `W`'s-rank axes of each sample normalised as a whole,
    /// then `* weight + bias`, each of shape `W`, when given. `W` comes from the weight's type; with neither
    /// given, name it (`layer_norm_affine::<Rank1<8>>(None, None, eps)`) or call [`Tensor::layer_norm`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 2>, Cpu>::from_array([[1., 3.], [0., 4.]]);
    /// let w = Tensor::<f32, Rank1<2>, Cpu>::from_array([1., 10.]);
    /// let b = Tensor::<f32, Rank1<2>, Cpu>::from_array([0., 1.]);
    /// let y = x.layer_norm_affine(Some(&w), Some(&b), 0.0);
    /// assert_eq!(y.to_array(), [[-1., 11.], [-1., 11.]]);
    /// ```
    ///
    /// A weight that is not the input's trailing shape does not compile:
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    /// let w = Tensor::<f32, Rank1<2>, Cpu>::ones(); // the last axis has 3
    /// let y = x.layer_norm_affine(Some(&w), None, 1e-5);
    /// ```
    #[track_caller]
    pub fn layer_norm_affine<W: Shape>(
        &self,
        weight: Option<&Value<T, W, D>>,
        bias: Option<&Value<T, W, D>>,
        eps: f64,
    ) -> Self
    where
        S: BroadcastShapes<W, Output = S>,
    {
        let y = self.trailing_norm(W::RANK, eps, false);
        let y = match weight {
            Some(w) => y * w,
            None => y,
        };
        match bias {
            Some(b) => y + b,
            None => y,
        }
    }

    /// RMS normalisation over the trailing axes that `W` names, with PyTorch's weight
    /// (`F.rms_norm(x, W, weight, eps)`): `x / sqrt(mean(x^2) + eps) * weight` (see
    /// [`Self::layer_norm_affine`] for how `W` is given).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<1, 2>, Cpu>::from_array([[3., 4.]]);
    /// let w = Tensor::<f32, Rank1<2>, Cpu>::from_array([1., 2.]);
    /// let y = x.rms_norm_affine(Some(&w), 0.0);
    /// let rms = 12.5f32.sqrt();
    /// assert_eq!(y.to_array(), [[3. / rms, 8. / rms]]);
    /// ```
    #[track_caller]
    pub fn rms_norm_affine<W: Shape>(&self, weight: Option<&Value<T, W, D>>, eps: f64) -> Self
    where
        S: BroadcastShapes<W, Output = S>,
    {
        let y = self.trailing_norm(W::RANK, eps, true);
        match weight {
            Some(w) => y * w,
            None => y,
        }
    }

    /// Layer norm (or RMS norm) of each sample's trailing `rank` axes as one row.
    fn trailing_norm(&self, rank: usize, eps: f64, rms: bool) -> Self {
        let shape = self.shape();
        let (dims, numel) = (shape.dims(), shape.numel());
        if numel == 0 {
            return self.clone();
        }
        let width: usize = dims[dims.len() - rank..].iter().product();
        let rows = self.reshape_with_shape((numel / width, width));
        let rows = if rms {
            rows.rms_norm::<Axis<1>>(eps)
        } else {
            rows.layer_norm::<Axis<1>>(eps)
        };
        rows.reshape_with_shape(shape)
    }

    /// Each sample's channels split into `groups`, each group and the positions after it normalised as one row.
    #[track_caller]
    fn grouped_norm(&self, op: &str, groups: usize, eps: f64) -> Self
    where
        S: ChannelsFirst,
    {
        let shape = self.shape();
        check_groups(op, groups, shape.channels().size());
        let numel = shape.numel();
        if numel == 0 {
            return self.clone();
        }
        let rows = shape.dims()[0] * groups;
        self.reshape_with_shape((rows, numel / rows))
            .layer_norm::<Axis<1>>(eps)
            .reshape_with_shape(shape)
    }

    /// `self * weight + bias` with per-channel values spread over the channels-first shape.
    fn channel_affine(
        self,
        weight: Option<&Value<T, (S::Channels,), D>>,
        bias: Option<&Value<T, (S::Channels,), D>>,
    ) -> Self
    where
        S: ChannelsFirst,
    {
        let shape = self.shape();
        let spread = |v: &Value<T, (S::Channels,), D>| {
            v.reshape_with_shape(shape.column())
                .broadcast_with_shape(shape)
        };
        let y = match weight {
            Some(w) => &self * &spread(w),
            None => self,
        };
        match bias {
            Some(b) => &y + &spread(b),
            None => y,
        }
    }
}

/// The values per channel of a channels-first input of `numel` elements and `channels` channels; panics,
/// naming `op`, when there are fewer than `needed` (the batch's statistics need 2 in training, PyTorch's rule).
#[track_caller]
pub(crate) fn values_per_channel(op: &str, numel: usize, channels: usize, needed: usize) -> usize {
    let n = numel.checked_div(channels).unwrap_or(0);
    assert!(
        n >= needed,
        "{op}: expected more than {} value(s) per channel{}, got {n} (input of {numel} elements over {channels} \
         channels)",
        needed - 1,
        if needed > 1 { " when training" } else { "" },
    );
    n
}

/// A plain tensor as a value of the caller's kind: itself, or a constant traced value. How a composition written
/// once for both kinds takes in a tensor computed from plain statistics.
pub(crate) trait FromConstant<T: FloatDType, S: Shape, D: Device> {
    fn from_constant(value: Tensor<T, S, D>) -> Self;
}

impl<T: FloatDType, S: Shape, D: Device> FromConstant<T, S, D> for Tensor<T, S, D> {
    fn from_constant(value: Tensor<T, S, D>) -> Self {
        value
    }
}

impl<T: FloatDType, S: Shape, D: Device> FromConstant<T, S, D> for Traced<T, S, D> {
    fn from_constant(value: Tensor<T, S, D>) -> Self {
        Traced::constant_of(value)
    }
}

#[layer]
impl<T: FloatDType, S: ChannelsFirst, D: Device> Value<T, S, D> {
    /// Batch normalisation (PyTorch's `F.batch_norm`): per channel (axis 1), `(x - mean) / sqrt(var + eps)`,
    /// then `* weight + bias` when given. With `running` (a mean and a variance, `(C,)` each) it normalises
    /// with them, as in evaluation; with `None` it uses the batch's own mean and population variance over every
    /// axis but the channels' (PyTorch's `training=True`), which needs at least 2 values per channel. The
    /// running statistics are not updated here: [`BatchNorm`](super::BatchNorm) keeps and moves them. On traced
    /// values the batch-statistics form is one recorded op whose backward rule is fused (PyTorch's
    /// `batch_norm_backward`); with given statistics it is a per-channel affine map, whose gradient reaches the
    /// input, the weight and the bias.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 2>, Cpu>::from_array([[1., 10.], [3., 30.]]);
    /// let y = x.batch_norm(None, None, None, 0.0); // the batch's statistics
    /// assert_eq!(y.to_array(), [[-1., -1.], [1., 1.]]);
    /// let (mean, var) = (Tensor::from_array([1., 0.]), Tensor::from_array([4., 1.]));
    /// let y = x.batch_norm(Some((&mean, &var)), None, None, 0.0);
    /// assert_eq!(y.to_array(), [[0., 10.], [1., 30.]]);
    /// ```
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::{Traced, Var};
    /// let w = Var::new(Tensor::<f64, Rank1<2>, Cpu>::ones());
    /// let x = Traced::constant(Tensor::<f64, Rank2<2, 2>, Cpu>::from_array([[1., 10.], [3., 30.]]));
    /// let y = x.batch_norm(None, Some(&w.trace()), None, 0.0);
    /// assert_eq!(y.value().to_array(), [[-1., -1.], [1., 1.]]);
    /// let g: Tensor<f64, Rank1<2>, Cpu> = (y * 3.0).sqr().sum_all().backward().get(&w);
    /// assert_eq!(g.to_array(), [36., 36.]); // d/dw sum((3 w x_hat)^2) = 18 sum(x_hat^2) = 36
    /// ```
    #[track_caller]
    pub fn batch_norm(
        &self,
        running: Option<MeanVar<'_, T, S, D>>,
        weight: Option<&Value<T, (S::Channels,), D>>,
        bias: Option<&Value<T, (S::Channels,), D>>,
        eps: f64,
    ) -> Self {
        match running {
            Some((mean, var)) => self.normalized_with(mean, var, weight, bias, eps),
            None => self.normalized_by_batch("batch_norm", weight, bias, eps, 2),
        }
    }

    /// `x * scale + shift` per channel, with `scale = weight / sqrt(var + eps)` and `shift = bias - mean scale`:
    /// two passes over the input, each reading a per-channel value through a stride-0 view.
    pub(crate) fn normalized_with(
        &self,
        mean: &PerChannel<T, S, D>,
        var: &PerChannel<T, S, D>,
        weight: Option<&Value<T, (S::Channels,), D>>,
        bias: Option<&Value<T, (S::Channels,), D>>,
        eps: f64,
    ) -> Self {
        let rstd = (var + T::from_f64(eps)).rsqrt();
        let scale = match weight {
            Some(w) => w * &rstd,
            None => Value::from_constant(rstd),
        };
        let shift = (&scale * mean) * T::from_f64(-1.0);
        let shift = match bias {
            Some(b) => &shift + b,
            None => shift,
        };
        let shape = self.shape();
        let spread = |v: Value<T, (S::Channels,), D>| {
            v.reshape_with_shape(shape.column())
                .broadcast_with_shape(shape)
        };
        &(self * &spread(scale)) + &spread(shift)
    }
}

impl<T: FloatDType, S: ChannelsFirst, D: Device> Tensor<T, S, D> {
    /// Batch norm with the batch's own statistics, over at least `needed` values per channel (a panic naming
    /// `op` otherwise).
    #[track_caller]
    pub(crate) fn normalized_by_batch(
        &self,
        op: &str,
        weight: Option<&PerChannel<T, S, D>>,
        bias: Option<&PerChannel<T, S, D>>,
        eps: f64,
        needed: usize,
    ) -> Self {
        let (mean, var) = self.batch_stats(op, needed);
        self.normalized_with(&mean, &var, weight, bias, eps)
    }

    /// The batch's per-channel mean and population variance; panics with fewer than `needed` values per channel.
    #[track_caller]
    pub(crate) fn batch_stats(
        &self,
        op: &str,
        needed: usize,
    ) -> (PerChannel<T, S, D>, PerChannel<T, S, D>) {
        let shape = self.shape();
        values_per_channel(op, shape.numel(), shape.channels().size(), needed);
        let mean = or_panic(self.reduce_with(ops::Mean, &S::OTHERS, false));
        let var = or_panic(self.reduce_with(ops::Var { correction: 0 }, &S::OTHERS, false));
        (mean, var)
    }
}

impl<T: FloatDType, S: ChannelsFirst, D: Device> Traced<T, S, D> {
    /// Batch norm with the batch's own statistics: the fused recorded op (`batch_norm.rs`).
    #[track_caller]
    pub(crate) fn normalized_by_batch(
        &self,
        op: &str,
        weight: Option<&Traced<T, (S::Channels,), D>>,
        bias: Option<&Traced<T, (S::Channels,), D>>,
        eps: f64,
        needed: usize,
    ) -> Self {
        super::batch_norm::with_batch_stats(op, self, weight, bias, eps, needed).0
    }
}
