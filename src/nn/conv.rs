//! Convolution layers for `(N, C, ...)` inputs: 1-, 2- and 3-D, and the transposed 2-D convolution.
//!
//! Stable Rust cannot compute an output size like `(H + 2 P - K) / S + 1` in a type, so these layers name their
//! output size (`OH`, `OW`, or the flattened width) as const parameters; the input size is inferred from the
//! input type and checked against them by a `const` assertion when the model is built (`cargo build`).

use super::{layer, Module, Parameters};
use crate::autograd::Var;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{Const, Rank3, Rank4, Rank5};
use crate::tensor::{Conv, Tensor};

/// 2-D convolution, `C_IN -> C_OUT` channels, `K x K` kernel, output `OH x OW`, with a bias per output channel.
/// Dilation and groups are available through the functional [`Tensor::conv2d`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Conv2d, Module};
/// // 8x8 in, "same" padding: 8x8 out.
/// let conv = Conv2d::<f32, 1, 4, 3, 8, 8, Cpu, 1, 1>::new(0);
/// let y: Tensor<f32, Rank4<2, 4, 8, 8>, Cpu> = conv.forward(Tensor::<f32, Rank4<2, 1, 8, 8>, Cpu>::zeros());
/// ```
#[derive(Parameters)]
pub struct Conv2d<
    T: FloatDType,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OH: usize,
    const OW: usize,
    D: Device,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
> {
    /// `(C_OUT, C_IN, K, K)`.
    pub weight: Var<T, Rank4<C_OUT, C_IN, K, K>, D>,
    /// `(C_OUT,)`, added to every position.
    pub bias: Var<T, (Const<C_OUT>,), D>,
}

impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
    > Conv2d<T, C_IN, C_OUT, K, OH, OW, D, STRIDE, PADDING>
{
    /// Weights and bias uniform in `(-1/sqrt(C_IN K K), 1/sqrt(C_IN K K))` (PyTorch's default).
    pub fn new(seed: u64) -> Self {
        let bound = 1.0 / ((C_IN * K * K) as f64).sqrt();
        Conv2d {
            weight: Var::new(uniform(seed, bound)),
            bias: Var::new(uniform(seed.wrapping_add(0x9e37_79b9), bound)),
        }
    }
}

#[layer]
impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
        const N: usize,
        const H: usize,
        const W: usize,
    > Module<Value<T, Rank4<N, C_IN, H, W>, D>>
    for Conv2d<T, C_IN, C_OUT, K, OH, OW, D, STRIDE, PADDING>
{
    type Output = Value<T, Rank4<N, C_OUT, OH, OW>, D>;
    fn forward(&self, x: Value<T, Rank4<N, C_IN, H, W>, D>) -> Self::Output {
        let y: Self::Output = x.conv2d(&Value::from(&self.weight), Conv::<STRIDE, PADDING, 1, 1>);
        let bias = Value::from(&self.bias).reshape::<(Const<C_OUT>, Const<1>, Const<1>)>();
        y + &bias.broadcast::<Rank4<N, C_OUT, OH, OW>>()
    }
}

/// 1-D convolution, `C_IN -> C_OUT` channels, kernel `K`, output length `OL`, with a bias per output channel
/// (PyTorch's `Conv1d`; weight `(C_OUT, C_IN, K)`). Dilation and groups are available through the functional
/// [`Tensor::conv1d`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Conv1d, Module};
/// // Length 10, kernel 3, stride 2, padding 1: (10 + 2 - 3) / 2 + 1 = 5.
/// let conv = Conv1d::<f32, 2, 4, 3, 5, Cpu, 2, 1>::new(0);
/// let y: Tensor<f32, Rank3<8, 4, 5>, Cpu> = conv.forward(Tensor::<f32, Rank3<8, 2, 10>, Cpu>::zeros());
/// ```
#[derive(Parameters)]
pub struct Conv1d<
    T: FloatDType,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OL: usize,
    D: Device,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
> {
    /// `(C_OUT, C_IN, K)`.
    pub weight: Var<T, Rank3<C_OUT, C_IN, K>, D>,
    /// `(C_OUT,)`, added to every position.
    pub bias: Var<T, (Const<C_OUT>,), D>,
}

impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OL: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
    > Conv1d<T, C_IN, C_OUT, K, OL, D, STRIDE, PADDING>
{
    /// Weights and bias uniform in `(-1/sqrt(C_IN K), 1/sqrt(C_IN K))` (PyTorch's default).
    pub fn new(seed: u64) -> Self {
        let bound = 1.0 / ((C_IN * K) as f64).sqrt();
        Conv1d {
            weight: Var::new(uniform(seed, bound)),
            bias: Var::new(uniform(seed.wrapping_add(0x9e37_79b9), bound)),
        }
    }
}

/// A tensor uniform in `(-bound, bound)`.
fn uniform<T: FloatDType, S: crate::shape::ConstShape, D: Device>(
    seed: u64,
    bound: f64,
) -> Tensor<T, S, D> {
    Tensor::uniform(-bound, bound, seed)
}

#[layer]
impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OL: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
        const N: usize,
        const L: usize,
    > Module<Value<T, Rank3<N, C_IN, L>, D>> for Conv1d<T, C_IN, C_OUT, K, OL, D, STRIDE, PADDING>
{
    type Output = Value<T, Rank3<N, C_OUT, OL>, D>;
    fn forward(&self, x: Value<T, Rank3<N, C_IN, L>, D>) -> Self::Output {
        let y: Self::Output = x.conv1d(&Value::from(&self.weight), Conv::<STRIDE, PADDING, 1, 1>);
        let bias = Value::from(&self.bias).reshape::<(Const<C_OUT>, Const<1>)>();
        y + &bias.broadcast::<Rank3<N, C_OUT, OL>>()
    }
}

/// Transposed 2-D convolution, `C_IN -> C_OUT` channels, `K x K` kernel, output `OH x OW` (PyTorch's
/// `ConvTranspose2d`; weight `(C_IN, C_OUT, K, K)`, output size `(H - 1) STRIDE - 2 PADDING + K`, checked at
/// build time), with a bias per output channel. Dilation and groups are available through the functional
/// [`Tensor::conv_transpose2d`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{ConvTranspose2d, Module};
/// // 4x4 -> 8x8: (4 - 1) 2 - 2 + 4 = 8.
/// let up = ConvTranspose2d::<f32, 3, 2, 4, 8, 8, Cpu, 2, 1>::new(0);
/// let y: Tensor<f32, Rank4<1, 2, 8, 8>, Cpu> = up.forward(Tensor::<f32, Rank4<1, 3, 4, 4>, Cpu>::ones());
/// ```
#[derive(Parameters)]
pub struct ConvTranspose2d<
    T: FloatDType,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OH: usize,
    const OW: usize,
    D: Device,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
> {
    /// `(C_IN, C_OUT, K, K)`.
    pub weight: Var<T, Rank4<C_IN, C_OUT, K, K>, D>,
    /// `(C_OUT,)`, added to every position.
    pub bias: Var<T, (Const<C_OUT>,), D>,
}

impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
    > ConvTranspose2d<T, C_IN, C_OUT, K, OH, OW, D, STRIDE, PADDING>
{
    /// Weights and bias uniform in `(-1/sqrt(C_OUT K K), 1/sqrt(C_OUT K K))` (PyTorch's default: its fan-in of
    /// a transposed convolution is the weight's second dim times the kernel's area).
    pub fn new(seed: u64) -> Self {
        let bound = 1.0 / ((C_OUT * K * K) as f64).sqrt();
        ConvTranspose2d {
            weight: Var::new(uniform(seed, bound)),
            bias: Var::new(uniform(seed.wrapping_add(0x9e37_79b9), bound)),
        }
    }
}

#[layer]
impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
        const N: usize,
        const H: usize,
        const W: usize,
    > Module<Value<T, Rank4<N, C_IN, H, W>, D>>
    for ConvTranspose2d<T, C_IN, C_OUT, K, OH, OW, D, STRIDE, PADDING>
{
    type Output = Value<T, Rank4<N, C_OUT, OH, OW>, D>;
    fn forward(&self, x: Value<T, Rank4<N, C_IN, H, W>, D>) -> Self::Output {
        let y: Self::Output =
            x.conv_transpose2d(&Value::from(&self.weight), Conv::<STRIDE, PADDING, 1, 1>);
        let bias = Value::from(&self.bias).reshape::<(Const<C_OUT>, Const<1>, Const<1>)>();
        y + &bias.broadcast::<Rank4<N, C_OUT, OH, OW>>()
    }
}

/// 3-D convolution, `C_IN -> C_OUT` channels, `K x K x K` kernel, output `OD x OH x OW`, with a bias per output
/// channel (PyTorch's `Conv3d`; weight `(C_OUT, C_IN, K, K, K)`). Per-axis geometry, dilation and groups are
/// available through the functional [`Tensor::conv3d`].
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Conv3d, Module};
/// // 4x8x8 in, kernel 3, padding 1: 4x8x8 out.
/// let conv = Conv3d::<f32, 2, 4, 3, 4, 8, 8, Cpu, 1, 1>::new(0);
/// let y: Tensor<f32, Rank5<1, 4, 4, 8, 8>, Cpu> =
///     conv.forward(Tensor::<f32, Rank5<1, 2, 4, 8, 8>, Cpu>::zeros());
/// ```
#[derive(Parameters)]
pub struct Conv3d<
    T: FloatDType,
    const C_IN: usize,
    const C_OUT: usize,
    const K: usize,
    const OD: usize,
    const OH: usize,
    const OW: usize,
    D: Device,
    const STRIDE: usize = 1,
    const PADDING: usize = 0,
> {
    /// `(C_OUT, C_IN, K, K, K)`.
    pub weight: Var<T, Rank5<C_OUT, C_IN, K, K, K>, D>,
    /// `(C_OUT,)`, added to every position.
    pub bias: Var<T, (Const<C_OUT>,), D>,
}

impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OD: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
    > Conv3d<T, C_IN, C_OUT, K, OD, OH, OW, D, STRIDE, PADDING>
{
    /// Weights and bias uniform in `(-1/sqrt(C_IN K^3), 1/sqrt(C_IN K^3))` (PyTorch's default).
    pub fn new(seed: u64) -> Self {
        let bound = 1.0 / ((C_IN * K * K * K) as f64).sqrt();
        Conv3d {
            weight: Var::new(uniform(seed, bound)),
            bias: Var::new(uniform(seed.wrapping_add(0x9e37_79b9), bound)),
        }
    }
}

#[layer]
impl<
        T: FloatDType,
        const C_IN: usize,
        const C_OUT: usize,
        const K: usize,
        const OD: usize,
        const OH: usize,
        const OW: usize,
        D: Device,
        const STRIDE: usize,
        const PADDING: usize,
        const N: usize,
        const DP: usize,
        const H: usize,
        const W: usize,
    > Module<Value<T, Rank5<N, C_IN, DP, H, W>, D>>
    for Conv3d<T, C_IN, C_OUT, K, OD, OH, OW, D, STRIDE, PADDING>
{
    type Output = Value<T, Rank5<N, C_OUT, OD, OH, OW>, D>;
    fn forward(&self, x: Value<T, Rank5<N, C_IN, DP, H, W>, D>) -> Self::Output {
        let y: Self::Output = x.conv3d(&Value::from(&self.weight), Conv::<STRIDE, PADDING, 1, 1>);
        let bias =
            Value::from(&self.bias).reshape::<(Const<C_OUT>, Const<1>, Const<1>, Const<1>)>();
        y + &bias.broadcast::<Rank5<N, C_OUT, OD, OH, OW>>()
    }
}
