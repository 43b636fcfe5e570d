//! The family's host kernels, one body for both devices whose buffers are host memory (`Cpu` and `Embedded`):
//! each runs a loop of `device::host::elementwise` (dense operands collapse to one row the compiler vectorises;
//! on the CPU large outputs split across threads) and writes every output element.

use super::{BinaryOp, CmpOp, ElementwiseKernels, UnaryOp};
use crate::device::host::elementwise::{
    assume_init, map_view_into, update_dense, update_zip, where_into, zip_views_into,
};
use crate::device::Operand;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use core::mem::MaybeUninit;

#[inline]
pub(crate) fn unary<T: WithDType, Op: UnaryOp<T>>(
    op: Op,
    src: Operand<'_, [T]>,
    out: &mut [MaybeUninit<T>],
) {
    match src {
        Operand::View(src, ls) => map_view_into(&mut out[..ls.numel()], src, ls, |x| op.apply(x)),
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
        Operand::View(a, la) => {
            zip_views_into(&mut out[..la.numel()], (a, la), rhs, |x, y| op.apply(x, y))
        }
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
    zip_views_into(&mut out[..lhs.1.numel()], lhs, rhs, |x, y| {
        op.apply(x, y) as u8
    })
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

/// The family's `ElementwiseKernels` impl for a host device, running the loops of `$loops` (this module's, or
/// `ops::compiled`'s, which call the library's compiled copies where it has them).
macro_rules! host_elementwise_kernels {
    ($device:ty, $($loops:ident)::+) => {
        // SAFETY: each loop writes one value per output element, and only `Operand::Out` reads `out` (the
        // destination's own values, which that operand promises).
        unsafe impl ElementwiseKernels for $device {
            #[inline]
            fn unary<T: WithDType, Op: UnaryOp<T>>(
                op: Op,
                src: Operand<'_, [T]>,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                $($loops)::+::unary(op, src, out);
                Ok(())
            }

            #[inline]
            fn binary<T: WithDType, Op: BinaryOp<T>>(
                op: Op,
                lhs: Operand<'_, [T]>,
                rhs: (&[T], &Layout),
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                $($loops)::+::binary(op, lhs, rhs, out);
                Ok(())
            }

            #[inline]
            fn compare<T: WithDType>(
                op: CmpOp,
                lhs: (&[T], &Layout),
                rhs: (&[T], &Layout),
                out: &mut [MaybeUninit<u8>],
            ) -> Result<()> {
                $($loops)::+::compare(op, lhs, rhs, out);
                Ok(())
            }

            #[inline]
            fn where_cond<T: WithDType>(
                mask: (&[u8], &Layout),
                on_true: (&[T], &Layout),
                on_false: (&[T], &Layout),
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                $($loops)::+::where_cond(mask, on_true, on_false, out);
                Ok(())
            }
        }
    };
}

// `Embedded` keeps every loop inline: its static shapes fold into straight-line code.
host_elementwise_kernels!(crate::device::Embedded, self);
#[cfg(feature = "alloc")]
host_elementwise_kernels!(crate::device::Cpu, crate::ops::compiled);
