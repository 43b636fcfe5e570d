//! The CPU matmul kernels: the `gemm` crate for f32/f64 (any row and column strides, so transposed views are
//! not copied), f16/bf16 widened to f32 first and rounded once at the end, a plain loop for tiny products
//! where gemm's dispatch costs more than the arithmetic, and [`matmul_static`], whose sizes are constants of
//! the operands' static shapes, so the compiler unrolls it into straight-line vector code.

use super::elementwise::{simd, DenseLoop};
use crate::dtype::{Accumulator, DType, FloatDType};
use crate::layout::Layout;
use crate::shape::{Shape, MAX_RANK};
use alloc::vec::Vec;
use core::marker::PhantomData;

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
        small(a, la, b, lb, out);
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

/// The direct loop for tiny products, accumulating in the type's accumulator (f32 or f64). Each sum starts from
/// its first product rather than from zero (so a sum of negative zeros stays -0, as its exact value is, and the
/// unrolled path saves an add per row); [`matmul_static`] sums in the same order.
fn small<T: FloatDType>(a: &[T], la: &Layout, b: &[T], lb: &Layout, out: &mut [T]) {
    let (batch, m, k, n) = (la.dims()[0], la.dims()[1], la.dims()[2], lb.dims()[2]);
    let (sa, sb) = (la.strides(), lb.strides());
    for p in 0..batch {
        let (ao, bo) = (la.offset() + p * sa[0], lb.offset() + p * sb[0]);
        for i in 0..m {
            for j in 0..n {
                let product = |q: usize| {
                    let x = a[ao + i * sa[1] + q * sa[2]].to_acc();
                    x.mul(b[bo + q * sb[1] + j * sb[2]].to_acc())
                };
                let mut acc = if k == 0 { T::Acc::ZERO } else { product(0) };
                for q in 1..k {
                    acc = acc.add(product(q));
                }
                out[(p * m + i) * n + j] = T::from_acc(acc);
            }
        }
    }
}

/// The largest `M`, `K` or `N` of the unrolled static path: a 16-wide row of f32 is one AVX-512 register, and
/// at 16x16x16 the unrolled code already beats gemm's setup (benches/matmul.rs).
pub(crate) const STATIC_MAX: usize = 16;

/// `[M, K, N]` of `lhs x rhs` when both shapes are static and batch-free (`(M, K)` or `(K,)` times `(K, N)` or
/// `(K,)`) with every size at most [`STATIC_MAX`]; `None` sends the product to the general kernel.
pub(crate) const fn static_dims(
    lhs: [Option<usize>; MAX_RANK],
    lhs_rank: usize,
    rhs: [Option<usize>; MAX_RANK],
    rhs_rank: usize,
) -> Option<[usize; 3]> {
    let (m, k) = match lhs_rank {
        1 => (Some(1), lhs[0]),
        2 => (lhs[0], lhs[1]),
        _ => return None,
    };
    let n = match rhs_rank {
        1 => Some(1),
        2 => rhs[1],
        _ => return None,
    };
    match (m, k, n) {
        (Some(m), Some(k), Some(n))
            if 0 < m && m <= STATIC_MAX && 0 < k && k <= STATIC_MAX && 0 < n && n <= STATIC_MAX =>
        {
            Some([m, k, n])
        }
        _ => None,
    }
}

/// The product of dense row-major operands of the static shapes `S` x `S2` (see [`static_dims`]) into `out`
/// (`M * N` elements). Each output row is kept in registers while the `K` rows of `rhs` stream past, summing in
/// `K` order in the accumulator type exactly as the general small loop does; the loop bounds are constants of
/// each shape pair's monomorphisation, and [`simd`] runs rows wider than 4 in the CPU's widest vector clone.
#[inline(always)]
pub(crate) fn matmul_static<T: FloatDType, S: Shape, S2: Shape>(a: &[T], b: &[T], out: &mut [T]) {
    let k = StaticMatmul::<T, S, S2> {
        a,
        b,
        out,
        _shapes: PhantomData,
    };
    match const { static_dims(S::STATIC_DIMS, S::RANK, S2::STATIC_DIMS, S2::RANK) } {
        // Rows of at most 4 lanes fit the baseline SSE registers: wider units gain nothing, so skip the
        // dispatch and compile the loop into the caller.
        Some([_, _, n]) if n <= 4 => k.run(),
        _ => simd(k),
    }
}

struct StaticMatmul<'a, T, S, S2> {
    a: &'a [T],
    b: &'a [T],
    out: &'a mut [T],
    _shapes: PhantomData<(S, S2)>,
}

impl<T: FloatDType, S: Shape, S2: Shape> DenseLoop for StaticMatmul<'_, T, S, S2> {
    #[inline(always)]
    fn run(self) {
        let dims = const { static_dims(S::STATIC_DIMS, S::RANK, S2::STATIC_DIMS, S2::RANK) };
        let Some([m, k, n]) = dims else {
            return;
        };
        let (a, b, out) = (&self.a[..m * k], &self.b[..k * n], &mut self.out[..m * n]);
        // Four rows at a time: four independent chains of adds keep the vector unit busy where one row's
        // chain would wait on each add's latency.
        let split = m / STATIC_ROWS * STATIC_ROWS;
        let (a4, a1) = a.split_at(split * k);
        let (out4, out1) = out.split_at_mut(split * n);
        for (a, out) in a4
            .chunks_exact(STATIC_ROWS * k)
            .zip(out4.chunks_exact_mut(STATIC_ROWS * n))
        {
            row_block::<T, STATIC_ROWS>(a, b, out, k, n);
        }
        for (a, out) in a1.chunks_exact(k).zip(out1.chunks_exact_mut(n)) {
            row_block::<T, 1>(a, b, out, k, n);
        }
    }
}

/// Output rows computed together by [`matmul_static`].
const STATIC_ROWS: usize = 4;

/// `R` rows of `a` (`R * k` elements) times `b` (`k * n`) into `R` rows of `out`, each output row held in
/// accumulators while the rows of `b` stream past (sums in `k` order, from the first product; `k > 0`).
#[inline(always)]
fn row_block<T: FloatDType, const R: usize>(a: &[T], b: &[T], out: &mut [T], k: usize, n: usize) {
    let mut acc = [[T::Acc::ZERO; STATIC_MAX]; R];
    let mut b_rows = b.chunks_exact(n);
    let Some(b_first) = b_rows.next() else {
        return;
    };
    for (r, acc) in acc.iter_mut().enumerate() {
        let x = a[r * k].to_acc();
        for (acc, &y) in acc.iter_mut().zip(b_first) {
            *acc = x.mul(y.to_acc());
        }
    }
    for (q, b_row) in b_rows.enumerate().map(|(q, row)| (q + 1, row)) {
        for (r, acc) in acc.iter_mut().enumerate() {
            let x = a[r * k + q].to_acc();
            for (acc, &y) in acc.iter_mut().zip(b_row) {
                *acc = acc.add(x.mul(y.to_acc()));
            }
        }
    }
    for (out_row, acc) in out.chunks_exact_mut(n).zip(&acc) {
        for (o, &acc) in out_row.iter_mut().zip(acc) {
            *o = T::from_acc(acc);
        }
    }
}
