//! The family's host kernel, one body for `Cpu` and `Embedded`: each part copied into its slab of the output.

use super::JoinKernels;
use crate::device::host::elementwise::zeroed;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use core::mem::MaybeUninit;

/// The parts laid end to end along `axis` into `out` (dense, with the parts' dims except the summed `axis`,
/// every element overwritten).
pub(crate) fn concat_into<T: WithDType>(
    out: &mut [T],
    parts: &[(&[T], &Layout)],
    axis: usize,
) -> crate::error::Result<()> {
    let Some((_, first)) = parts.first() else {
        return Ok(());
    };
    let mut dims = *first.dims();
    dims.as_mut_slice()[axis] = parts.iter().map(|(_, l)| l.dims()[axis]).sum();
    let whole = Layout::contiguous(dims);
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
    Ok(())
}

#[inline]
fn concat<T: WithDType>(
    parts: &[(&[T], &Layout)],
    axis: usize,
    out: &mut [MaybeUninit<T>],
) -> Result<()> {
    let n = parts.iter().map(|(_, l)| l.numel()).sum();
    concat_into(zeroed(&mut out[..n]), parts, axis)
}

macro_rules! host_join_kernels {
    ($device:ty) => {
        // SAFETY: `concat` zeroes the output first, then copies every part into it.
        unsafe impl JoinKernels for $device {
            #[inline]
            fn concat<T: WithDType>(
                parts: &[(&[T], &Layout)],
                axis: usize,
                out: &mut [MaybeUninit<T>],
            ) -> Result<()> {
                concat(parts, axis, out)
            }
        }
    };
}

host_join_kernels!(crate::device::Embedded);
#[cfg(feature = "alloc")]
host_join_kernels!(crate::device::Cpu);
