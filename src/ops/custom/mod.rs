//! The door for ops written outside the crate: a user type implements [`CustomOp1`] (a host kernel, and a CUDA
//! kernel from the user's own PTX under the `cuda` feature) and, for training, [`CustomOp1Backward`] (the
//! gradient's kernels); [`Tensor::custom_op`](crate::Tensor::custom_op) and `Traced::custom_op` then run it like a
//! built-in op, on every device, recorded for `backward()` like any other.
//!
//! The kernels see their operands dense and row-major (the call copies a strided view first) and write a
//! zero-initialised output, so a user kernel needs no `unsafe` on the host. On `Cuda` the op's own launch is the
//! one `unsafe` step (`device::cuda::PtxKernel::launch`, with the `cuda` feature): the crate cannot check what
//! a user's PTX writes.
//!
//! ```
//! use typed_tensor::prelude::*;
//! use typed_tensor::ops::custom::{CustomOp1, HostView};
//!
//! /// `x -> x * sigmoid(x)`, with a host kernel of its own.
//! struct Swish;
//!
//! impl CustomOp1<f32> for Swish {
//!     fn name(&self) -> &'static str {
//!         "swish"
//!     }
//!     fn cpu_forward(&self, x: HostView<'_, f32>, y: &mut [f32]) -> Result<()> {
//!         for (y, &x) in y.iter_mut().zip(x.data) {
//!             *y = x / (1.0 + (-x).exp());
//!         }
//!         Ok(())
//!     }
//! }
//!
//! let x = Tensor::<f32, _, Cpu>::from_array([[0.0, 1.0], [-1.0, 2.0]]);
//! let y = x.custom_op(Swish);
//! assert!((y.to_array()[0][1] - 0.7310586).abs() < 1e-6);
//! ```

#[cfg(feature = "cuda")]
mod cuda;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;

#[cfg(feature = "alloc")]
use crate::device::Cpu;
use crate::device::{Embedded, Kernels};
use crate::dtype::{FloatDType, WithDType};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::{Dims, Shape};

/// A dense row-major operand in host memory: what a custom op's host kernels read.
#[derive(Clone, Copy, Debug)]
pub struct HostView<'a, T> {
    /// The elements, row-major.
    pub data: &'a [T],
    /// The sizes of the axes (`data.len()` is their product).
    pub dims: &'a Dims,
}

/// A dense row-major operand in GPU memory: what a custom op's CUDA kernels read (and, for the output, write).
#[cfg(feature = "cuda")]
#[derive(Clone, Copy, Debug)]
pub struct CudaView<'a, T> {
    /// The device address of the first element (elements follow densely, row-major).
    pub ptr: u64,
    /// The sizes of the axes.
    pub dims: &'a Dims,
    _elements: core::marker::PhantomData<&'a [T]>,
}

#[cfg(feature = "cuda")]
impl<T> CudaView<'_, T> {
    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.dims.numel()
    }
}

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
        Err(Error::Unsupported {
            op: self.name(),
            dtype: T::DTYPE,
            device: "cuda",
        })
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
/// let grads = w.trace().custom_op(Cube).sum().backward();
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
        Err(Error::Unsupported {
            op: self.name(),
            dtype: T::DTYPE,
            device: "cuda",
        })
    }
}

/// A dense operand as the family's kernels take it: a buffer and a contiguous layout.
pub type Dense<'a, B> = (&'a B, &'a Layout);

/// The family's device trait: runs a user's kernels on the device's memory. The host devices take the provided
/// bodies (the op's host kernels on host slices); `Cuda` hands the op device addresses.
pub trait CustomKernels: Kernels {
    /// `op`'s forward of `input` (contiguous), as a fresh storage of `out_dims`.
    fn custom_forward<T: WithDType, S: Shape, Op: CustomOp1<T>>(
        op: &Op,
        input: Dense<'_, Self::Buffer<T>>,
        out_dims: &Dims,
    ) -> Result<Self::Storage<T, S>> {
        let x = host_view::<T, Self>(op.name(), input)?;
        fill_host::<T, S, Self>(out_dims.numel(), |out| op.cpu_forward(x, out))
    }

    /// `op`'s gradient of `input` from the forward's `output` and its gradient (all contiguous), as a fresh
    /// storage of the input's dims.
    fn custom_backward<T: FloatDType, S: Shape, Op: CustomOp1Backward<T>>(
        op: &Op,
        input: Dense<'_, Self::Buffer<T>>,
        output: Dense<'_, Self::Buffer<T>>,
        grad_output: Dense<'_, Self::Buffer<T>>,
    ) -> Result<Self::Storage<T, S>> {
        let name = op.name();
        let (x, y) = (
            host_view::<T, Self>(name, input)?,
            host_view::<T, Self>(name, output)?,
        );
        let dy = host_view::<T, Self>(name, grad_output)?;
        fill_host::<T, S, Self>(x.data.len(), |dx| op.cpu_backward(x, y, dy, dx))
    }
}

#[cfg(feature = "alloc")]
impl CustomKernels for Cpu {}
impl CustomKernels for Embedded {}

/// The elements of a contiguous operand in host memory (`Unsupported` on a device whose memory is not the host's,
/// and an internal error for a strided layout: the calls make their operands contiguous).
fn host_view<'a, T: WithDType, D: Kernels + ?Sized>(
    op: &'static str,
    (buffer, layout): Dense<'a, D::Buffer<T>>,
) -> Result<HostView<'a, T>> {
    let unsupported = Error::Unsupported {
        op,
        dtype: T::DTYPE,
        device: D::NAME,
    };
    let host = D::host_slice(buffer).ok_or(unsupported)?;
    let range = layout.contiguous_range().ok_or(Error::InvalidArgument {
        op,
        reason: "internal error: a custom op's operand is not contiguous",
    })?;
    Ok(HostView {
        data: &host[range],
        dims: layout.dims(),
    })
}

/// A fresh zero-initialised storage of `n` elements on a host device, written by `kernel`.
fn fill_host<T: WithDType, S: Shape, D: Kernels + ?Sized>(
    n: usize,
    kernel: impl FnOnce(&mut [T]) -> Result<()>,
) -> Result<D::Storage<T, S>> {
    let mut kernel = Some(kernel);
    let mut result = Ok(());
    let storage = D::filled::<T, S>(n, &mut |out| {
        if !out.is_empty()
            && let Some(kernel) = kernel.take()
        {
            result = kernel(out);
        }
    })?;
    result.map(|()| storage)
}
