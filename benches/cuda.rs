//! CUDA throughput against the device's own copy bandwidth measured in the same run:
//! `cargo bench --features cuda --bench cuda` (prints "skipped" and exits without a GPU).
//!
//! - `copy/driver_memcpy` (`cuMemcpyDtoD` of 256 MB) is the bandwidth baseline; elementwise ops and reductions
//!   report bytes per second (criterion's throughput) to compare with it. Targets: elementwise >= 80% of the copy
//!   bandwidth.
//! - `matmul_4096/*` report FLOP/s (criterion's elements/s = FLOP/s). Target: f32 at >= 50% of the GPU's f32 peak
//!   without tensor cores (H100 SXM: 67 TFLOP/s); f16/bf16 run on tensor cores (dense f16 peak ~990 TFLOP/s).
//! - The run ends with a summary of ratios timed directly (mean over 20 synchronised calls).
//!
//! Every timed call ends with `Cuda::synchronize()`, so a time covers the kernels, not just their launch.
//! Results: benches/README.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Instant;
use typed_tensor::autograd::{Traced, Var};
use typed_tensor::device::Cuda;
use typed_tensor::ops::Exp;
use typed_tensor::prelude::*;
use typed_tensor::tensor::Conv;

const N: usize = 1 << 26; // 64M f32 = 256 MB per tensor
type Big = Rank1<N>;
const S: usize = 4096;

/// Two raw device buffers for the driver's copy, freed on drop.
struct RawPair(u64, u64);

impl RawPair {
    fn new(bytes: usize) -> Self {
        use cust::sys as cu;
        let (mut a, mut b) = (0, 0);
        unsafe {
            assert_eq!(cu::cuMemAlloc_v2(&mut a, bytes), cu::CUresult::CUDA_SUCCESS);
            assert_eq!(cu::cuMemAlloc_v2(&mut b, bytes), cu::CUresult::CUDA_SUCCESS);
        }
        RawPair(a, b)
    }
    /// One copy, waited for (it runs on the legacy default stream, which `Cuda::synchronize` does not wait on).
    fn copy(&self, bytes: usize) {
        use cust::sys as cu;
        unsafe {
            assert_eq!(
                cu::cuMemcpyDtoD_v2(self.1, self.0, bytes),
                cu::CUresult::CUDA_SUCCESS
            );
            assert_eq!(cu::cuCtxSynchronize(), cu::CUresult::CUDA_SUCCESS);
        }
    }
}

impl Drop for RawPair {
    fn drop(&mut self) {
        unsafe {
            cust::sys::cuMemFree_v2(self.0);
            cust::sys::cuMemFree_v2(self.1);
        }
    }
}

fn sync() {
    Cuda::synchronize().expect("synchronize");
}

/// Mean seconds per call over 20 synchronised calls, after 3 warm-up calls.
fn seconds(mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    sync();
    let start = Instant::now();
    for _ in 0..20 {
        f();
    }
    sync();
    start.elapsed().as_secs_f64() / 20.0
}

fn bandwidth(c: &mut Criterion) {
    if let Err(e) = Cuda::init() {
        eprintln!("skipped the CUDA benches: {e}");
        return;
    }
    let bytes = N * 4;
    let raw = RawPair::new(bytes);
    let a = Tensor::<f32, Big, Cuda>::ones();
    let b = Tensor::<f32, Big, Cuda>::full(2.0);
    let mut out = Tensor::<f32, Big, Cuda>::zeros();

    let mut g = c.benchmark_group("copy");
    g.throughput(Throughput::Bytes(2 * bytes as u64))
        .sample_size(20);
    g.bench_function("driver_memcpy", |bch| bch.iter(|| raw.copy(bytes)));
    g.finish();

    let mut g = c.benchmark_group("add_64M_f32");
    g.throughput(Throughput::Bytes(3 * bytes as u64))
        .sample_size(20);
    g.bench_function("fresh_output", |bch| {
        bch.iter(|| {
            black_box(&a + &b);
            sync()
        })
    });
    g.bench_function("into_reused_output", |bch| {
        bch.iter(|| {
            a.add_into(&b, &mut out);
            sync()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("exp_64M_f32");
    g.throughput(Throughput::Bytes(2 * bytes as u64))
        .sample_size(20);
    g.bench_function("into_reused_output", |bch| {
        bch.iter(|| {
            a.unary_into(Exp, &mut out);
            sync()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("sum_64M_f32");
    g.throughput(Throughput::Bytes(bytes as u64))
        .sample_size(20);
    g.bench_function("sum_all", |bch| {
        bch.iter(|| {
            black_box(a.sum_all());
            sync()
        })
    });
    let square = Tensor::<f32, Rank2<8192, 8192>, Cuda>::ones();
    g.bench_function("sum_rows_8192x8192", |bch| {
        bch.iter(|| {
            black_box(square.sum::<Axis<1>>());
            sync()
        })
    });
    g.bench_function("softmax_rows_8192x8192", |bch| {
        bch.iter(|| {
            black_box(square.softmax::<Axis<1>>());
            sync()
        })
    });
    g.finish();

    let copy_s = seconds(|| raw.copy(bytes));
    let add_s = seconds(|| a.add_into(&b, &mut out));
    let fresh_s = seconds(|| drop(black_box(&a + &b)));
    let exp_s = seconds(|| a.unary_into(Exp, &mut out));
    let sum_s = seconds(|| drop(black_box(a.sum_all())));
    let rows_s = seconds(|| drop(black_box(square.sum::<Axis<1>>())));
    let soft_s = seconds(|| drop(black_box(square.softmax::<Axis<1>>())));
    let copy_bw = 2.0 * bytes as f64 / copy_s;
    let report = |what: &str, moved: f64, s: f64| {
        let bw = moved / s;
        println!(
            "summary: {what}: {:.3} ms, {:.0} GB/s, {:.2}x the driver copy's {:.0} GB/s",
            s * 1e3,
            bw / 1e9,
            bw / copy_bw,
            copy_bw / 1e9
        );
    };
    report("add into a reused output", 3.0 * bytes as f64, add_s);
    report(
        "add, fresh output (cached allocator)",
        3.0 * bytes as f64,
        fresh_s,
    );
    report("exp into a reused output", 2.0 * bytes as f64, exp_s);
    report("sum_all (reads)", bytes as f64, sum_s);
    report("sum over rows of 8192x8192 (reads)", bytes as f64, rows_s);
    report("softmax over rows of 8192x8192", 2.0 * bytes as f64, soft_s);
    let stats = Cuda::memory_stats().unwrap();
    println!(
        "summary: memory in use {} MB, cached {} MB",
        stats.in_use >> 20,
        stats.cached >> 20
    );
}

fn matmul(c: &mut Criterion) {
    if Cuda::init().is_err() {
        return;
    }
    let flops = 2 * (S as u64).pow(3);
    let mut g = c.benchmark_group("matmul_4096");
    g.throughput(Throughput::Elements(flops)).sample_size(10);
    let a = Tensor::<f32, Rank2<S, S>, Cuda>::randn(1);
    let b = Tensor::<f32, Rank2<S, S>, Cuda>::randn(2);
    g.bench_function("f32", |bch| {
        bch.iter(|| {
            black_box(a.matmul(&b));
            sync()
        })
    });
    let bt = b.t();
    g.bench_function("f32_rhs_transposed_view", |bch| {
        bch.iter(|| {
            black_box(a.matmul(&bt));
            sync()
        })
    });
    let (ah, bh) = (a.to_dtype::<f16>(), b.to_dtype::<f16>());
    g.bench_function("f16", |bch| {
        bch.iter(|| {
            black_box(ah.matmul(&bh));
            sync()
        })
    });
    let (ab, bb) = (a.to_dtype::<bf16>(), b.to_dtype::<bf16>());
    g.bench_function("bf16", |bch| {
        bch.iter(|| {
            black_box(ab.matmul(&bb));
            sync()
        })
    });
    let (a64, b64) = (a.to_dtype::<f64>(), b.to_dtype::<f64>());
    g.bench_function("f64", |bch| {
        bch.iter(|| {
            black_box(a64.matmul(&b64));
            sync()
        })
    });
    g.finish();
    // Peaks of an H100 SXM (the GPU these were first measured on): f32 and f64 without tensor cores, f16/bf16
    // dense tensor cores.
    for (what, s, peak) in [
        ("f32", seconds(|| drop(black_box(a.matmul(&b)))), 67.0),
        (
            "f32, rhs a transposed view",
            seconds(|| drop(black_box(a.matmul(&bt)))),
            67.0,
        ),
        (
            "f16 (tensor cores, f32 accumulator)",
            seconds(|| drop(black_box(ah.matmul(&bh)))),
            990.0,
        ),
        (
            "bf16 (tensor cores, f32 accumulator)",
            seconds(|| drop(black_box(ab.matmul(&bb)))),
            990.0,
        ),
        ("f64", seconds(|| drop(black_box(a64.matmul(&b64)))), 33.5),
    ] {
        let tflops = flops as f64 / s / 1e12;
        println!(
            "summary: matmul {S}^3 {what}: {:.2} ms, {tflops:.1} TFLOP/s ({:.0}% of an H100 SXM's {peak} TFLOP/s)",
            s * 1e3,
            100.0 * tflops / peak
        );
    }

    // The CPU bench's convolution shape: batch 8, 64 -> 64 channels, 56x56, 3x3, padding 1.
    const B: usize = 8;
    const C: usize = 64;
    const HW: usize = 56;
    let x = Tensor::<f32, Rank4<B, C, HW, HW>, Cuda>::randn(3);
    let w = Tensor::<f32, Rank4<C, C, 3, 3>, Cuda>::randn(4);
    let conv_flops = (2 * B * C * C * 9 * HW * HW) as f64;
    let conv_s = seconds(|| {
        let y: Tensor<f32, Rank4<B, C, HW, HW>, Cuda> = x.conv2d(&w, Conv::<1, 1, 1, 1>);
        drop(black_box(y))
    });
    println!(
        "summary: conv2d 8x64x56x56 3x3 f32: {:.3} ms, {:.1} TFLOP/s",
        conv_s * 1e3,
        conv_flops / conv_s / 1e12
    );
    // A training step's share: the forward pass and both gradients (input and weight), through autograd. The
    // backward pass is two convolutions' worth of products, so ~3x the forward is the ideal.
    let (xv, wv) = (Var::new(x.clone()), Var::new(w.clone()));
    let step_s = seconds(|| {
        let y: Traced<f32, Rank4<B, C, HW, HW>, Cuda> = xv.trace().conv2d(&wv, Conv::<1, 1, 1, 1>);
        drop(black_box(y.sum_all().backward()))
    });
    println!(
        "summary: conv2d 8x64x56x56 3x3 f32 forward + backward (input and weight gradients): {:.3} ms, {:.1}x the forward",
        step_s * 1e3,
        step_s / conv_s
    );
}

criterion_group!(benches, bandwidth, matmul);
criterion_main!(benches);
