//! Views: reshape, transpose, permute, narrow, broadcast, squeeze/unsqueeze, contiguous.
//!
//! All but `contiguous` (and `reshape` of a strided view) share the buffer and only rewrite the layout.

use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::size_check::{self, n, of, t};
use crate::shape::{
    narrow_static_ok, Axis, BroadcastTo, Const, ConstShape, Dim, HasAxis, InsertAxis, PermuteTo,
    Shape, SwapAxes, UnitDim,
};
use crate::tensor::{call, written};
use crate::tensor::{or_panic, Tensor};
use core::marker::PhantomData;

/// The build-time checks of static sizes, one associated `const` each: the panicking op and its `try_` twin both
/// name it, so a failing check is reported once, at the user's call.
pub(crate) struct SameNumel<S, S2>(PhantomData<(S, S2)>);
impl<S: Shape, S2: ConstShape> SameNumel<S, S2> {
    pub(crate) const OK: () = size_check::same_numel("reshape", of::<S>(), of::<S2>());
}

struct NarrowFits<S, Ax, const START: usize, const LEN: usize>(PhantomData<(S, Ax)>);
impl<S: HasAxis<Ax>, Ax, const START: usize, const LEN: usize> NarrowFits<S, Ax, START, LEN> {
    const OK: () = {
        let size = <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE;
        if let Some(size) = size
            && !narrow_static_ok(Some(size), START, LEN)
        {
            size_check::fail(
                "narrow",
                &[
                    t("START + LEN = "),
                    n(START),
                    t(" + "),
                    n(LEN),
                    t(" = "),
                    n(START + LEN),
                    t(" runs past the end of axis "),
                    n(<S as HasAxis<Ax>>::INDEX),
                    t(", of size "),
                    n(size),
                ],
            );
        }
    };
}

pub(crate) struct BroadcastFits<S, Dst>(PhantomData<(S, Dst)>);
impl<S: BroadcastTo<Dst>, Dst: Shape> BroadcastFits<S, Dst> {
    pub(crate) const OK: () = size_check::broadcast("broadcast", of::<S>(), of::<Dst>());
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// This tensor's elements through `layout` (a view of its storage: transposed, narrowed, selected, ...) as a
    /// tensor of shape `S2`, whose dims the types vouch for.
    pub(crate) fn view_as<S2: Shape>(&self, layout: Layout) -> Tensor<T, S2, D> {
        let shape = S2::from_dims(layout.dims())
            .expect("typed-tensor internal error: view dims disagree with the view type");
        Tensor::from_view(shape, layout, self.storage())
    }

    /// A dense row-major copy, or the same tensor when it already is one.
    pub fn contiguous(&self) -> Self {
        if self.is_contiguous() {
            return self.clone();
        }
        // The infallible form allocates through the shape-free path (`written_by`), compiled once per element
        // type rather than once per shape as `try_contiguous`'s `Result` is.
        let src = (self.buffer(), &self.layout());
        written!(
            Self::written_by,
            self.shape(),
            "contiguous",
            call::copy::<T, D>(src)
        )
    }

    /// [`Self::contiguous`], returning the device's error (a copy of a broadcast view too large to allocate)
    /// where that panics.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let one = Tensor::<f32, (usize,), Cpu>::full_with_shape((1,), 1.0);
    /// let view = one.broadcast_with_shape((1usize << 62,)); // free: stride 0
    /// assert!(view.try_contiguous().is_err()); // 2^64 bytes
    /// assert_eq!(one.try_contiguous().unwrap().to_vec(), [1.0]);
    /// ```
    pub fn try_contiguous(&self) -> Result<Self> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        let src = (self.buffer(), &self.layout());
        written!(
            Self::try_written_by,
            self.shape(),
            "contiguous",
            call::copy::<T, D>(src)
        )
    }

    /// The same elements with another static shape of the same element count (a `const` assertion). Free when the
    /// tensor is contiguous; a strided view is copied first.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::arange();
    /// let b: Tensor<f32, Rank3<3, 1, 2>, Cpu> = a.reshape();
    /// assert_eq!(b.to_vec(), a.to_vec());
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    /// // 6 elements cannot become 8: "reshape: the input [2, 3] has 6 elements, the target [2, 4] has 8".
    /// let b: Tensor<f32, Rank2<2, 4>, Cpu> = a.reshape();
    /// ```
    #[track_caller]
    pub fn reshape<S2: ConstShape>(&self) -> Tensor<T, S2, D> {
        let () = SameNumel::<S, S2>::OK;
        or_panic(self.reshape_checked())
    }

    /// [`Self::reshape`], returning `Error::LengthMismatch` when runtime-sized dims give another element count.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, (usize, Const<2>), Cpu>::zeros_with_shape((3, Const));
    /// let b: Tensor<f32, Rank2<2, 3>, Cpu> = a.try_reshape().unwrap();
    /// let err = a.try_reshape::<Rank1<4>>().unwrap_err();
    /// assert_eq!(err.to_string(), "reshape: shape [4] needs 4 elements, found 6");
    /// ```
    pub fn try_reshape<S2: ConstShape>(&self) -> Result<Tensor<T, S2, D>> {
        let () = SameNumel::<S, S2>::OK;
        self.reshape_checked()
    }

    fn reshape_checked<S2: ConstShape>(&self) -> Result<Tensor<T, S2, D>> {
        self.try_reshape_with_shape(S2::default())
    }

    /// [`Self::reshape`] to a shape with runtime dims, checked at run time: panics when the element counts
    /// differ (see [`Self::try_reshape_with_shape`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::arange();
    /// let rows = a.reshape_with_shape((6usize, Const::<4>)); // (6, 4), the 6 known at run time
    /// assert_eq!(rows.dims().to_vec(), [6, 4]);
    /// ```
    #[track_caller]
    pub fn reshape_with_shape<S2: Shape>(&self, shape: S2) -> Tensor<T, S2, D> {
        or_panic(self.try_reshape_with_shape(shape))
    }

    /// [`Self::reshape_with_shape`], returning `Error::LengthMismatch` when the element counts differ.
    pub fn try_reshape_with_shape<S2: Shape>(&self, shape: S2) -> Result<Tensor<T, S2, D>> {
        let target = shape.dims().try_numel("reshape")?;
        if self.numel() != target {
            return Err(Error::LengthMismatch {
                op: "reshape",
                shape: shape.dims(),
                expected: target,
                found: self.numel(),
            });
        }
        let reshaped = |src: &Self| {
            let layout = src.layout().reshaped_contiguous(shape.dims());
            Tensor::from_view(shape, layout, src.storage())
        };
        Ok(if self.is_contiguous() {
            reshaped(self)
        } else {
            reshaped(&self.contiguous())
        })
    }

    /// Exchanges axes `I` and `J` (a view).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    /// let b: Tensor<f32, Rank3<4, 3, 2>, Cpu> = a.transpose::<Axis<0>, Axis<2>>();
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    /// let b = a.transpose::<Axis<0>, Axis<2>>(); // a rank-2 shape has no Axis<2>
    /// ```
    pub fn transpose<I, J>(&self) -> Tensor<T, <S as SwapAxes<I, J>>::Output, D>
    where
        S: SwapAxes<I, J>,
    {
        let (i, j) = <S as SwapAxes<I, J>>::AXES;
        let layout = self.layout().swap_axes(i, j);
        self.view_as(layout)
    }

    /// Reorders the axes: output axis `k` is input axis `Axes.k` (a view). Every axis must appear once (a `const`
    /// assertion).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    /// let b: Tensor<f32, Rank3<4, 2, 3>, Cpu> = a.permute::<(Axis<2>, Axis<0>, Axis<1>)>();
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    /// let b = a.permute::<(Axis<0>, Axis<0>, Axis<1>)>(); // axis 0 twice, axis 2 never
    /// ```
    pub fn permute<Axes>(&self) -> Tensor<T, <S as PermuteTo<Axes>>::Output, D>
    where
        S: PermuteTo<Axes>,
    {
        const { size_check::permutation("permute", <S as PermuteTo<Axes>>::PERM, S::RANK) };
        let layout = self.layout().permute(&S::PERM[..S::RANK]);
        self.view_as(layout)
    }

    /// Keeps `LEN` entries of axis `Ax` starting at `START` (a view). Out of bounds is a `const` assertion for
    /// static dims and a panic naming the op for runtime ones (see [`Self::try_narrow`]).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 5>, Cpu> = Tensor::arange();
    /// let b: Tensor<f32, Rank2<2, 2>, Cpu> = a.narrow::<Axis<1>, 3, 2>();
    /// assert_eq!(b.to_array(), [[3., 4.], [8., 9.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 5>, Cpu> = Tensor::arange();
    /// // START + LEN = 4 + 2 runs past the 5 columns.
    /// let b: Tensor<f32, Rank2<2, 2>, Cpu> = a.narrow::<Axis<1>, 4, 2>();
    /// ```
    #[track_caller]
    pub fn narrow<Ax, const START: usize, const LEN: usize>(
        &self,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>
    where
        S: HasAxis<Ax>,
    {
        let () = NarrowFits::<S, Ax, START, LEN>::OK;
        or_panic(self.narrow_checked::<Ax, START, LEN>())
    }

    /// [`Self::narrow`], returning `Error::IndexOutOfRange` when `START + LEN` runs past a runtime-sized axis.
    pub fn try_narrow<Ax, const START: usize, const LEN: usize>(
        &self,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let () = NarrowFits::<S, Ax, START, LEN>::OK;
        self.narrow_checked::<Ax, START, LEN>()
    }

    fn narrow_checked<Ax, const START: usize, const LEN: usize>(
        &self,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>>
    where
        S: HasAxis<Ax>,
    {
        let layout = self.layout().narrow("narrow", S::INDEX, START, LEN)?;
        Ok(self.view_as(layout))
    }

    /// Views the tensor with shape `Dst`: new leading axes and size-1 axes repeat (stride 0, no copy). A dim that
    /// is neither equal nor 1 is a `const` assertion for static dims.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let col = Tensor::<f32, _, Cpu>::from_array([[1.], [2.]]);   // (2, 1)
    /// let b: Tensor<f32, Rank3<2, 2, 3>, Cpu> = col.broadcast();
    /// assert_eq!(b.to_array()[1], [[1., 1., 1.], [2., 2., 2.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0080
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank1<4>, Cpu> = Tensor::zeros();
    /// // Broadcasting aligns on the right: 4 is neither the target's 3 nor 1.
    /// let b: Tensor<f32, Rank2<2, 3>, Cpu> = a.broadcast();
    /// ```
    #[track_caller]
    pub fn broadcast<Dst: ConstShape>(&self) -> Tensor<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        let () = BroadcastFits::<S, Dst>::OK;
        or_panic(self.broadcast_checked(Dst::default()))
    }

    /// [`Self::broadcast`] under PyTorch's name (`expand`): new leading axes and size-1 axes stretched to `Dst`,
    /// a view.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let col = Tensor::<f32, _, Cpu>::from_array([[1.], [2.]]); // (2, 1)
    /// let m: Tensor<f32, Rank3<3, 2, 4>, Cpu> = col.expand();
    /// assert_eq!(m.to_array()[2][1], [2.; 4]);
    /// ```
    #[track_caller]
    pub fn expand<Dst: ConstShape>(&self) -> Tensor<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        let () = BroadcastFits::<S, Dst>::OK;
        self.broadcast()
    }

    /// [`Self::broadcast`] to a shape with runtime dims (checked at run time: panics when a dim is neither the
    /// target's nor 1; see [`Self::try_broadcast_with_shape`]).
    #[track_caller]
    pub fn broadcast_with_shape<Dst: Shape>(&self, dst: Dst) -> Tensor<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        let () = BroadcastFits::<S, Dst>::OK;
        or_panic(self.broadcast_checked(dst))
    }

    /// [`Self::broadcast_with_shape`], returning `Error::ShapeMismatch` with both shapes when a runtime dim is
    /// neither the target's nor 1.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a = Tensor::<f32, (usize,), Cpu>::zeros_with_shape((3,));
    /// let err = a.try_broadcast_with_shape((Const::<2>, 4)).unwrap_err();
    /// assert_eq!(err.to_string(), "broadcast: shapes [3] and [2, 4] do not match");
    /// ```
    pub fn try_broadcast_with_shape<Dst: Shape>(&self, dst: Dst) -> Result<Tensor<T, Dst, D>>
    where
        S: BroadcastTo<Dst>,
    {
        let () = BroadcastFits::<S, Dst>::OK;
        self.broadcast_checked(dst)
    }

    fn broadcast_checked<Dst: Shape>(&self, dst: Dst) -> Result<Tensor<T, Dst, D>>
    where
        S: BroadcastTo<Dst>,
    {
        let layout = self.layout().broadcast_as("broadcast", &dst.dims())?;
        Ok(Tensor::from_view(dst, layout, self.storage()))
    }

    /// Removes axis `Ax`, which must have size 1 (a bound, [`UnitDim`], for static dims; a runtime-sized axis
    /// panics, see [`Self::try_squeeze`]).
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 3>, Cpu> = Tensor::zeros();
    /// let b = a.squeeze::<Axis<0>>(); // axis 0 has size 2, not 1
    /// ```
    #[track_caller]
    pub fn squeeze<Ax>(&self) -> Tensor<T, <S as HasAxis<Ax>>::Removed, D>
    where
        S: HasAxis<Ax>,
        <S as HasAxis<Ax>>::Dim: UnitDim,
    {
        or_panic(self.squeeze_checked::<Ax>())
    }

    /// [`Self::squeeze`], returning `Error::AxisSize` when a runtime-sized axis is not 1.
    pub fn try_squeeze<Ax>(&self) -> Result<Tensor<T, <S as HasAxis<Ax>>::Removed, D>>
    where
        S: HasAxis<Ax>,
        <S as HasAxis<Ax>>::Dim: UnitDim,
    {
        self.squeeze_checked::<Ax>()
    }

    fn squeeze_checked<Ax>(&self) -> Result<Tensor<T, <S as HasAxis<Ax>>::Removed, D>>
    where
        S: HasAxis<Ax>,
    {
        let size = self.dims()[S::INDEX];
        if size != 1 {
            return Err(Error::AxisSize {
                op: "squeeze",
                axis: S::INDEX,
                expected: 1,
                found: size,
            });
        }
        let layout = self.layout().select("squeeze", S::INDEX, 0)?;
        Ok(self.view_as(layout))
    }

    /// Inserts a size-1 axis at position `Ax` (`Axis<RANK>` appends one).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    /// let b: Tensor<f32, Rank2<1, 3>, Cpu> = a.unsqueeze::<Axis<0>>();
    /// let c: Tensor<f32, Rank2<3, 1>, Cpu> = a.unsqueeze::<Axis<1>>();
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::view_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    /// let b = a.unsqueeze::<Axis<2>>(); // a new axis goes at 0 or 1 of a rank-1 shape
    /// ```
    pub fn unsqueeze<Ax>(&self) -> Tensor<T, <S as InsertAxis<Ax>>::Output<Const<1>>, D>
    where
        S: InsertAxis<Ax>,
    {
        let layout = self.layout().unsqueeze(<S as InsertAxis<Ax>>::INDEX);
        self.view_as(layout)
    }
}

impl<T: WithDType, A: Dim, B: Dim, D: Device> Tensor<T, (A, B), D> {
    /// The transposed matrix (a view).
    pub fn t(&self) -> Tensor<T, (B, A), D> {
        self.transpose::<Axis<0>, Axis<1>>()
    }
}
