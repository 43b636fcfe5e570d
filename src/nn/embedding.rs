//! Embedding tables.

use super::{Module, Parameters};
use crate::autograd::{Traced, Var};
use crate::dtype::{FloatDType, IndexDType};
use crate::ops::Device;
use crate::shape::{AppendDim, Const, Rank2};
use crate::tensor::Tensor;

/// A `(V, E)` table of `V` vectors of width `E`, looked up by `u32`, `i32` or `i64` ids of any shape: the output appends
/// an `E` axis. [`Module::forward`] on ids gives a plain tensor (inference); [`Embedding::lookup`] a traced one
/// whose gradient reaches the table. An id past `V` panics naming the op, the id and the size.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::{Embedding, Module};
/// let emb = Embedding::<f32, 10, 4, Cpu>::new(0);
/// let ids = Tensor::<u32, _, Cpu>::from_array([[1, 2, 3], [3, 2, 1]]);
/// let v: Tensor<f32, Rank3<2, 3, 4>, Cpu> = emb.forward(ids.clone());
/// let traced = emb.lookup(&ids); // for training
/// ```
#[derive(Parameters)]
pub struct Embedding<T: FloatDType, const V: usize, const E: usize, D: Device> {
    /// `(V, E)`.
    pub weight: Var<T, Rank2<V, E>, D>,
}

impl<T: FloatDType, const V: usize, const E: usize, D: Device> Embedding<T, V, E, D> {
    /// Standard normal entries from `seed` (PyTorch's default).
    pub fn new(seed: u64) -> Self {
        Embedding {
            weight: Var::create(Tensor::randn(seed)),
        }
    }

    /// Every entry zero: the table to load a checkpoint into (`io::load`), which needs no seed.
    pub fn zeros() -> Self {
        Embedding {
            weight: Var::create(Tensor::zeros()),
        }
    }

    /// The rows named by `ids`, traced (the table's gradient is the scatter-add of the rows' gradients).
    #[track_caller]
    pub fn lookup<I: IndexDType, S: AppendDim>(
        &self,
        ids: &Tensor<I, S, D>,
    ) -> Traced<T, <S as AppendDim>::Output<Const<E>>, D> {
        self.weight.trace().embedding(ids)
    }
}

impl<T: FloatDType, const V: usize, const E: usize, D: Device, I: IndexDType, S: AppendDim>
    Module<Tensor<I, S, D>> for Embedding<T, V, E, D>
{
    type Output = Tensor<T, <S as AppendDim>::Output<Const<E>>, D>;
    #[track_caller]
    fn forward(&self, ids: Tensor<I, S, D>) -> Self::Output {
        self.weight.value().embedding(&ids)
    }
}
