//! Joins and cuts whose count is known at run time: `unbind` (PyTorch's `torch.unbind`: every entry along an axis
//! as its own tensor, a `Vec` of views) and `stack_slice` (PyTorch's `torch.stack` of a list: any number of
//! tensors of one shape along a new axis, its size a runtime `usize`). A loop over a sequence of runtime length
//! reads its steps with the one and gathers its outputs with the other; a traced step's gradient lands in its place
//! of the source's, the pieces joined once (autograd/parts.rs).
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, Rank2<2, 3>, Cpu>::arange();
//! let columns = x.unbind::<Axis<1>>(); // three (2,) views
//! assert_eq!(columns[2].to_vec(), [2., 5.]);
//! let back = Tensor::stack_slice::<Axis<1>>(&columns); // (2, usize)
//! assert_eq!((back.dims().to_vec(), back.to_vec()), (vec![2, 3], x.to_vec()));
//! ```

use super::tensor::shape_of;
#[cfg(feature = "std")]
use crate::autograd::{record_with, Gradients, Slot, Traced};
#[cfg(feature = "std")]
use crate::dtype::FloatDType;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
#[cfg(feature = "std")]
use crate::shape::MAX_RANK;
use crate::shape::{HasAxis, InsertAxis, Shape};
use crate::tensor::{call, check_output, device_ok, or_panic, written, Tensor};
#[cfg(feature = "std")]
use crate::tensor::{padded_shape, Grad, Padded};
use alloc::vec::Vec;

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Every entry along `Ax` as a tensor without that axis, in order (PyTorch's `x.unbind(dim)`): views, no
    /// copy; an empty axis gives none.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, (Const<2>, usize), Cpu>::zeros_with_shape((Const, 4));
    /// let steps: Vec<Tensor<f32, Rank1<2>, Cpu>> = x.unbind::<Axis<1>>();
    /// assert_eq!(steps.len(), 4);
    /// ```
    pub fn unbind<Ax>(&self) -> Vec<Tensor<T, <S as HasAxis<Ax>>::Removed, D>>
    where
        S: HasAxis<Ax>,
    {
        let (layout, axis) = (self.layout(), <S as HasAxis<Ax>>::INDEX);
        (0..layout.dims()[axis])
            .map(|i| {
                let piece = device_ok(layout.select("unbind", axis, i));
                Tensor::from_view(shape_of("unbind", piece.dims()), piece, self.storage())
            })
            .collect()
    }

    /// Tensors of one shape joined along a new axis at `Ax`, however many there are (PyTorch's `torch.stack` of
    /// a list; [`Self::stack`] takes an array and types the count). Panics on an empty list or when runtime-sized
    /// dims disagree; see [`Self::try_stack_slice`].
    #[track_caller]
    pub fn stack_slice<Ax>(parts: &[Self]) -> Tensor<T, <S as InsertAxis<Ax>>::Output<usize>, D>
    where
        S: InsertAxis<Ax>,
    {
        or_panic(Self::try_stack_slice::<Ax>(parts))
    }

    /// [`Self::stack_slice`], returning `Error::InvalidArgument` for no tensors (the new axis's other dims would be
    /// unknown) and `Error::ShapeMismatch` (the first shape and the first that differs) when runtime-sized dims
    /// disagree.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let none: [Tensor<f32, Rank1<3>, Cpu>; 0] = [];
    /// let err = Tensor::try_stack_slice::<Axis<0>>(&none).unwrap_err();
    /// assert_eq!(err.to_string(), "stack_slice: needs at least one tensor");
    /// ```
    pub fn try_stack_slice<Ax>(
        parts: &[Self],
    ) -> Result<Tensor<T, <S as InsertAxis<Ax>>::Output<usize>, D>>
    where
        S: InsertAxis<Ax>,
    {
        let Some(first) = parts.first() else {
            return Err(Error::InvalidArgument {
                op: "stack_slice",
                reason: "needs at least one tensor",
            });
        };
        let (axis, dims) = (<S as InsertAxis<Ax>>::INDEX, first.dims());
        if let Some(other) = parts.iter().find(|p| p.dims() != dims) {
            return Err(Error::shape_mismatch("stack_slice", dims, other.dims()));
        }
        let layouts: Vec<Layout> = parts.iter().map(|p| p.layout().unsqueeze(axis)).collect();
        let mut out = *layouts[0].dims();
        out.as_mut_slice()[axis] = parts.len();
        check_output::<T>("stack_slice", &out)?;
        let views: Vec<_> = parts
            .iter()
            .zip(&layouts)
            .map(|(p, l)| (p.buffer(), l))
            .collect();
        written!(
            Tensor::try_written_by,
            shape_of("stack_slice", &out),
            "stack_slice",
            call::concat::<T, D>(&views, axis),
        )
    }
}

#[cfg(feature = "std")]
impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Every entry along `Ax` as a value without that axis (see [`Tensor::unbind`]); each one's gradient lands in
    /// its place of this value's, the pieces joined once when it is read.
    pub fn unbind<Ax>(&self) -> Vec<Traced<T, <S as HasAxis<Ax>>::Removed, D>>
    where
        S: HasAxis<Ax>,
    {
        let (whole, axis) = (padded_shape(&self.value.dims()), self.padded_axis::<Ax>());
        self.value
            .unbind::<Ax>()
            .into_iter()
            .enumerate()
            .map(|(i, piece)| {
                let captured = (self.slot(), whole, (axis, S::RANK), i);
                record_with(piece, &[&self.node], captured, unbind_rule::<T, D>)
            })
            .collect()
    }

    /// Values of one shape stacked along a new axis `Ax`, however many there are (see [`Tensor::stack_slice`]).
    #[track_caller]
    pub fn stack_slice<Ax>(parts: &[Self]) -> Traced<T, <S as InsertAxis<Ax>>::Output<usize>, D>
    where
        S: InsertAxis<Ax>,
    {
        let values: Vec<Tensor<T, S, D>> = parts.iter().map(|p| p.value.clone()).collect();
        let value = Tensor::stack_slice::<Ax>(&values);
        let slots: Vec<Slot> = parts.iter().map(Traced::slot).collect();
        let nodes: Vec<_> = parts.iter().map(|p| &p.node).collect();
        // The new axis of the output's padded form.
        let axis = MAX_RANK - S::RANK - 1 + <S as InsertAxis<Ax>>::INDEX;
        record_with(
            value,
            &nodes,
            (slots, axis),
            super::traced::stack_rule::<T, D, Vec<Slot>>,
        )
    }
}

/// The gradient of piece `i` of an `unbind`: a part of the source's (padded dims `whole`) at `i` along the padded
/// `axis`, the piece's gradient given its unit axis back (the source of rank `rank`).
#[cfg(feature = "std")]
fn unbind_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, whole, (axis, rank), i): (Slot, Padded, (usize, usize), usize),
    store: &mut Gradients,
) {
    let unit = axis - (MAX_RANK - rank);
    slot.give_part(store, (whole, axis, i), g.unsqueeze_padded(rank - 1, unit));
}
