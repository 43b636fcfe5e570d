//! Convolution layers for `(N, C, ...)` inputs, one generic definition ([`ConvNd`]) whose spatial rank and
//! direction are a type parameter: [`Conv1d`], [`Conv2d`], [`Conv3d`], [`ConvTranspose1d`] and
//! [`ConvTranspose2d`] are its aliases.
//!
//! Stable Rust cannot compute an output size like `(H + 2 P - D (K - 1) - 1) / S + 1` in a type, so these layers
//! name their output size (`OL`, `OH x OW`, `OD x OH x OW`) as const parameters, and, with groups, the weight's
//! channels per group; the input size is inferred from the input type and checked against them when the model
//! is built (`cargo build`), the message naming the number to write.

use super::{layer, BiasKind, Module, Parameters, WithBias};
use crate::autograd::Var;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{ConstShape, Rank1, Rank2, Rank3, Rank4, Rank5};
use crate::tensor::{Conv, Tensor};

/// The spatial part of a [`ConvNd`] layer's type: its output's spatial sizes (`Rank1<OL>`, `Rank2<OH, OW>`,
/// `Rank3<OD, OH, OW>`), or [`Transposed`] ones for a transposed convolution. It fixes the weight's shape and
/// the default initialisation's fan-in.
pub trait ConvOutput: Copy + Default + Send + Sync + 'static {
    /// The number of spatial axes: 1, 2 or 3.
    const AXES: usize;
    /// Whether the layer is a transposed convolution (its weight is `(C_IN, C_OUT, K, ..)`).
    const TRANSPOSED: bool;
    /// The weight's shape, PyTorch's layouts: `(C_OUT, CG, K, ..)` with one `K` per spatial axis, or
    /// `(C_IN, CG, K, ..)` for a transposed convolution, where `CG` is the channels per group on the other side
    /// (`C_IN / GROUPS`, or `C_OUT / GROUPS` when transposed).
    type Weight<const C_IN: usize, const C_OUT: usize, const CG: usize, const K: usize>: ConstShape;
}

/// The output sizes `O` of a transposed convolution layer ([`ConvTranspose1d`], [`ConvTranspose2d`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transposed<O>(core::marker::PhantomData<O>);

impl<const OL: usize> ConvOutput for Rank1<OL> {
    const AXES: usize = 1;
    const TRANSPOSED: bool = false;
    type Weight<const C_IN: usize, const C_OUT: usize, const CG: usize, const K: usize> =
        Rank3<C_OUT, CG, K>;
}

impl<const OH: usize, const OW: usize> ConvOutput for Rank2<OH, OW> {
    const AXES: usize = 2;
    const TRANSPOSED: bool = false;
    type Weight<const C_IN: usize, const C_OUT: usize, const CG: usize, const K: usize> =
        Rank4<C_OUT, CG, K, K>;
}

impl<const OD: usize, const OH: usize, const OW: usize> ConvOutput for Rank3<OD, OH, OW> {
    const AXES: usize = 3;
    const TRANSPOSED: bool = false;
    type Weight<const C_IN: usize, const C_OUT: usize, const CG: usize, const K: usize> =
        Rank5<C_OUT, CG, K, K, K>;
}

impl<const OL: usize> ConvOutput for Transposed<Rank1<OL>> {
    const AXES: usize = 1;
    const TRANSPOSED: bool = true;
    type Weight<const C_IN: usize, const C_OUT: usize, const CG: usize, const K: usize> =
        Rank3<C_IN, CG, K>;
}

impl<const OH: usize, const OW: usize> ConvOutput for Transposed<Rank2<OH, OW>> {
    const AXES: usize = 2;
    const TRANSPOSED: bool = true;
    type Weight<const C_IN: usize, const C_OUT: usize, const CG: usize, const K: usize> =
        Rank4<C_IN, CG, K, K>;
}

/// A convolution layer, `C_IN -> C_OUT` channels, a kernel of `K` along every spatial axis, output spatial sizes
/// `O` (see [`ConvOutput`]), stride `STRIDE`, padding `PADDING` and dilation `DILATION` on every axis, `GROUPS`
/// channel groups, with a bias per output channel. Name it by its aliases, PyTorch's names: [`Conv1d`],
/// [`Conv2d`], [`Conv3d`], [`ConvTranspose1d`], [`ConvTranspose2d`]. With groups, `CG` is the weight's second
/// dim, the channels per group (`C_IN / GROUPS`; `C_OUT / GROUPS` when transposed): stable Rust cannot divide
/// in a type, so it is named, and checked when the model is built. Per-axis geometry is available through the
/// functional ops ([`Tensor::conv2d`] and its siblings).
///
/// ```
/// use typed_tensor::nn::prelude::*;
/// use typed_tensor::prelude::*;
/// // MobileNet's depthwise 3x3 (groups = channels, one input channel per group) and a dilated 3x3.
/// let depthwise = Conv2d::<f32, 8, 8, 3, 16, 16, Cpu, 1, 1, 1, 8, 1>::new(0);
/// let dilated = Conv2d::<f32, 8, 4, 3, 16, 16, Cpu, 1, 2, 2>::new(1); // padding 2, dilation 2: 16x16 stays
/// assert_eq!(depthwise.weight.value().dims().to_vec(), [8, 1, 3, 3]); // PyTorch's shape
/// let x = Tensor::<f32, Rank4<1, 8, 16, 16>, Cpu>::randn(2);
/// let y: Tensor<f32, Rank4<1, 4, 16, 16>, Cpu> = dilated.forward(depthwise.forward(x));
/// ```
#[derive(Parameters)]
pub struct ConvNd<
    T: FloatDType,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    O: ConvOutput,
    D: Device,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
    const DILATION: usize = 1,
    const GROUPS: usize = 1,
    const CG: usize = C_IN,
    B: BiasKind = WithBias,
> {
    /// `(C_OUT, CG, K, ..)`, or `(C_IN, CG, K, ..)` for a transposed convolution (`CG` the channels per group).
    pub weight: Var<T, O::Weight<C_IN, C_OUT, CG, K>, D>,
    /// `(C_OUT,)`, added to every position, or `()` without a bias ([`NoBias`](super::NoBias), PyTorch's
    /// `bias=False`).
    pub bias: B::Param<T, Rank1<C_OUT>, D>,
}

impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        O: ConvOutput,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
        const DILATION: usize,
        const GROUPS: usize,
        const CG: usize,
        B: BiasKind,
    > ConvNd<T, C_IN, C_OUT, K, O, D, STRIDE, PADDING, DILATION, GROUPS, CG, B>
{
    /// Weights and bias uniform in `(-1/sqrt(fan_in), 1/sqrt(fan_in))` (PyTorch's default): `fan_in` is the
    /// weight's second dim times the kernel's size, `CG K^d` for `d` spatial axes (`C_IN K^d` without groups;
    /// `C_OUT K^d` for a transposed convolution), as PyTorch counts it.
    pub fn new(seed: u64) -> Self {
        let bound = 1.0 / ((CG * K.pow(O::AXES as u32)) as f64).sqrt();
        ConvNd {
            weight: Var::create(uniform(seed, bound)),
            bias: B::make(|| uniform(seed.wrapping_add(0x9e37_79b9), bound)),
        }
    }

    /// Every parameter zero: the layer to load a checkpoint into (`io::load`), which needs no seed.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Conv2d;
    /// let conv = Conv2d::<f32, 3, 8, 3, 30, 30, Cpu>::zeros();
    /// assert!(conv.weight.value().to_vec().iter().all(|&w| w == 0.0));
    /// ```
    pub fn zeros() -> Self {
        ConvNd {
            weight: Var::create(Tensor::zeros()),
            bias: B::make(Tensor::zeros),
        }
    }
}

/// A tensor uniform in `(-bound, bound)`.
fn uniform<T: FloatDType, S: ConstShape, D: Device>(seed: u64, bound: f64) -> Tensor<T, S, D> {
    Tensor::uniform(-bound, bound, seed)
}

/// 1-D convolution, `C_IN -> C_OUT` channels, kernel `K`, output length `OL`, with a bias per output channel
/// (PyTorch's `Conv1d`; weight `(C_OUT, C_IN, K)`, or `(C_OUT, CG, K)` with `GROUPS` groups of `CG` input
/// channels; see [`ConvNd`]).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Conv1d, Module};
/// // Length 10, kernel 3, stride 2, padding 1: (10 + 2 - 3) / 2 + 1 = 5.
/// let conv = Conv1d::<f32, 2, 4, 3, 5, Cpu, 2, 1>::new(0);
/// let y: Tensor<f32, Rank3<8, 4, 5>, Cpu> = conv.forward(Tensor::<f32, Rank3<8, 2, 10>, Cpu>::zeros());
/// ```
pub type Conv1d<
    T,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OL: usize,
    D,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
    const DILATION: usize = 1,
    const GROUPS: usize = 1,
    const CG: usize = C_IN,
    B = WithBias,
> = ConvNd<T, C_IN, C_OUT, K, Rank1<OL>, D, STRIDE, PADDING, DILATION, GROUPS, CG, B>;

/// 2-D convolution, `C_IN -> C_OUT` channels, `K x K` kernel, output `OH x OW`, with a bias per output channel
/// (PyTorch's `Conv2d(C_IN, C_OUT, K, stride, padding, dilation, groups)`; weight `(C_OUT, C_IN, K, K)`, or
/// `(C_OUT, CG, K, K)` with `GROUPS` groups of `CG` input channels; see [`ConvNd`]). Per-axis geometry is
/// available through the functional [`Tensor::conv2d`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Conv2d, Module};
/// // 8x8 in, "same" padding: 8x8 out.
/// let conv = Conv2d::<f32, 1, 4, 3, 8, 8, Cpu, 1, 1>::new(0);
/// let y: Tensor<f32, Rank4<2, 4, 8, 8>, Cpu> = conv.forward(Tensor::<f32, Rank4<2, 1, 8, 8>, Cpu>::zeros());
/// ```
pub type Conv2d<
    T,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OH: usize,
    const OW: usize,
    D,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
    const DILATION: usize = 1,
    const GROUPS: usize = 1,
    const CG: usize = C_IN,
    B = WithBias,
> = ConvNd<T, C_IN, C_OUT, K, Rank2<OH, OW>, D, STRIDE, PADDING, DILATION, GROUPS, CG, B>;

/// 3-D convolution, `C_IN -> C_OUT` channels, `K x K x K` kernel, output `OD x OH x OW`, with a bias per output
/// channel (PyTorch's `Conv3d`; weight `(C_OUT, C_IN, K, K, K)`, or `(C_OUT, CG, K, K, K)` with groups; see
/// [`ConvNd`]). Per-axis geometry is available through the functional [`Tensor::conv3d`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Conv3d, Module};
/// // 4x8x8 in, kernel 3, padding 1: 4x8x8 out.
/// let conv = Conv3d::<f32, 2, 4, 3, 4, 8, 8, Cpu, 1, 1>::new(0);
/// let y: Tensor<f32, Rank5<1, 4, 4, 8, 8>, Cpu> =
///     conv.forward(Tensor::<f32, Rank5<1, 2, 4, 8, 8>, Cpu>::zeros());
/// ```
pub type Conv3d<
    T,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OD: usize,
    const OH: usize,
    const OW: usize,
    D,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
    const DILATION: usize = 1,
    const GROUPS: usize = 1,
    const CG: usize = C_IN,
    B = WithBias,
> = ConvNd<T, C_IN, C_OUT, K, Rank3<OD, OH, OW>, D, STRIDE, PADDING, DILATION, GROUPS, CG, B>;

/// Transposed 1-D convolution, `C_IN -> C_OUT` channels, kernel `K`, output length `OL` (PyTorch's
/// `ConvTranspose1d`; weight `(C_IN, C_OUT, K)`, output length `(L - 1) STRIDE - 2 PADDING + K`, checked at
/// build time), with a bias per output channel; with `GROUPS` groups the weight is `(C_IN, CG, K)`, `CG` the
/// output channels per group (see [`ConvNd`]).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{ConvTranspose1d, Module};
/// // Length 5 -> 10: (5 - 1) 2 - 2 + 4 = 10.
/// let up = ConvTranspose1d::<f32, 3, 2, 4, 10, Cpu, 2, 1>::new(0);
/// let y: Tensor<f32, Rank3<1, 2, 10>, Cpu> = up.forward(Tensor::<f32, Rank3<1, 3, 5>, Cpu>::ones());
/// ```
pub type ConvTranspose1d<
    T,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OL: usize,
    D,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
    const DILATION: usize = 1,
    const GROUPS: usize = 1,
    const CG: usize = C_OUT,
    B = WithBias,
> = ConvNd<T, C_IN, C_OUT, K, Transposed<Rank1<OL>>, D, STRIDE, PADDING, DILATION, GROUPS, CG, B>;

/// Transposed 2-D convolution, `C_IN -> C_OUT` channels, `K x K` kernel, output `OH x OW` (PyTorch's
/// `ConvTranspose2d`; weight `(C_IN, C_OUT, K, K)`, output size `(H - 1) STRIDE - 2 PADDING + K`, checked at
/// build time), with a bias per output channel; with `GROUPS` groups the weight is `(C_IN, CG, K, K)`, `CG` the
/// output channels per group (see [`ConvNd`]).
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{ConvTranspose2d, Module};
/// // 4x4 -> 8x8: (4 - 1) 2 - 2 + 4 = 8.
/// let up = ConvTranspose2d::<f32, 3, 2, 4, 8, 8, Cpu, 2, 1>::new(0);
/// let y: Tensor<f32, Rank4<1, 2, 8, 8>, Cpu> = up.forward(Tensor::<f32, Rank4<1, 3, 4, 4>, Cpu>::ones());
/// ```
pub type ConvTranspose2d<
    T,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OH: usize,
    const OW: usize,
    D,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
    const DILATION: usize = 1,
    const GROUPS: usize = 1,
    const CG: usize = C_OUT,
    B = WithBias,
> = ConvNd<
    T,
    C_IN,
    C_OUT,
    K,
    Transposed<Rank2<OH, OW>>,
    D,
    STRIDE,
    PADDING,
    DILATION,
    GROUPS,
    CG,
    B,
>;

/// `Module` for one rank and direction of [`ConvNd`]: the functional op `$op` on the input, then the bias,
/// reshaped to `$bias` (channels, then a 1 per spatial axis), broadcast over the output (for tensors and traced
/// values alike: `#[layer]`). `$out` is the output's spatial part of the layer's type, `$x`/`$y` the input and
/// output shapes, `$consts` the sizes they name.
macro_rules! conv_module {
    ($out:ty, $op:ident, $bias:ty, $x:ty, $y:ty, [$($consts:tt)*]) => {
        #[layer]
        impl<
                T: FloatDType,
                const C_IN: usize,
                const C_OUT: usize,
                const K: usize,
                D: Device,
                const STRIDE: usize,
                const PADDING: usize,
                const DILATION: usize,
                const GROUPS: usize,
                const CG: usize,
                B: BiasKind,
                const N: usize,
                $($consts)*
            > Module<Value<T, $x, D>>
            for ConvNd<T, C_IN, C_OUT, K, $out, D, STRIDE, PADDING, DILATION, GROUPS, CG, B>
        {
            type Output = Value<T, $y, D>;
            fn forward(&self, x: Value<T, $x, D>) -> Self::Output {
                let conv = Conv::<STRIDE, PADDING, DILATION, GROUPS>;
                let y: Self::Output = x.$op(&Value::from(&self.weight), conv);
                match B::var(&self.bias) {
                    Some(b) => y + &Value::from(b).reshape::<$bias>().broadcast::<$y>(),
                    None => y,
                }
            }
        }
    };
}

conv_module!(Rank1<OL>, conv1d, Rank2<C_OUT, 1>, Rank3<N, C_IN, L>, Rank3<N, C_OUT, OL>,
    [const OL: usize, const L: usize]);
conv_module!(Rank2<OH, OW>, conv2d, Rank3<C_OUT, 1, 1>, Rank4<N, C_IN, H, W>, Rank4<N, C_OUT, OH, OW>,
    [const OH: usize, const OW: usize, const H: usize, const W: usize]);
conv_module!(Rank3<OD, OH, OW>, conv3d, Rank4<C_OUT, 1, 1, 1>, Rank5<N, C_IN, DP, H, W>,
    Rank5<N, C_OUT, OD, OH, OW>,
    [const OD: usize, const OH: usize, const OW: usize, const DP: usize, const H: usize, const W: usize]);
conv_module!(Transposed<Rank1<OL>>, conv_transpose1d, Rank2<C_OUT, 1>, Rank3<N, C_IN, L>,
    Rank3<N, C_OUT, OL>, [const OL: usize, const L: usize]);
conv_module!(Transposed<Rank2<OH, OW>>, conv_transpose2d, Rank3<C_OUT, 1, 1>, Rank4<N, C_IN, H, W>,
    Rank4<N, C_OUT, OH, OW>, [const OH: usize, const OW: usize, const H: usize, const W: usize]);
