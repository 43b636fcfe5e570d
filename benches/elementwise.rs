//! Elementwise throughput against baselines measured in the same run: `cargo bench --bench elementwise`.
//!
//! - `copy/memcpy` (read 64 MB + write 64 MB into a preallocated buffer) is the machine's bandwidth baseline;
//!   `add/*` moves 1.5x its bytes (two reads, one write), so compare bytes per second (criterion's throughput).
//! - `exp/libm_loop` is the scalar loop every peer runs; `exp/tensor` is ours.
//!
//! Results and targets: benches/README.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use typed_tensor::prelude::*;

const N: usize = 1 << 24; // 16M f32 = 64 MB per tensor
type Big = Rank1<N>;

fn copy_and_add(c: &mut Criterion) {
    let src: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let mut dst = vec![0.0f32; N];
    let mut g = c.benchmark_group("copy");
    g.throughput(Throughput::Bytes((2 * N * 4) as u64))
        .sample_size(20);
    g.bench_function("memcpy", |b| {
        b.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    g.finish();

    let a = Tensor::<f32, Big, Cpu>::from_vec(src.clone()).unwrap();
    let bt = Tensor::<f32, Big, Cpu>::ones();
    let mut g = c.benchmark_group("add");
    g.throughput(Throughput::Bytes((3 * N * 4) as u64))
        .sample_size(20);
    g.bench_function("plain_loop_preallocated", |b| {
        let (x, y) = (a.to_vec(), bt.to_vec());
        b.iter(|| {
            for ((o, &p), &q) in dst.iter_mut().zip(&x).zip(&y) {
                *o = p + q;
            }
            black_box(&dst);
        })
    });
    g.bench_function(BenchmarkId::new("tensor", "fresh_output"), |b| {
        b.iter(|| black_box(&a + &bt))
    });
    g.finish();
}

fn exp(c: &mut Criterion) {
    let src: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 / 100.0 - 5.0).collect();
    let mut dst = vec![0.0f32; N];
    let a = Tensor::<f32, Big, Cpu>::from_vec(src.clone()).unwrap();
    let mut g = c.benchmark_group("exp");
    g.throughput(Throughput::Bytes((2 * N * 4) as u64))
        .sample_size(10);
    g.bench_function("libm_loop_preallocated", |b| {
        b.iter(|| {
            for (o, &x) in dst.iter_mut().zip(&src) {
                *o = x.exp();
            }
            black_box(&dst);
        })
    });
    g.bench_function("tensor", |b| b.iter(|| black_box(a.exp())));
    g.finish();
}

criterion_group!(benches, copy_and_add, exp);
criterion_main!(benches);
