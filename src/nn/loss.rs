//! Loss functions, on traced values for training and on plain tensors for evaluation (the same values, no graph).
//! Each gives the loss per sample (or per element); reduce it with `mean_all()` or `sum_all()` (before
//! `backward()` when traced).
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::autograd::Var;
//! let logits = Var::new(Tensor::<f32, _, Cpu>::from_array([[2.0, 0.5, -1.0], [0.0, 0.0, 0.0]]));
//! let labels = Tensor::<u32, _, Cpu>::from_array([0, 2]);
//! let loss = logits.trace().cross_entropy(&labels).mean_all();
//! // Row 2 is uniform over 3 classes: its loss is ln 3.
//! let per_row = logits.trace().cross_entropy(&labels).into_value().to_vec();
//! assert!((per_row[1] - 3f32.ln()).abs() < 1e-6);
//! let g = loss.backward().get(&logits); // (softmax - one_hot) / batch
//! assert!((g.to_vec()[5] - (1.0 / 3.0 - 1.0) / 2.0).abs() < 1e-6);
//! ```

use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::{FloatDType, IndexDType};
use crate::ops;
use crate::ops::Device;
use crate::shape::{Axis, Const, Dim, Shape};
use crate::tensor::{Grad, Tensor};

impl<T: FloatDType, B: Dim, C: Dim, D: Device> Tensor<T, (B, C), D> {
    /// Cross entropy of `(batch, classes)` logits against integer class labels, per sample, for evaluation (the
    /// value of [`Traced::cross_entropy`], without a graph). A label past the classes panics with the op, the
    /// index and the size.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let logits = Tensor::<f32, _, Cpu>::from_array([[0.0, 0.0, 0.0], [9.0, 0.0, 0.0]]);
    /// let loss = logits.cross_entropy(&Tensor::<u32, _, Cpu>::from_array([1, 0]));
    /// assert!((loss.to_vec()[0] - 3f32.ln()).abs() < 1e-6); // uniform over 3 classes
    /// ```
    #[track_caller]
    pub fn cross_entropy<I: IndexDType>(&self, labels: &Tensor<I, (B,), D>) -> Tensor<T, (B,), D> {
        self.cross_entropy_parts(labels).0
    }

    /// The loss, the log-probabilities and the labels as a column: what the traced form's rule keeps.
    #[track_caller]
    #[allow(clippy::type_complexity)]
    fn cross_entropy_parts<I: IndexDType>(
        &self,
        labels: &Tensor<I, (B,), D>,
    ) -> (Tensor<T, (B,), D>, Self, Tensor<I, (B, Const<1>), D>) {
        let log_probs = self.log_softmax::<Axis<1>>();
        let column = labels.unsqueeze::<Axis<1>>();
        let picked: Tensor<T, (B, Const<1>), D> = log_probs.gather::<Axis<1>, I, _>(&column);
        (-picked.squeeze::<Axis<1>>(), log_probs, column)
    }

    /// Negative log-likelihood of `(batch, classes)` log-probabilities against integer labels, per sample:
    /// `-log_probs[label]` (the value of [`Traced::nll`]).
    #[track_caller]
    pub fn nll<I: IndexDType>(&self, labels: &Tensor<I, (B,), D>) -> Tensor<T, (B,), D> {
        let picked: Tensor<T, (B, Const<1>), D> =
            self.gather::<Axis<1>, I, _>(&labels.unsqueeze::<Axis<1>>());
        -picked.squeeze::<Axis<1>>()
    }
}

impl<T: FloatDType, B: Dim, C: Dim, D: Device> Traced<T, (B, C), D> {
    /// Cross entropy of `(batch, classes)` logits against integer class labels, per sample:
    /// `-log_softmax(logits)[label]` (max-shifted, stable for large logits). A label past the classes panics
    /// with the op, the index and the size. [`Tensor::cross_entropy`] gives the value without a graph.
    #[track_caller]
    pub fn cross_entropy<I: IndexDType>(&self, labels: &Tensor<I, (B,), D>) -> Traced<T, (B,), D> {
        // The value of `log_softmax().nll()`, recorded as one op: its gradient is one kernel where the composed
        // rules of log-softmax, gather and negation take eight.
        let (value, log_probs, column) = self.value.cross_entropy_parts(labels);
        let captured = (self.slot(), log_probs.padded(), column.padded());
        record_with(
            value,
            &[&self.node],
            captured,
            cross_entropy_rule::<T, I, D>,
        )
    }

    /// Negative log-likelihood of `(batch, classes)` log-probabilities against integer labels, per sample:
    /// `-log_probs[label]`.
    #[track_caller]
    pub fn nll<I: IndexDType>(&self, labels: &Tensor<I, (B,), D>) -> Traced<T, (B,), D> {
        let picked: Traced<T, (B, Const<1>), D> =
            self.gather::<Axis<1>, I, _>(&labels.unsqueeze::<Axis<1>>());
        -picked.squeeze::<Axis<1>>()
    }
}

/// Cross entropy's gradient with respect to the logits, per row `(softmax - one_hot(label)) g`: the softmax (from
/// the saved log-probabilities) scaled by the row's gradient, with the row's gradient taken off at its label, in
/// one kernel (`IndexingKernels::cross_entropy_backward`). `g` holds one value per row (padded `(.., B)`) and the
/// labels are the padded column `(.., B, 1)`: both are read per row as they lie.
fn cross_entropy_rule<T: FloatDType, I: IndexDType, D: Device>(
    g: Grad<T, D>,
    (slot, log_probs, labels): (Slot, Grad<T, D>, Grad<I, D>),
    store: &mut Gradients,
) {
    let grad = log_probs.cross_entropy_backward_at(
        (labels.buffer(), &labels.layout()),
        (g.buffer(), &g.layout()),
    );
    slot.give_padded(store, grad);
}

/// Squared error's gradient: `2 (p - t) g` for the prediction, its negation for the target (each if wanted).
fn mse_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sp, st], diff): ([Slot; 2], Grad<T, D>),
    store: &mut Gradients,
) {
    let dp = g.zip_same(ops::Mul, &diff.affine(2.0, 0.0));
    st.give_padded_with(store, || dp.unary(ops::Neg));
    sp.give_padded(store, dp);
}

/// Binary cross entropy's gradient with respect to the logits `x`: `(sigmoid(x) - y) g`.
/// `bce_with_logits`'s gradients: `g (sigmoid(x) - y)` for the logits, `-g x` for the targets.
fn bce_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sx, sy], [x, y]): ([Slot; 2], [Grad<T, D>; 2]),
    store: &mut Gradients,
) {
    sy.give_padded_with(store, || g.zip_same(ops::Mul, &x).unary(ops::Neg));
    sx.give_padded(
        store,
        g.zip_same(ops::Mul, &x.sigmoid().zip_same(ops::Sub, &y)),
    );
}

impl<T: FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Squared error per element, `(self - target)^2`, for evaluation (the value of [`Traced::mse`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let p = Tensor::<f32, _, Cpu>::from_array([1.0, 2.0]);
    /// assert_eq!(p.mse(&Tensor::from_array([0.0, 4.0])).to_array(), [1.0, 4.0]);
    /// ```
    pub fn mse(&self, target: &Self) -> Self {
        self.mse_parts(target).0
    }

    /// The squared error and the difference `self - target`, what the traced form's rule keeps.
    fn mse_parts(&self, target: &Self) -> (Self, Self) {
        let diff = self.zip_same(ops::Sub, target);
        (diff.sqr(), diff)
    }

    /// Binary cross entropy of logits against targets in [0, 1], per element, for evaluation (the value of
    /// [`Traced::bce_with_logits`]): `max(x, 0) - x y + ln(1 + e^-|x|)`, stable for large logits.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f64, _, Cpu>::from_array([0.0, 100.0]);
    /// let loss = x.bce_with_logits(&Tensor::from_array([1.0, 1.0])).to_array();
    /// assert!((loss[0] - 2f64.ln()).abs() < 1e-12 && loss[1] < 1e-40);
    /// ```
    pub fn bce_with_logits(&self, targets: &Self) -> Self {
        let (x, y) = (self, targets);
        let softplus = x.abs().unary(ops::Neg).exp().affine(1.0, 1.0).ln();
        x.relu()
            .zip_same(ops::Sub, &x.zip_same(ops::Mul, y))
            .zip_same(ops::Add, &softplus)
    }
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Squared error per element, `(self - target)^2`; `target` is a traced value, a parameter or a plain
    /// tensor of the same shape. [`Tensor::mse`] gives the value without a graph.
    pub fn mse<R: Traceable<Elem = T, Shape = S, Device = D>>(&self, target: &R) -> Self {
        let target = target.traced();
        let (value, diff) = self.value.mse_parts(&target.value);
        let captured = ([self.slot(), target.slot()], diff.padded());
        record_with(
            value,
            &[&self.node, &target.node],
            captured,
            mse_rule::<T, D>,
        )
    }

    /// Binary cross entropy of logits against targets in [0, 1], per element, computed stably as
    /// `max(x, 0) - x y + ln(1 + e^-|x|)`; gradient `sigmoid(x) - y` for the logits and `-x` for the targets,
    /// which may be a traced value or a parameter (soft targets trained on, as in distillation) or a plain tensor.
    /// [`Tensor::bce_with_logits`] gives the value without a graph.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::autograd::Var;
    /// let logits = Var::new(Tensor::<f64, _, Cpu>::from_array([2.0, -1.0]));
    /// let soft = Var::new(Tensor::<f64, _, Cpu>::from_array([0.9, 0.2]));
    /// let grads = logits.trace().bce_with_logits(&soft).sum_all().backward();
    /// assert_eq!(grads.get(&soft).to_array(), [-2.0, 1.0]); // -x
    /// ```
    pub fn bce_with_logits<R: Traceable<Elem = T, Shape = S, Device = D>>(
        &self,
        targets: &R,
    ) -> Self {
        let targets = targets.traced();
        let value = self.value.bce_with_logits(&targets.value);
        let captured = (
            [self.slot(), targets.slot()],
            [self.value.padded(), targets.value.padded()],
        );
        record_with(
            value,
            &[&self.node, &targets.node],
            captured,
            bce_rule::<T, D>,
        )
    }
}
