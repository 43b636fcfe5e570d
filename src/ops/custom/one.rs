//! Ops of one input: [`CustomOp1`] (the forward's kernels) and [`CustomOp1Backward`] (the gradient's).

#[cfg(feature = "cuda")]
use super::CudaView;
use super::HostView;
use crate::dtype::{FloatDType, WithDType};
use crate::error::Result;
use crate::shape::Dims;

/// An op with one input, written outside the crate: its name, its output's dims, and its kernels. Implement it
/// for each element type the op supports (`impl CustomOp1<f32> for MyOp`); [`Tensor::custom_op`] (shape kept)
/// and [`Tensor::custom_op_to`] (a shape the caller names) run it. With [`CustomOp1Backward`] it trains.
///
/// The kernels receive the input dense and row-major, the output zero-initialised, and are not called when the
/// output has no elements. An `Err` they return is the op's (the `try_` forms return it, the others panic with
/// it).
///
/// [`Tensor::custom_op`]: crate::Tensor::custom_op
/// [`Tensor::custom_op_to`]: crate::Tensor::custom_op_to
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::ops::custom::{CustomOp1, HostView};
/// use typed_tensor::shape::Dims;
///
/// /// The sum of each row: `(R, C) -> (R,)`.
/// struct RowSum;
///
/// impl CustomOp1<f32> for RowSum {
///     fn name(&self) -> &'static str {
///         "row_sum"
///     }
///     fn output_dims(&self, input: &Dims) -> Result<Dims> {
///         Ok(Dims::from_slice(&input[..1]))
///     }
///     fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
///         let cols = x.dims[1];
///         for (y, row) in y.iter_mut().zip(x.data.chunks(cols)) {
///             *y = row.iter().sum();
///         }
///         Ok(())
///     }
/// }
///
/// let x = Tensor::<f32, _, Cpu>::from_array([[1.0, 2.0], [3.0, 4.0]]);
/// let y: Tensor<f32, Rank1<2>, Cpu> = x.custom_op_to(RowSum);
/// assert_eq!(y.to_vec(), [3.0, 7.0]);
/// // The output type must agree with `output_dims`:
/// assert!(x.try_custom_op_to::<Rank1<3>, _>(RowSum).is_err());
/// ```
pub trait CustomOp1<T: WithDType>: Send + Sync + 'static {
    /// The op's name, in its errors.
    fn name(&self) -> &'static str;

    /// The output's dims for an input of `input`'s. The default keeps them (an elementwise op). The call checks
    /// the result against the output's type.
    fn output_dims(&self, input: &Dims) -> Result<Dims> {
        Ok(*input)
    }

    /// The host kernel (`Cpu` and `Embedded`): writes the whole output, dense and row-major.
    fn cpu_forward(&self, input: HostView<'_, T>, output: &mut [T]) -> Result<()>;

    /// The CUDA kernel: writes the whole output (`output.ptr`, dense and row-major), typically by launching a
    /// [`PtxKernel`](crate::device::cuda::PtxKernel) from the op's own PTX. Without one (the default), the op on a
    /// `Cuda` tensor is `Error::Unsupported`.
    #[cfg(feature = "cuda")]
    fn cuda_forward(&self, input: CudaView<'_, T>, output: CudaView<'_, T>) -> Result<()> {
        let _ = (input, output);
        Err(super::no_cuda_kernel::<T>(self.name()))
    }
}

/// The gradient of a [`CustomOp1`]: given the input, the forward's output and the output's gradient, write the
/// input's gradient (input-shaped, dense and row-major). What `Traced::custom_op` requires, so an op without a
/// gradient cannot be traced by mistake: it fails to build.
///
/// ```
/// use typed_tensor::prelude::*;
/// use typed_tensor::autograd::Var;
/// use typed_tensor::ops::custom::{CustomOp1, CustomOp1Backward, HostView};
///
/// struct Cube;
///
/// impl CustomOp1<f64> for Cube {
///     fn name(&self) -> &'static str {
///         "cube"
///     }
///     fn cpu_forward(&self, x: HostView<'_, f64>, y: &mut [f64]) -> Result<()> {
///         y.iter_mut().zip(x.data).for_each(|(y, &x)| *y = x * x * x);
///         Ok(())
///     }
/// }
///
/// impl CustomOp1Backward<f64> for Cube {
///     fn cpu_backward(
///         &self,
///         x: HostView<'_, f64>,
///         _y: HostView<'_, f64>,
///         dy: HostView<'_, f64>,
///         dx: &mut [f64],
///     ) -> Result<()> {
///         for ((dx, &x), &dy) in dx.iter_mut().zip(x.data).zip(dy.data) {
///             *dx = 3.0 * x * x * dy;
///         }
///         Ok(())
///     }
/// }
///
/// let w = Var::new(Tensor::<f64, _, Cpu>::from_array([1.0, 2.0]));
/// let grads = w.trace().custom_op(Cube).sum_all().backward();
/// assert_eq!(grads.get(&w).to_vec(), [3.0, 12.0]);
/// ```
#[diagnostic::on_unimplemented(
    message = "the custom op `{Self}` has no gradient for `{T}`",
    label = "traced here, so `backward()` would need its gradient",
    note = "implement `CustomOp1Backward<{T}>` for `{Self}` (its `cpu_backward`), or run the op on the plain tensor: `traced.value().custom_op(..)`"
)]
pub trait CustomOp1Backward<T: FloatDType>: CustomOp1<T> {
    /// The host kernel of the gradient: writes `grad_input` (the input's dims) from the input, the forward's
    /// output and the output's gradient.
    fn cpu_backward(
        &self,
        input: HostView<'_, T>,
        output: HostView<'_, T>,
        grad_output: HostView<'_, T>,
        grad_input: &mut [T],
    ) -> Result<()>;

    /// The CUDA kernel of the gradient (see [`CustomOp1::cuda_forward`]); `Error::Unsupported` by default.
    #[cfg(feature = "cuda")]
    fn cuda_backward(
        &self,
        input: CudaView<'_, T>,
        output: CudaView<'_, T>,
        grad_output: CudaView<'_, T>,
        grad_input: CudaView<'_, T>,
    ) -> Result<()> {
        let _ = (input, output, grad_output, grad_input);
        Err(super::no_cuda_kernel::<T>(self.name()))
    }
}
