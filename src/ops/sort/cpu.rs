//! The CPU's kernel: each lane's order by the standard library's stable sort of a scratch lane of (value,
//! position) pairs, lanes on every core for large tensors.

use super::SortKernels;
use crate::device::host::elementwise::zeroed;
use crate::device::Cpu;
use crate::dtype::Accumulator;
use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::{for_each_lane, Layout};
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// From this many elements on, lanes along the last axis are sorted on every core (`std` only).
#[cfg(feature = "std")]
const PARALLEL_ELEMS: usize = 1 << 14;

/// One lane's order into `dst[k * os]`, through `scratch`.
#[inline]
fn sort_lane<T: WithDType>(
    (src, x0, xs): (&[T], usize, usize),
    n: usize,
    descending: bool,
    scratch: &mut Vec<(T::Acc, u32)>,
    mut put: impl FnMut(usize, u32),
) {
    scratch.clear();
    scratch.extend((0..n).map(|i| (src[x0 + i * xs].to_acc(), i as u32)));
    // `before`'s order as one comparison: NaN above everything, ties equal (the sort is stable).
    let ascending = |a: T::Acc, b: T::Acc| match a.partial_cmp(&b) {
        Some(o) => o,
        None => a.is_nan().cmp(&b.is_nan()),
    };
    if descending {
        scratch.sort_by(|a, b| ascending(b.0, a.0));
    } else {
        scratch.sort_by(|a, b| ascending(a.0, b.0));
    }
    for (k, &(_, p)) in scratch.iter().enumerate() {
        put(k, p);
    }
}

fn argsort_cpu<T: WithDType>(
    (src, layout): (&[T], &Layout),
    axis: usize,
    descending: bool,
    out: &mut [u32],
) {
    let dims = *layout.dims();
    let n = dims[axis];
    let xs = layout.strides()[axis];
    let os: usize = dims[axis + 1..].iter().product();
    if n == 0 || out.is_empty() {
        return;
    }
    #[cfg(feature = "std")]
    if os == 1 && out.len() >= PARALLEL_ELEMS {
        // Lanes along the last axis are consecutive chunks of the output.
        use rayon::prelude::*;
        let mut starts = Vec::with_capacity(out.len() / n);
        for_each_lane([layout], axis, |[x0], _| starts.push(x0));
        out.par_chunks_mut(n).zip(starts.par_iter()).for_each_init(
            Vec::new,
            |scratch, (lane, &x0)| {
                sort_lane((src, x0, xs), n, descending, scratch, |k, p| lane[k] = p)
            },
        );
        return;
    }
    let mut scratch = Vec::with_capacity(n);
    for_each_lane([layout], axis, |[x0], o0| {
        sort_lane((src, x0, xs), n, descending, &mut scratch, |k, p| {
            out[o0 + k * os] = p
        })
    });
}

// SAFETY: the output starts from `zeroed` and every lane is written.
unsafe impl SortKernels for Cpu {
    fn argsort<T: WithDType>(
        src: (&[T], &Layout),
        axis: usize,
        descending: bool,
        out: &mut [MaybeUninit<u32>],
    ) -> Result<()> {
        argsort_cpu(src, axis, descending, zeroed(&mut out[..src.1.numel()]));
        Ok(())
    }
}
