//! Softmax, log-softmax and the norms over host memory without scratch: each lane is a [`Lane`] that reads the
//! input in place (strided or not) and writes each result once into the output, through the one lane algorithm
//! ([`AlongAxis::apply`]), so the results are the CPU's bits.

use super::{AlongAxisKernels, Lane};
use crate::device::host::elementwise::zeroed;
use crate::device::Embedded;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::{for_each_lane, Layout};
use crate::ops::AlongAxis;
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
    let (n, stride) = (dims[axis], layout.strides()[axis]);
    let out_stride = dims[axis + 1..].iter().product();
    for_each_lane([layout], axis, |[x0], o0| {
        op.apply(&mut StridedLane {
            n,
            src,
            x0,
            stride,
            out: &mut *out,
            o0,
            out_stride,
        });
    });
}

/// A lane read in place from a strided input and written to a strided output.
struct StridedLane<'a, T> {
    n: usize,
    src: &'a [T],
    x0: usize,
    stride: usize,
    out: &'a mut [T],
    o0: usize,
    out_stride: usize,
}

impl<T: FloatDType> Lane<T::Acc> for StridedLane<'_, T> {
    const HOLDS_RESULTS: bool = false;
    #[inline(always)]
    fn len(&self) -> usize {
        self.n
    }
    #[inline(always)]
    fn get(&self, i: usize) -> T::Acc {
        self.src[self.x0 + i * self.stride].to_acc()
    }
    #[inline(always)]
    fn set(&mut self, i: usize, y: T::Acc) {
        self.out[self.o0 + i * self.out_stride] = T::from_acc(y);
    }
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
