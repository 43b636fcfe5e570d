//! The core kernels (`copy`, `cast`) on host memory, one body for `Cpu` and `Embedded` (the op families keep
//! theirs in their folders under `src/ops/`). Each writes the first elements of `out` (the output's count), dense
//! row-major, and initialises every one of them (the `Kernels` safety contract).

use super::elementwise::map_view_into;
use crate::dtype::{cast as cast_one, WithDType};
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

/// A copy into dense row-major order, as a function pointer.
#[cfg(feature = "alloc")]
type CopyFn<T> = fn((&[T], &Layout), &mut [MaybeUninit<T>]);

/// `f32`'s [`copy`], compiled once in the library: the copy that makes every strided `f32` view dense, which a
/// model's crate then links instead of compiling again (as `ops::compiled` does for the common ops' loops).
#[cfg(feature = "alloc")]
static F32_COPY: CopyFn<f32> = copy::<f32>;

/// The `Cpu`'s copy: [`F32_COPY`] for `f32` (a constant condition, so the other branch is not compiled), the loop
/// in the caller's crate for the other types.
#[cfg(feature = "alloc")]
#[inline]
pub(crate) fn cpu_copy<T: WithDType>(src: (&[T], &Layout), out: &mut [MaybeUninit<T>]) {
    if const { matches!(T::DTYPE, crate::dtype::DType::F32) } {
        match (&F32_COPY as &dyn core::any::Any).downcast_ref::<CopyFn<T>>() {
            Some(compiled) => compiled(src, out),
            None => unreachable!("typed-tensor internal error: f32's tag on another type"),
        }
    } else {
        copy(src, out)
    }
}

#[inline]
pub(crate) fn cast<T: WithDType, U: WithDType>(src: (&[T], &Layout), out: &mut [MaybeUninit<U>]) {
    map(src, out, cast_one::<T, U>)
}

/// The `Kernels` methods whose body is the same on both devices with host memory (`Buffer<T> = [T]`,
/// `Out<T> = [MaybeUninit<T>]`): `Cpu` and `Embedded` expand this inside their impls, so each is written once.
/// The argument names the `copy` function the device runs ([`copy`], or the CPU's [`cpu_copy`]).
macro_rules! host_kernel_methods {
    ($($copy:ident)::+) => {
        #[inline]
        fn copy<T: $crate::dtype::WithDType>(
            src: (&[T], &$crate::layout::Layout),
            out: &mut [core::mem::MaybeUninit<T>],
        ) -> $crate::error::Result<()> {
            $($copy)::+(src, out);
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
    };
}
pub(crate) use host_kernel_methods;
