//! conv2d (batch 8, 64 -> 64 channels, 56x56, 3x3, padding 1) against the matmul of its im2col form, measured
//! in the same run: `cargo bench -p benches --bench conv`. Throughput is in FLOPs (2 * MACs). Also the transposed
//! convolution that is this conv2d's input gradient, and a whole training step of the layer (forward, both
//! gradients through autograd: three GEMMs' worth of FLOPs).
//! Max pooling (3x3, stride 2, padding 1 on the same input; 2x2 on the digits CNN's first activation), forward
//! and forward + backward, against a same-run copy of the input (throughput in input bytes).
//! Batch norm over the same (8, 64, 56, 56) input: inference (running statistics), a training forward pass
//! (batch statistics) and forward + backward, against a same-run copy of the input and a plain per-channel
//! loop (statistics pass, then normalise pass; one thread).
//! Bilinear resize (8, 64, 56, 56) -> 112 x 112 (`interpolate`, the `resample` kernel along each axis) against a
//! plain one-thread loop that mixes the four source pixels of each output, and a same-run copy of the output.
//! conv3d (batch 2, 32 -> 32 channels, 8x28x28, 3x3x3, padding 1) against the GEMMs of its 3-D im2col form, and
//! its forward + backward.
//! unfold (8, 16, 56, 56), 3x3 windows, padding 1, against a same-run copy of its output's bytes; fold, its inverse
//! arrangement, against a copy of its input's bytes.
//! Adaptive average pooling (8, 64, 56, 56) -> 5 x 5 (overlapping bins) against a same-run copy of the input and a
//! plain one-thread loop.
//! Results and target (>= 0.7x the GEMM's FLOP/s): benches/README.md.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use typed_tensor::autograd::{Traced, Var};
use typed_tensor::prelude::*;
use typed_tensor::tensor::{Conv, Pool2d};

const B: usize = 8;
const C: usize = 64;
const HW: usize = 56;
const K: usize = C * 9; // im2col rows
const L: usize = HW * HW; // output positions

/// One image's product of the im2col form, `out (C_OUT, L) = wm (C_OUT, K) col (K, L)` (`[C_OUT, K, L]`), through
/// gemm's f32 kernel as its `gemm::gemm` facade calls it for a row-major destination (the transpose, `out^T =
/// col^T wm^T`): the baseline the convolutions are measured against.
fn gemm_baseline(out: &mut [f32], col: &[f32], wm: &[f32], [c_out, k, l]: [usize; 3]) {
    assert!(out.len() >= c_out * l && col.len() >= k * l && wm.len() >= c_out * k);
    // SAFETY: the three buffers hold the row-major matrices the strides describe (checked above).
    unsafe {
        gemm_f32::gemm::f32::get_gemm_fn()(
            l,
            c_out,
            k,
            out.as_mut_ptr(),
            l as isize,
            1,
            false,
            col.as_ptr(),
            l as isize,
            1,
            wm.as_ptr(),
            k as isize,
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

fn conv(c: &mut Criterion) {
    let x = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(1);
    let w = Tensor::<f32, Rank4<C, C, 3, 3>, Cpu>::randn(2);
    let flops = (2 * B * C * K * L) as u64;
    let mut g = c.benchmark_group("conv2d_8x64x56x56_3x3");
    g.throughput(Throughput::Elements(flops)).sample_size(10);

    // The equivalent GEMMs on preallocated buffers: (C, K) x (K, L) for each image.
    let (wm, col) = (w.to_vec(), vec![0.5f32; K * L]);
    let mut out = vec![0.0f32; C * L];
    g.bench_function("im2col_gemm_baseline", |bch| {
        bch.iter(|| {
            for _ in 0..B {
                gemm_baseline(&mut out, &col, &wm, [C, K, L]);
            }
        })
    });
    g.bench_function("tensor_conv2d", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<B, C, HW, HW>, Cpu> = x.conv2d(&w, Conv::<1, 1, 1, 1>);
            black_box(y)
        })
    });
    // The input gradient's kernel: same FLOPs (per image, (K, C) x (C, L) and col2im).
    let gy = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(3);
    g.bench_function("tensor_conv_transpose2d", |bch| {
        bch.iter(|| {
            let dx: Tensor<f32, Rank4<B, C, HW, HW>, Cpu> =
                gy.conv_transpose2d(&w, Conv::<1, 1, 1, 1>);
            black_box(dx)
        })
    });
    // Forward and backward (input and weight gradients) of the layer, the output's gradient `gy`.
    let (xv, wv, gyc) = (
        Var::new(x.clone()),
        Var::new(w.clone()),
        Traced::constant(gy),
    );
    g.throughput(Throughput::Elements(3 * flops));
    g.bench_function("tensor_fwd_bwd", |bch| {
        bch.iter(|| {
            let y: Traced<f32, Rank4<B, C, HW, HW>, Cpu> =
                xv.trace().conv2d(&wv, Conv::<1, 1, 1, 1>);
            let grads = y.mul(&gyc).sum_all().backward();
            black_box((grads.get(&xv), grads.get(&wv)))
        })
    });
    g.finish();
}

fn max_pool(c: &mut Criterion) {
    let x = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(4);
    let gy = Traced::constant(Tensor::<f32, Rank4<B, C, 28, 28>, Cpu>::randn(5));
    let mut g = c.benchmark_group("max_pool2d_8x64x56x56_3x3s2p1");
    g.throughput(Throughput::Bytes((B * C * HW * HW * 4) as u64))
        .sample_size(20);
    let (src, mut dst) = (x.to_vec(), vec![0f32; B * C * HW * HW]);
    g.bench_function("memcpy_input_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<B, C, 28, 28>, Cpu> = x.max_pool2d(Pool2d::<3, 2, 1>);
            black_box(y)
        })
    });
    g.bench_function("tensor_with_indices", |bch| {
        bch.iter(|| {
            let y: (Tensor<f32, Rank4<B, C, 28, 28>, Cpu>, _) =
                x.max_pool2d_with_indices(Pool2d::<3, 2, 1>);
            black_box(y)
        })
    });
    let xv = Var::new(x.clone());
    g.bench_function("tensor_fwd_bwd", |bch| {
        bch.iter(|| {
            let y: Traced<f32, Rank4<B, C, 28, 28>, Cpu> = xv.trace().max_pool2d(Pool2d::<3, 2, 1>);
            black_box(y.mul(&gy).sum_all().backward().get(&xv))
        })
    });
    g.finish();

    // The digits CNN's first pooling: a batch of 32 8-channel 8x8 activations.
    let x = Tensor::<f32, Rank4<32, 8, 8, 8>, Cpu>::randn(6);
    let gy = Traced::constant(Tensor::<f32, Rank4<32, 8, 4, 4>, Cpu>::randn(7));
    let mut g = c.benchmark_group("max_pool2d_32x8x8x8_2x2");
    g.throughput(Throughput::Bytes((32 * 8 * 8 * 8 * 4) as u64));
    let (src, mut dst) = (x.to_vec(), vec![0f32; 32 * 8 * 8 * 8]);
    g.bench_function("memcpy_input_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<32, 8, 4, 4>, Cpu> = x.max_pool2d(Pool2d::<2, 2, 0>);
            black_box(y)
        })
    });
    let xv = Var::new(x.clone());
    g.bench_function("tensor_fwd_bwd", |bch| {
        bch.iter(|| {
            let y: Traced<f32, Rank4<32, 8, 4, 4>, Cpu> = xv.trace().max_pool2d(Pool2d::<2, 2, 0>);
            black_box(y.mul(&gy).sum_all().backward().get(&xv))
        })
    });
    g.finish();
}

/// The plain per-channel batch norm of an NCHW buffer: mean and variance in one pass per channel (f64 sums),
/// then `x * scale + shift`.
fn plain_batch_norm(x: &[f32], out: &mut [f32], channels: usize, inner: usize) {
    let batches = x.len() / (channels * inner);
    for c in 0..channels {
        let (mut s, mut ss) = (0f64, 0f64);
        for b in 0..batches {
            for &v in &x[(b * channels + c) * inner..][..inner] {
                s += v as f64;
                ss += (v as f64) * (v as f64);
            }
        }
        let n = (batches * inner) as f64;
        let mean = s / n;
        let var = ss / n - mean * mean;
        let scale = (1.0 / (var + 1e-5).sqrt()) as f32;
        let shift = -(mean as f32) * scale;
        for b in 0..batches {
            let at = (b * channels + c) * inner;
            for (o, &v) in out[at..at + inner].iter_mut().zip(&x[at..at + inner]) {
                *o = v * scale + shift;
            }
        }
    }
}

fn batch_norm(c: &mut Criterion) {
    use typed_tensor::nn::{BatchNorm2d, Module, Parameters};
    let x = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(8);
    let gy = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(9);
    let mut g = c.benchmark_group("batch_norm_8x64x56x56");
    g.throughput(Throughput::Bytes((B * C * HW * HW * 4) as u64))
        .sample_size(20);
    let (src, mut dst) = (x.to_vec(), vec![0f32; B * C * HW * HW]);
    g.bench_function("memcpy_input_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    g.bench_function("plain_loop_baseline", |bch| {
        bch.iter(|| plain_batch_norm(black_box(&src), &mut dst, C, HW * HW))
    });
    let bn = BatchNorm2d::<f32, C, Cpu>::new();
    g.bench_function("tensor_inference", |bch| {
        bch.iter(|| black_box(bn.forward(x.clone())))
    });
    g.bench_function("traced_training_forward", |bch| {
        bch.iter(|| black_box(bn.forward(Traced::constant(x.clone())).into_value()))
    });
    let xv = Var::new(x.clone());
    g.bench_function("traced_training_fwd_bwd", |bch| {
        bch.iter(|| {
            let y = bn.forward(xv.trace());
            black_box(y.mul(&gy).sum_all().backward().get(&xv))
        })
    });
    bn.eval();
    g.finish();
}

/// Bilinear resize (align_corners false) of NCHW planes `h x w -> oh x ow` by a direct loop: per output, the
/// four source pixels and their weights.
fn plain_bilinear(x: &[f32], out: &mut [f32], (h, w): (usize, usize), (oh, ow): (usize, usize)) {
    let axis = |n: usize, o: usize| -> Vec<(usize, usize, f32)> {
        (0..o)
            .map(|j| {
                let s = ((j as f32 + 0.5) * n as f32 / o as f32 - 0.5).max(0.0);
                let i0 = (s as usize).min(n - 1);
                (i0, (i0 + 1).min(n - 1), s - i0 as f32)
            })
            .collect()
    };
    let (rows, cols) = (axis(h, oh), axis(w, ow));
    for (plane, dst) in x.chunks_exact(h * w).zip(out.chunks_exact_mut(oh * ow)) {
        for (r, &(r0, r1, ty)) in rows.iter().enumerate() {
            for (c, &(c0, c1, tx)) in cols.iter().enumerate() {
                let top = plane[r0 * w + c0] * (1.0 - tx) + plane[r0 * w + c1] * tx;
                let bottom = plane[r1 * w + c0] * (1.0 - tx) + plane[r1 * w + c1] * tx;
                dst[r * ow + c] = top * (1.0 - ty) + bottom * ty;
            }
        }
    }
}

fn resize(c: &mut Criterion) {
    use typed_tensor::ops::Interpolation;
    const OHW: usize = 2 * HW;
    let x = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(10);
    let mut g = c.benchmark_group("bilinear_8x64x56x56_to_112");
    g.throughput(Throughput::Bytes((B * C * OHW * OHW * 4) as u64))
        .sample_size(10);
    let src = x.to_vec();
    let mut dst = vec![0f32; B * C * OHW * OHW];
    let copy_src = dst.clone();
    g.bench_function("memcpy_output_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&copy_src)))
    });
    g.bench_function("plain_loop_baseline", |bch| {
        bch.iter(|| plain_bilinear(black_box(&src), &mut dst, (HW, HW), (OHW, OHW)))
    });
    let mode = Interpolation::Bilinear {
        align_corners: false,
    };
    g.bench_function("tensor", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<B, C, OHW, OHW>, Cpu> = x.interpolate(mode);
            black_box(y)
        })
    });
    g.finish();
}

/// conv3d (batch 2, 32 -> 32 channels, 8x28x28, 3x3x3, padding 1), computed as sums of conv2d's over depth slices,
/// against the GEMMs of its 3-D im2col form (per image, (C_OUT, C 27) x (C 27, D H W)) in the same run; and
/// forward + backward through autograd (three GEMMs' worth of FLOPs).
fn conv3d(c: &mut Criterion) {
    const N3: usize = 2;
    const C3: usize = 32;
    const D3: usize = 8;
    const S3: usize = 28;
    const K3: usize = C3 * 27;
    const L3: usize = D3 * S3 * S3;
    let x = Tensor::<f32, Rank5<N3, C3, D3, S3, S3>, Cpu>::randn(11);
    let w = Tensor::<f32, Rank5<C3, C3, 3, 3, 3>, Cpu>::randn(12);
    let flops = (2 * N3 * C3 * K3 * L3) as u64;
    let mut g = c.benchmark_group("conv3d_2x32x8x28x28_3x3x3");
    g.throughput(Throughput::Elements(flops)).sample_size(10);
    let (wm, col) = (w.to_vec(), vec![0.5f32; K3 * L3]);
    let mut out = vec![0.0f32; C3 * L3];
    g.bench_function("im2col_gemm_baseline", |bch| {
        bch.iter(|| {
            for _ in 0..N3 {
                gemm_baseline(&mut out, &col, &wm, [C3, K3, L3]);
            }
        })
    });
    g.bench_function("tensor_conv3d", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank5<N3, C3, D3, S3, S3>, Cpu> = x.conv3d(&w, Conv::<1, 1, 1, 1>);
            black_box(y)
        })
    });
    let gy = Traced::constant(Tensor::<f32, Rank5<N3, C3, D3, S3, S3>, Cpu>::randn(13));
    let (xv, wv) = (Var::new(x.clone()), Var::new(w.clone()));
    g.throughput(Throughput::Elements(3 * flops));
    g.bench_function("tensor_fwd_bwd", |bch| {
        bch.iter(|| {
            let y: Traced<f32, Rank5<N3, C3, D3, S3, S3>, Cpu> =
                xv.trace().conv3d(&wv, Conv::<1, 1, 1, 1>);
            let grads = y.mul(&gy).sum_all().backward();
            black_box((grads.get(&xv), grads.get(&wv)))
        })
    });
    g.finish();
}

/// unfold (im2col as an op) of (8, 16, 56, 56) with 3x3 windows and padding 1: (8, 144, 56, 56) columns, against
/// a same-run copy of that many bytes.
fn unfold(c: &mut Criterion) {
    const CU: usize = 16;
    let x = Tensor::<f32, Rank4<B, CU, HW, HW>, Cpu>::randn(14);
    let mut g = c.benchmark_group("unfold_8x16x56x56_3x3p1");
    let bytes = B * CU * 9 * HW * HW * 4;
    g.throughput(Throughput::Bytes(bytes as u64))
        .sample_size(20);
    let (src, mut dst) = (vec![0.5f32; bytes / 4], vec![0f32; bytes / 4]);
    g.bench_function("memcpy_output_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<B, { CU * 9 }, HW, HW>, Cpu> =
                x.unfold::<3, 3, _, _, _, _>(Conv::<1, 1, 1, 1>);
            black_box(y)
        })
    });
    g.finish();
}

/// Adaptive average pooling of (8, 64, 56, 56) to 5 x 5 (bins of 12 or 13 rows and columns that overlap: no
/// regular window) against a same-run copy of the input's bytes and a plain one-thread loop summing each bin.
fn adaptive(c: &mut Criterion) {
    const O: usize = 5;
    let x = Tensor::<f32, Rank4<B, C, HW, HW>, Cpu>::randn(15);
    let bytes = B * C * HW * HW * 4;
    let mut g = c.benchmark_group("adaptive_avg_pool2d_8x64x56x56_to_5");
    g.throughput(Throughput::Bytes(bytes as u64))
        .sample_size(20);
    let (src, mut dst) = (x.to_vec(), vec![0f32; bytes / 4]);
    g.bench_function("memcpy_input_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    let bin = |o: usize| (o * HW / O, ((o + 1) * HW).div_ceil(O));
    let mut out = vec![0f32; B * C * O * O];
    g.bench_function("plain_loop_baseline", |bch| {
        bch.iter(|| {
            for (plane, dst) in black_box(&src)
                .chunks_exact(HW * HW)
                .zip(out.chunks_exact_mut(O * O))
            {
                for (r, row) in dst.chunks_exact_mut(O).enumerate() {
                    let (r0, r1) = bin(r);
                    for (c, d) in row.iter_mut().enumerate() {
                        let (c0, c1) = bin(c);
                        let sum: f32 = (r0..r1)
                            .map(|y| plane[y * HW + c0..y * HW + c1].iter().sum::<f32>())
                            .sum();
                        *d = sum / ((r1 - r0) * (c1 - c0)) as f32;
                    }
                }
            }
        })
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<B, C, O, O>, Cpu> = x.adaptive_avg_pool2d();
            black_box(y)
        })
    });
    g.finish();
}

/// fold (col2im as an op) of (8, 144, 56, 56) columns back to (8, 16, 56, 56) with 3x3 windows and padding 1 (the
/// inverse arrangement of the unfold bench), against a same-run copy of the columns' bytes.
fn fold(c: &mut Criterion) {
    const CU: usize = 16;
    let cols = Tensor::<f32, Rank4<B, { CU * 9 }, HW, HW>, Cpu>::randn(16);
    let mut g = c.benchmark_group("fold_8x144x56x56_3x3p1");
    let bytes = B * CU * 9 * HW * HW * 4;
    g.throughput(Throughput::Bytes(bytes as u64))
        .sample_size(20);
    let (src, mut dst) = (vec![0.5f32; bytes / 4], vec![0f32; bytes / 4]);
    g.bench_function("memcpy_input_baseline", |bch| {
        bch.iter(|| dst.copy_from_slice(black_box(&src)))
    });
    g.bench_function("tensor", |bch| {
        bch.iter(|| {
            let y: Tensor<f32, Rank4<B, CU, HW, HW>, Cpu> =
                cols.fold::<3, 3, _, _, _, _>(Conv::<1, 1, 1, 1>);
            black_box(y)
        })
    });
    g.finish();
}

criterion_group!(benches, conv, conv3d, max_pool, batch_norm, resize, unfold, adaptive, fold);
criterion_main!(benches);
