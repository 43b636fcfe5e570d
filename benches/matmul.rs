//! matmul against same-run baselines: `cargo bench -p benches --bench matmul` (set `RAYON_NUM_THREADS=1` for one thread).
//!
//! - large f32 (1024^3, 2048^3): `Tensor::matmul` vs a direct call of gemm's f32 kernel (x86-v4) and a direct
//!   `matrixmultiply::sgemm` call on preallocated buffers; criterion's throughput is in "elements" = FLOPs.
//! - small static shapes (4x4, 16x16): `Tensor::matmul` (output included) on `Cpu` and on `Embedded` vs
//!   nalgebra's `SMatrix` product, the target's baseline, and a fixed-size stack-array loop.
//!
//! Results and targets: benches/README.md.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use typed_tensor::prelude::*;

fn direct_gemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    // gemm's f32 kernel as its `gemm::gemm` facade calls it for row-major n x n operands: the transposed
    // product c^T = b^T a^T, whose destination is column-major (column stride n, row stride 1).
    unsafe {
        gemm_f32::gemm::f32::get_gemm_fn()(
            n,
            n,
            n,
            c.as_mut_ptr(),
            n as isize,
            1,
            false,
            b.as_ptr(),
            n as isize,
            1,
            a.as_ptr(),
            n as isize,
            1,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm_common::Parallelism::Rayon(0),
        )
    }
}

fn direct_matrixmultiply(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    unsafe {
        matrixmultiply::sgemm(
            n,
            n,
            n,
            1.0,
            a.as_ptr(),
            n as isize,
            1,
            b.as_ptr(),
            n as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        )
    }
}

fn large<const N: usize>(c: &mut Criterion) {
    let a = Tensor::<f32, Rank2<N, N>, Cpu>::rand(1);
    let b = Tensor::<f32, Rank2<N, N>, Cpu>::rand(2);
    let (va, vb) = (a.to_vec(), b.to_vec());
    let mut out = vec![0.0f32; N * N];
    let mut g = c.benchmark_group(format!("matmul_f32_{N}"));
    g.throughput(Throughput::Elements((2 * N * N * N) as u64))
        .sample_size(10);
    g.bench_function("direct_gemm", |bch| {
        bch.iter(|| direct_gemm(N, &va, &vb, &mut out))
    });
    g.bench_function("direct_matrixmultiply", |bch| {
        bch.iter(|| direct_matrixmultiply(N, &va, &vb, &mut out))
    });
    g.bench_function("tensor", |bch| bch.iter(|| black_box(a.matmul(&b))));
    let bt: Tensor<f32, Rank2<N, N>, Cpu> = Tensor::from_vec(b.t().to_vec()).unwrap();
    g.bench_function("tensor_rhs_transposed_view", |bch| {
        bch.iter(|| black_box(a.matmul(&bt.t())))
    });
    g.finish();
}

fn stack_matmul<const N: usize>(a: &[[f32; N]; N], b: &[[f32; N]; N]) -> [[f32; N]; N] {
    let mut c = [[0.0; N]; N];
    for i in 0..N {
        for k in 0..N {
            for j in 0..N {
                c[i][j] += a[i][k] * b[k][j];
            }
        }
    }
    c
}

fn small<const N: usize>(c: &mut Criterion) {
    let a = Tensor::<f32, Rank2<N, N>, Cpu>::rand(3);
    let b = Tensor::<f32, Rank2<N, N>, Cpu>::rand(4);
    let (sa, sb) = (a.to_array(), b.to_array());
    let mut g = c.benchmark_group(format!("matmul_f32_small_{N}"));
    g.throughput(Throughput::Elements((2 * N * N * N) as u64));
    let (na, nb) = (
        nalgebra::SMatrix::<f32, N, N>::from_fn(|i, j| sa[i][j]),
        nalgebra::SMatrix::<f32, N, N>::from_fn(|i, j| sb[i][j]),
    );
    // Two ways to keep the product: returned through `black_box` (moved into its argument slot right after it
    // is built) and kept where it was built (`black_box` of a reference). A move copies the whole value: 64 bytes
    // for nalgebra and for the `Embedded` tensor (its array and nothing else), 112 for the `Cpu` tensor, whose
    // bookkeeping words the copy reads while their stores are still in flight; the second form measures the
    // product alone.
    let (ea, eb) = (
        Tensor::<f32, Rank2<N, N>, Embedded>::from_array(sa),
        Tensor::<f32, Rank2<N, N>, Embedded>::from_array(sb),
    );
    g.bench_function(BenchmarkId::new("nalgebra_smatrix", N), |bch| {
        bch.iter(|| black_box(black_box(&na) * black_box(&nb)))
    });
    g.bench_function(BenchmarkId::new("nalgebra_smatrix_in_place", N), |bch| {
        bch.iter(|| {
            let c = black_box(&na) * black_box(&nb);
            black_box(&c);
        })
    });
    g.bench_function(BenchmarkId::new("stack_array_loop", N), |bch| {
        bch.iter(|| black_box(stack_matmul(black_box(&sa), black_box(&sb))))
    });
    g.bench_function(BenchmarkId::new("tensor", N), |bch| {
        bch.iter(|| black_box(black_box(&a).matmul(&b)))
    });
    g.bench_function(BenchmarkId::new("tensor_in_place", N), |bch| {
        bch.iter(|| {
            let c = black_box(&a).matmul(&b);
            black_box(&c);
        })
    });
    g.bench_function(BenchmarkId::new("embedded", N), |bch| {
        bch.iter(|| black_box(black_box(&ea).matmul(&eb)))
    });
    g.bench_function(BenchmarkId::new("embedded_in_place", N), |bch| {
        bch.iter(|| {
            let c = black_box(&ea).matmul(&eb);
            black_box(&c);
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    small::<4>,
    small::<16>,
    large::<1024>,
    large::<2048>
);
criterion_main!(benches);
