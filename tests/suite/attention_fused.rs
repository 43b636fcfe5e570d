//! The fused attention path (Cpu, f32, no mask but causal, no dropout; `Sdpa::fused`) against the composed path
//! (`Sdpa::composed`), which attention.rs checks against a naive loop: values and the gradients of the query, key
//! and value, at sizes that are not multiples of the tiles, with grouped-query heads, `L != S` both ways, causal
//! masking from the start and continuing a sequence, a custom scale, a strided query, and NaN kept to its row.

use crate::common::*;
use typed_tensor::autograd::Var;
use typed_tensor::nn::Sdpa;
use typed_tensor::prelude::*;
use typed_tensor::shape::BroadcastTo;

const B: usize = 2;
const H: usize = 4;
const HK: usize = 2;
const E: usize = 16;
const EV: usize = 24;

/// `|a - b| <= tol (1 + |b|)` elementwise.
fn close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: length");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}: element {i}: fused {x}, composed {y}"
        );
    }
}

/// Values and gradients of both paths for queries of length `L` over `S` keys with `options`.
fn both_paths<'a, const L: usize, const S: usize, M>(
    what: &str,
    options: impl Fn() -> Sdpa<'a, f32, M, Cpu>,
) where
    M: BroadcastTo<Rank4<B, H, L, S>>,
{
    let q = Var::new(random::<f32, Rank4<B, H, L, E>, Cpu>(1));
    let k = Var::new(random::<f32, Rank4<B, HK, S, E>, Cpu>(2));
    let v = Var::new(random::<f32, Rank4<B, HK, S, EV>, Cpu>(3));
    let r: Tensor<f32, Rank4<B, H, L, EV>, Cpu> = random(4);
    let run = |composed: bool| {
        let o = if composed {
            options().composed()
        } else {
            options()
        };
        let plain = q
            .value()
            .scaled_dot_product_attention(&k.value(), &v.value(), o);
        let o = if composed {
            options().composed()
        } else {
            options()
        };
        let y = q
            .trace()
            .scaled_dot_product_attention(&k.trace(), &v.trace(), o);
        assert_eq!(
            y.value().to_vec(),
            plain.to_vec(),
            "{what}: traced and plain agree"
        );
        let grads = (y * &Traced::constant(r.clone())).sum_all().backward();
        (
            plain.to_vec(),
            grads.get(&q).to_vec(),
            grads.get(&k).to_vec(),
            grads.get(&v).to_vec(),
        )
    };
    let (fused, composed) = (run(false), run(true));
    close(&format!("{what}: output"), &fused.0, &composed.0, 1e-5);
    close(&format!("{what}: dq"), &fused.1, &composed.1, 1e-4);
    close(&format!("{what}: dk"), &fused.2, &composed.2, 1e-4);
    close(&format!("{what}: dv"), &fused.3, &composed.3, 1e-4);
}

/// Masks take the fused path too: an additive `(L, S)` mask with `-inf` entries and a fully masked query, a
/// `(B, 1, 1, S)` padding mask, a per-head `(B, H, L, S)` mask, a boolean mask with a fully masked query, with
/// and without causal masking.
#[test]
fn fused_matches_composed_with_additive_masks() {
    const L: usize = 70;
    const S: usize = 130;
    let mut pairs: Vec<f32> = random::<f32, Rank2<L, S>, Cpu>(30).to_vec();
    for (i, x) in pairs.iter_mut().enumerate() {
        if i % 7 == 3 || i / S == 5 {
            *x = f32::NEG_INFINITY; // scattered keys, and every key of query 5
        }
    }
    let pairs = Tensor::<f32, Rank2<L, S>, Cpu>::from_vec(pairs).unwrap();
    let mut padding = vec![0f32; B * S];
    padding[S + 100..].fill(f32::NEG_INFINITY); // the second sample's keys from 100 on
    let padding = Tensor::<f32, Rank4<B, 1, 1, S>, Cpu>::from_vec(padding).unwrap();
    let heads: Tensor<f32, Rank4<B, H, L, S>, Cpu> = random(31);
    both_paths::<L, S, _>("(L, S) mask", || Sdpa::new().additive_mask(&pairs));
    both_paths::<L, S, _>("(L, S) mask, causal", || {
        Sdpa::new().additive_mask(&pairs).causal()
    });
    both_paths::<L, S, _>("padding mask, causal at 50", || {
        Sdpa::new().additive_mask(&padding).causal_at(50)
    });
    both_paths::<L, S, _>("per-head mask", || Sdpa::new().additive_mask(&heads));
    // A boolean mask means the additive one: zero where a key takes part, -inf elsewhere.
    let keep: Vec<u8> = (0..L * S)
        .map(|i| u8::from(i % 5 != 2 && i / S != 9))
        .collect();
    let keep = Tensor::<u8, Rank2<L, S>, Cpu>::from_vec(keep).unwrap();
    both_paths::<L, S, _>("boolean mask, causal", || {
        Sdpa::new().keep_mask(&keep).causal()
    });
    // The fully masked query's output row is zeros on both paths.
    let q: Tensor<f32, Rank4<B, H, L, E>, Cpu> = random(1);
    let kv: Tensor<f32, Rank4<B, HK, S, E>, Cpu> = random(2);
    let v: Tensor<f32, Rank4<B, HK, S, EV>, Cpu> = random(3);
    let y = q.scaled_dot_product_attention(&kv, &v, Sdpa::new().additive_mask(&pairs));
    assert!(y.i((1, 2, 5)).to_vec().iter().all(|&x| x == 0.0));
    // The boolean mask runs as its additive form, to the bit (both fused: the composed path rounds otherwise).
    let minus: Vec<f32> = keep
        .to_vec()
        .into_iter()
        .map(|k| if k == 0 { f32::NEG_INFINITY } else { 0.0 })
        .collect();
    let as_added = Tensor::<f32, Rank2<L, S>, Cpu>::from_vec(minus).unwrap();
    let by_keep = q.scaled_dot_product_attention(&kv, &v, Sdpa::new().keep_mask(&keep));
    let by_add = q.scaled_dot_product_attention(&kv, &v, Sdpa::new().additive_mask(&as_added));
    let composed = Sdpa::new().keep_mask(&keep).composed();
    assert_eq!(by_keep.to_vec(), by_add.to_vec());
    assert_ne!(
        by_keep.to_vec(),
        q.scaled_dot_product_attention(&kv, &v, composed).to_vec()
    );
    assert!(
        by_keep.i((0, 1, 9)).to_vec().iter().all(|&x| x == 0.0),
        "query 9 sees no key"
    );
}

#[test]
fn fused_matches_composed() {
    both_paths::<70, 130, _>("L < S", Sdpa::new);
    both_paths::<70, 130, _>("L < S, causal", || Sdpa::new().causal());
    both_paths::<150, 65, _>("L > S, causal", || Sdpa::new().causal());
    both_paths::<3, 130, _>("continuing, causal at 100", || Sdpa::new().causal_at(100));
    both_paths::<64, 64, _>("one tile, scale 0.3", || Sdpa::new().scale(0.3).causal());
    both_paths::<1, 1, _>("one query, one key", Sdpa::new);
}

/// A strided query, and only the query traced: the keys' and values' gradients are not asked for.
#[test]
fn strided_query_and_constant_keys() {
    let qt: Tensor<f32, Rank4<B, H, E, 33>, Cpu> = random(5);
    let q = qt.transpose::<Axis<2>, Axis<3>>(); // (B, H, 33, E), strided
    let (k, v): (
        Tensor<f32, Rank4<B, HK, 40, E>, Cpu>,
        Tensor<f32, Rank4<B, HK, 40, EV>, Cpu>,
    ) = (random(6), random(7));
    let fused = q.scaled_dot_product_attention(&k, &v, Sdpa::new().causal());
    let composed = q.scaled_dot_product_attention(&k, &v, Sdpa::new().causal().composed());
    close("strided", &fused.to_vec(), &composed.to_vec(), 1e-5);
    let qv = Var::new(q.contiguous());
    let gradient = |o: Sdpa<'static, f32, (), Cpu>| {
        let y = qv.trace().scaled_dot_product_attention(
            &Traced::constant(k.clone()),
            &Traced::constant(v.clone()),
            o,
        );
        y.sum_all().backward().get(&qv).to_vec()
    };
    close(
        "dq",
        &gradient(Sdpa::new()),
        &gradient(Sdpa::new().composed()),
        1e-4,
    );
}

/// A NaN in one query stays in that query's output row; a NaN in one key reaches exactly the queries that see it.
#[test]
fn fused_nan_stays_local() {
    let mut qs = random::<f32, Rank4<1, 1, 8, E>, Cpu>(8).to_vec();
    qs[3 * E] = f32::NAN; // query 3
    let q = Tensor::<f32, Rank4<1, 1, 8, E>, Cpu>::from_vec(qs).unwrap();
    let mut ks = random::<f32, Rank4<1, 1, 8, E>, Cpu>(9).to_vec();
    ks[5 * E] = f32::NAN; // key 5
    let k = Tensor::<f32, Rank4<1, 1, 8, E>, Cpu>::from_vec(ks).unwrap();
    let v: Tensor<f32, Rank4<1, 1, 8, EV>, Cpu> = random(10);
    let y = q
        .scaled_dot_product_attention(&k, &v, Sdpa::new().causal())
        .to_vec();
    for (row, values) in y.chunks(EV).enumerate() {
        let nan = row == 3 || row >= 5; // query 3, and the causal queries that see key 5
        assert_eq!(values.iter().all(|x| x.is_nan()), nan, "row {row}");
        assert!(nan || values.iter().all(|x| x.is_finite()), "row {row}");
    }
}

/// A dropout layer that drops nothing here (plain tensors are inference; a traced value in evaluation mode) keeps
/// the fused path: the values are those without dropout, to the bit; in training a traced call drops.
#[test]
fn dropout_that_does_not_drop_keeps_the_fused_path() {
    use typed_tensor::nn::{Dropout, Parameters};
    let q: Tensor<f32, Rank4<1, 2, 8, E>, Cpu> = random(11);
    let drop = Dropout::new(0.5, 3);
    let plain = q.scaled_dot_product_attention(&q, &q, Sdpa::new());
    let with = q.scaled_dot_product_attention(&q, &q, Sdpa::new().dropout(&drop));
    assert_eq!(with.to_vec(), plain.to_vec(), "plain tensors");
    let composed = q.scaled_dot_product_attention(&q, &q, Sdpa::new().composed());
    assert_ne!(
        composed.to_vec(),
        plain.to_vec(),
        "the paths round differently"
    );
    let traced = Traced::constant(q.clone());
    let trained = traced.scaled_dot_product_attention(&traced, &traced, Sdpa::new().dropout(&drop));
    assert_ne!(trained.value().to_vec(), plain.to_vec(), "training drops");
    drop.eval();
    let evaluated =
        traced.scaled_dot_product_attention(&traced, &traced, Sdpa::new().dropout(&drop));
    assert_eq!(
        evaluated.value().to_vec(),
        plain.to_vec(),
        "evaluation mode"
    );
}
