//! Layer normalisation with a learned gain and bias.

use super::{join_name, Module, ParamVisitor, Parameters};
use crate::autograd::{Traced, Var};
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::{Axis, Const, Dim};
use crate::tensor::Tensor;

/// `(x - mean) / sqrt(var + eps) * gain + bias` over the last axis (of size `N`), for `(batch, N)` and
/// `(batch, seq, N)` inputs. Gain starts at 1, bias at 0.
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
    pub gain: Var<T, (Const<N>,), D>,
    /// `(N,)`, added last.
    pub bias: Var<T, (Const<N>,), D>,
    eps: f64,
}

impl<T: FloatDType, const N: usize, D: Device> LayerNorm<T, N, D> {
    /// Gain 1, bias 0, `eps` added to the variance.
    pub fn new(eps: f64) -> Self {
        LayerNorm {
            gain: Var::new(Tensor::ones()),
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
        x.layer_norm::<Axis<1>>(self.eps) * &self.gain + &self.bias
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim, L: Dim>
    Module<Traced<T, (B, L, Const<N>), D>> for LayerNorm<T, N, D>
{
    type Output = Traced<T, (B, L, Const<N>), D>;
    fn forward(&self, x: Traced<T, (B, L, Const<N>), D>) -> Self::Output {
        x.layer_norm::<Axis<2>>(self.eps) * &self.gain + &self.bias
    }
}

impl<T: FloatDType, const N: usize, D: Device, B: Dim> Module<Tensor<T, (B, Const<N>), D>>
    for LayerNorm<T, N, D>
{
    type Output = Tensor<T, (B, Const<N>), D>;
    fn forward(&self, x: Tensor<T, (B, Const<N>), D>) -> Self::Output {
        let mut y = x.layer_norm::<Axis<1>>(self.eps);
        y *= &self.gain.value();
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
        y *= &self.gain.value();
        y += &self.bias.value();
        y
    }
}

impl<T: FloatDType, const N: usize, D: Device> Parameters for LayerNorm<T, N, D> {
    fn visit_params<V: ParamVisitor>(&self, prefix: &str, visitor: &mut V) {
        visitor.visit(&join_name(prefix, "gain"), &self.gain);
        visitor.visit(&join_name(prefix, "bias"), &self.bias);
    }
}
