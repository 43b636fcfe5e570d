//! (d) The bidirectional LSTM and GRU over packed sequences.

use super::{assert_matches, fixture, CompareGrads};
use typed_tensor::autograd::Var;
use typed_tensor::io::{load, TensorFile};
use typed_tensor::nn::{
    Bidirectional, CellType, GruKind, LstmKind, Parameters, Recurrent, RecurrentKind, RnnArgs,
};
use typed_tensor::prelude::*;

// (d) A 2-layer bidirectional LSTM and GRU over a padded batch with per-sample lengths (PyTorch's packed
// sequence), from given initial states; loss `sum(out * r_out) + sum(h_n * r_h) (+ sum(c_n * r_c))`.

type States = Tensor<f32, Rank4<2, 2, 3, 4>, Cpu>;

/// The stack loaded from `family` gives PyTorch's outputs, final states, loss and every gradient.
fn recurrent_matches<K: RecurrentKind>(family: &str) {
    let model = Recurrent::<f32, K, 3, 4, 2, Cpu, Bidirectional>::zeros();
    load(&model, fixture(&format!("{family}.safetensors"))).unwrap();
    let file = TensorFile::open(fixture(&format!("{family}.io.safetensors"))).unwrap();
    let x: Tensor<f32, Rank3<3, 5, 3>, Cpu> = file.tensor("input").unwrap();
    let lengths: Tensor<i32, Rank1<3>, Cpu> = file.tensor("lengths").unwrap();
    let lengths = lengths.to_dtype::<u32>();
    let read = |name: &str| -> States { file.tensor(name).unwrap() };
    let lstm = K::CELL == CellType::Lstm;
    let (input, h0, c0) = (Var::new(x), Var::new(read("h0")), Var::new(read("c0")));
    let (h0_t, c0_t) = (h0.trace(), c0.trace());
    let args = RnnArgs::new().initial(&h0_t).lengths(&lengths);
    let args = if lstm { args.initial_cell(&c0_t) } else { args };
    let (out, (h_n, c_n)) = model.run(input.trace(), args);
    let want: Tensor<f32, Rank4<3, 5, 2, 4>, Cpu> = file.tensor("eval.output").unwrap();
    assert_matches(
        &format!("{family} output"),
        &out.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    assert_matches(
        &format!("{family} h_n"),
        &h_n.value().to_vec(),
        &read("eval.h_n").to_vec(),
        1e-5,
    );
    let r_out: Tensor<f32, Rank4<3, 5, 2, 4>, Cpu> = file.tensor("r_out").unwrap();
    let mut loss = (out * &Traced::constant(r_out)).sum_all()
        + (h_n * &Traced::constant(read("r_h"))).sum_all();
    match c_n {
        Some(c_n) => {
            assert!(lstm);
            assert_matches(
                &format!("{family} c_n"),
                &c_n.value().to_vec(),
                &read("eval.c_n").to_vec(),
                1e-5,
            );
            loss = loss + (c_n * &Traced::constant(read("r_c"))).sum_all();
        }
        None => assert!(!lstm, "an LSTM returns its cell states"),
    }
    let want: Tensor<f32, Rank0, Cpu> = file.tensor("eval.loss").unwrap();
    assert_matches(
        &format!("{family} loss"),
        &loss.value().to_vec(),
        &want.to_vec(),
        1e-5,
    );
    let grads = loss.backward();
    let want: Tensor<f32, Rank3<3, 5, 3>, Cpu> = file.tensor("eval.grad.input").unwrap();
    assert_matches(
        "grad.input",
        &grads.get(&input).to_vec(),
        &want.to_vec(),
        1e-4,
    );
    assert_matches(
        "grad.h0",
        &grads.get(&h0).to_vec(),
        &read("eval.grad.h0").to_vec(),
        1e-4,
    );
    if lstm {
        assert_matches(
            "grad.c0",
            &grads.get(&c0).to_vec(),
            &read("eval.grad.c0").to_vec(),
            1e-4,
        );
    }
    let mut compare = CompareGrads {
        grads: &grads,
        file: &file,
        mode: "eval",
        compared: 0,
    };
    model.visit_params("", &mut compare);
    assert_eq!(
        compare.compared, 16,
        "2 layers x 2 directions x (2 weights + 2 biases)"
    );
}

#[test]
fn lstm_checkpoint_matches_pytorch_with_lengths() {
    recurrent_matches::<LstmKind>("lstm");
}

#[test]
fn gru_checkpoint_matches_pytorch_with_lengths() {
    recurrent_matches::<GruKind>("gru");
}
