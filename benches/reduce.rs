//! Reductions against a read-bandwidth baseline measured in the same run: `cargo bench -p benches --bench reduce`.
//!
//! `read/xor_u64` folds the same 64 MB with XOR (as fast as memory delivers it); the sums read those bytes once,
//! so the ratio of throughputs is the share of read bandwidth the reduction reaches.
//!
//! `scan/plain_loop_rows` is the baseline of the scans: a running sum over each 4096-element row of the same data
//! into a reused output, one thread, written as anyone would; `cumsum` along either axis (a fresh output, lanes on
//! every core), `cummax` and `logcumsumexp` report the same bytes.
//!
//! `sort/plain_loop_rows_baseline` is the baseline of sorting: each row of a random (1024, 1024) f32 matrix's
//! positions sorted by value with the standard library's stable sort, one thread; `argsort`, `sort` and `topk`
//! of the same rows report the same elements. Results: benches/README.md.

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
    g.bench_function("var_rows/4096x4096_axis1", |b| {
        b.iter(|| black_box(square.var::<Axis<1>>()))
    });
    // Positions of row maxima (a classifier's predicted classes) on random values, where a branch on each
    // comparison would mispredict.
    let random = Tensor::<f32, Rank2<SIDE, SIDE>, Cpu>::randn(1);
    g.bench_function("argmax_rows/4096x4096_axis1_random", |b| {
        b.iter(|| black_box(random.argmax::<Axis<1>>()))
    });
    g.finish();
}

fn scans(c: &mut Criterion) {
    let data: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 1e-3).collect();
    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes((N * 4) as u64))
        .sample_size(10);
    let mut out = vec![0f32; N];
    g.bench_function("plain_loop_rows_baseline", |b| {
        b.iter(|| {
            for (row, dst) in black_box(&data).chunks(SIDE).zip(out.chunks_mut(SIDE)) {
                let mut acc = 0f32;
                for (x, y) in row.iter().zip(dst) {
                    acc += x;
                    *y = acc;
                }
            }
            black_box(&out);
        })
    });
    let square = Tensor::<f32, Rank2<SIDE, SIDE>, Cpu>::from_vec(data).unwrap();
    g.bench_function("cumsum/4096x4096_axis1", |b| {
        b.iter(|| black_box(square.cumsum::<Axis<1>>()))
    });
    g.bench_function("cumsum/4096x4096_axis0", |b| {
        b.iter(|| black_box(square.cumsum::<Axis<0>>()))
    });
    g.bench_function("cummax/4096x4096_axis1_values_and_indices", |b| {
        b.iter(|| black_box(square.cummax::<Axis<1>>()))
    });
    g.bench_function("logcumsumexp/4096x4096_axis1", |b| {
        b.iter(|| black_box(square.logcumsumexp::<Axis<1>>()))
    });
    g.finish();
}

fn sorting(c: &mut Criterion) {
    const R: usize = 1024;
    let x = Tensor::<f32, Rank2<R, R>, Cpu>::randn(3);
    let data = x.to_vec();
    let mut g = c.benchmark_group("sort");
    g.throughput(Throughput::Elements((R * R) as u64))
        .sample_size(10);
    let mut order = vec![0u32; R * R];
    g.bench_function("plain_loop_rows_baseline", |b| {
        b.iter(|| {
            for (row, out) in black_box(&data).chunks(R).zip(order.chunks_mut(R)) {
                let mut idx: Vec<u32> = (0..R as u32).collect();
                idx.sort_by(|&a, &b| row[a as usize].total_cmp(&row[b as usize]));
                out.copy_from_slice(&idx);
            }
            black_box(&order);
        })
    });
    g.bench_function("argsort/1024x1024_axis1", |b| {
        b.iter(|| black_box(x.argsort::<Axis<1>>(false)))
    });
    g.bench_function("sort/1024x1024_axis1_values_and_indices", |b| {
        b.iter(|| black_box(x.sort::<Axis<1>>(false)))
    });
    g.bench_function("topk/1024x1024_axis1_k10", |b| {
        b.iter(|| black_box(x.topk::<Axis<1>, 10>(true)))
    });
    g.finish();
}

criterion_group!(benches, sums, scans, sorting);
criterion_main!(benches);
