//! The CPU matmul kernel: the `gemm` crate for f32/f64 (any row and column strides, so transposed views are
//! not copied), f16/bf16 widened to f32 first and rounded once at the end, and the host's direct loop for tiny
//! products, where gemm's dispatch costs more than the arithmetic.

use crate::device::host::matmul::direct;
use crate::dtype::{DType, FloatDType};
use crate::layout::Layout;
use alloc::vec::Vec;

/// Up to this many multiply-adds the direct loop wins over gemm's setup (benches/matmul.rs, 2026-11-22: at 4x4x4
/// the loop takes 0.43 us per call and gemm 0.97 us; at 16x16x16 the loop takes 6.1 us and gemm 0.86 us).
const SMALL_MACS: usize = 8 * 8 * 8;
/// From this many multiply-adds on, gemm may use every core (`std` only).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(super) const PARALLEL_MACS: usize = 96 * 96 * 96;

/// `[B, M, K] x [B, K, N] -> [B, M, N]`, contiguous output; large products use every core.
pub(super) fn matmul<T: FloatDType>(a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Vec<T> {
    let (batch, m, n) = (la.dims()[0], la.dims()[1], lb.dims()[2]);
    let mut out = super::pool::filled(batch * m * n, T::ZERO);
    matmul_into(a, la, b, lb, &mut out, Threads::IfLarge);
    out
}

/// Whether one product may spread over the cores.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Threads {
    /// From [`PARALLEL_MACS`] multiply-adds on (with `std`).
    IfLarge,
    /// Never: the caller already runs products side by side.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    One,
}

/// [`matmul`] into `out` (`B * M * N` elements, overwritten).
pub(super) fn matmul_into<T: FloatDType>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    out: &mut [T],
    threads: Threads,
) {
    let (m, k, n) = (la.dims()[1], la.dims()[2], lb.dims()[2]);
    if out.is_empty() {
        return;
    }
    if m * n * k <= SMALL_MACS {
        direct(a, la, b, lb, out);
        return;
    }
    #[cfg(feature = "std")]
    let parallelism = if threads == Threads::IfLarge && m * n * k >= PARALLEL_MACS {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    #[cfg(not(feature = "std"))]
    let parallelism = {
        let _ = threads;
        gemm::Parallelism::None
    };
    match T::DTYPE {
        DType::F32 => gemm_batched::<f32>(
            bytemuck::cast_slice(a),
            la,
            bytemuck::cast_slice(b),
            lb,
            bytemuck::cast_slice_mut(out),
            parallelism,
        ),
        DType::F64 => gemm_batched::<f64>(
            bytemuck::cast_slice(a),
            la,
            bytemuck::cast_slice(b),
            lb,
            bytemuck::cast_slice_mut(out),
            parallelism,
        ),
        _ => {
            // f16/bf16: widen both operands (a shared operand once), multiply in f32, round once.
            let (wa, wla) = widen(a, la);
            let (wb, wlb) = widen(b, lb);
            let mut wide = super::pool::filled(out.len(), 0f32);
            gemm_batched::<f32>(&wa, &wla, &wb, &wlb, &mut wide, parallelism);
            for (o, &w) in out.iter_mut().zip(&wide) {
                *o = T::from_f64(w as f64); // exact widening, then one rounding
            }
            [wa, wb, wide].into_iter().for_each(super::pool::recycle);
        }
    }
}

/// A contiguous f32 copy of a `[B, R, C]` view, keeping batch stride 0 (one copy) for a shared operand.
fn widen<T: FloatDType>(x: &[T], l: &Layout) -> (Vec<f32>, Layout) {
    let shared = l.strides()[0] == 0;
    let view = if shared {
        Layout::from_parts(
            crate::shape::Dims::from_slice(&[1, l.dims()[1], l.dims()[2]]),
            l.strides(),
            l.offset(),
        )
    } else {
        *l
    };
    let mut wide = super::pool::with_capacity(view.numel());
    crate::layout::for_each_row(view.dims(), [&view], |[o], len, [s]| {
        wide.extend((0..len).map(|i| x[o + i * s].to_f64() as f32))
    });
    let (r, c) = (l.dims()[1], l.dims()[2]);
    let strides = [if shared { 0 } else { r * c }, c, 1];
    (wide, Layout::from_parts(*l.dims(), &strides, 0))
}

fn gemm_batched<E>(
    a: &[E],
    la: &Layout,
    b: &[E],
    lb: &Layout,
    out: &mut [E],
    parallelism: gemm::Parallelism,
) where
    E: Copy + 'static + num_traits::Zero + num_traits::One,
{
    let (batch, m, k, n) = (la.dims()[0], la.dims()[1], la.dims()[2], lb.dims()[2]);
    let (sa, sb) = (la.strides(), lb.strides());
    // Every index gemm forms is `offset + i * row_stride + j * col_stride` with i, j inside the view's dims,
    // which `storage_extent` bounds; the destination is a dense m x n block of `out`.
    assert!(la.storage_extent() <= a.len() && lb.storage_extent() <= b.len());
    for p in 0..batch {
        let dst = &mut out[p * m * n..(p + 1) * m * n];
        let a_off = la.offset() + p * sa[0];
        let b_off = lb.offset() + p * sb[0];
        // Safety: see the assertion above.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr().add(a_off),
                sa[2] as isize,
                sa[1] as isize,
                b.as_ptr().add(b_off),
                sb[2] as isize,
                sb[1] as isize,
                E::zero(),
                E::one(),
                false,
                false,
                false,
                parallelism,
            );
        }
    }
}
