//! Trainable parameters.

use super::graph::{next_id, Node};
use super::traced::Traced;
use crate::device::Device;
use crate::dtype::FloatDType;
use crate::error::{Error, Result};
use crate::shape::Shape;
use crate::tensor::{or_panic, Tensor};
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

    /// Replaces the value, or returns `Error::ShapeMismatch` and keeps the old one when `value` has another size
    /// along a runtime-sized (`usize`) axis: a parameter's shape is fixed when it is made (optimizer state and
    /// saved files are sized by it).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::Var;
    /// let w = Var::new(Tensor::<f32, (usize, Const<2>), Cpu>::zeros_with_shape((3, Const)));
    /// let err = w.try_set(Tensor::zeros_with_shape((4, Const))).unwrap_err();
    /// assert_eq!(err.to_string(), "Var::set: shapes [3, 2] and [4, 2] do not match");
    /// assert_eq!(w.value().dims().to_vec(), [3, 2]);
    /// ```
    pub fn try_set(&self, value: Tensor<T, S, D>) -> Result<()> {
        self.check_shape("Var::set", &value)?;
        *self.write() = value;
        Ok(())
    }

    /// Replaces the value; panics with [`Self::try_set`]'s error (the value unchanged) on another runtime size.
    #[track_caller]
    pub fn set(&self, value: Tensor<T, S, D>) {
        or_panic(self.try_set(value))
    }

    /// Changes the value through `f`, or returns `Error::ShapeMismatch` and restores the old value when `f` left
    /// one of another size along a runtime-sized axis. In-place ops inside `f` (`+=`, `unary_assign`) write into
    /// the parameter's buffer when no traced value or other handle still shares it; for a shape with runtime
    /// dims the old value is kept aside while `f` runs, so they write a fresh buffer there. `f` runs under the
    /// cell's write lock, so it must not read this `Var` (or a clone of it) itself: that would deadlock.
    pub fn try_update<R>(&self, f: impl FnOnce(&mut Tensor<T, S, D>) -> R) -> Result<R> {
        let mut value = self.write();
        if S::IS_STATIC {
            return Ok(f(&mut value)); // every value of a static shape type has that shape
        }
        let before = value.clone();
        let r = f(&mut value);
        if let Err(e) = self.check_shape("Var::update", &value) {
            *value = before;
            return Err(e);
        }
        Ok(r)
    }

    /// Changes the value through `f`; panics with [`Self::try_update`]'s error (the old value restored) when `f`
    /// changes a runtime size.
    #[track_caller]
    pub fn update<R>(&self, f: impl FnOnce(&mut Tensor<T, S, D>) -> R) -> R {
        or_panic(self.try_update(f))
    }

    /// [`Self::update`] for the library's own in-place steps (optimizers), which keep the shape by construction:
    /// nothing is kept aside, so in-place ops write the parameter's own buffer whatever its shape.
    pub(crate) fn update_in_place<R>(&self, f: impl FnOnce(&mut Tensor<T, S, D>) -> R) -> R {
        let mut value = self.write();
        let r = f(&mut value);
        debug_assert!(value.shape() == self.cell.shape);
        r
    }

    /// `Error::ShapeMismatch` naming `op` unless `value` has this parameter's shape.
    pub(crate) fn check_shape(&self, op: &'static str, value: &Tensor<T, S, D>) -> Result<()> {
        if value.shape() != self.cell.shape {
            return Err(Error::shape_mismatch(
                op,
                self.cell.shape.dims(),
                value.dims(),
            ));
        }
        Ok(())
    }

    /// The current value as the start of a traced computation: the gradient that flows back to it is this
    /// parameter's.
    pub fn trace(&self) -> Traced<T, S, D> {
        Traced::from_node(self.value(), Node::leaf(self.cell.id))
    }
}
