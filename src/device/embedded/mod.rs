//! The embedded device ([`Embedded`]): every tensor is one dense row-major array of its static shape, held by
//! value, and every kernel runs the host's heap-free loops ([`crate::device::host`]) into a fresh array.

mod conv;
mod storage;

pub use storage::ArrayStorage;

use super::host::along_axis::along_axis_into;
use super::host::elementwise::{
    as_slots, concat_into, map_view_into, update_dense, update_zip, where_into, zip_views_into,
};
use super::host::{indexing, matmul, reduce};
use super::{Device, Kernels};
use crate::dtype::{cast, FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::{Dense, Layout};
use crate::ops::{AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, ReduceOp, UnaryOp};
use crate::shape::{Dims, Shape, MAX_RANK};
#[cfg(feature = "alloc")]
use alloc::vec::Vec;

/// The embedded device: every tensor is one dense row-major array of its static shape, held by value.
///
/// `Tensor<f32, Rank2<4, 4>, Embedded>` is a `[[f32; 4]; 4]` and nothing more: no heap (the device works without
/// the `alloc` feature), no reference count, no strides. Its size is `size_of::<S::Array<T>>()`, so a model's
/// memory is a compile-time fact, and a tensor can sit in a `static`: weights in the binary, built with
/// [`Tensor::from_array_const`](crate::Tensor::from_array_const). Shapes must be static: a runtime (`usize`)
/// dim fails the build.
///
/// What changes against `Cpu` is the cost model, not the API: the same generic code runs
/// on both. Views (`t()`, `narrow`, `broadcast`, `.i(..)`) are copies into a fresh array, since there is no
/// shared buffer to view; elementwise ops, reductions, softmax and the norms, matmul, indexing, joining,
/// convolution and pooling run on the calling thread with loops that need no scratch memory (a direct
/// convolution instead of the CPU's im2col + GEMM), and tiny tensors take the same inline paths as on the CPU.
/// Nothing allocates, and an op fails only for runtime data (an index out of range). Tensors live where their
/// owner puts them (the stack, a `static`), so size them for the target. Autograd, `nn` and the optimizers are
/// for `Cpu` and `Cuda`; only the `Vec` forms (`to_vec`, `from_vec`) need the `alloc` feature.
///
/// ```
/// use typed_tensor::prelude::*;
/// let a = Tensor::<f32, _, Embedded>::from_array([[1., 2.], [3., 4.]]);
/// let b = a.t();                                   // a transposed copy
/// let c = a.matmul(&b);
/// assert_eq!(c.to_array(), [[5., 11.], [11., 25.]]);
/// assert_eq!(core::mem::size_of_val(&c), 16);      // four f32, nothing else
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Embedded;

impl Device for Embedded {}

/// A fresh array of shape `S` whose elements `fill` writes.
#[inline(always)]
fn fresh<T: WithDType, S: Shape>(fill: impl FnOnce(&mut [T])) -> ArrayStorage<T, S> {
    let mut out = ArrayStorage::zeroed();
    fill(out.as_mut_slice());
    out
}

impl Kernels for Embedded {
    type Buffer<T: WithDType> = [T];
    type Storage<T: WithDType, S: Shape> = ArrayStorage<T, S>;
    type View<S: Shape> = Dense;
    const NAME: &'static str = "embedded";

    #[inline(always)]
    fn buffer<T: WithDType, S: Shape>(storage: &ArrayStorage<T, S>) -> &[T] {
        storage.as_slice()
    }

    #[inline]
    fn view<T: WithDType, S0: Shape, S: Shape>(
        storage: &ArrayStorage<T, S0>,
        layout: &Layout,
    ) -> Result<(ArrayStorage<T, S>, Dense)> {
        Ok((Self::copy_strided(storage.as_slice(), layout)?, Dense))
    }

    #[inline]
    fn full<T: WithDType, S: Shape>(n: usize, value: T) -> Result<ArrayStorage<T, S>> {
        debug_assert_eq!(n, ArrayStorage::<T, S>::LEN);
        Ok(fresh(|out| out.fill(value)))
    }

    #[inline]
    fn from_slice<T: WithDType, S: Shape>(data: &[T]) -> Result<ArrayStorage<T, S>> {
        Ok(fresh(|out| out.copy_from_slice(data)))
    }

    #[inline(always)]
    fn host_slice<T: WithDType>(buffer: &[T]) -> Option<&[T]> {
        Some(buffer)
    }

    #[inline(always)]
    fn host_slice_mut<T: WithDType, S: Shape>(
        storage: &mut ArrayStorage<T, S>,
    ) -> Option<&mut [T]> {
        Some(storage.as_mut_slice())
    }

    #[inline(always)]
    fn host_zeros<T: WithDType, S: Shape>(n: usize) -> Option<ArrayStorage<T, S>> {
        debug_assert_eq!(n, ArrayStorage::<T, S>::LEN);
        Some(ArrayStorage::zeroed())
    }

    #[cfg(feature = "alloc")]
    fn to_vec<T: WithDType>(buffer: &[T], layout: &Layout) -> Result<Vec<T>> {
        let mut out = alloc::vec![T::ZERO; layout.numel()];
        // SAFETY: `map_view_into` writes only the view's elements.
        map_view_into(unsafe { as_slots(&mut out) }, buffer, layout, |x| x);
        Ok(out)
    }

    #[inline]
    fn copy_strided<T: WithDType, S: Shape>(
        buffer: &[T],
        layout: &Layout,
    ) -> Result<ArrayStorage<T, S>> {
        // SAFETY: the host loop `map_view_into` writes only computed values.
        Ok(unsafe { ArrayStorage::collect(|out| map_view_into(out, buffer, layout, |x| x)) })
    }

    #[inline]
    fn cast<T: WithDType, U: WithDType, S: Shape>(
        buffer: &[T],
        layout: &Layout,
    ) -> Result<ArrayStorage<U, S>> {
        // SAFETY: the host loop `map_view_into` writes only computed values.
        Ok(
            unsafe {
                ArrayStorage::collect(|out| map_view_into(out, buffer, layout, cast::<T, U>))
            },
        )
    }

    #[inline]
    fn unary<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        buffer: &[T],
        layout: &Layout,
    ) -> Result<ArrayStorage<T, S>> {
        // SAFETY: the host loop `map_view_into` writes only computed values.
        Ok(unsafe {
            ArrayStorage::collect(|out| map_view_into(out, buffer, layout, |x| op.apply(x)))
        })
    }

    #[inline]
    fn binary<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        lhs: (&[T], &Layout),
        rhs: (&[T], &Layout),
    ) -> Result<ArrayStorage<T, S>> {
        // SAFETY: the host loop `zip_views_into` writes only computed values.
        Ok(unsafe {
            ArrayStorage::collect(|out| zip_views_into(out, lhs, rhs, |x, y| op.apply(x, y)))
        })
    }

    #[inline]
    fn unary_into<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        (src, ls): (&[T], &Layout),
        out: &mut ArrayStorage<T, S>,
    ) -> Result<()> {
        let out = &mut out.as_mut_slice()[..ls.numel()];
        // SAFETY: `map_view_into` writes only computed values.
        map_view_into(unsafe { as_slots(out) }, src, ls, |x| op.apply(x));
        Ok(())
    }

    #[inline]
    fn binary_into<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        lhs: (&[T], &Layout),
        rhs: (&[T], &Layout),
        out: &mut ArrayStorage<T, S>,
    ) -> Result<()> {
        let out = &mut out.as_mut_slice()[..lhs.1.numel()];
        // SAFETY: `zip_views_into` writes only computed values.
        zip_views_into(unsafe { as_slots(out) }, lhs, rhs, |x, y| op.apply(x, y));
        Ok(())
    }

    #[inline]
    fn unary_assign<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        dst: &mut ArrayStorage<T, S>,
        dims: &Dims,
    ) -> Result<()> {
        update_dense(&mut dst.as_mut_slice()[..dims.numel()], |x| op.apply(x));
        Ok(())
    }

    #[inline]
    fn binary_assign<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        dst: &mut ArrayStorage<T, S>,
        rhs: (&[T], &Layout),
    ) -> Result<()> {
        let dst = &mut dst.as_mut_slice()[..rhs.1.numel()];
        update_zip(dst, rhs, |x, y| op.apply(x, y));
        Ok(())
    }

    #[inline]
    fn compare<T: WithDType, S: Shape>(
        op: CmpOp,
        lhs: (&[T], &Layout),
        rhs: (&[T], &Layout),
    ) -> Result<ArrayStorage<u8, S>> {
        // SAFETY: the host loop `zip_views_into` writes only computed values.
        Ok(unsafe {
            ArrayStorage::collect(|out| zip_views_into(out, lhs, rhs, |x, y| op.apply(x, y) as u8))
        })
    }

    #[inline]
    fn reduce<T: WithDType, S: Shape, Op: ReduceOp<T>>(
        op: Op,
        buffer: &[T],
        layout: &Layout,
        reduced: &[bool; MAX_RANK],
    ) -> Result<ArrayStorage<Op::Out, S>> {
        // SAFETY: the host loop `reduce_rows_into` writes only computed values.
        Ok(unsafe {
            ArrayStorage::collect(|out| reduce::reduce_rows_into(&op, buffer, layout, reduced, out))
        })
    }

    #[inline]
    fn concat<T: WithDType, S: Shape>(
        parts: &[(&[T], &Layout)],
        axis: usize,
    ) -> Result<ArrayStorage<T, S>> {
        let mut out = ArrayStorage::zeroed();
        concat_into(out.as_mut_slice(), parts, axis)?;
        Ok(out)
    }

    #[inline]
    fn gather<T: WithDType, I: IndexDType, S: Shape>(
        op: &'static str,
        src: (&[T], &Layout),
        idx: (&[I], &Layout),
        axis: usize,
    ) -> Result<ArrayStorage<T, S>> {
        // SAFETY: `gather_into` writes only values (a bad index's position gets zero).
        unsafe { ArrayStorage::try_collect(|out| indexing::gather_into(op, out, src, idx, axis)) }
    }

    #[inline]
    fn scatter_add<T: WithDType, I: IndexDType, S: Shape>(
        op: &'static str,
        (dst, ld): (&[T], &Layout),
        (idx, li): (&[I], &Layout),
        (src, ls): (&[T], &Layout),
        axis: usize,
    ) -> Result<ArrayStorage<T, S>> {
        let mut out = Self::copy_strided::<T, S>(dst, ld)?;
        indexing::scatter_add(op, out.as_mut_slice(), ld, idx, li, src, ls, axis)?;
        Ok(out)
    }

    #[inline]
    fn along_axis<T: FloatDType, S: Shape>(
        op: AlongAxis,
        buffer: &[T],
        layout: &Layout,
        axis: usize,
    ) -> Result<ArrayStorage<T, S>> {
        Ok(fresh(|out| along_axis_into(op, buffer, layout, axis, out)))
    }

    #[inline]
    fn conv2d<T: FloatDType, S: Shape>(
        input: (&[T], &Layout),
        weight: (&[T], &Layout),
        params: Conv2dParams,
    ) -> Result<ArrayStorage<T, S>> {
        Ok(fresh(|out| conv::conv2d(input, weight, params, out)))
    }

    #[inline]
    fn conv_transpose2d<T: FloatDType, S: Shape>(
        input: (&[T], &Layout),
        weight: (&[T], &Layout),
        params: Conv2dParams,
    ) -> Result<ArrayStorage<T, S>> {
        Ok(fresh(|out| {
            conv::conv_transpose2d(input, weight, params, out)
        }))
    }

    #[inline]
    fn pool2d<T: FloatDType, S: Shape>(
        pool: Pool,
        input: (&[T], &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<ArrayStorage<T, S>> {
        Ok(fresh(|out| conv::pool2d(pool, input, kernel, params, out)))
    }

    #[inline]
    fn matmul<T: FloatDType, S: Shape>(
        (a, la): (&[T], &Layout),
        (b, lb): (&[T], &Layout),
    ) -> Result<ArrayStorage<T, S>> {
        Ok(fresh(|out| matmul::direct(a, la, b, lb, out)))
    }

    #[inline]
    fn where_cond<T: WithDType, S: Shape>(
        mask: (&[u8], &Layout),
        on_true: (&[T], &Layout),
        on_false: (&[T], &Layout),
    ) -> Result<ArrayStorage<T, S>> {
        // SAFETY: the host loop `where_into` writes only computed values.
        Ok(unsafe { ArrayStorage::collect(|out| where_into(out, mask, on_true, on_false)) })
    }
}
