//! Indexing with index tensors (`u32`, `i32` or `i64`): `index_select`, `gather`, `scatter_add`, `embedding`. An index
//! out of range is `Error::IndexOutOfRange` naming the op, the axis, the index and the size (the `try_` forms),
//! or a panic with that message; never a wrap-around or an out-of-bounds read.
//!
//! ```
//! use typed_tensor::prelude::*;
//! let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
//! let cols = Tensor::<u32, _, Cpu>::from_array([2, 0, 2, 1]);
//! let picked: Tensor<f32, Rank2<2, 4>, Cpu> = x.index_select::<Axis<1>, _, _>(&cols);
//! assert_eq!(picked.to_array(), [[3., 1., 3., 2.], [6., 4., 6., 5.]]);
//!
//! let table = Tensor::<f32, _, Cpu>::from_array([[0., 0.], [1., 1.], [2., 2.]]); // 3 ids, width 2
//! let ids = Tensor::<i64, _, Cpu>::from_array([[2, 0], [1, 1]]);
//! let e: Tensor<f32, Rank3<2, 2, 2>, Cpu> = table.embedding(&ids);
//! assert_eq!(e.to_array()[0], [[2., 2.], [0., 0.]]);
//!
//! let bad = Tensor::<u32, _, Cpu>::from_array([3]);
//! let err = x.try_index_select::<Axis<1>, _, _>(&bad).unwrap_err();
//! assert_eq!(err.to_string(), "index_select: index 3 is out of range for axis 1 of size 3");
//! ```

use crate::dtype::{IndexDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Device;
use crate::shape::{AgreeExceptAxis, AppendDim, Dim, Dims, HasAxis, Shape, MAX_RANK};
use crate::tensor::{call, check_output, or_panic, written, Tensor};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Picks entries along `Ax` by a vector of indices: the axis takes the index vector's length.
    pub fn try_index_select<Ax, I: IndexDType, N: Dim>(
        &self,
        indices: &Tensor<I, (N,), D>,
    ) -> Result<Tensor<T, <S as HasAxis<Ax>>::Replaced<N>, D>>
    where
        S: HasAxis<Ax>,
    {
        let axis = S::INDEX;
        let idx_layout = self.index_select_layout(axis, indices);
        let out = *idx_layout.dims();
        check_output::<T>("index_select", &out)?;
        let shape = Shape::from_dims(&out)
            .ok_or_else(|| Error::shape_mismatch("index_select", self.dims(), out))?;
        let (src, idx) = (
            (self.buffer(), &self.layout()),
            (indices.buffer(), &idx_layout),
        );
        written!(
            Tensor::try_written_by,
            shape,
            "index_select",
            call::gather::<T, I, D>("index_select", src, idx, axis),
        )
    }

    /// The index vector seen with the output's dims of an index_select along `axis`: it varies along `axis` only.
    fn index_select_layout<I: IndexDType, N: Dim>(
        &self,
        axis: usize,
        indices: &Tensor<I, (N,), D>,
    ) -> Layout {
        let mut out = self.dims();
        out.as_mut_slice()[axis] = indices.numel();
        let mut strides = [0; MAX_RANK];
        strides[axis] = indices.strides()[0];
        Layout::from_parts(out, &strides, indices.offset())
    }

    #[cfg(feature = "std")] // autograd
    /// Zeros of this tensor's shape with `grad[p]` added at `p` with its `axis` coordinate replaced by `idx[p]`
    /// (with `idx` the indices of a gather, this is its gradient).
    pub(crate) fn scatter_into_zeros<I: IndexDType, S2: Shape>(
        &self,
        op: &'static str,
        idx: (&D::Buffer<I>, &Layout),
        grad: &Tensor<T, S2, D>,
        axis: usize,
    ) -> Self {
        let zeros = Self::from_storage(
            self.shape(),
            or_panic(D::full::<T, S>(self.numel(), T::ZERO)),
        );
        zeros.scatter_add_at(op, idx, grad, axis)
    }

    #[cfg(feature = "std")] // autograd
    /// A copy of this tensor with `src[p]` added at `p` with its `axis` coordinate replaced by `idx[p]`: the
    /// scatter-add of the gradient rules, on runtime axes and index layouts.
    pub(crate) fn scatter_add_at<I: IndexDType, S2: Shape>(
        &self,
        op: &'static str,
        idx: (&D::Buffer<I>, &Layout),
        src: &Tensor<T, S2, D>,
        axis: usize,
    ) -> Self {
        let (ld, ls) = (self.layout(), src.layout());
        let (dst, src) = ((self.buffer(), &ld), (src.buffer(), &ls));
        or_panic(written!(
            Self::try_written_by,
            self.shape(),
            op,
            call::scatter_add::<T, I, D>(op, dst, idx, src, axis),
        ))
    }

    /// [`Self::try_index_select`], panicking with the error's message on a bad index.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    /// let picked = x.index_select::<Axis<1>, u32, _>(&Tensor::from_array([2, 0, 2]));
    /// assert_eq!(picked.to_array(), [[3., 1., 3.], [6., 4., 6.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::indexing_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    /// let idx = Tensor::<f32, _, Cpu>::from_array([2., 0.]);
    /// let picked = x.index_select::<Axis<1>, f32, _>(&idx); // indices are integers (IndexDType)
    /// ```
    #[track_caller]
    pub fn index_select<Ax, I: IndexDType, N: Dim>(
        &self,
        indices: &Tensor<I, (N,), D>,
    ) -> Tensor<T, <S as HasAxis<Ax>>::Replaced<N>, D>
    where
        S: HasAxis<Ax>,
    {
        or_panic(self.try_index_select::<Ax, I, N>(indices))
    }

    /// This tensor's elements at `indices` along runtime axis `axis` (the other axes the indices'), into a dense
    /// tensor of the indices' shape, for the ops whose indices are in range by construction (the sorting family's
    /// orders, a scatter's indices in its gradient): the kernel's index check panics here, where `try_gather`
    /// returns it as an error.
    pub(crate) fn gather_axis<I: IndexDType, S2: Shape>(
        &self,
        indices: &Tensor<I, S2, D>,
        axis: usize,
    ) -> Tensor<T, S2, D> {
        let (ls, li) = (self.layout(), indices.layout());
        let (src, idx) = ((self.buffer(), &ls), (indices.buffer(), &li));
        written!(
            Tensor::written_by,
            indices.shape(),
            "gather",
            call::gather::<T, I, D>("gather", src, idx, axis),
        )
    }

    /// PyTorch's `gather`: `out[p] = self[p with its Ax coordinate replaced by indices[p]]`; the output has the
    /// index tensor's shape, which agrees with `self` on every other axis.
    pub fn try_gather<Ax, I: IndexDType, S2: Shape>(
        &self,
        indices: &Tensor<I, S2, D>,
    ) -> Result<Tensor<T, S2, D>>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        check_other_axes("gather", &self.dims(), &indices.dims(), S::INDEX)?;
        let (ls, li) = (self.layout(), indices.layout());
        let (src, idx) = ((self.buffer(), &ls), (indices.buffer(), &li));
        written!(
            Tensor::try_written_by,
            indices.shape(),
            "gather",
            call::gather::<T, I, D>("gather", src, idx, S::INDEX),
        )
    }

    /// [`Self::try_gather`], panicking with the error's message on a bad index.
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, _, Cpu>::from_array([[1., 2., 3.], [4., 5., 6.]]);
    /// let idx = Tensor::<u32, _, Cpu>::from_array([[2], [0]]);
    /// assert_eq!(x.gather::<Axis<1>, u32, _>(&idx).to_array(), [[3.], [4.]]);
    /// ```
    ///
    /// A shape mistake does not compile (more in [`crate::shape_errors::indexing_rules`]):
    ///
    /// ```compile_fail,E0277
    /// use typed_tensor::prelude::*;
    /// let x = Tensor::<f32, Rank2<2, 3>, Cpu>::zeros();
    /// let idx = Tensor::<u32, Rank2<3, 1>, Cpu>::zeros();
    /// let g = x.gather::<Axis<1>, u32, _>(&idx); // off the axis the shapes must agree: 3 rows, not 2
    /// ```
    #[track_caller]
    pub fn gather<Ax, I: IndexDType, S2: Shape>(
        &self,
        indices: &Tensor<I, S2, D>,
    ) -> Tensor<T, S2, D>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        or_panic(self.try_gather::<Ax, I, S2>(indices))
    }

    /// A copy of `self` with `src[p]` added at `p with its Ax coordinate replaced by indices[p]` (repeated
    /// indices accumulate): the reverse of `gather`, and its gradient.
    pub fn try_scatter_add<Ax, I: IndexDType, S2: Shape>(
        &self,
        indices: &Tensor<I, S2, D>,
        src: &Tensor<T, S2, D>,
    ) -> Result<Self>
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        check_other_axes("scatter_add", &self.dims(), &indices.dims(), S::INDEX)?;
        if src.dims() != indices.dims() {
            return Err(Error::shape_mismatch(
                "scatter_add",
                indices.dims(),
                src.dims(),
            ));
        }
        let (ld, li, ls) = (self.layout(), indices.layout(), src.layout());
        let (dst, idx, src) = (
            (self.buffer(), &ld),
            (indices.buffer(), &li),
            (src.buffer(), &ls),
        );
        written!(
            Self::try_written_by,
            self.shape(),
            "scatter_add",
            call::scatter_add::<T, I, D>("scatter_add", dst, idx, src, S::INDEX),
        )
    }

    /// [`Self::try_scatter_add`], panicking with the error's message on a bad index.
    #[track_caller]
    pub fn scatter_add<Ax, I: IndexDType, S2: Shape>(
        &self,
        indices: &Tensor<I, S2, D>,
        src: &Tensor<T, S2, D>,
    ) -> Self
    where
        S: AgreeExceptAxis<S2, Ax>,
    {
        or_panic(self.try_scatter_add::<Ax, I, S2>(indices, src))
    }
}

/// Runtime-sized dims must agree off the axis too (static ones agree by type).
fn check_other_axes(op: &'static str, a: &Dims, b: &Dims, axis: usize) -> Result<()> {
    let differs = (0..a.len()).any(|ax| ax != axis && a[ax] != b[ax]);
    if differs {
        return Err(Error::shape_mismatch(op, *a, *b));
    }
    Ok(())
}

#[cfg(feature = "std")] // autograd
impl<T: crate::dtype::FloatDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// Cross entropy's gradient with respect to the logits, from these log-probabilities (the classes their last
    /// axis), the rows' labels and the rows' gradients `g` (views over the rows' dims), in one kernel: see
    /// [`IndexingKernels::cross_entropy_backward`](super::IndexingKernels::cross_entropy_backward).
    pub(crate) fn cross_entropy_backward_at<I: IndexDType>(
        &self,
        labels: (&D::Buffer<I>, &Layout),
        g: (&D::Buffer<T>, &Layout),
    ) -> Self {
        let lp = self.layout();
        written!(
            Self::written_by,
            self.shape(),
            "cross_entropy",
            call::cross_entropy_backward::<T, I, D>((self.buffer(), &lp), labels, g),
        )
    }
}

impl<T: WithDType, V: Dim, E: Dim, D: Device> Tensor<T, (V, E), D> {
    /// Looks up rows of this `(V, E)` table: ids of shape `S2` give `S2 + (E,)`.
    pub fn try_embedding<I: IndexDType, S2: AppendDim>(
        &self,
        ids: &Tensor<I, S2, D>,
    ) -> Result<Tensor<T, <S2 as AppendDim>::Output<E>, D>> {
        let (v, e) = (self.dims()[0], self.dims()[1]);
        let (tv, te) = (self.strides()[0], self.strides()[1]);
        // A scalar id is looked up as a length-1 vector.
        let (id_dims, id_strides): (Dims, [usize; MAX_RANK]) = if ids.rank() == 0 {
            (Dims::from_slice(&[1]), [0; MAX_RANK])
        } else {
            let mut s = [0; MAX_RANK];
            s[..ids.rank()].copy_from_slice(&ids.strides()[..ids.rank()]);
            (ids.dims(), s)
        };
        let r = id_dims.len();
        let mut out = [0; MAX_RANK];
        out[..r].copy_from_slice(&id_dims);
        out[r] = e;
        let out = Dims::from_slice(&out[..=r]);
        check_output::<T>("embedding", &out)?;
        // Gather along axis 0: the table varies along axis 0 (rows, bounded by V) and the last axis only; the
        // ids vary along every axis but the last.
        let mut table_dims = out;
        table_dims.as_mut_slice()[0] = v;
        let mut table_strides = [0; MAX_RANK];
        table_strides[0] = tv;
        table_strides[r] = te;
        let table = Layout::from_parts(table_dims, &table_strides, self.offset());
        let idx = Layout::from_parts(out, &id_strides, ids.offset());
        let final_dims = if ids.rank() == 0 {
            Dims::from_slice(&[e])
        } else {
            out
        };
        let shape = Shape::from_dims(&final_dims)
            .ok_or_else(|| Error::shape_mismatch("embedding", self.dims(), ids.dims()))?;
        let (src, idx) = ((self.buffer(), &table), (ids.buffer(), &idx));
        written!(
            Tensor::try_written_by,
            shape,
            "embedding",
            call::gather::<T, I, D>("embedding", src, idx, 0),
        )
    }

    #[cfg(feature = "std")] // autograd
    /// `grad` (an embedding output's gradient, the ids' dims plus `E`) added into zeros of the table's shape at
    /// the rows the ids name.
    pub(crate) fn embedding_backward<I: IndexDType, S2: Shape, S3: Shape>(
        &self,
        ids: &Tensor<I, S2, D>,
        grad: &Tensor<T, S3, D>,
    ) -> Self {
        let e = self.dims()[1];
        let ids = ids.contiguous();
        let n = ids.numel();
        let rows = Dims::from_slice(&[n, e]);
        // The ids as an (n, E) view varying along axis 0 only, the gradient as (n, E) rows.
        let idx = Layout::from_parts(rows, &[1, 0], ids.offset());
        let g = grad.contiguous();
        let lg = Layout::from_parts(rows, &[e, 1], g.offset());
        let zeros = or_panic(D::full::<T, (V, E)>(self.numel(), T::ZERO));
        let lz = Layout::contiguous(self.dims());
        let (dst, idx, src) = (
            (D::buffer(&zeros), &lz),
            (ids.buffer(), &idx),
            (g.buffer(), &lg),
        );
        or_panic(written!(
            Self::try_written_by,
            self.shape(),
            "embedding",
            call::scatter_add::<T, I, D>("embedding", dst, idx, src, 0),
        ))
    }

    /// [`Self::try_embedding`], panicking with the error's message on an id past the table.
    #[track_caller]
    pub fn embedding<I: IndexDType, S2: AppendDim>(
        &self,
        ids: &Tensor<I, S2, D>,
    ) -> Tensor<T, <S2 as AppendDim>::Output<E>, D> {
        or_panic(self.try_embedding(ids))
    }
}
