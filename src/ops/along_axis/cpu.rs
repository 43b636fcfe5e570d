//! CPU lanes for softmax and the norms: each lane is widened into a scratch row, transformed by
//! [`AlongAxis::apply`], and rounded into the output. With `std`, large tensors whose axis is the last one
//! split their lanes across cores.

use super::AlongAxisKernels;
use crate::device::host::elementwise::{simd, zeroed, DenseLoop};
use crate::device::Cpu;
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::layout::{for_each_lane, Layout};
use crate::ops::AlongAxis;
use alloc::vec::Vec;
use core::mem::MaybeUninit;

/// From this many elements on, lanes run on every core (`std` only).
#[cfg(feature = "std")]
const PARALLEL_ELEMS: usize = 1 << 16;

/// One lane: read `out.len()` elements from `src` at `offset` with `stride`, transform, write to `out`. A
/// [`DenseLoop`] so the whole lane (the polynomial exp included) compiles in the AVX-512/AVX2 clones.
struct Lane<'a, T: FloatDType> {
    op: AlongAxis,
    src: &'a [T],
    offset: usize,
    stride: usize,
    out: &'a mut [T],
    scratch: &'a mut Vec<T::Acc>,
}

impl<T: FloatDType> DenseLoop for Lane<'_, T> {
    #[inline(always)]
    fn run(self) {
        let Lane {
            op,
            src,
            offset,
            stride,
            out,
            scratch,
        } = self;
        scratch.clear();
        if stride == 1 {
            scratch.extend(src[offset..offset + out.len()].iter().map(|x| x.to_acc()));
        } else {
            scratch.extend((0..out.len()).map(|i| src[offset + i * stride].to_acc()));
        }
        op.apply(scratch.as_mut_slice());
        for (o, &a) in out.iter_mut().zip(scratch.iter()) {
            *o = T::from_acc(a);
        }
    }
}

#[inline]
fn lane<T: FloatDType>(
    op: AlongAxis,
    src: &[T],
    offset: usize,
    stride: usize,
    out: &mut [T],
    scratch: &mut Vec<T::Acc>,
) {
    simd(Lane {
        op,
        src,
        offset,
        stride,
        out,
        scratch,
    })
}

/// `op` on every lane along `axis` of the view into the first `layout.numel()` elements of `out`.
pub(crate) fn run<T: FloatDType>(
    op: AlongAxis,
    src: &[T],
    layout: &Layout,
    axis: usize,
    out: &mut [MaybeUninit<T>],
) {
    let dims = *layout.dims();
    let n = dims[axis];
    let out = zeroed(&mut out[..layout.numel()]);
    if out.is_empty() {
        return;
    }
    let stride = layout.strides()[axis];

    if axis + 1 == dims.len() {
        // Output lanes are consecutive chunks of `out`: collect the input lane offsets, then fill the chunks.
        let mut offsets = Vec::with_capacity(out.len() / n);
        for_each_lane([layout], axis, |[o], _| offsets.push(o));
        #[cfg(feature = "std")]
        if out.len() >= PARALLEL_ELEMS {
            use rayon::prelude::*;
            out.par_chunks_mut(n)
                .zip(offsets.par_iter())
                .for_each_init(Vec::new, |scratch, (chunk, &o)| {
                    lane(op, src, o, stride, chunk, scratch)
                });
            return;
        }
        let mut scratch = Vec::with_capacity(n);
        for (chunk, &o) in out.chunks_mut(n).zip(&offsets) {
            lane(op, src, o, stride, chunk, &mut scratch);
        }
        return;
    }

    // Another axis: lanes are strided in the output too; write through a lane buffer.
    let out_stride: usize = dims[axis + 1..].iter().product();
    let mut scratch = Vec::with_capacity(n);
    let mut buf = alloc::vec![T::ZERO; n];
    for_each_lane([layout], axis, |[x0], o0| {
        lane(op, src, x0, stride, &mut buf, &mut scratch);
        for (j, &v) in buf.iter().enumerate() {
            out[o0 + j * out_stride] = v;
        }
    });
}

// SAFETY: `run` starts from `zeroed` and writes every lane of the output.
unsafe impl AlongAxisKernels for Cpu {
    fn along_axis<T: FloatDType>(
        op: AlongAxis,
        (src, ls): (&[T], &Layout),
        axis: usize,
        out: &mut [MaybeUninit<T>],
    ) -> Result<()> {
        run(op, src, ls, axis, out);
        Ok(())
    }
}
