//! PyTorch checkpoints that load unchanged (issue 45, item 4): each model is written here the natural way, with
//! PyTorch's parameter names, its `state_dict` (saved by `tools/torch_checkpoints.py`, torch 2.5.1) loaded with
//! `io::load`, and its outputs and gradients compared with PyTorch's for the same input: f32 outputs within
//! 1e-5 relative, gradients within 1e-4 (relative to the element, or to the tensor's largest element where the
//! element itself is near zero: sums of many terms cancel there), with an absolute 1e-7 for gradients that are zero
//! in exact arithmetic (a conv's bias before a batch norm in training mode: both sides hold rounding noise).

mod attention;
mod recurrent;
mod resnet;

use std::path::PathBuf;
use typed_tensor::autograd::{Gradients, Var};
use typed_tensor::io::TensorFile;
use typed_tensor::nn::{ParamVisitor, Parameters};
use typed_tensor::prelude::*;

pub(super) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/checkpoints")
        .join(name)
}

/// Asserts `got` is PyTorch's `want` within `rtol` of each element, or of the tensor's largest one, or 1e-7.
pub(super) fn assert_matches(what: &str, got: &[f32], want: &[f32], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let largest = want.iter().fold(0f64, |m, w| m.max(f64::from(w.abs())));
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (f64::from(g), f64::from(w));
        assert!(
            (g - w).abs() <= rtol * w.abs().max(largest * 1e-2) + 1e-7,
            "{what}: element {i}: got {g}, PyTorch {w}"
        );
    }
}

/// Compares the gradient of every parameter with the reference file's `<mode>.grad.<name>`, and counts them.
pub(super) struct CompareGrads<'a> {
    pub(super) grads: &'a Gradients,
    pub(super) file: &'a TensorFile,
    pub(super) mode: &'a str,
    pub(super) compared: usize,
}

impl ParamVisitor for CompareGrads<'_> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, name: &str, var: &Var<T, S, D>) {
        self.visit_stored_as(name, var, &var.shape().dims());
    }

    /// PyTorch's gradient of a packed parameter has its file shape (`in_proj_weight`: `(3E, E)`).
    fn visit_stored_as<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        name: &str,
        var: &Var<T, S, D>,
        stored: &[usize],
    ) {
        let key = format!("{}.grad.{name}", self.mode);
        let want = match *stored {
            [] => self
                .file
                .tensor::<f32, Rank0, Cpu>(&key)
                .map(|t| t.to_vec()),
            [a] => self
                .file
                .tensor_with_shape::<f32, _, Cpu>(&key, (a,))
                .map(|t| t.to_vec()),
            [a, b] => self
                .file
                .tensor_with_shape::<f32, _, Cpu>(&key, (a, b))
                .map(|t| t.to_vec()),
            [a, b, c, d] => self
                .file
                .tensor_with_shape::<f32, _, Cpu>(&key, (a, b, c, d))
                .map(|t| t.to_vec()),
            _ => panic!("{key}: no reader for rank {}", stored.len()),
        }
        .unwrap();
        let got = self.grads.get(var).to_vec();
        let got: Vec<f32> = got.iter().map(|g| g.to_f64() as f32).collect();
        assert_matches(&key, &got, &want, 1e-4);
        self.compared += 1;
    }
}

/// The number of parameters of `model`, by a walk that counts them.
pub(super) fn parameter_count(model: &impl Parameters) -> usize {
    struct Count(usize);
    impl ParamVisitor for Count {
        fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, _: &Var<T, S, D>) {
            self.0 += 1;
        }
    }
    let mut count = Count(0);
    model.visit_params("", &mut count);
    count.0
}
