//! The recurrent layers (`LSTM`, `GRU`, `RNN` with tanh or ReLU) against a naive loop written from PyTorch's
//! equations: two stacked bidirectional layers with initial states and per-sample lengths, every float dtype,
//! plain and traced values alike; parameter names without biases or a reverse direction; lengths that are zero,
//! past the sequence, or hide NaN in padding. (checkpoints/ compares the LSTM and GRU with PyTorch itself.)

use crate::common::*;
use typed_tensor::nn::{
    Bidirectional, CellType, Forward, GruKind, LstmKind, Module, NoBias, ParamVisitor, Parameters,
    Recurrent, RecurrentKind, RnnArgs, RnnReluKind, RnnTanhKind,
};
use typed_tensor::prelude::*;

const B: usize = 3;
const L: usize = 4;
const I: usize = 3;
const H: usize = 2;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Every parameter of a model in walk order, as f64.
struct Values(Vec<Vec<f64>>);
impl ParamVisitor for Values {
    fn visit<T: FloatDType, S: Shape, D: Device>(
        &mut self,
        _: &str,
        var: &typed_tensor::autograd::Var<T, S, D>,
    ) {
        self.0
            .push(var.value().to_vec().iter().map(|v| v.to_f64()).collect());
    }
}

/// `x W^T + b` for one row `x` and `w` of `rows x x.len()`.
fn affine(x: &[f64], w: &[f64], b: &[f64]) -> Vec<f64> {
    let cols = x.len();
    (0..w.len() / cols)
        .map(|r| b[r] + (0..cols).map(|c| x[c] * w[r * cols + c]).sum::<f64>())
        .collect()
}

/// One step of `cell` for one sample: PyTorch's equations on `gx = x W_ih^T + b_ih`, `gh = h W_hh^T + b_hh`.
fn step(cell: CellType, gx: &[f64], gh: &[f64], h: &[f64], c: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let g = |v: &[f64], k: usize, j: usize| v[k * H + j];
    let (mut h2, mut c2) = (vec![0.0; H], vec![0.0; H]);
    for j in 0..H {
        match cell {
            CellType::Lstm => {
                let s = |k| g(gx, k, j) + g(gh, k, j);
                c2[j] = sigmoid(s(1)) * c[j] + sigmoid(s(0)) * s(2).tanh();
                h2[j] = sigmoid(s(3)) * c2[j].tanh();
            }
            CellType::Gru => {
                let r = sigmoid(g(gx, 0, j) + g(gh, 0, j));
                let z = sigmoid(g(gx, 1, j) + g(gh, 1, j));
                let n = (g(gx, 2, j) + r * g(gh, 2, j)).tanh();
                h2[j] = (1.0 - z) * n + z * h[j];
                c2[j] = h2[j];
            }
            CellType::RnnTanh => h2[j] = (g(gx, 0, j) + g(gh, 0, j)).tanh(),
            CellType::RnnRelu => h2[j] = (g(gx, 0, j) + g(gh, 0, j)).max(0.0),
        }
        if cell != CellType::Lstm {
            c2[j] = h2[j];
        }
    }
    (h2, c2)
}

/// The stack as loops: `params` in walk order (per layer and direction: w_ih, w_hh, b_ih, b_hh), input
/// `(B, L, I)`, initial states `(2, 2, B, H)`, lengths. Returns the output `(B, L, 2, H)` and `h_n`, `c_n`.
fn naive(
    cell: CellType,
    params: &[Vec<f64>],
    x: &[f64],
    (h0, c0): (&[f64], &[f64]),
    lengths: &[usize],
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut input: Vec<Vec<Vec<f64>>> = (0..B)
        .map(|b| (0..L).map(|t| x[(b * L + t) * I..][..I].to_vec()).collect())
        .collect();
    let (mut h_n, mut c_n) = (vec![0.0; 2 * 2 * B * H], vec![0.0; 2 * 2 * B * H]);
    for layer in 0..2 {
        let mut out = vec![vec![vec![0.0; 2 * H]; L]; B];
        for d in 0..2 {
            let p = &params[(layer * 2 + d) * 4..][..4];
            for b in 0..B {
                let at = ((layer * 2 + d) * B + b) * H;
                let (mut h, mut c) = (h0[at..at + H].to_vec(), c0[at..at + H].to_vec());
                let times: Vec<usize> = if d == 0 {
                    (0..lengths[b]).collect()
                } else {
                    (0..lengths[b]).rev().collect()
                };
                for t in times {
                    let (gx, gh) = (affine(&input[b][t], &p[0], &p[2]), affine(&h, &p[1], &p[3]));
                    (h, c) = step(cell, &gx, &gh, &h, &c);
                    out[b][t][d * H..(d + 1) * H].copy_from_slice(&h);
                }
                h_n[at..at + H].copy_from_slice(&h);
                c_n[at..at + H].copy_from_slice(&c);
            }
        }
        input = out;
    }
    let output = input.into_iter().flatten().flatten().collect();
    (output, h_n, c_n)
}

fn f<T: WithDType, S: Shape, D: Device>(t: &Tensor<T, S, D>) -> Vec<f64> {
    t.to_vec().iter().map(|v| v.to_f64()).collect()
}

fn tol<T: WithDType>() -> f64 {
    match T::DTYPE {
        DType::F16 => 1e-2,
        DType::BF16 => 6e-2,
        DType::F32 => 1e-5,
        _ => 1e-12,
    }
}

/// A 2-layer bidirectional stack of kind `K` with initial states and lengths (one full, one short, one empty)
/// against the loop, on plain tensors and traced values.
fn stack_against_the_loop<K: RecurrentKind, T: FloatDType, D: AutogradDevice>() {
    let model = Recurrent::<T, K, I, H, 2, D, Bidirectional>::new(5);
    let x: Tensor<T, Rank3<B, L, I>, D> = random(6);
    let (h0, c0): (
        Tensor<T, Rank4<2, 2, B, H>, D>,
        Tensor<T, Rank4<2, 2, B, H>, D>,
    ) = (random(7), random(8));
    let lengths = Tensor::<u32, Rank1<B>, D>::from_array([4, 2, 0]);
    let args = RnnArgs::new()
        .initial(&h0)
        .initial_cell(&c0)
        .lengths(&lengths);
    let (out, (h_n, c_n)) = model.run(x.clone(), args);
    let mut params = Values(Vec::new());
    model.visit_params("", &mut params);
    let c0_used = if K::CELL == CellType::Lstm {
        f(&c0)
    } else {
        f(&h0)
    };
    let (want, want_h, want_c) = naive(K::CELL, &params.0, &f(&x), (&f(&h0), &c0_used), &[4, 2, 0]);
    let what = format!("{:?} [{}]", K::CELL, T::DTYPE);
    assert_within(&format!("{what} output"), &out.to_vec(), &want, tol::<T>());
    assert_within(&format!("{what} h_n"), &h_n.to_vec(), &want_h, tol::<T>());
    match c_n {
        Some(c_n) => assert_within(&format!("{what} c_n"), &c_n.to_vec(), &want_c, tol::<T>()),
        None => assert_ne!(K::CELL, CellType::Lstm),
    }
    // Traced values give the same numbers.
    let (h0_t, c0_t) = (Traced::constant(h0.clone()), Traced::constant(c0.clone()));
    let args = RnnArgs::new()
        .initial(&h0_t)
        .initial_cell(&c0_t)
        .lengths(&lengths);
    let (traced, _) = model.run(Traced::constant(x), args);
    assert_eq!(traced.into_value().to_vec(), out.to_vec(), "{what}: traced");
}

fn every_kind<T: FloatDType, D: AutogradDevice>() {
    stack_against_the_loop::<LstmKind, T, D>();
    stack_against_the_loop::<GruKind, T, D>();
    stack_against_the_loop::<RnnTanhKind, T, D>();
    stack_against_the_loop::<RnnReluKind, T, D>();
}

fn every_kind_f64<D: AutogradDevice>() {
    every_kind::<f64, D>();
}
fn every_kind_f32<D: AutogradDevice>() {
    every_kind::<f32, D>();
}
fn every_kind_f16<D: AutogradDevice>() {
    every_kind::<f16, D>();
}
fn every_kind_bf16<D: AutogradDevice>() {
    every_kind::<bf16, D>();
}

device_tests! {
    stacks_f64 => every_kind_f64;
    stacks_f32 => every_kind_f32;
    stacks_f16 => every_kind_f16;
    stacks_bf16 => every_kind_bf16;
}

/// Parameter names: `_reverse` only with both directions, the biases only with them, layer indices `_l{k}`.
#[test]
fn parameter_names() {
    struct Names(Vec<String>);
    impl ParamVisitor for Names {
        fn visit<T: FloatDType, S: Shape, D: Device>(
            &mut self,
            name: &str,
            _: &typed_tensor::autograd::Var<T, S, D>,
        ) {
            self.0.push(name.to_string());
        }
    }
    let mut names = Names(Vec::new());
    Recurrent::<f32, GruKind, I, H, 2, Cpu, Forward, NoBias>::new(0)
        .visit_params("gru", &mut names);
    assert_eq!(
        names.0,
        [
            "gru.weight_ih_l0",
            "gru.weight_hh_l0",
            "gru.weight_ih_l1",
            "gru.weight_hh_l1"
        ]
    );
    let mut names = Names(Vec::new());
    Recurrent::<f32, LstmKind, I, H, 1, Cpu, Bidirectional>::new(0).visit_params("", &mut names);
    assert_eq!(
        names.0,
        [
            "weight_ih_l0",
            "weight_hh_l0",
            "bias_ih_l0",
            "bias_hh_l0",
            "weight_ih_l0_reverse",
            "weight_hh_l0_reverse",
            "bias_ih_l0_reverse",
            "bias_hh_l0_reverse"
        ]
    );
}

/// A NaN or infinity in a padded step's input reaches neither the outputs nor the states; a length past the
/// sequence panics naming the sample; `forward` without arguments is every sample at full length from zeros.
#[test]
fn lengths_keep_padding_out() {
    let model = Recurrent::<f64, LstmKind, I, H, 2, Cpu, Bidirectional>::new(1);
    let clean: Tensor<f64, Rank3<B, L, I>, Cpu> = random(2);
    let mut values = clean.to_vec();
    values[(2 * L + 3) * I] = f64::NAN; // sample 2, step 3: padding for length 1
    values[(L + 3) * I + 1] = f64::INFINITY; // sample 1, step 3: padding for length 3
    let dirty = Tensor::<f64, Rank3<B, L, I>, Cpu>::from_vec(values).unwrap();
    let lengths = Tensor::<u32, Rank1<B>, Cpu>::from_array([4, 3, 1]);
    let (a, (ha, ca)) = model.run(clean.clone(), RnnArgs::new().lengths(&lengths));
    let (b, (hb, cb)) = model.run(dirty, RnnArgs::new().lengths(&lengths));
    assert_eq!(a.to_vec(), b.to_vec());
    assert_eq!(ha.to_vec(), hb.to_vec());
    assert_eq!(ca.unwrap().to_vec(), cb.unwrap().to_vec());
    assert!(a.to_vec().iter().all(|v| v.is_finite()));

    let long = Tensor::<u32, Rank1<B>, Cpu>::from_array([4, 5, 1]);
    let message = panic_message(|| model.run(clean.clone(), RnnArgs::new().lengths(&long)));
    assert_eq!(message, "LSTM: takes 5 elements along axis 1, which has 4");
    let err = model
        .try_run(clean.clone(), RnnArgs::new().lengths(&long))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        message,
        "try_run: the same message, as an error"
    );
    assert!(model
        .try_run(clean.clone(), RnnArgs::new().lengths(&lengths))
        .is_ok());

    let full = Tensor::<u32, Rank1<B>, Cpu>::from_array([4, 4, 4]);
    let (y, _) = model.run(clean.clone(), RnnArgs::new().lengths(&full));
    assert_eq!(model.forward(clean).0.to_vec(), y.to_vec());
}

/// A runtime batch runs as the static one does.
#[test]
fn runtime_batch() {
    let model = Recurrent::<f64, GruKind, I, H, 1, Cpu, Forward>::new(3);
    let x: Tensor<f64, Rank3<B, L, I>, Cpu> = random(4);
    let (want, (want_h, _)) = model.forward(x.clone());
    let x_rt = x.reshape_with_shape((B, Const::<L>, Const::<I>));
    let (got, (h, _)) = model.forward(x_rt);
    assert_eq!(got.to_vec(), want.to_vec());
    assert_eq!(h.to_vec(), want_h.to_vec());
    assert_eq!(h.dims().to_vec(), [1, 1, B, H]);
}

/// Dropout between layers (PyTorch's `dropout`): in training a 2-layer stack is its second layer over the first's
/// output through a `Dropout` of the same probability and seed (the last layer's output is not dropped); plain
/// tensors, evaluation mode and `p = 0` are the stack without dropout.
#[test]
fn dropout_between_layers() {
    // Input width = hidden width, so the upper layer's weights fit a first layer's.
    let stack = Recurrent::<f64, GruKind, H, H, 2, Cpu>::new(4).with_dropout(0.4, 9);
    let (first, second) = (
        Recurrent::<f64, GruKind, H, H, 1, Cpu>::new(0),
        Recurrent::<f64, GruKind, H, H, 1, Cpu>::new(0),
    );
    first.first[0]
        .weight_ih
        .set(stack.first[0].weight_ih.value());
    first.first[0]
        .weight_hh
        .set(stack.first[0].weight_hh.value());
    first.first[0].bias_ih.set(stack.first[0].bias_ih.value());
    first.first[0].bias_hh.set(stack.first[0].bias_hh.value());
    let upper = &stack.upper[0][0];
    second.first[0]
        .weight_ih
        .set(upper.weight_ih.value().reshape());
    second.first[0].weight_hh.set(upper.weight_hh.value());
    second.first[0].bias_ih.set(upper.bias_ih.value());
    second.first[0].bias_hh.set(upper.bias_hh.value());
    let x: Tensor<f64, Rank3<B, L, H>, Cpu> = random(5);

    let (trained, _) = stack.forward(Traced::constant(x.clone()));
    let dropout = typed_tensor::nn::Dropout::new(0.4, 9);
    let (between, _) = first.forward(Traced::constant(x.clone()));
    let between: Traced<f64, Rank3<B, L, H>, Cpu> = between.reshape();
    let (want, _) = second.forward(dropout.forward(between));
    assert_within(
        "2 layers with dropout between",
        &trained.value().to_vec(),
        &f(want.value()),
        1e-12,
    );

    let (plain, _) = stack.forward(x.clone());
    let (unchanged, _) = Recurrent::<f64, GruKind, H, H, 2, Cpu>::new(4).forward(x.clone());
    assert_eq!(plain.to_vec(), unchanged.to_vec(), "plain tensors");
    assert_ne!(trained.value().to_vec(), plain.to_vec(), "training drops");
    stack.eval();
    let (evaluated, _) = stack.forward(Traced::constant(x.clone()));
    assert_eq!(
        evaluated.value().to_vec(),
        plain.to_vec(),
        "evaluation mode"
    );
    let none = Recurrent::<f64, GruKind, H, H, 2, Cpu>::new(4).with_dropout(0.0, 9);
    let (kept, _) = none.forward(Traced::constant(x));
    assert_eq!(kept.value().to_vec(), plain.to_vec(), "p = 0");
}

/// A runtime sequence length (`(B, usize, I)`) runs as the static one does, on both paths, traced too; an empty
/// sequence gives an empty output and the initial states; a length past the runtime sequence is a named error.
#[test]
fn runtime_length() {
    let model = Recurrent::<f64, LstmKind, I, H, 2, Cpu, Bidirectional>::new(6);
    let x: Tensor<f64, Rank3<B, L, I>, Cpu> = random(7);
    let h0: Tensor<f64, Rank4<2, 2, B, H>, Cpu> = random(8);
    let lengths = Tensor::<u32, Rank1<B>, Cpu>::from_array([4, 1, 3]);
    let args = || RnnArgs::new().initial(&h0).lengths(&lengths);
    let (want, (want_h, want_c)) = model.run(x.clone(), args());
    let x_rt = x.reshape_with_shape((Const::<B>, L, Const::<I>));
    for composed in [false, true] {
        let args = if composed { args().composed() } else { args() };
        let (got, (h, c)) = model.run(x_rt.clone(), args);
        let what = format!("composed {composed}");
        assert_eq!(got.dims().to_vec(), [B, L, 2, H], "{what}");
        assert_within(&what, &got.to_vec(), &f(&want), 1e-12);
        assert_within(&what, &h.to_vec(), &f(&want_h), 1e-12);
        assert_within(
            &what,
            &c.unwrap().to_vec(),
            &f(want_c.as_ref().unwrap()),
            1e-12,
        );
    }
    let h0_traced = Traced::constant(h0.clone());
    let traced_args = RnnArgs::new().initial(&h0_traced).lengths(&lengths);
    let (traced, _) = model.run(Traced::constant(x_rt.clone()), traced_args);
    assert_within("traced", &traced.value().to_vec(), &f(&want), 1e-12);

    let empty =
        Tensor::<f64, (Const<B>, usize, Const<I>), Cpu>::zeros_with_shape((Const, 0, Const));
    let none = Tensor::<u32, Rank1<B>, Cpu>::zeros();
    for composed in [false, true] {
        let args = RnnArgs::new().initial(&h0).lengths(&none);
        let args = if composed { args.composed() } else { args };
        let (y, (h, _)) = model.run(empty.clone(), args);
        assert_eq!(y.dims().to_vec(), [B, 0, 2, H]);
        assert_eq!(
            h.to_vec(),
            h0.to_vec(),
            "the initial states, composed {composed}"
        );
    }
    let short =
        Tensor::<f64, (Const<B>, usize, Const<I>), Cpu>::zeros_with_shape((Const, 2, Const));
    let err = model
        .try_run(short, RnnArgs::new().lengths(&lengths))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "LSTM: takes 4 elements along axis 1, which has 2"
    );
}
