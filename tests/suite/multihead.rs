//! `MultiheadAttention` and the transformer encoder against a naive loop written from PyTorch's definitions
//! (the PyTorch checkpoints in checkpoints/ are the outside reference; these cover what those fixtures do not):
//! every mask kind at once with causal masking, a query left with no key, runtime lengths, a strided input,
//! every float dtype, the packed parameters' file shapes, layers without biases, dropout's modes, bad masks.

use crate::common::*;
use typed_tensor::autograd::Var;
#[cfg(feature = "safetensors")]
use typed_tensor::io::{from_bytes, to_bytes, TensorFile};
#[cfg(feature = "safetensors")]
use typed_tensor::nn::NoBias;
use typed_tensor::nn::{
    MhaMasks, Module, MultiheadAttention, Parameters, TransformerConfig, TransformerDecoder,
    TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
};
use typed_tensor::prelude::*;

const N: usize = 2; // batch
const L: usize = 3; // queries
const S: usize = 4; // keys
const E: usize = 6;
const HEADS: usize = 2;
const HD: usize = 3;

/// PyTorch's `nn.MultiheadAttention` forward as loops: `blocked(b, h, l, s)` says a key is masked for a query of
/// a head, `add(b, h, l, s)` is the additive mask. Returns the output `(N, L, E)` and the per-head weights `(N, H, L, S)`
/// (a query with every key blocked: zero weights, so the out-projection's bias alone).
#[allow(clippy::too_many_arguments)]
fn naive(
    (q, k, v): (&[f64], &[f64], &[f64]),
    w_in: &[f64],
    b_in: &[f64],
    w_out: &[f64],
    b_out: &[f64],
    blocked: impl Fn(usize, usize, usize, usize) -> bool,
    add: impl Fn(usize, usize, usize, usize) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    // x W_i^T + b_i for rows of width E.
    let project = |x: &[f64], rows: usize, i: usize| -> Vec<f64> {
        let mut y = vec![0.0; N * rows * E];
        for r in 0..N * rows {
            for o in 0..E {
                y[r * E + o] = b_in[i * E + o]
                    + (0..E)
                        .map(|c| x[r * E + c] * w_in[(i * E + o) * E + c])
                        .sum::<f64>();
            }
        }
        y
    };
    let (qp, kp, vp) = (project(q, L, 0), project(k, S, 1), project(v, S, 2));
    let mut weights = vec![0.0; N * HEADS * L * S];
    let mut joined = vec![0.0; N * L * E];
    for b in 0..N {
        for h in 0..HEADS {
            for l in 0..L {
                let scores: Vec<f64> = (0..S)
                    .map(|s| {
                        if blocked(b, h, l, s) {
                            return f64::NEG_INFINITY;
                        }
                        let dot: f64 = (0..HD)
                            .map(|d| {
                                qp[(b * L + l) * E + h * HD + d] * kp[(b * S + s) * E + h * HD + d]
                            })
                            .sum();
                        dot / (HD as f64).sqrt() + add(b, h, l, s)
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if max == f64::NEG_INFINITY {
                    continue;
                }
                let exps: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
                let total: f64 = exps.iter().sum();
                for s in 0..S {
                    let w = exps[s] / total;
                    weights[((b * HEADS + h) * L + l) * S + s] = w;
                    for d in 0..HD {
                        joined[(b * L + l) * E + h * HD + d] +=
                            w * vp[(b * S + s) * E + h * HD + d];
                    }
                }
            }
        }
    }
    let mut out = vec![0.0; N * L * E];
    for r in 0..N * L {
        for o in 0..E {
            out[r * E + o] = b_out[o]
                + (0..E)
                    .map(|c| joined[r * E + c] * w_out[o * E + c])
                    .sum::<f64>();
        }
    }
    (out, weights)
}

fn f64s<T: WithDType>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(|x| x.to_f64()).collect()
}

fn tol<T: WithDType>() -> f64 {
    match T::DTYPE {
        DType::F16 => 2e-2,
        DType::BF16 => 8e-2,
        DType::F32 => 1e-5,
        _ => 1e-12,
    }
}

/// A layer with random biases (PyTorch starts them at zero, which would hide a bias read from the wrong place).
fn layer<T: FloatDType, D: Device>() -> MultiheadAttention<T, E, HEADS, HD, D> {
    let attn = MultiheadAttention::<T, E, HEADS, HD, D>::new(3);
    attn.in_proj_bias.set(random(4));
    attn.out_proj.bias.set(random(5));
    attn
}

/// Every mask at once (key padding, a boolean attention mask, causal) and the additive forms, cross-attention
/// with a strided query, per-head weights, against the loop, in every float dtype.
fn masks_against_the_loop<T: FloatDType, D: AutogradDevice>() {
    let attn = layer::<T, D>();
    let q: Tensor<T, Rank3<N, E, L>, D> = random(6);
    let q = q.transpose::<Axis<1>, Axis<2>>(); // (N, L, E), strided
    let (k, v): (Tensor<T, Rank3<N, S, E>, D>, Tensor<T, Rank3<N, S, E>, D>) =
        (random(7), random(8));
    // Sample 1's keys 1 and 3 are padding; query 2 may not see key 0; causal on top.
    let padding = Tensor::<u8, Rank2<N, S>, D>::from_array([[0, 0, 0, 0], [0, 1, 0, 1]]);
    let blocked_pairs = Tensor::<u8, (usize, Const<S>), D>::from_vec_with_shape(
        (L, Const),
        vec![0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
    )
    .unwrap();
    let masks = MhaMasks::new()
        .key_padding_mask(&padding)
        .attn_mask(&blocked_pairs)
        .causal()
        .need_weights();
    let (out, weights) = attn.attend(q.clone(), k.clone(), v.clone(), masks);
    let params = (
        f64s(attn.in_proj_weight.value().to_vec()),
        f64s(attn.in_proj_bias.value().to_vec()),
        f64s(attn.out_proj.weight.value().to_vec()),
        f64s(attn.out_proj.bias.value().to_vec()),
    );
    let inputs = (f64s(q.to_vec()), f64s(k.to_vec()), f64s(v.to_vec()));
    let pad = [[false; S], [false, true, false, true]];
    let blocked = |b: usize, _: usize, l: usize, s: usize| pad[b][s] || (l == 2 && s == 0) || s > l;
    let (want, want_w) = naive(
        (&inputs.0, &inputs.1, &inputs.2),
        &params.0,
        &params.1,
        &params.2,
        &params.3,
        blocked,
        |_, _, _, _| 0.0,
    );
    assert_within(
        "mha output, boolean masks",
        &out.to_vec(),
        &want,
        tol::<T>(),
    );
    assert_within(
        "mha weights, boolean masks",
        &weights.unwrap().to_vec(),
        &want_w,
        tol::<T>(),
    );

    // The same masks in their additive forms, plus a finite additive term.
    let minus = T::from_f64(f64::NEG_INFINITY);
    let add_padding = Tensor::<T, Rank2<N, S>, D>::zeros().masked_fill(&padding, minus);
    let bias_values: Vec<f64> = (0..L * S).map(|i| (i as f64) * 0.1 - 0.5).collect();
    let mut attn_add: Vec<T> = bias_values.iter().map(|&x| T::from_f64(x)).collect();
    attn_add[2 * S] = minus;
    let attn_add =
        Tensor::<T, (usize, Const<S>), D>::from_vec_with_shape((L, Const), attn_add).unwrap();
    let masks = MhaMasks::new()
        .additive_key_padding_mask(&add_padding)
        .additive_attn_mask(&attn_add)
        .causal();
    let (out, weights) = attn.attend(q.clone(), k.clone(), v.clone(), masks);
    assert!(weights.is_none(), "weights only when asked");
    let add = |_: usize, _: usize, l: usize, s: usize| T::from_f64(bias_values[l * S + s]).to_f64();
    let (want, _) = naive(
        (&inputs.0, &inputs.1, &inputs.2),
        &params.0,
        &params.1,
        &params.2,
        &params.3,
        blocked,
        add,
    );
    assert_within(
        "mha output, additive masks",
        &out.to_vec(),
        &want,
        tol::<T>(),
    );

    // Causal alone, with and without the weights: the heads come through scaled_dot_product_attention without
    // them (the fused path on the Cpu in f32), through the weights with them; both are the loop's.
    let (want, _) = naive(
        (&inputs.0, &inputs.1, &inputs.2),
        &params.0,
        &params.1,
        &params.2,
        &params.3,
        |_, _, l, s| s > l,
        |_, _, _, _| 0.0,
    );
    for need in [false, true] {
        let masks = MhaMasks::new().causal();
        let masks = if need { masks.need_weights() } else { masks };
        let (out, weights) = attn.attend(q.clone(), k.clone(), v.clone(), masks);
        assert_eq!(weights.is_some(), need);
        let what = format!("mha output, causal only, weights {need}");
        assert_within(&what, &out.to_vec(), &want, tol::<T>());
    }

    // Per-head masks (PyTorch's 3-D attn_mask, rows b·HEADS + h). Additive with the key padding: head 0 of
    // sample 1 gets finite terms, and -inf blocks key 1 for query 1 of head 1 in sample 0; then the boolean form
    // alone.
    let at = |b: usize, h: usize, l: usize, s: usize| ((b * HEADS + h) * L + l) * S + s;
    let mut rows = vec![0u8; N * HEADS * L * S];
    rows[at(0, 1, 1, 1)] = 1;
    let head_mask =
        Tensor::<u8, (usize, usize, Const<S>), D>::from_vec_with_shape((N * HEADS, L, Const), rows)
            .unwrap();
    let mut terms: Vec<f64> = (0..N * HEADS * L * S)
        .map(|i| {
            if i / (L * S) == HEADS {
                (i % 7) as f64 * 0.2 - 0.6
            } else {
                0.0
            }
        })
        .collect();
    terms[at(0, 1, 1, 1)] = f64::NEG_INFINITY;
    let head_add = Tensor::<T, (usize, usize, Const<S>), D>::from_vec_with_shape(
        (N * HEADS, L, Const),
        terms.iter().map(|&x| T::from_f64(x)).collect(),
    )
    .unwrap();
    let masks = MhaMasks::new()
        .key_padding_mask(&padding)
        .additive_attn_mask_per_head(&head_add)
        .need_weights();
    let (out, weights) = attn.attend(q.clone(), k.clone(), v.clone(), masks);
    let per_head =
        |b: usize, h: usize, l: usize, s: usize| pad[b][s] || (b, h, l, s) == (0, 1, 1, 1);
    let term = |b: usize, h: usize, l: usize, s: usize| match (b, h, l, s) {
        (0, 1, 1, 1) => 0.0, // blocked above
        _ => T::from_f64(terms[at(b, h, l, s)]).to_f64(),
    };
    let (want, want_w) = naive(
        (&inputs.0, &inputs.1, &inputs.2),
        &params.0,
        &params.1,
        &params.2,
        &params.3,
        per_head,
        term,
    );
    assert_within(
        "mha output, per-head masks",
        &out.to_vec(),
        &want,
        tol::<T>(),
    );
    let weights = weights.unwrap().to_vec();
    assert_within("mha weights, per-head masks", &weights, &want_w, tol::<T>());
    assert_eq!(weights[at(0, 1, 1, 1)].to_f64(), 0.0); // blocked
    let masks = MhaMasks::new().attn_mask_per_head(&head_mask);
    let (out, _) = attn.attend(q.clone(), k.clone(), v.clone(), masks);
    let (want, _) = naive(
        (&inputs.0, &inputs.1, &inputs.2),
        &params.0,
        &params.1,
        &params.2,
        &params.3,
        |b, h, l, s| (b, h, l, s) == (0, 1, 1, 1),
        |_, _, _, _| 0.0,
    );
    assert_within(
        "mha output, a per-head mask alone",
        &out.to_vec(),
        &want,
        tol::<T>(),
    );

    // Traced: the same values.
    let masks = MhaMasks::new()
        .key_padding_mask(&padding)
        .attn_mask(&blocked_pairs)
        .causal();
    let (traced, _) = attn.attend(
        Traced::constant(q),
        Traced::constant(k),
        Traced::constant(v),
        masks,
    );
    let (want, _) = naive(
        (&inputs.0, &inputs.1, &inputs.2),
        &params.0,
        &params.1,
        &params.2,
        &params.3,
        blocked,
        |_, _, _, _| 0.0,
    );
    assert_within(
        "mha output, traced",
        &traced.value().to_vec(),
        &want,
        tol::<T>(),
    );
}

fn masks_against_the_loop_f32<D: AutogradDevice>() {
    masks_against_the_loop::<f32, D>();
}
fn masks_against_the_loop_f64<D: AutogradDevice>() {
    masks_against_the_loop::<f64, D>();
}
fn masks_against_the_loop_f16<D: AutogradDevice>() {
    masks_against_the_loop::<f16, D>();
}
fn masks_against_the_loop_bf16<D: AutogradDevice>() {
    masks_against_the_loop::<bf16, D>();
}

device_tests! {
    masks_f32 => masks_against_the_loop_f32;
    masks_f64 => masks_against_the_loop_f64;
    masks_f16 => masks_against_the_loop_f16;
    masks_bf16 => masks_against_the_loop_bf16;
}

/// A query whose every key is padding gets zero weights and the out-projection's bias (PyTorch's `_safe_softmax`
/// path gives the same; its weights-returning path gives NaN), with finite gradients for every input.
#[test]
fn a_query_with_no_key_gets_the_output_bias() {
    let attn = layer::<f64, Cpu>();
    let x: Tensor<f64, Rank3<N, S, E>, Cpu> = random(9);
    let padding = Tensor::<u8, Rank2<N, S>, Cpu>::from_array([[0, 0, 0, 0], [1, 1, 1, 1]]);
    let (xv, _) = (Var::new(x), ());
    let masks = MhaMasks::new().key_padding_mask(&padding).need_weights();
    let (out, weights) = attn.attend(xv.trace(), xv.trace(), xv.trace(), masks);
    let bias = attn.out_proj.bias.value().to_vec();
    let out_rows = out.value().to_vec();
    for row in out_rows[S * E..].chunks(E) {
        assert_eq!(row, bias.as_slice(), "sample 1: the bias alone");
    }
    let weights = weights.unwrap();
    assert!(weights.value().to_vec()[HEADS * S * S..]
        .iter()
        .all(|&w| w == 0.0));
    let grads = (out.sum_all() + weights.sum_all()).backward();
    assert!(grads.get(&xv).to_vec().iter().all(|g| g.is_finite()));
    assert!(grads
        .get(&attn.in_proj_weight)
        .to_vec()
        .iter()
        .all(|g| g.is_finite()));
}

/// Runtime sequence lengths (queries and keys of `usize` length) give what the static ones give; a mask of the
/// wrong length panics naming both.
#[test]
fn runtime_lengths_and_bad_masks() {
    let attn = layer::<f64, Cpu>();
    let q: Tensor<f64, Rank3<N, L, E>, Cpu> = random(10);
    let kv: Tensor<f64, Rank3<N, S, E>, Cpu> = random(11);
    let (want, _) = attn.attend(q.clone(), kv.clone(), kv.clone(), MhaMasks::new().causal());
    let q_rt = q.reshape_with_shape((Const::<N>, L, Const::<E>));
    let kv_rt = kv.reshape_with_shape((Const::<N>, S, Const::<E>));
    let (got, _) = attn.attend(
        q_rt.clone(),
        kv_rt.clone(),
        kv_rt.clone(),
        MhaMasks::new().causal(),
    );
    assert_eq!(got.to_vec(), want.to_vec());
    // Empty sequences: no queries give an empty output; no keys give the bias for every query.
    let none = Tensor::<f64, (Const<N>, usize, Const<E>), Cpu>::zeros_with_shape((Const, 0, Const));
    let (empty, _) = attn.attend(none.clone(), kv_rt.clone(), kv_rt.clone(), MhaMasks::new());
    assert_eq!(empty.dims().to_vec(), [N, 0, E]);
    let (no_keys, _) = attn.attend(q_rt.clone(), none.clone(), none, MhaMasks::new());
    let bias = attn.out_proj.bias.value().to_vec();
    assert!(no_keys.to_vec().chunks(E).all(|row| row == bias.as_slice()));
    // An attention mask with other rows than the queries.
    let short = Tensor::<u8, (usize, Const<S>), Cpu>::zeros_with_shape((L - 1, Const));
    let err = attn
        .try_attend(
            q.clone(),
            kv.clone(),
            kv.clone(),
            MhaMasks::new().attn_mask(&short),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention attn_mask: axis 0 has size 2, expected 3"
    );
    let message = panic_message(|| {
        attn.attend(
            q.clone(),
            kv.clone(),
            kv.clone(),
            MhaMasks::new().attn_mask(&short),
        )
    });
    assert_eq!(
        message,
        err.to_string(),
        "the plain form panics with the same message"
    );
    // A key padding mask of another batch than the keys' (a runtime batch).
    let q_b = q.reshape_with_shape((N, Const::<L>, Const::<E>));
    let kv_b = kv.reshape_with_shape((N, Const::<S>, Const::<E>));
    let padding = Tensor::<u8, (usize, Const<S>), Cpu>::zeros_with_shape((N + 1, Const));
    let masks = || MhaMasks::new().key_padding_mask(&padding);
    let err = attn
        .try_attend(q_b.clone(), kv_b.clone(), kv_b.clone(), masks())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention key_padding_mask: axis 0 has size 3, expected 2"
    );
    let message = panic_message(|| attn.attend(q_b.clone(), kv_b.clone(), kv_b.clone(), masks()));
    assert_eq!(message, err.to_string());
    // Keys of another batch than the queries', values of another length than the keys'.
    let other =
        Tensor::<f64, (usize, Const<S>, Const<E>), Cpu>::zeros_with_shape((N + 1, Const, Const));
    let err = attn
        .try_attend(q_b.clone(), other.clone(), other, MhaMasks::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention key: axis 0 has size 3, expected 2"
    );
    let short =
        Tensor::<f64, (Const<N>, usize, Const<E>), Cpu>::zeros_with_shape((Const, S - 1, Const));
    let err = attn
        .try_attend(q_rt.clone(), kv_rt.clone(), short, MhaMasks::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention value: axis 1 has size 3, expected 4"
    );
    // A per-head mask with the batch's rows rather than batch x heads.
    let rows = Tensor::<u8, (usize, usize, Const<S>), Cpu>::zeros_with_shape((N, L, Const));
    let masks = || MhaMasks::new().attn_mask_per_head(&rows);
    let err = attn
        .try_attend(q.clone(), kv.clone(), kv.clone(), masks())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention attn_mask: axis 0 has size 2, expected 4"
    );
    let message = panic_message(|| attn.attend(q.clone(), kv.clone(), kv.clone(), masks()));
    assert_eq!(message, err.to_string());
}

/// The packed parameters are stored with PyTorch's shapes and names and load back; without biases there are
/// none, in the attention or the transformer layer's linears and norms.
#[cfg(feature = "safetensors")]
#[test]
fn packed_parameters_in_files() {
    let attn = layer::<f32, Cpu>();
    let file = TensorFile::from_bytes(to_bytes(&attn).unwrap()).unwrap();
    assert_eq!(
        file.names(),
        [
            "in_proj_bias",
            "in_proj_weight",
            "out_proj.bias",
            "out_proj.weight"
        ]
    );
    let stored: Tensor<f32, Rank2<{ 3 * E }, E>, Cpu> = file.tensor("in_proj_weight").unwrap();
    assert_eq!(stored.to_vec(), attn.in_proj_weight.value().to_vec());
    let _: Tensor<f32, Rank1<{ 3 * E }>, Cpu> = file.tensor("in_proj_bias").unwrap();
    let fresh = MultiheadAttention::<f32, E, HEADS, HD, Cpu>::zeros();
    from_bytes(&fresh, &to_bytes(&attn).unwrap()).unwrap();
    assert_eq!(
        fresh.in_proj_weight.value().to_vec(),
        attn.in_proj_weight.value().to_vec()
    );
    assert_eq!(
        fresh.in_proj_bias.value().to_vec(),
        attn.in_proj_bias.value().to_vec()
    );

    let plain = TransformerEncoderLayer::<f32, E, HEADS, HD, 8, Cpu, NoBias>::new(
        0,
        TransformerConfig::default(),
    );
    let file = TensorFile::from_bytes(to_bytes(&plain).unwrap()).unwrap();
    assert_eq!(
        file.names(),
        [
            "linear1.weight",
            "linear2.weight",
            "norm1.weight",
            "norm2.weight",
            "self_attn.in_proj_weight",
            "self_attn.out_proj.weight"
        ]
    );
    let x: Tensor<f32, Rank3<N, L, E>, Cpu> = random(12);
    assert_eq!(plain.forward(x).dims().to_vec(), [N, L, E]);
}

/// Dropout acts in training mode on traced values only; `eval()` turns every dropout of a stack off; one layer
/// and a stack of them share parameters as Rust values do (a model holding one layer twice steps it once).
#[test]
fn transformer_dropout_follows_the_mode() {
    type Layer = TransformerEncoderLayer<f32, E, HEADS, HD, 8, Cpu>;
    let config = TransformerConfig {
        dropout: 0.5,
        ..TransformerConfig::default()
    };
    let encoder: TransformerEncoder<Layer, 2> =
        TransformerEncoder::new(|i| Layer::new(i as u64, config));
    let x: Tensor<f32, Rank3<N, L, E>, Cpu> = random(13);
    let plain = encoder.forward(x.clone()).to_vec();
    let trained = encoder
        .forward(Traced::constant(x.clone()))
        .into_value()
        .to_vec();
    assert_ne!(plain, trained, "training mode drops");
    encoder.eval();
    let evaluated = encoder.forward(Traced::constant(x)).into_value().to_vec();
    assert_eq!(plain, evaluated, "evaluation mode does not");
    assert_eq!(encoder.layers[0].config().dropout, 0.5);
}

/// An empty batch runs (empty outputs), and so does a huge batch of empty sequences; through the `try_` forms.
#[test]
fn empty_and_empty_but_huge_batches() {
    let attn = layer::<f32, Cpu>();
    for (batch, len) in [(0, 3), (1 << 40, 0)] {
        let x = Tensor::<f32, (usize, usize, Const<E>), Cpu>::zeros_with_shape((batch, len, Const));
        let (y, _) = attn
            .try_attend(x.clone(), x.clone(), x.clone(), MhaMasks::new().causal())
            .unwrap();
        assert_eq!(y.dims().to_vec(), [batch, len, E]);
    }
    let lstm = typed_tensor::nn::LSTM::<f32, 2, 3, 2, Cpu, typed_tensor::nn::Bidirectional>::new(0);
    let x = Tensor::<f32, (usize, Const<4>, Const<2>), Cpu>::zeros_with_shape((0, Const, Const));
    let lengths = Tensor::<u32, (usize,), Cpu>::zeros_with_shape((0,));
    let (y, (h, c)) = lstm
        .try_run(x, typed_tensor::nn::RnnArgs::new().lengths(&lengths))
        .unwrap();
    assert_eq!(
        (y.dims().to_vec(), h.dims().to_vec()),
        (vec![0, 4, 2, 3], vec![2, 2, 0, 3])
    );
    assert_eq!(c.unwrap().dims().to_vec(), [2, 2, 0, 3]);
    // A runtime sequence of no steps: empty outputs, the initial states. (A huge batch of no steps still needs
    // states of that batch, which cannot be allocated: the forward pass panics there, noted on issue 45.)
    let x = Tensor::<f32, (usize, usize, Const<2>), Cpu>::zeros_with_shape((3, 0, Const));
    let (y, (h, _)) = lstm.try_run(x, typed_tensor::nn::RnnArgs::new()).unwrap();
    assert_eq!(y.dims().to_vec(), [3, 0, 2, 3]);
    assert!(h.to_vec().iter().all(|&v| v == 0.0));

    // The transformer layers and stacks on empty and empty-but-huge batches, with and without a per-head mask.
    let config = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::default()
    };
    let layer = TransformerEncoderLayer::<f32, E, HEADS, HD, 8, Cpu>::new(0, config);
    let encoder: TransformerEncoder<_, 2> = TransformerEncoder::new(|i| {
        TransformerEncoderLayer::<f32, E, HEADS, HD, 8, Cpu>::new(i as u64, config)
    });
    let decoder = TransformerDecoderLayer::<f32, E, HEADS, HD, 8, Cpu>::new(0, config);
    for (batch, len) in [(0, 3), (1 << 40, 0)] {
        let x = Tensor::<f32, (usize, usize, Const<E>), Cpu>::zeros_with_shape((batch, len, Const));
        let y = layer
            .try_forward_masked(x.clone(), MhaMasks::new().causal())
            .unwrap();
        assert_eq!(y.dims().to_vec(), [batch, len, E]);
        let y = encoder
            .try_forward_masked(x.clone(), MhaMasks::new())
            .unwrap();
        assert_eq!(y.dims().to_vec(), [batch, len, E]);
        let y = decoder
            .try_forward_masked(x.clone(), x.clone(), MhaMasks::new(), MhaMasks::new())
            .unwrap();
        assert_eq!(y.dims().to_vec(), [batch, len, E]);
        let rows =
            Tensor::<u8, (usize, usize, usize), Cpu>::zeros_with_shape((batch * HEADS, len, len));
        let masks = MhaMasks::new().attn_mask_per_head(&rows);
        assert!(layer.try_forward_masked(x, masks).is_ok());
    }
    // A huge empty batch with a mask of the batch's rows, not batch x heads: an error naming both sizes.
    let huge = Tensor::<f32, (usize, usize, Const<E>), Cpu>::zeros_with_shape((1 << 56, 0, Const));
    let rows = Tensor::<u8, (usize, usize, usize), Cpu>::zeros_with_shape((1 << 56, 0, 0));
    let err = layer
        .try_forward_masked(huge, MhaMasks::new().attn_mask_per_head(&rows))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "MultiheadAttention attn_mask: axis 0 has size {}, expected {}",
            1u64 << 56,
            1u64 << 57
        )
    );
}

/// The transformer layers' and stacks' `try_` forms: a key padding mask of another batch, an attention mask of
/// another length, and memory of another batch than the target's are named errors; the plain forms panic with
/// the mask's message; good masks give what the plain form gives.
#[test]
fn transformer_try_forms() {
    type Enc = TransformerEncoderLayer<f64, E, HEADS, HD, 8, Cpu>;
    type Dec = TransformerDecoderLayer<f64, E, HEADS, HD, 8, Cpu>;
    let config = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::default()
    };
    let (enc, dec) = (Enc::new(1, config), Dec::new(2, config));
    let encoder: TransformerEncoder<Enc, 2> =
        TransformerEncoder::new(|i| Enc::new(i as u64, config));
    let decoder: TransformerDecoder<Dec, 2> =
        TransformerDecoder::new(|i| Dec::new(i as u64, config));
    let x = random::<f64, Rank3<N, L, E>, Cpu>(1).reshape_with_shape((N, Const::<L>, Const::<E>));
    let memory =
        random::<f64, Rank3<N, S, E>, Cpu>(2).reshape_with_shape((N, Const::<S>, Const::<E>));
    let wrong_batch = Tensor::<u8, (usize, Const<L>), Cpu>::zeros_with_shape((N + 1, Const));
    let padding = Tensor::<u8, (usize, Const<L>), Cpu>::zeros_with_shape((N, Const));
    let bad = || MhaMasks::new().key_padding_mask(&wrong_batch);
    let good = || MhaMasks::new().key_padding_mask(&padding).causal();
    let want = "MultiheadAttention key_padding_mask: axis 0 has size 3, expected 2";

    let err = enc.try_forward_masked(x.clone(), bad()).unwrap_err();
    assert_eq!(err.to_string(), want);
    assert_eq!(panic_message(|| enc.forward_masked(x.clone(), bad())), want);
    let err = encoder.try_forward_masked(x.clone(), bad()).unwrap_err();
    assert_eq!(err.to_string(), want);
    // A per-head mask needs batch x heads rows; the stack knows its layers' heads.
    let rows = Tensor::<u8, (usize, usize, Const<L>), Cpu>::zeros_with_shape((N, L, Const));
    let err = encoder
        .try_forward_masked(x.clone(), MhaMasks::new().attn_mask_per_head(&rows))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention attn_mask: axis 0 has size 2, expected 4"
    );
    let rows = Tensor::<u8, (usize, usize, Const<L>), Cpu>::zeros_with_shape((N * HEADS, L, Const));
    let masks = MhaMasks::new().attn_mask_per_head(&rows);
    assert!(encoder.try_forward_masked(x.clone(), masks).is_ok());
    let ok = encoder.try_forward_masked(x.clone(), good()).unwrap();
    assert_eq!(
        ok.to_vec(),
        encoder.forward_masked(x.clone(), good()).to_vec()
    );

    let err = dec
        .try_forward_masked(x.clone(), memory.clone(), bad(), MhaMasks::new())
        .unwrap_err();
    assert_eq!(err.to_string(), want);
    let short = Tensor::<u8, (usize, Const<S>), Cpu>::zeros_with_shape((L - 1, Const));
    let err = decoder
        .try_forward_masked(
            x.clone(),
            memory.clone(),
            MhaMasks::new(),
            MhaMasks::new().attn_mask(&short),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "MultiheadAttention attn_mask: axis 0 has size 2, expected 3"
    );
    let other =
        random::<f64, Rank3<1, S, E>, Cpu>(3).reshape_with_shape((1, Const::<S>, Const::<E>));
    let err = decoder
        .try_forward_masked(x.clone(), other, MhaMasks::new(), MhaMasks::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "TransformerDecoder memory: axis 0 has size 1, expected 2"
    );
    let ok = decoder
        .try_forward_masked(x.clone(), memory.clone(), good(), MhaMasks::new())
        .unwrap();
    let plain = decoder.forward_masked(x, memory, good(), MhaMasks::new());
    assert_eq!(ok.to_vec(), plain.to_vec());
}
