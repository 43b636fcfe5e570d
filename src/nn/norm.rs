//! Normalisation layers: layer norm with a learned weight and bias, RMS norm with a learned weight.

use super::{join_name, Module, ParamVisitor, Parameters};
use crate::autograd::{Traced, Var};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{Axis, Const, Dim};
use crate::tensor::Tensor;

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the last axis (of size `N`), for `(batch, N)` and
/// `(batch, seq, N)` inputs (PyTorch's `LayerNorm(N)`, its parameters named `weight` and `bias`). The weight
/// starts at 1, the bias at 0.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{LayerNorm, Module};
/// let norm = LayerNorm::<f32, 4, Cpu>::new(1e-5);
/// let y = norm.forward(Tensor::<f32, _, Cpu>::from_array([[1., 2., 3., 4.]]));
/// assert!(y.mean_all().to_scalar().abs() < 1e-6);
/// ```
pub struct LayerNorm<T: FloatDType, const N: usize, D: Device> {
    /// `(N,)`, multiplies the normalised value.
    pub weight: Var<T, (Const<N>,), D>,
    /// `(N,)`, added last.
    pub bias: Var<T, (Const<N>,), D>,
    eps: f64,
}

impl<T: FloatDType, const N: usize, D: Device> LayerNorm<T, N, D> {
    /// Weight 1, bias 0, `eps` added to the variance.
    pub fn new(eps: f64) -> Self {
        LayerNorm {
            weight: Var::new(Tensor::ones()),
            bias: Var::new(Tensor::zeros()),
            eps,
        }
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim> Module<Traced<T, (B, Const<N>), D>>
    for LayerNorm<T, N, D>
{
    type Output = Traced<T, (B, Const<N>), D>;
    fn forward(&self, x: Traced<T, (B, Const<N>), D>) -> Self::Output {
        x.layer_norm::<Axis<1>>(self.eps) * &self.weight + &self.bias
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim, L: Dim>
    Module<Traced<T, (B, L, Const<N>), D>> for LayerNorm<T, N, D>
{
    type Output = Traced<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Traced<T, (B, L, Const<N>), D>) -> Self::Output {
        x.layer_norm::<Axis<2>>(self.eps) * &self.weight + &self.bias
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim> Module<Tensor<T, (B, Const<N>), D>>
    for LayerNorm<T, N, D>
{
    type Output = Tensor<T, (B, Const<N>), D>;
    fn forward(&self, x: Tensor<T, (B, Const<N>), D>) -> Self::Output {
        let mut y = x.layer_norm::<Axis<1>>(self.eps);
        y *= &self.weight.value();
        y += &self.bias.value();
        y
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim, L: Dim>
    Module<Tensor<T, (B, L, Const<N>), D>> for LayerNorm<T, N, D>
{
    type Output = Tensor<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Tensor<T, (B, L, Const<N>), D>) -> Self::Output {
        let mut y = x.layer_norm::<Axis<2>>(self.eps);
        y *= &self.weight.value();
        y += &self.bias.value();
        y
    }
}

impl<T: FloatDType, const N: usize, D: Device> Parameters for LayerNorm<T, N, D> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        visitor.visit(&join_name(prefix, "weight"), &self.weight);
        visitor.visit(&join_name(prefix, "bias"), &self.bias);
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
pub struct RMSNorm<T: FloatDType, const N: usize, D: Device> {
    /// `(N,)`, multiplies the normalised value.
    pub weight: Var<T, (Const<N>,), D>,
    eps: f64,
}

impl<T: FloatDType, const N: usize, D: Device> RMSNorm<T, N, D> {
    /// Weight 1, `eps` added to the mean square.
    pub fn new(eps: f64) -> Self {
        RMSNorm {
            weight: Var::new(Tensor::ones()),
            eps,
        }
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim> Module<Traced<T, (B, Const<N>), D>>
    for RMSNorm<T, N, D>
{
    type Output = Traced<T, (B, Const<N>), D>;
    fn forward(&self, x: Traced<T, (B, Const<N>), D>) -> Self::Output {
        x.rms_norm::<Axis<1>>(self.eps) * &self.weight
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim, L: Dim>
    Module<Traced<T, (B, L, Const<N>), D>> for RMSNorm<T, N, D>
{
    type Output = Traced<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Traced<T, (B, L, Const<N>), D>) -> Self::Output {
        x.rms_norm::<Axis<2>>(self.eps) * &self.weight
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim> Module<Tensor<T, (B, Const<N>), D>>
    for RMSNorm<T, N, D>
{
    type Output = Tensor<T, (B, Const<N>), D>;
    fn forward(&self, x: Tensor<T, (B, Const<N>), D>) -> Self::Output {
        let mut y = x.rms_norm::<Axis<1>>(self.eps);
        y *= &self.weight.value();
        y
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim, L: Dim>
    Module<Tensor<T, (B, L, Const<N>), D>> for RMSNorm<T, N, D>
{
    type Output = Tensor<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Tensor<T, (B, L, Const<N>), D>) -> Self::Output {
        let mut y = x.rms_norm::<Axis<2>>(self.eps);
        y *= &self.weight.value();
        y
    }
}

impl<T: FloatDType, const N: usize, D: Device> Parameters for RMSNorm<T, N, D> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        visitor.visit(&join_name(prefix, "weight"), &self.weight);
    }
}
