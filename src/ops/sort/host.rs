//! `Embedded`'s kernel: each lane's order by a stable insertion sort of its positions, in place in its output
//! (no heap, quadratic: meant for the short lanes of embedded models). The CPU's is in cpu.rs.

use super::{before, SortKernels};
use crate::device::host::elementwise::zeroed;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{for_each_lane, Layout};
use core::mem::MaybeUninit;

/// `Embedded`'s order: positions sorted in place in the output by a stable insertion sort.
fn argsort_in_place<T: WithDType>(
    (src, layout): (&[T], &Layout),
    axis: usize,
    descending: bool,
    out: &mut [u32],
) {
    let n = layout.dims()[axis];
    let xs = layout.strides()[axis];
    let os: usize = layout.dims()[axis + 1..].iter().product();
    for_each_lane([layout], axis, |[x0], o0| {
        let value = |p: u32| src[x0 + p as usize * xs].to_acc();
        for i in 0..n {
            let key = i as u32;
            let mut j = i;
            while j > 0 && before(value(key), value(out[o0 + (j - 1) * os]), descending) {
                out[o0 + j * os] = out[o0 + (j - 1) * os];
                j -= 1;
            }
            out[o0 + j * os] = key;
        }
    });
}

// SAFETY: the output starts from `zeroed` and every lane is written.
unsafe impl SortKernels for crate::device::Embedded {
    fn argsort<T: WithDType>(
        src: (&[T], &Layout),
        axis: usize,
        descending: bool,
        out: &mut [MaybeUninit<u32>],
    ) -> Result<()> {
        argsort_in_place(src, axis, descending, zeroed(&mut out[..src.1.numel()]));
        Ok(())
    }
}
