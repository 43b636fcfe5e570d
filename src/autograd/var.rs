//! Trainable parameters.

use super::graph::{next_id, Node};
use super::traced::Traced;
use crate::dtype::FloatDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::{Dims, Shape};
use crate::tensor::{or_panic, Grad, Tensor};
use alloc::sync::Arc;
use std::sync::{RwLock, RwLockWriteGuard};

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
    cell: Arc<VarCell<T, D>>,
    shape: S,
}

/// What a [`Var`] shares with its clones: its identity and its value, held in the padded form that autograd's
/// gradients use ([`Grad`]), so that the cell, its lock and the optimizers' updates of it are compiled once per
/// element type and device and not once per parameter shape. The `Var` keeps the shape and views the value
/// through it.
pub(crate) struct VarCell<T: FloatDType, D: Device> {
    id: usize,
    /// The parameter's own dims (its value's, unpadded).
    dims: Dims,
    /// Empty only while [`Var::try_update`] holds the value as its typed tensor, under the write lock.
    value: RwLock<Option<Grad<T, D>>>,
}

impl<T: FloatDType, D: Device> VarCell<T, D> {
    fn new(value: Grad<T, D>, dims: Dims) -> Arc<Self> {
        Arc::new(VarCell {
            id: next_id(),
            dims,
            value: RwLock::new(Some(value)),
        })
    }

    /// The identity gradients are keyed by.
    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// The parameter's dims.
    pub(crate) fn dims(&self) -> &Dims {
        &self.dims
    }

    fn write(&self) -> RwLockWriteGuard<'_, Option<Grad<T, D>>> {
        self.value.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The current value (a view of the same buffer; a later update does not change it).
    pub(crate) fn value(&self) -> Grad<T, D> {
        let value = self.value.read().unwrap_or_else(|e| e.into_inner());
        value.clone().unwrap_or_else(|| value_lost())
    }

    /// Replaces the value with `value` (of the same dims).
    pub(crate) fn set(&self, value: Grad<T, D>) {
        *self.write() = Some(value);
    }

    /// Changes the value through `f` under the write lock: the optimizers' in-place steps, which keep its dims.
    /// `f` writes into the parameter's own buffer when no traced value or other handle still shares it.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Grad<T, D>) -> R) -> R {
        let mut value = self.write();
        f(value.as_mut().unwrap_or_else(|| value_lost()))
    }

    /// `value -= delta`, for `delta` of the parameter's dims: in place when no other tensor shares the buffer.
    pub(crate) fn sub_assign(&self, delta: &Grad<T, D>) {
        self.update(|w| w.assign_same(crate::ops::Sub, delta));
    }
}

/// A cell found empty: only a panic inside a [`Var::try_update`] closure could leave one, and the value goes
/// back even then, so this is a bug in the library.
#[cold]
#[inline(never)]
fn value_lost() -> ! {
    panic!("typed-tensor internal error: a Var's value is missing from its cell")
}

/// A parameter's value taken out of its cell as its typed tensor, for [`Var::try_update`]: the cell holds no
/// other handle on the buffer meanwhile, so in-place ops write into it, and the value goes back (padded) when
/// this is dropped, a panic in the update included. The write lock is held throughout.
struct Taken<'a, T: FloatDType, S: Shape, D: Device> {
    cell: RwLockWriteGuard<'a, Option<Grad<T, D>>>,
    value: Option<Tensor<T, S, D>>,
}

impl<T: FloatDType, S: Shape, D: Device> Drop for Taken<'_, T, S, D> {
    fn drop(&mut self) {
        if let Some(value) = self.value.take() {
            *self.cell = Some(value.padded());
        }
    }
}

impl<T: FloatDType, S: Shape, D: Device> Clone for Var<T, S, D> {
    /// Shares the parameter (same cell, same gradient).
    fn clone(&self) -> Self {
        Var {
            cell: self.cell.clone(),
            shape: self.shape,
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
    pub fn new(value: Tensor<T, S, D>) -> Self
    where
        D: super::AutogradDevice,
    {
        Self::create(value)
    }

    /// [`Self::new`] for code generic over any device (the layers' constructors): checked at build time.
    pub(crate) fn create(value: Tensor<T, S, D>) -> Self {
        const { super::assert_device::<D>() };
        Var {
            cell: VarCell::new(value.padded(), value.dims()),
            shape: value.shape(),
        }
    }

    /// The identity gradients are keyed by (shared by clones).
    pub fn id(&self) -> usize {
        self.cell.id
    }

    /// The shape value.
    pub fn shape(&self) -> S {
        self.shape
    }

    /// The shared cell, for the optimizers' shape-free updates.
    pub(crate) fn cell(&self) -> &Arc<VarCell<T, D>> {
        &self.cell
    }

    /// The current value (a cheap handle on the same buffer; a later update does not change it).
    pub fn value(&self) -> Tensor<T, S, D> {
        self.cell.value().unpadded(self.shape)
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
        self.cell.set(value.padded());
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
        let mut cell = self.cell.write();
        let value = cell
            .take()
            .unwrap_or_else(|| value_lost())
            .unpadded(self.shape);
        let mut taken = Taken {
            cell,
            value: Some(value),
        };
        let value = taken.value.as_mut().unwrap_or_else(|| value_lost());
        if S::IS_STATIC {
            return Ok(f(value)); // every value of a static shape type has that shape
        }
        let before = value.clone();
        let r = f(value);
        if let Err(e) = self.check_shape("Var::update", value) {
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

    /// `Error::ShapeMismatch` naming `op` unless `value` has this parameter's shape.
    pub(crate) fn check_shape(&self, op: &'static str, value: &Tensor<T, S, D>) -> Result<()> {
        if value.shape() != self.shape {
            return Err(Error::shape_mismatch(op, self.shape.dims(), value.dims()));
        }
        Ok(())
    }

    /// The current value as the start of a traced computation: the gradient that flows back to it is this
    /// parameter's.
    pub fn trace(&self) -> Traced<T, S, D> {
        Traced::from_node(self.value(), Node::leaf(self.cell.id))
    }
}

/// A parameter's current value ([`Var::value`]): how a layer written once with [`nn::layer`](crate::nn::layer)
/// reads its parameters when it runs on plain tensors.
impl<T: FloatDType, S: Shape, D: Device> From<&Var<T, S, D>> for Tensor<T, S, D> {
    fn from(var: &Var<T, S, D>) -> Self {
        var.value()
    }
}

/// A parameter as the start of a traced computation ([`Var::trace`]): how a layer written once with
/// [`nn::layer`](crate::nn::layer) reads its parameters when it runs on traced values.
impl<T: FloatDType, S: Shape, D: Device> From<&Var<T, S, D>> for Traced<T, S, D> {
    // Out of line: inlined, each layer's copy of `trace` (and the leaf's drop on unwinding) made the release build of
    // a 49-layer MLP 1.2% more LLVM IR (tools/compile-bench, 2026-11-28).
    #[inline(never)]
    fn from(var: &Var<T, S, D>) -> Self {
        var.trace()
    }
}
