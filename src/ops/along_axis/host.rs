//! Softmax, log-softmax and the norms over host memory without scratch: each lane goes through
//! [`AlongAxis::apply_lane`], which reads it in place (strided or not) as often as it needs and writes each
//! result once, with the arithmetic of the CPU's scratch-row path.

use super::AlongAxisKernels;
use crate::device::host::elementwise::zeroed;
use crate::device::Embedded;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::{for_each_row, Layout};
use crate::ops::AlongAxis;
use crate::shape::MAX_RANK;
use core::mem::MaybeUninit;

/// `op` on every lane along `axis` of the view `src`/`layout`, into `out` (dense with the view's dims, every
/// element written).
pub(crate) fn along_axis_into<T: FloatDType>(
    op: AlongAxis,
    src: &[T],
    layout: &Layout,
    axis: usize,
    out: &mut [T],
) {
    let dims = *layout.dims();
    let n = dims[axis];
    let mut on_axis = [false; MAX_RANK];
    on_axis[axis] = true;
    let (outer, along) = layout.split_reduced(&on_axis);
    let (outer_out, along_out) = Layout::contiguous(dims).split_reduced(&on_axis);
    let (stride, out_stride) = (along.strides()[0], along_out.strides()[0]);
    for_each_row(
        outer.dims(),
        [&outer, &outer_out],
        |[xo, oo], len, [xs, os]| {
            for i in 0..len {
                let (x0, o0) = (xo + i * xs, oo + i * os);
                op.apply_lane(
                    n,
                    |j| src[x0 + j * stride].to_acc(),
                    |j, y| out[o0 + j * out_stride] = T::from_acc(y),
                );
            }
        },
    );
}

// SAFETY: the output starts from `zeroed` and every lane is written.
unsafe impl AlongAxisKernels for Embedded {
    #[inline]
    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        (src, ls): (&[T], &Layout),
        axis: usize,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        along_axis_into(op, src, ls, axis, zeroed(out));
        Ok(())
    }
}
