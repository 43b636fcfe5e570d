//! Adam (L2 weight decay folded into the gradient) and AdamW (decoupled weight decay), with bias correction,
//! as in PyTorch.

use super::{check_grad, step_all, Optimizer, Register, Slot};
use crate::autograd::{Gradients, Var, VarCell};
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::nn::{ParamVisitor, Parameters};
use crate::ops::Device;
use crate::ops::{self, AdamStep};
use crate::shape::Shape;
use crate::tensor::Grad;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// [`Adam`]'s and [`AdamW`]'s hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamConfig {
    /// Learning rate.
    pub lr: f64,
    /// Decay of the first-moment average.
    pub beta1: f64,
    /// Decay of the second-moment average.
    pub beta2: f64,
    /// Added to the denominator.
    pub eps: f64,
    /// Adam: L2 penalty added to the gradient; AdamW: decoupled decay `w -= lr * weight_decay * w`.
    pub weight_decay: f64,
}

impl Default for AdamConfig {
    /// PyTorch's defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight decay).
    fn default() -> Self {
        AdamConfig {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
        }
    }
}

/// Which weight decay.
#[derive(Clone, Copy, PartialEq)]
enum Decay {
    L2,
    Decoupled,
}

/// The hyper-parameters a slot sees.
struct Hyper {
    config: AdamConfig,
    decay: Decay,
}

/// One parameter's Adam state, generic over the element type and device only (the parameter's cell and the
/// moments are in the padded form gradients have), so it is compiled once per element type and device, not once
/// per parameter shape.
struct AdamSlot<T: FloatDType, D: Device> {
    param: Arc<VarCell<T, D>>,
    /// First and second moment averages, created at the first step.
    moments: Option<Moments<T, D>>,
    /// Updates made so far (the bias correction's `t`), counted per parameter as in PyTorch: a parameter that
    /// had no gradient in a step, or whose update failed, does not advance.
    steps: u64,
}

/// Adam's running averages of the gradient and of its square.
struct Moments<T: FloatDType, D: Device> {
    m: Grad<T, D>,
    v: Grad<T, D>,
}

impl<T: FloatDType, D: Device> Slot<Hyper> for AdamSlot<T, D> {
    fn check(&self, grads: &Gradients) -> Result<()> {
        check_grad("Adam::step", &self.param, grads)
    }

    fn step(&mut self, grads: &Gradients, h: &Hyper) {
        let Some(g) = grads.peek::<T, D>(self.param.id()) else {
            return;
        };
        let c = &h.config;
        let Moments { m, v } = self.moments.get_or_insert_with(|| {
            let zeros = Grad::<T, D>::zeros_with_shape(g.shape());
            Moments {
                m: zeros.clone() + T::ZERO, // each its own buffer, updated in place from then on
                v: zeros + T::ZERO,
            }
        });
        let t = self.steps + 1;
        let (bc1, bc2) = (1.0 - c.beta1.powi(t as i32), 1.0 - c.beta2.powi(t as i32));
        let (l2, keep) = match h.decay {
            Decay::L2 => (c.weight_decay, 1.0),
            Decay::Decoupled => (0.0, 1.0 - c.lr * c.weight_decay),
        };
        // One pass where the device has a fused kernel (the CPU and CUDA do): one kernel updates the parameter
        // and both moments, or fails before writing.
        let step = AdamStep {
            lr_t: c.lr / bc1,
            beta1: c.beta1,
            beta2: c.beta2,
            bc2,
            eps: c.eps,
            l2,
            keep,
        };
        if self.param.update(|w| w.adam_step_fused(m, v, g, step)) {
            self.steps = t;
            return;
        }
        // ... otherwise the same step from tensor ops, new moments beside the old ones, kept only once the
        // parameter has its update.
        let w = self.param.value();
        let g = if l2 != 0.0 {
            g.zip_same(ops::Add, &w.affine(l2, 0.0))
        } else {
            g.clone()
        };
        // m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2.
        let m_new = m
            .affine(c.beta1, 0.0)
            .zip_same(ops::Add, &g.affine(1.0 - c.beta1, 0.0));
        let v_new = v
            .affine(c.beta2, 0.0)
            .zip_same(ops::Add, &g.sqr().affine(1.0 - c.beta2, 0.0));
        // w = keep w - lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps).
        let denom = v_new.affine(1.0 / bc2, 0.0).sqrt().affine(1.0, c.eps);
        let delta = m_new.zip_same(ops::Div, &denom).affine(c.lr / bc1, 0.0);
        let w_new = if keep != 1.0 {
            w.affine(keep, 0.0).zip_same(ops::Sub, &delta)
        } else {
            w.zip_same(ops::Sub, &delta)
        };
        drop(w);
        self.param.set(w_new);
        (*m, *v) = (m_new, v_new);
        self.steps = t;
    }
}

/// Adam: adaptive moments; weight decay, if any, is an L2 term added to the gradient.
pub struct Adam {
    hyper: Hyper,
    slots: Vec<Box<dyn Slot<Hyper>>>,
}

/// AdamW: Adam with decoupled weight decay (`w *= 1 - lr * weight_decay` before the moment step).
pub struct AdamW(Adam);

impl ParamVisitor for Register<'_, Hyper> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, var: &Var<T, S, D>) {
        self.slots.push(Box::new(AdamSlot::<T, D> {
            param: var.cell().clone(),
            moments: None,
            steps: 0,
        }));
    }
}

impl Adam {
    /// An optimizer over every parameter of `params`.
    pub fn new(params: &impl Parameters, config: AdamConfig) -> Self {
        Self::with_decay(params, config, Decay::L2)
    }

    fn with_decay(params: &impl Parameters, config: AdamConfig, decay: Decay) -> Self {
        let mut slots = Vec::new();
        params.visit_unique(&mut Register { slots: &mut slots });
        Adam {
            hyper: Hyper { config, decay },
            slots,
        }
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &AdamConfig {
        &self.hyper.config
    }
}

impl AdamW {
    /// An optimizer over every parameter of `params`.
    pub fn new(params: &impl Parameters, config: AdamConfig) -> Self {
        AdamW(Adam::with_decay(params, config, Decay::Decoupled))
    }

    /// The hyper-parameters.
    pub fn config(&self) -> &AdamConfig {
        self.0.config()
    }
}

impl Optimizer for Adam {
    fn try_step(&mut self, grads: &Gradients) -> Result<()> {
        step_all(&mut self.slots, grads, &self.hyper)
    }
    fn learning_rate(&self) -> f64 {
        self.hyper.config.lr
    }
    fn set_learning_rate(&mut self, lr: f64) {
        self.hyper.config.lr = lr;
    }
}

impl Optimizer for AdamW {
    fn try_step(&mut self, grads: &Gradients) -> Result<()> {
        self.0.try_step(grads)
    }
    fn learning_rate(&self) -> f64 {
        self.0.learning_rate()
    }
    fn set_learning_rate(&mut self, lr: f64) {
        self.0.set_learning_rate(lr)
    }
}
