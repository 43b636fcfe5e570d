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
mod indexing;
mod matmul;
mod optim;
mod pool;
mod pooling;
mod reduce;
mod storage;

pub(crate) use matmul::{matmul_static, static_dims};
#[cfg(feature = "std")]
pub use pool::MemoryStats as CpuMemoryStats;
pub(crate) use reduce::reduce_small;
pub use storage::{CpuStorage, INLINE_BYTES};

use elementwise::{
    as_slots, dense_view, map_view, map_view_into, map_view_storage, update_dense, update_zip,
    zip_views_into, zip_views_storage,
};

use super::{Device, Kernels};
use crate::dtype::{cast, FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use crate::ops::{AdamStep, AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, ReduceOp, UnaryOp};
use crate::shape::{Dims, MAX_RANK};
use alloc::vec::Vec;

/// The CPU. Zero-sized; tensors on it keep their elements in shared host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu;

impl Device for Cpu {}

impl Kernels for Cpu {
    type Storage<T: WithDType> = CpuStorage<T>;
    const NAME: &'static str = "cpu";

    fn full<T: WithDType>(n: usize, value: T) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::full(n, value))
    }

    fn from_slice<T: WithDType>(data: &[T]) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_slice(data))
    }

    fn from_vec<T: WithDType>(data: Vec<T>) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_vec(data))
    }

    #[inline]
    fn host_slice<T: WithDType>(storage: &Self::Storage<T>) -> Option<&[T]> {
        Some(storage)
    }

    #[inline]
    fn host_slice_mut<T: WithDType>(storage: &mut Self::Storage<T>) -> Option<&mut [T]> {
        storage.get_mut()
    }

    #[inline(always)]
    fn host_zeros<T: WithDType>(n: usize) -> Option<Self::Storage<T>> {
        Some(CpuStorage::filled_by(n, |_| {}))
    }

    fn to_vec<T: WithDType>(storage: &Self::Storage<T>, layout: &Layout) -> Result<Vec<T>> {
        Ok(map_view(storage, layout, |x| x))
    }

    fn copy_strided<T: WithDType>(
        storage: &Self::Storage<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<T>> {
        Ok(map_view_storage(storage, layout, |x| x))
    }

    fn cast<T: WithDType, U: WithDType>(
        storage: &Self::Storage<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<U>> {
        Ok(map_view_storage(storage, layout, cast::<T, U>))
    }

    fn unary<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        storage: &Self::Storage<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<T>> {
        Ok(map_view_storage(storage, layout, |x| op.apply(x)))
    }

    fn binary<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<T>> {
        Ok(zip_views_storage((a, la), (b, lb), |x, y| op.apply(x, y)))
    }

    fn unary_into<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        (src, ls): (&Self::Storage<T>, &Layout),
        out: &mut Self::Storage<T>,
    ) -> Result<()> {
        match out.get_mut() {
            Some(o) => map_view_into(as_slots(&mut o[..ls.numel()]), src, ls, |x| op.apply(x)),
            None => *out = Self::unary(op, src, ls)?,
        }
        Ok(())
    }

    fn binary_into<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
        out: &mut Self::Storage<T>,
    ) -> Result<()> {
        match out.get_mut() {
            Some(o) => zip_views_into(as_slots(&mut o[..la.numel()]), (a, la), (b, lb), |x, y| {
                op.apply(x, y)
            }),
            None => *out = Self::binary(op, (a, la), (b, lb))?,
        }
        Ok(())
    }

    fn unary_assign<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        dst: &mut Self::Storage<T>,
        dims: &Dims,
    ) -> Result<()> {
        let layout = Layout::contiguous(*dims);
        match dst.get_mut() {
            Some(d) => update_dense(&mut d[..layout.numel()], |x| op.apply(x)),
            None => *dst = Self::unary(op, dst, &layout)?,
        }
        Ok(())
    }

    fn binary_assign<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        dst: &mut Self::Storage<T>,
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<()> {
        match dst.get_mut() {
            Some(d) => update_zip(&mut d[..lb.numel()], (b, lb), |x, y| op.apply(x, y)),
            None => {
                let ld = Layout::contiguous(*lb.dims());
                *dst = Self::binary(op, (dst, &ld), (b, lb))?
            }
        }
        Ok(())
    }

    fn compare<T: WithDType>(
        op: CmpOp,
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<u8>> {
        Ok(zip_views_storage((a, la), (b, lb), |x, y| {
            op.apply(x, y) as u8
        }))
    }

    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        op: Op,
        storage: &Self::Storage<T>,
        layout: &Layout,
        reduced: &[bool; MAX_RANK],
    ) -> Result<Self::Storage<Op::Out>> {
        Ok(CpuStorage::from_output(reduce::reduce(
            op, storage, layout, reduced,
        )))
    }

    fn concat<T: WithDType>(
        parts: &[(&Self::Storage<T>, &Layout)],
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        let mut dims = *parts[0].1.dims();
        dims.as_mut_slice()[axis] = parts.iter().map(|(_, l)| l.dims()[axis]).sum();
        let whole = Layout::contiguous(dims);
        let mut out = pool::filled(whole.numel(), T::ZERO);
        let mut start = 0;
        for (src, l) in parts {
            let len = l.dims()[axis];
            let slab = whole.narrow("cat", axis, start, len)?;
            for_each_row(l.dims(), [l, &slab], |[so, oo], n, [ss, os]| {
                for i in 0..n {
                    out[oo + i * os] = src[so + i * ss];
                }
            });
            start += len;
        }
        Ok(CpuStorage::from_output(out))
    }

    fn gather<T: WithDType, I: IndexDType>(
        op: &'static str,
        (src, ls): (&Self::Storage<T>, &Layout),
        (idx, li): (&Self::Storage<I>, &Layout),
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_output(indexing::gather(
            op, src, ls, idx, li, axis,
        )?))
    }

    fn scatter_add<T: WithDType, I: IndexDType>(
        op: &'static str,
        (dst, ld): (&Self::Storage<T>, &Layout),
        (idx, li): (&Self::Storage<I>, &Layout),
        (src, ls): (&Self::Storage<T>, &Layout),
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        let mut out = map_view(dst, ld, |x| x);
        indexing::scatter_add(op, &mut out, ld, idx, li, src, ls, axis)?;
        Ok(CpuStorage::from_output(out))
    }

    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        storage: &Self::Storage<T>,
        layout: &Layout,
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_output(along_axis::run(
            op, storage, layout, axis,
        )))
    }

    fn conv2d<T: FloatDType>(
        (x, lx): (&Self::Storage<T>, &Layout),
        (w, lw): (&Self::Storage<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_output(conv::conv2d(x, lx, w, lw, params)))
    }

    fn conv_transpose2d<T: FloatDType>(
        (x, lx): (&Self::Storage<T>, &Layout),
        (w, lw): (&Self::Storage<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_output(conv::conv_transpose2d(
            x, lx, w, lw, params,
        )))
    }

    fn pool2d<T: FloatDType>(
        pool: Pool,
        (x, lx): (&Self::Storage<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_output(pooling::pool2d(
            pool, x, lx, kernel, params,
        )))
    }

    fn matmul<T: FloatDType>(
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<T>> {
        Ok(CpuStorage::from_output(matmul::matmul(a, la, b, lb)))
    }

    fn conv2d_weight_grad<T: FloatDType>(
        (x, lx): (&Self::Storage<T>, &Layout),
        (g, lg): (&Self::Storage<T>, &Layout),
        kernel: [usize; 2],
        params: Conv2dParams,
    ) -> Result<Option<Self::Storage<T>>> {
        Ok(Some(CpuStorage::from_output(conv::conv2d_weight_grad(
            x, lx, g, lg, kernel, params,
        ))))
    }

    fn max_pool2d_backward<T: FloatDType>(
        (x, lx): (&Self::Storage<T>, &Layout),
        (y, ly): (&Self::Storage<T>, &Layout),
        (g, lg): (&Self::Storage<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<Option<Self::Storage<T>>> {
        let (y, g) = (dense_view(y, ly), dense_view(g, lg));
        Ok(Some(CpuStorage::from_output(pooling::max_pool2d_backward(
            x, lx, &y, &g, kernel, params,
        ))))
    }

    fn adam_step<T: FloatDType>(
        w: &mut Self::Storage<T>,
        m: &mut Self::Storage<T>,
        v: &mut Self::Storage<T>,
        (g, lg): (&Self::Storage<T>, &Layout),
        step: AdamStep,
    ) -> Result<bool> {
        let (Some(range), Some(w), Some(m), Some(v)) =
            (lg.contiguous_range(), w.get_mut(), m.get_mut(), v.get_mut())
        else {
            return Ok(false);
        };
        let n = range.len();
        optim::adam(&mut w[..n], &mut m[..n], &mut v[..n], &g[range], step);
        Ok(true)
    }

    fn where_cond<T: WithDType>(
        (m, lm): (&Self::Storage<u8>, &Layout),
        (t, lt): (&Self::Storage<T>, &Layout),
        (f, lf): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<T>> {
        let mut out = pool::with_capacity(lm.numel());
        for_each_row(
            lm.dims(),
            [lm, lt, lf],
            |[om, ot, of], len, [sm, st, sf]| {
                out.extend((0..len).map(|i| {
                    if m[om + i * sm] != 0 {
                        t[ot + i * st]
                    } else {
                        f[of + i * sf]
                    }
                }))
            },
        );
        Ok(CpuStorage::from_output(out))
    }
}
