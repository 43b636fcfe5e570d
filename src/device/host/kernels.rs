//! The kernels whose host loop is the same on `Cpu` and `Embedded`: both devices' `Kernels` methods for these
//! families are one call here (the op families with their own folder keep theirs there). Each writes the first elements of `out` (the output's count), dense row-major,
//! and initialises every one of them (the `Kernels` safety contract); only `Operand::Out` reads `out`.

use super::elementwise::{concat_into, map_view_into, zeroed};
use crate::dtype::{cast as cast_one, WithDType};
use crate::error::Result;
use crate::layout::Layout;
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

#[inline]
pub(crate) fn copy<T: WithDType>(src: (&[T], &Layout), out: &mut [MaybeUninit<T>]) {
    map(src, out, |x| x)
}

#[inline]
pub(crate) fn cast<T: WithDType, U: WithDType>(src: (&[T], &Layout), out: &mut [MaybeUninit<U>]) {
    map(src, out, cast_one::<T, U>)
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
