//! Shape-erased memory layout: dims, strides (in elements) and a start offset.
//!
//! Views (transpose, narrow, select, broadcast) only rewrite a `Layout`; kernels take one per operand. The model
//! is candle's `Layout`: strides are non-negative, broadcast axes have stride 0.

use crate::error::{Error, Result};
use crate::shape::{Dims, Shape, MAX_RANK};
use core::fmt;

/// Dims, strides and offset of a tensor view into its storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    dims: Dims,
    strides: [usize; MAX_RANK],
    offset: usize,
}

impl Layout {
    /// The row-major contiguous layout of `dims` starting at offset 0.
    #[inline]
    pub fn contiguous(dims: Dims) -> Self {
        let mut strides = [0; MAX_RANK];
        row_major_strides(&dims, &mut strides[..dims.len()]);
        Layout {
            dims,
            strides,
            offset: 0,
        }
    }

    /// A layout from its parts (strides in elements); `strides` has at least `dims.len()` entries.
    #[inline]
    pub fn from_parts(dims: Dims, strides: &[usize], offset: usize) -> Self {
        let mut s = [0; MAX_RANK];
        s[..dims.len()].copy_from_slice(&strides[..dims.len()]);
        Layout {
            dims,
            strides: s,
            offset,
        }
    }

    /// Splits into the axes where `reduced` is false (outer, in order) and those where it is true (inner, in
    /// order): the walk order of a reduction. Both keep this layout's strides; the inner one has offset 0.
    pub fn split_reduced(&self, reduced: &[bool; MAX_RANK]) -> (Layout, Layout) {
        let (mut od, mut os, mut id, mut is) =
            ([0; MAX_RANK], [0; MAX_RANK], [0; MAX_RANK], [0; MAX_RANK]);
        let (mut no, mut ni) = (0, 0);
        for (ax, &is_reduced) in reduced.iter().enumerate().take(self.rank()) {
            if is_reduced {
                id[ni] = self.dims[ax];
                is[ni] = self.strides[ax];
                ni += 1;
            } else {
                od[no] = self.dims[ax];
                os[no] = self.strides[ax];
                no += 1;
            }
        }
        (
            Layout::from_parts(Dims::from_slice(&od[..no]), &os, self.offset),
            Layout::from_parts(Dims::from_slice(&id[..ni]), &is, 0),
        )
    }

    /// The sizes of a rank-4 (NCHW) layout as an array.
    pub(crate) fn dims4(&self) -> [usize; 4] {
        let d = &self.dims;
        [d[0], d[1], d[2], d[3]]
    }

    /// The walk of an index view over this (source or destination) layout for gather/scatter along `axis`: the
    /// index view's dims with this layout's strides and offset, except stride 0 on `axis` (that coordinate comes
    /// from the index). This layout has the index view's dims except along `axis`.
    pub(crate) fn along_index(&self, index: &Layout, axis: usize) -> Layout {
        let mut strides = [0; MAX_RANK];
        strides[..self.rank()].copy_from_slice(self.strides());
        strides[axis] = 0;
        Layout::from_parts(*index.dims(), &strides, self.offset)
    }

    /// The sizes.
    #[inline]
    pub fn dims(&self) -> &Dims {
        &self.dims
    }
    /// The stride of each axis, in elements.
    #[inline]
    pub fn strides(&self) -> &[usize] {
        &self.strides[..self.dims.len()]
    }
    /// Where the first element lies in the storage.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// Number of axes.
    #[inline]
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
    /// Number of elements.
    #[inline]
    pub fn numel(&self) -> usize {
        self.dims.numel()
    }

    /// The storage index of the view's `i`-th element in row-major order (`i < numel`).
    #[inline]
    pub(crate) fn offset_of(&self, mut i: usize) -> usize {
        let mut off = self.offset;
        for (&d, &s) in self.dims().iter().zip(self.strides()).rev() {
            off += (i % d) * s;
            i /= d;
        }
        off
    }

    /// True when the elements are row-major and dense (size-1 axes may have any stride).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        is_row_major(&self.dims, &self.strides[..self.rank()])
    }

    /// The contiguous range of storage this view covers, when it is contiguous.
    #[inline]
    pub fn contiguous_range(&self) -> Option<core::ops::Range<usize>> {
        self.is_contiguous()
            .then(|| self.offset..self.offset + self.numel())
    }

    /// One past the largest storage index this view touches (0 when empty), or `None` when that index does not
    /// fit a `usize`: a kernel that forms raw pointers from a layout checks it against its buffer with this.
    ///
    /// ```
    /// use typed_tensor::layout::Layout;
    /// use typed_tensor::shape::Dims;
    /// let l = Layout::from_parts(Dims::from_slice(&[2, 3]), &[1, 2], 4); // a transposed view at offset 4
    /// assert_eq!(l.storage_extent(), Some(4 + 1 + 2 * 2 + 1));
    /// let huge = Layout::from_parts(Dims::from_slice(&[1 << 40, 2]), &[1 << 30, 1], 0);
    /// assert_eq!(huge.storage_extent(), None);
    /// ```
    pub fn storage_extent(&self) -> Option<usize> {
        if self.dims.contains(&0) {
            return Some(0);
        }
        let mut last = self.offset;
        for (&d, &s) in self.dims.iter().zip(self.strides()) {
            last = last.checked_add((d - 1).checked_mul(s)?)?;
        }
        last.checked_add(1)
    }

    /// Exchanges axes `i` and `j`.
    pub fn swap_axes(&self, i: usize, j: usize) -> Self {
        let mut out = *self;
        out.dims.as_mut_slice().swap(i, j);
        out.strides.swap(i, j);
        out
    }

    /// Output axis `k` is input axis `perm[k]`.
    pub fn permute(&self, perm: &[usize]) -> Self {
        let mut out = *self;
        for (k, &p) in perm.iter().enumerate() {
            out.dims.as_mut_slice()[k] = self.dims[p];
            out.strides[k] = self.strides[p];
        }
        out
    }

    /// Keeps `len` entries of `axis` from `start`; checked.
    pub fn narrow(&self, op: &'static str, axis: usize, start: usize, len: usize) -> Result<Self> {
        let size = self.dims[axis];
        if start > size || len > size - start {
            return Err(Error::IndexOutOfRange {
                op,
                axis,
                index: start as i128 + len as i128,
                size,
            });
        }
        let mut out = *self;
        out.dims.as_mut_slice()[axis] = len;
        out.offset += start * self.strides[axis];
        Ok(out)
    }

    /// Fixes `axis` at `index` and drops it; checked.
    pub fn select(&self, op: &'static str, axis: usize, index: usize) -> Result<Self> {
        let size = self.dims[axis];
        if index >= size {
            return Err(Error::IndexOutOfRange {
                op,
                axis,
                index: index as i128,
                size,
            });
        }
        let mut dims = [0; MAX_RANK];
        let mut strides = [0; MAX_RANK];
        let mut k = 0;
        for i in 0..self.rank() {
            if i != axis {
                dims[k] = self.dims[i];
                strides[k] = self.strides[i];
                k += 1;
            }
        }
        Ok(Layout {
            dims: Dims::from_slice(&dims[..k]),
            strides,
            offset: self.offset + index * self.strides[axis],
        })
    }

    /// Inserts a size-1 axis at `axis`.
    pub fn unsqueeze(&self, axis: usize) -> Self {
        let rank = self.rank();
        let mut dims = [0; MAX_RANK];
        let mut strides = [0; MAX_RANK];
        let mut k = 0;
        for i in 0..=rank {
            if i == axis {
                dims[i] = 1;
                strides[i] = 0;
            } else {
                dims[i] = self.dims[k];
                strides[i] = self.strides[k];
                k += 1;
            }
        }
        Layout {
            dims: Dims::from_slice(&dims[..rank + 1]),
            strides,
            offset: self.offset,
        }
    }

    /// Views this layout with `dst` dims (NumPy's right-aligned rule): new leading axes and size-1 axes that
    /// grow get stride 0. Errors name `op` and both shapes.
    #[inline]
    pub fn broadcast_as(&self, op: &'static str, dst: &Dims) -> Result<Self> {
        dst.try_numel(op)?;
        let (rank, dst_rank) = (self.rank(), dst.len());
        let mismatch = || Error::shape_mismatch(op, self.dims, *dst);
        if rank > dst_rank {
            return Err(mismatch());
        }
        let lead = dst_rank - rank;
        let mut strides = [0; MAX_RANK];
        for i in 0..rank {
            let (s, d) = (self.dims[i], dst[lead + i]);
            strides[lead + i] = if s == d {
                self.strides[i]
            } else if s == 1 {
                0
            } else {
                return Err(mismatch());
            };
        }
        Ok(Layout {
            dims: *dst,
            strides,
            offset: self.offset,
        })
    }

    /// The contiguous layout with new dims (same element count), keeping the offset: a free reshape.
    pub fn reshaped_contiguous(&self, dims: Dims) -> Self {
        debug_assert!(self.is_contiguous() && dims.numel() == self.numel());
        Layout {
            offset: self.offset,
            ..Layout::contiguous(dims)
        }
    }
}

/// What a tensor records of its view into its buffer, chosen by the device ([`crate::device::Kernels::View`]).
///
/// Devices whose tensors share buffers (`Cpu`, `Cuda`) record the strides and the offset ([`Strided`]), so a
/// transpose or a narrow is a new record over the same buffer. A device whose tensors own one dense array each
/// records nothing ([`Dense`]): every tensor is row-major from the start of its buffer, views are copies, and a
/// `Rank2<4, 4>` f32 tensor is its 64 bytes and nothing more.
pub trait ViewOf<S: Shape>: Copy + fmt::Debug + Send + Sync + 'static {
    /// True when every tensor is dense and row-major from the start of its buffer.
    const DENSE: bool;
    /// The view of a fresh row-major buffer of `shape`.
    fn contiguous(shape: &S) -> Self;
    /// The view `layout` describes (its dims are the tensor's). On a [`Self::DENSE`] device the layout is always
    /// the contiguous one: the device copied the view into a fresh buffer first.
    fn from_layout(layout: &Layout) -> Self;
    /// The stride of each axis, then the offset, in the layout of [`Shape::View`].
    fn parts(&self, shape: &S) -> S::View;
}

/// The row-major strides of `shape`, then offset 0: the view of a fresh buffer (constants for a static shape).
#[inline(always)]
pub(crate) fn contiguous_parts<S: Shape>(shape: &S) -> S::View {
    let mut view = S::View::default();
    row_major_strides(&shape.dims(), &mut view.as_mut()[..S::RANK]);
    view
}

/// The dense row-major strides of `dims` into `strides` (as long as `dims`). Shape-free, so that
/// [`contiguous_parts`] and [`Layout::contiguous`] share one body instead of one per shape.
#[inline]
pub(crate) fn row_major_strides(dims: &[usize], strides: &mut [usize]) {
    let mut acc = 1;
    for (s, &d) in strides.iter_mut().zip(dims).rev() {
        *s = acc;
        acc *= d;
    }
}

/// Whether `strides` are the dense row-major strides of `dims` (axes of size 1 may have any stride).
#[inline]
pub(crate) fn is_row_major(dims: &[usize], strides: &[usize]) -> bool {
    let mut acc = 1;
    for (&d, &s) in dims.iter().zip(strides).rev() {
        if d != 1 && s != acc {
            return false;
        }
        acc *= d;
    }
    true
}

/// Strides and offset: the view record of devices whose tensors share buffers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strided<S: Shape>(S::View);

impl<S: Shape> ViewOf<S> for Strided<S> {
    const DENSE: bool = false;
    #[inline(always)]
    fn contiguous(shape: &S) -> Self {
        Strided(contiguous_parts(shape))
    }
    #[inline]
    fn from_layout(layout: &Layout) -> Self {
        let mut view = S::View::default();
        view.as_mut()[..S::RANK].copy_from_slice(layout.strides());
        view.as_mut()[S::RANK] = layout.offset();
        Strided(view)
    }
    #[inline(always)]
    fn parts(&self, _: &S) -> S::View {
        self.0
    }
}

/// Nothing: the view record of a device whose tensors are dense row-major arrays (views are copies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dense;

impl<S: Shape> ViewOf<S> for Dense {
    const DENSE: bool = true;
    #[inline(always)]
    fn contiguous(_: &S) -> Self {
        Dense
    }
    #[inline]
    fn from_layout(layout: &Layout) -> Self {
        debug_assert_eq!(layout.contiguous_range(), Some(0..layout.numel()));
        Dense
    }
    #[inline(always)]
    fn parts(&self, shape: &S) -> S::View {
        contiguous_parts(shape)
    }
}

/// Calls `lane(starts, o0)` for every lane along `axis` of views over the same dims (`views[0]`'s), in row-major
/// order of the other axes: `starts[k]` is view `k`'s storage index of the lane's first element and `o0` that of
/// the dense row-major tensor of those dims, whose lanes step by the product of the dims after `axis`. The walk of
/// the host devices' lane ops (softmax and the norms, the scans, sorting).
pub(crate) fn for_each_lane<const K: usize>(
    views: [&Layout; K],
    axis: usize,
    mut lane: impl FnMut([usize; K], usize),
) {
    let dims = *views[0].dims();
    let mut on_axis = [false; MAX_RANK];
    on_axis[axis] = true;
    let outer: [Layout; K] = core::array::from_fn(|k| views[k].split_reduced(&on_axis).0);
    let (n, inner) = (dims[axis], dims[axis + 1..].iter().product::<usize>());
    let mut l = 0;
    // Every lane has an element of each later axis, so `inner` is not 0 here (`for_each_row` skips empty dims).
    for_each_row(outer[0].dims(), outer.each_ref(), |o, len, s| {
        for i in 0..len {
            lane(
                core::array::from_fn(|k| o[k] + i * s[k]),
                l / inner * n * inner + l % inner,
            );
            l += 1;
        }
    });
}

/// Calls `f(offsets, len, inner_strides)` once per innermost row of the index space `dims`, walked in row-major
/// order, where `offsets[k]` is operand `k`'s storage index of the row's first element and `inner_strides[k]`
/// its step along the row. Axes that are contiguous for every operand are merged first, so dense operands
/// give one long row and the inner loop vectorises.
pub(crate) fn for_each_row<const K: usize>(
    dims: &[usize],
    layouts: [&Layout; K],
    mut f: impl FnMut([usize; K], usize, [usize; K]),
) {
    if dims.contains(&0) {
        return;
    }
    // Merge axis i into i+1 when, for every operand, stride[i] == stride[i+1] * dims[i+1].
    let mut md = [1usize; MAX_RANK];
    let mut ms = [[0usize; MAX_RANK]; K];
    let mut n = 0;
    for (i, &d) in dims.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let mergeable = n > 0 && (0..K).all(|k| ms[k][n - 1] == layouts[k].strides()[i] * d);
        if mergeable {
            md[n - 1] *= d;
            for k in 0..K {
                ms[k][n - 1] = layouts[k].strides()[i];
            }
        } else {
            md[n] = d;
            for k in 0..K {
                ms[k][n] = layouts[k].strides()[i];
            }
            n += 1;
        }
    }
    let base: [usize; K] = core::array::from_fn(|k| layouts[k].offset());
    if n == 0 {
        f(base, 1, [0; K]);
        return;
    }
    let inner = n - 1;
    let len = md[inner];
    let inner_strides: [usize; K] = core::array::from_fn(|k| ms[k][inner]);
    let mut idx = [0usize; MAX_RANK];
    let mut offs = base;
    loop {
        f(offs, len, inner_strides);
        // Odometer over the outer axes.
        let mut ax = inner;
        loop {
            if ax == 0 {
                return;
            }
            ax -= 1;
            idx[ax] += 1;
            for k in 0..K {
                offs[k] += ms[k][ax];
            }
            if idx[ax] < md[ax] {
                break;
            }
            for k in 0..K {
                offs[k] -= ms[k][ax] * md[ax];
            }
            idx[ax] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    fn offsets(l: &Layout) -> Vec<usize> {
        let mut v = Vec::new();
        for_each_row(l.dims(), [l], |[o], len, [s]| {
            v.extend((0..len).map(|i| o + i * s))
        });
        v
    }

    #[test]
    fn rows_cover_views_in_order() {
        let l = Layout::contiguous(Dims::from_slice(&[2, 3]));
        assert_eq!(offsets(&l), [0, 1, 2, 3, 4, 5]);
        assert_eq!(offsets(&l.swap_axes(0, 1)), [0, 3, 1, 4, 2, 5]);
        let n = l.narrow("t", 1, 1, 2).unwrap();
        assert_eq!(offsets(&n), [1, 2, 4, 5]);
        let b = Layout::contiguous(Dims::from_slice(&[3]))
            .broadcast_as("t", &Dims::from_slice(&[2, 3]))
            .unwrap();
        assert_eq!(offsets(&b), [0, 1, 2, 0, 1, 2]);
        let s = l.select("t", 0, 1).unwrap();
        assert_eq!(offsets(&s), [3, 4, 5]);
        let scalar = Layout::contiguous(Dims::from_slice(&[]));
        assert_eq!(offsets(&scalar), [0]);
        let l3 = Layout::contiguous(Dims::from_slice(&[2, 3, 4]));
        assert_eq!(offsets(&l3).len(), 24);
        assert_eq!(offsets(&l3.permute(&[2, 0, 1]))[..4], [0, 4, 8, 12]);
    }

    #[test]
    fn contiguity_and_errors() {
        let l = Layout::contiguous(Dims::from_slice(&[2, 3]));
        assert!(l.is_contiguous());
        assert!(!l.swap_axes(0, 1).is_contiguous());
        assert!(l.narrow("t", 0, 1, 1).unwrap().is_contiguous());
        assert!(l.unsqueeze(0).is_contiguous());
        assert_eq!(
            l.select("i", 1, 3),
            Err(Error::IndexOutOfRange {
                op: "i",
                axis: 1,
                index: 3,
                size: 3
            })
        );
        assert!(l.broadcast_as("b", &Dims::from_slice(&[3, 2])).is_err());
        assert_eq!(l.storage_extent(), Some(6));
    }
}
