//! The recurrent layers' fused path (the `Cpu`'s default: one op per layer and direction) against the composed
//! steps (`RnnArgs::composed`, which rnn_layers.rs checks against a naive loop and checkpoints/ against PyTorch):
//! values and the gradients of the input, the initial states and every parameter, for every kind, both
//! directions, per-sample lengths (full, short, empty), with and without biases, every float dtype; at a size
//! whose steps run in several groups side by side; with a strided input and a strided initial state; with the
//! model used twice in one graph (its parameters' gradients summed); and the plain tensor path against the
//! traced one.

use crate::common::*;
use typed_tensor::autograd::{Gradients, Var};
use typed_tensor::nn::{
    BiasKind, Bidirectional, CellType, Directions, Forward, GruKind, LstmKind, NoBias,
    ParamVisitor, Parameters, Recurrent, RecurrentKind, RnnArgs, RnnReluKind, RnnTanhKind,
    WithBias,
};
use typed_tensor::prelude::*;
use typed_tensor::shape::ConstDim;

/// Every parameter's gradient in walk order, as f64.
struct ParamGrads<'a>(&'a Gradients, Vec<Vec<f64>>);
impl ParamVisitor for ParamGrads<'_> {
    fn visit<T: FloatDType, S: Shape, D: Device>(&mut self, _: &str, var: &Var<T, S, D>) {
        let g = self.0.get(var).to_vec();
        self.1.push(g.iter().map(|v| v.to_f64()).collect());
    }
}

fn f64s<T: WithDType>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// `|a - b| <= tol (1 + |b|)` elementwise.
fn close(what: &str, a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: element {i}: fused {x}, composed {y}"
        );
    }
}

fn tol<T: WithDType>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2e-2,
        DType::BF16 => 8e-2,
        DType::F32 => 1e-5,
        _ => 1e-12,
    }
}

/// One path's outputs and gradients: the output, `h_n`, `c_n`, and the gradients of the input, `h0`, `c0` and every
/// parameter, of a loss that weighs every output and state.
type Run = (Vec<Vec<f64>>, Vec<Vec<f64>>);

/// A 2-layer stack of kind `K` over `(B, L, I)` with hidden size `H` from traced initial states, with `lengths`
/// when given, by both paths; `twice` runs the model on two inputs in one graph.
fn both_paths<K, T, Dir, Bk, const B: usize, const L: usize, const I: usize, const H: usize>(
    lengths: Option<[u32; B]>,
    twice: bool,
) where
    K: RecurrentKind,
    T: FloatDType,
    Dir: Directions,
    Bk: BiasKind,
{
    let model = Recurrent::<T, K, I, H, 2, Cpu, Dir, Bk>::new(11);
    let x = Var::new(random::<T, Rank3<B, L, I>, Cpu>(1));
    let x2 = Var::new(random::<T, Rank3<B, L, I>, Cpu>(2));
    let shape = (Const::<2>, Dir::Count::default(), Const::<B>, Const::<H>);
    // Initial states in [-1, 1).
    let state = |seed| Tensor::<T, _, Cpu>::rand_with_shape(shape, seed).affine(2.0, -1.0);
    let (h0, c0) = (Var::new(state(3)), Var::new(state(4)));
    let lengths = lengths.map(Tensor::<u32, Rank1<B>, Cpu>::from_array);
    let run = |composed: bool| -> Run {
        let (h0t, c0t) = (h0.trace(), c0.trace());
        let mut args = RnnArgs::new().initial(&h0t).initial_cell(&c0t);
        if let Some(lengths) = &lengths {
            args = args.lengths(lengths);
        }
        if composed {
            args = args.composed();
        }
        let (y, (h_n, c_n)) = model.run(x.trace(), args);
        let y2 = twice.then(|| model.run(x2.trace(), RnnArgs::new()).0);
        // A loss that weighs every element differently, so a misplaced gradient shows.
        let w_y = Tensor::<T, _, Cpu>::rand_with_shape(y.value().shape(), 5);
        let w_h = Tensor::<T, _, Cpu>::rand_with_shape(h_n.value().shape(), 6);
        let mut loss = (y.clone() * &w_y).sum_all() + &(h_n.clone() * &w_h).sum_all();
        if let Some(c_n) = &c_n {
            loss = loss + &(c_n.clone() * &w_h).sum_all();
        }
        if let Some(y2) = &y2 {
            loss = loss + &(y2.clone() * &w_y).sum_all();
        }
        let mut values = vec![f64s(&y.value().to_vec()), f64s(&h_n.value().to_vec())];
        values.extend(c_n.map(|c| f64s(&c.value().to_vec())));
        values.extend(y2.map(|y| f64s(&y.value().to_vec())));
        let grads = loss.backward();
        let mut visitor = ParamGrads(&grads, Vec::new());
        model.visit_params("", &mut visitor);
        let mut gradients = visitor.1;
        gradients.push(f64s(&grads.get(&x).to_vec()));
        gradients.push(f64s(&grads.get(&h0).to_vec()));
        gradients.push(f64s(&grads.get(&c0).to_vec()));
        gradients.push(f64s(&grads.get(&x2).to_vec()));
        (values, gradients)
    };
    let (fused, composed) = (run(false), run(true));
    let what = format!(
        "{:?} [{}] {} dirs, lengths {lengths:?}",
        K::CELL,
        T::DTYPE,
        Dir::Count::SIZE
    );
    for (k, (a, b)) in fused.0.iter().zip(&composed.0).enumerate() {
        close(&format!("{what}: output {k}"), a, b, tol::<T>());
    }
    for (k, (a, b)) in fused.1.iter().zip(&composed.1).enumerate() {
        close(&format!("{what}: gradient {k}"), a, b, 10.0 * tol::<T>());
    }
    if K::CELL != CellType::Lstm {
        assert!(
            fused.1[fused.1.len() - 2].iter().all(|&v| v == 0.0),
            "{what}: c0 unused"
        );
    }
}

fn every_kind<T: FloatDType>() {
    let short = Some([4, 2, 0]);
    both_paths::<LstmKind, T, Bidirectional, WithBias, 3, 4, 3, 5>(short, false);
    both_paths::<GruKind, T, Bidirectional, WithBias, 3, 4, 3, 5>(short, false);
    both_paths::<RnnTanhKind, T, Bidirectional, WithBias, 3, 4, 3, 5>(short, false);
    both_paths::<RnnReluKind, T, Bidirectional, WithBias, 3, 4, 3, 5>(short, false);
    both_paths::<LstmKind, T, Forward, NoBias, 3, 4, 3, 5>(None, true);
    both_paths::<GruKind, T, Forward, NoBias, 3, 4, 3, 5>(None, true);
}

#[test]
fn every_kind_f64() {
    every_kind::<f64>();
}

#[test]
fn every_kind_f32() {
    every_kind::<f32>();
}

#[test]
fn every_kind_f16() {
    every_kind::<f16>();
}

#[test]
fn every_kind_bf16() {
    every_kind::<bf16>();
}

/// 49 samples of hidden size 96: each step's product is past the threshold, so the samples run in groups side by
/// side (on a machine with several threads), the last group shorter.
#[test]
fn groups_side_by_side() {
    let lengths = core::array::from_fn(|s| (s % 7) as u32);
    both_paths::<LstmKind, f64, Bidirectional, WithBias, 49, 6, 8, 96>(Some(lengths), false);
    both_paths::<GruKind, f64, Forward, WithBias, 49, 6, 8, 96>(None, true);
}

/// A strided input and a strided initial state (transposed views) give what their dense copies give, and plain
/// tensors what traced values give.
#[test]
fn strided_inputs_and_plain_tensors() {
    let model = Recurrent::<f64, LstmKind, 3, 4, 1, Cpu, Bidirectional>::new(2);
    let x: Tensor<f64, Rank3<4, 5, 3>, Cpu> = random(1);
    let x_t = random::<f64, Rank3<5, 4, 3>, Cpu>(1).transpose::<Axis<0>, Axis<1>>();
    let h0: Tensor<f64, Rank4<1, 2, 4, 4>, Cpu> = random(2);
    let h0_t = random::<f64, Rank4<1, 2, 4, 4>, Cpu>(2).transpose::<Axis<2>, Axis<3>>();
    assert!(!x_t.is_contiguous() && !h0_t.is_contiguous());
    let dense = |x: &Tensor<f64, Rank3<4, 5, 3>, Cpu>, h0: &Tensor<f64, Rank4<1, 2, 4, 4>, Cpu>| {
        let (y, (h, c)) = model.run(x.contiguous(), RnnArgs::new().initial(&h0.contiguous()));
        (y.to_vec(), h.to_vec(), c.map(|c| c.to_vec()))
    };
    let (y, (h, c)) = model.run(x_t.clone(), RnnArgs::new().initial(&h0_t));
    assert_eq!(
        (y.to_vec(), h.to_vec(), c.map(|c| c.to_vec())),
        dense(&x_t, &h0_t)
    );
    let (y, (h, c)) = model.run(x.clone(), RnnArgs::new().initial(&h0));
    let (yc, (hc, cc)) = model.run(x.clone(), RnnArgs::new().initial(&h0).composed());
    close("plain output", &y.to_vec(), &yc.to_vec(), 1e-12);
    close("plain h_n", &h.to_vec(), &hc.to_vec(), 1e-12);
    close(
        "plain c_n",
        &c.unwrap().to_vec(),
        &cc.unwrap().to_vec(),
        1e-12,
    );
    let h0_traced = Traced::constant(h0.clone());
    let (traced, _) = model.run(Traced::constant(x), RnnArgs::new().initial(&h0_traced));
    assert_eq!(traced.into_value().to_vec(), y.to_vec());
}

/// NaN in a valid step reaches that sample's outputs only, as the composed path has it; an infinite input
/// saturates the gates without a NaN.
#[test]
fn nan_stays_in_its_sample() {
    let model = Recurrent::<f64, GruKind, 3, 4, 1, Cpu>::new(3);
    let mut values = random::<f64, Rank3<2, 3, 3>, Cpu>(4).to_vec();
    values[3] = f64::NAN; // sample 0, step 1
    values[9 + 4] = f64::INFINITY; // sample 1, step 1
    let x = Tensor::<f64, Rank3<2, 3, 3>, Cpu>::from_vec(values).unwrap();
    let (y, _) = model.forward(x.clone());
    let (yc, _) = model.run(x, RnnArgs::new().composed());
    let (y, yc) = (y.to_vec(), yc.to_vec());
    assert!(
        y[..4].iter().all(|v| v.is_finite()),
        "sample 0 before the NaN"
    );
    assert!(
        y[4..12].iter().all(|v| v.is_nan()),
        "sample 0 from the NaN on"
    );
    assert!(y[12..].iter().all(|v| !v.is_nan()), "sample 1");
    for (a, b) in y.iter().zip(&yc) {
        assert!(a == b || (a - b).abs() < 1e-12 || (a.is_nan() && b.is_nan()));
    }
}
