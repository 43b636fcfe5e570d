//! CUDA throughput against the device's own copy bandwidth measured in the same run:
//! `cargo bench -p benches --features cuda --bench cuda` (prints "skipped" and exits without a GPU).
//!
//! - `copy/driver_memcpy` (`cuMemcpyDtoD` of 256 MB) is the bandwidth baseline; elementwise ops and reductions
//!   report bytes per second (criterion's throughput) to compare with it. Targets: elementwise >= 80% of the copy
//!   bandwidth.
//! - `matmul_4096/*` report FLOP/s (criterion's elements/s = FLOP/s) of the default path (cuBLAS where installed).
//!   The summary holds each against a direct `cublasGemmStridedBatchedEx` call on copies of the same operands in
//!   the same run (target: the library at >= 0.9x it), against the GPU's peaks (H100 SXM: f16/bf16 990 TFLOP/s
//!   dense, TF32 495, f32 67, f64 67 on tensor cores), and prints the library's own kernels beside them.
//! - `small matmul` lines: the first call of each backend, the host time to queue a call, and a call waited for,
//!   for the shapes of a small model (why products under 2^20 multiply-adds stay with the kernels).
//! - `host time to queue`: a small op and a digits-MLP training step against a bare `cuLaunchKernel` of an empty
//!   kernel in the same run (how launch-bound a small model is).
//! - The first `Cuda::init()` of the process is timed (run with CUDA_CACHE_DISABLE=1 for a fresh machine's wait).
//! - The run ends with a summary of ratios timed directly (mean over 20 synchronised calls).
//!
//! Every timed call ends with `Cuda::synchronize()`, so a time covers the kernels, not just their launch.
//! Results: benches/README.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::ffi::c_void;
use std::hint::black_box;
use std::time::Instant;
use typed_tensor::autograd::{Traced, Var};
use typed_tensor::device::{Cuda, MatmulBackend};
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

/// cuBLAS called directly on copies of the operands (the baseline the library's products are held against):
/// the same `cublasGemmStridedBatchedEx` the library calls, on the legacy default stream, which the library's
/// blocking stream synchronises with.
struct DirectCublas {
    handle: *mut c_void,
    gemm: GemmFn,
    _lib: libloading::Library,
}

type GemmFn = unsafe extern "C" fn(
    *mut c_void,
    i32,
    i32,
    i32,
    i32,
    i32,
    *const c_void,
    *const c_void,
    i32,
    i32,
    i64,
    *const c_void,
    i32,
    i32,
    i64,
    *const c_void,
    *mut c_void,
    i32,
    i32,
    i64,
    i32,
    i32,
    i32,
) -> i32;

impl DirectCublas {
    fn open() -> Option<Self> {
        let path = std::env::var("TYPED_TENSOR_CUBLAS").unwrap_or_default();
        let names = if path.is_empty() {
            vec![
                "libcublas.so.13",
                "libcublas.so.12",
                "libcublas.so.11",
                "libcublas.so",
            ]
        } else {
            vec![path.as_str()]
        };
        let lib = names
            .into_iter()
            .find_map(|n| unsafe { libloading::Library::new(n) }.ok())?;
        unsafe {
            let create = *lib
                .get::<unsafe extern "C" fn(*mut *mut c_void) -> i32>(b"cublasCreate_v2\0")
                .ok()?;
            let gemm = *lib.get::<GemmFn>(b"cublasGemmStridedBatchedEx\0").ok()?;
            let mut handle = std::ptr::null_mut();
            (create(&mut handle) == 0).then_some(DirectCublas {
                handle,
                gemm,
                _lib: lib,
            })
        }
    }

    /// Mean seconds of `C = A B` for two square S x S matrices copied from `a` and `b` (row-major, asked for as
    /// `Cᵀ = Bᵀ Aᵀ`), with cuBLAS's data type `dtype` and compute type `compute`.
    fn seconds<T: WithDType>(
        &self,
        a: &Tensor<T, Rank2<S, S>, Cuda>,
        b: &Tensor<T, Rank2<S, S>, Cuda>,
        dtype: i32,
        compute: i32,
    ) -> f64 {
        use cust::sys as cu;
        let bytes = S * S * size_of::<T>();
        let (ra, rb) = (RawPair::new(bytes), RawPair::new(bytes));
        for (raw, t) in [(&ra, a), (&rb, b)] {
            let host = t.to_vec();
            unsafe {
                assert_eq!(
                    cu::cuMemcpyHtoD_v2(raw.0, host.as_ptr() as *const c_void, bytes),
                    cu::CUresult::CUDA_SUCCESS
                );
            }
        }
        let (one32, zero32, one64, zero64) = (1f32, 0f32, 1f64, 0f64);
        let (alpha, beta): (*const c_void, *const c_void) = if compute == 70 {
            (&one64 as *const f64 as _, &zero64 as *const f64 as _)
        } else {
            (&one32 as *const f32 as _, &zero32 as *const f32 as _)
        };
        let n = S as i32;
        let run = || unsafe {
            let code = (self.gemm)(
                self.handle,
                0,
                0,
                n,
                n,
                n,
                alpha,
                rb.0 as *const c_void,
                dtype,
                n,
                0,
                ra.0 as *const c_void,
                dtype,
                n,
                0,
                beta,
                ra.1 as *mut c_void,
                dtype,
                n,
                0,
                1,
                compute,
                -1,
            );
            assert_eq!(code, 0, "cublasGemmStridedBatchedEx");
        };
        for _ in 0..3 {
            run();
        }
        unsafe { cu::cuCtxSynchronize() };
        let start = Instant::now();
        for _ in 0..20 {
            run();
        }
        unsafe { cu::cuCtxSynchronize() };
        start.elapsed().as_secs_f64() / 20.0
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
    // The first call loads every kernel module (the driver compiles PTX it has no machine code for; run with
    // CUDA_CACHE_DISABLE=1 to time what a fresh machine, whose JIT cache is empty, waits).
    let start = Instant::now();
    if let Err(e) = Cuda::init() {
        eprintln!("skipped the CUDA benches: {e}");
        return;
    }
    println!(
        "summary: first Cuda::init() in this process: {:.2} s (CUDA_CACHE_DISABLE={})",
        start.elapsed().as_secs_f64(),
        std::env::var("CUDA_CACHE_DISABLE").unwrap_or_default()
    );
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
    let norm_s = seconds(|| drop(black_box(square.layer_norm::<Axis<1>>(1e-5))));
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
    report(
        "layer_norm over rows of 8192x8192",
        2.0 * bytes as f64,
        norm_s,
    );
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
    // Peaks of an H100 SXM (the GPU these were first measured on): f32 without tensor cores, TF32, f16/bf16 and
    // f64 on dense tensor cores (cuBLAS runs f64 on the DMMA units; the kernels' f64 runs at the 33.5 TFLOP/s of
    // the CUDA cores).
    println!(
        "summary: cuBLAS {}",
        Cuda::cublas_version()
            .map_or_else(|e| format!("not used: {e}"), |v| format!("version {v}"))
    );
    let direct = DirectCublas::open();
    let ours = |f: &dyn Fn()| Cuda::with_matmul_backend(MatmulBackend::Kernels, || seconds(f));
    let rows: [(&str, f64, f64, Option<f64>, f64); 5] = [
        (
            "f32",
            seconds(|| drop(black_box(a.matmul(&b)))),
            ours(&|| drop(black_box(a.matmul(&b)))),
            direct.as_ref().map(|d| d.seconds(&a, &b, 0, 68)),
            67.0,
        ),
        (
            "f32, rhs a transposed view",
            seconds(|| drop(black_box(a.matmul(&bt)))),
            ours(&|| drop(black_box(a.matmul(&bt)))),
            None,
            67.0,
        ),
        (
            "f16 (f32 accumulator)",
            seconds(|| drop(black_box(ah.matmul(&bh)))),
            ours(&|| drop(black_box(ah.matmul(&bh)))),
            direct.as_ref().map(|d| d.seconds(&ah, &bh, 2, 68)),
            990.0,
        ),
        (
            "bf16 (f32 accumulator)",
            seconds(|| drop(black_box(ab.matmul(&bb)))),
            ours(&|| drop(black_box(ab.matmul(&bb)))),
            direct.as_ref().map(|d| d.seconds(&ab, &bb, 14, 68)),
            990.0,
        ),
        (
            "f64",
            seconds(|| drop(black_box(a64.matmul(&b64)))),
            ours(&|| drop(black_box(a64.matmul(&b64)))),
            direct.as_ref().map(|d| d.seconds(&a64, &b64, 1, 70)),
            67.0,
        ),
    ];
    let tf = |s: f64| flops as f64 / s / 1e12;
    for (what, s, kernels_s, direct_s, peak) in rows {
        println!(
            "summary: matmul {S}^3 {what}: {:.2} ms, {:.1} TFLOP/s ({:.0}% of an H100 SXM's {peak} TFLOP/s); \
             the library's kernels {:.1} TFLOP/s{}",
            s * 1e3,
            tf(s),
            100.0 * tf(s) / peak,
            tf(kernels_s),
            direct_s.map_or(String::new(), |d| format!(
                "; a direct cublasGemmStridedBatchedEx {:.1} TFLOP/s, the library at {:.2}x it",
                tf(d),
                d / s
            ))
        );
    }
    Cuda::set_allow_tf32(true);
    let tf32_s = seconds(|| drop(black_box(a.matmul(&b))));
    let tf32_direct = direct.as_ref().map(|d| d.seconds(&a, &b, 0, 77));
    Cuda::set_allow_tf32(false);
    println!(
        "summary: matmul {S}^3 f32 with TF32 allowed: {:.2} ms, {:.1} TFLOP/s ({:.0}% of an H100 SXM's 495 TFLOP/s){}",
        tf32_s * 1e3,
        tf(tf32_s),
        100.0 * tf(tf32_s) / 495.0,
        tf32_direct.map_or(String::new(), |d| format!(
            "; direct {:.1} TFLOP/s, the library at {:.2}x it",
            tf(d),
            d / tf32_s
        ))
    );

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

/// Small products, as a small model's training step makes them (the digits MLP's shapes): the first call of each
/// backend (cuBLAS loads its kernels lazily), the host time to queue one call, and one call waited for.
fn small_products(_: &mut Criterion) {
    if Cuda::init().is_err() {
        return;
    }
    fn shape<const M: usize, const K: usize, const N: usize>() {
        let a = Tensor::<f32, Rank2<M, K>, Cuda>::randn(5);
        let b = Tensor::<f32, Rank2<K, N>, Cuda>::randn(6);
        for backend in [MatmulBackend::Kernels, MatmulBackend::Cublas] {
            Cuda::with_matmul_backend(backend, || {
                sync();
                let start = Instant::now();
                drop(black_box(a.matmul(&b)));
                sync();
                let first = start.elapsed().as_secs_f64();
                let start = Instant::now();
                for _ in 0..1000 {
                    drop(black_box(a.matmul(&b)));
                }
                let queued = start.elapsed().as_secs_f64() / 1000.0;
                sync();
                let waited = seconds(|| {
                    drop(black_box(a.matmul(&b)));
                    sync()
                });
                println!(
                    "summary: small matmul ({M}, {K}) x ({K}, {N}) f32 on {:?}: first call {:.1} us, queued {:.1} \
                     us per call, waited for {:.1} us per call",
                    Cuda::last_matmul_backend().expect("a product ran"),
                    first * 1e6,
                    queued * 1e6,
                    waited * 1e6
                );
            });
        }
    }
    shape::<32, 64, 64>();
    shape::<32, 64, 10>();
    shape::<64, 32, 64>();
    shape::<256, 256, 256>();
}

/// An empty kernel, loaded beside the library's modules: the bare cost of one `cuLaunchKernel` on this machine.
const EMPTY_KERNEL_PTX: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\
    .visible .entry empty(.param .u64 a, .param .u64 b, .param .u64 c) { ret; }\n\0";

/// Host time to queue small work, against a bare `cuLaunchKernel` of an empty kernel in the same run: one
/// elementwise op, and one training step of the digits MLP (`Linear<64, 64>`, ReLU, `Linear<64, 10>`, batch 32,
/// cross-entropy, backward, Adam; 29 launches). A small model is launch-bound when the step's host time is about
/// its launch count times the bare launch. Then the same step as a CUDA graph, and the GPU time per operation of
/// a replayed graph (the empty kernel's floor against the library's smallest kernel), which bounds a graph's step.
fn launch_overhead(_: &mut Criterion) {
    use cust::sys as cu;
    use typed_tensor::nn::{Linear, Module, ReLU};
    use typed_tensor::optim::{Adam, AdamConfig, Optimizer};
    if Cuda::init().is_err() {
        return;
    }
    // Any library call makes its context current on this thread; the empty kernel is loaded into it.
    drop(Tensor::<f32, Rank1<1>, Cuda>::zeros());
    let (mut module, mut empty) = (core::ptr::null_mut(), core::ptr::null_mut());
    unsafe {
        let code = cu::cuModuleLoadData(&mut module, EMPTY_KERNEL_PTX.as_ptr() as *const c_void);
        assert_eq!(code, cu::CUresult::CUDA_SUCCESS);
        let code = cu::cuModuleGetFunction(&mut empty, module, c"empty".as_ptr());
        assert_eq!(code, cu::CUresult::CUDA_SUCCESS);
    }
    /// Host seconds per call to queue `f` (1000 calls, then one wait).
    fn queued(mut f: impl FnMut()) -> f64 {
        f();
        sync();
        let start = Instant::now();
        for _ in 0..1000 {
            f();
        }
        let s = start.elapsed().as_secs_f64() / 1000.0;
        sync();
        s
    }
    let bare = queued(|| {
        let mut args = [1u64, 2, 3];
        let mut ptrs: Vec<*mut c_void> = args
            .iter_mut()
            .map(|a| a as *mut u64 as *mut c_void)
            .collect();
        let code = unsafe {
            cu::cuLaunchKernel(
                empty,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                core::ptr::null_mut(),
                ptrs.as_mut_ptr(),
                core::ptr::null_mut(),
            )
        };
        assert_eq!(code, cu::CUresult::CUDA_SUCCESS);
    });
    unsafe { cu::cuCtxSynchronize() };
    let a = Tensor::<f32, Rank2<32, 64>, Cuda>::randn(1);
    let b = Tensor::<f32, Rank2<32, 64>, Cuda>::randn(2);
    let add = queued(|| drop(black_box(&a + &b)));
    type Mlp = (Linear<f32, 64, 64, Cuda>, ReLU, Linear<f32, 64, 10, Cuda>);
    let model: Mlp = (Linear::new(1), ReLU, Linear::new(2));
    let mut opt = Adam::new(&model, AdamConfig::default());
    let x = Tensor::<f32, Rank2<32, 64>, Cuda>::randn(3);
    let y = Tensor::<u32, Rank1<32>, Cuda>::from_vec((0..32).map(|i| i % 10).collect())
        .expect("labels");
    let step = queued(|| {
        let logits: Traced<f32, Rank2<32, 10>, Cuda> = model.forward(Traced::constant(x.clone()));
        let grads = logits.cross_entropy(&y).mean_all().backward();
        opt.step(&grads);
    });
    // The same step with forward and backward recorded once as a CUDA graph: per step one graph launch (which
    // does not wait: a bad label is reported by a later replay) and Adam's four fused kernels. Inside a
    // capture every product goes to cuBLAS (its host time is paid once); `Kernels` records the PTX kernels
    // instead, for comparison.
    let waited = |f: &mut dyn FnMut()| {
        seconds(|| {
            f();
            sync()
        })
    };
    let eager_waited = waited(&mut || {
        let logits: Traced<f32, Rank2<32, 10>, Cuda> = model.forward(Traced::constant(x.clone()));
        let grads = logits.cross_entropy(&y).mean_all().backward();
        opt.step(&grads);
    });
    let mut xs = x.clone() + 0.0; // a buffer of its own, written in place before each replay
    let mut graph_step = |backend: MatmulBackend| {
        let forward_backward = || {
            let logits: Traced<f32, Rank2<32, 10>, Cuda> =
                model.forward(Traced::constant(xs.clone()));
            logits.cross_entropy(&y).mean_all().backward()
        };
        let (graph, grads) = Cuda::with_matmul_backend(backend, || Cuda::capture(forward_backward))
            .expect("capture");
        let host = queued(|| {
            graph.replay().expect("replay");
            opt.step(&grads);
        });
        let replay = waited(&mut || graph.replay().expect("replay"));
        let step = waited(&mut || {
            xs.copy_from(&x);
            graph.replay().expect("replay");
            opt.step(&grads);
        });
        (graph.len(), host, replay, step)
    };
    let kernels = graph_step(MatmulBackend::Kernels);
    let cublas = graph_step(MatmulBackend::Cublas);
    // GPU time per operation of a replayed graph: 32 launches of the empty kernel in a row (the driver's floor)
    // against 32 of the library's (32, 64) f32 in-place add, each recorded once and replayed 100 times per timed
    // call, waited for. A small model's replay costs about its operation count times these.
    const CHAIN: usize = 32;
    let floor = unsafe {
        let check = |code: cu::CUresult| assert_eq!(code, cu::CUresult::CUDA_SUCCESS);
        let mut stream = core::ptr::null_mut();
        check(cu::cuStreamCreate(
            &mut stream,
            cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
        ));
        check(cu::cuStreamBeginCapture_v2(
            stream,
            cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        ));
        let mut args = [1u64, 2, 3];
        let mut ptrs: Vec<*mut c_void> = args
            .iter_mut()
            .map(|a| a as *mut u64 as *mut c_void)
            .collect();
        for _ in 0..CHAIN {
            check(cu::cuLaunchKernel(
                empty,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                stream,
                ptrs.as_mut_ptr(),
                core::ptr::null_mut(),
            ));
        }
        let (mut graph, mut exec) = (core::ptr::null_mut(), core::ptr::null_mut());
        check(cu::cuStreamEndCapture(stream, &mut graph));
        check(cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0));
        check(cu::cuGraphLaunch(exec, stream));
        check(cu::cuStreamSynchronize(stream));
        let start = Instant::now();
        for _ in 0..100 {
            check(cu::cuGraphLaunch(exec, stream));
        }
        check(cu::cuStreamSynchronize(stream));
        let per_node = start.elapsed().as_secs_f64() / (100 * CHAIN) as f64;
        cu::cuGraphExecDestroy(exec);
        cu::cuGraphDestroy(graph);
        cu::cuStreamDestroy_v2(stream);
        per_node
    };
    let mut acc = Tensor::<f32, Rank2<32, 64>, Cuda>::zeros();
    let (chain, ()) = Cuda::capture(|| {
        for _ in 0..CHAIN {
            acc += &a;
        }
    })
    .expect("capture the chain of adds");
    let adds = seconds(|| {
        for _ in 0..100 {
            chain.replay().expect("replay");
        }
    }) / (100 * CHAIN) as f64;
    println!(
        "summary: GPU time per operation of a replayed graph: {:.2} us for the empty kernel, {:.2} us for a (32, \
         64) f32 in-place add ({CHAIN} in a row, 100 replays)",
        floor * 1e6,
        adds * 1e6
    );
    unsafe { cu::cuModuleUnload(module) };
    println!(
        "summary: host time to queue: a bare cuLaunchKernel {:.2} us; (32, 64) f32 add {:.2} us ({:.2}x the bare \
         launch); a digits-MLP training step {:.1} us ({:.1} bare launches; the step makes 29)",
        bare * 1e6,
        add * 1e6,
        add / bare,
        step * 1e6,
        step / bare
    );
    for (name, (nodes, host, replay, whole)) in [("cuBLAS", cublas), ("the PTX kernels", kernels)] {
        println!(
            "summary: the digits-MLP step with forward and backward as one CUDA graph ({nodes} operations, products \
             on {name}) and Adam after it: {:.1} us of host time ({:.2}x the eager step's); the replay alone, \
             waited for: {:.1} us; the whole step waited for, input written in: {:.1} us against the eager step's \
             {:.1} us ({:.2}x)",
            host * 1e6,
            host / step,
            replay * 1e6,
            whole * 1e6,
            eager_waited * 1e6,
            whole / eager_waited
        );
    }
}

criterion_group!(benches, bandwidth, small_products, launch_overhead, matmul);
criterion_main!(benches);
