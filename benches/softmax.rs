//! softmax over (4096, 1024) f32 rows against a plain two-pass loop measured in the same run:
//! `cargo bench -p benches --bench softmax` (threads: rayon's default; `RAYON_NUM_THREADS=1` for one).

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
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

criterion_group!(benches, softmax);
criterion_main!(benches);
