//! Activation layers: parameter-free [`Module`]s over plain tensors and traced values of any shape.

use super::{Module, ParamVisitor, Parameters};
use crate::autograd::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::Shape;
use crate::tensor::Tensor;

macro_rules! activations {
    ($($(#[$m:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;

        impl<T: FloatDType, S: Shape, D: Device> Module<Tensor<T, S, D>> for $name {
            type Output = Tensor<T, S, D>;
            fn forward(&self, x: Tensor<T, S, D>) -> Self::Output {
                x.$method()
            }
        }

        impl<T: FloatDType, S: Shape, D: Device> Module<Traced<T, S, D>> for $name {
            type Output = Traced<T, S, D>;
            fn forward(&self, x: Traced<T, S, D>) -> Self::Output {
                x.$method()
            }
        }

        impl Parameters for $name {
            fn visit_params<V: ParamVisitor>(&self, _: &str, _: &mut V) {}
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
    /// GELU, tanh approximation.
    GeLU => gelu;
    /// `x * sigmoid(x)`.
    SiLU => silu;
}
