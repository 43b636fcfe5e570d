//! Views: reshape, transpose, permute, narrow, broadcast, squeeze/unsqueeze, contiguous.
//!
//! All but `contiguous` (and `reshape` of a strided view) share the buffer and only rewrite the layout.

use super::{device_ok, Tensor};
use crate::device::Device;
use crate::dtype::WithDType;
use crate::shape::{
    broadcast_static_ok, is_permutation, narrow_static_ok, numel_static_eq, static_numel, Axis,
    BroadcastTo, Const, ConstShape, Dim, HasAxis, InsertAxis, PermuteTo, Shape, SwapAxes,
};

/// Builds the typed shape from the runtime dims of a view the types already vouch for.
fn shape_of<S: Shape>(dims: &[usize]) -> S {
    S::from_dims(dims).expect("typed-tensor internal error: view dims disagree with the view type")
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// A dense row-major copy, or the same tensor when it already is one.
    pub fn contiguous(&self) -> Self {
        if self.is_contiguous() {
            return self.clone();
        }
        let storage = device_ok(D::copy_strided(self.buffer(), &self.layout()));
        Self::from_storage(self.shape, storage)
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
    pub fn reshape<S2: ConstShape>(&self) -> Tensor<T, S2, D> {
        const {
            assert!(
                numel_static_eq(static_numel(S::STATIC_DIMS), Some(S2::NUMEL)),
                "reshape: the target shape has a different number of elements"
            )
        };
        if self.numel() != S2::NUMEL {
            panic!(
                "reshape: shape {} has {} elements, target {} has {}",
                self.dims(),
                self.numel(),
                S2::default().dims(),
                S2::NUMEL
            );
        }
        let reshaped = |src: &Self| {
            let layout = src.layout().reshaped_contiguous(S2::default().dims());
            Tensor::from_view(S2::default(), layout, &src.storage)
        };
        if self.is_contiguous() {
            reshaped(self)
        } else {
            reshaped(&self.contiguous())
        }
    }

    /// Exchanges axes `I` and `J` (a view).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    /// let b: Tensor<f32, Rank3<4, 3, 2>, Cpu> = a.transpose::<Axis<0>, Axis<2>>();
    /// ```
    pub fn transpose<I, J>(&self) -> Tensor<T, <S as SwapAxes<I, J>>::Output, D>
    where
        S: SwapAxes<I, J>,
    {
        let (i, j) = <S as SwapAxes<I, J>>::AXES;
        let layout = self.layout().swap_axes(i, j);
        Tensor::from_view(shape_of(layout.dims()), layout, &self.storage)
    }

    /// Reorders the axes: output axis `k` is input axis `Axes.k` (a view). Every axis must appear once (a `const`
    /// assertion).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank3<2, 3, 4>, Cpu> = Tensor::zeros();
    /// let b: Tensor<f32, Rank3<4, 2, 3>, Cpu> = a.permute::<(Axis<2>, Axis<0>, Axis<1>)>();
    /// ```
    pub fn permute<Axes>(&self) -> Tensor<T, <S as PermuteTo<Axes>>::Output, D>
    where
        S: PermuteTo<Axes>,
    {
        const {
            assert!(
                is_permutation(<S as PermuteTo<Axes>>::PERM, S::RANK),
                "permute: every axis must appear exactly once"
            )
        };
        let layout = self.layout().permute(&S::PERM[..S::RANK]);
        Tensor::from_view(shape_of(layout.dims()), layout, &self.storage)
    }

    /// Keeps `LEN` entries of axis `Ax` starting at `START` (a view). Out of bounds is a `const` assertion for
    /// static dims and a panic naming the op for runtime ones.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank2<2, 5>, Cpu> = Tensor::arange();
    /// let b: Tensor<f32, Rank2<2, 2>, Cpu> = a.narrow::<Axis<1>, 3, 2>();
    /// assert_eq!(b.to_array(), [[3., 4.], [8., 9.]]);
    /// ```
    pub fn narrow<Ax, const START: usize, const LEN: usize>(
        &self,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<Const<LEN>>, D>
    where
        S: HasAxis<Ax>,
    {
        const {
            assert!(
                narrow_static_ok(<<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE, START, LEN),
                "narrow: START + LEN runs past the end of the axis"
            )
        };
        let layout = device_ok(self.layout().narrow("narrow", S::INDEX, START, LEN));
        Tensor::from_view(shape_of(layout.dims()), layout, &self.storage)
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
    pub fn broadcast<Dst: ConstShape>(&self) -> Tensor<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        self.broadcast_with_shape(Dst::default())
    }

    /// [`Self::broadcast`] to a shape with runtime dims (checked at run time).
    pub fn broadcast_with_shape<Dst: Shape>(&self, dst: Dst) -> Tensor<T, Dst, D>
    where
        S: BroadcastTo<Dst>,
    {
        const {
            assert!(
                broadcast_static_ok(S::STATIC_DIMS, S::RANK, Dst::STATIC_DIMS, Dst::RANK),
                "broadcast: each dim must equal the target's or be 1"
            )
        };
        let layout = device_ok(self.layout().broadcast_as("broadcast", &dst.dims()));
        Tensor::from_view(dst, layout, &self.storage)
    }

    /// Removes axis `Ax`, which must have size 1 (a `const` assertion for static dims).
    pub fn squeeze<Ax>(&self) -> Tensor<T, <S as HasAxis<Ax>>::Removed, D>
    where
        S: HasAxis<Ax>,
    {
        const {
            assert!(
                matches!(
                    <<S as HasAxis<Ax>>::Dim as Dim>::STATIC_SIZE,
                    Some(1) | None
                ),
                "squeeze: the axis must have size 1"
            )
        };
        if self.dims()[S::INDEX] != 1 {
            panic!(
                "squeeze: axis {} of shape {} has size {}, not 1",
                S::INDEX,
                self.dims(),
                self.dims()[S::INDEX]
            );
        }
        let layout = device_ok(self.layout().select("squeeze", S::INDEX, 0));
        Tensor::from_view(shape_of(layout.dims()), layout, &self.storage)
    }

    /// Inserts a size-1 axis at position `Ax` (`Axis<RANK>` appends one).
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let a: Tensor<f32, Rank1<3>, Cpu> = Tensor::zeros();
    /// let b: Tensor<f32, Rank2<1, 3>, Cpu> = a.unsqueeze::<Axis<0>>();
    /// let c: Tensor<f32, Rank2<3, 1>, Cpu> = a.unsqueeze::<Axis<1>>();
    /// ```
    pub fn unsqueeze<Ax>(&self) -> Tensor<T, <S as InsertAxis<Ax>>::Output<Const<1>>, D>
    where
        S: InsertAxis<Ax>,
    {
        let layout = self.layout().unsqueeze(<S as InsertAxis<Ax>>::INDEX);
        Tensor::from_view(shape_of(layout.dims()), layout, &self.storage)
    }
}

impl<T: WithDType, A: Dim, B: Dim, D: Device> Tensor<T, (A, B), D> {
    /// The transposed matrix (a view).
    pub fn t(&self) -> Tensor<T, (B, A), D> {
        self.transpose::<Axis<0>, Axis<1>>()
    }
}
