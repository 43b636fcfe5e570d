//! Reductions against a read-bandwidth baseline measured in the same run: `cargo bench --bench reduce`.
//!
//! `read/xor_u64` folds the same 64 MB with XOR (as fast as memory delivers it); the sums read those bytes once,
//! so the ratio of throughputs is the share of read bandwidth the reduction reaches. Results: benches/README.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use typed_tensor::prelude::*;

const N: usize = 1 << 24; // 16M f32 = 64 MB
const SIDE: usize = 1 << 12; // 4096 x 4096 = 16M

fn sums(c: &mut Criterion) {
    let data: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 1e-3).collect();
    let mut g = c.benchmark_group("reduce");
    g.throughput(Throughput::Bytes((N * 4) as u64))
        .sample_size(20);

    let words: Vec<u64> = bytemuck::cast_slice::<f32, u64>(&data).to_vec();
    g.bench_function("read/xor_u64_baseline", |b| {
        b.iter(|| black_box(&words).iter().fold(0u64, |a, &w| a ^ w))
    });

    let flat = Tensor::<f32, Rank1<N>, Cpu>::from_vec(data.clone()).unwrap();
    g.bench_function("sum_all/16M_f32", |b| b.iter(|| black_box(flat.sum_all())));

    let square = Tensor::<f32, Rank2<SIDE, SIDE>, Cpu>::from_vec(data).unwrap();
    g.bench_function("sum_rows/4096x4096_axis1", |b| {
        b.iter(|| black_box(square.sum::<Axis<1>>()))
    });
    g.bench_function("sum_cols/4096x4096_axis0", |b| {
        b.iter(|| black_box(square.sum::<Axis<0>>()))
    });
    g.bench_function("max_rows/4096x4096_axis1", |b| {
        b.iter(|| black_box(square.max::<Axis<1>>()))
    });
    // Positions of row maxima (a classifier's predicted classes) on random values, where a branch on each
    // comparison would mispredict.
    let random = Tensor::<f32, Rank2<SIDE, SIDE>, Cpu>::randn(1);
    g.bench_function("argmax_rows/4096x4096_axis1_random", |b| {
        b.iter(|| black_box(random.argmax::<Axis<1>>()))
    });
    g.finish();
}

criterion_group!(benches, sums);
criterion_main!(benches);
