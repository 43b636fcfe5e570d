//! The CPU matmul kernel: the `gemm` crate for f32/f64 (any row and column strides, so transposed views are
//! not copied), f16/bf16 widened to f32 first and rounded once at the end, and the host's direct loop for tiny
//! products, where gemm's dispatch costs more than the arithmetic.

use super::host::direct;
use super::MatmulKernels;
use crate::device::Cpu;
use crate::dtype::{DType, FloatDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::shape::Dims;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use gemm_common::Parallelism;

/// Up to this many multiply-adds the direct loop wins over gemm's setup (benches/matmul.rs, 2026-11-22: at 4x4x4
/// the loop takes 0.43 us per call and gemm 0.97 us; at 16x16x16 the loop takes 6.1 us and gemm 0.86 us).
const SMALL_MACS: usize = 8 * 8 * 8;
/// From this many multiply-adds on, gemm may use every core (`std` only).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) const PARALLEL_MACS: usize = 96 * 96 * 96;

/// `[B, M, K] x [B, K, N] -> [B, M, N]` into the first `B * M * N` elements of `out`; large products use every
/// core.
pub(crate) fn matmul<T: FloatDType>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    out: &mut [MaybeUninit<T>],
) {
    if const { crate::ops::compiled::has_table::<T>() } {
        (crate::ops::compiled::table::<T>().matmul)(a, la, b, lb, out)
    } else {
        matmul_loop(a, la, b, lb, out)
    }
}

/// [`matmul`]'s body (`ops::compiled` holds it compiled for `f32`).
#[inline(always)]
pub(crate) fn matmul_loop<T: FloatDType>(
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
    out: &mut [MaybeUninit<T>],
) {
    let (batch, m, n) = (la.dims()[0], la.dims()[1], lb.dims()[2]);
    let len = Dims::from_slice(&[batch, m, n]).numel();
    let out = crate::device::host::elementwise::zeroed(&mut out[..len]);
    matmul_into(a, la, b, lb, out, Threads::IfLarge);
}

/// Whether one product may spread over the cores.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// From [`PARALLEL_MACS`] multiply-adds on (with `std`).
    IfLarge,
    /// Never: the caller already runs products side by side.
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    One,
}

/// [`matmul`] into `out` (`B * M * N` elements, overwritten).
pub(crate) fn matmul_into<T: FloatDType>(
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
    // A count of multiply-adds for choosing the path only: saturating, since a huge product is no small one.
    let macs = m.saturating_mul(n).saturating_mul(k);
    if macs <= SMALL_MACS {
        direct(a, la, b, lb, out);
        return;
    }
    #[cfg(feature = "std")]
    let parallelism = if threads == Threads::IfLarge && macs >= PARALLEL_MACS {
        Parallelism::Rayon(0)
    } else {
        Parallelism::None
    };
    #[cfg(not(feature = "std"))]
    let parallelism = {
        let _ = threads;
        Parallelism::None
    };
    match T::DTYPE {
        DType::F32 => gemm_batched::<f32>(
            crate::dtype::cast_slice(a),
            la,
            crate::dtype::cast_slice(b),
            lb,
            crate::dtype::cast_slice_mut(out),
            parallelism,
        ),
        DType::F64 => gemm_batched::<f64>(
            crate::dtype::cast_slice(a),
            la,
            crate::dtype::cast_slice(b),
            lb,
            crate::dtype::cast_slice_mut(out),
            parallelism,
        ),
        _ => {
            // f16/bf16: widen both operands (a shared operand once), multiply in f32, round once.
            let (wa, wla) = widen(a, la);
            let (wb, wlb) = widen(b, lb);
            let mut wide = crate::device::cpu::pool::filled(out.len(), 0f32);
            gemm_batched::<f32>(&wa, &wla, &wb, &wlb, &mut wide, parallelism);
            for (o, &w) in out.iter_mut().zip(&wide) {
                *o = T::from_f64(w as f64); // exact widening, then one rounding
            }
            [wa, wb, wide]
                .into_iter()
                .for_each(crate::device::cpu::pool::recycle);
        }
    }
}

/// `out += a x b` for f32 `[1, M, K] x [1, K, N]` views into a dense `M x N` block, one thread: the tiles of
/// fused kernels that accumulate products (attention's gradients), without a pass to add a product's copy.
#[cfg_attr(not(feature = "std"), allow(dead_code))] // its callers (nn) need std
pub(crate) fn matmul_add_into(a: &[f32], la: &Layout, b: &[f32], lb: &Layout, out: &mut [f32]) {
    gemm_batched_into(a, la, b, lb, out, Parallelism::None, true);
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
    let mut wide = crate::device::cpu::pool::with_capacity(view.numel());
    crate::layout::for_each_row(view.dims(), [&view], |[o], len, [s]| {
        wide.extend((0..len).map(|i| x[o + i * s].to_f64() as f32))
    });
    let (r, c) = (l.dims()[1], l.dims()[2]);
    let strides = [if shared { 0 } else { r * c }, c, 1];
    (wide, Layout::from_parts(*l.dims(), &strides, 0))
}

/// The element types the per-type gemm crates multiply, each with the kernel gemm picks for this CPU (AVX-512,
/// FMA or scalar, detected once). The `gemm` facade crate does this dispatch by `TypeId`; calling the per-type
/// crates ourselves keeps its complex-number kernels out of the build.
trait GemmElement: Copy + 'static {
    /// `gemm_basic`'s signature: `dst = alpha * dst + beta * lhs * rhs` over an m x n destination, strides in
    /// elements (`_cs` column, `_rs` row), no conjugation; `alpha` 1 when `add` (the product added to `dst`),
    /// else `dst` is only written.
    ///
    /// # Safety
    ///
    /// Every element `p + i * rs + j * cs` of the three matrices (i, j inside their dims) is inside its
    /// allocation, `dst`'s elements are distinct and writable, and no dim is 0.
    #[allow(clippy::too_many_arguments)] // gemm_basic's own parameters, grouped per matrix
    unsafe fn gemm(
        m: usize,
        n: usize,
        k: usize,
        dst: (*mut Self, isize, isize),
        lhs: (*const Self, isize, isize),
        rhs: (*const Self, isize, isize),
        parallelism: Parallelism,
        add: bool,
    );
}

macro_rules! gemm_element {
    ($t:ty, $kernel:path) => {
        impl GemmElement for $t {
            #[allow(clippy::too_many_arguments)]
            unsafe fn gemm(
                m: usize,
                n: usize,
                k: usize,
                (dst, dst_cs, dst_rs): (*mut Self, isize, isize),
                (lhs, lhs_cs, lhs_rs): (*const Self, isize, isize),
                (rhs, rhs_cs, rhs_rs): (*const Self, isize, isize),
                parallelism: Parallelism,
                add: bool,
            ) {
                // SAFETY: the caller's contract is gemm_basic's (with `add`, dst's elements are initialised:
                // read_dst reads them).
                unsafe {
                    $kernel()(
                        m,
                        n,
                        k,
                        dst,
                        dst_cs,
                        dst_rs,
                        add,
                        lhs,
                        lhs_cs,
                        lhs_rs,
                        rhs,
                        rhs_cs,
                        rhs_rs,
                        if add { 1.0 } else { 0.0 },
                        1.0,
                        false,
                        false,
                        false,
                        parallelism,
                    )
                }
            }
        }
    };
}
gemm_element!(f32, gemm_f32::gemm::f32::get_gemm_fn);
gemm_element!(f64, gemm_f64::gemm::f64::get_gemm_fn);

fn gemm_batched<E: GemmElement>(
    a: &[E],
    la: &Layout,
    b: &[E],
    lb: &Layout,
    out: &mut [E],
    parallelism: Parallelism,
) {
    gemm_batched_into(a, la, b, lb, out, parallelism, false)
}

/// [`gemm_batched`], adding the product to `out` when `add`.
fn gemm_batched_into<E: GemmElement>(
    a: &[E],
    la: &Layout,
    b: &[E],
    lb: &Layout,
    out: &mut [E],
    parallelism: Parallelism,
    add: bool,
) {
    let (batch, m, k, n) = (la.dims()[0], la.dims()[1], la.dims()[2], lb.dims()[2]);
    let (sa, sb) = (la.strides(), lb.strides());
    // Every index gemm forms is `offset + p * batch_stride + i * row_stride + j * col_stride` with p, i, j inside
    // the view's dims, which `storage_extent` bounds (checked: a layout whose extent overflows is refused, not
    // wrapped into a small one); the destination is a dense m x n block of `out`. Both operands agree on the
    // batch and the inner size, and no dim is 0 (empty products never get here), so every offset is inside its
    // buffer. These are the kernel's own preconditions: a layout built by hand that breaks them panics here
    // rather than reaching gemm.
    let fits = |l: &Layout, len: usize| l.storage_extent().is_some_and(|e| e <= len);
    assert!(
        fits(la, a.len()) && fits(lb, b.len()),
        "matmul: an operand's layout reaches past its buffer"
    );
    assert!(
        lb.dims()[0] == batch && lb.dims()[1] == k && m > 0 && n > 0 && k > 0,
        "matmul: operand dims [{batch}, {m}, {k}] and {:?} do not chain into a non-empty product",
        lb.dims()
    );
    let block = m.checked_mul(n).filter(|&mn| {
        mn.checked_mul(batch)
            .is_some_and(|total| total <= out.len())
    });
    let block = block.expect("matmul: the output buffer is smaller than [batch, m, n]");
    // gemm takes strides as `isize`: every stride here is below the operand's extent, which fits a buffer.
    for p in 0..batch {
        let dst = &mut out[p * block..(p + 1) * block];
        let a_off = la.offset() + p * sa[0];
        let b_off = lb.offset() + p * sb[0];
        // gemm's microkernels prefer a column-major destination, so (as the `gemm` facade does for a row-major
        // one) compute the transpose: dst^T (n x m, column stride n, row stride 1) = b^T a^T.
        // SAFETY: `a_off` and `b_off` plus every `i * row_stride + j * col_stride` gemm forms stay below the
        // operands' extents, which the assertions above bound by their lengths; `dst` holds exactly the m x n
        // elements written with row stride `n` and column stride 1; no dim is 0 (asserted above).
        unsafe {
            E::gemm(
                n,
                m,
                k,
                (dst.as_mut_ptr(), n as isize, 1),
                (b.as_ptr().add(b_off), sb[1] as isize, sb[2] as isize),
                (a.as_ptr().add(a_off), sa[1] as isize, sa[2] as isize),
                parallelism,
                add,
            );
        }
    }
}

// SAFETY: `matmul` zeroes the output, then the product overwrites it.
unsafe impl MatmulKernels for Cpu {
    fn matmul<T: FloatDType>(
        (a, la): (&[T], &Layout),
        (b, lb): (&[T], &Layout),
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        matmul(a, la, b, lb, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    // These run under Miri in CI (`.ci/run`), which checks the pointer arithmetic handed to gemm.
    use super::*;
    use alloc::vec;

    /// `[B, M, K] x [B, K, N]` by the definition, reading both operands through their layouts.
    fn naive(a: &[f64], la: &Layout, b: &[f64], lb: &Layout) -> Vec<f64> {
        let (batch, m, k, n) = (la.dims()[0], la.dims()[1], la.dims()[2], lb.dims()[2]);
        let at = |l: &Layout, x: &[f64], i: [usize; 3]| {
            let s = l.strides();
            x[l.offset() + i[0] * s[0] + i[1] * s[1] + i[2] * s[2]]
        };
        let mut out = vec![0.0; batch * m * n];
        for p in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    out[(p * m + i) * n + j] = (0..k)
                        .map(|q| at(la, a, [p, i, q]) * at(lb, b, [p, q, j]))
                        .sum();
                }
            }
        }
        out
    }

    /// The kernel's product into a fresh vector.
    fn product(a: &[f64], la: &Layout, b: &[f64], lb: &Layout) -> Vec<f64> {
        let mut out =
            vec![core::mem::MaybeUninit::uninit(); la.dims()[0] * la.dims()[1] * lb.dims()[2]];
        matmul(a, la, b, lb, &mut out);
        // SAFETY: the kernel wrote every element of its output.
        out.into_iter()
            .map(|x| unsafe { x.assume_init() })
            .collect()
    }

    fn values(n: usize) -> Vec<f64> {
        (0..n).map(|i| ((i * 7) % 11) as f64 - 5.0).collect()
    }

    #[test]
    fn products_through_gemm_and_the_direct_loop_match_the_definition() {
        // 2 x 3 x 4 takes the direct loop, 2 x 9 x 9 x 9 (729 multiply-adds a batch) takes gemm; the right
        // operand is a transposed view, the left one a view at an offset, and one is shared by the batch.
        for (batch, m, k, n) in [(1, 2, 3, 4), (2, 9, 9, 9)] {
            let a = values(3 + batch * m * k);
            let b = values(batch * n * k);
            let la = Layout::from_parts(Dims::from_slice(&[batch, m, k]), &[m * k, k, 1], 3);
            let lb = Layout::from_parts(Dims::from_slice(&[batch, k, n]), &[n * k, 1, k], 0);
            let want = naive(&a, &la, &b, &lb);
            assert_eq!(product(&a, &la, &b, &lb), want, "{batch}x{m}x{k}x{n}");
            let shared = Layout::from_parts(Dims::from_slice(&[batch, k, n]), &[0, 1, k], 0);
            assert_eq!(
                product(&a, &la, &b, &shared),
                naive(&a, &la, &b, &shared),
                "shared right operand"
            );
        }
    }

    #[test]
    #[should_panic(expected = "reaches past its buffer")]
    fn a_layout_whose_extent_wraps_is_refused_before_gemm() {
        let a = [1.0f64; 2];
        let b = values(2 * 300);
        // The last index, 2^64 + 1, wrapped to 1 (inside the 2-element buffer) before the extent was checked.
        let la = Layout::from_parts(Dims::from_slice(&[1, 2, 2]), &[0, 1 << 63, 1 << 63], 0);
        let lb = Layout::contiguous(Dims::from_slice(&[1, 2, 300]));
        product(&a, &la, &b, &lb);
    }

    #[test]
    #[should_panic(expected = "reaches past its buffer")]
    fn a_layout_past_the_end_is_refused_before_gemm() {
        let a = values(9 * 9);
        let la = Layout::from_parts(Dims::from_slice(&[1, 9, 9]), &[0, 9, 1], 1); // one element too far
        product(
            &a,
            &la,
            &a,
            &Layout::contiguous(Dims::from_slice(&[1, 9, 9])),
        );
    }
}
