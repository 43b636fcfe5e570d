//! The sequence models' layers, each against a baseline measured in the same run: `cargo bench -p benches --bench
//! sequence` (threads: rayon's default; `RAYON_NUM_THREADS=1` for one).
//!
//! - An LSTM layer's forward and backward pass (B = 32, T = 128, input = hidden = 256, f32) against the library's
//!   matmul at the per-step product's size, `(32, 256) x (256, 1024)`: the layer's GFLOP/s (its 12.9 GFLOP of
//!   products over its time) as a fraction of the matmul's (issue 45's target: at least 0.6).
//! - Scaled dot-product attention's forward and backward pass (B = 8, H = 8, L = S = 512, E = 64, f32, causal
//!   and unmasked):
//!   the fused path against the composed one (issue 45's target: at most 0.7x its time), and both against the
//!   two batched products the composed forward is made of (`q k^T`, then the weights times `v`); and both paths
//!   with an additive key padding mask `(B, 1, 1, S)`.
//! - A transformer encoder layer's forward and backward pass (d_model 256, 8 heads, feed-forward 1024, sequence
//!   128, batch 16): tokens per second, against its own matmuls (the four projections and the two linears).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use typed_tensor::autograd::Var;
use typed_tensor::nn::{Module, Sdpa, TransformerConfig, TransformerEncoderLayer, LSTM};
use typed_tensor::prelude::*;

fn lstm(c: &mut Criterion) {
    let model = LSTM::<f32, 256, 256, 1, Cpu>::new(0);
    let x = Var::new(Tensor::<f32, Rank3<32, 128, 256>, Cpu>::randn(1));
    let h = Tensor::<f32, Rank2<32, 256>, Cpu>::randn(2);
    let w = Tensor::<f32, Rank2<256, 1024>, Cpu>::randn(3);
    let mut g = c.benchmark_group("lstm_b32_t128_256_f32");
    g.sample_size(10);
    g.bench_function("matmul_32x256x1024_baseline", |b| {
        b.iter(|| black_box(h.matmul(&w)))
    });
    g.bench_function("layer_forward_backward", |b| {
        b.iter(|| {
            let (y, _) = model.forward(x.trace());
            black_box(y.sum_all().backward())
        })
    });
    g.finish();
}

fn attention(c: &mut Criterion) {
    let q = Var::new(Tensor::<f32, Rank4<8, 8, 512, 64>, Cpu>::randn(4));
    let k = Var::new(Tensor::<f32, Rank4<8, 8, 512, 64>, Cpu>::randn(5));
    let v = Var::new(Tensor::<f32, Rank4<8, 8, 512, 64>, Cpu>::randn(6));
    let (qv, kv, vv) = (q.value(), k.value(), v.value());
    let mut g = c.benchmark_group("attention_b8_h8_512_e64_f32");
    g.sample_size(10);
    g.bench_function("two_products_baseline", |b| {
        b.iter(|| {
            let scores = qv.matmul(&kv.transpose::<Axis<2>, Axis<3>>());
            black_box(scores.matmul(&vv))
        })
    });
    for (name, composed, causal) in [
        ("composed", true, true),
        ("fused", false, true),
        ("composed_unmasked", true, false),
        ("fused_unmasked", false, false),
    ] {
        let options = move || {
            let o = Sdpa::new();
            let o = if causal { o.causal() } else { o };
            if composed {
                o.composed()
            } else {
                o.fused()
            }
        };
        g.bench_function(format!("{name}_forward"), |b| {
            b.iter(|| black_box(qv.scaled_dot_product_attention(&kv, &vv, options())))
        });
        g.bench_function(format!("{name}_forward_backward"), |b| {
            b.iter(|| {
                let y = q
                    .trace()
                    .scaled_dot_product_attention(&k.trace(), &v.trace(), options());
                black_box(y.sum_all().backward())
            })
        });
    }
    // A padding mask over the keys (the second half of every other sample's keys), additive: the fused path takes
    // it too.
    let padding: Vec<f32> = (0..8 * 512)
        .map(|i| {
            let (sample, key) = (i / 512, i % 512);
            if sample % 2 == 1 && key >= 256 {
                f32::NEG_INFINITY
            } else {
                0.0
            }
        })
        .collect();
    let padding = Tensor::<f32, Rank4<8, 1, 1, 512>, Cpu>::from_vec(padding).unwrap();
    for (name, composed) in [("composed_padded", true), ("fused_padded", false)] {
        let options = || {
            let o = Sdpa::new().additive_mask(&padding);
            if composed {
                o.composed()
            } else {
                o
            }
        };
        g.bench_function(format!("{name}_forward_backward"), |b| {
            b.iter(|| {
                let y = q
                    .trace()
                    .scaled_dot_product_attention(&k.trace(), &v.trace(), options());
                black_box(y.sum_all().backward())
            })
        });
    }
    g.finish();
}

fn transformer(c: &mut Criterion) {
    let config = TransformerConfig {
        dropout: 0.0,
        ..TransformerConfig::default()
    };
    let layer = TransformerEncoderLayer::<f32, 256, 8, 32, 1024, Cpu>::new(0, config);
    let x = Var::new(Tensor::<f32, Rank3<16, 128, 256>, Cpu>::randn(7));
    let w = Tensor::<f32, Rank2<256, 1024>, Cpu>::randn(8);
    let xs = x.value();
    let mut g = c.benchmark_group("transformer_encoder_layer_b16_l128_d256_f32");
    g.sample_size(10);
    // The layer's products at their sizes: 4 of (2048, 256) x (256, 256) and 2 of (2048, 256) x (256, 1024)
    // (counted as their FLOPs: 4 x 0.27 + 2 x 1.07 GFLOP = 3.2), timed as 3 of the larger.
    g.bench_function("three_2048x256x1024_products_baseline", |b| {
        b.iter(|| {
            for _ in 0..3 {
                black_box(xs.matmul(&w));
            }
        })
    });
    g.bench_function("layer_forward_backward", |b| {
        b.iter(|| black_box(layer.forward(x.trace()).sum_all().backward()))
    });
    g.finish();
}

criterion_group!(benches, lstm, attention, transformer);
criterion_main!(benches);
