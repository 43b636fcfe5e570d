//! Matrix products on host memory that need no heap: the direct loop (every product of the embedded device, and
//! the CPU's tiny ones, where gemm's dispatch costs more than the arithmetic) and [`matmul_static`], whose sizes
//! are constants of the operands' static shapes, so the compiler unrolls it into straight-line vector code.

use super::MatmulKernels;
use crate::device::host::elementwise::zeroed;
use crate::device::host::elementwise::{simd, DenseLoop};
use crate::device::Embedded;
use crate::dtype::{Accumulator, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::{Shape, MAX_RANK};
use core::marker::PhantomData;
use core::mem::MaybeUninit;

/// The most output columns whose sums one pass of the direct loop keeps in registers (one AVX-512 register of
/// f32).
const DIRECT_COLS: usize = 16;

/// `[B, M, K] x [B, K, N] -> [B, M, N]` into `out` (dense, `B * M * N` elements, overwritten), accumulating in
/// the type's accumulator (f32 or f64): for each output row, [`DIRECT_COLS`] sums at a time while the rows of
/// `b` stream past, in the CPU's widest vector clone. Each sum starts from its first product rather than from
/// zero (so a sum of negative zeros stays -0, as its exact value is) and adds the others in `K` order;
/// [`matmul_static`] sums in the same order.
pub(crate) fn direct<T: FloatDType>(a: &[T], la: &Layout, b: &[T], lb: &Layout, out: &mut [T]) {
    let (batch, m, k, n) = (la.dims()[0], la.dims()[1], la.dims()[2], lb.dims()[2]);
    if k == 0 {
        out[..batch * m * n].fill(T::ZERO);
        return;
    }
    simd(Direct { a, la, b, lb, out })
}

struct Direct<'a, T> {
    a: &'a [T],
    la: &'a Layout,
    b: &'a [T],
    lb: &'a Layout,
    out: &'a mut [T],
}

impl<T: FloatDType> DenseLoop for Direct<'_, T> {
    #[inline(always)]
    fn run(self) {
        let Direct { a, la, b, lb, out } = self;
        let (batch, m, k, n) = (la.dims()[0], la.dims()[1], la.dims()[2], lb.dims()[2]);
        let (sa, sb) = (la.strides(), lb.strides());
        for p in 0..batch {
            let (ao, bo) = (la.offset() + p * sa[0], lb.offset() + p * sb[0]);
            for i in 0..m {
                let a_row = ao + i * sa[1];
                let x = |q: usize| a[a_row + q * sa[2]].to_acc();
                let out_row = &mut out[(p * m + i) * n..(p * m + i + 1) * n];
                let mut col = 0;
                while col < n {
                    let first = bo + col * sb[2];
                    let rest = &mut out_row[col..];
                    // Dense columns go in blocks of 16, 8 or 4 (loops of constant length, vectorised); strided
                    // ones, and the last one to three, one sum per column.
                    col += match (sb[2], rest.len()) {
                        (1, 16..) => dense_block::<T, 16>(&x, b, first, sb[1], k, rest),
                        (1, 8..) => dense_block::<T, 8>(&x, b, first, sb[1], k, rest),
                        (1, 4..) => dense_block::<T, 4>(&x, b, first, sb[1], k, rest),
                        _ => {
                            let width = rest.len().min(DIRECT_COLS);
                            let cols = &mut rest[..width];
                            let y = |q: usize, j: usize| b[first + q * sb[1] + j * sb[2]].to_acc();
                            let mut acc = [T::Acc::ZERO; DIRECT_COLS];
                            let acc = &mut acc[..cols.len()];
                            let x0 = x(0);
                            for (j, acc) in acc.iter_mut().enumerate() {
                                *acc = x0.mul(y(0, j));
                            }
                            for q in 1..k {
                                let xq = x(q);
                                for (j, acc) in acc.iter_mut().enumerate() {
                                    *acc = acc.add(xq.mul(y(q, j)));
                                }
                            }
                            for (o, &acc) in cols.iter_mut().zip(acc.iter()) {
                                *o = T::from_acc(acc);
                            }
                            cols.len()
                        }
                    };
                }
            }
        }
    }
}

/// `W` dense columns of one output row (the first `W` of `out`), from `b`'s rows starting at `first`, `row_step`
/// apart, and the row's `a` elements `x(q)`; returns `W`.
#[inline(always)]
fn dense_block<T: FloatDType, const W: usize>(
    x: &impl Fn(usize) -> T::Acc,
    b: &[T],
    first: usize,
    row_step: usize,
    k: usize,
    out: &mut [T],
) -> usize {
    let row = |q: usize| -> &[T; W] {
        let start = first + q * row_step;
        b[start..start + W].try_into().expect("W columns")
    };
    let mut acc = [T::Acc::ZERO; W];
    let x0 = x(0);
    for (acc, &y) in acc.iter_mut().zip(row(0)) {
        *acc = x0.mul(y.to_acc());
    }
    for q in 1..k {
        let xq = x(q);
        for (acc, &y) in acc.iter_mut().zip(row(q)) {
            *acc = acc.add(xq.mul(y.to_acc()));
        }
    }
    for (o, &acc) in out[..W].iter_mut().zip(&acc) {
        *o = T::from_acc(acc);
    }
    W
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
/// `K` order in the accumulator type exactly as [`direct`] does; the loop bounds are constants of
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

// SAFETY: the output is zeroed, then `direct` overwrites it.
unsafe impl MatmulKernels for Embedded {
    #[inline]
    fn matmul<T: FloatDType>(
        (a, la): (&[T], &Layout),
        (b, lb): (&[T], &Layout),
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        direct(a, la, b, lb, zeroed(out));
        Ok(())
    }
}
