//! Dropout.

use super::{layer, Module, Parameters, TrainingFlag};
use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::ops::{self, CmpOp};
use crate::shape::Shape;
use crate::tensor::{Grad, Tensor};
use core::sync::atomic::{AtomicU64, Ordering};

/// Zeroes each element with probability `p` and scales the rest by `1 / (1 - p)` while training, on traced
/// values; the identity on plain tensors (inference) and in evaluation mode ([`Parameters::eval`] on the layer or
/// any model holding it). The masks come
/// from a seeded stream that advances on every call, so a run reproduces.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Traced;
/// use typed_tensor::nn::{Dropout, Module};
/// let drop = Dropout::new(0.5, 42);
/// let x = Tensor::<f32, Rank1<1000>, Cpu>::ones();
/// let kept = drop.forward(Traced::constant(x.clone())).into_value().to_vec();
/// assert!(kept.iter().all(|&v| v == 0.0 || v == 2.0));
/// assert_eq!(drop.forward(x.clone()).to_vec(), x.to_vec()); // inference: unchanged
/// ```
#[derive(Debug, Parameters)]
pub struct Dropout {
    #[parameters(skip)]
    p: f64,
    #[parameters(skip)]
    seed: AtomicU64,
    training: TrainingFlag,
}

impl Dropout {
    /// Dropout with probability `p` in `[0, 1)`, masks drawn from `seed`.
    pub fn new(p: f64, seed: u64) -> Self {
        assert!(
            (0.0..1.0).contains(&p),
            "Dropout: p must be in [0, 1), got {p}"
        );
        Dropout {
            p,
            seed: AtomicU64::new(seed),
            training: TrainingFlag::default(),
        }
    }

    /// The drop probability.
    pub fn p(&self) -> f64 {
        self.p
    }
}

#[layer]
impl<T: FloatDType, S: Shape, D: Device> Module<Value<T, S, D>> for Dropout {
    type Output = Value<T, S, D>;
    fn forward(&self, x: Value<T, S, D>) -> Self::Output {
        x.dropout(self)
    }
}

/// Dropout's gradient: the output's where the element was kept, scaled as it was.
fn dropout_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, keep): (Slot, Grad<T, D>),
    store: &mut Gradients,
) {
    slot.give_padded(store, g.zip_same(ops::Mul, &keep));
}

/// Dropout on each kind of value: a plain tensor is inference and passes unchanged, whatever the mode; a traced
/// value is training, masked while the layer's mode is training.
pub(crate) trait DropoutInput: Sized {
    fn dropout(self, layer: &Dropout) -> Self;
    /// Whether `layer` would change this kind of value now (a fused op that cannot drop may run when not).
    fn drops(&self, layer: &Dropout) -> bool;
}

impl<T: FloatDType, S: Shape, D: Device> DropoutInput for Tensor<T, S, D> {
    fn dropout(self, _: &Dropout) -> Self {
        self
    }

    fn drops(&self, _: &Dropout) -> bool {
        false
    }
}

impl<T: FloatDType, S: Shape, D: Device> DropoutInput for Traced<T, S, D> {
    fn dropout(self, layer: &Dropout) -> Self {
        if !self.drops(layer) {
            return self;
        }
        let seed = layer.seed.fetch_add(1, Ordering::Relaxed);
        let keep = Tensor::<T, S, D>::rand_with_shape(self.value().shape(), seed)
            .mask_scalar(CmpOp::Ge, T::from_f64(layer.p))
            .affine(1.0 / (1.0 - layer.p), 0.0);
        let value = self.value().zip_same(ops::Mul, &keep);
        let captured = (self.slot(), keep.padded());
        record_with(value, &[&self.node], captured, dropout_rule::<T, D>)
    }

    fn drops(&self, layer: &Dropout) -> bool {
        layer.training.get() && layer.p > 0.0
    }
}
