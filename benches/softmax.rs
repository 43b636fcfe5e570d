//! softmax over (4096, 1024) f32 rows against a plain two-pass loop measured in the same run, and cross
//! entropy's gradient over (64, 32000) f32 logits (a language model's vocabulary) against a plain loop of its
//! definition: `cargo bench -p benches --bench softmax` (threads: rayon's default; `RAYON_NUM_THREADS=1` for one).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use std::hint::black_box;
use typed_tensor::autograd::Var;
use typed_tensor::prelude::*;

const ROWS: usize = 4096;
const COLS: usize = 1024;

/// The baseline every peer is measured against: max pass, then exp-sum pass, then scale, one thread.
fn plain_two_pass(x: &[f32], out: &mut [f32]) {
    for (row, o) in x.chunks_exact(COLS).zip(out.chunks_exact_mut(COLS)) {
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mut s = 0.0;
        for (v, y) in row.iter().zip(o.iter_mut()) {
            *y = (v - m).exp();
            s += *y;
        }
        let inv = 1.0 / s;
        o.iter_mut().for_each(|y| *y *= inv);
    }
}

fn softmax(c: &mut Criterion) {
    let x = Tensor::<f32, Rank2<ROWS, COLS>, Cpu>::randn(1);
    let xv = x.to_vec();
    let mut out = vec![0.0f32; ROWS * COLS];
    let mut g = c.benchmark_group("softmax_4096x1024_f32");
    g.sample_size(10);
    g.bench_function("plain_two_pass_baseline", |b| {
        b.iter(|| plain_two_pass(black_box(&xv), &mut out))
    });
    g.bench_function("tensor", |b| b.iter(|| black_box(x.softmax::<Axis<1>>())));
    g.finish();
}

const BATCH: usize = 64;
const VOCAB: usize = 32000;

/// The baseline: `(exp(log_probs) - one_hot(label)) / batch`, the gradient of the mean cross entropy, one thread.
fn plain_cross_entropy_gradient(log_probs: &[f32], labels: &[u32], out: &mut [f32]) {
    let g = 1.0 / BATCH as f32;
    for ((row, o), &label) in log_probs
        .chunks_exact(VOCAB)
        .zip(out.chunks_exact_mut(VOCAB))
        .zip(labels)
    {
        for (c, (lp, y)) in row.iter().zip(o.iter_mut()).enumerate() {
            *y = (lp.exp() - f32::from(u8::from(c == label as usize))) * g;
        }
    }
}

fn cross_entropy(c: &mut Criterion) {
    let x = Var::new(Tensor::<f32, Rank2<BATCH, VOCAB>, Cpu>::randn(2));
    let labels =
        Tensor::<u32, Rank1<BATCH>, Cpu>::from_vec((0..BATCH as u32).map(|i| i * 401).collect())
            .expect("labels");
    let log_probs = x.value().log_softmax::<Axis<1>>().to_vec();
    let ls = labels.to_vec();
    let mut out = vec![0.0f32; BATCH * VOCAB];
    let mut g = c.benchmark_group("cross_entropy_backward_64x32000_f32");
    g.sample_size(10);
    g.bench_function("plain_loop_baseline", |b| {
        b.iter(|| plain_cross_entropy_gradient(black_box(&log_probs), &ls, &mut out))
    });
    // The backward pass of `cross_entropy(..).mean_all()` alone (the forward runs in the untimed setup).
    g.bench_function("tensor", |b| {
        b.iter_batched(
            || x.trace().cross_entropy(&labels).mean_all(),
            |loss| black_box(loss.backward()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, softmax, cross_entropy);
criterion_main!(benches);
