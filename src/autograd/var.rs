//! Trainable parameters.

use super::graph::{next_id, Node};
use super::traced::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::shape::Shape;
use crate::tensor::Tensor;
use alloc::sync::Arc;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A trainable parameter: a shared cell holding a tensor, with an identity its gradient is keyed by.
///
/// Clones share the cell (an optimizer and a model hold the same parameter). [`Var::trace`] starts a forward
/// pass from the current value; [`Var::update`] changes it in place, which is how optimizers step.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Var;
/// let w = Var::new(Tensor::<f32, Rank2<2, 2>, Cpu>::ones());
/// let x = Tensor::<f32, _, Cpu>::from_array([1., 2.]);
/// let loss = w.trace().matmul(&x).sum_all(); // sum_i sum_j w_ij x_j
/// let g = loss.backward().get(&w);
/// assert_eq!(g.to_array(), [[1., 2.], [1., 2.]]);
/// ```
pub struct Var<T: FloatDType, S: Shape, D: Device> {
    cell: Arc<Cell<T, S, D>>,
}

struct Cell<T: FloatDType, S: Shape, D: Device> {
    id: usize,
    shape: S,
    value: RwLock<Tensor<T, S, D>>,
}

impl<T: FloatDType, S: Shape, D: Device> Clone for Var<T, S, D> {
    /// Shares the parameter (same cell, same gradient).
    fn clone(&self) -> Self {
        Var {
            cell: self.cell.clone(),
        }
    }
}

impl<T: FloatDType, S: Shape, D: Device> core::fmt::Debug for Var<T, S, D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Var#{}({:?})", self.cell.id, self.value())
    }
}

impl<T: FloatDType, S: Shape, D: Device> Var<T, S, D> {
    /// A new parameter holding `value`.
    pub fn new(value: Tensor<T, S, D>) -> Self {
        const { super::assert_device::<D>() };
        Var {
            cell: Arc::new(Cell {
                id: next_id(),
                shape: value.shape(),
                value: RwLock::new(value),
            }),
        }
    }

    /// The identity gradients are keyed by (shared by clones).
    pub fn id(&self) -> usize {
        self.cell.id
    }

    /// The shape value.
    pub fn shape(&self) -> S {
        self.cell.shape
    }

    fn read(&self) -> RwLockReadGuard<'_, Tensor<T, S, D>> {
        self.cell.value.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Tensor<T, S, D>> {
        self.cell.value.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The current value (a cheap handle on the same buffer; a later update does not change it).
    pub fn value(&self) -> Tensor<T, S, D> {
        self.read().clone()
    }

    /// Replaces the value.
    pub fn set(&self, value: Tensor<T, S, D>) {
        *self.write() = value;
    }

    /// Changes the value through `f`; in-place ops inside `f` (`+=`, `unary_assign`) write into the parameter's
    /// buffer when no traced value or other handle still shares it. `f` runs under the cell's write lock, so it
    /// must not read this `Var` (or a clone of it) itself: that would deadlock.
    pub fn update<R>(&self, f: impl FnOnce(&mut Tensor<T, S, D>) -> R) -> R {
        f(&mut self.write())
    }

    /// The current value as the start of a traced computation: the gradient that flows back to it is this
    /// parameter's.
    pub fn trace(&self) -> Traced<T, S, D> {
        Traced::from_node(self.value(), Node::leaf(self.cell.id))
    }
}
