//! Per-sample normalisation layers: layer norm with a learned weight and bias, RMS norm with a learned weight,
//! group norm and instance norm (statistics over groups of channels of one sample; no running statistics).

use super::norm_kind::{AnyRank, Spatial, TakesInput};
use super::{join_name, layer, BiasKind, Module, ParamVisitor, Parameters, WithBias};
use crate::autograd::Var;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{Const, ConstShape, Dim};
use crate::tensor::Tensor;
use core::marker::PhantomData;

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the trailing axes of shape `S` (PyTorch's
/// `LayerNorm(normalized_shape)`, its parameters named `weight` and `bias`, of shape `S`; the weight starts at
/// 1, the bias at 0). [`LayerNorm`] is the common one-axis form. Inputs: `(batch, N)` and `(batch, seq, N)`
/// for one axis; `(batch, P, Q)` and `(batch, seq, P, Q)` for `S = (P, Q)`; `(batch, P, Q, R)` for
/// `S = (P, Q, R)` (a CNN's `LayerNorm([C, H, W])`). With [`NoBias`](super::NoBias) (PyTorch's `bias=False`)
/// nothing is added and there is no `bias` parameter.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{LayerNormOver, Module};
/// // Each sample's (2, 3) block normalised as a whole.
/// let norm = LayerNormOver::<f64, Rank2<2, 3>, Cpu>::new(0.0);
/// let x = Tensor::<f64, Rank3<2, 2, 3>, Cpu>::arange();
/// let y = norm.forward(x).to_vec();
/// let sd = (35.0f64 / 12.0).sqrt(); // 0..6: mean 2.5, population variance 35/12
/// assert!((y[0] + 2.5 / sd).abs() < 1e-12 && (y[11] - 2.5 / sd).abs() < 1e-12);
/// ```
#[derive(Parameters)]
pub struct LayerNormOver<T: FloatDType, S: ConstShape, D: Device, B: BiasKind = WithBias> {
    /// Shape `S`, multiplies the normalised value.
    pub weight: Var<T, S, D>,
    /// Shape `S`, added last; `()` without a bias.
    pub bias: B::Param<T, S, D>,
    #[parameters(skip)]
    eps: f64,
}

/// Layer norm over the last axis, of size `N` (PyTorch's `LayerNorm(N)`):
/// `(x - mean) / sqrt(var + eps) * weight + bias` for `(batch, N)` and `(batch, seq, N)` inputs. The weight
/// starts at 1, the bias at 0.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{LayerNorm, Module};
/// let norm = LayerNorm::<f32, 4, Cpu>::new(1e-5);
/// let y = norm.forward(Tensor::<f32, _, Cpu>::from_array([[1., 2., 3., 4.]]));
/// assert!(y.mean_all().to_scalar().abs() < 1e-6);
/// ```
pub type LayerNorm<T, const N: usize, D, B = WithBias> = LayerNormOver<T, (Const<N>,), D, B>;

impl<T: FloatDType, S: ConstShape, D: Device, B: BiasKind> LayerNormOver<T, S, D, B> {
    /// Weight 1, bias 0, `eps` added to the variance.
    pub fn new(eps: f64) -> Self {
        LayerNormOver {
            weight: Var::create(Tensor::ones()),
            bias: B::make(Tensor::zeros),
            eps,
        }
    }
}

/// `Module` for inputs that end with the normalised shape: layer norm over the trailing `S::NUMEL` elements of
/// `x` (a `(rows, S::NUMEL)` view normalised row by row), then `* weight + bias`.
macro_rules! layer_norm_inputs {
    ($($norm:tt for $input:tt;)*) => {$(
        layer_norm_inputs!(@one $norm $input);
    )*};
    (@one [$($n:ident),*] [$($d:ident),*]) => {
        #[layer]
        impl<T: FloatDType, $(const $n: usize,)* D: Device, K: BiasKind, $($d: Dim),*>
            Module<Value<T, ($($d,)* $(Const<$n>,)*), D>> for LayerNormOver<T, ($(Const<$n>,)*), D, K>
        {
            type Output = Value<T, ($($d,)* $(Const<$n>,)*), D>;
            fn forward(&self, x: Value<T, ($($d,)* $(Const<$n>,)*), D>) -> Self::Output {
                let (w, b) = (Value::from(&self.weight), K::var(&self.bias).map(Value::from));
                x.layer_norm_affine(Some(&w), b.as_ref(), self.eps)
            }
        }
    };
}

layer_norm_inputs! {
    [P, Q] for [B];
    [P, Q] for [B, L];
    [P, Q, R] for [B];
}

#[layer]
impl<T: FloatDType, const N: usize, D: Device, K: BiasKind, B: Dim>
    Module<Value<T, (B, Const<N>), D>> for LayerNormOver<T, (Const<N>,), D, K>
{
    type Output = Value<T, (B, Const<N>), D>;
    fn forward(&self, x: Value<T, (B, Const<N>), D>) -> Self::Output {
        let (w, b) = (
            Value::from(&self.weight),
            K::var(&self.bias).map(Value::from),
        );
        x.layer_norm_affine(Some(&w), b.as_ref(), self.eps)
    }
}

#[layer]
impl<T: FloatDType, const N: usize, D: Device, K: BiasKind, B: Dim, L: Dim>
    Module<Value<T, (B, L, Const<N>), D>> for LayerNormOver<T, (Const<N>,), D, K>
{
    type Output = Value<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Value<T, (B, L, Const<N>), D>) -> Self::Output {
        let (w, b) = (
            Value::from(&self.weight),
            K::var(&self.bias).map(Value::from),
        );
        x.layer_norm_affine(Some(&w), b.as_ref(), self.eps)
    }
}

/// `x / sqrt(mean(x^2) + eps) * weight` over the last axis (of size `N`), for `(batch, N)` and `(batch, seq, N)`
/// inputs (PyTorch's `RMSNorm(N, eps)`, its parameter named `weight`, starting at 1).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, RMSNorm};
/// let norm = RMSNorm::<f32, 2, Cpu>::new(0.0);
/// let y = norm.forward(Tensor::<f32, _, Cpu>::from_array([[3., 4.]]));
/// let rms = (12.5f32).sqrt();
/// assert_eq!(y.to_array(), [[3. / rms, 4. / rms]]);
/// ```
#[derive(Parameters)]
pub struct RMSNorm<T: FloatDType, const N: usize, D: Device> {
    /// `(N,)`, multiplies the normalised value.
    pub weight: Var<T, (Const<N>,), D>,
    #[parameters(skip)]
    eps: f64,
}

impl<T: FloatDType, const N: usize, D: Device> RMSNorm<T, N, D> {
    /// Weight 1, `eps` added to the mean square.
    pub fn new(eps: f64) -> Self {
        RMSNorm {
            weight: Var::create(Tensor::ones()),
            eps,
        }
    }
}

#[layer]
impl<T: FloatDType, const N: usize, D: Device, B: Dim> Module<Value<T, (B, Const<N>), D>>
    for RMSNorm<T, N, D>
{
    type Output = Value<T, (B, Const<N>), D>;
    fn forward(&self, x: Value<T, (B, Const<N>), D>) -> Self::Output {
        x.rms_norm_affine(Some(&Value::from(&self.weight)), self.eps)
    }
}

#[layer]
impl<T: FloatDType, const N: usize, D: Device, B: Dim, L: Dim> Module<Value<T, (B, L, Const<N>), D>>
    for RMSNorm<T, N, D>
{
    type Output = Value<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Value<T, (B, L, Const<N>), D>) -> Self::Output {
        x.rms_norm_affine(Some(&Value::from(&self.weight)), self.eps)
    }
}

/// `Module` for the inputs of each rank of [`GroupNorm`] and [`InstanceNorm`]: the functional form `$norm`
/// (`group_norm::<G>` or `instance_norm`) with the layer's optional weight and bias.
macro_rules! group_norm_inputs {
    ($layer:ident $consts:tt $kind:tt, $norm:tt; $($dims:tt => $shape:ty;)*) => {$(
        group_norm_inputs!(@one $layer $consts $kind, $norm, $dims, $shape);
    )*};
    (@one $layer:ident [$($c:ident),*] [$($k:ident)?], [$($norm:tt)*], ($($d:ident),*), $shape:ty) => {
        #[layer]
        impl<T: FloatDType, $(const $c: usize,)* D: Device, $($k: TakesInput<$shape, C>,)? $($d: Dim),*>
            Module<Value<T, $shape, D>> for $layer<T, $($c,)* D $(, $k)?>
        {
            type Output = Value<T, $shape, D>;
            #[track_caller]
            fn forward(&self, x: Value<T, $shape, D>) -> Self::Output {
                let weight = self.weight.as_ref().map(Value::from);
                let bias = self.bias.as_ref().map(Value::from);
                x.$($norm)*(weight.as_ref(), bias.as_ref(), self.eps)
            }
        }
    };
}

/// Group normalisation (PyTorch's `GroupNorm(G, C)`): each sample's `C` channels split into `G` groups of
/// `C / G`, each group normalised over its channels and every position (`(x - mean) / sqrt(var + eps)`, the
/// population variance), then `* weight + bias` per channel. Inputs `(N, C)`, `(N, C, L)` and `(N, C, H, W)`;
/// the statistics are per sample, so training and evaluation agree and there is no mode. `G` must divide `C`
/// (checked when the layer is built, at compile time).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{GroupNorm, Module};
/// let gn = GroupNorm::<f32, 2, 4, Cpu>::new(); // 4 channels in 2 groups
/// let x = Tensor::<f32, Rank3<1, 4, 2>, Cpu>::from_array([[[1., 3.], [5., 7.], [0., 0.], [10., 10.]]]);
/// let y = gn.forward(x).to_vec();
/// let s = 5f32.sqrt(); // the first group: mean 4, variance 5
/// assert!((y[0] + 3. / s).abs() < 1e-5 && (y[3] - 3. / s).abs() < 1e-5);
/// assert!((y[4] + 1.).abs() < 1e-5 && (y[7] - 1.).abs() < 1e-5); // the second: mean 5, variance 25
/// ```
#[derive(Parameters)]
pub struct GroupNorm<T: FloatDType, const G: usize, const C: usize, D: Device> {
    /// `(C,)`, multiplies the normalised value (absent without `affine`); starts at 1.
    pub weight: Option<Var<T, (Const<C>,), D>>,
    /// `(C,)`, added last (absent without `affine`); starts at 0.
    pub bias: Option<Var<T, (Const<C>,), D>>,
    #[parameters(skip)]
    eps: f64,
}

impl<T: FloatDType, const G: usize, const C: usize, D: Device> GroupNorm<T, G, C, D> {
    const GROUPS_DIVIDE_CHANNELS: () = super::functional::groups_divide("GroupNorm", G, C);

    /// PyTorch's defaults: `eps` 1e-5, affine.
    pub fn new() -> Self {
        let () = Self::GROUPS_DIVIDE_CHANNELS;
        Self::with_options(1e-5, true)
    }

    /// `eps` added to the variance; `affine` gives the layer its `weight` and `bias`.
    pub fn with_options(eps: f64, affine: bool) -> Self {
        let () = Self::GROUPS_DIVIDE_CHANNELS;
        GroupNorm {
            weight: affine.then(|| Var::create(Tensor::ones())),
            bias: affine.then(|| Var::create(Tensor::zeros())),
            eps,
        }
    }
}

impl<T: FloatDType, const G: usize, const C: usize, D: Device> Default for GroupNorm<T, G, C, D> {
    fn default() -> Self {
        Self::new()
    }
}

group_norm_inputs! {
    GroupNorm [G, C] [], [group_norm::<G>];
    (B) => (B, Const<C>);
    (B, L) => (B, Const<C>, L);
    (B, H, W) => (B, Const<C>, H, W);
}

/// Instance normalisation (PyTorch's `InstanceNorm1d`/`InstanceNorm2d` with their defaults): each channel of
/// each sample normalised over its positions, for `(N, C, L)` and `(N, C, H, W)` inputs; without `weight` and
/// `bias` unless built with `affine`. PyTorch's option of running statistics (`track_running_stats`) is not
/// offered: the statistics are always the sample's own, in training and evaluation alike.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{InstanceNorm2d, Module};
/// let norm = InstanceNorm2d::<f32, 3, Cpu>::new();
/// let y = norm.forward(Tensor::<f32, Rank4<2, 3, 4, 4>, Cpu>::randn(0));
/// let per_plane = y.reshape::<Rank2<6, 16>>();
/// assert!(per_plane.mean::<Axis<1>>().to_vec().iter().all(|m| m.abs() < 1e-5));
/// ```
#[derive(Parameters)]
pub struct InstanceNorm<T: FloatDType, const C: usize, D: Device, K = AnyRank> {
    /// `(C,)`, multiplies the normalised value (only with `affine`); starts at 1.
    pub weight: Option<Var<T, (Const<C>,), D>>,
    /// `(C,)`, added last (only with `affine`); starts at 0.
    pub bias: Option<Var<T, (Const<C>,), D>>,
    #[parameters(skip)]
    eps: f64,
    #[parameters(skip)]
    kind: PhantomData<K>,
}

/// [`InstanceNorm`] for `(N, C, L)` inputs (PyTorch's `InstanceNorm1d`); another rank is a build error.
pub type InstanceNorm1d<T, const C: usize, D> = InstanceNorm<T, C, D, Spatial<1>>;
/// [`InstanceNorm`] for `(N, C, H, W)` inputs (PyTorch's `InstanceNorm2d`).
pub type InstanceNorm2d<T, const C: usize, D> = InstanceNorm<T, C, D, Spatial<2>>;

impl<T: FloatDType, const C: usize, D: Device, K> InstanceNorm<T, C, D, K> {
    /// PyTorch's defaults: `eps` 1e-5, no affine parameters.
    pub fn new() -> Self {
        Self::with_options(1e-5, false)
    }

    /// `eps` added to the variance; `affine` gives the layer a `weight` and `bias` per channel.
    pub fn with_options(eps: f64, affine: bool) -> Self {
        InstanceNorm {
            weight: affine.then(|| Var::create(Tensor::ones())),
            bias: affine.then(|| Var::create(Tensor::zeros())),
            eps,
            kind: PhantomData,
        }
    }
}

impl<T: FloatDType, const C: usize, D: Device, K> Default for InstanceNorm<T, C, D, K> {
    fn default() -> Self {
        Self::new()
    }
}

group_norm_inputs! {
    InstanceNorm [C] [K], [instance_norm];
    (B, L) => (B, Const<C>, L);
    (B, H, W) => (B, Const<C>, H, W);
}

/// A normalisation layer's optional per-channel parameter.
type ChannelParam<T, const C: usize, D> = Option<Var<T, (Const<C>,), D>>;

/// Visits the optional `weight` and `bias` of a normalisation layer.
pub(super) fn visit_affine<T: FloatDType, const C: usize, D: Device, V: ParamVisitor>(
    weight: &ChannelParam<T, C, D>,
    bias: &ChannelParam<T, C, D>,
    prefix: &str,
    visitor: &mut V,
) {
    if let Some(w) = weight {
        visitor.visit(&join_name(prefix, "weight"), w);
    }
    if let Some(b) = bias {
        visitor.visit(&join_name(prefix, "bias"), b);
    }
}
