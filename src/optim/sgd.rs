//! Stochastic gradient descent with momentum, Nesterov momentum and weight decay (PyTorch's `SGD` rules).

use super::{check_grad, step_all, Optimizer, Register, Slot};
use crate::autograd::{Gradients, Var, VarCell};
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::nn::{ParamVisitor, Parameters};
use crate::ops;
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Grad;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// [`Sgd`]'s hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdConfig {
    /// Learning rate.
    pub lr: f64,
    /// Momentum factor `mu` (0: plain SGD): `v = mu v + g`.
    pub momentum: f64,
    /// Nesterov momentum: step along `g + mu v` instead of `v`.
    pub nesterov: bool,
    /// L2 penalty: `g + weight_decay * w`.
    pub weight_decay: f64,
}

impl Default for SgdConfig {
    fn default() -> Self {
        SgdConfig {
            lr: 0.01,
            momentum: 0.0,
            nesterov: false,
            weight_decay: 0.0,
        }
    }
}

/// Stochastic gradient descent: `w -= lr * d`, with `d` the (decayed, momentum-filtered) gradient.
pub struct Sgd {
    config: SgdConfig,
    slots: Vec<Box<dyn Slot<SgdConfig>>>,
}

/// One parameter's SGD state, generic over the element type and device only (the parameter's cell holds its
/// value in the padded form), so it is compiled once per element type and device, not once per parameter shape.
struct SgdSlot<T: FloatDType, D: Device> {
    param: Arc<VarCell<T, D>>,
    /// In the padded form gradients have.
    velocity: Option<Grad<T, D>>,
}

impl<T: FloatDType, D: Device> Slot<SgdConfig> for SgdSlot<T, D> {
    fn check(&self, grads: &Gradients) -> Result<()> {
        check_grad("Sgd::step", &self.param, grads)
    }

    fn step(&mut self, grads: &Gradients, c: &SgdConfig) {
        let Some(g) = grads.peek::<T, D>(self.param.id()) else {
            return;
        };
        let w = (c.weight_decay != 0.0).then(|| self.param.value());
        let (delta, velocity) = sgd_delta(g, w, self.velocity.as_ref(), c);
        self.param.sub_assign(&delta);
        if velocity.is_some() {
            self.velocity = velocity;
        }
    }
}

/// The step `lr * d` for gradient `g` (with the parameter's value `w` when there is weight decay) and the new
/// velocity (with momentum), all in the padded form. The new velocity is computed beside the old one and kept
/// only once the parameter has its update.
fn sgd_delta<T: FloatDType, D: Device>(
    g: &Grad<T, D>,
    w: Option<Grad<T, D>>,
    velocity: Option<&Grad<T, D>>,
    c: &SgdConfig,
) -> (Grad<T, D>, Option<Grad<T, D>>) {
    let mut d = match w {
        Some(w) => g.zip_same(ops::Add, &w.affine(c.weight_decay, 0.0)),
        None => g.clone(),
    };
    let mut new_velocity = None;
    if c.momentum != 0.0 {
        let v = match velocity {
            // The first velocity is the step itself; velocities are never updated in place, so it may share
            // the gradient's buffer.
            None => d.clone(),
            Some(v) => v.affine(c.momentum, 0.0).zip_same(ops::Add, &d),
        };
        d = if c.nesterov {
            d.zip_same(ops::Add, &v.affine(c.momentum, 0.0))
        } else {
            v.clone()
        };
        new_velocity = Some(v);
    }
    (d.affine(c.lr, 0.0), new_velocity)
}

impl Sgd {
    /// An optimizer over every parameter of `params`.
    pub fn new(params: &impl Parameters, config: SgdConfig) -> Self {
        let mut slots = Vec::new();
        params.visit_unique(&mut Register { slots: &mut slots });
        Sgd { config, slots }
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &SgdConfig {
        &self.config
    }
}

impl ParamVisitor for Register<'_, SgdConfig> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, var: &Var<T, S, D>) {
        self.slots.push(Box::new(SgdSlot::<T, D> {
            param: var.cell().clone(),
            velocity: None,
        }));
    }
}

impl Optimizer for Sgd {
    fn try_step(&mut self, grads: &Gradients) -> Result<()> {
        step_all(&mut self.slots, grads, &self.config)
    }
    fn learning_rate(&self) -> f64 {
        self.config.lr
    }
    fn set_learning_rate(&mut self, lr: f64) {
        self.config.lr = lr;
    }
}
