//! Whether a layer has a bias, PyTorch's `bias=True` / `bias=False`, as a type parameter of the layers that take
//! one ([`Linear`](super::Linear), the conv layers): [`WithBias`] (the default) holds a `(C,)` parameter named
//! `bias`, [`NoBias`] holds nothing, so a checkpoint saved without biases (a ResNet's convolutions before their
//! batch norms, a transformer's projections) loads unchanged.

use super::Parameters;
use crate::autograd::Var;
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Tensor;

/// A layer's bias: [`WithBias`] or [`NoBias`].
pub trait BiasKind: Copy + Default + Send + Sync + 'static {
    /// What the layer holds: a parameter of shape `S` (`(C,)` for a bias per output channel; `(3, E)` for the
    /// packed query, key and value biases of an attention layer), or `()`.
    type Param<T: FloatDType, S: Shape, D: Device>: Parameters;
    /// The parameter, its values from `init` (not called without a bias).
    fn make<T: FloatDType, S: Shape, D: Device>(
        init: impl FnOnce() -> Tensor<T, S, D>,
    ) -> Self::Param<T, S, D>;
    /// The bias to add, if the layer has one.
    fn var<T: FloatDType, S: Shape, D: Device>(
        param: &Self::Param<T, S, D>,
    ) -> Option<&Var<T, S, D>>;
}

/// A bias per output channel (PyTorch's default, `bias=True`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WithBias;

/// No bias (PyTorch's `bias=False`): the layer's `bias` field is `()` and its parameters have no `bias`.
///
/// ```
/// use typed_tensor::nn::{prelude::*, NoBias};
/// use typed_tensor::prelude::*;
/// let proj = Linear::<f32, 4, 2, Cpu, NoBias>::new(0);
/// let y = proj.forward(Tensor::<f32, Rank2<1, 4>, Cpu>::zeros());
/// assert_eq!(y.to_array(), [[0., 0.]]); // x W^T, nothing added
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoBias;

impl BiasKind for WithBias {
    type Param<T: FloatDType, S: Shape, D: Device> = Var<T, S, D>;
    fn make<T: FloatDType, S: Shape, D: Device>(
        init: impl FnOnce() -> Tensor<T, S, D>,
    ) -> Self::Param<T, S, D> {
        Var::create(init())
    }
    fn var<T: FloatDType, S: Shape, D: Device>(
        param: &Self::Param<T, S, D>,
    ) -> Option<&Var<T, S, D>> {
        Some(param)
    }
}

impl BiasKind for NoBias {
    type Param<T: FloatDType, S: Shape, D: Device> = ();
    fn make<T: FloatDType, S: Shape, D: Device>(
        _: impl FnOnce() -> Tensor<T, S, D>,
    ) -> Self::Param<T, S, D> {
    }
    fn var<T: FloatDType, S: Shape, D: Device>(_: &Self::Param<T, S, D>) -> Option<&Var<T, S, D>> {
        None
    }
}
