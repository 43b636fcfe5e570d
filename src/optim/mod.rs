//! Optimizers: [`Sgd`] (momentum, Nesterov, weight decay), [`Adam`] and [`AdamW`], and a learning-rate
//! schedule hook ([`Optimizer::with_schedule`]).
//!
//! An optimizer is built over a model's [`Parameters`](crate::nn::Parameters) (it keeps handles on the same
//! [`Var`](crate::autograd::Var) cells) and updates them in place from a [`Gradients`] set. Parameters are
//! written into their own buffers (no reallocation) once the step's traced values are gone; `backward()`
//! consumes the loss, so the usual loop does that by itself. Bind the loss (or the gradients) in a statement of
//! its own, as below: traced values that are temporaries of the step's own statement (`opt.step(&(w.trace() *
//! 3.0).sum_all().backward())`) are views of the parameter until that statement ends, and the step then writes
//! a fresh buffer instead:
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::autograd::Var;
//! use typed_tensor::optim::{Optimizer, Sgd, SgdConfig};
//!
//! // Fit w so that w * 3 = 6.
//! let w = Var::new(Tensor::<f32, Rank1<1>, Cpu>::zeros());
//! let mut opt = Sgd::new(&w, SgdConfig { lr: 0.05, ..Default::default() });
//! for _ in 0..100 {
//!     let loss = (w.trace() * 3.0).mse(&Tensor::full(6.0)).mean_all();
//!     opt.step(&loss.backward());
//! }
//! assert!((w.value().to_vec()[0] - 2.0).abs() < 1e-4);
//! ```

mod adam;
mod sgd;

pub use adam::{Adam, AdamConfig, AdamW};
pub use sgd::{Sgd, SgdConfig};

use crate::autograd::{Gradients, VarCell};
use crate::dtype::FloatDType;
use crate::error::Error;
use crate::error::Result;
use crate::ops::Device;
use crate::shape::{Dims, MAX_RANK};
use alloc::boxed::Box;

/// Updates parameters from gradients.
pub trait Optimizer {
    /// One update of every registered parameter that has a gradient in `grads` (the others are left as they
    /// are). Every gradient is checked against its parameter first: `Error::ShapeMismatch` when one differs, and
    /// then nothing has changed. Each parameter's update (its value, its state such as momentum, its step count)
    /// is committed as a whole, so one that fails midway (a device error) leaves that parameter as it was.
    fn try_step(&mut self, grads: &Gradients) -> Result<()>;
    /// [`Self::try_step`], panicking with its error.
    #[track_caller]
    fn step(&mut self, grads: &Gradients) {
        crate::tensor::or_panic(self.try_step(grads))
    }
    /// The current learning rate.
    fn learning_rate(&self) -> f64;
    /// Sets the learning rate for the next steps.
    fn set_learning_rate(&mut self, lr: f64);

    /// This optimizer with its learning rate set to `schedule(step)` before every step (steps count from 0).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::Var;
    /// use typed_tensor::optim::{Optimizer, Sgd, SgdConfig};
    /// let w = Var::new(Tensor::<f32, Rank1<1>, Cpu>::zeros());
    /// let mut opt = Sgd::new(&w, SgdConfig::default()).with_schedule(|step| 0.1 * 0.5f64.powi(step as i32));
    /// let grads = (w.trace() * 1.0).sum_all().backward();
    /// opt.step(&grads); // lr 0.1
    /// opt.step(&grads); // lr 0.05
    /// assert!((w.value().to_vec()[0] + 0.15).abs() < 1e-6);
    /// ```
    fn with_schedule<F: FnMut(usize) -> f64>(self, schedule: F) -> Scheduled<Self, F>
    where
        Self: Sized,
    {
        Scheduled {
            inner: self,
            schedule,
            steps: 0,
        }
    }
}

/// An optimizer whose learning rate follows a schedule (see [`Optimizer::with_schedule`]).
pub struct Scheduled<O, F> {
    inner: O,
    schedule: F,
    steps: usize,
}

impl<O: Optimizer, F: FnMut(usize) -> f64> Optimizer for Scheduled<O, F> {
    fn try_step(&mut self, grads: &Gradients) -> Result<()> {
        let lr = (self.schedule)(self.steps);
        self.inner.set_learning_rate(lr);
        self.inner.try_step(grads)?;
        self.steps += 1;
        Ok(())
    }
    fn learning_rate(&self) -> f64 {
        self.inner.learning_rate()
    }
    fn set_learning_rate(&mut self, lr: f64) {
        self.inner.set_learning_rate(lr);
    }
}

/// One parameter's update rule and state, its types erased so one optimizer holds every shape and dtype.
trait Slot<H>: Send {
    /// `Error::ShapeMismatch` when the parameter's gradient in `grads` has another shape than the parameter.
    fn check(&self, grads: &Gradients) -> Result<()>;
    /// The update from the parameter's gradient, if it has one. Everything that can fail runs before the
    /// parameter or the slot's state changes.
    fn step(&mut self, grads: &Gradients, hyper: &H);
}

/// Checks every slot, then steps each: a bad gradient anywhere changes nothing.
fn step_all<H>(slots: &mut [Box<dyn Slot<H>>], grads: &Gradients, hyper: &H) -> Result<()> {
    for slot in slots.iter() {
        slot.check(grads)?;
    }
    for slot in slots.iter_mut() {
        slot.step(grads, hyper);
    }
    Ok(())
}

/// `Error::ShapeMismatch` naming `op` unless the padded gradient dims `grad` are the parameter's `dims`, padded
/// (size 1 on every leading axis). The error shows the gradient's dims at the parameter's rank, or whole when a
/// leading axis is not 1.
fn check_dims(op: &'static str, dims: &Dims, grad: &Dims) -> Result<()> {
    let (lead, found) = grad.split_at(MAX_RANK - dims.len());
    if lead.iter().any(|&d| d != 1) {
        return Err(Error::shape_mismatch(op, *dims, *grad));
    }
    if found != dims.as_slice() {
        return Err(Error::shape_mismatch(op, *dims, Dims::from_slice(found)));
    }
    Ok(())
}

/// `Error::ShapeMismatch` naming `op` when `param`'s gradient in `grads` has another shape than `param`; an
/// error too while the device records a graph.
fn check_grad<T: FloatDType, D: Device>(
    op: &'static str,
    param: &VarCell<T, D>,
    grads: &Gradients,
) -> Result<()> {
    // A graph would replay this step's coefficients (the learning rate, Adam's bias correction) forever.
    D::refuse_recording(
        op,
        "an optimizer step (its coefficients change from step to step)",
    )?;
    match grads.peek::<T, D>(param.id()) {
        Some(g) => check_dims(op, param.dims(), &g.dims()),
        None => Ok(()),
    }
}

/// Registers every parameter of a model as a slot of the optimizer whose hyper-parameters are `H`.
struct Register<'a, H> {
    slots: &'a mut alloc::vec::Vec<Box<dyn Slot<H>>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_dims_are_checked_whole() {
        let d = Dims::from_slice;
        let dims = d(&[3, 2]);
        assert!(check_dims("t", &dims, &d(&[1, 1, 1, 1, 3, 2])).is_ok());
        let err = check_dims("t", &dims, &d(&[1, 1, 1, 1, 2, 2])).unwrap_err();
        assert_eq!(err.to_string(), "t: shapes [3, 2] and [2, 2] do not match");
        // Matching trailing dims behind a leading axis that is not 1: another rank, refused.
        let err = check_dims("t", &dims, &d(&[1, 1, 1, 4, 3, 2])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: shapes [3, 2] and [1, 1, 1, 4, 3, 2] do not match"
        );
    }
}
