//! Activation layers: parameter-free [`Module`]s over plain tensors and traced values of any shape.

use super::{layer, Module, Parameters};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Tensor;

macro_rules! activations {
    ($($(#[$m:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Parameters)]
        pub struct $name;

        #[layer]
        impl<T: FloatDType, S: Shape, D: Device> Module<Value<T, S, D>> for $name {
            type Output = Value<T, S, D>;
            fn forward(&self, x: Value<T, S, D>) -> Self::Output {
                x.$method()
            }
        }

    )*};
}

activations! {
    /// `max(x, 0)`.
    ReLU => relu;
    /// Hyperbolic tangent.
    Tanh => tanh;
    /// `1 / (1 + e^-x)`.
    Sigmoid => sigmoid;
    /// GELU, tanh approximation (PyTorch's `nn.GELU(approximate="tanh")`; its default `nn.GELU()` is
    /// [`GeLUErf`]).
    GeLU => gelu;
    /// GELU, exact erf form (PyTorch's default `nn.GELU()`).
    GeLUErf => gelu_erf;
    /// `x * sigmoid(x)`.
    SiLU => silu;
    /// `x tanh(softplus(x))` (PyTorch's `nn.Mish`).
    Mish => mish;
    /// `x relu6(x + 3) / 6` (PyTorch's `nn.Hardswish`).
    Hardswish => hardswish;
    /// `relu6(x + 3) / 6` (PyTorch's `nn.Hardsigmoid`).
    Hardsigmoid => hardsigmoid;
    /// `min(max(x, 0), 6)` (PyTorch's `nn.ReLU6`).
    ReLU6 => relu6;
    /// `x / (1 + |x|)` (PyTorch's `nn.Softsign`).
    Softsign => softsign;
    /// `ln(sigmoid(x))` (PyTorch's `nn.LogSigmoid`).
    LogSigmoid => log_sigmoid;
    /// SELU with PyTorch's constants (`nn.SELU`).
    SELU => selu;
}

macro_rules! param_activations {
    ($($(#[$m:meta])* $name:ident { $($field:ident = $default:expr),* } => $method:ident;)*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Parameters)]
        pub struct $name {
            $(#[allow(missing_docs)] #[parameters(skip)] pub $field: f64,)*
        }

        impl Default for $name {
            /// PyTorch's defaults.
            fn default() -> Self {
                $name { $($field: $default),* }
            }
        }

        #[layer]
        impl<T: FloatDType, S: Shape, D: Device> Module<Value<T, S, D>> for $name {
            type Output = Value<T, S, D>;
            fn forward(&self, x: Value<T, S, D>) -> Self::Output {
                x.$method($(self.$field),*)
            }
        }

    )*};
}

param_activations! {
    /// PyTorch's `nn.LeakyReLU(negative_slope)`: `x` above 0, `slope x` below; `default()` has slope 0.01.
    LeakyReLU { slope = 0.01 } => leaky_relu;
    /// PyTorch's `nn.ELU(alpha)`; `default()` has alpha 1.
    ELU { alpha = 1.0 } => elu;
    /// PyTorch's `nn.CELU(alpha)`; `default()` has alpha 1.
    CELU { alpha = 1.0 } => celu;
    /// PyTorch's `nn.Softplus(beta, threshold)`; `default()` has beta 1 and threshold 20.
    Softplus { beta = 1.0, threshold = 20.0 } => softplus;
    /// PyTorch's `nn.Hardtanh(min_val, max_val)`; `default()` clamps to [-1, 1].
    Hardtanh { min = -1.0, max = 1.0 } => hardtanh;
}

/// PReLU with one learned slope per channel (axis 1), PyTorch's `nn.PReLU(num_parameters=C)`: every slope starts
/// at 0.25; the parameter is named `weight`, shape `(C,)`, as in PyTorch's `state_dict`.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Module, PReLU};
/// let layer = PReLU::<f32, 2, Cpu>::new();
/// let y = layer.forward(Tensor::<f32, _, Cpu>::from_array([[-4., 4.], [8., -8.]]));
/// assert_eq!(y.to_array(), [[-1., 4.], [8., -2.]]);
/// ```
#[derive(Parameters)]
pub struct PReLU<T: FloatDType, const C: usize, D: Device> {
    /// `(C,)`: the slope of each channel below zero.
    pub weight: crate::autograd::Var<T, (crate::shape::Const<C>,), D>,
}

impl<T: FloatDType, const C: usize, D: Device> PReLU<T, C, D> {
    /// Every slope 0.25 (PyTorch's default).
    pub fn new() -> Self {
        PReLU {
            weight: crate::autograd::Var::create(Tensor::full(T::from_f64(0.25))),
        }
    }
}

impl<T: FloatDType, const C: usize, D: Device> Default for PReLU<T, C, D> {
    fn default() -> Self {
        Self::new()
    }
}

#[layer]
impl<T: FloatDType, const C: usize, D: Device, S> Module<Value<T, S, D>> for PReLU<T, C, D>
where
    S: crate::shape::HasAxis<crate::shape::Axis<1>, Dim = crate::shape::Const<C>>,
{
    type Output = Value<T, S, D>;
    fn forward(&self, x: Value<T, S, D>) -> Self::Output {
        x.prelu(&Value::from(&self.weight))
    }
}
