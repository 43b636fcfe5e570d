//! Ops of two inputs: [`CustomOp2`] (the forward's kernels) and [`CustomOp2Backward`] (both inputs' gradients).

#[cfg(feature = "cuda")]
use super::CudaView;
use super::HostView;
use crate::dtype::{FloatDType, WithDType};
use crate::error::{Error, Result};
use crate::shape::Dims;

/// An op with two inputs, written outside the crate (see [`CustomOp1`](super::CustomOp1), whose rules it
/// follows): [`Tensor::custom_op2`](crate::Tensor::custom_op2) (the first input's shape kept) and
/// [`Tensor::custom_op2_to`](crate::Tensor::custom_op2_to) run it. The inputs may have different shapes (a matrix
/// and a vector of weights, say); `output_dims` says which they may be.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::ops::custom::{CustomOp2, HostView};
/// use typed_tensor::shape::Dims;
///
/// /// `x * w` with one weight per column: `(R, C)` and `(C,)` to `(R, C)`.
/// struct ScaleColumns;
///
/// impl CustomOp2<f32> for ScaleColumns {
///     fn name(&self) -> &'static str {
///         "scale_columns"
///     }
///     fn output_dims(&self, x: &Dims, w: &Dims) -> Result<Dims> {
///         if x.len() != 2 || w.as_slice() != [x[1]] {
///             return Err(Error::shape_mismatch("scale_columns", *x, *w));
///         }
///         Ok(*x)
///     }
///     fn cpu_forward(&self, x: HostView<'_, f32>, w: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
///         for (y_row, x_row) in y.chunks_mut(w.data.len()).zip(x.data.chunks(w.data.len())) {
///             for ((y, x), w) in y_row.iter_mut().zip(x_row).zip(w.data) {
///                 *y = x * w;
///             }
///         }
///         Ok(())
///     }
/// }
///
/// let x = Tensor::<f32, _, Cpu>::from_array([[1.0, 2.0], [3.0, 4.0]]);
/// let w = Tensor::<f32, _, Cpu>::from_array([10.0, -1.0]);
/// assert_eq!(x.custom_op2(&w, ScaleColumns).to_array(), [[10.0, -2.0], [30.0, -4.0]]);
/// // Dims the op refuses come back as its error.
/// let bad = Tensor::<f32, _, Cpu>::from_array([1.0, 2.0, 3.0]);
/// assert!(x.try_custom_op2(&bad, ScaleColumns).is_err());
/// ```
pub trait CustomOp2<T: WithDType>: Send + Sync + 'static {
    /// The op's name, in its errors.
    fn name(&self) -> &'static str;

    /// The output's dims for inputs of `lhs`'s and `rhs`'s dims. The default takes two inputs of the same dims
    /// and keeps them (an elementwise op), and is `Error::ShapeMismatch` otherwise. The call checks the result
    /// against the output's type.
    fn output_dims(&self, lhs: &Dims, rhs: &Dims) -> Result<Dims> {
        if lhs == rhs {
            Ok(*lhs)
        } else {
            Err(Error::shape_mismatch(self.name(), *lhs, *rhs))
        }
    }

    /// The host kernel (`Cpu` and `Embedded`): writes the whole output, dense and row-major.
    fn cpu_forward(
        &self,
        lhs: HostView<'_, T>,
        rhs: HostView<'_, T>,
        output: &mut [T],
    ) -> Result<()>;

    /// The CUDA kernel (see [`CustomOp1::cuda_forward`](super::CustomOp1::cuda_forward)); `Error::Unsupported`
    /// by default.
    #[cfg(feature = "cuda")]
    fn cuda_forward(
        &self,
        lhs: CudaView<'_, T>,
        rhs: CudaView<'_, T>,
        output: CudaView<'_, T>,
    ) -> Result<()> {
        let _ = (lhs, rhs, output);
        Err(super::no_cuda_kernel::<T>(self.name()))
    }
}

/// The gradients of a [`CustomOp2`]: given both inputs, the forward's output and the output's gradient, write
/// both inputs' gradients (each of its input's dims, dense and row-major, zero-initialised) in one call. What
/// `Traced::custom_op2` requires.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Var;
/// use typed_tensor::ops::custom::{CustomOp2, CustomOp2Backward, HostView};
///
/// /// `a * b` elementwise.
/// struct Product;
///
/// impl CustomOp2<f64> for Product {
///     fn name(&self) -> &'static str {
///         "product"
///     }
///     fn cpu_forward(&self, a: HostView<'_, f64>, b: HostView<'_, f64>, y: &mut [f64]) -> Result<()> {
///         for ((y, a), b) in y.iter_mut().zip(a.data).zip(b.data) {
///             *y = a * b;
///         }
///         Ok(())
///     }
/// }
///
/// impl CustomOp2Backward<f64> for Product {
///     fn cpu_backward(
///         &self,
///         [a, b, _y, dy]: [HostView<'_, f64>; 4],
///         da: &mut [f64],
///         db: &mut [f64],
///     ) -> Result<()> {
///         for i in 0..dy.data.len() {
///             da[i] = b.data[i] * dy.data[i];
///             db[i] = a.data[i] * dy.data[i];
///         }
///         Ok(())
///     }
/// }
///
/// let a = Var::new(Tensor::<f64, _, Cpu>::from_array([1.0, 2.0]));
/// let b = Var::new(Tensor::<f64, _, Cpu>::from_array([3.0, 5.0]));
/// let grads = a.trace().custom_op2(&b, Product).sum_all().backward();
/// assert_eq!((grads.get(&a).to_vec(), grads.get(&b).to_vec()), (vec![3.0, 5.0], vec![1.0, 2.0]));
/// ```
#[diagnostic::on_unimplemented(
    message = "the custom op `{Self}` has no gradient for `{T}`",
    label = "traced here, so `backward()` would need its gradient",
    note = "implement `CustomOp2Backward<{T}>` for `{Self}` (its `cpu_backward`), or run the op on the plain tensors: `traced.value().custom_op2(..)`"
)]
pub trait CustomOp2Backward<T: FloatDType>: CustomOp2<T> {
    /// The host kernel of the gradients: from `[lhs, rhs, output, grad_output]`, writes `grad_lhs` and `grad_rhs`
    /// (each of its input's dims).
    fn cpu_backward(
        &self,
        views: [HostView<'_, T>; 4],
        grad_lhs: &mut [T],
        grad_rhs: &mut [T],
    ) -> Result<()>;

    /// The CUDA kernel of the gradients (`[lhs, rhs, output, grad_output, grad_lhs, grad_rhs]`, the last two
    /// written); `Error::Unsupported` by default.
    #[cfg(feature = "cuda")]
    fn cuda_backward(&self, views: [CudaView<'_, T>; 6]) -> Result<()> {
        let _ = views;
        Err(super::no_cuda_kernel::<T>(self.name()))
    }
}
