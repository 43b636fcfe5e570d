//! Traced views: reshape, transpose, permute, narrow, broadcast, squeeze/unsqueeze and `.i(...)` (their gradients
//! undo the view).

use crate::autograd::{record_with, Gradients, Slot, Traced};
use crate::dtype::FloatDType;
use crate::error::Result;
use crate::ops::Device;
use crate::shape::{
    BroadcastTo, Const, ConstShape, HasAxis, InsertAxis, PermuteTo, Shape, SwapAxes, MAX_RANK,
};
use crate::tensor::{padded_shape, Grad, IndexOp, Padded, Tensor};

/// A permutation of a tensor's `perm.len()` axes as a permutation of its padded axes (the leading ones stay).
fn padded_perm(perm: &[usize]) -> [usize; MAX_RANK] {
    let lead = MAX_RANK - perm.len();
    let mut padded: [usize; MAX_RANK] = core::array::from_fn(|k| k);
    for (k, &p) in perm.iter().enumerate() {
        padded[lead + k] = lead + p;
    }
    padded
}

/// The backward rule of transpose and permute: the gradient viewed through the inverse permutation `perm`.
fn permute_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, perm): (Slot, [usize; MAX_RANK]),
    store: &mut Gradients,
) {
    let dims = g.dims();
    let permuted: [usize; MAX_RANK] = core::array::from_fn(|k| dims[perm[k]]);
    let shape = padded_shape(&crate::shape::Dims::from_slice(&permuted));
    slot.give_padded(store, g.permute_to(shape, &perm));
}

/// The backward rule of the views that keep the row-major order (reshape, squeeze, unsqueeze): the gradient
/// under the input's padded `shape`.
fn relabel_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, shape): (Slot, Padded),
    store: &mut Gradients,
) {
    slot.give_padded(store, g.relabel(shape));
}

/// `narrow`'s gradient: the output's placed at `start` along `axis` of zeros of the input's padded `shape`.
fn embed_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, shape, axis, start): (Slot, Padded, usize, usize),
    store: &mut Gradients,
) {
    slot.give_part(store, (shape, axis, start), g);
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// The same elements with another static shape of the same element count.
    #[track_caller]
    pub fn reshape<S2: ConstShape>(&self) -> Traced<T, S2, D> {
        let () = crate::ops::view::tensor::SameNumel::<S, S2>::OK;
        self.reshape_with_shape(S2::default())
    }

    /// [`Self::reshape`] to a shape with runtime dims (checked at run time, as
    /// [`Tensor::reshape_with_shape`]).
    #[track_caller]
    pub fn reshape_with_shape<S2: Shape>(&self, shape: S2) -> Traced<T, S2, D> {
        self.relabelled(self.value.reshape_with_shape(shape))
    }

    /// Records `value`, this value's elements in the same row-major order under another shape (a reshape, a
    /// squeeze): the gradient is relabelled back.
    fn relabelled<S2: Shape>(&self, value: Tensor<T, S2, D>) -> Traced<T, S2, D> {
        let captured = (self.slot(), padded_shape(&self.value.dims()));
        record_with(value, &[&self.node], captured, relabel_rule::<T, D>)
    }

    /// Exchanges axes `I` and `J`.
    pub fn transpose<I, J>(&self) -> Traced<T, <S as SwapAxes<I, J>>::Output, D>
    where
        S: SwapAxes<I, J>,
    {
        let (i, j) = <S as SwapAxes<I, J>>::AXES;
        let mut perm: [usize; MAX_RANK] = core::array::from_fn(|k| k);
        perm.swap(i, j);
        let captured = (self.slot(), padded_perm(&perm[..S::RANK]));
        record_with(
            self.value.transpose::<I, J>(),
            &[&self.node],
            captured,
            permute_rule::<T, D>,
        )
    }

    /// Reorders the axes: output axis `k` is input axis `Axes.k`.
    pub fn permute<Axes>(&self) -> Traced<T, <S as PermuteTo<Axes>>::Output, D>
    where
        S: PermuteTo<Axes>,
    {
        let mut inverse = [0; MAX_RANK];
        for (k, &p) in S::PERM[..S::RANK].iter().enumerate() {
            inverse[p] = k;
        }
        let captured = (self.slot(), padded_perm(&inverse[..S::RANK]));
        record_with(
            self.value.permute::<Axes>(),
            &[&self.node],
            captured,
            permute_rule::<T, D>,
        )
    }

    /// Keeps `LEN` entries of axis `Ax` from `START`; the gradient is zero outside them.
    #[track_caller]
    pub fn narrow<Ax, const START: usize, const LEN: usize>(
        &self,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>
    where
        S: HasAxis<Ax>,
    {
        let captured = (
            self.slot(),
            padded_shape(&self.value.dims()),
            self.padded_axis::<Ax>(),
            START,
        );
        let value = self.value.narrow::<Ax, START, LEN>();
        record_with(value, &[&self.node], captured, embed_rule::<T, D>)
    }

    /// Views with shape `Dst` (new leading axes, size-1 axes stretched); the gradient is summed back.
    #[track_caller]
    pub fn broadcast<Dst: ConstShape>(&self) -> Traced<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        let () = crate::ops::view::tensor::BroadcastFits::<S, Dst>::OK;
        self.broadcast_with_shape(Dst::default())
    }

    /// [`Self::broadcast`] under PyTorch's name (`expand`); the gradient is summed back.
    #[track_caller]
    pub fn expand<Dst: ConstShape>(&self) -> Traced<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        let () = crate::ops::view::tensor::BroadcastFits::<S, Dst>::OK;
        self.broadcast()
    }

    /// [`Self::broadcast`] to a shape with runtime dims (checked at run time: panics when a dim is neither the
    /// target's nor 1, as [`Tensor::broadcast_with_shape`]).
    #[track_caller]
    pub fn broadcast_with_shape<Dst: Shape>(&self, dst: Dst) -> Traced<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        fn rule<T: FloatDType, D: Device>(
            g: Grad<T, D>,
            (slot, shape): (Slot, Padded),
            store: &mut Gradients,
        ) {
            slot.give_padded(store, g.sum_to(shape));
        }
        let captured = (self.slot(), padded_shape(&self.value.dims()));
        record_with(
            self.value.broadcast_with_shape(dst),
            &[&self.node],
            captured,
            rule::<T, D>,
        )
    }

    /// Removes axis `Ax`, which has size 1.
    #[track_caller]
    pub fn squeeze<Ax>(&self) -> Traced<T, <S as HasAxis<Ax>>::Removed, D>
    where
        S: HasAxis<Ax>,
        <S as HasAxis<Ax>>::Dim: crate::shape::UnitDim,
    {
        self.relabelled(self.value.squeeze::<Ax>())
    }

    /// Inserts a size-1 axis at `Ax`.
    pub fn unsqueeze<Ax>(&self) -> Traced<T, <S as InsertAxis<Ax>>::Output<Const<1>>, D>
    where
        S: InsertAxis<Ax>,
    {
        self.relabelled(self.value.unsqueeze::<Ax>())
    }
}

impl<T: FloatDType, A: crate::shape::Dim, B: crate::shape::Dim, D: Device> Traced<T, (A, B), D> {
    /// The transposed matrix.
    pub fn t(&self) -> Traced<T, (B, A), D> {
        self.transpose::<crate::shape::Axis<0>, crate::shape::Axis<1>>()
    }
}

/// `.i(...)` on traced values: the view's gradient is the output's gradient added back at the positions the view
/// reads (zeros elsewhere).
impl<T: FloatDType, S: Shape, D: Device, Idx: Clone + Send + 'static, S2: Shape> IndexOp<Idx>
    for Traced<T, S, D>
where
    Tensor<T, S, D>: IndexOp<Idx, Output = Tensor<T, S2, D>>,
{
    type Output = Traced<T, S2, D>;
    fn try_i(&self, idx: Idx) -> Result<Self::Output> {
        let value = self.value.try_i(idx.clone())?;
        let captured = (self.slot(), self.value.shape(), idx);
        Ok(record_with(
            value,
            &[&self.node],
            captured,
            index_rule::<T, S, D, Idx, S2>,
        ))
    }
}

/// `.i(...)`'s gradient: the output's added back at the positions the index reads, in zeros of the input's
/// `shape`. Generic over the index and shape (it applies the index again, to a contiguous layout of the source).
fn index_rule<T: FloatDType, S: Shape, D: Device, Idx, S2: Shape>(
    g: Grad<T, D>,
    (slot, shape, idx): (Slot, S, Idx),
    store: &mut Gradients,
) where
    Tensor<T, S, D>: IndexOp<Idx, Output = Tensor<T, S2, D>>,
{
    slot.give(store, || {
        let probe = Tensor::<T, S, D>::zeros_with_shape(shape);
        let view = probe.i(idx);
        Tensor::scatter_view(shape, &view.layout(), &g.unpadded(view.shape()))
    });
}
