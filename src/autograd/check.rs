//! Gradient checking by central finite differences, in f64.

use super::{Traced, Var};
use crate::ops::Device;
use crate::shape::Shape;
use crate::tensor::Tensor;
use alloc::vec::Vec;

/// The worst element of a gradient check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradCheck {
    /// Row-major index of the element with the largest error.
    pub index: usize,
    /// The gradient `backward()` gave there.
    pub analytic: f64,
    /// The central difference `(f(x + eps) - f(x - eps)) / 2 eps` there.
    pub numeric: f64,
    /// `|analytic - numeric| / max(1, |numeric|)`.
    pub error: f64,
}

/// Compares the gradient of `f` with respect to `var` from `backward()` with central finite differences,
/// element by element, and returns the worst element. `f` must read `var` afresh on every call (through
/// [`Var::trace`]); the value is restored afterwards.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::{check_gradient, Var};
/// let x = Var::new(Tensor::<f64, _, Cpu>::from_array([0.5, -1.0, 2.0]));
/// let worst = check_gradient(&x, 1e-5, || x.trace().tanh().sum_all());
/// assert!(worst.error < 1e-8, "{worst:?}");
/// ```
pub fn check_gradient<S: Shape, D: Device>(
    var: &Var<f64, S, D>,
    eps: f64,
    f: impl Fn() -> Traced<f64, (), D>,
) -> GradCheck {
    let original = var.value();
    let analytic = f().backward().get(var).to_vec();
    let base: Vec<f64> = original.to_vec();
    let shape = original.shape();
    let at = |i: usize, delta: f64| {
        let mut v = base.clone();
        v[i] += delta;
        var.set(Tensor::from_vec_with_shape(shape, v).expect("same length"));
        f().to_scalar()
    };
    let mut worst = GradCheck {
        index: 0,
        analytic: 0.0,
        numeric: 0.0,
        error: 0.0,
    };
    for (i, &a) in analytic.iter().enumerate() {
        let numeric = (at(i, eps) - at(i, -eps)) / (2.0 * eps);
        let error = (a - numeric).abs() / numeric.abs().max(1.0);
        if error > worst.error || error.is_nan() {
            worst = GradCheck {
                index: i,
                analytic: a,
                numeric,
                error,
            };
        }
    }
    var.set(original);
    worst
}
