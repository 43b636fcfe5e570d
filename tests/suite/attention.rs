//! Scaled dot-product attention against a naive loop written from PyTorch's definition (`softmax(q k^T * scale +
//! mask) v`, a fully masked row giving zeros as PyTorch's math path does): every mask kind, causal with `L != S`,
//! grouped-query heads, a strided query, runtime lengths, empty lengths, every float dtype; gradients of the
//! query, key and value by finite differences.

use crate::common::*;
use typed_tensor::autograd::{check_gradient, Var};
use typed_tensor::nn::Sdpa;
use typed_tensor::prelude::*;

const B: usize = 2;
const H: usize = 4;
const HK: usize = 2;
const L: usize = 3;
const S: usize = 5;
const E: usize = 4;
const EV: usize = 3;

/// The reference: `keep(b, h, l, s)` says whether a query may look at a key, `add` what is added to its score.
fn naive(
    (q, k, v): (&[f64], &[f64], &[f64]),
    (h_kv, l_n, s_n): (usize, usize, usize),
    scale: f64,
    keep: impl Fn(usize, usize, usize, usize) -> bool,
    add: impl Fn(usize, usize, usize, usize) -> f64,
) -> Vec<f64> {
    let group = H / h_kv;
    let mut out = vec![0.0; B * H * l_n * EV];
    for b in 0..B {
        for h in 0..H {
            let hk = h / group;
            for l in 0..l_n {
                let scores: Vec<f64> = (0..s_n)
                    .map(|s| {
                        if !keep(b, h, l, s) {
                            return f64::NEG_INFINITY;
                        }
                        let dot: f64 = (0..E)
                            .map(|e| {
                                q[((b * H + h) * l_n + l) * E + e]
                                    * k[((b * h_kv + hk) * s_n + s) * E + e]
                            })
                            .sum();
                        dot * scale + add(b, h, l, s)
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                if max == f64::NEG_INFINITY {
                    continue; // every key masked: zeros
                }
                let weights: Vec<f64> = scores.iter().map(|x| (x - max).exp()).collect();
                let total: f64 = weights.iter().sum();
                for ev in 0..EV {
                    out[((b * H + h) * l_n + l) * EV + ev] = (0..s_n)
                        .map(|s| weights[s] / total * v[((b * h_kv + hk) * s_n + s) * EV + ev])
                        .sum::<f64>();
                }
            }
        }
    }
    out
}

fn f64s<T: WithDType>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(|x| x.to_f64()).collect()
}

fn tol<T: WithDType>() -> f64 {
    match T::DTYPE {
        DType::F16 => 1e-2,
        DType::BF16 => 5e-2,
        DType::F32 => 1e-5,
        _ => 1e-12,
    }
}

/// Every mask kind and causal, grouped-query heads, a strided query, against the naive loop.
fn attention_values<T: FloatDType, D: Device>() {
    let q: Tensor<T, Rank4<B, H, E, L>, D> = random(40);
    let q = q.transpose::<FromEnd<2>, Last>(); // (B, H, L, E), strided
    let k: Tensor<T, Rank4<B, HK, S, E>, D> = random(41);
    let v: Tensor<T, Rank4<B, HK, S, EV>, D> = random(42);
    let (qs, ks, vs) = (f64s(q.to_vec()), f64s(k.to_vec()), f64s(v.to_vec()));
    let data = (&qs[..], &ks[..], &vs[..]);
    let dims = (HK, L, S);
    let scale = 1.0 / (E as f64).sqrt();
    let check = |what: &str, got: Tensor<T, Rank4<B, H, L, EV>, D>, want: Vec<f64>| {
        assert_within(
            &format!("{what} [{}]", T::DTYPE),
            &got.to_vec(),
            &want,
            tol::<T>(),
        );
    };
    let all = |_, _, _, _| true;
    let none = |_, _, _, _| 0.0;
    check(
        "no mask",
        q.scaled_dot_product_attention(&k, &v, Sdpa::new()),
        naive(data, dims, scale, all, none),
    );
    check(
        "scale",
        q.scaled_dot_product_attention(&k, &v, Sdpa::new().scale(0.3)),
        naive(data, dims, 0.3, all, none),
    );
    // Causal with L = 3 < S = 5: query l sees keys 0..=l (the top-left triangle, as PyTorch's is_causal).
    check(
        "causal",
        q.scaled_dot_product_attention(&k, &v, Sdpa::new().causal()),
        naive(data, dims, scale, |_, _, l, s| s <= l, none),
    );
    // A key padding mask (B, 1, 1, S), stretched; sample 1's keys 3 and 4 are padding. With causal on top.
    let pad: Vec<u8> = (0..B * S)
        .map(|i| u8::from(!(i / S == 1 && i % S >= 3)))
        .collect();
    let pad = Tensor::<u8, Rank4<B, 1, 1, S>, D>::from_vec(pad).unwrap();
    let keep_pad = |b, _, _, s| !(b == 1 && s >= 3);
    check(
        "key padding mask",
        q.scaled_dot_product_attention(&k, &v, Sdpa::new().keep_mask(&pad)),
        naive(data, dims, scale, keep_pad, none),
    );
    check(
        "key padding and causal",
        q.scaled_dot_product_attention(&k, &v, Sdpa::new().keep_mask(&pad).causal()),
        naive(
            data,
            dims,
            scale,
            |b, h, l, s| keep_pad(b, h, l, s) && s <= l,
            none,
        ),
    );
    // An additive (L, S) mask with one -inf, broadcast over batch and heads.
    let bias: Vec<f64> = (0..L * S)
        .map(|i| {
            if i == 7 {
                f64::NEG_INFINITY
            } else {
                (i % 4) as f64 * 0.25
            }
        })
        .collect();
    let add = Tensor::<T, Rank2<L, S>, D>::from_vec(bias.iter().map(|&x| T::from_f64(x)).collect())
        .unwrap();
    check(
        "additive mask",
        q.scaled_dot_product_attention(&k, &v, Sdpa::new().additive_mask(&add)),
        naive(
            data,
            dims,
            scale,
            |_, _, l, s| l * S + s != 7,
            |_, _, l, s| if l * S + s == 7 { 0.0 } else { bias[l * S + s] },
        ),
    );
    // A fully masked query row (sample 0, query 1): zeros there, the rest unchanged.
    let keep: Vec<u8> = (0..B * L * S).map(|i| u8::from(i / S != 1)).collect();
    let keep = Tensor::<u8, Rank4<B, 1, L, S>, D>::from_vec(keep).unwrap();
    let got = q.scaled_dot_product_attention(&k, &v, Sdpa::new().keep_mask(&keep));
    assert!(got.to_vec().iter().all(|x| x.to_f64().is_finite()));
    check(
        "a fully masked row",
        got,
        naive(data, dims, scale, |b, _, l, _| !(b == 0 && l == 1), none),
    );
}

fn attention_values_f32<D: Device>() {
    attention_values::<f32, D>()
}
fn attention_values_f64<D: Device>() {
    attention_values::<f64, D>()
}
fn attention_values_f16<D: Device>() {
    attention_values::<f16, D>()
}
fn attention_values_bf16<D: Device>() {
    attention_values::<bf16, D>()
}

device_tests! {
    attention_values_f32 => attention_values_f32;
    attention_values_f64 => attention_values_f64;
    attention_values_f16 => attention_values_f16;
    attention_values_bf16 => attention_values_bf16;
}

/// Runtime lengths give what static ones give; an empty query length gives an empty output, no keys gives zeros.
#[test]
fn runtime_and_empty_lengths() {
    let q: Tensor<f32, Rank4<1, 2, 3, 4>, Cpu> = random(43);
    let kv: Tensor<f32, Rank4<1, 2, 5, 4>, Cpu> = random(44);
    let want = q
        .scaled_dot_product_attention(&kv, &kv, Sdpa::new().causal())
        .to_vec();
    let qr = q.reshape_with_shape((Const::<1>, Const::<2>, 3usize, Const::<4>));
    let kr = kv.reshape_with_shape((Const::<1>, Const::<2>, 5usize, Const::<4>));
    let got = qr.scaled_dot_product_attention(&kr, &kr, Sdpa::new().causal());
    assert_eq!(got.to_vec(), want);
    let no_queries = Tensor::<f32, (Const<1>, Const<2>, usize, Const<4>), Cpu>::zeros_with_shape((
        Const, Const, 0, Const,
    ));
    let y = no_queries.scaled_dot_product_attention(&kr, &kr, Sdpa::new());
    assert_eq!(y.dims().to_vec(), [1, 2, 0, 4]);
    let no_keys = Tensor::<f32, (Const<1>, Const<2>, usize, Const<4>), Cpu>::zeros_with_shape((
        Const, Const, 0, Const,
    ));
    let y = qr.scaled_dot_product_attention(&no_keys, &no_keys, Sdpa::new());
    assert_eq!(y.to_vec(), vec![0.0; 24]);
}

/// Gradients of the query, key and value through grouped heads, a key padding mask and causal masking (with a
/// fully masked row, whose gradient is zero), by central finite differences.
#[test]
fn attention_gradients_match_finite_differences() {
    let q = Var::new(random::<f64, Rank4<B, H, L, E>, Cpu>(45));
    let k = Var::new(random::<f64, Rank4<B, HK, S, E>, Cpu>(46));
    let v = Var::new(random::<f64, Rank4<B, HK, S, EV>, Cpu>(47));
    let probe: Tensor<f64, Rank4<B, H, L, EV>, Cpu> = random(48);
    let keep: Vec<u8> = (0..B * L * S)
        .map(|i| u8::from(i / S != 1 && i % S != 4))
        .collect();
    let keep = Tensor::<u8, Rank4<B, 1, L, S>, Cpu>::from_vec(keep).unwrap();
    let loss = || {
        let y = q.trace().scaled_dot_product_attention(
            &k.trace(),
            &v.trace(),
            Sdpa::new().keep_mask(&keep).causal(),
        );
        (y * &probe).sum_all()
    };
    for (what, check) in [
        ("query", check_gradient(&q, 1e-5, loss)),
        ("key", check_gradient(&k, 1e-5, loss)),
        ("value", check_gradient(&v, 1e-5, loss)),
    ] {
        assert!(check.error < 1e-7, "{what}: {check:?}");
    }
    let g = loss().backward().get(&q);
    assert!(g.to_vec().iter().all(|x| x.is_finite()));
}

/// Incremental decoding with a cache gives what attention over the whole sequence gives: a prompt of 3 under
/// causal masking, then one position at a time and a step of two (`causal_at` the cached length); the cache
/// refuses positions past its maximum, unchanged.
#[test]
fn kv_cache_decoding_matches_the_whole_sequence() {
    use typed_tensor::nn::KvCache;
    let q: Tensor<f64, Rank4<1, 4, 7, E>, Cpu> = random(60);
    let k: Tensor<f64, Rank4<1, 2, 7, E>, Cpu> = random(61);
    let v: Tensor<f64, Rank4<1, 2, 7, EV>, Cpu> = random(62);
    let whole = q
        .scaled_dot_product_attention(&k, &v, Sdpa::new().causal())
        .to_vec();
    let rows = |t: Vec<f64>, width: usize, len: usize, from: usize, n: usize| -> Vec<f64> {
        // Positions from..from + n of each head of a (1, heads, len, width) buffer.
        t.chunks(len * width)
            .flat_map(|head| head[from * width..(from + n) * width].to_vec())
            .collect()
    };
    let mut cache = KvCache::<f64, Const<1>, 2, 7, E, EV, Cpu>::new();
    let mut at = 0;
    for step in [3usize, 1, 2, 1] {
        let (qs, ks, vs) = (
            q.narrow_with(at, step),
            k.narrow_with(at, step),
            v.narrow_with(at, step),
        );
        let (ck, cv) = cache.append(&ks, &vs);
        assert_eq!(ck.dims().to_vec(), [1, 2, at + step, E]);
        let y = qs.scaled_dot_product_attention(ck, cv, Sdpa::new().causal_at(at));
        assert_within(
            &format!("step at {at}"),
            &y.to_vec(),
            &rows(whole.clone(), EV, 7, at, step),
            1e-12,
        );
        at += step;
    }
    assert_eq!(cache.len(), 7);
    let one = k.narrow_with(0, 1);
    let err = cache.try_append(&one, &v.narrow_with(0, 1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kv_cache: 1 new positions after 7 exceed its maximum length 7"
    );
    assert_eq!(cache.len(), 7);
    assert_eq!(
        panic_message(|| cache.append(&one, &v.narrow_with(0, 1))),
        err.to_string()
    );
    let short = v.narrow_with(0, 2);
    cache.clear();
    assert!(cache.is_empty());
    assert!(cache.try_append(&one, &short).is_err()); // keys and values of different lengths
}

/// Positions `from..from + n` along axis 2, as a runtime length.
trait NarrowWith<T: FloatDType, const HH: usize, const W: usize> {
    fn narrow_with(
        &self,
        from: usize,
        n: usize,
    ) -> Tensor<T, (Const<1>, Const<HH>, usize, Const<W>), Cpu>;
}
impl<T: FloatDType, const HH: usize, const LL: usize, const W: usize> NarrowWith<T, HH, W>
    for Tensor<T, Rank4<1, HH, LL, W>, Cpu>
{
    fn narrow_with(
        &self,
        from: usize,
        n: usize,
    ) -> Tensor<T, (Const<1>, Const<HH>, usize, Const<W>), Cpu> {
        let all: Vec<T> = self.to_vec();
        let rows: Vec<T> = all
            .chunks(LL * W)
            .flat_map(|head| head[from * W..(from + n) * W].to_vec())
            .collect();
        Tensor::from_vec_with_shape((Const, Const, n, Const), rows).unwrap()
    }
}

/// Attention dropout drops weights after the softmax and scales the kept ones, on traced values in training
/// only: with identity values the output is the weights, each 0 or twice its undropped value at p = 0.5.
#[test]
fn attention_dropout_drops_weights_while_training() {
    use typed_tensor::autograd::Traced;
    use typed_tensor::nn::{Dropout, Parameters};
    let q: Tensor<f64, Rank4<1, 1, 6, 4>, Cpu> = random(70);
    let k: Tensor<f64, Rank4<1, 1, 4, 4>, Cpu> = random(71);
    let eye = Tensor::<f64, Rank2<4, 4>, Cpu>::eye().reshape::<Rank4<1, 1, 4, 4>>();
    let weights = q
        .scaled_dot_product_attention(&k, &eye, Sdpa::new())
        .to_vec();
    let drop = Dropout::new(0.5, 3);
    let traced = Traced::constant(q.clone())
        .scaled_dot_product_attention(
            &Traced::constant(k.clone()),
            &Traced::constant(eye.clone()),
            Sdpa::new().dropout(&drop),
        )
        .into_value()
        .to_vec();
    let mut dropped = 0;
    for (got, want) in traced.iter().zip(&weights) {
        if *got == 0.0 {
            dropped += 1;
        } else {
            assert!((got - 2.0 * want).abs() < 1e-12, "{got} vs 2 x {want}");
        }
    }
    assert!(
        dropped > 0 && dropped < weights.len(),
        "{dropped} of {} dropped",
        weights.len()
    );
    // Plain tensors and evaluation mode: no dropout.
    let plain = q
        .scaled_dot_product_attention(&k, &eye, Sdpa::new().dropout(&drop))
        .to_vec();
    assert_eq!(plain, weights);
    drop.eval();
    let evaluated = Traced::constant(q)
        .scaled_dot_product_attention(
            &Traced::constant(k),
            &Traced::constant(eye),
            Sdpa::new().dropout(&drop),
        )
        .into_value()
        .to_vec();
    assert_eq!(evaluated, weights);
}
