//! `.i(...)` indexing: an integer selects (and drops) an axis, `..` keeps it; tuples index several axes.

use crate::dtype::WithDType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{Axis, HasAxis, Shape};
use crate::tensor::Tensor;
use core::ops::RangeFull;

/// One entry of an index tuple, applied at axis `AX` of shape `S`: `usize` selects, `..` keeps.
#[diagnostic::on_unimplemented(
    message = "cannot index axis {AX} of shape `{S}` with `{Self}`",
    label = "this index has no axis to apply to",
    note = "`.i(...)` takes at most one index (an integer or `..`) per axis of the tensor"
)]
pub trait IndexItem<S: Shape, const AX: usize> {
    /// The shape after this entry.
    type Out: Shape;
    /// Applies the entry to a layout (bounds-checked).
    fn apply(self, layout: &Layout) -> Result<Layout>;
}

#[diagnostic::do_not_recommend]
impl<S: HasAxis<Axis<AX>>, const AX: usize> IndexItem<S, AX> for usize {
    type Out = S::Removed;
    fn apply(self, layout: &Layout) -> Result<Layout> {
        layout.select("i", AX, self)
    }
}

#[diagnostic::do_not_recommend]
impl<S: HasAxis<Axis<AX>>, const AX: usize> IndexItem<S, AX> for RangeFull {
    type Out = S;
    fn apply(self, layout: &Layout) -> Result<Layout> {
        Ok(*layout)
    }
}

/// Indexing with `.i(idx)` / `.try_i(idx)`; the output type drops every axis indexed by an integer.
///
/// ```
/// use typed_tensor::prelude::*;
/// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::arange();
/// let row: Tensor<f32, Rank2<3, 4>, Cpu> = a.i(1);
/// let col: Tensor<f32, Rank2<2, 4>, Cpu> = a.i((.., 2));
/// let x: Tensor<f32, Rank0, Cpu> = a.i((1, 2, 3));
/// assert_eq!(x.to_scalar(), 23.0);
/// assert_eq!(col.i((0, 1)).to_scalar(), 9.0);
/// assert_eq!(a.try_i(2).unwrap_err().to_string(), "i: index 2 is out of range for axis 0 of size 2");
/// ```
pub trait IndexOp<Idx> {
    /// The indexed view.
    type Output;
    /// The view, or `Error::IndexOutOfRange` naming the axis, index and size.
    fn try_i(&self, idx: Idx) -> Result<Self::Output>;
    /// The view; panics with the `try_i` error message on an index out of range.
    #[track_caller]
    fn i(&self, idx: Idx) -> Self::Output {
        crate::tensor::or_panic(self.try_i(idx))
    }
}

fn view<T: WithDType, S: Shape, S2: Shape, D: Device>(
    layout: Layout,
    storage: &D::Storage<T, S>,
) -> Tensor<T, S2, D> {
    let shape = S2::from_dims(layout.dims())
        .expect("typed-tensor internal error: index dims disagree with the index type");
    Tensor::from_view(shape, layout, storage)
}

impl<T: WithDType, S: Shape, D: Device> IndexOp<usize> for Tensor<T, S, D>
where
    usize: IndexItem<S, 0>,
{
    type Output = Tensor<T, <usize as IndexItem<S, 0>>::Out, D>;
    fn try_i(&self, idx: usize) -> Result<Self::Output> {
        Ok(view(idx.apply(&self.layout())?, self.storage()))
    }
}

// Entries apply from the last to the first, so removing an axis never shifts the axes still to be indexed.
macro_rules! index_tuple {
    ($out:ty; $($i:ident $ax:tt $prev:ty),*) => {
        impl<T: WithDType, S: Shape, D: Device, $($i),*> IndexOp<($($i,)*)> for Tensor<T, S, D>
        where
            $($i: IndexItem<$prev, $ax>,)*
        {
            type Output = Tensor<T, $out, D>;
            #[allow(non_snake_case)]
            fn try_i(&self, ($($i,)*): ($($i,)*)) -> Result<Self::Output> {
                let layout = self.layout();
                index_tuple!(@apply layout; $($i)*);
                Ok(view(layout, self.storage()))
            }
        }
    };
    (@apply $l:ident;) => {};
    (@apply $l:ident; $first:ident $($rest:ident)*) => {
        index_tuple!(@apply $l; $($rest)*);
        let $l = $first.apply(&$l)?;
    };
}

index_tuple!(<I0 as IndexItem<S, 0>>::Out; I0 0 S);
index_tuple!(<I0 as IndexItem<I1::Out, 0>>::Out; I0 0 I1::Out, I1 1 S);
index_tuple!(<I0 as IndexItem<I1::Out, 0>>::Out; I0 0 I1::Out, I1 1 I2::Out, I2 2 S);
index_tuple!(<I0 as IndexItem<I1::Out, 0>>::Out;
    I0 0 I1::Out, I1 1 I2::Out, I2 2 I3::Out, I3 3 S);
index_tuple!(<I0 as IndexItem<I1::Out, 0>>::Out;
    I0 0 I1::Out, I1 1 I2::Out, I2 2 I3::Out, I3 3 I4::Out, I4 4 S);
index_tuple!(<I0 as IndexItem<I1::Out, 0>>::Out;
    I0 0 I1::Out, I1 1 I2::Out, I2 2 I3::Out, I3 3 I4::Out, I4 4 I5::Out, I5 5 S);
