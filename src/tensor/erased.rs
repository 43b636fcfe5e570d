//! Shape-erased helpers for code whose shapes the types already tie together but cannot name as trait bounds in
//! generic code (the backward rules of autograd): same-shape arithmetic, relabelling a dense buffer with another
//! shape of the same size, and summing a broadcast gradient back to its operand's shape. Dims are checked with
//! debug assertions only: callers derive them from the forward op.

use super::call;
use super::{device_ok, fresh, Flat, Tensor};
use crate::device::Operand;
use crate::dtype::WithDType;
use crate::layout::Layout;
use crate::ops::Device;
use crate::ops::{self, BinaryOp};
use crate::shape::{Dims, Shape, MAX_RANK};
use alloc::vec::Vec;

/// Every rank seen as rank [`MAX_RANK`] with leading size-1 axes: the one shape autograd's gradients and the
/// optimizers' updates compute in, so that that code is compiled once per element type and device instead of once
/// per tensor shape (a model of 49 layer widths compiled it 49 times). Padding is a view (stride 0 on the new
/// axes), and broadcasting aligns shapes at the right, so padded operands broadcast and reduce as the originals
/// do.
pub(crate) type Padded = (usize, usize, usize, usize, usize, usize);

/// A tensor in autograd's shape-erased form (see [`Padded`]).
pub(crate) type Grad<T, D> = Tensor<T, Padded, D>;

/// `l` with leading size-1 axes (stride 0) up to rank [`MAX_RANK`].
fn pad_layout(l: &Layout) -> Layout {
    let lead = MAX_RANK - l.rank();
    let mut dims = [1; MAX_RANK];
    let mut strides = [0; MAX_RANK];
    dims[lead..].copy_from_slice(l.dims());
    strides[lead..].copy_from_slice(l.strides());
    Layout::from_parts(Dims::from_slice(&dims), &strides, l.offset())
}

/// The last `rank` axes of a padded layout (the leading ones have size 1).
pub(crate) fn unpad_layout(l: &Layout, rank: usize) -> Layout {
    let lead = MAX_RANK - rank;
    debug_assert!(l.dims()[..lead].iter().all(|&d| d == 1));
    Layout::from_parts(
        Dims::from_slice(&l.dims()[lead..]),
        &l.strides()[lead..],
        l.offset(),
    )
}

/// The padded form of `dims`.
pub(crate) fn padded_shape(dims: &Dims) -> Padded {
    let lead = MAX_RANK - dims.len();
    let mut d = [1; MAX_RANK];
    d[lead..].copy_from_slice(dims);
    (d[0], d[1], d[2], d[3], d[4], d[5])
}

/// Axis flags of a tensor of rank `rank` (the first `rank` entries of `axes`) at its padded axes' positions; the
/// leading padded axes get `false`.
pub(crate) fn padded_axes(axes: &[bool; MAX_RANK], rank: usize) -> [bool; MAX_RANK] {
    let lead = MAX_RANK - rank;
    let mut padded = [false; MAX_RANK];
    padded[lead..].copy_from_slice(&axes[..rank]);
    padded
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// This tensor as a [`Grad`]: a view of the same elements.
    pub(crate) fn padded(&self) -> Grad<T, D> {
        Grad::over(&self.storage, &self.layout())
    }
}

/// [`Grad::over`] on a device without shape-free storage: autograd's entry points refuse such devices at build
/// time (`autograd::AutogradDevice`), so no program reaches this.
#[cold]
#[inline(never)]
fn autograd_unsupported(device: &'static str) -> ! {
    panic!("typed-tensor: autograd runs on devices whose storage names no shape, not on {device}")
}

impl<T: WithDType, D: Device> Grad<T, D> {
    /// The padded view of `storage` (any tensor's) through `layout`, of any rank.
    pub(crate) fn over<S0: Shape>(storage: &D::Storage<T, S0>, layout: &Layout) -> Self {
        let Some(storage) = D::loose(storage) else {
            autograd_unsupported(D::NAME)
        };
        Tensor::from_loose_view(padded_shape(layout.dims()), &pad_layout(layout), storage)
    }

    /// The tensor of `shape` this padded value holds (its dims are `shape`'s, padded): a view.
    pub(crate) fn unpadded<S: Shape>(&self, shape: S) -> Tensor<T, S, D> {
        let layout = unpad_layout(&self.layout(), S::RANK);
        debug_assert_eq!(*layout.dims(), shape.dims());
        Tensor::from_view(shape, layout, &self.storage)
    }
}

/// `dims` reading a dense buffer of the kept axes (in order, from `offset`) with stride 0 on the reduced ones.
fn spread_layout(dims: Dims, reduced: &[bool; MAX_RANK], offset: usize) -> Layout {
    let mut strides = [0; MAX_RANK];
    let mut stride = 1;
    for ax in (0..dims.len()).rev() {
        if !reduced[ax] {
            strides[ax] = stride;
            stride *= dims[ax];
        }
    }
    Layout::from_parts(dims, &strides, offset)
}

/// The number of elements over the kept axes.
fn spread_count(dims: &Dims, reduced: &[bool; MAX_RANK]) -> usize {
    (0..dims.len())
        .filter(|&ax| !reduced[ax])
        .map(|ax| dims[ax])
        .product()
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// `self = op(self, rhs)` for two tensors of one shape (in place when this tensor alone holds its dense
    /// buffer).
    pub(crate) fn assign_same<Op: BinaryOp<T>>(&mut self, op: Op, rhs: &Self) {
        debug_assert_eq!(self.dims(), rhs.dims());
        let lb = rhs.layout();
        let dims = *lb.dims();
        if let Some(out) = self.dense_out() {
            return device_ok(D::binary(op, Operand::Out(&dims), (rhs.buffer(), &lb), out));
        }
        *self = self.zip_same(op, rhs);
    }

    /// The view at `index` of `axis` of a padded tensor, in the padded form again (the axis removed, a leading
    /// size-1 axis added): the gradient of one part of a `stack`.
    pub(crate) fn select_padded(&self, axis: usize, index: usize) -> Grad<T, D> {
        let layout = device_ok(self.layout().select("stack", axis, index));
        let layout = pad_layout(&layout);
        Tensor::from_view(padded_shape(layout.dims()), layout, &self.storage)
    }

    /// A padded value of rank `rank` with a size-1 axis inserted at `axis` (of the rank `rank + 1` form), padded
    /// again: the gradient of one piece of `unbind` in its source's form, a view.
    pub(crate) fn unsqueeze_padded(&self, rank: usize, axis: usize) -> Grad<T, D> {
        let layout = unpad_layout(&self.layout(), rank).unsqueeze(axis);
        Grad::over(&self.storage, &layout)
    }

    /// The same elements (row-major) under `shape`, which has as many; copies only a strided view.
    pub(crate) fn relabel<S2: Shape>(&self, shape: S2) -> Tensor<T, S2, D> {
        debug_assert_eq!(shape.numel(), self.numel());
        let dense = self.contiguous();
        let layout = dense.layout().reshaped_contiguous(shape.dims());
        Tensor::from_view(shape, layout, &dense.storage)
    }

    /// A view of this tensor with `shape`'s dims by the broadcasting rule (stride 0 on new or stretched axes).
    pub(crate) fn expand_to<S2: Shape>(&self, shape: S2) -> Tensor<T, S2, D> {
        let layout = device_ok(self.layout().broadcast_as("expand", &shape.dims()));
        Tensor::from_view(shape, layout, &self.storage)
    }

    /// A view with `shape` (this tensor's dims plus the `reduced` axes, in place) reading this tensor's
    /// elements with stride 0 along the reduced axes: the gradient of a reduction spread over its input.
    pub(crate) fn spread_over<S2: Shape>(
        &self,
        shape: S2,
        reduced: &[bool; MAX_RANK],
    ) -> Tensor<T, S2, D> {
        // This tensor holds the kept axes in order (a keep-dim result holds them with size-1 axes between).
        let dense = self.contiguous();
        debug_assert_eq!(spread_count(&shape.dims(), reduced), dense.numel());
        let layout = spread_layout(shape.dims(), reduced, dense.offset());
        Tensor::from_view(shape, layout, &dense.storage)
    }

    /// Sums this tensor (a broadcast result) back to `shape`, an operand it was broadcast from: over the leading
    /// axes `shape` lacks and the axes where `shape` has size 1.
    pub(crate) fn sum_to<S2: Shape>(&self, shape: S2) -> Tensor<T, S2, D> {
        let (from, to) = (self.dims(), shape.dims());
        if from == to {
            return self.relabel(shape);
        }
        let lead = from.len() - to.len();
        let mut reduced = [false; MAX_RANK];
        for ax in 0..from.len() {
            reduced[ax] = ax < lead || (to[ax - lead] == 1 && from[ax] != 1);
        }
        let src = (self.buffer(), &self.layout());
        written!(
            Tensor::written_by,
            shape,
            "sum",
            call::reduce::<T, D, _>(ops::Sum, src, &reduced),
        )
    }

    /// A view with the axes permuted: axis `i` of the result is axis `perm[i]` of this tensor.
    pub(crate) fn permute_to<S2: Shape>(&self, shape: S2, perm: &[usize]) -> Tensor<T, S2, D> {
        let layout = self.layout().permute(perm);
        debug_assert_eq!(*layout.dims(), shape.dims());
        Tensor::from_view(shape, layout, &self.storage)
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// A 0/1 tensor of `T`, 1 where `op(self, rhs)` holds, for two tensors of one shape.
    pub(crate) fn mask_same(&self, op: ops::CmpOp, rhs: &Self) -> Self {
        debug_assert_eq!(self.dims(), rhs.dims());
        self.mask(op, (rhs.buffer(), &rhs.layout()))
    }

    /// A 0/1 tensor of `T`, 1 where `op(self, value)` holds.
    pub(crate) fn mask_scalar(&self, op: ops::CmpOp, value: T) -> Self {
        self.compare_scalar(op, value).to_dtype::<T>()
    }

    /// A 0/1 tensor of `T`, 1 where `op(self, rhs)` holds, `rhs` read with this tensor's dims.
    fn mask(&self, op: ops::CmpOp, rhs: (&D::Buffer<T>, &Layout)) -> Self {
        self.compare_view(op, rhs).to_dtype::<T>()
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Sums over the `reduced` axes and spreads the sums back over them (a stride-0 view of the sums): the
    /// per-lane totals softmax-like gradients need.
    pub(crate) fn sum_spread(&self, reduced: &[bool; MAX_RANK]) -> Self {
        self.reduce_spread(ops::Sum, reduced)
    }

    /// [`Self::sum_spread`] for any reduction whose result has the element type.
    pub(crate) fn reduce_spread<Op: ops::ReduceOp<T, Out = T>>(
        &self,
        op: Op,
        reduced: &[bool; MAX_RANK],
    ) -> Self {
        // The sums have a runtime shape (the kept axes); autograd runs on devices whose storage ignores it.
        let (la, n) = (self.layout(), spread_count(&self.dims(), reduced));
        let sums = device_ok(fresh::<T, Flat, D>(
            Op::NAME,
            n,
            &mut call::reduce::<T, D, _>(op, (self.buffer(), &la), reduced),
        ));
        let layout = spread_layout(self.dims(), reduced, 0);
        Tensor::from_view(self.shape, layout, &sums)
    }

    /// This tensor placed at `start` along `axis` of a zero tensor with `shape` (equal dims elsewhere): the
    /// gradient of a narrow.
    pub(crate) fn embed_in<S2: Shape>(
        &self,
        shape: S2,
        axis: usize,
        start: usize,
    ) -> Tensor<T, S2, D> {
        if self.dims()[axis] == shape.dims()[axis] {
            // Nothing to add: the same dims, a view.
            return Tensor::from_view(shape, self.layout(), &self.storage);
        }
        Self::embed_pieces(shape, axis, &[(start, self.clone())])
    }

    /// `pieces`, each `(start, piece)` placed at `start` along `axis` of a zero tensor with `shape` (equal dims
    /// elsewhere), sorted by start and not overlapping: one concatenation, zeros in the gaps. The gradient of
    /// the parts of a split, or of the steps of a sequence.
    pub(crate) fn embed_pieces<S2: Shape>(
        shape: S2,
        axis: usize,
        pieces: &[(usize, Self)],
    ) -> Tensor<T, S2, D> {
        let dims = shape.dims();
        let zeros = |n: usize| {
            let mut d = dims;
            d.as_mut_slice()[axis] = n;
            let storage = device_ok(D::full::<T, Flat>(d.numel(), T::ZERO));
            (storage, Layout::contiguous(d))
        };
        // Each segment along the axis: a gap (an index into `gaps`) or a piece.
        let mut gaps = Vec::new();
        let mut segments = Vec::with_capacity(2 * pieces.len() + 1);
        let mut cursor = 0;
        for (i, (start, piece)) in pieces.iter().enumerate() {
            debug_assert!(*start >= cursor, "embed_pieces: sorted, disjoint pieces");
            if *start > cursor {
                segments.push(Err(gaps.len()));
                gaps.push(zeros(start - cursor));
            }
            segments.push(Ok(i));
            cursor = start + piece.dims()[axis];
        }
        if cursor < dims[axis] {
            segments.push(Err(gaps.len()));
            gaps.push(zeros(dims[axis] - cursor));
        }
        let layouts: Vec<Layout> = pieces.iter().map(|(_, p)| p.layout()).collect();
        let parts: Vec<(&D::Buffer<T>, &Layout)> = segments
            .iter()
            .map(|segment| match *segment {
                Ok(i) => (pieces[i].1.buffer(), &layouts[i]),
                Err(g) => (D::buffer(&gaps[g].0), &gaps[g].1),
            })
            .collect();
        written!(
            Tensor::written_by,
            shape,
            "narrow",
            call::concat::<T, D>(&parts, axis)
        )
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The view of entries `start..` of `axis` with `shape` (this tensor's dims with `axis` shortened).
    pub(crate) fn narrow_to<S2: Shape>(
        &self,
        shape: S2,
        axis: usize,
        start: usize,
    ) -> Tensor<T, S2, D> {
        let len = shape.dims()[axis];
        let layout = device_ok(self.layout().narrow("narrow", axis, start, len));
        Tensor::from_view(shape, layout, &self.storage)
    }

    /// The view at `index` of `axis`, that axis removed, with `shape`.
    pub(crate) fn select_to<S2: Shape>(
        &self,
        shape: S2,
        axis: usize,
        index: usize,
    ) -> Tensor<T, S2, D> {
        let layout = device_ok(self.layout().select("select", axis, index));
        debug_assert_eq!(*layout.dims(), shape.dims());
        Tensor::from_view(shape, layout, &self.storage)
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Zeros of `shape` with `grad`'s elements added at the positions `view` (a view of a contiguous buffer of
    /// `shape`) reads, in row-major order: the gradient of any view made by indexing.
    pub(crate) fn scatter_view<S2: Shape>(
        shape: S,
        view: &Layout,
        grad: &Tensor<T, S2, D>,
    ) -> Self {
        debug_assert_eq!(*view.dims(), grad.dims());
        let mut offsets: alloc::vec::Vec<i64> = alloc::vec::Vec::with_capacity(view.numel());
        crate::layout::for_each_row(view.dims(), [view], |[o], len, [s]| {
            offsets.extend((0..len).map(|i| (o + i * s) as i64))
        });
        let n = offsets.len();
        let flat = |len: usize| Layout::contiguous(Dims::from_slice(&[len]));
        let idx = device_ok(D::from_vec::<i64, Flat>(offsets));
        let zeros = device_ok(D::full::<T, S>(shape.numel(), T::ZERO));
        let g = grad.contiguous();
        let lg = Layout::from_parts(
            Dims::from_slice(&[n]),
            &[1],
            g.contiguous_range().map_or(0, |r| r.start),
        );
        let (lz, li) = (flat(shape.numel()), flat(n));
        written!(
            Tensor::written_by,
            shape,
            "index",
            call::scatter_add::<T, i64, D>(
                "index",
                (D::buffer(&zeros), &lz),
                (D::buffer(&idx), &li),
                (g.buffer(), &lg),
                0,
            ),
        )
    }
}

impl<T: crate::dtype::FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// One fused Adam step on this parameter value and its moments `m`, `v` from `grad`, when the device has the
    /// kernel and can write all three in place; `false` (nothing changed) otherwise.
    pub(crate) fn adam_step_fused(
        &mut self,
        m: &mut Self,
        v: &mut Self,
        grad: &Self,
        step: ops::AdamStep,
    ) -> bool {
        if !(self.is_dense_from_start() && m.is_dense_from_start() && v.is_dense_from_start()) {
            return false;
        }
        let grad = grad.contiguous(); // a transposed-weight gradient, say: one copy beats the composed step
                                      // In place only: every buffer must be this step's alone.
        let (Some(w), Some(m), Some(v)) = (
            D::buffer_mut(&mut self.storage),
            D::buffer_mut(&mut m.storage),
            D::buffer_mut(&mut v.storage),
        ) else {
            return false;
        };
        device_ok(D::adam_step(w, m, v, (grad.buffer(), &grad.layout()), step));
        true
    }
}
