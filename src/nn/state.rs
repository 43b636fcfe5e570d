//! What a layer keeps besides its trainable parameters: [`Buffer`]s (tensors it updates itself, like batch
//! norm's running statistics) and its [`TrainingFlag`]. Both are reached through the same walk as the parameters
//! ([`super::Parameters::visit_params`]), so a model's mode is set in one call and its buffers are saved and
//! loaded with its weights, while optimizers, which only implement [`super::ParamVisitor::visit`], skip them.

use crate::dtype::WithDType;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Tensor;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

/// A tensor a layer keeps and updates but does not train (PyTorch's registered buffers: `running_mean`,
/// `running_var`, `num_batches_tracked`). Clones share the cell, as a [`crate::autograd::Var`]'s do; the layer
/// replaces the value during a training-mode forward pass, and `io` saves and loads it under its name.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::nn::Buffer;
/// let count = Buffer::new(Tensor::<i64, (), Cpu>::zeros());
/// let shared = count.clone();
/// count.update(|n| n + 1);
/// assert_eq!(shared.value().to_scalar(), 1);
/// ```
pub struct Buffer<T: WithDType, S: Shape, D: Device> {
    cell: Arc<RwLock<Tensor<T, S, D>>>,
}

impl<T: WithDType, S: Shape, D: Device> Clone for Buffer<T, S, D> {
    /// Shares the buffer (same cell).
    fn clone(&self) -> Self {
        Buffer {
            cell: self.cell.clone(),
        }
    }
}

impl<T: WithDType, S: Shape, D: Device> core::fmt::Debug for Buffer<T, S, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Buffer<{:?}>{:?}", T::DTYPE, self.value().dims())
    }
}

impl<T: WithDType, S: Shape, D: Device> Buffer<T, S, D> {
    /// A buffer holding `value`.
    pub fn new(value: Tensor<T, S, D>) -> Self {
        Buffer {
            cell: Arc::new(RwLock::new(value)),
        }
    }

    /// The current value (a handle on the same storage; a later update replaces the cell's tensor and leaves
    /// this one as it was).
    pub fn value(&self) -> Tensor<T, S, D> {
        self.cell.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The address of the cell its clones share: its identity in a walk (tied buffers are met once).
    pub(crate) fn cell_address(&self) -> usize {
        Arc::as_ptr(&self.cell) as *const () as usize
    }

    /// The value's shape.
    pub fn shape(&self) -> S {
        self.value().shape()
    }

    /// Replaces the value.
    pub fn set(&self, value: Tensor<T, S, D>) {
        *self.cell.write().unwrap_or_else(|e| e.into_inner()) = value;
    }

    /// Replaces the value with `f(value)`, under the write lock (two updates never interleave).
    pub fn update(&self, f: impl FnOnce(&Tensor<T, S, D>) -> Tensor<T, S, D>) {
        let mut value = self.cell.write().unwrap_or_else(|e| e.into_inner());
        *value = f(&value);
    }

    /// Changes the value through `f`, under the write lock, with in-place ops (`+=`, `copy_from`): they write
    /// the buffer itself when no handle from [`Self::value`] shares it (those keep their values either way). A
    /// CUDA graph that records such an update repeats it on the same buffer at each replay, where one that
    /// records [`Self::update`] would keep writing a buffer the cell no longer holds.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::nn::Buffer;
    /// let running = Buffer::new(Tensor::<f32, Rank1<2>, Cpu>::zeros());
    /// running.update_in_place(|r| {
    ///     *r *= 0.9;
    ///     *r += &Tensor::from_array([1.0, 2.0]);
    /// });
    /// assert_eq!(running.value().to_array(), [1.0, 2.0]);
    /// ```
    pub fn update_in_place(&self, f: impl FnOnce(&mut Tensor<T, S, D>)) {
        f(&mut self.cell.write().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Whether a layer is in training mode. Layers that behave differently in training and evaluation
/// ([`super::Dropout`], [`super::BatchNorm`]) hold one and hand it to the walk
/// ([`super::ParamVisitor::visit_training`]), so [`super::Parameters::train`] and
/// [`super::Parameters::eval`] reach every such layer of a model, however deeply nested. A new layer starts in
/// training mode, as in PyTorch.
///
/// The mode matters only for traced inputs: a forward pass over plain tensors is always inference (no dropout,
/// running statistics), since nothing could be trained from it.
#[derive(Debug)]
pub struct TrainingFlag(AtomicBool);

impl Default for TrainingFlag {
    /// Training.
    fn default() -> Self {
        TrainingFlag(AtomicBool::new(true))
    }
}

impl TrainingFlag {
    /// `true` in training mode.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the mode.
    pub fn set(&self, training: bool) {
        self.0.store(training, Ordering::Relaxed);
    }
}
