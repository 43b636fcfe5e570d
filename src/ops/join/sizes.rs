//! `split_sizes`: pieces of given sizes along one axis (PyTorch's `torch.split(x, [4, 2, 2], dim)`), the sizes
//! named once as a tuple of `Const`s, so each piece has its own static shape: the unequal query, key and value
//! parts of a grouped-query projection, say. The pieces are views; each traced piece's gradient lands in its
//! place of the input's.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, Rank2<2, 8>, Cpu>::arange();
//! let (q, k, v) = x.split_sizes::<Axis<1>, (Const<4>, Const<2>, Const<2>)>();
//! let q: Tensor<f32, Rank2<2, 4>, Cpu> = q; // each piece's own shape
//! assert_eq!(k.to_array(), [[4., 5.], [12., 13.]]);
//! assert_eq!(v.to_array(), [[6., 7.], [14., 15.]]);
//! ```

use super::tensor::shape_of;
#[cfg(feature = "std")]
use crate::autograd::{record_with, Traced};
#[cfg(feature = "std")]
use crate::dtype::FloatDType;
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::size_check::{self, n, t, PanicVal};
use crate::shape::{Const, ConstShape, Dim, HasAxis, Shape, MAX_RANK};
#[cfg(feature = "std")]
use crate::tensor::padded_shape;
use crate::tensor::{device_ok, or_panic, Tensor};
use core::marker::PhantomData;

/// The sizes `split_sizes` cuts an axis into: a tuple of one to six `Const`s, `(Const<4>, Const<2>)`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of sizes to split into",
    label = "name the sizes as a tuple of `Const`s",
    note = "`(Const<4>, Const<2>, Const<2>)` cuts an axis of 8 into 4, 2 and 2; one to six pieces"
)]
pub trait SplitSizes: ConstShape {
    /// The pieces of a tensor of shape `S` split along `Ax`.
    type Pieces<T: WithDType, S: HasAxis<Ax>, Ax, D: Device>;
    /// The pieces of a traced value.
    #[cfg(feature = "std")]
    type TracedPieces<T: FloatDType, S: HasAxis<Ax>, Ax, D: Device>;
    /// The views of `x` at the sizes' offsets along `Ax` (which the caller has checked they cover).
    #[doc(hidden)]
    fn pieces<T: WithDType, S: HasAxis<Ax>, Ax, D: Device>(
        x: &Tensor<T, S, D>,
    ) -> Self::Pieces<T, S, Ax, D>;
    /// The traced pieces, each recording where its gradient goes.
    #[cfg(feature = "std")]
    #[doc(hidden)]
    fn traced_pieces<T: FloatDType, S: HasAxis<Ax>, Ax, D: Device>(
        x: &Traced<T, S, D>,
    ) -> Self::TracedPieces<T, S, Ax, D>;
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// The view of `len` entries from `start` along `axis`, as shape `S2` (a piece of a split).
    fn piece<S2: Shape>(&self, axis: usize, start: usize, len: usize) -> Tensor<T, S2, D> {
        let layout = device_ok(self.layout().narrow("split_sizes", axis, start, len));
        Tensor::from_view(
            shape_of("split_sizes", layout.dims()),
            layout,
            self.storage(),
        )
    }
}

macro_rules! split_sizes {
    ($($p:ident)+) => {
        #[diagnostic::do_not_recommend]
        impl<$(const $p: usize),+> SplitSizes for ($(Const<$p>,)+) {
            type Pieces<T: WithDType, S: HasAxis<Ax>, Ax, D: Device> =
                ($(Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<$p>>, D>,)+);
            #[cfg(feature = "std")]
            type TracedPieces<T: FloatDType, S: HasAxis<Ax>, Ax, D: Device> =
                ($(Traced<T, <S as HasAxis<Ax>>::Replaced<Const<$p>>, D>,)+);
            #[allow(unused_assignments)] // the last piece's end
            fn pieces<T: WithDType, S: HasAxis<Ax>, Ax, D: Device>(
                x: &Tensor<T, S, D>,
            ) -> Self::Pieces<T, S, Ax, D> {
                let mut start = 0;
                ($({
                    let piece = x.piece(S::INDEX, start, $p);
                    start += $p;
                    piece
                },)+)
            }
            #[cfg(feature = "std")]
            #[allow(unused_assignments)]
            fn traced_pieces<T: FloatDType, S: HasAxis<Ax>, Ax, D: Device>(
                x: &Traced<T, S, D>,
            ) -> Self::TracedPieces<T, S, Ax, D> {
                let (shape, axis) = (padded_shape(&x.value().dims()), x.padded_axis::<Ax>());
                let mut start = 0;
                ($({
                    let piece = x.value().piece(S::INDEX, start, $p);
                    let captured = (x.slot(), shape, axis, start);
                    start += $p;
                    record_with(piece, &[&x.node], captured, super::traced::embed_rule::<T, D>)
                },)+)
            }
        }
    };
}
split_sizes!(A);
split_sizes!(A B);
split_sizes!(A B C);
split_sizes!(A B C E);
split_sizes!(A B C E F);
split_sizes!(A B C E F G);

/// The sizes' sum.
const fn total<P: SplitSizes>() -> usize {
    let mut sum = 0;
    let mut i = 0;
    while i < P::RANK {
        if let Some(size) = P::STATIC_DIMS[i] {
            sum += size;
        }
        i += 1;
    }
    sum
}

/// The build-time check of `split_sizes`: the sizes add up to a static axis, "4 + 2 + 2 = 8".
struct SizesCover<S, Ax, P>(PhantomData<(S, Ax, P)>);
impl<S: HasAxis<Ax>, Ax, P: SplitSizes> SizesCover<S, Ax, P> {
    const OK: () = if let Some(size) = <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE
        && total::<P>() != size
    {
        let sizes = &size_check::static_dims::<P>();
        let mut sum: [PanicVal<'static>; 2 * MAX_RANK] = [t(""); 2 * MAX_RANK];
        let mut i = 0;
        while i < P::RANK {
            sum[2 * i] = if i == 0 { t("") } else { t(" + ") };
            sum[2 * i + 1] = n(sizes[i]);
            i += 1;
        }
        size_check::concat_panic(&[
            &[t("split_sizes: the sizes ")],
            &sum,
            &[
                t(" = "),
                n(total::<P>()),
                t(" must add up to the size of axis "),
                n(<S as HasAxis<Ax>>::INDEX),
                t(", "),
                n(size),
            ],
        ]);
    };
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Pieces of the sizes `P` along `Ax`, in order, as views (PyTorch's `split` with a list of sizes): `P` is a
    /// tuple of `Const`s that must add up to the axis's size, a build error naming the sum for a static axis,
    /// a panic for a runtime-sized one (see [`Self::try_split_sizes`]). Equal pieces: [`Self::split`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i32, Rank1<5>, Cpu>::from_array([1, 2, 3, 4, 5]);
    /// let (a, b) = x.split_sizes::<Axis<0>, (Const<2>, Const<3>)>();
    /// assert_eq!((a.to_array(), b.to_array()), ([1, 2], [3, 4, 5]));
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::join_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<i32, Rank1<5>, Cpu>::zeros();
    /// // "split_sizes: the sizes 2 + 2 = 4 must add up to the size of axis 0, 5"
    /// let (a, b) = x.split_sizes::<Axis<0>, (Const<2>, Const<2>)>();
    /// ```
    #[track_caller]
    pub fn split_sizes<Ax, P: SplitSizes>(&self) -> P::Pieces<T, S, Ax, D>
    where
        S: HasAxis<Ax>,
    {
        let () = SizesCover::<S, Ax, P>::OK;
        or_panic(self.try_split_sizes::<Ax, P>())
    }

    /// [`Self::split_sizes`], returning `Error::AxisSize` when the sizes do not add up to a runtime-sized axis.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, (usize,), Cpu>::zeros_with_shape((6,));
    /// let err = x.try_split_sizes::<Axis<0>, (Const<2>, Const<3>)>().unwrap_err();
    /// assert_eq!(err.to_string(), "split_sizes: axis 0 has size 6, expected 5");
    /// ```
    pub fn try_split_sizes<Ax, P: SplitSizes>(&self) -> Result<P::Pieces<T, S, Ax, D>>
    where
        S: HasAxis<Ax>,
    {
        let () = SizesCover::<S, Ax, P>::OK;
        let size = self.dims()[S::INDEX];
        if total::<P>() != size {
            return Err(Error::AxisSize {
                op: "split_sizes",
                axis: S::INDEX,
                expected: total::<P>(),
                found: size,
            });
        }
        Ok(P::pieces(self))
    }
}

#[cfg(feature = "std")]
impl<T: FloatDType, S: Shape, D: Device> Traced<T, S, D> {
    /// Pieces of the sizes `P` along `Ax` (see [`Tensor::split_sizes`]); each piece's gradient goes to its
    /// place in the input's.
    #[track_caller]
    pub fn split_sizes<Ax, P: SplitSizes>(&self) -> P::TracedPieces<T, S, Ax, D>
    where
        S: HasAxis<Ax>,
    {
        let () = SizesCover::<S, Ax, P>::OK;
        or_panic(self.value().try_split_sizes::<Ax, P>().map(|_| ()));
        P::traced_pieces(self)
    }
}
