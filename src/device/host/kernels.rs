//! The kernels whose host loop is the same on `Cpu` and `Embedded`: both devices' `Kernels` methods for these
//! families are one call here (the op families with their own folder keep theirs there). Each writes the first elements of `out` (the output's count), dense row-major,
//! and initialises every one of them (the `Kernels` safety contract); only `Operand::Out` reads `out`.

use super::elementwise::{
    assume_init, concat_into, map_view_into, update_dense, update_zip, where_into, zeroed,
    zip_views_into,
};
use crate::device::Operand;
use crate::dtype::{cast as cast_one, WithDType};
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::{BinaryOp, CmpOp, UnaryOp};
use core::mem::MaybeUninit;

/// `f` of every element of a view into `out`.
#[inline(always)]
fn map<T: WithDType, U: WithDType>(
    (src, ls): (&[T], &Layout),
    out: &mut [MaybeUninit<U>],
    f: impl Fn(T) -> U + Sync,
) {
    map_view_into(&mut out[..ls.numel()], src, ls, f);
}

/// `f` over pairs of two views with the output's dims into `out`.
#[inline(always)]
fn zip<T: WithDType, U: WithDType>(
    lhs: (&[T], &Layout),
    rhs: (&[T], &Layout),
    out: &mut [MaybeUninit<U>],
    f: impl Fn(T, T) -> U + Sync,
) {
    zip_views_into(&mut out[..lhs.1.numel()], lhs, rhs, f);
}

#[inline]
pub(crate) fn copy<T: WithDType>(src: (&[T], &Layout), out: &mut [MaybeUninit<T>]) {
    map(src, out, |x| x)
}

#[inline]
pub(crate) fn cast<T: WithDType, U: WithDType>(src: (&[T], &Layout), out: &mut [MaybeUninit<U>]) {
    map(src, out, cast_one::<T, U>)
}

#[inline]
pub(crate) fn unary<T: WithDType, Op: UnaryOp<T>>(
    op: Op,
    src: Operand<'_, [T]>,
    out: &mut [MaybeUninit<T>],
) {
    match src {
        Operand::View(src, ls) => map((src, ls), out, |x| op.apply(x)),
        Operand::Out(dims) => {
            // SAFETY: `Operand::Out` comes with a destination that holds the values (the `Kernels` contract).
            let dst = unsafe { assume_init(&mut out[..dims.numel()]) };
            update_dense(dst, |x| op.apply(x))
        }
    }
}

#[inline]
pub(crate) fn binary<T: WithDType, Op: BinaryOp<T>>(
    op: Op,
    lhs: Operand<'_, [T]>,
    rhs: (&[T], &Layout),
    out: &mut [MaybeUninit<T>],
) {
    match lhs {
        Operand::View(a, la) => zip((a, la), rhs, out, |x, y| op.apply(x, y)),
        Operand::Out(_) => {
            // SAFETY: `Operand::Out` comes with a destination that holds the values (the `Kernels` contract).
            let dst = unsafe { assume_init(&mut out[..rhs.1.numel()]) };
            update_zip(dst, rhs, |x, y| op.apply(x, y))
        }
    }
}

#[inline]
pub(crate) fn compare<T: WithDType>(
    op: CmpOp,
    lhs: (&[T], &Layout),
    rhs: (&[T], &Layout),
    out: &mut [MaybeUninit<u8>],
) {
    zip(lhs, rhs, out, |x, y| op.apply(x, y) as u8)
}

#[inline]
pub(crate) fn where_cond<T: WithDType>(
    mask: (&[u8], &Layout),
    on_true: (&[T], &Layout),
    on_false: (&[T], &Layout),
    out: &mut [MaybeUninit<T>],
) {
    where_into(&mut out[..mask.1.numel()], mask, on_true, on_false)
}

#[inline]
pub(crate) fn concat<T: WithDType>(
    parts: &[(&[T], &Layout)],
    axis: usize,
    out: &mut [MaybeUninit<T>],
) -> Result<()> {
    let n = parts.iter().map(|(_, l)| l.numel()).sum();
    concat_into(zeroed(&mut out[..n]), parts, axis)
}

/// The `Kernels` methods whose body is the same on both devices with host memory (`Buffer<T> = [T]`,
/// `Out<T> = [MaybeUninit<T>]`): `Cpu` and `Embedded` expand this inside their impls, so each is written once.
macro_rules! host_kernel_methods {
    () => {
        #[inline]
        fn copy<T: $crate::dtype::WithDType>(
            src: (&[T], &$crate::layout::Layout),
            out: &mut [core::mem::MaybeUninit<T>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::copy(src, out);
            Ok(())
        }

        #[inline]
        fn cast<T: $crate::dtype::WithDType, U: $crate::dtype::WithDType>(
            src: (&[T], &$crate::layout::Layout),
            out: &mut [core::mem::MaybeUninit<U>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::cast(src, out);
            Ok(())
        }

        #[inline]
        fn unary<T: $crate::dtype::WithDType, Op: $crate::ops::UnaryOp<T>>(
            op: Op,
            src: $crate::device::Operand<'_, [T]>,
            out: &mut [core::mem::MaybeUninit<T>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::unary(op, src, out);
            Ok(())
        }

        #[inline]
        fn binary<T: $crate::dtype::WithDType, Op: $crate::ops::BinaryOp<T>>(
            op: Op,
            lhs: $crate::device::Operand<'_, [T]>,
            rhs: (&[T], &$crate::layout::Layout),
            out: &mut [core::mem::MaybeUninit<T>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::binary(op, lhs, rhs, out);
            Ok(())
        }

        #[inline]
        fn compare<T: $crate::dtype::WithDType>(
            op: $crate::ops::CmpOp,
            lhs: (&[T], &$crate::layout::Layout),
            rhs: (&[T], &$crate::layout::Layout),
            out: &mut [core::mem::MaybeUninit<u8>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::compare(op, lhs, rhs, out);
            Ok(())
        }

        #[inline]
        fn where_cond<T: $crate::dtype::WithDType>(
            mask: (&[u8], &$crate::layout::Layout),
            on_true: (&[T], &$crate::layout::Layout),
            on_false: (&[T], &$crate::layout::Layout),
            out: &mut [core::mem::MaybeUninit<T>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::where_cond(mask, on_true, on_false, out);
            Ok(())
        }

        #[inline]
        fn concat<T: $crate::dtype::WithDType>(
            parts: &[(&[T], &$crate::layout::Layout)],
            axis: usize,
            out: &mut [core::mem::MaybeUninit<T>],
        ) -> $crate::error::Result<()> {
            $crate::device::host::kernels::concat(parts, axis, out)
        }

        #[inline]
        fn adam_step<T: $crate::dtype::FloatDType>(
            w: &mut [T],
            m: &mut [T],
            v: &mut [T],
            grad: (&[T], &$crate::layout::Layout),
            step: $crate::ops::AdamStep,
        ) -> $crate::error::Result<()> {
            $crate::device::host::optim::adam_step(w, m, v, grad, step)
        }
    };
}
pub(crate) use host_kernel_methods;
