//! Elementwise throughput against baselines measured in the same run: `cargo bench -p benches --bench elementwise`.
//!
//! - `copy/memcpy` (read 64 MB + write 64 MB into a preallocated buffer, one thread) is the bandwidth baseline;
//!   `copy/memcpy_threads` does the same split over rayon's threads (what the tensor kernels use on large data).
//!   `add/*` moves 1.5x memcpy's bytes (two reads, one write), so compare bytes per second (criterion's
//!   throughput).
//! - `add/tensor/fresh_output` (`&a + &b`) returns a fresh tensor whose buffer comes from the CPU buffer cache
//!   (the previous iteration's output, freed); `fresh_output_uncached` is the same with the cache off, which pays a
//!   page fault per 4 KiB of its new 64 MB output, as every library returning a fresh array does;
//!   `into_reused_output` (`a.add_into(&b, &mut out)`) and `in_place` (`a += &b`) write into existing memory.
//! - `<f>/libm_loop_preallocated` is the scalar loop every peer runs; `<f>/tensor_into` writes ours into a
//!   reused output, `<f>/tensor` into a fresh one.
//!
//! - `small_add/*`: `&a + &b` on 4x4 and 8x8 f32 tensors (the per-call cost a small model pays for every bias
//!   and activation) against the same add over fixed-size arrays on the stack; also `&a * 2.0`, `a.lt(&b)`,
//!   `where_cond`, whole-tensor and row reductions and a row softmax.
//!
//! Results and targets: benches/README.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rayon::prelude::*;
use std::hint::black_box;
use typed_tensor::ops::{Exp, GeluTanh, Sigmoid, Silu, Tanh, UnaryOp};
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
    g.bench_function("memcpy_threads", |b| {
        b.iter(|| {
            dst.par_chunks_mut(1 << 18)
                .zip(black_box(&src).par_chunks(1 << 18))
                .for_each(|(d, s)| d.copy_from_slice(s))
        })
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
    g.bench_function(BenchmarkId::new("tensor", "fresh_output_uncached"), |b| {
        let limit = Cpu::memory_stats().limit;
        Cpu::set_cache_limit(0);
        b.iter(|| black_box(&a + &bt));
        Cpu::set_cache_limit(limit);
    });
    g.bench_function(BenchmarkId::new("tensor", "into_reused_output"), |b| {
        let mut out = Tensor::<f32, Big, Cpu>::zeros();
        b.iter(|| {
            a.add_into(&bt, &mut out);
            black_box(&out);
        })
    });
    g.bench_function(BenchmarkId::new("tensor", "in_place"), |b| {
        let mut acc = a.clone() + 0.0; // its own buffer
        b.iter(|| {
            acc += &bt;
            black_box(&acc);
        })
    });
    g.finish();

    // One operand repeated: a scalar (`x + 1.0`, every scalar op) and a per-row value read through a stride-0
    // view (the (C, 1, 1) columns of batch norm and conv biases). Two streams: read one, write one.
    let mut g = c.benchmark_group("add_repeated_operand");
    g.throughput(Throughput::Bytes((2 * N * 4) as u64))
        .sample_size(20);
    g.bench_function("plain_loop_preallocated", |b| {
        let x = a.to_vec();
        b.iter(|| {
            let one = black_box(1.0f32);
            for (o, &p) in dst.iter_mut().zip(&x) {
                *o = p + one;
            }
            black_box(&dst);
        })
    });
    g.bench_function(BenchmarkId::new("tensor", "scalar"), |b| {
        b.iter(|| black_box(&a + 1.0))
    });
    let square = a.reshape::<Rank2<4096, 4096>>();
    let column = Tensor::<f32, Rank2<4096, 1>, Cpu>::ones().broadcast::<Rank2<4096, 4096>>();
    g.bench_function(BenchmarkId::new("tensor", "column_view"), |b| {
        b.iter(|| black_box(&square + &column))
    });
    g.finish();
}

fn unary<Op: UnaryOp<f32>>(
    c: &mut Criterion,
    name: &str,
    op: Op,
    libm: fn(f32) -> f32,
    src: &[f32],
) {
    let mut dst = vec![0.0f32; N];
    let a = Tensor::<f32, Big, Cpu>::from_vec(src.to_vec()).unwrap();
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes((2 * N * 4) as u64))
        .sample_size(10);
    g.bench_function("libm_loop_preallocated", |b| {
        b.iter(|| {
            for (o, &x) in dst.iter_mut().zip(src) {
                *o = libm(x);
            }
            black_box(&dst);
        })
    });
    g.bench_function("tensor", |b| b.iter(|| black_box(a.unary(op))));
    g.bench_function("tensor_into", |b| {
        let mut out = Tensor::<f32, Big, Cpu>::zeros();
        b.iter(|| {
            a.unary_into(op, &mut out);
            black_box(&out);
        })
    });
    g.finish();
}

fn math(c: &mut Criterion) {
    let src: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 / 100.0 - 5.0).collect();
    let sigmoid = |x: f32| 1.0 / (1.0 + (-x).exp());
    let gelu = |x: f32| {
        let k = (2.0f32 / std::f32::consts::PI).sqrt();
        0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
    };
    let silu = |x: f32| x / (1.0 + (-x).exp());
    unary(c, "exp", Exp, f32::exp, &src);
    unary(c, "tanh", Tanh, f32::tanh, &src);
    unary(c, "sigmoid", Sigmoid, sigmoid, &src);
    unary(c, "gelu", GeluTanh, gelu, &src);
    unary(c, "silu", Silu, silu, &src);
}

fn small_add<const R: usize, const C: usize>(c: &mut Criterion) {
    let a = Tensor::<f32, Rank2<R, C>, Cpu>::rand(1);
    let b = Tensor::<f32, Rank2<R, C>, Cpu>::rand(2);
    let (sa, sb) = (a.to_array(), b.to_array());
    let mut g = c.benchmark_group(format!("small_add_{R}x{C}"));
    g.bench_function("stack_array_loop", |bch| {
        bch.iter(|| {
            let (x, y) = (black_box(&sa), black_box(&sb));
            black_box(std::array::from_fn::<[f32; C], R, _>(|i| {
                std::array::from_fn(|j| x[i][j] + y[i][j])
            }))
        })
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| black_box(black_box(&a) + black_box(&b)))
    });
    // A scalar operand (losses and learning rates) and a comparison (masks), the same per-call cost.
    g.bench_function("tensor_times_scalar", |bch| {
        bch.iter(|| black_box(black_box(&a) * black_box(2.0f32)))
    });
    g.bench_function("tensor_lt", |bch| {
        bch.iter(|| black_box(black_box(&a).lt(black_box(&b))))
    });
    // A select by mask (ReLU-like code) and a whole-tensor sum (a scalar loss): no heap buffer when tiny.
    let mask = a.lt(&b);
    g.bench_function("tensor_where_cond", |bch| {
        bch.iter(|| black_box(black_box(&mask).where_cond(black_box(&a), black_box(&b))))
    });
    g.bench_function("tensor_sum_all", |bch| {
        bch.iter(|| black_box(black_box(&a).sum_all()))
    });
    // In place: a parameter update (`w -= &g`, `w *= decay`) writes the tensor's own inline buffer.
    g.bench_function("tensor_add_assign", |bch| {
        let mut acc = a.clone();
        bch.iter(|| {
            acc += black_box(&b);
            black_box(&acc);
        })
    });
    // By -1, not a decay factor: millions of `*= 0.999` drive the values subnormal, which an Intel core multiplies
    // slowly (this line measured 41-62 ns by 0.999 on the Intel VM, 3-4 ns by -1).
    g.bench_function("tensor_mul_assign_scalar", |bch| {
        let mut acc = a.clone();
        bch.iter(|| {
            acc *= black_box(-1.0f32);
            black_box(&acc);
        })
    });
    // Row sums, row maxima, predicted classes and a row softmax (a classifier head): the tiny stack walks.
    g.bench_function("tensor_sum_axis1", |bch| {
        bch.iter(|| black_box(black_box(&a).sum::<Axis<1>>()))
    });
    g.bench_function("tensor_max_keepdim_axis1", |bch| {
        bch.iter(|| black_box(black_box(&a).max_keepdim::<Axis<1>>()))
    });
    g.bench_function("tensor_argmax_axis1", |bch| {
        bch.iter(|| black_box(black_box(&a).argmax::<Axis<1>>()))
    });
    g.bench_function("tensor_softmax_axis1", |bch| {
        bch.iter(|| black_box(black_box(&a).softmax::<Axis<1>>()))
    });
    g.finish();
}

/// Mid-sized operands (64 KiB each, under the CPU buffer cache's 128 KiB floor): a fresh output comes from the
/// system allocator every call, so this is where the cost of handing a kernel an initialised destination shows.
fn mid_add(c: &mut Criterion) {
    const N: usize = 16 * 1024;
    let a = Tensor::<f32, Rank1<N>, Cpu>::rand(1);
    let b = Tensor::<f32, Rank1<N>, Cpu>::rand(2);
    let (va, vb) = (a.to_vec(), b.to_vec());
    let mut g = c.benchmark_group("mid_add_16k");
    g.throughput(Throughput::Bytes((3 * N * 4) as u64));
    g.bench_function("plain_loop_fresh_vec", |bch| {
        bch.iter(|| {
            let (x, y) = (black_box(&va), black_box(&vb));
            black_box(x.iter().zip(y).map(|(p, q)| p + q).collect::<Vec<f32>>())
        })
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| black_box(black_box(&a) + black_box(&b)))
    });
    g.bench_function("tensor_exp", |bch| {
        bch.iter(|| black_box(black_box(&a).exp()))
    });
    // A temporary on the left (`x.matmul(&w) + &b`): borrowed, the sum gets a fresh buffer (what every form did
    // before 2026-11-24); owned, it is written into the temporary's buffer.
    g.bench_function("exp_then_add_borrowed", |bch| {
        bch.iter(|| {
            let t = black_box(&a).exp();
            black_box(&t + black_box(&b))
        })
    });
    g.bench_function("exp_then_add_owned", |bch| {
        bch.iter(|| black_box(black_box(&a).exp() + black_box(&b)))
    });
    g.finish();
}

criterion_group!(
    benches,
    copy_and_add,
    math,
    mid_add,
    small_add::<4, 4>,
    small_add::<8, 8>
);
criterion_main!(benches);
