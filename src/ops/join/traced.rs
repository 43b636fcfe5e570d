//! The traced joins and rearrangements: `cat` and `stack` (each input's gradient is its slice of the output's),
//! `flip`, `roll`, `pad`, `split` (each gradient undoes the rearrangement).

use crate::autograd::{record_with, Gradients, Slot, Traceable, Traced};
use crate::dtype::FloatDType;
use crate::ops::Device;
use crate::shape::{AgreeExceptAxis, Const, HasAxis, InsertAxis, Shape, MAX_RANK};
use crate::tensor::{padded_shape, Grad, Padded, Tensor};

/// `cat`'s gradients: each input's slice of the output's, along `axis` of the padded form (`len_a` the first
/// input's length there).
fn cat_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    ([sa, sb], [shape_a, shape_b], axis, len_a): ([Slot; 2], [Padded; 2], usize, usize),
    store: &mut Gradients,
) {
    sa.give_padded_with(store, || g.narrow_to(shape_a, axis, 0));
    sb.give_padded_with(store, || g.narrow_to(shape_b, axis, len_a));
}

/// `stack`'s (and `stack_slice`'s) gradients: each input's slice at its index along the new `axis` of the output's
/// padded form.
pub(super) fn stack_rule<T: FloatDType, D: Device, P: IntoIterator<Item = Slot>>(
    g: Grad<T, D>,
    (slots, axis): (P, usize),
    store: &mut Gradients,
) {
    for (i, slot) in slots.into_iter().enumerate() {
        slot.give_padded_with(store, || g.select_padded(axis, i));
    }
}

/// The gradient of a view that kept `shape` (padded) from `start` along `axis` of a larger value (`pad`'s): the
/// output's gradient narrowed back.
fn narrow_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, shape, axis, start): (Slot, Padded, usize, usize),
    store: &mut Gradients,
) {
    slot.give_padded(store, g.narrow_to(shape, axis, start));
}

/// The gradient of a piece of `split`: the piece's gradient in zeros of the input's `shape` (padded), from `start`
/// along `axis`.
pub(crate) fn embed_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, shape, axis, start): (Slot, Padded, usize, usize),
    store: &mut Gradients,
) {
    slot.give_part(store, (shape, axis, start), g);
}

impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// `self` and `other` laid end to end along `Ax` (see [`Tensor::cat`]).
    #[track_caller]
    pub fn cat<Ax, const OUT: usize, R>(
        &self,
        other: &R,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        R: Traceable<Elem = T, Device = D>,
        S: AgreeExceptAxis<R::Shape, Ax>,
    {
        let other = other.traced();
        let value = self.value.cat::<Ax, OUT, R::Shape>(&other.value);
        let axis = self.padded_axis::<Ax>();
        let shapes = [self.value.dims(), other.value.dims()].map(|d| padded_shape(&d));
        let len_a = self.value.dims()[<S as HasAxis<Ax>>::INDEX];
        let captured = ([self.slot(), other.slot()], shapes, axis, len_a);
        record_with(
            value,
            &[&self.node, &other.node],
            captured,
            cat_rule::<T, D>,
        )
    }

    /// `N` values of one shape stacked along a new axis `Ax` (see [`Tensor::stack`]).
    #[track_caller]
    pub fn stack<Ax, const N: usize>(
        parts: &[Self; N],
    ) -> Traced<T, <S as InsertAxis<Ax>>::Output<Const<N>>, D>
    where
        S: InsertAxis<Ax>,
    {
        let values: [Tensor<T, S, D>; N] = core::array::from_fn(|i| parts[i].value.clone());
        let value = Tensor::stack::<Ax, N>(&values);
        let slots: [_; N] = core::array::from_fn(|i| parts[i].slot());
        let nodes: [_; N] = core::array::from_fn(|i| &parts[i].node);
        // The new axis of the output's padded form.
        let axis = MAX_RANK - S::RANK - 1 + <S as InsertAxis<Ax>>::INDEX;
        let captured = (slots, axis);
        record_with(value, &nodes, captured, stack_rule::<T, D, [Slot; N]>)
    }

    /// The entries of axis `Ax` rotated by `shift` (positive: towards higher indices); the gradient is rotated
    /// back.
    pub fn roll<Ax>(&self, shift: isize) -> Self
    where
        S: HasAxis<Ax>,
    {
        fn rule<T: FloatDType, D: Device>(
            g: Grad<T, D>,
            (slot, axis, shift): (Slot, usize, isize),
            store: &mut Gradients,
        ) {
            slot.give_padded(store, g.roll_axis(axis, shift.wrapping_neg()));
        }
        let captured = (self.slot(), self.padded_axis::<Ax>(), shift);
        record_with(
            self.value.roll::<Ax>(shift),
            &[&self.node],
            captured,
            rule::<T, D>,
        )
    }

    /// `BEFORE` zeros, the tensor, `AFTER` zeros along `Ax` (see [`Tensor::pad`]).
    #[track_caller]
    pub fn pad<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        self.pad_value::<Ax, BEFORE, AFTER, OUT>(T::ZERO)
    }

    /// `value` in the new entries (see [`Tensor::pad_value`]); the gradient is the output's, narrowed back.
    #[track_caller]
    pub fn pad_value<Ax, const BEFORE: usize, const AFTER: usize, const OUT: usize>(
        &self,
        value: T,
    ) -> Traced<T, <S as HasAxis<Ax>>::Replaced<Const<OUT>>, D>
    where
        S: HasAxis<Ax>,
    {
        let axis = self.padded_axis::<Ax>();
        let captured = (self.slot(), padded_shape(&self.value.dims()), axis, BEFORE);
        record_with(
            self.value.pad_value::<Ax, BEFORE, AFTER, OUT>(value),
            &[&self.node],
            captured,
            narrow_rule::<T, D>,
        )
    }

    /// `N` consecutive pieces of `LEN` entries along `Ax` (see [`Tensor::split`]).
    #[track_caller]
    pub fn split<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> [Traced<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>; N]
    where
        S: HasAxis<Ax>,
    {
        let () = super::tensor::SplitTiles::<S, Ax, LEN, N>::OK;
        self.split_unchecked::<Ax, LEN, N>()
    }

    /// [`Self::split`] without its build-time check (see [`Tensor::split_unchecked`]); panics when the pieces do
    /// not cover the axis.
    #[track_caller]
    pub(crate) fn split_unchecked<Ax, const LEN: usize, const N: usize>(
        &self,
    ) -> [Traced<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>; N]
    where
        S: HasAxis<Ax>,
    {
        let pieces = self.value.split_unchecked::<Ax, LEN, N>();
        let (shape, axis) = (padded_shape(&self.value.dims()), self.padded_axis::<Ax>());
        let mut pieces = pieces.into_iter();
        core::array::from_fn(|i| {
            let piece = pieces.next().expect("N pieces");
            let captured = (self.slot(), shape, axis, i * LEN);
            record_with(piece, &[&self.node], captured, embed_rule::<T, D>)
        })
    }
}
