//! The host device: storage is an `Arc<Vec<T>>`, so views and clones share one buffer.
//!
//! Every kernel walks its operands with [`for_each_row`]: dense operands collapse to one row and run a plain
//! slice loop the compiler vectorises; strided ones (transposed, narrowed, broadcast) walk row by row.

mod along_axis;
mod conv;
mod indexing;
mod matmul;

use super::{Device, Kernels};
use crate::dtype::{cast, FloatDType, IndexDType, WithDType};
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use crate::ops::{AlongAxis, BinaryOp, CmpOp, Conv2dParams, Pool, ReduceOp, UnaryOp};
use crate::shape::MAX_RANK;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// The CPU. Zero-sized; tensors on it keep their elements in shared host memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu;

/// `f` over a dense slice, compiled for the widest vector unit the CPU has: the loop is monomorphised into
/// `#[target_feature]` clones (AVX-512, AVX2) picked at run time, as the `gemm` crate does. Without FMA
/// contraction (Rust never fuses `a * b + c` implicitly) every clone gives bit-identical results.
#[inline(always)]
fn map_dense<T: Copy, U>(src: &[T], f: impl Fn(T) -> U) -> Vec<U> {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    {
        if std::is_x86_feature_detected!("avx512f") {
            // Safety: the feature was detected on this CPU.
            return unsafe { map_avx512(src, f) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // Safety: the feature was detected on this CPU.
            return unsafe { map_avx2(src, f) };
        }
    }
    src.iter().map(|&x| f(x)).collect()
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx512f")]
unsafe fn map_avx512<T: Copy, U>(src: &[T], f: impl Fn(T) -> U) -> Vec<U> {
    src.iter().map(|&x| f(x)).collect()
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn map_avx2<T: Copy, U>(src: &[T], f: impl Fn(T) -> U) -> Vec<U> {
    src.iter().map(|&x| f(x)).collect()
}

/// Collects `f` applied to every element of a view, in row-major order.
#[inline(always)]
fn map_view<T: WithDType, U>(src: &[T], layout: &Layout, f: impl Fn(T) -> U) -> Vec<U> {
    if let Some(range) = layout.contiguous_range() {
        return map_dense(&src[range], f);
    }
    let mut out = Vec::with_capacity(layout.numel());
    for_each_row(layout.dims(), [layout], |[o], len, [s]| {
        if s == 1 {
            out.extend(src[o..o + len].iter().map(|&x| f(x)));
        } else {
            out.extend((0..len).map(|i| f(src[o + i * s])));
        }
    });
    out
}

/// Collects `f` over pairs of two views with the same dims (already broadcast).
#[inline(always)]
fn zip_views<T: WithDType, U>(
    (a, la): (&[T], &Layout),
    (b, lb): (&[T], &Layout),
    f: impl Fn(T, T) -> U,
) -> Vec<U> {
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), lb.contiguous_range()) {
        return a[ra].iter().zip(&b[rb]).map(|(&x, &y)| f(x, y)).collect();
    }
    let mut out = Vec::with_capacity(la.numel());
    for_each_row(la.dims(), [la, lb], |[oa, ob], len, [sa, sb]| {
        match (sa, sb) {
            (1, 1) => out.extend(
                a[oa..oa + len]
                    .iter()
                    .zip(&b[ob..ob + len])
                    .map(|(&x, &y)| f(x, y)),
            ),
            (1, 0) => {
                let y = b[ob];
                out.extend(a[oa..oa + len].iter().map(|&x| f(x, y)))
            }
            (0, 1) => {
                let x = a[oa];
                out.extend(b[ob..ob + len].iter().map(|&y| f(x, y)))
            }
            _ => out.extend((0..len).map(|i| f(a[oa + i * sa], b[ob + i * sb]))),
        }
    });
    out
}

/// Folds every element of a (sub-)view into `acc`, passing each its row-major index within the view.
#[inline(always)]
fn fold_view<T: WithDType, Op: ReduceOp<T>>(
    op: &Op,
    src: &[T],
    layout: &Layout,
    acc: Op::Acc,
) -> Op::Acc {
    let mut acc = acc;
    let mut index = 0;
    for_each_row(layout.dims(), [layout], |[o], len, [s]| {
        acc = if s == 1 {
            op.fold_slice(acc, &src[o..o + len], index)
        } else {
            (0..len).fold(acc, |a, i| op.step(a, src[o + i * s], index + i))
        };
        index += len;
    });
    acc
}

/// Dense row into dense accumulators: a vectorisable zip (a column sum runs at memory speed through it, three
/// times faster than the indexed loop).
#[inline]
fn accumulate_row<T: WithDType, Op: ReduceOp<T>>(op: &Op, accs: &mut [Op::Acc], xs: &[T]) {
    for (a, &x) in accs.iter_mut().zip(xs) {
        *a = op.step(*a, x, 0);
    }
}

/// A reduction over the `reduced` axes. Two walks:
/// - *rows*: for each output, fold its elements (contiguous runs go through `fold_slice`); used when the
///   innermost memory axis is reduced, and always for index-dependent ops (argmax);
/// - *accumulate*: walk the input in memory order and add each row into a row of accumulators; used when the
///   innermost memory axis is kept (a column sum), where the rows walk would stride through memory.
fn reduce_cpu<T: WithDType, Op: ReduceOp<T>>(
    op: Op,
    src: &[T],
    layout: &Layout,
    reduced: &[bool; MAX_RANK],
) -> Vec<Op::Out> {
    let (outer, inner) = layout.split_reduced(reduced);
    let count = inner.numel();
    let innermost_kept = (0..layout.rank())
        .filter(|&ax| layout.dims()[ax] > 1)
        .min_by_key(|&ax| layout.strides()[ax])
        .is_some_and(|ax| !reduced[ax]);

    let accs: Vec<Op::Acc> = if innermost_kept && !Op::USES_INDEX && count > 0 {
        // Accumulators laid out like the output, seen through the input's dims with stride 0 on reduced axes.
        let mut acc_strides = [0; MAX_RANK];
        let mut stride = 1;
        for ax in (0..layout.rank()).rev() {
            if !reduced[ax] {
                acc_strides[ax] = stride;
                stride *= layout.dims()[ax];
            }
        }
        let acc_layout = Layout::from_parts(*layout.dims(), &acc_strides, 0);
        let mut accs = alloc::vec![op.init(); outer.numel()];
        for_each_row(
            layout.dims(),
            [layout, &acc_layout],
            |[xo, ao], len, [xs, as_]| {
                if as_ == 0 {
                    accs[ao] = (0..len).fold(accs[ao], |a, i| op.step(a, src[xo + i * xs], 0));
                } else if as_ == 1 && xs == 1 {
                    accumulate_row(&op, &mut accs[ao..ao + len], &src[xo..xo + len]);
                } else {
                    for i in 0..len {
                        let k = ao + i * as_;
                        accs[k] = op.step(accs[k], src[xo + i * xs], 0);
                    }
                }
            },
        );
        accs
    } else {
        let mut accs = Vec::with_capacity(outer.numel());
        for_each_row(outer.dims(), [&outer], |[o], len, [s]| {
            for i in 0..len {
                let sub = Layout::from_parts(*inner.dims(), inner.strides(), o + i * s);
                accs.push(fold_view(&op, src, &sub, op.init()));
            }
        });
        accs
    };
    accs.into_iter().map(|a| op.finish(a, count)).collect()
}

impl Device for Cpu {}

impl Kernels for Cpu {
    type Storage<T: WithDType> = Arc<Vec<T>>;
    const NAME: &'static str = "cpu";

    fn full<T: WithDType>(n: usize, value: T) -> Result<Self::Storage<T>> {
        Ok(Arc::new(alloc::vec![value; n]))
    }

    fn from_slice<T: WithDType>(data: &[T]) -> Result<Self::Storage<T>> {
        Ok(Arc::new(data.to_vec()))
    }

    fn from_vec<T: WithDType>(data: Vec<T>) -> Result<Self::Storage<T>> {
        Ok(Arc::new(data))
    }

    fn to_vec<T: WithDType>(storage: &Self::Storage<T>, layout: &Layout) -> Result<Vec<T>> {
        Ok(map_view(storage, layout, |x| x))
    }

    fn copy_strided<T: WithDType>(
        storage: &Self::Storage<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(map_view(storage, layout, |x| x)))
    }

    fn cast<T: WithDType, U: WithDType>(
        storage: &Self::Storage<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<U>> {
        Ok(Arc::new(map_view(storage, layout, cast::<T, U>)))
    }

    fn unary<T: WithDType, Op: UnaryOp<T>>(
        op: Op,
        storage: &Self::Storage<T>,
        layout: &Layout,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(map_view(storage, layout, |x| op.apply(x))))
    }

    fn binary<T: WithDType, Op: BinaryOp<T>>(
        op: Op,
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(zip_views((a, la), (b, lb), |x, y| op.apply(x, y))))
    }

    fn compare<T: WithDType>(
        op: CmpOp,
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<u8>> {
        Ok(Arc::new(zip_views((a, la), (b, lb), |x, y| {
            op.apply(x, y) as u8
        })))
    }

    fn reduce<T: WithDType, Op: ReduceOp<T>>(
        op: Op,
        storage: &Self::Storage<T>,
        layout: &Layout,
        reduced: &[bool; MAX_RANK],
    ) -> Result<Self::Storage<Op::Out>> {
        Ok(Arc::new(reduce_cpu(op, storage, layout, reduced)))
    }

    fn concat<T: WithDType>(
        parts: &[(&Self::Storage<T>, &Layout)],
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        let mut dims = *parts[0].1.dims();
        dims.as_mut_slice()[axis] = parts.iter().map(|(_, l)| l.dims()[axis]).sum();
        let whole = Layout::contiguous(dims);
        let mut out = alloc::vec![T::ZERO; whole.numel()];
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
        Ok(Arc::new(out))
    }

    fn gather<T: WithDType, I: IndexDType>(
        op: &'static str,
        (src, ls): (&Self::Storage<T>, &Layout),
        (idx, li): (&Self::Storage<I>, &Layout),
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(indexing::gather(op, src, ls, idx, li, axis)?))
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
        Ok(Arc::new(out))
    }

    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        storage: &Self::Storage<T>,
        layout: &Layout,
        axis: usize,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(along_axis::run(op, storage, layout, axis)))
    }

    fn conv2d<T: FloatDType>(
        (x, lx): (&Self::Storage<T>, &Layout),
        (w, lw): (&Self::Storage<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(conv::conv2d(x, lx, w, lw, params)))
    }

    fn conv_transpose2d<T: FloatDType>(
        (x, lx): (&Self::Storage<T>, &Layout),
        (w, lw): (&Self::Storage<T>, &Layout),
        params: Conv2dParams,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(conv::conv_transpose2d(x, lx, w, lw, params)))
    }

    fn pool2d<T: FloatDType>(
        pool: Pool,
        (x, lx): (&Self::Storage<T>, &Layout),
        kernel: usize,
        params: Conv2dParams,
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(conv::pool2d(pool, x, lx, kernel, params)))
    }

    fn matmul<T: FloatDType>(
        (a, la): (&Self::Storage<T>, &Layout),
        (b, lb): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<T>> {
        Ok(Arc::new(matmul::matmul(a, la, b, lb)))
    }

    fn where_cond<T: WithDType>(
        (m, lm): (&Self::Storage<u8>, &Layout),
        (t, lt): (&Self::Storage<T>, &Layout),
        (f, lf): (&Self::Storage<T>, &Layout),
    ) -> Result<Self::Storage<T>> {
        let mut out = Vec::with_capacity(lm.numel());
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
        Ok(Arc::new(out))
    }
}
