//! An op written outside typed-tensor, through its door for custom ops (`typed_tensor::ops::custom`): Swish,
//! `x * sigmoid(x)`, with CPU kernels (threads over chunks would go here; plain loops keep it short), CUDA kernels
//! from this crate's own PTX (kernels/swish.cu, compiled by build.rs under the `cuda` feature) and its gradient.
//! It runs on `Tensor` and `Traced` like a built-in op:
//!
//! ```
//! use custom_op_example::Swish;
//! use typed_tensor::autograd::Var;
//! use typed_tensor::prelude::*;
//!
//! let w = Var::new(Tensor::<f32, _, Cpu>::from_array([[-1.0, 0.0], [1.0, 2.0]]));
//! let y = w.trace().custom_op(Swish);
//! assert!((y.value().to_array()[1][0] - 0.7310586).abs() < 1e-6);
//! let grads = y.sum_all().backward();
//! assert!((grads.get(&w).to_array()[0][1] - 0.5).abs() < 1e-6); // s(0) + 0
//! ```

use typed_tensor::dtype::FloatDType;
use typed_tensor::ops::custom::{CustomOp1, CustomOp1Backward, HostView};
use typed_tensor::Result;

#[cfg(feature = "cuda")]
use typed_tensor::{
    device::cuda::{KernelArg, PtxKernel},
    ops::custom::CudaView,
};

/// Swish (PyTorch's `SiLU`): `x * sigmoid(x)`, for `f32` and `f64`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Swish;

/// The PTX that build.rs compiled from kernels/swish.cu.
#[cfg(feature = "cuda")]
const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/swish.ptx"));

/// The element types Swish has kernels for, and their CUDA entries.
pub trait SwishFloat: FloatDType {
    /// The forward entry in kernels/swish.cu.
    #[cfg(feature = "cuda")]
    const FORWARD: PtxKernel;
    /// The gradient's entry.
    #[cfg(feature = "cuda")]
    const BACKWARD: PtxKernel;
}

impl SwishFloat for f32 {
    #[cfg(feature = "cuda")]
    const FORWARD: PtxKernel = PtxKernel::new("custom_op_example", PTX, "swish_f32");
    #[cfg(feature = "cuda")]
    const BACKWARD: PtxKernel = PtxKernel::new("custom_op_example", PTX, "swish_backward_f32");
}

impl SwishFloat for f64 {
    #[cfg(feature = "cuda")]
    const FORWARD: PtxKernel = PtxKernel::new("custom_op_example", PTX, "swish_f64");
    #[cfg(feature = "cuda")]
    const BACKWARD: PtxKernel = PtxKernel::new("custom_op_example", PTX, "swish_backward_f64");
}

fn sigmoid<T: FloatDType>(x: T) -> f64 {
    1.0 / (1.0 + (-x.to_f64()).exp())
}

impl<T: SwishFloat> CustomOp1<T> for Swish {
    fn name(&self) -> &'static str {
        "swish"
    }

    fn cpu_forward(&self, x: HostView<'_, T>, y: &mut [T]) -> Result<()> {
        for (y, &x) in y.iter_mut().zip(x.data) {
            *y = T::from_f64(x.to_f64() * sigmoid(x));
        }
        Ok(())
    }

    #[cfg(feature = "cuda")]
    fn cuda_forward(&self, x: CudaView<'_, T>, y: CudaView<'_, T>) -> Result<()> {
        let n = x.numel();
        let args = [
            KernelArg::Ptr(x.ptr),
            KernelArg::Ptr(y.ptr),
            KernelArg::U64(n as u64),
        ];
        // SAFETY: `swish_{T}(const T* x, T* y, unsigned long long n)` takes these three arguments, reads `n`
        // elements at `x` and writes `n` at `y`; both views hold `n` (the output keeps the input's dims).
        unsafe { T::FORWARD.launch_per_element("swish", n, &args) }
    }
}

impl<T: SwishFloat> CustomOp1Backward<T> for Swish {
    fn cpu_backward(
        &self,
        x: HostView<'_, T>,
        _y: HostView<'_, T>,
        dy: HostView<'_, T>,
        dx: &mut [T],
    ) -> Result<()> {
        for ((dx, &x), &dy) in dx.iter_mut().zip(x.data).zip(dy.data) {
            let s = sigmoid(x);
            *dx = T::from_f64(dy.to_f64() * (s + x.to_f64() * s * (1.0 - s)));
        }
        Ok(())
    }

    #[cfg(feature = "cuda")]
    fn cuda_backward(
        &self,
        x: CudaView<'_, T>,
        _y: CudaView<'_, T>,
        dy: CudaView<'_, T>,
        dx: CudaView<'_, T>,
    ) -> Result<()> {
        let n = x.numel();
        let args = [
            KernelArg::Ptr(x.ptr),
            KernelArg::Ptr(dy.ptr),
            KernelArg::Ptr(dx.ptr),
            KernelArg::U64(n as u64),
        ];
        // SAFETY: `swish_backward_{T}(const T* x, const T* dy, T* dx, unsigned long long n)` reads `n` elements at
        // `x` and `dy` and writes `n` at `dx`; all three views have the input's dims.
        unsafe { T::BACKWARD.launch_per_element("swish", n, &args) }
    }
}
