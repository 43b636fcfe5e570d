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
