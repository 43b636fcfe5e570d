//! The door for ops written outside the crate: a user type implements [`CustomOp1`] (a host kernel, and a CUDA
//! kernel from the user's own PTX under the `cuda` feature) and, for training, [`CustomOp1Backward`] (the
//! gradient's kernels); [`Tensor::custom_op`](crate::Tensor::custom_op) and `Traced::custom_op` then run it like a
//! built-in op, on every device, recorded for `backward()` like any other. Ops of two inputs implement
//! [`CustomOp2`] and [`CustomOp2Backward`] and run through `custom_op2`.
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
mod one;
mod tensor;
#[cfg(feature = "std")] // autograd
mod traced;
mod two;

pub use one::{CustomOp1, CustomOp1Backward};
pub use two::{CustomOp2, CustomOp2Backward};

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

/// What an op without a CUDA kernel gives on `Cuda` (the default `cuda_forward`/`cuda_backward`).
#[cfg(feature = "cuda")]
fn no_cuda_kernel<T: WithDType>(op: &'static str) -> Error {
    Error::Unsupported {
        op,
        dtype: T::DTYPE,
        device: "cuda",
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

    /// `op`'s forward of `lhs` and `rhs` (contiguous), as a fresh storage of `out_dims`.
    fn custom_forward2<T: WithDType, S: Shape, Op: CustomOp2<T>>(
        op: &Op,
        lhs: Dense<'_, Self::Buffer<T>>,
        rhs: Dense<'_, Self::Buffer<T>>,
        out_dims: &Dims,
    ) -> Result<Self::Storage<T, S>> {
        let (a, b) = (
            host_view::<T, Self>(op.name(), lhs)?,
            host_view::<T, Self>(op.name(), rhs)?,
        );
        fill_host::<T, S, Self>(out_dims.numel(), |out| op.cpu_forward(a, b, out))
    }

    /// `op`'s gradients from `[lhs, rhs, output, grad_output]` (all contiguous), as fresh storages of the inputs'
    /// dims.
    #[allow(clippy::type_complexity)] // two storages
    fn custom_backward2<T: FloatDType, SA: Shape, SB: Shape, Op: CustomOp2Backward<T>>(
        op: &Op,
        views: [Dense<'_, Self::Buffer<T>>; 4],
    ) -> Result<(Self::Storage<T, SA>, Self::Storage<T, SB>)> {
        let [a, b, y, g] = views.map(|v| host_view::<T, Self>(op.name(), v));
        let host = [a?, b?, y?, g?];
        let (na, nb) = (host[0].data.len(), host[1].data.len());
        // One kernel call writes both gradients, unless both are empty.
        let mut kernel =
            (na + nb > 0).then_some(|da: &mut [T], db: &mut [T]| op.cpu_backward(host, da, db));
        let mut result = Ok(());
        let mut run = |da: &mut [T], db: &mut [T]| {
            if let Some(kernel) = kernel.take() {
                result = kernel(da, db);
            }
        };
        let mut grad_rhs = None;
        let grad_lhs = Self::filled::<T, SA>(na, &mut |da| {
            grad_rhs = Some(Self::filled::<T, SB>(nb, &mut |db| run(da, db)));
        })?;
        let grad_rhs = match grad_rhs {
            Some(storage) => storage?,
            None => Self::filled::<T, SB>(nb, &mut |db| run(&mut [], db))?,
        };
        result.map(|()| (grad_lhs, grad_rhs))
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
