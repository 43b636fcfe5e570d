//! `Tensor::custom_op(_to)` and `Tensor::custom_op2(_to)`: a user's [`CustomOp1`] or [`CustomOp2`] on tensors.

use super::{CustomOp1, CustomOp2};
use crate::dtype::WithDType;
use crate::error::{Error, Result};
use crate::ops::Device;
use crate::shape::{Dims, Shape};
use crate::tensor::{check_output, or_panic, Tensor};

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// A user's op (see [`CustomOp1`]) that keeps the shape: its kernel for this device on this tensor's
    /// elements (a strided view is copied dense first). Panics with the op's error, or when its `output_dims`
    /// are not the input's; see [`Self::try_custom_op`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::custom::{CustomOp1, HostView};
    ///
    /// struct Double;
    /// impl CustomOp1<i32> for Double {
    ///     fn name(&self) -> &'static str {
    ///         "double"
    ///     }
    ///     fn cpu_forward(&self, x: HostView<'_, i32>, y: &mut [i32]) -> Result<()> {
    ///         y.iter_mut().zip(x.data).for_each(|(y, &x)| *y = 2 * x);
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let x = Tensor::<i32, _, Cpu>::from_array([[1, 2, 3], [4, 5, 6]]);
    /// assert_eq!(x.t().custom_op(Double).to_array(), [[2, 8], [4, 10], [6, 12]]);
    /// ```
    #[track_caller]
    pub fn custom_op<Op: CustomOp1<T>>(&self, op: Op) -> Self {
        or_panic(self.try_custom_op(op))
    }

    /// [`Self::custom_op`], returning the op's error, or `Error::ShapeMismatch` when its `output_dims` are not
    /// the input's.
    pub fn try_custom_op<Op: CustomOp1<T>>(&self, op: Op) -> Result<Self> {
        self.try_custom_op_to(op)
    }

    /// A user's op (see [`CustomOp1`]) whose output has the shape `S2`, which its `output_dims` must give (a
    /// runtime-sized dim of `S2` takes the op's value). Panics with the op's error or that mismatch; see
    /// [`Self::try_custom_op_to`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::custom::{CustomOp1, HostView};
    /// use typed_tensor::shape::Dims;
    ///
    /// /// Every element twice in a row: `(N,) -> (2 N,)`.
    /// struct Stutter;
    /// impl CustomOp1<f32> for Stutter {
    ///     fn name(&self) -> &'static str {
    ///         "stutter"
    ///     }
    ///     fn output_dims(&self, input: &Dims) -> Result<Dims> {
    ///         Ok(Dims::from_slice(&[2 * input[0]]))
    ///     }
    ///     fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
    ///         for (pair, &x) in y.chunks_mut(2).zip(x.data) {
    ///             pair.fill(x);
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let x = Tensor::<f32, _, Cpu>::from_array([1.0, 2.0]);
    /// let y: Tensor<f32, Rank1<4>, Cpu> = x.custom_op_to(Stutter);
    /// assert_eq!(y.to_vec(), [1.0, 1.0, 2.0, 2.0]);
    /// // A runtime-sized output takes the op's size.
    /// let z: Tensor<f32, (usize,), Cpu> = x.custom_op_to(Stutter);
    /// assert_eq!(z.dims().as_slice(), [4]);
    /// ```
    #[track_caller]
    pub fn custom_op_to<S2: Shape, Op: CustomOp1<T>>(&self, op: Op) -> Tensor<T, S2, D> {
        or_panic(self.try_custom_op_to(op))
    }

    /// [`Self::custom_op_to`], returning the op's error, or `Error::ShapeMismatch` (the dims `S2` asks for, then
    /// the op's) when its `output_dims` do not fit `S2`.
    pub fn try_custom_op_to<S2: Shape, Op: CustomOp1<T>>(
        &self,
        op: Op,
    ) -> Result<Tensor<T, S2, D>> {
        self.try_contiguous()?.custom_forward(&op)
    }

    /// The forward of `op` on this tensor, which is contiguous (the traced forms keep the op).
    pub(super) fn custom_forward<S2: Shape, Op: CustomOp1<T>>(
        &self,
        op: &Op,
    ) -> Result<Tensor<T, S2, D>> {
        let dims = op.output_dims(&self.dims())?;
        let shape = output_shape::<T, S2>(op.name(), &dims)?;
        let storage = D::custom_forward::<T, S2, Op>(op, (self.buffer(), &self.layout()), &dims)?;
        Ok(Tensor::from_storage(shape, storage))
    }
}

impl<T: WithDType, S: Shape, D: Device> Tensor<T, S, D> {
    /// A user's op of two inputs (see [`CustomOp2`]) whose output has this tensor's shape: its kernel for this
    /// device on both tensors' elements (strided views are copied dense first). Panics with the op's error, or
    /// when its `output_dims` are not this tensor's; see [`Self::try_custom_op2`].
    ///
    /// ```
    /// use typed_tensor::prelude::*;
    /// use typed_tensor::ops::custom::{CustomOp2, HostView};
    ///
    /// /// `a` where `a` is larger in magnitude, else `b`.
    /// struct Larger;
    /// impl CustomOp2<f32> for Larger {
    ///     fn name(&self) -> &'static str {
    ///         "larger"
    ///     }
    ///     fn cpu_forward(&self, a: HostView<'_, f32>, b: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
    ///         for ((y, a), b) in y.iter_mut().zip(a.data).zip(b.data) {
    ///             *y = if a.abs() >= b.abs() { *a } else { *b };
    ///         }
    ///         Ok(())
    ///     }
    /// }
    ///
    /// let a = Tensor::<f32, _, Cpu>::from_array([1.0, -4.0]);
    /// let b = Tensor::<f32, _, Cpu>::from_array([-2.0, 3.0]);
    /// assert_eq!(a.custom_op2(&b, Larger).to_vec(), [-2.0, -4.0]);
    /// ```
    #[track_caller]
    pub fn custom_op2<S2: Shape, Op: CustomOp2<T>>(&self, rhs: &Tensor<T, S2, D>, op: Op) -> Self {
        or_panic(self.try_custom_op2(rhs, op))
    }

    /// [`Self::custom_op2`], returning the op's error, or `Error::ShapeMismatch` when its `output_dims` are not
    /// this tensor's.
    pub fn try_custom_op2<S2: Shape, Op: CustomOp2<T>>(
        &self,
        rhs: &Tensor<T, S2, D>,
        op: Op,
    ) -> Result<Self> {
        self.try_custom_op2_to(rhs, op)
    }

    /// A user's op of two inputs (see [`CustomOp2`]) whose output has the shape `S3`, which its `output_dims`
    /// must give; see [`Self::custom_op_to`] for the rules. Panics with the op's error or that mismatch; see
    /// [`Self::try_custom_op2_to`].
    #[track_caller]
    pub fn custom_op2_to<S2: Shape, S3: Shape, Op: CustomOp2<T>>(
        &self,
        rhs: &Tensor<T, S2, D>,
        op: Op,
    ) -> Tensor<T, S3, D> {
        or_panic(self.try_custom_op2_to(rhs, op))
    }

    /// [`Self::custom_op2_to`], returning the op's error or the mismatch.
    pub fn try_custom_op2_to<S2: Shape, S3: Shape, Op: CustomOp2<T>>(
        &self,
        rhs: &Tensor<T, S2, D>,
        op: Op,
    ) -> Result<Tensor<T, S3, D>> {
        self.try_contiguous()?
            .custom_forward2(&rhs.try_contiguous()?, &op)
    }

    /// The forward of `op` on this tensor and `rhs`, both contiguous (the traced forms keep the op).
    pub(super) fn custom_forward2<S2: Shape, S3: Shape, Op: CustomOp2<T>>(
        &self,
        rhs: &Tensor<T, S2, D>,
        op: &Op,
    ) -> Result<Tensor<T, S3, D>> {
        let dims = op.output_dims(&self.dims(), &rhs.dims())?;
        let shape = output_shape::<T, S3>(op.name(), &dims)?;
        let (la, lb) = (self.layout(), rhs.layout());
        let storage =
            D::custom_forward2::<T, S3, Op>(op, (self.buffer(), &la), (rhs.buffer(), &lb), &dims)?;
        Ok(Tensor::from_storage(shape, storage))
    }
}

/// The output type's shape of the dims an op's `output_dims` gave: `Error::ShapeMismatch` when they do not fit
/// `S2`, `Error::ShapeOverflow` when they are too large to allocate.
fn output_shape<T: WithDType, S2: Shape>(op: &'static str, dims: &Dims) -> Result<S2> {
    let shape =
        S2::from_dims(dims).ok_or_else(|| Error::shape_mismatch(op, wanted::<S2>(dims), *dims))?;
    check_output::<T>(op, dims)?;
    Ok(shape)
}

/// The dims of `S2` for an error: its static dims, and where it has a runtime-sized one the op's `found` value at
/// that axis (0 where the op gave fewer axes).
fn wanted<S2: Shape>(found: &Dims) -> Dims {
    let mut dims = Dims::from_slice(&[0; crate::shape::MAX_RANK][..S2::RANK]);
    for (i, d) in dims.as_mut_slice().iter_mut().enumerate() {
        *d = S2::STATIC_DIMS[i].unwrap_or_else(|| found.get(i).copied().unwrap_or(0));
    }
    dims
}
