//! The host device: storage is a [`CpuStorage`], inline for small buffers and an `Arc<Vec<T>>` shared by views
//! and clones for larger ones, whose freed buffers the [`pool`] hands to later outputs of the same size.
//!
//! Every kernel walks its operands with [`for_each_row`]: dense operands collapse to one row and run a plain
//! slice loop the compiler vectorises; strided ones (transposed, narrowed, broadcast) walk row by row. The
//! `_into` / `_assign` kernels write into a buffer only its tensor holds (`CpuStorage::get_mut`), so nothing that
//! shares it can observe the write; a shared buffer gets a fresh copy instead.

mod along_axis;
mod conv;
mod elementwise;
mod matmul;
mod optim;
mod pool;
mod pooling;
mod reduce;
mod storage;

#[cfg(feature = "std")]
pub use pool::MemoryStats as CpuMemoryStats;
pub use storage::CpuStorage;

use elementwise::{dense_view, map_view};

use super::{Device, Kernels};
use crate::dtype::{FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::{Layout, Strided, ViewOf};
use crate::ops::{AdamStep, AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, ReduceOp, UnaryOp};
use crate::shape::{Dims, Shape, MAX_RANK};
use alloc::vec::Vec;

/// The error of an allocation of `n` elements of `T` that the allocator refused.
#[cold]
fn out_of_memory<T>(op: &'static str, n: usize) -> crate::error::Error {
    crate::error::Error::OutOfMemory {
        op,
        bytes: n.saturating_mul(core::mem::size_of::<T>()),
    }
}

/// The CPU. Zero-sized; tensors on it keep their elements in shared host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu;

impl Device for Cpu {}

impl Kernels for Cpu {
    type Buffer<T: WithDType> = CpuStorage<T>;
    type Storage<T: WithDType, S: Shape> = CpuStorage<T>;
    type View<S: Shape> = Strided<S>;
    const NAME: &'static str = "cpu";

    #[inline(always)]
    fn buffer<T: WithDType, S: Shape>(storage: &CpuStorage<T>) -> &CpuStorage<T> {
        storage
    }

    #[inline]
    fn view<T: WithDType, S0: Shape, S: Shape>(
        storage: &CpuStorage<T>,
        layout: &Layout,
    ) -> Result<(CpuStorage<T>, Strided<S>)> {
        Ok((storage.clone(), Strided::from_layout(layout)))
    }

    fn full<T: WithDType, S: Shape>(n: usize, value: T) -> Result<CpuStorage<T>> {
        CpuStorage::try_full(n, value).ok_or_else(|| out_of_memory::<T>("full", n))
    }

    fn from_slice<T: WithDType, S: Shape>(data: &[T]) -> Result<CpuStorage<T>> {
        CpuStorage::try_from_slice(data).ok_or_else(|| out_of_memory::<T>("from_slice", data.len()))
    }

    fn from_vec<T: WithDType, S: Shape>(data: Vec<T>) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_vec(data))
    }

    #[inline]
    fn host_slice<T: WithDType>(buffer: &CpuStorage<T>) -> Option<&[T]> {
        Some(buffer)
    }

    #[inline]
    fn host_slice_mut<T: WithDType, S: Shape>(storage: &mut CpuStorage<T>) -> Option<&mut [T]> {
        storage.get_mut()
    }

    #[inline(always)]
    fn host_zeros<T: WithDType, S: Shape>(n: usize) -> Option<CpuStorage<T>> {
        Some(CpuStorage::filled_by(n, |_| {}))
    }

    fn to_vec<T: WithDType>(buffer: &CpuStorage<T>, layout: &Layout) -> Result<Vec<T>> {
        Ok(map_view(buffer, layout, |x| x))
    }

    #[inline]
    fn copy_strided<T: WithDType, S: Shape>(
        buffer: &CpuStorage<T>,
        layout: &Layout,
    ) -> Result<CpuStorage<T>> {
        Ok(kernels::copy(buffer, layout))
    }

    #[inline]
    fn cast<T: WithDType, U: WithDType, S: Shape>(
        buffer: &CpuStorage<T>,
        layout: &Layout,
    ) -> Result<CpuStorage<U>> {
        Ok(kernels::cast::<T, U>(buffer, layout))
    }

    #[inline]
    fn unary<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        buffer: &CpuStorage<T>,
        layout: &Layout,
    ) -> Result<CpuStorage<T>> {
        Ok(kernels::unary(op, buffer, layout))
    }

    #[inline]
    fn binary<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        lhs: (&CpuStorage<T>, &Layout),
        rhs: (&CpuStorage<T>, &Layout),
    ) -> Result<CpuStorage<T>> {
        Ok(kernels::binary(op, lhs, rhs))
    }

    #[inline]
    fn unary_into<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        src: (&CpuStorage<T>, &Layout),
        out: &mut CpuStorage<T>,
    ) -> Result<()> {
        kernels::unary_into(op, src, out);
        Ok(())
    }

    #[inline]
    fn binary_into<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        lhs: (&CpuStorage<T>, &Layout),
        rhs: (&CpuStorage<T>, &Layout),
        out: &mut CpuStorage<T>,
    ) -> Result<()> {
        kernels::binary_into(op, lhs, rhs, out);
        Ok(())
    }

    #[inline]
    fn unary_assign<T: WithDType, S: Shape, Op: UnaryOp<T>>(
        op: Op,
        dst: &mut CpuStorage<T>,
        dims: &Dims,
    ) -> Result<()> {
        kernels::unary_assign(op, dst, dims);
        Ok(())
    }

    #[inline]
    fn binary_assign<T: WithDType, S: Shape, Op: BinaryOp<T>>(
        op: Op,
        dst: &mut CpuStorage<T>,
        rhs: (&CpuStorage<T>, &Layout),
    ) -> Result<()> {
        kernels::binary_assign(op, dst, rhs);
        Ok(())
    }

    #[inline]
    fn compare<T: WithDType, S: Shape>(
        op: CmpOp,
        lhs: (&CpuStorage<T>, &Layout),
        rhs: (&CpuStorage<T>, &Layout),
    ) -> Result<CpuStorage<u8>> {
        Ok(kernels::compare(op, lhs, rhs))
    }

    #[inline]
    fn reduce<T: WithDType, S: Shape, Op: ReduceOp<T>>(
        op: Op,
        buffer: &CpuStorage<T>,
        layout: &Layout,
        reduced: &[bool; MAX_RANK],
    ) -> Result<CpuStorage<Op::Out>> {
        Ok(CpuStorage::from_output(reduce::reduce(
            op, buffer, layout, reduced,
        )))
    }

    #[inline]
    fn concat<T: WithDType, S: Shape>(
        parts: &[(&CpuStorage<T>, &Layout)],
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        kernels::concat(parts, axis)
    }

    #[inline]
    fn gather<T: WithDType, I: IndexDType, S: Shape>(
        op: &'static str,
        src: (&CpuStorage<T>, &Layout),
        idx: (&CpuStorage<I>, &Layout),
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        kernels::gather(op, src, idx, axis)
    }

    #[inline]
    fn scatter_add<T: WithDType, I: IndexDType, S: Shape>(
        op: &'static str,
        dst: (&CpuStorage<T>, &Layout),
        idx: (&CpuStorage<I>, &Layout),
        src: (&CpuStorage<T>, &Layout),
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        kernels::scatter_add(op, dst, idx, src, axis)
    }

    #[inline]
    fn along_axis<T: FloatDType, S: Shape>(
        op: AlongAxis,
        buffer: &CpuStorage<T>,
        layout: &Layout,
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_output(along_axis::run(
            op, buffer, layout, axis,
        )))
    }

    #[inline]
    fn conv2d<T: FloatDType, S: Shape>(
        (x, lx): (&CpuStorage<T>, &Layout),
        (w, lw): (&CpuStorage<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_output(conv::conv2d(x, lx, w, lw, params)))
    }

    #[inline]
    fn conv_transpose2d<T: FloatDType, S: Shape>(
        (x, lx): (&CpuStorage<T>, &Layout),
        (w, lw): (&CpuStorage<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_output(conv::conv_transpose2d(
            x, lx, w, lw, params,
        )))
    }

    #[inline]
    fn pool2d<T: FloatDType, S: Shape>(
        pool: Pool,
        (x, lx): (&CpuStorage<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_output(pooling::pool2d(
            pool, x, lx, kernel, params,
        )))
    }

    #[inline]
    fn matmul<T: FloatDType, S: Shape>(
        (a, la): (&CpuStorage<T>, &Layout),
        (b, lb): (&CpuStorage<T>, &Layout),
    ) -> Result<CpuStorage<T>> {
        Ok(CpuStorage::from_output(matmul::matmul(a, la, b, lb)))
    }

    #[inline]
    fn conv2d_weight_grad<T: FloatDType, S: Shape>(
        (x, lx): (&CpuStorage<T>, &Layout),
        (g, lg): (&CpuStorage<T>, &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
    ) -> Result<Option<CpuStorage<T>>> {
        Ok(Some(CpuStorage::from_output(conv::conv2d_weight_grad(
            x, lx, g, lg, kernel, params,
        ))))
    }

    #[inline]
    fn max_pool2d_backward<T: FloatDType, S: Shape>(
        x: (&CpuStorage<T>, &Layout),
        y: (&CpuStorage<T>, &Layout),
        g: (&CpuStorage<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<Option<CpuStorage<T>>> {
        Ok(Some(kernels::max_pool2d_backward(x, y, g, kernel, params)))
    }

    #[inline]
    fn adam_step<T: FloatDType, S: Shape>(
        w: &mut CpuStorage<T>,
        m: &mut CpuStorage<T>,
        v: &mut CpuStorage<T>,
        grad: (&CpuStorage<T>, &Layout),
        step: AdamStep,
    ) -> Result<bool> {
        Ok(kernels::adam_step(w, m, v, grad, step))
    }

    #[inline]
    fn where_cond<T: WithDType, S: Shape>(
        mask: (&CpuStorage<u8>, &Layout),
        on_true: (&CpuStorage<T>, &Layout),
        on_false: (&CpuStorage<T>, &Layout),
    ) -> Result<CpuStorage<T>> {
        Ok(kernels::where_cond(mask, on_true, on_false))
    }
}

/// The kernels' bodies, generic over element type and op but not over the output's shape (which the `Cpu`
/// storage does not depend on), so each is compiled once per element type and op.
mod kernels {
    use super::elementwise::{
        collect_into, dense_view, map_view, map_view_storage, zip_views_storage,
    };
    use super::{optim, pool, pooling, CpuStorage};
    use crate::device::host::elementwise::{
        as_slots, concat_into, map_view_into, update_dense, update_zip, where_into, zip_views_into,
    };
    use crate::device::host::indexing;
    use crate::dtype::{cast as cast_one, FloatDType, IndexDType, WithDType};
    use crate::error::Result;
    use crate::layout::Layout;
    use crate::ops::{AdamStep, BinaryOp, CmpOp, Conv2dParams, UnaryOp};
    use crate::shape::Dims;
    use alloc::vec::Vec;

    pub(super) fn copy<T: WithDType>(src: &[T], layout: &Layout) -> CpuStorage<T> {
        map_view_storage(src, layout, |x| x)
    }

    pub(super) fn cast<T: WithDType, U: WithDType>(src: &[T], layout: &Layout) -> CpuStorage<U> {
        map_view_storage(src, layout, cast_one::<T, U>)
    }

    pub(super) fn unary<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        src: &[T],
        layout: &Layout,
    ) -> CpuStorage<T> {
        map_view_storage(src, layout, |x| op.apply(x))
    }

    pub(super) fn binary<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        (a, la): (&CpuStorage<T>, &Layout),
        (b, lb): (&CpuStorage<T>, &Layout),
    ) -> CpuStorage<T> {
        zip_views_storage((a, la), (b, lb), |x, y| op.apply(x, y))
    }

    pub(super) fn unary_into<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        (src, ls): (&CpuStorage<T>, &Layout),
        out: &mut CpuStorage<T>,
    ) {
        match out.get_mut() {
            // SAFETY: `map_view_into` writes only computed values.
            Some(o) => map_view_into(unsafe { as_slots(&mut o[..ls.numel()]) }, src, ls, |x| {
                op.apply(x)
            }),
            None => *out = unary(op, src, ls),
        }
    }

    pub(super) fn binary_into<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        (a, la): (&CpuStorage<T>, &Layout),
        (b, lb): (&CpuStorage<T>, &Layout),
        out: &mut CpuStorage<T>,
    ) {
        match out.get_mut() {
            // SAFETY: `zip_views_into` writes only computed values.
            Some(o) => zip_views_into(
                unsafe { as_slots(&mut o[..la.numel()]) },
                (a, la),
                (b, lb),
                |x, y| op.apply(x, y),
            ),
            None => *out = binary(op, (a, la), (b, lb)),
        }
    }

    pub(super) fn unary_assign<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        dst: &mut CpuStorage<T>,
        dims: &Dims,
    ) {
        let layout = Layout::contiguous(*dims);
        match dst.get_mut() {
            Some(d) => update_dense(&mut d[..layout.numel()], |x| op.apply(x)),
            None => *dst = unary(op, dst, &layout),
        }
    }

    pub(super) fn binary_assign<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        dst: &mut CpuStorage<T>,
        (b, lb): (&CpuStorage<T>, &Layout),
    ) {
        match dst.get_mut() {
            Some(d) => update_zip(&mut d[..lb.numel()], (b, lb), |x, y| op.apply(x, y)),
            None => {
                let ld = Layout::contiguous(*lb.dims());
                *dst = binary(op, (dst, &ld), (b, lb))
            }
        }
    }

    pub(super) fn compare<T: WithDType>(
        op: CmpOp,
        (a, la): (&CpuStorage<T>, &Layout),
        (b, lb): (&CpuStorage<T>, &Layout),
    ) -> CpuStorage<u8> {
        zip_views_storage((a, la), (b, lb), |x, y| op.apply(x, y) as u8)
    }

    pub(super) fn concat<T: WithDType>(
        parts: &[(&CpuStorage<T>, &Layout)],
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        let n = parts.iter().map(|(_, l)| l.numel()).sum();
        let mut out = pool::filled(n, T::ZERO);
        let slices: Vec<(&[T], &Layout)> = parts.iter().map(|&(s, l)| (&s[..], l)).collect();
        concat_into(&mut out, &slices, axis)?;
        Ok(CpuStorage::from_output(out))
    }

    pub(super) fn gather<T: WithDType, I: IndexDType>(
        op: &'static str,
        (src, ls): (&CpuStorage<T>, &Layout),
        (idx, li): (&CpuStorage<I>, &Layout),
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        let mut err = Ok(());
        // SAFETY: `gather_into` writes every one of the index view's `li.numel()` positions (zero for a bad
        // index, whose error is returned instead of the buffer).
        let out = unsafe {
            collect_into(li.numel(), |out| {
                err = indexing::gather_into(op, out, (src, ls), (idx, li), axis)
            })
        };
        err.map(|()| CpuStorage::from_output(out))
    }

    pub(super) fn scatter_add<T: WithDType, I: IndexDType>(
        op: &'static str,
        (dst, ld): (&CpuStorage<T>, &Layout),
        (idx, li): (&CpuStorage<I>, &Layout),
        (src, ls): (&CpuStorage<T>, &Layout),
        axis: usize,
    ) -> Result<CpuStorage<T>> {
        let mut out = map_view(dst, ld, |x| x);
        indexing::scatter_add(op, &mut out, ld, idx, li, src, ls, axis)?;
        Ok(CpuStorage::from_output(out))
    }

    pub(super) fn max_pool2d_backward<T: FloatDType>(
        (x, lx): (&CpuStorage<T>, &Layout),
        (y, ly): (&CpuStorage<T>, &Layout),
        (g, lg): (&CpuStorage<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> CpuStorage<T> {
        let (y, g) = (dense_view(y, ly), dense_view(g, lg));
        CpuStorage::from_output(pooling::max_pool2d_backward(x, lx, &y, &g, kernel, params))
    }

    pub(super) fn adam_step<T: FloatDType>(
        w: &mut CpuStorage<T>,
        m: &mut CpuStorage<T>,
        v: &mut CpuStorage<T>,
        (g, lg): (&CpuStorage<T>, &Layout),
        step: AdamStep,
    ) -> bool {
        let (Some(range), Some(w), Some(m), Some(v)) =
            (lg.contiguous_range(), w.get_mut(), m.get_mut(), v.get_mut())
        else {
            return false;
        };
        let n = range.len();
        optim::adam(&mut w[..n], &mut m[..n], &mut v[..n], &g[range], step);
        true
    }

    pub(super) fn where_cond<T: WithDType>(
        (m, lm): (&CpuStorage<u8>, &Layout),
        (t, lt): (&CpuStorage<T>, &Layout),
        (f, lf): (&CpuStorage<T>, &Layout),
    ) -> CpuStorage<T> {
        // SAFETY: `where_into` writes one value per element of the (common) view: all `lm.numel()` slots.
        unsafe { CpuStorage::collect(lm.numel(), |out| where_into(out, (m, lm), (t, lt), (f, lf))) }
    }
}
