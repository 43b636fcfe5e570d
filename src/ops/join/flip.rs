//! `flip` along one axis or several (PyTorch's `torch.flip(x, dims)`): `x.flip::<Axis<1>>()` or
//! `x.flip::<(Axis<0>, Axis<2>)>()`. Each axis is one gather by reversed positions; the traced form's gradient
//! flips back along the same axes.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<i32, Rank2<2, 3>, Cpu>::from_array([[1, 2, 3], [4, 5, 6]]);
//! assert_eq!(x.flip::<Axis<1>>().to_array(), [[3, 2, 1], [6, 5, 4]]);
//! assert_eq!(x.flip::<(Axis<0>, Axis<1>)>().to_array(), [[6, 5, 4], [3, 2, 1]]);
//! ```

#[cfg(feature = "std")]
use crate::autograd::{record_with, Gradients, Slot, Traced};
#[cfg(feature = "std")]
use crate::dtype::FloatDType;
use crate::dtype::{IndexDType, WithDType};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{Axis, Dim, FromEnd, HasAxis, Shape, MAX_RANK};
#[cfg(feature = "std")]
use crate::tensor::Grad;
use crate::tensor::{call, written, Tensor};

/// The axes `Axes` of a shape that `flip` reverses: one `Axis<I>`, or a tuple of them in any order.
#[diagnostic::on_unimplemented(
    message = "cannot flip shape `{Self}` along `{Axes}`",
    label = "each axis must exist in the shape",
    note = "flip one axis with `Axis<I>`, several with a tuple such as `(Axis<0>, Axis<2>)`; axes count from 0"
)]
pub trait FlipAxes<Axes>: Shape {
    /// The tensor flipped along `Axes`.
    #[doc(hidden)]
    fn flip_tensor<T: WithDType, D: Device>(x: &Tensor<T, Self, D>) -> Tensor<T, Self, D>;
    /// The traced value flipped along `Axes`.
    #[cfg(feature = "std")]
    #[doc(hidden)]
    fn flip_traced<T: FloatDType, D: Device>(x: &Traced<T, Self, D>) -> Traced<T, Self, D>;
}

/// One axis, counted from the start (`Axis<I>`) or from the end (`FromEnd<N>`).
macro_rules! flip_one {
    ($axis:ident) => {
        #[diagnostic::do_not_recommend]
        impl<S: HasAxis<$axis<I>>, const I: usize> FlipAxes<$axis<I>> for S {
            fn flip_tensor<T: WithDType, D: Device>(x: &Tensor<T, S, D>) -> Tensor<T, S, D> {
                // The positions are typed with the axis's own dim: static where the axis is (`Embedded` has no
                // other).
                let index = <S as HasAxis<$axis<I>>>::INDEX;
                let dim = <<S as HasAxis<$axis<I>>>::Dim as Dim>::from_size(x.dims()[index]);
                x.flip_axis(index, dim.expect("the axis's own size"))
            }
            #[cfg(feature = "std")]
            fn flip_traced<T: FloatDType, D: Device>(x: &Traced<T, S, D>) -> Traced<T, S, D> {
                let captured = (x.slot(), x.padded_axis::<$axis<I>>());
                record_with(
                    <S as FlipAxes<$axis<I>>>::flip_tensor(x.value()),
                    &[&x.node],
                    captured,
                    flip_rule::<T, D>,
                )
            }
        }
    };
}
flip_one!(Axis);
flip_one!(FromEnd);

/// `flip`'s gradient: the output's flipped back along the same axis.
#[cfg(feature = "std")]
fn flip_rule<T: FloatDType, D: Device>(
    g: Grad<T, D>,
    (slot, axis): (Slot, usize),
    store: &mut Gradients,
) {
    slot.give_padded(store, g.flip_axis(axis, g.dims()[axis]));
}

/// Several axes: each flipped in turn (flips along different axes commute).
macro_rules! flip_tuples {
    ($($a:ident)+) => {
        #[diagnostic::do_not_recommend]
        impl<S: Shape $(+ FlipAxes<$a>)+, $($a),+> FlipAxes<($($a,)+)> for S {
            fn flip_tensor<T: WithDType, D: Device>(x: &Tensor<T, S, D>) -> Tensor<T, S, D> {
                let y = x.clone();
                $(let y = <S as FlipAxes<$a>>::flip_tensor(&y);)+
                y
            }
            #[cfg(feature = "std")]
            fn flip_traced<T: FloatDType, D: Device>(x: &Traced<T, S, D>) -> Traced<T, S, D> {
                let y = x.clone();
                $(let y = <S as FlipAxes<$a>>::flip_traced(&y);)+
                y
            }
        }
    };
}
flip_tuples!(A);
flip_tuples!(A B);
flip_tuples!(A B C);
flip_tuples!(A B C E);
flip_tuples!(A B C E F);
flip_tuples!(A B C E F G);

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Reverses the order along `Axes`: one axis (`flip::<Axis<1>>()`) or several in any order
    /// (`flip::<(Axis<0>, Axis<2>)>()`, PyTorch's `torch.flip(x, dims=(0, 2))`).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank3<2, 1, 2>, Cpu>::from_array([[[1., 2.]], [[3., 4.]]]);
    /// assert_eq!(x.flip::<(Axis<2>, Axis<0>)>().to_array(), [[[4., 3.]], [[2., 1.]]]);
    /// ```
    ///
    /// A shape mistake does not compile:
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    /// let y = x.flip::<(Axis<0>, Axis<2>)>(); // a rank-2 shape has no Axis<2>
    /// ```
    pub fn flip<Axes>(&self) -> Self
    where
        S: FlipAxes<Axes>,
    {
        S::flip_tensor(self)
    }

    /// [`Self::flip`] along `axis`, whose size `dim` has (the gradient's flip on the padded form passes `usize`).
    pub(crate) fn flip_axis<A: Dim>(&self, axis: usize, dim: A) -> Self {
        if self.numel() == 0 {
            return self.clone(); // nothing to reverse, and no index tensor as long as the other axes
        }
        if u32::try_from(self.dims()[axis] - 1).is_ok() {
            self.flip_by::<u32, A>(axis, dim)
        } else {
            self.flip_by::<i64, A>(axis, dim)
        }
    }

    /// [`Self::flip_axis`] as a gather by positions of type `I`, which holds every position of the axis.
    fn flip_by<I: IndexDType, A: Dim>(&self, axis: usize, dim: A) -> Self {
        let n = self.dims()[axis];
        let idx = Tensor::<I, (A,), D>::filled_with("flip", (dim,), &mut |out| {
            for (i, p) in out.iter_mut().enumerate() {
                *p = I::from_f64((n - 1 - i) as f64); // exact: below 2^53, as any axis in memory
            }
        });
        let mut strides = [0; MAX_RANK];
        strides[axis] = 1;
        let idx_layout = Layout::from_parts(self.dims(), &strides, 0);
        let (src, idx) = ((self.buffer(), &self.layout()), (idx.buffer(), &idx_layout));
        written!(
            Self::written_by,
            self.shape(),
            "flip",
            call::gather::<T, I, D>("flip", src, idx, axis),
        )
    }
}

#[cfg(feature = "std")]
impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// The entries along `Axes` (one axis or several) in reverse order (see [`Tensor::flip`]); the gradient is
    /// flipped back.
    pub fn flip<Axes>(&self) -> Self
    where
        S: FlipAxes<Axes>,
    {
        S::flip_traced(self)
    }
}
